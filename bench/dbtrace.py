#!/usr/bin/env python3
"""Block traces of RocksDB db_bench recorded in the guest, for femu-sim to replay
(bench/sim-plp.py's dbbench part).

Recording (`record`): one TCG guest with one zoned drive that has no media time (so the
guest, not the drive, sets the pace) and the layout of bench/plp-dbbench.py: two zoned
namespaces (plplib.TWO_NS, 16 MiB zones), a zoned btrfs on each made afresh, RocksDB's data
on namespace 1 and its WAL on namespace 2. db_bench runs as plp-dbbench.py runs it (sync=1,
100-byte keys, 800-byte values, one thread, no compression), twice: fillseq of --keys keys,
then overwrite of as many on the database fillseq left (--use_existing_db=1). The memtable
and target file size are --memtable-kb (8 MiB by default, the paper's).

What is recorded: every NVMe I/O command the guest's driver sends, from the kernel's
nvme:nvme_setup_cmd tracepoint (tracefs), with the opcode and its fields as the drive
receives them: Write (with its FUA bit), Zone Append, Read, Flush, Zone Management Send
(reset, finish) and Receive (zone reports); and the completions that failed
(nvme:nvme_complete_rq with status != 0: there must be none). A marker in the trace
(trace_marker) starts each phase: setup (mkfs, mount), fillseq, overwrite. blktrace is not
used: Linux 6.12's blktrace reports a zone append as a plain write at its zone's start and
a zone reset or finish as a request of no length whose sector blkparse does not print, so
the zoned file system's trace could not be replayed from it.

Stored in a directory (build/dbtrace/full by default; a small one is committed as
bench/traces/dbbench-sample): nvme-trace.txt.gz (the tracepoint lines as tracefs printed
them) and meta.json (the settings, the guest's geometry, db_bench's result lines).

Conversion (`convert`): the tracepoint lines become one femu-sim CSV trace per phase and
namespace (time in seconds, op, offset, length in bytes; sim/trace.c): read, write,
write_fua, zone_append (at its zone's start; femu-sim places it at the write pointer as
the drive does), zone_append_fua, flush, zone_reset, zone_finish. Zone reports move no
data and are counted, not replayed. Anything else is refused, naming the line.

Replay (`replay_jobs`): a pass is the recorded run again on the same drive: its setup
(and for overwrite, fillseq) as untimed jobs, then the benchmark's phase timed, each
namespace's commands as a job of its own at queue depth 1 as fast as the drive answers.
From the second pass on, the setup first resets every zone the pass before left written,
as mkfs.btrfs does on a used drive (it resets every zone that is not empty). A run longer
than the recording is whole passes: Puts = passes x keys.

Usage: bench/dbtrace.py record [--keys 20000] [--memtable-kb 8192] [--out DIR]
       bench/dbtrace.py info [DIR]
"""

import argparse
import base64
import gzip
import json
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import plplib  # noqa: E402

REPO = HERE.parent
FULL = REPO / "build" / "dbtrace" / "full"
SAMPLE = HERE / "traces" / "dbbench-sample"
PHASES = ("setup", "fillseq", "overwrite")
BENCHES = ("fillseq", "overwrite")
FULL_KEYS = 20000
FUA = 1 << 14                   # NVMe read/write CDW12 bit 30: control bit 14
SERIAL = "REC"


class TraceError(Exception):
    pass


# ---- recording ----

def bench_cmds(keys, memtable_kb):
    """{benchmark: the db_bench command line the guest runs}: plp-dbbench.py's, on the
    file systems of namespaces 1 (data) and 2 (WAL); overwrite on fillseq's database."""
    db = " --db=/mnt/db/r --wal_dir=/mnt/wal/r --seed=1"
    return {"fillseq": plplib.db_bench_cmd("fillseq", keys, memtable_kb) + db,
            "overwrite": plplib.db_bench_cmd("overwrite", keys, memtable_kb) + db +
            " --use_existing_db=1"}


