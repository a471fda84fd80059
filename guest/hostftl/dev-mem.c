/*
 * An OCSSD in memory that enforces the chunk rules: writes at the write pointer
 * in multiples of WS_MIN, reads below it, resets of Closed chunks only, the
 * open-chunk limits. The unit test runs the FTL core on it; `hostftl start
 * --dev mem:MiB` serves one (to try hostftl and NBD without a whitebox device).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include "dev-mem.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void violation(struct mem_dev *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void violation(struct mem_dev *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->last_violation, sizeof(d->last_violation), fmt, ap);
    va_end(ap);
    d->violations++;
    if (!d->quiet)
        fprintf(stderr, "mem-dev: rule broken: %s\n", d->last_violation);
}

static int mem_write(void *opaque, uint64_t lba, uint32_t n, const void *buf)
{
    struct mem_dev *d = opaque;
    const struct ftl_geo *g = &d->g;
    uint64_t c = lba / g->clba;
    uint32_t off = lba % g->clba, pu = c / g->num_chk;

    if (c >= d->nchunks || n == 0 || off + n > g->clba) {
        violation(d, "write of %u sectors at %llu leaves its chunk", n, (unsigned long long)lba);
        return 0x2f2;
    }
    if (d->state[c] & (FTL_CHUNK_CLOSED | FTL_CHUNK_OFFLINE) || off != d->wp[c]) {
        violation(d, "out of order write at %llu (chunk %llu wp %u state %u)",
                  (unsigned long long)lba, (unsigned long long)c, d->wp[c], d->state[c]);
        return 0x2f2;
    }
    if (n % g->ws_min) {
        violation(d, "write of %u sectors, not a multiple of WS_MIN %u", n, g->ws_min);
        return 0x002;
    }
    if (d->state[c] & FTL_CHUNK_FREE) {
        if ((g->maxoc && d->open + 1 > g->maxoc) ||
            (g->maxocpu && d->open_per_pu[pu] + 1 > g->maxocpu)) {
            violation(d, "opening chunk %llu exceeds MAXOC/MAXOCPU (%u open, %u on PU %u)",
                      (unsigned long long)c, d->open, d->open_per_pu[pu], pu);
            return 0x00c;
        }
        d->state[c] = FTL_CHUNK_OPEN;
        d->open++;
        d->open_per_pu[pu]++;
    }
    memcpy(d->data + lba * g->sector_size, buf, (size_t)n * g->sector_size);
    d->wp[c] += n;
    d->writes += n;
    if (d->wp[c] == g->clba) {
        d->state[c] = FTL_CHUNK_CLOSED;
        d->open--;
        d->open_per_pu[pu]--;
    }
    return 0;
}

static int mem_read(void *opaque, uint64_t lba, uint32_t n, void *buf)
{
    struct mem_dev *d = opaque;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t c = (lba + i) / d->g.clba;
        if (c >= d->nchunks || (lba + i) % d->g.clba >= d->wp[c]) {
            violation(d, "read of LBA %llu at or above the write pointer",
                      (unsigned long long)(lba + i));
            return 0x287;
        }
    }
    memcpy(buf, d->data + lba * d->g.sector_size, (size_t)n * d->g.sector_size);
    d->reads += n;
    return 0;
}

static int mem_reset(void *opaque, uint64_t c)
{
    struct mem_dev *d = opaque;
    if (c >= d->nchunks || !(d->state[c] & FTL_CHUNK_CLOSED)) {
        violation(d, "reset of chunk %llu in state %u", (unsigned long long)c,
                  c < d->nchunks ? d->state[c] : 0);
        return 0x2c1;
    }
    d->state[c] = FTL_CHUNK_FREE;
    d->wp[c] = 0;
    /* erased data is garbage, so that reading it would be noticed */
    memset(d->data + c * d->g.clba * d->g.sector_size, 0x5a,
           (size_t)d->g.clba * d->g.sector_size);
    d->resets++;
    return 0;
}

static int mem_info(void *opaque, uint64_t first, uint32_t n, struct ftl_chunk_info *out)
{
    struct mem_dev *d = opaque;
    if (first + n > d->nchunks)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++) {
        out[i].state = d->state[first + i];
        out[i].written = d->wp[first + i];
    }
    return 0;
}

/* The pieces in reverse order: a batch's writes may reach a device in any order,
 * so each must be valid on its own. */
static int mem_write_batch(void *opaque, uint32_t n, const uint64_t *lba, const uint32_t *nsec,
                           const void *const *bufs)
{
    struct mem_dev *d = opaque;
    for (uint32_t i = n; i-- > 0;) {
        int rc = mem_write(opaque, lba[i], nsec[i], bufs[i]);
        if (rc)
            return rc;
    }
    d->batches++;
    return 0;
}

const struct ftl_dev_ops mem_dev_ops = { mem_read, mem_write, mem_reset, mem_info,
                                         mem_write_batch };

struct mem_dev *mem_dev_new(const struct ftl_geo *g)
{
    struct mem_dev *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->g = *g;
    d->nchunks = (uint64_t)g->num_grp * g->num_pu * g->num_chk;
    d->data = malloc(d->nchunks * g->clba * g->sector_size);
    d->state = malloc(d->nchunks);
    d->wp = calloc(d->nchunks, sizeof(uint32_t));
    d->open_per_pu = calloc((size_t)g->num_grp * g->num_pu, sizeof(uint32_t));
    if (!d->data || !d->state || !d->wp || !d->open_per_pu) {
        mem_dev_free(d);
        return NULL;
    }
    memset(d->state, FTL_CHUNK_FREE, d->nchunks);
    return d;
}

void mem_dev_free(struct mem_dev *d)
{
    if (!d)
        return;
    free(d->data);
    free(d->state);
    free(d->wp);
    free(d->open_per_pu);
    free(d);
}
