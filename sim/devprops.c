/*
 * The drive description from -device femu properties; see devprops.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include <glib.h>

#include "devprops.h"
#include "media/layout.h"
#include "nand/presets.h"

typedef enum PropType { PT_U8, PT_U32, PT_I32, PT_U64, PT_I64, PT_BOOL, PT_STR, PT_SIZE } PropType;

typedef struct PropDesc {
    const char *name;
    PropType type;
    size_t offset;              /* in SimParams */
    int64_t def;                /* strings: always NULL */
} PropDesc;

#define DEF_U8(d) (d)
#define DEF_U32(d) (d)
#define DEF_I32(d) (d)
#define DEF_U64(d) (d)
#define DEF_I64(d) (d)
#define DEF_BOOL(d) (d)
#define DEF_SIZE(d) (d)
#define DEF_STR(d) 0
#define ITEM(T, name, member, def) { name, PT_##T, offsetof(SimParams, member), DEF_##T(def) },
/* one expansion per place the lists' structs sit in SimParams */
#define P_TOP(S, T, name, field, def) ITEM(T, name, field, def)
#define P_FLASH(S, T, name, field, def) ITEM(T, name, flash.field, def)
#define P_SRA(S, T, name, field, def) ITEM(T, name, sra.field, def)
#define P_FRONTEND(S, T, name, field, def) ITEM(T, name, frontend_cfg.field, def)
#define P_BBSSD(S, T, name, field, def) ITEM(T, name, bbssd.field, def)
#define P_ZNS(S, T, name, field, def) ITEM(T, name, zns.field, def)
#define P_FDP(S, T, name, field, def) ITEM(T, name, fdp.field, def)
#define P_OC(S, T, name, field, def) ITEM(T, name, oc.field, def)

static const PropDesc props[] = {
    FEMU_LAYOUT_PROPS(P_TOP, SimParams)
    FEMU_FRONTEND_PROPS(P_FRONTEND, FemuFrontendConfig)
    FEMU_FLASH_PROPS(P_FLASH, FemuFlashParams)
    FEMU_SRA_PROPS(P_SRA, FemuSraParams)
    BBSSD_PROPS(P_BBSSD, BbssdParams)
    ZNS_PROPS(P_ZNS, ZnsParams)
    FDP_PROPS(P_FDP, FdpParams)
    OCSSD_PROPS(P_OC, OcParams)
    ITEM(U8, "lba_index", lba_index, 0)
};

/* The QEMU device's properties of the host side: nothing to model here. */
static const char *const host_only[] = {
    "serial", "queues", "entries", "aerl", "elpe", "poll_idle_us", "dataplane",
    "plp_fail_interval_ms", "plp_fail_prob", "plp_fail_seed", "x-crash-at", "memdev",
    "id", "bus", "addr", "multifunction", "romfile", "rombar", NULL,
};

static const PropDesc *prop_find(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(props); i++) {
        if (!strcmp(props[i].name, name)) {
            return &props[i];
        }
    }
    return NULL;
}

static void *field(SimParams *p, const PropDesc *d)
{
    return (uint8_t *)p + d->offset;
}

static void prop_set_default(SimParams *p, const PropDesc *d)
{
    void *f = field(p, d);

    switch (d->type) {
    case PT_U8:
        *(uint8_t *)f = d->def;
        break;
    case PT_U32:
        *(uint32_t *)f = d->def;
        break;
    case PT_I32:
        *(int32_t *)f = d->def;
        break;
    case PT_U64:
    case PT_SIZE:
        *(uint64_t *)f = d->def;
        break;
    case PT_I64:
        *(int64_t *)f = d->def;
        break;
    case PT_BOOL:
        *(bool *)f = d->def;
        break;
    case PT_STR:
        g_free(*(char **)f);
        *(char **)f = NULL;
        break;
    }
}

SimParams *sim_params_new(void)
{
    SimParams *p = g_new0(SimParams, 1);

    for (size_t i = 0; i < G_N_ELEMENTS(props); i++) {
        prop_set_default(p, &props[i]);
    }
    return p;
}

void sim_params_free(SimParams *p)
{
    if (!p) {
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(props); i++) {
        if (props[i].type == PT_STR) {
            g_free(*(char **)field(p, &props[i]));
        }
    }
    g_free(p);
}

