"""kill_check.py (the checker of the kill loop) on forged states, no QEMU: what the rules
allow passes, and each kind of violation it is there to catch is flagged: an acknowledged
write missing, a write pointer below acknowledged data, data above a write pointer, stale
data below one, a torn reset, a zone state a restart cannot give, a Full zone come back
Closed, lost protected or flushed data (plp), OOB above a chunk's write pointer or not
matching its data, a wrong wear index, older or torn blocks on blackbox; and state carried
from one check to the next."""

import kill_check as kc
from kill_check import Layout, Op, UnitState, View, block, make_gen, oob_block

BS = 512
CAP = 16                # writable LBAs per unit
SIZE = 32               # LBAs per zone


def zoned(plp=None, units=2):
    return Layout("zoned", BS, [(u * SIZE, CAP) for u in range(units)], plp=plp,
                  plp_zones=frozenset({1}) if plp else frozenset())


def view(layout, u, state, wp, blocks, oob=None, wli=0):
    """blocks / oob: {lba: generation}; others zero."""
    start, cap = layout.units[u]
    data = b"".join(block(BS, lba, blocks.get(lba, kc.ZERO)) for lba in range(start, start + cap))
    meta = b""
    if layout.meta:
        meta = b"".join(oob_block(layout.meta, lba, oob[lba]) if oob and lba in oob
                        else bytes(layout.meta) for lba in range(start, start + cap))
    return View(state, wp, data, meta, wli)


class Log:
    """Ops with event numbers in the order they are given."""

    def __init__(self):
        self.ops, self.t, self.seq = [], 0, 0

    def add(self, name, acked=True, **kw):
        self.seq += 1
        self.t += 1
        op = Op(self.seq, name, sub=self.t, **kw)
        if acked:
            self.t += 1
            op.ack = self.t
        if name == "append":
            op.result_lba = op.slba
        self.ops.append(op)
        return op

    def write(self, unit, slba, nlb, acked=True, ugen=0, **kw):
        return self.add("write", acked, unit=unit, slba=slba, nlb=nlb,
                        gen=make_gen(ugen, self.seq + 1), **kw)


def blocks_of(*ops):
    out = {}
    for o in ops:
        for lba in range(o.slba, o.slba + o.nlb):
            out[lba] = o.gen
    return out


def run(layout, log, views, state=None):
    state = state or kc.fresh_state(layout)
    for u in range(len(layout.units)):
        views.setdefault(u, view(layout, u, "free" if layout.kind == "whitebox" else "empty",
                                 layout.units[u][0], {}))
    return kc.check(layout, state, log.ops, views)


def has(res, words):
    return any(words in v for v in res.violations)


# --- zoned, plp unset ---

def test_zoned_acknowledged_writes_pass():
    lay, log = zoned(), Log()
    w1, w2 = log.write(0, 0, 4), log.write(0, 4, 4)
    res = run(lay, log, {0: view(lay, 0, "closed", 8, blocks_of(w1, w2))})
    assert res.ok, res.text()
    assert res.counts["writes checked"] == 2 and res.counts["blocks checked"] == 8
    assert res.state[0].content == blocks_of(w1, w2)


def test_zoned_missing_and_below_and_above():
    lay, log = zoned(), Log()
    w1, w2 = log.write(0, 0, 4), log.write(0, 4, 4)
    # zeroes where W2's blocks must be
    res = run(lay, log, {0: view(lay, 0, "closed", 8, blocks_of(w1))})
    assert has(res, "acknowledged write missing or damaged, 4 LBAs (4-7)"), res.text()
    # the write pointer below acknowledged data
    res = run(lay, log, {0: view(lay, 0, "closed", 4, blocks_of(w1))})
    assert has(res, "write pointer 4, expected 8"), res.text()
    # a block above the write pointer (from a write never acknowledged)
    stray = {8: make_gen(0, 99)}
    res = run(lay, log, {0: view(lay, 0, "closed", 8, {**blocks_of(w1, w2), **stray})})
    assert has(res, "data above the write pointer, 1 LBA (8)"), res.text()


