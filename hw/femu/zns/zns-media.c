/*
 * zns: a zoned namespace's timing, from zns/zns-flash (zones striped over the NAND model,
 * per-zone write buffers), with optional read-ahead (sra/) in front of its reads. The zone
 * state machine is the device's; this only says when.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "../media/media.h"
#include "../sra/sra.h"
#include "../plp/plp.h"
#include "zns-flash.h"

#include <glib.h>

typedef struct ZnsMedia {
    FemuMedia parent;
    ZnsFlash *flash;
    uint64_t zone_bytes;
    Sra *sra;
    FemuReadAhead ra;
    PlpBuffer *plp;
} ZnsMedia;

static uint64_t zns_sra_read(void *opaque, uint64_t offset, uint64_t len, uint64_t now,
                             bool prefetch)
{
    ZnsMedia *m = opaque;

    return prefetch ? zns_flash_prefetch(m->flash, offset, len, now)
                    : zns_flash_read(m->flash, offset, len, now);
}

/* Where the device says zone data ends (write pointers, boundaries). */
static uint64_t zns_sra_readable(void *opaque, uint32_t nsid, uint64_t offset, uint64_t max)
{
    ZnsMedia *m = opaque;

    return m->ra.readable(m->ra.opaque, nsid, offset, max);
}

static uint64_t flash_read(ZnsMedia *m, const FemuMediaReq *req, uint64_t t)
{
    return m->sra ? sra_read(m->sra, req->nsid, req->offset, req->len, req->ns_end, t)
                  : zns_flash_read(m->flash, req->offset, req->len, t);
}

/*
 * With plp the buffer holds the data: writes go into it, reads take what it holds (a read
 * it serves entirely costs no NAND time), and programs happen when it writes data out.
 */
static uint64_t zns_submit(FemuMedia *fm, const FemuMediaReq *req)
{
    ZnsMedia *m = (ZnsMedia *)fm;
    uint64_t t = req->arrival_ns, done = t, zone = req->offset / m->zone_bytes;

    femu_media_retire(fm, zns_flash_nand(m->flash), t);
    switch (req->op) {
    case FEMU_MEDIA_READ:
        if (!m->plp || !req->read_buf ||
            plp_read(m->plp, req->offset, req->len, req->read_buf, t) < req->len) {
            done = flash_read(m, req, t);
        }
        break;
    case FEMU_MEDIA_WRITE:
    case FEMU_MEDIA_WRITE_ZEROES:
        if (!m->plp) {
            done = zns_flash_write(m->flash, req->offset, req->len, t);
        } else {
            done = plp_write(m->plp, req->offset, req->len, req->data, req->protect, t);
            if (req->fua && !req->protect) {
                done = plp_write_out_zone(m->plp, zone, done);
            }
        }
        if (m->sra) {
            sra_write(m->sra, req->nsid, t, done);
        }
        break;
    case FEMU_MEDIA_SHUTDOWN:
        done = m->plp ? plp_shutdown(m->plp, t) : zns_flash_flush(m->flash, t);
        break;
    case FEMU_MEDIA_FLUSH:
        if (!m->plp) {
            done = zns_flash_flush(m->flash, t);
        } else if (req->ns_end > req->offset) {
            /* a Flush of one namespace writes out that namespace's zones */
            done = plp_flush_range(m->plp, req->offset, req->ns_end - req->offset, t);
        } else {
            done = plp_flush(m->plp, t);
        }
        break;
    case FEMU_MEDIA_ZONE_RESET:
        if (m->plp) {
            plp_reset_zone(m->plp, zone, t);
        }
        done = zns_flash_reset_zone(m->flash, zone, t);
        if (m->sra) {
            sra_discard(m->sra, req->nsid, t, done);
        }
        break;
    case FEMU_MEDIA_ZONE_DRAIN:
        done = m->plp ? plp_drain_zone(m->plp, zone, req->len, t)
                      : zns_flash_drain_zone(m->flash, zone, t);
        break;
    case FEMU_MEDIA_DEALLOCATE:
        /* a zone reset is how zoned space is freed; the host still asked to discard */
        if (m->sra) {
            sra_discard(m->sra, req->nsid, t, t);
        }
        break;
    }
    return MAX(done, t);
}

static void zns_idle(FemuMedia *fm, uint64_t now_ns)
{
    sra_idle(((ZnsMedia *)fm)->sra, now_ns);
}

/* The capacitors flush the PLP region; the rest of the buffer and the SRAM are gone. */
static void zns_power_loss(FemuMedia *fm, uint64_t now_ns)
{
    ZnsMedia *m = (ZnsMedia *)fm;
    PlpLoss loss;

    if (m->plp) {
        plp_power_loss(m->plp, now_ns, &loss);
    }
    sra_power_loss(m->sra, now_ns);
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
    emit(opaque, "prefetch_pages_read", s->prefetch_pages_read);
    emit(opaque, "blocks_erased", s->blocks_erased);
    emit(opaque, "buffer_flushes", s->buffer_flushes);
    emit(opaque, "buffer_waits", s->buffer_waits);
    femu_media_emit_chip_busy(nand, emit, opaque);
    if (m->plp) {
        plp_emit_stats(m->plp, emit, opaque);
    }
    if (m->sra) {
        sra_emit_stats(m->sra, emit, opaque);
    }
}

static void zns_destroy(FemuMedia *fm)
{
    ZnsMedia *m = (ZnsMedia *)fm;
    sra_free(m->sra);
    plp_free(m->plp);
    zns_flash_free(m->flash);
    g_free(m);
}

static const FemuMediaOps zns_ops = {
    .name = "zns",
    .submit = zns_submit,
    .power_loss = zns_power_loss,
    .stats = zns_stats,
    .destroy = zns_destroy,
};

/* With read-ahead, idle streams time out while the device is quiet. */
static const FemuMediaOps zns_sra_ops = {
    .name = "zns",
    .submit = zns_submit,
    .idle = zns_idle,
    .power_loss = zns_power_loss,
    .stats = zns_stats,
    .destroy = zns_destroy,
};

FemuMedia *femu_media_zns_new(const ZnsFlashConfig *cfg, const FemuReadAhead *ra,
                              const PlpConfig *plp, char **err)
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
    if (ra && ra->cfg) {
        SraBackend be = { .opaque = m, .read = zns_sra_read, .readable = zns_sra_readable };
        g_assert(ra->readable);
        m->ra = *ra;
        m->sra = sra_new(ra->cfg, &be, err);
        if (!m->sra) {
            zns_destroy(&m->parent);
            return NULL;
        }
        m->parent.ops = &zns_sra_ops;
    }
    if (plp) {
        PlpConfig c = *plp;
        c.flash = flash;
        m->plp = plp_new(&c, err);
        if (!m->plp) {
            zns_destroy(&m->parent);
            return NULL;
        }
    }
    return &m->parent;
}

PlpBuffer *femu_media_zns_plp(FemuMedia *fm)
{
    return fm && fm->ops->submit == zns_submit ? ((ZnsMedia *)fm)->plp : NULL;
}
