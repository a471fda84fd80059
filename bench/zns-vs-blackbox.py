#!/usr/bin/env python3
"""Zoned vs blackbox on the same flash: sequential write/read and 4 KiB random read.

One guest holds three drives: a zoned drive (femu_mode=3), a blackbox drive (femu_mode=1,
7% OP) on the same channels, chips, pages per block and latencies, and a nossd drive that
shows what the guest itself can issue. Both model drives use the same time_scale, so the
model (not TCG) is the bottleneck; the ratios transfer to an unscaled drive, the MB/s are
divided by time_scale.

Both drives are fresh: the blackbox FTL has free blocks and runs no GC here, so its writes
cost one page program each, like the zoned drive's. The thesis' ~4x write bandwidth for ZNS
is measured against a conventional SSD that is doing GC: see bench/zns-gc-free.py.

Usage: bench/zns-vs-blackbox.py [--short] [--time-scale 20] [--nchs 2 --luns 2] ...
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

PUBLISHED_WRITE_RATIO = 4.0   # thesis: ZNS vs conventional SSD write bandwidth (under GC)


def devices(a):
    flash = dict(pgs_per_blk=a.pgs_per_blk, time_scale=a.time_scale)
    zns = bblib.Device("ZNS", 3, a.size, zns_zone_size_mb=a.zone_mb, zns_num_ch=a.nchs,
                       zns_num_lun=a.luns, zns_flash_type=a.flash_type,
                       zns_pg_rd_lat=a.rd_lat, zns_pg_wr_lat=a.wr_lat,
                       zns_blk_er_lat=a.er_lat, **flash)
    bb = bblib.Device("BB", 1, a.size, nchs=a.nchs, luns_per_ch=a.luns,
                      flash_type=a.flash_type, pg_rd_lat=a.rd_lat, pg_wr_lat=a.wr_lat,
                      blk_er_lat=a.er_lat, op_pcent=7, **flash)
    return [zns, bb, bblib.Device("REF", 2, 256)]


def guest_script(a):
    io = "--direct=1 --ioengine=io_uring --output-format=json"
    seqw = f"{io} --rw=write --bs=128k --iodepth=8 --size={a.region}m"
    seqr = f"{io} --rw=read --bs=128k --iodepth=8 --size={a.region}m"
    rr = f"{io} --rw=randread --bs=4k --size={a.region}m --time_based --runtime={a.runtime}"
    return f"""
