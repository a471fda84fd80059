/*
 * The blackbox FTL: mapping and GC correctness, thresholds, WAF, trim, timing, derivation.
 * White-box where a property is invisible through ftl.h (reverse map, line valid counts).
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <math.h>
#include <string.h>
#include "bbssd/ftl-internal.h"

#define US 1000ULL

static NandGeometry geo(uint32_t nchs, uint32_t luns, uint32_t blks, uint32_t pgs)
{
    return (NandGeometry){ .nchs = nchs, .luns_per_ch = luns, .pls_per_lun = 1,
                           .blks_per_pl = blks, .pgs_per_blk = pgs, .secs_per_pg = 8,
                           .secsz = 512 };
}

static NandTiming slc(void)
{
    return (NandTiming){ .cell_bits = 1, .pg_rd_lat = { 40 * US }, .pg_wr_lat = { 200 * US },
                         .blk_er_lat = 2000 * US, .ch_xfer_lat = 10 * US, .time_scale = 1 };
}

static FtlPolicyChoice policy(FtlPolicyKind kind, const char *spec)
{
    FtlPolicyChoice c;
    char *err = NULL;

    g_assert_true(ftl_policy_parse(kind, spec, &c, &err));
    return c;
}

/*
 * GC in bursts (gc_pacing=burst) into the one open line (streams=shared): FEMU's FTL,
 * whose thresholds, spare-line minimum and timings these tests assert.
 */
static FtlConfig config(NandGeometry g, uint64_t exposed, uint32_t lo, uint32_t hi)
{
    return (FtlConfig){ .geo = g, .tm = slc(), .exposed_pages = exposed,
                        .gc_thres_pcent = lo, .gc_thres_pcent_high = hi,
                        .gc_pacing = policy(FTL_PACING, "burst"),
                        .streams = policy(FTL_STREAM, "shared") };
}

static Ftl *ftl(FtlConfig c)
{
    char *err = NULL;
    Ftl *f = ftl_new(&c, &err);
    g_assert_cmpstr(err, ==, NULL);
    g_assert_nonnull(f);
    return f;
}

static void assert_consistent(Ftl *f)
{
    char *err = NULL;
    bool ok = ftl_check_consistency(f, &err);
    g_assert_cmpstr(err, ==, NULL);
    g_assert_true(ok);
}

static uint64_t ppn_of(Ftl *f, uint64_t lpn)
{
    NandAddr a;
    uint32_t unit;
    g_assert_true(ftl_lookup_unit(f, lpn, &a, &unit));
    return ftl_addr_to_ppn(f, &a) + unit;
}

/* lpn's ppn + 1 in f, 0 when unmapped */
static uint64_t where(Ftl *f, uint64_t lpn)
{
    NandAddr a;
    uint32_t unit;
    return ftl_lookup_unit(f, lpn, &a, &unit) ? ftl_addr_to_ppn(f, &a) + unit + 1 : 0;
}

static uint32_t line_of(Ftl *f, uint64_t lpn)
{
    return ppn_of(f, lpn) / f->units_per_line;
}

/* seq[lpn]: sequence number of the last write, 0 if never written or trimmed since. */
static void assert_matches_shadow(Ftl *f, const uint64_t *seq)
{
    assert_consistent(f);
    for (uint64_t lpn = 0; lpn < f->cfg.exposed_pages; lpn++) {
        uint64_t w = where(f, lpn);
        g_assert_cmpint(w != 0, ==, seq[lpn] != 0);
        if (w) {
            g_assert_cmpuint(rev_get(f, w - 1), ==, lpn + 1);
        }
    }
}

/*
 * Random overwrites (single pages and sequential runs), trims and reads, 8x the exposed
 * capacity, with idle periods: no valid page is lost, nothing stale survives.
 */
/* Returns the statistics at the end. */
static FtlStats run_random_mix(FtlConfig c, uint32_t factor, uint32_t check_every, bool idle)
{
    Ftl *f = ftl(c);
    uint64_t n = c.exposed_pages, *seq = g_new0(uint64_t, n), written = 0, now = 0;
    GRand *r = g_rand_new_with_seed(42);
    FtlStats st;

    for (uint64_t op = 1; written < factor * n; op++) {
        uint32_t kind = g_rand_int_range(r, 0, 100);
        uint64_t lpn = g_rand_int_range(r, 0, n), len = 1, run = g_rand_int_range(r, 1, 257);
        now += 5 * US;
        if (kind < 60) {                                     /* random 4K write */
            ftl_write(f, lpn, 1, now);
            seq[lpn] = op;
        } else if (kind < 75) {                              /* sequential run */
            len = MIN(run, n - lpn);
            ftl_write(f, lpn, len, now);
            for (uint64_t i = 0; i < len; i++) {
                seq[lpn + i] = op;
            }
        } else if (kind < 85) {                              /* deallocate */
            len = MIN(run / 4 + 1, n - lpn);
            ftl_trim(f, lpn, len, now);
            memset(seq + lpn, 0, len * sizeof(*seq));
            len = 0;
        } else if (kind < 95) {
            ftl_read(f, lpn, MIN(8, n - lpn), now);
            len = 0;
        } else if (idle) {
            now += 50000 * US;
            ftl_idle(f, now);
            len = 0;
        }
        written += (kind < 75) ? len : 0;
        g_assert_cmpuint(ftl_stats(f)->free_lines, >=, 1);
        if (op % check_every == 0) {
            assert_matches_shadow(f, seq);
        }
    }
    assert_matches_shadow(f, seq);
    g_assert_cmpuint(ftl_stats(f)->gc_runs, >, 0);
    g_assert_cmpuint(ftl_stats(f)->gc_pages_moved, >, 0);
    st = *ftl_stats(f);
    g_rand_free(r);
    g_free(seq);
    ftl_free(f);
    return st;
}

static void test_random_mix_consistent(void)
{
    /* 64 lines of 64 pages, 56 of data */
    run_random_mix(config(geo(2, 2, 64, 16), 56 * 64, 75, 90), 8, 200, true);
}

/* Planes, an exposed size that is not whole lines, and FEMU's default thresholds. */
static void test_random_mix_planes(void)
{
    NandGeometry g = geo(2, 2, 48, 16);
    g.pls_per_lun = 2;
    run_random_mix(config(g, 40 * 128 - 37, 75, 95), 6, 300, true);
}

/*
 * ppn <-> address, every page of a power-of-two geometry (the shift path) and of one with
 * odd counts (divisions): each field as the striping defines it, and back to the same ppn.
 */
static void test_address_round_trip(void)
{
    static const uint32_t shapes[][5] = {
        /* nchs, luns_per_ch, pls_per_lun, blks_per_pl, pgs_per_blk */
        { 4, 2, 2, 8, 16 },
        { 3, 5, 3, 7, 6 },
    };

    for (uint32_t k = 0; k < G_N_ELEMENTS(shapes); k++) {
        NandGeometry g = geo(shapes[k][0], shapes[k][1], shapes[k][3], shapes[k][4]);
        g.pls_per_lun = shapes[k][2];
        uint64_t luns = (uint64_t)g.nchs * g.luns_per_ch, stripe = luns * g.pls_per_lun;
        uint64_t ppl = stripe * g.pgs_per_blk, total = ppl * g.blks_per_pl;
        Ftl *f = ftl(config(g, ppl * (g.blks_per_pl - FTL_MIN_SPARE_LINES), 75, 95));

        g_assert_cmpint(f->pow2, ==, k == 0);
        for (uint64_t ppn = 0; ppn < total; ppn++) {
            uint64_t i = ppn % ppl;
            NandAddr a;
            ftl_ppn_to_addr(f, ppn, &a);
            g_assert_cmpuint(a.blk, ==, ppn / ppl);
            g_assert_cmpuint(a.ch, ==, i % g.nchs);
            g_assert_cmpuint(a.lun, ==, i / g.nchs % g.luns_per_ch);
            g_assert_cmpuint(a.pl, ==, i / luns % g.pls_per_lun);
            g_assert_cmpuint(a.pg, ==, i / stripe);
            g_assert_cmpuint(ftl_addr_to_ppn(f, &a), ==, ppn);
        }
        ftl_free(f);
    }
}

/*
 * Long lines and few of them, at the least over-provisioning accepted, filled and then
 * overwritten at random: forced GC starts with a line of garbage spread over the data
 * lines, so a victim frees at least 1/16 of its pages (write amplification at most 16,
 * and about 10 from greedy's pick). With one spare line less, refused now, each write after
 * the fill made GC move a whole line (4095 pages) to free the one page it overwrote.
 */
static void expect_refused(FtlConfig c, const char *needle);

static void test_min_spare_long_lines(void)
{
    FtlConfig c = config(geo(4, 4, 16 + FTL_MIN_SPARE_LINES, 256), 16 * 4096, 75, 95);
    GRand *r = g_rand_new_with_seed(9);
    uint64_t now = 0, moved;
    Ftl *f;

    c.exposed_pages += 4096;
    expect_refused(c, "allowed blks_per_pl >= 21");
    c.exposed_pages -= 4096;
    f = ftl(c);
    for (uint64_t lpn = 0; lpn < c.exposed_pages; lpn += 64) {
        now = ftl_write(f, lpn, 64, now);
    }
    g_assert_cmpuint(ftl_stats(f)->free_lines, ==, FTL_MIN_SPARE_LINES);
    for (uint64_t i = 0; i < c.exposed_pages; i++) {
        ftl_write(f, g_rand_int_range(r, 0, c.exposed_pages), 1, now);
        now += 10 * US;
        g_assert_cmpuint(ftl_stats(f)->gc_pages_moved, <, 15 * c.exposed_pages);
    }
    moved = ftl_stats(f)->gc_pages_moved;
    g_test_message("1 capacity of random writes: %" G_GUINT64_FORMAT " pages moved, %"
                   G_GUINT64_FORMAT " GC runs", moved, ftl_stats(f)->gc_runs);
    g_assert_cmpuint(ftl_stats(f)->gc_runs, >, 0);
    assert_consistent(f);
    g_rand_free(r);
    ftl_free(f);
}

/* The least over-provisioning the config check accepts still never runs out of lines. */
static void test_min_spare_never_stuck(void)
{
    NandGeometry g = geo(2, 2, 32, 16);
    FtlConfig c = config(g, (32 - FTL_MIN_SPARE_LINES) * 64, 75, 99);
    char *err = NULL;

    g_assert_true(ftl_config_check(&c, &err));
    c.exposed_pages += 1;       /* one page more needs one more line: refused */
    g_assert_false(ftl_config_check(&c, &err));
    g_assert_nonnull(strstr(err, "blks_per_pl"));
    g_free(err);
    c.exposed_pages -= 1;
    run_random_mix(c, 5, 500, false);
    run_random_mix(c, 3, 500, true);

    /* full sequential fills back to back, also with trims of the whole drive */
    Ftl *f = ftl(c);
    for (int pass = 0; pass < 4; pass++) {
        for (uint64_t lpn = 0; lpn < c.exposed_pages; lpn += 7) {
            ftl_write(f, lpn, MIN(7, c.exposed_pages - lpn), 0);
            g_assert_cmpuint(ftl_stats(f)->free_lines, >=, 1);
        }
        if (pass == 2) {
            ftl_trim(f, 0, c.exposed_pages, 0);
        }
    }
    assert_consistent(f);
    ftl_free(f);
}

/* ---- WAF ---- */

static void test_waf_sequential(void)
{
    Ftl *f = ftl(config(geo(2, 2, 64, 16), 56 * 64, 75, 95));
    const FtlStats *s = ftl_stats(f);
    uint64_t n = 56 * 64;

    g_assert_cmpfloat(ftl_waf(f), ==, 1.0);
    for (int pass = 0; pass < 4; pass++) {
        for (uint64_t lpn = 0; lpn < n; lpn += 16) {
            ftl_write(f, lpn, 16, 0);
        }
    }
    g_assert_cmpuint(s->gc_runs, >, 0);
    g_assert_cmpuint(s->gc_pages_moved, ==, 0);     /* victims were wholly invalid */
    g_assert_cmpfloat(ftl_waf(f), ==, 1.0);
    assert_consistent(f);
    ftl_free(f);
}

/* W0, the principal branch of Lambert's W on [-1/e, 0), by Newton's method. */
static double lambert_w0(double x)
{
    double w = -0.5;

    g_assert_cmpfloat(x, >=, -1 / G_E);
    for (int i = 0; i < 100; i++) {
        double e = exp(w), step = (w * e - x) / (e * (w + 1));
        w -= step;
        if (fabs(step) < 1e-12) {
            break;
        }
    }
    return w;
}

