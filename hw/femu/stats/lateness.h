/*
 * Lateness of completions: how long after the model's target time the device really posted
 * them. A log-linear histogram (constant memory, ~3% relative error) gives p50/p99 and an
 * exact max. QEMU-free.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_LATENESS_H
#define FEMU_LATENESS_H

#include <stdint.h>

/* 32 sub-buckets per power of two: values below 32 ns are exact, above ~3% apart. */
#define LATENESS_SUB_BITS 5
#define LATENESS_BUCKETS ((64 - LATENESS_SUB_BITS + 1) << LATENESS_SUB_BITS)

typedef struct LatenessHist {
    uint64_t count;
    uint64_t max_ns;
    uint64_t sum_ns;
    uint64_t buckets[LATENESS_BUCKETS];
} LatenessHist;

void lateness_reset(LatenessHist *h);
void lateness_record(LatenessHist *h, uint64_t late_ns);
/* The value below which a fraction q (0..1) of the records fall (a bucket's upper edge). */
uint64_t lateness_quantile(const LatenessHist *h, double q);

#endif
