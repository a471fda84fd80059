/*
 * The device thread: takes commands off the submission queues, runs them, and posts each
 * completion when the model's deadline is reached.
 *
 * It never spins while the guest is idle. With MMIO doorbells it sleeps on an eventfd that
 * doorbell writes kick (with a timeout at the next deadline). With shadow doorbells it polls
 * the shadow tails while I/O flows, keeping each event index behind the tail so the guest
 * does not trap on doorbells; after poll_idle_us without work it publishes event index =
 * tail (the guest's next submission then rings the real doorbell) and sleeps. Before a
 * deadline it sleeps until a few microseconds are left and spins the rest.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bitmap.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci.h"
#include "femu.h"
#include "sched/event-index.h"
#include "trace.h"

#include <sys/prctl.h>

#define FEMU_SPIN_NS        10000   /* spin this close to a deadline instead of sleeping */
#define FEMU_SQ_BURST       32      /* commands taken from one SQ before moving to the next */

uint64_t femu_now_ns(void)
{
    return get_clock();
}

/* ---- queues ---- */

FemuCQ *femu_cq_new(FemuCtrl *n, uint16_t cqid, uint16_t vector, bool ien, uint32_t size,
                    uint64_t addr)
{
    FemuCQ *cq = g_new0(FemuCQ, 1);

    cq->cqid = cqid;
    cq->vector = vector;
    cq->irq_enabled = ien;
    cq->size = size;
    cq->dma_addr = addr;
    cq->phase = 1;
    QTAILQ_INIT(&cq->waiting);
    QTAILQ_INIT(&cq->sqs);
    n->cq[cqid] = cq;
    qatomic_set(&n->db_cq_head[cqid], 0);
    trace_femu_cq_create(cqid, size, vector, ien);
    return cq;
}

FemuSQ *femu_sq_new(FemuCtrl *n, uint16_t sqid, uint16_t cqid, uint32_t size, uint64_t addr)
{
    FemuSQ *sq = g_new0(FemuSQ, 1);

    sq->sqid = sqid;
    sq->cqid = cqid;
    sq->size = size;
    sq->dma_addr = addr;
    sq->reqs = g_new0(FemuRequest, size);
    QTAILQ_INIT(&sq->free_reqs);
    for (uint32_t i = 0; i < size; i++) {
        sq->reqs[i].sq = sq;
        sq->reqs[i].heap_pos = DEADLINE_HEAP_NOT_QUEUED;
        QTAILQ_INSERT_TAIL(&sq->free_reqs, &sq->reqs[i], entry);
    }
    QTAILQ_INSERT_TAIL(&n->cq[cqid]->sqs, sq, cq_link);
    n->sq[sqid] = sq;
    qatomic_set(&n->db_sq_tail[sqid], 0);
    trace_femu_sq_create(sqid, cqid, size);
    return sq;
}

static void req_release(FemuRequest *req)
{
    req->state = FEMU_REQ_FREE;
    QTAILQ_INSERT_TAIL(&req->sq->free_reqs, req, entry);
}

static uint32_t shadow_read(FemuCtrl *n, uint16_t qid, bool cq)
{
    uint32_t v = 0;
    femu_dma_from_guest(n, n->dbbuf_dbs + (2 * qid + cq) * FEMU_DB_STRIDE, &v, sizeof(v));
    return le32_to_cpu(v);
}

static void eventidx_write(FemuCtrl *n, uint16_t qid, bool cq, uint32_t val)
{
    uint32_t v = cpu_to_le32(val);
    femu_dma_to_guest(n, n->dbbuf_eis + (2 * qid + cq) * FEMU_DB_STRIDE, &v, sizeof(v));
}

static bool uses_shadow(FemuCtrl *n, uint16_t qid)
{
    /* Linux keeps the admin queue on MMIO doorbells */
    return n->dbbuf_dbs && qid != 0;
}

static void cq_update_head(FemuCtrl *n, FemuCQ *cq)
{
    uint32_t head = uses_shadow(n, cq->cqid) ? shadow_read(n, cq->cqid, true)
                                              : qatomic_read(&n->db_cq_head[cq->cqid]);
    if (head >= cq->size) {
        femu_post_aer(n, NVME_AER_TYPE_ERROR, NVME_AER_INFO_ERR_INVALID_DB_VALUE,
                      NVME_LOG_ERROR_INFO);
        return;
    }
    cq->head = head;
}

