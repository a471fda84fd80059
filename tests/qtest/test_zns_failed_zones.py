"""Read Only and Offline zones. A host cannot make a zone fail, but the device brings back
zone states from the zone state saved in a memory-backend-file (after the data: a 64-byte
header "FZNS", then two 32-byte record slots per zone, each record checksummed: see
hw/femu/zns/zone.c), and that state may say Read Only or Offline. So: write some zones,
stop QEMU, append a record saying Read Only (zone 1) or Offline (zone 2) to the file, start
QEMU again, and check what each command does to them."""

import hashlib
import os
import struct

import pytest

import nvme
import qtest_machine
from nvme import SCT_CMD_SPECIFIC, ZS_CLOSED, ZS_EMPTY, ZS_OFFLINE, ZS_READ_ONLY
from qtest_machine import DevConfig, Machine

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

SIZE_MB = 16
BS = 512
ZSZE = (1 << 20) // BS
NZONES = 16
META = SIZE_MB << 20            # the zone state follows the data
HEADER, RECORD = 64, 32
READ_ONLY, OFFLINE = 1, 2       # the zones the test fails
IS_READ_ONLY = (SCT_CMD_SPECIFIC, nvme.SC_ZONE_READ_ONLY)
IS_OFFLINE = (SCT_CMD_SPECIFIC, nvme.SC_ZONE_OFFLINE)
TRANSITION = (SCT_CMD_SPECIFIC, nvme.SC_ZONE_INVALID_TRANSITION)


class Drive:
    def __init__(self, path, workdir):
        cfg = DevConfig(mode=3, size_mb=SIZE_MB, extra="zns_zone_size_mb=1",
                        memdev_file=path)
        self.m = Machine(cfg, workdir)
        self.ctrl = self.m.ctrl
        self.ctrl.enable(css=nvme.CC_CSS_ALL)
        self.sq = self.ctrl.create_io_queues(1, entries=64)

    def zone(self, i):
        return self.ctrl.zone(self.sq, 1, i * ZSZE)

    def send(self, i, action, select_all=False):
        return self.ctrl.zone_send(self.sq, 1, i * ZSZE, action, select_all=select_all)

    def close(self):
        self.ctrl.shutdown()
        self.m.close()


def record_check(zone, first28):
    """The device's record check: the first 4 bytes of MD5(zone index, record)."""
    return hashlib.md5(struct.pack("<Q", zone) + first28).digest()[:4]


def set_state(path, zone, state, wp):
    """Append a record to one zone's saved state, after checking the newest one is where
    and what we think: the next sequence number, in the other slot."""
    with open(path, "r+b") as f:
        f.seek(META)
        assert f.read(4) == b"FZNS", "no zone state at %d MiB of the file" % SIZE_MB
        base = META + HEADER + 2 * RECORD * zone
        f.seek(base)
        slots = [f.read(RECORD), f.read(RECORD)]
        newest = max((s for s in slots if any(s)), key=lambda s: struct.unpack_from("<Q", s)[0])
        assert record_check(zone, newest[:28]) == newest[28:], (zone, newest.hex())
        seq, old_wp = struct.unpack_from("<QQ", newest)
        assert old_wp == wp, (zone, newest.hex())
        rec = bytearray(newest)
        struct.pack_into("<Q", rec, 0, seq + 1)
        rec[16] = state
        rec[28:] = record_check(zone, bytes(rec[:28]))
        f.seek(base + RECORD * ((seq + 1) % 2))
        f.write(rec)


@pytest.fixture
def drive(tmp_path):
    """Zone 1 Read Only holding 8 blocks, zone 2 Offline, zone 3 Closed with 2 blocks."""
    if not os.path.exists(qtest_machine.QEMU) or not qtest_machine.qemu_has_device("femu"):
        pytest.skip("no QEMU with the femu device at %s" % qtest_machine.QEMU)
    path = str(tmp_path / "zns.img")
    d = Drive(path, str(tmp_path))
    data = {}
    for zone, n in ((READ_ONLY, 8), (OFFLINE, 4), (3, 2)):
        data[zone] = os.urandom(n * BS)
        assert d.ctrl.write(d.sq, 1, zone * ZSZE, data[zone]).ok
    d.close()
    set_state(path, READ_ONLY, ZS_READ_ONLY, READ_ONLY * ZSZE + 8)
    set_state(path, OFFLINE, ZS_OFFLINE, OFFLINE * ZSZE + 4)
    d = Drive(path, str(tmp_path))
    d.data = data
    yield d
    d.close()


