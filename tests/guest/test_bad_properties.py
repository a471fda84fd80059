"""Out-of-range device properties stop QEMU at start with a message naming
the property (no guest boots)."""

import re
import subprocess

import pytest

from guestlib import ENV, launch_argv


@pytest.mark.parametrize("prop", ["femu_mode=7", "queues=0", "lba_index=9", "namespaces=0"])
def test_bad_property_refused(device_ready, femu_only, prop):
    argv = launch_argv("true", dev=prop, timeout=60)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                       env=ENV)
    out = r.stdout + r.stderr
    assert r.returncode not in (0, 124), f"QEMU accepted {prop}: {out}"
    # QEMU echoes the -device option before its message: look past that
    message = re.sub(r"-device \S+", "", r.stderr)
    assert prop.split("=")[0] in message, f"message does not name the property: {out}"
    assert "@@" not in r.stdout and r.stdout.strip() == "", f"a guest ran: {out}"
