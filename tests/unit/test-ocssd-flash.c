/*
 * Chunks on flash (ocssd/ocssd-flash.c) and the whitebox media (ocssd-media.c): every page
 * read, unit program and block erase happens once and takes the NAND model's time; PUs
 * work in parallel, the units of one PU one after another behind its write cache.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include "ocssd/ocssd-flash.h"
#include "media/media.h"

#define R 1000000ULL            /* tR */
#define W 7000000ULL            /* tPROG */
#define E 30000000ULL           /* tBERS */

/* 4 channels of one chip, one or two planes of 4 x 4 KiB sectors; 4 chunks per PU. */
static OcFlashConfig config(uint32_t planes, uint32_t cache_units)
{
    return (OcFlashConfig){
        .geo = { .nchs = 4, .luns_per_ch = 1, .pls_per_lun = planes, .blks_per_pl = 4,
                 .pgs_per_blk = 16, .secs_per_pg = 4, .secsz = 4096 },
        .tm = { .cell_bits = 1, .pg_rd_lat = { R }, .pg_wr_lat = { W }, .blk_er_lat = E,
                .ch_width_bytes = 1, .time_scale = 1 },
        .sector_bytes = 4096, .chunks_per_pu = 4, .cache_units = cache_units,
    };
}

static OcFlash *mk(uint32_t planes, uint32_t cache_units)
{
    OcFlashConfig c = config(planes, cache_units);
    char *err = NULL;
    OcFlash *f = oc_flash_new(&c, &err);

    if (!f) {
        g_error("oc_flash_new: %s", err);
    }
    return f;
}

static void test_read(void)
{
    OcFlash *f = mk(1, 1);

    /* one sector, one unit (a page): one tR */
    g_assert_cmpuint(oc_flash_read(f, 0, 0, 1, 0), ==, R);
    g_assert_cmpuint(oc_flash_stats(f)->pages_read, ==, 1);
    g_assert_cmpuint(oc_flash_read(f, 0, 4, 4, 10 * R), ==, 11 * R);
    g_assert_cmpuint(oc_flash_stats(f)->pages_read, ==, 2);
    /* four units of one PU: one after another; one unit on each of four PUs: at once */
    g_assert_cmpuint(oc_flash_read(f, 1, 0, 16, 20 * R), ==, 24 * R);
    for (uint64_t pu = 0; pu < 4; pu++) {
        g_assert_cmpuint(oc_flash_read(f, pu * 4 + 2, 0, 4, 30 * R), ==, 31 * R);
    }
    g_assert_cmpuint(oc_flash_stats(f)->pages_read, ==, 10);
    g_assert_cmpuint(oc_flash_nand(f)->stats.reads, ==, 10);
    oc_flash_free(f);

    /* two planes: a unit is a page on each; a read of one sector reads one page, a read
     * of the unit both pages in one multi-plane read (one tR) */
    f = mk(2, 1);
    g_assert_cmpuint(oc_flash_read(f, 0, 0, 1, 0), ==, R);
    g_assert_cmpuint(oc_flash_read(f, 0, 0, 8, 10 * R), ==, 11 * R);
    g_assert_cmpuint(oc_flash_stats(f)->pages_read, ==, 3);
    g_assert_cmpuint(oc_flash_nand(f)->stats.multiplane_ops, ==, 1);
    oc_flash_free(f);
}

