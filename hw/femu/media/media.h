/*
 * The media model interface: the device asks the model *when* a command completes; the
 * model never reads a clock (arrival times are passed in) and never touches QEMU. Every
 * femu_mode provides one of these; nossd is the trivial one.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_MEDIA_H
#define FEMU_MEDIA_H

#include <stdbool.h>
#include <stdint.h>

typedef enum FemuMediaOp {
    FEMU_MEDIA_READ,
    FEMU_MEDIA_WRITE,
    FEMU_MEDIA_FLUSH,
    FEMU_MEDIA_DEALLOCATE,
    FEMU_MEDIA_WRITE_ZEROES,
    FEMU_MEDIA_ZONE_RESET,      /* offset/len: the zone (or chunk); its flash is erased */
    FEMU_MEDIA_ZONE_DRAIN,      /* the zone's buffered data goes to flash (finish, close);
                                   len: the bytes written in it, durable from then on */
    FEMU_MEDIA_SHUTDOWN,        /* controller shutdown (CC.SHN): every buffer goes to flash,
                                   protected or not; a flush for models with one buffer */
} FemuMediaOp;

typedef struct FemuMediaReq {
    FemuMediaOp op;
    uint32_t nsid;
    uint64_t offset;        /* bytes from the start of the device's storage */
    uint64_t len;           /* bytes (0 for a flush) */
    uint64_t arrival_ns;    /* when the device fetched the command */
    uint64_t ns_end;        /* where the namespace ends, as an offset (0: not given) */
    /*
     * For a model that buffers data (zns with plp): a write's bytes (NULL: zeroes)
     * and whether the host asked for them to survive a power loss; a read's buffer, which
     * holds the backend's bytes and gets the model's newer ones.
     */
    const void *data;
    void *read_buf;
    bool protect;
    bool fua;               /* Force Unit Access: complete when the data is on flash */
    uint32_t rg, ruh;       /* a write's placement (fdp): reclaim group and unit handle */
} FemuMediaReq;

/*
 * When a device gives its models background time (FemuMediaOps.idle): once no command has
 * been outstanding for FEMU_IDLE_NS, then every FEMU_IDLE_REPEAT_NS while that lasts.
 */
#define FEMU_IDLE_NS 1000000
#define FEMU_IDLE_REPEAT_NS 100000000

typedef struct FemuMedia FemuMedia;

/* Receives one named statistic; names are lower_case_with_underscores. */
typedef void FemuMediaStatFn(void *opaque, const char *name, uint64_t value);

typedef struct FemuMediaOps {
    const char *name;
    /* Completion time in ns, never earlier than req->arrival_ns. */
    uint64_t (*submit)(FemuMedia *m, const FemuMediaReq *req);
    /* Optional: the device has been idle since now_ns (background work may run). */
    void (*idle)(FemuMedia *m, uint64_t now_ns);
    /*
     * Optional: power is cut at now_ns. Volatile state (caches, buffers) is lost; what
     * capacitors hold up is saved. Nothing is submitted until the next power-up.
     */
    void (*power_loss)(FemuMedia *m, uint64_t now_ns);
    /* Optional: reports the model's statistics one by one. */
    void (*stats)(FemuMedia *m, FemuMediaStatFn *emit, void *opaque);
    /*
     * Optional, changes no result: a request op (read or write) of [offset, offset + len)
     * comes soon. A model may fetch its tables for it into the CPU cache (femu-sim, one
     * command ahead).
     */
    void (*hint)(FemuMedia *m, FemuMediaOp op, uint64_t offset, uint64_t len);
    void (*destroy)(FemuMedia *m);
} FemuMediaOps;

/*
 * Where a conventional FTL's write buffer (ftl/write-buffer.h) puts the data it programs:
 * the device's data area, through its write journal (offset: the backend's). NULL put: it
 * keeps no data.
 */
typedef struct FemuWbData {
    void (*put)(void *opaque, uint64_t offset, const void *src, uint64_t len);
    void *opaque;
} FemuWbData;

struct FemuMedia {
    const FemuMediaOps *ops;
    uint64_t last_arrival_ns;   /* the previous request's, for femu_media_retire */
    uint64_t backend_base;      /* the backend offset of the model's offset 0 */
    FemuWbData wb_data;         /* a buffering model's way to the data area, or none */
    /*
     * The unit its mapping deallocates (a logical page; offset 0 starts one): a part of
     * one is kept. 0: any byte range.
     */
    uint64_t page_bytes;
};

static inline uint64_t femu_media_submit(FemuMedia *m, const FemuMediaReq *req)
{
    return m->ops->submit(m, req);
}

