"""Zoned namespace (femu_mode=3) commands without resource limits: the zone state
machine through Zone Management Send, writes and reads under the zone rules, Zone
Append, Write Zeroes, Compare, and Zone Management Receive (filters, partial and
extended reports). Everything runs with 512- and 4096-byte LBAs.

Zones are 1 MiB with a 512 KiB capacity (so capacity and boundary differ), 64-byte
descriptor extensions, and a Zone Append limit of 16 KiB (zns_zasl=2), below MDTS.
Each test starts with every zone reset.

Not covered: Read Only and Offline zones (Zone Is Read Only, Zone Is Offline, the
Offline action), since the host cannot make a zone fail (no fault injection yet)."""

import collections
import os

import pytest

import nvme
import qtest_machine
from nvme import (SCT_CMD_SPECIFIC, SCT_GENERIC, ZS_CLOSED, ZS_EMPTY, ZS_EXPLICIT_OPEN,
                  ZS_FULL, ZS_IMPLICIT_OPEN)
from qtest_machine import DevConfig, Machine

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

EXTRA = "zns_zone_size_mb=1,zns_zone_cap=512K,zns_zd_ext_size=64,zns_zasl=2"
CONFIGS = {"lba512": DevConfig(mode=3, size_mb=16, lba_index=0, extra=EXTRA),
           "lba4k": DevConfig(mode=3, size_mb=16, lba_index=1, extra=EXTRA)}
ZDE = 64
ZASL_BYTES = 16 << 10

INVALID_FIELD = (SCT_GENERIC, nvme.SC_INVALID_FIELD)
LBA_RANGE = (SCT_GENERIC, nvme.SC_LBA_RANGE)
BOUNDARY = (SCT_CMD_SPECIFIC, nvme.SC_ZONE_BOUNDARY)
IS_FULL = (SCT_CMD_SPECIFIC, nvme.SC_ZONE_FULL)
INVALID_WRITE = (SCT_CMD_SPECIFIC, nvme.SC_ZONE_INVALID_WRITE)
TRANSITION = (SCT_CMD_SPECIFIC, nvme.SC_ZONE_INVALID_TRANSITION)
OK = (SCT_GENERIC, nvme.SC_SUCCESS)

Geo = collections.namedtuple("Geo", "bs zsze zcap nzones zasl")


@pytest.fixture(scope="module", params=list(CONFIGS), ids=list(CONFIGS))
def machine(request, tmp_path_factory):
    if not os.path.exists(qtest_machine.QEMU) or not qtest_machine.qemu_has_device("femu"):
        pytest.skip("no QEMU with the femu device at %s" % qtest_machine.QEMU)
    m = Machine(CONFIGS[request.param], str(tmp_path_factory.mktemp("qtest")))
    yield m
    m.close()


@pytest.fixture
def geo(machine):
    bs = machine.cfg.block_size
    return Geo(bs=bs, zsze=(1 << 20) // bs, zcap=(512 << 10) // bs, nzones=16,
               zasl=ZASL_BYTES // bs)


def zslba(geo, i):
    return i * geo.zsze


def zone(ctrl, sq, geo, i):
    return ctrl.zone(sq, 1, zslba(geo, i), zde_bytes=ZDE)


def all_zones(ctrl, sq, geo):
    c, rep = ctrl.zone_report(sq, 1, size=64 + 128 * geo.nzones, zde_bytes=ZDE)
    assert c.ok, c
    return rep["zones"]


def states(ctrl, sq, geo):
    return [z["zs"] for z in all_zones(ctrl, sq, geo)]


def write_blocks(ctrl, sq, geo, lba, n):
    data = os.urandom(n * geo.bs)
    c = ctrl.write(sq, 1, lba, data)
    return c, data


def fill(ctrl, sq, geo, i, n):
    """Write n blocks at zone i's write pointer; returns the data."""
    wp = zone(ctrl, sq, geo, i)["wp"]
    c, data = write_blocks(ctrl, sq, geo, wp, n)
    assert c.ok, c
    return data


def expect_zone(ctrl, sq, geo, i, state, wp=None, za=0):
    z = zone(ctrl, sq, geo, i)
    assert z["zt"] == nvme.ZONE_TYPE_SEQ
    assert z["zslba"] == zslba(geo, i)
    assert z["zcap"] == geo.zcap
    assert z["zs"] == state, "zone %d: state 0x%x, expected 0x%x" % (i, z["zs"], state)
    if wp is not None:
        assert z["wp"] == wp, "zone %d: wp %d, expected %d" % (i, z["wp"], wp)
    assert z["za"] & nvme.ZA_ZDEV == za & nvme.ZA_ZDEV
    return z


def zoned_io_ok(ctrl, sq, geo):
    """Normal zoned I/O in the last zone: write at the start, read back, reset."""
    last = zslba(geo, geo.nzones - 1)
    assert ctrl.zone_send(sq, 1, last, nvme.ZSA_RESET).ok
    c, data = write_blocks(ctrl, sq, geo, last, 2)
    assert c.ok, c
    c, back = ctrl.read(sq, 1, last, 2)
    assert c.ok and back == data, c
    assert zone(ctrl, sq, geo, geo.nzones - 1)["wp"] == last + 2
    assert ctrl.zone_send(sq, 1, last, nvme.ZSA_RESET).ok
    assert not ctrl.rd32(nvme.REG_CSTS) & nvme.CSTS_CFS


# -- the state machine ---------------------------------------------------------

def test_walk_through_the_states(ctrl, zq, geo):
    z0 = zslba(geo, 1)
    expect_zone(ctrl, zq, geo, 1, ZS_EMPTY, z0)
    data = fill(ctrl, zq, geo, 1, 3)
    expect_zone(ctrl, zq, geo, 1, ZS_IMPLICIT_OPEN, z0 + 3)
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_CLOSE).ok
    expect_zone(ctrl, zq, geo, 1, ZS_CLOSED, z0 + 3)
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_OPEN).ok
    expect_zone(ctrl, zq, geo, 1, ZS_EXPLICIT_OPEN, z0 + 3)
    data += fill(ctrl, zq, geo, 1, 2)
    assert ctrl.flush(zq, 1).ok
    expect_zone(ctrl, zq, geo, 1, ZS_EXPLICIT_OPEN, z0 + 5)
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_FINISH).ok
    expect_zone(ctrl, zq, geo, 1, ZS_FULL)
    c, back = ctrl.read(zq, 1, z0, 5)
    assert c.ok and back == data
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_RESET).ok
    expect_zone(ctrl, zq, geo, 1, ZS_EMPTY, z0)
    # other zones never moved
    assert states(ctrl, zq, geo) == [ZS_EMPTY] * geo.nzones
    zoned_io_ok(ctrl, zq, geo)


