"""The same I/O through the emulator and through femu-sim, for the cross-check.

A workload is a list of phases, each a queue depth and a list of commands (op, byte
offset, bytes), and optionally FDP placement: a list of placement identifier indices that
the phase's writes take in turn (fio's fdp_pli, roundrobin; the emulator sends each write
with the Data Placement directive and the identifier pid_of(index)). A phase of POWER_CUT
alone cuts the power and brings it back (femu-sim's trace op; the emulator's power-cut
property, a machine reset, the controller enabled again). femu-sim replays each phase as a
trace (read_iolog, replay_no_stall) at its depth, phases one after another (stonewall).
The emulator runs under qtest with dataplane=main-loop, so its clock is the virtual clock
and moves only when this driver steps it: commands are submitted at the current time, the
clock steps to the device's next deadline, the completions found there free their slots,
and the next commands go in at that time - the closed loop femu-sim runs, in the same
virtual time."""

import json
import os
import struct
import subprocess

import nvme
from qtest import QTestError
from qtest_machine import DevConfig, start_machine

FEMU_BUILD = os.environ.get("FEMU_BUILD",
                            os.path.join(os.path.dirname(__file__), "..", "..", "build"))
FEMU_SIM = os.environ.get("FEMU_SIM", os.path.join(FEMU_BUILD, "femu-sim"))
PAGE = 4096
MAX_TRANSFER = 4096 << 7        # the device's default MDTS (mdts=7)
MAX_QD = 64
OPCODES = {"read": nvme.IO_READ, "write": nvme.IO_WRITE,
           "write_zeroes": nvme.IO_WRITE_ZEROES}
POWER_CUT = ("power_cut", 0, 0)
DTYPE_PLACEMENT = 2


def phase_parts(phase):
    """(queue depth, commands, placement identifier indices or None)."""
    return phase if len(phase) == 3 else (phase[0], phase[1], None)


def write_trace(path, cmds):
    with open(path, "w") as f:
        f.write("time,op,offset,length\n")
        for op, off, length in cmds:
            f.write("0,power_cut,,\n" if op == "power_cut" else
                    "0,%s,%d,%d\n" % (op, off, length))


