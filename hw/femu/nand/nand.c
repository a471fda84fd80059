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
    return nand_options_check(t, err);
}

bool nand_options_check(const NandTiming *t, char **err)
{
    const uint64_t max_lat = 1000000000ULL;     /* 1 s */

    if (!in_range(t->sched, 0, NAND_SCHED__MAX - 1, "nand_sched", err) ||
        !in_range(t->cmd_ns, 0, max_lat / 1000, "nand_cmd_ns", err) ||
        !in_range(t->status_ns, 0, max_lat / 1000, "nand_status_ns", err) ||
        !in_range(t->suspend, 0, NAND_SUSPEND_PROGRAM | NAND_SUSPEND_ERASE, "nand_suspend",
                  err) ||
        !in_range(t->suspend_ns, 0, max_lat / 100, "nand_suspend_ns", err) ||
        !in_range(t->resume_ns, 0, max_lat / 100, "nand_resume_ns", err) ||
        !in_range(t->suspend_max, t->suspend ? 1 : 0, 255, "nand_suspend_max", err) ||
        !in_range(t->retry_pe, 0, 10000000, "nand_retry_pe", err) ||
        !in_range(t->retry_max, 0, 64, "nand_retry_max", err) ||
        !in_range(t->base_pe, 0, 10000000, "nand_base_pe", err) ||
        !in_range(t->xfer_split, 0, NAND_MAX_SPLIT, "nand_xfer_split", err)) {
        return false;
    }
    return true;
}

/* Blocks whose wear the model keeps for read retry: a bound on its memory (512 MiB). */
#define NAND_MAX_WEAR_BLOCKS (1ULL << 27)

static uint64_t nand_blocks(const NandGeometry *g)
{
    return nand_luns(g) * g->pls_per_lun * g->blks_per_pl;
}

/* Virtual time between two retires of a timeline: a few erases' worth, so each is a batch. */
#define NAND_RETIRE_LAG_NS 2000000

static void init_timeline(const NandModel *m, Timeline *tl)
{
    tl_init(tl, m->tm.sched == NAND_SCHED_FIFO);
    tl->retire_lag = NAND_RETIRE_LAG_NS * m->tm.time_scale;
}

NandModel *nand_model_new(const NandGeometry *g, const NandTiming *t, char **err)
{
    NandModel *m;
    uint64_t xfer, luns;

    if (!nand_geometry_check(g, err) || !nand_timing_check(t, err)) {
        return NULL;
    }
    if (t->retry_pe && nand_blocks(g) > NAND_MAX_WEAR_BLOCKS) {
        *err = g_strdup_printf("nand_retry_pe needs the wear of every block: at most %llu "
                               "blocks (this geometry has %" G_GUINT64_FORMAT ")",
                               NAND_MAX_WEAR_BLOCKS, nand_blocks(g));
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
        init_timeline(m, &m->ch[i]);
    }
    for (uint64_t i = 0; i < luns; i++) {
        init_timeline(m, &m->chip[i]);
    }
    if (t->cache_ops) {
        m->reg = g_new0(Timeline, luns);
        for (uint64_t i = 0; i < luns; i++) {
            init_timeline(m, &m->reg[i]);
        }
    }
    if (t->retry_pe) {
        m->wear = g_new0(uint32_t, nand_blocks(g));
    }
    m->pe = g_new0(NandChipPe, luns);
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
    if (src->reg) {
        m->reg = g_new0(Timeline, luns);
        for (uint64_t i = 0; i < luns; i++) {
            tl_copy(&m->reg[i], &src->reg[i]);
        }
    }
    if (src->wear) {
        m->wear = g_memdup2(src->wear, nand_blocks(&src->geo) * sizeof(uint32_t));
    }
    m->pe = g_memdup2(src->pe, luns * sizeof(NandChipPe));
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
        if (m->reg) {
            tl_clear(&m->reg[i]);
        }
        m->pe[i] = (NandChipPe){ 0 };
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
            if (m->reg) {
                tl_destroy(&m->reg[i]);
            }
        }
        g_free(m->ch);
        g_free(m->chip);
        g_free(m->reg);
        g_free(m->wear);
        g_free(m->pe);
        g_free(m->stats.ch_busy_ns);
        g_free(m->stats.lun_busy_ns);
        g_free(m);
    }
}

