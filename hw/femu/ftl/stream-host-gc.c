/*
 * Host-gc: host writes and GC moves in open units of their own. A page GC moves has
 * outlived a unit's worth of writes: likely cold, it goes with other such pages, and the
 * units the host fills hold only new data, whose garbage comes sooner and together. The
 * blackbox drives' default.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "stream.h"

static uint32_t host_gc_stream(const FtlPolicyChoice *c G_GNUC_UNUSED, const FtlStreamPage *p)
{
    return p->gc;
}

static const FtlStreamPolicy host_gc = {
    .base = {
        .name = "host-gc",
        .about = "host writes and GC moves in open units of their own",
    },
    .nstreams = 2,
    .stream_of = host_gc_stream,
};
FTL_STREAM_POLICY_REGISTER(host_gc)
