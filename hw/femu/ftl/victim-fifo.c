/*
 * FIFO: the unit that became full first, whatever it holds: a log's cleaner, which wears
 * every unit evenly and moves more than greedy when some data stays cold.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "victim.h"

static double fifo_cost(const FtlVictims *v G_GNUC_UNUSED, const FtlUnit *u)
{
    return (double)u->closed;
}

static uint32_t fifo_choose(FtlVictims *v)
{
    return ftl_victims_least_cost(v, fifo_cost);
}

static const FtlVictimPolicy fifo = {
    .base = {
        .name = "fifo",
        .about = "the oldest full unit",
    },
    .choose = fifo_choose,
};
FTL_VICTIM_POLICY_REGISTER(fifo)
