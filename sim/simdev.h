/*
 * femu-sim's device: the namespaces a SimParams describes, each on the same media model the
 * QEMU device builds for it (and the same front end), with the command handling a kind
 * needs beside its model (a zoned namespace's state machine, ...). Commands are submitted
 * in time order; each returns its completion time or the NVMe status that refused it.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_SIM_SIMDEV_H
#define FEMU_SIM_SIMDEV_H

#include <stdbool.h>
#include <stdint.h>

#include "devprops.h"
#include "workload.h"
#include "media/layout.h"
#include "media/media.h"
#include "media/ns-media.h"
#include "stats/io-counters.h"

typedef struct SimDevice SimDevice;
typedef struct SimNs SimNs;

/*
 * What a namespace kind does in femu-sim; the QEMU device's FemuNsKind's counterpart, its
 * hooks called at the same steps. Hooks reach the device's parameters and other namespaces
 * through d (sim_device_params, sim_device_ns).
 */
typedef struct SimKind {
    const char *name;           /* as in ns_types= */
    uint32_t femu_mode;
    bool read_ahead;            /* takes sra=on */
    bool one_media;             /* its namespaces share one model, in NSID order */
    /*
     * Optional: checks its properties (once, when a namespace of this kind exists). p is
     * the device's copy: a default that depends on the kind is settled there (lba_index).
     */
    bool (*check)(SimDevice *d, SimParams *p, char **err);
    /* Optional: as FemuNsKind.size_ns (every namespace's bytes are set, none rounded yet). */
    bool (*size_ns)(SimDevice *d, uint32_t nsid, uint64_t *bytes, bool derived,
                    uint64_t *meta_bytes, char **err);
    /* Optional: blocks per plane of shared flash (0 and *err: cannot share). */
    uint32_t (*flash_blocks)(SimDevice *d, uint64_t bytes, char **err);
    FemuMedia *(*media_new)(SimDevice *d, uint64_t bytes, NandModel *shared,
                            uint32_t first_block, char **err);
    /* Optional: per-namespace state (ns->priv), before the models (ns->media is NULL). */
    bool (*ns_init)(SimDevice *d, SimNs *ns, char **err);
    void (*ns_free)(SimNs *ns);
    /* Optional (NULL: the NVM command set): one I/O; 0 or an NVMe status. */
    uint16_t (*io)(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now, uint64_t *done);
    /* Optional: what a workload needs to know beyond size and LBA size (zones, handles). */
    void (*target)(SimNs *ns, SimTarget *t);
    /*
     * Optional: the kind's saved state at meta (its ns_meta bytes, where the QEMU device
     * keeps them in its backend): a blank one formatted, a saved one loaded, another
     * drive's refused (*err naming the property). data: the namespace's data area in the
     * file holds data (a blank state beside data is another drive's, as the device says).
     */
    bool (*attach_state)(SimDevice *d, SimNs *ns, uint8_t *meta, bool data, char **err);
    /* Optional: per-namespace statistics, beside the model's. */
    void (*stats)(SimNs *ns, FemuMediaStatFn *emit, void *opaque);
    /*
     * Optional: power is back after sim_device_power_cut, as FemuNsKind.power_on followed
     * by the controller reset's ctrl_reset; once per kind the device has, at now.
     */
    void (*power_on)(SimDevice *d, uint64_t now);
} SimKind;

struct SimNs {
    uint32_t nsid;
    const SimKind *kind;
    uint64_t bytes;
    uint32_t lba_bytes;
    uint64_t backend_offset;    /* where its data would start in the backend */
    FemuNsMedia model;          /* its model, its place in it, the front end before it */
    IoCounters io;
    bool media_buffers;         /* its model holds written data (plp): reads carry a buffer */
    void *priv;
};

/* The kinds femu-sim knows; NULL-terminated. */
extern const SimKind *const sim_kinds[];

SimDevice *sim_device_new(const SimParams *p, char **err);
void sim_device_free(SimDevice *d);

uint32_t sim_device_nr_ns(const SimDevice *d);
/* Namespace nsid (1-based) or NULL. */
SimNs *sim_device_ns(SimDevice *d, uint32_t nsid);
/* The parameters the device runs with: a copy of sim_device_new's, kind defaults settled. */
const SimParams *sim_device_params(const SimDevice *d);
/* Each namespace's data and metadata bytes, set before any kind sizes its own. */
const FemuLayoutSizes *sim_device_sizes(const SimDevice *d);
/* Whether every namespace is of kind k (the QEMU device's femu_ctrl_kind(n) == k). */
bool sim_device_all_of_kind(const SimDevice *d, const SimKind *k);
/* Memory the device frees with itself (g_free), e.g. a kind's model areas. */
void sim_device_own(SimDevice *d, void *mem);
/* The SimTarget of a namespace, for a workload. */
void sim_device_target(SimDevice *d, SimNs *ns, SimTarget *t);

