"""Zoned namespace open and active resources (ZNS 1.1 2.1.1.4): at most 2 open and 3
active zones. Implicit opens (writes, appends) and explicit opens close the least
recently implicitly opened zone when out of open resources; without one they fail with
Too Many Open Zones; Empty zones need an active resource (Too Many Active Zones).

Zones are 1 MiB with the capacity equal to the size, so writes can reach the boundary."""

import os

import pytest

import nvme
import qtest_machine
from nvme import (SCT_CMD_SPECIFIC, ZS_CLOSED, ZS_EMPTY, ZS_EXPLICIT_OPEN, ZS_FULL,
                  ZS_IMPLICIT_OPEN)
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

DEV = DevConfig(mode=3, size_mb=16, extra=(
    "zns_zone_size_mb=1,zns_max_open=2,zns_max_active=3,zns_zd_ext_size=64"))
BS = 512
ZSZE = (1 << 20) // BS
NZONES = 16
TOO_MANY_OPEN = (SCT_CMD_SPECIFIC, nvme.SC_ZONE_TOO_MANY_OPEN)
TOO_MANY_ACTIVE = (SCT_CMD_SPECIFIC, nvme.SC_ZONE_TOO_MANY_ACTIVE)
BOUNDARY = (SCT_CMD_SPECIFIC, nvme.SC_ZONE_BOUNDARY)


def z(i):
    return i * ZSZE


def write(ctrl, sq, i, n=1):
    """Write n blocks at zone i's write pointer; returns the completion."""
    wp = ctrl.zone(sq, 1, z(i))["wp"]
    return ctrl.write(sq, 1, wp, os.urandom(n * BS))


def send(ctrl, sq, i, action, data=None):
    return ctrl.zone_send(sq, 1, z(i), action, data=data)


def states(ctrl, sq, n=6):
    c, rep = ctrl.zone_report(sq, 1, size=64 + 64 * n, partial=True)
    assert c.ok, c
    return [d["zs"] for d in rep["zones"]]


def zoned_io_ok(ctrl, sq):
    """Resources come back with a reset, and a zone can be written and read again."""
    assert ctrl.zone_send(sq, 1, 0, nvme.ZSA_RESET, select_all=True).ok
    for i in (7, 8, 9):
        c = write(ctrl, sq, i)
        assert c.ok, c
    data = os.urandom(2 * BS)
    assert ctrl.write(sq, 1, z(9) + 1, data).ok
    c, back = ctrl.read(sq, 1, z(9) + 1, 2)
    assert c.ok and back == data, c
    assert ctrl.zone_send(sq, 1, 0, nvme.ZSA_RESET, select_all=True).ok


def test_write_closes_the_least_recently_implicitly_opened_zone(ctrl, zq):
    assert write(ctrl, zq, 0).ok
    assert write(ctrl, zq, 1).ok
    assert write(ctrl, zq, 0).ok        # writing again does not reopen it
    assert states(ctrl, zq) == [ZS_IMPLICIT_OPEN, ZS_IMPLICIT_OPEN] + [ZS_EMPTY] * 4
    assert write(ctrl, zq, 2).ok
    assert states(ctrl, zq) == [ZS_CLOSED, ZS_IMPLICIT_OPEN, ZS_IMPLICIT_OPEN] + [ZS_EMPTY] * 3
    # reopening zone 0 by a write closes zone 1, now the oldest
    c = write(ctrl, zq, 0)
    assert c.ok, c
    assert states(ctrl, zq) == [ZS_IMPLICIT_OPEN, ZS_CLOSED, ZS_IMPLICIT_OPEN] + [ZS_EMPTY] * 3
    assert ctrl.zone(zq, 1, z(0))["wp"] == z(0) + 3
    zoned_io_ok(ctrl, zq)


def test_append_closes_an_implicitly_opened_zone(ctrl, zq):
    assert write(ctrl, zq, 0).ok
    assert write(ctrl, zq, 1).ok
    c = ctrl.zone_append(zq, 1, z(2), os.urandom(BS))
    assert c.ok and nvme.append_lba(c) == z(2), c
    assert states(ctrl, zq)[:3] == [ZS_CLOSED, ZS_IMPLICIT_OPEN, ZS_IMPLICIT_OPEN]
    zoned_io_ok(ctrl, zq)


def test_explicit_open_closes_an_implicitly_opened_zone(ctrl, zq):
    assert write(ctrl, zq, 0).ok
    assert write(ctrl, zq, 1).ok
    c = send(ctrl, zq, 2, nvme.ZSA_OPEN)
    assert c.ok, c
    assert states(ctrl, zq)[:3] == [ZS_CLOSED, ZS_IMPLICIT_OPEN, ZS_EXPLICIT_OPEN]
    # explicitly opening an implicitly opened zone takes no new resource
    assert send(ctrl, zq, 1, nvme.ZSA_OPEN).ok
    assert states(ctrl, zq)[:3] == [ZS_CLOSED, ZS_EXPLICIT_OPEN, ZS_EXPLICIT_OPEN]
    zoned_io_ok(ctrl, zq)


