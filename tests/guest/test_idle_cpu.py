"""An idle guest must leave the host idle: the device may not busy-poll while
nothing happens (a spinning queue thread costs a whole core)."""

import subprocess
import time

import psutil

from guestlib import BOOT_TIMEOUT, ENV, launch_argv

WINDOW_S = 8
MAX_CORES = 0.3  # idle TCG guest measures ~0.05 here; one spinning thread is ~1.0


def cpu_seconds(pid):
    """CPU seconds (user + system) of the whole process, and per thread {name[tid]: s}."""
    proc = psutil.Process(pid)
    threads = {}
    for t in proc.threads():
        try:
            name = psutil.Process(t.id).name()
        except psutil.NoSuchProcess:
            continue
        threads[f"{name}[{t.id}]"] = t.user_time + t.system_time
    times = proc.cpu_times()
    return times.user + times.system, threads


def test_idle_guest_costs_little_host_cpu(device_ready, tmp_path):
    pidfile = tmp_path / "qemu.pid"
    argv = launch_argv(f"echo IDLE_START; sleep {WINDOW_S + 4}; echo IDLE_END",
                       timeout=BOOT_TIMEOUT, extra=["--", "-pidfile", str(pidfile)])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, env=ENV)
    try:
        for line in proc.stdout:
            if line.strip() == "IDLE_START":
                break
        else:
            proc.wait()
            raise AssertionError(f"guest did not start the idle command: {proc.stderr.read()}")
        pid = int(pidfile.read_text())
        time.sleep(1)  # let the boot's last work settle
        t0, th0 = cpu_seconds(pid)
        start = time.monotonic()
        time.sleep(WINDOW_S)
        t1, th1 = cpu_seconds(pid)
        cores = (t1 - t0) / (time.monotonic() - start)
        busiest = sorted(((th1[k] - th0.get(k, 0), k) for k in th1), reverse=True)[:4]
        assert cores < MAX_CORES, (f"idle guest used {cores:.2f} host cores; busiest threads: "
                                   + ", ".join(f"{k} {d:.1f}s" for d, k in busiest))
        rest = proc.stdout.read()
        assert proc.wait(timeout=60) == 0 and "IDLE_END" in rest, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
