#!/usr/bin/env python3
"""Blackbox GC: throughput and write amplification once garbage collection is in steady state.

One guest holds one blackbox drive per case (same flash, its own over-provisioning) and a
nossd drive, on which fio first measures what the guest itself can issue (the model must be
far below that, or the figures describe TCG rather than the SSD). Then, one case after the
other: fill the drive sequentially (4 KiB writes at the queue depth of the overwrite: no GC,
every write costs one page program), then overwrite it with 4 KiB uniform random writes
until WAF is steady: the guest reads the device counters (vendor log page 0xCA) after every
--window capacities of host writes and stops when the WAF of the last window moved by at
most --tol from the window before, twice in a row (or after --max-caps capacities).

Prints, per case: the throughput before GC (the fill), in the last window, the drop, WAF
of the last windows (device counters over QMP at the window marks), how many capacities of
overwrite steady state took, chip utilisation, completion lateness. Plots throughput and
WAF per window to bench/results/bb-gc-waf-*.png.

A case is OP or OP/HIGH: op_pcent and, optionally, gc_thres_pcent_high (the device's
default is 99: forced GC when free lines fall to 1% of all lines, at least 2; background GC
while idle below gc_thres_pcent=90, i.e. 10% free).

Usage: bench/bb-gc-waf.py [--short] [--cases 7,28,7/95] [--size MiB] [--tol 0.02] ...
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

PAGE = 4096
# The experiment is that of Figure 1 of CITATION (block SSDs at 7% and 28% OP while the
# capacity is overwritten four times); the paper gives it as a plot, no numbers. The WAF
# printed beside ours is the published analytic model of greedy GC (bblib.WAF_MODEL).
CITATION = ("M. Bjørling, A. Aghayev, H. Holmberg, A. Ramesh, D. Le Moal, G. R. Ganger, "
            "G. Amvrosiadis: ZNS: Avoiding the Block Interface Tax for Flash-based SSDs, "
            "USENIX ATC 2021, Figure 1")


def parse_case(text):
    op, _, high = text.partition("/")
    try:
        op, high = int(op), (int(high) if high else None)
    except ValueError:
        sys.exit(f"--cases: '{text}' is not OP or OP/HIGH (integers)")
    if not 1 <= op <= 100 or (high is not None and not 50 <= high <= 99):
        sys.exit(f"--cases: '{text}': OP must be in 1..100, HIGH in 50..99")
    return op, high


def serial(op, high):
    return f"OP{op}" + (f"H{high}" if high is not None else "")


def guest_script(a, cases):
    common = f"--direct=1 --ioengine=io_uring --bs=4k --iodepth={a.qd} --output-format=json"
    win = int(a.window * a.size * (1 << 20) // PAGE)
    steps = []
    for op, high in cases:
        s = serial(op, high)
        steps.append(f"""
B=$(dev_of {s}) || exit 1
echo "@@stats {s}-fill@@"
fio --name=fill --filename=$B {common} --rw=write --size={a.size}m \\
    --write_bw_log=/tmp/{s}-fill --log_avg_msec={a.log_ms} > /tmp/{s}-fill.json || exit 1
echo "@@stats {s}-w0@@"
steady_overwrite $B {s} || exit 1
echo @@{s}-vendor-log@@; vendor_log $B
echo @@{s}-fill@@; cat /tmp/{s}-fill.json
echo @@{s}-fill-log@@; cat /tmp/{s}-fill_bw*.log
echo @@{s}-over-log@@; cat /tmp/{s}-over_bw*.log""")
    return f"""
