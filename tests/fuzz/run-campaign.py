#!/usr/bin/env python3
"""A time-boxed fuzzing campaign on femu: QEMU's generic fuzzer (libFuzzer, ASan+UBSan) on
the generic-fuzz-femu-MODE targets of hw/femu/fuzz-targets.h, one mode after another.

    tests/fuzz/run-campaign.py [--build DIR] [--seconds S] [--modes a,b] [--jobs N]
                               [--total-execs N] [--report]

Per mode, under BUILD/fuzz/MODE/: corpus/ (libFuzzer's, kept between runs; the seeds of
tests/fuzz/make-seeds.py are written to BUILD/fuzz/seeds/MODE/ and read beside it),
artifacts/ (crash-, timeout-, oom-, leak- inputs), logs/. BUILD/fuzz/results.json
accumulates executions and findings over runs, so a campaign can be continued; each run
prints a table of this run and of all runs. --total-execs goes round the modes until the
runs on the current device code reach N executions. --report prints the table of
results.json and exits. --seconds 0 fuzzes nothing: it replays each corpus with
LeakSanitizer, --jobs modes at a time.

The fuzzing build is BUILD/qemu-fuzz-x86_64 (BUILD: --build, else $FEMU_FUZZ_BUILD, else
<repo>/build); when it is missing, `make qemu` builds it there with --enable-fuzzing
--enable-sanitizers (clang, libFuzzer, ASan, UBSan).
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODES = ["nossd", "blackbox", "zns", "whitebox", "mixed", "zns-powercut", "fdp",
         "fdp-powercut"]

try:
    import fuzzlog
except ImportError:         # tests/sanitizer_reports.py needs pytest: the build's venv has it
    venv_python = os.path.join(os.environ.get("FEMU_FUZZ_BUILD", os.path.join(REPO, "build")),
                               "venv", "bin", "python3")
    if os.path.exists(venv_python) and sys.executable != venv_python:
        os.execv(venv_python, [venv_python] + sys.argv)
    raise
KINDS = fuzzlog.KINDS


def build_dir(args):
    return os.path.abspath(args.build or os.environ.get("FEMU_FUZZ_BUILD") or
                           os.path.join(REPO, "build"))


def ensure_fuzzer(build):
    fuzzer = os.path.join(build, "qemu-fuzz-x86_64")
    if not os.path.exists(fuzzer):
        print("==> no %s: building it (make qemu, fuzzing and sanitizers on)" % fuzzer)
        subprocess.run(["make", "-C", REPO, "qemu", "BUILD=" + build, "FEMU_FUZZING=yes",
                        "FEMU_SANITIZERS=yes"], check=True)
    return fuzzer


DEVICE_CODE = ["--", "hw/femu", "qemu", ":(exclude)hw/femu/fuzz-targets.h"]


def git(*a):
    return subprocess.run(["git", "-C", REPO] + list(a), capture_output=True,
                          text=True).stdout.strip()


def code_version(at="HEAD"):
    """The device code fuzzed: the last commit of hw/femu and qemu/ up to `at` (the fuzz
    targets' file aside), + if edited since (for HEAD)."""
    commit = git("log", "-1", "--format=%h", at, *DEVICE_CODE)
    if at == "HEAD" and git("status", "--porcelain", *DEVICE_CODE):
        commit += "+"
    return commit


def load_results(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"modes": {}, "runs": []}


def save_results(path, results):
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def run_mode(args, fuzzer, build, mode, seconds):
    """Fuzzes one mode for `seconds` (restarting after a finding); returns the run's sums."""
    top = os.path.join(build, "fuzz")
    corpus, artifacts, logs = (os.path.join(top, mode, d) for d in ("corpus", "artifacts", "logs"))
    seeds = os.path.join(top, "seeds", mode)
    for d in (corpus, artifacts, logs):
        os.makedirs(d, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(HERE, "make-seeds.py"),
                    os.path.join(top, "seeds"), mode], check=True, stdout=subprocess.DEVNULL)
    # LeakSanitizer needs the slow unwinder (GLib's frames stop the fast one, and the
    # suppressions match on frames), which makes QEMU ~25 times slower: the fuzzing runs
    # without it, and the corpus is then replayed once with it (leak_check).
    env = dict(os.environ,
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:symbolize=1",
               UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1")
    total = {"execs": 0, "cov": 0, "ft": 0, "corpus": 0, "sanitizer": [], "logs": [],
             "artifacts": [], "femu_cov": (0, 0)}
    total.update({k: 0 for k in KINDS})
    common = [fuzzer, "--fuzz-target=generic-fuzz-femu-" + mode, "-timeout=%d" % args.timeout,
              "-rss_limit_mb=%d" % args.rss_limit_mb, "-max_len=%d" % args.max_len,
              "-print_final_stats=1", "-close_fd_mask=1", "-artifact_prefix=%s/" % artifacts]
    start = time.monotonic()
    end = start + seconds
    while time.monotonic() < end - 5:
        cmd = common + ["-detect_leaks=0", "-max_total_time=%d" % (end - time.monotonic())] + \
            args.libfuzzer_arg + [corpus, seeds]
        if not run_fuzzers(args, cmd, env, logs, top, total):
            break
    total["seconds"] = time.monotonic() - start
    minimize_corpus(args, common, env, logs, top, corpus)
    if args.leak_check:
        # its replays are not counted as executions
        env["ASAN_OPTIONS"] = "detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=1"
        env["LSAN_OPTIONS"] = "suppressions=" + os.path.join(REPO, "tests",
                                                             "lsan-suppressions.txt")
        # and the hw/femu code the corpus reaches
        cmd = common + ["-runs=0", "-print_coverage=1", corpus]
        execs = total["execs"]
        run_fuzzers(args, cmd, env, logs, top, total, jobs=1, what="leak-check")
        total["execs"] = execs
    total["corpus_files"] = len(os.listdir(corpus))
    return total


def minimize_corpus(args, common, env, logs, top, corpus):
    """libFuzzer's -merge=1: the smallest part of the corpus with all of its features, so
    that the next run (and the leak check) replays fewer inputs."""
    merged = corpus + ".merged"
    shutil.rmtree(merged, ignore_errors=True)
    os.makedirs(merged)
    log = os.path.join(logs, datetime.datetime.now().strftime("%Y%m%d-%H%M%S-merge.log"))
    with open(log, "wb") as f:
        p = subprocess.run(["nice", "-n", str(args.nice)] + common +
                           ["-detect_leaks=0", "-merge=1", merged, corpus], stdout=f,
                           stderr=subprocess.STDOUT, env=env, cwd=top)
    if p.returncode == 0 and os.listdir(merged):
        shutil.rmtree(corpus)
        os.rename(merged, corpus)
    else:
        shutil.rmtree(merged, ignore_errors=True)   # a finding while merging: keep all


def run_fuzzers(args, cmd, env, logs, top, total, jobs=None, what="fuzz"):
    """Runs `jobs` fuzzers at once and adds up what they did; True if one found something."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    procs = []
    for job in range(jobs or args.jobs):
        log = os.path.join(logs, "%s-%s-%d.log" % (stamp, what, job))
        with open(log, "wb") as f:
            procs.append((subprocess.Popen(["nice", "-n", str(args.nice)] + cmd, stdout=f,
                                           stderr=subprocess.STDOUT, env=env, cwd=top), log))
    found = False
    for p, log in procs:
        p.wait()
        with open(log, errors="replace") as f:
            text = f.read()
        r = fuzzlog.parse(text)
        femu = fuzzlog.femu_coverage_total(fuzzlog.femu_coverage(text))
        if femu[1]:
            total["femu_cov"] = femu
        total["execs"] += r["execs"]
        for k in ("cov", "ft", "corpus"):
            total[k] = max(total[k], r[k])
        for k in KINDS:
            total[k] += r[k]
        total["sanitizer"] += r["sanitizer"]
        total["artifacts"] += r["artifacts"]
        total["logs"].append(os.path.relpath(log, top))
        found |= bool(r["artifacts"] or r["sanitizer"])
        if not r["execs"] and not r["artifacts"]:
            sys.exit("the fuzzer did not run: see %s" % log)
    return found


def table(rows, title):
    head = ["mode", "execs", "exec/s", "cov", "ft", "hw/femu edges", "corpus", "crash",
            "timeout", "oom", "leak", "sanitizer"]
    print(title)
    print("  %-12s %11s %7s %6s %7s %13s %6s %5s %7s %4s %4s %9s" % tuple(head))
    for mode, r in rows:
        femu = r.get("femu_cov") or (0, 0)
        print("  %-12s %11d %7.0f %6d %7d %13s %6d %5d %7d %4d %4d %9d" % (
            mode, r["execs"], r["execs"] / max(r["seconds"], 1), r["cov"], r["ft"],
            "%d/%d" % tuple(femu) if femu[1] else "-", r["corpus_files"], r["crash"],
            r["timeout"], r["oom"], r["leak"],
            len(r["sanitizer"]) if isinstance(r["sanitizer"], list) else r["sanitizer"]))
    tot = sum(r["execs"] for _, r in rows)
    print("  %-12s %11d" % ("all", tot))


def current_code_runs(results):
    """The runs on the device code as it is now: what counts for a clean result."""
    code = code_version()
    same = {}                   # a run's label (any later commit) -> its device code
    for run in results["runs"]:
        label = run.get("code", "")
        if label not in same:
            same[label] = label if label.endswith("+") or not label else code_version(label)
        if same[label] == code:
            yield run


def current_code_table(results):
    code = code_version()
    rows = {}
    for run in current_code_runs(results):
        r = rows.setdefault(run["mode"], {"execs": 0, "seconds": 0, "cov": 0, "ft": 0,
                                          "sanitizer": 0, **{k: 0 for k in KINDS}})
        r["execs"] += run["execs"]
        r["seconds"] += run["seconds"]
        r["cov"], r["ft"] = max(r["cov"], run["cov"]), max(r["ft"], run["ft"])
        r["sanitizer"] += len(run["sanitizer"])
        if run.get("femu_cov", (0, 0))[1]:
            r["femu_cov"] = run["femu_cov"]
        for a in run["artifacts"]:
            for k in KINDS:
                r[k] += os.path.basename(a).startswith(k + "-")
    for mode, r in rows.items():
        r["corpus_files"] = results["modes"][mode]["corpus_files"]
    table(sorted(rows.items(), key=lambda kv: MODES.index(kv[0])),
          "runs on the current device code (%s)" % code)


def accumulate(results, mode, run, seconds):
    m = results["modes"].setdefault(mode, {"execs": 0, "seconds": 0, "runs": 0, "cov": 0,
                                           "ft": 0, "corpus_files": 0, "sanitizer": 0,
                                           **{k: 0 for k in KINDS}})
    m["execs"] += run["execs"]
    m["seconds"] += seconds
    m["runs"] += 1
    for k in KINDS:
        m[k] += run[k]
    m["sanitizer"] += len(run["sanitizer"])
    m["cov"], m["ft"] = max(m["cov"], run["cov"]), max(m["ft"], run["ft"])
    m["corpus_files"] = run["corpus_files"]
    if run["femu_cov"][1]:
        m["femu_cov"] = run["femu_cov"]
    results["runs"].append({"mode": mode, "when": datetime.datetime.now().isoformat(
        timespec="seconds"), "seconds": seconds, "execs": run["execs"], "cov": run["cov"],
        "ft": run["ft"], "artifacts": run["artifacts"], "sanitizer": run["sanitizer"],
        "logs": run["logs"], "code": code_version(), "femu_cov": run["femu_cov"]})


def round_runs(args, fuzzer, build, modes):
    """(mode, run) for each mode of a round. A replay-only round (--seconds 0) runs --jobs
    modes side by side: each replay is one process, and LeakSanitizer makes it slow."""
    if args.seconds:
        for mode in modes:
            yield mode, run_mode(args, fuzzer, build, mode, args.seconds)
        return
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        futures = [(m, ex.submit(run_mode, args, fuzzer, build, m, 0)) for m in modes]
        for mode, f in futures:
            yield mode, f.result()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="the fuzzing build directory")
    ap.add_argument("--seconds", type=int, default=300, help="per mode and round [300]")
    ap.add_argument("--modes", default=",".join(MODES), help="[%(default)s]")
    ap.add_argument("--jobs", type=int, default=1, help="fuzzer processes per mode [1]")
    ap.add_argument("--total-execs", type=int, default=0,
                    help="repeat rounds until the runs on the current device code reach this "
                    "many executions together")
    ap.add_argument("--timeout", type=int, default=10, help="libFuzzer -timeout: a hang [10 s]")
    ap.add_argument("--rss-limit-mb", type=int, default=4096, help="libFuzzer -rss_limit_mb")
    ap.add_argument("--max-len", type=int, default=8192, help="libFuzzer -max_len")
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--no-leak-check", dest="leak_check", action="store_false",
                    help="skip replaying the corpus with LeakSanitizer after each mode")
    ap.add_argument("--libfuzzer-arg", action="append", default=[],
                    help="one more libFuzzer option, e.g. -use_value_profile=1")
    ap.add_argument("--report", action="store_true", help="print results.json's table")
    args = ap.parse_args()
    modes = args.modes.split(",")
    for m in modes:
        if m not in MODES:
            ap.error("unknown mode %r: allowed %s" % (m, ", ".join(MODES)))
    build = build_dir(args)
    results_path = os.path.join(build, "fuzz", "results.json")
    results = load_results(results_path)
    if args.report:
        table(sorted(results["modes"].items(), key=lambda kv: MODES.index(kv[0])),
              "all runs (%s)" % results_path)
        current_code_table(results)
        return
    fuzzer = ensure_fuzzer(build)
    os.makedirs(os.path.dirname(results_path), exist_ok=True)
    this_run = {}
    while True:
        for mode, run in round_runs(args, fuzzer, build, modes):
            seconds = run["seconds"]
            accumulate(results, mode, run, seconds)
            save_results(results_path, results)
            r = this_run.setdefault(mode, dict(run, seconds=0, execs=0, sanitizer=[],
                                               **{k: 0 for k in KINDS}))
            r["seconds"] += seconds
            r["execs"] += run["execs"]
            r["sanitizer"] += run["sanitizer"]
            for k in KINDS:
                r[k] += run[k]
            for k in ("cov", "ft", "corpus_files"):
                r[k] = run[k] if k == "corpus_files" else max(r[k], run[k])
            if run["femu_cov"][1]:
                r["femu_cov"] = run["femu_cov"]
            print("%s %-12s %d execs in %.0f s, cov %d ft %d, hw/femu edges %d/%d, corpus %d, "
                  "findings: %s" % (
                datetime.datetime.now().strftime("%H:%M:%S"), mode, run["execs"], seconds,
                run["cov"], run["ft"], run["femu_cov"][0], run["femu_cov"][1],
                run["corpus_files"],
                ", ".join(run["artifacts"] + ["%s at %s" % s for s in run["sanitizer"]])
                or "none"), flush=True)
        total = sum(run["execs"] for run in current_code_runs(results))
        if not args.total_execs or total >= args.total_execs:
            break
    table([(m, this_run[m]) for m in modes], "this run")
    table(sorted(results["modes"].items(), key=lambda kv: MODES.index(kv[0])),
          "all runs (%s)" % results_path)
    current_code_table(results)


if __name__ == "__main__":
    main()
