"""plp_check.py (the power-cut checker of test_plp_power_cut.py) on made-up logs and
backing files, no QEMU: it passes what selective PLP allows and fails each kind of
violation it is there to catch."""

import plp_check as pc

LBA = 512
ZONE = 64           # LBAs per zone
ZONES = 3
GEN = 7 << 16


def line(body):
    return f"{body} *{pc.xor_sum(body):02x}"


def log(events, flush_every=0, wps=(0, ZONE, 2 * ZONE)):
    head = (f"# plp-load device=/dev/ng0n1 nsid=1 lba_size={LBA} zone_size={ZONE} zones=0-2 "
            f"seed=7 gen=7 flush_every={flush_every} bs=512 bs_max=4096")
    zl = [f"Z {z * ZONE} {ZONE} {wps[z]} {'empty' if wps[z] == z * ZONE else 'closed'}"
          for z in range(ZONES)]
    return "\n".join([head] + zl + [line("S")] + [line(e) for e in events]) + "\n"


def report(wps):
    return "\n".join([f"# zones lba_size={LBA} zone_size={ZONE}"] +
                     [f"Z {z * ZONE} {ZONE} {wps[z]} closed" for z in range(ZONES)]) + "\n"


def backing(tmp_path, writes):
    """writes: (slba, nlb, gen) present in the file"""
    data = bytearray(ZONES * ZONE * LBA)
    for slba, nlb, gen in writes:
        data[slba * LBA:(slba + nlb) * LBA] = pc.pattern(LBA, slba, nlb, gen)
    p = tmp_path / "b.img"
    p.write_bytes(bytes(data))
    return p


# zone 0 is a plp_zones zone; zones 1 and 2 are protected by the flag only
EVENTS = [f"W 1 0 4 0 {GEN}", f"W 2 64 4 1 {GEN}", f"W 3 128 4 0 {GEN}", "F 4",
          f"W 5 4 4 0 {GEN}", f"W 6 68 4 0 {GEN}", f"W 7 72 2 1 {GEN}"]


def run(tmp_path, writes, wps, events=EVENTS, stats=None, **kw):
    return pc.check(log(events, **kw), report(wps), backing(tmp_path, writes), plp="selective",
                    plp_zones="0", stats=stats)


def test_what_selective_plp_allows_passes(tmp_path):
    # the unprotected W 6 (LBAs 68-71) is lost, leaving a hole below W 7, which survived
    r = run(tmp_path, [(0, 8, GEN), (64, 4, GEN), (72, 2, GEN), (128, 4, GEN)],
            (8, 74, 132))
    assert r.ok, r.text()
    assert any("68-71" in n and "zeroes" in n for n in r.notes), r.text()
    assert r.state["zones"]["64"]["data"] == [[64, 4, GEN], [68, 4, pc.ZERO], [72, 2, GEN]]


def test_lost_protected_write_fails(tmp_path):
    r = run(tmp_path, [(0, 8, GEN), (64, 4, GEN), (128, 4, GEN)], (8, 72, 132))
    assert not r.ok
    assert any("below the end of the data that must survive" in e for e in r.errors), r.text()


def test_flushed_write_damaged_fails(tmp_path):
    r = run(tmp_path, [(0, 8, GEN), (64, 4, GEN), (72, 2, GEN), (128, 3, GEN), (131, 1, GEN + 1)],
            (8, 74, 132))
    assert not r.ok
    assert any("must survive are not intact" in e and "131" in e for e in r.errors), r.text()


def test_unflushed_unprotected_write_present_needs_a_reason(tmp_path):
    writes = [(0, 8, GEN), (64, 4, GEN), (68, 4, GEN), (72, 2, GEN), (128, 4, GEN)]
    no_writeout = {"plp-flushes-threshold": 0, "plp-flushes-space": 0, "plp-flushes-drain": 0}
    r = run(tmp_path, writes, (8, 74, 132), stats=no_writeout)
    assert not r.ok and any("unflushed writes survived" in e for e in r.errors), r.text()
    # the same with a threshold write-out reported by the device: allowed, and said so
    r = run(tmp_path, writes, (8, 74, 132), stats=dict(no_writeout, **{"plp-flushes-threshold": 1}))
    assert r.ok and any("plp-flushes-threshold=1" in n for n in r.notes), r.text()
    # or a Flush in flight (the load flushes every 3 writes: the 3rd after F came last)
    r = run(tmp_path, writes, (8, 74, 132), stats=no_writeout, flush_every=3)
    assert r.ok and any("Flush was in flight" in n for n in r.notes), r.text()


def test_stale_data_and_data_above_the_write_pointer_fail(tmp_path):
    # LBAs 68-71 hold an older generation instead of W 6's data or zeroes
    r = run(tmp_path, [(0, 8, GEN), (64, 4, GEN), (68, 4, GEN - 1), (72, 2, GEN), (128, 4, GEN)],
            (8, 74, 132))
    assert not r.ok and any("no acknowledged or in-flight write explains" in e
                            for e in r.errors), r.text()
    # zone 2's write pointer at 128 with its flushed data above it
    r = run(tmp_path, [(0, 8, GEN), (64, 4, GEN), (72, 2, GEN), (128, 4, GEN)], (8, 74, 128))
    assert not r.ok and any("above the write pointer" in e for e in r.errors), r.text()


def test_write_in_flight_and_reset_in_flight(tmp_path):
    # the unlogged write at zone 2's write pointer is there: allowed
    r = run(tmp_path, [(0, 8, GEN), (64, 4, GEN), (72, 2, GEN), (128, 6, GEN)], (8, 74, 134))
    assert r.ok and any("in flight at the cut is there" in n for n in r.notes), r.text()
    # a reset issued at the end ('r' without 'R') may have happened
    ev = EVENTS + ["r 128"]
    r = run(tmp_path, [(0, 8, GEN), (64, 4, GEN), (72, 2, GEN)], (8, 74, 128), events=ev)
    assert r.ok and any("reset in flight" in n for n in r.notes), r.text()


def test_state_carries_to_the_next_cut(tmp_path):
    first = run(tmp_path, [(0, 8, GEN), (64, 4, GEN), (72, 2, GEN), (128, 4, GEN)], (8, 74, 132))
    assert first.ok, first.text()
    gen2 = 8 << 16
    ev2 = [f"W 1 8 2 1 {gen2}"]
    text = log(ev2, wps=(8, 74, 132)).replace("gen=7", "gen=8")
    good = [(0, 8, GEN), (8, 2, gen2), (64, 4, GEN), (72, 2, GEN), (128, 4, GEN)]
    r = pc.check(text, report((10, 74, 132)), backing(tmp_path, good), plp="selective",
                 plp_zones="0", state=first.state)
    assert r.ok, r.text()
    # data the first check established (zone 1's W 7) must still be there after the second cut
    bad = [(0, 8, GEN), (8, 2, gen2), (64, 4, GEN), (128, 4, GEN)]
    r = pc.check(text, report((10, 74, 132)), backing(tmp_path, bad), plp="selective",
                 plp_zones="0", state=first.state)
    assert not r.ok and any("must survive are not intact" in e for e in r.errors), r.text()


def test_cut_short_and_garbled_lines(tmp_path):
    text = log(EVENTS)
    parsed = pc.parse_log(text + "W 8 74 2")          # cut in the middle of a line
    assert parsed["truncated"] and len(parsed["events"]) == len(EVENTS) + 1   # + S
    parsed = pc.parse_log(text.replace("W 5 4 4 0", "W 5 4 4 1"))  # checksum no longer fits
    assert len(parsed["bad"]) == 1