# random overwrite of $1 until the WAF of a window of {win} host pages moved by at most
# {a.tol} (relative) from the window before, twice in a row; marks @@stats $2-wN@@
steady_overwrite() {{
  local B=$1 s=$2 pid h n h0 n0 w=0 prev= calm=0 waf
  fio --name=over --filename=$B {common} --rw=randwrite --norandommap --randrepeat=0 \\
      --size={a.size}m --io_size={int(a.max_caps * a.size)}m --write_bw_log=/tmp/$s-over \\
      --log_avg_msec={a.log_ms} > /tmp/$s-over.json &
  pid=$!
  h0=$(vendor_value $B host_pages_written); n0=$(vendor_value $B nand_pages_written)
  while kill -0 $pid 2>/dev/null; do
    sleep 0.5
    h=$(vendor_value $B host_pages_written); n=$(vendor_value $B nand_pages_written)
    (( h - h0 >= {win} )) || continue
    w=$((w + 1)); echo "@@stats $s-w$w@@"
    waf=$(awk -v dn=$((n - n0)) -v dh=$((h - h0)) 'BEGIN {{ printf "%.4f", dn / dh }}')
    if [[ -n $prev ]] && awk -v a=$waf -v b=$prev 'BEGIN {{ d = a - b; if (d < 0) d = -d;
        exit !(d <= {a.tol} * b) }}'; then calm=$((calm + 1)); else calm=0; fi
    echo "$s window $w: WAF $waf (calm $calm)"
    if ((calm >= 2)); then echo "$s steady"; kill -INT $pid; break; fi
    prev=$waf h0=$h n0=$n
  done
  wait $pid
  ((w >= 3)) || {{ echo "$s: the overwrite ended after $w windows" >&2; return 1; }}
}}
N=$(dev_of REF) || exit 1
fio --name=ref --filename=$N {common} --rw=randwrite --size={a.size}m --time_based \\
    --runtime={a.ref_runtime} > /tmp/ref.json || exit 1
{"".join(steps)}
echo "@@stats end@@"
echo @@ref@@; cat /tmp/ref.json
echo @@end@@
"""


def run_case(a, g, op, high):
    s = serial(op, high)
    label = f"op_pcent={op}" + (f" gc_thres_pcent_high={high}" if high is not None else "")
    marks = []     # (t, stats) at the fill, at the overwrite's start and after every window
    for name in [f"{s}-fill"] + [f"{s}-w{i}" for i in range(10_000)]:
        if name not in g.marks:
            break
        marks.append((g.marks[name][0], g.marks[name][1][s]))
    cap_pages = a.size * (1 << 20) // PAGE
    windows = []
    for (t0, m0), (t1, m1) in zip(marks[1:], marks[2:]):
        dh = m1["host-pages-written"] - m0["host-pages-written"]
        windows.append(dict(
            t0=t0, t1=t1, host_pages=dh,
            caps=(m1["host-pages-written"] - marks[1][1]["host-pages-written"]) / cap_pages,
            waf=(m1["nand-pages-written"] - m0["nand-pages-written"]) / max(1, dh),
            mbps=dh * PAGE / 1e6 / (t1 - t0),
            chip_util=sum(m1[f"chip{i}-busy-ns"] - m0[f"chip{i}-busy-ns"]
                          for i in range(a.nchs * a.luns)) / 1e9 / (a.nchs * a.luns) / (t1 - t0)))
    steady = any(line.strip() == f"{s} steady" for _, line in g.lines)
    fill = bblib.fio_json(g.section(f"{s}-fill"))["jobs"][0]["write"]["bw_bytes"] / 1e6
    t_over = marks[1][0]
    over_log = [(t_over + t, v) for t, v in bblib.fio_bw_log(g.section(f"{s}-over-log"))]
    fill_log = [(marks[0][0] + t, v) for t, v in bblib.fio_bw_log(g.section(f"{s}-fill-log"))]
    last = windows[-1]
    last_pts = [v for t, v in over_log if last["t0"] <= t <= last["t1"]]
    end = marks[-1][1]
    vlog = bblib.vendor_log(g.section(f"{s}-vendor-log"))
    gc_start = next((t for t, st in g.samples[s] if st["gc-runs"] > 0), None)
    line_pages = a.nchs * a.luns * a.pgs_per_blk
    alpha = end["total-lines"] * line_pages / cap_pages
    return dict(
        label=label, serial=s, op=op, high=high, before_mbps=fill, steady=steady,
        alpha=alpha, model_waf=bblib.greedy_waf(alpha),
        steady_mbps=last["mbps"], steady_points=last_pts, steady_waf=last["waf"],
        drop_pct=100 * (1 - last["mbps"] / fill), chip_util=last["chip_util"],
        caps_to_steady=last["caps"], windows=windows, lateness=bblib.lateness(end),
        lateness_ns={k: end[f"lateness-{k}-ns"] for k in ("p50", "p99", "max")},
        total_lines=end["total-lines"], gc_runs=end["gc-runs"],
        gc_forced_runs=end["gc-forced-runs"], waf_milli=end["waf-milli"],
        guest_log_waf_milli=vlog.get("waf_milli"), fill_log=fill_log, over_log=over_log,
        t_over=t_over, gc_start_s=(gc_start - t_over) if gc_start else None)


def plot(results, a, path):
    plt = bblib.pyplot()
    if not plt:
        return None
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7))
    for r in results:
        t0 = r["t_over"]
        pts = r["fill_log"] + r["over_log"]
        line, = ax1.plot([t - t0 for t, _ in pts], [v for _, v in pts], label=r["label"])
        ax2.plot([w["caps"] for w in r["windows"]], [w["waf"] for w in r["windows"]], "o-",
                 color=line.get_color(), label=r["label"])
    ax1.set_ylabel(f"write MB/s (fio, {a.log_ms} ms avg)")
    ax1.set_xlabel("seconds since the random overwrite started")
    ax1.set_title(f"blackbox {a.size} MiB, {a.nchs}x{a.luns} chips, time_scale={a.time_scale}:"
                  f" sequential fill (t<0), then 4 KiB random overwrite QD{a.qd}", fontsize=10)
    ax1.legend()
    ax1.grid(alpha=0.3)
    ax2.set_ylabel(f"WAF per window ({a.window:g} capacity)")
    ax2.set_xlabel("capacities of random overwrite")
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
    ap.add_argument("--window", type=float, default=0.5,
                    help="capacities of host writes per WAF window (default 0.5)")
    ap.add_argument("--tol", type=float, default=0.02,
                    help="steady: WAF moved by at most this fraction, twice (default 0.02)")
    ap.add_argument("--max-caps", type=float, default=8,
                    help="give up after this many capacities of overwrite (default 8)")
    ap.add_argument("--short", action="store_true", help="a 32 MiB drive (same criterion)")
    ap.add_argument("--log-ms", type=int, default=1000, help="fio bandwidth log interval")
    ap.add_argument("--sample-s", type=float, default=1.0, help="QMP sampling interval")
    ap.add_argument("--ref-runtime", type=int, default=6)
    ap.add_argument("--timeout", type=int, default=7200)
    a = ap.parse_args()
    if a.short:
        a.size = 32
    if not 0.05 <= a.window <= 4:
        sys.exit(f"--window must be in 0.05..4 capacities (got {a.window})")
    if not 0 < a.tol < 1:
        sys.exit(f"--tol must be a fraction in (0, 1) (got {a.tol})")
    if not 3 * a.window <= a.max_caps <= 100:
        sys.exit(f"--max-caps must be in {3 * a.window:g}..100 (three windows at least; "
                 f"got {a.max_caps})")
    cases = [parse_case(c) for c in a.cases.split(",")]
    if len({serial(*c) for c in cases}) != len(cases):
        sys.exit("--cases: a case is given twice")

    props = dict(nchs=a.nchs, luns_per_ch=a.luns, pgs_per_blk=a.pgs_per_blk,
                 flash_type=a.flash_type, time_scale=a.time_scale)
    devs = [bblib.Device(serial(op, high), 1, a.size, op_pcent=op, **props,
                         **({} if high is None else dict(gc_thres_pcent_high=high)))
            for op, high in cases] + [bblib.Device("REF", 2, a.size)]
    bblib.log(f"booting one guest: {len(cases)} blackbox drives ({a.cases}) of {a.size} MiB + "
              "nossd; each: fill, then random overwrite until WAF is steady ...")

    def progress(t, line):
        if line.startswith("@@stats") or " window " in line or line.endswith(" steady"):
            bblib.log(f"  {t:6.1f}s {line.strip('@ ')}")

    g = bblib.Guest(guest_script(a, cases), devs, sample_s=a.sample_s,
                    timeout=a.timeout).run(progress)
    results = [run_case(a, g, op, high) for op, high in cases]
    ref_mbps = bblib.fio_json(g.section("ref"))["jobs"][0]["write"]["bw_bytes"] / 1e6

    print(f"\nblackbox GC: {a.size} MiB drives, {a.nchs} ch x {a.luns} chips, "
          f"pgs_per_blk={a.pgs_per_blk}, flash_type={a.flash_type}, time_scale={a.time_scale};"
          f" sequential fill, then 4 KiB uniform random writes QD{a.qd}, io_uring, direct, "
          f"until the WAF of a {a.window:g}-capacity window moved by <= {a.tol:.0%} twice")
    print(f"{'case':36} {'before':>7} {'steady':>7} {'drop':>5} {'WAF, last windows':>20} "
          f"{'caps':>5} {'chips':>5} {'lines':>5} {'late p50/p99/max':>17}")
    print(f"{'':36} {'MB/s':>7} {'MB/s':>7} {'%':>5} {'':>20} {'':>5} {'busy':>5} {'':>5} "
          f"{'us':>17}")
    for r in results:
        wafs = ", ".join(f"{w['waf']:.2f}" for w in r["windows"][-3:])
        caps = f"{r['caps_to_steady']:.1f}" + ("" if r["steady"] else "!")
        print(f"{r['label']:36} {r['before_mbps']:7.2f} {r['steady_mbps']:7.2f} "
              f"{r['drop_pct']:5.1f} {wafs:>20} {caps:>5} {r['chip_util']:5.2f} "
              f"{r['total_lines']:5d} {r['lateness']:>17}")
    print("steady = the last window (host pages over the host clock between the window marks);"
          " caps = capacities of random\noverwrite until steady ('!': not steady within "
          f"--max-caps {a.max_caps:g}); fio's 1 s points in the last window, MB/s:")
    for r in results:
        if r["steady_points"]:
            print(f"  {r['label']:34} {bblib.fmt_spread(r['steady_points'], 2)}")
    print(f"\npublished: the WAF of greedy GC under uniform random writes, analytic model of "
          f"{bblib.WAF_MODEL},\nat this drive's physical/logical capacity (its lines over the "
          f"lines its capacity fills); the shape of the experiment is\n{CITATION}, "
          "a plot without numbers.")
    for r in results:
        print(f"  {r['label']:34} WAF {r['steady_waf']:5.2f}   model {r['model_waf']:5.2f} "
              f"(alpha {r['alpha']:.3f})")
    print("\nchecks:")
    for r in results:
        gc_at = "never" if r["gc_start_s"] is None else f"{r['gc_start_s']:.1f} s"
        print(f"  {r['label']}: guest ceiling (nossd 4K randwrite QD{a.qd}) {ref_mbps:.1f} MB/s"
              f" = {ref_mbps / r['before_mbps']:.1f}x the model's pre-GC rate; first GC "
              f"{gc_at} into the overwrite;\n    gc-runs {r['gc_runs']} ({r['gc_forced_runs']} "
              f"forced); cumulative waf-milli (fill included): vendor log "
              f"{r['guest_log_waf_milli']}, QMP {r['waf_milli']}")
    print(f"\ntransfers to the unscaled drive: drop % and WAF (time_scale stretches every "
          f"media time alike). MB/s: multiply by time_scale ({a.time_scale}); they hold for "
          f"this {a.nchs * a.luns}-chip geometry only. WAF depends on the number of lines "
          "(a small drive has few) and on OP;\n'chips busy' = chip busy time / elapsed in the "
          "last window (below 1: chips idle while host writes wait on others).")

    path = bblib.RESULTS / f"bb-gc-waf-{bblib.stamp()}.png"
    bblib.RESULTS.mkdir(parents=True, exist_ok=True)
    if plot(results, a, path):
        print(f"plot: {path}")
    print("results: " + str(bblib.save_json("bb-gc-waf", dict(
        args=vars(a), ref_mbps=ref_mbps, results=results, waf_model=bblib.WAF_MODEL,
        citation=CITATION), guest=g)))


if __name__ == "__main__":
    main()
