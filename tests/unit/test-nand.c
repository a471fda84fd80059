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

/* ---- back-filling: the study's analytic gap cases (1 channel; tR 40, tPROG 200, xfer 10 us) ---- */

static uint64_t op_at(NandModel *m, NandOp op, uint32_t lun, uint64_t at)
{
    NandAddr a = { .lun = lun };
    return nand_op(m, op, &a, at);
}

/* G1: an erase and a program queued on chip 0 leave the bus to chip 1's read. */
static void test_gap_g1(void)
{
    NandModel *m = model(geo(1, 2), slc());
    op_at(m, NAND_OP_ERASE, 0, 0);
    g_assert_cmpuint(op_at(m, NAND_OP_PROGRAM, 0, 0), ==, 2210 * US);  /* after the erase */
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 1, 0), ==, 50 * US);       /* FIFO: 2020 */
    g_assert_cmpuint(m->stats.gap_fills, ==, 1);        /* its data-out, before the data-in */
    nand_model_free(m);
}

/* G2: chip 1's data-out takes the channel gap [50, 90) between chip 0's two data-outs. */
static void test_gap_g2(void)
{
    NandModel *m = model(geo(1, 2), slc());
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 0, 0), ==, 50 * US);
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 0, 0), ==, 100 * US);
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 1, 0), ==, 60 * US);       /* FIFO: 110 */
    nand_model_free(m);
}

/* G3: a gap too small (5 us) is skipped; the next one that fits is taken. */
static void test_gap_g3(void)
{
    NandModel *m = model(geo(1, 4), slc());
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 0, 0), ==, 50 * US);
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 1, 15 * US), ==, 65 * US);
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 2, 60 * US), ==, 110 * US);
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 3, 0), ==, 75 * US);       /* FIFO: 120 */
    nand_model_free(m);
}

/* G4: a program booked ahead: a read before it runs at once, one that would overlap waits. */
static void test_gap_g4(void)
{
    NandModel *m = model(geo(1, 1), slc());
    g_assert_cmpuint(op_at(m, NAND_OP_PROGRAM, 0, 1000 * US), ==, 1210 * US);
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 0, 0), ==, 50 * US);       /* FIFO: 1260 */
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 0, 980 * US), ==, 1260 * US);
    g_assert_cmpuint(m->stats.gap_fills, ==, 1);
    g_assert_cmpuint(m->stats.read_overtakes, ==, 1);
    nand_model_free(m);
}

/*
 * G5: a chip gap with no channel gap tR into it: the read must hold the chip until its
 * data-out, so it moves past the program.
 */
static void test_gap_g5(void)
{
    NandModel *m = model(geo(1, 8), slc());
    op_at(m, NAND_OP_PROGRAM, 0, 100 * US);
    for (uint32_t lun = 1; lun <= 6; lun++) {
        g_assert_cmpuint(op_at(m, NAND_OP_READ, lun, 0), ==, (40 + 10 * lun) * US);
    }
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 0, 0), ==, 360 * US);
    nand_model_free(m);
}

/* Programs and erases of a chip start in booking order even where a gap would fit them. */
static void test_pe_in_booking_order(void)
{
    NandModel *m = model(geo(1, 1), slc());
    g_assert_cmpuint(op_at(m, NAND_OP_PROGRAM, 0, 1000 * US), ==, 1210 * US);
    g_assert_cmpuint(op_at(m, NAND_OP_PROGRAM, 0, 0), ==, 1420 * US);
    g_assert_cmpuint(op_at(m, NAND_OP_ERASE, 0, 0), ==, 3420 * US);
    /* a read still fits before them all */
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 0, 0), ==, 50 * US);
    nand_model_free(m);
}

/*
 * 8 channels x 4 chips, 64 TLC reads per chip, all arriving at 0: booked chip by chip or
 * round-robin, the makespan is the same, 64 x (tR + xfer) (FIFO: 4x that, chip by chip).
 */
static void test_order_insensitive(void)
{
    NandTiming t = { .cell_bits = 3, .pg_rd_lat = { 50 * US, 65 * US, 80 * US },
                     .pg_wr_lat = { 400 * US, 700 * US, 1000 * US }, .blk_er_lat = 3000 * US,
                     .ch_xfer_lat = 5 * US, .time_scale = 1 };
    uint64_t span[2] = { 0, 0 }, bound = 0;

    for (uint32_t pg = 0; pg < 64; pg++) {
        bound += t.pg_rd_lat[pg % 3] + 5 * US;
    }
    for (int order = 0; order < 2; order++) {
        NandModel *m = model(geo(8, 4), t);
        for (uint32_t i = 0; i < 32 * 64; i++) {
            uint32_t chip = order ? i % 32 : i / 64, pg = order ? i / 32 : i % 64;
            NandAddr a = { .ch = chip / 4, .lun = chip % 4, .pg = pg };
            uint64_t done = nand_op(m, NAND_OP_READ, &a, 0);  /* MAX() evaluates twice */
            span[order] = MAX(span[order], done);
        }
        nand_model_free(m);
    }
    g_assert_cmpuint(span[0], <=, bound + bound / 100);
    g_assert_cmpuint(span[1], <=, bound + bound / 100);
}

/* nand_probe answers what nand_op will, and books nothing. */
static void test_probe_books_nothing(void)
{
    NandModel *m = model(geo(1, 2), slc());
    NandAddr a = { .lun = 1 };
    op_at(m, NAND_OP_PROGRAM, 0, 0);
    uint64_t p = nand_probe(m, NAND_OP_READ, &a, 0);
    g_assert_cmpuint(nand_probe(m, NAND_OP_READ, &a, 0), ==, p);
    g_assert_cmpuint(m->stats.reads, ==, 0);
    g_assert_cmpuint(nand_op(m, NAND_OP_READ, &a, 0), ==, p);
    g_assert_cmpuint(nand_probe(m, NAND_OP_READ, &a, 0), >, p);
    nand_model_clear(m);
    g_assert_cmpuint(nand_all_idle_ns(m), ==, 0);
    g_assert_cmpuint(nand_op(m, NAND_OP_READ, &a, 0), ==, 50 * US);
    nand_model_free(m);
}

