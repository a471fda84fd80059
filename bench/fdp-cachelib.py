#!/usr/bin/env python3
"""FDP: a flash cache's writes (CacheLib's KV cache) without placement and with its two
engines on two handles, at 100% and 50% of the LBA space in use.

CacheLib's flash cache (Navy) has two engines: a small-object cache (SOC, BigHash) that
rewrites 4 KiB buckets at random in a small region (--soc-pct % of the cache, 4 as in the
study), and a large-object cache (LOC, BlockCache) that writes large regions as a log
(--loc-kb KiB writes, 256 as the study's deviceMaxWriteSize) wrapping over the rest of the
cache. The cache spans --utils % of the LBAs from LBA 0 (100: the whole drive; 50: half
of it never written, spare the drive can use). --soc-share % of the bytes written go to
the SOC (default 50; the study's traces do not give the split, so it is a parameter).
Both run at once in one fio (fio's flow= keeps their ratio write by write), so their
pages interleave in the drive as they would without placement.

One guest holds one FDP drive per (utilization, case), all alike (handles ii:ii, 7% OP).
Cases: no placement (both engines through handle 0), and FDP (LOC on handle 0, SOC on
handle 1, as CacheLib does with FDP on). Each drive: the cache region filled
sequentially, then windows of one pass of the LOC log each until the device's WAF of a
window moved by at most --tol from the one before, twice.

Prints the device's WAF (and each engine's, with FDP) over the last --last-windows
windows beside the figures published by the study's authors, and the ratio without /
with placement. Plot of each handle's WAF per window: bench/results/fdp-cachelib-*.png.

Usage: bench/fdp-cachelib.py [--short] [--utils 100,50] [--soc-pct 4] [--soc-share 50]
       [--loc-kb 256] [--size 64]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import fdplib  # noqa: E402
from fdplib import PAGE  # noqa: E402

# The study: M. Allison, A. George, J. Gonzalez, D. Helmick, V. Kumar, R. Nair, V. Shah:
# Towards Efficient Flash Caches with Emerging NVMe Flexible Data Placement SSDs, EuroSys
# 2025 (KV cache traces, SOC 4%, a 1.88 TB FDP SSD). Its abstract: device WAF ~1 with
# FDP. The per-utilization figures are the same authors' in CacheLib's documentation
# ("FDP enabled cache", section "Results with and without FDP"): util -> (FDP, no FDP).
CITATION = ("Allison et al., Towards Efficient Flash Caches with Emerging NVMe Flexible "
            "Data Placement SSDs, EuroSys 2025 (KV cache, SOC 4%); figures from the "
            "authors' CacheLib guide 'FDP enabled cache', 'Results with and without FDP'")
PUBLISHED = {100: (1.03, 3.22), 50: (1.03, 1.22)}
CASES = [("N", "no placement"), ("F", "FDP: LOC 0, SOC 1")]


def serial(util, key):
    return f"KV{util}{key}"


def layout(a, util):
    """(SOC pages, LOC pages) of the cache at util % of the drive, SOC first."""
    pages = a.size * (1 << 20) // PAGE
    cache = pages * util // 100 // 64 * 64
    soc = max(64, round(cache * a.soc_pct / 100 / 64) * 64)
    return soc, cache - soc


def guest_script(a):
    steps = []
    for util in a.utils:
        soc, loc = layout(a, util)
        # one window: one pass of the LOC log and the SOC writes that go with it
        soc_win = round(loc * a.soc_share / (100 - a.soc_share))
        weight = soc_win / (loc * PAGE / (a.loc_kb * 1024))
        for key, _ in CASES:
            s = serial(util, key)
            soc_o = fdplib.fio_base("N", 1 if key == "F" else None)
            loc_o = fdplib.fio_base("N", 0 if key == "F" else None)
            soc_r = f"--offset=0 --size={soc * 4}k"
            loc_r = f"--offset={soc * 4}k --size={loc * 4}k"
            steps.append(f"""
B=$(dev_of {s}) || exit 1; N=$(ng_of $B)
fio --name=fill-soc {soc_o} {soc_r} --rw=write --bs=128k --iodepth=4 \\
    --name=fill-loc {loc_o} {loc_r} --rw=write --bs={a.loc_kb}k --iodepth=4 \\
    > /tmp/fill.out || {{ cat /tmp/fill.out; exit 1; }}
