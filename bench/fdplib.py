"""Shared by the FDP benchmarks (bench/fdp-*.py): FDP drives (femu_mode=4) for bblib.Guest,
the guest's loop that writes window after window until the device's WAF is steady, and the
per-handle WAF of each window from the QMP statistics (ruhN-host-pages-written,
ruhN-gc-pages-moved), summarized, modelled (bblib.greedy_waf) and plotted.

What transfers from these benchmarks is WAF: a count of pages, the same on a real drive of
this geometry whatever the guest's speed. So the flash is fast (the TCG guest, not the
model, sets the pace and the runs stay short) and background GC starts only where forced
GC does (gc_thres_pcent = gc_thres_pcent_high), because how often a drive is idle depends
on the guest's speed and would change the counts; MB/s are printed as the run's pace only.
"""

import sys

import bblib    # the scripts put bench/ on sys.path

PAGE = 4096

# bash in the guest, after bblib's prelude
GUEST = r"""
# the NVMe generic (char) device of block device $1: fio's FDP directives go through it
ng_of() { echo "${1/nvme/ng}"; }
# fdp_windows TAG DEV MIN MAX TOL CMD...: runs CMD (one window of writes) again and again;
# after each the host reads every drive's statistics (@@stats TAG-wN@@) and the guest the
# device's WAF of that window; stops when it moved by at most TOL (relative) from the
# window before twice in a row (and MIN windows are done), or after MAX windows
fdp_windows() {
  local tag=$1 dev=$2 min=$3 max=$4 tol=$5 w=0 prev= calm=0 h0 n0 h n waf
  shift 5
  h0=$(vendor_value $dev host_pages_written) n0=$(vendor_value $dev nand_pages_written)
  echo "@@stats $tag-w0@@"
  while ((w < max)); do
    "$@" > /tmp/$tag.out 2>&1 || { cat /tmp/$tag.out; return 1; }
    w=$((w + 1)); echo "@@stats $tag-w$w@@"
    h=$(vendor_value $dev host_pages_written) n=$(vendor_value $dev nand_pages_written)
    waf=$(awk -v dn=$((n - n0)) -v dh=$((h - h0)) 'BEGIN { printf "%.4f", dn / dh }')
    if [[ -n $prev ]] && awk -v a=$waf -v b=$prev -v t=$tol 'BEGIN { d = a - b;
        if (d < 0) d = -d; exit !(d <= t * b) }'; then calm=$((calm + 1)); else calm=0; fi
    echo "$tag window $w: WAF $waf (calm $calm)"
    if ((w >= min && calm >= 2)); then echo "$tag steady"; break; fi
    prev=$waf h0=$h n0=$n
  done
}
"""


def add_args(ap, *, size, short_size, pgs_per_blk=16, short_pgs=None, luns=1, op=7, min_w,
             max_w, short_min_w, short_max_w, tol=0.03):
    """The options every FDP benchmark has (drive, flash, window loop); --short changes the
    defaults of --size, --pgs-per-blk and the windows (what is given explicitly stays)."""
    ap.add_argument("--size", type=int, help=f"drive MiB (default {size}, short {short_size})")
    ap.add_argument("--nchs", type=int, default=2)
    ap.add_argument("--luns", type=int, default=luns, help=f"luns_per_ch (default {luns})")
    ap.add_argument("--pgs-per-blk", type=int,
                    help=f"pages per block: a reclaim unit is this x the chips (default "
                         f"{pgs_per_blk}, short {short_pgs or pgs_per_blk})")
    ap.add_argument("--op", type=int, default=op, help=f"op_pcent (default {op})")
    ap.add_argument("--wr-lat", type=int, default=20000, help="ns (default 20000: fast)")
    ap.add_argument("--rd-lat", type=int, default=10000, help="ns")
    ap.add_argument("--er-lat", type=int, default=200000, help="ns")
    ap.add_argument("--gc-thres", type=int, default=99,
                    help="gc_thres_pcent and gc_thres_pcent_high (default 99: GC only "
                         "when forced, see fdplib)")
    ap.add_argument("--qd", type=int, default=16, help="iodepth of the 4 KiB writers")
    ap.add_argument("--min-windows", type=int,
                    help=f"(default {min_w}, short {short_min_w})")
    ap.add_argument("--max-windows", type=int,
                    help=f"(default {max_w}, short {short_max_w})")
    ap.add_argument("--tol", type=float, default=tol,
                    help=f"steady: WAF of a window moved by at most this, twice (default "
                         f"{tol})")
    ap.add_argument("--timeout", type=int, default=7200)
    ap.add_argument("--short", action="store_true", help="the short form (bench/run-all.sh)")
    ap.add_argument("--full", action="store_true", help="the full form (the default)")
    ap.set_defaults(_forms=dict(
        full=dict(size=size, pgs_per_blk=pgs_per_blk, min_windows=min_w, max_windows=max_w),
        short=dict(size=short_size, pgs_per_blk=short_pgs or pgs_per_blk,
                   min_windows=short_min_w, max_windows=short_max_w)))


