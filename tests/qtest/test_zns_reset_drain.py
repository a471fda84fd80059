"""A controller reset closes open zones as a power cycle does (written ones Closed at
their write pointer, unwritten ones and blank Closed ones Empty) and the flash model
drains the closed zones' write buffers (a padded partial program unit each, in the
media statistics of vendor log 0xCA) -- by CC.EN=0, and by CC.EN=0 after a controller
fatal status (the admin SQ unreadable while bus mastering is off).

Before (e84f9bc) a reset closed the zones without telling the flash model, and after a
fatal status it did not close them at all."""

import pytest

import nvme
import qtest_machine
from nvme import ZS_CLOSED, ZS_EMPTY, ZS_EXPLICIT_OPEN, ZS_IMPLICIT_OPEN
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

# 2 x 2 chips: a zone's program unit is one 4 KiB page on each of its 4 chips
DEV = DevConfig(mode=3, size_mb=16, extra="zns_zone_size_mb=1,zns_num_ch=2,zns_num_lun=2")
ZONE = (1 << 20) // 512
UNIT_PAGES = 4
LOG_MEDIA = 0xCA


def media_stats(ctrl):
    c, data = ctrl.get_log_page(LOG_MEDIA, 4096)
    assert c.ok, c
    lines = data.rstrip(b"\0").decode().splitlines()
    pairs = (line.split(" ", 1) for line in lines)
    return {k: int(v) for k, v in pairs if v.isdigit()}


def open_zones(ctrl, sq, first):
    """Zone first: implicitly opened by 1 block; first+1: explicitly opened, 3 blocks;
    first+2: explicitly opened, nothing written; first+3: opened and closed, blank."""
    def ok(c):
        assert c.ok, c

    ok(ctrl.write(sq, 1, first * ZONE, b"\x11" * 512))
    ok(ctrl.zone_send(sq, 1, (first + 1) * ZONE, nvme.ZSA_OPEN))
    ok(ctrl.write(sq, 1, (first + 1) * ZONE, b"\x22" * 1536))
    ok(ctrl.zone_send(sq, 1, (first + 2) * ZONE, nvme.ZSA_OPEN))
    ok(ctrl.zone_send(sq, 1, (first + 3) * ZONE, nvme.ZSA_OPEN))
    ok(ctrl.zone_send(sq, 1, (first + 3) * ZONE, nvme.ZSA_CLOSE))
    states = [ctrl.zone(sq, 1, (first + i) * ZONE)["zs"] for i in range(4)]
    assert states == [ZS_IMPLICIT_OPEN, ZS_EXPLICIT_OPEN, ZS_EXPLICIT_OPEN, ZS_CLOSED]


def check_after_reset(ctrl, sq, first, before):
    after = media_stats(ctrl)
    want = [(ZS_CLOSED, 1), (ZS_CLOSED, 3), (ZS_EMPTY, 0), (ZS_EMPTY, 0)]
    for i, (zs, written) in enumerate(want):
        z = ctrl.zone(sq, 1, (first + i) * ZONE)
        assert (z["zs"], z["wp"]) == (zs, (first + i) * ZONE + written), (i, z)
    # two partial units drained: one data page and three of padding each
    assert after["buffer_flushes"] - before["buffer_flushes"] == 2, (before, after)
    assert after["pad_pages_programmed"] - before["pad_pages_programmed"] == \
        2 * (UNIT_PAGES - 1), (before, after)
    assert after["pages_programmed"] - before["pages_programmed"] == 2 * UNIT_PAGES
    assert after["blocks_erased"] == before["blocks_erased"]
    assert (after["zones_open"], after["zones_active"]) == (0, 2)
    # the data is there, and the zones go on at their write pointers
    c, data = ctrl.read(sq, 1, (first + 1) * ZONE, 3)
    assert c.ok and data == b"\x22" * 1536
    c = ctrl.write(sq, 1, (first + 1) * ZONE + 3, b"\x33" * 512)
    assert c.ok, c


def test_disable_closes_and_drains(ctrl, zq):
    open_zones(ctrl, zq, 0)
    before = media_stats(ctrl)
    ctrl.disable()
    ctrl.enable(css=nvme.CC_CSS_ALL)
    sq = ctrl.create_io_queues(1, entries=64)
    check_after_reset(ctrl, sq, 0, before)


def test_reset_after_fatal_status_closes_and_drains(machine, ctrl, zq):
    open_zones(ctrl, zq, 4)
    before = media_stats(ctrl)
    # the admin SQ becomes unreadable: the next doorbell is a fatal error
    machine.pci.enable_bus_master(False)
    ctrl.submit(ctrl.admin, nvme.cmd(nvme.ADM_GET_FEATURES, cdw10=nvme.FEAT_NUM_QUEUES))
    ctrl.wait_csts(nvme.CSTS_CFS, nvme.CSTS_CFS)
    machine.pci.enable_bus_master(True)
    ctrl.disable()
    ctrl.enable(css=nvme.CC_CSS_ALL)
    sq = ctrl.create_io_queues(1, entries=64)
    check_after_reset(ctrl, sq, 4, before)
