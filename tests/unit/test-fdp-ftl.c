/*
 * The FDP FTL (hw/femu/fdp/fdp-ftl.h): placement and isolation against a reference model,
 * statistics identities, WAF, handle updates and time limits, the store, configuration
 * checks. Black-box: only the header's interface.
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "fdp/fdp-ftl.h"
#include "fdp/fdp-params.h"

#define US 1000ULL
#define MS (1000 * US)

static NandGeometry geo(uint32_t nchs, uint32_t luns, uint32_t pls, uint32_t blks,
                        uint32_t pgs)
{
    return (NandGeometry){ .nchs = nchs, .luns_per_ch = luns, .pls_per_lun = pls,
                           .blks_per_pl = blks, .pgs_per_blk = pgs, .secs_per_pg = 8,
                           .secsz = 512 };
}

static NandTiming slc(void)
{
    return (NandTiming){ .cell_bits = 1, .pg_rd_lat = { 40 * US }, .pg_wr_lat = { 200 * US },
                         .blk_er_lat = 2000 * US, .ch_xfer_lat = 10 * US, .time_scale = 1 };
}

/* types: one character per handle, 'i' Initially or 'p' Persistently Isolated */
static FdpFtlConfig config(NandGeometry g, uint64_t exposed, uint32_t nrg, const char *types)
{
    FdpFtlConfig c = { .geo = g, .tm = slc(), .exposed_pages = exposed, .nrg = nrg,
                       .nruh = strlen(types), .gc_thres_pcent = 75,
                       .gc_thres_pcent_high = 95 };

    for (uint32_t h = 0; h < c.nruh; h++) {
        c.ruh_type[h] = types[h] == 'p' ? FDP_RUH_PERSISTENTLY_ISOLATED
                                        : FDP_RUH_INITIALLY_ISOLATED;
    }
    return c;
}

/*
 * 8 chips (4 channels x 2), 2 planes, 40 blocks of 16 pages; 2 groups of 4 chips: RUs of
 * 128 pages, 40 per group. 4096 exposed pages: 16 RUs of data per group, 150 % spare.
 */
static FdpFtlConfig two_groups(void)
{
    return config(geo(4, 2, 2, 40, 16), 4096, 2, "iipp");
}

static FdpFtl *fdp(FdpFtlConfig c)
{
    char *err = NULL;
    FdpFtl *f = fdp_ftl_new(&c, &err);

    g_assert_cmpstr(err, ==, NULL);
    g_assert_nonnull(f);
    return f;
}

static void assert_consistent(const FdpFtl *f)
{
    char *err = NULL;
    bool ok = fdp_ftl_check_consistency(f, &err);

    g_assert_cmpstr(err, ==, NULL);
    g_assert_true(ok);
}

/* Events posted, in order. */
typedef struct Events {
    GArray *ev;
} Events;

static void record_event(void *opaque, const FdpFtlEvent *e)
{
    g_array_append_val(((Events *)opaque)->ev, *e);
}

static void events_init(Events *e, FdpFtl *f)
{
    e->ev = g_array_new(false, true, sizeof(FdpFtlEvent));
    fdp_ftl_set_event_fn(f, record_event, e);
}

static FdpFtlEvent *event_at(Events *e, guint i)
{
    return &g_array_index(e->ev, FdpFtlEvent, i);
}

/*
 * Every mapped lpn is where the reference says (ref[lpn]: handle + 1, 0 unmapped), and no
 * RU holding a PI handle's data holds anything else.
 */
static void assert_matches_reference(const FdpFtl *f, const FdpFtlConfig *c,
                                     const uint8_t *ref)
{
    uint32_t nrus = fdp_ftl_rus_per_rg(f);
    g_autofree uint32_t *mask = g_new0(uint32_t, (uint64_t)c->nrg * nrus);
    uint64_t mapped = 0, valid = 0;

    assert_consistent(f);
    for (uint64_t lpn = 0; lpn < c->exposed_pages; lpn++) {
        uint32_t rg, ru, ruh;
        bool m = fdp_ftl_lookup(f, lpn, NULL, &rg, &ru, &ruh);
        g_assert_cmpint(m, ==, ref[lpn] != 0);
        if (m) {
            g_assert_cmpuint(ruh, ==, ref[lpn] - 1u);
            g_assert_cmpuint(rg, <, c->nrg);
            g_assert_cmpuint(ru, <, nrus);
            mask[rg * nrus + ru] |= 1u << ruh;
            mapped++;
        }
    }
    for (uint32_t i = 0; i < c->nrg * nrus; i++) {
        for (uint32_t h = 0; h < c->nruh; h++) {
            if (c->ruh_type[h] == FDP_RUH_PERSISTENTLY_ISOLATED && (mask[i] >> h & 1)) {
                g_assert_cmpuint(mask[i], ==, 1u << h);
            }
        }
    }
    for (uint32_t h = 0; h < c->nruh; h++) {
        FdpRuhStats s;
        fdp_ftl_ruh_stats(f, h, &s);
        valid += s.valid_pages;
    }
    g_assert_cmpuint(valid, ==, mapped);
}

/*
 * The statistics' identities: NAND = host + moved, blocks = RUs x blocks per RU, handles and
 * groups sum to the totals, and the events account for every page moved and skipped.
 */
static void assert_stats_add_up(FdpFtl *f, const FdpFtlConfig *c, Events *ev)
{
    const FdpFtlStats *s = fdp_ftl_stats(f);
    const NandModel *m = fdp_ftl_nand(f);
    uint64_t host = 0, moved = 0, runs = 0, erased = 0, free_rus = 0, ev_moved = 0;
    uint64_t ev_skipped = 0, ev_victims = 0;
    uint64_t blocks_per_ru = nand_luns(&c->geo) / c->nrg * c->geo.pls_per_lun;

    g_assert_cmpuint(s->nand_pages_written, ==, s->host_pages_written + s->gc_pages_moved);
    g_assert_cmpuint(m->stats.programs, ==, s->nand_pages_written);
    g_assert_cmpuint(s->blocks_erased, ==, s->rus_erased * blocks_per_ru);
    g_assert_cmpuint(m->stats.erases, ==, s->blocks_erased);
    g_assert_cmpuint(s->rus_erased, ==, s->gc_runs);
    g_assert_cmpfloat(fdp_ftl_waf(f), ==,
                      (double)s->nand_pages_written / (double)s->host_pages_written);
    for (uint32_t h = 0; h < c->nruh; h++) {
        FdpRuhStats r;
        fdp_ftl_ruh_stats(f, h, &r);
        host += r.host_pages_written;
        moved += r.gc_pages_moved;
        if (r.host_pages_written) {
            g_assert_cmpfloat(fdp_ftl_ruh_waf(f, h), ==,
                              (double)(r.host_pages_written + r.gc_pages_moved) /
                              (double)r.host_pages_written);
        }
    }
    g_assert_cmpuint(host, ==, s->host_pages_written);
    g_assert_cmpuint(moved, ==, s->gc_pages_moved);
    for (uint32_t rg = 0; rg < c->nrg; rg++) {
        FdpRgStats r;
        fdp_ftl_rg_stats(f, rg, &r);
        runs += r.gc_runs;
        erased += r.rus_erased;
        free_rus += r.free_rus;
    }
    g_assert_cmpuint(runs, ==, s->gc_runs);
    g_assert_cmpuint(erased, ==, s->rus_erased);
    g_assert_cmpuint(free_rus, ==, s->free_rus);
    g_assert_cmpuint(s->total_rus, ==, (uint64_t)c->nrg * c->geo.blks_per_pl);
    if (ev) {
        for (guint i = 0; i < ev->ev->len; i++) {
            FdpFtlEvent *e = event_at(ev, i);
            if (e->kind == FDP_FTL_EV_REALLOCATED) {
                ev_moved += e->npages;
                ev_victims++;
            } else {
                ev_skipped += e->npages;
            }
        }
        g_assert_cmpuint(ev_moved, ==, s->gc_pages_moved);
        g_assert_cmpuint(ev_skipped, ==, s->pages_skipped);
        g_assert_cmpuint(ev_victims, <=, s->gc_runs);
    }
}

/*
 * A random mix over 4 handles (2 II, 2 PI) and the config's groups: single pages and runs,
 * trims, reads, handle updates, idle periods. ref as assert_matches_reference.
 */
