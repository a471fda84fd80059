/*
 * The sra_* properties -> SraConfig; see sra-params.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "sra-params.h"

bool sra_params_config(const FemuSraParams *p, uint64_t page_bytes, uint32_t time_scale,
                       SraConfig *c, char **err)
{
    *c = (SraConfig){
        .page_bytes = page_bytes,
        .streams = p->streams,
        .ramp = p->ramp,
        .max_read_bytes = (uint64_t)p->max_read_kb * 1024,
        .max_qd = p->max_qd,
        .idle_ns = (uint64_t)p->idle_ms * 1000000,
        .cache_bytes = (uint64_t)p->cache_kb * 1024,
        .window = p->window,
        .hit_ns = (uint64_t)p->hit_ns * (time_scale ? time_scale : 1),
    };
    return sra_config_check(c, err);
}
