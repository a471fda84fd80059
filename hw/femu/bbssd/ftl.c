/*
 * The blackbox FTL; see ftl.h for the behaviour. The full lines are GC's candidates
 * (ftl/victim.h: O(log lines) per invalidation, memory O(lines) whatever the line size),
 * and the gc_policy picks among them. What the FDP FTL does alike is in ftl/.
 *
 * Store (ftl_attach_store), little-endian, as the FDP FTL's:
 *   header (512 B)     magic, version, what sets the layout and the meaning of what
 *                      follows (geometry, exposed pages, first block, mapping units per
 *                      NAND page: 0 for one, so that such stores read as before), CRC-32.
 *   statistics         two slots {seq, the FtlStats counters, CRC} (ftl-common): written
 *                      at the end of each call that changed them, into the older slot
 *                      (reads' own counters every FTL_READ_SAVES reads, stats_save_read).
 *   erase marks        one byte per chip (stripe slot): the GC victim's blocks on that chip
 *                      are erased (background GC erases chip by chip, calls apart).
 *   line records (32 B) {wp word, state, stream, erases, order, CRC of state..order}; all
 *                      zero is a free line never erased. The wp word is an open line's
 *                      next page with a 16-bit check: one 8-byte store per page, no CRC;
 *                      the stream byte says whose open line it is (0 before streams=).
 *   mapping            one 64-bit entry per lpn: ppn + 1 (bits 0-47, 0: unmapped) and a
 *                      16-bit check of lpn and ppn (with map_unit_kb, of mapping units).
 * So a page written or moved costs two 8-byte stores (wp word, entry), a trim one; a line
 * changing state one record; a Flush's padding one wp word. Valid counts and the reverse
 * map are not stored. Units waiting in the buffer for their NAND page's program are in the
 * mapping already (the data is in the backend): a load goes on filling that page.
 *
 * Crash ordering (each 8-byte store is one instruction: a kill never tears it; the
 * compiler keeps the stores in program order, stored()): the wp word goes before the entry
 * that points below it; a line's record says OPEN only after its wp word is reset; a
 * victim's erase marks are cleared before its record says VICTIM, and a chip's mark is set
 * after its pages moved out and its blocks were erased; the record says FREE after all of
 * it. A load keeps open (one per stream configured) and victim lines as they were (the
 * victim's unerased chips resume as background GC), drops entries failing their check
 * (and, of two naming one page, the later lpn's), raises an open line's write position
 * over entries past it, and repairs a line whose record fails its CRC or that entries
 * point into while free: full if it holds valid pages, else free (so a free line is left
 * for GC whenever one can be: a load that would leave none refuses the store).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ftl-internal.h"
#include "../media/record.h"

#include <glib.h>
#include <string.h>

#define FTL_PPN_MASK ((1ULL << 48) - 1)

#define FTL_STORE_MAGIC 0x54464242u     /* "BBFT" */
#define FTL_STORE_VERSION 1u
#define FTL_HDR_BYTES 512u
#define FTL_HDR_CRC_AT 508u
#define FTL_NSTATS 12u
#define FTL_STATS_REC (16u + 8u * FTL_NSTATS)
#define FTL_LINE_REC 32u

/* check salts: a record copied to another place fails its check */
#define SALT_HEADER (1ULL << 60)
#define SALT_STATS (2ULL << 60)
#define SALT_LINE (3ULL << 60)
#define SALT_WP (1ULL << 63)            /* the wp word's "lpn": above any real one */

/* ---- geometry helpers ---- */

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

static uint64_t pages_per_line(const NandGeometry *g)
{
    return nand_luns(g) * g->pls_per_lun * g->pgs_per_blk;
}

void ftl_ppn_to_addr(const Ftl *f, uint64_t ppn, NandAddr *a)
{
    const NandGeometry *g = &f->cfg.geo;
    uint64_t np = ppn >> f->log_upp, i;     /* the NAND page, numbered as lines stripe */

    if (f->pow2) {
        /* the same answers as the divisions below, without their latency */
        i = np & (f->line_pages - 1);
        a->blk = f->cfg.first_block + (np >> f->log_line);
        a->ch = i & (g->nchs - 1);
        a->lun = (i >> f->log_chs) & (g->luns_per_ch - 1);
        a->pl = (i >> f->log_luns) & (g->pls_per_lun - 1);
        a->pg = i >> f->log_stripe;
        return;
    }
    i = np % f->line_pages;
    a->blk = f->cfg.first_block + np / f->line_pages;
    a->ch = i % g->nchs;
    a->lun = (i / g->nchs) % g->luns_per_ch;
    a->pl = (i / nand_luns(g)) % g->pls_per_lun;
    a->pg = i / f->stripe;
}

uint64_t ftl_addr_to_ppn(const Ftl *f, const NandAddr *a)
{
    const NandGeometry *g = &f->cfg.geo;
    uint64_t i = (uint64_t)a->pg * f->stripe + (uint64_t)a->pl * nand_luns(g) +
                 (uint64_t)a->lun * g->nchs + a->ch;

    return ((uint64_t)(a->blk - f->cfg.first_block) * f->line_pages + i) << f->log_upp;
}

/* The first unit of NAND page i (0 .. line_pages - 1) of the line whose first unit is base. */
static uint64_t page_unit(const Ftl *f, uint64_t base, uint64_t i)
{
    return base + (i << f->log_upp);
}

/* The valid units of the NAND page whose first unit is first. */
static uint32_t page_valid(const Ftl *f, uint64_t first)
{
    uint32_t n = 0;

    for (uint32_t u = 0; u < f->upp; u++) {
        n += rev_get(f, first + u) != 0;
    }
    return n;
}

static uint32_t forced_lines(uint32_t nlines, uint32_t pcent_high)
{
    return MAX(ftl_gc_thres(nlines, pcent_high), FTL_RESERVE_LINES);
}

/* The lpn of the first valid unit of the NAND page whose first unit is first (it has one). */
static uint64_t first_lpn(const Ftl *f, uint64_t first)
{
    while (!rev_get(f, first)) {
        first++;
    }
    return rev_get(f, first) - 1;
}

/* ---- configuration ---- */

#define MAX_BLKS_PER_PL (1u << 20)  /* as nand_geometry_check */

/* Blocks per plane for op_pcent; the tolerance keeps float noise from adding a block. */
static uint64_t blocks_for_op(uint64_t exposed, uint64_t ppl, double op_pcent)
{
    double x = (double)exposed * (1.0 + op_pcent / 100.0) / (double)ppl;
    uint64_t n;

    x -= x * 1e-12;
    if (x >= 1e18) {
        return UINT64_MAX;
    }
    n = (uint64_t)x;
    return (double)n < x ? n + 1 : n;
}

bool ftl_derive_blocks_spare(NandGeometry *geo, uint64_t exposed_bytes, double op_pcent,
                             uint32_t min_spare, bool raise, char **err)
{
    NandGeometry g = *geo;
    uint64_t exposed, ppl, data, blks, need;

    g.blks_per_pl = 1;
    if (!nand_geometry_check(&g, err)) {
        return false;
    }
    if (!(op_pcent >= 0 && op_pcent <= 1000)) {
        *err = g_strdup_printf("op_pcent=%g is out of range: allowed 0..1000", op_pcent);
        return false;
    }
    exposed = div_up(exposed_bytes, nand_page_bytes(&g));
    if (!exposed) {
        *err = g_strdup("devsz_mb=0: the exposed capacity must be at least one NAND page");
        return false;
    }
    ppl = pages_per_line(&g);
    data = div_up(exposed, ppl);
    need = data + min_spare;
    blks = blocks_for_op(exposed, ppl, op_pcent);
    if (blks > MAX_BLKS_PER_PL || need > MAX_BLKS_PER_PL) {
        *err = g_strdup_printf("op_pcent=%g with devsz_mb=%" G_GUINT64_FORMAT " needs "
                               "blks_per_pl=%" G_GUINT64_FORMAT ", above the maximum %u: "
                               "use more channels, chips, planes or pages per block",
                               op_pcent, exposed_bytes >> 20, MAX(blks, need),
                               MAX_BLKS_PER_PL);
        return false;
    }
    if (blks < need && raise) {
        blks = need;
    }
    if (blks < need) {
        /* smallest op_pcent (to 0.01) that gives the minimum spare lines */
        double min_op = ((double)(need - 1) * ppl / exposed - 1.0) * 100.0;
        min_op = (double)(uint64_t)(MAX(min_op, 0) * 100.0) / 100.0;
        while (blocks_for_op(exposed, ppl, min_op) < need) {
            min_op += 0.01;
        }
        *err = g_strdup_printf("op_pcent=%g leaves %" G_GUINT64_FORMAT " spare blocks per "
                               "plane beyond the %" G_GUINT64_FORMAT " that devsz_mb=%"
                               G_GUINT64_FORMAT " needs; GC needs at least %d: allowed "
                               "op_pcent >= %.2f", op_pcent, blks - MIN(blks, data), data,
                               exposed_bytes >> 20, min_spare, min_op);
        return false;
    }
    geo->blks_per_pl = (uint32_t)blks;
    return true;
}

bool ftl_derive_blocks(NandGeometry *geo, uint64_t exposed_bytes, double op_pcent, char **err)
{
    return ftl_derive_blocks_spare(geo, exposed_bytes, op_pcent, FTL_MIN_SPARE_LINES, false,
                                   err);
}

uint32_t ftl_units_per_page(const FtlConfig *c)
{
    return MAX(c->units_per_pg, 1);
}

uint64_t ftl_unit_bytes(const FtlConfig *c)
{
    return nand_page_bytes(&c->geo) / ftl_units_per_page(c);
}

uint32_t ftl_min_spare_lines(const FtlConfig *c)
{
    FtlPolicyChoice s = c->streams.policy ? c->streams : ftl_policy_default(FTL_STREAM);

    return FTL_MIN_SPARE_LINES + ftl_stream_of(&s)->nstreams - 1;
}

