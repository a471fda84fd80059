/*
 * Selective power-loss protection (PLP) for the zoned write buffer: a buffer that holds
 * the data of acknowledged writes until it is programmed, in two regions:
 *
 *   PLP region (plp_bytes)      capacitor-backed: what it holds survives a power loss. It
 *                               is mirrored, sector by sector, in a reserved area of the
 *                               backend (the "store"), each sector with an out-of-band
 *                               (OOB) record naming its original address.
 *   non-PLP region (buf_bytes)  plain DRAM: lost on power loss.
 *
 * Data that is only in the non-PLP region is NOT in the backing store: it reaches the
 * namespace's data area when it is programmed. So a power loss loses it for real.
 *
 * Buffers: a pre-allocated pool of sector-sized buffers with headers, one pool per region;
 * a hit table (offset -> buffer) that reads consult first, with a reference bit per sector
 * set by read hits; per-zone lists of dirty sectors per region (written to the zone in
 * order). A sector is DIRTY (only in the buffer), IN FLIGHT (its program was issued: its
 * data is in the data area, the buffer holds it until the program completes) or CLEAN
 * (programmed, kept as a read cache until its buffer is needed: CLOCK over the reference
 * bits picks which clean buffer to reuse).
 *
 * Writing out: a host Flush programs every dirty sector of the non-PLP region (and holds
 * later writes until it completes); the PLP region is not touched. A region whose dirty
 * sectors pass flush_pct % of it is written out entirely; a write that finds no room
 * writes its region out and waits for programs to free buffers. Zone Finish/Close drain
 * the zone (both regions); Zone Reset discards the zone's buffered data unwritten.
 * Programs are charged on the NAND timelines through zns-flash, page by page (a partial
 * page is programmed padded).
 *
 * Power loss: commands stop, the non-PLP region is dropped, and the PLP region's dirty
 * pages are flushed by one of two methods (the other one is computed on a copy of the
 * timelines, for the report): normal (each page to its own zone location) or balanced
 * (each page to the chip whose timeline is free earliest, into the chip's reserved
 * blocks; the original address goes into the page's OOB record). Recovery at the next
 * power-up (SPOR) scans the OOB records, copies every protected sector to its original
 * place (charged: a read from the reserved page, a program at the zone location) and
 * reports which zone data is durable so that the device can rebuild its write pointers.
 *
 * Hold-up energy (capacitance): a flush of T ns that programs P pages needs
 *   E = ctrl_mw * T + P * chip_mw * (tPROG + tXFER)
 * and capacitors charged to PLP_CAP_V_FULL that may discharge to PLP_CAP_V_MIN hold
 * C = 2E / (V_FULL^2 - V_MIN^2).
 *
 * Offsets are bytes in the model's address space (the media offsets: zone z starts at
 * z * zone_bytes) and multiples of sector_bytes. QEMU-free. SPDX-License-Identifier:
 * GPL-2.0-or-later
 */
#ifndef FEMU_PLP_H
#define FEMU_PLP_H

#include <stdbool.h>
#include <stdint.h>

#include "../media/media.h"
#include "../zns/zns-flash.h"

#define PLP_CAP_V_FULL 12.0     /* volts the hold-up capacitors are charged to */
#define PLP_CAP_V_MIN 6.0       /* volts below which the drive's regulators drop out */

/* Per namespace: which writes go to the PLP region. */
typedef enum PlpMode {
    PLP_MODE_NONE,          /* nothing is protected (the flag is ignored) */
    PLP_MODE_SELECTIVE,     /* flagged writes, and writes to durable zones */
    PLP_MODE_FULL,          /* every write */
} PlpMode;

typedef enum PlpFlushMethod {
    PLP_FLUSH_BALANCED,
    PLP_FLUSH_NORMAL,
} PlpFlushMethod;

typedef enum PlpFlushCause {
    PLP_CAUSE_HOST,         /* an NVMe Flush */
    PLP_CAUSE_THRESHOLD,    /* the region's dirty data passed flush_pct */
    PLP_CAUSE_SPACE,        /* a write found no free buffer */
    PLP_CAUSE_DRAIN,        /* Zone Finish or Close, a zone filling up, a controller shutdown */
    PLP_CAUSE_FUA,          /* a write with Force Unit Access that was not protected */
    PLP_CAUSES
} PlpFlushCause;