static void random_mix(FdpFtl *f, const FdpFtlConfig *c, uint8_t *ref, GRand *r,
                       uint64_t ops, uint64_t check_every, uint64_t *now)
{
    uint64_t n = c->exposed_pages;

    for (uint64_t op = 1; op <= ops; op++) {
        uint32_t kind = g_rand_int_range(r, 0, 1000), rg = g_rand_int_range(r, 0, c->nrg);
        uint32_t h = g_rand_int_range(r, 0, c->nruh);
        uint64_t lpn = g_rand_int_range(r, 0, n), run = g_rand_int_range(r, 1, 33), len;
        *now += 5 * US;
        if (kind < 700) {
            fdp_ftl_write(f, lpn, 1, rg, h, *now);
            ref[lpn] = h + 1;
        } else if (kind < 850) {
            len = MIN(run, n - lpn);
            fdp_ftl_write(f, lpn, len, rg, h, *now);
            memset(ref + lpn, h + 1, len);
        } else if (kind < 930) {
            len = MIN(run / 2 + 1, n - lpn);
            fdp_ftl_trim(f, lpn, len, *now);
            memset(ref + lpn, 0, len);
        } else if (kind < 980) {
            fdp_ftl_read(f, lpn, MIN(4, n - lpn), *now);
        } else if (kind < 995) {
            fdp_ftl_ruh_update(f, rg, h);
        } else {
            *now += 20 * MS;
            fdp_ftl_idle(f, *now);
        }
        for (uint32_t g = 0; g < c->nrg; g++) {
            FdpRgStats rs;
            fdp_ftl_rg_stats(f, g, &rs);
            g_assert_cmpuint(rs.free_rus, >=, 1);       /* GC's reserve */
        }
        if (check_every && op % check_every == 0) {
            assert_matches_reference(f, c, ref);
        }
    }
}

/* ---- placement and isolation ---- */

/*
 * 10^5 random operations: every lpn keeps the handle of its last write through GC, and no
 * RU ever mixes a PI handle's data with anything else.
 */
static void test_isolation_reference(void)
{
    FdpFtlConfig c = two_groups();
    FdpFtl *f = fdp(c);
    const FdpFtlStats *s = fdp_ftl_stats(f);
    g_autofree uint8_t *ref = g_new0(uint8_t, c.exposed_pages);
    GRand *r = g_rand_new_with_seed(1);
    uint64_t now = 0;
    Events ev;

    events_init(&ev, f);
    random_mix(f, &c, ref, r, 100000, 2000, &now);
    assert_matches_reference(f, &c, ref);
    g_test_message("host %" G_GUINT64_FORMAT " pages, GC runs %" G_GUINT64_FORMAT
                   " (%" G_GUINT64_FORMAT " forced), moved %" G_GUINT64_FORMAT ", WAF %.3f",
                   s->host_pages_written, s->gc_runs, s->gc_forced_runs, s->gc_pages_moved,
                   fdp_ftl_waf(f));
    g_assert_cmpuint(s->gc_runs, >, 1000);
    g_assert_cmpuint(s->gc_forced_runs, <, s->gc_runs);     /* some in the background */
    g_assert_cmpuint(s->gc_pages_moved, >, 0);
    g_assert_cmpuint(s->pages_redirected, ==, 0);           /* both groups had room */
    assert_stats_add_up(f, &c, &ev);
    g_array_free(ev.ev, true);
    g_rand_free(r);
    fdp_ftl_free(f);
}

/*
 * The host puts every page in group 0, which holds fewer than the exposed pages: once group
 * 0 is over-full the rest goes to the same handles' RUs in group 1, isolation intact,
 * nothing stuck, and group 0's GC never grinds on a nearly full group.
 */
static void full_group_redirects(const char *pacing)
{
    /* 7000 pages: group 0 alone holds at most 40 x 128 = 5120 */
    FdpFtlConfig c = config(geo(4, 2, 2, 40, 16), 7000, 2, "iipp");
    g_autofree char *err = NULL;
    FdpFtl *f;

    g_assert_true(ftl_policy_parse(FTL_PACING, pacing, &c.gc_pacing, &err));
    f = fdp(c);
    const FdpFtlStats *s = fdp_ftl_stats(f);
    g_autofree uint8_t *ref = g_new0(uint8_t, c.exposed_pages);
    GRand *r = g_rand_new_with_seed(2);

    for (uint64_t lpn = 0; lpn < c.exposed_pages; lpn += 10) {
        uint32_t h = (lpn / 10) % 4;
        uint64_t len = MIN(10, c.exposed_pages - lpn);
        fdp_ftl_write(f, lpn, len, 0, h, 0);
        memset(ref + lpn, h + 1, len);
    }
    g_assert_cmpuint(s->pages_redirected, >, 0);
    assert_matches_reference(f, &c, ref);
    for (int i = 0; i < 40000; i++) {
        uint64_t lpn = g_rand_int_range(r, 0, c.exposed_pages);
        uint32_t h = g_rand_int_range(r, 0, 4);
        fdp_ftl_write(f, lpn, 1, 0, h, 0);
        ref[lpn] = h + 1;
    }
    assert_matches_reference(f, &c, ref);
    assert_stats_add_up(f, &c, NULL);
    g_test_message("redirected %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " pages, "
                   "GC runs %" G_GUINT64_FORMAT ", WAF %.2f", s->pages_redirected,
                   s->host_pages_written, s->gc_runs, fdp_ftl_waf(f));
    g_assert_cmpuint(s->gc_runs, >, 0);
    g_assert_cmpfloat(fdp_ftl_waf(f), <, 4.0);  /* above 30 if group 0 kept it all */
    g_rand_free(r);
    fdp_ftl_free(f);
}

static void test_full_group_redirects(void)
{
    full_group_redirects("burst");
}

/* Paced GC keeps the group off its forced threshold: it hands pages on when over-full. */
static void test_full_group_redirects_paced(void)
{
    full_group_redirects("proportional");
}

/*
 * Per-handle WAF where isolation decides it, under both pacings: a handle whose data is
 * rewritten whole, in its own persistently isolated RUs, has next to nothing moved; the
 * randomly written handle beside it pays the drive's GC, about alike paced or in bursts.
 */
static void handle_waf(const char *pacing, double *seq_waf, double *rand_waf)
{
    FdpFtlConfig c = config(geo(4, 2, 2, 40, 16), 5000, 1, "pp");
    uint64_t ru = 4 * 2 * 2 * 16, seq = 4 * ru, now = 0;     /* 4 RUs rewritten in turn */
    g_autofree char *err = NULL;
    GRand *r = g_rand_new_with_seed(3);
    FdpRuhStats h0, h1;
    FdpFtl *f;

    g_assert_true(ftl_policy_parse(FTL_PACING, pacing, &c.gc_pacing, &err));
    f = fdp(c);
    fdp_ftl_write(f, 0, c.exposed_pages, 0, 1, now);
    for (int i = 0; i < 60000; i++, now += 20 * US) {
        if (i % 2) {
            fdp_ftl_write(f, (i / 2) % seq, 1, 0, 0, now);
        } else {
            fdp_ftl_write(f, seq + g_rand_int_range(r, 0, c.exposed_pages - seq), 1, 0, 1,
                          now);
        }
    }
    fdp_ftl_ruh_stats(f, 0, &h0);
    fdp_ftl_ruh_stats(f, 1, &h1);
    *seq_waf = 1.0 + (double)h0.gc_pages_moved / h0.host_pages_written;
    *rand_waf = 1.0 + (double)h1.gc_pages_moved / h1.host_pages_written;
    g_test_message("%s: handle 0 WAF %.3f, handle 1 WAF %.3f", pacing, *seq_waf, *rand_waf);
    g_rand_free(r);
    fdp_ftl_free(f);
}

static void test_handle_waf_paced(void)
{
    double seq_b, rand_b, seq_p, rand_p;

    handle_waf("burst", &seq_b, &rand_b);
    handle_waf("proportional", &seq_p, &rand_p);
    /*
     * Measured: burst 1.000 and 1.194, proportional 1.025 and 1.240 (paced GC collects
     * earlier, so now and then one of handle 0's RUs while it is being rewritten).
     */
    g_assert_cmpfloat(seq_b, <, 1.01);
    g_assert_cmpfloat(seq_p, <, 1.05);
    g_assert_cmpfloat(rand_b, >, 1.1);          /* GC did run on the random handle */
    g_assert_cmpfloat(fabs(rand_p / rand_b - 1), <, 0.06);
}

/* Consecutive pages of a handle go over the group's chips, then planes, then pages. */
static void test_striping(void)
{
    FdpFtlConfig c = two_groups();
    FdpFtl *f = fdp(c);
    NandAddr a;
    uint32_t rg, ru, ruh;

    g_assert_cmpuint(fdp_ftl_config(f)->exposed_pages, ==, c.exposed_pages);
    g_assert_cmpuint(fdp_ftl_config(f)->nrg, ==, 2);
    g_assert_cmpmem(fdp_ftl_config(f)->ruh_type, 4, c.ruh_type, 4);
    g_assert_cmpuint(fdp_ftl_ru_pages(f), ==, 4 * 2 * 16);
    g_assert_cmpuint(fdp_ftl_rus_per_rg(f), ==, 40);
    fdp_ftl_write(f, 100, 16, 1, 2, 0);
    for (uint32_t i = 0; i < 16; i++) {
        uint32_t chip = 4 + i % 4;      /* group 1: chips 4..7, c = lun * nchs + ch */
        g_assert_true(fdp_ftl_lookup(f, 100 + i, &a, &rg, &ru, &ruh));
        g_assert_cmpuint(rg, ==, 1);
        g_assert_cmpuint(ruh, ==, 2);
        g_assert_cmpuint(a.ch, ==, chip % 4);
        g_assert_cmpuint(a.lun, ==, chip / 4);
        g_assert_cmpuint(a.pl, ==, (i / 4) % 2);
        g_assert_cmpuint(a.pg, ==, i / 8);
        g_assert_cmpuint(a.blk, ==, ru);
    }
    /* one program per chip and page: both planes at once */
    g_assert_cmpuint(fdp_ftl_nand(f)->stats.multiplane_ops, ==, 8);
    g_assert_cmpuint(fdp_ftl_nand(f)->stats.programs, ==, 16);
    fdp_ftl_free(f);
}

