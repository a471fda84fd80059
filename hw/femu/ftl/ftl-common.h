/*
 * What the page-level FTLs share: the blackbox FTL (bbssd/ftl.c) and the Flexible Data
 * Placement FTL (fdp/fdp-ftl.c) check their common fields, set GC thresholds, take their
 * flash, cost an unmapped read, program a write's pages, reckon WAF and keep their state
 * with the same code, so that the two behave and time alike wherever their models agree.
 * GC victims are chosen in victim.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_FTL_COMMON_H
#define FEMU_FTL_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nand/nand.h"

/* ---- configuration ---- */

/* Geometry, timing, GC thresholds (1..99, high >= low) and a non-empty exposed capacity. */
bool ftl_check_common(const NandGeometry *g, const NandTiming *tm, uint64_t exposed_pages,
                      uint32_t gc_thres_pcent, uint32_t gc_thres_pcent_high, char **err);
/* FEMU's rule: GC is due when free units (lines, RUs) fall to (100 - pcent)% of n. */
uint32_t ftl_gc_thres(uint32_t n, uint32_t pcent);
/*
 * The lowest gc_thres_pcent_high from pcent_high on whose forced threshold (the larger of
 * ftl_gc_thres and reserve) stays below spare: pcent_high itself when it does, 100 when no
 * value does. At or above spare, forced GC could never catch up and would run on every
 * write.
 */
uint32_t ftl_pcent_high_min(uint32_t n, uint32_t pcent_high, uint32_t reserve,
                            uint64_t spare);
/*
 * The flash an FTL of geometry g works on: shared when given (its blocks from first_block
 * on), else a new model of g and tm. NULL and *err, naming the FTL by who, when shared
 * does not fit g or the model cannot be made.
 */
NandModel *ftl_nand_get(const NandGeometry *g, const NandTiming *tm, NandModel *shared,
                        uint32_t first_block, const char *who, char **err);

/*
 * A block's wear as the FTL saved it (its erases), brought back on every plane of a's chip
 * and block when the FTL loads: the NAND model's read retry counts it.
 */
void ftl_set_wear_planes(NandModel *m, NandAddr a, uint32_t erases);

/* ---- host reads ---- */

/*
 * Where a read of a never-written (or deallocated) lpn goes: the chip the page would stripe
 * to, lpn modulo chips (see ftl.h), first block and page.
 */
NandAddr ftl_unmapped_addr(const NandGeometry *g, uint32_t first_block, uint64_t lpn);

/* ---- programs ---- */

/* A chip's program not booked yet: pages of one row on several planes. */
typedef struct FtlPending {
    NandAddr a;
    uint32_t mask;          /* planes; 0: nothing gathered */
    uint64_t ready;         /* when the last of its pages' data is there */
} FtlPending;

/*
 * An FTL's programs: booked on its flash and counted in its own fields. A host write's
 * pages are gathered per chip: pages of one chip, block and page index on different planes
 * are programmed together (multi-plane), and a chip's programs keep the order of its pages.
 */
typedef struct FtlProgs {
    NandModel *nand;
    uint64_t *last_ns;      /* the owner's latest program completion (flush waits for it) */
    uint64_t *pages;        /* the owner's count of pages written, in its mapping units */
    uint32_t units_per_pg;  /* mapping units a NAND page holds (1 unless set after init) */
    uint64_t nluns;
    FtlPending *pend;       /* per chip (nand_lun_index) */
    uint64_t *gathered;     /* bit per chip: pend[c].mask != 0 (a flush visits these alone) */
} FtlProgs;

void ftl_progs_init(FtlProgs *p, NandModel *nand, uint64_t *last_ns, uint64_t *pages);
void ftl_progs_destroy(FtlProgs *p);
/* Programs the planes in mask at a's chip, block and page: one operation. */
uint64_t ftl_program(FtlProgs *p, const NandAddr *a, uint32_t mask, uint64_t arrival_ns);
/*
 * Gathers the page at a, whose data is there at arrival_ns, into its chip's program; first
 * books what the chip gathered when the page cannot join it. Returns that booking's
 * completion, else arrival_ns. A gathered program is booked when its pages' data is all
 * there, and not before the time it is booked at.
 */
