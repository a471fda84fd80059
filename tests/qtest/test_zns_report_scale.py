"""Zone Management Receive on a drive of 1M zones (1 TiB of 1 MiB zones, sparse) with
MDTS=0, so the host may ask for reports of any size: the device walks the zones once and
copies the report in bounded pieces, so a report of a quarter of a million descriptors, or
one that asks for 16 GiB and gets the last 8192 zones with 3968-byte extensions (the
largest that fit the zone state limit at this zone count), completes within the
harness's 10 s timeout with every descriptor right.

Before (e84f9bc) each descriptor rescanned the zones from SLBA: O(shown x zones), and the
report buffer was one allocation sized by the host. (The limit on the zone state itself
is tested in test_zns_state_checks.py.)"""

import struct
import time

import pytest

import nvme
import qtest_machine
from qtest import PAGE
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

NZONES = 1 << 20
ZONE_LBAS = (1 << 20) // 512
ZDE = 3968                  # the largest multiple of 64 within 4 GiB of zone state
DESC = 64
NFULL = 8192                # the last zones, made Full
DEV = DevConfig(mode=3, size_mb=NZONES, mdts=0, entries=1024,
                extra="zns_zone_size_mb=1,zns_zd_ext_size=%d" % ZDE)


def ext_pattern(zone):
    return bytes((zone * 7 + k) & 0xFF for k in range(ZDE))


def test_a_quarter_million_descriptors(ctrl, zq):
    """All zones Empty; ZRASF=All from 300000 zones before the end into a 16 MiB buffer:
    262143 descriptors (old device: about 3.4e10 zone visits)."""
    sq = zq
    size = 16 << 20
    first = NZONES - 300000
    shown = (size - 64) // DESC
    c, raw = receive(ctrl, sq, first * ZONE_LBAS + 5, size // 4 - 1, size, nvme.ZRA_REPORT,
                     nvme.ZRASF_ALL)
    assert c.ok, c
    assert struct.unpack_from("<Q", raw)[0] == 300000
    for k, (zt, zs, za, zcap, zslba, wp) in enumerate(
            struct.iter_unpack("<BBB5xQQQ32x", raw[64:64 + shown * DESC])):
        z = first + k
        assert zslba == wp == z * ZONE_LBAS, (k, zslba, wp)
        assert (zt & 0xF, zs >> 4, za, zcap) == (nvme.ZONE_TYPE_SEQ, nvme.ZS_EMPTY, 0,
                                                  ZONE_LBAS), (k, zt, zs, za, zcap)
    # exactly the descriptors that fit: the rest of the buffer is untouched
    assert raw[64 + shown * DESC:] == b"\xA5" * (len(raw) - 64 - shown * DESC)


@pytest.fixture(scope="module")
def drive(machine):
    """The controller with the last NFULL zones Full, three of them with extensions."""
    ctrl = machine.ctrl
    ctrl.timeout = 10.0
    ctrl.enable(css=nvme.CC_CSS_ALL)
    sq = ctrl.create_io_queues(1, entries=1024)
    first = NZONES - NFULL
    with_ext = (first, first + NFULL // 2, NZONES - 1)
    for z in with_ext:
        c = ctrl.zone_send(sq, 1, z * ZONE_LBAS, nvme.ZSA_SET_ZDE, data=ext_pattern(z))
        assert c.ok, c
    # Zone Finish in batches of 1000 commands per doorbell, each within the timeout
    zones = list(range(first, NZONES))
    for i in range(0, len(zones), 1000):
        deadline = time.monotonic() + ctrl.timeout
        cids = [ctrl.queue_cmd(sq, nvme.cmd(nvme.IO_ZONE_MGMT_SEND, nsid=1,
                                            cdw10=(z * ZONE_LBAS) & 0xFFFFFFFF,
                                            cdw11=(z * ZONE_LBAS) >> 32,
                                            cdw13=nvme.ZSA_FINISH))
                for z in zones[i:i + 1000]]
        ctrl.ring_sq(sq)
        for cid in cids:
            c = ctrl.wait(sq, cid, timeout=max(0.1, deadline - time.monotonic()))
            assert c.ok, c
    return ctrl, sq, with_ext


def receive(ctrl, sq, slba, numd, transfer, zra, zrasf, partial=False):
    """A report into a buffer of `transfer` bytes, the command saying NUMD (whatever the
    buffer): PRPs for the buffer as a host would build them for a larger one."""
    buf = ctrl.buffer(transfer + PAGE, fill=0xA5)
    prp1, prp2 = ctrl.prps(buf, transfer + 2 * PAGE)    # full list pages, as for more
    c = ctrl.execute(sq, nvme.cmd(nvme.IO_ZONE_MGMT_RECV, nsid=1, prp1=prp1, prp2=prp2,
                                  cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32, cdw12=numd,
                                  cdw13=zra | zrasf << 8 | (1 << 16 if partial else 0)))
    return c, ctrl.qt.memread(buf, transfer + PAGE)


@pytest.mark.parametrize("partial", [False, True], ids=["count-all", "partial"])
def test_full_zones_extended_into_16_gib(drive, partial):
    """ZRASF=Full, extended, NUMD=0xFFFFFFFF (16 GiB) from SLBA 0: the last 8192 zones
    with their extensions, 33 MB; nothing past them (old device: about 8.6e9 zone
    visits)."""
    ctrl, sq, with_ext = drive
    step = DESC + ZDE
    transfer = 64 + NFULL * step
    c, raw = receive(ctrl, sq, 0, 0xFFFFFFFF, transfer, nvme.ZRA_EXTENDED, nvme.ZRASF_FULL,
                     partial)
    assert c.ok, c
    assert struct.unpack_from("<Q", raw)[0] == NFULL
    first = NZONES - NFULL
    for k in range(NFULL):
        off = 64 + k * step
        zt, zs, za, zcap, zslba, wp = struct.unpack_from("<BBB5xQQQ", raw, off)
        z = first + k
        assert (zs >> 4, zslba, wp, zcap) == (nvme.ZS_FULL, z * ZONE_LBAS,
                                              (z + 1) * ZONE_LBAS, ZONE_LBAS), (k, zs, zslba)
        ext = raw[off + DESC:off + step]
        if z in with_ext:
            assert za == nvme.ZA_ZDEV and ext == ext_pattern(z), k
        else:
            assert za == 0 and ext == bytes(ZDE), k
    assert raw[transfer:] == b"\xA5" * PAGE


def test_empty_zones_from_the_middle_partial(drive):
    """ZRASF=Empty, Partial, from a zone among the Full ones: none left to show."""
    ctrl, sq, _ = drive
    c, raw = receive(ctrl, sq, (NZONES - 10) * ZONE_LBAS, 1023, 4096, nvme.ZRA_REPORT,
                     nvme.ZRASF_EMPTY, partial=True)
    assert c.ok, c
    assert struct.unpack_from("<Q", raw)[0] == 0
    assert raw[64:4096] == b"\xA5" * (4096 - 64)

