#!/usr/bin/env python3
"""What one NAND booking costs the model: nand_op calls per second of one thread (CPU time),
closed loop at QD256 on 8 channels x 8 chips (70 % reads, 30 % programs), and after a
burst of 10^5 programs booked ahead on one channel, whose gaps the next operations search.
Each figure beside the same run with nand_sched=fifo (one free time per resource, the first
model's cost) and their ratio. No guest: the model is the whole cost, so the figures
transfer to any use of the model (QEMU device or simulator) on this CPU.

Builds bench/nand-booking.c in the unit tests' build (BUILD/unit, as `make unit` does).

Usage: bench/nand-booking.py [--short] [--ops N] [--qd Q] [--build DIR]
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=2000000, help="operations (default 2000000)")
    ap.add_argument("--qd", type=int, default=256, help="operations in flight (default 256)")
    ap.add_argument("--short", action="store_true", help="500000 operations")
    ap.add_argument("--build", default=os.environ.get("FEMU_BUILD", str(ROOT / "build")),
                    help="the build directory (default build/)")
    a = ap.parse_args()
    if a.short:
        a.ops = 500000
    if a.ops < 1 or not 1 <= a.qd <= 65536:
        sys.exit("--ops must be at least 1 and --qd 1..65536")
    subprocess.run(["bash", str(ROOT / "qemu" / "setup-unit-build.sh"), a.build], check=True)
    unit = Path(a.build) / "unit"
    subprocess.run(["ninja", "-C", str(unit), "bench/nand-booking"], check=True,
                   stdout=subprocess.DEVNULL)
    out = subprocess.run([str(unit / "bench" / "nand-booking"), "--ops", str(a.ops),
                          "--qd", str(a.qd)], check=True, capture_output=True, text=True).stdout
    print(out, end="")
    for line in out.splitlines():
        f = dict(kv.split("=", 1) for kv in line.split()[1:])
        print("%-12s %5.2f M bookings/s (fifo %5.2f M/s, ratio %s), at most %s intervals "
              "kept per resource%s" % (
                  f["name"], float(f["ops_per_s"]) / 1e6, float(f["fifo_ops_per_s"]) / 1e6,
                  f["ratio_to_fifo"], f["max_intervals"],
                  ", %s right after the burst" % f["burst_intervals"]
                  if "burst_intervals" in f else ""))


if __name__ == "__main__":
    main()
