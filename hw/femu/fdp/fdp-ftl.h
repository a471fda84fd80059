/*
 * Flexible Data Placement's FTL: a page-level FTL whose host writes go where the host's
 * placement handle says, with garbage collection that keeps the isolation each reclaim
 * unit handle promises.
 *
 * Terms (NVMe base specification, Flexible Data Placement):
 *   reclaim group (RG)   a set of chips; the flash's chips are split evenly into nrg groups,
 *                        each spanning as many channels as it can (chip c = lun * nchs + ch,
 *                        group g holds chips [g * k, (g + 1) * k), k = chips / nrg).
 *   reclaim unit (RU)    block b on every plane of every chip of one RG: the unit GC erases.
 *                        Pages fill it striped over its chips, then planes, then pages.
 *   reclaim unit handle  (RUH) a host stream: in each RG it references one open RU that its
 *                        host writes fill. Initially Isolated (II) handles' data may mix when
 *                        GC relocates it (one GC RU per RG for all of them); Persistently
 *                        Isolated (PI) handles' data never mixes (one GC RU per PI handle
 *                        per RG), so no RU ever holds two PI handles' data or a PI handle's
 *                        data beside another's.
 *
 * GC: per RG, the closed RU the victim policy picks (gc_policy, ftl/victim.h; by default
 * greedy: the fewest valid pages). Forced before a host write
 * when the RG's free RUs fall to the forced threshold; in the background (idle) when they
 * fall to the background threshold. Thresholds follow the blackbox FTL's percentages of the
 * RG's RUs, and never below the RUs the open handles and GC need (fdp_ftl_config_check).
 *
 * State: every change is written through to a store (fdp_ftl_attach_store), a memory area
 * the device keeps in its backend after the data, so a restart or a kill of QEMU keeps
 * every RU's state, the mapping and the statistics. Each mapping entry carries its own
 * check, each RU record a CRC; a load rebuilds valid counts and reverse mapping from the
 * mapping, so a kill between two stores cannot leave them disagreeing.
 *
 * Host data itself lives in the backend by LBA; the FTL decides only *when* (timing) and
 * *where on flash* (placement, WAF). QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_FDP_FTL_H
#define FEMU_FDP_FTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nand/nand.h"
#include "../ftl/pacing.h"
#include "../ftl/victim.h"

#define FDP_MAX_RUH 128         /* RUHID is one byte in an FDP event */
#define FDP_MAX_RG 256
#define FDP_GC_SPARE_RUS 3      /* per group, beyond the open units, when op_pcent sizes it */

typedef enum FdpRuhType {
    FDP_RUH_INITIALLY_ISOLATED = 1,     /* the specification's RUHT values */
    FDP_RUH_PERSISTENTLY_ISOLATED = 2,
} FdpRuhType;

typedef struct FdpFtlConfig {
    NandGeometry geo;
    NandTiming tm;
    uint64_t exposed_pages;         /* logical pages the host can address */
    uint32_t nrg;                   /* reclaim groups, 1..FDP_MAX_RG, dividing the chips */
    uint32_t nruh;                  /* reclaim unit handles, 1..FDP_MAX_RUH */
    uint8_t ruh_type[FDP_MAX_RUH];  /* FdpRuhType of each */
    uint32_t gc_thres_pcent;        /* background GC, as the blackbox FTL's */
    uint32_t gc_thres_pcent_high;   /* forced GC */
    FtlPolicyChoice gc_policy;      /* which closed RU of a group GC collects (NULL: greedy) */
    FtlPolicyChoice gc_pacing;      /* when GC works (NULL: burst) */
    /* an RU open longer than this is closed by the controller (0: no limit) */
    uint64_t ru_time_limit_ns;
    /* Sharing the flash with other namespaces, as FtlConfig: NULL / 0 when alone. */
    NandModel *shared_nand;
    uint32_t first_block;
} FdpFtlConfig;