typedef struct PlpConfig {
    uint32_t sector_bytes;      /* the buffer's unit: the LBA size */
    uint64_t plp_bytes;         /* PLP region; a multiple of sector_bytes, may be 0 */
    uint64_t buf_bytes;         /* non-PLP region; a multiple of sector_bytes, may be 0 */
    uint32_t flush_pct;         /* 1..100 */
    PlpFlushMethod method;      /* applied on power loss (the other one is computed) */
    uint32_t ctrl_mw;           /* controller power during a power-loss flush */
    uint32_t chip_mw;           /* power of one chip while it programs */
    ZnsFlash *flash;            /* placement and timelines of the zones */
    uint8_t *data;              /* the data area, at model offset 0 (survives restarts) */
    uint8_t *store;             /* plp_store_size bytes (survives restarts) */
    /*
     * Optional: clears [off, off + len) of the data area without writing every byte (the
     * device gives whole host pages back, so Write Zeroes cost no host memory); NULL:
     * memset.
     */
    void (*zero)(void *opaque, uint64_t off, uint64_t len);
    void *zero_opaque;
} PlpConfig;

/* The result of one power loss (also in the statistics). */
typedef struct PlpLoss {
    uint64_t pages;                 /* PLP pages flushed */
    uint64_t normal_ns, balanced_ns;
    double normal_uj, balanced_uj;
    double normal_uf, balanced_uf;
    uint64_t lost_sectors;          /* non-PLP sectors dropped */
} PlpLoss;

typedef struct PlpStats {
    uint64_t plp_used_bytes, buf_used_bytes;        /* dirty + in flight, now */
    uint64_t plp_write_bytes, buf_write_bytes;      /* host data taken by each region */
    uint64_t read_hit_sectors, read_miss_sectors;
    uint64_t flushes[PLP_CAUSES];                   /* write-outs, by cause */
    uint64_t flushed_sectors[PLP_CAUSES];
    uint64_t pad_sectors;           /* of partial pages programmed */
    uint64_t buffer_waits;          /* writes that waited for buffers */
    uint64_t reset_discarded_sectors;
    uint64_t power_losses;
    uint64_t lost_sectors;          /* non-PLP sectors dropped by power losses */
    PlpLoss last_loss;              /* the last power loss */
    /* the last recovery */
    uint64_t spor_sectors, spor_pages, spor_ns;
} PlpStats;

typedef struct PlpRecovery {
    uint64_t sectors;               /* protected sectors copied back to their place */
    uint64_t pages;
    uint64_t ns;                    /* how long it took on the timelines */
} PlpRecovery;

typedef struct PlpBuffer PlpBuffer;

/* Bytes of the store for a configuration (a header, the zones' durable ends, the slots). */
uint64_t plp_store_size(uint32_t sector_bytes, uint64_t plp_bytes, uint64_t nr_zones);
/* Checks a configuration; *err names the property (plp_*, buf_mb) and the allowed range. */
bool plp_config_check(const PlpConfig *c, char **err);

/*
 * A buffer on c->flash. The store is taken as it is: an all-zero store is fresh, one
 * written by a buffer of the same configuration is kept for plp_recover, anything else is
 * refused (*err says why).
 */
PlpBuffer *plp_new(const PlpConfig *c, char **err);
void plp_free(PlpBuffer *p);

/*
 * Which region a write goes to: the namespace's mode, the write's flag (bit 0 of CDW3) and
 * whether its zone is durable.
 */
bool plp_protects(PlpMode mode, bool flagged, bool durable_zone);
/*
 * Durable zones as "a-b:c:..." (or with ','; zone indexes within a namespace of
 * nr_zones, ranges inclusive): a bitmap of nr_zones bits (g_free it), or NULL and *err. "" gives all zeroes.
 */
uint8_t *plp_zones_parse(const char *spec, uint64_t nr_zones, char **err);
static inline bool plp_zone_in(const uint8_t *map, uint64_t zone)
{
    return map && (map[zone / 8] >> (zone % 8) & 1);
}

