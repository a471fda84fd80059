/*
 * Selective power-loss protection (plp/plp.h) on a small zoned flash: the buffer pool and
 * hit table, per-zone lists, threshold / space / host / drain write-outs, reset discard,
 * the selection, power loss (normal vs balanced, hold-up energy), OOB recovery and the
 * durable ends, random power-loss points against a reference, configuration checks.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE             /* memmem */
#include <glib.h>
#include <math.h>
#include <string.h>
#include "plp/plp.h"

#define US 1000ULL
#define MS (1000 * US)
#define SEC 512ULL              /* sector */
#define SPP 8ULL                /* sectors per page */
#define PG (SEC * SPP)          /* 4 KiB page */
#define TR (40 * US)
#define TPROG (200 * US)
#define TXFER (10 * US)
#define TP (TXFER + TPROG)      /* one page program with its transfer */
#define TE (2 * MS)             /* block erase */
#define CTRL_MW 5000
#define CHIP_MW 100

/* ---- a rig: 2 channels x 2 chips, zones of zone_pg pages, data area and store ---- */

typedef struct Opts {
    uint32_t stripe;
    uint64_t zones, zone_pg;
    uint64_t plp_sec, buf_sec;
    uint32_t flush_pct;
    PlpFlushMethod method;
} Opts;

typedef struct Rig {
    ZnsFlashConfig fc;
    ZnsFlash *f;
    PlpConfig c;
    PlpBuffer *p;
    uint8_t *data, *store;
    uint64_t zone_bytes, data_bytes, store_bytes;
} Rig;

static Opts opts(uint32_t stripe, uint64_t plp_sec, uint64_t buf_sec, uint32_t pct)
{
    return (Opts){ .stripe = stripe, .zones = 4, .zone_pg = 16, .plp_sec = plp_sec,
                   .buf_sec = buf_sec, .flush_pct = pct, .method = PLP_FLUSH_BALANCED };
}

static ZnsFlashConfig flash_config(uint32_t stripe, uint64_t zones, uint64_t zone_pg)
{
    ZnsFlashConfig fc = {
        .geo = { .nchs = 2, .luns_per_ch = 2, .pls_per_lun = 1, .pgs_per_blk = 16,
                 .secs_per_pg = SPP, .secsz = SEC },
        .tm = { .cell_bits = 1, .pg_rd_lat = { TR }, .pg_wr_lat = { TPROG },
                .blk_er_lat = TE, .ch_xfer_lat = TXFER, .time_scale = 1 },
        .nr_zones = zones, .zone_bytes = zone_pg * PG, .zone_cap_bytes = zone_pg * PG,
        .stripe = stripe, .wbuf_bytes = stripe * PG, .wbuf_zones = 1,
    };
    char *err = NULL;

    g_assert_true(zns_flash_derive_blocks(&fc, &err));
    return fc;
}

static ZnsFlash *flash_new(const ZnsFlashConfig *fc)
{
    char *err = NULL;
    ZnsFlash *f = zns_flash_new(fc, &err);

    g_assert_cmpstr(err, ==, NULL);
    return f;
}

/* A flash and a buffer on the rig's data area and store (a power-up). */
static void rig_open(Rig *r)
{
    char *err = NULL;

    r->f = flash_new(&r->fc);
    r->c.flash = r->f;
    r->p = plp_new(&r->c, &err);
    if (!r->p) {
        g_error("plp_new: %s", err);
    }
    g_assert_cmpstr(err, ==, NULL);
}

static Rig *rig_new(Opts o)
{
    Rig *r = g_new0(Rig, 1);

    r->fc = flash_config(o.stripe, o.zones, o.zone_pg);
    r->zone_bytes = r->fc.zone_bytes;
    r->data_bytes = o.zones * r->zone_bytes;
    r->store_bytes = plp_store_size(SEC, o.plp_sec * SEC, o.zones);
    g_assert_cmpuint(r->store_bytes, >=, o.plp_sec * SEC);
    r->data = g_malloc0(r->data_bytes);
    r->store = g_malloc0(r->store_bytes);
    r->c = (PlpConfig){ .sector_bytes = SEC, .plp_bytes = o.plp_sec * SEC,
                        .buf_bytes = o.buf_sec * SEC, .flush_pct = o.flush_pct,
                        .method = o.method, .ctrl_mw = CTRL_MW, .chip_mw = CHIP_MW,
                        .data = r->data, .store = r->store };
    rig_open(r);
    return r;
}

/* The device restarts: new timelines and buffer, the same data area and store. */
static void rig_restart(Rig *r)
{
    plp_free(r->p);
    zns_flash_free(r->f);
    rig_open(r);
}

static void rig_free(Rig *r)
{
    plp_free(r->p);
    zns_flash_free(r->f);
    g_free(r->data);
    g_free(r->store);
    g_free(r);
}

static NandModel *nand(Rig *r)
{
    return zns_flash_nand(r->f);
}

static const PlpStats *st(Rig *r)
{
    return plp_stats(r->p);
}

static uint64_t off_of(const Rig *r, uint64_t zone, uint64_t sec)
{
    return zone * r->zone_bytes + sec * SEC;
}

/* Sector contents: never a zero byte, different per zone, sector and generation. */
static uint8_t pat(uint64_t zone, uint64_t sec, uint32_t gen, uint64_t i)
{
    return (zone * 7919 + sec * 104729 + gen * 65537ULL + i * 13) % 251 + 1;
}

static void fill(uint8_t *buf, uint64_t zone, uint64_t s0, uint64_t n, uint32_t gen)
{
    for (uint64_t s = 0; s < n; s++) {
        for (uint64_t i = 0; i < SEC; i++) {
            buf[s * SEC + i] = pat(zone, s0 + s, gen, i);
        }
    }
}

static bool same(const uint8_t *buf, uint64_t zone, uint64_t s0, uint64_t n, uint32_t gen)
{
    for (uint64_t s = 0; s < n; s++) {
        for (uint64_t i = 0; i < SEC; i++) {
            if (buf[s * SEC + i] != pat(zone, s0 + s, gen, i)) {
                return false;
            }
        }
    }
    return true;
}

static bool zeroes(const uint8_t *buf, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++) {
        if (buf[i]) {
            return false;
        }
    }
    return true;
}

#define assert_data(r, z, s0, n, gen) \
    g_assert_true(same((r)->data + off_of(r, z, 0) + (s0) * SEC, z, s0, n, gen))
#define assert_zero(r, z, s0, n) \
    g_assert_true(zeroes((r)->data + off_of(r, z, s0), (n) * SEC))

static uint64_t wr(Rig *r, uint64_t zone, uint64_t s0, uint64_t n, bool protect, uint32_t gen,
                   uint64_t now)
{
    g_autofree uint8_t *buf = g_malloc(n * SEC);
    uint64_t ack;

    fill(buf, zone, s0, n, gen);
    ack = plp_write(r->p, off_of(r, zone, s0), n * SEC, buf, protect, now);
    g_assert_cmpuint(ack, >=, now);
    return ack;
}

/* What a host read sees (the data area, then the buffer over it); the buffered bytes. */
static uint64_t rd(Rig *r, uint64_t zone, uint64_t s0, uint64_t n, uint8_t *out, uint64_t now)
{
    memcpy(out, r->data + off_of(r, zone, s0), n * SEC);
    return plp_read(r->p, off_of(r, zone, s0), n * SEC, out, now);
}

static bool in_store(const Rig *r, uint64_t zone, uint64_t sec, uint32_t gen)
{
    uint8_t buf[SEC];

    fill(buf, zone, sec, 1, gen);
    return memmem(r->store, r->store_bytes, buf, SEC) != NULL;
}

/* ---- buffer pool and hit table ---- */

