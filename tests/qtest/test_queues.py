"""Create/Delete I/O Completion and Submission Queue, and their errors."""

import time

import pytest

import nvme
from nvme import SC_INVALID_QID, SC_INVALID_QSIZE, SC_CQ_INVALID


def allocated_queues(ctrl):
    c = ctrl.get_features(nvme.FEAT_NUM_QUEUES)
    assert c.ok, c
    return (c.dw0 & 0xFFFF) + 1, (c.dw0 >> 16) + 1


def expect(c, sct, sc):
    assert c.is_(sct, sc), c


def test_all_queue_pairs(ctrl, machine, io_ok):
    nsq, ncq = allocated_queues(ctrl)
    n = min(nsq, ncq)
    assert n == machine.cfg.queues
    sqs = [ctrl.create_io_queues(q, entries=8) for q in range(1, n + 1)]
    for sq in sqs:
        io_ok(ctrl, sq, slba=sq.qid)
    for sq in sqs:
        ctrl.delete_io_queues(sq.qid)
    io_ok(ctrl)


def test_sqs_sharing_one_cq(ctrl, io_ok):
    assert ctrl.create_cq(1, 32).ok
    sq1 = ctrl.create_io_queues(1, cqid=1)
    sq2 = ctrl.create_io_queues(2, cqid=1)
    io_ok(ctrl, sq1, slba=10)
    io_ok(ctrl, sq2, slba=20)
    expect(ctrl.delete_cq(1), 1, nvme.SC_INVALID_QUEUE_DELETION)
    assert ctrl.delete_sq(1).ok
    expect(ctrl.delete_cq(1), 1, nvme.SC_INVALID_QUEUE_DELETION)
    assert ctrl.delete_sq(2).ok
    assert ctrl.delete_cq(1).ok


def test_create_cq_invalid_qid(ctrl, io_ok):
    nsq, ncq = allocated_queues(ctrl)
    for qid in (0, ncq + 1, 0xFFFF):
        expect(ctrl.create_cq(qid, 16), 1, SC_INVALID_QID)
    assert ctrl.create_cq(1, 16).ok
    expect(ctrl.create_cq(1, 16), 1, SC_INVALID_QID)
    io_ok(ctrl, ctrl.create_io_queues(1))


def test_create_sq_invalid_qid(ctrl, io_ok):
    nsq, ncq = allocated_queues(ctrl)
    assert ctrl.create_cq(1, 16).ok
    for qid in (0, nsq + 1, 0xFFFF):
        expect(ctrl.create_sq(qid, 16, 1), 1, SC_INVALID_QID)
    assert ctrl.create_sq(1, 16, 1).ok
    expect(ctrl.create_sq(1, 16, 1), 1, SC_INVALID_QID)
    io_ok(ctrl, ctrl.sqs[1])


def test_create_cq_invalid_size(ctrl, io_ok):
    mqes = ctrl.cap["mqes"]
    expect(ctrl.create_cq(1, 1), 1, SC_INVALID_QSIZE)       # QSIZE 0
    expect(ctrl.create_cq(1, mqes + 2), 1, SC_INVALID_QSIZE)
    assert ctrl.create_cq(1, mqes + 1).ok                    # the maximum
    io_ok(ctrl, ctrl.create_io_queues(1))


def test_create_sq_invalid_size(ctrl, io_ok):
    mqes = ctrl.cap["mqes"]
    assert ctrl.create_cq(1, 16).ok
    expect(ctrl.create_sq(1, 1, 1), 1, SC_INVALID_QSIZE)
    expect(ctrl.create_sq(1, mqes + 2, 1), 1, SC_INVALID_QSIZE)
    assert ctrl.create_sq(1, mqes + 1, 1).ok
    io_ok(ctrl, ctrl.sqs[1])


def test_create_sq_without_cq(ctrl, io_ok):
    expect(ctrl.create_sq(1, 16, 1), 1, SC_CQ_INVALID)
    expect(ctrl.create_sq(1, 16, 0), 1, SC_CQ_INVALID)       # the admin CQ
    io_ok(ctrl)


def test_delete_cq_with_sq_attached(ctrl, io_ok):
    sq = ctrl.create_io_queues(1)
    expect(ctrl.delete_cq(1), 1, nvme.SC_INVALID_QUEUE_DELETION)
    io_ok(ctrl, sq)


def test_delete_nonexistent_sq(ctrl, io_ok):
    for qid in (0, 1, 2, 0xFFFF):
        expect(ctrl.delete_sq(qid), 1, SC_INVALID_QID)
    io_ok(ctrl)


def test_delete_nonexistent_cq(ctrl, io_ok):
    for qid in (0, 1, 2, 0xFFFF):
        expect(ctrl.delete_cq(qid), 1, SC_INVALID_QID)
    io_ok(ctrl)


def test_invalid_interrupt_vector(ctrl, machine, io_ok):
    expect(ctrl.create_cq(1, 16, vector=machine.msix.size), 1, nvme.SC_INVALID_VECTOR)
    expect(ctrl.create_cq(1, 16, vector=0xFFFF), 1, nvme.SC_INVALID_VECTOR)
    io_ok(ctrl)


@pytest.mark.parametrize("which", ["cq", "sq"])
def test_noncontiguous_queue_rejected(ctrl, which, io_ok):
    assert ctrl.cap["cqr"] == 1
    if which == "cq":
        c = ctrl.create_cq(1, 16, pc=False)
    else:
        assert ctrl.create_cq(1, 16).ok
        c = ctrl.create_sq(1, 16, 1, pc=False)
    expect(c, 0, nvme.SC_INVALID_FIELD)
    io_ok(ctrl)


def test_recreate_after_delete(ctrl, io_ok):
    for _ in range(3):
        sq = ctrl.create_io_queues(1, entries=16)
        io_ok(ctrl, sq)
        ctrl.delete_io_queues(1)


def test_full_cq_is_not_overrun(ctrl, rng):
    """With a 4-entry CQ behind a 16-entry SQ, at most 3 completions may sit
    unconsumed; the rest must wait for CQ head doorbells, none lost."""
    assert ctrl.create_cq(1, 4).ok
    sq = ctrl.create_io_queues(1, entries=16, cqid=1)
    cq = ctrl.cqs[1]
    bs = ctrl.block_size(1)
    cids = [ctrl.queue_cmd(sq, ctrl.rw_cmd(nvme.IO_WRITE, 1, 50 + i, 1,
                                          prp1=ctrl.buffer(bs, rng.randbytes(bs))))
            for i in range(10)]
    ctrl.ring_sq(sq)
    time.sleep(0.1)
    raw = ctrl.qt.memread(cq.addr, 4 * 16)
    posted = [raw[16 * i + 14] & 1 for i in range(4)]
    # exactly as many as fit: the device did post, and did not overwrite
    assert posted == [1, 1, 1, 0], "CQ phase tags %s" % posted
    for cid in cids:
        assert ctrl.wait(sq, cid).ok
