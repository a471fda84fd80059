"""The FDP drive (femu_mode=4, run-fdp.sh) as Linux and its tools see it: fio's FDP mode
(io_uring passthrough on /dev/ng0n1, --fdp=1 --fdp_pli=) writes and verifies through two
placement handles while GC runs, the statistics count each handle's writes, nvme-cli's
`fdp` commands read our configuration, usage, statistics, reclaim unit handle status and
events, placement state and data survive a restart on a --backing file, two namespaces
share handles, and the guest kernel's block layer cannot tag placement (no write streams
before Linux 6.16). The device's contract: /work/fdp-spec.md (docs/fdp.md).

Each module fixture is one boot (a few seconds under TCG) printing `@@name@@` sections;
the tests pick them apart. Every drive uses 4 KiB LBAs (lba_index=1), so one LBA is one
flash page, and 2 chips with 16 pages per block: a reclaim unit (RU) is 32 pages
(128 KiB) with one reclaim group, 16 pages per RU with two.
"""

import json
import re
import subprocess

import pytest

from guestlib import BOOT_TIMEOUT, ENV, QEMU, STOCK, GuestRun, launch_argv

MIB = 1 << 20
PAGE = 4096                 # flash page = LBA (lba_index=1)
GEO = "nchs=2,luns_per_ch=1,pgs_per_blk=16,flash_type=1,lba_index=1"
RU_PAGES = 32               # 16 pages per block x 1 plane x 2 chips (one reclaim group)
RUNS = RU_PAGES * PAGE

# event types (contract: host events 00h-03h, controller events 80h, 81h)
EV_RU_NOT_FULLY_WRITTEN, EV_TIME_LIMIT, EV_CTRL_RESET, EV_INVALID_PID = 0x00, 0x01, 0x02, 0x03
EV_MEDIA_REALLOCATED, EV_IMPLICITLY_MODIFIED = 0x80, 0x81
PIV, NSIDV, LV = 1, 2, 4    # event flags

# Shell helpers for every guest command. Without nvme-cli's `fdp` plugin or fio's FDP
# options (an older image) the command prints FDP_TOOLS=missing and the tests skip.
# vlog: the vendor statistics page 0xCA; nvme-cli 2.13 reads a log in 4 KiB pieces up to
# --log-len and the device refuses an offset beyond the page, so one piece of 64 KiB.
# snap: FDP statistics and the vendor page of one moment (background GC may move pages
# between two reads: repeat until the FDP statistics read before and after agree).
# ruhs: I/O Management Receive (RUH status) as one JSON line. hostev/ctrlev: the FDP
# events log (nvme-cli -E asks for host events, LSP bit 0 = 1) as hex bytes.
HELPERS = r"""
D=/dev/nvme0; N1=/dev/nvme0n1
if ! nvme fdp configs --help 2>&1 | grep -q endgrp-id ||
        fio --cmdhelp=fdp_pli 2>&1 | grep -q "No such command"; then
    echo FDP_TOOLS=missing; exit 0
fi
vlog() { nvme get-log $D --log-id=0xca --log-len=65536 --xfer-len=65536 --raw-binary | tr -d '\0'; }
fstats() { nvme fdp stats $D -e 1 -o json | tr -d ' \n'; echo; }
snap() {
    local a b v i
    for i in 1 2 3 4 5 6 7 8 9 10; do
        a=$(fstats); v=$(vlog); b=$(fstats)
        [ "$a" = "$b" ] && break
        sleep 1
    done
    echo "@@$1-stats@@"; echo "$a"; echo "@@$1-vlog@@"; echo "$v"
}
ruhs() { echo "@@$1@@"; nvme fdp status ${2:-$N1} -o json | tr -d ' \n'; echo; }
hostev() { echo "@@$1@@"; nvme fdp events $D -e 1 -E -b | od -An -v -tx1; }
ctrlev() { echo "@@$1@@"; nvme fdp events $D -e 1 -b | od -An -v -tx1; }
# pwrite SLBA NLB PID [NS]: NLB LBAs of random data with the Data Placement directive
pwrite() {
    head -c $(($2 * 4096)) /dev/urandom > /tmp/pw
    nvme write ${4:-$N1} -s $1 -c $(($2 - 1)) -z $(($2 * 4096)) -d /tmp/pw \
        --dir-type=2 --dir-spec=$3 >/dev/null
}
# runfio NAME ARGS...: section fio-NAME with "rc=N" and fio's JSON
runfio() {
    local n=$1; shift
    fio --output-format=json "$@" > /tmp/fio-$n.out 2>&1
    local rc=$?
    echo "@@fio-$n@@"; echo "rc=$rc"; cat /tmp/fio-$n.out
}
"""

# fio's FDP mode: NVMe passthrough on the namespace's character device; fdp_pli indexes
# the RUH status list the device returns (here PHNDL i = index i)
FIO_FDP = "ioengine=io_uring_cmd\ncmd_type=nvme\nfdp=1\nbs=4k\n"
FIO_VERIFY = "verify=crc32c\ndo_verify=1\nverify_fatal=1\nverify_state_save=0\n"


def boot(cmd, dev, size, backing=None, timeout=BOOT_TIMEOUT):
    argv = launch_argv(HELPERS + cmd, script="run-fdp.sh", dev=dev, size=size,
                       backing=backing, timeout=timeout, stock=False)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60,
                          stdin=subprocess.DEVNULL, env=ENV, errors="replace")
    return GuestRun(proc, argv)


