"""The zoned drive (femu_mode=3, run-zns.sh) as Linux and its tools see it: the kernel
attaches it as host-managed with the configured geometry and limits, blkzone and
nvme-cli zone commands move zones through the ZNS states, fio's zoned mode writes and
verifies, zonefs and zoned btrfs work on it, zone state survives a restart on a file
backend. Also a mixed blackbox + zns device. (Refused zoned properties:
tests/qtest/test_properties.py.)

Boots are expensive under TCG, so each module fixture is one boot running many checks,
printing `@@name@@` sections that the tests below pick apart.
"""

import json
import re
import subprocess

import pytest

from guestlib import BOOT_TIMEOUT, ENV, STOCK, GuestRun, launch_argv

MIB = 1 << 20
ZONE_MB = 4
ZONE_SECTORS = ZONE_MB * MIB // 512           # 8192: zones in 512-byte sectors (= LBAs)
LIMITS = "zns_max_open=8,zns_max_active=12"
# zone capacity 3 MiB of 4, ZASL 4 KiB x 2^5 = 128 KiB, 64-byte descriptor extensions
LIMITED_DEV = f"zns_zone_size_mb={ZONE_MB},{LIMITS},zns_zone_cap=3M,zns_zasl=5,zns_zd_ext_size=64"
DEFAULT_DEV = f"zns_zone_size_mb={ZONE_MB}"


def boot(cmd, dev, script="run-zns.sh", size=1024, backing=None, timeout=BOOT_TIMEOUT):
    argv = launch_argv(cmd, script=script, dev=dev, size=size, backing=backing,
                       timeout=timeout, stock=False)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60,
                          stdin=subprocess.DEVNULL, env=ENV, errors="replace")
    return GuestRun(proc, argv)


def booted(cmd, dev, **kw):
    r = boot(cmd, dev, **kw)
    assert r.returncode == 0, "guest command failed\n" + r.describe()
    return r, r.sections(), r.values()


@pytest.fixture(scope="module")
def zns_only(device_ready):
    if STOCK:
        pytest.skip("femu-specific (FEMU_TEST_STOCK=1 runs against QEMU's stock nvme)")


BLKZONE = re.compile(r"start: (0x[0-9a-f]+), len (0x[0-9a-f]+), cap (0x[0-9a-f]+), "
                     r"wptr (0x[0-9a-f]+) .*zcond:\s*\d+\((\w+)\)")


