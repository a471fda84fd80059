#!/usr/bin/env python3
"""femu nossd vs QEMU's stock nvme: both controllers in one guest, interleaved rounds.

One guest holds a femu nossd drive and QEMU's own nvme (launcher --with-stock), both of
--size MiB and both in host RAM (femu: a sparse RAM backend; stock: a sparse /dev/shm
file through QEMU's block layer). After a prefill of the region fio reads, every round
runs each workload on both drives back to back (fio 4 KiB random read QD1 and QD32, 128
KiB sequential read QD8), the drive that goes first alternating from round to round, so
that slow drift of a shared host hits both sides alike. Prints per side the median and
range (min-max) over rounds, the ratio femu/stock of every round (median and range), the
femu device's completion lateness (QMP `stats` and vendor log page 0xCA), and the
figure the design guide quotes beside ours. A benchmark: figures, not assertions.

Usage: bench/nossd-vs-stock.py [--short] [--rounds N] [--runtime SEC] [--region MiB]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

WORKLOADS = [  # (key, label, fio options, metric)
    ("rand4k-qd1", "4K rand read QD1", "--bs=4k --rw=randread --iodepth=1", "iops"),
    ("rand4k-qd32", "4K rand read QD32", "--bs=4k --rw=randread --iodepth=32", "iops"),
    ("seq128k-qd8", "128K seq read QD8", "--bs=128k --rw=read --iodepth=8", "mbps"),
]
SIDES = {"femu": "NOSSD", "stock": "femu-stock"}   # side -> serial
# Not a paper figure: FEMU's own busy-polling NoSSD mode (one polling thread per queue)
# against QEMU's stock nvme, 4 KiB random read IOPS, measured under TCG on this project's
# 2-core hosts and quoted in its design guide (DESIGN.md, "Threads and time"; the guide
# is kept outside this repository). FEMU itself: H. Li, M. Hao, M. H. Tong,
# S. Sundararaman, M. Bjørling, H. S. Gunawi, "The CASE of FEMU: Cheap, Accurate, Scalable
# and Extensible Flash Emulator", USENIX FAST 2018.
PUBLISHED = {"rand4k-qd1": 2.7, "rand4k-qd32": 1.65}
PUBLISHED_SOURCE = ("FEMU upstream NoSSD (busy polling) vs stock nvme under TCG, "
                    "as quoted by the project's design guide (not a paper figure)")


def guest_script(a):
    fio = (f"--direct=1 --ioengine=io_uring --size={a.region}m --time_based "
           f"--runtime={a.runtime} --ramp_time=1 --output-format=json")
    runs = []
    for r in range(1, a.rounds + 1):
        # alternate which side goes first: ABBA over two rounds
        sides = list(SIDES) if r % 2 else list(SIDES)[::-1]
        for key, _, opts, _ in WORKLOADS:
            for side in sides:
                runs.append(f"echo @@r{r}-{key}-{side}@@; "
                            f"fio --name={key} --filename=${side.upper()} {fio} {opts} || exit 1")
    body = "\n".join(runs)
    return f"""
FEMU=$(dev_of {SIDES['femu']}) && STOCK=$(dev_of {SIDES['stock']}) || exit 1
for D in $FEMU $STOCK; do
  fio --name=fill --filename=$D --direct=1 --ioengine=io_uring --rw=write --bs=1m \\
      --iodepth=4 --size={a.region}m >/dev/null || exit 1