fdp_windows {s} $B {a.min_windows} {a.max_windows} {a.tol} fio \\
    --name=loc {loc_o} {loc_r} --rw=write --bs={a.loc_kb}k --iodepth=2 \\
    --io_size={loc * 4}k {fdplib.flow(1)} \\
    --name=soc {soc_o} {soc_r} --rw=randwrite --bs=4k --iodepth={a.qd} \\
    --io_size={soc_win * 4}k {fdplib.flow(weight)} || exit 1""")
    return fdplib.GUEST + "".join(steps) + "\necho @@end@@\n"


def run_case(a, g, util, key, label):
    s = serial(util, key)
    ms = fdplib.marks(g, s, s)
    cap = a.size * (1 << 20) // PAGE
    wins = fdplib.windows(ms, 2, cap)
    t = fdplib.tail(ms, 2, cap, last_windows=a.last_windows)
    end = ms[-1][1]
    soc, loc = layout(a, util)
    r = dict(util=util, key=key, label=label, serial=s, windows=wins, tail=t,
             steady=fdplib.steady_note(g, s), caps=wins[-1]["caps"] if wins else 0,
             lateness=bblib.lateness(end), ru_pages=end["fdp-ru-pages"],
             soc_pages=soc, loc_pages=loc, mbps=[w["mbps"] for w in wins],
             soc_share_measured=None, model=None, checks=fdplib.check_counters(end, 2),
             drive=fdplib.drive_note(end, cap, a.op))
    if key == "F":
        # the SOC is uniform random on its own handle: greedy's figure at its own OP; the
        # LOC log's RUs empty in order (WAF 1); the device: the two by their shares
        alpha = fdplib.effective_alpha(t, 1, soc, end)
        r.update(soc_alpha=alpha, soc_model=bblib.greedy_waf(alpha),
                 soc_share_measured=t["share"][1])
        r["model"] = t["share"][1] * r["soc_model"] + t["share"][0] * 1.0
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # RUs of 1 MiB (4 chips x 64 pages): four LOC writes each, so that LOC and SOC pages
    # share RUs as they do on a drive whose RUs are far larger than the writes
    fdplib.add_args(ap, size=256, short_size=64, pgs_per_blk=64, luns=2, min_w=6, max_w=20,
                    short_min_w=4, short_max_w=10)
    ap.add_argument("--utils", default="100,50",
                    help="%% of the LBAs the cache spans, one case each (default 100,50)")
    ap.add_argument("--soc-pct", type=float, default=4, help="SOC, %% of the cache")
    ap.add_argument("--soc-share", type=float, default=50,
                    help="%% of the bytes written that go to the SOC (default 50)")
    ap.add_argument("--loc-kb", type=int, default=256, help="LOC write size, KiB")
    ap.add_argument("--last-windows", type=int, default=3,
                    help="the figures are over the last this many windows (default 3)")
    a = fdplib.parse_args(ap)
    try:
        a.utils = [int(x) for x in a.utils.split(",")]
    except ValueError:
        sys.exit(f"--utils: '{a.utils}' is not a list of integers")
    if not all(10 <= u <= 100 for u in a.utils) or len(set(a.utils)) != len(a.utils):
        sys.exit("--utils: each in 10..100, once")
    if not 1 <= a.soc_pct <= 50 or not 1 <= a.soc_share <= 95:
        sys.exit("--soc-pct must be in 1..50, --soc-share in 1..95")
    if a.loc_kb % 4 or not 4 <= a.loc_kb <= 4096:
        sys.exit("--loc-kb must be a multiple of 4 in 4..4096")
    if a.last_windows < 1:
        sys.exit("--last-windows must be at least 1")
    devs = [fdplib.device(a, serial(u, key), "ii:ii") for u in a.utils for key, _ in CASES]
    bblib.log(f"booting one guest: {len(devs)} FDP drives of {a.size} MiB, caches at "
              f"{a.utils}% of the LBAs; each: fill, then SOC+LOC windows until WAF is "
              "steady ...")

    def progress(t, line):
        if " window " in line or line.endswith(" steady"):
            bblib.log(f"  {t:6.1f}s {line.strip()}")

    g = bblib.Guest(guest_script(a), devs, timeout=a.timeout).run(progress)
    results = [run_case(a, g, u, key, label) for u in a.utils for key, label in CASES]

    print(f"\nFDP flash cache: {a.size} MiB drives, {a.nchs} ch x {a.luns} chips, pgs_per_blk="
          f"{a.pgs_per_blk} (RU {results[0]['ru_pages']} pages), handles ii:ii, OP {a.op}%, "
          f"gc_thres {a.gc_thres}; SOC {a.soc_pct:g}% of the cache, 4 KiB random QD{a.qd}, "
          f"{a.soc_share:g}% of the bytes;\nLOC the rest, {a.loc_kb} KiB sequential QD2 "
          f"wrapping; cache filled, then windows of one LOC pass until the device's WAF "
          f"moved by <= {a.tol:.0%} twice; figures over the last {a.last_windows} windows")
    print(results[0]["drive"])
    print(f"{'util':>4} {'case':20} {'WAF':>5} {'published':>9} {'SOC':>5} {'LOC':>5} "
          f"{'model':>5} {'caps':>6} {'late p50/p99/max us':>19}")
    for r in results:
        t = r["tail"]
        pub = PUBLISHED.get(r["util"])
        pubs = "-" if pub is None else f"{pub[0 if r['key'] == 'F' else 1]:.2f}"
        soc_w, loc_w = (t["ruh"][1], t["ruh"][0]) if r["key"] == "F" else (None, None)
        print(f"{r['util']:4d} {r['label']:20} {fdplib.fmt(t['waf']):>5} {pubs:>9} "
              f"{fdplib.fmt(soc_w):>5} {fdplib.fmt(loc_w):>5} {fdplib.fmt(r['model']):>5} "
              f"{r['caps']:5.1f}{r['steady'] or ' '} {r['lateness']:>19}")
    print("SOC/LOC: each engine's WAF (its handle's pages written and moved over its host "
          "pages); model: greedy GC under uniform random writes\n(" + bblib.WAF_MODEL +
          ") for the SOC at its own OP (RUs it holds, and its part of the free ones, over "
          "its LBAs), 1 for the LOC, by "
          "their shares; caps: capacities after the fill ('!': not steady)")
    print(f"\npublished: {CITATION}")
    print(f"{'util':>4} {'no placement / FDP':>20} {'published':>10}")
    for u in a.utils:
        rs = {r["key"]: r["tail"]["waf"] for r in results if r["util"] == u}
        pub = PUBLISHED.get(u)
        print(f"{u:4d} {rs['N'] / rs['F']:20.2f} "
              f"{'-' if pub is None else f'{pub[1] / pub[0]:.2f}':>10}")
    fdplib.print_checks(results)
    print("\ntransfers: WAF and the ratios (counts of pages, not the guest's speed), for this "
          "geometry and this SOC share; the study's figures come from a 1.88 TB drive "
          "running\nproduction traces, ours from a small drive and a synthetic split, so the "
          "shape (FDP ~1 at any utilization, no placement rising with it) is what compares."
          "\nNot transferable: the pace (MB/s of host writes, median per run: " + ", ".join(
              f"{r['serial']} {sorted(r['mbps'])[len(r['mbps']) // 2]:.1f}" for r in results)
          + ").")
    path = fdplib.plot(
        [(f"cache at {r['util']}% of LBAs: {r['label']}", r["windows"],
          {0: "handle 0" + (" (LOC)" if r["key"] == "F" else " (all)")} |
          ({1: "handle 1 (SOC)"} if r["key"] == "F" else {}),
          {"handle 1 (SOC)": r["soc_model"]} if r["key"] == "F" else {}) for r in results],
        f"FDP flash cache (SOC {a.soc_pct:g}% of the cache, {a.soc_share:g}% of writes), "
        f"{a.size} MiB: WAF per window (dotted: greedy model at the SOC's OP)", "fdp-cachelib")
    for r in results:
        r.pop("mbps")
    print("results: " + str(bblib.save_json("fdp-cachelib", dict(
        args=vars(a), results=results, citation=CITATION, published=PUBLISHED,
        waf_model=bblib.WAF_MODEL, plot=str(path)), guest=g)))


if __name__ == "__main__":
    main()
