/*
 * Sequential read-ahead (sra/sra.c) through its public API, against a fake media that
 * records every read: the transition table (every state x every event, every forbidden
 * pair), each enable condition and each disable cause alone, CE pruning vs teardown,
 * window and pause, the readable limit and the namespace end, coherence with writes,
 * several streams and namespaces, hit timing. Then against the zoned flash model: a
 * random mix compared with the same model without read-ahead, and the zns and blackbox
 * media with read-ahead (the glue).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>
#include "sra/sra.h"
#include "zns/zns-flash.h"
#include "zns/zone.h"
#include "bbssd/ftl.h"
#include "media/media.h"

#define US ((uint64_t)1000)
#define PB ((uint64_t)4096)     /* page: one CE */
#define LAT (50 * US)           /* the fake media's read latency */
#define STEP (100 * US)         /* between reads: each completes before the next arrives */
#define HIT (1 * US)
#define IDLE (1000 * US)
#define FAR 1000                /* a page no stream is near: a random read */
#define NS2 100000              /* namespace 2's pages, far from namespace 1's */
#define NO_LIMIT UINT64_MAX

/* ---- a fake media: fixed latency, a readable limit per namespace, every call recorded ---- */

typedef struct Call {
    uint64_t off, len, now;
    bool prefetch;
} Call;

typedef struct Ask {
    uint32_t nsid;
    uint64_t off, max, got;
} Ask;

typedef struct Fake {
    GArray *calls;              /* Call: every read */
    GArray *asks;               /* Ask: every readable */
    uint64_t lat;
    uint64_t limit[4];          /* per nsid: data ends at this offset */
    uint64_t zone;              /* nonzero: data also ends at each multiple of it */
} Fake;

static uint64_t fake_read(void *opaque, uint64_t off, uint64_t len, uint64_t now,
                          bool prefetch)
{
    Fake *f = opaque;
    Call c = { off, len, now, prefetch };

    g_array_append_val(f->calls, c);
    return now + f->lat;
}

static uint64_t fake_readable(void *opaque, uint32_t nsid, uint64_t off, uint64_t max)
{
    Fake *f = opaque;
    uint64_t end = f->limit[nsid % 4];
    Ask a = { nsid, off, max, 0 };

    if (f->zone) {
        end = MIN(end, (off / f->zone + 1) * f->zone);
    }
    a.got = off < end ? MIN(max, end - off) : 0;
    g_array_append_val(f->asks, a);
    return a.got;
}

typedef struct T {
    Sra *s;
    Fake f;
} T;

static SraConfig base(void)
{
    return (SraConfig){ .page_bytes = PB, .streams = 1, .ramp = 2, .max_read_bytes = 2 * PB,
                        .max_qd = 1, .idle_ns = IDLE, .cache_bytes = 8 * PB, .window = 8,
                        .hit_ns = HIT };
}

static T *mk(SraConfig c)
{
    T *t = g_new0(T, 1);
    SraBackend be = { .opaque = &t->f, .read = fake_read, .readable = fake_readable };
    char *err = NULL;

    t->f.calls = g_array_new(FALSE, FALSE, sizeof(Call));
    t->f.asks = g_array_new(FALSE, FALSE, sizeof(Ask));
    t->f.lat = LAT;
    for (int i = 0; i < 4; i++) {
        t->f.limit[i] = NO_LIMIT;
    }
    t->s = sra_new(&c, &be, &err);
    g_assert_cmpstr(err, ==, NULL);
    g_assert_nonnull(t->s);
    return t;
}

static void rm(T *t)
{
    sra_free(t->s);
    g_array_free(t->f.calls, TRUE);
    g_array_free(t->f.asks, TRUE);
    g_free(t);
}

/* A host read of npages whole pages. */
static uint64_t rd(T *t, uint32_t ns, uint64_t page, uint64_t npages, uint64_t now)
{
    return sra_read(t->s, ns, page * PB, npages * PB, 0, now);
}

static const Call *call(T *t, guint i)
{
    return &g_array_index(t->f.calls, Call, i);
}

/* Prefetch calls from index `from` on in [lo, hi) pages; each must be one whole page. */
static guint prefetches_in(T *t, guint from, uint64_t lo, uint64_t hi)
{
    guint n = 0;

    for (guint i = from; i < t->f.calls->len; i++) {
        const Call *c = call(t, i);
        if (c->prefetch && c->off >= lo * PB && c->off < hi * PB) {
            g_assert_cmpuint(c->off % PB, ==, 0);
            g_assert_cmpuint(c->len, ==, PB);
            n++;
        }
    }
    return n;
}

static guint prefetches(T *t)
{
    return prefetches_in(t, 0, 0, UINT64_MAX / PB);
}

static guint host_calls(T *t)
{
    guint n = 0;

    for (guint i = 0; i < t->f.calls->len; i++) {
        n += !call(t, i)->prefetch;
    }
    return n;
}

static SraCounters counters(T *t, uint32_t ns, uint32_t k)
{
    const SraCounters *c = sra_stream_counters(t->s, ns, k);
    SraCounters zero = { 0 };

    return c ? *c : zero;
}

static SraState state(T *t, uint32_t ns, uint32_t k)
{
    return sra_stream_state(t->s, ns, k);
}

/* Pages [lo, hi) of ns are CEs of stream k (k = -1: of none). */
static void assert_cached(T *t, uint32_t ns, uint64_t lo, uint64_t hi, int k)
{
    for (uint64_t p = lo; p < hi; p++) {
        if (sra_cached_stream(t->s, ns, p * PB) != k) {
            g_error("ns %u page %" G_GUINT64_FORMAT ": cached by stream %d, want %d", ns, p,
                    sra_cached_stream(t->s, ns, p * PB), k);
        }
    }
}

/* The named statistics of sra_emit_stats. */
static void stat_put(void *opaque, const char *name, uint64_t v)
{
    g_assert_false(g_hash_table_contains(opaque, name));    /* every name once */
    g_hash_table_insert(opaque, g_strdup(name), g_memdup2(&v, sizeof(v)));
}

static GHashTable *stats_of(T *t)
{
    GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

    sra_emit_stats(t->s, stat_put, h);
    return h;
}

static uint64_t stat(GHashTable *h, const char *name)
{
    const uint64_t *v = g_hash_table_lookup(h, name);

    if (!v) {
        g_error("no statistic %s", name);
    }
    return *v;
}

/* ---- the transition table: every state x every event ---- */

typedef enum Ev {
    EV_SEQ,         /* one small read continuing the stream */
    EV_RANDOM,      /* one small read continuing nothing (the only detector is needed) */
    EV_LARGE,       /* a read one page above max_read_bytes, where the stream continues */
    EV_QD,          /* a small read continuing the stream while max_qd reads are outstanding */
    EV_WRITE,
    EV_DISCARD,
    EV_IDLE,        /* idle_ns without a read */
    EV_HALF,        /* window / 2 one-page reads continuing the stream */
    EV_CACHE_FULL,  /* another namespace fills the cache, then one read continuing */
    EV_N,
} Ev;

static const char *const ev_names[EV_N] = {
    "small sequential read", "random read", "large read", "read at high QD", "write",
    "discard", "idle timeout", "consumption of half the window", "cache full",
};

/*
 * Puts namespace 1's stream 0 in state st with the base configuration (1 detector, ramp 2,
 * window 8 = cache, max_qd 1); returns the time of its last read. Its next sequential page
 * is next_page[st]; ENABLED holds CEs 2..3, PAUSED 2..9.
 */
static const uint64_t next_page[SRA_NR_STATES] = {
    [SRA_DISABLED] = 0, [SRA_RAMPING] = 1, [SRA_ENABLED] = 2, [SRA_PAUSED] = 2,
    [SRA_DISABLING] = 1,
};
static const uint64_t fixture_ces[SRA_NR_STATES] = {
    [SRA_ENABLED] = 2, [SRA_PAUSED] = 8,
};

static uint64_t fixture(T *t, SraState st)
{
    switch (st) {
    case SRA_DISABLED:
        /* a large read starts nothing but is outstanding until LAT (for EV_QD) */
        rd(t, 1, 500, 3, 0);
        break;
    case SRA_RAMPING:
        rd(t, 1, 0, 1, 0);
        break;
    case SRA_ENABLED:
        /* data ends at page 4: two CEs, short of the window, so it stays ENABLED */
        t->f.limit[1] = 4 * PB;
        rd(t, 1, 0, 1, 0);
        rd(t, 1, 1, 1, STEP);
        t->f.limit[1] = NO_LIMIT;
        assert_cached(t, 1, 2, 4, 0);
        return STEP;
    case SRA_PAUSED:
        rd(t, 1, 0, 1, 0);
        rd(t, 1, 1, 1, STEP);
        assert_cached(t, 1, 2, 10, 0);
        return STEP;
    case SRA_DISABLING:
        rd(t, 1, 0, 1, 0);
        g_assert_true(sra_stream_transition(t->s, 1, 0, SRA_DISABLING, 0));
        break;
    default:
        g_assert_not_reached();
    }
    return 0;
}

static void event(T *t, Ev ev, uint64_t last, uint64_t next)
{
    uint64_t at = last + STEP;

    switch (ev) {
    case EV_SEQ:
        rd(t, 1, next, 1, at);
        break;
    case EV_RANDOM:
        rd(t, 1, FAR, 1, at);
        break;
    case EV_LARGE:
        rd(t, 1, next, 3, at);
        break;
    case EV_QD:
        rd(t, 1, next, 1, last);    /* the fixture's last read is still outstanding */
        break;
    case EV_WRITE:
        sra_write(t->s, 1, at, at + LAT);
        break;
    case EV_DISCARD:
        sra_discard(t->s, 1, at, at + LAT);
        break;
    case EV_IDLE:
        sra_idle(t->s, last + IDLE);
        break;
    case EV_HALF:
        for (uint64_t i = 0; i < 4; i++) {
            rd(t, 1, next + i, 1, at + i * STEP);
        }
        break;
    case EV_CACHE_FULL:
        rd(t, 2, NS2, 1, at);
        rd(t, 2, NS2 + 1, 1, at + STEP);
        g_assert_cmpuint(sra_cached_pages(t->s), ==, 8);
        rd(t, 1, next, 1, at + 2 * STEP);
        break;
    default:
        g_assert_not_reached();
    }
}

typedef struct Row {
    SraState from;
    Ev ev;
    SraState to;
    int entries[SRA_NR_STATES];     /* times each state was entered, in state order */
    int cause;                      /* the disable cause counted, -1: none */
    int prefetched, wasted, hits, pruned, bad;
} Row;

#define D_ SRA_DISABLED
#define R_ SRA_RAMPING
#define E_ SRA_ENABLED
#define P_ SRA_PAUSED
#define X_ SRA_DISABLING
#define DISABLE { 1, 0, 0, 0, 1 }           /* -> DISABLING -> DISABLED */
#define REPLACE { 1, 1, 0, 0, 1 }           /* -> DISABLING -> DISABLED -> RAMPING */
#define NONE { 0, 0, 0, 0, 0 }

/*
 * Worked out from sra.h by hand. DISABLING is never a resting state in the model; here it
 * is left by sra_stream_transition, and every transition the model then tries out of it
 * (except to DISABLED) is refused and counted.
 */
