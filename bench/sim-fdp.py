#!/usr/bin/env python3
"""FDP at drive scale in femu-sim: CacheLib's flash cache (SOC/LOC) at 100 % and 50 %
utilization, and WARP's adversarial three streams, with and without placement (WAF).

The experiments of bench/fdp-cachelib.py and bench/fdp-warp.py, on an FDP drive of
--size-gb GiB (8 ch x 8 chips, 4 KiB pages, RU = --pgs-per-blk x 64 pages, 7 % OP, GC
only when forced, as fdplib.py sets it) instead of the emulator's 64-256 MiB:
  cachelib  SOC: 4 KiB random writes over --soc-pct % of the cache; LOC: 256 KiB
            sequential writes wrapping over the rest; the cache spans 100 % or 50 % of the
            LBAs; --soc-share % of the bytes to the SOC. Cases: no placement (both on
            handle 0) and FDP (LOC handle 0, SOC handle 1).
  warp      seq: 128 KiB sequential over the first 90 % of the LBAs; rand: 4 KiB random
            over the last 10 %; jumper: 4 KiB random overwrites of the sequential range,
            80 % to its first 20 %, 10 % to the next 20 %, 10 % to the last 60 % (three
            uniform writers: femu-sim has no zoned distribution); equal byte shares.
            Cases: no placement, jumper sharing handle 0, FDP (three handles).
Each drive is filled (every range on its handle), then written in --windows windows, a
window being one pass of the sequential stream (LOC, seq) and the others' bytes by their
shares. femu-sim has no flow=: every stream is a QD1 writer paced by thinktime at its
share of one rate, and the shares measured are printed. Figures: the device's and each
handle's WAF over the last --last windows.

Published (as cited in fdp-cachelib.py and fdp-warp.py): CacheLib WAF with FDP / without
1.03 / 3.22 at 100 % utilization, 1.03 / 1.22 at 50 %; WARP's three streams with FDP:
WAF 4.49 and 2.58 on two commercial drives.
What transfers: WAF, a count of pages, for this geometry and this SOC share (ours; the
study does not give it); the shape (FDP ~1 at any utilization for the cache, no
placement rising with utilization; three streams on handles not helping) compares.

Usage: bench/sim-fdp.py [--short] [--parts cachelib,warp] [--size-gb 32]
       [--pgs-per-blk 64] [--windows 6] [--last 2] [--jobs 2]
Short: 1 GiB, RU of 1024 pages (4 MiB), 4 windows, about a minute on 2 cores.
Full: 32 GiB, RU of 4096 pages (16 MiB), 6 windows; about an hour on 2 cores.
"""

import argparse
import concurrent.futures
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bblib  # noqa: E402
import simlib  # noqa: E402

PAGE = 4096


def _load(name, file):
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


_cl, _wp = _load("fdp_cachelib", "fdp-cachelib.py"), _load("fdp_warp", "fdp-warp.py")
CL_CITATION, CL_PUBLISHED = _cl.CITATION, _cl.PUBLISHED
WARP_CITATION, WARP_PUBLISHED = _wp.CITATION, _wp.PUBLISHED_3STREAM


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", default="cachelib,warp")
    ap.add_argument("--size-gb", type=int, help="drive GiB (default 32, short 1)")
    ap.add_argument("--pgs-per-blk", type=int, help="default 64 (short 16)")
    ap.add_argument("--windows", type=int, help="windows after the fill (default 6, short 4)")
    ap.add_argument("--last", type=int, default=2, help="figures over the last N windows")
    ap.add_argument("--utils", default="100,50")
    ap.add_argument("--soc-pct", type=float, default=4)
    ap.add_argument("--soc-share", type=float, default=50)
    ap.add_argument("--rate-mbps", type=float, default=400,
                    help="host write rate the streams are paced at, MB/s (all together)")
    ap.add_argument("--jobs", type=int, default=2, help="femu-sim runs at once")
    ap.add_argument("--short", action="store_true")
    a = ap.parse_args()
    form = dict(size_gb=1, pgs_per_blk=16, windows=4) if a.short else \
        dict(size_gb=32, pgs_per_blk=64, windows=6)
    for k, v in form.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.parts = a.parts.split(",")
    a.utils = [int(x) for x in a.utils.split(",")]
    if not 1 <= a.last <= a.windows:
        sys.exit("--last must be 1..--windows")
    return a


