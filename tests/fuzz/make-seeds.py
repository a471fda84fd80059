#!/usr/bin/env python3
"""Seed corpus for the femu targets of QEMU's generic fuzzer (generic-fuzz-femu-MODE).

Each seed plays a host driver the way generic_fuzz.c lets an input do it: it enables the
controller (AQA, ASQ, ACQ, CC), creates an I/O queue pair, and then issues commands. A
command reaches the device as a DMA pattern: before ringing a doorbell the seed clears the
patterns and adds the 64-byte command as the first one, so the device's read of the
submission queue slot is filled with it; PRP lists, range lists and LBA lists are the
patterns after it, in the order the device reads them. Clock steps let commands that wait
for the flash model complete (dataplane=main-loop runs on the virtual clock).

    tests/fuzz/make-seeds.py OUTDIR [MODE...]     writes OUTDIR/MODE/NAME per seed

Modes: nossd blackbox zns whitebox mixed zns-powercut fdp fdp-powercut (all by default;
zns-powercut takes the zns seeds, fdp-powercut the fdp ones); the device each assumes is the
one of hw/femu/fuzz-targets.h.
"""

import argparse
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "qtest"))
sys.path.insert(0, os.path.dirname(HERE))
import nvme  # noqa: E402
from nvme import cmd  # noqa: E402
from fuzzinput import Input  # noqa: E402

# Guest-physical addresses (all plain RAM of the fuzzer's 512 MiB machine).
ASQ, ACQ = 0x200000, 0x201000
IOSQ, IOCQ = 0x210000, 0x212000
SQ2, CQ2 = 0x214000, 0x216000
DBS, EIS = 0x220000, 0x221000
PRP_LIST = 0x230000
LIST = 0x238000             # DSM ranges, OCSSD LBA lists
DATA = 0x300000             # data buffers, 64 KiB
META = 0x340000
MSIX_SLOTS = 0x3F0000
ADMIN_ENTRIES = 32
IO_ENTRIES = 64
MSIX_CAP = 0x40             # femu's only PCI capability
REGS, MSIX_TABLE = 0, 1     # the device's MMIO regions, in address order

# Open-Channel commands (FEMU's whitebox kind).
ADM_OC_INJECT = 0xCF
LOG_MEDIA_STATS = 0xCA

# Flexible Data Placement (the fdp kind; /work/fdp-spec.md, docs/fdp.md)
ADM_DIRECTIVE_SEND, ADM_DIRECTIVE_RECV = 0x19, 0x1A
IO_MGMT_RECV, IO_MGMT_SEND = 0x12, 0x1D
LOG_ENDGRP, LOG_FDP_CONFS, LOG_FDP_RUH_USAGE, LOG_FDP_STATS, LOG_FDP_EVENTS = \
    0x09, 0x20, 0x21, 0x22, 0x23
FEAT_FDP, FEAT_FDP_EVENTS = 0x1D, 0x1E
FDP_EVENT_TYPES = bytes([0x00, 0x01, 0x02, 0x03, 0x80, 0x81])
DTYPE_PLACEMENT = 2


class Host:
    """One seed: a driver with an admin queue pair and I/O queue pair 1."""

    def __init__(self, css=nvme.CC_CSS_ALL):
        self.inp = Input()
        self.css = css
        self.tail = {}
        self.head = {}
        self.size = {}

    # -- registers
    def reg(self, off, value, size=4):
        self.inp.mmio_write(off, value, size, REGS)

    def doorbell(self, qid, cq, value):
        self.reg(nvme.REG_DBS + (2 * qid + cq) * 4, value)

    def enable(self, entries=ADMIN_ENTRIES):
        self.reg(nvme.REG_AQA, (entries - 1) << 16 | (entries - 1))
        self.reg(nvme.REG_ASQ, ASQ, 8)
        self.reg(nvme.REG_ACQ, ACQ, 8)
        self.reg(nvme.REG_CC, nvme.CC_EN | nvme.CC_IOSQES | nvme.CC_IOCQES | self.css << 4)
        self.tail[0] = self.head[0] = 0
        self.size[0] = entries

    def disable(self):
        self.reg(nvme.REG_CC, nvme.CC_IOSQES | nvme.CC_IOCQES | self.css << 4)

    # -- commands
    def submit(self, qid, sqe, patterns=(), steps=0, completions=1, count=1):
        """Rings SQ qid for `count` copies of sqe (read from the patterns in turn: the
        command first, then what it points to), steps the clock, then frees the CQ slots."""
        inp = self.inp
        inp.clear_dma_patterns()
        sqe = bytearray(sqe)
        struct.pack_into("<H", sqe, 2, 0x100 + self.tail[qid])    # CID
        inp.dma_pattern(sqe)
        for p in patterns:
            inp.dma_pattern(*p) if isinstance(p, tuple) else inp.dma_pattern(p)
        self.tail[qid] = (self.tail[qid] + count) % self.size[qid]
        self.doorbell(qid, 0, self.tail[qid])
        for _ in range(steps):
            inp.clock_step()
        self.head[qid] = (self.head[qid] + completions * count) % self.size[qid]
        self.doorbell(qid, 1, self.head[qid])

    def admin(self, sqe, patterns=(), steps=0, completions=1):
        self.submit(0, sqe, patterns, steps, completions)

    def io(self, sqe, patterns=(), steps=3, count=1):
        self.submit(1, sqe, patterns, steps, 1, count)

    def create_queues(self, qid=1, sq=IOSQ, cq=IOCQ, entries=IO_ENTRIES, vector=None):
        vector = qid if vector is None else vector
        self.admin(cmd(nvme.ADM_CREATE_CQ, prp1=cq, cdw10=(entries - 1) << 16 | qid,
                       cdw11=vector << 16 | 3))
        self.admin(cmd(nvme.ADM_CREATE_SQ, prp1=sq, cdw10=(entries - 1) << 16 | qid,
                       cdw11=qid << 16 | 1))
        self.tail[qid] = self.head[qid] = 0
        self.size[qid] = entries

    def msix(self, vectors=3):
        """MSI-X on, each vector writing to its own RAM slot."""
        for v in range(vectors):
            base = 16 * v
            self.inp.mmio_write(base, MSIX_SLOTS + 4 * v, 4, MSIX_TABLE)
            self.inp.mmio_write(base + 4, 0, 4, MSIX_TABLE)
            self.inp.mmio_write(base + 8, 0xC0DE00 + v, 4, MSIX_TABLE)
            self.inp.mmio_write(base + 12, 0, 4, MSIX_TABLE)
        self.inp.pci_write(MSIX_CAP + 2, 0x8000, 2)

    def bytes(self):
        return self.inp.bytes()


def prp_list(first, pages):
    """A PRP list pattern: 8-byte entries first, first + 4 KiB, ... (byte 1 grows by 0x10)."""
    return (struct.pack("<Q", first), 1, 0x10)


