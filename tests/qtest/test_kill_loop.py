"""QEMU killed with SIGKILL during a logging load, for each stateful kind (zoned without
and with plp=selective, whitebox, blackbox): KILL_LOOP_KILLS kills (default 6) at random
moments with commands in flight, each followed by a new QEMU on the same file whose zone
report / chunk log, data and OOB are checked by kill_check.py against what the load
submitted and saw complete (killlib.py; the rules are in kill_check.py). The campaign of
100 kills per kind is bench/kill-loop.py. KILL_LOOP_SEED replays a run's load decisions
(the seed is printed with any violation).

A violation that a review already describes (killlib.KNOWN) makes the test xfail, naming
it; any other fails it."""

import os
import random

import pytest

import kill_check as kc
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
    assert "new" not in c.known, "%s, KILL_LOOP_SEED=%d:\n%s" % (
        kind, SEED, "\n".join("%s\n%s" % f for f in c.failures))
    assert totals["kills"] == KILLS
    # the load did run and its data was compared
    assert totals["acked writes"] > 0 and totals["writes checked"] > 0, totals
    if c.known:
        pytest.xfail("known: " + "; ".join("%s (%d)" % kv for kv in c.known.items()))


def forged(layout, log_ops, views):
    for u in range(len(layout.units)):
        views.setdefault(u, kc.View("free" if layout.kind == "whitebox" else "empty",
                                    layout.units[u][0], bytes(layout.units[u][1] * 512),
                                    bytes(layout.units[u][1] * layout.meta)))
    return kc.check(layout, kc.fresh_state(layout), log_ops, views).violations


def test_known_findings_are_told_apart():
    """The look of findings 1, 4b and 8 on forged states, and a violation of none."""
    def op(seq, name, ack=True, **kw):
        return kc.Op(seq, name, sub=2 * seq, ack=2 * seq + 1 if ack else None, **kw)

    def data(gen, n, cap=16):
        return b"".join(kc.block(512, lba, gen) for lba in range(n)) + bytes((cap - n) * 512)

    zoned = kc.Layout("zoned", 512, [(0, 16)], plp="selective")
    w = op(1, "write", unit=0, slba=0, nlb=4, gen=kc.make_gen(0, 1), protect=True)
    f1 = forged(zoned, [w, op(2, "close", unit=0), op(3, "finish", unit=0)],
                {0: kc.View("closed", 4, data(w.gen, 4))})
    f4 = forged(zoned, [w, op(2, "reset", ack=False, unit=0)],
                {0: kc.View("closed", 4, bytes(512) + data(w.gen, 4)[512:])})
    lost = forged(zoned, [w], {0: kc.View("closed", 4, bytes(16 * 512))})
    wb = kc.Layout("whitebox", 512, [(0, 16)], meta=32)
    v = op(1, "write", unit=0, slba=0, nlb=4, gen=kc.make_gen(0, 1), oob=True)
    oob = b"".join(kc.oob_block(32, lba, v.gen) for lba in range(8)) + bytes(8 * 32)
    f8 = forged(wb, [v], {0: kc.View("open", 4, data(v.gen, 4), oob)})
    assert [killlib.known_finding(x[0]) and killlib.known_finding(x[0])[:10]
            for x in (f1, f4, f8, lost)] == ["finding 1:", "finding 4b", "finding 8:", None], \
        (f1, f4, f8, lost)
