"""Blackbox mode: commands complete when the NAND model says, never earlier, and the
model's statistics reach the host through vendor log page 0xCA.

The geometry is tiny and the page read is made 20 ms long, so lower bounds on completion
time can be checked against the wall clock: a slow machine only makes completions later."""

import time

import pytest

import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's blackbox mode")

READ_S = 0.020          # pg_rd_lat: one page read
CHIPS = 4               # 2 channels x 2 chips, pages striped over them
PAGE = 4096
DEV = DevConfig(mode=1, size_mb=16, extra=(
    "nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=50,flash_type=1,"
    "pg_rd_lat=20000000,pg_wr_lat=100000,blk_er_lat=100000,ch_xfer_lat=0"))
LOG_MEDIA = 0xCA


def media_stats(ctrl):
    cpl, data = ctrl.get_log_page(LOG_MEDIA, 4096)
    assert cpl.ok, cpl
    lines = data.rstrip(b"\0").decode().splitlines()
    return {k: v for k, v in (line.split(" ", 1) for line in lines)}


def timed_read(ctrl, sq, slba, nblocks):
    t0 = time.monotonic()
    cpl, data = ctrl.read(sq, 1, slba, nblocks)
    return time.monotonic() - t0, cpl, data


def test_identify_names_blackbox(ctrl):
    data = ctrl.identify(1)[1]
    assert data[24:64].decode().strip() == "FEMU BlackBox-SSD Controller"


def test_read_waits_for_the_page_read(ctrl, ioq):
    data = bytes(range(256)) * (PAGE // 256)
    assert ctrl.write(ioq, 1, 0, data).ok
    elapsed, cpl, back = timed_read(ctrl, ioq, 0, PAGE // 512)
    assert cpl.ok and back == data
    assert elapsed >= READ_S, "completed %.4f s after submission, model says %.3f" % (
        elapsed, READ_S)


def test_unwritten_read_costs_a_page_read(ctrl, ioq):
    elapsed, cpl, back = timed_read(ctrl, ioq, 2048, PAGE // 512)
    assert cpl.ok and back == bytes(PAGE)
    assert elapsed >= READ_S


def test_pages_on_one_chip_serialize(ctrl, ioq):
    # 2 * CHIPS consecutive pages: two reads on every chip, one after the other
    n = 2 * CHIPS
    assert ctrl.write(ioq, 1, 64, bytes(n * PAGE)).ok
    elapsed, cpl, _ = timed_read(ctrl, ioq, 64, n * PAGE // 512)
    assert cpl.ok
    assert elapsed >= 2 * READ_S, "%d pages on %d chips in %.4f s" % (n, CHIPS, elapsed)


def test_statistics_in_vendor_log(ctrl, ioq):
    before = media_stats(ctrl)
    assert before["mode"] == "blackbox"
    assert ctrl.write(ioq, 1, 4096, bytes(3 * PAGE)).ok
    assert ctrl.read(ioq, 1, 4096, 3 * PAGE // 512)[0].ok
    after = media_stats(ctrl)
    assert int(after["host_pages_written"]) - int(before["host_pages_written"]) == 3
    assert int(after["host_pages_read"]) - int(before["host_pages_read"]) == 3
    assert int(after["nand_pages_written"]) >= int(after["host_pages_written"])
    assert int(after["completions"]) > int(before["completions"])
    # lateness quantiles are present and ordered
    p50, p99, mx = (int(after[k]) for k in ("lateness_p50_ns", "lateness_p99_ns",
                                             "lateness_max_ns"))
    assert p50 <= p99 <= mx
    for chip in range(CHIPS):
        assert "chip%d_busy_ns" % chip in after


def test_deallocate_unmaps(ctrl, ioq):
    before = media_stats(ctrl)
    assert ctrl.write(ioq, 1, 8192, bytes(4 * PAGE)).ok
    assert ctrl.dsm_deallocate(ioq, 1, [(8192, 4 * PAGE // 512)]).ok
    after = media_stats(ctrl)
    assert int(after["pages_trimmed"]) - int(before["pages_trimmed"]) == 4
    unmapped = int(after["unmapped_pages_read"])
    assert ctrl.read(ioq, 1, 8192, 8)[0].ok
    assert int(media_stats(ctrl)["unmapped_pages_read"]) == unmapped + 1
