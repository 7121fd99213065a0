#!/usr/bin/env bash
# THE test command: installs what the tests need, then runs formatting,
# clippy and the whole test suite. Needs root: the scenario tests create
# namespaces, cgroups and id-mapped mounts. `.ci/run` calls this script.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/test.sh: must run as root (the sandbox scenario tests create" \
        "namespaces, cgroups and id-mapped mounts); try: sudo $0" >&2
    exit 1
fi

# Debian packages the tests and the start benchmark use, installed when missing:
#   bubblewrap (bwrap: the benchmark's reference line), util-linux (unshare,
#   setsid), iproute2 (ip: host addresses for the escape battery), coreutils.
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v unshare >/dev/null || missing+=(util-linux)
command -v setsid >/dev/null || missing+=(util-linux)
command -v ip >/dev/null || missing+=(iproute2)
command -v truncate >/dev/null || missing+=(coreutils)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "==> installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The container tier (docker.io + runsc from Debian, dockerd started in the
# background, the sandbox image built from Debian packages): the conformance
# suite runs every backend, and must not skip one here.
echo "==> container tier (scripts/container-setup.sh)"
bash scripts/container-setup.sh
export PADDOCK_REQUIRE_BACKENDS=native,docker,gvisor

for component in fmt clippy; do
    if ! cargo "$component" --version >/dev/null 2>&1; then
        echo "scripts/test.sh: cargo $component is missing (rustup component add" \
            "rustfmt clippy)" >&2
        exit 1
    fi
done

echo "==> cargo fmt --all -- --check"
cargo fmt --all -- --check

echo "==> cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

# The scenario tests drive the built binaries (paddock, paddock-guest and the
# tests crate's helpers) from target/<triple>/debug: build them first.
echo "==> cargo build --workspace"
cargo build --workspace

# The store and API contract suites run on SQLite and on a real Postgres:
# postgres-test.sh installs Debian's postgresql if needed, starts a throwaway
# cluster on a loopback port and exports PADDOCK_TEST_POSTGRES_URL.
echo "==> cargo test --workspace (with a throwaway PostgreSQL)"
log=$(mktemp /tmp/paddock-test.XXXXXX.log)
trap 'rm -f "$log"' EXIT
bash scripts/postgres-test.sh cargo test --workspace 2>&1 | tee "$log"

# cargo prints one "test result:" line per test binary, the last one usually a
# doc-test run with nothing in it: close with the totals over all of them.
awk '/^test result:/ { p += $4; f += $6; i += $8 }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' "$log"
