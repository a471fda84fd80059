/*
 * GC pacing (ftl/pacing.h): gc_pacing= parsing, what each policy asks for in each state,
 * and the blackbox FTL under sustained random writes: proportional pacing keeps the tail
 * of write latency near its median at burst's write amplification, and its idle GC never
 * delays the command that ends an idle gap.
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>

#include "bbssd/ftl-internal.h"
#include "fdp/fdp-ftl.h"
#include "ftl/pacing.h"

#define US 1000ULL

static FtlPolicyChoice pacing(const char *spec)
{
    FtlPolicyChoice c;
    g_autofree char *err = NULL;

    if (!ftl_policy_parse(FTL_PACING, spec, &c, &err)) {
        g_error("gc_pacing=%s: %s", spec, err);
    }
    return c;
}

static void test_parse(void)
{
    FtlPolicyChoice c = pacing(NULL);
    g_autofree char *names = ftl_policy_names(FTL_PACING);
    g_autofree char *err = NULL;

    g_assert_cmpstr(names, ==, "burst, proportional");
    g_assert_cmpstr(c.policy->name, ==, "proportional");
    c = pacing("proportional");
    g_assert_cmpuint(c.param[0], ==, 1);
    g_assert_cmpuint(c.param[1], ==, 2);
    g_assert_cmpuint(c.param[2], ==, 64);
    c = pacing("proportional:boost=4:margin=3:cap=8");
    g_assert_cmpuint(c.param[0], ==, 3);
    g_assert_cmpuint(c.param[1], ==, 4);
    g_assert_cmpuint(c.param[2], ==, 8);
    g_assert_false(ftl_policy_parse(FTL_PACING, "smooth", &c, &err));
    g_assert_cmpstr(err, ==,
                    "gc_pacing=smooth is not a GC pacing: allowed burst, proportional");
    g_clear_pointer(&err, g_free);
    g_assert_false(ftl_policy_parse(FTL_PACING, "proportional:boost=0", &c, &err));
    g_assert_nonnull(strstr(err, "gc_pacing=proportional: boost=0 is out of range: "
                                 "allowed 1..16"));
    g_clear_pointer(&err, g_free);
    g_assert_false(ftl_policy_parse(FTL_PACING, "burst:cap=1", &c, &err));
    g_assert_cmpstr(err, ==, "gc_pacing=burst takes no parameters (given 'cap=1')");
}

static double moves(const char *spec, uint32_t free_units, uint64_t valid)
{
    FtlPolicyChoice c = pacing(spec);
    FtlPaceState s = { .free_units = free_units, .free_pages = free_units * 100,
                       .open_units = 1,
                       .forced_units = 8, .floor_units = 4, .unit_pages = 100,
                       .victim_valid = valid };
    return ftl_pace_moves(&c, &s);
}

static void test_moves(void)
{
    /* burst: nothing above the forced threshold, whole victims at it */
    g_assert_cmpfloat(moves("burst", 9, 80), ==, 0);
    g_assert_true(isinf(moves("burst", 8, 80)));
    /*
     * proportional: v / (n - v) from one unit above the forced threshold (9), boost x at
     * the floor (4)
     */
    g_assert_cmpfloat(moves("proportional", 10, 80), ==, 0);
    g_assert_cmpfloat(moves("proportional", 9, 80), ==, 4);
    g_assert_cmpfloat(moves("proportional", 8, 80), ==, 4.8);
    g_assert_cmpfloat(moves("proportional:boost=3", 8, 80), ==, 5.6);
    g_assert_cmpfloat(moves("proportional", 5, 80), ==, 7.2);
    g_assert_true(isinf(moves("proportional", 4, 80)));
    g_assert_cmpfloat(moves("proportional:margin=0", 9, 80), ==, 0);
    g_assert_cmpfloat(moves("proportional:margin=0", 8, 80), ==, 4);
    g_assert_cmpfloat(moves("proportional:margin=3", 11, 80), ==, 4);
    /* thin garbage, or none (a victim a policy chose): at most cap */
    g_assert_cmpfloat(moves("proportional", 9, 99), ==, 64);
    g_assert_cmpfloat(moves("proportional:cap=10", 9, 99), ==, 10);
    g_assert_cmpfloat(moves("proportional", 9, 100), ==, 64);
}