static bool cq_full(FemuCtrl *n, FemuCQ *cq)
{
    if ((cq->tail + 1) % cq->size != cq->head) {
        return false;
    }
    cq_update_head(n, cq);
    return (cq->tail + 1) % cq->size == cq->head;
}

static void cq_post(FemuCtrl *n, FemuCQ *cq, FemuRequest *req, uint64_t now)
{
    FemuSQ *sq = req->sq;
    NvmeCqe cqe = req->cqe;
    uint64_t addr = cq->dma_addr + (uint64_t)cq->tail * sizeof(NvmeCqe);
    uint16_t status = le16_to_cpu(req->cqe.status);

    cqe.sq_head = cpu_to_le16(sq->head);
    cqe.sq_id = cpu_to_le16(sq->sqid);
    cqe.status = cpu_to_le16((status << 1) | cq->phase);
    /* the phase bit tells the host the entry is valid: it must land last */
    femu_dma_to_guest(n, addr, &cqe, offsetof(NvmeCqe, status));
    smp_wmb();
    femu_dma_to_guest(n, addr + offsetof(NvmeCqe, status), &cqe.status, sizeof(cqe.status));

    if (++cq->tail == cq->size) {
        cq->tail = 0;
        cq->phase ^= 1;
    }
    cq->irq_due = true;
    if (sq->sqid && req->deadline_ns) {
        lateness_record(&n->lateness, now > req->deadline_ns ? now - req->deadline_ns : 0);
    }
    trace_femu_complete(sq->sqid, le16_to_cpu(cqe.cid), status, cq->cqid);
    req_release(req);
}

/* Posts a completion whose time has come, or parks it until its CQ has room. */
static void post_or_wait(FemuCtrl *n, FemuRequest *req, uint64_t now)
{
    FemuCQ *cq = n->cq[req->sq->cqid];

    if (QTAILQ_EMPTY(&cq->waiting) && !cq_full(n, cq)) {
        cq_post(n, cq, req, now);
    } else {
        req->state = FEMU_REQ_CQ_FULL;
        QTAILQ_INSERT_TAIL(&cq->waiting, req, entry);
    }
}

void femu_complete(FemuCtrl *n, FemuRequest *req, uint64_t deadline_ns)
{
    uint64_t now = femu_now_ns();

    req->deadline_ns = deadline_ns;
    if (deadline_ns > now) {
        req->state = FEMU_REQ_TIMED;
        deadline_heap_push(&n->timed, deadline_ns, req, &req->heap_pos);
    } else {
        post_or_wait(n, req, now);
    }
}

/* Takes an outstanding request off whatever list holds it. */
static void req_detach(FemuCtrl *n, FemuRequest *req)
{
    switch (req->state) {
    case FEMU_REQ_TIMED:
        deadline_heap_remove(&n->timed, &req->heap_pos);
        break;
    case FEMU_REQ_CQ_FULL:
        QTAILQ_REMOVE(&n->cq[req->sq->cqid]->waiting, req, entry);
        break;
    case FEMU_REQ_AER:
        QTAILQ_REMOVE(&n->aer_reqs, req, entry);
        n->outstanding_aers--;
        break;
    case FEMU_REQ_FREE:
        break;
    }
    req->state = FEMU_REQ_FREE;
}

void femu_sq_free(FemuCtrl *n, uint16_t sqid, bool post_aborts)
{
    FemuSQ *sq = n->sq[sqid];
    FemuCQ *cq = n->cq[sq->cqid];

    for (uint32_t i = 0; i < sq->size; i++) {
        FemuRequest *req = &sq->reqs[i];
        if (req->state != FEMU_REQ_FREE) {
            req_detach(n, req);
            /* Delete SQ completes them as aborted (space permitting); a reset drops them */
            req->cqe.status = cpu_to_le16(NVME_CMD_ABORT_SQ_DEL);
            if (post_aborts && cq && !cq_full(n, cq)) {
                cq_post(n, cq, req, femu_now_ns());
            }
        }
    }
    if (cq) {
        QTAILQ_REMOVE(&cq->sqs, sq, cq_link);
    }
    n->sq[sqid] = NULL;
    g_free(sq->reqs);
    g_free(sq);
    trace_femu_sq_delete(sqid);
}

void femu_cq_free(FemuCtrl *n, uint16_t cqid)
{
    FemuCQ *cq = n->cq[cqid];

    assert(QTAILQ_EMPTY(&cq->sqs));
    n->cq[cqid] = NULL;
    g_free(cq);
    trace_femu_cq_delete(cqid);
}

/* ---- asynchronous events ---- */

