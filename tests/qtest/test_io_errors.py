"""Every I/O error status; after each one a normal write/read must work."""

import struct

import pytest

import nvme
from nvme import IO_READ, IO_WRITE, SC_INVALID_FIELD, SC_PRP_OFFSET_INVALID

HOLE = 0x40000000               # above 256 MiB of RAM, below the PCI window
BEYOND = 0xFFFFFFFFF000         # far beyond any RAM


def test_unknown_io_opcode(ctrl, ioq, io_ok):
    for opc in (0x7E, 0x03):
        c = ctrl.execute(ioq, nvme.cmd(opc, nsid=1))
        assert c.is_(0, nvme.SC_INVALID_OPCODE), (hex(opc), c)
    io_ok(ctrl, ioq)


def test_invalid_nsid(ctrl, ioq, io_ok):
    nn = ctrl.id_ctrl()["nn"]
    buf = ctrl.buffer(4096)
    for opc in (IO_READ, IO_WRITE):
        for nsid in (0, nn + 1, 0xFFFFFFFF):
            c = ctrl.execute(ioq, ctrl.rw_cmd(opc, nsid, 0, 1, prp1=buf))
            assert c.is_(0, nvme.SC_INVALID_NS), (opc, nsid, c)
    io_ok(ctrl, ioq)


def test_lba_out_of_range(ctrl, ioq, io_ok):
    nsze = ctrl.id_ns(1)["nsze"]
    buf = ctrl.buffer(8192)
    cases = [(IO_READ, nsze, 1), (IO_READ, nsze - 1, 2), (IO_WRITE, nsze, 1),
             (IO_WRITE, nsze - 1, 2), (IO_READ, 1 << 63, 1),
             (nvme.IO_WRITE_ZEROES, nsze - 3, 4), (nvme.IO_COMPARE, nsze, 1)]
    for opc, slba, n in cases:
        prp = {} if opc == nvme.IO_WRITE_ZEROES else {"prp1": buf, "prp2": buf + 4096}
        c = ctrl.execute(ioq, ctrl.rw_cmd(opc, 1, slba, n, **prp))
        assert c.is_(0, nvme.SC_LBA_RANGE), (opc, slba, n, c)
    io_ok(ctrl, ioq)


def test_transfer_larger_than_mdts(ctrl, ioq, io_ok):
    mdts = ctrl.id_ctrl()["mdts"]
    if not mdts:
        pytest.skip("no transfer limit")
    limit = (1 << mdts) * 4096
    nblocks = limit // ctrl.block_size(1) + 1
    buf = ctrl.buffer(limit + 4096)
    prp1, prp2 = ctrl.prps(buf, limit + 4096)
    for opc in (IO_READ, IO_WRITE):
        c = ctrl.execute(ioq, ctrl.rw_cmd(opc, 1, 0, nblocks, prp1=prp1, prp2=prp2))
        assert c.is_(0, SC_INVALID_FIELD), c
    io_ok(ctrl, ioq)


def prp_error(c):
    return c.sct == 0 and c.sc in (SC_INVALID_FIELD, SC_PRP_OFFSET_INVALID)


def test_prp1_not_dword_aligned(ctrl, ioq, io_ok):
    buf = ctrl.buffer(4096)
    for off in (1, 2, 3):
        c = ctrl.execute(ioq, ctrl.rw_cmd(IO_READ, 1, 0, 1, prp1=buf + off))
        assert prp_error(c), (off, c)
    io_ok(ctrl, ioq)


def test_prp2_with_offset(ctrl, ioq, io_ok):
    bs = ctrl.block_size(1)
    buf = ctrl.buffer(3 * 4096)
    c = ctrl.execute(ioq, ctrl.rw_cmd(IO_READ, 1, 0, 8192 // bs, prp1=buf,
                                      prp2=buf + 4096 + 0x200))
    assert prp_error(c), c
    io_ok(ctrl, ioq)


