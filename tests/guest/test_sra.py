"""Sequential read-ahead (sra=on) seen from Linux: fio reads back, 4 KiB at a time at
QD1, data it wrote before, verifying every block (crc32c), and the vendor log page 0xCA
says how the read-ahead went. Zoned (two namespaces read one at a time and then both at
once) and blackbox; random reads, a write during a sequential read and an overwrite of
cached pages in the blackbox boot. (The states in detail: tests/qtest/test_sra.py.)

Page reads are slow (5 ms, SLC, eight chips on one channel), so in the device's own
figures (media_read_ns / media_reads, the model's latency, whatever TCG or a busy host
adds) a read that misses costs at least 5 ms; with read-ahead, reads are served from
pages read ahead on all eight chips at once, and wait at most for the page's read. The
NAND allows at most eight pages per 5 ms (6.55 MB/s): a ceiling on fio's throughput that
a busy host only moves further away. The data written ends where the reads end (a zone's
write pointer, the blackbox's last mapped page), and prefetch never reads past it: at the
end every page read ahead has been read by the host.

fio's verify of a read job expects the block headers (and their seeds) its write job
made: the read jobs have the same size, block size, order and job number as the jobs
that wrote the data.
"""

import json
import re
import subprocess

import pytest

import vendorlog
from guestlib import BOOT_TIMEOUT, ENV, STOCK, GuestRun, launch_argv

PAGE = 4096
READ_NS = 5_000_000
CHIPS = 8
NAND_MBPS = CHIPS * PAGE / READ_NS * 1e3        # every chip reading all the time
MIB = 1 << 20
DATA_MB = 8                                     # written, then read back, per namespace
PAGES = DATA_MB * MIB // PAGE
RANDOM_IOS = 400
WRITER_KB = 64
SRA = "sra=on,sra_idle_ms=10000"                # idle: longer than any pause of the guest

ZONED_DEV = (f"namespaces=2,zns_zone_size_mb=1,zns_num_ch=1,zns_num_lun={CHIPS},"
             f"zns_flash_type=1,zns_pg_rd_lat={READ_NS},{SRA}")
BLACKBOX_DEV = (f"nchs=2,luns_per_ch={CHIPS // 2},pgs_per_blk=16,flash_type=1,"
                f"pg_rd_lat={READ_NS},{SRA}")

HELPERS = f"""
log() {{ echo "@@log-$1@@"; {vendorlog.GUEST_CMD}; echo; }}
runfio() {{
    local n=$1; shift
    fio --output-format=json "$@" > /tmp/fio-$n.out 2>&1
    local rc=$?
    echo "@@fio-$n@@"; echo "rc=$rc"; cat /tmp/fio-$n.out
}}
V="--direct=1 --bs=4k --verify=crc32c --verify_fatal=1"
FILL="--rw=write --ioengine=io_uring --iodepth=16 --do_verify=0"
SEQ="--rw=read --iodepth=1"
RAND="--rw=randread --iodepth=1 --verify=0 --norandommap --number_ios={RANDOM_IOS}"
"""

# ns1 and ns2 are fio's jobs 1 and 2 in every run, as their seeds want.
ZONED_CMD = HELPERS + f"""
V="$V --zonemode=zbd"
J1="--name=ns1 --filename=$(nsdev 1) --size={DATA_MB}m"
J2="--name=ns2 --filename=$(nsdev 2) --size={DATA_MB}m"
runfio fill $V $FILL $J1 $J2
log fill
runfio seq1 $V $SEQ $J1
log seq1
runfio seq2 $V $SEQ $J1 $J2
log seq2
runfio rand $V $RAND $J1
log rand
echo @@end@@
"""

# The reader is job 1 as fill was; the writer writes elsewhere, a page every 100 ms, so
# that its writes fall all through the read and the stream ramps up again in between.
# Then dd: a sequential read leaves pages ahead cached, those pages are overwritten, and
# reading on must give the new data.
D = "/dev/nvme0n1"
AT = 24 * MIB // PAGE                           # pages: the dd region
BLACKBOX_CMD = HELPERS + f"""
J="--name=seq --filename={D} --size={DATA_MB}m"
W="--name=writer --filename={D} --offset={2 * DATA_MB}m --size={WRITER_KB}k --rw=write \
    --do_verify=1 --thinktime=100000"
runfio fill $V $FILL $J
log fill
runfio seq $V $SEQ $J
log seq
runfio rand $V $RAND $J
log rand
runfio mixed $V $SEQ $J $W
log mixed
head -c {2 * MIB} /dev/urandom > /tmp/old
head -c {MIB} /dev/urandom > /tmp/new
dd if=/tmp/old of={D} bs=1M seek={AT * PAGE // MIB} oflag=direct 2>/dev/null
log dd-written
dd if={D} of=/dev/null bs=4k skip={AT} count=128 iflag=direct 2>/dev/null
log dd-read
dd if=/tmp/new of={D} bs=4k seek={AT + 128} oflag=direct 2>/dev/null
log dd-overwritten
dd if={D} of=/tmp/got bs=4k skip={AT + 128} count=256 iflag=direct 2>/dev/null
cmp /tmp/got /tmp/new && echo DD_READS=new || echo DD_READS=old
echo @@end@@
"""


