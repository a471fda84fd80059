/*
 * FEMU: an NVMe controller whose media timing comes from a QEMU-free model.
 *
 * Threading: MMIO handlers run in vCPU threads with the BQL held; one device thread per
 * controller ("dataplane") fetches commands, executes them, and posts completions when the
 * model's deadline is reached. FemuCtrl.lock guards all controller state. Lock order is
 * BQL -> FemuCtrl.lock; the device thread never takes the BQL while holding the lock
 * (interrupts are raised after it drops the lock), and it only touches guest RAM, never
 * MMIO, so DMA cannot need the BQL either.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_H
#define HW_FEMU_H

#include "qemu/osdep.h"
#include "qemu/queue.h"
#include "qemu/thread.h"
#include "qemu/event_notifier.h"
#include "hw/pci/pci_device.h"
#include "system/dma.h"
#include "system/hostmem.h"
#include "block/nvme.h"

#include "media/media.h"
#include "nand/nand.h"
#include "sched/deadline-heap.h"
#include "stats/io-counters.h"
#include "stats/lateness.h"

#define TYPE_FEMU "femu"
OBJECT_DECLARE_SIMPLE_TYPE(FemuCtrl, FEMU)

/* femu_mode values, as FEMU numbers them. */
enum {
    FEMU_MODE_WHITEBOX = 0,
    FEMU_MODE_BLACKBOX = 1,
    FEMU_MODE_NOSSD = 2,
    FEMU_MODE_ZNS = 3,
};

#define FEMU_MAX_IO_QUEUES 128
#define FEMU_MAX_NAMESPACES 64
#define FEMU_REG_SIZE 0x1000
#define FEMU_DB_STRIDE 4            /* CAP.DSTRD = 0 */
#define FEMU_MAX_AER_EVENTS 16
#define FEMU_SGL_MAX_SEGMENTS 1024
#define FEMU_LOG_MEDIA_STATS 0xca   /* vendor log page: model statistics as text */
#define FEMU_IDLE_NS 1000000        /* quiet this long, the media model may work in the background */
#define FEMU_IDLE_REPEAT_NS 100000000   /* and again this often while quiet */  /* bound on segment chains a guest can make us walk */

typedef struct FemuCtrl FemuCtrl;
typedef struct FemuSQ FemuSQ;
typedef struct FemuCQ FemuCQ;

typedef enum FemuReqState {
    FEMU_REQ_FREE,
    FEMU_REQ_TIMED,     /* executed, completion waits for its deadline in the heap */
    FEMU_REQ_CQ_FULL,   /* deadline reached, waits for room in its CQ */
    FEMU_REQ_AER,       /* an Asynchronous Event Request held until an event */
} FemuReqState;

typedef struct FemuRequest {
    FemuSQ *sq;
    NvmeCqe cqe;
    FemuReqState state;
    uint8_t opcode;
    uint32_t nsid;
    uint64_t slba;
    uint64_t deadline_ns;
    size_t heap_pos;
    QTAILQ_ENTRY(FemuRequest) entry;    /* free list, CQ wait list or AER list */
} FemuRequest;

struct FemuSQ {
    uint16_t sqid;
    uint16_t cqid;
    uint32_t size;
    uint32_t head;
    uint32_t tail;
    uint64_t dma_addr;
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
    uint64_t dma_addr;
    QTAILQ_HEAD(, FemuRequest) waiting;
    QTAILQ_HEAD(, FemuSQ) sqs;
};

typedef struct ZoneSet ZoneSet;

typedef struct FemuNamespace {
    uint32_t nsid;
    uint8_t csi;                /* NVME_CSI_NVM or NVME_CSI_ZONED */
    uint64_t nlbas;
    uint8_t lba_shift;
    uint64_t backend_offset;
    uint32_t type;              /* FEMU_MODE_NOSSD, _BLACKBOX or _ZNS */
    uint64_t bytes;
    FemuMedia *media;           /* the model that times this namespace */
    uint64_t media_base;        /* subtracted from backend offsets to address the model */
    ZoneSet *zones;             /* zoned namespaces only */
    uint8_t *zone_meta;         /* where the zone state persists, in the backend */
    IoCounters io;
    uint8_t uuid[16];
    uint8_t nguid[16];
    uint64_t eui64;
} FemuNamespace;

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

