"""What a careless or hostile host can do to the controller and its device thread
(device review findings 6, 7, 8, 11, 13, 14, 15, 16, 17). Each test names its finding.

The drive is a small blackbox whose writes take 30 ms of model time, so that commands
really wait for their completion time while the host does something else.
"""

import struct
import time

import pytest

import nvme
import qtest_machine
from nvme import cmd
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's own device")

WRITE_S = 0.030
DEV = DevConfig(mode=1, size_mb=16, extra=(
    "nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=50,flash_type=1,"
    "pg_rd_lat=100000,pg_wr_lat=30000000,blk_er_lat=100000,ch_xfer_lat=0"))
BS = 512


def assert_idle(machine, what):
    # the device's own count of its passes and sleeps, whatever else the host runs
    qtest_machine.assert_device_sleeps(machine, 1.0, what)


def write_cmd(ctrl, slba, data):
    return ctrl.rw_cmd(nvme.IO_WRITE, 1, slba, len(data) // BS,
                       prp1=ctrl.buffer(len(data), data))


def test_fatal_status_with_commands_waiting_leaves_the_cpu_alone(ctrl, machine):
    """Finding 6: the controller fails (its SQ becomes unreadable when bus mastering is
    switched off) while writes wait for their completion time: the device thread used to
    spin on their passed deadlines forever."""
    sq = ctrl.create_io_queues(1, entries=16)
    for i in range(4):
        ctrl.submit(sq, write_cmd(ctrl, 8 * i, bytes([i]) * 4096))
    machine.pci.enable_bus_master(False)
    try:
        ctrl.submit(sq, write_cmd(ctrl, 64, bytes(4096)))
        ctrl.wait_csts(nvme.CSTS_CFS, nvme.CSTS_CFS, timeout=5)
        time.sleep(4 * WRITE_S)         # every deadline has passed
        assert_idle(machine, "after a controller fatal status")
    finally:
        machine.pci.enable_bus_master(True)
    ctrl.enable()                       # a reset brings it back
    assert ctrl.identify(1)[0].ok


def test_out_of_range_shadow_tail_is_no_work(ctrl, machine, io_ok):
    """Finding 7a: a shadow SQ tail beyond the queue was refused, yet compared with the
    device's tail at every look, so the thread never slept."""
    sq = ctrl.create_io_queues(1, entries=16)
    aer = ctrl.submit(ctrl.admin, cmd(nvme.ADM_ASYNC_EVENT))
    assert ctrl.dbbuf_config().ok
    ctrl.qt.writel(sq.shadow_db, 0xFFFF)
    ctrl.wr32(ctrl.sq_doorbell(1), 0xFFFF)          # and the MMIO one, to wake it
    c = ctrl.wait(ctrl.admin, aer, timeout=5)
    assert c.ok and c.dw0 & 0x7 == 0 and (c.dw0 >> 8) & 0xFF == 0x01, c  # invalid value
    time.sleep(0.05)
    assert_idle(machine, "with an out-of-range shadow tail")
    ctrl.qt.writel(sq.shadow_db, sq.tail)
    ctrl.get_log_page(nvme.LOG_ERROR, 64)
    io_ok(ctrl, sq)


def sq_on_tiny_cq(ctrl):
    """I/O SQ 1 on a CQ of 2 entries, which holds one completion: (sq, CQ address)."""
    cq_addr = ctrl.alloc.alloc(4096)
    ctrl.qt.memset(cq_addr, 4096, 0)
    assert ctrl.create_cq(1, 2, addr=cq_addr).ok
    assert ctrl.create_sq(1, 8, 1).ok
    return ctrl.sqs[1], cq_addr


def test_full_cq_with_shadow_doorbells_is_no_work(ctrl, machine):
    """Finding 7b: a CQ of 2 entries, 3 commands, the host never moves the CQ head: the
    completions that do not fit used to count as work at every look."""
    sq, cq_addr = sq_on_tiny_cq(ctrl)
    assert ctrl.dbbuf_config().ok
    for i in range(3):
        ctrl.queue_cmd(sq, cmd(nvme.IO_FLUSH, nsid=1))
    ctrl.ring_sq(sq)
    ctrl.wr32(ctrl.sq_doorbell(1), sq.tail)
    time.sleep(0.2)
    # one completion fits (a CQ of 2 holds 1); the others wait for room
    first = ctrl.qt.memread(cq_addr, 32)
    assert first[14] & 1 and not first[30] & 1
    assert_idle(machine, "with completions waiting for room in a CQ")


