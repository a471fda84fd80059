#!/usr/bin/env python3
"""Sequential read-ahead (sra=on) against the same drive without it, side by side in one guest.

One guest holds a zoned drive without read-ahead (ZOFF) and one with it (ZON), a blackbox
pair (BOFF, BON), all on the same flash, and a nossd drive (REF) that shows what the guest
itself can issue. Every test runs on both drives of a pair back to back, in --rounds
interleaved rounds (the first drive alternating); the table gives MB/s off and on and
the on/off ratio per round (median [min-max]).

Tests (fio, direct I/O, io_uring, on data written before):
  - sequential read 4 KiB, 128 KiB and 512 KiB at QD 1, 2, 4, 8, 16, 32, 128 (zoned);
  - random read 4 KiB QD1 and a 70/30 random read/write mix at QD1 (zoned and blackbox);
  - two sequential 4 KiB QD1 streams read at once, in different zones (zoned);
  - sequential read 4 KiB at QD 1, 4, 16 (blackbox).

The flash is calibrated on the published drive: a 4 KiB read that misses costs 58 us (a
53 us array read and the 5 us transfer of a 4 KiB page at 800 MT/s), near the 58.5 us per
read of its 70 MB/s, and a read served by read-ahead costs sra_hit_ns = 14.9 us, its
275 MB/s. That calibration fixes only the QD1 4 KiB end points; the rest (how the gain
fades with queue depth, what large reads, random reads, a mix and two streams do, how
much was prefetched and wasted) is the model's own answer. Every media time is multiplied
by --time-scale (100) so that a QD1 read takes milliseconds and what the guest adds to
each command under TCG (REF's QD1 latency, and the device thread's lateness) is smaller
beside it; MB/s x time_scale is the unscaled drive. The drives also report their own read
latency (media_read_ns / media_reads: completion minus arrival in the model), which is
what the flash did whatever the guest added: its QD1 ratio is the one that transfers; the
guest's ratios are lower by what TCG adds to every command.

Usage: bench/sra-readahead.py [--short] [--rounds 3] [--runtime 3] [--time-scale 100]
"""

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

CITATION = ("A. A. Vohra, P. Srividya: Design and Implementation of Sequential Read Ahead in "
            "Zoned Namespaces for Solid State Drives, IJISRT 5(5), 2020")
PAPER_OFF, PAPER_ON = 70.0, 275.0       # MB/s, 4 KiB sequential read at QD1
PAGE = 4096
MIB = 1 << 20
QDS = (1, 2, 4, 8, 16, 32, 128)
BB_QDS = (1, 4, 16)
BLOCKS = (("4k", 4096), ("128k", 128 * 1024), ("512k", 512 * 1024))

# The data read: the first 64 MiB for the sequential tests (zones 0-3, 16 MiB each). The
# zoned mix reads and writes zones 6-7, each half written (zeroes) before every mix run,
# not timed: fio reads below the write pointers and writes at them, and no zone fills up.
# The blackbox mix reads and overwrites 64-96 MiB.
SEQ_MB, ZONE_MB, ZMIX_MB, BMIX_MB = 64, 16, 96, 64
BB_FILL_MB = 96


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nchs", type=int, default=4)
    ap.add_argument("--luns", type=int, default=4, help="chips per channel")
    ap.add_argument("--rd-lat", type=int, default=53000, help="array read, ns (SLC)")
    ap.add_argument("--wr-lat", type=int, default=100000, help="program, ns")
    ap.add_argument("--hit-ns", type=int, default=14900, help="sra_hit_ns")
    ap.add_argument("--time-scale", type=int, default=100)
    ap.add_argument("--runtime", type=int, default=3, help="seconds per fio run")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--short", action="store_true", help="2 rounds of 2 s runs")
    ap.add_argument("--only", metavar="REGEX", help="only the tests whose key (printed "
                    "with --list) matches")
    ap.add_argument("--list", action="store_true", help="print the tests' keys and exit")
    a = ap.parse_args()
    if a.short:
        a.rounds, a.runtime = 2, 2
    bblib.require_rounds(a.rounds)
    if not 1 <= a.time_scale <= 1000000:
        sys.exit(f"--time-scale must be 1..1000000 (got {a.time_scale})")
    if a.list:
        for key, title, pair, _ in tests(a):
            print(f"{key:10} {'zoned' if pair == 'Z' else 'blackbox'}: {title}")
        sys.exit(0)
    if not tests(a):
        sys.exit(f"--only {a.only!r} matches no test (see --list)")
    return a


