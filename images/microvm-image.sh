#!/usr/bin/env bash
# Builds the microVM image from Debian packages only: the kernel of
# linux-image-amd64 and an initramfs holding busybox-static, the virtio,
# 9p, block, ext4 and balloon modules that kernel needs, a minimal /etc and
# the /init script below; and DIR/usr.img, a read-only ext4 copy of the
# host's /usr (the VM's programs, on a virtio-blk disk: QEMU cannot save a
# VM while a 9p export is mounted in it, so nothing the guest keeps mounted
# for its whole life is 9p).
#   images/microvm-image.sh [DIR]   (default $PADDOCK_MICROVM_DIR or
#                                    /var/lib/paddock/microvm; as root)
# Writes DIR/vmlinuz, DIR/initrd.img, DIR/usr.img and DIR/image.txt (package
# versions and the initrd's sha256). Idempotent: an image built from the
# same package versions is kept as it is; usr.img is made again when the
# host's installed packages changed (the sha256 of dpkg's status file). The
# same versions give a byte-identical initrd (fixed owners, order and
# times, SOURCE_DATE_EPOCH).
#
# The guest agent is not in the image: the microvm backend appends the
# host's static paddock-guest to the initrd as a cpio archive of its own
# (the kernel unpacks concatenated archives), so a new build of the guest
# needs no new image.
set -euo pipefail
out=${1:-${PADDOCK_MICROVM_DIR:-/var/lib/paddock/microvm}}
export DEBIAN_FRONTEND=noninteractive
# Not the cloud kernel: it is built without 9p (CONFIG_NET_9P unset).
kernel_meta=linux-image-amd64

missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
command -v cpio >/dev/null || missing+=(cpio)
command -v depmod >/dev/null || missing+=(kmod)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "==> installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
kernel_pkg=$(apt-cache depends "$kernel_meta" 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
if [ -z "$kernel_pkg" ]; then
    apt-get update -qq
    kernel_pkg=$(apt-cache depends "$kernel_meta" | awk '/Depends: linux-image-/{print $2; exit}')
fi
[ -n "$kernel_pkg" ] || { echo "$0: no package behind $kernel_meta" >&2; exit 1; }
kernel_ver=$(apt-cache policy "$kernel_pkg" | awk '/Candidate:/{print $2}')
usr_stamp="usr=$(sha256sum /var/lib/dpkg/status | cut -c1-16)"
mkdir -p "$out"
# The VM's /usr: every file of the host's /usr, owners and modes kept; no
# journal and no metadata checksums (read-only). Sized from what /usr holds, with room for
# ext4's own metadata.
if ! { [ -f "$out/usr.img" ] && [ -f "$out/usr.txt" ] && grep -qxF "$usr_stamp" "$out/usr.txt"; }; then
    echo "==> copying /usr into $out/usr.img ($usr_stamp)"
    usr_bytes=$(du -sb --apparent-size /usr | cut -f1)
    usr_inodes=$(find /usr -xdev | wc -l)
    rm -f "$out/usr.img.new"
    truncate -s $((usr_bytes + usr_bytes / 5 + (256 << 20))) "$out/usr.img.new"
    mkfs.ext4 -q -F -d /usr -L paddock-usr -m 0 -N $((usr_inodes + usr_inodes / 5 + 1024)) \
        -O ^has_journal,^metadata_csum -E root_owner=0:0 "$out/usr.img.new"
    chmod 0644 "$out/usr.img.new"
    mv "$out/usr.img.new" "$out/usr.img"
    echo "$usr_stamp" >"$out/usr.txt"
fi
busybox_ver=$(apt-cache policy busybox-static | awk '/Candidate:/{print $2}')
want="kernel=$kernel_pkg $kernel_ver busybox-static=$busybox_ver recipe=$(sha256sum "$0" | cut -c1-16)"
if [ -f "$out/image.txt" ] && [ -f "$out/vmlinuz" ] && [ -f "$out/initrd.img" ] \
    && head -n1 "$out/image.txt" | grep -qxF "$want"; then
    echo "microvm image in $out is current ($want)"
    exit 0
fi

echo "==> building the microvm image in $out ($want)"
work=$(mktemp -d "${TMPDIR:-/tmp}/paddock-microvm.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/debs"
chmod 0777 "$work/debs" # apt's download sandbox user writes here
(cd "$work/debs" && apt-get download -q "$kernel_pkg" busybox-static 2>&1 >/dev/null | grep -v unsandboxed >&2 || true)
dpkg-deb -x "$work/debs/$kernel_pkg"_*.deb "$work/kernel"
dpkg-deb -x "$work/debs"/busybox-static_*.deb "$work/busybox"

release=${kernel_pkg#linux-image-}
moddir="$work/kernel/lib/modules/$release"
# The package leaves modules.dep to depmod at install time.
depmod -b "$work/kernel" "$release"
root="$work/root"
mkdir -p "$root"/{proc,sys,dev,tmp,workspace,usr,etc,opt/paddock,.paddock/modules}
for link in bin sbin lib lib64; do ln -s "usr/$link" "$root/$link"; done
cp "$work/busybox/bin/busybox" "$root/.paddock/busybox"

# The modules the guest needs, dependencies first, from modules.dep:
# virtio-mmio (microvm's transport), virtio-serial (the host connection),
# 9p over virtio (the workspace), virtio-blk with ext4 (/usr; this
# kernel's ext4 loads the crc32c hash at every mount) and the balloon,
# whose free-page reporting hands the pages the guest frees back to the
# host (the kernel's CONFIG_PAGE_REPORTING), and virtio-net (with its
# failover deps), the one NIC of a sandbox with network.
declare -A seen=()
order=()
add_module() {
    local path=$1 dep
    [ -n "${seen[$path]:-}" ] && return
    seen[$path]=1
    for dep in $(awk -v m="$path:" '$1 == m { $1 = ""; print }' "$moddir/modules.dep"); do
        add_module "$dep"
    done
    order+=("$path")
}
for name in virtio_mmio virtio_console 9pnet_virtio 9p virtio_blk crc32c_generic ext4 virtio_balloon virtio_net; do
    path=$(grep -m1 "/$name.ko:" "$moddir/modules.dep" | cut -d: -f1 || true)
    [ -n "$path" ] || { echo "$0: module $name not in $kernel_pkg" >&2; exit 1; }
    add_module "$path"
done
for path in "${order[@]}"; do
    cp "$moddir/$path" "$root/.paddock/modules/"
    basename "$path" >>"$root/.paddock/modules.order"
done

# No host secrets: the guest's /etc is written here, not shared.
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/workspace:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
# dns: the guest writes /etc/resolv.conf (the host's egress DNS at the
# tap's gateway) only when the sandbox has network.
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
echo paddock >"$root/etc/hostname"

# PID 1 until it execs the guest agent (which then is PID 1). Mounts what
# is the same for every sandbox; the agent mounts the workspace and /tmp as
# its spec says. `paddock.marker` on the command line (the bench's bare
# boot) prints a marker and powers off instead.
cat >"$root/init" <<'EOF'
#!/.paddock/busybox sh
bb=/.paddock/busybox
$bb mount -t proc -o nosuid,nodev,noexec proc /proc
case " $($bb cat /proc/cmdline) " in
*" paddock.marker "*) echo PADDOCK-MARKER; $bb poweroff -f ;;
esac
for m in $($bb cat /.paddock/modules.order); do
    $bb insmod "/.paddock/modules/$m" || { echo "paddock-init: insmod $m failed"; $bb poweroff -f; }
done
# paddock.net=ADDRESS/PREFIX,GATEWAY: the host gave the VM a NIC (a tap
# in the sandbox's host-owned namespace); without it there is no device.
for arg in $($bb cat /proc/cmdline); do
    case $arg in paddock.net=*) net=${arg#paddock.net=} ;; esac
done
if [ -n "${net:-}" ]; then
    { $bb ip link set eth0 up && $bb ip addr add "${net%,*}" dev eth0 \
        && $bb ip route add default via "${net#*,}"; } \
        || { echo "paddock-init: configuring eth0 failed"; $bb poweroff -f; }
fi
$bb mount -t devtmpfs -o nosuid,noexec devtmpfs /dev
$bb mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
# /usr: the image's usr.img, the VM's first (and only) disk, read-only.
$bb mount -t ext4 -o ro,nodev,noload /dev/vda /usr || { echo "paddock-init: mounting /usr failed"; $bb poweroff -f; }
# The mount holds the disk; its node goes, so no command in the VM sees a
# block device (the escape battery's "no block devices under /dev").
$bb rm -f /dev/vda || { echo "paddock-init: removing /dev/vda failed"; $bb poweroff -f; }
# The guest agent: in the archive the host appended to this initramfs.
exec /opt/paddock/paddock-guest microvm
EOF
chmod 0755 "$root/init"

# The kernel package's own file time: fixed for a package version.
epoch=${SOURCE_DATE_EPOCH:-$(stat -c %Y "$work/kernel/boot/vmlinuz-$release")}
find "$root" -exec touch -h -d "@$epoch" {} +
(cd "$root" && find . -print0 | LC_ALL=C sort -z \
    | cpio --null -o -H newc --owner=0:0 --reproducible --quiet) | gzip -9n >"$work/initrd.img"
cp "$work/kernel/boot/vmlinuz-$release" "$work/vmlinuz"
mv "$work/initrd.img" "$out/initrd.img"
mv "$work/vmlinuz" "$out/vmlinuz"
{
    echo "$want"
    echo "initrd sha256 $(sha256sum "$out/initrd.img" | cut -d' ' -f1)"
    echo "modules ${order[*]}"
} >"$out/image.txt"
cat "$out/image.txt"
