/*
 * The guest host FTL's core (guest/hostftl/ftl.c) on an in-memory OCSSD that
 * enforces the chunk rules (writes at the write pointer in WS_MIN multiples,
 * reads below it, resets of closed chunks only, open-chunk limits), against a
 * reference model of what every logical sector holds: random writes, trims,
 * reads and flushes of several times the capacity, checkpoint reloads, refusals.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "ftl.h"
#include "dev-mem.h"

#define SS 4096

/* ---- the fake device: guest/hostftl/dev-mem.c ---- */

typedef struct mem_dev Fake;
#define fake_ops mem_dev_ops

static Fake *fake_new(uint32_t maxoc, uint32_t maxocpu)
{
    struct ftl_geo g = { .num_grp = 2, .num_pu = 4, .num_chk = 24, .clba = 64, .ws_min = 4,
                         .ws_opt = 8, .maxoc = maxoc, .maxocpu = maxocpu, .sector_size = SS };
    Fake *d = mem_dev_new(&g);
    g_assert_nonnull(d);
    return d;
}

#define fake_free mem_dev_free

/* ---- data and the reference model ---- */

static void fill(uint8_t *p, uint64_t lba, uint64_t tag)
{
    uint64_t *w = (uint64_t *)p;
    for (int i = 0; i < SS / 8; i++)
        w[i] = (tag * 0x9e3779b97f4a7c15ull) ^ (lba << 20) ^ (uint64_t)i;
}

static bool holds(const uint8_t *p, uint64_t lba, uint64_t tag)
{
    static uint8_t want[SS];
    if (tag == 0) {
        for (int i = 0; i < SS; i++)
            if (p[i])
                return false;
        return true;
    }
    fill(want, lba, tag);
    return memcmp(p, want, SS) == 0;
}

static uint8_t *abuf(size_t sectors)
{
    void *p = NULL;
    g_assert_cmpint(posix_memalign(&p, 4096, sectors * SS), ==, 0);
    return p;
}

/* read everything back and compare with the model */
static void check_all(struct ftl *f, const uint64_t *ref, uint64_t n)
{
    uint8_t *buf = abuf(64);
    for (uint64_t lba = 0; lba < n; lba += 64) {
        uint32_t k = n - lba < 64 ? n - lba : 64;
        g_assert_cmpint(ftl_read(f, lba, k, buf), ==, 0);
        for (uint32_t i = 0; i < k; i++)
            if (!holds(buf + (size_t)i * SS, lba + i, ref[lba + i]))
                g_error("sector %" G_GUINT64_FORMAT " does not hold write %" G_GUINT64_FORMAT,
                        lba + i, ref[lba + i]);
    }
    free(buf);
}

static struct ftl *must_open(Fake *d)
{
    char err[256] = "";
    struct ftl *f = ftl_open(&d->g, &fake_ops, d, false, err, sizeof(err));
    if (!f)
        g_error("ftl_open: %s", err);
    return f;
}

static void must_close(struct ftl *f)
{
    char err[256] = "";
    if (ftl_close(f, err, sizeof(err)))
        g_error("ftl_close: %s", err);
}

static void must_format(Fake *d, double op)
{
    char err[256] = "";
    struct ftl_format_opts o = { .op_pcent = op };
    if (ftl_format(&d->g, &fake_ops, d, &o, err, sizeof(err)))
        g_error("ftl_format: %s", err);
}

/* ---- the random workload ---- */

static double waf_of[2];

