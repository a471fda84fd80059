#!/usr/bin/env python3
"""Named drives (flash_preset=): what the model gives beside what the makers publish.

One guest holds a nossd drive (the guest's own ceiling) and one drive per preset, each
with time_scale=S chosen so that the preset's fastest figure (its random-read ceiling)
is well below what a TCG guest can issue: the model, not the guest, is the bottleneck.
Every figure is then unscaled (latency / S, rate x S) and printed beside the published
one (hw/femu/nand/presets.c, sources in the README).

Per drive and round: a sequential prefill of the region; 4 KiB random reads at QD1 (mean
latency); 4 KiB random reads at QD128 (IOPS); 128 KiB sequential reads at QD32 (MB/s);
128 KiB sequential writes at QD32 (MB/s, a zoned drive's zones reset first); 4 KiB random
writes at QD32 on the region (IOPS, blackbox only). The drives are far from full, so the
random writes run without GC: the makers' steady-state figure (after GC) is printed beside
it but is not what this measures; reaching it takes writes of several times a drive's
capacity at rates divided by S, hours for a TCG guest. Interleaved rounds, median
[min-max]. A benchmark: figures, not assertions.

Usage: bench/presets.py [--short] [--rounds N] [--runtime SEC] [--presets a,b]
"""

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

# name -> femu_mode, published figures (hw/femu/nand/presets.c), the model's 4 KiB
# random-read ceiling (firmware cores / firmware time: what S is chosen from)
PRESETS = {
    "dc-tlc": (1, dict(qd1_us=90, rr_kiops=1080, rw_kiops=170, sr_mbps=6400, sw_mbps=3000),
               8 / 7.4e-6),
    "dc-tlc-gen4": (1, dict(rr_kiops=900, rw_kiops=200, sr_mbps=6500, sw_mbps=3500),
                    8 / 8.889e-6),
    "zns-tlc": (3, {}, 4 / 13e-6),
    "ll-slc": (1, dict(qd1_us=16, rr_kiops=750, rw_kiops=170, sr_mbps=3200, sw_mbps=3200),
               4 / 5.333e-6),
}
GUEST_IOPS = 2500           # what the scaled drives may ask of the guest at most
TESTS = (("qd1", "QD1 read us"), ("rr", "4K read kIOPS"), ("sr", "seq read MB/s"),
         ("sw", "seq write MB/s"), ("rw", "4K write kIOPS*"))
PUBLISHED = {"qd1": "qd1_us", "rr": "rr_kiops", "sr": "sr_mbps", "sw": "sw_mbps",
             "rw": "rw_kiops"}


