/*
 * FEMU: an NVMe controller whose media timing comes from a QEMU-free model.
 *
 * Threading: MMIO handlers run in vCPU threads with the BQL held; one device thread per
 * controller ("dataplane") fetches commands, executes them, and posts completions when the
 * model's deadline is reached. FemuCtrl.lock guards all controller state. Lock order is
 * BQL -> FemuCtrl.lock; the device thread never takes the BQL while holding the lock
 * (interrupts are raised after it drops the lock), and it only touches guest RAM, never
 * MMIO, so DMA cannot need the BQL either. With dataplane=main-loop there is no thread: the
 * same work runs in a bottom half of the main loop (see dataplane.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_H
#define HW_FEMU_H

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/queue.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qemu/event_notifier.h"
#include "hw/pci/pci_device.h"
#include "system/dma.h"
#include "system/hostmem.h"
#include "system/runstate.h"
#include "block/nvme.h"

#include "media/frontend.h"
#include "media/layout.h"
#include "media/media.h"
#include "media/ns-media.h"
#include "media/nvm-rules.h"
#include "nand/nand.h"
#include "nand/nand-config.h"
#include "sra/sra-config.h"
#include "ns-kind.h"
#include "sched/deadline-heap.h"
#include "stats/io-counters.h"
#include "stats/lateness.h"

#define TYPE_FEMU "femu"
OBJECT_DECLARE_SIMPLE_TYPE(FemuCtrl, FEMU)

#define FEMU_MAX_IO_QUEUES 128
#define FEMU_REG_SIZE 0x1000
#define FEMU_DB_STRIDE 4            /* CAP.DSTRD = 0 */
#define FEMU_MAX_AER_EVENTS 16
#define FEMU_MAX_AERL 15            /* aerl: at most 16 outstanding AERs */
#define FEMU_SGL_MAX_SEGMENTS 1024  /* bound on segment chains a guest can make us walk */
#define FEMU_LOG_MEDIA_STATS 0xca   /* vendor log page: model statistics as text */
#define FEMU_ERR_REC_DULBE (1u << 16)   /* Error Recovery feature: DULBE */

typedef struct FemuSQ FemuSQ;
typedef struct FemuCQ FemuCQ;

typedef enum FemuReqState {
    FEMU_REQ_FREE,
    FEMU_REQ_TIMED,     /* executed, completion waits for its deadline in the heap */
    FEMU_REQ_CQ_FULL,   /* deadline reached, waits for room in its CQ */
    FEMU_REQ_AER,       /* an Asynchronous Event Request held until an event */
    FEMU_REQ_RUNNING,   /* a long command: one bounded step per pass (femu_req_run) */
} FemuReqState;

/*
 * One step of a long command at now: at most *pages pages of work (what the pass has left
 * of FEMU_PASS_PAGES), less what it did. NVME_NO_COMPLETE while work is left, else its
 * status. *deadline only grows.
 */
typedef uint16_t FemuStepFn(FemuCtrl *n, FemuRequest *req, uint64_t now, uint64_t *pages,
                            uint64_t *deadline);

/*
 * What one pass of the device thread may do for long commands (a Deallocate of 256 whole
 * namespace ranges), in pages of the media model (4 KiB where it has none): on a 2-core
 * host 0.02 ms of mapping-table updates when the pages are unmapped, 0.3 ms when all are
 * mapped, so that no pass holds n->lock for long.
 */
#define FEMU_PASS_PAGES     16384

struct FemuRequest {
    FemuSQ *sq;
    NvmeCqe cqe;
    FemuReqState state;
    uint8_t opcode;
    uint32_t nsid;
    uint64_t slba;
    uint64_t arrival_ns;        /* when the device took it (its model time starts) */
    uint64_t deadline_ns;
    size_t heap_pos;
    FemuStepFn *step;           /* FEMU_REQ_RUNNING: its next step, with its state */
    void *step_state;           /* g_free'd when the command ends or is dropped */
    QTAILQ_ENTRY(FemuRequest) entry;    /* free, CQ wait, AER or running list */
};

struct FemuSQ {
    uint16_t sqid;
    uint16_t cqid;
    uint32_t size;
    uint32_t head;
    uint32_t tail;
    uint32_t db_seen;       /* the doorbell value last read, valid or not */
    uint64_t dma_addr;
    uint32_t nr_reqs;       /* size, plus room for held AERs on the admin SQ */
    FemuRequest *reqs;
    QTAILQ_HEAD(, FemuRequest) free_reqs;
    QTAILQ_ENTRY(FemuSQ) cq_link;
};

