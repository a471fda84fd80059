#!/usr/bin/env python3
"""Sequential read-ahead (sra=on) against none, over queue depth, unscaled, in femu-sim.

The read-ahead paper's experiment (bench/sra-readahead.py runs it in the emulator, under
TCG with every media time x100): sequential reads of data written before, 4 KiB, 128 KiB
and 512 KiB at QD 1, 2, 4, 8, 16, 32, on a zoned drive without read-ahead and with it.
Here femu-sim runs the same model code in virtual time with time_scale=1, so the figures
are the drive's own, with nothing added by a guest.

The drive: zoned, --nchs x --luns chips, --drive-gb GiB in 16 MiB zones, the flash
calibrated as in sra-readahead.py on the published drive (a 4 KiB miss 58 us: 53 us array
read and 5 us transfer at 800 MT/s; a read-ahead hit sra_hit_ns = 14.9 us). Each (block
size, QD, sra) is its own run: --data-mb written sequentially (128 KiB, QD8), then read
once sequentially from the start. Per run: MB/s, mean and p99 completion latency, and
for sra=on the hit ratio (sra_hits / (sra_hits + sra_misses)) and pages prefetched and
wasted (the sra_* statistics, over the read).

Published (Vohra and Srividya, IJISRT 2020, as cited in sra-readahead.py): 4 KiB
sequential read at QD1 70 -> 275 MB/s (x3.9); the gain fades as the queue deepens.
What transfers: the ratios and latencies for a flash whose QD1 miss and hit cost 58 and
14.9 us; the MB/s at QD > 1 depend on the chip count (--nchs x --luns).

Usage: bench/sim-sra-qd.py [--short] [--qds 1,2,4,8,16,32] [--blocks 4k,128k,512k]
       [--data-mb 1024] [--drive-gb 64] [--nchs 8] [--luns 8]
Short: --data-mb 128 (about 2 s); full: 1 GiB written and read per run (about 5 s).
"""

import argparse
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bblib  # noqa: E402
import simlib  # noqa: E402