def test_doorbell_buffer_config_starts_from_the_doorbells(ctrl, machine):
    """Finding 8: a zeroed shadow buffer configured after commands went through the MMIO
    doorbells: the device read tail 0 and ran stale entries 5..15 again."""
    sq = ctrl.create_io_queues(1, entries=16)
    for i in range(5):
        assert ctrl.execute(sq, cmd(nvme.IO_FLUSH, nsid=1)).ok
    # stale but valid-looking entries after the tail: a write of zeroes over LBA 0..7
    data = b"\x77" * 4096
    assert ctrl.write(sq, 1, 0, data).ok
    ring = sq.addr + 64 * sq.tail
    for k in range(sq.tail, sq.size):
        ctrl.qt.memwrite(sq.addr + 64 * k, bytes(ctrl.rw_cmd(nvme.IO_WRITE_ZEROES, 1, 0, 8)))
    dbs, eis = ctrl.alloc.alloc(4096), ctrl.alloc.alloc(4096)
    ctrl.qt.memset(dbs, 4096, 0)
    ctrl.qt.memset(eis, 4096, 0)
    assert ctrl.admin_cmd(cmd(nvme.ADM_DBBUF_CONFIG, prp1=dbs, prp2=eis)).ok
    assert ring == sq.addr + 64 * sq.tail
    assert struct.unpack("<II", ctrl.qt.memread(dbs + 8, 8)) == (sq.tail, sq.cq.head), \
        "the shadow doorbells must hold what the MMIO ones held"
    time.sleep(0.2)
    assert ctrl.reap(sq.cq) == 0, "completions of commands the host never submitted"
    ctrl.qt.writel(dbs + 8, sq.tail)                 # go on through the shadow
    ctrl.sqs[1].shadow_db, ctrl.sqs[1].shadow_ei = dbs + 8, eis + 8
    ctrl.cqs[1].shadow_db, ctrl.cqs[1].shadow_ei = dbs + 12, eis + 12
    c, back = ctrl.read(sq, 1, 0, 8)
    assert c.ok and back == data


def test_abort_of_an_executed_command_does_not_abort_it(ctrl):
    """Finding 11 (Abort): a write waiting for its completion time has happened; Abort
    used to complete it as aborted, so the host would think the data was not written."""
    sq = ctrl.create_io_queues(1, entries=16)
    data = b"\x5c" * 4096
    cid = ctrl.submit(sq, write_cmd(ctrl, 16, data))
    time.sleep(0.005)
    c = ctrl.admin_cmd(cmd(nvme.ADM_ABORT, cdw10=cid << 16 | 1))
    assert c.ok and c.dw0 & 1, "bit 0 set: not aborted (%r)" % c
    w = ctrl.wait(sq, cid)
    assert w.ok, w
    c, back = ctrl.read(sq, 1, 16, 8)
    assert c.ok and back == data


def test_abort_of_a_held_aer(ctrl):
    """The one command that can be aborted: an AER, held with no effect yet."""
    aer = ctrl.submit(ctrl.admin, cmd(nvme.ADM_ASYNC_EVENT))
    c = ctrl.admin_cmd(cmd(nvme.ADM_ABORT, cdw10=aer << 16 | 0))
    assert c.ok and not c.dw0 & 1, c
    a = ctrl.wait(ctrl.admin, aer)
    assert a.code == (nvme.SCT_GENERIC, 0x07), a      # Command Abort Requested


def test_delete_sq_completes_waiting_writes_as_done(ctrl, machine):
    """Delete I/O SQ while writes wait: they happened, so they complete with success."""
    sq = ctrl.create_io_queues(1, entries=16)
    datas = [bytes([0x40 + i]) * 4096 for i in range(3)]
    fetched = machine.stats()["host_write_commands"] + len(datas)
    cids = [ctrl.submit(sq, write_cmd(ctrl, 8 * i, d)) for i, d in enumerate(datas)]
    # the device took them (a busy host may run its thread only after the Delete came,
    # which then finds them still in the SQ)
    give_up = time.monotonic() + 10
    while machine.stats()["host_write_commands"] < fetched:
        assert time.monotonic() < give_up, "the writes were never fetched"
        time.sleep(0.001)
    assert ctrl.delete_sq(1).ok
    ctrl.reap(sq.cq)
    got = {cid: sq.cq.done.pop((1, cid)) for cid in cids}
    assert all(c.ok for c in got.values()), got
    assert ctrl.delete_cq(1).ok
    sq = ctrl.create_io_queues(1, entries=16)
    for i, d in enumerate(datas):
        c, back = ctrl.read(sq, 1, 8 * i, 8)
        assert c.ok and back == d


def test_aers_cannot_take_every_admin_slot(ctrl):
    """Finding 15: an admin SQ of 2 entries and 2 AERs held: the next admin command was
    never fetched, because the AERs held every request the queue had."""
    ctrl.enable(aq_entries=2)
    aers = []
    for _ in range(2):
        aers.append(ctrl.submit(ctrl.admin, cmd(nvme.ADM_ASYNC_EVENT)))
        time.sleep(0.1)
        ctrl.admin.head = ctrl.admin.tail   # fetched: held AERs post no completion to say so
    c, _ = ctrl.identify(1, check=False)
    assert c.ok, c
    for a in aers:
        assert ctrl.try_wait(ctrl.admin, a, 0.05) is None


