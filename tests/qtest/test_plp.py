"""Selective power-loss protection (plp=) on a zoned namespace, driven through qtest:
a protected write (CDW3 bit 0, a durable zone, a full-protection namespace) survives a
power cut, an unprotected one that no Flush covered does not (its zone's write pointer
goes back to where durable data ends), a flushed one does; Flush leaves the PLP region
alone; Zone Reset discards; power comes back with a machine reset or a new QEMU on the
same file; random injection. (Refused properties: test_properties.py.)"""


import pytest

import nvme
import qtest_machine
from nvme import IO_WRITE, IO_ZONE_APPEND, ZS_CLOSED, ZS_EMPTY, ZS_FULL, cmd
from qtest_machine import DevConfig, Machine

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's plp")

PATH = "/machine/peripheral/femu0"
ZONE_MB = 1
SIZE_MB = 16
BASE = ("zns_zone_size_mb=%d,zns_num_ch=2,zns_num_lun=2,plp_buf_mb=1,buf_mb=1"
        % ZONE_MB)
BS = 512
ZONE = (ZONE_MB << 20) // BS


class Drive:
    """One QEMU (on a backing file when given), controller on, one I/O queue pair."""

    def __init__(self, tmp_path, extra="plp=selective", backing=None, namespaces=1):
        qtest_machine.skip_unless_qemu()
        cfg = DevConfig(mode=3, size_mb=SIZE_MB, namespaces=namespaces,
                        extra=BASE + "," + extra, memdev_file=backing,
                        memdev_mb=SIZE_MB + 8 if backing else 0)
        self.m = Machine(cfg, str(tmp_path))
        self.start()

    def start(self):
        self.ctrl = self.m.ctrl
        self.ctrl.enable(css=nvme.CC_CSS_ALL)
        self.sq = self.ctrl.create_io_queues(1, entries=64)

    def write(self, lba, data, protect=False, nsid=1, opc=IO_WRITE, fua=False):
        addr = self.ctrl.buffer(len(data), data)
        p1, p2 = self.ctrl.prps(addr, len(data))
        c = self.ctrl.execute(self.sq, cmd(opc, nsid=nsid, prp1=p1, prp2=p2,
                                           cdw10=lba & 0xFFFFFFFF, cdw11=lba >> 32,
                                           cdw12=len(data) // BS - 1 | fua << 30,
                                           cdw3=1 if protect else 0))
        assert c.ok, c
        return c

    def read(self, lba, n, nsid=1):
        c, data = self.ctrl.read(self.sq, nsid, lba, n)
        assert c.ok, c
        return data

    def zone(self, z, nsid=1):
        return self.ctrl.zone(self.sq, nsid, z * ZONE)

    def flush(self, nsid=1):
        c = self.ctrl.flush(self.sq, nsid)
        assert c.ok, c

    def stats(self):
        r = self.m.qmp("qom-get", path=PATH, property="stats")["return"]
        return {k.replace("-", "_"): v for k, v in r.items()}

    def cut(self):
        r = self.m.qmp("qom-set", path=PATH, property="power-cut", value=True)
        assert "error" not in r, r
        assert self.m.qmp("qom-get", path=PATH, property="power-cut")["return"] is True

    def power_on(self):
        """A machine reset: power back, recovery, a fresh controller."""
        assert "error" not in self.m.qmp("system_reset")
        assert self.m.qmp("qom-get", path=PATH, property="power-cut")["return"] is False
        self.m.rebind()
        self.start()

    def close(self):
        self.m.close()


def blob(n, seed):
    return bytes((seed * 31 + i * 7) & 0xFF for i in range(n * BS))


@pytest.fixture
def drive(tmp_path):
    d = Drive(tmp_path)
    yield d
    d.close()


