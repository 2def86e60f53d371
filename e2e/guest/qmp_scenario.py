#!/usr/bin/env python3
"""(d) Hot-plug into a second QEMU inside the guest, over QMP, and record QEMU's exact answers.

    qmp_scenario.py --sock PATH --good BDF --non-viable BDF --not-vfio BDF [--shared BDF]
                    [--audit-bin PATH]

QEMU is already running (-S, pcie-root-ports rp0..rp3, QMP on PATH). Checks: a vfio-pci device_add
into a root port works and qom-get shows its host BDF; the same BDF again is refused with "device is
already attached"; a BDF of a non-viable group and one not bound to vfio-pci are refused. With
--audit-bin, runs `vfio-gpu audit --qmp PATH` between two QMP sessions (a QMP socket serves one
client at a time). Ends with `quit`. Prints E2E-RESULT / E2E-INFO lines; stdlib only.
"""
import argparse
import json
import socket
import subprocess
import time


class QmpError(Exception):
    pass


class NotYetBuilt(Exception):
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
        self.greeting = self._read()
        if "QMP" not in self.greeting:
            raise QmpError(f"no QMP greeting: {self.greeting}")
        self.command("qmp_capabilities")

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

    def command(self, name: str, args: dict | None = None):
        kind, value = self.execute(name, args)
        if kind == "error":
            raise QmpError(f"{name}: {value}")
        return value

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def result(name: str, ok: bool, detail: str) -> None:
    print(f"E2E-RESULT {name} {'PASS' if ok else 'FAIL'} {detail}", flush=True)


def info(name: str, detail: str) -> None:
    print(f"E2E-INFO {name} {detail}", flush=True)


def vfio_add(q: Qmp, bdf: str, dev_id: str, bus: str):
    t0 = time.monotonic()
    kind, value = q.execute("device_add", {"driver": "vfio-pci", "host": bdf, "id": dev_id, "bus": bus})
    return kind, value, time.monotonic() - t0


def expect_refused(q: Qmp, name: str, bdf: str, dev_id: str, bus: str, words: str) -> None:
    kind, value, took = vfio_add(q, bdf, dev_id, bus)
    if kind == "return":
        result(name, False, f"device_add vfio-pci host={bdf} was accepted; want it refused with '{words}'")
        return
    info(name, f"QEMU said: {value}")
    result(name, words in value, f"refused in {took:.1f}s: {value}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sock", required=True)
    ap.add_argument("--good", required=True, help="a BDF whose group is viable, on vfio-pci")
    ap.add_argument("--non-viable", required=True, help="a BDF on vfio-pci in a non-viable group")
    ap.add_argument("--not-vfio", required=True, help="a BDF bound to another driver")
    ap.add_argument("--shared", help="a BDF in a viable multi-device group")
    ap.add_argument("--audit-bin", help="vfio-gpu, to run `audit --qmp` against this QEMU")
    args = ap.parse_args()

    try:
        q = Qmp(args.sock)
    except (OSError, QmpError, ValueError) as e:
        result("nested-qmp", False, f"cannot talk QMP on {args.sock}: {e}")
        return 0
    version = q.greeting["QMP"].get("version", {}).get("qemu", {})
    result("nested-qmp", True, f"greeting from QEMU {version.get('major')}.{version.get('minor')}.{version.get('micro')}, capabilities negotiated")

    try:
        kind, value, took = vfio_add(q, args.good, "gpu0", "rp0")
        if kind == "error":
            info("nested-hotplug", f"QEMU said: {value}")
        result("nested-hotplug", kind == "return", f"device_add vfio-pci host={args.good} bus=rp0 took {took:.1f}s" + ("" if kind == "return" else f": {value}"))

        children = [c["name"] for c in q.command("qom-list", {"path": "/machine/peripheral"})]
        host = q.command("qom-get", {"path": "/machine/peripheral/gpu0", "property": "host"}) if "gpu0" in children else None
        result("nested-qom-host", host == args.good, f"qom-list /machine/peripheral = {children}; gpu0 host = {host}")

        expect_refused(q, "nested-duplicate-refused", args.good, "gpu0dup", "rp1", "device is already attached")
        expect_refused(q, "nested-non-viable-refused", args.non_viable, "gpu1", "rp1", "is not viable")
        expect_refused(q, "nested-not-vfio-refused", args.not_vfio, "gpu2", "rp1", args.not_vfio)

        if args.shared:
            kind, value, took = vfio_add(q, args.shared, "gpu3", "rp2")
            result("nested-shared-group", kind == "return", f"device_add host={args.shared} (switch group, all members on vfio-pci) took {took:.1f}s" + ("" if kind == "return" else f": {value}"))

        if args.audit_bin:
            q.close()  # one QMP client at a time: let the audit have the socket
            cmd = [args.audit_bin, "audit", "--qmp", args.sock]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
                if p.returncode == 2 and 'unknown command "audit"' in p.stderr:
                    print("E2E-RESULT nested-audit SKIP vfio-gpu has no audit command yet", flush=True)
                    raise NotYetBuilt
                for line in (p.stdout + p.stderr).splitlines():
                    info("nested-audit", line)
                result("nested-audit", args.good in p.stdout, f"`{' '.join(cmd)}` exit {p.returncode}, names {args.good}: {args.good in p.stdout}")
            except (OSError, subprocess.TimeoutExpired) as e:
                result("nested-audit", False, f"{' '.join(cmd)}: {e}")
            except NotYetBuilt:
                pass
            q = Qmp(args.sock)
        else:
            print("E2E-RESULT nested-audit SKIP no vfio-gpu in the build dir yet", flush=True)
    except (OSError, QmpError, ValueError) as e:
        result("nested-qmp-session", False, f"QMP exchange broke off: {e}")
        return 0

    try:
        q.execute("quit")
    except (OSError, QmpError):
        pass  # QEMU may close the socket before it answers
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
