/*
 * The conventional FTLs' DRAM write buffer (hw/femu/ftl/write-buffer.c) against a fake
 * FTL that records what it is asked to program and read, and a data area it writes to.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>

#include "ftl/write-buffer.h"
#include "nand/nand.h"

#define UNIT 4096u
#define UNITS 64u                   /* of the data area */
#define PROG_NS 1000000u            /* each program call's duration */
#define READ_NS 50000u

typedef struct Fake {
    uint8_t data[UNITS * UNIT];     /* the data area */
    uint64_t programmed[4096];      /* units, in the order programmed */
    uint64_t tags[4096];
    uint32_t nprog, calls;
    uint64_t reads, read_bytes;
    uint64_t busy_until;            /* programs run one call after the other */
} Fake;

static uint64_t fake_program(void *opaque, const uint64_t *units, uint32_t n, uint64_t tag,
                             uint64_t now)
{
    Fake *f = opaque;

    for (uint32_t i = 0; i < n; i++) {
        f->tags[f->nprog] = tag;
        f->programmed[f->nprog++] = units[i];
    }
    f->calls++;
    f->busy_until = MAX(f->busy_until, now) + PROG_NS;
    return f->busy_until;
}

static uint64_t fake_read(void *opaque, uint64_t offset G_GNUC_UNUSED, uint64_t len,
                          uint64_t now)
{
    Fake *f = opaque;

    f->reads++;
    f->read_bytes += len;
    return now + READ_NS;
}

static void fake_put(void *opaque, uint64_t offset, const void *src, uint64_t len)
{
    Fake *f = opaque;

    g_assert_cmpuint(offset + len, <=, sizeof(f->data));
    memcpy(f->data + offset, src, len);
}

static NandModel *nand;

static FtlWb *new_wb(Fake *f, uint32_t cap_units, bool plp, bool keep)
{
    FtlWbConfig c = {
        .unit_bytes = UNIT, .bytes = (uint64_t)cap_units * UNIT, .high_pct = 60,
        .low_pct = 40, .plp = plp, .batch = 2, .ctrl_mw = 2000, .chip_mw = 150,
        .nand = nand,
    };
    FtlWbSink s = {
        .opaque = f, .program = fake_program, .read = fake_read,
        .put = keep ? fake_put : NULL, .put_opaque = f,
    };
    g_autofree char *err = NULL;

    memset(f, 0, sizeof(*f));
    g_assert_true(ftl_wb_check(&c, &err));
    return ftl_wb_new(&c, &s, NULL);
}

static void fill(uint8_t *buf, uint64_t len, uint8_t v)
{
    memset(buf, v, len);
}

/* Writes are taken at once; reads see them; the data area gets nothing until programmed. */
static void test_hit(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWb *wb = new_wb(f, 10, false, true);
    uint8_t w[2 * UNIT], r[2 * UNIT];
    uint64_t t;

    fill(w, sizeof(w), 0xab);
    t = ftl_wb_write(wb, 3 * UNIT, 2 * UNIT, w, 0, false, 100);
    g_assert_cmpuint(t, ==, 100);
    g_assert_cmpuint(f->nprog, ==, 0);
    g_assert_cmpuint(f->data[3 * UNIT], ==, 0);
    memset(r, 0, sizeof(r));
    t = ftl_wb_read(wb, 3 * UNIT, 2 * UNIT, r, 200);
    g_assert_cmpuint(t, ==, 200);               /* no flash read */
    g_assert_cmpuint(f->reads, ==, 0);
    g_assert_cmpmem(r, sizeof(r), w, sizeof(w));
    g_assert_cmpuint(ftl_wb_stats(wb)->read_hit_bytes, ==, 2 * UNIT);
    ftl_wb_free(wb);
    g_free(f);
}

