#!/usr/bin/env python3
"""FDP: WAF of a hot/cold workload without placement, with hot and cold on 2 handles, and on
4 handles (hot split in two by range, cold split in two), at 7% and 28% OP.

The workload: 4 KiB random writes, --hot-share % of them (default 90) uniform over the
first --hot-pct % of the LBA space (default 10: the hot range), the rest uniform over the
other LBAs (the cold range), one fio job (random_distribution=zoned_abs), the placement
identifier chosen by LBA range (fio's dp_scheme). Without placement every write goes to
handle 0, as writes without the directive do.

One guest holds one FDP drive per (OP, case), all alike (4 reclaim unit handles of
--types, PI by default so that GC keeps hot and cold apart too; the cases differ only in
what the host asks for). On each: a sequential fill (128 KiB, with the case's placement),
then windows of --window capacities of the hot/cold writes until the device's WAF of a
window moved by at most --tol from the one before, twice (at least --min-windows,
at most --max-windows, and at least --turnovers rewrites of the cold range: it is
rewritten only every (100 - hot-pct) / (100 - hot-share) capacities, 9 by default, and
its WAF settles only after a few).

Prints, per case, the device's WAF and each handle's (ruhN-host-pages-written and
ruhN-gc-pages-moved over the last --last-caps capacities, one cold rewrite by default)
beside the published analytic WAF of greedy GC under uniform random writes
(bblib.WAF_MODEL), for each handle at its own effective over-provisioning: the RUs it
holds (ruhN-rus-in-use, averaged over those capacities) and its part of the RUs nobody
holds (free ones), in proportion, over the LBAs it writes. Each handle's stream is
uniform, so the model is its figure; the stream without placement is not (hot and cold
mixed), so the model there is the uniform case it is compared with. A control drive
takes uniform random writes without placement: how close the model comes on this
geometry (few pages per RU: greedy GC also gains from the spread of RUs' valid counts,
which the model leaves out). Plot of each handle's WAF per window
in bench/results/fdp-hotcold-*.png.

Usage: bench/fdp-hotcold.py [--short] [--ops 7,28] [--hot-pct 10 --hot-share 90]
       [--size 64] [--window 1] [--types pi]
"""

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import fdplib  # noqa: E402
from fdplib import PAGE  # noqa: E402

# key, label, handles (0: no placement). U is the control: uniform random writes, which
# the model describes exactly, show how close it comes on this geometry.
CASES = [("U", "control: uniform, no placement", 0),
         ("N", "no placement (all to handle 0)", 0),
         ("H2", "2 handles: hot 0, cold 1", 2),
         ("H4", "4 handles: hot 0|1, cold 2|3 by range", 4)]