typedef struct FdpFtlStats {
    uint64_t host_pages_written;
    uint64_t host_pages_read;
    uint64_t unmapped_pages_read;
    /* bytes of the host's writes and reads (fdp_ftl_count_host_bytes_*), not pages */
    uint64_t host_bytes_written;
    uint64_t host_bytes_read;
    uint64_t nand_pages_written;    /* host + GC programs */
    uint64_t gc_pages_moved;
    uint64_t gc_runs;               /* victim RUs collected */
    uint64_t gc_forced_runs;        /* of which before a host write */
    uint64_t rus_erased;
    uint64_t blocks_erased;         /* rus_erased * blocks per RU */
    uint64_t pages_trimmed;
    uint64_t pages_skipped;         /* left unwritten in RUs closed before they were full */
    uint64_t total_rus;
    uint64_t free_rus;
    /* host pages placed in another RG than asked, because the host had put more valid
       data in theirs than it holds well (see fdp-ftl.c); added by the FTL's implementation */
    uint64_t pages_redirected;
} FdpFtlStats;

/* One handle's share, summed over every RG (or one RG's, fdp_ftl_ruh_rg_stats). */
typedef struct FdpRuhStats {
    uint64_t host_pages_written;    /* host writes through this handle */
    uint64_t gc_pages_moved;        /* its data GC relocated (wherever it went) */
    uint64_t rus_in_use;            /* RUs it owns that are not free (open or closed) */
    uint64_t valid_pages;           /* its data on flash now */
} FdpRuhStats;

typedef struct FdpRgStats {
    uint64_t free_rus;
    uint64_t gc_runs;
    uint64_t rus_erased;
} FdpRgStats;

/* What the FTL tells its owner, for the FDP events the controller reports. */
typedef enum FdpFtlEventKind {
    FDP_FTL_EV_RU_NOT_FULL,     /* an RU closed before it was full (ruh_update, close_open) */
    FDP_FTL_EV_TIME_LIMIT,      /* an RU closed because ru_time_limit_ns passed */
    FDP_FTL_EV_REALLOCATED,     /* GC moved valid pages out of an RU */
} FdpFtlEventKind;

typedef struct FdpFtlEvent {
    FdpFtlEventKind kind;
    uint32_t rg;
    uint32_t ruh;       /* the handle that owned the RU (REALLOCATED: the first moved page's) */
    uint64_t lpn;       /* REALLOCATED: the first logical page moved */
    uint64_t npages;    /* REALLOCATED: pages moved; RU_NOT_FULL / TIME_LIMIT: pages left */
} FdpFtlEvent;

typedef void FdpFtlEventFn(void *opaque, const FdpFtlEvent *e);

typedef struct FdpFtl FdpFtl;

/* Validates a configuration; *err names the field and the allowed range. */
bool fdp_ftl_config_check(const FdpFtlConfig *c, char **err);
FdpFtl *fdp_ftl_new(const FdpFtlConfig *c, char **err);
void fdp_ftl_free(FdpFtl *f);
void fdp_ftl_set_event_fn(FdpFtl *f, FdpFtlEventFn *fn, void *opaque);

/* Bytes of store a configuration needs (header, statistics, RU records, mapping). */
uint64_t fdp_ftl_store_bytes(const FdpFtlConfig *c);
/*
 * Binds the FTL to its store (fdp_ftl_store_bytes long; survives as the backend does). A
 * blank store (all zero) is formatted; a store of this configuration is loaded; a store of
 * another configuration, or whose header fails its check, is refused with *err saying why.
 * Call before any I/O. Without a store the FTL keeps its state in memory only.
 */
bool fdp_ftl_attach_store(FdpFtl *f, void *store, char **err);
/*
 * Where the store keeps RU ru of group rg's record and lpn's mapping entry (byte offsets
 * into it), for tests that damage them. Added by the FTL's implementation.
 */
uint64_t fdp_ftl_store_ru_offset(const FdpFtlConfig *c, uint32_t rg, uint32_t ru);
uint64_t fdp_ftl_store_map_offset(const FdpFtlConfig *c, uint64_t lpn);

/*
 * Host I/O; each returns the completion time of the whole request. A write places every
 * page in the open RU of handle ruh in reclaim group rg (both in range: the caller resolved
 * the placement identifier).
 */
uint64_t fdp_ftl_write(FdpFtl *f, uint64_t lpn, uint64_t npages, uint32_t rg, uint32_t ruh,
                       uint64_t now_ns);
