/*
 * Busy intervals of one resource; see timeline.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "timeline.h"

#include <glib.h>
#include <string.h>

struct TlNode {
    uint64_t s, e;
    uint64_t gap;       /* s minus the end of the interval before; 0 for the first */
    uint64_t maxgap;    /* the largest gap in this subtree */
    uint32_t l, r;      /* children; l also links the free list */
    uint32_t prio;
};

#define NIL 0

static inline TlNode *N(const Timeline *tl, uint32_t i)
{
    return &tl->pool[i];
}

static void pull(Timeline *tl, uint32_t i)
{
    TlNode *n = N(tl, i);
    n->maxgap = MAX(n->gap, MAX(N(tl, n->l)->maxgap, N(tl, n->r)->maxgap));
}

/* a: the nodes starting before key; b: the rest. */
static void split(Timeline *tl, uint32_t t, uint64_t key, uint32_t *a, uint32_t *b)
{
    if (t == NIL) {
        *a = *b = NIL;
    } else if (N(tl, t)->s < key) {
        split(tl, N(tl, t)->r, key, &N(tl, t)->r, b);
        *a = t;
        pull(tl, t);
    } else {
        split(tl, N(tl, t)->l, key, a, &N(tl, t)->l);
        *b = t;
        pull(tl, t);
    }
}

/* a: the nodes ending at or before h (a prefix, as ends grow with starts); b: the rest. */
static void split_end(Timeline *tl, uint32_t t, uint64_t h, uint32_t *a, uint32_t *b)
{
    if (t == NIL) {
        *a = *b = NIL;
    } else if (N(tl, t)->e <= h) {
        split_end(tl, N(tl, t)->r, h, &N(tl, t)->r, b);
        *a = t;
        pull(tl, t);
    } else {
        split_end(tl, N(tl, t)->l, h, a, &N(tl, t)->l);
        *b = t;
        pull(tl, t);
    }
}

/* Every node of a starts before every node of b. */
static uint32_t merge(Timeline *tl, uint32_t a, uint32_t b)
{
    if (a == NIL || b == NIL) {
        return a ? a : b;
    }
    if (N(tl, a)->prio > N(tl, b)->prio) {
        N(tl, a)->r = merge(tl, N(tl, a)->r, b);
        pull(tl, a);
        return a;
    }
    N(tl, b)->l = merge(tl, a, N(tl, b)->l);
    pull(tl, b);
    return b;
}

/* Recomputes maxgap on the path to the node starting at key, after its gap changed. */
static void refresh(Timeline *tl, uint32_t t, uint64_t key)
{
    if (t == NIL) {
        return;
    }
    if (key < N(tl, t)->s) {
        refresh(tl, N(tl, t)->l, key);
    } else if (key > N(tl, t)->s) {
        refresh(tl, N(tl, t)->r, key);
    }
    pull(tl, t);
}

/* The node with the largest start <= key, or NIL. */
static uint32_t pred_le(const Timeline *tl, uint64_t key)
{
    uint32_t t = tl->root, best = NIL;
    while (t != NIL) {
        if (N(tl, t)->s <= key) {
            best = t;
            t = N(tl, t)->r;
        } else {
            t = N(tl, t)->l;
        }
    }
    return best;
}

/* The node with the smallest start > key, or NIL. */
static uint32_t succ_gt(const Timeline *tl, uint64_t key)
{
    uint32_t t = tl->root, best = NIL;
    while (t != NIL) {
        if (N(tl, t)->s > key) {
            best = t;
            t = N(tl, t)->l;
        } else {
            t = N(tl, t)->r;
        }
    }
    return best;
}

/* The first node starting after key whose gap is at least d, or NIL. */
static uint32_t first_gap(const Timeline *tl, uint32_t t, uint64_t key, uint64_t d)
{
    while (t != NIL && N(tl, t)->maxgap >= d) {
        const TlNode *n = N(tl, t);
        if (n->s <= key) {
            t = n->r;
            continue;
        }
        uint32_t left = first_gap(tl, n->l, key, d);
        if (left != NIL) {
            return left;
        }
        if (n->gap >= d) {
            return t;
        }
        t = n->r;
    }
    return NIL;
}

