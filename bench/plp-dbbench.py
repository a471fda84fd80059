#!/usr/bin/env python3
"""RocksDB db_bench (fillseq, overwrite) on a zoned drive with none, full and selective PLP.

Each drive has two zoned namespaces with a zoned btrfs each: RocksDB's data (SSTs,
MANIFEST) on namespace 1, its write-ahead log on namespace 2. The three configurations
share one write buffer of W:
  none       plp=none       W of volatile buffer: a Flush (every fsync) waits for programs
  full       plp=full       W of PLP region: every write protected, a Flush has nothing to do
  selective  plp=none:full  --plp-mb of PLP region for the WAL namespace (the paper's two
                            WAL zones), W minus that of volatile buffer for the data
db_bench puts with sync=1 (each Put returns once its WAL record is fsynced: the writes PLP
exists for), keys of 100 bytes and values of 800, one thread, no compression; the drives
are made afresh (mkfs) before every run.

Scaled for a TCG guest, and how:
  - keys: --keys (1000) instead of the paper's 3M, and memtables / target files of
    --memtable-kb (256 KiB) instead of 8 MiB, so that a run still flushes memtables;
  - buffers: W / --scale (16) on the drives measured, so that a run writes several times
    its buffer as the paper's runs did (a run writes about 35 KB per Put: btrfs's fsync
    log dominates); the capacitance is that of the paper's sizes, unscaled (read from
    idle drives configured with them: the device's worst case, a full PLP region flushed
    by the balanced method);
  - time: every media time x --time-scale (50), so that the drive, not the guest's 3-6 ms
    of CPU per synced Put, is what differs between the configurations. A drive with no
    media time (REF, zoned, no plp) measures that guest ceiling in the same guest.
What transfers: the ordering and the ratios to none within a round, and the device's own
time per Put, unscaled ((1/ops - 1/ops of REF) / time_scale), to which a real host adds
its own CPU time; not the ops/s. The flash is the paper's (8 x 8 chips, 40/100/40 us,
16 MiB zones), a zone over --stripe (8) chips: one on each channel.

Rounds are interleaved: REF, then every buffer size with the three configurations in an
order that alternates between rounds.

Usage: bench/plp-dbbench.py [--short] [--sizes 64,128,256,512] [--rounds 2] [--keys 1000]
"""

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import plplib  # noqa: E402
from plplib import mode_props  # noqa: E402

CITATION = (plplib.CITATION + ": RocksDB db_bench 3M keys, 100 B keys, 800 B values, 8 MB "
            "write buffer and target file size")
PAPER = ("selective ~ full throughput, ~+15 % over none on fillseq; selective needs 50-90 % "
         "less capacitance than full (write buffers 64-512 MB)")
PAPER_FILLSEQ_GAIN = 15.0
MODES = ("none", "full", "selective")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="64,128,256,512", help="write buffers W, MiB (paper's)")
    ap.add_argument("--scale", type=int, default=16, help="W on the drives measured: W / scale")
    ap.add_argument("--plp-mb", type=int, default=32, help="selective's PLP region (paper's MiB)")
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--memtable-kb", type=int, default=256)
    ap.add_argument("--benchmarks", default="fillseq,overwrite")
    ap.add_argument("--time-scale", type=int, default=50)
    ap.add_argument("--stripe", type=int, default=8, help="zns_stripe")
    ap.add_argument("--flush-pct", type=int, default=70, help="plp_flush_pct")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    ap.add_argument("--short", action="store_true", help="W 64 and 512 MiB, 500 keys")
    a = ap.parse_args(argv)
    a.sizes = [int(x) for x in a.sizes.split(",")]
    if a.short:
        a.sizes, a.keys = [a.sizes[0], a.sizes[-1]], 500
    bblib.require_rounds(a.rounds)
    for w in a.sizes:
        if w % a.scale or a.plp_mb % a.scale or w <= a.plp_mb:
            sys.exit(f"--sizes {w}: needs W > --plp-mb and both multiples of --scale "
                     f"({a.scale})")
    return a


def serial(mode, w):
    return f"{mode[:3].upper()}{w}"


