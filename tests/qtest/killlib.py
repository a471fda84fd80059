"""The kill loop: a logging load on a drive kept in a file (memory-backend-file,
share=on), QEMU killed with SIGKILL at a random moment while commands are in flight,
started again on the same file, and what it holds checked by kill_check.py against what
the load submitted and saw complete. Shared by tests/qtest/test_kill_loop.py (a few kills
per kind, in `make check`) and bench/kill-loop.py (the campaign: 100 kills per kind).

No guest OS: the load is this module acting as the host's driver over qtest (nvme.py's
queues), with several I/O queues and up to QD commands in flight. The device thread runs
in real time, so commands progress while the load waits. Each block written is
self-describing (kill_check.block: its LBA, the zone/chunk generation, the write's
sequence number, a checksum). A completion is "acknowledged" once the load has read it
from its completion queue; the kill comes after a random delay, or right after the next
doorbell (sometimes only that of a zone/chunk reset, finish or close, a Flush or WCE=0),
with a random spin of 1 us to 2 ms after it; on zoned drives sometimes at the device's
own x-crash-at point instead; and sometimes the next start is killed too.

Kinds (KINDS): zns (plp unset), zns-plp (plp=selective, small buffers so that the device
also writes out on its own, protected writes, the write cache turned off in some rounds),
whitebox (vector writes with OOB, standard writes, resets of closed, open and free
chunks), blackbox (writes, Write Zeroes, Deallocate, FUA, Flush; the FTL's GC runs; its
state in the file must come back after every kill: counters that go on, data that is
mapped, Blackbox.check_ftl), fdp (the blackbox load with each write placed through one of
three handles, Initially and Persistently Isolated, sometimes with an invalid placement
identifier; the FDP FTL's state in the file must come back after every kill, checked as
blackbox's), blackbox-wb and fdp-wb (those with a 1 MiB DRAM write buffer: a volatile
write cache, checked by its rule; rarer Flushes, WCE=0 in some rounds, reads that must
return the last acknowledged write, some kills after a QMP power cut, half of those
powered back on in the same QEMU), blackbox-wb-plp (the same with wb_plp=on: checked as
blackbox).

Each run of a campaign starts from a seed: the same seed gives the same load decisions
and delays (the device's timing, and so the exact kill point, vary from run to run).
"""

import base64
import dataclasses
import math
import os
import random
import re
import signal
import struct
import subprocess
import time

import kill_check as kc
import nvme
import qtest_machine
from kill_check import Layout, Op, View, block, make_gen, oob_block
from nvme import PAGE
from qtest import QTestError
from qtest_machine import DevConfig, Machine

QUEUES = 4                  # I/O queue pairs the load spreads its commands over
ENTRIES = 64
QD = 12                     # commands in flight at most
MAX_BYTES = 64 << 10        # one command's data at most

OPC = {"write": nvme.IO_WRITE, "append": nvme.IO_ZONE_APPEND, "zeroes": nvme.IO_WRITE_ZEROES}
ZSA = {"finish": nvme.ZSA_FINISH, "close": nvme.ZSA_CLOSE, "open": nvme.ZSA_OPEN,
       "reset": nvme.ZSA_RESET}
ZONE_STATES = {nvme.ZS_EMPTY: "empty", nvme.ZS_IMPLICIT_OPEN: "implicitly open",
               nvme.ZS_EXPLICIT_OPEN: "explicitly open", nvme.ZS_CLOSED: "closed",
               nvme.ZS_FULL: "full", nvme.ZS_READ_ONLY: "read only",
               nvme.ZS_OFFLINE: "offline"}
CHUNK_STATES = {nvme.OC_CS_FREE: "free", nvme.OC_CS_OPEN: "open", nvme.OC_CS_CLOSED: "closed",
                nvme.OC_CS_OFFLINE: "offline"}


@dataclasses.dataclass
class Req:
    """A command of the load: the Op the checker sees, and how to send it."""
    op: Op
    opc: int
    cdw10: int = 0
    cdw11: int = 0
    cdw12: int = 0
    cdw13: int = 0
    cdw3: int = 0
    data: bytes = b""
    meta: bytes = b""
    lbas: list = None           # vector commands
    admin: bool = False         # on the admin queue
    read_len: int = 0           # a read: the bytes it returns


# --- the kinds ---

class Kind:
    """How one kind of drive is configured, loaded and read back. CRASH_POINTS: the
    device's x-crash-at points inside its commands, with how often a load passes each
    (per second); START_CRASH: its point in start-up, if any."""
    name = ""
    css = nvme.CC_CSS_NVM
    lba_size = 512
    CRASH_POINTS = ()
    START_CRASH = None
    POWER_CUTS = 0.0            # of the kills, preceded by a QMP power cut

    def dev(self, path):
        raise NotImplementedError

    def layout(self, ctrl):
        raise NotImplementedError

    def views(self, drive, layout):
        raise NotImplementedError

    def load(self, layout, state, rng, seq, gens):
        """The round's Load: layout, the checked state, the campaign's RNG, the last
        sequence number used, {unit: generation}."""
        raise NotImplementedError

    def check_ftl(self, drive, ops, memo):
        """Kinds with an FTL whose state the file keeps: what the restarted drive's FTL
        shows that it may not (lines), and what the next check starts from."""
        return [], None


def released(ctrl, fn, *args):
    """fn(*args) (a command of nvme.Controller), its guest buffers given back after."""
    mark = ctrl.alloc.mark()
    try:
        return fn(*args)
    finally:
        ctrl.alloc.release(mark)


def read_blocks(ctrl, sq, slba, n, per_cmd):
    """n blocks from slba through Read commands."""
    out = []
    for first in range(slba, slba + n, per_cmd):
        c, data = released(ctrl, ctrl.read, sq, 1, first, min(per_cmd, slba + n - first))
        if not c.ok:
            raise nvme.NvmeCommandError("Read of LBA %d" % first, c)
        out.append(data)
    return b"".join(out)