static inline void femu_media_idle(FemuMedia *m, uint64_t now_ns)
{
    if (m->ops->idle) {
        m->ops->idle(m, now_ns);
    }
}

static inline void femu_media_hint(FemuMedia *m, FemuMediaOp op, uint64_t offset,
                                   uint64_t len)
{
    if (m->ops->hint) {
        m->ops->hint(m, op, offset, len);
    }
}

static inline void femu_media_power_loss(FemuMedia *m, uint64_t now_ns)
{
    if (m->ops->power_loss) {
        m->ops->power_loss(m, now_ns);
    }
}

static inline void femu_media_stats(FemuMedia *m, FemuMediaStatFn *emit, void *opaque)
{
    if (m->ops->stats) {
        m->ops->stats(m, emit, opaque);
    }
}

/*
 * Every chip's busy time, as "chipN_busy_ns" (N = ch * luns_per_ch + lun), and how often
 * the timelines back-filled and used planes together: "nand_gap_fills",
 * "nand_read_overtakes", "nand_multiplane_ops".
 */
struct NandModel;
void femu_media_emit_chip_busy(const struct NandModel *nand, FemuMediaStatFn *emit,
                               void *opaque);
/* Bytes a buffering model programs, at a model offset, into the data area (m: the media). */
void femu_media_put_data(void *m, uint64_t offset, const void *src, uint64_t len);
/* An emitter that passes every name on with a prefix ("nsN_"): femu_stat_prefixed's opaque. */
typedef struct FemuStatPrefix {
    FemuMediaStatFn *emit;
    void *opaque;
    const char *prefix;
} FemuStatPrefix;
void femu_stat_prefixed(void *opaque, const char *name, uint64_t value);
/* Host I/O counters and the front end's, under the stats property's names. */
struct IoCounters;
void femu_io_counters_emit(const struct IoCounters *io, FemuMediaStatFn *emit, void *opaque);
/*
 * Called by a media model with each request's arrival: the NAND timelines forget what
 * ended before the previous request arrived (requests arrive in time order).
 */
void femu_media_retire(FemuMedia *m, struct NandModel *nand, uint64_t arrival_ns);

static inline void femu_media_destroy(FemuMedia *m)
{
    if (m) {
        m->ops->destroy(m);
    }
}

/* nossd: no media model, every command completes when it arrives. */
FemuMedia *femu_media_nossd_new(void);

/*
 * Sequential read-ahead (sra/sra.h) in front of a model's reads: its configuration and,
 * where the model cannot tell by itself, how far from an offset data may be prefetched
 * (a zoned namespace's write pointers belong to the device). NULL: no read-ahead.
 */
struct SraConfig;
typedef struct FemuReadAhead {
    const struct SraConfig *cfg;
    uint64_t (*readable)(void *opaque, uint32_t nsid, uint64_t offset, uint64_t max);
    void *opaque;
} FemuReadAhead;

/* blackbox: a conventional SSD (page-level FTL with GC on the NAND model), wb: its buffer. */
struct FtlConfig;
struct Ftl;
struct FtlWbConfig;
FemuMedia *femu_media_bbssd_new(const struct FtlConfig *cfg, const FemuReadAhead *ra,
                                const struct FtlWbConfig *wb, const FemuWbData *data,
                                char **err);
/* Its FTL (to attach its store), or NULL for a model of another kind. */
struct Ftl *femu_media_bbssd_ftl(FemuMedia *m);

/*
 * zns: zones striped over the NAND model with per-zone write buffers or, with plp (its
 * flash field is filled in here), the power-loss-protected buffer of plp/, which holds
 * the data of acknowledged writes until they are programmed.
 */
struct ZnsFlashConfig;
struct PlpConfig;
FemuMedia *femu_media_zns_new(const struct ZnsFlashConfig *cfg, const FemuReadAhead *ra,
                              const struct PlpConfig *plp, char **err);
/* The zoned model's power-loss-protected buffer, or NULL. */
struct PlpBuffer *femu_media_zns_plp(FemuMedia *m);

/* fdp: Flexible Data Placement's FTL (fdp/fdp-ftl.h) on the NAND model. */
struct FdpFtlConfig;
struct FdpFtl;
FemuMedia *femu_media_fdp_new(const struct FdpFtlConfig *cfg, const struct FtlWbConfig *wb,
                              const FemuWbData *data, char **err);
struct FdpFtl *femu_media_fdp_ftl(FemuMedia *m);

/* whitebox: Open-Channel chunks on the NAND model with per-PU write caches. */
struct OcFlashConfig;
FemuMedia *femu_media_ocssd_new(const struct OcFlashConfig *cfg, uint64_t clba, char **err);

#endif
