#!/usr/bin/env python3
"""Blackbox parallelism: sequential write and random read throughput with 1..32 chips.

One guest holds a nossd drive (what the guest itself can issue) and, per chip count, two
blackbox drives: a write drive (TLC defaults, unscaled) and a read drive (TLC reads
stretched by --read-scale so that 32 chips stay well below the guest's own 4 KiB IOPS; its
programs are made cheap, pg_wr_lat=1000 ns, only so that the prefill is quick). Chips grow
over channels first (1..8 channels), then chips per channel; above 8 chips a further read
drive puts one chip on each channel, to show what sharing a channel costs.

Sequential write: fio 128 KiB writes, QD8 (each command stripes over up to 32 chips).
Random read: fio 4 KiB random reads, QD --read-qd, over a prefilled region. Prints MB/s or
IOPS, the scaling relative to 1 chip, the ideal (= chips), what random routing allows at
that queue depth (a closed system of QD requests over N chips keeps N x QD/(QD+N-1) busy),
and each drive's completion lateness (QMP).

Usage: bench/bb-parallelism.py [--short] [--chips 1,2,4,8,16,32] [--read-scale 100]
"""

import argparse
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
    ap.add_argument("--short", action="store_true", help="4 s per measurement")
    ap.add_argument("--read-scale", type=int, default=100, help="time_scale of the read drives")
    ap.add_argument("--read-qd", type=int, default=128)
    ap.add_argument("--write-qd", type=int, default=8)
    ap.add_argument("--write-size", type=int, default=2048,
                    help="MiB of each write drive (more than 32 chips write in --runtime)")
    ap.add_argument("--read-region", type=int, default=32, help="MiB prefilled, then read")
    ap.add_argument("--no-flat", dest="flat", action="store_false",
                    help="skip the one-chip-per-channel read drives for more than 8 chips")
    a = ap.parse_args()
    if a.short:
        a.runtime = 4
    chips = [int(c) for c in a.chips.split(",")]

    # read drives: the FEMU-like layout, and for more than 8 chips also one chip per
    # channel (same chips, no channel shared) to show what sharing a channel costs
    rcfg = [(f"{c}", c, *layout(c)) for c in chips]
    if a.flat:
        rcfg += [(f"{c}f", c, c, 1) for c in chips if c > 8]

    # sparse RAM backends: host memory grows with what is written (the nossd reference
    # wraps around 512 MiB; a blackbox write drive must not, or GC would start)
    devs = [bblib.Device("REF", 2, 512)]
    for c in chips:
        nchs, luns = layout(c)
        devs.append(bblib.Device(f"W{c}", 1, a.write_size, nchs=nchs, luns_per_ch=luns))
    for key, c, nchs, luns in rcfg:
        # 512 MiB: enough lines (64 of 8 MiB at 32 chips) for the spare-line rule
        devs.append(bblib.Device(f"R{key}", 1, max(a.read_region, 512), nchs=nchs,
                                 luns_per_ch=luns, time_scale=a.read_scale, pg_wr_lat=1000))

    # no ramp_time: fio drops I/Os issued during the ramp, which at QD128 on one slow
    # chip is most of a second of completions; the queue is full from the first moment
    common = f"--direct=1 --ioengine=io_uring --time_based --runtime={a.runtime} " \
             "--output-format=json"
    write = f"--rw=write --bs=128k --iodepth={a.write_qd} {common}"
    read = f"--rw=randread --bs=4k --iodepth={a.read_qd} --size={a.read_region}m {common}"
    fill = (f"--direct=1 --ioengine=io_uring --rw=write --bs=128k --iodepth=8 "
            f"--size={a.read_region}m")
    script = f"""
echo @@w-REF@@; fio --name=w --filename=$(dev_of REF) {write} --size=512m || exit 1
for c in {" ".join(map(str, chips))}; do
  echo @@w-$c@@; fio --name=w$c --filename=$(dev_of W$c) {write} --size={a.write_size}m || exit 1
done
echo @@r-REF@@; fio --name=r --filename=$(dev_of REF) {read} || exit 1
for c in {" ".join(k for k, *_ in rcfg)}; do
  D=$(dev_of R$c) || exit 1
  fio --name=fill --filename=$D {fill} >/dev/null || exit 1
  echo @@r-$c@@; fio --name=r$c --filename=$D {read} || exit 1
done
echo "@@stats end@@"
echo @@end@@
"""
    bblib.log(f"booting one guest: nossd + {len(devs) - 1} blackbox drives ({a.chips} chips);"
              f" {a.runtime} s per measurement ...")
    g = bblib.Guest(script, devs, timeout=3600).run(
        lambda t, l: l.startswith("@@") and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))
    _, final = g.marks["end"]

    def job(name, ddir):
        return bblib.fio_json(g.section(name))["jobs"][0][ddir]

    wref = job("w-REF", "write")["bw_bytes"] / 1e6
    rref = job("r-REF", "read")["iops"]
    w = {c: job(f"w-{c}", "write")["bw_bytes"] / 1e6 for c in chips}
    r = {key: job(f"r-{key}", "read")["iops"] for key, *_ in rcfg}
    # the model's rate per chip: TLC program mean 700 us + 5.12 us transfer; read mean
    # 65 us + 5.12 us, scaled
    w_chip = 4096 / 705.12e-6 / 1e6
    r_chip = 1e6 / ((65 + 4096 / 800) * a.read_scale)
    r1 = r[str(chips[0])] / chips[0]

    print(f"\nblackbox parallelism: chips = channels (up to 8) x chips per channel; TLC; "
          f"{a.runtime} s per measurement; one guest")
    print(f"sequential write 128 KiB QD{a.write_qd}, unscaled  |  random read 4 KiB "
          f"QD{a.read_qd}, time_scale={a.read_scale}")
    print(f"{'chips':>5} {'layout':>7} {'write MB/s':>11} {'x 1 chip':>9} {'model MB/s':>11} "
          f"{'read IOPS':>10} {'x 1 chip':>9} {'QD allows':>10} {'ideal':>6} "
          f"{'late W p50/p99/max us':>22} {'late R':>16}")
    rows = []
    for key, c, nchs, luns in rcfg:
        qd_allows = c * a.read_qd / (a.read_qd + c - 1)
        flat = key.endswith("f")
        wcols = (f"{'':>11} {'':>9} {'':>11}" if flat else
                 f"{w[c]:11.1f} {w[c] / w[chips[0]] * chips[0]:9.2f} {w_chip * c:11.1f}")
        lw = "" if flat else bblib.lateness(final[f"W{c}"])
        print(f"{c:5d} {f'{nchs}x{luns}':>7} {wcols} {r[key]:10.0f} {r[key] / r1:9.2f} "
              f"{qd_allows:10.2f} {c:6d} {lw:>22} {bblib.lateness(final[f'R{key}']):>16}")
        rows.append(dict(chips=c, nchs=nchs, luns_per_ch=luns, read_iops=r[key],
                         read_model_iops=r_chip * c, read_qd_allows=qd_allows,
                         lateness_read=bblib.lateness(final[f"R{key}"]),
                         **({} if flat else dict(write_mbps=w[c], write_model_mbps=w_chip * c,
                                                 lateness_write=lw))))
    print(f"nossd (guest ceiling): write {wref:.0f} MB/s = {wref / max(w.values()):.1f}x the "
          f"best blackbox; read {rref:.0f} IOPS = {rref / max(r.values()):.1f}x the best "
          f"blackbox (model per chip: write {w_chip:.2f} MB/s, read {r_chip:.0f} IOPS)")
    print("'x 1 chip' is the throughput relative to 1 chip (ideal = chips); 'QD allows' is "
          "the most a queue of that depth\ncan keep busy when each read goes to a random "
          "chip. Rows NxN with one chip per channel: the same chips\nwithout channel sharing."
          " Transfers to the unscaled drive: the scaling factors (and the write MB/s, which\n"
          f"is unscaled); read IOPS x {a.read_scale} for an unscaled drive, as long as the "
          "host can issue that many.")

    plt = bblib.pyplot()
    if plt:
        fig, ax = plt.subplots(figsize=(7, 5))
        ax.plot(chips, [w[c] / w[chips[0]] * chips[0] for c in chips], "o-",
                label=f"seq write 128K QD{a.write_qd}")
        ax.plot(chips, [r[str(c)] / r1 for c in chips], "s-",
                label=f"rand read 4K QD{a.read_qd}")
        flat = [(c, r[k] / r1) for k, c, *_ in rcfg if k.endswith("f")]
        if flat:
            ax.plot([c for c, _ in flat], [v for _, v in flat], "^", label="read, 1 chip/channel")
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
        ax.set_title("blackbox: throughput vs chips", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend()
        bblib.RESULTS.mkdir(parents=True, exist_ok=True)
        path = bblib.RESULTS / f"bb-parallelism-{bblib.stamp()}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        print(f"plot: {path}")
    print(f"results: {bblib.save_json('bb-parallelism', dict(args=vars(a), rows=rows, ref_write_mbps=wref, ref_read_iops=rref))}")


if __name__ == "__main__":
    main()