/*
 * The write amplification of greedy GC under uniform random 4K writes, as a function of
 * alpha = physical pages that can hold data / logical pages (Xiang and Kurkoski 2012,
 * "An improved analytic expression for write amplification in NAND flash"):
 * WAF = alpha / (alpha + W0(-alpha e^-alpha)).
 */
static double greedy_waf_estimate(double alpha)
{
    return alpha / (alpha + lambert_w0(-alpha * exp(-alpha)));
}

/* Random 4K overwrites after a full fill; returns the steady-state WAF (second half). */
static double random_overwrite_waf_alpha(double op_pcent, uint32_t lo, uint32_t hi,
                                         double *alpha)
{
    NandGeometry g = geo(2, 2, 0, 16);
    uint64_t n = 16384, half_host, half_nand;
    char *err = NULL;
    GRand *r = g_rand_new_with_seed(7);

    g_assert_true(ftl_derive_blocks(&g, n * 4096, op_pcent, &err));
    Ftl *f = ftl(config(g, n, lo, hi));
    const FtlStats *s = ftl_stats(f);

    ftl_write(f, 0, n, 0);
    for (uint64_t i = 0; i < 4 * n; i++) {
        ftl_write(f, g_rand_int_range(r, 0, n), 1, 0);
    }
    half_host = s->host_pages_written;
    half_nand = s->nand_pages_written;
    for (uint64_t i = 0; i < 4 * n; i++) {
        ftl_write(f, g_rand_int_range(r, 0, n), 1, 0);
    }
    /* the definition, exactly */
    g_assert_cmpuint(s->host_pages_written, ==, 9 * n);
    g_assert_cmpuint(s->nand_pages_written, ==, s->host_pages_written + s->gc_pages_moved);
    g_assert_cmpuint(ftl_nand(f)->stats.programs, ==, s->nand_pages_written);
    g_assert_cmpfloat(ftl_waf(f), ==,
                      (double)s->nand_pages_written / (double)s->host_pages_written);
    g_assert_cmpuint(ftl_nand(f)->stats.erases, ==, s->blocks_erased);
    assert_consistent(f);

    double waf = (double)(s->nand_pages_written - half_nand) /
                 (double)(s->host_pages_written - half_host);
    /* the lines that hold data: all but those GC keeps free and the open one */
    if (alpha) {
        *alpha = (double)(f->nlines - f->gc_forced_lines - 1) * f->units_per_line / n;
    }
    g_test_message("op_pcent=%.0f gc_thres_pcent=%u/%u (%u lines): steady WAF %.2f, "
                   "cumulative %.2f", op_pcent, lo, hi, g.blks_per_pl, waf, ftl_waf(f));
    g_rand_free(r);
    ftl_free(f);
    return waf;
}

static double random_overwrite_waf(double op_pcent, uint32_t lo, uint32_t hi)
{
    return random_overwrite_waf_alpha(op_pcent, lo, hi, NULL);
}

/* Random overwrites cost what greedy GC costs in theory, within 20%. */
static void test_waf_random_op(void)
{
    const double ops[] = { 7, 28 };

    for (unsigned i = 0; i < G_N_ELEMENTS(ops); i++) {
        double alpha, waf = random_overwrite_waf_alpha(ops[i], 90, 99, &alpha);
        double want = greedy_waf_estimate(alpha);
        g_test_message("op_pcent=%.0f: alpha %.3f, WAF %.2f, greedy estimate %.2f", ops[i],
                       alpha, waf, want);
        g_assert_cmpfloat(waf, >=, 0.8 * want);
        g_assert_cmpfloat(waf, <=, 1.2 * want);
    }
}

/* The estimate itself: 2.36 at 30% over-provisioning, as the paper gives it. */
static void test_waf_estimate(void)
{
    g_assert_cmpfloat(fabs(greedy_waf_estimate(1.3) - 2.36), <, 0.01);
    g_assert_cmpfloat(fabs(lambert_w0(-1 / G_E) + 1), <, 1e-5);
    g_assert_cmpfloat(fabs(lambert_w0(-0.1) * exp(lambert_w0(-0.1)) + 0.1), <, 1e-12);
}

/* FEMU's default thresholds keep 5% of lines free: less room for garbage, more WAF. */
static void test_waf_default_thresholds(void)
{
    double w7 = random_overwrite_waf(7, 75, 95), w28 = random_overwrite_waf(28, 75, 95);

    g_assert_cmpfloat(w7, >, random_overwrite_waf(7, 90, 99));
    g_assert_cmpfloat(w28, <, w7);
}

/* ---- thresholds ---- */

/* 64 lines; background at 32 free lines, forced at 6. Overwrites of 64 LPNs: garbage. */
static FtlConfig thres_config(void)
{
    return config(geo(2, 2, 64, 16), 48 * 64, 50, 90);
}

static void write_until_free(Ftl *f, uint64_t free_lines, uint64_t *lpn, uint64_t now)
{
    while (ftl_stats(f)->free_lines > free_lines) {
        ftl_write(f, (*lpn)++ % 64, 1, now);
    }
}

static void test_thresholds_values(void)
{
    Ftl *f = ftl(thres_config());
    g_assert_cmpuint(f->gc_bg_lines, ==, 32);
    g_assert_cmpuint(f->gc_forced_lines, ==, 6);
    ftl_free(f);
    /* the reserve when the percentage gives fewer lines */
    f = ftl(config(geo(2, 2, 64, 16), 48 * 64, 99, 99));
    g_assert_cmpuint(f->gc_bg_lines, ==, FTL_RESERVE_LINES);
    g_assert_cmpuint(f->gc_forced_lines, ==, FTL_RESERVE_LINES);
    ftl_free(f);
}

static void test_no_gc_above_background(void)
{
    Ftl *f = ftl(thres_config());
    uint64_t lpn = 0, now = 0;

    write_until_free(f, 33, &lpn, now);
    for (int i = 0; i < 5; i++) {
        now += 1000000 * US;
        ftl_idle(f, now);
        ftl_read(f, 0, 1, now + 1);
    }
    g_assert_cmpuint(ftl_stats(f)->free_lines, ==, 33);
    g_assert_cmpuint(ftl_stats(f)->gc_runs, ==, 0);
    g_assert_cmpuint(ftl_nand(f)->stats.erases, ==, 0);
    ftl_free(f);
}

static void test_background_gc_when_idle(void)
{
    Ftl *f = ftl(thres_config());
    const FtlStats *s = ftl_stats(f);
    uint64_t lpn = 0, now = 0;

    write_until_free(f, 28, &lpn, now);     /* between the thresholds (32 and 6) */
    g_assert_cmpuint(s->gc_runs, ==, 0);
    now = nand_all_idle_ns(ftl_nand(f)) + 1;
    ftl_idle(f, now);
    g_assert_cmpuint(s->gc_runs, ==, 1);    /* one victim now, the rest while idle */
    ftl_read(f, 0, 1, now + 1000000 * US);  /* long idle: background caught up */
    g_assert_cmpuint(s->gc_runs, ==, 5);    /* just above the threshold */
    g_assert_cmpuint(s->gc_forced_runs, ==, 0);
    g_assert_cmpuint(s->free_lines, ==, 33);
    now += 2000000 * US;
    ftl_idle(f, now);
    ftl_read(f, 0, 1, now + 1000000 * US);
    g_assert_cmpuint(s->gc_runs, ==, 5);    /* above it: nothing more */
    assert_consistent(f);
    ftl_free(f);
}

/*
 * A command arriving during background GC waits for the GC operation in progress on its
 * chip, no more. Each chip's share starts as soon as that chip is idle: the chips were idle
 * from now - 1, so the erases (this victim has no valid page) started then.
 */
static void test_background_gc_yields_to_host(void)
{
    Ftl *f = ftl(thres_config());
    const FtlStats *s = ftl_stats(f);
    uint64_t lpn = 0, now, t;

    write_until_free(f, 20, &lpn, 0);
    now = nand_all_idle_ns(ftl_nand(f)) + 1;
    ftl_idle(f, now);
    g_assert_cmpuint(s->gc_runs, ==, 1);
    t = ftl_read(f, 0, 1, now + 1);         /* arrives while the first victim runs */
    g_assert_cmpuint(s->gc_runs, ==, 1);
    /* the erase in progress, then the read (40 us + 10 us on the channel) */
    g_assert_cmpuint(t, ==, now - 1 + 2000 * US + 50 * US);
    ftl_free(f);
}

/*
 * Background GC chip by chip: while the host keeps chip 0 busy, the victim's share on the
 * other chips is collected in their idle time; chip 0's share (its erase) waits, and the
 * host's reads of chip 0 go before it. Once the host stops, the victim completes.
 */
static void test_background_gc_per_chip(void)
{
    Ftl *f = ftl(thres_config());
    const FtlStats *s = ftl_stats(f);
    uint64_t now;

    ftl_write(f, 0, 36 * 64, 0);            /* 36 full lines: 28 free, background due */
    for (uint64_t lpn = 0; lpn < 64; lpn += 2) {
        ftl_write(f, lpn, 1, 0);            /* line 0 keeps its odd pages: slots 1 and 3 */
    }
    g_assert_cmpuint(s->gc_runs + s->gc_bg_ops, ==, 0);
    now = nand_chip_busy_until(ftl_nand(f), 0);     /* chip 0 never idle from here */
    for (int i = 0; i < 200; i++, now += 50 * US) {
        ftl_read(f, 64, 1, now);            /* line 1, slot 0: chip 0, back to back */
        if (i == 100) {
            assert_consistent(f);           /* a victim half collected */
        }
    }
    g_assert_cmpuint(f->bg.line, ==, 0);
    g_assert_cmpuint(f->bg.next[0], !=, FTL_NEVER);         /* chip 0: still queued */
    for (int k = 1; k < 4; k++) {
        g_assert_cmpuint(f->bg.next[k], ==, FTL_NEVER);     /* moved and erased */
    }
    g_assert_cmpuint(s->gc_pages_moved, ==, 32);
    g_assert_cmpuint(s->gc_bg_ops, ==, 32 + 3);
    g_assert_cmpuint(s->gc_read_overtakes, ==, 200);
    g_assert_cmpuint(s->gc_runs, ==, 0);
    ftl_read(f, 64, 1, now + 1000000 * US); /* the host went quiet */
    g_assert_cmpuint(s->gc_runs, >=, 1);
    g_assert_cmpuint(s->gc_forced_runs, ==, 0);
    assert_consistent(f);
    ftl_free(f);
}

/*
 * Forced GC finishes a background victim the host left no idle time for on all chips at
 * once, as it collects its own victims: each chip's reads from the write's arrival on, not
 * chip after chip (each from the end of the bookings the previous chips' moves had just
 * added to it, a stall of chips x share).
 */
static void test_forced_gc_finishes_background_in_parallel(void)
{
    Ftl *f = ftl(thres_config());
    const FtlStats *s = ftl_stats(f);
    const NandModel *m = ftl_nand(f);
    uint64_t lpn = 65, before = 0, after = 0;

    ftl_write(f, 0, 36 * 64, 0);            /* 36 full lines: 28 free, background due */
    ftl_write(f, 0, 32, 0);                 /* line 0 keeps lpn 32..63: 8 pages per chip */
    ftl_write(f, 64, 1, 1);                 /* line 0 becomes the background victim */
    g_assert_cmpuint(f->bg.line, ==, 0);
    while (!s->gc_runs) {                   /* every chip busy: background books nothing */
        g_assert_cmpuint(s->gc_bg_ops, ==, 0);
        before = 0;
        for (uint32_t c = 0; c < 4; c++) {
            before = MAX(before, nand_chip_busy_until(m, c));
        }
        ftl_write(f, lpn++, 1, 1);
    }
    for (uint32_t c = 0; c < 4; c++) {
        after = MAX(after, nand_chip_busy_until(m, c));
    }
    g_assert_cmpuint(s->gc_forced_runs, ==, 0);
    g_assert_cmpuint(s->gc_pages_moved, ==, 32);
    g_assert_cmpuint(s->gc_bg_ops, ==, 32 + 4);
    g_test_message("forced GC of the background victim took %" G_GUINT64_FORMAT " us",
                   (guint64)((after - before) / US));
    /* per chip: 8 reads (50 us), 8 programs of the moves and the host page (210 us each),
       the erase (2 ms); chip after chip it took 5.4 ms */
    g_assert_cmpuint(after - before, <=, 8 * 50 * US + 9 * 210 * US + 2000 * US + 100 * US);
    assert_consistent(f);
    ftl_free(f);
}