/* ---- a brute-force reference of the same rules: sorted lists scanned from the start ---- */

typedef struct RefTl {
    GArray *iv;         /* uint64_t pairs [s, e), sorted, disjoint, touching ones merged */
    uint64_t busy_until;
} RefTl;

#define IV_S(t, i) g_array_index((t)->iv, uint64_t, 2 * (i))
#define IV_E(t, i) g_array_index((t)->iv, uint64_t, 2 * (i) + 1)
#define IV_N(t) ((t)->iv->len / 2)

static uint64_t ref_fit(const RefTl *t, uint64_t x, uint64_t d)
{
    if (d == 0) {
        return x;
    }
    for (guint i = 0; i < IV_N(t); i++) {
        if (IV_E(t, i) <= x) {
            continue;
        }
        if (IV_S(t, i) >= x + d) {
            break;
        }
        x = IV_E(t, i);
    }
    return x;
}

static bool ref_free(const RefTl *t, uint64_t s, uint64_t e, uint64_t *end)
{
    for (guint i = 0; i < IV_N(t) && s < e; i++) {
        if (IV_E(t, i) > s && IV_S(t, i) < e) {
            *end = IV_E(t, i);
            return false;
        }
    }
    return true;
}

static void ref_book(RefTl *t, uint64_t s, uint64_t e)
{
    guint i = 0;
    uint64_t end;

    if (e <= s) {
        return;
    }
    g_assert_true(ref_free(t, s, e, &end));     /* no booking over another */
    while (i < IV_N(t) && IV_S(t, i) < s) {
        i++;
    }
    if (i > 0 && IV_E(t, i - 1) == s) {
        IV_E(t, i - 1) = e;
        if (i < IV_N(t) && IV_S(t, i) == e) {
            IV_E(t, i - 1) = IV_E(t, i);
            g_array_remove_range(t->iv, 2 * i, 2);
        }
    } else if (i < IV_N(t) && IV_S(t, i) == e) {
        IV_S(t, i) = s;
    } else {
        uint64_t pair[2] = { s, e };
        g_array_insert_vals(t->iv, 2 * i, pair, 2);
    }
    t->busy_until = MAX(t->busy_until, e);
}

static void ref_retire(RefTl *t, uint64_t h)
{
    guint n = 0;
    while (n < IV_N(t) && IV_E(t, n) <= h) {
        n++;
    }
    g_array_remove_range(t->iv, 0, 2 * n);
}

typedef struct RefModel {
    const NandModel *shape;     /* geometry and timing only */
    RefTl *ch, *chip;
    uint64_t *fence;
    uint64_t *read_end;     /* the latest end of each chip's reads: erases start after it */
} RefModel;

static RefModel *ref_new(const NandModel *shape)
{
    RefModel *r = g_new0(RefModel, 1);
    uint64_t luns = nand_luns(&shape->geo);
    r->shape = shape;
    r->ch = g_new0(RefTl, shape->geo.nchs);
    r->chip = g_new0(RefTl, luns);
    r->fence = g_new0(uint64_t, luns);
    r->read_end = g_new0(uint64_t, luns);
    for (uint32_t i = 0; i < shape->geo.nchs; i++) {
        r->ch[i].iv = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    }
    for (uint64_t i = 0; i < luns; i++) {
        r->chip[i].iv = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    }
    return r;
}

static void ref_free_model(RefModel *r)
{
    for (uint32_t i = 0; i < r->shape->geo.nchs; i++) {
        g_array_free(r->ch[i].iv, TRUE);
    }
    for (uint64_t i = 0; i < nand_luns(&r->shape->geo); i++) {
        g_array_free(r->chip[i].iv, TRUE);
    }
    g_free(r->ch);
    g_free(r->chip);
    g_free(r->fence);
    g_free(r->read_end);
    g_free(r);
}

/* The rules of nand.h, written plainly (the try limit of 8 included). */
static uint64_t ref_op(RefModel *r, NandOp op, const NandAddr *a, uint64_t at)
{
    const NandModel *m = r->shape;
    uint32_t lun = nand_lun_index(m, a), type = nand_page_type(m, a->pg);
    RefTl *chip = &r->chip[lun], *ch = &r->ch[a->ch];
    uint64_t x = m->xfer_ns, s, o, end;

    if (op == NAND_OP_READ) {
        uint64_t tr = m->tm.pg_rd_lat[type];
        s = ref_fit(chip, at, tr + x);
        for (int tries = 1;; tries++) {
            o = ref_fit(ch, s + tr, x);
            if (ref_free(chip, s, o + x, &end)) {
                break;
            }
            s = tries < 8 ? ref_fit(chip, end, tr + x) : MAX(end, chip->busy_until);
        }
        ref_book(chip, s, o + x);
        ref_book(ch, o, o + x);
        r->read_end[lun] = MAX(r->read_end[lun], o + x);
        return o + x;
    }
    if (op == NAND_OP_PROGRAM) {
        uint64_t tp = m->tm.pg_wr_lat[type];
        o = MAX(at, r->fence[lun]);
        for (int tries = 1;; tries++) {
            o = ref_fit(chip, o, x + tp);
            s = ref_fit(ch, o, x);
            if (s == o) {
                break;
            }
            o = tries < 8 ? s : MAX(s, MAX(chip->busy_until, ch->busy_until));
        }
        ref_book(chip, o, o + x + tp);
        ref_book(ch, o, o + x);
        return r->fence[lun] = o + x + tp;
    }
    s = ref_fit(chip, MAX(MAX(at, r->fence[lun]), r->read_end[lun]), m->tm.blk_er_lat);
    ref_book(chip, s, s + m->tm.blk_er_lat);
    return r->fence[lun] = s + m->tm.blk_er_lat;
}