static const Row table[] = {
    { D_, EV_SEQ, R_, { 0, 1, 0, 0, 0 }, -1, 0, 0, 0, 0, 0 },
    { D_, EV_RANDOM, R_, { 0, 1, 0, 0, 0 }, -1, 0, 0, 0, 0, 0 },
    { D_, EV_LARGE, D_, NONE, -1, 0, 0, 0, 0, 0 },
    { D_, EV_QD, D_, NONE, -1, 0, 0, 0, 0, 0 },
    { D_, EV_WRITE, D_, NONE, -1, 0, 0, 0, 0, 0 },
    { D_, EV_DISCARD, D_, NONE, -1, 0, 0, 0, 0, 0 },
    { D_, EV_IDLE, D_, NONE, -1, 0, 0, 0, 0, 0 },
    /* ramps on its second read, fills the window, reads two CEs */
    { D_, EV_HALF, P_, { 0, 1, 1, 1, 0 }, -1, 8, 0, 2, 2, 0 },
    { D_, EV_CACHE_FULL, R_, { 0, 1, 0, 0, 0 }, -1, 0, 0, 0, 0, 0 },

    { R_, EV_SEQ, P_, { 0, 0, 1, 1, 0 }, -1, 8, 0, 0, 0, 0 },
    { R_, EV_RANDOM, R_, REPLACE, SRA_CAUSE_RANDOM, 0, 0, 0, 0, 0 },
    { R_, EV_LARGE, D_, DISABLE, SRA_CAUSE_LARGE_READ, 0, 0, 0, 0, 0 },
    { R_, EV_QD, D_, DISABLE, SRA_CAUSE_HIGH_QD, 0, 0, 0, 0, 0 },
    { R_, EV_WRITE, D_, DISABLE, SRA_CAUSE_WRITE, 0, 0, 0, 0, 0 },
    { R_, EV_DISCARD, D_, DISABLE, SRA_CAUSE_DISCARD, 0, 0, 0, 0, 0 },
    { R_, EV_IDLE, D_, DISABLE, SRA_CAUSE_IDLE, 0, 0, 0, 0, 0 },
    { R_, EV_HALF, P_, { 0, 0, 1, 1, 0 }, -1, 8, 0, 3, 3, 0 },
    /* enabled with no room: paused at once, nothing read ahead */
    { R_, EV_CACHE_FULL, P_, { 0, 0, 1, 1, 0 }, -1, 0, 0, 0, 0, 0 },

    /* tops up 7 pages behind the hit: the window is full */
    { E_, EV_SEQ, P_, { 0, 0, 0, 1, 0 }, -1, 7, 0, 1, 1, 0 },
    { E_, EV_RANDOM, R_, REPLACE, SRA_CAUSE_RANDOM, 0, 2, 0, 0, 0 },
    { E_, EV_LARGE, D_, DISABLE, SRA_CAUSE_LARGE_READ, 0, 2, 0, 0, 0 },
    { E_, EV_QD, D_, DISABLE, SRA_CAUSE_HIGH_QD, 0, 2, 0, 0, 0 },
    { E_, EV_WRITE, D_, DISABLE, SRA_CAUSE_WRITE, 0, 2, 0, 0, 0 },
    { E_, EV_DISCARD, D_, DISABLE, SRA_CAUSE_DISCARD, 0, 2, 0, 0, 0 },
    { E_, EV_IDLE, D_, DISABLE, SRA_CAUSE_IDLE, 0, 2, 0, 0, 0 },
    { E_, EV_HALF, P_, { 0, 0, 0, 1, 0 }, -1, 7, 0, 4, 4, 0 },
    /* one free CE: one page, then paused by the full cache */
    { E_, EV_CACHE_FULL, P_, { 0, 0, 0, 1, 0 }, -1, 1, 0, 1, 1, 0 },

    { P_, EV_SEQ, P_, NONE, -1, 0, 0, 1, 1, 0 },
    { P_, EV_RANDOM, R_, REPLACE, SRA_CAUSE_RANDOM, 0, 8, 0, 0, 0 },
    { P_, EV_LARGE, D_, DISABLE, SRA_CAUSE_LARGE_READ, 0, 8, 0, 0, 0 },
    { P_, EV_QD, D_, DISABLE, SRA_CAUSE_HIGH_QD, 0, 8, 0, 0, 0 },
    { P_, EV_WRITE, D_, DISABLE, SRA_CAUSE_WRITE, 0, 8, 0, 0, 0 },
    { P_, EV_DISCARD, D_, DISABLE, SRA_CAUSE_DISCARD, 0, 8, 0, 0, 0 },
    { P_, EV_IDLE, D_, DISABLE, SRA_CAUSE_IDLE, 0, 8, 0, 0, 0 },
    /* the fourth read leaves half the window ahead: resumed, topped up, paused again */
    { P_, EV_HALF, P_, { 0, 0, 1, 1, 0 }, -1, 4, 0, 4, 4, 0 },
    { P_, EV_CACHE_FULL, P_, NONE, -1, 0, 0, 1, 1, 0 },

    { X_, EV_SEQ, X_, NONE, -1, 0, 0, 0, 0, 0 },
    { X_, EV_RANDOM, X_, NONE, -1, 0, 0, 0, 0, 2 },     /* to DISABLING, then RAMPING */
    { X_, EV_LARGE, X_, NONE, -1, 0, 0, 0, 0, 1 },
    { X_, EV_QD, X_, NONE, -1, 0, 0, 0, 0, 1 },
    { X_, EV_WRITE, X_, NONE, -1, 0, 0, 0, 0, 1 },
    { X_, EV_DISCARD, X_, NONE, -1, 0, 0, 0, 0, 1 },
    { X_, EV_IDLE, X_, NONE, -1, 0, 0, 0, 0, 1 },
    { X_, EV_HALF, X_, NONE, -1, 0, 0, 0, 0, 0 },
    { X_, EV_CACHE_FULL, X_, NONE, -1, 0, 0, 0, 0, 0 },
};

static void run_row(const Row *r)
{
    T *t = mk(base());
    uint64_t last = fixture(t, r->from);
    SraCounters a, b;
    uint64_t bad, next = next_page[r->from];
    guint calls;

    g_assert_cmpint(state(t, 1, 0), ==, r->from);
    a = counters(t, 1, 0);
    bad = sra_bad_transitions(t->s);
    calls = t->f.calls->len;
    event(t, r->ev, last, next);
    b = counters(t, 1, 0);

    if (state(t, 1, 0) != r->to) {
        g_error("%s + %s: %s, want %s", sra_state_name(r->from), ev_names[r->ev],
                sra_state_name(state(t, 1, 0)), sra_state_name(r->to));
    }
    for (int s = 0; s < SRA_NR_STATES; s++) {
        if (b.entries[s] - a.entries[s] != (uint64_t)r->entries[s]) {
            g_error("%s + %s: entered %s %" G_GUINT64_FORMAT " times, want %d",
                    sra_state_name(r->from), ev_names[r->ev], sra_state_name(s),
                    b.entries[s] - a.entries[s], r->entries[s]);
        }
    }
    for (int c = 0; c < SRA_NR_CAUSES; c++) {
        g_assert_cmpuint(b.disabled[c] - a.disabled[c], ==, c == r->cause);
    }
    g_assert_cmpuint(b.prefetched - a.prefetched, ==, r->prefetched);
    g_assert_cmpuint(b.wasted - a.wasted, ==, r->wasted);
    g_assert_cmpuint(b.hits - a.hits, ==, r->hits);
    g_assert_cmpuint(b.pruned - a.pruned, ==, r->pruned);
    g_assert_cmpuint(sra_bad_transitions(t->s) - bad, ==, r->bad);
    /* a disable with CEs is one teardown of all of them */
    g_assert_cmpuint(b.teardowns - a.teardowns, ==, r->cause >= 0 && fixture_ces[r->from]);
    if (r->cause >= 0) {
        assert_cached(t, 1, 0, 20, -1);
    }
    /* what the counters say went to the media */
    g_assert_cmpuint(prefetches_in(t, calls, 0, NS2), ==, r->prefetched);
    rm(t);
}

static void test_table(void)
{
    bool seen[SRA_NR_STATES][EV_N] = { { false } };

    for (size_t i = 0; i < G_N_ELEMENTS(table); i++) {
        g_assert_false(seen[table[i].from][table[i].ev]);
        seen[table[i].from][table[i].ev] = true;
        run_row(&table[i]);
    }
    g_assert_cmpuint(G_N_ELEMENTS(table), ==, SRA_NR_STATES * EV_N);
}

/* The only transitions, written from sra.h's list. */
static bool allowed_by_header(SraState from, SraState to)
{
    static const bool ok[SRA_NR_STATES][SRA_NR_STATES] = {
        /*                DISABLED RAMPING ENABLED PAUSED DISABLING */
        [SRA_DISABLED] = { 0, 1, 0, 0, 0 },
        [SRA_RAMPING] = { 0, 0, 1, 0, 1 },
        [SRA_ENABLED] = { 0, 0, 0, 1, 1 },
        [SRA_PAUSED] = { 0, 0, 1, 0, 1 },
        [SRA_DISABLING] = { 1, 0, 0, 0, 0 },
    };
    return ok[from][to];
}

static void test_transition_matrix(void)
{
    int allowed = 0;

    for (int f = 0; f < SRA_NR_STATES; f++) {
        for (int to = 0; to < SRA_NR_STATES; to++) {
            g_assert_cmpint(sra_transition_allowed(f, to), ==, allowed_by_header(f, to));
            allowed += allowed_by_header(f, to);
        }
        g_assert_false(sra_transition_allowed(f, SRA_NR_STATES));
        g_assert_false(sra_transition_allowed(SRA_NR_STATES, f));
    }
    g_assert_cmpint(allowed, ==, 8);
    for (int s = 0; s < SRA_NR_STATES; s++) {
        g_assert_cmpstr(sra_state_name(s), !=, "invalid");
    }
    g_assert_cmpstr(sra_state_name(SRA_NR_STATES), ==, "invalid");
    g_assert_cmpstr(sra_cause_name(SRA_CAUSE_RANDOM), ==, "random_read");
    g_assert_cmpstr(sra_cause_name(SRA_NR_CAUSES), ==, "invalid");
}

/* Drives ns 1's stream 0 to st through allowed transitions only. */
static void walk_to(T *t, SraState st)
{
    static const SraState path[SRA_NR_STATES][4] = {
        [SRA_DISABLED] = { SRA_DISABLED },
        [SRA_RAMPING] = { SRA_RAMPING },
        [SRA_ENABLED] = { SRA_RAMPING, SRA_ENABLED },
        [SRA_PAUSED] = { SRA_RAMPING, SRA_ENABLED, SRA_PAUSED },
        [SRA_DISABLING] = { SRA_RAMPING, SRA_DISABLING },
    };

    for (int i = 0; i < 4 && path[st][i] != SRA_DISABLED; i++) {
        g_assert_true(sra_stream_transition(t->s, 1, 0, path[st][i], 0));
    }
    g_assert_cmpint(state(t, 1, 0), ==, st);
    g_assert_cmpuint(sra_bad_transitions(t->s), ==, 0);
}

/* Every (from, to) through sra_stream_transition: forbidden ones refused, state kept, counted. */
static void test_transition_pairs(void)
{
    uint64_t refused = 0;

    for (int f = 0; f < SRA_NR_STATES; f++) {
        /* all forbidden attempts from f in one model: each one is counted */
        T *all = mk(base());
        uint64_t all_refused = 0;

        walk_to(all, f);
        for (int to = 0; to < SRA_NR_STATES; to++) {
            T *t = mk(base());
            bool ok;

            walk_to(t, f);
            ok = sra_stream_transition(t->s, 1, 0, to, 10);
            g_assert_cmpint(ok, ==, allowed_by_header(f, to));
            g_assert_cmpint(state(t, 1, 0), ==, ok ? to : f);
            g_assert_cmpuint(sra_bad_transitions(t->s), ==, !ok);
            g_assert_cmpuint(sra_totals(t->s)->entries[to], ==,
                             counters(t, 1, 0).entries[to]);
            if (!allowed_by_header(f, to)) {
                g_assert_false(sra_stream_transition(all->s, 1, 0, to, 10));
                g_assert_cmpint(state(all, 1, 0), ==, f);
                g_assert_cmpuint(sra_bad_transitions(all->s), ==, ++all_refused);
                refused++;
            }
            rm(t);
        }
        rm(all);
    }
    g_assert_cmpuint(refused, ==, 25 - 8);

    /* no such stream: refused, no state touched */
    T *t = mk(base());
    g_assert_false(sra_stream_transition(t->s, 1, 1, SRA_RAMPING, 0));
    g_assert_cmpint(state(t, 1, 0), ==, SRA_DISABLED);
    /* DISABLING tears the stream's CEs down; DISABLED then lets a new stream start */
    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    g_assert_cmpuint(sra_cached_pages(t->s), ==, 8);
    g_assert_true(sra_stream_transition(t->s, 1, 0, SRA_DISABLING, 2 * STEP));
    g_assert_cmpuint(sra_cached_pages(t->s), ==, 0);
    g_assert_cmpuint(counters(t, 1, 0).wasted, ==, 8);
    g_assert_cmpuint(counters(t, 1, 0).teardowns, ==, 1);
    g_assert_true(sra_stream_transition(t->s, 1, 0, SRA_DISABLED, 2 * STEP));
    rd(t, 1, 2, 1, 3 * STEP);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_RAMPING);
    g_assert_cmpuint(sra_bad_transitions(t->s), ==, 0);
    rm(t);
}

/* ---- enable conditions, each alone, on both sides of its threshold ---- */

static void test_enable_ramp(void)
{
    static const uint32_t ramps[] = { 1, 2, 3, 5 };

    for (size_t i = 0; i < G_N_ELEMENTS(ramps); i++) {
        SraConfig c = base();
        T *t;

        c.ramp = ramps[i];
        t = mk(c);
        for (uint32_t k = 0; k + 1 < c.ramp; k++) {
            rd(t, 1, k, 1, k * STEP);
            g_assert_cmpint(state(t, 1, 0), ==, SRA_RAMPING);
        }
        g_assert_cmpuint(prefetches(t), ==, 0);
        rd(t, 1, c.ramp - 1, 1, c.ramp * STEP);
        g_assert_cmpuint(counters(t, 1, 0).entries[SRA_ENABLED], ==, 1);
        g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
        g_assert_cmpuint(prefetches_in(t, 0, c.ramp, c.ramp + 8), ==, 8);
        g_assert_cmpuint(prefetches(t), ==, 8);
        rm(t);
    }
}