def test_protected_survives_unprotected_does_not(drive):
    d = drive
    prot, unprot, flushed = blob(8, 1), blob(8, 2), blob(4, 3)
    d.write(2 * ZONE, flushed)              # zone 2: unprotected, then flushed
    d.flush()
    d.write(0, unprot)                      # zone 0: unprotected, no flush after it
    d.write(ZONE, prot, protect=True)       # zone 1: protected
    # before the cut every write reads back (zone 0's from the buffer)
    assert d.read(0, 8) == unprot and d.read(ZONE, 8) == prot
    st = d.stats()
    assert st["plp_region_used_bytes"] == 8 * BS
    assert st["plp_read_hit_sectors"] >= 16
    d.cut()
    st = d.stats()
    assert st["plp_power_losses"] == 1 and st["power_cuts"] == 1
    assert st["plp_lost_sectors"] == 8 and st["plp_loss_pages"] == 1
    assert 0 < st["plp_loss_balanced_flush_ns"] <= st["plp_loss_normal_flush_ns"]
    d.power_on()
    assert d.stats()["plp_spor_sectors"] == 8
    z0, z1, z2 = d.zone(0), d.zone(1), d.zone(2)
    assert z0["zs"] == ZS_EMPTY and z0["wp"] == 0
    assert d.read(0, 8) == bytes(8 * BS)
    assert z1["zs"] == ZS_CLOSED and z1["wp"] == ZONE + 8
    assert d.read(ZONE, 8) == prot
    assert z2["zs"] == ZS_CLOSED and z2["wp"] == 2 * ZONE + 4
    assert d.read(2 * ZONE, 4) == flushed
    # the drive works on after the recovery: the rolled-back zone takes writes again
    d.write(0, blob(2, 9))
    assert d.read(0, 2) == blob(2, 9)


def test_write_pointer_goes_back_to_where_durable_data_ends(drive):
    d = drive
    d.write(0, blob(4, 1))
    d.flush()                               # lbas 0..3 durable
    d.write(4, blob(4, 2))                  # 4..7 lost
    d.write(8, blob(2, 3), protect=True)    # 8..9 protected: the pointer ends after them
    d.write(10, blob(6, 4))                 # 10..15 lost
    d.cut()
    d.power_on()
    z = d.zone(0)
    assert z["zs"] == ZS_CLOSED and z["wp"] == 10
    assert d.read(0, 4) == blob(4, 1)
    assert d.read(4, 4) == bytes(4 * BS)    # a hole: lost data reads as zeroes
    assert d.read(8, 2) == blob(2, 3)


def test_flush_leaves_the_plp_region_alone(drive):
    d = drive
    d.write(0, blob(8, 1), protect=True)
    d.write(ZONE, blob(8, 2))
    before = d.stats()
    d.flush()
    after = d.stats()
    assert after["plp_flushes_host"] == before["plp_flushes_host"] + 1
    assert after["plp_flushed_sectors_host"] == before["plp_flushed_sectors_host"] + 8
    assert after["plp_region_used_bytes"] == before["plp_region_used_bytes"] == 8 * BS
    # a read of a programmed page goes to flash, a read of PLP-buffered data does not
    assert d.read(0, 8) == blob(8, 1)
    assert d.stats()["plp_read_hit_sectors"] == after["plp_read_hit_sectors"] + 8


def test_zone_reset_discards(drive):
    d = drive
    d.write(0, blob(8, 1), protect=True)
    d.write(8, blob(8, 2))
    c = d.ctrl.zone_send(d.sq, 1, 0, nvme.ZSA_RESET)
    assert c.ok, c
    st = d.stats()
    assert st["plp_reset_discarded_sectors"] == 16
    assert d.read(0, 16) == bytes(16 * BS)
    d.cut()
    d.power_on()
    assert d.stats()["plp_spor_sectors"] == 0
    assert d.zone(0)["zs"] == ZS_EMPTY and d.read(0, 16) == bytes(16 * BS)


