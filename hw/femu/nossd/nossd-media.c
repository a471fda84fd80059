/*
 * nossd: a namespace with no media model, the fastest path.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "../media/media.h"

#include <glib.h>

static uint64_t nossd_submit(FemuMedia *m, const FemuMediaReq *req)
{
    (void)m;
    return req->arrival_ns;
}

static void nossd_destroy(FemuMedia *m)
{
    g_free(m);
}

static const FemuMediaOps nossd_ops = {
    .name = "nossd",
    .submit = nossd_submit,
    .destroy = nossd_destroy,
};

FemuMedia *femu_media_nossd_new(void)
{
    FemuMedia *m = g_new0(FemuMedia, 1);
    m->ops = &nossd_ops;
    return m;
}