bool ftl_config_check(const FtlConfig *c, char **err)
{
    const NandGeometry *g = &c->geo;
    uint64_t ppl, data, spare;
    uint32_t nlines = g->blks_per_pl, h, min_spare = ftl_min_spare_lines(c);
    uint32_t upp = ftl_units_per_page(c);

    if (!ftl_check_common(g, &c->tm, c->exposed_pages, c->gc_thres_pcent,
                          c->gc_thres_pcent_high, err)) {
        return false;
    }
    if (upp > 1 && (!femu_is_pow2(upp) || g->secs_per_pg % upp)) {
        *err = g_strdup_printf("map_unit_kb: %u mapping units per NAND page: allowed a power "
                               "of two that divides secs_per_pg (%u)", upp, g->secs_per_pg);
        return false;
    }
    if (nand_total_pages(g) >= FTL_PPN_MASK / upp) {
        *err = g_strdup_printf("the flash has %" G_GUINT64_FORMAT " mapping units, the FTL "
                               "maps fewer than 2^48: lower blks_per_pl or the chips",
                               nand_total_pages(g) * upp);
        return false;
    }
    ppl = pages_per_line(g) * upp;
    data = div_up(c->exposed_pages, ppl);
    if (data > nlines || nlines - data < min_spare) {
        *err = g_strdup_printf("blks_per_pl=%u is too small for devsz_mb=%" G_GUINT64_FORMAT
                               " (%" G_GUINT64_FORMAT " blocks per plane of data): allowed "
                               "blks_per_pl >= %" G_GUINT64_FORMAT ", which leaves %u spare "
                               "for GC (or raise op_pcent, or lower devsz_mb)", nlines,
                               c->exposed_pages * ftl_unit_bytes(c) >> 20, data,
                               data + min_spare, min_spare);
        return false;
    }
    spare = nlines - data;
    /* at least one spare line beyond forced GC's and the open ones: the garbage it collects */
    h = ftl_pcent_high_min(nlines, c->gc_thres_pcent_high, FTL_RESERVE_LINES,
                           spare - (min_spare - FTL_RESERVE_LINES - 1));
    if (h != c->gc_thres_pcent_high) {
        /* forced GC could never raise free lines above its threshold: GC on every write */
        if (h > 99) {
            *err = g_strdup_printf("gc_thres_pcent_high=%u: forced GC would keep too many "
                                   "of the %" G_GUINT64_FORMAT " spare lines free at any "
                                   "value (they must also hold the open line and a line of "
                                   "garbage); raise op_pcent (or blks_per_pl)",
                                   c->gc_thres_pcent_high, spare);
        } else {
            *err = g_strdup_printf("gc_thres_pcent_high=%u keeps %u free lines for forced GC "
                                   "but only %" G_GUINT64_FORMAT " spare lines exist, which "
                                   "must also hold the open line and a line of garbage: "
                                   "allowed gc_thres_pcent_high %u..99 (or raise op_pcent)",
                                   c->gc_thres_pcent_high,
                                   forced_lines(nlines, c->gc_thres_pcent_high), spare, h);
        }
        return false;
    }
    return true;
}

/* ---- GC's candidates: full lines ---- */

/* Fewest valid pages first; ties go to the line filled first, then the lower number. */
static bool line_less(const void *ctx, uint32_t a, uint32_t b)
{
    const Ftl *f = ctx;
    const FtlLine *x = &f->lines[a], *y = &f->lines[b];

    if (x->vpc != y->vpc) {
        return x->vpc < y->vpc;
    }
    if (x->order != y->order) {
        return x->order < y->order;
    }
    return a < b;
}

static void line_view(const void *ctx, uint32_t line, FtlUnit *u)
{
    const FtlLine *l = &((const Ftl *)ctx)->lines[line];

    *u = (FtlUnit){ .id = line, .valid = l->vpc, .closed = l->order, .erases = l->erases };
}

/* ---- the store: what changes, written through ---- */

static void stored(Ftl *f)
{
    ftl_stored(&f->store_hook);
}

/* One 8-byte store: one instruction, so a kill never tears it. */
static void store_word(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, GUINT64_TO_LE(v), __ATOMIC_RELAXED);
}

static uint8_t *line_rec(const Ftl *f, uint32_t line)
{
    return f->store + f->lay.off_line + (uint64_t)line * FTL_LINE_REC;
}

static uint64_t wp_word(uint32_t line, uint64_t idx)
{
    return idx | (uint64_t)ftl_map_check(SALT_WP | line, idx) << 48;
}

/* The open line's next page index. */
static void wp_save(Ftl *f, uint32_t line, uint64_t idx)
{
    if (f->store) {
        store_word((uint64_t *)line_rec(f, line), wp_word(line, idx));
        stored(f);
    }
}

/* A line's state, erases and order (a victim's record says so: its marks follow). */
static void line_save(Ftl *f, uint32_t line)
{
    const FtlLine *l = &f->lines[line];
    uint8_t *p;

    if (!f->store) {
        return;
    }
    p = line_rec(f, line);
    p[8] = l->state;
    p[9] = l->state == FTL_LINE_OPEN ? l->stream : 0;
    memset(p + 10, 0, 2);
    record_put_le(p + 12, l->erases, 4);
    record_put_le(p + 16, l->order, 8);
    record_put_le(p + 24, ftl_crc32_salted(SALT_LINE | line, p + 8, 16), 4);
    record_put_le(p + 28, 0, 4);
    stored(f);
}

static void stats_write(Ftl *f)
{
    const FtlStats *s = &f->st;
    uint64_t v[FTL_NSTATS] = {
        s->host_pages_written, s->host_pages_read, s->unmapped_pages_read,
        s->prefetch_pages_read, s->nand_pages_written, s->gc_pages_moved, s->gc_runs,
        s->gc_forced_runs, s->gc_bg_ops, s->gc_read_overtakes, s->blocks_erased,
        s->pages_trimmed,
    };

    ftl_slot_save(f->store + f->lay.off_stats, FTL_STATS_REC, &f->stats_seq, SALT_STATS, v,
                  FTL_NSTATS);
    f->saved = *s;
    f->reads_unsaved = 0;
    stored(f);
}

/* Without a store (femu-sim), nothing to do, not even reading the counters. */
static void stats_save(Ftl *f)
{
    if (f->store && memcmp(&f->saved, &f->st, sizeof(f->st))) {
        stats_write(f);
    }
}

/*
 * After a read: its counters alone changed, unless background GC ran before it. Those are
 * saved with the next other call (idle, flush, write, trim) or every FTL_READ_SAVES reads.
 */
static void stats_save_read(Ftl *f)
{
    if (f->st.gc_bg_ops != f->saved.gc_bg_ops || f->st.gc_runs != f->saved.gc_runs ||
        ++f->reads_unsaved >= FTL_READ_SAVES) {
        stats_save(f);
    }
}

/*
 * ---- the mapping ----
 * As stored (map_log 3): 8 bytes, ppn + 1 and a check of it against lpn, so that a load
 * drops a damaged entry. In our own memory, while every ppn + 1 fits (map_log 2): 4
 * bytes, ppn + 1 alone, which no load reads. Half the bytes: on a large drive, half the
 * page walks of a random write's or GC move's touch.
 */

static uint64_t map_entry(uint64_t lpn, uint64_t ppn)
{
    return (ppn + 1) | (uint64_t)ftl_map_check(lpn, ppn + 1) << 48;
}

/* The entries in their stored form (map_log 3: the store's, or our own past 2^32 pages). */
static uint64_t *stored_map(const Ftl *f)
{
    return f->l2p;
}

/* lpn's ppn + 1, 0 when unmapped (entries in use are valid ones: a load dropped the rest). */
static uint64_t map_get(const Ftl *f, uint64_t lpn)
{
    if (f->map_log == 2) {
        return ((const uint32_t *)f->l2p)[lpn];
    }
    return GUINT64_FROM_LE(stored_map(f)[lpn]) & FTL_PPN_MASK;
}

/* Maps lpn to ppn; FTL_UNMAPPED: unmaps it. */
static void map_put(Ftl *f, uint64_t lpn, uint64_t ppn)
{
    if (f->map_log == 2) {
        ((uint32_t *)f->l2p)[lpn] = ppn + 1;
        return;
    }
    store_word(&stored_map(f)[lpn], ppn == FTL_UNMAPPED ? 0 : map_entry(lpn, ppn));
    if (f->store) {
        stored(f);
    }
}

static void map_fetch(const Ftl *f, uint64_t lpn)
{
    femu_fetch((const char *)f->l2p + (lpn << f->map_log));
}

/* ---- lines and the write pointer ---- */

/* In memory: the caller saves the record. */
static void free_push(Ftl *f, uint32_t line)
{
    f->lines[line].state = FTL_LINE_FREE;
    ftl_free_push(&f->free, line);
    f->st.free_lines = f->free.n;
}

/* GC thresholds and FTL_MIN_SPARE_LINES keep a line free for every call; see ftl.h */
static uint32_t free_pop(Ftl *f)
{
    uint32_t line = ftl_free_pop(&f->free);

    f->st.free_lines = f->free.n;
    return line;
}

/* The victim's blocks are all erased: a free line again. */
static void line_freed(Ftl *f, uint32_t line)
{
    FtlLine *l = &f->lines[line];

    l->erases += l->erases < UINT32_MAX;
    l->order = ++f->order;
    free_push(f, line);
    line_save(f, line);
}

/* A line becomes GC's victim: its erase marks cleared first (see the top). */
static void victim_begin(Ftl *f, uint32_t line)
{
    f->lines[line].state = FTL_LINE_VICTIM;
    if (f->store) {
        memset(f->store + f->lay.off_marks, 0, nand_luns(&f->cfg.geo));
        stored(f);
        line_save(f, line);
    }
}

/* The victim's blocks on the chip of stripe slot k are erased. */
static void victim_erased(Ftl *f, uint64_t k)
{
    if (f->store) {
        f->store[f->lay.off_marks + k] = 1;
        stored(f);
    }
}

static void invalidate(Ftl *f, uint64_t ppn)
{
    uint32_t line = ppn / f->units_per_line;
    FtlLine *l = &f->lines[line];

    rev_put(f, ppn, 0);
    l->vpc--;
    if (l->state == FTL_LINE_FULL) {
        ftl_victims_fell(&f->victims, line);
    }
}

