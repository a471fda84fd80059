"""FDP across a power cut (review 2026-11-28 #12): the partly written reclaim units are
closed by the controller reset when the power comes back - not while it is off, as the
zoned kind's reset waits too - and femu-sim's fdp kind closes them at the same step. While
the power is off the statistics (QMP) still show the RU partly written; after the machine
reset they show it closed (fdp_pages_skipped) and the FDP Events log (host events) has one
Controller Level Reset Modified RUHs event for it."""

from qtest_machine import DevConfig, qtest_module

_fdp = qtest_module("test_fdp")
(EV_CTRL_RESET_MODIFIED, GEO, OwnMachine, RU_PAGES, drain_events, events, pid_of, put,
 qstats) = (_fdp.EV_CTRL_RESET_MODIFIED, _fdp.GEO, _fdp.OwnMachine, _fdp.RU_PAGES,
            _fdp.drain_events, _fdp.events, _fdp.pid_of, _fdp.put, _fdp.qstats)
pytestmark = _fdp.pytestmark        # the same skips

PATH = "/machine/peripheral/femu0"


class TestPowerCut(OwnMachine):
    DEV = DevConfig(mode=4, size_mb=16, lba_index=1, queues=1,
                    extra=GEO + ",fdp_nrg=2,fdp_ruh_types=ii:pi:ii:pi")

    def test_rus_close_when_the_power_is_back(self, machine):
        ctrl = machine.ctrl
        ctrl.enable()
        sq = ctrl.create_io_queues(1, entries=64)
        drain_events(ctrl)
        before = qstats(machine)
        put(ctrl, sq, 1, 0, 3, pid_of(0, 1))            # group 0, handle 1: 3 pages
        s = qstats(machine)
        assert s["rg0_ruh1_avail_pages"] == RU_PAGES - 3

        assert "error" not in machine.qmp("qom-set", path=PATH, property="power-cut",
                                          value=True)
        off = qstats(machine)
        assert off["power_cuts"] == before["power_cuts"] + 1
        assert off["rg0_ruh1_avail_pages"] == RU_PAGES - 3, "closed while the power is off"
        assert off["fdp_pages_skipped"] == before["fdp_pages_skipped"]

        assert "error" not in machine.qmp("system_reset")
        machine.rebind()
        ctrl = machine.ctrl
        ctrl.enable()
        on = qstats(machine)
        assert on["rg0_ruh1_avail_pages"] == RU_PAGES
        assert on["fdp_pages_skipped"] == before["fdp_pages_skipped"] + RU_PAGES - 3
        evs = [e for e in events(ctrl, controller=False) if e["type"] == EV_CTRL_RESET_MODIFIED]
        assert [(e["rgid"], e["ruhid"]) for e in evs] == [(0, 1)], evs
