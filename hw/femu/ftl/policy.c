/*
 * The policies' registry and their properties' parsing; see policy.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "policy.h"

#include <glib.h>
#include <string.h>

#define MAX_POLICIES 32

static const struct {
    const char *property, *fallback, *what;
} kinds[FTL_POLICY_KINDS] = {
    [FTL_VICTIM] = { "gc_policy", "greedy", "victim policy" },
    [FTL_PACING] = { "gc_pacing", "proportional", "GC pacing" },
    [FTL_STREAM] = { "streams", "host-gc", "stream assignment" },
};

static const FtlPolicy *policies[FTL_POLICY_KINDS][MAX_POLICIES];
static unsigned npolicies[FTL_POLICY_KINDS];

void ftl_policy_register(FtlPolicyKind kind, const FtlPolicy *p)
{
    g_assert(kind < FTL_POLICY_KINDS && npolicies[kind] < MAX_POLICIES &&
             !ftl_policy_find(kind, p->name));
    policies[kind][npolicies[kind]++] = p;
}

const FtlPolicy *ftl_policy_find(FtlPolicyKind kind, const char *name)
{
    for (unsigned i = 0; i < npolicies[kind]; i++) {
        if (!strcmp(policies[kind][i]->name, name)) {
            return policies[kind][i];
        }
    }
    return NULL;
}

static gint by_name(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *ftl_policy_names(FtlPolicyKind kind)
{
    const char *names[MAX_POLICIES + 1] = { NULL };

    for (unsigned i = 0; i < npolicies[kind]; i++) {
        names[i] = policies[kind][i]->name;
    }
    qsort(names, npolicies[kind], sizeof(names[0]), by_name);
    return g_strjoinv(", ", (char **)names);
}

static unsigned nparams(const FtlPolicy *p)
{
    unsigned n = 0;

    while (n < FTL_POLICY_MAX_PARAMS && p->params[n].name) {
        n++;
    }
    return n;
}

static FtlPolicyChoice with_defaults(const FtlPolicy *p)
{
    FtlPolicyChoice c = { .policy = p };

    for (unsigned i = 0; i < nparams(p); i++) {
        c.param[i] = p->params[i].def;
    }
    return c;
}

FtlPolicyChoice ftl_policy_default(FtlPolicyKind kind)
{
    const FtlPolicy *p = ftl_policy_find(kind, kinds[kind].fallback);

    g_assert(p);
    return with_defaults(p);
}

/* NAME=VALUE of policy p into c; false and *err when it is not one of p's, or out of range. */
static bool parse_param(const char *prop, const FtlPolicy *p, const char *item,
                        FtlPolicyChoice *c, char **err)
{
    const char *eq = strchr(item, '=');
    unsigned n = nparams(p);
    guint64 v;

    for (unsigned i = 0; eq && i < n; i++) {
        const FtlPolicyParam *pp = &p->params[i];
        if (strlen(pp->name) != (size_t)(eq - item) || strncmp(pp->name, item, eq - item)) {
            continue;
        }
        if (!g_ascii_string_to_unsigned(eq + 1, 10, pp->min, pp->max, &v, NULL)) {
            *err = g_strdup_printf("%s=%s: %s=%s is out of range: allowed %u..%u (%s)", prop,
                                   p->name, pp->name, eq + 1, pp->min, pp->max, pp->about);
            return false;
        }
        c->param[i] = v;
        return true;
    }
    if (!n) {
        *err = g_strdup_printf("%s=%s takes no parameters (given '%s')", prop, p->name, item);
    } else {
        GString *names = g_string_new(NULL);
        for (unsigned i = 0; i < n; i++) {
            g_string_append_printf(names, "%s%s=%u..%u", i ? ", " : "", p->params[i].name,
                                   p->params[i].min, p->params[i].max);
        }
        *err = g_strdup_printf("%s=%s: '%s' is not one of its parameters (%s)", prop, p->name,
                               item, names->str);
        g_string_free(names, true);
    }
    return false;
}

bool ftl_policy_parse(FtlPolicyKind kind, const char *spec, FtlPolicyChoice *c, char **err)
{
    g_auto(GStrv) items = g_strsplit(spec && *spec ? spec : kinds[kind].fallback, ":", -1);
    const FtlPolicy *p = ftl_policy_find(kind, items[0]);

    if (!p) {
        g_autofree char *names = ftl_policy_names(kind);
        *err = g_strdup_printf("%s=%s is not a %s: allowed %s", kinds[kind].property, items[0],
                               kinds[kind].what, names);
        return false;
    }
    *c = with_defaults(p);
    for (unsigned i = 1; items[i]; i++) {
        if (!parse_param(kinds[kind].property, p, items[i], c, err)) {
            return false;
        }
    }
    return true;
}

uint32_t ftl_policy_param(const FtlPolicyChoice *c, const char *name, uint32_t def)
{
    for (unsigned i = 0; c->policy && i < nparams(c->policy); i++) {
        if (!strcmp(c->policy->params[i].name, name)) {
            return c->param[i];
        }
    }
    return def;
}