/* Buffered data is not in the data area; reads overlay it; a Flush programs it. */
static void test_pool_and_hits(void)
{
    Rig *r = rig_new(opts(2, 32, 32, 100));
    uint8_t out[16 * SEC];
    uint64_t t0 = 1 * MS, ack, done;

    ack = wr(r, 1, 0, 3, false, 1, t0);
    g_assert_cmpuint(ack, <, t0 + TP);
    assert_zero(r, 1, 0, 16);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 0);
    g_assert_cmpuint(rd(r, 1, 0, 4, out, t0), ==, 3 * SEC);
    g_assert_true(same(out, 1, 0, 3, 1));
    g_assert_true(zeroes(out + 3 * SEC, SEC));
    g_assert_cmpuint(st(r)->read_hit_sectors, ==, 3);
    g_assert_cmpuint(st(r)->read_miss_sectors, ==, 1);

    /* protected, in the next page of the zone */
    ack = wr(r, 1, 8, 2, true, 1, t0);
    g_assert_cmpuint(ack, <, t0 + TP);
    g_assert_cmpuint(st(r)->buf_write_bytes, ==, 3 * SEC);
    g_assert_cmpuint(st(r)->plp_write_bytes, ==, 2 * SEC);
    g_assert_cmpuint(st(r)->buf_used_bytes, ==, 3 * SEC);
    g_assert_cmpuint(st(r)->plp_used_bytes, ==, 2 * SEC);

    /* data NULL writes zeroes, over stale bytes of the data area */
    memset(r->data + off_of(r, 2, 0), 0xaa, 2 * SEC);
    g_assert_cmpuint(plp_write(r->p, off_of(r, 2, 0), 2 * SEC, NULL, false, t0), >=, t0);
    g_assert_cmpuint(rd(r, 2, 0, 2, out, t0), ==, 2 * SEC);
    g_assert_true(zeroes(out, 2 * SEC));

    /* Flush: zone 1 page 0 (3 sectors) on chip (0,1), zone 2 page 0 (2) on chip (0,0) */
    done = plp_flush(r->p, t0 + 1);
    g_assert_cmpuint(done, >=, t0 + 1 + TP);
    g_assert_cmpuint(done, <=, t0 + 1 + TP + TXFER);
    g_assert_cmpuint(done, ==, nand_all_idle_ns(nand(r)));
    g_assert_cmpuint(nand(r)->stats.programs, ==, 2);
    g_assert_cmpuint(st(r)->pad_sectors, ==, 5 + 6);
    g_assert_cmpuint(st(r)->flushes[PLP_CAUSE_HOST], ==, 1);
    g_assert_cmpuint(st(r)->flushed_sectors[PLP_CAUSE_HOST], ==, 5);
    assert_data(r, 1, 0, 3, 1);
    assert_zero(r, 1, 3, 13);           /* the protected sectors are not programmed */
    assert_zero(r, 2, 0, 2);

    /* programmed sectors stay as a read cache; the protected ones are still buffered */
    g_assert_cmpuint(rd(r, 1, 0, 10, out, done + 1), ==, 5 * SEC);
    g_assert_true(same(out, 1, 0, 3, 1));
    g_assert_true(zeroes(out + 3 * SEC, 5 * SEC));
    g_assert_true(same(out + 8 * SEC, 1, 8, 2, 1));
    g_assert_cmpuint(st(r)->plp_used_bytes, ==, 2 * SEC);
    rig_free(r);
}

/* CLOCK: a clean buffer read since it was programmed survives reuse; others go first. */
static void test_clock(void)
{
    Rig *r = rig_new(opts(2, 16, 16, 100));
    uint8_t out[8 * SEC];
    uint64_t done;

    wr(r, 0, 0, 16, false, 1, 0);
    done = plp_flush(r->p, 0);
    g_assert_cmpuint(done, ==, TP);
    g_assert_cmpuint(rd(r, 0, 0, 8, out, done + 1), ==, 8 * SEC);
    /* 8 new sectors need 8 of the 16 clean buffers: the unreferenced ones */
    g_assert_cmpuint(wr(r, 1, 0, 8, false, 1, done + 2), <, done + 2 + TP);
    g_assert_cmpuint(st(r)->buffer_waits, ==, 0);
    g_assert_cmpuint(rd(r, 0, 0, 8, out, done + 3), ==, 8 * SEC);
    g_assert_true(same(out, 0, 0, 8, 1));
    g_assert_cmpuint(rd(r, 0, 8, 8, out, done + 3), ==, 0);
    g_assert_true(same(out, 0, 8, 8, 1));
    g_assert_cmpuint(rd(r, 1, 0, 8, out, done + 3), ==, 8 * SEC);
    g_assert_true(same(out, 1, 0, 8, 1));
    rig_free(r);
}

/* ---- power loss ---- */

/* Protected data survives through the store; unprotected unflushed data is lost. */
static void test_protected_survive(void)
{
    Rig *r = rig_new(opts(2, 32, 32, 100));
    PlpLoss loss;
    PlpRecovery rec;
    uint64_t t = plp_flush(r->p, 0);

    wr(r, 0, 0, 8, false, 1, t);
    t = plp_flush(r->p, t);
    wr(r, 0, 8, 8, true, 1, t);
    wr(r, 1, 0, 8, true, 1, t);
    wr(r, 2, 0, 8, false, 1, t);
    assert_data(r, 0, 0, 8, 1);
    assert_zero(r, 0, 8, 8);
    assert_zero(r, 1, 0, 8);
    assert_zero(r, 2, 0, 8);
    for (uint64_t s = 0; s < 8; s++) {
        g_assert_true(in_store(r, 0, 8 + s, 1));
        g_assert_true(in_store(r, 1, s, 1));
        g_assert_false(in_store(r, 2, s, 1));
    }

    plp_power_loss(r->p, t + 1, &loss);
    g_assert_cmpuint(loss.pages, ==, 2);
    g_assert_cmpuint(loss.lost_sectors, ==, 8);
    g_assert_cmpuint(st(r)->power_losses, ==, 1);
    g_assert_cmpuint(st(r)->lost_sectors, ==, 8);
    g_assert_cmpuint(st(r)->plp_used_bytes, ==, 0);
    g_assert_cmpuint(st(r)->buf_used_bytes, ==, 0);

    rig_restart(r);
    plp_recover(r->p, 0, &rec);
    g_assert_cmpuint(rec.sectors, ==, 16);
    g_assert_cmpuint(rec.pages, ==, 2);
    /* the balanced flush put the 2 pages on chips 0 and 1: their reserved blocks are erased */
    g_assert_cmpuint(nand(r)->stats.erases, ==, 2);
    g_assert_cmpuint(rec.ns, >=, TR + TXFER + TE);
    g_assert_cmpuint(rec.ns, <=, 2 * (TR + TXFER + TP) + TE);
    assert_data(r, 0, 0, 16, 1);
    assert_data(r, 1, 0, 8, 1);
    assert_zero(r, 1, 8, 8);
    assert_zero(r, 2, 0, 16);
    rig_free(r);
}

/* ---- per-zone lists ---- */