/*
 * A read needs a chip gap and, tR into it, a channel gap; a program needs the same gap on
 * both. Looking for them alternates between the two timelines: after this many tries the
 * operation goes after every booking of its resources, so that a booking costs a few
 * searches even when long runs of small gaps do not fit it (a GC burst booked at one
 * instant).
 */
#define NAND_MAX_TRIES 8

/*
 * An operation's shape: transfers on the channel before the array operation (pre), its
 * array time, and transfers after it (post). Each transfer is one piece of channel time.
 */
typedef struct NandShape {
    uint32_t npre, npost;
    uint64_t pre_ns, post_ns;   /* each piece */
    uint64_t array_ns;
    uint32_t retries;
} NandShape;

/* Where and when an operation runs. */
typedef struct NandSlot {
    uint64_t start, done;       /* without cache_ops the chip is held over [start, done) */
    uint64_t array_at;          /* its array operation starts */
    uint64_t pre_at[NAND_MAX_PLANES], post_at[NAND_MAX_PLANES];
    uint64_t reg_s, reg_e;      /* with cache_ops: the page register's interval */
    uint64_t suspend_ext;       /* a read that suspends a P/E: how much the P/E moves */
} NandSlot;

/* How many planes of mask the chip has; none: one (the address's plane). */
static uint32_t plane_bits(const NandModel *m, uint32_t mask, uint32_t pl)
{
    uint32_t all = m->geo.pls_per_lun >= 32 ? UINT32_MAX : (1u << m->geo.pls_per_lun) - 1;

    return (mask & all) ? (mask & all) : 1u << (pl & 31);
}

/* Planes in a mask: one for most operations, without a call to libgcc's popcount. */
static uint32_t planes_of(uint32_t bits)
{
    return bits & (bits - 1) ? __builtin_popcount(bits) : 1;
}

static uint64_t block_index(const NandModel *m, const NandAddr *a, uint32_t pl)
{
    return ((uint64_t)nand_lun_index(m, a) * m->geo.pls_per_lun + pl) * m->geo.blks_per_pl +
           a->blk;
}

uint32_t nand_block_wear(const NandModel *m, const NandAddr *a)
{
    return m->wear ? m->tm.base_pe + m->wear[block_index(m, a, a->pl)] : 0;
}

void nand_set_block_wear(NandModel *m, const NandAddr *a, uint32_t erases)
{
    const NandGeometry *g = &m->geo;

    if (m->wear && a->ch < g->nchs && a->lun < g->luns_per_ch && a->pl < g->pls_per_lun &&
        a->blk < g->blks_per_pl) {
        m->wear[block_index(m, a, a->pl)] = erases;
    }
}

/* Extra tR of a read: from the most worn block among its planes. */
static uint32_t read_retries(const NandModel *m, const NandReq *r)
{
    uint32_t bits = plane_bits(m, r->plane_mask, r->addr.pl), worst = 0;

    if (!m->wear) {
        return 0;
    }
    for (uint32_t pl = 0; bits; pl++, bits >>= 1) {
        if (bits & 1) {
            worst = MAX(worst, m->wear[block_index(m, &r->addr, pl)]);
        }
    }
    return MIN(m->tm.retry_max, (m->tm.base_pe + worst) / m->tm.retry_pe);
}

