#!/usr/bin/env python3
"""Sweeps of drives x workloads in femu-sim: a grid in one TOML file, each point one
femu-sim run, on local cores or on a Dask cluster; one table (printed and CSV) and plots.

The grid (bench/grids/*.toml; docs/benchmarks-sim.md has the format): [drive] holds the
base properties (femu-sim's --dev), [axes] the properties to vary (each a list; the
points are their product), [workloads.NAME] the random-write job of each workload (fio
options), [fill] an optional sequential fill before it, [fio] options of every job, and
[measure] the drive capacities written to reach steady state (warm) and then measured
(caps, in `windows` jobs measure0, measure1, ...). Per point: the steady WAF from the
statistics' differences over the measured jobs, IOPS, write latency percentiles, and for
uniform random overwrites of the whole drive the analytic WAF of bench/waf_models.py for
the policies that have one (greedy, fifo, random, d-choices), at the over-provisioning the
data can use (the lines free on average during the measured jobs counted out).

Resumable: each point's femu-sim JSON is kept in the results directory
(bench/results/sweep-NAME-TIME/, one file per point named by its coordinates) and a rerun
runs only the points without one. Without --out the newest directory of the same grid
(same file contents) is resumed; --fresh starts a new one.

Where the points run: --jobs N femu-sim processes at once on this machine (default: the
CPU count; --jobs 1 is serial), --local-cluster N a Dask LocalCluster of N worker
processes, --scheduler tcp://HOST:PORT an existing Dask cluster (dask.distributed), whose
workers run femu-sim at the path given by --femu-sim (default: this tree's build).

Usage: bench/sweep.py GRID [--jobs N | --local-cluster N | --scheduler ADDR]
                       [--out DIR | --fresh] [--femu-sim PATH] [--list] [--no-plot]
"""

import argparse
import contextlib
import csv
import hashlib
import itertools
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bblib  # noqa: E402
import simlib  # noqa: E402
import waf_models  # noqa: E402

SECTIONS = {
    "name": "the results directory's name (default: the file's stem)",
    "description": "free text",
    "drive": "base properties of every drive (femu-sim --dev)",
    "axes": "properties to vary: NAME = [values]; the points are their product",
    "fio": "fio options of every job ([global])",
    "fill": "fio options of a sequential fill job run first (omit: no fill)",
    "workloads": "[workloads.NAME]: fio options of the random-write job per workload",
    "measure": "warm, caps (drive capacities) and windows",
    "figures": "the figures in the table and CSV (default: all)",
}
MEASURE = {"warm": 2.0, "caps": 2.0, "windows": 1}
# set by the sweep, per point: a workload may not set them
OWN_JOB_KEYS = ("name", "stonewall", "wait_for_previous", "io_size", "io_limit")
SERIES = "free_lines,host_pages_written,nand_pages_written"
# what varies between two runs of the same point: the host's, not femu-sim's (two runs of
# femu-sim on the same inputs print the same bytes)
HOST_FIELDS = ("wall_s", "host")
PCTS = {"p50_us": "50.000000", "p99_us": "99.000000", "p999_us": "99.900000",
        "p9999_us": "99.990000"}
# name: (column, format, meaning)
FIGURES = {
    "waf": ("WAF", "%.3f", "NAND pages / host pages written over the measured jobs"),
    "model_waf": ("model", "%.3f", "the policy's analytic WAF (waf_models.py) at model_op"),
    "model_op": ("OP %", "%.1f", "over-provisioning the data can use (free, open lines out)"),
    "kiops": ("kIOPS", "%.1f", "I/Os per second of the measured jobs, thousands"),
    "p50_us": ("p50 us", "%.0f", "latency median, the worst job clone's and window's"),
    "p99_us": ("p99 us", "%.0f", "latency 99th percentile"),
    "p999_us": ("p99.9 us", "%.0f", "latency 99.9th percentile"),
    "p9999_us": ("p99.99", "%.0f", "latency 99.99th percentile"),
    "free_lines": ("free", "%.1f", "lines free, mean over the measured jobs"),
    "nand_mops": ("M ops", "%.1f", "NAND operations of the whole run, millions"),
}
# victim policies with a model under uniform random overwrites: (op, b, params) -> WAF
MODELS = {
    "greedy": lambda op, b, p: waf_models.waf_greedy_meanfield(op, b),
    "fifo": lambda op, b, p: waf_models.waf_fifo(op, b),
    "random": lambda op, b, p: waf_models.waf_random(op, b),
    # femu's d-choices draws 10 units unless told (hw/femu/ftl/victim-d-choices.c)
    "d-choices": lambda op, b, p: waf_models.waf_d_choices(op, int(p.get("d", 10)), b),
}