/* ---- statistics ---- */

static void test_stats_add_up(void)
{
    FdpFtlConfig c = two_groups();
    FdpFtl *f = fdp(c);
    const FdpFtlStats *s = fdp_ftl_stats(f);
    g_autofree uint8_t *ref = g_new0(uint8_t, c.exposed_pages);
    GRand *r = g_rand_new_with_seed(3);
    uint64_t now = 0, host[4] = { 0 };
    Events ev;

    events_init(&ev, f);
    g_assert_cmpfloat(fdp_ftl_waf(f), ==, 1.0);
    g_assert_cmpfloat(fdp_ftl_ruh_waf(f, 0), ==, 1.0);
    g_assert_cmpuint(s->free_rus, ==, 80);
    /* handles write different amounts: the per-handle counters must tell them apart */
    for (int i = 0; i < 30000; i++) {
        uint32_t h = i % 10 < 5 ? 0 : i % 10 < 8 ? 1 : i % 10 < 9 ? 2 : 3;
        uint64_t lpn = g_rand_int_range(r, 0, c.exposed_pages);
        fdp_ftl_write(f, lpn, 1, i % 2, h, now += US);
        host[h]++;
        ref[lpn] = h + 1;
    }
    random_mix(f, &c, ref, r, 20000, 0, &now);
    for (uint32_t h = 0; h < 4; h++) {
        FdpRuhStats rs, sum = { 0 };
        fdp_ftl_ruh_stats(f, h, &rs);
        g_assert_cmpuint(rs.host_pages_written, >=, host[h]);
        for (uint32_t rg = 0; rg < 2; rg++) {
            FdpRuhStats x;
            fdp_ftl_ruh_rg_stats(f, rg, h, &x);
            sum.host_pages_written += x.host_pages_written;
            sum.gc_pages_moved += x.gc_pages_moved;
            sum.rus_in_use += x.rus_in_use;
            sum.valid_pages += x.valid_pages;
        }
        g_assert_cmpmem(&sum, sizeof(sum), &rs, sizeof(rs));
        g_assert_cmpuint(rs.rus_in_use, >, 0);
        g_test_message("handle %u: host %" G_GUINT64_FORMAT " moved %" G_GUINT64_FORMAT
                       " RUs %" G_GUINT64_FORMAT " valid %" G_GUINT64_FORMAT " WAF %.3f", h,
                       rs.host_pages_written, rs.gc_pages_moved, rs.rus_in_use,
                       rs.valid_pages, fdp_ftl_ruh_waf(f, h));
    }
    g_assert_cmpuint(s->gc_runs, >, 0);
    g_assert_cmpuint(s->pages_skipped, >, 0);       /* handle updates closed RUs early */
    assert_matches_reference(f, &c, ref);
    assert_stats_add_up(f, &c, &ev);
    g_array_free(ev.ev, true);
    g_rand_free(r);
    fdp_ftl_free(f);
}

/* ---- WAF ---- */

/* 1 group of 8 chips, 1 plane: RUs of 128 pages, 40 of them. */
static FdpFtlConfig one_group(uint64_t exposed, const char *types)
{
    return config(geo(4, 2, 1, 40, 16), exposed, 1, types);
}

static void test_waf_sequential(void)
{
    FdpFtlConfig c = one_group(24 * 128, "iipp");
    FdpFtl *f = fdp(c);
    const FdpFtlStats *s = fdp_ftl_stats(f);

    for (int pass = 0; pass < 8; pass++) {
        for (uint64_t lpn = 0; lpn < c.exposed_pages; lpn += 16) {
            fdp_ftl_write(f, lpn, 16, 0, 0, 0);
        }
    }
    g_assert_cmpuint(s->gc_runs, >, 100);
    g_assert_cmpuint(s->gc_pages_moved, ==, 0);     /* every victim wholly stale */
    g_assert_cmpfloat(fdp_ftl_waf(f), ==, 1.0);
    g_assert_cmpfloat(fdp_ftl_ruh_waf(f, 0), ==, 1.0);
    assert_consistent(f);
    fdp_ftl_free(f);
}

/*
 * Hot random writes over 1/16 of the space mixed with a cold sequential stream over the
 * rest, half and half: through one handle, or hot in handle 0 and cold in handle 1.
 */
static double hot_cold_waf(bool split, const char *types)
{
    FdpFtlConfig c = one_group(28 * 128, types);
    FdpFtl *f = fdp(c);
    const FdpFtlStats *s = fdp_ftl_stats(f);
    uint64_t n = c.exposed_pages, hot = n / 16, cold = hot, h0, n0;
    GRand *r = g_rand_new_with_seed(4);
    double waf;

    fdp_ftl_write(f, 0, hot, 0, 0, 0);
    fdp_ftl_write(f, hot, n - hot, 0, split, 0);
    for (int round = 0; round < 2; round++) {
        h0 = s->host_pages_written;
        n0 = s->nand_pages_written;
        for (uint64_t i = 0; i < 8 * n; i++) {
            if (i % 2) {
                fdp_ftl_write(f, g_rand_int_range(r, 0, hot), 1, 0, 0, 0);
            } else {
                fdp_ftl_write(f, cold, 1, 0, split, 0);
                cold = cold + 1 < n ? cold + 1 : hot;
            }
        }
    }
    waf = (double)(s->nand_pages_written - n0) / (double)(s->host_pages_written - h0);
    g_test_message("hot/cold %s, handles %s: steady WAF %.3f (handle 0 %.3f, handle 1 %.3f)",
                   split ? "split" : "mixed", types, waf, fdp_ftl_ruh_waf(f, 0),
                   fdp_ftl_ruh_waf(f, 1));
    assert_consistent(f);
    g_rand_free(r);
    fdp_ftl_free(f);
    return waf;
}

static void test_waf_hot_cold(void)
{
    double mixed = hot_cold_waf(false, "ii"), split = hot_cold_waf(true, "ii");
    double split_pi = hot_cold_waf(true, "pp");

    g_assert_cmpfloat(mixed, >, 1.2);
    g_assert_cmpfloat(split, <, 0.85 * mixed);
    g_assert_cmpfloat(split_pi, <, 0.85 * mixed);
}

/* ---- GC thresholds ---- */

/*
 * Forced GC starts when free RUs fall to what the handles not open yet and the GC RUs may
 * take, plus the reserve: (4 - open host RUs) + 3 + 1 (the percentage gives 2). Handles 0
 * and 1 take turns, each rewriting its own RU's worth of pages: every victim wholly stale.
 */
static void test_forced_threshold(void)
{
    FdpFtlConfig c = one_group(24 * 128, "iipp");
    FdpFtl *f = fdp(c);
    const FdpFtlStats *s = fdp_ftl_stats(f);
    uint64_t p = fdp_ftl_ru_pages(f);
    uint32_t seen[3] = { 0, 0, 0 };

    for (uint64_t i = 0; i < 60 * p; i++) {
        uint32_t h = i % 2, open = 0;
        uint64_t free_before = s->free_rus, runs = s->gc_runs, thres;
        for (uint32_t k = 0; k < 4; k++) {
            open += fdp_ftl_ru_avail(f, 0, k) < p;
        }
        thres = (4 - open) + 3 + 1;
        fdp_ftl_write(f, h * p + (i / 2) % p, 1, 0, h, 0);
        g_assert_cmpint(s->gc_runs > runs, ==, free_before <= thres);
        seen[open] += s->gc_runs > runs;
    }
    g_assert_cmpuint(seen[0], >, 0);        /* at 8 free RUs and at 7 */
    g_assert_cmpuint(seen[1], >, 0);
    g_assert_cmpuint(s->gc_pages_moved, ==, 0);
    assert_consistent(f);
    fdp_ftl_free(f);
}

/*
 * The smallest group the check accepts, full, then random overwrites through one handle:
 * forced GC always finds garbage, so it moves a bounded number of pages per host page. One
 * RU fewer (accepted before: the data's RUs rounded down) left no RU of garbage when the
 * host and GC RUs turned over together, and GC moved up to a whole RU (41 pages) per page.
 */
