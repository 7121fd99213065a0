#!/usr/bin/env python3
"""Checks the crate graph in docs/architecture.md against `cargo metadata`:
the fenced block that follows the line `<!-- crate-graph -->` lists each
workspace member (its package name less `paddock-`) and, after a colon, the
members it names under [dependencies] (dev- and build-dependencies are not
part of the graph); `#` starts a comment. Fails, naming every difference,
when the block and the manifests disagree. scripts/check.sh runs it.

Usage: crate_graph.py [--print]   (--print writes the block from the manifests)
"""

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "architecture.md")
MARK = "<!-- crate-graph -->"


def short(name):
    return name[len("paddock-"):] if name.startswith("paddock-") else name


def actual():
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    packages = json.loads(out)["packages"]
    members = {p["name"] for p in packages}
    return {
        short(p["name"]): sorted(
            {short(d["name"]) for d in p["dependencies"] if d["name"] in members and d["kind"] is None}
        )
        for p in packages
    }


def documented(text):
    lines = text.splitlines()
    try:
        start = lines.index(MARK)
    except ValueError:
        sys.exit(f"crate_graph.py: {DOC} has no {MARK} line")
    if not lines[start + 1].startswith("```"):
        sys.exit(f"crate_graph.py: no fenced block right after {MARK}")
    graph = {}
    for line in lines[start + 2:]:
        if line.startswith("```"):
            return graph
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([\w-]+):\s*(.*)", line)
        if not match:
            sys.exit(f"crate_graph.py: cannot read the crate graph line {line!r}")
        deps = [d.strip() for d in match.group(2).split(",") if d.strip()]
        graph[match.group(1)] = sorted(deps)
    sys.exit("crate_graph.py: the crate graph block is not closed")


def differences(doc, real):
    found = []
    for name in sorted(set(doc) | set(real)):
        if name not in real:
            found.append(f"{name}: in the document, not a workspace member")
        elif name not in doc:
            found.append(f"{name}: a workspace member the document leaves out (depends on {', '.join(real[name]) or 'nothing'})")
        else:
            missing = sorted(set(real[name]) - set(doc[name]))
            extra = sorted(set(doc[name]) - set(real[name]))
            if missing:
                found.append(f"{name}: depends on {', '.join(missing)}, which the document does not say")
            if extra:
                found.append(f"{name}: the document says it depends on {', '.join(extra)}, which it does not")
    return found


def main():
    real = actual()
    if sys.argv[1:] == ["--print"]:
        for name in sorted(real):
            print(f"{name}: {', '.join(real[name])}")
        return 0
    with open(DOC, encoding="utf-8") as f:
        doc = documented(f.read())
    found = differences(doc, real)
    for line in found:
        print(f"docs/architecture.md crate graph: {line}", file=sys.stderr)
    if found:
        print("crate_graph.py: the crate graph differs from cargo metadata "
              "(scripts/crate_graph.py --print writes the real one)", file=sys.stderr)
        return 1
    print(f"crate graph: {len(real)} members agree with cargo metadata")
    return 0


if __name__ == "__main__":
    sys.exit(main())
