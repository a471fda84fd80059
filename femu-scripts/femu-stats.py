#!/usr/bin/env python3
"""Print a running femu device's statistics over QMP (host and device counters, completion
lateness). Start the guest with `--qmp PATH`, then: femu-scripts/femu-stats.py PATH

Usage: femu-stats.py QMP_SOCKET [--device ID] [--json] [--watch SEC]
"""
import argparse
import asyncio
import json
import sys

try:
    from qemu.qmp import QMPClient
except ImportError:
    sys.exit("femu-stats: the Python package qemu.qmp is missing (pip install qemu.qmp, "
             "or use build/venv/bin/python3)")


async def read_stats(sock, device):
    client = QMPClient("femu-stats")
    await client.connect(sock)
    try:
        return await client.execute("qom-get", {"path": f"/machine/peripheral/{device}",
                                                "property": "stats"})
    finally:
        await client.disconnect()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("socket", help="QMP unix socket given to the run script's --qmp")
    ap.add_argument("--device", default="femu0", help="device id (default femu0)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--watch", type=float, metavar="SEC", help="repeat every SEC seconds")
    args = ap.parse_args()
    if args.watch is not None and not 0.1 <= args.watch <= 3600:
        ap.error("--watch must be between 0.1 and 3600 seconds")
    while True:
        try:
            stats = asyncio.run(read_stats(args.socket, args.device))
        except (OSError, Exception) as e:   # connection refused, no such device, ...
            sys.exit(f"femu-stats: {args.socket}: {e}")
        if args.json:
            print(json.dumps(stats, sort_keys=True))
        else:
            for k in sorted(stats):
                print(f"{k:24} {stats[k]}")
        if args.watch is None:
            return
        sys.stdout.flush()
        asyncio.run(asyncio.sleep(args.watch))


if __name__ == "__main__":
    main()
