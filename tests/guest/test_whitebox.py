"""The whitebox (OCSSD 2.0) drive from guest userspace: the `ocssd` tool's geometry,
report, write/read, reset, vector commands, verify and bench against the device's chunk
rules and statuses; and the host FTL (`hostftl`, guest/hostftl) serving it as an NBD
block device: fio write + verify across GC, ext4 across a remount and an FTL restart, its
checkpoint across a QEMU restart on a backing file, and refusal after an unclean stop.

Each module fixture is one boot of femu-scripts/run-whitebox.sh --cmd, as a user would
run it; the command prints `@@name@@` sections that the tests pick apart.
"""

import json
import re
import subprocess

import pytest

from guestlib import BOOT_TIMEOUT, ENV, STOCK, GuestRun, launch_argv

SIZE_MB = 256


def boot(cmd, size=SIZE_MB, backing=None, timeout=BOOT_TIMEOUT):
    argv = launch_argv(cmd, script="run-whitebox.sh", size=size, backing=backing,
                       timeout=timeout, stock=False)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60,
                          stdin=subprocess.DEVNULL, env=ENV, errors="replace")
    r = GuestRun(proc, argv)
    assert r.returncode == 0, "guest command failed\n" + r.describe()
    return r, r.sections()


def kv(text):
    """KEY=VALUE pairs of a section (several on a line allowed)."""
    return dict(re.findall(r"\b([A-Z][A-Z0-9_]*)=(\S*)", text))


def chunks(text):
    """`ocssd report` lines -> {chunk index: {field: value}}."""
    out = {}
    for line in text.splitlines():
        if line.startswith("chunk="):
            f = dict(p.split("=", 1) for p in line.split())
            out[int(f["chunk"])] = f
    return out


@pytest.fixture(scope="module")
def whitebox_only(device_ready):
    if STOCK:
        pytest.skip("femu-specific (FEMU_TEST_STOCK=1 runs against QEMU's stock nvme)")


# --- Boot 1: the ocssd tool --------------------------------------------------------

TOOL_CMD = r"""
step() { local n=$1; shift; echo "@@$n@@"; "$@"; echo "RC=$?"; }
eval "$(ocssd geometry | grep -E '^(CLBA|WS_MIN|NUM_CHK|NUM_PU|NUM_GRP)=')"
WS=$WS_MIN
step geometry ocssd geometry
step help ocssd help
step bad-chunk ocssd write --chunk 999999 --pattern 1
step bad-state ocssd report --state sideways
# per-PU bandwidth first: it leaves its chunks free
step bench ocssd bench --chunks 4 --pus 1,2,4
step report-start ocssd report --summary

head -c $((CLBA * 4096)) /dev/urandom > /tmp/a
step write-full ocssd write --chunk 5 --file /tmp/a
step read-full ocssd read --chunk 5 --file /tmp/b
cmp -s /tmp/a /tmp/b && echo FULL_SAME=yes || echo FULL_SAME=no
step report-5 ocssd report --first 5 --count 1
step write-closed ocssd write --chunk 5 --sectors $WS --pattern 1
step write-ooo ocssd write --chunk 6 --sector $((2 * WS)) --sectors $WS --pattern 1
step write-not-wsmin ocssd write --chunk 6 --sectors $((WS - 1)) --pattern 1
head -c $((WS * 4096)) /dev/urandom > /tmp/p
step write-open ocssd write --chunk 7 --sectors $WS --file /tmp/p
step read-above-wp ocssd read --chunk 7 --sector $WS --sectors $WS --file /tmp/z
cmp -s /tmp/z <(head -c $((WS * 4096)) /dev/zero) && echo ABOVE_WP=zeroes || echo ABOVE_WP=data
step read-unwritten ocssd read --chunk 9 --sectors $WS --file /tmp/u
# long options: nvme-cli 2.13's -v is --verbose (--value is -V)
nvme set-feature /dev/nvme0 --namespace-id=1 --feature-id=5 --value=0x10000 >/dev/null
echo DULBE_RC=$?
step read-unwritten-dulbe ocssd read --chunk 9 --sectors $WS --file /tmp/u
step read-below-wp-dulbe ocssd read --chunk 7 --sectors $WS --file /tmp/q
cmp -s /tmp/p /tmp/q && echo BELOW_WP_SAME=yes || echo BELOW_WP_SAME=no
step reset-open ocssd reset --chunk 7
step reset-closed ocssd reset --grp 0 --pu 0 --chk 5
step report-after-reset ocssd report --first 5 --count 3
step rewrite ocssd write --chunk 5 --sectors $WS --file /tmp/p

# vector commands: lists of LBAs passed by guest-physical address
head -c $((2 * WS * 4096)) /dev/urandom > /tmp/v
L1=$((8 * CLBA)) L2=$((9 * CLBA))
step vwrite ocssd vwrite --lbas $L1+$WS,$L2+$WS --file /tmp/v
step vread ocssd vread --lbas $L2+$WS,$L1+$WS --file /tmp/vr
cat <(tail -c $((WS * 4096)) /tmp/v) <(head -c $((WS * 4096)) /tmp/v) | cmp -s - /tmp/vr \
    && echo VREAD_SAME=yes || echo VREAD_SAME=no
step vwrite-partial ocssd vwrite --lbas $((10 * CLBA))+$WS,$((11 * CLBA + WS))+$WS --pattern 3
step report-10 ocssd report --first 10 --count 2
step verify ocssd verify --chunk 12 --chunks 2 --seed 9
step vreset ocssd vreset --chunks 12,13
step reopen ocssd write --chunk 7 --sectors $WS --pattern 2
step vreset-open ocssd vreset --chunks 7,13
step vcopy ocssd vcopy --lbas $((5 * CLBA))+$WS --to $((15 * CLBA))+$WS
step read-copy ocssd read --chunk 15 --sectors $WS --file /tmp/c
cmp -s /tmp/p /tmp/c && echo COPY_SAME=yes || echo COPY_SAME=no
step report-end ocssd report
step report-closed ocssd report --state closed,open
"""


