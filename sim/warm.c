/*
 * The warm thread (warm.h): a single-producer, single-consumer ring. The engine posts each
 * I/O when a job generates it, far ahead of its issue; the thread calls its model's reader.
 * When the ring is empty it spins a while (the engine posts every microsecond or so), then
 * sleeps, so an idle or small run costs the second core little.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "warm.h"

#define WARM_RING 1024          /* requests: 16 jobs x 64 ahead */
#define WARM_SPINS 4096         /* empty polls before sleeping */
#define WARM_SLEEP_US 20
#define WARM_BATCH 8            /* requests published at once: the index's line moves less */

typedef struct WarmReq {
    FemuWarmer r;
    FemuMediaOp op;
    uint64_t offset, len;
} WarmReq;

struct SimWarm {
    WarmReq ring[WARM_RING];
    /* own cache lines: each side writes one */
    uint64_t head __attribute__((aligned(64)));     /* the thread's next to read */
    uint64_t tail __attribute__((aligned(64)));     /* the engine's published end */
    /* the engine's own line: its next to write, and head as last read */
    uint64_t next __attribute__((aligned(64)));
    uint64_t head_seen;
    GThread *thread;
    bool stop __attribute__((aligned(64)));
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static gpointer warm_main(gpointer opaque)
{
    SimWarm *w = opaque;
    uint32_t idle = 0;
    uint64_t tail = 0;

    for (;;) {
        uint64_t h = w->head;
        WarmReq *r;

        if (h == tail && h == (tail = __atomic_load_n(&w->tail, __ATOMIC_ACQUIRE))) {
            if (__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
                break;
            }
            if (++idle < WARM_SPINS) {
                cpu_relax();
            } else {
                g_usleep(WARM_SLEEP_US);
            }
            continue;
        }
        idle = 0;
        r = &w->ring[h % WARM_RING];
        r->r.read(r->r.ctx, r->op, r->offset, r->len);
        __atomic_store_n(&w->head, h + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

SimWarm *sim_warm_new(void)
{
    SimWarm *w = g_new0(SimWarm, 1);

    w->thread = g_thread_new("femu-sim-warm", warm_main, w);
    return w;
}

void sim_warm_post(SimWarm *w, const FemuWarmer *r, FemuMediaOp op, uint64_t offset,
                   uint64_t len)
{
    if (w->next - w->head_seen == WARM_RING) {
        w->head_seen = __atomic_load_n(&w->head, __ATOMIC_ACQUIRE);
        if (w->next - w->head_seen == WARM_RING) {
            return;
        }
    }
    w->ring[w->next++ % WARM_RING] = (WarmReq){ *r, op, offset, len };
    if (w->next % WARM_BATCH == 0) {
        __atomic_store_n(&w->tail, w->next, __ATOMIC_RELEASE);
    }
}

void sim_warm_free(SimWarm *w)
{
    if (w) {
        __atomic_store_n(&w->stop, true, __ATOMIC_RELEASE);
        g_thread_join(w->thread);
        g_free(w);
    }
}
