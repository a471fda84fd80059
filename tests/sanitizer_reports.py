"""pytest plugin of `make check-sanitizers` (tests/run-sanitizers.sh): a sanitizer report
written by a process that a test started (QEMU, a GTest binary) fails that test, and the
report is shown with it.

The processes write their reports to files (log_path in ASAN_OPTIONS and UBSAN_OPTIONS point
into FEMU_SANITIZER_LOGS): a QEMU that a module's fixture closes takes its stderr with it,
and leaks are only reported when QEMU exits. After each test phase the new files are read and
given to that test; a QEMU closed by a module fixture is closed in the teardown of the
module's last test.

Leaks: QEMU keeps many allocations without a pointer to them until it exits, so LeakSanitizer
reports dozens of leaks in QEMU's own code at every exit. Only leaks allocated from FEMU's code
(a stack frame in hw/femu/ or tests/unit/) count; the others are kept in ignored-leaks.txt.
"""

import os
import pathlib
import re

import pytest

LOG_DIR = pathlib.Path(os.environ.get("FEMU_SANITIZER_LOGS", "sanitizer-logs"))
OURS = re.compile(r"hw/femu/|tests/unit/")
# the first frame in FEMU's code: "#3 0x55d... in ftl_write ../qemu-src/hw/femu/bbssd/ftl.c:120"
FRAME = re.compile(r"#\d+ 0x[0-9a-f]+ in (\S+) (\S*(?:hw/femu/|tests/unit/)\S*)")
UB_LINE = re.compile(r"^(\S+:\d+:\d+): runtime error: (.*)$", re.M)
# Printed by every QEMU: its coroutines switch stacks, which QEMU announces to ASan itself.
# (and the rule line before each report)
NOISE = re.compile(r"^(==\d+==WARNING: ASan doesn't fully support makecontext/swapcontext.*|=+)$\n?", re.M)

_seen = set()
_findings = []       # (test id, kind, where, report text)
_ignored_leaks = 0


def _split_leaks(text):
    """LeakSanitizer's report as (entries from FEMU's code, number of other entries)."""
    entries = re.split(r"\n(?=(?:Direct|Indirect) leak of )", text)
    ours = [e.strip() for e in entries[1:] if OURS.search(e)]
    return ours, len(entries) - 1 - len(ours)


def _reports(text):
    """Yield (kind, where, text) for each report in one log file."""
    global _ignored_leaks
    blocks = re.split(r"\n(?===\d+==ERROR: )", "\n" + NOISE.sub("", text))
    for block in blocks:
        block = block.strip()
        if not block:
            continue
        if "LeakSanitizer: detected memory leaks" in block:
            ours, others = _split_leaks(block)
            _ignored_leaks += others
            if others:
                with open(LOG_DIR / "ignored-leaks.txt", "a") as f:
                    f.write(block + "\n\n")
            for entry in ours:
                yield "leak", _where(entry), entry
            continue
        m = re.search(r"ERROR: (\w+Sanitizer: [\w-]+)", block)
        if m:
            yield m.group(1), _where(block), block
            continue
        for m in UB_LINE.finditer(block):
            yield "UBSan: " + m.group(2).split(":")[0], m.group(1), block
        if not UB_LINE.search(block):
            yield "sanitizer output", "?", block


def _where(text):
    m = FRAME.search(text)
    return "%s (%s)" % (m.group(2), m.group(1)) if m else "not in FEMU's code"


def _running(pid):
    """Is the process still running (it may still be writing its report)?"""
    try:
        with open("/proc/%s/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _new_reports(final=False):
    found = []
    if not LOG_DIR.is_dir():
        return found
    for path in sorted(LOG_DIR.iterdir()):
        if path.name in _seen or not path.name.startswith(("asan.", "ubsan.")):
            continue
        if not final and _running(path.name.split(".")[-1]):
            continue
        _seen.add(path.name)
        found += [(k, w, t, path.name) for k, w, t in _reports(path.read_text(errors="replace"))]
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    found = _new_reports()
    if not found:
        return
    text = "\n\n".join("[%s] %s at %s\n%s" % (name, kind, where, body)
                       for kind, where, body, name in found)
    for kind, where, body, _ in found:
        _findings.append((item.nodeid, kind, where, body))
    if rep.failed:
        rep.sections.append(("sanitizer reports (%s)" % call.when, text))
    else:
        rep.outcome = "failed"
        rep.longrepr = "sanitizer report(s) while this test ran (%s):\n%s" % (call.when, text)


def pytest_sessionfinish(session):
    # reports written after the last test phase (a session-wide fixture's QEMU)
    for kind, where, body, name in _new_reports(final=True):
        _findings.append(("(after the last test)", kind, where, body))
    if _findings and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    tr.section("sanitizer reports")
    tr.write_line("%d report(s); %d leak entries in QEMU's own code ignored (%s)"
                  % (len(_findings), _ignored_leaks, LOG_DIR / "ignored-leaks.txt"))
    for test, kind, where, _ in _findings:
        tr.write_line("  %s: %s at %s" % (test, kind, where))