def rw(opc, nsid, slba, nlb, length=None, **kw):
    """Read/Write/Compare of nlb blocks at DATA; PRP2 a page or a list as length needs."""
    length = length or nlb * 512
    prp2 = DATA + 4096 if length > 4096 else 0
    if length > 8192:
        prp2 = PRP_LIST
    return cmd(opc, nsid=nsid, prp1=DATA, prp2=prp2, cdw10=slba & 0xFFFFFFFF,
               cdw11=slba >> 32, cdw12=(nlb - 1) | kw.pop("cdw12", 0), **kw)


def rw_patterns(length):
    """What a command of rw() reads after itself: a PRP list when it has one, then data."""
    out = []
    if length > 8192:
        out.append(prp_list(DATA + 4096, length // 4096 - 1))
    out.append(bytes(range(1, 256)))
    return out


# ---- seeds common to every mode ----

def seed_identify(nsids, csis):
    h = base()
    for cns, nsid, csi in [(1, 0, 0), (0, nsids[0], 0), (2, 0, 0), (3, nsids[0], 0),
                           (8, 0, 0), (0x1C, 0, 0), (0, 0xFFFFFFFF, 0), (0, 99, 0)] + \
            [(c, n, csi) for csi in csis for (c, n) in
             [(5, nsids[-1]), (6, 0), (7, 0)]] + [(0, n, 0) for n in nsids[1:]]:
        h.admin(cmd(nvme.ADM_IDENTIFY, nsid=nsid, prp1=DATA, cdw10=cns, cdw11=csi << 24))
    return h


def seed_features():
    h = base()
    fids = [nvme.FEAT_ARBITRATION, nvme.FEAT_POWER_MGMT, nvme.FEAT_TEMP_THRESH,
            nvme.FEAT_ERROR_RECOVERY, nvme.FEAT_VWC, nvme.FEAT_NUM_QUEUES,
            nvme.FEAT_IRQ_COALESCE, nvme.FEAT_IRQ_CONFIG, nvme.FEAT_WRITE_ATOMICITY,
            nvme.FEAT_ASYNC_EVENT, 0x19, 0x7F]
    for fid in fids:
        for sel in (0, 1, 3):
            h.admin(cmd(nvme.ADM_GET_FEATURES, nsid=1, cdw10=sel << 8 | fid, cdw11=1))
    values = {nvme.FEAT_TEMP_THRESH: 0x100, nvme.FEAT_ERROR_RECOVERY: 1 << 16,
              nvme.FEAT_NUM_QUEUES: 0x00010001, nvme.FEAT_IRQ_CONFIG: 1,
              nvme.FEAT_ASYNC_EVENT: 0x1FF}
    for fid in fids:
        h.admin(cmd(nvme.ADM_SET_FEATURES, nsid=1, cdw10=fid, cdw11=values.get(fid, 1)))
    h.admin(cmd(nvme.ADM_SET_FEATURES, cdw10=1 << 31 | nvme.FEAT_VWC, cdw11=0))
    return h


def seed_logs(chunk_nsids=()):
    h = base()
    for lid, numd in [(nvme.LOG_ERROR, 16), (nvme.LOG_SMART, 128), (nvme.LOG_FW_SLOT, 128),
                      (nvme.LOG_CMD_EFFECTS, 1024), (LOG_MEDIA_STATS, 1024), (0x77, 4)]:
        h.admin(cmd(nvme.ADM_GET_LOG_PAGE, nsid=0xFFFFFFFF, prp1=DATA, prp2=DATA + 4096,
                    cdw10=(numd - 1) << 16 | lid))
    h.admin(cmd(nvme.ADM_GET_LOG_PAGE, nsid=1, prp1=DATA, cdw10=127 << 16 | nvme.LOG_SMART))
    h.admin(cmd(nvme.ADM_GET_LOG_PAGE, nsid=0xFFFFFFFF, prp1=DATA, prp2=DATA + 4096,
                cdw10=511 << 16 | LOG_MEDIA_STATS, cdw12=100))
    for nsid in chunk_nsids:
        for off in (0, 64):
            h.admin(cmd(nvme.ADM_GET_LOG_PAGE, nsid=nsid, prp1=DATA, prp2=DATA + 4096,
                        cdw10=511 << 16 | LOG_MEDIA_STATS, cdw12=off))
    return h


def seed_queues():
    h = base()
    h.create_queues(2, SQ2, CQ2, 16, vector=2)
    h.submit(2, cmd(nvme.IO_FLUSH, nsid=1), steps=2)
    h.admin(cmd(nvme.ADM_DELETE_CQ, cdw10=2))                   # still has an SQ
    h.admin(cmd(nvme.ADM_DELETE_SQ, cdw10=2))
    h.admin(cmd(nvme.ADM_DELETE_CQ, cdw10=2))
    h.admin(cmd(nvme.ADM_DELETE_SQ, cdw10=7))
    h.admin(cmd(nvme.ADM_CREATE_CQ, prp1=CQ2, cdw10=15 << 16 | 2, cdw11=9 << 16 | 3))
    h.admin(cmd(nvme.ADM_CREATE_SQ, prp1=SQ2, cdw10=15 << 16 | 2, cdw11=5 << 16 | 1))
    h.admin(cmd(nvme.ADM_CREATE_CQ, prp1=CQ2 + 8, cdw10=15 << 16 | 2, cdw11=1))
    h.admin(cmd(nvme.ADM_CREATE_SQ, prp1=SQ2, cdw10=0xFFFF << 16 | 2, cdw11=1 << 16 | 1))
    return h


def seed_aer():
    h = base()
    h.admin(cmd(nvme.ADM_ASYNC_EVENT), completions=0)
    h.admin(cmd(nvme.ADM_ASYNC_EVENT), completions=0)
    h.admin(cmd(nvme.ADM_ABORT, cdw10=(0x100 + 3) << 16 | 0), completions=2)
    h.doorbell(9, 0, 1)                                 # no such queue: an error event
    h.doorbell(1, 0, IO_ENTRIES + 5)                    # out of range: another
    h.admin(cmd(nvme.ADM_GET_LOG_PAGE, nsid=0xFFFFFFFF, prp1=DATA,
                cdw10=15 << 16 | nvme.LOG_ERROR))
    h.admin(cmd(nvme.ADM_SET_FEATURES, cdw10=nvme.FEAT_TEMP_THRESH, cdw11=0x10))
    for _ in range(5):
        h.admin(cmd(nvme.ADM_ASYNC_EVENT), completions=0)
    return h


def seed_shadow_doorbells():
    h = base()
    h.admin(cmd(nvme.ADM_DBBUF_CONFIG, prp1=DBS, prp2=EIS))
    # SQ 1's shadow tail is read before the command: it comes from the first pattern (each
    # later operation refills it from the patterns in turn, whatever they are)
    inp = h.inp
    for tail in (1, 2, 3):
        inp.clear_dma_patterns()
        inp.dma_pattern(struct.pack("<I", tail))
        sqe = cmd(nvme.IO_WRITE, nsid=1, prp1=DATA)
        inp.dma_pattern(sqe)
        h.doorbell(1, 0, tail)
    return h


def seed_lifecycle():
    h = base()
    h.msix()
    h.io(cmd(nvme.IO_FLUSH, nsid=1))
    h.reg(nvme.REG_INTMS, 1)
    h.reg(nvme.REG_INTMC, 1)
    h.inp.mmio_read(nvme.REG_CSTS)
    h.inp.mmio_read(nvme.REG_CAP, 8)
    h.reg(nvme.REG_CC, nvme.CC_EN | nvme.CC_IOSQES | nvme.CC_IOCQES | h.css << 4
          | nvme.CC_SHN_NORMAL)
    h.disable()
    h.enable()
    h.create_queues()
    h.io(rw(nvme.IO_WRITE, 1, 0, 8), rw_patterns(4096))
    h.disable()
    h.reg(nvme.REG_ASQ, 0xFFFFF000, 8)                  # outside RAM: fatal status
    h.reg(nvme.REG_CC, nvme.CC_EN | nvme.CC_IOSQES | nvme.CC_IOCQES)
    h.disable()
    return h


def seed_nvm_io(nsid=1, slba=0, steps=3):
    """Every NVM command with PRP1, PRP1+PRP2, a PRP list and an SGL."""
    h = base()
    for nlb in (1, 16, 64):
        h.io(rw(nvme.IO_WRITE, nsid, slba, nlb), rw_patterns(nlb * 512), steps)
        h.io(rw(nvme.IO_READ, nsid, slba, nlb), rw_patterns(nlb * 512), steps)
    h.io(rw(nvme.IO_COMPARE, nsid, slba, 8), rw_patterns(4096), steps)
    h.io(cmd(nvme.IO_WRITE_ZEROES, nsid=nsid, cdw10=slba + 64, cdw12=15), (), steps)
    h.io(cmd(nvme.IO_DSM, nsid=nsid, prp1=LIST, cdw10=1, cdw11=4),
         [struct.pack("<IIQ", 0, 16, slba + 128)], steps)
    h.io(cmd(nvme.IO_FLUSH, nsid=nsid), (), steps)
    h.io(cmd(nvme.IO_FLUSH, nsid=0xFFFFFFFF), (), steps)
    sgl = nvme.sgl_desc(DATA, 4096)
    h.io(cmd(nvme.IO_WRITE, nsid=nsid, sgl=sgl, cdw10=slba, cdw12=7), [bytes(range(3, 200))],
         steps)
    seg = nvme.sgl_desc(LIST, 32, nvme.SGL_LAST_SEGMENT)
    h.io(cmd(nvme.IO_READ, nsid=nsid, sgl=seg, cdw10=slba, cdw12=7),
         [(nvme.sgl_desc(DATA, 2048), 1, 0x08)], steps)
    h.io(cmd(nvme.IO_READ, nsid=nsid, cdw10=0xFFFFFF00, cdw12=7, prp1=DATA), (), steps)
    h.io(cmd(0x7E, nsid=nsid), (), steps)
    return h


def seed_burst(sqe, h=None, rounds=4, steps=IO_ENTRIES - 1):
    """Full submission queues of one command: the model under load (GC, full zones). The
    command is the only pattern, so every slot and the data (at most two pages, no PRP
    list) read as it: any other pattern would be out of turn after the first command. A
    clock step per command: each step reaches only the next deadline."""
    h = h or base()
    for _ in range(rounds):
        h.io(sqe, (), steps, count=IO_ENTRIES - 1)
    return h


# ---- per mode ----

def base(css=nvme.CC_CSS_ALL):
    h = Host(css)
    h.enable()
    h.create_queues()
    return h


def seeds_common(nsids, csis=(0,), chunk_nsids=()):
    return {
        "identify": seed_identify(nsids, csis),
        "features": seed_features(),
        "logs": seed_logs(chunk_nsids),
        "queues": seed_queues(),
        "aer-abort": seed_aer(),
        "shadow-doorbells": seed_shadow_doorbells(),
        "lifecycle": seed_lifecycle(),
    }


def base_zoned(nsid):
    """base(), and every zone of the namespace Empty: the drive keeps its zones across the
    fuzzer's resets, whatever an earlier input did to them."""
    h = base()
    h.io(cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, cdw13=1 << 8 | nvme.ZSA_RESET), steps=4)
    return h


def seeds_zoned(nsid, zone_lbas, zones):
    out = {}
    h = base_zoned(nsid)
    for zsa in (nvme.ZSA_OPEN, nvme.ZSA_CLOSE, nvme.ZSA_FINISH, nvme.ZSA_RESET,
                nvme.ZSA_OPEN, nvme.ZSA_OFFLINE, 0x77):
        h.io(cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, cdw10=zone_lbas, cdw13=zsa))
    for zsa in (nvme.ZSA_OPEN, nvme.ZSA_CLOSE, nvme.ZSA_FINISH, nvme.ZSA_RESET):
        h.io(cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, cdw13=1 << 8 | zsa))
    h.io(cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, prp1=DATA, cdw10=2 * zone_lbas,
             cdw13=nvme.ZSA_SET_ZDE), [b"zone-extension-"])
    out["zns-send"] = h
    h = base_zoned(nsid)
    for zra, zrasf, partial in [(0, 0, 0), (1, 0, 0), (0, 1, 1), (0, 4, 0), (1, 5, 1),
                                (0, 0xFF, 0)]:
        h.io(cmd(nvme.IO_ZONE_MGMT_RECV, nsid=nsid, prp1=DATA, prp2=DATA + 4096,
                 cdw12=2047, cdw13=partial << 16 | zrasf << 8 | zra))
    h.io(cmd(nvme.IO_ZONE_MGMT_RECV, nsid=nsid, prp1=DATA, cdw10=zone_lbas, cdw12=15))
    out["zns-report"] = h
    h = base_zoned(nsid)
    for z in range(3):
        zslba = z * zone_lbas
        h.io(rw(nvme.IO_WRITE, nsid, zslba, 8, cdw3=1), rw_patterns(4096))       # protected
        h.io(rw(nvme.IO_WRITE, nsid, zslba + 8, 8), rw_patterns(4096))
        h.io(rw(nvme.IO_WRITE, nsid, zslba + 16, 8, cdw12=1 << 30), rw_patterns(4096))  # FUA
        h.io(rw(nvme.IO_ZONE_APPEND, nsid, zslba, 16), rw_patterns(8192))
        h.io(rw(nvme.IO_ZONE_APPEND, nsid, zslba, 16, cdw3=1), rw_patterns(8192))
    h.io(rw(nvme.IO_WRITE, nsid, 5, 8), rw_patterns(4096))                  # not at the WP
    h.io(cmd(nvme.IO_FLUSH, nsid=nsid), steps=8)
    out["zns-write-plp"] = h
    h = base_zoned(nsid)
    h.io(rw(nvme.IO_WRITE, nsid, 0, 64), rw_patterns(32768))
    for i in range(8):                                                      # read-ahead
        h.io(rw(nvme.IO_READ, nsid, 8 * i, 8), rw_patterns(4096))
    h.io(rw(nvme.IO_COMPARE, nsid, 0, 8), rw_patterns(4096))
    h.io(cmd(nvme.IO_WRITE_ZEROES, nsid=nsid, cdw10=64, cdw12=7))
    h.io(cmd(nvme.IO_DSM, nsid=nsid, prp1=LIST, cdw11=4), [struct.pack("<IIQ", 0, 8, 0)])
    h.io(cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, cdw13=1 << 8 | nvme.ZSA_FINISH), steps=8)
    h.io(cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, cdw13=1 << 8 | nvme.ZSA_RESET), steps=8)
    out["zns-read-finish"] = h
    out["zns-append-burst"] = seed_burst(rw(nvme.IO_ZONE_APPEND, nsid, zone_lbas, 16),
                                         base_zoned(nsid))
    return out


