/*
 * NAND timelines; see nand.h for the rules.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "nand.h"

#include <glib.h>

const char *const nand_sched_names[NAND_SCHED__MAX] = {
    [NAND_SCHED_BACKFILL] = "backfill",
    [NAND_SCHED_FIFO] = "fifo",
};

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
        !in_range(t->time_scale, 1, 1000000, "time_scale", err) ||
        !in_range(t->sched, 0, NAND_SCHED__MAX - 1, "nand_sched", err)) {
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
    uint64_t xfer, luns;

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
    luns = nand_luns(g);
    m->ch = g_new0(Timeline, g->nchs);
    m->chip = g_new0(Timeline, luns);
    for (uint32_t i = 0; i < g->nchs; i++) {
        tl_init(&m->ch[i], t->sched == NAND_SCHED_FIFO);
    }
    for (uint64_t i = 0; i < luns; i++) {
        tl_init(&m->chip[i], t->sched == NAND_SCHED_FIFO);
    }
    m->pe_fence = g_new0(uint64_t, luns);
    m->stats.ch_busy_ns = g_new0(uint64_t, g->nchs);
    m->stats.lun_busy_ns = g_new0(uint64_t, luns);
    return m;
}

NandModel *nand_model_copy(const NandModel *src)
{
    NandModel *m = g_memdup2(src, sizeof(*src));
    uint64_t luns = nand_luns(&src->geo), chs = src->geo.nchs;

    m->ch = g_new0(Timeline, chs);
    m->chip = g_new0(Timeline, luns);
    for (uint64_t i = 0; i < chs; i++) {
        tl_copy(&m->ch[i], &src->ch[i]);
    }
    for (uint64_t i = 0; i < luns; i++) {
        tl_copy(&m->chip[i], &src->chip[i]);
    }
    m->pe_fence = g_memdup2(src->pe_fence, luns * sizeof(uint64_t));
    m->stats.ch_busy_ns = g_memdup2(src->stats.ch_busy_ns, chs * sizeof(uint64_t));
    m->stats.lun_busy_ns = g_memdup2(src->stats.lun_busy_ns, luns * sizeof(uint64_t));
    return m;
}

void nand_model_clear(NandModel *m)
{
    for (uint32_t i = 0; i < m->geo.nchs; i++) {
        tl_clear(&m->ch[i]);
    }
    for (uint64_t i = 0; i < nand_luns(&m->geo); i++) {
        tl_clear(&m->chip[i]);
        m->pe_fence[i] = 0;
    }
    m->horizon = 0;
}

void nand_model_free(NandModel *m)
{
    if (m) {
        for (uint32_t i = 0; i < m->geo.nchs; i++) {
            tl_destroy(&m->ch[i]);
        }
        for (uint64_t i = 0; i < nand_luns(&m->geo); i++) {
            tl_destroy(&m->chip[i]);
        }
        g_free(m->ch);
        g_free(m->chip);
        g_free(m->pe_fence);
        g_free(m->stats.ch_busy_ns);
        g_free(m->stats.lun_busy_ns);
        g_free(m);
    }
}

/*
 * A read needs a chip gap and, tR into it, a channel gap; a program needs the same gap on
 * both. Looking for them alternates between the two timelines: after this many tries the
 * operation goes after every booking of its resources, so that a booking costs O(log n)
 * even when long runs of small gaps do not fit it (a GC burst booked at one instant).
 */
#define NAND_MAX_TRIES 8

/* Where and when an operation runs; `start` is when it takes the chip. */
typedef struct NandSlot {
    uint64_t start, done;
    uint64_t xfer_at[NAND_MAX_PLANES];  /* each plane's transfer */
} NandSlot;

/* k transfers on the channel, each in the first gap after the last: the last one's end. */
static uint64_t place_transfers(const Timeline *chan, uint64_t from, uint64_t x, uint32_t k,
                                uint64_t *at)
{
    for (uint32_t i = 0; i < k; i++) {
        at[i] = tl_fit(chan, from, x);
        from = at[i] + x;
    }
    return from;
}