def guest_script(keys, memtable_kb):
    """Guest bash: trace the NVMe commands of mkfs + mount, fillseq and overwrite."""
    cmds = bench_cmds(keys, memtable_kb)
    return f"""
D=$(dev_of {SERIAL}) && W=$(dev_of {SERIAL} 2) || exit 1
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T || exit 1
E=$T/events/nvme
[ -d $E/nvme_setup_cmd ] || {{ echo "no nvme tracepoints in this kernel"; exit 1; }}
b=${{D#/dev/}}
echo @@geometry@@
echo "lba_bytes $(cat /sys/block/$b/queue/logical_block_size)"
echo "zone_bytes $(($(cat /sys/block/$b/queue/chunk_sectors) * 512))"
echo "ns1_bytes $(($(cat /sys/block/$b/size) * 512))"
echo "ns2_bytes $(($(cat /sys/block/${{W#/dev/}}/size) * 512))"
echo "kernel $(uname -r)"
echo 0 > $T/tracing_on
echo > $T/trace
echo 16384 > $T/buffer_size_kb
echo 'qid != 0' > $E/nvme_setup_cmd/filter || exit 1
echo 'status != 0' > $E/nvme_complete_rq/filter || exit 1
echo 1 > $E/nvme_setup_cmd/enable && echo 1 > $E/nvme_complete_rq/enable || exit 1
cat $T/trace_pipe > /tmp/nvme.txt & CAT=$!
echo 1 > $T/tracing_on
phase() {{ echo "femu-phase $1" > $T/trace_marker; echo "@@phase-$1@@"; }}
phase setup
mkfs.btrfs -f -O zoned -d single -m single $D >/dev/null 2>&1 || exit 1
mkfs.btrfs -f -O zoned -d single -m single $W >/dev/null 2>&1 || exit 1
mkdir -p /mnt/db /mnt/wal
mount -t btrfs $D /mnt/db && mount -t btrfs $W /mnt/wal || exit 1
phase fillseq
{cmds["fillseq"]} 2>&1 | grep -E '^fillseq ' || exit 1
phase overwrite
{cmds["overwrite"]} 2>&1 | grep -E '^overwrite ' || exit 1
phase end
echo 0 > $T/tracing_on
sleep 2
kill $CAT; wait $CAT
grep -v '^#' $T/trace >> /tmp/nvme.txt
umount /mnt/db /mnt/wal || exit 1
echo @@overrun@@
cat $T/per_cpu/cpu*/stats | awk '$1 == "overrun:" {{ n += $2 }} END {{ print n + 0 }}'
echo @@lines@@
wc -l < /tmp/nvme.txt
echo @@trace@@
gzip -c /tmp/nvme.txt | base64 -w 76
echo @@end@@
"""


