#!/usr/bin/env python3
"""What a blackbox FTL command costs with its state written through to a store (persistence)
and without: host pages per second of one thread (CPU time), random 4 KiB overwrites,
128 KiB writes and 4 KiB reads of a full 4 GiB drive in a closed loop of 64, forced GC all
along the writes; the two drives take turns, the medians of the rounds are printed. No
guest: the FTL and the NAND model are the whole cost, as in a simulator.

Builds bench/ftl-write.c in the unit tests' build (BUILD/unit, as `make unit` does).

Usage: bench/ftl-write.py [--short] [--pages N] [--build DIR]
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=2000000, help="host pages (default 2000000)")
    ap.add_argument("--short", action="store_true", help="500000 pages")
    ap.add_argument("--build", default=os.environ.get("FEMU_BUILD", str(ROOT / "build")),
                    help="the build directory (default build/)")
    a = ap.parse_args()
    if a.short:
        a.pages = 500000
    if a.pages < 32:
        sys.exit("--pages must be at least 32")
    subprocess.run(["bash", str(ROOT / "qemu" / "setup-unit-build.sh"), a.build], check=True)
    unit = Path(a.build) / "unit"
    subprocess.run(["ninja", "-C", str(unit), "bench/ftl-write"], check=True,
                   stdout=subprocess.DEVNULL)
    out = subprocess.run([str(unit / "bench" / "ftl-write"), "--pages", str(a.pages)],
                         check=True, capture_output=True, text=True).stdout
    print(out, end="")
    for line in out.splitlines():
        f = dict(kv.split("=", 1) for kv in line.split()[1:])
        print("%-10s %7.0f k host pages/s in memory, %7.0f k/s with the store (%s)" % (
            f["name"], float(f["pages_per_s"]) / 1e3, float(f["store_pages_per_s"]) / 1e3,
            f["ratio"]))


if __name__ == "__main__":
    main()