static void aer_deliver(FemuCtrl *n)
{
    while (n->aer_queued && !QTAILQ_EMPTY(&n->aer_reqs)) {
        NvmeAerResult ev = n->aer_queue[0];
        FemuRequest *req;

        if (n->aer_masked & (1u << ev.event_type)) {
            return;
        }
        req = QTAILQ_FIRST(&n->aer_reqs);
        req_detach(n, req);
        memmove(&n->aer_queue[0], &n->aer_queue[1], --n->aer_queued * sizeof(ev));
        n->aer_masked |= 1u << ev.event_type;
        memcpy(&req->cqe.result, &ev, sizeof(ev));
        req->cqe.status = cpu_to_le16(NVME_SUCCESS);
        trace_femu_aer_complete(ev.event_type, ev.event_info, ev.log_page);
        femu_complete(n, req, 0);
    }
}

void femu_post_aer(FemuCtrl *n, uint8_t type, uint8_t info, uint8_t log_page)
{
    if (n->aer_queued == FEMU_MAX_AER_EVENTS) {
        return;
    }
    for (uint32_t i = 0; i < n->aer_queued; i++) {
        if (n->aer_queue[i].event_type == type && n->aer_queue[i].event_info == info) {
            return;
        }
    }
    n->aer_queue[n->aer_queued++] = (NvmeAerResult){ type, info, log_page, 0 };
    trace_femu_aer_event(type, info);
    aer_deliver(n);
}

void femu_aer_unmask(FemuCtrl *n, uint8_t type)
{
    n->aer_masked &= ~(1u << type);
    aer_deliver(n);
}

void femu_aer_hold(FemuCtrl *n, FemuRequest *req)
{
    req->state = FEMU_REQ_AER;
    QTAILQ_INSERT_TAIL(&n->aer_reqs, req, entry);
    n->outstanding_aers++;
    aer_deliver(n);
}

/* ---- submission processing ---- */

static bool sq_update_tail(FemuCtrl *n, FemuSQ *sq)
{
    uint32_t tail = uses_shadow(n, sq->sqid) ? shadow_read(n, sq->sqid, false)
                                              : qatomic_read(&n->db_sq_tail[sq->sqid]);
    if (tail >= sq->size) {
        femu_post_aer(n, NVME_AER_TYPE_ERROR, NVME_AER_INFO_ERR_INVALID_DB_VALUE,
                      NVME_LOG_ERROR_INFO);
        return false;
    }
    sq->tail = tail;
    /* the host wrote the tail before the entries were visible to it: order our reads */
    smp_rmb();
    return true;
}

static void fail_controller(FemuCtrl *n, const char *why)
{
    trace_femu_fatal(why);
    n->bar.csts |= NVME_CSTS_FAILED;
    n->enabled = false;
}

static int sq_process(FemuCtrl *n, FemuSQ *sq)
{
    int done = 0;

    sq_update_tail(n, sq);
    while (sq->head != sq->tail && done < FEMU_SQ_BURST && !QTAILQ_EMPTY(&sq->free_reqs)) {
        FemuRequest *req;
        NvmeCmd cmd;
        uint64_t now, deadline;
        uint16_t status;

        if (femu_dma_from_guest(n, sq->dma_addr + (uint64_t)sq->head * sizeof(cmd), &cmd,
                                sizeof(cmd))) {
            fail_controller(n, "submission queue unreadable");
            return done;
        }
        sq->head = (sq->head + 1) % sq->size;
        req = QTAILQ_FIRST(&sq->free_reqs);
        QTAILQ_REMOVE(&sq->free_reqs, req, entry);
        req->cqe = (NvmeCqe){ .cid = cmd.cid };
        req->opcode = cmd.opcode;
        req->nsid = le32_to_cpu(cmd.nsid);
        req->slba = 0;
        now = femu_now_ns();
        deadline = now;
        trace_femu_submit(sq->sqid, le16_to_cpu(cmd.cid), cmd.opcode, req->nsid);

        if (sq->sqid) {
            status = femu_io_cmd(n, req, &cmd, now, &deadline);
        } else {
            status = femu_admin_cmd(n, req, &cmd);
        }
        done++;
        if (status == NVME_NO_COMPLETE) {
            continue;   /* held: an asynchronous event request */
        }
        req->cqe.status = cpu_to_le16(femu_status_dnr(status));
        if (status) {
            femu_record_error(n, req);
        }
        femu_complete(n, req, deadline);
        if (!n->enabled) {
            break;      /* the command reset or failed the controller */
        }
    }
    return done;
}

