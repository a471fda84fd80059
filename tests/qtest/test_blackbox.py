"""Blackbox mode: commands complete when the NAND model says, neither earlier nor much
later, and the model's statistics reach the host through vendor log page 0xCA.

The geometry is tiny and the page read is made 100 ms long. Each read's latency is the
model's, from the statistic model_latency_ns (a read on the wrong chip, or a doubled
latency, is a whole read late), and the host never sees the completion before it
(Ctrl.model_timed); a busy host posts it later, which the lateness statistics measure.
The chips' busy counters in the log check the same exactly."""

import pytest

import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's blackbox mode")

READ_NS = 100_000_000   # pg_rd_lat: one page read
PROGRAM_NS = 100_000     # pg_wr_lat
CHIPS = 4               # 2 channels x 2 chips, pages striped over them
PAGE = 4096
SECTORS = PAGE // 512
DEV = DevConfig(mode=1, size_mb=16, extra=(
    "nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=50,flash_type=1,"
    "pg_rd_lat=%d,pg_wr_lat=%d,blk_er_lat=100000,ch_xfer_lat=0" % (READ_NS, PROGRAM_NS)))


def chip_busy(stats):
    return [stats["chip%d_busy_ns" % i] for i in range(CHIPS)]


def timed_read(ctrl, sq, slba, nblocks):
    """(the model's latency in ns, completion, data)."""
    (cpl, data), model_ns = ctrl.model_timed(lambda: ctrl.read(sq, 1, slba, nblocks))
    return model_ns, cpl, data


def assert_reads_took(model_ns, reads, then=0):
    """`reads` page reads one after the other (after at most `then` ns of a program the
    host did not wait for)."""
    assert reads * READ_NS <= model_ns <= reads * READ_NS + then, (
        "the model took %d ns; %d x %d ns" % (model_ns, reads, READ_NS))


def test_identify_names_blackbox(ctrl):
    data = ctrl.identify(1)[1]
    assert data[24:64].decode().strip() == "FEMU BlackBox-SSD Controller"


def test_read_waits_for_the_page_read(ctrl, ioq):
    data = bytes(range(256)) * (PAGE // 256)
    assert ctrl.write(ioq, 1, 0, data).ok
    before = ctrl.vendor_log()
    took, cpl, back = timed_read(ctrl, ioq, 0, SECTORS)
    assert cpl.ok and back == data
    assert_reads_took(took, 1, then=PROGRAM_NS)
    after = ctrl.vendor_log()
    busy = [a - b for a, b in zip(chip_busy(after), chip_busy(before))]
    assert sorted(busy) == [0, 0, 0, READ_NS], busy
    assert after["nand_reads"] - before["nand_reads"] == 1


def test_unwritten_read_costs_a_page_read(ctrl, ioq):
    before = ctrl.vendor_log()
    took, cpl, back = timed_read(ctrl, ioq, 2048, SECTORS)
    assert cpl.ok and back == bytes(PAGE)
    assert_reads_took(took, 1)
    after = ctrl.vendor_log()
    assert after["unmapped_pages_read"] - before["unmapped_pages_read"] == 1
    assert sum(chip_busy(after)) - sum(chip_busy(before)) == READ_NS


def test_pages_on_one_chip_serialize(ctrl, ioq):
    # 2 * CHIPS consecutive pages, striped: two reads on every chip, one after the other
    n = 2 * CHIPS
    assert ctrl.write(ioq, 1, 64, bytes(n * PAGE)).ok
    before = ctrl.vendor_log()
    took, cpl, _ = timed_read(ctrl, ioq, 64, n * SECTORS)
    assert cpl.ok
    assert_reads_took(took, 2, then=PROGRAM_NS)
    busy = [a - b for a, b in zip(chip_busy(ctrl.vendor_log()), chip_busy(before))]
    assert busy == [2 * READ_NS] * CHIPS, busy


def test_statistics_in_vendor_log(ctrl, ioq):
    before = ctrl.vendor_log()
    assert before["mode"] == "blackbox"
    assert ctrl.write(ioq, 1, 4096, bytes(3 * PAGE)).ok
    assert ctrl.read(ioq, 1, 4096, 3 * SECTORS)[0].ok
    after = ctrl.vendor_log()
    delta = {k: after[k] - before[k] for k in after if k != "mode"}
    assert delta["host_pages_written"] == 3
    assert delta["host_pages_read"] == 3
    # no GC this early: the NAND wrote what the host did, once
    assert delta["nand_pages_written"] == delta["nand_programs"] == 3
    assert delta["gc_pages_moved"] == delta["gc_runs"] == 0
    assert after["waf_milli"] == 1000
    assert delta["completions"] == 2        # the write and the read; admin is not counted
    # lateness quantiles are present and ordered
    assert after["lateness_p50_ns"] <= after["lateness_p99_ns"] <= after["lateness_max_ns"]
    # one busy counter per chip, no more
    assert sorted(k for k in after if k.startswith("chip")) == [
        "chip%d_busy_ns" % i for i in range(CHIPS)]


def test_deallocate_unmaps(ctrl, ioq):
    before = ctrl.vendor_log()
    assert ctrl.write(ioq, 1, 8192, bytes(4 * PAGE)).ok
    assert ctrl.dsm_deallocate(ioq, 1, [(8192, 4 * SECTORS)]).ok
    after = ctrl.vendor_log()
    assert after["pages_trimmed"] - before["pages_trimmed"] == 4
    unmapped = after["unmapped_pages_read"]
    c, data = ctrl.read(ioq, 1, 8192, SECTORS)
    assert c.ok and data == bytes(PAGE)
    assert ctrl.vendor_log()["unmapped_pages_read"] == unmapped + 1