static void test_forced_gc_at_threshold(void)
{
    Ftl *f = ftl(thres_config());
    const FtlStats *s = ftl_stats(f);
    uint64_t lpn = 0, now = 0;

    for (int i = 0; i < 64 * 64 * 4; i++) {
        uint64_t free_before = s->free_lines, runs = s->gc_runs;
        ftl_write(f, lpn++ % 64, 1, now);
        /* GC exactly when at the threshold (there is always garbage here) */
        g_assert_cmpint(s->gc_runs > runs, ==, free_before <= 6);
        if (s->gc_runs) {
            g_assert_cmpuint(s->free_lines, >=, 6);
        }
    }
    g_assert_cmpuint(s->gc_runs, >, 0);
    g_assert_cmpuint(s->gc_forced_runs, ==, s->gc_runs);    /* never idle: all forced */
    g_assert_cmpuint(s->gc_pages_moved, ==, 0);
    assert_consistent(f);
    ftl_free(f);
}

/* Greedy: the full line with the fewest valid pages goes first, whatever its age. */
static void test_greedy_victim(void)
{
    /* 64 lines of 64 pages, 60 of data; forced GC at 2 free lines */
    Ftl *f = ftl(config(geo(2, 2, 64, 16), 60 * 64, 97, 97));
    const FtlStats *s = ftl_stats(f);
    uint32_t l10, l3, l7;
    uint64_t pool = 0, spread = 0;

    ftl_write(f, 0, 3 * 64, 0);             /* three lines, in this order */
    l10 = line_of(f, 0), l3 = line_of(f, 64), l7 = line_of(f, 128);
    g_assert_cmpuint(line_of(f, 63), ==, l10);
    g_assert_cmpuint(line_of(f, 127), ==, l3);
    g_assert_cmpuint(line_of(f, 191), ==, l7);
    ftl_trim(f, 0, 54, 0);                  /* the oldest keeps 10 valid pages */
    ftl_trim(f, 64, 61, 0);                 /* the middle one 3 */
    ftl_trim(f, 128, 57, 0);                /* the newest 7 */
    g_assert_cmpuint(f->lines[l10].vpc, ==, 10);
    g_assert_cmpuint(f->lines[l3].vpc, ==, 3);
    g_assert_cmpuint(f->lines[l7].vpc, ==, 7);
    ftl_write(f, 192, 60 * 64 - 192, 0);    /* every other line full and wholly valid */
    g_assert_cmpuint(s->free_lines, ==, 4);
    g_assert_cmpuint(s->gc_runs, ==, 0);

    /*
     * rewrite trimmed pages (nothing becomes invalid) until GC has run three times; once
     * they are all written, a page of each wholly valid line in turn (none falls below 10)
     */
    const uint64_t want_moved[] = { 3, 3 + 7, 3 + 7 + 10 };
    const uint32_t *gone[] = { &l3, &l7, &l10 };
    for (uint32_t run = 1; run <= 3; run++) {
        while (s->gc_runs < run) {
            uint64_t lpn = pool < 54 ? pool : pool < 54 + 61 ? 64 + pool - 54
                                                            : 128 + pool - 54 - 61;
            if (pool < 54 + 61 + 57) {
                pool++;
            } else {
                lpn = 192 + spread % 57 * 64 + spread / 57;
                g_assert_cmpuint(spread++, <, 57 * 50);
            }
            ftl_write(f, lpn, 1, 0);
        }
        g_assert_cmpuint(s->gc_runs, ==, run);
        g_assert_cmpuint(s->gc_pages_moved, ==, want_moved[run - 1]);
        g_assert_cmpint(f->lines[*gone[run - 1]].state, !=, FTL_LINE_FULL);
        for (uint32_t k = run; k < 3; k++) {
            g_assert_cmpint(f->lines[*gone[k]].state, ==, FTL_LINE_FULL);
        }
        assert_consistent(f);
    }
    /* the moved pages are still there */
    for (uint64_t lpn = 125; lpn < 128; lpn++) {
        NandAddr a;
        g_assert_true(ftl_lookup(f, lpn, &a));
        g_assert_cmpuint(line_of(f, lpn), !=, l3);
    }
    ftl_free(f);
}

/* ---- deallocate ---- */

static void test_trim(void)
{
    /* 64 lines, 60 of data; forced GC at 2 free lines */
    Ftl *f = ftl(config(geo(2, 2, 64, 16), 60 * 64, 97, 97));
    const FtlStats *s = ftl_stats(f);
    NandAddr a;
    uint32_t line0;

    ftl_write(f, 0, 64, 0);
    line0 = line_of(f, 0);
    g_assert_cmpuint(line_of(f, 63), ==, line0);
    g_assert_cmpuint(f->lines[line0].vpc, ==, 64);
    ftl_trim(f, 0, 32, 0);
    g_assert_cmpuint(f->lines[line0].vpc, ==, 32);
    g_assert_false(ftl_lookup(f, 0, &a));
    g_assert_false(ftl_lookup(f, 31, &a));
    g_assert_true(ftl_lookup(f, 32, &a));
    ftl_read(f, 30, 4, 0);
    g_assert_cmpuint(s->unmapped_pages_read, ==, 2);
    g_assert_cmpuint(s->host_pages_read, ==, 4);
    ftl_trim(f, 0, 64, 0);
    ftl_trim(f, 0, 64, 0);                  /* twice: nothing more to drop */
    g_assert_cmpuint(f->lines[line0].vpc, ==, 0);
    g_assert_cmpuint(s->pages_trimmed, ==, 160);
    assert_consistent(f);

    /* fill the rest with data that stays valid: line0 is the only garbage */
    ftl_write(f, 64, 60 * 64 - 64, 0);
    g_assert_cmpuint(s->free_lines, ==, 4);
    ftl_write(f, 0, 64, 0);                 /* a line of the trimmed pages */
    g_assert_cmpuint(s->free_lines, ==, 3);
    ftl_write(f, 64, 1, 0);                 /* opens a line */
    g_assert_cmpuint(s->free_lines, ==, 2);
    g_assert_cmpuint(s->gc_runs, ==, 0);
    ftl_write(f, 65, 1, 0);                 /* at the forced threshold */
    g_assert_cmpuint(s->gc_runs, ==, 1);
    g_assert_cmpuint(s->gc_pages_moved, ==, 0);
    g_assert_cmpint(f->lines[line0].state, ==, FTL_LINE_FREE);
    assert_consistent(f);
    ftl_free(f);
}

/* ---- timing ---- */

static NandModel *nand_clone(const NandModel *m)
{
    return nand_model_copy(m);
}

/*
 * Pages of one request on the same chip, block and page index of two planes are one
 * multi-plane program (2 data-ins + one tPROG: 220 us, not 2 x 210); separate requests are
 * not paired.
 */
static void test_multiplane_program_pairs(void)
{
    NandGeometry g = geo(1, 1, 64, 16);
    g.pls_per_lun = 2;
    Ftl *f = ftl(config(g, 48 * 32, 75, 95));

    g_assert_cmpuint(ftl_write(f, 0, 4, 0), ==, 440 * US);       /* two pairs */
    g_assert_cmpuint(ftl_nand(f)->stats.multiplane_ops, ==, 2);
    g_assert_cmpuint(ftl_nand(f)->stats.programs, ==, 4);
    g_assert_cmpuint(ftl_write(f, 4, 1, 1000 * US), ==, 1210 * US);
    g_assert_cmpuint(ftl_write(f, 5, 1, 1000 * US), ==, 1420 * US);
    g_assert_cmpuint(ftl_nand(f)->stats.multiplane_ops, ==, 2);
    /* an odd start: plane 1 of a row alone, then a pair, then plane 0 alone */
    g_assert_cmpuint(ftl_write(f, 6, 1, 2000 * US), ==, 2210 * US);
    g_assert_cmpuint(ftl_write(f, 7, 4, 3000 * US), ==, 3000 * US + 210 * US + 220 * US + 210 * US);
    g_assert_cmpuint(ftl_stats(f)->nand_pages_written, ==, 11);
    assert_consistent(f);
    ftl_free(f);
}

/* A request completes at the latest of its pages, as the NAND model times each one. */
static void test_request_completes_at_latest_page(void)
{
    FtlConfig c = config(geo(2, 2, 64, 16), 56 * 64, 75, 95);
    c.tm.cell_bits = 2;     /* page types with different latencies */
    c.tm.pg_rd_lat[1] = 90 * US;
    c.tm.pg_wr_lat[1] = 700 * US;
    Ftl *f = ftl(c);
    NandAddr a;

    ftl_write(f, 0, 40, 0);
    NandModel *ref = nand_clone(ftl_nand(f));
    uint64_t now = 300 * US, want = 0, got;

    got = ftl_write(f, 1000, 11, now);
    for (uint64_t i = 0; i < 11; i++) {
        g_assert_true(ftl_lookup(f, 1000 + i, &a));
        uint64_t t = nand_op(ref, NAND_OP_PROGRAM, &a, now);
        want = MAX(want, t);
    }
    g_assert_cmpuint(got, ==, want);
    g_assert_cmpuint(ftl_flush(f, now), ==, want);

    now = 5000 * US;
    want = 0;
    got = ftl_read(f, 3, 9, now);
    for (uint64_t i = 0; i < 9; i++) {
        g_assert_true(ftl_lookup(f, 3 + i, &a));
        uint64_t t = nand_op(ref, NAND_OP_READ, &a, now);
        want = MAX(want, t);
    }
    g_assert_cmpuint(got, ==, want);
    g_assert_cmpuint(got, >, now + 90 * US);    /* some upper page was in it */
    nand_model_free(ref);
    ftl_free(f);
}

static void test_sequential_striping(void)
{
    Ftl *f = ftl(config(geo(2, 2, 64, 16), 56 * 64, 75, 95));
    const NandModel *m = ftl_nand(f);
    NandAddr a;

    ftl_write(f, 0, 4 * 64 + 8, 0);
    for (uint64_t lpn = 0; lpn < 4; lpn++) {   /* channel first, then chip */
        g_assert_true(ftl_lookup(f, lpn, &a));
        g_assert_cmpuint(a.ch, ==, lpn % 2);
        g_assert_cmpuint(a.lun, ==, lpn / 2);
    }
    for (uint32_t i = 1; i < 4; i++) {
        g_assert_cmpuint(m->stats.lun_busy_ns[i], ==, m->stats.lun_busy_ns[0]);
    }
    g_assert_cmpuint(m->stats.lun_busy_ns[0], ==, (4 * 64 + 8) / 4 * (10 + 200) * US);
    /* four chips in parallel: a quarter of the serial time, plus pipeline fill */
    g_assert_cmpuint(ftl_flush(f, 0), <=, (4 * 64 + 8) / 4 * 210 * US + 4 * 10 * US);
    ftl_free(f);
}

/* Host writes at a rate an empty drive sustains get slower once GC competes. */
static void test_gc_slows_host_writes(void)
{
    Ftl *f = ftl(config(geo(2, 2, 64, 16), 56 * 64, 75, 95));
    const FtlStats *s = ftl_stats(f);
    GRand *r = g_rand_new_with_seed(3);
    uint64_t now = 0, fresh = 0, fresh_n = 0, gc = 0, gc_n = 0;

    for (int i = 0; i < 6 * 56 * 64; i++) {
        uint64_t runs = s->gc_runs, t;
        now += 80 * US;             /* 4 chips x 210 us per page: room to spare */
        t = ftl_write(f, g_rand_int_range(r, 0, 56 * 64), 1, now) - now;
        if (!runs) {
            fresh += t;
            fresh_n++;
        } else if (i > 3 * 56 * 64) {
            gc += t;
            gc_n++;
        }
    }
    g_assert_cmpuint(fresh_n, >, 1000);
    g_assert_cmpuint(fresh / fresh_n, <, 2 * 210 * US);
    g_assert_cmpuint(gc / gc_n, >, 3 * (fresh / fresh_n));
    g_rand_free(r);
    ftl_free(f);
}

