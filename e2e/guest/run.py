#!/usr/bin/env python3
"""The e2e stage: boots Debian's kernel under QEMU (TCG, emulated Intel IOMMU) with a topology of
emulated devices standing in for GPUs, runs every guest-side scenario in ONE boot, and reports.

    run.py --bin BUILD/bin [--timeout 280] [--workdir DIR] [--only REGEX] [--verbose] [--print-qemu]

The guest runs the host's own root read-only over 9p (see init), so our binaries run in it by their
host path: pass the build's bin dir. Scenarios whose binaries aren't built yet report SKIP.
Prints one line per result and ends with `N passed, M failed`; exits 0 only when the guest finished,
nothing failed and something passed. Needs root (the 9p share reads the whole root) and the packages
of scripts/e2e-guest-setup.sh. Stdlib only.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SETUP = "scripts/e2e-guest-setup.sh"


def topology() -> list:
    """QEMU arguments for the guest's devices. topology.env names the BDFs the guest kernel gives them;
    scenario 00 checks both agree, and the README lists the IOMMU groups they form."""
    return [
        # The emulated IOMMU comes before any PCI device.
        "-device", "intel-iommu,intremap=on",
        # pcie.0 00:02-04: one endpoint per pcie-root-port (the root port has ACS: a group each).
        "-device", "pcie-root-port,id=rp1,chassis=1,addr=0x2",
        "-device", "edu,bus=rp1",  # 01:00.0
        "-device", "pcie-root-port,id=rp2,chassis=2,addr=0x3",
        "-device", "e1000e,bus=rp2",  # 02:00.0
        "-blockdev", "null-co,node-name=nvme0,size=16777216",  # reads as zeros, no file
        "-device", "pcie-root-port,id=rp3,chassis=3,addr=0x4",
        "-device", "nvme,bus=rp3,serial=e2e0001,drive=nvme0",  # 03:00.0
        # 00:05: a switch behind an ioh3420 root port (no ACS): one group for the port, the switch
        # and both endpoints.
        "-device", "ioh3420,id=swrp,chassis=4,addr=0x5",
        "-device", "x3130-upstream,id=swup,bus=swrp",  # 04:00.0
        "-device", "xio3130-downstream,id=swdn1,bus=swup,chassis=5,slot=0",  # 05:00.0
        "-device", "xio3130-downstream,id=swdn2,bus=swup,chassis=6,slot=1",  # 05:01.0
        "-device", "edu,bus=swdn1",  # 06:00.0
        "-device", "e1000e,bus=swdn2",  # 07:00.0
        # 00:06: a multifunction slot, a GPU-like .0 and a second function .1: one group of two.
        "-device", "pcie-root-port,id=rp7,chassis=7,addr=0x6",
        "-device", "edu,bus=rp7,addr=0.0,multifunction=on",  # 08:00.0
        "-device", "e1000e,bus=rp7,addr=0.1",  # 08:00.1
        # 00:07: a pxb-pcie expander on NUMA node 1 (bus 0x80) with a display-class device.
        "-device", "pxb-pcie,id=pxb1,bus_nr=128,numa_node=1,bus=pcie.0,addr=0x7",
        "-device", "pcie-root-port,id=rp9,bus=pxb1,chassis=9",  # 80:00.0
        "-device", "VGA,bus=rp9",  # 81:00.0
        # 00:09: a GPU the shim governs (AMD vendor, VGA class) with an HD audio function, as a
        # consumer GPU brings: one group of two, for the shim-dedup scenario.
        "-device", "pcie-root-port,id=rp10,chassis=10,bus=pcie.0,addr=0x9",
        "-device", "ati-vga,bus=rp10,addr=0.0,multifunction=on",  # 09:00.0
        "-device", "intel-hda,bus=rp10,addr=0.1",  # 09:00.1
    ]


def qemu_command(kernel: str, initrd: str, console: str, results: str, append: str) -> list:
    return [
        "qemu-system-x86_64",
        "-accel", "tcg",  # KVM is not usable on these machines
        "-machine", "q35,kernel-irqchip=split",
        "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
        "-m", "1G", "-smp", "2,sockets=2",
        "-object", "memory-backend-ram,id=mem0,size=512M",
        "-numa", "node,nodeid=0,cpus=0,memdev=mem0",
        "-object", "memory-backend-ram,id=mem1,size=512M",
        "-numa", "node,nodeid=1,cpus=1,memdev=mem1",
        "-kernel", kernel, "-initrd", initrd, "-append", append,
        "-serial", f"file:{console}",  # ttyS0: the kernel console
        "-serial", f"file:{results}",  # ttyS1: E2E-* lines from the guest
        # The host's root, read-only, for the guest to overlay and chroot into.
        "-fsdev", "local,id=hostroot,path=/,readonly=on,security_model=none,multidevs=remap",
        "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot,addr=0x8",
    ] + topology()


def newest_kernel() -> str | None:
    kernels = glob.glob("/boot/vmlinuz-*")
    key = lambda p: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", p)]
    return max(kernels, key=key) if kernels else None


def fail_setup(msg: str) -> int:
    print(f"e2e-guest: {msg}", file=sys.stderr)
    print("0 passed, 1 failed")
    return 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="", help="the build's bin dir (our binaries, by host path)")
    ap.add_argument("--kernel", help="guest kernel (default: newest /boot/vmlinuz-*)")
    ap.add_argument("--timeout", type=int, default=280, help="seconds for the whole boot (default 280)")
    ap.add_argument("--step-timeout", type=int, default=90, help="seconds per guest scenario (default 90)")
    ap.add_argument("--workdir", help="keep the initramfs and logs here (default: a temp dir, removed)")
    ap.add_argument("--only", default="", help="bash regex on scenario names, e.g. 'groups|bind'")
    ap.add_argument("--verbose", action="store_true", help="also print the guest's other output")
    ap.add_argument("--print-qemu", action="store_true", help="print the QEMU command and exit")
    args = ap.parse_args()

    kernel = args.kernel or newest_kernel()
    if not kernel or not os.path.isfile(kernel):
        return fail_setup(f"no guest kernel ({kernel or '/boot/vmlinuz-*'}); run {SETUP}")
    kver = os.path.basename(kernel).removeprefix("vmlinuz-")
    if not os.path.isdir(f"/lib/modules/{kver}"):
        return fail_setup(f"no /lib/modules/{kver} for {kernel}; run {SETUP}")
    for tool in ("qemu-system-x86_64", "modprobe", "cpio"):
        if not shutil.which(tool):
            return fail_setup(f"'{tool}' not found; run {SETUP}")
    if os.geteuid() != 0:
        return fail_setup("must run as root: the guest reads the host's root over 9p and binds devices")
    bin_dir = os.path.realpath(args.bin) if args.bin else ""
    if bin_dir and not os.path.isdir(bin_dir):
        print(f"e2e-guest: note: bin dir {bin_dir} does not exist; scenarios needing our binaries will SKIP")
    if bin_dir.startswith(("/proc", "/sys", "/dev", "/run")):
        return fail_setup(f"bin dir {bin_dir} is hidden in the guest (it mounts its own /proc /sys /dev /run)")
    for value, what in ((bin_dir, "--bin"), (args.only, "--only"), (HERE, "the e2e dir")):
        if re.search(r"\s", value):
            return fail_setup(f"{what} '{value}' contains whitespace; it travels on the kernel command line")

    work = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="e2e-guest-")
    os.makedirs(work, exist_ok=True)
    initrd, console, results, qemu_log = (os.path.join(work, n) for n in
                                          ("initramfs.cpio", "console.log", "results.log", "qemu.log"))
    append = " ".join([
        "console=ttyS0", "quiet", "panic=-1", "intel_iommu=on",
        f"e2e.dir={HERE}", f"e2e.bin={bin_dir or '/nonexistent'}", f"e2e.step_timeout={args.step_timeout}",
    ] + ([f"e2e.only={args.only}"] if args.only else []))
    cmd = qemu_command(kernel, initrd, console, results, append)
    if args.print_qemu:
        print(" ".join(f"'{a}'" if " " in a else a for a in cmd))
        return 0

    build = subprocess.run([os.path.join(HERE, "build-initramfs.sh"), kver, initrd], capture_output=True, text=True)
    if build.returncode != 0:
        return fail_setup(f"initramfs build failed: {build.stderr.strip()}")
    for path in (console, results):
        open(path, "w").close()

    passed, failed, skipped, done, other = [], [], [], None, []
    t0 = time.monotonic()
    print(f"e2e-guest: booting {kernel} under TCG (timeout {args.timeout}s, logs in {work})", flush=True)
    with open(qemu_log, "w") as qlog:
        qemu = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=qlog, stderr=subprocess.STDOUT)
    timed_out = False
    pending = ""
    with open(results, "r", errors="replace") as res:

        def drain() -> None:
            nonlocal pending, done
            pending += res.read()
            *lines, pending = pending.split("\n")
            for raw in lines:
                line = raw.rstrip("\r")
                m = re.match(r"E2E-RESULT (\S+) (PASS|FAIL|SKIP) ?(.*)", line)
                if m:
                    name, status, detail = m.groups()
                    {"PASS": passed, "FAIL": failed, "SKIP": skipped}[status].append(name)
                    print(f"{status:4} {name}: {detail}", flush=True)
                elif line.startswith("E2E-DONE"):
                    done = line.split()[1:] or ["?"]
                elif line.startswith("E2E-INFO "):
                    print(f"     {line[9:]}", flush=True)
                elif line.strip():
                    other.append(line)
                    if args.verbose:
                        print(f"   | {line}", flush=True)

        # Poll the results file while QEMU runs, so progress shows as it happens.
        while qemu.poll() is None:
            if time.monotonic() - t0 > args.timeout:
                timed_out = True
                qemu.kill()
                qemu.wait()
                break
            drain()
            time.sleep(0.2)
        drain()
    elapsed = time.monotonic() - t0

    if timed_out:
        failed.append("e2e-timeout")
        print(f"FAIL e2e-timeout: the guest did not finish within {args.timeout}s; QEMU killed")
    elif done is None:
        failed.append("guest-finished")
        print(f"FAIL guest-finished: QEMU exited {qemu.returncode} without the guest's E2E-DONE line")
    if not passed and not failed:
        failed.append("no-results")
        print("FAIL no-results: the guest reported nothing")
    if failed:
        if other and not args.verbose:
            print("e2e-guest: other guest output:")
            for line in other[-40:]:
                print(f"   | {line}")
        for path, what in ((console, "kernel console"), (qemu_log, "QEMU")):
            try:
                tail = open(path, errors="replace").read().splitlines()[-15:]
            except OSError:
                tail = []
            if tail:
                print(f"e2e-guest: last lines of the {what} ({path}):")
                for line in tail:
                    print(f"   | {line}")
    print(f"e2e-guest: {elapsed:.1f}s, {len(skipped)} skipped")
    print(f"{len(passed)} passed, {len(failed)} failed")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
