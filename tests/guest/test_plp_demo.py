"""femu-scripts/demo-plp.sh, the one-command demo of selective power-loss protection: it
boots, writes a protected, a flushed, a plp_zones and an unprotected block, cuts the power,
restarts QEMU on the same file and must find exactly the first three."""

import re
import subprocess

import pytest

from guestlib import ENV, SCRIPTS, STOCK


def test_demo_plp(device_ready, tmp_path):
    if STOCK:
        pytest.skip("femu-specific (FEMU_TEST_STOCK=1 runs against QEMU's stock nvme)")
    help_text = subprocess.run([ENV.get("FEMU_QEMU", str(SCRIPTS.parent / "build/qemu-system-x86_64")),
                                "-device", "femu,help"], capture_output=True, text=True, env=ENV)
    if "power-cut" not in help_text.stdout:
        pytest.skip("this QEMU's femu has no power-cut property yet")
    r = subprocess.run([str(SCRIPTS / "demo-plp.sh"), "--dir", str(tmp_path)], capture_output=True,
                       text=True, timeout=600, stdin=subprocess.DEVNULL, env=ENV)
    why = f"--- exit {r.returncode}\n--- stdout ---\n{r.stdout[-6000:]}\n--- stderr ---\n{r.stderr[-3000:]}"
    assert r.returncode == 0, why
    assert "VERDICT: PASS" in r.stdout, why
    rows = dict(re.findall(r"^([ABCD]): .*?(survived|lost)\s+(?:survived|lost)\s+ok$", r.stdout, re.M))
    assert rows == {"A": "survived", "C": "survived", "D": "survived", "B": "lost"}, why
    # the cut lost B's sectors and nothing else, and the power-up restored the protected ones
    assert re.search(r"plp-lost-sectors\s+8$", r.stdout, re.M), why
    assert re.search(r"^plp_spor_sectors 16$", r.stdout, re.M), why
