/*
 * The blackbox FTL; see ftl.h for the behaviour. Victim selection: a binary min-heap of the
 * full lines keyed by valid-page count (O(log lines) per invalidation and per pick, memory
 * O(lines) whatever the line size). What the FDP FTL does alike is in ftl-common.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ftl-internal.h"

#include <glib.h>

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
    uint64_t i = ppn % f->pgs_per_line;

    a->blk = f->cfg.first_block + ppn / f->pgs_per_line;
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

    return (uint64_t)(a->blk - f->cfg.first_block) * f->pgs_per_line + i;
}

static uint32_t forced_lines(uint32_t nlines, uint32_t pcent_high)
{
    return MAX(ftl_gc_thres(nlines, pcent_high), FTL_RESERVE_LINES);
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
                             uint32_t min_spare, char **err)
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
    return ftl_derive_blocks_spare(geo, exposed_bytes, op_pcent, FTL_MIN_SPARE_LINES, err);
}

bool ftl_config_check(const FtlConfig *c, char **err)
{
    const NandGeometry *g = &c->geo;
    uint64_t ppl, data, spare;
    uint32_t nlines = g->blks_per_pl, h;

    if (!ftl_check_common(g, &c->tm, c->exposed_pages, c->gc_thres_pcent,
                          c->gc_thres_pcent_high, err)) {
        return false;
    }
    ppl = pages_per_line(g);
    data = div_up(c->exposed_pages, ppl);
    if (data > nlines || nlines - data < FTL_MIN_SPARE_LINES) {
        *err = g_strdup_printf("blks_per_pl=%u is too small for devsz_mb=%" G_GUINT64_FORMAT
                               " (%" G_GUINT64_FORMAT " blocks per plane of data): allowed "
                               "blks_per_pl >= %" G_GUINT64_FORMAT ", which leaves %d spare "
                               "for GC (or raise op_pcent, or lower devsz_mb)", nlines,
                               c->exposed_pages * nand_page_bytes(g) >> 20, data,
                               data + FTL_MIN_SPARE_LINES, FTL_MIN_SPARE_LINES);
        return false;
    }
    spare = nlines - data;
    h = ftl_pcent_high_min(nlines, c->gc_thres_pcent_high, FTL_RESERVE_LINES, spare);
    if (h != c->gc_thres_pcent_high) {
        /* forced GC could never raise free lines above its threshold: GC on every write */
        if (h > 99) {
            *err = g_strdup_printf("gc_thres_pcent_high=%u: forced GC would keep more free "
                                   "lines than the %" G_GUINT64_FORMAT " spare ones at any "
                                   "value; raise op_pcent (or blks_per_pl)",
                                   c->gc_thres_pcent_high, spare);
        } else {
            *err = g_strdup_printf("gc_thres_pcent_high=%u keeps %u free lines for forced GC "
                                   "but only %" G_GUINT64_FORMAT " spare lines exist: allowed "
                                   "gc_thres_pcent_high %u..99 (or raise op_pcent)",
                                   c->gc_thres_pcent_high,
                                   forced_lines(nlines, c->gc_thres_pcent_high), spare, h);
        }
        return false;
    }
    return true;
}

/* ---- victim heap: full lines, fewest valid pages on top ---- */

static bool line_less(const void *ctx, uint32_t a, uint32_t b)
{
    const Ftl *f = ctx;

    return f->lines[a].vpc < f->lines[b].vpc;
}

/* ---- lines and the write pointer ---- */

static void free_push(Ftl *f, uint32_t line)
{
    f->lines[line].state = FTL_LINE_FREE;
    f->lines[line].next_free = FTL_NO_LINE;
    if (f->free_tail == FTL_NO_LINE) {
        f->free_head = line;
    } else {
        f->lines[f->free_tail].next_free = line;
    }
    f->free_tail = line;
    f->st.free_lines++;
}

static uint32_t free_pop(Ftl *f)
{
    uint32_t line = f->free_head;

    /* GC thresholds and FTL_MIN_SPARE_LINES make this impossible; see ftl.h */
    g_assert(line != FTL_NO_LINE);
    f->free_head = f->lines[line].next_free;
    if (f->free_head == FTL_NO_LINE) {
        f->free_tail = FTL_NO_LINE;
    }
    f->st.free_lines--;
    return line;
}

