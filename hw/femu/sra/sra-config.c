/*
 * The sra_* properties; see sra-config.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/units.h"
#include "qemu/timer.h"
#include "sra-config.h"

const Property femu_sra_props[] = {
    DEFINE_PROP_BOOL("sra", FemuSraParams, on, false),
    DEFINE_PROP_UINT32("sra_streams", FemuSraParams, streams, 4),
    DEFINE_PROP_UINT32("sra_ramp", FemuSraParams, ramp, 4),
    DEFINE_PROP_UINT32("sra_max_read_kb", FemuSraParams, max_read_kb, 64),
    DEFINE_PROP_UINT32("sra_max_qd", FemuSraParams, max_qd, 8),
    DEFINE_PROP_UINT32("sra_idle_ms", FemuSraParams, idle_ms, 100),
    DEFINE_PROP_UINT32("sra_cache_kb", FemuSraParams, cache_kb, 4096),
    DEFINE_PROP_UINT32("sra_window", FemuSraParams, window, 32),
    DEFINE_PROP_UINT32("sra_hit_ns", FemuSraParams, hit_ns, 1000),
};
const size_t femu_sra_nr_props = ARRAY_SIZE(femu_sra_props);

bool femu_sra_config(const FemuSraParams *p, uint64_t page_bytes, uint32_t time_scale,
                     SraConfig *c, Error **errp)
{
    g_autofree char *err = NULL;

    *c = (SraConfig){
        .page_bytes = page_bytes,
        .streams = p->streams,
        .ramp = p->ramp,
        .max_read_bytes = (uint64_t)p->max_read_kb * KiB,
        .max_qd = p->max_qd,
        .idle_ns = (uint64_t)p->idle_ms * SCALE_MS,
        .cache_bytes = (uint64_t)p->cache_kb * KiB,
        .window = p->window,
        .hit_ns = (uint64_t)p->hit_ns * MAX(time_scale, 1),
    };
    if (!sra_config_check(c, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}
