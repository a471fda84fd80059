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
}
