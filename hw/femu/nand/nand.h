/*
 * The NAND flash model shared by every media mode: a geometry, timings, and per-channel and
 * per-chip timelines that turn each NAND operation into a completion time.
 *
 * Time is in nanoseconds and always passed in: the model never reads a clock, so the same
 * inputs give the same completion times (in QEMU, in unit tests, in a simulator).
 *
 * Each channel and each chip keeps its busy intervals (timeline.h). An operation takes the
 * earliest idle gap that fits it, after its arrival, and bookings never move once made, so
 * a completion time once returned stays true (conservative back-filling):
 *   read:    the chip senses the page (tR), then the channel carries it out in the first
 *            channel gap after tR; the chip holds the page until its data-out ends.
 *   program: the channel carries the page in and the chip programs it (tPROG) right after,
 *            in a gap free on both.
 *   erase:   the chip erases the block (tBERS); the channel is not used.
 * Programs and erases start in booking order on each chip (the pages of a block stay in
 * order, an erase waits for the programs booked before it); reads may overtake them. An
 * erase also waits for every read of its chip booked before it (one that missed a gap for
 * want of channel time may end late), so that no page is erased while it is being read.
 * NAND_SCHED_FIFO keeps the model's first rule instead: one "free at" time per resource,
 * so that nothing starts before the end of the latest booking (old results, A/B runs).
 * Planes of a chip share the chip's timeline. A multi-plane operation (nand_op_planes) is
 * one array operation for all of its planes (the same page or block on each): a read
 * senses them together and sends each page out in its own channel gap; a program takes each
 * page in, then programs them together; an erase erases the blocks together.
 *
 * Options (NandTiming, all off at 0), each a rule added to the above:
 *   cmd_ns / status_ns: command and address cycles (per plane) before an operation and a
 *            status read after a program or erase and before each data-out, on the channel.
 *   cache_ops: cache read and cache program. The chip's page register gets its own
 *            timeline: a read holds the array for tR and the register until its data is
 *            out, so the next read senses while this one transfers; a program's data-in
 *            fills the register while the array still programs the page before.
 *   partial_xfer: a read moves the bytes asked (NandReq.bytes), not the whole page.
 *   suspend: a read that arrives while the chip's latest program or erase (as the mask
 *            says) is in its array time suspends it: it senses after suspend_ns, and the
 *            program or erase ends later by what the read took plus resume_ns, only into
 *            the idle time after it (nothing else moves), at most suspend_max times each.
 *            The completion returned for that program or erase is then early by at most
 *            suspend_max x (suspend_ns + tR + transfers + resume_ns).
 *   retry_pe: reads of a block repeat tR once more every retry_pe P/E cycles it has
 *            (base_pe + the erases the model has seen), at most retry_max times.
 *   xfer_split: a transfer may go in up to xfer_split parts (each at least 1/xfer_split of
 *            it) in the channel's gaps, when that ends it sooner than one piece would.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_NAND_H
#define FEMU_NAND_H

#include <stdbool.h>
#include <stdint.h>

#include "timeline.h"

#define NAND_MAX_PAGE_TYPES 4       /* SLC 1, MLC 2, TLC 3, QLC 4 bits per cell */
#define NAND_MAX_PLANES 16

typedef struct NandGeometry {
    uint32_t nchs;          /* channels */
    uint32_t luns_per_ch;   /* chips (LUNs) per channel */
    uint32_t pls_per_lun;   /* planes per chip */
    uint32_t blks_per_pl;   /* erase blocks per plane */
    uint32_t pgs_per_blk;   /* pages per block */
    uint32_t secs_per_pg;   /* sectors per page */
    uint32_t secsz;         /* sector size in bytes */
} NandGeometry;

