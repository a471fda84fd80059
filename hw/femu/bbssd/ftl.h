/*
 * The blackbox SSD's flash translation layer: page-level mapping, writes striped over all
 * chips, over-provisioning, and garbage collection (greedy by default) whose reads,
 * programs and erases are charged on the same NAND timelines as host I/O, so host I/O
 * feels GC.
 *
 * Units: the FTL maps logical pages (LPN) to physical pages: its mapping units, one NAND
 * page each unless units_per_pg (map_unit_kb) packs several into a NAND page. "Page" in the
 * FTL's names and counters means such a unit; "NAND page" the flash's. Host data itself
 * lives elsewhere (the device's backend); the FTL decides only *when*.
 *
 * Mapping units smaller than the NAND page (units_per_pg > 1): each stream fills its open
 * line unit by unit; a NAND page is programmed once its units are all written, together
 * with the pages of the chip's other planes at the same page index (the stripe fills a
 * chip's planes in order: the program waits for the last plane's page). A host write
 * completes when the last program it completed ends, or at its arrival when every unit it
 * wrote still waits in a program not full yet (the controller's buffer and the chip's
 * page registers hold it). Flush pads each partly filled NAND page (its unused units are
 * garbage) and programs whatever waits. A host read of units on one NAND page costs one
 * tR and the transfer of those units' bytes (served from the buffer, no NAND operation,
 * while their page waits); GC reads each NAND page of a victim once for all of its valid
 * units, and its moved units are packed like the host's. TLC/QLC pages keep their own
 * program latencies (the model has no one-shot programs).
 *
 * Layout: a "line" is block number b on every plane of every chip. Writes fill an open
 * line (one per stream, streams=: host writes and GC moves together or apart) page by
 * page, striping consecutive pages over channels first, then chips, then planes, so
 * sequential and random writes both use all the parallelism. GC collects the
 * full line its victim policy picks (gc_policy, ftl/victim.h): by default the one with the
 * fewest valid pages.
 *
 * GC thresholds follow FEMU: with T lines, background GC may run when free lines fall to
 * (100 - gc_thres_pcent)% of T, and forced (foreground) GC runs before a write when free
 * lines fall to (100 - gc_thres_pcent_high)% of T or to the minimum reserve, whichever is
 * larger. Background GC works chip by chip: each chip's share of the victim starts when that
 * chip is idle, whatever the others do, and a host command goes before the GC work not yet
 * started on its chip (FtlBgJob). Forced GC collects whole victims at once. Forced GC always makes progress: ftl_config_check refuses configurations with
 * fewer than FTL_MIN_SPARE_LINES lines beyond what the exposed capacity needs.
 *
 * Reads of never-written (or deallocated) pages cost one NAND page read on the chip the
 * page would stripe to (lpn modulo chips), not zero: a real drive reads its mapping table
 * and answers from the controller, and a researcher must not see unwritten reads beat a
 * no-media device.
 *
 * State: with a store (ftl_attach_store: a memory area the device keeps in its backend
 * after the data), every change is written through, so a restart or a kill of QEMU keeps
 * the mapping, every line's state, write position, erase count and order, the background
 * GC victim's progress and the statistics; the NAND model gets its blocks' wear back. Each
 * mapping entry carries its own check, each line record a CRC; valid counts and the reverse
 * map are rebuilt from the mapping at a load, so a kill between two stores cannot leave
 * them disagreeing. A victim among lines of equal valid pages is the one filled first, so
 * GC's choices depend on the saved state alone. Without a store, state lives in memory.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_BBSSD_FTL_H
#define FEMU_BBSSD_FTL_H

#include <stdbool.h>
#include <stdint.h>

#include "../nand/nand.h"
#include "../ftl/pacing.h"
#include "../ftl/stream.h"
#include "../ftl/victim.h"

/* lines beyond the exposed capacity's: forced GC's reserve, the open line, one of garbage */
#define FTL_MIN_SPARE_LINES 4
#define FTL_UNMAPPED UINT64_MAX

typedef struct FtlConfig {
    NandGeometry geo;           /* blks_per_pl may come from ftl_derive_blocks */
    NandTiming tm;
    uint64_t exposed_pages;     /* logical pages (mapping units) the host can address */
    uint32_t units_per_pg;      /* mapping units per NAND page, a power of two; 0 or 1: one */
    uint32_t gc_thres_pcent;        /* background GC, 1..99 (FEMU default 75) */
    uint32_t gc_thres_pcent_high;   /* forced GC, gc_thres_pcent..99 (FEMU default 95) */
    FtlPolicyChoice gc_policy;      /* which full line GC collects (policy NULL: greedy) */
    FtlPolicyChoice gc_pacing;      /* when GC works (policy NULL: proportional) */
    FtlPolicyChoice streams;        /* which open line a page goes to (NULL: host-gc) */
    /*
     * Sharing the flash with another namespace (e.g. a zoned one): an existing model whose
     * chips, planes and pages match geo, and the first block of every plane the FTL uses;
     * geo.blks_per_pl is then the FTL's own share. NULL / 0 when alone.
     */
    NandModel *shared_nand;
    uint32_t first_block;
    /* tests: 8-byte table entries in memory, which only drives past 2^32 - 1 pages need */
    bool wide_tables;
} FtlConfig;