/* The model's first rule, as it was: one free time per resource. */
static uint64_t fifo_op(uint64_t *ch_free, uint64_t *lun_free, const NandModel *m, NandOp op,
                        const NandAddr *a, uint64_t at)
{
    uint32_t lun = nand_lun_index(m, a), type = nand_page_type(m, a->pg);
    uint64_t *chip = &lun_free[lun], *chan = &ch_free[a->ch], start, done;

    if (op == NAND_OP_READ) {
        start = MAX(at, *chip);
        done = MAX(start + m->tm.pg_rd_lat[type], *chan) + m->xfer_ns;
        *chan = *chip = done;
    } else if (op == NAND_OP_PROGRAM) {
        start = MAX(at, MAX(*chan, *chip));
        *chan = start + m->xfer_ns;
        done = *chip = *chan + m->tm.pg_wr_lat[type];
    } else {
        done = *chip = MAX(at, *chip) + m->tm.blk_er_lat;
    }
    return done;
}

/* A random operation at `at`; reads dominate, some bookings far ahead (GC, buffers). */
static NandOp random_op(GRand *g, const NandModel *m, NandAddr *a, uint64_t *at)
{
    *a = (NandAddr){ .ch = g_rand_int_range(g, 0, m->geo.nchs),
                     .lun = g_rand_int_range(g, 0, m->geo.luns_per_ch),
                     .pg = g_rand_int_range(g, 0, 64) };
    if (g_rand_int_range(g, 0, 20) == 0) {
        *at += g_rand_int_range(g, 0, 3000 * US);          /* booked ahead */
    }
    int k = g_rand_int_range(g, 0, 100);
    return k < 65 ? NAND_OP_READ : k < 97 ? NAND_OP_PROGRAM : NAND_OP_ERASE;
}

static uint64_t collect_after;

/* The intervals ending after collect_after. */
/* The next operation: `now` moves on by up to max_step, the model retires there. */
static NandOp next_op(GRand *g, NandModel *m, uint64_t max_step, uint64_t *now, NandAddr *a,
                      uint64_t *at)
{
    *now += g_rand_int_range(g, 0, max_step);
    *at = *now;
    nand_retire(m, *now);
    return random_op(g, m, a, at);
}

static bool collect(uint64_t s, uint64_t e, void *opaque)
{
    GArray *a = opaque;
    g_assert_cmpuint(s, <, e);
    if (e <= collect_after) {
        return true;
    }
    if (a->len) {
        /* sorted, disjoint, touching ones merged */
        g_assert_cmpuint(g_array_index(a, uint64_t, a->len - 1), <, s);
    }
    g_array_append_val(a, s);
    g_array_append_val(a, e);
    return true;
}

/*
 * 10^5 random operations, some booked far ahead, on the model (with and without retiring
 * at each arrival) and on the brute-force reference: the same completions, the same
 * intervals, no overlap (ref_book checks); the P/E of each chip in booking order.
 */
static void test_against_reference(void)
{
    NandTiming t = { .cell_bits = 3, .pg_rd_lat = { 50 * US, 65 * US, 80 * US },
                     .pg_wr_lat = { 400 * US, 700 * US, 1000 * US }, .blk_er_lat = 3000 * US,
                     .ch_xfer_lat = 8 * US, .time_scale = 1 };
    NandModel *m = model(geo(2, 4), t), *keep = model(geo(2, 4), t);
    RefModel *r = ref_new(m);
    GRand *g = g_rand_new_with_seed(42);
    uint64_t now = 0, last_pe[8] = { 0 };

    for (int i = 0; i < 100000; i++) {
        NandAddr a;
        uint64_t at;
        /* chips about half busy: an operation holds one 360 us on average */
        NandOp op = next_op(g, m, 180 * US, &now, &a, &at);
        for (uint32_t k = 0; k < 8; k++) {
            ref_retire(&r->chip[k], now);
            ref_retire(&r->ch[k % 2], now);
        }
        uint64_t want = ref_op(r, op, &a, at);
        uint64_t got = nand_op(m, op, &a, at);
        g_assert_cmpuint(got, ==, want);
        g_assert_cmpuint(nand_op(keep, op, &a, at), ==, want);
        g_assert_cmpuint(got, >, at);
        if (op != NAND_OP_READ) {
            /* P/E in booking order: each ends after the previous one of its chip */
            uint32_t lun = nand_lun_index(m, &a);
            g_assert_cmpuint(got, >, last_pe[lun]);
            last_pe[lun] = got;
        }
    }
    /* the model keeps what the reference keeps, past the last arrival */
    collect_after = now;
    for (uint64_t c = 0; c < nand_luns(&m->geo); c++) {
        GArray *iv = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        tl_foreach(&m->chip[c], collect, iv);
        g_assert_cmpuint(iv->len, ==, r->chip[c].iv->len);
        g_assert_cmpmem(iv->data, iv->len * 8, r->chip[c].iv->data, iv->len * 8);
        g_array_free(iv, TRUE);
        /* retiring bounds what is kept to what is in flight */
        g_assert_cmpuint(tl_intervals(&m->chip[c]) * 10, <, tl_intervals(&keep->chip[c]));
        g_assert_cmpuint(m->chip[c].early, ==, 0);
    }
    g_assert_cmpuint(m->stats.gap_fills, >, 1000);
    g_assert_cmpuint(m->stats.read_overtakes, >, 100);
    g_test_message("%" G_GUINT64_FORMAT " gap fills, %" G_GUINT64_FORMAT " read overtakes; "
                   "%u intervals kept on chip 0 with retiring, %u without; last arrival %"
                   G_GUINT64_FORMAT " us, all idle at %" G_GUINT64_FORMAT " us",
                   m->stats.gap_fills, m->stats.read_overtakes, tl_intervals(&m->chip[0]),
                   tl_intervals(&keep->chip[0]), (uint64_t)(now / US),
                   (uint64_t)(nand_all_idle_ns(m) / US));
    ref_free_model(r);
    nand_model_free(m);
    nand_model_free(keep);
    g_rand_free(g);
}