/* Past the high watermark the oldest units are programmed down to the low one. */
static void test_watermarks(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWb *wb = new_wb(f, 10, false, true);     /* high 6, low 4 */
    uint8_t w[UNIT];

    for (uint32_t u = 0; u < 6; u++) {
        fill(w, UNIT, u + 1);
        ftl_wb_write(wb, u * UNIT, UNIT, w, 0, false, 0);
    }
    g_assert_cmpuint(f->nprog, ==, 0);
    fill(w, UNIT, 7);
    ftl_wb_write(wb, 6 * UNIT, UNIT, w, 0, false, 0);
    g_assert_cmpuint(f->nprog, ==, 3);          /* 7 held -> 4 */
    for (uint32_t i = 0; i < 3; i++) {
        g_assert_cmpuint(f->programmed[i], ==, i);
        g_assert_cmpuint(f->data[i * UNIT], ==, i + 1);
    }
    g_assert_cmpuint(f->calls, ==, 2);          /* batches of 2 */
    g_assert_cmpuint(f->data[3 * UNIT], ==, 0); /* still only in the buffer */
    g_assert_cmpuint(ftl_wb_stats(wb)->held_units, ==, 4);
    g_assert_cmpuint(ftl_wb_stats(wb)->written_out[FTL_WB_WATERMARK], ==, 3);
    ftl_wb_free(wb);
    g_free(f);
}

/*
 * Watermark write-out keeps FTL_WB_WINDOW batches programming, not the whole excess: the
 * rest waits in the buffer for the next writes (or idle time).
 */
static void test_window(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWbConfig c = {
        .unit_bytes = UNIT, .bytes = 100 * UNIT, .high_pct = 60, .low_pct = 10, .batch = 4,
        .nand = nand,
    };
    FtlWbSink s = { .opaque = f, .program = fake_program, .read = fake_read };
    FtlWb *wb;

    memset(f, 0, sizeof(*f));
    wb = ftl_wb_new(&c, &s, NULL);
    ftl_wb_write(wb, 0, 61 * UNIT, NULL, 0, false, 0);
    g_assert_cmpuint(f->calls, ==, FTL_WB_WINDOW);
    g_assert_cmpuint(f->nprog, ==, FTL_WB_WINDOW * 4);
    /* still draining: a write once the first batch is done sends one more */
    ftl_wb_write(wb, 70 * UNIT, UNIT, NULL, 0, false, PROG_NS);
    g_assert_cmpuint(f->calls, ==, FTL_WB_WINDOW + 1);
    g_assert_cmpuint(f->programmed[f->nprog - 1], ==, (FTL_WB_WINDOW + 1) * 4 - 1);
    /* idle time writes out down to low (10 units) at once */
    ftl_wb_idle(wb, 10 * PROG_NS);
    g_assert_cmpuint(ftl_wb_stats(wb)->held_units, ==, 10);
    g_assert_cmpuint(ftl_wb_stats(wb)->written_out[FTL_WB_IDLE], ==, 62 - 10 - 12);
    ftl_wb_free(wb);
    g_free(f);
}

/* A stripe is handed on call_units at a time: each call's places free when it completes. */
static void test_calls(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWbConfig c = {
        .unit_bytes = UNIT, .bytes = 4 * UNIT, .high_pct = 100, .low_pct = 0, .batch = 4,
        .call_units = 2, .nand = nand,
    };
    FtlWbSink s = { .opaque = f, .program = fake_program, .read = fake_read };
    FtlWb *wb;

    memset(f, 0, sizeof(*f));
    wb = ftl_wb_new(&c, &s, NULL);
    ftl_wb_write(wb, 0, 3 * UNIT, NULL, 0, false, 0);      /* high clamps to 3 */
    ftl_wb_write(wb, 3 * UNIT, UNIT, NULL, 0, false, 0);   /* 4 held: a stripe goes */
    g_assert_cmpuint(f->calls, ==, 2);
    g_assert_cmpuint(f->nprog, ==, 4);
    /* the first call's two places are free at 1 ms, the second's at 2 ms */
    g_assert_cmpuint(ftl_wb_write(wb, 4 * UNIT, UNIT, NULL, 0, false, 10), ==, PROG_NS);
    g_assert_cmpuint(ftl_wb_write(wb, 5 * UNIT, UNIT, NULL, 0, false, 10), ==, PROG_NS);
    g_assert_cmpuint(ftl_wb_write(wb, 6 * UNIT, UNIT, NULL, 0, false, 10), ==, 2 * PROG_NS);
    ftl_wb_free(wb);
    g_free(f);
}

