/*
 * What the page-level FTLs share; see ftl-common.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ftl-common.h"

#include <glib.h>

/* ---- configuration ---- */

bool ftl_check_common(const NandGeometry *g, const NandTiming *tm, uint64_t exposed_pages,
                      uint32_t gc_thres_pcent, uint32_t gc_thres_pcent_high, char **err)
{
    if (!nand_geometry_check(g, err) || !nand_timing_check(tm, err)) {
        return false;
    }
    if (gc_thres_pcent < 1 || gc_thres_pcent > 99) {
        *err = g_strdup_printf("gc_thres_pcent=%u is out of range: allowed 1..99",
                               gc_thres_pcent);
        return false;
    }
    if (gc_thres_pcent_high < gc_thres_pcent || gc_thres_pcent_high > 99) {
        *err = g_strdup_printf("gc_thres_pcent_high=%u is out of range: allowed %u "
                               "(gc_thres_pcent)..99", gc_thres_pcent_high, gc_thres_pcent);
        return false;
    }
    if (!exposed_pages) {
        *err = g_strdup("devsz_mb: the exposed capacity must be at least one NAND page");
        return false;
    }
    return true;
}

uint32_t ftl_gc_thres(uint32_t n, uint32_t pcent)
{
    return (uint32_t)((uint64_t)n * (100 - pcent) / 100);
}

uint32_t ftl_pcent_high_min(uint32_t n, uint32_t pcent_high, uint32_t reserve,
                            uint64_t spare)
{
    uint32_t h = pcent_high;

    while (h <= 99 && MAX(ftl_gc_thres(n, h), reserve) >= spare) {
        h++;
    }
    return h;
}

NandModel *ftl_nand_get(const NandGeometry *g, const NandTiming *tm, NandModel *shared,
                        uint32_t first_block, const char *who, char **err)
{
    const NandGeometry *s;

    if (!shared) {
        return nand_model_new(g, tm, err);
    }
    s = &shared->geo;
    if (s->nchs != g->nchs || s->luns_per_ch != g->luns_per_ch ||
        s->pls_per_lun != g->pls_per_lun || s->pgs_per_blk != g->pgs_per_blk ||
        nand_page_bytes(s) != nand_page_bytes(g) ||
        s->blks_per_pl < first_block + g->blks_per_pl) {
        *err = g_strdup_printf("the %s's geometry does not fit the shared flash", who);
        return NULL;
    }
    return shared;
}

/* ---- host reads ---- */

NandAddr ftl_unmapped_addr(const NandGeometry *g, uint32_t first_block, uint64_t lpn)
{
    uint64_t chip = lpn % nand_luns(g);

    return (NandAddr){ .ch = chip % g->nchs, .lun = chip / g->nchs, .blk = first_block };
}

/* ---- programs ---- */

void ftl_progs_init(FtlProgs *p, NandModel *nand, uint64_t *last_ns, uint64_t *pages)
{
    *p = (FtlProgs){ .nand = nand, .last_ns = last_ns, .pages = pages,
                     .nluns = nand_luns(&nand->geo) };
    p->pend = g_new0(FtlPending, p->nluns);
}

void ftl_progs_destroy(FtlProgs *p)
{
    g_free(p->pend);
    p->pend = NULL;
}

uint64_t ftl_program(FtlProgs *p, const NandAddr *a, uint32_t mask, uint64_t arrival_ns)
{
    uint64_t done = nand_op_planes(p->nand, NAND_OP_PROGRAM, a, mask, arrival_ns);

    *p->last_ns = MAX(*p->last_ns, done);
    *p->pages += __builtin_popcount(mask);
    return done;
}

uint64_t ftl_program_gather(FtlProgs *p, const NandAddr *a, uint64_t arrival_ns)
{
    FtlPending *c = &p->pend[nand_lun_index(p->nand, a)];
    uint64_t done = arrival_ns;

    if (c->mask && (c->a.blk != a->blk || c->a.pg != a->pg || (c->mask >> a->pl) & 1)) {
        done = ftl_program(p, &c->a, c->mask, arrival_ns);
        c->mask = 0;
    }
    if (!c->mask) {
        c->a = *a;
    }
    c->mask |= 1u << a->pl;
    return done;
}

uint64_t ftl_program_flush(FtlProgs *p, uint64_t arrival_ns)
{
    uint64_t done = arrival_ns;

    for (uint64_t c = 0; c < p->nluns; c++) {
        if (p->pend[c].mask) {
            uint64_t t = ftl_program(p, &p->pend[c].a, p->pend[c].mask, arrival_ns);
            done = MAX(done, t);    /* t, not the call, in MAX(): one booking */
            p->pend[c].mask = 0;
        }
    }
    return done;
}

double ftl_waf_of(uint64_t nand_pages, uint64_t host_pages)
{
    if (!host_pages) {
        return 1.0;
    }
    return (double)nand_pages / (double)host_pages;
}

/* ---- victim heap ---- */

void ftl_heap_init(FtlHeap *h, uint32_t cap, uint32_t *pos, FtlHeapLessFn *less,
                   const void *ctx)
{
    *h = (FtlHeap){ .id = g_new0(uint32_t, cap), .pos = pos, .less = less, .ctx = ctx };
}

void ftl_heap_destroy(FtlHeap *h)
{
    g_free(h->id);
    h->id = NULL;
    h->len = 0;
}

static bool less_at(const FtlHeap *h, uint32_t i, uint32_t j)
{
    return h->less(h->ctx, h->id[i], h->id[j]);
}

static void swap_at(FtlHeap *h, uint32_t i, uint32_t j)
{
    uint32_t t = h->id[i];

    h->id[i] = h->id[j];
    h->id[j] = t;
    h->pos[h->id[i]] = i;
    h->pos[h->id[j]] = j;
}

static void sift_up(FtlHeap *h, uint32_t i)
{
    while (i && less_at(h, i, (i - 1) / 2)) {
        swap_at(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void sift_down(FtlHeap *h, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->len && less_at(h, l, m)) {
            m = l;
        }
        if (r < h->len && less_at(h, r, m)) {
            m = r;
        }
        if (m == i) {
            return;
        }
        swap_at(h, i, m);
        i = m;
    }
}

void ftl_heap_push(FtlHeap *h, uint32_t id)
{
    uint32_t i = h->len++;

    h->id[i] = id;
    h->pos[id] = i;
    sift_up(h, i);
}

uint32_t ftl_heap_pop(FtlHeap *h)
{
    uint32_t top = h->id[0];

    swap_at(h, 0, --h->len);
    sift_down(h, 0);
    return top;
}

void ftl_heap_key_fell(FtlHeap *h, uint32_t id)
{
    sift_up(h, h->pos[id]);
}

bool ftl_heap_holds(const FtlHeap *h, uint32_t id)
{
    return h->pos[id] < h->len && h->id[h->pos[id]] == id;
}

uint32_t ftl_heap_disorder(const FtlHeap *h)
{
    for (uint32_t i = 1; i < h->len; i++) {
        if (less_at(h, i, (i - 1) / 2)) {
            return i;
        }
    }
    return 0;
}
