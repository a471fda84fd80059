/*
 * The NAND timelines: the properties a researcher relies on.
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>
#include "nand/nand.h"

#define US 1000ULL

static NandGeometry geo(uint32_t nchs, uint32_t luns)
{
    return (NandGeometry){ .nchs = nchs, .luns_per_ch = luns, .pls_per_lun = 1,
                           .blks_per_pl = 16, .pgs_per_blk = 64, .secs_per_pg = 8,
                           .secsz = 512 };
}

static NandTiming slc(void)
{
    return (NandTiming){ .cell_bits = 1, .pg_rd_lat = { 40 * US }, .pg_wr_lat = { 200 * US },
                         .blk_er_lat = 2000 * US, .ch_xfer_lat = 10 * US, .time_scale = 1 };
}

static NandModel *model(NandGeometry g, NandTiming t)
{
    char *err = NULL;
    NandModel *m = nand_model_new(&g, &t, &err);
    g_assert_cmpstr(err, ==, NULL);
    g_assert_nonnull(m);
    return m;
}

/* Reads on one chip serialize: tR then data-out, each waiting for the last. */
static void test_one_chip_serializes(void)
{
    NandModel *m = model(geo(1, 1), slc());
    NandAddr a = { 0 };
    uint64_t t1 = nand_op(m, NAND_OP_READ, &a, 0);
    uint64_t t2 = nand_op(m, NAND_OP_READ, &a, 0);
    g_assert_cmpuint(t1, ==, 40 * US + 10 * US);
    g_assert_cmpuint(t2, ==, 2 * t1);
    nand_model_free(m);
}

/* N chips on N channels: N-fold throughput for the same work. */
static void test_parallel_chips_scale(void)
{
    for (uint32_t n = 1; n <= 8; n *= 2) {
        NandModel *m = model(geo(n, 1), slc());
        uint64_t last = 0;
        for (int i = 0; i < 64; i++) {
            NandAddr a = { .ch = i % n, .pg = i / n };
            uint64_t t = nand_op(m, NAND_OP_PROGRAM, &a, 0);
            last = MAX(last, t);
        }
        /* 64 programs of 210 us over n independent chips */
        g_assert_cmpuint(last, ==, (64 / n) * 210 * US);
        nand_model_free(m);
    }
}

/* Many chips behind one channel: the channel's transfers become the bottleneck. */
static void test_channel_contention(void)
{
    NandTiming t = slc();
    t.pg_rd_lat[0] = 10 * US;
    t.ch_xfer_lat = 20 * US;
    NandModel *m = model(geo(1, 8), t);
    uint64_t last = 0;
    for (uint32_t lun = 0; lun < 8; lun++) {
        NandAddr a = { .lun = lun };
        uint64_t done = nand_op(m, NAND_OP_READ, &a, 0);   /* MAX() evaluates twice */
        last = MAX(last, done);
    }
    /* all arrays sense in parallel (10 us), then 8 transfers queue on the bus */
    g_assert_cmpuint(last, ==, 10 * US + 8 * 20 * US);
    /* the same reads on 8 channels finish together */
    NandModel *w = model(geo(8, 1), t);
    uint64_t wide = 0;
    for (uint32_t ch = 0; ch < 8; ch++) {
        NandAddr a = { .ch = ch };
        uint64_t done = nand_op(w, NAND_OP_READ, &a, 0);
        wide = MAX(wide, done);
    }
    g_assert_cmpuint(wide, ==, 30 * US);
    nand_model_free(m);
    nand_model_free(w);
}

/* An erase holds its chip; other chips go on. */
static void test_erase_blocks_chip(void)
{
    NandModel *m = model(geo(2, 1), slc());
    NandAddr a0 = { .ch = 0 }, a1 = { .ch = 1 };
    uint64_t e = nand_op(m, NAND_OP_ERASE, &a0, 0);
    g_assert_cmpuint(e, ==, 2000 * US);
    g_assert_cmpuint(nand_op(m, NAND_OP_READ, &a0, 10), ==, e + 50 * US);
    g_assert_cmpuint(nand_op(m, NAND_OP_READ, &a1, 10), ==, 10 + 50 * US);
    nand_model_free(m);
}

/* A program occupies the channel only for its data-in: another chip's read overlaps tPROG. */
static void test_program_releases_channel(void)
{
    NandModel *m = model(geo(1, 2), slc());
    NandAddr a0 = { .lun = 0 }, a1 = { .lun = 1 };
    uint64_t p = nand_op(m, NAND_OP_PROGRAM, &a0, 0);
    uint64_t r = nand_op(m, NAND_OP_READ, &a1, 0);
    g_assert_cmpuint(p, ==, 210 * US);
    /* sensed at 40 us, bus free since 10 us */
    g_assert_cmpuint(r, ==, 50 * US);
    nand_model_free(m);
}

/* Random operations at non-decreasing arrival: completions never precede arrivals and
 * each resource's free time never goes backwards. Same inputs, same outputs. */
