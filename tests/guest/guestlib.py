"""Helpers shared by the guest tests: where things are, how to call the run
scripts, and how to read what the guest printed."""

import os
import re
import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "femu-scripts"
ENV = dict(os.environ)
# `make check` passes its build directory; the launcher wants the files.
_build = Path(os.environ.get("FEMU_BUILD", REPO / "build")).resolve()
if _build != (REPO / "build").resolve():
    ENV.setdefault("FEMU_QEMU", str(_build / "qemu-system-x86_64"))
    ENV.setdefault("FEMU_IMAGE_DIR", str(_build / "image"))
QEMU = Path(ENV.get("FEMU_QEMU", REPO / "build" / "qemu-system-x86_64"))
STOCK = os.environ.get("FEMU_TEST_STOCK") == "1"

# Booting takes ~5 s; fio runs a few more. Generous, but a hung guest fails.
BOOT_TIMEOUT = 300


def femu_missing():
    if not QEMU.exists():
        return f"{QEMU} is not built (make qemu)"
    out = subprocess.run([str(QEMU), "-device", "help"], capture_output=True, text=True)
    if not re.search(r'^name "femu"', out.stdout, re.M):
        return f"{QEMU} has no 'femu' device yet"
    return None


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