/* The stream (streams=) of a host write (gc false) or a GC move of lpn. */
static uint32_t stream_of(const Ftl *f, bool gc, uint64_t lpn)
{
    const FtlStreamPolicy *p = ftl_stream_of(&f->cfg.streams);
    FtlStreamPage pg = { .lpn = lpn, .gc = gc, .age = FTL_STREAM_UNWRITTEN,
                         .units = f->nlines };
    uint64_t e = p->ages ? map_get(f, lpn) : 0;

    if (e) {
        /* its line's order is saved: a reload tells the same age */
        const FtlLine *l = &f->lines[(e - 1) / f->units_per_line];
        pg.age = l->state == FTL_LINE_OPEN ? 0 : f->order - l->order;
    }
    return p->stream_of(&f->cfg.streams, &pg);
}

uint32_t ftl_stream_for(const Ftl *f, bool gc, uint64_t lpn)
{
    return stream_of(f, gc, lpn);
}

/* Stream s's open line is full: a GC candidate at once; the next line opens when needed. */
static void line_filled(Ftl *f, uint32_t s)
{
    uint32_t line = f->wp_line[s];

    f->lines[line].state = FTL_LINE_FULL;
    f->lines[line].order = ++f->order;
    line_save(f, line);
    ftl_victims_add(&f->victims, line);
    f->wp_line[s] = FTL_NO_LINE;
}

/*
 * Maps lpn to the next page of stream s's open line (no NAND operation); returns the
 * page.
 */
static uint64_t map_page(Ftl *f, uint64_t lpn, uint32_t s)
{
    uint32_t *wl = &f->wp_line[s];
    uint64_t *wi = &f->wp_idx[s];
    uint64_t ppn;
    uint64_t old;

    if (*wl == FTL_NO_LINE) {
        *wl = free_pop(f);
        f->lines[*wl].state = FTL_LINE_OPEN;
        f->lines[*wl].stream = s;
        *wi = 0;
        wp_save(f, *wl, 0);
        line_save(f, *wl);
    }
    ppn = (uint64_t)*wl * f->units_per_line + (*wi)++;
    wp_save(f, *wl, *wi);       /* before the entry that points below it */
    old = map_get(f, lpn);
    if (old) {
        invalidate(f, old - 1);
    }
    map_put(f, lpn, ppn);
    rev_put(f, ppn, lpn + 1);
    f->lines[*wl].vpc++;
    if (*wi == f->units_per_line) {
        line_filled(f, s);
    }
    return ppn;
}

/*
 * Sub-page units: unit ppn of stream s holds its data from `ready` on. Its NAND page is
 * programmed once full, with the chip's other planes (ftl_program_hold); till then the data
 * waits in the controller's buffer. Returns the completion of what it booked, else ready.
 */
static uint64_t fill_unit(Ftl *f, uint32_t s, uint64_t ppn, uint64_t ready)
{
    NandAddr a;

    f->fill_ready[s] = MAX(f->fill_ready[s], ready);
    if ((ppn + 1) & (f->upp - 1)) {
        return ready;
    }
    ftl_ppn_to_addr(f, ppn, &a);
    ready = f->fill_ready[s];
    f->fill_ready[s] = 0;
    return ftl_program_hold(&f->progs, &a, ready);
}

/* Flush: stream s's NAND page being filled is programmed, its unused units left as padding. */
static void pad_page(Ftl *f, uint32_t s, uint64_t now)
{
    uint32_t line = f->wp_line[s];
    uint64_t end;

    if (line == FTL_NO_LINE || !(f->wp_idx[s] & (f->upp - 1))) {
        return;
    }
    end = (f->wp_idx[s] | (f->upp - 1)) + 1;
    f->wp_idx[s] = end;
    wp_save(f, line, end);
    fill_unit(f, s, (uint64_t)line * f->units_per_line + end - 1, now);
    if (end == f->units_per_line) {
        line_filled(f, s);
    }
}

/* GC moves lpn, whose data is read at `ready`: to its stream's next page, programmed after. */
static void write_page(Ftl *f, uint64_t lpn, uint64_t ready)
{
    uint32_t s = stream_of(f, true, lpn);
    uint64_t ppn = map_page(f, lpn, s);
    NandAddr a;

    if (f->upp > 1) {
        fill_unit(f, s, ppn, ready);
        return;
    }
    ftl_ppn_to_addr(f, ppn, &a);
    ftl_program(&f->progs, &a, 1u << a.pl, ready);
}

/* One NAND read of n units of the page at a, from `at`: tR, then their bytes out. */
static uint64_t read_units(Ftl *f, const NandAddr *a, uint64_t n, uint64_t at)
{
    NandReq r = { .op = NAND_OP_READ, .addr = *a, .bytes = n * f->unit_bytes,
                  .unit_xfer = true };

    return f->upp == 1 ? nand_op(f->nand, NAND_OP_READ, a, at) : nand_submit(f->nand, &r, at);
}

/*
 * GC moves the valid units of NAND page i of the victim whose first unit is base: one read
 * of their bytes from `at`, then each to its stream. Returns the read's completion.
 */
static uint64_t gc_move_page(Ftl *f, uint64_t base, uint64_t i, uint64_t at)
{
    uint64_t first = page_unit(f, base, i), rd;
    NandAddr a;

    ftl_ppn_to_addr(f, first, &a);
    rd = read_units(f, &a, page_valid(f, first), at);
    for (uint32_t u = 0; u < f->upp; u++) {
        uint64_t lpn1 = rev_get(f, first + u);
        if (lpn1) {
            write_page(f, lpn1 - 1, rd);
            f->st.gc_pages_moved++;
        }
    }
    return rd;
}

/* ---- garbage collection ---- */

/* Pages ahead whose mapping entries a forced GC fetches into the cache. */
#define GC_AHEAD 8

/* The mapping entries of the valid units of NAND page i of the line at base, if any. */
static void page_fetch(const Ftl *f, uint64_t base, uint64_t i)
{
    for (uint32_t u = 0; i < f->line_pages && u < f->upp; u++) {
        uint64_t lpn1 = rev_get(f, page_unit(f, base, i) + u);
        if (lpn1) {
            map_fetch(f, lpn1 - 1);
        }
    }
}

/* Forced GC at NAND page i of the victim at base: the mapping entries GC_AHEAD pages on. */
static void gc_fetch_ahead(const Ftl *f, uint64_t base, uint64_t i)
{
    page_fetch(f, base, i + GC_AHEAD);
}

/*
 * GC's next victim: the policy's choice among the full lines, taken out of them; one that
 * frees something when must_free (ftl_victims_take).
 */
static uint32_t victim_take(Ftl *f, bool must_free)
{
    return ftl_victims_take(&f->victims, f->order, f->st.gc_runs, must_free);
}

/* Collects the policy's victim: moves its valid pages, erases its blocks. */
static void gc_collect(Ftl *f, uint64_t now_ns, bool forced)
{
    const NandGeometry *g = &f->cfg.geo;
    uint32_t line = victim_take(f, true);
    uint64_t base = (uint64_t)line * f->units_per_line, nluns = nand_luns(g);
    NandAddr a;

    victim_begin(f, line);
    for (uint64_t i = 0; i < nluns; i++) {
        f->lun_read_ns[i] = now_ns;
    }
    for (uint64_t i = 0; i < f->line_pages && f->lines[line].vpc; i++) {
        uint64_t rd, *lun_rd;
        gc_fetch_ahead(f, base, i);
        if (!page_valid(f, page_unit(f, base, i))) {
            continue;
        }
        ftl_ppn_to_addr(f, page_unit(f, base, i), &a);
        rd = gc_move_page(f, base, i, now_ns);
        lun_rd = &f->lun_read_ns[nand_lun_index(f->nand, &a)];
        *lun_rd = MAX(*lun_rd, rd);
    }
    g_assert(f->lines[line].vpc == 0);
    /* each chip erases the line's blocks on all its planes at once, after its reads */
    a = (NandAddr){ .blk = f->cfg.first_block + line };
    for (a.ch = 0; a.ch < g->nchs; a.ch++) {
        for (a.lun = 0; a.lun < g->luns_per_ch; a.lun++) {
            nand_op_planes(f->nand, NAND_OP_ERASE, &a, UINT32_MAX,
                           f->lun_read_ns[nand_lun_index(f->nand, &a)]);
            f->st.blocks_erased += g->pls_per_lun;
            victim_erased(f, (uint64_t)a.lun * g->nchs + a.ch);
        }
    }
    line_freed(f, line);
    f->st.gc_runs++;
    f->st.gc_forced_runs += forced;
}

/*
 * A line has garbage to free (forced GC), or enough of it to be worth collecting unasked
 * (FEMU: 1/8 of a line); the policy then picks which line.
 */
static bool victim_gains(const Ftl *f, bool background)
{
    uint64_t invalid = ftl_victims_most_garbage(&f->victims);

    return background ? invalid >= MAX(1, f->units_per_line / 8) : invalid > 0;
}

/*
 * The slots with work left by ready_at: a heap of its own (keys inline, no callbacks), as
 * bg_run takes slots off and back on for every host command that passes min_ready.
 */
static bool due_less(const FtlDue *x, const FtlDue *y)
{
    return x->at != y->at ? x->at < y->at : x->slot < y->slot;
}

static void due_push(FtlBgJob *j, uint64_t slot)
{
    uint32_t i = j->ndue++;
    FtlDue d = { j->ready_at[slot], slot };

    while (i && due_less(&d, &j->due[(i - 1) / 2])) {
        j->due[i] = j->due[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    j->due[i] = d;
}

static uint64_t due_pop(FtlBgJob *j)
{
    uint64_t top = j->due[0].slot;
    FtlDue d = j->due[--j->ndue];
    uint32_t i = 0;

    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= j->ndue) {
            break;
        }
        if (c + 1 < j->ndue && due_less(&j->due[c + 1], &j->due[c])) {
            c++;
        }
        if (!due_less(&j->due[c], &d)) {
            break;
        }
        j->due[i] = j->due[c];
        i = c;
    }
    j->due[i] = d;
    return top;
}

/* line becomes the background victim; the chips in erased[] (NULL: none) are done. */
static void bg_begin(Ftl *f, uint32_t line, const bool *erased)
{
    FtlBgJob *j = &f->bg;

    j->line = line;
    j->valid0 = f->lines[line].vpc;
    j->turn = 0;
    j->chips_left = 0;
    j->ndue = 0;
    for (uint64_t k = 0; k < nand_luns(&f->cfg.geo); k++) {
        bool done = erased && erased[k];
        j->next[k] = done ? FTL_NEVER : k;
        j->read_done[k] = 0;
        j->ready_at[k] = 0;
        j->chips_left += !done;
        if (!done) {
            due_push(j, k);
        }
    }
    j->min_ready = 0;
}

