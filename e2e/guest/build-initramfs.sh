#!/usr/bin/env bash
# Packs the e2e guest's initramfs: busybox-static, the Debian kernel modules the guest loads before it
# has a root filesystem (virtio-pci, 9p over virtio, overlay) plus the vfio stack, each with its
# dependencies in load order, and e2e/guest/init as /init. The guest's real userland is the host's own
# root, shared read-only over 9p (see init), so nothing else goes in here.
#
#   build-initramfs.sh KERNEL_VERSION OUTPUT.cpio
#
# The output is an uncompressed newc cpio (a few MB): under TCG, inflating it would cost more boot time
# than reading it through fw_cfg does.
set -euo pipefail

usage() { echo "usage: $0 KERNEL_VERSION OUTPUT.cpio" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
kver=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
moddir=/lib/modules/$kver

# Boot order matters: vfio-pci is loaded too, but it binds nothing until a device's driver_override
# names it and the device is probed (there is no udev in the guest to do anything behind our back).
boot_modules=(virtio_pci 9pnet_virtio 9p overlay vfio vfio_iommu_type1 vfio-pci)

for tool in modprobe cpio; do
  command -v "$tool" >/dev/null || { echo "build-initramfs: '$tool' not found; run scripts/e2e-guest-setup.sh" >&2; exit 1; }
done
busybox=/bin/busybox
[[ -x $busybox ]] ||
  { echo "build-initramfs: $busybox missing; run scripts/e2e-guest-setup.sh (busybox-static)" >&2; exit 1; }
# busybox-static is a static binary; a dynamic busybox would not run in an initramfs without its libc.
if command -v ldd >/dev/null && ldd "$busybox" >/dev/null 2>&1; then
  echo "build-initramfs: $busybox is dynamically linked; install busybox-static" >&2
  exit 1
fi
[[ -f $moddir/modules.dep ]] ||
  { echo "build-initramfs: $moddir/modules.dep missing; install linux-image-amd64 (scripts/e2e-guest-setup.sh)" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,dev,proc,sys,etc/e2e,lower,rw,newroot}

cp "$busybox" "$stage/bin/busybox"
for applet in $("$busybox" --list); do
  [[ $applet == busybox ]] || ln -s busybox "$stage/bin/$applet"
done

# modprobe --show-depends prints "insmod <path>" for each module in dependency order (and "builtin
# <name>" for those compiled in); repeated dependencies are loaded once, in first-seen order.
declare -A seen=()
: >"$stage/etc/e2e/modules.load"
for m in "${boot_modules[@]}"; do
  deps=$(modprobe -S "$kver" --show-depends "$m") ||
    { echo "build-initramfs: module '$m' not found for kernel $kver" >&2; exit 1; }
  while read -r kind path _; do
    [[ $kind == insmod && -z ${seen[$path]:-} ]] || continue
    seen[$path]=1
    mkdir -p "$stage$(dirname "$path")"
    cp "$path" "$stage$path"
    echo "$path" >>"$stage/etc/e2e/modules.load"
  done <<<"$deps"
done

cp "$here/init" "$stage/init"
chmod 755 "$stage/init"

(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc --owner=0:0) >"$out.tmp"
mv "$out.tmp" "$out"
echo "build-initramfs: $out ($(du -k "$out" | cut -f1) KiB, ${#seen[@]} modules for $kver)"
