#!/usr/bin/env python3
"""Blackbox read latency: does the guest see the NAND model's read time?

One guest holds a nossd drive and several blackbox drives. On written data (a sequential
prefill), fio measures 4 KiB random reads at QD1 on each drive in turn, for a few
interleaved rounds (medians over rounds, and their range: the host is shared and drifts).
The guest-observed mean latency on a blackbox drive minus that on nossd is what the model
added; the model says one page read plus its transfer: (pg_rd_lat + page / (ch_mts x
ch_width)) x time_scale. Uniform latencies (SLC) make that a single number; a TLC drive
shows the mean over its page types.

Prints the difference, the model's time, their ratio, and each device's completion
lateness (QMP). A benchmark: figures, not assertions.

Usage: bench/bb-latency.py [--short] [--rounds N] [--runtime SEC] [--scales 1,3,10,30]
"""

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

XFER_US = 4096 / 800            # 4 KiB over 800 MT/s x 1 byte
SLC_RD_US = 25
TLC_RD_US = (50, 65, 80)


def model_us(flash_type, scale):
    if flash_type == 1:
        return (SLC_RD_US + XFER_US) * scale
    # pages interleave lower/upper/extra: a random page's expected read time
    return (statistics.fmean(TLC_RD_US) + XFER_US) * scale


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runtime", type=int, default=4, help="seconds of fio per visit")
    ap.add_argument("--rounds", type=int, default=3, help="visits of every drive, interleaved")
    ap.add_argument("--short", action="store_true", help="3 rounds of 3 s")
    ap.add_argument("--scales", default="1,3,10,30", help="time_scale values of the SLC drives")
    ap.add_argument("--region", type=int, default=64, help="MiB written, then read")
    ap.add_argument("--size", type=int, default=1024, help="drive MiB")
    ap.add_argument("--idle-poll", action="store_true",
                    help="one vCPU that never halts (guest idle=poll): without the wake-up of "
                         "a halted vCPU, which grows with the wait on a nested host")
    a = ap.parse_args()
    if a.short:
        a.rounds, a.runtime = 3, 3

    devs = [bblib.Device("REF", 2, a.size)]
    cases = []      # (serial, label, flash_type, scale)
    for sc in (int(x) for x in a.scales.split(",")):
        cases.append((f"SLC{sc}", f"SLC, time_scale={sc}", 1, sc))
    cases.append(("TLC1", "TLC (default), time_scale=1", 3, 1))
    for serial, _, ft, sc in cases:
        devs.append(bblib.Device(serial, 1, a.size, flash_type=ft, time_scale=sc))

    fio = (f"--direct=1 --ioengine=io_uring --bs=4k --iodepth=1 --rw=randread "
           f"--size={a.region}m --time_based --runtime={a.runtime} --ramp_time=1 "
           "--lat_percentiles=1 --output-format=json")
    # interleaved rounds: slow drift of the host (other load) hits every drive alike
    order = ([d.serial for d in devs]) * a.rounds
    script = "for s in " + " ".join(d.serial for d in devs) + """; do
  D=$(dev_of $s) || exit 1
  fio --name=fill --filename=$D --direct=1 --ioengine=io_uring --rw=write --bs=1m \\
      --iodepth=4 --size=%dm >/dev/null || exit 1
done
i=0
for s in %s; do
  i=$((i+1)); echo @@run$i-$s@@
  fio --name=$s --filename=$(dev_of $s) %s || exit 1
done
echo "@@stats end@@"
echo @@end@@
""" % (a.region, " ".join(order), fio)

    bblib.log(f"booting one guest: nossd + {len(cases)} blackbox drives; fio randread 4 KiB "
              f"QD1, {a.rounds} rounds of {a.runtime} s per drive ...")
    g = bblib.Guest(script, devs, timeout=1800, smp=1 if a.idle_poll else 2,
                    kernel_args="idle=poll" if a.idle_poll else "").run(
        lambda t, l: l.startswith("@@run") and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))

    visits = {}
    for i, s in enumerate(order, 1):
        # total latency: fio's clat starts after the submitting system call returns, which
        # under TCG can be later than the device took the command
        lat = bblib.fio_json(g.section(f"run{i}-{s}"))["jobs"][0]["read"]["lat_ns"]
        visits.setdefault(s, []).append((lat["mean"] / 1000,
                                         lat["percentile"]["50.000000"] / 1000))
    _, final = g.marks["end"]
    stat = {s: (statistics.median([m for m, _ in v]), statistics.median([p for _, p in v]))
            for s, v in visits.items()}
    ref_mean, ref_p50 = stat["REF"]

    print(f"\nblackbox read latency: fio 4 KiB random read, QD1, io_uring, direct; "
          f"{a.rounds} interleaved rounds of {a.runtime} s per drive (medians over rounds); "
          f"{a.region} MiB written region of {a.size} MiB drives, default geometry "
          "(8 ch x 8 chips); one guest" + (", 1 vCPU, idle=poll" if a.idle_poll else ""))
    print(f"nossd reference latency: mean {ref_mean:.1f} us, p50 {ref_p50:.1f} us "
          f"(per round means: {', '.join(f'{m:.0f}' for m, _ in visits['REF'])})")
    print(f"{'drive':30} {'model':>7} {'mean':>7} {'rounds':>13} {'-nossd':>7} {'ratio':>6} "
          f"{'p50':>7} {'-nossd':>7} {'ratio':>6}  {'lateness p50/p99/max us':>23}")
    rows, pts_mean, pts_p50 = [], [], []
    for serial, label, ft, sc in cases:
        m = model_us(ft, sc)
        mean, p50 = stat[serial]
        dm, dp = mean - ref_mean, p50 - ref_p50
        late = bblib.lateness(final[serial])
        means = [x for x, _ in visits[serial]]
        span = f"{min(means):.0f}-{max(means):.0f}"
        print(f"{label:30} {m:7.1f} {mean:7.1f} {span:>13} {dm:7.1f} {dm / m:6.2f} {p50:7.1f} "
              f"{dp:7.1f} {dp / m:6.2f}  {late:>23}")
        if ft == 1:
            pts_mean.append((m, dm))
            pts_p50.append((m, dp))
        rows.append(dict(drive=label, serial=serial, flash_type=ft, time_scale=sc, model_us=m,
                         mean_us=mean, mean_diff_us=dm, mean_ratio=dm / m, p50_us=p50,
                         p50_diff_us=dp, p50_ratio=dp / m, lateness=late,
                         visits=visits[serial],
                         lateness_ns={k: final[serial][f"lateness-{k}-ns"]
                                      for k in ("p50", "p99", "max")}))
    ref_means = [x for x, _ in visits["REF"]]
    print(f"{'nossd':30} {'':>7} {ref_mean:7.1f} "
          f"{f'{min(ref_means):.0f}-{max(ref_means):.0f}':>13} {'':>7} {'':>6} {ref_p50:7.1f} "
          f"{'':>7} {'':>6}  {bblib.lateness(final['REF']):>23}")
    fits = {}
    if len(pts_p50) >= 2:
        for name, pts in (("mean", pts_mean), ("p50", pts_p50)):
            slope, off = statistics.linear_regression([x for x, _ in pts],
                                                      [y for _, y in pts])
            fits[name] = dict(offset_us=off, slope=slope)
            print(f"fit over the SLC drives ({name}): guest-seen extra = {off:.1f} us + "
                  f"{slope:.3f} x model")
    print("\nratio = (blackbox - nossd) / model; 1.00: the guest sees exactly the model's read"
          " time. The fit splits it into\na slope (how the model's time comes through; "
          "transfers to any scale) and an offset (a fixed cost of a\ncompletion that "
          "arrives later than nossd's, paid once per I/O whatever the scale). Unscaled "
          "drive: the\ntime_scale=1 rows are it. lateness: each drive's whole run, its prefill "
          "included.")
    out = bblib.save_json("bb-latency", dict(args=vars(a), ref_mean_us=ref_mean,
                                             ref_p50_us=ref_p50, rows=rows, fits=fits,
                                             ref_visits=visits["REF"]), guest=g)
    print(f"results: {out}")


if __name__ == "__main__":
    main()
