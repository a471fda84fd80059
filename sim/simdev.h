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
#include "stats/io-counters.h"

typedef struct SimDevice SimDevice;
typedef struct SimNs SimNs;

/* What a namespace kind does in femu-sim; the QEMU device's FemuNsKind's counterpart. */
typedef struct SimKind {
    const char *name;           /* as in ns_types= */
    uint32_t femu_mode;
    bool read_ahead;            /* takes sra=on */
    bool one_media;             /* its namespaces share one model, in NSID order */
    /* Optional: checks its properties (once, when a namespace of this kind exists). */
    bool (*check)(const SimParams *p, char **err);
    /* Optional: as FemuNsKind.size_ns. */
    bool (*size_ns)(const SimParams *p, uint32_t nsid, uint64_t *bytes, bool derived,
                    uint64_t *meta_bytes, char **err);
    /* Optional: blocks per plane of shared flash (0 and *err: cannot share). */
    uint32_t (*flash_blocks)(const SimParams *p, uint64_t bytes, char **err);
    FemuMedia *(*media_new)(const SimParams *p, uint64_t bytes, NandModel *shared,
                            uint32_t first_block, char **err);
    /* Optional: per-namespace state (ns->priv), after every model exists. */
    bool (*ns_init)(SimDevice *d, SimNs *ns, char **err);
    void (*ns_free)(SimNs *ns);
    /* Optional (NULL: the NVM command set): one I/O; 0 or an NVMe status. */
    uint16_t (*io)(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now, uint64_t *done);
    /* Optional: what a workload needs to know beyond size and LBA size (zones, handles). */
    void (*target)(SimNs *ns, SimTarget *t);
    /* Optional: per-namespace statistics, beside the model's. */
    void (*stats)(SimNs *ns, FemuMediaStatFn *emit, void *opaque);
} SimKind;

struct SimNs {
    uint32_t nsid;
    const SimKind *kind;
    uint64_t bytes;
    uint32_t lba_bytes;
    uint64_t backend_offset;    /* where its data would start in the backend */
    uint64_t media_base;        /* what its model's offsets are relative to */
    FemuMedia *media;
    IoCounters io;
    void *priv;
};

/* The kinds femu-sim knows; NULL-terminated. */
extern const SimKind *const sim_kinds[];

SimDevice *sim_device_new(const SimParams *p, char **err);
void sim_device_free(SimDevice *d);

uint32_t sim_device_nr_ns(const SimDevice *d);
/* Namespace nsid (1-based) or NULL. */
SimNs *sim_device_ns(SimDevice *d, uint32_t nsid);
const SimParams *sim_device_params(const SimDevice *d);
/* The SimTarget of a namespace, for a workload. */
void sim_device_target(SimDevice *d, SimNs *ns, SimTarget *t);

/*
 * A command arrives at now (never earlier than the previous one). 0 and *done its
 * completion, or the NVMe status refusing it (sim_status_name names it).
 */
uint16_t sim_device_submit(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now,
                           uint64_t *done);
/* A command submitted earlier has completed at t (its *done): idle time is counted. */
void sim_device_complete(SimDevice *d, uint64_t t);
/* Time moves on to now: the models get the background time the QEMU device gives them. */
void sim_device_advance(SimDevice *d, uint64_t now);

/* The statistics under the names of the QEMU device's `stats` property. */
void sim_device_stats(SimDevice *d, FemuMediaStatFn *emit, void *opaque);

/* The NVM command set's handling of an I/O, for kinds that build on it. */
uint16_t sim_nvm_io(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now, uint64_t *done);
/* A media request for ns (offset: bytes in the namespace), with the link and counters. */
uint64_t sim_ns_media(SimDevice *d, SimNs *ns, FemuMediaOp op, uint64_t offset, uint64_t len,
                      uint32_t plid, uint64_t now);
const char *sim_status_name(uint16_t status);

/* NVMe status codes femu-sim answers with (Status Code Type in bits 8..10). */
#define SIM_SC_INVALID_OPCODE 0x01
#define SIM_SC_INVALID_FIELD 0x02
#define SIM_SC_LBA_RANGE 0x80
#define SIM_SC_ZONE_BOUNDARY 0x1b8
#define SIM_SC_ZONE_FULL 0x1b9
#define SIM_SC_ZONE_READ_ONLY 0x1ba
#define SIM_SC_ZONE_OFFLINE 0x1bb
#define SIM_SC_ZONE_INVALID_WRITE 0x1bc
#define SIM_SC_ZONE_TOO_MANY_ACTIVE 0x1bd
#define SIM_SC_ZONE_TOO_MANY_OPEN 0x1be
#define SIM_SC_ZONE_INVALID_TRANSITION 0x1bf

#endif
