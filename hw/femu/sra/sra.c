/*
 * Sequential read-ahead; see sra.h.
 *
 * A stream's CEs are a ring of the ready times of pages [lo, hi), at most `window` of
 * them. Outstanding reads: each namespace keeps the max_qd latest read completion times
 * seen; at least max_qd reads are outstanding at t exactly when the smallest of them is
 * after t.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "sra.h"

#include <glib.h>

typedef struct SraCe {
    uint64_t ready;     /* its data is in SRAM */
    bool read;          /* the host has read from it */
} SraCe;

typedef struct SraStream {
    SraState state;
    uint64_t entered;       /* when it entered state */
    uint64_t last_read;     /* arrival of its last read */
    uint64_t lru;           /* model-wide read sequence of its last read */
    uint64_t next;          /* offset a sequential read starts at */
    uint32_t reads;         /* sequential reads so far */
    uint64_t lo, hi;        /* CE pages */
    SraCe *ces;             /* window entries, page p at ces[p % window]; from the first
                               prefetch on */
    SraCounters c;
} SraStream;

typedef struct SraNs {
    uint32_t nsid;
    SraStream *streams;
    uint64_t *latest_reads;     /* up to max_qd completion times, ascending */
    uint32_t nr_latest;
    uint64_t write_done;        /* the namespace's latest write completes */
    uint64_t discard_done;
    uint64_t crowded_at;        /* arrival of its latest read at max_qd outstanding */
    bool crowded;               /* there was such a read */
} SraNs;

struct Sra {
    SraConfig cfg;
    SraBackend be;
    uint64_t cache_pages;
    uint64_t cached;            /* CEs of every stream */
    uint64_t seq;
    GPtrArray *nss;             /* SraNs, in order of first use */
    SraCounters total;
    uint64_t bad_transitions;
};

static const char *const state_names[SRA_NR_STATES] = {
    [SRA_DISABLED] = "disabled", [SRA_RAMPING] = "ramping", [SRA_ENABLED] = "enabled",
    [SRA_PAUSED] = "paused", [SRA_DISABLING] = "disabling",
};

static const char *const cause_names[SRA_NR_CAUSES] = {
    [SRA_CAUSE_WRITE] = "write", [SRA_CAUSE_DISCARD] = "discard",
    [SRA_CAUSE_LARGE_READ] = "large_read", [SRA_CAUSE_HIGH_QD] = "high_qd",
    [SRA_CAUSE_RANDOM] = "random_read", [SRA_CAUSE_IDLE] = "idle",
    [SRA_CAUSE_POWER_LOSS] = "power_loss",
};

const char *sra_state_name(SraState st)
{
    return st < SRA_NR_STATES ? state_names[st] : "invalid";
}

const char *sra_cause_name(SraCause c)
{
    return c < SRA_NR_CAUSES ? cause_names[c] : "invalid";
}

bool sra_transition_allowed(SraState from, SraState to)
{
    switch (from) {
    case SRA_DISABLED:
        return to == SRA_RAMPING;
    case SRA_RAMPING:
        return to == SRA_ENABLED || to == SRA_DISABLING;
    case SRA_ENABLED:
        return to == SRA_PAUSED || to == SRA_DISABLING;
    case SRA_PAUSED:
        return to == SRA_ENABLED || to == SRA_DISABLING;
    case SRA_DISABLING:
        return to == SRA_DISABLED;
    default:
        return false;
    }
}

bool sra_config_check(const SraConfig *c, char **err)
{
    if (!c->page_bytes) {
        *err = g_strdup("sra: the flash page size is 0");
        return false;
    }
    if (c->streams < 1 || c->streams > SRA_MAX_STREAMS) {
        *err = g_strdup_printf("sra_streams=%u is out of range: allowed 1..%u", c->streams,
                               SRA_MAX_STREAMS);
        return false;
    }
    if (c->ramp < 1 || c->ramp > SRA_MAX_RAMP) {
        *err = g_strdup_printf("sra_ramp=%u is out of range: allowed 1..%u", c->ramp,
                               SRA_MAX_RAMP);
        return false;
    }
    if (c->max_read_bytes < 1) {
        *err = g_strdup("sra_max_read_kb=0: allowed >= 1");
        return false;
    }
    if (c->max_qd < 1 || c->max_qd > SRA_MAX_QD) {
        *err = g_strdup_printf("sra_max_qd=%u is out of range: allowed 1..%u", c->max_qd,
                               SRA_MAX_QD);
        return false;
    }
    if (c->window < 1 || c->window > SRA_MAX_WINDOW) {
        *err = g_strdup_printf("sra_window=%u is out of range: allowed 1..%u (pages)",
                               c->window, SRA_MAX_WINDOW);
        return false;
    }
    if (c->cache_bytes / c->page_bytes < c->window) {
        *err = g_strdup_printf("sra_cache_kb=%" G_GUINT64_FORMAT " cannot hold one window "
                               "(sra_window=%u pages of %" G_GUINT64_FORMAT " bytes): allowed "
                               ">= %" G_GUINT64_FORMAT, c->cache_bytes / 1024, c->window,
                               c->page_bytes,
                               (c->window * c->page_bytes + 1023) / 1024);
        return false;
    }
    return true;
}

