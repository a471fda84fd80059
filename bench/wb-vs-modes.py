#!/usr/bin/env python3
"""Blackbox vs whitebox (host FTL) vs zoned on one flash: sequential write/read, 4 KiB random read.

One guest holds three drives on the same flash (channels, chips, one plane, pages per block,
4 KiB pages, one latency per operation, time_scale) and two references:
- blackbox (femu_mode=1, 7% OP): the device's FTL;
- whitebox (femu_mode=0) served as a block device by the guest's host FTL (`hostftl start
  --format --op 7`, NBD /dev/nbd0): the mapping and striping run in the guest;
- zoned (femu_mode=3, zones spanning every chip): written sequentially with fio
  zonemode=zbd, reset before every round (not timed);
- nossd: what the guest itself can issue, and `hostftl` on its in-memory OCSSD (`--dev
  mem:MiB`, /dev/nbd1, each test right after the whitebox drive's, every round): what the
  host FTL's path (NBD, the FTL's CPU work, under TCG)
  allows without any flash (its own geometry, 20% OP: the path, not GC, is measured).
No drive runs GC here: each round writes the same --region MiB again, at most 3/4 of the
drive in all, so every write costs one page program; host-FTL GC is bench/wb-gc.py.
Every test runs on the three drives back to back in --rounds rounds (order rotating).

If the guest image has no `hostftl`, the whitebox column is skipped with a message.

Usage: bench/wb-vs-modes.py [--short] [--rounds 3] [--region 16] [--time-scale 20]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

TESTS = [  # (title, key, fio direction)
    ("sequential write 128K QD8", "sw", "write"),
    ("sequential read 128K QD8", "sr", "read"),
    ("random read 4K QD1", "rr1", "read"),
    ("random read 4K QD16", "rr16", "read"),
]
SIDES = [("BB", "blackbox"), ("WB", "whitebox+hostftl"), ("ZNS", "zoned")]


def devices(a):
    # 4 KiB pages everywhere: blackbox 8 x 512 B sectors, zoned the same flash pages,
    # whitebox one 4 KiB sector per page on one plane (WS_MIN = one page)
    lat = dict(pg_rd_lat=a.rd_lat, pg_wr_lat=a.wr_lat, blk_er_lat=a.er_lat)
    zns = bblib.Device("ZNS", 3, a.size, zns_zone_size_mb=a.zone_mb, zns_num_ch=a.nchs,
                       zns_num_lun=a.luns, zns_num_plane=1, zns_flash_type=a.flash_type,
                       zns_pg_rd_lat=a.rd_lat, zns_pg_wr_lat=a.wr_lat, zns_blk_er_lat=a.er_lat,
                       pgs_per_blk=a.pgs_per_blk, time_scale=a.time_scale)
    bb = bblib.Device("BB", 1, a.size, nchs=a.nchs, luns_per_ch=a.luns, pls_per_lun=1,
                      pgs_per_blk=a.pgs_per_blk, flash_type=a.flash_type, op_pcent=7,
                      time_scale=a.time_scale, **lat)
    wb = bblib.Device("WB", 0, a.size, lba_index=1, lnum_ch=a.nchs, lnum_lun=a.luns,
                      lnum_pln=1, lpgs_per_blk=a.pgs_per_blk, lsecs_per_pg=1,
                      flash_type=a.flash_type, time_scale=a.time_scale, **lat)
    return [zns, bb, wb, bblib.Device("REF", 2, 256)]


def guest_script(a):
    io = "--direct=1 --ioengine=io_uring --output-format=json"
    seqw = f"{io} --rw=write --bs=128k --iodepth=8 --size={a.region}m"
    seqr = f"{io} --rw=read --bs=128k --iodepth=8 --size={a.region}m"
    rr = f"{io} --rw=randread --bs=4k --size={a.region}m --time_based --runtime={a.runtime}"
    runs = []
    for r in range(1, a.rounds + 1):
        k = (r - 1) % 3
        drives = [s for s, _ in SIDES[k:] + SIDES[:k]]
        runs.append("blkzone reset $ZNS || exit 1")
        for key, opts in (("sw", seqw), ("sr", seqr), ("rr1", f"{rr} --iodepth=1"),
                          ("rr16", f"{rr} --iodepth=16")):
            for d in drives:
                zoned = " --zonemode=zbd --max_open_zones=1" if d == "ZNS" and key == "sw" else ""
                run = (f"echo @@{d}-{key}-{r}@@; fio --name={key} {opts}{zoned} "
                       f"--filename=${d} || exit 1")
                runs.append(f"[[ -n $WB ]] && {{ {run}; }}" if d == "WB" else run)
                if d == "WB":
                    # the host FTL's path without flash, right after it: its ceiling
                    runs.append(f"[[ -n $WB ]] && {{ echo @@MEM-{key}-{r}@@; fio --name={key} "
                                f"{opts} --filename=$M || exit 1; }}")
    body = "\n".join(runs)
    return f"""
