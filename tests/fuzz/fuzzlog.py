"""What a libFuzzer run of qemu-fuzz-x86_64 printed: executions, coverage, findings, and
(with -print_coverage=1) the coverage of hw/femu by source file."""

import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from sanitizer_reports import _reports as sanitizer_reports  # noqa: E402

STATUS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+)(?: corp: (\d+)/)?", re.M)
STAT = re.compile(r"^stat::(\w+):\s+(\d+)", re.M)
ARTIFACT = re.compile(r"Test unit written to (\S+)")
KINDS = ("crash", "timeout", "oom", "leak")
FUNC = re.compile(r"^(COVERED|UNCOVERED)_FUNC: hits: \d+ edges: (\d+)/(\d+) \S+ (\S+):\d+",
                  re.M)


def parse(text):
    """Executions, coverage (the last status line), findings (artifacts by kind, and
    sanitizer reports as (kind, where))."""
    r = {"execs": 0, "cov": 0, "ft": 0, "corpus": 0, "exec_per_sec": 0}
    for m in STATUS.finditer(text):
        r["execs"] = max(r["execs"], int(m.group(1)))
        r["cov"], r["ft"] = int(m.group(3)), int(m.group(4))
        if m.group(5):
            r["corpus"] = int(m.group(5))
    stats = dict((k, int(v)) for k, v in STAT.findall(text))
    if "number_of_executed_units" in stats:
        r["execs"] = stats["number_of_executed_units"]
        r["exec_per_sec"] = stats.get("average_exec_per_sec", 0)
    r["artifacts"] = ARTIFACT.findall(text)
    for kind in KINDS:
        r[kind] = sum(os.path.basename(a).startswith(kind + "-") for a in r["artifacts"])
    r["sanitizer"] = [(kind, where) for kind, where, _ in sanitizer_reports(text)]
    return r


def femu_coverage(text):
    """{file under hw/femu: [edges covered, edges, functions covered, functions]}."""
    files = collections.defaultdict(lambda: [0, 0, 0, 0])
    for kind, edges, total, path in FUNC.findall(text):
        if "/hw/femu/" in path:
            f = files[path.split("/hw/femu/")[1]]
            f[0] += int(edges)
            f[1] += int(total)
            f[2] += kind == "COVERED"
            f[3] += 1
    return files


def femu_coverage_total(files):
    return sum(f[0] for f in files.values()), sum(f[1] for f in files.values())