static NandShape shape_of(const NandModel *m, const NandReq *r, uint32_t k)
{
    const NandTiming *t = &m->tm;
    uint64_t scale = t->time_scale, type = nand_page_type(m, r->addr.pg);
    uint64_t cmd = t->cmd_ns * scale, status = t->status_ns * scale;
    uint64_t x = m->xfer_ns;
    NandShape sh = { 0 };

    switch (r->op) {
    case NAND_OP_READ:
        /* the plane addresses, tR (again per retry), then each page's status and data */
        if ((t->partial_xfer || r->unit_xfer) && r->bytes) {
            uint64_t page = nand_page_bytes(&m->geo);
            x = r->bytes < page ? (m->xfer_ns * r->bytes + page - 1) / page : x;
        }
        sh.retries = read_retries(m, r);
        sh.npre = cmd ? 1 : 0;
        sh.pre_ns = k * cmd;
        sh.array_ns = t->pg_rd_lat[type] * scale * (1 + sh.retries);
        sh.npost = k;
        sh.post_ns = status + x;
        break;
    case NAND_OP_PROGRAM:
        /* each plane's address and data, tPROG, a status read */
        sh.npre = k;
        sh.pre_ns = cmd + x;
        sh.array_ns = t->pg_wr_lat[type] * scale;
        sh.npost = status ? 1 : 0;
        sh.post_ns = status;
        break;
    case NAND_OP_ERASE:
    default:
        sh.npre = cmd ? 1 : 0;
        sh.pre_ns = k * cmd;
        sh.array_ns = t->blk_er_lat * scale;
        sh.npost = status ? 1 : 0;
        sh.post_ns = status;
        break;
    }
    return sh;
}

/* A split transfer (fit_transfer): its first part's start, or UINT64_MAX if it would end
 * no sooner than the whole one placed at `whole`. */
static uint64_t fit_split(const NandModel *m, Timeline *chan, uint64_t from, uint64_t d,
                          uint64_t whole, bool book, uint64_t *end)
{
    uint64_t k = m->tm.xfer_split, part = (d + k - 1) / k, left = d, cur = from, gap_end;
    uint64_t at[NAND_MAX_SPLIT], len[NAND_MAX_SPLIT];
    uint32_t n = 0;

    while (left && n < k) {
        /* the last allowed part must take what is left */
        uint64_t want = n == k - 1 ? left : MIN(part, left);
        at[n] = tl_fit_gap(chan, cur, want, &gap_end);
        len[n] = gap_end == UINT64_MAX ? left : MIN(left, gap_end - at[n]);
        cur = at[n] + len[n];
        left -= len[n++];
    }
    if (left || cur >= whole + d) {
        return UINT64_MAX;      /* no sooner than whole */
    }
    for (uint32_t i = 0; book && i < n; i++) {
        tl_book(chan, at[i], at[i] + len[i]);
    }
    *end = cur;
    return at[0];
}

/*
 * One transfer of d from `from` on the channel: contiguous in the first gap that fits it,
 * or, with xfer_split = K > 1, in up to K parts of at least d / K in the gaps before that
 * (ONFI column changes), when that ends sooner. Books the parts if `book`. Returns its
 * start; *end is where it ends.
 */
static uint64_t fit_transfer(const NandModel *m, Timeline *chan, uint64_t from, uint64_t d,
                             bool book, uint64_t *end)
{
    uint64_t whole = tl_fit(chan, from, d);

    if (m->tm.xfer_split > 1 && d >= m->tm.xfer_split) {
        uint64_t first = fit_split(m, chan, from, d, whole, book, end);
        if (first != UINT64_MAX) {
            return first;
        }
    }
    if (book) {
        tl_book(chan, whole, whole + d);
    }
    *end = whole + d;
    return whole;
}

/* n transfers of d, each after the last: their starts in at[]; returns the last one's end. */
static uint64_t place_pieces(const NandModel *m, const Timeline *chan, uint64_t from,
                             uint64_t d, uint32_t n, uint64_t *at)
{
    for (uint32_t i = 0; i < n; i++) {
        at[i] = fit_transfer(m, (Timeline *)chan, from, d, false, &from);
    }
    return from;
}