static int drain_cq_waiting(FemuCtrl *n, uint64_t now)
{
    int done = 0;

    for (uint32_t i = 0; i <= n->nr_io_queues; i++) {
        FemuCQ *cq = n->cq[i];
        FemuRequest *req;

        while (cq && (req = QTAILQ_FIRST(&cq->waiting)) && !cq_full(n, cq)) {
            QTAILQ_REMOVE(&cq->waiting, req, entry);
            cq_post(n, cq, req, now);
            done++;
        }
    }
    return done;
}

/* One pass over the controller; returns how much work it found. Caller holds n->lock. */
static int dataplane_pass(FemuCtrl *n)
{
    uint32_t bad = qatomic_xchg(&n->bad_doorbell, 0);
    FemuRequest *req;
    int done = 0;
    uint64_t now;

    if (!n->enabled) {
        return 0;
    }
    if (bad) {
        femu_post_aer(n, NVME_AER_TYPE_ERROR, bad - 1, NVME_LOG_ERROR_INFO);
    }
    for (uint32_t i = 0; i <= n->nr_io_queues && n->enabled; i++) {
        if (n->sq[i]) {
            done += sq_process(n, n->sq[i]);
        }
    }
    now = femu_now_ns();
    while (n->enabled && (req = deadline_heap_pop_due(&n->timed, now))) {
        post_or_wait(n, req, now);
        done++;
    }
    if (n->enabled) {
        done += drain_cq_waiting(n, now);
    }
    return done;
}

/* Decides which interrupts to raise; they are raised after the lock is dropped. */
static bool collect_irqs(FemuCtrl *n, bool *intx_level)
{
    PCIDevice *pci = PCI_DEVICE(n);
    bool any = false, level = false;
    bool msix = msix_enabled(pci);

    for (uint32_t i = 0; i <= n->nr_io_queues; i++) {
        FemuCQ *cq = n->cq[i];
        if (!cq || !cq->irq_enabled) {
            continue;
        }
        if (msix) {
            if (cq->irq_due) {
                set_bit(cq->vector, n->irq_pending);
                any = true;
            }
        } else {
            if (cq->irq_due || cq->head != cq->tail) {
                cq_update_head(n, cq);
            }
            level |= cq->head != cq->tail;
        }
        cq->irq_due = false;
    }
    if (!msix) {
        level &= !(n->bar.intms & 1);
        *intx_level = level;
        return level != n->intx_level;
    }
    return any;
}

static void raise_irqs(FemuCtrl *n, bool intx_level)
{
    PCIDevice *pci = PCI_DEVICE(n);
    unsigned long v;

    bql_lock();
    if (msix_enabled(pci)) {
        for (v = find_first_bit(n->irq_pending, n->nr_io_queues + 1);
             v <= n->nr_io_queues;
             v = find_next_bit(n->irq_pending, n->nr_io_queues + 1, v + 1)) {
            clear_bit(v, n->irq_pending);
            msix_notify(pci, v);
        }
    } else if (intx_level != n->intx_level) {
        n->intx_level = intx_level;
        pci_set_irq(pci, intx_level);
    }
    bql_unlock();
}

/* With shadow doorbells, decides whether the guest must ring the MMIO doorbell. */
static void publish_eventidx(FemuCtrl *n, bool want_doorbells)
{
    for (uint32_t i = 1; i <= n->nr_io_queues; i++) {
        if (n->sq[i]) {
            eventidx_write(n, i, false, event_index_for(n->sq[i]->tail, n->sq[i]->size,
                                                        want_doorbells));
        }
        if (n->cq[i]) {
            eventidx_write(n, i, true, event_index_for(n->cq[i]->head, n->cq[i]->size,
                                                       want_doorbells));
        }
    }
    smp_mb();
}

static bool shadow_has_work(FemuCtrl *n)
{
    for (uint32_t i = 1; i <= n->nr_io_queues; i++) {
        FemuSQ *sq = n->sq[i];
        if (sq && shadow_read(n, i, false) != sq->tail) {
            return true;
        }
        if (n->cq[i] && !QTAILQ_EMPTY(&n->cq[i]->waiting)) {
            return true;
        }
    }
    return false;
}

bool femu_media_wants_idle(FemuCtrl *n)
{
    for (uint32_t i = 0; i < n->nr_medias; i++) {
        if (n->medias[i]->ops->idle) {
            return true;
        }
    }
    return false;
}

