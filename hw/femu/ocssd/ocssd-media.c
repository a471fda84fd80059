/*
 * whitebox: a namespace's timing, from ocssd/ocssd-flash (chunks on the NAND model, per-PU
 * write caches). The chunk rules are the device's; this only says when.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "../media/media.h"
#include "ocssd-flash.h"

#include <glib.h>

typedef struct OcMedia {
    FemuMedia parent;
    OcFlash *flash;
    uint32_t sector_bytes;
    uint64_t clba;              /* sectors per chunk */
} OcMedia;

typedef uint64_t OcFlashRunFn(OcFlash *f, uint64_t chunk, uint64_t sec, uint64_t n,
                              uint64_t now_ns);

/* A byte range of the namespace, chunk by chunk. */
static uint64_t each_chunk(OcMedia *m, OcFlashRunFn *fn, const FemuMediaReq *req)
{
    uint64_t sec = req->offset / m->sector_bytes, end = sec + req->len / m->sector_bytes;
    uint64_t done = req->arrival_ns;

    while (sec < end) {
        uint64_t chunk = sec / m->clba, in = sec % m->clba, n = MIN(end - sec, m->clba - in);
        uint64_t t = fn(m->flash, chunk, in, n, req->arrival_ns);   /* once: MAX is glib's */
        done = MAX(done, t);
        sec += n;
    }
    return done;
}

static uint64_t erase_run(OcFlash *f, uint64_t chunk, uint64_t sec G_GNUC_UNUSED,
                          uint64_t n G_GNUC_UNUSED, uint64_t now)
{
    return oc_flash_erase(f, chunk, now);
}

static uint64_t oc_submit(FemuMedia *fm, const FemuMediaReq *req)
{
    OcMedia *m = (OcMedia *)fm;

    femu_media_retire(fm, oc_flash_nand(m->flash), req->arrival_ns);
    switch (req->op) {
    case FEMU_MEDIA_READ:
        return each_chunk(m, oc_flash_read, req);
    case FEMU_MEDIA_WRITE:
    case FEMU_MEDIA_WRITE_ZEROES:
        return each_chunk(m, oc_flash_write, req);
    case FEMU_MEDIA_ZONE_RESET:
        return each_chunk(m, erase_run, req);
    case FEMU_MEDIA_FLUSH:
    case FEMU_MEDIA_SHUTDOWN:
    case FEMU_MEDIA_ZONE_DRAIN:
        return MAX(oc_flash_flush(m->flash, req->arrival_ns), req->arrival_ns);
    case FEMU_MEDIA_DEALLOCATE:
        break;      /* chunks are freed by a reset */
    }
    return req->arrival_ns;
}

static void oc_stats(FemuMedia *fm, FemuMediaStatFn *emit, void *opaque)
{
    OcMedia *m = (OcMedia *)fm;
    const OcFlashStats *s = oc_flash_stats(m->flash);

    emit(opaque, "units_programmed", s->units_programmed);
    emit(opaque, "pages_read", s->pages_read);
    emit(opaque, "blocks_erased", s->blocks_erased);
    emit(opaque, "cache_read_hits", s->cache_read_hits);
    emit(opaque, "cache_waits", s->cache_waits);
    femu_media_emit_chip_busy(oc_flash_nand(m->flash), emit, opaque);
}

static void oc_destroy(FemuMedia *fm)
{
    OcMedia *m = (OcMedia *)fm;
    oc_flash_free(m->flash);
    g_free(m);
}

static const FemuMediaOps oc_ops = {
    .name = "ocssd",
    .submit = oc_submit,
    .stats = oc_stats,
    .destroy = oc_destroy,
};

FemuMedia *femu_media_ocssd_new(const OcFlashConfig *cfg, uint64_t clba, char **err)
{
    OcFlash *flash = oc_flash_new(cfg, err);
    OcMedia *m;

    if (!flash) {
        return NULL;
    }
    m = g_new0(OcMedia, 1);
    m->parent.ops = &oc_ops;
    m->flash = flash;
    m->sector_bytes = cfg->sector_bytes;
    m->clba = clba;
    return &m->parent;
}