def record(out, keys=FULL_KEYS, memtable_kb=8192, log=print, timeout=4 * 3600):
    """Boots the guest, records, stores out/nvme-trace.txt.gz and out/meta.json."""
    import bblib
    dev = dict(plplib.PAPER_FLASH, **plplib.TWO_NS, **plplib.NO_MEDIA_TIME)
    log(f"dbtrace: recording db_bench fillseq + overwrite of {keys} keys (memtable "
        f"{memtable_kb} KiB) in the guest ...")
    t0 = time.monotonic()
    g = bblib.Guest(guest_script(keys, memtable_kb),
                    [bblib.Device(SERIAL, 3, plplib.DRIVE_MB, **dev)], mem=2048,
                    timeout=timeout).run(
        lambda t, l: l.startswith("@@phase-") and log(f"  {t:6.0f}s {l.strip('@')}"))
    geo = dict(line.split(None, 1) for line in g.section("geometry").splitlines() if line)
    overrun = int(g.section("overrun").strip())
    if overrun:
        raise TraceError(f"the guest's trace buffer lost {overrun} events")
    blob = base64.b64decode("".join(g.section("trace").split()))
    text = gzip.decompress(blob).decode()
    lines = int(g.section("lines").strip())
    if text.count("\n") != lines:
        raise TraceError(f"the trace came through with {text.count(chr(10))} lines, the guest "
                         f"had {lines}")
    results = {b: g.section(f"phase-{b}").strip() for b in BENCHES}
    meta = dict(
        what="NVMe I/O commands of db_bench in the guest (nvme:nvme_setup_cmd); see "
             "bench/dbtrace.py",
        keys=keys, memtable_kb=memtable_kb, key_size=100, value_size=800, sync=1,
        db_bench=bench_cmds(keys, memtable_kb),
        results=results, drive=dev, serial=SERIAL, recorded=time.strftime("%Y-%m-%d %H:%M:%S"),
        guest_seconds=round(time.monotonic() - t0, 1),
        kernel=geo.get("kernel", "").strip(),
        lba_bytes=int(geo["lba_bytes"]), zone_bytes=int(geo["zone_bytes"]),
        ns_bytes=[int(geo["ns1_bytes"]), int(geo["ns2_bytes"])], trace_lines=lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / "nvme-trace.txt.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    parsed = parse(text.splitlines(), meta)      # refuses a trace it cannot convert
    meta["counts"] = parsed["counts"]
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    log(f"dbtrace: {lines} trace lines in {meta['guest_seconds']:.0f} s -> {out}")
    return out


# ---- conversion ----

LINE = re.compile(r"^\s*(?P<task>.*?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+"
                  r"(?P<flags>\S+\s+)?(?P<ts>\d+\.\d+): (?P<event>\w+): (?P<rest>.*)$")
SETUP = re.compile(r"nsid=(?P<nsid>\d+),.*\bcmd=\((?P<op>nvme_cmd_\w+) ?(?P<args>.*)\)$")
ARG = re.compile(r"(\w+)=([^,]*)")


def parse(lines, meta):
    """The tracepoint lines -> {'phases': {phase: {nsid: [(time, op, offset, length)]}},
    'counts': {phase: {ns: {op: n}}}}. Raises TraceError naming the line."""
    lba, zone = meta["lba_bytes"], meta["zone_bytes"]
    phases = {p: {1: [], 2: []} for p in PHASES}
    counts = {p: {"ns1": {}, "ns2": {}} for p in PHASES}
    phase = None
    skipped = 0

    def fail(no, why):
        raise TraceError(f"nvme-trace line {no}: {why}")

    for no, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        if "LOST" in line and "EVENTS" in line:
            fail(no, "the trace lost events")
        m = LINE.match(line)
        if not m:
            fail(no, f"not a tracepoint line: {line[:120]!r}")
        ev, rest, ts = m.group("event"), m.group("rest"), m.group("ts")
        if ev == "tracing_mark_write":
            name = rest.strip().removeprefix("femu-phase ").strip()
            if not rest.strip().startswith("femu-phase ") or name not in PHASES + ("end",):
                fail(no, f"unknown marker {rest.strip()!r}")
            phase = None if name == "end" else name
            continue
        if ev == "nvme_complete_rq":
            fail(no, f"a command failed in the guest: {rest}")
        if ev != "nvme_setup_cmd":
            fail(no, f"unknown event {ev}")
        s = SETUP.search(rest)
        if not s:
            fail(no, f"cannot read the command: {rest[:160]!r}")
        nsid, op = int(s.group("nsid")), s.group("op").removeprefix("nvme_cmd_")
        if nsid not in (1, 2):
            fail(no, f"namespace {nsid} (the drive has 1 and 2)")
        args = dict(ARG.findall(s.group("args")))

        def num(k, base=10):
            try:
                return int(args[k], base)
            except (KeyError, ValueError):
                fail(no, f"{op}: no {k} in {s.group('args')!r}")

        if op == "zone_mgmt_recv":
            rec = None                  # a zone report: no media access
        elif op == "flush":
            rec = ("flush", "", "")
        elif op in ("read", "write", "zone_append"):
            off, ln = num("slba") * lba, (num("len") + 1) * lba
            fua = num("ctrl", 16) & FUA
            if op == "read":
                if fua:
                    fail(no, "a read with FUA")
                name = "read"
            else:
                name = op + ("_fua" if fua else "")
            if op == "zone_append" and off % zone:
                fail(no, f"zone append at LBA {off // lba}, not a zone's start")
            rec = (name, off, ln)
        elif op == "zone_mgmt_send":
            zsa = int(args.get("zsa", "-1").split(":")[0], 0)
            if num("all") or zsa not in (2, 4):
                fail(no, f"zone management send {s.group('args')!r}: only a reset or finish "
                         "of one zone is replayed")
            off = num("slba") * lba
            if off % zone:
                fail(no, f"zone {'reset' if zsa == 4 else 'finish'} at LBA {off // lba}, not a "
                         "zone's start")
            rec = ("zone_reset" if zsa == 4 else "zone_finish", off, 0)
        else:
            fail(no, f"{op}: a command femu-sim does not replay")
        if phase is None:
            skipped += 1
            continue
        c = counts[phase][f"ns{nsid}"]
        key = rec[0] if rec else "zone_report"
        c[key] = c.get(key, 0) + 1
        if rec:
            phases[phase][nsid].append((ts,) + rec)
    if not any(phases["fillseq"].values()):
        raise TraceError("no fillseq commands in the trace")
    # trace_pipe merges the CPUs' buffers in time order; should two lines still be out of
    # order, the commands go in the order of their times (a stable sort)
    late = 0
    for p in PHASES:
        for ns in (1, 2):
            recs = phases[p][ns]
            late += sum(float(a[0]) > float(b[0]) for a, b in zip(recs, recs[1:]))
            recs.sort(key=lambda r: float(r[0]))
    return dict(phases=phases, counts=counts, outside=skipped, reordered=late)


def load(d):
    """(meta, parse()) of a stored trace directory."""
    d = Path(d)
    meta = json.loads((d / "meta.json").read_text())
    with gzip.open(d / "nvme-trace.txt.gz", "rt") as f:
        return meta, parse(f.read().splitlines(), meta)


def csv_lines(recs):
    return ["time,op,offset,length"] + [f"{t},{op},{off},{ln}" for t, op, off, ln in recs]


def zones_left(recs, zone, written):
    """The set of zones written (not empty) after recs, from `written`."""
    w = set(written)
    for _, op, off, _ in recs:
        if op == "zone_reset":
            w.discard(off // zone)
        elif op != "flush" and op != "read":
            w.add(off // zone)
    return w


def replay_jobs(meta, parsed, bench, passes, tmp):
    """femu-sim jobs [(name, options)] replaying `passes` passes of `bench` (fillseq or
    overwrite), the CSV traces written under tmp; the timed jobs are run<k>-ns1 and
    run<k>-ns2 (the WAL's). Returns (jobs, info)."""
    tmp = Path(tmp)
    ph = parsed["phases"]
    pre_phases = ("setup",) if bench == "fillseq" else ("setup", "fillseq")
    zone = meta["zone_bytes"]
    files, info = {}, dict(passes=passes, puts=passes * meta["keys"], resets_between=[])
    for ns in (1, 2):
        pre = [r for p in pre_phases for r in ph[p][ns]]
        run = ph[bench][ns]
        left = zones_left(pre + run, zone, ())
        # the second pass on: every zone left written is reset first (as mkfs.btrfs does)
        t0 = pre[0][0] if pre else "0"
        resets = [(t0, "zone_reset", z * zone, 0) for z in sorted(left)]
        info["resets_between"].append(len(resets))
        for name, recs in (("pre", pre), ("again", resets + pre), ("run", run)):
            p = tmp / f"{bench}-{name}-ns{ns}.csv"
            p.write_text("\n".join(csv_lines(recs)) + "\n")
            files[name, ns] = (p, len(recs))
    jobs = []
    for k in range(passes):
        for kind, src in (("pre", "pre" if k == 0 else "again"), ("run", "run")):
            for ns in (1, 2):
                path, n = files[src, ns]
                if not n:
                    continue
                opts = dict(filename=f"/dev/nvme0n{ns}", read_iolog=str(path), iodepth=1,
                            replay_no_stall=1)
                if not any(j[0].startswith(f"{kind}{k}-") for j in jobs):
                    opts["stonewall"] = None
                jobs.append((f"{kind}{k}-ns{ns}", opts))
    info["records"] = {f"{name}-ns{ns}": n for (name, ns), (_, n) in files.items()}
    return jobs, info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="boot the guest and record")
    r.add_argument("--keys", type=int, default=FULL_KEYS)
    r.add_argument("--memtable-kb", type=int, default=8192)
    r.add_argument("--out", type=Path, default=FULL)
    i = sub.add_parser("info", help="what a stored trace holds")
    i.add_argument("dir", type=Path, nargs="?", default=FULL)
    a = ap.parse_args()
    if a.cmd == "record":
        record(a.out, a.keys, a.memtable_kb)
        a.dir = a.out
    meta, parsed = load(a.dir)
    print(f"{a.dir}: {meta['keys']} keys, memtable {meta['memtable_kb']} KiB, kernel "
          f"{meta['kernel']}, recorded {meta['recorded']} in {meta['guest_seconds']} s")
    for b in BENCHES:
        print(f"  {meta['results'][b]}")
    for p in PHASES:
        for ns in ("ns1", "ns2"):
            c = parsed["counts"][p][ns]
            print(f"  {p:9} {ns}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))


if __name__ == "__main__":
    try:
        main()
    except TraceError as e:
        sys.exit(f"dbtrace: {e}")
