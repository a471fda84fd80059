/*
 * The host FTL's core: page mapping, lines, greedy GC and the checkpoint, on an
 * OCSSD 2.0 device reached only through struct ftl_dev_ops. No NBD, no ioctl
 * here: the guest binary plugs in dev-nvme.c, the unit test an in-memory fake.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HOSTFTL_FTL_H
#define HOSTFTL_FTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the FTL needs of the device's geometry (Identify Geometry). */
struct ftl_geo {
    uint32_t num_grp, num_pu; /* PUs per group */
    uint32_t num_chk, clba;   /* chunks per PU, sectors per chunk */
    uint32_t ws_min, ws_opt;  /* sectors */
    uint32_t maxoc, maxocpu;  /* open chunk limits, 0: none */
    uint32_t sector_size;     /* bytes (the namespace's LBA size) */
};

/* chunk states as the Chunk Information log gives them */
#define FTL_CHUNK_FREE 0x1
#define FTL_CHUNK_CLOSED 0x2
#define FTL_CHUNK_OPEN 0x4
#define FTL_CHUNK_OFFLINE 0x8

struct ftl_chunk_info {
    uint8_t state;
    uint32_t written; /* WP - SLBA */
};

/*
 * The device. LBAs are the dense OCSSD LBA space: chunk c is [c * clba, +clba).
 * Every function returns 0 or nonzero (negative errno or NVMe status) on error.
 * Buffers are aligned to the sector size (O_DIRECT).
 */
struct ftl_dev_ops {
    int (*read)(void *dev, uint64_t lba, uint32_t nsec, void *buf);
    int (*write)(void *dev, uint64_t lba, uint32_t nsec, const void *buf);
    int (*reset)(void *dev, uint64_t chunk);
    int (*chunk_info)(void *dev, uint64_t first_chunk, uint32_t count,
                      struct ftl_chunk_info *out);
    /* optional: n writes to different chunks, which may run in parallel; each
     * one as by write(). NULL: the core calls write() n times. */
    int (*write_batch)(void *dev, uint32_t n, const uint64_t *lba, const uint32_t *nsec,
                       const void *const *bufs);
};

struct ftl_format_opts {
    double op_pcent;    /* over-provisioning: (usable - exposed) / exposed, in % */
    uint32_t line_pus;  /* PUs per line, 0: chosen from the geometry */
};

struct ftl_stats {
    uint64_t host_write_sectors, host_read_sectors, trim_sectors;
    uint64_t dev_write_sectors;  /* data lines: host + GC + padding */
    uint64_t gc_write_sectors, pad_sectors;
    uint64_t meta_write_sectors; /* checkpoints and markers */
    uint64_t dev_read_sectors, gc_read_sectors;
    uint64_t erases, gc_lines, flushes;
    uint64_t free_lines, data_lines, logical_sectors, line_pus;
    uint64_t ckpt_seq;
};

struct ftl;

/* Erase the device and write an empty checkpoint. 0, or -errno with err filled. */
int ftl_format(const struct ftl_geo *g, const struct ftl_dev_ops *ops, void *dev,
               const struct ftl_format_opts *o, char *err, size_t errlen);
/* Load the checkpoint. force: also after an unclean stop (what was written after
 * the checkpoint is lost). NULL with err filled on failure. */
struct ftl *ftl_open(const struct ftl_geo *g, const struct ftl_dev_ops *ops, void *dev,
                     bool force, char *err, size_t errlen);
/* Flush, write the checkpoint, free. 0 or -errno (err filled). */
int ftl_close(struct ftl *f, char *err, size_t errlen);
/* Free without a checkpoint (as if the host crashed). */
void ftl_abandon(struct ftl *f);

uint64_t ftl_logical_sectors(const struct ftl *f);
/* The checkpoint's checksum (CRC-32, zlib's), for tools and tests that look inside one. */
uint32_t ftl_crc32(uint32_t crc, const void *data, size_t n);
uint32_t ftl_sector_size(const struct ftl *f);
/* lba and n in sectors; buf sector aligned. 0 or -errno. */
int ftl_read(struct ftl *f, uint64_t lba, uint32_t n, void *buf);
int ftl_write(struct ftl *f, uint64_t lba, uint32_t n, const void *buf);
int ftl_trim(struct ftl *f, uint64_t lba, uint64_t n);
int ftl_flush(struct ftl *f);
void ftl_get_stats(const struct ftl *f, struct ftl_stats *s);
/* Self-check of the mapping (tests): NULL, or what is inconsistent. */
const char *ftl_check(const struct ftl *f);
/* KEY=VALUE lines */
void ftl_format_stats(const struct ftl_stats *s, char *out, size_t len);

#endif