def devices(a):
    flash = dict(pgs_per_blk=64, time_scale=a.time_scale, ch_mts=800)
    zoned = dict(zns_zone_size_mb=ZONE_MB, zns_num_ch=a.nchs, zns_num_lun=a.luns,
                 zns_flash_type=1, zns_pg_rd_lat=a.rd_lat, zns_pg_wr_lat=a.wr_lat,
                 zns_blk_er_lat=1000000, **flash)
    bb = dict(nchs=a.nchs, luns_per_ch=a.luns, flash_type=1, pg_rd_lat=a.rd_lat,
              pg_wr_lat=a.wr_lat, blk_er_lat=1000000, **flash)
    sra = dict(sra="on", sra_hit_ns=a.hit_ns)
    return [bblib.Device("ZOFF", 3, 128, **zoned), bblib.Device("ZON", 3, 128, **zoned, **sra),
            bblib.Device("BOFF", 1, 192, **bb), bblib.Device("BON", 1, 192, **bb, **sra),
            bblib.Device("REF", 2, 128)]


def tests(a):
    """[(key, title, pair, fio options)] in the order each round runs them."""
    io = f"--direct=1 --ioengine=io_uring --time_based --runtime={a.runtime}"
    seq = f"{io} --rw=read --size={SEQ_MB}m"
    rand = f"{io} --rw=randread --bs=4k --iodepth=1 --size={SEQ_MB}m"
    out = []
    for name, _ in BLOCKS:
        for q in QDS:
            out.append((f"z{name}q{q}", f"seq read {name} QD{q}", "Z",
                        f"{seq} --bs={name} --iodepth={q}"))
    out.append(("zrand", "random read 4k QD1", "Z", rand))
    # fio's zoned mode reads below the write pointers and writes at them (zones 6-7)
    out.append(("zmix", "70/30 random r/w 4k QD1", "Z",
                f"{io} --zonemode=zbd --rw=randrw --rwmixread=70 --bs=4k --iodepth=1 "
                f"--offset={ZMIX_MB}m --size={2 * ZONE_MB}m --max_open_zones=2"))
    out.append(("z2s", "two seq streams 4k QD1", "Z",
                f"{io} --rw=read --bs=4k --iodepth=1 --group_reporting "
                f"--name=s1 --offset=0 --size={SEQ_MB // 2}m "
                f"--name=s2 --offset={SEQ_MB // 2}m --size={SEQ_MB // 2}m"))
    for q in BB_QDS:
        out.append((f"b4kq{q}", f"seq read 4k QD{q}", "B", f"{seq} --bs=4k --iodepth={q}"))
    out.append(("brand", "random read 4k QD1", "B", rand))
    out.append(("bmix", "70/30 random r/w 4k QD1", "B",
                f"{io} --rw=randrw --rwmixread=70 --bs=4k --iodepth=1 "
                f"--offset={BMIX_MB}m --size={BB_FILL_MB - BMIX_MB}m"))
    return [t for t in out if not a.only or re.search(a.only, t[0])]


