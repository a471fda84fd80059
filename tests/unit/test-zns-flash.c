/*
 * Zones on flash: placement, write buffer pacing, buffer reads, drains, LRU eviction, reset
 * erases, determinism and configuration checks.
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>
#include "zns/zns-flash.h"

#define US 1000ULL
#define PG 4096ULL          /* page bytes of every geometry below */
#define TPROG (210 * US)    /* channel transfer 10 us + program 200 us */

static NandGeometry geo(uint32_t nchs, uint32_t luns, uint32_t pls, uint32_t pgs)
{
    return (NandGeometry){ .nchs = nchs, .luns_per_ch = luns, .pls_per_lun = pls,
                           .blks_per_pl = 0, .pgs_per_blk = pgs, .secs_per_pg = 8,
                           .secsz = 512 };
}

static NandTiming slc(void)
{
    return (NandTiming){ .cell_bits = 1, .pg_rd_lat = { 40 * US }, .pg_wr_lat = { 200 * US },
                         .blk_er_lat = 2000 * US, .ch_xfer_lat = 10 * US, .time_scale = 1 };
}

/* A derived configuration: zones of zone_pg pages (cap_pg writable), a wbuf_pg-page buffer. */
static ZnsFlashConfig config(NandGeometry g, uint32_t stripe, uint64_t nr_zones,
                             uint64_t zone_pg, uint64_t cap_pg, uint64_t wbuf_pg,
                             uint32_t wbuf_zones)
{
    ZnsFlashConfig c = { .geo = g, .tm = slc(), .nr_zones = nr_zones,
                         .zone_bytes = zone_pg * PG, .zone_cap_bytes = cap_pg * PG,
                         .stripe = stripe, .wbuf_bytes = wbuf_pg * PG,
                         .wbuf_zones = wbuf_zones };
    char *err = NULL;
    g_assert_true(zns_flash_derive_blocks(&c, &err));
    g_assert_cmpstr(err, ==, NULL);
    return c;
}

static ZnsFlash *flash(ZnsFlashConfig c)
{
    char *err = NULL;
    ZnsFlash *f = zns_flash_new(&c, &err);
    g_assert_cmpstr(err, ==, NULL);
    g_assert_nonnull(f);
    return f;
}

static uint32_t chip_of(const NandModel *m, const NandAddr *a)
{
    return nand_lun_index(m, a);
}

static uint64_t lun_free(ZnsFlash *f, uint32_t ch, uint32_t lun)
{
    NandModel *m = zns_flash_nand(f);
    return nand_chip_busy_until(m, ch * m->geo.luns_per_ch + lun);
}

/* Consecutive pages go to `stripe` different chips, channel-first; rows take new blocks. */
static void test_placement_stripe(void)
{
    /* 2 channels x 4 chips, stripe 4: two zones per row */
    ZnsFlash *f = flash(config(geo(2, 4, 1, 4), 4, 8, 16, 16, 8, 2));
    NandModel *m = zns_flash_nand(f);
    static const uint32_t want_ch[4] = { 0, 1, 0, 1 }, want_lun[4] = { 0, 0, 1, 1 };
    NandAddr a, b;

    for (uint64_t p = 0; p < 4; p++) {
        zns_flash_locate(f, 0, p, &a);
        g_assert_cmpuint(a.ch, ==, want_ch[p]);
        g_assert_cmpuint(a.lun, ==, want_lun[p]);
        g_assert_cmpuint(a.pg, ==, 0);
    }
    for (uint64_t z = 0; z < 8; z++) {
        for (uint64_t p = 0; p + 4 <= 16; p++) {
            /* any 4 consecutive pages: 4 chips; any 2: 2 channels */
            uint32_t seen = 0;
            for (uint64_t k = 0; k < 4; k++) {
                zns_flash_locate(f, z, p + k, &a);
                g_assert_cmpuint(seen & (1u << chip_of(m, &a)), ==, 0);
                seen |= 1u << chip_of(m, &a);
            }
            zns_flash_locate(f, z, p, &a);
            zns_flash_locate(f, z, p + 1, &b);
            g_assert_cmpuint(a.ch, !=, b.ch);
        }
        /* page p + stripe: same chip, next page */
        zns_flash_locate(f, z, 1, &a);
        zns_flash_locate(f, z, 5, &b);
        g_assert_cmpuint(chip_of(m, &a), ==, chip_of(m, &b));
        g_assert_cmpuint(b.pg, ==, a.pg + 1);
    }
    /* zones 0 and 1 share a row on disjoint chips; zone 2 reuses zone 0's chips, next block */
    uint32_t chips[3] = { 0 };
    for (uint64_t z = 0; z < 3; z++) {
        for (uint64_t p = 0; p < 16; p++) {
            zns_flash_locate(f, z, p, &a);
            chips[z] |= 1u << chip_of(m, &a);
        }
    }
    g_assert_cmpuint(chips[0] & chips[1], ==, 0);
    g_assert_cmpuint(chips[0] | chips[1], ==, 0xff);
    g_assert_cmpuint(chips[2], ==, chips[0]);
    zns_flash_locate(f, 0, 0, &a);
    zns_flash_locate(f, 2, 0, &b);
    g_assert_cmpuint(a.blk, !=, b.blk);
    zns_flash_free(f);
}

