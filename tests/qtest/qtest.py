"""The qtest client: QEMU's own Python module (python/qemu/machine/qtest.py in the
QEMU source) runs QEMU with ``-accel qtest``, speaks the qtest line protocol and
QMP; on top of it, guest-memory and port-I/O helpers, PCI and MSI-X set-up and a
guest-RAM allocator, so a test can act as the guest's driver without a guest OS.

The QEMU source is found at $FEMU_QEMU_SRC, else $FEMU_BUILD/qemu-src (FEMU_BUILD
defaults to <repo>/build), where the build unpacks it.
"""

import base64
import os
import shutil
import sys
import tempfile
import time

PAGE = 4096
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class QTestError(Exception):
    pass


class QEMULaunchError(QTestError):
    """QEMU exited at start (a refused property, for one); output is what it printed."""

    def __init__(self, exitcode, output, command):
        super().__init__("QEMU exited (%s) at start:\n%s" % (exitcode, output))
        self.exitcode = exitcode
        self.output = output
        self.command = command


def qemu_python_dir():
    src = os.environ.get("FEMU_QEMU_SRC") or os.path.join(
        os.environ.get("FEMU_BUILD") or os.path.join(REPO, "build"), "qemu-src")
    return os.path.join(src, "python")


def qemu_python_missing():
    """Why QEMU's Python module cannot be used, or None."""
    path = qemu_python_dir()
    if not os.path.isfile(os.path.join(path, "qemu", "machine", "qtest.py")):
        return ("QEMU's Python module is not at %s/qemu/machine: set FEMU_QEMU_SRC to an "
                "unpacked QEMU source, or FEMU_BUILD to a build directory where `make qemu` "
                "unpacked it" % path)
    return None


_qemu_qtest = None


def _qtest_module():
    """QEMU's qemu.machine.qtest, imported from the QEMU source on first use."""
    global _qemu_qtest
    if _qemu_qtest is None:
        why = qemu_python_missing()
        if why:
            raise QTestError(why)
        path = qemu_python_dir()
        if path not in sys.path:
            sys.path.insert(0, path)
        from qemu.machine import machine, qtest

        class Protocol(qtest.QEMUQtestProtocol):
            def cmds(self, lines):
                """Send several commands in one write; QEMU runs them back to back."""
                self._sock.sendall("".join(l + "\n" for l in lines).encode())
                return [self._sockfile.readline() for _ in lines]

        class Machine(qtest.QEMUQtestMachine):
            def _pre_launch(self):
                super()._pre_launch()
                # the same socket, through the protocol that can also send batches
                self._qtest = Protocol(sock=self._qtest_sock_pair[1])

            @property
            def qtest_protocol(self):
                return self._qtest

            @property
            def _base_args(self):
                # the qtest socket, with another accelerator when one is asked for
                args = super()._base_args
                accel = getattr(self, "femu_accel", "qtest")
                if accel != "qtest":
                    args[args.index("-accel") + 1] = accel
                return args

        _qemu_qtest = (Machine, machine.VMLaunchFailure)
    return _qemu_qtest