def test_writing_to_capacity_fills_the_zone(ctrl, zq, geo):
    z0 = zslba(geo, 2)
    half = geo.zcap // 2
    fill(ctrl, zq, geo, 2, half)
    expect_zone(ctrl, zq, geo, 2, ZS_IMPLICIT_OPEN, z0 + half)
    fill(ctrl, zq, geo, 2, geo.zcap - half)
    expect_zone(ctrl, zq, geo, 2, ZS_FULL)
    c, _ = write_blocks(ctrl, zq, geo, z0 + geo.zcap, 1)
    assert c.code == IS_FULL, c
    zoned_io_ok(ctrl, zq, geo)


def _to_empty(ctrl, sq, geo, i):
    pass


def _to_implicit(ctrl, sq, geo, i):
    fill(ctrl, sq, geo, i, 2)


def _to_explicit(ctrl, sq, geo, i):
    # written first, so a close has an unambiguous outcome (Closed)
    fill(ctrl, sq, geo, i, 2)
    assert ctrl.zone_send(sq, 1, zslba(geo, i), nvme.ZSA_OPEN).ok


def _to_closed(ctrl, sq, geo, i):
    fill(ctrl, sq, geo, i, 2)
    assert ctrl.zone_send(sq, 1, zslba(geo, i), nvme.ZSA_CLOSE).ok


def _to_full(ctrl, sq, geo, i):
    fill(ctrl, sq, geo, i, 2)
    assert ctrl.zone_send(sq, 1, zslba(geo, i), nvme.ZSA_FINISH).ok


SETUP = {ZS_EMPTY: _to_empty, ZS_IMPLICIT_OPEN: _to_implicit,
         ZS_EXPLICIT_OPEN: _to_explicit, ZS_CLOSED: _to_closed, ZS_FULL: _to_full}
STATE_NAMES = {ZS_EMPTY: "empty", ZS_IMPLICIT_OPEN: "iopen", ZS_EXPLICIT_OPEN: "eopen",
               ZS_CLOSED: "closed", ZS_FULL: "full"}
ACTION_NAMES = {nvme.ZSA_CLOSE: "close", nvme.ZSA_FINISH: "finish", nvme.ZSA_OPEN: "open",
                nvme.ZSA_RESET: "reset", nvme.ZSA_OFFLINE: "offline",
                nvme.ZSA_SET_ZDE: "setzde"}

# (from, action) -> (status, state after); ZNS 1.1 3.4.3.1 and the zone state machine
TRANSITIONS = {}
for _s in SETUP:
    TRANSITIONS[(_s, nvme.ZSA_RESET)] = (OK, ZS_EMPTY)
    TRANSITIONS[(_s, nvme.ZSA_OFFLINE)] = (TRANSITION, _s)     # only Read Only goes offline
    TRANSITIONS[(_s, nvme.ZSA_SET_ZDE)] = (TRANSITION, _s)
    TRANSITIONS[(_s, nvme.ZSA_FINISH)] = (OK, ZS_FULL)
    TRANSITIONS[(_s, nvme.ZSA_OPEN)] = (OK, ZS_EXPLICIT_OPEN)
    TRANSITIONS[(_s, nvme.ZSA_CLOSE)] = (OK, ZS_CLOSED)
TRANSITIONS.update({
    (ZS_EMPTY, nvme.ZSA_CLOSE): (TRANSITION, ZS_EMPTY),
    (ZS_FULL, nvme.ZSA_CLOSE): (TRANSITION, ZS_FULL),
    (ZS_FULL, nvme.ZSA_OPEN): (TRANSITION, ZS_FULL),
    (ZS_EMPTY, nvme.ZSA_SET_ZDE): (OK, ZS_CLOSED),
})


