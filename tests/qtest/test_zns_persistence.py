"""Zoned namespace persistence: with a memory-backend-file (share=on) as memdev, zone
states, write pointers, descriptor extensions and data survive QEMU exiting, and a new
QEMU on the same file sees them. Across the power cycle opened zones come back Closed,
or Empty when nothing was written to them (ZNS 1.1 2.1.1.3); Closed zones still hold
their active resources."""

import os

import pytest

import nvme
import qtest_machine
from nvme import (SCT_CMD_SPECIFIC, ZS_CLOSED, ZS_EMPTY, ZS_EXPLICIT_OPEN, ZS_FULL,
                  ZS_IMPLICIT_OPEN)
from qtest_machine import DevConfig, Machine

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

EXTRA = ("zns_zone_size_mb=1,zns_zone_cap=512K,zns_max_open=4,zns_max_active=6,"
         "zns_zd_ext_size=64")
NZONES = 16
ZDE = 64


class Drive:
    """One QEMU on the backing file, controller enabled with every command set."""

    def __init__(self, path, tmp_path, lba_index=0):
        if not os.path.exists(qtest_machine.QEMU) or not qtest_machine.qemu_has_device("femu"):
            pytest.skip("no QEMU with the femu device at %s" % qtest_machine.QEMU)
        cfg = DevConfig(mode=3, size_mb=16, lba_index=lba_index, extra=EXTRA,
                        memdev_file=path)
        self.m = Machine(cfg, str(tmp_path))
        self.ctrl = self.m.ctrl
        self.ctrl.enable(css=nvme.CC_CSS_ALL)
        self.sq = self.ctrl.create_io_queues(1, entries=64)
        self.bs = cfg.block_size
        self.zsze = (1 << 20) // self.bs
        self.zcap = (512 << 10) // self.bs

    def z(self, i):
        return i * self.zsze

    def write(self, i, n):
        """n blocks at zone i's write pointer; returns the data."""
        wp = self.zone(i)["wp"]
        data = os.urandom(n * self.bs)
        c = self.ctrl.write(self.sq, 1, wp, data)
        assert c.ok, c
        return data

    def send(self, i, action, data=None):
        c = self.ctrl.zone_send(self.sq, 1, self.z(i), action, data=data)
        assert c.ok, c

    def zone(self, i):
        return self.ctrl.zone(self.sq, 1, self.z(i), zde_bytes=ZDE)

    def zones(self):
        c, rep = self.ctrl.zone_report(self.sq, 1, size=64 + 128 * NZONES, zde_bytes=ZDE)
        assert c.ok, c
        return rep["zones"]

    def read(self, lba, n):
        c, data = self.ctrl.read(self.sq, 1, lba, n)
        assert c.ok, c
        return data

    def shutdown(self):
        self.ctrl.shutdown()
        self.m.close()

    def kill(self):
        """Exit without any shutdown, as on power loss."""
        self.m.qt.kill()
        self.m.close()


@pytest.fixture
def backing(tmp_path):
    return str(tmp_path / "zns.img")


def populate(d):
    """Zones in every host-reachable state; returns {zone: data from its start}."""
    data = {}
    data[0] = d.write(0, 3)                     # implicitly opened
    data[1] = d.write(1, 2)
    d.send(1, nvme.ZSA_OPEN)                    # explicitly opened, written
    d.send(2, nvme.ZSA_OPEN)                    # explicitly opened, nothing written
    data[3] = d.write(3, 5)
    d.send(3, nvme.ZSA_CLOSE)                   # closed
    data[4] = d.write(4, d.zcap)                # full by writing
    data[5] = d.write(5, 1)
    d.send(5, nvme.ZSA_FINISH)                  # full by finish
    d.write(6, 4)
    d.send(6, nvme.ZSA_RESET)                   # written, then reset
    d.send(7, nvme.ZSA_SET_ZDE, data=b"\x7e" * ZDE)     # closed by its extension
    d8 = os.urandom(2 * d.bs)
    c = d.ctrl.zone_append(d.sq, 1, d.z(8), d8)
    assert c.ok and nvme.append_lba(c) == d.z(8), c
    data[8] = d8                                # implicitly opened by an append
    states = [z["zs"] for z in d.zones()]
    assert states[:9] == [ZS_IMPLICIT_OPEN, ZS_EXPLICIT_OPEN, ZS_EXPLICIT_OPEN, ZS_CLOSED,
                          ZS_FULL, ZS_FULL, ZS_EMPTY, ZS_CLOSED, ZS_IMPLICIT_OPEN]
    return data


