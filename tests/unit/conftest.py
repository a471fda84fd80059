"""pytest runs the unit tests of the QEMU-free model: it configures and builds them with
meson (in $FEMU_BUILD/unit, FEMU_BUILD defaulting to <repo>/build), asks meson which tests
exist (`meson introspect --tests`), runs each binary once with --tap and reports every
GTest case as a pytest item named after the binary and the GTest path.

Nothing here lists the tests: one added to tests/unit/meson.build shows up by itself."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = Path(os.environ.get("FEMU_BUILD") or ROOT / "build").resolve() / "unit"
TAP_LINE = re.compile(r"^(ok|not ok) (\d+) (\S+)(?: # (SKIP|TODO)\b ?(.*))?$")


def meson_command():
    """The venv's meson (QEMU's build wants >= 1.5), else the one on PATH."""
    venv = Path(sys.executable).parent / "meson"
    if venv.exists():
        return [str(venv)]
    found = shutil.which("meson")
    return [found] if found else None


def _run(argv, what, timeout=600):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise MesonError("%s failed (exit %d): %s\n%s%s" % (
            what, r.returncode, " ".join(argv), r.stdout[-4000:], r.stderr[-4000:]))
    return r.stdout


class MesonError(Exception):
    pass


def build_and_list():
    """Configure (once) and build the unit tests; meson's list of them."""
    meson = meson_command()
    if meson is None:
        raise MesonError("meson not found: run qemu/setup-venv.sh (make venv)")
    if not (BUILD / "build.ninja").exists():
        _run(meson + ["setup", str(BUILD), str(ROOT)], "meson setup")
    _run(meson + ["compile", "-C", str(BUILD)], "meson compile")
    return json.loads(_run(meson + ["introspect", "--tests", str(BUILD)], "meson introspect"))


class TapRun:
    """One binary run with --tap: {GTest path: (ok, directive, reason)} and its output."""

    def __init__(self, test):
        self.test = test
        self.done = False

    def run(self):
        if self.done:
            return
        self.done = True
        env = dict(os.environ, **self.test.get("env", {}))
        try:
            r = subprocess.run(self.test["cmd"], capture_output=True, text=True, env=env,
                               timeout=(self.test.get("timeout") or 30) * 4,
                               cwd=self.test.get("workdir") or None)
            self.returncode, self.output = r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            self.returncode = "timeout"
            self.output = (e.stdout or b"").decode(errors="replace")
        self.results = {}
        for line in self.output.splitlines():
            m = TAP_LINE.match(line)
            if m:
                self.results[m.group(3)] = (m.group(1) == "ok", m.group(4), m.group(5))


class GTestCase(pytest.Item):
    def __init__(self, *, tap, path_name, last, **kw):
        super().__init__(**kw)
        self.tap = tap
        self.path_name = path_name
        self.last = last
        self.add_marker(pytest.mark.unit)

    def runtest(self):
        self.tap.run()
        got = self.tap.results.get(self.path_name)
        if got is None:
            raise GTestFailure("%s did not report this case (exit %s): it crashed or "
                               "stopped before it" % (self.tap.test["name"],
                                                      self.tap.returncode))
        ok, directive, reason = got
        if directive == "SKIP":
            pytest.skip(reason or "skipped by the test")
        if not ok:
            raise GTestFailure("not ok")
        if self.last and self.tap.returncode != 0:
            raise GTestFailure("every case passed but %s exited %s"
                               % (self.tap.test["name"], self.tap.returncode))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, GTestFailure):
            return "%s %s: %s\n%s" % (self.tap.test["name"], self.path_name, excinfo.value,
                                      self.tap.output[-6000:])
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, "%s %s" % (self.tap.test["name"], self.path_name)


class GTestFailure(Exception):
    pass


class BuildFailure(pytest.Item):
    """Stands for tests that could not be built or listed, so the rest of the session
    still runs and the summary shows why."""

    def __init__(self, *, error, **kw):
        super().__init__(**kw)
        self.error = error
        self.add_marker(pytest.mark.unit)

    def runtest(self):
        raise self.error

    def repr_failure(self, excinfo):
        return str(excinfo.value)

    def reportinfo(self):
        return self.path, None, self.name


class GTestBinary(pytest.Collector):
    def __init__(self, *, test, **kw):
        super().__init__(**kw)
        self.test = test

    def collect(self):
        # -l lists the GTest paths without running them
        listed = subprocess.run([self.test["cmd"][0], "-l"], capture_output=True, text=True,
                                timeout=60)
        paths = [l.strip() for l in listed.stdout.splitlines() if l.startswith("/")]
        if listed.returncode != 0 or not paths:
            yield BuildFailure.from_parent(self, name="list", error=MesonError(
                "%s -l listed no tests (exit %d): %s" % (
                    self.test["cmd"][0], listed.returncode, listed.stderr)))
            return
        tap = TapRun(self.test)
        for i, p in enumerate(paths):
            yield GTestCase.from_parent(self, name=p, tap=tap, path_name=p,
                                        last=i == len(paths) - 1)


class MesonTests(pytest.File):
    def collect(self):
        try:
            tests = build_and_list()
        except (MesonError, OSError, subprocess.TimeoutExpired) as e:
            yield BuildFailure.from_parent(self, name="build", error=MesonError(str(e)))
            return
        for test in tests:
            yield GTestBinary.from_parent(self, name=test["name"], test=test)


def pytest_collect_file(parent, file_path):
    if file_path == HERE / "meson.build":
        return MesonTests.from_parent(parent, path=file_path)
    return None
