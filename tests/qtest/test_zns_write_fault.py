"""A zone write whose data cannot be fetched changes no zone: Data Transfer Error, the
write pointer and the state as before, nothing saved, and the blocks read as zeroes --
for a Write and a Zone Append into an Empty zone, and a Write into an opened one, with
the PRP list's second data page outside guest RAM."""

import pytest

import nvme
import qtest_machine
from nvme import SCT_GENERIC, SC_DATA_XFER_ERROR, ZS_EMPTY, ZS_IMPLICIT_OPEN
from qtest import PAGE
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

DEV = DevConfig(mode=3, size_mb=16, extra="zns_zone_size_mb=1")
ZONE = (1 << 20) // 512
OUTSIDE = 0x40000000             # 1 GiB: above the 256 MiB of guest RAM, nothing there


def faulty_write(ctrl, sq, opc, slba, nblocks):
    """nblocks (three pages) whose PRP list holds a page outside RAM second."""
    buf = ctrl.buffer(nblocks * 512, b"\x77" * nblocks * 512)
    lst = ctrl.alloc.alloc(PAGE)
    ctrl.qt.memwrite(lst, (buf - buf % PAGE + PAGE).to_bytes(8, "little") +
                     OUTSIDE.to_bytes(8, "little"))
    sqe = ctrl.rw_cmd(opc, 1, slba, nblocks, prp1=buf, prp2=lst)
    return ctrl.execute(sq, sqe)


@pytest.mark.parametrize("opc", [nvme.IO_WRITE, nvme.IO_ZONE_APPEND], ids=["write", "append"])
def test_failed_transfer_into_an_empty_zone(ctrl, zq, opc):
    c = faulty_write(ctrl, zq, opc, 2 * ZONE, 24)
    assert c.code == (SCT_GENERIC, SC_DATA_XFER_ERROR), c
    z = ctrl.zone(zq, 1, 2 * ZONE)
    assert (z["zs"], z["wp"]) == (ZS_EMPTY, 2 * ZONE), z
    c, data = ctrl.read(zq, 1, 2 * ZONE, 24)
    assert c.ok and data == bytes(24 * 512)
    # the zone takes the write again from its start
    c = ctrl.write(zq, 1, 2 * ZONE, b"\x01" * 512)
    assert c.ok, c


def test_failed_transfer_into_an_open_zone(ctrl, zq):
    c = ctrl.write(zq, 1, 3 * ZONE, b"\x42" * 1024)
    assert c.ok, c
    c = faulty_write(ctrl, zq, nvme.IO_WRITE, 3 * ZONE + 2, 24)
    assert c.code == (SCT_GENERIC, SC_DATA_XFER_ERROR), c
    z = ctrl.zone(zq, 1, 3 * ZONE)
    assert (z["zs"], z["wp"]) == (ZS_IMPLICIT_OPEN, 3 * ZONE + 2), z
    c, data = ctrl.read(zq, 1, 3 * ZONE, 26)
    assert c.ok and data == b"\x42" * 1024 + bytes(24 * 512)
