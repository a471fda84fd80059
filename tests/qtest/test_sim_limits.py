"""No job file makes femu-sim run forever (issue 32). A time_based job ends only when
virtual time reaches its runtime, so one whose commands take no time used to spin at one
instant for good (femu_mode=2, rw=randread, iodepth=1, runtime=2, time_based: 10 minutes
at virtual time 0 before it was killed). Now such a job is refused at start when no command
of the drive takes time, and stopped with why when its time stands still over 2^20 steps;
time_based without a runtime is refused; virtual time ends at 2^55 ns. Each run is bounded
by a subprocess timeout, so a regression fails here instead of hanging. femu-sim alone."""

import json
import subprocess

from simcheck import FEMU_SIM

NOSSD = "femu_mode=2,devsz_mb=64"
ZNS = "femu_mode=3,devsz_mb=256"


def run(tmp_path, dev, job, trace=None, timeout=60):
    if trace is not None:
        (tmp_path / "t.csv").write_text(trace)
        job = job.replace("TRACE", str(tmp_path / "t.csv"))
    jf = tmp_path / "job.fio"
    jf.write_text(job)
    return subprocess.run([FEMU_SIM, "--dev", dev, "--output-format=json", str(jf)],
                          capture_output=True, text=True, timeout=timeout)


def refused(out, *words):
    assert out.returncode == 2, (out.returncode, out.stdout[-500:], out.stderr)
    assert out.stdout == ""
    for w in words:
        assert w in out.stderr, (w, out.stderr)


RANDREAD = "[j]\nrw=randread\nbs=4k\niodepth=1\nruntime=2\ntime_based=1\n"


def test_time_based_on_commands_that_take_no_time_is_refused(tmp_path):
    # the job: refused before any I/O, naming what to set
    refused(run(tmp_path, NOSSD, RANDREAD, timeout=10), "job 'j'", "runtime=2s",
            "femu_mode=2", "fw_cores", "fw_cmd_ns", "pcie_gen")


def test_time_based_with_controller_time_ends(tmp_path):
    # 1 us of firmware a command: QD1 for 2 s is 2,000,000 reads, ending at 2 s
    out = run(tmp_path, NOSSD + ",fw_cores=1,fw_cmd_ns=1000", RANDREAD)
    assert out.returncode == 0, out.stderr
    job = json.loads(out.stdout)["jobs"][0]
    assert job["read"]["total_ios"] == 2000000
    assert job["elapsed_ns"] == 2 * 10**9


def test_time_based_paced_by_thinktime_ends(tmp_path):
    # free commands, but 100 us of thinktime after each: 10,000 reads in 1 s
    out = run(tmp_path, NOSSD, "[j]\nrw=randread\nbs=4k\niodepth=1\nruntime=1\n"
              "time_based=1\nthinktime=100\n")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["jobs"][0]["read"]["total_ios"] == 10000


def test_time_based_without_runtime_is_refused(tmp_path):
    # it ran forever even on a drive whose commands take time
    refused(run(tmp_path, ZNS, "[j]\nrw=randread\nbs=4k\nsize=1m\ntime_based=1\n",
                timeout=10), "job 'j'", "time_based needs a runtime")


def test_free_trims_stop_with_why(tmp_path):
    # zns books no flash for a deallocate, and no front end: time stands still
    refused(run(tmp_path, ZNS, "[t]\nrw=randtrim\nbs=4k\niodepth=4\nruntime=2\n"
                "time_based=1\n"), "job 't'", "virtual time stands still at 0.000000000 s",
            "1048576", "runtime=2s", "fw_cmd_ns")


def test_trims_behind_the_controller_end(tmp_path):
    # with the controller's 500 ns a command, one core: 4,000,000 trims in 2 s
    out = run(tmp_path, ZNS + ",fw_cores=1,fw_cmd_ns=500",
              "[t]\nrw=randtrim\nbs=4k\niodepth=4\nruntime=2\ntime_based=1\n")
    assert out.returncode == 0, out.stderr
    job = json.loads(out.stdout)["jobs"][0]
    assert 4000000 <= job["trim"]["total_ios"] <= 4000000 + 4


def test_replayed_power_cuts_at_one_instant_stop(tmp_path):
    # a trace of one power cut, replayed for 1 s: no command, no time
    refused(run(tmp_path, ZNS + ",fw_cores=1,fw_cmd_ns=100",
                "[p]\nread_iolog=TRACE\nruntime=1\ntime_based=1\n", trace="0,power_cut,,\n",
                timeout=120), "job 'p'", "virtual time stands still", "power cuts")


def test_virtual_time_ends_at_2_55_ns(tmp_path):
    # a trace whose second write is 36028798 s (past 2^55 ns) after its first
    refused(run(tmp_path, NOSSD, "[w]\nread_iolog=TRACE\n",
                trace="0,write,0,4096\n36028798,write,4096,4096\n", timeout=10),
            "job 'w'", "past 2^55 ns (416 days) of virtual time")
    # ... and one just before it runs (on nossd: no model wants idle time in the gap)
    out = run(tmp_path, NOSSD, "[w]\nread_iolog=TRACE\n",
              trace="0,write,0,4096\n36028796,write,4096,4096\n", timeout=60)
    assert out.returncode == 0, out.stderr
    job = json.loads(out.stdout)["jobs"][0]
    assert job["write"]["total_ios"] == 2 and job["elapsed_ns"] == 36028796 * 10**9
    # 2 I/Os in 36028796 s, to 15 digits (it was "0.000")
    assert abs(job["write"]["iops"] - 2 / 36028796) < 1e-14 * job["write"]["iops"]
    # the series keeps at most 2^20 points: its 1 s interval doubled 6 times (64 s)
    s = job["series"]
    assert s["interval_ns"] == 64 * 10**9 and len(s["t_ns"]) == 36028796 // 64 + 1
    assert sum(s["write_iops"]) * 64 == 2 and sum(s["write_bw_bytes"]) * 64 == 8192


def test_times_past_the_end_are_refused(tmp_path):
    for opt in ("runtime=417d", "thinktime=36028798s", "startdelay=36028798",
                "ramp_time=36028798"):
        refused(run(tmp_path, ZNS, "[j]\nrw=read\nbs=4k\nsize=1m\n%s\n" % opt, timeout=10),
                "option '%s'" % opt.split("=")[0], "up to 416d")
