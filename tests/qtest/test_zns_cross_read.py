"""Zoned namespace with zns_cross_zone_read=on (OZCS.RAZB = 1): reads and compares may
cross zone boundaries; writes still may not."""

import os

import pytest

import nvme
import qtest_machine
from nvme import SCT_CMD_SPECIFIC, SCT_GENERIC
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

DEV = DevConfig(mode=3, size_mb=8, extra="zns_zone_size_mb=1,zns_cross_zone_read=on")
BS = 512
ZSZE = (1 << 20) // BS
NZONES = 8
HALF = ZSZE // 2        # 256 KiB: two writes fill a zone within MDTS


def fill_zone(ctrl, sq, zslba):
    data = os.urandom(ZSZE * BS)
    for k in range(2):
        c = ctrl.write(sq, 1, zslba + k * HALF, data[k * HALF * BS:(k + 1) * HALF * BS])
        assert c.ok, c
    assert ctrl.zone(sq, 1, zslba)["zs"] == nvme.ZS_FULL
    return data


def test_identify_reports_razb(ctrl, zq):
    c, data = ctrl.identify(0x05, nsid=1, csi=nvme.CSI_ZONED)
    assert c.ok and nvme.parse_id_ns_zoned(data)["ozcs"] & 1


def test_read_and_compare_across_a_boundary(ctrl, zq):
    a = fill_zone(ctrl, zq, 0)
    b = os.urandom(4 * BS)
    assert ctrl.write(zq, 1, ZSZE, b).ok
    want = a[-4 * BS:] + b
    c, back = ctrl.read(zq, 1, ZSZE - 4, 8)
    assert c.ok, c
    assert back == want
    assert ctrl.compare(zq, 1, ZSZE - 4, want).ok
    # the data of both zones as before
    c, back = ctrl.read(zq, 1, ZSZE, 4)
    assert c.ok and back == b
    c, back = ctrl.read(zq, 1, ZSZE - 4, 4)
    assert c.ok and back == a[-4 * BS:]


def test_writes_still_stop_at_the_boundary(ctrl, zq):
    assert ctrl.write(zq, 1, 2 * ZSZE, os.urandom(HALF * BS)).ok
    assert ctrl.write(zq, 1, 2 * ZSZE + HALF, os.urandom((HALF - 1) * BS)).ok
    c = ctrl.write(zq, 1, 3 * ZSZE - 1, os.urandom(2 * BS))
    assert (c.sct, c.sc) == (SCT_CMD_SPECIFIC, nvme.SC_ZONE_BOUNDARY), c
    assert ctrl.zone(zq, 1, 3 * ZSZE)["zs"] == nvme.ZS_EMPTY


def test_read_past_the_namespace_end(ctrl, zq):
    c, _ = ctrl.read(zq, 1, NZONES * ZSZE - 1, 2)
    assert (c.sct, c.sc) == (SCT_GENERIC, nvme.SC_LBA_RANGE), c
    c, _ = ctrl.read(zq, 1, NZONES * ZSZE - 1, 1)
    assert c.ok, c