def blkzones(text, zone_sectors=ZONE_SECTORS):
    """`blkzone report` -> {zone index: {len, cap, wp (relative), cond}} (sectors)."""
    out = {}
    for m in BLKZONE.finditer(text):
        start, ln, cap, wp = (int(x, 16) for x in m.groups()[:4])
        out[start // zone_sectors] = dict(len=ln, cap=cap, wp=wp, cond=m.group(5))
    return out


def conds(text, first, last):
    z = blkzones(text)
    return [z[i]["cond"] if i in z else None for i in range(first, last + 1)]


def first_json(text):
    """The first JSON object in text (tools may print warnings before it)."""
    m = re.search(r"^\{", text, re.M)
    assert m, f"no JSON in:\n{text}"
    return json.JSONDecoder().raw_decode(text[m.start():])[0]


def nvme_zones(text):
    """`nvme zns report-zones -o json` -> {zone index: zone}."""
    return {z["slba"] // ZONE_SECTORS: z for z in first_json(text)["zone_list"]}


# Shell helpers for every guest command: a blkzone report of COUNT zones from zone
# FIRST, an nvme-cli JSON report, and a fio run with its exit status and JSON output
# in a section of its own.
HELPERS = r"""
D=/dev/nvme0n1; Z=8192; Q=/sys/block/nvme0n1/queue
rep() { blkzone report -o $(($1 * Z)) -c $2 $D; }
nrep() { nvme zns report-zones $D -o json "$@"; }
runfio() {
    local n=$1; shift
    fio --name=$n --output-format=json "$@" > /tmp/fio-$n.out 2>&1
    local rc=$?
    echo "@@fio-$n@@"; echo "rc=$rc"; cat /tmp/fio-$n.out
}
sysfs() { for f in zoned nr_zones chunk_sectors max_open_zones max_active_zones \
    zone_append_max_bytes; do echo "$f $(cat $Q/$f)"; done; }
"""


def sysfs(text):
    return dict(line.split(" ", 1) for line in text.strip().splitlines())


def check_fio(s, name, write_bytes, read_bytes=None):
    """A fio section: exit 0, no job error, the bytes written (None: not checked) and
    read back verified (by default all that was written)."""
    text = s[f"fio-{name}"]
    assert text.startswith("rc=0\n"), f"fio {name} failed:\n{text[-3000:]}"
    job = first_json(text)["jobs"][0]
    assert job["error"] == 0, f"fio {name}: error {job['error']}\n{text[-3000:]}"
    w, r = job["write"]["io_bytes"], job["read"]["io_bytes"]
    if write_bytes is not None:
        assert w == write_bytes, f"fio {name}: wrote {w}, expected {write_bytes}"
    want = write_bytes if read_bytes is None else read_bytes
    assert r == want, f"fio {name}: verified {r}, expected {want}"
    return job


ZFIO = "--filename=$D --direct=1 --zonemode=zbd --verify=crc32c --verify_fatal=1"

# --- Boot 1: limits, capacity < size, ZASL, descriptor extensions ---------------------

LIMITED_CMD = HELPERS + r"""
echo @@sysfs@@; sysfs
echo @@list@@; nvme list
echo @@id-ns@@; nvme zns id-ns $D -o json
echo @@id-ctrl@@; nvme zns id-ctrl /dev/nvme0 -o json
echo @@report-start@@; rep 0 256

# blkzone: each step followed by a report of the zones it touched
blkzone open -o $((1 * Z)) -c 2 $D; echo BZ_OPEN_RC=$?
echo @@bz-open@@; rep 0 4
dd if=/dev/urandom of=$D bs=4k count=4 seek=$((3 * 1024)) oflag=direct 2>/dev/null
echo BZ_WRITE_RC=$?
echo @@bz-write@@; rep 3 1
blkzone close -o $((1 * Z)) -c 3 $D; echo BZ_CLOSE_RC=$?
echo @@bz-close@@; rep 1 3
# writing the whole capacity fills zone 4
dd if=/dev/urandom of=$D bs=1M count=3 seek=$((4 * 4)) oflag=direct 2>/dev/null
echo BZ_FILL_RC=$?
# a write that is not at the write pointer must fail
dd if=/dev/urandom of=$D bs=4k count=1 seek=$((5 * 1024 + 256)) oflag=direct 2>/dev/null
echo BZ_MIDZONE_RC=$?
echo @@bz-fill@@; rep 4 2
blkzone finish -o $((3 * Z)) -c 1 $D; echo BZ_FINISH_RC=$?
blkzone finish -o $((6 * Z)) -c 1 $D; echo BZ_FINISH_EMPTY_RC=$?
echo @@bz-finish@@; rep 3 4
blkzone reset -o $((1 * Z)) -c 6 $D; echo BZ_RESET_RC=$?
echo @@bz-reset@@; rep 0 8
# zone 4 held 3 MiB of random data; DLFEAT says what reads return after a reset
echo DLFEAT=$(nvme id-ns $D -o json | grep -o '"dlfeat":[0-9]*' | cut -d: -f2)
dd if=$D bs=1M count=4 skip=$((4 * 4)) iflag=direct 2>/dev/null | cmp -s - <(head -c $((4 << 20)) /dev/zero) \
    && echo RESET_READS=zeroes || echo RESET_READS=data

# zone append: three 8 KiB appends to zone 10, LBAs from the completions
for i in 1 2 3; do head -c 8192 /dev/urandom > /tmp/ap$i; done
echo @@append@@
for i in 1 2 3; do nvme zns zone-append $D -s $((10 * Z)) -z 8192 -d /tmp/ap$i; done
echo @@append-report@@; nrep -s $((10 * Z)) -d 1
dd if=$D bs=8k count=3 skip=$((10 * Z / 16)) iflag=direct 2>/dev/null \
    | cmp - <(cat /tmp/ap1 /tmp/ap2 /tmp/ap3) && echo APPEND_READBACK=same
head -c 262144 /dev/urandom > /tmp/big
echo @@append-over-zasl@@
nvme zns zone-append $D -s $((11 * Z)) -z 262144 -d /tmp/big; echo "rc=$?"
echo @@append-at-zasl@@
nvme zns zone-append $D -s $((11 * Z)) -z 131072 -d /tmp/big; echo "rc=$?"

# nvme-cli single-zone management on zone 20
for op in open close finish reset; do
    nvme zns $op-zone $D -s $((20 * Z)); echo "NVME_${op^^}_RC=$?"
    echo "@@nvme-$op@@"; nrep -s $((20 * Z)) -d 1
done

# Select All: zones 30, 31 explicitly open, 32 implicitly, 10 and 11 hold appends
nvme zns open-zone $D -s $((30 * Z)) && nvme zns open-zone $D -s $((31 * Z))
dd if=/dev/urandom of=$D bs=4k count=1 seek=$((32 * 1024)) oflag=direct 2>/dev/null
echo @@all-imp@@; nrep -S 2
echo @@all-exp@@; nrep -S 3
nvme zns close-zone $D -a; echo ALL_CLOSE_RC=$?
echo @@all-close@@; nrep -S 4
nvme zns open-zone $D -a; echo ALL_OPEN_RC=$?
echo @@all-open@@; nrep -S 3
nvme zns finish-zone $D -a; echo ALL_FINISH_RC=$?
echo @@all-finish@@; nrep -S 5
nvme zns reset-zone $D -a; echo ALL_RESET_RC=$?
echo @@all-reset@@; nrep -S 1

# open and active limits (8 and 12)
echo @@limit-open@@
for i in $(seq 40 48); do nvme zns open-zone $D -s $((i * Z)) >/dev/null 2>/tmp/err \
    && echo "open $i ok" || echo "open $i failed: $(cat /tmp/err)"; done
nvme zns close-zone $D -a >/dev/null
echo @@limit-active@@
for i in $(seq 49 53); do nvme zns open-zone $D -s $((i * Z)) >/dev/null 2>/tmp/err \
    && echo "open $i ok" || echo "open $i failed: $(cat /tmp/err)"; done
nvme zns reset-zone $D -a >/dev/null
# implicit opens past the open limit close the least recently opened zone
for i in $(seq 60 68); do
    dd if=/dev/urandom of=$D bs=4k count=1 seek=$((i * 1024)) oflag=direct 2>/dev/null \
        || echo "IMPLICIT_WRITE_FAILED=$i"
done
echo @@limit-implicit@@; rep 60 9
nvme zns reset-zone $D -a >/dev/null

# zone descriptor extension on zone 70
head -c 64 /dev/urandom > /tmp/ext
nvme zns set-zone-desc $D -s $((70 * Z)) -d /tmp/ext > /dev/null; echo ZDE_RC=$?
echo @@zde-data@@; od -An -tx1 -v /tmp/ext
echo @@zde-report@@; nvme zns report-zones $D -s $((70 * Z)) -d 1 -e
# through the block layer: Linux 6.10+ keeps the write pointer of each partly written
# zone (zone write plugging) and does not see passthrough zone commands, so after
# `nvme zns reset-zone` it would still expect zone 32's next write at its sector 8
blkzone reset $D

# fio with capacity < size, at the device's open limit
runfio seq-cap $ZFIO --rw=write --ioengine=libaio --bs=128k --iodepth=8 \
    --max_open_zones=8 --size=64M
runfio rand-cap $ZFIO --rw=randwrite --ioengine=io_uring --bs=4k --iodepth=8 \
    --max_open_zones=8 --offset=128M --size=64M --io_size=8M
echo @@rand-cap-report@@; rep 32 16
echo @@end@@
""".replace("$ZFIO", ZFIO)


@pytest.fixture(scope="module")
def limited(zns_only):
    return booted(LIMITED_CMD, LIMITED_DEV)


def test_attach_limited(limited):
    r, s, _ = limited
    q = sysfs(s["sysfs"])
    assert q == {"zoned": "host-managed", "nr_zones": "256", "chunk_sectors": "8192",
                 "max_open_zones": "8", "max_active_zones": "12",
                 "zone_append_max_bytes": str(128 << 10)}, r.describe()
    assert "FEMU ZNS-SSD Controller" in s["list"], s["list"]
    ns = first_json(s["id-ns"])
    # MOR/MAR are 0's based
    assert (ns["mor"], ns["mar"]) == (7, 11), ns
    assert ns["zoc"] == 0 and ns["ozcs"] == 0, ns
    # LBA format 0 (512 B, in use): 8192-LBA zones, one 64-byte descriptor extension
    assert ns["lbafe"][0] == {"zsze": ZONE_SECTORS, "zdes": 1}, ns
    assert first_json(s["id-ctrl"])["zasl"] == 5, s["id-ctrl"]


def test_zone_capacity_in_report(limited):
    r, s, _ = limited
    z = blkzones(s["report-start"])
    assert sorted(z) == list(range(256)), s["report-start"][:2000]
    for i, zone in z.items():
        assert zone == dict(len=0x2000, cap=0x1800, wp=0, cond="em"), (i, zone)


def test_blkzone_open_close_finish_reset(limited):
    r, s, v = limited
    why = r.describe()
    for k in ("BZ_OPEN_RC", "BZ_WRITE_RC", "BZ_CLOSE_RC", "BZ_FILL_RC", "BZ_FINISH_RC",
              "BZ_FINISH_EMPTY_RC", "BZ_RESET_RC"):
        assert v.get(k) == "0", f"{k}={v.get(k)}\n{why}"
    assert conds(s["bz-open"], 0, 3) == ["em", "oe", "oe", "em"], s["bz-open"]
    z3 = blkzones(s["bz-write"])[3]
    assert (z3["cond"], z3["wp"]) == ("oi", 32), z3
    z = blkzones(s["bz-close"])
    assert [z[i]["cond"] for i in (1, 2, 3)] == ["cl"] * 3, s["bz-close"]
    assert [z[i]["wp"] for i in (1, 2, 3)] == [0, 0, 32], s["bz-close"]
    # writing up to the capacity makes the zone full; Linux shows a full zone's wp at its end
    z = blkzones(s["bz-fill"])
    assert (z[4]["cond"], z[4]["wp"]) == ("fu", 0x2000), s["bz-fill"]
    assert v.get("BZ_MIDZONE_RC") != "0", "a write past the write pointer succeeded"
    assert (z[5]["cond"], z[5]["wp"]) == ("em", 0), s["bz-fill"]
    z = blkzones(s["bz-finish"])
    assert [z[i]["cond"] for i in (3, 4, 5, 6)] == ["fu", "fu", "em", "fu"], s["bz-finish"]
    z = blkzones(s["bz-reset"])
    assert all(z[i]["cond"] == "em" and z[i]["wp"] == 0 for i in range(8)), s["bz-reset"]
    # DLFEAT bits 2:0 = 001b: deallocated (here: reset) blocks read as zeroes
    assert int(v["DLFEAT"]) & 7 == 1, v["DLFEAT"]
    assert v.get("RESET_READS") == "zeroes", "a reset zone still returns its old data"


def test_zone_append(limited):
    r, s, v = limited
    lbas = [int(x, 16) for x in re.findall(r"appended data to LBA (\w+)", s["append"])]
    base = 10 * ZONE_SECTORS
    assert lbas == [base, base + 16, base + 32], s["append"]
    z = nvme_zones(s["append-report"])[10]
    assert (z["wp"], z["state"]) == (base + 48, "IMP_OPENED"), z
    assert v.get("APPEND_READBACK") == "same", "appended data not read back\n" + r.describe()
    # over ZASL (128 KiB) is Invalid Field in Command; exactly ZASL works
    assert "rc=0" not in s["append-over-zasl"], s["append-over-zasl"]
    assert "Invalid Field in Command" in s["append-over-zasl"], s["append-over-zasl"]
    at = s["append-at-zasl"]
    assert "rc=0" in at and f"LBA {11 * ZONE_SECTORS:x}" in at, at


def test_nvme_zone_management(limited):
    r, s, v = limited
    for op, state in (("open", "EXP_OPENED"), ("close", "CLOSED"), ("finish", "FULL"),
                      ("reset", "EMPTY")):
        assert v.get(f"NVME_{op.upper()}_RC") == "0", r.describe()
        z = nvme_zones(s[f"nvme-{op}"])[20]
        assert z["state"] == state, (op, z)
        if state in ("EXP_OPENED", "CLOSED", "EMPTY"):
            assert z["wp"] == 20 * ZONE_SECTORS, (op, z)


def test_nvme_select_all(limited):
    r, s, v = limited
    for k in ("ALL_CLOSE_RC", "ALL_OPEN_RC", "ALL_FINISH_RC", "ALL_RESET_RC"):
        assert v.get(k) == "0", f"{k}={v.get(k)}\n{r.describe()}"
    imp, exp = sorted(nvme_zones(s["all-imp"])), sorted(nvme_zones(s["all-exp"]))
    assert (imp, exp) == ([10, 11, 32], [30, 31]), (s["all-imp"], s["all-exp"])
    # Close All closes the open zones, Open All opens the closed ones, Finish All fills
    # them, Reset All empties everything
    assert sorted(nvme_zones(s["all-close"])) == [10, 11, 30, 31, 32], s["all-close"]
    assert sorted(nvme_zones(s["all-open"])) == [10, 11, 30, 31, 32], s["all-open"]
    assert sorted(nvme_zones(s["all-finish"])) == [10, 11, 30, 31, 32], s["all-finish"]
    assert len(nvme_zones(s["all-reset"])) == 256, s["all-reset"][:500]


def test_open_and_active_limits(limited):
    r, s, _ = limited
    lines = s["limit-open"].strip().splitlines()
    assert lines[:8] == [f"open {i} ok" for i in range(40, 48)], lines
    assert lines[8].startswith("open 48 failed") and "Too Many Open Zones" in lines[8], lines
    # 8 closed + 4 open = 12 active; the 13th is refused
    lines = s["limit-active"].strip().splitlines()
    assert lines[:4] == [f"open {i} ok" for i in range(49, 53)], lines
    assert lines[4].startswith("open 53 failed") and "Too Many Active Zones" in lines[4], lines


def test_implicit_close_at_open_limit(limited):
    r, s, v = limited
    assert "IMPLICIT_WRITE_FAILED" not in v, r.describe()
    assert conds(s["limit-implicit"], 60, 68) == ["cl"] + ["oi"] * 8, s["limit-implicit"]


def test_zone_descriptor_extension(limited):
    r, s, v = limited
    assert v.get("ZDE_RC") == "0", r.describe()
    rep = s["zde-report"]
    # Set Zone Descriptor Extension moves an empty zone to Closed with ZDEV set
    assert re.search(r"State: 0x40 .*Attrs: 0x80", rep), rep
    dump = "".join(re.findall(r"^[0-9a-f]{4}: ((?:[0-9a-f]{2} ){16})", rep, re.M))
    assert dump.split() == s["zde-data"].split(), rep


def test_fio_zone_capacity_below_size(limited):
    r, s, _ = limited
    # 64 MiB = 16 zones of which 3 MiB each are writable
    check_fio(s, "seq-cap", write_bytes=16 * 3 * MIB)
    check_fio(s, "rand-cap", write_bytes=8 * MIB)
    z = blkzones(s["rand-cap-report"])
    assert all(zone["wp"] <= zone["cap"] or zone["cond"] == "fu" for zone in z.values()), z
    opened = [i for i, zone in z.items() if zone["cond"] == "oi"]
    # several zones written at once, never more than the open limit
    assert 2 <= len(opened) <= 8, s["rand-cap-report"]


# --- Boot 2: no limits, default ZASL; fio zoned write + verify ------------------------

DEFAULT_CMD = HELPERS + r"""
echo @@sysfs@@; sysfs
echo @@id-ctrl@@; nvme zns id-ctrl /dev/nvme0 -o json
echo @@id-ns@@; nvme zns id-ns $D -o json
runfio seq-libaio-128k $ZFIO --rw=write --ioengine=libaio --bs=128k --iodepth=8 \
    --max_open_zones=4 --size=64M
runfio seq-uring-4k $ZFIO --rw=write --ioengine=io_uring --bs=4k --iodepth=16 \
    --max_open_zones=4 --offset=64M --size=16M
runfio rand-uring-4k $ZFIO --rw=randwrite --ioengine=io_uring --bs=4k --iodepth=8 \
    --max_open_zones=6 --offset=128M --size=64M --io_size=16M
# mq-deadline, what distributions chose for zoned drives before Linux 6.10 (zone write
# locking), must still work
echo mq-deadline > $Q/scheduler; echo @@scheduler@@; cat $Q/scheduler
runfio rand-libaio-128k $ZFIO --rw=randwrite --ioengine=libaio --bs=128k --iodepth=4 \
    --max_open_zones=6 --offset=256M --size=128M --io_size=32M
echo @@end@@
""".replace("$ZFIO", ZFIO)


@pytest.fixture(scope="module")
def unlimited(zns_only):
    return booted(DEFAULT_CMD, DEFAULT_DEV)


def test_attach_unlimited(unlimited):
    r, s, _ = unlimited
    q = sysfs(s["sysfs"])
    # no limits: max_active_zones reads 0, and max_open_zones the kernel's own pool of
    # zone write plugs (Linux 6.10+: 128 when the drive has more zones than that, else 0);
    # ZASL defaults to MDTS (4 KiB x 2^7)
    assert q == {"zoned": "host-managed", "nr_zones": "256", "chunk_sectors": "8192",
                 "max_open_zones": "128", "max_active_zones": "0",
                 "zone_append_max_bytes": str(512 << 10)}, r.describe()
    ns = first_json(s["id-ns"])
    # FFFFFFFFh is "no limit" (nvme-cli prints it as -1)
    assert (ns["mor"] & 0xFFFFFFFF, ns["mar"] & 0xFFFFFFFF) == (0xFFFFFFFF,) * 2, ns
    assert ns["lbafe"][0] == {"zsze": ZONE_SECTORS, "zdes": 0}, ns
    # 0 means "same as MDTS", and the device may as well say 7
    assert first_json(s["id-ctrl"])["zasl"] in (0, 7), s["id-ctrl"]


@pytest.mark.parametrize("name,size", [("seq-libaio-128k", 64 * MIB), ("seq-uring-4k", 16 * MIB),
                                       ("rand-uring-4k", 16 * MIB),
                                       ("rand-libaio-128k", 32 * MIB)])
def test_fio_zoned_verify(unlimited, name, size):
    r, s, _ = unlimited
    if name == "rand-libaio-128k":
        assert "[mq-deadline]" in s["scheduler"], s["scheduler"]
    check_fio(s, name, write_bytes=size)


# --- Boot 3: zonefs and zoned btrfs --------------------------------------------------

# (zonefs file, fio options, bytes): asynchronous direct writes (Linux 6.1 failed
# synchronous ones, see images/README.md; 6.12 takes them too)
ZONEFS_FILES = [
    ("0", "--ioengine=io_uring --bs=1M", 2 * MIB),
    ("1", "--ioengine=libaio --bs=64k --iodepth=4", 3 * MIB),
    ("2", "--ioengine=io_uring --bs=512k --iodepth=2", 4 * MIB),   # the whole zone
]
ZONEFS_FIO = "--direct=1 --rw=write --verify=crc32c --verify_fatal=1"


def zonefs_cmd():
    writes = "".join(
        f"runfio zw{f} --filename=/mnt/seq/{f} --file_append=1 {ZONEFS_FIO} {o} "
        f"--size={n} --do_verify=0\n" for f, o, n in ZONEFS_FILES)
    # the verify pass reads from offset 0: no --file_append
    verifies = "".join(
        f"runfio zv{f} --filename=/mnt/seq/{f} {ZONEFS_FIO} {o} --size={n} --verify_only=1\n"
        for f, o, n in ZONEFS_FILES)
    return HELPERS + f"""
mkdir -p /mnt
mkzonefs -f $D > /tmp/mkzonefs.out 2>&1; echo MKZONEFS_RC=$?
mount -t zonefs $D /mnt; echo ZMOUNT_RC=$?
echo ZONEFS_FILES=$(ls /mnt/seq | wc -l)
{writes}
echo @@zsize-before@@; stat -c '%n %s' /mnt/seq/0 /mnt/seq/1 /mnt/seq/2 /mnt/seq/3
umount /mnt; echo ZUMOUNT_RC=$?
echo @@zreport@@; rep 0 5
mount -t zonefs $D /mnt; echo ZMOUNT2_RC=$?
echo @@zsize-after@@; stat -c '%n %s' /mnt/seq/0 /mnt/seq/1 /mnt/seq/2 /mnt/seq/3
{verifies}
umount /mnt
echo ZONEFS_RO=$(dmesg | grep -c 'zonefs.*read-only')

mkfs.btrfs -f -O zoned -d single -m single $D > /tmp/mkfs.out 2>&1; echo MKBTRFS_RC=$?
grep -i 'zoned device' /tmp/mkfs.out
mount -t btrfs $D /mnt; echo BMOUNT_RC=$?
dd if=/dev/urandom of=/tmp/rand bs=1M count=64 2>/dev/null
echo SHA_SRC=$(sha256sum < /tmp/rand)
cp /tmp/rand /mnt/rand; echo CP_RC=$?
sync; echo 3 > /proc/sys/vm/drop_caches
echo SHA_FS1=$(sha256sum < /mnt/rand)
umount /mnt; echo BUMOUNT_RC=$?
mount -t btrfs $D /mnt; echo BMOUNT2_RC=$?
echo SHA_FS2=$(sha256sum < /mnt/rand)
echo BSIZE=$(stat -c %s /mnt/rand)
umount /mnt
echo BZONES_WRITTEN=$(blkzone report $D | grep -vc 'zcond: 1(em)')
echo @@btrfs-dmesg@@; dmesg | grep -i btrfs
echo @@end@@
"""


@pytest.fixture(scope="module")
def filesystems(zns_only):
    return booted(zonefs_cmd(), DEFAULT_DEV)


def test_zonefs(filesystems):
    r, s, v = filesystems
    why = r.describe()
    for k in ("MKZONEFS_RC", "ZMOUNT_RC", "ZUMOUNT_RC", "ZMOUNT2_RC"):
        assert v.get(k) == "0", f"{k}={v.get(k)}\n{why}"
    # zone 0 holds the superblock; each other zone is a file
    assert v["ZONEFS_FILES"] == "255", why
    for f, _, n in ZONEFS_FILES:
        check_fio(s, f"zw{f}", n, 0)
        # verify_only counts the skipped write phase as written: only reads matter
        check_fio(s, f"zv{f}", None, n)
    want = {f"/mnt/seq/{f}": n for f, _, n in ZONEFS_FILES} | {"/mnt/seq/3": 0}
    for sec in ("zsize-before", "zsize-after"):
        got = {k: int(x) for k, x in re.findall(r"^(/mnt/\S+) (\d+)$", s[sec], re.M)}
        assert got == want, (sec, got)
    # file sizes are the zones' write pointers (file N is zone N + 1)
    z = blkzones(s["zreport"])
    for f, _, n in ZONEFS_FILES:
        zone = z[int(f) + 1]
        assert zone["wp"] * 512 == n, (f, zone)
        assert zone["cond"] == ("fu" if n == ZONE_MB * MIB else "oi"), (f, zone)
    assert z[4]["cond"] == "em", z[4]
    assert v["ZONEFS_RO"] == "0", "zonefs went read-only\n" + why


def test_btrfs_zoned(filesystems):
    r, s, v = filesystems
    why = r.describe()
    for k in ("MKBTRFS_RC", "BMOUNT_RC", "CP_RC", "BUMOUNT_RC", "BMOUNT2_RC"):
        assert v.get(k) == "0", f"{k}={v.get(k)}\n{why}"
    assert "zoned mode enabled" in s["btrfs-dmesg"], s["btrfs-dmesg"]
    src = v["SHA_SRC"]
    assert v["SHA_FS1"] == src, "data differ after sync + drop caches"
    assert v["SHA_FS2"] == src, "data differ after remount"
    assert v["BSIZE"] == str(64 * MIB)
    # 64 MiB of data in 4 MiB zones, plus metadata
    assert int(v["BZONES_WRITTEN"]) >= 16, v["BZONES_WRITTEN"]


# --- Boots 4 and 5: zone state across a restart on a file backend -------------------

# zone: (what boot 1 does, bytes written, condition after it, condition after restart)
RESTART_ZONES = {
    0: ("write 1 MiB", MIB, "oi", "cl"),
    1: ("write the whole zone", 4 * MIB, "fu", "fu"),
    2: ("open, nothing written", 0, "oe", "em"),
    3: ("open, write 512 KiB", 512 << 10, "oe", "cl"),
    4: ("write 256 KiB, finish", 256 << 10, "fu", "fu"),
    5: ("finish empty", 0, "fu", "fu"),
    6: ("write 8 KiB, close", 8 << 10, "cl", "cl"),
    7: ("zone append 8 KiB", 8 << 10, "oi", "cl"),
}

# checksums of the zones holding data (whole zones: what lies past the write pointer too)
SUMS = r"""
echo @@sums@@
for z in 0 1 3 4 6 7; do
    echo "$z $(dd if=$D bs=4k skip=$((z * 1024)) count=1024 iflag=direct 2>/dev/null | sha256sum)"
done
"""

RESTART_FIRST = HELPERS + r"""
w() { dd if=/dev/urandom of=$D bs=4k seek=$(($1 * 1024)) count=$(($2 / 4096)) \
      oflag=direct 2>/dev/null || echo "WRITE_FAILED_$1=1"; }
w 0 1048576
w 1 4194304
blkzone open -o $((2 * Z)) -c 1 $D
blkzone open -o $((3 * Z)) -c 1 $D; w 3 524288
w 4 262144; blkzone finish -o $((4 * Z)) -c 1 $D
blkzone finish -o $((5 * Z)) -c 1 $D
w 6 8192; blkzone close -o $((6 * Z)) -c 1 $D
head -c 8192 /dev/urandom > /tmp/ap
nvme zns zone-append $D -s $((7 * Z)) -z 8192 -d /tmp/ap > /dev/null || echo WRITE_FAILED_7=1
echo @@report@@; rep 0 9
""" + SUMS

RESTART_SECOND = HELPERS + r"""
echo @@report@@; rep 0 9
""" + SUMS + r"""
# writing continues at the restored write pointer
dd if=/dev/urandom of=$D bs=4k count=1 seek=256 oflag=direct 2>/dev/null; echo APPEND_AFTER_RC=$?
echo @@report-after-write@@; rep 0 1
"""


def sums(text):
    return {int(z): h for z, h in re.findall(r"^(\d+) ([0-9a-f]{64})", text, re.M)}


def test_zone_state_survives_restart(zns_only, tmp_path):
    backing = tmp_path / "zns.img"
    r1, s1, v1 = booted(RESTART_FIRST, DEFAULT_DEV, backing=backing)
    assert not [k for k in v1 if k.startswith("WRITE_FAILED")], r1.describe()
    z1 = blkzones(s1["report"])
    for i, (what, n, before, _) in RESTART_ZONES.items():
        wp = 0x2000 if before == "fu" else n // 512
        assert (z1[i]["cond"], z1[i]["wp"]) == (before, wp), (i, what, z1[i])
    # boot 2 takes the size from the file
    r2, s2, v2 = booted(RESTART_SECOND, DEFAULT_DEV, size=None, backing=backing)
    z2 = blkzones(s2["report"])
    for i, (what, n, _, after) in RESTART_ZONES.items():
        # opened zones come back Closed if they hold data, Empty if not
        assert z2[i]["cond"] == after, (i, what, z1[i], z2[i])
        assert z2[i]["wp"] == z1[i]["wp"], (i, what, z1[i], z2[i])
    assert z2[8]["cond"] == "em", z2[8]
    a, b = sums(s1["sums"]), sums(s2["sums"])
    assert sorted(a) == [0, 1, 3, 4, 6, 7] and a == b, (a, b)
    assert v2.get("APPEND_AFTER_RC") == "0", r2.describe()
    z = blkzones(s2["report-after-write"])[0]
    assert (z["cond"], z["wp"]) == ("oi", MIB // 512 + 8), z


# --- Boot 6: blackbox and zns namespaces on one controller ---------------------------

MIXED_CMD = r"""
for n in 1 2; do
    b=/sys/block/$(basename $(nsdev $n))
    echo "NS${n}_ZONED=$(cat $b/queue/zoned)"; echo "NS${n}_ZONES=$(cat $b/queue/nr_zones)"
    echo "NS${n}_SECTORS=$(cat $b/size)"
done
N1=$(nsdev 1) N2=$(nsdev 2)
echo @@report@@; blkzone report -c 2 $N2
C="--direct=1 --verify=crc32c --verify_fatal=1 --ioengine=io_uring --iodepth=8 --output-format=json"
fio --name=conv --filename=$N1 $C --rw=randwrite --bs=4k --size=32M \
    > /tmp/conv.json 2>&1; conv_rc=$?
fio --name=zoned --filename=$N2 $C --zonemode=zbd --rw=write --bs=128k \
    --max_open_zones=4 --size=64M > /tmp/zoned.json 2>&1; zoned_rc=$?
echo @@fio-conv@@; echo rc=$conv_rc; cat /tmp/conv.json
echo @@fio-zoned@@; echo rc=$zoned_rc; cat /tmp/zoned.json
"""


def test_mixed_blackbox_and_zns(zns_only):
    r, s, v = booted(MIXED_CMD, "ns_types=blackbox:zns,ns_sizes_mb=512:512,zns_zone_size_mb=8",
                     script="run-nossd.sh")
    assert (v["NS1_ZONED"], v["NS1_ZONES"]) == ("none", "0"), r.describe()
    assert (v["NS2_ZONED"], v["NS2_ZONES"]) == ("host-managed", "64"), r.describe()
    assert v["NS1_SECTORS"] == v["NS2_SECTORS"] == str(512 * MIB // 512), r.describe()
    z = blkzones(s["report"], zone_sectors=16384)
    assert z[0]["len"] == 16384 and z[1]["len"] == 16384, s["report"]
    check_fio(s, "conv", write_bytes=32 * MIB)
    check_fio(s, "zoned", write_bytes=64 * MIB)