/* A write (or discard) in flight until done keeps a ramped stream from enabling. */
static void check_enable_in_flight(bool discard)
{
    SraConfig c = base();
    uint64_t done = 5 * STEP + 7;
    T *t;

    c.max_qd = 4;
    t = mk(c);
    if (discard) {
        sra_discard(t->s, 1, 0, done);
    } else {
        sra_write(t->s, 1, 0, done);
    }
    /* in flight in namespace 2 only: no effect on namespace 1 */
    sra_write(t->s, 2, 0, 100 * STEP);
    for (uint64_t k = 1; k <= 4; k++) {
        rd(t, 1, k, 1, k * STEP);
        g_assert_cmpint(state(t, 1, 0), ==, SRA_RAMPING);
    }
    rd(t, 1, 5, 1, done - 1);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_RAMPING);
    g_assert_cmpuint(prefetches(t), ==, 0);
    /* done passed: the ramp already counted, so this read enables */
    rd(t, 1, 6, 1, done);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    g_assert_cmpuint(prefetches_in(t, 0, 7, 15), ==, 8);
    /* namespace 2 ramps but stays so while its write is in flight */
    rd(t, 2, NS2, 1, done);
    rd(t, 2, NS2 + 1, 1, done + STEP);
    g_assert_cmpint(state(t, 2, 0), ==, SRA_RAMPING);
    g_assert_cmpuint(counters(t, 1, 0).disabled[SRA_CAUSE_WRITE], ==, 0);
    rm(t);
}

static void test_enable_write_in_flight(void)
{
    check_enable_in_flight(false);
}

static void test_enable_discard_in_flight(void)
{
    check_enable_in_flight(true);
}

/*
 * A read that arrived with max_qd reads outstanding keeps the namespace's streams from
 * enabling for idle_ns after it: they ramp meanwhile, and enable on the first sequential
 * read after. With idle_ns = 0 there is no hold-off.
 */
static void test_enable_qd_holdoff(void)
{
    for (int no_idle = 0; no_idle <= 1; no_idle++) {
        SraConfig c = base();
        uint64_t now = 0, p = 1;
        T *t;

        c.streams = 2;
        c.cache_bytes = 16 * PB;
        c.idle_ns = no_idle ? 0 : IDLE;
        t = mk(c);
        rd(t, 1, FAR, 1, 0);                /* a stream, ramping */
        rd(t, 1, 0, 1, 0);                  /* one outstanding: crowded at 0 */
        g_assert_cmpint(state(t, 1, 0), ==, SRA_DISABLED);
        g_assert_cmpuint(counters(t, 1, 0).disabled[SRA_CAUSE_HIGH_QD], ==, 1);
        /* sequential reads one STEP apart (none crowded) until just before IDLE */
        for (now = STEP; now < IDLE; now += STEP, p++) {
            rd(t, 1, p, 1, now);
            g_assert_cmpint(state(t, 1, 0), ==,
                            (no_idle && p >= 2 ? SRA_PAUSED : SRA_RAMPING));
        }
        g_assert_cmpuint((prefetches(t) > 0), ==, no_idle);
        g_assert_cmpuint(sra_totals(t->s)->disabled[SRA_CAUSE_HIGH_QD], ==, 1);
        if (!no_idle) {
            /* IDLE after the crowded read: the ramp already counted, this read enables */
            rd(t, 1, p, 1, IDLE);
            g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
            g_assert_cmpuint(prefetches_in(t, 0, p + 1, p + 9), ==, 8);
            g_assert_cmpuint(prefetches(t), ==, 8);
        }
        rm(t);
    }
}

static void test_enable_read_size(void)
{
    /* exactly max_read_bytes: a stream */
    T *t = mk(base());
    sra_read(t->s, 1, 0, 2 * PB, 0, 0);
    sra_read(t->s, 1, 2 * PB, 2 * PB, 0, STEP);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    g_assert_cmpuint(prefetches_in(t, 0, 4, 12), ==, 8);
    rm(t);
    /* one byte more: never a stream, nothing read ahead */
    t = mk(base());
    for (uint64_t k = 0; k < 4; k++) {
        sra_read(t->s, 1, k * (2 * PB + 1), 2 * PB + 1, 0, k * STEP);
        g_assert_cmpint(state(t, 1, 0), ==, SRA_DISABLED);
    }
    g_assert_cmpuint(prefetches(t), ==, 0);
    g_assert_cmpuint(sra_totals(t->s)->entries[SRA_RAMPING], ==, 0);
    rm(t);
}

/*
 * max_qd counts the namespace's earlier reads still outstanding at the new read's arrival
 * (completion strictly after it). max_qd - 1 of them: the read is the max_qd-th, allowed;
 * max_qd of them: one over, every stream of the namespace is disabled.
 */
static void test_enable_qd(void)
{
    for (uint32_t q = 1; q <= 3; q++) {
        for (uint32_t extra = 0; extra <= 1; extra++) {
            /* a paused stream; then q - 1 + extra random reads at T, then its next read at T */
            SraConfig c = base();
            uint64_t at = 3 * STEP;
            T *t;

            c.max_qd = q;
            c.streams = 4;
            c.cache_bytes = 32 * PB;
            t = mk(c);
            rd(t, 1, 0, 1, 0);
            rd(t, 1, 1, 1, STEP);
            g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
            for (uint32_t k = 0; k < q - 1 + extra; k++) {
                rd(t, 1, FAR + 10 * k, 1, at);
            }
            rd(t, 1, 2, 1, at);
            if (extra) {
                g_assert_cmpint(state(t, 1, 0), ==, SRA_DISABLED);
                g_assert_cmpuint(counters(t, 1, 0).disabled[SRA_CAUSE_HIGH_QD], ==, 1);
                g_assert_cmpuint(counters(t, 1, 0).hits, ==, 0);
                /* all detectors of the namespace */
                for (uint32_t k = 0; k < 4; k++) {
                    g_assert_cmpint(state(t, 1, k), ==, SRA_DISABLED);
                }
            } else {
                g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
                g_assert_cmpuint(counters(t, 1, 0).hits, ==, 1);
                g_assert_cmpuint(sra_totals(t->s)->disabled[SRA_CAUSE_HIGH_QD], ==, 0);
            }
            rm(t);
        }
    }
    /* a read completing exactly at the arrival is no longer outstanding */
    for (uint64_t early = 0; early <= 1; early++) {
        SraConfig c = base();
        T *t;

        c.streams = 2;
        c.cache_bytes = 16 * PB;
        t = mk(c);
        rd(t, 1, 0, 1, 0);
        rd(t, 1, 1, 1, STEP);
        rd(t, 1, FAR, 1, 3 * STEP - LAT);       /* completes at 3 * STEP */
        rd(t, 1, 2, 1, 3 * STEP - early);
        g_assert_cmpint(state(t, 1, 0), ==, early ? SRA_DISABLED : SRA_PAUSED);
        rm(t);
    }
    /* the stream's own reads at one instant: the (q+1)-th sees q outstanding */
    for (uint32_t q = 1; q <= 3; q++) {
        for (uint32_t over = 0; over <= 1; over++) {
            SraConfig c = base();
            T *t;

            c.max_qd = q;
            c.ramp = q + over;
            t = mk(c);
            for (uint32_t k = 0; k < q + over; k++) {
                rd(t, 1, k, 1, STEP);
            }
            g_assert_cmpint(state(t, 1, 0), ==, over ? SRA_DISABLED : SRA_PAUSED);
            g_assert_cmpuint(counters(t, 1, 0).disabled[SRA_CAUSE_HIGH_QD], ==, over);
            g_assert_cmpuint(prefetches(t), ==, over ? 0 : 8);
            rm(t);
        }
    }
}

/* ---- disable causes, each alone ---- */

/*
 * A paused stream whose CE 2 the host has read past (pruned) and CE 3 read in part: 6 CEs
 * never read. Returns the time of the last read; *next is where the stream continues.
 */
static uint64_t paused_partly_read(T *t, uint64_t *next)
{
    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    rd(t, 1, 2, 1, 2 * STEP);
    sra_read(t->s, 1, 3 * PB, PB / 2, 0, 3 * STEP);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    g_assert_cmpuint(sra_cached_pages(t->s), ==, 7);
    *next = 3 * PB + PB / 2;
    return 3 * STEP;
}

static void test_disable_causes(void)
{
    for (int cause = 0; cause < SRA_NR_CAUSES; cause++) {
        T *t = mk(base());
        uint64_t next, last = paused_partly_read(t, &next), at = last + STEP;
        const SraCounters *c = sra_stream_counters(t->s, 1, 0);
        GHashTable *h;

        switch (cause) {
        case SRA_CAUSE_WRITE:
            sra_write(t->s, 1, at, at + LAT);
            break;
        case SRA_CAUSE_DISCARD:
            sra_discard(t->s, 1, at, at);
            break;
        case SRA_CAUSE_LARGE_READ:
            sra_read(t->s, 1, next, 2 * PB + 1, 0, at);
            break;
        case SRA_CAUSE_HIGH_QD:
            sra_read(t->s, 1, next, PB / 2, 0, last);
            break;
        case SRA_CAUSE_RANDOM:
            rd(t, 1, FAR, 1, at);
            break;
        case SRA_CAUSE_POWER_LOSS:
            sra_power_loss(t->s, at);
            break;
        case SRA_CAUSE_IDLE:
            sra_idle(t->s, last + IDLE - 1);
            g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
            /* late: the stream still timed out at last + IDLE */
            sra_idle(t->s, last + 3 * IDLE);
            g_assert_cmpuint(c->time_ns[SRA_RAMPING], ==, STEP);
            g_assert_cmpuint(c->time_ns[SRA_ENABLED], ==, 0);
            g_assert_cmpuint(c->time_ns[SRA_PAUSED], ==, last - STEP + IDLE);
            break;
        }
        g_assert_cmpint(state(t, 1, 0), ==,
                        cause == SRA_CAUSE_RANDOM ? SRA_RAMPING : SRA_DISABLED);
        h = stats_of(t);
        for (int k = 0; k < SRA_NR_CAUSES; k++) {
            g_autofree char *total = g_strdup_printf("sra_disabled_by_%s", sra_cause_name(k));
            g_autofree char *own = g_strdup_printf("sra_ns1_s0_disabled_by_%s",
                                                   sra_cause_name(k));
            g_assert_cmpuint(c->disabled[k], ==, k == cause);
            g_assert_cmpuint(sra_totals(t->s)->disabled[k], ==, k == cause);
            g_assert_cmpuint(stat(h, total), ==, k == cause);
            g_assert_cmpuint(stat(h, own), ==, k == cause);
        }
        /* the 7 CEs at once: the one read in part is not wasted */
        g_assert_cmpuint(c->teardowns, ==, 1);
        g_assert_cmpuint(c->wasted, ==, 6);
        g_assert_cmpuint(c->pruned, ==, 1);
        g_assert_cmpuint(c->prefetched, ==, 8);
        g_assert_cmpuint(sra_cached_pages(t->s), ==, 0);
        g_assert_cmpuint(stat(h, "sra_cached_pages"), ==, 0);
        g_assert_cmpuint(stat(h, "sra_wasted_pages"), ==, 6);
        g_assert_cmpuint(stat(h, "sra_ns1_s0_teardowns"), ==, 1);
        g_assert_cmpuint(stat(h, "sra_ns1_s0_state"), ==, state(t, 1, 0));
        assert_cached(t, 1, 0, 12, -1);
        g_hash_table_destroy(h);
        rm(t);
    }
}

static void test_idle_details(void)
{
    /* idle_ns 0: never */
    SraConfig c = base();
    c.idle_ns = 0;
    T *t = mk(c);
    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    sra_idle(t->s, UINT64_MAX);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    g_assert_cmpuint(rd(t, 1, 2, 1, 1000 * IDLE), ==, 1000 * IDLE + HIT);
    rm(t);

    /* a read arriving after idle_ns finds the stream timed out: a miss, a new stream */
    t = mk(base());
    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    guint host = host_calls(t);
    g_assert_cmpuint(rd(t, 1, 2, 1, STEP + IDLE), ==, STEP + IDLE + LAT);
    g_assert_cmpuint(host_calls(t), ==, host + 1);
    g_assert_cmpuint(counters(t, 1, 0).disabled[SRA_CAUSE_IDLE], ==, 1);
    g_assert_cmpuint(counters(t, 1, 0).wasted, ==, 8);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_RAMPING);
    /* a nanosecond short of the timeout: still a hit */
    rd(t, 1, 3, 1, 2 * STEP + IDLE);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    g_assert_cmpuint(rd(t, 1, 4, 1, 2 * STEP + 2 * IDLE - 1), ==,
                     2 * STEP + 2 * IDLE - 1 + HIT);
    g_assert_cmpuint(counters(t, 1, 0).disabled[SRA_CAUSE_IDLE], ==, 1);
    rm(t);
}

