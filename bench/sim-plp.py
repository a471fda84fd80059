#!/usr/bin/env python3
"""Selective PLP: the power-loss flush of the PLP region, normal against balanced, in
femu-sim (a trace that writes and then cuts the power: the trace op power_cut).

The experiment of bench/plp-flush-time.py, without a guest: for PLP regions of 32, 64,
128 and 256 MiB, a CSV trace fills the region with protected log writes (plp=selective,
every zone in plp_zones; 512 KiB writes at QD1, each zone filled to --zone-fill-mb of its
16 MiB and the next one begun, so that the zones stay open and their data stays in the
buffer), then cuts the power. The PLP model reports what its hold-up flush took, both
ways, on the same buffered pages (plp_loss_* statistics):
  normal    each page to its own zone location: the chips of the few zones written;
  balanced  each page to the chip free earliest (reserved blocks, OOB records);
with the energy and the hold-up capacitance each needs (plp.h: 2 W controller, 150 mW
per programming chip, 12 V -> 6 V), and the device's worst case (plp_worst_*). After the
cut the drive recovers the region (plp_spor_*). The flash is the paper's (plplib.py):
8 channels x 8 chips, 4 KiB pages, 4 MiB blocks, read/program/transfer 40/100/40 us,
16 MiB zones over zns_stripe chips (--stripes; the first is the headline). Each round
starts the log 7 zones further (other chips), as plp-flush-time.py does.

Published (selective PLP with balanced flush, as cited in plp-flush-time.py): the
balanced flush cuts the flush time by 96 % on average over PLP buffers of 32-256 MB.
What transfers: all of it (model time of the flush, the same code as the emulator's,
which plp-flush-time.py reads after a QMP power cut).

Usage: bench/sim-plp.py [--short] [--sizes 32,64,128,256] [--stripes 1,2,8,64]
       [--rounds 2] [--zone-fill-mb 15]
Short: stripes 1 and 8 (about 20 s); full: stripes 1, 2, 8, 64 (about 35 s).
"""

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bblib  # noqa: E402
import plplib  # noqa: E402
import simlib  # noqa: E402


def _published():
    spec = importlib.util.spec_from_file_location("plp_flush_time", HERE / "plp-flush-time.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.CITATION, m.PAPER_REDUCTION, m.ROUND_SHIFT


CITATION, PAPER_REDUCTION, ROUND_SHIFT = _published()
ZONE_MB = plplib.ZONE_MB
WRITE = 512 * 1024


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="32,64,128,256", help="PLP regions, MiB")
    ap.add_argument("--stripes", default="1,2,8,64", help="zns_stripe values, headline first")
    ap.add_argument("--rounds", type=int, default=2, help="log start zones per size")
    ap.add_argument("--zone-fill-mb", type=int, default=15,
                    help="MiB written per zone before the next (below 16: zones stay open)")
    ap.add_argument("--short", action="store_true", help="stripes 1 and 8 only")
    a = ap.parse_args()
    a.sizes = [int(x) for x in a.sizes.split(",")]
    a.stripes = [int(x) for x in a.stripes.split(",")]
    if a.short:
        a.stripes = a.stripes[:1] + [s for s in a.stripes[1:] if s == 8][:1]
    if not 1 <= a.zone_fill_mb < ZONE_MB:
        sys.exit(f"--zone-fill-mb must be 1..{ZONE_MB - 1}")
    return a