/* nand_sched=fifo gives the model's first rule, completion for completion. */
static void test_fifo_is_the_first_rule(void)
{
    NandTiming t = { .cell_bits = 3, .pg_rd_lat = { 50 * US, 65 * US, 80 * US },
                     .pg_wr_lat = { 400 * US, 700 * US, 1000 * US }, .blk_er_lat = 3000 * US,
                     .ch_mts = 800, .ch_width_bytes = 1, .time_scale = 1,
                     .sched = NAND_SCHED_FIFO };
    for (int free_bus = 0; free_bus < 2; free_bus++) {
        if (free_bus) {
            t.ch_mts = 0;           /* a channel that costs nothing still orders, as before */
        }
        NandModel *m = model(geo(2, 4), t);
        uint64_t ch_free[2] = { 0 }, lun_free[8] = { 0 }, now = 0;
        GRand *g = g_rand_new_with_seed(7);
        for (int i = 0; i < 100000; i++) {
            NandAddr a;
            uint64_t at;
            NandOp op = next_op(g, m, 12 * US, &now, &a, &at);
            g_assert_cmpuint(nand_op(m, op, &a, at), ==,
                             fifo_op(ch_free, lun_free, m, op, &a, at));
        }
        g_assert_cmpuint(m->stats.gap_fills, ==, 0);
        g_rand_free(g);
        nand_model_free(m);
    }
}

/* A copy is independent and books as the original would. */
static void test_copy_is_independent(void)
{
    NandModel *m = model(geo(1, 2), slc());
    op_at(m, NAND_OP_PROGRAM, 0, 1000 * US);
    NandModel *c = nand_model_copy(m);
    g_assert_cmpuint(op_at(c, NAND_OP_READ, 0, 0), ==, 50 * US);
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 0, 0), ==, 50 * US);
    g_assert_cmpuint(op_at(c, NAND_OP_READ, 0, 0), ==, 100 * US);
    nand_model_free(c);
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 0, 0), ==, 100 * US);
    nand_model_free(m);
}

/* Two planes at once: one array operation, a transfer per plane (tR 40, tPROG 200, x 10). */
static void test_multiplane_times(void)
{
    NandGeometry g = geo(1, 2);
    g.pls_per_lun = 2;
    NandModel *m = model(g, slc());
    NandAddr a = { .lun = 0 }, b = { .lun = 1 };

    /* data-in, data-in, one tPROG: 2x + tPROG, not 2 (x + tPROG) */
    g_assert_cmpuint(nand_op_planes(m, NAND_OP_PROGRAM, &a, 3, 0), ==, 220 * US);
    /* sense both, send both out: tR + 2x */
    g_assert_cmpuint(nand_op_planes(m, NAND_OP_READ, &b, 3, 0), ==, 60 * US);
    /* both blocks erased at once: tBERS */
    g_assert_cmpuint(nand_op_planes(m, NAND_OP_ERASE, &b, 3, 0), ==, 2060 * US);
    /* planes the chip lacks are ignored; none: one plane */
    g_assert_cmpuint(nand_op_planes(m, NAND_OP_PROGRAM, &a, 0x6, 220 * US), ==, 430 * US);
    g_assert_cmpuint(nand_op_planes(m, NAND_OP_PROGRAM, &a, 0, 430 * US), ==, 640 * US);
    g_assert_cmpuint(m->stats.programs, ==, 4);
    g_assert_cmpuint(m->stats.reads, ==, 2);
    g_assert_cmpuint(m->stats.erases, ==, 2);
    g_assert_cmpuint(m->stats.multiplane_ops, ==, 3);
    nand_model_free(m);
}

/* A multi-plane read's data-outs each take the first channel gap: around another's. */
static void test_multiplane_transfers_fill_gaps(void)
{
    NandGeometry g = geo(1, 2);
    g.pls_per_lun = 2;
    NandModel *m = model(g, slc());
    NandAddr a = { .lun = 0 };

    /* chip 1's data-out at [50, 60) */
    g_assert_cmpuint(op_at(m, NAND_OP_READ, 1, 10 * US), ==, 60 * US);
    /* chip 0: tR to 40, outs at [40, 50) and, past chip 1's, [60, 70) */
    g_assert_cmpuint(nand_op_planes(m, NAND_OP_READ, &a, 3, 0), ==, 70 * US);
    nand_model_free(m);
}

/* ---- options (tR 40, tPROG 200, tBERS 2000, xfer 10 us) ---- */

static uint64_t req_at(NandModel *m, NandOp op, uint32_t lun, uint32_t blk, uint32_t planes,
                       uint32_t bytes, uint64_t at)
{
    NandReq r = { .op = op, .addr = { .lun = lun, .blk = blk }, .plane_mask = planes,
                  .bytes = bytes };
    uint64_t probed = nand_probe_req(m, &r, at), done = nand_submit(m, &r, at);

    g_assert_cmpuint(probed, ==, done);
    return done;
}

