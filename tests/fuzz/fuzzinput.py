"""Inputs of QEMU's generic fuzzer (tests/qtest/fuzz/generic_fuzz.c), written and read.

An input is a list of operations separated by b"FUZZ"; the first byte of each is its
opcode (modulo the number of operations), the rest its arguments, packed as the C structs
of generic_fuzz.c are (native x86-64 layout, padding included). The guest's RAM holds
nothing of its own: whatever the device reads by DMA (commands, PRP lists, data) is
filled, on first touch within one operation, from the DMA patterns added so far, taken
in turn, one per DMA access.
"""

import struct

SEPARATOR = b"FUZZ"

OP_IN, OP_OUT, OP_READ, OP_WRITE, OP_PCI_READ, OP_PCI_WRITE, OP_DISABLE_PCI, \
    OP_ADD_DMA_PATTERN, OP_CLEAR_DMA_PATTERNS, OP_CLOCK_STEP = range(10)
OP_NAMES = ["in", "out", "read", "write", "pci_read", "pci_write", "disable_pci",
            "add_dma_pattern", "clear_dma_patterns", "clock_step"]

# Access sizes of op_read/op_write (Byte, Word, Long, Quad) and of the PCI ops.
SIZES = {1: 0, 2: 1, 4: 2, 8: 3}


class Input:
    """Operations in the order they are added; bytes() is the fuzzer's input."""

    def __init__(self):
        self.ops = []

    def _op(self, code, args=b""):
        op = bytes([code]) + args
        if SEPARATOR in op:
            raise ValueError("operation %s holds the separator %r: %s"
                             % (OP_NAMES[code], SEPARATOR, op.hex()))
        self.ops.append(op)

    def mmio_write(self, offset, value, size=4, region=0):
        """A write into the region-th MMIO region of the fuzzed device (in address order)."""
        self._op(OP_WRITE, struct.pack("<BBxxIQ", SIZES[size], region, offset, value))

    def mmio_read(self, offset, size=4, region=0):
        self._op(OP_READ, struct.pack("<BBxxI", SIZES[size], region, offset))

    def pci_write(self, offset, value, size=4):
        self._op(OP_PCI_WRITE, struct.pack("<BBBxI", SIZES[size], 0, offset, value))

    def pci_read(self, offset, size=4):
        self._op(OP_PCI_READ, struct.pack("<BBB", SIZES[size], 0, offset))

    def dma_pattern(self, data, index=0, stride=0):
        """Adds a pattern: data repeated over a DMA read, byte `index` growing by `stride`
        with each repetition (e.g. a table of consecutive addresses)."""
        assert data
        self._op(OP_ADD_DMA_PATTERN, struct.pack("<BB", index, stride) + bytes(data))

    def clear_dma_patterns(self):
        self._op(OP_CLEAR_DMA_PATTERNS)

    def clock_step(self):
        """The virtual clock to the next timer deadline."""
        self._op(OP_CLOCK_STEP)

    def bytes(self):
        return SEPARATOR.join(self.ops)


def parse(data):
    """The operations of an input as (name, argument bytes), as generic_fuzz.c reads them."""
    ops = []
    while data:
        at = data.find(SEPARATOR)
        op, data = (data, b"") if at < 0 else (data[:at], data[at + len(SEPARATOR):])
        if op:
            ops.append((OP_NAMES[op[0] % len(OP_NAMES)], op[1:]))
    return ops