static void random_workload(double op, uint32_t maxoc, uint32_t maxocpu, int slot)
{
    Fake *d = fake_new(maxoc, maxocpu);
    GRand *rnd = g_rand_new_with_seed(1234 + slot);
    struct ftl *f;
    struct ftl_stats st;
    uint64_t n, *ref, tag = 0, written = 0, target, next_reload;
    uint64_t total_gc = 0, total_host = 0, total_dev = 0, total_pad = 0, reloads = 0, ops = 0;
    uint8_t *buf = abuf(16);

    must_format(d, op);
    f = must_open(d);
    n = ftl_logical_sectors(f);
    g_assert_cmpuint(n, >, 0);
    /* the exposed capacity follows from OP: at most usable / (1 + op) */
    g_assert_cmpuint(n, <=, (uint64_t)(d->nchunks * d->g.clba / (1 + op / 100)));
    ref = g_new0(uint64_t, n);
    target = 4 * n;
    next_reload = target / 5;
    while (written < target) {
        int what = g_rand_int_range(rnd, 0, 100);
        uint32_t k = g_rand_int_range(rnd, 1, 17);
        uint64_t lba = g_rand_int_range(rnd, 0, n);
        if (lba + k > n)
            k = n - lba;
        if (what < 60) {
            for (uint32_t i = 0; i < k; i++)
                fill(buf + (size_t)i * SS, lba + i, ++tag);
            g_assert_cmpint(ftl_write(f, lba, k, buf), ==, 0);
            for (uint32_t i = 0; i < k; i++)
                ref[lba + i] = tag - k + 1 + i;
            written += k;
        } else if (what < 66) {
            g_assert_cmpint(ftl_trim(f, lba, k), ==, 0);
            for (uint32_t i = 0; i < k; i++)
                ref[lba + i] = 0;
        } else if (what < 70) {
            g_assert_cmpint(ftl_flush(f), ==, 0);
        } else {
            g_assert_cmpint(ftl_read(f, lba, k, buf), ==, 0);
            for (uint32_t i = 0; i < k; i++)
                if (!holds(buf + (size_t)i * SS, lba + i, ref[lba + i]))
                    g_error("read of sector %" G_GUINT64_FORMAT " after %" G_GUINT64_FORMAT
                            " sectors written: not write %" G_GUINT64_FORMAT, lba + i, written,
                            ref[lba + i]);
        }
        if (d->violations)
            g_error("device rule broken: %s", d->last_violation);
        if (++ops % 64 == 0)
            g_assert_cmpstr(ftl_check(f), ==, NULL);
        if (written >= next_reload) {
            /* clean stop and start: everything must come back from the checkpoint */
            ftl_get_stats(f, &st);
            total_gc += st.gc_write_sectors;
            total_host += st.host_write_sectors;
            total_dev += st.dev_write_sectors;
            total_pad += st.pad_sectors;
            must_close(f);
            g_assert_cmpuint(d->violations, ==, 0);
            f = must_open(d);
            g_assert_cmpuint(ftl_logical_sectors(f), ==, n);
            check_all(f, ref, n);
            reloads++;
            next_reload += target / 5;
        }
    }
    check_all(f, ref, n);
    ftl_get_stats(f, &st);
    total_gc += st.gc_write_sectors;
    total_host += st.host_write_sectors;
    total_dev += st.dev_write_sectors;
    total_pad += st.pad_sectors;
    must_close(f);
    g_assert_cmpuint(d->violations, ==, 0);
    g_assert_cmpuint(reloads, >=, 4);
    /* every device write of data is a host write, a GC copy or padding */
    g_assert_cmpuint(total_dev, ==, total_host + total_gc + total_pad);
    g_assert_cmpuint(total_pad, >, 0); /* flushes pad to WS_MIN */
    g_assert_cmpuint(d->batches, >, 0); /* stripes went to several PUs at once */
    /* GC ran and moved data; WAF counts it */
    g_assert_cmpuint(total_gc, >, 0);
    g_assert_cmpuint(total_dev, >=, total_host + total_gc);
    g_assert_cmpuint(d->resets, >, d->nchunks);
    waf_of[slot] = (double)total_dev / total_host;
    g_test_message("op %.0f%%: %" G_GUINT64_FORMAT " logical sectors, WAF %.2f, %"
                   G_GUINT64_FORMAT " resets", op, n, waf_of[slot], d->resets);
    g_assert_cmpfloat(waf_of[slot], >, 1.0);
    /* and once more from the last checkpoint */
    f = must_open(d);
    check_all(f, ref, n);
    ftl_abandon(f);
    g_free(ref);
    free(buf);
    g_rand_free(rnd);
    fake_free(d);
}

static void test_random_op10(void)
{
    random_workload(10, 0, 0, 0);
}

/* with open-chunk limits: one chunk per PU, and a line plus one in all */
static void test_random_op30_limits(void)
{
    random_workload(30, 9, 1, 1);
}

static void test_waf_falls_with_op(void)
{
    if (!waf_of[0] || !waf_of[1]) {
        g_test_skip("needs both random workloads");
        return;
    }
    g_assert_cmpfloat(waf_of[1], <, waf_of[0]);
}

/* ---- refusals and recovery ---- */