def test_finish_and_append_and_durable_zones(tmp_path):
    d = Drive(tmp_path, extra="plp=selective,plp_zones=3")
    try:
        d.write(0, blob(4, 1))
        assert d.ctrl.zone_send(d.sq, 1, 0, nvme.ZSA_FINISH).ok     # drains: durable
        d.write(3 * ZONE, blob(4, 2))                 # a durable zone: protected unflagged
        c = d.write(4 * ZONE, blob(2, 3), protect=True, opc=IO_ZONE_APPEND)
        assert nvme.append_lba(c) == 4 * ZONE
        d.write(5 * ZONE, blob(2, 4))                 # lost
        st = d.stats()
        assert st["plp_protected_bytes_written"] == 6 * BS
        d.cut()
        d.power_on()
        assert d.zone(0)["zs"] == ZS_FULL and d.read(0, 4) == blob(4, 1)
        assert d.zone(3)["wp"] == 3 * ZONE + 4 and d.read(3 * ZONE, 4) == blob(4, 2)
        assert d.zone(4)["wp"] == 4 * ZONE + 2 and d.read(4 * ZONE, 2) == blob(2, 3)
        assert d.zone(5)["zs"] == ZS_EMPTY
    finally:
        d.close()


def test_modes_per_namespace(tmp_path):
    """plp=full:none: namespace 1 protects everything, namespace 2 nothing (even flagged)."""
    d = Drive(tmp_path, extra="plp=full:none", namespaces=2)
    try:
        d.write(0, blob(4, 1), nsid=1)
        d.write(0, blob(4, 2), nsid=2, protect=True)
        d.cut()
        d.power_on()
        assert d.read(0, 4, nsid=1) == blob(4, 1)
        assert d.zone(0, nsid=2)["zs"] == ZS_EMPTY
        assert d.read(0, 4, nsid=2) == bytes(4 * BS)
    finally:
        d.close()


def test_threshold_writes_the_region_out(tmp_path):
    """buf_mb=1 with plp_flush_pct=50: passing 512 KiB of dirty data programs it all."""
    d = Drive(tmp_path, extra="plp=none,plp_flush_pct=50")
    try:
        d.write(0, blob(128, 1) * 8)                  # 512 KiB: at the threshold, not past
        assert d.stats()["plp_flushes_threshold"] == 0
        d.write(1024, blob(8, 2))                     # past it
        st = d.stats()
        assert st["plp_flushes_threshold"] == 1
        assert st["plp_flushed_sectors_threshold"] == 1032
        d.cut()
        d.power_on()
        # programmed by the threshold: durable though never flushed
        assert d.zone(0)["wp"] == 1032 and d.read(1024, 8) == blob(8, 2)
    finally:
        d.close()


def test_dead_controller_until_reset(drive):
    d = drive
    addr = d.ctrl.buffer(BS, blob(1, 5))
    d.cut()
    assert d.ctrl.rd32(0x1C) == 0xFFFFFFFF            # CSTS of a device without power
    assert d.ctrl.rd64(0) == 0xFFFFFFFFFFFFFFFF
    # a command rung now never completes
    sqe = cmd(IO_WRITE, nsid=1, prp1=addr, cdw10=0, cdw12=0)
    cid = d.ctrl.queue_cmd(d.sq, sqe)
    d.ctrl.ring_sq(d.sq)
    assert d.ctrl.try_wait(d.sq, cid, 0.5) is None
    r = d.m.qmp("qom-set", path=PATH, property="power-cut", value=False)
    assert "system_reset" in r["error"]["desc"]
    d.power_on()
    assert d.zone(0)["zs"] == ZS_EMPTY                # the write never happened


