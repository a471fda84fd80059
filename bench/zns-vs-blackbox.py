#!/usr/bin/env python3
"""Zoned vs blackbox on the same flash: sequential write/read and 4 KiB random read.

One guest holds three drives: a zoned drive (femu_mode=3), a blackbox drive (femu_mode=1,
7% OP) on the same channels, chips, pages per block and latencies, and a nossd drive that
shows what the guest itself can issue. Both model drives use the same time_scale, so the
model (not TCG) is the bottleneck; the ratios transfer to an unscaled drive, the MB/s are
divided by time_scale.

The blackbox FTL has free blocks and runs no GC here (each round overwrites the same
region, at most 3/4 of the drive in all), so its writes cost one page program each, like
the zoned drive's, which is reset before every round (not timed). Every test runs on both
drives back to back in --rounds rounds, the first drive alternating. Zoned drives win on
writes against a conventional SSD that is doing GC: see bench/zns-gc-free.py.

Usage: bench/zns-vs-blackbox.py [--short] [--rounds 3] [--time-scale 20] [--nchs 2 --luns 2]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

CITATION = ("M. Bjørling, A. Aghayev, H. Holmberg, A. Ramesh, D. Le Moal, G. R. Ganger, "
            "G. Amvrosiadis: ZNS: Avoiding the Block Interface Tax for Flash-based SSDs, "
            "USENIX ATC 2021, Figure 1")


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


TESTS = [  # (title, key, fio direction)
    ("sequential write 128K QD8", "sw", "write"),
    ("sequential read 128K QD8", "sr", "read"),
    ("random read 4K QD1", "rr1", "read"),
    ("random read 4K QD16", "rr16", "read"),
]


def guest_script(a):
    io = "--direct=1 --ioengine=io_uring --output-format=json"
    seqw = f"{io} --rw=write --bs=128k --iodepth=8 --size={a.region}m"
    seqr = f"{io} --rw=read --bs=128k --iodepth=8 --size={a.region}m"
    rr = f"{io} --rw=randread --bs=4k --size={a.region}m --time_based --runtime={a.runtime}"
    runs = []
    for r in range(1, a.rounds + 1):
        drives = ["ZNS", "BB"] if r % 2 else ["BB", "ZNS"]
        # the zoned drive starts every round empty (its reset is not timed); the blackbox
        # drive overwrites the same LBAs, on free blocks: both program each page once
        runs.append("blkzone reset $ZNS || exit 1")
        for key, opts in (("sw", seqw), ("sr", seqr), ("rr1", f"{rr} --iodepth=1"),
                          ("rr16", f"{rr} --iodepth=16")):
            for d in drives:
                zoned = " --zonemode=zbd --max_open_zones=1" if d == "ZNS" and key == "sw" else ""
                runs.append(f"echo @@{d}-{key}-{r}@@; fio --name={key} {opts}{zoned} "
                            f"--filename=${d} || exit 1")
    body = "\n".join(runs)
    return f"""
ZNS=$(dev_of ZNS) && BB=$(dev_of BB) && N=$(dev_of REF) || exit 1
echo @@ref-rr16@@; fio --name=ref {rr} --iodepth=16 --filename=$N || exit 1
echo @@ref-sw@@; fio --name=ref {seqw} --filename=$N || exit 1
{body}
echo "@@stats end@@"
echo @@end@@
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a = bblib.parse_mode_compare_args(ap)
    # the blackbox drive overwrites its region every round: keep a quarter of its lines
    # free, or GC (background from 10% free) would join the later rounds
    if not 1 <= a.region or a.region % a.zone_mb or a.region * a.rounds > 0.75 * a.size:
        sys.exit(f"--region must be a multiple of --zone-mb ({a.zone_mb}) with --rounds x "
                 f"--region at most 3/4 of --size ({a.size}) MiB (got {a.region} x {a.rounds})")

    devs = devices(a)
    bblib.log(f"booting: zoned + blackbox {a.size} MiB, {a.nchs}x{a.luns} chips, "
              f"time_scale={a.time_scale}, + nossd reference; {a.rounds} rounds ...")
    g = bblib.Guest(guest_script(a), devs, timeout=3600).run(
        lambda t, l: l.startswith("@@ZNS-sw") and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))
    _, final = g.marks["end"]

    def bw(name, ddir):
        return bblib.fio_json(g.section(name))["jobs"][0][ddir]["bw_bytes"] / 1e6

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
          f"written then read; no GC; {a.rounds} interleaved rounds, median [min-max]")
    print(f"{'test':26} {'zoned MB/s':>19} {'blackbox MB/s':>19} {'zoned/bb per round':>19} "
          f"{'model':>6} {'x unscaled':>10}")
    rows = []
    rounds = range(1, a.rounds + 1)
    for title, key, ddir in TESTS:
        z = [bw(f"ZNS-{key}-{r}", ddir) for r in rounds]
        b = [bw(f"BB-{key}-{r}", ddir) for r in rounds]
        ratio = [x / y for x, y in zip(z, b)]
        rows.append(dict(test=title, zoned_mbps=bblib.spread(z), blackbox_mbps=bblib.spread(b),
                         ratio=bblib.spread(ratio), model_mbps=model[key]))
        print(f"{title:26} {bblib.fmt_spread(z, 2):>19} {bblib.fmt_spread(b, 2):>19} "
              f"{bblib.fmt_spread(ratio, 2):>19} {model[key]:6.2f} "
              f"{rows[-1]['zoned_mbps']['median'] * a.time_scale:10.1f}")
    ref_rr = bw("ref-rr16", "read")
    ref_sw = bw("ref-sw", "write")
    print(f"guest ceiling (nossd): 4K random read QD16 {ref_rr:.1f} MB/s, 128K write "
          f"{ref_sw:.1f} MB/s (must be well above the figures above)")
    print(f"device lateness p50/p99/max us: zoned {bblib.lateness(final['ZNS'])}, "
          f"blackbox {bblib.lateness(final['BB'])}")
    print(f"\nhere zoned/blackbox write = {rows[0]['ratio']['median']:.2f}: a blackbox drive with "
          "free blocks runs no GC, so both program each page once\nand write alike. "
          f"published: none for this case: {CITATION} compares against a\nblock SSD "
          "under GC; the gap appears once the conventional drive collects garbage: "
          "bench/zns-gc-free.py.\n'model' is the flash "
          "ceiling (chips x page / latency, scaled); QD16 random reads on random chips keep at "
          "most\nchips x 16/(16+chips-1) busy.")
    print(f"transfers to an unscaled drive: the ratios and the fraction of 'model' reached; "
          f"MB/s x time_scale ({a.time_scale}) = 'x unscaled', valid for this "
          f"{chips}-chip geometry only.")
    counters = dict(zoned={k: final["ZNS"].get(k) for k in ("pages-programmed", "blocks-erased")},
                    blackbox={k: final["BB"].get(k) for k in ("nand-pages-written", "gc-runs")})
    print(f"counters: {counters}")
    print("results: " + str(bblib.save_json("zns-vs-blackbox", dict(
        args=vars(a), rows=rows, ref_rr16_mbps=ref_rr, ref_sw_mbps=ref_sw, counters=counters,
        citation=CITATION, lateness_ns={s: {k: final[s][f"lateness-{k}-ns"]
                                            for k in ("p50", "p99", "max")}
                                        for s in ("ZNS", "BB")}), guest=g)))


if __name__ == "__main__":
    main()