/* Completions never precede arrivals, chip timelines never go back, flush covers writes. */
static void test_time_monotonic(void)
{
    Ftl *f = ftl(config(geo(2, 2, 64, 16), 56 * 64, 75, 95));
    const NandModel *m = ftl_nand(f);
    GRand *r = g_rand_new_with_seed(11);
    uint64_t now = 0, last_write = 0, last_flush = 0, lun[4] = { 0 };

    for (int i = 0; i < 40000; i++) {
        uint64_t lpn = g_rand_int_range(r, 0, 56 * 64 - 8), t;
        now += g_rand_int_range(r, 0, 300) * US;
        switch (g_rand_int_range(r, 0, 5)) {
        case 0:
        case 1:
            t = ftl_write(f, lpn, g_rand_int_range(r, 1, 9), now);
            last_write = MAX(last_write, t);
            break;
        case 2:
            t = ftl_read(f, lpn, g_rand_int_range(r, 1, 9), now);
            break;
        case 3:
            t = ftl_trim(f, lpn, 4, now);
            break;
        default:
            t = ftl_flush(f, now);
            g_assert_cmpuint(t, >=, last_write);
            g_assert_cmpuint(t, >=, last_flush);
            last_flush = t;
            if (g_rand_boolean(r)) {
                ftl_idle(f, t);
            }
        }
        g_assert_cmpuint(t, >=, now);
        for (int c = 0; c < 4; c++) {
            g_assert_cmpuint(nand_chip_busy_until(m, c), >=, lun[c]);
            lun[c] = nand_chip_busy_until(m, c);
        }
    }
    g_assert_cmpuint(ftl_stats(f)->gc_runs, >, 0);
    g_rand_free(r);
    ftl_free(f);
}

static void test_unmapped_read_cost(void)
{
    Ftl *f = ftl(config(geo(2, 2, 64, 16), 56 * 64, 75, 95));
    const NandModel *m = ftl_nand(f);
    uint64_t now = 0;

    const uint64_t lpns[] = { 0, 1, 2, 3, 6, 7, 1001, 2048, 3583 };

    for (unsigned i = 0; i < G_N_ELEMENTS(lpns); i++) {
        uint64_t before[4], chip = lpns[i] % 4;
        uint32_t want = (chip % 2) * 2 + chip / 2;  /* striped: channel first */
        memcpy(before, m->stats.lun_busy_ns, sizeof(before));
        now += 1000 * US;
        g_assert_cmpuint(ftl_read(f, lpns[i], 1, now), ==, now + 40 * US + 10 * US);
        for (uint32_t c = 0; c < 4; c++) {
            g_assert_cmpuint(m->stats.lun_busy_ns[c] - before[c], ==, c == want ? 50 * US : 0);
        }
    }
    g_assert_cmpuint(m->stats.reads, ==, 9);
    g_assert_cmpuint(ftl_stats(f)->unmapped_pages_read, ==, 9);
    ftl_free(f);
}

/* Read-ahead reads mapped pages only, on their chips, not as the host. */
static void test_prefetch_mapped_only(void)
{
    Ftl *f = ftl(config(geo(2, 2, 64, 16), 56 * 64, 75, 95));
    const FtlStats *s = ftl_stats(f);
    const NandModel *m = ftl_nand(f);
    uint64_t t = 100000 * US, busy[4];
    uint32_t reads = 0;
    NandAddr a;

    ftl_write(f, 0, 16, 0);
    ftl_trim(f, 6, 2, 0);
    ftl_write(f, 56 * 64 - 1, 1, 0);
    /* runs of mapped pages */
    g_assert_cmpuint(ftl_mapped_run(f, 0, 100), ==, 6);
    g_assert_cmpuint(ftl_mapped_run(f, 2, 3), ==, 3);
    g_assert_cmpuint(ftl_mapped_run(f, 0, 0), ==, 0);
    g_assert_cmpuint(ftl_mapped_run(f, 6, 100), ==, 0);
    g_assert_cmpuint(ftl_mapped_run(f, 8, 100), ==, 8);
    g_assert_cmpuint(ftl_mapped_run(f, 16, 100), ==, 0);
    g_assert_cmpuint(ftl_mapped_run(f, 56 * 64 - 1, 100), ==, 1);
    g_assert_cmpuint(ftl_mapped_run(f, 56 * 64, 100), ==, 0);

    /* pages 4..9: 4, 5, 8, 9 are read, each on its own chip's timeline */
    memcpy(busy, m->stats.lun_busy_ns, sizeof(busy));
    reads = m->stats.reads;
    uint64_t done = ftl_prefetch(f, 4, 6, t);
    for (uint64_t lpn = 4; lpn < 10; lpn++) {
        if (ftl_lookup(f, lpn, &a)) {
            busy[nand_lun_index(m, &a)] += 50 * US;
        }
    }
    for (uint32_t c = 0; c < 4; c++) {
        g_assert_cmpuint(m->stats.lun_busy_ns[c], ==, busy[c]);
    }
    g_assert_cmpuint(m->stats.reads - reads, ==, 4);
    g_assert_cmpuint(s->prefetch_pages_read, ==, 4);
    g_assert_cmpuint(s->host_pages_read, ==, 0);
    g_assert_cmpuint(s->unmapped_pages_read, ==, 0);
    /* striped over the 4 chips: 4 and 8, 5 and 9 share one, one after the other */
    g_assert_cmpuint(done, ==, t + 2 * 50 * US);
    /* only unmapped pages: nothing read, done at once (a host read would pay for them) */
    g_assert_cmpuint(ftl_prefetch(f, 6, 2, 2 * t), ==, 2 * t);
    g_assert_cmpuint(m->stats.reads - reads, ==, 4);
    g_assert_cmpuint(ftl_read(f, 6, 2, 3 * t), >, 3 * t);
    g_assert_cmpuint(s->unmapped_pages_read, ==, 2);
    g_assert_cmpuint(s->prefetch_pages_read, ==, 4);
    assert_consistent(f);
    ftl_free(f);
}

/* ---- configuration ---- */

static void test_derive_blocks(void)
{
    /* 5 % of the 100 MiB drive's 50 lines is below the 4 spare lines GC needs */
    const double ops[] = { 7, 12.5, 28, 50, 100 };
    const uint64_t sizes[] = { 100ULL << 20, 1ULL << 30, 3ULL << 30 };

    for (unsigned i = 0; i < G_N_ELEMENTS(ops); i++) {
        for (unsigned j = 0; j < G_N_ELEMENTS(sizes); j++) {
            NandGeometry g = geo(4, 2, 0, 64);
            char *err = NULL;
            uint64_t exposed = sizes[j] / 4096, ppl = 4 * 2 * 64;
            g_assert_true(ftl_derive_blocks(&g, sizes[j], ops[i], &err));
            g_assert_cmpstr(err, ==, NULL);
            double got = (double)nand_total_pages(&g) / exposed - 1;
            double less = (double)(nand_total_pages(&g) - ppl) / exposed - 1;
            g_assert_cmpfloat(got, >=, ops[i] / 100 - 1e-12);
            g_assert_cmpfloat(less, <, ops[i] / 100);      /* within one block per plane */
            FtlConfig c = config(g, exposed, 75, 99);
            g_assert_true(ftl_config_check(&c, &err));
        }
    }
}

static void test_derive_refuses_small_op(void)
{
    NandGeometry g = geo(2, 2, 0, 16);
    char *err = NULL, *hint;
    double min_op;

    /* 60 lines of 64 pages: 4 spare lines need 64 lines, op_pcent > 5 */
    g_assert_false(ftl_derive_blocks(&g, 60 * 64 * 4096, 2, &err));
    g_assert_nonnull(strstr(err, "op_pcent=2 "));
    hint = strstr(err, "op_pcent >= ");
    g_assert_nonnull(hint);
    min_op = g_ascii_strtod(hint + strlen("op_pcent >= "), NULL);
    g_assert_cmpfloat(min_op, >, 5);
    g_assert_cmpfloat(min_op, <=, 5.01);
    g_free(err);
    err = NULL;
    g_assert_true(ftl_derive_blocks(&g, 60 * 64 * 4096, min_op, &err));
    g_assert_cmpuint(g.blks_per_pl, ==, 64);
    g_assert_false(ftl_derive_blocks(&g, 60 * 64 * 4096, min_op - 0.01, &err));
    g_free(err);
    err = NULL;
    /* op_pcent not asked for: the default rises to the spare lines GC needs, no further */
    g_assert_true(ftl_derive_blocks_spare(&g, 60 * 64 * 4096, 2, FTL_MIN_SPARE_LINES, true,
                                          &err));
    g_assert_cmpuint(g.blks_per_pl, ==, 60 + FTL_MIN_SPARE_LINES);
    g_assert_true(ftl_derive_blocks_spare(&g, 60 * 64 * 4096, 10, FTL_MIN_SPARE_LINES, true,
                                          &err));
    g_assert_cmpuint(g.blks_per_pl, ==, 66);
    /* too many blocks per plane */
    g_assert_false(ftl_derive_blocks(&g, 1ULL << 40, 7, &err));
    g_assert_nonnull(strstr(err, "blks_per_pl"));
    g_free(err);
    err = NULL;
    g_assert_false(ftl_derive_blocks(&g, 1 << 20, -1, &err));
    g_assert_nonnull(strstr(err, "op_pcent"));
    g_free(err);
}

static void expect_refused(FtlConfig c, const char *needle)
{
    char *err = NULL;
    g_assert_false(ftl_config_check(&c, &err));
    g_assert_nonnull(err);
    if (!strstr(err, needle)) {
        g_error("'%s' does not name %s", err, needle);
    }
    g_free(err);
    err = NULL;
    g_assert_null(ftl_new(&c, &err));
    g_assert_nonnull(strstr(err, needle));
    g_free(err);
}

static void test_config_check(void)
{
    FtlConfig ok = config(geo(2, 2, 64, 16), 56 * 64, 75, 95), c;
    char *err = NULL;

    g_assert_true(ftl_config_check(&ok, &err));
    c = ok, c.gc_thres_pcent = 0;
    expect_refused(c, "gc_thres_pcent=0 is out of range: allowed 1..99");
    c = ok, c.gc_thres_pcent = 100, c.gc_thres_pcent_high = 100;
    expect_refused(c, "gc_thres_pcent=100");
    c = ok, c.gc_thres_pcent_high = 70;
    expect_refused(c, "gc_thres_pcent_high=70 is out of range: allowed 75");
    c = ok, c.gc_thres_pcent_high = 100;
    expect_refused(c, "gc_thres_pcent_high=100");
    c = ok, c.exposed_pages = 0;
    expect_refused(c, "devsz_mb");
    c = ok, c.exposed_pages = 62 * 64;
    expect_refused(c, "allowed blks_per_pl >= 66");
    c = ok, c.geo.nchs = 0;
    expect_refused(c, "nchs");
    c = ok, c.tm.cell_bits = 5;
    expect_refused(c, "cell_bits");
    /*
     * 4 spare lines: forced GC may keep 2 free, as the open line and a line of garbage
     * take the rest. 5 % of 80 = 4 could never catch up; 4 % = 3 would leave no garbage
     * when a line opens (GC of a whole line for the pages written since, at every write).
     */
    c = ok, c.geo.blks_per_pl = 80, c.exposed_pages = 76 * 64;
    expect_refused(c, "gc_thres_pcent_high=95 keeps 4 free lines");
    c.gc_thres_pcent_high = 96;
    expect_refused(c, "allowed gc_thres_pcent_high 97..99");
    c.gc_thres_pcent_high = 97;
    g_assert_true(ftl_config_check(&c, &err));
}

/* The checker itself catches broken state (so the tests above can fail). */
static void test_consistency_check_catches(void)
{
    Ftl *f = ftl(config(geo(2, 2, 64, 16), 56 * 64, 75, 95));
    char *err = NULL;
    uint64_t ppn;

    ftl_write(f, 0, 100, 0);
    assert_consistent(f);
    ppn = ppn_of(f, 5);
    rev_put(f, ppn, 7);
    g_assert_false(ftl_check_consistency(f, &err));
    g_free(err);
    rev_put(f, ppn, 6);
    f->lines[ppn / f->units_per_line].vpc--;
    g_assert_false(ftl_check_consistency(f, &err));
    g_free(err);
    f->lines[ppn / f->units_per_line].vpc++;
    f->st.free_lines++;
    g_assert_false(ftl_check_consistency(f, &err));
    g_free(err);
    f->st.free_lines--;
    assert_consistent(f);
    ftl_free(f);
}

/* ---- the store ---- */

/* Read retry on, so that the wear a load gives the NAND model shows in read times. */
static FtlConfig store_config(void)
{
    FtlConfig c = config(geo(2, 2, 64, 16), 56 * 64, 75, 95);

    c.tm.retry_pe = 2;
    c.tm.retry_max = 8;
    return c;
}

