#!/usr/bin/env bash
# The E2B compatibility tier, JavaScript side: the real E2B SDK from npm
# (`e2b`, pinned by tests/e2b/js/package-lock.json) installed with `npm ci`
# into a directory of its own, for tests/e2b/js, which the scenario test
# tests/tests/scenarios/e2b_sdk.rs runs with Node's built-in test runner
# (`node --test`) against a live `paddock serve`.
# Skips the install when the directory already holds the pinned lockfile's
# packages; installs Debian's nodejs and npm when there is no npm (as
# scripts/console-setup.sh does). Progress goes to stderr; stdout is one
# line, the directory holding node_modules, for scripts/test.sh to export as
# PADDOCK_E2B_JS:
#   PADDOCK_E2B_JS=$(bash scripts/e2b-js-setup.sh)
# The directory is PADDOCK_E2B_JS_DIR, default /var/lib/paddock/e2b-js.
# Needs root only to install the Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=tests/e2b/js
dir=${PADDOCK_E2B_JS_DIR:-/var/lib/paddock/e2b-js}
# The SDK's engines field (e2b 2.51.0: node >=20.18.1 <21 || >=22).
node_min=20.18.1
started=$(date +%s)

say() { echo "==> $*" >&2; }

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    say "installing nodejs and npm"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends nodejs npm >&2 || {
        apt-get update -qq >&2
        apt-get install -y -qq --no-install-recommends nodejs npm >&2
    }
fi
# The SDK (its undici) needs a newer Node.js than some Debian releases ship
# (bookworm's is 18): say so rather than fail later inside the suite.
if ! node -e '
    const [want, have] = [process.argv[1], process.versions.node].map((v) => v.split(".").map(Number));
    const older = have[0] !== want[0] ? have[0] < want[0] : have[1] !== want[1] ? have[1] < want[1] : have[2] < want[2];
    process.exit(older || have[0] === 21 ? 1 : 0);
' "$node_min"; then
    echo "scripts/e2b-js-setup.sh: node $(node --version) is too old for the e2b SDK" \
        "(it needs >=$node_min, not 21); install a newer Node.js first" >&2
    exit 1
fi

# Whether $dir holds exactly what the lockfile pins: its copy of package.json
# and package-lock.json are the suite's, and npm's record of the installed
# tree (node_modules/.package-lock.json) names the same e2b.
pinned() {
    cmp -s "$suite/package.json" "$dir/package.json" &&
        cmp -s "$suite/package-lock.json" "$dir/package-lock.json" &&
        [ -f "$dir/node_modules/.package-lock.json" ] &&
        (cd "$dir" && node -e '
            const lock = require("./package-lock.json");
            const want = lock.packages["node_modules/e2b"].version;
            const have = require("./node_modules/e2b/package.json").version;
            process.exit(want === have ? 0 : 1);
        ') >/dev/null 2>&1
}

want=$(node -p 'require("./'"$suite"'/package-lock.json").packages["node_modules/e2b"].version')
if pinned; then
    say "e2b JS SDK ready ($dir: e2b@$want)"
else
    say "installing e2b@$want into $dir (npm ci)"
    mkdir -p "$dir"
    cp "$suite/package.json" "$suite/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    if ! pinned; then
        echo "scripts/e2b-js-setup.sh: $dir lacks e2b@$want after npm ci" >&2
        exit 1
    fi
    say "e2b JS SDK ready in $(($(date +%s) - started)) s"
fi
echo "$dir"
