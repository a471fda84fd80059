"""nand_sched: the flash timelines back-fill idle gaps (the default), or wait for the latest
booking (nand_sched=fifo, the first model). Seen from the host: three reads of unwritten
pages (blackbox, one channel, two chips; a read of an unwritten page costs one page read
on chip page mod 2), two on chip 0 and then one on chip 1, all submitted at once.

Read 200 ms, transfer 100 ms. Chip 0's reads take the channel for [200, 300) and
[500, 600) ms. Back-filling, chip 1's read sends its data in the gap [300, 400) and
completes at 400 ms; FIFO, it waits for the channel's latest booking: 700 ms."""

import time

import pytest

import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's flash model")

MS = 1e-3
SECTORS = 8                 # one 4 KiB page in 512-byte LBAs
BASE = 2048                 # pages no test writes


def machine_for(sched, tmp_path):
    extra = ("nchs=1,luns_per_ch=2,pgs_per_blk=16,op_pcent=50,flash_type=1,"
             "pg_rd_lat=200000000,pg_wr_lat=100000,blk_er_lat=100000,ch_xfer_lat=100000000")
    if sched:
        extra += ",nand_sched=" + sched
    return qtest_machine.start_machine(DevConfig(mode=1, size_mb=16, extra=extra),
                                       str(tmp_path))


@pytest.mark.parametrize("sched,chip1_ms", [(None, 400), ("backfill", 400), ("fifo", 700)])
def test_read_takes_the_channel_gap(tmp_path, sched, chip1_ms):
    m = machine_for(sched, tmp_path)
    try:
        ctrl = m.ctrl
        ctrl.enable()
        sq = ctrl.create_io_queues(1, entries=16)
        before = ctrl.vendor_log()
        t0 = time.monotonic()
        cids = [ctrl.submit_read(sq, 1, page * SECTORS, SECTORS)
                for page in (BASE, BASE + 2, BASE + 1)]        # chips 0, 0, 1
        done = ctrl.wait_all([(sq, c) for c in cids])
        assert all(c.ok for c in done), done
        t = [c.t - t0 for c in done]
        # each within 100 ms of the model's time (the host adds, never takes away)
        for got, want in zip(t, (300, 600, chip1_ms)):
            assert want * MS <= got < (want + 100) * MS, (t, sched)
        after = ctrl.vendor_log()
        fills = after["nand_gap_fills"] - before["nand_gap_fills"]
        assert fills == (0 if sched == "fifo" else 1), fills
    finally:
        m.close()