def seeds_whitebox(nsid, chunk_lbas, ws_min):
    out = {}
    h = base()
    h.admin(cmd(0xE2, nsid=nsid, prp1=DATA))
    for what in (1, 2, 3, 4, 9):
        h.admin(cmd(ADM_OC_INJECT, nsid=nsid, cdw10=what * chunk_lbas, cdw12=what))
    out["oc-admin"] = h
    h = base()
    lbas = [chunk_lbas + i for i in range(ws_min)]
    lba_list = (struct.pack("<Q", chunk_lbas), 0, 1)       # consecutive LBAs of one chunk
    meta = bytes(range(16))
    h.io(cmd(nvme.IO_VEC_RESET, nsid=nsid, cdw10=chunk_lbas, mptr=META))
    h.io(cmd(nvme.IO_VEC_WRITE, nsid=nsid, prp1=DATA, mptr=META, cdw10=LIST,
             cdw12=len(lbas) - 1), [lba_list, bytes(range(5, 250)), meta])
    h.io(cmd(nvme.IO_VEC_READ, nsid=nsid, prp1=DATA, mptr=META, cdw10=LIST,
             cdw12=len(lbas) - 1), [lba_list])
    h.io(cmd(nvme.IO_VEC_READ, nsid=nsid, prp1=DATA, cdw10=chunk_lbas))
    h.io(cmd(nvme.IO_VEC_COPY, nsid=nsid, cdw10=LIST, cdw14=LIST + 0x1000,
             cdw12=len(lbas) - 1), [lba_list, (struct.pack("<Q", 3 * chunk_lbas), 0, 1)])
    h.io(cmd(nvme.IO_VEC_RESET, nsid=nsid, prp1=DATA, mptr=META, cdw10=LIST, cdw12=1),
         [(struct.pack("<Q", chunk_lbas), 1, chunk_lbas >> 8 or 1)])
    h.io(rw(nvme.IO_WRITE, nsid, 2 * chunk_lbas, ws_min), rw_patterns(ws_min * 512))
    h.io(rw(nvme.IO_READ, nsid, 2 * chunk_lbas, ws_min), rw_patterns(ws_min * 512))
    h.io(cmd(nvme.IO_FLUSH, nsid=nsid), steps=6)
    out["oc-vector"] = h
    out["oc-write-burst"] = seed_burst(rw(nvme.IO_WRITE, nsid, 4 * chunk_lbas, ws_min))
    return out


