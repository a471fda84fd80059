#!/usr/bin/env python3
"""The blackbox DRAM write buffer (wb_size_mb) in femu-sim: what it changes, each figure
beside the same drive without a buffer, measured in the same run.

On a filled drive of the default geometry (--size-gib, 7 % OP, paced GC, GC in its own
line):
- QD1 4 KiB random writes in bursts of 4 MiB with 50 ms of idle time between them (a
  desktop's writes): mean latency, with and without the buffer;
- a 256 MiB burst at QD32 after a second of idle time: its elapsed time, for buffers
  smaller and larger than it (the idle drive keeps wb_low_pct % of its buffer held);
- sustained 4 KiB random writes at QD32 (the flash sets the pace): IOPS and p99.9
  latency; the buffer cannot raise a saturated flash's throughput;
- hot overwrites (Zipf 1.2 over the LBAs): the share of writes the buffer absorbs and
  the WAF it saves.
--plp adds wb_plp=on (same timing; only power losses differ).

What transfers: the ratios (burst absorption, absorbed share, WAF saved); absolute
latencies follow the default geometry's flash.

Usage: bench/write-buffer.py [--short] [--size-gib 4] [--wb-mb 64] [--plp]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import simlib  # noqa: E402

FILL = ("fill", dict(rw="write", bs="128k", iodepth=32, size="100%"))


def drive(size_gib, wb_mb, plp):
    dev = dict(femu_mode=1, devsz_mb=size_gib * 1024, op_pcent=7,
               gc_pacing="proportional", streams="host-gc")
    if wb_mb:
        dev.update(wb_size_mb=wb_mb, wb_plp="on" if plp else "off")
    return dev


def bursts(size_gib, wb_mb, plp):
    """QD1 writes in 4 MiB bursts, 50 ms apart."""
    job = dict(stonewall=None, rw="randwrite", bs="4k", iodepth=1, io_size="64m",
               thinktime="50000", thinktime_blocks=1024)
    res, _ = simlib.run(drive(size_gib, wb_mb, plp), [FILL, ("bursts", job)])
    return simlib.job(res, "bursts")["write"]["clat_ns"]["mean"] / 1e3


def one_burst(size_gib, wb_mb, plp):
    # after a second of idle time, in which the buffer writes out down to its low mark
    job = dict(stonewall=None, rw="randwrite", bs="4k", iodepth=32, io_size="256m",
               startdelay="1")
    res, _ = simlib.run(drive(size_gib, wb_mb, plp), [FILL, ("burst", job)])
    return simlib.job(res, "burst")["elapsed_ns"] / 1e6


def sustained(size_gib, wb_mb, plp):
    rand = dict(stonewall=None, rw="randwrite", bs="4k", iodepth=32, norandommap=None)
    jobs = [FILL, ("warm", dict(io_size="%dm" % (size_gib * 1024), **rand)),
            ("steady", dict(io_size="%dm" % (size_gib * 1024), **rand))]
    res, _ = simlib.run(drive(size_gib, wb_mb, plp), jobs)
    s = simlib.job(res, "steady")
    return s["write"]["iops"] / 1e3, s["write"]["clat_ns"]["percentile"]["99.900000"] / 1e3


def hot(size_gib, wb_mb, plp):
    """Zipf 1.2 random writes: WAF, and the share of writes absorbed."""
    jobs = [FILL, ("hot", dict(stonewall=None, rw="randwrite", bs="4k", iodepth=32,
                               io_size="%dm" % (size_gib * 1024),
                               random_distribution="zipf:1.2"))]
    res, _ = simlib.run(drive(size_gib, wb_mb, plp), jobs)
    f, h = simlib.job(res, "fill")["stats"], simlib.job(res, "hot")["stats"]
    if not wb_mb:
        return simlib.waf_between(f, h), 0
    # the drive's WAF: NAND pages over the host's, not over what the buffer handed on
    absorbed = h["wb_absorbed_units"] - f["wb_absorbed_units"]
    units = h["wb_write_units"] - f["wb_write_units"]
    return simlib.nand_pages(h) - simlib.nand_pages(f), absorbed / units if units else 0, \
        units


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="1 GiB drives")
    ap.add_argument("--size-gib", type=int, help="exposed capacity (default 4; short 1)")
    ap.add_argument("--wb-mb", type=int, default=64)
    ap.add_argument("--plp", action="store_true")
    a = ap.parse_args()
    g, wb, plp = a.size_gib or (1 if a.short else 4), a.wb_mb, a.plp
    print("blackbox %d GiB, default geometry, 7 %% OP; buffer %d MiB%s; femu-sim"
          % (g, wb, " with PLP" if plp else ""))
    b0, b1 = bursts(g, 0, plp), bursts(g, wb, plp)
    print("QD1 writes in 4 MiB bursts: mean latency %.0f us without, %.1f us with (%.0fx)"
          % (b0, b1, b0 / b1 if b1 else 0))
    base = one_burst(g, 0, plp)
    for mb in (wb // 4, wb, 4 * wb, 512):
        t = one_burst(g, mb, plp)
        print("256 MiB burst at QD32, %4d MiB buffer: %6.0f ms (%.2f of no buffer's %.0f ms)"
              % (mb, t, t / base, base))
    (i0, p0), (i1, p1) = sustained(g, 0, plp), sustained(g, wb, plp)
    print("sustained random writes: %.1f kIOPS without, %.1f with (%.2f); p99.9 %.0f us, "
          "%.0f us" % (i0, i1, i1 / i0 if i0 else 0, p0, p1))
    w0, _ = hot(g, 0, plp)
    nand, share, units = hot(g, wb, plp)
    w1 = nand / units
    print("hot overwrites (Zipf 1.2): WAF %.2f without, %.2f with; %.0f %% of "
          "the writes absorbed by the buffer" % (w0, w1, 100 * share))


if __name__ == "__main__":
    main()
