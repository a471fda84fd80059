"""Zoned commands wait for the flash model: a write that overflows the zone's write
buffer waits for programs, a Flush, Zone Close or Zone Finish after a partial program unit
waits for one (padded) program, and a Zone Reset for the erase of the zone's blocks.

One channel with two chips, every zone striped over both: a program unit is one 4 KiB
page on each chip (8 KiB), the write buffer holds two units, and a 1 MiB zone has 128
pages on each chip, 8 blocks of 16 pages. Programs take 100 ms and erases 50 ms. Each
command's latency is the model's, from the statistic model_latency_ns, checked to within
one program (or half the erases); the host never sees the completion before it
(Ctrl.model_timed), and a busy host sees it later, by an amount left alone here."""

import time

import pytest

import nvme
import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

PROG_NS, ERASE_NS = 100_000_000, 50_000_000
W, E = PROG_NS / 1e9, ERASE_NS / 1e9
BLOCKS_PER_CHIP = 8             # (1 MiB / 4 KiB) / 2 chips / 16 pages per block
UNIT = 8192                     # one page on each of the two chips
BUFFER_UNITS = 2                # default write buffer: two program units
ZSZE = (1 << 20) // 512
DEV = DevConfig(mode=3, size_mb=16, extra=(
    "zns_zone_size_mb=1,zns_num_ch=1,zns_num_lun=2,zns_flash_type=1,pgs_per_blk=16,"
    "zns_pg_rd_lat=1000000,zns_pg_wr_lat=%d,zns_blk_er_lat=%d,ch_xfer_lat=0"
    % (PROG_NS, ERASE_NS)))


def took(ctrl, fn, low, high):
    """fn's command took the model at least `low` and less than `high` seconds."""
    got, model_ns = ctrl.model_timed(fn)
    assert round(low * 1e9) <= model_ns < round(high * 1e9), \
        "the model took %d ns; bounds %.3f-%.3f s" % (model_ns, low, high)
    return got


def idle():
    """Until programs in flight are done, so that the next command finds idle chips."""
    time.sleep(3 * W)


def write(ctrl, sq, zone, nbytes):
    """nbytes at the zone's write pointer: a function that writes them (for took)."""
    wp = ctrl.zone(sq, 1, zone * ZSZE)["wp"]
    return lambda: ctrl.write(sq, 1, wp, bytes(nbytes))


def test_write_within_the_buffer_does_not_wait(ctrl, zq):
    took(ctrl, write(ctrl, zq, 0, BUFFER_UNITS * UNIT), 0, W)
    idle()


def test_write_beyond_the_buffer_waits_for_programs(ctrl, zq):
    """8 units into a 2-unit buffer: the last unit gets in when the 6th program is done
    (the chips program one unit after the other)."""
    before = ctrl.vendor_log()
    took(ctrl, write(ctrl, zq, 1, 8 * UNIT), 6 * W, 7 * W)
    idle()
    after = ctrl.vendor_log()
    assert after["pages_programmed"] - before["pages_programmed"] == 16
    assert after["buffer_waits"] - before["buffer_waits"] == 1


def test_flush_after_a_partial_unit_programs_it(ctrl, zq):
    took(ctrl, write(ctrl, zq, 2, 4096), 0, W)     # half a unit: stays in the buffer
    before = ctrl.vendor_log()
    took(ctrl, lambda: ctrl.flush(zq, 1), W, 2 * W)
    after = ctrl.vendor_log()
    assert after["pad_pages_programmed"] - before["pad_pages_programmed"] == 1
    assert after["pages_programmed"] - before["pages_programmed"] == 2
    assert after["buffer_flushes"] - before["buffer_flushes"] == 1
    # nothing left to drain: the next flush is immediate
    took(ctrl, lambda: ctrl.flush(zq, 1), 0, W)


@pytest.mark.parametrize("action,state", [(nvme.ZSA_CLOSE, nvme.ZS_CLOSED),
                                          (nvme.ZSA_FINISH, nvme.ZS_FULL)],
                         ids=["close", "finish"])
def test_close_and_finish_drain_the_buffer(ctrl, zq, action, state):
    took(ctrl, write(ctrl, zq, 3, 4096), 0, W)
    before = ctrl.vendor_log()
    took(ctrl, lambda: ctrl.zone_send(zq, 1, 3 * ZSZE, action), W, 2 * W)
    assert ctrl.zone(zq, 1, 3 * ZSZE)["zs"] == state
    after = ctrl.vendor_log()
    assert after["buffer_flushes"] - before["buffer_flushes"] == 1
    assert after["pad_pages_programmed"] - before["pad_pages_programmed"] == 1


def test_reset_erases_the_zone_blocks(ctrl, zq):
    """Each chip erases the zone's 8 blocks one after the other, the two chips at once."""
    assert write(ctrl, zq, 4, 2 * UNIT)().ok
    idle()
    before = ctrl.vendor_log()
    took(ctrl, lambda: ctrl.zone_send(zq, 1, 4 * ZSZE, nvme.ZSA_RESET),
         BLOCKS_PER_CHIP * E, 1.5 * BLOCKS_PER_CHIP * E)
    after = ctrl.vendor_log()
    assert after["blocks_erased"] - before["blocks_erased"] == 2 * BLOCKS_PER_CHIP
    for chip in (0, 1):
        key = "chip%d_busy_ns" % chip
        assert after[key] - before[key] == BLOCKS_PER_CHIP * ERASE_NS
    # an Empty zone has nothing to erase
    took(ctrl, lambda: ctrl.zone_send(zq, 1, 5 * ZSZE, nvme.ZSA_RESET), 0,
         BLOCKS_PER_CHIP * E / 2)
    assert ctrl.vendor_log()["blocks_erased"] == after["blocks_erased"]
