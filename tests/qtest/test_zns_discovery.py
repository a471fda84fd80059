"""Zoned namespace discovery (femu_mode=3): CAP.CSS, the Identify data of the Zoned
command set (CSI 2), the Commands Supported and Effects log, and the namespace being
inactive unless the host enables every I/O command set (CC.CSS = 6).

Each configuration below gets its own QEMU; the expected values are written out from
the device properties, not read back from the device."""

import os
import struct

import pytest

import nvme
import qtest_machine
from qtest_machine import DevConfig, Machine

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

UNLIMITED = 0xFFFFFFFF
MB = 1 << 20

# (config, expected): every expected number follows from the properties by hand.
CONFIGS = {
    # 64 MiB of 4 MiB zones, 512-byte LBAs, no limits, ZASL from MDTS (7)
    "plain": (DevConfig(mode=3, size_mb=64, extra="zns_zone_size_mb=4"),
              dict(bs=512, nsze=131072, zsze=(8192, 1024), zcap=8192, nzones=16,
                   mar=UNLIMITED, mor=UNLIMITED, ozcs=0, zdes=0, zasl=None, mdts=7)),
    # 4096-byte LBAs, 3 MiB capacity, both limits, 128-byte extensions, RAZB, ZASL 5
    "lba4k": (DevConfig(mode=3, size_mb=64, lba_index=1, extra=(
        "zns_zone_size_mb=4,zns_zone_cap=3M,zns_max_open=3,zns_max_active=5,"
        "zns_zd_ext_size=128,zns_cross_zone_read=on,zns_zasl=5")),
              dict(bs=4096, nsze=16384, zsze=(8192, 1024), zcap=768, nzones=16,
                   mar=4, mor=2, ozcs=1, zdes=2, zasl=5, mdts=7)),
    # only an active limit: the open limit is the same (MOR = MAR)
    "active_only": (DevConfig(mode=3, size_mb=32, mdts=5, extra=(
        "zns_zone_size_mb=2,zns_max_active=4")),
                    dict(bs=512, nsze=65536, zsze=(4096, 512), zcap=4096, nzones=16,
                         mar=3, mor=3, ozcs=0, zdes=0, zasl=None, mdts=5)),
    # only an open limit
    "open_only": (DevConfig(mode=3, size_mb=32, extra="zns_zone_size_mb=8,zns_max_open=2"),
                  dict(bs=512, nsze=65536, zsze=(16384, 2048), zcap=16384, nzones=4,
                       mar=UNLIMITED, mor=1, ozcs=0, zdes=0, zasl=None, mdts=7)),
}


@pytest.fixture(scope="module", params=list(CONFIGS), ids=list(CONFIGS))
def machine(request, tmp_path_factory):
    if not os.path.exists(qtest_machine.QEMU) or not qtest_machine.qemu_has_device("femu"):
        pytest.skip("no QEMU with the femu device at %s" % qtest_machine.QEMU)
    m = Machine(CONFIGS[request.param][0], str(tmp_path_factory.mktemp("qtest")))
    m.expect = CONFIGS[request.param][1]
    yield m
    m.close()


@pytest.fixture
def exp(machine):
    return machine.expect


@pytest.fixture
def zctrl(ctrl):
    """The controller enabled with every I/O command set (CC.CSS = 6)."""
    ctrl.enable(css=nvme.CC_CSS_ALL)
    return ctrl


def zoned_io_ok(ctrl, exp):
    """Write two blocks at the start of the last zone, read them back, reset it."""
    sq = ctrl.sqs.get(1) or ctrl.create_io_queues(1, entries=64)
    zslba = (exp["nzones"] - 1) * exp["zsze"][exp["bs"] == 4096]
    assert ctrl.zone_send(sq, 1, zslba, nvme.ZSA_RESET).ok
    data = os.urandom(2 * exp["bs"])
    c = ctrl.write(sq, 1, zslba, data)
    assert c.ok, c
    c, back = ctrl.read(sq, 1, zslba, 2)
    assert c.ok and back == data, c
    assert ctrl.zone_send(sq, 1, zslba, nvme.ZSA_RESET).ok


def test_cap_css_has_io_command_sets(ctrl):
    css = ctrl.cap["css"]
    assert css & 1, "CAP.CSS bit 0 (NVM command set)"
    assert css & (1 << 6), "CAP.CSS bit 6 (one or more I/O command sets)"


def test_identify_namespace(zctrl, exp):
    ns = zctrl.id_ns(1)
    assert ns["nsze"] == exp["nsze"]
    assert ns["ncap"] == exp["nsze"]
    assert ns["block_size"] == exp["bs"]
    # both formats exist, so the zoned LBAFE of each can be checked
    assert ns["nlbaf"] >= 1
    assert [f["lbads"] for f in ns["lbafs"][:2]] == [9, 12]


def test_identify_namespace_zoned(zctrl, exp):
    c, data = zctrl.identify(0x05, nsid=1, csi=nvme.CSI_ZONED)
    assert c.ok, c
    z = nvme.parse_id_ns_zoned(data)
    assert z["zoc"] == 0
    assert z["ozcs"] == exp["ozcs"]
    assert z["mar"] == exp["mar"]
    assert z["mor"] == exp["mor"]
    for fmt, zsze in enumerate(exp["zsze"]):
        assert z["lbafe"][fmt]["zsze"] == zsze, "LBAFE%d" % fmt
        assert zsze & (zsze - 1) == 0, "zone size is a power of two"
        assert z["lbafe"][fmt]["zdes"] == exp["zdes"], "LBAFE%d" % fmt


