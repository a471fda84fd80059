"""What a zoned drive does at start with the zone state it finds after its data
(memory-backend-file, share=on): state saved with other settings is refused with a
message naming the setting, the saved value and the new one, never silently reset; a
damaged record falls back to the zone's previous record, and a zone that no record
explains is refused; a data area holding data with no zone state (a nossd file reused as
zoned) is refused, because Empty zones must read as zeroes; zone state that would need
more host memory than the limit is refused.

Before (e84f9bc) every mismatch started the drive with all zones Empty over the old data,
and records had no checksum."""

import os
import struct

import pytest

import qtest_machine
from nvme import ZS_CLOSED, ZS_EMPTY
from qtest import QEMULaunchError, QTest
from qtest_machine import QEMU, DevConfig, device_args
from test_zns_persistence import AFTER, EXTRA, Drive, check, populate

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

MIB = 1 << 20
META = 16 * MIB             # where the zone state starts in the file: after 16 MiB of data
HDR, REC = 64, 32


def start_error(cfg, workdir):
    """QEMU's messages when it refuses to start with cfg; None if it started."""
    if not os.path.exists(QEMU) or not qtest_machine.qemu_has_device("femu"):
        pytest.skip("no QEMU with the femu device at %s" % QEMU)
    try:
        qt = QTest(QEMU, device_args(cfg, str(workdir)))
    except QEMULaunchError as e:
        return e.output
    qt.close()
    return None


def cfg_with(path, extra=EXTRA, size_mb=16, **kw):
    return DevConfig(mode=kw.pop("mode", 3), size_mb=size_mb, extra=extra, memdev_file=path,
                     memdev_mb=kw.pop("memdev_mb", 17), **kw)


def refused(cfg, workdir, words):
    msg = start_error(cfg, workdir)
    assert msg is not None, "QEMU started with %s" % cfg.extra
    for w in words + ["start over with a new or zeroed backing file"]:
        assert w in msg, "%r not in the message:\n%s" % (w, msg)
    return msg


@pytest.fixture
def saved(tmp_path):
    """A backing file holding a populated zoned drive; returns (path, data)."""
    path = str(tmp_path / "zns.img")
    d = Drive(path, tmp_path)
    data = populate(d)
    d.shutdown()
    return path, data


def still_there(path, tmp_path, data):
    """The refusal changed nothing: the drive comes back as saved."""
    d = Drive(path, tmp_path)
    try:
        check(d, data, AFTER)
    finally:
        d.shutdown()


CHANGED = [
    ("zns_zone_size_mb=2", ["zns_zone_size_mb", "zones of 1 MiB, now 2 MiB"]),
    ("zns_zone_cap=256K", ["zns_zone_cap", "524288 bytes, now 262144 bytes"]),
    ("zns_zd_ext_size=128", ["zns_zd_ext_size=64, now 128"]),
    ("zns_max_open=4,zns_max_active=4", ["5 Closed zones", "zns_max_active=4",
                                         "at least 5"]),
]


@pytest.mark.parametrize("change,words", CHANGED, ids=[c[0] for c in CHANGED])
def test_changed_setting_is_refused(saved, tmp_path, change, words):
    path, data = saved
    props = dict(p.split("=") for p in EXTRA.split(","))
    props.update(dict(p.split("=") for p in change.split(",")))
    extra = ",".join("%s=%s" % kv for kv in props.items())
    refused(cfg_with(path, extra), tmp_path, words + ["memdev 'femumem'"])
    still_there(path, tmp_path, data)


def test_changed_lba_size_is_refused(saved, tmp_path):
    path, data = saved
    refused(cfg_with(path, lba_index=1), tmp_path, ["512-byte LBAs", "4096-byte LBAs",
                                                    "lba_index"])
    still_there(path, tmp_path, data)


def test_changed_zone_count_is_refused(tmp_path):
    """Two zoned namespaces of 8 zones, then of 10 and 6: namespace 1's state is in the
    same place (after all the data), for another number of zones."""
    path = str(tmp_path / "zns.img")
    two = dict(namespaces=2, memdev_mb=18)
    assert start_error(cfg_with(path, EXTRA + ",ns_sizes_mb=8:8", **two), tmp_path) is None
    refused(cfg_with(path, EXTRA + ",ns_sizes_mb=10:6", **two), tmp_path,
            ["zoned namespace 1", "8 zones (8 MiB)", "10 zones (10 MiB;", "devsz_mb"])


def test_smaller_drive_is_refused(saved, tmp_path):
    """devsz_mb=15 on the same file: the state would be looked for inside zone 15."""
    path, data = saved
    msg = start_error(cfg_with(path, size_mb=15), tmp_path)
    assert msg is not None and "devsz_mb" in msg, msg
    still_there(path, tmp_path, data)