/* ---- CEs: pruning one by one vs teardown all at once ---- */

static void test_prune_vs_teardown(void)
{
    SraConfig c = base();
    c.max_qd = 4;
    T *t = mk(c);
    const SraCounters *sc;

    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    sc = sra_stream_counters(t->s, 1, 0);
    assert_cached(t, 1, 2, 10, 0);
    /* the host reads CEs 2, 3, 4: each is dropped once read past */
    for (uint64_t p = 2; p <= 4; p++) {
        rd(t, 1, p, 1, p * STEP);
        g_assert_cmpuint(sc->pruned, ==, p - 1);
        g_assert_cmpuint(sc->hits, ==, p - 1);
        g_assert_cmpuint(sra_cached_pages(t->s), ==, 10 - (p + 1));
        assert_cached(t, 1, 2, p + 1, -1);
        assert_cached(t, 1, p + 1, 10, 0);
    }
    /* half of CE 5: read, but not past: kept */
    sra_read(t->s, 1, 5 * PB, PB / 2, 0, 5 * STEP);
    g_assert_cmpuint(sc->pruned, ==, 3);
    g_assert_cmpuint(sc->hits, ==, 4);
    assert_cached(t, 1, 5, 10, 0);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    g_assert_cmpuint(prefetches(t), ==, 8);
    /* a write: the 5 left at once, the 4 never read wasted */
    sra_write(t->s, 1, 6 * STEP, 6 * STEP);
    g_assert_cmpuint(sc->teardowns, ==, 1);
    g_assert_cmpuint(sc->wasted, ==, 4);
    g_assert_cmpuint(sc->pruned, ==, 3);
    g_assert_cmpuint(sra_cached_pages(t->s), ==, 0);
    assert_cached(t, 1, 0, 12, -1);
    /* every CE ends one way: pruned, wasted, or read and torn down (CE 5) */
    g_assert_cmpuint(sc->prefetched, ==, sc->pruned + sc->wasted + 1);
    /* a teardown without CEs is not one */
    rd(t, 1, 50, 1, 7 * STEP);
    sra_write(t->s, 1, 8 * STEP, 8 * STEP);
    g_assert_cmpuint(sc->teardowns, ==, 1);
    g_assert_cmpuint(sc->disabled[SRA_CAUSE_WRITE], ==, 2);
    rm(t);

    /* a two-page read prunes two CEs */
    c.max_read_bytes = 4 * PB;
    t = mk(c);
    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    rd(t, 1, 2, 2, 2 * STEP);
    g_assert_cmpuint(counters(t, 1, 0).pruned, ==, 2);
    g_assert_cmpuint(counters(t, 1, 0).hits, ==, 2);
    g_assert_cmpuint(sra_cached_pages(t->s), ==, 6);
    rm(t);
}

/* ---- window and pause ---- */

static void test_window_pause(void)
{
    SraConfig c = base();
    c.max_qd = 4;
    c.cache_bytes = 64 * PB;
    T *t = mk(c);

    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    /* exactly the window, the pages right after the stream */
    g_assert_cmpuint(prefetches(t), ==, 8);
    g_assert_cmpuint(prefetches_in(t, 0, 2, 10), ==, 8);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    /* 3 consumed, 5 ahead: no prefetch */
    for (uint64_t p = 2; p <= 4; p++) {
        rd(t, 1, p, 1, p * STEP);
        g_assert_cmpuint(prefetches(t), ==, 8);
        g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    }
    /* the fourth leaves half: resumed and topped up to the window (pages 10..13) */
    rd(t, 1, 5, 1, 5 * STEP);
    g_assert_cmpuint(prefetches(t), ==, 12);
    g_assert_cmpuint(prefetches_in(t, 0, 10, 14), ==, 4);
    g_assert_cmpuint(counters(t, 1, 0).entries[SRA_ENABLED], ==, 2);
    g_assert_cmpuint(counters(t, 1, 0).entries[SRA_PAUSED], ==, 2);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    assert_cached(t, 1, 6, 14, 0);
    /* the top-up is booked at the read's arrival */
    g_assert_cmpuint(call(t, t->f.calls->len - 1)->now, ==, 5 * STEP);
    rm(t);

    /* an odd window: resumes once at least half (3 of 5) is consumed */
    c.window = 5;
    t = mk(c);
    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    g_assert_cmpuint(prefetches(t), ==, 5);
    rd(t, 1, 2, 1, 2 * STEP);
    rd(t, 1, 3, 1, 3 * STEP);
    g_assert_cmpuint(prefetches(t), ==, 5);
    rd(t, 1, 4, 1, 4 * STEP);
    g_assert_cmpuint(prefetches(t), ==, 8);
    rm(t);

    /* resumed with nothing readable: stays ENABLED, topped up once data appears */
    c.window = 8;
    t = mk(c);
    t->f.limit[1] = 10 * PB;
    for (uint64_t p = 0; p <= 5; p++) {
        rd(t, 1, p, 1, p * STEP);
    }
    g_assert_cmpint(state(t, 1, 0), ==, SRA_ENABLED);
    g_assert_cmpuint(prefetches(t), ==, 8);
    t->f.limit[1] = NO_LIMIT;
    rd(t, 1, 6, 1, 6 * STEP);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    g_assert_cmpuint(prefetches_in(t, 0, 10, 15), ==, 5);
    rm(t);
}

/* The cache is shared: a second stream gets what is left and pauses on the full cache. */
static void test_cache_full(void)
{
    SraConfig c = base();
    T *t;

    c.streams = 2;
    c.max_qd = 4;
    c.cache_bytes = 12 * PB;
    t = mk(c);
    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    rd(t, 1, FAR, 1, 2 * STEP);
    rd(t, 1, FAR + 1, 1, 3 * STEP);
    g_assert_cmpint(state(t, 1, 1), ==, SRA_PAUSED);
    g_assert_cmpuint(prefetches_in(t, 0, FAR, FAR + 100), ==, 4);
    g_assert_cmpuint(sra_cached_pages(t->s), ==, 12);
    assert_cached(t, 1, FAR + 2, FAR + 6, 1);
    /* half its window or less ahead, but the cache is full: no resume, no prefetch */
    sra_read(t->s, 1, (FAR + 2) * PB, PB / 2, 0, 4 * STEP);
    g_assert_cmpint(state(t, 1, 1), ==, SRA_PAUSED);
    g_assert_cmpuint(counters(t, 1, 1).entries[SRA_ENABLED], ==, 1);
    g_assert_cmpuint(prefetches(t), ==, 12);
    /* stream 0 reads 3 CEs: 3 free; stream 1 takes them when it reads next */
    for (uint64_t p = 2; p <= 4; p++) {
        rd(t, 1, p, 1, (3 + p) * STEP);
    }
    g_assert_cmpuint(sra_cached_pages(t->s), ==, 9);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    sra_read(t->s, 1, (FAR + 2) * PB + PB / 2, PB / 2, 0, 8 * STEP);
    g_assert_cmpuint(counters(t, 1, 1).entries[SRA_ENABLED], ==, 2);
    g_assert_cmpuint(prefetches_in(t, 0, FAR + 6, FAR + 9), ==, 3);
    g_assert_cmpuint(sra_cached_pages(t->s), ==, 12);
    g_assert_cmpint(state(t, 1, 1), ==, SRA_PAUSED);
    rm(t);
}

/* ---- limits: what readable says, and the namespace's end ---- */

/* Every prefetch stays below end (bytes); readable was asked page-aligned, within the window. */
static void assert_prefetch_below(T *t, uint32_t ns, uint64_t end)
{
    for (guint i = 0; i < t->f.calls->len; i++) {
        const Call *c = call(t, i);
        bool told = false;

        g_assert_true(!c->prefetch || c->off + c->len <= end);
        /* inside what one answer of readable allowed */
        for (guint k = 0; k < t->f.asks->len && c->prefetch && !told; k++) {
            const Ask *a = &g_array_index(t->f.asks, Ask, k);
            told = c->off >= a->off && c->off + c->len <= a->off + a->got;
        }
        g_assert_true(!c->prefetch || told);
    }
    for (guint i = 0; i < t->f.asks->len; i++) {
        const Ask *a = &g_array_index(t->f.asks, Ask, i);
        g_assert_cmpuint(a->nsid, ==, ns);
        g_assert_cmpuint(a->off % PB, ==, 0);
        g_assert_cmpuint(a->max, >, 0);
        g_assert_cmpuint(a->max, <=, 8 * PB);
        g_assert_cmpuint(a->max % PB, ==, 0);
    }
}

static void test_readable_limit(void)
{
    SraConfig c = base();
    c.max_qd = 4;
    c.cache_bytes = 64 * PB;

    /* a write pointer at page 13: 8, then only 3 of the 4 of the top-up */
    T *t = mk(c);
    t->f.limit[1] = 13 * PB;
    for (uint64_t p = 0; p <= 5; p++) {
        rd(t, 1, p, 1, p * STEP);
    }
    g_assert_cmpuint(prefetches(t), ==, 11);
    g_assert_cmpuint(prefetches_in(t, 0, 2, 13), ==, 11);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_ENABLED);
    /* the host reads on to the limit and past it: misses there, no prefetch */
    for (uint64_t p = 6; p <= 15; p++) {
        rd(t, 1, p, 1, p * STEP);
    }
    assert_prefetch_below(t, 1, 13 * PB);
    g_assert_cmpuint(counters(t, 1, 0).hits, ==, 11);
    g_assert_cmpuint(sra_totals(t->s)->misses, ==, 2 + 3);
    g_assert_cmpuint(counters(t, 1, 0).misses, ==, 2 + 3);
    /* a large read belongs to no stream: its 3 misses count in the totals only */
    rd(t, 1, 100, 3, 16 * STEP);
    g_assert_cmpuint(sra_totals(t->s)->misses, ==, 2 + 3 + 3);
    g_assert_cmpuint(counters(t, 1, 0).misses, ==, 2 + 3);
    rm(t);

    /*
     * zones of 16 pages, data up to page 18: read-ahead is asked from the stream's
     * position, so it reaches into the next zone only once the host's next read is there
     */
    t = mk(c);
    t->f.zone = 16 * PB;
    t->f.limit[1] = 18 * PB;
    rd(t, 1, 12, 1, 0);
    rd(t, 1, 13, 1, STEP);
    g_assert_cmpuint(prefetches(t), ==, 2);
    g_assert_cmpuint(prefetches_in(t, 0, 14, 16), ==, 2);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_ENABLED);
    rd(t, 1, 14, 1, 2 * STEP);
    g_assert_cmpuint(prefetches(t), ==, 2);             /* the host is still in zone 0 */
    rd(t, 1, 15, 1, 3 * STEP);
    g_assert_cmpuint(prefetches(t), ==, 4);
    g_assert_cmpuint(prefetches_in(t, 0, 16, 18), ==, 2);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_ENABLED);
    for (uint64_t p = 16; p <= 20; p++) {
        rd(t, 1, p, 1, (p - 12) * STEP);
    }
    g_assert_cmpuint(prefetches(t), ==, 4);
    g_assert_cmpuint(counters(t, 1, 0).hits, ==, 4);
    assert_prefetch_below(t, 1, 18 * PB);
    rm(t);

    /* the namespace ends at page 6: never past it, even with readable data */
    t = mk(c);
    sra_read(t->s, 1, 0, PB, 6 * PB, 0);
    sra_read(t->s, 1, PB, PB, 6 * PB, STEP);
    g_assert_cmpuint(prefetches(t), ==, 4);
    assert_prefetch_below(t, 1, 6 * PB);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_ENABLED);
    for (uint64_t p = 2; p < 6; p++) {
        sra_read(t->s, 1, p * PB, PB, 6 * PB, p * STEP);
    }
    g_assert_cmpuint(prefetches(t), ==, 4);
    assert_prefetch_below(t, 1, 6 * PB);
    rm(t);

    /* readable saying 0: nothing */
    t = mk(c);
    t->f.limit[1] = 0;
    for (uint64_t p = 0; p < 6; p++) {
        rd(t, 1, p, 1, p * STEP);
    }
    g_assert_cmpuint(prefetches(t), ==, 0);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_ENABLED);
    rm(t);
}

/* ---- coherence ---- */

