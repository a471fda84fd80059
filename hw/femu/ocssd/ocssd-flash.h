/*
 * Chunks on flash: what each operation of a whitebox namespace costs on the shared NAND
 * model. The chunk model (chunk.h) decides validity; this decides time.
 *
 * Placement: group g is channel g, PU p is chip p of that channel, and chunk c of a PU is
 * block first_block + c on every plane of the chip. A chunk's sectors fill the program unit
 * (one page on each plane, ws_min sectors) u = sector / ws_min, plane by plane; so unit u
 * is page u of the block on every plane.
 *
 * Write cache: as on a real device, each PU has a cache of mw_cunits sectors. A write
 * completes when its data is in the cache; each unit is then programmed on the chip. When
 * the cache is full, a write waits until the oldest unit's program has finished. Reads of
 * units whose program has not finished are served from the cache; other reads read their
 * pages. A reset erases the chunk's block on every plane. Units on different PUs proceed in
 * parallel, units of one PU one after another.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_OCSSD_FLASH_H
#define FEMU_OCSSD_FLASH_H

#include <stdbool.h>
#include <stdint.h>

#include "../nand/nand.h"

typedef struct OcFlashConfig {
    NandGeometry geo;           /* channels = groups, chips per channel = PUs */
    NandTiming tm;
    uint32_t sector_bytes;      /* the namespace's sector (LBA) size */
    uint32_t chunks_per_pu;     /* blocks per plane this namespace uses */
    uint32_t cache_units;       /* per-PU write cache, in program units (>= 1) */
    NandModel *shared_nand;     /* flash shared with other namespaces, or NULL */
    uint32_t first_block;       /* the namespace's first block on every plane */
} OcFlashConfig;

typedef struct OcFlashStats {
    uint64_t units_programmed;
    uint64_t pages_read;
    uint64_t blocks_erased;
    uint64_t cache_read_hits;   /* read units served from the write cache */
    uint64_t cache_waits;       /* units that waited for cache space */
} OcFlashStats;

typedef struct OcFlash OcFlash;

/* Sectors per program unit (one page on every plane). */
uint32_t oc_flash_unit_sectors(const NandGeometry *g, uint32_t sector_bytes);
bool oc_flash_config_check(const OcFlashConfig *c, char **err);
OcFlash *oc_flash_new(const OcFlashConfig *c, char **err);
void oc_flash_free(OcFlash *f);

/* Sectors [sec, sec + n) of chunk `chunk` (numbered as in the chunk model); completion times. */
uint64_t oc_flash_write(OcFlash *f, uint64_t chunk, uint64_t sec, uint64_t n, uint64_t now_ns);
uint64_t oc_flash_read(OcFlash *f, uint64_t chunk, uint64_t sec, uint64_t n, uint64_t now_ns);
uint64_t oc_flash_erase(OcFlash *f, uint64_t chunk, uint64_t now_ns);
/* When every unit written so far is on flash. */
uint64_t oc_flash_flush(OcFlash *f, uint64_t now_ns);

const OcFlashStats *oc_flash_stats(const OcFlash *f);
NandModel *oc_flash_nand(OcFlash *f);

#endif
