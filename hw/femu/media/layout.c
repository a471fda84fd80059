/*
 * Namespace sizes from the properties; see layout.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <inttypes.h>

#include <glib.h>

#include "layout.h"

#define MIB (1024ULL * 1024)

/*
 * Sizes in MiB, checked in 64 bits against the limit of devsz_mb. Derived even splits are
 * whole MiB, so namespaces start on an LBA and a flash page boundary.
 */
bool femu_layout_ns_sizes(const char *ns_sizes_mb, uint32_t count, uint32_t devsz_mb,
                          uint64_t total, uint64_t *bytes, char **err)
{
    g_auto(GStrv) parts = NULL;
    uint64_t sum = 0;

    if (!ns_sizes_mb) {
        uint64_t each = total / count / MIB * MIB;
        for (uint32_t i = 0; i < count; i++) {
            bytes[i] = each;
        }
        return true;
    }
    parts = g_strsplit_set(ns_sizes_mb, ",:", -1);
    if (g_strv_length(parts) != count) {
        *err = g_strdup_printf("ns_sizes_mb='%s' must list one size in MiB per namespace "
                               "(%u)", ns_sizes_mb, count);
        return false;
    }
    for (uint32_t i = 0; i < count; i++) {
        guint64 mb;
        if (!g_ascii_string_to_unsigned(g_strstrip(parts[i]), 10, 1, FEMU_MAX_DEVSZ_MB, &mb,
                                        NULL)) {
            *err = g_strdup_printf("ns_sizes_mb='%s': '%s' is not a size in MiB (1..%u)",
                                   ns_sizes_mb, parts[i], FEMU_MAX_DEVSZ_MB);
            return false;
        }
        bytes[i] = mb * MIB;
        sum += mb;
    }
    if (devsz_mb && sum != devsz_mb) {
        *err = g_strdup_printf("ns_sizes_mb='%s' adds up to %" PRIu64 " MiB, not "
                               "devsz_mb=%u", ns_sizes_mb, sum, devsz_mb);
        return false;
    }
    if (sum > FEMU_MAX_DEVSZ_MB) {
        *err = g_strdup_printf("ns_sizes_mb='%s' adds up to %" PRIu64 " MiB: allowed at "
                               "most %u (64 TiB) in all", ns_sizes_mb, sum,
                               FEMU_MAX_DEVSZ_MB);
        return false;
    }
    return true;
}

bool femu_layout_size_namespaces(const char *ns_sizes_mb, uint32_t count, uint32_t devsz_mb,
                                 uint64_t total, bool derived, FemuLayoutSizeNsFn *size_ns,
                                 void *opaque, FemuLayoutSizes *s, char **err)
{
    if (!femu_layout_ns_sizes(ns_sizes_mb, count, devsz_mb, total, s->bytes, err)) {
        return false;
    }
    s->data_bytes = s->meta_bytes = 0;
    for (uint32_t i = 0; i < count; i++) {
        s->meta[i] = 0;
        if (!size_ns(opaque, i + 1, &s->bytes[i], derived, &s->meta[i], err)) {
            return false;
        }
        s->meta_bytes += s->meta[i];
        s->data_bytes += s->bytes[i];
    }
    return true;
}

void femu_layout_media_plan(uint32_t count, const void *const *kinds, const bool *one_media,
                            const uint64_t *bytes, FemuMediaPlan *plan)
{
    uint64_t offset = 0;

    for (uint32_t i = 0; i < count; offset += bytes[i], i++) {
        uint64_t before = 0;    /* its kind's bytes before it in their shared model */

        plan->owner[i] = i;
        plan->model_bytes[i] = bytes[i];
        for (uint32_t j = 0; one_media[i] && j < i; j++) {
            if (kinds[j] == kinds[i]) {
                plan->owner[i] = MIN(plan->owner[i], j);
                before += bytes[j];
            }
        }
        plan->model_bytes[plan->owner[i]] += plan->owner[i] != i ? bytes[i] : 0;
        plan->media_base[i] = offset - before;
    }
}
