"""The controller's front end (pcie_gen, pcie_lanes, fw_cores, fw_cmd_ns): a nossd drive,
which has no media time, so that what a command costs is the front end's alone. Times are
stretched by time_scale=1000. The drive runs with dataplane=main-loop: model time is the
virtual clock, which stands still under qtest unless the test steps it, so the commands
arrive at one instant and complete at the model's times exactly, however busy the host.

Link: PCIe gen 1 x1, 250 MB/s: 64 KiB cross in 262 us, 262 ms scaled. Two reads queue on
the link to the host; a write at the same time crosses the other way, beside them.
Firmware: 100 us per command (100 ms scaled) on 1 or 2 cores."""

import pytest

import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's model")

X64K = 65536 * 1000 // 250 * 1000       # ns: 262 ms
FW = 100_000_000                        # ns


def run(tmp_path, extra, submit):
    """The virtual ns, from their common arrival, at which submit()'s commands complete."""
    m = qtest_machine.start_machine(DevConfig(mode=2, size_mb=16, extra=(
        "dataplane=main-loop,time_scale=1000," + extra)), str(tmp_path))
    try:
        ctrl = m.ctrl
        ctrl.enable()
        sq = ctrl.create_io_queues(1, entries=16)
        done = ctrl.virtual_times(lambda: [(sq, c) for c in submit(ctrl, sq)],
                                  limit_ns=10 * X64K)
        assert all(c.ok for c, _ in done), done
        return ctrl, [t for _, t in done]
    finally:
        m.close()


def write_cmd(ctrl, sq, slba, nbytes):
    addr = ctrl.buffer(nbytes, bytes(nbytes))
    p1, p2 = ctrl.prps(addr, nbytes)
    return ctrl.submit(sq, ctrl.rw_cmd(0x01, 1, slba, nbytes // 512, prp1=p1, prp2=p2))


def test_link_carries_data_each_way(tmp_path):
    def submit(ctrl, sq):
        return [ctrl.submit_read(sq, 1, 0, 128), ctrl.submit_read(sq, 1, 128, 128),
                write_cmd(ctrl, sq, 256, 65536)]
    _, t = run(tmp_path, "pcie_gen=1,pcie_lanes=1", submit)
    # reads: one link time, then two; the write beside the first
    assert t == [X64K, 2 * X64K, X64K], t


@pytest.mark.parametrize("cores,want", [(1, (1, 2, 3)), (2, (1, 1, 2))])
def test_firmware_cores(tmp_path, cores, want):
    def submit(ctrl, sq):
        return [ctrl.submit_read(sq, 1, 8 * i, 8) for i in range(3)]
    _, t = run(tmp_path, "fw_cores=%d,fw_cmd_ns=100000" % cores, submit)
    assert t == [w * FW for w in want], (t, cores)
