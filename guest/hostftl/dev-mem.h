/*
 * An in-memory OCSSD that checks the chunk rules (dev-mem.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HOSTFTL_DEV_MEM_H
#define HOSTFTL_DEV_MEM_H

#include "ftl.h"

struct mem_dev {
    struct ftl_geo g;
    uint64_t nchunks;
    uint8_t *data;
    uint8_t *state;
    uint32_t *wp;
    uint32_t *open_per_pu;
    uint32_t open;
    uint64_t writes, reads, resets, batches;
    uint64_t violations;  /* rule breaks (each also refused with an NVMe status) */
    char last_violation[200];
    int quiet;            /* do not print them */
};

extern const struct ftl_dev_ops mem_dev_ops;
struct mem_dev *mem_dev_new(const struct ftl_geo *g);
void mem_dev_free(struct mem_dev *d);

#endif