def guest_script(a):
    fill = "--direct=1 --ioengine=io_uring --rw=write --bs=128k --iodepth=8 --do_verify=0"
    zoned = f"--zonemode=zbd --max_open_zones=1 --size={SEQ_MB}m"
    half = ZONE_MB // 2
    zmix_prep = (f"blkzone reset -o {ZMIX_MB * MIB // 512} -c 2 $DEV || exit 1; "
                 + "; ".join(f"dd if=/dev/zero of=$DEV bs=1M seek={ZMIX_MB + z * ZONE_MB} "
                             f"count={half} oflag=direct status=none || exit 1"
                             for z in range(2)))
    runs = []
    for r in range(1, a.rounds + 1):
        for key, _, pair, opts in tests(a):
            for dev in ((f"{pair}OFF", f"{pair}ON") if r % 2 else (f"{pair}ON", f"{pair}OFF")):
                if key == "zmix":
                    runs.append(zmix_prep.replace("$DEV", f"${dev}"))
                name = "" if "--name=" in opts else f"--name={key} "
                runs.append(f"echo '@@stats {dev}-{key}-{r}-pre@@'; "
                            f"echo @@{dev}-{key}-{r}@@; fio --filename=${dev} --output-format=json "
                            f"{name}{opts} || exit 1; echo '@@stats {dev}-{key}-{r}@@'")
    body = "\n".join(runs)
    return f"""
ZOFF=$(dev_of ZOFF) && ZON=$(dev_of ZON) && BOFF=$(dev_of BOFF) && BON=$(dev_of BON) &&
REF=$(dev_of REF) || exit 1
echo @@ref@@; fio --name=ref --direct=1 --ioengine=io_uring --rw=read --bs=4k --iodepth=1 \\
  --size={SEQ_MB}m --time_based --runtime={a.runtime} --output-format=json \\
  --filename=$REF || exit 1
echo @@fill@@
fio {fill} --name=z1 --filename=$ZOFF {zoned} --name=z2 --filename=$ZON {zoned} \\
  --name=b1 --filename=$BOFF --size={BB_FILL_MB}m --name=b2 --filename=$BON --size={BB_FILL_MB}m \\
  >/tmp/fill.out 2>&1 || {{ cat /tmp/fill.out; exit 1; }}
echo "fill done"
{body}
echo "@@stats end@@"
echo @@end@@
"""


