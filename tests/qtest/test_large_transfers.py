"""Transfers of 2 MiB and more (a QEMU with a larger MDTS)."""

import pytest

import qtest_machine
from qtest_machine import DevConfig

KIB = 1024
MIB = 1024 * KIB
# Stock nvme caps MDTS at 9 (its IOV_MAX check); femu takes 10.
MDTS = 9 if qtest_machine.DEVICE == "stock" else 10
DEV = DevConfig(size_mb=64, mdts=MDTS)


def round_trip(ctrl, sq, rng, slba, size, wkw, rkw):
    if size > (4096 << MDTS):
        pytest.skip("%d bytes exceed MDTS %d" % (size, MDTS))
    bs = ctrl.block_size(1)
    data = rng.randbytes(size)
    c = ctrl.write(sq, 1, slba, data, **wkw)
    assert c.ok, c
    c, back = ctrl.read(sq, 1, slba, size // bs, **rkw)
    assert c.ok, c
    assert back == data


def test_mdts_reported(ctrl):
    assert ctrl.id_ctrl()["mdts"] == MDTS


def test_prp_list_exactly_one_full_page(ctrl, ioq, rng):
    """2 MiB at an offset: PRP1 plus 512 list entries, the last one data."""
    kw = {"offset": 8}
    round_trip(ctrl, ioq, rng, 4096, 2 * MIB, kw, kw)


def test_prp_list_of_many_pages(ctrl, ioq, rng):
    """More than 512 pages: the list continues on a second list page."""
    round_trip(ctrl, ioq, rng, 8192, 2 * MIB + 8 * KIB, {"offset": 8}, {})
    round_trip(ctrl, ioq, rng, 8192, 4 * MIB, {}, {"list_first_slots": 5})


def test_sgl_large(ctrl, ioq, rng):
    if not ctrl.id_ctrl()["sgls"] & 3:
        pytest.skip("SGLs not supported")
    round_trip(ctrl, ioq, rng, 20000, 2 * MIB, {"sgl_segments": [3, 2]}, {})