/*
 * Background GC's look-ahead on a slot's pages, in pages of that slot: mapping entries of
 * the valid ones BG_MAP_AHEAD on (their reverse entries were fetched BG_REV_AHEAD -
 * BG_MAP_AHEAD moves ago), reverse entries BG_REV_AHEAD on. Two of each per move: about
 * half the pages of a victim are invalid, skipped without a move.
 */
#define BG_MAP_AHEAD 4
#define BG_REV_AHEAD 8

/* Slot pages from i on, as above: fetched into the CPU cache while other work goes on. */
static void bg_prefetch(const Ftl *f, uint64_t base, uint64_t i, uint64_t nluns)
{
    for (uint64_t d = BG_MAP_AHEAD; d < BG_MAP_AHEAD + 2; d++) {
        page_fetch(f, base, i + d * nluns);
    }
    for (uint64_t d = BG_REV_AHEAD; d < BG_REV_AHEAD + 2; d++) {
        uint64_t at = i + d * nluns;
        if (at < f->line_pages) {
            rev_fetch(f, page_unit(f, base, at));
        }
    }
}

/* The victim's NAND page i, of stripe slot k, moves: read at `at`, programmed after. */
static void bg_move(Ftl *f, uint64_t k, uint64_t i, uint64_t at)
{
    FtlBgJob *j = &f->bg;
    uint64_t rd = gc_move_page(f, (uint64_t)j->line * f->units_per_line, i, at);

    j->read_done[k] = MAX(j->read_done[k], rd);
    j->next[k] = i + nand_luns(&f->cfg.geo);
}

/* The victim's blocks on slot k's chip are erased from `at` on (after its reads): done. */
static void bg_erase(Ftl *f, uint64_t k, uint64_t at)
{
    FtlBgJob *j = &f->bg;
    NandAddr a;

    ftl_ppn_to_addr(f, page_unit(f, (uint64_t)j->line * f->units_per_line, k), &a);
    a.pl = 0;
    nand_op_planes(f->nand, NAND_OP_ERASE, &a, UINT32_MAX, MAX(at, j->read_done[k]));
    f->st.blocks_erased += f->cfg.geo.pls_per_lun;
    victim_erased(f, k);
    j->next[k] = FTL_NEVER;
    j->chips_left--;
}

/*
 * Where stream s's next page goes (its open line's next page, or the next free line's
 * first).
 */
static void next_write_addr(const Ftl *f, uint32_t s, NandAddr *a)
{
    uint64_t ppn = f->wp_line[s] != FTL_NO_LINE ?
                   (uint64_t)f->wp_line[s] * f->units_per_line + f->wp_idx[s] :
                   (uint64_t)f->free.head * f->units_per_line;

    ftl_ppn_to_addr(f, ppn, a);
}

/*
 * Does background GC's next operation at a (a move of the page there, of stream s, when
 * move; else the erase of the chip's blocks) end by limit if it starts at `at`? A move's
 * program goes where its stream's next write goes, after the read.
 */
static bool ends_by(const Ftl *f, const NandAddr *a, bool move, uint32_t s, uint64_t at,
                    uint64_t limit)
{
    NandAddr w;

    if (!move) {
        return nand_probe(f->nand, NAND_OP_ERASE, a, at) <= limit;
    }
    at = nand_probe(f->nand, NAND_OP_READ, a, at);
    if (at > limit || (f->wp_line[s] == FTL_NO_LINE && f->free.head == FTL_FREE_END)) {
        return false;
    }
    next_write_addr(f, s, &w);
    return nand_probe(f->nand, NAND_OP_PROGRAM, &w, at) <= limit;
}

/*
 * Background GC, chip by chip (FtlBgJob): books the victim's operations on stripe slot k
 * (one chip) while that chip is idle before limit, one at a time; the chip's erase follows
 * its last read. Returns with work left when the chip is busy up to limit. With a pacing
 * whose idle GC fits (idle_fits), an operation is booked only if it ends by limit: the
 * next command's arrival, before which the drive was idle.
 */
static void bg_chip(Ftl *f, uint64_t k, uint64_t limit)
{
    FtlBgJob *j = &f->bg;
    uint64_t base = (uint64_t)j->line * f->units_per_line, nluns = nand_luns(&f->cfg.geo);
    NandAddr a;

    if (j->ready_at[k] >= limit) {
        return;
    }
    while (j->next[k] != FTL_NEVER) {
        uint64_t i = j->next[k], at;
        while (i < f->line_pages && !page_valid(f, page_unit(f, base, i))) {
            i += nluns;                 /* overwritten or trimmed since: nothing to move */
        }
        j->next[k] = i;
        /* slot k is chip (ch k % nchs, lun k / nchs): no address until there is work */
        at = MAX(f->pump_ns, nand_chip_busy_until(f->nand, (k % f->cfg.geo.nchs) *
                                                  f->cfg.geo.luns_per_ch +
                                                  k / f->cfg.geo.nchs));
        if (at >= limit) {
            j->ready_at[k] = at;
            return;
        }
        ftl_ppn_to_addr(f, page_unit(f, base, i < f->line_pages ? i : k), &a);
        if (limit != FTL_NEVER && ftl_pacing_of(&f->cfg.gc_pacing)->idle_fits) {
            a.pl = i < f->line_pages ? a.pl : 0;
            bool move = i < f->line_pages;
            uint32_t s = move ? stream_of(f, true, first_lpn(f, page_unit(f, base, i))) : 0;
            if (!ends_by(f, &a, move, s, move ? at : MAX(at, j->read_done[k]), limit)) {
                j->ready_at[k] = limit;     /* the gap before limit was too short */
                return;
            }
        }
        f->st.gc_bg_ops++;
        if (i < f->line_pages) {
            bg_move(f, k, i, at);
            bg_prefetch(f, base, i + nluns, nluns);
        } else {
            bg_erase(f, k, at);
        }
    }
}

/* Books the job's operations that can start before limit; true if the victim is done. */
static bool bg_run(Ftl *f, uint64_t limit)
{
    FtlBgJob *j = &f->bg;
    uint64_t words = (nand_luns(&f->cfg.geo) + 63) / 64;

    if (j->chips_left && limit <= j->min_ready) {
        return false;       /* no chip with work left can start before limit */
    }
    /*
     * The slots that may start before limit, in slot order (the others would return at
     * once: ready_at never moves earlier); each goes back on the heap while it has work.
     */
    while (j->ndue && j->due[0].at < limit) {
        uint64_t k = due_pop(j);
        j->due_now[k / 64] |= 1ULL << (k % 64);
    }
    for (uint64_t w = 0; w < words; w++) {
        while (j->due_now[w]) {
            uint64_t k = w * 64 + __builtin_ctzll(j->due_now[w]);
            j->due_now[w] &= j->due_now[w] - 1;
            bg_chip(f, k, limit);
            if (j->next[k] != FTL_NEVER) {
                due_push(j, k);
            }
        }
    }
    j->min_ready = j->ndue ? j->due[0].at : FTL_NEVER;
    if (j->chips_left) {
        return false;
    }
    g_assert(f->lines[j->line].vpc == 0);
    line_freed(f, j->line);
    j->line = FTL_NO_LINE;
    f->st.gc_runs++;
    return true;
}

/* Background GC up to limit: victims while free lines are at or below its threshold. */
static void gc_background(Ftl *f, uint64_t limit)
{
    FtlBgJob *j = &f->bg;
    uint32_t line;

    for (;;) {
        if (j->line == FTL_NO_LINE) {
            if (f->st.free_lines > f->gc_bg_lines || !victim_gains(f, true) ||
                f->pump_ns >= limit) {
                return;
            }
            line = victim_take(f, false);
            if (f->lines[line].vpc == f->units_per_line) {
                /* the policy chose a line without garbage: paced GC may take it, not this
                   loop, which would go on as long as the idle time */
                ftl_victims_add(&f->victims, line);
                return;
            }
            bg_begin(f, line, NULL);
            victim_begin(f, j->line);
        }
        if (!bg_run(f, limit)) {
            return;
        }
    }
}

/*
 * Forced GC takes over the background victim: what is left of it on every chip is booked
 * at once from now_ns, in page order as gc_collect does, so the chips work in parallel.
 * (bg_run(f, FTL_NEVER) would book chip after chip, each from the end of that chip's
 * latest booking, which the previous chips' moves had just pushed out: the chips' shares
 * one after another, a stall of chips x share.)
 */
static void bg_finish(Ftl *f, uint64_t now_ns)
{
    FtlBgJob *j = &f->bg;
    uint64_t base = (uint64_t)j->line * f->units_per_line, nluns = nand_luns(&f->cfg.geo);

    for (uint64_t i = 0; i < f->line_pages && f->lines[j->line].vpc; i++) {
        uint64_t k = i % nluns, rd;
        gc_fetch_ahead(f, base, i);
        if (j->next[k] == FTL_NEVER || i < j->next[k] ||
            !page_valid(f, page_unit(f, base, i))) {
            continue;
        }
        f->st.gc_bg_ops++;
        rd = gc_move_page(f, base, i, now_ns);
        j->read_done[k] = MAX(j->read_done[k], rd);
    }
    for (uint64_t k = 0; k < nluns; k++) {
        if (j->next[k] == FTL_NEVER) {
            continue;
        }
        f->st.gc_bg_ops++;
        bg_erase(f, k, now_ns);
    }
    bg_run(f, FTL_NEVER);       /* every chip done: the line is free */
}

static void gc_forced(Ftl *f, uint64_t now_ns)
{
    /* stops when no line has garbage: then free lines >= spare - 1, see ftl_config_check */
    while (f->st.free_lines <= f->gc_forced_lines) {
        if (f->bg.line != FTL_NO_LINE) {
            /* the background victim first, all of it now */
            f->pump_ns = MAX(f->pump_ns, now_ns);
            bg_finish(f, f->pump_ns);
            continue;
        }
        if (!victim_gains(f, false)) {
            break;
        }
        gc_collect(f, now_ns, true);
    }
}

/*
 * The stripe slot of the victim in progress with work left whose chip is free first, so
 * that paced moves read on idle chips; ties go to the first from `turn` on.
 */
