"""RocksDB across a power cut on a drive with selective power-loss protection.

The drive has two zoned namespaces, each with a zoned btrfs: the database's files (SSTs,
MANIFEST) on namespace 1 with plp=none, its write-ahead log (WAL) on namespace 2 with
plp=full, so the WAL's writes are acknowledged from the capacitor-backed region while the
data namespace only becomes durable through Flush (and FUA). db_bench fills keys in order
(fillseq) with sync writes: each Put returns only after the WAL is fsynced. Small
memtables (256 KiB, about 300 keys) make RocksDB flush SSTs, update its MANIFEST and
delete old WALs throughout the run, so the cut can fall anywhere in that sequence.

Which keys were acknowledged: with threads=1 and fillseq, key i is written only after
key i-1's synced Put returned, and db_bench's --stats_interval line "(N,TOTAL) ops" is
printed after TOTAL Puts returned. Every TOTAL the host reads on the console is therefore
a lower bound: keys 0..TOTAL-1 were acknowledged. Lines read after the cut count too: no
command completes once the power is off (the guest's NVMe timeout, 30 s, is never
reached before QEMU is ended), so they report Puts acknowledged before it.

The cut (QMP qom-set power-cut) comes after a random delay once a few hundred keys are
in, at a moment the capacitor-backed region holds WAL sectors not yet written out: the VM
is stopped while the device's counters say so (right after a write-out there can be none,
and a cut then would not test the capacitors). QEMU is ended and started again on the
same backing file. Then both file systems must
mount, RocksDB must open (ldb scan, checkconsistency), the keys must be 0..K-1 without a
gap with K at least the acknowledged count, and their values must equal those of the same
fillseq run again to K keys in RAM (db_bench's values are a fixed sequence). The device's
counters must show that the cut flushed protected data and that the power-up put it back.

PLP_ROCKSDB_SEED fixes the cut point (default: random, printed). About 30 s.

A FUA write on the data namespace must be durable when it completes: btrfs's superblock
is one, and without that an SST's worth of acknowledged keys (about 300) went missing in
most runs (the device acknowledged FUA writes from its volatile buffer before cd1195f).
"""

import importlib.util
import os
import random
import re
import subprocess
import time

import pytest

from guestlib import ENV, SCRIPTS, STOCK, launch_argv

ZONE_MB = 4
NS_MB = 512
DEV = (f"namespaces=2,ns_sizes_mb={NS_MB}:{NS_MB},zns_zone_size_mb={ZONE_MB},"
       "plp=none:full,plp_buf_mb=8,buf_mb=16")
VALUE = 800
# db_bench options shared by the run on the drive and the reference run in RAM
DB_OPTS = (f"--benchmarks=fillseq --key_size=16 --value_size={VALUE} --threads=1 "
           "--compression_type=none --write_buffer_size=262144 "
           "--target_file_size_base=262144 --use_existing_db=0 --seed=1")
LBA = 512               # the namespaces' LBA size (lba_index 0): the PLP counters' sector
MIN_ACKED = 400         # keys in before the cut may come
PROGRESS = re.compile(rb"\(\d+,(\d+)\) ops and")

MKFS_MOUNT = """
mkdir -p /db /wal
N1=$(nsdev 1) N2=$(nsdev 2)
mkfs.btrfs -f -O zoned -d single -m single $N1 >/tmp/mkfs1 2>&1 || { cat /tmp/mkfs1; exit 1; }
mkfs.btrfs -f -O zoned -d single -m single $N2 >/tmp/mkfs2 2>&1 || { cat /tmp/mkfs2; exit 1; }
mount -t btrfs $N1 /db && mount -t btrfs $N2 /wal || exit 1
"""

LOAD = MKFS_MOUNT + f"""
echo @@LOAD@@
db_bench {DB_OPTS} --num=100000000 --sync=1 --stats_interval=25 --db=/db/rdb --wal_dir=/wal/rdb 2>&1
echo "LOAD_ENDED=$?"
"""


