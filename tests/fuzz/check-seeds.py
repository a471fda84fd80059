#!/usr/bin/env python3
"""Do the seeds of make-seeds.py reach the device's I/O paths? Each mode's seeds run once
in the fuzzing build, with femu's trace events on (FEMU_FUZZ_EXTRA_ARGS, read by
hw/femu/fuzz-targets.h); per mode it prints the controller enables, the queues created,
and per opcode how many commands were submitted and how many completed with success, and
fails when a mode's expected opcodes did not all succeed at least once. For fdp, also per
log page (LID) and feature (FID) of the endurance group: Get Log Page 09h, 20h-23h and
Get/Set Features 1Dh, 1Eh must each have been answered, with success (Set 1Dh, which the
contract refuses while the group has namespaces: with Command Sequence Error).
With --coverage it also prints the hw/femu functions the seeds covered (libFuzzer's
-print_coverage), by source file.

    tests/fuzz/check-seeds.py [--build DIR] [--coverage] [MODE...]
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

import fuzzlog

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODES = ["nossd", "blackbox", "zns", "whitebox", "mixed", "zns-powercut", "fdp"]

ADMIN = {0x00: "delete-sq", 0x01: "create-sq", 0x02: "get-log", 0x04: "delete-cq",
         0x05: "create-cq", 0x06: "identify", 0x08: "abort", 0x09: "set-features",
         0x0A: "get-features", 0x0C: "aer", 0x7C: "dbbuf-config", 0xCF: "oc-inject",
         0xE2: "oc-geometry", 0x19: "directive-send", 0x1A: "directive-recv"}
IO = {0x00: "flush", 0x01: "write", 0x02: "read", 0x05: "compare", 0x08: "write-zeroes",
      0x09: "dsm", 0x79: "zone-send", 0x7A: "zone-recv", 0x7D: "zone-append",
      0x90: "vector-reset", 0x91: "vector-write", 0x92: "vector-read", 0x93: "vector-copy",
      0x12: "io-mgmt-recv", 0x1D: "io-mgmt-send"}
NVM = {"flush", "write", "read", "compare", "write-zeroes", "dsm"}
ADMIN_ALL = {"delete-sq", "create-sq", "get-log", "delete-cq", "create-cq", "identify",
             "abort", "set-features", "get-features", "aer", "dbbuf-config"}
ZONED = {"zone-send", "zone-recv", "zone-append"}
OCSSD = {"vector-reset", "vector-write", "vector-read", "vector-copy"}
OC_ADMIN = {"oc-geometry", "oc-inject"}
FDP = {"directive-send", "directive-recv", "io-mgmt-recv", "io-mgmt-send"}
# the endurance group's log pages and features: (command, LID or FID) -> the status expected
# at least once (0: success; Set Features FDP is refused while the group has namespaces)
FDP_PAGES = {("get-log", 0x09): 0, ("get-log", 0x20): 0, ("get-log", 0x21): 0,
             ("get-log", 0x22): 0, ("get-log", 0x23): 0,
             ("get-features", 0x1D): 0, ("get-features", 0x1E): 0,
             ("set-features", 0x1D): 0x0C, ("set-features", 0x1E): 0}
EXPECTED = {
    "nossd": ADMIN_ALL | NVM,
    "blackbox": ADMIN_ALL | NVM,
    "zns": ADMIN_ALL | NVM | ZONED,
    "whitebox": ADMIN_ALL | OC_ADMIN | {"flush", "write", "read"} | OCSSD,
    "mixed": ADMIN_ALL | OC_ADMIN | NVM | ZONED | OCSSD,
    # a power cut 100 ms into each seed ends most of them early
    "zns-powercut": {"create-sq", "create-cq", "identify", "get-features", "write",
                     "zone-append", "zone-send", "zone-recv", "power-cut", "power-on"},
    "fdp": ADMIN_ALL | NVM | FDP,
}
PAGES = {"fdp": FDP_PAGES}
TRACES = ["femu_enabled", "femu_sq_create", "femu_cq_create", "femu_submit",
          "femu_complete", "femu_aer_complete", "femu_power_cut", "femu_plp_power_on",
          "femu_get_log", "femu_get_feature", "femu_set_feature"]
SUBMIT = re.compile(r"femu_submit sq (\d+) cid (\d+) opcode 0x([0-9a-f]+)")
COMPLETE = re.compile(r"femu_complete sq (\d+) cid (\d+) status 0x([0-9a-f]+)")
# an admin command runs as it is taken from the SQ: its LID or FID trace comes between its
# femu_submit and the next one
PAGE = re.compile(r"femu_(get_log|get_feature|set_feature) (?:lid|fid) 0x([0-9a-f]+)")
PAGE_CMD = {"get_log": "get-log", "get_feature": "get-features", "set_feature": "set-features"}


def run_seeds(fuzzer, mode, seeds, coverage=False):
    """Each seed run once with the trace events on; or, for coverage, the seed directory
    loaded as a corpus (-runs=0), since libFuzzer counts coverage only for a corpus."""
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    # -detect_leaks=0: else libFuzzer runs an input again when it allocated more than it freed
    args = [fuzzer, "--fuzz-target=generic-fuzz-femu-" + mode, "-detect_leaks=0"]
    if coverage:
        args += ["-print_coverage=1", "-runs=0", seeds]
    else:
        env["FEMU_FUZZ_EXTRA_ARGS"] = " ".join("-trace %s" % t for t in TRACES)
        args += sorted(os.path.join(seeds, f) for f in os.listdir(seeds))
    p = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       errors="replace")
    if p.returncode:
        sys.exit("%s seeds: the fuzzer failed (%d):\n%s" % (mode, p.returncode,
                                                          p.stdout[-3000:]))
    return p.stdout


def summarize(mode, log):
    submitted, succeeded = collections.Counter(), collections.Counter()
    pending, page_of, last_admin = {}, {}, None
    pages = collections.defaultdict(collections.Counter)    # (command, LID/FID) -> statuses
    for line in log.splitlines():
        m = SUBMIT.search(line)
        if m:
            sq, cid, opc = int(m.group(1)), int(m.group(2)), int(m.group(3), 16)
            name = (IO if sq else ADMIN).get(opc, "%s-0x%02x" % ("io" if sq else "admin", opc))
            submitted[name] += 1
            pending[(sq, cid)] = name
            if not sq:
                last_admin = (sq, cid)
                page_of.pop(last_admin, None)
            continue
        m = PAGE.search(line)
        if m and last_admin:
            page_of[last_admin] = (PAGE_CMD[m.group(1)], int(m.group(2), 16))
            continue
        m = COMPLETE.search(line)
        if m:
            # a burst repeats one command (and its CID): the last one submitted counts
            key = (int(m.group(1)), int(m.group(2)))
            name, status = pending.get(key), int(m.group(3), 16)
            if name and status == 0:
                succeeded[name] += 1
            if key in page_of:
                pages[page_of.pop(key)][status & 0x7FF] += 1    # SCT and SC, without DNR
    # power events count as succeeded "commands" of their own
    succeeded["power-cut"] = log.count("femu_power_cut ")
    succeeded["power-on"] = log.count("femu_plp_power_on ")
    print("== %s: %d enables, %d SQs and %d CQs created, %d power cuts, %d recoveries" % (
        mode, log.count("femu_enabled "), log.count("femu_sq_create "),
        log.count("femu_cq_create "), succeeded["power-cut"], succeeded["power-on"]))
    for name in sorted(submitted):
        print("   %-14s %5d submitted %5d succeeded" % (name, submitted[name], succeeded[name]))
    missing = sorted(EXPECTED[mode] - {n for n in succeeded if succeeded[n]})
    if missing:
        print("   NEVER SUCCEEDED: %s" % ", ".join(missing))
    for (what, ident), want in sorted(PAGES.get(mode, {}).items()):
        got = pages.get((what, ident), {})
        print("   %-14s %02xh %5d answered %5d with status 0x%x%s" % (
            what, ident, sum(got.values()), got.get(want, 0), want,
            "" if got.get(want) else "   NEVER"))
        if not got.get(want):
            missing.append("%s %02xh" % (what, ident))
    return not missing


def coverage(log):
    files = fuzzlog.femu_coverage(log)
    print("   hw/femu coverage by the seeds (edges, functions):")
    for path in sorted(files):
        print("   %-28s %5d/%-5d %4d/%-4d" % ((path,) + tuple(files[path])))
    print("   %-28s %5d/%-5d" % (("all",) + fuzzlog.femu_coverage_total(files)))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("FEMU_FUZZ_BUILD",
                                                      os.path.join(REPO, "build")))
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("modes", nargs="*", default=MODES)
    args = ap.parse_args()
    fuzzer = os.path.join(args.build, "qemu-fuzz-x86_64")
    if not os.path.exists(fuzzer):
        sys.exit("no %s: build it (tests/fuzz/run-campaign.py does)" % fuzzer)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(HERE, "make-seeds.py"), tmp] + args.modes,
                       check=True, stdout=subprocess.DEVNULL)
        for mode in args.modes:
            seeds = os.path.join(tmp, mode)
            ok &= summarize(mode, run_seeds(fuzzer, mode, seeds))
            if args.coverage:
                coverage(run_seeds(fuzzer, mode, seeds, coverage=True))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