def test_zoned_stale_data_after_reset():
    lay, log = zoned(), Log()
    old = log.write(0, 0, 4)
    log.add("reset", unit=0, slba=0)
    new = log.write(0, 0, 2, ugen=1)
    stale = {**blocks_of(old), **blocks_of(new)}       # LBAs 2-3 of before the reset
    res = run(lay, log, {0: view(lay, 0, "closed", 4, stale)})
    assert has(res, "write pointer 4, expected 2"), res.text()
    res = run(lay, log, {0: view(lay, 0, "closed", 2, stale)})
    assert has(res, "data above the write pointer, 2 LBAs (2-3)"), res.text()
    # an old block below the write pointer, where the new write must be
    res = run(lay, log, {0: view(lay, 0, "closed", 2, {0: new.gen, 1: old.gen})})
    assert has(res, "acknowledged write missing or damaged, 1 LBA (1)"), res.text()
    assert has(res, "write #1 (unit generation 0)"), res.text()


def test_zoned_write_in_flight_either_way_not_half():
    lay, log = zoned(), Log()
    w1 = log.write(0, 0, 4)
    w2 = log.write(0, 4, 4, acked=False)
    assert run(lay, log, {0: view(lay, 0, "closed", 4, blocks_of(w1))}).ok
    res = run(lay, log, {0: view(lay, 0, "closed", 8, blocks_of(w1, w2))})
    assert res.ok and res.counts["alternatives taken"] == 1, res.text()
    half = {**blocks_of(w1), **{4: w2.gen, 5: w2.gen}}
    res = run(lay, log, {0: view(lay, 0, "closed", 6, half)})
    assert has(res, "write pointer 6, expected 4") and "or after the write #2 in flight" in \
        res.text(), res.text()
    assert has(res, "unacknowledged data below the write pointer, 2 LBAs (4-5)"), res.text()


def test_zoned_reset_in_flight_and_torn_reset():
    lay, log = zoned(), Log()
    w1 = log.write(0, 0, 8)
    log.add("reset", acked=False, unit=0, slba=0)
    assert run(lay, log, {0: view(lay, 0, "closed", 8, blocks_of(w1))}).ok
    assert run(lay, log, {0: view(lay, 0, "empty", 0, {})}).ok
    torn = {lba: w1.gen for lba in range(4, 8)}       # half zeroed, pointer kept
    res = run(lay, log, {0: view(lay, 0, "closed", 8, torn)})
    assert has(res, "acknowledged write missing or damaged, 4 LBAs (0-3)"), res.text()


def test_zoned_states_after_a_restart():
    lay, log = zoned(), Log()
    w1 = log.write(0, 0, 4)
    log.add("finish", unit=1, slba=SIZE)
    good = {0: view(lay, 0, "closed", 4, blocks_of(w1)), 1: view(lay, 1, "full", SIZE + CAP, {})}
    assert run(lay, log, dict(good)).ok
    res = run(lay, log, {**good, 0: view(lay, 0, "implicitly open", 4, blocks_of(w1))})
    assert has(res, "state implicitly open, expected closed"), res.text()
    # an acknowledged Finish undone: Full must stay Full
    res = run(lay, log, {**good, 1: view(lay, 1, "empty", SIZE, {})})
    assert has(res, "state empty, expected full"), res.text()
    res = run(lay, log, {**good, 0: view(lay, 0, "empty", 4, blocks_of(w1))})
    assert has(res, "empty with write pointer 4"), res.text()


def test_zoned_append_landing_elsewhere():
    lay, log = zoned(), Log()
    a = log.add("append", unit=0, slba=0, nlb=2, gen=make_gen(0, 1))
    a.result_lba = 3
    res = run(lay, log, {0: view(lay, 0, "closed", 2, blocks_of(a))})
    assert has(res, "completed at LBA 3"), res.text()