/* A unit written twice while held is programmed once, with the newer bytes. */
static void test_absorb(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWb *wb = new_wb(f, 10, false, true);
    uint8_t w[UNIT];

    fill(w, UNIT, 1);
    ftl_wb_write(wb, 0, UNIT, w, 0, false, 0);
    fill(w, 512, 2);
    ftl_wb_write(wb, 512, 512, w, 0, false, 0);
    g_assert_cmpuint(ftl_wb_stats(wb)->absorbed_units, ==, 1);
    g_assert_cmpuint(ftl_wb_flush(wb, 10), ==, PROG_NS + 10);
    g_assert_cmpuint(f->nprog, ==, 1);
    g_assert_cmpuint(f->data[0], ==, 1);
    g_assert_cmpuint(f->data[512], ==, 2);
    g_assert_cmpuint(f->data[1024], ==, 1);
    ftl_wb_free(wb);
    g_free(f);
}

/* A full buffer: a write waits for the earliest program to free a place. */
static void test_full_waits(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWbConfig c = {
        .unit_bytes = UNIT, .bytes = 4 * UNIT, .high_pct = 100, .low_pct = 50, .batch = 1,
        .nand = nand,
    };
    FtlWbSink s = { .opaque = f, .program = fake_program, .read = fake_read };
    FtlWb *wb;
    uint64_t t;

    memset(f, 0, sizeof(*f));
    wb = ftl_wb_new(&c, &s, NULL);                    /* high clamps to 3 of 4 */
    for (uint32_t u = 0; u < 3; u++) {
        g_assert_cmpuint(ftl_wb_write(wb, u * UNIT, UNIT, NULL, 0, false, 0), ==, 0);
    }
    /* the 4th passes high: 2 oldest go out, one after the other (1 ms each) */
    g_assert_cmpuint(ftl_wb_write(wb, 3 * UNIT, UNIT, NULL, 0, false, 0), ==, 0);
    g_assert_cmpuint(f->nprog, ==, 2);
    /* 2 held, 2 places free only at 1 ms and 2 ms */
    t = ftl_wb_write(wb, 4 * UNIT, UNIT, NULL, 0, false, 10);
    g_assert_cmpuint(t, ==, PROG_NS);
    t = ftl_wb_write(wb, 5 * UNIT, UNIT, NULL, 0, false, 10);
    g_assert_cmpuint(ftl_wb_stats(wb)->waits, >=, 1);
    g_assert_cmpuint(t, >=, PROG_NS);
    ftl_wb_free(wb);
    g_free(f);
}

/* FUA programs the write's own units only and completes when they are programmed. */
static void test_fua(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWb *wb = new_wb(f, 10, false, true);
    uint8_t w[UNIT];
    uint64_t t;

    fill(w, UNIT, 5);
    ftl_wb_write(wb, 0, UNIT, w, 0, false, 0);
    t = ftl_wb_write(wb, 2 * UNIT, UNIT, w, 7, true, 100);
    g_assert_cmpuint(t, ==, 100 + PROG_NS);
    g_assert_cmpuint(f->nprog, ==, 1);
    g_assert_cmpuint(f->programmed[0], ==, 2);
    g_assert_cmpuint(f->tags[0], ==, 7);
    g_assert_cmpuint(f->data[2 * UNIT], ==, 5);
    g_assert_cmpuint(f->data[0], ==, 0);        /* the earlier write stays buffered */
    ftl_wb_free(wb);
    /* with PLP a FUA write is safe once taken */
    wb = new_wb(f, 10, true, false);
    g_assert_cmpuint(ftl_wb_write(wb, 0, UNIT, NULL, 0, true, 100), ==, 100);
    g_assert_cmpuint(f->nprog, ==, 0);
    ftl_wb_free(wb);
    g_free(f);
}

