"""Shared fixtures for the guest tests: boot the guest with femu-scripts/run-*.sh
--cmd exactly as a user would, and read what the command printed.

Each boot costs a few seconds under TCG, so tests batch related checks into one
guest command and print `@@name@@` section headers (see `sections()`) to keep
the assertions specific.

FEMU_TEST_STOCK=1 runs the tests that QEMU's stock nvme device can pass with
--stock-nvme instead of femu (a check of the tests themselves).
"""

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "femu-scripts"
QEMU = Path(os.environ.get("FEMU_QEMU", REPO / "build" / "qemu-system-x86_64"))
STOCK = os.environ.get("FEMU_TEST_STOCK") == "1"

# Booting takes ~5 s; fio runs a few more. Generous, but a hung guest fails.
BOOT_TIMEOUT = 300


def pytest_configure(config):
    config.addinivalue_line("markers", "guest: boots a Linux guest under QEMU (slow)")
    config.addinivalue_line("markers", "femu_only: needs the femu device (skipped with FEMU_TEST_STOCK=1)")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.guest)


def _femu_in_qemu():
    if not QEMU.exists():
        return f"{QEMU} is not built (make qemu)"
    out = subprocess.run([str(QEMU), "-device", "help"], capture_output=True, text=True)
    if not re.search(r'^name "femu"', out.stdout, re.M):
        return f"{QEMU} has no 'femu' device yet"
    return None


@pytest.fixture(scope="session")
def device_ready():
    """Skip (with the reason) while the device under test is not available."""
    if STOCK:
        if not QEMU.exists():
            pytest.skip(f"{QEMU} is not built")
        return
    why = _femu_in_qemu()
    if why:
        pytest.skip(why)


@pytest.fixture
def femu_only():
    if STOCK:
        pytest.skip("femu-specific (FEMU_TEST_STOCK=1 runs against QEMU's stock nvme)")


class GuestRun:
    def __init__(self, proc, argv):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.argv = argv

    def sections(self):
        """Split stdout on `@@name@@` lines into {name: text}."""
        out, name = {}, None
        for line in self.stdout.splitlines():
            m = re.fullmatch(r"@@([\w.-]+)@@", line.strip())
            if m:
                name = m.group(1)
                out[name] = ""
            elif name is not None:
                out[name] += line + "\n"
        return out

    def values(self):
        """KEY=VALUE lines printed by the guest command, as a dict."""
        vals = {}
        for line in self.stdout.splitlines():
            m = re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line.strip())
            if m:
                vals[m.group(1)] = m.group(2)
        return vals

    def describe(self):
        return (f"$ {shlex.join(self.argv)}\n--- exit {self.returncode}\n"
                f"--- stdout ---\n{self.stdout[-6000:]}\n--- stderr ---\n{self.stderr[-3000:]}")


def launch_argv(cmd=None, script="run-nossd.sh", dev=None, size=None, smp=None, mem=None,
                backing=None, stock=None, timeout=None, extra=()):
    argv = [str(SCRIPTS / script)]
    if cmd is not None:
        argv += ["--cmd", cmd]
    if dev:
        argv += ["--dev", dev]
    for opt, val in (("--size", size), ("--smp", smp), ("--mem", mem),
                     ("--backing", backing), ("--timeout", timeout)):
        if val is not None:
            argv += [opt, str(val)]
    if STOCK if stock is None else stock:
        argv.append("--stock-nvme")
    argv += list(extra)
    return argv


@pytest.fixture
def guest(device_ready):
    """guest(cmd, **options) boots once, runs cmd, returns a GuestRun."""

    def run(cmd, check=True, timeout=BOOT_TIMEOUT, **opts):
        argv = launch_argv(cmd, timeout=timeout, **opts)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60,
                              stdin=subprocess.DEVNULL)
        r = GuestRun(proc, argv)
        if check:
            assert r.returncode == 0, "guest command failed\n" + r.describe()
        return r

    return run
