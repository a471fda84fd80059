/*
 * Proportional: once free space falls to `margin` units above the forced threshold, every host
 * page pays for the GC it causes: a victim of v valid pages among n frees n - v, so each page
 * written moves v / (n - v) of its pages, and free space holds steady; as free units fall
 * further, up to `boost` times that at the floor of whole victims (pacing.h). Every free unit
 * above the start is room garbage could have had: a margin raises the write amplification,
 * most on drives of few units. Background GC uses idle time only, never booking ahead of the
 * host. The host sees every write a little slower instead of some writes behind a whole victim
 * (as firmware that interleaves GC with host writes does).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "pacing.h"

static double proportional_moves(const FtlPaceState *s, const FtlPolicyChoice *c)
{
    /*
     * from `margin` above the forced threshold, and above the floor by the open units (free
     * space counts what is left of them, which is gone all at once when they fill)
     */
    double floor = MIN(s->floor_units, s->forced_units), boost = c->param[1];
    double start = MAX((double)s->forced_units, floor + MAX(s->open_units, 1)) + c->param[0];
    double below, share;
    /* in units, what is left of the open one too: no jump each time one is opened */
    double free = (double)s->free_pages / s->unit_pages;

    if (free > start) {
        return 0;
    }
    /* 1 at the start, rising to `boost` at the floor of whole victims */
    below = start > floor ? MIN((start - free) / (start - floor), 1) : 1;
    /* a victim without garbage (a policy may choose one) owes the most */
    share = s->victim_valid < s->unit_pages ?
            (double)s->victim_valid / (double)(s->unit_pages - s->victim_valid) *
            (1 + (boost - 1) * below) : c->param[2];
    /*
     * A victim of thin garbage (as just after a fill) costs many moves for each page it
     * frees: at most `cap` a page, and the free units absorb the rest (down to the floor
     * of whole victims, pacing.h) while garbage grows.
     */
    return share < c->param[2] ? share : c->param[2];
}

static const FtlPacingPolicy proportional = {
    .base = {
        .name = "proportional",
        .about = "each host page moves its share of the victim's valid pages",
        .params = {
            { "margin", 0, 1024, 1, "free units above the forced threshold where it starts" },
            { "boost", 1, 16, 2, "the share's multiple at the forced threshold" },
            { "cap", 1, 1u << 20, 64, "pages moved per host page at most" },
        },
    },
    .moves_per_page = proportional_moves,
    .idle_fits = true,
};
FTL_PACING_POLICY_REGISTER(proportional)