# --- zoned, plp=selective ---

def test_plp_unprotected_may_be_lost_protected_may_not():
    lay, log = zoned("selective"), Log()
    u1 = log.write(0, 0, 4)                         # unprotected, no Flush after it
    p1 = log.write(0, 4, 2, protect=True)
    u2 = log.write(0, 6, 2)
    # u1 lost (a hole below p1), u2 lost: the pointer back to where p1 ends
    res = run(lay, log, {0: view(lay, 0, "closed", 6, blocks_of(p1))})
    assert res.ok, res.text()
    # everything there is fine too
    assert run(lay, log, {0: view(lay, 0, "closed", 8, blocks_of(u1, p1, u2))}).ok
    # p1 lost
    res = run(lay, log, {0: view(lay, 0, "closed", 4, blocks_of(u1))})
    assert has(res, "write pointer 4, expected 6..8"), res.text()
    # zone 1 is a plp_zones zone: unflagged writes are protected there
    log2 = Log()
    d = log2.write(1, SIZE, 4)
    res = run(lay, log2, {1: view(lay, 1, "empty", SIZE, {})})
    assert has(res, "write pointer %d, expected %d" % (SIZE, SIZE + 4)), res.text()
    assert run(lay, log2, {1: view(lay, 1, "closed", SIZE + 4, blocks_of(d))}).ok


def test_plp_flush_covers_what_completed_before_it():
    lay = zoned("selective")
    log = Log()
    u1 = log.write(0, 0, 4)
    log.add("flush")
    log.write(0, 4, 4)
    res = run(lay, log, {0: view(lay, 0, "empty", 0, {})})
    assert has(res, "write pointer 0, expected 4..8"), res.text()
    assert run(lay, log, {0: view(lay, 0, "closed", 4, blocks_of(u1))}).ok
    # a Flush submitted before the write completed does not cover it
    log = Log()
    f = log.add("flush", acked=False)
    w = log.write(0, 0, 4)
    f.ack = w.ack + 1
    assert run(lay, log, {0: view(lay, 0, "empty", 0, {})}).ok


def test_plp_write_cache_off_makes_later_writes_durable():
    lay, log = zoned("selective"), Log()
    u1 = log.write(0, 0, 4)                         # written out by the Set Features
    u2 = log.write(0, 4, 4, acked=False)            # in flight across it: no promise
    log.add("cache-off")
    u2.ack = log.t = log.t + 1
    u3 = log.write(0, 8, 4)                         # written through
    res = run(lay, log, {0: view(lay, 0, "closed", 12, blocks_of(u1, u3))})
    assert res.ok, res.text()                       # u2 lost: a hole
    res = run(lay, log, {0: view(lay, 0, "closed", 8, blocks_of(u1, u2))})
    assert has(res, "write pointer 8, expected 12"), res.text()
    res = run(lay, log, {0: view(lay, 0, "closed", 12, blocks_of(u2, u3))})
    assert has(res, "acknowledged write missing or damaged, 4 LBAs (0-3)"), res.text()


def test_plp_fua_finish_close_and_filling_up_make_durable():
    lay = zoned("selective")
    for last in ("fua", "finish", "close", "fill"):
        log = Log()
        u1 = log.write(0, 0, 4)
        if last == "fua":
            u2 = log.write(0, 4, 2, fua=True)
            wp, state, ops = 6, "closed", (u1, u2)
        elif last == "fill":
            u2 = log.write(0, 4, CAP - 4)
            wp, state, ops = CAP, "full", (u1, u2)
        else:
            log.add(last, unit=0, slba=0)
            wp, state, ops = CAP if last == "finish" else 4, \
                "full" if last == "finish" else "closed", (u1,)
        assert run(lay, log, {0: view(lay, 0, state, wp, blocks_of(*ops))}).ok, last
        res = run(lay, log, {0: view(lay, 0, "empty", 0, {})})
        assert not res.ok, last
    # a protected FUA write makes nothing else durable
    log = Log()
    log.write(0, 0, 4)
    p = log.write(0, 4, 2, fua=True, protect=True)
    res = run(lay, log, {0: view(lay, 0, "closed", 6, blocks_of(p))})
    assert res.ok, res.text()