/* blackbox properties; -1 means "derive / use the flash type's default" */
typedef struct FemuBbParams {
    uint32_t secsz;
    uint32_t secs_per_pg;
    uint32_t pgs_per_blk;
    uint32_t blks_per_pl;       /* 0: derived from devsz_mb and op_pcent */
    uint32_t pls_per_lun;
    uint32_t luns_per_ch;
    uint32_t nchs;
    uint8_t flash_type;         /* bits per cell: 1 SLC .. 4 QLC */
    int64_t pg_rd_lat;          /* ns, every page type */
    int64_t pg_wr_lat;
    int64_t blk_er_lat;
    int64_t ch_xfer_lat;        /* ns per page; -1: from ch_mts and ch_width */
    char *pg_rd_lats;           /* "lower,upper,extra,..." ns per page type */
    char *pg_wr_lats;
    uint32_t ch_mts;
    uint32_t ch_width;
    uint32_t gc_thres_pcent;
    uint32_t gc_thres_pcent_high;
    int32_t op_pcent;           /* -1: 7 unless blks_per_pl is given */
    uint32_t time_scale;
} FemuBbParams;

/* zns properties (femu_mode=3); FEMU's names where they exist */
typedef struct FemuZnsParams {
    uint32_t zone_size_mb;
    uint64_t zone_cap;          /* bytes; 0: the zone size */
    uint32_t max_open;          /* 0: no limit */
    uint32_t max_active;
    uint32_t zd_ext_size;       /* bytes, a multiple of 64 */
    bool cross_zone_read;
    uint8_t zasl;               /* zone append limit, 4 KiB << zasl; 0: mdts */
    uint32_t num_ch;
    uint32_t num_lun;
    uint32_t num_plane;
    uint32_t num_blk;           /* 0: just enough for the zones */
    uint8_t flash_type;
    int64_t pg_rd_lat;
    int64_t pg_wr_lat;
    int64_t blk_er_lat;
    uint32_t stripe;            /* chips per zone; 0: all */
    uint32_t wbuf_kb;           /* per-zone write buffer; 0: two program units */
    uint32_t wbuf_zones;        /* zones holding a buffer at once; 0: max_open or 8 */
} FemuZnsParams;

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
    uint8_t lba_index;
    uint8_t vwc;
    uint8_t aerl;
    uint8_t elpe;
    uint32_t poll_idle_us;
    HostMemoryBackend *memdev;
    FemuBbParams bb;
    FemuZnsParams zns;

    /* storage */
    HostMemoryBackend *backend;
    uint8_t *data;
    uint64_t data_bytes;        /* namespaces' data; metadata (zone state) follows it */
    uint64_t meta_bytes;
    FemuNamespace *ns;
    FemuMedia *medias[FEMU_MAX_NAMESPACES];     /* distinct models, one per namespace at most */
    uint32_t nr_medias;
    NandModel *shared_nand;     /* the flash of a mixed device, shared by its models */
    char *ns_types;             /* property: per-namespace mode, "blackbox,zns" */
    char *ns_sizes_mb;          /* property: per-namespace capacity in MiB */
    uint32_t ns_type[FEMU_MAX_NAMESPACES];
    uint64_t ns_bytes[FEMU_MAX_NAMESPACES];
    uint64_t ns_meta[FEMU_MAX_NAMESPACES];  /* zone state bytes after the data */

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
    unsigned long *irq_pending; /* vectors to notify once the lock is dropped */
    bool intx_level;
};

/* femu.c */
void femu_ctrl_reset_locked(FemuCtrl *n);

/* dataplane.c */
void femu_dataplane_start(FemuCtrl *n);
void femu_dataplane_stop(FemuCtrl *n);
void femu_dataplane_kick(FemuCtrl *n);
bool femu_media_wants_idle(FemuCtrl *n);
void femu_complete(FemuCtrl *n, FemuRequest *req, uint64_t deadline_ns);
void femu_post_aer(FemuCtrl *n, uint8_t type, uint8_t info, uint8_t log_page);
void femu_aer_unmask(FemuCtrl *n, uint8_t type);
void femu_aer_hold(FemuCtrl *n, FemuRequest *req);
void femu_cq_free(FemuCtrl *n, uint16_t cqid);
void femu_sq_free(FemuCtrl *n, uint16_t sqid, bool post_aborts);
FemuSQ *femu_sq_new(FemuCtrl *n, uint16_t sqid, uint16_t cqid, uint32_t size, uint64_t addr);
FemuCQ *femu_cq_new(FemuCtrl *n, uint16_t cqid, uint16_t vector, bool ien, uint32_t size,
                    uint64_t addr);
