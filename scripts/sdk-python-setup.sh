#!/usr/bin/env bash
# The Python SDK tier: a venv holding the SDK of sdk/python installed from the
# wheel this script builds of it (so the package as packed is what is
# tested), with the versions of sdk/python/test-requirements.txt (its
# dependencies, pytest, the wheel builder), for sdk/python/tests, which the
# scenario test tests/tests/scenarios/sdk_python.rs runs against a live
# `paddock serve`.
# Builds and installs again only when the SDK's sources or the pins changed;
# installs Debian's python3 and python3-venv when missing. Progress goes to
# stderr; stdout is one line, the venv's python, for scripts/test.sh to
# export as PADDOCK_SDK_PYTHON:
#   PADDOCK_SDK_PYTHON=$(bash scripts/sdk-python-setup.sh)
# The venv is PADDOCK_SDK_PYTHON_VENV, default /var/lib/paddock/sdk-python-venv.
# Needs root only to install the Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${PADDOCK_SDK_PYTHON_VENV:-/var/lib/paddock/sdk-python-venv}
sdk=sdk/python
requirements=$sdk/test-requirements.txt
started=$(date +%s)

say() { echo "==> $*" >&2; }

# Debian's python3, not whatever a version manager puts first on PATH: the
# venv must outlive a shell's settings.
python=/usr/bin/python3
if [ ! -x "$python" ] || ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    say "installing python3 python3-venv"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends python3 python3-venv >&2
fi

# What the installed wheel was built from: every file packed, and the pins.
stamp=$(
    cd "$sdk"
    {
        find pyproject.toml README.md src -type f ! -path '*/.*' ! -path '*/__pycache__/*' \
            ! -name '*.pyc' -print0 |
            sort -z | xargs -0 sha256sum
        sha256sum test-requirements.txt
    } | sha256sum | cut -d' ' -f1
)

# Whether the venv runs, holds every pin at its version, and holds the SDK
# built from these sources. A venv names its own path and its python's in
# its scripts: one whose python went away (a Debian upgrade) or that was
# moved does not run, and is made again.
ready() {
    [ "$(cat "$venv/.paddock-sdk-stamp" 2>/dev/null)" = "$stamp" ] &&
        "$venv/bin/python" - "$requirements" >/dev/null 2>&1 <<'EOF'
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line:
        name, want = line.split("==")
        if version(name) != want:
            sys.exit(1)
import paddock
EOF
}

if ready; then
    say "sdk-python venv ready ($venv)"
else
    if ! "$venv/bin/python" -c '' >/dev/null 2>&1; then
        say "creating the venv $venv"
        rm -rf "$venv"
        mkdir -p "$(dirname "$venv")"
        "$python" -m venv "$venv"
    fi
    say "installing $(grep -v '^#' "$requirements" | tr '\n' ' ')into $venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" >&2
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    say "building the wheel of $sdk"
    # isolated: the build backend at the version pyproject.toml pins
    "$venv/bin/python" -m build --wheel --outdir "$scratch" "$sdk" >"$scratch/build.log" 2>&1 || {
        cat "$scratch/build.log" >&2
        exit 1
    }
    wheels=("$scratch"/paddock_sdk-*.whl)
    say "installing $(basename "${wheels[0]}")"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps \
        "${wheels[0]}" >&2
    echo "$stamp" >"$venv/.paddock-sdk-stamp"
    if ! ready; then
        echo "scripts/sdk-python-setup.sh: $venv lacks the SDK or a pin of $requirements after installing them" >&2
        exit 1
    fi
    say "sdk-python venv ready in $(($(date +%s) - started)) s"
fi
echo "$venv/bin/python"