/*
 * A write of len bytes at offset (within one zone, below its capacity) into the PLP
 * region when protect, else the non-PLP one; data NULL writes zeroes. Returns when it is
 * acknowledged: when its data is in the buffer (and, when protected, in the store).
 */
uint64_t plp_write(PlpBuffer *p, uint64_t offset, uint64_t len, const uint8_t *data,
                   bool protect, uint64_t now);
/*
 * A read: copies every buffered sector of [offset, offset + len) over out (which holds
 * the data area's bytes) and returns how many bytes were buffered. Sets their reference bits.
 */
uint64_t plp_read(PlpBuffer *p, uint64_t offset, uint64_t len, uint8_t *out, uint64_t now);
/* NVMe Flush: writes the non-PLP region out; completion time. Later writes wait for it. */
uint64_t plp_flush(PlpBuffer *p, uint64_t now);
/* The same for the zones of [offset, offset + len) only (a Flush of one namespace). */
uint64_t plp_flush_range(PlpBuffer *p, uint64_t offset, uint64_t len, uint64_t now);
/*
 * Controller shutdown (CC.SHN): writes both regions out (counted as drains), so that the
 * data area holds every acknowledged write. Later writes wait for it. Completion time.
 */
uint64_t plp_shutdown(PlpBuffer *p, uint64_t now);
/*
 * Zone Finish/Close: writes the zone's data out (both regions); the zone's data up to
 * written_bytes is durable from then on. Completion time.
 */
uint64_t plp_drain_zone(PlpBuffer *p, uint64_t zone, uint64_t written_bytes, uint64_t now);
/*
 * Force Unit Access of an unprotected write: writes the zone's non-PLP data out (it is in
 * order, so the write's data goes with what precedes it) and returns when it is programmed.
 */
uint64_t plp_write_out_zone(PlpBuffer *p, uint64_t zone, uint64_t now);
/* Zone Reset: drops the zone's buffered data unwritten (its erase is zns-flash's). */
void plp_reset_zone(PlpBuffer *p, uint64_t zone, uint64_t now);

/*
 * Power loss at now: drops the non-PLP region, flushes the PLP region's dirty pages by the
 * configured method (recording each page's reserved chip and page in its OOB records) and
 * computes the other method on a copy of the timelines and buffer. The buffer is empty
 * afterwards; the store holds the protected data for plp_recover.
 */
void plp_power_loss(PlpBuffer *p, uint64_t now, PlpLoss *out);
/*
 * Power-up: copies every protected sector of the store to the data area (charged on the
 * timelines from now: reads of the reserved pages, programs at home, then an erase of each
 * reserved block used), clears the store and returns what it did. Afterwards
 * plp_durable_end() says where each zone's durable data ends.
 */
void plp_recover(PlpBuffer *p, uint64_t now, PlpRecovery *out);
/* Bytes from the zone's start up to the end of its last durable (programmed) sector. */
uint64_t plp_durable_end(const PlpBuffer *p, uint64_t zone);

/*
 * What the capacitors must cover at worst: the PLP region full of data written in order
 * from zone 0 (as a log is), flushed by each method on idle chips.
 */
void plp_worst_case(const PlpBuffer *p, PlpLoss *out);
/* Hold-up energy (uJ) and capacitance (uF) for a flush of pages pages taking ns. */
double plp_energy_uj(const PlpBuffer *p, uint64_t pages, uint64_t ns);
double plp_capacitance_uf(double energy_uj);

/*
 * After plp_new on a store that was all zeroes (a drive that had no PLP store): nothing
 * says which zone data is durable, so the device says it (every zone's written data).
 */
bool plp_take_fresh(PlpBuffer *p);     /* true once */
void plp_set_durable_end(PlpBuffer *p, uint64_t zone, uint64_t bytes);

const PlpStats *plp_stats(const PlpBuffer *p);
/* The statistics as plp_* names (the vendor log's and QMP's). */
void plp_emit_stats(const PlpBuffer *p, FemuMediaStatFn *emit, void *opaque);

#endif
