"""femu-sim against the emulator: the same commands in the same virtual time (simcheck.py)
give the same device-side figures - read latency of the media (media_read_ns), WAF, GC
runs and moves, NAND operations, chip busy time - within 2 %, for random reads at QD 1 to
64, sequential reads and writes, GC at steady state, read-ahead on and off."""

import os
import random

import pytest

import simcheck

pytestmark = pytest.mark.skipif(not os.access(simcheck.FEMU_SIM, os.X_OK),
                                reason="femu-sim not built (make sim)")

PAGE = 4096
# small and slow flash, so that the queue depths contend for chips and channels
FLASH = "nchs=2,luns_per_ch=2,pgs_per_blk=16,flash_type=3"


def rand(op, pages, count, rng, size=PAGE):
    return [(op, rng.randrange(pages - size // PAGE + 1) * PAGE, size) for _ in range(count)]


def test_random_reads_at_queue_depths(tmp_path):
    rng = random.Random(1)
    pages = 1024
    props = "femu_mode=1,devsz_mb=8," + FLASH
    phases = [(8, simcheck.seq("write", 0, pages))] + \
             [(qd, rand("read", pages, 300, rng)) for qd in (1, 4, 16, 64)]
    emu, _ = simcheck.check(tmp_path, props, 8, phases)
    assert emu["media_reads"] == 1200


def test_gc_at_steady_state(tmp_path):
    """The drive overwritten three times over at random: forced GC, WAF well above 1. FEMU's
    FTL (GC in bursts into the one open line): test_gc_policies_and_pacing has the others."""
    rng = random.Random(2)
    pages = 1024
    props = "femu_mode=1,devsz_mb=4,op_pcent=25,gc_pacing=burst,streams=shared," + FLASH
    phases = [(4, simcheck.seq("write", 0, pages)), (4, rand("write", pages, 2 * pages, rng)),
              (2, rand("read", pages, 200, rng))]
    emu, _ = simcheck.check(tmp_path, props, 4, phases)
    assert emu["gc_runs"] > 10 and emu["waf_milli"] > 1200


@pytest.mark.parametrize("gc", ["femu_mode=1,gc_policy=d-choices:d=4,gc_pacing=proportional",
                                "femu_mode=1,gc_policy=cost-benefit",
                                "femu_mode=1,gc_policy=random:seed=5",
                                "femu_mode=1,streams=host-gc,gc_pacing=proportional",
                                "femu_mode=4,fdp_nrg=2,gc_pacing=proportional"])
def test_gc_policies_and_pacing(tmp_path, gc):
    """The FTL's policies (ftl/) as properties of both: the same victims, moves and times."""
    rng = random.Random(3)
    pages = 1024
    props = gc + ",devsz_mb=4,op_pcent=32," + FLASH     # host-gc needs a fifth spare line
    phases = [(4, simcheck.seq("write", 0, pages)), (4, rand("write", pages, 3 * pages, rng)),
              (2, rand("read", pages, 200, rng))]
    emu, _ = simcheck.check(tmp_path, props, 4, phases)
    assert emu["gc_runs"] > 10 and emu["waf_milli"] > 1200


@pytest.mark.parametrize("wb", ["wb_size_mb=1", "wb_size_mb=1,wb_plp=on",
                                "wb_size_mb=1,wb_high_pct=90,wb_low_pct=10"])
def test_write_buffer(tmp_path, wb):
    """The DRAM write buffer in both: writes taken, written out, read back from it."""
    rng = random.Random(4)
    pages = 1024
    props = "femu_mode=1,devsz_mb=4,op_pcent=32," + wb + "," + FLASH     # host-gc: 5 spare
    phases = [(4, simcheck.seq("write", 0, pages)), (1, rand("write", pages, pages, rng)),
              (8, rand("write", pages, 2 * pages, rng)), (2, rand("read", pages, 300, rng))]
    emu, _ = simcheck.check(tmp_path, props, 4, phases)
    assert emu["wb_written_out_watermark"] > 1000 and emu["wb_read_hit_bytes"] > 0


@pytest.mark.parametrize("units", ["op_pcent=32",
                                   "pls_per_lun=2,op_pcent=64,gc_pacing=proportional,"
                                   "streams=host-gc"])
def test_sub_page_mapping_units(tmp_path, units):
    """map_unit_kb as a property of both: 4 KiB units packed into 16 KiB NAND pages, GC
    reading each page once for its valid units; the same programs, reads, moves and times."""
    rng = random.Random(4)
    pages = 1024
    props = ("femu_mode=1,devsz_mb=4,nchs=2,luns_per_ch=2,pgs_per_blk=4,flash_type=3,"
             "secs_per_pg=32,map_unit_kb=4," + units)
    phases = [(4, simcheck.seq("write", 0, pages)), (4, rand("write", pages, 3 * pages, rng)),
              (8, rand("write", pages, 200, rng, 3 * PAGE)),
              (2, rand("read", pages, 200, rng)), (4, rand("read", pages, 100, rng, 5 * PAGE))]
    emu, _ = simcheck.check(tmp_path, props, 4, phases)
    assert emu["gc_runs"] > 10 and emu["waf_milli"] > 1200
    # a NAND page holds 4 units: GC moved more units than it read pages
    assert emu["gc_pages_moved"] > 0 and emu["nand_pages_written"] == 4 * emu["nand_programs"]


def test_sequential_with_link_and_firmware(tmp_path):
    """128 KiB transfers over a PCIe link and firmware cores: the front end's booking."""
    props = "femu_mode=1,devsz_mb=8,pcie_gen=3,pcie_lanes=2,fw_cores=2,fw_cmd_ns=3000," + FLASH
    phases = [(4, simcheck.seq("write", 0, 48, 128 * 1024)),
              (4, simcheck.seq("read", 0, 48, 128 * 1024)),
              (1, simcheck.seq("read", 0, 16, 128 * 1024))]
    simcheck.check(tmp_path, props, 8, phases)


def test_transfers_above_mdts_go_as_several_commands(tmp_path):
    """2 MiB writes and reads (MDTS 512 KiB): four commands each, submitted together and
    done when the last is, as the host's block layer splits them."""
    props = "femu_mode=1,devsz_mb=8," + FLASH
    phases = [(2, simcheck.seq("write", 0, 3, 2 << 20)), (2, simcheck.seq("read", 0, 3, 2 << 20))]
    emu, _ = simcheck.check(tmp_path, props, 8, phases)
    assert emu["host_write_commands"] == 12 and emu["host_read_commands"] == 12


@pytest.mark.parametrize("sra", ["off", "on"])
def test_read_ahead(tmp_path, sra):
    """Sequential 4 KiB reads at QD 1: with sra=on most come from the prefetch cache."""
    props = "femu_mode=1,devsz_mb=8,sra=%s," % sra + FLASH
    phases = [(8, simcheck.seq("write", 0, 512)), (1, simcheck.seq("read", 0, 400))]
    emu, _ = simcheck.check(tmp_path, props, 8, phases)
    if sra == "on":
        assert emu["prefetch_pages_read"] > 200


@pytest.mark.parametrize("mode", ["femu_mode=1", "femu_mode=4,fdp_nrg=2"])
def test_write_zeroes(tmp_path, mode):
    """Write Zeroes through the same NVM rules: whole pages dropped from the mapping (so the
    reads after find less to read), and the GC that follows sees fewer valid pages. The
    firmware model counts the commands fetched (a Write Zeroes is no host read or write)."""
    rng = random.Random(8)
    pages = 1024
    # host-gc (the blackbox default) needs a fifth spare line
    props = mode + ",devsz_mb=4,op_pcent=32,fw_cores=1,fw_cmd_ns=2000," + FLASH
    zeroes = [("write_zeroes", rng.randrange(pages - 16) * PAGE, rng.choice([1, 4, 16]) * PAGE)
              for _ in range(150)]
    phases = [(4, simcheck.seq("write", 0, pages)), (4, zeroes),
              (4, rand("write", pages, pages, rng)), (2, rand("read", pages, 300, rng))]
    emu, sim = simcheck.check(tmp_path, props, 4, phases)
    assert emu["fw_commands"] == 2 * pages + 150 + 300
    assert emu["host_write_commands"] == 2 * pages      # a Write Zeroes moves no host data
    assert emu["gc_runs"] > 0


def test_compare_times_as_read(tmp_path):
    """femu-sim keeps no data: a Compare is the read it makes, counted as a host read."""
    rng = random.Random(9)
    props = "femu_mode=1,devsz_mb=8,pcie_gen=3,fw_cores=1,fw_cmd_ns=1000," + FLASH
    reads = rand("read", 1024, 200, rng)
    stats = []
    for i, op in enumerate(("read", "compare")):
        d = tmp_path / op
        d.mkdir()
        phases = [(4, simcheck.seq("write", 0, 1024)), (4, [(op, o, n) for _, o, n in reads])]
        out = simcheck.run_sim(props, phases, str(d))
        assert all(job["error"] == 0 for job in out["jobs"]), out["jobs"]
        stats.append(out["stats"])
    assert stats[0]["host_read_commands"] == 200
    assert stats[0] == stats[1]
