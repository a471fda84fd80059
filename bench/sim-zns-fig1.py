#!/usr/bin/env python3
"""The ZNS paper's Figure 1 at a realistic size, in femu-sim's virtual time.

Bjørling et al. (ZNS, USENIX ATC '21), Figure 1: write throughput while the usable
capacity is overwritten four times, a ZNS SSD against block SSDs of 7 % and 28 % OP on
the same flash. Here three drives share one TLC geometry and its latencies (dc-tlc's:
tR 77 us, tPROG 170 us, tBERS 3.5 ms, 2 planes, 256 pages per block; the full form uses
the preset's 16 ch x 8 chips, --short 8 GiB on 4 ch x 2 chips so a small drive still has lines
enough for GC to behave as on a large one):
- ZNS (femu_mode=3, 1 GiB zones full-size, 128 MiB short): one job writes the zones in
  order, 5 capacities (fio's zoned mode resets each full zone before rewriting it);
- blackbox 7 % and 28 % OP (femu_mode=1): a sequential 128 KiB fill, then 4 KiB uniform
  random overwrites by 4 jobs of QD 32 (the paper's multi-threaded random writes), 4
  capacities.
Each capacity is cut into --windows windows (stonewalled jobs): MB/s per window of host
data written, and WAF per window from the device's page counters.

What transfers: the shape (ZNS flat at the flash's write bandwidth, the block drives
dropping once GC starts, 28 % OP above 7 %) and the steady-state WAF of greedy GC; not
the paper's absolute MB/s (their drives' controllers and FTLs are not FEMU's).

Usage: bench/sim-zns-fig1.py [--short] [--size-gib 256] [--windows 4]
"""

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import simlib  # noqa: E402

CITATION = ("M. Bjørling, A. Aghayev, H. Holmberg, A. Ramesh, D. Le Moal, G. R. Ganger, "
            "G. Amvrosiadis: ZNS: Avoiding the Block Interface Tax for Flash-based SSDs, "
            "USENIX ATC 2021, Figure 1")
PUBLISHED = ("Figure 1 is a plot without numbers in the text: the ZNS SSD's throughput "
             "stays flat over the 4 capacity writes; the 7 % OP block SSD's falls to a "
             "fraction of it once GC starts (after about one capacity); the 28 % OP drive "
             "falls less and settles higher. The paper cites this as GC's cost of "
             "throughput and capacity (OP) on block-interface SSDs.")
LAT = dict(rd=77000, wr=170000, er=3500000)
CAPS = 4


def flash(a):
    return dict(nch=a.nchs, lun=a.luns, pl=2, pgs=256)


def bb_dev(a, op):
    f = flash(a)
    return dict(femu_mode=1, devsz_mb=a.size_gib * 1024, flash_preset="dc-tlc",
                nchs=f["nch"], luns_per_ch=f["lun"], pls_per_lun=f["pl"],
                pgs_per_blk=f["pgs"], op_pcent=op)


def zns_dev(a):
    f = flash(a)
    return dict(femu_mode=3, devsz_mb=a.size_gib * 1024, zns_zone_size_mb=a.zone_mb,
                zns_num_ch=f["nch"], zns_num_lun=f["lun"], zns_num_plane=f["pl"],
                pgs_per_blk=f["pgs"], zns_flash_type=3, zns_pg_rd_lat=LAT["rd"],
                zns_pg_wr_lat=LAT["wr"], zns_blk_er_lat=LAT["er"], ch_mts=800,
                pcie_gen=3, pcie_lanes=8, fw_cores=8, fw_cmd_ns=7400)


def seq_windows(a, n, extra):
    """n capacities written in order, --windows jobs per capacity (offset/size slices)."""
    jobs, w = [], a.windows
    for c in range(n):
        for i in range(w):
            o = dict(stonewall=None, rw="write", bs="128k", iodepth=32,
                     offset="%g%%" % (100.0 * i / w), size="%g%%" % (100.0 / w), **extra)
            jobs.append(("w%d" % (c * w + i), o))
    return jobs


def bb_jobs(a):
    jobs = seq_windows(a, 1, {})
    per = a.size_gib * 1024 // (a.windows * 4)      # MiB per clone per window
    for k in range(a.windows, a.windows * (CAPS + 1)):
        jobs.append(("w%d" % k, dict(stonewall=None, rw="randwrite", bs="4k", iodepth=32,
                                     numjobs=4, norandommap=None, size="100%",
                                     io_size="%dm" % per)))
    return jobs