def test_prp_list_entry_with_offset(ctrl, ioq, io_ok):
    bs = ctrl.block_size(1)
    buf = ctrl.buffer(4 * 4096)
    lst = ctrl.buffer(4096, struct.pack("<2Q", buf + 4096, buf + 2 * 4096 + 0x100))
    c = ctrl.execute(ioq, ctrl.rw_cmd(IO_WRITE, 1, 0, 3 * 4096 // bs, prp1=buf, prp2=lst))
    assert prp_error(c), c
    io_ok(ctrl, ioq)


def sgl_supported(ctrl):
    if not ctrl.id_ctrl()["sgls"] & 3:
        pytest.skip("SGLs not supported")


def test_sgl_descriptor_type_invalid(ctrl, ioq, io_ok):
    sgl_supported(ctrl)
    buf = ctrl.buffer(4096)
    bs = ctrl.block_size(1)
    # Reserved type 0xE in the command ...
    sgl = nvme.sgl_desc(buf, bs, dtype=0xE)
    c = ctrl.execute(ioq, ctrl.rw_cmd(IO_READ, 1, 0, 1, sgl=sgl))
    assert c.is_(0, nvme.SC_SGL_DESCR_TYPE_INVALID), c
    # ... and inside a last segment.
    seg = ctrl.buffer(32, nvme.sgl_desc(buf, bs // 2) + nvme.sgl_desc(buf + 2048, bs // 2, 0xE))
    sgl = nvme.sgl_desc(seg, 32, nvme.SGL_LAST_SEGMENT)
    c = ctrl.execute(ioq, ctrl.rw_cmd(IO_READ, 1, 0, 1, sgl=sgl))
    assert c.is_(0, nvme.SC_SGL_DESCR_TYPE_INVALID), c
    io_ok(ctrl, ioq)


def test_data_sgl_length_invalid(ctrl, ioq, io_ok):
    sgl_supported(ctrl)
    bs = ctrl.block_size(1)
    buf = ctrl.buffer(4 * bs)
    sgl = nvme.sgl_desc(buf, bs)
    c = ctrl.execute(ioq, ctrl.rw_cmd(IO_WRITE, 1, 0, 2, sgl=sgl))
    assert c.is_(0, nvme.SC_DATA_SGL_LEN_INVALID), c
    seg = ctrl.buffer(32, nvme.sgl_desc(buf, bs) + nvme.sgl_desc(buf + bs, bs // 2))
    sgl = nvme.sgl_desc(seg, 32, nvme.SGL_LAST_SEGMENT)
    c = ctrl.execute(ioq, ctrl.rw_cmd(IO_READ, 1, 0, 2, sgl=sgl))
    assert c.is_(0, nvme.SC_DATA_SGL_LEN_INVALID), c
    io_ok(ctrl, ioq)


@pytest.mark.parametrize("addr", [BEYOND, HOLE], ids=["beyond", "hole"])
@pytest.mark.parametrize("opc", [IO_READ, IO_WRITE], ids=["read", "write"])
def test_dma_outside_ram(ctrl, ioq, io_ok, addr, opc):
    c = ctrl.execute(ioq, ctrl.rw_cmd(opc, 1, 0, 1, prp1=addr))
    assert c.is_(0, nvme.SC_DATA_XFER_ERROR), c
    io_ok(ctrl, ioq)


@pytest.mark.parametrize("addr", [BEYOND, HOLE], ids=["beyond", "hole"])
def test_prp_list_outside_ram(ctrl, ioq, io_ok, addr):
    bs = ctrl.block_size(1)
    buf = ctrl.buffer(3 * 4096)
    c = ctrl.execute(ioq, ctrl.rw_cmd(IO_READ, 1, 0, 3 * 4096 // bs, prp1=buf, prp2=addr))
    assert c.is_(0, nvme.SC_DATA_XFER_ERROR), c
    io_ok(ctrl, ioq)


def test_sgl_segment_outside_ram(ctrl, ioq, io_ok):
    sgl_supported(ctrl)
    sgl = nvme.sgl_desc(HOLE, 32, nvme.SGL_LAST_SEGMENT)
    c = ctrl.execute(ioq, ctrl.rw_cmd(IO_READ, 1, 0, 1, sgl=sgl))
    assert c.is_(0, nvme.SC_DATA_XFER_ERROR), c
    io_ok(ctrl, ioq)


def test_doorbell_for_missing_queues(ctrl, machine, ioq, io_ok):
    q = machine.cfg.queues
    for qid in (2, q, q + 1):
        if ctrl.sq_doorbell(qid) + 8 > machine.pci.bars[0][1]:
            continue
        ctrl.wr32(ctrl.sq_doorbell(qid), 1)
        ctrl.wr32(ctrl.cq_doorbell(qid), 1)
    io_ok(ctrl, ioq)
    assert not ctrl.rd32(nvme.REG_CSTS) & nvme.CSTS_CFS


def test_doorbell_invalid_values(ctrl, io_ok):
    sq = ctrl.create_io_queues(1, entries=16)
    io_ok(ctrl, sq)
    ctrl.wr32(ctrl.sq_doorbell(1), 16)          # tail == size
    ctrl.wr32(ctrl.sq_doorbell(1), 0xFFFF)
    ctrl.wr32(ctrl.cq_doorbell(1), 0x8000)      # head beyond size
    ctrl.wr32(ctrl.sq_doorbell(0), 0x7FFF)      # admin too
    io_ok(ctrl, sq)
    assert ctrl.identify(1)[0].ok
    assert not ctrl.rd32(nvme.REG_CSTS) & nvme.CSTS_CFS
