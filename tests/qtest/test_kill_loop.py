"""QEMU killed with SIGKILL during a logging load, for each stateful kind (zoned without
and with plp=selective, whitebox, blackbox): KILL_LOOP_KILLS kills (default 6) at random
moments with commands in flight, each followed by a new QEMU on the same file whose zone
report / chunk log, data and OOB are checked by kill_check.py against what the load
submitted and saw complete (killlib.py; the rules are in kill_check.py). The campaign of
100 kills per kind is bench/kill-loop.py. KILL_LOOP_SEED replays a run's load decisions
(the seed is printed with any violation)."""

import os
import random

import pytest

import killlib
import qtest_machine

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's modes")

KILLS = int(os.environ.get("KILL_LOOP_KILLS", "6"))
SEED = int(os.environ.get("KILL_LOOP_SEED", "0")) or random.randrange(1, 1 << 30)


@pytest.mark.parametrize("kind", list(killlib.KINDS))
def test_kill_loop(kind, tmp_path):
    qtest_machine.skip_unless_qemu()
    c = killlib.Campaign(killlib.KINDS[kind], SEED, str(tmp_path), log=lambda s: None)
    totals = c.run(KILLS)
    print("\n%s: seed %d: %s" % (kind, SEED, ", ".join("%s %d" % kv for kv in totals.items())))
    assert not c.failures, "%s, KILL_LOOP_SEED=%d:\n%s" % (
        kind, SEED, "\n".join("%s\n%s" % f for f in c.failures))
    assert totals["kills"] == KILLS
    # the load did run and its data was compared
    assert totals["acked writes"] > 0 and totals["writes checked"] > 0, totals
    if c.layout.vwc and KILLS >= 6:
        # the kills did find unflushed data in the write buffer, and data it had written
        # out by itself (above its high watermark) where no Flush covered it
        assert totals["rolled back"] > 0 and totals["unflushed kept"] > 0, totals