def test_too_many_open_zones(ctrl, zq):
    assert send(ctrl, zq, 0, nvme.ZSA_OPEN).ok
    assert send(ctrl, zq, 1, nvme.ZSA_OPEN).ok
    # both open zones are explicitly opened: nothing may be closed for room
    c = write(ctrl, zq, 2)
    assert c.code == TOO_MANY_OPEN, c
    c = ctrl.zone_append(zq, 1, z(2), os.urandom(BS))
    assert c.code == TOO_MANY_OPEN, c
    c = send(ctrl, zq, 2, nvme.ZSA_OPEN)
    assert c.code == TOO_MANY_OPEN, c
    assert states(ctrl, zq)[:3] == [ZS_EXPLICIT_OPEN, ZS_EXPLICIT_OPEN, ZS_EMPTY]
    assert ctrl.zone(zq, 1, z(2))["wp"] == z(2)
    # the opened zones still take writes
    assert write(ctrl, zq, 0).ok and write(ctrl, zq, 1).ok
    # a Closed zone (active already) still needs an open resource
    assert send(ctrl, zq, 0, nvme.ZSA_CLOSE).ok
    assert send(ctrl, zq, 2, nvme.ZSA_OPEN).ok
    assert states(ctrl, zq)[:3] == [ZS_CLOSED, ZS_EXPLICIT_OPEN, ZS_EXPLICIT_OPEN]
    c = send(ctrl, zq, 0, nvme.ZSA_OPEN)
    assert c.code == TOO_MANY_OPEN, c
    c = write(ctrl, zq, 0)
    assert c.code == TOO_MANY_OPEN, c
    assert states(ctrl, zq)[:3] == [ZS_CLOSED, ZS_EXPLICIT_OPEN, ZS_EXPLICIT_OPEN]
    # closing one makes room
    assert send(ctrl, zq, 1, nvme.ZSA_CLOSE).ok
    assert write(ctrl, zq, 0).ok
    assert states(ctrl, zq)[:3] == [ZS_IMPLICIT_OPEN, ZS_CLOSED, ZS_EXPLICIT_OPEN]
    zoned_io_ok(ctrl, zq)


def test_too_many_active_zones(ctrl, zq):
    for i in range(3):
        assert write(ctrl, zq, i).ok
        assert send(ctrl, zq, i, nvme.ZSA_CLOSE).ok
    assert states(ctrl, zq)[:4] == [ZS_CLOSED] * 3 + [ZS_EMPTY]
    c = write(ctrl, zq, 3)
    assert c.code == TOO_MANY_ACTIVE, c
    c = ctrl.write_zeroes(zq, 1, z(3), 1)
    assert c.code == TOO_MANY_ACTIVE, c
    c = ctrl.zone_append(zq, 1, z(3), os.urandom(BS))
    assert c.code == TOO_MANY_ACTIVE, c
    c = send(ctrl, zq, 3, nvme.ZSA_OPEN)
    assert c.code == TOO_MANY_ACTIVE, c
    c = send(ctrl, zq, 3, nvme.ZSA_SET_ZDE, data=bytes(64))
    assert c.code == TOO_MANY_ACTIVE, c
    assert states(ctrl, zq)[:4] == [ZS_CLOSED] * 3 + [ZS_EMPTY]
    # finishing an Empty zone needs no resource
    assert send(ctrl, zq, 3, nvme.ZSA_FINISH).ok
    # the Closed zones are active already: they may open again
    assert write(ctrl, zq, 0).ok
    assert send(ctrl, zq, 1, nvme.ZSA_OPEN).ok
    assert states(ctrl, zq)[:5] == [ZS_IMPLICIT_OPEN, ZS_EXPLICIT_OPEN, ZS_CLOSED, ZS_FULL,
                                    ZS_EMPTY]
    # finishing an active zone releases its resource
    assert send(ctrl, zq, 2, nvme.ZSA_FINISH).ok
    assert write(ctrl, zq, 4).ok
    assert states(ctrl, zq)[:5] == [ZS_CLOSED, ZS_EXPLICIT_OPEN, ZS_FULL, ZS_FULL,
                                    ZS_IMPLICIT_OPEN]
    zoned_io_ok(ctrl, zq)


