"""QEMU killed with SIGKILL during a logging load, for each stateful kind (zoned without
and with plp=selective, whitebox, blackbox, blackbox of 4 KiB units on 16 KiB pages, fdp):
KILL_LOOP_KILLS kills (default 6) at random moments with commands in flight, each
followed by a new QEMU on the same file whose zone
report / chunk log, data and OOB are checked by kill_check.py against what the load
submitted and saw complete (killlib.py; the rules are in kill_check.py). The campaign of
100 kills per kind is bench/kill-loop.py. KILL_LOOP_SEED replays a run's load decisions
(the seed is printed with any violation)."""

import os
import random

import pytest

import kill_check
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



def test_load_reads_must_return_the_last_acknowledged_write():
    """The buffered kinds' reads during the load (no QEMU): a read must return each LBA's
    last acknowledged write, zeroes after Write Zeroes, and what the last check found."""
    kind = killlib.KINDS["blackbox-wb"]
    lay = kill_check.Layout("blackbox", 512, [(0, 64)], vwc=True)
    state = {0: kill_check.UnitState(content={5: kill_check.make_gen(0, 3)})}
    load = killlib.BufferedLoad(kind, lay, state, random.Random(1), 10, {})
    w = load.new_op("write", slba=0, nlb=4, gen=kill_check.make_gen(0, 11))
    z = load.new_op("zeroes", slba=2, nlb=1)
    for o in (w, z):
        o.ack = 1
        load.completed(o, None)

    def read(slba, blocks):
        r = load.new_op("read", slba=slba, nlb=len(blocks))
        r.ack, r.read_data = 2, b"".join(kill_check.block(512, slba + i, g)
                                        for i, g in enumerate(blocks))
        load.completed(r, None)

    read(0, [w.gen, w.gen, kill_check.ZERO, w.gen, kill_check.ZERO, state[0].content[5]])
    assert not load.read_errors, load.read_errors
    read(0, [kill_check.ZERO])                  # the write lost in a read: flagged
    read(2, [w.gen])                            # the zeroes not seen
    read(5, [kill_check.ZERO])                  # the last check's data gone
    assert len(load.read_errors) == 3 and "LBA 0 returned zeroes" in load.read_errors[0], \
        load.read_errors