static FtlConfig config(const char *pace)
{
    return (FtlConfig){
        .geo = { .nchs = 4, .luns_per_ch = 2, .pls_per_lun = 1, .blks_per_pl = 96,
                 .pgs_per_blk = 32, .secs_per_pg = 8, .secsz = 512 },
        .tm = { .cell_bits = 1, .pg_rd_lat = { 40 * US }, .pg_wr_lat = { 200 * US },
                .blk_er_lat = 2000 * US, .ch_xfer_lat = 10 * US, .time_scale = 1 },
        .exposed_pages = 20480, .gc_thres_pcent = 90, .gc_thres_pcent_high = 98,
        .gc_pacing = pacing(pace),
    };
}

typedef struct Steady {
    double waf, p50_us, p999_us, max_us, kiops;
    uint64_t forced_runs;
} Steady;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * A fill, then uniform random 4 KiB writes from 8 writers, each issuing its next write
 * when its last completes (QD 8): latencies and WAF over the last half.
 */
static Steady steady(const char *pace)
{
    FtlConfig c = config(pace);
    g_autofree char *err = NULL;
    Ftl *f = ftl_new(&c, &err);
    GRand *r = g_rand_new_with_seed(21);
    uint64_t n = c.exposed_pages, writes = 6 * n, ready[8] = { 0 }, h0 = 0, n0 = 0, k = 0;
    uint64_t forced0 = 0, t0 = 0, t1 = 0;
    g_autofree uint64_t *lat = g_new(uint64_t, writes / 2);
    Steady s;

    g_assert_nonnull(f);
    for (uint64_t lpn = 0; lpn < n; lpn += 32) {
        ready[0] = ftl_write(f, lpn, 32, ready[0]);
    }
    for (int w = 1; w < 8; w++) {
        ready[w] = ready[0];
    }
    for (uint64_t i = 0; i < writes; i++) {
        int w = 0;
        uint64_t done;
        for (int j = 1; j < 8; j++) {
            w = ready[j] < ready[w] ? j : w;
        }
        if (i == writes / 2) {
            h0 = ftl_stats(f)->host_pages_written;
            n0 = ftl_stats(f)->nand_pages_written;
            forced0 = ftl_stats(f)->gc_forced_runs;
            t0 = ready[w];
        }
        done = ftl_write(f, g_rand_int_range(r, 0, n), 1, ready[w]);
        if (i >= writes / 2) {
            lat[k++] = done - ready[w];
        }
        ready[w] = done;
        t1 = MAX(t1, done);
    }
    qsort(lat, k, sizeof(*lat), cmp_u64);
    s = (Steady){
        .waf = (double)(ftl_stats(f)->nand_pages_written - n0) /
               (ftl_stats(f)->host_pages_written - h0),
        .p50_us = lat[k / 2] / 1e3, .p999_us = lat[k * 999 / 1000] / 1e3,
        .max_us = lat[k - 1] / 1e3,
        .forced_runs = ftl_stats(f)->gc_forced_runs - forced0,
        .kiops = k / ((t1 - t0) / 1e9) / 1e3,
    };
    g_test_message("gc_pacing=%s: %.2f kIOPS, WAF %.2f, write latency p50 %.0f us, p99.9 "
                   "%.0f us, max %.0f us, %" G_GUINT64_FORMAT " whole victims", pace, s.kiops,
                   s.waf, s.p50_us, s.p999_us, s.max_us, s.forced_runs);
    {
        g_autofree char *cerr = NULL;
        bool ok = ftl_check_consistency(f, &cerr);
        g_assert_cmpstr(cerr, ==, NULL);
        g_assert_true(ok);
    }
    g_rand_free(r);
    ftl_free(f);
    return s;
}

static void test_steady_tail(void)
{
    Steady b = steady("burst"), p = steady("proportional");

    /*
     * burst stalls writes behind background GC's moves booked ahead of them; proportional
     * spreads GC over every write, never a whole victim at once
     */
    g_assert_cmpfloat(b.p999_us, >, 10 * b.p50_us);
    g_assert_cmpuint(p.forced_runs, ==, 0);
    g_assert_cmpfloat(p.p999_us, <=, 5 * p.p50_us);
    g_assert_cmpfloat(p.max_us, <, b.max_us / 2);
    /* at the same throughput and write amplification */
    g_assert_cmpfloat(p.kiops, >, 0.95 * b.kiops);
    g_assert_cmpfloat(p.waf, <, 1.05 * b.waf);
    g_assert_cmpfloat(p.waf, >, 0.95 * b.waf);
}

