"""A blackbox drive with background GC due must leave the host idle when the host sends
nothing: GC runs in the quiet time (or waits, when no victim is worth it) without the
device thread spinning. The device counts its thread's passes and sleeps: a thread that
sleeps between its few wake-ups passes, whatever else the host runs; a spinning one makes
passes by the thousand without sleeping (qtest_machine.assert_device_sleeps)."""

import time

import pytest

import nvme
import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's blackbox mode")

# 16 MiB exposed on 4 chips x 16-page blocks: 64-page lines, 64 lines of data and as many
# spare (op_pcent=100). Background GC at 60% free lines (76 of 128), forced at 6. A block
# erase takes 100 ms, so that background GC of 32 lines lasts about 3 s.
PAGES = 4096
ERASE_S = 0.1
GEOMETRY = ("nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=100,flash_type=1,"
            "gc_thres_pcent=40,gc_thres_pcent_high=95,blk_er_lat=%d" % (ERASE_S * 1e9))
WINDOW_S = 1.5      # less than the background GC's 32 erases: the device is never early
HANG_S = 120        # a guard against a GC that never ends, not a bound on its time


@pytest.fixture
def drive(tmp_path):
    """A fresh blackbox drive, filled once sequentially: every line full and valid."""
    m = qtest_machine.start_machine(DevConfig(mode=1, size_mb=16, extra=GEOMETRY),
                                    str(tmp_path))
    ctrl = m.ctrl
    ctrl.enable()
    sq = ctrl.create_io_queues(1)
    write(ctrl, sq, 0, PAGES)
    stats = ctrl.vendor_log()
    assert stats["free_lines"] == 64 and stats["gc_runs"] == 0, stats
    yield m, ctrl, sq
    m.close()


def write(ctrl, sq, first, pages):
    """Pages [first, first + pages), 128 pages (512 KiB, MDTS) per command, all queued
    before one doorbell: the device takes them in one go, never idle in between."""
    cids = []
    for p in range(first, first + pages, 128):
        n = min(128, first + pages - p)
        buf = ctrl.buffer(4096 * n, b"\x5a" * 4096 * n)
        p1, p2 = ctrl.prps(buf, 4096 * n)
        cids.append(ctrl.queue_cmd(sq, ctrl.rw_cmd(nvme.IO_WRITE, 1, p * 8, n * 8,
                                                   prp1=p1, prp2=p2)))
    ctrl.ring_sq(sq)
    for c in ctrl.wait_all([(sq, cid) for cid in cids]):
        assert c.ok, c


def test_pending_gc_without_a_worthy_victim(drive):
    """After the fill the free lines are at the background threshold but every full line
    is wholly valid: GC stays due, never starts, and the device sleeps."""
    m, ctrl, _ = drive
    time.sleep(0.2)
    qtest_machine.assert_device_sleeps(m, WINDOW_S, "GC due without a victim")
    assert ctrl.vendor_log()["gc_runs"] == 0


def test_background_gc_then_sleep(drive):
    """Overwriting half the drive leaves 32 wholly invalid lines and the free lines below
    the threshold: GC erases them in the quiet time (some 3 s of erases), and neither
    while it runs nor after it does the device spin."""
    m, ctrl, sq = drive
    filled = ctrl.vendor_log()
    write(ctrl, sq, 0, PAGES // 2)
    before = ctrl.vendor_log()
    # the victims GC took since the writes (how many depends on the host's speed) are free
    assert before["free_lines"] == 32 + before["gc_runs"], before
    _, during = qtest_machine.assert_device_sleeps(m, WINDOW_S, "during background GC")
    # 32 erases of 100 ms one after the other: the window ended before the last
    assert during["gc_runs"] < 32, during
    give_up = time.monotonic() + HANG_S
    while ctrl.vendor_log()["gc_runs"] < 32:
        assert time.monotonic() < give_up, "background GC never ended: %s" % ctrl.vendor_log()
        time.sleep(ERASE_S)
    qtest_machine.assert_device_sleeps(m, WINDOW_S, "after background GC")
    after = ctrl.vendor_log()
    assert after["gc_runs"] == 32 and after["gc_forced_runs"] == 0, after
    assert after["gc_pages_moved"] == 0 and after["free_lines"] == 64, after
    assert after["blocks_erased"] - filled["blocks_erased"] == 32 * 4, (filled, after)