class Zoned(Kind):
    """16 zones of 1 MiB with 512 KiB capacity (1024 LBAs); the load uses the first 8."""
    css = nvme.CC_CSS_ALL
    ZONES, LOAD_ZONES, ZONE_LBAS, CAP_LBAS = 16, 8, 2048, 1024
    BASE = "zns_zone_size_mb=1,zns_zone_cap=512K,zns_num_ch=2,zns_num_lun=2"
    CRASH_POINTS = (("write-placed", 800), ("reset-saved", 40))

    def __init__(self, plp=None):
        self.plp = plp
        self.name = "zns-plp" if plp else "zns"
        self.START_CRASH = "plp-recovered" if plp else None

    def dev(self, path):
        extra = self.BASE
        if self.plp:
            # small regions: the device writes them out by itself (threshold, space) too
            extra += ",plp=%s,plp_zones=0,plp_buf_mb=1,buf_mb=1" % self.plp
        return DevConfig(mode=3, size_mb=16, queues=QUEUES, extra=extra, memdev_file=path,
                         memdev_mb=16 + (8 if self.plp else 1))

    def layout(self, ctrl):
        return Layout("zoned", self.lba_size,
                      [(z * self.ZONE_LBAS, self.CAP_LBAS) for z in range(self.ZONES)],
                      plp=self.plp, plp_zones=frozenset({0}) if self.plp else frozenset())

    def views(self, drive, layout):
        ctrl, sq = drive.ctrl, drive.sqs[0]
        c, rep = released(ctrl, ctrl.zone_report, sq, 1, 0, 64 + 64 * self.ZONES)
        if not c.ok:
            raise nvme.NvmeCommandError("Report Zones", c)
        out = {}
        for u, z in enumerate(rep["zones"]):
            start, cap = layout.units[u]
            out[u] = View(ZONE_STATES.get(z["zs"], "state 0x%x" % z["zs"]), z["wp"],
                          read_blocks(ctrl, sq, start, cap, 256))
        return out

    def load(self, *args):
        return ZonedLoad(self, *args)


class Whitebox(Kind):
    """OCSSD 2.0, 2 groups x 4 PUs, 1 MiB chunks (256 sectors of 4 KiB) written 4 sectors
    at a time, 32 bytes of OOB per sector; the load uses one chunk on each PU."""
    GEO = ("lnum_ch=2,lnum_lun=4,lnum_pln=1,lsecs_per_pg=4,lpgs_per_blk=64,lmetasize=32,"
           "flash_type=1")
    META = 32
    name = "whitebox"
    lba_size = 4096

    def dev(self, path):
        return DevConfig(mode=0, size_mb=16, lba_index=1, queues=QUEUES, extra=self.GEO,
                         memdev_file=path, memdev_mb=16 + 4)

    def layout(self, ctrl):
        _, g = ctrl.oc_geometry(1)
        self.ws_min, clba = g["ws_min"], g["clba"]
        npu, nchk = g["num_grp"] * g["num_pu"], g["num_chk"]
        self.chunks = [pu * nchk for pu in range(npu)]
        self.nchunks = npu * nchk
        return Layout("whitebox", self.lba_size, [(c * clba, clba) for c in self.chunks],
                      meta=self.META)

    def views(self, drive, layout):
        ctrl, sq = drive.ctrl, drive.sqs[0]
        descs = released(ctrl, ctrl.chunks, 1, self.nchunks)
        out = {}
        for u, chunk in enumerate(self.chunks):
            d = descs[chunk]
            start, cap = layout.units[u]
            data, meta = [], []
            for first in range(start, start + cap, 64):
                lbas = list(range(first, min(first + 64, start + cap)))
                c, dd, mm = released(ctrl, ctrl.vector_read, sq, 1, lbas,
                                     len(lbas) * self.META)
                if not c.ok:
                    raise nvme.NvmeCommandError("Vector Read of LBA %d" % first, c)
                data.append(dd)
                meta.append(mm)
            out[u] = View(CHUNK_STATES.get(d["cs"], "state 0x%x" % d["cs"]), d["wp"],
                          b"".join(data), b"".join(meta), d["wli"])
        return out

    def load(self, *args):
        return WhiteboxLoad(self, *args)


def ftl_counters(drive):
    """The drive's statistics (QMP), by name."""
    r = drive.m.qmp("qom-get", path="/machine/peripheral/femu0", property="stats")
    if "return" not in r:
        raise RuntimeError("qom-get stats: %s" % r)
    return {k.replace("-", "_"): v for k, v in r["return"].items()}


