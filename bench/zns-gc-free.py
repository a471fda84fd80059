#!/usr/bin/env python3
"""Zoned drives need no GC: write throughput over several capacities, zoned vs blackbox.

The experiment of Bjørling et al.'s Figure 1 (ZNS, USENIX ATC '21) on one guest with four
drives; the three model drives share one flash geometry, latencies and time_scale, so the
model and not TCG is the bottleneck:
- zoned: one fio job writes the drive zone after zone (fio zoned mode, one open zone),
  1 + --passes times over; from the second capacity on every zone is full when fio gets
  to it, and fio resets it (Zone Reset: the erase) inside the job's time;
- blackbox, 7% OP, random: sequential fill, then 4 KiB uniform random overwrites of
  --passes capacities: throughput falls once GC copies valid pages;
- blackbox, 7% OP, sequential (the control): 1 + --passes sequential passes; GC finds
  whole lines invalid and only erases (WAF 1), so it pays what the zoned drive pays;
- nossd: the guest's own ceiling for 4 KiB writes at that queue depth.

Every drive writes without a pause (an idle drive would collect garbage in the
background). Throughput per drive write (k-th capacity) comes from fio's bandwidth log,
WAF from the device counters (QMP). Prints zoned/blackbox ratios with the zone resets
inside the zoned drive's time, their spread over quarter-capacity windows, WAF, lateness,
and plots the curves to bench/results/zns-gc-free-*.png.

Usage: bench/zns-gc-free.py [--short] [--size 32] [--time-scale 2] [--passes 3] ...
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

PAGE = 4096
CITATION = ("M. Bjørling, A. Aghayev, H. Holmberg, A. Ramesh, D. Le Moal, G. R. Ganger, "
            "G. Amvrosiadis: ZNS: Avoiding the Block Interface Tax for Flash-based SSDs, "
            "USENIX ATC 2021, Figure 1")
# Figure 1 of CITATION is this experiment (a ZNS SSD at 0% OP against block SSDs of 7% and
# 28% OP, usable capacity overwritten four times), given as a plot without numbers. What is
# printed beside ours is the published analytic WAF of greedy GC (bblib.WAF_MODEL).
DRIVES = [("ZNS", "zoned"), ("BB", "blackbox random"), ("BBSEQ", "blackbox sequential")]


def devices(a):
    flash = dict(pgs_per_blk=a.pgs_per_blk, time_scale=a.time_scale)
    zns = bblib.Device("ZNS", 3, a.size, zns_zone_size_mb=a.zone_mb, zns_num_ch=a.nchs,
                       zns_num_lun=a.luns, zns_flash_type=a.flash_type,
                       zns_pg_rd_lat=a.rd_lat, zns_pg_wr_lat=a.wr_lat,
                       zns_blk_er_lat=a.er_lat, **flash)
    bb = dict(nchs=a.nchs, luns_per_ch=a.luns, flash_type=a.flash_type, pg_rd_lat=a.rd_lat,
              pg_wr_lat=a.wr_lat, blk_er_lat=a.er_lat, op_pcent=7, **flash)
    return [zns, bblib.Device("BB", 1, a.size, **bb), bblib.Device("BBSEQ", 1, a.size, **bb),
            bblib.Device("REF", 2, a.size)]


def guest_script(a):
    io = (f"--direct=1 --ioengine=io_uring --bs=4k --iodepth={a.qd} --output-format=json "
          f"--log_avg_msec={a.log_ms}")
    total = a.size * (1 + a.passes)
    return f"""
Z=$(dev_of ZNS) && B=$(dev_of BB) && S=$(dev_of BBSEQ) && N=$(dev_of REF) || exit 1
echo @@ref@@; fio --name=ref --filename=$N {io} --rw=randwrite --size={a.size}m \\
  --time_based --runtime=4 || exit 1
# a fresh zoned drive, like the fresh blackbox drives; later resets are fio's, timed
blkzone reset $Z || exit 1
echo "@@stats zns@@"
fio --name=z --filename=$Z {io} --rw=write --zonemode=zbd --max_open_zones=1 \\
  --size={a.size}m --io_size={total}m --write_bw_log=/tmp/z > /tmp/z.json || exit 1
