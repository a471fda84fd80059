/*
 * GC pacing: how much of GC's work (moving a victim's valid pages, erasing its blocks) is
 * done when. Before each host page the FTL asks its pacing policy how many pages GC moves
 * for it, and does those moves then, on the victim's chips in turn; in idle time it lets
 * background GC work too. A policy is one file (pacing-*.c), selected by gc_pacing=.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_FTL_PACING_H
#define FEMU_FTL_PACING_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

/* moves_per_page's "collect whole victims now" (while free units are at the threshold) */
#define FTL_PACE_ALL INFINITY

/* What a pacing policy sees, before one host page. */
typedef struct FtlPaceState {
    uint32_t free_units;        /* free lines / RUs now */
    uint64_t free_pages;        /* pages they hold, and those left in the open unit(s) */
    uint32_t open_units;        /* the open units counted in free_pages */
    uint32_t forced_units;      /* the forced threshold (gc_thres_pcent_high, >= 2) */
    uint32_t floor_units;       /* at or below: whole victims now, whatever the policy */
    uint64_t unit_pages;
    /* valid pages of the victim in progress when it was taken; of the best candidate when
       none is in progress (unit_pages when none has garbage) */
    uint64_t victim_valid;
} FtlPaceState;

typedef struct FtlPacingPolicy {
    FtlPolicy base;             /* name, about, parameters */
    /*
     * Pages GC moves before this host page (fractions add up over pages): 0 for none,
     * FTL_PACE_ALL for whole victims now, until free units are above the forced threshold.
     * Whatever it says, free units at floor_units or less get whole victims: writes never
     * take the last free unit.
     */
    double (*moves_per_page)(const FtlPaceState *s, const FtlPolicyChoice *c);
    /*
     * Background GC in idle time books only operations that end before the next host
     * command arrives (true), or any that start before it (false: a move's program may then
     * wait on its chip ahead of the host's next writes).
     */
    bool idle_fits;
} FtlPacingPolicy;

/* Registers p (a static FtlPacingPolicy) as a gc_pacing when the program starts. */
#define FTL_PACING_POLICY_REGISTER(p) FTL_POLICY_REGISTER(FTL_PACING, p)

static inline const FtlPacingPolicy *ftl_pacing_of(const FtlPolicyChoice *c)
{
    return (const FtlPacingPolicy *)c->policy;
}

/* The moves c owes before one host page in state s, the floor of whole victims applied. */
double ftl_pace_moves(const FtlPolicyChoice *c, const FtlPaceState *s);

#endif
