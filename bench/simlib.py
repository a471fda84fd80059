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
    return stats.get("nand_reads", 0) + stats.get("nand_programs", 0) + \
        stats.get("nand_erases", 0)


def job(result, name, index=0):
    """The JSON of job `name` (clone index)."""
    for j in result["jobs"]:
        if j["jobname"] == name and j["job_index"] == index:
            return j
    raise KeyError(name)