def run_drive(a, name):
    if name == "ZNS":
        dev = zns_dev(a)
        jobs = seq_windows(a, CAPS + 1, dict(zonemode="zbd", max_open_zones=1))
    else:
        dev, jobs = bb_dev(a, int(name.split()[1].rstrip("%"))), bb_jobs(a)
    res, wall = simlib.run(dev, jobs)
    return name, dev, res, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="8 GiB drives, 4 ch x 2 chips")
    ap.add_argument("--size-gib", type=int, help="usable capacity (default 256; short 8)")
    ap.add_argument("--windows", type=int, default=4, help="windows per capacity")
    a = ap.parse_args()
    a.size_gib = a.size_gib or (8 if a.short else 256)
    # short: fewer chips, so a small drive has as many GC lines (blocks per plane)
    a.nchs, a.luns = (4, 2) if a.short else (16, 8)
    a.zone_mb = 128 if a.short else 1024
    drives = ["ZNS", "BB 7%", "BB 28%"]
    print(f"{CITATION}\n{a.size_gib} GiB per drive, {a.nchs} ch x {a.luns} chips x 2 "
          f"planes TLC; {CAPS} capacities overwritten (+ the fill)")
    with ThreadPoolExecutor(2) as ex:
        runs = list(ex.map(lambda n: run_drive(a, n), drives))
    out = dict(citation=CITATION, published=PUBLISHED, size_gib=a.size_gib,
               windows_per_capacity=a.windows, drives={})
    print("\n%-7s %6s %9s %9s %8s %7s %9s %7s" % ("drive", "cap", "MB/s", "WAF(win)",
                                                   "WAF", "wall s", "NAND op/s", "GC"))
    plt = bblib.pyplot()
    if plt:
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for name, dev, res, wall in runs:
        wins = simlib.windows(res, "w")
        prev, rows = {}, []
        for w in wins:
            cap = (w["k"] + 1) / a.windows
            rows.append(dict(capacity=cap, mbps=w["mbps"],
                             waf_window=simlib.waf_between(prev, w["stats"]),
                             waf=simlib.waf(w["stats"]),
                             t_s=w["t1_ns"] / 1e9))
            prev = w["stats"]
        ops = simlib.nand_ops(res["stats"])
        for r in rows:
            if r["capacity"] == int(r["capacity"]):
                print("%-7s %6.2f %9.0f %9.2f %8.2f %7s %9s %7s" % (
                    name, r["capacity"], r["mbps"], r["waf_window"], r["waf"], "", "", ""))
        print("%-7s %6s %9.0f %9s %8.2f %7.1f %9.2fM %7d" % (
            name, "all", sum(w["bytes"] for w in wins) / res["end_ns"] * 1e3, "",
            simlib.waf(res["stats"]), wall, ops / wall / 1e6,
            res["stats"].get("gc_pages_moved", 0)))
        if name == "ZNS":
            print("        (zone resets: %d blocks erased)" % res["stats"]["blocks_erased"])
        out["drives"][name] = dict(dev=dev, windows=rows, wall_s=wall, nand_ops=ops,
                                   nand_ops_per_s=ops / wall, end_ns=res["end_ns"],
                                   stats=res["stats"])
        if plt:
            x = [r["capacity"] for r in rows]
            ax1.step(x, [r["mbps"] for r in rows], where="pre", label=name)
            ax2.step(x, [r["waf_window"] for r in rows], where="pre", label=name)
    for op in (7, 28):
        alpha = 1 + op / 100    # op_pcent: (raw - exposed) / exposed
        print(f"greedy GC's analytic WAF at {op} % OP: {bblib.greedy_waf(alpha):.2f} "
              f"({bblib.WAF_MODEL})")
    if a.size_gib < 256:
        # 2 drives at once: the one with the most NAND ops sets the time
        est = max(d["nand_ops"] for d in out["drives"].values()) * 256 / a.size_gib / \
            simlib.FULL_OPS_PER_S
        print(f"full form (256 GiB) estimated: {est / 60:.0f} min (this run's NAND ops x "
              f"{256 / a.size_gib:g} at {simlib.FULL_OPS_PER_S / 1e6:g} M ops/s; its larger "
              f"drives have more GC lines and a lower WAF)")
    print(f"\npublished: {PUBLISHED}")
    if plt:
        ax1.set_ylabel("write MB/s (per window)")
        ax1.set_title(f"ZNS Figure 1 in femu-sim: {a.size_gib} GiB, TLC")
        ax2.set_ylabel("WAF (per window)")
        ax2.set_xlabel("capacities written")
        ax1.legend()
        ax2.legend()
        out["plot"] = str(bblib.save_plot(fig, "sim-zns-fig1"))
    print("json:", bblib.save_json("sim-zns-fig1", out))


if __name__ == "__main__":
    main()
