#!/usr/bin/env python3
"""Compares `vfio-gpu scan --json` with what the kernel itself shows in /sys.

    check_scan.py --bin PATH/vfio-gpu --config FILE --name NAME [--sysfs /sys]

Runs the scan once and prints E2E-RESULT lines NAME-<aspect> for: the exit code and JSON, the set of
selected devices (vendor and class prefix from the config, bridges excluded), and for each unit its
IOMMU group, members, drivers, viability (VFIO's rule; a non-viable unit's reason must name the
blocking BDF) and NUMA node. Runs in the e2e guest; stdlib only.
"""
import argparse
import json
import os
import subprocess


class Sysfs:
    def __init__(self, root: str):
        self.pci = os.path.join(root, "bus/pci/devices")
        self.groups = os.path.join(root, "kernel/iommu_groups")

    def attr(self, bdf: str, name: str) -> str:
        try:
            with open(os.path.join(self.pci, bdf, name)) as f:
                return f.read().strip()
        except OSError:
            return ""

    def link(self, bdf: str, name: str) -> str:
        path = os.path.join(self.pci, bdf, name)
        return os.path.basename(os.readlink(path)) if os.path.islink(path) else ""

    def devices(self):
        return sorted(os.listdir(self.pci))

    def group_members(self, group) -> list:
        return sorted(os.listdir(os.path.join(self.groups, str(group), "devices")))

    def is_bridge(self, bdf: str) -> bool:
        return self.attr(bdf, "class").startswith("0x0604")


def selected(sysfs: Sysfs, config: dict) -> set:
    vendors = {int(v, 16) for v in config["vendors"]}
    classes = [c.lower().removeprefix("0x") for c in config["gpu_classes"]]
    out = set()
    for bdf in sysfs.devices():
        vendor = sysfs.attr(bdf, "vendor")
        cls = sysfs.attr(bdf, "class").lower().removeprefix("0x")
        if vendor and int(vendor, 16) in vendors and any(cls.startswith(c) for c in classes):
            if not sysfs.is_bridge(bdf):
                out.add(bdf)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--sysfs", default="/sys")
    args = ap.parse_args()
    n = args.name

    def result(aspect: str, problems: list, ok_detail: str) -> None:
        if problems:
            print(f"E2E-RESULT {n}-{aspect} FAIL " + "; ".join(problems))
        else:
            print(f"E2E-RESULT {n}-{aspect} PASS {ok_detail}")

    cmd = [args.bin, "scan", "--json", "--config", args.config]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"E2E-RESULT {n}-run FAIL {' '.join(cmd)}: {e}")
        return 0
    if p.returncode != 0:
        print(f"E2E-RESULT {n}-run FAIL exit {p.returncode}: {p.stderr.strip()[:400]}")
        return 0
    try:
        scan = json.loads(p.stdout)
        units = scan["units"]
    except (ValueError, KeyError, TypeError) as e:
        print(f"E2E-RESULT {n}-run FAIL output is not the scan JSON ({e}): {p.stdout[:200]!r}")
        return 0
    print(f"E2E-RESULT {n}-run PASS {len(units)} units, {len(scan.get('skipped', []))} skipped")
    for u in units:
        print(f"E2E-INFO {n} unit {u.get('id')} group {u.get('iommu_group')} gpus {u.get('gpus')} "
              f"viable={u.get('viable')} {u.get('reason', '')}".rstrip())
    for k in scan.get("skipped", []):
        print(f"E2E-INFO {n} skipped {k.get('bdf')}: {k.get('reason')}")
    for k in scan.get("problems", []):
        print(f"E2E-INFO {n} problem {k.get('bdf')}: {k.get('error')}")

    sysfs = Sysfs(args.sysfs)
    with open(args.config) as f:
        config = json.load(f)
    want = selected(sysfs, config)
    got = {g for u in units for g in u.get("gpus", [])}
    skipped = {s.get("bdf") for s in scan.get("skipped", [])}
    problems = [f"{b} selected by the config but in no unit" for b in sorted(want - got - skipped)]
    problems += [f"{b} in a unit but not selected by the config" for b in sorted(got - want)]
    result("devices", problems, f"{len(want)} devices selected as sysfs and the config say: "
           f"{len(got)} in units, {len(want & skipped)} skipped")

    groups, drivers, viability, numa = [], [], [], []
    # A device skipped for its driver must be skipped for the driver the kernel has bound.
    for k in scan.get("skipped", []):
        real = sysfs.link(k.get("bdf", ""), "driver")
        if real and real != "vfio-pci" and real not in k.get("reason", ""):
            drivers.append(f"{k.get('bdf')} skipped with {k.get('reason')!r}, but the kernel has it on {real}")
    for u in units:
        g = u.get("iommu_group")
        members = u.get("members", [])
        names = {m.get("bdf") for m in members}
        try:
            kernel = sysfs.group_members(g)
        except OSError:
            groups.append(f"unit {u.get('id')}: group {g} does not exist")
            continue
        endpoints = {b for b in kernel if not sysfs.is_bridge(b)}
        if not endpoints <= names or not names <= set(kernel):
            groups.append(f"unit {u.get('id')} group {g}: members {sorted(names)}, kernel {kernel}")
        for m in members:
            if sysfs.link(m["bdf"], "iommu_group") != str(g):
                groups.append(f"{m['bdf']} is in group {sysfs.link(m['bdf'], 'iommu_group')}, unit says {g}")
            real = sysfs.link(m["bdf"], "driver")
            if m.get("driver", "") != real:
                drivers.append(f"{m['bdf']} driver {m.get('driver')!r}, kernel {real!r}")
        blockers = [b for b in sorted(endpoints) if sysfs.link(b, "driver") not in ("", "vfio-pci", "pci-stub")]
        if bool(u.get("viable")) == bool(blockers):
            viability.append(f"group {g}: viable={u.get('viable')}, kernel blockers {blockers}")
        elif blockers and blockers[0] not in u.get("reason", ""):
            viability.append(f"group {g}: reason {u.get('reason')!r} does not name {blockers[0]}")
        gpu = (u.get("gpus") or [None])[0]
        if gpu:
            node = int(sysfs.attr(gpu, "numa_node") or "-1")
            if u.get("numa_node") != (None if node < 0 else node):
                numa.append(f"{gpu}: numa_node {u.get('numa_node')}, kernel {node}")
    result("groups", groups, "every unit is its kernel IOMMU group")
    result("drivers", drivers, "every member's (and skipped device's) driver as the kernel has it")
    result("viability", viability, "viability and blocking members as VFIO's rule says")
    result("numa", numa, "NUMA nodes as sysfs has them (-1 = none)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
