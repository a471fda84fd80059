"""Sequential read-ahead (sra=on) as the host sees it: QD1 4 KiB sequential reads of a
zone become cache hits once the stream has ramped up, and a write, a large read or an idle
stream tears the cache down so that the next read pays a NAND read again.

One channel with two chips, 4 KiB pages, an array read of 20 ms (well above the qtest
round trip of about a millisecond), so a read's wall time tells a hit from a miss. The
stream enables after 4 reads and keeps 8 pages ahead (four per chip: 80 ms to fill)."""

import time

import pytest

import nvme
import qtest_machine
from qtest_machine import DevConfig
from sralib import BLK, IDLE, PAGE, RAMP, RD, SRA, WINDOW, grew, pattern, read_page, ramp_and_wait

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's sra")

ZSZE = (1 << 20) // 512
DEV = DevConfig(mode=3, size_mb=16, extra=(
    "zns_zone_size_mb=1,zns_num_ch=1,zns_num_lun=2,zns_flash_type=1,pgs_per_blk=16,"
    "zns_pg_rd_lat=%d,zns_pg_wr_lat=100000,zns_blk_er_lat=100000,ch_xfer_lat=0,%s"
    % (RD * 1e9, SRA)))


def fill(ctrl, sq, zone, nbytes=256 * 1024):
    data = pattern(zone, nbytes)
    for off in range(0, nbytes, 256 * 1024):        # within mdts
        assert ctrl.write(sq, 1, zone * ZSZE + off // 512, data[off:off + 256 * 1024]).ok
    assert ctrl.flush(sq, 1).ok
    return data


def stats(ctrl):
    return ctrl.vendor_log()


def test_sequential_reads_become_hits(ctrl, zq):
    data = fill(ctrl, zq, 0)
    before = stats(ctrl)
    ramp_and_wait(ctrl, zq, 1, 0, data)
    times = [read_page(ctrl, zq, 1, 0, p, data) for p in range(RAMP, RAMP + WINDOW // 2)]
    assert max(times) < RD / 2, times
    after = stats(ctrl)
    assert grew(before, after, "sra_hits") == WINDOW // 2
    assert grew(before, after, "sra_enabled_entries") >= 1
    # the window, then its first half again once the host has read it
    assert grew(before, after, "prefetch_pages_read") == WINDOW + WINDOW // 2
    assert grew(before, after, "sra_prefetched_pages") == WINDOW + WINDOW // 2
    assert grew(before, after, "sra_pruned_pages") == WINDOW // 2
    assert after["sra_bad_transitions"] == 0


def test_write_tears_the_cache_down(ctrl, zq):
    data = fill(ctrl, zq, 1)
    ramp_and_wait(ctrl, zq, 1, ZSZE, data)
    assert read_page(ctrl, zq, 1, ZSZE, RAMP, data) < RD / 2
    before = stats(ctrl)
    assert ctrl.write(zq, 1, 2 * ZSZE, bytes(PAGE)).ok
    after = stats(ctrl)
    assert grew(before, after, "sra_disabled_by_write") >= 1
    assert grew(before, after, "sra_teardowns") == 1
    assert after["sra_cached_pages"] == 0
    assert read_page(ctrl, zq, 1, ZSZE, RAMP + 1, data) >= RD


def test_large_read_tears_the_cache_down(ctrl, zq):
    data = fill(ctrl, zq, 3)
    ramp_and_wait(ctrl, zq, 1, 3 * ZSZE, data)
    assert read_page(ctrl, zq, 1, 3 * ZSZE, RAMP, data) < RD / 2
    before = stats(ctrl)
    c, got = ctrl.read(zq, 1, 3 * ZSZE + 16 * BLK, 128 * 1024 // 512)
    assert c.ok and got == data[16 * PAGE:16 * PAGE + 128 * 1024]
    after = stats(ctrl)
    assert grew(before, after, "sra_disabled_by_large_read") == 1
    assert read_page(ctrl, zq, 1, 3 * ZSZE, RAMP + 1, data) >= RD


def test_idle_stream_times_out(ctrl, zq):
    data = fill(ctrl, zq, 4)
    ramp_and_wait(ctrl, zq, 1, 4 * ZSZE, data)
    before = stats(ctrl)
    time.sleep(IDLE + 0.3)
    assert read_page(ctrl, zq, 1, 4 * ZSZE, RAMP, data) >= RD
    after = stats(ctrl)
    assert grew(before, after, "sra_disabled_by_idle") == 1
    assert grew(before, after, "sra_wasted_pages") == WINDOW


def test_prefetch_stops_at_the_write_pointer(ctrl, zq):
    """Zone 5 holds 6 pages: after the ramp only pages 4 and 5 can be read ahead."""
    data = fill(ctrl, zq, 5, 6 * PAGE)
    before = stats(ctrl)
    ramp_and_wait(ctrl, zq, 1, 5 * ZSZE, data)
    after = stats(ctrl)
    assert grew(before, after, "sra_prefetched_pages") == 2
    assert read_page(ctrl, zq, 1, 5 * ZSZE, 4, data) < RD / 2


def test_prefetch_waits_for_the_host_to_reach_the_next_zone(ctrl, zq):
    """Without zns_cross_zone_read the stream reads ahead to zone 6's end, and into zone 7
    only once the host's next read is in it."""
    data = fill(ctrl, zq, 6, 1 << 20)
    fill(ctrl, zq, 7, 16 * PAGE)
    last = (1 << 20) // PAGE - 1            # zone 6's last page
    first = last - RAMP - 1                 # ramp on the 4 pages before its last two
    before = stats(ctrl)
    for p in range(first, first + RAMP):
        assert read_page(ctrl, zq, 1, 6 * ZSZE, p, data) >= RD
    time.sleep(WINDOW * RD)
    mid = stats(ctrl)
    assert grew(before, mid, "sra_prefetched_pages") == 2
    assert read_page(ctrl, zq, 1, 6 * ZSZE, last - 1, data) < RD / 2
    assert grew(mid, stats(ctrl), "sra_prefetched_pages") == 0
    assert read_page(ctrl, zq, 1, 6 * ZSZE, last, data) < RD / 2
    after = stats(ctrl)
    assert grew(mid, after, "sra_prefetched_pages") == WINDOW
    assert after["sra_disabled_time_ns"] < 600e9     # since this QEMU started


def test_high_queue_depth_tears_down_and_holds_off(ctrl, zq):
    """Nine reads at once (the default sra_max_qd is 8) disable the stream; for sra_idle_ms
    after them a new stream ramps but reads nothing ahead; after it, it does again."""
    base = 8 * ZSZE
    data = fill(ctrl, zq, 8)
    ramp_and_wait(ctrl, zq, 1, base, data)
    before = stats(ctrl)
    crowded_at = time.monotonic()
    pending = [(zq, ctrl.submit_read(zq, 1, base + (40 + k) * BLK, BLK)) for k in range(9)]
    assert all(c.ok for c in ctrl.wait_all(pending))
    mid = stats(ctrl)
    # the burst's own first reads may start a stream (fewer than 8 outstanding yet): the
    # ninth tears down that one too
    assert grew(before, mid, "sra_disabled_by_high_qd") >= 1
    assert grew(before, mid, "sra_teardowns") >= 1
    assert grew(before, mid, "sra_wasted_pages") >= WINDOW
    assert mid["sra_cached_pages"] == 0
    # held off: more than a ramp of sequential reads, every one a miss, nothing read ahead
    for p in range(RAMP, 3 * RAMP):
        assert read_page(ctrl, zq, 1, base, p, data) >= RD
    assert time.monotonic() - crowded_at < IDLE
    held = stats(ctrl)
    assert grew(mid, held, "sra_prefetched_pages") == 0
    assert grew(mid, held, "sra_ramping_entries") >= 1
    # past the hold-off, the stream (still alive: read less than IDLE ago) has long
    # ramped, so its next read enables it and it reads ahead
    time.sleep(max(0.0, crowded_at + IDLE + 0.1 - time.monotonic()))
    assert read_page(ctrl, zq, 1, base, 3 * RAMP, data) >= RD
    time.sleep(WINDOW * RD)
    assert grew(held, stats(ctrl), "sra_prefetched_pages") == WINDOW
    assert read_page(ctrl, zq, 1, base, 3 * RAMP + 1, data) < RD / 2


def test_power_cut_tears_the_cache_down(tmp_path):
    """The CEs are in SRAM: a power cut drops them (and every stream), so the first read
    after power comes back pays a NAND read even with no idle timeout."""
    m = qtest_machine.start_machine(DEV, str(tmp_path))
    try:
        ctrl = m.ctrl
        ctrl.enable(css=nvme.CC_CSS_ALL)
        sq = ctrl.create_io_queues(1)
        data = fill(ctrl, sq, 2)
        ramp_and_wait(ctrl, sq, 1, 2 * ZSZE, data)
        assert stats(ctrl)["sra_cached_pages"] == WINDOW
        r = m.qmp("qom-set", path="/machine/peripheral/femu0", property="power-cut",
                  value=True)
        assert "error" not in r, r
        assert "error" not in m.qmp("system_reset")
        m.rebind()
        ctrl = m.ctrl
        ctrl.enable(css=nvme.CC_CSS_ALL)
        sq = ctrl.create_io_queues(1)
        after = stats(ctrl)
        assert after["sra_cached_pages"] == 0
        assert after["sra_disabled_by_power_loss"] == 1
        assert after["sra_teardowns"] >= 1
        assert read_page(ctrl, sq, 1, 2 * ZSZE, RAMP, data) >= RD
    finally:
        m.close()