def test_older_format_is_refused(saved, tmp_path):
    path, _ = saved
    with open(path, "r+b") as f:
        f.seek(META)
        # version 1: magic, version, zones, size, capacity, extension bytes, no checksum
        f.write(struct.pack("<4sIQQQI4x", b"FZNS", 1, 16, 2048, 1024, 64))
    refused(cfg_with(path), tmp_path, ["format version 1", "version 2"])


def test_nossd_file_reused_as_zoned_is_refused(tmp_path):
    path = str(tmp_path / "nossd.img")
    # a fresh file starts (and is formatted) as zoned
    assert start_error(cfg_with(str(tmp_path / "fresh.img")), tmp_path) is None
    cfg = DevConfig(mode=2, size_mb=16, memdev_file=path, memdev_mb=17)
    m = qtest_machine.Machine(cfg, str(tmp_path))
    try:
        m.ctrl.enable()
        sq = m.ctrl.create_io_queues(1)
        c = m.ctrl.write(sq, 1, 2048 * 9 + 3, b"\x5a" * 512)
        assert c.ok, c
        m.ctrl.shutdown()
    finally:
        m.close()
    refused(cfg_with(path), tmp_path, ["holds data but there is no zone state",
                                       "read as zeroes"])


def records(path, zone):
    """Zone's two record slots in the file: [(offset, seq)]."""
    with open(path, "rb") as f:
        out = []
        for s in range(2):
            off = META + HDR + (2 * zone + s) * REC
            f.seek(off)
            out.append((off, struct.unpack("<Q", f.read(8))[0]))
        return out


def flip(path, offset, mask=0x01):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ mask]))


@pytest.fixture
def interrupted(tmp_path):
    """Zone 3 (Closed at wp 5) written 3 more blocks, then QEMU killed: its newest record
    says wp 8, the one before wp 5. Returns (path, data, the 3 blocks)."""
    path = str(tmp_path / "zns.img")
    d = Drive(path, tmp_path)
    data = populate(d)
    more = d.write(3, 3)
    d.kill()
    return path, data, more


def test_damaged_newest_record_gives_the_previous_state(interrupted, tmp_path):
    path, data, more = interrupted
    (o0, s0), (o1, s1) = records(path, 3)
    newest = o0 if s0 > s1 else o1
    flip(path, newest + 9)                      # a bit of its write pointer
    d = Drive(path, tmp_path)
    try:
        z = d.zone(3)
        assert (z["zs"], z["wp"]) == (ZS_CLOSED, d.z(3) + 5), z
        # the 3 blocks of the lost update are above the write pointer: zeroes again
        assert d.read(d.z(3), 8) == data[3] + bytes(3 * d.bs)
        log = d.m.qt.log()
        assert "1 zones had a damaged state record" in log, log
        assert "cleared data above the write pointer of 1 zones" in log, log
        # and it goes on from there
        d.write(3, 1)
        assert d.zone(3)["wp"] == d.z(3) + 6
    finally:
        d.shutdown()


def test_undamaged_interrupted_drive_keeps_the_write(interrupted, tmp_path):
    path, data, more = interrupted
    d = Drive(path, tmp_path)
    try:
        z = d.zone(3)
        assert (z["zs"], z["wp"]) == (ZS_CLOSED, d.z(3) + 8), z
        assert d.read(d.z(3), 8) == data[3] + more
        assert "damaged" not in d.m.qt.log()
    finally:
        d.shutdown()


def test_zone_no_record_explains_is_refused(interrupted, tmp_path):
    path, _, _ = interrupted
    for off, _ in records(path, 3):
        flip(path, off + 9)
    refused(cfg_with(path), tmp_path, ["zone 3", "neither of its two saved records"])


def test_damaged_header_is_refused(saved, tmp_path):
    path, _ = saved
    flip(path, META + 8)                        # the zone count
    refused(cfg_with(path), tmp_path, ["header is damaged"])


def test_zone_state_beyond_the_memory_limit_is_refused(tmp_path):
    """64 TiB of 1 MiB zones with 16320-byte extensions: about 1 TiB of zone state."""
    cfg = DevConfig(mode=3, size_mb=64 << 20, mdts=0,
                    extra="zns_zone_size_mb=1,zns_zd_ext_size=16320")
    msg = start_error(cfg, tmp_path)
    assert msg is not None, "QEMU started"
    for word in ("zns_zd_ext_size=16320", "zns_zone_size_mb", "devsz_mb", "host memory",
                 "4096 MiB"):
        assert word in msg, msg


def test_empty_zone_of_a_fresh_drive_reads_zeroes(tmp_path):
    """A fresh file: every zone Empty and reading zeroes, state formatted once."""
    path = str(tmp_path / "zns.img")
    d = Drive(path, tmp_path)
    try:
        assert all(z["zs"] == ZS_EMPTY for z in d.zones())
        assert d.read(d.z(5), 4) == bytes(4 * d.bs)
    finally:
        d.shutdown()
    with open(path, "rb") as f:
        f.seek(META)
        assert f.read(4) == b"FZNS"
