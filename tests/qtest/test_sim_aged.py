"""Aged drives from femu-sim: `femu-sim --backing FILE` keeps a drive's state (zones, FTLs,
chunks) where the emulator keeps it in its memory-backend-file, so the emulator boots the
drive femu-sim aged, in the state femu-sim left it: the same write pointers, the same
lifetime counters. A file of another configuration is refused by both, naming the
property."""

import json
import os
import random
import subprocess

import pytest

import nvme
import qtest_machine
import simcheck
from nvme import ZS_CLOSED, ZS_EMPTY, ZS_FULL
from qtest import QEMULaunchError
from qtest_machine import DevConfig, Machine

pytestmark = [
    pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's backing state"),
    pytest.mark.skipif(not os.access(simcheck.FEMU_SIM, os.X_OK),
                       reason="femu-sim not built (make sim)"),
]

PAGE = 4096


def age(tmp_path, props, phases, backing):
    """femu-sim runs the phases on the drive, keeping its state in backing: its JSON."""
    jobs = []
    for i, (qd, cmds) in enumerate(phases):
        trace = tmp_path / ("age%d.csv" % i)
        simcheck.write_trace(trace, cmds)
        jobs.append("[age%d]\nread_iolog=%s\nreplay_no_stall=1\niodepth=%d\nstonewall\n"
                    % (i, trace, qd))
    jf = tmp_path / "age.fio"
    jf.write_text("".join(jobs))
    out = subprocess.run([simcheck.FEMU_SIM, "--dev", props, "--backing", str(backing),
                          "--output-format=json", str(jf)], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    assert "boot it with" in out.stderr and str(backing) in out.stderr
    return json.loads(out.stdout)


def boot(tmp_path, props, backing, css=nvme.CC_CSS_NVM):
    """The emulator on the aged file (the whole file as its memdev): (Machine, I/O SQ).
    Its clock is the virtual clock (dataplane=main-loop), which qtest moves only when told:
    no background GC runs between the boot and the counters read."""
    props += ",dataplane=main-loop"
    if not os.path.exists(qtest_machine.QEMU) or not qtest_machine.qemu_has_device("femu"):
        pytest.skip("no QEMU with the femu device at %s" % qtest_machine.QEMU)
    kv = dict(item.split("=", 1) for item in props.split(","))
    cfg = DevConfig(mode=int(kv.pop("femu_mode")), size_mb=int(kv.pop("devsz_mb")),
                    lba_index=int(kv.pop("lba_index")),
                    extra=",".join("%s=%s" % i for i in kv.items()),
                    memdev_file=str(backing), memdev_mb=os.path.getsize(backing) >> 20)
    m = Machine(cfg, str(tmp_path))
    m.ctrl.enable(css=css)
    return m, m.ctrl.create_io_queues(1, entries=64)


def stats(m):
    st = m.qmp("qom-get", path="/machine/peripheral/femu0", property="stats")["return"]
    return {k.replace("-", "_"): v for k, v in st.items()}


def refused(tmp_path, props, backing):
    """QEMU's message when it refuses the file for these properties."""
    with pytest.raises(QEMULaunchError) as e:
        boot(tmp_path, props, backing)[0].close()
    return str(e.value)


ZNS = "femu_mode=3,devsz_mb=32,lba_index=1,zns_zone_size_mb=4,nchs=2,luns_per_ch=2"


def test_zoned_drive_boots_with_the_zones_femu_sim_wrote(tmp_path):
    backing = tmp_path / "zns.img"
    zone = 4 << 20
    cmds = [("write", z * zone + i * 65536, 65536) for z in range(3) for i in range(64)]
    cmds += [("write", 3 * zone + i * 65536, 65536) for i in range(10)]
    age(tmp_path, ZNS, [(1, cmds)], backing)
    m, sq = boot(tmp_path, ZNS, backing, css=nvme.CC_CSS_ALL)
    try:
        c, rep = m.ctrl.zone_report(sq, 1, size=64 + 64 * 8)
        assert c.ok, c
        zones = rep["zones"]
        zsze = zone // PAGE
        assert [z["zs"] for z in zones[:3]] == [ZS_FULL] * 3
        # an open zone comes back Closed after the power cycle, its wp kept
        assert zones[3]["zs"] == ZS_CLOSED and zones[3]["wp"] == 3 * zsze + 10 * 16
        assert all(z["zs"] == ZS_EMPTY for z in zones[4:])
        # the drive goes on: the next write at the write pointer
        c = m.ctrl.write(sq, 1, zones[3]["wp"], bytes(PAGE))
        assert c.ok, c
    finally:
        m.close()
    msg = refused(tmp_path, ZNS.replace("zns_zone_size_mb=4", "zns_zone_size_mb=8"), backing)
    assert "zns_zone_size_mb" in msg


FDP = "femu_mode=4,devsz_mb=16,lba_index=1,nchs=2,luns_per_ch=2,pgs_per_blk=16,fdp_ruh_types=ii:ii"


def test_fdp_drive_boots_with_its_ftl_state(tmp_path):
    """An FDP drive overwritten twice in femu-sim (GC ran): the emulator's lifetime counters
    go on from femu-sim's, and every page written reads as mapped."""
    rng = random.Random(3)
    backing = tmp_path / "fdp.img"
    pages = (16 << 20) // PAGE
    cmds = [("write", i * PAGE, PAGE) for i in range(pages)]
    cmds += [("write", rng.randrange(pages) * PAGE, PAGE) for _ in range(2 * pages)]
    sim = age(tmp_path, FDP, [(4, cmds)], backing)["stats"]
    assert sim["gc_pages_moved"] > 0
    m, sq = boot(tmp_path, FDP, backing)
    try:
        emu = stats(m)
        for name in ("host_pages_written", "nand_pages_written", "gc_pages_moved",
                     "fdp_rus_erased"):
            assert emu[name] == sim[name], name
        c, _ = m.ctrl.read(sq, 1, 0, 1)
        assert c.ok and stats(m)["unmapped_pages_read"] == 0
    finally:
        m.close()
    assert "fdp_ruh_types" in refused(tmp_path, FDP.replace("ii:ii", "ii:pi"), backing)


def test_fdp_rus_left_open_are_closed_at_femu_sim_exit(tmp_path):
    """A run that leaves an RU partly written ends as the emulator's does (QEMU's exit
    resets the controller, which closes it): the file holds it closed, so the emulator
    booting it finds none open and posts no Controller Level Reset event."""
    fdp = qtest_machine.qtest_module("test_fdp")
    EV_CTRL_RESET_MODIFIED, events = fdp.EV_CTRL_RESET_MODIFIED, fdp.events

    backing = tmp_path / "fdp.img"
    sim = age(tmp_path, FDP, [(1, [("write", i * PAGE, PAGE) for i in range(10)])],
              backing)["stats"]
    ru = sim["fdp_ru_pages"]
    assert sim["rg0_ruh0_avail_pages"] == ru - 10 and sim["fdp_pages_skipped"] == 0
    m, _ = boot(tmp_path, FDP, backing)
    try:
        emu = stats(m)
        assert emu["rg0_ruh0_avail_pages"] == ru
        assert emu["fdp_pages_skipped"] == ru - 10
        assert [e for e in events(m.ctrl) if e["type"] == EV_CTRL_RESET_MODIFIED] == []
    finally:
        m.close()


def test_femu_sim_refuses_another_drives_file(tmp_path):
    """A file aged as one drive, opened by femu-sim as another: refused, naming the
    property; a file whose data area holds data but no state: refused."""
    backing = tmp_path / "zns.img"
    age(tmp_path, ZNS, [(1, [("write", 0, 65536)])], backing)
    jf = tmp_path / "r.fio"
    jf.write_text("[r]\nrw=read\nsize=1m\n")
    out = subprocess.run([simcheck.FEMU_SIM, "--dev", ZNS.replace("mb=4", "mb=8"),
                          "--backing", str(backing), str(jf)], capture_output=True, text=True)
    assert out.returncode != 0 and "zns_zone_size_mb" in out.stderr
    plain = tmp_path / "plain.img"
    with open(plain, "wb") as f:
        f.write(b"\x01" * PAGE)
    out = subprocess.run([simcheck.FEMU_SIM, "--dev", ZNS, "--backing", str(plain), str(jf)],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "holds data but there is no zone state" in out.stderr


BB = "femu_mode=1,devsz_mb=16,lba_index=1,nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=25"


def overwrite(pages, times, seed):
    rng = random.Random(seed)
    cmds = [("write", i * PAGE, PAGE) for i in range(pages)]
    return cmds + [("write", rng.randrange(pages) * PAGE, PAGE) for _ in range(times * pages)]


def test_blackbox_drive_boots_at_steady_state(tmp_path):
    """A blackbox drive overwritten twice at random in femu-sim, GC at steady state: the
    emulator boots with the FTL femu-sim left (counters, mapping: written pages read as
    mapped), and the same further writes cost the same in both (the same GC follows)."""
    backing = tmp_path / "bb.img"
    pages = (16 << 20) // PAGE
    sim = age(tmp_path, BB, [(4, overwrite(pages, 2, 5))], backing)["stats"]
    assert sim["gc_runs"] > 0 and sim["waf_milli"] > 1100
    m, sq = boot(tmp_path, BB, backing)
    try:
        emu = stats(m)
        for name in ("host_pages_written", "nand_pages_written", "gc_pages_moved", "gc_runs",
                     "blocks_erased", "free_lines", "waf_milli"):
            assert emu[name] == sim[name], name
        for lba in (0, pages // 2, pages - 1):
            c, _ = m.ctrl.read(sq, 1, lba, 1)
            assert c.ok, c
        assert stats(m)["unmapped_pages_read"] == 0
    finally:
        m.close()
    assert "nchs" in refused(tmp_path, BB.replace("nchs=2", "nchs=4"), backing)


def test_mixed_drive_layout_is_the_emulators(tmp_path):
    """blackbox and zoned namespaces on one flash: each keeps its state where the emulator
    looks for it (the zoned namespace's metadata after the blackbox FTL's)."""
    props = ("femu_mode=1,ns_types=blackbox:zns,ns_sizes_mb=16:16,devsz_mb=32,lba_index=1,"
             "nchs=2,luns_per_ch=2,pgs_per_blk=16,zns_zone_size_mb=4")
    backing = tmp_path / "mixed.img"
    age(tmp_path, props, [(1, [("write", i * PAGE, PAGE) for i in range(1024)])], backing)
    # the zoned namespace's writes go through a second job on namespace 2
    jf = tmp_path / "z.fio"
    trace = tmp_path / "z.csv"
    simcheck.write_trace(trace, [("write", 2 * (4 << 20) + i * 65536, 65536)
                                 for i in range(8)])
    jf.write_text("[z]\nfilename=/dev/nvme0n2\nread_iolog=%s\nreplay_no_stall=1\n" % trace)
    out = subprocess.run([simcheck.FEMU_SIM, "--dev", props, "--backing", str(backing),
                          str(jf)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    m, sq = boot(tmp_path, props, backing, css=nvme.CC_CSS_ALL)
    try:
        z = m.ctrl.zone(sq, 2, 2 * (4 << 20) // PAGE)
        assert z["wp"] == 2 * (4 << 20) // PAGE + 8 * 16
        assert stats(m)["ns1_host_pages_written"] == 1024
    finally:
        m.close()
