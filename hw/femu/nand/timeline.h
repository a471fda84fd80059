/*
 * A resource's timeline: the busy intervals of one channel or one chip, so that an
 * operation can take the earliest idle gap that fits it (first fit, "back-filling") instead
 * of waiting for the end of the latest booking.
 *
 * Bookings never move once made, so completion times already returned stay true.
 * Intervals are half-open [s, e); touching bookings merge into one interval.
 *
 * Storage: the intervals in one sorted array with room at both ends (no allocation per
 * booking once it has grown). A search is O(log n), and O(1) for a booking where its fit
 * just found room; an insert moves the nearer end of the array by one slot (bookings go
 * mostly near the latest end, arrivals near the first); a retire moves the first index.
 * The idle gap before an interval is its start minus the end before it; each block of 32
 * slots keeps an upper bound of its gaps, so that the search of a gap that fits skips the
 * blocks that cannot hold one. In practice a resource keeps hundreds of intervals; at
 * about 10^4 an insert far from both ends costs what a balanced tree's would, and more
 * beyond. tl_retire() drops the intervals that end at or before a time no later arrival
 * precedes, which bounds the memory by what is in flight.
 *
 * A FIFO timeline keeps only busy_until: every fit starts at or after the end of the last
 * booking. It is the model's old rule (nand_sched=fifo), kept for A/B runs and old results.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_NAND_TIMELINE_H
#define FEMU_NAND_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct TlIv TlIv;

typedef struct Timeline {
    bool fifo;              /* no back-filling: keep busy_until only */
    uint64_t busy_until;    /* end of the latest booking */
    uint64_t retired_end;   /* the latest end of a retired interval */
    uint64_t early;         /* fits and checks before retired_end (contract broken) */
    TlIv *iv;               /* the kept intervals, sorted: iv[head .. tail - 1] */
    uint64_t *bmax;         /* per block of slots: at least the largest gap in it */
    uint32_t cap, head, tail;
    uint32_t hint;          /* the slot of the last fit's gap end: the next search tries it */
    uint64_t first_end;     /* at most the end of the first kept interval */
    uint64_t retire_lag;    /* tl_retire waits until this long after first_end (batches) */
} Timeline;

void tl_init(Timeline *tl, bool fifo);
void tl_destroy(Timeline *tl);
/* dst becomes an independent copy of src (dst must be initialised or zeroed). */
void tl_copy(Timeline *dst, const Timeline *src);
/* Forget every booking. */
void tl_clear(Timeline *tl);

/*
 * The earliest x >= t such that [x, x + d) meets no booking (t itself when d = 0 and the
 * timeline back-fills). A t before a retired interval's end counts in `early` and is taken
 * as that end: a retired interval is never booked over.
 */
uint64_t tl_fit(const Timeline *tl, uint64_t t, uint64_t d);
/* The same, and *gap_end: where the idle gap it found ends (UINT64_MAX: never). */
uint64_t tl_fit_gap(const Timeline *tl, uint64_t t, uint64_t d, uint64_t *gap_end);
/*
 * True when no booking meets [s, e). Otherwise false, and *busy_end (if not NULL) is the
 * end of the first booking that meets it.
 */
bool tl_is_free(const Timeline *tl, uint64_t s, uint64_t e, uint64_t *busy_end);
/* Books [s, e), which must be free (see tl_is_free); an empty interval books nothing. */
void tl_book(Timeline *tl, uint64_t s, uint64_t e);
/*
 * Drops the intervals that end at or before h. The caller promises that no later fit or
 * check starts before h; then every answer is the same as without retiring.
 */
void tl_retire_ended(Timeline *tl, uint64_t h);
/*
 * The same, lazily: only once h is retire_lag past the first kept end, so that a call
 * retires a batch (the first intervals' cache lines are cold by then). Retiring less
 * changes no answer.
 */
static inline void tl_retire(Timeline *tl, uint64_t h)
{
    if (h >= tl->first_end && h - tl->first_end >= tl->retire_lag) {
        tl_retire_ended(tl, h);     /* mostly nothing to do: no call */
    }
}

/* Intervals kept (FIFO: 0). */
static inline uint32_t tl_intervals(const Timeline *tl)
{
    return tl->tail - tl->head;
}

/*
 * Calls fn for each kept interval in time order, stopping when it returns false (tests and
 * statistics).
 */
void tl_foreach(const Timeline *tl, bool (*fn)(uint64_t s, uint64_t e, void *opaque),
                void *opaque);

#endif
