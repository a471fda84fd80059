"""The published ordering of GC policies under skewed writes, in femu-sim: with host and GC
writes in one open line, every policy pays for the cold data mixed into each line; apart
(streams=host-gc), GC gathers the cold data and cost-benefit (Kawaguchi et al., 1995),
which waits for old lines, beats greedy; host writes apart by how soon their page comes
back (streams=hot-cold) lower both again.

The drive and the phases are tests/unit/test_gc_policy_waf.py's (512 MiB, 15 % OP, lines
of 128 pages, gc_pacing=proportional; fill, 3 capacities, 2 measured), the writes Zipf
distributed (fio's random_distribution=zipf:THETA). Every run names its streams: the
comparison is of placements, whatever the default.

The margins are about half of the differences measured (docs/ftl-policies.md has the
table): a placement that stopped separating pages or a policy that stopped looking at
age fails them."""

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FEMU_BUILD") or ROOT / "build").resolve()
FEMU_SIM = BUILD / "femu-sim"
SIZE_MB = 512
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
"""
RUNS = [("greedy", "shared"), ("cost-benefit", "shared"), ("greedy", "host-gc"),
        ("cost-benefit", "host-gc"), ("greedy", "hot-cold"), ("cost-benefit", "hot-cold")]


def steady_waf(dist, policy, streams):
    if not FEMU_SIM.exists():
        pytest.fail("%s is missing: make sim" % FEMU_SIM)
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "skew.fio"
        job.write_text(JOBS % {"dist": dist, "warm": 3 * SIZE_MB, "steady": 2 * SIZE_MB})
        r = subprocess.run([str(FEMU_SIM), "--dev", "%s,gc_policy=%s,streams=%s" % (
                            DEV, policy, streams), "--output-format=json", str(job)],
                           capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    jobs = {j["jobname"]: j for j in json.loads(r.stdout)["jobs"]}
    s0, s1 = jobs["warm"]["stats"], jobs["steady"]["stats"]
    return ((s1["nand_pages_written"] - s0["nand_pages_written"]) /
            (s1["host_pages_written"] - s0["host_pages_written"]))


@pytest.mark.parametrize("theta", ["0.9", "1.2"])
def test_skew_ordering(theta):
    waf = {run: steady_waf("zipf:" + theta, *run) for run in RUNS}
    for (policy, streams), w in waf.items():
        print("zipf:%s %s streams=%s: steady WAF %.3f" % (theta, policy, streams, w))
    greedy_shared = waf["greedy", "shared"]
    # one open line: age does not help, cold pages sit in every line
    assert abs(waf["cost-benefit", "shared"] / greedy_shared - 1) < 0.03, waf
    # GC's moves apart: lower for both, and cost-benefit below greedy
    assert waf["greedy", "host-gc"] < 0.9 * greedy_shared, waf
    assert waf["cost-benefit", "host-gc"] < 0.9 * waf["greedy", "host-gc"], waf
    # host writes apart by rewrite: lower again
    assert waf["greedy", "hot-cold"] < 0.99 * waf["greedy", "host-gc"], waf
    assert waf["cost-benefit", "hot-cold"] < 0.97 * waf["cost-benefit", "host-gc"], waf
    assert waf["cost-benefit", "hot-cold"] < 0.7 * greedy_shared, waf