static Ftl *attach(FtlConfig c, void *store)
{
    Ftl *f = ftl(c);
    char *err = NULL;
    bool ok = ftl_attach_store(f, store, &err);

    g_assert_cmpstr(err, ==, NULL);
    g_assert_true(ok);
    return f;
}

/* Attaching refuses: *err contains want; the FTL is then as new, without a store. */
static void assert_refused(FtlConfig c, void *store, const char *want)
{
    Ftl *f = ftl(c);
    char *err = NULL;

    g_assert_false(ftl_attach_store(f, store, &err));
    g_assert_nonnull(err);
    g_test_message("refused: %s", err);
    if (!strstr(err, want)) {
        g_error("'%s' does not say %s", err, want);
    }
    g_free(err);
    g_assert_null(f->store);
    g_assert_cmpuint(ftl_stats(f)->free_lines, ==, f->nlines);
    assert_consistent(f);
    ftl_free(f);
}

/* Two FTLs hold the same state: mapping, lines, free list, victim, statistics, wear. */
static void assert_same_state(Ftl *a, Ftl *b)
{
    const NandGeometry *g = &a->cfg.geo;

    assert_consistent(a);
    assert_consistent(b);
    for (uint64_t lpn = 0; lpn < a->cfg.exposed_pages; lpn++) {
        NandAddr x, y;
        bool mx = ftl_lookup(a, lpn, &x), my = ftl_lookup(b, lpn, &y);
        g_assert_cmpint(mx, ==, my);
        if (mx) {
            g_assert_cmpmem(&x, sizeof(x), &y, sizeof(y));
        }
    }
    g_assert_cmpmem(ftl_stats(a), sizeof(FtlStats), ftl_stats(b), sizeof(FtlStats));
    for (uint32_t l = 0; l < a->nlines; l++) {
        const FtlLine *x = &a->lines[l], *y = &b->lines[l];
        if (x->state != y->state || x->vpc != y->vpc || x->order != y->order ||
            x->erases != y->erases ||
            (x->state == FTL_LINE_FREE && a->free_next[l] != b->free_next[l])) {
            g_error("line %u: state %d/%d vpc %lu/%lu order %lu/%lu erases %u/%u next %u/%u", l,
                    x->state, y->state, x->vpc, y->vpc, x->order, y->order, x->erases, y->erases,
                    a->free_next[l], b->free_next[l]);
        }
    }
    g_assert_cmpuint(a->free.head, ==, b->free.head);
    g_assert_cmpuint(a->free.tail, ==, b->free.tail);
    for (uint32_t i = 0; i < a->nstreams; i++) {
        g_assert_cmpuint(a->wp_line[i], ==, b->wp_line[i]);
        g_assert_cmpuint(a->wp_line[i] == FTL_NO_LINE ? 0 : a->wp_idx[i], ==,
                         b->wp_line[i] == FTL_NO_LINE ? 0 : b->wp_idx[i]);
    }
    g_assert_cmpuint(a->order, ==, b->order);
    g_assert_cmpuint(a->bg.line, ==, b->bg.line);
    for (uint64_t k = 0; a->bg.line != FTL_NO_LINE && k < nand_luns(g); k++) {
        /* a resumed chip starts over at its first page: what was moved is skipped */
        g_assert_cmpint(a->bg.next[k] == FTL_NEVER, ==, b->bg.next[k] == FTL_NEVER);
    }
    for (uint32_t l = 0; l < g->blks_per_pl; l++) {
        for (uint32_t c = 0; c < nand_luns(g); c++) {
            for (uint32_t pl = 0; pl < g->pls_per_lun; pl++) {
                NandAddr x = { .ch = c % g->nchs, .lun = c / g->nchs, .pl = pl, .blk = l };
                g_assert_cmpuint(nand_block_wear(ftl_nand(a), &x), ==,
                                 nand_block_wear(ftl_nand(b), &x));
            }
        }
    }
}

/* A workload's clock and count of operations (its pace follows the count). */
typedef struct Mix {
    uint64_t now, ops;
} Mix;

/* Writes, trims, reads and idle periods on a small drive: GC of both kinds runs. */
static void store_mix(Ftl *f, GRand *r, uint64_t ops, Mix *m, uint64_t *seq)
{
    uint64_t n = f->cfg.exposed_pages;

    for (uint64_t end = m->ops + ops; m->ops < end; m->ops++) {
        uint32_t kind = g_rand_int_range(r, 0, 100);
        uint64_t lpn = g_rand_int_range(r, 0, n), len = g_rand_int_range(r, 1, 17);
        len = MIN(len, n - lpn);
        /* bursts at one instant (background GC gets no idle time: forced GC), and a pace
           at which background GC works in the chips' gaps (and forced GC finishes it) */
        m->now += (m->ops / 500 % 2 ? 0 : 300) * US;
        if (kind < 78) {
            len = kind < 58 ? 1 : len;
            ftl_write(f, lpn, len, m->now);
            for (uint64_t i = 0; seq && i < len; i++) {
                seq[lpn + i] = 1;
            }
        } else if (kind < 81) {
            ftl_trim(f, lpn, len, m->now);
            if (seq) {
                memset(seq + lpn, 0, len * sizeof(*seq));
            }
        } else if (kind < 96) {
            ftl_read(f, lpn, len, m->now);
        } else if (kind < 99) {
            ftl_flush(f, m->now);
        } else {
            m->now += 2000 * US;
            ftl_idle(f, m->now);
        }
    }
}

/*
 * A store holds the state: an FTL attached to a copy of it has the same mapping, lines,
 * statistics and wear, and the same workload on both from a quiet moment on gives the same
 * completion times, the same state and the same bytes in the store.
 */
static void test_store_reload(void)
{
    FtlConfig c = store_config();
    uint64_t bytes = ftl_store_bytes(&c), later;
    Mix m = { 0 };
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *copy = NULL;
    GRand *r = g_rand_new_with_seed(21), *r2;
    Ftl *f = attach(c, store), *g;

    /* a blank store formats: an empty drive, the header written */
    g_assert_cmpuint(ftl_stats(f)->free_lines, ==, 64);
    g_assert_cmpuint(store[0], ==, 'B');
    /* one the caller knows is blank formats without being read: the same drive */
    {
        g_autofree uint8_t *blank = g_malloc0(bytes);
        Ftl *x = ftl(c);
        char *err = NULL;
        g_assert_true(ftl_format_store(x, blank, &err));
        ftl_write(x, 5, 3, 0);
        ftl_free(x);
        x = attach(c, blank);
        g_assert_cmpuint(where(x, 5) && where(x, 7) && !where(x, 8), ==, 1);
        g_assert_cmpuint(ftl_stats(x)->host_pages_written, ==, 3);
        assert_consistent(x);
        ftl_free(x);
    }
    store_mix(f, r, 30000, &m, NULL);
    g_assert_cmpuint(ftl_stats(f)->gc_runs, >, 100);
    g_assert_cmpuint(ftl_stats(f)->gc_forced_runs, >, 0);
    g_assert_cmpuint(ftl_stats(f)->gc_forced_runs, <, ftl_stats(f)->gc_runs);
    g_assert_cmpuint(nand_block_wear(ftl_nand(f), &(NandAddr){ .blk = 5 }), >, 0);
    ftl_flush(f, m.now);                /* reads' counters are saved with the next call */
    copy = g_memdup2(store, bytes);
    g = attach(c, copy);
    assert_same_state(f, g);

    /* the same commands from a quiet moment on (the timelines are not saved) */
    later = MAX(m.now, nand_all_idle_ns(ftl_nand(f))) + 10000000 * US;
    r2 = g_rand_copy(r);
    for (int i = 0; i < 20000; i++) {
        uint64_t lpn = g_rand_int_range(r, 0, c.exposed_pages), t;
        uint32_t kind = g_rand_int_range(r, 0, 10);
        g_assert_cmpuint(g_rand_int_range(r2, 0, c.exposed_pages), ==, lpn);
        g_assert_cmpuint(g_rand_int_range(r2, 0, 10), ==, kind);
        later += 30 * US;
        switch (kind) {
        case 0:
            t = ftl_read(f, lpn, 1, later);
            g_assert_cmpuint(ftl_read(g, lpn, 1, later), ==, t);
            break;
        case 1:
            t = ftl_trim(f, lpn, 1, later);
            g_assert_cmpuint(ftl_trim(g, lpn, 1, later), ==, t);
            break;
        case 2:
            later += 5000 * US;
            ftl_idle(f, later);
            ftl_idle(g, later);
            break;
        default:
            t = ftl_write(f, lpn, 1, later);
            g_assert_cmpuint(ftl_write(g, lpn, 1, later), ==, t);
        }
    }
    ftl_flush(f, later);
    ftl_flush(g, later);
    assert_same_state(f, g);
    g_assert_cmpmem(store, bytes, copy, bytes);     /* and the same bytes saved */
    ftl_free(g);

    /* a kill now: the store as it is, loaded again */
    memcpy(copy, store, bytes);
    g = attach(c, copy);
    assert_same_state(f, g);
    ftl_free(g);
    /* the thresholds and timings may change: they are not part of the state */
    {
        FtlConfig o = c;
        o.gc_thres_pcent = 60;
        o.gc_thres_pcent_high = 90;
        o.tm.pg_rd_lat[0] *= 2;
        memcpy(copy, store, bytes);
        g = attach(o, copy);
        g_assert_cmpuint(ftl_stats(g)->host_pages_written, ==,
                         ftl_stats(f)->host_pages_written);
        assert_consistent(g);
        ftl_free(g);
    }
    g_rand_free(r);
    g_rand_free(r2);
    ftl_free(f);
}

/*
 * 8-byte reverse entries (a drive past 2^32 - 1 pages) behave as 4-byte ones: the same
 * workload gives the same statistics, and the store, which holds no reverse map, loads
 * into either width with the same state and the same times after.
 */
static void test_wide_tables(void)
{
    FtlConfig c = config(geo(2, 2, 64, 16), 56 * 64, 75, 90), w = c;
    FtlStats narrow, wide;
    uint64_t bytes, later;
    g_autofree uint8_t *store = NULL;
    g_autofree uint8_t *copy = NULL;
    GRand *r = g_rand_new_with_seed(5);
    Mix m = { 0 };
    Ftl *f, *g;

    w.wide_tables = true;
    f = ftl(c);
    g = ftl(w);
    g_assert_cmpuint(f->map_log, ==, 2);
    g_assert_cmpuint(f->rev_log, ==, 2);
    g_assert_cmpuint(g->map_log, ==, 3);
    g_assert_cmpuint(g->rev_log, ==, 3);
    ftl_free(f);
    ftl_free(g);
    narrow = run_random_mix(c, 8, 200, true);
    wide = run_random_mix(w, 8, 200, true);
    g_assert_cmpmem(&narrow, sizeof(narrow), &wide, sizeof(wide));

    c = store_config();
    w = c;
    w.wide_tables = true;
    bytes = ftl_store_bytes(&c);
    store = g_malloc0(bytes);
    f = attach(c, store);
    g_assert_cmpuint(f->map_log, ==, 3);       /* the store's entries */
    g_assert_cmpuint(f->rev_log, ==, 2);
    store_mix(f, r, 20000, &m, NULL);
    g_assert_cmpuint(ftl_stats(f)->gc_runs, >, 50);
    ftl_flush(f, m.now);
    copy = g_memdup2(store, bytes);
    g = attach(w, copy);
    g_assert_cmpuint(g->map_log, ==, 3);
    g_assert_cmpuint(g->rev_log, ==, 3);
    assert_same_state(f, g);
    later = MAX(m.now, nand_all_idle_ns(ftl_nand(f))) + 10000000 * US;
    for (int i = 0; i < 20000; i++) {
        uint64_t lpn = g_rand_int_range(r, 0, c.exposed_pages);
        later += 30 * US;
        g_assert_cmpuint(ftl_write(g, lpn, 1, later), ==, ftl_write(f, lpn, 1, later));
    }
    ftl_flush(f, later);
    ftl_flush(g, later);
    assert_same_state(f, g);
    g_assert_cmpmem(store, bytes, copy, bytes);
    g_rand_free(r);
    ftl_free(f);
    ftl_free(g);
}

