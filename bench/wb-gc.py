#!/usr/bin/env python3
"""Host-FTL GC against device-FTL GC on the same flash: throughput drop and WAF in steady state.

One guest holds, per over-provisioning case (default 7 and 28 %), a whitebox drive
(femu_mode=0) run by the guest's host FTL (`hostftl start --format --op OP`, served on
/dev/nbd0) and a blackbox drive (femu_mode=1, op_pcent=OP) of about the same raw flash (the
same channels, chips, pages per block, 4 KiB pages, latencies, time_scale), plus a nossd
drive: the guest's own ceiling. For each drive, one after the other, as bench/bb-gc-waf.py
does: fill it sequentially (4 KiB writes at the overwrite's queue depth: every write one
page program, the fresh-drive throughput), then overwrite it with 4 KiB uniform random
writes until WAF is steady: the guest reads the FTL's counters after every --window
capacities of host writes and stops when the WAF of the last window moved by at most --tol
from the window before, twice in a row (or after --max-caps capacities).

WAF: for the host FTL its own counters (`hostftl stats`: device sectors written for data
lines, host + GC + padding, over host sectors) and, device side, the whitebox drive's
units_programmed (vendor log page 0xCA; checkpoints and padding included); for the blackbox
drive its NAND pages over host pages. Both against the greedy-GC model (bblib.greedy_waf)
at each drive's physical/logical ratio.

If the guest image has no `hostftl`, the whitebox cases are skipped with a message.

Usage: bench/wb-gc.py [--short] [--ops 7,28] [--raw-mb 16] [--time-scale 2] [--tol 0.03]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402

PAGE = 4096


def guest_script(a, cases):
    common = f"--direct=1 --ioengine=io_uring --bs=4k --iodepth={a.qd} --output-format=json"
    steps = []
    for kind, op, s in cases:
        if kind == "wb":
            setup = f"""
if [[ -n $HAVE_FTL ]]; then
D=/dev/nbd0 W=$(dev_of {s}) || exit 1
oc_geometry $W {s} || exit 1
hostftl start --dev $W --nbd $D --format --op {op} || exit 1
echo @@{s}-ftl-start@@; hostftl stats --nbd $D || exit 1"""
            stop = f"""
echo @@{s}-ftl-end@@; hostftl stop --nbd $D || exit 1
echo @@{s}-vendor-log@@; vendor_log $W
fi"""
        else:
            setup = f"""
D=$(dev_of {s}) W=$D || exit 1
if true; then"""
            stop = f"""
echo @@{s}-vendor-log@@; vendor_log $W
fi"""
        steps.append(f"""{setup}
SIZE=$(blockdev --getsize64 $D)
echo "@@stats {s}-fill@@"
fio --name=fill --filename=$D {common} --rw=write --size=$SIZE \\
    --write_bw_log=/tmp/{s}-fill --log_avg_msec={a.log_ms} > /tmp/{s}-fill.json || exit 1
steady_overwrite {kind} $D $W {s} $SIZE || exit 1
echo @@{s}-fill@@; cat /tmp/{s}-fill.json
echo @@{s}-over-log@@; cat /tmp/{s}-over_bw*.log{stop}""")
    return f"""