def device_mb(a):
    zones = -(-max(a.sizes) // a.zone_fill_mb) + ROUND_SHIFT * (a.rounds - 1)
    return (zones + 1) * ZONE_MB


def trace(path, a, size, first_zone):
    """The log (size MiB, zone after zone from first_zone), then the power cut."""
    lines = ["time_us,op,offset,length"]
    z, left = first_zone, size
    while left > 0:
        n = min(a.zone_fill_mb, left)
        base = z * ZONE_MB << 20
        lines += [f"0,write,{base + i * WRITE},{WRITE}" for i in range(n * 2)]
        z, left = z + 1, left - n
    lines.append("0,power_cut,,")
    path.write_text("\n".join(lines) + "\n")


def one(a, stripe, size, rnd, tmp):
    mb = device_mb(a)
    dev = dict(femu_mode=3, devsz_mb=mb, **plplib.PAPER_FLASH, zns_stripe=stripe,
               plp="selective", plp_zones=f"0-{mb // ZONE_MB - 1}", plp_buf_mb=size,
               buf_mb=16, plp_flush_pct=100)
    tr = Path(tmp) / f"log-{stripe}-{size}-{rnd}.csv"
    trace(tr, a, size, ROUND_SHIFT * rnd)
    res, wall = simlib.run(dev, [("log", dict(read_iolog=str(tr), iodepth=1,
                                              replay_no_stall=1))])
    s = res["stats"]
    if s.get("plp_power_losses") != 1:
        sys.exit(f"no power loss reported (stripe {stripe}, {size} MiB)")
    out = dict(round=rnd, wall_s=wall, pages=s["plp_loss_pages"],
               spor_ms=s["plp_spor_ns"] / 1e6, spor_pages=s["plp_spor_pages"])
    for k in ("loss", "worst"):
        for m in ("normal", "balanced"):
            out[f"{k}_{m}_ms"] = s[f"plp_{k}_{m}_flush_ns"] / 1e6
            out[f"{k}_{m}_uj"] = s[f"plp_{k}_{m}_energy_uj"]
            out[f"{k}_{m}_uf"] = s[f"plp_{k}_{m}_capacitance_uf"]
    return out


def reduction(normal, balanced):
    return 100.0 * (1 - balanced / normal) if normal else 0.0


def main():
    a = parse_args()
    t0 = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for stripe in a.stripes:
            for size in a.sizes:
                per = [one(a, stripe, size, r, tmp) for r in range(a.rounds)]
                rows.append(dict(stripe=stripe, size_mb=size, rounds=per, reduction=[
                    reduction(p["loss_normal_ms"], p["loss_balanced_ms"]) for p in per]))
    med = lambda row, k: statistics.median(p[k] for p in row["rounds"])  # noqa: E731
    print(f"\nPLP power-loss flush (femu-sim, trace op power_cut), normal vs balanced: 8 ch x "
          f"8 SLC chips, 40/100/40 us, {ZONE_MB} MiB zones filled to {a.zone_fill_mb} MiB; "
          f"median of {a.rounds} rounds")
    print(f"{'stripe':>6} {'PLP MiB':>7} {'pages':>6} {'normal ms':>9} {'bal. ms':>8} "
          f"{'red. %':>6} {'normal mJ':>9} {'bal. mJ':>8} {'normal uF':>9} {'bal. uF':>8} | "
          f"{'worst normal':>12} {'bal. ms':>7} {'red. %':>6} | {'SPOR ms':>7}")
    for r in rows:
        print(f"{r['stripe']:>6} {r['size_mb']:>7} {med(r, 'pages'):>6.0f} "
              f"{med(r, 'loss_normal_ms'):9.1f} {med(r, 'loss_balanced_ms'):8.1f} "
              f"{statistics.median(r['reduction']):6.1f} "
              f"{med(r, 'loss_normal_uj') / 1e3:9.0f} {med(r, 'loss_balanced_uj') / 1e3:8.0f} "
              f"{med(r, 'loss_normal_uf'):9.0f} {med(r, 'loss_balanced_uf'):8.0f} | "
              f"{med(r, 'worst_normal_ms'):12.1f} {med(r, 'worst_balanced_ms'):7.1f} "
              f"{reduction(med(r, 'worst_normal_ms'), med(r, 'worst_balanced_ms')):6.1f} | "
              f"{med(r, 'spor_ms'):7.1f}")
    print("mJ, uF: the hold-up energy and capacitance each flush needs; 'worst': the "
          "device's own worst case (a full region written in order, idle chips); SPOR: the "
          "recovery at power-on (the region read back and written in place).")
    print(f"\npublished ({CITATION}): -{PAPER_REDUCTION:.0f} % flush time on average")
    averages = {}
    for stripe in a.stripes:
        sel = [r for r in rows if r["stripe"] == stripe]
        averages[stripe] = statistics.mean(statistics.median(r["reduction"]) for r in sel)
        print(f"femu-sim, zns_stripe={stripe}{' (headline)' if stripe == a.stripes[0] else ''}"
              f": -{averages[stripe]:.1f} % on average over "
              f"{', '.join(str(s) for s in a.sizes)} MiB")
    wall = time.monotonic() - t0
    print(f"wall time: {wall:.1f} s")
    plot(a, rows)
    print("results: " + str(bblib.save_json("sim-plp", dict(
        args=vars(a), rows=rows, averages=averages, wall_s=wall, citation=CITATION,
        paper_reduction_pct=PAPER_REDUCTION))))


def plot(a, rows):
    plt = bblib.pyplot()
    if not plt:
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    for stripe in a.stripes:
        sel = [r for r in rows if r["stripe"] == stripe]
        xs = [r["size_mb"] for r in sel]
        ax1.plot(xs, [statistics.median(p["loss_normal_ms"] for p in r["rounds"]) for r in sel],
                 "o--", label=f"normal, stripe {stripe}")
        ax1.plot(xs, [statistics.median(p["loss_balanced_ms"] for p in r["rounds"])
                      for r in sel], "s-", label=f"balanced, stripe {stripe}")
        ax2.plot(xs, [statistics.median(r["reduction"]) for r in sel], "o-",
                 label=f"stripe {stripe}")
    ax2.axhline(PAPER_REDUCTION, color="red", ls=":", label="paper (average)")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(a.sizes, [str(s) for s in a.sizes])
        ax.set_xlabel("PLP region, MiB")
        ax.legend(fontsize=7)
    ax1.set_ylabel("power-loss flush, ms")
    ax1.set_yscale("log")
    ax2.set_ylabel("balanced vs normal, reduction %")
    ax2.set_ylim(0, 100)
    bblib.save_plot(fig, "sim-plp")


if __name__ == "__main__":
    main()