/* Every (zone, page) of a whole device is a distinct physical page inside the geometry. */
static void check_bijective(NandGeometry g, uint32_t stripe, uint64_t nr_zones,
                            uint64_t zone_pg, uint64_t cap_pg, uint32_t first_block)
{
    ZnsFlashConfig c = config(g, stripe, nr_zones, zone_pg, cap_pg, stripe, 1);
    /* derive on a config with first_block sizes the shared flash */
    c.first_block = first_block;
    char *err = NULL;
    g_assert_true(zns_flash_derive_blocks(&c, &err));
    NandModel *m = nand_model_new(&c.geo, &c.tm, &err);
    g_assert_nonnull(m);
    c.shared_nand = m;
    ZnsFlash *f = flash(c);
    g_assert_true(zns_flash_nand(f) == m);
    GHashTable *seen = g_hash_table_new(g_int64_hash, g_int64_equal);
    gint64 *keys = g_new(gint64, nr_zones * cap_pg);
    uint32_t min_blk = UINT32_MAX;

    for (uint64_t z = 0; z < nr_zones; z++) {
        for (uint64_t p = 0; p < cap_pg; p++) {
            NandAddr a;
            gint64 *k = &keys[z * cap_pg + p];
            zns_flash_locate(f, z, p, &a);
            g_assert_cmpuint(a.ch, <, g.nchs);
            g_assert_cmpuint(a.lun, <, g.luns_per_ch);
            g_assert_cmpuint(a.pl, <, g.pls_per_lun);
            g_assert_cmpuint(a.blk, <, c.geo.blks_per_pl);
            g_assert_cmpuint(a.pg, <, g.pgs_per_blk);
            min_blk = MIN(min_blk, a.blk);
            *k = (((gint64)chip_of(m, &a) * g.pls_per_lun + a.pl) * c.geo.blks_per_pl + a.blk)
                 * g.pgs_per_blk + a.pg;
            g_assert_false(g_hash_table_contains(seen, k));
            g_hash_table_add(seen, k);
        }
    }
    g_assert_cmpuint(g_hash_table_size(seen), ==, nr_zones * cap_pg);
    g_assert_cmpuint(min_blk, ==, first_block);
    g_hash_table_destroy(seen);
    g_free(keys);
    zns_flash_free(f);
    /* the shared model outlives the namespace */
    NandAddr a = { 0 };
    g_assert_cmpuint(nand_op(m, NAND_OP_ERASE, &a, 0), >, 0);
    nand_model_free(m);
}

static void test_placement_whole_device(void)
{
    check_bijective(geo(2, 2, 1, 4), 2, 4, 8, 8, 0);
    /* two planes, a capacity cutting the last unit, an odd number of zones, shared flash */
    check_bijective(geo(2, 2, 2, 4), 2, 5, 24, 19, 3);
    check_bijective(geo(2, 4, 2, 8), 8, 3, 64, 40, 7);
    check_bijective(geo(4, 2, 1, 16), 1, 17, 16, 13, 1);
}

/* Writing whole zones: time falls ~1/stripe (8 chips on 2 channels). */
static void test_stripe_scaling(void)
{
    uint64_t took[4], page_lat = 0;
    uint32_t stripes[4] = { 1, 2, 4, 8 };

    for (int i = 0; i < 4; i++) {
        ZnsFlash *f = flash(config(geo(2, 4, 1, 64), stripes[i], 8, 64, 64, 16, 1));
        uint64_t now = 0;
        for (uint64_t z = 0; z < 2; z++) {
            for (uint64_t off = 0; off < 64 * PG; off += 4 * PG) {
                now = zns_flash_write(f, z * 64 * PG + off, 4 * PG, now);
            }
        }
        took[i] = zns_flash_flush(f, now);
        g_assert_cmpuint(zns_flash_stats(f)->pages_programmed, ==, 2 * 64);
        g_assert_cmpuint(zns_flash_stats(f)->pad_pages_programmed, ==, 0);
        zns_flash_free(f);
        g_test_message("stripe %u: 2 zones (512 KiB) in %.0f us, %.1f MB/s", stripes[i],
                       took[i] / 1e3, 2.0 * 64 * PG * 1e3 / took[i]);
    }
    /* one chip: each page is one program after another */
    page_lat = took[0] / (2 * 64);
    g_assert_cmpuint(page_lat, >=, TPROG);
    g_assert_cmpuint(page_lat, <=, TPROG * 11 / 10);
    for (int i = 1; i < 4; i++) {
        double speedup = (double)took[0] / took[i];
        g_assert_cmpfloat(speedup, >=, stripes[i] * 0.85);
        g_assert_cmpfloat(speedup, <=, stripes[i] * 1.15);
        g_assert_cmpuint(took[i], <, took[i - 1]);
    }
}

