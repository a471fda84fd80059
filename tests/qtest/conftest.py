"""Fixtures: one QEMU per test module (or parameter set), a fresh controller
per test.

QTEST_DEVICE=femu (default) tests the project's device; QTEST_DEVICE=stock
runs the same tests on QEMU's own ``nvme`` device to check the harness.
FEMU_QEMU overrides the QEMU binary.
"""

import dataclasses
import os
import random
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from qtest import QTest, GuestAlloc, find_pci_device  # noqa: E402
import nvme  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
QEMU = os.environ.get("FEMU_QEMU", os.path.join(REPO, "build", "qemu-system-x86_64"))
DEVICE = os.environ.get("QTEST_DEVICE", "femu")
NVME_CLASS = 0x010802
MSIX_SLOTS_BASE = 0x100000      # one page of MSI-X message slots
RAM_START = 0x101000
MMIO_START = 0xE0000000         # inside q35's 32-bit PCI hole


@dataclasses.dataclass(frozen=True)
class DevConfig:
    size_mb: int = 64
    namespaces: int = 1
    queues: int = 8             # I/O queue pairs
    entries: int = 1024         # max entries per queue (CAP.MQES + 1)
    mdts: int = None
    lba_index: int = 0          # 0: 512-byte LBAs, 1: 4096-byte LBAs

    @property
    def block_size(self):
        return 4096 if self.lba_index else 512


def device_args(cfg, workdir):
    """QEMU arguments for the device under test."""
    if DEVICE == "stock":
        args = []
        per_ns = cfg.size_mb // cfg.namespaces
        bs = cfg.block_size
        ctrl = "nvme,id=nvme0,serial=qtest,max_ioqpairs=%d,mqes=%d" % (
            cfg.queues, cfg.entries - 1)
        if cfg.mdts is not None:
            ctrl += ",mdts=%d" % cfg.mdts
        nsdevs = []
        for i in range(cfg.namespaces):
            img = os.path.join(workdir, "ns%d.img" % i)
            with open(img, "wb") as f:
                f.truncate(per_ns << 20)
            args += ["-drive", "if=none,id=d%d,file=%s,format=raw,discard=unmap" % (i, img)]
            nsdevs += ["-device", "nvme-ns,drive=d%d,nsid=%d,bus=nvme0,"
                       "logical_block_size=%d,physical_block_size=%d"
                       % (i, i + 1, bs, bs)]
        return args + ["-device", ctrl] + nsdevs
    opts = "femu,femu_mode=2,devsz_mb=%d,namespaces=%d,queues=%d,entries=%d," \
           "lba_index=%d,serial=qtest" % (cfg.size_mb, cfg.namespaces, cfg.queues,
                                         cfg.entries, cfg.lba_index)
    if cfg.mdts is not None:
        opts += ",mdts=%d" % cfg.mdts
    return ["-device", opts]


_help_cache = {}


def qemu_has_device(name):
    if name not in _help_cache:
        try:
            out = subprocess.run([QEMU, "-device", "help"], capture_output=True,
                                 text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        _help_cache[name] = ('name "%s"' % name) in out
    return _help_cache[name]


class Machine:
    """A QEMU with the NVMe function found, BARs placed and MSI-X on."""

    def __init__(self, cfg, workdir):
        self.cfg = cfg
        self.kind = DEVICE
        self.qt = QTest(QEMU, device_args(cfg, workdir))
        try:
            self.pci = find_pci_device(self.qt, NVME_CLASS)
            assert self.pci is not None, "no NVMe function (class 010802) on bus 0"
            self.pci.assign_bars(GuestAlloc(MMIO_START, 0xFE000000),
                                 GuestAlloc(0xC000, 0x10000))
            self.msix = self.pci.enable_msix()
            for v in range(min(self.msix.size, 1024)):
                self.msix.program(v, MSIX_SLOTS_BASE + 4 * v, 0xC0DE0000 | v)
                self.msix.clear(v)
            self.alloc = GuestAlloc(RAM_START, self.qt.mem_size)
            self.ctrl = nvme.Controller(self.qt, self.pci, self.alloc)
            self.ctrl.nvectors = self.msix.size
        except BaseException:
            self.qt.close()
            raise

    def close(self):
        self.qt.close()


def _start(request, tmp_path_factory, cfg):
    if not os.path.exists(QEMU):
        pytest.skip("QEMU binary %s not found (set FEMU_QEMU or run make qemu)" % QEMU)
    name = "nvme" if DEVICE == "stock" else "femu"
    if not qemu_has_device(name):
        pytest.skip("%s has no '%s' device (-device help)" % (QEMU, name))
    return Machine(cfg, str(tmp_path_factory.mktemp("qtest")))


@pytest.fixture(scope="module")
def machine(request, tmp_path_factory):
    """One QEMU per module; a module sets DEV = DevConfig(...) to change it."""
    cfg = getattr(request.module, "DEV", DevConfig())
    m = _start(request, tmp_path_factory, cfg)
    yield m
    m.close()


@pytest.fixture
def ctrl(machine):
    """The controller freshly reset and enabled with empty admin queues."""
    mark = machine.alloc.mark()
    c = machine.ctrl
    c.mmio_doorbells = c.skipped_doorbells = 0
    c.enable()
    yield c
    machine.alloc.release(mark)
    assert machine.qt.alive(), "QEMU died:\n" + machine.qt.log()


@pytest.fixture
def ioq(ctrl):
    """I/O queue pair 1 on top of the fresh controller."""
    return ctrl.create_io_queues(1, entries=64)


@pytest.fixture
def rng(request):
    return random.Random(request.node.nodeid)


def assert_io_works(ctrl, sq=None, nsid=1, slba=7):
    """A write/read round trip must succeed (used after every error test)."""
    if sq is None or sq.qid not in ctrl.sqs:
        sq = ctrl.sqs.get(1) or ctrl.create_io_queues(1, entries=64)
    bs = ctrl.block_size(nsid)
    data = random.Random(slba).randbytes(2 * bs)
    c = ctrl.write(sq, nsid, slba, data)
    assert c.ok, c
    c, back = ctrl.read(sq, nsid, slba, 2)
    assert c.ok, c
    assert back == data
    assert not ctrl.rd32(nvme.REG_CSTS) & nvme.CSTS_CFS


@pytest.fixture
def io_ok():
    return assert_io_works