/* Without cache_ops: one chip gap holds the whole operation, its transfers included. */
static void place_held(const NandModel *m, const NandShape *sh, uint32_t lun, uint32_t ch,
                       uint64_t t0, NandSlot *slot)
{
    const Timeline *chip = &m->chip[lun], *chan = &m->ch[ch];
    uint64_t need = sh->npre * sh->pre_ns + sh->array_ns + sh->npost * sh->post_ns;
    uint64_t s = t0, gap_end, cur;

    for (int tries = 1;; tries++) {
        s = tl_fit_gap(chip, s, need, &gap_end);
        cur = place_pieces(m, chan, s, sh->pre_ns, sh->npre, slot->pre_at);
        slot->array_at = cur;
        cur = place_pieces(m, chan, cur + sh->array_ns, sh->post_ns, sh->npost, slot->post_at);
        if (cur <= gap_end) {
            break;
        }
        /* past the chip's gap: from the end of the booking after it */
        if (tries < NAND_MAX_TRIES) {
            s = sh->npre ? MAX(slot->pre_at[0], gap_end) : gap_end;
        } else {
            s = MAX(chip->busy_until, sh->npre ? chan->busy_until : 0);
        }
    }
    /* a program takes the chip from its first data-in */
    slot->start = sh->npre ? slot->pre_at[0] : s;
    slot->done = cur;
    slot->reg_s = slot->reg_e = slot->suspend_ext = 0;
}

/*
 * With cache_ops: the array and the page register are booked apart. A read holds the
 * register from the end of tR until its data is out; a program from its first data-in
 * until its tPROG starts (the page moves to the data register). An erase uses the array.
 */
static void place_cached(const NandModel *m, const NandShape *sh, NandOp op, uint32_t lun,
                         uint32_t ch, uint64_t t0, uint64_t array_min, NandSlot *slot)
{
    const Timeline *chip = &m->chip[lun], *reg = &m->reg[lun], *chan = &m->ch[ch];
    uint64_t s = t0, cur, busy_end = 0;

    for (int tries = 1;; tries++) {
        cur = place_pieces(m, chan, s, sh->pre_ns, sh->npre, slot->pre_at);
        slot->array_at = tl_fit(chip, MAX(cur, array_min), sh->array_ns);
        cur = place_pieces(m, chan, slot->array_at + sh->array_ns, sh->post_ns, sh->npost,
                           slot->post_at);
        slot->reg_s = slot->reg_e = 0;
        if (op == NAND_OP_READ) {
            slot->reg_s = slot->array_at + sh->array_ns;
            slot->reg_e = cur;
        } else if (op == NAND_OP_PROGRAM) {
            slot->reg_s = slot->pre_at[0];
            slot->reg_e = slot->array_at;
        }
        if (slot->reg_s >= slot->reg_e || tl_is_free(reg, slot->reg_s, slot->reg_e, &busy_end)) {
            break;
        }
        if (tries < NAND_MAX_TRIES) {
            /* a read's tR may end no earlier than the register is free again */
            s = MAX(s + 1, op == NAND_OP_READ && busy_end > sh->array_ns ?
                           busy_end - sh->array_ns : busy_end);
        } else {
            s = MAX(MAX(chip->busy_until, reg->busy_until), MAX(chan->busy_until, s));
        }
    }
    slot->start = slot->array_at;
    slot->done = cur;
    slot->suspend_ext = 0;
}

/*
 * A read that suspends the chip's latest program or erase (nand.h), if that is allowed and
 * finishes it sooner than *slot: then *slot becomes it and true.
 */
static bool place_suspend(const NandModel *m, const NandShape *sh, uint32_t lun, uint32_t ch,
                          uint64_t arrival, NandSlot *slot)
{
    const NandChipPe *pe = &m->pe[lun];
    uint64_t scale = m->tm.time_scale, from, cur, ext;
    uint32_t kind = pe->op == NAND_OP_PROGRAM ? NAND_SUSPEND_PROGRAM : NAND_SUSPEND_ERASE;
    NandSlot sus = { 0 };

    if (pe->op == NAND_OP_READ || !(m->tm.suspend & kind) ||
        pe->suspends >= m->tm.suspend_max || arrival < pe->array_at || arrival >= pe->fence) {
        return false;
    }
    from = MAX(arrival, pe->susp_end);
    cur = place_pieces(m, &m->ch[ch], from, sh->pre_ns, sh->npre, sus.pre_at);
    sus.array_at = cur + m->tm.suspend_ns * scale;
    if (sus.array_at >= pe->fence) {
        return false;           /* the program or erase is done by then */
    }
    cur = place_pieces(m, &m->ch[ch], sus.array_at + sh->array_ns, sh->post_ns, sh->npost,
                       sus.post_at);
    if (m->reg) {
        /* the array is back after tR; the data waits in the register */
        sus.reg_s = sus.array_at + sh->array_ns;
        sus.reg_e = cur;
        if (!tl_is_free(&m->reg[lun], sus.reg_s, sus.reg_e, NULL)) {
            return false;
        }
        ext = sus.reg_s - from;
    } else {
        ext = cur - from;
    }
    ext += m->tm.resume_ns * scale;
    /* only into the idle time after it: nothing else moves */
    if (cur >= slot->done || !tl_is_free(&m->chip[lun], pe->fence, pe->fence + ext, NULL)) {
        return false;
    }
    sus.start = from;
    sus.done = cur;
    sus.suspend_ext = ext;
    *slot = sus;
    return true;
}

