#!/usr/bin/env bash
# Installs and starts what the docker and gvisor backends need, on a Debian 12
# machine as root, skipping whatever is already there:
#   docker.io (dockerd 20.10, API 1.41) in experimental mode, runsc (gVisor)
#   registered with dockerd as the `runsc` and `runsc-net` runtimes, and the
#   sandbox image built by images/docker-image.sh.
# dockerd is started in the background (no systemd here), its log in
# /var/log/paddock-dockerd.log. scripts/test.sh calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
image=${PADDOCK_DOCKER_IMAGE:-paddock-sandbox:bookworm}
export DEBIAN_FRONTEND=noninteractive
started=$(date +%s)

missing=()
[ -x /usr/sbin/dockerd ] || missing+=(docker.io)
[ -x /usr/bin/runsc ] || missing+=(runsc)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "==> installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Two runsc runtimes: `runsc` without any network (sandboxes with network
# none), and `runsc-net` with host networking: the sentry's sockets are host
# sockets in the namespace paddock owns and configures for a sandbox with
# egress, so its redirect to the egress proxy applies (docs/security.md).
# Experimental mode: the engine's checkpoint API, with which a gVisor
# sandbox is paused `full` (docs/architecture.md, "Pause and resume").
mkdir -p /etc/docker
# This script's earlier files, which it replaces.
earlier=(
    '{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}}'
    '{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}, "runsc-net": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=host"]}}}'
)
want='{"experimental": true, "runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}, "runsc-net": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=host"]}}}'
compact() { tr -d ' \t\n'; }
restart=no
if ! grep -q '"runsc-net"' /etc/docker/daemon.json 2>/dev/null ||
    ! compact </etc/docker/daemon.json | grep -q '"experimental":true'; then
    existing=$({ compact </etc/docker/daemon.json; } 2>/dev/null || true)
    ours=no
    for file in "${earlier[@]}"; do
        [ "$existing" = "$(printf '%s' "$file" | compact)" ] && ours=yes
    done
    if [ "$ours" = no ] && [ -n "$existing" ] && [ "$existing" != "{}" ]; then
        echo "scripts/container-setup.sh: /etc/docker/daemon.json has settings but not" \
            "all of $want; add what it lacks (not overwritten) and restart dockerd" >&2
        exit 1
    fi
    # Experimental mode is read only at dockerd's start (SIGHUP reloads the
    # runtimes but not it): a running dockerd is restarted.
    echo "$want" >/etc/docker/daemon.json
    restart=yes
fi

docker_cli=/usr/bin/docker
[ -x "$docker_cli" ] || docker_cli=docker
if [ "$restart" = yes ] && [ -e /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    echo "==> restarting dockerd to register runsc and its experimental mode"
    kill "$(cat /var/run/docker.pid)"
    for _ in $(seq 1 60); do [ -e /var/run/docker.pid ] || break; sleep 0.5; done
fi
# A machine restored from an image (or a killed dockerd) leaves its pid files
# behind, and dockerd then refuses to start ("pid file found"). A pid file
# whose process is not a live dockerd (or containerd) is stale: remove it.
remove_stale_pid_file() {
    local file=$1 program=$2 pid
    [ -e "$file" ] || return 0
    pid=$(cat "$file" 2>/dev/null || true)
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$program" ]; then
        return 0
    fi
    echo "==> removing stale $file (pid ${pid:-none} is not a running $program)"
    rm -f "$file"
}
if ! "$docker_cli" version >/dev/null 2>&1; then
    remove_stale_pid_file /var/run/docker.pid dockerd
    remove_stale_pid_file /var/run/docker/containerd/containerd.pid containerd
    echo "==> starting dockerd (log: /var/log/paddock-dockerd.log)"
    setsid /usr/sbin/dockerd >>/var/log/paddock-dockerd.log 2>&1 </dev/null &
    for _ in $(seq 1 120); do
        "$docker_cli" version >/dev/null 2>&1 && break
        sleep 0.5
    done
    "$docker_cli" version >/dev/null 2>&1 || {
        echo "dockerd did not come up; its log:" >&2
        tail -n 40 /var/log/paddock-dockerd.log >&2
        exit 1
    }
fi

if ! "$docker_cli" image inspect "$image" >/dev/null 2>&1; then
    echo "==> building $image"
    PATH="$(dirname "$docker_cli"):$PATH" bash images/docker-image.sh "$image"
fi
echo "==> container tier ready ($image, runtimes: $("$docker_cli" info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}')) in $(($(date +%s) - started)) s"