void femu_dataplane_kick(FemuCtrl *n)
{
    /* a full barrier: the new value before the sleeping flag, pairs with the thread */
    qatomic_inc(&n->kicks);
    if (qatomic_read(&n->thread_sleeping)) {
        event_notifier_set(&n->wake);
    }
}

static void *femu_dataplane_thread(void *opaque)
{
    FemuCtrl *n = opaque;
    GPollFD pfd = { .fd = event_notifier_get_fd(&n->wake), .events = G_IO_IN };
    uint64_t last_work = 0, idle_at = UINT64_MAX;
    bool polling_shadow = false;

    rcu_register_thread();
    /* sleeps are timed to the deadline: ask the kernel for precise wake-ups */
    prctl(PR_SET_TIMERSLACK, 1UL);

    while (!qatomic_read(&n->thread_stop)) {
        uint64_t now, next = UINT64_MAX, poll_ns = (uint64_t)n->poll_idle_us * 1000;
        bool shadow, intx_level = false, irqs;
        int done;

        uint32_t kicks = qatomic_read(&n->kicks);

        qemu_mutex_lock(&n->lock);
        done = dataplane_pass(n);
        irqs = collect_irqs(n, &intx_level);
        if (!deadline_heap_empty(&n->timed)) {
            next = deadline_heap_min(&n->timed);
        }
        shadow = n->enabled && n->dbbuf_dbs;
        if (shadow && done && !polling_shadow) {
            publish_eventidx(n, false);
            polling_shadow = true;
        }
        qemu_mutex_unlock(&n->lock);
        if (irqs) {
            raise_irqs(n, intx_level);
        }

        now = femu_now_ns();
        if (done) {
            last_work = now;
            idle_at = femu_media_wants_idle(n) ? now + FEMU_IDLE_NS : UINT64_MAX;
            continue;
        }
        if (next == UINT64_MAX && now >= idle_at) {
            /* quiet: the model may do background work (GC) up to now */
            qemu_mutex_lock(&n->lock);
            for (uint32_t i = 0; i < n->nr_medias; i++) {
                femu_media_idle(n->medias[i], now);
            }
            qemu_mutex_unlock(&n->lock);
            idle_at = now + FEMU_IDLE_REPEAT_NS;
            continue;
        }
        if (next == UINT64_MAX && idle_at != UINT64_MAX) {
            next = idle_at + FEMU_SPIN_NS;      /* wake up to tell it */
        }
        if (next <= now + FEMU_SPIN_NS) {
            cpu_relax();
            continue;
        }
        if (shadow && polling_shadow && now - last_work < poll_ns) {
            cpu_relax();
            continue;
        }

        qatomic_set(&n->thread_sleeping, true);
        smp_mb();
        if (qatomic_read(&n->kicks) != kicks) {
            qatomic_set(&n->thread_sleeping, false);
            continue;   /* a doorbell came after the pass read it */
        }
        qemu_mutex_lock(&n->lock);
        if (n->enabled && n->dbbuf_dbs) {
            publish_eventidx(n, true);
            polling_shadow = false;
            if (shadow_has_work(n)) {
                qemu_mutex_unlock(&n->lock);
                qatomic_set(&n->thread_sleeping, false);
                continue;
            }
        }
        qemu_mutex_unlock(&n->lock);
        if (!qatomic_read(&n->thread_stop)) {
            int64_t timeout = next == UINT64_MAX ? -1 :
                              (int64_t)(next - femu_now_ns() - FEMU_SPIN_NS);
            qemu_poll_ns(&pfd, 1, next == UINT64_MAX ? -1 : MAX(timeout, 0));
        }
        qatomic_set(&n->thread_sleeping, false);
        event_notifier_test_and_clear(&n->wake);
    }
    rcu_unregister_thread();
    return NULL;
}

void femu_dataplane_start(FemuCtrl *n)
{
    event_notifier_init(&n->wake, false);
    n->thread_stop = false;
    qemu_thread_create(&n->thread, "femu-dataplane", femu_dataplane_thread, n,
                       QEMU_THREAD_JOINABLE);
}

void femu_dataplane_stop(FemuCtrl *n)
{
    bool bql = bql_locked();

    qatomic_set(&n->thread_stop, true);
    event_notifier_set(&n->wake);
    /* the thread may be waiting for the BQL to raise an interrupt */
    if (bql) {
        bql_unlock();
    }
    qemu_thread_join(&n->thread);
    if (bql) {
        bql_lock();
    }
    event_notifier_cleanup(&n->wake);
}