def device(a, types):
    return dict(femu_mode=4, devsz_mb=a.size_gb * 1024, lba_index=1, nchs=8, luns_per_ch=8,
                pgs_per_blk=a.pgs_per_blk, op_pcent=7, fdp_ruh_types=types,
                pg_rd_lat=10000, pg_wr_lat=20000, blk_er_lat=200000,
                gc_thres_pcent=99, gc_thres_pcent_high=99)


def cachelib_streams(a, util):
    """{stream: (first page, pages, bs KiB, rw, share %)}, SOC first."""
    pages = a.size_gb * (1 << 30) // PAGE
    cache = pages * util // 100 // 64 * 64
    soc = max(64, round(cache * a.soc_pct / 100 / 64) * 64)
    return dict(soc=(0, soc, 4, "randwrite", a.soc_share),
                loc=(soc, cache - soc, 256, "write", 100 - a.soc_share))


def warp_streams(a):
    pages = a.size_gb * (1 << 30) // PAGE
    seq = pages * 9 // 10 // 32 * 32
    j = 100 / 3
    z1, z2 = seq // 5, seq * 2 // 5
    return dict(seq=(0, seq, 128, "write", j), rand=(seq, pages - seq, 4, "randwrite", j),
                j80=(0, z1, 4, "randwrite", 0.8 * j), j10a=(z1, z2 - z1, 4, "randwrite", 0.1 * j),
                j10b=(z2, seq - z2, 4, "randwrite", 0.1 * j))


def jobs_for(a, streams, place, seq, fills):
    """Fill jobs, then --windows groups of paced writers (one pass of `seq` each)."""
    jobs = []
    for name in fills:
        first, n, _, _, _ = streams[name]
        o = dict(rw="write", bs="128k", iodepth=4, offset=first * PAGE, size=n * PAGE)
        if place[name] is not None:
            o.update(fdp=1, fdp_pli=place[name])
        jobs.append((f"fill-{name}", o))
    seq_bytes = streams[seq][1] * PAGE
    rate = a.rate_mbps * 1e6 / 1e9          # bytes per ns, all streams
    for w in range(a.windows):
        for i, (name, (first, n, bs, rw, share)) in enumerate(streams.items()):
            nbytes = round(seq_bytes * share / streams[seq][4] / (bs * 1024)) * bs * 1024
            period_us = bs * 1024 / (rate * share / 100) / 1000
            o = dict(rw=rw, bs=f"{bs}k", iodepth=1, offset=first * PAGE, size=n * PAGE,
                     io_size=nbytes, thinktime=max(1, int(period_us)), norandommap=None)
            if place[name] is not None:
                o.update(fdp=1, fdp_pli=place[name])
            if i == 0:
                o = dict(stonewall=None, **o)
            jobs.append((f"w{w}-{name}", o))
    return jobs


def handles(stats):
    return sorted(int(k[3:-len("_host_pages_written")]) for k in stats
                  if k.startswith("ruh") and k.endswith("_host_pages_written"))


def run_case(a, part, key, label, types, streams, place, seq, fills):
    t0 = time.monotonic()
    res, _ = simlib.run(device(a, types), jobs_for(a, streams, place, seq, fills))
    ends = []                                   # stats at each window's end
    for w in range(-1, a.windows):
        pre = "fill-" if w < 0 else f"w{w}-"
        js = [j for j in res["jobs"] if j["jobname"].startswith(pre)]
        ends.append(max(js, key=lambda j: j["job_start_ns"] + j["elapsed_ns"])["stats"])
    hs = handles(ends[-1])

    def waf(s0, s1, h=None):
        p = "" if h is None else f"ruh{h}_"
        host = s1[p + "host_pages_written"] - s0[p + "host_pages_written"]
        if h is None:
            nand = s1["nand_pages_written"] - s0["nand_pages_written"]
        else:
            nand = host + s1[p + "gc_pages_moved"] - s0[p + "gc_pages_moved"]
        return nand / host if host else None

    wins = [dict(waf=waf(ends[i], ends[i + 1]),
                 ruh={h: waf(ends[i], ends[i + 1], h) for h in hs}) for i in range(a.windows)]
    s0, s1 = ends[-1 - a.last], ends[-1]
    written = {}
    for j in res["jobs"]:
        if j["jobname"][0] == "w" and int(j["jobname"][1:].split("-")[0]) >= a.windows - a.last:
            name = j["jobname"].split("-", 1)[1]
            written[name] = written.get(name, 0) + j["write"]["io_bytes"]
    tot = sum(written.values())
    return dict(part=part, key=key, label=label, waf=waf(s0, s1),
                ruh={h: waf(s0, s1, h) for h in hs}, windows=wins,
                shares={k: 100 * v / tot for k, v in written.items()},
                wall_s=time.monotonic() - t0)