static uint64_t idlest_slot(const Ftl *f)
{
    const FtlBgJob *j = &f->bg;
    const NandGeometry *g = &f->cfg.geo;
    uint64_t nluns = nand_luns(g), best = FTL_NEVER, best_at = FTL_NEVER;

    for (uint64_t n = 0, k = j->turn; n < nluns; n++, k = k + 1 == nluns ? 0 : k + 1) {
        uint64_t at;
        if (j->next[k] == FTL_NEVER) {
            continue;
        }
        /* slot k is chip (ch k % nchs, lun k / nchs) */
        at = nand_chip_busy_until(f->nand, (k % g->nchs) * g->luns_per_ch + k / g->nchs);
        if (best == FTL_NEVER || at < best_at) {
            best = k;
            best_at = at;
        }
    }
    return best;
}

/*
 * One step of paced GC on the victim in progress, at now: the next valid NAND page of the
 * idlest chip moved, all its valid units (how many it returns); a chip whose pages are all
 * moved has its blocks erased after its reads on the way. 0 when the victim is done (and
 * free) without a move.
 */
static uint32_t gc_step(Ftl *f, uint64_t now)
{
    FtlBgJob *j = &f->bg;
    uint64_t nluns = nand_luns(&f->cfg.geo), base = (uint64_t)j->line * f->units_per_line;

    while (j->chips_left) {
        uint64_t k = idlest_slot(f), i = j->next[k];
        uint32_t units;
        j->turn = k + 1 == nluns ? 0 : k + 1;
        while (i < f->line_pages && !page_valid(f, page_unit(f, base, i))) {
            i += nluns;
        }
        if (i < f->line_pages) {
            units = page_valid(f, page_unit(f, base, i));
            bg_move(f, k, i, now);
            return units;
        }
        bg_erase(f, k, now);
    }
    bg_run(f, FTL_NEVER);       /* every chip erased: the line is free */
    return 0;
}

static uint64_t gc_pace(Ftl *f, uint64_t now, uint64_t done)
{
    FtlPaceState s = {
        .free_units = f->st.free_lines,
        .free_pages = f->st.free_lines * f->units_per_line,
        .open_units = f->nstreams,
        .forced_units = f->gc_forced_lines,
        .floor_units = f->gc_forced_lines / 2,      /* one line for GC, so at least 1 */
        .unit_pages = f->units_per_line,
        .victim_valid = f->bg.line != FTL_NO_LINE ? f->bg.valid0 :
                        f->units_per_line - ftl_victims_most_garbage(&f->victims),
    };
    uint32_t moved;
    double m;

    for (uint32_t i = 0; i < f->nstreams; i++) {
        s.free_pages += f->wp_line[i] != FTL_NO_LINE ? f->units_per_line - f->wp_idx[i] : 0;
    }
    m = ftl_pace_moves(&f->cfg.gc_pacing, &s);
    if (m == 0 || (!isinf(m) && f->gc_credit + m < 1)) {
        f->gc_credit += m;
        return done;
    }
    /* GC's programs go after the pages before them (sub-page units: they follow them on) */
    if (f->upp == 1) {
        done = MAX(done, ftl_program_flush(&f->progs, now));
    }
    if (isinf(m)) {
        gc_forced(f, now);
        f->gc_credit = 0;
        return done;
    }
    f->gc_credit += m;
    while (f->gc_credit >= 1) {
        if (f->bg.line == FTL_NO_LINE) {
            if (!victim_gains(f, false)) {
                f->gc_credit = 0;
                break;
            }
            bg_begin(f, victim_take(f, false), NULL);
            victim_begin(f, f->bg.line);
        }
        moved = gc_step(f, now);
        if (!moved) {
            f->gc_credit = 0;       /* the victim is done: what it needed is paid */
            break;
        }
        f->gc_credit -= moved;      /* credit counts units; a step moves a page's */
    }
    return done;
}

/* A host command at now_ns: background GC first takes the idle chip time before it. */
static void host_begin(Ftl *f, uint64_t now_ns)
{
    gc_background(f, now_ns);
    f->pump_ns = MAX(f->pump_ns, now_ns);
}

void ftl_idle(Ftl *f, uint64_t now_ns)
{
    gc_background(f, now_ns == UINT64_MAX ? now_ns : now_ns + 1);  /* may start at now */
    if (now_ns != UINT64_MAX) {
        f->pump_ns = MAX(f->pump_ns, now_ns);
    }
    stats_save(f);
}

/*
 * A read's mapping entries are fetched now. A single-page write's are fetched with those of
 * the next writes, FTL_HINT_BATCH at a time, and a batch later the reverse entries of the
 * pages they map (which the writes invalidate): on a large drive each fetch waits on a page
 * walk, and a batch's walks overlap. A random write then waits on no memory.
 */
void ftl_hint(Ftl *f, uint64_t lpn, uint64_t npages, bool write)
{
    uint64_t n;

    if (lpn >= f->cfg.exposed_pages || !npages) {
        return;
    }
    if (write) {
        f->hint_new[f->hint_new_n++] = lpn;
        if (f->hint_new_n == FTL_HINT_BATCH) {
            for (uint32_t i = 0; i < FTL_HINT_BATCH; i++) {
                uint64_t m = map_get(f, f->hint_old[i]);
                if (m) {
                    rev_fetch(f, m - 1);
                }
            }
            for (uint32_t i = 0; i < FTL_HINT_BATCH; i++) {
                map_fetch(f, f->hint_new[i]);
            }
            memcpy(f->hint_old, f->hint_new, sizeof(f->hint_old));
            f->hint_new_n = 0;
        }
        if (npages == 1) {
            return;
        }
    }
    /* a long request's first entries: the rest stream in behind them */
    n = MIN(MIN(npages, 64), f->cfg.exposed_pages - lpn);
    for (uint64_t i = 0; i < n; i += 8) {
        map_fetch(f, lpn + i);
    }
    map_fetch(f, lpn + n - 1);
}

/* A host read of the chip at a: counts when background GC work waits on that chip. */
static void note_overtake(Ftl *f, const NandAddr *a)
{
    if (f->bg.line != FTL_NO_LINE) {
        uint64_t k = (uint64_t)a->lun * f->cfg.geo.nchs + a->ch;
        f->st.gc_read_overtakes += f->bg.next[k] != FTL_NEVER;
    }
}

/* ---- host commands ---- */

static bool range_ok(const Ftl *f, uint64_t lpn, uint64_t npages)
{
    return lpn <= f->cfg.exposed_pages && npages <= f->cfg.exposed_pages - lpn;
}

/*
 * The pages of a request that fall on one chip, block and page index on different planes
 * are programmed together (multi-plane, ftl_program_gather). Programs of a chip keep the
 * order of its pages.
 */
/* The pages list[0..n), or lpn..lpn + n when list is NULL. */
static uint64_t write_pages(Ftl *f, uint64_t lpn, const uint64_t *list, uint64_t npages,
                            uint64_t now_ns)
{
    uint64_t done = now_ns, last;

    host_begin(f, now_ns);
    for (uint64_t i = 0; i < npages; i++) {
        uint64_t p = list ? list[i] : lpn + i;
        NandAddr a;
        uint64_t t, ppn;
        uint32_t s;
        done = gc_pace(f, now_ns, done);
        s = stream_of(f, false, p);     /* after GC's moves: they age lines */
        ppn = map_page(f, p, s);
        f->st.host_pages_written++;
        if (f->upp > 1) {
            t = fill_unit(f, s, ppn, now_ns);   /* programmed when its program unit is full */
        } else {
            ftl_ppn_to_addr(f, ppn, &a);
            t = ftl_program_gather(&f->progs, &a, now_ns);
        }
        done = MAX(done, t);
    }
    last = f->upp == 1 ? ftl_program_flush(&f->progs, now_ns) : now_ns;
    stats_save(f);
    return MAX(done, last);
}

uint64_t ftl_write(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns)
{
    g_return_val_if_fail(range_ok(f, lpn, npages), now_ns);
    return write_pages(f, lpn, NULL, npages, now_ns);
}

uint64_t ftl_write_list(Ftl *f, const uint64_t *lpns, uint64_t n, uint64_t now_ns)
{
    for (uint64_t i = 0; i < n; i++) {
        g_return_val_if_fail(range_ok(f, lpns[i], 1), now_ns);
    }
    return write_pages(f, 0, lpns, n, now_ns);
}

/*
 * Sub-page units: when the data of unit ppn is in the controller's buffer, its NAND page not
 * programmed yet (still filling, or waiting for its chip's other planes); else FTL_NEVER.
 */
static uint64_t buffered_at(const Ftl *f, uint64_t ppn)
{
    uint64_t ready;
    NandAddr a;

    for (uint32_t s = 0; s < f->nstreams; s++) {
        uint64_t wp = (uint64_t)f->wp_line[s] * f->units_per_line + f->wp_idx[s];
        if (f->wp_line[s] != FTL_NO_LINE && (wp & (f->upp - 1)) &&
            ppn >> f->log_upp == wp >> f->log_upp) {
            return f->fill_ready[s];
        }
    }
    ftl_ppn_to_addr(f, ppn, &a);
    return ftl_program_held(&f->progs, &a, &ready) ? ready : FTL_NEVER;
}

/*
 * The units from lpn on (at most max) that one NAND read serves: mapped to one NAND page,
 * or, never written, of one page's worth of lpns. *m: the first one's mapping (ppn + 1, 0:
 * unmapped). With a unit per NAND page, always 1.
 */
static uint64_t unit_run(const Ftl *f, uint64_t lpn, uint64_t max, uint64_t *m)
{
    uint64_t n = 1;

    *m = map_get(f, lpn);
    for (; n < max; n++) {
        uint64_t next = map_get(f, lpn + n);
        bool same = *m ? next && (next - 1) >> f->log_upp == (*m - 1) >> f->log_upp
                       : !next && (lpn + n) >> f->log_upp == lpn >> f->log_upp;
        if (!same) {
            break;
        }
    }
    return n;
}

/* A host's (or read-ahead's) read of the n units from lpn that unit_run gave, mapped m. */
static uint64_t read_run(Ftl *f, uint64_t lpn, uint64_t n, uint64_t m, bool host,
                         uint64_t now_ns)
{
    uint64_t at = m && f->upp > 1 ? buffered_at(f, m - 1) : FTL_NEVER;
    NandAddr a;

    if (at != FTL_NEVER) {
        return MAX(now_ns, at);     /* from the buffer: no NAND operation */
    }
    if (m) {
        ftl_ppn_to_addr(f, m - 1, &a);
    } else {
        a = ftl_unmapped_addr(&f->cfg.geo, f->cfg.first_block, lpn >> f->log_upp);
    }
    if (host) {
        note_overtake(f, &a);
    }
    return read_units(f, &a, n, now_ns);
}