uint64_t ftl_program_gather(FtlProgs *p, const NandAddr *a, uint64_t arrival_ns);
/*
 * Sub-page mapping units: the full page at a (its data there at ready) joins its chip's
 * program, which is booked once the chip's last plane is in (a stream fills a chip's
 * pages of one row in plane order): pages of all planes programmed together. Returns the
 * completion of what it booked, else ready.
 */
uint64_t ftl_program_hold(FtlProgs *p, const NandAddr *a, uint64_t ready);
/* Is the page at a gathered, not booked yet? Then *ready: when its program's data is there. */
bool ftl_program_held(const FtlProgs *p, const NandAddr *a, uint64_t *ready);
/* Books every chip's gathered program; the latest completion, at least arrival_ns. */
uint64_t ftl_program_flush(FtlProgs *p, uint64_t arrival_ns);

/* Write amplification: NAND pages written / host pages written (1.0 before any write). */
double ftl_waf_of(uint64_t nand_pages, uint64_t host_pages);

/* ---- the store: state written through to a memory area that survives QEMU ---- */

/*
 * Reads' own counters are saved every FTL_READ_SAVES read calls (or with the next other
 * call): a kill loses at most that many reads' counts; a save per read would cost reads a
 * third of their time.
 */
#define FTL_READ_SAVES 64u

/* Tests: called after every write to an FTL's store (where a kill could come). */
typedef struct FtlStoreHook {
    void (*fn)(void *opaque);
    void *opaque;
} FtlStoreHook;

/*
 * After each write to the store: the compiler keeps the writes in program order, which is
 * the order a killed process leaves them in (the CPU retires in order; nothing is lost).
 */
static inline void ftl_stored(const FtlStoreHook *h)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(h->fn != NULL, 0)) {
        h->fn(h->opaque);
    }
}

/* A header field the configuration sets: where, how many bytes, what sets it (messages). */
typedef struct FtlHeaderField {
    unsigned at, bytes;
    const char *name;
} FtlHeaderField;

/*
 * Is the saved header h state of this kind (want's 4-byte magic, version at 4), whole (its
 * CRC-32 salted with salt at crc_at) and of the configuration whose header is want (the
 * fields in order)? Else *err says what differs first; what names the state ("FDP").
 */
bool ftl_header_matches(const uint8_t *h, const uint8_t *want, const char *what,
                        uint64_t salt, unsigned crc_at, const FtlHeaderField *fields,
                        unsigned n, char **err);

/*
 * CRC-32 (IEEE) of salt (8 bytes, little-endian) then p: a record's check against torn and
 * misplaced writes (the salt names the record, so a copy elsewhere fails).
 */
uint32_t ftl_crc32_salted(uint64_t salt, const uint8_t *p, size_t len);
/*
 * A two-slot record of n 64-bit values (rec bytes each: seq, values, CRC, 4 spare): saved
 * into the slot the newest does not use, so a kill while saving leaves the older one.
 */
void ftl_slot_save(uint8_t *slots, uint64_t rec, uint64_t *seq, uint64_t salt,
                   const uint64_t *v, uint32_t n);
/* The newest valid slot's values and seq (zeroes, 0 and false when neither is valid). */
bool ftl_slot_load(const uint8_t *slots, uint64_t rec, uint64_t salt, uint64_t *v, uint32_t n,
                   uint64_t *seq);
/* The 16-bit check a mapping entry of lpn carries over its low 48 bits. */
uint16_t ftl_map_check(uint64_t lpn, uint64_t low);

/*
 * A mapping table of n entries of `size` bytes: zeroed, its memory taken as it is touched,
 * in huge pages where the host gives them (random lookups miss the TLB less). NULL when
 * there is no room. ftl_table_free takes the same n and size.
 */
void *ftl_table_new(uint64_t n, size_t size);
void ftl_table_free(void *table, uint64_t n, size_t size);

#endif
