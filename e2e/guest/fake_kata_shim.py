#!/usr/bin/python3
"""A stand-in for Kata's containerd-shim-kata-v2 in the e2e guest: the shim-dedup scenario makes it the
`downstream_shim` of containerd-shim-vfio-gpu-v2, which execs it with containerd's argv, environment
and stdin, in the bundle directory.

On `start` it does what Kata does with a sandbox's VFIO devices, and nothing of its own to spare us:
every `linux.devices` entry `/dev/vfio/<N>` of ./config.json, in order, plus every `/dev/vfio/<N>` that
a `cdi.k8s.io/*` annotation names through the CDI specs in $FAKE_KATA_CDI_DIR (Kata's fallback when it
has no pod resources socket), is hot-added member by member (every device of IOMMU group N except
bridges) into the nested QEMU at $FAKE_KATA_QMP: `device_add vfio-pci host=<BDF>` into the next free
pcie-root-port rp0..rp3. Like Kata, it does not look for the same group twice.

Each attempt is one line appended to $FAKE_KATA_REPORT: `ADD <path> <BDF> <qdev id> <bus> ok` or
`ADD <path> <BDF> <qdev id> <bus> refused: <QEMU's words>`. On success it prints a shim address on
stdout (containerd reads it) and exits 0; if QEMU refused a device it prints the refusal and exits 1,
as a failed Kata start would. `delete` and every other command: nothing printed, exit 0.
Stdlib only, with its own minimal QMP client: it stands in for Kata's (Go) client, not for ours, which
scenario 30 exercises as vfio-gpu-e2e-qmp.
"""
import glob
import json
import os
import re
import socket
import sys
import time

ROOT_PORTS = ["rp0", "rp1", "rp2", "rp3"]


class QmpError(Exception):
    pass


class Qmp:
    """A minimal QMP client: greeting, qmp_capabilities, commands; events are skipped."""

    def __init__(self, path: str, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(timeout)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.file = self.sock.makefile("rb")
        if "QMP" not in self._read():
            raise QmpError("no QMP greeting")
        kind, value = self.execute("qmp_capabilities")
        if kind == "error":
            raise QmpError(f"qmp_capabilities: {value}")

    def _read(self) -> dict:
        line = self.file.readline()
        if not line:
            raise QmpError("QEMU closed the QMP socket")
        return json.loads(line)

    def execute(self, name: str, args: dict | None = None):
        """Returns ("return", value) or ("error", desc)."""
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read()
            if "return" in reply:
                return "return", reply["return"]
            if "error" in reply:
                return "error", reply["error"].get("desc", str(reply["error"]))
            # {"event": ...}: not ours, skip.

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def group_devices(group: str) -> list:
    """The group's members that Kata passes through: all but bridges and ports (class 0x0604)."""
    out = []
    for dev in sorted(glob.glob(f"/sys/kernel/iommu_groups/{group}/devices/*")):
        with open(os.path.join(dev, "class")) as f:
            if not f.read().startswith("0x0604"):
                out.append(os.path.basename(dev))
    return out


def cdi_device_paths(annotations: dict, cdi_dir: str) -> list:
    """The /dev/vfio/<N> nodes of every CDI device the spec's cdi.k8s.io/* annotations name."""
    specs = []
    for path in sorted(glob.glob(os.path.join(cdi_dir, "*.json"))):
        with open(path) as f:
            specs.append(json.load(f))
    out = []
    for key, value in sorted(annotations.items()):
        if not key.startswith("cdi.k8s.io/"):
            continue
        for name in (n.strip() for n in value.split(",")):
            kind, _, dev = name.partition("=")
            for spec in specs:
                if spec.get("kind") != kind:
                    continue
                for d in spec.get("devices", []):
                    if d.get("name") == dev:
                        nodes = d.get("containerEdits", {}).get("deviceNodes", [])
                        out += [n["path"] for n in nodes if re.fullmatch(r"/dev/vfio/\d+", n.get("path", ""))]
    return out


def start(sandbox: str) -> int:
    with open("config.json") as f:
        spec = json.load(f)
    paths = [d.get("path", "") for d in spec.get("linux", {}).get("devices", [])]
    paths = [p for p in paths if re.fullmatch(r"/dev/vfio/\d+", p)]
    paths += cdi_device_paths(spec.get("annotations", {}), os.environ.get("FAKE_KATA_CDI_DIR", "/nonexistent"))

    report = open(os.environ["FAKE_KATA_REPORT"], "a")
    q = Qmp(os.environ["FAKE_KATA_QMP"])
    refusals, used, n = [], 0, 0
    for path in paths:
        for bdf in group_devices(path.rsplit("/", 1)[1]):
            dev_id, bus = f"vfio-{n}", ROOT_PORTS[min(used, len(ROOT_PORTS) - 1)]
            n += 1
            kind, value = q.execute("device_add", {"driver": "vfio-pci", "host": bdf, "id": dev_id, "bus": bus})
            if kind == "return":
                used += 1
                report.write(f"ADD {path} {bdf} {dev_id} {bus} ok\n")
            else:
                refusals.append(value)
                report.write(f"ADD {path} {bdf} {dev_id} {bus} refused: {value}\n")
            report.flush()
    q.close()
    if refusals:
        print(f"failed to create sandbox {sandbox}: {refusals[0]}", flush=True)
        return 1
    print(f"unix:///run/e2e/fake-kata-{sandbox[:40]}.sock", flush=True)
    return 0


def main() -> int:
    args, command, sandbox, i = sys.argv[1:], "", "", 0
    while i < len(args):
        a = args[i]
        if a.startswith("-"):
            if a.lstrip("-") == "id" and i + 1 < len(args):
                sandbox = args[i + 1]
            if a.lstrip("-") not in ("debug", "v", "info"):
                i += 1  # its value
        else:
            command = a
        i += 1
    if command != "start":
        return 0
    try:
        return start(sandbox)
    except (OSError, QmpError, ValueError, KeyError) as e:
        print(f"fake kata: {e}", flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
