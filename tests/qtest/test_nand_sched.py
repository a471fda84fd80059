"""The flash model seen from the host: a blackbox drive with one channel and two chips,
whose reads of unwritten pages cost one page read on chip page mod 2, all submitted at once.
Read 200 ms, transfer 100 ms. The drive runs with dataplane=main-loop, whose model time is
the virtual clock, which stands still under qtest unless the test steps it: the reads
arrive at one instant and each completes at the model's time exactly, however busy the
host. (The rules in detail: tests/unit/test-nand.c.)

- nand_sched: two reads on chip 0 and then one on chip 1. Chip 0's reads take the channel
  for [200, 300) and [500, 600) ms. Back-filling, chip 1's read sends its data in the gap
  [300, 400) and completes at 400 ms; FIFO, it waits for the channel's latest booking: 700.
- nand_cache=on: two reads of chip 0 finish at tR + x and 2 tR + x (the second senses
  while the first's data goes out), not 2 (tR + x).
- nand_retry_pe=1,nand_base_pe=2: every block has 2 P/E cycles, so a read senses 3 times.
- nand_cmd_ns / nand_status_ns add their channel time to a read (here with time_scale=100:
  the cycles are at most 1 ms)."""

import pytest

import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's flash model")

MS = 1_000_000              # ns
SECTORS = 8                 # one 4 KiB page in 512-byte LBAs
BASE = 2048                 # pages no test writes
BB = ("dataplane=main-loop,nchs=1,luns_per_ch=2,pgs_per_blk=16,op_pcent=50,flash_type=1,"
      "pg_rd_lat=200000000,pg_wr_lat=100000,blk_er_lat=100000,ch_xfer_lat=100000000")


def read_times(tmp_path, options, pages, base=BB):
    """Completion times (ms of model time from their common arrival) of reads of `pages`
    submitted at once, and the vendor log's change."""
    m = qtest_machine.start_machine(DevConfig(mode=1, size_mb=16, extra=base + options),
                                    str(tmp_path))
    try:
        ctrl = m.ctrl
        ctrl.enable()
        sq = ctrl.create_io_queues(1, entries=16)
        before = ctrl.vendor_log()
        done = ctrl.virtual_times(
            lambda: [(sq, ctrl.submit_read(sq, 1, page * SECTORS, SECTORS)) for page in pages],
            limit_ns=2000 * MS)
        assert all(c.ok for c, _ in done), done
        after = ctrl.vendor_log()
        return tuple(t / MS for _, t in done), {k: after[k] - before[k] for k in after
                                                if isinstance(after[k], int)}
    finally:
        m.close()


def within(got, want_ms):
    """The model's times, exactly."""
    return tuple(got) == tuple(want_ms)


@pytest.mark.parametrize("sched,chip1_ms", [(None, 400), ("backfill", 400), ("fifo", 700)])
def test_read_takes_the_channel_gap(tmp_path, sched, chip1_ms):
    t, d = read_times(tmp_path, ",nand_sched=" + sched if sched else "",
                      (BASE, BASE + 2, BASE + 1))                # chips 0, 0, 1
    assert within(t, (300, 600, chip1_ms)), (t, sched)
    assert d["nand_gap_fills"] == (0 if sched == "fifo" else 1), d


@pytest.mark.parametrize("options,want", [("", (300, 600)), (",nand_cache=on", (300, 500))])
def test_cache_read(tmp_path, options, want):
    t, _ = read_times(tmp_path, options, (BASE, BASE + 2))      # chip 0 twice
    assert within(t, want), (t, options)


def test_read_retry_from_base_wear(tmp_path):
    t, d = read_times(tmp_path, ",nand_retry_pe=1,nand_base_pe=2", (BASE,))
    assert within(t, (700,)), t                                  # 3 tR + x
    assert d["nand_read_retries"] == 2, d


@pytest.mark.parametrize("options,want", [("", 200), (",nand_cmd_ns=1000000", 300),
                                         (",nand_cmd_ns=1000000,nand_status_ns=1000000", 400)])
def test_command_and_status_cycles(tmp_path, options, want):
    # the cycles are at most 1 ms: tR, transfer and cycles of 1 ms, all x time_scale=100
    base = BB.replace("pg_rd_lat=200000000", "pg_rd_lat=1000000").replace(
        "ch_xfer_lat=100000000", "ch_xfer_lat=1000000") + ",time_scale=100"
    t, _ = read_times(tmp_path, options, (BASE,), base)
    assert within(t, (want,)), (t, options)
