/*
 * Free units (lines, reclaim units) in the order they were freed: the first freed is the
 * first reused, so erases rotate over every unit. The links live in an array the FTL
 * owns (next[id]), so lists of disjoint ids may share one.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_FTL_FREE_LIST_H
#define FEMU_FTL_FREE_LIST_H

#include <glib.h>
#include <stdint.h>

#define FTL_FREE_END UINT32_MAX

typedef struct FtlFreeList {
    uint32_t head, tail;        /* FTL_FREE_END when empty */
    uint32_t n;
    uint32_t *next;             /* next[id]: the unit freed after id */
} FtlFreeList;

static inline void ftl_free_list_init(FtlFreeList *l, uint32_t *next)
{
    *l = (FtlFreeList){ .head = FTL_FREE_END, .tail = FTL_FREE_END, .next = next };
}

static inline void ftl_free_push(FtlFreeList *l, uint32_t id)
{
    l->next[id] = FTL_FREE_END;
    if (l->tail == FTL_FREE_END) {
        l->head = id;
    } else {
        l->next[l->tail] = id;
    }
    l->tail = id;
    l->n++;
}

/* The unit freed first; the caller knows the list is not empty. */
static inline uint32_t ftl_free_pop(FtlFreeList *l)
{
    uint32_t id = l->head;

    g_assert(id != FTL_FREE_END);
    l->head = l->next[id];
    if (l->head == FTL_FREE_END) {
        l->tail = FTL_FREE_END;
    }
    l->n--;
    return id;
}

/* Walks: for (id = l->head; id != FTL_FREE_END; id = ftl_free_after(l, id)) */
static inline uint32_t ftl_free_after(const FtlFreeList *l, uint32_t id)
{
    return l->next[id];
}

#endif
