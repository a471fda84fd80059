"""fio with pattern verification on a blackbox drive with a DRAM write buffer
(wb_size_mb), across power cuts (QMP power-cut), without and with wb_plp.

Each boot verifies with fio what the previous cut had to keep, then writes 256 KiB chunks
of a 16 MiB region, one fio run per chunk (random 4 KiB writes, O_DIRECT, the block's
offset and the boot's generation in every 4 KiB: verify_pattern "genNNNN"%o); every few
chunks the fio run ends with an fsync (a Flush). The guest prints `W c` when chunk c's fio
run ended without error (every write of it complete) and `S c` when it also fsynced.
After a random number of chunks the host cuts the power and ends QEMU (every other
time it SIGKILLs QEMU instead), and checks the backing file (the data starts at byte 0)
sector by sector:

  wb_plp=on   every chunk printed (W or S) holds this boot's data; the chunk after it (in
              flight at the cut) holds, sector by sector, this boot's data or what it held.
  wb_plp=off  every chunk printed before the last S holds this boot's data; the chunks
              after it hold, sector by sector, this boot's data or what the previous check
              found there (zeroes if nothing durable was ever there).
  both        no sector holds anything else: no torn sector, no other block's or boot's
              data. Chunks this boot did not reach hold what they held.

The next boot's fio verify_only (through the device) must pass on the chunks that had to
survive. WB_CUTS (default 3) cuts per mode; about 1.5 minutes per mode under TCG.
"""

import os
import random
import re
import struct
import time

import pytest

from guestlib import ENV, SCRIPTS, STOCK
from test_plp_power_cut import Guest, pc

SIZE_MB = 64
CHUNK = 256 << 10
CHUNKS = 64                 # a 16 MiB region
BS = 4096
SECTOR = 512                # the namespace's LBA
SYNC_EVERY = 5              # every 5th chunk's fio run ends with an fsync
CUTS = int(os.environ.get("WB_CUTS", "3"))
# 1 MiB: 256 units of a 4 KiB page (a chunk is 64), written out above 153 down to 102,
# also when the drive idles: unsynced chunks are partly programmed, partly held at a cut
DEV = "wb_size_mb=1"
FIO = ("fio --name=c --filename=/dev/nvme0n1 --direct=1 --ioengine=libaio --iodepth=8 "
       "--rw=randwrite --bs=4k --offset={off} --size=256k --verify=pattern "
       "--verify_pattern='\"gen{gen:04d}\"%o' --minimal")


