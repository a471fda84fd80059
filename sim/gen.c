/*
 * femu-sim's I/O generators: one per job clone, deterministic (seeded from randseed, the
 * job's name and the clone index). Each sim_gen_next is O(1) and allocation-free: the
 * random map is a keyed permutation, not a bitmap; traces are streamed line by line.
 *
 * Follows fio where it says how (HOWTO, and fio's zbd/zipf behaviour):
 *  - random offsets are multiples of the direction's smallest block size (fio's default
 *    blockalign); one pass of a random job without norandommap starts one I/O at every
 *    such block, in a new order each pass, reads and writes sharing the pass when their
 *    block sizes agree (fio keeps one map per file); an I/O is cut at the region's end;
 *  - zipf and pareto are fio's (Gray et al.'s zipf generator, pareto as u^(log h/log(1-h)))
 *    over the region's grid blocks; fio scatters the ranks with a hash (two may share a
 *    block), femu-sim with a keyed permutation, so the skew is exactly the distribution's;
 *    both imply norandommap, as in fio;
 *  - zonemode=zbd: writes at the write pointer, shortened to what the zone has left (a
 *    multiple of the smallest block size); a write aimed at a full zone resets it first;
 *    a zone with less than a block left is finished; random writes go to the zone of
 *    their offset while fewer than max_open_zones are open, else to an open zone; reads
 *    stay below the write pointer, moving to the nearest zone with data.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "workload-int.h"

#include <glib.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define ZIPF_EXACT_TERMS 100000u     /* beyond: Euler-Maclaurin for the zeta sum's tail */

typedef struct Rng {
    uint64_t s;
} Rng;

/* A Feistel permutation of [0, 4^half_bits), cycle-walked down to [0, n); rekeyed per pass. */
typedef struct Perm {
    uint64_t n;
    uint32_t half_bits;
    uint64_t key[4];
    uint64_t i, pass, seed;
} Perm;

typedef struct Zbd {
    uint64_t zone_bytes, cap;
    uint64_t first;             /* the region's first zone (namespace index) */
    uint32_t nr;                /* zones in the region */
    uint64_t *wp;               /* bytes written in each of them, as far as we know */
    int32_t *open_idx;          /* index in open[], or -1 */
    uint32_t *open;             /* the zones random writes go to */
    uint32_t nr_open, max_open;
    uint32_t wzone;             /* sequential writes: the zone they fill */
    bool wmine;                 /* ... and this job has written there */
    uint64_t rpos;              /* sequential reads: next offset in the region */
} Zbd;

struct SimGen {
    SimJobOpts o;
    SimTarget t;
    bool time_based, replay_no_stall;
    uint32_t nr_ddirs;
    int only_ddir;              /* the direction when there is one, else -1 */
    uint64_t min_bs[SIM_DDIRS];

    uint64_t start, len;        /* the region, bytes */
    uint64_t grid, nblocks;     /* the smallest block size, and the zipf/pareto ranks */
    uint64_t nblk[SIM_DDIRS];   /* blocks of min_bs[d]: fio aligns offsets to those */
    uint64_t budget, done;

    Rng rng_mix, rng_bs, rng_off, rng_plid;
    uint64_t seq_pos[SIM_DDIRS];

    /* random map: one for all directions when they share a block size (fio: one per file) */
    Perm perm[SIM_DDIRS];
    uint8_t perm_of[SIM_DDIRS];

    /* zipf / pareto */
    double zetan, zeta2, eta, alpha, pareto_pow;
    Perm scatter;               /* rank -> block: the hot blocks spread over the region */

    bool started;
    uint64_t t0;                /* now_ns at the first call */
    uint64_t nr_ios;            /* data I/Os handed out */
    uint32_t writes_unsynced;
    bool flush_due, wrote, end_flushed, ended;
    bool has_pending;
    SimIo pending;
    uint32_t plid_rr;
    uint32_t nr_plids;
    uint16_t plids[SIM_PLIDS_MAX];

