#!/usr/bin/env python3
"""Power-loss flush time of the PLP region: normal flush against balanced flush.

For PLP regions of 32, 64, 128 and 256 MiB the guest fills the region with protected log
writes (plp=selective with the log zones in plp_zones; 512 KiB direct writes, each zone
filled to --zone-fill-mb of its 16 MiB and the next one begun, so the zones stay open and
their data stays in the buffer), the host cuts the power over QMP, and the device reports
what its hold-up flush took, both ways, on the same buffered pages:
  normal    each page to its own zone location: the chips of the few zones written;
  balanced  each page to the chip free earliest (reserved blocks, OOB records).
It also reports the worst case it computes at start (a full region written in order
from zone 0, flushed on idle chips), and the hold-up energy and capacitance of both.

The flash is the paper's: 8 channels x 8 chips, 4 KiB pages, 1024-page blocks (4 MiB),
read 40 us, program 100 us, transfer 40 us, 16 MiB zones. A zone spans zns_stripe chips:
--stripes gives the values measured (the first is the headline; 1: a zone on one chip,
which is what makes the normal flush slow); a zone's chips are consecutive, channel
first: stripe 8 puts a zone on one chip of every channel, stripe 64 on every chip.

The flush times are model time, computed by the device from the buffered pages and the
chip timelines: they do not depend on how fast the TCG guest wrote, so the flash runs
unscaled and the figures transfer as they are. Each round starts the log at another zone
(7 zones further: other chips and channels); the model is deterministic, so a spread
comes only from that placement.

Usage: bench/plp-flush-time.py [--short] [--sizes 32,64,128,256] [--stripes 1,2,8,64]
                               [--rounds 2] [--zone-fill-mb 15]
"""

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import plplib  # noqa: E402

CITATION = (plplib.CITATION + ": PLP flush time -96 % on average, balanced vs normal, PLP "
            "buffers of 32-256 MB")
PAPER_REDUCTION = 96.0
ZONE_MB = plplib.ZONE_MB
ROUND_SHIFT = 7                 # zones between the rounds' first log zones


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="32,64,128,256", help="PLP regions, MiB")
    ap.add_argument("--stripes", default="1,2,8,64", help="zns_stripe values, headline first")
    ap.add_argument("--rounds", type=int, default=2, help="log start zones per size (default 2)")
    ap.add_argument("--zone-fill-mb", type=int, default=15,
                    help="MiB written per zone before the next (below 16: zones stay open)")
    ap.add_argument("--short", action="store_true", help="stripes 1 and 8 only")
    a = ap.parse_args()
    a.sizes = [int(x) for x in a.sizes.split(",")]
    a.stripes = [int(x) for x in a.stripes.split(",")]
    if a.short:
        a.stripes = a.stripes[:1] + [s for s in a.stripes[1:] if s == 8][:1]
    bblib.require_rounds(a.rounds)
    if not 1 <= a.zone_fill_mb < ZONE_MB:
        sys.exit(f"--zone-fill-mb must be 1..{ZONE_MB - 1}: a full zone is written out "
                 "at once (its buffer drained), which empties the region before the cut")
    return a


