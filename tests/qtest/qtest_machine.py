"""Where QEMU is, which device is under test, and how one QEMU is set up.

QTEST_DEVICE=femu (default) tests the project's device; QTEST_DEVICE=stock
runs the same tests on QEMU's own ``nvme`` device to check the harness.
FEMU_QEMU overrides the QEMU binary; FEMU_QEMU_SRC (or FEMU_BUILD) says where
the QEMU source with its python/ directory is (see qtest.py).
"""

import dataclasses
import importlib.util
import os
import subprocess
import time

import pytest

from qtest import QTest, GuestAlloc, find_pci_device, qemu_python_missing  # noqa: F401
import nvme

HERE = os.path.dirname(os.path.abspath(__file__))
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
    lba_index: int = 0          # 0: 512-byte LBAs, 1: 4096-byte LBAs; None: not given
    mode: int = 2               # femu_mode (femu only)
    extra: str = ""             # more femu properties, "k=v,..." (femu only)
    # femu only: keep the drive in this file (memory-backend-file, share=on),
    # so a second QEMU on the same file sees what the first one wrote
    memdev_file: str = None
    memdev_mb: int = 0          # backend size; 0: size_mb + 1 MiB per namespace
    memdev_share: bool = True   # share=off: a private mapping, writes never reach the file
    machine: str = "q35"        # QEMU machine type ("pc": ACPI hotplug on bus 0)
    accel: str = "qtest"        # "tcg": the virtual clock runs with the (halted) vCPU

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
    opts = "femu,femu_mode=%d,devsz_mb=%d,namespaces=%d,queues=%d,entries=%d," \
           "serial=qtest,id=femu0" % (cfg.mode, cfg.size_mb, cfg.namespaces, cfg.queues,
                                      cfg.entries)
    if cfg.lba_index is not None:
        opts += ",lba_index=%d" % cfg.lba_index
    if cfg.extra:
        opts += "," + cfg.extra
    if cfg.mdts is not None:
        opts += ",mdts=%d" % cfg.mdts
    args = []
    if cfg.memdev_file:
        # zns keeps its zone state after the data, rounded up to 1 MiB per namespace
        mb = cfg.memdev_mb or cfg.size_mb + cfg.namespaces
        args += ["-object", "memory-backend-file,id=femumem,mem-path=%s,size=%dM,share=%s"
                 % (cfg.memdev_file, mb, "on" if cfg.memdev_share else "off")]
        opts += ",memdev=femumem"
    return args + ["-device", opts]


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
        self.qt = QTest(QEMU, device_args(cfg, workdir), machine=cfg.machine, accel=cfg.accel)
        try:
            self.rebind()
        except BaseException:
            self.qt.close()
            raise

    def rebind(self):
        """Find the function (again, e.g. after a hotplug), place its BARs, set up MSI-X."""
        self.pci = find_pci_device(self.qt, NVME_CLASS)
        assert self.pci is not None, "no NVMe function (class 010802) on bus 0"
        self.pci.assign_bars(GuestAlloc(MMIO_START, 0xFE000000), GuestAlloc(0xC000, 0x10000))
        self.msix = self.pci.enable_msix()
        for v in range(min(self.msix.size, 1024)):
            self.msix.program(v, MSIX_SLOTS_BASE + 4 * v, 0xC0DE0000 | v)
            self.msix.clear(v)
        self.alloc = GuestAlloc(RAM_START, self.qt.mem_size)
        self.ctrl = nvme.Controller(self.qt, self.pci, self.alloc)
        self.ctrl.nvectors = self.msix.size

    def qmp(self, cmd, args_dict=None, **args):
        """A QMP command (e.g. "stop", "cont", "qom-get"): QEMU's answer as a dict,
        {"return": ...} or {"error": ...}; '_' in argument names becomes '-'."""
        return self.qt.qmp(cmd, args_dict, **args)

    def stats(self):
        """The device's statistics over QMP (names with '_', as the vendor log spells
        them); unlike the log page this works on a failed or disabled controller."""
        r = self.qmp("qom-get", path="/machine/peripheral/femu0", property="stats")
        return {k.replace("-", "_"): v for k, v in r["return"].items()}

    def close(self):
        self.qt.close()


def skip_unless_qemu(name=None):
    """Skip (saying why) unless QEMU, its device and QEMU's Python module are there."""
    name = name or ("nvme" if DEVICE == "stock" else "femu")
    if not os.path.exists(QEMU):
        pytest.skip("QEMU binary %s not found (set FEMU_QEMU or run make qemu)" % QEMU)
    if not qemu_has_device(name):
        pytest.skip("%s has no '%s' device (-device help)" % (QEMU, name))
    why = qemu_python_missing()
    if why:
        pytest.skip(why)


def start_machine(cfg, workdir):
    """A Machine for cfg, or a skip saying what is missing."""
    skip_unless_qemu()
    return Machine(cfg, workdir)


# A device thread with nothing due sleeps: each wake-up (a doorbell, a deadline, background
# time for the media model) costs it a pass for the work, one to find nothing more, and one
# for background time; a spinning thread makes passes by the thousand without sleeping.
PASSES_PER_SLEEP = 4


def assert_device_sleeps(machine, seconds, what):
    """Over `seconds` of host time with nothing for the device to do but background work,
    its thread slept after every few passes (the statistics dataplane_passes and
    dataplane_sleeps): a count, whatever else the host runs. The statistics (dicts) at the
    start and the end."""
    before = machine.stats()
    time.sleep(seconds)
    after = machine.stats()
    passes = after["dataplane_passes"] - before["dataplane_passes"]
    sleeps = after["dataplane_sleeps"] - before["dataplane_sleeps"]
    print("%s: %d passes, %d sleeps in %.1f s" % (what, passes, sleeps, seconds))
    assert passes <= PASSES_PER_SLEEP * (sleeps + 1), \
        "%s: the device thread made %d passes and slept %d times in %.1f s" % (
            what, passes, sleeps, seconds)
    return before, after


def qtest_module(name):
    """The qtest module NAME.py loaded by its path: tests/guest holds modules of the same
    names (test_fdp), and one pytest run (tests/run-all.sh) puts both folders on sys.path,
    so a plain import may find the guest's."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location("qtest_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
