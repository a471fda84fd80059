"""femu-sim asks a job for its next I/O as soon as the previous one is issued, so that the
model can fetch its tables for it (FemuMediaOps.hint) while the others run. That must change
nothing: every job file here gives the same JSON, to the byte, with --no-look-ahead (each
I/O asked for when it is issued)."""

import json
import subprocess

import pytest

from simcheck import FEMU_SIM

# small drives whose GC runs within a few MiB of writes
BB = "femu_mode=1,devsz_mb=16,nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=25"
FDP = "femu_mode=4,devsz_mb=16,nchs=2,luns_per_ch=2,pgs_per_blk=16,fdp_ruh_types=ii:ii"

JOBS = {
    "gc": """
[fill]
rw=write
bs=128k
iodepth=8
size=100%
[over]
stonewall
rw=randwrite
bs=4k
iodepth=16
numjobs=3
norandommap
size=100%
io_size=24m
""",
    "mixed": """
[mix]
rw=randrw
rwmixread=60
bssplit=4k/50:16k/30:64k/20
iodepth=8
numjobs=2
size=100%
io_size=16m
fsync=7
end_fsync=1
[trim]
rw=randtrim
bs=8k
iodepth=4
size=50%
offset=25%
io_size=2m
[zipf]
stonewall
rw=randread
random_distribution=zipf:1.1
bs=4k
iodepth=32
size=100%
io_size=8m
""",
    "think": """
[w]
rw=randwrite
bs=4k
iodepth=4
thinktime=100us
thinktime_blocks=3
size=100%
io_size=2m
""",
    "runtime": """
[w]
rw=randwrite
bs=4k
iodepth=32
numjobs=2
time_based
runtime=50ms
size=100%
""",
}

FDP_JOB = """
[a]
rw=randwrite
bs=4k
iodepth=8
fdp=1
fdp_pli=0
norandommap
size=100%
io_size=24m
[b]
rw=randwrite
bs=16k
iodepth=8
fdp=1
fdp_pli=1
norandommap
size=100%
io_size=24m
"""


def sim(tmp_path, props, text, *extra):
    jf = tmp_path / "job.fio"
    jf.write_text(text)
    out = subprocess.run([FEMU_SIM, "--dev", props, "--output-format=json", *extra, str(jf)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    res.pop("femu-sim version")
    return res


@pytest.mark.parametrize("props,text", [(BB, t) for t in JOBS.values()] + [(FDP, FDP_JOB)],
                         ids=list(JOBS) + ["fdp"])
def test_look_ahead_changes_nothing(tmp_path, props, text):
    ahead = sim(tmp_path, props, text)
    plain = sim(tmp_path, props, text, "--no-look-ahead")
    assert ahead == plain
    # the runs did what they say: I/O done, and on the blackbox drive GC moved pages
    assert all(j["read"]["io_bytes"] + j["write"]["io_bytes"] + j["trim"]["io_bytes"] > 0
               for j in ahead["jobs"])
    if props == BB and "io_size=24m" in text:
        assert ahead["stats"]["gc_pages_moved"] > 0