/*
 * Commands separated by idle gaps long enough for GC's work: with proportional pacing
 * (idle GC only where it ends before the next command) each write takes what it takes on
 * an idle drive; with burst, idle GC's moves wait on the chips ahead of some of them.
 */
static uint64_t delayed_writes(const char *pace)
{
    FtlConfig c = config(pace);
    g_autofree char *err = NULL;
    Ftl *f = ftl_new(&c, &err);
    GRand *r = g_rand_new_with_seed(22);
    uint64_t n = c.exposed_pages, now = 0, delayed = 0, unloaded = 0;

    for (uint64_t lpn = 0; lpn < n; lpn += 32) {
        now = ftl_write(f, lpn, 32, now);
    }
    for (uint64_t i = 0; i < 2 * n; i++) {
        uint64_t t = ftl_write(f, g_rand_int_range(r, 0, n), 1, now) - now;
        if (!unloaded || t < unloaded) {
            unloaded = t;
        }
        delayed += i > n && t > unloaded;
        now += 5000 * US;       /* room for a victim's worth of moves per write */
    }
    g_test_message("gc_pacing=%s: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " writes "
                   "delayed, %" G_GUINT64_FORMAT " background GC operations", pace, delayed,
                   n - 1, ftl_stats(f)->gc_bg_ops);
    g_assert_cmpuint(ftl_stats(f)->gc_bg_ops, >, 1000);
    g_rand_free(r);
    ftl_free(f);
    return delayed;
}

static void test_idle_gc_fits(void)
{
    g_assert_cmpuint(delayed_writes("proportional"), ==, 0);
    g_assert_cmpuint(delayed_writes("burst"), >, 0);
}

static FdpFtlConfig fdp_config(const char *pace)
{
    FdpFtlConfig c = {
        .geo = { .nchs = 4, .luns_per_ch = 2, .pls_per_lun = 1, .blks_per_pl = 96,
                 .pgs_per_blk = 32, .secs_per_pg = 8, .secsz = 512 },
        .tm = { .cell_bits = 1, .pg_rd_lat = { 40 * US }, .pg_wr_lat = { 200 * US },
                .blk_er_lat = 2000 * US, .ch_xfer_lat = 10 * US, .time_scale = 1 },
        .exposed_pages = 18432, .nrg = 2, .nruh = 2, .gc_thres_pcent = 90,
        .gc_thres_pcent_high = 98, .gc_pacing = pacing(pace),
    };
    c.ruh_type[0] = FDP_RUH_INITIALLY_ISOLATED;
    c.ruh_type[1] = FDP_RUH_PERSISTENTLY_ISOLATED;
    return c;
}

static void assert_fdp_consistent(const FdpFtl *f)
{
    g_autofree char *err = NULL;
    bool ok = fdp_ftl_check_consistency(f, &err);

    g_assert_cmpstr(err, ==, NULL);
    g_assert_true(ok);
}

/* FDP as steady() does the blackbox: two handles, two groups, QD 8; consistent throughout. */
static Steady fdp_steady(const char *pace, uint8_t *store)
{
    FdpFtlConfig c = fdp_config(pace);
    g_autofree char *err = NULL;
    FdpFtl *f = fdp_ftl_new(&c, &err);
    GRand *r = g_rand_new_with_seed(23);
    uint64_t n = c.exposed_pages, writes = 6 * n, ready[8] = { 0 }, k = 0, forced0 = 0;
    g_autofree uint64_t *lat = g_new(uint64_t, writes / 2);
    Steady s = { 0 };

    g_assert_nonnull(f);
    if (store) {
        g_assert_true(fdp_ftl_attach_store(f, store, &err));
    }
    for (uint64_t lpn = 0; lpn < n; lpn += 32) {
        ready[0] = fdp_ftl_write(f, lpn, 32, (lpn / 32) % 2, lpn % 64 ? 0 : 1, ready[0]);
    }
    for (int w = 1; w < 8; w++) {
        ready[w] = ready[0];
    }
    for (uint64_t i = 0; i < writes; i++) {
        int w = 0;
        uint64_t done, lpn = g_rand_int_range(r, 0, n);
        for (int j = 1; j < 8; j++) {
            w = ready[j] < ready[w] ? j : w;
        }
        if (i == writes / 2) {
            forced0 = fdp_ftl_stats(f)->gc_forced_runs;
        }
        done = fdp_ftl_write(f, lpn, 1, lpn % 2, lpn % 3 ? 0 : 1, ready[w]);
        if (i >= writes / 2) {
            lat[k++] = done - ready[w];
        }
        ready[w] = done;
        if (i % 4096 == 0) {
            assert_fdp_consistent(f);
        }
    }
    qsort(lat, k, sizeof(*lat), cmp_u64);
    s.p50_us = lat[k / 2] / 1e3;
    s.p999_us = lat[k * 999 / 1000] / 1e3;
    s.max_us = lat[k - 1] / 1e3;
    s.forced_runs = fdp_ftl_stats(f)->gc_forced_runs - forced0;
    s.waf = (double)fdp_ftl_stats(f)->nand_pages_written /
            fdp_ftl_stats(f)->host_pages_written;
    g_test_message("fdp, gc_pacing=%s: WAF %.2f, write latency p50 %.0f us, p99.9 %.0f us, "
                   "max %.0f us, %" G_GUINT64_FORMAT " whole victims", pace, s.waf, s.p50_us,
                   s.p999_us, s.max_us, s.forced_runs);
    assert_fdp_consistent(f);
    g_rand_free(r);
    fdp_ftl_free(f);
    return s;
}

