/* SMART data-unit arithmetic. SPDX-License-Identifier: GPL-2.0-or-later */
#include <glib.h>
#include "stats/io-counters.h"

static void test_data_units_round_up(void)
{
    g_assert_cmpuint(io_counters_data_units(0), ==, 0);
    g_assert_cmpuint(io_counters_data_units(1), ==, 1);
    g_assert_cmpuint(io_counters_data_units(512), ==, 1);
    g_assert_cmpuint(io_counters_data_units(512 * 1000), ==, 1);
    g_assert_cmpuint(io_counters_data_units(512 * 1000 + 1), ==, 2);
    g_assert_cmpuint(io_counters_data_units(512 * 1001), ==, 2);
    /* 8 MiB = 16384 units of 512 bytes -> 17 thousands, rounded up */
    g_assert_cmpuint(io_counters_data_units(8 << 20), ==, 17);
}

static void test_add(void)
{
    IoCounters a = { 1, 2, 3, 4, 5, 6 }, b = { 10, 20, 30, 40, 50, 60 };
    io_counters_add(&a, &b);
    g_assert_cmpuint(a.bytes_read, ==, 11);
    g_assert_cmpuint(a.bytes_written, ==, 22);
    g_assert_cmpuint(a.read_cmds, ==, 33);
    g_assert_cmpuint(a.write_cmds, ==, 44);
    g_assert_cmpuint(a.media_reads, ==, 55);
    g_assert_cmpuint(a.media_read_ns, ==, 66);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/io-counters/data-units", test_data_units_round_up);
    g_test_add_func("/io-counters/add", test_add);
    return g_test_run();
}
