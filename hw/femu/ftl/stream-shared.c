/*
 * Shared: one open unit for every page, the host's and GC's alike (FEMU's way; FDP
 * drives' only one): GC's moved pages land among the host's new ones.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "stream.h"

static uint32_t shared_stream(const FtlPolicyChoice *c G_GNUC_UNUSED,
                              const FtlStreamPage *p G_GNUC_UNUSED)
{
    return 0;
}

static const FtlStreamPolicy shared = {
    .base = {
        .name = "shared",
        .about = "one open unit for host writes and GC moves",
    },
    .nstreams = 1,
    .stream_of = shared_stream,
};
FTL_STREAM_POLICY_REGISTER(shared)
