/*
 * The timeline (nand/timeline.h) against a plain reference: a sorted array of intervals
 * scanned from the start. Random fits, checks, bookings (where a fit put them, touching the
 * bookings around, filling a gap, appended, far ahead) and retires, under many seeds, on
 * back-filling and FIFO timelines, with copies and clears: every answer, the kept intervals
 * and the counters are the same.
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>
#include "nand/timeline.h"

/* ---- the reference: what timeline.h says, written plainly ---- */

typedef struct Ref {
    bool fifo;
    GArray *iv;         /* uint64_t pairs [s, e): sorted, disjoint, touching ones merged */
    uint64_t busy_until, retired_end, early;
} Ref;

#define S(r, i) g_array_index((r)->iv, uint64_t, 2 * (i))
#define E(r, i) g_array_index((r)->iv, uint64_t, 2 * (i) + 1)
#define NIV(r) ((r)->iv->len / 2)

static void ref_init(Ref *r, bool fifo)
{
    *r = (Ref){ .fifo = fifo, .iv = g_array_new(FALSE, FALSE, sizeof(uint64_t)) };
}

static void ref_clear(Ref *r)
{
    g_array_set_size(r->iv, 0);
    r->busy_until = r->retired_end = r->early = 0;
}

static void ref_copy(Ref *dst, const Ref *src)
{
    GArray *iv = dst->iv;
    *dst = *src;
    dst->iv = iv;
    g_array_set_size(iv, 0);
    g_array_append_vals(iv, src->iv->data, src->iv->len);
}

static uint64_t ref_fit(Ref *r, uint64_t t, uint64_t d, uint64_t *gap_end)
{
    *gap_end = UINT64_MAX;
    if (r->fifo) {
        return MAX(t, r->busy_until);
    }
    if (t < r->retired_end) {
        r->early++;
        t = r->retired_end;
    }
    if (d == 0) {
        return t;
    }
    for (guint i = 0; i < NIV(r); i++) {
        if (E(r, i) <= t) {
            continue;
        }
        if (S(r, i) >= t + d) {
            *gap_end = S(r, i);
            break;
        }
        t = E(r, i);
    }
    return t;
}

static bool ref_is_free(Ref *r, uint64_t s, uint64_t e, uint64_t *busy_end)
{
    if (r->fifo) {
        *busy_end = r->busy_until;
        return s >= r->busy_until;
    }
    if (e <= s) {
        return true;
    }
    if (s < r->retired_end) {
        r->early++;
        *busy_end = r->retired_end;
        return false;
    }
    for (guint i = 0; i < NIV(r); i++) {
        if (E(r, i) > s && S(r, i) < e) {
            *busy_end = E(r, i);
            return false;
        }
    }
    return true;
}

static void ref_book(Ref *r, uint64_t s, uint64_t e)
{
    guint i = 0;

    if (r->fifo) {
        r->busy_until = MAX(s, e);
        return;
    }
    if (e <= s) {
        return;
    }
    while (i < NIV(r) && S(r, i) < s) {
        i++;
    }
    if (i > 0 && E(r, i - 1) == s) {
        E(r, i - 1) = e;
        if (i < NIV(r) && S(r, i) == e) {
            E(r, i - 1) = E(r, i);
            g_array_remove_range(r->iv, 2 * i, 2);
        }
    } else if (i < NIV(r) && S(r, i) == e) {
        S(r, i) = s;
    } else {
        uint64_t pair[2] = { s, e };
        g_array_insert_vals(r->iv, 2 * i, pair, 2);
    }
    r->busy_until = MAX(r->busy_until, e);
}

static void ref_retire(Ref *r, uint64_t h)
{
    guint n = 0;

    if (r->fifo) {
        return;
    }
    while (n < NIV(r) && E(r, n) <= h) {
        r->retired_end = MAX(r->retired_end, E(r, n));
        n++;
    }
    g_array_remove_range(r->iv, 0, 2 * n);
}

/* ---- the comparison ---- */

typedef struct Walk {
    const Ref *r;
    guint i;
} Walk;

