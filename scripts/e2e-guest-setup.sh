#!/usr/bin/env bash
# Installs what the e2e guest (e2e/guest/) needs from Debian 12 packages: a kernel with its modules,
# busybox for the initramfs, QEMU to boot it (and to nest inside it), and the tools that resolve module
# dependencies and pack the initramfs. Idempotent: packages already present are left alone, and apt's
# lists are refreshed only when something is missing. Prints the kernel image it found, last.
set -euo pipefail

"$(dirname "$0")/install-deps.sh" \
  linux-image-amd64 `# the guest kernel and /lib/modules/<ver> (vfio, 9p, overlay, virtio)` \
  busybox-static `# the initramfs userland (one static binary)` \
  qemu-system-x86 `# boots the guest; also runs nested inside it for the QMP scenarios` \
  cpio `# packs the initramfs (newc format)` \
  kmod `# modinfo / modules.dep to resolve the modules the guest loads` \
  python3 `# the runner and the guest-side QMP exchange (stdlib only)`

# The newest installed Debian kernel is the one the harness boots (e2e/guest/kernel.sh picks the same).
kernel=$(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n1 || true)
if [[ -z $kernel ]]; then
  echo "e2e-guest-setup: no /boot/vmlinuz-* after installing linux-image-amd64; check apt's output above" >&2
  exit 1
fi
echo "e2e-guest-setup: guest kernel $kernel (modules in /lib/modules/${kernel#/boot/vmlinuz-})"