/* A small write completes at once; a full unit is programmed but completes at once too. */
static void test_write_buffered(void)
{
    ZnsFlash *f = flash(config(geo(2, 2, 1, 16), 4, 4, 16, 16, 8, 2));
    NandModel *m = zns_flash_nand(f);

    g_assert_cmpuint(zns_flash_write(f, 0, PG, 1000), ==, 1000);
    g_assert_cmpuint(m->stats.programs, ==, 0);
    g_assert_cmpuint(zns_flash_stats(f)->pages_programmed, ==, 0);
    g_assert_cmpuint(nand_all_idle_ns(m), ==, 0);
    /* filling the unit (4 pages) starts its programs; the write does not wait for them */
    g_assert_cmpuint(zns_flash_write(f, PG, 3 * PG, 1000), ==, 1000);
    g_assert_cmpuint(m->stats.programs, ==, 4);
    g_assert_cmpuint(zns_flash_stats(f)->pages_programmed, ==, 4);
    g_assert_cmpuint(zns_flash_stats(f)->buffer_waits, ==, 0);
    /* two chips per channel: the second transfer waits for the first */
    g_assert_cmpuint(lun_free(f, 0, 0), ==, 1000 + TPROG);
    g_assert_cmpuint(lun_free(f, 0, 1), ==, 1000 + TPROG + 10 * US);
    g_assert_cmpuint(zns_flash_stats(f)->host_bytes_written, ==, 4 * PG);
    zns_flash_free(f);
}

/* A stream larger than the buffer is paced by program time. */
static void test_write_paced(void)
{
    for (uint64_t units = 1; units <= 2; units++) {
        /* stripe 2 on 2 channels: a unit is 2 pages programmed in parallel in 210 us */
        ZnsFlash *f = flash(config(geo(2, 1, 1, 64), 2, 1, 64, 64, 2 * units, 1));
        uint64_t prev = 0;
        for (uint64_t k = 0; k < 10; k++) {
            uint64_t done = zns_flash_write(f, k * 2 * PG, 2 * PG, 0);
            /* the first `units` fit at once, then one per program */
            g_assert_cmpuint(done, ==, k < units ? 0 : (k - units + 1) * TPROG);
            g_assert_cmpuint(done, >=, prev);
            prev = done;
        }
        g_assert_cmpuint(zns_flash_stats(f)->buffer_waits, ==, 10 - units);
        /* the last unit's program queues behind the `units` - 1 before it */
        g_assert_cmpuint(zns_flash_flush(f, 0), ==, prev + units * TPROG);
        zns_flash_free(f);
    }
    /* one write larger than the buffer: it completes when its last unit fits */
    ZnsFlash *f = flash(config(geo(2, 1, 1, 64), 2, 1, 64, 64, 4, 1));
    g_assert_cmpuint(zns_flash_write(f, 0, 16 * PG, 0), ==, 6 * TPROG);
    g_assert_cmpuint(zns_flash_stats(f)->buffer_waits, ==, 1);
    zns_flash_free(f);
    /* writes of a zone enter its buffer in order: a later one never completes earlier */
    f = flash(config(geo(2, 1, 1, 64), 2, 1, 64, 64, 4, 1));
    g_assert_cmpuint(zns_flash_write(f, 0, 4 * PG, 0), ==, 0);
    g_assert_cmpuint(zns_flash_write(f, 4 * PG, PG, 0), ==, TPROG);     /* waits for space */
    g_assert_cmpuint(zns_flash_write(f, 5 * PG, PG, 0), ==, TPROG);     /* fits, but after */
    zns_flash_free(f);
}

/* Just-written data is read from DRAM; programmed data costs page reads. */
static void test_read_buffer_and_nand(void)
{
    /* stripe 2 over 2 channels: zone 0 on (ch0, lun0) and (ch1, lun0) */
    ZnsFlash *f = flash(config(geo(2, 2, 1, 16), 2, 4, 16, 16, 8, 2));
    NandModel *m = zns_flash_nand(f);
    const ZnsFlashStats *st = zns_flash_stats(f);

    zns_flash_write(f, 0, PG, 0);
    g_assert_cmpuint(zns_flash_read(f, 0, PG, 0), ==, 0);
    g_assert_cmpuint(zns_flash_read(f, 512, 1024, 5), ==, 5);
    g_assert_cmpuint(st->buffer_read_hits, ==, 2);
    g_assert_cmpuint(st->pages_read, ==, 0);
    g_assert_cmpuint(m->stats.reads, ==, 0);
    /* the unit fills at 0: programs end at TPROG; until then reads still hit */
    zns_flash_write(f, PG, PG, 0);
    g_assert_cmpuint(zns_flash_read(f, 0, 2 * PG, TPROG - 1), ==, TPROG - 1);
    g_assert_cmpuint(st->buffer_read_hits, ==, 4);
    g_assert_cmpuint(m->stats.reads, ==, 0);
    /* after the program: one page read each, in parallel on two chips and channels */
    uint64_t t = 1000 * US;
    g_assert_cmpuint(zns_flash_read(f, 0, PG, t), ==, t + 50 * US);
    g_assert_cmpuint(zns_flash_read(f, 0, 2 * PG, 2 * t), ==, 2 * t + 50 * US);
    g_assert_cmpuint(st->pages_read, ==, 3);
    g_assert_cmpuint(m->stats.reads, ==, 3);
    /* a third page lands on chip 0 again: it waits */
    g_assert_cmpuint(zns_flash_read(f, 0, 3 * PG, 3 * t), ==, 3 * t + 100 * US);
    g_assert_cmpuint(st->pages_read, ==, 6);
    g_assert_cmpuint(st->buffer_read_hits, ==, 4);
    g_assert_cmpuint(st->host_bytes_read, ==, 9 * PG + 1024);
    zns_flash_free(f);
}