/* Command cycles (2 us a plane) before, a status read (1 us) after, on the channel. */
static void test_cmd_and_status_cycles(void)
{
    NandTiming t = slc();
    NandGeometry g = geo(1, 4);
    t.cmd_ns = 2 * US;
    t.status_ns = 1 * US;
    g.pls_per_lun = 2;
    NandModel *m = model(g, t);

    /* cmd [0,2), tR to 42, status + data [42,53) */
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 0), ==, 53 * US);
    /* cmd + data [100,112), tPROG to 312, status to 313 */
    g_assert_cmpuint(req_at(m, NAND_OP_PROGRAM, 1, 0, 0, 0, 100 * US), ==, 313 * US);
    /* cmd [1000,1002), tBERS to 3002, status to 3003 */
    g_assert_cmpuint(req_at(m, NAND_OP_ERASE, 2, 0, 0, 0, 1000 * US), ==, 3003 * US);
    g_assert_cmpuint(m->stats.ch_busy_ns[0], ==, (13 + 13 + 3) * US);
    /* two planes: both addresses (4 us), one tR, two status + data pieces */
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 3, 0, 3, 0, 4000 * US), ==, 4066 * US);
    nand_model_free(m);
}

/* Cache read: the next tR runs while the page before goes out; n tR + x, not n (tR + x). */
static void test_cache_read(void)
{
    NandTiming t = slc();
    NandModel *plain = model(geo(1, 1), t);
    t.cache_ops = true;
    NandModel *m = model(geo(1, 1), t);

    for (uint64_t i = 1; i <= 4; i++) {
        g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 0), ==, (40 * i + 10) * US);
        g_assert_cmpuint(req_at(plain, NAND_OP_READ, 0, 0, 0, 0, 0), ==, 50 * i * US);
    }
    /* the register holds each page until it is out: a busy channel delays the next tR's
     * data, never two pages in the register at once */
    g_assert_cmpuint(nand_chip_busy_until(m, 0), ==, 170 * US);
    nand_model_free(m);
    nand_model_free(plain);
}

/* Cache program: the next page's data-in overlaps tPROG; x + n tPROG, not n (x + tPROG). */
static void test_cache_program(void)
{
    NandTiming t = slc();
    t.cache_ops = true;
    NandModel *m = model(geo(1, 1), t);

    g_assert_cmpuint(req_at(m, NAND_OP_PROGRAM, 0, 0, 0, 0, 0), ==, 210 * US);
    g_assert_cmpuint(req_at(m, NAND_OP_PROGRAM, 0, 0, 0, 0, 0), ==, 410 * US);
    g_assert_cmpuint(req_at(m, NAND_OP_PROGRAM, 0, 0, 0, 0, 0), ==, 610 * US);
    /* a read waits for the array: the programs hold it to 610 */
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 50 * US), ==, 660 * US);
    /* an erase after them all, in booking order, and after the read's data-out (660) */
    g_assert_cmpuint(req_at(m, NAND_OP_ERASE, 0, 0, 0, 0, 0), ==, 2660 * US);
    nand_model_free(m);
}

/* Partial-page reads move the bytes asked: a quarter page, a quarter of the transfer. */
static void test_partial_transfer(void)
{
    NandTiming t = slc();
    NandModel *whole = model(geo(1, 1), t);
    t.partial_xfer = true;
    NandModel *m = model(geo(1, 1), t);

    g_assert_cmpuint(req_at(whole, NAND_OP_READ, 0, 0, 0, 1024, 0), ==, 50 * US);
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 1024, 0), ==, 42500);
    /* 0 or more than the page: the whole page; programs always move the page */
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 100 * US), ==, 150 * US);
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 8192, 200 * US), ==, 250 * US);
    g_assert_cmpuint(req_at(m, NAND_OP_PROGRAM, 0, 0, 0, 1024, 300 * US), ==, 510 * US);
    nand_model_free(m);
    nand_model_free(whole);
}

/* Read retry: one more tR every retry_pe P/E cycles of the block, at most retry_max. */
static void test_read_retry_from_wear(void)
{
    NandTiming t = slc();
    NandGeometry g = geo(1, 1);
    uint64_t now = 0;
    t.retry_pe = 10;
    t.retry_max = 3;
    g.pls_per_lun = 2;
    NandModel *m = model(g, t);
    NandAddr b0 = { .blk = 0 }, b1 = { .blk = 1 };

    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 0), ==, 50 * US);
    for (int i = 0; i < 10; i++) {
        now = req_at(m, NAND_OP_ERASE, 0, 0, 0, 0, now);
    }
    g_assert_cmpuint(nand_block_wear(m, &b0), ==, 10);
    g_assert_cmpuint(nand_block_wear(m, &b1), ==, 0);
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, now), ==, now + 90 * US);
    now += 90 * US;
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 1, 0, 0, now), ==, now + 50 * US);
    now += 50 * US;
    /* a two-plane read pays for its most worn block (plane 1's block 0: no erase yet) */
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 3, 0, now), ==, now + 100 * US);
    now += 100 * US;
    for (int i = 0; i < 40; i++) {
        now = req_at(m, NAND_OP_ERASE, 0, 0, 0, 0, now);
    }
    /* 50 cycles: 5 retries wanted, 3 allowed */
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, now), ==, now + 170 * US);
    g_assert_cmpuint(m->stats.read_retries, ==, 1 + 1 + 3);
    nand_model_free(m);

    /* an aged drive: every block starts with base_pe cycles */
    t.base_pe = 25;
    m = model(g, t);
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 7, 0, 0, 0), ==, 130 * US);
    /* wear an FTL saved, set back: the reads pay for it as for erases seen */
    nand_set_block_wear(m, &(NandAddr){ .blk = 7, .pl = 1 }, 15);
    g_assert_cmpuint(nand_block_wear(m, &(NandAddr){ .blk = 7, .pl = 1 }), ==, 40);
    g_assert_cmpuint(nand_block_wear(m, &(NandAddr){ .blk = 7 }), ==, 25);
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 7, 2, 0, 1000 * US), ==, 1170 * US);
    nand_set_block_wear(m, &(NandAddr){ .blk = g.blks_per_pl }, 99);     /* outside: ignored */
    nand_model_free(m);
    /* without read retry the model keeps no wear: nothing to set */
    t.retry_pe = 0;
    m = model(g, t);
    nand_set_block_wear(m, &b0, 5);
    g_assert_cmpuint(nand_block_wear(m, &b0), ==, 0);
    nand_model_free(m);
}