def test_restart_with_a_file_backend(tmp_path):
    """A power cut, then QEMU quits; and QEMU killed without any cut: a new QEMU on the
    file restores what was protected and nothing else."""
    path = str(tmp_path / "plp.img")
    d = Drive(tmp_path, backing=path)
    d.write(0, blob(8, 1), protect=True)
    d.write(ZONE, blob(8, 2))
    d.cut()
    d.close()
    with open(path, "rb") as f:
        assert f.read(8 * BS) == bytes(8 * BS)      # not at its place yet: in the store
    d = Drive(tmp_path, backing=path)
    assert d.read(0, 8) == blob(8, 1) and d.zone(0)["wp"] == 8
    assert d.zone(1)["zs"] == ZS_EMPTY
    assert d.stats()["plp_spor_sectors"] == 8
    d.write(2 * ZONE, blob(4, 3), protect=True)
    d.write(3 * ZONE, blob(4, 4))
    d.m.qt.kill()
    d.close()
    d = Drive(tmp_path, backing=path)
    try:
        assert d.read(0, 8) == blob(8, 1)
        assert d.read(2 * ZONE, 4) == blob(4, 3) and d.zone(2)["wp"] == 2 * ZONE + 4
        assert d.zone(3)["zs"] == ZS_EMPTY and d.read(3 * ZONE, 4) == bytes(4 * BS)
    finally:
        d.close()


def test_clean_shutdown_keeps_everything(tmp_path):
    path = str(tmp_path / "plp.img")
    d = Drive(tmp_path, backing=path)
    d.write(0, blob(8, 1))
    d.ctrl.shutdown()
    d.close()
    d = Drive(tmp_path, backing=path)
    try:
        assert d.zone(0)["wp"] == 8 and d.read(0, 8) == blob(8, 1)
    finally:
        d.close()


def test_random_power_loss(tmp_path):
    d = Drive(tmp_path, extra="plp=selective,plp_fail_interval_ms=5,plp_fail_prob=100")
    try:
        for _ in range(200):
            if d.m.qmp("qom-get", path=PATH, property="power-cut")["return"]:
                break
            d.m.qt.clock_step(5 * 10**6)
        assert d.m.qmp("qom-get", path=PATH, property="power-cut")["return"] is True
        assert d.stats()["power_cuts"] == 1
    finally:
        d.close()


def test_flush_of_one_namespace(tmp_path):
    """A Flush names a namespace: only that namespace's buffered data is written out
    (a broadcast Flush writes out every namespace's)."""
    d = Drive(tmp_path, extra="plp=none", namespaces=2)
    try:
        d.write(0, blob(4, 1), nsid=1)
        d.write(0, blob(4, 2), nsid=2)
        d.flush(nsid=1)
        d.cut()
        d.power_on()
        assert d.zone(0, nsid=1)["wp"] == 4 and d.read(0, 4, nsid=1) == blob(4, 1)
        assert d.zone(0, nsid=2)["zs"] == ZS_EMPTY
        d.write(0, blob(4, 3), nsid=2)
        d.flush(nsid=0xFFFFFFFF)
        d.cut()
        d.power_on()
        assert d.read(0, 4, nsid=2) == blob(4, 3)
    finally:
        d.close()


def test_fua_write_is_on_flash_when_it_completes(tmp_path):
    """Force Unit Access on an unprotected write: programmed (with the zone's earlier
    unprotected data, which goes first) before the completion; other zones stay buffered."""
    d = Drive(tmp_path, extra="plp=none")
    try:
        d.write(0, blob(4, 1))
        d.write(4, blob(4, 2), fua=True)
        d.write(ZONE, blob(4, 3))
        st = d.stats()
        assert st["plp_flushes_fua"] == 1 and st["plp_flushed_sectors_fua"] == 8
        d.cut()
        d.power_on()
        assert d.zone(0)["wp"] == 8 and d.read(0, 8) == blob(4, 1) + blob(4, 2)
        assert d.zone(1)["zs"] == ZS_EMPTY
    finally:
        d.close()


