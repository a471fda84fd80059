"""The victim policy docs/ftl-policies.md writes from scratch, built from the page into
femu-sim and run as the page says: it is a real policy of about 30 lines, gc_policy= finds
it by name, checks its parameter, and it changes what GC does."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "ftl-policies.md"
BUILD = Path(os.environ.get("FEMU_BUILD") or ROOT / "build").resolve() / "unit"
JOB = """[fill]
rw=write
bs=128k
iodepth=32
size=100%
[rand]
stonewall
rw=randwrite
bs=4k
iodepth=32
norandommap
size=100%
io_size=1536m
"""


def example_source():
    text = PAGE.read_text()
    after = text[text.index("**1. The file**"):]
    return re.search(r"```c\n(.*?)```", after, re.S).group(1)


@pytest.fixture(scope="module")
def sim_with_example(tmp_path_factory):
    """femu-sim's own objects and libraries linked with the page's policy."""
    for tool in ("cc", "pkg-config", "ninja"):
        if not shutil.which(tool):
            pytest.fail("%s is missing (tests/unit/run.sh installs it)" % tool)
    subprocess.run(["ninja", "-C", str(BUILD), "sim/femu-sim"], check=True,
                   capture_output=True, timeout=600)
    d = tmp_path_factory.mktemp("policy-example")
    src = d / "victim-greedy-wear.c"
    src.write_text(example_source())
    glib = subprocess.run(["pkg-config", "--cflags", "--libs", "glib-2.0"], check=True,
                          capture_output=True, text=True).stdout.split()
    sim_objs = sorted(str(p) for p in (BUILD / "sim" / "femu-sim.p").glob("*.o"))
    assert sim_objs, "femu-sim's objects are missing from %s" % BUILD
    exe = d / "femu-sim"
    subprocess.run(
        ["cc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror",
         "-Wno-missing-field-initializers", "-I", str(ROOT / "hw/femu/ftl"),
         "-I", str(ROOT / "hw/femu"), "-o", str(exe), str(src), *sim_objs,
         "-Wl,--whole-archive", str(BUILD / "libfemu-policies.a"), "-Wl,--no-whole-archive",
         str(BUILD / "libfemu-model.a"), str(BUILD / "sim" / "libsim-workload.a"),
         *[f for f in glib if f.startswith("-l") or f.startswith("-L")],
         *[f for f in glib if f.startswith("-I")], "-lm"],
        check=True, timeout=300)
    job = d / "job.fio"
    job.write_text(JOB)
    return exe, job


def run(sim, job, policy):
    r = subprocess.run([str(sim), "--dev", "femu_mode=1,devsz_mb=512,gc_policy=" + policy,
                        "--output-format=json", str(job)],
                       capture_output=True, text=True, timeout=300)
    return r


def test_example_is_short():
    lines = example_source().rstrip("\n").split("\n")
    assert 15 < len(lines) <= 32, "the example has %d lines" % len(lines)


def test_example_runs_in_femu_sim(sim_with_example):
    sim, job = sim_with_example
    stats = {}
    for policy in ("greedy", "greedy-wear:weight=0", "greedy-wear:weight=64"):
        r = run(sim, job, policy)
        assert r.returncode == 0, r.stderr
        stats[policy] = json.loads(r.stdout)["stats"]
        assert stats[policy]["gc_runs"] > 100, policy
    # weight 0 is greedy itself; a weight moves other pages
    for key in ("gc_runs", "gc_pages_moved", "nand_pages_written"):
        assert stats["greedy-wear:weight=0"][key] == stats["greedy"][key], key
    assert stats["greedy-wear:weight=64"]["gc_pages_moved"] != stats["greedy"]["gc_pages_moved"]


def test_example_parameter_checked(sim_with_example):
    sim, job = sim_with_example
    r = run(sim, job, "greedy-wear:weight=1048577")
    assert r.returncode != 0
    assert "gc_policy=greedy-wear: weight=1048577 is out of range: allowed 0..1048576" in \
        r.stderr
    r = run(sim, job, "greedy-weer")
    assert r.returncode != 0
    assert "greedy-wear" in r.stderr and "is not a victim policy" in r.stderr
