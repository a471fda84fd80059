/*
 * Hot-cold: host writes apart by how soon their logical page was rewritten, GC moves in a
 * stream of their own. A page is hot when its data is being replaced while young: its
 * current copy sits in an open unit, or in one that became full less than `window` % of
 * the drive's units ago (counted in units written: the FTL's clock ticks twice per unit
 * once GC runs, one filled and one freed). Pages of a skewed workload's hot set come back
 * within a fraction of the drive's capacity, those of its cold set after many; a page
 * never written (or trimmed) has shown no rewrites and goes with the cold.
 *
 * The age comes from the unit's order in the FTL's saved line records and the mapping, so
 * it costs no memory a page and a reloaded drive classifies as the running one did. A page
 * GC moved takes its GC unit's age: a cold page rewritten soon after a move counts as hot
 * once, then goes back to cold at its next move.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "stream.h"

/* 0 and 1 as host-gc's: a drive switched between the two keeps its open units */
enum { HOT, GC, COLD };

static uint32_t hot_cold_stream(const FtlPolicyChoice *c, const FtlStreamPage *p)
{
    if (p->gc) {
        return GC;
    }
    if (p->age == FTL_STREAM_UNWRITTEN) {
        return COLD;
    }
    /* age / 2 units written < window / 100 of the units */
    return p->age * 50 < (uint64_t)c->param[0] * p->units ? HOT : COLD;
}

static const FtlStreamPolicy hot_cold = {
    .base = {
        .name = "hot-cold",
        .about = "host writes apart by how soon a page was rewritten, GC moves apart",
        .params = { { "window", 1, 1000, 25,
                      "hot: rewritten within this % of the drive's units written" } },
    },
    .nstreams = 3,
    .ages = true,
    .stream_of = hot_cold_stream,
};
FTL_STREAM_POLICY_REGISTER(hot_cold)
