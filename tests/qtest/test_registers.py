"""Controller registers: CAP, VS, CC/CSTS enable, disable and shutdown."""

import time

import nvme
from nvme import REG_VS, REG_CC, REG_CSTS, REG_AQA, REG_ASQ, REG_ACQ


def test_pci_class_and_msix(machine):
    assert machine.pci.class_code == 0x010802
    assert machine.msix.size >= 1
    assert machine.pci.bars[0][1] >= 0x2000, "BAR0 must hold registers and doorbells"


def test_cap(ctrl, machine):
    cap = ctrl.cap
    assert cap["mqes"] + 1 == machine.cfg.entries, "MQES is 0's based"
    assert cap["cqr"] == 1
    assert cap["dstrd"] == 0
    assert cap["to"] > 0
    assert cap["css"] & 0x01, "NVM command set"
    assert cap["css"] & 0x40, "I/O command sets supported (CSS bit 6)"
    assert cap["mpsmin"] == 0, "4 KiB minimum page size"
    assert cap["mpsmax"] >= cap["mpsmin"]


def test_version_1_4(ctrl):
    assert ctrl.rd32(REG_VS) == 0x00010400


def test_rdy_follows_en(ctrl):
    assert ctrl.rd32(REG_CSTS) & nvme.CSTS_RDY
    ctrl.disable()
    assert not ctrl.rd32(REG_CSTS) & nvme.CSTS_RDY
    assert not ctrl.rd32(REG_CC) & nvme.CC_EN
    ctrl.enable()
    assert ctrl.rd32(REG_CSTS) & (nvme.CSTS_RDY | nvme.CSTS_CFS) == nvme.CSTS_RDY
    assert ctrl.id_ctrl()["vid"] == ctrl.pci.vendor_id


def test_admin_queue_registers_read_back(ctrl):
    ctrl.disable()
    ctrl.wr32(REG_AQA, 0x000F0007)
    ctrl.wr64(REG_ASQ, 0x12345000)
    ctrl.wr64(REG_ACQ, 0x2345000 << 4)
    assert ctrl.rd32(REG_AQA) & 0x0FFF0FFF == 0x000F0007
    assert ctrl.rd64(REG_ASQ) == 0x12345000
    assert ctrl.rd64(REG_ACQ) == 0x2345000 << 4


def test_small_admin_queue_wraps(ctrl):
    ctrl.enable(aq_entries=4)
    vid = ctrl.pci.vendor_id
    for i in range(11):  # wraps the queues and flips the phase tag twice
        c, data = ctrl.identify(1, check=False)
        assert c.ok, (i, c)
        assert c.sqhd == (i + 1) % 4, (i, c.sqhd)
        assert nvme.parse_id_ctrl(data)["vid"] == vid, i


def test_io_queue_wraps(ctrl, io_ok, rng):
    sq = ctrl.create_io_queues(1, entries=4)
    for i in range(13):
        data = rng.randbytes(512)
        assert ctrl.write(sq, 1, i, data).ok
        c, back = ctrl.read(sq, 1, i, 1)
        assert c.ok and back == data


def test_doorbell_stride_on_higher_queue(ctrl, machine, io_ok):
    qid = min(3, machine.cfg.queues)
    sq = ctrl.create_io_queues(qid, entries=16)
    io_ok(ctrl, sq)
    assert ctrl.sq_doorbell(qid) == 0x1000 + 8 * qid


def test_disable_tears_down_queues(ctrl, io_ok):
    sq = ctrl.create_io_queues(1, entries=16)
    io_ok(ctrl, sq)
    ctrl.disable()
    ctrl.enable()
    # CQ 1 is gone: an SQ cannot attach to it ...
    c = ctrl.create_sq(1, 16, 1)
    assert c.is_(1, nvme.SC_CQ_INVALID), c
    # ... and both ids are free again.
    io_ok(ctrl, ctrl.create_io_queues(1, entries=16))


def test_normal_shutdown(ctrl, io_ok):
    sq = ctrl.create_io_queues(1, entries=16)
    io_ok(ctrl, sq)
    csts = ctrl.shutdown()
    assert csts & nvme.CSTS_SHST_MASK == nvme.CSTS_SHST_COMPLETE
    # A reset brings it back with SHST cleared.
    ctrl.disable()
    ctrl.enable()
    assert ctrl.rd32(REG_CSTS) & nvme.CSTS_SHST_MASK == 0
    io_ok(ctrl)


def test_disable_with_commands_in_flight(ctrl, rng, io_ok):
    """A reset with queued I/O stops cleanly: RDY drops and nothing is
    written to the old completion queue afterwards."""
    sq = ctrl.create_io_queues(1, entries=64)
    bs = ctrl.block_size(1)
    for i in range(32):
        ctrl.queue_cmd(sq, ctrl.rw_cmd(nvme.IO_WRITE, 1, 900 + i, 1,
                                       prp1=ctrl.buffer(bs, rng.randbytes(bs))))
    cq = sq.cq
    # Ring and disable back to back, before the device can drain the queue.
    ctrl.qt.cmds(["writel 0x%x 0x%x" % (ctrl.bar + ctrl.sq_doorbell(1), sq.tail),
                  "writel 0x%x 0x%x" % (ctrl.bar + REG_CC, ctrl.rd32(REG_CC) & ~nvme.CC_EN)])
    ctrl.wait_csts(nvme.CSTS_RDY, 0)
    snap = ctrl.qt.memread(cq.addr, cq.size * 16)
    time.sleep(0.1)
    assert ctrl.qt.memread(cq.addr, cq.size * 16) == snap
    ctrl.enable()
    io_ok(ctrl)
