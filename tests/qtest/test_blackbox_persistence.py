"""Blackbox persistence: with a memory-backend-file (share=on) as memdev, the FTL's state
(mapping, lines, wear, GC progress, statistics) is kept after the data, so a new QEMU on the
same file reads the data back through the same mapping (a written LBA costs a mapped read,
not an unmapped one) and the FTL's statistics go on from where they were. A file saved
with another geometry or size is refused with a message naming the property, one whose
data has no FTL state is refused, a SIGKILL during writes comes back consistent, and a
blackbox namespace beside a zoned one, or two blackbox namespaces, keep their state too."""

import random
import time

import pytest

import nvme
import qtest_machine
from killlib import FileDrive, kill_after_acks, launch_message
from qtest import QEMULaunchError
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's blackbox mode")

PAGE = 4096                 # one flash page, one LBA (lba_index=1)
PAGES = 4096                # 16 MiB
GEO = "nchs=2,luns_per_ch=2,pgs_per_blk=16,flash_type=1"
EXTRA = GEO + ",op_pcent=25"
# the FTL's own counters: kept in its state, so they survive a restart
LASTING = ("host_pages_written", "host_pages_read", "unmapped_pages_read",
           "prefetch_pages_read", "nand_pages_written", "waf_milli", "gc_runs",
           "gc_forced_runs", "gc_bg_ops", "gc_read_overtakes", "gc_pages_moved",
           "blocks_erased", "pages_trimmed", "free_lines", "total_lines")


class Drive(FileDrive):
    """A blackbox drive in the file."""

    def __init__(self, path, tmp_path, extra=EXTRA, css=nvme.CC_CSS_NVM, **kw):
        kw.setdefault("size_mb", 16)
        super().__init__(DevConfig(mode=1, lba_index=1, queues=2, extra=extra,
                                   memdev_file=path, **kw), tmp_path, css)

    def stats(self):
        r = self.m.qmp("qom-get", path="/machine/peripheral/femu0", property="stats")
        assert "return" in r, r
        return {k.replace("-", "_"): v for k, v in r["return"].items()}

    def lasting(self, prefix=""):
        s = self.stats()
        return {k: s[prefix + k] for k in LASTING}

    def settled(self, prefix=""):
        """The FTL's counters once background GC is done with what it may do now."""
        last, same = self.lasting(prefix), 0
        deadline = time.monotonic() + 20
        while same < 3:
            assert time.monotonic() < deadline, "background GC never settled: %s" % last
            time.sleep(0.1)
            now = self.lasting(prefix)
            same = same + 1 if now == last else 0
            last = now
        return last

    def put(self, nsid, lba, n, rng):
        data = rng.randbytes(n * PAGE)
        mark = self.ctrl.alloc.mark()
        try:
            c = self.ctrl.write(self.sq, nsid, lba, data)
        finally:
            self.ctrl.alloc.release(mark)
        assert c.ok, c
        return data

    def get(self, nsid, lba, n):
        mark = self.ctrl.alloc.mark()
        try:
            c, data = self.ctrl.read(self.sq, nsid, lba, n)
        finally:
            self.ctrl.alloc.release(mark)
        assert c.ok, c
        return data

    def trim(self, nsid, lba, n):
        mark = self.ctrl.alloc.mark()
        try:
            assert self.ctrl.dsm_deallocate(self.sq, nsid, [(lba, n)]).ok
        finally:
            self.ctrl.alloc.release(mark)

