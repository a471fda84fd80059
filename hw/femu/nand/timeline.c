/*
 * Busy intervals of one resource; see timeline.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "timeline.h"
#include "../media/model-util.h"

#include <glib.h>
#include <string.h>

struct TlIv {
    uint64_t s, e;
};

/* Slots per block of bmax: a gap search reads at most this many gaps in a block it skips
 * to, and the bounds cost 1/TL_BLOCK of the array. */
#define TL_BLOCK 32

/*
 * gap(i) = iv[i].s - iv[i - 1].e for head < i < tail (the first kept interval's gap is not
 * used). The invariant: bmax[i / TL_BLOCK] >= gap(i). A gap travels with its interval when
 * the array moves, so a move only has to bound the slots at block edges again.
 */
static inline uint64_t gap(const Timeline *tl, uint32_t i)
{
    return tl->iv[i].s - tl->iv[i - 1].e;
}

static inline void bound(Timeline *tl, uint32_t i)
{
    if (i > tl->head && i < tl->tail) {
        uint64_t *b = &tl->bmax[i / TL_BLOCK];
        *b = MAX(*b, gap(tl, i));
    }
}

/* After the slots lo..hi (inclusive) took intervals from their neighbours. */
static void bound_moved(Timeline *tl, uint32_t lo, uint32_t hi)
{
    for (uint32_t m = (lo / TL_BLOCK + 1) * TL_BLOCK; m <= hi; m += TL_BLOCK) {
        bound(tl, m - 1);
        bound(tl, m);
    }
}

/*
 * Moves the kept intervals to a quarter of the free room from the left of an array of at
 * least four times their number (growing it if need be), so that the next n inserts and
 * appends find room: O(1) per booking over time.
 */
static void relayout(Timeline *tl)
{
    uint32_t n = tl->tail - tl->head, cap = MAX(tl->cap, 64), head;
    TlIv *iv = tl->iv;

    while (cap < 4 * n + 2 * TL_BLOCK) {
        cap *= 2;
    }
    head = (cap - n) / 4;
    if (cap != tl->cap) {
        iv = g_new(TlIv, cap);
        if (n) {
            memcpy(iv + head, tl->iv + tl->head, n * sizeof(TlIv));
        }
        g_free(tl->iv);
        tl->bmax = g_renew(uint64_t, tl->bmax, cap / TL_BLOCK + 1);
    } else {
        memmove(iv + head, iv + tl->head, n * sizeof(TlIv));
    }
    tl->iv = iv;
    tl->cap = cap;
    tl->head = head;
    tl->tail = head + n;
    memset(tl->bmax, 0, (cap / TL_BLOCK + 1) * sizeof(uint64_t));
    for (uint32_t i = head + 1; i < tl->tail; i++) {
        bound(tl, i);
    }
}

/* Searches of the last TL_NEAR slots count them, without a branch per slot. */
#define TL_NEAR 16

/*
 * The first slot whose interval starts after key (tail if none). A booking mostly follows a
 * fit in the same gap: its slot is tried first. Most other keys fall among the latest
 * intervals: those are counted. Else a binary search without branches (its comparisons do
 * not predict) that fetches both of its next probes while it compares: a channel keeps
 * thousands of intervals, and each step would otherwise wait on memory.
 */
static uint32_t after(const Timeline *tl, uint64_t key)
{
    const TlIv *iv = tl->iv, *base;
    uint32_t h = tl->hint, lo = tl->head, len = tl->tail - lo, n = 0;

    if (h >= lo && h <= tl->tail && (h == lo || iv[h - 1].s <= key) &&
        (h == tl->tail || iv[h].s > key)) {
        return h;
    }
    if (len <= TL_NEAR || iv[tl->tail - TL_NEAR].s <= key) {
        lo = tl->tail - MIN(len, TL_NEAR);
        for (uint32_t i = lo; i < tl->tail; i++) {
            n += iv[i].s <= key;
        }
        return lo + n;
    }
    /* the answer is in [base, base + len]; everything before base starts by key */
    base = iv + lo;
    len -= TL_NEAR;
    while (len > 1) {
        uint32_t half = len / 2, next = (len - half) / 2;
        femu_fetch(&base[next]);         /* both probes of the next step */
        femu_fetch(&base[half + next]);
        base = base[half].s <= key ? base + half : base;
        len -= half;
    }
    return base - iv + (len && base->s <= key);
}