/* Sectors of two zones written alternately reach each zone in order, whole pages. */
static void test_zone_lists(void)
{
    Rig *r = rig_new(opts(2, 32, 32, 100));
    uint64_t t = 1 * MS, done;

    for (uint64_t s = 0; s < 16; s++) {
        wr(r, 0, s, 1, false, 1, t);
        wr(r, 1, s, 1, false, 2, t);
    }
    assert_zero(r, 0, 0, 16);
    done = plp_flush(r->p, t);
    /* 4 pages on 4 chips, two per channel */
    g_assert_cmpuint(done, >=, t + TP);
    g_assert_cmpuint(done, <=, t + TP + TXFER);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 4);
    g_assert_cmpuint(st(r)->pad_sectors, ==, 0);
    g_assert_cmpuint(st(r)->flushed_sectors[PLP_CAUSE_HOST], ==, 32);
    assert_data(r, 0, 0, 16, 1);
    assert_data(r, 1, 0, 16, 2);

    /* the same with protected writes to zones 2 and 3, drained */
    t = done + 1;
    for (uint64_t s = 0; s < 16; s++) {
        wr(r, 3, s, 1, true, 3, t);
        wr(r, 2, s, 1, true, 4, t);
    }
    assert_zero(r, 2, 0, 16);
    assert_zero(r, 3, 0, 16);
    done = plp_drain_zone(r->p, 2, 16 * SEC, t);
    g_assert_cmpuint(done, ==, t + TP);     /* 2 pages on 2 chips of 2 channels */
    assert_data(r, 2, 0, 16, 4);
    assert_zero(r, 3, 0, 16);
    done = plp_drain_zone(r->p, 3, 16 * SEC, done);
    assert_data(r, 3, 0, 16, 3);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 8);
    g_assert_cmpuint(st(r)->pad_sectors, ==, 0);
    rig_free(r);
}

/* ---- write-outs ---- */

/* Past flush_pct of a region, the whole region (every zone) is programmed; below, nothing. */
static void test_threshold(void)
{
    Rig *r = rig_new(opts(2, 16, 16, 50));
    const PlpStats *s = st(r);
    uint64_t t = 1 * MS, ack;

    /* non-PLP region: 7 of 16 sectors, then 9 */
    wr(r, 0, 0, 4, false, 1, t);
    wr(r, 2, 0, 3, false, 1, t);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 0);
    g_assert_cmpuint(s->flushes[PLP_CAUSE_THRESHOLD], ==, 0);
    assert_zero(r, 0, 0, 4);
    ack = wr(r, 0, 4, 2, false, 1, t);
    g_assert_cmpuint(ack, <, t + TP);
    g_assert_cmpuint(s->buffer_waits, ==, 0);
    g_assert_cmpuint(s->flushes[PLP_CAUSE_THRESHOLD], ==, 1);
    g_assert_cmpuint(s->flushed_sectors[PLP_CAUSE_THRESHOLD], ==, 9);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 2);
    g_assert_cmpuint(s->pad_sectors, ==, 2 + 5);
    assert_data(r, 0, 0, 6, 1);
    assert_data(r, 2, 0, 3, 1);

    /* PLP region: the same; its data then is in the data area too */
    t += 10 * MS;
    wr(r, 1, 0, 7, true, 2, t);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 2);
    g_assert_cmpuint(s->flushes[PLP_CAUSE_THRESHOLD], ==, 1);
    assert_zero(r, 1, 0, 7);
    ack = wr(r, 1, 7, 2, true, 2, t);
    g_assert_cmpuint(ack, <, t + TP);
    g_assert_cmpuint(s->flushes[PLP_CAUSE_THRESHOLD], ==, 2);
    g_assert_cmpuint(s->flushed_sectors[PLP_CAUSE_THRESHOLD], ==, 18);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 4);
    g_assert_cmpuint(s->pad_sectors, ==, 7 + 7);
    assert_data(r, 1, 0, 9, 2);
    g_assert_cmpuint(s->flushes[PLP_CAUSE_HOST] + s->flushes[PLP_CAUSE_SPACE] +
                     s->flushes[PLP_CAUSE_DRAIN], ==, 0);
    rig_free(r);
}

/* A write that finds its region full writes it out and waits for a program. */
static void test_full_waits(void)
{
    Rig *r = rig_new(opts(2, 16, 16, 100));
    const PlpStats *s = st(r);
    PlpRecovery rec;
    PlpLoss loss;
    uint64_t t = 1 * MS, ack;

    g_assert_cmpuint(wr(r, 0, 0, 16, false, 1, t), <, t + TP);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 0);
    /* zone 0's pages 0 and 1 sit on two chips of two channels: both done at t + TP */
    ack = wr(r, 0, 16, 1, false, 1, t);
    g_assert_cmpuint(ack, >=, t + TP);
    g_assert_cmpuint(ack, <=, t + 2 * TP);
    g_assert_cmpuint(s->buffer_waits, ==, 1);
    g_assert_cmpuint(s->flushes[PLP_CAUSE_SPACE], ==, 1);
    g_assert_cmpuint(s->flushed_sectors[PLP_CAUSE_SPACE], ==, 16);
    g_assert_cmpuint(s->flushes[PLP_CAUSE_THRESHOLD], ==, 0);
    assert_data(r, 0, 0, 16, 1);
    assert_zero(r, 0, 16, 1);

    /* the same in the PLP region */
    t = ack + 10 * MS;
    g_assert_cmpuint(wr(r, 1, 0, 16, true, 2, t), <, t + TP);
    ack = wr(r, 1, 16, 1, true, 2, t);
    g_assert_cmpuint(ack, >=, t + TP);
    g_assert_cmpuint(ack, <=, t + 2 * TP);
    g_assert_cmpuint(s->buffer_waits, ==, 2);
    g_assert_cmpuint(s->flushes[PLP_CAUSE_SPACE], ==, 2);
    g_assert_cmpuint(s->flushed_sectors[PLP_CAUSE_SPACE], ==, 32);
    assert_data(r, 1, 0, 16, 2);
    assert_zero(r, 1, 16, 1);

    /* nothing lost: a Flush programs the last non-PLP sector, recovery the protected one */
    plp_flush(r->p, ack);
    assert_data(r, 0, 0, 17, 1);
    plp_power_loss(r->p, ack + 10 * MS, &loss);
    g_assert_cmpuint(loss.lost_sectors, ==, 0);
    g_assert_cmpuint(loss.pages, ==, 1);
    rig_restart(r);
    plp_recover(r->p, 0, &rec);
    g_assert_cmpuint(rec.sectors, ==, 1);
    assert_data(r, 0, 0, 17, 1);
    assert_data(r, 1, 0, 17, 2);
    rig_free(r);
}

/* One write larger than its whole region goes in piece by piece and loses nothing. */
static void test_larger_than_region(void)
{
    Rig *r = rig_new(opts(2, 16, 16, 100));
    PlpRecovery rec;
    PlpLoss loss;
    uint64_t t = 1 * MS, ack;

    ack = wr(r, 0, 0, 40, false, 1, t);
    g_assert_cmpuint(ack, >=, t + TP);
    g_assert_cmpuint(ack, <=, t + 5 * TP);
    ack = plp_flush(r->p, ack);
    assert_data(r, 0, 0, 40, 1);

    t = ack + 10 * MS;
    ack = wr(r, 1, 0, 40, true, 2, t);
    g_assert_cmpuint(ack, >=, t + TP);
    g_assert_cmpuint(ack, <=, t + 5 * TP);
    g_assert_cmpuint(st(r)->buffer_waits, ==, 2);
    plp_power_loss(r->p, ack, &loss);
    rig_restart(r);
    plp_recover(r->p, 0, &rec);
    assert_data(r, 0, 0, 40, 1);
    assert_data(r, 1, 0, 40, 2);
    assert_zero(r, 1, 40, 8);
    rig_free(r);
}