def expected(gen, off):
    """The 4 KiB fio writes at byte offset off in boot gen: the pattern with the block's
    offset pasted in, repeated."""
    unit = b"gen%04d" % gen + struct.pack("<Q", off)
    return (unit * (BS // len(unit) + 1))[:BS]


def boot_cmd(gen, must, load):
    """Checks the chunks that must hold data ({chunk: gen}) with fio verify_only; then,
    with load, writes chunks from a random one on."""
    lines = ["echo WC=$(cat /sys/block/nvme0n1/queue/write_cache)", "echo @@VERIFY@@"]
    for c, g in sorted(must.items()):
        if g:
            lines.append(f"{FIO.format(off=c * CHUNK, gen=g)} --verify_only=1 --verify_fatal=1"
                         f" >/tmp/v 2>&1 && echo 'V {c} ok' || {{ echo 'V {c} FAIL'; cat /tmp/v; }}")
    lines.append("echo @@LOAD@@")
    if load:
        first = random.randrange(CHUNKS)
        lines.append(f"n=0; while [ $n -lt {CHUNKS} ]; do c=$(( ({first} + n) % {CHUNKS} ))\n"
                     f"  s=0; [ $((n % {SYNC_EVERY})) -eq {SYNC_EVERY - 1} ] && s=1\n"
                     f"  {FIO.format(off='$((c * 262144))', gen=gen)} --end_fsync=$s >/dev/null "
                     "2>/tmp/e || { echo \"E $c\"; cat /tmp/e; break; }\n"
                     "  [ $s = 1 ] && echo \"S $c\" || echo \"W $c\"; n=$((n + 1)); done")
    return "\n".join(lines) + "\n"


def load_lines(text):
    return re.findall(r"^([WSE]) (\d+)\s*$", text.split("@@LOAD@@", 1)[-1], re.M)


def check_file(path, state, gen, lines, plp):
    """The backing file against the rules (module docstring); updates state ({sector's
    byte offset: gen, 0 zeroes}) with what the file holds. Returns (violations, counts)."""
    done = [int(c) for k, c in lines if k in "WS"]
    synced = max((i for i, (k, _) in enumerate(lines) if k == "S"), default=-1)
    must = set(done) if plp else {int(c) for k, c in lines[:synced + 1] if k in "WS"}
    # the chunk after the last one printed was in flight (its run may have completed)
    maybe = set(done) - must
    if done:
        maybe.add((done[-1] + 1) % CHUNKS)
    bad, counts = [], dict(must_sectors=0, new=0, old=0)
    with open(path, "rb") as f:
        data = f.read(CHUNKS * CHUNK)
    for off in range(0, CHUNKS * CHUNK, BS):
        c = off // CHUNK
        for s in range(0, BS, SECTOR):
            old = state.get(off + s, 0)
            allowed = [gen] if c in must else [old, gen] if c in maybe else [old]
            got = data[off + s:off + s + SECTOR]
            hit = [g for g in allowed if got == (expected(g, off)[s:s + SECTOR] if g
                                                 else bytes(SECTOR))]
            if not hit:
                bad.append("offset %d (chunk %d%s): sector %d holds %r..., expected %s" % (
                    off, c, ", must" if c in must else ", maybe" if c in maybe else "",
                    s // SECTOR, got[:16], " or ".join("gen %d" % g if g else "zeroes"
                                                       for g in allowed)))
                continue
            state[off + s] = hit[-1]
            if c in must:
                counts["must_sectors"] += 1
            elif c in maybe:
                counts["new" if hit[-1] == gen and old != gen else "old"] += 1
    return bad[:20], counts


@pytest.fixture
def wb_device(device_ready):
    if STOCK:
        pytest.skip("femu-specific (FEMU_TEST_STOCK=1 runs against QEMU's stock nvme)")


@pytest.mark.parametrize("plp", [False, True], ids=["volatile", "wb_plp"])
def test_fio_verify_across_power_cuts(wb_device, tmp_path, plp):
    rng = random.Random(int(os.environ.get("WB_SEED", "0")) or None)
    random.seed(rng.random())
    backing, sock = tmp_path / "wb.img", tmp_path / "qmp.sock"
    dev = DEV + (",wb_plp=on" if plp else "")
    state, must = {}, {}
    t0 = time.monotonic()
    totals = dict(must_sectors=0, new=0, old=0, lost_units=0, plp_units=0, flushed_units=0,
                  watermark_units=0, chunks=0)
    for gen in range(1, CUTS + 2):
        last = gen == CUTS + 1
        sigkill = gen % 2 == 0      # every other cut is a SIGKILL of QEMU instead
        g = Guest(boot_cmd(gen, must, not last), backing, sock, dev=dev, size=SIZE_MB,
                  script="run-blackbox.sh")
        try:
            assert g.wait_for(lambda t: "@@LOAD@@" in t, 240), "no boot\n" + g.describe()
            out = g.text()
            assert "WC=write back" in out, "no volatile write cache seen\n" + g.describe()
            verify = out.split("@@VERIFY@@", 1)[1].split("@@LOAD@@", 1)[0]
            assert "FAIL" not in verify, f"boot {gen}: fio verify failed\n{verify[-3000:]}"
            assert verify.count(" ok") == sum(1 for v in must.values() if v), verify
            if last:
                g.finish()
                assert g.proc.returncode == 0, g.describe()
                break
            # cut after a random number of chunks, at a random moment of the next one; not
            # right after an fsync, so that unsynced chunks are held or written out
            n = rng.choice([k for k in range(2, 2 * SYNC_EVERY) if k % SYNC_EVERY])
            assert g.wait_for(lambda t: len(load_lines(t)) >= n, 180), "no load\n" + \
                g.describe()
            time.sleep(rng.uniform(0, 0.5))
            st = None
            if sigkill:
                g.kill()            # QEMU gone at once: no power-cut path runs
            else:
                with g.qmp() as q:
                    path = pc.find_femu(q)
                    pc.power_cut(q, path)
                    assert pc.power_is_off(q, path)
                    g.quiet(gap=0.3)
                    st = {k.replace("-", "_"): v for k, v in pc.stats(q, path).items()}
                    try:
                        q.cmd("quit")
                    except pc.QMPError:
                        pass
            g.finish()
        finally:
            if g.proc.poll() is None:
                g.kill()
        lines = load_lines(g.text())
        assert lines and lines[0][0] != "E", "the load failed\n" + g.describe()
        # an error may only come after the cut (the device is gone)
        totals["chunks"] += sum(1 for k, _ in lines if k != "E")
        if st:
            totals["lost_units"] += st["wb_lost_units"]
            totals["plp_units"] += st["wb_plp_units"]
            totals["flushed_units"] += st["wb_written_out_flush"]
            totals["watermark_units"] += (st["wb_written_out_watermark"] +
                                          st["wb_written_out_idle"])
        bad, counts = check_file(backing, state, gen, lines, plp)
        print(f"boot {gen}: {' '.join(k + c for k, c in lines)}; " + (
            "SIGKILL" if sigkill else "buffer at the cut: %d units" % (
                st["wb_plp_units"] if plp else st["wb_lost_units"])) + f"; {counts}")
        assert not bad, f"boot {gen} ({'wb_plp' if plp else 'volatile'}), load {lines}:\n" + \
            "\n".join(bad)
        for k, v in counts.items():
            totals[k] += v
        # what the next boot's fio verifies: every chunk all of one boot's data
        must = {c: state.get(c * CHUNK, 0) for c in range(CHUNKS)
                if len({state.get(c * CHUNK + b, 0) for b in range(0, CHUNK, SECTOR)}) == 1}
    took = time.monotonic() - t0
    print(f"\n{'wb_plp' if plp else 'volatile'}: {CUTS} cuts in {took:.0f} s: {totals}")
    assert totals["must_sectors"] > 0
    if plp:
        assert totals["lost_units"] == 0 and totals["plp_units"] > 0, totals
    else:
        # the cuts did lose buffered data, fsync did flush it, and unsynced data the
        # buffer had written out by itself was found after a cut
        assert totals["lost_units"] > 0 and totals["flushed_units"] > 0, totals
        assert totals["new"] > 0, totals