def test_identify_controller_zoned(zctrl, exp):
    c, data = zctrl.identify(0x06, csi=nvme.CSI_ZONED)
    assert c.ok, c
    assert zctrl.id_ctrl()["mdts"] == exp["mdts"]
    if exp["zasl"] is None:
        # 0 defers to MDTS; MDTS itself states the same limit
        assert data[0] in (0, exp["mdts"])
    else:
        assert data[0] == exp["zasl"]
    assert data[1:] == bytes(4095)


def test_identify_controller_nvm(zctrl):
    c, data = zctrl.identify(0x06, csi=nvme.CSI_NVM)
    assert c.ok, c


def test_namespace_descriptor_csi(zctrl):
    c, data = zctrl.identify(0x03, nsid=1)
    assert c.ok, c
    assert nvme.parse_descriptors(data)[0x04] == bytes([nvme.CSI_ZONED])


def test_active_namespace_list_per_csi(zctrl):
    c, data = zctrl.identify(0x07, nsid=0, csi=nvme.CSI_ZONED)
    assert c.ok, c
    ids = struct.unpack("<1024I", data)
    assert ids[0] == 1 and ids[1] == 0
    c, data = zctrl.identify(0x02, nsid=0)
    assert c.ok, c
    assert struct.unpack_from("<2I", data) == (1, 0)


def test_io_command_set_vector(zctrl):
    c, data = zctrl.identify(0x1C)
    assert c.ok, c
    vec0 = struct.unpack_from("<Q", data)[0]
    assert vec0 == (1 << nvme.CSI_NVM) | (1 << nvme.CSI_ZONED)


def test_effects_log_zoned(zctrl):
    c, log = zctrl.get_log_page(nvme.LOG_CMD_EFFECTS, 4096, csi=nvme.CSI_ZONED)
    assert c.ok, c
    iocs = struct.unpack_from("<256I", log, 1024)
    for opc in (nvme.IO_ZONE_APPEND, nvme.IO_ZONE_MGMT_SEND, nvme.IO_ZONE_MGMT_RECV,
                nvme.IO_READ, nvme.IO_WRITE):
        assert iocs[opc] & 1, "opcode 0x%02x not marked supported" % opc


def test_report_shows_the_geometry(zctrl, exp):
    sq = zctrl.create_io_queues(1, entries=64)
    assert zctrl.zone_send(sq, 1, 0, nvme.ZSA_RESET, select_all=True).ok
    size = 64 + 64 * exp["nzones"]
    c, rep = zctrl.zone_report(sq, 1, size=size)
    assert c.ok, c
    assert rep["nr_zones"] == exp["nzones"]
    zsze = exp["zsze"][exp["bs"] == 4096]
    assert exp["nzones"] * zsze == exp["nsze"]
    for i, z in enumerate(rep["zones"]):
        assert (z["zt"], z["zs"], z["za"]) == (nvme.ZONE_TYPE_SEQ, nvme.ZS_EMPTY, 0)
        assert (z["zslba"], z["wp"], z["zcap"]) == (i * zsze, i * zsze, exp["zcap"])


# -- CC.CSS = 0: the zoned namespace is inactive -------------------------------

def test_nvm_only_host_sees_an_inactive_namespace(ctrl, exp):
    ctrl.enable(css=nvme.CC_CSS_NVM)
    c, data = ctrl.identify(0x00, nsid=1)
    assert c.ok, c
    assert data == bytes(4096), "Identify Namespace of an inactive NSID is zero filled"
    c, data = ctrl.identify(0x05, nsid=1, csi=nvme.CSI_ZONED)
    assert c.ok, c
    assert data == bytes(4096)
    c, data = ctrl.identify(0x07, nsid=0, csi=nvme.CSI_ZONED)
    assert c.ok, c
    assert data == bytes(4096), "no active zoned namespace"
    c, data = ctrl.identify(0x02, nsid=0)
    assert c.ok, c
    assert data == bytes(4096), "no active namespace at all"


def test_nvm_only_host_io_gets_invalid_namespace(ctrl, exp):
    ctrl.enable(css=nvme.CC_CSS_NVM)
    sq = ctrl.create_io_queues(1, entries=64)
    bs = exp["bs"]
    buf = ctrl.buffer(bs, fill=0x11)
    cmds = {
        "write": ctrl.rw_cmd(nvme.IO_WRITE, 1, 0, 1, prp1=buf),
        "read": ctrl.rw_cmd(nvme.IO_READ, 1, 0, 1, prp1=buf),
        "append": ctrl.rw_cmd(nvme.IO_ZONE_APPEND, 1, 0, 1, prp1=buf),
        "zone send": nvme.cmd(nvme.IO_ZONE_MGMT_SEND, nsid=1, cdw13=nvme.ZSA_OPEN),
        "zone recv": nvme.cmd(nvme.IO_ZONE_MGMT_RECV, nsid=1, prp1=buf, cdw12=15),
    }
    for what, sqe in cmds.items():
        c = ctrl.execute(sq, sqe)
        ok = [(nvme.SCT_GENERIC, nvme.SC_INVALID_NS)]
        if what not in ("write", "read"):
            # not an opcode of the NVM command set the host selected
            ok.append((nvme.SCT_GENERIC, nvme.SC_INVALID_OPCODE))
        assert (c.sct, c.sc) in ok, "%s: %r" % (what, c)
    # enabling every command set brings the namespace back
    ctrl.enable(css=nvme.CC_CSS_ALL)
    assert ctrl.id_ns(1)["nsze"] == exp["nsze"]
    zoned_io_ok(ctrl, exp)
