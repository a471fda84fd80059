#!/usr/bin/env python3
"""Blackbox parallelism: sequential write and random read throughput with 1..32 chips.

One guest holds a nossd drive (what the guest itself can issue) and, per chip count, two
blackbox drives: a write drive (TLC defaults, unscaled) and a read drive (TLC reads
stretched by --read-scale so that 32 chips stay well below the guest's own 4 KiB IOPS; its
programs are made cheap, pg_wr_lat=1000 ns, only so that the prefill is quick). Chips grow
over channels first (1..8 channels), then chips per channel; above 8 chips a further read
drive puts one chip on each channel, to show what sharing a channel costs, and with 8
chips one more puts all 8 behind one channel (1x8), which their reads load lightly (a
5 us transfer per 70 us read), against 8 channels of one chip (8x1).

Sequential write: fio 128 KiB writes, QD8 (each command stripes over up to 32 chips), of
a fixed amount sized from the model's bandwidth to take about --runtime seconds, each round
at fresh LBAs and discarded afterwards (host memory back; no LBA is written twice and the
drive never runs out of free lines, so no GC). Random read: fio 4 KiB random reads, QD
--read-qd, --runtime seconds over a prefilled region. Every drive is measured --rounds
times, interleaved (the order reversed every other round). Prints MB/s or IOPS (median
[min-max] over rounds), the scaling relative to 1 chip per round, the ideal (= chips), what
random routing allows at that queue depth (a closed system of QD requests over N chips
keeps N x QD/(QD+N-1) busy), and each drive's completion lateness (QMP).

Usage: bench/bb-parallelism.py [--short] [--rounds 3] [--chips 1,2,4,8,16,32] [--read-scale 100]
"""

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402


