"""4096-byte LBAs (lba_index=1)."""

import pytest

from qtest_machine import DevConfig

DEV = DevConfig(size_mb=32, lba_index=1)


def test_format(ctrl):
    ns = ctrl.id_ns(1)
    assert ns["block_size"] == 4096
    assert ns["nsze"] == (32 << 20) // 4096


@pytest.mark.parametrize("nblocks", [1, 2, 3, 32])
@pytest.mark.parametrize("offset", [0, 512])
def test_round_trip(ctrl, ioq, rng, nblocks, offset):
    data = rng.randbytes(nblocks * 4096)
    assert ctrl.write(ioq, 1, 10, data, offset=offset).ok
    c, back = ctrl.read(ioq, 1, 10, nblocks, offset=offset)
    assert c.ok and back == data


def test_write_zeroes_and_deallocate(ctrl, ioq, rng):
    data = rng.randbytes(8 * 4096)
    assert ctrl.write(ioq, 1, 50, data).ok
    assert ctrl.write_zeroes(ioq, 1, 50, 2).ok
    assert ctrl.dsm_deallocate(ioq, 1, [(56, 2)]).ok
    back = ctrl.read(ioq, 1, 50, 8)[1]
    z = bytes(2 * 4096)
    assert back == z + data[2 * 4096:6 * 4096] + z


def test_last_block(ctrl, ioq, rng):
    nsze = ctrl.id_ns(1)["nsze"]
    d = rng.randbytes(4096)
    assert ctrl.write(ioq, 1, nsze - 1, d).ok
    assert ctrl.read(ioq, 1, nsze - 1, 1)[1] == d
    assert not ctrl.read(ioq, 1, nsze, 1)[0].ok
