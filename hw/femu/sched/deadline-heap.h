/*
 * A min-heap of pending completions ordered by deadline (ns), FIFO among equal deadlines.
 * QEMU-free. Each item may register a position slot that the heap keeps up to date, so an
 * item can be removed before its deadline (aborts, queue deletion) in O(log n).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_DEADLINE_HEAP_H
#define FEMU_DEADLINE_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEADLINE_HEAP_NOT_QUEUED SIZE_MAX

typedef struct DeadlineHeapEntry {
    uint64_t deadline_ns;
    uint64_t seq;       /* insertion order: ties complete first-in first-out */
    void *item;
    size_t *pos;        /* where the heap writes the entry's index; may be NULL */
} DeadlineHeapEntry;

typedef struct DeadlineHeap {
    DeadlineHeapEntry *v;
    size_t len, cap;
    uint64_t next_seq;
} DeadlineHeap;

void deadline_heap_init(DeadlineHeap *h);
void deadline_heap_destroy(DeadlineHeap *h);
/* pos (optional) receives the entry's index and DEADLINE_HEAP_NOT_QUEUED when it leaves. */
void deadline_heap_push(DeadlineHeap *h, uint64_t deadline_ns, void *item, size_t *pos);
static inline bool deadline_heap_empty(const DeadlineHeap *h) { return h->len == 0; }
static inline size_t deadline_heap_len(const DeadlineHeap *h) { return h->len; }
/* Earliest deadline; only valid when the heap is not empty. */
static inline uint64_t deadline_heap_min(const DeadlineHeap *h) { return h->v[0].deadline_ns; }
/* Removes and returns the earliest item if its deadline is <= now_ns, else NULL. */
void *deadline_heap_pop_due(DeadlineHeap *h, uint64_t now_ns);
/* Removes the item at *pos (as maintained by the heap); returns false if not queued. */
bool deadline_heap_remove(DeadlineHeap *h, size_t *pos);

#endif
