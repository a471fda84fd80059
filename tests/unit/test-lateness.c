/* Unit tests of the lateness histogram. SPDX-License-Identifier: GPL-2.0-or-later */
#include <glib.h>
#include "stats/lateness.h"

static void test_empty(void)
{
    static LatenessHist h;
    lateness_reset(&h);
    g_assert_cmpuint(lateness_quantile(&h, 0.5), ==, 0);
    g_assert_cmpuint(h.max_ns, ==, 0);
}

static void test_small_values_exact(void)
{
    static LatenessHist h;
    lateness_reset(&h);
    for (uint64_t v = 0; v < 20; v++) {
        lateness_record(&h, v);
    }
    g_assert_cmpuint(lateness_quantile(&h, 0.5), ==, 10);
    g_assert_cmpuint(lateness_quantile(&h, 1.0), ==, 19);
    g_assert_cmpuint(h.max_ns, ==, 19);
}

/* Uniform 1..1,000,000: quantiles within the histogram's ~3% resolution. */
static void test_uniform_quantiles(void)
{
    static LatenessHist h;
    lateness_reset(&h);
    for (uint64_t v = 1; v <= 1000000; v++) {
        lateness_record(&h, v);
    }
    double p50 = lateness_quantile(&h, 0.5), p99 = lateness_quantile(&h, 0.99);
    g_assert_cmpfloat(p50, >=, 500000 * 0.97);
    g_assert_cmpfloat(p50, <=, 500000 * 1.04);
    g_assert_cmpfloat(p99, >=, 990000 * 0.97);
    g_assert_cmpfloat(p99, <=, 990000 * 1.04);
    g_assert_cmpuint(h.max_ns, ==, 1000000);
    g_assert_cmpuint(h.count, ==, 1000000);
}

/* A rare huge outlier shows in max and not in p50. */
static void test_outlier(void)
{
    static LatenessHist h;
    lateness_reset(&h);
    for (int i = 0; i < 999; i++) {
        lateness_record(&h, 1000);
    }
    lateness_record(&h, 5000000000ULL);
    g_assert_cmpuint(lateness_quantile(&h, 0.5), <=, 1031);
    g_assert_cmpuint(lateness_quantile(&h, 0.5), >=, 1000);
    g_assert_cmpuint(h.max_ns, ==, 5000000000ULL);
    g_assert_cmpuint(lateness_quantile(&h, 1.0), ==, 5000000000ULL);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/lateness/empty", test_empty);
    g_test_add_func("/lateness/small-exact", test_small_values_exact);
    g_test_add_func("/lateness/uniform", test_uniform_quantiles);
    g_test_add_func("/lateness/outlier", test_outlier);
    return g_test_run();
}
