"""Backends and sizes a user can get wrong (device review findings 2, 3, 10, 19, 23).

Refusals are checked by starting QEMU with the device and reading its message; the rest
with the qtest machine.
"""

import os
import subprocess

import pytest

import qtest_machine
from qtest_machine import QEMU, DevConfig, Machine

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's own device")


def start(tmp_path, *args):
    """QEMU with these arguments, told to quit at once: (exit code, stderr)."""
    bios = tmp_path / "empty-bios.bin"
    bios.write_bytes(bytes(64 << 10))
    r = subprocess.run([QEMU, "-machine", "q35", "-accel", "qtest", "-display", "none",
                        "-nodefaults", "-bios", str(bios), "-monitor", "stdio", *args],
                       input="quit\n", capture_output=True, text=True, timeout=120)
    return r.returncode, r.stderr


def test_namespace_sizes_cannot_wrap_the_device_size(tmp_path):
    """Finding 2: 64 namespaces of 64 TiB added up to 2^32 MiB, which wrapped devsz_mb to
    0: a 1 GiB backend while every namespace reported 64 TiB (and addressed host memory
    far beyond the backend)."""
    sizes = ":".join(["67108864"] * 64)
    rc, err = start(tmp_path, "-device", "femu,namespaces=64,ns_sizes_mb=" + sizes)
    assert rc != 0, "QEMU started"
    assert "ns_sizes_mb=" in err and "adds up to 4294967296 MiB" in err, err
    assert "at most 67108864" in err, err


def test_read_only_memdev_is_refused(tmp_path):
    """Finding 3: a read-only backend was accepted; the first write killed QEMU."""
    img = tmp_path / "ro.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    rc, err = start(tmp_path, "-object",
                    "memory-backend-file,id=m,mem-path=%s,size=64M,readonly=on" % img,
                    "-device", "femu,memdev=m")
    assert rc != 0, "QEMU started"
    assert "memdev 'm' is read-only" in err, err


@pytest.mark.parametrize("prop", ["pg_rd_lat=-5", "pg_wr_lat=-2", "blk_er_lat=-100",
                                  "ch_xfer_lat=-3"])
def test_negative_latency_is_refused(tmp_path, prop):
    """Finding 23: latencies below -1 were silently the flash type's default."""
    rc, err = start(tmp_path, "-device", "femu,femu_mode=1,devsz_mb=64," + prop)
    name = prop.split("=")[0]
    assert rc != 0, "QEMU started"
    assert "%s=%s is out of range" % (name, prop.split("=")[1]) in err, err
    assert "-1 (the flash type's default) or 0..1000000000" in err, err


def test_zns_negative_latency_names_its_property(tmp_path):
    rc, err = start(tmp_path, "-device", "femu,femu_mode=3,devsz_mb=64,zns_pg_rd_lat=-7")
    assert rc != 0 and "zns_pg_rd_lat=-7 is out of range" in err, err


def test_even_split_keeps_namespaces_aligned(tmp_path_factory):
    """Finding 19: 1024 MiB in 3 namespaces put namespace 2 at byte 357913941, inside an
    LBA and a flash page. Derived sizes are whole MiB now: 341 MiB each."""
    m = Machine(DevConfig(size_mb=1024, namespaces=3), str(tmp_path_factory.mktemp("split")))
    try:
        ctrl = m.ctrl
        ctrl.enable()
        sq = ctrl.create_io_queues(1, entries=16)
        for nsid in (1, 2, 3):
            ns = ctrl.id_ns(nsid)
            assert ns["nsze"] == 341 * 2048, (nsid, ns["nsze"])
        # the last block of each namespace and the first of the next stay apart
        last = 341 * 2048 - 1
        for nsid in (1, 2, 3):
            assert ctrl.write(sq, nsid, last, bytes([nsid]) * 512).ok
            assert ctrl.write(sq, nsid, 0, bytes([0x10 + nsid]) * 512).ok
        for nsid in (1, 2, 3):
            assert ctrl.read(sq, nsid, last, 1)[1] == bytes([nsid]) * 512
            assert ctrl.read(sq, nsid, 0, 1)[1] == bytes([0x10 + nsid]) * 512
    finally:
        m.close()


def test_private_file_backend_is_never_hole_punched(tmp_path_factory):
    """Finding 10: with memory-backend-file,share=off, Deallocate and Write Zeroes punched
    holes in the user's file (the guest's writes never reach it, its discards did)."""
    d = tmp_path_factory.mktemp("private")
    img = os.path.join(d, "disk.img")
    with open(img, "wb") as f:
        f.write(b"\x5a" * (65 << 20))
    cfg = DevConfig(size_mb=64, memdev_file=img, memdev_share=False)
    m = Machine(cfg, str(d))
    try:
        ctrl = m.ctrl
        ctrl.enable()
        sq = ctrl.create_io_queues(1, entries=16)
        assert ctrl.dsm_deallocate(sq, 1, [(0, 8192)]).ok          # 4 MiB
        assert ctrl.write_zeroes(sq, 1, 16384, 8192).ok
        c, back = ctrl.read(sq, 1, 4096, 8)
        assert c.ok and back == bytes(4096)      # the guest sees zeroes ...
    finally:
        m.close()
    with open(img, "rb") as f:
        data = f.read(16 << 20)
    assert data == b"\x5a" * len(data), "the file changed at byte %d" % next(
        i for i, b in enumerate(data) if b != 0x5a)
    st = os.stat(img)
    assert st.st_blocks * 512 >= 65 << 20, "holes were punched"


@pytest.mark.parametrize("share", ["on", "off"])
def test_shared_file_without_room_for_the_write_journal(tmp_path, share):
    """Review 2026-11-28 finding 3: devsz_mb filling a shared file exactly left the write
    journal out silently (a kill in the middle of a write could then tear an LBA). Now the
    start is refused, naming the property and what fits; a private file (nothing a killed
    QEMU wrote stays) starts as before."""
    img = tmp_path / "exact.img"
    rc, err = start(tmp_path, "-object", "memory-backend-file,id=m,mem-path=%s,size=8M,"
                    "share=%s" % (img, share), "-device", "femu,femu_mode=2,memdev=m,"
                    "devsz_mb=8")
    if share == "off":
        assert rc == 0, err
        return
    assert rc != 0, "QEMU started"
    assert "devsz_mb=8 plus its metadata leaves no room in memdev 'm'" in err, err
    assert "write journal" in err and "allowed at most 7 MiB" in err, err