/* The first slot from `from` on whose gap is at least d, or tail. */
static uint32_t first_gap(const Timeline *tl, uint32_t from, uint64_t d)
{
    uint32_t i = from, end = MIN(tl->tail, (from / TL_BLOCK + 1) * TL_BLOCK);

    for (; i < end; i++) {
        if (gap(tl, i) >= d) {
            return i;
        }
    }
    for (; i < tl->tail; i = end) {
        uint64_t *b = &tl->bmax[i / TL_BLOCK], most = 0;
        end = MIN(tl->tail, i + TL_BLOCK);
        if (*b < d) {
            continue;
        }
        for (; i < end; i++) {
            uint64_t g = gap(tl, i);
            if (g >= d) {
                return i;
            }
            most = MAX(most, g);
        }
        *b = most;      /* the whole block read: its bound made exact */
    }
    return tl->tail;
}

void tl_init(Timeline *tl, bool fifo)
{
    *tl = (Timeline){ .fifo = fifo };
    tl_clear(tl);
}

void tl_clear(Timeline *tl)
{
    tl->head = tl->tail = tl->cap / 4;
    if (tl->bmax) {
        memset(tl->bmax, 0, (tl->cap / TL_BLOCK + 1) * sizeof(uint64_t));
    }
    tl->busy_until = tl->retired_end = tl->early = 0;
    tl->first_end = UINT64_MAX;
}

void tl_destroy(Timeline *tl)
{
    g_free(tl->iv);
    g_free(tl->bmax);
    tl->iv = NULL;
    tl->bmax = NULL;
    tl->cap = tl->head = tl->tail = 0;
}

void tl_copy(Timeline *dst, const Timeline *src)
{
    tl_destroy(dst);
    *dst = *src;
    if (src->cap) {
        dst->iv = g_new(TlIv, src->cap);
        memcpy(dst->iv + src->head, src->iv + src->head,
               (src->tail - src->head) * sizeof(TlIv));
        dst->bmax = g_memdup2(src->bmax, (src->cap / TL_BLOCK + 1) * sizeof(uint64_t));
    }
}

uint64_t tl_fit_gap(const Timeline *tl, uint64_t t, uint64_t d, uint64_t *gap_end)
{
    uint32_t i, n;
    uint64_t c;

    *gap_end = UINT64_MAX;
    if (tl->fifo) {
        return MAX(t, tl->busy_until);
    }
    if (t < tl->retired_end) {
        ((Timeline *)tl)->early++;
        t = tl->retired_end;
    }
    if (d == 0 || t >= tl->busy_until) {
        return t;
    }
    if (tl->head == tl->tail || t >= tl->iv[tl->tail - 1].s) {
        return tl->busy_until;          /* within the latest interval */
    }
    i = after(tl, t);
    c = t;
    if (i > tl->head && tl->iv[i - 1].e > c) {
        c = tl->iv[i - 1].e;            /* t falls in a booking: from its end */
    }
    if (tl->iv[i].s - c >= d) {
        ((Timeline *)tl)->hint = i;     /* where its booking will go */
        *gap_end = tl->iv[i].s;
        return c;
    }
    n = first_gap(tl, i + 1, d);
    if (n == tl->tail) {
        return tl->busy_until;
    }
    ((Timeline *)tl)->hint = n;
    *gap_end = tl->iv[n].s;
    return tl->iv[n - 1].e;
}

uint64_t tl_fit(const Timeline *tl, uint64_t t, uint64_t d)
{
    uint64_t gap_end;
    return tl_fit_gap(tl, t, d, &gap_end);
}

bool tl_is_free(const Timeline *tl, uint64_t s, uint64_t e, uint64_t *busy_end)
{
    uint32_t i;
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
        i = after(tl, s);
        if (i > tl->head && tl->iv[i - 1].e > s) {
            end = tl->iv[i - 1].e;
        } else if (i < tl->tail && tl->iv[i].s < e) {
            end = tl->iv[i].e;
        } else {
            return true;
        }
    }
    if (busy_end) {
        *busy_end = end;
    }
    return false;
}

