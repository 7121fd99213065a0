#!/usr/bin/env bash
# The checks that need no root: formatting, clippy with warnings denied, the
# API docs with warnings denied, and the unit tests (the `--lib` and `--bins`
# tests, which touch no namespace, cgroup or database server). Run it before
# every commit; scripts/test.sh runs it first, then the whole suite as root.
set -euo pipefail
cd "$(dirname "$0")/.."

for component in fmt clippy; do
    if ! cargo "$component" --version >/dev/null 2>&1; then
        echo "scripts/check.sh: cargo $component is missing (rustup component add" \
            "rustfmt clippy)" >&2
        exit 1
    fi
done

echo "==> cargo fmt --all -- --check"
cargo fmt --all -- --check

echo "==> cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

echo "==> cargo doc --workspace --no-deps (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

# A unit test that needs root (chown, say) ends in `_as_root`; off root it is
# skipped here, and named, and scripts/test.sh runs it as root.
skip=()
if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/check.sh: not root: skipping the unit tests named *_as_root"
    skip=(-- --skip _as_root)
fi
echo "==> cargo test --workspace --lib --bins (unit tests)"
cargo test --workspace --lib --bins "${skip[@]}"
