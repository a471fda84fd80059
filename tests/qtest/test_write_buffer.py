"""The DRAM write buffer of the blackbox and FDP kinds (wb_size_mb, wb_plp), driven through
qtest on a drive kept in a file: a buffered write reads back before it is programmed;
without PLP a power cut (or a SIGKILL) loses what no Flush, FUA or write-out covered and
keeps the rest; with wb_plp=on nothing acknowledged is lost and the cut's hold-up energy
is reported; Set Features WCE=0 writes the buffer out; Deallocate drops buffered data; the
drive works on after each power-up. (Refused properties: test_properties.py.)"""

import random

import pytest

import nvme
import qtest_machine
from killlib import FileDrive
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's blackbox mode")

PATH = "/machine/peripheral/femu0"
PAGE = 4096                 # one flash page, one LBA (lba_index=1)
GEO = "nchs=2,luns_per_ch=2,pgs_per_blk=16,flash_type=1,op_pcent=25"
# 1 MiB: 256 units; written out above 60 % (153) down to 40 % (102)
WB = "wb_size_mb=1"


class Drive(FileDrive):
    def __init__(self, path, tmp_path, mode=1, extra=""):
        super().__init__(DevConfig(mode=mode, lba_index=1, queues=2, size_mb=16,
                                   extra=",".join(x for x in (GEO, WB, extra) if x),
                                   memdev_file=path), tmp_path)

    def stats(self):
        r = self.m.qmp("qom-get", path=PATH, property="stats")
        assert "return" in r, r
        return {k.replace("-", "_"): v for k, v in r["return"].items()}

    def io(self, fn, *a, **kw):
        mark = self.ctrl.alloc.mark()
        try:
            return fn(*a, **kw)
        finally:
            self.ctrl.alloc.release(mark)

    def put(self, lba, data, fua=False):
        def write():
            addr = self.ctrl.buffer(len(data), data)
            p1, p2 = self.ctrl.prps(addr, len(data))
            return self.ctrl.execute(self.sq, nvme.cmd(
                nvme.IO_WRITE, nsid=1, prp1=p1, prp2=p2, cdw10=lba & 0xFFFFFFFF,
                cdw11=lba >> 32, cdw12=len(data) // PAGE - 1 | fua << 30))
        c = self.io(write)
        assert c.ok, c

    def get(self, lba, n):
        c, data = self.io(self.ctrl.read, self.sq, 1, lba, n)
        assert c.ok, c
        return data

    def flush(self):
        c = self.io(self.ctrl.flush, self.sq, 1)
        assert c.ok, c

    def cut(self):
        r = self.m.qmp("qom-set", path=PATH, property="power-cut", value=True)
        assert "error" not in r, r

    def power_on(self):
        assert "error" not in self.m.qmp("system_reset")
        self.m.rebind()
        self.ctrl = self.m.ctrl
        self.ctrl.enable(css=nvme.CC_CSS_NVM)
        self.sq = self.ctrl.create_io_queues(1, entries=64)


def blob(n, seed):
    return random.Random(seed).randbytes(n * PAGE)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "drive.img")


def test_unflushed_writes_lost_flushed_kept(path, tmp_path):
    d = Drive(path, tmp_path)
    try:
        d.put(0, blob(8, 1))
        d.flush()
        d.put(16, blob(8, 2))                   # after the flush: only in the buffer
        d.put(0, blob(2, 3))                    # an overwrite of flushed data
        assert d.get(16, 8) == blob(8, 2)       # served from the buffer
        assert d.get(0, 2) == blob(2, 3)
        st = d.stats()
        assert st["wb_held_units"] == 10 and st["wb_read_hit_bytes"] >= 10 * PAGE
        assert st["wb_written_out_flush"] == 8
        assert st["host_pages_written"] == 8    # the FTL saw the flushed ones only
        d.cut()
        assert d.stats()["wb_lost_units"] == 10
        d.power_on()
        assert d.get(16, 8) == bytes(8 * PAGE)  # never programmed: never there
        assert d.get(0, 8) == blob(8, 1)        # the flushed version
        # the drive goes on: a write, a flush, a read
        d.put(16, blob(4, 4))
        d.flush()
        assert d.get(16, 4) == blob(4, 4)
    finally:
        d.shutdown()


def test_sigkill_loses_the_buffer_not_the_flushed(path, tmp_path):
    d = Drive(path, tmp_path)
    d.put(0, blob(8, 1))
    d.flush()
    d.put(0, blob(8, 2))
    d.put(32, blob(4, 3), fua=True)             # FUA: on flash at its completion
    assert d.stats()["wb_written_out_fua"] == 4
    d.kill()
    d = Drive(path, tmp_path)
    try:
        assert d.get(0, 8) == blob(8, 1)
        assert d.get(32, 4) == blob(4, 3)
    finally:
        d.shutdown()


def test_clean_shutdown_writes_the_buffer_out(path, tmp_path):
    d = Drive(path, tmp_path)
    d.put(0, blob(8, 5))
    d.shutdown()
    d = Drive(path, tmp_path)
    try:
        assert d.get(0, 8) == blob(8, 5)
    finally:
        d.shutdown()


def test_watermark_writes_out_oldest(path, tmp_path):
    """Past 60 % held (or when the drive idles between commands, down to 40 %) the oldest
    units are programmed; a cut loses the newest, never an older one."""
    d = Drive(path, tmp_path)
    try:
        for i in range(160):
            d.put(i, blob(1, 100 + i))
        d.cut()
        st = d.stats()                          # after the cut: idle time moves nothing
        held = st["wb_lost_units"]
        out = st["wb_written_out_watermark"] + st["wb_written_out_idle"]
        assert 102 <= held <= 153 and out == 160 - held, st
        d.power_on()
        for i in range(160):
            want = blob(1, 100 + i) if i < out else bytes(PAGE)
            assert d.get(i, 1) == want, "LBA %d (%d programmed)" % (i, out)
    finally:
        d.shutdown()


def test_plp_keeps_everything_and_reports_energy(path, tmp_path):
    d = Drive(path, tmp_path, extra="wb_plp=on")
    try:
        assert d.ctrl.id_ctrl()["vwc"] & 1      # vwc stays as given (default 1)
        d.put(0, blob(8, 6))
        d.flush()                               # nothing volatile: no write-out
        st = d.stats()
        assert st["wb_written_out_flush"] == 0 and st["wb_held_units"] == 8
        d.cut()
        st = d.stats()
        assert st["wb_plp_units"] == 8 and st["wb_written_out_power"] == 8
        assert st["wb_plp_ns"] > 0 and st["wb_plp_nj"] > 0
        assert st["wb_lost_units"] == 0
        d.power_on()
        assert d.get(0, 8) == blob(8, 6)
    finally:
        d.shutdown()


def test_plp_survives_sigkill(path, tmp_path):
    d = Drive(path, tmp_path, extra="wb_plp=on")
    d.put(0, blob(8, 7))
    d.kill()
    d = Drive(path, tmp_path, extra="wb_plp=on")
    try:
        assert d.get(0, 8) == blob(8, 7)
    finally:
        d.shutdown()


def test_cache_off_writes_through(path, tmp_path):
    d = Drive(path, tmp_path)
    try:
        d.put(0, blob(4, 8))                    # buffered
        assert d.ctrl.set_features(nvme.FEAT_VWC, 0).ok
        assert d.stats()["wb_written_out_flush"] == 4
        d.put(8, blob(4, 9))                    # through
        assert d.stats()["wb_written_out_fua"] == 4
        d.cut()
        d.power_on()
        assert d.get(0, 4) == blob(4, 8) and d.get(8, 4) == blob(4, 9)
    finally:
        d.shutdown()


def test_deallocate_drops_buffered_data(path, tmp_path):
    d = Drive(path, tmp_path)
    try:
        d.put(0, blob(8, 10))
        d.flush()
        d.put(0, blob(8, 11))                   # buffered over flushed data
        assert d.io(d.ctrl.dsm_deallocate, d.sq, 1, [(0, 4)]).ok
        assert d.get(0, 4) == bytes(4 * PAGE)
        assert d.get(4, 4) == blob(8, 11)[4 * PAGE:]
        assert d.stats()["wb_dropped_units"] == 4
        d.flush()                               # nothing comes back from the buffer
        assert d.get(0, 4) == bytes(4 * PAGE)
    finally:
        d.shutdown()


def test_fdp_buffer(path, tmp_path):
    d = Drive(path, tmp_path, mode=4)
    try:
        d.put(0, blob(8, 12))
        assert d.get(0, 8) == blob(8, 12)
        assert d.stats()["wb_held_units"] == 8
        d.flush()
        d.put(8, blob(8, 13))
        d.cut()
        d.power_on()
        assert d.get(0, 8) == blob(8, 12) and d.get(8, 8) == bytes(8 * PAGE)
    finally:
        d.shutdown()


@pytest.mark.parametrize("types,bb", [("blackbox:zns", 1), ("zns:blackbox", 2)])
def test_beside_a_zoned_namespace(path, tmp_path, types, bb):
    """The buffer programs its data into its own namespace's area wherever that is in the
    backend, and never over the other namespace's data."""
    extra = "ns_types=%s,ns_sizes_mb=16:16,zns_zone_size_mb=1" % types
    d = FileDrive(DevConfig(mode=1, lba_index=1, queues=2, size_mb=32, namespaces=2,
                            extra=",".join((GEO, WB, extra)), memdev_file=path),
                  tmp_path, nvme.CC_CSS_ALL)
    zns = 3 - bb
    try:
        mark = d.ctrl.alloc.mark()
        zdata = blob(4, 20)
        assert d.ctrl.zone_append(d.sq, zns, 0, zdata).ok
        data = blob(8, 21)
        assert d.ctrl.write(d.sq, bb, 0, data).ok
        c, back = d.ctrl.read(d.sq, bb, 0, 8)
        assert c.ok and back == data            # from the buffer
        assert d.ctrl.flush(d.sq, bb).ok        # programmed: into the data area
        c, back = d.ctrl.read(d.sq, zns, 0, 4)
        assert c.ok and back == zdata
        d.ctrl.alloc.release(mark)
    finally:
        d.shutdown()
    d = FileDrive(DevConfig(mode=1, lba_index=1, queues=2, size_mb=32, namespaces=2,
                            extra=",".join((GEO, WB, extra)), memdev_file=path),
                  tmp_path, nvme.CC_CSS_ALL)
    try:
        c, back = d.ctrl.read(d.sq, bb, 0, 8)
        assert c.ok and back == data
        c, back = d.ctrl.read(d.sq, zns, 0, 4)
        assert c.ok and back == zdata
    finally:
        d.shutdown()
