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
 * The discipline every change here must keep:
 * - n->lock guards all controller state: queues, requests, the deadline heap, features,
 *   registers, the namespaces with their kinds' state, and the media models. The thread
 *   holds it for a whole pass; vCPU register accesses take it (doorbells excepted: they
 *   store their value atomically and kick); QMP takes it to read statistics.
 * - Lock order is BQL -> n->lock. The thread never waits for the BQL while it holds
 *   n->lock: interrupts are decided under the lock and raised after dropping it.
 * - Guest memory is touched only by the thread, under n->lock, and only through dma.c,
 *   which maps plain guest RAM or fails (the bus master address space has no bounce
 *   buffer): a guest address can never send the thread into MMIO dispatch (which would
 *   want the BQL) nor outside guest RAM.
 * - Whatever a guest controls is bounded per pass: FEMU_SQ_BURST commands per SQ, PRP
 *   walks by the transfer size, SGL chains by FEMU_SGL_MAX_SEGMENTS, and a value it
 *   repeats (a bad doorbell, a full CQ) is work only once. A command whose work a guest
 *   sizes beyond that (a Deallocate of 256 whole-namespace ranges) is a long command
 *   (femu_req_run): it runs FEMU_PASS_PAGES pages of it per pass, oldest first, and stays
 *   in flight in between; its completion is due after its last step. The longest hold of
 *   n->lock by a pass is a statistic (max_pass_ns).
 * - Others take n->lock through femu_lock, which counts them: the thread lets them in
 *   before its next pass (a mutex would let it take the lock straight back).
 * - The thread sleeps whenever there is nothing it can do: no command to fetch, no
 *   deadline within FEMU_SPIN_NS, no CQ that gained room for a waiting completion, a
 *   controller that failed (CSTS.CFS; its commands are dropped) or a stopped VM.
 * - VM stop: the run-state handler sets vm_stopped under n->lock, so no pass runs once
 *   it returns, and raise_irqs checks it under the BQL: no DMA and no interrupt while the
 *   VM is stopped; what was due is posted and raised when it runs again.
 * - Unrealize joins the thread with the BQL dropped, as QEMU's cpu_remove_sync does,
 *   because the thread may be waiting for the BQL to raise an interrupt. The device's BAR
 *   is unmapped before exit is called (pci_qdev_unrealize), so no vCPU reaches the device
 *   meanwhile, and the thread ends without touching the device once stop is set.
 *
 * dataplane=main-loop (for QEMU's fuzzer and deterministic tests) starts no thread: the
 * same pass runs in a bottom half of the main loop, which register writes schedule and a
 * QEMU_CLOCK_VIRTUAL timer schedules at the next deadline or media idle time. The pass
 * then runs with the BQL held (taken before n->lock, as above; interrupts are raised
 * without taking it again), and model time is the virtual clock (femu_now_ns): under
 * qtest it moves only when the test steps it, under TCG it runs with the VM. Nothing
 * polls: shadow event indexes always ask for the MMIO doorbell. A device reset cancels
 * the bottom half and the timer, so nothing left from before it runs after it.
 *
 * Crash ordering: what the handlers save, in which order, and what start-up makes of a
 * kill between any two saves. The backend is a shared mapping, so a store is saved once
 * made; a SIGKILL loses only the stores not made yet. Every kind that keeps write
 * pointers (and OOB, and the PLP store) follows three rules, checked by
 * test_crash_ordering.py (x-crash-at) and the kill loops:
 * - Grow: a write's data (with its OOB, and its PLP record, whose magic goes last) is
 *   placed before the record holding the write pointer that covers it is saved; the
 *   completion is posted after both.
 * - Shrink: a reset, or a rollback at power-up, saves the record that uncovers the data
 *   first; the data, OOB and PLP records are dropped after it.
 * - Start-up trusts the records: each takes the newer of its two checksummed copies (a
 *   torn one loses to the other); protected data goes home (plp_recover, which a kill
 *   only makes run again); a durable end past a saved write pointer stops there; write
 *   pointers roll back to where durable data ends; last, everything above a write
 *   pointer (data and OOB) is cleared.
 * So a kill anywhere leaves at most data above a write pointer, which start-up clears:
 * nothing unacknowledged comes back, and nothing acknowledged (and durable by the PLP
 * rules) is lost. Kinds without write pointers keep data only, placed before the
 * completion, one LBA at a time through the write journal (backend.c): an LBA whose copy
 * a kill cut short is finished at the next start, so none comes back torn. Their timing
 * state starts afresh, except where a kind saves its placement state itself (written
 * through record by record, each with its own check; see that kind's header).
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
#include "system/runstate.h"
#include "femu.h"
#include "sched/event-index.h"
#include "trace.h"

#ifdef CONFIG_LINUX
#include <sys/prctl.h>
#endif

#define FEMU_SPIN_NS        10000   /* spin this close to a deadline instead of sleeping */
#define FEMU_SQ_BURST       32      /* commands taken from one SQ before moving to the next */
#define FEMU_YIELD_NS       1000000 /* the longest the thread waits for others to take the lock */

/* ---- submission processing ---- */

/* CSTS.CFS: nothing more happens until the host resets the controller. */
static void fail_controller(FemuCtrl *n, const char *why)
{
    trace_femu_fatal(why);
    n->bar.csts |= NVME_CSTS_FAILED;
    n->enabled = false;
    femu_drop_outstanding(n);
}

/* A command's status into its completion, which is due at deadline. */
static void finish_cmd(FemuCtrl *n, FemuRequest *req, uint16_t status, uint64_t deadline)
{
    req->cqe.status = cpu_to_le16(femu_status_dnr(status));
    if (status) {
        femu_record_error(n, req);
    }
    femu_complete(n, req, deadline);
}

static int sq_process(FemuCtrl *n, FemuSQ *sq)
{
    int done = 0;

    femu_sq_update_tail(n, sq);
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
        now = femu_now_ns(n);
        deadline = now;
        req->arrival_ns = now;
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
        finish_cmd(n, req, status, deadline);
        if (!n->enabled) {
            break;      /* the command reset or failed the controller */
        }
    }
    return done;
}

/* Long commands, oldest first, a step each while the pass has room (femu_req_run). */
static int run_long(FemuCtrl *n, uint64_t now)
{
    FemuRequest *req;
    int done = 0;

    while (n->pass_pages && (req = QTAILQ_FIRST(&n->running))) {
        uint16_t status = femu_req_step(n, req, now);

        done++;
        if (status != NVME_NO_COMPLETE) {
            QTAILQ_REMOVE(&n->running, req, entry);
            finish_cmd(n, req, status, req->deadline_ns);
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

    if (!n->enabled || n->vm_stopped) {
        return 0;
    }
    if (bad) {
        femu_post_aer(n, NVME_AER_TYPE_ERROR, bad - 1, NVME_LOG_ERROR_INFO);
    }
    /* long commands go on first, new ones get what is left */
    n->pass_pages = FEMU_PASS_PAGES;
    done += run_long(n, femu_now_ns(n));
    for (uint32_t i = 0; i <= n->nr_io_queues && n->enabled; i++) {
        if (n->sq[i]) {
            done += sq_process(n, n->sq[i]);
        }
    }
    now = femu_now_ns(n);
    while (n->enabled && (req = deadline_heap_pop_due(&n->timed, now))) {
        femu_post_due(n, req, now);
        done++;
    }
    if (n->enabled) {
        done += femu_drain_cq_waiting(n, now);
    }
    return done;
}

/* Decides which interrupts to raise; they are raised after the lock is dropped. */
static bool collect_irqs(FemuCtrl *n, bool *intx_level)
{
    PCIDevice *pci = PCI_DEVICE(n);
    bool level = false;
    bool msix = msix_enabled(pci);

    if (n->vm_stopped) {
        return false;
    }
    if (!msix) {
        /* first the heads: reading one may post an event to a CQ looked at before it */
        for (uint32_t i = 0; i <= n->nr_io_queues; i++) {
            FemuCQ *cq = n->cq[i];
            if (cq && cq->irq_enabled && (cq->irq_due || cq->head != cq->tail)) {
                femu_cq_update_head(n, cq);
            }
        }
    }
    for (uint32_t i = 0; i <= n->nr_io_queues; i++) {
        FemuCQ *cq = n->cq[i];
        if (!cq || !cq->irq_enabled) {
            continue;
        }
        if (msix && cq->irq_due) {
            set_bit(cq->vector, n->irq_pending);
        }
        level |= cq->head != cq->tail;
        cq->irq_due = false;
    }
    if (!msix) {
        level &= !(n->bar.intms & 1);
        *intx_level = level;
        return level != n->intx_level;
    }
    return !bitmap_empty(n->irq_pending, n->nr_io_queues + 1);
}

static void raise_irqs(FemuCtrl *n, bool intx_level)
{
    PCIDevice *pci = PCI_DEVICE(n);
    unsigned long v;

    if (!n->main_loop) {
        bql_lock();     /* the main loop holds it already */
    }
    if (n->vm_stopped || qatomic_read(&n->thread_stop)) {
        /* stopped since the decision: raise what is pending when the VM runs again */
    } else if (msix_enabled(pci)) {
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
    if (!n->main_loop) {
        bql_unlock();
    }
}

static void eventidx_write(FemuCtrl *n, uint16_t qid, bool cq, uint32_t val)
{
    uint32_t v = cpu_to_le32(val);
    femu_dma_to_guest(n, n->dbbuf_eis + (2 * qid + cq) * FEMU_DB_STRIDE, &v, sizeof(v));
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

/* Shadow doorbells in use, and the thread may touch guest memory. Caller holds n->lock. */
static bool shadow_active(FemuCtrl *n)
{
    return n->enabled && !n->vm_stopped && n->dbbuf_dbs;
}

/*
 * A shadow doorbell the guest changed since the thread last read it. A value refused as
 * out of range, or a CQ head that left its CQ full, is not work until it changes.
 */
static bool shadow_has_work(FemuCtrl *n)
{
    for (uint32_t i = 1; i <= n->nr_io_queues; i++) {
        FemuSQ *sq = n->sq[i];
        FemuCQ *cq = n->cq[i];
        if (sq && femu_shadow_read(n, i, false) != sq->db_seen) {
            return true;
        }
        if (cq && !QTAILQ_EMPTY(&cq->waiting) && femu_shadow_read(n, i, true) != cq->db_seen) {
            return true;
        }
    }
    return false;
}

/*
 * n->lock for the device thread (or the bottom half); pass_unlock keeps the longest it was
 * held in one go (max_pass_ns), in host time whatever the model's clock.
 */
static int64_t pass_lock(FemuCtrl *n)
{
    qemu_mutex_lock(&n->lock);
    return get_clock();
}

static void pass_unlock(FemuCtrl *n, int64_t since)
{
    n->max_pass_ns = MAX(n->max_pass_ns, (uint64_t)(get_clock() - since));
    qemu_mutex_unlock(&n->lock);
}

/*
 * Someone waits for n->lock (femu_lock): let them have it before the next pass, for at
 * most FEMU_YIELD_NS, since a mutex does not hand itself over to a waiter.
 */
static void let_waiters_in(FemuCtrl *n)
{
    int64_t until = get_clock() + FEMU_YIELD_NS;

    while (qatomic_read(&n->lock_waiters) && get_clock() < until) {
        cpu_relax();
    }
}

/* One pass and the interrupts it owes (*irqs); *next is the earliest deadline left. */
static int pass_locked(FemuCtrl *n, bool *irqs, bool *intx_level, uint64_t *next)
{
    int done = dataplane_pass(n);

    n->dataplane_passes++;
    *irqs = collect_irqs(n, intx_level);
    *next = UINT64_MAX;
    if (n->enabled && !n->vm_stopped && !deadline_heap_empty(&n->timed)) {
        *next = deadline_heap_min(&n->timed);
    }
    return done;
}

/*
 * Background time for the media model (GC): due once the controller has been quiet for
 * FEMU_IDLE_NS, then every FEMU_IDLE_REPEAT_NS while it stays quiet. *idle_at is when it is
 * due next (UINT64_MAX: not wanted); returns whether it ran now.
 */
static bool media_idle_tick(FemuCtrl *n, int done, uint64_t next, uint64_t now,
                            uint64_t *idle_at)
{
    int64_t since;

    if (done) {
        *idle_at = femu_media_wants_idle(n) ? now + FEMU_IDLE_NS : UINT64_MAX;
        return false;
    }
    if (next != UINT64_MAX || now < *idle_at) {
        return false;
    }
    since = pass_lock(n);
    femu_media_idle_all(n, now);
    pass_unlock(n, since);
    *idle_at = now + FEMU_IDLE_REPEAT_NS;
    return true;
}

void femu_dataplane_kick(FemuCtrl *n)
{
    if (n->main_loop) {
        qemu_bh_schedule(n->bh);
        return;
    }
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
#ifdef CONFIG_LINUX
    /* sleeps are timed to the deadline: ask the kernel for precise wake-ups */
    prctl(PR_SET_TIMERSLACK, 1UL);
#endif

    while (!qatomic_read(&n->thread_stop)) {
        uint64_t now, next, poll_ns = (uint64_t)n->poll_idle_us * 1000;
        bool shadow, intx_level = false, irqs;
        int done;

        uint32_t kicks = qatomic_read(&n->kicks);
        int64_t since;

        let_waiters_in(n);
        since = pass_lock(n);
        done = pass_locked(n, &irqs, &intx_level, &next);
        shadow = shadow_active(n);
        polling_shadow &= shadow;
        if (shadow && done && !polling_shadow) {
            publish_eventidx(n, false);
            polling_shadow = true;
        }
        pass_unlock(n, since);
        if (irqs) {
            raise_irqs(n, intx_level);
        }

        now = femu_now_ns(n);
        if (done) {
            last_work = now;
        }
        if (media_idle_tick(n, done, next, now, &idle_at) || done) {
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
        since = pass_lock(n);
        /* again: a reset or a VM stop may have come since the pass */
        if (shadow_active(n)) {
            publish_eventidx(n, true);
            polling_shadow = false;
            if (shadow_has_work(n)) {
                pass_unlock(n, since);
                qatomic_set(&n->thread_sleeping, false);
                continue;
            }
        }
        n->dataplane_sleeps++;
        pass_unlock(n, since);
        if (!qatomic_read(&n->thread_stop)) {
            int64_t timeout = next == UINT64_MAX ? -1 :
                              (int64_t)(next - femu_now_ns(n) - FEMU_SPIN_NS);
            qemu_poll_ns(&pfd, 1, next == UINT64_MAX ? -1 : MAX(timeout, 0));
        }
        qatomic_set(&n->thread_sleeping, false);
        event_notifier_test_and_clear(&n->wake);
    }
    rcu_unregister_thread();
    return NULL;
}

/*
 * dataplane=main-loop: one pass per run of the bottom half (BQL held). More work runs in
 * the next one, so the main loop (and a fuzzer's input) goes on between passes; otherwise
 * the timer is set for the next deadline or media idle time.
 */
static void femu_dataplane_bh(void *opaque)
{
    FemuCtrl *n = opaque;
    bool intx_level = false, irqs;
    uint64_t now, next, wake;
    int64_t since = pass_lock(n);
    int done;

    done = pass_locked(n, &irqs, &intx_level, &next);
    if (!done && shadow_active(n)) {
        /* no polling here: the guest rings the doorbell for whatever it adds next */
        publish_eventidx(n, true);
        done = shadow_has_work(n);
    }
    pass_unlock(n, since);
    if (irqs) {
        raise_irqs(n, intx_level);
    }

    now = femu_now_ns(n);
    if (media_idle_tick(n, done, next, now, &n->idle_at) || done) {
        qemu_bh_schedule(n->bh);
        return;
    }
    /* idle time is only given with nothing due: a past idle_at must not re-arm the timer */
    wake = next != UINT64_MAX ? next : n->idle_at;
    if (wake == UINT64_MAX) {
        timer_del(n->timer);
    } else {
        timer_mod_ns(n->timer, MIN(wake, INT64_MAX));
    }
}

/* The deadline came: the pass runs in the bottom half, as every other pass does. */
static void femu_dataplane_timer(void *opaque)
{
    FemuCtrl *n = opaque;

    qemu_bh_schedule(n->bh);
}

/* The VM stopped or runs again (BQL held). */
static void femu_vm_state_change(void *opaque, bool running, RunState state)
{
    FemuCtrl *n = opaque;

    femu_lock(n);
    n->vm_stopped = !running;
    if (running) {
        n->resumed_ns = femu_now_ns(n);
    }
    femu_unlock(n);
    femu_dataplane_kick(n);
}

void femu_dataplane_start(FemuCtrl *n)
{
    n->vm_stopped = !runstate_is_running();
    n->vmstate_entry = qdev_add_vm_change_state_handler(DEVICE(n), femu_vm_state_change, n);
    if (n->main_loop) {
        n->idle_at = UINT64_MAX;
        n->bh = qemu_bh_new_guarded(femu_dataplane_bh, n, &DEVICE(n)->mem_reentrancy_guard);
        n->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, femu_dataplane_timer, n);
        return;
    }
    event_notifier_init(&n->wake, false);
    n->thread_stop = false;
    qemu_thread_create(&n->thread, "femu-dataplane", femu_dataplane_thread, n,
                       QEMU_THREAD_JOINABLE);
}

/* A device reset (BQL held): nothing scheduled before it may run after it. */
void femu_dataplane_reset(FemuCtrl *n)
{
    if (n->main_loop) {
        qemu_bh_cancel(n->bh);
        timer_del(n->timer);
        n->idle_at = UINT64_MAX;
    }
}

void femu_dataplane_stop(FemuCtrl *n)
{
    bool bql = bql_locked();

    qemu_del_vm_change_state_handler(n->vmstate_entry);
    if (n->main_loop) {
        qemu_bh_delete(n->bh);
        timer_free(n->timer);
        return;
    }
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