@pytest.mark.parametrize("action", list(ACTION_NAMES), ids=list(ACTION_NAMES.values()))
@pytest.mark.parametrize("start", list(SETUP), ids=list(STATE_NAMES.values()))
def test_single_zone_action(ctrl, zq, geo, start, action):
    i = 3
    SETUP[start](ctrl, zq, geo, i)
    before = zone(ctrl, zq, geo, i)
    assert before["zs"] == start
    zde = bytes(range(7, 7 + ZDE)) if action == nvme.ZSA_SET_ZDE else None
    c = ctrl.zone_send(zq, 1, zslba(geo, i), action, data=zde)
    status, after = TRANSITIONS[(start, action)]
    assert c.code == status, c
    z = zone(ctrl, zq, geo, i)
    assert z["zs"] == after, "state 0x%x, expected 0x%x" % (z["zs"], after)
    if after == ZS_EMPTY:
        assert z["wp"] == zslba(geo, i)
    elif after != ZS_FULL:      # the write pointer of a Full zone is not valid
        assert z["wp"] == before["wp"]
    if start == ZS_EMPTY and action == nvme.ZSA_SET_ZDE:
        assert z["za"] & nvme.ZA_ZDEV and z["zde"] == zde
    # the neighbours are untouched
    assert zone(ctrl, zq, geo, i - 1)["zs"] == ZS_EMPTY
    assert zone(ctrl, zq, geo, i + 1)["zs"] == ZS_EMPTY
    zoned_io_ok(ctrl, zq, geo)


@pytest.mark.parametrize("action", list(ACTION_NAMES), ids=list(ACTION_NAMES.values()))
def test_action_slba_not_a_zone_start(ctrl, zq, geo, action):
    zde = bytes(ZDE) if action == nvme.ZSA_SET_ZDE else None
    nsze = geo.nzones * geo.zsze
    _to_implicit(ctrl, zq, geo, 4)
    for slba in (zslba(geo, 4) + 1, zslba(geo, 5) - 1, nsze, nsze + geo.zsze):
        c = ctrl.zone_send(zq, 1, slba, action, data=zde)
        assert c.code == INVALID_FIELD, "slba %d: %r" % (slba, c)
    expect_zone(ctrl, zq, geo, 4, ZS_IMPLICIT_OPEN, zslba(geo, 4) + 2)
    zoned_io_ok(ctrl, zq, geo)


@pytest.mark.parametrize("zsa", [0x00, 0x06, 0x0F, 0x11, 0xFF])
def test_reserved_action_is_invalid_field(ctrl, zq, geo, zsa):
    c = ctrl.zone_send(zq, 1, zslba(geo, 1), zsa)
    assert c.code == INVALID_FIELD, c
    zoned_io_ok(ctrl, zq, geo)


# -- select all ----------------------------------------------------------------

MIX = [ZS_IMPLICIT_OPEN, ZS_EXPLICIT_OPEN, ZS_CLOSED, ZS_FULL, ZS_EMPTY]


def _mix(ctrl, sq, geo):
    """Zones 0..4 in the MIX states (the rest Empty); returns their write pointers."""
    for i, s in enumerate(MIX):
        SETUP[s](ctrl, sq, geo, i)
    assert states(ctrl, sq, geo)[:5] == MIX
    return [z["wp"] for z in all_zones(ctrl, sq, geo)]


# action -> the states of zones 0..4 afterwards
SELECT_ALL = {
    nvme.ZSA_CLOSE: [ZS_CLOSED, ZS_CLOSED, ZS_CLOSED, ZS_FULL, ZS_EMPTY],
    nvme.ZSA_FINISH: [ZS_FULL, ZS_FULL, ZS_FULL, ZS_FULL, ZS_EMPTY],
    nvme.ZSA_OPEN: [ZS_IMPLICIT_OPEN, ZS_EXPLICIT_OPEN, ZS_EXPLICIT_OPEN, ZS_FULL, ZS_EMPTY],
    nvme.ZSA_RESET: [ZS_EMPTY] * 5,
    nvme.ZSA_OFFLINE: MIX,     # no zone is Read Only
}


@pytest.mark.parametrize("action", list(SELECT_ALL),
                         ids=[ACTION_NAMES[a] for a in SELECT_ALL])
def test_select_all(ctrl, zq, geo, action):
    wps = _mix(ctrl, zq, geo)
    # Select All ignores the SLBA, even one that is not a zone start
    c = ctrl.zone_send(zq, 1, zslba(geo, 2) + 5, action, select_all=True)
    assert c.ok, c
    zones = all_zones(ctrl, zq, geo)
    assert [z["zs"] for z in zones] == SELECT_ALL[action] + [ZS_EMPTY] * (geo.nzones - 5)
    for i, z in enumerate(zones):
        if z["zs"] == ZS_EMPTY:
            assert z["wp"] == zslba(geo, i)
        elif z["zs"] != ZS_FULL:
            assert z["wp"] == wps[i]
    zoned_io_ok(ctrl, zq, geo)


