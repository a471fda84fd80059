/*
 * The DRAM write buffer in front of a conventional FTL (blackbox, fdp): writes are taken
 * into the buffer and acknowledged at once while it has room; the FTL programs them later,
 * in batches, when the buffer passes its high watermark (down to the low one), when the
 * host flushes, on a Force Unit Access write, when the drive is idle, or at shutdown.
 *
 * Watermark write-out goes at the flash's pace: a batch (a stripe: a whole multi-plane
 * program on every chip) whenever fewer than FTL_WB_WINDOW batches are programming, so that reads
 * never queue behind more than that of the buffer's work. Flush, FUA, idle time and
 * shutdown write out at once.
 *
 * The unit is the FTL's mapping unit; each unit held keeps a mask of the 512-byte sectors
 * written into it. A unit overwritten while it is held is programmed once. Reads are
 * served from the buffer where every sector they ask for is held; the rest is read from
 * flash. Room: a unit written out frees its place in the buffer only when its program
 * completes, so a write that finds the buffer full waits for the earliest program to end.
 *
 * Data: with a `put` callback the buffer keeps the written bytes and gives them to the
 * data area when it programs them (a power cut loses what it held: a consumer drive);
 * without, it keeps only which units are pending (femu-sim; and wb_plp, where the device
 * writes the data area at once because the capacitors guarantee it).
 *
 * Power loss: without PLP the held units are dropped; with PLP they are programmed on the
 * capacitors' energy, costed as the zoned PLP buffer does (nand_hold_up_uj).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_FTL_WRITE_BUFFER_H
#define FEMU_FTL_WRITE_BUFFER_H

#include <stdbool.h>
#include <stdint.h>

#include "../media/media.h"
#include "../nand/nand.h"

#define FTL_WB_SECTOR 512u          /* the granularity of what a unit holds */
#define FTL_WB_WINDOW 2u            /* watermark batches programming at once */
#define FTL_WB_MAX_UNIT 65536u      /* mask of 128 sectors */

typedef enum FtlWbCause {
    FTL_WB_WATERMARK,       /* the buffer passed its high watermark */
    FTL_WB_SPACE,           /* a write found it full */
    FTL_WB_FLUSH,           /* an NVMe Flush */
    FTL_WB_FUA,             /* a Force Unit Access write (its own units) */
    FTL_WB_IDLE,            /* the drive was idle */
    FTL_WB_SHUTDOWN,        /* controller shutdown */
    FTL_WB_POWER,           /* a power loss, on the capacitors (PLP) */
    FTL_WB_CAUSES
} FtlWbCause;

typedef struct FtlWbConfig {
    uint64_t unit_bytes;        /* the FTL's mapping unit: 512 .. FTL_WB_MAX_UNIT */
    uint64_t bytes;             /* capacity: at least one unit */
    uint32_t high_pct;          /* write-out starts when more than this % is held ... */
    uint32_t low_pct;           /* ... and stops at this % (low < high) */
    bool plp;                   /* capacitor-backed: held data survives a power loss */
    uint32_t batch;             /* units written out together: a stripe's (chips x planes x
                                   units a page) */
    uint32_t call_units;        /* units per program call (a chip's program; 0: batch) */
    uint32_t ctrl_mw, chip_mw;  /* power during a power-loss write-out (PLP) */
    const NandModel *nand;      /* for that energy */
} FtlWbConfig;

typedef struct FtlWbSink {
    void *opaque;
    /* Programs n units of one placement tag from now; when the last completes. */
    uint64_t (*program)(void *opaque, const uint64_t *units, uint32_t n, uint64_t tag,
                        uint64_t now);
    /* Reads [offset, offset + len) from flash; completion time. */
    uint64_t (*read)(void *opaque, uint64_t offset, uint64_t len, uint64_t now);
    /* Optional: len bytes reach the data area at offset (the buffer keeps data). */
    void (*put)(void *put_opaque, uint64_t offset, const void *src, uint64_t len);
    void *put_opaque;
} FtlWbSink;

typedef struct FtlWbStats {
    uint64_t held_units;                /* now */
    uint64_t write_units;               /* units taken from host writes */
    uint64_t absorbed_units;            /* of those, overwrites of a unit held */
    uint64_t written_out[FTL_WB_CAUSES];    /* units programmed, by cause */
    uint64_t waits, wait_ns;            /* writes that waited for room, and how long */
    uint64_t read_hit_bytes, read_miss_bytes;
    uint64_t dropped_units;             /* by Deallocate / Write Zeroes */
    uint64_t lost_units;                /* by power losses without PLP */
    /* the last power loss with PLP */
    uint64_t plp_units, plp_ns;
    double plp_uj;
} FtlWbStats;

typedef struct FtlWb FtlWb;

/* Checks a configuration; *err names the property (wb_*) and its range. */
bool ftl_wb_check(const FtlWbConfig *c, char **err);
/* NULL and *err when its memory cannot be had. */
FtlWb *ftl_wb_new(const FtlWbConfig *c, const FtlWbSink *sink, char **err);
void ftl_wb_free(FtlWb *wb);
/*
 * The buffer of media model m on nand: c, sink's program and read; a stripe (cfg.batch) of
 * units_per_pg units on every plane of every chip; with data, the bytes it keeps reach the
 * device's data area (femu_media_put_data). NULL and *err as ftl_wb_new.
 */
FtlWb *ftl_wb_for_media(FemuMedia *m, const NandModel *nand, uint32_t units_per_pg,
                        const FtlWbConfig *c, const FtlWbSink *sink, const FemuWbData *data,
                        char **err);

/*
 * A host write of [offset, offset + len) with data (kept when the buffer keeps data),
 * placed by tag (fdp: group and handle). Returns when it is acknowledged: when it is in
 * the buffer or, for fua without PLP, when its units are programmed.
 */
uint64_t ftl_wb_write(FtlWb *wb, uint64_t offset, uint64_t len, const void *data,
                      uint64_t tag, bool fua, uint64_t now);
/*
 * A host read: the held sectors are copied over out (which holds the data area's bytes;
 * NULL: none copied), the units not wholly held are read from flash. Completion time.
 */
uint64_t ftl_wb_read(FtlWb *wb, uint64_t offset, uint64_t len, void *out, uint64_t now);
/* Deallocate / Write Zeroes: the range's held sectors are gone (the device clears them). */
void ftl_wb_drop(FtlWb *wb, uint64_t offset, uint64_t len);
/* NVMe Flush: without PLP every held unit is programmed; when all acknowledged data is. */
uint64_t ftl_wb_flush(FtlWb *wb, uint64_t now);
/* Controller shutdown: every held unit is programmed, with PLP too. */
uint64_t ftl_wb_shutdown(FtlWb *wb, uint64_t now);
/* The drive is idle: units above the low watermark are programmed. */
void ftl_wb_idle(FtlWb *wb, uint64_t now);
/* Power is cut: held units are lost, or (PLP) programmed on the capacitors. */
void ftl_wb_power_loss(FtlWb *wb, uint64_t now);

const FtlWbStats *ftl_wb_stats(const FtlWb *wb);
/* The statistics as wb_* names. */
void ftl_wb_emit_stats(const FtlWb *wb, FemuMediaStatFn *emit, void *opaque);

#endif