class Blackbox(Kind):
    """A small conventional SSD (4 chips, 16-page blocks, 25% OP: GC runs under the load);
    the load writes the first 4096 LBAs (2 MiB). Its FTL's state is kept in the file:
    after every kill its counters go on from where they were (check_ftl) and every flash
    page that holds data is mapped (a read of it is no unmapped read), but for pages a
    write in flight at a kill may have reached without its mapping (the data is written
    before the FTL learns of it)."""
    REGION = 4096
    CHUNK = 256                 # LBAs per read of the check: 32 flash pages
    PAGE_LBAS = 8               # a flash page of 4 KiB (the FTL's mapping unit)
    UNITS_PER_PAGE = 1          # mapping units a NAND page holds
    name = "blackbox"

    def dev(self, path):
        return DevConfig(mode=1, size_mb=16, queues=QUEUES, memdev_file=path,
                         extra="nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=25,flash_type=1")

    def layout(self, ctrl):
        return Layout("blackbox", self.lba_size, [(0, self.REGION)])

    def views(self, drive, layout):
        """The region's data, and the unmapped pages each chunk's read met (drive.ftl)."""
        ctrl, sq = drive.ctrl, drive.sqs[0]
        data, unmapped = [], []
        drive.ftl = {"start": ftl_counters(drive)}
        for first in range(0, self.REGION, self.CHUNK):
            u0 = ftl_counters(drive)["unmapped_pages_read"]
            data.append(read_blocks(ctrl, sq, first, self.CHUNK, self.CHUNK))
            unmapped.append(ftl_counters(drive)["unmapped_pages_read"] - u0)
        drive.ftl.update(unmapped=unmapped, end=ftl_counters(drive))
        return {0: View("", 0, b"".join(data))}

    def op_pages(self, o):
        """(flash pages an op touches, pages it writes, pages it drops): writes write every
        page they touch, Write Zeroes the partly covered ones, both drop whole ones."""
        k = self.PAGE_LBAS
        first, last = o.slba // k, (o.slba + o.nlb + k - 1) // k
        whole_first, whole_last = (o.slba + k - 1) // k, (o.slba + o.nlb) // k
        touched = range(first, last)
        if o.op == "write":
            return touched, list(touched), []
        edges = [first] if first < whole_first else []
        if whole_first <= whole_last < last:
            edges.append(whole_last)
        return touched, edges if o.op == "zeroes" else [], list(range(whole_first, whole_last))

    def programmed(self, o, points):
        """Whether an op's pages count as programmed (the counters' lower bound)."""
        return o.ack is not None

    def mapped(self, o, points, cut):
        """Whether the pages an op writes are mapped after it (else they may hold its data
        unmapped: a kill came between the data and the mapping). cut: the kill came after
        a power cut."""
        return o.ack is not None

    def check_ftl(self, drive, ops, memo):
        memo = {"end": None, "maybe": set(), **(memo or {})}
        start, end = drive.ftl["start"], drive.ftl["end"]
        prev = memo["end"] or dict.fromkeys(start, 0)
        out = []
        bounds = {"host_pages_written": [0, 0], "pages_trimmed": [0, 0]}
        written, acked_written, trimmed = set(), set(), set()
        points = kc.vwc_points(ops)
        for o in ops:
            if o.op not in ("write", "zeroes", "dsm") or (o.ack is not None and o.status):
                continue
            _, w, t = self.op_pages(o)
            for name, n in (("host_pages_written", len(w)), ("pages_trimmed", len(t))):
                bounds[name][1] += n
                bounds[name][0] += n if self.programmed(o, points) else 0
            (acked_written if self.mapped(o, points, memo.get("cut")) else written).update(w)
            trimmed.update(t)
        for name, (lo, hi) in bounds.items():
            if not prev[name] + lo <= start[name] <= prev[name] + hi:
                out.append("FTL state: %s is %d after the restart; the previous start saw %d "
                           "and the round added %d (acknowledged) to %d (submitted)"
                           % (name, start[name], prev[name], lo, hi))
        for name in ("gc_runs", "gc_pages_moved", "blocks_erased", "nand_pages_written"):
            if start[name] < prev[name]:
                out.append("FTL state: %s went back from %d to %d" % (name, prev[name],
                                                                       start[name]))
        if self.UNITS_PER_PAGE > 1:
            # whole NAND pages: units still in the buffer not yet, Flush's padding too
            if start["nand_pages_written"] % self.UNITS_PER_PAGE:
                out.append("FTL state: %d units programmed, not whole NAND pages of %d" % (
                    start["nand_pages_written"], self.UNITS_PER_PAGE))
        elif start["nand_pages_written"] != start["host_pages_written"] + start["gc_pages_moved"]:
            out.append("FTL state: %d NAND pages written, not host %d + moved %d" % (
                start["nand_pages_written"], start["host_pages_written"],
                start["gc_pages_moved"]))
        # pages a write in flight reached may hold data without their mapping, until an
        # acknowledged write maps them (one not followed by a drop, to keep it simple)
        maybe = (memo["maybe"] | written) - (acked_written - trimmed)
        data = drive.views_data
        k = self.PAGE_LBAS * self.lba_size
        for i, got in enumerate(drive.ftl["unmapped"]):
            pages = range(i * self.CHUNK // self.PAGE_LBAS, (i + 1) * self.CHUNK // self.PAGE_LBAS)
            may = sum(1 for p in pages if p in maybe or not data[p * k:(p + 1) * k].strip(b"\0"))
            if got > may:
                out.append("FTL state: reading LBAs %d..%d met %d unmapped pages, but only %d "
                           "hold no data or were written at a kill: the mapping did not come "
                           "back" % (i * self.CHUNK, (i + 1) * self.CHUNK - 1, got, may))
        return out, dict(memo, end=end, maybe=maybe)

    def load(self, *args):
        return BlackboxLoad(self, *args)


class BlackboxUnits(Blackbox):
    """The blackbox drive on 16 KiB NAND pages mapped in 4 KiB units (map_unit_kb=4), lines
    of the same 256 KiB: units wait in the buffer for their page's two-plane program, Flush
    pads; the same rules."""
    UNITS_PER_PAGE = 4
    name = "blackbox-units"

    def dev(self, path):
        return DevConfig(mode=1, size_mb=16, queues=QUEUES, memdev_file=path,
                         extra="nchs=2,luns_per_ch=1,pls_per_lun=2,pgs_per_blk=4,"
                               "secs_per_pg=32,map_unit_kb=4,op_pcent=25,flash_type=1")


class Fdp(Blackbox):
    """The blackbox drive as an FDP drive with three handles (ii, pi, ii)."""
    name = "fdp"

    def dev(self, path):
        return DevConfig(mode=4, size_mb=16, queues=QUEUES, memdev_file=path,
                         extra="nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=25,flash_type=1,"
                               "fdp_ruh_types=ii:pi:ii")

    def load(self, *args):
        return FdpLoad(self, *args)


class Buffered:
    """A blackbox or FDP kind with a 1 MiB DRAM write buffer (256 units of a 4 KiB page,
    written out above 153 down to 102: the load passes that between its rarer Flushes).
    Without wb_plp the checker's rule is the volatile write cache's (Layout.vwc) and one
    round in four turns the cache off; with wb_plp=on it is the plain blackbox rule. The
    FTL check allows for what the buffer had not programmed (check_ftl)."""
    WB = "wb_size_mb=1"
    POWER_CUTS = 0.3

    @property
    def CRASH_POINTS(self):
        # inside the copy of a unit the buffer writes out (or, wb_plp, of a write's LBA)
        return (("lba-journaled", 20000 if self.plp else 2000),)

    def __init__(self, plp=False):
        self.plp = plp
        self.name = self.base + ("-wb-plp" if plp else "-wb")

    def dev(self, path):
        cfg = super().dev(path)
        return dataclasses.replace(cfg, extra=cfg.extra + "," + self.WB +
                                   (",wb_plp=on" if self.plp else ""))

    def layout(self, ctrl):
        return dataclasses.replace(super().layout(ctrl), vwc=not self.plp)

    def programmed(self, o, points):
        # a buffered write may not be programmed yet, or absorbed by a later one; Write
        # Zeroes and Deallocate go to the FTL at once
        return o.ack is not None and o.op != "write"

    def mapped(self, o, points, cut):
        # the buffer puts a unit's data in place just before the FTL maps it (in one pass
        # of the device thread): a durable write is mapped; a SIGKILL may come between
        # the two for any other. With wb_plp the data is in place at once and programmed
        # later: after a SIGKILL (no capacitors) it may stay unmapped; a power cut programs
        # every acknowledged one.
        if o.ack is None or o.op != "write":
            return o.ack is not None
        if self.plp:
            return cut
        return cut or kc.vwc_durable(o, *points)

    def load(self, *args):
        return BufferedLoad(self, *args)


class BlackboxWb(Buffered, Blackbox):
    base = "blackbox"


class FdpWb(Buffered, Fdp):
    base = "fdp"


KINDS = {k.name: k for k in (Zoned(), Zoned("selective"), Whitebox(), Blackbox(),
                             BlackboxUnits(), Fdp(), BlackboxWb(), BlackboxWb(plp=True),
                             FdpWb())}


# --- loads: what to send next, given what completed ---

class Load:
    """The host's side of one round: the commands it sent (ops) and its picture of each
    zone/chunk it uses (known exactly: a unit has one command in flight at most). A kind's
    load sets FLUSH (chance of a Flush per command, two in flight at most), TRANSITIONS
    (the commands a "transition" kill follows) and unit_next/advance (a unit's next
    command; its picture after one completed)."""
    FLUSH = 0.0
    TRANSITIONS = ()

    def __init__(self, kind, layout, state, rng, seq, gens, units=()):
        self.kind, self.layout, self.rng, self.seq = kind, layout, rng, seq
        self.gens = gens            # {unit: its generation (resets sent)}, across rounds
        self.units = {u: {"state": state[u].state, "wp": state[u].wp, "busy": False}
                      for u in units}
        self.ops = []
        self.flushes = 0

    def new_op(self, name, **kw):
        self.seq += 1
        op = Op(self.seq, name, **kw)
        self.ops.append(op)
        return op

    def gen(self, u):
        return make_gen(self.gens.get(u, 0), self.seq + 1)

    def data_for(self, slba, nlb, gen):
        bs = self.layout.lba_size
        return b"".join(block(bs, lba, gen) for lba in range(slba, slba + nlb))

    def maybe_flush(self, p):
        if self.flushes < 2 and self.rng.random() < p:
            self.flushes += 1
            return Req(self.new_op("flush"), nvme.IO_FLUSH)
        return None

    def next(self):
        """The next command, or None when there is none to send now."""
        req = self.maybe_flush(self.FLUSH)
        if req:
            return req
        idle = [u for u, s in self.units.items() if not s["busy"]]
        for u in self.rng.sample(idle, min(3, len(idle))):
            req = self.unit_next(u)
            if req:
                return req
        return None

    def unit_op(self, u, name, **kw):
        self.units[u]["busy"] = True
        if name == "reset":
            self.gens[u] = self.gens.get(u, 0) + 1
        return self.new_op(name, unit=u, **kw)

    def completed(self, op, cpl):
        if op.op == "flush":
            self.flushes -= 1
            return
        s = self.units.get(op.unit)
        if s is None:
            return
        # after an error its state is not known any more: leave it alone
        s["busy"] = bool(op.status)
        if not op.status:
            self.advance(s, op)


class ZonedLoad(Load):
    FLUSH = 0.03
    TRANSITIONS = ("reset", "finish", "close", "flush", "cache-off")

    def __init__(self, kind, layout, state, rng, seq, gens):
        super().__init__(kind, layout, state, rng, seq, gens, range(kind.LOAD_ZONES))
        for s in self.units.values():
            if s["state"] not in ("empty", "closed", "full"):
                s["busy"] = True    # a state a restart cannot give (the check said so)
        # with plp=, one round in four turns the write cache off (WCE=0) at some point
        self.cache_off = layout.plp is not None and rng.random() < 0.25

    def next(self):
        if self.cache_off and self.rng.random() < 0.003:
            self.cache_off = False
            return Req(self.new_op("cache-off"), nvme.ADM_SET_FEATURES, nvme.FEAT_VWC,
                       admin=True)
        return super().next()

    def unit_next(self, u):
        rng = self.rng
        s = self.units[u]
        start, cap = self.layout.units[u]
        r = rng.random()
        if s["state"] == "full":
            return self.zone_action(u, "reset") if r < 0.3 else None
        if r < 0.04 and s["state"] != "empty":
            return self.zone_action(u, "reset")
        if r < 0.07:
            return self.zone_action(u, "finish")
        if r < 0.10 and s["state"] == "open":
            return self.zone_action(u, "close")
        if r < 0.12 and s["state"] != "open":
            return self.zone_action(u, "open")
        nlb = min(start + cap - s["wp"], rng.choice((1, 1, 2, 4, 8, 8, 16, 32)))
        append = rng.random() < 0.2
        protect = self.layout.plp is not None and rng.random() < 0.5
        fua = rng.random() < 0.1
        gen = self.gen(u)
        op = self.unit_op(u, "append" if append else "write", slba=s["wp"], nlb=nlb,
                          gen=gen, protect=protect, fua=fua)
        lba = start if append else s["wp"]
        return Req(op, OPC[op.op], lba & 0xFFFFFFFF, lba >> 32, (nlb - 1) | fua << 30,
                   cdw3=1 if protect else 0, data=self.data_for(op.slba, nlb, gen))

    def zone_action(self, u, action):
        start = self.layout.units[u][0]
        op = self.unit_op(u, action, slba=start)
        return Req(op, nvme.IO_ZONE_MGMT_SEND, start & 0xFFFFFFFF, start >> 32,
                   cdw13=ZSA[action])

    def advance(self, s, op):
        start, cap = self.layout.units[op.unit]
        if op.writes_data:
            s["wp"] = op.slba + op.nlb
            s["state"] = "full" if s["wp"] == start + cap else "open"
        elif op.op == "finish":
            s["wp"], s["state"] = start + cap, "full"
        elif op.op == "close":
            s["state"] = "closed" if s["wp"] > start else "empty"
        elif op.op == "open":
            s["state"] = "open"
        elif op.op == "reset":
            s["wp"], s["state"] = start, "empty"


class WhiteboxLoad(Load):
    FLUSH = 0.02
    TRANSITIONS = ("reset",)

    def __init__(self, kind, layout, state, rng, seq, gens):
        super().__init__(kind, layout, state, rng, seq, gens, state)
        for s in self.units.values():
            s["busy"] = s["state"] not in ("free", "open", "closed")

    def unit_next(self, u):
        rng = self.rng
        s = self.units[u]
        start, cap = self.layout.units[u]
        room = start + cap - s["wp"]
        if room == 0 and rng.random() < 0.5:
            return None                 # a Closed chunk stays a while
        if room == 0 or (s["state"] != "closed" and rng.random() < 0.03):
            op = self.unit_op(u, "reset", slba=start)
            return Req(op, nvme.IO_VEC_RESET, lbas=[start])
        nlb = min(room, MAX_BYTES // self.layout.lba_size,
                  self.kind.ws_min * rng.choice((1, 1, 2, 4, 8, 16)))
        gen = self.gen(u)
        vector = nlb <= 64 and rng.random() < 0.7
        op = self.unit_op(u, "write", slba=s["wp"], nlb=nlb, gen=gen, oob=vector)
        data = self.data_for(op.slba, nlb, gen)
        if not vector:
            return Req(op, nvme.IO_WRITE, op.slba & 0xFFFFFFFF, op.slba >> 32, nlb - 1,
                       data=data)
        meta = b"".join(oob_block(self.layout.meta, lba, gen)
                        for lba in range(op.slba, op.slba + nlb))
        return Req(op, nvme.IO_VEC_WRITE, cdw12=nlb - 1, data=data, meta=meta,
                   lbas=list(range(op.slba, op.slba + nlb)))

    def advance(self, s, op):
        start, cap = self.layout.units[op.unit]
        if op.op == "reset":
            s["wp"], s["state"] = start, "free"
        else:
            s["wp"] = op.slba + op.nlb
            s["state"] = "closed" if s["wp"] == start + cap else "open"


class BlackboxLoad(Load):
    """Writes anywhere in the region, never two commands in flight on one LBA. With
    READS, also reads, each of which must return every LBA's last acknowledged write (or
    zeroes), what the last check found where none was (read_errors)."""
    FLUSH = 0.05
    TRANSITIONS = ("flush", "zeroes", "dsm")
    READS = 0.0

    def __init__(self, kind, layout, state, rng, seq, gens):
        super().__init__(kind, layout, state, rng, seq, gens)
        self.busy = {}              # op seq -> (slba, nlb)
        self.now = dict(state[0].content)      # lba -> gen | bytes, as acknowledged
        self.read_errors = []
        self.reads = 0

    def next(self):
        rng = self.rng
        req = self.maybe_flush(self.FLUSH)
        if req:
            return req
        region = self.layout.units[0][1]
        nlb = rng.choice((1, 1, 2, 4, 8, 8, 16, 32, 64))
        slba = rng.randrange(region - nlb + 1)
        if any(a < slba + nlb and slba < a + n for a, n in self.busy.values()):
            return None
        if self.READS and rng.random() < self.READS:
            op = self.new_op("read", slba=slba, nlb=nlb)
            self.busy[op.seq] = (slba, nlb)
            return Req(op, nvme.IO_READ, slba & 0xFFFFFFFF, slba >> 32, nlb - 1,
                       read_len=nlb * self.layout.lba_size)
        r = rng.random()
        name = "zeroes" if r < 0.06 else "dsm" if r < 0.1 else "write"
        fua = name == "write" and rng.random() < 0.1
        gen = self.gen(0) if name == "write" else None
        op = self.new_op(name, slba=slba, nlb=nlb, gen=gen, fua=fua)
        self.busy[op.seq] = (slba, nlb)
        if name == "dsm":
            return Req(op, nvme.IO_DSM, 0, 1 << 2, data=struct.pack("<IIQ", 0, nlb, slba))
        return Req(op, OPC[name], slba & 0xFFFFFFFF, slba >> 32, (nlb - 1) | fua << 30,
                   data=self.data_for(slba, nlb, gen) if gen else b"")

    def completed(self, op, cpl):
        if op.op == "flush":
            self.flushes -= 1
        else:
            self.busy.pop(op.seq, None)
        if op.op == "read":
            self.check_read(op)
        elif op.writes_data and not op.status:
            for lba in range(op.slba, op.slba + op.nlb):
                self.now[lba] = op.gen if op.op == "write" else kc.ZERO

    def check_read(self, op):
        self.reads += 1
        bs = self.layout.lba_size
        if op.status:
            self.read_errors.append("read #%d of LBA %d+%d: %s" % (
                op.seq, op.slba, op.nlb, kc.status_text(op)))
            return
        for i in range(op.nlb):
            lba, got = op.slba + i, op.read_data[i * bs:(i + 1) * bs]
            want = self.now.get(lba, kc.ZERO)
            if got != (want if isinstance(want, bytes) else kc.block(bs, lba, want)):
                kind, gen = kc.classify(got, lba)
                self.read_errors.append(
                    "read #%d: LBA %d returned %s, its last acknowledged write is %s" % (
                        op.seq, lba, kc.found_text(kind, gen), kc.describe_gen(want)))
                return


class BufferedLoad(BlackboxLoad):
    """The blackbox load with fewer Flushes (the write buffer fills past its high
    watermark between them) and, without wb_plp, in one round in four a Set Features
    Volatile Write Cache WCE=0 at some point (later writes go through). FDP kinds place
    their writes as FdpLoad does."""
    FLUSH = 0.005
    TRANSITIONS = ("flush", "zeroes", "dsm", "cache-off")
    READS = 0.1

    def __init__(self, kind, *args):
        super().__init__(kind, *args)
        self.cache_off = not kind.plp and self.rng.random() < 0.25
        self.place = isinstance(kind, Fdp)

    def next(self):
        if self.cache_off and self.rng.random() < 0.002:
            self.cache_off = False
            return Req(self.new_op("cache-off"), nvme.ADM_SET_FEATURES, nvme.FEAT_VWC,
                       admin=True)
        req = super().next()
        if self.place:
            FdpLoad.place(self, req)
        return req


class FdpLoad(BlackboxLoad):
    """Writes carry the Data Placement directive: placement handle 0..2, or 7 (invalid:
    the drive writes it through handle 0)."""
    PIDS = (0, 1, 2, 2, 7)

    def next(self):
        return self.place(super().next())

    def place(self, req):
        if req and req.op.op == "write":
            req.cdw12 |= 2 << 20                    # DTYPE: Data Placement
            req.cdw13 = self.rng.choice(FdpLoad.PIDS) << 16
        return req


# --- the drive: one QEMU, queues, and the load's own submission and completion path ---

class Slot:
    """Guest memory for one command in flight: data, its PRP list, OOB, LBA list."""

    def __init__(self, alloc, index):
        self.cid = index
        self.data = alloc.alloc(MAX_BYTES)
        self.prp_list = alloc.alloc(PAGE)
        self.meta = alloc.alloc(PAGE)
        self.lbas = alloc.alloc(PAGE)
        self.pages = [self.data + PAGE * i for i in range(1, MAX_BYTES // PAGE)]


class Drive:
    """One QEMU on the drive's file (extra: more device properties), the controller on,
    QUEUES I/O queue pairs, and guest memory for the commands the load keeps in flight."""

    def __init__(self, kind, path, workdir, extra=""):
        self.kind = kind
        cfg = kind.dev(path)
        if extra:
            cfg = dataclasses.replace(cfg, extra=cfg.extra + "," + extra)
        self.m = Machine(cfg, workdir)
        self.qt = self.m.qt
        try:
            self.setup()
        except BaseException:
            self.m.close()
            raise
        self.events = 0
        self.turn = 0

    def setup(self):
        self.ctrl = self.m.ctrl
        self.ctrl.enable(css=self.kind.css)
        self.sqs = [self.ctrl.create_io_queues(q, entries=ENTRIES)
                    for q in range(1, QUEUES + 1)]
        self.free = {sq.qid: [Slot(self.ctrl.alloc, i) for i in range(QD)]
                     for sq in self.sqs}
        # two for the admin queue, with CIDs apart from the controller's own
        self.free[0] = [Slot(self.ctrl.alloc, 0x8000 + i) for i in range(2)]
        self.pending = {}           # (qid, cid) -> (Op, Slot)
        self.read_lens = {}         # seq -> bytes, of the reads in flight

    def power_on(self):
        """After a power cut: power back in this QEMU (a machine reset), the controller
        and queues set up again; the commands in flight at the cut are gone."""
        r = self.m.qmp("system_reset")
        if "error" in r:
            raise RuntimeError("system_reset: %s" % r)
        self.m.rebind()
        self.setup()

    # -- the load's path: one qtest batch per submission and per poll --

    def submit(self, req):
        self.turn += 1
        sq = self.ctrl.admin if req.admin else self.sqs[self.turn % len(self.sqs)]
        slot = self.free[sq.qid].pop()
        b64 = lambda d: base64.b64encode(d).decode()
        lines = []
        prp1 = prp2 = mptr = 0
        if req.data:
            lines.append("b64write 0x%x 0x%x %s" % (slot.data, len(req.data), b64(req.data)))
        n = len(req.data) or req.read_len
        if n:
            assert n <= MAX_BYTES
            prp1 = slot.data
            pages = slot.pages[:(n + PAGE - 1) // PAGE - 1]
            if len(pages) == 1:
                prp2 = pages[0]
            elif pages:
                lst = struct.pack("<%dQ" % len(pages), *pages)
                lines.append("b64write 0x%x 0x%x %s" % (slot.prp_list, len(lst), b64(lst)))
                prp2 = slot.prp_list
        if req.meta:
            lines.append("b64write 0x%x 0x%x %s" % (slot.meta, len(req.meta), b64(req.meta)))
            mptr = slot.meta
        cdw10, cdw11 = req.cdw10, req.cdw11
        if req.lbas is not None:
            if len(req.lbas) == 1:
                cdw10, cdw11 = req.lbas[0] & 0xFFFFFFFF, req.lbas[0] >> 32
            else:
                lst = struct.pack("<%dQ" % len(req.lbas), *req.lbas)
                lines.append("b64write 0x%x 0x%x %s" % (slot.lbas, len(lst), b64(lst)))
                cdw10, cdw11 = slot.lbas & 0xFFFFFFFF, slot.lbas >> 32
        sqe = nvme.cmd(req.opc, nsid=1, prp1=prp1, prp2=prp2, mptr=mptr, cdw3=req.cdw3,
                       cdw10=cdw10, cdw11=cdw11, cdw12=req.cdw12, cdw13=req.cdw13)
        struct.pack_into("<H", sqe, 2, slot.cid)
        lines.append("b64write 0x%x 0x40 %s" % (sq.addr + sq.tail * 64, b64(bytes(sqe))))
        sq.tail = (sq.tail + 1) % sq.size
        lines.append("writel 0x%x 0x%x" % (self.ctrl.bar + self.ctrl.sq_doorbell(sq.qid),
                                           sq.tail))
        self.events += 1
        req.op.sub = self.events    # (numbered first: QEMU may die in the batch)
        self.pending[(sq.qid, slot.cid)] = (req.op, slot)
        self.read_lens[req.op.seq] = req.read_len
        self.qt.cmds(lines)

    def poll(self):
        """Every new completion: [(Op, Completion)], each op's ack and status set."""
        cqs = [self.ctrl.admin.cq] + [sq.cq for sq in self.sqs]
        answers = self.qt.cmds(["b64read 0x%x 0x%x" % (cq.addr, cq.size * 16) for cq in cqs])
        done, ring = [], []
        for cq, ans in zip(cqs, answers):
            raw = base64.b64decode(ans)
            found = self.ctrl.consume(cq, lambda i: raw[i * 16:(i + 1) * 16])
            for c in found:
                op, slot = self.pending.pop((c.sqid, c.cid))
                n = self.read_lens.pop(op.seq, 0)
                if n:
                    # what the read returned, before the slot is used again
                    op.read_data = base64.b64decode(self.qt.cmds(
                        ["b64read 0x%x 0x%x" % (slot.data, n)])[0])
                self.free[c.sqid].append(slot)
                self.events += 1
                op.ack = self.events
                op.status = c.sct << 8 | c.sc
                if op.op == "append":
                    op.result_lba = nvme.append_lba(c)
                done.append((op, c))
            if found:
                ring.append("writel 0x%x 0x%x" % (self.ctrl.bar + self.ctrl.cq_doorbell(cq.qid),
                                                  cq.head))
        if ring:
            self.qt.cmds(ring)
        return done

    def drain(self, timeout=30.0):
        """Wait for every command in flight (a clean end of a load)."""
        end = time.monotonic() + timeout
        while self.pending:
            if not self.poll():
                if time.monotonic() > end:
                    raise nvme.NvmeTimeout("%d commands did not complete" % len(self.pending))
                time.sleep(0.001)

    def power_cut(self):
        """QMP power-cut (the device stops under its lock, between two passes): the
        units its write buffer lost or (wb_plp) programmed on the capacitors."""
        r = self.m.qmp("qom-set", path="/machine/peripheral/femu0", property="power-cut",
                       value=True)
        if "error" in r:
            raise RuntimeError("power-cut: %s" % r)
        st = ftl_counters(self)
        return st["wb_plp_units"] + st["wb_lost_units"]

    def kill(self):
        """SIGKILL now: no shutdown of any kind."""
        pid = self.qt.pid
        if pid:
            os.kill(pid, signal.SIGKILL)
        try:
            self.qt.kill()
        finally:
            self.m.close()

    def close(self):
        self.ctrl.shutdown()
        self.m.close()


class FileDrive:
    """One QEMU on a drive kept in a file (cfg.memdev_file), the controller on, one I/O
    queue pair; shut down cleanly or SIGKILLed, and started again on the same file."""

    def __init__(self, cfg, tmp_path, css=nvme.CC_CSS_NVM):
        qtest_machine.skip_unless_qemu()
        self.m = Machine(cfg, str(tmp_path))
        self.ctrl = self.m.ctrl
        self.ctrl.enable(css=css)
        self.sq = self.ctrl.create_io_queues(1, entries=64)

    def shutdown(self):
        self.ctrl.shutdown()
        self.m.close()

    def kill(self):
        pid = self.m.qt.pid
        if pid:
            os.kill(pid, signal.SIGKILL)
        try:
            self.m.qt.kill()
        finally:
            self.m.close()


def launch_message(e):
    """What QEMU said when it refused to start, without its echo of the -device option."""
    return re.sub(r"-device \S+: ", "", e.output)


def kill_after_acks(ctrl, sq, kill, want=8, seconds=5):
    """Rings sq's doorbell, reaps its completions until `want` are in (or `seconds` have
    passed), then kill()s QEMU with the rest in flight: the ids of the commands
    acknowledged, each completed without error."""
    ctrl.ring_sq(sq)
    deadline = time.monotonic() + seconds
    while len(sq.cq.done) < want and time.monotonic() < deadline:
        ctrl.reap(sq.cq)
    acked = set()
    for (_, cid), c in list(sq.cq.done.items()):
        assert c.ok, c
        acked.add(cid)
    assert acked, "no write completed in %g s" % seconds
    kill()
    return acked


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def run_load(drive, load, rng, delay, mode):
    """Send load's commands, QD at most in flight, until the kill point: `delay` seconds,
    then at once (mode "time"), right after the next doorbell ("doorbell") or the next of
    the load's TRANSITIONS ("transition": zone reset, finish, close, Flush; chunk reset;
    blackbox Flush, Write Zeroes, Deallocate), with a random spin after the doorbell; or
    earlier if QEMU dies (at an x-crash-at point). Returns (commands in flight at the
    end, whether QEMU died by itself)."""
    try:
        return run_until(drive, load, rng, delay, mode), False
    except (QTestError, OSError):
        # the socket goes before the process is reaped
        end = time.monotonic() + 5
        while drive.qt.alive() and time.monotonic() < end:
            time.sleep(0.01)
        if drive.qt.alive():
            raise
        return len(drive.pending), True


def run_until(drive, load, rng, delay, mode):
    t_kill = time.monotonic() + delay
    armed = False
    while True:
        for op, cpl in drive.poll():
            load.completed(op, cpl)
        if time.monotonic() >= t_kill:
            if mode == "time":
                return len(drive.pending)
            armed = True
            if time.monotonic() >= t_kill + 2.0:
                return len(drive.pending)      # no such doorbell came: kill anyway
        sent = 0
        while len(drive.pending) < QD:
            req = load.next()
            if req is None:
                break
            drive.submit(req)
            sent += 1
            if armed and (mode == "doorbell" or req.op.op in load.TRANSITIONS):
                # 1 us to 2 ms, as many of each decade: short spins land inside the command
                spin(math.exp(rng.uniform(math.log(1e-6), math.log(2e-3))))
                return len(drive.pending)
        if not sent:
            time.sleep(0.0002)


KILL_MODES = (("time", 0.3), ("doorbell", 0.25), ("transition", 0.45))
CRASH_AT = 0.2              # of the kills of a kind with crash points, at one of them
START_KILLS = 0.15          # of the kills, followed by a start killed too


class Campaign:
    """Kills of one kind on one file: each start checks the previous kill, then loads."""

    def __init__(self, kind, seed, workdir, log=print, max_delay=1.5):
        self.kind, self.seed, self.workdir, self.log = kind, seed, workdir, log
        self.rng = random.Random(seed)
        self.path = os.path.join(workdir, kind.name + ".img")
        if os.path.exists(self.path):
            os.unlink(self.path)    # a campaign starts on a new drive (a kept workdir)
        self.max_delay = max_delay
        self.layout = self.state = self.ops = None
        self.seq = 0
        self.gens = {}
        self.kills = 0
        self.totals = dict.fromkeys(("kills", "crash points", "start kills", "acked writes",
                                     "writes checked", "blocks checked", "in flight at kills",
                                     "alternatives taken", "violations") + (
            ("power cuts", "powered on in place", "units at cuts", "rolled back",
             "unflushed kept", "reads checked")
            if kind.POWER_CUTS else ()), 0)
        self.failures = []          # (what came before, Result text)
        self.t_start = None
        self.ftl_memo = None        # what the last FTL check saw (check_ftl)
        self.live = None            # a drive powered back on in place, checked next

    def start(self, extra="", drive=None):
        """A new QEMU on the file (or drive, powered on again in place), the last round
        checked."""
        t = time.monotonic()
        if drive is None:
            drive = Drive(self.kind, self.path, self.workdir, extra)
            self.t_start = self.t_start or time.monotonic() - t
        try:
            if self.layout is None:
                self.layout = self.kind.layout(drive.ctrl)
                self.state = kc.fresh_state(self.layout)
            views = self.kind.views(drive, self.layout)
            res = kc.check(self.layout, self.state, self.ops or [], views)
            if views and hasattr(drive, "ftl"):
                drive.views_data = views[0].data
                lines, self.ftl_memo = self.kind.check_ftl(drive, self.ops or [], self.ftl_memo)
                res.violations += lines
        except BaseException:
            drive.kill()
            raise
        self.state = res.state
        return drive, res

    def record(self, res, what):
        for k in ("acked writes", "writes checked", "blocks checked", "alternatives taken",
                  "rolled back", "unflushed kept"):
            if k in self.totals:
                self.totals[k] += res.counts[k]
        if not res.ok:
            self.totals["violations"] += len(res.violations)
            self.failures.append((what, res.text()))
            self.log("%s: seed %d, %s\n%s" % (self.kind.name, self.seed, what, res.text()))

    def kill_once(self):
        rng = self.rng
        mode = rng.choices([m for m, _ in KILL_MODES], [w for _, w in KILL_MODES])[0]
        delay = rng.uniform(0.02, self.max_delay)
        extra = ""
        live, self.live = self.live, None
        if self.kind.CRASH_POINTS and rng.random() < CRASH_AT and not live:
            # the device kills itself at the Nth pass through a point between two saves
            # (SIGKILL after the delay if the load passed it fewer times)
            point, rate = rng.choice(self.kind.CRASH_POINTS)
            extra = "x-crash-at=%s:%d" % (point, rng.randint(1, max(1, int(rate * delay))))
            mode = "time"
        drive, res = self.start(extra, live)
        self.record(res, self.last or "the first start")
        self.kills += 1
        load = self.kind.load(self.layout, self.state, rng, self.seq, self.gens)
        cut = self.kind.POWER_CUTS and rng.random() < self.kind.POWER_CUTS
        # half the cuts: power back in the same QEMU (its in-memory state goes on)
        in_place = cut and rng.random() < 0.5
        try:
            inflight, died = run_load(drive, load, rng, delay, mode)
            if cut and not died:
                # the power cut first (what the buffer holds is lost, or with wb_plp
                # programmed on the capacitors), then SIGKILL or power back
                self.totals["units at cuts"] += drive.power_cut()
                self.totals["power cuts"] += 1
                if in_place:
                    drive.power_on()
                    self.live = drive
                    self.totals["powered on in place"] += 1
        finally:
            if self.live is None:
                drive.kill()
        if self.kind.POWER_CUTS:
            self.ftl_memo = dict(self.ftl_memo or {}, cut=cut and not died)
        self.seq = load.seq
        self.ops = [o for o in load.ops if o.op != "read"]
        if getattr(load, "reads", 0):
            self.totals["reads checked"] += load.reads
        for e in getattr(load, "read_errors", ()):
            self.totals["violations"] += 1
            self.failures.append(("kill %d's load" % (self.kills), "VIOLATION " + e))
            self.log("%s: seed %d, kill %d's load: VIOLATION %s" % (
                self.kind.name, self.seed, self.kills, e))
        self.totals["kills"] += 1
        self.totals["crash points"] += died
        self.totals["in flight at kills"] += inflight
        how = ("at %s" % extra[len("x-crash-at="):]) if died else \
            "%s after %.3f s%s%s" % (mode, delay, " (%s not reached)" % extra if extra else "",
                                     ", a power cut first" if cut else "")
        self.last = "kill %d (%s, %d commands sent, %d in flight)%s" % (
            self.kills, how, len(load.ops), inflight,
            ", power back in the same QEMU" if self.live else "")
        if rng.random() < START_KILLS and not self.live:
            self.kill_in_start()

    def kill_in_start(self):
        """A QEMU started on the file and killed during its start-up (recovery, rollback,
        clearing above write pointers): the next start must show what the kill before
        left. Half of them at the kind's start-up crash point, if it has one; the others
        (without qtest's handshake) anywhere in the first 0.2-1.2 start-up times."""
        bios = os.path.join(self.workdir, "empty-bios.bin")
        with open(bios, "wb") as f:
            f.truncate(64 << 10)
        cfg = self.kind.dev(self.path)
        point = self.kind.START_CRASH if self.rng.random() < 0.5 else None
        if point:
            cfg = dataclasses.replace(cfg, extra=cfg.extra + ",x-crash-at=" + point)
        argv = [qtest_machine.QEMU, "-display", "none", "-vga", "none", "-machine", "q35",
                "-accel", "qtest", "-qtest", "null", "-nodefaults", "-m", "256M",
                "-bios", bios] + qtest_machine.device_args(cfg, self.workdir)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        delay = 30 if point else self.rng.uniform(0.2, 1.2) * self.t_start
        try:
            p.wait(delay)
            how = "at " + point if point else "by itself after %.3f s" % delay
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            how = "after %.3f s%s" % (delay, " (%s not reached)" % point if point else "")
        self.totals["start kills"] += 1
        self.last += ", then a start killed %s" % how

    def run(self, kills):
        self.last = None
        self.live = None
        for _ in range(kills):
            self.kill_once()
        drive, res = self.start(drive=self.live)
        self.record(res, self.last or "the first start")
        drive.close()
        return self.totals
