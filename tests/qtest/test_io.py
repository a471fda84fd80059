"""NVM I/O: read/write round trips through every data pointer layout,
flush, write zeroes, deallocate, compare."""

import pytest

import nvme

KIB = 1024


def max_transfer(ctrl):
    mdts = ctrl.id_ctrl()["mdts"]
    return (1 << mdts) * 4096 if mdts else 1 << 30


def round_trip(ctrl, sq, rng, slba, size, wkw=None, rkw=None):
    if size > max_transfer(ctrl):
        pytest.skip("%d bytes exceed MDTS" % size)
    bs = ctrl.block_size(1)
    data = rng.randbytes(size)
    c = ctrl.write(sq, 1, slba, data, **(wkw or {}))
    assert c.ok, c
    c, back = ctrl.read(sq, 1, slba, size // bs, **(rkw or {}))
    assert c.ok, c
    assert back == data


@pytest.mark.parametrize("size", [512, 4 * KIB, 8 * KIB, 12 * KIB, 64 * KIB,
                                  128 * KIB, 256 * KIB, 512 * KIB])
@pytest.mark.parametrize("offset", [0, 512, 4092], ids=["aligned", "off512", "off4092"])
def test_prp_round_trip(ctrl, ioq, rng, size, offset):
    """PRP1 only, PRP1+PRP2 and PRP lists, with PRP1 at a page offset."""
    round_trip(ctrl, ioq, rng, 64, size, {"offset": offset}, {"offset": offset})


@pytest.mark.parametrize("slots", [2, 3, 17])
@pytest.mark.parametrize("size", [64 * KIB, 128 * KIB])
def test_prp_list_chain(ctrl, ioq, rng, size, slots):
    """The first PRP list ends `slots` entries before its page end, so the
    list continues on further list pages."""
    kw = {"list_first_slots": slots}
    round_trip(ctrl, ioq, rng, 1000, size, kw, {})
    round_trip(ctrl, ioq, rng, 1000, size, {}, kw)


def sgl_ok(ctrl):
    sgls = ctrl.id_ctrl()["sgls"] & 3
    if not sgls:
        pytest.skip("SGLs not supported")
    return sgls


@pytest.mark.parametrize("size", [512, 4 * KIB, 12 * KIB, 128 * KIB])
@pytest.mark.parametrize("offset", [0, 4, 1000])
def test_sgl_single_data_block(ctrl, ioq, rng, size, offset):
    sgl_ok(ctrl)
    kw = {"sgl_segments": "single", "offset": offset}
    round_trip(ctrl, ioq, rng, 200, size, kw, {})
    round_trip(ctrl, ioq, rng, 200, size, {}, kw)


def test_sgl_byte_aligned(ctrl, ioq, rng):
    if sgl_ok(ctrl) != 1:
        pytest.skip("SGLs need dword alignment")
    kw = {"sgl_segments": "single", "offset": 1}
    round_trip(ctrl, ioq, rng, 300, 8 * KIB, kw, kw)


@pytest.mark.parametrize("segments", [[1], [3], [2, 1], [2, 2, 1], [1, 1, 1, 1]],
                         ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize("size", [4 * KIB, 128 * KIB])
def test_sgl_segment_chain(ctrl, ioq, rng, size, segments):
    sgl_ok(ctrl)
    kw = {"sgl_segments": segments, "offset": 16}
    round_trip(ctrl, ioq, rng, 400, size, kw, {})
    round_trip(ctrl, ioq, rng, 400, size, {}, kw)


def test_last_lba(ctrl, ioq, rng):
    nsze = ctrl.id_ns(1)["nsze"]
    round_trip(ctrl, ioq, rng, nsze - 4, 4 * ctrl.block_size(1))


def test_queue_depth(ctrl, rng):
    """Many commands in flight on one queue, doorbell rung once."""
    sq = ctrl.create_io_queues(1, entries=64)
    bs = ctrl.block_size(1)
    datas, cids = [], []
    for i in range(48):
        d = rng.randbytes(bs)
        datas.append(d)
        addr = ctrl.buffer(bs, d)
        cids.append(ctrl.queue_cmd(sq, ctrl.rw_cmd(nvme.IO_WRITE, 1, 5000 + i, 1, prp1=addr)))
    ctrl.ring_sq(sq)
    for cid in cids:
        assert ctrl.wait(sq, cid).ok
    for i, d in enumerate(datas):
        c, back = ctrl.read(sq, 1, 5000 + i, 1)
        assert c.ok and back == d, i


def test_fua_write(ctrl, ioq, rng):
    bs = ctrl.block_size(1)
    data = rng.randbytes(4 * bs)
    addr = ctrl.buffer(len(data), data)
    c = ctrl.execute(ioq, ctrl.rw_cmd(nvme.IO_WRITE, 1, 600, 4, prp1=addr, cdw12=1 << 30))
    assert c.ok, c
    c, back = ctrl.read(ioq, 1, 600, 4)
    assert c.ok and back == data


def test_flush(ctrl, ioq, rng):
    assert ctrl.write(ioq, 1, 0, rng.randbytes(ctrl.block_size(1))).ok
    c = ctrl.flush(ioq, 1)
    assert c.ok, c


def test_write_zeroes(ctrl, ioq, rng):
    bs = ctrl.block_size(1)
    data = rng.randbytes(16 * bs)
    assert ctrl.write(ioq, 1, 100, data).ok
    c = ctrl.write_zeroes(ioq, 1, 104, 8)
    assert c.ok, c
    c, back = ctrl.read(ioq, 1, 100, 16)
    assert c.ok
    assert back == data[:4 * bs] + bytes(8 * bs) + data[12 * bs:]


def test_dsm_deallocate(ctrl, ioq, rng):
    bs = ctrl.block_size(1)
    data = rng.randbytes(32 * bs)
    assert ctrl.write(ioq, 1, 2048, data).ok
    c = ctrl.dsm_deallocate(ioq, 1, [(2048, 8), (2048 + 16, 8)])
    assert c.ok, c
    c, back = ctrl.read(ioq, 1, 2048, 32)
    assert c.ok
    z = bytes(8 * bs)
    assert back == z + data[8 * bs:16 * bs] + z + data[24 * bs:]


def test_compare(ctrl, ioq, rng):
    bs = ctrl.block_size(1)
    data = rng.randbytes(8 * bs)
    assert ctrl.write(ioq, 1, 300, data).ok
    assert ctrl.compare(ioq, 1, 300, data).ok
    bad = bytearray(data)
    bad[5 * bs + 17] ^= 0x40
    c = ctrl.compare(ioq, 1, 300, bytes(bad))
    assert c.is_(2, nvme.SC_COMPARE_FAILURE), c


def test_compare_with_sgl(ctrl, ioq, rng):
    sgl_ok(ctrl)
    bs = ctrl.block_size(1)
    data = rng.randbytes(4 * bs)
    assert ctrl.write(ioq, 1, 310, data).ok
    assert ctrl.compare(ioq, 1, 310, data, sgl_segments=[2, 1]).ok
    c = ctrl.compare(ioq, 1, 310, bytes(4 * bs), sgl_segments="single")
    assert c.is_(2, nvme.SC_COMPARE_FAILURE), c


def test_write_and_read_on_several_queues(ctrl, machine, rng):
    n = min(machine.cfg.queues, 4)
    sqs = [ctrl.create_io_queues(q, entries=16) for q in range(1, n + 1)]
    bs = ctrl.block_size(1)
    for i, sq in enumerate(sqs):
        assert ctrl.write(sq, 1, 7000 + i, bytes([i + 1]) * bs).ok
    for i, sq in enumerate(sqs):
        c, back = ctrl.read(sqs[-1 - i], 1, 7000 + i, 1)
        assert c.ok and back == bytes([i + 1]) * bs