static bool two_ends(uint64_t s, uint64_t e, void *opaque)
{
    uint64_t **p = opaque;

    *(*p)++ = s;
    *(*p)++ = e;
    return true;
}

/*
 * Split transfers: the channel is busy [40,50) and [55,65); chip 2's data-out (10 us, from
 * 40) goes whole at [65,75), or in two parts of at least 5 us, [50,55) and [65,70).
 */
static void test_split_transfer(void)
{
    for (uint32_t k = 1; k <= 3; k++) {
        NandTiming t = slc();
        t.xfer_split = k;
        NandModel *m = model(geo(1, 3), t);
        g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 0), ==, 50 * US);
        g_assert_cmpuint(req_at(m, NAND_OP_READ, 1, 0, 0, 0, 15 * US), ==, 65 * US);
        /* k = 3: parts of 4 us at least: [50,55) then [65,70) all the same */
        g_assert_cmpuint(req_at(m, NAND_OP_READ, 2, 0, 0, 0, 0), ==, (k > 1 ? 70 : 75) * US);
        g_assert_cmpuint(m->stats.ch_busy_ns[0], ==, 30 * US);
        /* the parts are booked: the channel is busy [40,70) in one piece, else with a gap */
        uint64_t iv[8], *p = iv;
        tl_foreach(&m->ch[0], two_ends, &p);
        if (k > 1) {
            g_assert_cmpuint(p - iv, ==, 2);
            g_assert_cmpuint(iv[0], ==, 40 * US);
            g_assert_cmpuint(iv[1], ==, 70 * US);
        } else {
            g_assert_cmpuint(p - iv, ==, 4);
            g_assert_cmpuint(iv[1], ==, 50 * US);
            g_assert_cmpuint(iv[2], ==, 55 * US);
        }
        nand_model_free(m);
    }
    /* a gap smaller than the least part is left alone: parts of 10/2 = 5 us, gap 4 us */
    NandTiming t = slc();
    t.xfer_split = 2;
    NandModel *m = model(geo(1, 3), t);
    req_at(m, NAND_OP_READ, 0, 0, 0, 0, 0);                          /* [40,50) */
    req_at(m, NAND_OP_READ, 1, 0, 0, 0, 14 * US);                    /* [54,64) */
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 2, 0, 0, 0, 0), ==, 74 * US);
    nand_model_free(m);
}

/*
 * The study's channel-bound case: 1 channel x 8 chips, tR 10 us, transfer 20 us, 64 reads
 * per chip at 0 booked chip by chip. Whole transfers leave the bus idle in gaps shorter than
 * a transfer (about 2/3 of the bus bound); split into parts they fill them (>= 0.95).
 */
static void test_split_channel_bound(void)
{
    double eff[2];

    for (int split = 0; split < 2; split++) {
        NandTiming t = { .cell_bits = 1, .pg_rd_lat = { 10 * US }, .pg_wr_lat = { 200 * US },
                         .blk_er_lat = 2000 * US, .ch_xfer_lat = 20 * US, .time_scale = 1,
                         .xfer_split = split ? 4 : 1 };
        NandModel *m = model(geo(1, 8), t);
        uint64_t span = 0;
        for (uint32_t lun = 0; lun < 8; lun++) {
            for (int i = 0; i < 64; i++) {
                uint64_t done = req_at(m, NAND_OP_READ, lun, 0, 0, 0, 0);
                span = MAX(span, done);
            }
        }
        eff[split] = (double)(8 * 64 * 20 * US) / span;
        nand_model_free(m);
    }
    g_test_message("bus use: whole transfers %.2f, split %.2f", eff[0], eff[1]);
    g_assert_cmpfloat(eff[0], <, 0.8);
    g_assert_cmpfloat(eff[1], >=, 0.95);
}

static NandTiming suspending(uint32_t what)
{
    NandTiming t = slc();
    t.suspend = what;
    t.suspend_ns = 20 * US;
    t.resume_ns = 30 * US;
    t.suspend_max = 1;
    return t;
}

/*
 * Suspend: a read during an erase senses 20 us after it arrives; the erase ends later by
 * what the read took plus the resume time (500 -> 570, + 30 = 100 us).
 */
static void test_suspend_erase(void)
{
    NandModel *m = model(geo(1, 1), suspending(NAND_SUSPEND_ERASE));

    g_assert_cmpuint(req_at(m, NAND_OP_ERASE, 0, 0, 0, 0, 0), ==, 2000 * US);
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 500 * US), ==, 570 * US);
    g_assert_cmpuint(nand_chip_busy_until(m, 0), ==, 2100 * US);
    g_assert_cmpuint(m->stats.suspends, ==, 1);
    /* suspend_max = 1: the next read waits for the erase */
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 600 * US), ==, 2150 * US);
    /* programs keep their order after the (moved) erase */
    g_assert_cmpuint(req_at(m, NAND_OP_PROGRAM, 0, 0, 0, 0, 0), ==, 2360 * US);
    g_assert_cmpuint(m->stats.suspends, ==, 1);
    nand_model_free(m);

    /* erases not suspendable: the read waits */
    m = model(geo(1, 1), suspending(NAND_SUSPEND_PROGRAM));
    req_at(m, NAND_OP_ERASE, 0, 0, 0, 0, 0);
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 500 * US), ==, 2050 * US);
    g_assert_cmpuint(m->stats.suspends, ==, 0);
    nand_model_free(m);

    /* no idle time after the erase (a program follows at once): nothing may move */
    m = model(geo(1, 1), suspending(NAND_SUSPEND_PROGRAM | NAND_SUSPEND_ERASE));
    req_at(m, NAND_OP_PROGRAM, 0, 0, 0, 0, 0);                 /* [0, 210) */
    req_at(m, NAND_OP_ERASE, 0, 0, 0, 0, 0);                   /* [210, 2210) */
    g_assert_cmpuint(req_at(m, NAND_OP_PROGRAM, 0, 0, 0, 0, 0), ==, 2420 * US);
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 500 * US), ==, 2470 * US);
    g_assert_cmpuint(m->stats.suspends, ==, 0);
    nand_model_free(m);
}

