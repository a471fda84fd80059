#!/usr/bin/env python3
"""GC collapse over time on a realistic blackbox drive, in femu-sim's virtual time.

Western Digital's zoned-storage talks (the ZNS case: SDC, FMS, Storage Field Day 2019-20)
show a conventional SSD's random-write throughput falling off a cliff once the drive has
used its free blocks and GC starts, then settling far below the fresh-drive figure, with
latency tails growing. We found no published number for that curve, so the comparison is
qualitative.

The experiment: a TLC drive (dc-tlc's flash and controller; --short: 4 ch x 2 chips)
with --op OP (7 %), written sequentially to --util (90 %) of its LBA range, then 4 KiB
uniform random overwrites of that range by 4 jobs of QD 32, --caps times over, cut into
--windows windows per region-capacity (stonewalled jobs). Per window: IOPS, latency
percentiles (p50, p99, p99.9: the worst of the 4 jobs), and the windowed WAF from the
differences of host_pages_written and nand_pages_written. The steady-state WAF is set
beside greedy GC's analytic one at the same spare factor (bblib.WAF_MODEL).

What transfers: the cliff's position (free space over the write rate), the steady-state
WAF and the IOPS ratio fresh/steady, which follow from the FTL's greedy GC and the flash
timings; not a real drive's firmware tricks (background GC in idle time, SLC caching).

The full form took 10.6 min here (256 GiB, 752 M NAND ops, 1.18 M ops/s).

Usage: bench/sim-gc-collapse.py [--short] [--size-gib 256] [--op 7] [--util 90] [--caps 2]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import simlib  # noqa: E402

REFERENCE = ("Western Digital, zoned storage / ZNS talks (e.g. SDC 2019-2020, Storage Field "
             "Day 19, 2020): qualitative curve of a block SSD's throughput collapsing when "
             "GC starts; no published numbers found, so the comparison is qualitative")
PCTS = ("50.000000", "99.000000", "99.900000")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="32 GiB drive, 4 ch x 2 chips")
    ap.add_argument("--size-gib", type=int, help="usable capacity (default 256; short 32)")
    ap.add_argument("--op", type=int, default=7, help="op_pcent")
    ap.add_argument("--util", type=int, default=90, help="%% of the LBA range written")
    ap.add_argument("--caps", type=float, default=2, help="region capacities overwritten")
    ap.add_argument("--windows", type=int, default=16, help="windows per region-capacity")
    a = ap.parse_args()
    size = a.size_gib or (32 if a.short else 256)
    nchs, luns = (4, 2) if a.short else (16, 8)
    dev = dict(femu_mode=1, devsz_mb=size * 1024, flash_preset="dc-tlc", nchs=nchs,
               luns_per_ch=luns, pls_per_lun=2, pgs_per_blk=256, op_pcent=a.op)
    region_mb = size * 1024 * a.util // 100
    nwin = int(round(a.caps * a.windows))
    per = max(1, region_mb // (a.windows * 4))       # MiB per job per window
    jobs = [("fill", dict(rw="write", bs="128k", iodepth=32, size="%d%%" % a.util))]
    for k in range(nwin):
        jobs.append(("w%d" % k, dict(stonewall=None, rw="randwrite", bs="4k", iodepth=32,
                                     numjobs=4, norandommap=None, size="%d%%" % a.util,
                                     io_size="%dm" % per)))
    print(f"{size} GiB blackbox, {nchs} ch x {luns} chips x 2 planes TLC, {a.op} % OP, "
          f"{a.util} % written, then 4 KiB random writes x {a.caps:g}")
    res, wall = simlib.run(dev, jobs)
    fill = simlib.job(res, "fill")
    wins = simlib.windows(res, "w")
    rows, prev = [], fill["stats"]
    print("\n%6s %8s %9s %9s %10s %10s %7s" % ("caps", "t s", "kIOPS", "p50 us", "p99 us",
                                                "p99.9 us", "WAF"))
    for w in wins:
        lat = [w["lat_pct"].get(p, 0) / 1e3 for p in PCTS]
        r = dict(caps=(w["k"] + 1) / a.windows, t_s=w["t1_ns"] / 1e9, kiops=w["iops"] / 1e3,
                 p50_us=lat[0], p99_us=lat[1], p999_us=lat[2],
                 waf=simlib.waf_between(prev, w["stats"]))
        prev = w["stats"]
        rows.append(r)
        print("%6.3f %8.2f %9.1f %9.0f %10.0f %10.0f %7.2f" % (
            r["caps"], r["t_s"], r["kiops"], r["p50_us"], r["p99_us"], r["p999_us"], r["waf"]))
    st = res["stats"]
    ops = simlib.nand_ops(st)
    # spare factor against the data kept: raw / (util x exposed)
    alpha = (1 + a.op / 100) / (a.util / 100)
    steady = rows[-max(1, a.windows // 2):]
    s_waf = sum(r["waf"] for r in steady) / len(steady)
    s_iops = sum(r["kiops"] for r in steady) / len(steady)
    print(f"\nfresh (first window) {rows[0]['kiops']:.1f} kIOPS -> steady {s_iops:.1f} kIOPS "
          f"({rows[0]['kiops'] / s_iops:.1f}x); steady WAF {s_waf:.2f}, greedy GC's "
          f"analytic {bblib.greedy_waf(alpha):.2f} at raw/data {alpha:.3f} ({bblib.WAF_MODEL})")
    print(f"femu-sim: {wall:.1f} s wall, {ops / 1e6:.1f} M NAND ops ({ops / wall / 1e6:.2f} "
          f"M/s), {res['end_ns'] / 1e9:.1f} s virtual; lines {st.get('total_lines')}")
    if size < 256:
        est = ops * 256 / size / simlib.FULL_OPS_PER_S
        print(f"full form (256 GiB) estimated: {est / 60:.0f} min (this run's NAND ops x "
              f"{256 / size:g} at {simlib.FULL_OPS_PER_S / 1e6:g} M ops/s)")
    print(f"reference: {REFERENCE}")
    out = dict(reference=REFERENCE, dev=dev, util_pcent=a.util, windows=rows,
               fill_mbps=fill["write"]["bw_bytes"] / 1e6, steady_waf=s_waf,
               steady_kiops=s_iops, model_waf=bblib.greedy_waf(alpha), alpha=alpha,
               wall_s=wall, nand_ops=ops, end_ns=res["end_ns"], stats=st)
    plt = bblib.pyplot()
    if plt:
        fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
        t = [r["t_s"] for r in rows]
        ax1.step(t, [r["kiops"] for r in rows], where="pre")
        ax1.set_ylabel("kIOPS (4 KiB random write)")
        ax1.set_title(f"GC collapse in femu-sim: {size} GiB, {a.op} % OP, {a.util} % full")
        for key, lab in (("p50_us", "p50"), ("p99_us", "p99"), ("p999_us", "p99.9")):
            ax2.step(t, [r[key] for r in rows], where="pre", label=lab)
        ax2.set_yscale("log")
        ax2.set_ylabel("latency (us)")
        ax2.legend()
        ax3.step(t, [r["waf"] for r in rows], where="pre", label="windowed WAF")
        ax3.axhline(bblib.greedy_waf(alpha), ls="--", color="gray", label="greedy model")
        ax3.set_ylabel("WAF")
        ax3.set_xlabel("virtual time (s)")
        ax3.legend()
        out["plot"] = str(bblib.save_plot(fig, "sim-gc-collapse"))
    print("json:", bblib.save_json("sim-gc-collapse", out))


if __name__ == "__main__":
    main()
