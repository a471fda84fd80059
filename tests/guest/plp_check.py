#!/usr/bin/env python3
"""Check what survived a power cut against the log of guest/plp/plp-load.

Inputs: the load's log (what the host read from the serial console), the zone report
after the restart (`plp-write zones` Z lines, or `blkzone report` lines), the backing file
(namespace 1's data from byte --ns-offset, default 0) and the drive's PLP setting.

The rules:
  * must survive: every acknowledged write with protection (the flag in `selective`
    mode, every write in `full`, every write to a zone of plp_zones in `selective`), and
    every write acknowledged before a Flush that completed. Each must read back intact,
    and no write pointer may be below the end of the must-survive data of its zone.
  * may survive: an acknowledged unprotected write that no Flush covered, and the write
    in flight at the cut. If present below the write pointer it must be intact; it is
    allowed only when the device wrote its buffer out by itself (threshold, no space,
    zone drain: the plp_* flush counters of --stats) or a Flush was in flight. If lost
    while later data survived, its LBAs read zeroes (a hole, allowed).
  * anything else below the write pointer (stale data of an older generation, garbled
    sectors, another LBA's data) is an error, and above the write pointer the data area
    must be zero (the device clears what it finds there at start).

Across several cuts of one drive, --state FILE carries what each check established (the
write pointers and the data below them) into the next check, where it must still be there.

Usage: plp_check.py --log LOG --zones REPORT --backing FILE [--plp MODE] [--plp-zones LIST]
                    [--stats STATS.json] [--state STATE.json] [--lba-size N] [--ns-offset B]
Exit status 0: PASS, 1: FAIL, 2: bad input.
"""

import argparse
import json
import re
import struct
import sys

MAGIC = b"FEMUPLP1"
M64 = (1 << 64) - 1
ZERO = -1           # expected content "zeroes" (a hole below the write pointer)
UNKNOWN = -2        # below the write pointer before the run, content not known


# --- the data pattern of guest/plp/plp-pattern.h ---

def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def pattern_unit(lba, gen):
    return MAGIC + struct.pack("<QQQ", lba, gen, splitmix64(lba ^ splitmix64(gen)))


