#!/usr/bin/env python3
"""Do the seeds of make-seeds.py reach the device's I/O paths? Each mode's seeds run once
in the fuzzing build, with femu's trace events on (FEMU_FUZZ_EXTRA_ARGS, read by
hw/femu/fuzz-targets.h); per mode it prints the controller enables, the queues created,
and per opcode how many commands were submitted and how many completed with success, and
fails when a mode's expected opcodes did not all succeed at least once. For fdp, also per
log page (LID) and feature (FID) of the endurance group: Get Log Page 09h, 20h-23h and
Get/Set Features 1Dh, 1Eh and Identify CNS 19h (Endurance Group List) must each have been
answered, with success (Set 1Dh, which the contract refuses while the group has namespaces:
with Command Sequence Error); for the zoned modes, each Select All Zone Send action. Long
commands (femu_req_run: Deallocate, zoned Select All) count as "long-step" (a step run),
"long-step-more" (a step that left work for a later pass) and "dsm-sq-deleted" (a
Deallocate ended by Delete I/O SQ while it ran).
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
MODES = ["nossd", "blackbox", "zns", "whitebox", "mixed", "zns-powercut", "fdp",
         "fdp-powercut"]

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
             ("set-features", 0x1D): 0x0C, ("set-features", 0x1E): 0,
             ("identify", 0x19): 0}
# Select All Close, Finish, Reset, Offline (long commands) and Open, each with success
SELECT_ALL = {("zone-send-all", zsa): 0 for zsa in (0x01, 0x02, 0x03, 0x04, 0x05)}
# a Deallocate run in steps (every Deallocate is: "long-step"), over several passes, and
# (on nossd's 512 MiB namespaces only: the others' end within one fuzzer operation) one
# still running when Delete I/O SQ came
LONG = {"long-step", "long-step-more"}
EXPECTED = {
    "nossd": ADMIN_ALL | NVM | LONG | {"dsm-sq-deleted"},
    "blackbox": ADMIN_ALL | NVM | LONG,
    "zns": ADMIN_ALL | NVM | ZONED | {"long-step"},
    "whitebox": ADMIN_ALL | OC_ADMIN | {"flush", "write", "read"} | OCSSD,
    "mixed": ADMIN_ALL | OC_ADMIN | NVM | ZONED | OCSSD | {"long-step"},
    # a power cut 100 ms into each seed ends most of them early
    "zns-powercut": {"create-sq", "create-cq", "identify", "get-features", "write",
                     "zone-append", "zone-send", "zone-recv", "power-cut", "power-on"},
    "fdp": ADMIN_ALL | NVM | FDP | {"long-step"},
    # as zns-powercut: the cut ends most seeds early; the power comes back at each reset
    "fdp-powercut": {"create-sq", "create-cq", "identify", "write", "power-cut",
                     "power-restored"},
}
PAGES = {"fdp": FDP_PAGES, "zns": SELECT_ALL, "mixed": SELECT_ALL}
TRACES = ["femu_enabled", "femu_sq_create", "femu_cq_create", "femu_submit",
          "femu_complete", "femu_aer_complete", "femu_power_cut", "femu_plp_power_on",
          "femu_get_log", "femu_get_feature", "femu_set_feature", "femu_identify",
          "femu_zone_send", "femu_long_step", "femu_power_restored"]
SUBMIT = re.compile(r"femu_submit sq (\d+) cid (\d+) opcode 0x([0-9a-f]+)")
COMPLETE = re.compile(r"femu_complete sq (\d+) cid (\d+) status 0x([0-9a-f]+)")
# a command is decoded as it is taken from the SQ: its LID, FID, CNS or Select All action
# trace comes between its femu_submit and the next one
PAGE = re.compile(r"femu_(get_log|get_feature|set_feature|identify) (?:lid|fid|cns) "
                  r"0x([0-9a-f]+)|femu_(zone_send) nsid \d+ action 0x([0-9a-f]+) slba \d+ "
                  r"select all 1")
PAGE_CMD = {"get_log": "get-log", "get_feature": "get-features", "set_feature": "set-features",
            "identify": "identify", "zone_send": "zone-send-all"}
LONG_STEP = re.compile(r"femu_long_step sq \d+ cid \d+ did \d+ pages, more to do (\d)")


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
    pending, page_of, last = {}, {}, None
    pages = collections.defaultdict(collections.Counter)    # (command, LID/FID) -> statuses
    for line in log.splitlines():
        m = SUBMIT.search(line)
        if m:
            sq, cid, opc = int(m.group(1)), int(m.group(2)), int(m.group(3), 16)
            name = (IO if sq else ADMIN).get(opc, "%s-0x%02x" % ("io" if sq else "admin", opc))
            submitted[name] += 1
            pending[(sq, cid)] = name
            last = (sq, cid)
            page_of.pop(last, None)
            continue
        m = PAGE.search(line)
        if m and last:
            what, ident = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            page_of[last] = (PAGE_CMD[what], int(ident, 16))
            continue
        m = LONG_STEP.search(line)
        if m:
            succeeded["long-step"] += 1
            succeeded["long-step-more"] += m.group(1) == "1"
            continue
        m = COMPLETE.search(line)
        if m:
            # a burst repeats one command (and its CID): the last one submitted counts
            key = (int(m.group(1)), int(m.group(2)))
            name, status = pending.get(key), int(m.group(3), 16)
            if name and status == 0:
                succeeded[name] += 1
            if name == "dsm" and status & 0x7FF == 0x008:     # Aborted due to SQ Deletion
                succeeded["dsm-sq-deleted"] += 1
            if key in page_of:
                pages[page_of.pop(key)][status & 0x7FF] += 1    # SCT and SC, without DNR
    # power events count as succeeded "commands" of their own
    succeeded["power-cut"] = log.count("femu_power_cut ")
    succeeded["power-on"] = log.count("femu_plp_power_on ")
    succeeded["power-restored"] = log.count("femu_power_restored ")
    print("== %s: %d enables, %d SQs and %d CQs created, %d power cuts, %d recoveries, "
          "%d long-command steps (%d leaving work for a later pass), %d Deallocates ended by "
          "Delete I/O SQ" % (
              mode, log.count("femu_enabled "), log.count("femu_sq_create "),
              log.count("femu_cq_create "), succeeded["power-cut"], succeeded["power-on"],
              succeeded["long-step"], succeeded["long-step-more"],
              succeeded["dsm-sq-deleted"]))
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