Sra *sra_new(const SraConfig *c, const SraBackend *b, char **err)
{
    Sra *s;

    if (!sra_config_check(c, err)) {
        return NULL;
    }
    s = g_new0(Sra, 1);
    s->cfg = *c;
    s->be = *b;
    s->cache_pages = c->cache_bytes / c->page_bytes;
    s->nss = g_ptr_array_new();
    return s;
}

void sra_free(Sra *s)
{
    if (!s) {
        return;
    }
    for (guint i = 0; i < s->nss->len; i++) {
        SraNs *ns = s->nss->pdata[i];
        for (uint32_t k = 0; k < s->cfg.streams; k++) {
            g_free(ns->streams[k].ces);
        }
        g_free(ns->streams);
        g_free(ns->latest_reads);
        g_free(ns);
    }
    g_ptr_array_free(s->nss, TRUE);
    g_free(s);
}

static SraNs *ns_find(const Sra *s, uint32_t nsid)
{
    for (guint i = 0; i < s->nss->len; i++) {
        SraNs *ns = s->nss->pdata[i];
        if (ns->nsid == nsid) {
            return ns;
        }
    }
    return NULL;
}

/* The namespace's detectors, created DISABLED at now on its first command. */
static SraNs *ns_get(Sra *s, uint32_t nsid, uint64_t now)
{
    SraNs *ns = ns_find(s, nsid);

    if (!ns) {
        ns = g_new0(SraNs, 1);
        ns->nsid = nsid;
        ns->streams = g_new0(SraStream, s->cfg.streams);
        for (uint32_t k = 0; k < s->cfg.streams; k++) {
            ns->streams[k].entered = now;
        }
        ns->latest_reads = g_new0(uint64_t, s->cfg.max_qd);
        g_ptr_array_add(s->nss, ns);
    }
    return ns;
}

/* ---- states ---- */

static bool transition(Sra *s, SraStream *st, SraState to, uint64_t now)
{
    if (!sra_transition_allowed(st->state, to)) {
#ifdef FEMU_DEBUG
        g_error("sra: forbidden transition %s -> %s", sra_state_name(st->state),
                sra_state_name(to));
#endif
        s->bad_transitions++;
        return false;
    }
    if (now > st->entered) {
        st->c.time_ns[st->state] += now - st->entered;
        s->total.time_ns[st->state] += now - st->entered;
        st->entered = now;
    }
    st->state = to;
    st->c.entries[to]++;
    s->total.entries[to]++;
    return true;
}

static SraCe *ce_at(const Sra *s, const SraStream *st, uint64_t page)
{
    return &st->ces[page % s->cfg.window];
}

/* The one way CEs are dropped all at once: on entering DISABLING. */
static void teardown(Sra *s, SraStream *st)
{
    uint64_t unread = 0;

    for (uint64_t p = st->lo; p < st->hi; p++) {
        unread += !ce_at(s, st, p)->read;
    }
    if (st->hi > st->lo) {
        st->c.teardowns++;
        s->total.teardowns++;
    }
    st->c.wasted += unread;
    s->total.wasted += unread;
    s->cached -= st->hi - st->lo;
    st->lo = st->hi = 0;
}

static void disable(Sra *s, SraStream *st, SraCause cause, uint64_t now)
{
    if (st->state == SRA_DISABLED || !transition(s, st, SRA_DISABLING, now)) {
        return;
    }
    teardown(s, st);
    st->c.disabled[cause]++;
    s->total.disabled[cause]++;
    transition(s, st, SRA_DISABLED, now);
    st->reads = 0;
}

static void disable_all(Sra *s, SraNs *ns, SraCause cause, uint64_t now)
{
    for (uint32_t k = 0; k < s->cfg.streams; k++) {
        disable(s, &ns->streams[k], cause, now);
    }
}