Z=$(dev_of ZNS) && B=$(dev_of BB) && N=$(dev_of REF) || exit 1
blkzone reset $Z || exit 1
echo @@ref-rr16@@; fio --name=ref {rr} --iodepth=16 --filename=$N || exit 1
echo @@ref-sw@@; fio --name=ref {seqw} --filename=$N || exit 1
# the zoned drive: fio's zoned mode writes zone after zone from the write pointer
echo @@ZNS-sw@@; fio --name=zsw {seqw} --zonemode=zbd --max_open_zones=1 --filename=$Z || exit 1
echo @@BB-sw@@; fio --name=bsw {seqw} --filename=$B || exit 1
for d in ZNS:$Z BB:$B; do
  echo @@${{d%%:*}}-sr@@; fio --name=sr {seqr} --filename=${{d#*:}} || exit 1
  echo @@${{d%%:*}}-rr1@@; fio --name=rr1 {rr} --iodepth=1 --filename=${{d#*:}} || exit 1
  echo @@${{d%%:*}}-rr16@@; fio --name=rr16 {rr} --iodepth=16 --filename=${{d#*:}} || exit 1
done
echo "@@stats end@@"
echo @@end@@
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bblib.add_flash_args(ap, size=64, zone_mb=2, nchs=2, luns=2, pgs_per_blk=32, time_scale=20)
    ap.add_argument("--region", type=int, default=16, help="MiB written, then read")
    ap.add_argument("--runtime", type=int, default=5, help="seconds per random read run")
    ap.add_argument("--short", action="store_true", help="8 MiB region, 3 s reads")
    a = ap.parse_args()
    if a.short:
        a.region, a.runtime = 8, 3

    devs = devices(a)
    bblib.log(f"booting: zoned + blackbox {a.size} MiB, {a.nchs}x{a.luns} chips, "
              f"time_scale={a.time_scale}, + nossd reference ...")
    g = bblib.Guest(guest_script(a), devs, timeout=1800).run(
        lambda t, l: l.startswith("@@") and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))
    _, final = g.marks["end"]

    def bw(name, ddir):
        return bblib.fio_json(g.section(name))["jobs"][0][ddir]["bw_bytes"] / 1e6

    tests = [("sequential write 128K QD8", "sw", "write"),
             ("sequential read 128K QD8", "sr", "read"),
             ("random read 4K QD1", "rr1", "read"),
             ("random read 4K QD16", "rr16", "read")]
    chips = a.nchs * a.luns
    # the model's ceilings (MB/s): one page program / read per chip at a time
    xfer = 4096 / 800e6   # channel transfer per page at 800 MT/s x 1 byte
    model = {"sw": chips * 4096 / (a.wr_lat * 1e-9 + xfer) / a.time_scale / 1e6,
             "sr": chips * 4096 / (a.rd_lat * 1e-9 + xfer) / a.time_scale / 1e6,
             "rr1": 4096 / (a.rd_lat * 1e-9 + xfer) / a.time_scale / 1e6}
    model["rr16"] = model["sr"] * 16 / (16 + chips - 1)   # random chips, closed queue
    print(f"\nzoned vs blackbox: same flash {a.nchs} ch x {a.luns} chips, pgs_per_blk="
          f"{a.pgs_per_blk}, flash_type={a.flash_type}, rd/wr/erase {a.rd_lat // 1000}/"
          f"{a.wr_lat // 1000}/{a.er_lat // 1000} us, time_scale={a.time_scale}; "
          f"{a.size} MiB drives (zones {a.zone_mb} MiB; blackbox 7% OP), {a.region} MiB "
          "written then read; fresh drives")
    print(f"{'test':28} {'zoned MB/s':>11} {'blackbox':>9} {'zoned/bb':>9} {'model':>7} "
          f"{'x unscaled':>11}")
    rows = []
    for title, key, ddir in tests:
        z, b = bw(f"ZNS-{key}", ddir), bw(f"BB-{key}", ddir)
        rows.append(dict(test=title, zoned_mbps=z, blackbox_mbps=b, ratio=z / b,
                         model_mbps=model[key]))
        print(f"{title:28} {z:11.2f} {b:9.2f} {z / b:9.2f} {model[key]:7.2f} "
              f"{z * a.time_scale:11.1f}")
    ref_rr = bw("ref-rr16", "read")
    ref_sw = bw("ref-sw", "write")
    print(f"guest ceiling (nossd): 4K random read QD16 {ref_rr:.1f} MB/s, 128K write "
          f"{ref_sw:.1f} MB/s (must be well above the figures above)")
    print(f"device lateness p50/p99/max us: zoned {bblib.lateness(final['ZNS'])}, "
          f"blackbox {bblib.lateness(final['BB'])}")
    print(f"\nthesis: ZNS write bandwidth ~{PUBLISHED_WRITE_RATIO:.0f}x a conventional SSD's; "
          f"here zoned/blackbox write = {rows[0]['ratio']:.2f}. A fresh blackbox drive "
          "has free blocks and\nno GC, so both program each page once and write alike; the "
          "~4x appears once the conventional drive\ncollects garbage (bench/zns-gc-free.py). "
          "'model' is the flash ceiling (chips x page / latency, scaled);\nQD16 random reads "
          "on random chips keep at most chips x 16/(16+chips-1) busy.")
    print(f"transfers to an unscaled drive: the ratios and the fraction of 'model' reached; "
          f"MB/s x time_scale ({a.time_scale}) = 'x unscaled', valid for this "
          f"{chips}-chip geometry only.")
    print(f"counters: zoned {dict((k, final['ZNS'].get(k)) for k in ('pages-programmed', 'blocks-erased'))}"
          f", blackbox {dict((k, final['BB'].get(k)) for k in ('nand-pages-written', 'gc-runs'))}")
    print(f"results: {bblib.save_json('zns-vs-blackbox', dict(args=vars(a), rows=rows, ref_rr16_mbps=ref_rr, ref_sw_mbps=ref_sw, lateness_ns={s: {k: final[s][f'lateness-{k}-ns'] for k in ('p50', 'p99', 'max')} for s in ('ZNS', 'BB')}))}")


if __name__ == "__main__":
    main()