def scale_of(ceiling):
    return max(1, math.ceil(ceiling / GUEST_IOPS))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runtime", type=int, default=5, help="seconds of fio per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--short", action="store_true", help="2 rounds of 3 s")
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--size", type=int, default=2048, help="drive MiB")
    ap.add_argument("--region", type=int, default=128, help="MiB prefilled, then read")
    a = ap.parse_args()
    if a.short:
        a.rounds, a.runtime = 2, 3
    bblib.require_rounds(a.rounds)
    names = a.presets.split(",")
    for n in names:
        if n not in PRESETS:
            sys.exit(f"--presets: unknown '{n}': allowed {', '.join(PRESETS)}")

    devs = [bblib.Device("REF", 2, a.size)]
    scales = {}
    for n in names:
        mode, _, ceiling = PRESETS[n]
        scales[n] = scale_of(ceiling)
        props = dict(flash_preset=n, time_scale=scales[n])
        if mode == 1:
            props["pgs_per_blk"] = 16       # lines small enough for a drive of a few GiB
        devs.append(bblib.Device(n.upper(), mode, a.size, **props))

    io = "--direct=1 --ioengine=io_uring --output-format=json --group_reporting"
    timed = f"--time_based --runtime={a.runtime} --ramp_time=1"
    zbd = "--zonemode=zbd"
    script = f"""
run() {{ echo "@@$1@@"; shift; fio "$@" || exit 1; }}
fill() {{ fio --name=fill --filename=$1 {io} $2 --rw=write --bs=128k --iodepth=8 \\
    --size={a.region}m >/dev/null || exit 1; }}
for r in $(seq 1 {a.rounds}); do
  for s in {" ".join(d.serial for d in devs)}; do
    D=$(dev_of $s) || exit 1
    Z=""; [ "$(cat /sys/block/${{D#/dev/}}/queue/zoned)" = host-managed ] && Z="{zbd}"
    [ -n "$Z" ] && blkzone reset $D
    fill $D "$Z"
    run r$r-$s-qd1 --name=qd1 --filename=$D {io} {timed} $Z --rw=randread --bs=4k \\
        --iodepth=1 --size={a.region}m
    run r$r-$s-rr --name=rr --filename=$D {io} {timed} $Z --rw=randread --bs=4k \\
        --iodepth=128 --size={a.region}m
    run r$r-$s-sr --name=sr --filename=$D {io} {timed} $Z --rw=read --bs=128k \\
        --iodepth=32 --size={a.region}m
    [ -n "$Z" ] && blkzone reset $D
    run r$r-$s-sw --name=sw --filename=$D {io} {timed} $Z --rw=write --bs=128k \\
        --iodepth=32 --size={a.region}m
    if [ -z "$Z" ]; then
      run r$r-$s-rw --name=rw --filename=$D {io} {timed} --rw=randwrite --bs=4k \\
          --iodepth=32 --size={a.region}m
    fi
  done
done
echo @@end@@
"""
    bblib.log(f"booting one guest: nossd + {len(names)} preset drives "
              f"({', '.join(f'{n} x{scales[n]}' for n in names)}); {a.rounds} rounds ...")
    g = bblib.Guest(script, devs, timeout=7200).run(
        lambda t, l: l.startswith("@@r") and l.endswith("-qd1@@") and
        bblib.log(f"  {t:6.1f}s {l.strip('@')}"))

    def measure(serial, test, r):
        try:
            j = bblib.fio_json(g.section(f"r{r}-{serial}-{test}"))["jobs"][0]
        except KeyError:
            return None
        if test == "qd1":
            return j["read"]["lat_ns"]["mean"] / 1000
        if test in ("rr", "rw"):
            return j["read" if test == "rr" else "write"]["iops"] / 1000
        return j["read" if test == "sr" else "write"]["bw_bytes"] / 1e6

    rows = {}
    for d in devs:
        for test, _ in TESTS:
            vals = [v for v in (measure(d.serial, test, r) for r in range(1, a.rounds + 1))
                    if v is not None]
            if vals:
                rows.setdefault(d.serial, {})[test] = vals

    print(f"\npresets: the model's figures (unscaled) beside the published ones; "
          f"{a.rounds} interleaved rounds of {a.runtime} s, median [min-max]; "
          f"{a.region} MiB region of {a.size} MiB drives; one guest")
    ref = rows["REF"]
    print("guest ceiling (nossd): " + ", ".join(
        f"{label} {bblib.fmt_spread(ref[t])}" for t, label in TESTS if t in ref))
    out = {}
    for n in names:
        mode, pub, _ = PRESETS[n]
        s = scales[n]
        print(f"\n{n} ({'zoned' if mode == 3 else 'blackbox'}, time_scale={s})")
        print(f"  {'figure':16} {'model':>22} {'published':>10} {'ratio':>6} {'guest x S':>10}")
        for test, label in TESTS:
            vals = rows.get(n.upper(), {}).get(test)
            if not vals:
                continue
            unscaled = [v / s if test == "qd1" else v * s for v in vals]
            med = bblib.spread(unscaled)["median"]
            p = pub.get(PUBLISHED[test])
            # how close the scaled drive came to the guest's own ceiling (1.0: the guest
            # may have been the bottleneck)
            near = "" if test == "qd1" else f"{bblib.spread(vals)['median'] / bblib.spread(ref[test])['median']:.2f} of ceiling"
            print(f"  {label:16} {bblib.fmt_spread(unscaled):>22} "
                  f"{p if p else '-':>10} {f'{med / p:.2f}' if p else '-':>6} {near:>10}")
            out.setdefault(n, {})[test] = dict(unscaled=bblib.spread(unscaled), published=p,
                                                scale=s)
    print("\n* without GC (fresh drive); the published figure is after GC.")
    print("ratio = model / published. QD1 latency includes what TCG adds per I/O, divided "
          "by S (small at these scales).\nThe link model carries its lanes' payload rate, "
          "more than drives get after protocol overhead; random\nwrites depend on "
          "over-provisioning and GC state, which the makers do not give.")
    path = bblib.save_json("presets", dict(args=vars(a), scales=scales, rows=rows,
                                           figures=out), guest=g)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
