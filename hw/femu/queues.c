/*
 * Submission and completion queues, posting completions (now, at a deadline, or when the
 * CQ has room), and asynchronous events. Called by the device thread and the admin
 * command set with n->lock held.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/timer.h"
#include "femu.h"
#include "trace.h"

uint64_t femu_now_ns(FemuCtrl *n)
{
    /* main-loop mode: the virtual clock, which under qtest moves only when stepped */
    return n->main_loop ? qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) : get_clock();
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
    qatomic_set(&n->db_cq_head[cqid], 0);
    qatomic_set(&n->cq[cqid], cq);
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
    /* held AERs do not count against the admin SQ's entries: never let them take all */
    sq->nr_reqs = size + (sqid ? 0 : FEMU_MAX_AERL + 1);
    sq->reqs = g_new0(FemuRequest, sq->nr_reqs);
    QTAILQ_INIT(&sq->free_reqs);
    for (uint32_t i = 0; i < sq->nr_reqs; i++) {
        sq->reqs[i].sq = sq;
        sq->reqs[i].heap_pos = DEADLINE_HEAP_NOT_QUEUED;
        QTAILQ_INSERT_TAIL(&sq->free_reqs, &sq->reqs[i], entry);
    }
    QTAILQ_INSERT_TAIL(&n->cq[cqid]->sqs, sq, cq_link);
    qatomic_set(&n->db_sq_tail[sqid], 0);
    /* doorbell writes look at it without the lock */
    qatomic_set(&n->sq[sqid], sq);
    trace_femu_sq_create(sqid, cqid, size);
    return sq;
}

static void req_release(FemuRequest *req)
{
    req->state = FEMU_REQ_FREE;
    QTAILQ_INSERT_TAIL(&req->sq->free_reqs, req, entry);
}

uint32_t femu_shadow_read(FemuCtrl *n, uint16_t qid, bool cq)
{
    uint32_t v = 0;
    femu_dma_from_guest(n, n->dbbuf_dbs + (2 * qid + cq) * FEMU_DB_STRIDE, &v, sizeof(v));
    return le32_to_cpu(v);
}

static bool femu_uses_shadow(FemuCtrl *n, uint16_t qid)
{
    /* Linux keeps the admin queue on MMIO doorbells */
    return n->dbbuf_dbs && qid != 0;
}

/* An out-of-range doorbell value is reported once, not at every look. */
static bool doorbell_valid(FemuCtrl *n, uint32_t value, uint32_t size, uint32_t *seen)
{
    bool changed = value != *seen;

    *seen = value;
    if (value >= size) {
        if (changed) {
            femu_post_aer(n, NVME_AER_TYPE_ERROR, NVME_AER_INFO_ERR_INVALID_DB_VALUE,
                          NVME_LOG_ERROR_INFO);
        }
        return false;
    }
    return true;
}

void femu_cq_update_head(FemuCtrl *n, FemuCQ *cq)
{
    uint32_t head = femu_uses_shadow(n, cq->cqid) ? femu_shadow_read(n, cq->cqid, true)
                                              : qatomic_read(&n->db_cq_head[cq->cqid]);
    if (doorbell_valid(n, head, cq->size, &cq->db_seen)) {
        cq->head = head;
    }
}

static bool cq_full(FemuCtrl *n, FemuCQ *cq)
{
    if ((cq->tail + 1) % cq->size != cq->head) {
        return false;
    }
    femu_cq_update_head(n, cq);
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
        /* time the VM spent stopped is not the device's lateness */
        uint64_t due = MAX(req->deadline_ns, n->resumed_ns);
        lateness_record(&n->lateness, now > due ? now - due : 0);
    }
    trace_femu_complete(sq->sqid, le16_to_cpu(cqe.cid), status, cq->cqid);
    req_release(req);
}

/* Posts a completion whose time has come, or parks it until its CQ has room. */
void femu_post_due(FemuCtrl *n, FemuRequest *req, uint64_t now)
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
    uint64_t now = femu_now_ns(n);

    if (req->sq->sqid) {
        /* what the model owes the host for it, long commands included */
        n->model_latency_ns += deadline_ns - MIN(deadline_ns, req->arrival_ns);
    }
    req->deadline_ns = deadline_ns;
    if (deadline_ns > now) {
        req->state = FEMU_REQ_TIMED;
        deadline_heap_push(&n->timed, deadline_ns, req, &req->heap_pos);
    } else {
        femu_post_due(n, req, now);
    }
}