/* Read-ahead costs what a host read costs, on the same timelines, and is counted apart. */
static void test_prefetch(void)
{
    /* stripe 2 over 2 channels: zone 0 on (ch0, lun0) and (ch1, lun0); capacity 12 of 16 */
    ZnsFlash *f = flash(config(geo(2, 2, 1, 16), 2, 4, 16, 12, 8, 2));
    NandModel *m = zns_flash_nand(f);
    const ZnsFlashStats *st = zns_flash_stats(f);
    uint64_t t = 1000 * US;

    /* data still in the buffer: free, and not a host buffer hit */
    zns_flash_write(f, 0, PG, 0);
    g_assert_cmpuint(zns_flash_prefetch(f, 0, PG, 5), ==, 5);
    g_assert_cmpuint(st->buffer_read_hits, ==, 0);
    g_assert_cmpuint(st->prefetch_pages_read, ==, 0);
    g_assert_cmpuint(m->stats.reads, ==, 0);
    /* on flash: one page read per page, in parallel over the two chips */
    zns_flash_write(f, PG, 3 * PG, 0);
    g_assert_cmpuint(zns_flash_prefetch(f, 0, 2 * PG, t), ==, t + 50 * US);
    g_assert_cmpuint(st->prefetch_pages_read, ==, 2);
    g_assert_cmpuint(st->pages_read, ==, 2);
    g_assert_cmpuint(st->host_bytes_read, ==, 0);
    g_assert_cmpuint(m->stats.reads, ==, 2);
    /* a host read of chip 0 right behind it waits for it */
    g_assert_cmpuint(zns_flash_read(f, 2 * PG, PG, t), ==, t + 100 * US);
    g_assert_cmpuint(st->prefetch_pages_read, ==, 2);
    g_assert_cmpuint(st->pages_read, ==, 3);
    g_assert_cmpuint(st->host_bytes_read, ==, PG);
    /* and the reverse: a prefetch waits for host reads */
    g_assert_cmpuint(zns_flash_prefetch(f, 3 * PG, PG, t), ==, t + 100 * US);
    /* part of a page is a page; beyond the capacity costs nothing */
    g_assert_cmpuint(zns_flash_prefetch(f, 512, 100, 2 * t), ==, 2 * t + 50 * US);
    g_assert_cmpuint(zns_flash_prefetch(f, 12 * PG, 4 * PG, 3 * t), ==, 3 * t);
    g_assert_cmpuint(st->prefetch_pages_read, ==, 4);
    g_assert_cmpuint(st->pages_read, ==, 5);
    g_assert_cmpuint(st->buffer_read_hits, ==, 0);
    zns_flash_free(f);
}

/* Flush programs the padded partial unit and completes after the last program. */
static void test_flush_pads(void)
{
    ZnsFlash *f = flash(config(geo(2, 2, 1, 16), 4, 4, 16, 16, 8, 2));
    NandModel *m = zns_flash_nand(f);
    const ZnsFlashStats *st = zns_flash_stats(f);

    zns_flash_write(f, 0, 6 * PG, 0);   /* one unit programmed, two pages pending */
    g_assert_cmpuint(st->pages_programmed, ==, 4);
    uint64_t before = nand_all_idle_ns(m);
    uint64_t done = zns_flash_flush(f, 0);
    g_assert_cmpuint(st->pages_programmed, ==, 8);
    g_assert_cmpuint(st->pad_pages_programmed, ==, 2);
    g_assert_cmpuint(st->buffer_flushes, ==, 1);
    g_assert_cmpuint(m->stats.programs, ==, 8);
    g_assert_cmpuint(done, >, before);
    g_assert_cmpuint(done, ==, nand_all_idle_ns(m));
    /* second unit waits for the first on each chip: 2 program times + a queued transfer */
    g_assert_cmpuint(done, ==, 2 * TPROG + 10 * US);
    /* nothing left: a flush during the programs waits for them, one after costs nothing */
    g_assert_cmpuint(zns_flash_flush(f, 100 * US), ==, done);
    g_assert_cmpuint(zns_flash_flush(f, done + 1), ==, done + 1);
    g_assert_cmpuint(st->pages_programmed, ==, 8);
    g_assert_cmpuint(st->buffer_flushes, ==, 1);
    /* the padded data is now read from flash */
    zns_flash_read(f, 4 * PG, 2 * PG, done + 1);
    g_assert_cmpuint(st->pages_read, ==, 2);
    /* an empty device flushes at once */
    ZnsFlash *e = flash(config(geo(2, 2, 1, 16), 4, 4, 16, 16, 8, 2));
    g_assert_cmpuint(zns_flash_flush(e, 7), ==, 7);
    zns_flash_free(e);
    zns_flash_free(f);
}

/* A write that does not continue the pending data sends the old unit out padded. */
static void test_write_not_sequential(void)
{
    ZnsFlash *f = flash(config(geo(2, 2, 1, 16), 2, 4, 16, 16, 8, 2));
    const ZnsFlashStats *st = zns_flash_stats(f);

    zns_flash_write(f, 0, PG, 0);
    g_assert_cmpuint(zns_flash_write(f, 4 * PG, PG, 0), ==, 0);
    g_assert_cmpuint(st->buffer_flushes, ==, 1);
    g_assert_cmpuint(st->pages_programmed, ==, 2);
    g_assert_cmpuint(st->pad_pages_programmed, ==, 1);
    /* the new data is pending at its own offset; completing its unit programs it */
    zns_flash_read(f, 4 * PG, PG, 1000 * US);
    g_assert_cmpuint(st->buffer_read_hits, ==, 1);
    zns_flash_write(f, 5 * PG, 2 * PG, 1000 * US);
    g_assert_cmpuint(st->pages_programmed, ==, 4);
    g_assert_cmpuint(st->pad_pages_programmed, ==, 1);
    zns_flash_free(f);
}