uint64_t ftl_read(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns)
{
    uint64_t done = now_ns;

    g_return_val_if_fail(range_ok(f, lpn, npages), now_ns);
    host_begin(f, now_ns);
    for (uint64_t i = 0, n; i < npages; i += n) {
        uint64_t m, t;
        n = unit_run(f, lpn + i, npages - i, &m);
        f->st.unmapped_pages_read += m ? 0 : n;
        t = read_run(f, lpn + i, n, m, true, now_ns);
        done = MAX(done, t);
        f->st.host_pages_read += n;
    }
    stats_save_read(f);
    return done;
}

void ftl_cached_read(Ftl *f, uint64_t npages, uint64_t now_ns)
{
    host_begin(f, now_ns);      /* the host is busy: no background GC in between */
    f->st.host_pages_read += npages;
    stats_save_read(f);
}

uint64_t ftl_prefetch(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns)
{
    uint64_t done = now_ns;

    g_return_val_if_fail(range_ok(f, lpn, npages), now_ns);
    host_begin(f, now_ns);
    for (uint64_t i = 0, n; i < npages; i += n) {
        uint64_t m;
        n = unit_run(f, lpn + i, npages - i, &m);
        if (m) {
            uint64_t t = read_run(f, lpn + i, n, m, false, now_ns);
            done = MAX(done, t);
            f->st.prefetch_pages_read += n;
        }
    }
    stats_save_read(f);
    return done;
}

uint64_t ftl_mapped_run(const Ftl *f, uint64_t lpn, uint64_t max)
{
    uint64_t n = 0;

    while (n < max && lpn + n < f->cfg.exposed_pages && map_get(f, lpn + n)) {
        n++;
    }
    return n;
}

uint64_t ftl_trim(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns)
{
    g_return_val_if_fail(range_ok(f, lpn, npages), now_ns);
    host_begin(f, now_ns);
    /* a mapping-table update: no NAND operation */
    for (uint64_t i = lpn; i < lpn + npages; i++) {
        uint64_t m = map_get(f, i);
        if (m) {
            invalidate(f, m - 1);
            map_put(f, i, FTL_UNMAPPED);
        }
    }
    f->st.pages_trimmed += npages;
    stats_save(f);
    return now_ns;
}

uint64_t ftl_flush(Ftl *f, uint64_t now_ns)
{
    host_begin(f, now_ns);
    if (f->upp > 1) {
        for (uint32_t s = 0; s < f->nstreams; s++) {
            pad_page(f, s, now_ns);
        }
        ftl_program_flush(&f->progs, now_ns);
    }
    stats_save(f);
    return MAX(now_ns, f->last_prog_ns);
}

/* ---- lifecycle and introspection ---- */

/* Every line free and erased never, in order; nothing mapped (p2l as given), no counts. */
static void reset_state(Ftl *f)
{
    memset(f->lines, 0, sizeof(*f->lines) * f->nlines);
    memset(&f->st, 0, sizeof(f->st));
    ftl_victims_clear(&f->victims);
    ftl_free_list_init(&f->free, f->free_next);
    for (uint32_t i = 0; i < f->nlines; i++) {
        free_push(f, i);
    }
    for (uint32_t i = 0; i < FTL_MAX_STREAMS; i++) {
        f->wp_line[i] = FTL_NO_LINE;
        f->wp_idx[i] = 0;
        f->fill_ready[i] = 0;
    }
    f->bg.line = FTL_NO_LINE;
    f->order = 0;
    f->st.total_lines = f->nlines;
    f->saved = f->st;
    f->stats_seq = 0;
}

static FtlStoreLayout layout_of(const FtlConfig *c)
{
    FtlStoreLayout l;

    l.off_stats = FTL_HDR_BYTES;
    l.off_marks = l.off_stats + 2 * FTL_STATS_REC;
    l.off_line = div_up(l.off_marks + nand_luns(&c->geo), 8) * 8;
    l.off_map = l.off_line + (uint64_t)c->geo.blks_per_pl * FTL_LINE_REC;
    l.bytes = l.off_map + c->exposed_pages * 8;
    return l;
}

Ftl *ftl_new(const FtlConfig *c, char **err)
{
    Ftl *f;
    uint64_t total;
    NandModel *nand;

    if (!ftl_config_check(c, err) ||
        !(nand = ftl_nand_get(&c->geo, &c->tm, c->shared_nand, c->first_block, "FTL", err))) {
        return NULL;
    }
    f = g_new0(Ftl, 1);
    f->cfg = *c;
    if (!f->cfg.gc_pacing.policy) {
        f->cfg.gc_pacing = ftl_policy_default(FTL_PACING);
    }
    if (!f->cfg.streams.policy) {
        f->cfg.streams = ftl_policy_default(FTL_STREAM);
    }
    f->nstreams = ftl_stream_of(&f->cfg.streams)->nstreams;
    f->nand = nand;
    f->line_pages = pages_per_line(&c->geo);
    f->upp = ftl_units_per_page(c);
    f->log_upp = __builtin_ctz(f->upp);
    f->unit_bytes = ftl_unit_bytes(c);
    f->units_per_line = f->line_pages * f->upp;
    f->stripe = nand_luns(&c->geo) * c->geo.pls_per_lun;
    f->pow2 = femu_is_pow2(f->line_pages) && femu_is_pow2(c->geo.nchs) &&
              femu_is_pow2(c->geo.luns_per_ch) && femu_is_pow2(c->geo.pls_per_lun);
    if (f->pow2) {
        f->log_line = __builtin_ctzll(f->line_pages);
        f->log_chs = __builtin_ctzll(c->geo.nchs);
        f->log_luns = __builtin_ctzll(nand_luns(&c->geo));
        f->log_stripe = __builtin_ctzll(f->stripe);
    }
    f->nlines = c->geo.blks_per_pl;
    f->data_lines = div_up(c->exposed_pages, f->units_per_line);
    f->gc_forced_lines = forced_lines(f->nlines, c->gc_thres_pcent_high);
    f->gc_bg_lines = MAX(ftl_gc_thres(f->nlines, c->gc_thres_pcent), f->gc_forced_lines);
    f->lay = layout_of(c);
    total = nand_total_pages(&c->geo) * ftl_units_per_page(c);
    /* zeroed and sparse: memory grows with the pages written, not the capacity */
    f->map_log = total < UINT32_MAX && !c->wide_tables ? 2 : 3;
    f->l2p = ftl_table_new(c->exposed_pages, (size_t)1 << f->map_log);
    f->own_l2p = true;
    f->rev_log = c->exposed_pages < UINT32_MAX && !c->wide_tables ? 2 : 3;
    f->p2l = ftl_table_new(total, (size_t)1 << f->rev_log);
    if (!f->l2p || !f->p2l) {
        *err = g_strdup_printf("cannot allocate the FTL mapping tables (%" G_GUINT64_FORMAT
                               " MiB): lower devsz_mb",
                               ((c->exposed_pages << f->map_log) + (total << f->rev_log)) >> 20);
        ftl_free(f);
        return NULL;
    }
    f->lines = g_new0(FtlLine, f->nlines);
    f->victim_pos = g_new0(uint32_t, f->nlines);
    f->free_next = g_new0(uint32_t, f->nlines);
    ftl_victims_init(&f->victims, &c->gc_policy, 0, f->nlines, f->units_per_line, f->victim_pos,
                     line_less, line_view, f);
    ftl_progs_init(&f->progs, nand, &f->last_prog_ns, &f->st.nand_pages_written);
    f->progs.units_per_pg = f->upp;
    f->lun_read_ns = g_new0(uint64_t, nand_luns(&c->geo));
    f->bg.next = g_new0(uint64_t, nand_luns(&c->geo));
    f->bg.read_done = g_new0(uint64_t, nand_luns(&c->geo));
    f->bg.ready_at = g_new0(uint64_t, nand_luns(&c->geo));
    f->bg.due = g_new0(FtlDue, nand_luns(&c->geo));
    f->bg.due_now = g_new0(uint64_t, (nand_luns(&c->geo) + 63) / 64);
    reset_state(f);
    return f;
}

void ftl_free(Ftl *f)
{
    if (f) {
        if (!f->cfg.shared_nand) {
            nand_model_free(f->nand);
        }
        if (f->own_l2p) {
            ftl_table_free(f->l2p, f->cfg.exposed_pages, (size_t)1 << f->map_log);
        }
        ftl_table_free(f->p2l, nand_total_pages(&f->cfg.geo) * f->upp,
                       (size_t)1 << f->rev_log);
        g_free(f->lines);
        ftl_victims_destroy(&f->victims);
        g_free(f->victim_pos);
        g_free(f->free_next);
        ftl_progs_destroy(&f->progs);
        g_free(f->lun_read_ns);
        g_free(f->bg.next);
        g_free(f->bg.read_done);
        g_free(f->bg.ready_at);
        g_free(f->bg.due);
        g_free(f->bg.due_now);
        g_free(f);
    }
}

/* ---- the store: layout, header, load ---- */

uint64_t ftl_store_bytes(const FtlConfig *c)
{
    return layout_of(c).bytes;
}

uint64_t ftl_store_line_offset(const FtlConfig *c, uint32_t line)
{
    return layout_of(c).off_line + (uint64_t)line * FTL_LINE_REC;
}

uint64_t ftl_store_map_offset(const FtlConfig *c, uint64_t lpn)
{
    return layout_of(c).off_map + lpn * 8;
}