/* Takes an outstanding request off whatever list holds it. */
void femu_req_detach(FemuCtrl *n, FemuRequest *req)
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
    case FEMU_REQ_RUNNING:
        QTAILQ_REMOVE(&n->running, req, entry);
        g_clear_pointer(&req->step_state, g_free);
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

    for (uint32_t i = 0; i < sq->nr_reqs; i++) {
        FemuRequest *req = &sq->reqs[i];
        bool executed = req->state == FEMU_REQ_TIMED || req->state == FEMU_REQ_CQ_FULL;

        if (req->state == FEMU_REQ_FREE) {
            continue;
        }
        femu_req_detach(n, req);
        /*
         * Delete SQ completes what waits now (space permitting), with the status it has:
         * its effects happened, so it must not read as aborted. A reset drops them.
         */
        if (!executed) {
            req->cqe.status = cpu_to_le16(NVME_CMD_ABORT_SQ_DEL | NVME_DNR);
        }
        if (post_aborts && cq && !cq_full(n, cq)) {
            cq_post(n, cq, req, femu_now_ns(n));
        } else {
            req_release(req);
        }
    }
    if (cq) {
        QTAILQ_REMOVE(&cq->sqs, sq, cq_link);
    }
    qatomic_set(&n->sq[sqid], NULL);
    g_free(sq->reqs);
    g_free(sq);
    trace_femu_sq_delete(sqid);
}

void femu_cq_free(FemuCtrl *n, uint16_t cqid)
{
    FemuCQ *cq = n->cq[cqid];

    assert(QTAILQ_EMPTY(&cq->sqs));
    qatomic_set(&n->cq[cqid], NULL);
    g_free(cq);
    trace_femu_cq_delete(cqid);
}

/* A controller fatal status: what was executed will never be completed. */
void femu_drop_outstanding(FemuCtrl *n)
{
    FemuRequest *req;

    while ((req = QTAILQ_FIRST(&n->running))) {
        femu_req_detach(n, req);
        req_release(req);
    }
    while (!deadline_heap_empty(&n->timed)) {
        req = deadline_heap_pop_due(&n->timed, UINT64_MAX);
        req_release(req);
    }
    for (uint32_t i = 0; i <= n->nr_io_queues; i++) {
        FemuCQ *cq = n->cq[i];
        while (cq && (req = QTAILQ_FIRST(&cq->waiting))) {
            QTAILQ_REMOVE(&cq->waiting, req, entry);
            req_release(req);
        }
    }
}

/* Doorbell Buffer Config: the shadow doorbells start at the values the MMIO ones hold. */
void femu_dbbuf_seed(FemuCtrl *n)
{
    for (uint32_t i = 1; i <= n->nr_io_queues; i++) {
        uint32_t v;
        if (n->sq[i]) {
            v = cpu_to_le32(qatomic_read(&n->db_sq_tail[i]));
            femu_dma_to_guest(n, n->dbbuf_dbs + 2 * i * FEMU_DB_STRIDE, &v, sizeof(v));
        }
        if (n->cq[i]) {
            v = cpu_to_le32(qatomic_read(&n->db_cq_head[i]));
            femu_dma_to_guest(n, n->dbbuf_dbs + (2 * i + 1) * FEMU_DB_STRIDE, &v, sizeof(v));
        }
    }
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
        femu_req_detach(n, req);
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

/* ---- long commands ---- */

/* The next step of a long command, with what the pass has left; its state goes when done. */
uint16_t femu_req_step(FemuCtrl *n, FemuRequest *req, uint64_t now)
{
    uint64_t pages = n->pass_pages;
    uint16_t status;

    n->long_steps++;
    status = req->step(n, req, now, &n->pass_pages, &req->deadline_ns);
    trace_femu_long_step(req->sq->sqid, le16_to_cpu(req->cqe.cid), pages - n->pass_pages,
                         status == NVME_NO_COMPLETE);
    if (status == NVME_NO_COMPLETE) {
        n->pass_pages = 0;      /* it stopped for want of room */
    } else {
        g_clear_pointer(&req->step_state, g_free);
    }
    return status;
}

uint16_t femu_req_run(FemuCtrl *n, FemuRequest *req, FemuStepFn *step, void *state,
                      uint64_t now, uint64_t *deadline)
{
    req->step = step;
    req->step_state = state;
    req->deadline_ns = *deadline;
    /* older long commands go first: a new one waits for a pass with room */
    if (QTAILQ_EMPTY(&n->running) && n->pass_pages) {
        uint16_t status = femu_req_step(n, req, now);

        if (status != NVME_NO_COMPLETE) {
            *deadline = req->deadline_ns;
            return status;
        }
    }
    req->state = FEMU_REQ_RUNNING;
    QTAILQ_INSERT_TAIL(&n->running, req, entry);
    return NVME_NO_COMPLETE;
}

bool femu_sq_update_tail(FemuCtrl *n, FemuSQ *sq)
{
    uint32_t tail = femu_uses_shadow(n, sq->sqid) ? femu_shadow_read(n, sq->sqid, false)
                                              : qatomic_read(&n->db_sq_tail[sq->sqid]);
    if (!doorbell_valid(n, tail, sq->size, &sq->db_seen)) {
        return false;
    }
    sq->tail = tail;
    /* the host wrote the tail before the entries were visible to it: order our reads */
    smp_rmb();
    return true;
}

int femu_drain_cq_waiting(FemuCtrl *n, uint64_t now)
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

