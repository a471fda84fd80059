"""pytest plugin of `make check-sanitizers` (tests/run-sanitizers.sh): a sanitizer report in
the output of a QEMU that a test started fails that test, and the report is shown with it.

QEMU runs through tests/sanitizer-qemu.sh, which keeps a copy of its stderr in
FEMU_SANITIZER_LOGS/qemu.PID: the tests delete their own copy when they close QEMU, leaks are
only reported when QEMU exits, and with gcc UBSan ignores log_path when ASan is linked in.
After each test phase the files of QEMUs that have ended are read and their reports given to
that test; a QEMU that a module fixture closes ends in the teardown of the module's last test.
(The unit tests' binaries fail their test themselves, with the report in its output.)
"""

import os
import pathlib
import re
import time

import pytest

LOG_DIR = pathlib.Path(os.environ.get("FEMU_SANITIZER_LOGS", "sanitizer-logs"))
# ASan and LSan: from "==PID==ERROR: ..." to "SUMMARY: ..."
ASAN = re.compile(r"^==\d+==ERROR: (\w+Sanitizer: [\w-]+).*?^SUMMARY: .*?$", re.M | re.S)
# UBSan: "file:line:col: runtime error: what" and the stack frames after it
UBSAN = re.compile(r"^(\S+:\d+:\d+): runtime error: ([^\n]*)\n(?:[ \t]+#\d+ [^\n]*\n?)*", re.M)
LEAK = re.compile(r"^(?:Direct|Indirect) leak of .*?(?=^(?:Direct|Indirect) leak of |^SUMMARY: )",
                  re.M | re.S)
# "#3 0x55d... in ftl_write ../qemu-src/hw/femu/bbssd/ftl.c:120": a frame with a source line,
# outside the sanitizer runtime and the C library
SOURCE_FRAME = re.compile(r"#\d+ 0x[0-9a-f]+ in (\S+) ((?![^\s]*(?:libsanitizer|sysdeps|csu/))\S+:\d+)")
FEMU_FRAME = re.compile(r"#\d+ 0x[0-9a-f]+ in (\S+) (\S*hw/femu/\S+:\d+)")

_seen = set()
_findings = []       # (test id, kind, where)


def _where(text):
    """The first frame in QEMU's or FEMU's source, and the first in hw/femu if that is another."""
    m = SOURCE_FRAME.search(text)
    if not m:
        return "?"
    where = "%s (%s)" % (m.group(2), m.group(1))
    f = FEMU_FRAME.search(text)
    if f and f.start() != m.start():
        where += ", from %s (%s)" % (f.group(2), f.group(1))
    return where


def _reports(text):
    """Yield (kind, where, report) for each sanitizer report in a QEMU's stderr."""
    for m in ASAN.finditer(text):
        block, kind = m.group(0), m.group(1)
        if kind == "LeakSanitizer: detected":
            for leak in LEAK.finditer(block):
                yield "leak", _where(leak.group(0)), leak.group(0).strip()
        else:
            yield kind, _where(block), block
    for m in UBSAN.finditer(text):
        yield "UBSan: " + m.group(2).split(":")[0], m.group(1), m.group(0).strip()


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
    for path in sorted(LOG_DIR.glob("qemu.*")):
        pid = path.name.split(".")[-1]
        if path.name in _seen or (not final and _running(pid)):
            continue
        _seen.add(path.name)
        found += [(k, w, r, path.name) for k, w, r in _reports(path.read_text(errors="replace"))]
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
    _findings.extend((item.nodeid, kind, where) for kind, where, _, _ in found)
    if rep.failed:
        rep.sections.append(("sanitizer reports (%s)" % call.when, text))
    else:
        rep.outcome = "failed"
        rep.longrepr = "sanitizer report(s) while this test ran (%s):\n%s" % (call.when, text)


def pytest_sessionfinish(session):
    # a QEMU that ended after the last test phase (its output pipe may still be draining)
    time.sleep(0.5)
    for kind, where, _, _ in _new_reports(final=True):
        _findings.append(("(after the last test)", kind, where))
    if _findings and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    tr.section("sanitizer reports")
    tr.write_line("%d report(s) from %d QEMU run(s) (their stderr: %s)"
                  % (len(_findings), len(_seen), LOG_DIR))
    for test, kind, where in _findings:
        tr.write_line("  %s: %s at %s" % (test, kind, where))