/* A read of a partly held unit reads the flash and still gets the held sectors. */
static void test_partial(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWb *wb = new_wb(f, 10, false, true);
    uint8_t w[512], r[UNIT];
    uint64_t t;

    memset(f->data, 0x11, UNIT);
    fill(w, 512, 0x22);
    ftl_wb_write(wb, 1024, 512, w, 0, false, 0);
    memcpy(r, f->data, UNIT);
    t = ftl_wb_read(wb, 0, UNIT, r, 1000);
    g_assert_cmpuint(t, ==, 1000 + READ_NS);
    g_assert_cmpuint(f->reads, ==, 1);
    g_assert_cmpuint(r[0], ==, 0x11);
    g_assert_cmpuint(r[1024], ==, 0x22);
    g_assert_cmpuint(r[1536], ==, 0x11);
    /* the held sector alone is a hit */
    t = ftl_wb_read(wb, 1024, 512, r, 2000);
    g_assert_cmpuint(t, ==, 2000);
    /* a range with held units between misses: two flash reads */
    ftl_wb_write(wb, 4 * UNIT, UNIT, NULL, 0, false, 0);
    f->reads = f->read_bytes = 0;
    ftl_wb_read(wb, 3 * UNIT, 3 * UNIT, NULL, 3000);
    g_assert_cmpuint(f->reads, ==, 2);
    g_assert_cmpuint(f->read_bytes, ==, 2 * UNIT);
    ftl_wb_free(wb);
    g_free(f);
}

/* Deallocate drops what the range covers; a unit keeps its other sectors. */
static void test_drop(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWb *wb = new_wb(f, 10, false, true);
    uint8_t w[2 * UNIT];

    fill(w, sizeof(w), 9);
    ftl_wb_write(wb, 0, 2 * UNIT, w, 0, false, 0);
    ftl_wb_drop(wb, 0, UNIT + 512);
    g_assert_cmpuint(ftl_wb_stats(wb)->dropped_units, ==, 1);
    g_assert_cmpuint(ftl_wb_stats(wb)->held_units, ==, 1);
    ftl_wb_flush(wb, 0);
    g_assert_cmpuint(f->nprog, ==, 1);
    g_assert_cmpuint(f->programmed[0], ==, 1);
    g_assert_cmpuint(f->data[UNIT], ==, 0);           /* dropped sector not written */
    g_assert_cmpuint(f->data[UNIT + 512], ==, 9);
    /* a range larger than what is held takes the other path */
    ftl_wb_write(wb, 5 * UNIT, UNIT, w, 0, false, 0);
    ftl_wb_drop(wb, 0, UNITS * UNIT);
    g_assert_cmpuint(ftl_wb_stats(wb)->held_units, ==, 0);
    ftl_wb_free(wb);
    g_free(f);
}

/* Power loss: without PLP the held data is gone; with PLP it is programmed and costed. */
static void test_power_loss(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWb *wb = new_wb(f, 10, false, true);
    uint8_t w[UNIT];

    fill(w, UNIT, 3);
    ftl_wb_write(wb, 0, UNIT, w, 0, false, 0);
    ftl_wb_write(wb, UNIT, UNIT, w, 0, false, 0);
    ftl_wb_power_loss(wb, 100);
    g_assert_cmpuint(ftl_wb_stats(wb)->lost_units, ==, 2);
    g_assert_cmpuint(f->nprog, ==, 0);
    g_assert_cmpuint(f->data[0], ==, 0);
    /* the buffer works again after power-up, empty */
    g_assert_cmpuint(ftl_wb_stats(wb)->held_units, ==, 0);
    g_assert_cmpuint(ftl_wb_write(wb, 0, UNIT, w, 0, false, 200), ==, 200);
    ftl_wb_free(wb);

    wb = new_wb(f, 10, true, false);
    ftl_wb_write(wb, 0, 3 * UNIT, NULL, 0, false, 0);
    g_assert_cmpuint(ftl_wb_flush(wb, 10), ==, 10);     /* nothing volatile */
    g_assert_cmpuint(f->nprog, ==, 0);
    ftl_wb_power_loss(wb, 100);
    g_assert_cmpuint(f->nprog, ==, 3);
    g_assert_cmpuint(ftl_wb_stats(wb)->plp_units, ==, 3);
    g_assert_cmpuint(ftl_wb_stats(wb)->plp_ns, ==, 2 * PROG_NS);   /* 2 calls of batch 2 */
    g_assert_cmpfloat(ftl_wb_stats(wb)->plp_uj, >, 0);
    ftl_wb_free(wb);
    g_free(f);
}

