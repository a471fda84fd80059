"""Shared by the benchmarks: boot one guest with one or more femu devices (and, if asked,
QEMU's stock nvme), stream its output with host timestamps, read the devices' statistics
over QMP (at marker lines and, optionally, every few seconds), parse fio's output and the
vendor log page, and summarize repeated measurements (median and range).

Devices are found in the guest by serial number (`dev_of SERIAL` in the guest script),
because the kernel's nvmeN numbering follows probe order, not the command line.
"""

import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import waf_models  # noqa: E402  (beside this file)

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "femu-scripts"
RESULTS = REPO / "bench" / "results"

# bash in the guest: dev_of SERIAL [NSID], the block device of namespace NSID (default 1)
# of the controller with serial SERIAL (nsdev: the kernel numbers namespaces' devices in
# the order their scan ends). Zoned namespaces keep the kernel's "none" scheduler; since
# Linux 6.10 the block layer has one write per zone in flight at a time (zone write
# plugging) whatever the scheduler, so zoned writes at a queue depth above 1 no longer
# keep several writes of one zone at the device.
GUEST_PRELUDE = r"""
dev_of() { local d; for d in /sys/class/nvme/nvme*; do
  [ "$(tr -d ' ' <$d/serial)" = "$1" ] && { nsdev "${2:-1}" "$(basename $d)"; return; }; done
  echo "no controller with serial $1" >&2; return 1; }
# text padded to 4 KiB, read in one command (see tests/vendorlog.py); the echo keeps a
# marker that follows on a line of its own
vendor_log() { nvme get-log "${1%n*}" --log-id=0xca --log-len=65536 --xfer-len=65536 --raw-binary |
  tr -d '\0'; echo; }
# one value of that page: vendor_value DEV NAME (the page is "name value" lines)
vendor_value() { vendor_log "$1" | awk -v k="$2" '$1 == k { print $2 }'; }
# Identify Geometry (OCSSD 2.0, admin E2h) of namespace 1 behind block device $1: sets
# GEO_NUM_GRP GEO_NUM_PU GEO_NUM_CHK GEO_CLBA GEO_WS_MIN GEO_WS_OPT GEO_MW_CUNITS GEO_TRDT
# GEO_TWRT GEO_TCRST (times in ns) GEO_SECSZ and prints them as one line "GEO TAG k=v ..."
# (TAG: $2, e.g. the serial; default the device)
oc_geometry() { local b
  b=($(nvme admin-passthru "${1%n*}" --opcode=0xe2 --namespace-id=1 --data-len=4096 \
       --read --raw-binary | od -An -v -tu1)) || return 1
  ((${#b[@]} == 4096 && b[0] == 2)) || { echo "$1: no OCSSD 2.0 geometry" >&2; return 1; }
  u16() { echo $((b[$1] | b[$1 + 1] << 8)); }
  u32() { echo $((b[$1] | b[$1 + 1] << 8 | b[$1 + 2] << 16 | b[$1 + 3] << 24)); }
  GEO_NUM_GRP=$(u16 64) GEO_NUM_PU=$(u16 66) GEO_NUM_CHK=$(u32 68) GEO_CLBA=$(u32 72)
  GEO_WS_MIN=$(u32 128) GEO_WS_OPT=$(u32 132) GEO_MW_CUNITS=$(u32 136)
  GEO_TRDT=$(u32 192) GEO_TWRT=$(u32 200) GEO_TCRST=$(u32 208)
  GEO_SECSZ=$(blockdev --getss "$1")
  echo "GEO ${2:-$1} num_grp=$GEO_NUM_GRP num_pu=$GEO_NUM_PU num_chk=$GEO_NUM_CHK clba=$GEO_CLBA" \
       "ws_min=$GEO_WS_MIN ws_opt=$GEO_WS_OPT mw_cunits=$GEO_MW_CUNITS trdt=$GEO_TRDT" \
       "twrt=$GEO_TWRT tcrst=$GEO_TCRST secsz=$GEO_SECSZ"; }
"""


def launch_env():
    """The launcher's environment, with QEMU and the guest image named explicitly (the
    private copy of the launcher cannot find them from its own path). Brings the image up
    to date first, as the launcher would."""
    env = dict(os.environ, FEMU_PROG="bblib")
    if "FEMU_IMAGE_DIR" not in env:
        image = REPO / "build" / "image"
        subprocess.run([str(REPO / "images" / "build-image.sh"), str(image)], check=True,
                       env=dict(env, FEMU_IMAGE_QUIET="1"), stdin=subprocess.DEVNULL)
        env["FEMU_IMAGE_DIR"] = str(image)
    env.setdefault("FEMU_QEMU", str(REPO / "build" / "qemu-system-x86_64"))
    return env


