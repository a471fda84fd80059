#!/usr/bin/env python3
"""FDP: the observations of WARP (Song et al., FAST '26) on real FDP drives, on FEMU's FDP
FTL: WAF under an adversarial three-stream workload, the "noisy handle" (invalidations in
one handle raising the WAF of others) with Initially against Persistently Isolated
handles, and the reclaim of a long sequential stream overwritten in place.

Part A, three streams (the synthetic workload of WARP's artifact, at equal byte shares
here, --shares; theirs ran unthrottled):
  seq    128 KiB sequential writes, QD1, over the first 90% of the LBAs (handle 0)
  rand   4 KiB uniform random writes over the last 10% (handle 1)
  jumper 4 KiB random overwrites of the sequential range, 80% of them to its first 20%,
         10% to the next 20%, 10% to the last 60% (fio zoned:80/20:10/20:10/60) (handle 2)
Cases: no placement; "share" (jumper on the sequential stream's handle 0); FDP (three
handles, the adversarial case: the jumper punches holes into the sequential stream's RUs
and the sequential rewrite into the jumper's).

Part B, noisy handle: cold (4 KiB uniform random over 45% of the LBAs, 15% of the bytes,
handle 0), log (128 KiB sequential over the next 45%, 35%, handle 1) and noisy (4 KiB
uniform random over the last 10%, 50%, handle 2). Cases: alone (PI handles, the noisy
range filled but never rewritten: each handle's own WAF), handles II (GC moves every II
handle's data into one GC RU: hot and cold mix there), handles PI (each handle's moved
data stays in its own GC RUs).

One guest holds the six FDP drives (7% OP, 3 handles, ii unless PI); each is filled
(every range, with its handle), then written window after window, a window being one
pass of its sequential stream (fio's flow= keeps the streams' ratio write by write),
until the device's WAF of a window moved by at most --tol from the one before, twice.
Prints the device's and each handle's WAF over the last --last-windows windows beside
WARP's figures; plot of each handle's WAF per window in bench/results/fdp-warp-*.png.

Usage: bench/fdp-warp.py [--short] [--parts A,B] [--shares 33,33,34] [--size 64]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import fdplib  # noqa: E402
from fdplib import PAGE  # noqa: E402

CITATION = ("I. Song, S. A. Qazi, J. Gonzalez, M. Bjørling, S. H. Noh, H. Li: "
            "Characterizing and Emulating FDP SSDs with WARP, USENIX FAST 2026")
# the adversarial three-stream workload with FDP on, two commercial PCIe Gen5 FDP drives
PUBLISHED_3STREAM = (4.49, 2.58)

# part, key, label, handle types, {stream: handle or None (no directive)}, streams that
# are filled but not rewritten
CASES = [
    ("A", "N", "3 streams, no placement", "ii:ii:ii", dict(seq=None, rand=None, jump=None),
     ()),
    ("A", "S", "3 streams, jumper shares 0", "ii:ii:ii", dict(seq=0, rand=1, jump=0), ()),
    ("A", "F", "3 streams on 3 handles", "ii:ii:ii", dict(seq=0, rand=1, jump=2), ()),
    ("B", "A", "cold + log alone, PI", "pi:pi:pi", dict(cold=0, log=1, noisy=2), ("noisy",)),
    ("B", "I", "cold + log + noisy, II", "ii:ii:ii", dict(cold=0, log=1, noisy=2), ()),
    ("B", "P", "cold + log + noisy, PI", "pi:pi:pi", dict(cold=0, log=1, noisy=2), ()),
]
NAMES = dict(A={0: "seq", 1: "rand", 2: "jumper"}, B={0: "cold", 1: "log", 2: "noisy"})


def serial(part, key):
    return f"W{'3' if part == 'A' else 'N'}{key}"


def streams(a, part):
    """{stream: (first page, pages, bs KiB, fio rw and distribution, QD, share of bytes)}"""
    pages = a.size * (1 << 20) // PAGE
    if part == "A":
        seq = pages * 9 // 10 // 32 * 32
        s, r, j = a.shares
        return dict(seq=(0, seq, 128, "--rw=write", 1, s),
                    rand=(seq, pages - seq, 4, "--rw=randwrite", a.qd, r),
                    jump=(0, seq, 4, "--rw=randwrite --random_distribution="
                          "zoned:80/20:10/20:10/60", a.qd, j))
    cold = pages * 45 // 100 // 32 * 32
    return dict(cold=(0, cold, 4, "--rw=randwrite", a.qd, 15),
                log=(cold, cold, 128, "--rw=write", 1, 35),
                noisy=(2 * cold, pages - 2 * cold, 4, "--rw=randwrite", a.qd, 50))


def guest_script(a):
    steps = []
    for part, key, _, _, place, idle in CASES:
        if part not in a.parts:
            continue
        s = serial(part, key)
        st = streams(a, part)
        seq = "seq" if part == "A" else "log"
        fills, jobs = [], []
        for name, (first, n, bs, rw, qd, share) in st.items():
            base = fdplib.fio_base("N", place.get(name))
            rng = f"--offset={first * 4}k --size={n * 4}k"
            if name != "jump":      # the jumper's range is the sequential stream's
                fills.append(f"--name=fill-{name} {base} {rng} --rw=write --bs=128k "
                             "--iodepth=4")
            if name in idle:        # filled, never rewritten (part B alone)
                continue
            # a window is one pass of the sequential stream; the others by their shares
            nbytes = round(st[seq][1] * 4 * share / st[seq][5] / bs) * bs
            ios = nbytes // bs
            jobs.append((f"--name={name} {base} {rng} {rw} --bs={bs}k --iodepth={qd} "
                         f"--io_size={nbytes}k", ios))
        # the flow weights count writes: relative to the job that issues the fewest
        fewest = min(ios for _, ios in jobs)
        run = " \\\n    ".join(f"{j} {fdplib.flow(ios / fewest)}" for j, ios in jobs)
        fill = " \\\n    ".join(fills)
        steps.append(f"""
