#!/usr/bin/env python3
"""Selective PLP: db_bench fillseq throughput against the size of the PLP region.

The drives are those of plp-dbbench.py (two zoned namespaces, zoned btrfs: RocksDB's data
on ns1 with plp=none, its WAL on ns2 with plp=full; the paper's flash), with a PLP region
of 8, 16, 32, 64 and 128 MiB and the volatile (non-PLP) buffer fixed at --vol-mb (256),
plus a drive without protection (none, the same volatile buffer) for reference, and REF
(no media time: the guest's ceiling). db_bench fillseq, sync=1, as in plp-dbbench.py.

Scaled as plp-dbbench.py is (keys, memtables, media times x --time-scale), with buffers
divided by --scale (8, not 16: the smallest region must stay a whole MiB): on the drives
1..16 MiB of PLP region and 32 MiB volatile. The capacitance column is that of the
unscaled region (idle drives configured with it, worst case, balanced flush).
What transfers: throughput relative to the 32 MiB region (the paper's two WAL zones) and
to none, within a round, and the device's time per Put unscaled; not the ops/s.

Usage: bench/plp-size-sweep.py [--short] [--sizes 8,16,32,64,128] [--rounds 2]
"""

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import plplib  # noqa: E402

CITATION = plplib.CITATION + ": PLP buffer 8-128 MB, non-PLP buffer fixed, db_bench fillseq"
PAPER = "no throughput gain beyond a PLP region of two WAL zones (32 MB)"
KNEE_MB = 32


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="8,16,32,64,128", help="PLP regions, MiB (paper's)")
    ap.add_argument("--vol-mb", type=int, default=256, help="volatile buffer, MiB (paper's)")
    ap.add_argument("--scale", type=int, default=8, help="buffers on the drives: MiB / scale")
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--memtable-kb", type=int, default=256)
    ap.add_argument("--time-scale", type=int, default=50)
    ap.add_argument("--stripe", type=int, default=8, help="zns_stripe")
    ap.add_argument("--flush-pct", type=int, default=70, help="plp_flush_pct")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    ap.add_argument("--short", action="store_true", help="8, 32 and 128 MiB, 500 keys")
    a = ap.parse_args()
    a.sizes = [int(x) for x in a.sizes.split(",")]
    if a.short:
        a.sizes, a.keys = [s for s in a.sizes if s in (8, 32, 128)] or a.sizes, 500
    bblib.require_rounds(a.rounds)
    if KNEE_MB not in a.sizes:
        sys.exit(f"--sizes must include {KNEE_MB} (the paper's knee, the reference column)")
    for s in a.sizes + [a.vol_mb]:
        if s % a.scale:
            sys.exit(f"{s} MiB is not a multiple of --scale {a.scale}")
    return a


