"""Commands that wait for the flash model (blackbox, a page read made 200 ms long): queues
do not wait for each other, they do wait for a shared chip, and a controller reset, Delete
I/O SQ or Abort while commands wait says exactly what happened to them.

Reads of never-written pages cost one page read on chip (LBA page mod 4), so the tests
pick chips by LBA without writing anything."""

import time

import pytest

import nvme
import qtest_machine
from nvme import REG_CC
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's blackbox mode")

READ_NS = 200_000_000
R = READ_NS / 1e9
CHIPS = 4
SECTORS = 8                 # one 4 KiB page in 512-byte LBAs
BASE = 2048                 # first page of a region no test writes
DEV = DevConfig(mode=1, size_mb=16, extra=(
    "nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=50,flash_type=1,"
    "pg_rd_lat=%d,pg_wr_lat=100000,blk_er_lat=100000,ch_xfer_lat=0" % READ_NS))


def submit_read(ctrl, sq, page, pages=1):
    """Queue and ring a read of `pages` pages from page number `page`; its CID."""
    return ctrl.submit_read(sq, 1, page * SECTORS, pages * SECTORS)


def within(elapsed, reads):
    """`reads` page reads in a row: at least that long, less than one read more."""
    return reads * R <= elapsed < (reads + 1) * R


def settle():
    """Until every chip is idle again (a read after a test's last one cannot wait)."""
    time.sleep(2 * R)


def test_fast_command_overtakes_slow_one(ctrl):
    """SQ 1 reads 8 pages (two on every chip), SQ 2 then flushes (nothing to program):
    on their shared CQ the flush comes first, at once; the read at its time."""
    assert ctrl.create_cq(1, 16).ok
    sq1 = ctrl.create_io_queues(1, cqid=1)
    sq2 = ctrl.create_io_queues(2, cqid=1)
    t0 = time.monotonic()
    slow = submit_read(ctrl, sq1, BASE, 2 * CHIPS)
    fast = ctrl.submit(sq2, nvme.cmd(nvme.IO_FLUSH, nsid=1))
    c_slow, c_fast = ctrl.wait_all([(sq1, slow), (sq2, fast)])
    assert c_slow.ok and c_fast.ok, (c_slow, c_fast)
    assert c_fast.t - t0 < R / 2, "the flush waited %.3f s" % (c_fast.t - t0)
    assert within(c_slow.t - t0, 2), "the read took %.3f s" % (c_slow.t - t0)
    # CQ order: the flush's entry is the first one posted
    raw = ctrl.qt.memread(ctrl.cqs[1].addr, 32)
    assert [nvme.Completion(raw[i:i + 16]).sqid for i in (0, 16)] == [2, 1]
    settle()


@pytest.mark.parametrize("second_page,reads", [(BASE + CHIPS, 2), (BASE + 1, 1)],
                         ids=["same-chip", "other-chip"])
def test_queues_contend_for_a_chip(ctrl, second_page, reads):
    """Reads from two queues at once: on one chip the second waits for the first; on two
    chips both take one read."""
    sq1 = ctrl.create_io_queues(1)
    sq2 = ctrl.create_io_queues(2)
    before = ctrl.vendor_log()
    t0 = time.monotonic()
    a = submit_read(ctrl, sq1, BASE)
    b = submit_read(ctrl, sq2, second_page)
    ca, cb = ctrl.wait_all([(sq1, a), (sq2, b)])
    assert ca.ok and cb.ok, (ca, cb)
    assert within(ca.t - t0, 1), "first read: %.3f s" % (ca.t - t0)
    assert within(cb.t - t0, reads), "second read: %.3f s" % (cb.t - t0)
    after = ctrl.vendor_log()
    busy = sorted(after["chip%d_busy_ns" % i] - before["chip%d_busy_ns" % i]
                  for i in range(CHIPS))
    assert busy == ([0, 0, 0, 2 * READ_NS] if reads == 2 else [0, 0, READ_NS, READ_NS])
    settle()


def test_controller_reset_drops_waiting_commands(ctrl, io_ok):
    """CC.EN=0 while reads wait: RDY drops at once, none of them is ever posted, and the
    controller works after it is enabled again."""
    sq = ctrl.create_io_queues(1, entries=16)
    cq = sq.cq
    t0 = time.monotonic()
    for i in range(4):
        submit_read(ctrl, sq, BASE + i * CHIPS)        # all on one chip: 4 reads in a row
    time.sleep(R / 4)
    assert ctrl.reap(cq) == 0, "a read completed before its time"
    ctrl.wr32(REG_CC, ctrl.rd32(REG_CC) & ~nvme.CC_EN)
    ctrl.wait_csts(nvme.CSTS_RDY, 0, timeout=R)
    assert time.monotonic() - t0 < R, "the reset waited for the reads"
    snap = ctrl.qt.memread(cq.addr, cq.size * 16)
    time.sleep(5 * R - (time.monotonic() - t0))        # past every read's time
    assert ctrl.qt.memread(cq.addr, cq.size * 16) == snap, "posted after the reset"
    assert snap == bytes(len(snap)), "posted before the reset completed"
    ctrl.enable()
    sq = ctrl.create_io_queues(1, entries=16)
    io_ok(ctrl, sq)
    t1 = time.monotonic()
    c = ctrl.wait(sq, submit_read(ctrl, sq, BASE))
    assert c.ok and within(c.t - t1, 1), (c, c.t - t1)


def test_delete_sq_completes_waiting_commands(ctrl, io_ok):
    """Delete I/O SQ while three reads wait for the flash: they were executed when they
    were fetched (their data is in the host's buffers), so each completes at once with
    success, posted by the time the Delete completes, and nothing follows."""
    sq = ctrl.create_io_queues(1, entries=16)
    cq = sq.cq
    t0 = time.monotonic()
    cids = {submit_read(ctrl, sq, BASE + i * CHIPS) for i in range(3)}
    time.sleep(R / 4)
    c = ctrl.delete_sq(1)
    assert c.ok, c
    assert time.monotonic() - t0 < R, "Delete SQ waited for the reads"
    assert ctrl.reap(cq) == 3
    done = [cq.done.pop((1, cid)) for cid in cids]
    for d in done:
        assert d.ok, d
    time.sleep(4 * R - (time.monotonic() - t0))
    assert ctrl.reap(cq) == 0, "a deleted SQ's command completed later"
    assert not cq.done
    assert ctrl.delete_cq(1).ok
    io_ok(ctrl, ctrl.create_io_queues(1))


def test_abort_waiting_command(ctrl, io_ok):
    """Abort of a read that waits for the flash: it was executed when it was fetched, so
    it cannot be undone: Abort says it did not abort it (DW0 bit 0 set), and the read and
    the one beside it complete with success at their times."""
    sq = ctrl.create_io_queues(1, entries=16)
    t0 = time.monotonic()
    victim = submit_read(ctrl, sq, BASE + 2)
    other = submit_read(ctrl, sq, BASE + 3)
    time.sleep(R / 4)
    ab = ctrl.admin_cmd(nvme.cmd(nvme.ADM_ABORT, cdw10=victim << 16 | 1))
    assert ab.ok and ab.dw0 & 1 == 1, ab
    c_victim, c_other = ctrl.wait_all([(sq, victim), (sq, other)])
    assert c_victim.ok and within(c_victim.t - t0, 1), (c_victim, c_victim.t - t0)
    assert c_other.ok and within(c_other.t - t0, 1), (c_other, c_other.t - t0)
    assert ctrl.reap(sq.cq) == 0
    io_ok(ctrl, sq)
