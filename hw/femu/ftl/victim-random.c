/*
 * Random: any full unit, each as likely: the baseline the analytic models start from
 * (its victims hold the drive's mean share of valid pages).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "victim.h"

static uint32_t random_choose(FtlVictims *v)
{
    FtlUnit u;

    ftl_victims_nth(v, ftl_victims_random(v, ftl_victims_count(v)), &u);
    return u.id;
}

static const FtlVictimPolicy random_policy = {
    .base = {
        .name = "random",
        .about = "a full unit drawn at random",
        .params = { { "seed", 0, UINT32_MAX, 1, "the draws' seed" } },
    },
    .choose = random_choose,
};
FTL_VICTIM_POLICY_REGISTER(random_policy)
