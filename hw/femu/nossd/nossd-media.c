/*
 * nossd: a namespace with no media model, the fastest path.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
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

static uint64_t nossd_submit(FemuMedia *m, const FemuMediaReq *req)
{
    (void)m;
    return req->arrival_ns;
}

static void nossd_destroy(FemuMedia *m)
{
    g_free(m);
}

static const FemuMediaOps nossd_ops = {
    .name = "nossd",
    .submit = nossd_submit,
    .destroy = nossd_destroy,
};

FemuMedia *femu_media_nossd_new(void)
{
    FemuMedia *m = g_new0(FemuMedia, 1);
    m->ops = &nossd_ops;
    return m;
}
