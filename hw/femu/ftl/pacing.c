/*
 * What every pacing policy gets; see pacing.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "pacing.h"

double ftl_pace_moves(const FtlPolicyChoice *c, const FtlPaceState *s)
{
    if (s->free_units <= s->floor_units) {
        return FTL_PACE_ALL;
    }
    return ftl_pacing_of(c)->moves_per_page(s, c);
}
