#!/usr/bin/env bash
# Schema-driven fuzzing of the HTTP API: starts the built `paddock serve` on a
# loopback port (a throwaway data directory and token), runs schemathesis
# (from PyPI, in a venv under target/) against the document the server serves,
# and fails on any 5xx and on any answer the document does not describe
# (status, content type, headers, body schema), on schema-invalid requests the
# server accepts, on schema-valid requests it refuses (400/422), and on routes
# that answer without a token. Bounded:
# PADDOCK_FUZZ_EXAMPLES cases per operation and phase, PADDOCK_FUZZ_SECONDS
# in all (defaults: 20 and 75; about 90 s with the server's start). Needs
# root (the server starts real sandboxes) and a prior `cargo build --workspace`.
#
# positive_data_acceptance is left off, by name and with a reason each, for
# the operations whose rules the schema cannot say ("argv or shell", the
# server's configuration, ...): scripts/fuzz-api.toml. Not checked:
# use_after_free: DELETE of a sandbox or a session leaves its record readable
# (`stopped`, `archived`), as the document says of each.
#
# PADDOCK_FUZZ_PHASES picks schemathesis phases (default
# examples,coverage,fuzzing; `stateful` follows the links it infers).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/x86_64-unknown-linux-gnu/debug
venv=target/schemathesis-venv
examples=${PADDOCK_FUZZ_EXAMPLES:-20}
seconds=${PADDOCK_FUZZ_SECONDS:-75}
# A fixed seed keeps the run in scripts/test.sh reproducible; set one to explore.
seed=${PADDOCK_FUZZ_SEED:-13571}
phases=${PADDOCK_FUZZ_PHASES:-examples,coverage,fuzzing}

for binary in paddock paddock-guest; do
    if [ ! -x "$bin/$binary" ]; then
        echo "scripts/fuzz-api.sh: $bin/$binary is missing; run cargo build --workspace" >&2
        exit 1
    fi
done

if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    echo "==> installing python3-venv"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends python3 python3-venv
fi
# a venv names its own path in its scripts: one moved with its checkout does
# not run, so it is made again
if ! "$venv/bin/schemathesis" --version >/dev/null 2>&1; then
    echo "==> installing schemathesis into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "schemathesis==4.32.5" "hypothesis==6.170.17"
fi

work=$(mktemp -d /tmp/paddock-fuzz.XXXXXX)
token="fuzz-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
cat >"$work/config.toml" <<EOF
max_sandboxes = 6

[[tokens]]
token = "$token"
tenant = "fuzz"
EOF

server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    # The server's volume pool stays mounted after it stops (it is meant to
    # outlive the server); this data dir does not.
    if mountpoint -q "$work/data/volumes/mnt"; then
        umount "$work/data/volumes/mnt" || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

"$bin/paddock" serve --listen 127.0.0.1:0 --data-dir "$work/data" \
    --config "$work/config.toml" --guest-bin "$bin/paddock-guest" \
    >"$work/serve.out" 2>"$work/serve.log" &
server_pid=$!
base=
for _ in $(seq 1 100); do
    base=$(sed -n 's|^paddock: listening on \(http://[^ ]*\).*|\1|p' "$work/serve.out")
    [ -n "$base" ] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "scripts/fuzz-api.sh: paddock serve did not start:" >&2
        cat "$work/serve.log" >&2
        exit 1
    fi
    sleep 0.1
done
if [ -z "$base" ]; then
    echo "scripts/fuzz-api.sh: paddock serve did not print its address in 10 s" >&2
    exit 1
fi
echo "==> schemathesis against $base/v1/openapi.json (seed $seed, $examples examples, ${seconds}s)"

# Run from the throwaway directory: schemathesis keeps a cache in its cwd.
schemathesis="$PWD/$venv/bin/schemathesis"
config="$PWD/scripts/fuzz-api.toml"
fuzz() {
    status=0
    rm -f "$work/events.ndjson"
    (cd "$work" && timeout --signal=INT "$((seconds + 60))" \
        "$schemathesis" --config-file "$config" run "$base/v1/openapi.json" \
        --header "Authorization: Bearer $token" \
        --phases "$phases" \
        --max-examples "$examples" \
        --max-time "$seconds" \
        --request-timeout 20 \
        --workers 2 \
        --seed "$seed" \
        --no-color \
        --report ndjson --report-ndjson-path "$work/events.ndjson") \
        >"$work/schemathesis.out" 2>&1 || status=$?
    cat "$work/schemathesis.out"
}
# Each run is judged by scripts/fuzz_verdict.py from its event log: a failed
# check, or an error that is not known to be the tool's own, fails here. A
# crash of the tool itself (a Python exception inside schemathesis or
# hypothesis with no failed check, such as CPython 3.11.7's "AST constructor
# recursion depth mismatch") is no finding about the server: the run is made
# again with the next seed, and after PADDOCK_FUZZ_ATTEMPTS crashed runs
# (default 3) the phases the crashes hit are left out, with their reason
# printed, and the rest run. Bounded: at most ATTEMPTS + 4 runs in all.
attempts=${PADDOCK_FUZZ_ATTEMPTS:-3}
crashes=0
runs=0
while :; do
    runs=$((runs + 1))
    fuzz
    verdict=$(python3 scripts/fuzz_verdict.py "$status" "$work/events.ndjson")
    case "$verdict" in
    pass)
        break
        ;;
    crash\ *)
        crashes=$((crashes + 1))
        hit=$(echo "$verdict" | cut -d' ' -f2)
        echo "scripts/fuzz-api.sh: schemathesis crashed (seed $seed, phases $phases): ${verdict#crash }" >&2
        if [ "$crashes" -lt "$attempts" ]; then
            seed=$((seed + 1))
            echo "scripts/fuzz-api.sh: no failed check: running again with seed $seed" >&2
        else
            phases=$(python3 scripts/fuzz_verdict.py --without "$phases" "$hit")
            echo "SKIPPED phase(s) $hit of the API fuzz: schemathesis crashed in them" \
                "$crashes times with no failed check (${verdict#crash $hit })" >&2
            if [ -z "$phases" ]; then
                echo "SKIPPED the API fuzz: every phase crashed the tool" >&2
                status=0
                break
            fi
        fi
        if [ "$runs" -ge $((attempts + 4)) ]; then
            echo "scripts/fuzz-api.sh: $runs runs and the tool still crashes: giving up" >&2
            status=1
            break
        fi
        ;;
    *)
        status=1
        echo "scripts/fuzz-api.sh: ${verdict}" >&2
        break
        ;;
    esac
done

python3 scripts/fuzz_verdict.py "$status" "$work/events.ndjson" >/dev/null || true
if [ "$status" -ne 0 ]; then
    echo "scripts/fuzz-api.sh: schemathesis found failures (exit $status); server log:" >&2
    tail -n 50 "$work/serve.log" >&2
fi
exit "$status"