/*
 * A command arrives at now (never earlier than the previous one). 0 and *done its
 * completion, or the NVMe status refusing it (sim_status_name names it).
 */
uint16_t sim_device_submit(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now,
                           uint64_t *done);
/*
 * Why a command of ns can complete at the instant it arrives, or NULL when none can (the
 * controller's time per command, fw_cores and fw_cmd_ns, is on every one). *every: no
 * command of ns takes any time (nossd without the controller's or the link's model).
 */
const char *sim_device_free_commands(const SimDevice *d, const SimNs *ns, bool *every);
/* io will be submitted soon: its model may fetch what it needs into the CPU cache. */
void sim_device_hint(SimDevice *d, SimNs *ns, const SimIo *io);
/* A command submitted earlier has completed at t (its *done): idle time is counted. */
void sim_device_complete(SimDevice *d, uint64_t t);
/* Time moves on to now: the models get the background time the QEMU device gives them. */
void sim_device_advance(SimDevice *d, uint64_t now);

/*
 * Keeps the drive's state in a backing file the QEMU device can boot from
 * (memory-backend-file): the data area first (left sparse: femu-sim keeps no data), then
 * each namespace's metadata in the device's layout, then room for its write journal. A
 * file with state is loaded (an aged drive goes on aging); a new or short file is
 * extended. Call before any command. *bytes: the file's length (the memdev's size).
 */
bool sim_device_attach_backing(SimDevice *d, const char *path, uint64_t *bytes, char **err);

/*
 * Power is cut at now and comes back at once, as the QEMU device's power cut and reset:
 * every model's power_loss (a PLP buffer flushes its region on the capacitors, read-ahead
 * is gone), then each kind's power_on (recovery). Commands outstanding at now still
 * complete when they were due (the engine cuts between commands).
 */
void sim_device_power_cut(SimDevice *d, uint64_t now);

/* The statistics under the names of the QEMU device's `stats` property. */
void sim_device_stats(SimDevice *d, FemuMediaStatFn *emit, void *opaque);

/*
 * The LBAs of an I/O: false when it has none or is not whole LBAs (no NVMe command says
 * that; femu-sim answers LBA Out of Range, as sim_nvm_io does).
 */
bool sim_io_lbas(const SimNs *ns, const SimIo *io, uint64_t *slba, uint64_t *nlb);
/* No NVMe read or write carries more LBAs (NLB is 16 bits, 0-based). */
#define SIM_MAX_NLB 65536
/* The largest read or write one command of ns may move (MDTS, NLB's 16 bits). */
uint64_t sim_device_max_transfer(const SimDevice *d, const SimNs *ns);
/*
 * The NVM command set's handling of an I/O, for kinds that build on it: the device's
 * rules (nvm-rules.h) for Read, Write, Compare, Write Zeroes, Deallocate (a trim) and Flush.
 */
uint16_t sim_nvm_io(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now, uint64_t *done);
/*
 * A media request of ns by the device's own code (femu_ns_media_submit_req, ns-media.h):
 * r->offset in the device's storage (backend offsets); model offset, namespace end and
 * placement (ns->model) filled in, the link crossed, the counters counted.
 */
uint64_t sim_ns_submit(SimDevice *d, SimNs *ns, FemuMediaReq *r);
/* The same for op on [offset, offset + len) of the namespace (bytes from its start). */
uint64_t sim_ns_media(SimDevice *d, SimNs *ns, FemuMediaOp op, uint64_t offset, uint64_t len,
                      uint64_t now);
const char *sim_status_name(uint16_t status);

/* NVMe status codes femu-sim answers with (Status Code Type in bits 8..10). */
#define SIM_SC_INVALID_OPCODE 0x01
#define SIM_SC_INVALID_FIELD 0x02
#define SIM_SC_CMD_SEQ_ERROR 0x0c
#define SIM_SC_LBA_RANGE 0x80
#define SIM_SC_UNWRITTEN 0x287
#define SIM_SC_ZONE_BOUNDARY 0x1b8
#define SIM_SC_ZONE_FULL 0x1b9
#define SIM_SC_ZONE_READ_ONLY 0x1ba
#define SIM_SC_ZONE_OFFLINE 0x1bb
#define SIM_SC_ZONE_INVALID_WRITE 0x1bc
#define SIM_SC_ZONE_TOO_MANY_ACTIVE 0x1bd
#define SIM_SC_ZONE_TOO_MANY_OPEN 0x1be
#define SIM_SC_ZONE_INVALID_TRANSITION 0x1bf
/* Open-Channel 2.0 (whitebox), media errors */
#define SIM_SC_OC_OFFLINE_CHUNK 0x2c0
#define SIM_SC_OC_INVALID_RESET 0x2c1
#define SIM_SC_OC_WRITE_NEXT_UNIT 0x2f0
#define SIM_SC_OC_CHUNK_EARLY_CLOSE 0x2f1
#define SIM_SC_OC_OUT_OF_ORDER_WRITE 0x2f2

#endif