static void invalidate(Ftl *f, uint64_t ppn)
{
    uint32_t line = ppn / f->pgs_per_line;
    FtlLine *l = &f->lines[line];

    f->p2l[ppn] = 0;
    l->vpc--;
    if (l->state == FTL_LINE_FULL) {
        ftl_heap_key_fell(&f->heap, line);
    }
}

/* Maps lpn to the next page of the open line (no NAND operation); returns the page. */
static uint64_t map_page(Ftl *f, uint64_t lpn)
{
    uint64_t ppn;

    if (f->wp_line == FTL_NO_LINE) {
        f->wp_line = free_pop(f);
        f->lines[f->wp_line].state = FTL_LINE_OPEN;
        f->wp_idx = 0;
    }
    ppn = (uint64_t)f->wp_line * f->pgs_per_line + f->wp_idx++;
    if (f->l2p[lpn]) {
        invalidate(f, f->l2p[lpn] - 1);
    }
    f->l2p[lpn] = ppn + 1;
    f->p2l[ppn] = lpn + 1;
    f->lines[f->wp_line].vpc++;
    if (f->wp_idx == f->pgs_per_line) {
        /* full lines become GC candidates at once; the next line opens when needed */
        f->lines[f->wp_line].state = FTL_LINE_FULL;
        ftl_heap_push(&f->heap, f->wp_line);
        f->wp_line = FTL_NO_LINE;
    }
    return ppn;
}

/* Maps lpn to the next page of the open line and programs it; returns the completion. */
static uint64_t write_page(Ftl *f, uint64_t lpn, uint64_t arrival_ns)
{
    NandAddr a;

    ftl_ppn_to_addr(f, map_page(f, lpn), &a);
    return ftl_program(&f->progs, &a, 1u << a.pl, arrival_ns);
}

/* ---- garbage collection ---- */

/* Collects the heap's top line: moves its valid pages, erases its blocks. */
static void gc_collect(Ftl *f, uint64_t now_ns, bool forced)
{
    const NandGeometry *g = &f->cfg.geo;
    uint32_t line = ftl_heap_pop(&f->heap);
    uint64_t base = (uint64_t)line * f->pgs_per_line, nluns = nand_luns(g);
    NandAddr a;

    f->lines[line].state = FTL_LINE_VICTIM;
    for (uint64_t i = 0; i < nluns; i++) {
        f->lun_read_ns[i] = now_ns;
    }
    for (uint64_t i = 0; i < f->pgs_per_line && f->lines[line].vpc; i++) {
        uint64_t lpn1 = f->p2l[base + i], rd, *lun_rd;
        if (!lpn1) {
            continue;
        }
        ftl_ppn_to_addr(f, base + i, &a);
        rd = nand_op(f->nand, NAND_OP_READ, &a, now_ns);
        lun_rd = &f->lun_read_ns[nand_lun_index(f->nand, &a)];
        *lun_rd = MAX(*lun_rd, rd);
        write_page(f, lpn1 - 1, rd);
        f->st.gc_pages_moved++;
    }
    g_assert(f->lines[line].vpc == 0);
    /* each chip erases the line's blocks on all its planes at once, after its reads */
    a = (NandAddr){ .blk = f->cfg.first_block + line };
    for (a.ch = 0; a.ch < g->nchs; a.ch++) {
        for (a.lun = 0; a.lun < g->luns_per_ch; a.lun++) {
            nand_op_planes(f->nand, NAND_OP_ERASE, &a, UINT32_MAX,
                           f->lun_read_ns[nand_lun_index(f->nand, &a)]);
            f->st.blocks_erased += g->pls_per_lun;
        }
    }
    free_push(f, line);
    f->st.gc_runs++;
    f->st.gc_forced_runs += forced;
}

/* A victim frees space (forced GC), or enough of it to be worth doing unasked (FEMU: 1/8). */
static bool victim_gains(const Ftl *f, bool background)
{
    uint64_t invalid;

    if (!f->heap.len) {
        return false;
    }
    invalid = f->pgs_per_line - f->lines[f->heap.id[0]].vpc;
    return background ? invalid >= MAX(1, f->pgs_per_line / 8) : invalid > 0;
}