ZNS=$(dev_of ZNS) && BB=$(dev_of BB) && W=$(dev_of WB) && N=$(dev_of REF) || exit 1
oc_geometry $W WB || exit 1
WB=
if command -v hostftl >/dev/null; then
  hostftl start --dev $W --nbd /dev/nbd0 --format --op 7 || exit 1
  hostftl start --dev mem:{a.size} --nbd /dev/nbd1 --format --op 20 || exit 1
  WB=/dev/nbd0 M=/dev/nbd1
  echo "hostftl: $(blockdev --getsize64 $WB) bytes exposed"
else
  echo "@@no-hostftl@@"
fi
echo @@ref-rr16@@; fio --name=ref {rr} --iodepth=16 --filename=$N || exit 1
echo @@ref-sw@@; fio --name=ref {seqw} --filename=$N || exit 1
echo "@@stats start@@"
{body}
echo "@@stats end@@"
if [[ -n $WB ]]; then
  echo @@wb-ftl-stats@@; hostftl stop --nbd /dev/nbd0 || exit 1
  hostftl stop --nbd /dev/nbd1 >/dev/null || exit 1
fi
echo @@wb-vendor-log@@; vendor_log $W
echo @@end@@
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a = bblib.parse_mode_compare_args(ap)
    if a.pgs_per_blk < 1 or a.pgs_per_blk & (a.pgs_per_blk - 1) or a.luns & (a.luns - 1):
        sys.exit(f"--pgs-per-blk and --luns must be powers of two (whitebox chunks and PUs; "
                 f"got {a.pgs_per_blk}, {a.luns})")
    # every drive overwrites its region each round: no GC as long as a quarter stays free
    if not 1 <= a.region or a.region % a.zone_mb or a.region * a.rounds > 0.75 * a.size:
        sys.exit(f"--region must be a multiple of --zone-mb ({a.zone_mb}) with --rounds x "
                 f"--region at most 3/4 of --size ({a.size}) MiB (got {a.region} x {a.rounds})")

    devs = devices(a)
    bblib.log(f"booting: blackbox + whitebox + zoned {a.size} MiB, {a.nchs}x{a.luns} chips, "
              f"time_scale={a.time_scale}, + nossd; {a.rounds} rounds ...")
    g = bblib.Guest(guest_script(a), devs, timeout=3600).run(
        lambda t, l: (l.startswith("@@BB-sw") or l.startswith("@@no-hostftl"))
        and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))
    _, final = g.marks["end"]
    has_wb = not any(l.strip() == "@@no-hostftl@@" for _, l in g.lines)
    sides = [s for s in SIDES if has_wb or s[0] != "WB"]

    def bw(name, ddir):
        return bblib.fio_json(g.section(name))["jobs"][0][ddir]["bw_bytes"] / 1e6

    chips = a.nchs * a.luns
    xfer = 4096 / 800e6
    model = {"sw": chips * 4096 / (a.wr_lat * 1e-9 + xfer) / a.time_scale / 1e6,
             "sr": chips * 4096 / (a.rd_lat * 1e-9 + xfer) / a.time_scale / 1e6,
             "rr1": 4096 / (a.rd_lat * 1e-9 + xfer) / a.time_scale / 1e6}
    model["rr16"] = model["sr"] * 16 / (16 + chips - 1)
    print(f"\nblackbox vs whitebox+hostftl vs zoned: same flash {a.nchs} ch x {a.luns} chips, "
          f"1 plane, pgs_per_blk={a.pgs_per_blk}, 4 KiB pages, flash_type={a.flash_type}, "
          f"rd/wr/erase {a.rd_lat // 1000}/{a.wr_lat // 1000}/{a.er_lat // 1000} us, "
          f"time_scale={a.time_scale};\n{a.size} MiB drives (blackbox and host FTL 7% OP, zones "
          f"{a.zone_mb} MiB), {a.region} MiB written then read; no GC; {a.rounds} interleaved "
          "rounds, MB/s median [min-max]")
    if not has_wb:
        print("WHITEBOX SKIPPED: the guest image has no `hostftl` (guest/hostftl not built "
              "into it yet); build an image from a tree that has it: images/build-image.sh DIR, "
              "FEMU_IMAGE_DIR=DIR")
    head = f"{'test':26} " + " ".join(f"{n:>19}" for _, n in sides)
    head += " " + " ".join(f"{n.split('+')[0][:5] + '/bb':>19}" for s, n in sides if s != "BB")
    if has_wb:
        head += f" {'hostftl, no flash':>19}"
    print(head + f" {'model':>6}")
    rows = []
    rounds = range(1, a.rounds + 1)
    for title, key, ddir in TESTS:
        vals = {s: [bw(f"{s}-{key}-{r}", ddir) for r in rounds] for s, _ in sides}
        ratios = {s: [x / y for x, y in zip(vals[s], vals["BB"])] for s, _ in sides if s != "BB"}
        mem = [bw(f"MEM-{key}-{r}", ddir) for r in rounds] if has_wb else []
        rows.append(dict(test=title, key=key, model_mbps=model[key],
                         **{f"{s}_mbps": bblib.spread(v) for s, v in vals.items()},
                         **{f"{s}_over_bb": bblib.spread(v) for s, v in ratios.items()},
                         **({"hostftl_mem_mbps": bblib.spread(mem)} if mem else {})))
        print(f"{title:26} " + " ".join(f"{bblib.fmt_spread(vals[s], 2):>19}" for s, _ in sides)
              + " " + " ".join(f"{bblib.fmt_spread(ratios[s], 2):>19}" for s in ratios)
              + (f" {bblib.fmt_spread(mem, 1):>19}" if mem else "") + f" {model[key]:6.2f}")
    ref = dict(rr16=bw("ref-rr16", "read"), sw=bw("ref-sw", "write"))
    print(f"guest ceiling (nossd): 4K random read QD16 {ref['rr16']:.1f} MB/s, 128K write "
          f"{ref['sw']:.1f} MB/s")
    if has_wb:
        print("'hostftl, no flash': the same fio job, right after the whitebox one, on hostftl's "
              "in-memory OCSSD (the host FTL's path alone:\nNBD and its CPU work under TCG); "
              "where it is not well above the whitebox column, that column is TCG's, not the "
              "flash's")
    print("device lateness p50/p99/max us: " + ", ".join(
        f"{n} {bblib.lateness(final[s])}" for s, n in SIDES))
    ftl = {}
    if has_wb:
        ftl = {k: v for k, v in (l.split("=", 1) for l in g.section("wb-ftl-stats").split()
                                 if "=" in l)}
        print(f"host FTL: WAF {ftl.get('WAF')}, GC lines {ftl.get('GC_LINES')}, pad sectors "
              f"{ftl.get('PAD_SECTORS')}, metadata sectors {ftl.get('META_WRITE_SECTORS')}; "
              f"sectors read by the host {ftl.get('HOST_READ_SECTORS')}, by the FTL from the "
              f"device {ftl.get('DEV_READ_SECTORS')}")
    vlog = bblib.vendor_log(g.section("wb-vendor-log"))
    geo = bblib.geometry(g, "WB")
    print(f"whitebox geometry: {geo['num_grp']}x{geo['num_pu']} PUs, {geo['num_chk']} chunks of "
          f"{geo['clba']} sectors, WS_MIN {geo['ws_min']}, WS_OPT {geo['ws_opt']}; device "
          f"units programmed {vlog.get('units_programmed')}, chunk erases "
          f"{vlog.get('chunk_erases')}, pages read {vlog.get('pages_read')} (cache hits "
          f"{vlog.get('cache_read_hits')})")
    print(f"\n'model' is the flash ceiling (chips x page / latency, scaled); QD16 random reads on "
          f"random chips keep at most chips x 16/(16+chips-1) busy.\nThe host FTL serves one "
          "request at a time (a single-threaded NBD server) and reads one device command at a "
          "time, one per run of\nsectors contiguous in one chunk (it stripes WS_OPT = "
          f"{geo['ws_opt']} sector(s) per PU in turn): its reads use one chip at a time whatever "
          "the queue depth,\nwhile its writes complete into the PUs' write caches and still "
          "spread over the chips.\n"
          "Transfers to an unscaled drive: the ratios to blackbox and the fraction of "
          f"'model' reached, for the\ndevice-side work; MB/s x time_scale ({a.time_scale}) only "
          "where the guest (and for the whitebox, the host-FTL path ceiling) stays far above.\n"
          "The host FTL's own CPU cost is inflated by TCG: compare its column with the "
          "host-FTL path ceiling.")
    print("results: " + str(bblib.save_json("wb-vs-modes", dict(
        args=vars(a), has_whitebox=has_wb, rows=rows, ref_mbps=ref,
        hostftl_stats=ftl, geometry=geo, vendor_log=vlog,
        lateness_ns={s: {k: final[s][f"lateness-{k}-ns"] for k in ("p50", "p99", "max")}
                     for s, _ in SIDES}), guest=g)))


if __name__ == "__main__":
    main()
