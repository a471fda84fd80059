"""Runs each GTest binary of the QEMU-free model code (built by `make unit`) under pytest,
so that one summary line covers the whole suite."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNIT_DIR = pathlib.Path(os.environ.get("FEMU_BUILD", ROOT / "build")) / "unit" / "tests" / "unit"
NAMES = ["deadline-heap", "lateness", "io-counters", "event-index", "media-nossd", "nand", "ftl", "zns-flash", "zone"]

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", NAMES)
def test_gtest(name):
    exe = UNIT_DIR / f"test-{name}"
    assert exe.exists(), f"{exe} is not built: run `make unit`"
    r = subprocess.run([str(exe), "--tap"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not ok" not in r.stdout, r.stdout