static void expire_idle(Sra *s, SraNs *ns, uint64_t now)
{
    if (!s->cfg.idle_ns) {
        return;
    }
    for (uint32_t k = 0; k < s->cfg.streams; k++) {
        SraStream *st = &ns->streams[k];
        if (st->state != SRA_DISABLED && now - MIN(now, st->last_read) >= s->cfg.idle_ns) {
            disable(s, st, SRA_CAUSE_IDLE, MAX(st->entered, st->last_read + s->cfg.idle_ns));
        }
    }
}

/* ---- cache entries ---- */

static SraStream *ce_owner(const Sra *s, const SraNs *ns, uint64_t page)
{
    for (uint32_t k = 0; ns && k < s->cfg.streams; k++) {
        SraStream *st = &ns->streams[k];
        if (page >= st->lo && page < st->hi) {
            return st;
        }
    }
    return NULL;
}

/* Drops the CEs the stream's position has passed (the host read them). */
static void prune(Sra *s, SraStream *st)
{
    uint64_t pos = st->next / s->cfg.page_bytes;

    while (st->lo < st->hi && st->lo < pos) {
        st->lo++;
        st->c.pruned++;
        s->total.pruned++;
        s->cached--;
    }
    if (st->lo == st->hi) {
        st->lo = st->hi = 0;
    }
}

/*
 * Keeps up to window pages read ahead of the stream: from PAUSED only once the host has
 * consumed half of them, so prefetches go out in batches that use several chips at once.
 */
static void top_up(Sra *s, SraNs *ns, SraStream *st, uint64_t ns_end, uint64_t now)
{
    uint64_t pb = s->cfg.page_bytes, pos = st->next / pb, ahead, want, avail, reach;

    if (!st->ces) {
        st->ces = g_new0(SraCe, s->cfg.window);     /* only streams that prefetch */
    }
    if (st->lo == st->hi) {
        st->lo = st->hi = pos;
    }
    ahead = st->hi - pos;
    if (st->state == SRA_PAUSED) {
        if (ahead > s->cfg.window / 2 || s->cached >= s->cache_pages) {
            return;
        }
        transition(s, st, SRA_ENABLED, now);
    }
    want = MIN(s->cfg.window - MIN(ahead, s->cfg.window), s->cache_pages - s->cached);
    if (ns_end) {
        want = MIN(want, (ns_end - MIN(ns_end, st->hi * pb)) / pb);
    }
    /*
     * Asked from the stream's position, not from the last page read ahead: a zone the
     * host has not reached yet is not read ahead unless reads may cross into it.
     */
    reach = want ? s->be.readable(s->be.opaque, ns->nsid, pos * pb, (ahead + want) * pb) / pb
                 : 0;
    reach = MIN(reach, ahead + want);
    avail = 0;
    /* a page another stream of the namespace holds is not read twice */
    while (avail < reach - MIN(reach, ahead) && !ce_owner(s, ns, st->hi)) {
        SraCe *ce = ce_at(s, st, st->hi);
        ce->ready = s->be.read(s->be.opaque, st->hi * pb, pb, now, true);
        ce->read = false;
        st->hi++;
        s->cached++;
        avail++;
    }
    st->c.prefetched += avail;
    s->total.prefetched += avail;
    if (st->hi - pos >= s->cfg.window || s->cached >= s->cache_pages) {
        transition(s, st, SRA_PAUSED, now);
    }
}

/*
 * Serves the read: hits from CEs, the rest from the media in contiguous runs. *misses:
 * its pages read from the media.
 */
static uint64_t serve(Sra *s, SraNs *ns, uint64_t offset, uint64_t len, uint64_t now,
                      uint64_t *misses)
{
    uint64_t pb = s->cfg.page_bytes, end = offset + len, done = now, run = offset;
    uint64_t hit_from = now, hits = 0;

    *misses = 0;

    for (uint64_t p = offset / pb; p * pb < end; p++) {
        uint64_t lo = MAX(p * pb, offset), hi = MIN((p + 1) * pb, end);
        SraStream *owner = ce_owner(s, ns, p);

        if (owner) {
            SraCe *ce = ce_at(s, owner, p);
            ce->read = true;
            owner->last_read = now;     /* its pages are in use (maybe by a stream it met) */
            hit_from = MAX(hit_from, ce->ready);
            hits++;
            owner->c.hits++;
            s->total.hits++;
            if (run < lo) {
                uint64_t r = s->be.read(s->be.opaque, run, lo - run, now, false);
                done = MAX(done, r);
            }
            run = hi;
        } else {
            (*misses)++;
        }
    }
    if (run < end) {
        uint64_t r = s->be.read(s->be.opaque, run, end - run, now, false);
        done = MAX(done, r);
    }
    /* cached pages leave SRAM one after the other, once the last one is there */
    return hits ? MAX(done, hit_from + hits * s->cfg.hit_ns) : done;
}

