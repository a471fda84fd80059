/* The nossd media model. SPDX-License-Identifier: GPL-2.0-or-later */
#include <glib.h>
#include "media/media.h"

static void test_completes_on_arrival(void)
{
    FemuMedia *m = femu_media_nossd_new();
    for (int op = FEMU_MEDIA_READ; op <= FEMU_MEDIA_WRITE_ZEROES; op++) {
        FemuMediaReq r = { .op = op, .nsid = 1, .offset = 77 * 512, .len = 4096,
                           .arrival_ns = 123456789 };
        g_assert_cmpuint(femu_media_submit(m, &r), ==, 123456789);
    }
    g_assert_cmpstr(m->ops->name, ==, "nossd");
    femu_media_destroy(m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/media/nossd", test_completes_on_arrival);
    return g_test_run();
}