def check_cmd():
    """After the restart: mount, open, list the keys, rebuild the same values in RAM."""
    return """
mkdir -p /db /wal
mount -t btrfs $(nsdev 1) /db; echo MOUNT_DB=$?
mount -t btrfs $(nsdev 2) /wal; echo MOUNT_WAL=$?
ls -l /db/rdb /wal/rdb
# the OPTIONS file names the WAL directory
ldb --db=/db/rdb --try_load_options --hex scan >/tmp/scan; echo SCAN=$?
ldb --db=/db/rdb --try_load_options checkconsistency; echo CONSISTENT=$?
K=$(wc -l </tmp/scan); echo KEYS=$K
echo @@KEYS@@; cut -d' ' -f1 /tmp/scan; echo @@KEYS-END@@
echo VALUE_LENGTHS=$(awk '{print (length($3) - 2) / 2}' /tmp/scan | sort -u | tr '\\n' ' ')
if [ "$K" -gt 0 ]; then
""" + f"""  db_bench {DB_OPTS} --num=$K --sync=0 --db=/tmp/ref --wal_dir=/tmp/ref >/tmp/ref.out 2>&1 ||
    {{ tail /tmp/ref.out; echo REF=failed; }}
  ldb --db=/tmp/ref --hex scan >/tmp/refscan; echo REF_SCAN=$?
  cmp -s /tmp/scan /tmp/refscan; echo SAME_AS_REF=$?
fi
echo @@PLP@@
nvme get-log /dev/nvme0 --log-id=0xca --log-len=65536 --xfer-len=65536 --raw-binary | tr -d '\\0' | grep '^plp_'
echo @@END@@
"""


