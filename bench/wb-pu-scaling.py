#!/usr/bin/env python3
"""Whitebox PU scaling: raw chunk writes on 1, 2, 4, ... parallel units of an OCSSD drive.

One guest holds a whitebox drive (femu_mode=0) and a nossd drive (what the guest itself can
issue). For every PU count k, --chunks chunks are written, N/k per PU, with one fio job per
PU writing its own chunks one after another from their first sector (a chunk takes writes
only at its write pointer, and each chunk is written once: every run gets fresh chunks, so
no reset is needed). The chunks are found by the OCSSD LBA format read from Identify
Geometry in the guest: chunk (g, p, c) is the LBA range ((g * NUM_PU + p) * NUM_CHK + c) *
CLBA, + CLBA. PUs are taken channel (group) first, as a host FTL stripes; with several
groups, 2..PUs-per-group PUs are also measured packed into one group (one channel), which
shows what sharing a channel costs. Writes are standard NVMe writes of WS_OPT sectors (the
optimal write size), QD --qd per PU.

TLC at --time-scale (default 30) makes one PU's programs, not TCG, the limit: a PU programs
one WS_MIN unit at a time, so its model rate is WS_MIN x sector / TWRT. Every PU count is
measured --rounds times, interleaved (the order reversed every other round); the aggregate
MB/s is the bytes over the span from the first job's start to the last job's end. Printed:
MB/s, the scaling relative to 1 PU in the same round, the fraction of ideal (k x the 1-PU
figure), the model's ceiling, and the guest's own ceiling (the largest k's jobs on nossd).

Usage: bench/wb-pu-scaling.py [--short] [--pus 1,2,4,8,16] [--chunks 32] [--rounds 3] [--qd 1]
"""

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

SECTOR = 4096   # lba_index=1


def plan(a, pus):
    """[(round, key, k, [(g, p, first_chunk, nchunks)])] in run order, and the chunks needed
    per PU. key 'wb': PUs taken group (channel) first; 'wbp': packed into one group (only
    for 1 < k <= PUs per group, when there are several groups)."""
    spread = [(g, p) for p in range(a.pus_per_group) for g in range(a.groups)]
    packed = [(g, p) for g in range(a.groups) for p in range(a.pus_per_group)]
    used = {gp: 0 for gp in spread}
    runs = []
    for r in range(1, a.rounds + 1):
        todo = [("wb", k, spread) for k in pus]
        if a.groups > 1:
            todo += [("wbp", k, packed) for k in pus if 1 < k <= a.pus_per_group]
        for key, k, order in (todo if r % 2 else todo[::-1]):
            per = a.chunks // k
            jobs = []
            for g, p in order[:k]:
                jobs.append((g, p, used[(g, p)], per))
                used[(g, p)] += per
            runs.append((r, key, k, jobs))
    return runs, max(used.values())


def fio_span(jobs):
    """(bytes, seconds) of one fio run: all jobs' bytes over the span from the first job's
    start to the last one's end (fio's job_start, ms); without job_start, the longest job."""
    nbytes = sum(j["write"]["io_bytes"] for j in jobs)
    if all("job_start" in j for j in jobs):
        t0 = min(j["job_start"] for j in jobs)
        t1 = max(j["job_start"] + j["job_runtime"] for j in jobs)
        return nbytes, (t1 - t0) / 1000
    return nbytes, max(j["write"]["runtime"] for j in jobs) / 1000


