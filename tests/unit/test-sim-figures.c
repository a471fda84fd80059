/*
 * Unit tests of femu-sim's derived figures (sim/figures.c): rates and latency statistics
 * right at 16 TiB over 10^6 s of virtual time, where bytes x 10^9 passes 2^64 and sums of
 * squared latencies pass 2^53 and 2^64, and at the smallest magnitudes.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <math.h>

#include "figures.h"

#define TIB (1ull << 40)
#define MEGA_S 1000000000000000ull      /* 10^6 s in ns */

/* a and b agree to the double's precision (2^-52 of the larger) */
static void assert_close(double a, double b)
{
    g_assert_cmpfloat(fabs(a - b), <=, fmax(fabs(a), fabs(b)) * 0x1p-52);
}

static void test_rate_large(void)
{
    /* 16 TiB over 10^6 s: 2^44 / 10^6 bytes per second, exactly 17592186.044416 */
    assert_close(sim_per_second(16 * TIB, MEGA_S), 17592186.044416);
    /* ... as 4 KiB I/Os: 2^32 of them */
    assert_close(sim_per_second(16 * TIB / 4096, MEGA_S), 4294.967296);
    /* the case: 32 GiB in 183.6 s is 178.5 MiB/s (it printed 82.65) */
    assert_close(sim_per_second(32ull << 30, 183600000000ull), 187144544.48801744);
    /* the largest count in the shortest time */
    assert_close(sim_per_second(UINT64_MAX, 1), 18446744073709551615e9);
    /* 16 TiB in 1 ns, and one byte over 10^6 s */
    assert_close(sim_per_second(16 * TIB, 1), 16 * TIB * 1e9);
    assert_close(sim_per_second(1, MEGA_S), 1e-6);
}

static void test_rate_small(void)
{
    g_assert_cmpfloat(sim_per_second(1, 1), ==, 1e9);
    assert_close(sim_per_second(1, 3), 1e9 / 3);
    assert_close(sim_per_second(4096, 7), 4096e9 / 7);
    g_assert_cmpfloat(sim_per_second(0, 5), ==, 0);
    g_assert_cmpfloat(sim_per_second(5, 0), ==, 0);
    g_assert_cmpfloat(sim_per_second(0, 0), ==, 0);
}

static void test_mean(void)
{
    /* a latency sum of 2^100 ns over 2^20 I/Os */
    g_assert_cmpfloat(sim_mean((SimSum)1 << 100, 1 << 20), ==, 0x1p80);
    /* 2^32 I/Os of 10^6 s each minus one ns: the mean keeps the ns */
    g_assert_cmpfloat(sim_mean((SimSum)(MEGA_S - 1) << 32, 1ull << 32), ==, MEGA_S - 1);
    assert_close(sim_mean(10, 4), 2.5);
    assert_close(sim_mean(1, 3), 1.0 / 3);
    g_assert_cmpfloat(sim_mean(7, 0), ==, 0);
}

static void test_lat_large(void)
{
    SimLatStats s = { 0 };

    /* two latencies near 10^6 s, 2 ns apart: mean between them, deviation 1 ns */
    sim_lat_record(&s, MEGA_S);
    sim_lat_record(&s, MEGA_S + 2);
    g_assert_cmpfloat(sim_lat_mean(&s), ==, MEGA_S + 1);
    g_assert_cmpfloat(sim_lat_stddev(&s), ==, 1);
    g_assert_cmpuint(s.min, ==, MEGA_S);
    g_assert_cmpuint(s.max, ==, MEGA_S + 2);

    /* 10^7 latencies of 2^40 and 2^40 + 1 ns in turn: mean 2^40 + 1/2, deviation 1/2 */
    s = (SimLatStats){ 0 };
    for (uint32_t i = 0; i < 10000000; i++) {
        sim_lat_record(&s, (1ull << 40) + (i & 1));
    }
    g_assert_cmpfloat(sim_lat_mean(&s), ==, 0x1p40 + 0.5);
    assert_close(sim_lat_stddev(&s), 0.5);

    /* 3 x 10^6 latencies of 10^12 + (0, 1, 2): deviation sqrt(2/3) */
    s = (SimLatStats){ 0 };
    for (uint32_t i = 0; i < 3000000; i++) {
        sim_lat_record(&s, 1000000000000ull + i % 3);
    }
    g_assert_cmpfloat(sim_lat_mean(&s), ==, 1000000000001.0);
    g_assert_cmpfloat(fabs(sim_lat_stddev(&s) - sqrt(2.0 / 3)), <=, 1e-8);
}

static void test_lat_small(void)
{
    SimLatStats s = { 0 };

    g_assert_cmpfloat(sim_lat_mean(&s), ==, 0);
    g_assert_cmpfloat(sim_lat_stddev(&s), ==, 0);
    sim_lat_record(&s, 0);
    g_assert_cmpfloat(sim_lat_mean(&s), ==, 0);
    g_assert_cmpfloat(sim_lat_stddev(&s), ==, 0);
    g_assert_cmpuint(s.n, ==, 1);
    sim_lat_record(&s, 1);
    sim_lat_record(&s, 2);
    g_assert_cmpfloat(sim_lat_mean(&s), ==, 1);
    assert_close(sim_lat_stddev(&s), sqrt(2.0 / 3));
    g_assert_cmpuint(s.min, ==, 0);
    g_assert_cmpuint(s.max, ==, 2);
    /* one latency: no deviation, whatever its size */
    s = (SimLatStats){ 0 };
    sim_lat_record(&s, UINT64_MAX);
    g_assert_cmpfloat(sim_lat_mean(&s), ==, 0x1p64);
    g_assert_cmpfloat(sim_lat_stddev(&s), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/sim-figures/rate-large", test_rate_large);
    g_test_add_func("/sim-figures/rate-small", test_rate_small);
    g_test_add_func("/sim-figures/mean", test_mean);
    g_test_add_func("/sim-figures/lat-large", test_lat_large);
    g_test_add_func("/sim-figures/lat-small", test_lat_small);
    return g_test_run();
}