/* QEMU's size suffixes: k, M, G, T (powers of 1024), or bytes. */
static bool parse_size(const char *v, uint64_t *out)
{
    char *end;
    guint64 n = g_ascii_strtoull(v, &end, 0);
    int shift = 0;

    if (end == v) {
        return false;
    }
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    case 'b': case 'B': end++; break;
    }
    if (*end || (shift && n > (UINT64_MAX >> shift))) {
        return false;
    }
    *out = n << shift;
    return true;
}

static const char *type_name(PropType t)
{
    static const char *const names[] = {
        [PT_U8] = "0..255", [PT_U32] = "0..4294967295", [PT_I32] = "a 32-bit integer",
        [PT_U64] = "a 64-bit unsigned integer", [PT_I64] = "a 64-bit integer",
        [PT_BOOL] = "on or off", [PT_STR] = "text", [PT_SIZE] = "a size (k, M, G, T)",
    };
    return names[t];
}

static bool prop_set(SimParams *p, const PropDesc *d, const char *v, char **err)
{
    void *f = field(p, d);
    gint64 i;
    guint64 u;
    bool ok = true;

    switch (d->type) {
    case PT_U8:
    case PT_U32:
    case PT_U64:
        ok = g_ascii_string_to_unsigned(v, 10, 0, d->type == PT_U8 ? UINT8_MAX :
                                        d->type == PT_U32 ? UINT32_MAX : UINT64_MAX, &u,
                                        NULL);
        if (ok && d->type == PT_U8) {
            *(uint8_t *)f = u;
        } else if (ok && d->type == PT_U32) {
            *(uint32_t *)f = u;
        } else if (ok) {
            *(uint64_t *)f = u;
        }
        break;
    case PT_I32:
    case PT_I64:
        ok = g_ascii_string_to_signed(v, 10, d->type == PT_I32 ? INT32_MIN : INT64_MIN,
                                      d->type == PT_I32 ? INT32_MAX : INT64_MAX, &i, NULL);
        if (ok && d->type == PT_I32) {
            *(int32_t *)f = i;
        } else if (ok) {
            *(int64_t *)f = i;
        }
        break;
    case PT_SIZE:
        ok = parse_size(v, &u);
        if (ok) {
            *(uint64_t *)f = u;
        }
        break;
    case PT_BOOL:
        if (!strcmp(v, "on") || !strcmp(v, "true") || !strcmp(v, "yes")) {
            *(bool *)f = true;
        } else if (!strcmp(v, "off") || !strcmp(v, "false") || !strcmp(v, "no")) {
            *(bool *)f = false;
        } else {
            ok = false;
        }
        break;
    case PT_STR:
        g_free(*(char **)f);
        *(char **)f = g_strdup(v);
        break;
    }
    if (!ok) {
        *err = g_strdup_printf("%s='%s' is not valid: allowed %s", d->name, v,
                               type_name(d->type));
        return false;
    }
    if (!strcmp(d->name, "lba_index")) {
        p->lba_index_given = true;
    }
    return true;
}

static bool item_set(SimParams *p, const char *item, bool first, char **err)
{
    g_autofree char *name = NULL;
    const char *eq = strchr(item, '='), *value;
    const PropDesc *d;

    if (!eq) {
        if (first && !strcmp(item, "femu")) {
            return true;        /* "femu,k=v,..." as written after -device */
        }
        *err = g_strdup_printf("'%s' is not a property setting: write name=value", item);
        return false;
    }
    name = g_strstrip(g_strndup(item, eq - item));
    value = eq + 1;
    d = prop_find(name);
    if (d) {
        return prop_set(p, d, value, err);
    }
    for (size_t i = 0; host_only[i]; i++) {
        if (!strcmp(host_only[i], name)) {
            return true;
        }
    }
    *err = g_strdup_printf("'%s' is not a property of the femu device (femu-sim --help-dev "
                           "lists them)", name);
    return false;
}

bool sim_params_parse(SimParams *p, const char *text, char **err)
{
    g_autoptr(GString) item = g_string_new(NULL);
    bool first = true;

    for (const char *c = text;; c++) {
        if (*c == ',' && c[1] == ',') {
            g_string_append_c(item, ',');     /* QEMU's escape */
            c++;
            continue;
        }
        if (*c && *c != ',') {
            g_string_append_c(item, *c);
            continue;
        }
        g_strstrip(item->str);
        item->len = strlen(item->str);
        if (item->len && !item_set(p, item->str, first, err)) {
            return false;
        }
        first = false;
        g_string_truncate(item, 0);
        if (!*c) {
            return true;
        }
    }
}