/* ---- queue depth ---- */

static bool qd_full(const Sra *s, const SraNs *ns, uint64_t now)
{
    return ns->nr_latest == s->cfg.max_qd && ns->latest_reads[0] > now;
}

static void qd_add(Sra *s, SraNs *ns, uint64_t done)
{
    uint64_t *a = ns->latest_reads;
    uint32_t i;

    if (ns->nr_latest < s->cfg.max_qd) {
        i = ns->nr_latest++;
    } else if (done > a[0]) {
        i = 0;
        while (i + 1 < ns->nr_latest && a[i + 1] < done) {
            a[i] = a[i + 1];
            i++;
        }
        a[i] = done;
        return;
    } else {
        return;
    }
    while (i > 0 && a[i - 1] > done) {
        a[i] = a[i - 1];
        i--;
    }
    a[i] = done;
}

/* ---- host commands ---- */

static SraStream *stream_continued(Sra *s, SraNs *ns, uint64_t offset)
{
    for (uint32_t k = 0; k < s->cfg.streams; k++) {
        SraStream *st = &ns->streams[k];
        if (st->state != SRA_DISABLED && st->next == offset) {
            return st;
        }
    }
    return NULL;
}

/* A detector for a new stream: a free one, or the least recently read one's. */
static SraStream *stream_claim(Sra *s, SraNs *ns, uint64_t now)
{
    SraStream *victim = &ns->streams[0];

    for (uint32_t k = 0; k < s->cfg.streams; k++) {
        SraStream *st = &ns->streams[k];
        if (st->state == SRA_DISABLED) {
            return st;
        }
        if (st->lru < victim->lru) {
            victim = st;
        }
    }
    disable(s, victim, SRA_CAUSE_RANDOM, now);
    return victim;
}

uint64_t sra_read(Sra *s, uint32_t nsid, uint64_t offset, uint64_t len, uint64_t ns_end,
                  uint64_t now)
{
    SraNs *ns = ns_get(s, nsid, now);
    bool large = len > s->cfg.max_read_bytes, crowded = !large && qd_full(s, ns, now);
    bool quiet;
    uint64_t done, misses;
    SraStream *st;

    expire_idle(s, ns, now);
    if (large) {
        disable_all(s, ns, SRA_CAUSE_LARGE_READ, now);
    } else if (crowded) {
        disable_all(s, ns, SRA_CAUSE_HIGH_QD, now);
        ns->crowded = true;
        ns->crowded_at = now;
    }
    /*
     * No write or discard in flight, and no read at max_qd outstanding for idle_ns: a host
     * whose queue drains now and then between bursts still has a high queue depth, and
     * reading ahead for the few reads that arrive early in a burst only wastes NAND reads.
     */
    quiet = ns->write_done <= now && ns->discard_done <= now &&
            !(ns->crowded && now - ns->crowded_at < s->cfg.idle_ns);
    done = serve(s, ns, offset, len, now, &misses);
    s->total.misses += misses;
    qd_add(s, ns, done);
    if (large || crowded || !len) {
        return done;            /* such a read does not start or continue a stream */
    }
    st = stream_continued(s, ns, offset);
    if (!st) {
        st = stream_claim(s, ns, now);
        transition(s, st, SRA_RAMPING, now);
        st->reads = 0;
    }
    st->reads++;
    st->c.misses += misses;
    st->next = offset + len;
    st->last_read = now;
    st->lru = ++s->seq;
    prune(s, st);
    if (st->state == SRA_RAMPING && st->reads >= s->cfg.ramp && quiet) {
        transition(s, st, SRA_ENABLED, now);
    }
    if (st->state == SRA_ENABLED || st->state == SRA_PAUSED) {
        top_up(s, ns, st, ns_end, now);
    }
    return done;
}

void sra_write(Sra *s, uint32_t nsid, uint64_t now, uint64_t done)
{
    SraNs *ns = ns_get(s, nsid, now);

    expire_idle(s, ns, now);
    ns->write_done = MAX(ns->write_done, done);
    disable_all(s, ns, SRA_CAUSE_WRITE, now);
}

