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

typedef struct FtlStreamPolicy {
    FtlPolicy base;             /* name, about, parameters */
    uint32_t nstreams;          /* open units it writes into, 1..FTL_MAX_STREAMS */
    /* The stream of a page of lpn: a GC move's (gc) or a host write's. */
    uint32_t (*stream_of)(const FtlPolicyChoice *c, bool gc, uint64_t lpn);
} FtlStreamPolicy;

/* Registers p (a static FtlStreamPolicy) as a streams= policy when the program starts. */
#define FTL_STREAM_POLICY_REGISTER(p) FTL_POLICY_REGISTER(FTL_STREAM, p)

static inline const FtlStreamPolicy *ftl_stream_of(const FtlPolicyChoice *c)
{
    return (const FtlStreamPolicy *)c->policy;
}

#endif
