/*
 * A block device through the kernel's NBD driver without nbd-client: the
 * device gets one end of a socketpair (NBD_SET_SOCK), a thread sits in
 * NBD_DO_IT, and this file answers the simple (old-style) request/reply
 * protocol on the other end: READ, WRITE (FUA), FLUSH, TRIM, DISC.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include "hostftl.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nbd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_REQUEST (32u << 20) /* the driver's largest request (max_hw_sectors 65536) */

struct server {
    const char *path;
    int nbd_fd;
    int ready_fd;
    uint64_t size; /* bytes */
    const struct nbd_backend *b;
    pthread_mutex_t lock; /* the backend is single-threaded */
};

static void seterr(char *err, size_t len, const char *what, const char *path)
{
    snprintf(err, len, "%s %s: %s", what, path, strerror(errno));
}

static int read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        len -= r;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= w;
    }
    return 0;
}

static void *do_it(void *arg)
{
    struct server *s = arg;
    /* returns when the socket closes or the device is disconnected */
    if (ioctl(s->nbd_fd, NBD_DO_IT) < 0 && errno != EPIPE)
        fprintf(stderr, "hostftl: NBD_DO_IT on %s: %s\n", s->path, strerror(errno));
    return NULL;
}

/* The sysfs size of the block device (512-byte sectors), 0 if unreadable. */
static uint64_t sys_sectors(const char *name)
{
    char path[96];
    unsigned long long n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/sys/block/%s/size", name);
    f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%llu", &n) != 1)
            n = 0;
        fclose(f);
    }
    return n;
}

/* /dev/nbdN is live once the driver shows the serving pid in sysfs and has
 * set the size, which it does after the pid (a read before it sees 0 bytes). */
static void *announce(void *arg)
{
    struct server *s = arg;
    const char *name = strrchr(s->path, '/') ? strrchr(s->path, '/') + 1 : s->path;
    char sys[96];
    struct stat st;

    snprintf(sys, sizeof(sys), "/sys/block/%s/pid", name);
    for (int i = 0; i < 1000; i++) {
        if (stat(sys, &st) == 0 && sys_sectors(name) == s->size / 512) {
            if (s->ready_fd >= 0 && write(s->ready_fd, "1", 1) != 1)
                fprintf(stderr, "hostftl: cannot tell the parent that %s is ready\n", s->path);
            return NULL;
        }
        usleep(10000);
    }
    fprintf(stderr, "hostftl: %s did not come up within 10 s\n", s->path);
    return NULL;
}

int nbd_disconnect(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR);
    if (fd < 0) {
        seterr(err, errlen, "open", path);
        return -errno;
    }
    fsync(fd); /* what the page cache holds goes to the FTL before the end */
    if (ioctl(fd, NBD_DISCONNECT) < 0) {
        int e = -errno;
        seterr(err, errlen, "NBD_DISCONNECT on", path);
        close(fd);
        return e;
    }
    close(fd);
    return 0;
}

static void *signals(void *arg)
{
    struct server *s = arg;
    sigset_t set;
    int sig;
    char err[256];

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    for (;;) {
        if (sigwait(&set, &sig))
            continue;
        if (sig == SIGUSR1) {
            pthread_mutex_lock(&s->lock);
            if (s->b->stats)
                s->b->stats(s->b->opaque);
            pthread_mutex_unlock(&s->lock);
            continue;
        }
        fprintf(stderr, "hostftl: signal %d: disconnecting %s\n", sig, s->path);
        if (nbd_disconnect(s->path, err, sizeof(err)))
            fprintf(stderr, "hostftl: %s\n", err);
    }
    return NULL;
}

static uint32_t errno_to_nbd(int rc)
{
    switch (-rc) {
    case 0: return 0;
    case EPERM: return EPERM;
    case ENOMEM: return ENOMEM;
    case EINVAL: return EINVAL;
    case ENOSPC: return ENOSPC;
    default: return EIO;
    }
}