/* The same for pages in any order (a write buffer's batch), each once. */
uint64_t fdp_ftl_write_list(FdpFtl *f, const uint64_t *lpns, uint64_t n, uint32_t rg,
                            uint32_t ruh, uint64_t now_ns);
uint64_t fdp_ftl_read(FdpFtl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns);
/*
 * What a host command carried, in bytes (its length, not the pages it touched: the FDP
 * statistics' HBMW and the data units the Endurance Group log reports): a write's through
 * group rg, a read's. Counted now, saved with the next call that saves statistics: call it
 * just before the command's fdp_ftl_write or fdp_ftl_read.
 */
void fdp_ftl_count_host_bytes_written(FdpFtl *f, uint32_t rg, uint64_t bytes);
void fdp_ftl_count_host_bytes_read(FdpFtl *f, uint64_t bytes);
/* Invalidates the pages; reclaim units are left as they are (GC reclaims them). */
uint64_t fdp_ftl_trim(FdpFtl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns);
uint64_t fdp_ftl_flush(FdpFtl *f, uint64_t now_ns);
/* Idle since now_ns: background GC, and RUs past their time limit are closed. */
void fdp_ftl_idle(FdpFtl *f, uint64_t now_ns);

/*
 * Reclaim Unit Handle Update: the handle references a new RU in rg from its next write on.
 * Its current RU, if partly written, is closed (FDP_FTL_EV_RU_NOT_FULL); an empty one is
 * kept. Returns the pages the closed RU had left (0: nothing changed).
 */
uint64_t fdp_ftl_ruh_update(FdpFtl *f, uint32_t rg, uint32_t ruh);
/* Every partly written host RU is closed (a controller reset); how many were. */
uint32_t fdp_ftl_close_open(FdpFtl *f);

/* Pages the handle's RU in rg can still take (a whole RU's when none is open yet). */
uint64_t fdp_ftl_ru_avail(const FdpFtl *f, uint32_t rg, uint32_t ruh);
/* When the handle's current RU in rg took its first page (UINT64_MAX: none open). */
uint64_t fdp_ftl_ru_opened_ns(const FdpFtl *f, uint32_t rg, uint32_t ruh);
uint64_t fdp_ftl_ru_pages(const FdpFtl *f);     /* pages per RU */
uint32_t fdp_ftl_rus_per_rg(const FdpFtl *f);

const FdpFtlStats *fdp_ftl_stats(const FdpFtl *f);
void fdp_ftl_ruh_stats(const FdpFtl *f, uint32_t ruh, FdpRuhStats *out);
void fdp_ftl_ruh_rg_stats(const FdpFtl *f, uint32_t rg, uint32_t ruh, FdpRuhStats *out);
void fdp_ftl_rg_stats(const FdpFtl *f, uint32_t rg, FdpRgStats *out);
/* NAND pages written / host pages written, overall or for one handle's data (1.0 before). */
double fdp_ftl_waf(const FdpFtl *f);
double fdp_ftl_ruh_waf(const FdpFtl *f, uint32_t ruh);
NandModel *fdp_ftl_nand(FdpFtl *f);
/* The configuration it was made with (ADDED BY LEAD: please implement in fdp-ftl.c). */
const FdpFtlConfig *fdp_ftl_config(const FdpFtl *f);

/* Tests: fn(opaque) after every write to the store (where a kill could come). */
void fdp_ftl_set_store_hook(FdpFtl *f, void (*fn)(void *opaque), void *opaque);

/* Introspection for tests. Where lpn lives and whose data it is (false: unmapped). */
bool fdp_ftl_lookup(const FdpFtl *f, uint64_t lpn, NandAddr *addr, uint32_t *rg,
                    uint32_t *ru, uint32_t *ruh);
/*
 * Mapping, reverse mapping, valid counts and isolation agree: no RU of a Persistently
 * Isolated handle holds another handle's data, no RU ever mixes a PI handle's data with
 * another's. *err says what does not.
 */
bool fdp_ftl_check_consistency(const FdpFtl *f, char **err);

#endif