def test_select_all_set_zde_is_invalid(ctrl, zq, geo):
    c = ctrl.zone_send(zq, 1, 0, nvme.ZSA_SET_ZDE, select_all=True, data=bytes(ZDE))
    assert c.code == INVALID_FIELD, c
    assert states(ctrl, zq, geo) == [ZS_EMPTY] * geo.nzones
    zoned_io_ok(ctrl, zq, geo)


# -- writes, reads and the zone rules ------------------------------------------

def test_write_not_at_the_write_pointer(ctrl, zq, geo):
    z0 = zslba(geo, 5)
    c, _ = write_blocks(ctrl, zq, geo, z0 + 1, 1)
    assert c.code == INVALID_WRITE, c
    expect_zone(ctrl, zq, geo, 5, ZS_EMPTY, z0)
    fill(ctrl, zq, geo, 5, 4)
    for lba in (z0, z0 + 3, z0 + 5, z0 + geo.zcap - 1):
        c, _ = write_blocks(ctrl, zq, geo, lba, 1)
        assert c.code == INVALID_WRITE, "lba %d: %r" % (lba, c)
    expect_zone(ctrl, zq, geo, 5, ZS_IMPLICIT_OPEN, z0 + 4)
    # a closed zone also takes writes only at its write pointer
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_CLOSE).ok
    c, _ = write_blocks(ctrl, zq, geo, z0 + 5, 1)
    assert c.code == INVALID_WRITE, c
    expect_zone(ctrl, zq, geo, 5, ZS_CLOSED, z0 + 4)
    zoned_io_ok(ctrl, zq, geo)


def test_write_to_a_full_zone(ctrl, zq, geo):
    z0 = zslba(geo, 6)
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_FINISH).ok     # from Empty
    expect_zone(ctrl, zq, geo, 6, ZS_FULL)
    for lba in (z0, z0 + 1):
        c, _ = write_blocks(ctrl, zq, geo, lba, 1)
        assert c.code == IS_FULL, c
    c = ctrl.write_zeroes(zq, 1, z0, 1)
    assert c.code == IS_FULL, c
    expect_zone(ctrl, zq, geo, 6, ZS_FULL)
    zoned_io_ok(ctrl, zq, geo)


def test_write_crossing_the_zone_capacity(ctrl, zq, geo):
    z0 = zslba(geo, 7)
    fill(ctrl, zq, geo, 7, geo.zcap - 2)
    c, _ = write_blocks(ctrl, zq, geo, z0 + geo.zcap - 2, 4)
    assert c.code == BOUNDARY, c
    c = ctrl.write_zeroes(zq, 1, z0 + geo.zcap - 2, 3)
    assert c.code == BOUNDARY, c
    expect_zone(ctrl, zq, geo, 7, ZS_IMPLICIT_OPEN, z0 + geo.zcap - 2)
    # exactly up to the capacity is fine, and fills the zone
    fill(ctrl, zq, geo, 7, 2)
    expect_zone(ctrl, zq, geo, 7, ZS_FULL)
    zoned_io_ok(ctrl, zq, geo)


def test_write_beyond_the_namespace(ctrl, zq, geo):
    nsze = geo.nzones * geo.zsze
    for lba, n in ((nsze, 1), (nsze - 1, 2), (1 << 40, 1)):
        c, _ = write_blocks(ctrl, zq, geo, lba, n)
        assert c.code == LBA_RANGE, "lba %d+%d: %r" % (lba, n, c)
        c, _ = ctrl.read(zq, 1, lba, n)
        assert c.code == LBA_RANGE, "lba %d+%d: %r" % (lba, n, c)
    zoned_io_ok(ctrl, zq, geo)


def test_read_crossing_a_zone_boundary(ctrl, zq, geo):
    # zns_cross_zone_read is off (OZCS.RAZB = 0)
    b = zslba(geo, 9)
    assert ctrl.zone_send(zq, 1, zslba(geo, 8), nvme.ZSA_FINISH).ok
    for lba, n in ((b - 1, 2), (b - 4, 8)):
        c, _ = ctrl.read(zq, 1, lba, n)
        assert c.code == BOUNDARY, "lba %d+%d: %r" % (lba, n, c)
    c = ctrl.compare(zq, 1, b - 1, bytes(2 * geo.bs))
    assert c.code == BOUNDARY, c
    # up to the boundary is fine
    c, _ = ctrl.read(zq, 1, b - 2, 2)
    assert c.ok, c
    zoned_io_ok(ctrl, zq, geo)


def test_read_of_a_whole_zone(ctrl, zq, geo):
    z0 = zslba(geo, 10)
    data = fill(ctrl, zq, geo, 10, geo.zcap)
    c, back = ctrl.read(zq, 1, z0, geo.zcap)
    assert c.ok and back == data, c
    zoned_io_ok(ctrl, zq, geo)


