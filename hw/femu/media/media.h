/*
 * The media model interface: the device asks the model *when* a command completes; the
 * model never reads a clock (arrival times are passed in) and never touches QEMU. Every
 * femu_mode provides one of these; nossd is the trivial one.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_MEDIA_H
#define FEMU_MEDIA_H

#include <stdint.h>

typedef enum FemuMediaOp {
    FEMU_MEDIA_READ,
    FEMU_MEDIA_WRITE,
    FEMU_MEDIA_FLUSH,
    FEMU_MEDIA_DEALLOCATE,
    FEMU_MEDIA_WRITE_ZEROES,
} FemuMediaOp;

typedef struct FemuMediaReq {
    FemuMediaOp op;
    uint32_t nsid;
    uint64_t slba;          /* first LBA of the namespace */
    uint64_t nlb;           /* number of LBAs (not 0-based) */
    uint32_t lba_bytes;
    uint64_t arrival_ns;    /* when the device fetched the command */
} FemuMediaReq;

typedef struct FemuMedia FemuMedia;

typedef struct FemuMediaOps {
    const char *name;
    /* Completion time in ns, never earlier than req->arrival_ns. */
    uint64_t (*submit)(FemuMedia *m, const FemuMediaReq *req);
    void (*destroy)(FemuMedia *m);
} FemuMediaOps;

struct FemuMedia {
    const FemuMediaOps *ops;
};

static inline uint64_t femu_media_submit(FemuMedia *m, const FemuMediaReq *req)
{
    return m->ops->submit(m, req);
}

static inline void femu_media_destroy(FemuMedia *m)
{
    if (m) {
        m->ops->destroy(m);
    }
}

/* nossd: no media model, every command completes when it arrives. */
FemuMedia *femu_media_nossd_new(void);

#endif
