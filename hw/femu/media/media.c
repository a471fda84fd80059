/*
 * Helpers every media model shares.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "media.h"
#include "../nand/nand.h"
#include "../stats/io-counters.h"

#include <glib.h>

void femu_media_emit_chip_busy(const NandModel *nand, FemuMediaStatFn *emit, void *opaque)
{
    for (uint64_t i = 0; i < nand_luns(&nand->geo); i++) {
        char name[40];
        g_snprintf(name, sizeof(name), "chip%" G_GUINT64_FORMAT "_busy_ns", i);
        emit(opaque, name, nand->stats.lun_busy_ns[i]);
    }
    emit(opaque, "nand_read_busy_ns", nand->stats.op_busy_ns[NAND_OP_READ]);
    emit(opaque, "nand_program_busy_ns", nand->stats.op_busy_ns[NAND_OP_PROGRAM]);
    emit(opaque, "nand_erase_busy_ns", nand->stats.op_busy_ns[NAND_OP_ERASE]);
    emit(opaque, "nand_gap_fills", nand->stats.gap_fills);
    emit(opaque, "nand_read_overtakes", nand->stats.read_overtakes);
    emit(opaque, "nand_multiplane_ops", nand->stats.multiplane_ops);
    emit(opaque, "nand_suspends", nand->stats.suspends);
    emit(opaque, "nand_read_retries", nand->stats.read_retries);
}

void femu_media_put_data(void *media, uint64_t offset, const void *src, uint64_t len)
{
    FemuMedia *m = media;

    m->wb_data.put(m->wb_data.opaque, m->backend_base + offset, src, len);
}

void femu_media_retire(FemuMedia *m, NandModel *nand, uint64_t arrival_ns)
{
    nand_retire(nand, MIN(m->last_arrival_ns, arrival_ns));
    m->last_arrival_ns = arrival_ns;
}

void femu_stat_prefixed(void *opaque, const char *name, uint64_t value)
{
    FemuStatPrefix *p = opaque;
    g_autofree char *full = g_strconcat(p->prefix, name, NULL);

    p->emit(p->opaque, full, value);
}

void femu_io_counters_emit(const IoCounters *io, FemuMediaStatFn *emit, void *opaque)
{
    emit(opaque, "host_read_commands", io->read_cmds);
    emit(opaque, "host_write_commands", io->write_cmds);
    emit(opaque, "host_bytes_read", io->bytes_read);
    emit(opaque, "host_bytes_written", io->bytes_written);
    emit(opaque, "media_reads", io->media_reads);
    emit(opaque, "media_read_ns", io->media_read_ns);
}