def test_reads_above_the_write_pointer_return_zeroes(ctrl, zq, geo):
    z0 = zslba(geo, 11)
    fill(ctrl, zq, geo, 11, 8)
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_RESET).ok
    data = fill(ctrl, zq, geo, 11, 1)
    c, back = ctrl.read(zq, 1, z0, 8)
    assert c.ok, c
    assert back[:geo.bs] == data
    assert back[geo.bs:] == bytes(7 * geo.bs), "LBAs above the write pointer"
    # a finished zone reads zeroes from the old write pointer to its capacity
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_FINISH).ok
    c, back = ctrl.read(zq, 1, z0 + 1, 7)
    assert c.ok and back == bytes(7 * geo.bs), c
    zoned_io_ok(ctrl, zq, geo)


def test_reads_above_the_write_pointer_succeed(ctrl, zq, geo):
    z0 = zslba(geo, 12)
    fill(ctrl, zq, geo, 12, 1)
    c, back = ctrl.read(zq, 1, z0 + geo.zcap - 4, 4)
    assert c.ok, c
    # between the capacity and the zone size: never writable, so always zeroes
    c, back = ctrl.read(zq, 1, z0 + geo.zcap, 4)
    assert c.ok and back == bytes(4 * geo.bs), c
    c, back = ctrl.read(zq, 1, z0 + geo.zsze - 1, 1)
    assert c.ok and back == bytes(geo.bs), c
    zoned_io_ok(ctrl, zq, geo)


def test_write_zeroes_advances_the_write_pointer(ctrl, zq, geo):
    z0 = zslba(geo, 13)
    head = fill(ctrl, zq, geo, 13, 2)
    c = ctrl.write_zeroes(zq, 1, z0 + 2, 5)
    assert c.ok, c
    expect_zone(ctrl, zq, geo, 13, ZS_IMPLICIT_OPEN, z0 + 7)
    tail = fill(ctrl, zq, geo, 13, 1)
    c, back = ctrl.read(zq, 1, z0, 8)
    assert c.ok, c
    assert back == head + bytes(5 * geo.bs) + tail
    # not at the write pointer
    c = ctrl.write_zeroes(zq, 1, z0 + 9, 1)
    assert c.code == INVALID_WRITE, c
    # on an Empty zone it opens the zone like a write
    c = ctrl.write_zeroes(zq, 1, zslba(geo, 14), 3)
    assert c.ok, c
    expect_zone(ctrl, zq, geo, 14, ZS_IMPLICIT_OPEN, zslba(geo, 14) + 3)
    zoned_io_ok(ctrl, zq, geo)


def test_compare(ctrl, zq, geo):
    z0 = zslba(geo, 1)
    data = fill(ctrl, zq, geo, 1, 4)
    assert ctrl.compare(zq, 1, z0, data).ok
    wrong = bytearray(data)
    wrong[-1] ^= 1
    c = ctrl.compare(zq, 1, z0, bytes(wrong))
    assert c.code == (nvme.SCT_MEDIA, nvme.SC_COMPARE_FAILURE), c
    expect_zone(ctrl, zq, geo, 1, ZS_IMPLICIT_OPEN, z0 + 4)
    zoned_io_ok(ctrl, zq, geo)


# -- Zone Append ---------------------------------------------------------------