def devices(a):
    flash = dict(plplib.PAPER_FLASH, **plplib.TWO_NS, zns_stripe=a.stripe,
                 time_scale=a.time_scale, plp_flush_pct=a.flush_pct)
    ref = dict(flash, **plplib.NO_MEDIA_TIME, time_scale=1)
    mb = plplib.DRIVE_MB
    out = [bblib.Device("REF", 3, mb, **ref)]
    for w in a.sizes:
        for mode in MODES:
            out.append(bblib.Device(serial(mode, w), 3, mb, **flash,
                                    **mode_props(mode, w // a.scale, a.plp_mb // a.scale)))
    # idle, unscaled: only their worst-case hold-up figures are read
    for w in a.sizes:
        out.append(bblib.Device(f"CAPF{w}", 3, mb, **flash, **mode_props("full", w, 0)))
    out.append(bblib.Device("CAPS", 3, mb, **flash,
                            **mode_props("selective", a.sizes[-1], a.plp_mb)))
    return out


def run_order(a, r):
    """The runs of round r: REF, then each size's three configurations, the order
    alternating between rounds."""
    order = ["REF"]
    for i, w in enumerate(a.sizes):
        modes = MODES if (r + i) % 2 == 0 else tuple(reversed(MODES))
        order += [serial(m, w) for m in modes]
    return order


def guest_script(a):
    runs = [plplib.guest_prelude(plplib.db_bench_cmd(a.benchmarks, a.keys, a.memtable_kb),
                                 "REF")]
    for r in range(a.rounds):
        for s in run_order(a, r):
            runs.append(f"run {s} {s}-{r}")
    return "\n".join(runs) + "\necho '@@stats end@@'\necho @@end@@\n"


def main():
    a = parse_args()
    benches = a.benchmarks.split(",")
    devs = devices(a)
    n = a.rounds * len(run_order(a, 0))
    bblib.log(f"booting: {len(devs)} drives; {n} db_bench runs of {a.keys} keys "
              f"({a.benchmarks}), time_scale={a.time_scale}, zns_stripe={a.stripe} ...")
    g = bblib.Guest(guest_script(a), devs, timeout=14400).run(
        lambda t, l: l.startswith("@@") and not l.startswith("@@stats") and
        bblib.log(f"  {t:6.0f}s {l.strip('@')}"))

    rounds = range(a.rounds)
    res = {s: [plplib.ops_of(g, f"{s}-{r}", benches) for r in rounds] for s in run_order(a, 0)}
    final = g.marks["end"][1]
    cap = {w: final[f"CAPF{w}"]["plp-worst-balanced-capacitance-uf"] for w in a.sizes}
    cap_sel = final["CAPS"]["plp-worst-balanced-capacitance-uf"]

    def waits(s, r):
        return plplib.grew(g, s, f"{s}-{r}", "plp-buffer-waits")

    print(f"\nRocksDB db_bench, sync=1, {a.keys} keys (100 B + 800 B), memtable "
          f"{a.memtable_kb} KiB; zoned btrfs: data on ns1, WAL on ns2; 8 ch x 8 chips, "
          f"40/100/40 us, zns_stripe={a.stripe}, time_scale={a.time_scale}; buffers W / "
          f"{a.scale}; {a.rounds} interleaved rounds, median [min-max]")
    rows = []
    for b in benches:
        ref = [x[b] for x in res["REF"]]
        ref_us = 1e6 / statistics.median(ref)
        print(f"\n{b}: guest ceiling (REF, no media time) {bblib.fmt_spread(ref, 0)} ops/s "
              f"= {ref_us / 1000:.1f} ms per Put")
        print(f"{'W MiB':>6} {'on drive':>8} {'mode':>9} {'PLP+vol MiB':>11} {'ops/s':>15} "
              f"{'vs none':>17} {'dev us/Put':>10} {'waits':>6} {'cap. uF':>8} {'vs full':>8}")
        for w in a.sizes:
            none = [x[b] for x in res[serial("none", w)]]
            for mode in MODES:
                s = serial(mode, w)
                xs = [x[b] for x in res[s]]
                ratio = [y / x for x, y in zip(none, xs)]
                dev_us = max(0.0, (1e6 / statistics.median(xs) - ref_us) / a.time_scale)
                c = {"none": 0, "full": cap[w], "selective": cap_sel}[mode]
                p = mode_props(mode, w // a.scale, a.plp_mb // a.scale)
                vs_full = f"-{100 * (1 - c / cap[w]):.0f} %" if mode != "full" else ""
                row = dict(bench=b, w_mb=w, mode=mode, ops=bblib.spread(xs),
                           ratio_vs_none=bblib.spread(ratio), device_us_per_put=dev_us,
                           buffer_waits=sum(waits(s, r) for r in rounds), capacitance_uf=c,
                           capacitance_vs_full=1 - c / cap[w] if cap[w] else None)
                rows.append(row)
                print(f"{w:>6} {w // a.scale:>8} {mode:>9} "
                      f"{p['plp_buf_mb']:>5}+{p['buf_mb']:<5} {bblib.fmt_spread(xs, 0):>15} "
                      f"{bblib.fmt_spread(ratio, 2):>17} {dev_us:>10.0f} "
                      f"{row['buffer_waits']:>6} {c:>8} {vs_full:>8}")
    print("\n'vs none': ops/s over none's, round by round; 'dev us/Put': the drive's own time "
          "per Put, unscaled (what a real host adds its CPU time to); 'waits': writes that "
          "waited for buffer space, all rounds; 'cap. uF': hold-up capacitance for the "
          "paper's W unscaled (worst case, balanced flush; selective: its PLP region only).")
    print(f"\npublished ({CITATION}): {PAPER}")
    for b in benches:
        sel = [r for r in rows if r["bench"] == b and r["mode"] != "none"]
        line = ", ".join(f"{r['mode']} {r['w_mb']}: x{r['ratio_vs_none']['median']:.2f}"
                         for r in sel)
        print(f"here, {b} vs none: {line}")
    caps = [r for r in rows if r["bench"] == benches[0] and r["mode"] == "selective"]
    print("here, capacitance of selective vs full: " + ", ".join(
        f"W {r['w_mb']}: -{100 * r['capacitance_vs_full']:.0f} %" for r in caps))
    print("transfers: the ratios and ordering within a round and the device's time per Put; "
          f"ops/s are those of a TCG guest with media times x {a.time_scale}. The capacitance "
          "is the model's, for the unscaled sizes.")
    print(f"device lateness p50/p99/max us (none, largest W): "
          f"{bblib.lateness(final[serial('none', a.sizes[-1])])}")
    print("results: " + str(bblib.save_json("plp-dbbench", dict(
        args=vars(a), rows=rows, ref=res["REF"], capacitance_full_uf=cap,
        capacitance_selective_uf=cap_sel, citation=CITATION, paper=PAPER,
        paper_fillseq_gain_pct=PAPER_FILLSEQ_GAIN), guest=g)))


if __name__ == "__main__":
    main()