# "host device device-side" counters of a drive, in 4 KiB units: KIND DEV NSDEV
counters() {{
  if [[ $1 == bb ]]; then
    local v; v=$(vendor_log $3)
    awk '$1 == "host_pages_written" {{ h = $2 }} $1 == "nand_pages_written" {{ n = $2 }}
         END {{ print h, n, n }}' <<<"$v"
  else
    local st u; st=$(hostftl stats --nbd $2) || return 1
    u=$(vendor_value $3 units_programmed)
    awk -F= -v u=$u -v ws=$GEO_WS_MIN '$1 == "HOST_WRITE_SECTORS" {{ h = $2 }}
         $1 == "DEV_WRITE_SECTORS" {{ d = $2 }} END {{ print h, d, u * ws }}' <<<"$st"
  fi
}}
# random overwrite until the WAF of a window of {a.window} capacities moved by at most
# {a.tol} (relative) from the window before, twice in a row; prints every window's counters
steady_overwrite() {{
  local kind=$1 D=$2 W=$3 s=$4 size=$5 pid c h d u w=0 prev= calm=0 waf
  local win=$(awk -v s=$size 'BEGIN {{ printf "%d", s * {a.window} / 4096 }}')
  fio --name=over --filename=$D {common} --rw=randwrite --norandommap --randrepeat=0 \\
      --size=$size --io_size=$(awk -v s=$size 'BEGIN {{ printf "%d", s * {a.max_caps} }}') \\
      --write_bw_log=/tmp/$s-over --log_avg_msec={a.log_ms} > /tmp/$s-over.json &
  pid=$!
  c=($(counters $kind $D $W)); echo "$s window 0: ${{c[*]}}"
  h0=${{c[0]}} d0=${{c[1]}}
  while kill -0 $pid 2>/dev/null; do
    sleep 0.5
    c=($(counters $kind $D $W)) || continue
    (( c[0] - h0 >= win )) || continue
    w=$((w + 1)); echo "$s window $w: ${{c[*]}}"
    waf=$(awk -v dn=$((c[1] - d0)) -v dh=$((c[0] - h0)) 'BEGIN {{ printf "%.4f", dn / dh }}')
    if [[ -n $prev ]] && awk -v a=$waf -v b=$prev 'BEGIN {{ d = a - b; if (d < 0) d = -d;
        exit !(d <= {a.tol} * b) }}'; then calm=$((calm + 1)); else calm=0; fi
    echo "$s WAF $waf (calm $calm)"
    if ((calm >= 2)); then echo "$s steady"; kill -INT $pid; break; fi
    prev=$waf h0=${{c[0]}} d0=${{c[1]}}
  done
  wait $pid
  ((w >= 3)) || {{ echo "$s: the overwrite ended after $w windows" >&2; return 1; }}
}}
HAVE_FTL=
if command -v hostftl >/dev/null; then HAVE_FTL=1; else echo "@@no-hostftl@@"; fi
N=$(dev_of REF) || exit 1
fio --name=ref --filename=$N {common} --rw=randwrite --size=64m --time_based \\
    --runtime={a.ref_runtime} > /tmp/ref.json || exit 1
if [[ -n $HAVE_FTL ]]; then
  # the host FTL's own path (NBD and its CPU work) on its in-memory OCSSD: no flash, no GC
  # (sequential as the fills, whose 4 KiB writes the block layer merges; random as the rest)
  hostftl start --dev mem:64 --nbd /dev/nbd1 --format --op 20 || exit 1
  fio --name=mem --filename=/dev/nbd1 {common} --rw=write --size=32m --time_based \\
      --runtime={a.ref_runtime} > /tmp/mem-seq.json || exit 1
  fio --name=mem --filename=/dev/nbd1 {common} --rw=randwrite --size=32m --time_based \\
      --runtime={a.ref_runtime} > /tmp/mem.json || exit 1
  hostftl stop --nbd /dev/nbd1 >/dev/null || exit 1
  echo @@mem-seq@@; cat /tmp/mem-seq.json
  echo @@mem@@; cat /tmp/mem.json