def refuse(where, msg):
    sys.exit("sweep: %s: %s" % (where, msg))


def scalar(v):
    return isinstance(v, (str, int, float, bool))


def check_table(where, t, what):
    if not isinstance(t, dict):
        refuse(where, "%s must be a table" % what)
    for k, v in t.items():
        if not scalar(v):
            refuse(where, "%s.%s: a string, number or boolean, not %r" % (what, k, v))
    return t


def fio_opts(opts):
    """TOML fio options -> simlib.jobfile's: true is a flag, false leaves it out."""
    return {k: None if v is True else v for k, v in opts.items() if v is not False}


def load_grid(path):
    """The grid file, checked: every key known, every axis a non-empty list."""
    where = str(path)
    try:
        text = Path(path).read_text()
        g = tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as e:
        refuse(where, str(e))
    for k in g:
        if k not in SECTIONS:
            refuse(where, "unknown key '%s': allowed %s" % (k, ", ".join(SECTIONS)))
    drive = check_table(where, g.get("drive", {}), "drive")
    axes = g.get("axes", {})
    if not isinstance(axes, dict):
        refuse(where, "axes must be a table")
    for k, vals in axes.items():
        if not isinstance(vals, list) or not vals:
            refuse(where, "axis '%s' is empty: give it a list of one value or more" % k)
        if not all(scalar(v) for v in vals):
            refuse(where, "axis '%s': values must be strings, numbers or booleans" % k)
        if len(set(map(str, vals))) < len(vals):
            refuse(where, "axis '%s' repeats a value" % k)
        if k in drive:
            refuse(where, "'%s' is both in [drive] and in [axes]" % k)
        if k == "workload":
            refuse(where, "axis 'workload' is reserved: workloads go in [workloads.NAME]")
    if "devsz_mb" not in drive and "devsz_mb" not in axes:
        refuse(where, "devsz_mb missing: warm and caps count capacities of the drive")
    workloads = g.get("workloads")
    if not isinstance(workloads, dict) or not workloads:
        refuse(where, "no workload: add a [workloads.NAME] table of fio options")
    for name, opts in workloads.items():
        check_table(where, opts, "workloads.%s" % name)
        for k in OWN_JOB_KEYS:
            if k in opts:
                refuse(where, "workloads.%s: '%s' is set by the sweep ([measure] gives the "
                       "amounts)" % (name, k))
    measure = dict(MEASURE)
    for k, v in check_table(where, g.get("measure", {}), "measure").items():
        if k not in MEASURE:
            refuse(where, "unknown key 'measure.%s': allowed %s" % (k, ", ".join(MEASURE)))
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or \
                (k != "warm" and v <= 0) or (k == "windows" and v != int(v)):
            refuse(where, "measure.%s = %r: a number > 0 (warm >= 0; windows a whole "
                   "number)" % (k, v))
        measure[k] = v
    figures = g.get("figures", list(FIGURES))
    if not isinstance(figures, list) or not figures:
        refuse(where, "figures must be a non-empty list")
    for f in figures:
        if f not in FIGURES:
            refuse(where, "unknown figure '%s': allowed %s" % (f, ", ".join(FIGURES)))
    return dict(name=g.get("name", Path(path).stem), text=text, drive=drive, axes=axes,
                fio=check_table(where, g.get("fio", {}), "fio"),
                fill=check_table(where, g.get("fill", {}), "fill"),
                workloads=workloads, figures=figures, **measure)


def point_name(coords):
    """File-name form of a point: k=v joined by commas, other characters as '_'."""
    return ",".join("%s=%s" % (k, re.sub(r"[^A-Za-z0-9._+=-]", "_", str(v)))
                    for k, v in coords.items())


