"""Get/Set Features for the mandatory features and the ones the host uses."""

import pytest

import nvme


def test_number_of_queues(ctrl, machine):
    c = ctrl.get_features(nvme.FEAT_NUM_QUEUES)
    assert c.ok, c
    q = machine.cfg.queues
    assert c.dw0 == (q - 1) << 16 | (q - 1), hex(c.dw0)
    # The answer to Set is what was allocated; Get then reports the same.
    s = ctrl.set_num_queues(2, 2)
    assert s.ok, s
    nsqa, ncqa = (s.dw0 & 0xFFFF) + 1, (s.dw0 >> 16) + 1
    assert 1 <= nsqa <= q and 1 <= ncqa <= q
    assert ctrl.get_features(nvme.FEAT_NUM_QUEUES).dw0 == s.dw0
    assert ctrl.create_io_queues(nsqa, cqid=ncqa) is not None


def test_number_of_queues_65535_invalid(ctrl):
    c = ctrl.set_features(nvme.FEAT_NUM_QUEUES, 0xFFFF << 16 | 0xFFFF)
    assert c.is_(0, nvme.SC_INVALID_FIELD), c


SEL_CURRENT, SEL_DEFAULT = 0, 1


def test_arbitration(ctrl):
    assert ctrl.get_features(nvme.FEAT_ARBITRATION).dw0 & 0x7 == 7, "default: no burst limit"
    assert ctrl.set_features(nvme.FEAT_ARBITRATION, 0x03).ok
    c = ctrl.get_features(nvme.FEAT_ARBITRATION)
    assert c.ok and c.dw0 & 0x7 == 3, c
    c = ctrl.get_features(nvme.FEAT_ARBITRATION, sel=SEL_DEFAULT)
    assert c.ok and c.dw0 & 0x7 == 7, c


def test_power_management(ctrl):
    npss = ctrl.id_ctrl()["raw"][263]
    assert ctrl.get_features(nvme.FEAT_POWER_MGMT).dw0 == 0
    # the highest power state, with workload hint 2 (bits 7:5): both differ from the default
    assert ctrl.set_features(nvme.FEAT_POWER_MGMT, 2 << 5 | npss).ok
    c = ctrl.get_features(nvme.FEAT_POWER_MGMT)
    assert c.ok and c.dw0 & 0xFF == 2 << 5 | npss, c
    c = ctrl.set_features(nvme.FEAT_POWER_MGMT, npss + 1)
    assert c.is_(0, nvme.SC_INVALID_FIELD), c
    assert ctrl.get_features(nvme.FEAT_POWER_MGMT).dw0 & 0xFF == 2 << 5 | npss


@pytest.mark.parametrize("thsel", [0, 1], ids=["over", "under"])
def test_temperature_threshold(ctrl, thsel):
    value = 350 if thsel == 0 else 250  # Kelvin
    assert ctrl.set_features(nvme.FEAT_TEMP_THRESH, thsel << 20 | value).ok
    c = ctrl.get_features(nvme.FEAT_TEMP_THRESH, cdw11=thsel << 20)
    assert c.ok and c.dw0 & 0xFFFF == value, c


def test_volatile_write_cache(ctrl):
    vwc = ctrl.id_ctrl()["vwc"]
    if not vwc & 1:
        c = ctrl.set_features(nvme.FEAT_VWC, 1)
        assert c.is_(0, nvme.SC_INVALID_FIELD), c
        return
    for wce in (0, 1):
        assert ctrl.set_features(nvme.FEAT_VWC, wce).ok
        c = ctrl.get_features(nvme.FEAT_VWC)
        assert c.ok and c.dw0 & 1 == wce, c


def test_interrupt_coalescing(ctrl):
    assert ctrl.set_features(nvme.FEAT_IRQ_COALESCE, 0x0A05).ok
    c = ctrl.get_features(nvme.FEAT_IRQ_COALESCE)
    assert c.ok and c.dw0 & 0xFFFF == 0x0A05, c


def test_async_event_configuration(ctrl):
    assert ctrl.set_features(nvme.FEAT_ASYNC_EVENT, 0x1F).ok
    c = ctrl.get_features(nvme.FEAT_ASYNC_EVENT)
    assert c.ok and c.dw0 & 0x1F == 0x1F, c
    assert ctrl.set_features(nvme.FEAT_ASYNC_EVENT, 0).ok
    assert ctrl.get_features(nvme.FEAT_ASYNC_EVENT).dw0 & 0xFF == 0


def test_error_recovery(ctrl):
    assert ctrl.get_features(nvme.FEAT_ERROR_RECOVERY, nsid=1).dw0 == 0
    assert ctrl.set_features(nvme.FEAT_ERROR_RECOVERY, 0x0123, nsid=1).ok    # TLER
    c = ctrl.get_features(nvme.FEAT_ERROR_RECOVERY, nsid=1)
    assert c.ok and c.dw0 & 0xFFFF == 0x0123, c
    # DULBE only where the namespace can report deallocated blocks (NSFEAT bit 2)
    c = ctrl.set_features(nvme.FEAT_ERROR_RECOVERY, 1 << 16 | 5, nsid=1)
    if ctrl.id_ns(1)["nsfeat"] & 4:
        assert c.ok, c
    else:
        assert c.is_(0, nvme.SC_INVALID_FIELD), c
        assert ctrl.get_features(nvme.FEAT_ERROR_RECOVERY, nsid=1).dw0 & 0xFFFF == 0x0123


def test_write_atomicity(ctrl):
    assert ctrl.get_features(nvme.FEAT_WRITE_ATOMICITY).dw0 & 1 == 0
    assert ctrl.set_features(nvme.FEAT_WRITE_ATOMICITY, 1).ok
    c = ctrl.get_features(nvme.FEAT_WRITE_ATOMICITY)
    assert c.ok and c.dw0 & 1 == 1, c
    assert ctrl.get_features(nvme.FEAT_WRITE_ATOMICITY, sel=SEL_DEFAULT).dw0 & 1 == 0


def test_controller_reset_restores_defaults(ctrl):
    """Features are not saveable: a reset brings every changed one back to its default."""
    changes = [(nvme.FEAT_ARBITRATION, 0x03, 0x7, 7),
               (nvme.FEAT_WRITE_ATOMICITY, 1, 1, 0),
               (nvme.FEAT_IRQ_COALESCE, 0x0A05, 0xFFFF, 0),
               (nvme.FEAT_TEMP_THRESH, 350, 0xFFFF, 343)]
    for fid, value, mask, default in changes:
        assert ctrl.set_features(fid, value).ok
        assert ctrl.get_features(fid).dw0 & mask == value & mask, fid
    ctrl.disable()
    ctrl.enable()
    for fid, value, mask, default in changes:
        assert ctrl.get_features(fid).dw0 & mask == default, fid


def test_interrupt_vector_configuration(ctrl):
    ctrl.create_io_queues(1)
    c = ctrl.get_features(nvme.FEAT_IRQ_CONFIG, cdw11=1)
    assert c.ok and c.dw0 & 0xFFFF == 1, c


@pytest.mark.parametrize("fid", [0x00, 0x5F, 0x7E])
def test_unknown_feature(ctrl, fid, io_ok):
    assert ctrl.get_features(fid).is_(0, nvme.SC_INVALID_FIELD)
    assert ctrl.set_features(fid, 0).is_(0, nvme.SC_INVALID_FIELD)
    io_ok(ctrl)