struct FemuCQ {
    uint16_t cqid;
    uint16_t vector;
    bool irq_enabled;
    bool irq_due;       /* completions posted since the last interrupt */
    uint8_t phase;
    uint32_t size;
    uint32_t head;
    uint32_t tail;
    uint32_t db_seen;       /* the doorbell value last read, valid or not */
    uint64_t dma_addr;
    QTAILQ_HEAD(, FemuRequest) waiting;
    QTAILQ_HEAD(, FemuSQ) sqs;
};

struct FemuNamespace {
    uint32_t nsid;
    const FemuNsKind *kind;
    uint8_t csi;                /* the kind's command set */
    uint64_t nlbas;
    uint8_t lba_shift;
    uint64_t backend_offset;
    uint64_t bytes;
    FemuNsMedia model;          /* its model, its place in it, the front end before it */
    void *priv;                 /* the kind's per-namespace state */
    IoCounters io;
    bool media_buffers;         /* its model holds written data the backend does not (plp) */
    bool dulbe;                 /* reads of unwritten blocks fail (Error Recovery feature) */
    uint16_t endgid;            /* its endurance group (0: none) */
    /* directive types (bit = DTYPE) its kind supports and has enabled, beyond Identify */
    uint8_t directives, directives_enabled;
    uint8_t uuid[16];
    uint8_t nguid[16];
    uint64_t eui64;
};

typedef struct FemuFeatures {
    uint32_t arbitration;
    uint32_t power_mgmt;
    uint16_t temp_over;
    uint16_t temp_under;
    uint32_t err_rec;
    uint32_t vwc;
    uint32_t int_coalescing;
    uint32_t *int_vector_config;
    uint32_t write_atomicity;
    uint32_t async_config;
    uint32_t iocs_profile;
} FemuFeatures;

struct FemuCtrl {
    PCIDevice parent_obj;
    MemoryRegion iomem;

    /* properties */
    char *serial;
    uint32_t femu_mode;
    uint32_t devsz_mb;
    uint32_t num_namespaces;
    uint32_t nr_io_queues;
    uint32_t max_q_ents;
    uint8_t mdts;
    uint8_t lba_index;          /* a kind's check_props may set it when it was not given */
    bool lba_index_given;
    uint8_t vwc;
    uint8_t aerl;
    uint8_t elpe;
    uint32_t poll_idle_us;
    char *dataplane;            /* property: "thread" (default) or "main-loop" */
    HostMemoryBackend *memdev;
    FemuFlashParams flash;      /* the NAND every media kind builds on */
    FemuFrontendConfig frontend_cfg;    /* pcie_gen, pcie_lanes, fw_cores, fw_cmd_ns */
    FemuFrontend *frontend;     /* NULL: commands cost no firmware or link time */
    uint64_t frontend_last_ns;  /* the previous media request's arrival (retiring) */
    FemuSraParams sra;          /* read-ahead, for the kinds that have it */

    /* storage */
    HostMemoryBackend *backend;
    uint8_t *data;
    uint64_t data_bytes;        /* namespaces' data; the kinds' metadata follows it */
    uint64_t meta_bytes;
    bool discard_failed;        /* the backend cannot give pages back: clear them instead */
    uint32_t zero_maps;         /* anonymous mappings put over a private file (backend.c) */
    bool journal_on;            /* the metadata ends with the write journal */
    struct FemuWriteJournal *journal;   /* there (backend.c), or NULL */
    bool backend_persists;      /* a shared file: what a killed QEMU wrote stays */
    FemuNamespace *ns;
    FemuMedia *medias[FEMU_MAX_NAMESPACES];     /* distinct models, one per namespace at most */
    uint32_t nr_medias;
    NandModel *shared_nand;     /* the flash of a mixed device, shared by its models */
    char *ns_types;             /* property: one kind name per namespace */
    char *ns_sizes_mb;          /* property: per-namespace capacity in MiB */
    const FemuNsKind *ns_kind[FEMU_MAX_NAMESPACES];
    FemuLayoutSizes sizes;      /* each namespace's data and its kind's metadata after it */

    /* registers: written by vCPUs under the lock, doorbells lock-free */
    NvmeBar bar;
    uint32_t *db_sq_tail;       /* last MMIO value per SQ doorbell */
    uint32_t *db_cq_head;
    uint32_t bad_doorbell;      /* pending AER info for a doorbell write to no queue */
    uint32_t kicks;             /* bumped by every register write the thread must see */

