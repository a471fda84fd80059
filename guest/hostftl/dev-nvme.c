/*
 * The host FTL's device: data with pread/pwrite (O_DIRECT) on the namespace's
 * block device, chunk resets and the chunk log through passthrough ioctls.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include "hostftl.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int nvme_read(void *opaque, uint64_t lba, uint32_t n, void *buf)
{
    struct oc_dev *d = opaque;
    size_t len = (size_t)n * d->lba_size, done = 0;
    while (done < len) {
        ssize_t r = pread(d->ns_fd, (char *)buf + done, len - done, lba * d->lba_size + done);
        if (r <= 0)
            return r < 0 ? -errno : -EIO;
        done += r;
    }
    return 0;
}

/* One command at a time, each a multiple of WS_MIN: the block layer would
 * split a large write into commands that may reach the device out of order. */
static int nvme_write(void *opaque, uint64_t lba, uint32_t n, const void *buf)
{
    struct oc_dev *d = opaque;
    uint32_t step = d->max_sectors;
    if (d->geo.ws_min && step >= d->geo.ws_min)
        step -= step % d->geo.ws_min;
    for (uint32_t done = 0; done < n;) {
        uint32_t k = n - done < step ? n - done : step;
        ssize_t w = pwrite(d->ns_fd, (const char *)buf + (size_t)done * d->lba_size,
                           (size_t)k * d->lba_size, (lba + done) * d->lba_size);
        if (w != (ssize_t)k * d->lba_size)
            return w < 0 ? -errno : -EIO;
        done += k;
    }
    return 0;
}

/* Linux AIO (io_submit) on the O_DIRECT descriptor: the pieces go to the device
 * together, so the PUs of a line program in parallel. */
#define AIO_MAX 256
static aio_context_t aio_ctx;
static int aio_state; /* 0 not set up, 1 ready, -1 unavailable */

static int nvme_write_batch(void *opaque, uint32_t n, const uint64_t *lba, const uint32_t *nsec,
                            const void *const *bufs)
{
    struct oc_dev *d = opaque;
    struct iocb cb[AIO_MAX], *cbp[AIO_MAX];
    struct io_event ev[AIO_MAX];
    uint32_t sent = 0, done = 0;
    int rc = 0, one_by_one = n > AIO_MAX;

    if (!aio_state)
        aio_state = syscall(SYS_io_setup, AIO_MAX, &aio_ctx) == 0 ? 1 : -1;
    for (uint32_t i = 0; i < n; i++)
        one_by_one |= nsec[i] > d->max_sectors; /* split into commands that may race */
    if (aio_state < 0 || one_by_one) {
        for (uint32_t i = 0; i < n && !rc; i++)
            rc = nvme_write(opaque, lba[i], nsec[i], bufs[i]);
        return rc;
    }
    memset(cb, 0, n * sizeof(cb[0]));
    for (uint32_t i = 0; i < n; i++) {
        cb[i].aio_fildes = d->ns_fd;
        cb[i].aio_lio_opcode = IOCB_CMD_PWRITE;
        cb[i].aio_buf = (uintptr_t)bufs[i];
        cb[i].aio_nbytes = (uint64_t)nsec[i] * d->lba_size;
        cb[i].aio_offset = lba[i] * d->lba_size;
        cbp[i] = &cb[i];
    }
    while (sent < n) {
        long r = syscall(SYS_io_submit, aio_ctx, n - sent, cbp + sent);
        if (r < 0 && errno == EAGAIN)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : -EIO;
            break;
        }
        sent += r;
    }
    while (done < sent) {
        long r = syscall(SYS_io_getevents, aio_ctx, 1, sent - done, ev, NULL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno; /* cannot reap: the buffers may still be in use */
        for (long i = 0; i < r; i++) {
            const struct iocb *c = (const struct iocb *)(uintptr_t)ev[i].obj;
            if (ev[i].res != (int64_t)c->aio_nbytes && !rc)
                rc = ev[i].res < 0 ? (int)ev[i].res : -EIO;
        }
        done += r;
    }
    return rc;
}

static int nvme_reset(void *opaque, uint64_t chunk)
{
    struct oc_dev *d = opaque;
    uint64_t lba = chunk * d->geo.clba;
    return oc_vector(d, OC_VECTOR_RESET, &lba, 1, NULL, NULL, NULL);
}

static int nvme_chunk_info(void *opaque, uint64_t first, uint32_t count, struct ftl_chunk_info *out)
{
    struct oc_dev *d = opaque;
    struct oc_chunk *c = calloc(count, sizeof(*c));
    int st;
    if (!c)
        return -ENOMEM;
    st = oc_chunk_log(d, first, count, c);
    for (uint32_t i = 0; i < count && !st; i++) {
        out[i].state = c[i].state;
        out[i].written = c[i].wp - c[i].slba;
    }
    free(c);
    return st;
}

const struct ftl_dev_ops nvme_dev_ops = { nvme_read, nvme_write, nvme_reset, nvme_chunk_info,
                                          nvme_write_batch };

void nvme_dev_geo(const struct oc_dev *d, struct ftl_geo *g)
{
    *g = (struct ftl_geo){
        .num_grp = d->geo.num_grp, .num_pu = d->geo.num_pu, .num_chk = d->geo.num_chk,
        .clba = d->geo.clba, .ws_min = d->geo.ws_min, .ws_opt = d->geo.ws_opt,
        .maxoc = d->geo.maxoc, .maxocpu = d->geo.maxocpu, .sector_size = d->lba_size,
    };
}
