/*
 * GC victim choice: the candidate set, the policy registry and gc_policy= parsing; see
 * victim.h. The policies are in victim-*.c.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "victim.h"

#include <glib.h>
#include <math.h>
#include <string.h>

/* ---- the heap: every candidate, fewest valid pages on top ---- */

static void heap_init(FtlHeap *h, uint32_t cap, uint32_t *pos, FtlHeapLessFn *less,
                      const void *ctx)
{
    *h = (FtlHeap){ .id = g_new0(uint32_t, cap), .pos = pos, .less = less, .ctx = ctx };
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

static void heap_push(FtlHeap *h, uint32_t id)
{
    uint32_t i = h->len++;

    h->id[i] = id;
    h->pos[id] = i;
    sift_up(h, i);
}

/* Takes id (in the heap) out: the last one takes its place and finds its own. */
static void heap_remove(FtlHeap *h, uint32_t id)
{
    uint32_t i = h->pos[id], moved;

    swap_at(h, i, --h->len);
    if (i < h->len) {
        moved = h->id[i];
        sift_up(h, i);
        sift_down(h, h->pos[moved]);
    }
}

static bool heap_holds(const FtlHeap *h, uint32_t id)
{
    return h->pos[id] < h->len && h->id[h->pos[id]] == id;
}

/* ---- what choose() may ask ---- */

uint32_t ftl_victims_count(const FtlVictims *v)
{
    return v->fewest.len;
}

/* The candidates by id, once per pick: the heap's order depends on history, ids do not. */
static void list_by_id(FtlVictims *v)
{
    uint32_t k = 0;

    if (v->by_id_ready) {
        return;
    }
    for (uint32_t id = v->first; id < v->first + v->n; id++) {
        if (heap_holds(&v->fewest, id)) {
            v->by_id[k++] = id;
        }
    }
    g_assert(k == v->fewest.len);
    v->by_id_ready = true;
}

void ftl_victims_nth(FtlVictims *v, uint32_t i, FtlUnit *u)
{
    g_assert(i < v->fewest.len);
    list_by_id(v);
    v->view(v->ftl, v->by_id[i], u);
    u->id = v->by_id[i];
}

uint32_t ftl_victims_fewest_valid(const FtlVictims *v)
{
    return v->fewest.len ? v->fewest.id[0] : FTL_NO_UNIT;
}

bool ftl_unit_fewer_valid(const FtlUnit *a, const FtlUnit *b)
{
    if (a->valid != b->valid) {
        return a->valid < b->valid;
    }
    if (a->closed != b->closed) {
        return a->closed < b->closed;
    }
    return a->id < b->id;
}

uint32_t ftl_victims_least_cost(FtlVictims *v, FtlUnitCostFn *cost)
{
    FtlUnit best = { .id = FTL_NO_UNIT }, u;
    double best_cost = 0;

    for (uint32_t i = 0; i < ftl_victims_count(v); i++) {
        double c;
        ftl_victims_nth(v, i, &u);
        c = cost(v, &u);
        /* NaN (0/0) ranks last, as "no gain" would */
        if (isnan(c)) {
            c = INFINITY;
        }
        if (best.id == FTL_NO_UNIT || c < best_cost ||
            (c == best_cost && ftl_unit_fewer_valid(&u, &best))) {
            best = u;
            best_cost = c;
        }
    }
    return best.id;
}

uint32_t ftl_victims_param(const FtlVictims *v, unsigned i)
{
    g_assert(i < FTL_POLICY_MAX_PARAMS);
    return v->choice.param[i];
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t ftl_victims_random(FtlVictims *v, uint64_t n)
{
    uint64_t seed = ftl_policy_param(&v->choice, "seed", 0);
    uint64_t x = splitmix64(splitmix64(seed ^ splitmix64(v->draw_key)) + v->draws++);

    g_assert(n >= 1);
    /* the multiply-shift maps 64 random bits onto 0..n-1 with a bias below n / 2^64 */
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

uint64_t ftl_victims_now(const FtlVictims *v)
{
    return v->now;
}

uint64_t ftl_victims_unit_pages(const FtlVictims *v)
{
    return v->unit_pages;
}

/* ---- the FTL's side ---- */

void ftl_victims_init(FtlVictims *v, const FtlPolicyChoice *c, uint32_t first, uint32_t n,
                      uint64_t unit_pages, uint32_t *pos, FtlHeapLessFn *fewer_valid,
                      FtlUnitViewFn *view, const void *ftl)
{
    *v = (FtlVictims){
        .choice = *c,
        .first = first,
        .n = n,
        .view = view,
        .ftl = ftl,
        .unit_pages = unit_pages,
        .by_id = g_new(uint32_t, n),
    };
    if (!v->choice.policy) {
        v->choice = ftl_policy_default(FTL_VICTIM);
    }
    heap_init(&v->fewest, n, pos, fewer_valid, ftl);
}

void ftl_victims_destroy(FtlVictims *v)
{
    g_free(v->fewest.id);
    g_free(v->by_id);
    v->fewest.id = v->by_id = NULL;
    v->fewest.len = 0;
}

void ftl_victims_clear(FtlVictims *v)
{
    v->fewest.len = 0;
}

void ftl_victims_add(FtlVictims *v, uint32_t id)
{
    heap_push(&v->fewest, id);
}

void ftl_victims_fell(FtlVictims *v, uint32_t id)
{
    sift_up(&v->fewest, v->fewest.pos[id]);
}

bool ftl_victims_holds(const FtlVictims *v, uint32_t id)
{
    return heap_holds(&v->fewest, id);
}

uint64_t ftl_victims_most_garbage(const FtlVictims *v)
{
    FtlUnit u;

    if (!v->fewest.len) {
        return 0;
    }
    v->view(v->ftl, v->fewest.id[0], &u);
    return v->unit_pages - u.valid;
}

uint32_t ftl_victims_take(FtlVictims *v, uint64_t now, uint64_t draws, bool must_free)
{
    uint32_t id;
    FtlUnit u;

    if (!v->fewest.len) {
        return FTL_NO_UNIT;
    }
    v->now = now;
    v->draw_key = draws;
    v->draws = 0;
    v->by_id_ready = false;
    id = ((const FtlVictimPolicy *)v->choice.policy)->choose(v);
    g_assert(id != FTL_NO_UNIT && id >= v->first && id - v->first < v->n &&
             heap_holds(&v->fewest, id));
    v->view(v->ftl, id, &u);
    if (must_free && u.valid >= v->unit_pages) {
        id = v->fewest.id[0];       /* it would free nothing */
    }
    heap_remove(&v->fewest, id);
    return id;
}

uint32_t ftl_victims_disorder(const FtlVictims *v)
{
    for (uint32_t i = 1; i < v->fewest.len; i++) {
        if (less_at(&v->fewest, i, (i - 1) / 2)) {
            return i;
        }
    }
    return 0;
}