static void header_fill(const Ftl *f, uint8_t *h)
{
    const NandGeometry *g = &f->cfg.geo;

    memset(h, 0, FTL_HDR_BYTES);
    record_put_le(h, FTL_STORE_MAGIC, 4);
    record_put_le(h + 4, FTL_STORE_VERSION, 4);
    record_put_le(h + 8, g->nchs, 4);
    record_put_le(h + 12, g->luns_per_ch, 4);
    record_put_le(h + 16, g->pls_per_lun, 4);
    record_put_le(h + 20, g->blks_per_pl, 4);
    record_put_le(h + 24, g->pgs_per_blk, 4);
    record_put_le(h + 28, g->secs_per_pg, 4);
    record_put_le(h + 32, g->secsz, 4);
    record_put_le(h + 40, f->cfg.exposed_pages, 8);
    record_put_le(h + 48, f->cfg.first_block, 4);
    record_put_le(h + 52, f->upp > 1 ? f->upp : 0, 4);     /* 0: a unit per page, as before */
    record_put_le(h + FTL_HDR_CRC_AT, ftl_crc32_salted(SALT_HEADER, h, FTL_HDR_CRC_AT), 4);
}

/*
 * Does the saved header describe this configuration? Else *err names what differs. The
 * thresholds and timings are not saved: they decide when and how long, not what the state
 * means, so they may change between runs.
 */
static bool header_matches(const Ftl *f, const uint8_t *h, char **err)
{
    /* what the others follow from first: the blocks per plane follow from all of them */
    static const FtlHeaderField fields[] = {
        { 8, 4, "nchs" }, { 12, 4, "luns_per_ch" }, { 16, 4, "pls_per_lun" },
        { 24, 4, "pgs_per_blk" }, { 28, 4, "secs_per_pg" }, { 32, 4, "secsz" },
        { 52, 4, "mapping units per NAND page (map_unit_kb; 0: one)" },
        { 40, 8, "exposed pages (devsz_mb, or the namespace's size: ns_sizes_mb)" },
        { 20, 4, "blks_per_pl (the blocks op_pcent gives for devsz_mb, or blks_per_pl)" },
        { 48, 4, "first block (the flash shared with other namespaces: ns_types, "
                 "ns_sizes_mb)" },
    };
    uint8_t want[FTL_HDR_BYTES];

    header_fill(f, want);
    return ftl_header_matches(h, want, "blackbox FTL", SALT_HEADER, FTL_HDR_CRC_AT, fields,
                              G_N_ELEMENTS(fields), err);
}

/* A line record that is whole and makes sense: its state, erases, order and (open) wp. */
static bool line_decode(const Ftl *f, uint32_t line, const uint8_t *p, FtlLine *l,
                        uint64_t *wp)
{
    uint64_t w = record_get_le(p, 8);

    *l = (FtlLine){ .state = FTL_LINE_FREE };
    *wp = 0;
    if (record_all_zero(p + 8, FTL_LINE_REC - 8)) {
        return true;            /* never used (its wp word may tell an old open) */
    }
    if (record_get_le(p + 24, 4) != ftl_crc32_salted(SALT_LINE | line, p + 8, 16) ||
        p[8] > FTL_LINE_VICTIM) {
        return false;
    }
    *l = (FtlLine){ .state = p[8], .stream = p[9], .erases = record_get_le(p + 12, 4),
                    .order = record_get_le(p + 16, 8) };
    if (l->state == FTL_LINE_OPEN) {
        *wp = w & FTL_PPN_MASK;
        if (w != wp_word(line, *wp) || *wp > f->units_per_line) {
            return false;
        }
    }
    return true;
}

static bool entry_ok(uint64_t lpn, uint64_t e, uint64_t total)
{
    uint64_t low = e & FTL_PPN_MASK;

    return low && low <= total && ftl_map_check(lpn, low) == e >> 48;
}

static gint cmp_order(gconstpointer a, gconstpointer b, gpointer data)
{
    const FtlLine *l = data;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    if (l[x].order != l[y].order) {
        return l[x].order < l[y].order ? -1 : 1;
    }
    return (x > y) - (x < y);
}

/*
 * The state in the store into memory (see the top for what is repaired); the repairs are
 * written back. False, with the in-memory state undefined, when no line would be free.
 */
static bool load(Ftl *f, char **err)
{
    const NandGeometry *g = &f->cfg.geo;
    uint32_t n = f->nlines, victim = FTL_NO_LINE, nfree = 0, open[FTL_MAX_STREAMS];
    uint64_t nluns = nand_luns(g), total = (uint64_t)n * f->units_per_line, dropped = 0;
    uint8_t *marks = f->store + f->lay.off_marks;
    g_autofree uint64_t *wp = g_new0(uint64_t, n);
    g_autofree bool *fix = g_new0(bool, n);         /* its record is to be saved again */
    g_autofree bool *damaged = g_new0(bool, n);
    g_autofree bool *erased = g_new0(bool, nluns);
    g_autofree bool *holds = g_new0(bool, nluns);
    g_autofree uint32_t *order = g_new(uint32_t, n);
    uint64_t v[FTL_NSTATS];

    f->order = 0;
    for (uint32_t i = 0; i < FTL_MAX_STREAMS; i++) {
        open[i] = FTL_NO_LINE;
    }
    for (uint32_t l = 0; l < n; l++) {
        const uint8_t *p = line_rec(f, l);
        if (!line_decode(f, l, p, &f->lines[l], &wp[l])) {
            damaged[l] = fix[l] = true;
            f->lines[l] = (FtlLine){ .state = FTL_LINE_FULL,
                                     .erases = record_get_le(p + 12, 4) };
        }
        f->order = MAX(f->order, f->lines[l].order);
    }
    /* the mapping: entries that fail their check, or name a page taken, are dropped */
    for (uint64_t lpn = 0; lpn < f->cfg.exposed_pages; lpn++) {
        uint64_t e = GUINT64_FROM_LE(stored_map(f)[lpn]), ppn, i;
        FtlLine *l;
        if (!e) {
            continue;
        }
        if (!entry_ok(lpn, e, total) || rev_get(f, (e & FTL_PPN_MASK) - 1)) {
            dropped++;
            continue;
        }
        ppn = (e & FTL_PPN_MASK) - 1;
        i = ppn % f->units_per_line;
        l = &f->lines[ppn / f->units_per_line];
        if (l->state == FTL_LINE_FREE) {
            l->state = FTL_LINE_FULL;       /* data in a free line: its record is wrong */
            damaged[ppn / f->units_per_line] = fix[ppn / f->units_per_line] = true;
        } else if (l->state == FTL_LINE_OPEN && i >= wp[ppn / f->units_per_line]) {
            wp[ppn / f->units_per_line] = i + 1;
            fix[ppn / f->units_per_line] = true;
        }
        rev_put(f, ppn, lpn + 1);
        l->vpc++;
    }
    /*
     * states: one open line per stream (of the streams configured now) and one victim at
     * most; repaired lines get the next orders
     */
    for (uint32_t l = 0; l < n; l++) {
        FtlLine *line = &f->lines[l];
        if (damaged[l]) {
            /* no valid page: free (whatever its record said), else a GC candidate */
            line->state = line->vpc ? FTL_LINE_FULL : FTL_LINE_FREE;
            line->order = ++f->order;
        } else if (line->state == FTL_LINE_OPEN &&
                   (line->stream >= f->nstreams || open[line->stream] != FTL_NO_LINE ||
                    wp[l] == f->units_per_line)) {
            /* filled (its record not saved yet), a second, or of a stream there is no more */
            line->state = FTL_LINE_FULL;
            line->order = ++f->order;
            fix[l] = true;
        } else if (line->state == FTL_LINE_OPEN) {
            open[line->stream] = l;
        } else if (line->state == FTL_LINE_VICTIM && victim != FTL_NO_LINE) {
            line->state = FTL_LINE_FULL;
            line->order = ++f->order;
            fix[l] = true;
        } else if (line->state == FTL_LINE_VICTIM) {
            victim = l;
        }
        nfree += line->state == FTL_LINE_FREE;
    }
    if (!nfree && (victim == FTL_NO_LINE || f->lines[victim].vpc)) {
        *err = g_strdup_printf("the FTL state is damaged beyond repair: the mapping points "
                               "into all %u lines, none is free for GC to work with", n);
        return false;
    }
    /* accepted: the dropped entries go from the store too, so a second load agrees */
    for (uint64_t lpn = 0; dropped && lpn < f->cfg.exposed_pages; lpn++) {
        uint64_t e = GUINT64_FROM_LE(stored_map(f)[lpn]);
        if (e && (!entry_ok(lpn, e, total) || rev_get(f, (e & FTL_PPN_MASK) - 1) != lpn + 1)) {
            store_word(&stored_map(f)[lpn], 0);
            dropped--;
        }
    }
    for (uint32_t l = 0; l < n; l++) {
        FtlLine *line = &f->lines[l];
        if (fix[l]) {
            line_save(f, l);
            if (line->state == FTL_LINE_OPEN) {
                wp_save(f, l, wp[l]);
            }
        }
        if (line->state == FTL_LINE_FULL) {
            ftl_victims_add(&f->victims, l);
        }
    }
    /* the free list in the order the lines were freed (FIFO) */
    nfree = 0;
    for (uint32_t l = 0; l < n; l++) {
        if (f->lines[l].state == FTL_LINE_FREE) {
            order[nfree++] = l;
        }
    }
    g_qsort_with_data(order, nfree, sizeof(*order), cmp_order, f->lines);
    ftl_free_list_init(&f->free, f->free_next);
    f->st.free_lines = 0;
    for (uint32_t i = 0; i < nfree; i++) {
        free_push(f, order[i]);
    }
    for (uint32_t i = 0; i < f->nstreams; i++) {
        if (open[i] != FTL_NO_LINE) {
            f->wp_line[i] = open[i];
            f->wp_idx[i] = wp[open[i]];
        }
    }
    /* the victim: chips marked erased resume so, unless the mapping says otherwise */
    if (victim != FTL_NO_LINE) {
        uint64_t base = (uint64_t)victim * f->units_per_line;
        for (uint64_t i = 0; i < f->units_per_line; i++) {
            holds[(i >> f->log_upp) % nluns] |= rev_get(f, base + i) != 0;
        }
        for (uint64_t k = 0; k < nluns; k++) {
            erased[k] = marks[k] && !holds[k];
            if (marks[k] && !erased[k]) {
                marks[k] = 0;
            }
        }
        bg_begin(f, victim, erased);
    }
    /* the flash's wear as the lines' erases say (the model counts it for read retry) */
    for (uint32_t l = 0; l < n; l++) {
        NandAddr a = { .blk = f->cfg.first_block + l };
        for (a.lun = 0; a.lun < g->luns_per_ch; a.lun++) {
            for (a.ch = 0; a.ch < g->nchs; a.ch++) {
                uint32_t e = f->lines[l].erases;
                if (l == victim && erased[(uint64_t)a.lun * g->nchs + a.ch]) {
                    e += e < UINT32_MAX;
                }
                ftl_set_wear_planes(f->nand, a, e);
            }
        }
    }
    ftl_slot_load(f->store + f->lay.off_stats, FTL_STATS_REC, SALT_STATS, v, FTL_NSTATS,
                  &f->stats_seq);
    f->st = (FtlStats){
        .host_pages_written = v[0], .host_pages_read = v[1], .unmapped_pages_read = v[2],
        .prefetch_pages_read = v[3], .nand_pages_written = v[4], .gc_pages_moved = v[5],
        .gc_runs = v[6], .gc_forced_runs = v[7], .gc_bg_ops = v[8],
        .gc_read_overtakes = v[9], .blocks_erased = v[10], .pages_trimmed = v[11],
        .free_lines = f->st.free_lines, .total_lines = n,
    };
    f->saved = f->st;
    return true;
}

