"""The independent checker of the kill loop (killlib.py): what a drive may hold after QEMU
was killed (SIGKILL: no hold-up power, no flush, saves torn anywhere) and started again on
the same file, given what the host submitted and which completions it had seen.

It knows nothing of the device's code: its inputs are the commands of the round (`Op`,
each with the host's event numbers of its submission and of its completion, or none when
it was in flight at the kill), what the previous check established (`UnitState` per zone
or chunk, or per region for blackbox), and what the restarted drive shows (`View`: zone
report or chunk descriptor, and the data, with OOB for whitebox, read through the
device). Every data block is self-describing (plp_check's pattern: magic, LBA, a 64-bit
generation, a checksum); the harness puts the zone/chunk generation (resets so far) in
the generation's high bits and the command's sequence number in its low 40, so a block
says which write put it there.

The rules (docs/crash-consistency.md and docs/plp.md; tests/guest/plp_check.py for the PLP ones):

  zoned, plp unset  every acknowledged write is durable: its blocks are below the write
                    pointer, intact; the write pointer is where the acknowledged commands
                    left it, or where the one command in flight on the zone would have;
                    nothing but the current generation's writes below it (no zeroes, no
                    stale or foreign block), zeroes above it; open zones come back Closed
                    (or Empty when nothing was written), Full stays Full.
  zoned, plp=       protected writes (CDW3 bit 0, a zone of plp_zones, plp=full) are
                    durable once acknowledged; an unprotected one once a Flush submitted
                    after its completion completed, a FUA write of its zone completed, its
                    zone was finished or closed, or a write filled its zone; after a Set
                    Features Volatile Write Cache WCE=0 ("cache-off") completed, every write
                    submitted later (and it writes out what completed before it was
                    submitted, as a Flush). The rest may be lost: the write pointer goes back to no lower than where durable data
                    ends, a lost block below it reads zeroes; nothing stale below it,
                    zeroes above it.
  whitebox          every acknowledged chunk write is durable with its OOB (vector writes
                    carry it, standard writes zero it); chunk state, write pointer and wear
                    index are those the acknowledged commands (or the one in flight) left;
                    data and OOB above the write pointer are zero; a reset chunk reads zero.
  blackbox          every LBA holds its last acknowledged write, or the write in flight on
                    it at the kill (the harness never has two commands on one LBA in
                    flight), never older data, never a torn block (one LBA is atomic,
                    AWUPF 0).
  blackbox, a volatile write cache (wb_size_mb without wb_plp; Layout.vwc)
                    an acknowledged write is durable when it was FUA, when a Flush
                    submitted after its completion completed, when a cache-off completed
                    after it, or when it was submitted after a cache-off completed (written
                    through); an acknowledged Write Zeroes or Deallocate is durable. Each LBA
                    holds one of its versions from its last durable one (or what the last
                    check found) to its last acknowledged or in-flight one (a write's
                    block or zeroes), any of them: the buffer writes units out oldest
                    first, but an overwrite it absorbs keeps the unit's place and FUA,
                    WCE=0 and Deallocate take units out of turn, so nothing is assumed
                    across LBAs; never a version older than the last durable one, never a
                    torn block or another command's data. (wb_plp=on: the plain blackbox
                    rule.)

A command in flight on a zone or chunk may or may not have happened: the checker tries
both and accepts either. Anomalies seen by one check (a stale block, data above a write
pointer) become part of the state the next check expects, so one fault is counted once.
"""

import copy
import dataclasses
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "guest"))
from plp_check import classify, extents, pattern_unit, protected  # noqa: E402

SEQ_BITS = 40
SEQ_MASK = (1 << SEQ_BITS) - 1
ZERO = 0                        # a cell's generation for "zeroes" (Write Zeroes, Deallocate)


def make_gen(unit_gen, seq):
    """The generation a write's blocks carry: its unit's generation and its sequence number."""
    return unit_gen << SEQ_BITS | seq


def describe_gen(gen):
    if isinstance(gen, bytes):
        return "the bytes seen by the last check"
    if gen == ZERO:
        return "zeroes"
    return "write #%d (unit generation %d)" % (gen & SEQ_MASK, gen >> SEQ_BITS)