# ---- fdp ----
# The fdp target: namespaces 1 and 2 (4096 LBAs of 512 bytes each) in endurance group 1,
# handles ii:pi:ii in 2 reclaim groups (RGIF 1: PID = RG << 15 | PHNDL index), namespace 1
# placing through RUH 0 and 1, namespace 2 through RUH 1 and 2, ERUTL 1 s.

def fdp_pid(rg, phndl):
    return rg << 15 | phndl


FDP_VALID_PIDS = [fdp_pid(rg, ph) for rg in (0, 1) for ph in (0, 1)]
FDP_INVALID_PIDS = [2, 0x7FFF, fdp_pid(1, 3)]       # handle indexes past the namespace's 2


def fdp_log(lid, numd=1024, lsp=0, rae=1, lsi=1, off=0, nsid=0xFFFFFFFF):
    """Get Log Page of the endurance group (LSI in CDW11[31:16]) into DATA, two pages."""
    return cmd(nvme.ADM_GET_LOG_PAGE, nsid=nsid, prp1=DATA, prp2=DATA + 4096,
               cdw10=((numd - 1) & 0xFFFF) << 16 | rae << 15 | lsp << 8 | lid,
               cdw11=lsi << 16 | (numd - 1) >> 16, cdw12=off & 0xFFFFFFFF, cdw13=off >> 32)


def fdp_events(h, host, rae=1):
    """Reads the FDP Events log: LSP bit 0 set, host events; clear, controller events."""
    h.admin(fdp_log(LOG_FDP_EVENTS, lsp=1 if host else 0, rae=rae))


def placed(nsid, slba, nlb, pid, dtype=DTYPE_PLACEMENT):
    """A Write with the Data Placement directive: DTYPE in CDW12[23:20], DSPEC (the
    placement identifier) in CDW13[31:16]."""
    return rw(nvme.IO_WRITE, nsid, slba, nlb, cdw12=dtype << 20, cdw13=pid << 16)


def ruh_status(nsid, numd=1024, mo=1):
    """I/O Management Receive, Reclaim Unit Handle Status (MO 1), NUMD 0-based in CDW11."""
    return cmd(IO_MGMT_RECV, nsid=nsid, prp1=DATA, prp2=DATA + 4096, cdw10=mo,
               cdw11=numd - 1)


def ruh_update(h, nsid, pids, mo=1, steps=3):
    """I/O Management Send, Reclaim Unit Handle Update (MO 1): MOS = number of PIDs - 1,
    the PIDs (u16 each) read from DATA."""
    h.io(cmd(IO_MGMT_SEND, nsid=nsid, prp1=DATA, cdw10=(len(pids) - 1) << 16 | mo),
         [struct.pack("<%dH" % len(pids), *pids)], steps)


def fdp_event_feature(h, nsid, phndl, enable, types=FDP_EVENT_TYPES, save=0):
    """Set Features FDP Events: CDW11 = NOET << 16 | PHNDL index, CDW12 bit 0 enable, the
    event types (a byte each) read from DATA."""
    h.admin(cmd(nvme.ADM_SET_FEATURES, nsid=nsid, prp1=DATA,
                cdw10=save << 31 | FEAT_FDP_EVENTS, cdw11=len(types) << 16 | phndl,
                cdw12=enable), [bytes(types)] if types else [])