/* The store from now on; blank: all zero, a new drive (the fresh state in memory is its). */
static bool attach(Ftl *f, uint8_t *s, bool blank, char **err)
{
    void *own = f->l2p;
    uint8_t own_log = f->map_log;

    if (f->store || f->st.host_pages_written || f->st.pages_trimmed) {
        *err = g_strdup("the FTL has a store or has done I/O already");     /* a caller's bug */
        return false;
    }
    if ((uintptr_t)s % 8) {
        *err = g_strdup("the FTL state area is not 8-byte aligned");
        return false;
    }
    f->store = s;
    f->l2p = s + f->lay.off_map;
    f->map_log = 3;
    if (blank) {
        header_fill(f, s);
        stored(f);
    } else if (!load(f, err)) {
        f->store = NULL;
        f->l2p = own;
        f->map_log = own_log;
        memset(f->p2l, 0, nand_total_pages(&f->cfg.geo) * f->upp << f->rev_log);
        reset_state(f);
        return false;
    }
    if (f->own_l2p) {
        ftl_table_free(own, f->cfg.exposed_pages, (size_t)1 << own_log);
        f->own_l2p = false;
    }
    return true;
}

bool ftl_attach_store(Ftl *f, void *store, char **err)
{
    uint8_t *s = store;

    if (record_all_zero(s, FTL_HDR_BYTES)) {
        if (!record_all_zero(s, f->lay.bytes)) {
            *err = g_strdup("the FTL state area has no header but is not blank: it holds "
                            "something else (clear the backend, or use a new one)");
            return false;
        }
        return attach(f, s, true, err);
    }
    return header_matches(f, s, err) && attach(f, s, false, err);
}

bool ftl_format_store(Ftl *f, void *store, char **err)
{
    return attach(f, store, true, err);
}

const FtlStats *ftl_stats(Ftl *f)
{
    return &f->st;
}

NandModel *ftl_nand(Ftl *f)
{
    return f->nand;
}

double ftl_waf(const Ftl *f)
{
    return ftl_waf_of(f->st.nand_pages_written, f->st.host_pages_written);
}

bool ftl_lookup(Ftl *f, uint64_t lpn, NandAddr *out)
{
    uint32_t unit;

    return ftl_lookup_unit(f, lpn, out, &unit);
}

bool ftl_lookup_unit(Ftl *f, uint64_t lpn, NandAddr *out, uint32_t *unit)
{
    if (lpn >= f->cfg.exposed_pages || !map_get(f, lpn)) {
        return false;
    }
    ftl_ppn_to_addr(f, map_get(f, lpn) - 1, out);
    *unit = (map_get(f, lpn) - 1) & (f->upp - 1);
    return true;
}

#define FAIL(...) do { *err = g_strdup_printf(__VA_ARGS__); goto out; } while (0)

/* What the store says is what memory says (between calls: statistics saved too). */
static bool store_agrees(Ftl *f, char **err)
{
    const uint8_t *marks = f->store + f->lay.off_marks;
    uint64_t v[FTL_NSTATS], seq;
    bool ok = false;

    if (!header_matches(f, f->store, err)) {
        return false;
    }
    for (uint32_t l = 0; l < f->nlines; l++) {
        const FtlLine *m = &f->lines[l];
        FtlLine d;
        uint64_t wp;
        if (!line_decode(f, l, line_rec(f, l), &d, &wp) || d.state != m->state ||
            d.erases != m->erases || d.order != m->order ||
            (d.state == FTL_LINE_OPEN && (d.stream != m->stream ||
                                          wp != f->wp_idx[m->stream]))) {
            FAIL("line %u's record in the store does not say what memory does (state %d, "
                 "%u erases, order %" G_GUINT64_FORMAT ")", l, m->state, m->erases, m->order);
        }
    }
    for (uint64_t k = 0; f->bg.line != FTL_NO_LINE && k < nand_luns(&f->cfg.geo); k++) {
        if (!marks[k] != (f->bg.next[k] != FTL_NEVER)) {
            FAIL("the victim's erase mark of chip %" G_GUINT64_FORMAT " is wrong", k);
        }
    }
    if (!ftl_slot_load(f->store + f->lay.off_stats, FTL_STATS_REC, SALT_STATS, v, FTL_NSTATS,
                       &seq) ? f->st.host_pages_written || f->st.host_pages_read ||
                               f->st.pages_trimmed || f->st.gc_runs
                             : seq != f->stats_seq || v[0] != f->st.host_pages_written ||
                               v[4] != f->st.nand_pages_written || v[6] != f->st.gc_runs ||
                               v[10] != f->st.blocks_erased || v[11] != f->st.pages_trimmed) {
        FAIL("the statistics in the store are not the last ones");
    }
    ok = true;
out:
    return ok;
}

/* How many streams have an open line. */
static uint32_t open_lines(const Ftl *f)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < f->nstreams; i++) {
        n += f->wp_line[i] != FTL_NO_LINE;
    }
    return n;
}

bool ftl_check_consistency(Ftl *f, char **err)
{
    uint64_t total = (uint64_t)f->nlines * f->units_per_line, mapped = 0, valid = 0;
    uint64_t *vpc = g_new0(uint64_t, f->nlines);
    uint32_t nfree = 0, nfull = 0, nopen = 0, nvictim = 0, last = FTL_FREE_END;
    bool ok = false;

    for (uint64_t lpn = 0; lpn < f->cfg.exposed_pages; lpn++) {
        uint64_t e = f->map_log == 2 ? map_get(f, lpn) : GUINT64_FROM_LE(stored_map(f)[lpn]);
        uint64_t m = e & FTL_PPN_MASK;
        if (!e) {
            continue;
        }
        if (f->map_log == 2 ? m > total : !entry_ok(lpn, e, total)) {
            FAIL("lpn %" G_GUINT64_FORMAT ": its mapping entry fails its check", lpn);
        }
        if (rev_get(f, m - 1) != lpn + 1) {
            FAIL("lpn %" G_GUINT64_FORMAT " maps to ppn %" G_GUINT64_FORMAT
                 " whose reverse entry does not name it", lpn, m - 1);
        }
        mapped++;
    }
    for (uint64_t ppn = 0; ppn < total; ppn++) {
        uint64_t r = rev_get(f, ppn);
        uint32_t line = ppn / f->units_per_line;
        if (!r) {
            continue;
        }
        if (r - 1 >= f->cfg.exposed_pages || map_get(f, r - 1) != ppn + 1) {
            FAIL("ppn %" G_GUINT64_FORMAT " claims lpn %" G_GUINT64_FORMAT
                 " which maps elsewhere", ppn, r - 1);
        }
        if (f->lines[line].state == FTL_LINE_FREE ||
            (f->lines[line].state == FTL_LINE_VICTIM && line != f->bg.line) ||
            (f->lines[line].state == FTL_LINE_OPEN &&
             ppn % f->units_per_line >= f->wp_idx[f->lines[line].stream])) {
            FAIL("valid ppn %" G_GUINT64_FORMAT " in a free, victim or unwritten place", ppn);
        }
        vpc[line]++;
        valid++;
    }
    if (valid != mapped) {
        FAIL("%" G_GUINT64_FORMAT " pages mapped but %" G_GUINT64_FORMAT " valid", mapped,
             valid);
    }
    for (uint32_t l = 0; l < f->nlines; l++) {
        const FtlLine *line = &f->lines[l];
        if (line->vpc != vpc[l]) {
            FAIL("line %u counts %" G_GUINT64_FORMAT " valid pages, has %" G_GUINT64_FORMAT,
                 l, line->vpc, vpc[l]);
        }
        switch (line->state) {
        case FTL_LINE_FREE:
            if (line->vpc) {
                FAIL("free line %u has valid pages", l);
            }
            break;
        case FTL_LINE_OPEN:
            nopen++;
            if (line->stream >= f->nstreams || l != f->wp_line[line->stream]) {
                FAIL("line %u is open but not its stream's (%u) write pointer's", l,
                     line->stream);
            }
            break;
        case FTL_LINE_FULL:
            nfull++;
            if (!ftl_victims_holds(&f->victims, l)) {
                FAIL("full line %u is not in the victim heap", l);
            }
            break;
        default:
            if (l != f->bg.line) {
                FAIL("line %u is still a GC victim", l);
            }
            nvictim++;
        }
    }
    for (uint32_t l = f->free.head; l != FTL_FREE_END; l = ftl_free_after(&f->free, l)) {
        if (f->lines[l].state != FTL_LINE_FREE || ++nfree > f->nlines) {
            FAIL("the free list holds line %u, which is not free (or loops)", l);
        }
        last = l;
    }
    if (last != f->free.tail || nfree != f->st.free_lines ||
        nfree + nfull + nopen + nvictim != f->nlines ||
        nfull != ftl_victims_count(&f->victims) || nopen != open_lines(f)) {
        FAIL("line counts disagree: %u free (stats %" G_GUINT64_FORMAT "), %u full (heap %u),"
             " %u open, %u lines", nfree, f->st.free_lines, nfull,
             ftl_victims_count(&f->victims), nopen, f->nlines);
    }
    if (ftl_victims_disorder(&f->victims)) {
        FAIL("victim heap out of order at %u", ftl_victims_disorder(&f->victims));
    }
    if (f->store && !store_agrees(f, err)) {
        goto out;
    }
    ok = true;
out:
    g_free(vpc);
    return ok;
}
