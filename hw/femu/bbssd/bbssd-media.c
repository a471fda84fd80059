/*
 * blackbox: a conventional SSD, the FTL of bbssd/ on the shared NAND model. Byte ranges
 * become logical pages; a partial page costs a whole page, as in FEMU. With a write
 * buffer, writes, reads and flushes go through it (ftl/write-buffer.h) and only what it
 * writes out reaches the FTL.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "../media/media.h"
#include "../ftl/write-buffer.h"
#include "../sra/sra.h"
#include "ftl.h"

#include <glib.h>

typedef struct BbssdMedia {
    FemuMedia parent;
    Ftl *ftl;
    uint64_t page_bytes;
    Sra *sra;           /* read-ahead, or NULL */
    FtlWb *wb;          /* write buffer, or NULL */
    const FemuMediaReq *req;    /* the request being served (for the buffer's reads) */
} BbssdMedia;

/* Byte ranges to the pages they touch. */
static uint64_t bbssd_sra_read(void *opaque, uint64_t offset, uint64_t len, uint64_t now,
                               bool prefetch)
{
    BbssdMedia *m = opaque;
    uint64_t pb = m->page_bytes, first = offset / pb, last = (offset + len + pb - 1) / pb;

    return prefetch ? ftl_prefetch(m->ftl, first, last - first, now)
                    : ftl_read(m->ftl, first, last - first, now);
}

/* Only mapped pages are read ahead. */
static uint64_t bbssd_sra_readable(void *opaque, uint32_t nsid G_GNUC_UNUSED,
                                   uint64_t offset, uint64_t max)
{
    BbssdMedia *m = opaque;

    return ftl_mapped_run(m->ftl, offset / m->page_bytes, max / m->page_bytes) *
           m->page_bytes;
}

/* [offset, offset + len) of req from flash (through read-ahead when there is one). */
static uint64_t flash_read(BbssdMedia *m, const FemuMediaReq *req, uint64_t offset,
                           uint64_t len)
{
    uint64_t pb = m->page_bytes, first = offset / pb, last = (offset + len + pb - 1) / pb;
    uint64_t hits, done;

    if (!m->sra) {
        return ftl_read(m->ftl, first, last - first, req->arrival_ns);
    }
    hits = sra_totals(m->sra)->hits;
    done = sra_read(m->sra, req->nsid, offset, len, req->ns_end, req->arrival_ns);
    ftl_cached_read(m->ftl, sra_totals(m->sra)->hits - hits, req->arrival_ns);
    return done;
}

static uint64_t wb_program(void *opaque, const uint64_t *units, uint32_t n,
                           uint64_t tag G_GNUC_UNUSED, uint64_t now)
{
    return ftl_write_list(((BbssdMedia *)opaque)->ftl, units, n, now);
}

static uint64_t wb_read(void *opaque, uint64_t offset, uint64_t len, uint64_t now G_GNUC_UNUSED)
{
    BbssdMedia *m = opaque;
    return flash_read(m, m->req, offset, len);
}

static uint64_t bbssd_submit(FemuMedia *fm, const FemuMediaReq *req)
{
    BbssdMedia *m = (BbssdMedia *)fm;
    uint64_t pb = m->page_bytes, end = req->offset + req->len;
    uint64_t first = req->offset / pb, last = (end + pb - 1) / pb;     /* touched pages */
    uint64_t whole_first = (req->offset + pb - 1) / pb, whole_last = end / pb;
    uint64_t done = req->arrival_ns;

    femu_media_retire(fm, ftl_nand(m->ftl), req->arrival_ns);
    m->req = req;
    switch (req->op) {
    case FEMU_MEDIA_READ:
        done = m->wb ? ftl_wb_read(m->wb, req->offset, req->len, req->read_buf,
                                   req->arrival_ns)
                     : flash_read(m, req, req->offset, req->len);
        break;
    case FEMU_MEDIA_WRITE:
        if (m->wb) {
            done = ftl_wb_write(m->wb, req->offset, req->len, req->data, 0, req->fua,
                                req->arrival_ns);
            break;
        }
        done = ftl_write(m->ftl, first, last - first, req->arrival_ns);
        break;
    case FEMU_MEDIA_WRITE_ZEROES:
        if (m->wb) {
            ftl_wb_drop(m->wb, req->offset, req->len);      /* cleared now, not buffered */
        }
        /* pages partly covered keep other data: they are rewritten */
        if (first < whole_first) {
            uint64_t t = ftl_write(m->ftl, first, 1, req->arrival_ns);  /* glib MAX: twice */
            done = MAX(done, t);
        }
        if (whole_last < last && whole_last >= whole_first) {
            uint64_t t = ftl_write(m->ftl, whole_last, 1, req->arrival_ns);
            done = MAX(done, t);
        }
        /* whole pages are deallocated */
        G_GNUC_FALLTHROUGH;
    case FEMU_MEDIA_DEALLOCATE:
        if (m->wb && req->op == FEMU_MEDIA_DEALLOCATE) {
            ftl_wb_drop(m->wb, req->offset, req->len);
        }
        if (whole_last > whole_first) {
            uint64_t t = ftl_trim(m->ftl, whole_first, whole_last - whole_first,
                                  req->arrival_ns);
            done = MAX(done, t);
        }
        break;
    case FEMU_MEDIA_FLUSH:
        done = m->wb ? ftl_wb_flush(m->wb, req->arrival_ns) : ftl_flush(m->ftl, req->arrival_ns);
        break;
    case FEMU_MEDIA_SHUTDOWN:
        if (m->wb) {
            ftl_wb_shutdown(m->wb, req->arrival_ns);
        }
        done = ftl_flush(m->ftl, req->arrival_ns);
        break;
    case FEMU_MEDIA_ZONE_RESET:
    case FEMU_MEDIA_ZONE_DRAIN:
        break;      /* no zones on a conventional drive */
    }
    if (m->sra) {
        if (req->op == FEMU_MEDIA_WRITE || req->op == FEMU_MEDIA_WRITE_ZEROES) {
            sra_write(m->sra, req->nsid, req->arrival_ns, done);
        } else if (req->op == FEMU_MEDIA_DEALLOCATE) {
            sra_discard(m->sra, req->nsid, req->arrival_ns, done);
        }
    }
    m->req = NULL;
    return MAX(done, req->arrival_ns);
}

