"""Device properties at their limits. Every refused value stops QEMU at start (no guest:
QEMU is started under the qtest accelerator) with a message that names the property and
the allowed range; the largest accepted values (queues=128, namespaces=64, entries=65536)
give a controller whose every queue and namespace works."""

import random
import re
import struct
import time

import pytest

import nvme
import qtest_machine
from qtest import QEMULaunchError, QTest
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's properties")

# (extra -object/-device arguments or None, femu properties, what the message must say).
# The property name is in every message; the rest is the allowed range or the reason.
BB = "femu_mode=1,devsz_mb=64,nchs=2,luns_per_ch=1"
ZNS = "femu_mode=3,devsz_mb=1024"
WB = "femu_mode=0,devsz_mb=64,lba_index=1,lpgs_per_blk=16"
WB0 = "femu_mode=0,devsz_mb=64,lpgs_per_blk=16"         # without lba_index
REFUSED = [
    # controller
    ("femu_mode=7", ["femu_mode=7 is not available",
                     "allowed 0 (ocssd), 1 (blackbox), 2 (nossd), 3 (zns), 4 (fdp)"]),
    ("queues=0", ["queues=0", "1..128"]),
    ("queues=129", ["queues=129", "1..128"]),
    ("namespaces=0", ["namespaces=0", "1..64"]),
    ("namespaces=65", ["namespaces=65", "1..64"]),
    ("entries=1", ["entries=1", "2..65536"]),
    ("entries=65537", ["entries=65537", "2..65536"]),
    ("mdts=16", ["mdts=16", "0 (no limit) .. 15"]),
    ("lba_index=2", ["lba_index=2", "0 (512-byte LBAs) or 1 (4096-byte LBAs)"]),
    ("vwc=2", ["vwc=2", "0 or 1"]),
    ("aerl=16", ["aerl=16", "0..15"]),
    ("elpe=64", ["elpe=64", "0..63"]),
    ("poll_idle_us=1000001", ["poll_idle_us=1000001", "0..1000000"]),
    ("dataplane=fast", ["dataplane='fast'", "allowed thread, main-loop"]),
    ("nand_sched=lifo", ["nand_sched='lifo'", "allowed backfill", "or fifo"]),
    ("nand_suspend=reads", ["nand_suspend='reads'", "off (the default), program, erase, both"]),
    ("nand_suspend=erase,nand_suspend_max=0", ["nand_suspend_max=0", "1..255"]),
    ("nand_suspend_max=256", ["nand_suspend_max=256", "..255"]),
    ("nand_suspend_ns=10000001", ["nand_suspend_ns=10000001", "0..10000000"]),
    ("nand_resume_ns=10000001", ["nand_resume_ns=10000001", "0..10000000"]),
    ("nand_cmd_ns=1000001", ["nand_cmd_ns=1000001", "0..1000000"]),
    ("nand_status_ns=1000001", ["nand_status_ns=1000001", "0..1000000"]),
    ("nand_retry_pe=10000001", ["nand_retry_pe=10000001", "0..10000000"]),
    ("nand_retry_max=65", ["nand_retry_max=65", "0..64"]),
    ("nand_base_pe=10000001", ["nand_base_pe=10000001", "0..10000000"]),
    ("nand_xfer_split=9", ["nand_xfer_split=9", "0..8"]),
    ("flash_preset=ssd", ["flash_preset='ssd'", "allowed dc-tlc, dc-tlc-gen4, zns-tlc, ll-slc"]),
    ("pcie_gen=6", ["pcie_gen=6", "0 (no link model) or 1..5"]),
    ("pcie_gen=3,pcie_lanes=3", ["pcie_lanes=3", "1, 2, 4, 8, 16"]),
    ("pcie_lanes=32", ["pcie_lanes=32", "1, 2, 4, 8, 16"]),
    ("fw_cores=65", ["fw_cores=65", "1..64"]),
    ("fw_cores=1,fw_cmd_ns=1000000001", ["fw_cmd_ns=1000000001", "0..1000000000"]),
    ("femu_mode=3,devsz_mb=1024,nand_sched=", ["nand_sched=''", "allowed backfill"]),
    ("serial=s23456789012345678901", ["serial=", "at most 20 characters"]),
    ("devsz_mb=67108865", ["devsz_mb=67108865", "1..67108864"]),
    ("x-crash-at=nowhere", ["x-crash-at='nowhere'", "not a crash point",
                            "allowed write-placed, reset-saved, plp-recovered"]),
    ("x-crash-at=write-placed:0", ["x-crash-at=", "1..4294967295"]),
    # namespaces
    ("namespaces=2,ns_types=zns:foo", ["ns_types=", "'foo'",
                                       "allowed ocssd, blackbox, nossd, zns"]),
    ("namespaces=2,ns_types=nossd:zns:blackbox", ["ns_types=", "one mode per namespace",
                                                  "namespaces=2"]),
    ("namespaces=2,ns_sizes_mb=8", ["ns_sizes_mb=", "one size in MiB per namespace"]),
    ("namespaces=2,ns_sizes_mb=8:x", ["ns_sizes_mb=", "'x'", "1..67108864"]),
    ("devsz_mb=16,namespaces=2,ns_sizes_mb=8:4", ["ns_sizes_mb=", "12 MiB", "devsz_mb=16"]),
    # the backend
    ("-object memory-backend-ram,id=m,size=8M|devsz_mb=16,memdev=m",
     ["devsz_mb=16", "memdev 'm' of 8 MiB"]),
    ("-object memory-backend-ram,id=m,size=64M -device femu,devsz_mb=16,memdev=m|"
     "devsz_mb=16,memdev=m", ["memdev 'm'", "already in use"]),
    # power-loss protection (zoned)
    (ZNS + ",plp=sometimes", ["plp='sometimes'", "none, selective, full"]),
    (ZNS + ",namespaces=2,plp=full:none:none", ["plp=", "one per namespace"]),
    (ZNS + ",plp=selective,plp_flush_pct=0", ["plp_flush_pct=0", "1..100"]),
    (ZNS + ",plp=selective,plp_flush_pct=101", ["plp_flush_pct=101", "1..100"]),
    (ZNS + ",plp=selective,plp_zones=64", ["plp_zones='64'", "0..63"]),
    (ZNS + ",plp=selective,plp_zones=3-1", ["plp_zones='3-1'", "a <= b"]),
    (ZNS + ",plp_zones=1", ["plp_zones='1' needs plp=selective"]),
    (ZNS + ",plp=selective,plp_flush=fast", ["plp_flush='fast'", "balanced or normal"]),
    (ZNS + ",plp=selective,vwc=0", ["plp= needs vwc=1"]),
    (ZNS + ",plp=selective,buf_mb=20000", ["buf_mb=20000", "0..16384"]),
    (ZNS + ",plp=selective,namespaces=2,ns_types=zns:nossd", ["plp=",
                                                              "every namespace zoned"]),
    ("plp_fail_prob=101", ["plp_fail_prob=101", "0..100"]),
    ("plp_fail_interval_ms=86400001", ["plp_fail_interval_ms=86400001", "0..86400000"]),
    # blackbox
    (BB + ",nchs=8,luns_per_ch=8,pgs_per_blk=64,op_pcent=1", ["op_pcent"]),
    (BB + ",gc_thres_pcent=0", ["gc_thres_pcent=0", "1..99"]),
    (BB + ",gc_thres_pcent=80,gc_thres_pcent_high=70", ["gc_thres_pcent_high=70", "80"]),
    (BB + ",flash_type=9", ["flash_type=9", "1 (SLC), 2 (MLC), 3 (TLC), 4 (QLC)"]),
    (BB + ",flash_type=2,pg_rd_lats=50000", ["pg_rd_lats=", "needs 2 latencies"]),
    (BB + ",pg_rd_lats=50000,,60000", ["pg_rd_lats=", "needs 3 latencies"]),   # ",," : ","
    (BB + ",op_pcent=7,blks_per_pl=64", ["op_pcent", "blks_per_pl"]),
    (BB + ",time_scale=0", ["time_scale=0", "1..1000000"]),
    (BB + ",gc_policy=oldest", ["gc_policy=oldest is not a victim policy", "d-choices",
                                "windowed-greedy"]),
    (BB + ",gc_policy=d-choices:d=0", ["gc_policy=d-choices: d=0 is out of range",
                                       "1..1024"]),
    (BB + ",gc_pacing=smooth", ["gc_pacing=smooth is not a GC pacing",
                                "burst, proportional"]),
    (BB + ",gc_pacing=proportional:boost=17", ["boost=17 is out of range", "1..16"]),
    ("femu_mode=4,devsz_mb=64,nchs=2,luns_per_ch=1,gc_policy=fifo:x=1",
     ["gc_policy=fifo takes no parameters"]),
    (BB + ",streams=hot", ["streams=hot is not a stream assignment", "host-gc, hot-cold, shared"]),
    ("femu_mode=4,devsz_mb=64,nchs=2,luns_per_ch=1,streams=host-gc",
     ["streams=host-gc applies to blackbox drives"]),
    (BB + ",wb_size_mb=16385", ["wb_size_mb=16385", "0..16384"]),
    (BB + ",wb_size_mb=-2", ["wb_size_mb=-2", "0..16384"]),
    (BB + ",wb_size_mb=1,vwc=0", ["wb_size_mb=1 with wb_plp=off needs vwc=1"]),
    ("femu_mode=4,devsz_mb=64,nchs=2,luns_per_ch=1,wb_size_mb=1,vwc=0",
     ["wb_size_mb=1 with wb_plp=off needs vwc=1"]),
    (BB + ",wb_size_mb=1,wb_high_pct=40", ["wb_high_pct=40, wb_low_pct=40",
                                           "0 <= low < high <= 100"]),
    (BB + ",wb_size_mb=1,wb_high_pct=101", ["wb_high_pct=101", "high <= 100"]),
    (BB + ",wb_size_mb=1,wb_ctrl_mw=100001", ["wb_ctrl_mw=100001", "0..100000"]),
    (BB + ",map_unit_kb=3", ["map_unit_kb=3", "allowed 0 (the page), 4, 2, 1"]),
    (BB + ",map_unit_kb=8", ["map_unit_kb=8", "allowed 0 (the page), 4, 2, 1"]),
    (BB + ",secs_per_pg=32,map_unit_kb=32", ["map_unit_kb=32", "allowed 0 (the page), 16, 8"]),
    ("femu_mode=4,devsz_mb=64,nchs=2,luns_per_ch=1,secs_per_pg=32,map_unit_kb=4",
     ["map_unit_kb=4 applies to blackbox drives", "map_unit_kb=16"]),
    # zoned
    (ZNS + ",zns_zone_size_mb=3", ["zns_zone_size_mb=3", "a power of two from 1 to 65536"]),
    (ZNS + ",devsz_mb=1030,zns_zone_size_mb=4", ["zns_zone_size_mb=4", "devsz_mb"]),
    (ZNS + ",zns_zone_size_mb=4,zns_zone_cap=5M", ["zns_zone_cap"]),
    (ZNS + ",zns_max_open=8,zns_max_active=4", ["zns_max_active"]),
    (ZNS + ",zns_zasl=8", ["zns_zasl=8", "0 (= mdts) .. mdts=7"]),
    (ZNS + ",zns_zasl=7,mdts=6", ["zns_zasl=7", "mdts=6"]),
    (ZNS + ",zns_stripe=3", ["zns_stripe=3", "a divisor of 32"]),
    (ZNS + ",zns_num_ch=2,zns_num_lun=2,zns_stripe=8", ["zns_stripe=8", "a divisor of 4"]),
    (ZNS + ",zns_zd_ext_size=100", ["zns_zd_ext_size=100"]),
    # whitebox
    (WB + ",lver=1", ["lver=1", "allowed 2"]),
    (WB + ",lsec_size=512", ["lsec_size=512", "lba_index=1", "4096"]),
    (WB0 + ",lsec_size=4096,lba_index=0", ["lsec_size=4096", "lba_index=0", "disagree",
                                           "lsec_size=512 with lba_index=0"]),
    (WB0 + ",lsec_size=1024", ["lsec_size=1024", "allowed 512 or 4096"]),
    (WB0 + ",lsec_size=4294967295", ["lsec_size=4294967295", "allowed 512 or 4096"]),
    (WB + ",lmax_sec_per_rq=65", ["lmax_sec_per_rq=65", "1..64"]),
    (WB + ",lmax_sec_per_rq=0", ["lmax_sec_per_rq=0", "1..64"]),
    (WB + ",lmetasize=12", ["lmetasize=12", "multiple of 8 up to 256"]),
    (WB + ",lmetasize=264", ["lmetasize=264", "multiple of 8 up to 256"]),
    (WB + ",lnum_lun=3", ["lnum_lun=3", "power of two"]),
    (WB + ",lnum_ch=0", ["lnum_ch"]),
    (WB + ",lpgs_per_blk=3", ["sectors per chunk", "power of two"]),
    (WB + ",devsz_mb=48", ["48 MiB", "use 32 MiB"]),
    (WB + ",devsz_mb=4", ["4 MiB cannot give every PU", "lpgs_per_blk"]),
    (WB + ",oc_mccap=4", ["oc_mccap=0x4", "0x1", "0x2"]),
    (WB + ",oc_maxocpu=9", ["oc_maxocpu=9", "0 (no limit) .. 8"]),
    (WB + ",oc_maxoc=1000", ["oc_maxoc=1000", "0 (no limit) .. 128"]),
    ("devsz_mb=64,lba_index=1,namespaces=2,ns_types=ocssd:ocssd",
     ["ns_types=", "one whitebox (ocssd) namespace"]),
    # read-ahead
    ("femu_mode=2,sra=on", ["sra=on", "reads ahead", "1 (blackbox), 3 (zns)"]),
    (WB + ",sra=on", ["sra=on", "reads ahead", "1 (blackbox), 3 (zns)"]),
    (ZNS + ",sra=on,sra_streams=0", ["sra_streams=0", "1..64"]),
    (ZNS + ",sra=on,sra_streams=65", ["sra_streams=65", "1..64"]),
    (ZNS + ",sra=on,sra_ramp=0", ["sra_ramp=0", "1..1024"]),
    (ZNS + ",sra=on,sra_max_qd=0", ["sra_max_qd=0", "1..1024"]),
    (ZNS + ",sra=on,sra_max_read_kb=0", ["sra_max_read_kb=0", ">= 1"]),
    (ZNS + ",sra=on,sra_window=0", ["sra_window=0", "1..4096"]),
    (ZNS + ",sra=on,sra_window=4097", ["sra_window=4097", "1..4096"]),
    (ZNS + ",sra=on,sra_window=64,sra_cache_kb=16", ["sra_cache_kb=16", "sra_window=64",
                                                     ">= 256"]),
    (BB + ",sra=on,sra_streams=0", ["sra_streams=0", "1..64"]),
    ("devsz_mb=64,namespaces=2,ns_types=nossd:zns,sra=on,sra_ramp=2000",
     ["sra_ramp=2000", "1..1024"]),
]


