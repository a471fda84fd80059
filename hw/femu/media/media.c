/*
 * Helpers every media model shares.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "media.h"
#include "../nand/nand.h"

#include <glib.h>

void femu_media_emit_chip_busy(const NandModel *nand, FemuMediaStatFn *emit, void *opaque)
{
    for (uint64_t i = 0; i < nand_luns(&nand->geo); i++) {
        char name[40];
        g_snprintf(name, sizeof(name), "chip%" G_GUINT64_FORMAT "_busy_ns", i);
        emit(opaque, name, nand->stats.lun_busy_ns[i]);
    }
    emit(opaque, "nand_gap_fills", nand->stats.gap_fills);
    emit(opaque, "nand_read_overtakes", nand->stats.read_overtakes);
    emit(opaque, "nand_multiplane_ops", nand->stats.multiplane_ops);
    emit(opaque, "nand_suspends", nand->stats.suspends);
    emit(opaque, "nand_read_retries", nand->stats.read_retries);
}

void femu_media_retire(FemuMedia *m, NandModel *nand, uint64_t arrival_ns)
{
    nand_retire(nand, MIN(m->last_arrival_ns, arrival_ns));
    m->last_arrival_ns = arrival_ns;
}