def block(lba_size, lba, gen):
    """One block of the pattern: what a write of generation gen puts at lba."""
    if gen == ZERO:
        return bytes(lba_size)
    return pattern_unit(lba, gen) * (lba_size // 32)


def oob_block(meta, lba, gen):
    """The OOB bytes a vector write of generation gen gives lba (meta a multiple of 32)."""
    return pattern_unit(lba, gen) * (meta // 32)


# --- inputs ---

@dataclasses.dataclass
class Op:
    """One command of the round, as the host saw it."""
    seq: int                    # the host's number for it (a write's blocks carry it)
    op: str                     # write append zeroes dsm flush reset finish close open
                                # cache-off (Set Features VWC WCE=0)
    unit: int = None            # zone or chunk index (None: flush, blackbox)
    slba: int = 0
    nlb: int = 0
    gen: int = None             # generation its blocks carry (data writes)
    protect: bool = False       # CDW3 bit 0 (plp=selective)
    fua: bool = False
    oob: bool = False           # whitebox: a vector write with OOB
    sub: int = 0                # host event number of its doorbell
    ack: int = None             # host event number of its completion; None: in flight
    status: int = 0             # completion status (SCT << 8 | SC)
    result_lba: int = None      # Zone Append: the LBA its completion names

    @property
    def writes_data(self):
        return self.op in ("write", "append", "zeroes", "dsm")


@dataclasses.dataclass
class Layout:
    kind: str                   # zoned, whitebox, blackbox
    lba_size: int
    units: list                 # [(first LBA, writable LBAs)] of each zone / chunk / region
    plp: str = None             # zoned: None (unset), none, selective, full
    plp_zones: frozenset = frozenset()
    meta: int = 0               # whitebox: OOB bytes per sector
    vwc: bool = False           # blackbox: a volatile write cache (a buffer without PLP)

    def name(self, u):
        what = {"zoned": "zone", "whitebox": "chunk"}.get(self.kind, "region")
        return "%s %d (LBA %d)" % (what, u, self.units[u][0])


@dataclasses.dataclass
class UnitState:
    """A zone or chunk (or the blackbox region) as a check established it."""
    state: str = "empty"        # zoned: empty closed full; whitebox: free open closed
    wp: int = 0
    wli: int = 0
    content: dict = dataclasses.field(default_factory=dict)   # lba -> gen | bytes
    oob: dict = dataclasses.field(default_factory=dict)       # lba -> gen | bytes
    anomalies: dict = dataclasses.field(default_factory=dict)  # lba -> (data, oob) above wp


@dataclasses.dataclass
class View:
    """A zone or chunk as the restarted drive shows it: its state, write pointer, wear
    index, and its data (and OOB) from its first LBA for its writable length."""
    state: str
    wp: int
    data: bytes
    oob: bytes = b""
    wli: int = 0


def fresh_state(layout):
    return {u: UnitState(state="free" if layout.kind == "whitebox" else "empty", wp=start)
            for u, (start, _) in enumerate(layout.units)}


# --- the model of one unit ---

@dataclasses.dataclass
class Cell:
    gen: object                 # int generation, or bytes the last check saw
    must: bool                  # must be there (else it may be lost: a zero hole)
    oob: object = None          # whitebox: expected OOB generation (ZERO: zeroes)
    ack: int = -1               # event number of the completion (-1: an earlier round)
    seq: int = None             # the command that wrote it


class Model:
    """A unit after a sequence of commands, from the state the last check left."""

    def __init__(self, layout, u, base, write_through=None):
        self.layout, self.u = layout, u
        self.write_through = write_through      # event number: the cache went off
        self.start, self.cap = layout.units[u]
        self.state, self.wp, self.wli = base.state, base.wp, base.wli
        self.cells = {lba: Cell(base.content.get(lba, ZERO), True, base.oob.get(lba, ZERO))
                      for lba in set(base.content) | set(base.oob)}
        self.anomalies = base.anomalies
        self.label = "the acknowledged commands"
        self.why = "as the last check found it"     # what set the state last
        self.unacked = set()        # generations of the writes in flight

    def clone(self, label):
        m = copy.copy(self)
        m.cells = {k: copy.copy(c) for k, c in self.cells.items()}
        m.label = label
        return m

    def drain(self):
        """The zone's buffered data is written out: all of it durable."""
        for c in self.cells.values():
            c.must = True

    def apply(self, op, acked):
        lay = self.layout
        before = self.state
        plp = lay.plp is not None and lay.kind == "zoned"
        if op.writes_data:
            prot = not plp or protected(lay.plp, lay.plp_zones, self.u, op.protect) or \
                (self.write_through is not None and op.sub > self.write_through)
            # an alternative with the write in flight done: without plp it is all there
            must = (acked and prot) or not plp
            gen = ZERO if op.op in ("zeroes", "dsm") else op.gen
            for lba in range(op.slba, op.slba + op.nlb):
                self.cells[lba] = Cell(gen, must, op.gen if op.oob else ZERO,
                                       op.ack if acked else None, op.seq)
            if lay.kind == "blackbox":
                return
            self.wp = op.slba + op.nlb
            if self.wp == self.start + self.cap:
                # a zone that fills up is written out before it is saved Full
                self.state = "full" if lay.kind == "zoned" else "closed"
                self.drain()
            else:
                self.state = "open"
            if plp and op.fua and acked and not prot:
                self.drain()    # FUA: the zone's unprotected data is programmed first
        elif op.op == "finish":
            self.wp, self.state = self.start + self.cap, "full"
            self.drain()
        elif op.op == "close":
            self.state = "closed" if self.wp > self.start else "empty"
            self.drain()
        elif op.op == "open":
            self.state = "open"
        elif op.op == "reset":
            self.cells.clear()
            self.wp = self.start
            self.state = "free" if lay.kind == "whitebox" else "empty"
            self.wli = min(self.wli + 1, 255)
        if self.state != before:
            self.why = "by the %s #%d from %s" % (op.op, op.seq, before)

    def expects(self):
        states, lo, hi = self.after_restart()
        return "%s %s, write pointer %s" % (" or ".join(sorted(states)), self.why,
                                            lo if lo == hi else "%d..%d" % (lo, hi))

    def after_restart(self):
        """(states, lowest and highest write pointer) the restarted drive may show."""
        lay = self.layout
        if lay.kind == "whitebox":
            return {self.state}, self.wp, self.wp
        if self.state == "full":
            return {"full"}, self.start + self.cap, self.start + self.cap
        if lay.plp is None:
            return {"empty" if self.wp == self.start else "closed"}, self.wp, self.wp
        low = max([lba + 1 for lba, c in self.cells.items() if c.must], default=self.start)
        return {"empty", "closed"}, low, self.wp


# --- comparing ---

class Findings:
    """Violations by category, with the LBAs concerned and one example each."""

    def __init__(self):
        self.items = {}             # category -> [lbas, example]

    def add(self, category, lba, example):
        entry = self.items.setdefault(category, [[], example])
        entry[0].append(lba)

    def note(self, category, text):
        self.items.setdefault(category, [[], text])

    def __bool__(self):
        return bool(self.items)

    def lines(self):
        out = []
        for cat, (lbas, example) in self.items.items():
            if lbas:
                out.append("%s, %d LBA%s (%s); e.g. %s" % (
                    cat, len(lbas), "" if len(lbas) == 1 else "s", extents(lbas), example))
            else:
                out.append(example)
        return out


def found_text(kind, gen):
    if kind == "zero":
        return "zeroes"
    if kind == "ok":
        return describe_gen(gen)
    if kind == "other-lba":
        return "the block of LBA %d, %s" % (gen[0], describe_gen(gen[1]))
    return "bytes of no write (torn or garbled)"


def check_cell(f, lba, sector, cell, holes, below, wp_rule=True, unacked=()):
    """One block against what it may hold (cell None: zeroes); records a finding. Returns 1
    when a must-survive block was compared intact. below: under the write pointer (always,
    without one: wp_rule False). unacked: generations of the writes in flight."""
    kind, gen = classify(sector, lba)
    if cell is None:
        ok, want = kind == "zero", ZERO
    else:
        want = cell.gen
        if isinstance(want, bytes):
            ok = sector == want
        elif want == ZERO:
            ok = kind == "zero"
        else:
            ok = kind == "ok" and gen == want
        if ok:
            return 1 if cell.must else 0
        if kind == "zero" and not cell.must and holes:
            return 0        # a lost write that may be lost: a hole
    if ok:
        return 0
    bw = " below the write pointer" if wp_rule else ""
    if not below:
        what = ("acknowledged write lost (above the write pointer)" if cell
                else "data above the write pointer")
    elif cell is not None and cell.must:
        what = "acknowledged write missing or damaged"
    elif kind == "ok" and gen in unacked:
        what = "unacknowledged data" + bw
    elif kind == "ok":
        what = "stale data" + bw
    elif kind == "zero":
        what = "zeroes" + bw + " where a write must be"
    elif kind == "other-lba":
        what = "another LBA's block" + bw
    else:
        what = "torn or garbled block" + bw
    alts = "" if cell is None or cell.must else " or zeroes" if holes else ""
    f.add(what, lba, "LBA %d holds %s, expected %s%s" % (
        lba, found_text(kind, gen), describe_gen(want), alts))
    return 0


def compare(model, view):
    """A unit's view against one alternative of the model: (Findings, must-survive blocks
    compared, generations of this round's writes compared)."""
    lay = model.layout
    f = Findings()
    bs = lay.lba_size
    states, wp_lo, wp_hi = model.after_restart()
    if view.state not in states:
        f.note("state", "state %s, expected %s" % (view.state, " or ".join(sorted(states))))
    if not wp_lo <= view.wp <= wp_hi:
        f.note("write pointer", "write pointer %d, expected %s" % (
            view.wp, wp_lo if wp_lo == wp_hi else "%d..%d" % (wp_lo, wp_hi)))
    if lay.kind == "zoned" and (view.state == "empty") != (view.wp == model.start):
        f.note("state and write pointer", "%s with write pointer %d (the zone starts at %d)" % (
            view.state, view.wp, model.start))
    if lay.kind == "whitebox" and view.wli != model.wli:
        f.note("wear index", "wear index %d, expected %d" % (view.wli, model.wli))
    holes = lay.plp is not None and lay.kind == "zoned"
    intact, gens = 0, set()
    for i in range(model.cap):
        lba = model.start + i
        sector = view.data[i * bs:(i + 1) * bs]
        cell = model.cells.get(lba)
        below = lay.kind == "blackbox" or lba < view.wp
        if not below and lba in model.anomalies and model.anomalies[lba][0] == sector:
            continue        # seen above the write pointer by an earlier check: counted then
        n = check_cell(f, lba, sector, cell if below or (cell and cell.must) else None,
                       holes, below, unacked=model.unacked)
        intact += n
        if cell and cell.ack not in (-1, None):
            gens.add(cell.seq)
        if lay.meta:
            check_oob(f, model, view, i, lba, cell, below)
    return f, intact, gens


def check_oob(f, model, view, i, lba, cell, below):
    meta = model.layout.meta
    got = view.oob[i * meta:(i + 1) * meta]
    if not below:
        old = model.anomalies.get(lba)
        if got.strip(b"\0") and not (old and old[1] == got):
            kind, gen = classify(got, lba)
            f.add("OOB above the write pointer", lba, "LBA %d has OOB of %s" % (
                lba, found_text(kind, gen)))
        return
    want = ZERO if cell is None else cell.oob
    if isinstance(want, bytes):
        ok = got == want
    else:
        ok = got == (bytes(meta) if want == ZERO else oob_block(meta, lba, want))
    if not ok:
        kind, gen = classify(got, lba)
        f.add("OOB does not match", lba, "LBA %d has OOB of %s, expected %s" % (
            lba, found_text(kind, gen), describe_gen(want)))


# --- the check ---

class Result:
    def __init__(self):
        self.violations = []        # lines
        self.notes = []
        self.state = {}
        self.counts = dict.fromkeys(("acked writes", "writes checked", "blocks checked",
                                     "in flight", "alternatives taken", "rolled back",
                                     "unflushed kept"), 0)

    @property
    def ok(self):
        return not self.violations

    def text(self):
        out = ["kill check: %s (%s)" % ("PASS" if self.ok else "FAIL", ", ".join(
            "%s %d" % kv for kv in self.counts.items()))]
        out += ["  " + n for n in self.notes]
        out += ["  VIOLATION " + v for v in self.violations]
        return "\n".join(out)


def status_text(op):
    return "sct %d sc 0x%02x" % (op.status >> 8, op.status & 0xFF)


def check(layout, state, ops, views):
    """Check one kill. state: {unit: UnitState} the last check established (fresh_state()
    for a new drive); ops: the round's commands; views: {unit: View} after the restart.
    Returns a Result whose .state is what the next check starts from."""
    res = Result()
    ops = sorted(ops, key=lambda o: o.sub)
    done = [o for o in ops if o.ack is not None and not o.status]
    flush_sub = max((o.sub for o in done if o.op in ("flush", "cache-off")), default=None)
    cache_off = min((o.ack for o in done if o.op == "cache-off"), default=None)
    cache_offs = vwc_points(ops)[1]
    per_unit = {u: [] for u in range(len(layout.units))}
    for o in ops:
        if o.ack is not None and o.status:
            res.violations.append("%s #%d %s: completed with %s" % (
                o.op, o.seq, "" if o.unit is None else layout.name(o.unit), status_text(o)))
            continue
        if o.writes_data and o.ack is not None:
            res.counts["acked writes"] += 1
        if o.op == "append" and o.ack is not None and o.result_lba != o.slba:
            res.violations.append("append #%d to %s: completed at LBA %s, the write pointer "
                                  "was %d" % (o.seq, layout.name(o.unit), o.result_lba, o.slba))
        if o.ack is None:
            res.counts["in flight"] += 1
        if o.op in ("flush", "cache-off"):
            continue
        u = o.unit if layout.kind != "blackbox" else 0
        per_unit[u].append(o)
    for u in range(len(layout.units)):
        if layout.vwc:
            check_vwc(layout, u, state[u], per_unit[u], flush_sub, cache_offs, views[u], res)
            continue
        check_unit(layout, u, state[u], per_unit[u], (flush_sub, cache_off), views[u], res)
    return res


def alternatives(layout, u, base, uops, flush_sub, cache_off):
    """The models the view may match: the acknowledged commands applied; then, on a zone or
    chunk, the command in flight applied too (one at most). On blackbox, the commands in
    flight (on distinct LBAs) are returned for compare_blackbox, block by block."""
    m = Model(layout, u, base, cache_off)
    inflight = []
    for o in uops:
        if o.ack is None:
            inflight.append(o)
        else:
            m.apply(o, acked=True)
    if flush_sub is not None:
        for c in m.cells.values():
            if c.ack is not None and c.ack < flush_sub:
                c.must = True       # a completed Flush was submitted after it completed
    m.unacked = {o.gen for o in inflight if o.gen is not None}
    out = [m]
    for o in inflight if layout.kind != "blackbox" else []:
        alt = out[-1].clone("the %s #%d in flight" % (o.op, o.seq))
        alt.apply(o, acked=False)
        out.append(alt)
    return out, inflight


def check_unit(layout, u, base, uops, durable_points, view, res):
    models, inflight = alternatives(layout, u, base, uops, *durable_points)
    if layout.kind == "blackbox":
        f, intact, gens = compare_blackbox(models[0], inflight, view)
    else:
        tried = [(compare(m, view), m) for m in models]
        # a match, else the alternative with the fewest kinds of finding
        (f, intact, gens), m = min(tried, key=lambda t: len(t[0][0].items))
        if not f and m is not models[0]:
            res.counts["alternatives taken"] += 1
    res.counts["blocks checked"] += intact
    res.counts["writes checked"] += len(gens)
    where = layout.name(u)
    if layout.kind != "blackbox":
        where += " seen %s, write pointer %d" % (view.state, view.wp)
    if f:
        head = "%s; after %s, expecting %s" % (where, models[0].label, models[0].expects())
        head += "".join("; or after %s, expecting %s" % (m.label, m.expects())
                        for m in models[1:])
        res.violations.append(head + ":\n      " + "\n      ".join(f.lines()))
    res.state[u] = established(layout, u, view)


def compare_blackbox(model, inflight, view):
    """Blackbox: each LBA its last acknowledged write, or the one in flight on it."""
    alt = {}
    for o in inflight:
        for lba in range(o.slba, o.slba + o.nlb):
            alt[lba] = ZERO if o.op in ("zeroes", "dsm") else o.gen
    f = Findings()
    bs = model.layout.lba_size
    intact, gens = 0, set()
    for i in range(model.cap):
        lba = model.start + i
        sector = view.data[i * bs:(i + 1) * bs]
        cell = model.cells.get(lba)
        if lba in alt:
            kind, gen = classify(sector, lba)
            if (kind == "zero" and alt[lba] == ZERO) or (kind == "ok" and gen == alt[lba]):
                continue
        intact += check_cell(f, lba, sector, cell, False, True, wp_rule=False)
        if cell and cell.ack not in (-1, None):
            gens.add(cell.seq)
    return f, intact, gens


def vwc_points(ops):
    """(the last submission of a completed Flush or cache-off, the completions of the
    cache-offs): every cache-off that completed wrote out what completed before it, and
    writes submitted after one went through."""
    done = [o for o in ops if o.ack is not None and not o.status]
    return (max((o.sub for o in done if o.op in ("flush", "cache-off")), default=None),
            [o.ack for o in done if o.op == "cache-off"])


def vwc_durable(o, flush_sub, cache_offs):
    """A volatile write cache: whether an acknowledged command is durable."""
    if o.op in ("zeroes", "dsm") or o.fua:
        return True
    if flush_sub is not None and o.ack < flush_sub:
        return True             # a completed Flush (or cache-off) submitted after it
    return any(o.ack < c or o.sub > c for c in cache_offs)


def vwc_versions(base, lba_ops, flush_sub, cache_offs):
    """The versions an LBA may hold, oldest first: its last durable one, then every later
    command on it acknowledged or in flight (gen, ZERO, or bytes the last check saw), with
    the seq of the command behind each (None: the last check's)."""
    out = [(base, None)]
    for o in lba_ops:
        v = (ZERO if o.op in ("zeroes", "dsm") else o.gen, o.seq)
        if o.ack is not None and vwc_durable(o, flush_sub, cache_offs):
            out = [v]
        else:
            out.append(v)
    return out


def check_vwc(layout, u, base, uops, flush_sub, cache_offs, view, res):
    """Blackbox with a volatile write cache, block by block (kill_check's docstring)."""
    start, cap = layout.units[u]
    bs = layout.lba_size
    per_lba = {}
    for o in uops:              # by submission; never two on one LBA in flight
        for lba in range(o.slba, o.slba + o.nlb):
            per_lba.setdefault(lba, []).append(o)
    by_gen = {o.gen: o for o in uops if o.gen is not None}
    by_seq = {o.seq: o for o in uops}
    first_seq = min(by_seq, default=1 << SEQ_BITS)
    f = Findings()
    gens = set()
    for i in range(cap):
        lba = start + i
        sector = view.data[i * bs:(i + 1) * bs]
        ops = per_lba.get(lba, [])
        vs = vwc_versions(base.content.get(lba, ZERO), ops, flush_sub, cache_offs)
        kind, gen = classify(sector, lba)
        hit = None
        for n, (want, seq) in enumerate(vs):
            if (sector == want if isinstance(want, bytes) else
                    kind == "zero" if want == ZERO else kind == "ok" and gen == want):
                hit = n
        if hit is not None:
            if len(vs) == 1 and (vs[0][1] is not None or lba in base.content):
                res.counts["blocks checked"] += 1   # data that had to survive
                if vs[0][1] is not None:
                    gens.add(vs[0][1])
            acked = [n for n, (_, seq) in enumerate(vs)
                     if seq is not None and by_seq[seq].ack is not None]
            if acked and hit < acked[-1]:
                res.counts["rolled back"] += 1      # an acknowledged version was lost
            elif hit and vs[hit][1] is not None and by_seq[vs[hit][1]].ack is not None:
                res.counts["unflushed kept"] += 1   # the buffer wrote it out by itself
            continue
        mine = kind == "ok" and gen in by_gen and any(o is by_gen[gen] for o in ops)
        if mine or (kind == "ok" and (gen & SEQ_MASK) < first_seq):
            what = "older than its last durable write"
        elif kind == "ok":
            what = "data of no write of this LBA"
        elif kind == "zero":
            what = "zeroes where a durable write must be"
        elif kind == "other-lba":
            what = "another LBA's block"
        else:
            what = "torn or garbled block"
        f.add(what, lba, "LBA %d holds %s, expected %s" % (
            lba, found_text(kind, gen), " or ".join(describe_gen(w) for w, _ in vs)))
    res.counts["writes checked"] += len(gens)
    if f:
        res.violations.append("%s; after the commands of the round, a volatile write cache:"
                              "\n      %s" % (layout.name(u), "\n      ".join(f.lines())))
    res.state[u] = established(layout, u, view)


def established(layout, u, view):
    """What the view shows, as the next check's starting point."""
    start, cap = layout.units[u]
    bs, meta = layout.lba_size, layout.meta
    st = UnitState(state=view.state, wp=view.wp, wli=view.wli)
    end = start + cap if layout.kind == "blackbox" else view.wp
    for i in range(cap):
        lba = start + i
        sector = view.data[i * bs:(i + 1) * bs]
        oob = view.oob[i * meta:(i + 1) * meta] if meta else b""
        if lba >= end:
            if sector.strip(b"\0") or oob.strip(b"\0"):
                st.anomalies[lba] = (sector, oob)
            continue
        kind, gen = classify(sector, lba)
        if kind == "ok":
            st.content[lba] = gen
        elif kind != "zero":
            st.content[lba] = sector
        if meta:
            okind, ogen = classify(oob, lba)
            if okind == "ok" and oob == oob_block(meta, lba, ogen):
                st.oob[lba] = ogen
            elif okind != "zero":
                st.oob[lba] = oob
    return st