/* Only the zone capacity has flash: the last unit may be cut short; beyond it is free. */
static void test_capacity(void)
{
    /* stripe 2, 16-page zones with 5 writable pages: units of pages 0-1, 2-3, 4 */
    ZnsFlash *f = flash(config(geo(2, 1, 1, 16), 2, 2, 16, 5, 4, 1));
    const ZnsFlashStats *st = zns_flash_stats(f);

    zns_flash_write(f, 0, 5 * PG, 0);
    g_assert_cmpuint(st->pages_programmed, ==, 5);
    uint64_t done = zns_flash_flush(f, 0);
    g_assert_cmpuint(st->pages_programmed, ==, 5);
    g_assert_cmpuint(st->buffer_flushes, ==, 0);
    /* a partial last unit is padded up to the capacity only */
    zns_flash_write(f, 16 * PG, 4 * PG + 512, done);
    zns_flash_flush(f, done);
    g_assert_cmpuint(st->pages_programmed, ==, 10);
    g_assert_cmpuint(st->pad_pages_programmed, ==, 0);
    g_assert_cmpuint(st->buffer_flushes, ==, 1);
    /* past the capacity: no flash to read */
    uint64_t t = 100000 * US;
    g_assert_cmpuint(zns_flash_read(f, 5 * PG, 11 * PG, t), ==, t);
    g_assert_cmpuint(st->pages_read, ==, 0);
    g_assert_cmpuint(zns_flash_read(f, 4 * PG, 2 * PG, t), ==, t + 50 * US);
    g_assert_cmpuint(st->pages_read, ==, 1);
    zns_flash_free(f);
}

/* Draining one zone leaves the others buffered and their chips untouched. */
static void test_drain_one_zone(void)
{
    /* stripe 2 on 4 chips: zone 0 on chips (0,0),(1,0); zone 1 on (0,1),(1,1) */
    ZnsFlash *f = flash(config(geo(2, 2, 1, 16), 2, 4, 16, 16, 8, 4));
    const ZnsFlashStats *st = zns_flash_stats(f);

    zns_flash_write(f, 0, PG, 0);
    zns_flash_write(f, 16 * PG, PG, 0);
    g_assert_cmpuint(zns_flash_drain_zone(f, 0, 0), ==, TPROG);
    g_assert_cmpuint(st->pages_programmed, ==, 2);
    g_assert_cmpuint(st->pad_pages_programmed, ==, 1);
    g_assert_cmpuint(st->buffer_flushes, ==, 1);
    g_assert_cmpuint(lun_free(f, 0, 0), ==, TPROG);
    g_assert_cmpuint(lun_free(f, 1, 0), ==, TPROG);
    g_assert_cmpuint(lun_free(f, 0, 1), ==, 0);
    g_assert_cmpuint(lun_free(f, 1, 1), ==, 0);
    /* zone 1 is still in DRAM */
    g_assert_cmpuint(zns_flash_read(f, 16 * PG, PG, 1000 * US), ==, 1000 * US);
    g_assert_cmpuint(st->buffer_read_hits, ==, 1);
    /* zone 0's data now comes from flash */
    g_assert_cmpuint(zns_flash_read(f, 0, PG, 1000 * US), ==, 1050 * US);
    /* draining an idle or never-written zone costs nothing */
    g_assert_cmpuint(zns_flash_drain_zone(f, 0, 2000 * US), ==, 2000 * US);
    g_assert_cmpuint(zns_flash_drain_zone(f, 3, 5), ==, 5);
    g_assert_cmpuint(st->pages_programmed, ==, 2);
    zns_flash_free(f);
}