def boot(cmd, script, dev, size):
    argv = launch_argv(cmd, script=script, dev=dev, size=size, stock=False)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=BOOT_TIMEOUT + 60,
                          stdin=subprocess.DEVNULL, env=ENV, errors="replace")
    r = GuestRun(proc, argv)
    assert r.returncode == 0, "guest command failed\n" + r.describe()
    s = r.sections()
    assert "end" in s, r.describe()
    return r, s


@pytest.fixture(scope="module")
def sra_only(device_ready):
    if STOCK:
        pytest.skip("femu's sra")


@pytest.fixture(scope="module")
def zoned(sra_only):
    return boot(ZONED_CMD, "run-zns.sh", ZONED_DEV, 32)


@pytest.fixture(scope="module")
def blackbox(sra_only):
    return boot(BLACKBOX_CMD, "run-blackbox.sh", BLACKBOX_DEV, 32)


def fio_jobs(s, name):
    """The jobs of a fio run, checked: exit 0 and no job error (a verify error is one)."""
    text = s[f"fio-{name}"]
    assert text.startswith("rc=0\n"), f"fio {name} failed:\n{text[-3000:]}"
    jobs = json.JSONDecoder().raw_decode(text[text.index("{"):])[0]["jobs"]
    for j in jobs:
        assert j["error"] == 0, f"fio {name} {j['jobname']}: error {j['error']}\n{text[-3000:]}"
    return {j["jobname"]: j for j in jobs}


def delta(s, before, after):
    """Counter growth between two vendor log sections; absent counters count as 0."""
    b, a = vendorlog.parse(s[f"log-{before}"]), vendorlog.parse(s[f"log-{after}"])
    return {k: a[k] - b.get(k, 0) for k in a if k != "mode"}, a


def ns_hits(d, nsid):
    """Hits of every stream of namespace nsid."""
    return sum(v for k, v in d.items() if re.fullmatch(rf"sra_ns{nsid}_s\d+_hits", k))


def model_read_ns(d):
    """The device's mean read latency (the model's, from arrival to completion) and the
    number of reads it timed."""
    return d["media_read_ns"] / max(d["media_reads"], 1), d["media_reads"]


def check_sequential(d, pages, mbps, what):
    """A QD1 4 KiB read of `pages` pages of written data, from its start to its end."""
    hits, misses = d.get("sra_hits", 0), d.get("sra_misses", 0)
    mean_ns, reads = model_read_ns(d)
    print(f"{what}: {hits} hits, {misses} misses of {pages} pages, device read latency "
          f"{mean_ns / 1e3:.0f} us (a page read: {READ_NS / 1e3:.0f} us), {mbps:.2f} MB/s "
          f"(NAND: <= {NAND_MBPS:.2f})")
    # only the reads of the ramp (and a page or two around it) miss
    assert hits >= 0.95 * pages, (what, d)
    assert hits + misses == pages, (what, d)
    assert d.get("sra_enabled_entries", 0) >= 1, (what, d)
    # every page read ahead was read: none beyond the written data, none torn down
    assert d["sra_prefetched_pages"] == hits, (what, d)
    assert d["sra_wasted_pages"] == 0, (what, d)
    # one command per page, most served well before a NAND read could be; never faster
    # than the chips
    assert reads == pages, (what, d)
    assert mean_ns < READ_NS / 2, (what, mean_ns)
    assert mbps <= 1.05 * NAND_MBPS, (what, mbps)


def mb_per_s(job):
    return job["read"]["bw_bytes"] / 1e6


def test_zoned_fill(zoned):
    _, s = zoned
    for j in fio_jobs(s, "fill").values():
        assert j["write"]["io_bytes"] == DATA_MB * MIB, j["jobname"]


def test_zoned_sequential_read_hits(zoned):
    _, s = zoned
    job = fio_jobs(s, "seq1")["ns1"]
    assert job["read"]["io_bytes"] == DATA_MB * MIB
    d, now = delta(s, "fill", "seq1")
    check_sequential(d, PAGES, mb_per_s(job), "zoned ns1")
    assert ns_hits(d, 1) == d["sra_hits"] and ns_hits(d, 2) == 0, d
    assert d["prefetch_pages_read"] == d["sra_prefetched_pages"], d
    assert now["sra_bad_transitions"] == 0 and now["sra_cached_pages"] == 0, now