    Zbd *z;
    SimTrace *tr;
    uint64_t trace_first;       /* the trace's first I/O time */
    uint64_t trace_last;        /* the last record's time */
    uint64_t trace_base;        /* time_based: where this pass of the trace starts */
    bool trace_any;             /* this pass has had a record */
};

static bool fail(char **err, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static bool fail(char **err, const char *fmt, ...)
{
    va_list ap;

    if (err && !*err) {
        va_start(ap, fmt);
        *err = g_strdup_vprintf(fmt, ap);
        va_end(ap);
    }
    return false;
}

/* ---- randomness ---- */

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* splitmix64: a counter through a mixer; good enough for workloads, one word of state */
static inline uint64_t rng_next(Rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return mix64(r->s);
}

static inline uint64_t rng_below(Rng *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

/* [0, 1) */
static inline double rng_unit(Rng *r)
{
    return (rng_next(r) >> 11) * 0x1.0p-53;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a */

    for (; s && *s; s++) {
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    }
    return h;
}

/* ---- random map ---- */

static void perm_rekey(Perm *p)
{
    for (int r = 0; r < 4; r++) {
        p->key[r] = mix64(p->seed ^ mix64(p->pass * 4 + r + 1));
    }
}

static void perm_init(Perm *p, uint64_t n, uint64_t seed)
{
    p->n = n;
    p->seed = seed;
    p->half_bits = 1;
    while (p->half_bits < 32 && (1ull << (2 * p->half_bits)) < n) {
        p->half_bits++;
    }
    perm_rekey(p);
}

static inline uint64_t feistel(const Perm *p, uint64_t x)
{
    uint32_t h = p->half_bits;
    uint64_t mask = (1ull << h) - 1;
    uint64_t l = x >> h, r = x & mask;

    for (int i = 0; i < 4; i++) {
        uint64_t t = l ^ (mix64(r ^ p->key[i]) & mask);

        l = r;
        r = t;
    }
    return (l << h) | r;
}

/* The domain is under 4n: cycle walking takes under 4 rounds on average. */
static inline uint64_t feistel_walk(const Perm *p, uint64_t x)
{
    do {
        x = feistel(p, x);
    } while (x >= p->n);
    return x;
}

static uint64_t perm_next(Perm *p)
{
    if (p->i == p->n) {
        p->i = 0;
        p->pass++;
        perm_rekey(p);
    }
    return feistel_walk(p, p->i++);
}

/* ---- zipf / pareto ---- */

static void zipf_setup(SimGen *g, double theta)
{
    uint64_t n = g->nblocks, exact = MIN(n, ZIPF_EXACT_TERMS);
    double s = 0;

    for (uint64_t i = 1; i <= exact; i++) {
        s += pow((double)i, -theta);
    }
    if (n > exact) {
        /* sum_{a+1}^{n} i^-t ~ integral + endpoint corrections; a = 1e5 leaves ~1e-20 */
        double a = exact, b = n;

        s += (pow(b, 1 - theta) - pow(a, 1 - theta)) / (1 - theta)
            + (pow(b, -theta) - pow(a, -theta)) / 2
            + theta / 12 * (pow(a, -theta - 1) - pow(b, -theta - 1));
    }
    g->zetan = s;
    g->zeta2 = 1 + pow(0.5, theta);
    g->alpha = 1 / (1 - theta);
    g->eta = n > 2 ? (1 - pow(2.0 / n, 1 - theta)) / (1 - g->zeta2 / s) : 0;
}

static uint64_t zipf_next(SimGen *g)
{
    double u = rng_unit(&g->rng_off), uz = u * g->zetan;
    uint64_t n = g->nblocks, rank;

    if (uz < 1) {
        rank = 0;
    } else if (uz < g->zeta2) {
        rank = MIN(1, n - 1);
    } else {
        double v = n * pow(g->eta * u - g->eta + 1, g->alpha);

        rank = v >= n ? n - 1 : (uint64_t)v;
    }
    return feistel_walk(&g->scatter, rank);
}

static uint64_t pareto_next(SimGen *g)
{
    uint64_t rank = (g->nblocks - 1) * pow(rng_unit(&g->rng_off), g->pareto_pow);

    return feistel_walk(&g->scatter, rank);
}

/* A random offset in the region for direction d, a multiple of its min_bs. */
static uint64_t rand_offset(SimGen *g, int d)
{
    uint64_t ba = g->min_bs[d], b;

    switch (g->o.dist) {
    case SIM_DIST_ZIPF:
    case SIM_DIST_PARETO:
        /* ranks over the smallest block size, as fio's; then aligned to d's */
        b = g->o.dist == SIM_DIST_ZIPF ? zipf_next(g) : pareto_next(g);
        return MIN(b * g->grid / ba, g->nblk[d] - 1) * ba;
    default:
        if (g->o.norandommap) {
            return rng_below(&g->rng_off, g->nblk[d]) * ba;
        }
        return perm_next(&g->perm[g->perm_of[d]]) * ba;
    }
}

/* ---- block sizes, directions ---- */

static int pick_ddir(SimGen *g)
{
    if (g->only_ddir >= 0) {
        return g->only_ddir;
    }
    return rng_below(&g->rng_mix, 100) < g->o.rwmixread ? SIM_DDIR_READ : SIM_DDIR_WRITE;
}

static uint64_t pick_bs(SimGen *g, int d)
{
    uint32_t n = g->o.nr_split[d];
    double r, acc = 0;

    if (!n) {
        return g->o.bs[d];
    }
    r = rng_unit(&g->rng_bs) * 100;
    for (uint32_t i = 0; i < n; i++) {
        acc += g->o.split[d][i].perc;
        if (r < acc && g->o.split[d][i].perc > 0) {
            return g->o.split[d][i].bs;
        }
    }
    while (n > 1 && g->o.split[d][n - 1].perc <= 0) {
        n--;    /* rounding left r past the sum: the last size that has a share */
    }
    return g->o.split[d][n - 1].bs;
}

static uint32_t next_plid(SimGen *g)
{
    if (!g->o.fdp) {
        return SIM_NO_PLID;
    }
    if (g->o.plid_random) {
        return g->plids[rng_below(&g->rng_plid, g->nr_plids)];
    }
    if (g->plid_rr >= g->nr_plids) {
        g->plid_rr = 0;
    }
    return g->plids[g->plid_rr++];
}

/* ---- zonemode=zbd ---- */

static void zbd_open_add(Zbd *z, uint32_t k)
{
    z->open_idx[k] = z->nr_open;
    z->open[z->nr_open++] = k;
}

static void zbd_open_del(Zbd *z, uint32_t k)
{
    int32_t i = z->open_idx[k];
    uint32_t last;

    if (i < 0) {
        return;
    }
    last = z->open[--z->nr_open];
    z->open[i] = last;
    z->open_idx[last] = i;
    z->open_idx[k] = -1;
}

static void zone_op(SimGen *g, SimIo *io, SimOp op, uint32_t k)
{
    *io = (SimIo){ .op = op, .offset = (g->z->first + k) * g->z->zone_bytes,
                   .len = g->z->zone_bytes, .plid = SIM_NO_PLID };
}

/*
 * A write of len to zone k, at its write pointer. Returns false with *io a zone
 * management op instead when the zone first needs a reset (then *data is the write, for
 * right after) or a finish (then the caller draws a new I/O next time).
 */
static bool zbd_write_zone(SimGen *g, uint32_t k, uint64_t len, SimIo *io, SimIo *data,
                           bool *has_data)
{
    Zbd *z = g->z;
    uint64_t mbs = g->min_bs[SIM_DDIR_WRITE], left;

    *has_data = false;
    left = z->cap - z->wp[k];
    if (left > 0 && left < mbs) {
        zone_op(g, io, SIM_OP_ZONE_FINISH, k);
        z->wp[k] = z->cap;
        zbd_open_del(z, k);
        return false;
    }
    if (left == 0) {
        zone_op(g, io, SIM_OP_ZONE_RESET, k);
        z->wp[k] = 0;
        left = z->cap;
        *has_data = true;
    }
    len = MIN(len, left) / mbs * mbs;
    *(*has_data ? data : io) = (SimIo){ .op = SIM_OP_WRITE,
        .offset = (z->first + k) * z->zone_bytes + z->wp[k], .len = len };
    z->wp[k] += len;
    if (z->wp[k] == z->cap) {
        zbd_open_del(z, k);
    }
    return !*has_data;
}

/* The zone a random write goes to (fio's choice, by the write's random offset). */
static uint32_t zbd_random_target(SimGen *g)
{
    Zbd *z = g->z;
    uint64_t off = rand_offset(g, SIM_DDIR_WRITE);
    uint32_t k = off / z->zone_bytes;

    if (z->open_idx[k] >= 0) {
        return k;
    }
    if (z->nr_open < z->max_open) {
        zbd_open_add(z, k);
        return k;
    }
    return z->open[(uint64_t)(((unsigned __int128)off * z->nr_open) / g->len)];
}

/* Zone k if it holds min readable bytes, else the nearest (next, if forward) that does. */
static bool zbd_find_data(SimGen *g, uint32_t *kp, uint64_t min, bool forward)
{
    Zbd *z = g->z;
    uint32_t k = *kp;

    if (z->wp[k] >= min) {
        return true;
    }
    for (uint32_t d = 1; d < z->nr; d++) {
        bool any = false;

        if (forward) {
            if (z->wp[(k + d) % z->nr] >= min) {
                *kp = (k + d) % z->nr;
                return true;
            }
            continue;
        }
        if (k + d < z->nr) {
            any = true;
            if (z->wp[k + d] >= min) {
                *kp = k + d;
                return true;
            }
        }
        if (d <= k) {
            any = true;
            if (z->wp[k - d] >= min) {
                *kp = k - d;
                return true;
            }
        }
        if (!any) {
            break;
        }
    }
    return false;
}

/* A read below the write pointers; false when nothing is written in the region. */
static bool zbd_read(SimGen *g, uint64_t len, SimIo *io)
{
    Zbd *z = g->z;
    uint64_t mbs = g->min_bs[SIM_DDIR_READ], zb = z->zone_bytes, off, range;
    uint32_t k;

    if (!g->o.random) {
        uint64_t pos = z->rpos;

        k = pos / zb;
        if (pos + mbs > (uint64_t)k * zb + z->wp[k]) {
            k = (k + 1) % z->nr;
            if (!zbd_find_data(g, &k, mbs, true)) {
                return false;
            }
            pos = (uint64_t)k * zb;
        }
        len = MIN(len, (uint64_t)k * zb + z->wp[k] - pos) / mbs * mbs;
        z->rpos = pos + len;
        if (z->rpos >= (uint64_t)z->nr * zb) {
            z->rpos = 0;
        }
        *io = (SimIo){ .op = SIM_OP_READ, .offset = z->first * zb + pos, .len = len };
        return true;
    }
    off = rand_offset(g, SIM_DDIR_READ);
    k = off / zb;
    if (!zbd_find_data(g, &k, mbs, false)) {
        return false;
    }
    range = z->wp[k];
    if (range <= len) {
        off = 0;
        len = range / mbs * mbs;
    } else {
        off = (off % zb) % (range - len) / mbs * mbs;
    }
    *io = (SimIo){ .op = SIM_OP_READ, .offset = (z->first + k) * zb + off, .len = len };
    return true;
}

/* ---- trace replay ---- */

static bool trace_next(SimGen *g, SimIo *io)
{
    SimTraceRec rec;
    uint64_t nb = 0;

    if (!sim_trace_next(g->tr, &rec)) {
        if (!g->time_based || !g->trace_any) {
            return false;
        }
        /* time_based: the trace again, its first I/O where the last one was */
        sim_trace_rewind(g->tr);
        g->trace_base += g->trace_last - g->trace_first;
        g->trace_any = false;
        if (!sim_trace_next(g->tr, &rec)) {
            return false;
        }
    }
    g->trace_any = true;
    g->trace_last = rec.t_ns;
    if (!g->replay_no_stall) {
        nb = g->t0 + g->trace_base +
            (rec.t_ns > g->trace_first ? rec.t_ns - g->trace_first : 0);
    }
    *io = (SimIo){ .op = rec.op, .offset = rec.offset, .len = rec.len, .plid = SIM_NO_PLID,
                   .not_before_ns = nb, .fua = rec.fua };
    if (rec.op == SIM_OP_WRITE) {
        io->plid = next_plid(g);
    }
    if (rec.preflush) {
        g->pending = *io;
        g->has_pending = true;
        *io = (SimIo){ .op = SIM_OP_FLUSH, .plid = SIM_NO_PLID, .not_before_ns = nb };
    }
    return true;
}

/* ---- setup ---- */

static uint64_t amount(const SimAmount *a, uint64_t ns_bytes, uint64_t align)
{
    uint64_t v;

    if (!a->is_pct) {
        return a->bytes;
    }
    v = (uint64_t)(((unsigned __int128)ns_bytes * a->pct) / 100);
    return (v + align - 1) / align * align;     /* fio aligns a percentage up to min bs */
}

static bool setup_bs(SimGen *g, const SimJob *job, char **err)
{
    uint32_t lba = g->t.lba_bytes;

    g->grid = 0;
    g->nr_ddirs = 0;
    g->only_ddir = -1;
    for (int d = 0; d < SIM_DDIRS; d++) {
        uint64_t mn = g->o.bs[d];

        if (!g->o.ddir[d]) {
            continue;
        }
        g->nr_ddirs++;
        g->only_ddir = d;
        if (g->o.nr_split[d]) {
            mn = UINT64_MAX;
            for (uint32_t i = 0; i < g->o.nr_split[d]; i++) {
                uint64_t bs = g->o.split[d][i].bs;

                if (bs % lba) {
                    return fail(err, "job '%s': bssplit size %" G_GUINT64_FORMAT " is not a "
                                "multiple of the namespace's %u-byte LBA", job->name, bs, lba);
                }
                if (g->o.split[d][i].perc > 0) {
                    mn = MIN(mn, bs);
                }
            }
        } else if (mn % lba) {
            return fail(err, "job '%s': bs=%" G_GUINT64_FORMAT " is not a multiple of the "
                        "namespace's %u-byte LBA", job->name, mn, lba);
        }
        g->min_bs[d] = mn;
        g->grid = g->grid ? MIN(g->grid, mn) : mn;
    }
    if (g->nr_ddirs > 1) {
        g->only_ddir = -1;
    }
    return true;
}

static bool setup_zbd(SimGen *g, const SimJob *job, uint32_t clone, char **err)
{
    const SimTarget *t = &g->t;
    uint64_t zb = t->zone_bytes, first, end, limit;
    Zbd *z;

    if (!zb) {
        return fail(err, "job '%s': zonemode=zbd on a namespace that is not zoned",
                    job->name);
    }
    if (!t->zone_cap_bytes || t->zone_cap_bytes > zb || t->zone_cap_bytes % t->lba_bytes) {
        return fail(err, "job '%s': zone capacity %" G_GUINT64_FORMAT " bytes is not usable "
                    "(zone size %" G_GUINT64_FORMAT ")", job->name, t->zone_cap_bytes, zb);
    }
    for (int d = 0; d < SIM_DDIRS; d++) {
        if (g->o.ddir[d] && g->min_bs[d] > t->zone_cap_bytes) {
            return fail(err, "job '%s': block size %" G_GUINT64_FORMAT " is larger than the "
                        "zone capacity (%" G_GUINT64_FORMAT " bytes)", job->name,
                        g->min_bs[d], t->zone_cap_bytes);
        }
    }
    /* fio rounds the region inwards to zone boundaries */
    first = (g->start + zb - 1) / zb;
    end = (g->start + g->len) / zb;
    if (end <= first) {
        return fail(err, "job '%s' clone %u: the region %" G_GUINT64_FORMAT "+%"
                    G_GUINT64_FORMAT " holds no whole zone (zones of %" G_GUINT64_FORMAT
                    " bytes)", job->name, clone, g->start, g->len, zb);
    }
    if (end - first > UINT32_MAX) {
        return fail(err, "job '%s': more than 2^32 zones", job->name);
    }
    if (g->o.ddir[SIM_DDIR_WRITE] && job->numjobs > 1 &&
        amount(&g->o.offset_increment, t->ns_bytes, g->grid) < (end - first) * zb) {
        return fail(err, "job '%s': zonemode=zbd writes with numjobs=%u need a region per "
                    "clone: offset_increment >= size", job->name, job->numjobs);
    }
    g->start = first * zb;
    g->len = (end - first) * zb;
    z = g->z = g_new0(Zbd, 1);
    z->zone_bytes = zb;
    z->cap = t->zone_cap_bytes;
    z->first = first;
    z->nr = end - first;
    z->wp = g_new0(uint64_t, z->nr);
    z->open_idx = g_new(int32_t, z->nr);
    /* fio's max_open_zones counts every job's zones: the clones share the limit */
    limit = g->o.max_open_zones ? g->o.max_open_zones : t->max_open_zones;
    if (limit) {
        limit = MAX(1, limit / job->numjobs);
    }
    z->max_open = limit && limit < z->nr ? limit : z->nr;
    z->open = g_new(uint32_t, z->max_open);
    for (uint32_t k = 0; k < z->nr; k++) {
        uint64_t w = t->zone_written ? t->zone_written(t->opaque, first + k) : 0;

        if (w > z->cap || w % t->lba_bytes) {
            return fail(err, "zone %" G_GUINT64_FORMAT ": %" G_GUINT64_FORMAT " bytes "
                        "written, beyond its capacity or not a multiple of the LBA",
                        first + k, w);
        }
        z->wp[k] = w;
        z->open_idx[k] = -1;
        /* partly written zones are open on the device: they are the first write targets */
        if (w > 0 && w < z->cap && z->nr_open < z->max_open) {
            zbd_open_add(z, k);
        }
    }
    return true;
}

static void zbd_free(Zbd *z)
{
    if (z) {
        g_free(z->wp);
        g_free(z->open_idx);
        g_free(z->open);
        g_free(z);
    }
}

SimGen *sim_gen_new(const SimJob *job, uint32_t clone, const SimTarget *t, char **err)
{
    const SimJobOpts *o = job->priv;
    SimGen *g;
    uint64_t seed, off, inc, size;

    if (err) {
        *err = NULL;
    }
    if (!o || !t || !t->lba_bytes || !t->ns_bytes || t->ns_bytes % t->lba_bytes) {
        fail(err, "job '%s': no options or no usable namespace", job ? job->name : "?");
        return NULL;
    }
    if (clone >= job->numjobs) {
        fail(err, "job '%s': clone %u of numjobs=%u", job->name, clone, job->numjobs);
        return NULL;
    }
    g = g_new0(SimGen, 1);
    g->o = *o;
    g->t = *t;
    g->time_based = job->time_based;
    g->replay_no_stall = job->replay_no_stall;
    seed = mix64(o->randseed) ^ mix64(hash_str(job->name) + clone);
    g->rng_mix.s = mix64(seed ^ 1);
    g->rng_bs.s = mix64(seed ^ 2);
    g->rng_off.s = mix64(seed ^ 3);
    g->rng_plid.s = mix64(seed ^ 4);

    if (o->fdp) {
        if (!t->nr_plids) {
            fail(err, "job '%s': fdp=1 on a namespace without placement ids", job->name);
            goto fail;
        }
        if (o->nr_plids) {
            for (uint32_t i = 0; i < o->nr_plids; i++) {
                if (o->plids[i] >= t->nr_plids) {
                    fail(err, "job '%s': fdp_pli index %u is beyond the namespace's %u "
                         "placement ids (0..%u)", job->name, o->plids[i], t->nr_plids,
                         t->nr_plids - 1);
                    goto fail;
                }
            }
            g->nr_plids = o->nr_plids;
            memcpy(g->plids, o->plids, sizeof(g->plids));
        } else {
            /* fio's default: every placement id, at most 16 of them */
            g->nr_plids = MIN(t->nr_plids, SIM_PLIDS_MAX);
            for (uint32_t i = 0; i < g->nr_plids; i++) {
                g->plids[i] = i;
            }
        }
    }
    if (job->read_iolog) {
        g->tr = sim_trace_open(job->read_iolog, t, err);
        if (!g->tr) {
            goto fail;
        }
        g->trace_first = sim_trace_first_ns(g->tr);
        return g;
    }

    if (!setup_bs(g, job, err)) {
        goto fail;
    }
    off = amount(&o->offset, t->ns_bytes, g->grid);
    inc = amount(&o->offset_increment, t->ns_bytes, g->grid);
    if (inc && clone > (UINT64_MAX - off) / inc) {
        fail(err, "job '%s' clone %u: offset overflows", job->name, clone);
        goto fail;
    }
    off += (uint64_t)clone * inc;
    if (off % t->lba_bytes) {
        fail(err, "job '%s' clone %u: offset %" G_GUINT64_FORMAT " is not a multiple of the "
             "namespace's %u-byte LBA", job->name, clone, off, t->lba_bytes);
        goto fail;
    }
    if (off >= t->ns_bytes) {
        fail(err, "job '%s' clone %u: offset %" G_GUINT64_FORMAT " is beyond the namespace "
             "(%" G_GUINT64_FORMAT " bytes)", job->name, clone, off, t->ns_bytes);
        goto fail;
    }
    size = o->size_set ? amount(&o->size, t->ns_bytes, 1) : t->ns_bytes - off;
    if (size > t->ns_bytes - off) {
        fail(err, "job '%s' clone %u: offset %" G_GUINT64_FORMAT " + size %" G_GUINT64_FORMAT
             " is beyond the namespace (%" G_GUINT64_FORMAT " bytes)", job->name, clone, off,
             size, t->ns_bytes);
        goto fail;
    }
    g->start = off;
    g->len = size;
    if (o->zbd && !setup_zbd(g, job, clone, err)) {
        goto fail;
    }
    g->nblocks = g->len / g->grid;
    g->len = g->nblocks * g->grid;
    for (int d = 0; d < SIM_DDIRS; d++) {
        if (!o->ddir[d]) {
            continue;
        }
        g->nblk[d] = g->len / g->min_bs[d];
        if (!g->nblk[d]) {
            fail(err, "job '%s' clone %u: size %" G_GUINT64_FORMAT " is smaller than the "
                 "block size %" G_GUINT64_FORMAT, job->name, clone, size, g->min_bs[d]);
            goto fail;
        }
        /* directions of one block size share a map, so a pass covers each block once */
        g->perm_of[d] = d;
        for (int e = 0; e < d; e++) {
            if (o->ddir[e] && g->min_bs[e] == g->min_bs[d]) {
                g->perm_of[d] = g->perm_of[e];
                break;
            }
        }
        if (g->perm_of[d] == d) {
            perm_init(&g->perm[d], g->nblk[d], mix64(seed ^ (5 + d)));
        }
    }
    g->budget = o->io_size_set ? o->io_size : g->len;
    perm_init(&g->scatter, g->nblocks, mix64(seed ^ 9));
    if (o->dist == SIM_DIST_ZIPF) {
        zipf_setup(g, o->dist_param);
    } else if (o->dist == SIM_DIST_PARETO) {
        g->pareto_pow = log(o->dist_param) / log(1 - o->dist_param);
    }
    return g;
fail:
    sim_gen_free(g);
    return NULL;
}

void sim_gen_free(SimGen *g)
{
    if (g) {
        zbd_free(g->z);
        if (g->tr) {
            sim_trace_free(g->tr);
        }
        g_free(g);
    }
}

/* ---- the next I/O ---- */

/* A data I/O of direction d outside zbd mode. */
static void plain_io(SimGen *g, int d, uint64_t len, SimIo *io)
{
    uint64_t pos;

    if (g->o.random) {
        pos = rand_offset(g, d);
    } else {
        pos = g->seq_pos[d];
        if (pos >= g->len) {
            pos = 0;
        }
    }
    len = MIN(len, g->len - pos);   /* the last block of the region is cut short */
    if (!g->o.random) {
        g->seq_pos[d] = pos + len;
    }
    *io = (SimIo){ .op = d == SIM_DDIR_READ ? SIM_OP_READ : d == SIM_DDIR_WRITE
                   ? SIM_OP_WRITE : SIM_OP_TRIM, .offset = g->start + pos, .len = len };
}

static void count_io(SimGen *g, SimIo *io)
{
    io->plid = SIM_NO_PLID;
    g->done += io->len;
    if (io->op == SIM_OP_WRITE) {
        io->plid = next_plid(g);
        g->wrote = true;
        if (g->o.fsync_every && ++g->writes_unsynced == g->o.fsync_every) {
            g->writes_unsynced = 0;
            g->flush_due = true;
        }
    }
}

static void flush_io(SimIo *io)
{
    *io = (SimIo){ .op = SIM_OP_FLUSH, .plid = SIM_NO_PLID };
}

/* The job's end: end_fsync's flush if it wrote, then nothing. */
static bool end_job(SimGen *g, SimIo *io)
{
    g->ended = true;
    if (g->o.end_fsync && g->wrote && !g->end_flushed) {
        g->end_flushed = true;
        flush_io(io);
        return true;
    }
    return false;
}

/* zbd: the write of this turn; false and *io a zone op when one comes first. */
static bool zbd_write(SimGen *g, uint64_t len, SimIo *io)
{
    Zbd *z = g->z;
    SimIo data;
    bool has_data;
    uint32_t k;

    if (g->o.random) {
        k = zbd_random_target(g);
    } else {
        k = z->wzone;
        if (z->wmine && z->wp[k] == z->cap) {
            /* this job filled it: on to the next zone (reset there if full) */
            k = z->wzone = (k + 1) % z->nr;
        }
        z->wmine = true;
    }
    if (zbd_write_zone(g, k, len, io, &data, &has_data)) {
        return true;
    }
    if (has_data) {
        g->pending = data;
        g->has_pending = true;
    } else if (!g->o.random) {
        z->wzone = (k + 1) % z->nr;     /* finished: the next zone */
        z->wmine = false;
    }
    return false;
}

bool sim_gen_can_look_ahead(const SimGen *g)
{
    return g->started && !g->z && !g->tr && !g->o.thinktime_ns;
}

bool sim_gen_waits(const SimGen *g)
{
    return g->o.thinktime_ns || (g->tr && !g->replay_no_stall);
}

bool sim_gen_next(SimGen *g, uint64_t now_ns, SimIo *io)
{
    uint64_t len, nb = 0;
    int d;

    if (!g->started) {
        g->started = true;
        g->t0 = now_ns;
    }
    if (g->has_pending) {
        *io = g->pending;
        g->has_pending = false;
        if (g->tr) {
            return true;
        }
        count_io(g, io);
        return true;
    }
    if (g->flush_due) {
        g->flush_due = false;
        flush_io(io);
        return true;
    }
    if (g->ended) {
        return false;
    }
    if (g->tr) {
        return trace_next(g, io) || (g->ended = true, false);
    }
    if (!g->time_based && g->done >= g->budget) {
        return end_job(g, io);
    }
    /* thinktime: after every thinktime_blocks I/Os, wait before the next */
    if (g->o.thinktime_ns && g->nr_ios > 0 && g->nr_ios % g->o.thinktime_blocks == 0) {
        nb = now_ns + g->o.thinktime_ns;
    }
    d = pick_ddir(g);
    len = pick_bs(g, d);
    if (g->z) {
        if (d == SIM_DDIR_READ && !zbd_read(g, len, io)) {
            if (!g->o.ddir[SIM_DDIR_WRITE]) {
                return end_job(g, io);      /* as fio: nothing written, nothing to read */
            }
            d = SIM_DDIR_WRITE;
            len = pick_bs(g, d);
        }
        if (d == SIM_DDIR_WRITE && !zbd_write(g, len, io)) {
            /* a zone op first: a reset with this turn's write pending, or a finish alone */
            if (g->has_pending) {
                io->not_before_ns = nb;
                g->nr_ios++;
            }
            return true;
        }
    } else {
        plain_io(g, d, len, io);
    }
    count_io(g, io);
    io->not_before_ns = nb;
    g->nr_ios++;
    return true;
}
