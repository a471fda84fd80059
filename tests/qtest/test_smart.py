"""SMART / Health counters move with I/O (a fresh QEMU so counts start at 0).

Data units are thousands of 512-byte units, rounded up.
"""

import nvme

UNITS = 1000


def smart(ctrl):
    c, d = ctrl.get_log_page(nvme.LOG_SMART, 512)
    assert c.ok, c
    u128 = lambda o: int.from_bytes(d[o:o + 16], "little")
    return {"dur": u128(32), "duw": u128(48), "hrc": u128(64), "hwc": u128(80)}


def blocks_of_512(ctrl):
    bs = ctrl.block_size(1)
    assert bs == 512, "this module assumes 512-byte LBAs"


def write_units(ctrl, sq, slba, units):
    """Write `units` 512-byte blocks in commands of at most 128 blocks."""
    cmds = 0
    while units:
        n = min(units, 128)
        assert ctrl.write(sq, 1, slba, bytes(n * 512)).ok
        slba += n
        units -= n
        cmds += 1
    return cmds


def read_units(ctrl, sq, slba, units):
    cmds = 0
    while units:
        n = min(units, 128)
        assert ctrl.read(sq, 1, slba, n)[0].ok
        slba += n
        units -= n
        cmds += 1
    return cmds


def test_data_units_and_commands(ctrl, ioq):
    blocks_of_512(ctrl)
    s = smart(ctrl)
    assert s == {"dur": 0, "duw": 0, "hrc": 0, "hwc": 0}, "fresh device: %r" % s

    # One 512-byte unit counts as one thousand (rounded up).
    assert write_units(ctrl, ioq, 0, 1) == 1
    s = smart(ctrl)
    assert (s["duw"], s["hwc"]) == (1, 1), s
    assert (s["dur"], s["hrc"]) == (0, 0), s

    # Up to exactly 1000 units it stays at one; the next unit makes two.
    n = write_units(ctrl, ioq, 1, UNITS - 1)
    s = smart(ctrl)
    assert (s["duw"], s["hwc"]) == (1, 1 + n), s
    write_units(ctrl, ioq, 0, 1)
    s = smart(ctrl)
    assert (s["duw"], s["hwc"]) == (2, 2 + n), s

    # Reads count separately.
    r = read_units(ctrl, ioq, 0, 1)
    s = smart(ctrl)
    assert (s["dur"], s["hrc"]) == (1, r), s
    r += read_units(ctrl, ioq, 0, UNITS)
    s = smart(ctrl)
    assert (s["dur"], s["hrc"]) == (2, r), s
    assert s["duw"] == 2


def test_counters_survive_controller_reset(ctrl, ioq):
    before = smart(ctrl)
    write_units(ctrl, ioq, 0, 8)
    ctrl.disable()
    ctrl.enable()
    after = smart(ctrl)
    assert after["hwc"] == before["hwc"] + 1
