#!/usr/bin/env bash
# Builds the docker/gvisor sandbox image from Debian packages, no registry:
#   images/docker-image.sh [TAG] [SUITE]   (default: paddock-sandbox:bookworm bookworm; as root)
# mmdebstrap makes a minimal Debian tree in a directory; the tree is packed
# into a tarball with fixed owners, order and times (SOURCE_DATE_EPOCH) and
# `docker import`ed. The guest (`paddock-guest`, static) is not in the image:
# the docker backend binds the host's binary in read-only, so one guest build
# serves every backend.
set -euo pipefail
tag=${1:-paddock-sandbox:bookworm}
suite=${2:-bookworm}
# The mirror apt is configured with (deb822 or one-line sources).
mirror=$(grep -hoE '^URIs: *\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1 | awk '{print $2}')
[ -n "$mirror" ] || mirror=$(grep -hoE '^deb +\S+' /etc/apt/sources.list 2>/dev/null | head -n1 | awk '{print $2}')
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
# A fixed date: the same suite state gives the same tree times.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
if ! command -v mmdebstrap >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap
fi
work=$(mktemp -d /tmp/paddock-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
# minbase: essential + apt; bash and coreutils are essential.
mmdebstrap --quiet --variant=minbase --mode=root \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/* "$1"/etc/machine-id "$1"/etc/ssh/ssh_host_*' \
    --customize-hook='mkdir -p "$1"/workspace "$1"/opt/paddock' \
    --customize-hook='chmod 0777 "$1"/workspace' \
    "$suite" "$work/root" "$mirror"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$work/root" -cf "$work/rootfs.tar" .
echo "rootfs tarball sha256 $(sha256sum "$work/rootfs.tar" | cut -d' ' -f1)"
docker import --change 'WORKDIR /workspace' --change 'LABEL org.paddock.image=sandbox' \
    "$work/rootfs.tar" "$tag"
echo "image $tag ready"