/*
 * An erase never starts before a read of its chip booked earlier ends. A slow channel (a
 * page takes 1 ms out): chips 1 and 2 hold it over [40, 2040) us, chip 0's read booked
 * ahead at 2100 over [2140, 3140). A host read of chip 0's block 3 at 0 finds the chip gap
 * [0, 2100) but no channel gap after its tR in it, so it goes after 3140. GC's erase of
 * the same block, arriving at 0, fits in that gap (2 ms): it must wait for the read
 * instead, with or without cache_ops, on one plane or two.
 */
static void test_erase_after_booked_reads(void)
{
    NandGeometry g = geo(1, 3);
    g.pls_per_lun = 2;

    for (int cache = 0; cache < 2; cache++) {
        for (uint32_t planes = 0; planes <= 3; planes += 3) {
            NandTiming t = slc();
            t.ch_xfer_lat = 1000 * US;
            t.cache_ops = cache;
            NandModel *m = model(g, t);
            req_at(m, NAND_OP_READ, 1, 0, 0, 0, 0);
            req_at(m, NAND_OP_READ, 2, 0, 0, 0, 0);
            req_at(m, NAND_OP_READ, 0, 0, 0, 0, 2100 * US);
            uint64_t read = req_at(m, NAND_OP_READ, 0, 3, 0, 0, 0);
            g_assert_cmpuint(read, >, 3140 * US);       /* it missed the gap */
            uint64_t erase = req_at(m, NAND_OP_ERASE, 0, 3, planes, 0, 0);
            g_test_message("cache_ops %d, planes 0x%x: read ends at %" G_GUINT64_FORMAT
                           " us, the erase starts at %" G_GUINT64_FORMAT " us", cache,
                           planes, (uint64_t)(read / US), (uint64_t)((erase - t.blk_er_lat) / US));
            g_assert_cmpuint(erase - t.blk_er_lat, >=, read);
            nand_model_free(m);
        }
    }
}

/* Suspending a program: during tPROG only (not its data-in), and only if it helps. */
static void test_suspend_program(void)
{
    NandModel *m = model(geo(1, 1), suspending(NAND_SUSPEND_PROGRAM));

    g_assert_cmpuint(req_at(m, NAND_OP_PROGRAM, 0, 0, 0, 0, 0), ==, 210 * US);
    /* tPROG from 10: the read senses at 120, is out at 170; the program ends at 310 */
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 100 * US), ==, 170 * US);
    g_assert_cmpuint(nand_chip_busy_until(m, 0), ==, 310 * US);
    nand_model_free(m);

    m = model(geo(1, 1), suspending(NAND_SUSPEND_PROGRAM));
    req_at(m, NAND_OP_PROGRAM, 0, 0, 0, 0, 0);
    /* 5 us before the end: waiting (215 + 50) beats suspending (205 + 20 + 50) */
    g_assert_cmpuint(req_at(m, NAND_OP_READ, 0, 0, 0, 0, 205 * US), ==, 260 * US);
    g_assert_cmpuint(m->stats.suspends, ==, 0);
    nand_model_free(m);
}

static bool no_overlap(uint64_t s, uint64_t e, void *opaque)
{
    uint64_t *last = opaque;

    g_assert_cmpuint(s, >=, *last);
    g_assert_cmpuint(e, >, s);
    *last = e;
    return true;
}

/*
 * Every option at once, 2 x 10^4 random operations: probe and submit agree, completions
 * follow arrivals, P/E stay in order per chip, intervals never overlap, a copy made half
 * way books the second half as the original does, and the same seed gives the same run.
 */