static bool same_interval(uint64_t s, uint64_t e, void *opaque)
{
    Walk *w = opaque;
    g_assert_cmpuint(w->i, <, NIV(w->r));
    g_assert_cmpuint(s, ==, S(w->r, w->i));
    g_assert_cmpuint(e, ==, E(w->r, w->i));
    w->i++;
    return true;
}

static void check_same(const Timeline *tl, const Ref *r)
{
    Walk w = { r, 0 };

    g_assert_cmpuint(tl->busy_until, ==, r->busy_until);
    g_assert_cmpuint(tl->early, ==, r->early);
    g_assert_cmpuint(tl_intervals(tl), ==, r->fifo ? 0 : NIV(r));
    tl_foreach(tl, same_interval, &w);
    g_assert_cmpuint(w.i, ==, r->fifo ? 0 : NIV(r));
}

/* How one seed's run draws its operations. */
typedef struct Mix {
    bool fifo;
    uint32_t ops;
    uint64_t dmax;          /* operation lengths 0..dmax */
    uint32_t retire_pct;    /* chance that the horizon moves on, in % */
    uint32_t early_pct;     /* fits and checks before the horizon (contract broken), in % */
} Mix;

static uint64_t rnd(GRand *g, uint64_t n)
{
    return n ? g_rand_int_range(g, 0, MIN(n, (uint64_t)G_MAXINT32)) : 0;
}

/* A time to ask about: mostly between the horizon and a little past the latest booking. */
static uint64_t when(GRand *g, const Ref *r, uint64_t h, const Mix *mx)
{
    if (mx->early_pct && rnd(g, 100) < mx->early_pct) {
        return rnd(g, h + 1);
    }
    return h + rnd(g, r->busy_until - MIN(h, r->busy_until) + 4 * mx->dmax + 2);
}

