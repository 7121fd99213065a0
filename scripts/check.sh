#!/usr/bin/env bash
# The checks that need no root: formatting, clippy with warnings denied, the
# API docs with warnings denied, no unused dependency (cargo-machete, a pinned
# version installed from crates.io into target/tools when missing), the crate
# graph in docs/architecture.md against `cargo metadata`, and the unit tests (the `--lib` and `--bins`
# tests, which touch no namespace, cgroup or database server). Run it before
# every commit; scripts/test.sh runs it first, then the whole suite as root.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/step.sh
source scripts/step.sh

for component in fmt clippy; do
    if ! cargo "$component" --version >/dev/null 2>&1; then
        echo "scripts/check.sh: cargo $component is missing (rustup component add" \
            "rustfmt clippy)" >&2
        exit 1
    fi
done

step "cargo fmt --all -- --check"
cargo fmt --all -- --check

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo doc --workspace --no-deps (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

# Unused dependencies: cargo-machete reads the sources, so it needs no build.
# A dependency it cannot see used (one only a macro names) is listed under
# [package.metadata.cargo-machete] ignored, with the reason beside it.
machete_version=0.9.1
machete=target/tools/bin/cargo-machete
# A debug build of the tool: it compiles in a fraction of a release build's
# time, and its run over this tree stays under a second either way.
if [ "$("$machete" --version 2>/dev/null)" != "$machete_version" ]; then
    step "installing cargo-machete $machete_version into target/tools"
    cargo install --locked --quiet --debug --root target/tools cargo-machete --version "$machete_version"
fi
step "cargo machete (no unused dependency)"
"$machete"

step "scripts/crate_graph.py (docs/architecture.md's crate graph is cargo metadata's)"
python3 scripts/crate_graph.py

# A unit test that needs root (chown, say) ends in `_as_root`; off root it is
# skipped here, and named, and scripts/test.sh runs it as root.
skip=()
if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/check.sh: not root: skipping the unit tests named *_as_root"
    skip=(-- --skip _as_root)
fi
step "cargo test --workspace --lib --bins (unit tests)"
cargo test --workspace --lib --bins "${skip[@]}"