def guest_script(a, runs, kmax, nchk, ref_bytes_per_job):
    common = ("--output-format=json --direct=1 --ioengine=io_uring --rw=write "
              f"--iodepth={a.qd} --bs=$BS")
    # with QD > 1 a job that moved between CPUs could reach the device over two queues,
    # out of order: pin each job to one CPU
    pin = (lambda i: f" --cpus_allowed={i % a.smp}") if a.qd > 1 else (lambda i: "")
    body = []
    for r, key, k, jobs in runs:
        js = " ".join(f"--name=g{g}p{p}{pin(i)} --filename=$W --offset=$(off {g} {p} {c}) "
                      f"--size=$(({n} * CB))" for i, (g, p, c, n) in enumerate(jobs))
        body.append(f"echo @@{key}-{k}-{r}@@; fio {common} {js} || exit 1")
        if k == kmax and key == "wb":
            ref = " ".join(f"--name=ref{i}{pin(i)} --filename=$N --offset={i * ref_bytes_per_job} "
                           f"--size={ref_bytes_per_job}" for i in range(kmax))
            body.append(f"echo @@ref-{r}@@; fio {common} {ref} || exit 1")
    body = "\n".join(body)
    return f"""
W=$(dev_of WB) && N=$(dev_of REF) || exit 1
oc_geometry $W WB || exit 1
if ((GEO_NUM_GRP != {a.groups} || GEO_NUM_PU != {a.pus_per_group} || GEO_NUM_CHK < {nchk})); then
  echo "geometry $GEO_NUM_GRP x $GEO_NUM_PU PUs x $GEO_NUM_CHK chunks: wanted {a.groups} x \\
{a.pus_per_group} x {nchk} or more" >&2; exit 1
fi
BS=$(({a.bs_units} ? {a.bs_units} * GEO_WS_MIN * GEO_SECSZ : GEO_WS_OPT * GEO_SECSZ))
CB=$((GEO_CLBA * GEO_SECSZ))
# byte offset of chunk $3 of PU $2 in group $1
off() {{ echo $(( (($1 * GEO_NUM_PU + $2) * GEO_NUM_CHK + $3) * CB )); }}
echo "@@stats start@@"
{body}
echo "@@stats end@@"
echo @@wb-vendor-log@@; vendor_log $W
echo @@end@@
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pus", default="1,2,4,8,16", help="PU counts (default 1,2,4,8,16)")
    ap.add_argument("--chunks", type=int, default=32,
                    help="chunks written per PU count, split evenly over its PUs (default 32)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--qd", type=int, default=1, help="queue depth per PU, 1..4 (default 1)")
    ap.add_argument("--bs-units", type=int, default=0,
                    help="write size in WS_MIN units (default 0: WS_OPT)")
    ap.add_argument("--groups", type=int, default=4, help="groups (channels), lnum_ch")
    ap.add_argument("--pus-per-group", type=int, default=4, help="PUs per group, lnum_lun")
    ap.add_argument("--pgs-per-blk", type=int, default=16,
                    help="pages per block: chunk = 4 sectors x this (default 16: 256 KiB)")
    ap.add_argument("--flash-type", type=int, default=3)
    ap.add_argument("--time-scale", type=int, default=30)
    ap.add_argument("--smp", type=int, default=2, help="guest CPUs")
    ap.add_argument("--short", action="store_true", help="16 chunks per PU count, 3 rounds")
    a = ap.parse_args()
    if a.short:
        a.chunks, a.rounds = 16, 3
    try:
        pus = sorted({int(x) for x in a.pus.split(",")})
    except ValueError:
        sys.exit(f"--pus must be comma-separated integers (got '{a.pus}')")
    total = a.groups * a.pus_per_group
    bblib.require_rounds(a.rounds)
    if not 1 <= a.qd <= 4:
        sys.exit(f"--qd must be in 1..4 (got {a.qd})")
    if not 0 <= a.bs_units <= 16:
        sys.exit(f"--bs-units must be in 0..16 (got {a.bs_units})")
    if a.pus_per_group < 1 or a.pus_per_group & (a.pus_per_group - 1) or not 1 <= a.groups <= 64:
        sys.exit(f"--pus-per-group must be a power of two and --groups in 1..64 (got "
                 f"{a.pus_per_group}, {a.groups})")
    if a.pgs_per_blk < 1 or a.pgs_per_blk & (a.pgs_per_blk - 1):
        sys.exit(f"--pgs-per-blk must be a power of two (got {a.pgs_per_blk})")
    if pus[0] != 1 or pus[-1] > total or any(a.chunks % k for k in pus):
        sys.exit(f"--pus must start at 1, stay within the drive's {total} PUs (--groups x "
                 f"--pus-per-group) and divide --chunks ({a.chunks}); got {a.pus}")
    if not 1 <= a.time_scale <= 1000:
        sys.exit(f"--time-scale must be in 1..1000 (got {a.time_scale})")

    runs, need = plan(a, pus)
    chunk_bytes = 4 * a.pgs_per_blk * SECTOR      # lsecs_per_pg=4, lnum_pln=1
    nchk = 1 << math.ceil(math.log2(need))
    # the size must give exactly nchk chunks per PU (whole MiB)
    while total * nchk * chunk_bytes % (1 << 20):
        nchk *= 2
    size = total * nchk * chunk_bytes >> 20
    kmax = pus[-1]
    ref_bytes = a.chunks // kmax * chunk_bytes
    wb = bblib.Device("WB", 0, size, lba_index=1, lnum_ch=a.groups, lnum_lun=a.pus_per_group,
                      lnum_pln=1, lpgs_per_blk=a.pgs_per_blk, lsecs_per_pg=4,
                      flash_type=a.flash_type, time_scale=a.time_scale)
    ref = bblib.Device("REF", 2, max(64, math.ceil(ref_bytes * kmax / (1 << 20))))
    bblib.log(f"booting: whitebox {size} MiB ({a.groups}x{a.pus_per_group} PUs, {nchk} chunks "
              f"of {chunk_bytes >> 10} KiB each), time_scale={a.time_scale}, + nossd; "
              f"{a.rounds} rounds of PU counts {a.pus} ...")
    g = bblib.Guest(guest_script(a, runs, kmax, nchk, ref_bytes), [wb, ref],
                    smp=a.smp, timeout=3600).run(
        lambda t, l: l.startswith("@@wb-1-") and bblib.log(f"  {t:6.1f}s {l.strip('@')}"))
    geo = bblib.geometry(g, "WB")
    _, final = g.marks["end"]

    def mbps(name):
        nbytes, secs = fio_span(bblib.fio_json(g.section(name))["jobs"])
        return nbytes / secs / 1e6

    rounds = range(1, a.rounds + 1)
    bw = {k: [mbps(f"wb-{k}-{r}") for r in rounds] for k in pus}
    refbw = [mbps(f"ref-{r}") for r in rounds]
    packed = [k for k in pus if a.groups > 1 and 1 < k <= a.pus_per_group]
    bwp = {k: [mbps(f"wbp-{k}-{r}") for r in rounds] for k in packed}
    scale = {k: [x / y for x, y in zip(bw[k], bw[1])] for k in pus}
    scalep = {k: [x / y for x, y in zip(bwp[k], bw[1])] for k in packed}
    of_ideal = {k: [s / k for s in scale[k]] for k in pus}
    unit = geo["ws_min"] * geo["secsz"]
    pu_model = unit / (geo["twrt"] * 1e-9) / 1e6      # one unit programmed at a time
    wsz = (a.bs_units * geo["ws_min"] if a.bs_units else geo["ws_opt"]) * geo["secsz"]

    print(f"\nwhitebox PU scaling: {geo['num_grp']} groups x {geo['num_pu']} PUs, chunks of "
          f"{geo['clba']} sectors ({geo['clba'] * geo['secsz'] >> 10} KiB), WS_MIN "
          f"{geo['ws_min']} / WS_OPT {geo['ws_opt']} sectors, TWRT {geo['twrt'] / 1e6:.1f} ms "
          f"(time_scale={a.time_scale}, flash_type={a.flash_type});\n{a.chunks} chunks per PU "
          f"count, one fio job per PU writing its chunks in order, {wsz >> 10} KiB writes "
          f"QD{a.qd}; {a.rounds} interleaved rounds, median [min-max]")
    print(f"{'PUs':>10} {'MB/s':>19} {'x 1 PU':>19} {'of ideal':>19} {'model':>6} "
          f"{'x unscaled':>10}")
    rows = []
    for k in pus:
        med = statistics.median(bw[k])
        print(f"{k:10d} {bblib.fmt_spread(bw[k], 2):>19} {bblib.fmt_spread(scale[k], 2):>19} "
              f"{bblib.fmt_spread(of_ideal[k], 2):>19} {pu_model * k:6.2f} "
              f"{med * a.time_scale:10.1f}")
        rows.append(dict(pus=k, mbps=bblib.spread(bw[k]), scaling=bblib.spread(scale[k]),
                         of_ideal=bblib.spread(of_ideal[k]), model_mbps=pu_model * k))
    for k in packed:
        ofi = [x / k for x in scalep[k]]
        print(f"{f'{k} 1 group':>10} {bblib.fmt_spread(bwp[k], 2):>19} "
              f"{bblib.fmt_spread(scalep[k], 2):>19} {bblib.fmt_spread(ofi, 2):>19} "
              f"{pu_model * k:6.2f} {statistics.median(bwp[k]) * a.time_scale:10.1f}")
        rows.append(dict(pus=k, one_group=True, mbps=bblib.spread(bwp[k]),
                         scaling=bblib.spread(scalep[k]), of_ideal=bblib.spread(ofi),
                         model_mbps=pu_model * k))
    one = statistics.median(bw[1])
    print(f"1 PU reaches {one / pu_model:.2f} of the model (WS_MIN / TWRT)")
    vlog = bblib.vendor_log(g.section("wb-vendor-log"))
    written = a.rounds * (len(pus) + len(packed)) * a.chunks
    print(f"guest ceiling (nossd, {kmax} jobs alike): {bblib.fmt_spread(refbw, 1)} MB/s = "
          f"{statistics.median(refbw) / statistics.median(bw[kmax]):.1f}x the whitebox figure "
          f"at {kmax} PUs (must be well above it)")
    print(f"checks: chunks closed {vlog.get('chunks_closed')} (written {written}), open "
          f"{vlog.get('chunks_open')}; units programmed {vlog.get('units_programmed')} "
          f"(expected {written * geo['clba'] // geo['ws_min']}); lateness p50/p99/max us "
          f"{bblib.lateness(final['WB'])}")
    print("'x 1 PU' is the MB/s relative to 1 PU in the same round (ideal = PUs); 'of ideal' = "
          "that / PUs; 'model' = PUs x WS_MIN / TWRT\n(channel transfers ignored); 'k 1 group': "
          "k PUs of one group (one channel) instead of one per group.\nTransfers to "
          "an unscaled drive of this geometry: the scaling and 'of ideal', as long as\nthe "
          f"host keeps every PU busy; MB/s x time_scale ({a.time_scale}) = 'x unscaled'. Below "
          "ideal at many PUs: the jobs' start skew, the guest's own\nissue rate (TCG), or "
          "PUs of one group waiting on their shared channel (compare the '1 group' rows).")

    plt = bblib.pyplot()
    if plt:
        fig, ax = plt.subplots(figsize=(6, 4.5))
        sp = [bblib.spread(scale[k]) for k in pus]
        med = [x["median"] for x in sp]
        ax.errorbar(pus, med, yerr=[[m - x["min"] for m, x in zip(med, sp)],
                                    [x["max"] - m for m, x in zip(med, sp)]],
                    fmt="o-", capsize=3, label=f"chunk writes {wsz >> 10} KiB QD{a.qd} per PU")
        if packed:
            sp = [bblib.spread(scalep[k]) for k in packed]
            ax.plot(packed, [x["median"] for x in sp], "s", label="PUs of one group")
        ax.plot(pus, pus, "k--", lw=1, label="ideal")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        plain = plt.matplotlib.ticker.ScalarFormatter()
        ax.set_xticks(pus)
        ax.set_yticks(pus)
        ax.xaxis.set_major_formatter(plain)
        ax.yaxis.set_major_formatter(plain)
        ax.set_xlabel("PUs written in parallel")
        ax.set_ylabel("MB/s relative to 1 PU")
        ax.set_title(f"whitebox: write throughput vs PUs (median, min-max of {a.rounds} rounds)",
                     fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend()
        bblib.save_plot(fig, "wb-pu-scaling")
    print("results: " + str(bblib.save_json("wb-pu-scaling", dict(
        args=vars(a), geometry=geo, rows=rows, ref_mbps=bblib.spread(refbw),
        pu_model_mbps=pu_model, vendor_log=vlog,
        lateness_ns={k: final["WB"][f"lateness-{k}-ns"] for k in ("p50", "p99", "max")}),
        guest=g)))


if __name__ == "__main__":
    main()
