/*
 * Host FTL core (pblk-like) over an OCSSD 2.0 device.
 *
 * Policy points a researcher may want to change, each one function:
 *   pick_gc_victim()   which closed line GC collects (greedy: fewest valid sectors)
 *   pick_next_line()   which free line is written next (fewest erases)
 *   line_sector_ppa()  where the n-th sector of a line goes (striped over its PUs,
 *                      WS_OPT sectors per PU in turn)
 *
 * Layout. A line is one chunk index on a group of line_pus PUs (all PUs when
 * that leaves enough lines). Host and GC writes share one open line: sectors are
 * gathered in a stripe buffer, one write unit (WS_OPT sectors, the device's
 * optimal write) per chunk of the line, written to all the line's PUs at once
 * when it is full (or, on a flush, what it holds, padded to WS_MIN). The
 * mapping is l2p (logical sector -> device LBA) and p2l (device LBA -> logical
 * sector, for GC), one u32 each.
 *
 * Metadata: 2 * meta_chunks chunks (chunk row 0 of PUs 0, 1, ..., then row 1...)
 * are kept out of the lines and form two checkpoint regions used in turn. A
 * checkpoint (header sector, l2p, line table) is written at a clean stop; the
 * one with the highest sequence number is loaded at start, and a marker is
 * written right after it, so that a checkpoint followed by a marker means the
 * FTL ran after it and did not stop cleanly (its data since then is not in it).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include "ftl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INVALID UINT32_MAX
#define CKPT_MAGIC "HOSTFTL1"
#define MARK_MAGIC "HOSTFTLO"
#define CKPT_VERSION 1
#define MIN_LINES 16       /* the automatic line width keeps at least this many */
#define GC_FREE_LINES 2    /* host writes open a line only with this many free */
#define SLACK_LINES 2      /* OP must leave at least this many lines of room */

enum { LINE_FREE, LINE_OPEN, LINE_CLOSED, LINE_BAD };
enum { FOR_HOST, FOR_GC };

struct line {
    uint8_t state;
    uint32_t nmembers; /* chunks in the line (metadata and offline ones left out) */
    uint32_t *members; /* chunk indexes */
    uint64_t valid;    /* sectors holding live data */
    uint32_t erases;
};

struct ftl {
    struct ftl_geo g;
    const struct ftl_dev_ops *ops;
    void *dev;
    uint32_t ss, npu, line_pus, unit;
    uint64_t nchunks, phys, logical;
    uint32_t nlines, meta_chunks; /* per region */
    uint64_t *meta;               /* 2 * meta_chunks chunk indexes */
    uint8_t *cstate;              /* chunk state (device view, kept up to date) */
    uint32_t *cwp;                /* chunk write pointer, relative */
    uint32_t *cline;              /* chunk -> line, INVALID for metadata */
    struct line *lines;
    uint32_t *member_store;
    uint32_t *l2p, *p2l;
    int64_t cur;                  /* open line, -1 none */
    uint64_t cursor;              /* next sector of the open line */
    uint64_t buf_start;           /* first sector of the open line not on the device */
    uint8_t *wbuf;                /* one stripe: a write unit per chunk of the line */
    uint8_t *iobuf;               /* GC and metadata I/O, one chunk */
    uint8_t *zbuf;                /* zeroes, one write unit (padding) */
    uint32_t free_lines;
    uint64_t seq;
    int region;                   /* where the loaded checkpoint is */
    bool broken;
    struct ftl_stats st;
};

/* ---- small helpers ---- */