class QTest:
    """One QEMU process in qtest mode, driven over QEMU's qtest protocol, with QMP."""

    def __init__(self, qemu, args, mem_mb=256, timeout=30.0, machine="q35", accel="qtest"):
        machine_cls, launch_failure = _qtest_module()
        self.qemu = qemu
        self.accel = accel
        self.mem_size = mem_mb << 20
        self.timeout = timeout
        self._dir = tempfile.mkdtemp(prefix="femu-qtest-")
        # No guest code runs under qtest, so an empty ROM stands in for the
        # BIOS and the tests need no firmware package. Under another accelerator
        # (accel="tcg") the CPU runs: a ROM of HLT instructions stops it at once.
        bios = os.path.join(self._dir, "empty-bios.bin")
        with open(bios, "wb") as f:
            f.write((b"\0" if accel == "qtest" else b"\xf4") * (64 << 10))
        base = ["-qtest-log", "/dev/null", "-nodefaults", "-m", "%dM" % mem_mb, "-bios", bios]
        self.vm = machine_cls(qemu, args=base + list(args), name="qemu",
                              base_temp_dir=self._dir)
        self.vm.femu_accel = accel
        self.vm.set_machine(machine)
        try:
            self.vm.launch()
        except launch_failure as e:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise QEMULaunchError(e.exitcode, e.output or "", e.command) from None
        except BaseException:
            self.close()
            raise
        self.log_path = os.path.join(self.vm.log_dir, "qemu.log")
        self.vm.qtest_protocol.settimeout(timeout)

    # -- process ----------------------------------------------------------

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-4000:].decode(errors="replace")
        except (OSError, AttributeError):
            return self.vm.get_log() or ""

    def alive(self):
        return self.vm.is_running()

    @property
    def pid(self):
        """QEMU's process id (None once it has exited)."""
        return self.vm.get_pid()

    def qmp(self, cmd, args_dict=None, **args):
        """A QMP command; returns QEMU's answer ({'return': ...} or {'error': ...}).
        Keyword names have '_' turned into '-'; args_dict is passed as it is."""
        if args_dict is not None:
            return self.vm.qmp(cmd, args_dict=args_dict)
        return self.vm.qmp(cmd, **args)

    def kill(self):
        """SIGKILL, as on power loss: no shutdown of any kind."""
        self.vm.kill()

    def close(self):
        try:
            self.vm.shutdown(timeout=10)
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)

    # -- protocol ---------------------------------------------------------

    def _check(self, line, ans):
        if not ans:
            raise QTestError("QEMU closed the qtest socket (alive: %s):\n%s"
                             % (self.alive(), self.log()))
        ans = ans.rstrip("\n")
        if ans == "OK":
            return ""
        if ans.startswith("OK "):
            return ans[3:]
        raise QTestError("%r -> %r" % (line[:80], ans))

    def cmd(self, line):
        """Send one command; return the text after ``OK``."""
        try:
            return self._check(line, self.vm.qtest(line))
        except TimeoutError:
            raise QTestError("no answer from QEMU within %.0fs:\n%s"
                             % (self.timeout, self.log())) from None

    def cmds(self, lines):
        """Send several commands at once; QEMU runs them back to back, with
        no device bottom half in between. Returns the answers."""
        try:
            answers = self.vm.qtest_protocol.cmds(lines)
        except TimeoutError:
            raise QTestError("no answer from QEMU within %.0fs:\n%s"
                             % (self.timeout, self.log())) from None
        return [self._check(l, a) for l, a in zip(lines, answers)]

    # -- port I/O -----------------------------------------------------------

    def outb(self, port, v):
        self.cmd("outb 0x%x 0x%x" % (port, v))

    def outw(self, port, v):
        self.cmd("outw 0x%x 0x%x" % (port, v))

    def outl(self, port, v):
        self.cmd("outl 0x%x 0x%x" % (port, v))

    def inb(self, port):
        return int(self.cmd("inb 0x%x" % port), 16)

    def inw(self, port):
        return int(self.cmd("inw 0x%x" % port), 16)

    def inl(self, port):
        return int(self.cmd("inl 0x%x" % port), 16)

    # -- memory -------------------------------------------------------------

    def readb(self, a):
        return int(self.cmd("readb 0x%x" % a), 16)

    def readw(self, a):
        return int(self.cmd("readw 0x%x" % a), 16)

    def readl(self, a):
        return int(self.cmd("readl 0x%x" % a), 16)

    def readq(self, a):
        return int(self.cmd("readq 0x%x" % a), 16)

    def writeb(self, a, v):
        self.cmd("writeb 0x%x 0x%x" % (a, v))

    def writew(self, a, v):
        self.cmd("writew 0x%x 0x%x" % (a, v))

    def writel(self, a, v):
        self.cmd("writel 0x%x 0x%x" % (a, v))

    def writeq(self, a, v):
        self.cmd("writeq 0x%x 0x%x" % (a, v))

    def memread(self, addr, size):
        if size == 0:  # qtest's read asserts on length 0
            return b""
        data = base64.b64decode(self.cmd("b64read 0x%x 0x%x" % (addr, size)))
        if len(data) != size:
            raise QTestError("short b64read")
        return data

    def memwrite(self, addr, data):
        if not data:
            return
        self.cmd("b64write 0x%x 0x%x %s"
                 % (addr, len(data), base64.b64encode(data).decode()))

    def memset(self, addr, size, value=0):
        self.cmd("memset 0x%x 0x%x 0x%x" % (addr, size, value))

    def clock_step(self, ns=None):
        """The virtual clock ns forward, or to the next timer deadline (qtest only)."""
        return int(self.cmd("clock_step" if ns is None else "clock_step %d" % ns))


