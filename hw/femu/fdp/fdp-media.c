/*
 * fdp: the media model of Flexible Data Placement namespaces, the FTL of fdp-ftl.c on the
 * shared NAND model. Byte ranges become logical pages as in the blackbox model; a write goes
 * to the reclaim group and handle the request carries (resolved by the device).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "../ftl/write-buffer.h"
#include "../media/media.h"
#include "fdp-ftl.h"

#include <glib.h>
#include <stdarg.h>
#include <stdio.h>

typedef struct FdpMedia {
    FemuMedia parent;
    FdpFtl *ftl;
    uint64_t page_bytes;
    FtlWb *wb;          /* write buffer, or NULL */
} FdpMedia;

/* A buffered unit's placement: reclaim group and handle. */
static uint64_t place_tag(uint32_t rg, uint32_t ruh)
{
    return (uint64_t)rg << 32 | ruh;
}

static uint64_t wb_program(void *opaque, const uint64_t *units, uint32_t n, uint64_t tag,
                           uint64_t now)
{
    return fdp_ftl_write_list(((FdpMedia *)opaque)->ftl, units, n, tag >> 32, (uint32_t)tag,
                              now);
}

static uint64_t wb_read(void *opaque, uint64_t offset, uint64_t len, uint64_t now)
{
    FdpMedia *m = opaque;
    uint64_t pb = m->page_bytes, first = offset / pb;

    return fdp_ftl_read(m->ftl, first, (offset + len + pb - 1) / pb - first, now);
}

static uint64_t fdp_submit(FemuMedia *fm, const FemuMediaReq *req)
{
    FdpMedia *m = (FdpMedia *)fm;
    uint64_t pb = m->page_bytes, end = req->offset + req->len;
    uint64_t first = req->offset / pb, last = (end + pb - 1) / pb;     /* touched pages */
    uint64_t whole_first = (req->offset + pb - 1) / pb, whole_last = end / pb;
    uint64_t now = req->arrival_ns, done = now, t;

    femu_media_retire(fm, fdp_ftl_nand(m->ftl), now);
    switch (req->op) {
    case FEMU_MEDIA_READ:
        fdp_ftl_count_host_bytes_read(m->ftl, req->len);
        done = m->wb ? ftl_wb_read(m->wb, req->offset, req->len, req->read_buf, now)
                     : fdp_ftl_read(m->ftl, first, last - first, now);
        break;
    case FEMU_MEDIA_WRITE:
        fdp_ftl_count_host_bytes_written(m->ftl, req->rg, req->len);
        done = m->wb ? ftl_wb_write(m->wb, req->offset, req->len, req->data,
                                    place_tag(req->rg, req->ruh), req->fua, now)
                     : fdp_ftl_write(m->ftl, first, last - first, req->rg, req->ruh, now);
        break;
    case FEMU_MEDIA_WRITE_ZEROES:
        if (m->wb) {
            ftl_wb_drop(m->wb, req->offset, req->len);      /* cleared now, not buffered */
        }
        /* pages partly covered keep other data: they are rewritten, whole ones dropped */
        if (first < whole_first) {
            t = fdp_ftl_write(m->ftl, first, 1, req->rg, req->ruh, now);
            done = MAX(done, t);
        }
        if (whole_last < last && whole_last >= whole_first) {
            t = fdp_ftl_write(m->ftl, whole_last, 1, req->rg, req->ruh, now);
            done = MAX(done, t);
        }
        G_GNUC_FALLTHROUGH;
    case FEMU_MEDIA_DEALLOCATE:
        if (m->wb && req->op == FEMU_MEDIA_DEALLOCATE) {
            ftl_wb_drop(m->wb, req->offset, req->len);
        }
        if (whole_last > whole_first) {
            t = fdp_ftl_trim(m->ftl, whole_first, whole_last - whole_first, now);
            done = MAX(done, t);
        }
        break;
    case FEMU_MEDIA_FLUSH:
        done = m->wb ? ftl_wb_flush(m->wb, now) : fdp_ftl_flush(m->ftl, now);
        break;
    case FEMU_MEDIA_SHUTDOWN:
        if (m->wb) {
            ftl_wb_shutdown(m->wb, now);
        }
        done = fdp_ftl_flush(m->ftl, now);
        break;
    case FEMU_MEDIA_ZONE_RESET:
    case FEMU_MEDIA_ZONE_DRAIN:
        break;
    }
    return MAX(done, now);
}

static void fdp_idle(FemuMedia *fm, uint64_t now_ns)
{
    FdpMedia *m = (FdpMedia *)fm;

    if (m->wb) {
        ftl_wb_idle(m->wb, now_ns);
    }
    fdp_ftl_idle(m->ftl, now_ns);
}

static void fdp_power_loss(FemuMedia *fm, uint64_t now_ns)
{
    FdpMedia *m = (FdpMedia *)fm;

    if (m->wb) {
        ftl_wb_power_loss(m->wb, now_ns);
    }
}

static uint64_t milli(double x)
{
    return (uint64_t)(x * 1000 + 0.5);
}

