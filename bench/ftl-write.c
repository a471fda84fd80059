/*
 * What a blackbox FTL command costs the simulator: host pages per second of one thread (CPU
 * time), with the FTL's state in memory only and written through to a store (its
 * persistence, ftl_attach_store), on the same workload.
 *
 *   ftl-write [--pages N] [--rounds R] [--seed S]
 *
 * Two drives of 8 channels x 4 chips, 256 pages per block, 4 GiB exposed, op_pcent 7, one
 * with a store: each filled sequentially, then R rounds of N / R random 4 KiB overwrites
 * (forced GC all along), of N / R pages in 128 KiB writes, and of N / R random 4 KiB reads,
 * each in a closed loop of 64 in flight (a command arrives when the one 64 before completed,
 * the NAND retiring at each arrival as the device does). The two drives take turns round
 * by round, so that other work on the machine slows both alike; the medians are printed:
 * BENCH name=... pages=... pages_per_s=... store_pages_per_s=... ratio=...
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "bbssd/ftl.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define US 1000ULL
#define QD 64
#define MAX_ROUNDS 99

static double now_s(void)
{
    struct timespec ts;
    /* CPU time of this thread: the machine is shared, its wall time is not ours */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ULL;
}

/* One drive and its closed loop. */
typedef struct Drive {
    Ftl *f;
    void *store;
    uint64_t r, now, k, done[QD], pages;
} Drive;

static void loop_cmd(Drive *d, bool write, uint64_t lpn, uint64_t npages)
{
    uint64_t *slot = &d->done[d->k++ % QD];

    d->now = MAX(d->now, *slot);
    nand_retire(ftl_nand(d->f), d->now);
    *slot = write ? ftl_write(d->f, lpn, npages, d->now) : ftl_read(d->f, lpn, npages, d->now);
}

static void drive_new(Drive *d, bool with_store, uint64_t seed)
{
    FtlConfig c = {
        .geo = { .nchs = 8, .luns_per_ch = 4, .pls_per_lun = 1, .pgs_per_blk = 256,
                 .secs_per_pg = 8, .secsz = 512 },
        .tm = { .cell_bits = 3, .pg_rd_lat = { 50 * US, 65 * US, 80 * US },
                .pg_wr_lat = { 400 * US, 700 * US, 1000 * US }, .blk_er_lat = 3000 * US,
                .ch_mts = 800, .ch_width_bytes = 1, .time_scale = 1 },
        .exposed_pages = (4ULL << 30) / 4096, .gc_thres_pcent = 90, .gc_thres_pcent_high = 99,
    };
    char *err = NULL;

    memset(d, 0, sizeof(*d));
    if (!ftl_derive_blocks(&c.geo, c.exposed_pages * 4096, 7, &err) ||
        !(d->f = ftl_new(&c, &err))) {
        fprintf(stderr, "ftl-write: %s\n", err);
        exit(1);
    }
#ifndef FTL_BENCH_NO_STORE
    if (with_store) {
        d->store = g_malloc0(ftl_store_bytes(&c));
        if (!ftl_attach_store(d->f, d->store, &err)) {
            fprintf(stderr, "ftl-write: %s\n", err);
            exit(1);
        }
    }
#else
    (void)with_store;
#endif
    d->r = seed * 0x9e3779b97f4a7c15ULL + 1;
    d->pages = c.exposed_pages;
    for (uint64_t lpn = 0; lpn < d->pages; lpn += 32) {
        loop_cmd(d, true, lpn, MIN(32, d->pages - lpn));
    }
}

/* One round of a workload (0: random 4 KiB writes, 1: 128 KiB writes, 2: 4 KiB reads). */
static double round_of(Drive *d, int w, uint64_t pages)
{
    uint64_t np = w == 1 ? 32 : 1, n = pages / np;
    double t0 = now_s();

    for (uint64_t i = 0; i < n; i++) {
        loop_cmd(d, w < 2, rnd(&d->r) % (d->pages / np) * np, np);
    }
    return n * np / (now_s() - t0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *names[3] = { "random-4k", "write-128k", "read-4k" };
    uint64_t pages = 2000000, seed = 1, rounds = 9;
    Drive d[2];

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--pages")) {
            pages = strtoull(argv[i + 1], NULL, 10);
        } else if (!strcmp(argv[i], "--rounds")) {
            rounds = strtoull(argv[i + 1], NULL, 10);
        } else if (!strcmp(argv[i], "--seed")) {
            seed = strtoull(argv[i + 1], NULL, 10);
        } else {
            fprintf(stderr, "ftl-write: unknown option %s (--pages N, --rounds R, --seed S)\n",
                    argv[i]);
            return 2;
        }
    }
    if (!rounds || rounds > MAX_ROUNDS || pages / rounds < 32) {
        fprintf(stderr, "ftl-write: --rounds must be 1..%d and --pages at least 32 per "
                "round\n", MAX_ROUNDS);
        return 2;
    }
    drive_new(&d[0], false, seed);
    drive_new(&d[1], true, seed);
    for (int w = 0; w < 3; w++) {
        double rate[2][MAX_ROUNDS], med[2];
        for (uint64_t k = 0; k < rounds; k++) {
            for (int s = 0; s < 2; s++) {
                rate[s][k] = round_of(&d[s], w, pages / rounds);
            }
        }
        for (int s = 0; s < 2; s++) {
            qsort(rate[s], rounds, sizeof(double), cmp_double);
            med[s] = rate[s][rounds / 2];
        }
#ifdef FTL_BENCH_NO_STORE
        med[1] = 0;
#endif
        printf("BENCH name=%s pages=%" G_GUINT64_FORMAT " pages_per_s=%.0f "
               "store_pages_per_s=%.0f ratio=%.3f\n", names[w], pages / rounds * rounds,
               med[0], med[1], med[1] / med[0]);
    }
    for (int s = 0; s < 2; s++) {
        ftl_free(d[s].f);
        g_free(d[s].store);
    }
    return 0;
}
