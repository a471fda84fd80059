"""A blackbox drive with background GC due must leave the host idle when the host sends
nothing: GC runs in the quiet time (or waits, when no victim is worth it) without the
device thread spinning. Under qtest no guest code runs, so QEMU's CPU time is the
device's (and its main loop's)."""

import random
import time

import psutil
import pytest

import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's blackbox mode")

# 16 MiB exposed on 4 chips x 16-page blocks: 64-page lines, 64 lines of data and as many
# spare (op_pcent=100). Background GC at 60% free lines (76 of 128), forced at 6.
PAGES = 4096
DEV = DevConfig(mode=1, size_mb=16, extra=(
    "nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=100,flash_type=1,"
    "gc_thres_pcent=40,gc_thres_pcent_high=95"))
WINDOW_S = 2.0
MAX_CORES = 0.1     # a spinning thread is ~1.0; an idle one well below 0.01


def cores_used(pid, seconds):
    """Host CPU of the process over the next `seconds` (1.0 = one core busy)."""
    proc = psutil.Process(pid)
    t0, c0 = time.monotonic(), proc.cpu_times()
    time.sleep(seconds)
    c1 = proc.cpu_times()
    return (c1.user + c1.system - c0.user - c0.system) / (time.monotonic() - t0)


def write_pages(ctrl, sq, pages, data=b"\x5a" * 4096):
    """Write the page numbers given, 64 pages (256 KiB) per command where consecutive."""
    pages = sorted(pages)
    i = 0
    while i < len(pages):
        j = i + 1
        while j < len(pages) and j - i < 64 and pages[j] == pages[j - 1] + 1:
            j += 1
        assert ctrl.write(sq, 1, pages[i] * 8, data * (j - i)).ok
        i = j


def test_pending_gc_without_a_worthy_victim(ctrl, ioq, machine):
    """A sequential fill leaves free lines at the background threshold but every full line
    wholly valid: GC stays due and never starts, and the device sleeps."""
    write_pages(ctrl, ioq, range(PAGES))
    stats = ctrl.vendor_log()
    assert stats["free_lines"] <= 76, stats
    assert stats["gc_runs"] == 0
    time.sleep(0.5)
    cores = cores_used(machine.qt.pid, WINDOW_S)
    assert cores < MAX_CORES, "QEMU used %.2f cores with nothing to do" % cores
    assert ctrl.vendor_log()["gc_runs"] == 0


def test_background_gc_then_sleep(ctrl, ioq, machine):
    """Overwrites leave garbage and the free lines below the threshold: GC cleans up in
    the quiet time, and neither while it runs nor after it does the device spin."""
    write_pages(ctrl, ioq, random.Random(1).sample(range(PAGES), PAGES // 2))
    before = ctrl.vendor_log()
    assert before["free_lines"] <= 76, before
    cores = cores_used(machine.qt.pid, WINDOW_S)
    after = ctrl.vendor_log()
    assert after["gc_runs"] > before["gc_runs"], "no background GC in the quiet time"
    assert after["gc_forced_runs"] == before["gc_forced_runs"]
    assert cores < MAX_CORES, "QEMU used %.2f cores during background GC" % cores
    cores = cores_used(machine.qt.pid, WINDOW_S)
    assert cores < MAX_CORES, "QEMU used %.2f cores after background GC" % cores
    assert ctrl.vendor_log()["gc_runs"] == after["gc_runs"], "GC still running"