def log_zones(a, size):
    return -(-size // a.zone_fill_mb)


def device_mb(a):
    zones = log_zones(a, max(a.sizes)) + ROUND_SHIFT * (a.rounds - 1)
    return (zones + 1) * ZONE_MB


def devices(a, stripe):
    mb = device_mb(a)
    out = []
    for size in a.sizes:
        for r in range(a.rounds):
            out.append(bblib.Device(
                f"P{size}R{r}", 3, mb, **plplib.PAPER_FLASH, zns_stripe=stripe, plp="selective",
                plp_zones=f"0-{mb // ZONE_MB - 1}", plp_buf_mb=size, buf_mb=16,
                plp_flush_pct=100))
    return out


def guest_script(a):
    """Each device: the log written zone after zone, then a cut marker."""
    lines = []
    for size in a.sizes:
        for r in range(a.rounds):
            serial = f"P{size}R{r}"
            lines.append(f"D=$(dev_of {serial}) || exit 1")
            z, left = ROUND_SHIFT * r, size
            while left > 0:
                n = min(a.zone_fill_mb, left)
                # 512 KiB writes: two a MiB
                lines.append(f"dd if=/dev/zero of=$D bs=512K count={2 * n} "
                             f"seek={z * ZONE_MB * 2} oflag=direct status=none || exit 1")
                z, left = z + 1, left - n
            lines.append(f"echo '@@cut {serial}@@'")
    return "\n".join(lines) + "\necho @@end@@\n"


def reduction(normal, balanced):
    return 100.0 * (1 - balanced / normal) if normal else 0.0


def main():
    a = parse_args()
    rows = []
    host_notes = []
    for stripe in a.stripes:
        devs = devices(a, stripe)
        cuts = {}

        def on_line(t, line):
            s = line.strip()
            if s.startswith("@@cut ") and s.endswith("@@"):
                cuts[s[6:-2]] = guest.power_cut(s[6:-2])

        bblib.log(f"zns_stripe={stripe}: {len(devs)} drives (PLP {a.sizes} MiB x "
                  f"{a.rounds} rounds), filling and cutting ...")
        guest = bblib.Guest(guest_script(a), devs, timeout=3600)
        guest.run(on_line)
        host_notes.append(guest.host_note())
        for size in a.sizes:
            per = []
            for r in range(a.rounds):
                before, after = cuts[f"P{size}R{r}"]
                per.append(dict(
                    round=r, used_bytes=before["plp-region-used-bytes"],
                    pages=after["plp-loss-pages"],
                    normal_ns=after["plp-loss-normal-flush-ns"],
                    balanced_ns=after["plp-loss-balanced-flush-ns"],
                    normal_uf=after["plp-loss-normal-capacitance-uf"],
                    balanced_uf=after["plp-loss-balanced-capacitance-uf"],
                    normal_uj=after["plp-loss-normal-energy-uj"],
                    balanced_uj=after["plp-loss-balanced-energy-uj"],
                    worst=dict(pages=after["plp-worst-pages"],
                               normal_ns=after["plp-worst-normal-flush-ns"],
                               balanced_ns=after["plp-worst-balanced-flush-ns"],
                               normal_uf=after["plp-worst-normal-capacitance-uf"],
                               balanced_uf=after["plp-worst-balanced-capacitance-uf"])))
            rows.append(dict(stripe=stripe, size_mb=size, rounds=per,
                             reduction=bblib.spread(reduction(p["normal_ns"], p["balanced_ns"])
                                                    for p in per),
                             worst_reduction=reduction(per[0]["worst"]["normal_ns"],
                                                       per[0]["worst"]["balanced_ns"])))

    print(f"\nPLP power-loss flush, normal vs balanced: 8 ch x 8 SLC chips, 4 KiB pages, "
          f"read/program/transfer 40/100/40 us, {ZONE_MB} MiB zones, log zones filled to "
          f"{a.zone_fill_mb} MiB; {a.rounds} rounds (log start zones "
          f"{', '.join(str(ROUND_SHIFT * r) for r in range(a.rounds))}), median [min-max]")
    print(f"{'stripe':>6} {'PLP MiB':>7} {'full':>5} {'pages':>6} {'normal ms':>19} "
          f"{'balanced ms':>19} {'reduction %':>17} {'normal uF':>9} {'bal. uF':>8} | "
          f"{'worst: normal':>13} {'balanced ms':>11} {'red. %':>6}")
    for row in rows:
        per = row["rounds"]
        ms = lambda k: bblib.fmt_spread((p[k] / 1e6 for p in per), 1)  # noqa: E731
        full = statistics.median(p["used_bytes"] for p in per) / (row["size_mb"] << 20)
        w = per[0]["worst"]
        print(f"{row['stripe']:>6} {row['size_mb']:>7} {full:5.0%} "
              f"{statistics.median(p['pages'] for p in per):>6.0f} {ms('normal_ns'):>19} "
              f"{ms('balanced_ns'):>19} {bblib.fmt_spread(row['reduction']['values'], 1):>17} "
              f"{statistics.median(p['normal_uf'] for p in per):>9.0f} "
              f"{statistics.median(p['balanced_uf'] for p in per):>8.0f} | "
              f"{w['normal_ns'] / 1e6:>13.1f} {w['balanced_ns'] / 1e6:>11.1f} "
              f"{row['worst_reduction']:>6.1f}")
    print("'full': the region's share holding data when the power was cut; uF: the "
          "hold-up capacitance each flush needs (plp.h: 2 W controller, 150 mW per "
          "programming chip, 12 V -> 6 V);\n'worst': the device's own worst case (a full "
          "region written in order from zone 0, idle chips), one figure per size.")
    print(f"\npublished ({CITATION}): -{PAPER_REDUCTION:.0f} % flush time on average")
    averages = {}
    for stripe in a.stripes:
        sel = [r for r in rows if r["stripe"] == stripe]
        averages[stripe] = dict(
            measured=statistics.mean(r["reduction"]["median"] for r in sel),
            worst=statistics.mean(r["worst_reduction"] for r in sel))
        head = " (headline)" if stripe == a.stripes[0] else ""
        print(f"here, zns_stripe={stripe}{head}: -{averages[stripe]['measured']:.1f} % on "
              f"average over {', '.join(str(s) for s in a.sizes)} MiB (worst case "
              f"-{averages[stripe]['worst']:.1f} %); per size "
              + ", ".join(f"{r['size_mb']}: -{r['reduction']['median']:.1f} %" for r in sel))
    print("transfers: all of it (model time of the hold-up flush, independent of the "
          "guest); the balanced flush is bound by the 8 channels (a 40 us transfer per "
          "page), the normal one by the chips of the zones being written.")
    for note in host_notes:
        print(note)
    plot(a, rows)
    print("results: " + str(bblib.save_json("plp-flush-time", dict(
        args=vars(a), rows=rows, averages=averages, citation=CITATION,
        paper_reduction_pct=PAPER_REDUCTION))))


def plot(a, rows):
    plt = bblib.pyplot()
    if not plt:
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    for stripe in a.stripes:
        sel = [r for r in rows if r["stripe"] == stripe]
        xs = [r["size_mb"] for r in sel]
        ax1.plot(xs, [statistics.median(p["normal_ns"] for p in r["rounds"]) / 1e6 for r in sel],
                 "o--", label=f"normal, stripe {stripe}")
        ax2.plot(xs, [r["reduction"]["median"] for r in sel], "o-", label=f"stripe {stripe}")
    sel = [r for r in rows if r["stripe"] == a.stripes[0]]
    ax1.plot([r["size_mb"] for r in sel],
             [statistics.median(p["balanced_ns"] for p in r["rounds"]) / 1e6 for r in sel],
             "ks-", label="balanced")
    plplib.flush_axes(ax1, ax2, a.sizes, PAPER_REDUCTION)
    bblib.save_plot(fig, "plp-flush-time")


if __name__ == "__main__":
    main()