def test_finish_from_empty_or_closed_stays_full_across_restarts(tmp_path):
    """Zone Finish from Empty, and from Closed (zonefs and zoned btrfs finish zones), is
    durable: the zones stay Full at every later start, and so does a finish of an open
    zone (ZNS: a power cycle only turns open zones Closed)."""
    path = str(tmp_path / "plp.img")
    d = Drive(tmp_path, backing=path)
    try:
        d.write(ZONE, blob(4, 1))
        assert d.ctrl.zone_send(d.sq, 1, ZONE, nvme.ZSA_CLOSE).ok
        d.write(2 * ZONE, blob(4, 2), protect=True)
        for z in (0, 1, 2):                     # from Empty, Closed, Implicitly Opened
            assert d.ctrl.zone_send(d.sq, 1, z * ZONE, nvme.ZSA_FINISH).ok
            assert d.zone(z)["zs"] == ZS_FULL
        d.ctrl.shutdown()
    finally:
        d.close()
    for _ in range(2):
        d = Drive(tmp_path, backing=path)
        try:
            for z in (0, 1, 2):
                assert d.zone(z)["zs"] == ZS_FULL, z
            assert d.read(0, 4) == bytes(4 * BS)
            assert d.read(ZONE, 4) == blob(4, 1) and d.read(2 * ZONE, 4) == blob(4, 2)
        finally:
            d.close()
    # and across a power cut
    d = Drive(tmp_path, backing=path)
    try:
        d.cut()
        d.power_on()
        assert [d.zone(z)["zs"] for z in (0, 1, 2)] == [ZS_FULL] * 3
    finally:
        d.close()


def test_shutdown_writes_both_regions_out(tmp_path):
    """CC.SHN (a guest poweroff) programs the protected and the unprotected data: the
    drive reads the same started without plp= afterwards."""
    path = str(tmp_path / "plp.img")
    d = Drive(tmp_path, backing=path)
    try:
        d.write(0, blob(4, 1), protect=True)    # zone 0 open: protected then unprotected
        d.write(4, blob(4, 2))
        d.write(ZONE, blob(8, 3), protect=True)
        before = d.stats()
        d.ctrl.shutdown()
        st = d.stats()
        assert st["plp_flushes_drain"] == before["plp_flushes_drain"] + 2     # both regions
        assert st["plp_flushed_sectors_drain"] == before["plp_flushed_sectors_drain"] + 16
        assert st["plp_flushes_host"] == before["plp_flushes_host"]
    finally:
        d.close()
    with open(path, "rb") as f:             # at home in the data area, not only in the store
        assert f.read(8 * BS) == blob(4, 1) + blob(4, 2)
    for extra in ("plp=none", "plp_buf_mb=1,buf_mb=1"):     # the second: plp= unset
        d = Drive(tmp_path, extra=extra, backing=path)
        try:
            assert d.zone(0)["wp"] == 8 and d.zone(1)["wp"] == ZONE + 8
            assert d.read(0, 8) == blob(4, 1) + blob(4, 2)
            assert d.read(ZONE, 8) == blob(8, 3)
        finally:
            d.close()


def test_write_cache_off_makes_every_write_durable(tmp_path):
    """Set Features Volatile Write Cache with WCE=0: what the cache held is written out,
    and every later unprotected write is durable at its completion; WCE=1 buffers again."""
    d = Drive(tmp_path, extra="plp=none")
    try:
        d.write(0, blob(4, 1))                          # buffered
        before = d.stats()
        assert d.ctrl.set_features(nvme.FEAT_VWC, 0).ok
        assert d.ctrl.get_features(nvme.FEAT_VWC).dw0 == 0
        st = d.stats()
        assert st["plp_flushed_sectors_host"] == before["plp_flushed_sectors_host"] + 4
        d.write(4, blob(4, 2))
        d.write(ZONE, blob(4, 3))
        st = d.stats()                                  # each written through
        assert st["plp_flushes_fua"] == 2 and st["plp_flushed_sectors_fua"] == 8
        d.cut()
        d.power_on()
        # a controller reset puts WCE back to its default (on)
        assert d.ctrl.get_features(nvme.FEAT_VWC).dw0 == 1
        assert d.zone(0)["wp"] == 8 and d.read(0, 8) == blob(4, 1) + blob(4, 2)
        assert d.zone(1)["wp"] == ZONE + 4 and d.read(ZONE, 4) == blob(4, 3)
        d.write(2 * ZONE, blob(4, 4))                   # the cache is on again: lost
        d.cut()
        d.power_on()
        assert d.zone(2)["zs"] == ZS_EMPTY
    finally:
        d.close()
