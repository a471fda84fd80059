"""Abort, Asynchronous Event Request, Doorbell Buffer Config, bad opcodes."""

import nvme
from nvme import cmd


def test_abort_command_not_found(ctrl, io_ok):
    c = ctrl.admin_cmd(cmd(nvme.ADM_ABORT, cdw10=0xBEEF << 16 | 0))
    assert c.ok, c
    assert c.dw0 & 1, "bit 0 set: command not aborted"
    sq = ctrl.create_io_queues(1)
    c = ctrl.admin_cmd(cmd(nvme.ADM_ABORT, cdw10=0x1234 << 16 | 1))
    assert c.ok and c.dw0 & 1, c
    io_ok(ctrl, sq)


def test_aer_limit(ctrl, io_ok):
    aerl = ctrl.id_ctrl()["aerl"]
    cids = [ctrl.submit(ctrl.admin, cmd(nvme.ADM_ASYNC_EVENT)) for _ in range(aerl + 1)]
    # Nothing happened yet, so they all stay outstanding.
    assert ctrl.identify(1)[0].ok
    for cid in cids:
        assert ctrl.try_wait(ctrl.admin, cid, 0.05) is None, "AER completed with no event"
    c = ctrl.admin_cmd(cmd(nvme.ADM_ASYNC_EVENT))
    assert c.is_(1, nvme.SC_AER_LIMIT), c
    io_ok(ctrl)


def test_aer_reports_invalid_doorbell(ctrl, machine, io_ok):
    """An SQ tail beyond the queue raises an error event (Invalid Doorbell Write Value,
    Error Information log); the queue keeps working at its old tail."""
    cid = ctrl.submit(ctrl.admin, cmd(nvme.ADM_ASYNC_EVENT))
    sq = ctrl.create_io_queues(1, entries=16)
    ctrl.wr32(ctrl.sq_doorbell(1), 100)       # beyond the 16-entry queue
    c = ctrl.try_wait(ctrl.admin, cid, 2.0)
    assert c is not None, "no asynchronous event for an invalid doorbell value"
    assert c.ok, c
    assert c.dw0 & 0x7 == 0, "event type: error status"
    assert (c.dw0 >> 8) & 0xFF == 0x01, "event information: invalid doorbell write value"
    assert (c.dw0 >> 16) & 0xFF == nvme.LOG_ERROR
    # reading the log (RAE clear) re-arms the event type: a second bad value reports again
    assert ctrl.get_log_page(nvme.LOG_ERROR, 64)[0].ok
    cid = ctrl.submit(ctrl.admin, cmd(nvme.ADM_ASYNC_EVENT))
    ctrl.wr32(ctrl.sq_doorbell(1), 200)
    c = ctrl.try_wait(ctrl.admin, cid, 2.0)
    assert c is not None and c.ok and c.dw0 & 0xFFFF07 == 0x010100, c
    ctrl.wr32(ctrl.sq_doorbell(1), sq.tail)     # back to the real tail
    io_ok(ctrl, sq)


def test_dbbuf_config_unaligned(ctrl, io_ok):
    a = ctrl.alloc.alloc(2 * 4096)
    b = ctrl.alloc.alloc(2 * 4096)
    for dbs, eis in ((a + 8, b), (a, b + 0x800), (a + 4, b + 4)):
        c = ctrl.admin_cmd(cmd(nvme.ADM_DBBUF_CONFIG, prp1=dbs, prp2=eis))
        assert c.is_(0, nvme.SC_INVALID_FIELD), c
    io_ok(ctrl)


def test_unknown_admin_opcode(ctrl, io_ok):
    for opc in (0x3F, 0x7E, 0xBF):
        c = ctrl.admin_cmd(cmd(opc))
        assert c.is_(0, nvme.SC_INVALID_OPCODE), (hex(opc), c)
    io_ok(ctrl)