/* With one buffer, two zones written alternately evict each other every time. */
static void test_lru_eviction(void)
{
    for (uint32_t zones = 1; zones <= 2; zones++) {
        ZnsFlash *f = flash(config(geo(2, 2, 1, 16), 2, 4, 16, 16, 8, zones));
        const ZnsFlashStats *st = zns_flash_stats(f);
        uint64_t now = 0;

        for (uint64_t i = 0; i < 6; i++) {
            uint64_t z = i % 2, off = z * 16 * PG + (i / 2) * 512;
            uint64_t done = zns_flash_write(f, off, 512, now);
            if (zones == 1 && i > 0) {
                /* the other zone's padded unit had to be programmed first */
                g_assert_cmpuint(done, ==, now + TPROG);
            } else {
                g_assert_cmpuint(done, ==, now);
            }
            now = done;
        }
        g_assert_cmpuint(st->buffer_flushes, ==, zones == 1 ? 5 : 0);
        g_assert_cmpuint(st->pad_pages_programmed, ==, zones == 1 ? 5 : 0);
        g_assert_cmpuint(st->buffer_waits, ==, zones == 1 ? 5 : 0);
        zns_flash_free(f);
    }
    /* three zones, two buffers: the least recently written one goes */
    ZnsFlash *f = flash(config(geo(2, 2, 1, 16), 2, 4, 16, 16, 8, 2));
    const ZnsFlashStats *st = zns_flash_stats(f);
    zns_flash_write(f, 0, PG, 0);               /* zone 0 */
    zns_flash_write(f, 16 * PG, PG, 0);         /* zone 1 */
    zns_flash_write(f, PG, 512, 0);             /* zone 0 again: now zone 1 is LRU */
    zns_flash_write(f, 32 * PG, PG, 0);         /* zone 2 evicts zone 1 */
    g_assert_cmpuint(st->buffer_flushes, ==, 1);
    g_assert_cmpuint(lun_free(f, 0, 1), ==, TPROG);     /* zone 1's chips */
    g_assert_cmpuint(lun_free(f, 0, 0), ==, 0);         /* zone 0's chips */
    zns_flash_read(f, 0, 512, 1);
    g_assert_cmpuint(st->buffer_read_hits, ==, 1);
    zns_flash_free(f);

    /* a zone with nothing left in DRAM gives its buffer up before an LRU zone with data */
    f = flash(config(geo(2, 2, 1, 16), 2, 4, 16, 16, 8, 2));
    st = zns_flash_stats(f);
    zns_flash_write(f, 0, PG, 0);               /* zone 0: pending, least recently written */
    zns_flash_write(f, 16 * PG, 2 * PG, 0);     /* zone 1: a whole unit, programmed by TPROG */
    g_assert_cmpuint(zns_flash_write(f, 32 * PG, PG, TPROG), ==, TPROG);
    g_assert_cmpuint(st->buffer_flushes, ==, 0);
    zns_flash_read(f, 0, PG, TPROG);
    g_assert_cmpuint(st->buffer_read_hits, ==, 1);
    zns_flash_free(f);

    /* a zone's writes do not overtake each other: the second waits for the first's slot */
    f = flash(config(geo(2, 2, 1, 16), 2, 4, 16, 16, 8, 1));
    zns_flash_write(f, 0, PG, 0);
    g_assert_cmpuint(zns_flash_write(f, 16 * PG, PG, 0), ==, TPROG);   /* evicts zone 0 */
    g_assert_cmpuint(zns_flash_write(f, 17 * PG, PG, 0), ==, TPROG);
    /* zone 1's unit is programmed once its data is in, after the eviction */
    g_assert_cmpuint(lun_free(f, 0, 1), ==, 2 * TPROG);
    zns_flash_free(f);
    /* nor does a drain: it programs zone 1's data after the data came in */
    f = flash(config(geo(2, 2, 1, 16), 2, 4, 16, 16, 8, 1));
    zns_flash_write(f, 0, PG, 0);
    zns_flash_write(f, 16 * PG, PG, 0);
    g_assert_cmpuint(zns_flash_drain_zone(f, 1, 0), ==, 2 * TPROG);
    zns_flash_free(f);
}

/* Reset erases the zone's blocks on its chips and forgets its buffer. */
static void test_reset(void)
{
    /*
     * stripe 2, 16-page zones on 4-page blocks: 2 blocks on each of 2 chips, one on each
     * plane, erased together (one multi-plane erase: tBERS, not 2 tBERS)
     */
    ZnsFlash *f = flash(config(geo(2, 2, 2, 4), 2, 4, 16, 16, 8, 2));
    NandModel *m = zns_flash_nand(f);
    const ZnsFlashStats *st = zns_flash_stats(f);
    uint64_t t = 10000 * US;

    zns_flash_write(f, 0, 16 * PG, 0);
    uint64_t flushed = zns_flash_flush(f, 0);
    g_assert_cmpuint(flushed, <, t);
    g_assert_cmpuint(zns_flash_reset_zone(f, 0, t), ==, t + 2000 * US);
    g_assert_cmpuint(st->blocks_erased, ==, 4);
    g_assert_cmpuint(m->stats.erases, ==, 4);
    g_assert_cmpuint(m->stats.multiplane_ops, ==, 2);
    g_assert_cmpuint(lun_free(f, 0, 0), ==, t + 2000 * US);
    g_assert_cmpuint(lun_free(f, 1, 0), ==, t + 2000 * US);
    g_assert_cmpuint(lun_free(f, 0, 1), ==, 0);
    g_assert_cmpuint(lun_free(f, 1, 1), ==, 0);
    /* a reset while programs run waits for them on the chips */
    zns_flash_write(f, 16 * PG, 2 * PG, t);
    g_assert_cmpuint(zns_flash_reset_zone(f, 1, t), ==, t + TPROG + 2000 * US);
    /* buffered data of a reset zone is gone: a read goes to flash */
    zns_flash_write(f, 32 * PG, PG, 2 * t);
    g_assert_cmpuint(zns_flash_read(f, 32 * PG, PG, 2 * t), ==, 2 * t);
    g_assert_cmpuint(st->buffer_read_hits, ==, 1);
    zns_flash_reset_zone(f, 2, 2 * t);
    uint64_t reads = st->pages_read;
    g_assert_cmpuint(zns_flash_read(f, 32 * PG, PG, 3 * t), ==, 3 * t + 50 * US);
    g_assert_cmpuint(st->pages_read, ==, reads + 1);
    g_assert_cmpuint(st->buffer_read_hits, ==, 1);
    /* and a flush has nothing of it to program */
    uint64_t programmed = st->pages_programmed;
    zns_flash_flush(f, 3 * t);
    g_assert_cmpuint(st->pages_programmed, ==, programmed);
    g_assert_cmpuint(st->blocks_erased, ==, 12);
    zns_flash_free(f);
}