def seeds_fdp():
    out = {}
    # Identify (CTRATT, ENDGIDMAX, OACS; ENDGID of each namespace), every log page of the
    # endurance group, and the refusals (another LSI, an offset past the log)
    h = base()
    for cns, nsid in [(1, 0), (0, 1), (0, 2)]:
        h.admin(cmd(nvme.ADM_IDENTIFY, nsid=nsid, prp1=DATA, cdw10=cns))
    for lid in (LOG_ENDGRP, LOG_FDP_CONFS, LOG_FDP_RUH_USAGE, LOG_FDP_STATS):
        h.admin(fdp_log(lid))
    fdp_events(h, host=True)
    fdp_events(h, host=False)
    h.admin(fdp_log(LOG_FDP_CONFS, numd=4, off=16))
    h.admin(fdp_log(LOG_FDP_CONFS, nsid=1))
    h.admin(fdp_log(LOG_FDP_CONFS, lsi=0))
    h.admin(fdp_log(LOG_FDP_STATS, lsi=2))
    h.admin(fdp_log(LOG_FDP_RUH_USAGE, off=8192))
    h.admin(fdp_log(LOG_FDP_EVENTS, numd=16, lsp=1, off=64))
    h.admin(fdp_log(nvme.LOG_CMD_EFFECTS))
    out["fdp-logs"] = h
    # Features FDP (1Dh: Get of each select, Set refused) and FDP Events (1Eh: per
    # namespace and placement handle; disabled and enabled again, so the drive, which the
    # fuzzer's resets do not restore, keeps every event enabled)
    h = base()
    for sel in (0, 1, 3):
        h.admin(cmd(nvme.ADM_GET_FEATURES, cdw10=sel << 8 | FEAT_FDP, cdw11=1))
    h.admin(cmd(nvme.ADM_GET_FEATURES, cdw10=FEAT_FDP, cdw11=0))
    h.admin(cmd(nvme.ADM_SET_FEATURES, cdw10=FEAT_FDP, cdw11=1, cdw12=1))
    h.admin(cmd(nvme.ADM_SET_FEATURES, cdw10=FEAT_FDP, cdw11=1, cdw12=1 << 8 | 1))
    h.admin(cmd(nvme.ADM_SET_FEATURES, cdw10=FEAT_FDP, cdw11=2))
    for nsid, phndl, sel in [(1, 0, 0), (1, 1, 1), (1, 1, 3), (2, 0, 0), (2, 1, 0),
                             (1, 2, 0), (0xFFFFFFFF, 0, 0)]:
        h.admin(cmd(nvme.ADM_GET_FEATURES, nsid=nsid, prp1=DATA,
                    cdw10=sel << 8 | FEAT_FDP_EVENTS, cdw11=6 << 16 | phndl))
    fdp_event_feature(h, 1, 1, 0)
    h.admin(cmd(nvme.ADM_GET_FEATURES, nsid=1, prp1=DATA, cdw10=FEAT_FDP_EVENTS,
                cdw11=6 << 16 | 1))
    h.io(placed(1, 0, 8, fdp_pid(0, 1)), rw_patterns(4096))        # no events posted
    ruh_update(h, 1, [fdp_pid(0, 1)])
    fdp_event_feature(h, 1, 1, 1)
    fdp_event_feature(h, 2, 1, 1, types=FDP_EVENT_TYPES[:3])
    fdp_event_feature(h, 2, 0, 1, types=b"\x03\x55")               # 55h: no such type
    fdp_event_feature(h, 1, 0, 1, save=1)                          # not saveable
    fdp_event_feature(h, 1, 2, 1)                                  # no PHNDL 2
    fdp_event_feature(h, 2, 0, 1, types=b"")
    out["fdp-features"] = h
    # Directive Receive (Identify, Return Parameters) and Send (Enable Directive: only the
    # state Data Placement has), on each namespace, and the refusals
    h = base()
    for nsid in (1, 2):
        h.admin(cmd(ADM_DIRECTIVE_RECV, nsid=nsid, prp1=DATA, cdw10=1023, cdw11=1))
        h.admin(cmd(ADM_DIRECTIVE_SEND, nsid=nsid, cdw11=1, cdw12=DTYPE_PLACEMENT << 8 | 1))
    for opc, nsid, dw11, dw12 in [(ADM_DIRECTIVE_SEND, 1, 1, DTYPE_PLACEMENT << 8),
                                  (ADM_DIRECTIVE_SEND, 1, 1, 1 << 8 | 1),
                                  (ADM_DIRECTIVE_RECV, 1, 2, 0),
                                  (ADM_DIRECTIVE_RECV, 1, DTYPE_PLACEMENT << 8 | 1, 0),
                                  (ADM_DIRECTIVE_RECV, 0xFFFFFFFF, 1, 0),
                                  (ADM_DIRECTIVE_SEND, 7, 1, 0)]:
        h.admin(cmd(opc, nsid=nsid, prp1=DATA, cdw10=1023, cdw11=dw11, cdw12=dw12))
    out["fdp-directives"] = h
    # Placed writes through every valid identifier of both namespaces, invalid identifiers
    # (written with handle 0 in group 0, an Invalid Placement Identifier event each),
    # another directive type (Invalid Field), writes without a directive (the groups in
    # turn); reads back, Write Zeroes and Deallocate, then the host events and the status
    # (one seed per namespace: libFuzzer's -max_len is 8192)
    for nsid, base_lba in ((1, 0), (2, 512)):
        h = base()
        for i, pid in enumerate(FDP_VALID_PIDS):
            h.io(placed(nsid, base_lba + 16 * i, 16, pid), rw_patterns(8192))
        for i, pid in enumerate(FDP_INVALID_PIDS):
            h.io(placed(nsid, base_lba + 128 + 8 * i, 8, pid), rw_patterns(4096))
        h.io(placed(nsid, base_lba + 256, 8, 0, dtype=1), rw_patterns(4096))
        h.io(rw(nvme.IO_WRITE, nsid, base_lba + 264, 8), rw_patterns(4096))
        h.io(rw(nvme.IO_WRITE, nsid, base_lba + 272, 8), rw_patterns(4096))
        h.io(rw(nvme.IO_READ, nsid, base_lba, 64), rw_patterns(32768))
        h.io(placed(nsid, 4088, 16, fdp_pid(1, 1)), rw_patterns(8192))     # past the end
        h.io(cmd(nvme.IO_WRITE_ZEROES, nsid=nsid, cdw10=base_lba + 16, cdw12=15))
        h.io(cmd(nvme.IO_DSM, nsid=nsid, prp1=LIST, cdw11=4),
             [struct.pack("<IIQ", 0, 16, base_lba + 32)])
        h.io(ruh_status(nsid))
        fdp_events(h, host=True)
        h.admin(fdp_log(LOG_FDP_STATS))
        out["fdp-placed-writes-ns%d" % nsid] = h
    # Reclaim Unit Handle Status and Update: each handle partly written, updated (RU Not
    # Fully Written events), the refusals (other MO, too long a transfer, more identifiers
    # than handles, one invalid identifier refusing the list), then the events read with
    # RAE clear (removed) and the handles' usage
    h = base()
    for nsid in (1, 2):
        for i, pid in enumerate(FDP_VALID_PIDS):
            h.io(placed(nsid, 1024 + 32 * i, 8, pid), rw_patterns(4096))
    h.io(ruh_status(1))
    h.io(ruh_status(2, numd=8))
    h.io(ruh_status(1, mo=0))
    h.io(ruh_status(1, mo=2))
    h.io(ruh_status(1, numd=32768 // 4 + 1))
    ruh_update(h, 1, [fdp_pid(0, 0), fdp_pid(1, 1)])
    ruh_update(h, 2, [fdp_pid(0, 0), fdp_pid(0, 1), fdp_pid(1, 0)])
    ruh_update(h, 1, [fdp_pid(0, 0)] * 4)                          # more than MAXPIDS + 1
    ruh_update(h, 2, [fdp_pid(1, 0), 5])                           # 5: invalid
    ruh_update(h, 1, [0], mo=0)
    ruh_update(h, 1, [0], mo=3)
    h.io(ruh_status(1))
    fdp_events(h, host=True, rae=0)
    fdp_events(h, host=True)
    h.admin(fdp_log(LOG_FDP_RUH_USAGE))
    out["fdp-ruh-update"] = h
    # The RU time limit: handles written, then more than ERUTL (1 s) of virtual time (128
    # clock steps: the machine's other timers make some steps short) closes their RUs (RU
    # Time Limit Exceeded)
    h = base()
    h.io(placed(1, 2048, 8, fdp_pid(0, 1)), rw_patterns(4096))
    h.io(placed(2, 2048, 8, fdp_pid(1, 0)), rw_patterns(4096))
    h.io(ruh_status(1))
    for _ in range(128):
        h.inp.clock_step()
    h.io(ruh_status(1))
    h.io(ruh_status(2))
    fdp_events(h, host=True)
    out["fdp-time-limit"] = h
    # A controller reset with partly written RUs (Controller Level Reset Modified RUHs),
    # then a normal shutdown with more (Implicitly Modified RUH, a controller event)
    h = base()
    for nsid in (1, 2):
        for i, pid in enumerate(FDP_VALID_PIDS):
            h.io(placed(nsid, 3072 + 16 * i, 8, pid), rw_patterns(4096))
    h.disable()
    h.enable()
    h.create_queues()
    fdp_events(h, host=True)
    h.io(placed(1, 3200, 8, fdp_pid(1, 0)), rw_patterns(4096))
    h.io(placed(2, 3200, 8, fdp_pid(0, 1)), rw_patterns(4096))
    h.reg(nvme.REG_CC, nvme.CC_EN | nvme.CC_IOSQES | nvme.CC_IOCQES | h.css << 4
          | nvme.CC_SHN_NORMAL)
    h.disable()
    h.enable()
    fdp_events(h, host=False)
    h.admin(fdp_log(LOG_FDP_STATS))
    out["fdp-reset-shutdown"] = h
    # Garbage collection in each reclaim group: rounds of 15 placed writes of 2 pages (one
    # command repeated, as seed_burst does) on other LBAs each, so that every RU of 32
    # pages keeps a round's last write and the victims hold valid data to move (Media
    # Reallocated, a controller event); the namespaces in turn, through PHNDL index rg:
    # in group 0 RUH 0 (ii) and RUH 1 (pi), in group 1 RUH 1 (pi) and RUH 2 (ii); 32 rounds
    # fill a group's 28 RUs and make it collect
    for rg in (0, 1):
        h = base()
        for r in range(32):
            h.io(placed(1 + r % 2, 1024 + 16 * r, 16, fdp_pid(rg, rg)), (), steps=15, count=15)
        fdp_events(h, host=False)
        h.admin(fdp_log(LOG_FDP_STATS))
        out["fdp-gc-rg%d" % rg] = h
    return out


# ---- paths the review of 2026-11-28 changed (since the campaign at 62dff26) ----
# Deallocate merges its ranges and runs FEMU_PASS_PAGES pages per pass (a long command,
# femu_req_run); zoned Select All Close/Finish/Reset/Offline run the same way; Write
# Zeroes and Deallocate clear partial pages at their edges; FDP answers Identify CNS 19h.

DSM_AD = 1 << 2             # CDW11.AD: deallocate
WZ_DEAC = 1 << 25           # Write Zeroes CDW12.DEAC
IO_FUA = 1 << 30            # CDW12.FUA
CNS_ENDGRP_LIST = 0x19
SMALL_DATA = b"\xa5\x5a\x3c\xc3"    # data of a write, repeated: keeps a seed short


def dsm(nsid, nr):
    """Dataset Management, Deallocate, nr ranges read from LIST."""
    return cmd(nvme.IO_DSM, nsid=nsid, prp1=LIST, cdw10=nr - 1, cdw11=DSM_AD)


def dsm_ranges(ranges):
    """The range list of (slba, nlb) pairs, a 16-byte entry each."""
    return b"".join(struct.pack("<IIQ", 0, nlb, slba) for slba, nlb in ranges)


def whole_ranges(nsze, short=0):
    """256 overlapping ranges whose union is the whole namespace but its last `short` LBAs,
    [k, k + nsze - short - 255) for k = 0..255: one entry repeated, its SLBA's low byte
    growing by one each time."""
    return (struct.pack("<IIQ", 0, nsze - short - 255, 0), 8, 1)


def write_zeroes(nsid, slba, nlb, flags=0, **kw):
    return cmd(nvme.IO_WRITE_ZEROES, nsid=nsid, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
               cdw12=flags | (nlb - 1), **kw)


def seed_dsm_long(nsid, nsze, short=0, reset=False):
    """A full SQ 1 of Deallocates of 256 overlapping ranges (whole_ranges), a write and a
    read on SQ 2 while they run, then Delete I/O SQ 1 (the running ones end Aborted due to
    SQ Deletion) or a controller reset; then the drive used again, and a burst left running
    for the fuzzer's machine reset.
    The patterns are taken in turn by every DMA access to a region not yet filled in the
    operation, the device's writes included: a completion writes its entry in two, and the
    ranges are filled once per operation (the later commands of the burst read the same
    LIST). So the burst's slots after the second alternate between the Deallocate and the
    ranges read as a command (Invalid Namespace): deterministic, and about half of the 63
    are Deallocates. While they run (and complete, whenever), a submission has at most two
    patterns, the command and what it reads, so that completions keep them in turn.
    On the fuzz nossd drive (512 MiB namespaces) a whole one takes 8 passes, and each
    operation of an input (a doorbell, a DMA pattern, a clock step) runs at most 10: the
    32 Deallocates, 256 passes, still run when Delete I/O SQ or the reset comes, about 150
    passes on."""
    h = base()
    h.create_queues(2, SQ2, CQ2, 16, vector=2)
    h.io(rw(nvme.IO_WRITE, nsid, 64, 16), rw_patterns(8192))
    h.submit(1, dsm(nsid, 256), [whole_ranges(nsze, short)], completions=0,
             count=IO_ENTRIES - 1)
    h.submit(2, rw(nvme.IO_WRITE, nsid, 96, 8), [SMALL_DATA], steps=1)
    h.submit(2, rw(nvme.IO_READ, nsid, 64, 16), (), steps=1)
    if reset:
        h.disable()
        h.enable()
        h.create_queues()
    else:
        h.admin(cmd(nvme.ADM_DELETE_SQ, cdw10=1))
        h.admin(cmd(nvme.ADM_DELETE_CQ, cdw10=1))
        h.create_queues()
    h.io(rw(nvme.IO_READ, nsid, 64, 16), (), steps=2)
    h.submit(1, dsm(nsid, 256), [whole_ranges(nsze, short)], completions=0, count=4)
    return h


def seed_zeroes_edges(nsid, nsze, steps=3):
    """Write Zeroes (with and without DEAC, FUA) and Deallocate whose ranges start and end
    inside flash pages, over written data; ranges overlapping, touching the end, past it
    (refused whole); the data read back."""
    h = base()
    h.io(rw(nvme.IO_WRITE, nsid, 0, 64), rw_patterns(32768), steps)
    for slba, nlb, flags in [(1, 6, 0), (3, 21, 0), (9, 62, WZ_DEAC), (17, 1, WZ_DEAC),
                             (33, 15, IO_FUA), (nsze - 5, 5, 0), (nsze - 13, 11, WZ_DEAC),
                             (nsze - 3, 8, 0)]:
        h.io(write_zeroes(nsid, slba, nlb, flags), (), steps)
    h.io(rw(nvme.IO_WRITE, nsid, 64, 64), rw_patterns(32768), steps)
    h.io(dsm(nsid, 7), [dsm_ranges([(69, 13), (90, 3), (64, 1), (nsze - 3, 3), (74, 20),
                                    (93, 0), (101, 11)])], steps)
    h.io(dsm(nsid, 2), [dsm_ranges([(120, 5), (nsze - 4, 8)])], steps)
    h.io(rw(nvme.IO_READ, nsid, 0, 64), (), steps)
    h.io(rw(nvme.IO_READ, nsid, 64, 64), (), steps)
    return h


def seeds_long(nsid, nsze):
    """The second leaves the last 192 LBAs out: on the 4 MiB drives a Deallocate then costs
    1000 flash pages, which do not divide FEMU_PASS_PAGES, so that a pass's pages run out
    inside one (whole, 1024 pages, they run out between two)."""
    return {"dsm-long-sq-delete": seed_dsm_long(nsid, nsze),
            "dsm-long-reset": seed_dsm_long(nsid, nsze, short=192, reset=True),
            "zeroes-dsm-edges": seed_zeroes_edges(nsid, nsze)}


def zone_states(h, nsid, zone_lbas, zones):
    """From all Empty, zones in each state: 0 Closed, 1 (and 2) Implicitly Opened, the
    next to last Explicitly Opened, the last Full; the rest Empty."""
    for z in range(min(3, zones - 2)):
        h.io(rw(nvme.IO_WRITE, nsid, z * zone_lbas, 8), [SMALL_DATA])
    h.io(cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, cdw10=0, cdw13=nvme.ZSA_CLOSE))
    h.io(cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, cdw10=(zones - 2) * zone_lbas,
             cdw13=nvme.ZSA_OPEN))
    h.io(cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, cdw10=(zones - 1) * zone_lbas,
             cdw13=nvme.ZSA_FINISH))