def test_plp_stale_and_garbage_below_the_write_pointer():
    lay, log = zoned("selective"), Log()
    old = log.write(0, 0, 4)
    log.add("reset", unit=0, slba=0)
    p = log.write(0, 0, 2, ugen=1, protect=True)
    u = log.write(0, 2, 2, ugen=1)
    # LBAs 2-3 hold the blocks from before the acknowledged reset
    stale = {**blocks_of(p), 2: old.gen, 3: old.gen}
    res = run(lay, log, {0: view(lay, 0, "closed", 4, stale)})
    assert has(res, "stale data below the write pointer, 2 LBAs (2-3)"), res.text()
    v = view(lay, 0, "closed", 4, blocks_of(p, u))
    v.data = v.data[:3 * BS] + b"\x55" * BS
    res = run(lay, log, {0: v})
    assert has(res, "torn or garbled block below the write pointer, 1 LBA (3)"), res.text()


# --- whitebox ---

def whitebox():
    return Layout("whitebox", BS, [(0, CAP), (CAP, CAP)], meta=32)


def test_whitebox_data_oob_state_and_wear():
    lay, log = whitebox(), Log()
    v1 = log.write(0, 0, 4, oob=True)
    s1 = log.write(0, 4, 4)                        # a standard write: OOB zero
    log.add("reset", unit=1, slba=CAP)
    good = {0: view(lay, 0, "open", 8, blocks_of(v1, s1), oob=blocks_of(v1)),
            1: view(lay, 1, "free", CAP, {}, wli=1)}
    res = run(lay, log, dict(good))
    assert res.ok, res.text()
    assert res.state[0].oob == blocks_of(v1)
    bad = view(lay, 0, "open", 8, blocks_of(v1, s1), oob={**blocks_of(v1), **{9: v1.gen}})
    res = run(lay, log, {**good, 0: bad})
    assert has(res, "OOB above the write pointer, 1 LBA (9)"), res.text()
    bad = view(lay, 0, "open", 8, blocks_of(v1, s1), oob={0: v1.gen, 1: v1.gen, 2: v1.gen})
    res = run(lay, log, {**good, 0: bad})
    assert has(res, "OOB does not match, 1 LBA (3)"), res.text()
    res = run(lay, log, {**good, 1: view(lay, 1, "free", CAP, {}, wli=0)})
    assert has(res, "wear index 0, expected 1"), res.text()
    res = run(lay, log, {**good, 0: view(lay, 0, "closed", 8, blocks_of(v1, s1),
                                         oob=blocks_of(v1))})
    assert has(res, "state closed, expected open"), res.text()


def test_whitebox_reset_in_flight():
    lay, log = whitebox(), Log()
    w = log.write(0, 0, CAP, oob=True)
    log.add("reset", acked=False, unit=0, slba=0)
    assert run(lay, log, {0: view(lay, 0, "closed", CAP, blocks_of(w), oob=blocks_of(w))}).ok
    assert run(lay, log, {0: view(lay, 0, "free", 0, {}, wli=1)}).ok
    # reset: data zeroed, OOB left (the chunk record saved Free first)
    res = run(lay, log, {0: view(lay, 0, "free", 0, {}, oob=blocks_of(w), wli=1)})
    assert has(res, "OOB above the write pointer, 16 LBAs (0-15)"), res.text()


# --- blackbox ---

