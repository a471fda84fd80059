"""Zone reports of every size, read the way Linux 6.1 reads them when it attaches a zoned
namespace (nvme_ns_report_zones): a buffer of min(zones * 64 + 64, MDTS, 127 pages),
reports with the Partial bit, one after the other until every zone was seen.

Linux failed to attach drives of 8191 and 8192 zones ("invalid zone type 0x0"): the last
report of those sizes is longer than one page but shorter than the buffer, and the device
took PRP2 for a data page because its own transfer fit in two pages, while the host had
put a PRP list there for its whole buffer. The descriptors of the second page went into
the host's PRP list and the buffer kept the zeroes Linux had put there.
"""

import struct

import pytest

import nvme
from qtest import PAGE
from qtest_machine import DevConfig, Machine

MDTS = 7
LINUX_MAX_SEGMENTS = 127


def zoned_machine(tmp_path_factory, zones):
    cfg = DevConfig(mode=3, size_mb=zones, mdts=MDTS, extra="zns_zone_size_mb=1")
    return Machine(cfg, str(tmp_path_factory.mktemp("zrep")))


def report(ctrl, sq, slba, size, fill=0xA5):
    """A Partial report into a size-byte buffer: (header count, raw bytes, PRP list)."""
    buf = ctrl.alloc.alloc(size + PAGE)
    ctrl.qt.memset(buf, size, fill)
    prp1, prp2 = ctrl.prps(buf, size)
    lst = ctrl.qt.memread(prp2, 8 * min(PAGE // 8, size // PAGE)) if size > 2 * PAGE else b""
    numd = size // 4 - 1
    c = ctrl.execute(sq, nvme.cmd(nvme.IO_ZONE_MGMT_RECV, nsid=1, prp1=prp1, prp2=prp2,
                                  cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32, cdw12=numd,
                                  cdw13=nvme.ZRA_REPORT | nvme.ZRASF_ALL << 8 | 1 << 16))
    assert c.ok, c
    if lst:
        assert ctrl.qt.memread(prp2, len(lst)) == lst, "the device wrote over the PRP list"
    raw = ctrl.qt.memread(buf, size)
    return struct.unpack_from("<Q", raw)[0], raw


def check_descriptors(raw, first_zone, count, zone_lbas):
    for k in range(count):
        off = 64 + 64 * k
        zt, zs = raw[off] & 0xF, raw[off + 1] >> 4
        zslba, wp = struct.unpack_from("<QQ", raw, off + 16)
        assert (zt, zs) == (nvme.ZONE_TYPE_SEQ, nvme.ZS_EMPTY), \
            "descriptor %d (zone %d): zt=%#x zs=%#x" % (k, first_zone + k, zt, zs)
        assert zslba == wp == (first_zone + k) * zone_lbas, (k, zslba, wp)


def attach_like_linux(ctrl, sq, zones):
    zone_lbas = (1 << 20) // 512
    size = min(zones * 64 + 64, 4096 << MDTS, LINUX_MAX_SEGMENTS * PAGE)
    size = size // 4 * 4
    seen = 0
    while seen < zones:
        nz, raw = report(ctrl, sq, seen * zone_lbas, size, fill=0)
        expect = min(zones - seen, (size - 64) // 64)
        assert nz == expect, (seen, nz, expect)
        check_descriptors(raw, seen, nz, zone_lbas)
        seen += nz
    return seen


@pytest.mark.parametrize("zones", [4096, 8126, 8127, 8128, 8190, 8191, 8192, 8193,
                                   16254, 16255, 16383, 16384, 16385])
def test_linux_sees_every_zone(tmp_path_factory, zones):
    m = zoned_machine(tmp_path_factory, zones)
    try:
        ctrl = m.ctrl
        ctrl.enable(css=nvme.CC_CSS_ALL)
        sq = ctrl.create_io_queues(1, entries=16)
        for _ in range(3):
            assert attach_like_linux(ctrl, sq, zones) == zones
    finally:
        m.close()


@pytest.fixture(scope="module")
def zoned(tmp_path_factory):
    m = zoned_machine(tmp_path_factory, 8193)
    yield m
    m.close()


def test_every_buffer_size_up_to_mdts(zoned):
    """Buffers of 1..128 pages: a report that fills the buffer, and one that fills only a
    part of it (fewer zones left than fit): the descriptors are where the host expects
    them, the rest of the buffer is untouched, and the PRP lists are intact."""
    ctrl = zoned.ctrl
    ctrl.enable(css=nvme.CC_CSS_ALL)
    sq = ctrl.create_io_queues(1, entries=16)
    zones, zone_lbas = 8193, (1 << 20) // 512
    for pages in range(1, (4096 << MDTS) // PAGE + 1):
        mark = zoned.alloc.mark()
        size = pages * PAGE
        fit = (size - 64) // 64
        for left in sorted({fit, max(1, fit // 2 + 1), 1}):
            first = zones - left if left < fit else 0
            nz, raw = report(ctrl, sq, first * zone_lbas, size)
            assert nz == min(fit, zones - first), (pages, left, nz)
            check_descriptors(raw, first, nz, zone_lbas)
            end = 64 + 64 * nz
            assert raw[end:] == b"\xA5" * (size - end), (pages, left)
        zoned.alloc.release(mark)
