"""A minimal NVMe host driver running over qtest.

Enough of a driver to exercise a controller through its registers and
queues: controller bring-up and shutdown, admin and I/O queue pairs, PRP and
SGL data pointers, shadow doorbells, and one helper per command the tests
need. Every wait has a timeout so a broken device fails a test rather than
hanging the suite.
"""

import base64
import struct
import time

import vendorlog
from qtest import PAGE

# Controller registers (BAR0 offsets).
REG_CAP = 0x00
REG_VS = 0x08
REG_INTMS = 0x0C
REG_INTMC = 0x10
REG_CC = 0x14
REG_CSTS = 0x1C
REG_AQA = 0x24
REG_ASQ = 0x28
REG_ACQ = 0x30
REG_DBS = 0x1000

CC_EN = 1 << 0
CC_SHN_NORMAL = 1 << 14
CC_SHN_ABRUPT = 2 << 14
CC_IOSQES = 6 << 16
CC_IOCQES = 4 << 20
CSTS_RDY = 1 << 0
CSTS_CFS = 1 << 1
CSTS_SHST_MASK = 3 << 2
CSTS_SHST_COMPLETE = 2 << 2

# Admin opcodes.
ADM_DELETE_SQ = 0x00
ADM_CREATE_SQ = 0x01
ADM_GET_LOG_PAGE = 0x02
ADM_DELETE_CQ = 0x04
ADM_CREATE_CQ = 0x05
ADM_IDENTIFY = 0x06
ADM_ABORT = 0x08
ADM_SET_FEATURES = 0x09
ADM_GET_FEATURES = 0x0A
ADM_ASYNC_EVENT = 0x0C
ADM_DBBUF_CONFIG = 0x7C
ADM_OC_GEOMETRY = 0xE2          # Open-Channel SSD 2.0 Geometry (whitebox namespaces)

# NVM I/O opcodes.
IO_FLUSH = 0x00
IO_WRITE = 0x01
IO_READ = 0x02
IO_COMPARE = 0x05
IO_WRITE_ZEROES = 0x08
IO_DSM = 0x09
# Zoned Namespace command set (ZNS 1.1) I/O opcodes.
IO_ZONE_MGMT_SEND = 0x79
IO_ZONE_MGMT_RECV = 0x7A
IO_ZONE_APPEND = 0x7D
# Open-Channel SSD 2.0 vector I/O opcodes (whitebox namespaces).
IO_VEC_RESET = 0x90
IO_VEC_WRITE = 0x91
IO_VEC_READ = 0x92
IO_VEC_COPY = 0x93

# Command set identifiers and CC.CSS values.
CSI_NVM = 0x00
CSI_ZONED = 0x02
CC_CSS_NVM = 0
CC_CSS_ALL = 6

# Zone Management Send actions (CDW13 bits 7:0) and Select All (bit 8).
ZSA_CLOSE = 0x01
ZSA_FINISH = 0x02
ZSA_OPEN = 0x03
ZSA_RESET = 0x04
ZSA_OFFLINE = 0x05
ZSA_SET_ZDE = 0x10
# Zone Management Receive actions and report filters (ZRASF).
ZRA_REPORT = 0x00
ZRA_EXTENDED = 0x01
ZRASF_ALL, ZRASF_EMPTY, ZRASF_IMPLICIT_OPEN, ZRASF_EXPLICIT_OPEN = 0, 1, 2, 3
ZRASF_CLOSED, ZRASF_FULL, ZRASF_READ_ONLY, ZRASF_OFFLINE = 4, 5, 6, 7
# Zone states (descriptor byte 1, bits 7:4) and attributes.
ZS_EMPTY = 0x1
ZS_IMPLICIT_OPEN = 0x2
ZS_EXPLICIT_OPEN = 0x3
ZS_CLOSED = 0x4
ZS_READ_ONLY = 0xD
ZS_FULL = 0xE
ZS_OFFLINE = 0xF
ZA_ZDEV = 0x80
ZONE_TYPE_SEQ = 0x2

# Feature identifiers.
FEAT_ARBITRATION = 0x01
FEAT_POWER_MGMT = 0x02
FEAT_TEMP_THRESH = 0x04
FEAT_ERROR_RECOVERY = 0x05
FEAT_VWC = 0x06
FEAT_NUM_QUEUES = 0x07
FEAT_IRQ_COALESCE = 0x08
FEAT_IRQ_CONFIG = 0x09
FEAT_WRITE_ATOMICITY = 0x0A
FEAT_ASYNC_EVENT = 0x0B

# Log pages.
LOG_ERROR = 0x01
LOG_SMART = 0x02
LOG_FW_SLOT = 0x03
LOG_CMD_EFFECTS = 0x05

# Status code types and codes (SCT, SC).
SCT_GENERIC, SCT_CMD_SPECIFIC, SCT_MEDIA = 0, 1, 2
SC_SUCCESS = 0x00
SC_INVALID_OPCODE = 0x01
SC_INVALID_FIELD = 0x02
SC_DATA_XFER_ERROR = 0x04
SC_ABORT_REQUESTED = 0x07
SC_ABORT_SQ_DELETION = 0x08
SC_INVALID_NS = 0x0B
SC_DATA_SGL_LEN_INVALID = 0x0F
SC_SGL_DESCR_TYPE_INVALID = 0x11
SC_PRP_OFFSET_INVALID = 0x13
SC_LBA_RANGE = 0x80
# Command specific (SCT 1).
SC_CQ_INVALID = 0x00
SC_INVALID_QID = 0x01
SC_INVALID_QSIZE = 0x02
SC_AER_LIMIT = 0x05
SC_INVALID_VECTOR = 0x08
SC_INVALID_LOG_PAGE = 0x09
SC_INVALID_QUEUE_DELETION = 0x0C
# Media (SCT 2).
SC_COMPARE_FAILURE = 0x85
SC_UNWRITTEN = 0x87             # Deallocated or Unwritten Logical Block
# Open-Channel SSD 2.0 (SCT 2).
SC_OC_OFFLINE_CHUNK = 0xC0
SC_OC_INVALID_RESET = 0xC1
SC_OC_WRITE_NEXT_UNIT = 0xF0
SC_OC_CHUNK_EARLY_CLOSE = 0xF1
SC_OC_OUT_OF_ORDER_WRITE = 0xF2
# Zoned command set specific (SCT 1).
SC_ZONE_BOUNDARY = 0xB8
SC_ZONE_FULL = 0xB9
SC_ZONE_READ_ONLY = 0xBA
SC_ZONE_OFFLINE = 0xBB
SC_ZONE_INVALID_WRITE = 0xBC
SC_ZONE_TOO_MANY_ACTIVE = 0xBD
SC_ZONE_TOO_MANY_OPEN = 0xBE
SC_ZONE_INVALID_TRANSITION = 0xBF

