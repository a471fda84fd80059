"""A conventional (blackbox) namespace 1 next to a zoned namespace 2 on one controller:
the per-CSI lists and descriptors tell them apart, only the zoned one depends on
CC.CSS, and their data stay apart although they share one flash."""

import os
import struct

import pytest

import nvme
import qtest_machine
from nvme import SCT_GENERIC
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's zns mode")

DEV = DevConfig(mode=1, size_mb=32, namespaces=2, extra=(
    "ns_types=blackbox:zns,ns_sizes_mb=16:16,zns_zone_size_mb=1,"
    "nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=50"))
BS = 512
ZSZE = (1 << 20) // BS


def nslist(ctrl, cns, csi=0):
    c, data = ctrl.identify(cns, nsid=0, csi=csi)
    assert c.ok, c
    ids = struct.unpack("<1024I", data)
    return list(ids[:ids.index(0)])


def test_lists_per_command_set(ctrl):
    ctrl.enable(css=nvme.CC_CSS_ALL)
    assert nslist(ctrl, 0x02) == [1, 2]
    assert nslist(ctrl, 0x07, nvme.CSI_ZONED) == [2]
    assert 1 in nslist(ctrl, 0x07, nvme.CSI_NVM)
    for nsid, csi in ((1, nvme.CSI_NVM), (2, nvme.CSI_ZONED)):
        c, data = ctrl.identify(0x03, nsid=nsid)
        assert c.ok, c
        assert nvme.parse_descriptors(data)[0x04] == bytes([csi])


def test_nvm_only_host_keeps_the_conventional_namespace(ctrl, io_ok):
    ctrl.enable(css=nvme.CC_CSS_NVM)
    assert nslist(ctrl, 0x02) == [1]
    assert ctrl.id_ns(1)["nsze"] == (16 << 20) // BS
    assert ctrl.identify(0x00, nsid=2)[1] == bytes(4096)
    sq = ctrl.create_io_queues(1, entries=64)
    c = ctrl.execute(sq, ctrl.rw_cmd(nvme.IO_WRITE, 2, 0, 1, prp1=ctrl.buffer(BS)))
    assert (c.sct, c.sc) == (SCT_GENERIC, nvme.SC_INVALID_NS), c
    io_ok(ctrl, sq, nsid=1)


def test_data_stay_apart(ctrl):
    ctrl.enable(css=nvme.CC_CSS_ALL)
    sq = ctrl.create_io_queues(1, entries=64)
    assert ctrl.zone_send(sq, 2, 0, nvme.ZSA_RESET, select_all=True).ok
    conv = {lba: os.urandom(8 * BS) for lba in (0, ZSZE, (16 << 20) // BS - 8)}
    zoned = {}
    for lba, data in conv.items():
        assert ctrl.write(sq, 1, lba, data).ok
    for i in (0, 1, 15):
        zoned[i * ZSZE] = os.urandom(8 * BS)
        c = ctrl.zone_append(sq, 2, i * ZSZE, zoned[i * ZSZE])
        assert c.ok and nvme.append_lba(c) == i * ZSZE, c
    for nsid, blobs in ((1, conv), (2, zoned)):
        for lba, data in blobs.items():
            c, back = ctrl.read(sq, nsid, lba, 8)
            assert c.ok and back == data, "ns %d lba %d" % (nsid, lba)
    # the conventional namespace has no write pointer to respect
    assert ctrl.write(sq, 1, 5, os.urandom(BS)).ok
    assert ctrl.zone(sq, 2, 0)["wp"] == 8
    assert ctrl.zone_send(sq, 2, 0, nvme.ZSA_RESET, select_all=True).ok


def test_zone_commands_to_the_conventional_namespace(ctrl, io_ok):
    """Zone Management Send/Receive and Zone Append are not commands of namespace 1's
    command set: Invalid Command Opcode, and neither namespace changes."""
    ctrl.enable(css=nvme.CC_CSS_ALL)
    sq = ctrl.create_io_queues(1, entries=64)
    assert ctrl.zone_send(sq, 2, 0, nvme.ZSA_RESET, select_all=True).ok
    conv = os.urandom(8 * BS)
    assert ctrl.write(sq, 1, 0, conv).ok
    zoned = os.urandom(2 * BS)
    assert ctrl.write(sq, 2, 0, zoned).ok
    invalid_opcode = (SCT_GENERIC, nvme.SC_INVALID_OPCODE)
    for action in (nvme.ZSA_RESET, nvme.ZSA_OPEN, nvme.ZSA_FINISH):
        c = ctrl.zone_send(sq, 1, 0, action)
        assert c.code == invalid_opcode, (action, c)
    c = ctrl.zone_send(sq, 1, 0, nvme.ZSA_RESET, select_all=True)
    assert c.code == invalid_opcode, c
    c, data = ctrl.zone_recv(sq, 1, 0, 4096)
    assert c.code == invalid_opcode, c
    assert data == b"\xA5" * 4096, "the report buffer was written"
    c = ctrl.zone_append(sq, 1, 0, os.urandom(BS))
    assert c.code == invalid_opcode, c
    c, back = ctrl.read(sq, 1, 0, 8)
    assert c.ok and back == conv
    z = ctrl.zone(sq, 2, 0)
    assert (z["zs"], z["wp"]) == (nvme.ZS_IMPLICIT_OPEN, 2), z
    c, back = ctrl.read(sq, 2, 0, 2)
    assert c.ok and back == zoned
    assert ctrl.zone_send(sq, 2, 0, nvme.ZSA_RESET, select_all=True).ok
    io_ok(ctrl, sq, nsid=1)
