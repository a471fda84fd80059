"""bench/sweep.py: a small grid (2 victim policies x 2 over-provisionings x 1 workload on a
64 MiB drive, a few seconds of femu-sim in all) run serially and on a Dask LocalCluster of
two worker processes gives every point the same JSON, but for the fields the host sets
(sweep.HOST_FIELDS); a rerun runs nothing; bad grids are refused before anything runs,
with a message that names the problem."""

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "bench" / "sweep.py"
BUILD = Path(os.environ.get("FEMU_BUILD") or ROOT / "build").resolve()
GRID = """name = "test"
[drive]
femu_mode = 1
devsz_mb = 64
nchs = 2
luns_per_ch = 2
pls_per_lun = 1
pgs_per_blk = 32
gc_pacing = "proportional"
streams = "host-gc"

[axes]
gc_policy = ["greedy", "fifo"]
op_pcent = [15, 28]

[fio]
bs = "4k"
iodepth = 8
norandommap = true

[fill]
rw = "write"
bs = "128k"
size = "100%"

[workloads.uniform]
rw = "randwrite"
size = "100%"

[measure]
warm = 2
caps = 1
"""
POINTS = 4


def load_sweep():
    spec = importlib.util.spec_from_file_location("sweep", SWEEP)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def femu_sim():
    """$FEMU_SIM, `make sim`'s, or the unit tests' meson build's."""
    for p in (os.environ.get("FEMU_SIM"), BUILD / "femu-sim", BUILD / "unit/sim/femu-sim"):
        if p and os.access(str(p), os.X_OK):
            return str(p)
    pytest.fail("%s is missing: make sim" % (BUILD / "femu-sim"))


def sweep(grid, out, *args):
    return subprocess.run([sys.executable, str(SWEEP), str(grid), "--out", str(out),
                           "--femu-sim", femu_sim(), "--no-plot", *args],
                          capture_output=True, text=True, timeout=600)


def point_files(out):
    return {p.name: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}


def without_host_fields(res, fields):
    res = json.loads(json.dumps(res))
    for k in fields:
        res["sweep"].pop(k)
    return res


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The grid run serially and on a LocalCluster of two worker processes."""
    pytest.importorskip("distributed", reason="dask.distributed is not installed "
                        "(qemu/setup-venv.sh installs it)")
    d = tmp_path_factory.mktemp("sweep")
    grid = d / "grid.toml"
    grid.write_text(GRID)
    out = {}
    for name, args in (("serial", ["--jobs", "1"]), ("cluster", ["--local-cluster", "2"])):
        r = sweep(grid, d / name, *args)
        assert r.returncode == 0, r.stdout + r.stderr
        out[name] = (d / name, r)
    return grid, out


def test_cluster_points_equal_serial(runs):
    _, out = runs
    fields = load_sweep().HOST_FIELDS
    serial, cluster = point_files(out["serial"][0]), point_files(out["cluster"][0])
    assert len(serial) == POINTS and serial.keys() == cluster.keys()
    for name in serial:
        assert without_host_fields(serial[name], fields) == \
            without_host_fields(cluster[name], fields), name
        assert serial[name]["sweep"]["point"]["workload"] == "uniform"


def test_table_has_every_point(runs):
    _, out = runs
    with open(out["serial"][0] / "table.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == POINTS
    for r in rows:
        assert not r["error"]
        # greedy and fifo have models; OP 15 and 28 % write more than they hold, less than 6x
        assert 1 < float(r["waf"]) < 6 and float(r["model_waf"]) > 1, r
        assert float(r["kiops"]) > 0 and float(r["p999_us"]) >= float(r["p50_us"]) > 0, r


def test_rerun_runs_nothing(runs):
    grid, out = runs
    d = out["serial"][0]
    before = {p.name: p.stat().st_mtime_ns for p in d.glob("*.json")}
    r = sweep(grid, d, "--jobs", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%d done" % POINTS in r.stdout and "0 to run" in r.stdout, r.stdout
    assert "[1/" not in r.stderr, r.stderr
    assert {p.name: p.stat().st_mtime_ns for p in d.glob("*.json")} == before


def test_changed_inputs_are_not_mixed(runs, tmp_path):
    grid, out = runs
    d = out["serial"][0]
    changed = tmp_path / "grid.toml"
    changed.write_text(GRID.replace("caps = 1", "caps = 2"))
    r = sweep(changed, d, "--jobs", "1")
    assert r.returncode != 0 and "was run with another jobfile" in r.stderr, r.stderr


BAD = {
    # name: (text of GRID, replaced by, what the refusal says)
    "unknown-section": ("[measure]", "[measures]", "unknown key 'measures'"),
    "unknown-measure-key": ("caps = 1", "caps = 1\nwindow = 2",
                            "unknown key 'measure.window'"),
    "empty-axis": ("op_pcent = [15, 28]", "op_pcent = []", "axis 'op_pcent' is empty"),
    "unknown-figure": ('name = "test"', 'figures = ["waf", "p42"]', "unknown figure 'p42'"),
    "unknown-policy": ('"fifo"]', '"lifo"]', "gc_policy=lifo is not a victim policy"),
    "unknown-property": ("nchs = 2", "nchs = 2\nfoo = 1", "'foo' is not a property"),
    "value-out-of-range": ("op_pcent = [15, 28]", "op_pcent = [15, -28]",
                           "op_pcent=-28 is out of range"),
    "bad-job-option": ('size = "100%"\n\n[measure]',
                       'size = "100%"\nrandom_distribution = "zipf:1"\n\n[measure]',
                       "option 'random_distribution': bad value 'zipf:1'"),
    "workload-sets-io_size": ('rw = "randwrite"', 'rw = "randwrite"\nio_size = "1m"',
                              "'io_size' is set by the sweep"),
}


@pytest.mark.parametrize("old,new,message", BAD.values(), ids=BAD.keys())
def test_bad_grid_refused(tmp_path, old, new, message):
    assert old in GRID
    grid = tmp_path / "bad.toml"
    grid.write_text(GRID.replace(old, new))
    r = sweep(grid, tmp_path / "out", "--jobs", "1")
    assert r.returncode != 0 and message in r.stderr, r.stderr
    assert not (tmp_path / "out").exists(), "a refused grid ran"