static void test_write_coherence(void)
{
    SraConfig c = base();
    c.cache_bytes = 16 * PB;
    T *t = mk(c);
    guint n;

    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    rd(t, 2, NS2, 1, 0);
    rd(t, 2, NS2 + 1, 1, STEP);
    assert_cached(t, 1, 2, 10, 0);
    /* a write into page 5 (SRA is told the namespace, not the range): all of ns 1 goes */
    sra_write(t->s, 1, 2 * STEP, 2 * STEP + LAT);
    assert_cached(t, 1, 2, 10, -1);
    assert_cached(t, 2, NS2 + 2, NS2 + 10, 0);
    /* so the page is read from the media, by the host */
    n = t->f.calls->len;
    g_assert_cmpuint(rd(t, 1, 5, 1, 3 * STEP), ==, 3 * STEP + LAT);
    g_assert_cmpuint(t->f.calls->len, ==, n + 1);
    g_assert_cmpuint(call(t, n)->off, ==, 5 * PB);
    g_assert_cmpuint(call(t, n)->len, ==, PB);
    g_assert_false(call(t, n)->prefetch);
    g_assert_cmpuint(counters(t, 1, 0).hits, ==, 0);
    /* ns 2 untouched: its next read is a hit, nothing goes to the media */
    n = t->f.calls->len;
    g_assert_cmpuint(rd(t, 2, NS2 + 2, 1, 3 * STEP), ==, 3 * STEP + HIT);
    g_assert_cmpuint(t->f.calls->len, ==, n);
    g_assert_cmpuint(counters(t, 2, 0).disabled[SRA_CAUSE_WRITE], ==, 0);
    g_assert_cmpint(state(t, 2, 0), ==, SRA_PAUSED);
    /* a discard likewise */
    sra_discard(t->s, 2, 4 * STEP, 4 * STEP);
    n = t->f.calls->len;
    rd(t, 2, NS2 + 3, 1, 5 * STEP);
    g_assert_cmpuint(t->f.calls->len, ==, n + 1);
    g_assert_false(call(t, n)->prefetch);
    g_assert_cmpuint(counters(t, 2, 0).wasted, ==, 7);
    rm(t);
}

/* ---- several streams, several namespaces ---- */

static void test_streams_interleaved(void)
{
    for (uint32_t n = 2; n <= 4; n++) {
        SraConfig c = base();
        T *t;
        uint64_t now = 0;

        c.streams = 4;
        c.max_qd = 4;
        c.cache_bytes = 32 * PB;
        t = mk(c);
        /* stream k reads pages k * 1000 + r, round r, alternately */
        for (uint64_t r = 0; r < 6; r++) {
            for (uint32_t k = 0; k < n; k++) {
                rd(t, 1, k * 1000 + r, 1, now);
                now += STEP;
            }
        }
        for (uint32_t k = 0; k < 4; k++) {
            SraCounters sc = counters(t, 1, k);
            if (k >= n) {
                g_assert_cmpint(state(t, 1, k), ==, SRA_DISABLED);
                g_assert_cmpuint(sc.entries[SRA_RAMPING], ==, 0);
                continue;
            }
            /* its own: ramped once, 8 ahead of round 1, 4 hits, topped up by 4 */
            g_assert_cmpint(state(t, 1, k), ==, SRA_PAUSED);
            g_assert_cmpuint(sc.entries[SRA_RAMPING], ==, 1);
            g_assert_cmpuint(sc.entries[SRA_ENABLED], ==, 2);
            g_assert_cmpuint(sc.prefetched, ==, 12);
            g_assert_cmpuint(sc.hits, ==, 4);
            g_assert_cmpuint(sc.misses, ==, 2);
            g_assert_cmpuint(sc.pruned, ==, 4);
            g_assert_cmpuint(sc.disabled[SRA_CAUSE_RANDOM], ==, 0);
            assert_cached(t, 1, k * 1000 + 6, k * 1000 + 14, k);
            g_assert_cmpuint(prefetches_in(t, 0, k * 1000, k * 1000 + 100), ==, 12);
        }
        g_assert_cmpuint(sra_cached_pages(t->s), ==, 8 * n);
        if (n < 4) {
            /* a free detector: a random read takes it, nobody is evicted */
            rd(t, 1, 9000, 1, now);
            g_assert_cmpuint(sra_totals(t->s)->disabled[SRA_CAUSE_RANDOM], ==, 0);
            g_assert_cmpint(state(t, 1, n), ==, SRA_RAMPING);
        }
        rm(t);
    }

    /* all 4 busy: a random read evicts the least recently read, and only it */
    SraConfig c = base();
    c.streams = 4;
    c.max_qd = 4;
    c.cache_bytes = 32 * PB;
    T *t = mk(c);
    uint64_t now = 0;
    for (uint64_t r = 0; r < 3; r++) {
        for (uint32_t k = 0; k < 4; k++) {
            rd(t, 1, k * 1000 + r, 1, now);
            now += STEP;
        }
    }
    rd(t, 1, 3, 1, now);                 /* stream 0 again: stream 1 is now the oldest */
    now += STEP;
    rd(t, 1, 9000, 1, now);
    now += STEP;
    g_assert_cmpint(state(t, 1, 1), ==, SRA_RAMPING);
    g_assert_cmpuint(counters(t, 1, 1).disabled[SRA_CAUSE_RANDOM], ==, 1);
    g_assert_cmpuint(counters(t, 1, 1).wasted, ==, 7);
    assert_cached(t, 1, 1003, 1010, -1);
    for (uint32_t k = 0; k < 4; k++) {
        if (k != 1) {
            g_assert_cmpint(state(t, 1, k), ==, SRA_PAUSED);
            g_assert_cmpuint(counters(t, 1, k).disabled[SRA_CAUSE_RANDOM], ==, 0);
        }
    }
    assert_cached(t, 1, 4, 10, 0);
    assert_cached(t, 1, 2003, 2010, 2);
    assert_cached(t, 1, 3003, 3010, 3);
    /* next: stream 2 is the oldest (the random read took detector 1 just now) */
    rd(t, 1, 9500, 1, now);
    g_assert_cmpuint(counters(t, 1, 2).disabled[SRA_CAUSE_RANDOM], ==, 1);
    g_assert_cmpint(state(t, 1, 1), ==, SRA_RAMPING);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    g_assert_cmpint(state(t, 1, 3), ==, SRA_PAUSED);
    g_assert_cmpuint(sra_totals(t->s)->disabled[SRA_CAUSE_RANDOM], ==, 2);
    rm(t);
}

static void test_namespaces_independent(void)
{
    SraConfig c = base();
    c.cache_bytes = 16 * PB;
    T *t = mk(c);

    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    /* namespace 2 reads at the same instants: its outstanding reads are its own (max_qd 1) */
    rd(t, 2, NS2, 1, 0);
    rd(t, 2, NS2 + 1, 1, STEP);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    g_assert_cmpint(state(t, 2, 0), ==, SRA_PAUSED);
    /* same page numbers in both: each namespace's own CEs */
    rd(t, 2, 1000, 1, 2 * STEP);        /* a random read in ns 2 takes only ns 2's detector */
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    g_assert_cmpint(sra_cached_stream(t->s, 2, 5 * PB), ==, -1);
    g_assert_cmpint(sra_cached_stream(t->s, 1, 5 * PB), ==, 0);
    /* write, discard, large read, idle in ns 2 leave ns 1 alone */
    sra_write(t->s, 2, 3 * STEP, 3 * STEP);
    sra_discard(t->s, 2, 3 * STEP, 3 * STEP);
    sra_read(t->s, 2, 0, 3 * PB, 0, 3 * STEP);
    g_assert_cmpint(state(t, 1, 0), ==, SRA_PAUSED);
    assert_cached(t, 1, 2, 10, 0);
    SraCounters one = counters(t, 1, 0);
    for (int k = 0; k < SRA_NR_CAUSES; k++) {
        g_assert_cmpuint(one.disabled[k], ==, 0);
    }
    g_assert_cmpuint(rd(t, 1, 2, 1, 4 * STEP), ==, 4 * STEP + HIT);
    /* what was disabled was ns 2's */
    g_assert_cmpuint(counters(t, 2, 0).disabled[SRA_CAUSE_WRITE], ==, 1);
    g_assert_cmpuint(sra_totals(t->s)->disabled[SRA_CAUSE_WRITE], ==, 1);
    g_assert_cmpuint(sra_totals(t->s)->disabled[SRA_CAUSE_RANDOM], ==, 1);
    rm(t);
}

/* ---- hit timing ---- */

static void test_hit_timing(void)
{
    SraConfig c = base();
    c.max_qd = 4;
    c.streams = 2;
    c.cache_bytes = 16 * PB;
    T *t = mk(c);
    guint n;

    t->f.limit[1] = 10 * PB;
    rd(t, 1, 0, 1, 0);
    /* the miss: the media's time */
    g_assert_cmpuint(rd(t, 1, 1, 1, STEP), ==, STEP + LAT);
    /* CE 2 is ready at STEP + LAT: a read before waits for it, one after does not */
    g_assert_cmpuint(rd(t, 1, 2, 1, STEP + 10), ==, STEP + LAT + HIT);
    g_assert_cmpuint(rd(t, 1, 3, 1, 3 * STEP), ==, 3 * STEP + HIT);
    /* part of a page: the same */
    g_assert_cmpuint(sra_read(t->s, 1, 4 * PB, 100, 0, 4 * STEP), ==, 4 * STEP + HIT);
    sra_read(t->s, 1, 4 * PB + 100, PB - 100, 0, 5 * STEP);
    for (uint64_t p = 5; p <= 8; p++) {
        rd(t, 1, p, 1, (p + 1) * STEP);
    }
    /* a hit (9) and a miss (10): only the miss goes to the media; done at the later */
    n = t->f.calls->len;
    g_assert_cmpuint(rd(t, 1, 9, 2, 10 * STEP), ==, 10 * STEP + LAT);
    g_assert_cmpuint(t->f.calls->len, ==, n + 1);
    g_assert_cmpuint(call(t, n)->off, ==, 10 * PB);
    g_assert_cmpuint(call(t, n)->len, ==, PB);
    g_assert_false(call(t, n)->prefetch);
    g_assert_cmpuint(call(t, n)->now, ==, 10 * STEP);
    /* a miss elsewhere: the media's time, the whole range */
    n = t->f.calls->len;
    g_assert_cmpuint(sra_read(t->s, 1, 3000 * PB + 7, 2 * PB, 0, 11 * STEP), ==,
                     11 * STEP + LAT);
    g_assert_cmpuint(call(t, n)->off, ==, 3000 * PB + 7);
    g_assert_cmpuint(call(t, n)->len, ==, 2 * PB);
    /* 2, 3, 4 twice (two reads of it), 5..8, 9 */
    g_assert_cmpuint(counters(t, 1, 0).hits, ==, 9);
    g_assert_cmpuint(sra_totals(t->s)->hits, ==, 9);
    rm(t);

    /* a slow media: the host waits for the CE however late it is ready */
    t = mk(c);
    t->f.lat = 10 * STEP;
    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, 0);
    g_assert_cmpuint(rd(t, 1, 2, 1, 1), ==, 10 * STEP + HIT);
    rm(t);
}

static void expect_refused(SraConfig c, const char *name)
{
    char *err = NULL;
    SraBackend be = { .read = fake_read, .readable = fake_readable };

    g_assert_false(sra_config_check(&c, &err));
    g_assert_nonnull(err);
    if (!strstr(err, name)) {
        g_error("'%s' does not name %s", err, name);
    }
    g_free(err);
    err = NULL;
    g_assert_null(sra_new(&c, &be, &err));
    g_assert_nonnull(err);
    g_free(err);
}

static void test_config_check(void)
{
    SraConfig c = base(), edge = base();
    char *err = NULL;

    g_assert_true(sra_config_check(&c, &err));
    g_assert_null(err);
    /* every limit itself is allowed; the cache exactly one window */
    edge.streams = SRA_MAX_STREAMS;
    edge.ramp = SRA_MAX_RAMP;
    edge.max_qd = SRA_MAX_QD;
    edge.window = SRA_MAX_WINDOW;
    edge.cache_bytes = SRA_MAX_WINDOW * PB;
    edge.max_read_bytes = 1;
    g_assert_true(sra_config_check(&edge, &err));
    g_assert_null(err);

#define REFUSED(field, value, name) do { \
        SraConfig bad = base(); \
        bad.field = (value); \
        expect_refused(bad, name); \
    } while (0)
    REFUSED(page_bytes, 0, "page");
    REFUSED(streams, 0, "sra_streams=0");
    REFUSED(streams, SRA_MAX_STREAMS + 1, "sra_streams");
    REFUSED(ramp, 0, "sra_ramp");
    REFUSED(ramp, SRA_MAX_RAMP + 1, "sra_ramp");
    REFUSED(max_read_bytes, 0, "sra_max_read_kb");
    REFUSED(max_qd, 0, "sra_max_qd");
    REFUSED(max_qd, SRA_MAX_QD + 1, "sra_max_qd");
    REFUSED(window, 0, "sra_window");
    REFUSED(cache_bytes, 8 * PB - 1, "sra_cache_kb");
