"""The blackbox drive (femu_mode=1, run-blackbox.sh) as a user sees it: it identifies
itself, keeps data intact while GC moves it (fio crc32c verify), its statistics (vendor log
page 0xCA, read in the guest) move as the FTL says, and its latency above a nossd namespace
of the same boot is the NAND model's time. (Refused properties: tests/qtest/test_properties.py.)

A small, fast geometry (16 MiB, 2 chips, 16 pages per block, SLC, 28% OP) so that GC
starts after a few MiB of random writes and one boot does everything in seconds.
"""

import json
import subprocess

import pytest

import vendorlog
from guestlib import BOOT_TIMEOUT, ENV, STOCK, GuestRun, launch_argv

SIZE_MIB = 16
PAGES = SIZE_MIB * 256              # 4 KiB NAND pages (secsz 512 x secs_per_pg 8)
GEOMETRY = "nchs=2,luns_per_ch=1,pgs_per_blk=16,flash_type=1,op_pcent=28"

VENDOR_LOG = vendorlog.GUEST_CMD

# Sequential fill, then two uniform random overwrites (different seeds, so the second
# does not invalidate lines in the order the first wrote them); each job verifies its data.
JOBS = f"""
[global]
filename=/dev/nvme0n1
direct=1
ioengine=io_uring
bs=4k
iodepth=16
size={SIZE_MIB}m
verify=crc32c
do_verify=1
verify_fatal=1
verify_state_save=0
stonewall
[fill]
rw=write
[overwrite1]
rw=randwrite
randseed=1
[overwrite2]
rw=randwrite
randseed=2
"""

CMD = f"""
echo @@list@@; nvme list
cat > /tmp/jobs.fio <<'JOBS'
{JOBS}
JOBS
fio /tmp/jobs.fio --section=fill --output-format=json --output=/tmp/fill.json
echo FILL_RC=$?
echo @@log-fill@@; {VENDOR_LOG}; echo
fio /tmp/jobs.fio --section=overwrite1 --section=overwrite2 --output-format=json \\
    --output=/tmp/over.json
echo OVER_RC=$?
echo @@log-over@@; {VENDOR_LOG}; echo
blkdiscard /dev/nvme0n1; echo DISCARD_RC=$?
dd if=/dev/nvme0n1 of=/dev/null bs=4k count=100 iflag=direct 2>/dev/null
echo @@log-discard@@; {VENDOR_LOG}; echo
echo @@fio-fill@@; cat /tmp/fill.json
echo @@fio-over@@; cat /tmp/over.json
echo @@end@@
"""


def fio_jobs(text):
    return json.loads(text[text.index("{"):])["jobs"]


def boot(cmd, dev, size, timeout=BOOT_TIMEOUT, extra=()):
    argv = launch_argv(cmd, script="run-blackbox.sh", dev=dev, size=size, timeout=timeout,
                       stock=False, extra=extra)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60,
                          stdin=subprocess.DEVNULL, env=ENV, errors="replace")
    return GuestRun(proc, argv)


@pytest.fixture(scope="module")
def blackbox_only(device_ready):
    if STOCK:
        pytest.skip("femu-specific (FEMU_TEST_STOCK=1 runs against QEMU's stock nvme)")


@pytest.fixture(scope="module")
def gc_run(blackbox_only):
    """One boot: fill, random overwrites with GC, discard; output split in sections."""
    r = boot(CMD, GEOMETRY, SIZE_MIB)
    assert r.returncode == 0, "guest command failed\n" + r.describe()
    return r, r.sections(), r.values()


def test_identifies_as_blackbox(gc_run):
    r, s, _ = gc_run
    assert "FEMU BlackBox-SSD Controller" in s["list"], r.describe()


def test_fill_and_gc_overwrites_verify(gc_run):
    r, s, v = gc_run
    assert v.get("FILL_RC") == "0" and v.get("OVER_RC") == "0", r.describe()
    jobs = fio_jobs(s["fio-fill"]) + fio_jobs(s["fio-over"])
    assert [j["jobname"] for j in jobs] == ["fill", "overwrite1", "overwrite2"], r.describe()
    for j in jobs:
        assert j["error"] == 0, f"{j['jobname']}: error {j['error']}\n{r.describe()}"
        # every block written once, then all read back and checked
        assert j["write"]["io_bytes"] == SIZE_MIB << 20, j["jobname"]
        assert j["read"]["io_bytes"] == SIZE_MIB << 20, j["jobname"]


def test_sequential_fill_needs_no_gc(gc_run):
    r, s, _ = gc_run
    c = vendorlog.parse(s["log-fill"])
    assert c["host_pages_written"] == PAGES, c
    # a sequential fill of an empty drive leaves nothing for GC to move
    assert c["nand_pages_written"] == PAGES, c
    assert c["gc_pages_moved"] == 0 and c["waf_milli"] == 1000, c
    assert c["total_lines"] > c["free_lines"] > 0, c