static void test_fdp_steady_tail(void)
{
    Steady b = fdp_steady("burst", NULL), p = fdp_steady("proportional", NULL);

    g_assert_cmpuint(b.forced_runs, >, 10);
    g_assert_cmpfloat(b.p999_us, >, 10 * b.p50_us);
    g_assert_cmpuint(p.forced_runs, ==, 0);
    g_assert_cmpfloat(p.p999_us, <=, 5 * p.p50_us);
    g_assert_cmpfloat(p.max_us, <, b.max_us / 5);
    g_assert_cmpfloat(p.waf, <, 1.10 * b.waf);
}

/*
 * A drive killed while paced GC is half-way through a victim comes back with that RU
 * closed (its pages where they were or already moved) and goes on.
 */
static void test_fdp_kill_mid_victim(void)
{
    FdpFtlConfig c = fdp_config("proportional");
    uint64_t bytes = fdp_ftl_store_bytes(&c), now = 0, n = c.exposed_pages;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *copy = NULL;
    g_autofree char *err = NULL;
    FdpFtl *f = fdp_ftl_new(&c, &err), *g;
    GRand *r = g_rand_new_with_seed(24);
    uint64_t moved0, i;

    g_assert_true(fdp_ftl_attach_store(f, store, &err));
    for (uint64_t lpn = 0; lpn < n; lpn += 32) {
        now = fdp_ftl_write(f, lpn, 32, 0, 0, now);
    }
    /* write until paced GC has moved some pages of a victim it has not finished */
    for (i = 0; i < 20 * n; i++) {
        moved0 = fdp_ftl_stats(f)->gc_pages_moved;
        now = fdp_ftl_write(f, g_rand_int_range(r, 0, n), 1, 0, 0, now);
        if (fdp_ftl_stats(f)->gc_pages_moved > moved0 && i > 4 * n &&
            fdp_ftl_stats(f)->gc_runs % 2 == 1) {
            break;
        }
    }
    g_assert_cmpuint(i, <, 20 * n);
    copy = g_memdup2(store, bytes);
    g = fdp_ftl_new(&c, &err);
    g_assert_true(fdp_ftl_attach_store(g, copy, &err));
    assert_fdp_consistent(g);
    for (uint64_t lpn = 0; lpn < n; lpn++) {
        g_assert_cmpuint(fdp_ftl_read(g, lpn, 1, now), >, now);
    }
    for (uint64_t j = 0; j < 4 * n; j++) {
        now = fdp_ftl_write(g, g_rand_int_range(r, 0, n), 1, 0, 0, now);
    }
    assert_fdp_consistent(g);
    g_rand_free(r);
    fdp_ftl_free(f);
    fdp_ftl_free(g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ftl-pacing/parse", test_parse);
    g_test_add_func("/ftl-pacing/moves", test_moves);
    g_test_add_func("/ftl-pacing/steady-tail", test_steady_tail);
    g_test_add_func("/ftl-pacing/idle-gc-fits", test_idle_gc_fits);
    g_test_add_func("/ftl-pacing/fdp-steady-tail", test_fdp_steady_tail);
    g_test_add_func("/ftl-pacing/fdp-kill-mid-victim", test_fdp_kill_mid_victim);
    return g_test_run();
}