fi
{"".join(steps)}
echo "@@stats end@@"
echo @@ref@@; cat /tmp/ref.json
echo @@end@@
"""


def windows_of(g, s):
    """[(t, host, dev, devside)] of the window lines of drive s."""
    out = []
    for t, line in g.lines:
        f = line.split()
        if len(f) == 6 and f[0] == s and f[1] == "window":
            out.append((t, *(int(x) for x in f[3:6])))
    return out


def kv(text):
    return {k: v for k, v in (l.split("=", 1) for l in text.split() if "=" in l)}


def run_case(a, g, kind, op, s):
    ws = windows_of(g, s)
    fill = bblib.fio_json(g.section(f"{s}-fill"))["jobs"][0]["write"]
    cap = fill["io_bytes"] // PAGE
    wins = []
    for (t0, h0, d0, u0), (t1, h1, d1, u1) in zip(ws, ws[1:]):
        wins.append(dict(t0=t0, t1=t1, host_pages=h1 - h0, waf=(d1 - d0) / max(1, h1 - h0),
                         waf_device=(u1 - u0) / max(1, h1 - h0),
                         mbps=(h1 - h0) * PAGE / 1e6 / (t1 - t0), caps=(h1 - ws[0][1]) / cap))
    steady = any(line.strip() == f"{s} steady" for _, line in g.lines)
    over_log = bblib.fio_bw_log(g.section(f"{s}-over-log"))
    last = wins[-1]
    t_over = ws[0][0]
    last_pts = [v for t, v in over_log if last["t0"] <= t_over + t <= last["t1"]]
    vlog = bblib.vendor_log(g.section(f"{s}-vendor-log"))
    before = fill["bw_bytes"] / 1e6
    r = dict(kind=kind, op=op, serial=s, before_mbps=before, steady=steady, windows=wins,
             steady_mbps=last["mbps"], steady_points=last_pts, steady_waf=last["waf"],
             steady_waf_device=last["waf_device"], drop_pct=100 * (1 - last["mbps"] / before),
             caps_to_steady=last["caps"], vendor_log=vlog, capacity_pages=cap)
    if kind == "wb":
        st0, st1 = kv(g.section(f"{s}-ftl-start")), kv(g.section(f"{s}-ftl-end"))
        geo = bblib.geometry(g, s)
        # hostftl exposes its usable line sectors / (1 + OP): alpha is 1 + OP by construction
        r.update(ftl_start=st0, ftl_end=st1, alpha=1 + op / 100, geometry=geo,
                 lines=int(st0["DATA_LINES"]), gc_lines=int(st1.get("GC_LINES", 0)))
    else:
        _, end = g.marks["end"]
        line_pages = a.nchs * a.luns * a.pgs_per_blk
        r.update(alpha=end[s]["total-lines"] * line_pages / cap, lines=end[s]["total-lines"],
                 gc_lines=end[s]["gc-runs"], lateness=bblib.lateness(end[s]))
    r["model_waf"] = bblib.greedy_waf(r["alpha"])
    return r


def plot(results, a, path):
    plt = bblib.pyplot()
    if not plt:
        return None
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7))
    for r in results:
        lbl = f"{'host FTL' if r['kind'] == 'wb' else 'device FTL'} {r['op']}% OP"
        line, = ax1.plot([w["caps"] for w in r["windows"]], [w["mbps"] for w in r["windows"]],
                         "o-", label=lbl)
        ax2.plot([w["caps"] for w in r["windows"]], [w["waf"] for w in r["windows"]], "o-",
                 color=line.get_color(), label=lbl)
        ax2.axhline(r["model_waf"], color=line.get_color(), ls=":", lw=1)
    ax1.set_ylabel("host write MB/s per window")
    ax1.set_title(f"host FTL (whitebox) vs device FTL (blackbox): 4 KiB random overwrite "
                  f"QD{a.qd}, {a.nchs}x{a.luns} chips, time_scale={a.time_scale}", fontsize=10)
    ax1.legend()
    ax1.grid(alpha=0.3)
    ax2.set_ylabel("WAF per window (dotted: greedy model)")
    ax2.set_xlabel("capacities of random overwrite")
    ax2.set_ylim(bottom=0)
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="7,28", help="over-provisioning cases in %% (default 7,28)")
    ap.add_argument("--raw-mb", type=int, default=16,
                    help="raw flash of each drive, MiB (the whitebox size; the blackbox "
                         "exposes raw / (1 + OP)); default 16")
    ap.add_argument("--nchs", type=int, default=2)
    ap.add_argument("--luns", type=int, default=1, help="chips per channel (default 1)")
    ap.add_argument("--pgs-per-blk", type=int, default=32)
    ap.add_argument("--flash-type", type=int, default=3)
    ap.add_argument("--time-scale", type=int, default=2)
    ap.add_argument("--qd", type=int, default=16)
    ap.add_argument("--window", type=float, default=0.5,
                    help="capacities of host writes per WAF window (default 0.5)")
    ap.add_argument("--tol", type=float, default=0.03,
                    help="steady: WAF moved by at most this fraction, twice (default 0.03)")
    ap.add_argument("--max-caps", type=float, default=6,
                    help="give up after this many capacities of overwrite (default 6)")
    ap.add_argument("--short", action="store_true",
                    help="8 MiB of raw flash in 64 KiB blocks (the same number of lines), 4 "
                         "capacities at most")
    ap.add_argument("--log-ms", type=int, default=1000, help="fio bandwidth log interval")
    ap.add_argument("--ref-runtime", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=7200)
    a = ap.parse_args()
    if a.short:
        a.raw_mb, a.pgs_per_blk, a.max_caps = 8, 16, 4
    try:
        ops = [int(x) for x in a.ops.split(",")]
    except ValueError:
        sys.exit(f"--ops must be comma-separated integers (got '{a.ops}')")
    if len(set(ops)) != len(ops) or not all(1 <= o <= 100 for o in ops):
        sys.exit(f"--ops: each in 1..100, none twice (got '{a.ops}')")
    if not 0.05 <= a.window <= 4:
        sys.exit(f"--window must be in 0.05..4 capacities (got {a.window})")
    if not 0 < a.tol < 1:
        sys.exit(f"--tol must be a fraction in (0, 1) (got {a.tol})")
    if not 3 * a.window <= a.max_caps <= 100:
        sys.exit(f"--max-caps must be in {3 * a.window:g}..100 (got {a.max_caps})")
    for name, v in (("--pgs-per-blk", a.pgs_per_blk), ("--luns", a.luns)):
        if v < 1 or v & (v - 1):
            sys.exit(f"{name} must be a power of two (whitebox chunks and PUs; got {v})")
    chunk_mb = a.pgs_per_blk * PAGE / (1 << 20)
    if a.raw_mb < 16 * a.nchs * a.luns * chunk_mb:
        least = 16 * a.nchs * a.luns * chunk_mb
        sys.exit(f"--raw-mb must give every PU 16 chunks at least: {least:g} MiB or more "
                 f"(got {a.raw_mb})")

    flash = dict(pgs_per_blk=a.pgs_per_blk, flash_type=a.flash_type, time_scale=a.time_scale)
    cases, devs = [], []
    for op in ops:
        wb, bb = f"WB{op}", f"BB{op}"
        cases += [("wb", op, wb), ("bb", op, bb)]
        devs.append(bblib.Device(wb, 0, a.raw_mb, lba_index=1, lnum_ch=a.nchs, lnum_lun=a.luns,
                                 lnum_pln=1, lpgs_per_blk=a.pgs_per_blk, lsecs_per_pg=1,
                                 **flash))
        devs.append(bblib.Device(bb, 1, max(1, round(a.raw_mb / (1 + op / 100))), op_pcent=op,
                                 nchs=a.nchs, luns_per_ch=a.luns, pls_per_lun=1, **flash))
    devs.append(bblib.Device("REF", 2, 64))
    bblib.log(f"booting one guest: host FTL and device FTL at OP {a.ops} on {a.raw_mb} MiB of "
              f"flash each, {a.nchs}x{a.luns} chips, time_scale={a.time_scale} + nossd; each: "
              "fill, then random overwrite until WAF is steady ...")

    def progress(t, line):
        if " window " in line or line.endswith(" steady") or "hostftl" in line:
            bblib.log(f"  {t:6.1f}s {line.strip('@ ')}")

    g = bblib.Guest(guest_script(a, cases), devs, timeout=a.timeout).run(progress)
    has_wb = not any(l.strip() == "@@no-hostftl@@" for _, l in g.lines)
    done = [c for c in cases if has_wb or c[0] != "wb"]
    results = [run_case(a, g, *c) for c in done]
    # the flash's own fresh rate: every chip programming 4 KiB pages back to back (TLC page
    # types average to the single latency given here: flash_type's mean program time)
    wr_ns = {1: 200e3, 2: 600e3, 3: 700e3, 4: 1700e3}.get(a.flash_type, 700e3)
    model_fresh = a.nchs * a.luns * PAGE / (wr_ns * a.time_scale * 1e-9) / 1e6
    for r in results:
        r["model_fresh_mbps"] = model_fresh
        r["drop_vs_model_pct"] = 100 * (1 - r["steady_mbps"] / model_fresh)
    ref_mbps = bblib.fio_json(g.section("ref"))["jobs"][0]["write"]["bw_bytes"] / 1e6
    mem_mbps = mem_seq_mbps = None
    if has_wb:
        mem_mbps = bblib.fio_json(g.section("mem"))["jobs"][0]["write"]["bw_bytes"] / 1e6
        mem_seq_mbps = bblib.fio_json(g.section("mem-seq"))["jobs"][0]["write"]["bw_bytes"] / 1e6

    print(f"\nhost FTL (whitebox + hostftl) vs device FTL (blackbox) GC: {a.raw_mb} MiB of flash "
          f"each, {a.nchs} ch x {a.luns} chips, pgs_per_blk={a.pgs_per_blk}, 4 KiB pages, "
          f"flash_type={a.flash_type}, time_scale={a.time_scale};\nsequential fill, then 4 KiB "
          f"uniform random writes QD{a.qd} until the WAF of a {a.window:g}-capacity window "
          f"moved by <= {a.tol:.0%} twice (at most {a.max_caps:g} capacities)")
    if not has_wb:
        print("HOST FTL SKIPPED: the guest image has no `hostftl` (guest/hostftl not built into "
              "it yet); build an image from a tree that has it: images/build-image.sh DIR, "
              "FEMU_IMAGE_DIR=DIR")
    print(f"{'case':22} {'fresh':>6} {'steady':>6} {'drop':>5} {'drop*':>5} {'WAF':>5} "
          f"{'WAF dev':>7} "
          f"{'model':>5} {'alpha':>5} {'lines':>5} {'caps':>5} {'fio 1 s points, last window':>28}")
    print(f"{'':22} {'MB/s':>6} {'MB/s':>6} {'%':>5} {'%':>5}")
    for r in results:
        lbl = f"{'host FTL' if r['kind'] == 'wb' else 'device FTL'} OP {r['op']}%"
        caps = f"{r['caps_to_steady']:.1f}" + ("" if r["steady"] else "!")
        pts = bblib.fmt_spread(r["steady_points"], 2) if r["steady_points"] else "-"
        print(f"{lbl:22} {r['before_mbps']:6.2f} {r['steady_mbps']:6.2f} {r['drop_pct']:5.1f} "
              f"{r['drop_vs_model_pct']:5.1f} {r['steady_waf']:5.2f} {r['steady_waf_device']:7.2f} "
              f"{r['model_waf']:5.2f} "
              f"{r['alpha']:5.3f} {r['lines']:5d} {caps:>5} {pts:>28}")
    for op in ops:
        pair = {r["kind"]: r for r in results if r["op"] == op}
        if len(pair) == 2:
            w, b = pair["wb"], pair["bb"]
            print(f"OP {op}%: host FTL / device FTL: steady MB/s "
                  f"{w['steady_mbps'] / b['steady_mbps']:.2f}"
                  f", WAF {w['steady_waf'] / b['steady_waf']:.2f}, fresh MB/s "
                  f"{w['before_mbps'] / b['before_mbps']:.2f}")
    print(f"guest ceiling (nossd 4K randwrite QD{a.qd}): {ref_mbps:.1f} MB/s = "
          f"{ref_mbps / max(r['before_mbps'] for r in results):.1f}x the fastest fresh drive here")
    if mem_mbps is not None:
        fresh = max(r["before_mbps"] for r in results if r["kind"] == "wb")
        steady = max(r["steady_mbps"] for r in results if r["kind"] == "wb")
        print(f"host-FTL path ceiling (hostftl on its in-memory OCSSD, no flash, 4K QD{a.qd}): "
              f"sequential {mem_seq_mbps:.1f} MB/s = {mem_seq_mbps / fresh:.1f}x its best fresh "
              f"fill, random {mem_mbps:.1f} MB/s = {mem_mbps / steady:.1f}x its best steady "
              "figure (near 1: that figure is the path's, i.e. TCG's)")
    for r in results:
        if r["kind"] == "wb":
            e = r["ftl_end"]
            print(f"  host FTL OP {r['op']}%: whole run WAF {e.get('WAF')}, GC lines "
                  f"{e.get('GC_LINES')}, pad sectors {e.get('PAD_SECTORS')}, metadata sectors "
                  f"{e.get('META_WRITE_SECTORS')}, erases {e.get('ERASES')}; device "
                  f"units_programmed {r['vendor_log'].get('units_programmed')}")
        else:
            print(f"  device FTL OP {r['op']}%: gc-runs {r['gc_lines']}, lateness p50/p99/max us "
                  f"{r['lateness']}")
    print(f"\ndrop* = steady against the flash's fresh rate ({model_fresh:.2f} MB/s: chips x 4 KiB "
          "/ program time), the figure to compare when the host FTL's fresh rate is capped by "
          "its path\n(TCG). "
          f"steady = the last window (host pages over the host clock between window reads); "
          f"caps = capacities of overwrite until steady ('!': not\nsteady within --max-caps). "
          "WAF = the FTL's own device writes / host writes in that window; 'WAF dev' = what the "
          "drive programmed\n(whitebox: units_programmed x WS_MIN, checkpoints and padding "
          "included) / host writes. model = greedy GC under uniform random\nwrites at alpha = "
          f"physical / logical sectors ({bblib.WAF_MODEL};\nhost FTL: 1 + OP, as it sizes "
          "itself). Transfers to an unscaled drive: "
          f"WAF, drop* and the host/device ratios of steady MB/s and WAF; the host FTL's fresh "
          f"rate and drop do\nnot when it is close to its path ceiling (its CPU work and "
          f"synchronous device commands run in the TCG guest), nor its steady MB/s\nwhere its "
          f"single-threaded GC (one device command at a time) waits on chips a real host's "
          f"would overlap. MB/s x time_scale ({a.time_scale})\nfor this "
          f"{a.nchs * a.luns}-chip geometry only; few lines (small drives) raise WAF above the "
          "model.")
    path = bblib.RESULTS / f"wb-gc-{bblib.stamp()}.png"
    bblib.RESULTS.mkdir(parents=True, exist_ok=True)
    if results and plot(results, a, path):
        print(f"plot: {path}")
    print("results: " + str(bblib.save_json("wb-gc", dict(
        args=vars(a), has_host_ftl=has_wb, ref_mbps=ref_mbps, hostftl_mem_mbps=mem_mbps,
        hostftl_mem_seq_mbps=mem_seq_mbps,
        results=results,
        waf_model=bblib.WAF_MODEL), guest=g)))


if __name__ == "__main__":
    main()