typedef struct NandTiming {
    uint32_t cell_bits;                         /* 1..4: page types, as SLC..QLC */
    uint64_t pg_rd_lat[NAND_MAX_PAGE_TYPES];    /* array read per page type, ns */
    uint64_t pg_wr_lat[NAND_MAX_PAGE_TYPES];    /* program per page type, ns */
    uint64_t blk_er_lat;                        /* block erase, ns */
    uint64_t ch_xfer_lat;       /* one page over the channel, ns; 0: from the bus rate */
    uint32_t ch_mts;            /* bus rate in MT/s when ch_xfer_lat = 0 (0: free channel) */
    uint32_t ch_width_bytes;    /* bytes per transfer (1 for an 8-bit bus) */
    uint32_t time_scale;        /* every media time is multiplied by this (>= 1) */
    uint32_t sched;             /* NandSched */
    /* options (see above); 0 = off */
    uint64_t cmd_ns;            /* command and address cycles of one plane */
    uint64_t status_ns;         /* one status read */
    bool cache_ops;
    bool partial_xfer;
    uint32_t suspend;           /* NAND_SUSPEND_* */
    uint64_t suspend_ns, resume_ns;
    uint32_t suspend_max;       /* suspensions per program or erase, 1..255 with suspend */
    uint32_t retry_pe;          /* P/E cycles per extra read (0: no read retry) */
    uint32_t retry_max;         /* 0..64 */
    uint32_t base_pe;           /* the wear every block starts with */
    uint32_t xfer_split;        /* 0, 1: whole transfers; 2..NAND_MAX_SPLIT: parts */
} NandTiming;

#define NAND_MAX_SPLIT 8

#define NAND_SUSPEND_PROGRAM 1
#define NAND_SUSPEND_ERASE 2

typedef enum NandSched {
    NAND_SCHED_BACKFILL,        /* first fit in the idle gaps (the default) */
    NAND_SCHED_FIFO,            /* after the latest booking: the model's first rule */
    NAND_SCHED__MAX,
} NandSched;

/* "backfill", "fifo" */
extern const char *const nand_sched_names[NAND_SCHED__MAX];

/* A physical page address. */
typedef struct NandAddr {
    uint32_t ch, lun, pl, blk, pg;
} NandAddr;

typedef enum NandOp {
    NAND_OP_READ,
    NAND_OP_PROGRAM,
    NAND_OP_ERASE,
} NandOp;

typedef struct NandStats {
    uint64_t reads, programs, erases;
    uint64_t suspends;          /* programs and erases suspended for a read */
    uint64_t read_retries;      /* extra tR of read retry */
    uint64_t gap_fills;         /* operations placed before a booking made earlier (chip or
                                   channel) */
    uint64_t read_overtakes;    /* reads that went before a program or erase booked earlier */
    uint64_t multiplane_ops;    /* operations on two planes or more at once */
    uint64_t op_busy_ns[3]; /* chip time of reads, programs, erases (NandOp), all chips */
    uint64_t *lun_busy_ns;  /* per chip, index ch * luns_per_ch + lun */
    uint64_t *ch_busy_ns;   /* per channel */
} NandStats;

/* A chip's latest program or erase, which P/E order and suspension follow. */
typedef struct NandChipPe {
    uint64_t fence;         /* its end: the next program or erase starts after it */
    uint64_t array_at;      /* when its array operation started */
    uint64_t susp_end;      /* the end of the last read that suspended it */
    uint64_t read_end;      /* the latest end of the chip's reads booked so far: an erase
                               starts after it (it must not erase a page still being read) */
    uint8_t op;             /* NandOp */
    uint8_t suspends;
} NandChipPe;

typedef struct NandModel {
    NandGeometry geo;
    NandTiming tm;
    uint64_t xfer_ns;       /* scaled channel time of one page */
    Timeline *ch;           /* per channel */
    Timeline *chip;         /* per chip, index ch * luns_per_ch + lun: its array (and,
                               without cache_ops, its page register) */
    Timeline *reg;          /* per chip with cache_ops: its page register; else NULL */
    NandChipPe *pe;         /* per chip */
    uint32_t *wear;         /* per block with retry_pe: erases seen; else NULL */
    uint64_t horizon;       /* no operation arrives before this (nand_retire) */
    NandStats stats;
} NandModel;

/* One operation: nand_submit's argument. */
typedef struct NandReq {
    NandOp op;
    NandAddr addr;          /* the page (an erase: the block) */
    uint32_t plane_mask;    /* bit p: plane p too (planes the chip lacks ignored); 0: addr.pl */
    uint32_t bytes;         /* a read's bytes per page (with partial_xfer); 0: the page */
    bool unit_xfer;         /* bytes are an FTL's mapping units of the page: moved whatever
                               partial_xfer says (a unit is all the reader asked for) */
} NandReq;