def parse_args(ap):
    a = ap.parse_args()
    if a.short and a.full:
        sys.exit("--short and --full exclude each other")
    for k, v in a._forms["short" if a.short else "full"].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    del a._forms
    # a benchmark may leave --min-windows to be derived from its own options (None)
    if a.min_windows is not None and not 1 <= a.min_windows <= a.max_windows <= 1000:
        sys.exit(f"need 1 <= --min-windows <= --max-windows <= 1000 (got {a.min_windows}, "
                 f"{a.max_windows})")
    if not 0 < a.tol < 1:
        sys.exit(f"--tol must be a fraction in (0, 1) (got {a.tol})")
    if not 50 <= a.gc_thres <= 99:
        sys.exit(f"--gc-thres must be in 50..99 (got {a.gc_thres})")
    return a


def device(a, serial, types, op=None):
    """An FDP drive of the benchmark's geometry: 4 KiB LBAs (one LBA, one page), one
    reclaim group, handles of the given types ('ii:pi:...')."""
    return bblib.Device(serial, 4, a.size, lba_index=1, nchs=a.nchs, luns_per_ch=a.luns,
                        pgs_per_blk=a.pgs_per_blk, op_pcent=a.op if op is None else op,
                        fdp_ruh_types=types, pg_rd_lat=a.rd_lat, pg_wr_lat=a.wr_lat,
                        blk_er_lat=a.er_lat, gc_thres_pcent=a.gc_thres,
                        gc_thres_pcent_high=a.gc_thres)


def fio_base(dev_var, pli=None):
    """fio options for the char device in shell variable dev_var; with pli, every write
    carries placement identifier pli (one reclaim group: the PHNDL index)."""
    base = (f"--ioengine=io_uring_cmd --cmd_type=nvme --filename=${dev_var} "
            "--randrepeat=0 --norandommap")
    return base + ("" if pli is None else f" --fdp=1 --fdp_pli={pli}")


def flow(weight):
    """fio options that keep the jobs of one fio run at a ratio of writes (flow=: relative
    number of writes each issues, up to 1000). A job that is ahead drains its queue and
    sleeps (flow_sleep) rather than spinning, which would take the guest's CPUs from the
    jobs behind."""
    return f"--flow_id=1 --flow={max(1, min(1000, round(weight)))} --flow_sleep=100"


def scheme_cmd(path, ranges):
    """Shell that writes a fio dp_scheme file: [(first byte, end byte, PID)] (fio picks the
    entry whose range holds a write's offset)."""
    body = "".join(f"{lo},{hi},{pid}\\n" for lo, hi, pid in ranges)
    return f"printf '{body}' > {path}"


def marks(g, tag, serial):
    """[(t, stats)] of the drive at TAG-w0, TAG-w1, ... (as many as there are)."""
    out = []
    for i in range(100_000):
        m = g.marks.get(f"{tag}-w{i}")
        if m is None:
            return out
        out.append((m[0], m[1][serial]))
    return out


def handle_waf(s0, s1, h):
    """WAF of handle h's data between two statistics: its host pages and GC moves over its
    host pages (None without host writes)."""
    dh = s1[f"ruh{h}-host-pages-written"] - s0[f"ruh{h}-host-pages-written"]
    dm = s1[f"ruh{h}-gc-pages-moved"] - s0[f"ruh{h}-gc-pages-moved"]
    return (dh + dm) / dh if dh > 0 else None


def device_waf(s0, s1):
    dh = s1["host-pages-written"] - s0["host-pages-written"]
    return (s1["nand-pages-written"] - s0["nand-pages-written"]) / dh if dh > 0 else None


def windows(ms, nruh, cap_pages):
    """Per window (between consecutive marks): capacities of host writes since the first
    mark, the device's WAF and each handle's."""
    out = []
    for (t0, s0), (t1, s1) in zip(ms, ms[1:]):
        dh = s1["host-pages-written"] - s0["host-pages-written"]
        out.append(dict(
            t0=t0, t1=t1, host_pages=dh,
            caps=(s1["host-pages-written"] - ms[0][1]["host-pages-written"]) / cap_pages,
            waf=device_waf(s0, s1), mbps=dh * PAGE / 1e6 / max(t1 - t0, 1e-9),
            ruh=[handle_waf(s0, s1, h) for h in range(nruh)]))
    return out