def select_all(nsid, zsa):
    return cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, cdw13=1 << 8 | zsa)


def seeds_zoned_review(nsid, zone_lbas, nsze):
    out = {}
    zones = nsze // zone_lbas
    # Select All Close, Open, Finish, Reset and Offline (the long ones in steps) over zones
    # in every state; again in bursts; the zones reported at the end
    h = base_zoned(nsid)
    report = cmd(nvme.IO_ZONE_MGMT_RECV, nsid=nsid, prp1=DATA, cdw12=1023)
    for zsa in (nvme.ZSA_CLOSE, nvme.ZSA_OPEN, nvme.ZSA_FINISH, nvme.ZSA_RESET,
                nvme.ZSA_OFFLINE):
        zone_states(h, nsid, zone_lbas, zones)
        h.io(select_all(nsid, zsa), (), steps=6)
        h.io(select_all(nsid, nvme.ZSA_RESET), (), steps=6)
    zone_states(h, nsid, zone_lbas, zones)
    for zsa in (nvme.ZSA_CLOSE, nvme.ZSA_FINISH, nvme.ZSA_RESET):
        h.io(select_all(nsid, zsa), (), steps=8, count=8)
    h.io(report)
    out["zns-select-all"] = h
    # Select All Finish and Reset submitted with zones open, then a controller reset and
    # Delete I/O SQ before their clock steps
    h = base_zoned(nsid)
    h.create_queues(2, SQ2, CQ2, 16, vector=2)
    zone_states(h, nsid, zone_lbas, zones)
    h.submit(1, select_all(nsid, nvme.ZSA_FINISH), (), completions=0)
    h.submit(2, select_all(nsid, nvme.ZSA_RESET), (), completions=0)
    h.admin(cmd(nvme.ADM_DELETE_SQ, cdw10=2))
    h.disable()
    h.enable()
    h.create_queues()
    h.io(report)
    h.io(select_all(nsid, nvme.ZSA_RESET), (), steps=6)
    zone_states(h, nsid, zone_lbas, zones)
    h.submit(1, select_all(nsid, nvme.ZSA_RESET), (), completions=0, count=4)
    out["zns-select-all-reset"] = h
    # Write Zeroes at the write pointer with edges inside flash pages (through the write
    # buffer: plain, protected, FUA), Deallocate of 256 whole-namespace ranges and of
    # unaligned ones (nothing to do on zones, refused where a zone is Offline), read back
    h = base_zoned(nsid)
    h.io(rw(nvme.IO_WRITE, nsid, 0, 3), [SMALL_DATA])
    for slba, nlb, kw in [(3, 5, {}), (8, 13, {"cdw3": 1}), (21, 11, {}),
                          (32, 7, {"flags": IO_FUA}), (zone_lbas + 0, 9, {"cdw3": 1}),
                          (zone_lbas + 9, 2, {"flags": WZ_DEAC})]:
        h.io(write_zeroes(nsid, slba, nlb, **kw))
    h.io(rw(nvme.IO_WRITE, nsid, 39, 5), [SMALL_DATA])
    h.io(cmd(nvme.IO_FLUSH, nsid=nsid), steps=6)
    h.io(rw(nvme.IO_READ, nsid, 0, 48))
    h.io(dsm(nsid, 256), [whole_ranges(nsze)], count=4)
    h.io(dsm(nsid, 4), [dsm_ranges([(5, 13), (zone_lbas - 3, 7), (2, 9), (nsze - 1, 1)])])
    h.io(cmd(nvme.IO_ZONE_MGMT_SEND, nsid=nsid, cdw10=zone_lbas, cdw13=nvme.ZSA_OFFLINE))
    h.io(dsm(nsid, 256), [whole_ranges(nsze)])
    h.io(select_all(nsid, nvme.ZSA_OFFLINE), (), steps=4)
    h.io(select_all(nsid, nvme.ZSA_RESET), (), steps=8)
    out["zns-zeroes-dsm"] = h
    return out