static void test_write(void)
{
    OcFlash *f = mk(1, 1);

    /* the first unit goes into the cache at once; the second waits for its program */
    g_assert_cmpuint(oc_flash_write(f, 0, 0, 4, 0), ==, 0);
    g_assert_cmpuint(oc_flash_write(f, 0, 4, 4, 0), ==, W);
    g_assert_cmpuint(oc_flash_stats(f)->units_programmed, ==, 2);
    g_assert_cmpuint(oc_flash_nand(f)->stats.programs, ==, 2);
    g_assert_cmpuint(oc_flash_flush(f, 0), ==, 2 * W);
    /* 8 units of one PU: the last gets in when the 7th program is done */
    g_assert_cmpuint(oc_flash_write(f, 5, 0, 32, 10 * W), ==, 17 * W);
    /* 2 units on each of 4 PUs: one program */
    for (uint64_t pu = 0; pu < 4; pu++) {
        g_assert_cmpuint(oc_flash_write(f, pu * 4 + 2, 0, 8, 30 * W), ==, 31 * W);
    }
    g_assert_cmpuint(oc_flash_stats(f)->units_programmed, ==, 2 + 8 + 8);
    g_assert_cmpuint(oc_flash_nand(f)->stats.programs, ==, 18);
    /* a read of a unit still in the cache costs nothing */
    g_assert_cmpuint(oc_flash_read(f, 2, 4, 4, 31 * W), ==, 31 * W);
    g_assert_cmpuint(oc_flash_stats(f)->cache_read_hits, ==, 1);
    oc_flash_free(f);

    /* two planes: a unit is a page on each plane, one multi-plane program (tPROG, not
     * 2 tPROG: the channel costs nothing here) */
    f = mk(2, 2);
    g_assert_cmpuint(oc_flash_write(f, 0, 0, 24, 0), ==, W);
    g_assert_cmpuint(oc_flash_flush(f, 0), ==, 3 * W);
    g_assert_cmpuint(oc_flash_stats(f)->units_programmed, ==, 3);
    g_assert_cmpuint(oc_flash_nand(f)->stats.programs, ==, 6);
    g_assert_cmpuint(oc_flash_nand(f)->stats.multiplane_ops, ==, 3);
    oc_flash_free(f);
}

static void test_erase(void)
{
    OcFlash *f = mk(1, 1);

    g_assert_cmpuint(oc_flash_erase(f, 0, 0), ==, E);
    g_assert_cmpuint(oc_flash_stats(f)->blocks_erased, ==, 1);
    g_assert_cmpuint(oc_flash_nand(f)->stats.erases, ==, 1);
    /* one PU: after the first; another PU: at once */
    g_assert_cmpuint(oc_flash_erase(f, 1, 0), ==, 2 * E);
    g_assert_cmpuint(oc_flash_erase(f, 4, 0), ==, E);
    oc_flash_free(f);
    /* two planes: the chunk's block on each, erased at once */
    f = mk(2, 1);
    g_assert_cmpuint(oc_flash_erase(f, 0, 0), ==, E);
    g_assert_cmpuint(oc_flash_stats(f)->blocks_erased, ==, 2);
    g_assert_cmpuint(oc_flash_nand(f)->stats.erases, ==, 2);
    oc_flash_free(f);
}

/* Through the media interface: byte ranges, split at chunk ends, each part once. */
static void test_media(void)
{
    OcFlashConfig c = config(1, 1);
    uint64_t chunk_bytes = 64 * 4096;
    char *err = NULL;
    FemuMedia *m = femu_media_ocssd_new(&c, 64, &err);
    FemuMediaReq rd = { .op = FEMU_MEDIA_READ, .offset = 4096, .len = 4096 };
    FemuMediaReq wr = { .op = FEMU_MEDIA_WRITE, .offset = 2 * chunk_bytes - 4 * 4096,
                        .len = 8 * 4096, .arrival_ns = 100 * R };
    FemuMediaReq er = { .op = FEMU_MEDIA_ZONE_RESET, .offset = 5 * chunk_bytes,
                        .len = chunk_bytes, .arrival_ns = 1000 * R };

    g_assert_nonnull(m);
    g_assert_cmpuint(femu_media_submit(m, &rd), ==, R);
    /* the end of chunk 1 and the start of chunk 2: one unit each, same PU (0) */
    g_assert_cmpuint(femu_media_submit(m, &wr), ==, 100 * R + W);
    g_assert_cmpuint(femu_media_submit(m, &er), ==, 1000 * R + E);
    femu_media_destroy(m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ocssd-flash/read", test_read);
    g_test_add_func("/ocssd-flash/write", test_write);
    g_test_add_func("/ocssd-flash/erase", test_erase);
    g_test_add_func("/ocssd-flash/media", test_media);
    return g_test_run();
}