static void seterr(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    if (!err || !len)
        return;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

uint32_t ftl_crc32(uint32_t crc, const void *data, size_t n)
{
    static uint32_t table[256];
    const uint8_t *p = data;
    if (!table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    crc = ~crc;
    while (n--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static void *alloc_aligned(size_t n, size_t align)
{
    void *p = NULL;
    if (posix_memalign(&p, align, n ? n : align))
        return NULL;
    memset(p, 0, n);
    return p;
}

static uint64_t chunk_lba(const struct ftl *f, uint64_t chunk)
{
    return chunk * f->g.clba;
}

static uint64_t line_capacity(const struct ftl *f, const struct line *l)
{
    return (uint64_t)l->nmembers * f->g.clba;
}

/* ---- policy ---- */

/*
 * PLACEMENT: the device LBA of sector s of line l. Write units (WS_OPT sectors)
 * go to the line's chunks in turn, so consecutive writes land on different PUs
 * and every chunk is still written sequentially. Any order works as long as each
 * chunk's sectors come in increasing order, in whole units.
 */
static uint64_t line_sector_ppa(const struct ftl *f, const struct line *l, uint64_t s)
{
    uint64_t u = s / f->unit;
    uint32_t m = u % l->nmembers;
    uint64_t off = (u / l->nmembers) * f->unit + s % f->unit;
    return chunk_lba(f, l->members[m]) + off;
}

/* PLACEMENT: which free line is written next: the least erased (wear levelling). */
static int64_t pick_next_line(const struct ftl *f)
{
    int64_t best = -1;
    for (uint32_t i = 0; i < f->nlines; i++) {
        const struct line *l = &f->lines[i];
        if (l->state == LINE_FREE && (best < 0 || l->erases < f->lines[best].erases))
            best = i;
    }
    return best;
}

/*
 * GC VICTIM: greedy, the closed line with the fewest valid sectors; lines of
 * different sizes (some lose chunks to metadata or to offline chunks) are
 * compared by what collecting them frees: the most invalid sectors.
 */
static int64_t pick_gc_victim(const struct ftl *f)
{
    int64_t best = -1;
    uint64_t best_gain = 0;
    for (uint32_t i = 0; i < f->nlines; i++) {
        const struct line *l = &f->lines[i];
        uint64_t gain = line_capacity(f, l) - l->valid;
        if (l->state == LINE_CLOSED && (best < 0 || gain > best_gain)) {
            best = i;
            best_gain = gain;
        }
    }
    return best;
}

/* ---- device access, keeping the chunk table in step ---- */

static int dev_write(struct ftl *f, uint64_t lba, uint32_t n, const void *buf)
{
    uint64_t c = lba / f->g.clba;
    int rc = f->ops->write(f->dev, lba, n, buf);
    if (rc) {
        fprintf(stderr, "hostftl: device write of %u sectors at LBA %" PRIu64 " failed (%d)\n",
                n, lba, rc);
        f->broken = true;
        return -EIO;
    }
    f->cwp[c] += n;
    f->cstate[c] = f->cwp[c] == f->g.clba ? FTL_CHUNK_CLOSED : FTL_CHUNK_OPEN;
    return 0;
}

static int dev_read(struct ftl *f, uint64_t lba, uint32_t n, void *buf)
{
    int rc = f->ops->read(f->dev, lba, n, buf);
    if (rc) {
        fprintf(stderr, "hostftl: device read of %u sectors at LBA %" PRIu64 " failed (%d)\n",
                n, lba, rc);
        return -EIO;
    }
    f->st.dev_read_sectors += n;
    return 0;
}

/* Write zeroes up to the chunk's end (it closes). counter: the statistic it
 * goes to (padding of data chunks also counts as device writes). */
static int pad_chunk(struct ftl *f, uint64_t c, uint64_t *counter)
{
    while (f->cwp[c] < f->g.clba) {
        uint32_t n = f->g.clba - f->cwp[c];
        if (n > f->unit)
            n = f->unit; /* zbuf is one unit; both are multiples of WS_MIN */
        int rc = dev_write(f, chunk_lba(f, c) + f->cwp[c], n, f->zbuf);
        if (rc)
            return rc;
        *counter += n;
        if (counter == &f->st.pad_sectors)
            f->st.dev_write_sectors += n;
    }
    return 0;
}

static int reset_chunk(struct ftl *f, uint64_t c)
{
    int rc = f->ops->reset(f->dev, c);
    if (rc) {
        fprintf(stderr, "hostftl: reset of chunk %" PRIu64 " failed (%d)\n", c, rc);
        f->broken = true;
        return -EIO;
    }
    f->cstate[c] = FTL_CHUNK_FREE;
    f->cwp[c] = 0;
    f->st.erases++;
    return 0;
}

/* Make a chunk Free whatever state it is in (an open one is filled first). */
static int make_free(struct ftl *f, uint64_t c, uint64_t *pad_counter)
{
    int rc;
    if (f->cstate[c] & FTL_CHUNK_FREE)
        return 0;
    if (f->cstate[c] & FTL_CHUNK_OFFLINE)
        return -EIO;
    if (f->cstate[c] & FTL_CHUNK_OPEN) {
        rc = pad_chunk(f, c, pad_counter);
        if (rc)
            return rc;
    }
    return reset_chunk(f, c);
}

/* ---- write path ---- */

static uint64_t stripe_len(const struct ftl *f, const struct line *l)
{
    return (uint64_t)f->unit * l->nmembers;
}

/* Is device LBA ppa in the stripe buffer (not yet on the device)? Its index there. */
static bool in_buffer(const struct ftl *f, uint64_t ppa, size_t *idx)
{
    const struct line *l;
    uint64_t c = ppa / f->g.clba, off = ppa % f->g.clba, s, stripe;
    uint32_t m;

    if (f->cur < 0 || f->cursor == f->buf_start || f->cline[c] != (uint32_t)f->cur)
        return false;
    l = &f->lines[f->cur];
    for (m = 0; m < l->nmembers && l->members[m] != c; m++)
        ;
    stripe = stripe_len(f, l);
    s = off / f->unit * stripe + (uint64_t)m * f->unit + off % f->unit;
    if (s < f->buf_start || s >= f->cursor)
        return false;
    *idx = s % stripe;
    return true;
}

static void invalidate(struct ftl *f, uint64_t lba)
{
    uint32_t old = f->l2p[lba];
    if (old == INVALID)
        return;
    f->l2p[lba] = INVALID;
    if (f->p2l[old] == lba) {
        f->p2l[old] = INVALID;
        f->lines[f->cline[old / f->g.clba]].valid--;
    }
}

/* Several writes to different chunks at once (the device may run them in
 * parallel); each chunk's table is updated as by dev_write. */
static int dev_write_batch(struct ftl *f, uint32_t n, const uint64_t *lba, const uint32_t *nsec,
                           const void *const *bufs)
{
    int rc;
    if (n == 1 || !f->ops->write_batch) {
        for (uint32_t i = 0; i < n; i++) {
            rc = dev_write(f, lba[i], nsec[i], bufs[i]);
            if (rc)
                return rc;
        }
        return 0;
    }
    rc = f->ops->write_batch(f->dev, n, lba, nsec, bufs);
    if (rc) {
        fprintf(stderr, "hostftl: device write of %u pieces from LBA %" PRIu64 " failed (%d)\n",
                n, lba[0], rc);
        f->broken = true;
        return -EIO;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t c = lba[i] / f->g.clba;
        f->cwp[c] += nsec[i];
        f->cstate[c] = f->cwp[c] == f->g.clba ? FTL_CHUNK_CLOSED : FTL_CHUNK_OPEN;
    }
    return 0;
}

/*
 * Write out the buffered part of the open line: one piece per write unit it
 * touches (each in its own chunk), all at once. pad: round the last piece up
 * to WS_MIN (a flush); the others end on unit boundaries already.
 */
static int write_out(struct ftl *f, bool pad)
{
    struct line *l = &f->lines[f->cur];
    uint64_t stripe = stripe_len(f, l), n = f->cursor - f->buf_start;
    uint64_t lba[l->nmembers];
    uint32_t nsec[l->nmembers], k = 0;
    const void *bufs[l->nmembers];
    int rc;

    if (!n)
        return 0;
    if (pad && f->cursor % f->unit % f->g.ws_min) {
        uint64_t extra = f->g.ws_min - f->cursor % f->unit % f->g.ws_min;
        memset(f->wbuf + (f->cursor % stripe) * f->ss, 0, extra * f->ss);
        f->st.pad_sectors += extra;
        f->st.dev_write_sectors += extra;
        f->cursor += extra;
    }
    for (uint64_t s = f->buf_start; s < f->cursor;) {
        uint64_t end = (s / f->unit + 1) * f->unit;
        if (end > f->cursor)
            end = f->cursor;
        lba[k] = line_sector_ppa(f, l, s);
        nsec[k] = end - s;
        bufs[k] = f->wbuf + (s % stripe) * f->ss;
        k++;
        s = end;
    }
    rc = dev_write_batch(f, k, lba, nsec, bufs);
    if (rc)
        return rc;
    f->buf_start = f->cursor;
    if (f->cursor == line_capacity(f, l)) {
        l->state = LINE_CLOSED;
        f->cur = -1;
    }
    return 0;
}

static int gc_one(struct ftl *f);

static int open_line(struct ftl *f, int why)
{
    int64_t l;
    int guard = 0;

    /* Host writes leave the last free lines to GC, which needs room to copy. */
    while (why == FOR_HOST && f->free_lines < GC_FREE_LINES) {
        int rc = gc_one(f);
        if (rc)
            return rc;
        if (++guard > 4 * (int)f->nlines)
            return -ENOSPC;
    }
    if (f->cur >= 0) /* GC opened one: share it */
        return 0;
    l = pick_next_line(f);
    if (l < 0)
        return -ENOSPC;
    for (uint32_t i = 0; i < f->lines[l].nmembers; i++) {
        int rc = make_free(f, f->lines[l].members[i], &f->st.pad_sectors);
        if (rc)
            return rc;
    }
    f->lines[l].state = LINE_OPEN;
    f->lines[l].valid = 0;
    f->free_lines--;
    f->cur = l;
    f->cursor = f->buf_start = 0;
    return 0;
}

/* Put one sector of data for lba at the open line's cursor. */
static int append(struct ftl *f, uint64_t lba, const uint8_t *data, int why)
{
    struct line *l;
    uint64_t ppa;
    int rc;

    while (f->cur < 0) {
        rc = open_line(f, why);
        if (rc)
            return rc;
    }
    l = &f->lines[f->cur];
    ppa = line_sector_ppa(f, l, f->cursor);
    memcpy(f->wbuf + (f->cursor % stripe_len(f, l)) * f->ss, data, f->ss);
    invalidate(f, lba);
    f->l2p[lba] = ppa;
    f->p2l[ppa] = lba;
    l->valid++;
    f->cursor++;
    f->st.dev_write_sectors++;
    if (why == FOR_GC)
        f->st.gc_write_sectors++;
    if (f->cursor % stripe_len(f, l) == 0)
        return write_out(f, false);
    return 0;
}

/* ---- GC ---- */

static int gc_one(struct ftl *f)
{
    int64_t v = pick_gc_victim(f);
    struct line *l;
    uint32_t max_run = f->g.clba;

    if (v < 0)
        return -ENOSPC;
    l = &f->lines[v];
    if (l->valid >= line_capacity(f, l))
        return -ENOSPC; /* nothing to gain: the drive is full of live data */
    for (uint32_t m = 0; m < l->nmembers; m++) {
        uint64_t base = chunk_lba(f, l->members[m]);
        for (uint32_t off = 0; off < f->g.clba;) {
            uint32_t run = 0;
            uint64_t ppa = base + off;
            if (f->p2l[ppa] == INVALID) {
                off++;
                continue;
            }
            while (off + run < f->g.clba && run < max_run && f->p2l[ppa + run] != INVALID)
                run++;
            int rc = dev_read(f, ppa, run, f->iobuf);
            if (rc)
                return rc;
            f->st.gc_read_sectors += run;
            for (uint32_t i = 0; i < run; i++) {
                uint32_t lba = f->p2l[ppa + i];
                /* a copy may have moved it already? no: single-threaded, still ours */
                if (lba == INVALID || f->l2p[lba] != ppa + i)
                    continue;
                rc = append(f, lba, f->iobuf + (size_t)i * f->ss, FOR_GC);
                if (rc)
                    return rc;
            }
            off += run;
        }
    }
    if (l->valid) {
        fprintf(stderr, "hostftl: GC left %" PRIu64 " valid sectors in line %" PRId64 "\n",
                l->valid, v);
        return -EIO;
    }
    for (uint32_t m = 0; m < l->nmembers; m++) {
        uint64_t base = chunk_lba(f, l->members[m]);
        for (uint32_t off = 0; off < f->g.clba; off++)
            f->p2l[base + off] = INVALID;
        int rc = reset_chunk(f, l->members[m]);
        if (rc)
            return rc;
    }
    l->state = LINE_FREE;
    l->erases++;
    f->free_lines++;
    f->st.gc_lines++;
    return 0;
}

/* ---- public I/O ---- */

uint64_t ftl_logical_sectors(const struct ftl *f)
{
    return f->logical;
}

uint32_t ftl_sector_size(const struct ftl *f)
{
    return f->ss;
}

int ftl_write(struct ftl *f, uint64_t lba, uint32_t n, const void *buf)
{
    const uint8_t *p = buf;
    if (f->broken)
        return -EIO;
    if (lba > f->logical || n > f->logical - lba)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++) {
        int rc = append(f, lba + i, p + (size_t)i * f->ss, FOR_HOST);
        if (rc)
            return rc;
    }
    f->st.host_write_sectors += n;
    return 0;
}

int ftl_read(struct ftl *f, uint64_t lba, uint32_t n, void *buf)
{
    uint8_t *p = buf;
    if (lba > f->logical || n > f->logical - lba)
        return -EINVAL;
    for (uint32_t i = 0; i < n;) {
        uint32_t ppa = f->l2p[lba + i], run = 1;
        size_t idx;
        if (ppa == INVALID) {
            memset(p + (size_t)i * f->ss, 0, f->ss);
            i++;
            continue;
        }
        if (in_buffer(f, ppa, &idx)) {
            memcpy(p + (size_t)i * f->ss, f->wbuf + idx * f->ss, f->ss);
            i++;
            continue;
        }
        /* one device read for a run of sectors that are consecutive in one chunk */
        while (i + run < n && f->l2p[lba + i + run] == ppa + run &&
               (ppa + run) % f->g.clba != 0 && !in_buffer(f, ppa + run, &idx))
            run++;
        int rc = dev_read(f, ppa, run, p + (size_t)i * f->ss);
        if (rc)
            return rc;
        i += run;
    }
    f->st.host_read_sectors += n;
    return 0;
}

int ftl_trim(struct ftl *f, uint64_t lba, uint64_t n)
{
    if (lba > f->logical || n > f->logical - lba)
        return -EINVAL;
    for (uint64_t i = 0; i < n; i++)
        invalidate(f, lba + i);
    f->st.trim_sectors += n;
    return 0;
}

int ftl_flush(struct ftl *f)
{
    if (f->broken)
        return -EIO;
    f->st.flushes++;
    if (f->cur < 0)
        return 0;
    return write_out(f, true);
}

void ftl_get_stats(const struct ftl *f, struct ftl_stats *s)
{
    *s = f->st;
    s->free_lines = f->free_lines;
    s->logical_sectors = f->logical;
    s->line_pus = f->line_pus;
    s->ckpt_seq = f->seq;
    s->data_lines = 0;
    for (uint32_t i = 0; i < f->nlines; i++)
        s->data_lines += f->lines[i].state != LINE_BAD;
}

void ftl_format_stats(const struct ftl_stats *s, char *out, size_t len)
{
    double waf = s->host_write_sectors ? (double)s->dev_write_sectors / s->host_write_sectors : 0;
    snprintf(out, len,
             "HOST_WRITE_SECTORS=%" PRIu64 "\nHOST_READ_SECTORS=%" PRIu64 "\n"
             "TRIM_SECTORS=%" PRIu64 "\nDEV_WRITE_SECTORS=%" PRIu64 "\n"
             "GC_WRITE_SECTORS=%" PRIu64 "\nPAD_SECTORS=%" PRIu64 "\n"
             "META_WRITE_SECTORS=%" PRIu64 "\nDEV_READ_SECTORS=%" PRIu64 "\n"
             "GC_READ_SECTORS=%" PRIu64 "\nWAF=%.3f\nERASES=%" PRIu64 "\nGC_LINES=%" PRIu64 "\n"
             "FLUSHES=%" PRIu64 "\nFREE_LINES=%" PRIu64 "\nDATA_LINES=%" PRIu64 "\n"
             "LINE_PUS=%" PRIu64 "\nLOGICAL_SECTORS=%" PRIu64 "\nCHECKPOINT_SEQ=%" PRIu64 "\n",
             s->host_write_sectors, s->host_read_sectors, s->trim_sectors, s->dev_write_sectors,
             s->gc_write_sectors, s->pad_sectors, s->meta_write_sectors, s->dev_read_sectors,
             s->gc_read_sectors, waf, s->erases, s->gc_lines, s->flushes, s->free_lines,
             s->data_lines, s->line_pus, s->logical_sectors, s->ckpt_seq);
}

const char *ftl_check(const struct ftl *f)
{
    static char why[160];
    uint64_t *valid = calloc(f->nlines, sizeof(uint64_t));
    const char *bad = NULL;

    for (uint64_t lba = 0; lba < f->logical && !bad; lba++) {
        uint32_t ppa = f->l2p[lba];
        if (ppa == INVALID)
            continue;
        uint32_t li = f->cline[ppa / f->g.clba];
        if (ppa >= f->phys || li == INVALID || f->p2l[ppa] != lba) {
            snprintf(why, sizeof(why), "sector %" PRIu64 " maps to %u, which maps back to %u",
                     lba, ppa, ppa < f->phys ? f->p2l[ppa] : INVALID);
            bad = why;
        } else {
            valid[li]++;
        }
    }
    for (uint32_t i = 0; i < f->nlines && !bad; i++)
        if (valid[i] != f->lines[i].valid) {
            snprintf(why, sizeof(why), "line %u counts %" PRIu64 " valid sectors, the map %" PRIu64,
                     i, f->lines[i].valid, valid[i]);
            bad = why;
        }
    free(valid);
    return bad;
}

/* ---- setup: geometry, lines, metadata chunks ---- */

struct ckpt_hdr {
    char magic[8];
    uint32_t version, hdr_crc;
    uint64_t seq;
    uint32_t num_grp, num_pu, num_chk, clba, ws_min, ws_opt, sector_size, line_pus;
    uint64_t logical;
    uint32_t nlines, meta_chunks;
    int64_t open_line;
    uint64_t cursor;
    uint64_t payload_bytes;
    uint32_t payload_crc, pad0;
};

static uint64_t payload_bytes(uint64_t logical, uint32_t nlines)
{
    return logical * 4 + (uint64_t)nlines * (1 + 4);
}

static const char *check_geo(const struct ftl_geo *g)
{
    static char why[160];
    if (!g->num_grp || !g->num_pu || !g->num_chk || !g->clba || !g->ws_min || !g->sector_size)
        return "a geometry field is zero";
    if (g->sector_size % 512 || g->sector_size > 65536)
        return "the LBA size is not a multiple of 512 up to 64 KiB";
    if (g->clba % g->ws_min) {
        snprintf(why, sizeof(why), "CLBA %u is not a multiple of WS_MIN %u", g->clba, g->ws_min);
        return why;
    }
    if ((uint64_t)g->num_grp * g->num_pu * g->num_chk * g->clba >= INVALID)
        return "the device has 2^32 sectors or more (this FTL maps with 32 bits)";
    return NULL;
}

/* Build everything that follows from the geometry and the line width. */
static struct ftl *ftl_new(const struct ftl_geo *g, const struct ftl_dev_ops *ops, void *dev,
                           uint32_t line_pus, char *err, size_t errlen)
{
    struct ftl *f = calloc(1, sizeof(*f));
    const char *why = check_geo(g);

    if (why) {
        seterr(err, errlen, "unsupported geometry: %s", why);
        free(f);
        return NULL;
    }
    f->g = *g;
    f->ops = ops;
    f->dev = dev;
    f->ss = g->sector_size;
    f->npu = g->num_grp * g->num_pu;
    f->nchunks = (uint64_t)f->npu * g->num_chk;
    f->phys = f->nchunks * g->clba;
    f->unit = g->ws_opt && g->ws_opt % g->ws_min == 0 && g->clba % g->ws_opt == 0 ? g->ws_opt
                                                                                : g->ws_min;
    if (!line_pus) {
        /* all PUs, halved while that leaves too few lines (pblk uses all) */
        line_pus = f->npu;
        while (line_pus % 2 == 0 && (uint64_t)(f->npu / line_pus) * g->num_chk < MIN_LINES)
            line_pus /= 2;
        /* one open line must fit in the open-chunk limit, with a metadata chunk */
        while (g->maxoc && line_pus > 1 && line_pus + 1 > g->maxoc && line_pus % 2 == 0)
            line_pus /= 2;
    }
    if (line_pus == 0 || f->npu % line_pus) {
        seterr(err, errlen, "--line-pus %u must divide the number of PUs (%u)", line_pus, f->npu);
        free(f);
        return NULL;
    }
    if (g->maxoc && line_pus > g->maxoc) {
        seterr(err, errlen, "--line-pus %u is more than the device's MAXOC %u", line_pus,
               g->maxoc);
        free(f);
        return NULL;
    }
    f->line_pus = line_pus;
    f->nlines = f->npu / line_pus * g->num_chk;

    /* metadata: enough for the largest possible map and line table (whatever the
     * line width, so that the regions are found before the checkpoint is read),
     * plus one chunk for the marker */
    uint64_t worst = (sizeof(struct ckpt_hdr) + f->ss - 1) / f->ss +
                     (payload_bytes(f->phys, f->nchunks) + f->ss - 1) / f->ss;
    f->meta_chunks = (worst + g->ws_min + g->clba - 1) / g->clba + 1;
    if (2ull * f->meta_chunks >= f->nchunks / 2) {
        seterr(err, errlen, "the device is too small for this FTL: its checkpoints need %u of "
               "its %" PRIu64 " chunks", 2 * f->meta_chunks, f->nchunks);
        free(f);
        return NULL;
    }
    f->meta = calloc(2 * f->meta_chunks, sizeof(uint64_t));
    f->cstate = calloc(f->nchunks, 1);
    f->cwp = calloc(f->nchunks, sizeof(uint32_t));
    f->cline = calloc(f->nchunks, sizeof(uint32_t));
    f->lines = calloc(f->nlines, sizeof(struct line));
    f->member_store = calloc(f->nchunks, sizeof(uint32_t));
    f->p2l = malloc(f->phys * sizeof(uint32_t));
    f->wbuf = alloc_aligned((size_t)f->unit * line_pus * f->ss, 4096);
    f->iobuf = alloc_aligned((size_t)g->clba * f->ss, 4096);
    f->zbuf = alloc_aligned((size_t)f->unit * f->ss, 4096);
    if (!f->zbuf || !f->meta || !f->cstate || !f->cwp || !f->cline || !f->lines || !f->member_store ||
        !f->p2l || !f->wbuf || !f->iobuf) {
        seterr(err, errlen, "out of memory");
        ftl_abandon(f);
        return NULL;
    }
    memset(f->p2l, 0xff, f->phys * sizeof(uint32_t));
    for (uint64_t c = 0; c < f->nchunks; c++)
        f->cline[c] = 0;
    for (uint32_t j = 0; j < 2 * f->meta_chunks; j++) {
        uint32_t pu = j % f->npu, row = j / f->npu;
        f->meta[j] = (uint64_t)pu * g->num_chk + row;
        f->cline[f->meta[j]] = INVALID;
    }
    f->cur = -1;
    return f;
}

/* Lines from the chunk table: metadata and offline chunks are left out. */
static void build_lines(struct ftl *f)
{
    uint32_t groups = f->npu / f->line_pus, used = 0;
    f->free_lines = 0;
    for (uint32_t i = 0; i < f->nlines; i++) {
        struct line *l = &f->lines[i];
        uint32_t chk = i / groups, grp = i % groups;
        l->members = &f->member_store[used];
        l->nmembers = 0;
        for (uint32_t p = grp * f->line_pus; p < (grp + 1) * f->line_pus; p++) {
            uint64_t c = (uint64_t)p * f->g.num_chk + chk;
            if (f->cline[c] == INVALID)
                continue; /* metadata */
            if (f->cstate[c] & FTL_CHUNK_OFFLINE) {
                f->cline[c] = INVALID;
                continue;
            }
            f->cline[c] = i;
            l->members[l->nmembers++] = c;
        }
        used += l->nmembers;
        l->state = l->nmembers ? LINE_FREE : LINE_BAD;
        l->valid = 0;
    }
}

static uint64_t usable_sectors(const struct ftl *f, uint64_t *max_line)
{
    uint64_t sum = 0;
    *max_line = 0;
    for (uint32_t i = 0; i < f->nlines; i++) {
        uint64_t cap = line_capacity(f, &f->lines[i]);
        sum += cap;
        if (cap > *max_line)
            *max_line = cap;
    }
    return sum;
}

static int read_chunk_table(struct ftl *f, char *err, size_t errlen)
{
    const uint32_t step = 1024;
    struct ftl_chunk_info *ci = calloc(step, sizeof(*ci));
    if (!ci) {
        seterr(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (uint64_t c = 0; c < f->nchunks; c += step) {
        uint32_t n = f->nchunks - c < step ? f->nchunks - c : step;
        int rc = f->ops->chunk_info(f->dev, c, n, ci);
        if (rc) {
            seterr(err, errlen, "reading the chunk information log failed (%d)", rc);
            free(ci);
            return -EIO;
        }
        for (uint32_t i = 0; i < n; i++) {
            f->cstate[c + i] = ci[i].state;
            f->cwp[c + i] = ci[i].written;
        }
    }
    free(ci);
    return 0;
}

void ftl_abandon(struct ftl *f)
{
    if (!f)
        return;
    free(f->meta);
    free(f->cstate);
    free(f->cwp);
    free(f->cline);
    free(f->lines);
    free(f->member_store);
    free(f->l2p);
    free(f->p2l);
    free(f->wbuf);
    free(f->iobuf);
    free(f->zbuf);
    free(f);
}

/* ---- checkpoint ---- */

static uint64_t region_chunk(const struct ftl *f, int region, uint32_t i)
{
    return f->meta[region * f->meta_chunks + i];
}

/* Write [0, n) of the region's linear sector space from buf (n a multiple of WS_MIN). */
static int region_write(struct ftl *f, int region, const uint8_t *buf, uint64_t n)
{
    for (uint64_t done = 0; done < n;) {
        uint64_t c = region_chunk(f, region, done / f->g.clba);
        uint32_t k = n - done < f->g.clba ? n - done : f->g.clba;
        int rc = dev_write(f, chunk_lba(f, c), k, buf + done * f->ss);
        if (rc)
            return rc;
        f->st.meta_write_sectors += k;
        done += k;
    }
    return 0;
}

static int region_read(struct ftl *f, int region, uint64_t first, uint8_t *buf, uint64_t n)
{
    for (uint64_t done = 0; done < n;) {
        uint64_t s = first + done;
        uint64_t c = region_chunk(f, region, s / f->g.clba);
        uint32_t off = s % f->g.clba;
        uint32_t k = n - done < f->g.clba - off ? n - done : f->g.clba - off;
        if (off + k > f->cwp[c])
            return -ENODATA; /* not written */
        int rc = dev_read(f, chunk_lba(f, c) + off, k, buf + done * f->ss);
        if (rc)
            return rc;
        done += k;
    }
    return 0;
}

static uint64_t ckpt_sectors(const struct ftl *f)
{
    uint64_t n = 1 + (payload_bytes(f->logical, f->nlines) + f->ss - 1) / f->ss;
    return (n + f->g.ws_min - 1) / f->g.ws_min * f->g.ws_min;
}

static int write_checkpoint(struct ftl *f, char *err, size_t errlen)
{
    int region = f->region ^ 1;
    uint64_t n = ckpt_sectors(f), pb = payload_bytes(f->logical, f->nlines);
    uint8_t *buf = alloc_aligned(n * f->ss, 4096), *p;
    struct ckpt_hdr h = { .version = CKPT_VERSION };
    int rc = 0;

    if (!buf) {
        seterr(err, errlen, "out of memory for the checkpoint");
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < f->meta_chunks && !rc; i++)
        rc = make_free(f, region_chunk(f, region, i), &f->st.meta_write_sectors);
    if (rc) {
        seterr(err, errlen, "cannot erase the checkpoint chunks (%d)", rc);
        free(buf);
        return rc;
    }
    p = buf + f->ss;
    memcpy(p, f->l2p, f->logical * 4);
    p += f->logical * 4;
    for (uint32_t i = 0; i < f->nlines; i++)
        *p++ = f->lines[i].state;
    for (uint32_t i = 0; i < f->nlines; i++, p += 4)
        memcpy(p, &f->lines[i].erases, 4);
    memcpy(h.magic, CKPT_MAGIC, 8);
    h.seq = f->seq + 1;
    h.num_grp = f->g.num_grp;
    h.num_pu = f->g.num_pu;
    h.num_chk = f->g.num_chk;
    h.clba = f->g.clba;
    h.ws_min = f->g.ws_min;
    h.ws_opt = f->g.ws_opt;
    h.sector_size = f->ss;
    h.line_pus = f->line_pus;
    h.logical = f->logical;
    h.nlines = f->nlines;
    h.meta_chunks = f->meta_chunks;
    h.open_line = f->cur;
    h.cursor = f->cursor;
    h.payload_bytes = pb;
    h.payload_crc = ftl_crc32(0, buf + f->ss, pb);
    h.hdr_crc = ftl_crc32(0, &h, sizeof(h));
    memcpy(buf, &h, sizeof(h));
    rc = region_write(f, region, buf, n);
    free(buf);
    if (rc) {
        seterr(err, errlen, "writing the checkpoint failed");
        return rc;
    }
    f->seq++;
    f->region = region;
    return 0;
}

/* After loading: the marker right after the checkpoint, filling its chunk. */
static int write_marker(struct ftl *f, uint64_t at)
{
    uint64_t c = region_chunk(f, f->region, at / f->g.clba);
    uint32_t off = at % f->g.clba;
    uint8_t *buf = f->iobuf;

    memset(buf, 0, (size_t)f->g.clba * f->ss);
    memcpy(buf, MARK_MAGIC, 8);
    memcpy(buf + 8, &f->seq, 8);
    if (f->cwp[c] != off)
        return -EIO;
    int rc = dev_write(f, chunk_lba(f, c) + off, f->g.clba - off, buf);
    f->st.meta_write_sectors += f->g.clba - off;
    return rc;
}

/* Sectors of chunk member mi of a line below the line's cursor. */
static uint32_t written_below(const struct ftl *f, const struct line *l, uint32_t mi, uint64_t cur)
{
    uint64_t stripe = (uint64_t)f->unit * l->nmembers;
    uint64_t full = cur / stripe, rem = cur % stripe;
    uint64_t extra = rem > (uint64_t)mi * f->unit ? rem - (uint64_t)mi * f->unit : 0;
    return full * f->unit + (extra > f->unit ? f->unit : extra);
}

static int try_region(struct ftl *f, int region, struct ckpt_hdr *h)
{
    uint8_t *sec = f->iobuf;
    uint32_t crc;

    if (region_read(f, region, 0, sec, 1))
        return -1;
    memcpy(h, sec, sizeof(*h));
    crc = h->hdr_crc;
    h->hdr_crc = 0;
    if (memcmp(h->magic, CKPT_MAGIC, 8) || ftl_crc32(0, h, sizeof(*h)) != crc)
        return -1;
    h->hdr_crc = crc;
    return 0;
}

int ftl_format(const struct ftl_geo *g, const struct ftl_dev_ops *ops, void *dev,
               const struct ftl_format_opts *o, char *err, size_t errlen)
{
    struct ftl *f;
    uint64_t usable, max_line, slack;
    int rc;

    if (o->op_pcent < 0 || o->op_pcent > 400) {
        seterr(err, errlen, "--op must be in 0..400 %% (got %g)", o->op_pcent);
        return -EINVAL;
    }
    f = ftl_new(g, ops, dev, o->line_pus, err, errlen);
    if (!f)
        return -EINVAL;
    rc = read_chunk_table(f, err, errlen);
    if (rc)
        goto out;
    for (uint32_t j = 0; j < 2 * f->meta_chunks; j++)
        if (f->cstate[f->meta[j]] & FTL_CHUNK_OFFLINE) {
            seterr(err, errlen, "metadata chunk %" PRIu64 " is offline", f->meta[j]);
            rc = -EIO;
            goto out;
        }
    build_lines(f);
    usable = usable_sectors(f, &max_line);
    f->logical = (uint64_t)(usable / (1.0 + o->op_pcent / 100.0));
    slack = SLACK_LINES * max_line;
    if (usable < slack + 1 || f->logical > usable - slack) {
        double min_op = usable > slack ? 100.0 * slack / (usable - slack) : -1;
        if (min_op < 0)
            seterr(err, errlen, "the device has too few lines (%u of %" PRIu64 " sectors) for GC",
                   f->nlines, max_line);
        else
            seterr(err, errlen, "--op %g %% leaves GC less than %d lines of room: with %u lines "
                   "of %" PRIu64 " sectors, use --op %.1f or more (or fewer --line-pus)",
                   o->op_pcent, SLACK_LINES, f->nlines, max_line, min_op + 0.05);
        rc = -EINVAL;
        goto out;
    }
    for (uint64_t c = 0; c < f->nchunks && !rc; c++)
        if (!(f->cstate[c] & FTL_CHUNK_OFFLINE))
            rc = make_free(f, c, &f->st.pad_sectors);
    if (rc) {
        seterr(err, errlen, "erasing the device failed");
        goto out;
    }
    for (uint32_t i = 0; i < f->nlines; i++)
        f->free_lines += f->lines[i].state == LINE_FREE;
    f->l2p = malloc(f->logical * 4);
    if (!f->l2p) {
        seterr(err, errlen, "out of memory");
        rc = -ENOMEM;
        goto out;
    }
    memset(f->l2p, 0xff, f->logical * 4);
    f->seq = 0;
    f->region = 1; /* the first checkpoint goes to region 0 */
    rc = write_checkpoint(f, err, errlen);
out:
    ftl_abandon(f);
    return rc;
}

struct ftl *ftl_open(const struct ftl_geo *g, const struct ftl_dev_ops *ops, void *dev,
                     bool force, char *err, size_t errlen)
{
    struct ckpt_hdr h[2], *best = NULL;
    struct ftl *f;
    uint8_t *buf = NULL, *p;
    uint64_t n, after;
    int region = -1, ok[2];
    bool dirty;

    /* the line width comes from the checkpoint: find it with a provisional setup */
    f = ftl_new(g, ops, dev, 1, err, errlen);
    if (!f)
        return NULL;
    if (read_chunk_table(f, err, errlen))
        goto fail;
    for (int r = 0; r < 2; r++) {
        ok[r] = try_region(f, r, &h[r]) == 0;
        if (ok[r] && (!best || h[r].seq > best->seq)) {
            best = &h[r];
            region = r;
        }
    }
    if (!best) {
        seterr(err, errlen, "no host FTL checkpoint on the device: it was never formatted "
               "(run `hostftl format`, or start with --format)");
        goto fail;
    }
    if (best->num_grp != g->num_grp || best->num_pu != g->num_pu || best->num_chk != g->num_chk ||
        best->clba != g->clba || best->ws_min != g->ws_min || best->ws_opt != g->ws_opt ||
        best->sector_size != g->sector_size) {
        seterr(err, errlen, "the checkpoint was written for another geometry (%ux%ux%u chunks of "
               "%u): format the device again", best->num_grp, best->num_pu, best->num_chk,
               best->clba);
        goto fail;
    }
    struct ckpt_hdr hb = *best;
    ftl_abandon(f);
    f = ftl_new(g, ops, dev, hb.line_pus, err, errlen);
    if (!f)
        return NULL;
    if (read_chunk_table(f, err, errlen))
        goto fail;
    if (f->nlines != hb.nlines || f->meta_chunks != hb.meta_chunks) {
        seterr(err, errlen, "the checkpoint's layout does not match this version of hostftl");
        goto fail;
    }
    build_lines(f);
    /* the CRC only says the header is whole: what sizes the reads must fit the device
     * (the regions hold a map of every physical sector) */
    if (hb.logical == 0 || hb.logical > f->phys) {
        seterr(err, errlen, "checkpoint %" PRIu64 " says %" PRIu64 " logical sectors; the "
               "device has %" PRIu64 " sectors: format the device again", hb.seq, hb.logical,
               f->phys);
        goto fail;
    }
    f->logical = hb.logical;
    f->region = region;
    f->seq = hb.seq;
    n = ckpt_sectors(f);
    buf = alloc_aligned(n * f->ss, 4096);
    f->l2p = malloc(f->logical * 4);
    if (!buf || !f->l2p) {
        seterr(err, errlen, "out of memory");
        goto fail;
    }
    if (region_read(f, region, 0, buf, n)) {
        seterr(err, errlen, "checkpoint %" PRIu64 " is incomplete on the device", hb.seq);
        goto fail;
    }
    if (hb.payload_bytes != payload_bytes(f->logical, f->nlines) ||
        ftl_crc32(0, buf + f->ss, hb.payload_bytes) != hb.payload_crc) {
        seterr(err, errlen, "checkpoint %" PRIu64 " is damaged (checksum)", hb.seq);
        goto fail;
    }
    after = n; /* the marker's place */
    {
        uint64_t c = region_chunk(f, region, after / f->g.clba);
        dirty = f->cwp[c] > after % f->g.clba;
    }
    if (dirty && !force) {
        seterr(err, errlen, "the FTL was not stopped cleanly after checkpoint %" PRIu64 ": what "
               "was written since is not in it. Start with --force to use it anyway (those "
               "writes are lost), or format", hb.seq);
        goto fail;
    }
    p = buf + f->ss;
    memcpy(f->l2p, p, f->logical * 4);
    p += f->logical * 4;
    for (uint32_t i = 0; i < f->nlines; i++) {
        uint8_t s = *p++;
        if (f->lines[i].state != LINE_BAD)
            f->lines[i].state = s == LINE_BAD ? LINE_FREE : s;
    }
    for (uint32_t i = 0; i < f->nlines; i++, p += 4)
        memcpy(&f->lines[i].erases, p, 4);
    free(buf);
    buf = NULL;
    f->cur = hb.open_line;
    f->cursor = f->buf_start = hb.cursor;
    if (f->cur >= (int64_t)f->nlines || (f->cur >= 0 && f->lines[f->cur].state != LINE_OPEN))
        f->cur = -1;
    /* the open line must be where the checkpoint left it */
    if (f->cur >= 0) {
        struct line *l = &f->lines[f->cur];
        bool same = true;
        for (uint32_t m = 0; m < l->nmembers; m++)
            same &= f->cwp[l->members[m]] == written_below(f, l, m, f->cursor);
        if (!same) {
            if (!force) {
                seterr(err, errlen, "the open line's chunks moved since checkpoint %" PRIu64
                       ": start with --force or format", hb.seq);
                goto fail;
            }
            for (uint32_t m = 0; m < l->nmembers; m++)
                if (pad_chunk(f, l->members[m], &f->st.pad_sectors))
                    goto fail;
            l->state = LINE_CLOSED;
            f->cur = -1;
        }
    }
    for (uint32_t i = 0; i < f->nlines; i++)
        if (f->lines[i].state == LINE_OPEN && i != f->cur)
            f->lines[i].state = LINE_CLOSED; /* only one line is ever open */
    /* rebuild p2l and valid counts; a mapping into a chunk that lost it is dropped */
    for (uint64_t lba = 0; lba < f->logical; lba++) {
        uint32_t ppa = f->l2p[lba];
        if (ppa == INVALID)
            continue;
        uint64_t c = ppa / f->g.clba;
        uint32_t li = ppa < f->phys ? f->cline[c] : INVALID;
        if (li == INVALID || f->lines[li].state == LINE_FREE || f->lines[li].state == LINE_BAD ||
            ppa % f->g.clba >= f->cwp[c]) {
            if (!force) {
                seterr(err, errlen, "checkpoint %" PRIu64 " maps sector %" PRIu64 " to LBA %u, "
                       "which holds no data: start with --force or format", hb.seq, lba, ppa);
                goto fail;
            }
            f->l2p[lba] = INVALID;
            continue;
        }
        f->p2l[ppa] = lba;
        f->lines[li].valid++;
    }
    f->free_lines = 0;
    for (uint32_t i = 0; i < f->nlines; i++)
        f->free_lines += f->lines[i].state == LINE_FREE;
    if (!dirty && write_marker(f, after)) {
        seterr(err, errlen, "writing the start marker after checkpoint %" PRIu64 " failed", hb.seq);
        goto fail;
    }
    (void)ok;
    return f;
fail:
    free(buf);
    ftl_abandon(f);
    return NULL;
}

int ftl_close(struct ftl *f, char *err, size_t errlen)
{
    int rc;

    if (f->broken) {
        seterr(err, errlen, "a device error happened: no checkpoint written");
        ftl_abandon(f);
        return -EIO;
    }
    rc = ftl_flush(f);
    /* with tight open-chunk limits, close the open line's chunks first */
    if (!rc && f->cur >= 0 &&
        ((f->g.maxocpu && f->g.maxocpu < 2) ||
         (f->g.maxoc && f->lines[f->cur].nmembers + 1 > f->g.maxoc))) {
        struct line *l = &f->lines[f->cur];
        for (uint32_t m = 0; m < l->nmembers && !rc; m++)
            rc = pad_chunk(f, l->members[m], &f->st.pad_sectors);
        l->state = LINE_CLOSED;
        f->cur = -1;
    }
    if (!rc)
        rc = write_checkpoint(f, err, errlen);
    else
        seterr(err, errlen, "flushing the write buffer failed");
    ftl_abandon(f);
    return rc;
}