def model(a, bs, qd, sra):
    """The flash's MB/s (scaled) for sequential reads of bs at queue depth qd: the chips in
    use at once, a page read taking rd + transfer, a hit hit_ns; SRA only where it stays
    enabled (small reads arriving with fewer than sra_max_qd = 8 outstanding: QD 8 at most)."""
    chips = a.nchs * a.luns
    miss = (a.rd_lat + PAGE * 1000 / 800) * 1e-9 * a.time_scale
    pages = max(1, bs // PAGE)
    nand = chips * PAGE / miss                                  # bytes/s, every chip busy
    off = min(nand, qd * bs / (miss * -(-pages // chips)))      # rounds of chips per read
    if not sra or bs > 64 * 1024 or qd > 8:
        return off / 1e6
    return min(nand, qd * bs / (a.hit_ns * 1e-9 * a.time_scale * pages)) / 1e6


def main():
    a = parse_args()
    devs = devices(a)
    n = len(tests(a)) * 2 * a.rounds
    bblib.log(f"booting: zoned and blackbox drives with and without read-ahead "
              f"({a.nchs}x{a.luns} chips, time_scale={a.time_scale}) + nossd; {n} fio runs "
              f"of {a.runtime} s ...")
    g = bblib.Guest(guest_script(a), devs, timeout=7200).run(
        lambda t, l: l.startswith("@@ZOFF-z4kq1-") and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))

    def bw(section):
        j = bblib.fio_json(g.section(section))["jobs"][0]
        return (j["read"]["bw_bytes"] + j["write"]["bw_bytes"]) / 1e6

    def grew(dev, key, r, name):
        qmp = name.replace("_", "-")
        return g.marks[f"{dev}-{key}-{r}"][1][dev][qmp] - \
            g.marks[f"{dev}-{key}-{r}-pre"][1][dev][qmp]

    ref_j = bblib.fio_json(g.section("ref"))["jobs"][0]["read"]
    guest_us = ref_j["clat_ns"]["mean"] / 1000 + ref_j["slat_ns"]["mean"] / 1000
    rounds = range(1, a.rounds + 1)
    rows = []
    print(f"\nsequential read-ahead: {a.nchs} ch x {a.luns} SLC chips, read {a.rd_lat / 1000:.0f}"
          f" us + 4 KiB transfer at 800 MT/s, sra_hit_ns={a.hit_ns}, time_scale="
          f"{a.time_scale}; sra defaults otherwise (ramp 4, window 32 pages, max_qd 8, "
          f"max_read 64 KiB); {a.runtime} s runs, {a.rounds} interleaved rounds, "
          "median [min-max]")
    print(f"{'drive':8} {'test':25} {'off MB/s':>19} {'on MB/s':>19} {'on/off per round':>17} "
          f"{'model':>5} {'device read us':>14} {'dev x':>5} {'hits':>5} {'prefetched':>10} "
          f"{'wasted':>6}")
    for key, title, pair, _ in tests(a):
        off = [bw(f"{pair}OFF-{key}-{r}") for r in rounds]
        on = [bw(f"{pair}ON-{key}-{r}") for r in rounds]
        ratio = [y / x for x, y in zip(off, on)]
        dev = f"{pair}ON"
        hits = sum(grew(dev, key, r, "sra_hits") for r in rounds)
        misses = sum(grew(dev, key, r, "sra_misses") for r in rounds)
        pref = sum(grew(dev, key, r, "sra_prefetched_pages") for r in rounds)
        wasted = sum(grew(dev, key, r, "sra_wasted_pages") for r in rounds)
        # the model's own mean read latency, unscaled: what the device took, not the guest
        lat = {side: sum(grew(f"{pair}{side.upper()}", key, r, "media_read_ns") for r in rounds)
               / max(1, sum(grew(f"{pair}{side.upper()}", key, r, "media_reads")
                            for r in rounds)) / a.time_scale / 1000 for side in ("off", "on")}
        row = dict(drive="zoned" if pair == "Z" else "blackbox", test=title, key=key,
                   off_mbps=bblib.spread(off), on_mbps=bblib.spread(on),
                   ratio=bblib.spread(ratio), hit_fraction=hits / max(1, hits + misses),
                   prefetched_pages=pref, wasted_pages=wasted, device_read_us=lat)
        expect = ""
        if key.startswith("z") and "q" in key and key[1:].split("q")[0] in dict(BLOCKS):
            bs = dict(BLOCKS)[key[1:].split("q")[0]]
            qd = int(key.split("q")[-1])
            row["model_ratio"] = model(a, bs, qd, True) / model(a, bs, qd, False)
            expect = f"{row['model_ratio']:5.2f}"
        rows.append(row)
        print(f"{row['drive']:8} {title:25} {bblib.fmt_spread(off, 3):>19} "
              f"{bblib.fmt_spread(on, 3):>19} {bblib.fmt_spread(ratio, 2):>17} {expect:>5} "
              f"{lat['off']:6.1f}/{lat['on']:<7.1f} {lat['off'] / max(lat['on'], 1e-9):5.2f} "
              f"{row['hit_fraction']:5.0%} {pref:10d} {wasted:6d}")

    # QD1 without the guest: each read's time minus what the guest adds to any read
    def corrected(key):
        r = next(x for x in rows if x["key"] == key)
        t_off = PAGE / (r["off_mbps"]["median"] * 1e6) * 1e6 - guest_us
        t_on = PAGE / (r["on_mbps"]["median"] * 1e6) * 1e6 - guest_us
        return t_off / t_on, t_off / a.time_scale, t_on / a.time_scale

    keys = {r["key"] for r in rows}
    z1 = b1 = None
    if "z4kq1" in keys:
        z1, z1_off_us, z1_on_us = corrected("z4kq1")
        z1_row = next(r for r in rows if r["key"] == "z4kq1")
        dev = z1_row["device_read_us"]
        print(f"\nzoned QD1: the device's own reads took {dev['off']:.1f} us without read-ahead "
              f"and {dev['on']:.1f} us with it (x{dev['off'] / dev['on']:.2f}, unscaled model "
              f"time); the guest saw x{z1_row['ratio']['median']:.2f}, as it adds its own time "
              f"to every read:\na 4 KiB QD1 read of the nossd drive takes {guest_us:.0f} us "
              f"(taking that out: x{z1:.2f}, a miss {z1_off_us:.1f} us, a hit {z1_on_us:.1f} us "
              "unscaled), and completions were posted late by the p50/p99 below")
        print(f"published ({CITATION}): 4 KiB sequential read QD1 {PAPER_OFF:.0f} -> "
              f"{PAPER_ON:.0f} MB/s = x{PAPER_ON / PAPER_OFF:.2f}; the gain fades as queue "
              "depth grows; no harm to other workloads.")
        print(f"here: the device x{dev['off'] / dev['on']:.2f} at QD1 ({PAGE / dev['off']:.0f}"
              f" -> {PAGE / dev['on']:.0f} MB/s unscaled, one read at a time); seen from the "
              f"guest x{z1_row['ratio']['median']:.2f} "
              f"({z1_row['off_mbps']['median'] * a.time_scale:.0f} -> "
              f"{z1_row['on_mbps']['median'] * a.time_scale:.0f} MB/s x {a.time_scale}).")
    if "b4kq1" in keys:
        b1 = corrected("b4kq1")[0]
        print(f"blackbox QD1 ratio without the guest's overhead: x{b1:.2f}")
    print("'model': the flash's on/off ratio for that test (every chip in use, hits at "
          "hit_ns, read-ahead off above QD8 and 64 KiB);\n'device read us': the drives' own "
          "mean read latency off/on (media_read_ns / media_reads, unscaled; queueing "
          "included at QD > 1), 'dev x' their ratio (at QD1 the device's gain);\n'hits': share of the on drive's host-read pages served by "
          "read-ahead; 'prefetched', 'wasted': pages read ahead, and torn down unread, over "
          "all rounds.")
    print("transfers: the device's latencies and ratios (a flash whose QD1 miss and hit "
          "cost 58 and 14.9 us); the guest's ratios fall short of them by what TCG adds to each "
          f"command; MB/s x {a.time_scale} for this {a.nchs * a.luns}-chip geometry only.")
    _, final = g.marks["end"]
    print(f"device lateness p50/p99/max us: zoned {bblib.lateness(final['ZON'])}, blackbox "
          f"{bblib.lateness(final['BON'])}; transitions outside the table: "
          f"{final['ZON']['sra-bad-transitions'] + final['BON']['sra-bad-transitions']}")
    if any(r["key"].startswith("z4kq") for r in rows):
        plot(a, rows)
    print("results: " + str(bblib.save_json("sra-readahead", dict(
        args=vars(a), rows=rows, guest_qd1_us=guest_us, qd1_ratio_without_guest=z1,
        blackbox_qd1_ratio_without_guest=b1, citation=CITATION,
        paper=dict(off_mbps=PAPER_OFF, on_mbps=PAPER_ON)), guest=g)))


def plot(a, rows):
    plt = bblib.pyplot()
    if not plt:
        return
    fig, axes = plt.subplots(1, len(BLOCKS) + 1, figsize=(17, 3.8))
    ratio_ax = axes[-1]
    for ax, (name, bs) in zip(axes, BLOCKS):
        sel = [r for r in rows if r["key"].startswith(f"z{name}q")]
        for side, style in (("off", "o--"), ("on", "s-")):
            ys = [r[f"{side}_mbps"]["median"] * a.time_scale for r in sel]
            lo = [y - r[f"{side}_mbps"]["min"] * a.time_scale for y, r in zip(ys, sel)]
            hi = [r[f"{side}_mbps"]["max"] * a.time_scale - y for y, r in zip(ys, sel)]
            xs = [QDS.index(int(r["key"].split("q")[-1])) for r in sel]
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt=style, capsize=3,
                        label=f"SRA {side}")
        if bs == PAGE:
            ax.axhline(PAPER_OFF, color="grey", ls=":", label="paper off")
            ax.axhline(PAPER_ON, color="black", ls=":", label="paper on")
        ax.set_xticks(range(len(QDS)), [str(q) for q in QDS])
        ax.set_xlabel("queue depth")
        ax.set_title(f"zoned, sequential read {name}")
        ax.set_ylabel("MB/s (unscaled)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
        if sel:
            ratio_ax.plot([QDS.index(int(r["key"].split("q")[-1])) for r in sel],
                          [r["ratio"]["median"] for r in sel], "o-", label=f"{name} (guest)")
    dev = [r for r in rows if r["key"] == "z4kq1"]
    if dev:
        d = dev[0]["device_read_us"]
        ratio_ax.plot([0], [d["off"] / d["on"]], "k*", ms=10, label="4k QD1 (device)")
    ratio_ax.plot([0], [PAPER_ON / PAPER_OFF], "rx", ms=10, mew=2, label="paper 4k QD1")
    ratio_ax.axhline(1, color="grey", lw=0.8)
    ratio_ax.set_xticks(range(len(QDS)), [str(q) for q in QDS])
    ratio_ax.set_xlabel("queue depth")
    ratio_ax.set_ylabel("on / off")
    ratio_ax.set_title("read-ahead gain, zoned")
    ratio_ax.legend(fontsize=8)
    bblib.save_plot(fig, "sra-readahead")


if __name__ == "__main__":
    main()