def seeds_fdp_review(nsze):
    out = {}
    # Identify CNS 19h (Endurance Group List) from CDW11.ENDGID 0, 1 (the group), 2 and
    # FFFFh (past it: an empty list), with bits above the ENDGID, on a namespace; then the
    # group's log pages whole, short, at an offset, with RAE clear, for another group
    h = base()
    for nsid, dw11 in [(0, 0), (0, 1), (0, 2), (0, 0xFFFF), (0, 0x10001), (1, 1),
                       (0xFFFFFFFF, 0)]:
        h.admin(cmd(nvme.ADM_IDENTIFY, nsid=nsid, prp1=DATA, cdw10=CNS_ENDGRP_LIST,
                    cdw11=dw11))
    for lid in (LOG_ENDGRP, LOG_FDP_CONFS, LOG_FDP_RUH_USAGE, LOG_FDP_STATS, LOG_FDP_EVENTS):
        h.admin(fdp_log(lid))
        h.admin(fdp_log(lid, numd=3))
        h.admin(fdp_log(lid, numd=8, off=4))
        h.admin(fdp_log(lid, numd=16, rae=0, lsp=1 if lid == LOG_FDP_EVENTS else 0))
        h.admin(fdp_log(lid, lsi=2))
    out["fdp-endgrp-list-logs"] = h
    # Placed writes through every handle and reclaim group of both namespaces (and invalid
    # identifiers), I/O Management Receive (whole, short, other namespaces) and Send with
    # valid and invalid identifiers (duplicates, another group's, all at once), events
    h = base()
    for nsid in (1, 2):
        for i, pid in enumerate(FDP_VALID_PIDS + [fdp_pid(0, 2), fdp_pid(1, 3), 0x7FFF]):
            h.io(placed(nsid, 3584 + 8 * i, 8, pid), [SMALL_DATA])
    for nsid, numd in [(1, 1024), (2, 1024), (1, 2), (2, 5), (0xFFFFFFFF, 16), (3, 16)]:
        h.io(ruh_status(nsid, numd=numd))
    for nsid, pids in [(1, FDP_VALID_PIDS), (2, FDP_VALID_PIDS[:3]),
                       (1, [fdp_pid(1, 1), fdp_pid(1, 1)]), (2, [fdp_pid(0, 2)]),
                       (1, [fdp_pid(1, 0), 0xFFFF]), (0xFFFFFFFF, [0]), (3, [0])]:
        ruh_update(h, nsid, pids)
    h.io(ruh_status(1))
    fdp_events(h, host=True)
    h.admin(fdp_log(LOG_FDP_RUH_USAGE))
    h.admin(fdp_log(LOG_FDP_STATS))
    out["fdp-mgmt-pids"] = h
    # Deallocate of the whole namespace and at unaligned edges on each FDP namespace (32
    # of 512 pages fill a pass exactly, and a pass takes 32 commands from an SQ: on this
    # drive no step leaves work for a later pass)
    for nsid in (1, 2):
        out["fdp-dsm-long-ns%d" % nsid] = seed_dsm_long(nsid, nsze)
    out["fdp-dsm-long-reset"] = seed_dsm_long(1, nsze, short=192, reset=True)
    out["fdp-zeroes-dsm-edges"] = seed_zeroes_edges(2, nsze)
    return out


