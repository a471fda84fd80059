"""Each victim policy with a published model of its write amplification, run in femu-sim
under uniform random 4 KiB overwrites of a full drive: its steady-state WAF within 5 % of
the model (bench/waf_models.py) at the flash the drive's data can use.

The drive: 512 MiB exposed, 15 % over-provisioning, lines of 128 pages (2 channels x 2
chips x 32 pages: the models' b), paced GC (gc_pacing=proportional, so GC keeps only a
line or two free, whose room the models do not give data: counted out from the time
series of free_lines). Fill, 3 capacities to reach steady state, 2 measured."""

import importlib.util
import os
import subprocess
import tempfile
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FEMU_BUILD") or ROOT / "build").resolve()
FEMU_SIM = BUILD / "femu-sim"
SIZE_MB, PAGES, LINE_PAGES = 512, 512 * 256, 128
# one open line (streams=shared), as the models have one place new and moved pages go to
DEV = ("femu_mode=1,devsz_mb=%d,nchs=2,luns_per_ch=2,pls_per_lun=1,pgs_per_blk=32,"
       "op_pcent=15,flash_type=1,gc_thres_pcent=98,gc_thres_pcent_high=99,"
       "gc_pacing=proportional,streams=shared" % SIZE_MB)
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
size=100%%
io_size=%dm
[steady]
stonewall
rw=randwrite
size=100%%
io_size=%dm
log_avg_msec=100
""" % (3 * SIZE_MB, 2 * SIZE_MB)


def load_models():
    spec = importlib.util.spec_from_file_location("waf_models", ROOT / "bench" / "waf_models.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


wm = load_models()

MODELS = {
    "greedy": lambda op: wm.waf_greedy_meanfield(op, LINE_PAGES),
    "fifo": lambda op: wm.waf_fifo(op, LINE_PAGES),
    "random": lambda op: wm.waf_random(op, LINE_PAGES),
    "d-choices:d=2": lambda op: wm.waf_d_choices(op, 2, LINE_PAGES),
    "d-choices:d=10": lambda op: wm.waf_d_choices(op, 10, LINE_PAGES),
}


def run(policy):
    if not FEMU_SIM.exists():
        pytest.fail("%s is missing: make sim" % FEMU_SIM)
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "waf.fio"
        job.write_text(JOBS)
        r = subprocess.run([str(FEMU_SIM), "--dev", DEV + ",gc_policy=" + policy,
                            "--series-stats=free_lines,host_pages_written,nand_pages_written",
                            "--output-format=json", str(job)],
                           capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("policy", sorted(MODELS))
def test_steady_waf_follows_the_model(policy):
    res = run(policy)
    jobs = {j["jobname"]: j for j in res["jobs"]}
    s0, s1 = jobs["warm"]["stats"], jobs["steady"]["stats"]
    waf = ((s1["nand_pages_written"] - s0["nand_pages_written"]) /
           (s1["host_pages_written"] - s0["host_pages_written"]))
    free = jobs["steady"]["series"]["free_lines"]
    lines = s1["total_lines"]
    # the lines that hold data: all but the free ones (their mean) and the open one
    held = lines - sum(free) / len(free) - 1
    op = held * LINE_PAGES / PAGES - 1
    model = MODELS[policy](op)
    print("%s: steady WAF %.3f, model %.3f at %.1f %% usable over-provisioning "
          "(%.2f lines free on average of %d)" % (policy, waf, model, 100 * op,
                                                 sum(free) / len(free), lines))
    assert abs(waf / model - 1) < 0.05, (waf, model)
