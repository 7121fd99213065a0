#!/usr/bin/env bash
# The web console's toolchain and browser: Debian's chromium (headless, for
# the end-to-end test), the npm packages of crates/console/web exactly as
# package-lock.json pins them (npm ci), and a check that the committed build
# in crates/console/dist is what the sources build to. The binary embeds
# dist/, so `cargo build` needs no Node.js; this check keeps it honest.
set -euo pipefail
cd "$(dirname "$0")/.."
web=crates/console/web

if ! command -v chromium >/dev/null; then
    echo "==> installing chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || {
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends chromium >/dev/null
    }
fi
if ! command -v npm >/dev/null; then
    echo "==> installing nodejs and npm"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null 2>&1 || {
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
    }
fi

echo "==> npm ci ($web)"
(cd "$web" && npm ci --no-audit --no-fund --loglevel=error)

echo "==> console build matches crates/console/dist"
(cd "$web" && npx vite build --logLevel error)
if ! git diff --quiet -- crates/console/dist || [ -n "$(git ls-files --others --exclude-standard crates/console/dist)" ]; then
    git status --short -- crates/console/dist >&2
    echo "console-setup: crates/console/dist differs from what crates/console/web builds;" \
        "run (cd $web && npx vite build) and commit crates/console/dist" >&2
    exit 1
fi
