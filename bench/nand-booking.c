/*
 * What a NAND booking costs: nand_op calls per second of one thread, closed loop.
 *
 *   nand-booking [--ops N] [--qd Q] [--seed S]
 *
 * Three runs, each with the back-filling timelines and with nand_sched=fifo (one free time
 * per resource, the first model's cost: the reference of the ratio):
 *   qdQ:    8 channels x 8 chips, 70 % reads / 30 % programs at random chips, Q in
 *           flight; each completion issues the next operation, retiring at its time;
 *   burst:  the same after 10^5 programs booked ahead on one channel's chips (a GC burst),
 *           the operations that follow arriving before them, so that they search its gaps;
 *   intervals kept per resource at the end (memory follows what is in flight).
 * Prints one line per run: BENCH name=... ops=... ops_per_s=... ratio_to_fifo=...
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "nand/nand.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define US 1000ULL

typedef struct Inflight {
    uint64_t done;
} Inflight;

/* A min-heap of completion times. */
typedef struct Heap {
    uint64_t *v;
    uint32_t n;
} Heap;

static void heap_push(Heap *h, uint64_t t)
{
    uint32_t i = h->n++;
    while (i && h->v[(i - 1) / 2] > t) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = t;
}

static uint64_t heap_pop(Heap *h)
{
    uint64_t top = h->v[0], last = h->v[--h->n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n) {
            break;
        }
        if (c + 1 < h->n && h->v[c + 1] < h->v[c]) {
            c++;
        }
        if (h->v[c] >= last) {
            break;
        }
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) {
        h->v[i] = last;
    }
    return top;
}

static double now_s(void)
{
    struct timespec ts;
    /* CPU time of this thread: the machine is shared, its wall time is not ours */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static NandModel *model(NandSched sched)
{
    NandGeometry g = { .nchs = 8, .luns_per_ch = 8, .pls_per_lun = 1, .blks_per_pl = 256,
                       .pgs_per_blk = 256, .secs_per_pg = 8, .secsz = 512 };
    NandTiming t = { .cell_bits = 3, .pg_rd_lat = { 50 * US, 65 * US, 80 * US },
                     .pg_wr_lat = { 400 * US, 700 * US, 1000 * US }, .blk_er_lat = 3000 * US,
                     .ch_mts = 800, .ch_width_bytes = 1, .time_scale = 1, .sched = sched };
    char *err = NULL;
    NandModel *m = nand_model_new(&g, &t, &err);
    if (!m) {
        fprintf(stderr, "nand-booking: %s\n", err);
        exit(1);
    }
    return m;
}

/* xorshift64*: the harness should cost little beside what it measures */
static uint64_t rnd(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ULL;
}

static void random_addr(uint64_t *r, NandAddr *a, uint32_t nchs)
{
    uint64_t v = rnd(r);
    *a = (NandAddr){ .ch = v % nchs, .lun = (v >> 8) % 8, .blk = (v >> 16) % 256,
                     .pg = (v >> 24) % 256 };
}

/* Books Q operations and then `ops` more, each at the earliest completion; ops/s. */
static uint64_t sim_end;        /* the last arrival of the last closed loop */

static double closed_loop(NandModel *m, uint64_t *r, uint64_t ops, uint32_t qd, uint64_t start)
{
    Heap h = { .v = g_new(uint64_t, qd) };
    double t0;
    uint64_t now = start;

    for (uint32_t i = 0; i < qd; i++) {
        heap_push(&h, start);
    }
    t0 = now_s();
    for (uint64_t i = 0; i < ops; i++) {
        NandAddr a;
        now = heap_pop(&h);
        nand_retire(m, now);
        random_addr(r, &a, m->geo.nchs);
        heap_push(&h, nand_op(m, rnd(r) % 10 < 7 ? NAND_OP_READ : NAND_OP_PROGRAM, &a, now));
    }
    t0 = now_s() - t0;
    sim_end = now;
    g_free(h.v);
    return ops / t0;
}

static uint64_t max_intervals(const NandModel *m)
{
    uint64_t k = 0;
    for (uint32_t i = 0; i < m->geo.nchs; i++) {
        k = MAX(k, tl_intervals(&m->ch[i]));
    }
    for (uint64_t i = 0; i < nand_luns(&m->geo); i++) {
        k = MAX(k, tl_intervals(&m->chip[i]));
    }
    return k;
}

int main(int argc, char **argv)
{
    uint64_t ops = 2000000, seed = 1;
    uint32_t qd = 256;
    double rate[2][2];
    uint64_t kept[2][2], burst_kept = 0, sim[2] = { 0, 0 };

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ops")) {
            ops = strtoull(argv[i + 1], NULL, 10);
        } else if (!strcmp(argv[i], "--qd")) {
            qd = strtoul(argv[i + 1], NULL, 10);
        } else if (!strcmp(argv[i], "--seed")) {
            seed = strtoull(argv[i + 1], NULL, 10);
        } else {
            fprintf(stderr, "nand-booking: unknown option %s (--ops N, --qd Q, --seed S)\n",
                    argv[i]);
            return 2;
        }
    }
    if (!ops || !qd || qd > 65536) {
        fprintf(stderr, "nand-booking: --ops must be > 0 and --qd 1..65536\n");
        return 2;
    }
    for (int s = 0; s < 2; s++) {
        NandSched sched = s ? NAND_SCHED_FIFO : NAND_SCHED_BACKFILL;
        uint64_t r = seed * 0x9e3779b97f4a7c15ULL + 1;
        NandModel *m = model(sched);

        rate[s][0] = closed_loop(m, &r, ops, qd, 0);
        kept[s][0] = max_intervals(m);
        sim[0] = sim_end;
        nand_model_free(m);

        /* a GC burst: 10^5 programs booked ahead on channel 0 (its chips busy ~9 s) */
        m = model(sched);
        for (uint32_t i = 0; i < 100000; i++) {
            NandAddr a = { .lun = i % 8, .blk = i / 8 % 256, .pg = i / 2048 % 256 };
            nand_op(m, NAND_OP_PROGRAM, &a, 100 * US + (uint64_t)i * 20 * US);
        }
        if (!s) {
            burst_kept = max_intervals(m);
        }
        rate[s][1] = closed_loop(m, &r, ops / 20, qd, 0);
        kept[s][1] = max_intervals(m);
        sim[1] = sim_end;
        nand_model_free(m);
    }
    for (int k = 0; k < 2; k++) {
        printf("BENCH name=%s qd=%u ops=%" G_GUINT64_FORMAT " ops_per_s=%.0f "
               "fifo_ops_per_s=%.0f ratio_to_fifo=%.2f max_intervals=%" G_GUINT64_FORMAT
               " simulated_ms=%" G_GUINT64_FORMAT, k ? "burst" : "closed-loop", qd,
               k ? ops / 20 : ops, rate[0][k], rate[1][k], rate[0][k] / rate[1][k], kept[0][k],
               sim[k] / 1000000);
        if (k) {
            printf(" burst_intervals=%" G_GUINT64_FORMAT, burst_kept);
        }
        printf("\n");
    }
    return 0;
}