#undef REFUSED
    c.window = SRA_MAX_WINDOW + 1;
    c.cache_bytes = c.window * PB;
    expect_refused(c, "sra_window");
}

/* ---- streams that meet; hit cost per page ---- */

/*
 * Two streams that meet: stream 0 reads 0.. while stream 1 started at 10. The cache is
 * shared: a page another stream holds is not read from NAND again, and stream 0's reads of
 * stream 1's pages count as reads of them (not wasted). The idle timeout is long enough
 * that stream 1, which the host stops reading, keeps its pages until stream 0 gets there.
 */
static void test_streams_meeting(void)
{
    SraConfig c = base();
    guint twice = 0;
    uint64_t now = 0;
    T *t;

    c.streams = 2;
    c.max_qd = 4;
    c.cache_bytes = 64 * PB;
    c.idle_ns = 100 * IDLE;
    t = mk(c);
    rd(t, 1, 0, 1, now += STEP);
    rd(t, 1, 1, 1, now += STEP);
    rd(t, 1, 10, 1, now += STEP);
    rd(t, 1, 11, 1, now += STEP);
    for (uint64_t p = 2; p < 20; p++) {
        rd(t, 1, p, 1, now += STEP);
    }
    g_assert_cmpuint(sra_totals(t->s)->hits, ==, 18);
    for (uint64_t p = 0; p < 40; p++) {
        twice += prefetches_in(t, 0, p, p + 1) > 1;
    }
    g_assert_cmpuint(twice, ==, 0);
    g_assert_cmpuint(prefetches_in(t, 0, 12, 20), ==, 8);
    /* the host has read every CE of stream 1 (12..19): none of them is wasted */
    sra_write(t->s, 1, now, now);
    g_assert_cmpuint(counters(t, 1, 1).wasted, ==, 0);
    g_assert_cmpuint(counters(t, 1, 1).teardowns, ==, 1);
    rm(t);
}

/* A read of 4 cached pages: they leave SRAM one after the other, hit_ns each. */
static void test_hit_per_page(void)
{
    SraConfig c = base();
    uint64_t done;
    T *t;

    c.max_qd = 4;
    c.max_read_bytes = 4 * PB;
    t = mk(c);
    rd(t, 1, 0, 1, 0);
    rd(t, 1, 1, 1, STEP);
    done = rd(t, 1, 2, 4, 3 * STEP);
    g_assert_cmpuint(counters(t, 1, 0).hits, ==, 4);
    g_assert_cmpuint(done, ==, 3 * STEP + 4 * HIT);
    rm(t);
}

/* ---- against the zoned flash model: the same workload with and without read-ahead ---- */

#define ZPG ((uint64_t)32)              /* pages per zone */
#define NZONES ((uint64_t)8)
#define NS_END (NZONES * ZPG * PB)
#define TR (40 * US)
#define XFER (10 * US)

/* 2 channels x 2 chips, zones striped over 2 chips (channel-first). */
/* The NAND scheduling rule of the zoned flash the next tests build. */
static NandSched zns_sched = NAND_SCHED_BACKFILL;

static ZnsFlashConfig zns_config(void)
{
    ZnsFlashConfig c = {
        .geo = { .nchs = 2, .luns_per_ch = 2, .pls_per_lun = 1, .pgs_per_blk = 16,
                 .secs_per_pg = 8, .secsz = 512 },
        .tm = { .cell_bits = 1, .pg_rd_lat = { TR }, .pg_wr_lat = { 200 * US },
                .blk_er_lat = 2000 * US, .ch_xfer_lat = XFER, .time_scale = 1,
                .sched = zns_sched },
        .nr_zones = NZONES, .zone_bytes = ZPG * PB, .zone_cap_bytes = ZPG * PB,
        .stripe = 2, .wbuf_bytes = 4 * PB, .wbuf_zones = 2,
    };
    char *err = NULL;

    g_assert_true(zns_flash_derive_blocks(&c, &err));
    g_assert_null(err);
    return c;
}

static ZnsFlash *zns_flash(void)
{
    ZnsFlashConfig c = zns_config();
    char *err = NULL;
    ZnsFlash *f = zns_flash_new(&c, &err);

    g_assert_null(err);
    return f;
}

/*
 * Two devices fed the same commands: ref is the flash alone; the other has SRA in front of
 * its reads, with the write pointers as readable (as the zoned device gives them).
 */
typedef struct Pair {
    ZnsFlash *ref, *f;
    Sra *s;
    uint64_t wp[NZONES];        /* pages written, per zone */
    GArray *calls;              /* the SRA side's reads during the last command */
    uint64_t past_wp;           /* prefetches of unwritten data */
} Pair;

static uint64_t pair_media_read(void *opaque, uint64_t off, uint64_t len, uint64_t now,
                                bool prefetch)
{
    Pair *p = opaque;
    Call c = { off, len, now, prefetch };
    uint64_t zone = off / (ZPG * PB);

    g_array_append_val(p->calls, c);
    if (!prefetch) {
        return zns_flash_read(p->f, off, len, now);
    }
    if (zone >= NZONES || off + len > (zone * ZPG + p->wp[zone]) * PB) {
        p->past_wp++;
    }
    return zns_flash_prefetch(p->f, off, len, now);
}

static uint64_t pair_readable(void *opaque, uint32_t nsid, uint64_t off, uint64_t max)
{
    Pair *p = opaque;
    uint64_t zone = off / (ZPG * PB), end;

    g_assert_cmpuint(nsid, ==, 1);
    if (zone >= NZONES) {
        return 0;
    }
    end = (zone * ZPG + p->wp[zone]) * PB;
    return off < end ? MIN(max, end - off) : 0;
}

static Pair *pair_new(SraConfig c)
{
    Pair *p = g_new0(Pair, 1);
    SraBackend be = { .opaque = p, .read = pair_media_read, .readable = pair_readable };
    char *err = NULL;

    p->ref = zns_flash();
    p->f = zns_flash();
    p->s = sra_new(&c, &be, &err);
    g_assert_null(err);
    p->calls = g_array_new(FALSE, FALSE, sizeof(Call));
    return p;
}

static void pair_free(Pair *p)
{
    sra_free(p->s);
    zns_flash_free(p->ref);
    zns_flash_free(p->f);
    g_array_free(p->calls, TRUE);
    g_free(p);
}

static void pair_write(Pair *p, uint64_t zone, uint64_t npages, uint64_t now)
{
    uint64_t off = (zone * ZPG + p->wp[zone]) * PB, done;

    g_assert_cmpuint(p->wp[zone] + npages, <=, ZPG);
    zns_flash_write(p->ref, off, npages * PB, now);
    done = zns_flash_write(p->f, off, npages * PB, now);
    sra_write(p->s, 1, now, done);
    p->wp[zone] += npages;
}

static void pair_reset(Pair *p, uint64_t zone, uint64_t now)
{
    zns_flash_reset_zone(p->ref, zone, now);
    sra_discard(p->s, 1, now, zns_flash_reset_zone(p->f, zone, now));
    p->wp[zone] = 0;
}

/* Every zone written full and on flash; returns when all is idle. */
static uint64_t pair_fill(Pair *p)
{
    uint64_t t;

    for (uint64_t z = 0; z < NZONES; z++) {
        pair_write(p, z, ZPG, 0);
    }
    zns_flash_flush(p->ref, 0);
    zns_flash_flush(p->f, 0);
    t = MAX(nand_all_idle_ns(zns_flash_nand(p->ref)), nand_all_idle_ns(zns_flash_nand(p->f)));
    return t + IDLE;
}

/*
 * One host read on both. The SRA side's media sees exactly the bytes of the read that are
 * not in a CE: every page cached before the read is a hit (or none is, when the read
 * disables SRA first), and the rest goes to the media as host reads, once.
 */
static void pair_read(Pair *p, uint64_t off, uint64_t len, uint64_t now, uint64_t *ref_done,
                      uint64_t *sra_done)
{
    uint64_t first = off / PB, last = (off + len - 1) / PB, cached = 0, hit_bytes = 0;
    uint64_t hits = sra_totals(p->s)->hits, covered = 0, prev_end = off;
    bool *was = g_new0(bool, last - first + 1);

    for (uint64_t pg = first; pg <= last; pg++) {
        was[pg - first] = sra_cached_stream(p->s, 1, pg * PB) >= 0;
        cached += was[pg - first];
    }
    g_array_set_size(p->calls, 0);
    *ref_done = zns_flash_read(p->ref, off, len, now);
    *sra_done = sra_read(p->s, 1, off, len, NS_END, now);
    hits = sra_totals(p->s)->hits - hits;
    g_assert_true(hits == 0 || hits == cached);
    for (uint64_t pg = first; pg <= last && hits; pg++) {
        if (was[pg - first]) {
            hit_bytes += MIN((pg + 1) * PB, off + len) - MAX(pg * PB, off);
        }
    }
    for (guint i = 0; i < p->calls->len; i++) {
        const Call *c = &g_array_index(p->calls, Call, i);
        if (c->prefetch) {
            continue;
        }
        /* in order, inside the read, never a hit page */
        g_assert_cmpuint(c->off, >=, prev_end);
        g_assert_cmpuint(c->off + c->len, <=, off + len);
        g_assert_cmpuint(c->now, ==, now);
        for (uint64_t pg = c->off / PB; pg * PB < c->off + c->len; pg++) {
            g_assert_false(hits && was[pg - first]);
        }
        covered += c->len;
        prev_end = c->off + c->len;
    }
    g_assert_cmpuint(covered + hit_bytes, ==, len);
    g_assert_cmpuint(p->past_wp, ==, 0);
    g_free(was);
}

/* Random reads never continue a stream: SRA changes nothing, to the nanosecond. */
static void test_zns_random_reads_identical(void)
{
    for (uint32_t ramp = 2; ramp <= 4; ramp += 2) {
        SraConfig c = base();
        Pair *p;
        GRand *g = g_rand_new_with_seed(11 + ramp);
        uint64_t now, r, s;

        c.ramp = ramp;
        c.streams = 4;
        c.max_qd = 8;
        c.cache_bytes = 64 * PB;
        p = pair_new(c);
        now = pair_fill(p);
        for (int i = 0; i < 5000; i++) {
            /* each starts at byte 512 of a page and ends elsewhere in a page: none continues */
            uint64_t page = g_rand_int_range(g, 0, NZONES * ZPG);
            uint64_t len = g_rand_int_range(g, 1, PB - 1024 + 1);
            now += g_rand_int_range(g, 0, 60 * US);
            pair_read(p, page * PB + 512, len, now, &r, &s);
            g_assert_cmpuint(s, ==, r);
        }
        g_assert_cmpuint(sra_totals(p->s)->entries[SRA_ENABLED], ==, 0);
        g_assert_cmpuint(sra_totals(p->s)->prefetched, ==, 0);
        g_assert_cmpuint(sra_totals(p->s)->entries[SRA_RAMPING], >, 0);
        g_assert_cmpuint(zns_flash_stats(p->f)->pages_read, ==,
                         zns_flash_stats(p->ref)->pages_read);
        pair_free(p);
        g_rand_free(g);
    }
}

/*
 * One stream at QD1 over every zone, each side at its own pace (a read arrives when the
 * previous one completes, plus think time): no read is slower with SRA.
 */
static void test_zns_sequential_qd1(void)
{
    static const uint64_t thinks[] = { 0, 5 * US, 30 * US, 200 * US };

    for (size_t k = 0; k < G_N_ELEMENTS(thinks); k++) {
        SraConfig c = base();
        Pair *p;
        uint64_t start, tr, ts, sum_r = 0, sum_s = 0, worst = 0;

        c.ramp = 4;
        c.window = 16;
        c.cache_bytes = 64 * PB;
        c.max_read_bytes = 8 * PB;
        p = pair_new(c);
        start = tr = ts = pair_fill(p);
        for (uint64_t pg = 0; pg < NZONES * ZPG; pg++) {
            uint64_t r = zns_flash_read(p->ref, pg * PB, PB, tr);
            uint64_t s = sra_read(p->s, 1, pg * PB, PB, NS_END, ts);
            if (s - ts > r - tr) {
                g_error("think %" G_GUINT64_FORMAT " ns, page %" G_GUINT64_FORMAT
                        ": %" G_GUINT64_FORMAT " ns with SRA, %" G_GUINT64_FORMAT
                        " ns without", thinks[k], pg, s - ts, r - tr);
            }
            worst = MAX(worst, s - ts);
            sum_r += r - tr;
            sum_s += s - ts;
            tr = r + thinks[k];
            ts = s + thinks[k];
        }
        /* it did read ahead: all but the ramp were hits, and the stream took less time */
        g_assert_cmpuint(sra_totals(p->s)->hits, ==, NZONES * ZPG - (c.ramp - 1) - 1);
        g_assert_cmpuint(sum_s, <, sum_r);
        g_test_message("think %3" G_GUINT64_FORMAT " us: mean read %5.1f us without SRA, "
                       "%5.1f us with (worst %" G_GUINT64_FORMAT " us); run %" G_GUINT64_FORMAT
                       " vs %" G_GUINT64_FORMAT " us", thinks[k] / US,
                       (double)sum_r / US / (NZONES * ZPG), (double)sum_s / US / (NZONES * ZPG),
                       worst / US, (tr - start) / US, (ts - start) / US);
        pair_free(p);
    }
}