def _published():
    spec = importlib.util.spec_from_file_location("sra_readahead", HERE / "sra-readahead.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.CITATION, m.PAPER_OFF, m.PAPER_ON


CITATION, PAPER_OFF, PAPER_ON = _published()
SIZES = dict(k=1024, m=1 << 20)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qds", default="1,2,4,8,16,32")
    ap.add_argument("--blocks", default="4k,128k,512k")
    ap.add_argument("--data-mb", type=int, default=1024, help="MiB written, then read")
    ap.add_argument("--drive-gb", type=int, default=64)
    ap.add_argument("--nchs", type=int, default=8)
    ap.add_argument("--luns", type=int, default=8, help="chips per channel")
    ap.add_argument("--rd-lat", type=int, default=53000, help="array read, ns (SLC)")
    ap.add_argument("--wr-lat", type=int, default=100000, help="program, ns")
    ap.add_argument("--hit-ns", type=int, default=14900, help="sra_hit_ns")
    ap.add_argument("--short", action="store_true", help="128 MiB per run")
    a = ap.parse_args()
    a.qds = [int(x) for x in a.qds.split(",")]
    a.blocks = a.blocks.split(",")
    if a.short:
        a.data_mb = 128
    return a


def device(a, sra):
    d = dict(femu_mode=3, devsz_mb=a.drive_gb * 1024, zns_zone_size_mb=16,
             zns_num_ch=a.nchs, zns_num_lun=a.luns, zns_flash_type=1, pgs_per_blk=64,
             zns_pg_rd_lat=a.rd_lat, zns_pg_wr_lat=a.wr_lat, zns_blk_er_lat=1000000,
             ch_mts=800, time_scale=1, sra=sra)
    if sra:
        d["sra_hit_ns"] = a.hit_ns
    return d


def one(a, bs, qd, sra):
    jobs = [("fill", dict(rw="write", bs="128k", iodepth=8, size=f"{a.data_mb}m")),
            ("read", dict(stonewall=None, rw="read", bs=bs, iodepth=qd,
                          size=f"{a.data_mb}m"))]
    res, wall = simlib.run(device(a, sra), jobs)
    fill, rd = simlib.job(res, "fill"), simlib.job(res, "read")
    s0, s1 = fill["stats"], rd["stats"]

    def d(name):
        return s1.get(name, 0) - s0.get(name, 0)

    r = rd["read"]
    hits, misses = d("sra_hits"), d("sra_misses")
    return dict(mbps=r["bw_bytes"] / 1e6, lat_us=r["clat_ns"]["mean"] / 1e3,
                p99_us=r["clat_ns"]["percentile"]["99.000000"] / 1e3,
                dev_read_us=d("media_read_ns") / max(1, d("media_reads")) / 1e3,
                hit_ratio=hits / (hits + misses) if hits + misses else 0.0,
                prefetched=d("sra_prefetched_pages"), wasted=d("sra_wasted_pages"),
                wall_s=wall)


def main():
    a = parse_args()
    t0 = time.monotonic()
    rows = []
    bblib.log(f"{len(a.blocks) * len(a.qds) * 2} femu-sim runs, {a.data_mb} MiB each ...")
    for bs in a.blocks:
        for qd in a.qds:
            off, on = one(a, bs, qd, False), one(a, bs, qd, True)
            rows.append(dict(bs=bs, qd=qd, off=off, on=on, ratio=on["mbps"] / off["mbps"]))
    print(f"\nsequential read, zoned {a.nchs}x{a.luns} chips, {a.drive_gb} GiB, "
          f"{a.data_mb} MiB read per run, unscaled (time_scale=1)")
    print(f"{'bs':>5} {'QD':>3} | {'MB/s off':>9} {'MB/s on':>9} {'x':>5} | "
          f"{'lat us off':>10} {'lat us on':>9} {'p99 on':>7} | {'hits':>5} "
          f"{'prefetched':>10} {'wasted':>6}")
    for r in rows:
        o, n = r["off"], r["on"]
        print(f"{r['bs']:>5} {r['qd']:>3} | {o['mbps']:9.1f} {n['mbps']:9.1f} "
              f"{r['ratio']:5.2f} | {o['lat_us']:10.1f} {n['lat_us']:9.1f} "
              f"{n['p99_us']:7.1f} | {100 * n['hit_ratio']:4.0f}% {n['prefetched']:10d} "
              f"{n['wasted']:6d}")
    q1 = next((r for r in rows if r["bs"] == "4k" and r["qd"] == 1), None)
    print(f"\npublished ({CITATION}): 4 KiB sequential read QD1 {PAPER_OFF:.0f} -> "
          f"{PAPER_ON:.0f} MB/s = x{PAPER_ON / PAPER_OFF:.2f}; the gain fades with QD.")
    if q1:
        print(f"femu-sim: 4 KiB QD1 {q1['off']['mbps']:.0f} -> {q1['on']['mbps']:.0f} MB/s "
              f"= x{q1['ratio']:.2f} (hit ratio {100 * q1['on']['hit_ratio']:.1f} %)")
    print("'hits': share of the read's pages served by read-ahead; 'wasted': prefetched "
          "pages torn down unread. Read-ahead stops above sra_max_qd (8) and for reads "
          "above sra_max_read_kb (64).")
    wall = time.monotonic() - t0
    print(f"wall time: {wall:.1f} s")
    plot(a, rows)
    print("results: " + str(bblib.save_json("sim-sra-qd", dict(
        args=vars(a), rows=rows, wall_s=wall, citation=CITATION,
        paper=dict(off_mbps=PAPER_OFF, on_mbps=PAPER_ON)))))


def plot(a, rows):
    plt = bblib.pyplot()
    if not plt:
        return
    fig, axes = plt.subplots(1, len(a.blocks), figsize=(4.5 * len(a.blocks), 4))
    axes = axes if len(a.blocks) > 1 else [axes]
    for ax, bs in zip(axes, a.blocks):
        rs = [r for r in rows if r["bs"] == bs]
        ax.plot([r["qd"] for r in rs], [r["off"]["mbps"] for r in rs], "o-", label="sra=off")
        ax.plot([r["qd"] for r in rs], [r["on"]["mbps"] for r in rs], "s-", label="sra=on")
        if bs == "4k":
            ax.plot([1], [PAPER_OFF], "kx", ms=9, mew=2, label="paper off")
            ax.plot([1], [PAPER_ON], "r+", ms=11, mew=2, label="paper on")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("queue depth")
        ax.set_ylabel("MB/s")
        ax.set_title(f"sequential read {bs}")
        ax.legend(fontsize=8)
    bblib.save_plot(fig, "sim-sra-qd")


if __name__ == "__main__":
    main()
