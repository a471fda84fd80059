"""Freed space goes back to the host: with a memory-backend-file (share=on) behind the
drive, Deallocate, Write Zeroes and a zone Reset punch holes in the file, so its allocated
size (st_blocks) drops by what was freed, no more, and the rest of the data stays."""

import os

import pytest

import nvme
import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's backend")

MIB = 1 << 20
SECTORS_PER_MIB = MIB // 512


def allocated(path):
    return os.stat(path).st_blocks * 512


def start(tmp_path, mode, extra=""):
    path = str(tmp_path / "drive.img")
    cfg = DevConfig(mode=mode, size_mb=16, extra=extra, memdev_file=path)
    m = qtest_machine.start_machine(cfg, str(tmp_path))
    css = nvme.CC_CSS_ALL if mode == 3 else nvme.CC_CSS_NVM
    m.ctrl.enable(css=css)
    return m, m.ctrl.create_io_queues(1), path


def fill(ctrl, sq, first_mib, mib):
    """Random data over [first_mib, first_mib + mib) MiB, 512 KiB per write."""
    data = os.urandom(mib * MIB)
    for off in range(0, len(data), 512 << 10):
        lba = first_mib * SECTORS_PER_MIB + off // 512
        assert ctrl.write(sq, 1, lba, data[off:off + (512 << 10)]).ok
    return data


def read_mib(ctrl, sq, first_mib, mib):
    out = b""
    for k in range(mib * 2):
        c, d = ctrl.read(sq, 1, first_mib * SECTORS_PER_MIB + k * 1024, 1024)
        assert c.ok, c
        out += d
    return out


def assert_freed(before, after, freed):
    """The file lost `freed` bytes of allocation, give or take one host page."""
    assert freed - 4096 <= before - after <= freed + 4096, (
        "allocated %d -> %d bytes: %d freed, expected %d" % (before, after, before - after,
                                                              freed))


def test_deallocate_and_write_zeroes_punch_holes(tmp_path):
    m, sq, path = start(tmp_path, mode=2)
    try:
        ctrl = m.ctrl
        data = fill(ctrl, sq, 0, 8)
        base = allocated(path)
        assert base >= 8 * MIB, base
        c = ctrl.dsm_deallocate(sq, 1, [(0, 2 * SECTORS_PER_MIB),
                                        (4 * SECTORS_PER_MIB, SECTORS_PER_MIB)])
        assert c.ok, c
        after_dsm = allocated(path)
        assert_freed(base, after_dsm, 3 * MIB)
        assert ctrl.write_zeroes(sq, 1, 6 * SECTORS_PER_MIB, SECTORS_PER_MIB // 2).ok
        assert_freed(after_dsm, allocated(path), MIB // 2)
        back = read_mib(ctrl, sq, 0, 8)
        zero = bytes(MIB)
        assert back[:2 * MIB] == zero + zero
        assert back[2 * MIB:4 * MIB] == data[2 * MIB:4 * MIB]
        assert back[4 * MIB:5 * MIB] == zero
        assert back[5 * MIB:6 * MIB] == data[5 * MIB:6 * MIB]
        assert back[6 * MIB:6 * MIB + MIB // 2] == zero[:MIB // 2]
        assert back[6 * MIB + MIB // 2:] == data[6 * MIB + MIB // 2:]
    finally:
        m.close()


def test_zone_reset_punches_a_hole(tmp_path):
    m, sq, path = start(tmp_path, mode=3, extra="zns_zone_size_mb=2")
    try:
        ctrl = m.ctrl
        assert ctrl.zone_send(sq, 1, 0, nvme.ZSA_RESET, select_all=True).ok
        data = fill(ctrl, sq, 0, 6)             # zones 0, 1 and 2
        base = allocated(path)
        assert ctrl.zone_send(sq, 1, 2 * SECTORS_PER_MIB, nvme.ZSA_RESET).ok
        assert_freed(base, allocated(path), 2 * MIB)
        back = read_mib(ctrl, sq, 0, 6)
        assert back[:2 * MIB] == data[:2 * MIB]
        assert back[2 * MIB:4 * MIB] == bytes(2 * MIB)
        assert back[4 * MIB:] == data[4 * MIB:]
    finally:
        m.close()