@pytest.fixture(scope="module")
def tool(whitebox_only):
    r, s = boot(TOOL_CMD)
    return r, s, kv(s["geometry"])


def test_geometry(tool):
    r, s, g = tool
    # run-whitebox.sh: 4 KiB sectors, 4 groups x 4 PUs, 1 MiB chunks, 16 KiB write units
    assert (g["MJR"], g["MNR"], g["LBA_SIZE"]) == ("2", "0", "4096"), s["geometry"]
    assert (g["NUM_GRP"], g["NUM_PU"], g["CLBA"], g["WS_MIN"]) == ("4", "4", "256", "4")
    assert int(g["NUM_GRP"]) * int(g["NUM_PU"]) * int(g["NUM_CHK"]) * 1 == \
        int(g["TOTAL_CHUNKS"]) == SIZE_MB
    # the LBA format's bit lengths hold the counts
    for n, bits in (("NUM_GRP", "GRP_LEN"), ("NUM_PU", "PU_LEN"), ("NUM_CHK", "CHK_LEN"),
                    ("CLBA", "LBK_LEN")):
        assert int(g[n]) <= 1 << int(g[bits]), (n, g)
    for k in ("TRDT", "TWRT", "TCRST", "WS_OPT", "MW_CUNITS", "MAXOC", "MAXOCPU", "MCCAP"):
        assert k in g, k
    assert int(g["TWRT"]) > int(g["TRDT"]) > 0


def test_usage_errors(tool):
    _, s, _ = tool
    assert s["help"].startswith("Usage: ocssd"), s["help"]
    for cmd in ("geometry", "report", "vwrite", "verify", "bench", "pagemap"):
        assert cmd in s["help"], cmd
    assert "RC=2" in s["bad-chunk"] and "--chunk must be an integer in 0..255" in s["bad-chunk"]
    assert "RC=2" in s["bad-state"] and "sideways" in s["bad-state"]


def test_bench(tool):
    _, s, _ = tool
    rows = re.findall(r"^BENCH pus=(\d+) .*write_MBps=([\d.]+) .*read_MBps=([\d.]+)",
                      s["bench"], re.M)
    assert [int(p) for p, _, _ in rows] == [1, 2, 4], s["bench"]
    assert all(float(w) > 0 and float(rd) > 0 for _, w, rd in rows), rows
    assert "RC=0" in s["bench"]
    # bench leaves nothing behind
    assert kv(s["report-start"]) == {"FREE": "256", "OPEN": "0", "CLOSED": "0",
                                     "OFFLINE": "0", "RC": "0"}, s["report-start"]


def test_write_read_whole_chunk(tool):
    r, s, _ = tool
    v = r.values()
    assert kv(s["write-full"])["STATUS"] == "0x000" and "RC=0" in s["write-full"]
    assert kv(s["read-full"])["STATUS"] == "0x000"
    assert v["FULL_SAME"] == "yes"
    c = chunks(s["report-5"])[5]
    assert (c["state"], c["wp"], c["slba"], c["cnlb"]) == ("closed", "1536", "1280", "256"), c


