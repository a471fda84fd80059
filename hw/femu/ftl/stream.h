/*
 * Stream assignment: which open unit a page goes to. A host write and a GC move each ask
 * the stream policy (streams=) for a stream; the FTL keeps one open unit per stream, so
 * pages of different streams never share a unit (data of different lifetimes apart: GC's
 * moved pages are cold, the host's new ones are hot). A policy is one file (stream-*.c).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_FTL_STREAM_H
#define FEMU_FTL_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

#define FTL_MAX_STREAMS 4
#define FTL_STREAM_UNWRITTEN UINT64_MAX

/* What a policy is told of the page it places. */
typedef struct FtlStreamPage {
    uint64_t lpn;
    bool gc;                    /* a GC move; else a host write */
    /*
     * With .ages: how old lpn's current data is, in the FTL's clock (victim.h: it ticks as a
     * unit becomes full or free) since its unit became full; 0 while that unit is open;
     * FTL_STREAM_UNWRITTEN when lpn holds none. Saved state alone: a reload sees the same.
     */
    uint64_t age;
    uint32_t units;             /* the FTL's units (lines), to scale ages by */
} FtlStreamPage;

typedef struct FtlStreamPolicy {
    FtlPolicy base;             /* name, about, parameters */
    uint32_t nstreams;          /* open units it writes into, 1..FTL_MAX_STREAMS */
    bool ages;                  /* it reads FtlStreamPage.age (a mapping look-up a page) */
    /* The stream of page p: below nstreams. */
    uint32_t (*stream_of)(const FtlPolicyChoice *c, const FtlStreamPage *p);
} FtlStreamPolicy;

/* Registers p (a static FtlStreamPolicy) as a streams= policy when the program starts. */
#define FTL_STREAM_POLICY_REGISTER(p) FTL_POLICY_REGISTER(FTL_STREAM, p)

static inline const FtlStreamPolicy *ftl_stream_of(const FtlPolicyChoice *c)
{
    return (const FtlStreamPolicy *)c->policy;
}

#endif