static int serve(struct server *s, int sock)
{
    struct nbd_request rq;
    struct nbd_reply rp = { .magic = htobe32(NBD_REPLY_MAGIC) };
    void *buf = NULL;
    uint32_t cap = 0;

    for (;;) {
        uint32_t type, len, cmd;
        uint64_t off;
        int rc = 0;

        if (read_full(sock, &rq, sizeof(rq)))
            return 0; /* the kernel closed the socket */
        if (be32toh(rq.magic) != NBD_REQUEST_MAGIC) {
            fprintf(stderr, "hostftl: bad NBD request magic 0x%08x\n", be32toh(rq.magic));
            return -EPROTO;
        }
        type = be32toh(rq.type);
        cmd = type & 0xffff;
        off = be64toh(rq.from);
        len = be32toh(rq.len);
        memcpy(rp.handle, rq.handle, sizeof(rp.handle));
        if (cmd == NBD_CMD_DISC)
            return 0;
        if ((cmd == NBD_CMD_READ || cmd == NBD_CMD_WRITE) && len > cap) {
            if (len > MAX_REQUEST) {
                fprintf(stderr, "hostftl: NBD request of %u bytes, more than %u\n", len,
                        MAX_REQUEST);
                return -EPROTO;
            }
            free(buf);
            buf = NULL;
            if (posix_memalign(&buf, 4096, len))
                return -ENOMEM;
            cap = len;
        }
        if (cmd == NBD_CMD_WRITE && read_full(sock, buf, len)) {
            free(buf);
            return -EPIPE;
        }
        pthread_mutex_lock(&s->lock);
        switch (cmd) {
        case NBD_CMD_READ: rc = s->b->read(s->b->opaque, off, len, buf); break;
        case NBD_CMD_WRITE:
            rc = s->b->write(s->b->opaque, off, len, buf);
            if (!rc && (type >> 16) & NBD_CMD_FLAG_FUA)
                rc = s->b->flush(s->b->opaque);
            break;
        case NBD_CMD_FLUSH: rc = s->b->flush(s->b->opaque); break;
        case NBD_CMD_TRIM: rc = s->b->trim(s->b->opaque, off, len); break;
        default: rc = -EINVAL; break;
        }
        pthread_mutex_unlock(&s->lock);
        rp.error = htobe32(errno_to_nbd(rc));
        if (write_full(sock, &rp, sizeof(rp)) ||
            (cmd == NBD_CMD_READ && !rc && write_full(sock, buf, len))) {
            free(buf);
            return -EPIPE;
        }
    }
}

int nbd_serve(const char *path, uint64_t size, uint32_t blksize, const struct nbd_backend *b,
              int ready_fd, char *err, size_t errlen)
{
    struct server s = { .path = path, .ready_fd = ready_fd, .b = b,
                        .size = size / blksize * blksize, .lock = PTHREAD_MUTEX_INITIALIZER };
    pthread_t th_do, th_sig, th_ann;
    sigset_t set;
    int sv[2], rc;

    s.nbd_fd = open(path, O_RDWR);
    if (s.nbd_fd < 0) {
        int e = -errno;
        if (errno == ENOENT)
            snprintf(err, errlen, "%s does not exist: load the nbd module (modprobe nbd)", path);
        else
            seterr(err, errlen, "open", path);
        return e;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        seterr(err, errlen, "socketpair for", path);
        close(s.nbd_fd);
        return -errno;
    }
    if (ioctl(s.nbd_fd, NBD_SET_BLKSIZE, (unsigned long)blksize) < 0 ||
        ioctl(s.nbd_fd, NBD_SET_SIZE_BLOCKS, (unsigned long)(size / blksize)) < 0 ||
        ioctl(s.nbd_fd, NBD_SET_FLAGS,
              (unsigned long)(NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA |
                              NBD_FLAG_SEND_TRIM)) < 0) {
        seterr(err, errlen, "setting up", path);
        goto fail;
    }
    if (ioctl(s.nbd_fd, NBD_SET_SOCK, (unsigned long)sv[0]) < 0) {
        if (errno == EBUSY)
            snprintf(err, errlen, "%s is in use (another server is attached)", path);
        else
            seterr(err, errlen, "NBD_SET_SOCK on", path);
        goto fail;
    }
    /* only the signal thread takes these */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_create(&th_sig, NULL, signals, &s);
    pthread_detach(th_sig);
    pthread_create(&th_do, NULL, do_it, &s);
    pthread_create(&th_ann, NULL, announce, &s);
    pthread_detach(th_ann);
    rc = serve(&s, sv[1]);
    shutdown(sv[1], SHUT_RDWR);
    close(sv[1]);
    pthread_join(th_do, NULL);
    ioctl(s.nbd_fd, NBD_CLEAR_SOCK);
    close(sv[0]);
    close(s.nbd_fd);
    if (rc)
        snprintf(err, errlen, "serving %s failed: %s", path, strerror(-rc));
    return rc;
fail:
    rc = -errno;
    close(sv[0]);
    close(sv[1]);
    close(s.nbd_fd);
    return rc ? rc : -EIO;
}
