#!/usr/bin/env python3
"""Kill campaign: QEMU killed with SIGKILL during a logging load, N times per stateful kind.

For each kind (zns: zoned without PLP; zns-plp: zoned with plp=selective; whitebox:
OCSSD 2.0 chunks with OOB; blackbox; fdp; blackbox-wb, fdp-wb and blackbox-wb-plp: with a
1 MiB DRAM write buffer, without and with wb_plp), one drive in a file (memory-backend-file,
share=on): a load of self-describing writes, appends, zone/chunk resets, finishes, closes,
Flushes, FUA and (zns-plp) protected writes over several I/O queues, driven over qtest
(no guest OS); SIGKILL after a random delay or right after a doorbell; a new QEMU on the
same file; its zone report / chunk log, data and OOB checked by tests/qtest/kill_check.py
against what the load submitted and saw complete (every acknowledged write there, nothing
unacknowledged above a write pointer, nothing stale below one, the zone/chunk state
matching the data; PLP: what its rules promise; blackbox and fdp: the FTL's counters go on
and every page holding data is mapped). The harness is tests/qtest/killlib.py,
shared with tests/qtest/test_kill_loop.py (a few kills per kind in `make check`).

Prints per kind: kills, acknowledged writes, writes checked (acknowledged writes whose
data was compared), blocks compared, commands in flight at the kills, violations; then a
summary line. Every violation is printed with the kill that preceded it (mode, delay) and
the seed; it is also in bench/results/kill-loop.log. Exit status 1 on any violation.

Usage: bench/kill-loop.py [--kinds zns,zns-plp,whitebox,blackbox,...] [--kills 100] [--seed S]
                          [--short] [--max-delay 1.5] [--workdir DIR]
QEMU: $FEMU_QEMU, else $FEMU_BUILD/qemu-system-x86_64 (FEMU_BUILD: build/ by default).
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
os.environ.setdefault("FEMU_BUILD", str(REPO / "build"))
os.environ.setdefault("FEMU_QEMU", os.path.join(os.environ["FEMU_BUILD"], "qemu-system-x86_64"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "qtest"))
import killlib  # noqa: E402
import qtest_machine  # noqa: E402

COLUMNS = ("kills", "crash points", "start kills", "acked writes", "writes checked", "blocks checked",
           "in flight at kills", "alternatives taken", "violations")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinds", default=",".join(killlib.KINDS),
                    help="comma-separated, of %s (default all)" % ", ".join(killlib.KINDS))
    ap.add_argument("--kills", type=int, default=100, help="kills per kind (default 100)")
    ap.add_argument("--seed", type=int, help="the load's seed (default: random, printed)")
    ap.add_argument("--short", action="store_true", help="10 kills per kind")
    ap.add_argument("--max-delay", type=float, default=1.5,
                    help="longest load before a kill, seconds (default 1.5)")
    ap.add_argument("--workdir", help="keep the drives' files here (default: a temporary "
                    "directory, removed at the end)")
    a = ap.parse_args()
    kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    bad = [k for k in kinds if k not in killlib.KINDS]
    if bad:
        ap.error("unknown kind(s) %s: %s" % (", ".join(bad), ", ".join(killlib.KINDS)))
    if a.short:
        a.kills = 10
    if a.kills < 1:
        ap.error("--kills must be at least 1")
    if not os.path.exists(qtest_machine.QEMU):
        sys.exit("no QEMU at %s: run make qemu, or set FEMU_QEMU / FEMU_BUILD" % qtest_machine.QEMU)
    why = qtest_machine.qemu_python_missing()
    if why:
        sys.exit(why)
    seed = a.seed if a.seed is not None else random.randrange(1, 1 << 30)
    RESULTS.mkdir(parents=True, exist_ok=True)
    logf = open(RESULTS / "kill-loop.log", "w")

    def log(text):
        print(text, flush=True)
        logf.write(text + "\n")
        logf.flush()

    log("kill-loop: seed %d, %d kills per kind, kinds %s, QEMU %s"
        % (seed, a.kills, ",".join(kinds), qtest_machine.QEMU))
    tmp = None if a.workdir else tempfile.TemporaryDirectory(prefix="femu-kill-")
    workdir = a.workdir or tmp.name
    results = {}
    t0 = time.monotonic()
    try:
        for kind in kinds:
            t = time.monotonic()
            c = killlib.Campaign(killlib.KINDS[kind], seed, workdir, log=log,
                                 max_delay=a.max_delay)
            totals = c.run(a.kills)
            totals["seconds"] = round(time.monotonic() - t, 1)
            results[kind] = totals
            # the buffered kinds add power cuts, rolled-back and unflushed-kept blocks
            log("%-9s %s, %.0f s" % (kind, ", ".join("%s %d" % (k, v) for k, v in totals.items()
                                                     if k != "seconds"), totals["seconds"]))
    finally:
        if tmp:
            tmp.cleanup()
    log("")
    log("%-9s " % "kind" + " ".join("%12s" % k.replace("at kills", "").strip()[:12]
                                    for k in COLUMNS))
    for kind, t in results.items():
        log("%-9s " % kind + " ".join("%12d" % t[k] for k in COLUMNS))
    total = {k: sum(t[k] for t in results.values()) for k in COLUMNS}
    log("summary: %d kills (%d at crash points) + %d during start-up, %d acknowledged writes, "
        "%d writes checked, %d violations (seed %d, %.0f s)"
        % (total["kills"], total["crash points"], total["start kills"], total["acked writes"],
           total["writes checked"], total["violations"], seed, time.monotonic() - t0))
    with open(RESULTS / "kill-loop.json", "w") as f:
        json.dump({"seed": seed, "kills_per_kind": a.kills, "kinds": results}, f, indent=1)
    return 1 if total["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
