"""Read-ahead on a blackbox device with two namespaces (one model, two sets of
detectors): a stream in one namespace is not disturbed by writes to the other, prefetch
never reads unmapped (deallocated) pages, and per-stream statistics name the namespace.
Same slow flash as test_sra.py: one channel, two chips, 4 KiB pages, 50 ms reads."""

import time

import pytest

import qtest_machine
from qtest_machine import DevConfig
from sralib import BLK, PAGE, RAMP, RD, SRA, WINDOW, grew, pattern, read_page, ramp_and_wait

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's sra")

DEV = DevConfig(mode=1, size_mb=16, namespaces=2, extra=(
    "nchs=1,luns_per_ch=2,flash_type=1,pgs_per_blk=16,secs_per_pg=8,"
    "pg_rd_lat=%d,pg_wr_lat=100000,blk_er_lat=100000,ch_xfer_lat=0,%s" % (RD * 1e9, SRA)))


def fill(ctrl, sq, nsid, base, nbytes=128 * 1024):
    data = pattern(nsid + base, nbytes)
    assert ctrl.write(sq, nsid, base, data).ok
    return data


def test_a_write_to_the_other_namespace_leaves_the_stream(ctrl, ioq):
    data = fill(ctrl, ioq, 1, 0)
    fill(ctrl, ioq, 2, 0)
    before = ctrl.vendor_log()
    ramp_and_wait(ctrl, ioq, 1, 0, data)
    assert ctrl.write(ioq, 2, 1024, bytes(PAGE)).ok
    assert read_page(ctrl, ioq, 1, 0, RAMP, data) < RD / 2
    after = ctrl.vendor_log()
    assert grew(before, after, "sra_disabled_by_write") == 0
    assert grew(before, after, "sra_ns1_s0_hits") == 1
    assert after["sra_ns1_s0_state"] in (2, 3)      # enabled or paused
    # a write to its own namespace ends it
    assert ctrl.write(ioq, 1, 2048, bytes(PAGE)).ok
    after = ctrl.vendor_log()
    assert after["sra_ns1_s0_state"] == 0
    assert grew(before, after, "sra_ns1_s0_disabled_by_write") == 1
    assert read_page(ctrl, ioq, 1, 0, RAMP + 1, data) >= RD


def test_unmapped_pages_are_not_read_ahead(ctrl, ioq):
    """Pages 6.. of the run are deallocated: after the ramp only 4 and 5 are read ahead."""
    base = 4096
    data = fill(ctrl, ioq, 1, base, 16 * PAGE)
    assert ctrl.dsm_deallocate(ioq, 1, [(base + 6 * BLK, 10 * BLK)]).ok
    before = ctrl.vendor_log()
    ramp_and_wait(ctrl, ioq, 1, base, data)
    after = ctrl.vendor_log()
    assert grew(before, after, "sra_prefetched_pages") == 2
    assert grew(before, after, "prefetch_pages_read") == 2
    assert read_page(ctrl, ioq, 1, base, 4, data) < RD / 2
    assert read_page(ctrl, ioq, 1, base, 5, data) < RD / 2


def test_both_namespaces_stream_at_once(ctrl, ioq):
    d1 = fill(ctrl, ioq, 1, 8192)
    d2 = fill(ctrl, ioq, 2, 8192)
    before = ctrl.vendor_log()
    for p in range(RAMP):
        for nsid, d in ((1, d1), (2, d2)):
            assert read_page(ctrl, ioq, nsid, 8192, p, d) >= RD
    time.sleep(2 * WINDOW * RD)
    for p in range(RAMP, RAMP + WINDOW // 2):
        for nsid, d in ((1, d1), (2, d2)):
            assert read_page(ctrl, ioq, nsid, 8192, p, d) < RD / 2
    after = ctrl.vendor_log()
    assert grew(before, after, "sra_hits") == WINDOW
    assert grew(before, after, "sra_ns1_s0_hits") + grew(before, after, "sra_ns1_s1_hits") \
        >= WINDOW // 2
    assert after["sra_bad_transitions"] == 0
