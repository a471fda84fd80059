/*
 * What a blackbox FTL write costs the simulator: host pages per second of one thread (CPU
 * time), with the FTL's state in memory only and written through to a store (its
 * persistence, ftl_attach_store), on the same workload.
 *
 *   ftl-write [--pages N] [--seed S]
 *
 * 8 channels x 4 chips, 256 pages per block, 4 GiB exposed, op_pcent 7: the drive is filled
 * sequentially, then N random 4 KiB overwrites, then N / 32 writes of 32 pages (128 KiB),
 * then N random 4 KiB reads, each a closed loop of 64 in flight (a command arrives when the
 * one 64 before completed, the NAND retiring at each arrival as the device does): forced
 * GC runs all along the writes. Prints one line per run:
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

static Ftl *make(FtlConfig *c, void **store)
{
    char *err = NULL;
    Ftl *f;

    *c = (FtlConfig){
        .geo = { .nchs = 8, .luns_per_ch = 4, .pls_per_lun = 1, .pgs_per_blk = 256,
                 .secs_per_pg = 8, .secsz = 512 },
        .tm = { .cell_bits = 3, .pg_rd_lat = { 50 * US, 65 * US, 80 * US },
                .pg_wr_lat = { 400 * US, 700 * US, 1000 * US }, .blk_er_lat = 3000 * US,
                .ch_mts = 800, .ch_width_bytes = 1, .time_scale = 1 },
        .exposed_pages = (4ULL << 30) / 4096, .gc_thres_pcent = 90, .gc_thres_pcent_high = 99,
    };
    if (!ftl_derive_blocks(&c->geo, c->exposed_pages * 4096, 7, &err) ||
        !(f = ftl_new(c, &err))) {
        fprintf(stderr, "ftl-write: %s\n", err);
        exit(1);
    }
#ifndef FTL_BENCH_NO_STORE
    if (store) {
        *store = g_malloc0(ftl_store_bytes(c));
        if (!ftl_attach_store(f, *store, &err)) {
            fprintf(stderr, "ftl-write: %s\n", err);
            exit(1);
        }
    }
#else
    (void)store;
#endif
    return f;
}

#define QD 64

/* One write of npages at lpn in the closed loop: arrives when the one QD before is done. */
static void loop_write(Ftl *f, uint64_t *done, uint64_t i, uint64_t *now, uint64_t lpn,
                       uint64_t npages)
{
    *now = MAX(*now, done[i % QD]);
    nand_retire(ftl_nand(f), *now);
    done[i % QD] = ftl_write(f, lpn, npages, *now);
}

/* Host pages per second of CPU time: random 4 KiB writes, 128 KiB writes, 4 KiB reads. */
static void run(bool with_store, uint64_t pages, uint64_t seed, double rate[3])
{
    FtlConfig c;
    void *store = NULL;
    Ftl *f = make(&c, with_store ? &store : NULL);
    uint64_t r = seed * 0x9e3779b97f4a7c15ULL + 1, now = 0, n = c.exposed_pages;
    uint64_t done[QD] = { 0 }, k = 0;
    double t0;

    for (uint64_t lpn = 0; lpn < n; lpn += 32) {
        loop_write(f, done, k++, &now, lpn, MIN(32, n - lpn));
    }
    t0 = now_s();
    for (uint64_t i = 0; i < pages; i++) {
        loop_write(f, done, k++, &now, rnd(&r) % n, 1);
    }
    rate[0] = pages / (now_s() - t0);
    t0 = now_s();
    for (uint64_t i = 0; i < pages / 32; i++) {
        loop_write(f, done, k++, &now, rnd(&r) % (n / 32) * 32, 32);
    }
    rate[1] = pages / 32 * 32 / (now_s() - t0);
    t0 = now_s();
    for (uint64_t i = 0; i < pages; i++) {
        uint64_t *d = &done[k++ % QD];
        now = MAX(now, *d);
        nand_retire(ftl_nand(f), now);
        *d = ftl_read(f, rnd(&r) % n, 1, now);
    }
    rate[2] = pages / (now_s() - t0);
    ftl_free(f);
    g_free(store);
}

int main(int argc, char **argv)
{
    uint64_t pages = 2000000, seed = 1;
    double plain[3], stored[3] = { 0, 0, 0 };
    const char *names[3] = { "random-4k", "write-128k", "read-4k" };

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--pages")) {
            pages = strtoull(argv[i + 1], NULL, 10);
        } else if (!strcmp(argv[i], "--seed")) {
            seed = strtoull(argv[i + 1], NULL, 10);
        } else {
            fprintf(stderr, "ftl-write: unknown option %s (--pages N, --seed S)\n", argv[i]);
            return 2;
        }
    }
    if (pages < 32) {
        fprintf(stderr, "ftl-write: --pages must be at least 32\n");
        return 2;
    }
    run(false, pages, seed, plain);
#ifndef FTL_BENCH_NO_STORE
    run(true, pages, seed, stored);
#endif
    for (int k = 0; k < 3; k++) {
        printf("BENCH name=%s pages=%" G_GUINT64_FORMAT " pages_per_s=%.0f "
               "store_pages_per_s=%.0f ratio=%.3f\n", names[k],
               k == 1 ? pages / 32 * 32 : pages, plain[k], stored[k], stored[k] / plain[k]);
    }
    return 0;
}
