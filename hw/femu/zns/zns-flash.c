/*
 * Zones on flash: placement, write buffer and NAND costs; see zns-flash.h.
 *
 * Buffer model. A zone that holds a buffer keeps:
 *   - pending bytes [lo, hi) (zone-relative) of the program unit being filled, not yet
 *     handed to NAND;
 *   - programs in flight: the pages and data bytes of each unit handed to NAND and its
 *     completion time. Their bytes stay in DRAM (and count against wbuf_bytes) until then.
 * Occupancy at time t = pending + bytes of programs not done by t. Each zone's buffer is a
 * FIFO with its own clock (never going back), so a write accepted in the future delays the
 * next one of the same zone rather than letting it overtake.
 *
 * A zone holds one of wbuf_zones buffer slots from its first write until it is drained and
 * its programs have completed (released lazily when a slot is needed), or until reset. The
 * slot of an evicted zone is free only once the victim's programs complete: the buffer is
 * DRAM the victim still occupies.
 *
 * A unit is programmed when its last byte arrives: only the pages its pending bytes touch
 * (all of them, unless a drain sent part of the unit out padded before). A drain pads to the
 * end of the unit. Statistics: pages_programmed includes padding; buffer_read_hits and
 * pages_read count pages (a page is a hit only if all its requested bytes are in DRAM).
 *
 * Only the first zone_cap_bytes of a zone have flash behind them (blocks are allocated for
 * the capacity, the last unit may be cut short): reads beyond the capacity cost nothing and
 * writes there are ignored (the zone state machine refuses them).
 *
 * With shared_nand the geometry is that model's; zns_flash_derive_blocks always sizes
 * c->geo (so the caller can size the shared model: first_block + what the zones need).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "zns-flash.h"

#include <glib.h>

#define MAX_BLKS_PER_PL (1u << 20)      /* as nand_geometry_check allows */

typedef struct InFlight {
    uint64_t pg_lo, pg_hi;      /* zone pages programmed */
    uint64_t bytes;             /* host data they hold in the buffer */
    uint64_t done;
} InFlight;

typedef struct ZoneBuf {
    uint64_t zone;              /* hash key */
    uint64_t seq;               /* last write, for LRU */
    uint64_t clock;             /* latest time this buffer was used */
    uint64_t lo, hi;            /* pending bytes; lo == hi: none */
    GArray *inflight;           /* InFlight, in issue order */
} ZoneBuf;

struct ZnsFlash {
    ZnsFlashConfig cfg;
    NandModel *nand;
    bool own_nand;
    uint64_t page_bytes;
    uint64_t unit_bytes;        /* stripe pages */
    uint64_t cap_pages;         /* pages with flash behind them, per zone */
    uint64_t groups;            /* zones side by side in a row: chips / stripe */
    uint64_t blks_per_zone;     /* blocks per chip per zone */
    GHashTable *bufs;           /* zone -> ZoneBuf of the zones holding a slot */
    GPtrArray *spare;           /* ZoneBufs to reuse */
    uint64_t seq;
    ZnsFlashStats st;
};

/* ---- configuration ---- */

static const NandGeometry *config_geo(const ZnsFlashConfig *c)
{
    return c->shared_nand ? &c->shared_nand->geo : &c->geo;
}

