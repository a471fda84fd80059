/*
 * Burst: no GC work for the host's pages until free units fall to the forced threshold,
 * then whole victims at once, the host waiting behind them; background GC books its moves
 * on any chip idle before the next command. FEMU's way (no longer the default): the tail
 * latencies it gives are what gc_pacing=proportional, the default, removes.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "pacing.h"

static double burst_moves(const FtlPaceState *s, const FtlPolicyChoice *c G_GNUC_UNUSED)
{
    return s->free_units <= s->forced_units ? FTL_PACE_ALL : 0;
}

static const FtlPacingPolicy burst = {
    .base = {
        .name = "burst",
        .about = "whole victims at the forced threshold",
    },
    .moves_per_page = burst_moves,
    .idle_fits = false,
};
FTL_PACING_POLICY_REGISTER(burst)
