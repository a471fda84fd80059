"""Commands that wait for the flash model (blackbox, a page read made 200 ms long): queues
do not wait for each other, they do wait for a shared chip, and a controller reset, Delete
I/O SQ or Abort while commands wait says exactly what happened to them.

Reads of never-written pages cost one page read on chip (LBA page mod 4), so the tests
pick chips by LBA without writing anything. The drive runs with dataplane=main-loop: model
time is the virtual clock, which stands still under qtest unless the test steps it, so
commands submitted together arrive at one instant, nothing completes while the test looks
away, and each completes at the model's time exactly, however busy the host."""

import pytest

import nvme
import qtest_machine
from nvme import REG_CC
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's blackbox mode")

READ_NS = 200_000_000
CHIPS = 4
SECTORS = 8                 # one 4 KiB page in 512-byte LBAs
BASE = 2048                 # first page of a region no test writes
DEV = DevConfig(mode=1, size_mb=16, extra=(
    "dataplane=main-loop,nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=50,flash_type=1,"
    "pg_rd_lat=%d,pg_wr_lat=100000,blk_er_lat=100000,ch_xfer_lat=0" % READ_NS))


def submit_read(ctrl, sq, page, pages=1):
    """Queue and ring a read of `pages` pages from page number `page`; its CID."""
    return ctrl.submit_read(sq, 1, page * SECTORS, pages * SECTORS)


def settle(ctrl):
    """Every chip idle again (a read after a test's last one cannot wait)."""
    ctrl.qt.clock_step(2 * READ_NS)


def looked_at(ctrl, cq):
    """What the device posted to cq with the clock left alone: a few round trips, each of
    which runs the main loop and with it the device's pass."""
    return sum(ctrl.reap(cq) for _ in range(3))


def test_fast_command_overtakes_slow_one(ctrl):
    """SQ 1 reads 8 pages (two on every chip), SQ 2 then flushes (nothing to program):
    on their shared CQ the flush comes first, at once; the read at its time."""
    assert ctrl.create_cq(1, 16).ok
    sq1 = ctrl.create_io_queues(1, cqid=1)
    sq2 = ctrl.create_io_queues(2, cqid=1)
    (c_slow, t_slow), (c_fast, t_fast) = ctrl.virtual_times(
        lambda: [(sq1, submit_read(ctrl, sq1, BASE, 2 * CHIPS)),
                 (sq2, ctrl.submit(sq2, nvme.cmd(nvme.IO_FLUSH, nsid=1)))], 4 * READ_NS)
    assert c_slow.ok and c_fast.ok, (c_slow, c_fast)
    assert (t_fast, t_slow) == (0, 2 * READ_NS), (t_fast, t_slow)
    # CQ order: the flush's entry is the first one posted
    raw = ctrl.qt.memread(ctrl.cqs[1].addr, 32)
    assert [nvme.Completion(raw[i:i + 16]).sqid for i in (0, 16)] == [2, 1]
    settle(ctrl)


@pytest.mark.parametrize("second_page,reads", [(BASE + CHIPS, 2), (BASE + 1, 1)],
                         ids=["same-chip", "other-chip"])
def test_queues_contend_for_a_chip(ctrl, second_page, reads):
    """Reads from two queues at once: on one chip the second waits for the first; on two
    chips both take one read."""
    sq1 = ctrl.create_io_queues(1)
    sq2 = ctrl.create_io_queues(2)
    before = ctrl.vendor_log()
    (ca, ta), (cb, tb) = ctrl.virtual_times(
        lambda: [(sq1, submit_read(ctrl, sq1, BASE)), (sq2, submit_read(ctrl, sq2, second_page))],
        4 * READ_NS)
    assert ca.ok and cb.ok, (ca, cb)
    assert (ta, tb) == (READ_NS, reads * READ_NS), (ta, tb)
    after = ctrl.vendor_log()
    busy = sorted(after["chip%d_busy_ns" % i] - before["chip%d_busy_ns" % i]
                  for i in range(CHIPS))
    assert busy == ([0, 0, 0, 2 * READ_NS] if reads == 2 else [0, 0, READ_NS, READ_NS])
    settle(ctrl)