STATUS_NAMES = {
    (0, 0x00): "Success", (0, 0x01): "Invalid Command Opcode",
    (0, 0x02): "Invalid Field in Command", (0, 0x04): "Data Transfer Error",
    (0, 0x06): "Internal Error", (0, 0x07): "Command Abort Requested",
    (0, 0x08): "Command Aborted due to SQ Deletion",
    (0, 0x0B): "Invalid Namespace or Format",
    (0, 0x0C): "Command Sequence Error",
    (0, 0x0F): "Data SGL Length Invalid",
    (0, 0x11): "SGL Descriptor Type Invalid", (0, 0x13): "PRP Offset Invalid",
    (0, 0x80): "LBA Out of Range",
    (1, 0x00): "Completion Queue Invalid", (1, 0x01): "Invalid Queue Identifier",
    (1, 0x02): "Invalid Queue Size", (1, 0x05): "AER Limit Exceeded",
    (1, 0x08): "Invalid Interrupt Vector", (1, 0x09): "Invalid Log Page",
    (1, 0x0C): "Invalid Queue Deletion", (2, 0x85): "Compare Failure",
    (1, 0xB8): "Zone Boundary Error", (1, 0xB9): "Zone Is Full",
    (1, 0xBA): "Zone Is Read Only", (1, 0xBB): "Zone Is Offline",
    (1, 0xBC): "Zone Invalid Write", (1, 0xBD): "Too Many Active Zones",
    (1, 0xBE): "Too Many Open Zones", (1, 0xBF): "Invalid Zone State Transition",
    (2, 0x87): "Deallocated or Unwritten Logical Block", (2, 0xC0): "Offline Chunk",
    (2, 0xC1): "Invalid Reset", (2, 0xF0): "Write Next Unit", (2, 0xF1): "Chunk Early Close",
    (2, 0xF2): "Out of Order Write",
}

# Open-Channel SSD 2.0: the Chunk Information log page (with the namespace's NSID),
# chunk states (descriptor byte 0) and MCCAP bits.
LOG_OC_CHUNK_INFO = 0xCA
OC_CS_FREE, OC_CS_CLOSED, OC_CS_OPEN, OC_CS_OFFLINE = 0x1, 0x2, 0x4, 0x8
OC_MCCAP_COPY, OC_MCCAP_MULTI_RESET = 0x1, 0x2
OC_DESCRIPTOR = 32

# SGL descriptor types (upper nibble of byte 15).
SGL_DATA_BLOCK = 0x0
SGL_BIT_BUCKET = 0x1
SGL_SEGMENT = 0x2
SGL_LAST_SEGMENT = 0x3

PSDT_PRP = 0
PSDT_SGL = 1


class NvmeTimeout(AssertionError):
    pass


class NvmeCommandError(AssertionError):
    def __init__(self, what, cpl):
        super().__init__("%s failed: %r" % (what, cpl))
        self.cpl = cpl


class Completion:
    """A decoded 16-byte completion queue entry."""

    def __init__(self, raw, t=None):
        self.raw = raw
        self.t = t      # time.monotonic() when the host found it in the CQ
        self.dw0, self.dw1, self.sqhd, self.sqid, self.cid, sf = \
            struct.unpack("<IIHHHH", raw)
        self.phase = sf & 1
        self.status = sf >> 1

    @property
    def sc(self):
        return self.status & 0xFF

    @property
    def sct(self):
        return (self.status >> 8) & 0x7

    @property
    def code(self):
        """(status code type, status code), to compare with expected statuses."""
        return (self.sct, self.sc)

    @property
    def crd(self):
        return (self.status >> 11) & 0x3

    @property
    def more(self):
        return bool(self.status & (1 << 13))

    @property
    def dnr(self):
        return bool(self.status & (1 << 14))

    @property
    def ok(self):
        return self.sct == 0 and self.sc == 0

    def is_(self, sct, sc):
        return self.sct == sct and self.sc == sc

    def __repr__(self):
        name = STATUS_NAMES.get((self.sct, self.sc), "?")
        return ("<cpl sq%d cid=%d sct=%d sc=0x%02x (%s)%s dw0=0x%x>"
                % (self.sqid, self.cid, self.sct, self.sc, name,
                   " DNR" if self.dnr else "", self.dw0))


def cmd(opc, nsid=0, cdw10=0, cdw11=0, cdw12=0, cdw13=0, cdw14=0, cdw15=0,
        prp1=0, prp2=0, sgl=None, mptr=0, psdt=PSDT_PRP, fuse=0, cdw2=0,
        cdw3=0):
    """Build a 64-byte submission queue entry; the CID is set at submit."""
    dptr = sgl if sgl is not None else struct.pack("<QQ", prp1, prp2)
    if sgl is not None and psdt == PSDT_PRP:
        psdt = PSDT_SGL
    assert len(dptr) == 16
    dw0 = (opc & 0xFF) | (fuse & 3) << 8 | (psdt & 3) << 14
    return bytearray(struct.pack("<IIIIQ", dw0, nsid, cdw2, cdw3, mptr) + dptr +
                     struct.pack("<6I", cdw10, cdw11, cdw12, cdw13, cdw14, cdw15))


def sgl_desc(addr, length, dtype=SGL_DATA_BLOCK, subtype=0):
    return struct.pack("<QI3xB", addr, length, (dtype & 0xF) << 4 | (subtype & 0xF))


def need_event(event_idx, new_idx, old):
    """Linux's nvme_dbbuf_need_event: did the tail pass the event index?"""
    return ((new_idx - event_idx - 1) & 0xFFFF) < ((new_idx - old) & 0xFFFF)


class CompQueue:
    def __init__(self, qid, addr, size, vector, ien):
        self.qid, self.addr, self.size = qid, addr, size
        self.vector, self.ien = vector, ien
        self.head = 0
        self.phase = 1
        self.done = {}          # (sqid, cid) -> Completion not yet claimed
        self.sqs = {}
        self.shadow_db = self.shadow_ei = None