/* A mixed workload: records completions; checks timelines never move back. */
static GArray *run_mixed(void)
{
    ZnsFlashConfig c = config(geo(2, 2, 2, 8), 2, 6, 32, 30, 6, 2);
    ZnsFlash *f = flash(c);
    NandModel *m = zns_flash_nand(f);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    GRand *r = g_rand_new_with_seed(42);
    uint64_t wp[6] = { 0 }, now = 0, chips = nand_luns(&m->geo);
    uint64_t *lun_prev = g_new0(uint64_t, chips), ch_prev[2] = { 0 };

    for (int i = 0; i < 3000; i++) {
        uint64_t z = g_rand_int_range(r, 0, 6), done;
        int op = g_rand_int_range(r, 0, 100);
        now += g_rand_int_range(r, 0, 150) * US;
        if (op < 60) {
            uint64_t len = MIN(g_rand_int_range(r, 1, 24) * 512ULL, c.zone_cap_bytes - wp[z]);
            if (!len) {
                done = zns_flash_reset_zone(f, z, now);
                wp[z] = 0;
            } else {
                done = zns_flash_write(f, z * c.zone_bytes + wp[z], len, now);
                wp[z] += len;
            }
        } else if (op < 90) {
            uint64_t off = g_rand_int_range(r, 0, 30) * PG;
            done = zns_flash_read(f, z * c.zone_bytes + off, g_rand_int_range(r, 1, 5) * PG,
                                  now);
        } else if (op < 95) {
            done = zns_flash_drain_zone(f, z, now);
        } else if (op < 98) {
            done = zns_flash_flush(f, now);
        } else {
            done = zns_flash_reset_zone(f, z, now);
            wp[z] = 0;
        }
        g_assert_cmpuint(done, >=, now);
        g_array_append_val(out, done);
        for (uint64_t k = 0; k < chips; k++) {
            g_assert_cmpuint(nand_chip_busy_until(m, k), >=, lun_prev[k]);
            lun_prev[k] = nand_chip_busy_until(m, k);
        }
        for (int k = 0; k < 2; k++) {
            g_assert_cmpuint(nand_ch_busy_until(m, k), >=, ch_prev[k]);
            ch_prev[k] = nand_ch_busy_until(m, k);
        }
    }
    const ZnsFlashStats *st = zns_flash_stats(f);
    /* the workload exercised every path */
    g_assert_cmpuint(st->buffer_read_hits, >, 0);
    g_assert_cmpuint(st->pages_read, >, 0);
    g_assert_cmpuint(st->buffer_flushes, >, 0);
    g_assert_cmpuint(st->buffer_waits, >, 0);
    g_assert_cmpuint(st->blocks_erased, >, 0);
    g_assert_cmpuint(st->pad_pages_programmed, <, st->pages_programmed);
    g_free(lun_prev);
    g_rand_free(r);
    zns_flash_free(f);
    return out;
}

static void test_deterministic_monotonic(void)
{
    GArray *a = run_mixed(), *b = run_mixed();

    g_assert_cmpuint(a->len, ==, b->len);
    g_assert_cmpmem(a->data, a->len * sizeof(uint64_t), b->data, b->len * sizeof(uint64_t));
    g_array_free(a, TRUE);
    g_array_free(b, TRUE);
}