static void nand_place(const NandModel *m, const NandReq *r, const NandShape *sh,
                       uint64_t arrival, NandSlot *slot)
{
    uint32_t lun = nand_lun_index(m, &r->addr), ch = r->addr.ch;
    const NandChipPe *pe = &m->pe[lun];
    /* a P/E after the chip's previous one; an erase after its reads booked so far too */
    uint64_t after = r->op == NAND_OP_ERASE ? MAX(pe->fence, pe->read_end) : pe->fence;

    if (r->op == NAND_OP_READ) {
        if (m->reg) {
            place_cached(m, sh, r->op, lun, ch, arrival, 0, slot);
        } else {
            place_held(m, sh, lun, ch, arrival, slot);
        }
        if (m->tm.suspend) {
            place_suspend(m, sh, lun, ch, arrival, slot);
        }
    } else if (m->reg) {
        /* cache program: the data-in may start once the page before left the register */
        uint64_t t0 = r->op == NAND_OP_PROGRAM && pe->op == NAND_OP_PROGRAM ? pe->array_at
                                                                           : after;
        place_cached(m, sh, r->op, lun, ch, MAX(arrival, t0), after, slot);
    } else {
        place_held(m, sh, lun, ch, MAX(arrival, after), slot);
    }
}

uint64_t nand_probe_req(const NandModel *m, const NandReq *r, uint64_t arrival_ns)
{
    NandShape sh = shape_of(m, r, planes_of(plane_bits(m, r->plane_mask, r->addr.pl)));
    NandSlot slot;

    nand_place(m, r, &sh, arrival_ns, &slot);
    return slot.done;
}

uint64_t nand_probe(const NandModel *m, NandOp op, const NandAddr *a, uint64_t arrival_ns)
{
    return nand_probe_req(m, &(NandReq){ .op = op, .addr = *a }, arrival_ns);
}

/* Books what place_pieces found (the same parts: the timeline after each is unchanged). */
static void book_pieces(const NandModel *m, Timeline *chan, const uint64_t *at, uint32_t n,
                        uint64_t d)
{
    uint64_t end;

    for (uint32_t i = 0; i < n; i++) {
        if (m->tm.xfer_split <= 1) {
            tl_book(chan, at[i], at[i] + d);        /* whole: no second search */
        } else {
            uint64_t s = fit_transfer(m, chan, at[i], d, true, &end);
            g_assert(s == at[i]);
        }
    }
}

