"""The femu-sim drive and phases the GC policy tests share (test_gc_policy_waf.py,
test_gc_policy_skew.py): 512 MiB exposed, 15 % over-provisioning, lines of 128 pages
(2 channels x 2 chips x 32 pages), paced GC; a sequential fill, 3 capacities of 4 KiB
random overwrites to reach steady state, then 2 measured."""

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FEMU_BUILD") or ROOT / "build").resolve()
FEMU_SIM = BUILD / "femu-sim"
SIZE_MB, PAGES, LINE_PAGES = 512, 512 * 256, 128
DEV = ("femu_mode=1,devsz_mb=%d,nchs=2,luns_per_ch=2,pls_per_lun=1,pgs_per_blk=32,"
       "op_pcent=15,flash_type=1,gc_thres_pcent=98,gc_thres_pcent_high=99,"
       "gc_pacing=proportional" % SIZE_MB)
JOBS = """[global]
bs=4k
iodepth=8
norandommap
[fill]
rw=write
bs=128k
size=100%%
[warm]
stonewall
rw=randwrite
random_distribution=%(dist)s
size=100%%
io_size=%(warm)dm
[steady]
stonewall
rw=randwrite
random_distribution=%(dist)s
size=100%%
io_size=%(steady)dm
log_avg_msec=100
"""


def run(props, dist="random", series=None):
    """The drive with props added, written with dist: femu-sim's JSON, jobs by name."""
    if not FEMU_SIM.exists():
        pytest.fail("%s is missing: make sim" % FEMU_SIM)
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "steady.fio"
        job.write_text(JOBS % {"dist": dist, "warm": 3 * SIZE_MB, "steady": 2 * SIZE_MB})
        cmd = [str(FEMU_SIM), "--dev", DEV + "," + props, "--output-format=json", str(job)]
        if series:
            cmd.insert(-2, "--series-stats=" + series)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return {j["jobname"]: j for j in json.loads(r.stdout)["jobs"]}


def steady_waf(jobs):
    """NAND pages over host pages written in the measured phase."""
    s0, s1 = jobs["warm"]["stats"], jobs["steady"]["stats"]
    return ((s1["nand_pages_written"] - s0["nand_pages_written"]) /
            (s1["host_pages_written"] - s0["host_pages_written"]))