static void test_min_rus_long_rus(void)
{
    /* 1 chip, RUs of 41 pages: 1024 exposed pages are 24.98 RUs, 25 with their slack */
    FdpFtlConfig c = config(geo(1, 1, 1, 1, 41), 1024, 1, "i");
    GRand *r = g_rand_new_with_seed(41);
    uint64_t now = 0;
    const FdpFtlStats *s;
    char *err = NULL;
    FdpFtl *f;

    c.gc_thres_pcent_high = 99;
    while (!fdp_ftl_config_check(&c, &err)) {
        g_clear_pointer(&err, g_free);
        c.geo.blks_per_pl++;
    }
    g_assert_cmpuint(c.geo.blks_per_pl, ==, 25 + 1 + 1 + 1 + 1);
    f = fdp(c);
    s = fdp_ftl_stats(f);
    for (uint64_t lpn = 0; lpn < c.exposed_pages; lpn++) {
        fdp_ftl_write(f, lpn, 1, 0, 0, now);
        now += 10 * US;
    }
    for (uint64_t i = 0; i < 4 * c.exposed_pages; i++) {
        fdp_ftl_write(f, g_rand_int_range(r, 0, c.exposed_pages), 1, 0, 0, now);
        now += 10 * US;
        /* 7.0 per page at this size; 19.8 with one RU fewer */
        g_assert_cmpuint(s->gc_pages_moved, <, 12 * (i + 1) + 41);
    }
    g_test_message("4 capacities of random writes: %" G_GUINT64_FORMAT " pages moved, %"
                   G_GUINT64_FORMAT " GC runs", s->gc_pages_moved, s->gc_runs);
    g_assert_cmpuint(s->gc_runs, >, 0);
    assert_consistent(f);
    g_rand_free(r);
    fdp_ftl_free(f);
}

/*
 * Background GC in idle time: one victim per group per call, only when the group's chips
 * are idle, only at or below gc_thres_pcent's share (20 of 40 free RUs here), and only
 * victims worth it; none at 75 % (10 free RUs).
 */
static void test_background_gc(void)
{
    for (int pcent = 50; pcent <= 75; pcent += 25) {
        FdpFtlConfig c = one_group(24 * 128, "i");
        FdpFtl *f;
        const FdpFtlStats *s;
        uint64_t t;

        c.gc_thres_pcent = pcent;
        f = fdp(c);
        s = fdp_ftl_stats(f);
        fdp_ftl_write(f, 0, c.exposed_pages, 0, 0, 0);      /* 24 RUs */
        fdp_ftl_write(f, 0, 5 * 128, 0, 0, 0);              /* 5 more, the first 5 stale */
        g_assert_cmpuint(s->free_rus, ==, 11);
        fdp_ftl_idle(f, 1 * MS);                            /* the chips are still busy */
        g_assert_cmpuint(s->gc_runs, ==, 0);
        t = nand_all_idle_ns(fdp_ftl_nand(f));
        for (int i = 0; i < 8; i++) {
            uint64_t runs = s->gc_runs;
            fdp_ftl_idle(f, t);
            fdp_ftl_idle(f, t + 1);                         /* its erases still run */
            g_assert_cmpuint(s->gc_runs, <=, runs + 1);
            t += 3 * MS;
        }
        g_assert_cmpuint(s->gc_runs, ==, pcent == 50 ? 5 : 0);
        g_assert_cmpuint(s->free_rus, ==, pcent == 50 ? 16 : 11);
        g_assert_cmpuint(s->gc_forced_runs, ==, 0);
        assert_consistent(f);
        fdp_ftl_free(f);
    }
}

/* ---- handle updates, controller resets, time limits ---- */

static void test_ruh_update(void)
{
    FdpFtlConfig c = two_groups();
    FdpFtl *f = fdp(c);
    const FdpFtlStats *s = fdp_ftl_stats(f);
    uint64_t p = fdp_ftl_ru_pages(f);
    uint32_t ru0, ru1;
    Events ev;

    events_init(&ev, f);
    /* nothing open: a whole RU available, an update changes nothing */
    g_assert_cmpuint(fdp_ftl_ru_avail(f, 1, 2), ==, p);
    g_assert_cmpuint(fdp_ftl_ru_opened_ns(f, 1, 2), ==, UINT64_MAX);
    g_assert_cmpuint(fdp_ftl_ruh_update(f, 1, 2), ==, 0);
    g_assert_cmpuint(ev.ev->len, ==, 0);

    fdp_ftl_write(f, 0, 10, 1, 2, 7 * US);
    g_assert_cmpuint(fdp_ftl_ru_avail(f, 1, 2), ==, p - 10);
    g_assert_cmpuint(fdp_ftl_ru_avail(f, 0, 2), ==, p);     /* other group: untouched */
    g_assert_cmpuint(fdp_ftl_ru_opened_ns(f, 1, 2), ==, 7 * US);
    g_assert_true(fdp_ftl_lookup(f, 0, NULL, NULL, &ru0, NULL));
    g_assert_cmpuint(fdp_ftl_ruh_update(f, 1, 2), ==, p - 10);
    g_assert_cmpuint(ev.ev->len, ==, 1);
    g_assert_cmpint(event_at(&ev, 0)->kind, ==, FDP_FTL_EV_RU_NOT_FULL);
    g_assert_cmpuint(event_at(&ev, 0)->rg, ==, 1);
    g_assert_cmpuint(event_at(&ev, 0)->ruh, ==, 2);
    g_assert_cmpuint(event_at(&ev, 0)->npages, ==, p - 10);
    g_assert_cmpuint(s->pages_skipped, ==, p - 10);
    g_assert_cmpuint(fdp_ftl_ru_avail(f, 1, 2), ==, p);
    g_assert_cmpuint(fdp_ftl_ru_opened_ns(f, 1, 2), ==, UINT64_MAX);
    g_assert_cmpuint(fdp_ftl_ruh_update(f, 1, 2), ==, 0);   /* again: nothing open */
    g_assert_cmpuint(ev.ev->len, ==, 1);
    /* the next write opens another RU; the data written before stays */
    fdp_ftl_write(f, 10, 1, 1, 2, 8 * US);
    g_assert_true(fdp_ftl_lookup(f, 10, NULL, NULL, &ru1, NULL));
    g_assert_cmpuint(ru1, !=, ru0);
    g_assert_true(fdp_ftl_lookup(f, 9, NULL, NULL, &ru1, NULL));
    g_assert_cmpuint(ru1, ==, ru0);
    g_assert_cmpuint(fdp_ftl_ru_avail(f, 1, 2), ==, p - 1);
    assert_consistent(f);

    /* a controller reset closes every partly written host RU; a full one is not open */
    g_array_set_size(ev.ev, 0);
    fdp_ftl_write(f, 100, 3, 0, 0, 9 * US);
    fdp_ftl_write(f, 200, p, 0, 1, 9 * US);                 /* exactly one RU: closed */
    fdp_ftl_write(f, 400, 5, 0, 3, 9 * US);
    g_assert_cmpuint(fdp_ftl_ru_avail(f, 0, 1), ==, p);
    g_assert_cmpuint(fdp_ftl_close_open(f), ==, 3);         /* (0,0), (0,3), (1,2) */
    g_assert_cmpuint(ev.ev->len, ==, 3);
    for (guint i = 0; i < 3; i++) {
        FdpFtlEvent *e = event_at(&ev, i);
        g_assert_cmpint(e->kind, ==, FDP_FTL_EV_RU_NOT_FULL);
        g_assert_cmpuint(e->npages, ==, e->ruh == 0 ? p - 3 : e->ruh == 3 ? p - 5 : p - 1);
        g_assert_cmpuint(e->rg, ==, e->ruh == 2 ? 1 : 0);
    }
    for (uint32_t rg = 0; rg < 2; rg++) {
        for (uint32_t h = 0; h < 4; h++) {
            g_assert_cmpuint(fdp_ftl_ru_avail(f, rg, h), ==, p);
        }
    }
    g_assert_cmpuint(fdp_ftl_close_open(f), ==, 0);
    g_assert_cmpuint(s->pages_skipped, ==, (p - 10) + (p - 3) + (p - 5) + (p - 1));
    assert_consistent(f);
    g_array_free(ev.ev, true);
    fdp_ftl_free(f);
}