typedef struct Run {
    bool on;
    uint64_t zone, page;
} Run;

static uint64_t written_zone(Pair *p, GRand *g, uint64_t min_pages)
{
    for (int tries = 0; tries < 64; tries++) {
        uint64_t z = g_rand_int_range(g, 0, NZONES);
        if (p->wp[z] >= min_pages) {
            return z;
        }
    }
    return NZONES;
}

/*
 * A mixed workload (phases of reads only and of writes among reads; random reads,
 * sequential runs, large reads, zone resets, flushes, idle gaps) on both devices at the
 * same arrival times, with a fixed seed.
 *
 * The bound on the slowdown, with FIFO timelines (nand_sched=fifo): they only ever book
 * work at the end of a chip's and a channel's time, so taking work away never makes
 * anything later, and one more page read makes what follows it later by at most one page read, tR + transfer. Without
 * read-ahead the device does a subset of the reference's page reads (hits are taken away)
 * and the same programs and erases. What it does beyond them is its prefetches, and host
 * pages it reads from NAND where the reference found them in its write buffer (whose
 * programs the reference's extra reads delayed). Once every chip and channel of the
 * read-ahead device is idle, nothing it did before can delay what comes. So a read is at
 * most (tR + transfer) x (those extra page reads since the device was last all idle, its
 * own included) + hit_ns later than without read-ahead; hit_ns because a hit costs it
 * even where the reference's read was free (data still in the write buffer).
 */
