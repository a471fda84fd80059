/*
 * Sequential read-ahead (SRA): a prefetcher in front of a media model's reads. When the
 * host reads a namespace sequentially with small commands at low queue depth, SRA reads
 * the following NAND pages before they are asked for and answers the next reads from an
 * SRAM cache. It switches itself off for everything else.
 *
 * Each namespace has `streams` detectors. A detector follows one stream and has five
 * states. These are the only transitions:
 *   DISABLED  -> RAMPING            a small, low-QD read that continues no stream
 *   RAMPING   -> ENABLED            `ramp` sequential reads, no write or discard in
 *                                   flight, and no read of the namespace arriving with
 *                                   max_qd reads outstanding for idle_ns
 *   ENABLED   -> PAUSED             the window is full, or the cache is
 *   PAUSED    -> ENABLED            the host consumed half the window
 *   RAMPING, ENABLED, PAUSED -> DISABLING
 *                                   a host write, deallocate or zone reset in the
 *                                   namespace, a read above max_read_bytes, a read at
 *                                   more than max_qd outstanding reads, a random read that
 *                                   needs the detector, or idle_ns without a read
 *   DISABLING -> DISABLED           the stream's cache entries are torn down
 * Any other transition is refused and counted (bad_transitions); it aborts when built
 * with FEMU_DEBUG (debug builds: ./configure --enable-debug).
 *
 * Cache entries (CE) are whole NAND pages. A stream's CEs are the pages [lo, hi) ahead of
 * it. A CE is pruned once the host has read past it. Teardown drops all of a stream's CEs
 * at once, on the way to DISABLED; nothing else drops them. All streams of a model share
 * cache_bytes. A prefetch is a NAND read booked on the chip and channel timelines at the
 * time of the host read that caused it, so it delays other reads of that chip. A read
 * that hits a CE completes when the CE's data is in SRAM, plus hit_ns per page. A read
 * that misses is read from NAND.
 *
 * Prefetch stops where the backend's `readable` says the data ends: a zone's write
 * pointer or boundary, an unmapped page, or the namespace's end. A write, deallocate or
 * reset tears down every stream of its namespace. So a cached page never outlives a
 * change to its data. The host's data always comes from the device's backing store: the
 * cache decides timing only.
 *
 * Time is passed in, never read: the same calls give the same results.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_SRA_H
#define FEMU_SRA_H

#include <stdbool.h>
#include <stdint.h>

#include "../media/media.h"

typedef enum SraState {
    SRA_DISABLED,
    SRA_RAMPING,
    SRA_ENABLED,
    SRA_PAUSED,
    SRA_DISABLING,
    SRA_NR_STATES,
} SraState;

/* Why a stream was disabled. */
typedef enum SraCause {
    SRA_CAUSE_WRITE,        /* a host write (or write zeroes) in the namespace */
    SRA_CAUSE_DISCARD,      /* a deallocate or zone reset */
    SRA_CAUSE_LARGE_READ,   /* a read above max_read_bytes */
    SRA_CAUSE_HIGH_QD,      /* a read arriving with max_qd reads outstanding */
    SRA_CAUSE_RANDOM,       /* a read continuing no stream took its detector */
    SRA_CAUSE_IDLE,         /* no read for idle_ns */
    SRA_CAUSE_POWER_LOSS,   /* power was cut: the SRAM holding the CEs lost them */
    SRA_NR_CAUSES,
} SraCause;

typedef struct SraConfig {
    uint64_t page_bytes;        /* one cache entry: the NAND page */
    uint32_t streams;           /* detectors per namespace, 1..SRA_MAX_STREAMS */
    uint32_t ramp;              /* sequential reads before prefetching, 1..SRA_MAX_RAMP */
    uint64_t max_read_bytes;    /* larger reads disable SRA, >= 1 */
    uint32_t max_qd;            /* more outstanding reads disable SRA, 1..SRA_MAX_QD */
    uint64_t idle_ns;           /* a stream without a read this long is disabled; 0: never */
    uint64_t cache_bytes;       /* SRAM for CEs, at least window pages */
    uint32_t window;            /* pages kept ahead of a stream, 1..SRA_MAX_WINDOW */
    uint64_t hit_ns;            /* serving one page from SRAM */
} SraConfig;