/* Derived sizes. */
uint64_t nand_page_bytes(const NandGeometry *g);
uint64_t nand_luns(const NandGeometry *g);              /* chips in the device */
uint64_t nand_pages_per_lun(const NandGeometry *g);
uint64_t nand_total_pages(const NandGeometry *g);
uint64_t nand_total_bytes(const NandGeometry *g);

/*
 * Checks a geometry and timing; on error returns false and sets *err to a message naming
 * the field and its allowed range (free it with g_free).
 */
bool nand_geometry_check(const NandGeometry *g, char **err);
bool nand_timing_check(const NandTiming *t, char **err);
/* The options' part of it (nand_sched and the option fields), as nand_timing_check does. */
bool nand_options_check(const NandTiming *t, char **err);

/* A model with every resource free at time 0; NULL and *err on an invalid configuration. */
NandModel *nand_model_new(const NandGeometry *g, const NandTiming *t, char **err);
void nand_model_free(NandModel *m);
/* An independent model in the same state (timelines and statistics), for what-if timing. */
NandModel *nand_model_copy(const NandModel *m);
/* Every resource idle from time 0 again (statistics kept). */
void nand_model_clear(NandModel *m);

/* The page type (0 .. cell_bits-1) of a page: lower, upper, extra, top pages interleave. */
static inline uint32_t nand_page_type(const NandModel *m, uint32_t pg)
{
    /* pg % cell_bits, without a division (it costs more than the rest of the shape) */
    switch (m->tm.cell_bits) {
    case 1:
        return 0;
    case 2:
        return pg & 1;
    case 3:
        return pg % 3;
    default:
        return pg & 3;
    }
}

/*
 * Runs one operation that arrives at arrival_ns on the page (or, for an erase, the block) at
 * *a and returns its completion time (>= arrival_ns). Updates the timelines and statistics.
 */
uint64_t nand_op(NandModel *m, NandOp op, const NandAddr *a, uint64_t arrival_ns);
/*
 * The same operation on the planes of plane_mask at once (bit p: plane p; planes the chip
 * does not have are ignored; 0: a->pl alone). Statistics count pages and blocks.
 */
uint64_t nand_op_planes(NandModel *m, NandOp op, const NandAddr *a, uint32_t plane_mask,
                        uint64_t arrival_ns);
/* The general form: any operation with the options' inputs. */
uint64_t nand_submit(NandModel *m, const NandReq *r, uint64_t arrival_ns);
/* What nand_op / nand_submit would return, booking nothing. */
uint64_t nand_probe(const NandModel *m, NandOp op, const NandAddr *a, uint64_t arrival_ns);
uint64_t nand_probe_req(const NandModel *m, const NandReq *r, uint64_t arrival_ns);
/* Erases of a block seen so far plus base_pe (0 without retry_pe). */
uint32_t nand_block_wear(const NandModel *m, const NandAddr *a);
/*
 * Sets the erases seen of the block at a (plane a->pl), base_pe not included: the wear an
 * FTL saved, brought back when it loads. Nothing without retry_pe or outside the flash.
 */
void nand_set_block_wear(NandModel *m, const NandAddr *a, uint32_t erases);

/*
 * The caller promises that no later operation arrives before t (e.g. a command's arrival,
 * when arrivals never go back): bookings that ended by then are forgotten, which bounds
 * the memory and the cost of a booking. Every completion stays as without it.
 */
void nand_retire(NandModel *m, uint64_t t);

/* When every chip and channel is idle: all operations issued so far have completed. */
uint64_t nand_all_idle_ns(const NandModel *m);
/* The end of the latest booking of a chip (index as nand_lun_index) or of a channel. */
uint64_t nand_chip_busy_until(const NandModel *m, uint32_t lun);
uint64_t nand_ch_busy_until(const NandModel *m, uint32_t ch);

/* Index of the chip of address a, as used by lun_free and lun_busy_ns. */
static inline uint32_t nand_lun_index(const NandModel *m, const NandAddr *a)
{
    return a->ch * m->geo.luns_per_ch + a->lun;
}

/*
 * Hold-up energy (uJ) of a power-loss write-out of `pages` pages that takes ns: the
 * controller at ctrl_mw for ns, and each page's chip at chip_mw for its tPROG (mean over
 * the cell's page types) and its transfer.
 */
double nand_hold_up_uj(const NandModel *nand, uint32_t ctrl_mw, uint32_t chip_mw,
                       uint64_t pages, uint64_t ns);

#endif