def test_chunk_rules(tool):
    r, s, _ = tool
    v = r.values()
    # a closed chunk and a write past the write pointer: Out of Order Write, exit 1
    for sec in ("write-closed", "write-ooo"):
        assert kv(s[sec])["STATUS"] == "0x2f2" and "RC=1" in s[sec], s[sec]
        assert "Out of Order Write" in s[sec]
    assert kv(s["write-not-wsmin"])["STATUS"] == "0x002", s["write-not-wsmin"]
    assert kv(s["write-open"])["STATUS"] == "0x000"
    # above the write pointer: zeroes, or with DULBE the unwritten-block error
    assert kv(s["read-above-wp"])["STATUS"] == "0x000" and v["ABOVE_WP"] == "zeroes"
    assert kv(s["read-unwritten"])["STATUS"] == "0x000"
    assert v["DULBE_RC"] == "0"
    assert kv(s["read-unwritten-dulbe"])["STATUS"] == "0x287", s["read-unwritten-dulbe"]
    assert kv(s["read-below-wp-dulbe"])["STATUS"] == "0x000" and v["BELOW_WP_SAME"] == "yes"


def test_reset(tool):
    _, s, _ = tool
    # an open chunk is reset as a closed one is (OCSSD 2.0)
    assert kv(s["reset-open"])["STATUS"] == "0x000", s["reset-open"]
    assert kv(s["reset-open"])["RESULT"] == "0x00000000"
    assert kv(s["reset-closed"])["STATUS"] == "0x000", s["reset-closed"]
    c = chunks(s["report-after-reset"])
    assert (c[5]["state"], c[5]["wp"], c[5]["wli"]) == ("free", "1280", "1"), c[5]
    assert (c[7]["state"], c[7]["wp"], c[7]["wli"]) == ("free", str(7 * 256), "1"), c[7]
    assert kv(s["rewrite"])["STATUS"] == "0x000"


def test_vector_write_read(tool):
    r, s, _ = tool
    assert kv(s["vwrite"])["STATUS"] == "0x000" and kv(s["vwrite"])["RESULT"] == "0x00000000"
    assert kv(s["vwrite"])["ENTRIES"] == "8"
    assert kv(s["vread"])["STATUS"] == "0x000"
    assert r.values()["VREAD_SAME"] == "yes"


def test_vector_partial_failure(tool):
    _, s, _ = tool
    # entries 0-3 at chunk 10's write pointer succeed; 4-7 start mid chunk 11 and fail
    k = kv(s["vwrite-partial"])
    assert k["STATUS"] == "0x2f2", s["vwrite-partial"]
    assert k["RESULT"] == "0x000000f0", s["vwrite-partial"]
    c = chunks(s["report-10"])
    assert (c[10]["state"], c[10]["wp"]) == ("open", str(10 * 256 + 4)), c
    assert (c[11]["state"], c[11]["wp"]) == ("free", str(11 * 256)), c


def test_verify_and_vector_reset(tool):
    r, s, _ = tool
    k = kv(s["verify"])
    assert (k["VERIFY"], k["MISMATCHES"], k["VERIFY_SECTORS"]) == ("ok", "0", "512"), s["verify"]
    assert kv(s["vreset"])["STATUS"] == "0x000" and kv(s["vreset"])["RESULT"] == "0x00000000"
    # chunk 7 is open again, 13 is free (a free reset is allowed: MCCAP bit 1): both reset
    assert kv(s["reopen"])["STATUS"] == "0x000", s["reopen"]
    k = kv(s["vreset-open"])
    assert k["STATUS"] == "0x000" and k["RESULT"] == "0x00000000", s["vreset-open"]
    end = chunks(s["report-end"])
    assert end[12]["state"] == end[13]["state"] == end[7]["state"] == "free", \
        (end[7], end[12], end[13])
    assert int(end[12]["wli"]) >= 1 and end[7]["wli"] == "2", end[7]


def test_vector_copy(tool):
    r, s, _ = tool
    assert kv(s["vcopy"])["STATUS"] == "0x000", s["vcopy"]
    assert r.values()["COPY_SAME"] == "yes"


