#!/usr/bin/env python3
"""Steady-state random writes on the blackbox FTL, in femu-sim: GC's cost to the host.

What most SSD papers measure, and what issue 33's paced GC is judged by. Each drive is
filled sequentially (128 KiB, QD32), then written with 4 KiB uniform random writes at QD32:
--warm capacities to reach steady state, then --caps capacities measured in 100 ms windows
of virtual time. Drives: every blackbox preset (dc-tlc, dc-tlc-gen4, ll-slc: their flash,
controller and OP) and the default geometry at 7, 15 and 28 % OP, each of --size-gib
(a dc-tlc line is 256 MiB: 32 GiB gives ~140 lines).

Per drive it prints, beside the figures saved with --save-baseline (today's code, for a
change to be judged against):
- steady IOPS, and the least 100 ms window over the mean (issue 33: >= 0.8);
- write latency p50, p99.9, p99.99, max, and p99.9 / p50 (issue 33: <= 5);
- the chips' busy share over the measured phase (issue 33: >= 95 % while GC has work),
  and the share of their time in reads (all GC's: the host only writes), programs, erases;
- the windowed WAF beside greedy GC's analytic one at the drive's raw / exposed ratio
  (bblib.greedy_waf: the large-unit limit, which our lines of thousands of pages reach).

Compare GC pacings with --dev gc_pacing=burst,streams=shared (FEMU's FTL, the defaults
until issue 33, which bench/ftl-steady-baseline.json was saved with) against the defaults
(gc_pacing=proportional, streams=host-gc).

What transfers: ratios (tail / median, busy shares, WAF); absolute IOPS follow the
presets' flash and controller, which model published drives (docs/device.md).

Usage: bench/ftl-steady.py [--short] [--size-gib 32] [--warm 1] [--caps 2]
                           [--drives a,b] [--dev k=v,...] [--save-baseline]
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import simlib  # noqa: E402

BASELINE = Path(__file__).resolve().parent / "ftl-steady-baseline.json"
DRIVES = {
    "dc-tlc": dict(flash_preset="dc-tlc"),
    "dc-tlc-gen4": dict(flash_preset="dc-tlc-gen4"),
    "ll-slc": dict(flash_preset="ll-slc"),
    "default-op7": dict(op_pcent=7),
    "default-op15": dict(op_pcent=15),
    "default-op28": dict(op_pcent=28),
}
PCTS = (("p50", "50.000000"), ("p999", "99.900000"), ("p9999", "99.990000"))


def parse_dev(text):
    out = {}
    for item in filter(None, (text or "").split(",")):
        k, _, v = item.partition("=")
        out[k] = v
    return out


def measure(name, size_gib, warm, caps, extra):
    dev = dict(femu_mode=1, devsz_mb=size_gib * 1024, **DRIVES[name], **extra)
    rand = dict(rw="randwrite", bs="4k", iodepth=32, norandommap=None, size="100%")
    jobs = [("fill", dict(rw="write", bs="128k", iodepth=32, size="100%")),
            ("warm", dict(stonewall=None, io_size="%dm" % (warm * size_gib * 1024), **rand)),
            ("steady", dict(stonewall=None, io_size="%dm" % (caps * size_gib * 1024),
                            log_avg_msec=100, **rand))]
    res, wall = simlib.run(dev, jobs)
    w, s = simlib.job(res, "warm")["stats"], simlib.job(res, "steady")
    st, lat = s["stats"], s["write"]["clat_ns"]
    busy = {k: st[k] - w.get(k, 0) for k in ("nand_read_busy_ns", "nand_program_busy_ns",
                                             "nand_erase_busy_ns")}
    chips = sum(1 for k in st if k.startswith("chip") and k.endswith("_busy_ns"))
    total = sum(busy.values())
    iops = s["write"]["iops"]
    series = [x for x in s["series"]["write_iops"][1:-1]]     # whole windows only
    r = dict(kiops=iops / 1e3,
             min_window=min(series) / iops if series and iops else 0,
             max_us=lat["max"] / 1e3,
             busy=total / (chips * s["elapsed_ns"]) if s["elapsed_ns"] else 0,
             read_share=busy["nand_read_busy_ns"] / total if total else 0,
             erase_share=busy["nand_erase_busy_ns"] / total if total else 0,
             waf=simlib.waf_between(w, st),
             wall_s=wall, nand_ops=simlib.nand_ops(st) - simlib.nand_ops(w))
    for key, p in PCTS:
        r[key + "_us"] = lat["percentile"][p] / 1e3
    r["tail_ratio"] = r["p999_us"] / r["p50_us"] if r["p50_us"] else 0
    r["lines"] = st["total_lines"]
    r["alpha"] = data_alpha(res, r["lines"])
    r["model_waf"] = bblib.greedy_waf(r["alpha"]) if r["alpha"] > 1 else 0
    return r


def data_alpha(res, lines):
    """Flash that can hold data over the exposed capacity: every line but the open one and
    those forced GC keeps free (gc_thres_pcent_high's share, at least 2; FTL_RESERVE_LINES)."""
    d = res["device"]
    line = 1
    for k in ("nchs", "luns_per_ch", "pls_per_lun", "pgs_per_blk", "secs_per_pg", "secsz"):
        line *= int(d[k])
    high = int(d.get("gc_thres_pcent_high") or 99)
    usable = lines - max(lines * (100 - high) // 100, 2) - 1
    return usable * line / (int(d["devsz_mb"]) * 2**20)


COLS = (("kiops", "kIOPS", "%.1f"), ("min_window", "min/mean", "%.2f"),
        ("p50_us", "p50 us", "%.0f"), ("p999_us", "p99.9 us", "%.0f"),
        ("p9999_us", "p99.99", "%.0f"), ("max_us", "max us", "%.0f"),
        ("tail_ratio", "p99.9/p50", "%.1f"), ("busy", "busy", "%.2f"),
        ("read_share", "reads", "%.2f"), ("erase_share", "erases", "%.2f"),
        ("waf", "WAF", "%.2f"), ("model_waf", "model", "%.2f"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="8 GiB drives, 1 + 1 capacities")
    ap.add_argument("--size-gib", type=int, help="exposed capacity (default 32; short 8)")
    ap.add_argument("--warm", type=float, help="capacities of random writes before (1)")
    ap.add_argument("--caps", type=float, help="capacities measured (2; short 1)")
    ap.add_argument("--drives", default=",".join(DRIVES))
    ap.add_argument("--dev", help="extra properties for every drive (e.g. gc_policy=fifo)")
    ap.add_argument("--save-baseline", action="store_true",
                    help="save the figures as the baseline later runs are printed beside")
    a = ap.parse_args()
    size = a.size_gib or (8 if a.short else 32)
    warm = a.warm if a.warm is not None else 1
    caps = a.caps if a.caps is not None else (1 if a.short else 2)
    names = a.drives.split(",")
    for n in names:
        if n not in DRIVES:
            sys.exit(f"--drives: unknown '{n}': allowed {', '.join(DRIVES)}")
    if size < 1 or warm < 0 or caps <= 0:
        sys.exit("--size-gib must be >= 1, --warm >= 0 and --caps > 0")
    base = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    key = f"{size}g-{warm:g}-{caps:g}"
    print(f"blackbox drives of {size} GiB: fill, {warm:g} capacity of 4 KiB random writes at "
          f"QD32, then {caps:g} measured; extra properties: {a.dev or 'none'}")
    print("%-13s %-9s" % ("drive", "") + " ".join("%9s" % c[1] for c in COLS))
    rows = {}
    for n in names:
        r = measure(n, size, warm, caps, parse_dev(a.dev))
        rows[n] = r
        print("%-13s %-9s" % (n, "now") + " ".join("%9s" % (f % r[k]) for k, _, f in COLS))
        old = base.get(key, {}).get(n)
        if old and not a.save_baseline:
            print("%-13s %-9s" % ("", "baseline") +
                  " ".join("%9s" % (f % old[k]) for k, _, f in COLS))
        sys.stdout.flush()
    ops = sum(r["nand_ops"] for r in rows.values())
    wall = sum(r["wall_s"] for r in rows.values())
    print(f"femu-sim: {wall:.0f} s wall, {ops / 1e6:.0f} M NAND ops in the measured phases")
    if a.save_baseline:
        base.setdefault(key, {}).update(rows)
        BASELINE.write_text(json.dumps(base, indent=1, sort_keys=True) + "\n")
        print("baseline saved:", BASELINE)
    print("json:", bblib.save_json("ftl-steady", dict(args=vars(a), rows=rows)))


if __name__ == "__main__":
    main()