def booted(cmd, dev, size, **kw):
    r = boot(cmd, dev, size, **kw)
    assert r.returncode == 0, "guest command failed\n" + r.describe()
    if r.values().get("FDP_TOOLS") == "missing":
        pytest.skip("the guest image has no nvme-cli `fdp` plugin or no fio FDP options "
                    "(FEMU_IMAGE_DIR: an image with both)")
    return r, r.sections(), r.values()


@pytest.fixture(scope="module")
def fdp_only(device_ready):
    if STOCK:
        pytest.skip("femu-specific (FEMU_TEST_STOCK=1 runs against QEMU's stock nvme)")
    out = subprocess.run([str(QEMU), "-device", "femu,help"], capture_output=True, text=True)
    if "fdp_ruh_types" not in out.stdout:
        pytest.skip(f"{QEMU}'s femu device has no FDP (fdp_ruh_types) yet")


# ---- parsing -------------------------------------------------------------------------

def first_json(text):
    """The first JSON object in text (tools may print warnings before it)."""
    m = re.search(r"^\{", text, re.M)
    assert m, f"no JSON in:\n{text[-3000:]}"
    return json.JSONDecoder().raw_decode(text[m.start():])[0]


def vlog(text):
    """The vendor statistics page: "name value" lines -> {name: int}."""
    return {k: int(v) for k, v in re.findall(r"^([a-z][a-z0-9_]*) (\d+)$", text, re.M)}


def fdp_stats(text):
    d = first_json(text)
    return {k: int(d[k]) for k in ("hbmw", "mbmw", "mbe")}


def ruh_status(text):
    """`nvme fdp status -o json` -> [(pid, ruhid, ruamw, earutr)] in the device's order."""
    d = first_json(text)
    descs = [(x["pid"], x["ruhid"], x["ruamw"], x["earutr"]) for x in d["ruhss"]]
    assert d["nruhsd"] == len(descs), d
    return descs


def ruamw(text):
    """{pid: RUAMW}"""
    return {pid: avail for pid, _, avail, _ in ruh_status(text)}


def events(hexdump):
    """The FDP events log page (od -tx1 of nvme-cli's raw buffer) -> its events, oldest
    first, each {type, flags, pid, ts, nsid, specific, rgid, ruhid}."""
    rows = []
    for line in hexdump.splitlines():      # od's rows; anything after them is not the page
        if not re.fullmatch(r"\s*([0-9a-f]{2}\s*)+", line):
            break
        rows.append(line)
    b = bytes.fromhex("".join("".join(rows).split()))
    assert len(b) >= 64, f"short FDP events log: {len(b)} bytes"
    n = int.from_bytes(b[0:4], "little")
    assert n <= 63 and len(b) >= 64 + 64 * n, f"{n} events in {len(b)} bytes"
    out = []
    for i in range(n):
        e = b[64 + 64 * i:128 + 64 * i]
        out.append(dict(type=e[0], flags=e[1], pid=int.from_bytes(e[2:4], "little"),
                        ts=int.from_bytes(e[4:12], "little"),
                        nsid=int.from_bytes(e[12:16], "little"), specific=e[16:32],
                        rgid=int.from_bytes(e[32:34], "little"), ruhid=e[34]))
    return out


def both_lists(s, name):
    """Host and controller events of one moment, whichever list the device put them in
    (test_event_lists_follow_the_lsp checks the lists themselves)."""
    return events(s[f"{name}-host"]) + events(s[f"{name}-ctrl"])


def of_type(evs, t):
    return [e for e in evs if e["type"] == t]


def fio_section(s, name):
    text = s[f"fio-{name}"]
    assert text.startswith("rc=0\n"), f"fio {name} failed:\n{text[-4000:]}"
    return first_json(text)["jobs"]


def check_jobs(jobs, want):
    """want: {jobname: (bytes written, bytes read back and verified)}; no job error."""
    assert sorted(j["jobname"] for j in jobs) == sorted(want), [j["jobname"] for j in jobs]
    for j in jobs:
        w, rd = want[j["jobname"]]
        assert j["error"] == 0, f"{j['jobname']}: error {j['error']}"
        assert j["write"]["io_bytes"] == w, f"{j['jobname']} wrote {j['write']['io_bytes']}"
        assert j["read"]["io_bytes"] == rd, f"{j['jobname']} verified {j['read']['io_bytes']}"


def check_stats_match(st, c, runs):
    """FDP statistics log (HBMW, MBMW, MBE) against the FTL's counters."""
    assert st["hbmw"] == c["host_pages_written"] * PAGE, (st, c)
    assert st["mbmw"] == c["nand_pages_written"] * PAGE, (st, c)
    assert st["mbe"] == c["fdp_rus_erased"] * runs, (st, c)


# ---- 1. fio with FDP and verify across GC, two handles --------------------------------

GC_MIB = 32                 # two halves of 16 MiB, one per placement handle
HALF_PAGES = GC_MIB // 2 * MIB // PAGE
GC_DEV = f"{GEO},op_pcent=28,fdp_ruh_types=ii:pi"

# a sequential fill, then two random overwrites (different seeds), each stage two jobs on
# disjoint halves, one per handle, every job verifying what it wrote
GC_JOBS = f"""[global]
filename=/dev/ng0n1
{FIO_FDP}{FIO_VERIFY}iodepth=8
size={GC_MIB // 2}m
"""
for _i, (_stage, _rw) in enumerate((("fill", "write"), ("over1", "randwrite"),
                                    ("over2", "randwrite"))):
    for _h in (0, 1):
        GC_JOBS += (f"[{_stage}-{_h}]\n{'stonewall' + chr(10) if _h == 0 else ''}rw={_rw}\n"
                    f"offset={_h * GC_MIB // 2}m\nfdp_pli={_h}\nrandseed={10 * _i + _h + 1}\n")

