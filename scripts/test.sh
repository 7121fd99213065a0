#!/usr/bin/env bash
# THE test command: installs what the tests need, runs scripts/check.sh
# (formatting, clippy, docs, unit tests), then the whole test suite. Needs
# root: the scenario tests create namespaces, cgroups and id-mapped mounts.
# `.ci/run` calls this script.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/step.sh
source scripts/step.sh

if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/test.sh: must run as root (the sandbox scenario tests create" \
        "namespaces, cgroups and id-mapped mounts); try: sudo $0" >&2
    exit 1
fi

# Debian packages the tests and the start benchmark use, installed when missing:
#   bubblewrap (bwrap: the benchmark's reference line), util-linux (unshare,
#   setsid), iproute2 (ip: host addresses for the escape battery), coreutils,
#   python3, git, gcc, zstd (programs run under the seccomp allowlist).
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v unshare >/dev/null || missing+=(util-linux)
command -v setsid >/dev/null || missing+=(util-linux)
command -v ip >/dev/null || missing+=(iproute2)
command -v truncate >/dev/null || missing+=(coreutils)
# The seccomp allowlist's workload test (tests/tests/scenarios/workloads.rs).
command -v python3 >/dev/null || missing+=(python3)
command -v git >/dev/null || missing+=(git)
command -v gcc >/dev/null || missing+=(gcc libc6-dev)
command -v zstd >/dev/null || missing+=(zstd)
# The egress proxy's namespaces and redirect rules (ip netns, iptables-restore),
# and the network tests' clients inside sandboxes (curl, getent).
command -v iptables-restore >/dev/null || missing+=(iptables)
command -v curl >/dev/null || missing+=(curl)
# Named volumes: one loop-mounted btrfs holding a subvolume per volume, its
# quota a qgroup limit (crates/sandbox/src/volumes/).
command -v mkfs.btrfs >/dev/null || missing+=(btrfs-progs)
if [ "${#missing[@]}" -gt 0 ]; then
    step "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The container tier (docker.io + runsc from Debian, dockerd started in the
# background, the sandbox image built from Debian packages): the conformance
# suite runs every backend, and must not skip one here.
step "container tier (scripts/container-setup.sh)"
bash scripts/container-setup.sh

# The microvm tier: qemu-system-x86 and the image (a Debian kernel and an
# initramfs from Debian packages, kept in /var/lib/paddock/microvm and rebuilt
# only when a package version or the recipe changes; about 20 s when it is).
step "microvm tier (images/microvm-image.sh)"
bash images/microvm-image.sh
export PADDOCK_REQUIRE_BACKENDS=native,docker,gvisor,microvm

# The agent CLIs (Claude Code, Codex, opencode; pinned by
# images/agents/package-lock.json) under /usr/local/lib, which native sandboxes
# see with the host's /usr, and the paddock-agents:bookworm image (the sandbox
# image plus them) for docker and gvisor: after the container tier, whose
# image it builds on, and after the microvm image, whose copy of /usr need
# not carry them (about 1 GB); the agent CLI tests must not skip here.
step "agent CLIs (scripts/agents-setup.sh)"
PADDOCK_AGENTS_DIR=$(bash scripts/agents-setup.sh)
export PADDOCK_AGENTS_DIR PADDOCK_REQUIRE_AGENTS=1

# The web console: chromium, the npm packages, and its committed build
# checked against its sources; the browser test must not skip here.
step "web console (scripts/console-setup.sh)"
bash scripts/console-setup.sh
export PADDOCK_REQUIRE_BROWSER=1

