/*
 * A namespace's side of its media model, as the QEMU device and femu-sim both keep it:
 * which model times it, where its LBA 0 is in that model, where its writes are placed, and
 * the submission of its media requests through the front end (link and firmware).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_MEDIA_NS_MEDIA_H
#define FEMU_MEDIA_NS_MEDIA_H

#include <stdint.h>

#include "media.h"
#include "frontend.h"
#include "../stats/io-counters.h"

typedef struct FemuNsMedia {
    FemuMedia *media;           /* the model that times this namespace */
    FemuFrontend *frontend;     /* the controller's, or NULL: no link or firmware time */
    uint64_t media_base;        /* subtracted from backend offsets to address the model */
    uint64_t media_end;         /* where the namespace ends, as an offset in the model */
    uint32_t place_rg, place_ruh;   /* where the model puts the next write (fdp); the kind's */
} FemuNsMedia;

/*
 * The namespace of `bytes` at backend_offset is timed by media, whose offset 0 is at
 * media_base in the backend.
 */
void femu_ns_media_attach(FemuNsMedia *nm, FemuMedia *media, FemuFrontend *frontend,
                          uint64_t media_base, uint64_t backend_offset, uint64_t bytes);

/* A backend offset as an offset in the namespace's model. */
static inline uint64_t femu_ns_media_offset(const FemuNsMedia *nm, uint64_t backend_offset)
{
    return backend_offset - (backend_offset < nm->media_base ? backend_offset : nm->media_base);
}

/*
 * A media request of the namespace, r->offset a backend offset: the model's offset, the
 * namespace's end and the placement filled in, the link crossed (a write's data before
 * the model sees it, a read's after), its reads counted in io. When it completes.
 */
uint64_t femu_ns_media_submit_req(FemuNsMedia *nm, IoCounters *io, FemuMediaReq *r);

#endif