/* A store of another configuration is refused, naming the property; so is a damaged one. */
static void test_store_refused(void)
{
    FtlConfig c = store_config(), o;
    uint64_t bytes = ftl_store_bytes(&c);
    Mix m = { 0 };
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *copy = NULL;
    GRand *r = g_rand_new_with_seed(22);
    Ftl *f = attach(c, store);

    store_mix(f, r, 2000, &m, NULL);
    ftl_free(f);
    copy = g_malloc(bytes * 2);     /* room for the bigger configurations' stores */
#define REFUSED(field, value, want) do {                                    \
        o = c;                                                              \
        o.field = value;                                                    \
        memset(copy, 0, bytes * 2);                                         \
        memcpy(copy, store, bytes);                                         \
        assert_refused(o, copy, want);                                      \
    } while (0)
    REFUSED(geo.nchs, 4, "nchs = 2, the device now has 4");
    REFUSED(geo.luns_per_ch, 3, "luns_per_ch = 2, the device now has 3");
    REFUSED(geo.pls_per_lun, 2, "pls_per_lun = 1, the device now has 2");
    REFUSED(geo.pgs_per_blk, 32, "pgs_per_blk = 16, the device now has 32");
    REFUSED(geo.secs_per_pg, 4, "secs_per_pg = 8, the device now has 4");
    REFUSED(geo.secsz, 4096, "secsz = 512, the device now has 4096");
    REFUSED(exposed_pages, 50 * 64, "devsz_mb");
    REFUSED(units_per_pg, 2, "mapping units per NAND page (map_unit_kb; 0: one) = 0, the "
                             "device now has 2");
    REFUSED(geo.blks_per_pl, 70, "blks_per_pl (the blocks op_pcent gives");
#undef REFUSED
    o = c;
    o.first_block = 4;
    o.shared_nand = nand_model_new(&(NandGeometry){ .nchs = 2, .luns_per_ch = 2,
                                                    .pls_per_lun = 1, .blks_per_pl = 68,
                                                    .pgs_per_blk = 16, .secs_per_pg = 8,
                                                    .secsz = 512 }, &c.tm, NULL);
    memcpy(copy, store, bytes);
    assert_refused(o, copy, "first block (the flash shared with other namespaces");
    nand_model_free(o.shared_nand);
    /* a damaged header is refused, not formatted over */
    memcpy(copy, store, bytes);
    copy[21] ^= 0x01;
    assert_refused(c, copy, "damaged");
    memcpy(copy, store, bytes);
    copy[4] = 9;
    assert_refused(c, copy, "format version 9");
    memcpy(copy, store, bytes);
    memcpy(copy, "FDPF", 4);
    assert_refused(c, copy, "something else than blackbox FTL state");
    /* no header but not blank: refused */
    memset(copy, 0, bytes);
    copy[bytes - 3] = 1;
    assert_refused(c, copy, "not blank");
    g_rand_free(r);
}

/* A mapping entry that fails its check is dropped (its page unmapped); the rest loads. */
static void test_store_bad_entry(void)
{
    FtlConfig c = store_config();
    uint64_t bytes = ftl_store_bytes(&c), n = c.exposed_pages;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *copy = NULL;
    g_autofree uint64_t *seq = g_new0(uint64_t, n);
    GRand *r = g_rand_new_with_seed(23);
    Mix m = { 0 };
    Ftl *f = attach(c, store), *g;
    const uint64_t bad[] = { 17, 2000, 3583 };

    store_mix(f, r, 20000, &m, seq);
    for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
        ftl_write(f, bad[i], 1, m.now);
    }
    ftl_free(f);
    /* a bit flipped, another lpn's entry (a misplaced write), a check changed */
    store[ftl_store_map_offset(&c, 17)] ^= 0x01;
    memcpy(store + ftl_store_map_offset(&c, 3583), store + ftl_store_map_offset(&c, 2000), 8);
    store[ftl_store_map_offset(&c, 2000) + 7] ^= 0x40;
    g = attach(c, store);
    for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
        NandAddr a;
        g_assert_false(ftl_lookup(g, bad[i], &a));
        seq[bad[i]] = 0;
    }
    /* everything else as it was; valid counts rebuilt without them */
    assert_matches_shadow(g, seq);
    /* the dropped entries are cleared in the store too: a second load agrees */
    copy = g_memdup2(store, bytes);
    f = attach(c, copy);
    assert_same_state(g, f);
    ftl_free(f);
    store_mix(g, r, 5000, &m, seq);
    assert_matches_shadow(g, seq);
    g_rand_free(r);
    ftl_free(g);
}

/*
 * Line records that fail their CRC, or that the mapping contradicts, are repaired from the
 * mapping: a line holding valid pages is full (GC collects it), one holding none is free;
 * nothing mapped is lost. State no repair can make usable (no line left free) is refused.
 */
static void test_store_bad_line_record(void)
{
    FtlConfig c = store_config();
    uint64_t bytes = ftl_store_bytes(&c), n = c.exposed_pages;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint64_t *seq = g_new0(uint64_t, n);
    GRand *r = g_rand_new_with_seed(24);
    Mix m = { 0 };
    Ftl *f = attach(c, store), *g;
    uint32_t full, open, spare, nfree;
    uint64_t wp;

    ftl_write(f, 0, 64, 0);                 /* one whole line: full */
    ftl_write(f, 64, 10, 0);                /* the next one: open, 10 pages */
    for (uint64_t i = 0; i < 74; i++) {
        seq[i] = 1;
    }
    full = line_of(f, 0);
    open = line_of(f, 64);
    spare = f->free.head;
    g_assert_cmpuint(f->wp_line[0], ==, open);
    g_assert_cmpuint(f->wp_idx[0], ==, 10);
    nfree = ftl_stats(f)->free_lines;
    ftl_free(f);
    store[ftl_store_line_offset(&c, full) + 13] ^= 0x04;   /* its erases: CRC fails */
    store[ftl_store_line_offset(&c, open) + 8] ^= 0x03;    /* its state: CRC fails */
    store[ftl_store_line_offset(&c, spare) + 16] = 0x7f;   /* a free line's order */
    g = attach(c, store);
    assert_matches_shadow(g, seq);
    g_assert_cmpint(g->lines[full].state, ==, FTL_LINE_FULL);
    g_assert_cmpint(g->lines[open].state, ==, FTL_LINE_FULL);  /* holds pages: full */
    g_assert_cmpint(g->lines[spare].state, ==, FTL_LINE_FREE); /* holds none: free */
    g_assert_cmpuint(g->wp_line[0], ==, FTL_NO_LINE);
    g_assert_cmpuint(ftl_stats(g)->free_lines, ==, nfree);
    /* GC collects the repaired lines like any other */
    store_mix(g, r, 30000, &m, seq);
    assert_matches_shadow(g, seq);
    g_assert_cmpuint(ftl_stats(g)->gc_runs, >, 64);
    ftl_free(g);

    /* the open line's record says free (zeroed): its pages make it full */
    memset(store, 0, bytes);
    memset(seq, 0, n * sizeof(*seq));
    f = attach(c, store);
    ftl_write(f, 100, 20, 0);
    for (uint64_t i = 100; i < 120; i++) {
        seq[i] = 1;
    }
    open = f->wp_line[0];
    ftl_free(f);
    memset(store + ftl_store_line_offset(&c, open), 0, 32);
    g = attach(c, store);
    assert_matches_shadow(g, seq);
    g_assert_cmpint(g->lines[open].state, ==, FTL_LINE_FULL);
    ftl_free(g);

    /* the open line's wp word behind its pages (a wrong store): raised over them */
    memset(store, 0, bytes);
    f = attach(c, store);
    ftl_write(f, 100, 20, 0);
    open = f->wp_line[0];
    ftl_free(f);
    wp = 5 | (uint64_t)ftl_map_check(1ULL << 63 | open, 5) << 48;
    memcpy(store + ftl_store_line_offset(&c, open), &wp, 8);
    g = attach(c, store);
    assert_matches_shadow(g, seq);
    g_assert_cmpuint(g->wp_line[0], ==, open);
    g_assert_cmpuint(g->wp_idx[0], ==, 20);
    ftl_write(g, 0, 1, 0);
    g_assert_cmpuint(ppn_of(g, 0) % g->units_per_line, ==, 20);
    ftl_free(g);

    /* entries (well formed) point into every free line: none is left free, refused */
    memset(store, 0, bytes);
    f = attach(c, store);
    ftl_write(f, 0, n, 0);
    ftl_free(f);
    for (uint32_t l = 56, lpn = 0; l < 64; l++, lpn += 100) {
        uint64_t e = (uint64_t)l * 64 + 1;
        e |= (uint64_t)ftl_map_check(lpn, e) << 48;
        memcpy(store + ftl_store_map_offset(&c, lpn), &e, 8);
    }
    assert_refused(c, store, "damaged beyond repair");
    /* the same with one line left: loaded, GC makes room */
    memset(store + ftl_store_map_offset(&c, 700), 0, 8);
    g = attach(c, store);
    g_assert_cmpuint(ftl_stats(g)->free_lines, ==, 1);
    memset(seq, 0, n * sizeof(*seq));
    for (uint64_t lpn = 0; lpn < n; lpn++) {
        seq[lpn] = where(g, lpn);
    }
    g_assert_cmpuint(seq[700], ==, 0);
    store_mix(g, r, 30000, &m, seq);
    assert_matches_shadow(g, seq);
    ftl_free(g);
    g_rand_free(r);
}

/*
 * The two statistics slots: the older is written, the newer valid one wins. Reads' own
 * counters are saved with the next other call, or with every FTL_READ_SAVES-th read.
 */
static void test_store_stats_slots(void)
{
    FtlConfig c = store_config();
    uint64_t bytes = ftl_store_bytes(&c), off = 512, rec = 112, q0, q1;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *copy = g_malloc0(bytes);
    Ftl *f = attach(c, store), *g;
    FtlStats want, older;

    ftl_write(f, 0, 300, 0);
    ftl_read(f, 0, 7, 0);
    ftl_read(f, 3000, 3, 0);
    ftl_prefetch(f, 0, 4, 0);
    ftl_cached_read(f, 2, 0);
    memcpy(copy, store, bytes);
    g = attach(c, copy);
    g_assert_cmpuint(ftl_stats(g)->host_pages_written, ==, 300);
    g_assert_cmpuint(ftl_stats(g)->host_pages_read, ==, 0);        /* not yet */
    ftl_free(g);
    ftl_flush(f, 0);
    older = *ftl_stats(f);
    ftl_trim(f, 10, 5, 0);
    want = *ftl_stats(f);
    memcpy(copy, store, bytes);
    g = attach(c, copy);
    g_assert_cmpmem(ftl_stats(g), sizeof(want), &want, sizeof(want));
    g_assert_cmpuint(want.host_pages_read, ==, 12);
    g_assert_cmpuint(want.unmapped_pages_read, ==, 3);
    g_assert_cmpuint(want.prefetch_pages_read, ==, 4);
    g_assert_cmpuint(want.pages_trimmed, ==, 5);
    g_assert_cmpuint(want.host_pages_written, ==, 300);
    ftl_free(g);
    /* the newest slot torn (a kill while it was written): the one before */
    memcpy(copy, store, bytes);
    memcpy(&q0, copy + off, 8);
    memcpy(&q1, copy + off + rec, 8);
    g_assert_cmpuint(q0 + q1, >, 1);
    copy[off + (q1 > q0 ? rec : 0) + 40] ^= 0x01;
    g = attach(c, copy);
    g_assert_cmpmem(ftl_stats(g), sizeof(older), &older, sizeof(older));
    assert_consistent(g);
    ftl_free(g);
    /* reads alone: the 64th saves */
    for (int i = 0; i < 64; i++) {
        memcpy(copy, store, bytes);
        g = attach(c, copy);
        g_assert_cmpuint(ftl_stats(g)->host_pages_read, ==, want.host_pages_read);
        ftl_free(g);
        ftl_read(f, i, 1, 0);
    }
    memcpy(copy, store, bytes);
    g = attach(c, copy);
    g_assert_cmpuint(ftl_stats(g)->host_pages_read, ==, want.host_pages_read + 64);
    ftl_free(g);
    ftl_free(f);
}

/*
 * A background victim half collected (chip 0 busy, the others erased): a load resumes it
 * chip by chip, erasing no chip twice, and ends where the FTL that went on ends.
 */