def test_report_filter(tool):
    _, s, _ = tool
    got = chunks(s["report-closed"])
    allc = chunks(s["report-end"])
    want = {i for i, c in allc.items() if c["state"] in ("closed", "open")}
    assert set(got) == want and want, (sorted(got), sorted(want))
    assert len(allc) == 256
    summary = kv(re.search(r"^FREE=.*$", s["report-end"], re.M).group(0))
    assert int(summary["OPEN"]) + int(summary["CLOSED"]) == len(want)


# --- Boot 2: the host FTL: fio across GC, ext4, FTL restart -----------------------------

FTL_CMD = r"""
runfio() {
    local n=$1; shift
    fio --name=$n --output-format=json "$@" > /tmp/fio-$n.out 2>&1
    local rc=$?
    echo "@@fio-$n@@"; echo "rc=$rc"; cat /tmp/fio-$n.out
}
echo @@start-unformatted@@; hostftl start; echo RC=$?
echo @@start-bad-op@@; hostftl start --format --op 2; echo RC=$?
echo @@start@@; hostftl start --format --op 25; echo RC=$?
echo NBD_BYTES=$(( $(cat /sys/block/nbd0/size) * 512 ))
# 2 x the capacity of random 4 KiB writes, each pass every block once and verified;
# two runs with random seeds (the same order twice would invalidate whole lines)
F="--filename=/dev/nbd0 --direct=1 --rw=randwrite --bs=4k --ioengine=libaio --iodepth=16"
runfio pass1 $F --randrepeat=0 --verify=crc32c --verify_fatal=1
runfio pass2 $F --randrepeat=0 --verify=crc32c --verify_fatal=1
echo @@stats-fio@@; hostftl stats; echo RC=$?
mkfs.ext4 -q -F /dev/nbd0; echo MKFS_RC=$?
mkdir -p /mnt; mount /dev/nbd0 /mnt; echo MOUNT_RC=$?
head -c 20971520 /dev/urandom > /mnt/big
mkdir /mnt/dir
for i in $(seq 1 40); do head -c $((i * 3001)) /dev/urandom > /mnt/dir/f$i; done
(cd /mnt && find . -type f | sort | xargs sha256sum) > /tmp/sums
echo FILES=$(wc -l < /tmp/sums)
echo @@stop-mounted@@; hostftl stop; echo RC=$?
umount /mnt; echo UMOUNT_RC=$?
mount /dev/nbd0 /mnt; echo REMOUNT_RC=$?
(cd /mnt && sha256sum -c /tmp/sums >/dev/null); echo REMOUNT_SUMS_RC=$?
umount /mnt
echo @@stop@@; hostftl stop; echo RC=$?
echo @@nbd-after-stop@@; cat /sys/block/nbd0/size
echo @@start-again@@; hostftl start; echo RC=$?
mount /dev/nbd0 /mnt; echo RESTART_MOUNT_RC=$?
(cd /mnt && sha256sum -c /tmp/sums >/dev/null); echo RESTART_SUMS_RC=$?
echo RESTART_FILES=$(find /mnt -type f | wc -l)
umount /mnt
echo @@stop-again@@; hostftl stop; echo RC=$?
echo @@report@@; ocssd report --summary
"""


@pytest.fixture(scope="module")
def ftl(whitebox_only):
    r, s = boot(FTL_CMD, timeout=900)
    return r, s, r.values()


def test_ftl_refuses_unformatted_and_small_op(ftl):
    _, s, _ = ftl
    assert "RC=1" in s["start-unformatted"], s["start-unformatted"]
    assert "never formatted" in s["start-unformatted"]
    assert "RC=1" in s["start-bad-op"] and "--op" in s["start-bad-op"], s["start-bad-op"]
    assert "RC=0" in s["start"] and "/dev/nbd0 ready" in s["start"], s["start"]


def test_ftl_fio_verify_across_gc(ftl):
    r, s, v = ftl
    size = int(v["NBD_BYTES"])
    for name in ("pass1", "pass2"):
        text = s[f"fio-{name}"]
        assert text.startswith("rc=0\n"), text[-3000:]
        job = json.JSONDecoder().raw_decode(text[text.index("{"):])[0]["jobs"][0]
        assert job["error"] == 0, text[-3000:]
        assert job["write"]["io_bytes"] == size, (name, job["write"]["io_bytes"])
        assert job["read"]["io_bytes"] == size, (name, job["read"]["io_bytes"])
    st = kv(s["stats-fio"])
    # GC collected lines and moved data: device writes exceed host writes
    assert int(st["HOST_WRITE_SECTORS"]) >= 2 * size // 4096, st
    assert int(st["GC_LINES"]) > 0 and int(st["GC_WRITE_SECTORS"]) > 0, st
    assert int(st["ERASES"]) > 0 and float(st["WAF"]) > 1.0, st
    assert int(st["DEV_WRITE_SECTORS"]) == int(st["HOST_WRITE_SECTORS"]) + \
        int(st["GC_WRITE_SECTORS"]) + int(st["PAD_SECTORS"]), st


