/*
 * The FTL's state, shared by ftl.c and its white-box unit tests only (the device uses
 * ftl.h). QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_BBSSD_FTL_INTERNAL_H
#define FEMU_BBSSD_FTL_INTERNAL_H

#include "ftl.h"
#include "../ftl/ftl-common.h"
#include "../ftl/free-list.h"
#include "../media/model-util.h"

#define FTL_NO_LINE UINT32_MAX
/*
 * Free lines forced GC keeps: one for GC to write into, one so a host write never takes
 * the last one. FTL_MIN_SPARE_LINES adds the open line and a line of garbage: forced GC
 * starts as a line opens, and a full drive with no spare line beyond the reserve and the
 * open one has no garbage then; GC would move a whole line to free the few pages written
 * since, at every write (a write amplification of a line's pages).
 */
#define FTL_RESERVE_LINES (FTL_MIN_SPARE_LINES - 2)
#define FTL_NEVER UINT64_MAX

typedef enum FtlLineState {
    FTL_LINE_FREE,      /* 0: an all-zero record is a free line */
    FTL_LINE_OPEN,      /* the write pointer's line */
    FTL_LINE_FULL,      /* in the victim heap */
    FTL_LINE_VICTIM,    /* being collected */
} FtlLineState;

#define FTL_HINT_BATCH 4    /* write hints fetched together (ftl_hint) */

typedef struct FtlLine {
    uint64_t vpc;           /* valid pages (not stored: rebuilt from the mapping) */
    uint64_t order;         /* when it became full or free: victim ties, free-list order */
    FtlLineState state;
    uint8_t stream;         /* while OPEN: whose (streams=) */
    uint32_t erases;        /* times its blocks were all erased (their wear) */
} FtlLine;

/* Where the parts of the store are (ftl.c has the layout). */
typedef struct FtlStoreLayout {
    uint64_t off_stats, off_marks, off_line, off_map, bytes;
} FtlStoreLayout;

/*
 * Background GC of one victim line, chip by chip: each chip's part (reads of its valid
 * pages, then the erase of its blocks) goes into that chip's idle time, one operation at a
 * time, booked only once the chip is idle before the current time. Host commands thus go
 * before GC work still queued on their chip, and GC runs on idle chips while others serve
 * the host.
 */
/* A slot with background work and its ready_at, in FtlBgJob's heap. */
typedef struct FtlDue {
    uint64_t at;
    uint64_t slot;
} FtlDue;

typedef struct FtlBgJob {
    uint32_t line;              /* FTL_NO_LINE: none */
    uint64_t valid0;            /* its valid pages when it was taken (pacing's rate) */
    uint64_t turn;              /* paced moves: the slot whose page goes next */
    uint32_t chips_left;        /* chips whose blocks are not erased yet */
    uint64_t *next;             /* per stripe slot (chip): next page index; FTL_NEVER: erased */
    uint64_t *read_done;        /* per slot: when its latest GC read is done */
    /*
     * Per slot: the earliest its next operation could start, as last computed (it never
     * moves earlier: the chip's bookings and pump_ns only grow); the least over the slots
     * with work left. A host command before them needs no look at the chips.
     */
    uint64_t *ready_at;
    uint64_t min_ready;
    FtlDue *due;                /* min-heap of the slots with work left, by (at, slot) */
    uint32_t ndue;
    uint64_t *due_now;          /* bit per slot: visited by this bg_run (in slot order) */
} FtlBgJob;

struct Ftl {
    FtlConfig cfg;
    NandModel *nand;
    uint64_t line_pages;        /* NAND pages: luns * planes * pages per block */
    uint64_t units_per_line;    /* mapping units: line_pages * upp */
    uint32_t upp;               /* mapping units per NAND page (map_unit_kb), a power of 2 */
    uint8_t log_upp;
    uint64_t unit_bytes;
    uint64_t stripe;            /* pages per stripe row: luns * planes */
    /* with every geometry count a power of two, page -> address by shifts: their log2s */
    bool pow2;
    uint8_t log_line, log_chs, log_luns, log_stripe;
    uint32_t nlines;
    uint32_t data_lines;        /* lines the exposed capacity needs */
    uint32_t gc_forced_lines;   /* forced GC at or below this many free lines */
    uint32_t gc_bg_lines;       /* background GC at or below this many */

