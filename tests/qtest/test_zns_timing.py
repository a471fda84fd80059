"""Zoned commands wait for the flash model: a write that overflows the zone's write
buffer waits for programs, a Flush, Zone Close or Zone Finish after a partial program unit
waits for one (padded) program, and a Zone Reset for the erase of the zone's blocks.

One channel with two chips, every zone striped over both: a program unit is one 4 KiB
page on each chip (8 KiB), the write buffer holds two units, and a 1 MiB zone has 128
pages on each chip, 8 blocks of 16 pages. Programs take 100 ms and erases 50 ms, so each
bound is checked against the wall clock: never before the model's time, and less than one
more program (or half the erases) after it."""

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


def took(c, t0, low, high):
    """The command completed at least `low` and less than `high` seconds after t0."""
    assert c.ok, c
    assert low <= c.t - t0 < high, "completed after %.3f s; the model says %.3f s" % (
        c.t - t0, low)


def idle():
    """Until programs in flight are done, so that the next command finds idle chips."""
    time.sleep(3 * W)


def write(ctrl, sq, zone, nbytes):
    """nbytes at the zone's write pointer: (completion, time of submission)."""
    wp = ctrl.zone(sq, 1, zone * ZSZE)["wp"]
    t0 = time.monotonic()
    return ctrl.write(sq, 1, wp, bytes(nbytes)), t0


def test_write_within_the_buffer_does_not_wait(ctrl, zq):
    c, t0 = write(ctrl, zq, 0, BUFFER_UNITS * UNIT)
    took(c, t0, 0, W)
    idle()


def test_write_beyond_the_buffer_waits_for_programs(ctrl, zq):
    """8 units into a 2-unit buffer: the last unit gets in when the 6th program is done
    (the chips program one unit after the other)."""
    before = ctrl.vendor_log()
    c, t0 = write(ctrl, zq, 1, 8 * UNIT)
    took(c, t0, 6 * W, 7 * W)
    idle()
    after = ctrl.vendor_log()
    assert after["pages_programmed"] - before["pages_programmed"] == 16
    assert after["buffer_waits"] - before["buffer_waits"] == 1


def test_flush_after_a_partial_unit_programs_it(ctrl, zq):
    c, t0 = write(ctrl, zq, 2, 4096)           # half a unit: stays in the buffer
    took(c, t0, 0, W)
    before = ctrl.vendor_log()
    t0 = time.monotonic()
    took(ctrl.flush(zq, 1), t0, W, 2 * W)
    after = ctrl.vendor_log()
    assert after["pad_pages_programmed"] - before["pad_pages_programmed"] == 1
    assert after["pages_programmed"] - before["pages_programmed"] == 2
    assert after["buffer_flushes"] - before["buffer_flushes"] == 1
    # nothing left to drain: the next flush is immediate
    t0 = time.monotonic()
    took(ctrl.flush(zq, 1), t0, 0, W)


@pytest.mark.parametrize("action,state", [(nvme.ZSA_CLOSE, nvme.ZS_CLOSED),
                                          (nvme.ZSA_FINISH, nvme.ZS_FULL)],
                         ids=["close", "finish"])
def test_close_and_finish_drain_the_buffer(ctrl, zq, action, state):
    c, t0 = write(ctrl, zq, 3, 4096)
    took(c, t0, 0, W)
    before = ctrl.vendor_log()
    t0 = time.monotonic()
    took(ctrl.zone_send(zq, 1, 3 * ZSZE, action), t0, W, 2 * W)
    assert ctrl.zone(zq, 1, 3 * ZSZE)["zs"] == state
    after = ctrl.vendor_log()
    assert after["buffer_flushes"] - before["buffer_flushes"] == 1
    assert after["pad_pages_programmed"] - before["pad_pages_programmed"] == 1


def test_reset_erases_the_zone_blocks(ctrl, zq):
    """Each chip erases the zone's 8 blocks one after the other, the two chips at once."""
    c, _ = write(ctrl, zq, 4, 2 * UNIT)
    assert c.ok, c
    idle()
    before = ctrl.vendor_log()
    t0 = time.monotonic()
    took(ctrl.zone_send(zq, 1, 4 * ZSZE, nvme.ZSA_RESET), t0,
         BLOCKS_PER_CHIP * E, 1.5 * BLOCKS_PER_CHIP * E)
    after = ctrl.vendor_log()
    assert after["blocks_erased"] - before["blocks_erased"] == 2 * BLOCKS_PER_CHIP
    for chip in (0, 1):
        key = "chip%d_busy_ns" % chip
        assert after[key] - before[key] == BLOCKS_PER_CHIP * ERASE_NS
    # an Empty zone has nothing to erase
    t0 = time.monotonic()
    took(ctrl.zone_send(zq, 1, 5 * ZSZE, nvme.ZSA_RESET), t0, 0, BLOCKS_PER_CHIP * E / 2)
    assert ctrl.vendor_log()["blocks_erased"] == after["blocks_erased"]