# The E2B tier: the real E2B Python SDK (pinned) and pytest in a venv, for
# the suite tests/tests/scenarios/e2b_sdk.rs runs against `paddock serve`;
# it must not skip here.
step "E2B SDK (scripts/e2b-setup.sh)"
PADDOCK_E2B_PYTHON=$(bash scripts/e2b-setup.sh)
export PADDOCK_E2B_PYTHON
export PADDOCK_REQUIRE_E2B=1
# The real E2B JavaScript SDK (pinned by tests/e2b/js/package-lock.json) for the
# same scenario test, run with node --test; it must not skip here.
step "E2B JS SDK (scripts/e2b-js-setup.sh)"
PADDOCK_E2B_JS=$(bash scripts/e2b-js-setup.sh)
export PADDOCK_E2B_JS

# The TypeScript SDK (sdk/typescript): npm ci, its generated types checked
# against sdk/openapi.json, built, packed and installed from the tarball, for
# the suite tests/tests/scenarios/sdk_typescript.rs runs against `paddock serve`;
# it must not skip here.
step "TypeScript SDK (scripts/sdk-typescript-setup.sh)"
PADDOCK_SDK_TYPESCRIPT=$(bash scripts/sdk-typescript-setup.sh)
export PADDOCK_SDK_TYPESCRIPT
export PADDOCK_REQUIRE_SDK=1

# Paddock's own Python SDK (sdk/python): its wheel built and installed into a
# venv with pytest, for the suite tests/tests/scenarios/sdk_python.rs runs
# against `paddock serve`, and its generated models checked against
# sdk/openapi.json; it must not skip here.
step "Python SDK (scripts/sdk-python-setup.sh, sdk/python/generate.sh --check)"
PADDOCK_SDK_PYTHON=$(bash scripts/sdk-python-setup.sh)
export PADDOCK_SDK_PYTHON
bash sdk/python/generate.sh --check

# The full-disk tests (the store's on SQLite and Postgres, the abuse test)
# mount a small ext4 image on a loop device: here they must not skip.
export PADDOCK_REQUIRE_LOOP=1

# A fresh CI machine may have little disk, and every test binary here is
# statically linked: build without incremental caches (a one-off build gains
# nothing from them) and without debug info (panics still name file and line),
# which together take the target directory from about 2x to 1x its code.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=0
step "disk before the build: $(df -h --output=avail . | tail -1 | tr -d ' ') free"

# Formatting, clippy, the API docs and the unit tests: the root-free checks.
bash scripts/check.sh

# The scenario tests drive the built binaries (paddock, paddock-guest and the
# tests crate's helpers) from target/<triple>/debug: build them first.
step "cargo build --workspace"
cargo build --workspace

# Schema-driven fuzzing of a served API against its OpenAPI document
# (schemathesis from PyPI; bounded in examples and time). First the tests of
# how it tells a crash of the tool from a finding about the server.
step "python3 scripts/fuzz_verdict_test.py"
python3 scripts/fuzz_verdict_test.py
step "scripts/fuzz-api.sh"
bash scripts/fuzz-api.sh

# The store and API contract suites run on SQLite and on a real Postgres:
# postgres-test.sh installs Debian's postgresql if needed, starts a throwaway
# cluster on a loopback port and exports PADDOCK_TEST_POSTGRES_URL. Every
# test that needs Postgres must run here (paddock_test_support::require: a
# test whose PADDOCK_REQUIRE_* need is missing fails instead of skipping).
export PADDOCK_REQUIRE_POSTGRES=1
step "cargo test --workspace (with a throwaway PostgreSQL)"
log=$(mktemp /tmp/paddock-test.XXXXXX.log)
trap 'rm -f "$log"' EXIT
status=0
bash scripts/postgres-test.sh cargo test --workspace --no-fail-fast 2>&1 | tee "$log" || status=$?

# cargo prints one "test result:" line per test binary, the last one usually a
# doc-test run with nothing in it: close with the totals over all of them.
step "disk after the tests: $(df -h --output=avail . | tail -1 | tr -d ' ') free, target $(du -sh target | cut -f1)"
awk '/^test result:/ { p += $4; f += $6; i += $8 }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' "$log"
exit "$status"