def cases(a):
    out = []
    if "cachelib" in a.parts:
        for u in a.utils:
            st = cachelib_streams(a, u)
            out.append(("cachelib", f"{u}N", f"{u} %: no placement", "ii:ii", st,
                        dict(soc=None, loc=None), "loc", ("soc", "loc")))
            out.append(("cachelib", f"{u}F", f"{u} %: FDP (LOC 0, SOC 1)", "ii:ii", st,
                        dict(soc=1, loc=0), "loc", ("soc", "loc")))
    if "warp" in a.parts:
        st = warp_streams(a)
        for key, label, p in (("N", "3 streams: no placement", (None, None, None)),
                              ("S", "3 streams: jumper on 0", (0, 1, 0)),
                              ("F", "3 streams: 3 handles", (0, 1, 2))):
            place = dict(seq=p[0], rand=p[1], j80=p[2], j10a=p[2], j10b=p[2])
            out.append(("warp", key, label, "ii:ii:ii", st, place, "seq", ("seq", "rand")))
    return out


def fmt(x):
    return "-" if x is None else f"{x:.2f}"


def main():
    a = parse_args()
    t0 = time.monotonic()
    cs = cases(a)
    bblib.log(f"{len(cs)} femu-sim runs ({a.size_gb} GiB FDP drives, {a.windows} windows), "
              f"{a.jobs} at once ...")
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        results = list(ex.map(lambda c: run_case(a, *c), cs))
    ru = a.pgs_per_blk * 64
    print(f"\nFDP at scale (femu-sim): {a.size_gb} GiB, 8 ch x 8 chips, RU {ru} pages "
          f"({ru * PAGE >> 20} MiB), OP 7 %, GC when forced; {a.windows} windows after the "
          f"fill, WAF over the last {a.last}")
    print(f"{'case':36} {'WAF':>5} {'published':>9} {'per handle':>24} {'shares % measured':>32}"
          f" {'wall s':>6}")
    for r in results:
        pub = "-"
        if r["part"] == "cachelib":
            p = CL_PUBLISHED.get(int(r["key"][:-1]))
            pub = "-" if p is None else f"{p[0 if r['key'].endswith('F') else 1]:.2f}"
        elif r["key"] == "F":
            pub = "/".join(f"{x:.2f}" for x in WARP_PUBLISHED)
        hs = " ".join(f"{h}:{fmt(w)}" for h, w in r["ruh"].items() if w is not None)
        sh = " ".join(f"{k} {v:.0f}" for k, v in r["shares"].items())
        print(f"{r['part'] + ' ' + r['label']:36} {fmt(r['waf']):>5} {pub:>9} {hs:>24} "
              f"{sh:>32} {r['wall_s']:6.0f}")
    print("per window, device WAF: " + "; ".join(
        f"{r['part']} {r['key']}: " + " ".join(fmt(w["waf"]) for w in r["windows"])
        for r in results))
    print(f"\npublished: {CL_CITATION}: WAF FDP / no FDP " + ", ".join(
        f"{u} %: {f:.2f} / {n:.2f}" for u, (f, n) in CL_PUBLISHED.items()))
    print(f"published: {WARP_CITATION}: three streams with FDP, WAF "
          f"{WARP_PUBLISHED[0]:.2f} and {WARP_PUBLISHED[1]:.2f} on two drives")
    wall = time.monotonic() - t0
    print(f"wall time: {wall:.0f} s")
    plot(a, results)
    print("results: " + str(bblib.save_json("sim-fdp", dict(
        args=vars(a), results=results, wall_s=wall, cachelib_citation=CL_CITATION,
        cachelib_published=CL_PUBLISHED, warp_citation=WARP_CITATION,
        warp_published=WARP_PUBLISHED))))


def plot(a, results):
    plt = bblib.pyplot()
    if not plt:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for r in results:
        ax.plot(range(1, a.windows + 1), [w["waf"] for w in r["windows"]], "o-",
                label=f"{r['part']} {r['label']}")
    ax.set_xlabel("window (one pass of the sequential stream)")
    ax.set_ylabel("device WAF")
    ax.set_title(f"FDP in femu-sim, {a.size_gb} GiB")
    ax.legend(fontsize=7)
    bblib.save_plot(fig, "sim-fdp")


if __name__ == "__main__":
    main()