    /*
     * lpn -> mapping entry (ppn + 1, 1 << map_log bytes: map_get), in the store or our own;
     * 0 means unmapped, so untouched (calloc'd) entries cost no host memory
     */
    void *l2p;
    uint8_t map_log;
    bool own_l2p;
    /* ppn -> lpn + 1; 0: free or garbage. 1 << rev_log bytes an entry (rev_get) */
    void *p2l;
    uint8_t rev_log;

    FtlLine *lines;
    FtlFreeList free;           /* free lines, FIFO */
    uint32_t *free_next;        /* its links */
    FtlVictims victims;         /* FULL lines: GC's candidates */
    uint32_t *victim_pos;       /* per line: its place among them while FULL */

    /* per stream: its open line (FTL_NO_LINE until a page is needed), next page there */
    uint32_t wp_line[FTL_MAX_STREAMS];
    uint64_t wp_idx[FTL_MAX_STREAMS];
    /* upp > 1: when the data of the units in the NAND page being filled is all there */
    uint64_t fill_ready[FTL_MAX_STREAMS];
    uint32_t nstreams;

    uint64_t last_prog_ns;      /* latest program completion, for flush */
    FtlProgs progs;             /* on nand, counted in last_prog_ns and st */
    uint64_t pump_ns;           /* background GC books nothing before this (the last
                                   command's arrival: the NAND may have retired before it) */
    FtlBgJob bg;                /* the victim in progress, background or paced */
    double gc_credit;           /* pages paced GC owes the host's writes so far */
    uint64_t *lun_read_ns;      /* scratch for GC: last read per chip of the victim */
    uint64_t order;             /* the latest line order given */
    FtlStats st;

    uint8_t *store;             /* NULL: state in memory only */
    FtlStoreLayout lay;
    uint64_t stats_seq;
    FtlStats saved;             /* the statistics as last saved */
    uint32_t reads_unsaved;     /* read calls since (stats_save_read) */
    /* write hints (ftl_hint): the batch being gathered, and the one fetched before (at
     * first lpn 0s: a spare fetch) */
    uint64_t hint_new[FTL_HINT_BATCH], hint_old[FTL_HINT_BATCH];
    uint32_t hint_new_n;
    FtlStoreHook store_hook;    /* tests: after every write to the store */
};

/*
 * The reverse map (ppn -> lpn + 1), in memory only: 4 bytes an entry while every lpn + 1
 * fits, as in a real SSD's tables. Half the bytes of 8: on a large drive, half the page
 * walks of its random accesses. 8 bytes past 2^32 - 1 logical pages.
 */
static inline uint64_t rev_get(const Ftl *f, uint64_t ppn)
{
    return f->rev_log == 2 ? ((const uint32_t *)f->p2l)[ppn] : ((const uint64_t *)f->p2l)[ppn];
}

static inline void rev_put(Ftl *f, uint64_t ppn, uint64_t lpn1)
{
    if (f->rev_log == 2) {
        ((uint32_t *)f->p2l)[ppn] = lpn1;
    } else {
        ((uint64_t *)f->p2l)[ppn] = lpn1;
    }
}

static inline void rev_fetch(const Ftl *f, uint64_t ppn)
{
    femu_fetch((const char *)f->p2l + (ppn << f->rev_log));
}

/* The stream (streams=) a host write (gc false) or a GC move of lpn would go to now. */
uint32_t ftl_stream_for(const Ftl *f, bool gc, uint64_t lpn);

/*
 * Physical unit number <-> NAND address of its page (striping: channel, chip, plane, then
 * page; the units of a page are consecutive). ftl_addr_to_ppn gives the page's first unit.
 */
void ftl_ppn_to_addr(const Ftl *f, uint64_t ppn, NandAddr *a);
uint64_t ftl_addr_to_ppn(const Ftl *f, const NandAddr *a);

#endif