def test_close_keeps_the_active_resource(ctrl, zq):
    assert send(ctrl, zq, 0, nvme.ZSA_OPEN).ok
    assert send(ctrl, zq, 1, nvme.ZSA_OPEN).ok
    assert write(ctrl, zq, 0).ok
    assert send(ctrl, zq, 0, nvme.ZSA_CLOSE).ok
    assert send(ctrl, zq, 2, nvme.ZSA_OPEN).ok
    c = send(ctrl, zq, 3, nvme.ZSA_OPEN)
    assert c.code == TOO_MANY_ACTIVE, c
    # a reset releases it
    assert send(ctrl, zq, 0, nvme.ZSA_RESET).ok
    c = send(ctrl, zq, 3, nvme.ZSA_OPEN)
    assert c.code == TOO_MANY_OPEN, c       # active is free now, open is not
    assert send(ctrl, zq, 2, nvme.ZSA_FINISH).ok
    assert send(ctrl, zq, 3, nvme.ZSA_OPEN).ok
    assert states(ctrl, zq)[:4] == [ZS_EMPTY, ZS_EXPLICIT_OPEN, ZS_FULL, ZS_EXPLICIT_OPEN]
    zoned_io_ok(ctrl, zq)


def test_filling_a_zone_releases_its_resources(ctrl, zq):
    assert write(ctrl, zq, 2, 1).ok and send(ctrl, zq, 2, nvme.ZSA_CLOSE).ok
    assert send(ctrl, zq, 0, nvme.ZSA_OPEN).ok
    assert send(ctrl, zq, 1, nvme.ZSA_OPEN).ok
    c = send(ctrl, zq, 3, nvme.ZSA_OPEN)
    assert c.code == TOO_MANY_ACTIVE, c
    # write zone 0 up to its capacity (the zone size here)
    half = ZSZE // 2
    assert ctrl.write(zq, 1, z(0), os.urandom(half * BS)).ok
    assert ctrl.write(zq, 1, z(0) + half, os.urandom(half * BS)).ok
    assert states(ctrl, zq)[:4] == [ZS_FULL, ZS_EXPLICIT_OPEN, ZS_CLOSED, ZS_EMPTY]
    assert send(ctrl, zq, 3, nvme.ZSA_OPEN).ok
    assert states(ctrl, zq)[:4] == [ZS_FULL, ZS_EXPLICIT_OPEN, ZS_CLOSED, ZS_EXPLICIT_OPEN]
    zoned_io_ok(ctrl, zq)


def test_select_all_open_opens_all_closed_zones_or_none(ctrl, zq):
    for i in range(3):
        assert write(ctrl, zq, i).ok
        assert send(ctrl, zq, i, nvme.ZSA_CLOSE).ok
    c = ctrl.zone_send(zq, 1, 0, nvme.ZSA_OPEN, select_all=True)
    assert c.code == TOO_MANY_OPEN, c
    assert states(ctrl, zq)[:3] == [ZS_CLOSED] * 3, "none opened"
    assert send(ctrl, zq, 2, nvme.ZSA_FINISH).ok
    c = ctrl.zone_send(zq, 1, 0, nvme.ZSA_OPEN, select_all=True)
    assert c.ok, c
    assert states(ctrl, zq)[:3] == [ZS_EXPLICIT_OPEN, ZS_EXPLICIT_OPEN, ZS_FULL]
    zoned_io_ok(ctrl, zq)


def test_select_all_close_and_finish_release_resources(ctrl, zq):
    assert write(ctrl, zq, 0).ok
    assert send(ctrl, zq, 1, nvme.ZSA_OPEN).ok
    assert ctrl.zone_send(zq, 1, 0, nvme.ZSA_CLOSE, select_all=True).ok
    # two open resources free again, one active left
    assert write(ctrl, zq, 2).ok
    c = write(ctrl, zq, 3)
    assert c.code == TOO_MANY_ACTIVE, c
    assert ctrl.zone_send(zq, 1, 0, nvme.ZSA_FINISH, select_all=True).ok
    assert states(ctrl, zq)[:4] == [ZS_FULL] * 3 + [ZS_EMPTY]
    for i in (3, 4, 5):
        assert write(ctrl, zq, i).ok
    zoned_io_ok(ctrl, zq)


def test_write_and_append_crossing_the_zone_boundary(ctrl, zq):
    # the capacity is the zone size here: the next zone starts right after it
    n = ZSZE - 1
    chunk = 512 << 10
    lba = z(5)
    while n:
        k = min(n, chunk // BS)
        assert ctrl.write(zq, 1, lba, os.urandom(k * BS)).ok
        lba += k
        n -= k
    c = ctrl.write(zq, 1, lba, os.urandom(2 * BS))
    assert c.code == BOUNDARY, c
    c = ctrl.zone_append(zq, 1, z(5), os.urandom(2 * BS))
    assert c.code == BOUNDARY, c
    assert states(ctrl, zq, 7)[5:] == [ZS_IMPLICIT_OPEN, ZS_EMPTY]
    c, _ = ctrl.read(zq, 1, z(6) - 1, 2)
    assert c.code == BOUNDARY, c
    c = ctrl.zone_append(zq, 1, z(5), os.urandom(BS))
    assert c.ok and nvme.append_lba(c) == z(6) - 1, c
    assert states(ctrl, zq, 7)[5:] == [ZS_FULL, ZS_EMPTY]
    zoned_io_ok(ctrl, zq)
