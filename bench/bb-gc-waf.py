#!/usr/bin/env python3
"""Blackbox GC: throughput and write amplification when garbage collection starts.

The FEMU talk's experiment: fill the drive sequentially, then overwrite it randomly with
4 KiB direct writes (uniform random offsets, --passes times its capacity) and watch the
write throughput fall once GC runs. One guest per case; the same guest also holds a nossd
drive, on which fio first measures what the guest itself can issue (the model must be far
below that, or the figures describe TCG rather than the SSD).

Prints, per case: throughput before GC (the sequential fill: 4 KiB writes at the same queue
depth; without GC every write costs one page program whatever its LBA), steady-state
throughput under GC (the last half of the overwrite), the drop, WAF (device counters over
QMP), and the device's completion lateness. Plots throughput and WAF over time to
bench/results/bb-gc-waf-*.png.

A case is OP or OP/HIGH: op_pcent and, optionally, gc_thres_pcent_high (device default 95).

Usage: bench/bb-gc-waf.py [--short] [--cases 7,28,7/95] [--size MiB] [--qd N] ...
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

PUBLISHED = {7: (75, 3.5), 28: (50, 2.1)}   # drop %, WAF of the talk's drive ("slightly above 2")
PAGE = 4096


def guest_script(a):
    common = (f"--direct=1 --ioengine=io_uring --bs=4k --iodepth={a.qd} "
              "--output-format=json")
    over_mib = int(a.size * a.passes)
    return f"""
B=$(dev_of BB) && N=$(dev_of REF) || exit 1
fio --name=ref --filename=$N {common} --rw=randwrite --size={a.size}m --time_based \\
    --runtime={a.ref_runtime} > /tmp/ref.json || exit 1
echo "@@stats fill-start@@"
fio --name=fill --filename=$B {common} --rw=write --size={a.size}m \\
    --write_bw_log=/tmp/fill --log_avg_msec={a.log_ms} > /tmp/fill.json || exit 1
echo "@@stats fill-end@@"
fio --name=over --filename=$B {common} --rw=randwrite --norandommap --randrepeat=0 \\
    --size={a.size}m --io_size={over_mib}m \\
    --write_bw_log=/tmp/over --log_avg_msec={a.log_ms} > /tmp/over.json || exit 1