static void test_unformatted(void)
{
    Fake *d = fake_new(0, 0);
    char err[256] = "";
    struct ftl *f = ftl_open(&d->g, &fake_ops, d, false, err, sizeof(err));
    g_assert_null(f);
    g_assert_nonnull(strstr(err, "never formatted"));
    /* --force does not invent a checkpoint */
    f = ftl_open(&d->g, &fake_ops, d, true, err, sizeof(err));
    g_assert_null(f);
    g_assert_cmpuint(d->writes, ==, 0);
    fake_free(d);
}

static void test_op_too_small(void)
{
    Fake *d = fake_new(0, 0);
    char err[256] = "";
    struct ftl_format_opts o = { .op_pcent = 1 };
    g_assert_cmpint(ftl_format(&d->g, &fake_ops, d, &o, err, sizeof(err)), !=, 0);
    g_assert_nonnull(strstr(err, "--op"));
    o.op_pcent = -3;
    g_assert_cmpint(ftl_format(&d->g, &fake_ops, d, &o, err, sizeof(err)), !=, 0);
    g_assert_nonnull(strstr(err, "0..400"));
    o = (struct ftl_format_opts){ .op_pcent = 20, .line_pus = 3 };
    g_assert_cmpint(ftl_format(&d->g, &fake_ops, d, &o, err, sizeof(err)), !=, 0);
    g_assert_nonnull(strstr(err, "--line-pus"));
    fake_free(d);
}

static void test_unclean_stop(void)
{
    Fake *d = fake_new(0, 0);
    char err[256] = "";
    uint8_t *buf = abuf(8);
    struct ftl *f;

    must_format(d, 20);
    f = must_open(d);
    for (int i = 0; i < 8; i++)
        fill(buf + i * SS, 100 + i, 7 + i);
    g_assert_cmpint(ftl_write(f, 100, 8, buf), ==, 0);
    must_close(f);
    /* a run that ends without a checkpoint */
    f = must_open(d);
    for (int i = 0; i < 8; i++)
        fill(buf + i * SS, 200 + i, 50 + i);
    g_assert_cmpint(ftl_write(f, 200, 8, buf), ==, 0);
    g_assert_cmpint(ftl_flush(f), ==, 0);
    ftl_abandon(f);
    f = ftl_open(&d->g, &fake_ops, d, false, err, sizeof(err));
    g_assert_null(f);
    g_assert_nonnull(strstr(err, "not stopped cleanly"));
    /* --force: the checkpoint's state, the later writes lost, the device usable */
    f = ftl_open(&d->g, &fake_ops, d, true, err, sizeof(err));
    g_assert_nonnull(f);
    g_assert_cmpint(ftl_read(f, 100, 8, buf), ==, 0);
    for (int i = 0; i < 8; i++)
        g_assert_true(holds(buf + i * SS, 100 + i, 7 + i));
    g_assert_cmpint(ftl_read(f, 200, 8, buf), ==, 0);
    for (int i = 0; i < 8; i++)
        g_assert_true(holds(buf + i * SS, 200 + i, 0));
    for (int i = 0; i < 8; i++)
        fill(buf + i * SS, 300 + i, 90 + i);
    g_assert_cmpint(ftl_write(f, 300, 8, buf), ==, 0);
    must_close(f);
    g_assert_cmpuint(d->violations, ==, 0);
    f = must_open(d);
    g_assert_cmpint(ftl_read(f, 300, 8, buf), ==, 0);
    for (int i = 0; i < 8; i++)
        g_assert_true(holds(buf + i * SS, 300 + i, 90 + i));
    must_close(f);
    /* formatting again empties it */
    must_format(d, 20);
    f = must_open(d);
    g_assert_cmpint(ftl_read(f, 100, 8, buf), ==, 0);
    for (int i = 0; i < 8; i++)
        g_assert_true(holds(buf + i * SS, 100 + i, 0));
    ftl_abandon(f);
    g_assert_cmpuint(d->violations, ==, 0);
    free(buf);
    fake_free(d);
}

/*
 * A checkpoint header that is whole (its CRC matches) but whose sizes are not this
 * device's is refused before they size a read. Offsets of struct ckpt_hdr (ftl.c).
 */
#define CKPT_HDR_BYTES 104
#define CKPT_HDR_CRC 12
#define CKPT_LOGICAL 56
#define CKPT_PAYLOAD_BYTES 88