def mode_seeds(mode):
    if mode == "nossd":
        s = seeds_common([1, 2])
        s["nvm-io"] = seed_nvm_io(1)
        s["nvm-io-ns2"] = seed_nvm_io(2, 100)
        s["lifecycle-nvm-css"] = seed_lifecycle_nvm()
        s.update(seeds_long(2, NSZE["nossd"]))
    elif mode == "blackbox":
        s = seeds_common([1])
        s["nvm-io"] = seed_nvm_io(1, steps=4)
        s["gc-burst"] = seed_burst(rw(nvme.IO_WRITE, 1, 0, 16), rounds=12)
        s["read-ahead"] = seed_sequential_reads(1, 0)
        s.update(seeds_long(1, NSZE["blackbox"]))
    elif mode in ("zns", "zns-powercut"):
        s = seeds_common([1], csis=(0, 2))
        s.update(seeds_zoned(1, 2048, 8))
        s.update(seeds_zoned_review(1, 2048, NSZE["zns"]))
    elif mode == "whitebox":
        s = seeds_common([1], chunk_nsids=[1])
        s.update(seeds_whitebox(1, 64, 4))
    elif mode == "mixed":
        s = seeds_common([1, 2, 3, 4], csis=(0, 2), chunk_nsids=[4])
        s["nvm-io-nossd"] = seed_nvm_io(1)
        s["nvm-io-blackbox"] = seed_nvm_io(2, steps=4)
        s["read-ahead"] = seed_sequential_reads(2, 64)
        s.update({k + "-ns3": v for k, v in seeds_zoned(3, 2048, 4).items()})
        s.update({k + "-ns4": v for k, v in seeds_whitebox(4, 128, 8).items()})
        s["dsm-long-nossd"] = seed_dsm_long(1, NSZE["mixed"][0])
        s["dsm-long-blackbox"] = seed_dsm_long(2, NSZE["mixed"][1], short=192, reset=True)
        s["zns-select-all-ns3"] = seeds_zoned_review(3, 2048, NSZE["mixed"][2])["zns-select-all"]
    elif mode in ("fdp", "fdp-powercut"):
        s = seeds_common([1, 2])
        s["nvm-io"] = seed_nvm_io(1, steps=4)
        s["nvm-io-ns2"] = seed_nvm_io(2, 100, steps=4)
        s.update(seeds_fdp())
        s.update(seeds_fdp_review(NSZE["fdp"]))
    else:
        raise SystemExit("unknown mode %r (allowed: %s)" % (mode, " ".join(MODES)))
    return s


def seed_lifecycle_nvm():
    h = Host(nvme.CC_CSS_NVM)
    h.enable()
    h.create_queues()
    h.io(rw(nvme.IO_WRITE, 1, 0, 8), rw_patterns(4096))
    h.reg(nvme.REG_CC, nvme.CC_EN | nvme.CC_IOSQES | nvme.CC_IOCQES | nvme.CC_SHN_ABRUPT)
    return h


def seed_sequential_reads(nsid, slba):
    h = base()
    h.io(rw(nvme.IO_WRITE, nsid, slba, 64), rw_patterns(32768), steps=4)
    for i in range(12):
        h.io(rw(nvme.IO_READ, nsid, slba + 8 * i, 8), rw_patterns(4096), steps=2)
    return h


MODES = ["nossd", "blackbox", "zns", "whitebox", "mixed", "zns-powercut", "fdp", "fdp-powercut"]
# Namespace sizes in 512-byte LBAs of the targets in hw/femu/fuzz-targets.h (nossd: of
# namespace 2; mixed: of namespaces 1-3), for ranges that reach the end of a namespace.
NSZE = {"nossd": 1046528, "blackbox": 8192, "zns": 16384, "fdp": 4096,
        "mixed": (4096, 8192, 8192)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("modes", nargs="*", default=MODES, metavar="MODE")
    args = ap.parse_args()
    for mode in args.modes:
        d = os.path.join(args.outdir, mode)
        os.makedirs(d, exist_ok=True)
        seeds = mode_seeds(mode)
        for name, h in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(h.bytes())
        print("%s: %d seeds in %s (largest %d bytes)"
              % (mode, len(seeds), d, max(len(h.bytes()) for h in seeds.values())))


if __name__ == "__main__":
    main()
