"""Shared fixtures for the guest tests: boot the guest with femu-scripts/run-*.sh
--cmd exactly as a user would, and read what the command printed.

Each boot costs a few seconds under TCG, so tests batch related checks into one
guest command and print `@@name@@` section headers (see `sections()`) to keep
the assertions specific.

FEMU_TEST_STOCK=1 runs the tests that QEMU's stock nvme device can pass with
--stock-nvme instead of femu (a check of the tests themselves).
"""

import subprocess
import sys
from pathlib import Path

import pytest

# pytest.ini uses --import-mode=importlib, which does not add test dirs to
# sys.path; the test modules import guestlib too.
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1]))  # vendorlog

from guestlib import BOOT_TIMEOUT, ENV, QEMU, STOCK, GuestRun, femu_missing, launch_argv  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "guest: boots a Linux guest under QEMU (slow)")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.guest)


@pytest.fixture(scope="session")
def device_ready():
    """Skip (with the reason) while the device under test is not available."""
    if STOCK:
        if not QEMU.exists():
            pytest.skip(f"{QEMU} is not built")
        return
    why = femu_missing()
    if why:
        pytest.skip(why)


@pytest.fixture
def femu_only():
    if STOCK:
        pytest.skip("femu-specific (FEMU_TEST_STOCK=1 runs against QEMU's stock nvme)")


@pytest.fixture
def guest(device_ready):
    """guest(cmd, **options) boots once, runs cmd, returns a GuestRun."""

    def run(cmd, check=True, timeout=BOOT_TIMEOUT, **opts):
        argv = launch_argv(cmd, timeout=timeout, **opts)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60,
                              stdin=subprocess.DEVNULL, env=ENV)
        r = GuestRun(proc, argv)
        if check:
            assert r.returncode == 0, "guest command failed\n" + r.describe()
        return r

    return run