class SubQueue:
    def __init__(self, qid, addr, size, cq):
        self.qid, self.addr, self.size, self.cq = qid, addr, size, cq
        self.tail = 0
        self.head = 0
        self.next_cid = 0
        self.outstanding = set()
        self.shadow_db = self.shadow_ei = None
        cq.sqs[qid] = self

    def full(self):
        return (self.tail + 1) % self.size == self.head


class Controller:
    """The NVMe controller behind one PCI function."""

    def __init__(self, qt, pci, alloc, timeout=10.0):
        self.qt = qt
        self.pci = pci
        self.alloc = alloc
        self.timeout = timeout
        self.bar = pci.bar_addr(0)
        self.sqs = {}
        self.cqs = {}
        self.dbbuf = None
        self.mmio_doorbells = 0
        self.skipped_doorbells = 0
        self._ns_cache = {}

    # -- registers --------------------------------------------------------

    def rd32(self, off):
        return self.qt.readl(self.bar + off)

    def wr32(self, off, v):
        self.qt.writel(self.bar + off, v)

    def rd64(self, off):
        return self.rd32(off) | self.rd32(off + 4) << 32

    def wr64(self, off, v):
        # Low dword first, as Linux's lo_hi_writeq does.
        self.wr32(off, v & 0xFFFFFFFF)
        self.wr32(off + 4, v >> 32)

    @property
    def cap(self):
        c = self.rd64(REG_CAP)
        return {
            "mqes": c & 0xFFFF, "cqr": c >> 16 & 1, "ams": c >> 17 & 3,
            "to": c >> 24 & 0xFF, "dstrd": c >> 32 & 0xF, "nssrs": c >> 36 & 1,
            "css": c >> 37 & 0xFF, "bps": c >> 45 & 1, "mpsmin": c >> 48 & 0xF,
            "mpsmax": c >> 52 & 0xF, "pmrs": c >> 56 & 1, "cmbs": c >> 57 & 1,
            "raw": c,
        }

    def sq_doorbell(self, qid):
        return REG_DBS + (2 * qid) * (4 << self._dstrd)

    def cq_doorbell(self, qid):
        return REG_DBS + (2 * qid + 1) * (4 << self._dstrd)

    def wait_csts(self, mask, value, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            csts = self.rd32(REG_CSTS)
            if csts & mask == value:
                return csts
            if csts == 0xFFFFFFFF or time.monotonic() > deadline:
                raise NvmeTimeout("CSTS=0x%x, waiting for (CSTS & 0x%x) == 0x%x"
                                  % (csts, mask, value))
            time.sleep(0.0005)

    # -- controller state -------------------------------------------------

    def disable(self):
        cc = self.rd32(REG_CC)
        self.wr32(REG_CC, cc & ~CC_EN)
        self.wait_csts(CSTS_RDY, 0)
        self.sqs.clear()
        self.cqs.clear()
        self.dbbuf = None

    def enable(self, aq_entries=32, mps=0, css=CC_CSS_NVM):
        """Set up admin queues and enable; returns the admin SQ.

        css is CC.CSS: CC_CSS_ALL makes zoned namespaces active."""
        cap = self.cap
        self._dstrd = cap["dstrd"]
        if self.rd32(REG_CSTS) & CSTS_RDY:
            self.disable()
        self.sqs.clear()
        self.cqs.clear()
        self.dbbuf = None
        self._ns_cache.clear()
        asq = self.alloc.alloc(aq_entries * 64)
        acq = self.alloc.alloc(aq_entries * 16)
        self.qt.memset(acq, aq_entries * 16, 0)
        self.wr32(REG_AQA, (aq_entries - 1) << 16 | (aq_entries - 1))
        self.wr64(REG_ASQ, asq)
        self.wr64(REG_ACQ, acq)
        self.wr32(REG_CC, CC_IOCQES | CC_IOSQES | (css & 7) << 4 | (mps & 0xF) << 7
                  | CC_EN)
        self.wait_csts(CSTS_RDY | CSTS_CFS, CSTS_RDY)
        cq = CompQueue(0, acq, aq_entries, 0, True)
        self.cqs[0] = cq
        self.sqs[0] = SubQueue(0, asq, aq_entries, cq)
        return self.sqs[0]

    def shutdown(self):
        cc = self.rd32(REG_CC)
        self.wr32(REG_CC, (cc & ~(3 << 14)) | CC_SHN_NORMAL)
        return self.wait_csts(CSTS_SHST_MASK, CSTS_SHST_COMPLETE)

    @property
    def admin(self):
        return self.sqs[0]

    # -- submission and completion ----------------------------------------

    def _ring(self, off, value, shadow_db, shadow_ei):
        """Write a doorbell, through the shadow buffer when one is set up."""
        if shadow_db is not None:
            old = self.qt.readl(shadow_db)
            self.qt.writel(shadow_db, value)
            ei = self.qt.readl(shadow_ei)
            if not need_event(ei, value, old):
                self.skipped_doorbells += 1
                return
        self.mmio_doorbells += 1
        self.wr32(off, value)

    def ring_sq(self, sq):
        self._ring(self.sq_doorbell(sq.qid), sq.tail, sq.shadow_db, sq.shadow_ei)

    def ring_cq(self, cq):
        self._ring(self.cq_doorbell(cq.qid), cq.head, cq.shadow_db, cq.shadow_ei)

    def queue_cmd(self, sq, sqe, cid=None):
        """Place a command in the SQ without ringing; returns its CID."""
        addr, sqe, cid = self._claim_slot(sq, sqe, cid)
        self.qt.memwrite(addr, sqe)
        return cid

    def _claim_slot(self, sq, sqe, cid):
        if sq.full():
            self.reap(sq.cq)
            if sq.full():
                raise AssertionError("SQ %d full" % sq.qid)
        if cid is None:
            for _ in range(0x10000):
                cid = sq.next_cid
                sq.next_cid = (sq.next_cid + 1) & 0xFFFF
                if cid not in sq.outstanding and cid != 0xFFFF:
                    break
        sqe = bytearray(sqe)
        struct.pack_into("<H", sqe, 2, cid)
        addr = sq.addr + sq.tail * 64
        sq.tail = (sq.tail + 1) % sq.size
        sq.outstanding.add(cid)
        return addr, bytes(sqe), cid

    def submit_pipelined(self, sq, sqes):
        """Submit through the shadow doorbell, one command at a time as Linux
        does, but send each step's qtest traffic (the previous step's MMIO
        doorbell, the SQE, the shadow tail, the event index read) in one
        burst, so the device may not have caught up when the event index is
        read; the doorbell is then skipped, as the protocol allows."""
        assert sq.shadow_db is not None
        b64 = lambda d: base64.b64encode(d).decode()
        cids = []
        ring = None
        for sqe in sqes:
            addr, raw, cid = self._claim_slot(sq, sqe, None)
            cids.append(cid)
            lines = []
            if ring is not None:
                lines.append("writel 0x%x 0x%x" % (self.bar + self.sq_doorbell(sq.qid), ring))
                self.mmio_doorbells += 1
            old = (sq.tail - 1) % sq.size
            lines += ["b64write 0x%x 0x%x %s" % (addr, len(raw), b64(raw)),
                      "writel 0x%x 0x%x" % (sq.shadow_db, sq.tail),
                      "readl 0x%x" % sq.shadow_ei]
            ei = int(self.qt.cmds(lines)[-1], 16)
            if need_event(ei, sq.tail, old):
                ring = sq.tail
            else:
                ring = None
                self.skipped_doorbells += 1
        if ring is not None:
            self.mmio_doorbells += 1
            self.wr32(self.sq_doorbell(sq.qid), ring)
        return cids

    def submit(self, sq, sqe, cid=None):
        cid = self.queue_cmd(sq, sqe, cid)
        self.ring_sq(sq)
        return cid

    @staticmethod
    def consume(cq, entry_at):
        """The new completions of cq, in order, consumed: entry_at(i) gives the 16 bytes of
        entry i; the head and phase advance and each SQ's head follows (the CQ doorbell is
        the caller's)."""
        out = []
        while True:
            raw = entry_at(cq.head)
            if raw[14] & 1 != cq.phase:
                break
            c = Completion(raw, time.monotonic())
            cq.head = (cq.head + 1) % cq.size
            if cq.head == 0:
                cq.phase ^= 1
            sq = cq.sqs.get(c.sqid)
            if sq is not None:
                sq.head = c.sqhd
                sq.outstanding.discard(c.cid)
            out.append(c)
        return out

    def reap(self, cq):
        """Consume every new CQ entry; returns how many were found."""
        found = self.consume(cq, lambda i: self.qt.memread(cq.addr + i * 16, 16))
        for c in found:
            cq.done[(c.sqid, c.cid)] = c
        if found:
            self.ring_cq(cq)
        return len(found)

    def wait(self, sq, cid, timeout=None):
        """Poll the CQ phase tag until the command completes."""
        cq = sq.cq
        key = (sq.qid, cid)
        deadline = time.monotonic() + (timeout or self.timeout)
        spins = 0
        while key not in cq.done:
            if self.reap(cq):
                continue
            if time.monotonic() > deadline:
                raise NvmeTimeout("no completion for sq%d cid %d (CSTS=0x%x)"
                                  % (sq.qid, cid, self.rd32(REG_CSTS)))
            spins += 1
            if spins > 20:
                # Device threads or timers may need time to run.
                time.sleep(0.0005)
                if self.qt.accel == "qtest":
                    self.qt.clock_step(100000)
        return cq.done.pop(key)

    def wait_all(self, pending, timeout=None):
        """Wait for every (sq, cid) in pending; their completions, in the same order
        (each with .t, when the host saw it)."""
        keys = [(sq.cq, (sq.qid, cid)) for sq, cid in pending]
        cqs = {id(cq): cq for cq, _ in keys}.values()
        deadline = time.monotonic() + (timeout or self.timeout)
        spins = 0
        while any(key not in cq.done for cq, key in keys):
            if sum(self.reap(cq) for cq in cqs):
                continue
            if time.monotonic() > deadline:
                raise NvmeTimeout("no completion for %s (CSTS=0x%x)" % (
                    ["sq%d cid %d" % k for cq, k in keys if k not in cq.done],
                    self.rd32(REG_CSTS)))
            spins += 1
            if spins > 20:
                time.sleep(0.0005)
        return [cq.done.pop(key) for cq, key in keys]

    def try_wait(self, sq, cid, timeout):
        try:
            return self.wait(sq, cid, timeout)
        except NvmeTimeout:
            return None

    def execute(self, sq, sqe, timeout=None):
        return self.wait(sq, self.submit(sq, sqe), timeout)

    def admin_cmd(self, sqe, timeout=None):
        return self.execute(self.admin, sqe, timeout)

    # -- buffers and data pointers ----------------------------------------

    def buffer(self, size, data=None, offset=0, fill=None):
        """Allocate guest RAM at a page offset, optionally filled."""
        addr = self.alloc.alloc(size + offset + PAGE) + offset
        if data is not None:
            self.qt.memwrite(addr, data)
        elif fill is not None:
            self.qt.memset(addr, size, fill)
        return addr

    def prps(self, addr, length, list_first_slots=None):
        """PRP1/PRP2 for a buffer, building PRP lists when needed.

        list_first_slots places the first PRP list so that only that many
        entries fit before its page ends, to exercise list chaining.
        """
        first = PAGE - (addr % PAGE)
        if length <= first:
            return addr, 0
        pages = []
        p = addr - (addr % PAGE) + PAGE
        end = addr + length
        while p < end:
            pages.append(p)
            p += PAGE
        if len(pages) == 1:
            return addr, pages[0]
        slots = list_first_slots or PAGE // 8
        lst = self.alloc.alloc(PAGE) + PAGE - 8 * slots
        prp2 = lst
        i = 0
        while True:
            rest = pages[i:]
            if len(rest) <= slots:
                self.qt.memwrite(lst, struct.pack("<%dQ" % len(rest), *rest))
                break
            nxt = self.alloc.alloc(PAGE)
            chunk = pages[i:i + slots - 1] + [nxt]
            self.qt.memwrite(lst, struct.pack("<%dQ" % len(chunk), *chunk))
            i += slots - 1
            lst, slots = nxt, PAGE // 8
        return addr, prp2

    def sgl(self, chunks, segments=None):
        """SGL for data chunks [(addr, len), ...].

        segments=None puts one data block in the command (needs one chunk).
        Otherwise it is a list of chunk counts, one per segment; every
        segment but the last ends with a pointer to the next one.
        """
        if segments is None:
            assert len(chunks) == 1
            return sgl_desc(chunks[0][0], chunks[0][1])
        assert sum(segments) == len(chunks)
        descs = []
        i = 0
        for n in segments:
            descs.append([sgl_desc(a, l) for a, l in chunks[i:i + n]])
            i += n
        # Build from the last segment backwards so each knows its successor.
        nxt = None
        for k in range(len(descs) - 1, -1, -1):
            body = b"".join(descs[k])
            if nxt is not None:
                body += nxt
            addr = self.alloc.alloc(len(body), 16)
            self.qt.memwrite(addr, body)
            is_last = k == len(descs) - 1
            nxt = sgl_desc(addr, len(body),
                           SGL_LAST_SEGMENT if is_last else SGL_SEGMENT)
        return nxt

    # -- admin helpers ----------------------------------------------------

    def identify(self, cns, nsid=0, cntid=0, csi=0, check=True):
        buf = self.buffer(4096, fill=0xA5)
        c = self.admin_cmd(cmd(ADM_IDENTIFY, nsid=nsid, prp1=buf,
                               cdw10=cns | cntid << 16, cdw11=csi << 24))
        if check and not c.ok:
            raise NvmeCommandError("Identify CNS %d" % cns, c)
        return c, self.qt.memread(buf, 4096)

    def id_ctrl(self):
        data = self.identify(1)[1]
        return parse_id_ctrl(data)

    def id_ns(self, nsid):
        data = self.identify(0, nsid=nsid)[1]
        return parse_id_ns(data)

    def block_size(self, nsid):
        if nsid not in self._ns_cache:
            self._ns_cache[nsid] = self.id_ns(nsid)
        return self._ns_cache[nsid]["block_size"]

    def get_features(self, fid, cdw11=0, sel=0, nsid=0, data_len=0):
        buf = self.buffer(max(data_len, 4096)) if data_len else 0
        c = self.admin_cmd(cmd(ADM_GET_FEATURES, nsid=nsid, prp1=buf,
                               cdw10=fid | sel << 8, cdw11=cdw11))
        return c

    def set_features(self, fid, cdw11=0, save=False, nsid=0, cdw12=0, data=None):
        buf = self.buffer(4096, data) if data else 0
        return self.admin_cmd(cmd(ADM_SET_FEATURES, nsid=nsid, prp1=buf,
                                  cdw10=fid | (1 << 31 if save else 0),
                                  cdw11=cdw11, cdw12=cdw12))

    def get_log_page(self, lid, size, nsid=0xFFFFFFFF, lsp=0, rae=False,
                     offset=0, csi=0):
        buf = self.buffer(size, fill=0xA5)
        prp1, prp2 = self.prps(buf, size)
        numd = size // 4 - 1
        c = self.admin_cmd(cmd(ADM_GET_LOG_PAGE, nsid=nsid, prp1=prp1, prp2=prp2,
                               cdw10=lid | (lsp & 0xF) << 8 | (1 << 15 if rae else 0)
                               | (numd & 0xFFFF) << 16,
                               cdw11=numd >> 16, cdw12=offset & 0xFFFFFFFF,
                               cdw13=offset >> 32, cdw14=(csi & 0xFF) << 24))
        return c, self.qt.memread(buf, size)

    def create_cq(self, qid, entries, vector=0, ien=True, pc=True, addr=None):
        if addr is None:
            addr = self.alloc.alloc(max(entries * 16, PAGE))
            self.qt.memset(addr, entries * 16, 0)
        c = self.admin_cmd(cmd(ADM_CREATE_CQ, prp1=addr,
                               cdw10=((entries - 1) & 0xFFFF) << 16 | qid,
                               cdw11=vector << 16 | (2 if ien else 0) | (1 if pc else 0)))
        if c.ok:
            cq = CompQueue(qid, addr, entries, vector, ien)
            if self.dbbuf:
                self._attach_shadow(cq, 2 * qid + 1)
            self.cqs[qid] = cq
        return c

    def create_sq(self, qid, entries, cqid, prio=0, pc=True, addr=None):
        if addr is None:
            addr = self.alloc.alloc(max(entries * 64, PAGE))
        c = self.admin_cmd(cmd(ADM_CREATE_SQ, prp1=addr,
                               cdw10=((entries - 1) & 0xFFFF) << 16 | qid,
                               cdw11=cqid << 16 | (prio & 3) << 1 | (1 if pc else 0)))
        if c.ok:
            sq = SubQueue(qid, addr, entries, self.cqs[cqid])
            if self.dbbuf:
                self._attach_shadow(sq, 2 * qid)
            self.sqs[qid] = sq
        return c

    def delete_sq(self, qid):
        c = self.admin_cmd(cmd(ADM_DELETE_SQ, cdw10=qid))
        if c.ok and qid in self.sqs:
            sq = self.sqs.pop(qid)
            sq.cq.sqs.pop(qid, None)
        return c

    def delete_cq(self, qid):
        c = self.admin_cmd(cmd(ADM_DELETE_CQ, cdw10=qid))
        if c.ok:
            self.cqs.pop(qid, None)
        return c

    def create_io_queues(self, qid, entries=64, vector=None, ien=True, cqid=None):
        """Create a CQ/SQ pair (CQ id defaults to the SQ id); returns the SQ."""
        cqid = qid if cqid is None else cqid
        if cqid not in self.cqs:
            c = self.create_cq(cqid, entries, vector=qid if vector is None else vector,
                               ien=ien)
            if not c.ok:
                raise NvmeCommandError("Create I/O CQ %d" % cqid, c)
        c = self.create_sq(qid, entries, cqid)
        if not c.ok:
            raise NvmeCommandError("Create I/O SQ %d" % qid, c)
        return self.sqs[qid]

    def delete_io_queues(self, qid):
        sq = self.sqs[qid]
        c = self.delete_sq(qid)
        if not c.ok:
            raise NvmeCommandError("Delete I/O SQ %d" % qid, c)
        if not sq.cq.sqs:
            c = self.delete_cq(sq.cq.qid)
            if not c.ok:
                raise NvmeCommandError("Delete I/O CQ %d" % sq.cq.qid, c)

    def dbbuf_config(self, dbs=None, eis=None):
        """Doorbell Buffer Config; on success I/O queues use the shadows."""
        fresh = dbs is None
        if fresh:
            dbs = self.alloc.alloc(PAGE)
            eis = self.alloc.alloc(PAGE)
            self.qt.memset(dbs, PAGE, 0)
            self.qt.memset(eis, PAGE, 0)
        c = self.admin_cmd(cmd(ADM_DBBUF_CONFIG, prp1=dbs, prp2=eis))
        if c.ok and fresh:
            self.dbbuf = (dbs, eis)
            # Like Linux, only I/O queues use the shadow; admin stays MMIO.
            for qid, sq in self.sqs.items():
                if qid:
                    self._attach_shadow(sq, 2 * qid)
            for qid, cq in self.cqs.items():
                if qid:
                    self._attach_shadow(cq, 2 * qid + 1)
        return c

    def _attach_shadow(self, q, index):
        if q.qid == 0:
            return
        dbs, eis = self.dbbuf
        off = index * (4 << self._dstrd)
        q.shadow_db, q.shadow_ei = dbs + off, eis + off
        self.qt.writel(q.shadow_db, q.tail if isinstance(q, SubQueue) else q.head)

    def vendor_log(self):
        """The device's statistics (vendor log page 0xCA) as {name: value}."""
        c, data = self.get_log_page(vendorlog.LOG_ID, 65536)
        if not c.ok:
            raise NvmeCommandError("Get Log Page 0xCA", c)
        return vendorlog.parse(data)

    def model_timed(self, fn):
        """Runs fn, which sends one I/O command and waits for it: (what fn returned, the
        model's latency of that command in ns, from the statistic model_latency_ns). The
        host must not see the completion before the model's time; a busy host sees it later,
        by an amount tests leave alone."""
        before = self.vendor_log()["model_latency_ns"]
        t0 = time.monotonic()
        got = fn()
        c = got[0] if isinstance(got, tuple) else got
        model_ns = self.vendor_log()["model_latency_ns"] - before
        assert c.ok, c
        assert c.t - t0 >= model_ns / 1e9, "completed %.6f s after the submission, before " \
            "the model's %d ns" % (c.t - t0, model_ns)
        return got, model_ns

    def virtual_times(self, submit, limit_ns):
        """dataplane=main-loop under qtest: the virtual clock (the model's time) stands still
        unless the test steps it, so the commands submit() sends arrive at one instant,
        whatever the host's speed. Steps the clock from timer to timer until each of them
        completed: [(completion, virtual ns from the arrival)], in submit()'s order of the
        (sq, cid) it returns."""
        t0 = self.qt.clock_step(1)
        pending = submit()
        keys = [(sq.cq, (sq.qid, cid)) for sq, cid in pending]
        cqs = {id(cq): cq for cq, _ in keys}.values()
        at, now = {}, t0
        while True:
            # a few round trips: each runs the main loop, and with it the device's pass
            for _ in range(3):
                for cq in cqs:
                    self.reap(cq)
            for cq, key in keys:
                if key in cq.done and key not in at:
                    at[key] = now - t0
            if len(at) == len(keys):
                return [(cq.done.pop(key), at[key]) for cq, key in keys]
            assert now - t0 <= limit_ns, "not completed %d ns after arrival: %s" % (
                now - t0, [k for _, k in keys if k not in at])
            now = self.qt.clock_step()

    def set_num_queues(self, nsq, ncq):
        return self.set_features(FEAT_NUM_QUEUES, ((ncq - 1) << 16) | (nsq - 1))

    # -- I/O helpers ------------------------------------------------------

    def rw_cmd(self, opc, nsid, slba, nblocks, prp1=0, prp2=0, sgl=None, cdw12=0):
        return cmd(opc, nsid=nsid, prp1=prp1, prp2=prp2, sgl=sgl,
                   cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
                   cdw12=((nblocks - 1) & 0xFFFF) | cdw12)

    def _dptr(self, addr, length, sgl_segments=None, list_first_slots=None):
        if sgl_segments == "single":
            return {"sgl": self.sgl([(addr, length)])}
        if sgl_segments is not None:
            # Split the buffer in as many chunks as the segments describe.
            n = sum(sgl_segments)
            cuts = [length * k // n for k in range(n + 1)]
            chunks = [(addr + cuts[k], cuts[k + 1] - cuts[k]) for k in range(n)]
            return {"sgl": self.sgl(chunks, sgl_segments)}
        p1, p2 = self.prps(addr, length, list_first_slots)
        return {"prp1": p1, "prp2": p2}

    def write(self, sq, nsid, slba, data, offset=0, sgl_segments=None,
              list_first_slots=None, opc=IO_WRITE, timeout=None):
        bs = self.block_size(nsid)
        assert len(data) % bs == 0
        addr = self.buffer(len(data), data, offset)
        sqe = self.rw_cmd(opc, nsid, slba, len(data) // bs,
                          **self._dptr(addr, len(data), sgl_segments, list_first_slots))
        return self.execute(sq, sqe, timeout)

    def compare(self, sq, nsid, slba, data, **kw):
        return self.write(sq, nsid, slba, data, opc=IO_COMPARE, **kw)

    def read(self, sq, nsid, slba, nblocks, offset=0, sgl_segments=None,
             list_first_slots=None, timeout=None):
        bs = self.block_size(nsid)
        length = nblocks * bs
        addr = self.buffer(length, offset=offset, fill=0x5A)
        sqe = self.rw_cmd(IO_READ, nsid, slba, nblocks,
                          **self._dptr(addr, length, sgl_segments, list_first_slots))
        c = self.execute(sq, sqe, timeout)
        return c, self.qt.memread(addr, length)

    def submit_read(self, sq, nsid, slba, nblocks):
        """Queues and rings a read without waiting for it; its CID (see wait, wait_all)."""
        length = nblocks * self.block_size(nsid)
        p1, p2 = self.prps(self.buffer(length, fill=0x5A), length)
        return self.submit(sq, self.rw_cmd(IO_READ, nsid, slba, nblocks, prp1=p1, prp2=p2))

    def flush(self, sq, nsid):
        return self.execute(sq, cmd(IO_FLUSH, nsid=nsid))

    def write_zeroes(self, sq, nsid, slba, nblocks):
        return self.execute(sq, self.rw_cmd(IO_WRITE_ZEROES, nsid, slba, nblocks))

    def dsm_deallocate(self, sq, nsid, ranges):
        """ranges: [(slba, nblocks), ...]"""
        body = b"".join(struct.pack("<IIQ", 0, n, s) for s, n in ranges)
        addr = self.buffer(len(body), body)
        return self.execute(sq, cmd(IO_DSM, nsid=nsid, prp1=addr,
                                    cdw10=len(ranges) - 1, cdw11=1 << 2))

    # -- zoned namespace helpers (ZNS 1.1) -------------------------------

    def zone_send(self, sq, nsid, slba, action, select_all=False, data=None):
        """Zone Management Send; data is the extension for Set ZDE."""
        p1 = p2 = 0
        if data is not None:
            p1, p2 = self.prps(self.buffer(len(data), data), len(data))
        return self.execute(sq, cmd(IO_ZONE_MGMT_SEND, nsid=nsid, prp1=p1, prp2=p2,
                                    cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
                                    cdw13=(action & 0xFF) | (1 << 8 if select_all else 0)))

    def zone_recv(self, sq, nsid, slba, size, zra=ZRA_REPORT, zrasf=ZRASF_ALL,
                  partial=False, numd=None):
        """Zone Management Receive into a size-byte buffer: (cpl, bytes)."""
        buf = self.buffer(size, fill=0xA5)
        p1, p2 = self.prps(buf, size)
        numd = size // 4 - 1 if numd is None else numd
        c = self.execute(sq, cmd(IO_ZONE_MGMT_RECV, nsid=nsid, prp1=p1, prp2=p2,
                                 cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32, cdw12=numd,
                                 cdw13=(zra & 0xFF) | (zrasf & 0xFF) << 8
                                 | (1 << 16 if partial else 0)))
        return c, self.qt.memread(buf, size)

    def zone_report(self, sq, nsid, slba=0, size=4096, zrasf=ZRASF_ALL, partial=False,
                    zde_bytes=0):
        """A (extended when zde_bytes) report, parsed: (cpl, report dict)."""
        c, d = self.zone_recv(sq, nsid, slba, size,
                              ZRA_EXTENDED if zde_bytes else ZRA_REPORT, zrasf, partial)
        return c, parse_zone_report(d, zde_bytes) if c.ok else None

    def zone(self, sq, nsid, zslba, zde_bytes=0):
        """The descriptor of the zone holding zslba."""
        c, rep = self.zone_report(sq, nsid, zslba, 64 + 64 + zde_bytes, partial=True,
                                  zde_bytes=zde_bytes)
        if not c.ok:
            raise NvmeCommandError("Zone Management Receive", c)
        return rep["zones"][0]

    def zone_append(self, sq, nsid, zslba, data):
        """Zone Append; the LBA written is append_lba(cpl)."""
        bs = self.block_size(nsid)
        assert len(data) % bs == 0
        addr = self.buffer(len(data), data)
        p1, p2 = self.prps(addr, len(data))
        return self.execute(sq, self.rw_cmd(IO_ZONE_APPEND, nsid, zslba, len(data) // bs,
                                            prp1=p1, prp2=p2))

    # -- Open-Channel SSD 2.0 helpers (whitebox namespaces) ---------------

    def oc_geometry(self, nsid, check=True):
        """Geometry (admin E2h) into a 4 KiB buffer: (cpl, parsed dict)."""
        buf = self.buffer(4096, fill=0xA5)
        c = self.admin_cmd(cmd(ADM_OC_GEOMETRY, nsid=nsid, prp1=buf))
        if check and not c.ok:
            raise NvmeCommandError("Geometry", c)
        return c, parse_oc_geometry(self.qt.memread(buf, 4096))

    def chunk_log(self, nsid, size, offset=0):
        """Chunk Information log bytes [offset, offset + size): (cpl, [descriptors])."""
        c, d = self.get_log_page(LOG_OC_CHUNK_INFO, size, nsid=nsid, offset=offset)
        return c, parse_chunk_descriptors(d) if c.ok else None

    def chunks(self, nsid, nr):
        """Every one of nr chunk descriptors, in one page-sized request at a time."""
        out = []
        while len(out) < nr:
            n = min(nr - len(out), 4096 // OC_DESCRIPTOR)
            c, descs = self.chunk_log(nsid, n * OC_DESCRIPTOR, len(out) * OC_DESCRIPTOR)
            if not c.ok:
                raise NvmeCommandError("Chunk Information log", c)
            out += descs
        return out

    def lba_list(self, lbas):
        """CDW10-11 for a vector command: the LBA itself for one, else a list in RAM."""
        if len(lbas) == 1:
            return lbas[0]
        return self.buffer(8 * len(lbas), struct.pack("<%dQ" % len(lbas), *lbas))

    def vector_cmd(self, opc, nsid, lbas, prp1=0, prp2=0, mptr=0, lba_list=None,
                   nlb=None, dst_list=0, cdw12=0):
        """A vector command's SQE; lba_list/nlb override what lbas gives."""
        lst = self.lba_list(lbas) if lba_list is None else lba_list
        nlb = len(lbas) - 1 if nlb is None else nlb
        return cmd(opc, nsid=nsid, prp1=prp1, prp2=prp2, mptr=mptr,
                   cdw10=lst & 0xFFFFFFFF, cdw11=lst >> 32, cdw12=(nlb & 0x3F) | cdw12,
                   cdw14=dst_list & 0xFFFFFFFF, cdw15=dst_list >> 32)

    def vector_write(self, sq, nsid, lbas, data, meta=None, timeout=None):
        bs = self.block_size(nsid)
        assert len(data) == len(lbas) * bs
        addr = self.buffer(len(data), data)
        p1, p2 = self.prps(addr, len(data))
        mptr = self.buffer(len(meta), meta) if meta else 0
        return self.execute(sq, self.vector_cmd(IO_VEC_WRITE, nsid, lbas, p1, p2, mptr),
                            timeout)

    def vector_read(self, sq, nsid, lbas, meta_bytes=0, timeout=None):
        """(cpl, data, metadata) of a Vector Read."""
        bs = self.block_size(nsid)
        length = len(lbas) * bs
        addr = self.buffer(length, fill=0x5A)
        p1, p2 = self.prps(addr, length)
        mptr = self.buffer(meta_bytes, fill=0x5A) if meta_bytes else 0
        c = self.execute(sq, self.vector_cmd(IO_VEC_READ, nsid, lbas, p1, p2, mptr), timeout)
        return (c, self.qt.memread(addr, length),
                self.qt.memread(mptr, meta_bytes) if meta_bytes else b"")

    def vector_reset(self, sq, nsid, lbas, descriptors=False, timeout=None):
        """(cpl, [descriptors written to MPTR] or None)."""
        mptr = self.buffer(OC_DESCRIPTOR * len(lbas), fill=0xA5) if descriptors else 0
        c = self.execute(sq, self.vector_cmd(IO_VEC_RESET, nsid, lbas, mptr=mptr), timeout)
        if not descriptors:
            return c, None
        return c, parse_chunk_descriptors(self.qt.memread(mptr, OC_DESCRIPTOR * len(lbas)))

    def vector_copy(self, sq, nsid, src, dst, timeout=None):
        assert len(src) == len(dst)
        return self.execute(sq, self.vector_cmd(IO_VEC_COPY, nsid, src,
                                                dst_list=self.lba_list(dst)), timeout)


def failed_bitmap(cpl):
    """A vector command's 64-bit bitmap of failed list entries (CQE DW0-DW1)."""
    return cpl.dw0 | cpl.dw1 << 32


def parse_oc_geometry(d):
    """OCSSD 2.0 Geometry data structure."""
    u16 = lambda o: struct.unpack_from("<H", d, o)[0]
    u32 = lambda o: struct.unpack_from("<I", d, o)[0]
    return {
        "mjr": d[0], "mnr": d[1], "grp_len": d[8], "pu_len": d[9], "chk_len": d[10],
        "lbk_len": d[11], "mccap": u32(16), "wit": d[32], "num_grp": u16(64),
        "num_pu": u16(66), "num_chk": u32(68), "clba": u32(72), "ws_min": u32(128),
        "ws_opt": u32(132), "mw_cunits": u32(136), "maxoc": u32(140), "maxocpu": u32(144),
        "trdt": u32(192), "trdm": u32(196), "twrt": u32(200), "twrm": u32(204),
        "tcrst": u32(208), "tcrsm": u32(212), "raw": bytes(d),
    }


def parse_chunk_descriptors(d):
    out = []
    for off in range(0, len(d) - OC_DESCRIPTOR + 1, OC_DESCRIPTOR):
        slba, cnlb, wp = struct.unpack_from("<QQQ", d, off + 8)
        out.append({"cs": d[off], "ct": d[off + 1], "wli": d[off + 2], "slba": slba,
                    "cnlb": cnlb, "wp": wp, "raw": bytes(d[off:off + OC_DESCRIPTOR])})
    return out


def append_lba(cpl):
    """The LBA a Zone Append wrote (CQE DW0-DW1)."""
    return cpl.dw0 | cpl.dw1 << 32


def parse_zone_report(d, zde_bytes=0):
    """Zone report: header zone count and the descriptors in the buffer."""
    nr = struct.unpack_from("<Q", d, 0)[0]
    step = 64 + zde_bytes
    fit = (len(d) - 64) // step
    zones = []
    for k in range(min(nr, fit)):
        off = 64 + k * step
        zt, zs, za = d[off], d[off + 1], d[off + 2]
        zcap, zslba, wp = struct.unpack_from("<QQQ", d, off + 8)
        zones.append({"zt": zt & 0xF, "zs": zs >> 4, "za": za, "zcap": zcap,
                      "zslba": zslba, "wp": wp,
                      "zde": bytes(d[off + 64:off + 64 + zde_bytes])})
    return {"nr_zones": nr, "zones": zones, "raw": bytes(d)}


def parse_id_ns_zoned(d):
    """Identify Namespace, Zoned command set (CNS 05h, CSI 2)."""
    zoc, ozcs, mar, mor, rrl, frl = struct.unpack_from("<HHIIII", d, 0)
    lbafe = []
    for i in range(16):
        zsze, zdes = struct.unpack_from("<QB", d, 2816 + 16 * i)
        lbafe.append({"zsze": zsze, "zdes": zdes})
    return {"zoc": zoc, "ozcs": ozcs, "mar": mar, "mor": mor, "rrl": rrl, "frl": frl,
            "lbafe": lbafe, "raw": bytes(d)}


def _str(b):
    return bytes(b).decode("ascii", "replace").rstrip(" \0")


def parse_id_ctrl(d):
    u16 = lambda o: struct.unpack_from("<H", d, o)[0]
    u32 = lambda o: struct.unpack_from("<I", d, o)[0]
    return {
        "vid": u16(0), "ssvid": u16(2), "sn": _str(d[4:24]), "mn": _str(d[24:64]),
        "fr": _str(d[64:72]), "fr_raw": bytes(d[64:72]), "mdts": d[77],
        "cntlid": u16(78), "ver": u32(80), "oacs": u16(256), "acl": d[258],
        "aerl": d[259], "frmw": d[260], "lpa": d[261], "elpe": d[262],
        "sqes": d[512], "cqes": d[513], "maxcmd": u16(514), "nn": u32(516),
        "oncs": u16(520), "vwc": d[525], "sgls": u32(536), "subnqn": _str(d[768:1024]),
        "raw": bytes(d),
    }


def parse_id_ns(d):
    nsze, ncap, nuse = struct.unpack_from("<QQQ", d, 0)
    nlbaf = d[25]
    flbas = d[26]
    lbafs = []
    for i in range(nlbaf + 1):
        ms, lbads, rp = struct.unpack_from("<HBB", d, 128 + 4 * i)
        lbafs.append({"ms": ms, "lbads": lbads, "rp": rp & 3})
    idx = flbas & 0xF
    return {
        "nsze": nsze, "ncap": ncap, "nuse": nuse, "nsfeat": d[24],
        "nlbaf": nlbaf, "flbas": flbas, "dlfeat": d[33], "lbafs": lbafs,
        "lbaf_index": idx,
        "block_size": 1 << lbafs[idx]["lbads"] if idx < len(lbafs) else 0,
        "nguid": bytes(d[104:120]), "eui64": bytes(d[120:128]), "raw": bytes(d),
    }


def parse_descriptors(d):
    """Namespace identification descriptors: {type: value bytes}."""
    out = {}
    off = 0
    while off + 4 <= len(d):
        nidt, nidl = d[off], d[off + 1]
        if nidt == 0:
            break
        out[nidt] = bytes(d[off + 4:off + 4 + nidl])
        off += 4 + nidl
    return out