/* A host Flush leaves the PLP region alone and holds the writes that arrive meanwhile. */
static void test_host_flush(void)
{
    Rig *r = rig_new(opts(2, 32, 32, 100));
    uint64_t t = 1 * MS, done;

    g_assert_cmpuint(plp_flush(r->p, 7), ==, 7);        /* nothing to write */
    wr(r, 0, 0, 8, true, 1, t);
    wr(r, 1, 0, 16, false, 2, t);
    g_assert_cmpuint(st(r)->plp_used_bytes, ==, 8 * SEC);
    done = plp_flush(r->p, t + 1);
    g_assert_cmpuint(done, ==, t + 1 + TP);     /* zone 1's 2 pages, 2 chips, 2 channels */
    g_assert_cmpuint(nand(r)->stats.programs, ==, 2);
    g_assert_cmpuint(st(r)->flushed_sectors[PLP_CAUSE_HOST], ==, 16);
    g_assert_cmpuint(st(r)->plp_used_bytes, ==, 8 * SEC);
    assert_zero(r, 0, 0, 8);
    assert_data(r, 1, 0, 16, 2);
    /* writes arriving before it completes complete after it */
    uint64_t a1 = wr(r, 1, 16, 1, false, 2, t + 2);
    g_assert_cmpuint(a1, >=, done);
    g_assert_cmpuint(a1, <, done + TP);
    uint64_t a2 = wr(r, 0, 8, 1, true, 1, t + 3);
    g_assert_cmpuint(a2, >=, done);
    g_assert_cmpuint(a2, <, done + TP);
    /* one after it does not wait */
    g_assert_cmpuint(wr(r, 1, 17, 1, false, 2, done + 5), <, done + 5 + TP);
    rig_free(r);
}

/* Zone Reset drops the zone's buffered data of both regions, for good. */
static void test_reset_discard(void)
{
    Rig *r = rig_new(opts(2, 32, 32, 100));
    uint8_t out[16 * SEC];
    PlpRecovery rec;
    PlpLoss loss;
    uint64_t t = 1 * MS;

    wr(r, 1, 0, 8, false, 1, t);
    wr(r, 1, 8, 4, true, 1, t);
    wr(r, 2, 0, 4, true, 2, t);
    g_assert_true(in_store(r, 1, 8, 1));
    plp_reset_zone(r->p, 1, t + 1);
    g_assert_cmpuint(st(r)->reset_discarded_sectors, ==, 12);
    g_assert_cmpuint(st(r)->plp_used_bytes, ==, 4 * SEC);
    g_assert_cmpuint(st(r)->buf_used_bytes, ==, 0);
    g_assert_cmpuint(rd(r, 1, 0, 16, out, t + 2), ==, 0);
    g_assert_true(zeroes(out, sizeof(out)));
    g_assert_cmpuint(plp_durable_end(r->p, 1), ==, 0);
    /* a Flush and a drain of zone 1 have nothing of it to program */
    g_assert_cmpuint(plp_flush(r->p, t + 3), ==, t + 3);
    g_assert_cmpuint(plp_drain_zone(r->p, 1, 0, t + 4), ==, t + 4);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 0);
    assert_zero(r, 1, 0, 16);

    /* a clean cached sector goes too (the device zeroes the zone's data area) */
    wr(r, 3, 0, 8, false, 3, t + 5);
    uint64_t done = plp_flush(r->p, t + 5);
    memset(r->data + off_of(r, 3, 0), 0, r->zone_bytes);
    plp_reset_zone(r->p, 3, done + 1);
    g_assert_cmpuint(rd(r, 3, 0, 8, out, done + 2), ==, 0);
    g_assert_true(zeroes(out, 8 * SEC));

    /* recovery restores zone 2's sectors, not zone 1's */
    plp_power_loss(r->p, done + 3, &loss);
    rig_restart(r);
    plp_recover(r->p, 0, &rec);
    g_assert_cmpuint(rec.sectors, ==, 4);
    assert_zero(r, 1, 0, 16);
    assert_data(r, 2, 0, 4, 2);
    assert_zero(r, 3, 0, 16);
    g_assert_cmpuint(plp_durable_end(r->p, 1), ==, 0);
    g_assert_cmpuint(plp_durable_end(r->p, 3), ==, 0);
    rig_free(r);
}

/* Zone Finish/Close programs the zone's data of both regions, and only that zone's. */
static void test_drain(void)
{
    /* stripe 1: zone z is chip z alone */
    Rig *r = rig_new(opts(1, 32, 32, 100));
    const PlpStats *s = st(r);
    uint64_t t = 1 * MS, done;

    wr(r, 0, 0, 8, false, 1, t);
    wr(r, 0, 8, 8, true, 1, t);
    wr(r, 0, 16, 4, false, 1, t);
    wr(r, 1, 0, 8, false, 2, t);
    wr(r, 1, 8, 8, true, 2, t);
    g_assert_cmpuint(plp_durable_end(r->p, 0), ==, 0);
    done = plp_drain_zone(r->p, 0, 20 * SEC, t);
    /* 3 pages one after another on one chip */
    g_assert_cmpuint(done, >=, t + 3 * TP);
    g_assert_cmpuint(done, <=, t + 3 * TP + TXFER);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 3);
    g_assert_cmpuint(s->pad_sectors, ==, 4);
    g_assert_cmpuint(s->flushes[PLP_CAUSE_DRAIN], ==, 1);
    g_assert_cmpuint(s->flushed_sectors[PLP_CAUSE_DRAIN], ==, 20);
    assert_data(r, 0, 0, 20, 1);
    assert_zero(r, 1, 0, 16);
    g_assert_cmpuint(plp_durable_end(r->p, 0), ==, 20 * SEC);
    g_assert_cmpuint(plp_durable_end(r->p, 1), ==, 0);

    /* a zone with nothing buffered: nothing to program, its written data is durable */
    g_assert_cmpuint(plp_drain_zone(r->p, 2, 12 * SEC, done), ==, done);
    g_assert_cmpuint(nand(r)->stats.programs, ==, 3);
    g_assert_cmpuint(s->flushes[PLP_CAUSE_DRAIN], ==, 1);
    g_assert_cmpuint(plp_durable_end(r->p, 2), ==, 12 * SEC);
    /* and stays so across a power cycle */
    PlpLoss loss;
    PlpRecovery rec;
    plp_power_loss(r->p, done + 1, &loss);
    rig_restart(r);
    plp_recover(r->p, 0, &rec);
    g_assert_cmpuint(plp_durable_end(r->p, 0), ==, 20 * SEC);
    g_assert_cmpuint(plp_durable_end(r->p, 1), ==, 16 * SEC);    /* its protected half */
    g_assert_cmpuint(plp_durable_end(r->p, 2), ==, 12 * SEC);
    assert_data(r, 0, 0, 20, 1);
    assert_zero(r, 1, 0, 8);
    assert_data(r, 1, 8, 8, 2);
    rig_free(r);
}

/* ---- the selection ---- */

static void test_protects(void)
{
    static const PlpMode modes[3] = { PLP_MODE_NONE, PLP_MODE_SELECTIVE, PLP_MODE_FULL };

    for (int m = 0; m < 3; m++) {
        for (int flagged = 0; flagged < 2; flagged++) {
            for (int durable = 0; durable < 2; durable++) {
                bool want = modes[m] == PLP_MODE_FULL ||
                            (modes[m] == PLP_MODE_SELECTIVE && (flagged || durable));
                if (plp_protects(modes[m], flagged, durable) != want) {
                    g_error("plp_protects(mode %d, flagged %d, durable %d) != %d", m,
                            flagged, durable, want);
                }
            }
        }
    }
    g_assert_false(plp_protects(PLP_MODE_NONE, true, true));
    g_assert_false(plp_protects(PLP_MODE_SELECTIVE, false, false));
    g_assert_true(plp_protects(PLP_MODE_SELECTIVE, true, false));
    g_assert_true(plp_protects(PLP_MODE_SELECTIVE, false, true));
    g_assert_true(plp_protects(PLP_MODE_FULL, false, false));
}