static void test_time_limit(void)
{
    FdpFtlConfig c = two_groups();
    FdpFtl *f;
    uint64_t p;
    uint32_t ru0, ru1;
    Events ev;

    c.ru_time_limit_ns = 10 * MS;
    f = fdp(c);
    p = fdp_ftl_ru_pages(f);
    events_init(&ev, f);
    fdp_ftl_write(f, 0, 4, 0, 1, 1 * MS);
    fdp_ftl_write(f, 50, 6, 1, 3, 5 * MS);
    fdp_ftl_idle(f, 11 * MS);                   /* the first is 10 ms old: not past it */
    g_assert_cmpuint(ev.ev->len, ==, 0);
    fdp_ftl_idle(f, 12 * MS);
    g_assert_cmpuint(ev.ev->len, ==, 1);
    g_assert_cmpint(event_at(&ev, 0)->kind, ==, FDP_FTL_EV_TIME_LIMIT);
    g_assert_cmpuint(event_at(&ev, 0)->rg, ==, 0);
    g_assert_cmpuint(event_at(&ev, 0)->ruh, ==, 1);
    g_assert_cmpuint(event_at(&ev, 0)->npages, ==, p - 4);
    g_assert_cmpuint(fdp_ftl_ru_avail(f, 0, 1), ==, p);
    g_assert_cmpuint(fdp_ftl_ru_avail(f, 1, 3), ==, p - 6);
    /* a write finds the other one expired: closed first, the page goes to a new RU */
    g_assert_true(fdp_ftl_lookup(f, 50, NULL, NULL, &ru0, NULL));
    fdp_ftl_write(f, 60, 1, 1, 3, 16 * MS);
    g_assert_cmpuint(ev.ev->len, ==, 2);
    g_assert_cmpint(event_at(&ev, 1)->kind, ==, FDP_FTL_EV_TIME_LIMIT);
    g_assert_cmpuint(event_at(&ev, 1)->npages, ==, p - 6);
    g_assert_true(fdp_ftl_lookup(f, 60, NULL, NULL, &ru1, NULL));
    g_assert_cmpuint(ru1, !=, ru0);
    g_assert_cmpuint(fdp_ftl_ru_opened_ns(f, 1, 3), ==, 16 * MS);
    g_assert_cmpuint(fdp_ftl_stats(f)->pages_skipped, ==, (p - 4) + (p - 6));
    assert_consistent(f);
    g_array_free(ev.ev, true);
    fdp_ftl_free(f);
}

/* ---- timing ---- */

static void test_timing(void)
{
    FdpFtlConfig c = two_groups();
    FdpFtl *f = fdp(c);
    uint64_t t = 1000 * US;

    /* one page: data-in then program */
    g_assert_cmpuint(fdp_ftl_write(f, 0, 1, 0, 0, t), ==, t + 10 * US + 200 * US);
    g_assert_cmpuint(fdp_ftl_flush(f, t), ==, t + 210 * US);
    /* a mapped read and an unmapped one each cost tR + data-out */
    t += 1000 * US;
    g_assert_cmpuint(fdp_ftl_read(f, 0, 1, t), ==, t + 50 * US);
    t += 1000 * US;
    g_assert_cmpuint(fdp_ftl_read(f, 3000, 1, t), ==, t + 50 * US);
    g_assert_cmpuint(fdp_ftl_stats(f)->unmapped_pages_read, ==, 1);
    g_assert_cmpuint(fdp_ftl_nand(f)->stats.reads, ==, 2);
    /* 8 pages on 4 chips x 2 planes: one two-plane program per chip, in parallel */
    t += 1000 * US;
    g_assert_cmpuint(fdp_ftl_write(f, 100, 8, 1, 1, t), ==, t + 20 * US + 200 * US);
    g_assert_cmpuint(fdp_ftl_flush(f, t), ==, t + 220 * US);
    g_assert_cmpuint(fdp_ftl_flush(f, t + 300 * US), ==, t + 300 * US);
    fdp_ftl_free(f);
}

/* Forced GC's work goes before the host's pages on the same chips: the write waits. */
static void test_forced_gc_delays_write(void)
{
    FdpFtlConfig c = one_group(24 * 128, "i");
    FdpFtl *f = fdp(c);
    const FdpFtlStats *s = fdp_ftl_stats(f);
    uint64_t t = 0, runs, done;
    GRand *r = g_rand_new_with_seed(5);

    fdp_ftl_write(f, 0, c.exposed_pages, 0, 0, 0);
    for (;;) {
        t = MAX(t, fdp_ftl_flush(f, t)) + MS;       /* idle flash before every write */
        runs = s->gc_runs;
        done = fdp_ftl_write(f, g_rand_int_range(r, 0, c.exposed_pages), 1, 0, 0, t);
        if (s->gc_runs > runs) {
            break;
        }
        g_assert_cmpuint(done, ==, t + 210 * US);
    }
    g_assert_cmpuint(s->gc_forced_runs, ==, s->gc_runs);
    g_assert_cmpuint(done, >=, t + 2000 * US + 210 * US);  /* at least an erase before */
    g_rand_free(r);
    fdp_ftl_free(f);
}

/* ---- the store ---- */

static void assert_same_state(FdpFtl *a, FdpFtl *b, const FdpFtlConfig *c)
{
    for (uint64_t lpn = 0; lpn < c->exposed_pages; lpn++) {
        NandAddr x, y;
        uint32_t rx = 0, ux = 0, hx = 0, ry = 0, uy = 0, hy = 0;
        bool mx = fdp_ftl_lookup(a, lpn, &x, &rx, &ux, &hx);
        bool my = fdp_ftl_lookup(b, lpn, &y, &ry, &uy, &hy);
        g_assert_cmpint(mx, ==, my);
        if (mx) {
            g_assert_cmpmem(&x, sizeof(x), &y, sizeof(y));
            g_assert_cmpuint(rx, ==, ry);
            g_assert_cmpuint(ux, ==, uy);
            g_assert_cmpuint(hx, ==, hy);
        }
    }
    g_assert_cmpmem(fdp_ftl_stats(a), sizeof(FdpFtlStats), fdp_ftl_stats(b),
                    sizeof(FdpFtlStats));
    for (uint32_t rg = 0; rg < c->nrg; rg++) {
        FdpRgStats gx, gy;
        fdp_ftl_rg_stats(a, rg, &gx);
        fdp_ftl_rg_stats(b, rg, &gy);
        g_assert_cmpmem(&gx, sizeof(gx), &gy, sizeof(gy));
        for (uint32_t h = 0; h < c->nruh; h++) {
            FdpRuhStats sx, sy;
            fdp_ftl_ruh_rg_stats(a, rg, h, &sx);
            fdp_ftl_ruh_rg_stats(b, rg, h, &sy);
            g_assert_cmpmem(&sx, sizeof(sx), &sy, sizeof(sy));
            g_assert_cmpuint(fdp_ftl_ru_avail(a, rg, h), ==, fdp_ftl_ru_avail(b, rg, h));
            g_assert_cmpuint(fdp_ftl_ru_opened_ns(a, rg, h), ==,
                             fdp_ftl_ru_opened_ns(b, rg, h));
        }
    }
}

static FdpFtl *attach(FdpFtlConfig c, void *store)
{
    FdpFtl *f = fdp(c);
    char *err = NULL;
    bool ok = fdp_ftl_attach_store(f, store, &err);

    g_assert_cmpstr(err, ==, NULL);
    g_assert_true(ok);
    return f;
}

/* Attaching refuses: *err contains want. */
static void assert_refused(FdpFtlConfig c, void *store, const char *want)
{
    FdpFtl *f = fdp(c);
    char *err = NULL;

    g_assert_false(fdp_ftl_attach_store(f, store, &err));
    g_assert_nonnull(err);
    g_test_message("refused: %s", err);
    g_assert_nonnull(strstr(err, want));
    g_free(err);
    fdp_ftl_free(f);
}