def start_refused(case, tmp_path):
    """Start QEMU with the case's arguments: QEMU's exit status and its message (the
    echo of the -device option QEMU prints before it taken out)."""
    extra, _, props = case.rpartition("|")
    args = extra.split() + ["-device", "femu," + props]
    try:
        qt = QTest(qtest_machine.QEMU, args)
    except QEMULaunchError as e:
        return e.exitcode, re.sub(r"-device \S+: ", "", e.output), e.output
    qt.close()
    pytest.fail("QEMU accepted -device femu,%s" % props)


@pytest.mark.parametrize("case,needles", REFUSED, ids=[c for c, _ in REFUSED])
def test_refused(machine_binary, tmp_path, case, needles):
    code, message, output = start_refused(case, tmp_path)
    assert code == 1, output
    for needle in needles:
        assert needle in message, "the message does not say %r:\n%s" % (needle, output)


@pytest.fixture(scope="module")
def machine_binary():
    qtest_machine.skip_unless_qemu()


# -- the largest accepted values ----------------------------------------------------


class OwnMachine:
    """One QEMU per test class, with the class's DEV."""

    @pytest.fixture(scope="class")
    @classmethod
    def machine(cls, tmp_path_factory):
        m = qtest_machine.start_machine(cls.DEV, str(tmp_path_factory.mktemp("qtest")))
        yield m
        m.close()