def age(d, rng, nsid=1, pages=PAGES, passes=3):
    """A fill, then random 64 KiB overwrites and a few trims: GC has run. Returns
    {lba: data} of what the drive holds, None for what was trimmed."""
    held = {}
    for lba in range(0, pages, 32):
        blob = d.put(nsid, lba, 32, rng)
        for k in range(32):
            held[lba + k] = blob[k * PAGE:(k + 1) * PAGE]
    for i in range(passes * pages // 16):
        lba = rng.randrange(pages // 16) * 16
        if i % 23 == 0:
            d.trim(nsid, lba, 16)
            for k in range(16):
                held[lba + k] = None
        else:
            blob = d.put(nsid, lba, 16, rng)
            for k in range(16):
                held[lba + k] = blob[k * PAGE:(k + 1) * PAGE]
    return held


def check_held(d, held, nsid=1, prefix=""):
    """Every LBA holds what it should; written ones are mapped (no unmapped read), trimmed
    ones are not (an unmapped read each)."""
    before = d.lasting(prefix)
    lbas = sorted(held)
    for first in range(0, len(lbas), 32):
        run = lbas[first:first + 32]
        back = d.get(nsid, run[0], len(run))
        for k, lba in enumerate(run):
            want = held[lba] if held[lba] is not None else bytes(PAGE)
            assert back[k * PAGE:(k + 1) * PAGE] == want, "LBA %d" % lba
    after = d.lasting(prefix)
    trimmed = sum(1 for v in held.values() if v is None)
    assert after["host_pages_read"] - before["host_pages_read"] == len(held)
    assert after["unmapped_pages_read"] - before["unmapped_pages_read"] == trimmed, (
        "written LBAs read as unmapped: the mapping did not come back")


def test_state_survives_a_clean_restart(tmp_path):
    path = str(tmp_path / "bb.img")
    rng = random.Random(11)
    d = Drive(path, tmp_path)
    try:
        held = age(d, rng)
        s = d.settled()
        assert s["gc_runs"] > 0 and s["gc_pages_moved"] > 0 and s["waf_milli"] > 1000, s
        assert s["pages_trimmed"] > 0 and s["unmapped_pages_read"] == 0, s
    finally:
        d.shutdown()

    d = Drive(path, tmp_path)
    try:
        again = d.lasting()
        assert again == s, "the FTL's counters did not come back"
        check_held(d, held)
        # they go on from there
        blob = d.put(1, 8, 2, rng)
        after = d.lasting()
        assert after["host_pages_written"] == s["host_pages_written"] + 2
        assert after["nand_pages_written"] >= s["nand_pages_written"] + 2
        assert d.get(1, 8, 2) == blob
    finally:
        d.shutdown()
    # and again, after that write
    d = Drive(path, tmp_path)
    try:
        assert d.lasting()["host_pages_written"] == s["host_pages_written"] + 2
        assert d.get(1, 8, 2) == blob
    finally:
        d.shutdown()


@pytest.mark.parametrize("extra,prop", [
    (EXTRA.replace("nchs=2", "nchs=4"), "nchs = 2, the device now has 4"),
    (EXTRA.replace("luns_per_ch=2", "luns_per_ch=4"), "luns_per_ch = 2, the device now has 4"),
    (EXTRA.replace("pgs_per_blk=16", "pgs_per_blk=32"), "pgs_per_blk = 16, the device now has 32"),
    (EXTRA.replace("op_pcent=25", "op_pcent=50"), "blks_per_pl"),
    (EXTRA + ",secs_per_pg=4", "secs_per_pg = 8, the device now has 4"),
], ids=["nchs", "luns_per_ch", "pgs_per_blk", "op_pcent", "secs_per_pg"])
def test_restart_with_another_geometry_refused(tmp_path, extra, prop):
    path = str(tmp_path / "bb.img")
    rng = random.Random(12)
    d = Drive(path, tmp_path)
    try:
        blob = d.put(1, 7, 2, rng)
    finally:
        d.shutdown()
    with pytest.raises(QEMULaunchError) as e:
        Drive(path, tmp_path, extra)
    msg = launch_message(e.value)
    assert e.value.exitcode not in (0, None), e.value.output
    assert prop in msg and "FTL state" in msg, msg
    # nothing changed: the drive starts as it was saved
    d = Drive(path, tmp_path)
    try:
        assert d.get(1, 7, 2) == blob
        assert d.lasting()["host_pages_written"] == 2
    finally:
        d.shutdown()


def test_data_without_state_refused(tmp_path):
    """A file whose data area holds data but whose FTL state area is blank (another
    femu_mode, another size, or a FEMU that kept no blackbox state): refused, never
    started as an empty drive over the data."""
    path = str(tmp_path / "bb.img")
    rng = random.Random(13)
    d = Drive(path, tmp_path)
    try:
        blob = d.put(1, 100, 4, rng)
    finally:
        d.shutdown()
    with open(path, "r+b") as f:
        f.seek(16 << 20)
        f.write(bytes(1 << 20))             # state and journal blank
    with pytest.raises(QEMULaunchError) as e:
        Drive(path, tmp_path)
    msg = launch_message(e.value)
    assert "holds data but there is no FTL state" in msg, msg
    # another size puts the state elsewhere: refused too
    with open(path, "r+b") as f:
        f.truncate(0)
    d = Drive(path, tmp_path)
    try:
        blob = d.put(1, 100, 4, rng)
        d.put(1, 15 * 256 - 4, 4, rng)      # the last MiB of 16 holds data too
    finally:
        d.shutdown()
    with pytest.raises(QEMULaunchError) as e:
        Drive(path, tmp_path, size_mb=15, memdev_mb=17)
    assert "FTL state" in launch_message(e.value), e.value.output
    d = Drive(path, tmp_path)
    try:
        assert d.get(1, 100, 4) == blob
    finally:
        d.shutdown()


def test_kill_mid_writes(tmp_path):
    """SIGKILL with writes in flight while GC runs: the next QEMU starts, acknowledged data
    is there and mapped, each other block old or new, the counters went on (not reset,
    at least the acknowledged pages more, at most all submitted more) and agree."""
    N = 16
    path = str(tmp_path / "bb.img")
    rng = random.Random(14)
    d = Drive(path, tmp_path)
    killed = False
    try:
        held = age(d, rng, passes=1)
        s0 = d.settled()
        ctrl, sq = d.ctrl, d.sq
        batch = []
        lbas = rng.sample(range(PAGES // N), 48)
        for i, slot in enumerate(lbas):
            blob = rng.randbytes(N * PAGE)
            buf = ctrl.buffer(len(blob), blob)
            p1, p2 = ctrl.prps(buf, len(blob))
            cid = ctrl.queue_cmd(sq, ctrl.rw_cmd(nvme.IO_WRITE, 1, slot * N, N, prp1=p1,
                                                 prp2=p2))
            batch.append((cid, slot * N, blob))
        acked = kill_after_acks(ctrl, sq, d.kill)
        killed = True
    finally:
        if not killed:
            d.kill()

    d = Drive(path, tmp_path)
    try:
        s1 = d.lasting()
        assert s0["host_pages_written"] + N * len(acked) <= s1["host_pages_written"] <= \
            s0["host_pages_written"] + N * len(batch), (s0, s1, len(acked))
        assert s1["gc_runs"] >= s0["gc_runs"] and s1["blocks_erased"] >= s0["blocks_erased"]
        assert s1["pages_trimmed"] == s0["pages_trimmed"]
        assert s1["nand_pages_written"] == s1["host_pages_written"] + s1["gc_pages_moved"]
        before = d.lasting()
        for cid, lba, blob in batch:
            back = d.get(1, lba, N)
            old = [held[lba + k] or bytes(PAGE) for k in range(N)]
            for k in range(N):
                page = back[k * PAGE:(k + 1) * PAGE]
                if cid in acked:
                    assert page == blob[k * PAGE:(k + 1) * PAGE], \
                        "acknowledged write at LBA %d lost" % (lba + k)
                else:
                    assert page in (blob[k * PAGE:(k + 1) * PAGE], old[k]), lba + k
        after = d.lasting()
        # every acknowledged page and every page written before the round is mapped
        may_be_unmapped = sum(1 for cid, lba, _ in batch if cid not in acked
                              for k in range(N) if held[lba + k] is None)
        assert after["unmapped_pages_read"] - before["unmapped_pages_read"] <= may_be_unmapped
        more = d.put(1, 4000, 2, rng)
        assert d.get(1, 4000, 2) == more
    finally:
        d.shutdown()


@pytest.mark.parametrize("types,bb", [("blackbox:zns", 1), ("zns:blackbox", 2)])
def test_beside_a_zoned_namespace(tmp_path, types, bb):
    """Each namespace's model keeps its own state in its own metadata, in NSID order."""
    path = str(tmp_path / "mixed.img")
    rng = random.Random(15)
    extra = "ns_types=%s,ns_sizes_mb=16:16,zns_zone_size_mb=1,%s" % (types, EXTRA)
    zns = 3 - bb
    zlba = 5 * 256                          # zone 5, 4 KiB LBAs
    kw = dict(size_mb=32, namespaces=2, css=nvme.CC_CSS_ALL)
    d = Drive(path, tmp_path, extra, **kw)
    prefix = "ns%d_" % bb
    try:
        held = age(d, rng, nsid=bb, passes=2)
        zdata = rng.randbytes(8 * PAGE)
        c = d.ctrl.zone_append(d.sq, zns, zlba, zdata)
        assert c.ok and nvme.append_lba(c) == zlba, c
        s = d.settled(prefix)
        assert s["gc_runs"] > 0, s
    finally:
        d.shutdown()
    d = Drive(path, tmp_path, extra, **kw)
    try:
        assert d.lasting(prefix) == s
        check_held(d, held, nsid=bb, prefix=prefix)
        assert d.get(zns, zlba, 8) == zdata
        assert d.ctrl.zone(d.sq, zns, zlba)["wp"] == zlba + 8
    finally:
        d.shutdown()
    # the other namespace's size moves the blackbox state: refused, not started empty
    with pytest.raises(QEMULaunchError) as e:
        Drive(path, tmp_path, extra.replace("ns_sizes_mb=16:16", "ns_sizes_mb=%s" %
                                            ("16:15" if bb == 1 else "15:16")),
              size_mb=31, namespaces=2, memdev_mb=34, css=nvme.CC_CSS_ALL)
    assert e.value.exitcode not in (0, None), e.value.output


def test_two_blackbox_namespaces(tmp_path):
    """Namespaces of one blackbox device share one FTL: its state in namespace 1's
    metadata maps namespace 2's data too."""
    path = str(tmp_path / "two.img")
    rng = random.Random(16)
    extra = "ns_sizes_mb=8:8," + EXTRA
    d = Drive(path, tmp_path, extra, namespaces=2)
    try:
        one = age(d, rng, nsid=1, pages=PAGES // 2, passes=1)
        two = age(d, rng, nsid=2, pages=PAGES // 2, passes=2)
        s = d.settled()
    finally:
        d.shutdown()
    d = Drive(path, tmp_path, extra, namespaces=2)
    try:
        assert d.lasting() == s
        check_held(d, two, nsid=2)
        check_held(d, one, nsid=1)
    finally:
        d.shutdown()
