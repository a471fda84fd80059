"""Flexible Data Placement (femu_mode=4, ns_types=fdp:...), against /work/fdp-spec.md and
the NVMe base specification: Identify, Features 1Dh/1Eh, log pages 20h-23h, the FDP
events, I/O Management Receive/Send, placed writes, several FDP namespaces sharing
handles, FDP beside zoned and blackbox namespaces, the state across a restart and a kill,
and the properties refused at start.

Every drive here has 4 KiB LBAs (lba_index=1) and 4 KiB flash pages, so one LBA is one
page and RUAMW counts pages. The module's drive (DEV) has 4 chips in 2 reclaim groups of 2
chips, 16-page blocks, one plane: an RU is 16 * 2 = 32 pages (RUNS 128 KiB); handles 0-3
are Initially, Persistently, Initially, Persistently Isolated. Tests share that drive, so
each uses LBAs of its own and looks at differences; the `fq` fixture clears both event
lists after the controller reset that starts every test (the reset itself posts 02h events
for RUs the previous test left partly written).

Statistics come from QMP (`qom-get` of `stats`; names with '-' or '_', and with an `nsN_`
prefix on a device with several media)."""

import os
import random
import re
import struct
import subprocess
import time

import pytest

import nvme
import qtest_machine
from killlib import FileDrive, kill_after_acks, launch_message
from nvme import cmd
from qtest import QEMULaunchError, QTest
from qtest_machine import DevConfig, Machine