static void bbssd_idle(FemuMedia *fm, uint64_t now_ns)
{
    BbssdMedia *m = (BbssdMedia *)fm;

    if (m->wb) {
        ftl_wb_idle(m->wb, now_ns);
    }
    ftl_idle(m->ftl, now_ns);
    if (m->sra) {
        sra_idle(m->sra, now_ns);
    }
}

static void bbssd_power_loss(FemuMedia *fm, uint64_t now_ns)
{
    BbssdMedia *m = (BbssdMedia *)fm;

    if (m->wb) {
        ftl_wb_power_loss(m->wb, now_ns);
    }
    sra_power_loss(m->sra, now_ns);
}

static void bbssd_stats(FemuMedia *fm, FemuMediaStatFn *emit, void *opaque)
{
    BbssdMedia *m = (BbssdMedia *)fm;
    const FtlStats *s = ftl_stats(m->ftl);
    const NandModel *nand = ftl_nand(m->ftl);

    emit(opaque, "host_pages_written", s->host_pages_written);
    emit(opaque, "host_pages_read", s->host_pages_read);
    emit(opaque, "unmapped_pages_read", s->unmapped_pages_read);
    emit(opaque, "prefetch_pages_read", s->prefetch_pages_read);
    emit(opaque, "nand_pages_written", s->nand_pages_written);
    emit(opaque, "waf_milli", (uint64_t)(ftl_waf(m->ftl) * 1000 + 0.5));
    emit(opaque, "gc_runs", s->gc_runs);
    emit(opaque, "gc_forced_runs", s->gc_forced_runs);
    emit(opaque, "gc_bg_ops", s->gc_bg_ops);
    emit(opaque, "gc_read_overtakes", s->gc_read_overtakes);
    emit(opaque, "gc_pages_moved", s->gc_pages_moved);
    emit(opaque, "blocks_erased", s->blocks_erased);
    emit(opaque, "pages_trimmed", s->pages_trimmed);
    emit(opaque, "free_lines", s->free_lines);
    emit(opaque, "total_lines", s->total_lines);
    emit(opaque, "nand_reads", nand->stats.reads);
    emit(opaque, "nand_programs", nand->stats.programs);
    emit(opaque, "nand_erases", nand->stats.erases);
    femu_media_emit_chip_busy(nand, emit, opaque);
    if (m->sra) {
        sra_emit_stats(m->sra, emit, opaque);
    }
    if (m->wb) {
        ftl_wb_emit_stats(m->wb, emit, opaque);
    }
}

static void bbssd_hint(FemuMedia *fm, FemuMediaOp op, uint64_t offset, uint64_t len)
{
    BbssdMedia *m = (BbssdMedia *)fm;
    uint64_t first = offset / m->page_bytes;

    if (op == FEMU_MEDIA_READ || op == FEMU_MEDIA_WRITE) {
        ftl_hint(m->ftl, first, (offset + len + m->page_bytes - 1) / m->page_bytes - first,
                 op == FEMU_MEDIA_WRITE);
    }
}

static void bbssd_destroy(FemuMedia *fm)
{
    BbssdMedia *m = (BbssdMedia *)fm;
    ftl_wb_free(m->wb);
    sra_free(m->sra);
    ftl_free(m->ftl);
    g_free(m);
}

static const FemuMediaOps bbssd_ops = {
    .name = "blackbox",
    .submit = bbssd_submit,
    .idle = bbssd_idle,
    .power_loss = bbssd_power_loss,
    .stats = bbssd_stats,
    .hint = bbssd_hint,
    .destroy = bbssd_destroy,
};

Ftl *femu_media_bbssd_ftl(FemuMedia *fm)
{
    return fm && fm->ops == &bbssd_ops ? ((BbssdMedia *)fm)->ftl : NULL;
}

FemuMedia *femu_media_bbssd_new(const FtlConfig *cfg, const FemuReadAhead *ra,
                                const FtlWbConfig *wb, const FemuWbData *data, char **err)
{
    Ftl *ftl = ftl_new(cfg, err);
    BbssdMedia *m;

    if (!ftl) {
        return NULL;
    }
    m = g_new0(BbssdMedia, 1);
    m->parent.ops = &bbssd_ops;
    m->ftl = ftl;
    m->page_bytes = ftl_unit_bytes(cfg);     /* the FTL's mapping unit */
    m->parent.page_bytes = m->page_bytes;
    if (ra && ra->cfg) {
        SraBackend be = { .opaque = m, .read = bbssd_sra_read, .readable = bbssd_sra_readable };
        m->sra = sra_new(ra->cfg, &be, err);
        if (!m->sra) {
            bbssd_destroy(&m->parent);
            return NULL;
        }
    }
    if (wb) {
        FtlWbSink sink = { .opaque = m, .program = wb_program, .read = wb_read };

        m->wb = ftl_wb_for_media(&m->parent, ftl_nand(ftl), cfg->units_per_pg, wb, &sink,
                                 data, err);
        if (!m->wb) {
            bbssd_destroy(&m->parent);
            return NULL;
        }
    }
    return &m->parent;
}