GC_CMD = f"""
cat > /tmp/gc.fio <<'JOBS'
{GC_JOBS}
JOBS
ruhs status0
runfio fill /tmp/gc.fio --section=fill-0 --section=fill-1
snap fill
runfio over /tmp/gc.fio --section=over1-0 --section=over1-1 --section=over2-0 --section=over2-1
snap over
echo @@configs@@; nvme fdp configs $D -e 1 -o json
echo @@end@@
"""


@pytest.fixture(scope="module")
def gc_run(fdp_only):
    return booted(GC_CMD, GC_DEV, GC_MIB)


def test_fio_fdp_verify_across_gc(gc_run):
    r, s, _ = gc_run
    both = (HALF_PAGES * PAGE, HALF_PAGES * PAGE)
    check_jobs(fio_section(s, "fill"), {"fill-0": both, "fill-1": both})
    check_jobs(fio_section(s, "over"), {f"over{i}-{h}": both for i in (1, 2) for h in (0, 1)})
    # fio placed through the handles of the status list: PHNDL 0 and 1 of namespace 1
    assert [(pid, ruh) for pid, ruh, _, _ in ruh_status(s["status0"])] == [(0, 0), (1, 1)]


def test_sequential_fill_per_handle(gc_run):
    r, s, _ = gc_run
    c = vlog(s["fill-vlog"])
    assert c["ruh0_host_pages_written"] == HALF_PAGES, c
    assert c["ruh1_host_pages_written"] == HALF_PAGES, c
    assert c["host_pages_written"] == 2 * HALF_PAGES, c
    # each handle filled RUs of its own in order: nothing for GC to move
    assert c["gc_pages_moved"] == 0 and c["nand_pages_written"] == 2 * HALF_PAGES, c
    check_stats_match(fdp_stats(s["fill-stats"]), c, RUNS)


def test_overwrites_run_gc_and_count_per_handle(gc_run):
    r, s, _ = gc_run
    c = vlog(s["over-vlog"])
    # each handle's host pages are exactly what its jobs wrote: 3 x 16 MiB
    assert c["ruh0_host_pages_written"] == 3 * HALF_PAGES, c
    assert c["ruh1_host_pages_written"] == 3 * HALF_PAGES, c
    assert c["host_pages_written"] == 6 * HALF_PAGES, c
    assert c["gc_runs"] > 0 and c["gc_pages_moved"] > 0 and c["fdp_rus_erased"] > 0, c
    assert c["nand_pages_written"] == c["host_pages_written"] + c["gc_pages_moved"], c
    assert c["ruh0_gc_pages_moved"] + c["ruh1_gc_pages_moved"] == c["gc_pages_moved"], c
    assert c["fdp_total_rus"] > c["fdp_free_rus"] > 0, c


def test_fdp_statistics_log_matches_ftl(gc_run):
    r, s, _ = gc_run
    conf = first_json(s["configs"])["configs"][0]
    assert conf["runs"] == RUNS, conf
    st, c = fdp_stats(s["over-stats"]), vlog(s["over-vlog"])
    check_stats_match(st, c, conf["runs"])
    assert st["mbmw"] > st["hbmw"] == 6 * HALF_PAGES * PAGE and st["mbe"] > 0, st


# ---- 2. nvme-cli `fdp` commands ---------------------------------------------------------

# Two reclaim groups (one chip each: RUs of 16 pages, RGIF 1, so PID = RG << 15 | PHNDL),
# three handles of which namespace 1 lists 0 and 1 (handle 2 unused).
CLI_MIB = 32
CLI_DEV = f"{GEO},fdp_nrg=2,fdp_ruh_types=ii:pi:ii,fdp_ns_ruhs=0.1"
CLI_RU = 16
P00, P01, P10, P11 = 0x0000, 0x0001, 0x8000, 0x8001      # (RG, PHNDL)
EVFEAT = "nvme get-feature $N1 -f 0x1e -c $((6 << 16)) -l 12 -b | od -An -v -tx1 | head -1"