bool sim_params_load(SimParams *p, const char *path, char **err)
{
    g_autofree char *text = NULL;
    g_autoptr(GError) gerr = NULL;
    g_auto(GStrv) lines = NULL;

    if (!g_file_get_contents(path, &text, NULL, &gerr)) {
        *err = g_strdup_printf("%s: %s", path, gerr->message);
        return false;
    }
    lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        char *hash = strchr(lines[i], '#');
        if (hash) {
            *hash = 0;
        }
        if (!sim_params_parse(p, lines[i], err)) {
            char *why = *err;
            *err = g_strdup_printf("%s:%u: %s", path, i + 1, why);
            g_free(why);
            return false;
        }
    }
    return true;
}

/* Whether the property holds another value than its default (the device's rule). */
static bool prop_changed(SimParams *p, const PropDesc *d)
{
    g_autofree SimParams *defaults = g_new0(SimParams, 1);

    prop_set_default(defaults, d);
    if (d->type == PT_STR) {
        return *(char **)field(p, d) != NULL;
    }
    return memcmp(field(p, d), field(defaults, d),
                  d->type == PT_U8 || d->type == PT_BOOL ? 1 :
                  d->type == PT_U32 || d->type == PT_I32 ? 4 : 8) != 0;
}

bool sim_params_finish(SimParams *p, char **err)
{
    const char *name = p->flash.flash_preset;
    const FemuPreset *preset;
    g_auto(GStrv) items = NULL;
    bool blocks_given;

    if (!name) {
        return true;
    }
    preset = femu_preset_find(name);
    if (!preset) {
        *err = g_strdup_printf("flash_preset='%s' is not known: allowed %s", name,
                               femu_preset_names());
        return false;
    }
    blocks_given = prop_changed(p, prop_find("blks_per_pl"));
    items = g_strsplit(preset->props, ",", -1);
    for (char **item = items; *item; item++) {
        g_auto(GStrv) kv = g_strsplit(*item, "=", 2);
        const PropDesc *d = prop_find(kv[0]);

        if (!d) {
            bool host = false;
            for (size_t i = 0; host_only[i]; i++) {
                host |= !strcmp(host_only[i], kv[0]);
            }
            if (host) {
                continue;
            }
            *err = g_strdup_printf("flash_preset=%s: '%s' is not a property", name, *item);
            return false;
        }
        /* given another value: that wins; so do blocks given, over the preset's OP */
        if (prop_changed(p, d) || (blocks_given && !strcmp(kv[0], "op_pcent"))) {
            continue;
        }
        if (!prop_set(p, d, kv[1] ? kv[1] : "", err)) {
            char *why = *err;
            *err = g_strdup_printf("flash_preset=%s: %s", name, why);
            g_free(why);
            return false;
        }
    }
    return true;
}

char *sim_params_describe(const SimParams *p)
{
    GString *s = g_string_new(NULL);

    for (size_t i = 0; i < G_N_ELEMENTS(props); i++) {
        const void *f = (const uint8_t *)p + props[i].offset;
        g_string_append_printf(s, "%s=", props[i].name);
        switch (props[i].type) {
        case PT_U8:
            g_string_append_printf(s, "%u", *(const uint8_t *)f);
            break;
        case PT_U32:
            g_string_append_printf(s, "%u", *(const uint32_t *)f);
            break;
        case PT_I32:
            g_string_append_printf(s, "%d", *(const int32_t *)f);
            break;
        case PT_U64:
        case PT_SIZE:
            g_string_append_printf(s, "%" PRIu64, *(const uint64_t *)f);
            break;
        case PT_I64:
            g_string_append_printf(s, "%" PRId64, *(const int64_t *)f);
            break;
        case PT_BOOL:
            g_string_append(s, *(const bool *)f ? "on" : "off");
            break;
        case PT_STR:
            g_string_append(s, *(char *const *)f ? *(char *const *)f : "");
            break;
        }
        g_string_append_c(s, '\n');
    }
    return g_string_free(s, false);
}
