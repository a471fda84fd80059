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

Part dbbench: db_bench fillseq and overwrite as plp-dbbench.py runs them (sync=1, 100 B
keys, 800 B values, zoned btrfs with the data on ns1 and the WAL on ns2), from block traces
recorded in the guest (bench/dbtrace.py: every NVMe command the guest's driver sent while
mkfs, mount, fillseq and overwrite ran on a drive without media time), replayed in femu-sim
on the paper's flash at full scale: two 1 GiB zoned namespaces (plplib.TWO_NS), W of 64-512
MiB unscaled, no time_scale, for none / full / selective (plplib.mode_props: one buffer of
W; selective's PLP region --plp-mb for the WAL namespace). The full run replays
build/dbtrace/full (20000 keys each, 8 MiB memtables and target files: the paper's sizes;
recorded first if missing, --record records it again: about 11 minutes of guest); the
short run replays the committed sample bench/traces/dbbench-sample (1000 keys, 256 KiB
memtables, so that it flushes and compacts), without a guest.

How it replays (dbtrace.replay_jobs): each namespace's commands are a job of their own at
queue depth 1, issued as fast as the drive answers (every command waits for the one before
it on its namespace; what the guest had in flight at once is serialized, on every
configuration alike). A pass is the recorded run again: its setup (and fillseq, before
overwrite) untimed, then the benchmark's commands timed. Passes repeat until --puts Puts
(default: until the WAL namespace has taken 4 times the largest W; short: 4 passes;
more passes gave the same figures to 0.1 us per Put), each pass after the
first resetting the zones the pass before left written, as mkfs.btrfs does on a used
drive. Puts/s = Puts / the WAL job's time (a synced Put returns when its WAL record and
btrfs's log are on the drive: the WAL namespace's zone append, log tree writes, flush and
FUA superblock write, one flush per Put); the data namespace's commands (SSTs, compaction,
MANIFEST) run beside them, and their time is printed too.

What transfers: the device's time per Put for the commands a real guest sent, and the
ordering and ratios of the three configurations; db_bench on real hardware adds its own
CPU time per Put (the recording guest took 12-19 ms per Put under TCG, nearly all of it
its CPU's), which femu-sim leaves out, and the guest's concurrency (several commands in
flight) is not kept.

Usage: bench/sim-plp.py [--short] [--parts flush,dbbench] [--sizes 32,64,128,256]
       [--stripes 1,2,8,64] [--rounds 2] [--zone-fill-mb 15] [--buffers 64,128,256,512]
       [--puts N] [--trace DIR] [--record] [--keys 20000]
Short: stripes 1 and 8, buffers 64 and 512, the committed sample trace (about 30 s);
full: stripes 1, 2, 8, 64, the recorded full trace (a few minutes, once it is recorded).
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
import dbtrace  # noqa: E402
import plplib  # noqa: E402
import simlib  # noqa: E402


def _published(name, file):
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


_ft = _published("plp_flush_time", "plp-flush-time.py")
_db = _published("plp_dbbench", "plp-dbbench.py")
CITATION, PAPER_REDUCTION, ROUND_SHIFT = _ft.CITATION, _ft.PAPER_REDUCTION, _ft.ROUND_SHIFT
DB_CITATION, DB_PAPER, MODES = _db.CITATION, _db.PAPER, _db.MODES
MIB = 1 << 20
ZONE_MB = plplib.ZONE_MB
SHORT_PASSES = 4
WRITE = 512 * 1024


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="32,64,128,256", help="PLP regions, MiB")
    ap.add_argument("--stripes", default="1,2,8,64", help="zns_stripe values, headline first")
    ap.add_argument("--rounds", type=int, default=2, help="log start zones per size")
    ap.add_argument("--zone-fill-mb", type=int, default=15,
                    help="MiB written per zone before the next (below 16: zones stay open)")
    ap.add_argument("--parts", default="flush,dbbench")
    ap.add_argument("--puts", type=int, default=0,
                    help="dbbench: Puts per run, whole passes of the trace (default: until "
                    f"the WAL namespace has taken 4 x the largest W; short: {SHORT_PASSES} "
                    "passes)")
    ap.add_argument("--trace", type=Path, help="dbbench: a recorded trace directory (default: "
                    f"{dbtrace.FULL.relative_to(dbtrace.REPO)}, short: "
                    f"{dbtrace.SAMPLE.relative_to(dbtrace.REPO)})")
    ap.add_argument("--record", action="store_true",
                    help="dbbench: record the trace in the guest again first")
    ap.add_argument("--keys", type=int, default=dbtrace.FULL_KEYS,
                    help="dbbench: keys of a recording")
    ap.add_argument("--buffers", default="64,128,256,512", help="dbbench: W, MiB")
    ap.add_argument("--plp-mb", type=int, default=32, help="dbbench: selective's region")
    ap.add_argument("--stripe", type=int, default=8, help="dbbench: zns_stripe")
    ap.add_argument("--short", action="store_true",
                    help="stripes 1 and 8, W 64 and 512, the committed sample trace")
    a = ap.parse_args()
    a.parts = a.parts.split(",")
    a.buffers = [int(x) for x in a.buffers.split(",")]
    if a.short:
        a.buffers = [a.buffers[0], a.buffers[-1]]
    if a.trace is None:
        a.trace = dbtrace.SAMPLE if a.short and not a.record else dbtrace.FULL
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
    out = {}
    if "flush" in a.parts:
        out["flush"] = flush_table(a)
    if "dbbench" in a.parts:
        out["dbbench"] = dbbench(a)
    args = {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()}
    print("results: " + str(bblib.save_json("sim-plp", dict(
        args=args, **out, citation=CITATION, paper_reduction_pct=PAPER_REDUCTION,
        dbbench_citation=DB_CITATION, dbbench_paper=DB_PAPER))))