CLI_CMD = f"""
echo @@id-ctrl@@; nvme id-ctrl $D -o json
echo @@id-ns@@; nvme id-ns $N1 -o json
echo @@configs@@; nvme fdp configs $D -e 1 -o json
echo @@configs-text@@; nvme fdp configs $D -e 1 -H
echo @@usage@@; nvme fdp usage $D -e 1 -o json
snap start
ruhs status0
pwrite 0 5 {P11}; echo W1_RC=$?
pwrite 64 3 {P00}; echo W2_RC=$?
ruhs status1
# PHNDL 7 does not exist: the write is placed with PHNDL 0 in RG 0, and an event says so
pwrite 128 2 7; echo W3_RC=$?
ruhs status2
hostev ev1-host; ctrlev ev1-ctrl
nvme fdp update $N1 -p {P11:#x} >/dev/null; echo UPDATE_RC=$?
ruhs status3
hostev ev2-host; ctrlev ev2-ctrl
# nvme-cli's own decoding of an RU Not Fully Written event
pwrite 192 1 {P01}; nvme fdp update $N1 -p {P01} >/dev/null; echo UPDATE2_RC=$?
echo @@ev3-json@@; nvme fdp events $D -e 1 -E -o json
echo @@ev3-json-ctrl@@; nvme fdp events $D -e 1 -o json
# RU Not Fully Written off on PHNDL 0: an update of handle 0 posts nothing, of 1 it does
echo @@evfeat0@@; {EVFEAT}
nvme fdp set-events $N1 -p 0 -t {EV_RU_NOT_FULLY_WRITTEN} >/dev/null; echo SETEV_RC=$?
echo @@evfeat1@@; {EVFEAT}
pwrite 256 4 {P00}; nvme fdp update $N1 -p {P00} >/dev/null; echo UPD_P0_RC=$?
pwrite 320 4 {P01}; nvme fdp update $N1 -p {P01} >/dev/null; echo UPD_P1_RC=$?
hostev ev4-host; ctrlev ev4-ctrl
echo @@gf-fdp@@; nvme get-feature $D -f 0x1d -c 1 2>&1; echo GF_RC=$?
echo @@gf-fdp-eg0@@; nvme get-feature $D -f 0x1d -c 0 2>&1; echo GF_EG0_RC=$?
echo @@sf-fdp@@; nvme set-feature $D -f 0x1d -V 1 --cdw12=1 2>&1; echo SF_RC=$?
echo @@sf-fdp-off@@; nvme set-feature $D -f 0x1d -V 1 --cdw12=0 2>&1; echo SF_OFF_RC=$?
snap end
# 5. the block layer: does this kernel expose write streams (Linux 6.16)?
echo KERNEL=$(uname -r)
Q=/sys/block/nvme0n1/queue
echo MAX_WRITE_STREAMS=$(cat $Q/max_write_streams 2>/dev/null || echo absent)
echo WRITE_STREAM_GRANULARITY=$(cat $Q/write_stream_granularity 2>/dev/null || echo absent)
# ext4 and RocksDB through the block device: which handles do their writes use?
mkdir -p /mnt; mkfs.ext4 -q -F -E nodiscard $N1 && mount $N1 /mnt && \\
    db_bench --benchmarks=fillrandom --num=4000 --value_size=1000 --key_size=16 \\
        --compression_type=none --db=/mnt/db --threads=1 --seed=1 >/tmp/db.out 2>&1 && \\
    umount /mnt; echo BLOCK_RC=$?
tail -5 /tmp/db.out
snap block
echo @@end@@
"""


@pytest.fixture(scope="module")
def cli_run(fdp_only):
    return booted(CLI_CMD, CLI_DEV, CLI_MIB)


def test_identify_fdp(cli_run):
    r, s, _ = cli_run
    ctrl, ns = first_json(s["id-ctrl"]), first_json(s["id-ns"])
    assert ctrl["ctratt"] & (1 << 4), f"CTRATT {ctrl['ctratt']:#x}: no Endurance Groups"
    assert ctrl["ctratt"] & (1 << 19), f"CTRATT {ctrl['ctratt']:#x}: no FDPS"
    assert ctrl["endgidmax"] == 1, ctrl["endgidmax"]
    assert ctrl["oacs"] & (1 << 5), f"OACS {ctrl['oacs']:#x}: no Directives"
    assert ns["endgid"] == 1, ns["endgid"]


def test_configs(cli_run):
    r, s, _ = cli_run
    d = first_json(s["configs"])
    assert d["n"] == 0 and len(d["configs"]) == 1, d        # NUMFDPC 0-based: one config
    c = d["configs"][0]
    # FDPA: valid, RGIF = 1 bit for 2 reclaim groups
    assert c["fdpa"] == 0x80 | 1, c
    assert (c["nrg"], c["nruh"], c["runs"], c["erutl"]) == (2, 3, CLI_RU * PAGE, 0), c
    handles = re.findall(r"^\s*\[(\d+)\]: (.+?)\s*$", s["configs-text"], re.M)
    assert handles == [("0", "Initially Isolated"), ("1", "Persistently Isolated"),
                       ("2", "Initially Isolated")], s["configs-text"]


def test_usage(cli_run):
    r, s, _ = cli_run
    d = first_json(s["usage"])
    # handles 0 and 1 are in namespace 1's list (host specified), 2 in none (unused)
    assert d["nruh"] == 3 and [u["ruha"] for u in d["ruhus"]] == [1, 1, 0], d


def test_status_tracks_placed_writes(cli_run):
    r, s, v = cli_run
    assert (v["W1_RC"], v["W2_RC"], v["W3_RC"]) == ("0", "0", "0"), r.describe()
    # one descriptor per (RG, PHNDL), RG major, each handle with a fresh RU
    assert ruh_status(s["status0"]) == [(P00, 0, CLI_RU, 0), (P01, 1, CLI_RU, 0),
                                        (P10, 0, CLI_RU, 0), (P11, 1, CLI_RU, 0)]
    # RUAMW drops by exactly the LBAs written through that (RG, handle), and only there
    assert ruamw(s["status1"]) == {P00: CLI_RU - 3, P01: CLI_RU, P10: CLI_RU, P11: CLI_RU - 5}
    # the write with PHNDL 7 went to PHNDL 0 in RG 0
    assert ruamw(s["status2"]) == {P00: CLI_RU - 5, P01: CLI_RU, P10: CLI_RU, P11: CLI_RU - 5}