def layout(chips):
    """(nchs, luns_per_ch): channels first, up to 8."""
    nchs = min(chips, 8)
    if chips % nchs:
        sys.exit(f"--chips: {chips} is not a multiple of {nchs} channels")
    return nchs, chips // nchs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chips", default="1,2,4,8,16,32")
    ap.add_argument("--runtime", type=int, default=6, help="seconds of fio per measurement")
    ap.add_argument("--rounds", type=int, default=3, help="measurements of every drive")
    ap.add_argument("--short", action="store_true", help="3 rounds of 3 s")
    ap.add_argument("--read-scale", type=int, default=100, help="time_scale of the read drives")
    ap.add_argument("--read-qd", type=int, default=128)
    ap.add_argument("--write-qd", type=int, default=8)
    ap.add_argument("--read-region", type=int, default=32, help="MiB prefilled, then read")
    ap.add_argument("--no-flat", dest="flat", action="store_false",
                    help="skip the one-chip-per-channel read drives for more than 8 chips")
    a = ap.parse_args()
    if a.short:
        a.runtime, a.rounds = 3, 3
    bblib.require_rounds(a.rounds)
    chips = [int(c) for c in a.chips.split(",")]
    # the model's rate per chip: TLC program mean 700 us + 5.12 us transfer; read mean
    # 65 us + 5.12 us, scaled
    w_chip = 4096 / 705.12e-6 / 1e6
    r_chip = 1e6 / ((65 + 4096 / 800) * a.read_scale)
    # MiB per write run: --runtime at the model's rate; the drive holds every round's
    # run at its own LBAs with a quarter to spare (background GC starts at 10% free)
    wrun = {c: math.ceil(w_chip * c * a.runtime / 1.048576) for c in chips}
    wsize = {c: max(512, math.ceil(wrun[c] * a.rounds * 1.25)) for c in chips}

    # read drives: the FEMU-like layout, and for more than 8 chips also one chip per
    # channel (same chips, no channel shared) to show what sharing a channel costs
    rcfg = [(f"{c}", c, *layout(c)) for c in chips]
    if a.flat:
        rcfg += [(f"{c}f", c, c, 1) for c in chips if c > 8]
    if 8 in chips:
        # 8 chips behind one channel that their reads load lightly (5 of 70 us each)
        rcfg += [("8c", 8, 1, 8)]

    # sparse RAM backends: host memory grows with what is written and shrinks with what
    # is discarded (the nossd reference wraps around 512 MiB)
    devs = [bblib.Device("REF", 2, 512)]
    for c in chips:
        nchs, luns = layout(c)
        devs.append(bblib.Device(f"W{c}", 1, wsize[c], nchs=nchs, luns_per_ch=luns))
    for key, c, nchs, luns in rcfg:
        # 512 MiB: enough lines (64 of 8 MiB at 32 chips) for the spare-line rule
        devs.append(bblib.Device(f"R{key}", 1, max(a.read_region, 512), nchs=nchs,
                                 luns_per_ch=luns, time_scale=a.read_scale, pg_wr_lat=1000))

    # no ramp_time: fio drops I/Os issued during the ramp, which at QD128 on one slow
    # chip is most of a second of completions; the queue is full from the first moment
    io = "--direct=1 --ioengine=io_uring --output-format=json"
    common = f"{io} --time_based --runtime={a.runtime}"
    write = f"--rw=write --bs=128k --iodepth={a.write_qd} {io}"
    read = f"--rw=randread --bs=4k --iodepth={a.read_qd} --size={a.read_region}m {common}"
    fill = (f"--direct=1 --ioengine=io_uring --rw=write --bs=128k --iodepth=8 "
            f"--size={a.read_region}m")
    rkeys = " ".join(k for k, *_ in rcfg)
    runs = []
    for rnd in range(1, a.rounds + 1):
        wr = chips if rnd % 2 else chips[::-1]
        rd = [k for k, *_ in rcfg]
        rd = rd if rnd % 2 else rd[::-1]
        runs.append(f"echo @@w-REF-{rnd}@@; fio --name=w --filename=$(dev_of REF) {write} "
                    f"--size=512m --time_based --runtime={a.runtime} || exit 1")
        for c in wr:
            off = (rnd - 1) * wrun[c]
            runs.append(f"D=$(dev_of W{c}) || exit 1; echo @@w-{c}-{rnd}@@; fio --name=w{c} "
                        f"--filename=$D {write} --offset={off}m --size={wrun[c]}m || exit 1; "
                        f"blkdiscard --offset $(({off} << 20)) --length $(({wrun[c]} << 20)) $D"
                        " || exit 1")
        runs.append(f"echo @@r-REF-{rnd}@@; fio --name=r --filename=$(dev_of REF) {read} "
                    "|| exit 1")
        for k in rd:
            runs.append(f"echo @@r-{k}-{rnd}@@; fio --name=r{k} --filename=$(dev_of R{k}) "
                        f"{read} || exit 1")
    body = "\n".join(runs)
    script = f"""
for c in {rkeys}; do
  fio --name=fill --filename=$(dev_of R$c) {fill} >/dev/null || exit 1
done
{body}
echo "@@stats end@@"
echo @@end@@
"""
    bblib.log(f"booting one guest: nossd + {len(devs) - 1} blackbox drives ({a.chips} chips);"
              f" {a.rounds} rounds, {a.runtime} s per measurement ...")
    g = bblib.Guest(script, devs, timeout=3600).run(
        lambda t, l: l.startswith(("@@w-REF", "@@r-REF"))
        and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))
    _, final = g.marks["end"]

    def job(name, ddir):
        return bblib.fio_json(g.section(name))["jobs"][0][ddir]

    rounds = range(1, a.rounds + 1)
    wref = [job(f"w-REF-{i}", "write")["bw_bytes"] / 1e6 for i in rounds]
    rref = [job(f"r-REF-{i}", "read")["iops"] for i in rounds]
    w = {c: [job(f"w-{c}-{i}", "write")["bw_bytes"] / 1e6 for i in rounds] for c in chips}
    r = {key: [job(f"r-{key}-{i}", "read")["iops"] for i in rounds] for key, *_ in rcfg}
    c0 = chips[0]
    # scaling relative to one chip, round by round (the drives of a round ran minutes apart
    # at most, so they share the host's mood)
    wscale = {c: [x / y * c0 for x, y in zip(w[c], w[c0])] for c in chips}
    rscale = {k: [x / y * c0 for x, y in zip(r[k], r[str(c0)])] for k, *_ in rcfg}

    print(f"\nblackbox parallelism: chips = channels (up to 8) x chips per channel; TLC; "
          f"{a.rounds} interleaved rounds, median [min-max]; one guest")
    print(f"sequential write 128 KiB QD{a.write_qd} (about {a.runtime} s), unscaled  |  "
          f"random read 4 KiB QD{a.read_qd}, {a.runtime} s, time_scale={a.read_scale}")
    print(f"{'chips':>5} {'layout':>6} {'write MB/s':>19} {'x 1 chip':>18} {'model':>6} "
          f"{'read IOPS':>19} {'x 1 chip':>18} {'QD allows':>9} {'late W p50/p99/max':>18} "
          f"{'late R us':>14}")
    rows = []
    for key, c, nchs, luns in rcfg:
        qd_allows = c * a.read_qd / (a.read_qd + c - 1)
        flat = not key.isdigit()       # read-only rows: one chip per channel, one channel
        wcols = (f"{'':>19} {'':>18} {'':>6}" if flat else
                 f"{bblib.fmt_spread(w[c]):>19} {bblib.fmt_spread(wscale[c], 2):>18} "
                 f"{w_chip * c:6.1f}")
        lw = "" if flat else bblib.lateness(final[f"W{c}"])
        print(f"{c:5d} {f'{nchs}x{luns}':>6} {wcols} {bblib.fmt_spread(r[key], 0):>19} "
              f"{bblib.fmt_spread(rscale[key], 2):>18} {qd_allows:9.2f} {lw:>18} "
              f"{bblib.lateness(final[f'R{key}']):>14}")
        rows.append(dict(chips=c, nchs=nchs, luns_per_ch=luns, read_iops=bblib.spread(r[key]),
                         read_scaling=bblib.spread(rscale[key]),
                         read_model_iops=r_chip * c, read_qd_allows=qd_allows,
                         lateness_read=bblib.lateness(final[f"R{key}"]),
                         **({} if flat else dict(write_mbps=bblib.spread(w[c]),
                                                 write_scaling=bblib.spread(wscale[c]),
                                                 write_mib_per_run=wrun[c],
                                                 write_model_mbps=w_chip * c,
                                                 lateness_write=lw))))
    best_w = max(statistics.median(v) for v in w.values())
    best_r = max(statistics.median(v) for v in r.values())
    print(f"nossd (guest ceiling): write {bblib.fmt_spread(wref, 0)} MB/s = "
          f"{statistics.median(wref) / best_w:.1f}x the best blackbox; read "
          f"{bblib.fmt_spread(rref, 0)} IOPS = {statistics.median(rref) / best_r:.1f}x the best "
          f"blackbox (model per chip: write {w_chip:.2f} MB/s, read {r_chip:.0f} IOPS)")
    print("'x 1 chip' is the throughput relative to 1 chip in the same round (ideal = chips);"
          " 'QD allows' is the most a queue\nof that depth can keep busy when each read goes "
          "to a random chip. Rows NxN with one chip per channel: the same\nchips without "
          "channel sharing; row 1x8: 8 chips behind one channel. Transfers to the unscaled "
          "drive: the\nscaling factors (and the write MB/s, which is unscaled); read IOPS x "
          f"{a.read_scale} for an unscaled drive, as long as\nthe host can issue that many.")

    plt = bblib.pyplot()
    if plt:
        fig, ax = plt.subplots(figsize=(7, 5))
        def errbar(xs, series, fmt, label):
            sp = [bblib.spread(v) for v in series]
            med = [x["median"] for x in sp]
            ax.errorbar(xs, med, yerr=[[m - x["min"] for m, x in zip(med, sp)],
                                       [x["max"] - m for m, x in zip(med, sp)]],
                        fmt=fmt, capsize=3, label=label)

        errbar(chips, [wscale[c] for c in chips], "o-", f"seq write 128K QD{a.write_qd}")
        errbar(chips, [rscale[str(c)] for c in chips], "s-", f"rand read 4K QD{a.read_qd}")
        flat = [(c, rscale[k]) for k, c, *_ in rcfg if k.endswith("f")]
        if flat:
            errbar([c for c, _ in flat], [v for _, v in flat], "^", "read, 1 chip/channel")
        ax.plot(chips, chips, "k--", lw=1, label="ideal")
        ax.plot(chips, [c * a.read_qd / (a.read_qd + c - 1) for c in chips], "k:", lw=1,
                label=f"random routing at QD{a.read_qd}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        plain = plt.matplotlib.ticker.ScalarFormatter()
        ax.set_xticks(chips)
        ax.set_yticks(chips)
        ax.xaxis.set_major_formatter(plain)
        ax.yaxis.set_major_formatter(plain)
        ax.set_xlabel("chips")
        ax.set_ylabel("throughput relative to 1 chip")
        ax.set_title(f"blackbox: throughput vs chips (median, min-max of {a.rounds} "
                     "rounds)", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend()
        bblib.save_plot(fig, "bb-parallelism")
    print("results: " + str(bblib.save_json("bb-parallelism", dict(
        args=vars(a), rows=rows, ref_write_mbps=bblib.spread(wref),
        ref_read_iops=bblib.spread(rref)), guest=g)))


if __name__ == "__main__":
    main()