# zone -> (state, write pointer offset, ZDEV) after a power cycle
AFTER = {0: (ZS_CLOSED, 3, 0), 1: (ZS_CLOSED, 2, 0), 2: (ZS_EMPTY, 0, 0),
         3: (ZS_CLOSED, 5, 0), 4: (ZS_FULL, None, 0), 5: (ZS_FULL, None, 0),
         6: (ZS_EMPTY, 0, 0), 7: (ZS_CLOSED, 0, nvme.ZA_ZDEV), 8: (ZS_CLOSED, 2, 0)}


def check(d, data, after):
    zones = d.zones()
    for i, z in enumerate(zones):
        state, off, zdev = after.get(i, (ZS_EMPTY, 0, 0))
        assert z["zs"] == state, "zone %d: state 0x%x, expected 0x%x" % (i, z["zs"], state)
        assert z["zslba"] == d.z(i) and z["zcap"] == d.zcap
        if off is not None:
            assert z["wp"] == d.z(i) + off, "zone %d: wp" % i
        assert z["za"] & nvme.ZA_ZDEV == zdev, "zone %d: ZDEV" % i
    assert zones[7]["zde"] == b"\x7e" * ZDE
    for i, blob in data.items():
        assert d.read(d.z(i), len(blob) // d.bs) == blob, "zone %d: data" % i


@pytest.mark.parametrize("lba_index", [0, 1], ids=["lba512", "lba4k"])
def test_zones_and_data_survive_a_restart(backing, tmp_path, lba_index):
    d = Drive(backing, tmp_path, lba_index)
    data = populate(d)
    d.shutdown()

    d = Drive(backing, tmp_path, lba_index)
    try:
        check(d, data, AFTER)
        # five Closed zones hold five of the six active resources
        d.write(9, 1)
        c = d.ctrl.write(d.sq, 1, d.z(10), os.urandom(d.bs))
        assert (c.sct, c.sc) == (SCT_CMD_SPECIFIC, nvme.SC_ZONE_TOO_MANY_ACTIVE), c
        # Closed zones open again and continue at their write pointers
        more = d.write(0, 2)
        assert d.read(d.z(0), 5) == data[0] + more
        d.send(1, nvme.ZSA_OPEN)
        assert d.zone(1)["zs"] == ZS_EXPLICIT_OPEN
    finally:
        d.shutdown()


def test_continue_after_a_restart_then_lose_power(backing, tmp_path):
    d = Drive(backing, tmp_path)
    data = populate(d)
    d.shutdown()

    d = Drive(backing, tmp_path)
    data[0] += d.write(0, 4)
    data[3] += d.write(3, 1)
    d.send(3, nvme.ZSA_CLOSE)
    extra = os.urandom(d.bs)
    c = d.ctrl.zone_append(d.sq, 1, d.z(8), extra)
    assert c.ok and nvme.append_lba(c) == d.z(8) + 2, c
    data[8] += extra
    d.send(4, nvme.ZSA_RESET)
    del data[4]
    data[11] = d.write(11, 6)
    d.kill()

    after = dict(AFTER)
    after.update({0: (ZS_CLOSED, 7, 0), 3: (ZS_CLOSED, 6, 0), 8: (ZS_CLOSED, 3, 0),
                  4: (ZS_EMPTY, 0, 0), 11: (ZS_CLOSED, 6, 0)})
    d = Drive(backing, tmp_path)
    try:
        check(d, data, after)
    finally:
        d.shutdown()
