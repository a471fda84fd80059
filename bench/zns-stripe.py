#!/usr/bin/env python3
"""Zoned drive: sequential write bandwidth of one zone against the chips it spans.

One guest holds, per zns_stripe value (1, 2, 4, ... all chips), a zoned drive on the same
flash, plus a nossd drive for the guest's own ceiling. fio writes zone after zone with one
zone open (--max_open_zones=1), 128 KiB writes at QD8, so the bandwidth is one zone's.
Prints MB/s, the scaling vs stripe 1, the ideal (= stripe) and the flash model's figure.

Usage: bench/zns-stripe.py [--short] [--nchs 4 --luns 2] [--time-scale 4] ...
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bblib.add_flash_args(ap, size=64, zone_mb=2, nchs=4, luns=2, pgs_per_blk=32, time_scale=4,
                         lats=("wr",), flash_type=False)
    ap.add_argument("--runtime", type=int, default=8, help="seconds of writes per drive")
    ap.add_argument("--short", action="store_true", help="4 s per drive")
    a = ap.parse_args()
    if a.short:
        a.runtime = 4
    chips = a.nchs * a.luns
    stripes = [s for s in (1, 2, 4, 8, 16, 32, 64) if s <= chips and chips % s == 0]

    devs = [bblib.Device("REF", 2, 256)]
    for s in stripes:
        devs.append(bblib.Device(f"S{s}", 3, a.size, zns_zone_size_mb=a.zone_mb,
                                 zns_num_ch=a.nchs, zns_num_lun=a.luns, zns_stripe=s,
                                 zns_flash_type=3, zns_pg_wr_lat=a.wr_lat,
                                 pgs_per_blk=a.pgs_per_blk, time_scale=a.time_scale))
    # the launcher gives the first drive's mode: a zoned drive first
    devs = devs[1:] + devs[:1]
    w = (f"--direct=1 --ioengine=io_uring --output-format=json --rw=write --bs=128k "
         f"--iodepth=8 --time_based --runtime={a.runtime}")
    script = f"""
echo @@REF@@; fio --name=ref --filename=$(dev_of REF) {w} --size=256m || exit 1
for s in {" ".join(map(str, stripes))}; do
  Z=$(dev_of S$s) || exit 1
  blkzone reset $Z || exit 1
  echo @@S$s@@; fio --name=s$s --filename=$Z {w} --zonemode=zbd --max_open_zones=1 || exit 1
done
echo "@@stats end@@"
echo @@end@@
"""
    bblib.log(f"booting: {len(stripes)} zoned drives ({chips} chips, stripes {stripes}) + "
              f"nossd; {a.runtime} s each ...")
    g = bblib.Guest(script, devs, timeout=1800).run(
        lambda t, l: l.startswith("@@") and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))
    _, final = g.marks["end"]

    def mbps(name):
        return bblib.fio_json(g.section(name))["jobs"][0]["write"]["bw_bytes"] / 1e6

    per_chip = 4096 / (a.wr_lat * 1e-9 + 4096 / 800e6) / a.time_scale / 1e6
    ref = mbps("REF")
    bw = {s: mbps(f"S{s}") for s in stripes}
    print(f"\nzone stripe: {a.nchs} ch x {a.luns} chips, TLC program {a.wr_lat // 1000} us "
          f"(every page), pgs_per_blk={a.pgs_per_blk}, zones {a.zone_mb} MiB, "
          f"time_scale={a.time_scale}; one open zone, 128 KiB writes QD8, {a.runtime} s")
    print(f"{'stripe':>6} {'MB/s':>7} {'x stripe 1':>11} {'ideal':>6} {'model MB/s':>11} "
          f"{'unscaled':>9} {'late p50/p99/max us':>20}")
    rows = []
    for s in stripes:
        print(f"{s:6d} {bw[s]:7.2f} {bw[s] / bw[1]:11.2f} {s:6d} {per_chip * s:11.2f} "
              f"{bw[s] * a.time_scale:9.1f} {bblib.lateness(final[f'S{s}']):>20}")
        rows.append(dict(stripe=s, mbps=bw[s], scaling=bw[s] / bw[1], model_mbps=per_chip * s,
                         lateness=bblib.lateness(final[f"S{s}"]),
                         pages_programmed=final[f"S{s}"].get("pages-programmed")))
    print(f"guest ceiling (nossd, same fio): {ref:.0f} MB/s = {ref / max(bw.values()):.1f}x "
          "the widest stripe")
    print(f"transfers to an unscaled drive: the scaling and the fraction of the model reached;"
          f" MB/s x {a.time_scale} ('unscaled'). Stripes share channels above {a.nchs} chips "
          "(channel first).")
    print(f"results: {bblib.save_json('zns-stripe', dict(args=vars(a), rows=rows, ref_mbps=ref))}")


if __name__ == "__main__":
    main()