def test_invalid_placement_identifier_event(cli_run):
    r, s, _ = cli_run
    evs = both_lists(s, "ev1")
    assert [e["type"] for e in evs] == [EV_INVALID_PID], evs
    e = evs[0]
    assert e["flags"] & PIV and e["pid"] == 7, e
    assert e["flags"] & NSIDV and e["nsid"] == 1, e


def test_update_posts_ru_not_fully_written(cli_run):
    r, s, v = cli_run
    assert v["UPDATE_RC"] == "0", r.describe()
    # (RG 1, PHNDL 1) has a whole RU again, the others are untouched
    assert ruamw(s["status3"]) == {P00: CLI_RU - 5, P01: CLI_RU, P10: CLI_RU, P11: CLI_RU}
    evs = both_lists(s, "ev2")
    assert [e["type"] for e in evs] == [EV_RU_NOT_FULLY_WRITTEN], evs
    e = evs[0]
    assert e["flags"] & PIV and e["pid"] == P11, e
    assert e["flags"] & NSIDV and e["nsid"] == 1, e
    if e["flags"] & LV:
        assert (e["rgid"], e["ruhid"]) == (1, 1), e
    # nvme-cli decodes such an event the same way
    assert v["UPDATE2_RC"] == "0", r.describe()
    j = first_json(s["ev3-json"])["events"] + first_json(s["ev3-json-ctrl"])["events"]
    assert [(x["type"], x["pid"], x["nsid"]) for x in j] == [(0, P01, 1)], j


def test_event_lists_follow_the_lsp(cli_run):
    """Get Log Page 23h with LSP bit 0 = 1 returns host events, 0 controller events
    (NVMe base specification 2.1, FDP Events; QEMU's nvme, libnvme's
    nvme_get_log_fdp_events and `nvme fdp events --host-events` agree)."""
    r, s, _ = cli_run
    for name in ("ev1", "ev2", "ev4"):
        host, ctrl = events(s[f"{name}-host"]), events(s[f"{name}-ctrl"])
        assert host, f"{name}: no event in the host events list (LSP bit 0 = 1); " \
                     f"controller list (LSP 0): {ctrl}"
        assert all(e["type"] < 0x80 for e in host), f"{name}: host list {host}"
        assert all(e["type"] >= 0x80 for e in ctrl), f"{name}: controller list {ctrl}"
    j = first_json(s["ev3-json"])["events"]
    assert [x["type"] for x in j] == [0], f"`nvme fdp events -E` (host events): {j}"


def test_set_events_disables_one_type(cli_run):
    r, s, v = cli_run
    # default: every supported type enabled (type, attributes bit 0)
    assert s["evfeat0"].split()[:16] == "00 01 01 01 02 01 03 01 80 01 81 01 00 00 00 00".split()
    assert v["SETEV_RC"] == "0", r.describe()
    assert s["evfeat1"].split()[:16] == "00 00 01 01 02 01 03 01 80 01 81 01 00 00 00 00".split()
    assert v["UPD_P0_RC"] == "0" and v["UPD_P1_RC"] == "0", r.describe()
    # only handle 1's partly written RU was reported
    evs = both_lists(s, "ev4")
    assert [(e["type"], e["pid"]) for e in evs] == [(EV_RU_NOT_FULLY_WRITTEN, P01)], evs


def test_fdp_feature(cli_run):
    r, s, v = cli_run
    assert v["GF_RC"] == "0" and re.search(r"Current value:\s*0x0*1\b", s["gf-fdp"]), \
        s["gf-fdp"]                                           # FDPE = 1, FDPCIDX 0
    assert v["GF_EG0_RC"] != "0" and "Invalid Field" in s["gf-fdp-eg0"], s["gf-fdp-eg0"]
    # the endurance group has namespaces: neither enabling nor disabling is allowed
    for name, rc in (("sf-fdp", "SF_RC"), ("sf-fdp-off", "SF_OFF_RC")):
        assert v[rc] != "0" and "Command Sequence Error" in s[name], s[name]


def test_statistics_count_placed_writes(cli_run):
    r, s, _ = cli_run
    assert fdp_stats(s["start-stats"]) == dict(hbmw=0, mbmw=0, mbe=0)
    c = vlog(s["end-vlog"])
    # 5 + 1 + 4 LBAs through handle 1, 3 + 2 (the invalid PID) + 4 through handle 0
    assert (c["ruh0_host_pages_written"], c["ruh1_host_pages_written"],
            c["ruh2_host_pages_written"]) == (9, 10, 0), c
    check_stats_match(fdp_stats(s["end-stats"]), c, CLI_RU * PAGE)
    assert fdp_stats(s["end-stats"])["hbmw"] == 19 * PAGE


# ---- 3. two namespaces sharing handles ------------------------------------------------

SHARED_DEV = f"{GEO},ns_types=fdp:fdp,ns_sizes_mb=32:32,fdp_ruh_types=ii:pi:ii:ii," \
             "fdp_ns_ruhs=0.1/1.2"
SHARED_FIO = "--ioengine=io_uring_cmd --cmd_type=nvme --fdp=1 --bs=4k --iodepth=8 " \
             "--rw=write --verify=crc32c --verify_fatal=1 --verify_state_save=0"
# (name, namespace, PHNDL index, offset KiB, pages): namespace 2's PHNDL 0 is RUH 1,
# namespace 1's PHNDL 1 too
SHARED_WRITES = (("n2p0", 2, 0, 0, 256), ("n2p1", 2, 1, 4096, 130),
                 ("n1p0", 1, 0, 0, 65), ("n1p1", 1, 1, 4096, 50))
