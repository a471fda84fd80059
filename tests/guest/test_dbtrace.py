"""Recording db_bench's block trace in the guest (bench/dbtrace.py), as bench/sim-plp.py
does for its full run, at a small size: fillseq and overwrite of 200 keys (64 KiB memtables,
so that SSTs are flushed) on two zoned btrfs, the NVMe commands from the kernel's nvme
tracepoints. The trace must come through whole, convert (every command one femu-sim
replays), hold what a synced Put sends (a flush and a FUA write per Put on the WAL
namespace, zone appends) and replay in femu-sim without a refused command. About a
minute."""

import os
import sys
from pathlib import Path

import pytest

from guestlib import ENV, REPO

sys.path.insert(0, str(REPO / "bench"))
import dbtrace  # noqa: E402
import plplib  # noqa: E402
import simlib  # noqa: E402

KEYS = 200


def test_record_and_replay(device_ready, femu_only, tmp_path, monkeypatch):
    for k in ("FEMU_QEMU", "FEMU_IMAGE_DIR"):
        if k in ENV:
            monkeypatch.setenv(k, ENV[k])
    out = tmp_path / "trace"
    try:
        dbtrace.record(out, keys=KEYS, memtable_kb=64, log=lambda *a: None, timeout=600)
    except dbtrace.TraceError as e:
        pytest.fail(str(e))
    meta, parsed = dbtrace.load(out)
    assert meta["lba_bytes"] == 512 and meta["zone_bytes"] == plplib.ZONE_MB << 20
    c = parsed["counts"]
    for bench in dbtrace.BENCHES:
        assert f"{KEYS} operations" in meta["results"][bench], meta["results"]
        wal = c[bench]["ns2"]
        assert wal["flush"] == KEYS and wal["write_fua"] == KEYS, c
        assert wal["zone_append"] > 0.9 * KEYS, c
    assert c["setup"]["ns1"].get("zone_reset", 0) >= 1, c
    assert sum(c[b]["ns1"].get("zone_append", 0) for b in dbtrace.BENCHES) > 0, c

    sim = Path(os.environ.get("FEMU_SIM", simlib.FEMU_SIM))
    if not os.access(sim, os.X_OK):
        pytest.skip(f"recorded; {sim} is not built for the replay (make sim)")
    simlib.FEMU_SIM = sim
    for bench in dbtrace.BENCHES:
        jobs, info = dbtrace.replay_jobs(meta, parsed, bench, 2, tmp_path)
        dev = dict(femu_mode=3, devsz_mb=plplib.DRIVE_MB, **plplib.PAPER_FLASH,
                   **plplib.TWO_NS, **plplib.mode_props("none", 64, 32))
        res, _ = simlib.run(dev, jobs, timeout=300)
        assert [j["error"] for j in res["jobs"]] == [0] * len(jobs), res["jobs"]
        pre = ("setup",) if bench == "fillseq" else ("setup", "fillseq")
        writes = sum(r[1] in ("write", "write_fua", "zone_append", "zone_append_fua")
                     for p in pre + (bench,) for ns in (1, 2) for r in parsed["phases"][p][ns])
        assert res["stats"]["host_write_commands"] == 2 * writes