static void test_store_reload(void)
{
    FdpFtlConfig c = two_groups();
    uint64_t bytes = fdp_ftl_store_bytes(&c), now = 0;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *copy = NULL;
    g_autofree uint8_t *ref = g_new0(uint8_t, c.exposed_pages);
    GRand *r = g_rand_new_with_seed(6), *r2;
    FdpFtl *f = attach(c, store), *g;

    /* a blank store formats: an empty drive */
    g_assert_cmpuint(fdp_ftl_stats(f)->free_rus, ==, 80);
    g_assert_false(fdp_ftl_lookup(f, 0, NULL, NULL, NULL, NULL));
    random_mix(f, &c, ref, r, 30000, 0, &now);
    g_assert_cmpuint(fdp_ftl_stats(f)->gc_runs, >, 0);
    copy = g_memdup2(store, bytes);
    g = attach(c, copy);
    assert_same_state(f, g, &c);
    assert_matches_reference(g, &c, ref);
    /* the same operations from here on give the same placement (free lists in order) */
    r2 = g_rand_copy(r);
    {
        uint64_t now2 = now;
        g_autofree uint8_t *ref2 = g_memdup2(ref, c.exposed_pages);
        /* no idle: background GC depends on the timelines, which are not saved */
        for (int i = 0; i < 20000; i++) {
            uint64_t lpn = g_rand_int_range(r, 0, c.exposed_pages);
            uint32_t h = g_rand_int_range(r, 0, 4), rg = g_rand_int_range(r, 0, 2);
            fdp_ftl_write(f, lpn, 1, rg, h, now += US);
            lpn = g_rand_int_range(r2, 0, c.exposed_pages);
            h = g_rand_int_range(r2, 0, 4), rg = g_rand_int_range(r2, 0, 2);
            fdp_ftl_write(g, lpn, 1, rg, h, now2 += US);
            ref[lpn] = ref2[lpn] = h + 1;
        }
        assert_same_state(f, g, &c);
        g_assert_cmpmem(store, bytes, copy, bytes);     /* and the same bytes saved */
    }
    fdp_ftl_free(g);

    /* a kill now: the store as it is, loaded again */
    memcpy(copy, store, bytes);
    g = attach(c, copy);
    assert_same_state(f, g, &c);
    fdp_ftl_free(g);

    /* the configuration must match */
    {
        FdpFtlConfig o = c;
        o.nrg = 4;
        assert_refused(o, store, "fdp_nrg = 2, the device now has 4");
        o = c;
        o.ruh_type[3] = FDP_RUH_INITIALLY_ISOLATED;
        assert_refused(o, store, "fdp_ruh_types=ii:ii:pi:pi, the device now has ii:ii:pi:ii");
        o = c;
        o.exposed_pages -= 1;
        assert_refused(o, store, "devsz_mb");
        o = c;
        o.geo.pgs_per_blk = 8;
        o.geo.blks_per_pl = 80;
        assert_refused(o, store, "blks_per_pl");
    }
    /* a damaged header is refused, not formatted over */
    memcpy(copy, store, bytes);
    copy[40] ^= 0x10;
    assert_refused(c, copy, "damaged");
    /* no header but not blank: refused */
    memset(copy, 0, bytes);
    copy[bytes - 3] = 1;
    assert_refused(c, copy, "not blank");
    g_rand_free(r);
    g_rand_free(r2);
    fdp_ftl_free(f);
}

/* A mapping entry that fails its check is dropped; the rest loads. */
static void test_store_bad_entry(void)
{
    FdpFtlConfig c = two_groups();
    uint64_t bytes = fdp_ftl_store_bytes(&c), now = 0;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *copy = NULL;
    g_autofree uint8_t *ref = g_new0(uint8_t, c.exposed_pages);
    GRand *r = g_rand_new_with_seed(7);
    FdpFtl *f = attach(c, store), *g;
    const uint64_t bad[] = { 17, 2000, 4095 };

    random_mix(f, &c, ref, r, 20000, 0, &now);
    for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
        fdp_ftl_write(f, bad[i], 1, 1, 3, now);
        ref[bad[i]] = 4;
    }
    fdp_ftl_free(f);
    /* a torn entry (its ppn changed), a foreign one (another lpn's), a handle changed */
    store[fdp_ftl_store_map_offset(&c, 17)] ^= 0x01;
    memcpy(store + fdp_ftl_store_map_offset(&c, 4095),
           store + fdp_ftl_store_map_offset(&c, 2000), 8);
    store[fdp_ftl_store_map_offset(&c, 2000) + 5] ^= 0x01;
    g = attach(c, store);
    for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_false(fdp_ftl_lookup(g, bad[i], NULL, NULL, NULL, NULL));
        ref[bad[i]] = 0;
    }
    /* everything else as it was; valid counts rebuilt without them */
    assert_matches_reference(g, &c, ref);
    /* the dropped entries are cleared in the store too: a second load agrees */
    copy = g_memdup2(store, bytes);
    f = attach(c, copy);
    assert_same_state(g, f, &c);
    fdp_ftl_free(f);
    random_mix(g, &c, ref, r, 5000, 1000, &now);
    g_rand_free(r);
    fdp_ftl_free(g);
}

/* RU records that fail their CRC are repaired from the mapping; nothing is lost. */
static void test_store_bad_ru_record(void)
{
    FdpFtlConfig c = two_groups();
    uint64_t bytes = fdp_ftl_store_bytes(&c), p, now = 0;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *ref = g_new0(uint8_t, c.exposed_pages);
    GRand *r = g_rand_new_with_seed(8);
    FdpFtl *f = attach(c, store), *g;
    uint32_t closed_ru, open_ru, rg;

    p = fdp_ftl_ru_pages(f);
    fdp_ftl_write(f, 0, p, 1, 2, 0);                /* one whole RU: closed */
    fdp_ftl_write(f, p, 10, 1, 2, 0);               /* the next one: open, 10 pages */
    memset(ref, 3, p + 10);
    g_assert_true(fdp_ftl_lookup(f, 0, NULL, &rg, &closed_ru, NULL));
    g_assert_true(fdp_ftl_lookup(f, p, NULL, &rg, &open_ru, NULL));
    g_assert_cmpuint(rg, ==, 1);
    g_assert_cmpuint(fdp_ftl_ru_avail(f, 1, 2), ==, p - 10);
    fdp_ftl_free(f);
    store[fdp_ftl_store_ru_offset(&c, 1, closed_ru) + 8] ^= 0x04;
    store[fdp_ftl_store_ru_offset(&c, 1, open_ru)] ^= 0x02;
    g = attach(c, store);
    assert_matches_reference(g, &c, ref);
    g_assert_cmpuint(fdp_ftl_ru_avail(g, 1, 2), ==, p);     /* the open one: closed */
    g_assert_cmpuint(fdp_ftl_close_open(g), ==, 0);
    /* GC collects the repaired RUs like any other */
    random_mix(g, &c, ref, r, 30000, 3000, &now);
    g_assert_cmpuint(fdp_ftl_stats(g)->gc_runs, >, 80);
    fdp_ftl_free(g);

    /* a free RU's record damaged: it comes back closed and empty, GC returns it */
    memset(store, 0, bytes);
    f = attach(c, store);
    fdp_ftl_free(f);
    store[fdp_ftl_store_ru_offset(&c, 0, 5) + 1] = 0x7f;
    g = attach(c, store);
    g_assert_cmpuint(fdp_ftl_stats(g)->free_rus, ==, 79);
    assert_consistent(g);
    memset(ref, 0, c.exposed_pages);
    random_mix(g, &c, ref, r, 20000, 5000, &now);
    g_rand_free(r);
    fdp_ftl_free(g);
}

/* The two statistics slots: the older is written, the newer valid one wins. */
static void test_store_stats_survive(void)
{
    FdpFtlConfig c = two_groups();
    uint64_t bytes = fdp_ftl_store_bytes(&c);
    g_autofree uint8_t *store = g_malloc0(bytes);
    FdpFtl *f = attach(c, store), *g;
    FdpFtlStats want;

    fdp_ftl_write(f, 0, 300, 0, 1, 0);
    fdp_ftl_count_host_bytes_written(f, 1, 300 * 4096 - 1024);    /* pages partly written */
    fdp_ftl_write(f, 0, 300, 1, 2, 0);
    fdp_ftl_count_host_bytes_written(f, 0, 512);
    fdp_ftl_write(f, 17, 1, 0, 3, 0);
    fdp_ftl_count_host_bytes_read(f, 7 * 4096);
    fdp_ftl_read(f, 0, 7, 0);
    fdp_ftl_count_host_bytes_read(f, 1536);
    fdp_ftl_read(f, 4000, 3, 0);
    fdp_ftl_trim(f, 10, 5, 0);
    fdp_ftl_ruh_update(f, 1, 2);
    want = *fdp_ftl_stats(f);
    fdp_ftl_free(f);
    g = attach(c, store);
    g_assert_cmpmem(fdp_ftl_stats(g), sizeof(want), &want, sizeof(want));
    g_assert_cmpuint(want.host_pages_read, ==, 10);
    g_assert_cmpuint(want.unmapped_pages_read, ==, 3);
    g_assert_cmpuint(want.pages_trimmed, ==, 5);
    g_assert_cmpuint(want.host_pages_written, ==, 601);
    g_assert_cmpuint(want.host_bytes_written, ==, 300 * 4096 - 1024 + 512);
    g_assert_cmpuint(want.host_bytes_read, ==, 7 * 4096 + 1536);
    fdp_ftl_free(g);
}

/*
 * The RUs' erases come back into the NAND model at a load: with read retry on, reading
 * every page costs the same retries after a reload as before it (a new model counted none).
 */