done
{body}
echo "@@stats end@@"
echo @@vendor-log@@; vendor_log $FEMU
echo @@end@@
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="rounds (each side once per round)")
    ap.add_argument("--runtime", type=int, default=8, help="seconds of fio per run")
    ap.add_argument("--short", action="store_true", help="3 rounds of 3 s")
    ap.add_argument("--region", type=int, default=256, help="MiB prefilled, then read")
    ap.add_argument("--size", type=int, default=1024, help="MiB of each drive")
    a = ap.parse_args()
    if a.short:
        a.rounds, a.runtime = 3, 3
    bblib.require_rounds(a.rounds)
    if not 1 <= a.region <= a.size:
        sys.exit(f"--region must be in 1..--size ({a.size}) MiB (got {a.region})")

    bblib.log(f"booting one guest: femu nossd + stock nvme, {a.size} MiB each; "
              f"{a.rounds} rounds x {len(WORKLOADS)} workloads x 2 sides x {a.runtime} s ...")
    g = bblib.Guest(guest_script(a), [bblib.Device(SIDES["femu"], 2, a.size)],
                    with_stock=True, timeout=600 + a.rounds * 6 * (a.runtime + 10)).run(
        lambda t, l: l.startswith("@@r") and l.endswith("-femu@@")
        and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))

    res = {key: {side: [] for side in SIDES} for key, *_ in WORKLOADS}
    lat = {key: {side: [] for side in SIDES} for key, *_ in WORKLOADS}
    for r in range(1, a.rounds + 1):
        for key, _, _, metric in WORKLOADS:
            for side in SIDES:
                job = bblib.fio_json(g.section(f"r{r}-{key}-{side}"))["jobs"][0]["read"]
                res[key][side].append(job["iops"] if metric == "iops"
                                      else job["bw_bytes"] / 1e6)
                lat[key][side].append(job["lat_ns"]["mean"] / 1000)
    _, final = g.marks["end"]
    qmp = final[SIDES["femu"]]
    vlog = bblib.vendor_log(g.section("vendor-log"))

    print(f"\nfemu nossd vs QEMU stock nvme: one guest, both drives in host RAM, fio io_uring "
          f"direct, {a.region} MiB region; {a.rounds} rounds of {a.runtime} s per drive and "
          "workload, the first side alternating; median [min-max] over rounds")
    print(f"{'workload':20} {'femu nossd':>24} {'stock nvme':>24} {'femu/stock per round':>22}"
          f" {'published':>10}")
    rows = []
    for key, label, _, metric in WORKLOADS:
        unit = "IOPS" if metric == "iops" else "MB/s"
        f, s = res[key]["femu"], res[key]["stock"]
        ratios = [x / y for x, y in zip(f, s)]
        pub = PUBLISHED.get(key)
        print(f"{label:20} {bblib.fmt_spread(f, 0):>19} {unit} {bblib.fmt_spread(s, 0):>19} "
              f"{unit} {bblib.fmt_spread(ratios, 2):>22} {(f'{pub:.2f}' if pub else '-'):>10}")
        rows.append(dict(workload=key, metric=metric, femu=bblib.spread(f),
                         stock=bblib.spread(s), ratio=bblib.spread(ratios), published=pub,
                         femu_lat_us=bblib.spread(lat[key]["femu"]),
                         stock_lat_us=bblib.spread(lat[key]["stock"])))
    print("mean latency (fio lat), us:")
    for key, label, _, _ in WORKLOADS:
        print(f"{'  ' + label:20} {bblib.fmt_spread(lat[key]['femu']):>19} {'us':4} "
              f"{bblib.fmt_spread(lat[key]['stock']):>19} {'us':4}")
    print(f"\npublished: {PUBLISHED_SOURCE}: 4K QD1 {PUBLISHED['rand4k-qd1']}x, "
          f"QD32 {PUBLISHED['rand4k-qd32']}x. Ours is the event-driven device (no core spins "
          "while idle);\nabove 1 means femu is faster than stock.")
    print("femu lateness over the whole run (completion time minus the model's target, the "
          "prefill included), p50/p99/max us:\n"
          f"  QMP stats {bblib.lateness(qmp)} ({qmp['completions']} completions); vendor log "
          f"0xCA {vlog['lateness_p50_ns'] / 1000:.0f}/{vlog['lateness_p99_ns'] / 1000:.0f}/"
          f"{vlog['lateness_max_ns'] / 1000:.0f} ({vlog['completions']} completions)")
    print("longest hold of the device lock by one pass of the device thread (max_pass_ns): "
          f"{qmp['max-pass-ns'] / 1000:.0f} us")
    print("transfers to real hardware: nothing absolute. Both sides are emulated devices under "
          "TCG; the ratio says how much\nfaster femu's queue handling is than QEMU's own on "
          "the same host, and shrinks where the guest, not the device, limits.")
    print("results: " + str(bblib.save_json("nossd-vs-stock", dict(
        args=vars(a), rows=rows, lateness_qmp=qmp, vendor_log=vlog,
        published=PUBLISHED, published_source=PUBLISHED_SOURCE), guest=g)))


if __name__ == "__main__":
    main()
