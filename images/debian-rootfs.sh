#!/usr/bin/env bash
# Builds a minimal Debian root filesystem for `JailSpec::rootfs`.
#   images/debian-rootfs.sh DIR [SUITE]    (default suite: bookworm; as root)
set -euo pipefail
target=${1:?usage: $0 DIR [SUITE]}
suite=${2:-bookworm}
if ! command -v debootstrap >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
fi
debootstrap --variant=minbase "$suite" "$target"
# The sandbox mounts its own /proc, /dev, /tmp and /workspace over these.
mkdir -p "$target/workspace"
# Nothing secret ships in the image, but make that explicit.
rm -f "$target/etc/ssh/ssh_host_"* "$target/etc/machine-id"
echo "root filesystem ready in $target"