#define SRA_MAX_STREAMS 64
#define SRA_MAX_RAMP 1024
#define SRA_MAX_QD 1024
#define SRA_MAX_WINDOW 4096

typedef struct SraBackend {
    void *opaque;
    /*
     * Reads [offset, offset + len) from the media at now; returns the completion time.
     * prefetch: the read is SRA's, not the host's (for the media's own statistics).
     */
    uint64_t (*read)(void *opaque, uint64_t offset, uint64_t len, uint64_t now,
                     bool prefetch);
    /*
     * How many bytes from offset (page aligned) hold data that may be prefetched, at
     * most max: stops at a write pointer, a zone boundary the namespace may not read
     * across, or an unmapped page. SRA asks from the stream's position (the page the
     * host reads next), so a boundary ahead of the host is not crossed early.
     */
    uint64_t (*readable)(void *opaque, uint32_t nsid, uint64_t offset, uint64_t max);
} SraBackend;

/* Counters of one stream; the model's totals have the same shape. */
typedef struct SraCounters {
    uint64_t entries[SRA_NR_STATES];    /* times the state was entered */
    uint64_t time_ns[SRA_NR_STATES];    /* time spent in it, up to the last event */
    uint64_t hits;                      /* host-read pages served from a CE */
    uint64_t misses;                    /* host-read pages read from NAND (a stream's:
                                           of the reads that continued or started it;
                                           the totals: of every read) */
    uint64_t prefetched;                /* pages read ahead */
    uint64_t wasted;                    /* CEs torn down before the host read them */
    uint64_t pruned;                    /* CEs dropped after the host read them */
    uint64_t teardowns;                 /* DISABLING with at least one CE */
    uint64_t disabled[SRA_NR_CAUSES];
} SraCounters;

typedef struct Sra Sra;

/* Checks a configuration; *err names the sra_* property and its allowed range. */
bool sra_config_check(const SraConfig *c, char **err);

Sra *sra_new(const SraConfig *c, const SraBackend *b, char **err);
void sra_free(Sra *s);

/*
 * A host read of [offset, offset + len) in namespace nsid, arriving at now; ns_end is
 * the namespace's end offset (prefetch never goes past it; 0: no limit). Returns its
 * completion time.
 */
uint64_t sra_read(Sra *s, uint32_t nsid, uint64_t offset, uint64_t len, uint64_t ns_end,
                  uint64_t now);
/*
 * The namespace changed data: a write, or a discard (deallocate, zone reset); done is
 * when the media completes it (it is in flight until then).
 */
void sra_write(Sra *s, uint32_t nsid, uint64_t now, uint64_t done);
void sra_discard(Sra *s, uint32_t nsid, uint64_t now, uint64_t done);
/* Nothing arrived until now: idle streams time out. */
void sra_idle(Sra *s, uint64_t now);
/* Power is cut at now: every stream is torn down (s may be NULL: no read-ahead). */
void sra_power_loss(Sra *s, uint64_t now);

/* Introspection, for tests and statistics. */
SraState sra_stream_state(const Sra *s, uint32_t nsid, uint32_t stream);
/* The stream whose CE holds the page at offset, or -1. */
int sra_cached_stream(const Sra *s, uint32_t nsid, uint64_t offset);
uint64_t sra_cached_pages(const Sra *s);
const SraCounters *sra_stream_counters(const Sra *s, uint32_t nsid, uint32_t stream);
const SraCounters *sra_totals(const Sra *s);
uint64_t sra_bad_transitions(const Sra *s);
/*
 * Asks a stream to go to `to` at now, as the model would: refused (false, counted in
 * bad_transitions) unless the transition is one of those above. For tests of the table.
 */
bool sra_stream_transition(Sra *s, uint32_t nsid, uint32_t stream, SraState to, uint64_t now);
bool sra_transition_allowed(SraState from, SraState to);
const char *sra_state_name(SraState st);
const char *sra_cause_name(SraCause c);

/*
 * Statistics: totals as sra_<name>, and per stream that has been used, as
 * sra_ns<nsid>_s<stream>_<name>.
 */
void sra_emit_stats(const Sra *s, FemuMediaStatFn *emit, void *opaque);

#endif