/*
 * Background GC, chip by chip (FtlBgJob): books the victim's operations on stripe slot k
 * (one chip) while that chip is idle before limit, one at a time; the chip's erase follows
 * its last read. Returns with work left when the chip is busy up to limit.
 */
static void bg_chip(Ftl *f, uint64_t k, uint64_t limit)
{
    FtlBgJob *j = &f->bg;
    uint64_t base = (uint64_t)j->line * f->pgs_per_line, nluns = nand_luns(&f->cfg.geo);
    NandAddr a;

    while (j->next[k] != FTL_NEVER) {
        uint64_t i = j->next[k], at, rd;
        while (i < f->pgs_per_line && !f->p2l[base + i]) {
            i += nluns;                 /* overwritten or trimmed since: nothing to move */
        }
        j->next[k] = i;
        ftl_ppn_to_addr(f, base + (i < f->pgs_per_line ? i : k), &a);
        at = MAX(f->pump_ns, nand_chip_busy_until(f->nand, nand_lun_index(f->nand, &a)));
        if (at >= limit) {
            return;
        }
        f->st.gc_bg_ops++;
        if (i < f->pgs_per_line) {
            rd = nand_op(f->nand, NAND_OP_READ, &a, at);
            j->read_done[k] = MAX(j->read_done[k], rd);
            write_page(f, f->p2l[base + i] - 1, rd);
            f->st.gc_pages_moved++;
            j->next[k] = i + nluns;
        } else {
            a.pl = 0;
            nand_op_planes(f->nand, NAND_OP_ERASE, &a, UINT32_MAX, MAX(at, j->read_done[k]));
            f->st.blocks_erased += f->cfg.geo.pls_per_lun;
            j->next[k] = FTL_NEVER;
            j->chips_left--;
        }
    }
}

/* Books the job's operations that can start before limit; true if the victim is done. */
static bool bg_run(Ftl *f, uint64_t limit)
{
    FtlBgJob *j = &f->bg;

    for (uint64_t k = 0; k < nand_luns(&f->cfg.geo); k++) {
        bg_chip(f, k, limit);
    }
    if (j->chips_left) {
        return false;
    }
    g_assert(f->lines[j->line].vpc == 0);
    free_push(f, j->line);
    j->line = FTL_NO_LINE;
    f->st.gc_runs++;
    return true;
}

/* Background GC up to limit: victims while free lines are at or below its threshold. */
static void gc_background(Ftl *f, uint64_t limit)
{
    FtlBgJob *j = &f->bg;

    for (;;) {
        if (j->line == FTL_NO_LINE) {
            if (f->st.free_lines > f->gc_bg_lines || !victim_gains(f, true) ||
                f->pump_ns >= limit) {
                return;
            }
            j->line = ftl_heap_pop(&f->heap);
            f->lines[j->line].state = FTL_LINE_VICTIM;
            j->chips_left = nand_luns(&f->cfg.geo);
            for (uint64_t k = 0; k < j->chips_left; k++) {
                j->next[k] = k;
                j->read_done[k] = 0;
            }
        }
        if (!bg_run(f, limit)) {
            return;
        }
    }
}

