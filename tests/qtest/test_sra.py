"""Sequential read-ahead (sra=on) as the host sees it: QD1 4 KiB sequential reads of a
zone become cache hits once the stream has ramped up, and a write, a large read or an idle
stream tears the cache down so that the next read pays a NAND read again.

One channel with two chips, 4 KiB pages, an array read of 20 ms (well above the qtest
round trip of about a millisecond), so a read's wall time tells a hit from a miss. The
stream enables after 4 reads and keeps 8 pages ahead (four per chip: 80 ms to fill)."""

import time

import pytest

import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's sra")

RD = 0.020                      # array read, s
PAGE = 4096
BLK = PAGE // 512               # LBAs per page
ZSZE = (1 << 20) // 512
RAMP, WINDOW = 4, 8
DEV = DevConfig(mode=3, size_mb=16, extra=(
    "zns_zone_size_mb=1,zns_num_ch=1,zns_num_lun=2,zns_flash_type=1,pgs_per_blk=16,"
    "zns_pg_rd_lat=%d,zns_pg_wr_lat=100000,zns_blk_er_lat=100000,ch_xfer_lat=0,"
    "sra=on,sra_ramp=%d,sra_window=%d,sra_cache_kb=64,sra_idle_ms=1000"
    % (RD * 1e9, RAMP, WINDOW)))


def pattern(zone, nbytes):
    return bytes((zone * 7 + i // PAGE + i) & 0xFF for i in range(nbytes))


def fill(ctrl, sq, zone, nbytes=256 * 1024):
    data = pattern(zone, nbytes)
    assert ctrl.write(sq, 1, zone * ZSZE, data).ok
    assert ctrl.flush(sq, 1).ok
    return data


def read_page(ctrl, sq, zone, page, data):
    """Reads one page and checks its data; returns its wall time in s."""
    t0 = time.monotonic()
    c, got = ctrl.read(sq, 1, zone * ZSZE + page * BLK, BLK)
    assert c.ok, c
    assert got == data[page * PAGE:(page + 1) * PAGE]
    return c.t - t0


def ramp_and_wait(ctrl, sq, zone, data):
    """RAMP reads (all misses), then long enough for the window to be read ahead."""
    for p in range(RAMP):
        assert read_page(ctrl, sq, zone, p, data) >= RD
    time.sleep(WINDOW / 2 * RD * 2)


def stats(ctrl):
    return ctrl.vendor_log()


def test_sequential_reads_become_hits(ctrl, zq):
    data = fill(ctrl, zq, 0)
    before = stats(ctrl)
    ramp_and_wait(ctrl, zq, 0, data)
    times = [read_page(ctrl, zq, 0, p, data) for p in range(RAMP, RAMP + WINDOW // 2)]
    assert max(times) < RD / 2, times
    after = stats(ctrl)
    assert after["sra_hits"] - before["sra_hits"] == WINDOW // 2
    assert after["sra_enabled_entries"] > before["sra_enabled_entries"]
    assert after["prefetch_pages_read"] > before["prefetch_pages_read"]


def test_write_tears_the_cache_down(ctrl, zq):
    data = fill(ctrl, zq, 1)
    ramp_and_wait(ctrl, zq, 1, data)
    assert read_page(ctrl, zq, 1, RAMP, data) < RD / 2
    before = stats(ctrl)
    assert ctrl.write(zq, 1, 2 * ZSZE, bytes(PAGE)).ok
    after = stats(ctrl)
    assert after["sra_disabled_by_write"] - before["sra_disabled_by_write"] >= 1
    assert after["sra_teardowns"] - before["sra_teardowns"] == 1
    assert after["sra_cached_pages"] == 0
    time.sleep(0.2)
    assert read_page(ctrl, zq, 1, RAMP + 1, data) >= RD


def test_large_read_tears_the_cache_down(ctrl, zq):
    data = fill(ctrl, zq, 3)
    ramp_and_wait(ctrl, zq, 3, data)
    assert read_page(ctrl, zq, 3, RAMP, data) < RD / 2
    before = stats(ctrl)
    c, got = ctrl.read(zq, 1, 3 * ZSZE + 16 * BLK, 128 * 1024 // 512)
    assert c.ok and got == data[16 * PAGE:16 * PAGE + 128 * 1024]
    after = stats(ctrl)
    assert after["sra_disabled_by_large_read"] - before["sra_disabled_by_large_read"] == 1
    assert read_page(ctrl, zq, 3, RAMP + 1, data) >= RD


def test_idle_stream_times_out(ctrl, zq):
    data = fill(ctrl, zq, 4)
    ramp_and_wait(ctrl, zq, 4, data)
    before = stats(ctrl)
    time.sleep(1.3)
    assert read_page(ctrl, zq, 4, RAMP, data) >= RD
    after = stats(ctrl)
    assert after["sra_disabled_by_idle"] - before["sra_disabled_by_idle"] == 1
    assert after["sra_wasted_pages"] - before["sra_wasted_pages"] == WINDOW