static void test_monotonic_and_deterministic(void)
{
    NandModel *m[2] = { model(geo(4, 4), slc()), model(geo(4, 4), slc()) };
    for (int k = 0; k < 2; k++) {
        GRand *r = g_rand_new_with_seed(7);
        uint64_t now = 0, prev_free[16] = { 0 };
        for (int i = 0; i < 20000; i++) {
            NandAddr a = { .ch = g_rand_int_range(r, 0, 4), .lun = g_rand_int_range(r, 0, 4),
                           .pg = g_rand_int_range(r, 0, 64) };
            NandOp op = g_rand_int_range(r, 0, 10) == 0 ? NAND_OP_ERASE :
                        g_rand_int_range(r, 0, 2) ? NAND_OP_READ : NAND_OP_PROGRAM;
            now += g_rand_int_range(r, 0, 30 * US);
            uint64_t done = nand_op(m[k], op, &a, now);
            g_assert_cmpuint(done, >, now);
            for (int l = 0; l < 16; l++) {
                g_assert_cmpuint(nand_chip_busy_until(m[k], l), >=, prev_free[l]);
                prev_free[l] = nand_chip_busy_until(m[k], l);
            }
        }
        g_rand_free(r);
    }
    g_assert_cmpuint(nand_all_idle_ns(m[0]), ==, nand_all_idle_ns(m[1]));
    for (uint32_t l = 0; l < 16; l++) {
        g_assert_cmpuint(nand_chip_busy_until(m[0], l), ==, nand_chip_busy_until(m[1], l));
    }
    nand_model_free(m[0]);
    nand_model_free(m[1]);
}

/* TLC: lower, upper and extra pages have their own latencies; the time scale stretches all. */
static void test_page_types_and_scale(void)
{
    NandTiming t = { .cell_bits = 3, .pg_rd_lat = { 50 * US, 65 * US, 80 * US },
                     .pg_wr_lat = { 400 * US, 700 * US, 1000 * US }, .blk_er_lat = 3000 * US,
                     .ch_mts = 800, .ch_width_bytes = 1, .time_scale = 1 };
    NandModel *m = model(geo(1, 3), t);
    /* 4096 bytes at 800 MB/s: 5.12 us, rounded up */
    g_assert_cmpuint(m->xfer_ns, ==, 5120);
    for (uint32_t pg = 0; pg < 3; pg++) {
        NandAddr a = { .lun = pg, .pg = pg };
        g_assert_cmpuint(nand_page_type(m, pg), ==, pg);
        /* one channel: each read also waits for the previous data-out */
        uint64_t done = nand_op(m, NAND_OP_READ, &a, 0);
        g_assert_cmpuint(done, ==, t.pg_rd_lat[pg] + 5120);
    }
    nand_model_free(m);

    t.time_scale = 10;
    m = model(geo(1, 1), t);
    NandAddr a = { .pg = 2 };
    g_assert_cmpuint(nand_op(m, NAND_OP_PROGRAM, &a, 0), ==, 10 * (5120 + 1000 * US));
    nand_model_free(m);
}

static void test_invalid_configs_refused(void)
{
    struct { NandGeometry g; const char *name; } bad[] = {
        { { 0, 1, 1, 1, 1, 8, 512 }, "nchs" },
        { { 1, 0, 1, 1, 1, 8, 512 }, "luns_per_ch" },
        { { 1, 1, 1, 0, 1, 8, 512 }, "blks_per_pl" },
        { { 1, 1, 1, 1, 0, 8, 512 }, "pgs_per_blk" },
        { { 1, 1, 1, 1, 1, 8, 1000 }, "secsz" },
        { { 256, 256, 16, 1u << 20, 1u << 16, 8, 512 }, "2^48" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        char *err = NULL;
        g_assert_false(nand_geometry_check(&bad[i].g, &err));
        g_assert_nonnull(strstr(err, bad[i].name));
        g_free(err);
    }
    NandTiming t = slc();
    t.cell_bits = 5;
    char *err = NULL;
    NandGeometry g = geo(1, 1);
    g_assert_null(nand_model_new(&g, &t, &err));
    g_assert_nonnull(strstr(err, "cell_bits"));
    g_free(err);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/nand/one-chip-serializes", test_one_chip_serializes);
    g_test_add_func("/nand/parallel-chips-scale", test_parallel_chips_scale);
    g_test_add_func("/nand/channel-contention", test_channel_contention);
    g_test_add_func("/nand/erase-blocks-chip", test_erase_blocks_chip);
    g_test_add_func("/nand/program-releases-channel", test_program_releases_channel);
    g_test_add_func("/nand/monotonic-deterministic", test_monotonic_and_deterministic);
    g_test_add_func("/nand/page-types-and-scale", test_page_types_and_scale);
    g_test_add_func("/nand/invalid-configs", test_invalid_configs_refused);
    return g_test_run();
}