def jobs_of(g, dev, wl):
    """simlib.jobfile's jobs for one point: fill, warm, measure0..N-1."""
    mb = float(dev["devsz_mb"])
    clones = int(wl.get("numjobs", g["fio"].get("numjobs", 1)))
    rand = dict(stonewall=None, **fio_opts(wl))

    def per_clone(caps):
        return "%dk" % max(4, int(caps * mb * 1024 / clones) // 4 * 4)
    jobs = [("fill", fio_opts(g["fill"]))] if g["fill"] else []
    if g["warm"]:
        jobs.append(("warm", dict(rand, io_size=per_clone(g["warm"]))))
    n = int(g["windows"])
    jobs += [("measure%d" % k, dict(rand, io_size=per_clone(g["caps"] / n))) for k in range(n)]
    return jobs


def points(g, femu_sim):
    """Every point of the grid: the axes' product (in file order), the workload last."""
    out, seen = [], {}
    for combo in itertools.product(*g["axes"].values()):
        varied = dict(zip(g["axes"], combo))
        for wl, opts in g["workloads"].items():
            coords = dict(varied, workload=wl)
            dev = dict(g["drive"], **varied)
            jobs = jobs_of(g, dev, opts)
            p = dict(coords=coords, name=point_name(coords), dev=dev,
                     inputs=dict(dev=simlib.props(dev), series_stats=SERIES,
                                 jobfile=simlib.jobfile(jobs, fio_opts(g["fio"]) or None)),
                     uniform=uniform_overwrites(dict(g["fio"], **opts)))
            p["argv"] = [os.path.abspath(femu_sim), "--dev", p["inputs"]["dev"],
                         "--series-stats=" + SERIES, "--output-format=json"]
            if p["name"] in seen:
                sys.exit("sweep: points %s and %s have the same file name %s" % (
                    seen[p["name"]], coords, p["name"]))
            seen[p["name"]] = coords
            out.append(p)
    return out


def uniform_overwrites(opts):
    """Whether the measured job is what the models assume: uniform random 4 KiB writes
    over the whole drive."""
    return (opts.get("rw", opts.get("readwrite")) == "randwrite" and
            opts.get("random_distribution", "random") == "random" and
            str(opts.get("size", "100%")) == "100%" and
            str(opts.get("bs", opts.get("blocksize", "4k"))).lower() in ("4k", "4096"))


def run_femu_sim(argv, jobfile):
    """femu-sim on one point, wherever it runs (a Dask worker too: standard library only):
    argv with the job file's text in a temporary file; the exit code, output, wall time,
    host and the binary's sha256."""
    with open(argv[0], "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "point.fio"), "w") as f:
            f.write(jobfile)
        t0 = time.monotonic()
        # relative, so that femu-sim's messages name point.fio, not a temporary path
        r = subprocess.run(argv + ["point.fio"], capture_output=True, text=True, cwd=tmp)
        wall = time.monotonic() - t0
    return dict(rc=r.returncode, out=r.stdout, err=r.stderr.strip(), wall_s=wall,
                host=socket.gethostname(), sha256=sha)


def check_inputs(pts, jobs):
    """femu-sim's own refusal of any drive or job option, before anything runs: every
    distinct drive, and every workload's job file, each cut to a few I/Os per job."""
    def short(p):
        # a later io_size wins: every job does ~1 MiB
        return p["inputs"]["jobfile"].replace("\n[", "\nio_size=1m\n[") + "io_size=1m\n"
    drives, workloads = {}, {}
    for p in pts:
        drives.setdefault(p["inputs"]["dev"], p)
        workloads.setdefault(p["coords"]["workload"], p)
    todo = list(drives.values()) + [p for p in workloads.values() if p not in drives.values()]
    with ThreadPoolExecutor(jobs) as ex:
        for p, r in zip(todo, ex.map(lambda p: run_femu_sim(p["argv"], short(p)), todo)):
            if r["rc"]:
                refuse(p["name"], r["err"])


def results_dir(a, g):
    """The directory to use: --out, or the newest of the same grid, or a new one."""
    if a.out:
        return Path(a.out)
    if not a.fresh:
        pat = re.compile(re.escape("sweep-%s-" % g["name"]) + r"\d{8}-\d{6}$")
        for d in sorted((x for x in bblib.RESULTS.glob("sweep-*") if pat.match(x.name)),
                        reverse=True):
            if (d / "grid.toml").exists() and (d / "grid.toml").read_text() == g["text"]:
                return d
    return bblib.RESULTS / ("sweep-%s-%s" % (g["name"], bblib.stamp()))


def load_point(path, p):
    """The kept JSON of a point, or None; refused if it was run with other inputs."""
    if not path.exists():
        return None
    res = json.loads(path.read_text())
    old = res.get("sweep", {}).get("inputs")
    if old != p["inputs"]:
        diff = [k for k in p["inputs"] if (old or {}).get(k) != p["inputs"][k]]
        sys.exit("sweep: %s was run with another %s: use --fresh or another --out" % (
            path, " and ".join(diff) or "format"))
    return res


def execute(todo, a):
    """(point, run_femu_sim's result) as the points finish, where --jobs, --local-cluster
    or --scheduler say."""
    def outcome(f):
        try:
            return f.result()
        except Exception as e:      # a worker lost, femu-sim missing there: this point fails
            return dict(rc=-1, out="", err="%s: %s" % (type(e).__name__, e), wall_s=0.0,
                        host="?", sha256=None)
    if a.scheduler or a.local_cluster:
        try:
            from dask.distributed import Client, LocalCluster, as_completed as dask_done
        except ImportError:
            sys.exit("sweep: dask.distributed is missing: run with build/venv/bin/python3 "
                     "(qemu/setup-venv.sh installs it)")
        # one point at a time per worker process: femu-sim is single-threaded
        with (LocalCluster(n_workers=a.local_cluster, threads_per_worker=1, processes=True,
                           dashboard_address=None)
              if a.local_cluster else contextlib.nullcontext(a.scheduler)) as where, \
                Client(where) as client:
            futs = {client.submit(run_femu_sim, p["argv"], p["inputs"]["jobfile"]): p
                    for p in todo}
            for f in dask_done(futs):
                yield futs[f], outcome(f)
        return
    with ThreadPoolExecutor(a.jobs) as ex:
        futs = {ex.submit(run_femu_sim, p["argv"], p["inputs"]["jobfile"]): p for p in todo}
        for f in as_completed(futs):
            yield futs[f], outcome(f)


def policy(spec):
    """'d-choices:d=2' -> ('d-choices', {'d': '2'}); unset is femu's greedy."""
    name, *params = (spec or "greedy").split(":")
    return name, dict(x.partition("=")[::2] for x in params)


def figures(res, p):
    """The figures of one point's femu-sim JSON (FIGURES)."""
    wins = simlib.windows(res, "measure")
    before = [j for j in res["jobs"] if not j["jobname"].startswith("measure")]
    s0 = max(before, key=lambda j: j["job_start_ns"] + j["elapsed_ns"])["stats"] \
        if before else {}
    s1 = wins[-1]["stats"]
    ios = sum(w["iops"] * (w["t1_ns"] - w["t0_ns"]) / 1e9 for w in wins)
    r = dict(waf=simlib.waf_between(s0, s1),
             kiops=ios / max(wins[-1]["t1_ns"] - wins[0]["t0_ns"], 1) * 1e6,
             nand_mops=simlib.nand_ops(res["stats"]) / 1e6)
    for k, pct in PCTS.items():
        r[k] = max(w["lat_pct"].get(pct, 0) for w in wins) / 1e3
    free = [x for k in range(len(wins))
            for x in simlib.job(res, "measure%d" % k)["series"].get("free_lines", [])]
    r["free_lines"] = sum(free) / len(free) if free else None
    r["model_op"], r["model_waf"] = model(res, p, r["free_lines"])
    return r


def model(res, p, free):
    """(op %, analytic WAF) for uniform overwrites of a blackbox drive whose policy has a
    model, as tests/unit/test_gc_policy_waf.py counts it; (None, None) otherwise."""
    d = res["device"]
    name, params = policy(d.get("gc_policy"))
    if not p["uniform"] or d["femu_mode"] != "1" or name not in MODELS or free is None:
        return None, None
    b = 1
    for k in ("nchs", "luns_per_ch", "pls_per_lun", "pgs_per_blk"):
        b *= int(d[k])
    page = int(d["secs_per_pg"]) * int(d["secsz"])
    # the lines that hold data: all but the free ones and one open line per stream
    # (unset: host-gc, the blackbox default)
    streams = (d.get("streams") or "host-gc").split(":")[0]
    held = (res["stats"]["total_lines"] - free -
            {"shared": 1, "host-gc": 2, "hot-cold": 3}[streams])
    op = held * b * page / (float(d["devsz_mb"]) * 2**20) - 1
    if op <= 0:
        return op * 100, None
    return op * 100, MODELS[name](op, b, params)


def show(v, fmt):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt % v


def table(g, pts, rows, outdir):
    """Prints one row per point and writes table.csv (with each failed point's error);
    the CSV's path."""
    cols = [(c, c, "%s") for c in list(g["axes"]) + ["workload"]] + \
        [(f, FIGURES[f][0], FIGURES[f][1]) for f in g["figures"]] + \
        [("femu_s", "femu s", "%.1f")]
    cells = []
    for p in pts:
        r = dict(p["coords"], **rows[p["name"]])
        cells.append([show(r.get(k), fmt) if "error" not in r or k in p["coords"]
                      else "failed" for k, _, fmt in cols])
    width = [max([len(h)] + [len(c[i]) for c in cells]) for i, (_, h, _) in enumerate(cols)]
    print("  ".join(h.rjust(w) for (_, h, _), w in zip(cols, width)))
    for c in cells:
        print("  ".join(x.rjust(w) for x, w in zip(c, width)))
    path = outdir / "table.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([k for k, _, _ in cols] + ["error"])
        for p in pts:
            r = dict(p["coords"], **rows[p["name"]])
            w.writerow(["" if r.get(k) is None else r[k] for k, _, _ in cols] +
                       [r.get("error", "")])
    return path


def plot(g, pts, rows, outdir):
    """WAF and p99.9 against the first numeric axis, one line per value of the other
    coordinates, a column per workload; the models dashed."""
    num = [k for k, vs in g["axes"].items()
           if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vs)]
    if not num:
        print("(no numeric axis: no plot)")
        return None
    plt = bblib.pyplot()
    if not plt:
        return None
    x, wls = num[0], list(g["workloads"])
    fig, axs = plt.subplots(2, len(wls), figsize=(5 * len(wls), 8), squeeze=False,
                            sharex=True)
    for col, wl in enumerate(wls):
        lines = {}
        for p in pts:
            if p["coords"]["workload"] == wl and "waf" in rows.get(p["name"], {}):
                other = ",".join("%s=%s" % (k, v) for k, v in p["coords"].items()
                                 if k not in (x, "workload"))
                lines.setdefault(other, []).append((p["coords"][x], rows[p["name"]]))
        for i, (label, pl) in enumerate(lines.items()):
            pl.sort(key=lambda t: t[0])
            xs = [t[0] for t in pl]
            color = "C%d" % (i % 10)
            axs[0][col].plot(xs, [r["waf"] for _, r in pl], "o-", color=color,
                             label=label or wl)
            m = [(xv, r["model_waf"]) for xv, r in pl if r.get("model_waf")]
            if m:
                axs[0][col].plot(*zip(*m), "--", color=color)
            axs[1][col].plot(xs, [r["p999_us"] for _, r in pl], "o-", color=color)
        axs[0][col].set_title("%s: WAF (dashed: model)" % wl)
        axs[1][col].set_title("%s: write p99.9" % wl)
        axs[0][col].set_yscale("log")
        axs[1][col].set_yscale("log")
        axs[0][col].set_ylabel("WAF")
        axs[1][col].set_ylabel("us")
        axs[1][col].set_xlabel(x)
        axs[0][col].legend(fontsize=7)
    # save_plot names the file under bench/results; an absolute name puts it in outdir
    return bblib.save_plot(fig, str(outdir.resolve() / "plot"))


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Resumable: each point's femu-sim JSON is kept in the results directory, one\n"
        "file per point named by its coordinates, and a rerun of the grid runs only the\n"
        "points without one (a point kept from other inputs is refused, never mixed in).\n\n"
        "The grid file's keys (docs/benchmarks-sim.md):\n" +
        "".join("  %-12s %s\n" % kv for kv in SECTIONS.items()) +
        "figures:\n" + "".join("  %-12s %s\n" % (k, v[2]) for k, v in FIGURES.items()))
    ap.add_argument("grid", help="the grid file (TOML)")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=int, default=os.cpu_count(), metavar="N",
                       help="femu-sim runs at once on this machine (default: CPUs; 1: serial)")
    where.add_argument("--local-cluster", type=int, metavar="N",
                       help="run the points on a Dask LocalCluster of N worker processes")
    where.add_argument("--scheduler", metavar="ADDR",
                       help="run the points on the Dask cluster at ADDR (tcp://host:port)")
    ap.add_argument("--out", metavar="DIR", help="results directory (default: the newest "
                    "of this grid, resumed, else bench/results/sweep-NAME-TIME)")
    ap.add_argument("--fresh", action="store_true", help="a new results directory")
    ap.add_argument("--femu-sim", default=str(simlib.FEMU_SIM),
                    metavar="PATH",
                    help="femu-sim's path, here and on the workers (default: %(default)s)")
    ap.add_argument("--list", action="store_true", help="list the points and which are "
                    "done; run nothing")
    ap.add_argument("--no-plot", action="store_true", help="no plot (table and CSV only)")
    a = ap.parse_args()
    if a.jobs < 1 or (a.local_cluster is not None and a.local_cluster < 1):
        sys.exit("sweep: --jobs and --local-cluster need 1 or more")
    if a.out and a.fresh:
        sys.exit("sweep: --out and --fresh: one or the other")
    if not os.access(a.femu_sim, os.X_OK):
        sys.exit("sweep: %s not found: build it with `make sim`" % a.femu_sim)
    g = load_grid(a.grid)
    pts = points(g, a.femu_sim)
    outdir = results_dir(a, g)
    done = {p["name"]: r for p in pts if (r := load_point(outdir / (p["name"] + ".json"), p))}
    todo = [p for p in pts if p["name"] not in done]
    print("%s: %d points (%s x %d workloads), %d done in %s, %d to run" % (
        g["name"], len(pts), " x ".join("%d %s" % (len(v), k) for k, v in g["axes"].items())
        or "1 drive", len(g["workloads"]), len(done), outdir, len(todo)))
    if a.list:
        for p in pts:
            print("%s %s" % ("done" if p["name"] in done else "todo", p["name"]))
        return
    if todo:
        check_inputs(pts, a.jobs)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "grid.toml").write_text(g["text"])
    failed, t0 = {}, time.monotonic()
    for n, (p, r) in enumerate(execute(todo, a), 1):
        msg = "[%d/%d] %s: %.1f s on %s" % (n, len(todo), p["name"], r["wall_s"], r["host"])
        if r["rc"]:
            failed[p["name"]] = r["err"]
            print(msg + ": femu-sim failed (%d): %s" % (r["rc"], r["err"]), file=sys.stderr)
            continue
        res = json.loads(r["out"])
        res["sweep"] = dict(point=p["coords"], inputs=p["inputs"], femu_sim=p["argv"][0],
                            femu_sim_sha256=r["sha256"], wall_s=r["wall_s"], host=r["host"])
        # whole or not at all: a run killed here leaves no half file to be skipped later
        tmp = outdir / (p["name"] + ".json.tmp")
        tmp.write_text(json.dumps(res, indent=1))
        tmp.replace(outdir / (p["name"] + ".json"))
        done[p["name"]] = res
        print(msg, file=sys.stderr, flush=True)
    rows = {}
    for p in pts:
        if p["name"] in done:
            rows[p["name"]] = dict(figures(done[p["name"]], p),
                                   femu_s=done[p["name"]]["sweep"]["wall_s"])
        else:
            rows[p["name"]] = dict(error=failed.get(p["name"], "not run"))
    print()
    print("table:", table(g, pts, rows, outdir))
    shas = {r["sweep"]["femu_sim_sha256"] for r in done.values()}
    if len(shas) > 1:
        print("note: the points come from %d different femu-sim binaries" % len(shas))
    femu_s = sum(r["sweep"]["wall_s"] for r in done.values())
    print("femu-sim: %.0f s over %d points (%.1f s each), this run %.0f s wall" % (
        femu_s, len(done), femu_s / max(len(done), 1), time.monotonic() - t0))
    if not a.no_plot and done:
        plot(g, pts, rows, outdir)
    if failed:
        sys.exit("sweep: %d points failed (rerun to retry them): %s" % (
            len(failed), "; ".join("%s: %s" % kv for kv in failed.items())))


if __name__ == "__main__":
    main()
