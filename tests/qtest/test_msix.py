"""MSI-X: each CQ's vector gets the message when its completions post.

conftest programs every table entry to write a distinct value into a RAM
slot, so a test reads the slot to see which vector fired."""

import time



def clear_all(msix):
    for v in msix.slots:
        msix.clear(v)


def test_admin_queue_uses_vector_0(ctrl, machine):
    clear_all(machine.msix)
    assert ctrl.identify(1)[0].ok
    assert machine.msix.wait(0)


def test_each_queue_signals_its_own_vector(ctrl, machine, io_ok):
    msix = machine.msix
    n = min(machine.cfg.queues, msix.size - 1, 4)
    assert n >= 2, "need two I/O vectors"
    sqs = [ctrl.create_io_queues(q, entries=16, vector=q) for q in range(1, n + 1)]
    for sq in sqs:
        clear_all(msix)
        io_ok(ctrl, sq, slba=sq.qid)
        assert msix.wait(sq.qid), "vector %d did not fire" % sq.qid
        # io_ok makes two completions: let this queue's later interrupt land before the
        # next round clears the slots, or it would look like another queue's
        time.sleep(0.2)
        others = [v for v in range(1, n + 1) if v != sq.qid and msix.fired(v)]
        assert not others, "queue %d fired vectors %r" % (sq.qid, others)


def test_shared_vector(ctrl, machine, io_ok):
    msix = machine.msix
    sq1 = ctrl.create_io_queues(1, entries=16, vector=1)
    sq2 = ctrl.create_io_queues(2, entries=16, vector=1)
    for sq in (sq1, sq2):
        clear_all(msix)
        io_ok(ctrl, sq)
        assert msix.wait(1)
        assert not msix.fired(2)


def test_interrupts_disabled_queue_sends_nothing(ctrl, machine, io_ok):
    msix = machine.msix
    sq = ctrl.create_io_queues(1, entries=16, vector=1, ien=False)
    clear_all(msix)
    io_ok(ctrl, sq)
    time.sleep(0.05)
    assert not msix.fired(1)


def test_masked_vector_is_pending_then_delivered(ctrl, machine, io_ok):
    msix = machine.msix
    sq = ctrl.create_io_queues(1, entries=16, vector=1)
    msix.mask(1)
    try:
        clear_all(msix)
        bs = ctrl.block_size(1)
        assert ctrl.write(sq, 1, 0, bytes(bs)).ok
        time.sleep(0.05)
        assert not msix.fired(1)
        assert msix.pending(1)
    finally:
        msix.mask(1, False)
    # Unmasking sends the pending message (PCI rule).
    assert msix.wait(1)
    assert not msix.pending(1)
    io_ok(ctrl, sq)