class GuestAlloc:
    """Bump allocator over guest RAM with mark/release for per-test reuse."""

    def __init__(self, start, end):
        self.start = start
        self.end = end
        self.ptr = start

    def alloc(self, size, align=PAGE):
        addr = (self.ptr + align - 1) & ~(align - 1)
        if addr + size > self.end:
            raise MemoryError("guest RAM allocator exhausted")
        self.ptr = addr + size
        return addr

    def mark(self):
        return self.ptr

    def release(self, mark):
        self.ptr = mark


# -- PCI ----------------------------------------------------------------------

PCI_COMMAND = 0x04
PCI_CMD_IO = 0x1
PCI_CMD_MEM = 0x2
PCI_CMD_MASTER = 0x4
PCI_CMD_INTX_DISABLE = 0x400
PCI_STATUS = 0x06
PCI_STATUS_CAP_LIST = 0x10
PCI_CAP_PTR = 0x34
PCI_CAP_ID_MSIX = 0x11
PCI_CAP_ID_EXP = 0x10


class PCIDevice:
    """A function on bus 0 reached through the 0xCF8/0xCFC mechanism."""

    def __init__(self, qt, devfn):
        self.qt = qt
        self.devfn = devfn
        self.bars = {}
        self.msix = None

    def _select(self, off):
        self.qt.outl(0xCF8, 0x80000000 | (self.devfn << 8) | (off & 0xFC))

    def cfg_read32(self, off):
        self._select(off)
        return self.qt.inl(0xCFC)

    def cfg_read16(self, off):
        self._select(off)
        return self.qt.inw(0xCFC + (off & 2))

    def cfg_read8(self, off):
        self._select(off)
        return self.qt.inb(0xCFC + (off & 3))

    def cfg_write32(self, off, v):
        self._select(off)
        self.qt.outl(0xCFC, v)

    def cfg_write16(self, off, v):
        self._select(off)
        self.qt.outw(0xCFC + (off & 2), v)

    def cfg_write8(self, off, v):
        self._select(off)
        self.qt.outb(0xCFC + (off & 3), v)

    @property
    def vendor_id(self):
        return self.cfg_read16(0)

    @property
    def device_id(self):
        return self.cfg_read16(2)

    @property
    def class_code(self):
        return self.cfg_read32(8) >> 8

    def capabilities(self):
        """Yield (cap id, config offset) for the standard capability list."""
        if not self.cfg_read16(PCI_STATUS) & PCI_STATUS_CAP_LIST:
            return
        off = self.cfg_read8(PCI_CAP_PTR) & 0xFC
        seen = set()
        while off and off not in seen:
            seen.add(off)
            yield self.cfg_read8(off), off
            off = self.cfg_read8(off + 1) & 0xFC

    def find_capability(self, cap_id):
        for cid, off in self.capabilities():
            if cid == cap_id:
                return off
        return None

    def assign_bars(self, mmio_alloc, io_alloc=None):
        """Size every BAR, place it, and enable decoding + bus mastering."""
        self.cfg_write16(PCI_COMMAND, 0)
        i = 0
        while i < 6:
            off = 0x10 + 4 * i
            orig = self.cfg_read32(off)
            self.cfg_write32(off, 0xFFFFFFFF)
            probe = self.cfg_read32(off)
            if probe == 0:
                i += 1
                continue
            if probe & 1:  # I/O BAR
                size = (~(probe & ~3) & 0xFFFF) + 1
                if io_alloc is not None:
                    base = io_alloc.alloc(size, max(size, 4))
                    self.cfg_write32(off, base)
                    self.bars[i] = (base, size, True)
                else:
                    self.cfg_write32(off, orig)
                i += 1
                continue
            is64 = (probe >> 1) & 3 == 2
            mask = probe & ~0xF
            if is64:
                self.cfg_write32(off + 4, 0xFFFFFFFF)
                mask |= self.cfg_read32(off + 4) << 32
                size = (~mask & 0xFFFFFFFFFFFFFFFF) + 1
            else:
                size = (~mask & 0xFFFFFFFF) + 1
            base = mmio_alloc.alloc(size, max(size, PAGE))
            self.cfg_write32(off, base & 0xFFFFFFFF)
            if is64:
                self.cfg_write32(off + 4, base >> 32)
            self.bars[i] = (base, size, False)
            i += 2 if is64 else 1
        self.cfg_write16(PCI_COMMAND, PCI_CMD_MEM | PCI_CMD_IO | PCI_CMD_MASTER)

    def bar_addr(self, i):
        return self.bars[i][0]

    def enable_bus_master(self, on=True):
        cmd = self.cfg_read16(PCI_COMMAND)
        cmd = (cmd | PCI_CMD_MASTER) if on else (cmd & ~PCI_CMD_MASTER)
        self.cfg_write16(PCI_COMMAND, cmd)

    def enable_msix(self):
        self.msix = MSIX(self)
        return self.msix