static void gc_forced(Ftl *f, uint64_t now_ns)
{
    /* stops when no line has garbage: then free lines >= spare - 1, see ftl_config_check */
    while (f->st.free_lines <= f->gc_forced_lines) {
        if (f->bg.line != FTL_NO_LINE) {
            /* the background victim first, all of it now */
            f->pump_ns = MAX(f->pump_ns, now_ns);
            bg_run(f, FTL_NEVER);
            continue;
        }
        if (!victim_gains(f, false)) {
            break;
        }
        gc_collect(f, now_ns, true);
    }
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
uint64_t ftl_write(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns)
{
    uint64_t done = now_ns, last;

    g_return_val_if_fail(range_ok(f, lpn, npages), now_ns);
    host_begin(f, now_ns);
    for (uint64_t i = 0; i < npages; i++) {
        NandAddr a;
        uint64_t t;
        if (f->st.free_lines <= f->gc_forced_lines) {
            /* GC's programs go after the pages before them */
            t = ftl_program_flush(&f->progs, now_ns);
            done = MAX(done, t);
            gc_forced(f, now_ns);
        }
        ftl_ppn_to_addr(f, map_page(f, lpn + i), &a);
        f->st.host_pages_written++;
        t = ftl_program_gather(&f->progs, &a, now_ns);
        done = MAX(done, t);
    }
    last = ftl_program_flush(&f->progs, now_ns);
    return MAX(done, last);
}

uint64_t ftl_read(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns)
{
    uint64_t done = now_ns;
    NandAddr a;

    g_return_val_if_fail(range_ok(f, lpn, npages), now_ns);
    host_begin(f, now_ns);
    for (uint64_t i = 0; i < npages; i++) {
        uint64_t m = f->l2p[lpn + i], t;
        if (m) {
            ftl_ppn_to_addr(f, m - 1, &a);
        } else {
            a = ftl_unmapped_addr(&f->cfg.geo, f->cfg.first_block, lpn + i);
            f->st.unmapped_pages_read++;
        }
        note_overtake(f, &a);
        t = nand_op(f->nand, NAND_OP_READ, &a, now_ns);
        done = MAX(done, t);
        f->st.host_pages_read++;
    }
    return done;
}

void ftl_cached_read(Ftl *f, uint64_t npages, uint64_t now_ns)
{
    host_begin(f, now_ns);      /* the host is busy: no background GC in between */
    f->st.host_pages_read += npages;
}

uint64_t ftl_prefetch(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns)
{
    uint64_t done = now_ns;
    NandAddr a;

    g_return_val_if_fail(range_ok(f, lpn, npages), now_ns);
    host_begin(f, now_ns);
    for (uint64_t i = lpn; i < lpn + npages; i++) {
        if (f->l2p[i]) {
            ftl_ppn_to_addr(f, f->l2p[i] - 1, &a);
            uint64_t t = nand_op(f->nand, NAND_OP_READ, &a, now_ns);
            done = MAX(done, t);
            f->st.prefetch_pages_read++;
        }
    }
    return done;
}

uint64_t ftl_mapped_run(const Ftl *f, uint64_t lpn, uint64_t max)
{
    uint64_t n = 0;

    while (n < max && lpn + n < f->cfg.exposed_pages && f->l2p[lpn + n]) {
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
        if (f->l2p[i]) {
            invalidate(f, f->l2p[i] - 1);
            f->l2p[i] = 0;
        }
    }
    f->st.pages_trimmed += npages;
    return now_ns;
}

uint64_t ftl_flush(Ftl *f, uint64_t now_ns)
{
    host_begin(f, now_ns);
    return MAX(now_ns, f->last_prog_ns);
}

/* ---- lifecycle and introspection ---- */

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
    f->nand = nand;
    f->pgs_per_line = pages_per_line(&c->geo);
    f->stripe = nand_luns(&c->geo) * c->geo.pls_per_lun;
    f->nlines = c->geo.blks_per_pl;
    f->data_lines = div_up(c->exposed_pages, f->pgs_per_line);
    f->gc_forced_lines = forced_lines(f->nlines, c->gc_thres_pcent_high);
    f->gc_bg_lines = MAX(ftl_gc_thres(f->nlines, c->gc_thres_pcent), f->gc_forced_lines);
    total = nand_total_pages(&c->geo);
    /* zeroed and sparse: memory grows with the pages written, not the capacity */
    f->l2p = g_try_malloc0_n(c->exposed_pages, sizeof(uint64_t));
    f->p2l = g_try_malloc0_n(total, sizeof(uint64_t));
    if (!f->l2p || !f->p2l) {
        *err = g_strdup_printf("cannot allocate the FTL mapping tables (%" G_GUINT64_FORMAT
                               " MiB): lower devsz_mb", (c->exposed_pages + total) * 8 >> 20);
        ftl_free(f);
        return NULL;
    }
    f->lines = g_new0(FtlLine, f->nlines);
    f->heap_pos = g_new0(uint32_t, f->nlines);
    ftl_heap_init(&f->heap, f->nlines, f->heap_pos, line_less, f);
    ftl_progs_init(&f->progs, nand, &f->last_prog_ns, &f->st.nand_pages_written);
    f->lun_read_ns = g_new0(uint64_t, nand_luns(&c->geo));
    f->bg.line = FTL_NO_LINE;
    f->bg.next = g_new0(uint64_t, nand_luns(&c->geo));
    f->bg.read_done = g_new0(uint64_t, nand_luns(&c->geo));
    f->free_head = f->free_tail = FTL_NO_LINE;
    for (uint32_t i = 0; i < f->nlines; i++) {
        free_push(f, i);
    }
    f->wp_line = FTL_NO_LINE;
    f->st.total_lines = f->nlines;
    return f;
}