SHARED_RUH = {0: 65, 1: 256 + 50, 2: 130, 3: 0}

# Linux 6.12 scans namespaces asynchronously: /dev/nvme0n1 need not be NSID 1
SHARED_CMD = """
for b in /sys/block/nvme0n*; do
    i=$(cat $b/nsid); eval BD$i=/dev/${b##*/} NG$i=/dev/ng0n${b##*/nvme0n}
done
echo NSID1=$BD1; echo NSID2=$BD2
echo @@id-ns1@@; nvme id-ns $BD1 -o json
echo @@id-ns2@@; nvme id-ns $BD2 -o json
echo @@usage@@; nvme fdp usage $D -e 1 -o json
ruhs st1-0 $BD1; ruhs st2-0 $BD2
""" + "".join(f"runfio {n} --name={n} --filename=$NG{ns} --fdp_pli={ph} "
              f"--offset={off}k --size={pages * 4}k {SHARED_FIO}\n"
              for n, ns, ph, off, pages in SHARED_WRITES) + """
ruhs st1-1 $BD1; ruhs st2-1 $BD2
snap end
echo @@end@@
"""


@pytest.fixture(scope="module")
def shared_run(fdp_only):
    return booted(SHARED_CMD, SHARED_DEV, 64)


def test_shared_handles_identify_and_usage(shared_run):
    r, s, v = shared_run
    assert v["NSID1"] and v["NSID2"] and v["NSID1"] != v["NSID2"], r.describe()
    for ns in (1, 2):
        assert first_json(s[f"id-ns{ns}"])["endgid"] == 1, f"namespace {ns}"
    assert [u["ruha"] for u in first_json(s["usage"])["ruhus"]] == [1, 1, 1, 0]
    # each namespace's PHNDL i is the i-th handle of its list
    assert [(p, h) for p, h, _, _ in ruh_status(s["st1-0"])] == [(0, 0), (1, 1)]
    assert [(p, h) for p, h, _, _ in ruh_status(s["st2-0"])] == [(0, 1), (1, 2)]


def test_shared_handles_count_writes_per_ruh(shared_run):
    r, s, _ = shared_run
    for n, _, _, _, pages in SHARED_WRITES:
        check_jobs(fio_section(s, n), {n: (pages * PAGE, pages * PAGE)})
    c = vlog(s["end-vlog"])
    assert {h: c[f"ruh{h}_host_pages_written"] for h in range(4)} == SHARED_RUH, c
    assert c["ns1_host_bytes_written"] == (65 + 50) * PAGE, c
    assert c["ns2_host_bytes_written"] == (256 + 130) * PAGE, c
    check_stats_match(fdp_stats(s["end-stats"]), c, RUNS)
    assert fdp_stats(s["end-stats"])["hbmw"] == sum(SHARED_RUH.values()) * PAGE


def test_shared_handle_has_one_open_ru(shared_run):
    r, s, _ = shared_run
    st1, st2 = ruamw(s["st1-1"]), ruamw(s["st2-1"])
    left = {h: RU_PAGES - pages % RU_PAGES for h, pages in SHARED_RUH.items()}
    # RUH 1 is namespace 1's PHNDL 1 and namespace 2's PHNDL 0: one RU, one RUAMW
    assert st1 == {0: left[0], 1: left[1]}, st1
    assert st2 == {0: left[1], 1: left[2]}, st2


# ---- 4. a restart on a --backing file -------------------------------------------------

RESTART_DEV = f"{GEO},fdp_ruh_types=ii:pi"
RESTART_MIB = 64
H0_PAGES, H1_PAGES, H1_OFF_MIB = 250, 75, 8     # neither a whole number of RUs
# the second boot's writes: through PHNDL 1 before a controller reset, then through
# both before a shutdown
RESET_PAGES, SHN_PAGES = 40, (5, 3)
RESTART_JOBS = f"""[global]
filename=/dev/ng0n1
{FIO_FDP}{FIO_VERIFY}iodepth=8
rw=write
[h0]
fdp_pli=0
offset=0
size={H0_PAGES * 4}k
[h1]
fdp_pli=1
offset={H1_OFF_MIB}m
size={H1_PAGES * 4}k
"""
MD5S = f"""
echo MD5_H0=$(dd if=$N1 bs=4k count={H0_PAGES} iflag=direct 2>/dev/null | md5sum | cut -c1-32)
echo MD5_H1=$(dd if=$N1 bs=4k skip={H1_OFF_MIB * 256} count={H1_PAGES} iflag=direct \\
    2>/dev/null | md5sum | cut -c1-32)
"""
# until the controller is back (after a reset or a rescan), under whichever name
WAIT_CTRL = """
for i in $(seq 100); do
    c=$(ls /sys/class/nvme 2>/dev/null | head -1)
    [ -n "$c" ] && [ -e /dev/${c}n1 ] && nvme fdp status /dev/${c}n1 >/dev/null 2>&1 && break
    sleep 0.2
done
D=/dev/$c; N1=/dev/${c}n1; echo CTRL=$c
"""
RESTART_FIRST = f"""
cat > /tmp/r.fio <<'JOBS'
{RESTART_JOBS}
JOBS
runfio write /tmp/r.fio
ruhs st1
{MD5S}
snap end1
hostev ev1-host; ctrlev ev1-ctrl
echo @@end@@
"""
RESTART_SECOND = f"""
hostev ev2-host; ctrlev ev2-ctrl
ruhs st2
snap start2
cat > /tmp/r.fio <<'JOBS'
{RESTART_JOBS}
JOBS
runfio verify /tmp/r.fio --verify_only
{MD5S}
snap verified
pwrite 4096 {RESET_PAGES} 1; echo W_RC=$?
ruhs st3
# a controller reset (CC.EN 1 -> 0) closes the partly written RU of handle 1
nvme reset $D; echo RESET_RC=$?
{WAIT_CTRL}
hostev ev3-host; ctrlev ev3-ctrl
ruhs st4
# a normal shutdown without a power-off: removing the device shuts the controller down
# (CC.SHN) and a rescan enables it again; the event log is the controller's, kept meanwhile
pwrite 8192 {SHN_PAGES[0]} 0 && pwrite 8448 {SHN_PAGES[1]} 1; echo W2_RC=$?
ruhs st5
BDF=$(basename $(readlink -f /sys/class/nvme/${{D#/dev/}}/device))
echo 1 > /sys/bus/pci/devices/$BDF/remove; echo 1 > /sys/bus/pci/rescan
{WAIT_CTRL}
hostev ev4-host; ctrlev ev4-ctrl
ruhs st6
snap end2
echo @@end@@
"""


