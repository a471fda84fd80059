"""femu-sim against the emulator for the zns, fdp and whitebox kinds (simcheck.py): the same
reads and writes in the same virtual time give the same statistics - the zone counts, the
zoned model's programs, drains and buffer use, PLP's regions, FDP's handles and groups
(writes placed by identifier, a power cut), the chunks - within 2 %. Zone resets and
finishes are not in the emulator's closed loop; the zones fill up and close implicitly."""

import os
import random

import pytest

import simcheck

pytestmark = pytest.mark.skipif(not os.access(simcheck.FEMU_SIM, os.X_OK),
                                reason="femu-sim not built (make sim)")

PAGE = 4096
FLASH = "pgs_per_blk=16,flash_type=3"
ZONE = 1 << 20


def zoned_phases(rng):
    """Zone 0 filled, zones 1-3 partly: with two open zones at most, zone 1 is closed
    implicitly (and drained) when zone 3 opens; then reads of what was written."""
    written = [(0, 256), (ZONE, 100), (2 * ZONE, 37), (3 * ZONE, 64)]
    reads = [("read", start + rng.randrange(n) * PAGE, PAGE)
             for _ in range(300) for start, n in [rng.choice(written)]]
    return [(4, simcheck.seq("write", 0, 256)), (4, simcheck.seq("write", ZONE, 100)),
            (1, simcheck.seq("write", 2 * ZONE, 37)),
            (2, simcheck.seq("write", 3 * ZONE, 64, PAGE)),
            (8, reads), (1, simcheck.seq("read", ZONE, 100))]


# 4 KiB LBAs, as the emulator runs (the PLP buffer's sectors are LBAs)
ZNS = ("femu_mode=3,devsz_mb=16,lba_index=1,zns_zone_size_mb=1,zns_num_ch=2,zns_num_lun=2,"
       "zns_max_open=2,zns_max_active=4," + FLASH)


@pytest.mark.parametrize("extra", ["", ",sra=on", ",zns_wbuf_zones=4,zns_stripe=2"])
def test_zns(tmp_path, extra):
    emu, _ = simcheck.check(tmp_path, ZNS + extra, 16, zoned_phases(random.Random(3)))
    assert emu["zones_open"] == 2 and emu["zones_active"] == 3
    assert emu["pages_programmed"] > 256
    if "sra=on" in extra:
        assert emu["prefetch_pages_read"] > 0


def test_zns_plp(tmp_path):
    """Zone 1 durable (protected), the others not; small regions that write themselves out."""
    props = ZNS + ",plp=selective,plp_zones=1,plp_buf_mb=1,buf_mb=1,plp_flush_pct=50"
    emu, _ = simcheck.check(tmp_path, props, 16, zoned_phases(random.Random(4)))
    assert emu["plp_protected_bytes_written"] == 100 * PAGE
    assert emu["plp_flushes_threshold"] > 0


def test_fdp(tmp_path):
    """Writes without a directive take the reclaim groups in turn; GC at steady state."""
    rng = random.Random(5)
    pages = 1024
    props = "femu_mode=4,devsz_mb=4,op_pcent=25,fdp_nrg=2,nchs=2,luns_per_ch=2," + FLASH
    phases = [(4, simcheck.seq("write", 0, pages)),
              (4, [("write", rng.randrange(pages) * PAGE, PAGE) for _ in range(2 * pages)]),
              (2, [("read", rng.randrange(pages) * PAGE, PAGE) for _ in range(200)])]
    emu, _ = simcheck.check(tmp_path, props, 4, phases)
    assert emu["gc_runs"] > 10 and emu["rg1_gc_runs"] > 0


def test_fdp_placement_and_power_cut(tmp_path):
    """Writes placed by identifier over all 4 handles (II, PI, II, PI) of both reclaim
    groups in turn, to GC at steady state; a power cut, which closes the partly written
    RUs when the power is back (fdp_pages_skipped), then writes to some handles and reads.
    Per-handle and per-group statistics, WAF and the media's times agree."""
    rng = random.Random(7)
    pages = 1024
    props = ("femu_mode=4,devsz_mb=4,op_pcent=25,fdp_nrg=2,nchs=2,luns_per_ch=2,"
             "fdp_ruh_types=ii:pi:ii:pi," + FLASH)
    nph, rgif = 4, 1
    every = list(range(2 * nph))        # index rg * nph + ph, as RUH Status lists them

    def pid_of(i):
        return (i // nph) << (16 - rgif) | i % nph

    def rand_writes(n):
        return [("write", rng.randrange(pages) * PAGE, PAGE) for _ in range(n)]

    # 1024 + 1500 writes over 8 slots: each slot's RU is partly written at the cut
    phases = [(4, simcheck.seq("write", 0, pages), every),
              (4, rand_writes(1500), every),
              (1, [simcheck.POWER_CUT]),
              (4, rand_writes(pages // 2), [1, 5]),
              (2, [("read", rng.randrange(pages) * PAGE, PAGE) for _ in range(200)])]
    emu, _ = simcheck.check(tmp_path, props, 4, phases, pid_of)
    assert emu["power_cuts"] == 1
    assert emu["fdp_pages_skipped"] > 0, "the power cut closed partly written RUs"
    for h in range(nph):
        assert emu["ruh%d_host_pages_written" % h] > 0, h
    assert emu["ruh1_host_pages_written"] > emu["ruh0_host_pages_written"] + pages // 4
    assert emu["rg0_gc_runs"] > 0 and emu["rg1_gc_runs"] > 0
    assert emu["gc_pages_moved"] > 0


def test_whitebox(tmp_path):
    """Chunks of 512 KiB (32 KiB write units) on 4 PUs, filled in order and read back."""
    rng = random.Random(6)
    chunk = 512 * 1024
    props = ("femu_mode=0,devsz_mb=8,lba_index=1,lnum_ch=2,lnum_lun=2,lpgs_per_blk=16,"
             "flash_type=3")
    phases = [(4, simcheck.seq("write", 0, 16, 32 * 1024)),            # chunk 0, whole: closed
              (4, simcheck.seq("write", 4 * chunk, 8, 32 * 1024)),     # PU 1's first chunk, half
              (2, simcheck.seq("write", 8 * chunk, 3, 64 * 1024)),     # PU 2's
              (8, [("read", rng.randrange(chunk // PAGE) * PAGE, PAGE) for _ in range(200)]),
              (1, simcheck.seq("read", 4 * chunk, 64))]
    emu, _ = simcheck.check(tmp_path, props, 8, phases)
    assert emu["chunks_closed"] == 1 and emu["chunks_open"] == 2
