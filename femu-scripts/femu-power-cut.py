#!/usr/bin/env python3
"""Cut the power of a running femu device, or report it, over QMP.

Start the guest with `--qmp PATH` (run-*.sh), then:
  femu-power-cut.py --qmp PATH --cut        power off at once: commands in flight never
                                            complete, the guest sees the device vanish
  femu-power-cut.py --qmp PATH --status     power state and the device's plp_* counters
  femu-power-cut.py --qmp PATH --reset      QMP system_reset: the guest reboots and the
                                            device powers up again (recovery runs)
  femu-power-cut.py --qmp PATH --quit       end QEMU (restart it on the same --backing
                                            file to power the drive up there)
Several actions run in the order cut, status, reset, quit.

The device is found by --device (an id, or a QOM path), else as the only object of type
femu under /machine/peripheral (ids, e.g. femu0 from the run scripts) and
/machine/peripheral-anon. Python standard library only.

Note: the run scripts start QEMU with -no-reboot, where system_reset ends QEMU instead of
rebooting; pass `-- -action reboot=reset` to the run script to reboot instead.
"""
import argparse
import json
import socket
import sys


class QMPError(Exception):
    pass


class QMP:
    """A minimal QMP client on a unix socket: greeting, qmp_capabilities, then commands;
    asynchronous events are kept in self.events."""

    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.events = []
        self.next_id = 1
        greeting = self._recv()
        if "QMP" not in greeting:
            raise QMPError(f"not a QMP greeting: {greeting}")
        self.cmd("qmp_capabilities")

    def _recv(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise QMPError("QEMU closed the QMP connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def cmd(self, name, **args):
        """Run a command and return its result; a QMP error raises QMPError."""
        cid = self.next_id
        self.next_id += 1
        msg = {"execute": name, "id": cid}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            r = self._recv()
            if "event" in r:
                self.events.append(r)
                continue
            if r.get("id") != cid:
                continue
            if "error" in r:
                raise QMPError(f"{name}: {r['error'].get('desc', r['error'])}")
            return r.get("return")

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def find_femu(qmp, device=None):
    """The QOM path of the femu device."""
    if device:
        return device if device.startswith("/") else f"/machine/peripheral/{device}"
    found = []
    for parent in ("/machine/peripheral", "/machine/peripheral-anon"):
        try:
            children = qmp.cmd("qom-list", path=parent)
        except QMPError:
            continue
        for c in children:
            if c.get("type") == "child<femu>":
                found.append(f"{parent}/{c['name']}")
    if not found:
        raise QMPError("no femu device in this QEMU")
    if len(found) > 1:
        raise QMPError(f"several femu devices ({', '.join(found)}): give --device")
    return found[0]


def power_cut(qmp, path):
    qmp.cmd("qom-set", path=path, property="power-cut", value=True)


def power_is_off(qmp, path):
    return bool(qmp.cmd("qom-get", path=path, property="power-cut"))


def stats(qmp, path):
    return qmp.cmd("qom-get", path=path, property="stats")


def plp_stats(all_stats):
    return {k: v for k, v in all_stats.items() if "plp" in k}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--qmp", required=True, metavar="PATH", help="QMP unix socket (--qmp of the run scripts)")
    ap.add_argument("--device", help="femu device id or QOM path (default: found by type)")
    ap.add_argument("--cut", action="store_true", help="cut the power now")
    ap.add_argument("--status", action="store_true", help="print the power state and plp_* counters")
    ap.add_argument("--reset", action="store_true", help="QMP system_reset (power comes back)")
    ap.add_argument("--quit", action="store_true", help="end QEMU")
    ap.add_argument("--json", action="store_true", help="--status as JSON (with every counter)")
    a = ap.parse_args()
    if not (a.cut or a.status or a.reset or a.quit):
        ap.error("give at least one of --cut, --status, --reset, --quit")
    try:
        with QMP(a.qmp) as q:
            path = find_femu(q, a.device)
            if a.cut:
                power_cut(q, path)
                print(f"power cut: {path}")
            if a.status:
                off = power_is_off(q, path)
                st = stats(q, path)
                if a.json:
                    print(json.dumps({"device": path, "power-cut": off, "stats": st},
                                     sort_keys=True))
                else:
                    print(f"device {path}: power {'OFF' if off else 'on'}")
                    for k, v in sorted(plp_stats(st).items()):
                        print(f"  {k:32} {v}")
            if a.reset:
                q.cmd("system_reset")
                print("system_reset sent")
            if a.quit:
                try:
                    q.cmd("quit")
                except QMPError:
                    pass        # QEMU may close the socket before it answers
                print("QEMU quit")
    except (OSError, QMPError) as e:
        sys.exit(f"femu-power-cut: {a.qmp}: {e}")


if __name__ == "__main__":
    main()