def test_ftl_ext4_remount_and_restart(ftl):
    r, s, v = ftl
    why = r.describe()
    for k in ("MKFS_RC", "MOUNT_RC", "UMOUNT_RC", "REMOUNT_RC", "REMOUNT_SUMS_RC",
              "RESTART_MOUNT_RC", "RESTART_SUMS_RC"):
        assert v.get(k) == "0", f"{k}={v.get(k)}\n{why}"
    assert v["FILES"] == v["RESTART_FILES"] == "41", why
    # stop refuses while mounted, then stops cleanly with a checkpoint
    assert "RC=1" in s["stop-mounted"] and "mounted" in s["stop-mounted"], s["stop-mounted"]
    for sec in ("stop", "stop-again"):
        k = kv(s[sec])
        assert k["CLEAN_STOP"] == "1" and "RC=0" in s[sec], s[sec]
    assert int(kv(s["stop-again"])["CHECKPOINT_SEQ"]) == int(kv(s["stop"])["CHECKPOINT_SEQ"]) + 1
    assert s["nbd-after-stop"].strip() == "0", "nbd0 still has a size after stop"
    assert "RC=0" in s["start-again"], s["start-again"]


# --- Boots 3-5: the checkpoint across QEMU restarts (backing file), unclean stop -----

PERSIST_1 = r"""
hostftl start --format; echo START_RC=$?
head -c 16777216 /dev/urandom > /tmp/d
dd if=/tmp/d of=/dev/nbd0 bs=1M seek=32 oflag=direct 2>/dev/null; echo DD_RC=$?
echo SUM1=$(sha256sum < /tmp/d | cut -c1-64)
# SIGTERM stops the server as cleanly as `hostftl stop`
pid=$(cat /run/hostftl/nbd0.pid); kill -TERM $pid
for i in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
grep -q '^CLEAN_STOP=1$' /run/hostftl/nbd0.stats; echo STOP_RC=$?
"""

# reads the data back, then writes more and powers off without stopping the FTL
PERSIST_2 = r"""
hostftl start; echo START_RC=$?
echo SUM2=$(dd if=/dev/nbd0 bs=1M skip=32 count=16 iflag=direct 2>/dev/null | sha256sum | cut -c1-64)
dd if=/dev/urandom of=/dev/nbd0 bs=1M seek=32 count=16 oflag=direct 2>/dev/null; echo DD_RC=$?
sync
"""

PERSIST_3 = r"""
echo @@start@@; hostftl start; echo RC=$?
echo @@start-force@@; hostftl start --force; echo RC=$?
echo SUM3=$(dd if=/dev/nbd0 bs=1M skip=32 count=16 iflag=direct 2>/dev/null | sha256sum | cut -c1-64)
hostftl stop > /dev/null; echo STOP_RC=$?
"""


def test_ftl_checkpoint_across_qemu_restarts(whitebox_only, tmp_path):
    backing = tmp_path / "ocssd.img"
    r1, _ = boot(PERSIST_1, backing=backing)
    v1 = r1.values()
    assert (v1["START_RC"], v1["DD_RC"], v1["STOP_RC"]) == ("0", "0", "0"), r1.describe()
    r2, _ = boot(PERSIST_2, size=None, backing=backing)
    v2 = r2.values()
    assert v2["START_RC"] == "0" and v2["DD_RC"] == "0", r2.describe()
    assert v2["SUM2"] == v1["SUM1"], "data differ after a clean stop and a QEMU restart"
    # boot 2 ended without `hostftl stop`: the next start refuses, --force uses the
    # last checkpoint, whose data are those of boot 1
    r3, s3 = boot(PERSIST_3, size=None, backing=backing)
    v3 = r3.values()
    assert "RC=1" in s3["start"] and "not stopped cleanly" in s3["start"], s3["start"]
    assert "RC=0" in s3["start-force"], s3["start-force"]
    assert v3["SUM3"] == v1["SUM1"], r3.describe()
    assert v3["STOP_RC"] == "0", r3.describe()
