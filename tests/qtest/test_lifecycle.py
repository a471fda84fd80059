"""The device against the VM's life: stopped and resumed (device review finding 21),
unplugged and quit with commands in flight (finding 20).
"""

import time

import pytest

import nvme
import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's own device")

WRITE_S = 0.050
STOP_S = 0.5
SLOW = ("nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=50,flash_type=1,"
        "pg_rd_lat=100000,pg_wr_lat=50000000,blk_er_lat=100000,ch_xfer_lat=0")
DEV = DevConfig(mode=1, size_mb=16, extra=SLOW)


def cq_entries_posted(ctrl, cq):
    """How many entries after the host's head carry the current phase."""
    n = 0
    while n < cq.size - 1:
        raw = ctrl.qt.memread(cq.addr + ((cq.head + n) % cq.size) * 16, 16)
        if raw[14] & 1 != cq.phase ^ ((cq.head + n) // cq.size):
            break
        n += 1
    return n


def test_stopped_vm_sees_no_dma_and_no_interrupt(ctrl, machine):
    """Finding 21: the device went on after `stop`: it fetched commands, wrote guest RAM
    and raised interrupts while the VM was stopped (e.g. during dump-guest-memory)."""
    sq = ctrl.create_io_queues(1, entries=16)
    data = b"\x21" * 4096
    # one write already waiting for its completion time, one submitted while stopped
    waiting = ctrl.submit(sq, ctrl.rw_cmd(nvme.IO_WRITE, 1, 0, 8,
                                          prp1=ctrl.buffer(4096, data)))
    assert machine.qmp("stop") == {"return": {}}
    vector = sq.cq.vector
    machine.msix.clear(vector)
    ctrl.queue_cmd(sq, ctrl.rw_cmd(nvme.IO_WRITE, 1, 8, 8, prp1=ctrl.buffer(4096, data)))
    ctrl.wr32(ctrl.sq_doorbell(1), sq.tail)
    time.sleep(STOP_S)
    try:
        assert cq_entries_posted(ctrl, sq.cq) == 0, "completion posted while stopped"
        assert not machine.msix.fired(vector), "interrupt while stopped"
        st = machine.qmp("qom-get", path="/machine/peripheral/femu0", property="stats")
        assert st["return"]["host-write-commands"] == 1, "fetched while stopped: %s" % st
    finally:
        assert machine.qmp("cont") == {"return": {}}
    assert ctrl.wait(sq, waiting).ok
    assert machine.msix.wait(vector)
    c, back = ctrl.read(sq, 1, 8, 8)
    assert c.ok and back == data
    st = ctrl.vendor_log()
    assert st["host_write_commands"] == 2
    # the waiting write's time passed while the VM was stopped: that is not lateness
    assert st["lateness_max_ns"] < STOP_S / 2 * 1e9, st


def busy(ctrl, sq, n=12):
    """n slow writes in flight."""
    for i in range(n):
        ctrl.queue_cmd(sq, ctrl.rw_cmd(nvme.IO_WRITE, 1, 8 * i, 8,
                                       prp1=ctrl.buffer(4096, bytes([i]) * 4096)))
    ctrl.ring_sq(sq)


ACPI_PCIHP_EJECT = 0xae08       # PIIX4 ACPI PCI hotplug: eject register of bus 0
SLOT = 4


def test_unplug_with_commands_in_flight(tmp_path):
    """Finding 20: unrealize joins the device thread with the BQL dropped (as QEMU's
    cpu_remove_sync does), since the thread may wait for the BQL to raise an interrupt.
    Unplug (device_del and the guest's ACPI eject) while writes are in flight, again and
    again: QEMU stays up and answers, and the device comes back."""
    cfg = DevConfig(mode=1, size_mb=16, extra=SLOW + ",addr=%d" % SLOT, machine="pc")
    m = qtest_machine.start_machine(cfg, str(tmp_path))
    try:
        ctrl = m.ctrl
        ctrl.enable()
        sq = ctrl.create_io_queues(1, entries=32)
        busy(ctrl, sq)
        time.sleep(WRITE_S / 2)
        for round in range(5):
            assert m.qmp("device_del", id="femu0") == {"return": {}}
            m.qt.outl(ACPI_PCIHP_EJECT, 1 << SLOT)
            deadline = time.monotonic() + 10
            while m.qmp("qom-list", path="/machine/peripheral").get("return") and any(
                    p["name"] == "femu0"
                    for p in m.qmp("qom-list", path="/machine/peripheral")["return"]):
                assert time.monotonic() < deadline, "femu0 was not unplugged"
                time.sleep(0.05)
            assert m.qmp("query-status")["return"]["status"] == "running"
            props = {k: int(v) for k, v in (p.split("=") for p in SLOW.split(","))}
            r = m.qmp("device_add", args_dict=dict(props, driver="femu", id="femu0",
                                                   femu_mode=1, devsz_mb=16,
                                                   addr=str(SLOT)))
            assert r == {"return": {}}, r
            m.rebind()
            ctrl = m.ctrl
            ctrl.enable()
            sq = ctrl.create_io_queues(1, entries=32)
            busy(ctrl, sq)
            time.sleep(WRITE_S / 2 * (round % 2))
        assert ctrl.wait(sq, max(sq.outstanding)).ok
    finally:
        m.close()


def test_quit_with_commands_in_flight(tmp_path):
    """QEMU quits cleanly while the device thread has commands waiting."""
    m = qtest_machine.start_machine(DevConfig(mode=1, size_mb=16, extra=SLOW), str(tmp_path))
    ctrl = m.ctrl
    ctrl.enable()
    sq = ctrl.create_io_queues(1, entries=32)
    busy(ctrl, sq)
    time.sleep(WRITE_S / 2)
    m.qmp("quit")
    deadline = time.monotonic() + 10
    while m.qt.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not m.qt.alive(), "QEMU did not quit"
    m.close()