@pytest.fixture(scope="module")
def restart_run(fdp_only, tmp_path_factory):
    backing = tmp_path_factory.mktemp("fdp") / "fdp.img"
    first = booted(RESTART_FIRST, RESTART_DEV, RESTART_MIB, backing=backing)
    # --size again: see test_restart_finds_the_drive_size
    second = booted(RESTART_SECOND, RESTART_DEV, RESTART_MIB, backing=backing)
    return first, second, backing


def test_restart_first_boot(restart_run):
    (r, s, v), _, _ = restart_run
    check_jobs(fio_section(s, "write"), {"h0": (H0_PAGES * PAGE,) * 2,
                                         "h1": (H1_PAGES * PAGE,) * 2})
    assert ruamw(s["st1"]) == {0: RU_PAGES - H0_PAGES % RU_PAGES,
                               1: RU_PAGES - H1_PAGES % RU_PAGES}
    c = vlog(s["end1-vlog"])
    assert (c["ruh0_host_pages_written"], c["ruh1_host_pages_written"]) == (H0_PAGES, H1_PAGES)
    assert both_lists(s, "ev1") == []


def test_restart_keeps_data(restart_run):
    (_, _, v1), (r, s, v2), _ = restart_run
    # fio regenerates what each job wrote and checks every block (it writes nothing:
    # its JSON counts the writes it skipped)
    jobs = fio_section(s, "verify")
    assert sorted(j["jobname"] for j in jobs) == ["h0", "h1"], jobs
    for j in jobs:
        assert j["error"] == 0, j["jobname"]
        want = (H0_PAGES if j["jobname"] == "h0" else H1_PAGES) * PAGE
        assert j["read"]["io_bytes"] == want, (j["jobname"], j["read"]["io_bytes"])
    assert (vlog(s["verified-vlog"])["host_pages_written"]
            == vlog(s["start2-vlog"])["host_pages_written"]), "fio --verify_only wrote"
    assert (v2["MD5_H0"], v2["MD5_H1"]) == (v1["MD5_H0"], v1["MD5_H1"]), r.describe()


def test_restart_keeps_statistics(restart_run):
    (_, s1, _), (r, s2, v), _ = restart_run
    c1, c2 = vlog(s1["end1-vlog"]), vlog(s2["start2-vlog"])
    # lifetime counters: nothing written since, so nothing changed
    assert fdp_stats(s2["start2-stats"]) == fdp_stats(s1["end1-stats"])
    for k in ("host_pages_written", "nand_pages_written", "fdp_rus_erased",
              "ruh0_host_pages_written", "ruh1_host_pages_written",
              "ruh0_valid_pages", "ruh1_valid_pages"):
        assert c2[k] == c1[k], (k, c1[k], c2[k])
    # and the second boot's writes add exactly what they wrote
    assert v["W_RC"] == "0" and v["W2_RC"] == "0", r.describe()
    extra = RESET_PAGES + sum(SHN_PAGES)
    st2, st3 = fdp_stats(s2["start2-stats"]), fdp_stats(s2["end2-stats"])
    assert st3["hbmw"] - st2["hbmw"] == extra * PAGE, (st2, st3)
    assert st3["mbmw"] - st2["mbmw"] == extra * PAGE, (st2, st3)
    assert st3["mbe"] == st2["mbe"], (st2, st3)
    c3 = vlog(s2["end2-vlog"])
    assert c3["ruh0_host_pages_written"] == H0_PAGES + SHN_PAGES[0], c3
    assert c3["ruh1_host_pages_written"] == H1_PAGES + RESET_PAGES + SHN_PAGES[1], c3
    check_stats_match(st3, c3, RUNS)


def test_poweroff_closed_partly_written_rus(restart_run):
    """The first boot's clean poweroff (CC.SHN) closed both partly written RUs: the
    second boot finds a whole RU on each handle, the closed RUs' unwritten pages counted
    as skipped, and no Controller Level Reset event (the power-up found nothing partly
    written). The 81h events the shutdown posted are in the controller's event log,
    which a power-off does not keep; test_shutdown_posts_implicitly_modified_events
    reads them from a shutdown without one."""
    (_, s1, _), (r, s2, _), _ = restart_run
    assert ruamw(s2["st2"]) == {0: RU_PAGES, 1: RU_PAGES}
    skipped = (vlog(s2["start2-vlog"])["fdp_pages_skipped"]
               - vlog(s1["end1-vlog"])["fdp_pages_skipped"])
    assert skipped == (-H0_PAGES) % RU_PAGES + (-H1_PAGES) % RU_PAGES, skipped
    evs = both_lists(s2, "ev2")
    assert not of_type(evs, EV_CTRL_RESET), evs
    # if the device keeps events across a power cycle, they are these
    implicit = of_type(evs, EV_IMPLICITLY_MODIFIED)
    assert len(implicit) == len(evs), evs
    assert sorted((e["rgid"], e["ruhid"]) for e in implicit) in ([], [(0, 0), (0, 1)]), evs