/* derive_blocks gives the fewest blocks per plane that hold every zone. */
static void test_derive_fits(void)
{
    static const struct { uint32_t nchs, luns, pls, pgs, stripe, first; uint64_t zones, zpg, cap; }
    cases[] = {
        { 2, 2, 1, 4, 2, 0, 4, 8, 8 },
        { 2, 2, 2, 4, 2, 3, 5, 24, 19 },
        { 2, 4, 2, 8, 8, 0, 3, 64, 40 },
        { 4, 2, 1, 16, 1, 1, 17, 16, 13 },
        { 8, 8, 1, 256, 4, 10, 1000, 1024, 1024 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ZnsFlashConfig c = { .geo = geo(cases[i].nchs, cases[i].luns, cases[i].pls,
                                        cases[i].pgs), .tm = slc(),
                             .nr_zones = cases[i].zones, .zone_bytes = cases[i].zpg * PG,
                             .zone_cap_bytes = cases[i].cap * PG, .stripe = cases[i].stripe,
                             .wbuf_bytes = cases[i].stripe * PG, .wbuf_zones = 1,
                             .first_block = cases[i].first };
        char *err = NULL;
        g_assert_true(zns_flash_derive_blocks(&c, &err));
        g_assert_true(zns_flash_config_check(&c, &err));
        g_assert_cmpstr(err, ==, NULL);
        /* every page of the last zone lies inside the geometry */
        ZnsFlash *f = flash(c);
        NandAddr a;
        zns_flash_locate(f, c.nr_zones - 1, cases[i].cap - 1, &a);
        g_assert_cmpuint(a.blk, <, c.geo.blks_per_pl);
        zns_flash_free(f);
        /* and one block fewer is refused */
        c.geo.blks_per_pl--;
        g_assert_false(zns_flash_config_check(&c, &err));
        g_assert_nonnull(strstr(err, "zns_num_blk"));
        g_free(err);
    }
}

typedef void Mutate(ZnsFlashConfig *c);
static void bad_stripe0(ZnsFlashConfig *c) { c->stripe = 0; }
static void bad_stripe3(ZnsFlashConfig *c) { c->stripe = 3; }
static void bad_stripe16(ZnsFlashConfig *c) { c->stripe = 16; }
static void bad_zone0(ZnsFlashConfig *c) { c->zone_bytes = 0; }
static void bad_zone_unit(ZnsFlashConfig *c) { c->zone_bytes = 18 * PG; }   /* unit: 4 pages */
static void bad_zone_page(ZnsFlashConfig *c) { c->zone_bytes = 16 * PG + 512; }
static void bad_cap0(ZnsFlashConfig *c) { c->zone_cap_bytes = 0; }
static void bad_cap_big(ZnsFlashConfig *c) { c->zone_cap_bytes = c->zone_bytes + PG; }
static void bad_cap_page(ZnsFlashConfig *c) { c->zone_cap_bytes = 8 * PG + 512; }
static void bad_wbuf(ZnsFlashConfig *c) { c->wbuf_bytes = 4 * PG - 1; }
static void bad_wbuf_zones(ZnsFlashConfig *c) { c->wbuf_zones = 0; }
static void bad_zones0(ZnsFlashConfig *c) { c->nr_zones = 0; }
static void bad_blocks(ZnsFlashConfig *c) { c->geo.blks_per_pl = 1; }
static void bad_first_block(ZnsFlashConfig *c) { c->first_block = 1; }
static void bad_too_big(ZnsFlashConfig *c) { c->nr_zones = 1ULL << 40; }
static void bad_nchs(ZnsFlashConfig *c) { c->geo.nchs = 0; }
static void bad_timing(ZnsFlashConfig *c) { c->tm.cell_bits = 0; }

/* Each invalid configuration is refused by check, new and (if it applies) derive. */
static void test_config_refused(void)
{
    static const struct { Mutate *fn; const char *name; bool derive; } cases[] = {
        { bad_stripe0, "zns_stripe", true }, { bad_stripe3, "zns_stripe", true },
        { bad_stripe16, "zns_stripe", true }, { bad_zone0, "zns_zone_size_mb", true },
        { bad_zone_unit, "zns_zone_size_mb", true },
        { bad_zone_page, "zns_zone_size_mb", true }, { bad_cap0, "zns_zone_cap", true },
        { bad_cap_big, "zns_zone_cap", true }, { bad_cap_page, "zns_zone_cap", true },
        { bad_wbuf, "zns_wbuf_kb", true }, { bad_wbuf_zones, "zns_wbuf_zones", true },
        { bad_zones0, "devsz_mb", true }, { bad_blocks, "zns_num_blk", false },
        { bad_first_block, "zns_num_blk", false }, { bad_too_big, "zns_num_blk", true },
        { bad_nchs, "nchs", true }, { bad_timing, "cell_bits", false },
    };
    /* 2 x 4 chips, stripe 4, 4 zones of 16 pages: 2 rows of 1 block of 4 pages per chip */
    ZnsFlashConfig good = config(geo(2, 4, 1, 4), 4, 4, 16, 16, 4, 1);
    char *err = NULL;

    g_assert_cmpuint(good.geo.blks_per_pl, ==, 2);
    g_assert_true(zns_flash_config_check(&good, &err));
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ZnsFlashConfig c = good;
        cases[i].fn(&c);
        g_assert_false(zns_flash_config_check(&c, &err));
        g_assert_nonnull(err);
        if (!strstr(err, cases[i].name)) {
            g_error("case %zu: \"%s\" does not name %s", i, err, cases[i].name);
        }
        g_clear_pointer(&err, g_free);
        g_assert_null(zns_flash_new(&c, &err));
        g_assert_nonnull(strstr(err, cases[i].name));
        g_clear_pointer(&err, g_free);
        if (cases[i].derive) {
            g_assert_false(zns_flash_derive_blocks(&c, &err));
            g_assert_nonnull(strstr(err, cases[i].name));
            g_clear_pointer(&err, g_free);
        }
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/zns-flash/placement/stripe", test_placement_stripe);
    g_test_add_func("/zns-flash/placement/whole-device", test_placement_whole_device);
    g_test_add_func("/zns-flash/write/stripe-scaling", test_stripe_scaling);
    g_test_add_func("/zns-flash/write/buffered", test_write_buffered);
    g_test_add_func("/zns-flash/write/paced", test_write_paced);
    g_test_add_func("/zns-flash/write/not-sequential", test_write_not_sequential);
    g_test_add_func("/zns-flash/write/capacity", test_capacity);
    g_test_add_func("/zns-flash/read/buffer-and-nand", test_read_buffer_and_nand);
    g_test_add_func("/zns-flash/read/prefetch", test_prefetch);
    g_test_add_func("/zns-flash/flush/pads", test_flush_pads);
    g_test_add_func("/zns-flash/flush/drain-one-zone", test_drain_one_zone);
    g_test_add_func("/zns-flash/buffer/lru-eviction", test_lru_eviction);
    g_test_add_func("/zns-flash/reset", test_reset);
    g_test_add_func("/zns-flash/deterministic-monotonic", test_deterministic_monotonic);
    g_test_add_func("/zns-flash/config/derive-fits", test_derive_fits);
    g_test_add_func("/zns-flash/config/refused", test_config_refused);
    return g_test_run();
}
