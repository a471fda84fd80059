"""What the read-ahead qtests share: a slow array read (50 ms) so that a read's latency in
the model (the statistic model_latency_ns, which a busy host does not move) tells a hit
from a miss, and reads of 4 KiB pages checked against what was written."""

import time

RD = 0.050                      # array read, s
PAGE = 4096
BLK = PAGE // 512               # LBAs per page
RAMP, WINDOW = 4, 8
IDLE = 2.0                      # s, well above any wait of the tests
SRA = "sra=on,sra_ramp=%d,sra_window=%d,sra_cache_kb=64,sra_idle_ms=%d" % (
    RAMP, WINDOW, IDLE * 1000)


def pattern(seed, nbytes):
    return bytes((seed * 7 + i // PAGE + i) & 0xFF for i in range(nbytes))


def read_page(ctrl, sq, nsid, base, page, data):
    """Reads page `page` of the data written at LBA base and checks it; the model's
    latency of the read, in seconds."""
    (c, got), model_ns = ctrl.model_timed(lambda: ctrl.read(sq, nsid, base + page * BLK, BLK))
    assert got == data[page * PAGE:(page + 1) * PAGE]
    return model_ns / 1e9


def ramp_and_wait(ctrl, sq, nsid, base, data):
    """RAMP reads (all misses), then long enough for the window to be read ahead."""
    for p in range(RAMP):
        assert read_page(ctrl, sq, nsid, base, p, data) >= RD
    time.sleep(WINDOW * RD)


def grew(before, after, name):
    """How much a counter grew (a stream's counters appear once it is first used)."""
    return after.get(name, 0) - before.get(name, 0)