def run_sim(props, phases, workdir):
    """femu-sim's JSON result for the phases on the drive `props` ("k=v,...")."""
    jobs = []
    for i, phase in enumerate(phases):
        qd, cmds, plids = phase_parts(phase)
        trace = os.path.join(workdir, "phase%d.csv" % i)
        write_trace(trace, cmds)
        place = "fdp=1\nfdp_pli=%s\n" % ",".join(map(str, plids)) if plids else ""
        assert not plids or plids == sorted(set(plids)), "fio sorts fdp_pli: give it sorted"
        jobs.append("[phase%d]\nread_iolog=%s\nreplay_no_stall=1\niodepth=%d\n%sstonewall\n"
                    % (i, trace, qd, place))
    jobfile = os.path.join(workdir, "check.fio")
    with open(jobfile, "w") as f:
        f.write("".join(jobs))
    out = subprocess.run([FEMU_SIM, "--dev", props, "--output-format=json", jobfile],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, "femu-sim failed: %s" % out.stderr
    return json.loads(out.stdout)


class ClosedLoop:
    """Keeps up to qd commands in flight on the emulator, in virtual time."""

    def __init__(self, machine, ctrl, sq, max_len):
        self.m, self.qt, self.ctrl, self.sq = machine, machine.qt, ctrl, sq
        self.bs = ctrl.block_size(1)
        # one data buffer per SQ slot (reused), its PRPs per length
        # (a transfer's parts share its slot's buffer: the data is not compared)
        max_len = min(max_len, MAX_TRANSFER)
        self.bufs = [ctrl.alloc.alloc(max_len + PAGE) // PAGE * PAGE + PAGE
                     for _ in range(MAX_QD)]
        self.prp_cache = {}

    def _prps(self, slot, length):
        key = (slot, length)
        if key not in self.prp_cache:
            self.prp_cache[key] = self.ctrl.prps(self.bufs[slot], length)
        return self.prp_cache[key]

    def _fetched(self, counting_all=False):
        """Commands the device has fetched: the firmware model's count when it runs (it
        counts every command), the host read and write commands otherwise."""
        st = self.m.qmp("qom-get", path="/machine/peripheral/femu0",
                        property="stats")["return"]
        if "fw-commands" in st:
            return st["fw-commands"]
        assert not counting_all, "only reads and writes are counted without fw_cores"
        return st["host-read-commands"] + st["host-write-commands"]

    def _wait_fetched(self, upto):
        """The device has fetched every command rung so far (at the current time): its I/O
        counters, which count a command when it is fetched, say so. Stepping the clock
        before would make them arrive later than femu-sim's."""
        for _ in range(1000):
            if self._fetched() >= self.base + upto:
                return
        raise AssertionError("the device did not fetch the commands")

    def _step(self):
        """To the device's next deadline. Its bottom half arms the timer after the pass that
        fetched the commands: until then there may be none."""
        for _ in range(100):
            try:
                return self.qt.clock_step()
            except QTestError as e:
                if "could not advance" not in str(e):
                    raise
                self.m.qmp("query-status")
        raise AssertionError("the device never armed its timer")

    def run(self, qd, cmds, max_transfer=MAX_TRANSFER, pids=None):
        """cmds at queue depth qd; a transfer above max_transfer (the device's MDTS) goes as
        several commands at once, as the block layer splits it (and femu-sim does). pids:
        the writes carry the Data Placement directive with these identifiers in turn."""
        assert qd <= MAX_QD, "queue depth %d: at most %d here" % (qd, MAX_QD)
        self.base = self._fetched(any(op == "write_zeroes" for op, _, _ in cmds))
        ctrl, sq, cq = self.ctrl, self.sq, self.sq.cq
        pending, parts, free, i, sent, writes = {}, {}, list(range(qd)), 0, 0, 0
        while i < len(cmds) or pending:
            while i < len(cmds) and free:
                op, off, length = cmds[i]
                slot = free.pop()
                parts[slot] = 0
                cdw12 = cdw13 = 0
                if pids and op == "write":
                    # one identifier per write, however many commands it goes as
                    cdw12, cdw13 = DTYPE_PLACEMENT << 20, pids[writes % len(pids)] << 16
                    writes += 1
                for at in range(0, length, max_transfer):
                    n = min(max_transfer, length - at)
                    p1, p2 = self._prps(slot, n)
                    if op == "write_zeroes":
                        p1 = p2 = 0     # no data
                    c = ctrl.rw_cmd(OPCODES[op], 1, (off + at) // self.bs, n // self.bs,
                                    prp1=p1, prp2=p2, cdw12=cdw12)
                    c[52:56] = struct.pack("<I", cdw13)
                    cid = ctrl.queue_cmd(sq, c)
                    pending[cid] = slot
                    parts[slot] += 1
                    sent += 1
                i += 1
            ctrl.ring_sq(sq)
            self._wait_fetched(sent)
            # what completed at this time was posted when it was fetched
            if not ctrl.reap(cq):
                self._step()
                for _ in range(50):
                    if ctrl.reap(cq):
                        break
            for key in [k for k in cq.done if k[0] == sq.qid and k[1] in pending]:
                c = cq.done.pop(key)
                assert c.ok, "command %d: %s" % (key[1], c)
                slot = pending.pop(key[1])
                parts[slot] -= 1
                if not parts[slot]:
                    free.append(slot)


def power_cycle(m):
    """The power cut (QMP), then back with a machine reset, as femu-sim's power_cut."""
    path = "/machine/peripheral/femu0"
    assert "error" not in m.qmp("qom-set", path=path, property="power-cut", value=True)
    assert "error" not in m.qmp("system_reset")
    assert m.qmp("qom-get", path=path, property="power-cut")["return"] is False
    m.rebind()


def run_emulator(props, phases, workdir, size_mb, pid_of=None):
    """The emulator's stats property after the phases (pid_of: a placement identifier
    index to its placement identifier)."""
    cfg = DevConfig(mode=int(dict(kv.split("=", 1) for kv in props.split(","))["femu_mode"]),
                    size_mb=size_mb, lba_index=1, queues=1, entries=256,
                    extra=",".join(kv for kv in props.split(",")
                                   if not kv.startswith(("femu_mode=", "devsz_mb=",
                                                         "lba_index="))) +
                    ",dataplane=main-loop")
    max_len = max(length for p in phases for _, _, length in phase_parts(p)[1])
    m = start_machine(cfg, workdir)

    def start():
        # zoned namespaces are active only when the host selects every command set
        m.ctrl.enable(css=nvme.CC_CSS_ALL if cfg.mode == 3 else nvme.CC_CSS_NVM)
        return ClosedLoop(m, m.ctrl, m.ctrl.create_io_queues(1, entries=256), max_len)

    try:
        loop = start()
        for phase in phases:
            qd, cmds, plids = phase_parts(phase)
            if cmds == [POWER_CUT]:
                power_cycle(m)
                loop = start()
                continue
            assert POWER_CUT not in cmds, "a power cut is a phase of its own"
            loop.run(qd, cmds, pids=[pid_of(i) for i in plids] if plids else None)
        st = m.qmp("qom-get", path="/machine/peripheral/femu0", property="stats")["return"]
        assert m.qt.alive()
        return st
    finally:
        m.close()


# statistics of the host side, of real time or of the device thread's passes, which
# femu-sim does not have
NOT_COMPARED = ("lateness_", "power_cuts", "completions", "max_pass_ns", "long_cmd_steps",
                "dataplane_")


def compare(emu, sim, tolerance=float(os.environ.get("SIMCHECK_TOLERANCE", "0.02"))):
    """Every statistic both report, within tolerance (relative); the differences."""
    bad = []
    # QMP spells the names with '-', the vendor log and femu-sim with '_'
    emu = {k.replace("-", "_"): v for k, v in emu.items()}
    for name, want in sorted(emu.items()):
        if name.startswith(NOT_COMPARED):
            continue
        assert name in sim, "femu-sim does not report %s" % name
        got = sim[name]
        if abs(got - want) > max(tolerance * abs(want), 1):
            bad.append("%s: emulator %d, femu-sim %d" % (name, want, got))
    return bad


def seq(op, start, count, size=PAGE):
    """count commands of size bytes from start on, in order."""
    return [(op, start + i * size, size) for i in range(count)]


def check(tmp_path, props, size_mb, phases, pid_of=None):
    """The phases through femu-sim and the emulator: every statistic the same (compare);
    the emulator's statistics (names with '_') and femu-sim's JSON."""
    sim = run_sim(props, phases, str(tmp_path))
    for job in sim["jobs"]:
        assert job["error"] == 0, job
    emu = run_emulator(props, phases, str(tmp_path), size_mb, pid_of)
    emu = {k.replace("-", "_"): v for k, v in emu.items()}
    bad = compare(emu, sim["stats"])
    assert not bad, "femu-sim and the emulator differ:\n" + "\n".join(bad)
    return emu, sim