class Device:
    """One femu controller: mode 1 (blackbox) or 2 (nossd), capacity, extra properties."""

    def __init__(self, serial, mode, size_mib, **props):
        self.serial, self.mode, self.size_mib, self.props = serial, mode, size_mib, props
        self.id = None      # QOM id, set by Guest

    def describe(self):
        kind = {0: "whitebox", 1: "blackbox", 2: "nossd", 3: "zoned"}[self.mode]
        extra = ",".join(f"{k}={v}" for k, v in self.props.items())
        return f"{kind} {self.size_mib} MiB" + (f" ({extra})" if extra else "")


def _qmp_client(sock, proc):
    try:
        from qemu.qmp.legacy import QEMUMonitorProtocol
    except ImportError:
        sys.exit("the Python package qemu.qmp is missing: run with build/venv/bin/python3")
    deadline = time.monotonic() + 60
    while True:
        try:
            q = QEMUMonitorProtocol(str(sock))
            q.connect()
            return q
        except Exception:   # socket not there yet, or QEMU still starting
            if time.monotonic() > deadline or proc.poll() is not None:
                return None
            time.sleep(0.2)


class Guest:
    """Boots the guest with `devices` (the first through the run script, the others as
    extra -device femu lines; with_stock adds QEMU's stock nvme, serial femu-stock, of the
    first device's size) and runs `script` in it.

    run() calls on_line(t, line) for every output line (t: seconds since start, host
    clock). A line `@@stats NAME@@` makes the host read every device's statistics at once
    (stored in .marks[NAME] = (t, {serial: stats})). With sample_s, statistics are also read
    every sample_s seconds into .samples[serial] = [(t, stats), ...].
    """

    def __init__(self, script, devices, mem=1024, smp=2, timeout=3600, sample_s=None,
                 kernel_args="", with_stock=False):
        self.script, self.devices = GUEST_PRELUDE + script, devices
        self.kernel_args, self.with_stock = kernel_args, with_stock
        self.mem, self.smp, self.timeout, self.sample_s = mem, smp, timeout, sample_s
        self.lines, self.marks, self.host_load = [], {}, []
        self.samples = {d.serial: [] for d in devices}
        self._qmp, self._lock, self._t0 = None, threading.Lock(), None

    def argv(self, qmp_sock, launcher):
        first, rest = self.devices[0], self.devices[1:]
        first.id = "femu0"
        props = dict(first.props, serial=first.serial)
        # what run-blackbox.sh / run-nossd.sh do: pass the mode of the first drive
        argv = ["bash", str(launcher), "--mode", str(first.mode),
                "--cmd", self.script, "--size", str(first.size_mib),
                "--dev", ",".join(f"{k}={v}" for k, v in props.items()),
                "--mem", str(self.mem), "--smp", str(self.smp), "--timeout", str(self.timeout),
                "--qmp", str(qmp_sock)] + (["--with-stock"] if self.with_stock else []) + ["--"]
        for i, d in enumerate(rest, 1):
            d.id = f"femu{i}"
            props = dict(id=d.id, femu_mode=d.mode, devsz_mb=d.size_mib, serial=d.serial,
                         **d.props)
            argv += ["-device", "femu," + ",".join(f"{k}={v}" for k, v in props.items())]
        if self.kernel_args:
            # QEMU keeps the last -append: the launcher's own, plus ours
            m = re.search(r'^append="([^"]*)"', launcher.read_text(), re.M)
            if not m:
                sys.exit("bblib: cannot find the launcher's kernel command line")
            argv += ["-append", f"{m.group(1)} {self.kernel_args}"]
        return argv

    def stats(self):
        """{serial: stats} of every device, read now."""
        with self._lock:
            if self._qmp is None:
                return {}
            return {d.serial: self._qmp.cmd("qom-get", path=f"/machine/peripheral/{d.id}",
                                            property="stats")
                    for d in self.devices}

    def power_cut(self, serial):
        """Cuts the power of one device now (QMP qom-set power-cut): its statistics
        (before, after) the cut."""
        dev = next(d for d in self.devices if d.serial == serial)
        path = f"/machine/peripheral/{dev.id}"
        with self._lock:
            before = self._qmp.cmd("qom-get", path=path, property="stats")
            self._qmp.cmd("qom-set", path=path, property="power-cut", value=True)
            return before, self._qmp.cmd("qom-get", path=path, property="stats")

    def _sampler(self, stop):
        while not stop.wait(self.sample_s):
            try:
                now = time.monotonic() - self._t0
                for serial, s in self.stats().items():
                    self.samples[serial].append((now, s))
            except Exception:   # QEMU going away at the end, or a slow answer: try again
                continue

    def _load_sampler(self, stop):
        while True:
            self.host_load.append(os.getloadavg()[0])
            if stop.wait(5):
                return

    def host_note(self):
        """The host's 1-minute load average during the run: other work on the same cores
        is the main source of noise."""
        if not self.host_load:
            return "host load: not sampled"
        return (f"host: {os.cpu_count()} CPUs, 1-min load average during the run median "
                f"{statistics.median(self.host_load):.1f}, max {max(self.host_load):.1f}")

    def series(self, serial):
        """[(t, stats)] of one device: the periodic samples and the marks, in time order."""
        marks = [(t, st[serial]) for t, st in self.marks.values() if serial in st]
        return sorted(self.samples[serial] + marks, key=lambda p: p[0])

    def run(self, on_line=None):
        with tempfile.TemporaryDirectory() as tmp:
            sock = Path(tmp) / "qmp.sock"
            # bash reads a script as it runs: a private copy keeps a long benchmark safe
            # from edits to the launcher in the tree meanwhile
            launcher = Path(tmp) / "femu-launch.sh"
            shutil.copy(SCRIPTS / "femu-launch.sh", launcher)
            argv = self.argv(sock, launcher)
            self._t0 = time.monotonic()
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, stdin=subprocess.DEVNULL, errors="replace",
                                    env=launch_env())
            stderr = []
            err_thread = threading.Thread(target=lambda: stderr.extend(proc.stderr))
            err_thread.start()
            stop = threading.Event()
            sampler = None
            loads = threading.Thread(target=self._load_sampler, args=(stop,), daemon=True)
            loads.start()
            try:
                # QEMU opens the socket before the guest prints anything
                self._qmp = _qmp_client(sock, proc)
                if self.sample_s:
                    sampler = threading.Thread(target=self._sampler, args=(stop,), daemon=True)
                    sampler.start()
                for line in proc.stdout:
                    t = time.monotonic() - self._t0
                    line = line.rstrip("\n")
                    self.lines.append((t, line))
                    s = line.strip()
                    if s.startswith("@@stats ") and s.endswith("@@"):
                        self.marks[s[8:-2]] = (t, self.stats())
                    if on_line:
                        on_line(t, line)
                rc = proc.wait()
            finally:
                stop.set()
                loads.join()
                if sampler:
                    sampler.join()
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                err_thread.join()
                with self._lock:
                    if self._qmp is not None:
                        try:
                            self._qmp.close()
                        except Exception:
                            pass
                        self._qmp = None
        self.returncode, self.stderr = rc, "".join(stderr)
        if rc != 0:
            tail = "\n".join(l for _, l in self.lines[-30:])
            sys.exit(f"guest run failed (exit {rc})\n$ {shlex.join(argv[:1])} ...\n"
                     f"--- output ---\n{tail}\n--- stderr ---\n{self.stderr[-3000:]}")
        return self

    def section(self, name):
        """Text between the line `@@NAME@@` and the next `@@...@@` line."""
        out, inside = [], False
        for _, line in self.lines:
            s = line.strip()
            if s.startswith("@@") and s.endswith("@@"):
                if inside:
                    break
                inside = s == f"@@{name}@@"
            elif inside:
                out.append(line)
        if not inside and not out:
            tail = "\n".join(l for _, l in self.lines[-20:])
            raise KeyError(f"no section @@{name}@@ in the guest output, which ends:\n{tail}")
        return "\n".join(out)

    def time_of(self, line_text):
        for t, line in self.lines:
            if line.strip() == line_text:
                return t
        raise KeyError(line_text)