uint64_t nand_submit(NandModel *m, const NandReq *r, uint64_t arrival_ns)
{
    uint32_t lun = nand_lun_index(m, &r->addr), bits = plane_bits(m, r->plane_mask, r->addr.pl);
    uint32_t k = planes_of(bits);
    Timeline *chip = &m->chip[lun], *chan = &m->ch[r->addr.ch];
    NandChipPe *pe = &m->pe[lun];
    NandShape sh;
    NandSlot p;

    /* forget what ended before the retire horizon, on the resources this operation uses */
    tl_retire(chip, m->horizon);
    tl_retire(chan, m->horizon);
    if (m->reg) {
        tl_retire(&m->reg[lun], m->horizon);
    }
    sh = shape_of(m, r, k);
    nand_place(m, r, &sh, arrival_ns, &p);
    if (p.suspend_ext) {
        /* the read runs inside the suspended operation, which ends later */
        tl_book(chip, pe->fence, pe->fence + p.suspend_ext);
        m->stats.lun_busy_ns[lun] += p.suspend_ext;
        m->stats.op_busy_ns[NAND_OP_READ] += p.suspend_ext;
        m->stats.suspends++;
        m->stats.read_overtakes++;
        pe->fence += p.suspend_ext;
        pe->suspends++;
        pe->susp_end = m->reg ? p.reg_s : p.done;
    } else {
        uint64_t cs = m->reg ? p.array_at : p.start;
        uint64_t ce = m->reg ? p.array_at + sh.array_ns : p.done;
        uint64_t first = sh.npre ? p.pre_at[0] : p.post_at[0];

        if (cs < chip->busy_until ||
            ((sh.npre ? sh.pre_ns : sh.post_ns) && first < chan->busy_until)) {
            m->stats.gap_fills++;
        }
        if (r->op == NAND_OP_READ && cs < pe->fence) {
            m->stats.read_overtakes++;
        }
        tl_book(chip, cs, ce);
        m->stats.lun_busy_ns[lun] += ce - cs;
        m->stats.op_busy_ns[r->op] += ce - cs;
    }
    if (m->reg && p.reg_s < p.reg_e) {
        tl_book(&m->reg[lun], p.reg_s, p.reg_e);
    }
    book_pieces(m, chan, p.pre_at, sh.npre, sh.pre_ns);
    book_pieces(m, chan, p.post_at, sh.npost, sh.post_ns);
    m->stats.ch_busy_ns[r->addr.ch] += sh.npre * sh.pre_ns + sh.npost * sh.post_ns;
    m->stats.multiplane_ops += k > 1;
    if (r->op == NAND_OP_READ) {
        m->stats.reads += k;
        m->stats.read_retries += sh.retries;
        pe->read_end = MAX(pe->read_end, p.done);
        return p.done;
    }
    if (r->op == NAND_OP_ERASE) {
        for (uint32_t pl = 0; m->wear && bits; pl++, bits >>= 1) {
            if (bits & 1) {
                uint32_t *w = &m->wear[block_index(m, &r->addr, pl)];
                *w += *w < UINT32_MAX;
            }
        }
        m->stats.erases += k;
    } else {
        m->stats.programs += k;
    }
    *pe = (NandChipPe){
        .fence = m->reg ? p.array_at + sh.array_ns : p.done,
        .array_at = p.array_at,
        .read_end = pe->read_end,
        .op = r->op,
    };
    return p.done;
}

uint64_t nand_op_planes(NandModel *m, NandOp op, const NandAddr *a, uint32_t plane_mask,
                        uint64_t arrival_ns)
{
    return nand_submit(m, &(NandReq){ .op = op, .addr = *a, .plane_mask = plane_mask },
                       arrival_ns);
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
        t = MAX(t, nand_chip_busy_until(m, i));
    }
    for (uint32_t i = 0; i < m->geo.nchs; i++) {
        t = MAX(t, m->ch[i].busy_until);
    }
    return t;
}

uint64_t nand_chip_busy_until(const NandModel *m, uint32_t lun)
{
    return MAX(m->chip[lun].busy_until, m->reg ? m->reg[lun].busy_until : 0);
}

uint64_t nand_ch_busy_until(const NandModel *m, uint32_t ch)
{
    return m->ch[ch].busy_until;
}

double nand_hold_up_uj(const NandModel *nand, uint32_t ctrl_mw, uint32_t chip_mw,
                       uint64_t pages, uint64_t ns)
{
    const NandTiming *tm = &nand->tm;
    double prog = 0;

    for (uint32_t i = 0; i < tm->cell_bits; i++) {
        prog += (double)tm->pg_wr_lat[i] * tm->time_scale / tm->cell_bits;
    }
    /* mW x ns = 1e-12 J = 1e-6 uJ */
    return (ctrl_mw * (double)ns + (double)pages * chip_mw * (prog + nand->xfer_ns)) / 1e6;
}