void sra_discard(Sra *s, uint32_t nsid, uint64_t now, uint64_t done)
{
    SraNs *ns = ns_get(s, nsid, now);

    expire_idle(s, ns, now);
    ns->discard_done = MAX(ns->discard_done, done);
    disable_all(s, ns, SRA_CAUSE_DISCARD, now);
}

void sra_power_loss(Sra *s, uint64_t now)
{
    for (guint i = 0; s && i < s->nss->len; i++) {
        disable_all(s, s->nss->pdata[i], SRA_CAUSE_POWER_LOSS, now);
    }
}

void sra_idle(Sra *s, uint64_t now)
{
    for (guint i = 0; i < s->nss->len; i++) {
        expire_idle(s, s->nss->pdata[i], now);
    }
}

/* ---- introspection ---- */

static const SraStream *stream_find(const Sra *s, uint32_t nsid, uint32_t stream)
{
    SraNs *ns = ns_find(s, nsid);

    return ns && stream < s->cfg.streams ? &ns->streams[stream] : NULL;
}

SraState sra_stream_state(const Sra *s, uint32_t nsid, uint32_t stream)
{
    const SraStream *st = stream_find(s, nsid, stream);

    return st ? st->state : SRA_DISABLED;
}

int sra_cached_stream(const Sra *s, uint32_t nsid, uint64_t offset)
{
    SraNs *ns = ns_find(s, nsid);
    SraStream *st = ce_owner(s, ns, offset / s->cfg.page_bytes);

    return st ? (int)(st - ns->streams) : -1;
}

uint64_t sra_cached_pages(const Sra *s)
{
    return s->cached;
}

const SraCounters *sra_stream_counters(const Sra *s, uint32_t nsid, uint32_t stream)
{
    const SraStream *st = stream_find(s, nsid, stream);

    return st ? &st->c : NULL;
}

const SraCounters *sra_totals(const Sra *s)
{
    return &s->total;
}

uint64_t sra_bad_transitions(const Sra *s)
{
    return s->bad_transitions;
}

bool sra_stream_transition(Sra *s, uint32_t nsid, uint32_t stream, SraState to, uint64_t now)
{
    SraNs *ns = ns_get(s, nsid, now);
    SraStream *st;

    if (stream >= s->cfg.streams) {
        return false;
    }
    st = &ns->streams[stream];
    if (!transition(s, st, to, now)) {
        return false;
    }
    if (to == SRA_DISABLING) {
        teardown(s, st);
    }
    return true;
}

static void emit_counters(const SraCounters *c, const char *prefix, FemuMediaStatFn *emit,
                          void *opaque)
{
    char name[96];

#define EMIT(fmt, arg, v) do { \
        g_snprintf(name, sizeof(name), "%s" fmt, prefix, arg); \
        emit(opaque, name, v); \
    } while (0)
    for (int i = 0; i < SRA_NR_STATES; i++) {
        EMIT("%s_entries", state_names[i], c->entries[i]);
        EMIT("%s_time_ns", state_names[i], c->time_ns[i]);
    }
    EMIT("%s", "hits", c->hits);
    EMIT("%s", "misses", c->misses);
    EMIT("%s", "prefetched_pages", c->prefetched);
    EMIT("%s", "wasted_pages", c->wasted);
    EMIT("%s", "pruned_pages", c->pruned);
    EMIT("%s", "teardowns", c->teardowns);
    for (int i = 0; i < SRA_NR_CAUSES; i++) {
        EMIT("disabled_by_%s", cause_names[i], c->disabled[i]);
    }
#undef EMIT
}

void sra_emit_stats(const Sra *s, FemuMediaStatFn *emit, void *opaque)
{
    emit_counters(&s->total, "sra_", emit, opaque);
    emit(opaque, "sra_cached_pages", s->cached);
    emit(opaque, "sra_bad_transitions", s->bad_transitions);
    for (guint i = 0; i < s->nss->len; i++) {
        const SraNs *ns = s->nss->pdata[i];
        for (uint32_t k = 0; k < s->cfg.streams; k++) {
            const SraStream *st = &ns->streams[k];
            if (!st->c.entries[SRA_RAMPING]) {
                continue;           /* never used: keeps the page short */
            }
            g_autofree char *prefix = g_strdup_printf("sra_ns%u_s%u_", ns->nsid, k);
            g_autofree char *state = g_strconcat(prefix, "state", NULL);
            emit(opaque, state, st->state);
            emit_counters(&st->c, prefix, emit, opaque);
        }
    }
}