def test_controller_reset_closes_partly_written_ru(restart_run):
    _, (r, s, v), _ = restart_run
    assert ruamw(s["st3"]) == {0: RU_PAGES, 1: RU_PAGES - RESET_PAGES % RU_PAGES}
    assert v["RESET_RC"] == "0", r.describe()
    # one Controller Level Reset Modified RUHs event: handle 1 in RG 0 (handle 0's open
    # RU is empty)
    evs = both_lists(s, "ev3")
    assert [e["type"] for e in evs] == [EV_CTRL_RESET], evs
    e = evs[0]
    assert e["flags"] & LV and (e["rgid"], e["ruhid"]) == (0, 1), e
    if e["flags"] & PIV:
        assert e["pid"] == 1, e
    assert ruamw(s["st4"]) == {0: RU_PAGES, 1: RU_PAGES}


def test_shutdown_posts_implicitly_modified_events(restart_run):
    """A normal shutdown (CC.SHN) closes the partly written RUs with one Implicitly
    Modified RUH event (controller event 81h) each; the controller enabled again finds
    nothing partly written (no Controller Level Reset event)."""
    _, (r, s, v), _ = restart_run
    assert ruamw(s["st5"]) == {0: RU_PAGES - SHN_PAGES[0], 1: RU_PAGES - SHN_PAGES[1]}
    evs = both_lists(s, "ev4")
    assert sorted((e["type"], e["rgid"], e["ruhid"]) for e in evs) == [
        (EV_IMPLICITLY_MODIFIED, 0, 0), (EV_IMPLICITLY_MODIFIED, 0, 1)], evs
    assert all(e["flags"] & LV for e in evs), evs
    # they are controller events (LSP bit 0 clear)
    assert len(events(s["ev4-ctrl"])) == 2, events(s["ev4-ctrl"])
    assert ruamw(s["st6"]) == {0: RU_PAGES, 1: RU_PAGES}


def test_restart_finds_the_drive_size(restart_run, tmp_path):
    """femu-launch.sh without --size takes the capacity from an existing --backing file:
    for an fdp drive the file is --size MiB + 16 MiB + 1/512 of --size, and the launcher
    must find the same --size in it (a QEMU stand-in records the -device line)."""
    _, _, backing = restart_run
    assert backing.stat().st_size == (RESTART_MIB + 16 + -(-RESTART_MIB // 512)) * MIB
    fake, out = tmp_path / "qemu", tmp_path / "argv"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {out}\n')
    fake.chmod(0o755)
    env = dict(ENV, FEMU_QEMU=str(fake), FEMU_ACCEL="tcg")
    argv = launch_argv("true", script="run-fdp.sh", dev=RESTART_DEV, backing=backing,
                       timeout=30, stock=False)
    subprocess.run(argv, capture_output=True, text=True, timeout=90, env=env,
                   stdin=subprocess.DEVNULL)
    device = [a for a in out.read_text().splitlines() if a.startswith("femu,")]
    assert device, out.read_text()
    props = dict(p.split("=", 1) for p in device[0].split(",")[1:] if "=" in p)
    assert props["devsz_mb"] == str(RESTART_MIB), device[0]


# ---- 5. placement from the block layer ------------------------------------------------

def test_block_layer_has_no_placement(cli_run):
    """Linux tags writes with an FDP placement identifier from the block layer only since
    6.16 (io_uring write streams: queue/max_write_streams and
    queue/write_stream_granularity); before that only NVMe passthrough (fio's
    io_uring_cmd, nvme-cli) can place data, and a file system or RocksDB on the block
    device writes everything through PHNDL 0. The image's RocksDB has no FDP file system
    plugin either."""
    r, s, v = cli_run
    # ext4 + db_bench on /dev/nvme0n1: every page they wrote went to handle 0
    assert v["BLOCK_RC"] == "0", r.describe()
    before, after = vlog(s["end-vlog"]), vlog(s["block-vlog"])
    grew = {h: after[f"ruh{h}_host_pages_written"] - before[f"ruh{h}_host_pages_written"]
            for h in range(3)}
    assert grew[0] > 1000 and grew[1] == grew[2] == 0, grew
    if v["MAX_WRITE_STREAMS"] == "absent":
        assert v["WRITE_STREAM_GRANULARITY"] == "absent", v
        pytest.skip(f"kernel {v['KERNEL']} has no block-layer write streams (Linux 6.16+: "
                    "/sys/block/nvme0n1/queue/max_write_streams absent), and the image's "
                    "RocksDB no FDP plugin: file systems and RocksDB cannot place data here")
    # a newer kernel: the namespace's placement handles as write streams, RUs as their
    # granularity
    assert int(v["MAX_WRITE_STREAMS"]) == 2, v
    assert int(v["WRITE_STREAM_GRANULARITY"]) == CLI_RU * PAGE, v