B=$(dev_of {s}) || exit 1; N=$(ng_of $B)
fio {fill} > /tmp/fill.out || {{ cat /tmp/fill.out; exit 1; }}
fdp_windows {s} $B {a.min_windows} {a.max_windows} {a.tol} fio \\
    {run} || exit 1""")
    return fdplib.GUEST + "".join(steps) + "\necho @@end@@\n"


def run_case(a, g, part, key, label, types, place, idle):
    s = serial(part, key)
    ms = fdplib.marks(g, s, s)
    cap = a.size * (1 << 20) // PAGE
    wins = fdplib.windows(ms, 3, cap)
    t = fdplib.tail(ms, 3, cap, last_windows=a.last_windows)
    end = ms[-1][1]
    used = sorted({h for h in place.values() if h is not None}) or [0]
    model = {}
    if types.startswith("pi"):
        # PI: every RU a handle's data is in counts as its own, so its effective OP is
        # known; the model is for uniform random streams (not the log)
        st = streams(a, part)
        for name, h in place.items():
            if name in idle or st[name][3] != "--rw=randwrite":
                continue
            alpha = fdplib.effective_alpha(t, h, st[name][1], end)
            model[h] = (alpha, bblib.greedy_waf(alpha))
    return dict(part=part, key=key, label=label, serial=s, types=types, place=place,
                windows=wins, tail=t, used=used, model=model,
                steady=fdplib.steady_note(g, s), caps=wins[-1]["caps"] if wins else 0,
                lateness=bblib.lateness(end), ru_pages=end["fdp-ru-pages"],
                mbps=[w["mbps"] for w in wins], checks=fdplib.check_counters(end, 3),
                drive=fdplib.drive_note(end, cap, a.op))


def hname(r, h):
    if all(v is None for v in r["place"].values()):
        return "all"
    names = [n for n, hh in r["place"].items() if hh == h]
    return "+".join(names) or NAMES[r["part"]][h]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # RUs of 1 MiB (4 chips x 64 pages), eight sequential writes each: on WARP's drives an
    # RU is far larger than a write, so streams without their own handle share RUs
    # (short: 32 MiB of 512 KiB RUs, still four writes each)
    fdplib.add_args(ap, size=256, short_size=32, pgs_per_blk=64, short_pgs=32, luns=2,
                    min_w=6, max_w=20, short_min_w=4, short_max_w=8)
    ap.add_argument("--parts", default="A,B", help="A (three streams), B (noisy handle)")
    ap.add_argument("--shares", default="33,33,34",
                    help="part A: %% of the bytes for seq, rand, jumper (default 33,33,34)")
    ap.add_argument("--last-windows", type=int, default=3,
                    help="the figures are over the last this many windows (default 3)")
    a = fdplib.parse_args(ap)
    a.parts = a.parts.split(",")
    if not a.parts or any(p not in ("A", "B") for p in a.parts):
        sys.exit("--parts: A, B or A,B")
    try:
        a.shares = [float(x) for x in a.shares.split(",")]
    except ValueError:
        a.shares = []
    if len(a.shares) != 3 or min(a.shares) <= 0:
        sys.exit("--shares: three positive numbers (seq, rand, jumper)")
    if a.last_windows < 1:
        sys.exit("--last-windows must be at least 1")
    cases = [c for c in CASES if c[0] in a.parts]
    devs = [fdplib.device(a, serial(p, k), types) for p, k, _, types, _, _ in cases]
    bblib.log(f"booting one guest: {len(devs)} FDP drives of {a.size} MiB (parts "
              f"{','.join(a.parts)}); each: fill, then windows until WAF is steady ...")

    def progress(t, line):
        if " window " in line or line.endswith(" steady"):
            bblib.log(f"  {t:6.1f}s {line.strip()}")

    g = bblib.Guest(guest_script(a), devs, timeout=a.timeout).run(progress)
    results = [run_case(a, g, *c) for c in cases]
    byk = {(r["part"], r["key"]): r for r in results}

    print(f"\nWARP on FEMU's FDP FTL: {a.size} MiB drives, {a.nchs} ch x {a.luns} chips, "
          f"pgs_per_blk={a.pgs_per_blk} (RU {results[0]['ru_pages']} pages), OP {a.op}%, "
          f"gc_thres {a.gc_thres}; windows of one sequential pass until the device's WAF "
          f"moved by <= {a.tol:.0%} twice;\nfigures over the last {a.last_windows} windows "
          "(per handle: its pages written and moved over its host pages)")
    for types, note in sorted({r["types"]: r["drive"] for r in results}.items()):
        print(f"{types} {note}")
    print(f"{'case':28} {'types':9} {'device':>6}   {'per handle WAF':44} {'caps':>6} "
          f"{'late p50/p99/max us':>19}")
    for r in results:
        t = r["tail"]
        per = "  ".join(f"{h} {hname(r, h)} {fdplib.fmt(t['ruh'][h])}" for h in r["used"])
        print(f"{r['label']:28} {r['types']:9} {fdplib.fmt(t['waf']):>6}   {per:44} "
              f"{r['caps']:5.1f}{r['steady'] or ' '} {r['lateness']:>19}")
    print("caps: capacities written after the fill ('!': not steady within --max-windows)")
    print(f"\npublished: {CITATION}")
    if "A" in a.parts:
        f, n, s = (byk[("A", k)]["tail"]["waf"] for k in ("F", "N", "S"))
        print(f"  adversarial three streams with FDP: WAF {f:.2f} here; {PUBLISHED_3STREAM[0]}"
              f" and {PUBLISHED_3STREAM[1]} on WARP's two drives (ours/theirs "
              f"{f / PUBLISHED_3STREAM[0]:.2f}, {f / PUBLISHED_3STREAM[1]:.2f}); "
              f"no placement {n:.2f}, jumper sharing the sequential handle {s:.2f}")
        seq = byk[("A", "F")]["tail"]["ruh"][0]
        print(f"  the sequential stream's own WAF with FDP: {fdplib.fmt(seq)} (WARP: holes "
              "the jumper punches make the sequential handle's RUs GC victims)")
    if "B" in a.parts:
        al, ii, pi = (byk[("B", k)]["tail"]["ruh"] for k in ("A", "I", "P"))
        pm = byk[("B", "P")]["model"]
        print("  noisy handle (WARP: invalidations in one handle raise the WAF of the others; "
              "with PI they should stay at their own):")
        print(f"    {'handle':10} {'alone':>6} {'II':>6} {'PI':>6} {'PI model':>9} "
              f"{'II/alone':>8} {'PI/alone':>8}")
        for h, name in NAMES["B"].items():
            mod = f"{pm[h][1]:.2f}" if h in pm else "-"
            rat = [f"{x / al[h]:.2f}" if x and al[h] else "-" for x in (ii[h], pi[h])]
            print(f"    {h} {name:8} {fdplib.fmt(al[h]):>6} {fdplib.fmt(ii[h]):>6} "
                  f"{fdplib.fmt(pi[h]):>6} {mod:>9} {rat[0]:>8} {rat[1]:>8}")
        print("    PI model: greedy GC under uniform random writes (" + bblib.WAF_MODEL +
              ")\n    at the handle's own OP (RUs it holds, and its part of the free ones, over "
              "its LBAs); 'alone': the noisy range holds data but is not rewritten")
        print(f"  long sequential stream overwritten in place (the log, its own handle): WAF "
              f"{fdplib.fmt(al[1])} alone, {fdplib.fmt(ii[1])} II, {fdplib.fmt(pi[1])} PI;"
              "\n    above 1, GC took log RUs partly overwritten (the emptiest victims while "
              "the others' RUs hold more): WARP's 'save sequential',\n    GC reclaiming long "
              "sequential streams early, which greedy GC does too")
    fdplib.print_checks(results)
    print("\ntransfers: WAF and the ratios (page counts, not the guest's speed) for this "
          "geometry; WARP's drives are large and their firmware's GC is not greedy, so the "
          "directions compare,\nnot the digits. Not transferable: the pace (MB/s of host "
          "writes, median per run: " + ", ".join(
              f"{r['serial']} {sorted(r['mbps'])[len(r['mbps']) // 2]:.1f}" for r in results)
          + ").")
    path = fdplib.plot(
        [(f"{r['label']} ({r['types']})", r["windows"],
          {h: f"{h} {hname(r, h)}" for h in r["used"]},
          {f"{h} {hname(r, h)}": m[1] for h, m in r["model"].items()}) for r in results],
        f"WARP's workloads on FEMU FDP, {a.size} MiB: WAF per window (dotted: greedy model, "
        "PI)", "fdp-warp")
    for r in results:
        r.pop("mbps")
    print("results: " + str(bblib.save_json("fdp-warp", dict(
        args=vars(a), results=results, citation=CITATION, published=PUBLISHED_3STREAM,
        waf_model=bblib.WAF_MODEL, plot=str(path)), guest=g)))


if __name__ == "__main__":
    main()