    QemuMutex lock;
    QemuThread thread;
    EventNotifier wake;
    bool thread_sleeping;
    bool thread_stop;
    bool vm_stopped;            /* guarded by lock; read under the BQL by raise_irqs */
    uint64_t resumed_ns;        /* when the VM last started running */
    VMChangeStateEntry *vmstate_entry;
    bool main_loop;             /* dataplane=main-loop: no thread, the pass runs in bh */
    QEMUBH *bh;
    QEMUTimer *timer;           /* QEMU_CLOCK_VIRTUAL: the next deadline or idle time */
    uint64_t idle_at;           /* when the media model gets idle time next */

    /* power loss: injected over QMP (power-cut) or at random (plp_fail_*) */
    bool power_lost;            /* guarded by lock; also read lock-free by MMIO */
    uint32_t fail_interval_ms;
    uint32_t fail_prob;         /* percent */
    uint32_t fail_seed;
    QEMUTimer *fail_timer;
    GRand *fail_rand;
    uint64_t power_cuts;
    /* x-crash-at=POINT[:N]: tests stop QEMU between two saves (femu_crash_point) */
    char *crash_at;
    char crash_point[32];
    uint32_t crash_countdown;

    /* controller state, guarded by lock */
    bool enabled;
    uint32_t page_size;
    uint8_t page_bits;
    FemuSQ **sq;
    FemuCQ **cq;
    DeadlineHeap timed;
    uint64_t dbbuf_dbs;         /* shadow doorbells, 0 when not configured */
    uint64_t dbbuf_eis;
    uint64_t last_io_ns;
    FemuFeatures features;
    NvmeIdCtrl id_ctrl;

    QTAILQ_HEAD(, FemuRequest) running;    /* long commands, oldest first */
    uint64_t pass_pages;        /* what this pass may still do for them (FEMU_PASS_PAGES) */
    uint64_t long_steps;        /* steps of long commands run, over all passes */
    uint64_t max_pass_ns;       /* the longest the device thread held the lock in one go */
    uint32_t lock_waiters;      /* others waiting for n->lock (femu_lock): the thread lets them in */

    QTAILQ_HEAD(, FemuRequest) aer_reqs;
    uint32_t outstanding_aers;
    NvmeAerResult aer_queue[FEMU_MAX_AER_EVENTS];
    uint32_t aer_queued;
    uint8_t aer_masked;         /* event types reported and not yet cleared by a log read */

    NvmeErrorLog *error_log;    /* ring of elpe + 1 entries */
    uint64_t error_count;
    uint8_t temperature_warning;

    int64_t power_on_ns;
    LatenessHist lateness;
    /* sum over I/O commands of the model's completion time minus arrival: what the device
       owes the host, whatever a busy host adds (lateness is that part) */
    uint64_t model_latency_ns;
    /* passes over the queues, and sleeps of the device thread: a thread that spins while
       idle makes passes by the million without sleeping */
    uint64_t dataplane_passes;
    uint64_t dataplane_sleeps;
    unsigned long *irq_pending; /* vectors to notify once the lock is dropped */
    bool intx_level;
};

/*
 * The controller's files call downwards only, in this order:
 *   ctrl.c (QOM, properties, registers) -> dataplane.c (the device thread)
 *   -> admin.c, io.c (command sets) -> queues.c (queues, completions, events)
 *   -> the kinds (through ns-kind.h) -> nvm.c (the NVM data path the kinds share)
 *   -> namespaces.c, dma.c, backend.c -> media models -> nand.
 */

/*
 * Test hook for the crash-ordering rules (see dataplane.c): with x-crash-at=POINT[:N],
 * the Nth pass through POINT kills QEMU as SIGKILL would: nothing after it is saved.
 * The points are listed in ctrl.c.
 */
void femu_crash_point(FemuCtrl *n, const char *point);

