/*
 * Cost-benefit: the most free space gained per page moved, weighted by age, so that a unit
 * of cold data is collected before it has lost much (Kawaguchi et al., USENIX 1995: a
 * unit of valid share u frees 1 - u for a cost of 2u, reading and writing its valid pages;
 * benefit / cost = age (1 - u) / 2u). Ages count from 1: the newest unit still ranks.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "victim.h"

/* The inverse of benefit / cost: the least is the best victim. */
static double cost_benefit_cost(const FtlVictims *v, const FtlUnit *u)
{
    double age = ftl_victims_now(v) - u->closed + 1;
    double garbage = ftl_victims_unit_pages(v) - u->valid;

    return 2.0 * u->valid / (garbage * age);
}

static uint32_t cost_benefit_choose(FtlVictims *v)
{
    return ftl_victims_least_cost(v, cost_benefit_cost);
}

static const FtlVictimPolicy cost_benefit = {
    .base = {
        .name = "cost-benefit",
        .about = "the most space freed per page moved, times its age",
    },
    .choose = cost_benefit_choose,
};
FTL_VICTIM_POLICY_REGISTER(cost_benefit)