def fio_json(text):
    """fio's JSON output (fio may print warnings before it, the script lines after it)."""
    return json.JSONDecoder().raw_decode(text[text.index("{"):])[0]


def fio_bw_log(text):
    """fio bandwidth log lines 'msec, KiB/s, dir, bs, offset' -> [(seconds, MB/s)]."""
    out = []
    for line in text.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 2 and f[0].isdigit():
            out.append((int(f[0]) / 1000, int(f[1]) * 1024 / 1e6))
    return out


def fio_progress(bw_log, io_bytes):
    """A fio bandwidth log -> [(seconds since the job started, bytes written so far)],
    scaled so that the last point is fio's own io_bytes (the log's KiB/s are rounded)."""
    pts, done, prev = [(0.0, 0.0)], 0.0, 0.0
    for t, mbps in bw_log:
        done += mbps * 1e6 * (t - prev)
        pts.append((t, done))
        prev = t
    scale = io_bytes / done if done else 1.0
    return [(t, b * scale) for t, b in pts]


def interp(points, x, last=False):
    """y at x on the polyline through points [(x, y)] with x not decreasing; None outside.
    Where x stays put over several points (a counter that did not move), the first of them,
    or with last=True the last."""
    segs = list(zip(points, points[1:]))
    for (x0, y0), (x1, y1) in (reversed(segs) if last else segs):
        if x0 <= x <= x1:
            return (y1 if last else y0) if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return None