uint64_t femu_now_ns(void);

/* dma.c */
bool femu_dma_in_ram(FemuCtrl *n, dma_addr_t addr, dma_addr_t len, bool to_guest);
uint16_t femu_dma_from_guest(FemuCtrl *n, dma_addr_t addr, void *buf, dma_addr_t len);
uint16_t femu_dma_to_guest(FemuCtrl *n, dma_addr_t addr, const void *buf, dma_addr_t len);
uint16_t femu_map_dptr(FemuCtrl *n, const NvmeCmd *cmd, uint64_t len, bool admin,
                       bool to_guest, QEMUSGList *sg);
uint16_t femu_sg_to_guest(FemuCtrl *n, QEMUSGList *sg, const void *buf, uint64_t len);
uint16_t femu_sg_from_guest(FemuCtrl *n, QEMUSGList *sg, void *buf, uint64_t len);
uint16_t femu_copy_dptr(FemuCtrl *n, const NvmeCmd *cmd, void *buf, uint64_t len, bool admin,
                        bool to_guest);

/* backend.c */
/* Storage for devsz_mb of data plus extra bytes of metadata after it. */
bool femu_backend_init(FemuCtrl *n, uint64_t extra, Error **errp);
void femu_backend_release(FemuCtrl *n);
void femu_backend_zero(FemuCtrl *n, uint64_t offset, uint64_t len);

/* blackbox.c */
NandGeometry femu_flash_geometry(FemuCtrl *n, uint32_t blks_per_pl);
uint32_t femu_blackbox_blocks(FemuCtrl *n, uint64_t bytes, Error **errp);
FemuMedia *femu_blackbox_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                             uint32_t first_block, Error **errp);
bool femu_fill_timing(uint8_t flash_type, int64_t rd, int64_t wr, int64_t er,
                      const FemuBbParams *bus, NandTiming *t, Error **errp);

/* zns.c */
uint64_t femu_zns_meta_bytes(FemuCtrl *n, uint64_t nr_zones);
bool femu_zns_init_ns(FemuCtrl *n, FemuNamespace *ns, uint64_t data_bytes, uint8_t *meta,
                      Error **errp);
void femu_zns_free_ns(FemuNamespace *ns);
void femu_zns_ctrl_reset(FemuNamespace *ns);
uint64_t femu_zns_zasl_bytes(FemuCtrl *n);
uint16_t femu_zns_io(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                     uint64_t now, uint64_t *deadline);
void femu_zns_fill_id_ns(FemuCtrl *n, FemuNamespace *ns, NvmeIdNsZoned *id);
uint32_t femu_zns_blocks(FemuCtrl *n, uint64_t bytes, Error **errp);
FemuMedia *femu_zns_media_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                              uint32_t first_block, Error **errp);

/* nvme-admin.c */
uint16_t femu_admin_cmd(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd);
bool femu_has_zoned(FemuCtrl *n);
char *femu_media_prefix(FemuCtrl *n, uint32_t i);
void femu_init_id_ctrl(FemuCtrl *n);
void femu_record_error(FemuCtrl *n, FemuRequest *req);

/* femu.c */
uint64_t femu_ns_media_submit(FemuNamespace *ns, FemuMediaReq *r);

/* nvme-io.c */
uint16_t femu_io_cmd(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd, uint64_t now_ns,
                     uint64_t *deadline_ns);
FemuNamespace *femu_ns(FemuCtrl *n, uint32_t nsid);
/* Read, Write and Compare of the NVM command set (zoned reads reuse it). */
uint16_t femu_nvm_rw(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                     uint64_t now, uint64_t *deadline);

static inline uint16_t femu_status_dnr(uint16_t status)
{
    return status == NVME_SUCCESS ? status : (status | NVME_DNR);
}

#endif