def flush_table(a):
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
    return dict(rows=rows, averages=averages, wall_s=wall)


def load_trace(a):
    """The recorded trace (recorded first when --record or when the full one is missing)."""
    if a.record or not (a.trace / "meta.json").exists():
        if a.trace == dbtrace.SAMPLE and not a.record:
            sys.exit(f"{a.trace}: the committed sample trace is missing")
        print(f"dbtrace: {'recording' if a.record else 'no trace in'} {a.trace}: recording "
              f"it in the guest ({a.keys} keys each, about 11 minutes)", flush=True)
        dbtrace.record(a.trace, a.keys)
    meta, parsed = dbtrace.load(a.trace)
    if (meta["lba_bytes"], meta["zone_bytes"]) != (512, ZONE_MB * MIB) or \
            meta["ns_bytes"] != [plplib.NS_MB * MIB] * 2:
        sys.exit(f"{a.trace}: recorded on another geometry (LBA {meta['lba_bytes']}, zones "
                 f"{meta['zone_bytes']}, namespaces {meta['ns_bytes']}) than the replay's")
    return meta, parsed


def bytes_of(recs, ops=("write", "write_fua", "zone_append", "zone_append_fua")):
    return sum(r[3] for r in recs if r[1] in ops)


def dbbench(a):
    t0 = time.monotonic()
    meta, parsed = load_trace(a)
    keys, ph = meta["keys"], parsed["phases"]
    rows, passes = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for bench in ("fillseq", "overwrite"):
            wal_bytes = bytes_of(ph[bench][2])
            if a.puts:
                passes[bench] = max(1, -(-a.puts // keys))
            elif a.short:
                passes[bench] = SHORT_PASSES
            else:
                passes[bench] = max(1, -(-4 * max(a.buffers) * MIB // max(wal_bytes, 1)))
            jobs, info = dbtrace.replay_jobs(meta, parsed, bench, passes[bench], tmp)
            for w in a.buffers:
                ops = {}
                for mode in MODES:
                    dev = dict(femu_mode=3, devsz_mb=plplib.DRIVE_MB, **plplib.PAPER_FLASH,
                               **plplib.TWO_NS, zns_stripe=a.stripe, plp_flush_pct=70,
                               **plplib.mode_props(mode, w, a.plp_mb))
                    res, wall = simlib.run(dev, jobs)
                    errors = [j["jobname"] for j in res["jobs"] if j.get("error")]
                    if errors:
                        sys.exit(f"replay of {bench} failed in {errors}")
                    el = {j["jobname"]: j["elapsed_ns"] for j in res["jobs"]}
                    secs = sum(v for k, v in el.items() if k.startswith("run") and
                               k.endswith("-ns2")) / 1e9
                    data = sum(v for k, v in el.items() if k.startswith("run") and
                               k.endswith("-ns1")) / 1e9
                    s = res["stats"]
                    ops[mode] = dict(ops=info["puts"] / secs, us_per_put=1e6 * secs / info["puts"],
                                     data_us_per_put=1e6 * data / info["puts"], wall_s=wall,
                                     cap_uf=s.get("plp_worst_balanced_capacitance_uf"))
                rows.append(dict(bench=bench, w_mb=w, puts=info["puts"], passes=passes[bench],
                                 modes=ops))
    counts = parsed["counts"]
    print(f"\ndb_bench from block traces recorded in the guest ({a.trace}: {keys} keys, "
          f"memtable {meta['memtable_kb']} KiB, Linux {meta['kernel']}), replayed in femu-sim "
          f"at QD1 per namespace; two 1 GiB zoned namespaces (data, WAL), the paper's flash, "
          f"zns_stripe={a.stripe}; selective: {a.plp_mb} MiB PLP for the WAL")
    for bench in ("fillseq", "overwrite"):
        c = [counts[bench][ns] for ns in ("ns1", "ns2")]
        kib = [bytes_of(ph[bench][ns]) / keys / 1024 for ns in (1, 2)]
        print(f"  {bench}: per Put {kib[1]:.1f} KiB written to the WAL namespace "
              f"({c[1].get('flush', 0) / keys:.2f} flushes, "
              f"{c[1].get('write_fua', 0) / keys:.2f} FUA writes), {kib[0]:.1f} KiB to the "
              f"data namespace; {passes[bench]} pass(es) of {keys} Puts; guest: "
              f"{meta['results'][bench]}")
    print(f"{'bench':9} {'W MiB':>5} | " + " ".join(f"{m + ' Puts/s':>16}" for m in MODES)
          + " | " + " ".join(f"{m + '/none':>14}" for m in MODES[1:])
          + " | " + " ".join(f"{m + ' us/Put':>16}" for m in MODES)
          + f" | {'data us/Put none':>16} | {'worst uF full':>13} {'sel.':>6}")
    for r in rows:
        m = r["modes"]
        print(f"{r['bench']:9} {r['w_mb']:>5} | "
              + " ".join(f"{m[k]['ops']:16.0f}" for k in MODES) + " | "
              + " ".join(f"{m[k]['ops'] / m['none']['ops']:14.2f}" for k in MODES[1:])
              + " | " + " ".join(f"{m[k]['us_per_put']:16.1f}" for k in MODES)
              + f" | {m['none']['data_us_per_put']:16.1f}"
              + f" | {m['full']['cap_uf'] or 0:13.0f} {m['selective']['cap_uf'] or 0:6.0f}")
    print(f"\npublished ({DB_CITATION}): {DB_PAPER}")
    print("'us/Put': the WAL namespace's device time per Put (the Put's path); 'data us/Put': "
          "the data namespace's commands, replayed beside it; 'worst uF': the hold-up "
          "capacitance of the device's worst case (a full PLP region, balanced flush): full "
          "protects W, selective only its PLP region.")
    wall = time.monotonic() - t0
    print(f"wall time: {wall:.1f} s")
    return dict(rows=rows, wall_s=wall, trace=str(a.trace), trace_meta=meta, passes=passes)


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
    plplib.flush_axes(ax1, ax2, a.sizes, PAPER_REDUCTION, fontsize=7)
    bblib.save_plot(fig, "sim-plp")


if __name__ == "__main__":
    main()