/* Everything but the number of blocks. */
static bool check_layout(const ZnsFlashConfig *c, const NandGeometry *g, char **err)
{
    NandGeometry any = *g;
    uint64_t chips, page, unit;

    any.blks_per_pl = 1;
    if (!nand_geometry_check(&any, err)) {
        return false;
    }
    chips = nand_luns(g);
    page = nand_page_bytes(g);
    if (c->stripe < 1 || c->stripe > chips || chips % c->stripe) {
        *err = g_strdup_printf("zns_stripe=%u must divide the number of chips, %" G_GUINT64_FORMAT
                               " (%u channels x %u chips each): allowed 1..%" G_GUINT64_FORMAT
                               ", a divisor of %" G_GUINT64_FORMAT, c->stripe, chips, g->nchs,
                               g->luns_per_ch, chips, chips);
        return false;
    }
    unit = c->stripe * page;
    if (!c->zone_bytes || c->zone_bytes % unit) {
        *err = g_strdup_printf("zns_zone_size_mb: a zone of %" G_GUINT64_FORMAT " bytes must be "
                               "a non-zero multiple of the program unit, zns_stripe=%u x %"
                               G_GUINT64_FORMAT "-byte pages = %" G_GUINT64_FORMAT " bytes",
                               c->zone_bytes, c->stripe, page, unit);
        return false;
    }
    if (!c->zone_cap_bytes || c->zone_cap_bytes > c->zone_bytes || c->zone_cap_bytes % page) {
        *err = g_strdup_printf("zns_zone_cap: a capacity of %" G_GUINT64_FORMAT " bytes must be "
                               "a multiple of the %" G_GUINT64_FORMAT "-byte page in 1 page.."
                               "the zone size (zns_zone_size_mb, %" G_GUINT64_FORMAT " bytes)",
                               c->zone_cap_bytes, page, c->zone_bytes);
        return false;
    }
    if (c->wbuf_bytes < unit) {
        *err = g_strdup_printf("zns_wbuf_kb=%" G_GUINT64_FORMAT " is below one program unit: "
                               "allowed >= %" G_GUINT64_FORMAT " (zns_stripe=%u x %"
                               G_GUINT64_FORMAT "-byte pages)", c->wbuf_bytes / 1024,
                               (unit + 1023) / 1024, c->stripe, page);
        return false;
    }
    if (c->wbuf_zones < 1) {
        *err = g_strdup("zns_wbuf_zones=0: at least one zone must be able to hold a write "
                        "buffer: allowed >= 1");
        return false;
    }
    if (!c->nr_zones) {
        *err = g_strdup_printf("devsz_mb: the namespace holds no zone of %" G_GUINT64_FORMAT
                               " bytes (zns_zone_size_mb)", c->zone_bytes);
        return false;
    }
    return true;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

static uint64_t zone_blocks_per_chip(const ZnsFlashConfig *c, const NandGeometry *g)
{
    uint64_t pages_per_chip = div_up(c->zone_cap_bytes / nand_page_bytes(g), c->stripe);
    return div_up(pages_per_chip, g->pgs_per_blk);
}

/* Blocks per plane the zones need, above first_block. */
static bool blocks_needed(const ZnsFlashConfig *c, const NandGeometry *g, uint64_t *per_pl,
                          char **err)
{
    uint64_t rows = div_up(c->nr_zones, nand_luns(g) / c->stripe), per_chip;

    if (!g_uint64_checked_mul(&per_chip, rows, zone_blocks_per_chip(c, g)) ||
        div_up(per_chip, g->pls_per_lun) > MAX_BLKS_PER_PL - MIN(c->first_block,
                                                                 MAX_BLKS_PER_PL)) {
        *err = g_strdup_printf("zns_num_blk: %" G_GUINT64_FORMAT " zones of %" G_GUINT64_FORMAT
                               " bytes over zns_stripe=%u chips need more than %u blocks per "
                               "plane: use fewer or smaller zones (devsz_mb, zns_zone_size_mb) "
                               "or more chips, planes or pages per block", c->nr_zones,
                               c->zone_cap_bytes, c->stripe, MAX_BLKS_PER_PL);
        return false;
    }
    *per_pl = div_up(per_chip, g->pls_per_lun);
    return true;
}

bool zns_flash_derive_blocks(ZnsFlashConfig *c, char **err)
{
    uint64_t per_pl;

    if (!check_layout(c, &c->geo, err) || !blocks_needed(c, &c->geo, &per_pl, err)) {
        return false;
    }
    c->geo.blks_per_pl = c->first_block + per_pl;
    return true;
}

bool zns_flash_config_check(const ZnsFlashConfig *c, char **err)
{
    const NandGeometry *g = config_geo(c);
    uint64_t per_pl;

    if (!check_layout(c, g, err) || !nand_geometry_check(g, err) ||
        (!c->shared_nand && !nand_timing_check(&c->tm, err)) ||
        !blocks_needed(c, g, &per_pl, err)) {
        return false;
    }
    if (g->blks_per_pl < c->first_block + per_pl) {
        *err = g_strdup_printf("zns_num_blk=%u is too small: %" G_GUINT64_FORMAT " zones of %"
                               G_GUINT64_FORMAT " bytes over zns_stripe=%u chips need %"
                               G_GUINT64_FORMAT " blocks per plane from block %u: allowed >= %"
                               G_GUINT64_FORMAT, g->blks_per_pl, c->nr_zones,
                               c->zone_cap_bytes, c->stripe, per_pl, c->first_block,
                               c->first_block + per_pl);
        return false;
    }
    return true;
}

/* ---- placement ---- */

/* Block k (of blks_per_zone) of the zone on its i-th chip (of stripe), page 0. */
static void zone_block(const ZnsFlash *f, uint64_t zone, uint64_t i, uint64_t k, NandAddr *out)
{
    const NandGeometry *g = &f->nand->geo;
    uint64_t chip = zone % f->groups * f->cfg.stripe + i;
    uint64_t blk = zone / f->groups * f->blks_per_zone + k;

    /* channel-first: consecutive chips sit on different channels */
    out->ch = chip % g->nchs;
    out->lun = chip / g->nchs;
    /* the zone's blocks on a chip alternate planes */
    out->pl = blk % g->pls_per_lun;
    out->blk = f->cfg.first_block + blk / g->pls_per_lun;
    out->pg = 0;
}

void zns_flash_locate(const ZnsFlash *f, uint64_t zone, uint64_t page, NandAddr *out)
{
    uint64_t chip_pg = page / f->cfg.stripe, ppb = f->nand->geo.pgs_per_blk;

    g_assert(zone < f->cfg.nr_zones && page < f->cap_pages);
    zone_block(f, zone, page % f->cfg.stripe, chip_pg / ppb, out);
    out->pg = chip_pg % ppb;
}

/* ---- buffers ---- */

static void buf_destroy(gpointer p)
{
    ZoneBuf *b = p;

    g_array_free(b->inflight, TRUE);
    g_free(b);
}

static ZoneBuf *buf_lookup(const ZnsFlash *f, uint64_t zone)
{
    return g_hash_table_lookup(f->bufs, &zone);
}

static void buf_release(ZnsFlash *f, ZoneBuf *b)
{
    g_hash_table_steal(f->bufs, &b->zone);
    g_ptr_array_add(f->spare, b);
}

static void inflight_prune(ZoneBuf *b, uint64_t t)
{
    for (guint i = b->inflight->len; i-- > 0;) {
        if (g_array_index(b->inflight, InFlight, i).done <= t) {
            g_array_remove_index(b->inflight, i);
        }
    }
}

static uint64_t inflight_bytes(const ZoneBuf *b)
{
    uint64_t sum = 0;

    for (guint i = 0; i < b->inflight->len; i++) {
        sum += g_array_index(b->inflight, InFlight, i).bytes;
    }
    return sum;
}

static uint64_t inflight_first_done(const ZoneBuf *b)
{
    uint64_t t = UINT64_MAX;

    for (guint i = 0; i < b->inflight->len; i++) {
        t = MIN(t, g_array_index(b->inflight, InFlight, i).done);
    }
    return t;
}

static uint64_t inflight_last_done(const ZoneBuf *b)
{
    uint64_t t = 0;

    for (guint i = 0; i < b->inflight->len; i++) {
        t = MAX(t, g_array_index(b->inflight, InFlight, i).done);
    }
    return t;
}

/*
 * Programs the pending bytes of the zone's current unit at time t: the pages they touch
 * or, with pad, every page of the unit (the untouched ones as padding).
 */
static void program_pending(ZnsFlash *f, ZoneBuf *b, uint64_t t, bool pad)
{
    uint64_t unit = b->lo / f->unit_bytes;
    uint64_t pg_lo = b->lo / f->page_bytes, data_hi = div_up(b->hi, f->page_bytes);
    uint64_t pg_hi = pad ? MIN((unit + 1) * f->cfg.stripe, f->cap_pages) : data_hi;
    InFlight p = { .pg_lo = pg_lo, .pg_hi = pg_hi, .bytes = b->hi - b->lo };

    p.done = zns_flash_program(f, NULL, b->zone, pg_lo, pg_hi, pg_hi - data_hi, t);
    g_array_append_val(b->inflight, p);
    b->lo = b->hi;
}

/* Programs the padded partial unit; returns when all the zone's programs are done. */
static uint64_t buf_drain(ZnsFlash *f, ZoneBuf *b, uint64_t now)
{
    uint64_t t = MAX(now, b->clock);

    b->clock = t;
    inflight_prune(b, t);
    if (b->hi > b->lo) {
        program_pending(f, b, t, true);
        f->st.buffer_flushes++;
    }
    return MAX(t, inflight_last_done(b));
}

static bool buf_empty_at(const ZoneBuf *b, uint64_t t)
{
    return b->lo == b->hi && inflight_last_done(b) <= t;
}

/* Oldest first, so that a flush is deterministic and drains in write order. */
static gint buf_by_seq(gconstpointer x, gconstpointer y)
{
    const ZoneBuf *a = *(ZoneBuf *const *)x, *b = *(ZoneBuf *const *)y;

    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static GPtrArray *bufs_sorted(ZnsFlash *f)
{
    GPtrArray *all = g_ptr_array_sized_new(g_hash_table_size(f->bufs));
    GHashTableIter it;
    gpointer b;

    g_hash_table_iter_init(&it, f->bufs);
    while (g_hash_table_iter_next(&it, NULL, &b)) {
        g_ptr_array_add(all, b);
    }
    g_ptr_array_sort(all, buf_by_seq);
    return all;
}

/*
 * The zone's buffer, taking a slot if it has none: a free one, one whose zone has nothing
 * left in DRAM at *t, or the least recently written zone's once it is drained (*t moves
 * to when the victim's programs are done).
 */
static ZoneBuf *buf_acquire(ZnsFlash *f, uint64_t zone, uint64_t *t)
{
    ZoneBuf *b = buf_lookup(f, zone);

    if (b) {
        return b;
    }
    if (g_hash_table_size(f->bufs) >= f->cfg.wbuf_zones) {
        GPtrArray *all = bufs_sorted(f);
        for (guint i = 0; i < all->len; i++) {
            if (buf_empty_at(all->pdata[i], *t)) {
                buf_release(f, all->pdata[i]);
            }
        }
        if (g_hash_table_size(f->bufs) >= f->cfg.wbuf_zones) {
            ZoneBuf *victim = NULL;
            for (guint i = 0; i < all->len && !victim; i++) {
                if (buf_lookup(f, ((ZoneBuf *)all->pdata[i])->zone) == all->pdata[i]) {
                    victim = all->pdata[i];
                }
            }
            *t = buf_drain(f, victim, *t);
            buf_release(f, victim);
        }
        g_ptr_array_free(all, TRUE);
    }
    if (f->spare->len) {
        b = g_ptr_array_steal_index_fast(f->spare, f->spare->len - 1);
        g_array_set_size(b->inflight, 0);
    } else {
        b = g_new0(ZoneBuf, 1);
        b->inflight = g_array_new(FALSE, FALSE, sizeof(InFlight));
    }
    b->zone = zone;
    b->clock = *t;
    b->lo = b->hi = 0;
    g_hash_table_insert(f->bufs, &b->zone, b);
    return b;
}

/* ---- operations ---- */

ZnsFlash *zns_flash_new(const ZnsFlashConfig *c, char **err)
{
    ZnsFlash *f;
    NandModel *nand = c->shared_nand;

    if (!zns_flash_config_check(c, err)) {
        return NULL;
    }
    if (!nand) {
        nand = nand_model_new(&c->geo, &c->tm, err);
        if (!nand) {
            return NULL;
        }
    }
    f = g_new0(ZnsFlash, 1);
    f->cfg = *c;
    f->nand = nand;
    f->own_nand = !c->shared_nand;
    f->page_bytes = nand_page_bytes(&nand->geo);
    f->unit_bytes = c->stripe * f->page_bytes;
    f->cap_pages = c->zone_cap_bytes / f->page_bytes;
    f->groups = nand_luns(&nand->geo) / c->stripe;
    f->blks_per_zone = zone_blocks_per_chip(c, &nand->geo);
    f->bufs = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, buf_destroy);
    f->spare = g_ptr_array_new_with_free_func(buf_destroy);
    return f;
}

void zns_flash_free(ZnsFlash *f)
{
    if (f) {
        g_hash_table_destroy(f->bufs);
        g_ptr_array_free(f->spare, TRUE);
        if (f->own_nand) {
            nand_model_free(f->nand);
        }
        g_free(f);
    }
}

uint64_t zns_flash_write(ZnsFlash *f, uint64_t offset, uint64_t len, uint64_t now_ns)
{
    uint64_t end = offset + len, result = now_ns;
    bool waited = false;

    f->st.host_bytes_written += len;
    while (offset < end) {
        uint64_t zone = offset / f->cfg.zone_bytes, zoff = offset % f->cfg.zone_bytes;
        uint64_t zend = MIN(zoff + (end - offset), f->cfg.zone_bytes);
        uint64_t wend = MIN(zend, f->cfg.zone_cap_bytes), t = now_ns;
        ZoneBuf *b;

        if (zone >= f->cfg.nr_zones) {
            break;
        }
        offset += zend - zoff;
        if (zoff >= wend) {
            continue;
        }
        b = buf_acquire(f, zone, &t);
        waited |= t > now_ns;
        t = MAX(t, b->clock);
        b->seq = ++f->seq;
        if (b->hi > b->lo && zoff != b->hi) {
            buf_drain(f, b, t);         /* not sequential: the old unit goes out padded */
        }
        if (b->hi == b->lo) {
            b->lo = b->hi = zoff;
        }
        while (b->hi < wend) {
            uint64_t unit_end = MIN((b->hi / f->unit_bytes + 1) * f->unit_bytes,
                                    f->cfg.zone_cap_bytes);
            uint64_t piece_end = MIN(wend, unit_end), piece = piece_end - b->hi;

            /* fits once enough earlier programs are done (always: wbuf >= one unit) */
            inflight_prune(b, t);
            while (b->hi - b->lo + inflight_bytes(b) + piece > f->cfg.wbuf_bytes) {
                t = inflight_first_done(b);
                waited = true;
                inflight_prune(b, t);
            }
            b->hi = piece_end;
            if (b->hi == unit_end) {
                program_pending(f, b, t, false);
            }
        }
        b->clock = t;
        result = MAX(result, t);
    }
    if (waited) {
        f->st.buffer_waits++;
    }
    return result;
}

static bool page_in_buffer(const ZoneBuf *b, uint64_t pg, uint64_t lo, uint64_t hi,
                           uint64_t now)
{
    if (b->hi > b->lo && lo >= b->lo && hi <= b->hi) {
        return true;
    }
    for (guint i = 0; i < b->inflight->len; i++) {
        const InFlight *p = &g_array_index(b->inflight, InFlight, i);
        if (pg >= p->pg_lo && pg < p->pg_hi && p->done > now) {
            return true;
        }
    }
    return false;
}

static uint64_t read_range(ZnsFlash *f, uint64_t offset, uint64_t len, uint64_t now_ns,
                           bool host)
{
    uint64_t end = offset + len, result = now_ns;

    while (offset < end) {
        uint64_t zone = offset / f->cfg.zone_bytes, zoff = offset % f->cfg.zone_bytes;
        uint64_t pg = zoff / f->page_bytes;
        uint64_t hi = MIN((pg + 1) * f->page_bytes, zoff + (end - offset));
        ZoneBuf *b;

        if (zone >= f->cfg.nr_zones) {
            break;
        }
        offset += hi - zoff;
        if (pg >= f->cap_pages) {
            continue;                   /* beyond the capacity: no flash */
        }
        b = buf_lookup(f, zone);
        if (b && page_in_buffer(b, pg, zoff, hi, now_ns)) {
            f->st.buffer_read_hits += host;
        } else {
            /* the bytes of the page asked for (nand_partial_xfer moves only those) */
            NandReq r = { .op = NAND_OP_READ, .bytes = hi - zoff };
            zns_flash_locate(f, zone, pg, &r.addr);
            uint64_t done = nand_submit(f->nand, &r, now_ns);
            result = MAX(result, done);
            f->st.pages_read++;
            f->st.prefetch_pages_read += !host;
        }
    }
    return result;
}

uint64_t zns_flash_read(ZnsFlash *f, uint64_t offset, uint64_t len, uint64_t now_ns)
{
    f->st.host_bytes_read += len;
    return read_range(f, offset, len, now_ns, true);
}

uint64_t zns_flash_prefetch(ZnsFlash *f, uint64_t offset, uint64_t len, uint64_t now_ns)
{
    return read_range(f, offset, len, now_ns, false);
}

uint64_t zns_flash_flush(ZnsFlash *f, uint64_t now_ns)
{
    GPtrArray *all = bufs_sorted(f);
    uint64_t result = now_ns;

    for (guint i = 0; i < all->len; i++) {
        uint64_t done = buf_drain(f, all->pdata[i], now_ns);
        result = MAX(result, done);
    }
    g_ptr_array_free(all, TRUE);
    return result;
}

uint64_t zns_flash_drain_zone(ZnsFlash *f, uint64_t zone, uint64_t now_ns)
{
    ZoneBuf *b = buf_lookup(f, zone);

    return b ? buf_drain(f, b, now_ns) : now_ns;
}

uint64_t zns_flash_reset_zone(ZnsFlash *f, uint64_t zone, uint64_t now_ns)
{
    ZoneBuf *b = buf_lookup(f, zone);
    uint64_t result = now_ns;

    if (zone >= f->cfg.nr_zones) {
        return now_ns;
    }
    if (b) {
        buf_release(f, b);      /* its data is gone; programs in flight still hold chips */
    }
    for (uint64_t i = 0; i < f->cfg.stripe; i++) {
        /* the zone's blocks of one block index on a chip's planes: erased at once */
        for (uint64_t k = 0; k < f->blks_per_zone;) {
            NandAddr a, b;
            uint32_t planes = 0;
            zone_block(f, zone, i, k, &a);
            for (; k < f->blks_per_zone; k++) {
                zone_block(f, zone, i, k, &b);
                if (b.blk != a.blk) {
                    break;
                }
                planes |= 1u << b.pl;
            }
            uint64_t done = nand_op_planes(f->nand, NAND_OP_ERASE, &a, planes, now_ns);
            result = MAX(result, done);
            f->st.blocks_erased += __builtin_popcount(planes);
        }
    }
    return result;
}

uint64_t zns_flash_program(ZnsFlash *f, NandModel *nand, uint64_t zone, uint64_t pg_lo,
                           uint64_t pg_hi, uint64_t pad, uint64_t now_ns)
{
    uint64_t done = now_ns;

    pg_hi = MIN(pg_hi, f->cap_pages);
    for (uint64_t pg = pg_lo; pg < pg_hi; pg++) {
        NandAddr a;
        zns_flash_locate(f, zone, pg, &a);
        uint64_t t = nand_op(nand ? nand : f->nand, NAND_OP_PROGRAM, &a, now_ns);
        done = MAX(done, t);
    }
    if (!nand || nand == f->nand) {
        f->st.pages_programmed += pg_hi > pg_lo ? pg_hi - pg_lo : 0;
        f->st.pad_pages_programmed += pad;
    }
    return done;
}

const ZnsFlashConfig *zns_flash_get_config(const ZnsFlash *f)
{
    return &f->cfg;
}

const ZnsFlashStats *zns_flash_stats(const ZnsFlash *f)
{
    return &f->st;
}

NandModel *zns_flash_nand(ZnsFlash *f)
{
    return f->nand;
}
