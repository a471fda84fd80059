/*
 * Host I/O counters as the SMART / Health log reports them, and the model's read latency.
 * QEMU-free.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_IO_COUNTERS_H
#define FEMU_IO_COUNTERS_H

#include <stdint.h>

typedef struct IoCounters {
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t read_cmds;
    uint64_t write_cmds;
    /* reads the media model timed, and the sum of their model latencies (completion -
       arrival): the device's own read latency, whatever the host adds */
    uint64_t media_reads;
    uint64_t media_read_ns;
} IoCounters;

/*
 * SMART "Data Units Read/Written": thousands of 512-byte units, rounded up, so that 1 means
 * 1..1000 units and 0 means nothing was transferred.
 */
static inline uint64_t io_counters_data_units(uint64_t bytes)
{
    uint64_t units_512 = bytes / 512 + (bytes % 512 != 0);
    return units_512 / 1000 + (units_512 % 1000 != 0);
}

static inline void io_counters_add(IoCounters *sum, const IoCounters *c)
{
    sum->bytes_read += c->bytes_read;
    sum->bytes_written += c->bytes_written;
    sum->read_cmds += c->read_cmds;
    sum->write_cmds += c->write_cmds;
    sum->media_reads += c->media_reads;
    sum->media_read_ns += c->media_read_ns;
}

#endif
