/*
 * Deadline min-heap; see deadline-heap.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "deadline-heap.h"

#include <glib.h>

static bool entry_before(const DeadlineHeapEntry *a, const DeadlineHeapEntry *b)
{
    return a->deadline_ns != b->deadline_ns ? a->deadline_ns < b->deadline_ns : a->seq < b->seq;
}

static void place(DeadlineHeap *h, size_t i, DeadlineHeapEntry e)
{
    h->v[i] = e;
    if (e.pos) {
        *e.pos = i;
    }
}

static void sift_up(DeadlineHeap *h, size_t i)
{
    DeadlineHeapEntry e = h->v[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!entry_before(&e, &h->v[parent])) {
            break;
        }
        place(h, i, h->v[parent]);
        i = parent;
    }
    place(h, i, e);
}

static void sift_down(DeadlineHeap *h, size_t i)
{
    DeadlineHeapEntry e = h->v[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->len) {
            break;
        }
        if (child + 1 < h->len && entry_before(&h->v[child + 1], &h->v[child])) {
            child++;
        }
        if (!entry_before(&h->v[child], &e)) {
            break;
        }
        place(h, i, h->v[child]);
        i = child;
    }
    place(h, i, e);
}

void deadline_heap_init(DeadlineHeap *h)
{
    *h = (DeadlineHeap){ 0 };
}

void deadline_heap_destroy(DeadlineHeap *h)
{
    for (size_t i = 0; i < h->len; i++) {
        if (h->v[i].pos) {
            *h->v[i].pos = DEADLINE_HEAP_NOT_QUEUED;
        }
    }
    g_free(h->v);
    *h = (DeadlineHeap){ 0 };
}

void deadline_heap_push(DeadlineHeap *h, uint64_t deadline_ns, void *item, size_t *pos)
{
    if (h->len == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->v = g_renew(DeadlineHeapEntry, h->v, h->cap);
    }
    h->v[h->len] = (DeadlineHeapEntry){ deadline_ns, h->next_seq++, item, pos };
    sift_up(h, h->len++);
}

static void *take(DeadlineHeap *h, size_t i)
{
    DeadlineHeapEntry e = h->v[i];
    h->len--;
    if (i != h->len) {
        place(h, i, h->v[h->len]);
        /* the last entry, moved into the hole, may belong above or below it */
        if (i > 0 && entry_before(&h->v[i], &h->v[(i - 1) / 2])) {
            sift_up(h, i);
        } else {
            sift_down(h, i);
        }
    }
    if (e.pos) {
        *e.pos = DEADLINE_HEAP_NOT_QUEUED;
    }
    return e.item;
}

void *deadline_heap_pop_due(DeadlineHeap *h, uint64_t now_ns)
{
    if (h->len == 0 || h->v[0].deadline_ns > now_ns) {
        return NULL;
    }
    return take(h, 0);
}

bool deadline_heap_remove(DeadlineHeap *h, size_t *pos)
{
    if (*pos == DEADLINE_HEAP_NOT_QUEUED || *pos >= h->len || h->v[*pos].pos != pos) {
        return false;
    }
    take(h, *pos);
    return true;
}
