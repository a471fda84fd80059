/*
 * Zones on flash: where a zoned namespace's data sits on the shared NAND model and what
 * each operation costs. The zone state machine (zone.h) decides validity; this decides
 * time. No GC: a zone reset erases the zone's blocks.
 *
 * Placement: each zone spans `stripe` chips (consecutive chips in channel-first order,
 * so a stripe covers channels before it doubles up on one), and zone z's page p goes to
 * chip (first chip of z) + p % stripe, at page p / stripe of that chip's part of the zone.
 * Zones are laid out round-robin: luns / stripe zones side by side use all chips, and the
 * next row of zones takes the next blocks. Different zones share chips when stripe is
 * large and avoid each other when it is small.
 *
 * Write buffer: as real ZNS drives do, host writes gather in a per-zone DRAM buffer until
 * a program unit (one page on every chip of the stripe) is full; then those pages are
 * programmed on their chips. A write completes when its data is in the buffer, which may
 * mean waiting for earlier programs to free space. At most `wbuf_zones` zones hold a
 * buffer; a write to another zone first flushes the least recently written zone's buffer.
 * Flush, Zone Finish and Zone Close drain (program padded partial units). Reads of data
 * still in the buffer (or whose program is still in flight) are served from DRAM at no
 * NAND cost; other reads read their pages (in parallel over the zone's chips).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_ZNS_FLASH_H
#define FEMU_ZNS_FLASH_H

#include <stdbool.h>
#include <stdint.h>

#include "../nand/nand.h"

typedef struct ZnsFlashConfig {
    NandGeometry geo;           /* blks_per_pl may be derived by zns_flash_derive_blocks */
    NandTiming tm;
    uint64_t nr_zones;
    uint64_t zone_bytes;        /* zone size */
    uint64_t zone_cap_bytes;    /* writable part of each zone */
    uint32_t stripe;            /* chips per zone: 1..chips, dividing the number of chips */
    uint64_t wbuf_bytes;        /* per-zone write buffer, >= one program unit */
    uint32_t wbuf_zones;        /* zones that may hold a buffer at once, >= 1 */
    /*
     * Sharing the flash with another namespace (e.g. a blackbox one): an existing model
     * to use instead of creating one from geo/tm, and the first block of every plane this
     * namespace may use (blocks below it belong to the other). NULL / 0 when alone.
     */
    NandModel *shared_nand;
    uint32_t first_block;
} ZnsFlashConfig;

typedef struct ZnsFlashStats {
    uint64_t host_bytes_written;
    uint64_t host_bytes_read;
    uint64_t buffer_read_hits;      /* reads served from the write buffer */
    uint64_t pages_programmed;
    uint64_t pad_pages_programmed;  /* padding programmed by flushes of partial units */
    uint64_t pages_read;
    uint64_t prefetch_pages_read;   /* read ahead (sra/), also counted in pages_read */
    uint64_t blocks_erased;
    uint64_t buffer_flushes;        /* partial units drained (flush/finish/close/eviction) */
    uint64_t buffer_waits;          /* writes that waited for buffer space */
} ZnsFlashStats;

typedef struct ZnsFlash ZnsFlash;

/* Blocks per plane so that every zone fits (whole blocks per chip per zone). */
bool zns_flash_derive_blocks(ZnsFlashConfig *c, char **err);
/* Checks the configuration; *err names the property (zns_* names) and allowed range. */
bool zns_flash_config_check(const ZnsFlashConfig *c, char **err);

ZnsFlash *zns_flash_new(const ZnsFlashConfig *c, char **err);
void zns_flash_free(ZnsFlash *f);

/* Byte offsets are relative to the namespace; each returns the completion time (ns). */
uint64_t zns_flash_write(ZnsFlash *f, uint64_t offset, uint64_t len, uint64_t now_ns);
uint64_t zns_flash_read(ZnsFlash *f, uint64_t offset, uint64_t len, uint64_t now_ns);
/* The same read on behalf of read-ahead: not counted as the host's. */
uint64_t zns_flash_prefetch(ZnsFlash *f, uint64_t offset, uint64_t len, uint64_t now_ns);
/* Drains every buffer (Flush) or one zone's (Finish, Close). */
uint64_t zns_flash_flush(ZnsFlash *f, uint64_t now_ns);
uint64_t zns_flash_drain_zone(ZnsFlash *f, uint64_t zone, uint64_t now_ns);
/* Zone Reset: drops the zone's buffer and erases its blocks. */
uint64_t zns_flash_reset_zone(ZnsFlash *f, uint64_t zone, uint64_t now_ns);

/*
 * Programs zone pages [pg_lo, pg_hi) (below the capacity) at now_ns, on nand (NULL: the
 * flash's own model; another one, e.g. a copy, for what-if timing); pad of them hold no
 * data. Returns when the last is done. For a buffer in front of the zones (plp/).
 */
uint64_t zns_flash_program(ZnsFlash *f, NandModel *nand, uint64_t zone, uint64_t pg_lo,
                           uint64_t pg_hi, uint64_t pad, uint64_t now_ns);
const ZnsFlashConfig *zns_flash_get_config(const ZnsFlash *f);

/* The chip (index ch * luns_per_ch + lun) and address of a zone's page, for tests. */
void zns_flash_locate(const ZnsFlash *f, uint64_t zone, uint64_t page, NandAddr *out);

const ZnsFlashStats *zns_flash_stats(const ZnsFlash *f);
NandModel *zns_flash_nand(ZnsFlash *f);

#endif