def ranges(a, nh):
    """[(first page, end page, handle)] of a case with nh handles (0: no placement)."""
    pages, hot = a.size * (1 << 20) // PAGE, a.hot_pages
    if nh == 0:
        return [(0, pages, 0)]
    if nh == 2:
        return [(0, hot, 0), (hot, pages, 1)]
    mid = hot + (pages - hot) // 64 * 32
    return [(0, hot // 2, 0), (hot // 2, hot, 1), (hot, mid, 2), (mid, pages, 3)]


def serial(op, key):
    return f"HC{op}{key}"


def guest_script(a):
    pages = a.size * (1 << 20) // PAGE
    dist = (f"zoned_abs:{a.hot_share}/{a.hot_pages * 4}k:"
            f"{100 - a.hot_share}/{(pages - a.hot_pages) * 4}k")
    win_mb = int(a.window * a.size)
    steps = []
    for op in a.ops:
        for key, _, nh in CASES:
            s = serial(op, key)
            if nh:
                sch = [(lo * PAGE, hi * PAGE, h) for lo, hi, h in ranges(a, nh)]
                place = (f" --fdp=1 --fdp_pli={','.join(str(h) for h in range(nh))}"
                         f" --plid_select=scheme --dp_scheme=/tmp/{s}.scheme")
                mk = fdplib.scheme_cmd(f"/tmp/{s}.scheme", sch)
            else:
                place, mk = "", ":"
            base = fdplib.fio_base("N") + place
            rnd = "" if key == "U" else f"--random_distribution={dist}"
            steps.append(f"""
B=$(dev_of {s}) || exit 1; N=$(ng_of $B)
{mk}
fio --name=fill {base} --rw=write --bs=128k --iodepth=4 --size={a.size}m > /tmp/fill.out \\
    || {{ cat /tmp/fill.out; exit 1; }}
fdp_windows {s} $B {a.min_windows} {a.max_windows} {a.tol} fio --name=hc {base} \\
    --rw=randwrite --bs=4k --iodepth={a.qd} {rnd} \\
    --size={a.size}m --io_size={win_mb}m || exit 1""")
    return fdplib.GUEST + "".join(steps) + "\necho @@end@@\n"


def run_case(a, g, op, key, label, nh):
    s = serial(op, key)
    ms = fdplib.marks(g, s, s)
    cap = a.size * (1 << 20) // PAGE
    nruh = 4
    wins = fdplib.windows(ms, nruh, cap)
    t = fdplib.tail(ms, nruh, cap, a.last_caps)
    end = ms[-1][1]
    ru_pages, total_rus = end["fdp-ru-pages"], end["fdp-total-rus"]
    used = sorted({h for _, _, h in ranges(a, nh)})
    logical = {h: sum(hi - lo for lo, hi, hh in ranges(a, nh) if hh == h) for h in used}
    alpha = {h: fdplib.effective_alpha(t, h, logical[h], end) for h in used}
    # without placement handle 0 holds both: hot and cold are told apart only with handles
    hot = [h for lo, _, h in ranges(a, nh) if lo < a.hot_pages] if nh else []
    cold = [h for lo, _, h in ranges(a, nh) if lo >= a.hot_pages] if nh else []
    return dict(
        op=op, key=key, label=label, serial=s, nh=nh, windows=wins, tail=t, used=used,
        alpha=alpha, model={h: bblib.greedy_waf(alpha[h]) for h in used},
        alpha_drive=total_rus * ru_pages / cap,
        model_drive=bblib.greedy_waf(total_rus * ru_pages / cap),
        hot_waf=fdplib.group_waf(t, hot), cold_waf=fdplib.group_waf(t, cold), hot=hot,
        cold=cold,
        steady=fdplib.steady_note(g, s), caps=wins[-1]["caps"] if wins else 0,
        lateness=bblib.lateness(end), total_rus=total_rus, ru_pages=ru_pages,
        gc_runs=end["gc-runs"], mbps=[w["mbps"] for w in wins],
        checks=fdplib.check_counters(end, nruh), drive=fdplib.drive_note(end, cap, op))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    fdplib.add_args(ap, size=64, short_size=16, short_pgs=8, min_w=None, max_w=80,
                    short_min_w=None, short_max_w=40)
    ap.add_argument("--ops", default="7,28", help="op_pcent cases (default 7,28)")
    ap.add_argument("--hot-pct", type=int, default=10, help="hot range, %% of the LBAs")
    ap.add_argument("--hot-share", type=int, default=90, help="%% of the writes to it")
    ap.add_argument("--window", type=float, default=1.0, help="capacities per window")
    ap.add_argument("--turnovers", type=float,
                    help="at least this many rewrites of the cold range before WAF may be "
                         "called steady (default 3, short 2): sets --min-windows")
    ap.add_argument("--last-caps", type=float,
                    help="the figures are over the last this many capacities (default: "
                         "one rewrite of the cold range)")
    ap.add_argument("--types", default="pi", choices=("pi", "ii"),
                    help="type of the 4 handles (default pi)")
    a = fdplib.parse_args(ap)
    try:
        a.ops = [int(x) for x in a.ops.split(",")]
    except ValueError:
        sys.exit(f"--ops: '{a.ops}' is not a list of integers")
    if not all(1 <= op <= 100 for op in a.ops) or len(set(a.ops)) != len(a.ops):
        sys.exit("--ops: each in 1..100, once")
    if not 1 <= a.hot_pct <= 50 or not 50 <= a.hot_share <= 99:
        sys.exit("--hot-pct must be in 1..50, --hot-share in 50..99")
    if not 0.25 <= a.window <= 8:
        sys.exit("--window must be in 0.25..8 capacities")
    # capacities of hot/cold writes that rewrite the cold range once, on average
    a.cold_turnover = (100 - a.hot_pct) / (100 - a.hot_share)
    if a.turnovers is None:
        a.turnovers = 2 if a.short else 3
    if a.min_windows is None:
        a.min_windows = min(a.max_windows, math.ceil(a.turnovers * a.cold_turnover / a.window))
    if not 1 <= a.min_windows <= a.max_windows:
        sys.exit(f"need 1 <= --min-windows <= --max-windows (got {a.min_windows}, "
                 f"{a.max_windows})")
    if a.last_caps is None:
        a.last_caps = a.cold_turnover
    pages = a.size * (1 << 20) // PAGE
    # the hot range in 256 KiB steps, so that its halves and the 128 KiB fill align
    a.hot_pages = max(64, round(pages * a.hot_pct / 100 / 64) * 64)
    types = ":".join([a.types] * 4)
    devs = [fdplib.device(a, serial(op, key), types, op) for op in a.ops for key, _, _ in CASES]
    bblib.log(f"booting one guest: {len(devs)} FDP drives of {a.size} MiB ({a.types} x4), "
              f"OP {a.ops}; each: fill, then hot/cold windows until WAF is steady ...")

    def progress(t, line):
        if " window " in line or line.endswith(" steady"):
            bblib.log(f"  {t:6.1f}s {line.strip()}")

    g = bblib.Guest(guest_script(a), devs, timeout=a.timeout).run(progress)
    results = [run_case(a, g, op, key, label, nh) for op in a.ops for key, label, nh in CASES]

    hot_pct = 100 * a.hot_pages / pages
    print(f"\nFDP hot/cold: {a.size} MiB drives, {a.nchs} ch x {a.luns} chips, pgs_per_blk="
          f"{a.pgs_per_blk} (RU {results[0]['ru_pages']} pages), 4 handles {a.types}, "
          f"gc_thres {a.gc_thres}; 4 KiB random writes QD{a.qd}, {a.hot_share}% to the first "
          f"{hot_pct:.1f}% of the LBAs;\nsequential fill, then windows of {a.window:g} "
          f"capacity until the device's WAF moved by <= {a.tol:.0%} twice; figures over the "
          f"last {a.last_caps:g} capacities")
    for op in a.ops:
        print(f"OP {op}%: " + next(r["drive"] for r in results if r["op"] == op))
    print(f"{'OP':>3} {'case':40} {'device':>6} {'hot':>5} {'cold':>5}  "
          f"{'per handle: WAF (model)':40} {'caps':>6} {'late p50/p99/max us':>19}")
    for r in results:
        per = "  ".join(f"{h}:{fdplib.fmt(r['tail']['ruh'][h])}({r['model'][h]:.2f})"
                        for h in r["used"])
        print(f"{r['op']:3d} {r['label']:40} {fdplib.fmt(r['tail']['waf']):>6} "
              f"{fdplib.fmt(r['hot_waf']):>5} {fdplib.fmt(r['cold_waf']):>5}  {per:40} "
              f"{r['caps']:5.1f}{r['steady'] or ' '} {r['lateness']:>19}")
    print("caps: capacities of hot/cold writes after the fill ('!': not steady within "
          "--max-windows); hot/cold: the hot (cold) handles together")
    print(f"\npublished: WAF of greedy GC under uniform random writes, {bblib.WAF_MODEL};"
          f"\nper handle at its own effective OP (alpha = (RUs it holds + its part of the free "
          f"ones) x RU pages / LBAs it writes), and for the drive (all its RUs):")
    print(f"{'OP':>3} {'case':40} {'ours':>6} {'model':>6} {'ratio':>6}   per handle "
          "ours/model (alpha)")
    for r in results:
        # the device's figure against the model at the drive's own OP; per handle at theirs
        per = "  ".join(f"{h}:{fdplib.fmt(r['tail']['ruh'][h])}/{r['model'][h]:.2f}"
                        f"({r['alpha'][h]:.3f})" for h in r["used"])
        print(f"{r['op']:3d} {r['label']:40} {fdplib.fmt(r['tail']['waf']):>6} "
              f"{r['model_drive']:6.2f} {r['tail']['waf'] / r['model_drive']:6.2f}   {per}")
    print("\nratios (device WAF), per OP:")
    for op in a.ops:
        rs = {r["key"]: r for r in results if r["op"] == op}
        u, n, h2, h4 = (rs[k]["tail"]["waf"] for k in ("U", "N", "H2", "H4"))
        print(f"  OP {op}%: no placement / 2 handles {n / h2:.2f}, no placement / 4 handles "
              f"{n / h4:.2f}, 4 handles / 2 handles {h4 / h2:.2f}; hot/cold without "
              f"placement / uniform {n / u:.2f}")
    fdplib.print_checks(results)
    print("\ntransfers: WAF and the ratios (counts of pages, independent of the guest's "
          "speed); they hold for this geometry (few RUs: a small drive's greedy GC has few "
          "victims to choose from).\nNot transferable: the pace (MB/s of host writes, "
          "median per run: " + ", ".join(
              f"{r['serial']} {sorted(r['mbps'])[len(r['mbps']) // 2]:.1f}" for r in results)
          + "), set by the TCG guest on fast flash.")
    path = fdplib.plot(
        [(f"OP {r['op']}%: {r['label']}", r["windows"],
          {h: f"handle {h}" for h in r["used"]},
          {f"handle {h}": r["model"][h] for h in r["used"]}) for r in results],
        f"FDP hot/cold ({a.hot_share}% of writes to {hot_pct:.0f}% of LBAs), {a.size} MiB, "
        f"{a.types} x4: WAF per window (dotted: greedy model at the handle's OP)",
        "fdp-hotcold")
    for r in results:
        r.pop("mbps")
    print("results: " + str(bblib.save_json("fdp-hotcold", dict(
        args=vars(a), results=results, waf_model=bblib.WAF_MODEL, plot=str(path)), guest=g)))


if __name__ == "__main__":
    main()