static uint32_t node_new(Timeline *tl, uint64_t s, uint64_t e, uint64_t gap)
{
    uint32_t i;

    if (tl->free_list != NIL) {
        i = tl->free_list;
        tl->free_list = N(tl, i)->l;
    } else {
        if (tl->used == tl->cap) {
            tl->cap = tl->cap ? tl->cap * 2 : 64;
            tl->pool = g_renew(TlNode, tl->pool, tl->cap);
        }
        i = tl->used++;
    }
    /* xorshift32: the same priorities, so the same shapes, in every run */
    tl->seed ^= tl->seed << 13;
    tl->seed ^= tl->seed >> 17;
    tl->seed ^= tl->seed << 5;
    *N(tl, i) = (TlNode){ .s = s, .e = e, .gap = gap, .maxgap = gap, .prio = tl->seed };
    tl->live++;
    return i;
}

static void node_free_all(Timeline *tl, uint32_t t)
{
    if (t != NIL) {
        node_free_all(tl, N(tl, t)->l);
        node_free_all(tl, N(tl, t)->r);
        N(tl, t)->l = tl->free_list;
        tl->free_list = t;
        tl->live--;
    }
}

void tl_init(Timeline *tl, bool fifo)
{
    *tl = (Timeline){ .fifo = fifo };
    tl_clear(tl);
}

void tl_clear(Timeline *tl)
{
    if (!tl->pool) {
        tl->cap = 1;
        tl->pool = g_new0(TlNode, 1);
    }
    tl->pool[NIL] = (TlNode){ 0 };
    tl->used = 1;
    tl->root = tl->free_list = NIL;
    tl->live = 0;
    tl->busy_until = tl->retired_end = tl->early = 0;
    tl->first_end = UINT64_MAX;
    tl->seed = 2463534242u;
}

void tl_destroy(Timeline *tl)
{
    g_free(tl->pool);
    tl->pool = NULL;
}

void tl_copy(Timeline *dst, const Timeline *src)
{
    TlNode *pool = dst->pool;

    *dst = *src;
    dst->pool = g_renew(TlNode, pool, src->cap);
    memcpy(dst->pool, src->pool, src->cap * sizeof(TlNode));
}

uint64_t tl_fit(const Timeline *tl, uint64_t t, uint64_t d)
{
    uint32_t p, q, n;
    uint64_t c = t;

    if (tl->fifo) {
        return MAX(t, tl->busy_until);
    }
    if (t < tl->retired_end) {
        ((Timeline *)tl)->early++;
        c = t = tl->retired_end;
    }
    if (d == 0 || t >= tl->busy_until) {
        return t;
    }
    p = pred_le(tl, c);
    if (p != NIL && N(tl, p)->e > c) {
        c = N(tl, p)->e;                /* t falls in a booking: from its end */
    }
    q = succ_gt(tl, c);
    if (q == NIL || N(tl, q)->s - c >= d) {
        return c;
    }
    n = first_gap(tl, tl->root, N(tl, q)->s, d);
    return n == NIL ? tl->busy_until : N(tl, n)->s - N(tl, n)->gap;
}

bool tl_is_free(const Timeline *tl, uint64_t s, uint64_t e, uint64_t *busy_end)
{
    uint32_t p, q;
    uint64_t end = 0;

    if (e <= s && !tl->fifo) {
        return true;
    }
    if (tl->fifo) {
        if (s >= tl->busy_until) {
            return true;
        }
        end = tl->busy_until;
    } else if (s < tl->retired_end) {
        ((Timeline *)tl)->early++;
        end = tl->retired_end;
    } else if (s >= tl->busy_until) {
        return true;
    } else if ((p = pred_le(tl, s)) != NIL && N(tl, p)->e > s) {
        end = N(tl, p)->e;
    } else if ((q = succ_gt(tl, s)) != NIL && N(tl, q)->s < e) {
        end = N(tl, q)->e;
    } else {
        return true;
    }
    if (busy_end) {
        *busy_end = end;
    }
    return false;
}

