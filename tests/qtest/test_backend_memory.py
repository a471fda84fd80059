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


# ---- a private file (memory-backend-file,share=off) ----------------------------------
#
# The guest's writes never reach the file; Deallocate and Write Zeroes must read zeroes
# after, leave the file alone and cost no host memory: whole host pages are given back
# (the file's holes show again, anonymous zero pages cover its data), only the sub-page
# edges are cleared in place. The old code cleared the whole range with memset, which on a
# private mapping copies every page into QEMU's anonymous memory (a guest's whole-drive
# discard allocated the drive's size).

PRIVATE_MB = 256
PREFILLED_MB = 16        # the file's own data at the start (a zone); the rest: holes
GROWTH_BOUND = 4 * MIB   # two sub-page edges per command, and QEMU's own noise
BS = 512
LBAS = PRIVATE_MB * SECTORS_PER_MIB
FLASH = "nchs=2,luns_per_ch=2,pgs_per_blk=64"


def rss_anon(pid):
    """QEMU's anonymous resident memory (what a private mapping's copied pages cost)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon in /proc/%d/status" % pid)


def private_drive(tmp_path, mode, extra=""):
    """A drive on a private file whose first PREFILLED_MB MiB hold 0x5a (written through a
    first start on the file shared, so a kind's state after the data is there too), the
    rest of it a hole."""
    path = str(tmp_path / "private.img")
    css = nvme.CC_CSS_ALL if mode == 3 else nvme.CC_CSS_NVM

    def start(share):
        cfg = DevConfig(mode=mode, size_mb=PRIVATE_MB, memdev_file=path, memdev_share=share,
                        memdev_mb=PRIVATE_MB + 16, extra=extra, queues=1)
        m = qtest_machine.start_machine(cfg, str(tmp_path))
        m.ctrl.enable(css=css)
        return m, m.ctrl.create_io_queues(1, entries=16)

    m, sq = start(True)
    try:
        chunk = b"\x5a" * (512 << 10)
        for lba in range(0, PREFILLED_MB * SECTORS_PER_MIB, 1024):
            assert m.ctrl.write(sq, 1, lba, chunk).ok
    finally:
        m.close()
    m, sq = start(False)
    return m, sq, path


def pattern(nblocks, seed):
    return bytes((seed * 37 + i * 11 + (i >> 9)) & 0xFF for i in range(nblocks * BS))


def read_lbas(ctrl, sq, slba, nblocks):
    c, d = ctrl.read(sq, 1, slba, nblocks)
    assert c.ok, c
    return d


def assert_zeroed(ctrl, sq, first, end):
    """[first, end) reads zeroes: its edges, and a block in every MiB."""
    assert read_lbas(ctrl, sq, first, 16) == bytes(16 * BS)
    assert read_lbas(ctrl, sq, end - 16, 16) == bytes(16 * BS)
    for lba in range(first - first % SECTORS_PER_MIB + SECTORS_PER_MIB, end - 8,
                     SECTORS_PER_MIB):
        assert read_lbas(ctrl, sq, lba, 8) == bytes(8 * BS), "LBA %d" % lba


def assert_file_untouched(path):
    with open(path, "rb") as f:
        data = f.read(PREFILLED_MB * MIB)
    assert data == b"\x5a" * len(data)


# first LBA zeroed (not on a host page: the edges are cleared in place) and the end
FIRST, END = 2 * SECTORS_PER_MIB + 3, LBAS - 16 - 5


def write_neighbours(ctrl, sq):
    """Data just before and after [FIRST, END) (up to the last LBA), and inside it."""
    before, after, inside = pattern(16, 1), pattern(21, 2), pattern(1024, 3)
    assert ctrl.write(sq, 1, FIRST - 16, before).ok
    assert ctrl.write(sq, 1, END, after).ok
    assert ctrl.write(sq, 1, 100 * SECTORS_PER_MIB + 1, inside).ok
    return before, after


def assert_neighbours(ctrl, sq, before, after):
    assert read_lbas(ctrl, sq, FIRST - 16, 16) == before
    assert read_lbas(ctrl, sq, END, 21) == after


def write_zeroes_range(ctrl, sq, first, end, step=65536):
    """Write Zeroes over [first, end), `step` blocks at most per command, each ending on a
    multiple of step (a zone's end)."""
    lba = first
    while lba < end:
        n = min(step - lba % step, end - lba)
        c = ctrl.write_zeroes(sq, 1, lba, n)
        assert c.ok, c
        lba += n


@pytest.mark.parametrize("mode,extra", [(2, ""), (1, FLASH), (4, FLASH)],
                         ids=["nossd", "blackbox", "fdp"])
@pytest.mark.parametrize("op", ["deallocate", "write_zeroes"])
def test_private_file_zeroing_costs_no_memory(tmp_path, mode, extra, op):
    m, sq, path = private_drive(tmp_path, mode, extra)
    try:
        ctrl = m.ctrl
        before, after = write_neighbours(ctrl, sq)
        rss0 = rss_anon(m.qt.pid)
        if op == "deallocate":
            c = ctrl.dsm_deallocate(sq, 1, [(FIRST, END - FIRST)])
            assert c.ok, c
        else:
            write_zeroes_range(ctrl, sq, FIRST, END)
        grown = rss_anon(m.qt.pid) - rss0
        assert grown < GROWTH_BOUND, "QEMU's anonymous memory grew by %d KiB zeroing %d " \
            "MiB" % (grown >> 10, (END - FIRST) * BS >> 20)
        assert_zeroed(ctrl, sq, FIRST, END)
        assert_neighbours(ctrl, sq, before, after)
        # the file's own data outside the range is still what the guest reads
        assert read_lbas(ctrl, sq, 0, 8) == b"\x5a" * (8 * BS)
    finally:
        m.close()
    assert_file_untouched(path)


ZONE_MB = 16


@pytest.mark.parametrize("buffer", ["", ",plp=selective,plp_buf_mb=1,buf_mb=1"],
                         ids=["direct", "write-buffer"])
def test_private_file_zns_write_zeroes_and_reset_cost_no_memory(tmp_path, buffer):
    """Zoned: zone 0 holds the file's data; Write Zeroes from an unaligned write pointer in
    zone 1 up to the last LBA, then a Reset of zone 0 and of every other zone after 1.
    write-buffer: the Write Zeroes go through the write buffer, whose flushes clear the
    sectors at home (they copied 253 MiB of zeroes into the private mapping)."""
    m, sq, path = private_drive(tmp_path, 3, "zns_zone_size_mb=%d" % ZONE_MB + buffer)
    try:
        ctrl = m.ctrl
        zone = ZONE_MB * SECTORS_PER_MIB
        head = pattern(2051, 4)
        for lba in range(0, 2051, 1024):
            assert ctrl.write(sq, 1, zone + lba, head[lba * BS:(lba + 1024) * BS]).ok
        rss0 = rss_anon(m.qt.pid)
        write_zeroes_range(ctrl, sq, zone + 2051, LBAS, step=zone)
        for z in [0] + list(range(2, PRIVATE_MB // ZONE_MB, 2)):
            assert ctrl.zone_send(sq, 1, z * zone, nvme.ZSA_RESET).ok
        grown = rss_anon(m.qt.pid) - rss0
        assert grown < GROWTH_BOUND, "QEMU's anonymous memory grew by %d KiB" % (grown >> 10)
        for lba in range(0, 2051, 1024):
            assert read_lbas(ctrl, sq, zone + lba, min(1024, 2051 - lba)) == \
                head[lba * BS:(lba + 1024) * BS]
        assert_zeroed(ctrl, sq, 0, 16)
        assert_zeroed(ctrl, sq, zone - 16, zone)
        assert_zeroed(ctrl, sq, zone + 2051, LBAS)
    finally:
        m.close()
    assert_file_untouched(path)


def test_private_file_whitebox_chunk_reset_costs_no_memory(tmp_path):
    """Whitebox: a Vector Chunk Reset of chunks the file holds data for (written through a
    first start on the file shared) gives their pages back; the other chunks keep their
    data. (Each reset also clears its chunk's 16 bytes of OOB per sector in place: 16 KiB a
    chunk, inside the bound.)"""
    from test_ocssd import FLASH as OC_FLASH, Oc
    path = str(tmp_path / "whitebox.img")
    geo = "lnum_ch=2,lnum_lun=4,lnum_pln=1,lsecs_per_pg=4,lpgs_per_blk=256," + OC_FLASH

    def start(share):
        cfg = DevConfig(mode=0, lba_index=1, size_mb=64, extra=geo, memdev_file=path,
                        memdev_share=share, memdev_mb=80, queues=1)
        m = qtest_machine.start_machine(cfg, str(tmp_path))
        m.ctrl.enable()
        return m, Oc(m.ctrl, m.ctrl.create_io_queues(1, entries=64), m)

    m, oc = start(True)
    try:
        assert oc.clba * oc.bs == 4 * MIB
        kept = {c: oc.fill(c, oc.clba)[0] for c in range(oc.nchunks)}
        m.ctrl.shutdown()
    finally:
        m.close()
    m, oc = start(False)
    try:
        reset = list(range(0, oc.nchunks, 2))
        rss0 = rss_anon(m.qt.pid)
        c, _ = oc.reset([oc.slba(k) for k in reset])
        assert c.ok, c
        grown = rss_anon(m.qt.pid) - rss0
        assert grown < GROWTH_BOUND, "QEMU's anonymous memory grew by %d KiB resetting " \
            "%d MiB" % (grown >> 10, len(reset) * 4)
        for k in (reset[0], reset[-1]):
            for sec in (0, oc.clba - 64):
                c, d = oc.std_read(oc.slba(k, sec), 64)
                assert c.ok and d == bytes(64 * oc.bs), (k, sec)
        for k in (1, oc.nchunks - 1):
            c, d = oc.std_read(oc.slba(k, oc.clba - 64), 64)
            assert c.ok and d == kept[k][-64 * oc.bs:], k
    finally:
        m.close()