/* A statistic whose name has numbers in it (a handle's, a group's). */
static void G_GNUC_PRINTF(4, 5) emitf(FemuMediaStatFn *emit, void *opaque, uint64_t value,
                                      const char *fmt, ...)
{
    char name[64];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    emit(opaque, name, value);
}

static void fdp_stats(FemuMedia *fm, FemuMediaStatFn *emit, void *opaque)
{
    FdpMedia *m = (FdpMedia *)fm;
    const FdpFtlStats *s = fdp_ftl_stats(m->ftl);
    const NandModel *nand = fdp_ftl_nand(m->ftl);
    const FdpFtlConfig *c = fdp_ftl_config(m->ftl);

    emit(opaque, "host_pages_written", s->host_pages_written);
    emit(opaque, "host_pages_read", s->host_pages_read);
    emit(opaque, "unmapped_pages_read", s->unmapped_pages_read);
    emit(opaque, "fdp_host_bytes_written", s->host_bytes_written);
    emit(opaque, "fdp_host_bytes_read", s->host_bytes_read);
    emit(opaque, "nand_pages_written", s->nand_pages_written);
    emit(opaque, "waf_milli", milli(fdp_ftl_waf(m->ftl)));
    emit(opaque, "gc_runs", s->gc_runs);
    emit(opaque, "gc_forced_runs", s->gc_forced_runs);
    emit(opaque, "gc_pages_moved", s->gc_pages_moved);
    emit(opaque, "blocks_erased", s->blocks_erased);
    emit(opaque, "pages_trimmed", s->pages_trimmed);
    emit(opaque, "fdp_rus_erased", s->rus_erased);
    emit(opaque, "fdp_pages_skipped", s->pages_skipped);
    emit(opaque, "fdp_pages_redirected", s->pages_redirected);
    emit(opaque, "fdp_free_rus", s->free_rus);
    emit(opaque, "fdp_total_rus", s->total_rus);
    emit(opaque, "fdp_ru_pages", fdp_ftl_ru_pages(m->ftl));
    for (uint32_t h = 0; h < c->nruh; h++) {
        FdpRuhStats r;
        fdp_ftl_ruh_stats(m->ftl, h, &r);
        emitf(emit, opaque, r.host_pages_written, "ruh%u_host_pages_written", h);
        emitf(emit, opaque, r.gc_pages_moved, "ruh%u_gc_pages_moved", h);
        emitf(emit, opaque, milli(fdp_ftl_ruh_waf(m->ftl, h)), "ruh%u_waf_milli", h);
        emitf(emit, opaque, r.rus_in_use, "ruh%u_rus_in_use", h);
        emitf(emit, opaque, r.valid_pages, "ruh%u_valid_pages", h);
    }
    for (uint32_t g = 0; g < c->nrg; g++) {
        FdpRgStats r;
        fdp_ftl_rg_stats(m->ftl, g, &r);
        emitf(emit, opaque, r.free_rus, "rg%u_free_rus", g);
        emitf(emit, opaque, r.gc_runs, "rg%u_gc_runs", g);
        emitf(emit, opaque, r.rus_erased, "rg%u_rus_erased", g);
        for (uint32_t h = 0; h < c->nruh; h++) {
            emitf(emit, opaque, fdp_ftl_ru_avail(m->ftl, g, h), "rg%u_ruh%u_avail_pages", g, h);
        }
    }
    emit(opaque, "nand_reads", nand->stats.reads);
    emit(opaque, "nand_programs", nand->stats.programs);
    emit(opaque, "nand_erases", nand->stats.erases);
    femu_media_emit_chip_busy(nand, emit, opaque);
    if (m->wb) {
        ftl_wb_emit_stats(m->wb, emit, opaque);
    }
}

static void fdp_destroy(FemuMedia *fm)
{
    FdpMedia *m = (FdpMedia *)fm;
    ftl_wb_free(m->wb);
    fdp_ftl_free(m->ftl);
    g_free(m);
}

static const FemuMediaOps fdp_ops = {
    .name = "fdp",
    .submit = fdp_submit,
    .idle = fdp_idle,
    .power_loss = fdp_power_loss,
    .stats = fdp_stats,
    .destroy = fdp_destroy,
};

FemuMedia *femu_media_fdp_new(const FdpFtlConfig *cfg, const FtlWbConfig *wb,
                              const FemuWbData *data, char **err)
{
    FdpFtl *ftl = fdp_ftl_new(cfg, err);
    FdpMedia *m;

    if (!ftl) {
        return NULL;
    }
    m = g_new0(FdpMedia, 1);
    m->parent.ops = &fdp_ops;
    m->ftl = ftl;
    m->page_bytes = nand_page_bytes(&cfg->geo);
    m->parent.page_bytes = m->page_bytes;
    if (wb) {
        FtlWbSink sink = { .opaque = m, .program = wb_program, .read = wb_read };

        m->wb = ftl_wb_for_media(&m->parent, fdp_ftl_nand(ftl), 1, wb, &sink, data, err);
        if (!m->wb) {
            fdp_destroy(&m->parent);
            return NULL;
        }
    }
    return &m->parent;
}

FdpFtl *femu_media_fdp_ftl(FemuMedia *fm)
{
    return fm && fm->ops == &fdp_ops ? ((FdpMedia *)fm)->ftl : NULL;
}