echo "@@stats bb@@"
fio --name=fill --filename=$B {io} --rw=write --size={a.size}m \\
  --write_bw_log=/tmp/fill > /tmp/fill.json || exit 1
echo "@@stats bb-over@@"
fio --name=over --filename=$B {io} --rw=randwrite --norandommap --randrepeat=0 \\
  --size={a.size}m --io_size={a.size * a.passes}m --write_bw_log=/tmp/over \\
  > /tmp/over.json || exit 1
echo "@@stats bbseq@@"
fio --name=seq --filename=$S {io} --rw=write --size={a.size}m --io_size={total}m \\
  --write_bw_log=/tmp/seq > /tmp/seq.json || exit 1
echo "@@stats end@@"
for f in z fill over seq; do
  echo @@$f@@; cat /tmp/$f.json; echo @@$f-log@@; cat /tmp/${{f}}_bw*.log
done
echo @@end@@
"""


def job(g, name):
    """(fio write JSON, [(t since the job started, bytes so far)]) of one job."""
    w = bblib.fio_json(g.section(name))["jobs"][0]["write"]
    return w, bblib.fio_progress(bblib.fio_bw_log(g.section(f"{name}-log")), w["io_bytes"])


def windows(progress, cap, n_caps, parts=1):
    """MB/s of every 1/parts of each capacity written: [[MB/s, ...] per capacity]."""
    by_bytes = [(b, t) for t, b in progress]
    out = []
    for k in range(n_caps):
        row = []
        for i in range(parts):
            lo, hi = (k + i / parts) * cap, (k + (i + 1) / parts) * cap
            t0, t1 = bblib.interp(by_bytes, lo), bblib.interp(by_bytes, hi)
            row.append((hi - lo) / (t1 - t0) / 1e6 if t0 is not None and t1 else None)
        out.append(row)
    return out


def counter_ratio(series, x_key, y_key, lo, hi):
    """Δy/Δx between the points where the counter x_key passes lo and hi (QMP samples).
    What happens while x_key stands still at a boundary (fio resetting the next zone)
    belongs to the window after it; before the first write (lo 0) it belongs to none."""
    pts = [(s[x_key], s[y_key]) for _, s in series]
    y0, y1 = bblib.interp(pts, lo, last=lo == 0), bblib.interp(pts, hi)
    return (y1 - y0) / (hi - lo) if y0 is not None and y1 is not None else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # short blocks: more lines for the blackbox's 7% OP on a small drive (fewer lines push
    # its WAF far above a real drive's)
    bblib.add_flash_args(ap, size=32, zone_mb=1, nchs=2, luns=2, pgs_per_blk=16, time_scale=2)
    ap.add_argument("--qd", type=int, default=32)
    ap.add_argument("--passes", type=int, default=3, help="capacities overwritten after the "
                    "first write (default 3)")
    ap.add_argument("--short", action="store_true", help="one capacity overwritten (--passes 1)")
    ap.add_argument("--log-ms", type=int, default=250, help="fio bandwidth log interval")
    ap.add_argument("--sample-s", type=float, default=0.5, help="QMP sampling interval")
    a = ap.parse_args()
    if a.short:
        a.passes = 1
    if not 1 <= a.passes <= 20:
        sys.exit(f"--passes must be in 1..20 (got {a.passes})")
    if a.size % a.zone_mb:
        sys.exit(f"--size ({a.size}) must be a multiple of --zone-mb ({a.zone_mb})")

    bblib.log(f"booting: zoned + 2 blackbox {a.size} MiB, {a.nchs}x{a.luns} chips, "
              f"time_scale={a.time_scale}, + nossd reference; {1 + a.passes} capacities each")
    g = bblib.Guest(guest_script(a), devices(a), sample_s=a.sample_s, timeout=3600).run(
        lambda t, l: l.startswith("@@stats") and bblib.log(f"  {t:6.1f}s {l.strip('@ ')}"))

    cap = a.size << 20
    n = 1 + a.passes
    zj, zprog = job(g, "z")
    fj, fprog = job(g, "fill")
    oj, oprog = job(g, "over")
    sj, sprog = job(g, "seq")
    # the blackbox random drive: fill, then the overwrite job, on one time line
    t_fill = fj["runtime"] / 1e3
    bprog = fprog + [(t_fill + t, cap + b) for t, b in oprog[1:]]
    prog = {"ZNS": zprog, "BB": bprog, "BBSEQ": sprog}
    mbps = {d: [w[0] for w in windows(p, cap, n)] for d, p in prog.items()}
    quarters = {d: windows(p, cap, n, parts=4) for d, p in prog.items()}
    ref_mbps = bblib.fio_json(g.section("ref"))["jobs"][0]["write"]["bw_bytes"] / 1e6

    # device counters per drive write, by host data written (not by time)
    pages = cap // PAGE
    waf = {}
    for d in ("BB", "BBSEQ"):
        waf[d] = [counter_ratio(g.series(d), "host-pages-written", "nand-pages-written",
                                k * pages, (k + 1) * pages) for k in range(n)]
    waf["ZNS"] = [counter_ratio(g.series("ZNS"), "host-bytes-written", "pages-programmed",
                                k * cap, (k + 1) * cap) * PAGE for k in range(n)]
    _, final = g.marks["end"]
    erased = {d: final[d]["blocks-erased"] - g.marks["zns"][1][d]["blocks-erased"]
              for d in ("ZNS", "BB", "BBSEQ")}
    blocks_per_zone = a.zone_mb * 256 // a.pgs_per_blk   # 4 KiB pages

    print(f"\nGC-free zones: {a.size} MiB drives on {a.nchs} ch x {a.luns} chips, "
          f"pgs_per_blk={a.pgs_per_blk}, flash_type={a.flash_type}, rd/wr/erase "
          f"{a.rd_lat // 1000}/{a.wr_lat // 1000}/{a.er_lat // 1000} us, time_scale="
          f"{a.time_scale}; zones {a.zone_mb} MiB; blackbox 7% OP; 4 KiB writes QD{a.qd}, "
          "io_uring, direct; MB/s of each drive write (capacity), WAF from the device counters")
    print(f"{'drive write':>11} | {'zoned':>6} {'WAF':>5} | {'bb rand':>7} {'WAF':>5} | "
          f"{'bb seq':>6} {'WAF':>5} | {'zoned/rand':>10} {'zoned/seq':>9}")
    rows = []
    for k in range(n):
        z, b, s = mbps["ZNS"][k], mbps["BB"][k], mbps["BBSEQ"][k]
        what = "fill" if k == 0 else "over"
        print(f"{k + 1:>6} {what:>4} | {z:6.2f} {waf['ZNS'][k]:5.2f} | {b:7.2f} "
              f"{waf['BB'][k]:5.2f} | {s:6.2f} {waf['BBSEQ'][k]:5.2f} | {z / b:10.2f} "
              f"{z / s:9.2f}")
        rows.append(dict(drive_write=k + 1, zoned_mbps=z, bb_random_mbps=b, bb_seq_mbps=s,
                         zoned_waf=waf["ZNS"][k], bb_random_waf=waf["BB"][k],
                         bb_seq_waf=waf["BBSEQ"][k], zoned_over_random=z / b,
                         zoned_over_seq=z / s, quarters={d: quarters[d][k] for d in prog}))
    last = n - 1
    q_rand = [z / b for z, b in zip(quarters["ZNS"][last], quarters["BB"][last])]
    q_seq = [z / s for z, s in zip(quarters["ZNS"][last], quarters["BBSEQ"][last])]
    over = [r["zoned_over_random"] for r in rows[1:]]
    print(f"\nzoned/blackbox random, zone resets inside the zoned time: last drive write "
          f"{rows[last]['zoned_over_random']:.2f} (its quarters {bblib.fmt_spread(q_rand, 2)});"
          f" over drive writes 2..{n}: {bblib.fmt_spread(over, 2)}")
    print(f"zoned/blackbox sequential (control, both pay erases, no copies): last drive write "
          f"{rows[last]['zoned_over_seq']:.2f} (quarters {bblib.fmt_spread(q_seq, 2)})")
    alpha = final["BB"]["total-lines"] * a.nchs * a.luns * a.pgs_per_blk / pages
    print(f"published: {CITATION} shows this experiment as a plot (the zoned drive keeps its "
          f"write throughput, block SSDs drop once GC starts; no numbers in the text).\n"
          f"The blackbox random drive's WAF {waf['BB'][last]:.2f} against the analytic WAF of "
          f"greedy GC at its capacity (alpha {alpha:.3f}): {bblib.greedy_waf(alpha):.2f} "
          f"({bblib.WAF_MODEL}).")
    zones = a.size // a.zone_mb
    print(f"blocks erased: zoned {erased['ZNS']} (fio reset {a.passes} x {zones} full zones "
          f"of {blocks_per_zone} blocks = {a.passes * zones * blocks_per_zone}), blackbox "
          f"random {erased['BB']}, sequential {erased['BBSEQ']}")
    print(f"guest ceiling (nossd 4 KiB randwrite QD{a.qd}): {ref_mbps:.1f} MB/s = "
          f"{ref_mbps / max(max(v) for v in mbps.values()):.1f}x the fastest model figure")
    print(f"lateness p50/p99/max us: zoned {bblib.lateness(final['ZNS'])}, blackbox random "
          f"{bblib.lateness(final['BB'])}, sequential {bblib.lateness(final['BBSEQ'])}")
    print(f"the zoned drive's resets: fio drains its queue and resets each full zone "
          f"synchronously; a host that resets ahead (a file system's own GC) would hide part of "
          "them.\ntransfers to an unscaled drive: the ratios and WAF (time_scale stretches every "
          f"media time alike); MB/s x {a.time_scale} for this {a.nchs * a.luns}-chip geometry "
          "only. The ratio grows with less OP and shrinks with more.")

    path = bblib.RESULTS / f"zns-gc-free-{bblib.stamp()}.png"
    plt = bblib.pyplot()
    if plt:
        bblib.RESULTS.mkdir(parents=True, exist_ok=True)
        fig, ax = plt.subplots(figsize=(10, 5))
        labels = dict(DRIVES)
        for d, p in prog.items():
            pts = [(b1 / cap, (b1 - b0) / (t1 - t0) / 1e6)
                   for (t0, b0), (t1, b1) in zip(p, p[1:]) if t1 > t0]
            ax.plot([x for x, _ in pts], [v for _, v in pts], label=labels[d])
        for k in range(1, n):
            ax.axvline(k, color="grey", ls=":", lw=1)
        ax.set_xlabel("drive capacities written")
        ax.set_ylabel(f"write MB/s (fio, {a.log_ms} ms windows)")
        ax.set_title(f"{a.size} MiB, {a.nchs}x{a.luns} chips, time_scale={a.time_scale}, "
                     f"4 KiB QD{a.qd}; zoned resets inside its time", fontsize=10)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        print(f"plot: {path}")
    print("results: " + str(bblib.save_json("zns-gc-free", dict(
        args=vars(a), rows=rows, last_quarter_ratios=dict(random=q_rand, seq=q_seq),
        blocks_erased=erased, ref_mbps=ref_mbps, waf_model=bblib.WAF_MODEL, citation=CITATION,
        zoned_fio=dict(runtime_ms=zj["runtime"], io_bytes=zj["io_bytes"]),
        bb_seq_fio=dict(runtime_ms=sj["runtime"], io_bytes=sj["io_bytes"]),
        bb_over_fio=dict(runtime_ms=oj["runtime"], io_bytes=oj["io_bytes"]),
        final_stats={d: final[d] for d in ("ZNS", "BB", "BBSEQ")}), guest=g)))


if __name__ == "__main__":
    main()