void ftl_free(Ftl *f)
{
    if (f) {
        if (!f->cfg.shared_nand) {
            nand_model_free(f->nand);
        }
        g_free(f->l2p);
        g_free(f->p2l);
        g_free(f->lines);
        ftl_heap_destroy(&f->heap);
        g_free(f->heap_pos);
        ftl_progs_destroy(&f->progs);
        g_free(f->lun_read_ns);
        g_free(f->bg.next);
        g_free(f->bg.read_done);
        g_free(f);
    }
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
    if (lpn >= f->cfg.exposed_pages || !f->l2p[lpn]) {
        return false;
    }
    ftl_ppn_to_addr(f, f->l2p[lpn] - 1, out);
    return true;
}

#define FAIL(...) do { *err = g_strdup_printf(__VA_ARGS__); goto out; } while (0)

bool ftl_check_consistency(Ftl *f, char **err)
{
    uint64_t total = (uint64_t)f->nlines * f->pgs_per_line, mapped = 0, valid = 0;
    uint64_t *vpc = g_new0(uint64_t, f->nlines);
    uint32_t nfree = 0, nfull = 0, nopen = 0, nvictim = 0, last = FTL_NO_LINE;
    bool ok = false;

    for (uint64_t lpn = 0; lpn < f->cfg.exposed_pages; lpn++) {
        uint64_t m = f->l2p[lpn];
        if (!m) {
            continue;
        }
        if (m - 1 >= total || f->p2l[m - 1] != lpn + 1) {
            FAIL("lpn %" G_GUINT64_FORMAT " maps to ppn %" G_GUINT64_FORMAT
                 " whose reverse entry does not name it", lpn, m - 1);
        }
        mapped++;
    }
    for (uint64_t ppn = 0; ppn < total; ppn++) {
        uint64_t r = f->p2l[ppn];
        uint32_t line = ppn / f->pgs_per_line;
        if (!r) {
            continue;
        }
        if (r - 1 >= f->cfg.exposed_pages || f->l2p[r - 1] != ppn + 1) {
            FAIL("ppn %" G_GUINT64_FORMAT " claims lpn %" G_GUINT64_FORMAT
                 " which maps elsewhere", ppn, r - 1);
        }
        if (f->lines[line].state == FTL_LINE_FREE ||
            (f->lines[line].state == FTL_LINE_VICTIM && line != f->bg.line) ||
            (f->lines[line].state == FTL_LINE_OPEN && ppn % f->pgs_per_line >= f->wp_idx)) {
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
            if (l != f->wp_line) {
                FAIL("line %u is open but not the write pointer's", l);
            }
            break;
        case FTL_LINE_FULL:
            nfull++;
            if (!ftl_heap_holds(&f->heap, l)) {
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
    for (uint32_t l = f->free_head; l != FTL_NO_LINE; l = f->lines[l].next_free) {
        if (f->lines[l].state != FTL_LINE_FREE || ++nfree > f->nlines) {
            FAIL("the free list holds line %u, which is not free (or loops)", l);
        }
        last = l;
    }
    if (last != f->free_tail || nfree != f->st.free_lines ||
        nfree + nfull + nopen + nvictim != f->nlines || nfull != f->heap.len ||
        nopen != (f->wp_line != FTL_NO_LINE)) {
        FAIL("line counts disagree: %u free (stats %" G_GUINT64_FORMAT "), %u full (heap %u),"
             " %u open, %u lines", nfree, f->st.free_lines, nfull, f->heap.len, nopen,
             f->nlines);
    }
    if (ftl_heap_disorder(&f->heap)) {
        FAIL("victim heap out of order at %u", ftl_heap_disorder(&f->heap));
    }
    ok = true;
out:
    g_free(vpc);
    return ok;
}