def test_random_overwrite_runs_gc(gc_run):
    r, s, _ = gc_run
    c = vendorlog.parse(s["log-over"])
    assert c["host_pages_written"] == 3 * PAGES, c
    assert c["gc_runs"] > 0, c
    assert c["blocks_erased"] > 0, c
    assert c["nand_pages_written"] >= c["host_pages_written"], c
    assert c["waf_milli"] > 1000, c
    # GC's copies are the only NAND writes beyond the host's
    assert c["nand_pages_written"] == c["host_pages_written"] + c["gc_pages_moved"], c
    assert c["waf_milli"] == round(1000 * c["nand_pages_written"] / c["host_pages_written"]), c
    assert c["nand_programs"] == c["nand_pages_written"], c
    assert c["nand_erases"] == c["blocks_erased"], c
    # each verify pass read the whole drive
    assert c["host_pages_read"] >= 3 * PAGES, c
    assert 0 < c["free_lines"] < c["total_lines"], c


def test_discard_and_unwritten_reads(gc_run):
    r, s, v = gc_run
    assert v.get("DISCARD_RC") == "0", r.describe()
    before, after = vendorlog.parse(s["log-over"]), vendorlog.parse(s["log-discard"])
    assert after["pages_trimmed"] - before["pages_trimmed"] == PAGES, (before, after)
    # reads of deallocated pages still cost a NAND read each
    assert after["unmapped_pages_read"] - before["unmapped_pages_read"] >= 100, (before, after)
    assert after["nand_reads"] - before["nand_reads"] >= 100, (before, after)
    # no host writes since; background GC may still have moved pages (in the idle time
    # before the discard, when they were valid)
    assert after["host_pages_written"] == before["host_pages_written"], (before, after)
    assert (after["nand_pages_written"] - before["nand_pages_written"]
            == after["gc_pages_moved"] - before["gc_pages_moved"]), (before, after)


# One chip, SLC, every media time x50: a 4 KiB read costs (25 us + 5.12 us) x 50, a
# program (5.12 us + 200 us) x 50. The guest never sees a command complete sooner (fio's
# minimum latency); the device's own record of its latencies (media_read_ns for reads,
# model_latency_ns for every command) must match the model exactly, and the nossd
# namespace beside it, which has no model, adds nothing to them. How much later than the
# model the guest sees each completion is the host's business (a busy host: more), which
# the lateness statistics measure and no test bounds.
SCALE = 50
READ_US = (25 + 4096 / 800) * SCALE
PROG_US = (4096 / 800 + 200) * SCALE

TIMING_CMD = f"""
F="--direct=1 --ioengine=io_uring --bs=4k --iodepth=1 --output-format=json --lat_percentiles=1"
for ns in 1 2; do
    D=$(nsdev $ns)
    echo @@log-start-$ns@@; {VENDOR_LOG}; echo
    echo @@write-$ns@@; fio --name=w --filename=$D $F --rw=randwrite --size=1m
    echo @@log-before-$ns@@; {VENDOR_LOG}; echo
    echo @@read-$ns@@; fio --name=r --filename=$D $F --rw=randread --size=1m --number_ios=200
    echo @@unwritten-$ns@@; fio --name=u --filename=$D $F --rw=randread --offset=8m \\
        --size=1m --number_ios=200
    echo @@log-after-$ns@@; {VENDOR_LOG}; echo
done
echo @@end@@
"""


def test_completions_wait_for_the_nand_model(blackbox_only):
    r = boot(TIMING_CMD, "ns_types=nossd:blackbox,ns_sizes_mb=16:16,nchs=1,luns_per_ch=1,"
             f"flash_type=1,time_scale={SCALE}", 2 * SIZE_MIB)
    assert r.returncode == 0, r.describe()
    s = r.sections()
    for name, ddir, model_us in (("write", "write", PROG_US), ("read", "read", READ_US),
                                 ("unwritten", "read", READ_US)):
        # fio's total latency: its clat starts only when the submitting system call has
        # returned, which under TCG may be after the device took the command
        lat = fio_jobs(s[f"{name}-2"])[0][ddir]["lat_ns"]
        # never early: the model's time is a floor for every single command
        assert lat["min"] / 1000 >= 0.98 * model_us, f"{name}: {lat}, model {model_us} us"
    # the device's own figures: every command of the blackbox namespace took the model's
    # time exactly, the nossd namespace's none
    logs = {when: {ns: vendorlog.parse(s[f"log-{when}-{ns}"]) for ns in (1, 2)}
            for when in ("start", "before", "after")}
    model = {(when, ns): logs[to][ns]["model_latency_ns"] - logs[when][ns]["model_latency_ns"]
             for ns in (1, 2) for when, to in (("start", "before"), ("before", "after"))}
    assert model[("start", 1)] == model[("before", 1)] == 0, model
    assert model[("start", 2)] == 256 * round(PROG_US * 1000), model
    assert model[("before", 2)] == 400 * round(READ_US * 1000), model
    # the blackbox namespace's 400 reads (written and unwritten pages), each one page read
    # on an idle chip, as the device timed them
    before, after = (vendorlog.parse(s[f"log-{when}-2"]) for when in ("before", "after"))
    reads = after["ns2_media_reads"] - before["ns2_media_reads"]
    read_ns = after["ns2_media_read_ns"] - before["ns2_media_read_ns"]
    assert reads == 400, (before, after)
    assert read_ns == reads * round(READ_US * 1000), (read_ns / reads, READ_US)
    assert after["ns1_media_read_ns"] == 0, after