static void test_zones_parse(void)
{
    static const struct { const char *spec; uint32_t bits; } good[] = {
        { "", 0 }, { "0", 0x1 }, { "0-2,5", 0x27 }, { "9", 0x200 }, { "3-3,1", 0xa },
        { "0-9", 0x3ff },
    };
    static const char *bad[] = { "3-1", "x", "0-99", "1,,2", "10", "-1", "1-", ",", "2,x" };
    char *err = NULL;

    for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
        uint8_t *map = plp_zones_parse(good[i].spec, 10, &err);
        if (!map) {
            g_error("\"%s\" refused: %s", good[i].spec, err);
        }
        for (uint64_t z = 0; z < 10; z++) {
            if (plp_zone_in(map, z) != !!(good[i].bits >> z & 1)) {
                g_error("\"%s\": zone %" G_GUINT64_FORMAT " wrong", good[i].spec, z);
            }
        }
        /* nr_zones bits: padding bits of the last byte clear */
        g_assert_cmpuint(map[1] >> 2, ==, 0);
        g_free(map);
    }
    g_assert_false(plp_zone_in(NULL, 0));
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        uint8_t *map = plp_zones_parse(bad[i], 10, &err);
        if (map) {
            g_error("\"%s\" accepted", bad[i]);
        }
        g_assert_nonnull(err);
        g_assert_cmpuint(strlen(err), >, 0);
        g_test_message("\"%s\": %s", bad[i], err);
        g_clear_pointer(&err, g_free);
    }
}

/* ---- power-loss flush: normal vs balanced, hold-up energy ---- */

static double energy_uj(uint64_t pages, uint64_t ns)
{
    return ((double)CTRL_MW * ns + (double)pages * CHIP_MW * TP) / 1e6;
}

static void assert_close(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fabs(want) + 1e-9) {
        g_error("got %.9g, want %.9g", got, want);
    }
}

/* 8 protected pages of one zone on one chip: normal programs them there one after another,
 * balanced spreads them over the 4 chips. */
static void test_balanced_vs_normal(void)
{
    const uint64_t P = 8;
    uint64_t seen_normal = 0, seen_balanced = 0;

    for (int method = 0; method < 2; method++) {
        Opts o = opts(1, 64, 16, 100);
        o.method = method ? PLP_FLUSH_NORMAL : PLP_FLUSH_BALANCED;
        Rig *r = rig_new(o);
        const PlpStats *s = st(r);
        uint64_t now = 10 * MS;
        PlpLoss loss;

        wr(r, 0, 0, P * SPP, true, 1, 0);
        g_assert_cmpuint(nand(r)->stats.programs, ==, 0);
        g_assert_cmpuint(nand_all_idle_ns(nand(r)), <, now);
        plp_power_loss(r->p, now, &loss);
        g_assert_cmpuint(loss.pages, ==, P);
        g_assert_cmpuint(loss.lost_sectors, ==, 0);
        g_assert_cmpuint(loss.normal_ns, >=, P * TP);
        g_assert_cmpuint(loss.normal_ns, <=, P * TP + TXFER);
        /* 2 rounds of 4 chips, 2 per channel */
        g_assert_cmpuint(loss.balanced_ns, >=, P / 4 * TP);
        g_assert_cmpuint(loss.balanced_ns, <=, P / 4 * TP + 2 * TXFER);
        g_assert_cmpuint(loss.balanced_ns, <, loss.normal_ns);
        /* the configured method ran on the real timelines, the other on a copy */
        g_assert_cmpuint(nand(r)->stats.programs, ==, P);
        g_assert_cmpuint(nand_all_idle_ns(nand(r)), ==,
                         now + (method ? loss.normal_ns : loss.balanced_ns));
        if (method) {
            g_assert_cmpuint(loss.normal_ns, ==, seen_normal);
            g_assert_cmpuint(loss.balanced_ns, ==, seen_balanced);
        }
        seen_normal = loss.normal_ns;
        seen_balanced = loss.balanced_ns;

        /* E = ctrl_mw * T + P * chip_mw * (tPROG + tXFER); C = 2E / (12^2 - 6^2) */
        assert_close(loss.normal_uj, energy_uj(P, loss.normal_ns));
        assert_close(loss.balanced_uj, energy_uj(P, loss.balanced_ns));
        assert_close(plp_energy_uj(r->p, P, loss.normal_ns), loss.normal_uj);
        assert_close(plp_energy_uj(r->p, 3, 1000), (5000.0 * 1000 + 3.0 * 100 * TP) / 1e6);
        assert_close(loss.normal_uf, 2 * loss.normal_uj / (12.0 * 12 - 6.0 * 6));
        assert_close(loss.balanced_uf, 2 * loss.balanced_uj / 108);
        assert_close(plp_capacitance_uf(54.0), 1.0);
        assert_close(plp_capacitance_uf(loss.normal_uj), loss.normal_uf);
        g_assert_cmpfloat(loss.balanced_uj, <, loss.normal_uj);
        g_assert_cmpfloat(loss.balanced_uf, <, loss.normal_uf);
        /* 8 pages in 1.68 ms: 8400 + 168 uJ */
        g_assert_cmpfloat(loss.normal_uj, >=, 8568.0);
        g_assert_cmpfloat(loss.normal_uj, <=, 8568.0 + 50.0 + 1e-6);

        g_assert_cmpuint(s->power_losses, ==, 1);
        g_assert_cmpuint(s->last_loss.pages, ==, P);
        g_assert_cmpuint(s->last_loss.normal_ns, ==, loss.normal_ns);
        g_assert_cmpuint(s->last_loss.balanced_ns, ==, loss.balanced_ns);
        g_assert_cmpfloat(fabs((double)s->last_loss.normal_uj - loss.normal_uj), <=, 1.0);
        g_assert_cmpfloat(fabs((double)s->last_loss.balanced_uj - loss.balanced_uj), <=, 1.0);
        g_assert_cmpfloat(fabs((double)s->last_loss.normal_uf - loss.normal_uf), <=, 1.0);
        g_assert_cmpfloat(fabs((double)s->last_loss.balanced_uf - loss.balanced_uf), <=, 1.0);
        g_test_message("%s: normal %.0f us %.0f uJ %.1f uF, balanced %.0f us %.0f uJ %.1f uF",
                       method ? "normal" : "balanced", loss.normal_ns / 1e3, loss.normal_uj,
                       loss.normal_uf, loss.balanced_ns / 1e3, loss.balanced_uj,
                       loss.balanced_uf);
        rig_free(r);
    }
}

/* Balanced pages land on other chips' reserved blocks; recovery puts them back in place. */
static void test_oob_round_trip(void)
{
    for (int method = 0; method < 2; method++) {
        Opts o = opts(1, 80, 16, 100);
        o.method = method ? PLP_FLUSH_NORMAL : PLP_FLUSH_BALANCED;
        Rig *r = rig_new(o);
        PlpRecovery rec;
        PlpLoss loss;
        uint64_t now = 10 * MS;

        wr(r, 0, 0, 64, true, 1, 0);
        wr(r, 2, 0, 3, true, 2, 0);
        wr(r, 1, 0, 8, false, 3, 0);
        plp_power_loss(r->p, now, &loss);
        g_assert_cmpuint(loss.pages, ==, 9);
        g_assert_cmpuint(loss.lost_sectors, ==, 8);
        rig_restart(r);
        now = 1 * MS;
        plp_recover(r->p, now, &rec);
        assert_data(r, 0, 0, 64, 1);
        assert_data(r, 2, 0, 3, 2);
        assert_zero(r, 2, 3, 13);
        assert_zero(r, 1, 0, 16);
        assert_zero(r, 3, 0, 16);
        if (method == 0) {
            /* a read from the reserved page and a program in place, per page */
            g_assert_cmpuint(rec.sectors, ==, 67);
            g_assert_cmpuint(rec.pages, ==, 9);
            g_assert_cmpuint(nand(r)->stats.reads, ==, 9);
            g_assert_cmpuint(nand(r)->stats.programs, ==, 9);
            /* each of the 4 chips took pages: its reserved block is erased after its reads */
            g_assert_cmpuint(nand(r)->stats.erases, ==, 4);
            /* zone 0's 8 programs queue on its chip, and its erase after them */
            g_assert_cmpuint(rec.ns, >=, 8 * TP + TE);
            g_assert_cmpuint(rec.ns, <=, 9 * (TR + TXFER) + 9 * TP + TE);
            g_assert_cmpuint(nand_all_idle_ns(nand(r)), ==, now + rec.ns);
            g_assert_cmpuint(st(r)->spor_sectors, ==, 67);
            g_assert_cmpuint(st(r)->spor_pages, ==, 9);
            g_assert_cmpuint(st(r)->spor_ns, ==, rec.ns);
        }
        /* the store is cleared: a second power-up finds nothing */
        rig_restart(r);
        plp_recover(r->p, 0, &rec);
        g_assert_cmpuint(rec.sectors, ==, 0);
        g_assert_cmpuint(rec.pages, ==, 0);
        g_assert_cmpuint(nand(r)->stats.programs, ==, 0);
        assert_data(r, 0, 0, 64, 1);
        assert_data(r, 2, 0, 3, 2);
        rig_free(r);
    }
}