static uint64_t options_run(uint32_t seed, bool check_copy, NandSched sched)
{
    NandTiming t = slc();
    NandGeometry g = geo(2, 2);
    NandModel *m, *c = NULL;
    GRand *r = g_rand_new_with_seed(seed);
    uint64_t now = 0, sum = 0, last_pe[4] = { 0 };

    g.pls_per_lun = 2;
    t.cmd_ns = 1 * US;
    t.status_ns = 500;
    t.cache_ops = true;
    t.partial_xfer = true;
    t.suspend = NAND_SUSPEND_PROGRAM | NAND_SUSPEND_ERASE;
    t.suspend_ns = 5 * US;
    t.resume_ns = 5 * US;
    t.suspend_max = 3;
    t.retry_pe = 3;
    t.retry_max = 4;
    t.xfer_split = 4;
    t.sched = sched;
    m = model(g, t);
    for (int i = 0; i < 20000; i++) {
        NandReq q = { .op = g_rand_int_range(r, 0, 10) < 6 ? NAND_OP_READ :
                            g_rand_int_range(r, 0, 10) < 9 ? NAND_OP_PROGRAM : NAND_OP_ERASE,
                      .addr = { .ch = g_rand_int_range(r, 0, 2), .lun = g_rand_int_range(r, 0, 2),
                                .pl = g_rand_int_range(r, 0, 2), .blk = g_rand_int_range(r, 0, 16),
                                .pg = g_rand_int_range(r, 0, 64) },
                      .plane_mask = g_rand_int_range(r, 0, 4),
                      .bytes = g_rand_int_range(r, 0, 5) * 1024 };
        uint32_t lun = nand_lun_index(m, &q.addr);
        uint64_t probe, done, cdone = 0;

        now += g_rand_int_range(r, 0, 30) * US;
        if (i == 10000 && check_copy) {
            c = nand_model_copy(m);
        }
        probe = nand_probe_req(m, &q, now);
        if (c) {
            cdone = nand_submit(c, &q, now);
        }
        done = nand_submit(m, &q, now);
        g_assert_cmpuint(probe, ==, done);
        g_assert_cmpuint(done, >, now);
        if (c) {
            g_assert_cmpuint(cdone, ==, done);
        }
        if (q.op != NAND_OP_READ) {
            /* a P/E starts after the one before; suspensions only move ends later */
            g_assert_cmpuint(m->pe[lun].array_at, >=, last_pe[lun]);
            last_pe[lun] = m->pe[lun].fence;
        }
        nand_retire(m, now);
        sum = sum * 31 + done;
    }
    for (uint32_t i = 0; i < 4; i++) {
        uint64_t last = 0;
        tl_foreach(&m->chip[i], no_overlap, &last);
        last = 0;
        tl_foreach(&m->reg[i], no_overlap, &last);
    }
    if (sched == NAND_SCHED_BACKFILL) {
        g_assert_cmpuint(m->stats.suspends, >, 0);
    }
    g_assert_cmpuint(m->stats.read_retries, >, 0);
    nand_model_free(m);
    nand_model_free(c);
    g_rand_free(r);
    return sum;
}

static void test_options_random(void)
{
    g_assert_cmpuint(options_run(7, true, NAND_SCHED_BACKFILL), ==,
                     options_run(7, false, NAND_SCHED_BACKFILL));
    /* the old rule takes the options too */
    g_assert_cmpuint(options_run(8, true, NAND_SCHED_FIFO), ==,
                     options_run(8, false, NAND_SCHED_FIFO));
}

static void test_option_ranges_refused(void)
{
    NandGeometry g = geo(1, 1);
    NandTiming t[6];
    const char *names[6] = { "nand_suspend", "nand_suspend_max", "nand_retry_max",
                             "nand_cmd_ns", "nand_resume_ns", "nand_retry_pe" };

    for (int i = 0; i < 6; i++) {
        t[i] = slc();
    }
    t[0].suspend = 4;
    t[1].suspend = NAND_SUSPEND_ERASE;          /* suspend_max 0 with suspend on */
    t[2].retry_max = 65;
    t[3].cmd_ns = 1000001;
    t[4].resume_ns = 10000001;
    t[5].retry_pe = 10000001;
    for (int i = 0; i < 6; i++) {
        char *err = NULL;
        g_assert_null(nand_model_new(&g, &t[i], &err));
        g_assert_nonnull(strstr(err, names[i]));
        g_free(err);
    }
    /* read retry keeps a counter per block: a bound on that memory */
    NandTiming r = slc();
    NandGeometry big = { 64, 64, 4, 16384, 4, 8, 512 };
    char *err = NULL;
    r.retry_pe = 100;
    g_assert_null(nand_model_new(&big, &r, &err));
    g_assert_nonnull(strstr(err, "nand_retry_pe"));
    g_free(err);
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
    g_test_add_func("/nand/backfill/g1-erase-and-program-leave-the-bus", test_gap_g1);
    g_test_add_func("/nand/backfill/g2-channel-gap", test_gap_g2);
    g_test_add_func("/nand/backfill/g3-small-gap-skipped", test_gap_g3);
    g_test_add_func("/nand/backfill/g4-read-before-a-future-program", test_gap_g4);
    g_test_add_func("/nand/backfill/g5-chip-held-to-data-out", test_gap_g5);
    g_test_add_func("/nand/backfill/pe-in-booking-order", test_pe_in_booking_order);
    g_test_add_func("/nand/backfill/erase-after-booked-reads", test_erase_after_booked_reads);
    g_test_add_func("/nand/backfill/order-insensitive", test_order_insensitive);
    g_test_add_func("/nand/backfill/probe-books-nothing", test_probe_books_nothing);
    g_test_add_func("/nand/backfill/against-reference", test_against_reference);
    g_test_add_func("/nand/backfill/copy-is-independent", test_copy_is_independent);
    g_test_add_func("/nand/fifo/first-rule", test_fifo_is_the_first_rule);
    g_test_add_func("/nand/multiplane/times", test_multiplane_times);
    g_test_add_func("/nand/multiplane/transfers-fill-gaps", test_multiplane_transfers_fill_gaps);
    g_test_add_func("/nand/options/cmd-and-status-cycles", test_cmd_and_status_cycles);
    g_test_add_func("/nand/options/cache-read", test_cache_read);
    g_test_add_func("/nand/options/cache-program", test_cache_program);
    g_test_add_func("/nand/options/partial-transfer", test_partial_transfer);
    g_test_add_func("/nand/options/read-retry-from-wear", test_read_retry_from_wear);
    g_test_add_func("/nand/options/suspend-erase", test_suspend_erase);
    g_test_add_func("/nand/options/suspend-program", test_suspend_program);
    g_test_add_func("/nand/options/split-transfer", test_split_transfer);
    g_test_add_func("/nand/options/split-channel-bound", test_split_channel_bound);
    g_test_add_func("/nand/options/random", test_options_random);
    g_test_add_func("/nand/options/ranges-refused", test_option_ranges_refused);
    return g_test_run();
}
