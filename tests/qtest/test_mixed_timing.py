"""A blackbox namespace 1 and a zoned namespace 2 on one controller share one flash: a
slow read on namespace 1 delays a read on namespace 2 that needs the same chip, and the
statistics page names each model's counters with its namespace (nsN_).

One chip, so both namespaces always meet on it; a page read takes 100 ms. The latencies
are the model's own (media_read_ns per namespace), which a busy host does not move; the
host only checks it never sees a completion before them."""

import time

import pytest

import nvme
import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's mixed mode")

READ_NS = 100_000_000
R = READ_NS / 1e9
DEV = DevConfig(mode=1, size_mb=32, namespaces=2, extra=(
    "ns_types=blackbox:zns,ns_sizes_mb=16:16,zns_zone_size_mb=1,nchs=1,luns_per_ch=1,"
    "pgs_per_blk=16,op_pcent=50,flash_type=1,pg_rd_lat=%d,pg_wr_lat=1000000,"
    "blk_er_lat=1000000,ch_xfer_lat=0" % READ_NS))
BB_STATS = {"host_pages_written", "host_pages_read", "unmapped_pages_read",
            "nand_pages_written", "waf_milli", "gc_runs", "gc_pages_moved"}
ZNS_STATS = {"buffer_read_hits", "pages_programmed", "pages_read", "buffer_flushes",
             "zones_open", "zones_active"}
HOST_STATS = {"host_read_commands", "host_write_commands", "host_bytes_read",
              "host_bytes_written", "media_reads", "media_read_ns"}


@pytest.fixture
def queues(ctrl):
    """I/O queues 1 and 2, every command set enabled, zone 0 of namespace 2 holding one
    programmed page (4 KiB, a whole program unit on one chip)."""
    ctrl.enable(css=nvme.CC_CSS_ALL)
    sq1 = ctrl.create_io_queues(1)
    sq2 = ctrl.create_io_queues(2)
    assert ctrl.zone_send(sq2, 2, 0, nvme.ZSA_RESET, select_all=True).ok
    assert ctrl.write(sq2, 2, 0, bytes(range(256)) * 16).ok
    assert ctrl.flush(sq2, 2).ok
    time.sleep(2 * R)
    return sq1, sq2


def test_zoned_read_alone(ctrl, queues):
    _, sq2 = queues
    _, model_ns = ctrl.model_timed(lambda: ctrl.wait(sq2, ctrl.submit_read(sq2, 2, 0, 8)))
    assert model_ns == READ_NS, model_ns


def test_slow_read_on_ns1_delays_ns2(ctrl, queues):
    """Namespace 1 reads 8 never-written pages (8 reads on the chip), then namespace 2
    reads its page from the same chip: it waits for all eight."""
    sq1, sq2 = queues
    before = ctrl.vendor_log()
    t0 = time.monotonic()
    slow = ctrl.submit_read(sq1, 1, 0, 64)
    late = ctrl.submit_read(sq2, 2, 0, 8)
    c_slow, c_late = ctrl.wait_all([(sq1, slow), (sq2, late)])
    assert c_slow.ok and c_late.ok, (c_slow, c_late)
    after = ctrl.vendor_log()
    assert after["ns1_unmapped_pages_read"] - before["ns1_unmapped_pages_read"] == 8
    assert after["ns2_pages_read"] - before["ns2_pages_read"] == 1
    # one flash: both models report the same chip, busy for the nine reads
    for ns in (1, 2):
        key = "ns%d_chip0_busy_ns" % ns
        assert after[key] - before[key] == 9 * READ_NS, key
    # the model's own latencies: eight page reads; the ninth after them, from its arrival
    grew = {k: after[k] - before[k] for k in ("ns1_media_reads", "ns2_media_reads",
                                              "ns1_media_read_ns", "ns2_media_read_ns",
                                              "media_reads", "media_read_ns")}
    assert grew["ns1_media_reads"] == grew["ns2_media_reads"] == 1, grew
    assert grew["ns1_media_read_ns"] == 8 * READ_NS, grew
    assert 8 * READ_NS < grew["ns2_media_read_ns"] <= 9 * READ_NS, grew
    assert grew["media_reads"] == 2, grew
    assert grew["media_read_ns"] == grew["ns1_media_read_ns"] + grew["ns2_media_read_ns"]
    # and the host saw neither before its time
    assert c_slow.t - t0 >= grew["ns1_media_read_ns"] / 1e9, c_slow.t - t0
    assert c_late.t - t0 >= grew["ns2_media_read_ns"] / 1e9, c_late.t - t0


def test_statistics_carry_the_namespace_prefix(ctrl, queues):
    stats = ctrl.vendor_log()
    assert stats["mode"] == "mixed"
    controller = {"mode", "completions", "lateness_p50_ns", "lateness_p99_ns",
                  "lateness_max_ns", "max_pass_ns", "long_cmd_steps", "model_latency_ns",
                  "dataplane_passes", "dataplane_sleeps", "power_cuts"} | HOST_STATS
    ns1 = {k[4:] for k in stats if k.startswith("ns1_")}
    ns2 = {k[4:] for k in stats if k.startswith("ns2_")}
    assert set(stats) == controller | {"ns1_" + k for k in ns1} | {"ns2_" + k for k in ns2}
    assert BB_STATS <= ns1 and not ZNS_STATS & ns1, sorted(ns1)
    assert ZNS_STATS <= ns2 and not BB_STATS & ns2, sorted(ns2)
    assert HOST_STATS <= ns1 and HOST_STATS <= ns2
    assert stats["ns2_host_bytes_written"] >= 4096
    assert stats["host_bytes_written"] == stats["ns1_host_bytes_written"] + \
        stats["ns2_host_bytes_written"]