/* After recovery each zone's durable data ends after its last protected or programmed
 * sector: unprotected buffered data is not part of it. */
static void test_spor_durable_ends(void)
{
    Rig *r = rig_new(opts(2, 32, 32, 100));
    PlpRecovery rec;
    PlpLoss loss;
    uint64_t t = 1 * MS;

    wr(r, 0, 0, 8, true, 1, t);
    wr(r, 1, 0, 4, false, 2, t);
    t = plp_flush(r->p, t);
    g_assert_cmpuint(plp_durable_end(r->p, 1), ==, 4 * SEC);
    wr(r, 0, 8, 8, false, 1, t);
    wr(r, 1, 4, 2, false, 2, t);
    wr(r, 2, 0, 10, false, 3, t);
    t = plp_drain_zone(r->p, 2, 10 * SEC, t);
    g_assert_cmpuint(plp_durable_end(r->p, 2), ==, 10 * SEC);
    wr(r, 2, 10, 3, true, 3, t);
    wr(r, 3, 0, 4, false, 4, t);
    plp_power_loss(r->p, t + 1, &loss);
    g_assert_cmpuint(loss.lost_sectors, ==, 8 + 2 + 4);
    rig_restart(r);
    plp_recover(r->p, 0, &rec);
    g_assert_cmpuint(rec.sectors, ==, 11);
    g_assert_cmpuint(plp_durable_end(r->p, 0), ==, 8 * SEC);
    g_assert_cmpuint(plp_durable_end(r->p, 1), ==, 4 * SEC);
    g_assert_cmpuint(plp_durable_end(r->p, 2), ==, 13 * SEC);
    g_assert_cmpuint(plp_durable_end(r->p, 3), ==, 0);
    assert_data(r, 0, 0, 8, 1);
    assert_zero(r, 0, 8, 8);
    assert_data(r, 1, 0, 4, 2);
    assert_zero(r, 1, 4, 12);
    assert_data(r, 2, 0, 13, 3);
    assert_zero(r, 3, 0, 16);
    rig_free(r);
}

/* ---- random power-loss points against a reference ---- */

/* What the seeds exercised, summed: each must happen for the test to mean something. */
static struct {
    uint64_t recovered, lost, spilled_pages, spilled, waits, discarded, loss_pages;
} cover;

enum { S_NONE, S_VOL, S_PROT, S_DUR };   /* unwritten/lost, unflushed, protected, programmed */

typedef struct Ref {
    Rig *r;
    GRand *g;
    uint64_t secs, zones;       /* sectors per zone */
    uint8_t *state, *wasprot;
    uint32_t *gen;
    uint64_t *wp;
    uint64_t now;
    uint32_t next_gen;
} Ref;

static uint64_t ix(const Ref *m, uint64_t z, uint64_t s)
{
    return z * m->secs + s;
}

static uint64_t gap(Ref *m)
{
    return g_rand_int_range(m->g, 0, 300) * US;
}

/* No model answer waits beyond the end of everything issued on the flash. */
static void assert_in_time(Ref *m, uint64_t t)
{
    g_assert_cmpuint(t, >=, m->now);
    g_assert_cmpuint(t, <=, MAX(m->now, nand_all_idle_ns(nand(m->r))));
}

static void ref_reset(Ref *m, uint64_t z)
{
    Rig *r = m->r;
    uint64_t t = zns_flash_reset_zone(r->f, z, m->now);

    plp_reset_zone(r->p, z, m->now);
    memset(r->data + off_of(r, z, 0), 0, r->zone_bytes);
    for (uint64_t s = 0; s < m->secs; s++) {
        m->state[ix(m, z, s)] = S_NONE;
        m->wasprot[ix(m, z, s)] = 0;
    }
    m->wp[z] = 0;
    g_assert_cmpuint(plp_durable_end(r->p, z), ==, 0);
    m->now = t + gap(m);
}

static void ref_write(Ref *m)
{
    uint64_t z = g_rand_int_range(m->g, 0, m->zones), n;
    bool protect = g_rand_boolean(m->g);

    if (m->wp[z] == m->secs) {
        ref_reset(m, z);
    }
    n = g_rand_int_range(m->g, 1, 13);     /* not inside MIN: it evaluates twice */
    n = MIN(n, m->secs - m->wp[z]);
    m->next_gen++;
    uint64_t ack = wr(m->r, z, m->wp[z], n, protect, m->next_gen, m->now);
    assert_in_time(m, ack);
    for (uint64_t s = m->wp[z]; s < m->wp[z] + n; s++) {
        m->state[ix(m, z, s)] = protect ? S_PROT : S_VOL;
        m->wasprot[ix(m, z, s)] = protect;
        m->gen[ix(m, z, s)] = m->next_gen;
    }
    m->wp[z] += n;
    m->now = ack + gap(m);
}

static void ref_flush(Ref *m)
{
    uint64_t done = plp_flush(m->r->p, m->now);

    assert_in_time(m, done);
    for (uint64_t i = 0; i < m->zones * m->secs; i++) {
        if (m->state[i] == S_VOL) {
            m->state[i] = S_DUR;
        }
    }
    m->now = done + gap(m);
}

static void ref_drain(Ref *m)
{
    uint64_t z = g_rand_int_range(m->g, 0, m->zones);
    uint64_t done = plp_drain_zone(m->r->p, z, m->wp[z] * SEC, m->now);

    assert_in_time(m, done);
    for (uint64_t s = 0; s < m->wp[z]; s++) {
        if (m->state[ix(m, z, s)] != S_NONE) {     /* a hole left by a power loss stays */
            m->state[ix(m, z, s)] = S_DUR;
        }
    }
    g_assert_cmpuint(plp_durable_end(m->r->p, z), ==, m->wp[z] * SEC);
    m->now = done + gap(m);
}

static void ref_read(Ref *m)
{
    uint64_t z = g_rand_int_range(m->g, 0, m->zones);
    uint64_t s0 = g_rand_int_range(m->g, 0, m->secs);
    uint64_t n = g_rand_int_range(m->g, 1, 17);
    g_autofree uint8_t *out = NULL;
    uint64_t got;

    n = MIN(n, m->secs - s0);
    out = g_malloc(n * SEC);
    got = rd(m->r, z, s0, n, out, m->now);

    g_assert_cmpuint(got, <=, n * SEC);
    for (uint64_t s = 0; s < n; s++) {
        uint64_t i = ix(m, z, s0 + s);
        if (m->state[i] == S_NONE ? !zeroes(out + s * SEC, SEC)
                                  : !same(out + s * SEC, z, s0 + s, 1, m->gen[i])) {
            g_error("read of zone %" G_GUINT64_FORMAT " sector %" G_GUINT64_FORMAT
                    " (state %d) wrong", z, s0 + s, m->state[i]);
        }
    }
}