def test_reset_clears_the_temperature_warning(ctrl):
    """Finding 14: a temperature threshold below the sensor sets the SMART warning; a
    controller reset restores the default threshold, so the warning must go."""
    assert ctrl.set_features(nvme.FEAT_TEMP_THRESH, 300).ok      # over-temp at 300 K
    c, log = ctrl.get_log_page(nvme.LOG_SMART, 512)
    assert c.ok and log[0] & 0x2, "temperature warning set"
    ctrl.enable()
    c, log = ctrl.get_log_page(nvme.LOG_SMART, 512)
    assert c.ok and not log[0] & 0x2, "warning left from before the reset: %#x" % log[0]


def test_doorbell_of_a_queue_that_does_not_exist(ctrl, io_ok):
    """Finding 17: queue 5 is in range but was never created: writing its doorbell is an
    Invalid Doorbell Register event, as for a queue beyond the range."""
    aer = ctrl.submit(ctrl.admin, cmd(nvme.ADM_ASYNC_EVENT))
    ctrl.wr32(ctrl.sq_doorbell(5), 1)
    c = ctrl.wait(ctrl.admin, aer, timeout=5)
    assert c.ok and c.dw0 & 0x7 == 0 and (c.dw0 >> 8) & 0xFF == 0x00, c
    ctrl.get_log_page(nvme.LOG_ERROR, 64)
    io_ok(ctrl)


def test_eight_byte_doorbell_write_is_two_doorbells(ctrl):
    """Finding 17: one 8-byte write over SQ 1's tail and CQ 1's head sets both; the upper
    half used to be dropped. A CQ of 2 holds one completion: the second command's
    completion comes only once the head written in the upper half makes room."""
    sq, cq_addr = sq_on_tiny_cq(ctrl)
    ctrl.queue_cmd(sq, cmd(nvme.IO_FLUSH, nsid=1))
    ctrl.queue_cmd(sq, cmd(nvme.IO_FLUSH, nsid=1))
    ctrl.qt.writeq(ctrl.bar + ctrl.sq_doorbell(1), 0 << 32 | sq.tail)     # one access
    time.sleep(0.1)
    first = ctrl.qt.memread(cq_addr, 32)
    assert first[14] & 1 and not first[30] & 1, "one completion, the other waits for room"
    ctrl.qt.writeq(ctrl.bar + ctrl.sq_doorbell(1), 1 << 32 | sq.tail)     # CQ head 1 above
    deadline = time.monotonic() + 5
    while not ctrl.qt.memread(cq_addr + 16, 16)[14] & 1:
        assert time.monotonic() < deadline, "the CQ head in the upper half was dropped"
        time.sleep(0.01)
    ctrl.enable()


def test_register_reads_of_every_width_agree(ctrl):
    """Finding 16: registers are read byte for byte from little-endian values, so 4-byte
    halves and 8-byte reads agree (the old memcpy was right on little-endian hosts only)."""
    readq = lambda off: ctrl.qt.readq(ctrl.bar + off)      # one 8-byte access
    for reg in (nvme.REG_CAP, nvme.REG_ASQ, nvme.REG_ACQ):
        assert readq(reg) == ctrl.rd32(reg) | ctrl.rd32(reg + 4) << 32, hex(reg)
    assert ctrl.rd32(nvme.REG_VS) == 0x00010400
    assert readq(nvme.REG_VS) == 0x00010400 | ctrl.rd32(nvme.REG_INTMS) << 32
    assert readq(nvme.REG_ASQ) == ctrl.sqs[0].addr and readq(nvme.REG_ACQ) == ctrl.cqs[0].addr


def intx_asserted(machine):
    return bool(machine.pci.cfg_read16(0x06) & 0x08)      # PCI Status: Interrupt Status


def wait_intx(machine, level, timeout=5):
    deadline = time.monotonic() + timeout
    while intx_asserted(machine) != level:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_aer_with_intx(ctrl, machine):
    """Finding 13: with INTx, the heads are read before the interrupt is decided, so an
    event that reading a head posts (an invalid doorbell value) is in the decision."""
    cap = machine.msix.cap
    pci = machine.pci
    msix_ctl = pci.cfg_read16(cap + 2)
    pci.cfg_write16(cap + 2, msix_ctl & ~0x8000)
    pci.cfg_write16(0x04, pci.cfg_read16(0x04) & ~0x400)          # INTx on
    try:
        ctrl.enable()
        sq = ctrl.create_io_queues(1, entries=16)
        aer = ctrl.submit(ctrl.admin, cmd(nvme.ADM_ASYNC_EVENT))
        assert wait_intx(machine, False), "INTx asserted with nothing to report"
        ctrl.wr32(ctrl.sq_doorbell(1), 100)
        assert wait_intx(machine, True), "no INTx for the event"
        c = ctrl.wait(ctrl.admin, aer)              # reads the entry, moves the head
        assert c.ok and (c.dw0 >> 8) & 0xFF == 0x01, c
        assert wait_intx(machine, False), "INTx stays asserted after the host read it"
        ctrl.wr32(ctrl.sq_doorbell(1), sq.tail)
        assert ctrl.get_log_page(nvme.LOG_ERROR, 64)[0].ok
    finally:
        pci.cfg_write16(0x04, pci.cfg_read16(0x04) | 0x400)
        pci.cfg_write16(cap + 2, msix_ctl)
        ctrl.enable()