/* Puts x before slot i, moving the shorter side of the array by one slot. */
static void insert_at(Timeline *tl, uint32_t i, TlIv x)
{
    bool left = i - tl->head < tl->tail - i;

    if (left ? tl->head == 0 : tl->tail == tl->cap) {
        uint32_t k = i - tl->head;
        relayout(tl);
        i = tl->head + k;
    }
    if (left) {
        memmove(&tl->iv[tl->head - 1], &tl->iv[tl->head], (i - tl->head) * sizeof(TlIv));
        tl->iv[--i] = x;
        tl->head--;
        bound_moved(tl, tl->head, i);
    } else {
        memmove(&tl->iv[i + 1], &tl->iv[i], (tl->tail - i) * sizeof(TlIv));
        tl->iv[i] = x;
        tl->tail++;
        bound_moved(tl, i, tl->tail - 1);
    }
    /* x's gap and the next one's are new */
    bound(tl, i);
    bound(tl, i + 1);
}

/* Takes slot i out, moving the shorter side of the array by one slot. */
static void remove_at(Timeline *tl, uint32_t i)
{
    if (i - tl->head < tl->tail - 1 - i) {
        memmove(&tl->iv[tl->head + 1], &tl->iv[tl->head], (i - tl->head) * sizeof(TlIv));
        tl->head++;
        bound_moved(tl, tl->head, i);
    } else {
        memmove(&tl->iv[i], &tl->iv[i + 1], (tl->tail - 1 - i) * sizeof(TlIv));
        tl->tail--;
        bound_moved(tl, i, tl->tail);
    }
}

void tl_book(Timeline *tl, uint64_t s, uint64_t e)
{
    uint32_t i;
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
        if (tl->head < tl->tail && s == tl->busy_until) {
            tl->iv[tl->tail - 1].e = e;
        } else {
            if (tl->tail == tl->cap) {
                relayout(tl);
            }
            tl->iv[tl->tail++] = (TlIv){ s, e };
            bound(tl, tl->tail - 1);
        }
        tl->busy_until = e;
        tl->first_end = MIN(tl->first_end, e);
        return;
    }
    /* p = i - 1 (if i > head), q = i (if i < tail) */
    i = after(tl, s);
    /* a booking over another would corrupt the gaps: the callers fit first */
    g_assert((i == tl->head || tl->iv[i - 1].e <= s) && (i == tl->tail || tl->iv[i].s >= e));
    tl->busy_until = MAX(tl->busy_until, e);
    tl->first_end = MIN(tl->first_end, e);
    touch_p = i > tl->head && tl->iv[i - 1].e == s;
    touch_q = i < tl->tail && tl->iv[i].s == e;
    if (touch_p && touch_q) {
        /* fills the gap between two bookings: they become one (the gap after keeps its
           value, its bound stays true) */
        tl->iv[i - 1].e = tl->iv[i].e;
        remove_at(tl, i);
    } else if (touch_p) {
        tl->iv[i - 1].e = e;            /* q's gap shrinks: its bound stays true */
    } else if (touch_q) {
        tl->iv[i].s = s;                /* the same */
    } else {
        insert_at(tl, i, (TlIv){ s, e });
    }
}

void tl_retire_ended(Timeline *tl, uint64_t h)
{
    while (tl->head < tl->tail && tl->iv[tl->head].e <= h) {
        tl->retired_end = MAX(tl->retired_end, tl->iv[tl->head].e);
        tl->head++;
    }
    tl->first_end = tl->head < tl->tail ? tl->iv[tl->head].e : UINT64_MAX;
}

void tl_foreach(const Timeline *tl, bool (*fn)(uint64_t s, uint64_t e, void *opaque),
                void *opaque)
{
    for (uint32_t i = tl->head; i < tl->tail && fn(tl->iv[i].s, tl->iv[i].e, opaque); i++) {
    }
}
