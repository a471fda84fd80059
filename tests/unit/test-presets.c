/*
 * The named drives' table: well formed, found by name, and each with a source and at least
 * one published figure or a stated model source.
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>
#include "nand/presets.h"

static void test_table_well_formed(void)
{
    int n = 0;

    for (const FemuPreset *p = femu_presets; p->name; p++, n++) {
        g_auto(GStrv) items = g_strsplit(p->props, ",", -1);
        g_assert_true(femu_preset_find(p->name) == p);
        g_assert_nonnull(strstr(femu_preset_names(), p->name));
        g_assert_true(!strcmp(p->kind, "blackbox") || !strcmp(p->kind, "zns"));
        g_assert_cmpuint(strlen(p->what), >, 0);
        g_assert_cmpuint(strlen(p->source), >, 0);
        for (char **item = items; *item; item++) {
            g_auto(GStrv) kv = g_strsplit(*item, "=", 2);
            g_assert_nonnull(kv[1]);
            g_assert_cmpuint(strlen(kv[0]), >, 0);
            g_assert_cmpuint(strlen(kv[1]), >, 0);
            /* a key once only */
            for (char **other = item + 1; *other; other++) {
                g_assert_false(g_str_has_prefix(*other, kv[0]) && (*other)[strlen(kv[0])] == '=');
            }
        }
    }
    g_assert_cmpint(n, >=, 3);
    g_assert_null(femu_preset_find("none"));
    g_assert_null(femu_preset_find(NULL));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/presets/table", test_table_well_formed);
    return g_test_run();
}
