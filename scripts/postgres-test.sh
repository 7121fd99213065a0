#!/usr/bin/env bash
# Runs a command against a throwaway Postgres cluster on a loopback port.
#
#   scripts/postgres-test.sh [COMMAND...]     (default: cargo test -p paddock-store)
#
# Installs Debian's postgresql package if it is missing, creates a cluster in a
# temporary directory (as the `postgres` OS user: initdb refuses root), starts it
# on a free 127.0.0.1 port with its unix socket in that directory, creates a
# database, exports PADDOCK_TEST_POSTGRES_URL for COMMAND, and stops and removes
# the cluster when it exits, whatever happens. Must run as root (apt-get, runuser).
set -euo pipefail

log() { echo "postgres-test: $*" >&2; }

find_bin() {
    # the newest installed major version
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

install_postgres() {
    export DEBIAN_FRONTEND=noninteractive
    log "installing Debian's postgresql package"
    if ! apt-get install -y -q postgresql >/dev/null 2>&1; then
        log "package lists are stale or missing; running apt-get update"
        apt-get update -q >/dev/null
        apt-get install -y -q postgresql >/dev/null
    fi
    # the package may start its default cluster; this script does not use it
    if command -v pg_ctlcluster >/dev/null; then
        for conf in /etc/postgresql/*/main; do
            [ -d "$conf" ] || continue
            version=$(basename "$(dirname "$conf")")
            pg_ctlcluster "$version" main stop >/dev/null 2>&1 || true
        done
    fi
}

free_port() {
    python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

bin=$(find_bin)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    install_postgres
    bin=$(find_bin)
fi
[ -x "$bin/initdb" ] || { log "no initdb under /usr/lib/postgresql/*/bin"; exit 1; }

dir=$(mktemp -d /tmp/paddock-pg.XXXXXX)
chown postgres:postgres "$dir"
chmod 700 "$dir"
as_postgres() { runuser -u postgres -- "$@"; }

cleanup() {
    status=$?
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_postgres "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    if [ "$status" -ne 0 ] && [ -f "$dir/server.log" ]; then
        log "server log (last lines):"
        tail -n 20 "$dir/server.log" >&2 || true
    fi
    rm -rf "$dir"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

as_postgres "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >/dev/null

port=""
for _ in 1 2 3 4 5; do
    port=$(free_port)
    if as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
        -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir \
            -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
            -c max_connections=200" >/dev/null; then
        break
    fi
    log "could not start on port $port; trying another"
    port=""
done
[ -n "$port" ] || { log "the server did not start"; exit 1; }

as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres paddock_test

export PADDOCK_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/paddock_test"
log "PADDOCK_TEST_POSTGRES_URL=$PADDOCK_TEST_POSTGRES_URL"

if [ "$#" -eq 0 ]; then
    set -- cargo test -p paddock-store
fi
"$@"
