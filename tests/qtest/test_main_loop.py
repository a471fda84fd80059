"""dataplane=main-loop: no device thread; commands run in a bottom half of QEMU's main loop
and model time is the virtual clock. Under qtest that clock moves only when the test steps
it, so a read waiting for the flash completes exactly when the clock reaches its deadline,
never because host time passed; under TCG the clock runs with the VM. A machine reset or
a controller reset leaves nothing scheduled that could post into the old queues.

The drive is a blackbox SSD whose page read takes 200 ms; a read of a never-written page
costs one page read, and the channel is free (ch_xfer_lat=0)."""

import time

import pytest

import nvme
import qtest_machine
from qtest import QTestError
from qtest_machine import DevConfig, start_machine

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's dataplane")

READ_NS = 200_000_000
DEV = DevConfig(mode=1, size_mb=16, extra=(
    "dataplane=main-loop,nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=50,flash_type=1,"
    "pg_rd_lat=%d,pg_wr_lat=100000,blk_er_lat=100000,ch_xfer_lat=0" % READ_NS))
PAGE_LBAS = 8               # one 4 KiB page in 512-byte LBAs
UNWRITTEN = 1024            # an LBA no test writes


def cq_entries(ctrl, cq, seconds):
    """Completions found in cq within `seconds` of host time, the clock left alone."""
    end = time.monotonic() + seconds
    found = 0
    while True:
        found += ctrl.reap(cq)
        if found or time.monotonic() > end:
            return found
        time.sleep(0.005)


@pytest.fixture
def idle_flash(machine):
    """Every chip idle: the virtual clock past anything an earlier test left waiting."""
    machine.qt.clock_step(4 * READ_NS)


def test_io_round_trip(ctrl, ioq, io_ok):
    io_ok(ctrl, ioq, slba=64)
    c, back = ctrl.read(ioq, 1, UNWRITTEN + 64, 1)
    assert c.ok and back == bytes(512)


def test_timed_read_completes_when_the_clock_says(machine, idle_flash, ctrl, ioq):
    """Host time does not complete it; the virtual clock one nanosecond short of the
    deadline does not either; the last nanosecond does."""
    qt = machine.qt
    t0 = qt.clock_step(1)
    ctrl.submit_read(ioq, 1, UNWRITTEN, PAGE_LBAS)
    assert cq_entries(ctrl, ioq.cq, 2 * READ_NS / 1e9) == 0
    assert qt.clock_step(READ_NS - 1) == t0 + READ_NS - 1
    assert cq_entries(ctrl, ioq.cq, 0.1) == 0
    assert qt.clock_step(1) == t0 + READ_NS
    assert cq_entries(ctrl, ioq.cq, 5) == 1
    (c,) = ioq.cq.done.values()
    assert c.ok, c


def test_shadow_doorbells_ring_for_every_command(ctrl, ioq, io_ok):
    """Nothing polls the shadow tails: after each pass the event index asks for the MMIO
    doorbell of the next submission."""
    ctrl.dbbuf_config()
    for i in range(4):
        skipped = ctrl.skipped_doorbells
        cid = ctrl.submit(ioq, nvme.cmd(nvme.IO_FLUSH, nsid=1))
        assert ctrl.skipped_doorbells == skipped, "SQ doorbell of command %d skipped" % i
        assert ctrl.wait(ioq, cid).ok
    io_ok(ctrl, ioq)


def pending_read(machine, ctrl, ioq):
    """A read waiting for the flash, due at the returned virtual time."""
    t0 = machine.qt.clock_step(1)
    ctrl.submit_read(ioq, 1, UNWRITTEN + 8, PAGE_LBAS)
    assert cq_entries(ctrl, ioq.cq, 0.2) == 0
    return t0 + READ_NS


def next_deadline(qt):
    """The virtual time of the next timer, or None when no timer is pending."""
    try:
        return qt.clock_step()
    except QTestError:
        return None