def pattern(lba_size, slba, nlb, gen):
    """The bytes plp-load / plp-write write for nlb LBAs from slba of generation gen."""
    return b"".join(pattern_unit(slba + i, gen) * (lba_size // 32) for i in range(nlb))


def classify(sector, lba):
    """('zero', None) | ('ok', gen) | ('other-lba', (lba, gen)) | ('garbled', None)"""
    if not sector.strip(b"\0"):
        return "zero", None
    if sector[:8] != MAGIC:
        return "garbled", None
    lba_found, gen = struct.unpack_from("<QQ", sector, 8)
    if sector != pattern_unit(lba_found, gen) * (len(sector) // 32):
        return "garbled", None
    if lba_found != lba:
        return "other-lba", (lba_found, gen)
    return "ok", gen


# --- inputs ---

def xor_sum(text):
    x = 0
    for b in text.encode():
        x ^= b
    return x


EVENT_RE = re.compile(r"([SWFrRD])((?: \d+)*) \*([0-9a-f]{2})")


def parse_log(text):
    """The load's lines: {'setup': {...}, 'zones0': [...], 'events': [(kind, ints)],
    'errors': [...], 'truncated': bool}. A last line without its newline is dropped (the
    cut may have ended it anywhere)."""
    lines = text.split("\n")
    truncated = bool(lines and lines[-1] != "")
    if truncated:
        lines = lines[:-1]
    out = {"setup": {}, "zones0": [], "events": [], "errors": [], "bad": [],
           "truncated": truncated}
    for no, raw in enumerate(lines, 1):
        line = raw.strip("\r").strip()
        if line.startswith("# plp-load "):
            for kv in line[len("# plp-load "):].split():
                k, _, v = kv.partition("=")
                out["setup"][k] = v
            continue
        if line.startswith("E "):
            out["errors"].append(line)
            continue
        if out["setup"] and line.startswith("Z ") and not out["events"]:
            out["zones0"].append(parse_z_line(line))
            continue
        if not line or line[0] not in "SWFrRD" or (len(line) > 1 and line[1] != " "):
            continue        # other output on the console
        m = EVENT_RE.fullmatch(line)
        body = line.rpartition(" *")[0]
        if not m or int(m.group(3), 16) != xor_sum(body):
            out["bad"].append((no, line))
            continue
        out["events"].append((m.group(1), [int(v) for v in m.group(2).split()]))
    return out


def parse_z_line(line):
    _, zslba, cap, wp, state = line.split()[:5]
    return {"zslba": int(zslba), "cap": int(cap), "wp": int(wp), "state": state}


BLKZONE_RE = re.compile(r"start: (0x[0-9a-f]+), len (0x[0-9a-f]+), cap (0x[0-9a-f]+), "
                        r"wptr (0x[0-9a-f]+).*zcond:\s*\d+\((\w+)\)")


def parse_zone_report(text, lba_size):
    """Z lines of `plp-write zones` (LBAs) or `blkzone report` lines (512-byte sectors, the
    write pointer relative to the zone) -> {zslba: zone}, and the zone size if known."""
    zones, zone_size = {}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("# zones "):
            kv = dict(x.partition("=")[::2] for x in line[len("# zones "):].split())
            zone_size = int(kv["zone_size"])
            if lba_size and int(kv["lba_size"]) != lba_size:
                raise ValueError(f"zone report: lba_size {kv['lba_size']}, expected {lba_size}")
        elif line.startswith("Z "):
            z = parse_z_line(line)
            zones[z["zslba"]] = z
        else:
            m = BLKZONE_RE.search(line)
            if m:
                per = lba_size // 512
                start, length, cap, wptr = (int(m.group(i), 16) // per for i in range(1, 5))
                zones[start] = {"zslba": start, "cap": cap, "wp": start + wptr,
                                "state": m.group(5)}
                zone_size = length
    return zones, zone_size


def parse_zone_list(s):
    out = set()
    for part in filter(None, (s or "").split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


# --- the check ---

class Zone:
    def __init__(self, zslba, cap):
        self.zslba, self.cap = zslba, cap
        self.must = {}          # lba -> gen (or ZERO / UNKNOWN) that must be there
        self.pending = {}       # lba -> gen of an acknowledged, unprotected, unflushed write
        self.floor = zslba      # the write pointer may not go below this
        self.acked_end = zslba  # end of the data the log knows of
        self.gen = None         # the generation the load writes this zone with now
        self.reset_issued = False   # an 'r' without its 'R': the reset may have happened


def protected(mode, plp_zones, zone_index, flag):
    return mode == "full" or (mode == "selective" and (flag or zone_index in plp_zones))


def extents(lbas):
    """sorted LBAs -> 'a-b, c' text"""
    out, start, prev = [], None, None
    for lba in sorted(lbas):
        if start is None:
            start = prev = lba
        elif lba == prev + 1:
            prev = lba
        else:
            out.append((start, prev))
            start = prev = lba
    if start is not None:
        out.append((start, prev))
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out[:8]) + \
        (f" (+{len(out) - 8} more ranges)" if len(out) > 8 else "")


WRITE_OUT_CAUSES = ("threshold", "space", "drain")


def write_out_counts(stats):
    """The device's own write-outs of its buffer (not host Flushes), from the plp_* stats:
    {counter: value} of the nonzero ones."""
    found = {}
    for k, v in (stats or {}).items():
        name = k.replace("-", "_")
        if name.startswith(("plp_", "ns1_plp_")) and any(c in name for c in WRITE_OUT_CAUSES) \
                and "flush" in name and isinstance(v, int) and v:
            found[k] = v
    return found


class Result:
    def __init__(self):
        self.errors, self.notes, self.lines = [], [], []
        self.counts = {}
        self.state = None

    @property
    def ok(self):
        return not self.errors

    def count(self, key, n=1):
        self.counts[key] = self.counts.get(key, 0) + n

    def text(self):
        head = "PASS" if self.ok else "FAIL"
        out = [f"plp-check: {head}"] + ["  " + s for s in self.lines]
        out += ["  allowed: " + s for s in self.notes]
        out += ["  ERROR: " + s for s in self.errors]
        return "\n".join(out)


def check(log_text, report_text, backing, plp="full", plp_zones="", stats=None, state=None,
          lba_size=None, ns_offset=0):
    """Check one run. backing: a path or an open binary file. state: the dict an earlier
    check returned as result.state (None: no earlier check of this drive). Returns a
    Result; result.state is the state to give the next check."""
    res = Result()
    log = parse_log(log_text)
    setup = log["setup"]
    if not setup:
        raise ValueError("the log has no '# plp-load' line")
    lba_size = lba_size or int(setup["lba_size"])
    if int(setup["lba_size"]) != lba_size:
        raise ValueError(f"the log says lba_size={setup['lba_size']}, expected {lba_size}")
    zone_size = int(setup["zone_size"])
    gen_base = int(setup["gen"])
    flush_every = int(setup.get("flush_every", 0))
    bs_max = int(setup.get("bs_max", setup.get("bs", 4096))) // lba_size
    pz = parse_zone_list(plp_zones)
    if plp not in ("none", "selective", "full"):
        raise ValueError(f"plp mode {plp!r}: none, selective or full")

    zones = {}
    # the zones the load used, as it found them
    for z0 in log["zones0"]:
        z = zones[z0["zslba"]] = Zone(z0["zslba"], z0["cap"])
        z.gen = gen_base << 16
        z.floor = z.acked_end = z0["wp"] if z0["state"] != "full" else z0["zslba"] + z0["cap"]
        prev = (state or {}).get("zones", {}).get(str(z.zslba))
        if prev is not None:
            if prev["wp"] != z0["wp"]:
                res.errors.append(f"zone {z.zslba}: the load found the write pointer at "
                                  f"{z0['wp']}, the last check left it at {prev['wp']}")
            for slba, nlb, gen in prev["data"]:
                for lba in range(slba, slba + nlb):
                    z.must[lba] = gen
        else:
            for lba in range(z.zslba, z.floor):
                z.must[lba] = UNKNOWN
            if z.floor > z.zslba:
                res.lines.append(f"zone {z.zslba}: {z.floor - z.zslba} LBAs below the write "
                                 "pointer from before this run (no --state): content not checked")
    # zones of the state that this run did not use must still be as they were
    for key, prev in (state or {}).get("zones", {}).items():
        if int(key) not in zones:
            z = zones[int(key)] = Zone(int(key), prev["cap"])
            z.floor = z.acked_end = prev["wp"]
            for slba, nlb, gen in prev["data"]:
                for lba in range(slba, slba + nlb):
                    z.must[lba] = gen

    def zone_of(lba):
        z = zones.get(lba - lba % zone_size)
        if z is None:
            raise ValueError(f"LBA {lba}: its zone has no Z line in the log")
        return z

    # --- replay the acknowledged events ---
    seq, started, done = 0, False, False
    writes_since_flush, last = 0, None
    for kind, v in log["events"]:
        if kind in "WFR":
            if v[0] != seq + 1:
                res.errors.append(f"log: event {v[0]} follows {seq} (a line is missing)")
            seq = v[0]
        last = kind
        if kind == "S":
            started = True
        elif kind == "D":
            done = True
        elif kind == "W":
            _, slba, nlb, flag, gen = v
            z = zone_of(slba)
            if slba != z.acked_end:
                res.errors.append(f"log: write at {slba} in zone {z.zslba}, whose write "
                                  f"pointer was {z.acked_end}")
            prot = protected(plp, pz, slba // zone_size, flag)
            for lba in range(slba, slba + nlb):
                z.must.pop(lba, None)
                z.pending.pop(lba, None)
                (z.must if prot else z.pending)[lba] = gen
            z.acked_end = slba + nlb
            z.gen = gen
            res.count("writes")
            res.count("protected writes" if prot else "unprotected writes")
            writes_since_flush += 1
        elif kind == "F":
            for z in zones.values():
                z.must.update(z.pending)
                z.pending.clear()
            res.count("flushes")
            writes_since_flush = 0
        elif kind == "r":
            zone_of(v[0]).reset_issued = True
        elif kind == "R":
            z = zone_of(v[1])
            z.must.clear()
            z.pending.clear()
            z.floor = z.acked_end = z.zslba
            z.reset_issued = False
            z.gen = (z.gen + 1) if z.gen is not None else (gen_base << 16) + 1
            res.count("resets")
    for no, line in log["bad"]:
        res.errors.append(f"log line {no} is garbled: {line!r}")
    for line in log["errors"]:
        res.errors.append(f"the load failed: {line}")
    if not started:
        res.lines.append("the load had not started (no S line): nothing of this run to check")
    # at QD1 the command after the last acknowledged event may have been a Flush
    flush_in_flight = (not done and flush_every > 0 and last == "W"
                       and writes_since_flush >= flush_every)
    write_outs = write_out_counts(stats)

    # --- compare with the zone report and the data ---
    report, rep_zone_size = parse_zone_report(report_text, lba_size)
    if rep_zone_size and rep_zone_size != zone_size:
        res.errors.append(f"zone size {rep_zone_size} in the report, {zone_size} in the log")
    f = open(backing, "rb") if isinstance(backing, (str, bytes)) or hasattr(backing, "__fspath__") \
        else backing
    new_state = {"zones": {}}
    unlogged_zones = []
    present_pending = []
    try:
        for zslba in sorted(zones):
            z = zones[zslba]
            rep = report.get(zslba)
            if rep is None:
                res.errors.append(f"zone {zslba}: not in the zone report")
                continue
            wp = rep["wp"] if rep["state"] not in ("full", "fu") else zslba + z.cap
            must_end = max((lba + 1 for lba, g in z.must.items()), default=zslba)
            must_end = max(must_end, z.floor)
            f.seek(ns_offset + zslba * lba_size)
            data = f.read(z.cap * lba_size)
            if len(data) < z.cap * lba_size:
                res.errors.append(f"zone {zslba}: the backing file ends inside it")
                continue

            def sector(lba):
                o = (lba - zslba) * lba_size
                return data[o:o + lba_size]

            tag = f"zone {zslba // zone_size} (LBA {zslba})"
            if z.reset_issued and wp == zslba and not data.strip(b"\0"):
                res.notes.append(f"{tag}: the reset in flight at the cut happened")
                new_state["zones"][str(zslba)] = {"wp": wp, "cap": z.cap, "data": []}
                continue
            if wp < must_end:
                lost = [lba for lba in z.must if lba >= wp]
                res.errors.append(f"{tag}: write pointer {wp} is below the end of the data "
                                  f"that must survive ({must_end}); LBAs {extents(lost)} gone")
            if wp > zslba + z.cap:
                res.errors.append(f"{tag}: write pointer {wp} beyond the zone's capacity")
            bad_must, found = [], {}
            holes, unlogged, stale = [], [], []
            for lba in range(zslba, min(wp, zslba + z.cap)):
                kind, gen = classify(sector(lba), lba)
                want = z.must.get(lba)
                if want is not None:
                    if want == UNKNOWN:
                        found[lba] = ZERO if kind == "zero" else (gen if kind == "ok" else UNKNOWN)
                        continue
                    if (want == ZERO and kind == "zero") or (kind == "ok" and gen == want):
                        found[lba] = want
                        res.count("must-survive LBAs intact")
                        continue
                    bad_must.append((lba, want, kind, gen))
                    continue
                pend = z.pending.get(lba)
                if pend is not None:
                    if kind == "ok" and gen == pend:
                        found[lba] = gen
                        present_pending.append(lba)
                    elif kind == "zero":
                        found[lba] = ZERO
                        holes.append(lba)
                    else:
                        stale.append((lba, pend, kind, gen))
                    continue
                # not in the log: the command in flight at the cut (an unlogged write)
                if kind == "ok" and gen == z.gen and lba >= z.acked_end:
                    found[lba] = gen
                    unlogged.append(lba)
                else:
                    stale.append((lba, None, kind, gen))
            if bad_must:
                first = bad_must[0]
                res.errors.append(
                    f"{tag}: {len(bad_must)} LBAs that must survive are not intact "
                    f"({extents(b[0] for b in bad_must)}); e.g. LBA {first[0]}: want "
                    f"{'zeroes' if first[1] == ZERO else 'generation %d' % first[1]}, found "
                    f"{first[2]}{'' if first[3] is None else ' %s' % (first[3],)}")
            if stale:
                first = stale[0]
                res.errors.append(
                    f"{tag}: {len(stale)} LBAs below the write pointer hold data no "
                    f"acknowledged or in-flight write explains ({extents(s[0] for s in stale)});"
                    f" e.g. LBA {first[0]}: found {first[2]}"
                    f"{'' if first[3] is None else ' %s' % (first[3],)}")
            if holes:
                res.notes.append(f"{tag}: {len(holes)} LBAs of lost unprotected writes read "
                                 f"zeroes below the write pointer ({extents(holes)})")
                res.count("hole LBAs", len(holes))
            if unlogged:
                unlogged_zones.append(zslba)
                if len(unlogged) > bs_max:
                    res.errors.append(f"{tag}: {len(unlogged)} LBAs beyond the last logged "
                                      f"write ({extents(unlogged)}), more than one write of "
                                      f"at most {bs_max}")
                else:
                    res.notes.append(f"{tag}: the write in flight at the cut is there "
                                     f"({extents(unlogged)})")
            # above the write pointer: nothing
            tail = data[(wp - zslba) * lba_size:] if wp < zslba + z.cap else b""
            if tail.strip(b"\0"):
                nz = [zslba + (wp - zslba) + i for i in range(len(tail) // lba_size)
                      if tail[i * lba_size:(i + 1) * lba_size].strip(b"\0")]
                res.errors.append(f"{tag}: {len(nz)} LBAs above the write pointer {wp} are "
                                  f"not zero ({extents(nz)})")
            pend_lost = len([lba for lba in z.pending if lba >= wp])
            res.lines.append(
                f"{tag}: wp {wp} (must-survive data ends at {must_end}, logged writes at "
                f"{z.acked_end}); {sum(1 for g in z.must.values() if g >= 0)} must-survive "
                f"LBAs, {len(z.pending)} unprotected unflushed ({pend_lost} above the wp)")
            # what this check established, for the next one
            runs, prev = [], None
            for lba in range(zslba, min(wp, zslba + z.cap)):
                g = found.get(lba, ZERO)
                if runs and prev == g and runs[-1][0] + runs[-1][1] == lba:
                    runs[-1][1] += 1
                else:
                    runs.append([lba, 1, g])
                prev = g
            new_state["zones"][str(zslba)] = {"wp": wp, "cap": z.cap, "data": runs}
    finally:
        if f is not backing:
            f.close()

    if len(unlogged_zones) > 1:
        res.errors.append(f"unlogged data in {len(unlogged_zones)} zones ({unlogged_zones}): the "
                          "load has one command in flight at most")
    if present_pending:
        n = len(present_pending)
        if flush_in_flight:
            why = "a Flush was in flight at the cut"
        elif write_outs:
            why = "the device wrote its buffer out by itself: " + \
                ", ".join(f"{k}={v}" for k, v in sorted(write_outs.items()))
        elif stats is None:
            why = "cause not known (no --stats)"
        else:
            why = None
        if why:
            res.notes.append(f"{n} LBAs of unprotected, unflushed writes are present and "
                             f"intact ({why})")
        else:
            res.errors.append(f"{n} LBAs of unprotected, unflushed writes survived "
                              f"({extents(present_pending)}), but no Flush was in flight and "
                              "the device reports no write-out by threshold, space or drain")
        res.count("unprotected unflushed LBAs present", n)
    res.lines.insert(0, f"mode {plp}" + (f", plp zones {plp_zones}" if plp == "selective" else "")
                     + f"; LBA size {lba_size}; events: " +
                     ", ".join(f"{k} {v}" for k, v in res.counts.items()
                               if k in ("writes", "protected writes", "unprotected writes",
                                        "flushes", "resets")) +
                     ("; the load finished" if done else "; cut during the load")
                     + ("; last line cut short" if log["truncated"] else ""))
    res.state = new_state
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", required=True, help="plp-load's output as the host read it")
    ap.add_argument("--zones", required=True, help="zone report after the restart")
    ap.add_argument("--backing", required=True, help="the drive's backing file")
    ap.add_argument("--plp", default="full", choices=("none", "selective", "full"),
                    help="the namespace's plp= setting (default full: every write protected, "
                         "as on a drive without PLP support)")
    ap.add_argument("--plp-zones", default="", help="plp_zones= of the drive (zone indexes)")
    ap.add_argument("--stats", help="the device's QMP stats (JSON) read after the cut")
    ap.add_argument("--state", help="JSON state of the previous check of this drive; "
                                    "updated when the check passes")
    ap.add_argument("--lba-size", type=int, choices=(512, 4096))
    ap.add_argument("--ns-offset", type=int, default=0, help="byte offset of the namespace's "
                                                             "data in the file (default 0)")
    a = ap.parse_args()
    try:
        with open(a.log, errors="replace") as fl, open(a.zones) as fz:
            log_text, report_text = fl.read(), fz.read()
        stats = json.load(open(a.stats)) if a.stats else None
        state = None
        if a.state:
            try:
                state = json.load(open(a.state))
            except FileNotFoundError:
                pass
        res = check(log_text, report_text, a.backing, a.plp, a.plp_zones, stats, state,
                    a.lba_size, a.ns_offset)
    except (OSError, ValueError, KeyError) as e:
        print(f"plp_check: {e}", file=sys.stderr)
        return 2
    print(res.text())
    if a.state and res.ok:
        with open(a.state, "w") as f:
            json.dump(res.state, f)
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
