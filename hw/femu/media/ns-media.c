/*
 * A namespace's media requests; see ns-media.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "ns-media.h"

void femu_ns_media_attach(FemuNsMedia *nm, FemuMedia *media, FemuFrontend *frontend,
                          uint64_t media_base, uint64_t backend_offset, uint64_t bytes)
{
    nm->media = media;
    nm->frontend = frontend;
    nm->media_base = media_base;
    nm->media_end = femu_ns_media_offset(nm, backend_offset) + bytes;
}

uint64_t femu_ns_media_submit_req(FemuNsMedia *nm, IoCounters *io, FemuMediaReq *r)
{
    uint64_t t;

    r->offset = femu_ns_media_offset(nm, r->offset);
    r->ns_end = nm->media_end;
    r->rg = nm->place_rg;
    r->ruh = nm->place_ruh;
    t = femu_frontend_media_submit(nm->frontend, nm->media, r);
    if (r->op == FEMU_MEDIA_READ) {
        io->media_reads++;
        io->media_read_ns += t - MIN(t, r->arrival_ns);
    }
    return t;
}
