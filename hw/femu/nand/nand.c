/*
 * NAND timelines; see nand.h for the rules.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "nand.h"

#include <glib.h>

uint64_t nand_page_bytes(const NandGeometry *g)
{
    return (uint64_t)g->secs_per_pg * g->secsz;
}

uint64_t nand_luns(const NandGeometry *g)
{
    return (uint64_t)g->nchs * g->luns_per_ch;
}

uint64_t nand_pages_per_lun(const NandGeometry *g)
{
    return (uint64_t)g->pls_per_lun * g->blks_per_pl * g->pgs_per_blk;
}

uint64_t nand_total_pages(const NandGeometry *g)
{
    return nand_luns(g) * nand_pages_per_lun(g);
}

uint64_t nand_total_bytes(const NandGeometry *g)
{
    return nand_total_pages(g) * nand_page_bytes(g);
}

static bool in_range(uint64_t v, uint64_t lo, uint64_t hi, const char *name, char **err)
{
    if (v < lo || v > hi) {
        *err = g_strdup_printf("%s=%" G_GUINT64_FORMAT " is out of range: allowed %"
                               G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT, name, v, lo, hi);
        return false;
    }
    return true;
}

bool nand_geometry_check(const NandGeometry *g, char **err)
{
    if (!in_range(g->nchs, 1, 256, "nchs", err) ||
        !in_range(g->luns_per_ch, 1, 256, "luns_per_ch", err) ||
        !in_range(g->pls_per_lun, 1, 16, "pls_per_lun", err) ||
        !in_range(g->blks_per_pl, 1, 1u << 20, "blks_per_pl", err) ||
        !in_range(g->pgs_per_blk, 1, 1u << 16, "pgs_per_blk", err) ||
        !in_range(g->secs_per_pg, 1, 256, "secs_per_pg", err) ||
        !in_range(g->secsz, 512, 4096, "secsz", err)) {
        return false;
    }
    if (g->secsz & (g->secsz - 1)) {
        *err = g_strdup_printf("secsz=%u must be a power of two (512, 1024, 2048, 4096)",
                               g->secsz);
        return false;
    }
    /* 2^48 pages of at most 1 MiB: every product below stays within 64 bits */
    if (nand_total_pages(g) > (1ULL << 48)) {
        *err = g_strdup("the NAND geometry has more than 2^48 pages");
        return false;
    }
    return true;
}

bool nand_timing_check(const NandTiming *t, char **err)
{
    const uint64_t max_lat = 1000000000ULL;     /* 1 s */

    if (!in_range(t->cell_bits, 1, NAND_MAX_PAGE_TYPES, "cell_bits", err) ||
        !in_range(t->blk_er_lat, 0, max_lat * 10, "blk_er_lat", err) ||
        !in_range(t->ch_xfer_lat, 0, max_lat, "ch_xfer_lat", err) ||
        !in_range(t->time_scale, 1, 1000000, "time_scale", err)) {
        return false;
    }
    for (uint32_t i = 0; i < t->cell_bits; i++) {
        if (!in_range(t->pg_rd_lat[i], 0, max_lat, "pg_rd_lat", err) ||
            !in_range(t->pg_wr_lat[i], 0, max_lat, "pg_wr_lat", err)) {
            return false;
        }
    }
    if (!t->ch_xfer_lat && t->ch_mts && (!in_range(t->ch_mts, 1, 100000, "ch_mts", err) ||
                            !in_range(t->ch_width_bytes, 1, 8, "ch_width_bytes", err))) {
        return false;
    }
    return true;
}

NandModel *nand_model_new(const NandGeometry *g, const NandTiming *t, char **err)
{
    NandModel *m;
    uint64_t xfer;

    if (!nand_geometry_check(g, err) || !nand_timing_check(t, err)) {
        return NULL;
    }
    m = g_new0(NandModel, 1);
    m->geo = *g;
    m->tm = *t;
    if (t->ch_xfer_lat || !t->ch_mts) {
        xfer = t->ch_xfer_lat;
    } else {
        /* bytes / (MT/s * width) in microseconds -> ns, rounded up */
        uint64_t bytes_per_us = (uint64_t)t->ch_mts * t->ch_width_bytes;
        xfer = (nand_page_bytes(g) * 1000 + bytes_per_us - 1) / bytes_per_us;
    }
    m->xfer_ns = xfer * t->time_scale;
    m->ch_free = g_new0(uint64_t, g->nchs);
    m->lun_free = g_new0(uint64_t, nand_luns(g));
    m->stats.ch_busy_ns = g_new0(uint64_t, g->nchs);
    m->stats.lun_busy_ns = g_new0(uint64_t, nand_luns(g));
    return m;
}

NandModel *nand_model_copy(const NandModel *src)
{
    NandModel *m = g_memdup2(src, sizeof(*src));
    uint64_t luns = nand_luns(&src->geo), chs = src->geo.nchs;

    m->ch_free = g_memdup2(src->ch_free, chs * sizeof(uint64_t));
    m->lun_free = g_memdup2(src->lun_free, luns * sizeof(uint64_t));
    m->stats.ch_busy_ns = g_memdup2(src->stats.ch_busy_ns, chs * sizeof(uint64_t));
    m->stats.lun_busy_ns = g_memdup2(src->stats.lun_busy_ns, luns * sizeof(uint64_t));
    return m;
}

void nand_model_free(NandModel *m)
{
    if (m) {
        g_free(m->ch_free);
        g_free(m->lun_free);
        g_free(m->stats.ch_busy_ns);
        g_free(m->stats.lun_busy_ns);
        g_free(m);
    }
}

uint64_t nand_op(NandModel *m, NandOp op, const NandAddr *a, uint64_t arrival_ns)
{
    uint32_t lun = nand_lun_index(m, a), type = nand_page_type(m, a->pg);
    uint64_t *chip = &m->lun_free[lun], *chan = &m->ch_free[a->ch];
    uint64_t scale = m->tm.time_scale, start, done;

    switch (op) {
    case NAND_OP_READ: {
        uint64_t sensed;
        start = MAX(arrival_ns, *chip);
        sensed = start + m->tm.pg_rd_lat[type] * scale;
        /* data out when the channel is free; the chip holds the page until then */
        uint64_t out = MAX(sensed, *chan);
        done = out + m->xfer_ns;
        *chan = done;
        *chip = done;
        m->stats.reads++;
        m->stats.ch_busy_ns[a->ch] += m->xfer_ns;
        m->stats.lun_busy_ns[lun] += done - start;
        break;
    }
    case NAND_OP_PROGRAM:
        /* data in needs both the channel and a chip ready to take it */
        start = MAX(arrival_ns, MAX(*chan, *chip));
        *chan = start + m->xfer_ns;
        done = *chan + m->tm.pg_wr_lat[type] * scale;
        *chip = done;
        m->stats.programs++;
        m->stats.ch_busy_ns[a->ch] += m->xfer_ns;
        m->stats.lun_busy_ns[lun] += done - start;
        break;
    case NAND_OP_ERASE:
    default:
        start = MAX(arrival_ns, *chip);
        done = start + m->tm.blk_er_lat * scale;
        *chip = done;
        m->stats.erases++;
        m->stats.lun_busy_ns[lun] += done - start;
        break;
    }
    return done;
}

uint64_t nand_all_idle_ns(const NandModel *m)
{
    uint64_t t = 0;

    for (uint64_t i = 0; i < nand_luns(&m->geo); i++) {
        t = MAX(t, m->lun_free[i]);
    }
    for (uint32_t i = 0; i < m->geo.nchs; i++) {
        t = MAX(t, m->ch_free[i]);
    }
    return t;
}