/* namespaces.c: namespaces and their timing models */
bool femu_ns_layout(FemuCtrl *n, Error **errp);
bool femu_ns_create(FemuCtrl *n, Error **errp);
void femu_ns_destroy(FemuCtrl *n);
void femu_ns_ctrl_reset(FemuCtrl *n);
/* Power events of a device whose namespaces are all of one kind (its power_* hooks). */
void femu_ns_power_loss(FemuCtrl *n);
void femu_ns_power_on(FemuCtrl *n);
/* A controller shutdown (CC.SHN): every model writes all its buffers out, protected or not. */
void femu_ns_shutdown(FemuCtrl *n, uint64_t now_ns);
/* A Flush of every namespace (the volatile write cache); when it completes. */
uint64_t femu_ns_flush_all(FemuCtrl *n, uint64_t now_ns);
FemuNamespace *femu_ns(FemuCtrl *n, uint32_t nsid);
const FemuNsKind *femu_csi_kind(FemuCtrl *n, uint8_t csi);
const FemuNsKind *femu_ctrl_kind(FemuCtrl *n);
uint64_t femu_ns_media_submit(FemuNamespace *ns, FemuMediaReq *r);
bool femu_media_wants_idle(FemuCtrl *n);
void femu_media_idle_all(FemuCtrl *n, uint64_t now_ns);
/* Every statistic of the controller and its models, named as in the vendor log. */
void femu_stats_emit(FemuCtrl *n, FemuMediaStatFn *emit, void *opaque);

/* queues.c: submission and completion queues, completions, asynchronous events */
/* Model time in ns: host time, or QEMU_CLOCK_VIRTUAL with dataplane=main-loop. */
uint64_t femu_now_ns(FemuCtrl *n);
FemuSQ *femu_sq_new(FemuCtrl *n, uint16_t sqid, uint16_t cqid, uint32_t size, uint64_t addr);
FemuCQ *femu_cq_new(FemuCtrl *n, uint16_t cqid, uint16_t vector, bool ien, uint32_t size,
                    uint64_t addr);
void femu_sq_free(FemuCtrl *n, uint16_t sqid, bool post_aborts);
void femu_cq_free(FemuCtrl *n, uint16_t cqid);
bool femu_sq_update_tail(FemuCtrl *n, FemuSQ *sq);
void femu_cq_update_head(FemuCtrl *n, FemuCQ *cq);
uint32_t femu_shadow_read(FemuCtrl *n, uint16_t qid, bool cq);
void femu_complete(FemuCtrl *n, FemuRequest *req, uint64_t deadline_ns);
void femu_post_due(FemuCtrl *n, FemuRequest *req, uint64_t now);
int femu_drain_cq_waiting(FemuCtrl *n, uint64_t now);
void femu_post_aer(FemuCtrl *n, uint8_t type, uint8_t info, uint8_t log_page);
void femu_aer_unmask(FemuCtrl *n, uint8_t type);
void femu_aer_hold(FemuCtrl *n, FemuRequest *req);
/*
 * A command too long for one pass: step runs now with what the pass has left and then once
 * a pass until it is done; its completion is posted at its deadline after the last step.
 * Returns what the command handler returns (NVME_NO_COMPLETE while steps are left).
 */
uint16_t femu_req_run(FemuCtrl *n, FemuRequest *req, FemuStepFn *step, void *state,
                      uint64_t now, uint64_t *deadline);
/* A long command's next step, with what this pass has left (n->pass_pages). */
uint16_t femu_req_step(FemuCtrl *n, FemuRequest *req, uint64_t now);
void femu_req_detach(FemuCtrl *n, FemuRequest *req);
void femu_drop_outstanding(FemuCtrl *n);
void femu_dbbuf_seed(FemuCtrl *n);

/* dataplane.c: the device thread, or the main loop's bottom half (dataplane=main-loop) */
void femu_dataplane_start(FemuCtrl *n);
void femu_dataplane_stop(FemuCtrl *n);
void femu_dataplane_kick(FemuCtrl *n);
void femu_dataplane_reset(FemuCtrl *n);

/* dma.c */
void femu_dma_setup(FemuCtrl *n);
bool femu_dma_in_ram(FemuCtrl *n, dma_addr_t addr, dma_addr_t len, bool to_guest);
uint16_t femu_dma_from_guest(FemuCtrl *n, dma_addr_t addr, void *buf, dma_addr_t len);
uint16_t femu_dma_to_guest(FemuCtrl *n, dma_addr_t addr, const void *buf, dma_addr_t len);
/*
 * The data pointer of a command whose host buffer is buf_len bytes, mapped for the first
 * len (<= buf_len) of them: the device may fill less than the host offered.
 */
uint16_t femu_map_dptr(FemuCtrl *n, const NvmeCmd *cmd, uint64_t buf_len, uint64_t len,
                       bool admin, bool to_guest, QEMUSGList *sg);
uint16_t femu_sg_to_guest(FemuCtrl *n, QEMUSGList *sg, uint64_t offset, const void *buf,
                          uint64_t len);