/* Power loss, restart, recovery; checks every sector; the reference follows. */
static void ref_power_cycle(Ref *m, uint32_t seed)
{
    Rig *r = m->r;
    const PlpStats *s = st(r);
    uint64_t spilled = s->flushed_sectors[PLP_CAUSE_THRESHOLD] +
                       s->flushed_sectors[PLP_CAUSE_SPACE];
    uint64_t prot = 0, wasprot = 0, lost = 0;
    PlpRecovery rec;
    PlpLoss loss;

    for (uint64_t i = 0; i < m->zones * m->secs; i++) {
        prot += m->state[i] == S_PROT;
        wasprot += m->wasprot[i];
    }
    cover.spilled += spilled;
    cover.waits += s->buffer_waits;
    cover.discarded += s->reset_discarded_sectors;
    plp_power_loss(r->p, m->now, &loss);
    rig_restart(r);
    plp_recover(r->p, 0, &rec);
    cover.recovered += rec.sectors;
    cover.lost += loss.lost_sectors;
    cover.loss_pages += loss.pages;
    for (uint64_t z = 0; z < m->zones; z++) {
        uint64_t end = 0;
        for (uint64_t sec = 0; sec < m->secs; sec++) {
            uint64_t i = ix(m, z, sec);
            const uint8_t *d = r->data + off_of(r, z, sec);
            bool zero = zeroes(d, SEC), ok = !zero && same(d, z, sec, 1, m->gen[i]);
            if (m->state[i] == S_NONE ? !zero : m->state[i] == S_VOL ? !zero && !ok : !ok) {
                g_error("seed %u: zone %" G_GUINT64_FORMAT " sector %" G_GUINT64_FORMAT
                        " (state %d) wrong after recovery", seed, z, sec, m->state[i]);
            }
            cover.spilled_pages += m->state[i] == S_VOL && !zero;
            if (m->state[i] == S_VOL && zero) {
                lost++;
                m->state[i] = S_NONE;
            } else if (m->state[i] != S_NONE) {
                m->state[i] = S_DUR;
                end = (sec + 1) * SEC;
            }
            m->wasprot[i] = 0;
        }
        if (plp_durable_end(r->p, z) != end) {
            g_error("seed %u: zone %" G_GUINT64_FORMAT " durable end %" G_GUINT64_FORMAT
                    ", data ends at %" G_GUINT64_FORMAT, seed, z, plp_durable_end(r->p, z),
                    end);
        }
        m->wp[z] = end / SEC;           /* the device rebuilds its write pointer */
    }
    if (loss.lost_sectors != lost) {
        g_error("seed %u: %" G_GUINT64_FORMAT " unprotected sectors lost, the model says %"
                G_GUINT64_FORMAT, seed, lost, loss.lost_sectors);
    }
    g_assert_cmpuint(rec.sectors, <=, wasprot);
    g_assert_cmpuint(rec.sectors + spilled, >=, prot);
    g_assert_cmpuint(loss.pages, <=, wasprot);
    g_assert_cmpuint(rec.pages, <=, rec.sectors);
    g_assert_cmpuint(rec.pages * SPP, >=, rec.sectors);
    /* pages the normal flush put at home cost nothing to recover; moved ones do */
    g_assert_cmpuint(rec.ns > 0, ==, rec.sectors > 0 && r->c.method == PLP_FLUSH_BALANCED);
    m->now = rec.ns + gap(m);
}

static void run_seed(uint32_t seed)
{
    GRand *g = g_rand_new_with_seed(seed);
    Opts o = { .stripe = 1u << g_rand_int_range(g, 0, 3), .zones = 6, .zone_pg = 8,
               .plp_sec = g_rand_int_range(g, 16, 49), .buf_sec = g_rand_int_range(g, 16, 49),
               .flush_pct = g_rand_int_range(g, 30, 101),
               .method = g_rand_boolean(g) ? PLP_FLUSH_NORMAL : PLP_FLUSH_BALANCED };
    Ref m = { .r = rig_new(o), .g = g, .secs = o.zone_pg * SPP, .zones = o.zones };

    m.state = g_new0(uint8_t, m.zones * m.secs);
    m.wasprot = g_new0(uint8_t, m.zones * m.secs);
    m.gen = g_new0(uint32_t, m.zones * m.secs);
    m.wp = g_new0(uint64_t, m.zones);
    for (int epoch = 0; epoch < 3; epoch++) {
        int steps = g_rand_int_range(g, 1, 160);
        for (int k = 0; k < steps; k++) {
            int dice = g_rand_int_range(g, 0, 100);
            if (dice < 62) {
                ref_write(&m);
            } else if (dice < 70) {
                ref_flush(&m);
            } else if (dice < 75) {
                ref_drain(&m);
            } else if (dice < 80) {
                ref_reset(&m, g_rand_int_range(g, 0, m.zones));
            } else {
                ref_read(&m);
            }
        }
        ref_power_cycle(&m, seed);
    }
    g_free(m.state);
    g_free(m.wasprot);
    g_free(m.gen);
    g_free(m.wp);
    rig_free(m.r);
    g_rand_free(g);
}

static void test_random_power_loss(void)
{
    for (uint32_t seed = 1; seed <= 50; seed++) {
        run_seed(seed);
    }
    g_test_message("recovered %" G_GUINT64_FORMAT ", lost %" G_GUINT64_FORMAT ", unflushed "
                   "but programmed %" G_GUINT64_FORMAT ", threshold/space %" G_GUINT64_FORMAT
                   ", waits %" G_GUINT64_FORMAT ", discarded %" G_GUINT64_FORMAT, cover.recovered,
                   cover.lost, cover.spilled_pages, cover.spilled, cover.waits, cover.discarded);
    g_assert_cmpuint(cover.recovered, >, 0);
    g_assert_cmpuint(cover.lost, >, 0);
    g_assert_cmpuint(cover.spilled_pages, >, 0);
    g_assert_cmpuint(cover.spilled, >, 0);
    g_assert_cmpuint(cover.waits, >, 0);
    g_assert_cmpuint(cover.discarded, >, 0);
    g_assert_cmpuint(cover.loss_pages, >, 0);
}

/* ---- configuration ---- */

typedef void Mutate(PlpConfig *c);
static void pct0(PlpConfig *c) { c->flush_pct = 0; }
static void pct101(PlpConfig *c) { c->flush_pct = 101; }
static void plp_odd(PlpConfig *c) { c->plp_bytes = 32 * SEC + 100; }
static void buf_odd(PlpConfig *c) { c->buf_bytes = 32 * SEC + 1; }
static void plp_4k(PlpConfig *c) { c->sector_bytes = 4096; c->plp_bytes = 9 * SEC; }
static void buf_4k(PlpConfig *c)
{
    c->sector_bytes = 4096;
    c->plp_bytes = 8 * 4096;
    c->buf_bytes = 9 * SEC;
}

static void test_config_refused(void)
{
    static const struct { Mutate *fn; const char *name; } cases[] = {
        { pct0, "flush_pct" }, { pct101, "flush_pct" }, { plp_odd, "plp_" },
        { buf_odd, "buf_mb" }, { plp_4k, "plp_" }, { buf_4k, "buf_mb" },
    };
    Rig *r = rig_new(opts(2, 32, 32, 50));
    char *err = NULL;

    g_assert_true(plp_config_check(&r->c, &err));
    g_assert_cmpstr(err, ==, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        PlpConfig c = r->c;
        cases[i].fn(&c);
        g_assert_false(plp_config_check(&c, &err));
        g_assert_nonnull(err);
        if (!strstr(err, cases[i].name)) {
            g_error("case %zu: \"%s\" does not name %s", i, err, cases[i].name);
        }
        g_test_message("%s", err);
        g_clear_pointer(&err, g_free);
        /* plp_new refuses it too, leaving the store alone */
        g_autofree uint8_t *store = g_malloc0(1 << 20);
        c.store = store;
        g_assert_null(plp_new(&c, &err));
        g_assert_nonnull(strstr(err, cases[i].name));
        g_assert_true(zeroes(store, 1 << 20));
        g_clear_pointer(&err, g_free);
    }
    /* the limits themselves are fine, and so are empty regions */
    PlpConfig c = r->c;
    c.flush_pct = 1;
    g_assert_true(plp_config_check(&c, &err));
    c.flush_pct = 100;
    c.buf_bytes = 0;
    g_assert_true(plp_config_check(&c, &err));
    c.plp_bytes = 0;
    c.buf_bytes = 32 * SEC;
    g_assert_true(plp_config_check(&c, &err));
    g_assert_cmpstr(err, ==, NULL);
    rig_free(r);
}

