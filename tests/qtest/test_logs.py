"""Get Log Page: error information, SMART, firmware slot, command effects."""

import struct

import pytest

import nvme
from nvme import cmd

ADMIN_MANDATORY = [nvme.ADM_DELETE_SQ, nvme.ADM_CREATE_SQ, nvme.ADM_GET_LOG_PAGE,
                   nvme.ADM_DELETE_CQ, nvme.ADM_CREATE_CQ, nvme.ADM_IDENTIFY,
                   nvme.ADM_ABORT, nvme.ADM_SET_FEATURES, nvme.ADM_GET_FEATURES,
                   nvme.ADM_ASYNC_EVENT, nvme.ADM_DBBUF_CONFIG]
IO_SUPPORTED = [nvme.IO_FLUSH, nvme.IO_WRITE, nvme.IO_READ, nvme.IO_COMPARE,
                nvme.IO_WRITE_ZEROES, nvme.IO_DSM]
IO_CHANGES_DATA = [nvme.IO_WRITE, nvme.IO_WRITE_ZEROES, nvme.IO_DSM]


def error_entries(ctrl):
    elpe = ctrl.id_ctrl()["elpe"]
    c, d = ctrl.get_log_page(nvme.LOG_ERROR, 64 * (elpe + 1))
    assert c.ok, c
    out = []
    for off in range(0, len(d), 64):
        count, sqid, cid, status, loc, lba, nsid = struct.unpack_from("<QHHHHQI", d, off)
        out.append({"count": count, "sqid": sqid, "cid": cid, "status": status >> 1,
                    "loc": loc, "lba": lba, "nsid": nsid, "rest": d[off + 28:off + 64]})
    return out


def test_error_information_log(ctrl, io_ok):
    """Each failed command adds an entry, newest first: its error count, queue, command,
    status, LBA and namespace."""
    elpe = ctrl.id_ctrl()["elpe"]
    sq = ctrl.create_io_queues(1)
    nsze = ctrl.id_ns(1)["nsze"]
    first = ctrl.read(sq, 1, nsze + 5, 1)[0]
    assert first.code == (0, nvme.SC_LBA_RANGE), first
    second = ctrl.execute(sq, cmd(0x7E, nsid=1))
    assert second.code == (0, nvme.SC_INVALID_OPCODE), second
    log = error_entries(ctrl)
    assert len(log) == elpe + 1
    newest = log[0]
    assert newest["count"] >= 2
    assert (newest["sqid"], newest["cid"], newest["status"], newest["nsid"]) == (
        1, second.cid, second.status, 1)
    assert newest["status"] & 0x4000, "DNR is set in the logged status"
    assert newest["loc"] == 0xFFFF, "no parameter location given"
    if elpe:
        older = log[1]
        assert older["count"] == newest["count"] - 1
        assert (older["sqid"], older["cid"], older["status"], older["lba"],
                older["nsid"], older["loc"]) == (1, first.cid, first.status, nsze + 5, 1,
                                                 0xFFFF)
    # SMART counts the entries ever logged
    c, smart = ctrl.get_log_page(nvme.LOG_SMART, 512)
    assert c.ok and struct.unpack_from("<Q", smart, 176)[0] == newest["count"]
    # a successful command adds nothing
    io_ok(ctrl, sq)
    assert error_entries(ctrl)[0]["count"] == newest["count"]


def test_smart_log(ctrl):
    c, d = ctrl.get_log_page(nvme.LOG_SMART, 512)
    assert c.ok, c
    temp = struct.unpack_from("<H", d, 1)[0]
    assert 200 < temp < 400, "composite temperature in Kelvin: %d" % temp
    assert d[3] <= 100, "available spare is a percentage"


def test_firmware_slot_log(ctrl):
    ic = ctrl.id_ctrl()
    c, d = ctrl.get_log_page(nvme.LOG_FW_SLOT, 512)
    assert c.ok, c
    slot = d[0] & 7
    assert 1 <= slot <= 7
    assert d[8 + 8 * (slot - 1):16 + 8 * (slot - 1)] == ic["fr_raw"]


def test_commands_supported_and_effects(ctrl):
    c, d = ctrl.get_log_page(nvme.LOG_CMD_EFFECTS, 4096)
    assert c.ok, c
    acs = struct.unpack_from("<256I", d, 0)
    iocs = struct.unpack_from("<256I", d, 1024)
    for opc in ADMIN_MANDATORY:
        assert acs[opc] & 1, "admin opcode 0x%02x not reported supported" % opc
    for opc in IO_SUPPORTED:
        assert iocs[opc] & 1, "I/O opcode 0x%02x not reported supported" % opc
    for opc in IO_CHANGES_DATA:
        assert iocs[opc] & 2, "I/O opcode 0x%02x must set LBCC" % opc
    assert not iocs[0x7E] & 1


@pytest.mark.parametrize("lid", [0x3F, 0x6F, 0xBF])
def test_invalid_log_page(ctrl, lid, io_ok):
    c, _ = ctrl.get_log_page(lid, 512)
    assert c.is_(1, nvme.SC_INVALID_LOG_PAGE), c
    io_ok(ctrl)


def test_log_page_offset(ctrl):
    _, whole = ctrl.get_log_page(nvme.LOG_CMD_EFFECTS, 4096)
    c, part = ctrl.get_log_page(nvme.LOG_CMD_EFFECTS, 1024, offset=1024)
    assert c.ok, c
    assert part == whole[1024:2048]
