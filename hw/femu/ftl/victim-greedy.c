/*
 * Greedy: the unit with the fewest valid pages, the least to move now. FEMU's choice and
 * our default; under uniform random writes on units of many pages no policy that looks
 * only at the present does better (docs/ftl-policies.md has the models).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "victim.h"

static uint32_t greedy_choose(FtlVictims *v)
{
    return ftl_victims_fewest_valid(v);
}

static const FtlVictimPolicy greedy = {
    .base = {
        .name = "greedy",
        .about = "the fewest valid pages",
    },
    .choose = greedy_choose,
};
FTL_VICTIM_POLICY_REGISTER(greedy)