def power_cut_module():
    spec = importlib.util.spec_from_file_location("femu_power_cut_tool",
                                                  SCRIPTS / "femu-power-cut.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def plp_qemu(device_ready):
    if STOCK:
        pytest.skip("femu-specific (FEMU_TEST_STOCK=1 runs against QEMU's stock nvme)")
    qemu = ENV.get("FEMU_QEMU", str(SCRIPTS.parent / "build/qemu-system-x86_64"))
    out = subprocess.run([qemu, "-device", "femu,help"], capture_output=True, text=True,
                         env=ENV).stdout
    if "power-cut" not in out or "plp_buf_mb" not in out:
        pytest.skip("this QEMU's femu has no plp / power-cut properties")


def protected_dirty_sectors(st):
    """At least this many protected sectors wait in the PLP region, not yet written out.

    Every sector written enters a region once and leaves it once: written out (a flush of
    any cause), dropped by a Zone Reset, or lost at a cut; what has not left is still
    there. Those of the unprotected region are at most its used bytes.
    """
    written = (st["plp-protected-bytes-written"] + st["plp-unprotected-bytes-written"]) // LBA
    left = (sum(v for k, v in st.items() if k.startswith("plp-flushed-sectors-")) +
            st["plp-reset-discarded-sectors"] + st["plp-lost-sectors"])
    return written - left - st["buf-region-used-bytes"] // LBA


def acked(console):
    """The largest TOTAL of db_bench's '(N,TOTAL) ops' lines: keys 0..TOTAL-1 are in."""
    return max((int(x) for x in PROGRESS.findall(console)), default=0)


def key_runs(keys):
    """[first, last] runs of consecutive integers."""
    runs = []
    for k in keys:
        if runs and k == runs[-1][1] + 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    return runs


def between(text, start, end):
    return text.split(start, 1)[1].split(end, 1)[0] if start in text else ""


def test_rocksdb_survives_power_cut(plp_qemu, tmp_path):
    pc = power_cut_module()
    seed = int(os.environ.get("PLP_ROCKSDB_SEED", "0")) or random.randrange(1, 1 << 30)
    rng = random.Random(seed)
    delay = rng.uniform(0, 4)
    backing, sock, log = tmp_path / "drive.img", tmp_path / "qmp.sock", tmp_path / "boot1.log"
    common = dict(script="run-zns.sh", dev=DEV, size=2 * NS_MB, backing=backing, stock=False)
    argv = launch_argv(LOAD, timeout=300, extra=["--qmp", str(sock)], **common)
    why = f"seed {seed} (PLP_ROCKSDB_SEED), cut {delay:.2f} s after {MIN_ACKED} keys"

    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=ENV, start_new_session=True)
    try:
        end = time.monotonic() + 240
        while acked(log.read_bytes()) < MIN_ACKED:
            assert proc.poll() is None and time.monotonic() < end, \
                f"{why}: the load did not get to {MIN_ACKED} keys\n{log.read_text(errors='replace')[-4000:]}"
            time.sleep(0.1)
        time.sleep(delay)
        with pc.QMP(str(sock)) as q:
            path = pc.find_femu(q)
            # The VM is stopped while the region is looked at (no device pass runs then),
            # and the cut comes only when the WAL has sectors there that are not written out.
            held_by, held = time.monotonic() + 30, 0
            while True:
                q.cmd("stop")
                held = protected_dirty_sectors(pc.stats(q, path))
                if held > 0:
                    break
                q.cmd("cont")
                assert time.monotonic() < held_by, \
                    f"{why}: no WAL sector waited in the PLP region for 30 s\n{pc.stats(q, path)}"
                time.sleep(0.05)
            before = acked(log.read_bytes())
            why += f"; {held} protected sectors waiting"
            pc.power_cut(q, path)
            assert pc.power_is_off(q, path)
            time.sleep(1)   # what the console still had to say about Puts done before
            cut_stats = pc.stats(q, path)
            try:
                q.cmd("quit")
            except pc.QMPError:
                pass
        proc.wait(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    console = log.read_bytes()
    n_acked = acked(console)
    text1 = console.decode(errors="replace")
    assert b"LOAD_ENDED=" not in console, f"{why}: db_bench ended before the cut\n{text1[-3000:]}"
    why += f"; {n_acked} keys acknowledged ({before} when the cut was sent)"
    # the WAL's data was in the PLP region and the cut flushed it
    full = "\n".join(f"{k} {v}" for k, v in sorted(cut_stats.items()) if "plp" in k)
    assert cut_stats["plp-power-losses"] == 1, f"{why}\n{full}"
    assert cut_stats["plp-loss-pages"] > 0, f"{why}\n{full}"

    argv2 = launch_argv(check_cmd(), timeout=300, **common)
    r = subprocess.run(argv2, capture_output=True, text=True, timeout=400,
                       stdin=subprocess.DEVNULL, env=ENV, errors="replace")
    out = r.stdout
    # kept whole beside the boot log: a hang's thread stacks (femu-launch) are long
    (tmp_path / "restart.out").write_text(out)
    (tmp_path / "restart.err").write_text(r.stderr)
    vals = dict(re.findall(r"^([A-Z_]+)=(.*)$", out, re.M))
    report = (f"{why}\nat the cut: plp-loss-pages {cut_stats['plp-loss-pages']}, "
              f"plp-lost-sectors {cut_stats['plp-lost-sectors']}\n--- after the restart ---\n"
              f"{out.split('@@KEYS@@')[0][-2500:]}"
              f"\n{out.split('@@KEYS-END@@')[-1][-2500:]}\n--- stderr ---\n{r.stderr[-1500:]}")
    assert r.returncode == 0, report
    for k in ("MOUNT_DB", "MOUNT_WAL", "SCAN", "CONSISTENT"):
        assert vals.get(k) == "0", f"{k}={vals.get(k)}\n{report}"
    keys = [int(x[:18], 16) for x in between(out, "@@KEYS@@", "@@KEYS-END@@").split()]
    runs = key_runs(keys)
    report = f"key runs {runs}\n{report}"
    # the data namespace is made durable only by Flush and FUA
    assert keys and runs[0][0] == 0 and len(runs) == 1, f"keys missing or out of place\n{report}"
    assert len(keys) >= n_acked, f"acknowledged keys lost\n{report}"
    assert vals.get("VALUE_LENGTHS", "").split() == [str(VALUE)], report
    assert vals.get("REF_SCAN") == "0" and vals.get("SAME_AS_REF") == "0", \
        f"the values differ from db_bench's sequence\n{report}"
    plp = dict(re.findall(r"^(plp_\w+) (\d+)$", between(out, "@@PLP@@", "@@END@@"), re.M))
    # the power-up copied the protected sectors back to their zones
    assert int(plp.get("plp_spor_sectors", 0)) > 0, f"{plp}\n{report}"
    print(f"{why}: {len(keys)} keys after the restart, values as db_bench wrote them; "
          f"{cut_stats['plp-loss-pages']} protected pages flushed at the cut, "
          f"{plp['plp_spor_sectors']} sectors recovered")
