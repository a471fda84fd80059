"""Two namespaces split the capacity and keep their data apart."""

import struct

import nvme
from qtest_machine import DevConfig

DEV = DevConfig(size_mb=64, namespaces=2)


def test_active_list_and_count(ctrl):
    c, d = ctrl.identify(2)
    ids = struct.unpack("<1024I", d)
    assert ids[:3] == (1, 2, 0)
    assert ctrl.id_ctrl()["nn"] >= 2


def test_each_namespace_has_half_the_capacity(ctrl, machine):
    blocks = (machine.cfg.size_mb << 20) // 2 // machine.cfg.block_size
    for nsid in (1, 2):
        ns = ctrl.id_ns(nsid)
        assert ns["nsze"] == ns["ncap"] == blocks, nsid


def test_data_is_isolated(ctrl, ioq, rng):
    bs = ctrl.block_size(1)
    nsze = ctrl.id_ns(1)["nsze"]
    a, b = rng.randbytes(8 * bs), rng.randbytes(8 * bs)
    assert ctrl.write(ioq, 1, 0, a).ok
    c, back = ctrl.read(ioq, 2, 0, 8)
    assert c.ok and back != a
    assert ctrl.write(ioq, 2, 0, b).ok
    assert ctrl.read(ioq, 1, 0, 8)[1] == a
    assert ctrl.read(ioq, 2, 0, 8)[1] == b
    # The end of NSID 1 is not the start of NSID 2.
    tail = rng.randbytes(bs)
    assert ctrl.write(ioq, 1, nsze - 1, tail).ok
    assert ctrl.read(ioq, 2, 0, 8)[1] == b
    assert ctrl.read(ioq, 1, nsze - 1, 1)[1] == tail
    assert ctrl.write_zeroes(ioq, 2, 0, 8).ok
    assert ctrl.read(ioq, 1, 0, 8)[1] == a


def test_lba_range_per_namespace(ctrl, ioq, io_ok):
    nsze = ctrl.id_ns(2)["nsze"]
    c, _ = ctrl.read(ioq, 2, nsze - 1, 2)
    assert c.is_(0, nvme.SC_LBA_RANGE), c
    io_ok(ctrl, ioq, nsid=2)


def test_unknown_nsid(ctrl, ioq, io_ok):
    nn = ctrl.id_ctrl()["nn"]
    buf = ctrl.buffer(4096)
    c = ctrl.execute(ioq, ctrl.rw_cmd(nvme.IO_READ, nn + 1, 0, 1, prp1=buf))
    assert c.is_(0, nvme.SC_INVALID_NS), c
    if nn > 2:
        # Valid but inactive NSIDs may also be refused as Invalid Field.
        c = ctrl.execute(ioq, ctrl.rw_cmd(nvme.IO_READ, 3, 0, 1, prp1=buf))
        assert c.sct == 0 and c.sc in (nvme.SC_INVALID_NS, nvme.SC_INVALID_FIELD), c
    io_ok(ctrl, ioq)


def test_namespace_ids_differ(ctrl):
    d1 = nvme.parse_descriptors(ctrl.identify(3, nsid=1)[1])
    d2 = nvme.parse_descriptors(ctrl.identify(3, nsid=2)[1])
    common = [t for t in (1, 2, 3) if t in d1 and t in d2]
    assert common, "no globally unique identifier type reported for both"
    for t in common:
        assert d1[t] != d2[t]
