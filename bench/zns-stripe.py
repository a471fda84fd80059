#!/usr/bin/env python3
"""Zoned drive: sequential write bandwidth of one zone against the chips it spans.

One guest holds, per zns_stripe value (1, 2, 4, ... all chips), a zoned drive on the same
flash, plus a nossd drive for the guest's own ceiling. In every round each drive is reset
(Select All, outside the measurement, for every stripe alike) and fio writes a fixed
number of its now empty zones, zone after zone with one zone open (--max_open_zones=1,
128 KiB writes, QD8), so the bandwidth is one zone's and no write lands on a full zone.
The number of zones is sized from the model's bandwidth to take about --runtime seconds
(at most the whole drive). Rounds are interleaved, the order reversed every other round.
Prints MB/s (median [min-max] over rounds), the scaling against stripe 1 per round, the
ideal (= stripe), the flash model's figure and the time each reset took.

Usage: bench/zns-stripe.py [--short] [--rounds N] [--nchs 4 --luns 2] [--time-scale 4] ...
"""

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bblib.add_flash_args(ap, size=64, zone_mb=2, nchs=4, luns=2, pgs_per_blk=32, time_scale=4,
                         lats=("wr",), flash_type=False)
    ap.add_argument("--runtime", type=float, default=6, help="seconds the model needs for "
                    "one run (the write is sized from it; default 6)")
    ap.add_argument("--rounds", type=int, default=5, help="runs per drive (default 5)")
    ap.add_argument("--short", action="store_true", help="3 rounds of about 3 s")
    a = ap.parse_args()
    if a.short:
        a.runtime, a.rounds = 3, 3
    bblib.require_rounds(a.rounds)
    if a.size % a.zone_mb:
        sys.exit(f"--size ({a.size}) must be a multiple of --zone-mb ({a.zone_mb})")
    chips = a.nchs * a.luns
    stripes = [s for s in (1, 2, 4, 8, 16, 32, 64) if s <= chips and chips % s == 0]

    # the model's rate of one chip: one page program plus its transfer at a time
    per_chip = 4096 / (a.wr_lat * 1e-9 + 4096 / 800e6) / a.time_scale / 1e6
    zones = a.size // a.zone_mb
    nzones = {s: min(zones, math.ceil(per_chip * s * a.runtime / (a.zone_mb * 1.048576)))
              for s in stripes}

    devs = [bblib.Device(f"S{s}", 3, a.size, zns_zone_size_mb=a.zone_mb,
                         zns_num_ch=a.nchs, zns_num_lun=a.luns, zns_stripe=s,
                         zns_flash_type=3, zns_pg_wr_lat=a.wr_lat,
                         pgs_per_blk=a.pgs_per_blk, time_scale=a.time_scale)
            for s in stripes] + [bblib.Device("REF", 2, 256)]   # a zoned drive first
    w = ("--direct=1 --ioengine=io_uring --output-format=json --rw=write --bs=128k "
         "--iodepth=8")
    runs = []
    for r in range(1, a.rounds + 1):
        for s in (stripes if r % 2 else stripes[::-1]):
            runs.append(f"run S{s} r{r} {nzones[s] * a.zone_mb}")
    script = f"""
run() {{  # serial round MiB: reset (timed apart), then write MiB of empty zones
  local Z t0 t1
  Z=$(dev_of $1) || exit 1
  t0=${{EPOCHREALTIME/./}}; blkzone reset $Z || exit 1; t1=${{EPOCHREALTIME/./}}
  echo "reset $1 $2 $((t1 - t0))"   # microseconds
  echo @@$1-$2@@
  fio --name=$1 --filename=$Z {w} --zonemode=zbd --max_open_zones=1 --size=${{3}}m || exit 1
}}
echo @@REF@@; fio --name=ref --filename=$(dev_of REF) {w} --size=256m --time_based \\
  --runtime={max(3, int(a.runtime))} || exit 1
{chr(10).join(runs)}
echo "@@stats end@@"
echo @@end@@
"""
    bblib.log(f"booting: {len(stripes)} zoned drives ({chips} chips, stripes {stripes}) + "
              f"nossd; {a.rounds} rounds, zones per run {nzones} ...")
    g = bblib.Guest(script, devs, timeout=3600).run(
        lambda t, l: l.startswith("@@S") and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))
    _, final = g.marks["end"]

    def mbps(name):
        return bblib.fio_json(g.section(name))["jobs"][0]["write"]["bw_bytes"] / 1e6

    rounds = range(1, a.rounds + 1)
    bw = {s: [mbps(f"S{s}-r{r}") for r in rounds] for s in stripes}
    reset_ms = {s: [] for s in stripes}
    for _, line in g.lines:
        f = line.split()
        if len(f) == 4 and f[0] == "reset" and f[1][1:].isdigit():
            reset_ms[int(f[1][1:])].append(int(f[3]) / 1000)   # us -> ms
    ref = mbps("REF")
    print(f"\nzone stripe: {a.nchs} ch x {a.luns} chips, TLC program {a.wr_lat // 1000} us "
          f"(every page), pgs_per_blk={a.pgs_per_blk}, zones {a.zone_mb} MiB, "
          f"time_scale={a.time_scale}; one open zone, 128 KiB writes QD8 into empty zones; "
          f"{a.rounds} interleaved rounds, median [min-max]")
    print(f"{'stripe':>6} {'zones':>5} {'MB/s':>20} {'x stripe 1 per round':>21} {'ideal':>5} "
          f"{'model MB/s':>10} {'unscaled':>8} {'reset ms':>18} {'late p50/p99/max us':>20}")
    rows = []
    for s in stripes:
        scaling = [x / y for x, y in zip(bw[s], bw[1])]
        med = bblib.spread(bw[s])["median"]
        print(f"{s:6d} {nzones[s]:5d} {bblib.fmt_spread(bw[s], 2):>20} "
              f"{bblib.fmt_spread(scaling, 2):>21} {s:5d} {per_chip * s:10.2f} "
              f"{med * a.time_scale:8.1f} {bblib.fmt_spread(reset_ms[s], 0):>18} "
              f"{bblib.lateness(final[f'S{s}']):>20}")
        rows.append(dict(stripe=s, zones_written=nzones[s], mbps=bblib.spread(bw[s]),
                         scaling=bblib.spread(scaling), model_mbps=per_chip * s,
                         reset_ms=bblib.spread(reset_ms[s]),
                         lateness=bblib.lateness(final[f"S{s}"]),
                         pages_programmed=final[f"S{s}"].get("pages-programmed"),
                         blocks_erased=final[f"S{s}"].get("blocks-erased")))
    print(f"guest ceiling (nossd, same fio): {ref:.0f} MB/s = "
          f"{ref / max(r['mbps']['median'] for r in rows):.1f}x the widest stripe")
    print(f"transfers to an unscaled drive: the scaling and the fraction of the model reached;"
          f" MB/s x {a.time_scale} ('unscaled'). Stripes share channels above {a.nchs} chips "
          "(channel first).\nreset ms: blkzone reset of the whole drive before each run "
          "(erases the zones the run before wrote; not in MB/s).")
    out = bblib.save_json("zns-stripe", dict(args=vars(a), rows=rows, ref_mbps=ref), guest=g)
    print(f"results: {out}")


if __name__ == "__main__":
    main()