static gint cmp_u64(gconstpointer a, gconstpointer b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct Slowdown {
    uint64_t reads, over, p99;
    double mean;
} Slowdown;

static Slowdown zns_mixed(NandSched sched)
{
    SraConfig c = base();
    Pair *p;
    GRand *g = g_rand_new_with_seed(2024);
    Run runs[3] = { { false } };
    const ZnsFlashStats *rs, *ss;
    uint64_t now = 0, extra = 0, reads = 0, slower = 0, faster = 0, slowdown_sum = 0;
    uint64_t worst = 0, worst_extra = 0;
    double tightest = 0;
    uint64_t over = 0;
    GArray *slow = g_array_new(FALSE, FALSE, sizeof(uint64_t));

    c.streams = 4;
    c.ramp = 3;
    c.max_qd = 4;
    c.cache_bytes = 24 * PB;
    c.idle_ns = 2000 * US;
    zns_sched = sched;
    p = pair_new(c);
    zns_sched = NAND_SCHED_BACKFILL;
    rs = zns_flash_stats(p->ref);
    ss = zns_flash_stats(p->f);
    for (uint64_t z = 0; z < NZONES / 2; z++) {
        pair_write(p, z, ZPG, 0);
    }
    for (int i = 0; i < 20000; i++) {
        /* phases of 400 commands: reads only, reads only, writes among reads */
        bool writing = (i / 400) % 3 == 2;
        int pick = g_rand_int_range(g, 0, 100);
        uint64_t r, s, off, len, z, ref_pages, sra_pages, sra_prefetched, bound;

        now += g_rand_int_range(g, 0, 150 * US);
        if (g_rand_int_range(g, 0, 200) == 0) {
            now += 3 * c.idle_ns / 2;
            sra_idle(p->s, now);
        }
        if (nand_all_idle_ns(zns_flash_nand(p->f)) <= now) {
            extra = 0;
        }
        if (writing && pick < 40) {
            z = g_rand_int_range(g, 0, NZONES);
            if (p->wp[z] == ZPG) {
                pair_reset(p, z, now);
            } else {
                pair_write(p, z, g_rand_int_range(g, 1, MIN(2, ZPG - p->wp[z]) + 1), now);
            }
            continue;
        }
        if (writing && pick < 45) {
            zns_flash_flush(p->ref, now);
            zns_flash_flush(p->f, now);
            continue;
        }
        if (pick < 3) {
            off = g_rand_int_range(g, 0, NZONES * ZPG - 3) * PB;
            len = 3 * PB;
        } else if (pick < 30) {
            z = written_zone(p, g, 1);
            if (z == NZONES) {
                continue;
            }
            off = (z * ZPG + g_rand_int_range(g, 0, p->wp[z])) * PB;
            len = PB;
        } else {
            Run *run = &runs[g_rand_int_range(g, 0, 3)];
            if (!run->on || run->page >= p->wp[run->zone]) {
                z = written_zone(p, g, 8);
                if (z == NZONES) {
                    continue;
                }
                run->on = true;
                run->zone = z;
                run->page = g_rand_int_range(g, 0, p->wp[z] - 4);
            }
            off = (run->zone * ZPG + run->page) * PB;
            len = (g_rand_int_range(g, 0, 10) == 0 ? 2 : 1) * PB;
            run->page += len / PB;
        }
        ref_pages = rs->pages_read;
        sra_pages = ss->pages_read;
        sra_prefetched = ss->prefetch_pages_read;
        pair_read(p, off, len, now, &r, &s);
        ref_pages = rs->pages_read - ref_pages;
        sra_prefetched = ss->prefetch_pages_read - sra_prefetched;
        sra_pages = ss->pages_read - sra_pages - sra_prefetched;
        /* its own NAND reads beyond the reference's delay it; its prefetches come after */
        extra += sra_pages > ref_pages ? sra_pages - ref_pages : 0;
        bound = (TR + XFER) * extra + HIT;
        if (s > r + bound && sched != NAND_SCHED_FIFO) {
            over++;
        } else if (s > r + bound) {
            g_error("read %d (%" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT " bytes at %"
                    G_GUINT64_FORMAT "): %" G_GUINT64_FORMAT " ns later than without SRA, "
                    "bound %" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " extra page reads)",
                    i, off, len, now, s - r, bound, extra);
        }
        reads++;
        {
            uint64_t d = s > r ? s - r : 0;
            g_array_append_val(slow, d);
        }
        if (s > r) {
            slower++;
            slowdown_sum += s - r;
            if (s - r > worst) {
                worst = s - r;
                worst_extra = extra;
            }
            tightest = MAX(tightest, (double)(s - r) / bound);
        }
        faster += s < r;
        extra += sra_prefetched;
    }
    /* read-ahead happened, hit, and was also wasted; nothing past a write pointer */
    g_assert_cmpuint(sra_totals(p->s)->hits, >, 1000);
    g_assert_cmpuint(sra_totals(p->s)->wasted, >, 0);
    g_assert_cmpuint(sra_totals(p->s)->disabled[SRA_CAUSE_WRITE], >, 0);
    g_assert_cmpuint(sra_totals(p->s)->disabled[SRA_CAUSE_RANDOM], >, 0);
    g_assert_cmpuint(sra_totals(p->s)->disabled[SRA_CAUSE_IDLE], >, 0);
    g_assert_cmpuint(sra_totals(p->s)->disabled[SRA_CAUSE_LARGE_READ], >, 0);
    g_assert_cmpuint(p->past_wp, ==, 0);
    g_assert_cmpuint(sra_bad_transitions(p->s), ==, 0);
    g_assert_cmpuint(slower, >, 0);
    /* the totals are the streams' sums; every CE read ahead is still cached or gone once */
    {
        const SraCounters *tot = sra_totals(p->s);
        SraCounters sum = { 0 };
        for (uint32_t k = 0; k < c.streams; k++) {
            const SraCounters *sc = sra_stream_counters(p->s, 1, k);
            for (int st = 0; st < SRA_NR_STATES; st++) {
                sum.entries[st] += sc->entries[st];
                sum.time_ns[st] += sc->time_ns[st];
            }
            for (int k2 = 0; k2 < SRA_NR_CAUSES; k2++) {
                sum.disabled[k2] += sc->disabled[k2];
            }
            sum.hits += sc->hits;
            sum.misses += sc->misses;
            sum.prefetched += sc->prefetched;
            sum.wasted += sc->wasted;
            sum.pruned += sc->pruned;
            sum.teardowns += sc->teardowns;
        }
        /* large and crowded reads continue no stream: their misses are in the totals only */
        g_assert_cmpuint(sum.misses, <, tot->misses);
        sum.misses = tot->misses;
        g_assert_cmpmem(&sum, sizeof(sum), tot, sizeof(*tot));
        g_assert_cmpuint(tot->prefetched, >=, tot->pruned + tot->wasted +
                         sra_cached_pages(p->s));
        /* some came from the write buffer, without a NAND read */
        g_assert_cmpuint(tot->prefetched, >=, ss->prefetch_pages_read);
    }
    g_test_message("%" G_GUINT64_FORMAT " reads: %" G_GUINT64_FORMAT " slower with SRA "
                   "(mean %.1f us), %" G_GUINT64_FORMAT " faster; worst slowdown %.1f us = "
                   "%.1f page reads, with %" G_GUINT64_FORMAT " extra page reads in its busy "
                   "period; at most %.0f%% of the bound", reads, slower,
                   slower ? (double)slowdown_sum / slower / US : 0.0, faster,
                   (double)worst / US, (double)worst / (TR + XFER), worst_extra,
                   100 * tightest);
    g_test_message("prefetched %" G_GUINT64_FORMAT " pages: %" G_GUINT64_FORMAT " hits, %"
                   G_GUINT64_FORMAT " wasted", sra_totals(p->s)->prefetched,
                   sra_totals(p->s)->hits, sra_totals(p->s)->wasted);
    g_array_sort(slow, cmp_u64);
    g_test_message("%s: mean slowdown %.2f us, p99 %.1f us, p99.9 %.1f us, max %.1f us, "
                   "%" G_GUINT64_FORMAT " reads over the per-read bound",
                   nand_sched_names[sched], (double)slowdown_sum / reads / US,
                   (double)g_array_index(slow, uint64_t, reads * 99 / 100) / US,
                   (double)g_array_index(slow, uint64_t, reads * 999 / 1000) / US,
                   (double)g_array_index(slow, uint64_t, reads - 1) / US, over);
    Slowdown out = { .reads = reads, .over = over, .mean = (double)slowdown_sum / reads,
                     .p99 = g_array_index(slow, uint64_t, reads * 99 / 100) };
    g_array_free(slow, TRUE);
    pair_free(p);
    g_rand_free(g);
    return out;
}

static void test_zns_mixed_fifo(void)
{
    zns_mixed(NAND_SCHED_FIFO);
}

/*
 * With back-filling, the bound above does not hold read by read: an extra booking can move
 * a later transfer past a run of gaps too small for it. Read-ahead must still cost less, on
 * the mean and at the 99th percentile, than with the FIFO timelines, and break that bound
 * for at most one read in a thousand.
 */
static void test_zns_mixed_backfill(void)
{
    Slowdown fifo = zns_mixed(NAND_SCHED_FIFO), bf = zns_mixed(NAND_SCHED_BACKFILL);

    g_assert_cmpuint(bf.reads, ==, fifo.reads);
    g_assert_cmpuint(bf.over * 1000, <=, bf.reads);
    g_assert_cmpfloat(bf.mean, <=, fifo.mean);
    g_assert_cmpuint(bf.p99, <=, fifo.p99);
}



/* ---- the media with read-ahead: zoned and blackbox glue ---- */

static uint64_t submit(FemuMedia *m, FemuMediaOp op, uint64_t off, uint64_t len,
                       uint64_t now, uint64_t ns_end)
{
    FemuMediaReq r = { .op = op, .nsid = 1, .offset = off, .len = len, .arrival_ns = now,
                       .ns_end = ns_end };
    return femu_media_submit(m, &r);
}

static GHashTable *media_stats(FemuMedia *m)
{
    GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

    femu_media_stats(m, stat_put, h);
    return h;
}

static uint64_t media_stat(FemuMedia *m, const char *name)
{
    GHashTable *h = media_stats(m);
    uint64_t v = stat(h, name);

    g_hash_table_destroy(h);
    return v;
}

/*
 * QD1 one-page reads of [first, last]: each arrives when the previous completes. Returns
 * the last completion; *arrival (may be NULL) the last arrival.
 */
static uint64_t read_run(FemuMedia *m, uint64_t first, uint64_t last, uint64_t now,
                         uint64_t ns_end, uint64_t *arrival)
{
    for (uint64_t pg = first; pg <= last; pg++) {
        if (arrival) {
            *arrival = now;
        }
        now = submit(m, FEMU_MEDIA_READ, pg * PB, PB, now, ns_end);
    }
    return now;
}

/* The zoned device's readable: its zones' write pointers, 512-byte LBAs. */
static uint64_t zones_readable(void *opaque, uint32_t nsid, uint64_t off, uint64_t max)
{
    g_assert_cmpuint(nsid, ==, 1);
    return zone_readable(opaque, off / 512, max / 512) * 512;
}

static SraConfig media_sra(void)
{
    SraConfig c = base();

    c.streams = 2;
    c.max_qd = 4;
    c.cache_bytes = 16 * PB;
    return c;
}

static void test_media_zns(void)
{
    ZnsFlashConfig zc = zns_config();
    ZoneConfig zcfg = { .nr_zones = NZONES, .zone_size = ZPG * 8, .zone_cap = ZPG * 8 };
    SraConfig sc = media_sra();
    char *err = NULL;
    ZoneSet *zs = zone_set_new(&zcfg, &err);
    FemuReadAhead ra = { .cfg = &sc, .readable = zones_readable, .opaque = zs };
    FemuMedia *m = femu_media_zns_new(&zc, &ra, NULL, &err);
    uint64_t now = 100 * IDLE, t;
    GHashTable *h;

    g_assert_null(err);
    g_assert_nonnull(m);
    /* zone 0 written to page 20, on flash */
    submit(m, FEMU_MEDIA_WRITE, 0, 20 * PB, 0, NS_END);
    g_assert_cmpint(zone_write(zs, 0, 20 * 8, false, NULL), ==, ZONE_OK);
    submit(m, FEMU_MEDIA_FLUSH, 0, 0, 0, NS_END);
    /* 2..9 at the ramp, 10..13 at page 5 */
    now = read_run(m, 0, 5, now, NS_END, NULL);
    g_assert_cmpuint(media_stat(m, "sra_prefetched_pages"), ==, 12);
    g_assert_cmpuint(media_stat(m, "prefetch_pages_read"), ==, 12);
    g_assert_cmpuint(media_stat(m, "sra_cached_pages"), ==, 8);
    /* a hit long after its CE is ready: hit_ns */
    g_assert_cmpuint(submit(m, FEMU_MEDIA_READ, 6 * PB, PB, now + IDLE / 2, NS_END), ==,
                     now + IDLE / 2 + HIT);
    now += IDLE / 2 + HIT;
    /* a write at the pointer tears the 7 left down; then the next read is a miss */
    t = submit(m, FEMU_MEDIA_WRITE, 20 * PB, 2 * PB, now, NS_END);
    g_assert_cmpint(zone_write(zs, 20 * 8, 2 * 8, false, NULL), ==, ZONE_OK);
    submit(m, FEMU_MEDIA_FLUSH, 0, 0, t, NS_END);
    h = media_stats(m);
    g_assert_cmpuint(stat(h, "sra_disabled_by_write"), ==, 1);
    g_assert_cmpuint(stat(h, "sra_teardowns"), ==, 1);
    g_assert_cmpuint(stat(h, "sra_wasted_pages"), ==, 7);
    g_assert_cmpuint(stat(h, "sra_cached_pages"), ==, 0);
    g_hash_table_destroy(h);
    /* on to page 23: ramp at 7 and 8; prefetch stops at the write pointer, page 22 */
    now = read_run(m, 7, 23, now + 10 * IDLE, NS_END, NULL);
    h = media_stats(m);
    g_assert_cmpuint(stat(h, "sra_prefetched_pages"), ==, 12 + 13);
    g_assert_cmpuint(stat(h, "prefetch_pages_read"), ==, 12 + 13);
    g_assert_cmpuint(stat(h, "sra_hits"), ==, 5 + 13);
    g_assert_cmpuint(stat(h, "sra_misses"), ==, 2 + 2 + 2);
    g_assert_cmpuint(stat(h, "pages_read"), ==, 6 + 12 + 13);
    g_assert_cmpuint(stat(h, "sra_ns1_s0_state"), ==, SRA_ENABLED);
    g_assert_cmpuint(stat(h, "sra_bad_transitions"), ==, 0);
    g_hash_table_destroy(h);
    /* a zone reset, a deallocate, an idle period: each disables */
    submit(m, FEMU_MEDIA_ZONE_RESET, ZPG * PB, ZPG * PB, now, NS_END);
    g_assert_cmpuint(media_stat(m, "sra_disabled_by_discard"), ==, 1);
    now = read_run(m, 0, 1, now + STEP, NS_END, NULL);
    submit(m, FEMU_MEDIA_DEALLOCATE, 0, PB, now, NS_END);
    g_assert_cmpuint(media_stat(m, "sra_disabled_by_discard"), ==, 2);
    now = read_run(m, 0, 1, now + STEP, NS_END, &t);
    femu_media_idle(m, t + IDLE - 1);
    g_assert_cmpuint(media_stat(m, "sra_disabled_by_idle"), ==, 0);
    femu_media_idle(m, t + IDLE);
    g_assert_cmpuint(media_stat(m, "sra_disabled_by_idle"), ==, 1);
    femu_media_destroy(m);

    /* without read-ahead: no SRA statistics, no prefetch */
    m = femu_media_zns_new(&zc, NULL, NULL, &err);
    g_assert_nonnull(m);
    read_run(m, 0, 9, 0, NS_END, NULL);
    femu_media_idle(m, IDLE);
    h = media_stats(m);
    g_assert_false(g_hash_table_contains(h, "sra_hits"));
    g_assert_cmpuint(stat(h, "prefetch_pages_read"), ==, 0);
    g_hash_table_destroy(h);
    femu_media_destroy(m);

    /* a bad read-ahead configuration: no media, the property named */
    sc.window = 0;
    g_assert_null(femu_media_zns_new(&zc, &ra, NULL, &err));
    g_assert_nonnull(strstr(err, "sra_window"));
    g_free(err);
    zone_set_free(zs);
}

static void test_media_bbssd(void)
{
    FtlConfig fc = {
        .geo = { .nchs = 2, .luns_per_ch = 2, .pls_per_lun = 1, .blks_per_pl = 64,
                 .pgs_per_blk = 16, .secs_per_pg = 8, .secsz = 512 },
        .tm = { .cell_bits = 1, .pg_rd_lat = { TR }, .pg_wr_lat = { 200 * US },
                .blk_er_lat = 2000 * US, .ch_xfer_lat = XFER, .time_scale = 1 },
        .exposed_pages = 56 * 64, .gc_thres_pcent = 75, .gc_thres_pcent_high = 95,
    };
    SraConfig sc = media_sra();
    FemuReadAhead ra = { .cfg = &sc };
    uint64_t ns_end = fc.exposed_pages * PB, now = 100 * IDLE, last;
    char *err = NULL;
    FemuMedia *m = femu_media_bbssd_new(&fc, &ra, NULL, NULL, &err);
    GHashTable *h;

    g_assert_null(err);
    g_assert_nonnull(m);
    submit(m, FEMU_MEDIA_WRITE, 0, 64 * PB, 0, ns_end);
    submit(m, FEMU_MEDIA_DEALLOCATE, 20 * PB, 2 * PB, 0, ns_end);
    /*
     * From page 12: 14..19 at the ramp (20 is unmapped), nothing at 20 or from 21, 22..29
     * after 21, then 4 at each of 25, 29, 33, 37: 30 pages, none of them 20 or 21.
     */
    now = read_run(m, 12, 40, now, ns_end, NULL);
    h = media_stats(m);
    g_assert_cmpuint(stat(h, "sra_prefetched_pages"), ==, 30);
    g_assert_cmpuint(stat(h, "prefetch_pages_read"), ==, 30);
    g_assert_cmpuint(stat(h, "sra_hits"), ==, 25);
    g_assert_cmpuint(stat(h, "sra_misses"), ==, 4);
    /* the host's pages: read from NAND (4) or from the cache (25) */
    g_assert_cmpuint(stat(h, "host_pages_read"), ==, 29);
    g_assert_cmpuint(stat(h, "unmapped_pages_read"), ==, 2);
    g_assert_cmpuint(stat(h, "sra_ns1_s0_state"), ==, SRA_PAUSED);
    g_hash_table_destroy(h);
    /* a write anywhere in the namespace tears the 5 CEs (41..45) down */
    submit(m, FEMU_MEDIA_WRITE, 3000 * PB, PB, now, ns_end);
    h = media_stats(m);
    g_assert_cmpuint(stat(h, "sra_disabled_by_write"), ==, 1);
    g_assert_cmpuint(stat(h, "sra_wasted_pages"), ==, 5);
    g_assert_cmpuint(stat(h, "sra_cached_pages"), ==, 0);
    g_hash_table_destroy(h);
    /* the torn-down page 41 is read from NAND */
    submit(m, FEMU_MEDIA_READ, 41 * PB, PB, now + STEP, ns_end);
    g_assert_cmpuint(media_stat(m, "host_pages_read"), ==, 30);
    /* write zeroes is a write (for both detectors: 41's and 50's) */
    now = read_run(m, 50, 51, now + 2 * STEP, ns_end, NULL);
    submit(m, FEMU_MEDIA_WRITE_ZEROES, 0, PB, now, ns_end);
    g_assert_cmpuint(media_stat(m, "sra_disabled_by_write"), ==, 3);
    /* deallocate a discard, quiet time an idle timeout */
    now = read_run(m, 50, 51, now + STEP, ns_end, NULL);
    submit(m, FEMU_MEDIA_DEALLOCATE, 60 * PB, PB, now, ns_end);
    g_assert_cmpuint(media_stat(m, "sra_disabled_by_discard"), ==, 1);
    now = read_run(m, 52, 53, now + STEP, ns_end, &last);
    femu_media_idle(m, last + IDLE - 1);
    g_assert_cmpuint(media_stat(m, "sra_disabled_by_idle"), ==, 0);
    femu_media_idle(m, last + IDLE);
    g_assert_cmpuint(media_stat(m, "sra_disabled_by_idle"), ==, 1);
    femu_media_destroy(m);

    /* at the namespace's end: never past it */
    m = femu_media_bbssd_new(&fc, &ra, NULL, NULL, &err);
    submit(m, FEMU_MEDIA_WRITE, 0, 64 * PB, 0, ns_end);
    read_run(m, 0, 5, 100 * IDLE, 4 * PB, NULL);
    g_assert_cmpuint(media_stat(m, "sra_prefetched_pages"), ==, 2);
    femu_media_destroy(m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/sra/config", test_config_check);
    g_test_add_func("/sra/states/every-state-every-event", test_table);
    g_test_add_func("/sra/states/allowed-matrix", test_transition_matrix);
    g_test_add_func("/sra/states/every-pair", test_transition_pairs);
    g_test_add_func("/sra/enable/ramp", test_enable_ramp);
    g_test_add_func("/sra/enable/write-in-flight", test_enable_write_in_flight);
    g_test_add_func("/sra/enable/discard-in-flight", test_enable_discard_in_flight);
    g_test_add_func("/sra/enable/read-size", test_enable_read_size);
    g_test_add_func("/sra/enable/queue-depth", test_enable_qd);
    g_test_add_func("/sra/disable/each-cause", test_disable_causes);
    g_test_add_func("/sra/disable/idle", test_idle_details);
    g_test_add_func("/sra/ce/prune-vs-teardown", test_prune_vs_teardown);
    g_test_add_func("/sra/enable/qd-holdoff", test_enable_qd_holdoff);
    g_test_add_func("/sra/window/pause-resume", test_window_pause);
    g_test_add_func("/sra/window/cache-full", test_cache_full);
    g_test_add_func("/sra/limits/readable-and-ns-end", test_readable_limit);
    g_test_add_func("/sra/coherence/write-tears-down", test_write_coherence);
    g_test_add_func("/sra/streams/interleaved-and-lru", test_streams_interleaved);
    g_test_add_func("/sra/streams/namespaces", test_namespaces_independent);
    g_test_add_func("/sra/timing/hit", test_hit_timing);
    g_test_add_func("/sra/streams/meeting", test_streams_meeting);
    g_test_add_func("/sra/hit/per-page", test_hit_per_page);
    g_test_add_func("/sra/zns/random-reads-identical", test_zns_random_reads_identical);
    g_test_add_func("/sra/zns/sequential-qd1-never-slower", test_zns_sequential_qd1);
    g_test_add_func("/sra/zns/mixed-slowdown-bounded", test_zns_mixed_fifo);
    g_test_add_func("/sra/zns/mixed-slowdown-backfill", test_zns_mixed_backfill);
    g_test_add_func("/sra/media/zns", test_media_zns);
    g_test_add_func("/sra/media/blackbox", test_media_bbssd);
    return g_test_run();
}