static void test_store_wear(void)
{
    FdpFtlConfig c = two_groups();
    uint64_t bytes = fdp_ftl_store_bytes(&c), now = 0, before, after;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *ref = g_new0(uint8_t, c.exposed_pages);
    GRand *r = g_rand_new_with_seed(5);
    FdpFtl *f, *g;

    c.tm.retry_pe = 2;
    c.tm.retry_max = 64;
    f = attach(c, store);
    random_mix(f, &c, ref, r, 30000, 0, &now);
    g_assert_cmpuint(fdp_ftl_stats(f)->rus_erased, >, 4 * 80);
    fdp_ftl_flush(f, now);
    now = nand_all_idle_ns(fdp_ftl_nand(f)) + MS;
    before = fdp_ftl_nand(f)->stats.read_retries;
    fdp_ftl_read(f, 0, c.exposed_pages, now);
    before = fdp_ftl_nand(f)->stats.read_retries - before;
    g = attach(c, store);
    after = fdp_ftl_nand(g)->stats.read_retries;
    fdp_ftl_read(g, 0, c.exposed_pages, now);
    after = fdp_ftl_nand(g)->stats.read_retries - after;
    g_test_message("read retries of every page: %" G_GUINT64_FORMAT " before the reload, %"
                   G_GUINT64_FORMAT " after", before, after);
    g_assert_cmpuint(before, >, c.exposed_pages);
    g_assert_cmpuint(after, ==, before);
    fdp_ftl_free(g);
    fdp_ftl_free(f);
    g_rand_free(r);
}

static void count_store_write(void *opaque)
{
    (*(uint64_t *)opaque)++;
}

/*
 * Reads' counters are batched as the blackbox FTL's: no store write for 63 reads, one with
 * the 64th; a load in between has the counts as last saved, one after it all of them; a
 * read's counters go with the next other call too.
 */
static void test_store_read_saves(void)
{
    FdpFtlConfig c = two_groups();
    uint64_t bytes = fdp_ftl_store_bytes(&c), writes = 0, read0;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *copy = g_malloc0(bytes);
    FdpFtl *f = attach(c, store), *g;

    fdp_ftl_write(f, 0, 300, 0, 1, 0);
    fdp_ftl_read(f, 0, 7, 0);
    fdp_ftl_flush(f, 0);
    read0 = fdp_ftl_stats(f)->host_pages_read;
    g_assert_cmpuint(read0, ==, 7);
    fdp_ftl_set_store_hook(f, count_store_write, &writes);
    for (int i = 0; i < 64; i++) {
        memcpy(copy, store, bytes);
        g = attach(c, copy);
        g_assert_cmpuint(fdp_ftl_stats(g)->host_pages_read, ==, read0);
        fdp_ftl_free(g);
        g_assert_cmpuint(writes, ==, 0);
        fdp_ftl_read(f, i, 1, 0);
    }
    g_assert_cmpuint(writes, ==, 1);
    memcpy(copy, store, bytes);
    g = attach(c, copy);
    g_assert_cmpuint(fdp_ftl_stats(g)->host_pages_read, ==, read0 + 64);
    fdp_ftl_free(g);
    /* one more read, then a trim: both counted in the trim's save */
    fdp_ftl_read(f, 5, 2, 0);
    g_assert_cmpuint(writes, ==, 1);
    fdp_ftl_trim(f, 100, 1, 0);
    memcpy(copy, store, bytes);
    g = attach(c, copy);
    g_assert_cmpmem(fdp_ftl_stats(g), sizeof(FdpFtlStats), fdp_ftl_stats(f),
                    sizeof(FdpFtlStats));
    fdp_ftl_free(g);
    fdp_ftl_free(f);
}

/* A kill after every write to the store in one call: the stores it would leave. */
typedef struct KillShots {
    const uint8_t *store;
    uint64_t bytes;
    GPtrArray *shots;
} KillShots;

static void kill_shot(void *opaque)
{
    KillShots *k = opaque;

    g_ptr_array_add(k->shots, g_memdup2(k->store, k->bytes));
}

/*
 * A kill after any write to the store, in the middle of forced and background GC (pages
 * moved, victims freed, GC RUs opened and filled), of handle updates and RU closes (a
 * controller reset's), of writes and trims: every such store loads consistent; an lpn
 * mapped before and after the call is mapped, to the handle of one of them; one mapped
 * neither before nor after is not; the counters are between those before and after the
 * call; and the loaded FTL goes on working.
 */
static void test_store_kill_anywhere(void)
{
    FdpFtlConfig c = two_groups();
    uint64_t bytes = fdp_ftl_store_bytes(&c), n = c.exposed_pages, now = 0, nshots = 0;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *was = g_new0(uint8_t, n);
    g_autofree uint8_t *is = g_new0(uint8_t, n);
    GRand *r = g_rand_new_with_seed(11);
    FdpFtl *f = attach(c, store);
    const FdpFtlStats *s = fdp_ftl_stats(f);
    KillShots k = { .store = store, .bytes = bytes,
                    .shots = g_ptr_array_new_with_free_func(g_free) };
    const uint32_t calls = 1500;
    uint64_t runs0, forced0, updates = 0, closes = 0;

    random_mix(f, &c, is, r, 20000, 0, &now);       /* aged: GC due */
    runs0 = s->gc_runs;
    forced0 = s->gc_forced_runs;
    fdp_ftl_set_store_hook(f, kill_shot, &k);
    for (uint32_t i = 0; i < calls; i++) {
        FdpFtlStats before = *s, after;
        memcpy(was, is, n);
        if (i % 50 == 25) {
            updates += fdp_ftl_ruh_update(f, i % 2, i / 50 % 4) > 0;
        } else if (i % 300 == 150) {
            closes += fdp_ftl_close_open(f);
        } else if (i % 40 == 5) {
            now += 20 * MS;
            fdp_ftl_idle(f, now);
        } else {
            random_mix(f, &c, is, r, 1, 0, &now);
        }
        after = *s;
        for (guint j = 0; j < k.shots->len; j++, nshots++) {
            FdpFtl *g = attach(c, g_ptr_array_index(k.shots, j));
            const FdpFtlStats *gs = fdp_ftl_stats(g);
            assert_consistent(g);
            for (uint64_t lpn = 0; lpn < n; lpn++) {
                uint32_t ruh;
                bool got = fdp_ftl_lookup(g, lpn, NULL, NULL, NULL, &ruh);
                if (was[lpn] && is[lpn] && !got) {
                    g_error("kill point %u of call %u: lpn %" G_GUINT64_FORMAT " lost", j, i,
                            lpn);
                }
                if (!was[lpn] && !is[lpn] && got) {
                    g_error("kill point %u of call %u: lpn %" G_GUINT64_FORMAT " brought "
                            "back", j, i, lpn);
                }
                if (got && ruh + 1 != was[lpn] && ruh + 1 != is[lpn]) {
                    g_error("kill point %u of call %u: lpn %" G_GUINT64_FORMAT " of handle %u"
                            ", written by %u then %u", j, i, lpn, ruh, was[lpn], is[lpn]);
                }
            }
            g_assert_cmpuint(gs->host_pages_written, >=, before.host_pages_written);
            g_assert_cmpuint(gs->host_pages_written, <=, after.host_pages_written);
            g_assert_cmpuint(gs->gc_runs, >=, before.gc_runs);
            g_assert_cmpuint(gs->gc_runs, <=, after.gc_runs);
            g_assert_cmpuint(gs->pages_trimmed, >=, before.pages_trimmed);
            g_assert_cmpuint(gs->pages_trimmed, <=, after.pages_trimmed);
            if (nshots % 64 == 0) {
                g_autofree uint8_t *later = g_memdup2(is, n);
                uint64_t t = now;
                /* what the host sees: a mapped lpn is old or new data; go on from there */
                for (uint64_t lpn = 0; lpn < n; lpn++) {
                    uint32_t ruh;
                    later[lpn] = fdp_ftl_lookup(g, lpn, NULL, NULL, NULL, &ruh) ? ruh + 1 : 0;
                }
                fdp_ftl_close_open(g);
                random_mix(g, &c, later, r, 300, 100, &t);
            }
            fdp_ftl_free(g);
        }
        g_ptr_array_set_size(k.shots, 0);
    }
    g_test_message("%" G_GUINT64_FORMAT " kill points in %u calls: %" G_GUINT64_FORMAT
                   " GC runs (%" G_GUINT64_FORMAT " forced), %" G_GUINT64_FORMAT
                   " handle updates and %" G_GUINT64_FORMAT " RUs closed by a reset", nshots,
                   calls, s->gc_runs - runs0, s->gc_forced_runs - forced0, updates, closes);
    g_assert_cmpuint(s->gc_forced_runs - forced0, >, 10);
    g_assert_cmpuint(s->gc_runs - s->gc_forced_runs - (runs0 - forced0), >, 0);
    g_assert_cmpuint(updates, >, 10);
    g_assert_cmpuint(closes, >, 5);
    g_ptr_array_free(k.shots, true);
    g_rand_free(r);
    fdp_ftl_free(f);
}