def test_controller_reset_drops_waiting_commands(ctrl, io_ok):
    """CC.EN=0 while reads wait: RDY drops at once, none of them is ever posted, and the
    controller works after it is enabled again."""
    qt = ctrl.qt
    sq = ctrl.create_io_queues(1, entries=16)
    cq = sq.cq
    t0 = qt.clock_step(1)
    for i in range(4):
        submit_read(ctrl, sq, BASE + i * CHIPS)        # all on one chip: 4 reads in a row
    qt.clock_step(READ_NS // 4)
    assert looked_at(ctrl, cq) == 0, "a read completed before its time"
    ctrl.wr32(REG_CC, ctrl.rd32(REG_CC) & ~nvme.CC_EN)
    ctrl.wait_csts(nvme.CSTS_RDY, 0)
    assert qt.clock_step(1) - t0 < READ_NS, "the reset waited for the reads"
    snap = qt.memread(cq.addr, cq.size * 16)
    qt.clock_step(5 * READ_NS)                          # past every read's time
    assert qt.memread(cq.addr, cq.size * 16) == snap, "posted after the reset"
    assert snap == bytes(len(snap)), "posted before the reset completed"
    ctrl.enable()
    sq = ctrl.create_io_queues(1, entries=16)
    io_ok(ctrl, sq)
    settle(ctrl)
    ((c, t),) = ctrl.virtual_times(lambda: [(sq, submit_read(ctrl, sq, BASE))], 2 * READ_NS)
    assert c.ok and t == READ_NS, (c, t)


def test_delete_sq_completes_waiting_commands(ctrl, io_ok):
    """Delete I/O SQ while three reads wait for the flash: they were executed when they
    were fetched (their data is in the host's buffers), so each completes at once with
    success, posted by the time the Delete completes, and nothing follows."""
    qt = ctrl.qt
    sq = ctrl.create_io_queues(1, entries=16)
    cq = sq.cq
    t0 = qt.clock_step(1)
    cids = {submit_read(ctrl, sq, BASE + i * CHIPS) for i in range(3)}
    qt.clock_step(READ_NS // 4)
    assert looked_at(ctrl, cq) == 0, "a read completed before its time"
    c = ctrl.delete_sq(1)
    assert c.ok, c
    assert qt.clock_step(1) - t0 < READ_NS, "Delete SQ waited for the reads"
    assert ctrl.reap(cq) == 3
    done = [cq.done.pop((1, cid)) for cid in cids]
    for d in done:
        assert d.ok, d
    qt.clock_step(4 * READ_NS)
    assert looked_at(ctrl, cq) == 0, "a deleted SQ's command completed later"
    assert not cq.done
    assert ctrl.delete_cq(1).ok
    io_ok(ctrl, ctrl.create_io_queues(1))


def test_abort_waiting_command(ctrl, io_ok):
    """Abort of a read that waits for the flash: it was executed when it was fetched, so
    it cannot be undone: Abort says it did not abort it (DW0 bit 0 set), and the read and
    the one beside it complete with success at their times."""
    sq = ctrl.create_io_queues(1, entries=16)
    settle(ctrl)
    cids = {}

    def submit():
        cids["victim"] = submit_read(ctrl, sq, BASE + 2)
        cids["other"] = submit_read(ctrl, sq, BASE + 3)
        ab = ctrl.admin_cmd(nvme.cmd(nvme.ADM_ABORT, cdw10=cids["victim"] << 16 | 1))
        assert ab.ok and ab.dw0 & 1 == 1, ab
        return [(sq, cids["victim"]), (sq, cids["other"])]
    (c_victim, t_victim), (c_other, t_other) = ctrl.virtual_times(submit, 2 * READ_NS)
    assert c_victim.ok and c_other.ok, (c_victim, c_other)
    assert (t_victim, t_other) == (READ_NS, READ_NS), (t_victim, t_other)
    assert ctrl.reap(sq.cq) == 0
    io_ok(ctrl, sq)
