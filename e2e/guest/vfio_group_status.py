#!/usr/bin/env python3
"""Asks the kernel whether VFIO groups are viable (VFIO_GROUP_GET_STATUS on /dev/vfio/<N>).

    vfio_group_status.py --name NAME GROUP=viable|not-viable ...

Prints one E2E-RESULT line per group. Runs in the e2e guest; stdlib only.
"""
import argparse
import errno
import fcntl
import os
import struct

VFIO_GROUP_GET_STATUS = (ord(";") << 8) | (100 + 3)  # _IO(VFIO_TYPE, VFIO_BASE + 3)
VFIO_GROUP_FLAGS_VIABLE = 1 << 0


def group_viable(group: str) -> bool:
    fd = os.open(f"/dev/vfio/{group}", os.O_RDWR)
    try:
        buf = bytearray(struct.pack("II", 8, 0))
        fcntl.ioctl(fd, VFIO_GROUP_GET_STATUS, buf, True)
        _, flags = struct.unpack("II", buf)
        return bool(flags & VFIO_GROUP_FLAGS_VIABLE)
    finally:
        os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("expect", nargs="+", help="GROUP=viable|not-viable")
    args = ap.parse_args()
    for item in args.expect:
        group, _, want = item.partition("=")
        name = f"{args.name}-{group}"
        try:
            got = "viable" if group_viable(group) else "not-viable"
        except OSError as e:
            why = "busy (another process holds it)" if e.errno == errno.EBUSY else e.strerror
            print(f"E2E-RESULT {name} FAIL cannot query /dev/vfio/{group}: {why}")
            continue
        status = "PASS" if got == want else "FAIL"
        print(f"E2E-RESULT {name} {status} VFIO_GROUP_GET_STATUS says group {group} is {got} (want {want})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