def devices(a):
    flash = dict(plplib.PAPER_FLASH, **plplib.TWO_NS, zns_stripe=a.stripe,
                 time_scale=a.time_scale, plp_flush_pct=a.flush_pct)
    mb = plplib.DRIVE_MB
    vol = a.vol_mb // a.scale
    out = [bblib.Device("REF", 3, mb, **dict(flash, **plplib.NO_MEDIA_TIME, time_scale=1)),
           bblib.Device("NONE", 3, mb, **flash, **plplib.mode_props("none", vol, 0))]
    for p in a.sizes:
        out.append(bblib.Device(f"P{p}", 3, mb, **flash,
                                **plplib.mode_props("selective", vol + p // a.scale,
                                                    p // a.scale)))
        # idle, unscaled PLP region: its worst-case hold-up figures (the volatile part
        # does not enter them)
        out.append(bblib.Device(f"CAP{p}", 3, mb, **flash,
                                **plplib.mode_props("selective", p + 16, p)))
    return out


def run_order(a, r):
    order = ["NONE"] + [f"P{p}" for p in a.sizes]
    return ["REF"] + (order if r % 2 == 0 else order[::-1])


def main():
    a = parse_args()
    devs = devices(a)
    script = [plplib.guest_prelude(plplib.db_bench_cmd("fillseq", a.keys, a.memtable_kb), "REF")]
    for r in range(a.rounds):
        script += [f"run {s} {s}-{r}" for s in run_order(a, r)]
    script.append("echo '@@stats end@@'\necho @@end@@\n")
    bblib.log(f"booting: {len(devs)} drives; {a.rounds * len(run_order(a, 0))} db_bench "
              f"fillseq runs of {a.keys} keys, time_scale={a.time_scale} ...")
    g = bblib.Guest("\n".join(script), devs, timeout=14400).run(
        lambda t, l: l.startswith("@@") and not l.startswith("@@stats") and
        bblib.log(f"  {t:6.0f}s {l.strip('@')}"))

    rounds = range(a.rounds)
    ops = {s: [plplib.ops_of(g, f"{s}-{r}", ["fillseq"])["fillseq"] for r in rounds]
           for s in run_order(a, 0)}
    final = g.marks["end"][1]
    ref_us = 1e6 / statistics.median(ops["REF"])
    knee = ops[f"P{KNEE_MB}"]
    print(f"\nselective PLP, db_bench fillseq sync=1, {a.keys} keys, memtable "
          f"{a.memtable_kb} KiB; volatile buffer {a.vol_mb} MiB (paper's; {a.vol_mb // a.scale}"
          f" on the drive); 8 ch x 8 chips, 40/100/40 us, zns_stripe={a.stripe}, time_scale="
          f"{a.time_scale}; {a.rounds} interleaved rounds, median [min-max]")
    print(f"guest ceiling (REF, no media time): {bblib.fmt_spread(ops['REF'], 0)} ops/s")
    print(f"{'PLP MiB':>7} {'on drive':>8} {'ops/s':>13} {'vs none':>17} "
          f"{'vs 32 MiB':>17} {'dev us/Put':>10} {'waits':>6} {'thr/space':>9} {'cap. uF':>8}")
    rows = []
    for s in ["NONE"] + [f"P{p}" for p in a.sizes]:
        xs = ops[s]
        vs_none = [y / x for x, y in zip(ops["NONE"], xs)]
        vs_knee = [y / x for x, y in zip(knee, xs)]
        dev_us = max(0.0, (1e6 / statistics.median(xs) - ref_us) / a.time_scale)
        p = 0 if s == "NONE" else int(s[1:])
        waits = sum(plplib.grew(g, s, f"{s}-{r}", "plp-buffer-waits") for r in rounds)
        thr = sum(plplib.grew(g, s, f"{s}-{r}", "plp-flushes-threshold") for r in rounds)
        space = sum(plplib.grew(g, s, f"{s}-{r}", "plp-flushes-space") for r in rounds)
        cap = final[f"CAP{p}"]["plp-worst-balanced-capacitance-uf"] if p else 0
        rows.append(dict(plp_mb=p, ops=bblib.spread(xs), vs_none=bblib.spread(vs_none),
                         vs_knee=bblib.spread(vs_knee), device_us_per_put=dev_us,
                         buffer_waits=waits, flushes_threshold=thr, flushes_space=space,
                         capacitance_uf=cap))
        print(f"{'none' if not p else p:>7} {p // a.scale:>8} {bblib.fmt_spread(xs, 0):>13} "
              f"{bblib.fmt_spread(vs_none, 2):>17} {bblib.fmt_spread(vs_knee, 2):>17} "
              f"{dev_us:>10.0f} {waits:>6} {thr:>4}/{space:<4} {cap:>8}")
    print("'vs none', 'vs 32 MiB': ops/s over that drive's, round by round; 'dev us/Put': the "
          "drive's own time per Put, unscaled; 'waits': writes that waited for buffer space; "
          "'thr/space': write-outs of a region past plp_flush_pct / out of space (all "
          "rounds); 'cap. uF': hold-up capacitance of the unscaled region (worst case).")
    above = [r for r in rows if r["plp_mb"] > KNEE_MB]
    below = [r for r in rows if 0 < r["plp_mb"] < KNEE_MB]
    print(f"\npublished ({CITATION}): {PAPER}")
    if above:
        print("here: beyond 32 MiB " + ", ".join(
            f"{r['plp_mb']} MiB x{r['vs_knee']['median']:.2f}" for r in above)
            + " of 32 MiB's throughput" + ("; below it " + ", ".join(
                f"{r['plp_mb']} MiB x{r['vs_knee']['median']:.2f}" for r in below)
                if below else ""))
    print(f"transfers: the ratios within a round and the device's time per Put; ops/s are a "
          f"TCG guest's with media times x {a.time_scale}.")
    print("results: " + str(bblib.save_json("plp-size-sweep", dict(
        args=vars(a), rows=rows, ref=ops["REF"], citation=CITATION, paper=PAPER), guest=g)))


if __name__ == "__main__":
    main()