class TestMostQueues(OwnMachine):
    DEV = DevConfig(queues=128, entries=65536, size_mb=16)

    def test_every_queue_pair(self, ctrl, machine, io_ok):
        assert ctrl.cap["mqes"] == 65535
        c = ctrl.get_features(nvme.FEAT_NUM_QUEUES)
        assert c.ok and c.dw0 == 127 << 16 | 127, c
        assert machine.msix.size == 129
        sqs = [ctrl.create_io_queues(q, entries=2) for q in range(1, 129)]
        for sq in sqs:
            io_ok(ctrl, sq, slba=sq.qid)
        # each completion came with its own queue's vector
        for sq in sqs[:4] + sqs[-4:]:
            assert machine.msix.fired(sq.qid), sq.qid
        for sq in sqs:
            ctrl.delete_io_queues(sq.qid)

    def test_largest_queue(self, ctrl, io_ok):
        """65535 commands fill a 65536-entry queue pair; two more wrap the SQ tail, the
        CQ head and its phase."""
        size = 65536
        sq = ctrl.create_io_queues(1, entries=size)
        cq = sq.cq
        n = size - 1
        flush = nvme.cmd(nvme.IO_FLUSH, nsid=1)
        ctrl.qt.memwrite(sq.addr, b"".join(flush[:2] + struct.pack("<H", i) + flush[4:]
                                           for i in range(n)))
        ctrl.wr32(ctrl.sq_doorbell(1), n)
        deadline = time.monotonic() + 60
        while not ctrl.qt.memread(cq.addr + (n - 1) * 16, 16)[14] & 1:
            assert time.monotonic() < deadline, "65535 flushes did not complete"
            time.sleep(0.01)
        raw = ctrl.qt.memread(cq.addr, size * 16)
        cpls = [nvme.Completion(raw[16 * i:16 * i + 16]) for i in range(size)]
        assert [c.cid for c in cpls[:n]] == list(range(n))
        assert all(c.ok and c.phase == 1 and c.sqid == 1 for c in cpls[:n])
        assert cpls[n].phase == 0, "posted more than were submitted"
        assert cpls[n - 1].sqhd == n
        sq.tail = sq.head = cq.head = n
        sq.next_cid = n
        ctrl.ring_cq(cq)
        io_ok(ctrl, sq)                 # slot 65535, then slot 0 of both queues
        assert sq.tail == 1 and cq.head == 1 and cq.phase == 0


class TestMostNamespaces(OwnMachine):
    DEV = DevConfig(namespaces=64, size_mb=64)

    def test_every_namespace(self, ctrl, io_ok):
        assert ctrl.id_ctrl()["nn"] == 64
        c, data = ctrl.identify(0x02)
        assert c.ok, c
        ids = [int.from_bytes(data[4 * i:4 * i + 4], "little") for i in range(65)]
        assert ids == list(range(1, 65)) + [0]
        sq = ctrl.create_io_queues(1)
        for nsid in range(1, 65):
            assert ctrl.id_ns(nsid)["nsze"] == (1 << 20) // 512, nsid
            io_ok(ctrl, sq, nsid=nsid, slba=nsid)
        # each namespace kept its own data (io_ok wrote Random(slba) data at slba)
        for nsid in range(1, 65):
            c, back = ctrl.read(sq, nsid, nsid, 2)
            assert c.ok and back == random.Random(nsid).randbytes(1024), nsid
        c = ctrl.execute(sq, ctrl.rw_cmd(nvme.IO_READ, 65, 0, 1, prp1=ctrl.buffer(512)))
        assert c.code == (0, nvme.SC_INVALID_NS), c