def geometry(guest, tag):
    """{name: int} of the guest's `oc_geometry DEV TAG` line (GUEST_PRELUDE)."""
    for _, line in guest.lines:
        f = line.split()
        if len(f) > 2 and f[0] == "GEO" and f[1] == tag:
            return {k: int(v) for k, v in (x.split("=") for x in f[2:])}
    raise KeyError(f"no geometry line for {tag} in the guest output")


def lateness(stats):
    """'p50/p99/max' of a stats dict, in microseconds."""
    return "/".join(f"{stats[f'lateness-{k}-ns'] / 1000:.0f}" for k in ("p50", "p99", "max"))


def vendor_log(text):
    """The 0xCA vendor log page text ("name value" lines) -> {name: int}. The guest's
    vendor_value (GUEST_PRELUDE) reads one value of the same page."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^([a-z][a-z0-9_]*) (\d+)$", text, re.M)}


WAF_MODEL = ("L. Xiang, B. M. Kurkoski: An Improved Analytic Expression for Write "
             "Amplification in NAND Flash, ICNC 2012")


def greedy_waf(alpha):
    """Write amplification of greedy GC under uniform random writes, by the analytic model
    of WAF_MODEL (its large-unit limit, the same as FIFO's: waf_models.waf_fifo): alpha =
    physical / logical capacity."""
    if alpha <= 1:
        return float("inf")
    return waf_models.waf_fifo(alpha - 1)


def spread(xs):
    """Repeated measurements -> dict(median, min, max, n, values)."""
    xs = list(xs)
    return dict(median=statistics.median(xs), min=min(xs), max=max(xs), n=len(xs), values=xs)


def fmt_spread(xs, digits=1):
    """'median [min-max]' of repeated measurements."""
    s = spread(xs)
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}-{s['max']:.{digits}f}]"


def stamp():
    return time.strftime("%Y%m%d-%H%M%S")


def save_json(name, data, guest=None):
    """bench/results/NAME-STAMP.json; with guest, its host note is printed and saved too."""
    if guest is not None:
        print(guest.host_note())
        data = dict(data, host_load_1min=guest.host_load)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}-{stamp()}.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def save_plot(fig, name):
    """bench/results/NAME-STAMP.png, laid out; prints where."""
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}-{stamp()}.png"
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")
    return path


def pyplot():
    """matplotlib's pyplot without a display, or None (the figures are still printed)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print("(matplotlib missing: no plot; run with build/venv/bin/python3)", file=sys.stderr)
        return None


def log(msg):
    print(msg, file=sys.stderr, flush=True)


os.environ.setdefault("PYTHONUNBUFFERED", "1")


def require_rounds(rounds):
    """Refuses fewer than 2 rounds: a spread needs repeats."""
    if rounds < 2:
        sys.exit(f"--rounds must be at least 2 (got {rounds}): a spread needs repeats")


def add_flash_args(ap, *, size, zone_mb, nchs, luns, pgs_per_blk, time_scale,
                   lats=("rd", "wr", "er"), flash_type=True):
    """The drive and flash options the zoned benchmarks share, with their own defaults."""
    ap.add_argument("--size", type=int, default=size, help="MiB of each drive")
    ap.add_argument("--zone-mb", type=int, default=zone_mb)
    ap.add_argument("--nchs", type=int, default=nchs)
    ap.add_argument("--luns", type=int, default=luns)
    ap.add_argument("--pgs-per-blk", type=int, default=pgs_per_blk)
    if flash_type:
        ap.add_argument("--flash-type", type=int, default=3)
    # one latency for every page type: the same on both drives, easy to reason about
    defaults = {"rd": 65000, "wr": 700000, "er": 3500000}
    for lat in lats:
        ap.add_argument(f"--{lat}-lat", type=int, default=defaults[lat], help="ns")
    ap.add_argument("--time-scale", type=int, default=time_scale)


def parse_mode_compare_args(ap):
    """The options of the benchmarks that compare modes on one flash (zns-vs-blackbox,
    wb-vs-modes): the flash, the region written then read, the random-read runtime and
    the interleaved rounds; --short makes them small."""
    add_flash_args(ap, size=64, zone_mb=2, nchs=2, luns=2, pgs_per_blk=32, time_scale=20)
    ap.add_argument("--region", type=int, default=16, help="MiB written, then read")
    ap.add_argument("--runtime", type=int, default=5, help="seconds per random read run")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--short", action="store_true", help="8 MiB region, 3 s reads, 3 rounds")
    a = ap.parse_args()
    if a.short:
        a.region, a.runtime, a.rounds = 8, 3, 3
    require_rounds(a.rounds)
    return a