/* A store written by another configuration is refused, and left as it is. */
static void test_store_other_config(void)
{
    Rig *r = rig_new(opts(2, 32, 32, 100));
    PlpRecovery rec;
    PlpLoss loss;
    char *err = NULL;
    const uint64_t big = 1 << 20;

    wr(r, 0, 0, 8, true, 1, 0);
    plp_power_loss(r->p, 1 * MS, &loss);
    plp_free(r->p);
    r->p = NULL;
    g_autofree uint8_t *saved = g_memdup2(r->store, r->store_bytes);
    g_assert_cmpuint(plp_store_size(SEC, 64 * SEC, 4), <=, big);
    g_assert_cmpuint(plp_store_size(4096, 32 * SEC, 4), <=, big);
    g_assert_cmpuint(plp_store_size(SEC, 32 * SEC, 8), <=, big);

    for (int k = 0; k < 4; k++) {
        g_autofree uint8_t *store = g_malloc0(big);
        g_autofree uint8_t *data8 = NULL;
        ZnsFlashConfig fc8;
        ZnsFlash *f8 = NULL;
        PlpConfig c = r->c;

        memcpy(store, saved, r->store_bytes);
        c.store = store;
        if (k == 0) {
            c.plp_bytes = 64 * SEC;
        } else if (k == 1) {
            c.sector_bytes = 4096;
        } else if (k == 2) {
            fc8 = flash_config(2, 8, 16);
            f8 = flash_new(&fc8);
            data8 = g_malloc0(8 * r->zone_bytes);
            c.flash = f8;
            c.data = data8;
        } else {
            GRand *g = g_rand_new_with_seed(7);
            for (uint64_t i = 0; i < r->store_bytes; i++) {
                store[i] = g_rand_int(g);
            }
            g_rand_free(g);
        }
        g_autofree uint8_t *before = g_memdup2(store, big);
        g_assert_null(plp_new(&c, &err));
        g_assert_nonnull(err);
        g_assert_cmpuint(strlen(err), >, 0);
        g_test_message("case %d: %s", k, err);
        g_clear_pointer(&err, g_free);
        g_assert_cmpmem(store, big, before, big);
        zns_flash_free(f8);
    }
    /* the same configuration takes it and recovers */
    g_assert_cmpmem(r->store, r->store_bytes, saved, r->store_bytes);
    zns_flash_free(r->f);
    rig_open(r);
    plp_recover(r->p, 0, &rec);
    g_assert_cmpuint(rec.sectors, ==, 8);
    assert_data(r, 0, 0, 8, 1);
    rig_free(r);
}

/* FUA: the zone's unprotected data goes out, in order, and nothing of other zones. */
static void test_write_out_zone(void)
{
    Rig *r = rig_new(opts(1, 16 * SPP, 16 * SPP, 100));
    uint64_t t = 1000, done;

    wr(r, 0, 0, 12, false, 1, t);
    wr(r, 1, 0, 4, false, 1, t);
    wr(r, 0, 12, 2, true, 1, t);          /* protected: stays in the PLP region */
    done = plp_write_out_zone(r->p, 0, t);
    g_assert_cmpuint(done, >=, t + TPROG);
    g_assert_cmpuint(done, <=, t + 2 * TP + TXFER);
    assert_data(r, 0, 0, 12, 1);
    assert_zero(r, 0, 12, 2);
    assert_zero(r, 1, 0, 4);
    g_assert_cmpuint(st(r)->flushes[PLP_CAUSE_FUA], ==, 1);
    g_assert_cmpuint(st(r)->flushed_sectors[PLP_CAUSE_FUA], ==, 12);
    g_assert_cmpuint(plp_durable_end(r->p, 0), ==, 12 * SEC);
    /* nothing left to write: done at once, not counted */
    g_assert_cmpuint(plp_write_out_zone(r->p, 1, done) - done, >=, TPROG);
    g_assert_cmpuint(plp_write_out_zone(r->p, 1, 10 * done), ==, 10 * done);
    g_assert_cmpuint(st(r)->flushes[PLP_CAUSE_FUA], ==, 2);
    rig_free(r);
}

/*
 * The worst case the capacitors must cover: a full PLP region of 32 pages written from
 * zone 0 on. With stripe 1 a zone is one chip: the normal flush programs 16 pages on each
 * of two chips (channel transfers overlap other chips' programs), the balanced one 8 per
 * chip on all four.
 */
static void test_worst_case(void)
{
    Rig *r = rig_new(opts(1, 32 * SPP, 8 * SPP, 70));
    PlpLoss w;

    plp_worst_case(r->p, &w);
    g_assert_cmpuint(w.pages, ==, 32);
    g_assert_cmpuint(w.normal_ns, >=, 16 * TPROG + TXFER);
    g_assert_cmpuint(w.normal_ns, <=, 16 * TP + TXFER);
    g_assert_cmpuint(w.balanced_ns, >=, 8 * TPROG + TXFER);
    g_assert_cmpuint(w.balanced_ns, <=, 8 * TP + 2 * TXFER);
    g_assert_cmpfloat_with_epsilon(w.balanced_uj, plp_energy_uj(r->p, 32, w.balanced_ns), 1e-6);
    g_assert_cmpfloat(w.balanced_uf, <, w.normal_uf);
    /* nothing of the buffer or its timelines changed */
    g_assert_cmpuint(nand(r)->stats.programs, ==, 0);
    g_assert_cmpuint(nand_all_idle_ns(nand(r)), ==, 0);
    rig_free(r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_set_nonfatal_assertions();   /* a failed case does not hide the others */
    g_test_add_func("/plp/buffer/pool-and-hits", test_pool_and_hits);
    g_test_add_func("/plp/buffer/clock", test_clock);
    g_test_add_func("/plp/power-loss/protected-survive", test_protected_survive);
    g_test_add_func("/plp/buffer/zone-lists", test_zone_lists);
    g_test_add_func("/plp/write-out/threshold", test_threshold);
    g_test_add_func("/plp/write-out/full-waits", test_full_waits);
    g_test_add_func("/plp/write-out/larger-than-region", test_larger_than_region);
    g_test_add_func("/plp/write-out/host-flush", test_host_flush);
    g_test_add_func("/plp/reset/discard", test_reset_discard);
    g_test_add_func("/plp/write-out/drain", test_drain);
    g_test_add_func("/plp/select/protects", test_protects);
    g_test_add_func("/plp/select/zones-parse", test_zones_parse);
    g_test_add_func("/plp/power-loss/balanced-vs-normal", test_balanced_vs_normal);
    g_test_add_func("/plp/power-loss/oob-round-trip", test_oob_round_trip);
    g_test_add_func("/plp/power-loss/spor-durable-ends", test_spor_durable_ends);
    g_test_add_func("/plp/power-loss/random", test_random_power_loss);
    g_test_add_func("/plp/power-loss/worst-case", test_worst_case);
    g_test_add_func("/plp/write-out/fua-zone", test_write_out_zone);
    g_test_add_func("/plp/config/refused", test_config_refused);
    g_test_add_func("/plp/config/store-other-config", test_store_other_config);
    return g_test_run();
}
