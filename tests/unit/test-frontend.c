/*
 * The controller's front end (media/frontend.c): firmware cores and the PCIe link.
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>
#include "media/frontend.h"

static FemuFrontend *fe(uint32_t gen, uint32_t lanes, uint32_t cores, uint64_t fw_ns)
{
    FemuFrontendConfig c = { .pcie_gen = gen, .pcie_lanes = lanes, .fw_cores = cores,
                             .fw_cmd_ns = fw_ns, .time_scale = 1 };
    char *err = NULL;
    FemuFrontend *f = femu_frontend_new(&c, &err);
    g_assert_null(err);
    return f;
}

/* Payload rates per lane: 8b/10b for generations 1-2, 128b/130b after. */
static void test_lane_rates(void)
{
    g_assert_cmpuint(femu_pcie_lane_mbps(1), ==, 250);
    g_assert_cmpuint(femu_pcie_lane_mbps(3), ==, 985);
    g_assert_cmpuint(femu_pcie_lane_mbps(4), ==, 1969);
    g_assert_cmpuint(femu_pcie_lane_mbps(6), ==, 0);
}

/* Gen3 x4 (3940 MB/s): 128 KiB in 33.3 us; two reads queue, a write goes the other way. */
static void test_link(void)
{
    FemuFrontend *f = fe(3, 4, 0, 0);
    uint64_t x = femu_frontend_xfer_ns(f, 131072);

    g_assert_cmpuint(x, ==, (131072 * 1000 + 3939) / 3940);
    g_assert_cmpuint(femu_frontend_transfer(f, true, 131072, 0), ==, x);
    g_assert_cmpuint(femu_frontend_transfer(f, true, 131072, 0), ==, 2 * x);
    g_assert_cmpuint(femu_frontend_transfer(f, false, 131072, 0), ==, x);
    /* an earlier transfer takes a gap left before a later one */
    g_assert_cmpuint(femu_frontend_transfer(f, false, 4096, 10 * x), ==,
                     10 * x + femu_frontend_xfer_ns(f, 4096));
    g_assert_cmpuint(femu_frontend_transfer(f, false, 4096, 2 * x), ==,
                     2 * x + femu_frontend_xfer_ns(f, 4096));
    /* no firmware model: a command costs nothing */
    g_assert_cmpuint(femu_frontend_command(f, 5), ==, 5);
    g_assert_cmpuint(femu_frontend_stats(f)->bytes_to_host, ==, 2 * 131072);
    g_assert_cmpuint(femu_frontend_stats(f)->bytes_to_device, ==, 131072 + 2 * 4096);
    femu_frontend_free(f);
}

/* Firmware cores: each command takes the earliest free core for fw_cmd_ns. */
static void test_cores(void)
{
    FemuFrontend *f = fe(0, 4, 2, 1000);

    g_assert_cmpuint(femu_frontend_command(f, 0), ==, 1000);
    g_assert_cmpuint(femu_frontend_command(f, 0), ==, 1000);
    g_assert_cmpuint(femu_frontend_command(f, 0), ==, 2000);
    g_assert_cmpuint(femu_frontend_command(f, 5000), ==, 6000);
    g_assert_cmpuint(femu_frontend_stats(f)->fw_busy_ns, ==, 4000);
    /* no link model: data crosses at once */
    g_assert_cmpuint(femu_frontend_transfer(f, true, 1 << 20, 7), ==, 7);
    femu_frontend_free(f);
}

/* Neither part configured: no front end at all; bad values refused, naming the field. */
static void test_config(void)
{
    FemuFrontendConfig c = { .pcie_lanes = 4, .time_scale = 1 };
    struct { FemuFrontendConfig c; const char *name; } bad[] = {
        { { .pcie_gen = 6, .pcie_lanes = 4, .time_scale = 1 }, "pcie_gen=6" },
        { { .pcie_gen = 3, .pcie_lanes = 3, .time_scale = 1 }, "pcie_lanes=3" },
        { { .pcie_gen = 3, .pcie_lanes = 32, .time_scale = 1 }, "pcie_lanes=32" },
        { { .pcie_lanes = 0, .time_scale = 1 }, "pcie_lanes=0" },   /* even without a link */
        { { .fw_cores = 65, .pcie_lanes = 4, .time_scale = 1 }, "fw_cores=65" },
        { { .fw_cores = 1, .fw_cmd_ns = 1000000001, .pcie_lanes = 4, .time_scale = 1 },
          "fw_cmd_ns" },
    };
    char *err = NULL;

    g_assert_null(femu_frontend_new(&c, &err));
    g_assert_null(err);
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_null(femu_frontend_new(&bad[i].c, &err));
        g_assert_nonnull(strstr(err, bad[i].name));
        g_free(err);
    }
}

/* time_scale stretches both. */
static void test_scale(void)
{
    FemuFrontendConfig c = { .pcie_gen = 1, .pcie_lanes = 1, .fw_cores = 1, .fw_cmd_ns = 10,
                             .time_scale = 1000 };
    char *err = NULL;
    FemuFrontend *f = femu_frontend_new(&c, &err);

    g_assert_cmpuint(femu_frontend_command(f, 0), ==, 10000);
    g_assert_cmpuint(femu_frontend_xfer_ns(f, 250), ==, 1000000);
    femu_frontend_free(f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/frontend/lane-rates", test_lane_rates);
    g_test_add_func("/frontend/link", test_link);
    g_test_add_func("/frontend/cores", test_cores);
    g_test_add_func("/frontend/config", test_config);
    g_test_add_func("/frontend/scale", test_scale);
    return g_test_run();
}
