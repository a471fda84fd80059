"""QMP next to qtest (machine.qmp): QEMU's monitor reaches the device's properties and
its statistics, which count exactly the commands the test sent."""

import pytest

import qtest_machine

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's statistics")


def device_path(machine):
    """The QOM path of the femu device (the harness gives it id=femu0)."""
    r = machine.qmp("qom-list", path="/machine/peripheral")
    devices = [p["name"] for p in r["return"] if p["type"] == "child<femu>"]
    assert devices == ["femu0"], r
    return "/machine/peripheral/femu0"


def test_status(machine):
    r = machine.qmp("query-status")
    assert r["return"]["running"] is True, r
    assert "error" in machine.qmp("no-such-command"), "an unknown command must fail"


def test_properties(machine):
    path = device_path(machine)
    for prop, value in (("queues", machine.cfg.queues), ("entries", machine.cfg.entries),
                        ("femu_mode", machine.cfg.mode), ("serial", "qtest")):
        r = machine.qmp("qom-get", path=path, property=prop)
        assert r.get("return") == value, (prop, r)


def test_statistics_count_the_commands(machine, ctrl, ioq):
    path = device_path(machine)
    before = machine.qmp("qom-get", path=path, property="stats")["return"]
    for slba in range(5):
        assert ctrl.write(ioq, 1, slba * 8, bytes(4096)).ok
    for slba in range(3):
        assert ctrl.read(ioq, 1, slba * 8, 8)[0].ok
    after = machine.qmp("qom-get", path=path, property="stats")["return"]
    delta = {k: after[k] - before[k] for k in ("host-write-commands", "host-read-commands",
                                               "host-bytes-written", "host-bytes-read",
                                               "completions")}
    assert delta == {"host-write-commands": 5, "host-read-commands": 3,
                     "host-bytes-written": 5 * 4096, "host-bytes-read": 3 * 4096,
                     "completions": 8}, delta