def test_blackbox_last_acknowledged_or_in_flight():
    lay, log = Layout("blackbox", BS, [(0, 64)]), Log()
    a = log.write(None, 0, 8)
    b = log.write(None, 4, 8)                       # overwrites 4-7
    z = log.add("zeroes", unit=None, slba=20, nlb=2)
    c = log.write(None, 30, 4, acked=False)
    good = dict(blocks_of(a, b))
    res = run(lay, log, {0: view(lay, 0, "", 0, good)})
    assert res.ok and res.counts["writes checked"] == 3, res.text()
    assert run(lay, log, {0: view(lay, 0, "", 0, {**good, 30: c.gen, 32: c.gen})}).ok
    res = run(lay, log, {0: view(lay, 0, "", 0, {**good, 5: a.gen})})
    assert has(res, "acknowledged write missing or damaged, 1 LBA (5)"), res.text()
    res = run(lay, log, {0: view(lay, 0, "", 0, {**good, 21: a.gen})})
    assert has(res, "acknowledged write missing or damaged, 1 LBA (%d)" % (z.slba + 1)), \
        res.text()
    v = view(lay, 0, "", 0, good)
    v.data = v.data[:40 * BS] + block(BS, 3, a.gen) + v.data[41 * BS:]
    res = run(lay, log, {0: v})
    assert has(res, "another LBA's block, 1 LBA (40)"), res.text()
    v = view(lay, 0, "", 0, good)
    v.data = v.data[:BS] + block(BS, 1, a.gen)[:100] + bytes(BS - 100) + v.data[2 * BS:]
    res = run(lay, log, {0: v})
    assert has(res, "acknowledged write missing or damaged, 1 LBA (1)"), res.text()
    assert has(res, "torn or garbled"), res.text()


# --- from one check to the next ---

def test_state_carries_over_and_an_anomaly_counts_once():
    lay, log = zoned(), Log()
    w = log.write(0, 0, 4)
    stray = {9: make_gen(0, 77)}
    first = run(lay, log, {0: view(lay, 0, "closed", 4, {**blocks_of(w), **stray})})
    assert has(first, "data above the write pointer, 1 LBA (9)"), first.text()
    # next round: nothing new; the stray block still there is not counted again, but the
    # data the first check established must still be there
    again = run(lay, Log(), {0: view(lay, 0, "closed", 4, {**blocks_of(w), **stray})},
                state=first.state)
    assert again.ok, again.text()
    lost = run(lay, Log(), {0: view(lay, 0, "closed", 4, {0: w.gen})}, state=first.state)
    assert has(lost, "acknowledged write missing or damaged, 3 LBAs (1-3)"), lost.text()
    assert isinstance(first.state[0], UnitState)


# --- blackbox with a volatile write cache (a write buffer without PLP) ---

def vwc_layout():
    return Layout("blackbox", BS, [(0, 64)], vwc=True)


def test_vwc_unflushed_may_roll_back_flushed_may_not():
    lay, log = vwc_layout(), Log()
    a = log.write(None, 0, 8)
    log.add("flush")                                # a is durable
    b = log.write(None, 0, 4)                       # overwrites 0-3, not flushed
    c = log.write(None, 16, 4)                      # never flushed: may be lost
    newest = {**blocks_of(a, b, c)}
    res = run(lay, log, {0: view(lay, 0, "", 0, newest)})
    assert res.ok and res.counts["rolled back"] == 0, res.text()
    # b and c lost, LBA by LBA in any mix: a's version and zeroes are allowed
    res = run(lay, log, {0: view(lay, 0, "", 0, {**blocks_of(a), 1: b.gen, 17: c.gen})})
    assert res.ok and res.counts["rolled back"] == 6, res.text()
    assert res.counts["blocks checked"] == 4        # 4-7: only a's version allowed
    # a itself is durable: zeroes there are a violation
    res = run(lay, log, {0: view(lay, 0, "", 0, {**blocks_of(a), 0: kc.ZERO, 5: kc.ZERO})})
    assert has(res, "zeroes where a durable write must be, 2 LBAs (0, 5)"), res.text()