static void test_store_background_victim(void)
{
    FtlConfig c = thres_config();
    uint64_t bytes = ftl_store_bytes(&c), now;
    g_autofree uint8_t *store = g_malloc0(bytes);
    g_autofree uint8_t *copy = NULL;
    Ftl *f = attach(c, store), *g;

    c.tm.retry_pe = 1;
    c.tm.retry_max = 64;
    ftl_free(f);
    f = attach(c, store);
    ftl_write(f, 0, 36 * 64, 0);
    for (uint64_t lpn = 0; lpn < 64; lpn += 2) {
        ftl_write(f, lpn, 1, 0);
    }
    now = nand_chip_busy_until(ftl_nand(f), 0);
    for (int i = 0; i < 200; i++, now += 50 * US) {
        ftl_read(f, 64, 1, now);
    }
    ftl_flush(f, now - 50 * US);            /* saves the reads' counters; GC waits */
    g_assert_cmpuint(f->bg.line, ==, 0);
    g_assert_cmpuint(f->bg.next[0], !=, FTL_NEVER);
    copy = g_memdup2(store, bytes);
    g = attach(c, copy);
    assert_same_state(f, g);
    g_assert_cmpuint(g->bg.chips_left, ==, 1);
    for (int k = 1; k < 4; k++) {
        NandAddr a = { .ch = k % 2, .lun = k / 2, .blk = 0 };
        g_assert_cmpuint(g->bg.next[k], ==, FTL_NEVER);
        g_assert_cmpuint(nand_block_wear(ftl_nand(g), &a), ==, 1);
    }
    g_assert_cmpuint(nand_block_wear(ftl_nand(g), &(NandAddr){ .blk = 0 }), ==, 0);
    /* both go quiet: the victim completes, its chip 0 erased once, the others not again */
    now = MAX(now, nand_all_idle_ns(ftl_nand(f))) + 1000000 * US;
    ftl_read(f, 64, 1, now);
    ftl_read(g, 64, 1, now);
    ftl_flush(f, now);
    ftl_flush(g, now);
    assert_same_state(f, g);
    g_assert_cmpuint(ftl_stats(g)->gc_runs, >=, 1);
    g_assert_cmpuint(g->lines[0].erases, ==, 1);
    g_assert_cmpmem(store, bytes, copy, bytes);
    ftl_free(g);
    ftl_free(f);
}

typedef struct KillShots {
    uint8_t *store;
    uint64_t bytes;
    GPtrArray *shots;           /* copies of the store, one per write to it */
    GArray *call;               /* the call each was taken in */
    uint32_t now_call;
} KillShots;

static void kill_shot(void *opaque)
{
    KillShots *k = opaque;

    g_ptr_array_add(k->shots, g_memdup2(k->store, k->bytes));
    g_array_append_val(k->call, k->now_call);
}

/*
 * A kill after any write to the store, in the middle of forced and background GC (moves,
 * erases, a victim freed, lines opened and filled, trims): every such store loads
 * consistent; each lpn mapped before and after the call is mapped; one mapped neither
 * before nor after is not; the statistics are those before or after the call; and the
 * loaded FTL goes on working.
 */
/*
 * Sub-page mapping: 16 KiB NAND pages of 4 units, pls planes, blocks of pgs pages, 64
 * lines of which 56 hold data.
 */
static FtlConfig units_config(uint32_t pls, uint32_t pgs)
{
    NandGeometry g = geo(2, 2, 64, pgs);
    FtlConfig c;

    g.pls_per_lun = pls;
    g.secs_per_pg = 32;
    c = config(g, 56ULL * 4 * pls * pgs * 4, 75, 95);
    c.units_per_pg = 4;
    return c;
}

/* store_config() with "PACING[/STREAMS[/units]]": units, sub-page units on two planes */
static FtlConfig store_config_paced(const char *how)
{
    FtlConfig c = store_config();
    g_auto(GStrv) part = g_strsplit(how, "/", 3);
    char *err = NULL;

    if (part[1] && part[2]) {
        c = units_config(2, 2);     /* lines of 64 units, as store_config's */
        c.tm.retry_pe = 2;
        c.tm.retry_max = 8;
    }
    g_assert_true(ftl_policy_parse(FTL_PACING, part[0], &c.gc_pacing, &err));
    if (part[1]) {
        g_assert_true(ftl_policy_parse(FTL_STREAM, part[1], &c.streams, &err));
    }
    return c;
}

static void test_store_kill_anywhere(const void *how)
{
    FtlConfig c = store_config_paced(how);
    bool paced = g_str_has_prefix(how, "proportional");
    uint64_t bytes = ftl_store_bytes(&c), n = c.exposed_pages;
    g_autofree uint8_t *store = g_malloc0(bytes);
    GRand *r = g_rand_new_with_seed(25);
    Mix m = { 0 };
    Ftl *f = attach(c, store);
    KillShots k = { .store = store, .bytes = bytes, .shots = g_ptr_array_new_with_free_func(g_free),
                    .call = g_array_new(false, false, sizeof(uint32_t)) };
    const uint32_t calls = 700;
    uint64_t **before = g_new0(uint64_t *, calls + 1);
    uint8_t **streams = g_new0(uint8_t *, calls + 1);   /* host writes' stream, per lpn */
    FtlStats *st = g_new0(FtlStats, calls + 1);
    uint64_t gc0, fg0, bg0, mv0, shots_gc = 0, checked[FTL_MAX_STREAMS] = { 0 };

    store_mix(f, r, 6000, &m, NULL);        /* aged: GC due */
    gc0 = ftl_stats(f)->gc_runs;
    fg0 = ftl_stats(f)->gc_forced_runs;
    bg0 = ftl_stats(f)->gc_bg_ops;
    mv0 = ftl_stats(f)->gc_pages_moved;
    f->store_hook = (FtlStoreHook){ kill_shot, &k };
    for (uint32_t i = 0; i <= calls; i++) {
        before[i] = g_new(uint64_t, n);
        streams[i] = g_new(uint8_t, n);
        for (uint64_t lpn = 0; lpn < n; lpn++) {
            before[i][lpn] = where(f, lpn);
            streams[i][lpn] = ftl_stream_for(f, false, lpn);
        }
        st[i] = *ftl_stats(f);
        if (i == calls) {
            break;
        }
        k.now_call = i;
        store_mix(f, r, 1, &m, NULL);
    }
    g_assert_cmpuint(ftl_stats(f)->gc_runs - gc0, >, 10);
    if (paced) {
        /* moves paced with the host's writes: victims half-way at many kill points */
        g_assert_cmpuint(ftl_stats(f)->gc_pages_moved - mv0, >, 100);
        g_assert_cmpuint(ftl_stats(f)->gc_runs - gc0, >, ftl_stats(f)->gc_forced_runs - fg0);
    } else {
        g_assert_cmpuint(ftl_stats(f)->gc_forced_runs - fg0, >, 2);
        g_assert_cmpuint(ftl_stats(f)->gc_bg_ops - bg0, >, 100);
    }
    g_test_message("%u kill points in %u calls", k.shots->len, calls);
    for (uint32_t s = 0; s < k.shots->len; s++) {
        uint32_t i = g_array_index(k.call, uint32_t, s);
        Ftl *g = attach(c, g_ptr_array_index(k.shots, s));
        const FtlStats *gs = ftl_stats(g);
        assert_consistent(g);
        for (uint64_t lpn = 0; lpn < n; lpn++) {
            bool was = before[i][lpn], is = before[i + 1][lpn], got = where(g, lpn);
            if (was && is && !got) {
                g_error("kill point %u (call %u): lpn %" G_GUINT64_FORMAT " lost", s, i, lpn);
            }
            if (!was && !is && got) {
                g_error("kill point %u (call %u): lpn %" G_GUINT64_FORMAT " mapped", s, i,
                        lpn);
            }
            if (got && got != was && got != is) {
                shots_gc++;     /* moved by GC in this call, then written by the host */
            }
        }
        g_assert_true(gs->host_pages_written == st[i].host_pages_written ||
                      gs->host_pages_written == st[i + 1].host_pages_written);
        g_assert_true(gs->gc_runs == st[i].gc_runs || gs->gc_runs == st[i + 1].gc_runs);
        g_assert_true(gs->blocks_erased == st[i].blocks_erased ||
                      gs->blocks_erased == st[i + 1].blocks_erased);
        if (c.units_per_pg > 1) {
            /* whole NAND pages: some units still buffered, flushed ones padded */
            g_assert_cmpuint(gs->nand_pages_written % c.units_per_pg, ==, 0);
        } else {
            g_assert_cmpuint(gs->nand_pages_written, ==, gs->host_pages_written +
                                                         gs->gc_pages_moved);
        }
        if (s + 1 == k.shots->len || g_array_index(k.call, uint32_t, s + 1) != i) {
            /* the call's last store: the running drive's state after it, its streams */
            for (uint64_t lpn = 0; lpn < n; lpn++) {
                checked[streams[i + 1][lpn]]++;
                if (ftl_stream_for(g, false, lpn) != streams[i + 1][lpn]) {
                    g_error("kill point %u (call %u): lpn %" G_GUINT64_FORMAT " goes to "
                            "stream %u reloaded, %u running", s, i, lpn,
                            ftl_stream_for(g, false, lpn), streams[i + 1][lpn]);
                }
            }
        }
        if (s % 16 == 0) {
            Mix later = m;
            store_mix(g, r, 300, &later, NULL);
            assert_consistent(g);
        }
        ftl_free(g);
    }
    g_test_message("%" G_GUINT64_FORMAT " mappings in between (GC moved, host rewrote); "
                   "host streams checked after a reload: %" G_GUINT64_FORMAT " / %"
                   G_GUINT64_FORMAT " / %" G_GUINT64_FORMAT " to streams 0 / 1 / 2", shots_gc,
                   checked[0], checked[1], checked[2]);
    for (uint32_t i = 0; i <= calls; i++) {
        g_free(before[i]);
        g_free(streams[i]);
    }
    g_free(before);
    g_free(streams);
    g_free(st);
    g_ptr_array_free(k.shots, true);
    g_array_free(k.call, true);
    g_rand_free(r);
    ftl_free(f);
}


/* ---- mapping units smaller than the NAND page ---- */

/* Host writes and GC moves on sub-page units keep the mapping (random mix, with idle). */
static void test_units_random_mix(void)
{
    run_random_mix(units_config(2, 4), 4, 300, true);
}

/*
 * Units are packed into whole programs: a NAND page is programmed once its 4 units are
 * written, with the chip's other plane at the same page index. A write that completes a
 * program waits for it; one whose units wait in the buffer completes at its arrival.
 */
static void test_units_packing(void)
{
    Ftl *f = ftl(units_config(2, 16));
    const NandModel *m = ftl_nand(f);
    const uint64_t units = 4 * 4 * 2 * 3;   /* three stripe rows: 4 chips x 2 planes */
    uint64_t now = 0;

    for (uint64_t lpn = 0; lpn < units; lpn++) {
        NandAddr a;
        uint32_t unit;
        /* NAND page lpn / 4 of the line: planes after the 4 chips, so plane (lpn / 16) % 2 */
        bool completes = lpn % 4 == 3 && (lpn / 16) % 2 == 1;
        now += 1000 * US;
        /* two pages in (10 us each), then tPROG */
        g_assert_cmpuint(ftl_write(f, lpn, 1, now), ==, now + (completes ? 220 * US : 0));
        g_assert_true(ftl_lookup_unit(f, lpn, &a, &unit));
        g_assert_cmpuint(unit, ==, lpn % 4);
        g_assert_cmpuint(a.pl, ==, (lpn / 16) % 2);
    }
    g_assert_cmpuint(m->stats.programs, ==, units / 4);            /* NAND pages */
    g_assert_cmpuint(m->stats.multiplane_ops, ==, units / 8);      /* both planes each */
    g_assert_cmpuint(ftl_stats(f)->nand_pages_written, ==, units);
    g_assert_cmpuint(ftl_stats(f)->host_pages_written, ==, units);
    /* a request of whole programs: programmed at once, and waits for them */
    now += 1000 * US;
    /* two chips a channel: the second takes its pages in after the first (20 us) */
    g_assert_cmpuint(ftl_write(f, 1000, 32, now), ==, now + 20 * US + 220 * US);
    g_assert_cmpuint(m->stats.programs, ==, units / 4 + 8);
    assert_consistent(f);
    ftl_free(f);
}

/*
 * Flush programs a partly filled NAND page, padded: its unused units are written (and
 * counted) but never mapped, and the next unit goes to the next page. A unit still in the
 * buffer is read from it, with no NAND read.
 */
