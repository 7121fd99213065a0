#!/usr/bin/env bash
# The E2B compatibility tier: a Python venv holding the real E2B SDK from PyPI
# (e2b, pinned) and pytest, for tests/e2b/python, which the scenario test
# tests/tests/scenarios/e2b_sdk.rs runs against a live `paddock serve`.
# Skips whatever is already there at the pinned versions; installs Debian's
# python3 and python3-venv when missing. Progress goes to stderr; stdout is
# one line, the venv's python, for scripts/test.sh to export as
# PADDOCK_E2B_PYTHON:
#   PADDOCK_E2B_PYTHON=$(bash scripts/e2b-setup.sh)
# The venv is PADDOCK_E2B_VENV, default /var/lib/paddock/e2b-venv. Needs root
# only to install the Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${PADDOCK_E2B_VENV:-/var/lib/paddock/e2b-venv}
# The SDK release the server's E2B routes are written against: a newer one is
# a deliberate change (raise it here and rerun the suite).
pins=("e2b==2.63.0" "pytest==9.0.3")
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

# Whether the venv runs and holds every pin at its version. A venv names its
# own path and its python's in its scripts: one whose python went away (a
# Debian upgrade) or that was moved does not run, and is made again.
pinned() {
    "$venv/bin/python" - "${pins[@]}" >/dev/null 2>&1 <<'EOF'
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    if version(name) != want:
        sys.exit(1)
EOF
}

if pinned; then
    say "e2b venv ready ($venv: ${pins[*]})"
else
    if ! "$venv/bin/python" -c '' >/dev/null 2>&1; then
        say "creating the venv $venv"
        rm -rf "$venv"
        mkdir -p "$(dirname "$venv")"
        "$python" -m venv "$venv"
    fi
    say "installing ${pins[*]} into $venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${pins[@]}" >&2
    if ! pinned; then
        echo "scripts/e2b-setup.sh: $venv lacks ${pins[*]} after installing them" >&2
        exit 1
    fi
    say "e2b venv ready in $(($(date +%s) - started)) s"
fi
echo "$venv/bin/python"