def test_vwc_flush_before_completion_does_not_cover():
    lay, log = vwc_layout(), Log()
    f = log.add("flush", acked=False)
    a = log.write(None, 0, 4)                       # completes after the Flush's doorbell
    log.t += 1
    f.ack = log.t                                   # the Flush completes after it
    res = run(lay, log, {0: view(lay, 0, "", 0, {})})
    assert res.ok and res.counts["rolled back"] == 4, res.text()
    log.add("flush")                                # a later Flush covers it
    res = run(lay, log, {0: view(lay, 0, "", 0, {})})
    assert has(res, "zeroes where a durable write must be, 4 LBAs (0-3)"), res.text()


def test_vwc_fua_cache_off_and_write_through_are_durable():
    lay, log = vwc_layout(), Log()
    a = log.write(None, 0, 2, fua=True)
    b = log.write(None, 8, 2)
    log.add("cache-off")                            # writes b out
    c = log.write(None, 16, 2)                      # written through
    d = log.write(None, 24, 2, acked=False)         # in flight: either way
    good = blocks_of(a, b, c)
    assert run(lay, log, {0: view(lay, 0, "", 0, good)}).ok
    assert run(lay, log, {0: view(lay, 0, "", 0, {**good, 24: d.gen})}).ok
    for lost in (a, b, c):
        res = run(lay, log, {0: view(lay, 0, "", 0, {
            k: v for k, v in good.items() if k != lost.slba})})
        assert has(res, "zeroes where a durable write must be, 1 LBA (%d)" % lost.slba), \
            res.text()


def test_vwc_older_than_durable_foreign_and_torn():
    lay, log = vwc_layout(), Log()
    a = log.write(None, 0, 4)
    b = log.write(None, 0, 4, fua=True)             # durable over a
    log.add("zeroes", unit=None, slba=8, nlb=4)     # durable at completion
    c = log.write(None, 12, 4)
    res = run(lay, log, {0: view(lay, 0, "", 0, {**blocks_of(b), 2: a.gen})})
    assert has(res, "older than its last durable write, 1 LBA (2)"), res.text()
    # a write of this round on another LBA's range, with this LBA's pattern: no such write
    res = run(lay, log, {0: view(lay, 0, "", 0, {**blocks_of(b), 20: c.gen})})
    assert has(res, "data of no write of this LBA, 1 LBA (20)"), res.text()
    v = view(lay, 0, "", 0, blocks_of(b))
    v.data = v.data[:13 * BS] + block(BS, 13, c.gen)[:200] + bytes(BS - 200) + v.data[14 * BS:]
    res = run(lay, log, {0: v})
    assert has(res, "torn or garbled block, 1 LBA (13)"), res.text()
    v = view(lay, 0, "", 0, blocks_of(b))
    v.data = v.data[:14 * BS] + block(BS, 15, c.gen) + v.data[15 * BS:]
    res = run(lay, log, {0: v})
    assert has(res, "another LBA's block, 1 LBA (14)"), res.text()


def test_vwc_carries_the_last_check_and_the_plain_rule_is_stricter():
    lay, log = vwc_layout(), Log()
    a = log.write(None, 0, 4)
    log.add("flush")
    first = run(lay, log, {0: view(lay, 0, "", 0, blocks_of(a))})
    assert first.ok, first.text()
    nxt = Log()
    nxt.seq = nxt.t = 10
    b = nxt.write(None, 0, 4)                       # not flushed
    assert run(lay, nxt, {0: view(lay, 0, "", 0, blocks_of(a))}, state=first.state).ok
    res = run(lay, nxt, {0: view(lay, 0, "", 0, {})}, state=first.state)
    assert has(res, "zeroes where a durable write must be, 4 LBAs (0-3)"), res.text()
    # the same view under the plain blackbox rule (wb_plp=on): b had to survive
    plain = Layout("blackbox", BS, [(0, 64)])
    res = run(plain, nxt, {0: view(plain, 0, "", 0, blocks_of(a))}, state=first.state)
    assert has(res, "acknowledged write missing or damaged, 4 LBAs (0-3)"), res.text()