uint16_t femu_sg_from_guest(FemuCtrl *n, QEMUSGList *sg, void *buf, uint64_t len);
/* Maps and copies in one call. */
uint16_t femu_copy_dptr(FemuCtrl *n, const NvmeCmd *cmd, uint64_t buf_len, void *buf,
                        uint64_t len, bool admin, bool to_guest);

/* backend.c */
/* Storage for devsz_mb of data plus extra bytes of metadata after it. */
bool femu_backend_init(FemuCtrl *n, uint64_t extra, Error **errp);
void femu_backend_release(FemuCtrl *n);
/*
 * Zeroes a range: whole host pages given back (they cost no host memory, whatever the
 * backend), the edges cleared in place, through the journal when the backend persists.
 */
void femu_backend_zero(FemuCtrl *n, uint64_t offset, uint64_t len);
/* Whether what a killed QEMU wrote in the memdev stays (a shared memory-backend-file). */
bool femu_memdev_persists(HostMemoryBackend *be);
/*
 * A write's data from the guest into the backend at offset, one LBA (unit bytes) at a time
 * through the journal when the backend persists, so that a QEMU killed mid-copy leaves no
 * torn LBA: the start finishes the copy (femu_backend_replay).
 */
uint16_t femu_backend_write(FemuCtrl *n, QEMUSGList *sg, uint64_t offset, uint64_t len,
                            uint64_t unit);
/*
 * Bytes from host memory (a write buffer's, FemuWbData.put; opaque: the FemuCtrl) into the
 * backend at offset, through the journal as femu_backend_write.
 */
void femu_backend_put(void *opaque, uint64_t offset, const void *src, uint64_t len);
/* At start: an LBA copy the journal holds is finished. */
void femu_backend_replay(FemuCtrl *n);
/*
 * What the storage holds when the device starts (before any guest I/O): the first offset
 * in [offset, end) that may hold data, or end; and whether a range reads as zeroes. A file
 * backend's holes are skipped without reading them (SEEK_DATA); anonymous memory starts
 * zeroed.
 */
uint64_t femu_backend_next_data(FemuCtrl *n, uint64_t offset, uint64_t end);
bool femu_backend_is_zero(FemuCtrl *n, uint64_t offset, uint64_t len);

/* admin.c */
uint16_t femu_admin_cmd(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd);
void femu_init_id_ctrl(FemuCtrl *n);
void femu_record_error(FemuCtrl *n, FemuRequest *req);

/* io.c */
uint16_t femu_io_cmd(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd, uint64_t now_ns,
                     uint64_t *deadline_ns);

/* nvm.c: the NVM command set, for the kinds */
/* Every NVM I/O command (Read, Write, Compare, Write Zeroes, Dataset Management, Flush). */
uint16_t femu_nvm_io(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                     uint64_t now, uint64_t *deadline);
/* Read, Write and Compare (other command sets reuse it). */
uint16_t femu_nvm_rw(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                     uint64_t now, uint64_t *deadline);
/* What femu_nvm_rw checks before it moves data: MDTS, protection information, the range. */
uint16_t femu_nvm_rw_check(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd);
/* A Dataset Management command's ranges, read from the host (g_free *ranges). */
uint16_t femu_dsm_ranges(FemuCtrl *n, const NvmeCmd *cmd, NvmeDsmRange **ranges,
                         uint32_t *nr);
/* LBAs [slba, end) */
typedef struct FemuLbaRange {
    uint64_t slba, end;
} FemuLbaRange;
/*
 * The ranges' LBAs as few ranges as possible, in order (empty ones dropped, overlapping and
 * adjacent ones merged; a range past 2^64 ends there): how many, in out (room for nr).
 */
uint32_t femu_lba_ranges_merge(const NvmeDsmRange *in, uint32_t nr, FemuLbaRange *out);
/* The commands of femu_nvm_io in a Commands Supported and Effects log. */
void femu_nvm_effects(NvmeEffectsLog *log);

/*
 * n->lock for everyone but the device thread (vCPUs, QMP, the VM-stop handler): counted,
 * so that the thread lets them in before its next pass instead of taking it back at once.
 */
static inline void femu_lock(FemuCtrl *n)
{
    qatomic_inc(&n->lock_waiters);
    qemu_mutex_lock(&n->lock);
    qatomic_dec(&n->lock_waiters);
}

static inline void femu_unlock(FemuCtrl *n)
{
    qemu_mutex_unlock(&n->lock);
}

static inline uint16_t femu_status_dnr(uint16_t status)
{
    return status == NVME_SUCCESS ? status : (status | NVME_DNR);
}

#endif
