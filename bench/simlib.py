"""Shared by the femu-sim benchmarks (bench/sim-*.py): run femu-sim on a drive description
and fio job files, and read its JSON (fio's per-job figures, the time series, and the
model's statistics under the names of the emulator's stats property).

femu-sim runs the emulator's own model code in virtual time, so these benchmarks run at
the papers' scale (hundreds of GiB, unscaled latencies) in minutes; its figures agree with
the emulator's device-side figures (tests/qtest/test_sim_crosscheck*.py)."""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("FEMU_BUILD", REPO / "build"))
FEMU_SIM = Path(os.environ.get("FEMU_SIM", BUILD / "femu-sim"))


# femu-sim's NAND ops per second on dc-tlc's full geometry (16 ch x 8 chips, 256 GiB,
# blackbox GC), measured by sim-gc-collapse.py's full form (3.41 M/s); the short forms'
# 8 chips run at 1.5-3.3 M/s, a rate of their own that would not say what a full run takes
FULL_OPS_PER_S = 3.4e6


def props(d):
    """{'k': v} or "k=v,..." -> "k=v,..." (booleans as on/off)."""
    if isinstance(d, str):
        return d
    return ",".join("%s=%s" % (k, ("on" if v else "off") if isinstance(v, bool) else v)
                    for k, v in d.items())


def jobfile(jobs, glob=None):
    """fio job-file text: jobs is [(name, {option: value or None for a flag})]."""
    out = []
    for name, opts in ([("global", glob)] if glob else []) + list(jobs):
        out.append("[%s]" % name)
        out += [k if v is None else "%s=%s" % (k, v) for k, v in opts.items()]
    return "\n".join(out) + "\n"


def run(dev, jobs, glob=None, series_stats=None, extra_files=(), timeout=None):
    """femu-sim's JSON for the drive `dev` and the jobs; (result, wall seconds)."""
    if not os.access(FEMU_SIM, os.X_OK):
        sys.exit("%s not found: build it with `make sim`" % FEMU_SIM)
    with tempfile.TemporaryDirectory() as tmp:
        jf = Path(tmp) / "bench.fio"
        jf.write_text(jobfile(jobs, glob))
        cmd = [str(FEMU_SIM), "--dev", props(dev), "--output-format=json", str(jf)]
        if series_stats:
            cmd.insert(-1, "--series-stats=" + ",".join(series_stats))
        t0 = time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        wall = time.monotonic() - t0
    if out.returncode:
        sys.exit("femu-sim failed (%d): %s" % (out.returncode, out.stderr.strip()))
    return json.loads(out.stdout), wall


def nand_ops(stats):
    """NAND page operations the model booked (reads, programs, erases)."""
    if "nand_programs" in stats:
        return stats.get("nand_reads", 0) + stats["nand_programs"] + \
            stats.get("nand_erases", 0)
    # zns names them otherwise
    return stats.get("pages_read", 0) + stats.get("pages_programmed", 0) + \
        stats.get("blocks_erased", 0)


def job(result, name, index=0):
    """The JSON of job `name` (clone index)."""
    for j in result["jobs"]:
        if j["jobname"] == name and j["job_index"] == index:
            return j
    raise KeyError(name)


def windows(result, prefix):
    """Jobs named PREFIX<k> (k = 0, 1, ...; numjobs clones summed) as windows, in order:
    [{k, t0_ns, t1_ns, bytes, mbps, iops, stats (at the window's end), lat (clone 0's
    write lat_ns, or the worst clone's percentiles)}]."""
    groups = {}
    for j in result["jobs"]:
        name = j["jobname"]
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            groups.setdefault(int(name[len(prefix):]), []).append(j)
    out = []
    for k in sorted(groups):
        js = groups[k]
        t0 = min(j["job_start_ns"] for j in js)
        last = max(js, key=lambda j: j["job_start_ns"] + j["elapsed_ns"])
        t1 = last["job_start_ns"] + last["elapsed_ns"]
        nbytes = sum(j["write"]["io_bytes"] + j["read"]["io_bytes"] for j in js)
        ios = sum(j["write"]["total_ios"] + j["read"]["total_ios"] for j in js)
        pct = {}
        for j in js:
            for d in ("write", "read"):
                for p, v in j[d]["lat_ns"].get("percentile", {}).items():
                    if j[d]["total_ios"]:
                        pct[p] = max(pct.get(p, 0), v)
        dt = max(t1 - t0, 1)
        out.append(dict(k=k, t0_ns=t0, t1_ns=t1, bytes=nbytes, mbps=nbytes / dt * 1e3,
                        iops=ios / dt * 1e9, stats=last["stats"], lat_pct=pct))
    return out


def host_pages(s):
    return s.get("host_pages_written", s.get("host_bytes_written", 0) // 4096)


def nand_pages(s):
    """Pages programmed (zns: with its padding)."""
    return s.get("nand_pages_written", s.get("pages_programmed", 0))


def waf(s):
    return nand_pages(s) / host_pages(s) if host_pages(s) else float("nan")


def waf_between(s0, s1):
    """NAND pages written per host page written between two statistics snapshots."""
    h = host_pages(s1) - host_pages(s0)
    n = nand_pages(s1) - nand_pages(s0)
    return n / h if h else float("nan")