static void test_units_flush_pads(void)
{
    Ftl *f = ftl(units_config(1, 16));
    const NandModel *m = ftl_nand(f);
    NandAddr a0, a1;
    uint32_t u0, u1;

    g_assert_cmpuint(ftl_write(f, 7, 1, 1000 * US), ==, 1000 * US);   /* buffered */
    g_assert_cmpuint(ftl_read(f, 7, 1, 1100 * US), ==, 1100 * US);
    g_assert_cmpuint(m->stats.reads, ==, 0);
    g_assert_cmpuint(m->stats.programs, ==, 0);
    g_assert_cmpuint(ftl_flush(f, 2000 * US), ==, 2000 * US + 10 * US + 200 * US);
    g_assert_cmpuint(m->stats.programs, ==, 1);
    g_assert_cmpuint(ftl_stats(f)->nand_pages_written, ==, 4);     /* 1 unit + 3 of padding */
    g_assert_cmpuint(ftl_flush(f, 3000 * US), ==, 3000 * US);      /* nothing left */
    g_assert_cmpuint(m->stats.programs, ==, 1);
    ftl_write(f, 8, 1, 4000 * US);
    g_assert_true(ftl_lookup_unit(f, 7, &a0, &u0));
    g_assert_true(ftl_lookup_unit(f, 8, &a1, &u1));
    g_assert_cmpuint(u0, ==, 0);
    g_assert_cmpuint(u1, ==, 0);
    g_assert_cmpuint(ftl_addr_to_ppn(f, &a1), ==, ftl_addr_to_ppn(f, &a0) + 4);
    g_assert_cmpuint(f->lines[a0.blk].vpc, ==, 2);
    /* lpn 7 is on flash now: one NAND read */
    g_assert_cmpuint(ftl_read(f, 7, 1, 5000 * US), >, 5000 * US + 40 * US);
    g_assert_cmpuint(m->stats.reads, ==, 1);
    assert_consistent(f);
    ftl_free(f);
}

/*
 * A read of units costs one NAND read per page they are on: tR and the transfer of those
 * units' bytes (10 us a whole page, 2.5 us a unit). The mapping puts consecutive lpns
 * written together in consecutive units.
 */
static void test_units_reads(void)
{
    Ftl *f = ftl(units_config(1, 16));
    const NandModel *m = ftl_nand(f);
    uint64_t now = 10000 * US;
    NandAddr a, b;
    uint32_t u, v;

    ftl_write(f, 0, 64, 0);         /* 16 full pages: programmed */
    for (uint64_t lpn = 0; lpn < 64; lpn++) {
        g_assert_true(ftl_lookup_unit(f, lpn, &a, &u));
        g_assert_cmpuint(u, ==, lpn % 4);
        g_assert_cmpuint(ftl_addr_to_ppn(f, &a), ==, lpn / 4 * 4);
    }
    g_assert_cmpuint(ftl_read(f, 5, 1, now), ==, now + 40 * US + 2500);
    g_assert_cmpuint(m->stats.reads, ==, 1);
    now += 1000 * US;
    g_assert_cmpuint(ftl_read(f, 4, 4, now), ==, now + 40 * US + 10 * US);   /* one page */
    g_assert_cmpuint(m->stats.reads, ==, 2);
    now += 1000 * US;
    ftl_read(f, 2, 4, now);                                 /* 2 units on each of 2 pages */
    g_assert_cmpuint(m->stats.reads, ==, 4);
    /* never written: a page's worth of lpns is one read on the chip it would stripe to */
    now += 1000 * US;
    g_assert_cmpuint(ftl_read(f, 4000, 4, now), ==, now + 40 * US + 10 * US);
    g_assert_cmpuint(m->stats.reads, ==, 5);
    g_assert_cmpuint(ftl_stats(f)->unmapped_pages_read, ==, 4);
    g_assert_cmpuint(ftl_stats(f)->host_pages_read, ==, 13);
    /* an overwrite moves one unit, the others stay where they were */
    ftl_write(f, 5, 4, now);
    g_assert_true(ftl_lookup_unit(f, 4, &a, &u));
    g_assert_true(ftl_lookup_unit(f, 5, &b, &v));
    g_assert_cmpuint(ftl_addr_to_ppn(f, &a) + u, ==, 4);
    g_assert_cmpuint(ftl_addr_to_ppn(f, &b) + v, ==, 64);
    assert_consistent(f);
    ftl_free(f);
}

/* Pages of line l with a valid unit. */
static uint64_t valid_pages(const Ftl *f, uint32_t l)
{
    uint64_t n = 0;

    for (uint64_t p = 0; p < f->line_pages; p++) {
        bool any = false;
        for (uint32_t u = 0; u < f->upp; u++) {
            any |= rev_get(f, l * f->units_per_line + p * f->upp + u) != 0;
        }
        n += any;
    }
    return n;
}

/*
 * GC reads each NAND page of a victim once for all its valid units: with no host reads,
 * the NAND reads are the victims' pages that held a valid unit when collected, and the
 * units moved their valid units. Half of each page overwritten: far fewer reads than units.
 */
static void test_units_gc_reads_once(void)
{
    FtlConfig c = units_config(1, 16);
    Ftl *f;
    const NandModel *m;
    uint64_t n = c.exposed_pages, want_reads = 0, want_moved = 0, now = 1000 * US;
    uint64_t *vp;

    c.gc_thres_pcent = c.gc_thres_pcent_high;   /* forced GC only: whole victims per call */
    f = ftl(c);
    m = ftl_nand(f);
    vp = g_new0(uint64_t, f->nlines);
    for (uint64_t lpn = 0; lpn < n; lpn += 64) {
        ftl_write(f, lpn, 64, 0);
    }
    g_assert_cmpuint(m->stats.reads, ==, 0);
    for (uint32_t round = 0; round < 3; round++) {
        for (uint64_t lpn = 0; lpn < n; lpn++) {
            if (lpn % 4 >= 2) {
                continue;
            }
            /* forced GC comes before this write only when free lines are at its threshold */
            bool gc = ftl_stats(f)->free_lines <= f->gc_forced_lines;
            g_autofree FtlLine *before = g_memdup2(f->lines, sizeof(FtlLine) * f->nlines);
            for (uint32_t l = 0; gc && l < f->nlines; l++) {
                vp[l] = f->lines[l].state == FTL_LINE_FULL ? valid_pages(f, l) : 0;
            }
            ftl_write(f, lpn, 1, now);      /* all at once: no idle time, no background GC */
            for (uint32_t l = 0; l < f->nlines; l++) {
                if (f->lines[l].erases != before[l].erases) {
                    g_assert_true(gc);
                    want_reads += vp[l];
                    want_moved += before[l].vpc;
                }
            }
        }
    }
    g_assert_cmpuint(ftl_stats(f)->gc_runs, >, 20);
    g_assert_cmpuint(m->stats.reads, ==, want_reads);
    g_assert_cmpuint(ftl_stats(f)->gc_pages_moved, ==, want_moved);
    g_test_message("%" G_GUINT64_FORMAT " units moved with %" G_GUINT64_FORMAT " NAND reads",
                   want_moved, want_reads);
    g_assert_cmpuint(m->stats.reads * 3, <, want_moved * 2);
    assert_consistent(f);
    g_free(vp);
    ftl_free(f);
}

/* Sub-page units: a count that does not divide the page is refused, naming the property. */
static void test_units_config(void)
{
    FtlConfig c = units_config(1, 16);
    char *err = NULL;

    c.units_per_pg = 3;
    g_assert_false(ftl_config_check(&c, &err));
    g_assert_nonnull(strstr(err, "map_unit_kb"));
    g_free(err);
    c.units_per_pg = 64;            /* 256-byte units: less than a sector */
    err = NULL;
    g_assert_false(ftl_config_check(&c, &err));
    g_free(err);
    c.units_per_pg = 32;            /* 512-byte units: one sector each */
    g_assert_true(ftl_config_check(&c, &err));
    g_assert_cmpuint(ftl_unit_bytes(&c), ==, 512);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ftl/map/random-mix", test_random_mix_consistent);
    g_test_add_func("/ftl/map/random-mix-planes", test_random_mix_planes);
    g_test_add_func("/ftl/map/min-spare-never-stuck", test_min_spare_never_stuck);
    g_test_add_func("/ftl/gc/min-spare-long-lines", test_min_spare_long_lines);
    g_test_add_func("/ftl/map/address-round-trip", test_address_round_trip);
    g_test_add_func("/ftl/map/checker-catches", test_consistency_check_catches);
    g_test_add_func("/ftl/waf/sequential", test_waf_sequential);
    g_test_add_func("/ftl/waf/random-op", test_waf_random_op);
    g_test_add_func("/ftl/waf/estimate", test_waf_estimate);
    g_test_add_func("/ftl/waf/default-thresholds", test_waf_default_thresholds);
    g_test_add_func("/ftl/gc/threshold-values", test_thresholds_values);
    g_test_add_func("/ftl/gc/none-above-background", test_no_gc_above_background);
    g_test_add_func("/ftl/gc/background-when-idle", test_background_gc_when_idle);
    g_test_add_func("/ftl/gc/background-yields", test_background_gc_yields_to_host);
    g_test_add_func("/ftl/gc/background-per-chip", test_background_gc_per_chip);
    g_test_add_func("/ftl/timing/multiplane-program-pairs", test_multiplane_program_pairs);
    g_test_add_func("/ftl/gc/forced-at-threshold", test_forced_gc_at_threshold);
    g_test_add_func("/ftl/gc/forced-finishes-background",
                    test_forced_gc_finishes_background_in_parallel);
    g_test_add_func("/ftl/gc/greedy-victim", test_greedy_victim);
    g_test_add_func("/ftl/trim", test_trim);
    g_test_add_func("/ftl/time/latest-page", test_request_completes_at_latest_page);
    g_test_add_func("/ftl/time/striping", test_sequential_striping);
    g_test_add_func("/ftl/time/gc-slows-writes", test_gc_slows_host_writes);
    g_test_add_func("/ftl/time/monotonic", test_time_monotonic);
    g_test_add_func("/ftl/time/unmapped-read", test_unmapped_read_cost);
    g_test_add_func("/ftl/time/prefetch-mapped-only", test_prefetch_mapped_only);
    g_test_add_func("/ftl/config/derive", test_derive_blocks);
    g_test_add_func("/ftl/config/derive-small-op", test_derive_refuses_small_op);
    g_test_add_func("/ftl/config/check", test_config_check);
    g_test_add_func("/ftl/store/reload", test_store_reload);
    g_test_add_func("/ftl/store/refused", test_store_refused);
    g_test_add_func("/ftl/store/wide-tables", test_wide_tables);
    g_test_add_func("/ftl/store/bad-entry", test_store_bad_entry);
    g_test_add_func("/ftl/store/bad-line-record", test_store_bad_line_record);
    g_test_add_func("/ftl/store/stats-slots", test_store_stats_slots);
    g_test_add_func("/ftl/store/background-victim", test_store_background_victim);
    g_test_add_data_func("/ftl/store/kill-anywhere", "burst", test_store_kill_anywhere);
    g_test_add_data_func("/ftl/store/kill-anywhere-paced", "proportional",
                         test_store_kill_anywhere);
    g_test_add_data_func("/ftl/store/kill-anywhere-streams", "burst/host-gc",
                         test_store_kill_anywhere);
    g_test_add_data_func("/ftl/store/kill-anywhere-paced-streams", "proportional/host-gc",
                         test_store_kill_anywhere);
    g_test_add_data_func("/ftl/store/kill-anywhere-hot-cold", "burst/hot-cold",
                         test_store_kill_anywhere);
    g_test_add_data_func("/ftl/store/kill-anywhere-paced-hot-cold", "proportional/hot-cold",
                         test_store_kill_anywhere);
    g_test_add_data_func("/ftl/store/kill-anywhere-units", "burst/shared/units",
                         test_store_kill_anywhere);
    g_test_add_data_func("/ftl/store/kill-anywhere-units-paced-streams",
                         "proportional/host-gc/units", test_store_kill_anywhere);
    g_test_add_func("/ftl/units/random-mix", test_units_random_mix);
    g_test_add_func("/ftl/units/packing", test_units_packing);
    g_test_add_func("/ftl/units/flush-pads", test_units_flush_pads);
    g_test_add_func("/ftl/units/reads", test_units_reads);
    g_test_add_func("/ftl/units/gc-reads-once", test_units_gc_reads_once);
    g_test_add_func("/ftl/units/config", test_units_config);
    return g_test_run();
}
