#!/usr/bin/env python3
"""femu nossd vs QEMU's stock nvme, same guest, same backend type, same run.

Both devices keep their data in a RAM-backed file in /dev/shm (femu through
--backing, i.e. memory-backend-file; stock nvme through a raw -drive). For
each device one guest boots and runs, in order: an idle window (host CPU of
the QEMU process is measured), a prefill of the test region, then fio 4 KiB
random read at QD1 and QD32 and 128 KiB sequential read at QD8.
Prints a table with the ratio femu/stock. A benchmark, not a test.

Usage: bench/nossd-vs-stock.py [--runtime SEC] [--region MiB] [--idle SEC]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAUNCH = REPO / "femu-scripts" / "run-nossd.sh"

WORKLOADS = [  # (fio job name, label, bs, rw, iodepth, metric)
    ("rand4k-qd1", "4K rand read QD1", "4k", "randread", 1, "iops"),
    ("rand4k-qd32", "4K rand read QD32", "4k", "randread", 32, "iops"),
    ("seq128k-qd8", "128K seq read QD8", "128k", "read", 8, "mbps"),
]


def guest_script(runtime, region_mib, idle_s):
    jobs = ["[global]", "filename=/dev/nvme0n1", "direct=1", "ioengine=io_uring",
            f"size={region_mib}m", "time_based=1", f"runtime={runtime}", "ramp_time=2",
            "stonewall"]
    for name, _, bs, rw, qd, _ in WORKLOADS:
        jobs += [f"[{name}]", f"bs={bs}", f"rw={rw}", f"iodepth={qd}"]
    jobfile = "\n".join(jobs)
    return f"""
echo IDLE_START; sleep {idle_s}; echo IDLE_END
# prefill so that reads hit written data on both devices
fio --name=fill --filename=/dev/nvme0n1 --direct=1 --ioengine=io_uring --rw=write \\
    --bs=1m --iodepth=4 --size={region_mib}m >/dev/null || exit 1
cat > /tmp/bench.fio <<'JOBS'
{jobfile}
JOBS
fio /tmp/bench.fio --output-format=json --output=/tmp/bench.json || exit 1
echo FIO_JSON_BEGIN; cat /tmp/bench.json; echo FIO_JSON_END
"""


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_device(label, stock, args, workdir):
    backing = Path("/dev/shm") / f"femu-bench-{label}-{os.getpid()}.img"
    pidfile = Path(workdir) / f"{label}.pid"
    argv = [str(LAUNCH), "--cmd", guest_script(args.runtime, args.region, args.idle),
            "--backing", str(backing), "--size", str(args.size), "--smp", "2", "--mem", "1024",
            "--timeout", "900"]
    if stock:
        argv.append("--stock-nvme")
    argv += ["--", "-pidfile", str(pidfile)]
    print(f"[{label}] booting ({'stock nvme' if stock else 'femu nossd'})...", file=sys.stderr)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    idle_cores, lines, in_json = None, [], False
    try:
        for line in proc.stdout:
            s = line.strip()
            if s == "IDLE_START":
                time.sleep(1)
                pid = int(pidfile.read_text())
                t0, w0 = cpu_seconds(pid), time.monotonic()
                time.sleep(max(1, args.idle - 3))
                idle_cores = (cpu_seconds(pid) - t0) / (time.monotonic() - w0)
                print(f"[{label}] idle host CPU {idle_cores:.3f} cores; running fio...",
                      file=sys.stderr)
            elif s == "FIO_JSON_BEGIN":
                in_json = True
            elif s == "FIO_JSON_END":
                in_json = False
            elif in_json:
                lines.append(line)
        rc = proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
        backing.unlink(missing_ok=True)
    if rc != 0 or not lines:
        sys.exit(f"[{label}] guest run failed (exit {rc})")
    text = "".join(lines)
    jobs = {j["jobname"]: j for j in json.loads(text[text.index("{"):])["jobs"]}
    res = {"idle_cores": idle_cores}
    for name, _, _, _, _, _ in WORKLOADS:
        r = jobs[name]["read"]
        res[name] = {"iops": r["iops"], "mbps": r["bw_bytes"] / 1e6,
                     "lat_us": r["lat_ns"]["mean"] / 1000}
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runtime", type=int, default=10, help="seconds per fio workload")
    ap.add_argument("--region", type=int, default=256, help="MiB of the device that fio reads")
    ap.add_argument("--size", type=int, default=1024, help="device size, MiB")
    ap.add_argument("--idle", type=int, default=10, help="idle window, seconds")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as workdir:
        results = {"femu": run_device("femu", False, args, workdir),
                   "stock": run_device("stock", True, args, workdir)}

    outdir = REPO / "bench" / "results"
    outdir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (outdir / f"nossd-vs-stock-{stamp}.json").write_text(json.dumps(results, indent=2))

    f, s = results["femu"], results["stock"]
    print(f"\nfemu nossd vs QEMU stock nvme: same guest, /dev/shm file backends, "
          f"fio {args.runtime} s each, io_uring, direct=1, {args.region} MiB region")
    print(f"{'workload':30} {'femu nossd':>16} {'stock nvme':>16} {'femu/stock':>11}")
    for name, label, _, _, _, metric in WORKLOADS:
        unit = "IOPS" if metric == "iops" else "MB/s"
        fv, sv = f[name][metric], s[name][metric]
        print(f"{label:30} {fv:11.0f} {unit:4} {sv:11.0f} {unit:4} {fv / sv:11.2f}")
    for name, label, _, _, _, _ in WORKLOADS:
        fl, sl = f[name]["lat_us"], s[name]["lat_us"]
        print(f"{'  mean lat, ' + label:30} {fl:11.1f} us   {sl:11.1f} us   {fl / sl:11.2f}")
    fi, si = f["idle_cores"], s["idle_cores"]
    print(f"{'idle host CPU (cores)':30} {fi:16.3f} {si:16.3f} "
          f"{(fi / si if si else float('nan')):11.2f}")
    print(f"results: {outdir}/nossd-vs-stock-{stamp}.json")


if __name__ == "__main__":
    main()
