/*
 * zns: a zoned namespace's timing, from zns/zns-flash (zones striped over the NAND model,
 * per-zone write buffers). The zone state machine is the device's; this only says when.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "../media/media.h"
#include "zns-flash.h"

#include <glib.h>

typedef struct ZnsMedia {
    FemuMedia parent;
    ZnsFlash *flash;
    uint64_t zone_bytes;
} ZnsMedia;

static uint64_t zns_submit(FemuMedia *fm, const FemuMediaReq *req)
{
    ZnsMedia *m = (ZnsMedia *)fm;
    uint64_t t = req->arrival_ns, done = t;

    switch (req->op) {
    case FEMU_MEDIA_READ:
        done = zns_flash_read(m->flash, req->offset, req->len, t);
        break;
    case FEMU_MEDIA_WRITE:
    case FEMU_MEDIA_WRITE_ZEROES:
        done = zns_flash_write(m->flash, req->offset, req->len, t);
        break;
    case FEMU_MEDIA_FLUSH:
        done = zns_flash_flush(m->flash, t);
        break;
    case FEMU_MEDIA_ZONE_RESET:
        done = zns_flash_reset_zone(m->flash, req->offset / m->zone_bytes, t);
        break;
    case FEMU_MEDIA_ZONE_DRAIN:
        done = zns_flash_drain_zone(m->flash, req->offset / m->zone_bytes, t);
        break;
    case FEMU_MEDIA_DEALLOCATE:
        break;      /* a zone reset is how zoned space is freed */
    }
    return MAX(done, t);
}

static void zns_stats(FemuMedia *fm, FemuMediaStatFn *emit, void *opaque)
{
    ZnsMedia *m = (ZnsMedia *)fm;
    const ZnsFlashStats *s = zns_flash_stats(m->flash);
    NandModel *nand = zns_flash_nand(m->flash);

    emit(opaque, "buffer_read_hits", s->buffer_read_hits);
    emit(opaque, "pages_programmed", s->pages_programmed);
    emit(opaque, "pad_pages_programmed", s->pad_pages_programmed);
    emit(opaque, "pages_read", s->pages_read);
    emit(opaque, "blocks_erased", s->blocks_erased);
    emit(opaque, "buffer_flushes", s->buffer_flushes);
    emit(opaque, "buffer_waits", s->buffer_waits);
    femu_media_emit_chip_busy(nand, emit, opaque);
}

static void zns_destroy(FemuMedia *fm)
{
    ZnsMedia *m = (ZnsMedia *)fm;
    zns_flash_free(m->flash);
    g_free(m);
}

static const FemuMediaOps zns_ops = {
    .name = "zns",
    .submit = zns_submit,
    .stats = zns_stats,
    .destroy = zns_destroy,
};

FemuMedia *femu_media_zns_new(const ZnsFlashConfig *cfg, char **err)
{
    ZnsFlash *flash = zns_flash_new(cfg, err);
    ZnsMedia *m;

    if (!flash) {
        return NULL;
    }
    m = g_new0(ZnsMedia, 1);
    m->parent.ops = &zns_ops;
    m->flash = flash;
    m->zone_bytes = cfg->zone_bytes;
    return &m->parent;
}
