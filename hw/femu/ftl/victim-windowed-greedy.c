/*
 * Windowed greedy (Hu et al., SYSTOR 2009): the fewest valid pages among the `window`
 * units that became full first. window = 1 is FIFO; a window of every unit is greedy.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "victim.h"

static gint older_first(gconstpointer a, gconstpointer b)
{
    const FtlUnit *x = a, *y = b;

    return x->closed != y->closed ? (x->closed < y->closed ? -1 : 1) :
           (x->id < y->id ? -1 : x->id > y->id);
}

static uint32_t windowed_greedy_choose(FtlVictims *v)
{
    uint32_t n = ftl_victims_count(v), w = MIN(ftl_victims_param(v, 0), n), best = 0;
    g_autofree FtlUnit *u = g_new(FtlUnit, n);

    for (uint32_t i = 0; i < n; i++) {
        ftl_victims_nth(v, i, &u[i]);
    }
    qsort(u, n, sizeof(*u), older_first);
    for (uint32_t i = 1; i < w; i++) {
        if (ftl_unit_fewer_valid(&u[i], &u[best])) {
            best = i;
        }
    }
    return u[best].id;
}

static const FtlVictimPolicy windowed_greedy = {
    .base = {
        .name = "windowed-greedy",
        .about = "the fewest valid pages among the oldest `window` full units",
        .params = { { "window", 1, 1u << 20, 16, "oldest units considered" } },
    },
    .choose = windowed_greedy_choose,
};
FTL_VICTIM_POLICY_REGISTER(windowed_greedy)
