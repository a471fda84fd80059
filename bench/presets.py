#!/usr/bin/env python3
"""Named drives (flash_preset=): what the model gives beside what the makers publish.

One guest holds a nossd drive (the guest's own ceiling) and one drive per preset, each
with time_scale=S chosen so that the preset's fastest figure (its random-read ceiling)
is well below what a TCG guest can issue: the model, not the guest, is the bottleneck.
Every figure is then unscaled (latency / S, rate x S) and printed beside the published
one (hw/femu/nand/presets.c, sources in docs/device.md).

Per drive and round: a sequential prefill of the region; 4 KiB random reads at QD1 (mean
latency); 4 KiB random reads at QD128 (IOPS); 128 KiB sequential reads at QD32 (MB/s);
128 KiB sequential writes at QD32 (MB/s, a zoned drive's zones reset first). Interleaved
rounds, median [min-max].

Random writes after GC (blackbox presets): each preset also has a drive of one of its
channels (nchs=1, --gc-size, the preset's over-provisioning), filled sequentially and then
overwritten with 4 KiB random writes (--gc-caps capacities) before the rounds, so that GC
is in steady state when each round measures 4 KiB random writes at QD32 on it. The FTL
stripes every line over all channels and GC works line by line, so one channel of the
drive writes 1/nchs of what the drive writes (the link and firmware are far from busy at
these rates): the figure printed is the channel's times nchs. A drive of one channel has
nchs times as many lines as the whole drive of the same size would, so a small one gives
greedy GC enough lines to choose from; its blocks hold 64 KiB (16 pages of 4 KiB, 4 of 16
KiB; tBERS divided as the pages are, so that an erase costs per byte what it costs on the
drive), as do the other drives' (lines small enough for a drive of a few GiB). Its time_scale
follows from the published write rate. The WAF over the rounds is printed beside greedy
GC's analytic one (device counters over QMP).
A benchmark: figures, not assertions.

Usage: bench/presets.py [--short] [--rounds N] [--runtime SEC] [--presets a,b]
"""

import argparse
import math
import re
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
# blocks of 64 KiB on every drive (16 pages of 4 KiB, 4 of 16 KiB): lines small enough for a
# drive of a few GiB, and as many of them on a random-write drive whatever the page size
BLOCK_BYTES = 64 << 10
GUEST_IOPS = 2500           # what the scaled drives may ask of the guest at most
# random writes after GC are scaled from twice the published rate (room for a model
# faster than the drive)
GC_HEADROOM = 2
TESTS = (("qd1", "QD1 read us"), ("rr", "4K read kIOPS"), ("sr", "seq read MB/s"),
         ("sw", "seq write MB/s"), ("rw", "4K write kIOPS (GC)"))
PUBLISHED = {"qd1": "qd1_us", "rr": "rr_kiops", "sr": "sr_mbps", "sw": "sw_mbps",
             "rw": "rw_kiops"}


def preset_props(name):
    """The preset's properties, read from the table the device uses (nand/presets.c)."""
    src = (Path(__file__).resolve().parent.parent / "hw/femu/nand/presets.c").read_text()
    for m in re.finditer(r'\.name = "([^"]+)".*?\.props = ((?:"[^"]*"\s*)+),', src, re.S):
        if m.group(1) == name:
            items = "".join(re.findall(r'"([^"]*)"', m.group(2))).split(",")
            return {k: int(v) for k, v in (i.split("=", 1) for i in items) if v.isdigit()}
    sys.exit(f"presets: {name} is not in hw/femu/nand/presets.c")


def gc_name(preset):
    """Serial of a preset's random-write drive."""
    return f"{preset.upper()}-GC"


def scale_of(ceiling):
    return max(1, math.ceil(ceiling / GUEST_IOPS))