void tl_book(Timeline *tl, uint64_t s, uint64_t e)
{
    uint32_t p, q, a, b;
    bool touch_p, touch_q;

    if (tl->fifo) {
        /* the old rule: a booking, even an empty one, moves the free time to its end */
        g_assert(s >= tl->busy_until);
        tl->busy_until = MAX(s, e);
        return;
    }
    if (e <= s) {
        return;
    }
    g_assert(s >= tl->retired_end);
    p = pred_le(tl, s);
    q = succ_gt(tl, s);
    /* a booking over another would corrupt the gaps: the callers fit first */
    g_assert((p == NIL || N(tl, p)->e <= s) && (q == NIL || N(tl, q)->s >= e));
    tl->busy_until = MAX(tl->busy_until, e);
    tl->first_end = MIN(tl->first_end, e);
    touch_p = p != NIL && N(tl, p)->e == s;
    touch_q = q != NIL && N(tl, q)->s == e;
    if (touch_p && touch_q) {
        /* fills the gap between two bookings: they become one */
        uint32_t mid, rest;
        N(tl, p)->e = N(tl, q)->e;
        split(tl, tl->root, N(tl, q)->s, &a, &b);
        split(tl, b, N(tl, q)->s + 1, &mid, &rest);
        N(tl, mid)->l = tl->free_list;
        tl->free_list = mid;
        tl->live--;
        tl->root = merge(tl, a, rest);
    } else if (touch_p) {
        N(tl, p)->e = e;
        if (q != NIL) {
            N(tl, q)->gap = N(tl, q)->s - e;
            refresh(tl, tl->root, N(tl, q)->s);
        }
    } else if (touch_q) {
        /* the start moves back, before its old value but after p: the order holds */
        N(tl, q)->s = s;
        N(tl, q)->gap = p != NIL ? s - N(tl, p)->e : 0;
        refresh(tl, tl->root, s);
    } else {
        uint32_t x = node_new(tl, s, e, p != NIL ? s - N(tl, p)->e : 0);
        if (q != NIL) {
            N(tl, q)->gap = N(tl, q)->s - e;
            refresh(tl, tl->root, N(tl, q)->s);
        }
        split(tl, tl->root, s, &a, &b);
        tl->root = merge(tl, merge(tl, a, x), b);
    }
}

void tl_retire(Timeline *tl, uint64_t h)
{
    uint32_t a, b, t;

    if (tl->fifo || h < tl->first_end) {
        return;                         /* nothing ends at or before h */
    }
    split_end(tl, tl->root, h, &a, &b);
    for (t = a; N(tl, t)->r != NIL; t = N(tl, t)->r) {
    }
    tl->retired_end = MAX(tl->retired_end, N(tl, t)->e);
    node_free_all(tl, a);
    tl->root = b;
    for (t = b; t != NIL && N(tl, t)->l != NIL; t = N(tl, t)->l) {
    }
    tl->first_end = t == NIL ? UINT64_MAX : N(tl, t)->e;
}

static bool walk(const Timeline *tl, uint32_t t,
                 bool (*fn)(uint64_t s, uint64_t e, void *opaque), void *opaque)
{
    return t == NIL || (walk(tl, N(tl, t)->l, fn, opaque) &&
                        fn(N(tl, t)->s, N(tl, t)->e, opaque) &&
                        walk(tl, N(tl, t)->r, fn, opaque));
}

void tl_foreach(const Timeline *tl, bool (*fn)(uint64_t s, uint64_t e, void *opaque),
                void *opaque)
{
    walk(tl, tl->root, fn, opaque);
}
