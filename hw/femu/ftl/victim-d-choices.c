/*
 * d-choices: the fewest valid pages among d units drawn at random (with replacement).
 * d = 1 is random; as d grows it tends to greedy while looking at d units, not all: the
 * family Van Houdt's mean-field model describes (SIGMETRICS 2013).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "victim.h"

static uint32_t d_choices_choose(FtlVictims *v)
{
    uint32_t d = ftl_victims_param(v, 0);
    FtlUnit best, u;

    for (uint32_t i = 0; i < d; i++) {
        ftl_victims_nth(v, ftl_victims_random(v, ftl_victims_count(v)), &u);
        if (!i || ftl_unit_fewer_valid(&u, &best)) {
            best = u;
        }
    }
    return best.id;
}

static const FtlVictimPolicy d_choices = {
    .base = {
        .name = "d-choices",
        .about = "the fewest valid pages of d units drawn at random",
        .params = {
            { "d", 1, 1024, 10, "units drawn" },
            { "seed", 0, UINT32_MAX, 1, "the draws' seed" },
        },
    },
    .choose = d_choices_choose,
};
FTL_VICTIM_POLICY_REGISTER(d_choices)