static void run_seed(uint32_t seed, const Mix *mx)
{
    GRand *g = g_rand_new_with_seed(seed);
    Timeline tl, other;
    Ref r, rother;
    uint64_t h = 0, a, b, ea, eb, most = 0;

    tl_init(&tl, mx->fifo);
    tl_init(&other, mx->fifo);
    ref_init(&r, mx->fifo);
    ref_init(&rother, mx->fifo);
    for (uint32_t i = 0; i < mx->ops; i++) {
        uint32_t k = rnd(g, 100);
        uint64_t t = when(g, &r, h, mx), d = rnd(g, mx->dmax + 1);

        if (k < 35) {
            /* a fit, often booked where it was found */
            a = tl_fit_gap(&tl, t, d, &ea);
            b = ref_fit(&r, t, d, &eb);
            g_assert_cmpuint(a, ==, b);
            g_assert_cmpuint(ea, ==, eb);
            g_assert_cmpuint(tl_fit(&tl, t, d), ==, a);
            r.early += !mx->fifo && t < r.retired_end;
            if (rnd(g, 10) < 7) {
                /* all of it, or a part from its start (xfer_split books parts) */
                uint64_t len = rnd(g, 3) ? d : rnd(g, d + 1), off = len > 1 ? rnd(g, 2) : 0;
                tl_book(&tl, a + off, a + len);
                ref_book(&r, b + off, b + len);
            }
        } else if (k < 55) {
            /* a check, booked when free */
            uint64_t e = t + d;
            bool fa = tl_is_free(&tl, t, e, &ea), fb = ref_is_free(&r, t, e, &eb);
            g_assert_cmpint(fa, ==, fb);
            if (!fa) {
                g_assert_cmpuint(ea, ==, eb);
            }
            g_assert_cmpint(tl_is_free(&tl, t, e, NULL), ==, fa);
            r.early += !mx->fifo && e > t && t < r.retired_end;
            if (fa && t >= r.retired_end && (!mx->fifo || t >= r.busy_until) && rnd(g, 2)) {
                tl_book(&tl, t, e);
                ref_book(&r, t, e);
            }
        } else if (k < 75 && !mx->fifo && NIV(&r) > 0) {
            /* a booking touching an interval: after it, before the next, or the whole gap */
            guint j = rnd(g, NIV(&r));
            uint64_t gs = E(&r, j), ge = j + 1 < NIV(&r) ? S(&r, j + 1) : UINT64_MAX / 2;
            uint64_t len = MIN(ge - gs, MAX(d, 1)), s;
            uint32_t how = rnd(g, 3);
            s = how == 0 ? gs : how == 1 ? ge - len : gs + rnd(g, ge - gs - len + 1);
            if (how == 2 && ge != UINT64_MAX / 2 && rnd(g, 2)) {
                s = gs;
                len = ge - gs;          /* fills it: two bookings become one */
            }
            if (ge == UINT64_MAX / 2 && how == 1) {
                s = gs + rnd(g, 3);
            }
            if (s >= r.retired_end) {
                tl_book(&tl, s, s + len);
                ref_book(&r, s, s + len);
            }
        } else if (k < 85) {
            /* appended at (or just after) the end of the latest booking */
            uint64_t s = r.busy_until + (rnd(g, 2) ? 0 : rnd(g, mx->dmax + 1));
            s = MAX(s, MAX(h, r.retired_end));
            tl_book(&tl, s, s + d);
            ref_book(&r, s, s + d);
        } else if (k < 85 + mx->retire_pct % 16) {
            /* the horizon moves on: no later fit or check before it (unless early_pct) */
            h += rnd(g, 3 * mx->dmax + 2);
            tl_retire(&tl, h);
            ref_retire(&r, h);
        } else if (k == 99 && rnd(g, 20) == 0) {
            /* a copy goes on alone; the original is cleared or continues */
            tl_copy(&other, &tl);
            ref_copy(&rother, &r);
            check_same(&other, &rother);
            if (rnd(g, 2)) {
                tl_clear(&tl);
                ref_clear(&r);
                h = 0;
            } else {
                Timeline tmp = tl;
                Ref rtmp = r;
                tl = other;
                other = tmp;
                r = rother;
                rother = rtmp;
            }
        } else {
            /* a retire at the horizon again, or before it: nothing changes */
            uint64_t at = rnd(g, h + 1);
            tl_retire(&tl, at);
            ref_retire(&r, at);
        }
        most = MAX(most, NIV(&r));
        if (i % 64 == 0 || NIV(&r) < 8) {
            check_same(&tl, &r);
        }
    }
    check_same(&tl, &r);
    if (g_test_verbose()) {
        g_test_message("seed %u: %u intervals kept at the end, %" G_GUINT64_FORMAT
                       " at most, %" G_GUINT64_FORMAT " early", seed, tl_intervals(&tl), most,
                       tl.early);
    }
    tl_destroy(&tl);
    tl_destroy(&other);
    g_array_free(r.iv, TRUE);
    g_array_free(rother.iv, TRUE);
    g_rand_free(g);
}

/* Many seeds, each with its own mix: short and long operations, frequent and rare retires. */
static void test_backfill_random(void)
{
    static const uint64_t dmax[] = { 1, 4, 50, 1000, 100000 };
    for (uint32_t seed = 1; seed <= 300; seed++) {
        Mix mx = { .ops = 3000, .dmax = dmax[seed % 5], .retire_pct = seed / 5 % 12,
                   .early_pct = seed % 7 == 0 ? 2 : 0 };
        run_seed(seed, &mx);
    }
}

/* Few retires: thousands of intervals kept, so that the structure grows and moves. */
static void test_backfill_many_intervals(void)
{
    for (uint32_t seed = 1; seed <= 6; seed++) {
        Mix mx = { .ops = 40000, .dmax = seed % 2 ? 20 : 3000, .retire_pct = seed / 3,
                   .early_pct = seed == 5 ? 1 : 0 };
        run_seed(1000 + seed, &mx);
    }
}

static void test_fifo_random(void)
{
    for (uint32_t seed = 1; seed <= 60; seed++) {
        Mix mx = { .fifo = true, .ops = 2000, .dmax = seed % 2 ? 5 : 1000,
                   .retire_pct = seed % 12, .early_pct = seed % 3 == 0 ? 5 : 0 };
        run_seed(5000 + seed, &mx);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/timeline/backfill/random", test_backfill_random);
    g_test_add_func("/timeline/backfill/many-intervals", test_backfill_many_intervals);
    g_test_add_func("/timeline/fifo/random", test_fifo_random);
    return g_test_run();
}
