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

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simsteady import run, steady_waf  # noqa: E402

RUNS = [("greedy", "shared"), ("cost-benefit", "shared"), ("greedy", "host-gc"),
        ("cost-benefit", "host-gc"), ("greedy", "hot-cold"), ("cost-benefit", "hot-cold")]


@pytest.mark.parametrize("theta", ["0.9", "1.2"])
def test_skew_ordering(theta):
    waf = {(p, st): steady_waf(run("gc_policy=%s,streams=%s" % (p, st), "zipf:" + theta))
           for p, st in RUNS}
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