def test_no_wakeups_while_a_read_waits(machine, idle_flash, ctrl, ioq):
    """With a command due, the device's timer is the command's: the background-time tick
    (1 ms after the last work), once past, must not re-arm the timer in the past over and
    over (a main loop spinning until the deadline; here, steps of no time). Other devices'
    timers of the machine may come in between."""
    qt = machine.qt
    due = pending_read(machine, ctrl, ioq)
    t = due - READ_NS       # the read's arrival
    while not cq_entries(ctrl, ioq.cq, 0.01):
        last, t = t, next_deadline(qt)
        assert t is not None and t > last, "the clock stepped by nothing at %d" % last
        assert t <= due
    assert t == due


def after_reset_nothing_posts(machine, ioq):
    """The reset read's deadline passes: its CQ slot stays empty, and the controller
    works again with its timing intact."""
    qt = machine.qt
    cq_addr = ioq.cq.addr
    qt.clock_step(2 * READ_NS)
    assert qt.memread(cq_addr, 16) == bytes(16)
    assert qt.alive()
    machine.rebind()
    ctrl = machine.ctrl
    ctrl.enable()
    sq = ctrl.create_io_queues(1, entries=64)
    t0 = qt.clock_step(1)
    ctrl.submit_read(sq, 1, UNWRITTEN + 16, PAGE_LBAS)
    assert qt.clock_step(READ_NS - 1) == t0 + READ_NS - 1
    assert cq_entries(ctrl, sq.cq, 0.1) == 0
    qt.clock_step(1)
    assert cq_entries(ctrl, sq.cq, 5) == 1


def test_machine_reset_cancels_the_timer(machine, idle_flash, ctrl, ioq):
    due = pending_read(machine, ctrl, ioq)
    assert machine.qmp("system_reset") == {"return": {}}
    assert next_deadline(machine.qt) != due
    after_reset_nothing_posts(machine, ioq)


def test_controller_reset_drops_the_waiting_read(machine, idle_flash, ctrl, ioq):
    pending_read(machine, ctrl, ioq)
    ctrl.wr32(nvme.REG_CC, 0)
    ctrl.wait_csts(nvme.CSTS_RDY, 0)
    after_reset_nothing_posts(machine, ioq)


def test_tcg_virtual_clock_runs_with_the_vm(tmp_path):
    """Under TCG no one steps the clock: the read completes, after its 200 ms of VM time
    (the model's latency, from the statistics; the host never sees it sooner)."""
    m = start_machine(DevConfig(mode=1, size_mb=16, extra=DEV.extra, accel="tcg"),
                      str(tmp_path))
    try:
        ctrl = m.ctrl
        ctrl.enable()
        sq = ctrl.create_io_queues(1, entries=64)
        for _ in range(2):
            _, model_ns = ctrl.model_timed(
                lambda: ctrl.wait(sq, ctrl.submit_read(sq, 1, UNWRITTEN, PAGE_LBAS)))
            assert model_ns == READ_NS, model_ns
            assert m.qmp("system_reset") == {"return": {}}
            m.rebind()
            ctrl = m.ctrl
            ctrl.enable()
            sq = ctrl.create_io_queues(1, entries=64)
    finally:
        m.close()


def test_random_power_loss_counts_from_reset(tmp_path):
    """plp_fail_interval_ms counts from power-on: a machine reset starts the interval
    again, so what follows a reset does not depend on what came before it (as the fuzzer,
    which resets after every input, needs)."""
    m = start_machine(DevConfig(size_mb=16, extra="plp_fail_interval_ms=50,plp_fail_prob=100"),
                      str(tmp_path))
    try:
        def cut():
            return m.qmp("qom-get", path="/machine/peripheral/femu0",
                         property="power-cut")["return"]
        m.qt.clock_step(40_000_000)
        assert not cut()
        assert m.qmp("system_reset") == {"return": {}}
        m.qt.clock_step(40_000_000)             # 80 ms since the start, 40 since the reset
        assert not cut()
        m.qt.clock_step(11_000_000)
        assert cut()
    finally:
        m.close()
