#!/usr/bin/env python3
"""What one schemathesis run says about the server, from its exit status and
its NDJSON event log (scripts/fuzz-api.sh calls this after every run).

Prints one line, its first word the verdict:

  pass                      the run ended well (exit 0, no failed check)
  fail REASON               the server misbehaved: a failed check, a
                            network error or an unresponsive operation, a
                            schema the generator could not use, or a run
                            that failed for a reason not known to be the
                            tool's own
  crash PHASES REASON       the tool itself crashed (a Python exception
                            inside schemathesis or hypothesis, such as
                            CPython 3.11.7's "AST constructor recursion
                            depth mismatch") with no failed check; PHASES
                            (comma-separated) are the phases it hit

and prints the run's figures (requests sent, failed checks) on stderr.
Fails closed: an error it does not recognise as the tool's is a failure.

Usage: fuzz_verdict.py EXIT_STATUS EVENTS_NDJSON
       fuzz_verdict.py --without PHASES HIT   (PHASES less those in HIT)
"""

import json
import sys

# Python's own exception types: raised from inside the tool, they are a bug of
# schemathesis, hypothesis or the interpreter, never an answer of the server.
TOOL_ERRORS = frozenset(
    {
        "SystemError",
        "RecursionError",
        "KeyError",
        "IndexError",
        "AttributeError",
        "TypeError",
        "ValueError",
        "AssertionError",
        "RuntimeError",
        "NameError",
        "UnboundLocalError",
        "NotImplementedError",
        "ZeroDivisionError",
        "OverflowError",
        "StopIteration",
    }
)


def read_events(path):
    """The log's events as (name, body) pairs; a torn last line is dropped."""
    events = []
    try:
        with open(path, encoding="utf-8") as log:
            for line in log:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                events.extend(event.items())
    except OSError:
        pass
    return events


def failed_checks(events):
    """(requests, failures): cases sent and checks that failed, over the run."""
    requests = failures = 0
    for name, body in events:
        if name != "ScenarioFinished":
            continue
        recorder = body.get("recorder") or {}
        requests += len(recorder.get("cases") or {})
        for checks in (recorder.get("checks") or {}).values():
            failures += sum(1 for c in checks if str(c.get("status")).lower() == "failure")
    return requests, failures


def errors(events):
    """(type, message, phase) of every error the engine reported."""
    found = []
    running = None
    for name, body in events:
        if name == "PhaseStarted":
            running = (body.get("phase") or {}).get("name")
        elif name == "NonFatalError":
            value = body.get("value") or {}
            found.append((value.get("type"), value.get("message", ""), body.get("phase") or running))
        elif name == "FatalError":
            value = body.get("exception") or {}
            found.append((value.get("type"), value.get("message", ""), running))
    return found


def verdict(status, events):
    requests, failures = failed_checks(events)
    figures = f"fuzz: {requests} requests, {failures} failed checks"
    if failures:
        return f"fail {failures} failed checks", figures
    found = errors(events)
    if status == 0 and not found:
        return "pass", figures
    if not found:
        return f"fail schemathesis exited {status} with no failed check and no error in its log", figures
    server = [e for e in found if e[0] not in TOOL_ERRORS]
    if server:
        kind, message, phase = server[0]
        return f"fail {kind} in {phase or 'the run'}: {message}", figures
    if any(phase is None for _, _, phase in found):
        return f"fail {found[0][0]} outside any phase: {found[0][1]}", figures
    phases = ",".join(dict.fromkeys(phase for _, _, phase in found))
    kind, message, _ = found[0]
    return f"crash {phases} {len(found)} internal error(s) of the tool, first {kind}: {message}", figures


def without(phases, hit):
    """The comma-separated `phases` less those named in `hit`, in order."""
    drop = set(hit.split(","))
    return ",".join(p for p in phases.split(",") if p and p not in drop)


def main(argv):
    if len(argv) == 4 and argv[1] == "--without":
        print(without(argv[2], argv[3]))
        return 0
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    line, figures = verdict(int(argv[1]), read_events(argv[2]))
    print(figures, file=sys.stderr)
    print(line.splitlines()[0] if line else "fail no verdict")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
