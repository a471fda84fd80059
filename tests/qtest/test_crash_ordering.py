"""The crash-ordering rules of the zoned namespace (hw/femu/dataplane.c, "Crash ordering"),
each checked by killing QEMU at the point between two saves where the rule matters
(x-crash-at=POINT[:N]: QEMU dies there as SIGKILL would) and starting a new QEMU on the
same file: nothing unacknowledged comes back, nothing lies above a write pointer, and a
Zone Reset is all or nothing."""

import signal
import struct
import time

import pytest

import nvme
import qtest_machine
from nvme import IO_WRITE, ZS_CLOSED, ZS_EMPTY, cmd
from qtest import QEMULaunchError, QTestError
from test_plp import BS, PATH, ZONE, Drive, blob

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's crash points")


def submit_and_die(d, lba, data, protect=False):
    """Rings a write that makes QEMU die at its crash point; waits until it is gone."""
    addr = d.ctrl.buffer(len(data), data)
    p1, p2 = d.ctrl.prps(addr, len(data))
    ring_and_die(d, cmd(IO_WRITE, nsid=1, prp1=p1, prp2=p2, cdw10=lba,
                        cdw12=len(data) // BS - 1, cdw3=1 if protect else 0))


def ring_and_die(d, sqe):
    d.ctrl.queue_cmd(d.sq, sqe)
    try:
        d.ctrl.ring_sq(d.sq)
    except QTestError:
        pass                # QEMU may die before it answers the doorbell write
    deadline = time.monotonic() + 20
    while d.m.qt.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    alive = d.m.qt.alive()
    if alive:
        d.m.qt.kill()
    code = d.m.qt.vm.exitcode()
    try:
        d.close()
    except Exception:       # noqa: BLE001 - QEMU is gone; only its temp files remain
        pass
    assert not alive, "QEMU did not stop at its crash point"
    assert code == -signal.SIGKILL


@pytest.mark.parametrize("plp", ["plp=selective", "plp_buf_mb=1"])
def test_kill_between_data_and_write_pointer(tmp_path, plp):
    """A write whose data is placed (in the backend, or in the PLP store with a valid
    record) but whose write pointer is not saved was never acknowledged: after the
    restart it is not there, above the pointer or below it after a later rollback."""
    path = str(tmp_path / "z.img")
    d = Drive(tmp_path, extra=plp + ",x-crash-at=write-placed:2", backing=path)
    d.write(0, blob(8, 1), protect=True)
    submit_and_die(d, 8, blob(8, 2), protect=True)
    d = Drive(tmp_path, extra=plp, backing=path)
    try:
        z = d.zone(0)
        assert z["zs"] == ZS_CLOSED and z["wp"] == 8
        assert d.read(0, 8) == blob(8, 1)
        assert d.read(8, 8) == bytes(8 * BS)
        if plp == "plp=selective":
            # the durable end did not stay past the pointer: an unprotected write there
            # is lost at a cut, and the zone rolls back to 8, not to the old end 16
            d.write(8, blob(8, 3))
            d.cut()
            d.power_on()
            assert d.zone(0)["wp"] == 8 and d.read(8, 8) == bytes(8 * BS)
    finally:
        d.close()


@pytest.mark.parametrize("plp", ["plp=selective", "plp_buf_mb=1"])
def test_zone_reset_is_all_or_nothing(tmp_path, plp):
    """Killed after the Empty record of a Zone Reset is saved and before its data (on
    flash, buffered, protected) is dropped: the zone comes back Empty and reads zeroes,
    with no protected sector restored into it."""
    path = str(tmp_path / "z.img")
    d = Drive(tmp_path, extra=plp + ",x-crash-at=reset-saved", backing=path)
    d.write(0, blob(8, 1))
    d.flush()
    d.write(8, blob(8, 2), protect=True)
    d.write(ZONE, blob(4, 3), protect=True)
    ring_and_die(d, cmd(nvme.IO_ZONE_MGMT_SEND, nsid=1, cdw13=nvme.ZSA_RESET))
    d = Drive(tmp_path, extra=plp, backing=path)
    try:
        assert d.zone(0)["zs"] == ZS_EMPTY and d.zone(0)["wp"] == 0
        assert d.read(0, 16) == bytes(16 * BS)
        # the other zone is untouched
        assert d.zone(1)["wp"] == ZONE + 4 and d.read(ZONE, 4) == blob(4, 3)
    finally:
        d.close()


def test_kill_after_recovery_before_rollback(tmp_path):
    """Killed at start-up after the protected data went home (its records cleared) and
    before the write pointers were rolled back: the next start finishes the job."""
    path = str(tmp_path / "z.img")
    d = Drive(tmp_path, backing=path)
    d.write(0, blob(4, 1))
    d.flush()
    d.write(4, blob(4, 2))                  # lost
    d.write(8, blob(2, 3), protect=True)    # the write pointer ends after it
    d.write(10, blob(6, 4))                 # lost
    d.m.qt.kill()
    try:
        d.close()
    except Exception:       # noqa: BLE001
        pass
    with pytest.raises(QEMULaunchError) as e:
        Drive(tmp_path, extra="plp=selective,x-crash-at=plp-recovered", backing=path)
    assert e.value.exitcode == -signal.SIGKILL
    d = Drive(tmp_path, backing=path)
    try:
        z = d.zone(0)
        assert z["zs"] == ZS_CLOSED and z["wp"] == 10
        assert d.read(0, 4) == blob(4, 1) and d.read(4, 4) == bytes(4 * BS)
        assert d.read(8, 2) == blob(2, 3) and d.read(10, 6) == bytes(6 * BS)
    finally:
        d.close()


def start_conventional(tmp_path, path, mode, lba_index, extra="", derived=False):
    """A conventional namespace on the shared file `path`, one I/O queue pair. derived:
    no devsz_mb, the data fills the memdev of 8 MiB (a layout that had no journal)."""
    cfg = qtest_machine.DevConfig(mode=mode, size_mb=0 if derived else 8, memdev_mb=8 if
                                  derived else 0, lba_index=lba_index, queues=2,
                                  memdev_file=path,
                                  extra="nchs=2,luns_per_ch=1,pgs_per_blk=16,op_pcent=50" +
                                  extra if mode != 2 else extra.lstrip(","))
    m = qtest_machine.Machine(cfg, str(tmp_path))
    m.ctrl.enable()
    return m, m.ctrl.create_io_queues(1, entries=16)


def die_at_crash_point(m, sq, sqe):
    """Rings sqe, which makes QEMU die at its crash point; waits until it is gone."""
    m.ctrl.queue_cmd(sq, sqe)
    try:
        m.ctrl.ring_sq(sq)
    except QTestError:
        pass
    deadline = time.monotonic() + 20
    while m.qt.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    alive = m.qt.alive()
    if alive:
        m.qt.kill()
    code = m.qt.vm.exitcode()
    try:
        m.close()
    except Exception:       # noqa: BLE001 - QEMU is gone; only its temp files remain
        pass
    assert not alive, "QEMU did not stop at its crash point"
    assert code == -signal.SIGKILL


@pytest.mark.parametrize("mode,lba_index,derived", [(1, 1, False), (2, 0, False),
                                                    (4, 1, False), (2, 0, True)],
                         ids=["blackbox", "nossd", "fdp", "nossd-derived"])
def test_a_killed_write_tears_no_lba(tmp_path, mode, lba_index, derived):
    """A write on a conventional namespace (blackbox, nossd, fdp) killed in the middle of
    copying an LBA into the file: each LBA comes back whole, old or new. The crash point
    leaves the third LBA of the second write half in place; the write journal finishes
    it at the next start, and the LBAs after it keep their old data. derived: nossd with
    no devsz_mb, whose layout once had no room for the journal (and tore the LBA)."""
    path = str(tmp_path / "c.img")
    bs = 4096 if lba_index else 512
    old, new = blob_bytes(8 * bs, 1), blob_bytes(8 * bs, 2)

    m, sq = start_conventional(tmp_path, path, mode, lba_index,     # 8 LBAs, then 3
                               ",x-crash-at=lba-journaled:11", derived)
    assert m.ctrl.write(sq, 1, 16, old).ok
    addr = m.ctrl.buffer(len(new), new)
    p1, p2 = m.ctrl.prps(addr, len(new))
    die_at_crash_point(m, sq, cmd(IO_WRITE, nsid=1, prp1=p1, prp2=p2, cdw10=16, cdw12=7))
    m, sq = start_conventional(tmp_path, path, mode, lba_index, derived=derived)
    try:
        c, back = m.ctrl.read(sq, 1, 16, 8)
        assert c.ok, c
        lbas = [back[i * bs:(i + 1) * bs] for i in range(8)]
        assert lbas[:3] == [new[i * bs:(i + 1) * bs] for i in range(3)]
        assert lbas[3:] == [old[i * bs:(i + 1) * bs] for i in range(3, 8)]
    finally:
        m.close()


@pytest.mark.parametrize("mode", [2, 1], ids=["nossd", "blackbox"])
@pytest.mark.parametrize("op,nlb,nth", [("write_zeroes", 6, 1), ("deallocate", 6, 1),
                                        ("write_zeroes", 20, 2), ("deallocate", 20, 2)],
                         ids=["write-zeroes-edge", "deallocate-edge", "write-zeroes-tail",
                              "deallocate-tail"])
def test_a_killed_zeroing_tears_no_lba(tmp_path, mode, op, nlb, nth):
    """Write Zeroes and Deallocate clear the parts of a host page they cover in place
    (512-byte LBAs 1..6: inside one page; LBAs 1..20: a head edge, a whole page given
    back, a tail edge) through the write journal. Killed with the nth edge half cleared
    (after the 24 journaled LBAs of the first write), the next start finishes it: every
    LBA of the range reads zeroes, the LBAs around keep their data."""
    path = str(tmp_path / "z.img")
    old = blob_bytes(24 * 512, 3)

    m, sq = start_conventional(tmp_path, path, mode, 0,
                               ",x-crash-at=lba-journaled:%d" % (24 + nth))
    assert m.ctrl.write(sq, 1, 0, old).ok
    if op == "write_zeroes":
        sqe = m.ctrl.rw_cmd(nvme.IO_WRITE_ZEROES, 1, 1, nlb)
    else:
        body = struct.pack("<IIQ", 0, nlb, 1)
        sqe = cmd(nvme.IO_DSM, nsid=1, prp1=m.ctrl.buffer(len(body), body), cdw11=1 << 2)
    die_at_crash_point(m, sq, sqe)
    m, sq = start_conventional(tmp_path, path, mode, 0)
    try:
        c, back = m.ctrl.read(sq, 1, 0, 24)
        assert c.ok, c
        assert back[:512] == old[:512]
        assert back[512:(1 + nlb) * 512] == bytes(nlb * 512)
        assert back[(1 + nlb) * 512:] == old[(1 + nlb) * 512:]
    finally:
        m.close()


def blob_bytes(n, seed):
    return bytes((i * 7 + seed * 131 + (i >> 9)) & 0xFF for i in range(n))