static NandSlot nand_place(const NandModel *m, NandOp op, const NandAddr *a, uint32_t k,
                           uint64_t arrival)
{
    uint32_t lun = nand_lun_index(m, a), type = nand_page_type(m, a->pg);
    const Timeline *chip = &m->chip[lun], *chan = &m->ch[a->ch];
    uint64_t scale = m->tm.time_scale, x = m->xfer_ns, s, end, gap_end;
    NandSlot slot = { 0 };

    switch (op) {
    case NAND_OP_READ: {
        /* one array read for the k planes, then k data-outs */
        uint64_t tr = m->tm.pg_rd_lat[type] * scale;
        s = tl_fit_gap(chip, arrival, tr + k * x, &gap_end);
        for (int tries = 1;; tries++) {
            /* data-outs in the first channel gaps after tR; the chip holds the pages */
            end = place_transfers(chan, s + tr, x, k, slot.xfer_at);
            if (end <= gap_end) {
                break;
            }
            /* past the chip's gap: from the end of the booking after it */
            s = tl_fit_gap(chip, tries < NAND_MAX_TRIES ? gap_end : chip->busy_until,
                           tr + k * x, &gap_end);
        }
        slot.start = s;
        slot.done = end;
        return slot;
    }
    case NAND_OP_PROGRAM: {
        /* k data-ins, then one tPROG for the k planes */
        uint64_t tp = m->tm.pg_wr_lat[type] * scale;
        s = MAX(arrival, m->pe_fence[lun]);
        for (int tries = 1;; tries++) {
            s = tl_fit_gap(chip, s, k * x + tp, &gap_end);
            end = place_transfers(chan, s, x, k, slot.xfer_at) + tp;
            if (end <= gap_end) {
                break;
            }
            s = tries < NAND_MAX_TRIES ? MAX(slot.xfer_at[0], gap_end)
                                       : MAX(chip->busy_until, chan->busy_until);
        }
        /* the chip is taken from its first data-in */
        slot.start = slot.xfer_at[0];
        slot.done = end;
        return slot;
    }
    case NAND_OP_ERASE:
    default:
        /* the k planes' blocks at once */
        s = tl_fit(chip, MAX(arrival, m->pe_fence[lun]), m->tm.blk_er_lat * scale);
        slot.start = s;
        slot.done = s + m->tm.blk_er_lat * scale;
        return slot;
    }
}

/* How many planes of mask the chip has; none: one (the address's plane). */
static uint32_t plane_count(const NandModel *m, uint32_t mask)
{
    uint32_t all = m->geo.pls_per_lun >= 32 ? UINT32_MAX : (1u << m->geo.pls_per_lun) - 1;
    uint32_t k = __builtin_popcount(mask & all);
    return k ? k : 1;
}

uint64_t nand_probe(const NandModel *m, NandOp op, const NandAddr *a, uint64_t arrival_ns)
{
    return nand_place(m, op, a, 1, arrival_ns).done;
}

uint64_t nand_op_planes(NandModel *m, NandOp op, const NandAddr *a, uint32_t plane_mask,
                        uint64_t arrival_ns)
{
    uint32_t lun = nand_lun_index(m, a), k = plane_count(m, plane_mask);
    Timeline *chip = &m->chip[lun], *chan = &m->ch[a->ch];
    NandSlot p;

    /* forget what ended before the retire horizon, on the resources this operation uses */
    tl_retire(chip, m->horizon);
    tl_retire(chan, m->horizon);
    p = nand_place(m, op, a, op == NAND_OP_ERASE ? 1 : k, arrival_ns);
    if (p.start < chip->busy_until ||
        (op != NAND_OP_ERASE && m->xfer_ns && p.xfer_at[0] < chan->busy_until)) {
        m->stats.gap_fills++;
    }
    tl_book(chip, p.start, p.done);
    m->stats.lun_busy_ns[lun] += p.done - p.start;
    m->stats.multiplane_ops += k > 1;
    if (op != NAND_OP_ERASE) {
        for (uint32_t i = 0; i < k; i++) {
            tl_book(chan, p.xfer_at[i], p.xfer_at[i] + m->xfer_ns);
        }
        m->stats.ch_busy_ns[a->ch] += k * m->xfer_ns;
    }
    switch (op) {
    case NAND_OP_READ:
        if (p.start < m->pe_fence[lun]) {
            m->stats.read_overtakes++;
        }
        m->stats.reads += k;
        break;
    case NAND_OP_PROGRAM:
        m->pe_fence[lun] = p.done;
        m->stats.programs += k;
        break;
    case NAND_OP_ERASE:
    default:
        m->pe_fence[lun] = p.done;
        m->stats.erases += k;
        break;
    }
    return p.done;
}

uint64_t nand_op(NandModel *m, NandOp op, const NandAddr *a, uint64_t arrival_ns)
{
    return nand_op_planes(m, op, a, 0, arrival_ns);
}

void nand_retire(NandModel *m, uint64_t t)
{
    m->horizon = MAX(m->horizon, t);
}

uint64_t nand_all_idle_ns(const NandModel *m)
{
    uint64_t t = 0;

    for (uint64_t i = 0; i < nand_luns(&m->geo); i++) {
        t = MAX(t, m->chip[i].busy_until);
    }
    for (uint32_t i = 0; i < m->geo.nchs; i++) {
        t = MAX(t, m->ch[i].busy_until);
    }
    return t;
}

uint64_t nand_chip_busy_until(const NandModel *m, uint32_t lun)
{
    return m->chip[lun].busy_until;
}

uint64_t nand_ch_busy_until(const NandModel *m, uint32_t ch)
{
    return m->ch[ch].busy_until;
}