def find_pci_device(qt, class_code):
    """Return the first bus-0 function with the given 24-bit class code."""
    for dev in range(32):
        for fn in range(8):
            d = PCIDevice(qt, (dev << 3) | fn)
            if d.vendor_id == 0xFFFF:
                if fn == 0:
                    break
                continue
            if d.class_code == class_code:
                return d
            if fn == 0 and not d.cfg_read8(0x0E) & 0x80:
                break
    return None


class MSIX:
    """MSI-X table programmed so each vector's message lands in guest RAM.

    On x86 without an IOMMU a message write to a RAM address is just a DMA
    write, so a test can read the slot to see which vector fired.
    """

    def __init__(self, dev):
        self.dev = dev
        qt = dev.qt
        self.cap = dev.find_capability(PCI_CAP_ID_MSIX)
        if self.cap is None:
            raise QTestError("device has no MSI-X capability")
        ctrl = dev.cfg_read16(self.cap + 2)
        self.size = (ctrl & 0x7FF) + 1
        tbl = dev.cfg_read32(self.cap + 4)
        pba = dev.cfg_read32(self.cap + 8)
        self.table = dev.bar_addr(tbl & 7) + (tbl & ~7)
        self.pba = dev.bar_addr(pba & 7) + (pba & ~7)
        self.slots = {}
        # Enable with all functions unmasked; INTx off as MSI-X is in use.
        dev.cfg_write16(self.cap + 2, (ctrl | 0x8000) & ~0x4000)
        dev.cfg_write16(PCI_COMMAND, dev.cfg_read16(PCI_COMMAND) | PCI_CMD_INTX_DISABLE)
        self.qt = qt

    def program(self, vector, addr, data, masked=False):
        e = self.table + 16 * vector
        self.qt.writel(e, addr & 0xFFFFFFFF)
        self.qt.writel(e + 4, addr >> 32)
        self.qt.writel(e + 8, data)
        self.qt.writel(e + 12, 1 if masked else 0)
        self.slots[vector] = (addr, data)

    def mask(self, vector, masked=True):
        self.qt.writel(self.table + 16 * vector + 12, 1 if masked else 0)

    def pending(self, vector):
        return bool(self.qt.readl(self.pba + 4 * (vector // 32)) >> (vector % 32) & 1)

    def clear(self, vector):
        self.qt.writel(self.slots[vector][0], 0)

    def fired(self, vector):
        addr, data = self.slots[vector]
        return self.qt.readl(addr) == data

    def wait(self, vector, timeout=5.0):
        deadline = time.monotonic() + timeout
        while not self.fired(vector):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True
