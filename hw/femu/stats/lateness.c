/*
 * Lateness histogram; see lateness.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "lateness.h"

#include <string.h>

static unsigned bucket_of(uint64_t v)
{
    if (v < (1u << LATENESS_SUB_BITS)) {
        return (unsigned)v;
    }
    unsigned msb = 63 - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - LATENESS_SUB_BITS;
    unsigned sub = (unsigned)(v >> shift) & ((1u << LATENESS_SUB_BITS) - 1);
    return ((shift + 1) << LATENESS_SUB_BITS) + sub;
}

/* Largest value that falls in bucket b. */
static uint64_t bucket_top(unsigned b)
{
    unsigned group = b >> LATENESS_SUB_BITS;
    uint64_t sub = b & ((1u << LATENESS_SUB_BITS) - 1);
    if (group == 0) {
        return sub;
    }
    unsigned shift = group - 1;
    uint64_t base = ((uint64_t)1 << LATENESS_SUB_BITS) | sub;
    return ((base + 1) << shift) - 1;
}

void lateness_reset(LatenessHist *h)
{
    memset(h, 0, sizeof(*h));
}

void lateness_record(LatenessHist *h, uint64_t late_ns)
{
    h->count++;
    h->sum_ns += late_ns;
    if (late_ns > h->max_ns) {
        h->max_ns = late_ns;
    }
    h->buckets[bucket_of(late_ns)]++;
}

uint64_t lateness_quantile(const LatenessHist *h, double q)
{
    if (h->count == 0) {
        return 0;
    }
    uint64_t rank = (uint64_t)(q * (double)h->count);
    if (rank >= h->count) {
        rank = h->count - 1;
    }
    uint64_t seen = 0;
    for (unsigned b = 0; b < LATENESS_BUCKETS; b++) {
        seen += h->buckets[b];
        if (seen > rank) {
            uint64_t top = bucket_top(b);
            return top < h->max_ns ? top : h->max_ns;
        }
    }
    return h->max_ns;
}