def tail(ms, nruh, cap_pages, last_caps=None, last_windows=None):
    """The last last_caps capacities of host writes (at least the last window), or the last
    last_windows windows: the device's and each handle's WAF over them, each handle's share
    of the host writes and, averaged over those marks, the RUs it holds."""
    end = ms[-1][1]["host-pages-written"]
    if last_windows is not None:
        i = max(0, len(ms) - 1 - last_windows)
    else:
        i = len(ms) - 2
        while i > 0 and end - ms[i][1]["host-pages-written"] < last_caps * cap_pages:
            i -= 1
    s0, s1 = ms[i][1], ms[-1][1]
    dh = s1["host-pages-written"] - s0["host-pages-written"]
    span = ms[i:]

    def delta(name):
        return [s1[f"ruh{h}-{name}"] - s0[f"ruh{h}-{name}"] for h in range(nruh)]
    return dict(
        caps=dh / cap_pages, waf=device_waf(s0, s1),
        ruh=[handle_waf(s0, s1, h) for h in range(nruh)],
        host=delta("host-pages-written"), moved=delta("gc-pages-moved"),
        share=[x / max(dh, 1) for x in delta("host-pages-written")],
        rus=[sum(s[f"ruh{h}-rus-in-use"] for _, s in span) / len(span) for h in range(nruh)])


def effective_alpha(t, h, lbas, stats):
    """Handle h's physical over logical capacity: the RUs it holds (averaged over a tail())
    and its part of those nobody holds (free ones; with II handles also the shared GC RU),
    in proportion to what it holds, over the LBAs it writes."""
    scale = stats["fdp-total-rus"] / max(sum(t["rus"]), 1e-9)
    return t["rus"][h] * scale * stats["fdp-ru-pages"] / lbas


def check_counters(s, nruh):
    """What does not add up in one statistics read: the handles' host pages and moves
    against the totals, NAND pages against host + moved, the WAF figures against the
    counts. [] when all agree."""
    bad = []
    for name in ("host-pages-written", "gc-pages-moved"):
        total = sum(s[f"ruh{h}-{name}"] for h in range(nruh))
        if total != s[name]:
            bad.append(f"sum of ruhN-{name} {total} != {name} {s[name]}")
    if s["nand-pages-written"] != s["host-pages-written"] + s["gc-pages-moved"]:
        bad.append(f"nand-pages-written {s['nand-pages-written']} != host + moved "
                   f"{s['host-pages-written'] + s['gc-pages-moved']}")
    pairs = [("waf-milli", s["nand-pages-written"], s["host-pages-written"])] + [
        (f"ruh{h}-waf-milli", s[f"ruh{h}-host-pages-written"] + s[f"ruh{h}-gc-pages-moved"],
         s[f"ruh{h}-host-pages-written"]) for h in range(nruh)]
    for name, num, den in pairs:
        want = round(1000 * num / den) if den else 1000
        if abs(s[name] - want) > 1:
            bad.append(f"{name} {s[name]} != {want}")
    return bad


def drive_note(stats, cap_pages, op):
    """The drive's physical over logical capacity: op_pcent is spare beyond the RUs the
    handles and GC keep open (fdp.c), a fixed count that weighs more on a small drive."""
    rus, ru_pages = stats["fdp-total-rus"], stats["fdp-ru-pages"]
    return (f"drive: {rus} RUs of {ru_pages} pages for {cap_pages} pages of LBAs: physical / "
            f"logical {rus * ru_pages / cap_pages:.3f} (op_pcent {op} plus the RUs kept for "
            "open handles and GC)")


def print_checks(results):
    """The counters' cross-checks of each drive's last statistics, one line."""
    bad = [(r["serial"], c) for r in results for c in r["checks"]]
    if not bad:
        print("checks: the counters add up on every drive (per-handle host pages and moves "
              "sum to the totals, NAND = host + moved, the WAF figures match)")
    for serial, c in bad:
        print(f"check FAILED on {serial}: {c}")


def group_waf(t, hs):
    """WAF of several handles' data together, over a tail()."""
    host = sum(t["host"][h] for h in hs)
    return (host + sum(t["moved"][h] for h in hs)) / host if hs and host else None


def steady_note(g, tag):
    return "" if any(line.strip() == f"{tag} steady" for _, line in g.lines) else "!"


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def plot(panels, title, name):
    """One panel per case: each handle's WAF per window (and the device's, dashed) against
    capacities written; panels = [(label, windows, {handle: name}, {name: model WAF})].
    Saved as bench/results/NAME-STAMP.png; returns the path or None."""
    plt = bblib.pyplot()
    if not plt:
        return None
    n = len(panels)
    cols = 3 if n % 3 == 0 or n > 4 else 2 if n > 1 else 1
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, (label, wins, names, models) in zip(axes.flat, panels):
        x = [w["caps"] for w in wins]
        ax.plot(x, [w["waf"] for w in wins], "k--", lw=1, label="device")
        for h, hname in names.items():
            line, = ax.plot(x, [w["ruh"][h] for w in wins], "o-", ms=3, label=hname)
            if hname in models:
                ax.axhline(models[hname], color=line.get_color(), ls=":", lw=1)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("capacities written (after the fill)", fontsize=8)
        ax.set_ylabel("WAF per window", fontsize=8)
        ax.set_ylim(bottom=0.9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    return bblib.save_plot(fig, name)
