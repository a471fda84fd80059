"""Identify: controller, namespace, NSID lists, descriptors, CSI structures."""

import struct

import pytest

import nvme


def test_identify_controller(ctrl, machine):
    ic = ctrl.id_ctrl()
    assert ic["vid"] == machine.pci.vendor_id
    assert ic["ssvid"] == machine.pci.cfg_read16(0x2C)
    assert ic["sn"] == "qtest"
    assert ic["mn"] and ic["mn"].isprintable()
    assert ic["fr"] and ic["fr"].isprintable()
    if machine.cfg.mdts is not None:
        assert ic["mdts"] == machine.cfg.mdts
    assert ic["ver"] == 0x00010400
    assert ic["raw"][111] == 1, "CNTRLTYPE: I/O controller"
    assert ic["sgls"] & 0x3 in (1, 2), "SGLs supported for NVM commands"
    assert ic["oncs"] & (1 << 0), "Compare"
    assert ic["oncs"] & (1 << 2), "Dataset Management"
    assert ic["oncs"] & (1 << 3), "Write Zeroes"
    assert ic["oacs"] & (1 << 8), "Doorbell Buffer Config"
    assert ic["lpa"] & (1 << 1), "Commands Supported and Effects log"
    assert ic["sqes"] & 0xF == 6 and ic["sqes"] >> 4 >= 6
    assert ic["cqes"] & 0xF == 4 and ic["cqes"] >> 4 >= 4
    assert ic["nn"] >= machine.cfg.namespaces
    assert ic["subnqn"].startswith("nqn.")


def test_identify_into_two_pages(ctrl):
    """The 4 KiB structure at a page offset needs PRP2."""
    _, ref = ctrl.identify(1)
    buf = ctrl.buffer(4096, offset=0x800, fill=0xA5)
    c = ctrl.admin_cmd(nvme.cmd(nvme.ADM_IDENTIFY, prp1=buf, prp2=buf + 0x800,
                                cdw10=1))
    assert c.ok, c
    assert ctrl.qt.memread(buf, 4096) == ref


def test_identify_namespace(ctrl, machine):
    cfg = machine.cfg
    ns = ctrl.id_ns(1)
    blocks = (cfg.size_mb << 20) // cfg.namespaces // cfg.block_size
    assert ns["nsze"] == blocks
    assert ns["ncap"] == blocks
    assert ns["nuse"] <= ns["ncap"]
    fmts = {(f["lbads"], f["ms"]) for f in ns["lbafs"]}
    assert (9, 0) in fmts, "512-byte LBA format"
    assert (12, 0) in fmts, "4096-byte LBA format"
    cur = ns["lbafs"][ns["lbaf_index"]]
    assert 1 << cur["lbads"] == cfg.block_size and cur["ms"] == 0


def test_active_namespace_list(ctrl, machine):
    k = machine.cfg.namespaces
    c, d = ctrl.identify(2, nsid=0)
    ids = struct.unpack("<1024I", d)
    assert list(ids[:k]) == list(range(1, k + 1))
    assert not any(ids[k:])
    # Only NSIDs greater than the one given are listed.
    c, d = ctrl.identify(2, nsid=1)
    ids = struct.unpack("<1024I", d)
    assert list(ids[:k - 1]) == list(range(2, k + 1))
    assert not any(ids[k - 1:])


def test_namespace_identification_descriptors(ctrl):
    c, d = ctrl.identify(3, nsid=1)
    descs = nvme.parse_descriptors(d)
    lengths = {1: 8, 2: 16, 3: 16, 4: 1}
    for t, v in descs.items():
        assert t in lengths, "unknown descriptor type %d" % t
        assert len(v) == lengths[t]
    assert descs.get(4) == b"\x00", "CSI descriptor says NVM"
    ids = [v for t, v in descs.items() if t in (1, 2, 3)]
    assert ids and all(any(v) for v in ids), "a non-zero EUI64, NGUID or UUID"


def test_identify_nvm_specific_namespace(ctrl):
    c, d = ctrl.identify(5, nsid=1, csi=0)
    assert c.ok
    # LBSTM, PIC and the extended LBA formats: zero without PI or tags.
    assert not any(d[:268]), d[:268].hex()


def test_identify_nvm_specific_controller(ctrl):
    c, d = ctrl.identify(6, csi=0)
    assert c.ok


def test_identify_unknown_csi(ctrl):
    for cns in (5, 6):
        c, _ = ctrl.identify(cns, nsid=1 if cns == 5 else 0, csi=0x3F, check=False)
        assert c.is_(0, nvme.SC_INVALID_FIELD), c


@pytest.mark.parametrize("cns", [0x0E, 0x3F, 0xFF])
def test_invalid_cns(ctrl, cns):
    c, _ = ctrl.identify(cns, check=False)
    assert c.is_(0, nvme.SC_INVALID_FIELD), c
    assert c.dnr


def test_identify_namespace_invalid_nsid(ctrl):
    nn = ctrl.id_ctrl()["nn"]
    for nsid in (0, nn + 1):
        c, _ = ctrl.identify(0, nsid=nsid, check=False)
        assert c.is_(0, nvme.SC_INVALID_NS), (nsid, c)


def test_identify_inactive_nsid_is_zero(ctrl, machine):
    nn = ctrl.id_ctrl()["nn"]
    if nn <= machine.cfg.namespaces:
        pytest.skip("every valid NSID is active (NN=%d)" % nn)
    c, d = ctrl.identify(0, nsid=machine.cfg.namespaces + 1, check=False)
    assert c.ok and not any(d)
