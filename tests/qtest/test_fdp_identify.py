"""FDP's Identify and configuration counts (review 2026-11-28 #10): NNSS in the FDP
Configurations log is a count of the namespaces that may use the configuration (MAXPIDS is
the 0's based field beside it; QEMU and nvme-cli read NNSS as a count), and Identify CNS 19h
(Endurance Group List) answers what CTRATT.ENDGRPS and ENDGIDMAX announce: the number of
identifiers, then the 16-bit identifiers from CDW11.ENDGID up, in increasing order (the list
`nvme list-endgrp` prints). A controller without endurance groups refuses CNS 19h."""

import struct

import nvme
from qtest_machine import DevConfig, qtest_module

_fdp = qtest_module("test_fdp")
INVALID_FIELD, OwnMachine, fdp_config, u16, u32 = (
    _fdp.INVALID_FIELD, _fdp.OwnMachine, _fdp.fdp_config, _fdp.u16, _fdp.u32)
pytestmark = _fdp.pytestmark        # the same skips

CNS_ENDGRP_LIST = 0x19
CTRATT_ENDGRPS = 1 << 4
GEO = "nchs=2,luns_per_ch=2,pgs_per_blk=16,flash_type=1,op_pcent=25"


def endgrp_list(ctrl, endgid, cntid=0):
    """Identify CNS 19h from ENDGID: (completion, the IDs, the 4 KiB returned)."""
    buf = ctrl.buffer(4096, fill=0xA5)
    c = ctrl.admin_cmd(nvme.cmd(nvme.ADM_IDENTIFY, prp1=buf,
                                cdw10=CNS_ENDGRP_LIST | cntid << 16, cdw11=endgid))
    d = ctrl.qt.memread(buf, 4096)
    n = min(u16(d, 0), 2047) if c.ok else 0
    return c, list(struct.unpack_from("<%dH" % n, d, 2)), d


def check_group_list(ctrl, nsids):
    """Group 1 is the only one, and every FDP namespace's."""
    idc = ctrl.id_ctrl()["raw"]
    assert u32(idc, 96) & CTRATT_ENDGRPS, "CTRATT.ENDGRPS"
    assert u16(idc, 340) == 1, "ENDGIDMAX"
    for endgid in (0, 1):
        for cntid in (0, 7):        # CNTID is not a field of CNS 19h
            c, ids, d = endgrp_list(ctrl, endgid, cntid)
            assert c.ok, (endgid, c)
            assert ids == [1], (endgid, ids)
            assert d[4:] == bytes(4092), "past the list: zeroes"
    for endgid in (2, 0xFFFF):
        c, ids, d = endgrp_list(ctrl, endgid)
        assert c.ok and ids == [] and d == bytes(4096), (endgid, c, ids)
    for nsid in nsids:
        assert u16(ctrl.identify(0, nsid=nsid)[1], 102) == 1, "ENDGID of namespace %d" % nsid


class TestOneNamespace(OwnMachine):
    DEV = DevConfig(mode=4, size_mb=16, lba_index=1, extra=GEO + ",fdp_nrg=2")

    def test_nnss_counts_the_namespace(self, ctrl):
        cfg = fdp_config(ctrl)
        assert cfg["nnss"] == 1, "NNSS: one namespace, a count: %d" % cfg["nnss"]
        assert cfg["maxpids"] == cfg["nruh"] - 1, "MAXPIDS is 0's based"
        assert cfg["nnss"] <= ctrl.id_ctrl()["nn"]

    def test_endurance_group_list(self, ctrl):
        check_group_list(ctrl, [1])


class TestMixedKinds(OwnMachine):
    """Two FDP namespaces and two blackbox ones: two namespaces use the configuration."""
    DEV = DevConfig(mode=4, size_mb=32, namespaces=4, lba_index=1, extra=(
        "ns_types=fdp:fdp:blackbox:blackbox,ns_sizes_mb=8:8:8:8," + GEO))

    def test_nnss_counts_the_fdp_namespaces(self, ctrl):
        assert ctrl.id_ctrl()["nn"] == 4
        assert fdp_config(ctrl)["nnss"] == 2

    def test_endurance_group_list(self, ctrl):
        check_group_list(ctrl, [1, 2])
        for nsid in (3, 4):
            assert u16(ctrl.identify(0, nsid=nsid)[1], 102) == 0, "blackbox: no group"


class TestNoEnduranceGroups(OwnMachine):
    DEV = DevConfig(mode=1, size_mb=16, lba_index=1, extra=GEO)

    def test_endurance_group_list_refused(self, ctrl):
        assert not u32(ctrl.id_ctrl()["raw"], 96) & CTRATT_ENDGRPS
        c, _, _ = endgrp_list(ctrl, 0)
        assert (c.sct, c.sc) == INVALID_FIELD and c.dnr, c
