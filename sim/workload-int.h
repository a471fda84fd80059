/*
 * What the job-file parser (jobfile.c) hands the generators (gen.c) through SimJob.priv:
 * the option values that only the generator needs, as parsed (percentages unresolved,
 * nothing checked against a namespace yet).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_SIM_WORKLOAD_INT_H
#define FEMU_SIM_WORKLOAD_INT_H

#include "workload.h"

enum { SIM_DDIR_READ, SIM_DDIR_WRITE, SIM_DDIR_TRIM, SIM_DDIRS };

#define SIM_BSSPLIT_MAX 64      /* fio's limit per direction */
#define SIM_PLIDS_MAX 16        /* fio's FIO_MAX_DP_IDS */

typedef enum SimDist {
    SIM_DIST_RANDOM,
    SIM_DIST_ZIPF,
    SIM_DIST_PARETO,
} SimDist;

typedef struct SimBsSplit {
    uint64_t bs;
    double perc;                /* 0..100; the entries of one direction add up to 100 */
} SimBsSplit;

/* A byte count, or a percentage of the namespace (resolved by the generator). */
typedef struct SimAmount {
    uint64_t bytes;
    uint32_t pct;               /* 0: bytes; else 1..100 */
    bool is_pct;
} SimAmount;

typedef struct SimJobOpts {
    bool ddir[SIM_DDIRS];       /* the directions rw= issues */
    bool random;
    uint32_t rwmixread;
    uint64_t bs[SIM_DDIRS];
    uint32_t nr_split[SIM_DDIRS];
    SimBsSplit split[SIM_DDIRS][SIM_BSSPLIT_MAX];
    bool size_set, io_size_set;
    SimAmount size;
    uint64_t io_size;
    SimAmount offset, offset_increment;
    bool norandommap;
    SimDist dist;
    double dist_param;          /* zipf theta or pareto h */
    uint64_t thinktime_ns;
    uint32_t thinktime_blocks;
    bool zbd;
    uint32_t max_open_zones;    /* 0: the target's */
    bool fdp;
    bool plid_random;           /* fdp_pli_select=random (else round robin) */
    uint32_t nr_plids;          /* 0: every placement id of the namespace (at most 16) */
    uint16_t plids[SIM_PLIDS_MAX];
    uint32_t fsync_every;
    bool end_fsync;
    uint64_t randseed;
    uint32_t kb_base;
} SimJobOpts;

/* trace.c: a trace file, checked once, then streamed record by record. */
typedef struct SimTrace SimTrace;

typedef struct SimTraceRec {
    SimOp op;
    bool preflush;              /* blkparse RWBS 'F' before a data op: flush, then the op */
    bool fua;                   /* a write with Force Unit Access */
    bool append;                /* a zone append (offset: its zone's start), until placed */
    uint64_t offset, len;       /* fitted to the namespace: LBA-aligned, zone ops' zone */
    uint64_t t_ns;              /* the trace's own time */
} SimTraceRec;

SimTrace *sim_trace_open(const char *path, const SimTarget *t, char **err);
/* The next record; false at the end of the trace. */
bool sim_trace_next(SimTrace *tr, SimTraceRec *rec);
void sim_trace_rewind(SimTrace *tr);
/* The time of the trace's first I/O (of the events replayed). */
uint64_t sim_trace_first_ns(const SimTrace *tr);
void sim_trace_free(SimTrace *tr);

#endif
