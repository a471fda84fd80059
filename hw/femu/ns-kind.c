/*
 * The registry of namespace kinds; see ns-kind.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "ns-kind.h"

#define FEMU_MAX_KINDS 8

static struct {
    const FemuNsKind *kind;
    size_t params_offset;
} kinds[FEMU_MAX_KINDS];
static uint32_t nr_kinds;

void femu_ns_kind_register(const FemuNsKind *kind)
{
    uint32_t i;

    assert(nr_kinds < FEMU_MAX_KINDS);
    /* keep femu_mode order so that messages list the modes as FEMU numbers them */
    for (i = nr_kinds; i > 0 && kinds[i - 1].kind->femu_mode > kind->femu_mode; i--) {
        kinds[i] = kinds[i - 1];
    }
    kinds[i].kind = kind;
    kinds[i].params_offset = 0;
    nr_kinds++;
}

const FemuNsKind *femu_ns_kind_by_mode(uint32_t femu_mode)
{
    for (uint32_t i = 0; i < nr_kinds; i++) {
        if (kinds[i].kind->femu_mode == femu_mode) {
            return kinds[i].kind;
        }
    }
    return NULL;
}

const FemuNsKind *femu_ns_kind_by_name(const char *name)
{
    for (uint32_t i = 0; i < nr_kinds; i++) {
        if (!strcmp(kinds[i].kind->name, name)) {
            return kinds[i].kind;
        }
    }
    return NULL;
}

char *femu_ns_kind_list(bool with_modes, bool read_ahead_only)
{
    GString *s = g_string_new(NULL);

    for (uint32_t i = 0; i < nr_kinds; i++) {
        if (read_ahead_only && !kinds[i].kind->read_ahead) {
            continue;
        }
        if (s->len) {
            g_string_append(s, ", ");
        }
        if (with_modes) {
            g_string_append_printf(s, "%u (%s)", kinds[i].kind->femu_mode, kinds[i].kind->name);
        } else {
            g_string_append(s, kinds[i].kind->name);
        }
    }
    return g_string_free(s, false);
}

size_t femu_ns_kind_layout(size_t base)
{
    size_t off = ROUND_UP(base, 16);

    for (uint32_t i = 0; i < nr_kinds; i++) {
        kinds[i].params_offset = off;
        off += ROUND_UP(kinds[i].kind->params_size, 16);
    }
    return off;
}

void *femu_ns_kind_params(FemuCtrl *n, const FemuNsKind *kind)
{
    for (uint32_t i = 0; i < nr_kinds; i++) {
        if (kinds[i].kind == kind) {
            assert(kinds[i].params_offset);
            return (uint8_t *)n + kinds[i].params_offset;
        }
    }
    g_assert_not_reached();
}

Property *femu_ns_kind_props(size_t *count)
{
    size_t total = 0, k = 0;
    Property *props;

    for (uint32_t i = 0; i < nr_kinds; i++) {
        total += kinds[i].kind->nr_props;
    }
    props = g_new0(Property, total);
    for (uint32_t i = 0; i < nr_kinds; i++) {
        for (size_t j = 0; j < kinds[i].kind->nr_props; j++) {
            props[k] = kinds[i].kind->props[j];
            props[k].offset += kinds[i].params_offset;
            k++;
        }
    }
    *count = total;
    return props;
}

void femu_ns_kind_describe_props(ObjectClass *oc)
{
    for (uint32_t i = 0; i < nr_kinds; i++) {
        for (const char *const (*h)[2] = kinds[i].kind->prop_help; h && (*h)[0]; h++) {
            object_class_property_set_description(oc, (*h)[0], (*h)[1]);
        }
    }
}