def gc_waf(g, serial):
    """NAND pages over host pages written between the two marks: the rounds' WAF."""
    (_, m0), (_, m1) = g.marks["gc-steady"], g.marks["gc-end"]
    a, b = m0[serial], m1[serial]
    return ((b["nand-pages-written"] - a["nand-pages-written"]) /
            max(1, b["host-pages-written"] - a["host-pages-written"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runtime", type=int, default=5, help="seconds of fio per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--short", action="store_true", help="2 rounds of 3 s")
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--size", type=int, default=2048, help="drive MiB")
    ap.add_argument("--region", type=int, default=128, help="MiB prefilled, then read")
    ap.add_argument("--gc-size", type=int, default=512, help="MiB of the random-write drives")
    ap.add_argument("--gc-caps", type=float, default=2.0,
                    help="capacities of random writes before the rounds (GC steady state)")
    a = ap.parse_args()
    if a.short:
        a.rounds, a.runtime, a.gc_size, a.gc_caps = 2, 3, 256, 1.5
    bblib.require_rounds(a.rounds)
    names = a.presets.split(",")
    for n in names:
        if n not in PRESETS:
            sys.exit(f"--presets: unknown '{n}': allowed {', '.join(PRESETS)}")

    devs = [bblib.Device("REF", 2, a.size)]
    scales, props_of = {}, {}
    for n in names:
        mode, _, ceiling = PRESETS[n]
        scales[n] = scale_of(ceiling)
        props = dict(flash_preset=n, time_scale=scales[n])
        if mode == 1:
            pp = props_of[n] = preset_props(n)
            pgs = max(1, BLOCK_BYTES // (pp.get("secs_per_pg", 8) * 512))
            props["pgs_per_blk"] = pgs
        devs.append(bblib.Device(n.upper(), mode, a.size, **props))
        if mode == 1:
            scales[gc_name(n)] = scale_of(GC_HEADROOM * 1000 * PRESETS[n][1]["rw_kiops"] /
                                          pp["nchs"])
            devs.append(bblib.Device(gc_name(n), mode, a.gc_size, flash_preset=n, nchs=1,
                                     time_scale=scales[gc_name(n)], pgs_per_blk=pgs,
                                     blk_er_lat=pp["blk_er_lat"] * pgs // pp["pgs_per_blk"]))
    gcdevs = [d for d in devs if d.serial.endswith("-GC")]

    io = "--direct=1 --ioengine=io_uring --output-format=json --group_reporting"
    timed = f"--time_based --runtime={a.runtime} --ramp_time=1"
    zbd = "--zonemode=zbd"
    script = f"""
run() {{ echo "@@$1@@"; shift; fio "$@" || exit 1; }}
fill() {{ fio --name=fill --filename=$1 {io} $2 --rw=write --bs=128k --iodepth=8 \\
    --size={a.region}m >/dev/null || exit 1; }}
for s in {" ".join(d.serial for d in gcdevs)}; do
  D=$(dev_of $s) || exit 1
  echo "@@precondition-$s@@"
  fio --name=gcfill --filename=$D {io} --rw=write --bs=128k --iodepth=32 >/dev/null || exit 1
  fio --name=gcpre --filename=$D {io} --rw=randwrite --bs=4k --iodepth=32 --norandommap \\
      --randrepeat=0 --io_size=$(( {int(a.gc_caps * a.gc_size)} ))m >/dev/null || exit 1
done
echo "@@stats gc-steady@@"
for r in $(seq 1 {a.rounds}); do
  for s in {" ".join(d.serial for d in devs if d not in gcdevs)}; do
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
    if [ $s = REF ]; then      # the guest's own ceiling for the random writes
      run r$r-$s-rw --name=rw --filename=$D {io} {timed} --rw=randwrite --bs=4k \\
          --iodepth=32 --size={a.region}m
    fi
  done
  for s in {" ".join(d.serial for d in gcdevs)}; do
    D=$(dev_of $s) || exit 1
    run r$r-$s-rw --name=rw --filename=$D {io} {timed} --rw=randwrite --bs=4k \\
        --iodepth=32 --norandommap --randrepeat=0
  done
done
echo "@@stats gc-end@@"
echo @@end@@
"""
    bblib.log(f"booting one guest: nossd + {len(names)} preset drives "
              f"({', '.join(f'{n} x{scales[n]}' for n in names)}); {a.rounds} rounds ...")
    g = bblib.Guest(script, devs, timeout=7200).run(
        lambda t, l: (l.startswith("@@precondition") or
                      l.startswith("@@r") and l.endswith("-qd1@@")) and
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
            serial, s = (gc_name(n), scales.get(gc_name(n))) if test == "rw" else (n.upper(), scales[n])
            vals = rows.get(serial, {}).get(test)
            if not vals:
                continue
            per = props_of[n]["nchs"] if test == "rw" else 1    # one channel of the drive
            unscaled = [v / s if test == "qd1" else v * s * per for v in vals]
            med = bblib.spread(unscaled)["median"]
            p = pub.get(PUBLISHED[test])
            # how close the scaled drive came to the guest's own ceiling (1.0: the guest
            # may have been the bottleneck)
            near = "" if test == "qd1" else f"{bblib.spread(vals)['median'] / bblib.spread(ref[test])['median']:.2f} of ceiling"
            print(f"  {label:18} {bblib.fmt_spread(unscaled):>22} "
                  f"{p if p else '-':>10} {f'{med / p:.2f}' if p else '-':>6} {near:>10}")
            out.setdefault(n, {})[test] = dict(unscaled=bblib.spread(unscaled), published=p,
                                                scale=s)
        if mode == 1:
            waf, op, nchs = gc_waf(g, gc_name(n)), props_of[n]["op_pcent"], props_of[n]["nchs"]
            out[n]["gc"] = dict(waf=waf, op_pcent=op, scale=scales[gc_name(n)])
            print(f"  random writes after GC: one channel x {nchs}, {a.gc_size} MiB, "
                  f"op_pcent={op}, time_scale={scales[gc_name(n)]}, after "
                  f"{a.gc_caps:g} capacities of random writes; WAF over the rounds {waf:.2f} "
                  f"(greedy GC's analytic {bblib.greedy_waf(1 + op / 100):.2f})")
    print("\nratio = model / published. QD1 latency includes what TCG adds per I/O, divided "
          "by S (small at these scales).\nThe link model carries its lanes' payload rate, "
          "more than drives get after protocol overhead.\nRandom writes after GC depend on "
          "over-provisioning, which the makers do not publish: the presets'\nop_pcent "
          "follows from each drive's capacity (docs/device.md, Presets).")
    path = bblib.save_json("presets", dict(args=vars(a), scales=scales, rows=rows,
                                           figures=out), guest=g)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