static void test_crafted_checkpoint(void)
{
    const uint64_t phys = 2 * 4 * 24 * 64;      /* fake_new's sectors */
    static const struct { size_t off; uint64_t v; const char *says; } t[] = {
        { CKPT_LOGICAL, 0, "says 0 logical sectors" },
        { CKPT_LOGICAL, phys + 1, "logical sectors; the device has 12288" },
        { CKPT_LOGICAL, 64 * phys, "logical sectors; the device has 12288" },
        { CKPT_LOGICAL, UINT64_MAX, "logical sectors; the device has 12288" },
        { CKPT_PAYLOAD_BYTES, 1ull << 40, "damaged" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
        Fake *d = fake_new(0, 0);
        uint8_t *h = d->data;       /* the first checkpoint: region 0, at LBA 0 */
        char err[256] = "";
        uint32_t crc = 0;

        must_format(d, 20);
        memcpy(h + t[i].off, &t[i].v, 8);
        memcpy(h + CKPT_HDR_CRC, &crc, 4);
        crc = ftl_crc32(0, h, CKPT_HDR_BYTES);
        memcpy(h + CKPT_HDR_CRC, &crc, 4);
        g_assert_null(ftl_open(&d->g, &fake_ops, d, true, err, sizeof(err)));
        if (!strstr(err, t[i].says))
            g_error("field at %zu = %" G_GUINT64_FORMAT ": '%s'", t[i].off, t[i].v, err);
        fake_free(d);
    }
}

/* the fake refuses what a real device refuses, so the tests above can fail */
static void test_fake_enforces_rules(void)
{
    Fake *d = fake_new(0, 1);
    uint8_t *buf = abuf(8);
    uint64_t clba = d->g.clba;

    d->quiet = 1;
    memset(buf, 7, 8 * SS);
    g_assert_cmpint(mem_dev_ops.write(d, 4, 4, buf), !=, 0);        /* not at the WP */
    g_assert_cmpint(mem_dev_ops.write(d, 0, 2, buf), !=, 0);        /* not WS_MIN */
    g_assert_cmpint(mem_dev_ops.write(d, 0, 4, buf), ==, 0);
    g_assert_cmpint(mem_dev_ops.read(d, 0, 4, buf), ==, 0);
    g_assert_cmpint(mem_dev_ops.read(d, 4, 1, buf), !=, 0);         /* above the WP */
    g_assert_cmpint(mem_dev_ops.reset(d, 0), !=, 0);                /* open */
    g_assert_cmpint(mem_dev_ops.reset(d, 1), !=, 0);                /* free */
    g_assert_cmpint(mem_dev_ops.write(d, clba, 4, buf), !=, 0);     /* 2nd open chunk on PU 0 */
    g_assert_cmpint(mem_dev_ops.write(d, d->g.num_chk * clba, 4, buf), ==, 0); /* PU 1 */
    g_assert_cmpuint(d->violations, ==, 6);
    free(buf);
    fake_free(d);
}

/* bounds are refused, not written */
static void test_bounds(void)
{
    Fake *d = fake_new(0, 0);
    uint8_t *buf = abuf(2);
    struct ftl *f;
    uint64_t n;

    must_format(d, 20);
    f = must_open(d);
    n = ftl_logical_sectors(f);
    memset(buf, 1, 2 * SS);
    g_assert_cmpint(ftl_write(f, n - 1, 2, buf), <, 0);
    g_assert_cmpint(ftl_read(f, n, 1, buf), <, 0);
    g_assert_cmpint(ftl_trim(f, n - 1, 2), <, 0);
    g_assert_cmpint(ftl_write(f, n - 1, 1, buf), ==, 0);
    /* a buffered sector reads back before it reaches the device */
    memset(buf, 0, SS);
    g_assert_cmpint(ftl_read(f, n - 1, 1, buf), ==, 0);
    g_assert_cmpint(buf[0], ==, 1);
    must_close(f);
    free(buf);
    fake_free(d);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/hostftl/fake-enforces-rules", test_fake_enforces_rules);
    g_test_add_func("/hostftl/unformatted", test_unformatted);
    g_test_add_func("/hostftl/op-too-small", test_op_too_small);
    g_test_add_func("/hostftl/bounds", test_bounds);
    g_test_add_func("/hostftl/unclean-stop", test_unclean_stop);
    g_test_add_func("/hostftl/crafted-checkpoint", test_crafted_checkpoint);
    g_test_add_func("/hostftl/random/op10", test_random_op10);
    g_test_add_func("/hostftl/random/op30-open-limits", test_random_op30_limits);
    g_test_add_func("/hostftl/random/waf-falls-with-op", test_waf_falls_with_op);
    return g_test_run();
}