def test_report_shows_the_failed_zones(drive):
    d = drive
    z = d.zone(READ_ONLY)
    assert (z["zs"], z["wp"]) == (ZS_READ_ONLY, READ_ONLY * ZSZE + 8), z
    z = d.zone(OFFLINE)
    assert (z["zs"], z["wp"]) == (ZS_OFFLINE, 2 ** 64 - 1), z     # no valid write pointer
    z = d.zone(3)
    assert (z["zs"], z["wp"]) == (ZS_CLOSED, 3 * ZSZE + 2), z
    for zrasf, want in ((nvme.ZRASF_READ_ONLY, [READ_ONLY]), (nvme.ZRASF_OFFLINE, [OFFLINE])):
        c, rep = d.ctrl.zone_report(d.sq, 1, zrasf=zrasf)
        assert c.ok, c
        assert rep["nr_zones"] == 1
        assert [z["zslba"] // ZSZE for z in rep["zones"]] == want


def test_read_only_zone(drive):
    """Readable, never writable; only the Offline action changes it."""
    d, z0 = drive, READ_ONLY * ZSZE
    c, back = d.ctrl.read(d.sq, 1, z0, 8)
    assert c.ok and back == d.data[READ_ONLY]
    assert d.ctrl.write(d.sq, 1, z0 + 8, os.urandom(BS)).code == IS_READ_ONLY
    assert d.ctrl.zone_append(d.sq, 1, z0, os.urandom(BS)).code == IS_READ_ONLY
    assert d.ctrl.write_zeroes(d.sq, 1, z0 + 8, 1).code == IS_READ_ONLY
    for action in (nvme.ZSA_OPEN, nvme.ZSA_CLOSE, nvme.ZSA_FINISH, nvme.ZSA_RESET):
        assert d.send(READ_ONLY, action).code == TRANSITION, action
    # Select All finishes and resets pass it by (and do change the Closed zone 3)
    assert d.send(0, nvme.ZSA_FINISH, select_all=True).ok
    assert d.zone(3)["zs"] == nvme.ZS_FULL
    assert d.send(0, nvme.ZSA_RESET, select_all=True).ok
    assert d.zone(3)["zs"] == ZS_EMPTY
    z = d.zone(READ_ONLY)
    assert (z["zs"], z["wp"]) == (ZS_READ_ONLY, z0 + 8), z
    c, back = d.ctrl.read(d.sq, 1, z0, 8)
    assert c.ok and back == d.data[READ_ONLY]
    assert d.send(READ_ONLY, nvme.ZSA_OFFLINE).ok
    assert d.zone(READ_ONLY)["zs"] == ZS_OFFLINE
    assert d.ctrl.read(d.sq, 1, z0, 1)[0].code == IS_OFFLINE


def test_offline_zone(drive):
    """Neither readable nor writable, and nothing leaves Offline."""
    d, z0 = drive, OFFLINE * ZSZE
    c, data = d.ctrl.read(d.sq, 1, z0, 1)
    assert c.code == IS_OFFLINE and data == b"\x5a" * BS, c
    assert d.ctrl.write(d.sq, 1, z0 + 4, os.urandom(BS)).code == IS_OFFLINE
    assert d.ctrl.zone_append(d.sq, 1, z0, os.urandom(BS)).code == IS_OFFLINE
    assert d.ctrl.dsm_deallocate(d.sq, 1, [(z0, 1)]).code == IS_OFFLINE
    for action in (nvme.ZSA_OPEN, nvme.ZSA_CLOSE, nvme.ZSA_FINISH, nvme.ZSA_RESET):
        assert d.send(OFFLINE, action).code == TRANSITION, action
    assert d.send(OFFLINE, nvme.ZSA_OFFLINE).ok             # already there
    assert d.zone(OFFLINE)["zs"] == ZS_OFFLINE
    # only a Read Only zone may be taken offline
    assert d.send(4, nvme.ZSA_OFFLINE).code == TRANSITION
    assert d.send(3, nvme.ZSA_OFFLINE).code == TRANSITION
    # Select All Offline takes exactly the Read Only zones
    assert d.send(0, nvme.ZSA_OFFLINE, select_all=True).ok
    states = [d.zone(i)["zs"] for i in range(NZONES)]
    want = [ZS_EMPTY] * NZONES
    want[READ_ONLY] = want[OFFLINE] = ZS_OFFLINE
    want[3] = ZS_CLOSED
    assert states == want
    # the zones around it work
    data = os.urandom(2 * BS)
    assert d.ctrl.write(d.sq, 1, 4 * ZSZE, data).ok
    c, back = d.ctrl.read(d.sq, 1, 4 * ZSZE, 2)
    assert c.ok and back == data
    assert d.ctrl.read(d.sq, 1, 3 * ZSZE, 2)[1] == d.data[3]