/* Resident memory of this process, in bytes. */
static uint64_t resident_bytes(void)
{
    g_autofree char *s = NULL;
    unsigned long long size, rss;

    g_assert_true(g_file_get_contents("/proc/self/statm", &s, NULL, NULL));
    g_assert_cmpint(sscanf(s, "%llu %llu", &size, &rss), ==, 2);
    return rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * Attach leaves the reverse map as the FTL made it, zero and not resident: a drive starts
 * without taking 8 bytes per NAND page (2.3 GiB for 1 TiB) before its first write. Here 256
 * MiB of reverse map for 2^25 pages of flash, 2^16 of them exposed.
 */
static void test_store_attach_sparse(void)
{
    FdpFtlConfig c = config(geo(8, 8, 2, 1024, 256), 1 << 16, 1, "ii");
    uint64_t bytes = fdp_ftl_store_bytes(&c), before;
    g_autofree uint8_t *store = g_malloc0(bytes);
    FdpFtl *f = fdp(c);
    char *err = NULL;

    before = resident_bytes();
    g_assert_true(fdp_ftl_attach_store(f, store, &err));
    g_test_message("resident: %" G_GUINT64_FORMAT " KiB more after attach",
                   (resident_bytes() - before) >> 10);
    g_assert_cmpuint(resident_bytes(), <, before + (32 << 20));
    fdp_ftl_write(f, 0, 1000, 0, 1, 0);
    assert_consistent(f);
    fdp_ftl_free(f);
}

/* ---- configuration ---- */

static void assert_config_refused(FdpFtlConfig c, const char *want)
{
    char *err = NULL;
    FdpFtl *f;

    g_assert_false(fdp_ftl_config_check(&c, &err));
    g_assert_nonnull(err);
    g_test_message("%s", err);
    g_assert_nonnull(strstr(err, want));
    g_free(err);
    err = NULL;
    f = fdp_ftl_new(&c, &err);
    g_assert_null(f);
    g_assert_nonnull(strstr(err, want));
    g_free(err);
}

static void test_config_check(void)
{
    FdpFtlConfig c = two_groups();
    char *err = NULL;

    g_assert_true(fdp_ftl_config_check(&c, &err));
    c.nrg = 3;                                      /* 8 chips */
    assert_config_refused(c, "fdp_nrg=3");
    c.nrg = 0;
    assert_config_refused(c, "fdp_nrg=0");
    c = two_groups();
    c.nruh = 0;
    assert_config_refused(c, "0 reclaim unit handles, allowed 1..128");
    c.nruh = FDP_MAX_RUH + 1;
    assert_config_refused(c, "129 reclaim unit handles, allowed 1..128");
    c = two_groups();
    c.ruh_type[1] = 3;
    assert_config_refused(c, "handle 1 has type 3");
    c = two_groups();
    c.gc_thres_pcent = 0;
    assert_config_refused(c, "gc_thres_pcent=0");
    c = two_groups();
    c.exposed_pages = 0;
    assert_config_refused(c, "devsz_mb");

    /*
     * Too few RUs: 40 per group with 4 handles need 16 of data + 1 of garbage + 4 + 3 GC
     * + 1; more data or more handles go past that. A page more than 31 RUs of data needs
     * a 32nd RU for it (it left no spare RU beyond the open ones before).
     */
    c = two_groups();
    c.exposed_pages = 31 * 256;                     /* 31 + 1 + 4 + 3 + 1 = 40: fits */
    c.gc_thres_pcent_high = 99;
    g_assert_true(fdp_ftl_config_check(&c, &err));
    c.exposed_pages += 1;
    assert_config_refused(c, "blks_per_pl=40 gives 40 reclaim units per group; with fdp_nrg=2 "
                          "and 4 handles FDP needs at least 41");
    c.exposed_pages = 31 * 256 + 255;
    assert_config_refused(c, "needs at least 41");
    c = two_groups();
    c.nruh = 27;                                    /* 16 + 1 + 27 + 3 + 1 = 48 */
    for (uint32_t h = 4; h < 27; h++) {
        c.ruh_type[h] = FDP_RUH_INITIALLY_ISOLATED;
    }
    assert_config_refused(c, "27 handles FDP needs at least 48");
    /* bigger RUs: fewer of them hold the data */
    c = config(geo(4, 2, 1, 40, 16), 7936, 1, "iipp");
    c.gc_thres_pcent_high = 99;
    assert_config_refused(c, "needs at least 71");   /* RUs of 128 pages: 62 + 9 */
    c.geo.pgs_per_blk = 32;                         /* RUs of 256 pages: 31 + 9 = 40 */
    g_assert_true(fdp_ftl_config_check(&c, &err));
    /* forced GC keeping more free RUs than are spare */
    c = two_groups();
    c.gc_thres_pcent = 50;
    c.gc_thres_pcent_high = 50;                     /* 20 free of 40, spare 17 */
    assert_config_refused(c, "allowed gc_thres_pcent_high 58..99");
}

#define PROP_DEFAULT(S, type, name, field, def) (S).field = (def);

/*
 * The properties on a small drive of the default geometry (16 MiB lines): op_pcent unset
 * or given, the derived blocks hold the data and FDP adds its own spare RUs, so nothing is
 * refused for a spare line of the blackbox's (10..100 MiB were, naming an op_pcent=7
 * nobody gave); a blks_per_pl given too small is refused naming it and FDP's rule.
 */
static void test_params_small_drives(void)
{
    const uint32_t sizes_mb[] = { 10, 20, 40, 50, 100, 30, 60 };
    FemuFlashParams flash;
    BbssdParams bb;
    FdpParams fp;
    FdpFtlConfig c;
    char *err = NULL;

    FEMU_FLASH_PROPS(PROP_DEFAULT, flash)
    BBSSD_PROPS(PROP_DEFAULT, bb)
    FDP_PROPS(PROP_DEFAULT, fp)
    for (unsigned i = 0; i < G_N_ELEMENTS(sizes_mb); i++) {
        for (int op = -1; op <= 0; op++) {
            bb.op_pcent = op;
            if (!fdp_params_ftl_config(&fp, &flash, &bb, (uint64_t)sizes_mb[i] << 20, &c,
                                       &err)) {
                g_error("devsz_mb=%u op_pcent=%d refused: %s", sizes_mb[i], op, err);
            }
        }
    }
    /* 100 MiB: 7 blocks of data, 1 of garbage; 4 handles, 1 GC RU, 1 reserve */
    bb.op_pcent = -1;
    flash.blks_per_pl = 13;
    g_assert_false(fdp_params_ftl_config(&fp, &flash, &bb, 100 << 20, &c, &err));
    g_test_message("%s", err);
    g_assert_nonnull(strstr(err, "blks_per_pl=13 gives 13 reclaim units per group"));
    g_assert_nonnull(strstr(err, "allowed blks_per_pl >= 14"));
    g_assert_null(strstr(err, "op_pcent"));
    g_free(err);
    flash.blks_per_pl = 14;
    g_assert_true(fdp_params_ftl_config(&fp, &flash, &bb, 100 << 20, &c, &err));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fdp-ftl/isolation/reference", test_isolation_reference);
    g_test_add_func("/fdp-ftl/isolation/full-group", test_full_group_redirects);
    g_test_add_func("/fdp-ftl/isolation/full-group-paced", test_full_group_redirects_paced);
    g_test_add_func("/fdp-ftl/isolation/handle-waf-paced", test_handle_waf_paced);
    g_test_add_func("/fdp-ftl/layout/striping", test_striping);
    g_test_add_func("/fdp-ftl/stats/add-up", test_stats_add_up);
    g_test_add_func("/fdp-ftl/waf/sequential", test_waf_sequential);
    g_test_add_func("/fdp-ftl/waf/hot-cold", test_waf_hot_cold);
    g_test_add_func("/fdp-ftl/gc/forced-threshold", test_forced_threshold);
    g_test_add_func("/fdp-ftl/gc/background", test_background_gc);
    g_test_add_func("/fdp-ftl/gc/min-rus-long-rus", test_min_rus_long_rus);
    g_test_add_func("/fdp-ftl/ruh/update-and-reset", test_ruh_update);
    g_test_add_func("/fdp-ftl/ruh/time-limit", test_time_limit);
    g_test_add_func("/fdp-ftl/time/basic", test_timing);
    g_test_add_func("/fdp-ftl/time/forced-gc", test_forced_gc_delays_write);
    g_test_add_func("/fdp-ftl/store/reload", test_store_reload);
    g_test_add_func("/fdp-ftl/store/bad-entry", test_store_bad_entry);
    g_test_add_func("/fdp-ftl/store/bad-ru-record", test_store_bad_ru_record);
    g_test_add_func("/fdp-ftl/store/stats", test_store_stats_survive);
    g_test_add_func("/fdp-ftl/store/read-saves", test_store_read_saves);
    g_test_add_func("/fdp-ftl/store/wear", test_store_wear);
    g_test_add_func("/fdp-ftl/store/attach-sparse", test_store_attach_sparse);
    g_test_add_func("/fdp-ftl/store/kill-anywhere", test_store_kill_anywhere);
    g_test_add_func("/fdp-ftl/config/check", test_config_check);
    g_test_add_func("/fdp-ftl/config/params-small-drives", test_params_small_drives);
    return g_test_run();
}
