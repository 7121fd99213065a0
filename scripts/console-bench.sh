#!/usr/bin/env bash
# The console's benchmark (crates/console/web/tests/bench.mjs) against a
# throwaway `paddock serve` (release build): first paint of a 5,000-event
# session beside a plain fetch of its stream, stored-to-shown latency, and
# the shipped size. Needs root (sandboxes), chromium and the npm packages
# (scripts/console-setup.sh). Builds only what it runs: the paddock binary,
# and paddock-guest unless PADDOCK_GUEST_BIN names one already built.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p paddock --bin paddock >/dev/null
if [ -z "${PADDOCK_GUEST_BIN:-}" ]; then
    cargo build --release -p paddock-guest >/dev/null
fi
bin=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
paddock=$({ ls -t "$bin"/*/release/paddock "$bin"/release/paddock 2>/dev/null || true; } | head -n 1)
data=$(mktemp -d /tmp/paddock-console-bench.XXXXXX)
token=console-bench-token-0123456789
out=$(mktemp)
PADDOCK_TOKENS="bench:$token" "$paddock" serve --listen 127.0.0.1:0 --data-dir "$data" --node console-bench >"$out" 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data" "$out"' EXIT
for _ in $(seq 100); do grep -q listening "$out" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$out" | head -n 1)
(cd crates/console/web && PADDOCK_URL="$url" PADDOCK_TOKEN="$token" node tests/bench.mjs)
