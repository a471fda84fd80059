/*
 * femu-sim's workloads: a subset of fio job files, and traces (blkparse text, CSV) to replay.
 * A job file becomes jobs; each job clone (numjobs) gets a generator that hands the engine
 * its next I/O. The engine (sim.c) owns time, queue depth and the device; the generator
 * owns what to issue and not before when (thinktime, trace timestamps).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_SIM_WORKLOAD_H
#define FEMU_SIM_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#define SIM_NO_PLID UINT32_MAX
#define SIM_MAX_PERCENTILES 32
/*
 * The virtual time femu-sim runs to, 2^55 ns (416 days and 23 h): every time of a job file
 * (runtime, thinktime, ...) is at most this, so a sum of a few never wraps, and the engine
 * stops a run that would go past it (its latency sums are exact below it: figures.h).
 */
#define SIM_MAX_TIME_NS (1ull << 55)

typedef enum SimOp {
    SIM_OP_READ,
    SIM_OP_WRITE,
    SIM_OP_TRIM,
    SIM_OP_FLUSH,
    SIM_OP_ZONE_RESET,      /* offset: the zone's start; len: the zone size */
    SIM_OP_ZONE_FINISH,
    SIM_OP_POWER_CUT,       /* traces only: power is cut and comes back (no command) */
    SIM_OP_WRITE_ZEROES,    /* traces only */
    SIM_OP_COMPARE,         /* traces only: times as a read (femu-sim keeps no data) */
} SimOp;

typedef struct SimIo {
    SimOp op;
    uint64_t offset;        /* bytes from the namespace's start, a multiple of lba_bytes */
    uint64_t len;           /* bytes (0 for flush) */
    uint32_t plid;          /* FDP placement id of a write, or SIM_NO_PLID */
    uint64_t not_before_ns; /* issue no earlier (thinktime, trace time); 0: at once */
    bool fua;               /* a write with Force Unit Access: done once it is on flash */
} SimIo;

/* What a generator needs to know of the namespace it runs on. */
typedef struct SimTarget {
    uint64_t ns_bytes;
    uint32_t lba_bytes;
    uint64_t zone_bytes;        /* 0: not zoned */
    uint64_t zone_cap_bytes;    /* writable bytes of each zone (<= zone_bytes) */
    uint32_t max_open_zones;    /* 0: no limit */
    uint32_t nr_plids;          /* FDP placement ids the namespace has (0: not FDP) */
    /* zoned: bytes already written in zone z when the generator starts (NULL: none) */
    uint64_t (*zone_written)(void *opaque, uint64_t zone);
    void *opaque;
} SimTarget;

typedef struct SimJob {
    char *name;
    uint32_t nsid;              /* from filename=/dev/nvme0nN (1 otherwise) */
    uint32_t iodepth;           /* 1.. */
    uint32_t numjobs;           /* clones, each with its own generator */
    bool stonewall;             /* waits for every job before it to end */
    uint64_t runtime_ns;        /* 0: none; with time_based the job runs this long */
    bool time_based;
    uint64_t ramp_ns;           /* ramp_time: not counted in the results */
    uint64_t startdelay_ns;     /* startdelay: the engine starts the job's clones this late */
    uint64_t log_avg_ns;        /* time-series interval (log_avg_msec; 0: engine's default) */
    uint32_t nr_percentiles;
    double percentiles[SIM_MAX_PERCENTILES];    /* percentile_list, or fio's default list */
    char *read_iolog;           /* a trace to replay instead of generated I/O, or NULL */
    bool replay_no_stall;       /* trace: ignore its timestamps, issue as fast as QD allows */
    void *priv;                 /* the parser's own option values, for the generator */
} SimJob;

typedef struct SimJobFile {
    uint32_t nr_jobs;
    SimJob *jobs;               /* in file order; numjobs not expanded */
} SimJobFile;

/*
 * Parses a fio job file ([global] and job sections, `include` not supported). Unknown or
 * unsupported options are refused, naming the file, line and option; host-only options
 * (ioengine, direct, ...) are accepted and ignored. NULL and *err (g_free) on error.
 */
SimJobFile *sim_jobfile_load(const char *path, char **err);
SimJobFile *sim_jobfile_parse(const char *text, const char *file_name, char **err);
void sim_jobfile_free(SimJobFile *f);

typedef struct SimGen SimGen;

/*
 * The I/O of clone `clone` (0..numjobs-1) of job on target; NULL and *err when the job
 * does not fit the target (size beyond the namespace, zonemode=zbd on a namespace that is
 * not zoned, a placement id it does not have, a trace that cannot be read, ...).
 */
SimGen *sim_gen_new(const SimJob *job, uint32_t clone, const SimTarget *t, char **err);
/*
 * The next I/O at now_ns; false when the job has done its work (size or io_size done, the
 * trace ended). runtime is the engine's: it stops asking.
 */
bool sim_gen_next(SimGen *g, uint64_t now_ns, SimIo *io);
/*
 * Whether the next I/O may be asked for early (before the engine issues it) with the same
 * answer: not when it depends on the time (thinktime, a trace) or on shared zone state.
 */
bool sim_gen_can_look_ahead(const SimGen *g);
/* Whether the job's own times may hold its I/O back (thinktime, a trace's timestamps). */
bool sim_gen_waits(const SimGen *g);
void sim_gen_free(SimGen *g);

#endif