def test_append_places_data_sequentially(ctrl, zq, geo):
    z0 = zslba(geo, 2)
    chunks = []
    for n in (1, geo.zasl, 2):
        data = os.urandom(n * geo.bs)
        c = ctrl.zone_append(zq, 1, z0, data)
        assert c.ok, c
        chunks.append((nvme.append_lba(c), data))
    lbas = [lba for lba, _ in chunks]
    assert lbas == [z0, z0 + 1, z0 + 1 + geo.zasl]
    expect_zone(ctrl, zq, geo, 2, ZS_IMPLICIT_OPEN, z0 + 3 + geo.zasl)
    for lba, data in chunks:
        c, back = ctrl.read(zq, 1, lba, len(data) // geo.bs)
        assert c.ok and back == data, c
    # appends and writes share the write pointer
    fill(ctrl, zq, geo, 2, 1)
    c = ctrl.zone_append(zq, 1, z0, os.urandom(geo.bs))
    assert c.ok and nvme.append_lba(c) == z0 + 4 + geo.zasl, c
    zoned_io_ok(ctrl, zq, geo)


def test_append_to_a_closed_zone_reopens_it(ctrl, zq, geo):
    z0 = zslba(geo, 3)
    _to_closed(ctrl, zq, geo, 3)
    c = ctrl.zone_append(zq, 1, z0, os.urandom(geo.bs))
    assert c.ok and nvme.append_lba(c) == z0 + 2, c
    expect_zone(ctrl, zq, geo, 3, ZS_IMPLICIT_OPEN, z0 + 3)
    zoned_io_ok(ctrl, zq, geo)


def test_append_until_full(ctrl, zq, geo):
    z0 = zslba(geo, 4)
    n = geo.zasl
    expected = list(range(z0, z0 + geo.zcap, n))
    got = []
    for _ in expected:
        c = ctrl.zone_append(zq, 1, z0, bytes([len(got) & 0xFF]) * (n * geo.bs))
        assert c.ok, c
        got.append(nvme.append_lba(c))
    assert got == expected
    expect_zone(ctrl, zq, geo, 4, ZS_FULL)
    c = ctrl.zone_append(zq, 1, z0, os.urandom(geo.bs))
    assert c.code == IS_FULL, c
    c, back = ctrl.read(zq, 1, expected[5], n)
    assert c.ok and back == bytes([5]) * (n * geo.bs)
    zoned_io_ok(ctrl, zq, geo)


def test_append_crossing_the_capacity(ctrl, zq, geo):
    z0 = zslba(geo, 5)
    fill(ctrl, zq, geo, 5, geo.zcap - 1)
    c = ctrl.zone_append(zq, 1, z0, os.urandom(2 * geo.bs))
    assert c.code == BOUNDARY, c
    expect_zone(ctrl, zq, geo, 5, ZS_IMPLICIT_OPEN, z0 + geo.zcap - 1)
    zoned_io_ok(ctrl, zq, geo)


def test_append_slba_not_a_zone_start(ctrl, zq, geo):
    z0 = zslba(geo, 6)
    fill(ctrl, zq, geo, 6, 2)
    for slba in (z0 + 1, z0 + 2, zslba(geo, 7) - 1):
        c = ctrl.zone_append(zq, 1, slba, os.urandom(geo.bs))
        assert c.code == INVALID_FIELD, "slba %d: %r" % (slba, c)
    expect_zone(ctrl, zq, geo, 6, ZS_IMPLICIT_OPEN, z0 + 2)
    zoned_io_ok(ctrl, zq, geo)


def test_append_larger_than_zasl(ctrl, zq, geo):
    z0 = zslba(geo, 7)
    c = ctrl.zone_append(zq, 1, z0, os.urandom((geo.zasl + 1) * geo.bs))
    assert c.code == INVALID_FIELD, c
    expect_zone(ctrl, zq, geo, 7, ZS_EMPTY, z0)
    # the same size is a legal write (ZASL is below MDTS) ...
    fill(ctrl, zq, geo, 7, geo.zasl + 1)
    # ... and exactly ZASL is a legal append
    c = ctrl.zone_append(zq, 1, z0, os.urandom(geo.zasl * geo.bs))
    assert c.ok and nvme.append_lba(c) == z0 + geo.zasl + 1, c
    zoned_io_ok(ctrl, zq, geo)


def test_append_beyond_the_namespace(ctrl, zq, geo):
    c = ctrl.zone_append(zq, 1, geo.nzones * geo.zsze, os.urandom(geo.bs))
    assert c.code in (LBA_RANGE, INVALID_FIELD), c
    zoned_io_ok(ctrl, zq, geo)


# -- Zone Management Receive ---------------------------------------------------

FILTERS = {nvme.ZRASF_EMPTY: ZS_EMPTY, nvme.ZRASF_IMPLICIT_OPEN: ZS_IMPLICIT_OPEN,
           nvme.ZRASF_EXPLICIT_OPEN: ZS_EXPLICIT_OPEN, nvme.ZRASF_CLOSED: ZS_CLOSED,
           nvme.ZRASF_FULL: ZS_FULL, nvme.ZRASF_READ_ONLY: nvme.ZS_READ_ONLY,
           nvme.ZRASF_OFFLINE: nvme.ZS_OFFLINE}


def _spread(ctrl, sq, geo):
    """Two zones in each host-reachable non-Empty state; returns the state of every zone."""
    layout = {1: ZS_IMPLICIT_OPEN, 9: ZS_IMPLICIT_OPEN, 2: ZS_EXPLICIT_OPEN,
              10: ZS_EXPLICIT_OPEN, 4: ZS_CLOSED, 12: ZS_CLOSED, 6: ZS_FULL, 14: ZS_FULL}
    for i, s in layout.items():
        SETUP[s](ctrl, sq, geo, i)
    return [layout.get(i, ZS_EMPTY) for i in range(geo.nzones)]


@pytest.mark.parametrize("zrasf", list(FILTERS) + [nvme.ZRASF_ALL])
def test_report_filters(ctrl, zq, geo, zrasf):
    want = _spread(ctrl, zq, geo)
    match = [i for i, s in enumerate(want) if zrasf == nvme.ZRASF_ALL or s == FILTERS[zrasf]]
    c, rep = ctrl.zone_report(zq, 1, size=4096, zrasf=zrasf)
    assert c.ok, c
    assert rep["nr_zones"] == len(match)
    assert [z["zslba"] for z in rep["zones"]] == [zslba(geo, i) for i in match]
    assert [z["zs"] for z in rep["zones"]] == [want[i] for i in match]
    # from the middle of zone 5 on: zones 5.. only
    c, rep = ctrl.zone_report(zq, 1, slba=zslba(geo, 5) + 3, size=4096, zrasf=zrasf)
    assert c.ok, c
    later = [i for i in match if i >= 5]
    assert rep["nr_zones"] == len(later)
    assert [z["zslba"] for z in rep["zones"]] == [zslba(geo, i) for i in later]
    zoned_io_ok(ctrl, zq, geo)


def test_partial_report_counts_what_fits(ctrl, zq, geo):
    want = _spread(ctrl, zq, geo)
    for n in (1, 3, geo.nzones):
        size = 64 + 64 * n
        c, rep = ctrl.zone_report(zq, 1, size=size, partial=False)
        assert c.ok, c
        assert rep["nr_zones"] == geo.nzones, "without partial: every matching zone"
        assert len(rep["zones"]) == n
        c, rep = ctrl.zone_report(zq, 1, size=size, partial=True)
        assert c.ok, c
        assert rep["nr_zones"] == n, "partial: the descriptors returned"
        assert [z["zs"] for z in rep["zones"]] == want[:n]
    # partial with a filter: only matching zones count
    c, rep = ctrl.zone_report(zq, 1, size=64 + 64, zrasf=nvme.ZRASF_CLOSED, partial=True)
    assert c.ok and rep["nr_zones"] == 1 and rep["zones"][0]["zslba"] == zslba(geo, 4)
    c, rep = ctrl.zone_report(zq, 1, size=64 + 64, zrasf=nvme.ZRASF_CLOSED)
    assert c.ok and rep["nr_zones"] == 2
    # a buffer holding only the header
    c, rep = ctrl.zone_report(zq, 1, size=64, partial=True)
    assert c.ok and rep["nr_zones"] == 0, c
    c, rep = ctrl.zone_report(zq, 1, size=64)
    assert c.ok and rep["nr_zones"] == geo.nzones, c
    zoned_io_ok(ctrl, zq, geo)


def test_report_does_not_write_past_the_buffer(ctrl, zq, geo):
    # NUMD asks for 2 descriptors of a 4 KiB buffer filled with 0xA5
    c, data = ctrl.zone_recv(zq, 1, 0, 4096, numd=(64 + 2 * 64) // 4 - 1)
    assert c.ok, c
    assert data[64 + 2 * 64:] == b"\xA5" * (4096 - 64 - 2 * 64)
    zoned_io_ok(ctrl, zq, geo)


def test_report_errors(ctrl, zq, geo):
    nsze = geo.nzones * geo.zsze
    c, _ = ctrl.zone_recv(zq, 1, nsze, 4096)
    assert c.code == LBA_RANGE, c
    c, _ = ctrl.zone_recv(zq, 1, 0, 4096, zrasf=0x08)
    assert c.code == INVALID_FIELD, c
    c, _ = ctrl.zone_recv(zq, 1, 0, 4096, zra=0x02)
    assert c.code == INVALID_FIELD, c
    zoned_io_ok(ctrl, zq, geo)


def test_report_above_mdts(ctrl, zq, geo):
    """A report buffer larger than MDTS (4 KiB << 7 by default) is refused before anything
    is written to it; exactly MDTS is fine."""
    mdts = ctrl.id_ctrl()["mdts"]
    assert mdts == 7
    limit = 4096 << mdts
    c, data = ctrl.zone_recv(zq, 1, 0, 4096, numd=(limit + 4) // 4 - 1)
    assert c.code == INVALID_FIELD, c
    assert data == b"\xA5" * 4096
    c, data = ctrl.zone_recv(zq, 1, 0, 4096, numd=limit // 4 - 1)
    assert c.ok, c
    assert nvme.parse_zone_report(data)["nr_zones"] == geo.nzones
    zoned_io_ok(ctrl, zq, geo)


def test_deallocate_leaves_the_zones_alone(ctrl, zq, geo):
    """Dataset Management Deallocate on zones: accepted; only a reset frees zoned space,
    so write pointers, states and data stay, and writing goes on at the write pointer."""
    head = fill(ctrl, zq, geo, 11, 6)
    full = fill(ctrl, zq, geo, 12, geo.zcap)
    c = ctrl.dsm_deallocate(zq, 1, [(zslba(geo, 11), 4), (zslba(geo, 12), geo.zsze),
                                    (zslba(geo, 13), 1)])
    assert c.ok, c
    expect_zone(ctrl, zq, geo, 11, ZS_IMPLICIT_OPEN, zslba(geo, 11) + 6)
    expect_zone(ctrl, zq, geo, 12, ZS_FULL)
    expect_zone(ctrl, zq, geo, 13, ZS_EMPTY, zslba(geo, 13))
    c, back = ctrl.read(zq, 1, zslba(geo, 11), 6)
    assert c.ok and back == head
    c, back = ctrl.read(zq, 1, zslba(geo, 12), geo.zcap)
    assert c.ok and back == full
    tail = fill(ctrl, zq, geo, 11, 2)
    c, back = ctrl.read(zq, 1, zslba(geo, 11), 8)
    assert c.ok and back == head + tail
    # a range past the namespace is refused, and nothing else changes either
    c = ctrl.dsm_deallocate(zq, 1, [(zslba(geo, 11), 1), (geo.nzones * geo.zsze - 1, 2)])
    assert c.code == LBA_RANGE, c
    expect_zone(ctrl, zq, geo, 11, ZS_IMPLICIT_OPEN, zslba(geo, 11) + 8)
    zoned_io_ok(ctrl, zq, geo)


def test_extended_report_with_descriptor_extensions(ctrl, zq, geo):
    ext = {2: bytes(range(64)), 5: os.urandom(64)}
    for i, e in ext.items():
        c = ctrl.zone_send(zq, 1, zslba(geo, i), nvme.ZSA_SET_ZDE, data=e)
        assert c.ok, c
    zones = all_zones(ctrl, zq, geo)
    for i, z in enumerate(zones):
        if i in ext:
            assert z["zs"] == ZS_CLOSED and z["wp"] == zslba(geo, i)
            assert z["za"] & nvme.ZA_ZDEV
            assert z["zde"] == ext[i]
        else:
            assert z["zs"] == ZS_EMPTY and not z["za"] & nvme.ZA_ZDEV
    # the plain report has the same descriptors, without the extensions
    c, rep = ctrl.zone_report(zq, 1, size=64 + 64 * geo.nzones)
    assert c.ok, c
    assert [(z["zs"], z["za"], z["wp"]) for z in rep["zones"]] == \
        [(z["zs"], z["za"], z["wp"]) for z in zones]
    # a zone with an extension can be written; its extension stays
    data = fill(ctrl, zq, geo, 2, 3)
    z = expect_zone(ctrl, zq, geo, 2, ZS_IMPLICIT_OPEN, zslba(geo, 2) + 3, za=nvme.ZA_ZDEV)
    assert z["zde"] == ext[2]
    c, back = ctrl.read(zq, 1, zslba(geo, 2), 3)
    assert c.ok and back == data
    # a reset clears ZDEV
    for i in ext:
        assert ctrl.zone_send(zq, 1, zslba(geo, i), nvme.ZSA_RESET).ok
        expect_zone(ctrl, zq, geo, i, ZS_EMPTY, zslba(geo, i), za=0)
    # a partial extended report counts 128-byte descriptors
    c, rep = ctrl.zone_report(zq, 1, size=64 + 3 * 128, partial=True, zde_bytes=ZDE)
    assert c.ok and rep["nr_zones"] == 3, c
    zoned_io_ok(ctrl, zq, geo)


def test_set_zde_then_open_and_finish(ctrl, zq, geo):
    z0 = zslba(geo, 8)
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_SET_ZDE, data=b"\x42" * ZDE).ok
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_OPEN).ok
    expect_zone(ctrl, zq, geo, 8, ZS_EXPLICIT_OPEN, z0, za=nvme.ZA_ZDEV)
    assert ctrl.zone_send(zq, 1, z0, nvme.ZSA_FINISH).ok
    z = expect_zone(ctrl, zq, geo, 8, ZS_FULL, za=nvme.ZA_ZDEV)
    assert z["zde"] == b"\x42" * ZDE
    zoned_io_ok(ctrl, zq, geo)


@pytest.mark.parametrize("opc", [nvme.IO_WRITE, nvme.IO_ZONE_APPEND, nvme.IO_READ],
                         ids=["write", "append", "read"])
def test_data_pointer_outside_ram(ctrl, zq, geo, opc):
    # 0x40000000: above the 256 MiB of guest RAM, below the PCI window
    z0 = zslba(geo, 9)
    head = fill(ctrl, zq, geo, 9, 2)
    c = ctrl.execute(zq, ctrl.rw_cmd(opc, 1, z0 + (0 if opc == nvme.IO_ZONE_APPEND else 2),
                                     1, prp1=0x40000000))
    assert c.is_(SCT_GENERIC, nvme.SC_DATA_XFER_ERROR), c
    # the failed command moved nothing: the write pointer is where the two blocks left it
    z = zone(ctrl, zq, geo, 9)
    assert z["zs"] == ZS_IMPLICIT_OPEN and z["wp"] == z0 + 2, z
    tail = fill(ctrl, zq, geo, 9, 1)
    c, back = ctrl.read(zq, 1, z0, 2)
    assert c.ok and back == head
    c, back = ctrl.read(zq, 1, z["wp"], 1)
    assert c.ok and back == tail
    zoned_io_ok(ctrl, zq, geo)


def test_concurrent_appends_get_distinct_places(ctrl, zq, geo):
    # appends in flight on two queues at once: each lands in its own range
    z0 = zslba(geo, 10)
    sq2 = ctrl.create_io_queues(2, entries=64)
    n = 2
    pending = []
    for k in range(24):
        sq = zq if k % 2 else sq2
        data = bytes([k + 1]) * (n * geo.bs)
        addr = ctrl.buffer(len(data), data)
        cid = ctrl.submit(sq, ctrl.rw_cmd(nvme.IO_ZONE_APPEND, 1, z0, n, prp1=addr,
                                          prp2=ctrl.prps(addr, len(data))[1]))
        pending.append((sq, cid, data))
    placed = {}
    for sq, cid, data in pending:
        c = ctrl.wait(sq, cid)
        assert c.ok, c
        placed[nvme.append_lba(c)] = data
    assert sorted(placed) == list(range(z0, z0 + 24 * n, n))
    expect_zone(ctrl, zq, geo, 10, ZS_IMPLICIT_OPEN, z0 + 24 * n)
    for lba, data in placed.items():
        c, back = ctrl.read(zq, 1, lba, n)
        assert c.ok and back == data, "lba %d" % lba
    zoned_io_ok(ctrl, zq, geo)
