/*
 * The parts of the hostftl program around the core (ftl.h): the NVMe device
 * (dev-nvme.c) and the NBD server (nbd.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HOSTFTL_H
#define HOSTFTL_H

#include "ftl.h"
#include "../ocssd/oc-nvme.h"

extern const struct ftl_dev_ops nvme_dev_ops;
void nvme_dev_geo(const struct oc_dev *d, struct ftl_geo *g);

/* What the NBD server calls; offsets and lengths in bytes. 0 or -errno. */
struct nbd_backend {
    int (*read)(void *opaque, uint64_t off, uint32_t len, void *buf);
    int (*write)(void *opaque, uint64_t off, uint32_t len, const void *buf);
    int (*flush)(void *opaque);
    int (*trim)(void *opaque, uint64_t off, uint32_t len);
    void (*stats)(void *opaque); /* on SIGUSR1 */
    void *opaque;
};

/*
 * Attach nbd_path (/dev/nbdN) to a socketpair and serve it until the kernel
 * disconnects (NBD_DISCONNECT from `hostftl stop`, or SIGTERM/SIGINT, which do
 * the same after syncing the device). ready_fd >= 0 gets one byte once the
 * block device is live. 0, or -errno with err filled.
 */
int nbd_serve(const char *nbd_path, uint64_t size, uint32_t blksize,
              const struct nbd_backend *b, int ready_fd, char *err, size_t errlen);
/* sync and disconnect nbd_path from outside the server */
int nbd_disconnect(const char *nbd_path, char *err, size_t errlen);

#endif