echo "@@stats over-end@@"
echo @@vendor-log@@; vendor_log $B
for f in ref fill over; do echo @@$f@@; cat /tmp/$f.json; done
echo @@fill-log@@; cat /tmp/fill_bw*.log
echo @@over-log@@; cat /tmp/over_bw*.log
echo @@end@@
"""


def parse_case(text):
    op, _, high = text.partition("/")
    return int(op), (int(high) if high else None)


def mbps(job):
    return job["write"]["bw_bytes"] / 1e6


def window(samples, t0, t1):
    """First sample at or after t0 and last at or before t1."""
    inside = [s for s in samples if t0 <= s[0] <= t1]
    return (inside[0], inside[-1]) if len(inside) >= 2 else (None, None)


def run_case(a, op, high):
    props = dict(nchs=a.nchs, luns_per_ch=a.luns, pgs_per_blk=a.pgs_per_blk,
                 flash_type=a.flash_type, time_scale=a.time_scale, op_pcent=op)
    if high is not None:
        props["gc_thres_pcent_high"] = high
    bb = bblib.Device("BB", 1, a.size, **props)
    ref = bblib.Device("REF", 2, a.size)
    label = f"op_pcent={op}" + (f" gc_thres_pcent_high={high}" if high is not None else "")
    bblib.log(f"[{label}] booting: {bb.describe()} + nossd reference ...")

    def progress(t, line):
        if line.startswith("@@stats"):
            bblib.log(f"[{label}] {t:6.1f}s {line.strip('@ ')}")

    g = bblib.Guest(guest_script(a), [bb, ref], sample_s=a.sample_s,
                    timeout=a.timeout).run(progress)

    ref_mbps = mbps(bblib.fio_json(g.section("ref"))["jobs"][0])
    fill_job = bblib.fio_json(g.section("fill"))["jobs"][0]
    over_job = bblib.fio_json(g.section("over"))["jobs"][0]
    t_fill, _ = g.marks["fill-start"]
    t_over, m_over = g.marks["fill-end"]
    t_end, m_end = g.marks["over-end"]
    s_over, s_end = m_over["BB"], m_end["BB"]
    samples = g.samples["BB"]
    cap_pages = a.size * (1 << 20) // PAGE

    # GC starts at the first sample whose gc-runs moved
    gc_start = next((t for t, s in samples if s["gc-runs"] > 0), None)
    # steady state: the last half of the overwrite, by pages written
    half = s_over["host-pages-written"] + (s_end["host-pages-written"]
                                           - s_over["host-pages-written"]) // 2
    t_half = next((t for t, s in samples if s["host-pages-written"] >= half), t_end)
    fill_log = [(t + t_fill, v) for t, v in bblib.fio_bw_log(g.section("fill-log"))]
    over_log = [(t + t_over, v) for t, v in bblib.fio_bw_log(g.section("over-log"))]
    steady_pts = [v for t, v in over_log if t >= t_half]
    first, last = window(samples, t_half, t_end)
    if first is None:
        first, last = (t_half, s_over), (t_end, s_end)
    d = lambda k: last[1][k] - first[1][k]  # noqa: E731
    steady_host_mbps = d("host-pages-written") * PAGE / 1e6 / (last[0] - first[0])
    steady_waf = d("nand-pages-written") / max(1, d("host-pages-written"))
    chips = a.nchs * a.luns
    busy = sum(d(f"chip{i}-busy-ns") for i in range(chips))
    util = busy / 1e9 / chips / (last[0] - first[0])
    before = mbps(fill_job)
    # random writes before the first GC, when the log has two points there
    pre_pts = [v for t, v in over_log if gc_start and t < gc_start - 1]
    steady = sum(steady_pts) / len(steady_pts) if steady_pts else steady_host_mbps
    over_waf = ((s_end["nand-pages-written"] - s_over["nand-pages-written"])
                / max(1, s_end["host-pages-written"] - s_over["host-pages-written"]))
    vlog = bblib.vendor_log(g.section("vendor-log"))
    return dict(
        label=label, op=op, high=high, ref_mbps=ref_mbps, before_mbps=before,
        pre_gc_random_mbps=(sum(pre_pts) / len(pre_pts) if len(pre_pts) >= 2 else None),
        steady_mbps=steady, steady_host_mbps=steady_host_mbps, drop_pct=100 * (1 - steady / before),
        steady_waf=steady_waf, overwrite_waf=over_waf, waf_milli=s_end["waf-milli"],
        chip_util=util, gc_start_s=(gc_start - t_over) if gc_start else None,
        over_seconds=t_end - t_over, lateness=bblib.lateness(s_end),
        lateness_ns={k: s_end[f"lateness-{k}-ns"] for k in ("p50", "p99", "max")},
        total_lines=s_end["total-lines"], free_lines_end=s_end["free-lines"],
        gc_runs=s_end["gc-runs"], gc_forced_runs=s_end["gc-forced-runs"],
        guest_log_waf_milli=vlog.get("waf_milli"), over_fio_mbps=mbps(over_job),
        cap_pages=cap_pages, fill_log=fill_log, over_log=over_log, t_over=t_over,
        waf_series=waf_series(samples, a.waf_window), gc_start_abs=gc_start)


def waf_series(samples, win):
    """(t, WAF over the preceding win seconds) from the QMP samples."""
    out, j = [], 0
    for i, (t, s) in enumerate(samples):
        while samples[j][0] < t - win:
            j += 1
        t0, s0 = samples[j]
        dh = s["host-pages-written"] - s0["host-pages-written"]
        if t > t0 and dh > 0:
            out.append((t, (s["nand-pages-written"] - s0["nand-pages-written"]) / dh))
    return out


def plot(results, a, path):
    plt = bblib.pyplot()
    if not plt:
        return None
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for r in results:
        t0 = r["t_over"]
        pts = r["fill_log"] + r["over_log"]
        line, = ax1.plot([t - t0 for t, _ in pts], [v for _, v in pts], label=r["label"])
        if r["gc_start_abs"]:
            ax1.axvline(r["gc_start_abs"] - t0, color=line.get_color(), ls=":", lw=1)
        ax2.plot([t - t0 for t, _ in r["waf_series"]], [w for _, w in r["waf_series"]],
                 color=line.get_color(), label=r["label"])
    ax1.set_ylabel("write MB/s (fio, 1 s avg)")
    ax1.set_title(f"blackbox {a.size} MiB, {a.nchs}x{a.luns} chips, time_scale={a.time_scale}:"
                  f" sequential fill (t<0), then 4 KiB random overwrite QD{a.qd}"
                  "\n(dotted: first GC)", fontsize=10)
    ax1.legend()
    ax1.grid(alpha=0.3)
    ax2.set_ylabel(f"WAF (last {a.waf_window:.0f} s)")
    ax2.set_xlabel("seconds since the random overwrite started")
    ax2.set_ylim(bottom=0)
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="7,28",
                    help="comma-separated op_pcent[/gc_thres_pcent_high] (default 7,28; "
                         "7/95 shows FEMU's forced-GC threshold)")
    ap.add_argument("--size", type=int, default=64, help="drive MiB (default 64)")
    ap.add_argument("--nchs", type=int, default=2)
    ap.add_argument("--luns", type=int, default=1, help="luns_per_ch (default 1)")
    ap.add_argument("--pgs-per-blk", type=int, default=32)
    ap.add_argument("--flash-type", type=int, default=3)
    ap.add_argument("--time-scale", type=int, default=1)
    ap.add_argument("--qd", type=int, default=32)
    ap.add_argument("--passes", type=float, default=2.0,
                    help="random overwrite volume in drive capacities (default 2)")
    ap.add_argument("--short", action="store_true", help="one capacity of overwrite, not two")
    ap.add_argument("--log-ms", type=int, default=1000, help="fio bandwidth log interval")
    ap.add_argument("--sample-s", type=float, default=1.0, help="QMP sampling interval")
    ap.add_argument("--waf-window", type=float, default=10.0)
    ap.add_argument("--ref-runtime", type=int, default=6)
    ap.add_argument("--timeout", type=int, default=3600)
    a = ap.parse_args()
    if a.short:
        a.passes = 1.0
    cases = [parse_case(c) for c in a.cases.split(",")]

    results = [run_case(a, op, high) for op, high in cases]

    chips = a.nchs * a.luns
    print(f"\nblackbox GC: {a.size} MiB drive, {a.nchs} ch x {a.luns} chips, "
          f"pgs_per_blk={a.pgs_per_blk}, flash_type={a.flash_type}, time_scale={a.time_scale};"
          f" sequential fill, then {a.passes:g}x capacity of 4 KiB uniform random writes, "
          f"QD{a.qd}, io_uring, direct")
    hdr = (f"{'case':36} {'before':>8} {'steady':>8} {'drop':>6} {'WAF':>6} {'WAF':>6} "
           f"{'chips':>6} {'lines':>6} {'late p50/p99/max':>18}")
    print(hdr)
    print(f"{'':36} {'MB/s':>8} {'MB/s':>8} {'%':>6} {'steady':>6} {'overw':>6} "
          f"{'busy':>6} {'':>6} {'us':>18}")
    for r in results:
        print(f"{r['label']:36} {r['before_mbps']:8.2f} {r['steady_mbps']:8.2f} "
              f"{r['drop_pct']:6.1f} {r['steady_waf']:6.2f} {r['overwrite_waf']:6.2f} "
              f"{r['chip_util']:6.2f} {r['total_lines']:6d} {r['lateness']:>18}")
    print("\npublished (the talk's drive):      drop ~75% at 7% OP, ~50% at 28% OP; "
          "WAF ~3.5 and slightly above 2")
    for r in results:
        pub = PUBLISHED.get(r["op"])
        if pub:
            print(f"  {r['label']:34} drop {r['drop_pct']:5.1f}% (published ~{pub[0]}%)   "
                  f"WAF {r['steady_waf']:5.2f} (published ~{pub[1]})")
    print("\nchecks:")
    for r in results:
        pre = r["pre_gc_random_mbps"]
        pre_text = (f"random writes before the first GC {pre:.2f} MB/s" if pre else
                    "GC began too early to time random writes without it")
        gc_at = "never" if r["gc_start_s"] is None else f"{r['gc_start_s']:.1f} s"
        print(f"  {r['label']}: guest ceiling (nossd 4K randwrite QD{a.qd}) "
              f"{r['ref_mbps']:.1f} MB/s = {r['ref_mbps'] / r['before_mbps']:.1f}x the model's "
              f"pre-GC rate; {pre_text}")
        print(f"    first GC {gc_at} into the overwrite, which took {r['over_seconds']:.0f} s; "
              f"gc-runs {r['gc_runs']} ({r['gc_forced_runs']} forced); waf-milli: guest log "
              f"page {r['guest_log_waf_milli']}, QMP {r['waf_milli']}; host-side steady "
              f"{r['steady_host_mbps']:.2f} MB/s")
    print(f"\ntransfers to the unscaled drive: drop % and WAF (time_scale stretches every "
          f"media time alike). MB/s: multiply by time_scale ({a.time_scale}); they hold for "
          f"this {chips}-chip geometry only. 'chips busy' = chip busy time / elapsed in the "
          f"steady window (below 1: chips idle while host writes wait on others).")

    path = bblib.RESULTS / f"bb-gc-waf-{bblib.stamp()}.png"
    bblib.RESULTS.mkdir(parents=True, exist_ok=True)
    if plot(results, a, path):
        print(f"plot: {path}")
    print(f"results: {bblib.save_json('bb-gc-waf', dict(args=vars(a), results=results))}")


if __name__ == "__main__":
    main()
