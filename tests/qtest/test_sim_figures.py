"""femu-sim's derived figures at a scale where bytes x 10^9 passes 2^64 (issue 32): a
48 GiB sequential write behind a PCIe gen3 x4 link (femu_mode=2: no media model, so the
link sets the time, about 13 s of virtual time for 0.03 s of CPU). bw_bytes, bw, iops, the
per-interval series and the normal output's BW must be io_bytes and total_ios over the
job's own elapsed_ns; they were 3.5x low, the product having wrapped. femu-sim alone, no
QEMU."""

import json
import re
import subprocess
from fractions import Fraction

from simcheck import FEMU_SIM

GIB = 1 << 30
DEV = "femu_mode=2,devsz_mb=49152,pcie_gen=3,pcie_lanes=4"
JOB = """
[w]
rw=write
bs=128k
iodepth=8
size=100%
log_avg_msec=5000
"""


def run(tmp_path, *args):
    jf = tmp_path / "job.fio"
    jf.write_text(JOB)
    out = subprocess.run([FEMU_SIM, "--dev", DEV, *args, str(jf)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_json_rates_past_2_64(tmp_path):
    job = json.loads(run(tmp_path, "--output-format=json"))["jobs"][0]
    w, ns = job["write"], job["elapsed_ns"]
    assert w["io_bytes"] == 48 * GIB and w["total_ios"] == 48 * GIB // (128 << 10)
    assert w["io_bytes"] * 10**9 > 2**64            # the scale this test is about
    bw = Fraction(w["io_bytes"] * 10**9, ns)
    assert abs(w["bw_bytes"] - bw) <= Fraction(1, 2)
    assert abs(w["bw"] - bw / 1024) <= Fraction(1, 2)
    assert abs(w["iops"] - Fraction(w["total_ios"] * 10**9, ns)) <= Fraction(1, 2000)
    assert w["runtime"] == ns // 10**6
    # the link's 3.9 GB/s, about: 4 lanes of gen3's 985 MB/s
    assert 3.5e9 < w["bw_bytes"] < 4e9
    # each 5 s interval carried ~20 GB (x 10^9 past 2^64): the series adds up to io_bytes
    s = job["series"]
    assert s["interval_ns"] == 5 * 10**9
    assert len(s["write_bw_bytes"]) == -(-ns // s["interval_ns"])
    moved = sum(Fraction(str(b)) * 5 for b in s["write_bw_bytes"])
    ios = sum(Fraction(str(i)) * 5 for i in s["write_iops"])
    assert abs(moved - w["io_bytes"]) <= len(s["write_bw_bytes"])     # %.1f: 0.5 B a point
    assert abs(ios - w["total_ios"]) <= len(s["write_iops"])
    assert max(s["write_bw_bytes"]) * 5 > 2**64 / 10**9


def test_text_bandwidth_past_2_64(tmp_path):
    text = run(tmp_path)
    runtime_s = Fraction(re.search(r"virtual runtime ([0-9.]+) s", text).group(1))
    m = re.search(r"write: IOPS=([0-9.]+), BW=([0-9.]+) MiB/s \(([0-9.]+) MB/s\)"
                  r"\(([0-9.]+) MiB\)", text)
    assert m, text
    iops, mib_s, mb_s, mib = (Fraction(x) for x in m.groups())
    assert mib == 48 * 1024
    # the printed runtime has 3 decimals of 13 s: the rates agree to 1e-4 of themselves
    assert abs(mib_s - mib / runtime_s) < mib_s / 10**4
    assert abs(mb_s - mib * 2**20 / 10**6 / runtime_s) < mb_s / 10**4
    assert abs(mb_s * 10**6 / 2**20 - mib_s) <= Fraction(1, 100)
    assert abs(iops - mib * 8 / runtime_s) < iops / 10**4