typedef struct FtlStats {
    uint64_t host_pages_written;
    uint64_t host_pages_read;
    uint64_t unmapped_pages_read;
    uint64_t prefetch_pages_read;   /* read ahead (sra/), not the host's */
    uint64_t nand_pages_written;    /* host + GC programs */
    uint64_t gc_pages_moved;        /* valid pages GC copied */
    uint64_t gc_runs;               /* victim lines collected */
    uint64_t gc_forced_runs;        /* of which in the foreground */
    uint64_t gc_bg_ops;             /* background GC reads and erases, each in its chip's
                                       idle time */
    uint64_t gc_read_overtakes;     /* host reads that went before background GC work
                                       queued on their chip */
    uint64_t blocks_erased;
    uint64_t pages_trimmed;
    uint64_t free_lines;
    uint64_t total_lines;
} FtlStats;

typedef struct Ftl Ftl;

/*
 * Sets geo->blks_per_pl so that the raw capacity exceeds exposed_bytes by op_pcent percent
 * (over-provisioning = (raw - exposed) / exposed), rounded up to whole blocks.
 */
bool ftl_derive_blocks(NandGeometry *geo, uint64_t exposed_bytes, double op_pcent,
                       char **err);
/*
 * The same with min_spare blocks beyond the data required (another FTL's own minimum);
 * raise: fewer are raised to it instead of refused (op_pcent not asked for).
 */
bool ftl_derive_blocks_spare(NandGeometry *geo, uint64_t exposed_bytes, double op_pcent,
                             uint32_t min_spare, bool raise, char **err);
/*
 * Lines c needs beyond the exposed capacity's: FTL_MIN_SPARE_LINES with one open line,
 * one more for every other stream (streams=).
 */
uint32_t ftl_min_spare_lines(const FtlConfig *c);
/* Mapping units per NAND page (at least 1), and the bytes of one. */
uint32_t ftl_units_per_page(const FtlConfig *c);
uint64_t ftl_unit_bytes(const FtlConfig *c);
/* Validates a configuration (geometry, timing, thresholds, minimum spare lines). */
bool ftl_config_check(const FtlConfig *c, char **err);

Ftl *ftl_new(const FtlConfig *c, char **err);
void ftl_free(Ftl *f);

/* Bytes of store a configuration needs (header, statistics, line records, mapping). */
uint64_t ftl_store_bytes(const FtlConfig *c);
/*
 * Binds the FTL to its store (ftl_store_bytes long, 8-byte aligned; it survives as the
 * backend does). A blank store (all zero) is formatted: a new drive; a store of this
 * configuration is loaded; a store of another configuration, a damaged header or state
 * beyond repair are refused with *err saying what differs (the property), and the FTL
 * stays as it was. Call before any I/O. Without a store the FTL keeps its state in memory.
 */
bool ftl_attach_store(Ftl *f, void *store, char **err);
/*
 * The same for a store the caller knows is all zero (a hole of a sparse file, fresh memory):
 * formatted without reading it through, which for a large drive is most of the work.
 */
bool ftl_format_store(Ftl *f, void *store, char **err);
/* Where the store keeps line's record and lpn's mapping entry (byte offsets), for tests. */
uint64_t ftl_store_line_offset(const FtlConfig *c, uint32_t line);
uint64_t ftl_store_map_offset(const FtlConfig *c, uint64_t lpn);

/* Each returns the completion time of the whole request: the latest of its pages. */
uint64_t ftl_write(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns);
/* The same for pages in any order (a write buffer's batch), each once. */
uint64_t ftl_write_list(Ftl *f, const uint64_t *lpns, uint64_t n, uint64_t now_ns);
uint64_t ftl_read(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns);
/* The host read npages from the read-ahead cache: host activity, no NAND read. */
void ftl_cached_read(Ftl *f, uint64_t npages, uint64_t now_ns);
/* Read-ahead: reads mapped pages only, not counted as the host's. */
uint64_t ftl_prefetch(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns);
/* How many pages from lpn on are mapped, at most max. */
uint64_t ftl_mapped_run(const Ftl *f, uint64_t lpn, uint64_t max);
uint64_t ftl_trim(Ftl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns);
/*
 * Completes when every program issued so far has completed; with sub-page units, first
 * pads and programs the NAND pages still filling and programs what waits for its planes.
 */
uint64_t ftl_flush(Ftl *f, uint64_t now_ns);
/* The device is idle at now_ns: background GC may use the chips up to now_ns. */
void ftl_idle(Ftl *f, uint64_t now_ns);
/* lpn.. is read or written soon: mapping entries are fetched into the CPU cache. No effect. */
void ftl_hint(Ftl *f, uint64_t lpn, uint64_t npages, bool write);

const FtlStats *ftl_stats(Ftl *f);
NandModel *ftl_nand(Ftl *f);
/* Write amplification: NAND pages written / host pages written (1.0 before any write). */
double ftl_waf(const Ftl *f);

/* Introspection for tests: where lpn lives (false if unmapped). */
bool ftl_lookup(Ftl *f, uint64_t lpn, NandAddr *out);
/* The same with the unit's place in its NAND page (0 .. units per page - 1). */
bool ftl_lookup_unit(Ftl *f, uint64_t lpn, NandAddr *out, uint32_t *unit);
/* Checks that mapping, reverse mapping and valid counts agree; *err says what does not. */
bool ftl_check_consistency(Ftl *f, char **err);

#endif
