"""Each victim policy with a published model of its write amplification, run in femu-sim
under uniform random 4 KiB overwrites of a full drive: its steady-state WAF within 5 % of
the model (bench/waf_models.py) at the flash the drive's data can use.

The drive: 512 MiB exposed, 15 % over-provisioning, lines of 128 pages (2 channels x 2
chips x 32 pages: the models' b), paced GC (gc_pacing=proportional, so GC keeps only a
line or two free, whose room the models do not give data: counted out from the time
series of free_lines). Fill, 3 capacities to reach steady state, 2 measured."""

import importlib.util

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simsteady import LINE_PAGES, PAGES, ROOT, run, steady_waf  # noqa: E402


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


@pytest.mark.parametrize("policy", sorted(MODELS))
def test_steady_waf_follows_the_model(policy):
    # one open line (streams=shared), as the models have one place new and moved pages go to
    jobs = run("streams=shared,gc_policy=" + policy,
               series="free_lines,host_pages_written,nand_pages_written")
    waf = steady_waf(jobs)
    free = jobs["steady"]["series"]["free_lines"]
    lines = jobs["steady"]["stats"]["total_lines"]
    # the lines that hold data: all but the free ones (their mean) and the open one
    held = lines - sum(free) / len(free) - 1
    op = held * LINE_PAGES / PAGES - 1
    model = MODELS[policy](op)
    print("%s: steady WAF %.3f, model %.3f at %.1f %% usable over-provisioning "
          "(%.2f lines free on average of %d)" % (policy, waf, model, 100 * op,
                                                 sum(free) / len(free), lines))
    assert abs(waf / model - 1) < 0.05, (waf, model)