def test_two_zoned_namespaces_read_at_once(zoned):
    _, s = zoned
    jobs = fio_jobs(s, "seq2")
    d, now = delta(s, "seq1", "seq2")
    for nsid in (1, 2):
        job = jobs[f"ns{nsid}"]
        assert job["read"]["io_bytes"] == DATA_MB * MIB
        print(f"zoned ns{nsid} with the other namespace reading: {ns_hits(d, nsid)} hits, "
              f"{mb_per_s(job):.2f} MB/s")
        assert ns_hits(d, nsid) >= 0.95 * PAGES, (nsid, d)
    # the two streams share the chips: together no faster than the NAND
    check_sequential(d, 2 * PAGES, sum(mb_per_s(j) for j in jobs.values()), "zoned ns1+ns2")
    # each job ran for most of the other's time
    t1, t2 = (jobs[n]["job_runtime"] for n in ("ns1", "ns2"))
    assert min(t1, t2) >= 0.6 * max(t1, t2), (t1, t2)
    assert now["sra_bad_transitions"] == 0, now


def check_random(d, what):
    mean_ns, reads = model_read_ns(d)
    print(f"{what}: {RANDOM_IOS} random reads, {d.get('sra_hits', 0)} hits, "
          f"{d.get('sra_prefetched_pages', 0)} pages read ahead, device read latency "
          f"{mean_ns / 1e3:.0f} us")
    # without read-ahead a read waits for its page: what check_sequential's bound tells apart
    assert reads == RANDOM_IOS and mean_ns >= 0.95 * READ_NS, (what, mean_ns, d)
    # a page cached for the sequential stream before may be hit by chance, no more
    assert d.get("sra_hits", 0) <= RANDOM_IOS // 100, (what, d)
    assert d.get("sra_prefetched_pages", 0) == 0, (what, d)
    # the detectors were there, and each read took one from another
    assert d.get("sra_disabled_by_random_read", 0) >= RANDOM_IOS // 2, (what, d)
    assert d["sra_misses"] >= RANDOM_IOS - RANDOM_IOS // 100, (what, d)


def test_zoned_random_reads_do_not_read_ahead(zoned):
    _, s = zoned
    assert fio_jobs(s, "rand")["ns1"]["read"]["total_ios"] == RANDOM_IOS
    d, now = delta(s, "seq2", "rand")
    check_random(d, "zoned")
    assert now["sra_bad_transitions"] == 0, now


def test_blackbox_sequential_read_hits(blackbox):
    _, s = blackbox
    assert fio_jobs(s, "fill")["seq"]["write"]["io_bytes"] == DATA_MB * MIB
    job = fio_jobs(s, "seq")["seq"]
    assert job["read"]["io_bytes"] == DATA_MB * MIB
    d, now = delta(s, "fill", "seq")
    check_sequential(d, PAGES, mb_per_s(job), "blackbox")
    assert d["prefetch_pages_read"] == d["sra_prefetched_pages"], d
    assert now["sra_bad_transitions"] == 0 and now["sra_cached_pages"] == 0, now


def test_blackbox_random_reads_do_not_read_ahead(blackbox):
    _, s = blackbox
    assert fio_jobs(s, "rand")["seq"]["read"]["total_ios"] == RANDOM_IOS
    d, now = delta(s, "seq", "rand")
    check_random(d, "blackbox")
    assert now["sra_bad_transitions"] == 0, now


def test_write_during_sequential_read(blackbox):
    _, s = blackbox
    jobs = fio_jobs(s, "mixed")
    # both verified: the reader the data fill wrote, the writer its own
    assert jobs["seq"]["read"]["io_bytes"] == DATA_MB * MIB
    assert jobs["writer"]["write"]["io_bytes"] == WRITER_KB * 1024
    assert jobs["writer"]["read"]["io_bytes"] == WRITER_KB * 1024
    d, now = delta(s, "rand", "mixed")
    d = {k: d.get(k, 0) for k in ("sra_hits", "sra_disabled_by_write", "sra_teardowns",
                                  "sra_wasted_pages")}
    print(f"blackbox read with writes: {d['sra_hits']} hits, {d['sra_disabled_by_write']} "
          f"disabled by a write, {d['sra_teardowns']} teardowns, "
          f"{d['sra_wasted_pages']} pages wasted, {mb_per_s(jobs['seq']):.2f} MB/s")
    # the writes tear the stream down, mostly with pages read ahead; it ramps up again
    writes = WRITER_KB * 1024 // PAGE
    assert d["sra_disabled_by_write"] >= writes // 2, d
    assert d["sra_teardowns"] >= writes // 4 and d["sra_wasted_pages"] > 0, d
    assert d["sra_hits"] >= PAGES // 2, d
    assert now.get("sra_bad_transitions") == 0, now


def test_overwrite_of_cached_pages_reads_new_data(blackbox):
    r, s = blackbox
    read, _ = delta(s, "dd-written", "dd-read")
    over, now = delta(s, "dd-read", "dd-overwritten")
    cached = vendorlog.parse(s["log-dd-read"]).get("sra_cached_pages", 0)
    # the pages ahead of the read were cached when they were overwritten ...
    assert read.get("sra_hits", 0) >= 100 and cached > 0, (read, cached)
    # ... and the write dropped them
    assert over["sra_disabled_by_write"] >= 1, over
    assert over["sra_wasted_pages"] == cached and now["sra_cached_pages"] == 0, (over, now)
    assert r.values().get("DD_READS") == "new", r.describe()
