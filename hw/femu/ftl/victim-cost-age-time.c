/*
 * Cost-age-times (CAT, Chiang et al., Software: Practice and Experience 1999): cost-benefit
 * that also spares worn units: cleaning cost u / (1 - u), over the unit's age, times the
 * times it was erased. Ages and erases count from 1.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "victim.h"

static double cat_cost(const FtlVictims *v, const FtlUnit *u)
{
    double age = ftl_victims_now(v) - u->closed + 1;
    double garbage = ftl_victims_unit_pages(v) - u->valid;

    return u->valid / garbage / age * (u->erases + 1.0);
}

static uint32_t cat_choose(FtlVictims *v)
{
    return ftl_victims_least_cost(v, cat_cost);
}

static const FtlVictimPolicy cost_age_time = {
    .base = {
        .name = "cost-age-time",
        .about = "cost-benefit that spares worn units",
    },
    .choose = cat_choose,
};
FTL_VICTIM_POLICY_REGISTER(cost_age_time)
