"""PRP lists a hostile or careless host can build, and transfers shorter than the host's
buffer (device review finding 1, and the cause of the zoned-drive attach failures).

mdts=0 (no transfer limit) lets a single command walk several PRP list pages.
"""

import struct

import pytest

import nvme
from qtest_machine import DevConfig
from qtest import PAGE

DEV = DevConfig(size_mb=64, mdts=0)


def rw_prp(ctrl, opc, slba, nbytes, prp1, prp2):
    return ctrl.rw_cmd(opc, 1, slba, nbytes // 512, prp1=prp1, prp2=prp2)


def test_prp_list_whose_only_entry_points_to_itself(ctrl, ioq, io_ok):
    """Finding 1: PRP2 at the last slot of a page, holding its own address. The device
    used to take that entry as the next list forever, holding its lock: the VM hung."""
    data = ctrl.buffer(PAGE)
    lst = ctrl.alloc.alloc(PAGE) + PAGE - 8
    ctrl.qt.memwrite(lst, struct.pack("<Q", lst))
    c = ctrl.execute(ioq, rw_prp(ctrl, nvme.IO_WRITE, 0, 3 * PAGE, data, lst), timeout=5)
    assert c.code == (nvme.SCT_GENERIC, nvme.SC_PRP_OFFSET_INVALID), c
    assert not ctrl.rd32(nvme.REG_CSTS) & nvme.CSTS_CFS
    io_ok(ctrl, ioq)


def test_prp_list_pointer_must_be_page_aligned(ctrl, ioq, io_ok):
    """A list pointer is a PRP entry: offset 0. An unaligned chain is refused."""
    pages = [ctrl.buffer(PAGE) for _ in range(3)]
    lst = ctrl.alloc.alloc(2 * PAGE) + PAGE - 16      # two slots before the page ends
    nxt = ctrl.alloc.alloc(PAGE) + 8
    ctrl.qt.memwrite(lst, struct.pack("<QQ", pages[1], nxt))
    ctrl.qt.memwrite(nxt, struct.pack("<Q", pages[2]))
    c = ctrl.execute(ioq, rw_prp(ctrl, nvme.IO_WRITE, 0, 4 * PAGE, pages[0], lst), timeout=5)
    assert c.code == (nvme.SCT_GENERIC, nvme.SC_PRP_OFFSET_INVALID), c
    io_ok(ctrl, ioq)


def test_prp_list_chaining_to_itself_terminates(ctrl, ioq, rng):
    """An aligned list page whose last entry points back to itself is legal (its data
    entries are just used again): the walk consumes the transfer and ends."""
    npages = 1200                       # more than two passes over a 512-slot page
    target = [ctrl.buffer(PAGE) for _ in range(511)]
    lst = ctrl.alloc.alloc(PAGE)
    ctrl.qt.memwrite(lst, struct.pack("<512Q", *(target + [lst])))
    first = ctrl.buffer(PAGE, rng.randbytes(PAGE))
    for t in target:
        ctrl.qt.memwrite(t, rng.randbytes(PAGE))
    c = ctrl.execute(ioq, rw_prp(ctrl, nvme.IO_WRITE, 0, npages * PAGE, first, lst),
                     timeout=30)
    assert c.ok, c
    # page k of the transfer came from target[(k - 1) % 511]
    c, back = ctrl.read(ioq, 1, (600 * PAGE) // 512, 8)
    assert c.ok and back == ctrl.qt.memread(target[(600 - 1) % 511], PAGE), c


@pytest.mark.parametrize("offset", [0, 0x800, PAGE - 64])
def test_short_log_into_a_long_buffer_keeps_the_prp_list(ctrl, offset):
    """The host offers 4 pages (PRP2 = a list); the log is shorter. The device must read
    PRP2 as a list because of the buffer's size, not as the data page its own transfer
    would fit in: it used to write the log's second page over the host's PRP list."""
    size = 4 * PAGE
    buf = ctrl.alloc.alloc(size + 2 * PAGE) + offset
    ctrl.qt.memset(buf, size, 0xA5)
    prp1, prp2 = ctrl.prps(buf, size)
    assert prp2 % PAGE == PAGE - 8 * 4 or prp2 % PAGE == 0 or offset
    list_before = ctrl.qt.memread(prp2, 8 * 4)
    numd = size // 4 - 1
    c = ctrl.admin_cmd(nvme.cmd(nvme.ADM_GET_LOG_PAGE, nsid=0xFFFFFFFF, prp1=prp1, prp2=prp2,
                                cdw10=0xCA | (numd & 0xFFFF) << 16, cdw11=numd >> 16))
    assert c.ok, c
    assert ctrl.qt.memread(prp2, 8 * 4) == list_before, "the PRP list was overwritten"
    got = ctrl.qt.memread(buf, size)
    text = got.split(b"\0", 1)[0].decode()
    assert text.startswith("mode nossd\n") and "completions " in text, text[:200]
    # the log is 4096 bytes: it ends exactly there, the rest of the buffer is untouched
    assert got[len(text):PAGE] == bytes(PAGE - len(text))
    assert got[PAGE:] == b"\xA5" * (size - PAGE)