/* Idle time programs down to the low watermark; shutdown programs everything. */
static void test_idle_shutdown(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWb *wb = new_wb(f, 10, true, false);

    ftl_wb_write(wb, 0, 6 * UNIT, NULL, 0, false, 0);
    ftl_wb_idle(wb, 10);
    g_assert_cmpuint(ftl_wb_stats(wb)->held_units, ==, 4);
    g_assert_cmpuint(ftl_wb_shutdown(wb, 20), ==, f->busy_until);
    g_assert_cmpuint(ftl_wb_stats(wb)->held_units, ==, 0);
    g_assert_cmpuint(f->nprog, ==, 6);
    ftl_wb_free(wb);
    g_free(f);
}

/* A write larger than the buffer goes through it in turns. */
static void test_larger_than_buffer(void)
{
    Fake *f = g_new(Fake, 1);
    FtlWb *wb = new_wb(f, 4, false, true);
    static uint8_t w[16 * UNIT], r[16 * UNIT];
    uint64_t t;

    for (uint32_t i = 0; i < sizeof(w); i++) {
        w[i] = i * 7 + 1;
    }
    t = ftl_wb_write(wb, 0, sizeof(w), w, 0, true, 0);
    g_assert_cmpuint(t, ==, f->busy_until);
    g_assert_cmpuint(ftl_wb_stats(wb)->held_units, ==, 0);
    g_assert_cmpmem(f->data, sizeof(w), w, sizeof(w));
    memcpy(r, f->data, sizeof(r));
    ftl_wb_read(wb, 0, sizeof(r), r, t);
    g_assert_cmpmem(r, sizeof(r), w, sizeof(w));
    ftl_wb_free(wb);
    g_free(f);
}

static void test_check(void)
{
    FtlWbConfig c = { .unit_bytes = UNIT, .bytes = UNIT, .high_pct = 60, .low_pct = 60 };
    g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL;

    g_assert_false(ftl_wb_check(&c, &e1));
    g_assert_nonnull(strstr(e1, "wb_high_pct"));
    c.low_pct = 10;
    c.bytes = UNIT - 1;
    g_assert_false(ftl_wb_check(&c, &e2));
    g_assert_nonnull(strstr(e2, "wb_size_mb"));
    c.bytes = UNIT;
    c.unit_bytes = 100;
    g_assert_false(ftl_wb_check(&c, &e3));
}

int main(int argc, char **argv)
{
    NandGeometry g = { .nchs = 2, .luns_per_ch = 1, .pls_per_lun = 1, .blks_per_pl = 4,
                       .pgs_per_blk = 4, .secs_per_pg = 8, .secsz = 512 };
    NandTiming tm = { .cell_bits = 1, .pg_rd_lat = { 40000 }, .pg_wr_lat = { 200000 },
                      .blk_er_lat = 2000000, .ch_xfer_lat = 10000, .time_scale = 1 };
    int rc;

    g_test_init(&argc, &argv, NULL);
    nand = nand_model_new(&g, &tm, NULL);
    g_assert_nonnull(nand);
    g_test_add_func("/write-buffer/hit", test_hit);
    g_test_add_func("/write-buffer/watermarks", test_watermarks);
    g_test_add_func("/write-buffer/window", test_window);
    g_test_add_func("/write-buffer/calls", test_calls);
    g_test_add_func("/write-buffer/absorb", test_absorb);
    g_test_add_func("/write-buffer/full-waits", test_full_waits);
    g_test_add_func("/write-buffer/fua", test_fua);
    g_test_add_func("/write-buffer/partial", test_partial);
    g_test_add_func("/write-buffer/drop", test_drop);
    g_test_add_func("/write-buffer/power-loss", test_power_loss);
    g_test_add_func("/write-buffer/idle-shutdown", test_idle_shutdown);
    g_test_add_func("/write-buffer/larger-than-buffer", test_larger_than_buffer);
    g_test_add_func("/write-buffer/check", test_check);
    rc = g_test_run();
    nand_model_free(nand);
    return rc;
}
