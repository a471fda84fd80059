"""The db_bench block trace recorded in the guest (bench/dbtrace.py), replayed in femu-sim:
the committed sample (bench/traces/dbbench-sample: mkfs + mount, fillseq and overwrite of
1000 keys on two zoned btrfs, the NVMe commands from the kernel's nvme tracepoints)
converts to femu-sim CSV traces, and two passes of each benchmark replay on the paper's
drive without a refused command, every command reaching the drive as the trace has it
(commands, bytes, FUA write-throughs, zone resets), and a synced Put is faster with
power-loss protection than without.

femu-sim: $FEMU_SIM, else the one the unit tests' meson build made (FEMU_BUILD/unit), else
FEMU_BUILD/femu-sim (`make sim`)."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FEMU_BUILD") or ROOT / "build").resolve()
sys.path.insert(0, str(ROOT / "bench"))
import dbtrace  # noqa: E402
import plplib  # noqa: E402

pytestmark = pytest.mark.unit
WRITES = ("write", "write_fua", "zone_append", "zone_append_fua")


def femu_sim():
    for p in (os.environ.get("FEMU_SIM"), BUILD / "unit" / "sim" / "femu-sim",
              BUILD / "femu-sim"):
        if p and os.access(p, os.X_OK):
            return Path(p)
    pytest.skip("femu-sim is not built (make sim)")


@pytest.fixture(scope="module")
def sample():
    return dbtrace.load(dbtrace.SAMPLE)


def test_sample_converts(sample):
    meta, parsed = sample
    assert parsed["counts"] == meta["counts"], "the converter reads the sample otherwise"
    assert parsed["outside"] == 0 and parsed["reordered"] == 0
    c = parsed["counts"]
    for bench in dbtrace.BENCHES:
        wal = c[bench]["ns2"]
        # a synced Put: the WAL's zone append, btrfs's log, a flush and a FUA superblock
        assert wal["flush"] == meta["keys"] and wal["write_fua"] == meta["keys"]
        assert wal["zone_append"] > 0.9 * meta["keys"]
        assert c[bench]["ns1"].get("zone_append", 0) > 0, "no SST written on the data side"
    assert c["setup"]["ns1"]["zone_reset"] >= 1 and c["setup"]["ns2"]["read"] > 0
    for p in dbtrace.PHASES:
        for ns in (1, 2):
            for t, op, off, ln in parsed["phases"][p][ns]:
                if op == "zone_append":
                    assert off % meta["zone_bytes"] == 0


def replay(meta, parsed, bench, mode, tmp, passes=2):
    jobs, info = dbtrace.replay_jobs(meta, parsed, bench, passes, tmp)
    dev = dict(femu_mode=3, devsz_mb=plplib.DRIVE_MB, **plplib.PAPER_FLASH, **plplib.TWO_NS,
               zns_stripe=8, plp_flush_pct=70, **plplib.mode_props(mode, 64, 32))
    import simlib
    simlib.FEMU_SIM = femu_sim()
    res, _ = simlib.run(dev, jobs, timeout=300)
    return jobs, info, res


@pytest.mark.parametrize("bench", dbtrace.BENCHES)
def test_replay(sample, bench, tmp_path):
    meta, parsed = sample
    ph = parsed["phases"]
    pre = ("setup",) if bench == "fillseq" else ("setup", "fillseq")
    puts = {}
    for mode in ("none", "full", "selective"):
        jobs, info, res = replay(meta, parsed, bench, mode, tmp_path)
        assert [j["error"] for j in res["jobs"]] == [0] * len(jobs)
        assert info["puts"] == 2 * meta["keys"]
        s = res["stats"]
        for ns in (1, 2):
            recs = [r for p in pre + (bench,) for r in ph[p][ns]]
            n = lambda *ops: sum(r[1] in ops for r in recs)  # noqa: E731
            # every write and append of both passes, and nothing else
            assert s[f"ns{ns}_host_write_commands"] == 2 * n(*WRITES)
            assert s[f"ns{ns}_host_bytes_written"] == 2 * sum(r[3] for r in recs
                                                              if r[1] in WRITES)
            assert s[f"ns{ns}_host_read_commands"] == 2 * n("read")
        every = sum(len(ph[p][ns]) for p in pre + (bench,) for ns in (1, 2))
        assert s["completions"] == 2 * every + sum(info["resets_between"])
        fua = sum(r[1].endswith("_fua") for p in pre + (bench,) for ns in (1, 2)
                  for r in ph[p][ns])
        if mode == "none":
            # each FUA write is written through from the volatile buffer
            assert s["plp_flushes_fua"] == 2 * fua
        if mode == "full":
            assert s["plp_flushes_fua"] == 0 and s["plp_flushed_sectors_host"] == 0
        wal = sum(j["elapsed_ns"] for j in res["jobs"] if j["jobname"].startswith("run")
                  and j["jobname"].endswith("-ns2"))
        puts[mode] = info["puts"] / wal * 1e9
    assert puts["full"] > puts["none"] and puts["selective"] > puts["none"], puts
