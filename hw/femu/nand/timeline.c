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

/* Inserts node x (its key not in t); every node on the way is pulled again. */
static uint32_t insert(Timeline *tl, uint32_t t, uint32_t x)
{
    if (t == NIL) {
        return x;
    }
    if (N(tl, x)->prio > N(tl, t)->prio) {
        split(tl, t, N(tl, x)->s, &N(tl, x)->l, &N(tl, x)->r);
        pull(tl, x);
        return x;
    }
    if (N(tl, x)->s < N(tl, t)->s) {
        N(tl, t)->l = insert(tl, N(tl, t)->l, x);
    } else {
        N(tl, t)->r = insert(tl, N(tl, t)->r, x);
    }
    pull(tl, t);
    return t;
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

/* In one descent: *p, the node with the largest start <= key; *q, the smallest > key. */
static void neighbours(const Timeline *tl, uint64_t key, uint32_t *p, uint32_t *q)
{
    uint32_t t = tl->root;

    *p = *q = NIL;
    while (t != NIL) {
        if (N(tl, t)->s <= key) {
            *p = t;
            t = N(tl, t)->r;
        } else {
            *q = t;
            t = N(tl, t)->l;
        }
    }
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
    tl->root = tl->free_list = tl->last = NIL;
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

uint64_t tl_fit_gap(const Timeline *tl, uint64_t t, uint64_t d, uint64_t *gap_end)
{
    uint32_t p, q, n;
    uint64_t c = t;

    *gap_end = UINT64_MAX;
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
    if (t >= N(tl, tl->last)->s) {
        return tl->busy_until;          /* within the latest interval */
    }
    /* no booking starts in (t, p's end]: q follows c as it follows t */
    neighbours(tl, c, &p, &q);
    if (p != NIL && N(tl, p)->e > c) {
        c = N(tl, p)->e;                /* t falls in a booking: from its end */
    }
    if (q == NIL || N(tl, q)->s - c >= d) {
        *gap_end = q == NIL ? UINT64_MAX : N(tl, q)->s;
        return c;
    }
    n = first_gap(tl, tl->root, N(tl, q)->s, d);
    if (n == NIL) {
        return tl->busy_until;
    }
    *gap_end = N(tl, n)->s;
    return N(tl, n)->s - N(tl, n)->gap;
}

uint64_t tl_fit(const Timeline *tl, uint64_t t, uint64_t d)
{
    uint64_t gap_end;
    return tl_fit_gap(tl, t, d, &gap_end);
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
    } else {
        neighbours(tl, s, &p, &q);
        if (p != NIL && N(tl, p)->e > s) {
            end = N(tl, p)->e;
        } else if (q != NIL && N(tl, q)->s < e) {
            end = N(tl, q)->e;
        } else {
            return true;
        }
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
    if (s >= tl->busy_until) {
        /* after every booking: the common case, without a search */
        if (tl->last != NIL && s == tl->busy_until) {
            N(tl, tl->last)->e = e;
        } else {
            uint64_t gap = tl->last != NIL ? s - N(tl, tl->last)->e : 0;
            uint32_t x = node_new(tl, s, e, gap);
            tl->root = merge(tl, tl->root, x);
            tl->last = x;
        }
        tl->busy_until = e;
        tl->first_end = MIN(tl->first_end, e);
        return;
    }
    neighbours(tl, s, &p, &q);
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
        if (tl->last == q) {
            tl->last = p;
        }
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
        if (q == NIL) {
            tl->last = x;
        } else {
            /* q is on x's search path (as a successor is): the insert pulls it again */
            N(tl, q)->gap = N(tl, q)->s - e;
        }
        tl->root = insert(tl, tl->root, x);
    }
}

/*
 * Retiring takes the first intervals out one by one from the left spine. The maxgap of the
 * nodes above them is not lowered: it stays an upper bound, which is all first_gap needs
 * (it checks the gaps themselves), and the next pull through them makes it exact again.
 */
void tl_retire(Timeline *tl, uint64_t h)
{
    uint32_t parent, t;

    if (tl->fifo || h < tl->first_end) {
        return;                         /* nothing ends at or before h */
    }
    for (;;) {
        parent = NIL;
        t = tl->root;
        if (t == NIL) {
            break;
        }
        while (N(tl, t)->l != NIL) {
            parent = t;
            t = N(tl, t)->l;
        }
        if (N(tl, t)->e > h) {
            break;
        }
        tl->retired_end = MAX(tl->retired_end, N(tl, t)->e);
        if (parent == NIL) {
            tl->root = N(tl, t)->r;
        } else {
            N(tl, parent)->l = N(tl, t)->r;
        }
        N(tl, t)->l = tl->free_list;
        tl->free_list = t;
        tl->live--;
    }
    tl->first_end = t == NIL ? UINT64_MAX : N(tl, t)->e;
    if (tl->root == NIL) {
        tl->last = NIL;
    }
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