def _fdp_in_binary():
    if not os.path.exists(qtest_machine.QEMU):
        return False
    try:
        out = subprocess.run([qtest_machine.QEMU, "-device", "femu,help"],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "fdp_ruh_types" in out


pytestmark = [
    pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's fdp namespaces"),
    pytest.mark.skipif(not _fdp_in_binary(),
                       reason="%s has no fdp properties" % qtest_machine.QEMU),
]

# -- NVMe constants -------------------------------------------------------------------

FEAT_FDP = 0x1D
FEAT_FDP_EVENTS = 0x1E
LOG_FDP_CONFIGS = 0x20
LOG_RUH_USAGE = 0x21
LOG_FDP_STATS = 0x22
LOG_FDP_EVENTS = 0x23
IO_MGMT_RECV = 0x12
IO_MGMT_SEND = 0x1D
ADM_DIRECTIVE_SEND = 0x19
ADM_DIRECTIVE_RECV = 0x1A
MO_RUH_STATUS = 0x01
MO_RUH_UPDATE = 0x01
DTYPE_STREAMS = 1
DTYPE_PLACEMENT = 2

SC_CMD_SEQ_ERROR = 0x0C
SC_FDP_DISABLED = 0x29
INVALID_FIELD = (nvme.SCT_GENERIC, nvme.SC_INVALID_FIELD)
CMD_SEQ_ERROR = (nvme.SCT_GENERIC, SC_CMD_SEQ_ERROR)
FDP_DISABLED = (nvme.SCT_GENERIC, SC_FDP_DISABLED)

# event types, host (LSP bit 0 = 0) and controller (1)
EV_RU_NOT_FULLY_WRITTEN = 0x00
EV_RU_TIME_LIMIT = 0x01
EV_CTRL_RESET_MODIFIED = 0x02
EV_INVALID_PID = 0x03
EV_MEDIA_REALLOCATED = 0x80
EV_IMPLICITLY_MODIFIED = 0x81
SUPPORTED_EVENTS = [0x00, 0x01, 0x02, 0x03, 0x80, 0x81]
EVF_PIV, EVF_NSIDV, EVF_LV = 1 << 0, 1 << 1, 1 << 2
# Get Log Page 23h, LSP bit 0 (CDW10 bit 8), FDP Event Type: 1 = host events, 0 = controller
# events (base specification 2.1, FDP Events log page; libnvme's nvme_get_log_fdp_events and
# QEMU's nvme agree). /work/fdp-spec.md says the opposite: see test_event_type_bit.
LSP_HOST_EVENTS, LSP_CONTROLLER_EVENTS = 1, 0
MAX_EVENTS = 63
EVENT_LOG_BYTES = 64 + MAX_EVENTS * 64
RUHT_II, RUHT_PI = 1, 2

PAGE = 4096

# -- the module's drive ----------------------------------------------------------------

GEO = "nchs=2,luns_per_ch=2,pgs_per_blk=16,flash_type=1,op_pcent=25"
CHIPS = 4
PGS_PER_BLK = 16
NRG = 2
RGIF = 1
RUH_TYPES = [RUHT_II, RUHT_PI, RUHT_II, RUHT_PI]
NRUH = len(RUH_TYPES)
RU_PAGES = PGS_PER_BLK * (CHIPS // NRG)      # 1 plane
RUNS = RU_PAGES * PAGE
ERUTL_S = 3600
DEV = DevConfig(mode=4, size_mb=16, lba_index=1, queues=4, extra=(
    GEO + ",fdp_nrg=%d,fdp_ruh_types=ii:pi:ii:pi,fdp_erutl_s=%d" % (NRG, ERUTL_S)))


# -- helpers ---------------------------------------------------------------------------

def pid_of(rg, ph, rgif=RGIF):
    """Placement identifier: RGID in the top RGIF bits, the PHNDL index below."""
    return (rg << (16 - rgif)) | ph if rgif else ph


def status_is(c, code, dnr=True):
    return c.code == code and c.dnr == dnr


def get_log(ctrl, lid, size, lsi=1, lsp=0, rae=False, offset=0, nsid=0):
    """Get Log Page with LSI (CDW11[31:16]): (cpl, bytes); the buffer starts as 0xA5."""
    buf = ctrl.buffer(size, fill=0xA5)
    p1, p2 = ctrl.prps(buf, size)
    numd = size // 4 - 1
    c = ctrl.admin_cmd(cmd(nvme.ADM_GET_LOG_PAGE, nsid=nsid, prp1=p1, prp2=p2,
                           cdw10=lid | (lsp & 0x7F) << 8 | (1 << 15 if rae else 0)
                           | (numd & 0xFFFF) << 16,
                           cdw11=(numd >> 16) | (lsi & 0xFFFF) << 16,
                           cdw12=offset & 0xFFFFFFFF, cdw13=offset >> 32))
    return c, ctrl.qt.memread(buf, size)


def checked_log(ctrl, lid, size, **kw):
    c, d = get_log(ctrl, lid, size, **kw)
    assert c.ok, (hex(lid), c)
    return d


def u16(d, o):
    return struct.unpack_from("<H", d, o)[0]


def u32(d, o):
    return struct.unpack_from("<I", d, o)[0]


def u64(d, o):
    return struct.unpack_from("<Q", d, o)[0]


def u128(d, o):
    return int.from_bytes(d[o:o + 16], "little")


def parse_configs(d):
    numfdpc, ver, size = struct.unpack_from("<HBxI", d, 0)
    o = 16
    (dsze, fdpa, vss, nrg, nruh, maxpids, nnss, runs,
     erutl) = struct.unpack_from("<HBBIHHIQI", d, o)
    ruhs = [bytes(d[o + 64 + 4 * i:o + 68 + 4 * i]) for i in range(nruh)]
    return {"numfdpc": numfdpc, "ver": ver, "hdr_rsvd3": d[3], "size": size,
            "hdr_rsvd": bytes(d[8:16]), "dsze": dsze, "fdpa": fdpa, "vss": vss, "nrg": nrg,
            "nruh": nruh, "maxpids": maxpids, "nnss": nnss, "runs": runs, "erutl": erutl,
            "desc_rsvd": bytes(d[o + 28:o + 64]), "ruht": [r[0] for r in ruhs],
            "ruh_rsvd": [r[1:] for r in ruhs]}


def fdp_config(ctrl):
    return parse_configs(checked_log(ctrl, LOG_FDP_CONFIGS, 4096))


def parse_usage(d):
    n = u16(d, 0)
    return n, [d[8 + 8 * i] for i in range(n)], bytes(d[2:8])


def fdp_stats(ctrl):
    d = checked_log(ctrl, LOG_FDP_STATS, 64)
    assert d[48:64] == bytes(16), "reserved bytes of the statistics log"
    return {"hbmw": u128(d, 0), "mbmw": u128(d, 16), "mbe": u128(d, 32)}


def parse_events(d):
    n = u32(d, 0)
    out = []
    for i in range(min(n, (len(d) - 64) // 64)):
        o = 64 + 64 * i
        ts = bytes(d[o + 16:o + 32])
        out.append({"type": d[o], "flags": d[o + 1], "pid": u16(d, o + 2),
                    "timestamp": u64(d, o + 4), "nsid": u32(d, o + 12), "ts": ts,
                    "rgid": u16(d, o + 32), "ruhid": d[o + 34],
                    "rsvd": bytes(d[o + 35:o + 40]),
                    # Media Reallocated
                    "lbav": ts[0] & 1, "nlbam": u16(ts, 2), "lba": u64(ts, 4)})
    return n, out


def check_event(e, controller):
    """What holds for every FDP event (base specification, FDP Events log page)."""
    if controller:
        assert e["type"] >= 0x80, "a host event in the controller list: %r" % e
    else:
        assert e["type"] < 0x80, "a controller event in the host list: %r" % e
    assert e["flags"] & ~(EVF_PIV | EVF_NSIDV | EVF_LV) == 0, e
    if not e["flags"] & EVF_NSIDV:
        assert e["nsid"] == 0, "NSID must be 0 when NSIDV is 0: %r" % e
    if not e["flags"] & EVF_LV:
        assert e["rgid"] == 0 and e["ruhid"] == 0, \
            "RGID and RUHID must be 0 when LV is 0: %r" % e
    if not e["flags"] & EVF_PIV:
        assert e["pid"] == 0, "PID is reserved when PIV is 0: %r" % e
    assert e["rsvd"] == bytes(5), e
    if e["type"] != EV_MEDIA_REALLOCATED:
        assert e["ts"] == bytes(16), "type specific field of an event that has none: %r" % e


def events(ctrl, controller=False, rae=True, size=EVENT_LOG_BYTES):
    """The host (or controller) FDP events, oldest first; rae=False clears the ones
    returned."""
    c, d = get_log(ctrl, LOG_FDP_EVENTS, size,
                   lsp=LSP_CONTROLLER_EVENTS if controller else LSP_HOST_EVENTS, rae=rae)
    assert c.ok, c
    n, evs = parse_events(d)
    assert n <= MAX_EVENTS, n
    for e in evs:
        check_event(e, controller)
    return evs


def drain_events(ctrl):
    """Both lists emptied (RAE=0 reads of the whole page), whatever they held."""
    for lsp in (LSP_HOST_EVENTS, LSP_CONTROLLER_EVENTS):
        for rae in (False, True):
            c, d = get_log(ctrl, LOG_FDP_EVENTS, EVENT_LOG_BYTES, lsp=lsp, rae=rae)
            assert c.ok, c
        assert u32(d, 0) == 0, "events left after an RAE=0 read of the whole page"


def feat_get(ctrl, fid, cdw11=0, nsid=0, size=0):
    buf = ctrl.buffer(4096, fill=0xA5)
    c = ctrl.admin_cmd(cmd(nvme.ADM_GET_FEATURES, nsid=nsid, prp1=buf, cdw10=fid,
                           cdw11=cdw11))
    return c, ctrl.qt.memread(buf, size) if size else b""


def feat_set(ctrl, fid, cdw11=0, cdw12=0, nsid=0, data=None):
    buf = ctrl.buffer(4096, data) if data else 0
    return ctrl.admin_cmd(cmd(nvme.ADM_SET_FEATURES, nsid=nsid, prp1=buf, cdw10=fid,
                              cdw11=cdw11, cdw12=cdw12))


def event_config(ctrl, nsid, ph, noet=255):
    """Get Features FDP Events: {event type: enabled} for the handle, and DW0."""
    c, d = feat_get(ctrl, FEAT_FDP_EVENTS, ph | noet << 16, nsid=nsid, size=2 * noet)
    assert c.ok, c
    return c.dw0, [(d[2 * i], d[2 * i + 1]) for i in range(min(c.dw0, noet))]


def set_events(ctrl, nsid, ph, types, enable):
    return feat_set(ctrl, FEAT_FDP_EVENTS, ph | len(types) << 16, 1 if enable else 0,
                    nsid=nsid, data=bytes(types))


def write_cmd(ctrl, nsid, slba, data, dtype=0, dspec=0):
    bs = ctrl.block_size(nsid)
    assert data and len(data) % bs == 0
    addr = ctrl.buffer(len(data), data)
    p1, p2 = ctrl.prps(addr, len(data))
    return cmd(nvme.IO_WRITE, nsid=nsid, prp1=p1, prp2=p2, cdw10=slba & 0xFFFFFFFF,
               cdw11=slba >> 32, cdw12=(len(data) // bs - 1) | (dtype & 0xF) << 20,
               cdw13=(dspec & 0xFFFF) << 16)


def write(ctrl, sq, nsid, slba, data, pid=None, dtype=None):
    """A Write; with pid, Data Placement (DTYPE 2) to that placement identifier."""
    if dtype is None:
        dtype = DTYPE_PLACEMENT if pid is not None else 0
    return ctrl.execute(sq, write_cmd(ctrl, nsid, slba, data, dtype, pid or 0))


def put(ctrl, sq, nsid, slba, n, pid=None, seed=None):
    """n pages of fresh data at slba (placed by pid); returns the data."""
    data = (random.Random(seed).randbytes(n * PAGE) if seed is not None
            else os.urandom(n * PAGE))
    c = write(ctrl, sq, nsid, slba, data, pid)
    assert c.ok, c
    return data


def read_back(ctrl, sq, nsid, slba, n):
    c, data = ctrl.read(sq, nsid, slba, n)
    assert c.ok, c
    return data


def ruh_status_raw(ctrl, sq, nsid, size=4096, numd=None, mo=MO_RUH_STATUS, mos=0):
    buf = ctrl.buffer(size, fill=0xA5)
    p1, p2 = ctrl.prps(buf, size)
    numd = size // 4 - 1 if numd is None else numd
    c = ctrl.execute(sq, cmd(IO_MGMT_RECV, nsid=nsid, prp1=p1, prp2=p2,
                             cdw10=(mo & 0xFF) | mos << 16, cdw11=numd))
    return c, ctrl.qt.memread(buf, size)


def parse_ruh_status(d):
    n = u16(d, 14)
    descs = []
    for i in range(min(n, (len(d) - 16) // 32)):
        o = 16 + 32 * i
        pid, ruhid, earutr, ruamw = struct.unpack_from("<HHIQ", d, o)
        descs.append({"pid": pid, "ruhid": ruhid, "earutr": earutr, "ruamw": ruamw,
                      "rsvd": bytes(d[o + 16:o + 32])})
    return {"nruhsd": n, "hdr_rsvd": bytes(d[:14]), "descs": descs}


def ruh_status(ctrl, sq, nsid=1):
    c, d = ruh_status_raw(ctrl, sq, nsid)
    assert c.ok, c
    return parse_ruh_status(d)


def ruamw(ctrl, sq, nsid=1):
    """{pid: RUAMW} of the namespace's handles."""
    return {x["pid"]: x["ruamw"] for x in ruh_status(ctrl, sq, nsid)["descs"]}


def ruh_update(ctrl, sq, nsid, pids, mo=MO_RUH_UPDATE, mos=None):
    data = struct.pack("<%dH" % len(pids), *pids)
    buf = ctrl.buffer(max(len(data), 4), data)
    mos = len(pids) - 1 if mos is None else mos
    return ctrl.execute(sq, cmd(IO_MGMT_SEND, nsid=nsid, prp1=buf,
                                cdw10=(mo & 0xFF) | (mos & 0xFFFF) << 16))


def qstats(machine):
    r = machine.qmp("qom-get", path="/machine/peripheral/femu0", property="stats")
    assert "return" in r, r
    return {k.replace("-", "_"): v for k, v in r["return"].items()}


def stat(stats, name):
    """A counter by its name in the contract, with or without a namespace prefix."""
    keys = [k for k in stats if k == name or re.fullmatch(r"ns\d+_" + re.escape(name), k)]
    assert len(keys) == 1, "statistic %r: %s" % (name, sorted(k for k in stats
                                                              if name in k) or "absent")
    return stats[keys[0]]


def ruh_pages(machine, nruh=NRUH):
    s = qstats(machine)
    return [stat(s, "ruh%d_host_pages_written" % h) for h in range(nruh)]


def stable_snapshot(ctrl, machine):
    """Statistics log and QMP counters of one moment: background GC may run, so read
    log, QMP, log until both logs agree."""
    for _ in range(50):
        a = fdp_stats(ctrl)
        q = qstats(machine)
        if fdp_stats(ctrl) == a:
            return a, q
        time.sleep(0.05)
    pytest.fail("the FDP statistics never stopped changing")


class OwnMachine:
    """One QEMU per test class, with the class's DEV."""

    @pytest.fixture(scope="class")
    @classmethod
    def machine(cls, tmp_path_factory):
        m = qtest_machine.start_machine(cls.DEV, str(tmp_path_factory.mktemp("qtest")))
        yield m
        m.close()


@pytest.fixture
def fq(ctrl):
    """I/O queue pair 1 on the freshly reset controller, both event lists empty."""
    sq = ctrl.create_io_queues(1, entries=64)
    drain_events(ctrl)
    return sq


# ======================================================================================
# Identify
# ======================================================================================

def test_identify_controller(ctrl):
    idc = ctrl.id_ctrl()
    raw = idc["raw"]
    ctratt = u32(raw, 96)
    assert ctratt & (1 << 4), "CTRATT bit 4 (Endurance Groups): 0x%x" % ctratt
    assert ctratt & (1 << 19), "CTRATT bit 19 (Flexible Data Placement): 0x%x" % ctratt
    assert u16(raw, 340) == 1, "ENDGIDMAX"
    assert idc["oacs"] & (1 << 5), "OACS bit 5 (Directives): 0x%x" % idc["oacs"]
    assert idc["lpa"] & (1 << 1), "LPA bit 1 (Commands Supported and Effects)"


def test_identify_namespace_endgid(ctrl):
    c, d = ctrl.identify(0, nsid=1)
    assert c.ok, c
    assert u16(d, 102) == 1, "ENDGID of an FDP namespace"


def test_commands_supported_and_effects(ctrl):
    """The effects log lists I/O Management Receive/Send; OACS bit 5 means the
    controller supports Directive Send and Directive Receive (base spec, OACS)."""
    c, d = ctrl.get_log_page(nvme.LOG_CMD_EFFECTS, 4096)
    assert c.ok, c
    acs = struct.unpack_from("<256I", d, 0)
    iocs = struct.unpack_from("<256I", d, 1024)
    assert iocs[IO_MGMT_RECV] & 1, "I/O Management Receive not reported supported"
    assert iocs[IO_MGMT_SEND] & 1, "I/O Management Send not reported supported"
    for opc in (ADM_DIRECTIVE_SEND, ADM_DIRECTIVE_RECV):
        assert acs[opc] & 1, "OACS says Directives, admin 0x%02x is not supported" % opc


def directive_receive(ctrl, nsid, doper=1, dtype=0, size=4096):
    buf = ctrl.buffer(size, fill=0xA5)
    c = ctrl.admin_cmd(cmd(ADM_DIRECTIVE_RECV, nsid=nsid, prp1=buf, cdw10=size // 4 - 1,
                           cdw11=doper | dtype << 8))
    return c, ctrl.qt.memread(buf, size)


def test_directive_identify_return_parameters(ctrl):
    """OACS bit 5: the Identify directive's Return Parameters (base specification 8.1.9.2):
    Identify and Data Placement supported and enabled (FDP is), Data Placement kept across
    resets; the Identify directive's own "persistent" bit shall be 0."""
    c, d = directive_receive(ctrl, 1)
    assert c.ok, c
    assert d[0] & 0x07 == 0x05, "supported: Identify and Data Placement, not Streams"
    assert d[32] & 0x07 == 0x05, "enabled: Identify and Data Placement"
    assert d[64] & 0x07 == 0x04, "persistent across resets: Data Placement only (IDIRCLR 0)"
    assert d[96:] == bytes(4096 - 96) or set(d[96:]) == {0xA5}


@pytest.mark.parametrize("nsid,dtype,code", [
    (0xFFFFFFFF, 0, INVALID_FIELD),     # Return Parameters of the broadcast NSID
    (1, DTYPE_PLACEMENT, INVALID_FIELD),  # Data Placement has no directive operations
], ids=["broadcast", "placement"])
def test_directive_receive_refused(ctrl, nsid, dtype, code, io_ok):
    c, _ = directive_receive(ctrl, nsid, dtype=dtype)
    assert status_is(c, code), c
    io_ok(ctrl)


# ======================================================================================
# Features 1Dh (Flexible Data Placement) and 1Eh (FDP Events)
# ======================================================================================

def test_fdp_feature_get(ctrl):
    c, _ = feat_get(ctrl, FEAT_FDP, 1)
    assert c.ok, c
    assert c.dw0 & 1 == 1, "FDPE: 0x%x" % c.dw0
    assert (c.dw0 >> 8) & 0xFF == 0, "FDPCIDX: 0x%x" % c.dw0


@pytest.mark.parametrize("endgid", [0, 2, 0xFFFF])
def test_fdp_feature_get_other_endurance_group(ctrl, endgid, io_ok):
    c, _ = feat_get(ctrl, FEAT_FDP, endgid)
    assert status_is(c, INVALID_FIELD), c
    io_ok(ctrl)


@pytest.mark.parametrize("cdw11,cdw12,code", [
    (1, 0, CMD_SEQ_ERROR),              # a change while namespaces exist in the group
    (2, 1, INVALID_FIELD),              # ENDGID checked first
    (0, 1, INVALID_FIELD),
    (1, 1 | 1 << 8, INVALID_FIELD),     # FDPCIDX 1: there is one configuration
    (1, 0xFF << 8, INVALID_FIELD),
], ids=["disable", "endgid2", "endgid0", "fdpcidx1", "fdpcidx255"])
def test_fdp_feature_set_refused(ctrl, cdw11, cdw12, code, io_ok):
    c = feat_set(ctrl, FEAT_FDP, cdw11, cdw12)
    assert status_is(c, code), c
    g, _ = feat_get(ctrl, FEAT_FDP, 1)
    assert g.ok and g.dw0 & 1 == 1, g
    io_ok(ctrl)


@pytest.mark.parametrize("noet", [255, 6])
def test_fdp_events_feature_defaults(ctrl, noet):
    want = [(t, 1) for t in SUPPORTED_EVENTS]
    for ph in range(NRUH):
        dw0, got = event_config(ctrl, 1, ph, noet)
        assert dw0 == len(want), (ph, dw0)
        assert [(t, a & 1) for t, a in got] == want, ph


@pytest.mark.parametrize("noet", [0, 1, 3])
def test_fdp_events_feature_get_ignores_noet(ctrl, noet):
    """Base specification, FDP Events feature: CDW11 NOET "is ignored by the controller on
    a Get Features command"; DW0 is the number of supported types returned. The contract
    says at most NOET are returned."""
    c, d = feat_get(ctrl, FEAT_FDP_EVENTS, 0 | noet << 16, nsid=1, size=12)
    assert c.ok, c
    assert c.dw0 == len(SUPPORTED_EVENTS), c
    assert [d[2 * i] for i in range(6)] == SUPPORTED_EVENTS


@pytest.mark.parametrize("nsid", [0xFFFFFFFF])
def test_fdp_events_feature_broadcast_nsid(ctrl, nsid, io_ok):
    c, _ = feat_get(ctrl, FEAT_FDP_EVENTS, 0 | 6 << 16, nsid=nsid, size=12)
    assert status_is(c, INVALID_FIELD), c
    c = set_events(ctrl, nsid, 0, [EV_RU_NOT_FULLY_WRITTEN], False)
    assert status_is(c, INVALID_FIELD), c
    io_ok(ctrl)


def test_fdp_events_feature_set_per_handle(ctrl):
    try:
        assert set_events(ctrl, 1, 0, [EV_RU_NOT_FULLY_WRITTEN, EV_INVALID_PID], False).ok
        _, h0 = event_config(ctrl, 1, 0)
        assert [(t, a & 1) for t, a in h0] == [(0x00, 0), (0x01, 1), (0x02, 1), (0x03, 0),
                                               (0x80, 1), (0x81, 1)]
        for ph in range(1, NRUH):
            _, got = event_config(ctrl, 1, ph)
            assert [(t, a & 1) for t, a in got] == [(t, 1) for t in SUPPORTED_EVENTS], ph
        assert set_events(ctrl, 1, 3, [EV_MEDIA_REALLOCATED], False).ok
        _, h3 = event_config(ctrl, 1, 3)
        assert dict(h3)[EV_MEDIA_REALLOCATED] & 1 == 0
        assert set_events(ctrl, 1, 0, [EV_INVALID_PID], True).ok
        _, h0 = event_config(ctrl, 1, 0)
        assert [(t, a & 1) for t, a in h0] == [(0x00, 0), (0x01, 1), (0x02, 1), (0x03, 1),
                                               (0x80, 1), (0x81, 1)]
    finally:
        for ph in range(NRUH):
            assert set_events(ctrl, 1, ph, SUPPORTED_EVENTS, True).ok
    for ph in range(NRUH):
        _, got = event_config(ctrl, 1, ph)
        assert [(t, a & 1) for t, a in got] == [(t, 1) for t in SUPPORTED_EVENTS], ph


@pytest.mark.parametrize("ph", [NRUH, 0x7FFF, 0xFFFF])
def test_fdp_events_feature_phndl_out_of_range(ctrl, ph, io_ok):
    c, _ = feat_get(ctrl, FEAT_FDP_EVENTS, ph | 6 << 16, nsid=1, size=12)
    assert status_is(c, INVALID_FIELD), c
    c = set_events(ctrl, 1, ph, [EV_RU_NOT_FULLY_WRITTEN], False)
    assert status_is(c, INVALID_FIELD), c
    io_ok(ctrl)


@pytest.mark.parametrize("etype", [0x04, 0x7F, 0x82, 0xFF])
def test_fdp_events_feature_unsupported_type(ctrl, etype, io_ok):
    c = set_events(ctrl, 1, 0, [etype], False)
    assert status_is(c, INVALID_FIELD), c
    _, got = event_config(ctrl, 1, 0)
    assert [(t, a & 1) for t, a in got] == [(t, 1) for t in SUPPORTED_EVENTS]
    io_ok(ctrl)


def test_disabled_event_is_not_logged(ctrl, fq):
    """RU Not Fully Written disabled on PHNDL 1: an RUH Update of partly written RUs of
    handles 0 and 1 logs the event for handle 0 only."""
    try:
        assert set_events(ctrl, 1, 1, [EV_RU_NOT_FULLY_WRITTEN], False).ok
        put(ctrl, fq, 1, 3000, 2, pid_of(0, 0))
        put(ctrl, fq, 1, 3002, 2, pid_of(0, 1))
        assert ruh_update(ctrl, fq, 1, [pid_of(0, 0), pid_of(0, 1)]).ok
        evs = events(ctrl)
        assert [(e["type"], e["ruhid"]) for e in evs] == [(EV_RU_NOT_FULLY_WRITTEN, 0)], evs
        # both handles did get a new RU
        assert ruamw(ctrl, fq)[pid_of(0, 1)] == RU_PAGES
    finally:
        assert set_events(ctrl, 1, 1, SUPPORTED_EVENTS, True).ok
    # enabled again: logged again
    put(ctrl, fq, 1, 3004, 1, pid_of(0, 1))
    assert ruh_update(ctrl, fq, 1, [pid_of(0, 1)]).ok
    assert [(e["type"], e["ruhid"]) for e in events(ctrl)][-1:] == [
        (EV_RU_NOT_FULLY_WRITTEN, 1)]


# ======================================================================================
# Log pages 20h-23h
# ======================================================================================

def test_configurations_log(ctrl):
    d = checked_log(ctrl, LOG_FDP_CONFIGS, 4096)
    cfg = parse_configs(d)
    dsze = 64 + 4 * NRUH
    assert cfg["numfdpc"] == 0, "NUMFDPC is 0-based: one configuration"
    assert cfg["ver"] == 0 and cfg["hdr_rsvd3"] == 0 and cfg["hdr_rsvd"] == bytes(8)
    assert cfg["dsze"] == dsze, cfg["dsze"]
    assert cfg["size"] == 16 + dsze, cfg["size"]
    assert cfg["fdpa"] & 0x80, "FDPA bit 7: configuration valid"
    assert cfg["fdpa"] & 0x0F == RGIF, "RGIF for NRG=2: 0x%x" % cfg["fdpa"]
    assert cfg["vss"] == 0
    assert cfg["nrg"] == NRG
    assert cfg["nruh"] == NRUH
    assert cfg["maxpids"] < NRG * NRUH, "MAXPIDS (0-based) < NRG * NRUH"
    assert cfg["nnss"] == 1, "NNSS, a count: the one namespace"
    assert cfg["runs"] == RUNS, "RUNS = 16 pages x 1 plane x 2 chips x 4096"
    assert cfg["erutl"] == ERUTL_S
    assert cfg["desc_rsvd"] == bytes(36)
    assert cfg["ruht"] == RUH_TYPES
    assert cfg["ruh_rsvd"] == [bytes(3)] * NRUH
    # nothing past the log's SIZE... a longer buffer is left alone or zeroed
    assert set(d[cfg["size"]:]) <= {0x00, 0xA5}


@pytest.mark.parametrize("offset,length", [(0, 16), (16, 64), (80, 16), (84, 8), (8, 8),
                                           (4, 88)])
def test_configurations_log_offsets(ctrl, offset, length):
    whole = checked_log(ctrl, LOG_FDP_CONFIGS, 96)
    part = checked_log(ctrl, LOG_FDP_CONFIGS, length, offset=offset)
    assert part == whole[offset:offset + length]


def test_statistics_and_usage_log_offsets(ctrl):
    whole = checked_log(ctrl, LOG_FDP_STATS, 64)
    assert checked_log(ctrl, LOG_FDP_STATS, 16, offset=16) == whole[16:32]
    whole = checked_log(ctrl, LOG_RUH_USAGE, 8 + 8 * NRUH)
    assert checked_log(ctrl, LOG_RUH_USAGE, 16, offset=16) == whole[16:32]


@pytest.mark.parametrize("lid", [LOG_FDP_CONFIGS, LOG_RUH_USAGE, LOG_FDP_STATS,
                                 LOG_FDP_EVENTS])
@pytest.mark.parametrize("lsi", [0, 2, 0xFFFF])
def test_log_other_endurance_group(ctrl, lid, lsi, io_ok):
    c, _ = get_log(ctrl, lid, 64, lsi=lsi)
    assert status_is(c, INVALID_FIELD), c
    io_ok(ctrl)


def test_ruh_usage_log(ctrl):
    n, ruha, rsvd = parse_usage(checked_log(ctrl, LOG_RUH_USAGE, 8 + 8 * NRUH))
    assert n == NRUH and rsvd == bytes(6)
    assert ruha == [1] * NRUH, "every handle is in namespace 1's list (host specified)"


def test_statistics_count_host_writes(ctrl, fq, machine):
    """No GC this early: HBMW and MBMW grow by the pages written, MBE stays; the log
    agrees with the FTL's counters."""
    before = fdp_stats(ctrl)
    put(ctrl, fq, 1, 2900, 1, pid_of(0, 0))
    put(ctrl, fq, 1, 2901, 4, pid_of(1, 3))
    put(ctrl, fq, 1, 2905, 3)
    put(ctrl, fq, 1, 2900, 2, pid_of(1, 1))         # overwrites count as writes
    after, q = stable_snapshot(ctrl, machine)
    assert after["hbmw"] - before["hbmw"] == 10 * PAGE
    assert after["mbmw"] - before["mbmw"] == 10 * PAGE
    assert after["mbe"] == before["mbe"]
    assert after["hbmw"] == stat(q, "host_pages_written") * PAGE
    assert after["mbmw"] == (stat(q, "host_pages_written") + stat(q, "gc_pages_moved")) * PAGE
    assert after["mbmw"] == stat(q, "nand_pages_written") * PAGE
    assert after["mbe"] == stat(q, "fdp_rus_erased") * RUNS


# ======================================================================================
# Events
# ======================================================================================

def test_ru_not_fully_written_event(ctrl, fq):
    pid = pid_of(1, 2)
    put(ctrl, fq, 1, 100, 3, pid)
    assert ruamw(ctrl, fq)[pid] == RU_PAGES - 3
    c = ruh_update(ctrl, fq, 1, [pid])
    assert c.ok, c
    evs = events(ctrl)
    assert len(evs) == 1, evs
    e = evs[0]
    assert e["type"] == EV_RU_NOT_FULLY_WRITTEN
    assert e["flags"] & (EVF_PIV | EVF_NSIDV | EVF_LV) == EVF_PIV | EVF_NSIDV | EVF_LV, e
    assert (e["pid"], e["nsid"], e["rgid"], e["ruhid"]) == (pid, 1, 1, 2), e
    assert e["rsvd"] == bytes(5)
    assert events(ctrl, controller=True) == [], "a host event in the controller list"
    assert ruamw(ctrl, fq)[pid] == RU_PAGES, "the handle references a new, empty RU"


def test_ruh_update_of_empty_ru_posts_nothing(ctrl, fq):
    before = ruamw(ctrl, fq)
    assert all(v == RU_PAGES for v in before.values()), before
    assert ruh_update(ctrl, fq, 1, [pid_of(0, 0), pid_of(1, 3)]).ok
    assert events(ctrl) == []
    assert ruamw(ctrl, fq) == before
    # one partly written among empty ones: one event
    put(ctrl, fq, 1, 110, 1, pid_of(0, 3))
    assert ruh_update(ctrl, fq, 1, [pid_of(0, 0), pid_of(0, 3), pid_of(1, 1)]).ok
    assert [(e["type"], e["rgid"], e["ruhid"]) for e in events(ctrl)] == [
        (EV_RU_NOT_FULLY_WRITTEN, 0, 3)]


@pytest.mark.parametrize("bad_pid", [pid_of(0, NRUH), pid_of(1, NRUH), pid_of(0, 0x7FFF)],
                         ids=["phndl4", "rg1-phndl4", "phndl7fff"])
def test_invalid_placement_identifier(ctrl, fq, machine, bad_pid):
    """The write succeeds, placed with PHNDL 0 in RG 0, and posts event 03h."""
    before_ruamw = ruamw(ctrl, fq)
    before_pages = ruh_pages(machine)
    data = put(ctrl, fq, 1, 120, 2, bad_pid)
    assert read_back(ctrl, fq, 1, 120, 2) == data
    evs = events(ctrl)
    assert len(evs) == 1, evs
    e = evs[0]
    assert e["type"] == EV_INVALID_PID
    assert e["flags"] & (EVF_PIV | EVF_NSIDV) == EVF_PIV | EVF_NSIDV, e
    assert (e["pid"], e["nsid"]) == (bad_pid, 1), e
    after = ruamw(ctrl, fq)
    assert after[pid_of(0, 0)] == before_ruamw[pid_of(0, 0)] - 2
    assert {p: v for p, v in after.items() if p != pid_of(0, 0)} == {
        p: v for p, v in before_ruamw.items() if p != pid_of(0, 0)}
    pages = ruh_pages(machine)
    assert [a - b for a, b in zip(pages, before_pages)] == [2, 0, 0, 0]


def test_controller_reset_event(ctrl, fq):
    """CC.EN 1 -> 0 closes every partly written RU: one 02h per (RG, handle)."""
    put(ctrl, fq, 1, 130, 2, pid_of(0, 1))
    put(ctrl, fq, 1, 132, 1, pid_of(1, 3))
    put(ctrl, fq, 1, 133, 1, pid_of(1, 3))
    ctrl.disable()
    ctrl.enable()
    sq = ctrl.create_io_queues(1, entries=64)
    evs = events(ctrl)
    assert all(e["type"] == EV_CTRL_RESET_MODIFIED for e in evs), evs
    assert sorted((e["rgid"], e["ruhid"]) for e in evs) == [(0, 1), (1, 3)], evs
    for e in evs:
        assert e["flags"] & EVF_LV, e
        # "the NSID field is reserved and the Placement Identifier field is reserved"
        assert e["flags"] & (EVF_PIV | EVF_NSIDV) == 0, e
    assert events(ctrl, controller=True) == []
    assert all(v == RU_PAGES for v in ruamw(ctrl, sq).values())


def test_shutdown_event(ctrl, fq):
    """A normal shutdown (CC.SHN) closes partly written RUs: 81h Implicitly Modified RUH
    in the controller list; the reset that follows finds nothing left to close."""
    put(ctrl, fq, 1, 140, 1, pid_of(0, 0))
    put(ctrl, fq, 1, 141, 5, pid_of(1, 2))
    ctrl.shutdown()
    ctrl.enable()
    sq = ctrl.create_io_queues(1, entries=64)
    cev = events(ctrl, controller=True)
    assert all(e["type"] == EV_IMPLICITLY_MODIFIED for e in cev), cev
    assert sorted((e["rgid"], e["ruhid"]) for e in cev) == [(0, 0), (1, 2)], cev
    for e in cev:
        assert e["flags"] & EVF_LV, e
    assert [e for e in events(ctrl) if e["type"] == EV_CTRL_RESET_MODIFIED] == []
    assert all(v == RU_PAGES for v in ruamw(ctrl, sq).values())


def test_host_and_controller_lists(ctrl, fq):
    put(ctrl, fq, 1, 150, 1, pid_of(0, 2))
    assert ruh_update(ctrl, fq, 1, [pid_of(0, 2)]).ok
    put(ctrl, fq, 1, 151, 1, pid_of(0, 5))          # invalid PHNDL
    assert sorted(e["type"] for e in events(ctrl)) == [EV_RU_NOT_FULLY_WRITTEN,
                                                       EV_INVALID_PID]
    assert events(ctrl, controller=True) == [], "host events in the controller list"


def test_event_type_bit(ctrl, fq):
    """Get Log Page 23h LSP bit 0 (FDP Event Type): 1 reports host events, 0 controller
    events (base specification 2.1, FDP Events log page; libnvme sets LSP=1 for
    `nvme fdp events --host-events`). /work/fdp-spec.md has them the other way round."""
    put(ctrl, fq, 1, 155, 1, pid_of(1, 0))
    assert ruh_update(ctrl, fq, 1, [pid_of(1, 0)]).ok
    c, d = get_log(ctrl, LOG_FDP_EVENTS, 128, lsp=1)
    assert c.ok, c
    assert u32(d, 0) == 1 and d[64] == EV_RU_NOT_FULLY_WRITTEN, \
        "LSP=1 must list the host event: %s" % d[:72].hex()
    c, d = get_log(ctrl, LOG_FDP_EVENTS, 128, lsp=0)
    assert c.ok, c
    assert u32(d, 0) == 0, "LSP=0 (controller events) lists: %s" % d[:72].hex()


def test_rae(ctrl, fq):
    """RAE=1 keeps the events; RAE=0 clears those returned (and only those)."""
    for ph in (0, 1, 2):
        put(ctrl, fq, 1, 160 + ph, 1, pid_of(1, ph))
        assert ruh_update(ctrl, fq, 1, [pid_of(1, ph)]).ok
    first = events(ctrl, rae=True)
    assert [e["ruhid"] for e in first] == [0, 1, 2], "oldest first"
    assert events(ctrl, rae=True) == first
    # a read of the header and one event with RAE=0 clears that one event
    c, d = get_log(ctrl, LOG_FDP_EVENTS, 128, lsp=LSP_HOST_EVENTS, rae=False)
    assert c.ok, c
    n, got = parse_events(d)
    assert n == 3, "NUMEVENTS counts every event, not only those transferred"
    assert len(got) == 1 and got[0] == first[0]
    rest = events(ctrl, rae=True)
    assert rest == first[1:]
    assert events(ctrl, rae=False) == rest
    assert events(ctrl) == []


def test_event_list_keeps_the_newest_63(ctrl, fq):
    """70 events: 7 from (RG 0, RUH 0) first, then 63 from the 7 other (RG, handle)
    pairs. The list holds 63: the newest, so none of the first 7."""
    others = [(rg, ph) for rg in range(NRG) for ph in range(NRUH) if (rg, ph) != (0, 0)]
    seq = [(0, 0)] * 7 + [others[i % len(others)] for i in range(63)]
    for i, (rg, ph) in enumerate(seq):
        put(ctrl, fq, 1, 1000 + i, 1, pid_of(rg, ph))
        c = ruh_update(ctrl, fq, 1, [pid_of(rg, ph)])
        assert c.ok, c
    c, d = get_log(ctrl, LOG_FDP_EVENTS, EVENT_LOG_BYTES, lsp=LSP_HOST_EVENTS)
    assert c.ok, c
    n, evs = parse_events(d)
    assert n == MAX_EVENTS
    assert all(e["type"] == EV_RU_NOT_FULLY_WRITTEN for e in evs)
    assert (0, 0) not in [(e["rgid"], e["ruhid"]) for e in evs], "an oldest event was kept"
    assert [(e["rgid"], e["ruhid"]) for e in evs] == seq[7:], "not the newest, oldest first"
    assert [e["pid"] for e in evs] == [pid_of(rg, ph) for rg, ph in seq[7:]]


# ======================================================================================
# I/O Management Receive / Send
# ======================================================================================

def test_ruh_status_layout(ctrl, fq):
    st = ruh_status(ctrl, fq)
    assert st["nruhsd"] == NRUH * NRG
    assert st["hdr_rsvd"] == bytes(14)
    want = [(pid_of(rg, ph), ph) for rg in range(NRG) for ph in range(NRUH)]
    assert [(x["pid"], x["ruhid"]) for x in st["descs"]] == want
    for x in st["descs"]:
        assert x["ruamw"] == RU_PAGES, x
        assert x["rsvd"] == bytes(16)
    _, d = ruh_status_raw(ctrl, fq, 1)
    end = 16 + 32 * NRUH * NRG
    assert d[end:] == bytes(4096 - end), "NUMD past the structure: zeroes are transferred"
    put(ctrl, fq, 1, 170, 1, pid_of(1, 1))
    x = [x for x in ruh_status(ctrl, fq)["descs"] if x["pid"] == pid_of(1, 1)][0]
    assert 0 < x["earutr"] <= ERUTL_S, "EARUTR of an open RU: seconds left of ERUTL"


def test_ruamw_follows_writes(ctrl, fq, machine):
    base = ruamw(ctrl, fq)
    put(ctrl, fq, 1, 180, 3, pid_of(0, 1))
    put(ctrl, fq, 1, 183, 5, pid_of(1, 1))
    put(ctrl, fq, 1, 180, 1, pid_of(0, 1))          # an overwrite takes a new page
    put(ctrl, fq, 1, 190, 40, pid_of(1, 3))         # fills an RU and goes on in another
    want = dict(base)
    want[pid_of(0, 1)] -= 4
    want[pid_of(1, 1)] -= 5
    want[pid_of(1, 3)] = RU_PAGES - (40 - RU_PAGES)
    assert ruamw(ctrl, fq) == want
    s = qstats(machine)
    assert stat(s, "rg0_ruh1_avail_pages") == RU_PAGES - 4
    assert stat(s, "rg1_ruh1_avail_pages") == RU_PAGES - 5
    assert ruh_update(ctrl, fq, 1, [pid_of(0, 1), pid_of(1, 1), pid_of(1, 3)]).ok
    assert ruamw(ctrl, fq) == base


def test_ruh_status_truncated_to_numd(ctrl, fq):
    _, full = ruh_status_raw(ctrl, fq, 1)
    c, d = ruh_status_raw(ctrl, fq, 1, numd=(16 + 3 * 32) // 4 - 1)
    assert c.ok, c
    assert d[:112] == full[:112], "header and the first three descriptors"
    assert u16(d, 14) == NRUH * NRG
    assert d[112:] == b"\xA5" * (4096 - 112), "written past NUMD"
    c, d = ruh_status_raw(ctrl, fq, 1, numd=1)
    assert c.ok, c
    assert d[:8] == bytes(8) and d[8:] == b"\xA5" * (4096 - 8)


@pytest.mark.parametrize("mo", [0x02, 0x7F, 0xFE, 0xFF])
def test_ruh_status_bad_mo(ctrl, fq, mo, io_ok):
    c, d = ruh_status_raw(ctrl, fq, 1, mo=mo)
    assert status_is(c, INVALID_FIELD), c
    io_ok(ctrl, fq)


def test_io_management_no_action(ctrl, fq):
    """MO 00h is No action (base specification, I/O Management Receive/Send): success,
    nothing transferred, nothing changed."""
    put(ctrl, fq, 1, 245, 1, pid_of(0, 2))
    before = ruamw(ctrl, fq)
    c, d = ruh_status_raw(ctrl, fq, 1, mo=0)
    assert c.ok, c
    assert d == b"\xA5" * 4096, "No action transferred data"
    c = ruh_update(ctrl, fq, 1, [pid_of(0, 2)], mo=0)
    assert c.ok, c
    assert ruamw(ctrl, fq) == before
    assert events(ctrl) == []


@pytest.mark.parametrize("nsid", [0, 0xFFFFFFFF])
def test_ruh_status_nsid_0_or_broadcast(ctrl, fq, nsid, io_ok):
    c, _ = ruh_status_raw(ctrl, fq, nsid)
    assert status_is(c, (nvme.SCT_GENERIC, nvme.SC_INVALID_NS)), c
    io_ok(ctrl, fq)


@pytest.mark.parametrize("mo", [0x02, 0xFE, 0xFF])
def test_ruh_update_bad_mo(ctrl, fq, mo, io_ok):
    put(ctrl, fq, 1, 240, 1, pid_of(0, 2))
    c = ruh_update(ctrl, fq, 1, [pid_of(0, 2)], mo=mo)
    assert status_is(c, INVALID_FIELD), c
    assert ruamw(ctrl, fq)[pid_of(0, 2)] == RU_PAGES - 1
    assert events(ctrl) == []
    io_ok(ctrl, fq)


def test_ruh_update_at_most_maxpids(ctrl, fq, io_ok):
    """NPID (0-based) may be MAXPIDS at most: one more PID is Invalid Field and changes
    nothing; MAXPIDS + 1 PIDs are accepted."""
    maxpids = fdp_config(ctrl)["maxpids"]
    pids = [pid_of(rg, ph) for rg in range(NRG) for ph in range(NRUH)]
    put(ctrl, fq, 1, 260, 1, pids[0])
    before = ruamw(ctrl, fq)
    over = (pids * 2)[:maxpids + 2]
    c = ruh_update(ctrl, fq, 1, over)
    assert status_is(c, INVALID_FIELD), c
    assert ruamw(ctrl, fq) == before and events(ctrl) == []
    c = ruh_update(ctrl, fq, 1, pids[:maxpids + 1])
    assert c.ok, c
    assert ruamw(ctrl, fq)[pids[0]] == RU_PAGES
    assert [(e["type"], e["pid"]) for e in events(ctrl)] == [(EV_RU_NOT_FULLY_WRITTEN,
                                                                 pids[0])]
    io_ok(ctrl, fq)


@pytest.mark.parametrize("bad", [pid_of(0, NRUH), pid_of(1, 9), 0x7FFF, 0xFFFF])
def test_ruh_update_invalid_pid_changes_nothing(ctrl, fq, bad, io_ok):
    put(ctrl, fq, 1, 250, 2, pid_of(0, 2))
    put(ctrl, fq, 1, 252, 3, pid_of(1, 0))
    before = ruamw(ctrl, fq)
    c = ruh_update(ctrl, fq, 1, [pid_of(0, 2), bad, pid_of(1, 0)])
    assert status_is(c, INVALID_FIELD), c
    assert ruamw(ctrl, fq) == before
    assert events(ctrl) == []
    io_ok(ctrl, fq)


# ======================================================================================
# Writes
# ======================================================================================

def test_placed_writes_every_handle_and_rg(ctrl, fq, machine):
    before_pages = ruh_pages(machine)
    before = ruamw(ctrl, fq)
    data = {}
    for rg in range(NRG):
        for ph in range(NRUH):
            lba = 300 + 2 * (rg * NRUH + ph)
            data[lba] = put(ctrl, fq, 1, lba, 2, pid_of(rg, ph))
    for lba, blob in data.items():
        assert read_back(ctrl, fq, 1, lba, 2) == blob, lba
    after = ruamw(ctrl, fq)
    assert after == {p: v - 2 for p, v in before.items()}
    pages = ruh_pages(machine)
    assert [a - b for a, b in zip(pages, before_pages)] == [2 * NRG] * NRUH
    assert events(ctrl) == []


def test_write_without_directive_goes_to_handle_0(ctrl, fq, machine):
    """Without a directive the write uses placement handle 0 "combined with a Reclaim Group
    selected by the controller" (base specification 8.1.11.3; /work/fdp-spec.md says RG 0,
    docs/fdp.md and the device take the groups in turn): handle 0 only, each command whole
    in one group."""
    before_pages = ruh_pages(machine)
    before = ruamw(ctrl, fq)
    data = [put(ctrl, fq, 1, 320 + 3 * i, 3) for i in range(3)]
    for i, blob in enumerate(data):
        assert read_back(ctrl, fq, 1, 320 + 3 * i, 3) == blob
    assert [a - b for a, b in zip(ruh_pages(machine), before_pages)] == [9, 0, 0, 0]
    after = ruamw(ctrl, fq)
    taken = {p: before[p] - after[p] for p in before}
    assert sum(taken[pid_of(rg, 0)] for rg in range(NRG)) == 9, taken
    assert all(taken[pid_of(rg, 0)] % 3 == 0 for rg in range(NRG)), taken
    assert all(v == 0 for p, v in taken.items() if p & 0x7FFF != 0), taken


@pytest.mark.parametrize("dtype", [DTYPE_STREAMS, 3, 15])
def test_other_directive_types_refused(ctrl, fq, dtype, io_ok):
    old = put(ctrl, fq, 1, 330, 2)
    before = ruamw(ctrl, fq)
    c = write(ctrl, fq, 1, 330, os.urandom(2 * PAGE), pid=1, dtype=dtype)
    assert status_is(c, INVALID_FIELD), c
    assert read_back(ctrl, fq, 1, 330, 2) == old
    assert ruamw(ctrl, fq) == before
    io_ok(ctrl, fq)


def test_deallocate_does_not_reset_rus(ctrl, fq, machine):
    pid = pid_of(1, 1)
    s0 = qstats(machine)
    put(ctrl, fq, 1, 3500, 5, pid)
    s1 = qstats(machine)
    assert stat(s1, "ruh1_valid_pages") - stat(s0, "ruh1_valid_pages") == 5
    assert ruamw(ctrl, fq)[pid] == RU_PAGES - 5
    c = ctrl.dsm_deallocate(fq, 1, [(3500, 5)])
    assert c.ok, c
    assert ruamw(ctrl, fq)[pid] == RU_PAGES - 5
    s2 = qstats(machine)
    # background GC may collect some other victim meanwhile: every erase is GC's, none the
    # Deallocate's
    assert (stat(s2, "fdp_rus_erased") - stat(s1, "fdp_rus_erased") ==
            stat(s2, "gc_runs") - stat(s1, "gc_runs"))
    assert stat(s2, "ruh1_valid_pages") == stat(s0, "ruh1_valid_pages")
    assert events(ctrl) == []


# ======================================================================================
# FDP disabled (fdp=off)
# ======================================================================================

class TestFdpOff(OwnMachine):
    DEV = DevConfig(mode=4, size_mb=16, lba_index=1, extra=GEO + ",fdp=off")

    def test_identify(self, ctrl):
        assert u32(ctrl.id_ctrl()["raw"], 96) & (1 << 19), "FDP is supported, if disabled"
        assert u16(ctrl.identify(0, nsid=1)[1], 102) == 1

    def test_fdp_feature(self, ctrl):
        c, _ = feat_get(ctrl, FEAT_FDP, 1)
        assert c.ok and c.dw0 & 1 == 0, c
        assert status_is(feat_set(ctrl, FEAT_FDP, 1, 1), CMD_SEQ_ERROR)
        assert status_is(feat_get(ctrl, FEAT_FDP, 2)[0], INVALID_FIELD)

    def test_fdp_events_feature(self, ctrl, io_ok):
        c, _ = feat_get(ctrl, FEAT_FDP_EVENTS, 0 | 6 << 16, nsid=1, size=12)
        assert status_is(c, FDP_DISABLED), c
        c = set_events(ctrl, 1, 0, [EV_RU_NOT_FULLY_WRITTEN], False)
        assert status_is(c, FDP_DISABLED), c
        io_ok(ctrl)

    def test_logs(self, ctrl, io_ok):
        cfg = fdp_config(ctrl)
        assert cfg["fdpa"] & 0x80 and cfg["nruh"] == 4 and cfg["nrg"] == 1
        assert cfg["runs"] == PGS_PER_BLK * CHIPS * PAGE
        for lid in (LOG_RUH_USAGE, LOG_FDP_STATS, LOG_FDP_EVENTS):
            for lsp in (0, 1) if lid == LOG_FDP_EVENTS else (0,):
                c, _ = get_log(ctrl, lid, 64, lsp=lsp)
                assert status_is(c, FDP_DISABLED), (hex(lid), c)
        io_ok(ctrl)

    def test_io_management(self, ctrl, ioq, io_ok):
        c, _ = ruh_status_raw(ctrl, ioq, 1)
        assert status_is(c, FDP_DISABLED), c
        c = ruh_update(ctrl, ioq, 1, [0])
        assert status_is(c, FDP_DISABLED), c
        io_ok(ctrl, ioq)

    def test_directive_not_enabled(self, ctrl):
        c, d = directive_receive(ctrl, 1)
        assert c.ok, c
        assert d[0] & 0x07 == 0x05 and d[32] & 0x07 == 0x01, d[:40].hex()

    def test_placed_write_with_fdp_disabled(self, ctrl, ioq, io_ok):
        """Base specification 8.1.9.1: "if no I/O Command Directive is enabled ..., then
        the DTYPE field and the DSPEC field are ignored" (Data Placement is not enabled
        here, Streams not supported): the write is done. The contract says Invalid
        Field."""
        new = os.urandom(2 * PAGE)
        c = write(ctrl, ioq, 1, 10, new, pid=0)
        assert c.ok, c
        assert read_back(ctrl, ioq, 1, 10, 2) == new
        io_ok(ctrl, ioq)


# ======================================================================================
# GC: statistics add up, Media Reallocated events
# ======================================================================================

class TestGarbageCollection(OwnMachine):
    """1024 pages exposed (4 MiB), 8-page blocks on 4 chips in one RG: 32-page RUs, about
    40 of them. A fill and random overwrites make the greedy GC move valid pages."""
    PGS = 8
    RU = PGS * CHIPS
    LBAS = 1024
    DEV = DevConfig(mode=4, size_mb=4, lba_index=1, queues=2, extra=(
        "nchs=2,luns_per_ch=2,pgs_per_blk=8,flash_type=1,op_pcent=25,fdp_ruh_types=ii:ii"))

    def submit_writes(self, ctrl, sq, writes, shadow, per_handle, rng):
        """writes: [(slba, n, ph)], QD 16."""
        for i in range(0, len(writes), 16):
            mark = ctrl.alloc.mark()
            pending = []
            for slba, n, ph in writes[i:i + 16]:
                data = rng.randbytes(n * PAGE)
                pending.append((sq, ctrl.submit(sq, write_cmd(ctrl, 1, slba, data,
                                                              DTYPE_PLACEMENT, ph))))
                for k in range(n):
                    shadow[slba + k] = data[k * PAGE:(k + 1) * PAGE]
                per_handle[ph] += n
            for c in ctrl.wait_all(pending, timeout=30):
                assert c.ok, c
            ctrl.alloc.release(mark)

    def test_statistics_and_media_reallocated(self, ctrl, machine):
        sq = ctrl.create_io_queues(1, entries=64)
        rng = random.Random(20250)
        nsze = ctrl.id_ns(1)["nsze"]
        assert nsze == self.LBAS
        assert fdp_config(ctrl)["runs"] == self.RU * PAGE
        drain_events(ctrl)
        shadow, per_handle = {}, [0, 0]
        realloc = []
        # fill through handle 1, then overwrite at random, a tenth through handle 0
        self.submit_writes(ctrl, sq, [(lba, 32, 1) for lba in range(0, self.LBAS, 32)],
                           shadow, per_handle, rng)
        for rnd in range(40):
            writes = []
            for _ in range(64):
                n = rng.choice((1, 1, 2, 4))
                writes.append((rng.randrange(self.LBAS - n + 1), n,
                               0 if rng.random() < 0.1 else 1))
            self.submit_writes(ctrl, sq, writes, shadow, per_handle, rng)
            realloc += events(ctrl, controller=True, rae=False)
            q = qstats(machine)
            if rnd >= 8 and stat(q, "gc_pages_moved") > 200 and stat(q, "gc_runs") > 10:
                break
        total = sum(per_handle)
        stats, q = stable_snapshot(ctrl, machine)
        realloc += events(ctrl, controller=True, rae=False)
        moved = stat(q, "gc_pages_moved")
        erased = stat(q, "fdp_rus_erased")
        assert moved > 0 and erased > 0, "GC never ran: %d pages written" % total
        # the FTL's counters
        assert stat(q, "host_pages_written") == total
        assert [stat(q, "ruh%d_host_pages_written" % h) for h in (0, 1)] == per_handle
        assert stat(q, "ruh0_gc_pages_moved") + stat(q, "ruh1_gc_pages_moved") == moved
        assert stat(q, "nand_pages_written") == total + moved
        assert stat(q, "blocks_erased") == erased * CHIPS, "an RU is one block per chip"
        # the statistics log, exactly
        assert stats["hbmw"] == total * PAGE
        assert stats["mbmw"] == (total + moved) * PAGE
        assert stats["mbe"] == erased * self.RU * PAGE
        # Media Reallocated: one per victim RU with valid data; together every page moved
        assert realloc, "no Media Reallocated event after %d pages moved" % moved
        assert len(realloc) <= stat(q, "gc_runs")
        for e in realloc:
            assert e["type"] == EV_MEDIA_REALLOCATED, e
            assert e["flags"] & EVF_NSIDV and e["nsid"] == 1, e
            assert e["lbav"] == 1 and 0 < e["nlbam"] <= self.RU, e
            assert e["lba"] < nsze, e
            if e["flags"] & EVF_LV:
                assert e["rgid"] == 0 and e["ruhid"] in (0, 1), e
        assert sum(e["nlbam"] for e in realloc) == moved
        assert events(ctrl) == [], "host events from GC"
        # and the data is all there
        for lba in range(0, self.LBAS, 64):
            back = read_back(ctrl, sq, 1, lba, 64)
            for k in range(64):
                want = shadow.get(lba + k, bytes(PAGE))
                assert back[k * PAGE:(k + 1) * PAGE] == want, "LBA %d" % (lba + k)


# ======================================================================================
# RU time limit (fdp_erutl_s)
# ======================================================================================

class TestTimeLimit(OwnMachine):
    DEV = DevConfig(mode=4, size_mb=8, lba_index=1, extra=GEO + ",fdp_erutl_s=1")

    def test_ru_time_limit_exceeded(self, ctrl, machine):
        sq = ctrl.create_io_queues(1, entries=64)
        ru = PGS_PER_BLK * CHIPS
        assert fdp_config(ctrl)["erutl"] == 1
        drain_events(ctrl)
        put(ctrl, sq, 1, 0, 1, 0)
        x = ruh_status(ctrl, sq)["descs"][0]
        assert x["ruamw"] == ru - 1 and x["earutr"] <= 1, x
        deadline = time.monotonic() + 15
        while ruamw(ctrl, sq)[0] != ru:
            assert time.monotonic() < deadline, "the RU was not closed after ERUTL"
            machine.qt.clock_step(100_000_000)
            time.sleep(0.1)
        evs = [e for e in events(ctrl) if e["type"] == EV_RU_TIME_LIMIT]
        assert len(evs) == 1, events(ctrl)
        assert evs[0]["flags"] & EVF_LV and (evs[0]["rgid"], evs[0]["ruhid"]) == (0, 0)


# ======================================================================================
# Several FDP namespaces sharing handles
# ======================================================================================

class TestSharedHandles(OwnMachine):
    """Two FDP namespaces: ns 1 has RUHs 0 and 1, ns 2 has RUHs 1 and 2; RUHs 3-5 are
    in no list. 6 chips in 3 RGs (RGIF 2, so RGID 3 does not exist)."""
    NRG, RGIF = 3, 2
    RU = 16 * 2
    LISTS = {1: [0, 1], 2: [1, 2]}
    DEV = DevConfig(mode=4, size_mb=24, namespaces=2, lba_index=1, extra=(
        "ns_types=fdp:fdp,ns_sizes_mb=12:12,nchs=3,luns_per_ch=2,pgs_per_blk=16,"
        "flash_type=1,op_pcent=25,fdp_nrg=3,fdp_ruh_types=ii:ii:ii:ii:ii:ii,"
        "fdp_ns_ruhs=0.1/1.2"))

    def pid(self, rg, ph):
        return pid_of(rg, ph, self.RGIF)

    def test_identify(self, ctrl):
        for nsid in (1, 2):
            assert u16(ctrl.identify(0, nsid=nsid)[1], 102) == 1, nsid

    def test_configuration(self, ctrl):
        cfg = fdp_config(ctrl)
        assert (cfg["nrg"], cfg["nruh"], cfg["fdpa"] & 0x0F) == (3, 6, 2)
        assert cfg["runs"] == self.RU * PAGE
        assert cfg["ruht"] == [RUHT_II] * 6
        assert cfg["nnss"] == 2, "two namespaces use the configuration"
        assert cfg["dsze"] == 64 + 4 * 6 and cfg["size"] == 16 + 64 + 4 * 6

    def test_ruh_usage(self, ctrl):
        n, ruha, _ = parse_usage(checked_log(ctrl, LOG_RUH_USAGE, 8 + 8 * 6))
        assert n == 6
        assert ruha == [1, 1, 1, 0, 0, 0]

    def test_ruh_status_per_namespace(self, ctrl, fq):
        for nsid, ruhs in self.LISTS.items():
            st = ruh_status(ctrl, fq, nsid)
            assert st["nruhsd"] == len(ruhs) * self.NRG, nsid
            assert [(x["pid"], x["ruhid"]) for x in st["descs"]] == [
                (self.pid(rg, ph), ruhs[ph]) for rg in range(self.NRG)
                for ph in range(len(ruhs))], nsid
            assert all(x["ruamw"] == self.RU for x in st["descs"]), st

    def test_shared_handle(self, ctrl, fq, machine):
        """ns 2's PHNDL 0 is RUH 1, also ns 1's PHNDL 1: the writes count for RUH 1, and
        both namespaces see its RU in RG 2 fill."""
        before = ruh_pages(machine, 6)
        data = put(ctrl, fq, 2, 40, 3, self.pid(2, 0))
        assert read_back(ctrl, fq, 2, 40, 3) == data
        assert read_back(ctrl, fq, 1, 40, 3) != data
        assert [a - b for a, b in zip(ruh_pages(machine, 6), before)] == [0, 3, 0, 0, 0, 0]
        assert ruamw(ctrl, fq, 2)[self.pid(2, 0)] == self.RU - 3
        assert ruamw(ctrl, fq, 1)[self.pid(2, 1)] == self.RU - 3
        assert ruamw(ctrl, fq, 1)[self.pid(2, 0)] == self.RU
        # an update through ns 1 of the shared handle: the event names ns 1 and RUH 1
        assert ruh_update(ctrl, fq, 1, [self.pid(2, 1)]).ok
        evs = events(ctrl)
        assert [(e["type"], e["nsid"], e["pid"], e["rgid"], e["ruhid"]) for e in evs] == [
            (EV_RU_NOT_FULLY_WRITTEN, 1, self.pid(2, 1), 2, 1)], evs
        assert ruamw(ctrl, fq, 2)[self.pid(2, 0)] == self.RU

    def test_ru_not_fully_written_names_the_namespace(self, ctrl, fq):
        put(ctrl, fq, 2, 60, 2, self.pid(1, 1))
        assert ruh_update(ctrl, fq, 2, [self.pid(1, 1)]).ok
        evs = events(ctrl)
        assert len(evs) == 1, evs
        e = evs[0]
        assert e["flags"] & (EVF_PIV | EVF_NSIDV | EVF_LV) == EVF_PIV | EVF_NSIDV | EVF_LV
        assert (e["type"], e["nsid"], e["pid"], e["rgid"], e["ruhid"]) == (
            EV_RU_NOT_FULLY_WRITTEN, 2, self.pid(1, 1), 1, 2)

    @pytest.mark.parametrize("nsid,bad,ruh", [(1, (3 << 14) | 0, 0), (1, (3 << 14) | 1, 0),
                                              (2, 2, 1), (2, (1 << 14) | 5, 1)],
                             ids=["ns1-rg3", "ns1-rg3-ph1", "ns2-ph2", "ns2-rg1-ph5"])
    def test_invalid_pid_goes_to_phndl_0_rg_0(self, ctrl, fq, machine, nsid, bad, ruh):
        before = ruh_pages(machine, 6)
        before_ruamw = ruamw(ctrl, fq, nsid)
        data = put(ctrl, fq, nsid, 80, 2, bad)
        assert read_back(ctrl, fq, nsid, 80, 2) == data
        delta = [a - b for a, b in zip(ruh_pages(machine, 6), before)]
        assert delta == [2 if h == ruh else 0 for h in range(6)]
        assert ruamw(ctrl, fq, nsid)[0] == before_ruamw[0] - 2
        evs = events(ctrl)
        assert [(e["type"], e["pid"], e["nsid"]) for e in evs] == [(EV_INVALID_PID, bad,
                                                                    nsid)]

    def test_events_feature_per_namespace_handles(self, ctrl, io_ok):
        for nsid in (1, 2):
            assert event_config(ctrl, nsid, 1)[0] == len(SUPPORTED_EVENTS)
            c, _ = feat_get(ctrl, FEAT_FDP_EVENTS, 2 | 6 << 16, nsid=nsid, size=12)
            assert status_is(c, INVALID_FIELD), (nsid, c)
        io_ok(ctrl)


# ======================================================================================
# FDP beside zoned and blackbox namespaces
# ======================================================================================

class TestMixed(OwnMachine):
    DEV = DevConfig(mode=4, size_mb=24, namespaces=3, lba_index=1, extra=(
        "ns_types=fdp:zns:blackbox,ns_sizes_mb=8:8:8,zns_zone_size_mb=1,"
        "nchs=2,luns_per_ch=2,pgs_per_blk=16,flash_type=1,op_pcent=25"))

    @pytest.fixture
    def sq(self, ctrl):
        ctrl.enable(css=nvme.CC_CSS_ALL)
        sq = ctrl.create_io_queues(1, entries=64)
        assert ctrl.zone_send(sq, 2, 0, nvme.ZSA_RESET, select_all=True).ok
        drain_events(ctrl)
        return sq

    def test_endgid_per_namespace(self, ctrl, sq):
        for nsid, endgid in ((1, 1), (2, 0), (3, 0)):
            c, d = ctrl.identify(0, nsid=nsid)
            assert c.ok and u64(d, 0) > 0, nsid
            assert u16(d, 102) == endgid, nsid
        assert u32(ctrl.id_ctrl()["raw"], 96) & (1 << 19)

    def test_each_namespace_works(self, ctrl, sq, machine):
        before = ruh_pages(machine)
        fdp = put(ctrl, sq, 1, 5, 2, pid_of(0, 3, 0))
        zoned = os.urandom(2 * PAGE)
        c = ctrl.zone_append(sq, 2, 0, zoned)
        assert c.ok and nvme.append_lba(c) == 0, c
        conv = put(ctrl, sq, 3, 5, 2)
        assert read_back(ctrl, sq, 1, 5, 2) == fdp
        assert read_back(ctrl, sq, 2, 0, 2) == zoned
        assert read_back(ctrl, sq, 3, 5, 2) == conv
        assert [a - b for a, b in zip(ruh_pages(machine), before)] == [0, 0, 0, 2]
        assert ruamw(ctrl, sq, 1)[3] == PGS_PER_BLK * CHIPS - 2
        assert fdp_config(ctrl)["nruh"] == 4
        assert events(ctrl) == []

    def test_fdp_commands_on_other_namespaces(self, ctrl, sq, io_ok):
        for nsid in (2, 3):
            c, _ = feat_get(ctrl, FEAT_FDP_EVENTS, 0 | 6 << 16, nsid=nsid, size=12)
            assert status_is(c, INVALID_FIELD), (nsid, c)
            c, _ = ruh_status_raw(ctrl, sq, nsid)
            assert not c.ok, (nsid, c)
        # no I/O directive is enabled on namespace 3: DTYPE and DSPEC are ignored (8.1.9.1)
        new = os.urandom(PAGE)
        c = write(ctrl, sq, 3, 20, new, pid=0)
        assert c.ok, c
        assert read_back(ctrl, sq, 3, 20, 1) == new
        io_ok(ctrl, sq, nsid=1)
        io_ok(ctrl, sq, nsid=3)

    def test_directive_receive_on_every_namespace(self, ctrl, sq):
        """Directives (OACS bit 5) are the controller's: the Identify directive answers for
        every namespace (base specification 8.1.9). Data Placement is supported and enabled
        only on the FDP one: the others are in no endurance group, so no placement handle
        can reach them (as QEMU's nvme device answers too)."""
        for nsid, bits in ((1, 0x05), (2, 0x01), (3, 0x01)):
            c, d = directive_receive(ctrl, nsid)
            assert c.ok, (nsid, c)
            assert d[0] & 0x07 == bits and d[32] & 0x07 == bits, (nsid, d[:40].hex())


# ======================================================================================
# Persistence: a file backend across a clean restart and a kill
# ======================================================================================

PERSIST = ("nchs=2,luns_per_ch=2,pgs_per_blk=16,flash_type=1,op_pcent=25,fdp_nrg=2,"
           "fdp_ruh_types=ii:pi:ii:pi")


class Drive(FileDrive):
    """An FDP drive in the file."""

    def __init__(self, path, tmp_path, extra=PERSIST):
        super().__init__(DevConfig(mode=4, size_mb=8, lba_index=1, queues=2, extra=extra,
                                   memdev_file=path), tmp_path)


def lasting_counters(q):
    names = ["host_pages_written", "nand_pages_written", "gc_pages_moved", "fdp_rus_erased",
             "fdp_total_rus"]
    names += ["ruh%d_%s" % (h, k) for h in range(4) for k in ("host_pages_written",
                                                              "valid_pages")]
    return {k: stat(q, k) for k in names}


def test_state_survives_a_clean_restart(tmp_path):
    path = str(tmp_path / "fdp.img")
    d = Drive(path, tmp_path)
    try:
        data = {}
        for lba, n, pid in ((0, 5, pid_of(0, 0)), (10, 3, pid_of(1, 1)), (20, 7, pid_of(0, 3)),
                            (100, 40, pid_of(1, 2)), (0, 2, pid_of(1, 0)), (300, 4, None)):
            blob = put(d.ctrl, d.sq, 1, lba, n, pid)
            for k in range(n):
                data[lba + k] = blob[k * PAGE:(k + 1) * PAGE]
        stats = fdp_stats(d.ctrl)
        assert stats["hbmw"] == 61 * PAGE
        counters = lasting_counters(qstats(d.m))
    finally:
        d.shutdown()

    d = Drive(path, tmp_path)
    try:
        assert fdp_stats(d.ctrl) == stats
        assert lasting_counters(qstats(d.m)) == counters
        for lba, blob in data.items():
            assert read_back(d.ctrl, d.sq, 1, lba, 1) == blob, lba
        c, _ = feat_get(d.ctrl, FEAT_FDP, 1)
        assert c.ok and c.dw0 & 1 == 1, c
        assert all(v == RU_PAGES for v in ruamw(d.ctrl, d.sq).values()), \
            "the shutdown closed the partly written RUs"
        assert [e for e in events(d.ctrl) if e["type"] == EV_CTRL_RESET_MODIFIED] == [], \
            "nothing was left open for the restart to close"
        # the counters go on from where they were
        put(d.ctrl, d.sq, 1, 500, 3, pid_of(0, 1))
        assert fdp_stats(d.ctrl)["hbmw"] == stats["hbmw"] + 3 * PAGE
        assert ruh_pages(d.m)[1] == counters["ruh1_host_pages_written"] + 3
    finally:
        d.shutdown()


LOG_ENDGRP = 0x09


def endgrp_data_units(ctrl):
    """Endurance Group Information: data units read and written (thousands of 512 bytes)."""
    d = checked_log(ctrl, LOG_ENDGRP, 512)
    return u128(d, 48), u128(d, 64)


def test_statistics_in_host_bytes_with_512_byte_lbas(tmp_path):
    """HBMW and the data units count the bytes of the host's commands, not the 4 KiB NAND
    pages they touch (MBMW does: the pages programmed); and they survive a restart. The
    only FDP drive here with 512-byte LBAs."""
    path = str(tmp_path / "fdp.img")

    def drive():
        return FileDrive(DevConfig(mode=4, size_mb=8, lba_index=0, queues=2, extra=PERSIST,
                                   memdev_file=path), tmp_path)

    d = drive()
    try:
        s0 = fdp_stats(d.ctrl)
        c = write(d.ctrl, d.sq, 1, 40, os.urandom(512), pid_of(0, 1))
        assert c.ok, c
        s1 = fdp_stats(d.ctrl)
        assert s1["hbmw"] - s0["hbmw"] == 512
        assert s1["mbmw"] - s0["mbmw"] == PAGE
        # 8 LBAs from LBA 1: 4 KiB across two pages
        c = write(d.ctrl, d.sq, 1, 1, os.urandom(8 * 512), pid_of(1, 2))
        assert c.ok, c
        s2 = fdp_stats(d.ctrl)
        assert s2["hbmw"] - s1["hbmw"] == 8 * 512
        assert s2["mbmw"] - s1["mbmw"] == 2 * PAGE
        for n in (3, 997, 1):
            read_back(d.ctrl, d.sq, 1, 100, n)
        q = qstats(d.m)
        assert stat(q, "fdp_host_bytes_written") == s2["hbmw"] == 9 * 512
        assert stat(q, "fdp_host_bytes_read") == 1001 * 512
        # this boot's counters, beside the FTL's lifetime ones
        assert stat(q, "host_bytes_written") == 9 * 512
        assert stat(q, "host_pages_written") == 3
        units = endgrp_data_units(d.ctrl)
        assert units == (2, 1), "1001 x 512 bytes read: 2 units; 9 x 512 written: 1"
    finally:
        d.shutdown()
    d = drive()
    try:
        assert fdp_stats(d.ctrl) == s2
        assert endgrp_data_units(d.ctrl) == units
        q = qstats(d.m)
        assert stat(q, "fdp_host_bytes_read") == 1001 * 512
        assert stat(q, "host_bytes_read") == 0
    finally:
        d.shutdown()


def test_kill_mid_writes(tmp_path):
    """SIGKILL with writes through several handles in flight: the next QEMU starts with the
    FTL's state checked (x-fdp-check-state: mapping, reverse map, valid counts, RU lists,
    isolation), the acknowledged data is there (each other block old or new), each
    handle's and the drive's counters went on by at least the acknowledged pages and at
    most all submitted, HBMW (bytes) agrees with the pages, and the restart closed the RUs
    left partly written."""
    N = 8
    path = str(tmp_path / "fdp.img")
    rng = random.Random(4242)
    d = Drive(path, tmp_path)
    killed = False
    try:
        open_ru = put(d.ctrl, d.sq, 1, 900, 3, pid_of(1, 2))    # left partly written
        s0 = fdp_stats(d.ctrl)
        pages0 = ruh_pages(d.m)
        ctrl, sq = d.ctrl, d.sq
        pids = [pid_of(rg, ph) for rg in range(NRG) for ph in range(NRUH)
                if (rg, ph) != (1, 2)]
        batch = []
        for i in range(48):
            blob = rng.randbytes(N * PAGE)
            pid = rng.choice(pids)
            cid = ctrl.queue_cmd(sq, write_cmd(ctrl, 1, N * i, blob, DTYPE_PLACEMENT, pid))
            batch.append((cid, N * i, blob, pid & ((1 << (16 - RGIF)) - 1)))
        # SIGKILL as soon as a few writes are acknowledged, the others in flight
        acked = kill_after_acks(ctrl, sq, d.kill)
        killed = True
    finally:
        if not killed:
            d.kill()

    d = Drive(path, tmp_path, PERSIST + ",x-fdp-check-state=on")
    try:
        assert read_back(d.ctrl, d.sq, 1, 900, 3) == open_ru
        for cid, lba, blob, _ in batch:
            back = read_back(d.ctrl, d.sq, 1, lba, N)
            if cid in acked:
                assert back == blob, "acknowledged write at LBA %d lost" % lba
            else:
                for k in range(N):
                    page = back[k * PAGE:(k + 1) * PAGE]
                    assert page in (blob[k * PAGE:(k + 1) * PAGE], bytes(PAGE)), lba + k
        s1 = fdp_stats(d.ctrl)
        q = qstats(d.m)
        assert s1["hbmw"] >= s0["hbmw"] + N * PAGE * len(acked)
        assert s1["hbmw"] <= s0["hbmw"] + N * PAGE * len(batch)
        assert s1["mbmw"] >= s1["hbmw"] and s1["mbe"] >= s0["mbe"]
        assert s1["hbmw"] == stat(q, "host_pages_written") * PAGE
        pages1 = ruh_pages(d.m)
        for h in range(NRUH):
            acked_h = sum(N for cid, _, _, ph in batch if ph == h and cid in acked)
            sent_h = sum(N for _, _, _, ph in batch if ph == h)
            assert pages0[h] + acked_h <= pages1[h] <= pages0[h] + sent_h, (h, pages0, pages1)
        # the restart closed what was open, the RU of (RG 1, RUH 2) among them
        evs = events(d.ctrl)
        assert (1, 2) in [(e["rgid"], e["ruhid"]) for e in evs
                          if e["type"] == EV_CTRL_RESET_MODIFIED], evs
        assert all(v == RU_PAGES for v in ruamw(d.ctrl, d.sq).values())
        more = put(d.ctrl, d.sq, 1, 1000, 2, pid_of(0, 1))
        assert read_back(d.ctrl, d.sq, 1, 1000, 2) == more
    finally:
        d.shutdown()


@pytest.mark.parametrize("change,needle", [
    ("fdp_ruh_types=ii:pi:ii:pi", "fdp_ruh_types=pi:ii:pi:ii"),
    ("fdp_ruh_types=ii:pi:ii:pi", "fdp_ruh_types=ii:ii:ii:ii"),
    ("fdp_ruh_types=ii:pi:ii:pi", "fdp_ruh_types=ii:pi:ii"),
    ("fdp_nrg=2", "fdp_nrg=1"),
    ("fdp_nrg=2", "fdp_nrg=4"),
], ids=["ruh_types-order", "ruh_types-no-pi", "ruh_types-3", "nrg1", "nrg4"])
def test_restart_with_another_layout_refused(tmp_path, change, needle):
    path = str(tmp_path / "fdp.img")
    d = Drive(path, tmp_path)
    try:
        blob = put(d.ctrl, d.sq, 1, 7, 2, pid_of(1, 1))
    finally:
        d.shutdown()
    prop = needle.split("=")[0]
    with pytest.raises(QEMULaunchError) as e:
        Drive(path, tmp_path, PERSIST.replace(change, needle))
    assert e.value.exitcode not in (0, None), e.value.output
    assert prop in launch_message(e.value), "the message does not name %s:\n%s" % (
        prop, e.value.output)
    d = Drive(path, tmp_path)
    try:
        assert read_back(d.ctrl, d.sq, 1, 7, 2) == blob
    finally:
        d.shutdown()


def test_restart_with_another_size_refused(tmp_path):
    """The same file with a smaller devsz_mb: the FDP state is looked for where that size
    puts it, finds nothing, and the data says the drive is not blank: refused, never
    started as an empty drive over the old data (found with run-fdp.sh, whose size came
    out a MiB short)."""
    path = str(tmp_path / "fdp.img")
    d = Drive(path, tmp_path)
    try:
        blob = put(d.ctrl, d.sq, 1, 7, 2, pid_of(1, 1))
    finally:
        d.shutdown()
    cfg = DevConfig(mode=4, size_mb=7, lba_index=1, queues=2, extra=PERSIST,
                    memdev_file=path, memdev_mb=9)
    with pytest.raises(QEMULaunchError) as e:
        Machine(cfg, str(tmp_path))
    assert "no FDP state" in launch_message(e.value), e.value.output
    d = Drive(path, tmp_path)
    try:
        assert read_back(d.ctrl, d.sq, 1, 7, 2) == blob
    finally:
        d.shutdown()


# ======================================================================================
# Refused properties
# ======================================================================================

BASE = "femu_mode=4,devsz_mb=16,lba_index=1,nchs=2,luns_per_ch=2,pgs_per_blk=16"
REFUSED = [
    # (properties after BASE, what the message must say: the property, the value, the range)
    ("op_pcent=25,fdp_nrg=3", ["fdp_nrg=3", "divide", "4 chips"]),
    ("op_pcent=25,fdp_nrg=0", ["fdp_nrg=0", "divide", "4 chips"]),
    ("op_pcent=25,fdp_nrg=8", ["fdp_nrg=8", "divide", "4 chips"]),
    ("op_pcent=25,fdp_ruh_types=ii:xx", ["fdp_ruh_types=", "'xx'", "'ii'", "'pi'"]),
    ("op_pcent=25,fdp_ruh_types=", ["fdp_ruh_types=", "1..128"]),
    ("op_pcent=25,fdp_ruh_types=" + ":".join(["ii"] * 129), ["fdp_ruh_types=", "1..128"]),
    ("op_pcent=25,fdp_ruh_types=ii::pi", ["fdp_ruh_types=", "'ii'", "'pi'"]),
    ("op_pcent=25,fdp_ns_ruhs=0.4", ["fdp_ns_ruhs=", "'4'", "0..3"]),
    ("op_pcent=25,fdp_ns_ruhs=0.x", ["fdp_ns_ruhs=", "'x'", "0..3"]),
    ("op_pcent=25,fdp_ns_ruhs=0.1/2", ["fdp_ns_ruhs=", "one handle list per fdp namespace"]),
    ("op_pcent=25,namespaces=2,ns_types=fdp:fdp,fdp_ns_ruhs=0.1",
     ["fdp_ns_ruhs=", "one handle list per fdp namespace (2)"]),
    ("op_pcent=25,fdp_ns_ruhs=0.0", ["fdp_ns_ruhs=", "twice"]),
    ("op_pcent=25,fdp_ns_ruhs=", ["fdp_ns_ruhs=", "one handle list per fdp namespace (1)"]),
    ("op_pcent=25,fdp_ns_ruhs=0..1", ["fdp_ns_ruhs=", "0..3"]),
    ("op_pcent=25,fdp_erutl_s=31536001", ["fdp_erutl_s=31536001", "31536000"]),
    # 64 RUs of 64 pages hold the data; 4 more cannot also give 8 handles an open RU each
    ("blks_per_pl=68,fdp_ruh_types=" + ":".join(["ii"] * 8),
     ["blks_per_pl=68", "reclaim units", "needs at least", "8 handles",
      "allowed blks_per_pl >= 75"]),
]


@pytest.mark.parametrize("size_mb", [10, 20, 40, 50, 100, 30])
def test_small_drive_default_op(size_mb):
    """op_pcent unset on a small drive of the default geometry (16 MiB lines): the derived
    blocks need no spare line of the blackbox's, since FDP adds its own spare RUs; 10, 20,
    40, 50 and 100 MiB were refused naming an op_pcent=7 nobody gave."""
    qtest_machine.skip_unless_qemu()
    qt = QTest(qtest_machine.QEMU, ["-device", "femu,femu_mode=4,devsz_mb=%d" % size_mb])
    qt.close()


@pytest.mark.parametrize("props,needles", REFUSED, ids=[p[:48] for p, _ in REFUSED])
def test_refused(props, needles):
    qtest_machine.skip_unless_qemu()
    try:
        qt = QTest(qtest_machine.QEMU, ["-device", "femu," + BASE + "," + props])
    except QEMULaunchError as e:
        assert e.exitcode == 1, e.output
        for needle in needles:
            assert needle in launch_message(e), "the message does not say %r:\n%s" % (
                needle, e.output)
        return
    qt.close()
    pytest.fail("QEMU accepted -device femu,%s,%s" % (BASE, props))
