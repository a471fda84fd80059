"""The device's statistics are readable from the host over QMP while the guest runs, and
they count what the guest did."""

import json
import os
import signal
import subprocess
import sys

from guestlib import BOOT_TIMEOUT, ENV, SCRIPTS, launch_argv


WRITES = 1000   # 4 KiB direct writes the guest issues before it waits


def read_stats(sock):
    r = subprocess.run([sys.executable, str(SCRIPTS / "femu-stats.py"), str(sock), "--json"],
                       capture_output=True, text=True, timeout=30, env=ENV)
    return json.loads(r.stdout) if r.returncode == 0 else None


def test_stats_over_qmp(device_ready, femu_only, tmp_path):
    sock = tmp_path / "qmp.sock"
    cmd = (f"dd if=/dev/zero of=/dev/nvme0n1 bs=4k count={WRITES} oflag=direct 2>/dev/null; "
           "echo WROTE; sleep 30")
    argv = launch_argv(cmd, timeout=BOOT_TIMEOUT, extra=["--qmp", str(sock)])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, env=ENV, start_new_session=True)
    try:
        # the guest says when dd is done; from then on nothing touches the drive
        for line in proc.stdout:
            if line.strip() == "WROTE":
                break
        else:
            raise AssertionError("the guest never finished dd: " + proc.stderr.read())
        stats = read_stats(sock)
        assert stats, "no statistics over QMP"
        # O_DIRECT 4 KiB writes: one command each, no more
        assert stats["host-write-commands"] == WRITES, stats
        assert stats["host-bytes-written"] == WRITES * 4096, stats
        assert stats["host-read-commands"] > 0, stats        # the kernel's partition scan
        # every read and write completed once, and nothing else ran on the I/O queues
        assert stats["completions"] == (stats["host-read-commands"]
                                        + stats["host-write-commands"]), stats
        # lateness quantiles are ordered and bounded by the maximum
        assert stats["lateness-p50-ns"] <= stats["lateness-p99-ns"] <= stats["lateness-max-ns"]
        assert read_stats(sock)["completions"] == stats["completions"], "I/O after dd"
    finally:
        # the launcher's QEMU child holds the pipes: end the whole group
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
