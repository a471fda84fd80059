/*
 * femu-sim: the emulator's QEMU-free SSD models driven in virtual time by fio job files and
 * traces. The device is described with the -device femu properties (devprops.c), built as
 * the QEMU device builds it (simdev.c); jobs (workload.h) issue I/O at their queue depth,
 * and each command completes when the model says, without waiting for it.
 *
 *   femu-sim --dev "k=v,..." [--dev-file F] [--output-format=normal|json] JOBFILE...
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "devprops.h"
#include "figures.h"
#include "simdev.h"
#include "workload.h"
#include "sched/deadline-heap.h"
#include "stats/lateness.h"

#define SIM_VERSION "femu-sim-0.1"
#define NS_PER_S 1000000000ULL
#define DEFAULT_SERIES_STATS "waf_milli,host_pages_written,nand_pages_written,gc_pages_moved"
#define NR_DIRS 3               /* read, write, trim: fio's three */
#define SIM_LOOK_AHEAD 8        /* I/Os a job asks for ahead (look_ahead) */
/* a time_based job's steps at one instant before it is taken as stuck: 16 deepest queues */
#define SIM_STILL_STEPS (1u << 20)
/* the points of a job's time series at most: per second for 12 days */
#define SIM_SERIES_MAX (1u << 20)

static const char *const dir_names[NR_DIRS] = { "read", "write", "trim" };

typedef struct DirStats {
    uint64_t bytes;
    SimLatStats lat;
    LatenessHist hist;
} DirStats;

/* One interval of a job's time series. */
typedef struct SeriesPoint {
    uint64_t ios[NR_DIRS], bytes[NR_DIRS];
    SimSum lat_sum[NR_DIRS];
} SeriesPoint;

typedef struct Worker Worker;

/* A command in flight, or a worker's wake-up (op < 0). */
typedef struct Slot {
    Worker *w;
    int op;                     /* SimOp, or -1 for a wake-up */
    uint64_t len;
    uint64_t submit_ns;
    uint32_t cmds;              /* device commands it took (a split transfer: several) */
} Slot;

struct Worker {
    const SimJob *job;
    uint32_t clone;
    uint32_t group;
    SimNs *ns;
    SimGen *gen;
    Slot *slots;                /* iodepth */
    Slot **free_slots;          /* a stack of the slots not in flight */
    uint32_t nfree;
    Slot wake;
    bool wake_queued;
    uint32_t inflight;
    bool gen_done, stopped;
    bool has_pending;
    SimIo pending;
    SimIo ahead[SIM_LOOK_AHEAD];    /* the I/Os after pending, asked for early (a ring) */
    uint32_t ahead_head, ahead_n;
    uint64_t start_ns, counted_from_ns, end_ns, last_done_ns;
    DirStats dir[NR_DIRS];
    uint16_t error;
    SimOp error_op;
    GArray *series;             /* SeriesPoint per interval */
    uint64_t interval_ns;
    GArray *stat_series;        /* per interval: the sampled device statistics (uint64) */
    GString *end_stats;         /* the device's statistics when the job ended, as JSON */
    uint64_t still_ns, still_steps;     /* its last step's time, and its steps at that time */
    char *fault;                /* why the run cannot go on (it stops there) */
};

typedef struct Options {
    const char *format;
    const char *output;
    const char *backing;        /* the drive's state, for the emulator to boot from */
    GString *dev_text;          /* every property given, for the boot line */
    char **series_stats;        /* device statistics sampled into the series */
    bool no_look_ahead;         /* each I/O asked for when issued (results are the same) */
} Options;

static Options opts = { .format = "normal" };

static void dir_record(DirStats *s, uint64_t bytes, uint64_t lat)
{
    s->bytes += bytes;
    sim_lat_record(&s->lat, lat);
    lateness_record(&s->hist, lat);
}

static int dir_of(int op)
{
    return op == SIM_OP_READ ? 0 : op == SIM_OP_WRITE ? 1 : op == SIM_OP_TRIM ? 2 : -1;
}

typedef struct StatLookup {
    char **names;
    uint64_t *values;
} StatLookup;

static void stat_lookup(void *opaque, const char *name, uint64_t value)
{
    StatLookup *l = opaque;

    for (uint32_t i = 0; l->names[i]; i++) {
        if (!strcmp(l->names[i], name)) {
            l->values[i] = value;
        }
    }
}

static uint32_t nr_series_stats(void)
{
    return opts.series_stats ? g_strv_length(opts.series_stats) : 0;
}

static void series_point(Worker *w, SimDevice *d, uint64_t idx)
{
    SeriesPoint zero = { 0 };
    uint32_t n = nr_series_stats();

    while (w->series->len <= idx) {
        g_array_append_val(w->series, zero);
        if (n) {
            g_autofree uint64_t *values = g_new0(uint64_t, n);
            StatLookup l = { opts.series_stats, values };
            sim_device_stats(d, stat_lookup, &l);
            g_array_append_vals(w->stat_series, values, n);
        }
    }
}

/*
 * Virtual time must move: a time_based job ends only when it reaches its runtime, so one
 * whose commands take no time would run forever at one instant. Its steps (completions,
 * power cuts) at one instant are counted; SIM_STILL_STEPS of them are far more than any
 * queue completes at once, so the run stops there, saying why.
 */
static void still_step(SimDevice *d, Worker *w, uint64_t now)
{
    g_autofree char *fix = NULL;
    const char *why;
    bool every;

    if (now != w->still_ns || !w->still_steps) {
        w->still_ns = now;
        w->still_steps = 1;
        return;
    }
    if (++w->still_steps < SIM_STILL_STEPS || !w->job->time_based || w->fault) {
        return;
    }
    why = sim_device_free_commands(d, w->ns, &every);
    fix = why ? g_strdup_printf("%s. Set fw_cores=1,fw_cmd_ns=N (the controller's time per "
                                "command), or end the job by size or io_size instead of "
                                "time_based", why)
              : g_strdup("its trace's power cuts take no time, and nothing between them "
                         "does. Give its records times that move, or drop time_based");
    w->fault = g_strdup_printf("job '%s': virtual time stands still at %.9f s (%u "
                               "completions or power cuts in a row at that instant), so "
                               "time_based would never reach runtime=%gs: %s",
                               w->job->name, now / 1e9, SIM_STILL_STEPS,
                               w->job->runtime_ns / 1e9, fix);
}

/*
 * A series longer than SIM_SERIES_MAX (a long job, a long gap in a trace) would take memory
 * and output in proportion to virtual time: its interval doubles instead, each pair of
 * points adding up into one (with the device's statistics sampled for the first).
 */
static void series_coarsen(Worker *w)
{
    uint32_t n = nr_series_stats(), len = w->series->len, half = (len + 1) / 2;

    for (uint32_t i = 0; i < half; i++) {
        SeriesPoint p = g_array_index(w->series, SeriesPoint, 2 * i);

        if (2 * i + 1 < len) {
            const SeriesPoint *b = &g_array_index(w->series, SeriesPoint, 2 * i + 1);
            for (int dir = 0; dir < NR_DIRS; dir++) {
                p.ios[dir] += b->ios[dir];
                p.bytes[dir] += b->bytes[dir];
                p.lat_sum[dir] += b->lat_sum[dir];
            }
        }
        g_array_index(w->series, SeriesPoint, i) = p;
        memmove(&g_array_index(w->stat_series, uint64_t, i * n),
                &g_array_index(w->stat_series, uint64_t, 2 * i * n), n * sizeof(uint64_t));
    }
    g_array_set_size(w->series, half);
    g_array_set_size(w->stat_series, half * n);
    w->interval_ns *= 2;
}

static void complete(SimDevice *d, Slot *s, uint64_t now)
{
    Worker *w = s->w;
    int dir = dir_of(s->op);

    /* a split transfer's commands are outstanding until its last one completes */
    for (uint32_t i = 0; i < s->cmds; i++) {
        sim_device_complete(d, now);
    }
    w->inflight--;
    w->free_slots[w->nfree++] = s;
    w->last_done_ns = MAX(w->last_done_ns, now);
    still_step(d, w, now);
    if (dir < 0 || s->submit_ns < w->counted_from_ns) {
        return;
    }
    dir_record(&w->dir[dir], s->len, now - s->submit_ns);
    if (w->interval_ns) {
        uint64_t idx = (now - w->counted_from_ns) / w->interval_ns;
        SeriesPoint *p;

        while (idx >= SIM_SERIES_MAX) {
            series_coarsen(w);
            idx = (now - w->counted_from_ns) / w->interval_ns;
        }
        series_point(w, d, idx);
        p = &g_array_index(w->series, SeriesPoint, idx);
        p->ios[dir]++;
        p->bytes[dir] += s->len;
        p->lat_sum[dir] += now - s->submit_ns;
    }
}

/*
 * One I/O as the host's block layer sends it: a read or write longer than the drive's
 * largest transfer (MDTS) goes as several commands at once, done when the last is. 0 or
 * the status that refused one; *cmds: the commands submitted.
 */
static uint16_t submit_split(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now,
                             uint64_t *done, uint32_t *cmds)
{
    uint64_t max = sim_device_max_transfer(d, ns), t;
    SimIo part = *io;
    uint16_t status;

    *cmds = 0;
    *done = now;
    if ((io->op != SIM_OP_READ && io->op != SIM_OP_WRITE) || io->len <= max) {
        max = io->len ? io->len : 1;
    }
    for (uint64_t off = 0; off < io->len || !*cmds; off += max) {
        part.offset = io->offset + off;
        part.len = io->len ? MIN(max, io->len - off) : 0;
        status = sim_device_submit(d, ns, &part, now, &t);
        ++*cmds;
        if (status) {
            return status;
        }
        *done = MAX(*done, t);
    }
    return 0;
}

/*
 * The job's next SIM_LOOK_AHEAD I/Os now, where that gives the same ones: the model fetches
 * its tables for each while the others run (a random write's mapping entries miss the CPU
 * caches). More than one: a job often issues again at once (completions come in bursts, a
 * multi-page program's), and an I/O asked for just before it goes would gain nothing.
 */
static void look_ahead(SimDevice *d, Worker *w, uint64_t now)
{
    if (opts.no_look_ahead || !sim_gen_can_look_ahead(w->gen)) {
        return;
    }
    while (!w->gen_done && w->ahead_n < SIM_LOOK_AHEAD) {
        SimIo *io = &w->ahead[(w->ahead_head + w->ahead_n) % SIM_LOOK_AHEAD];

        if (!sim_gen_next(w->gen, now, io)) {
            w->gen_done = true;
            break;
        }
        w->ahead_n++;
        sim_device_hint(d, w->ns, io);
    }
}

/* Issue what the worker may at now: up to its depth, not before its I/O's time. */
static void issue(SimDevice *d, DeadlineHeap *h, Worker *w, uint64_t now)
{
    while (!w->stopped && !w->error && !w->fault && w->inflight < w->job->iodepth) {
        uint64_t done;
        Slot *s;

        if (w->end_ns && now >= w->end_ns) {
            w->stopped = true;
            break;
        }
        if (!w->has_pending && w->ahead_n) {
            w->pending = w->ahead[w->ahead_head];
            w->ahead_head = (w->ahead_head + 1) % SIM_LOOK_AHEAD;
            w->ahead_n--;
            w->has_pending = true;
        }
        if (!w->has_pending) {
            if (w->gen_done || !sim_gen_next(w->gen, now, &w->pending)) {
                w->gen_done = w->stopped = true;
                break;
            }
            w->has_pending = true;
        }
        if (MAX(w->pending.not_before_ns, w->start_ns) > now) {
            if (!w->wake_queued) {
                w->wake_queued = true;
                deadline_heap_push(h, MAX(w->pending.not_before_ns, w->start_ns), &w->wake,
                                   NULL);
            }
            break;
        }
        if (now > SIM_MAX_TIME_NS) {
            w->fault = g_strdup_printf("job '%s': its next I/O is past 2^55 ns (416 days) "
                                       "of virtual time, where femu-sim's time ends",
                                       w->job->name);
            break;
        }
        /* a trace's power cut: once the job's I/O before it is done; no command */
        if (w->pending.op == SIM_OP_POWER_CUT) {
            if (w->inflight) {
                break;
            }
            sim_device_power_cut(d, now);
            w->has_pending = false;
            still_step(d, w, now);
            continue;
        }
        /* as fio: a zone is reset or finished once the job's I/O before it is done */
        if ((w->pending.op == SIM_OP_ZONE_RESET || w->pending.op == SIM_OP_ZONE_FINISH) &&
            w->inflight) {
            break;
        }
        s = w->free_slots[--w->nfree];      /* inflight < iodepth: one is free */
        *s = (Slot){ .w = w, .op = w->pending.op, .len = w->pending.len, .submit_ns = now };
        w->error = submit_split(d, w->ns, &w->pending, now, &done, &s->cmds);
        if (w->error) {
            w->error_op = w->pending.op;
            while (s->cmds--) {
                sim_device_complete(d, now);
            }
            w->free_slots[w->nfree++] = s;
            break;
        }
        w->has_pending = false;
        w->inflight++;
        deadline_heap_push(h, done, s, NULL);
        look_ahead(d, w, now);
    }
}

static bool start_worker(SimDevice *d, Worker *w, uint64_t now, char **err)
{
    SimTarget t;
    const SimJob *j = w->job;

    w->ns = sim_device_ns(d, j->nsid);
    if (!w->ns) {
        *err = g_strdup_printf("job '%s': namespace %u does not exist (the drive has %u)",
                               j->name, j->nsid, sim_device_nr_ns(d));
        return false;
    }
    /* fio drops time_based without a runtime (with a warning); here it would never end */
    if (j->time_based && !j->runtime_ns) {
        *err = g_strdup_printf("job '%s': time_based needs a runtime (set runtime=, or drop "
                               "time_based to end when size or io_size is done)", j->name);
        return false;
    }
    sim_device_target(d, w->ns, &t);
    w->gen = sim_gen_new(j, w->clone, &t, err);    /* its messages name the job */
    if (!w->gen) {
        return false;
    }
    /* (a job whose own times move, thinktime or a trace's, may: the engine watches it) */
    if (j->time_based && !sim_gen_waits(w->gen)) {
        bool every;
        const char *why = sim_device_free_commands(d, w->ns, &every);

        if (every) {
            *err = g_strdup_printf("job '%s': time_based on a drive whose commands take no "
                                   "time would never reach runtime=%gs: %s. Set fw_cores=1,"
                                   "fw_cmd_ns=N (the controller's time per command) or "
                                   "pcie_gen=N (the link's), or end the job by size or "
                                   "io_size instead", j->name, j->runtime_ns / 1e9, why);
            return false;
        }
    }
    w->slots = g_new0(Slot, j->iodepth);
    w->free_slots = g_new(Slot *, j->iodepth);
    for (uint32_t i = 0; i < j->iodepth; i++) {
        w->free_slots[i] = &w->slots[j->iodepth - 1 - i];     /* slot 0 on top */
    }
    w->nfree = j->iodepth;
    w->wake = (Slot){ .w = w, .op = -1 };
    w->start_ns = now + j->startdelay_ns;
    w->counted_from_ns = w->start_ns + j->ramp_ns;
    w->end_ns = j->runtime_ns ? w->counted_from_ns + j->runtime_ns : 0;
    w->last_done_ns = w->start_ns;
    w->interval_ns = j->log_avg_ns ? j->log_avg_ns : NS_PER_S;
    w->series = g_array_new(false, true, sizeof(SeriesPoint));
    w->stat_series = g_array_new(false, true, sizeof(uint64_t));
    return true;
}

typedef struct JsonStats {
    GString *o;
    bool first;
} JsonStats;

static void json_stat(void *opaque, const char *name, uint64_t value)
{
    JsonStats *j = opaque;

    g_string_append_printf(j->o, "%s\"%s\": %" PRIu64, j->first ? "" : ", ", name, value);
    j->first = false;
}

/* A job that has ended keeps the device's statistics of that moment. */
static void check_ended(SimDevice *d, Worker *w)
{
    if ((w->stopped || w->error) && !w->inflight && !w->end_stats) {
        JsonStats js = { g_string_new(NULL), true };
        sim_device_stats(d, json_stat, &js);
        w->end_stats = js.o;
    }
}

/*
 * Runs workers [first, last) together from *now until all have ended (*now: then); false
 * and *err when one cannot go on (Worker.fault).
 */
static bool run_group(SimDevice *d, GPtrArray *ws, uint32_t first, uint32_t last,
                      uint64_t *now, char **err)
{
    DeadlineHeap h;
    Worker *w;

    deadline_heap_init(&h);
    for (uint32_t i = first; i < last; i++) {
        w = g_ptr_array_index(ws, i);
        issue(d, &h, w, *now);
        check_ended(d, w);
        if (w->fault) {
            goto fault;
        }
    }
    while (!deadline_heap_empty(&h)) {
        uint64_t t = deadline_heap_min(&h);
        Slot *s = deadline_heap_pop_due(&h, t);

        w = s->w;
        *now = MAX(*now, t);
        if (s->op < 0) {
            w->wake_queued = false;
        } else {
            complete(d, s, t);
        }
        issue(d, &h, w, t);         /* (none after a fault) */
        check_ended(d, w);
        if (w->fault) {
            goto fault;
        }
    }
    deadline_heap_destroy(&h);
    return true;
fault:
    *err = g_steal_pointer(&w->fault);
    deadline_heap_destroy(&h);
    return false;
}

/* ---- output ---- */

/* text as a JSON string's contents (names and property values: ASCII in practice) */
static char *json_escape(const char *text)
{
    GString *s = g_string_new(NULL);

    for (const char *c = text; *c; c++) {
        if (*c == '"' || *c == '\\') {
            g_string_append_printf(s, "\\%c", *c);
        } else if ((unsigned char)*c < 0x20) {
            g_string_append_printf(s, "\\u%04x", (unsigned char)*c);
        } else {
            g_string_append_c(s, *c);
        }
    }
    return g_string_free(s, false);
}

static void json_dir(GString *o, const Worker *w, int dir, uint64_t runtime_ns)
{
    const DirStats *s = &w->dir[dir];
    uint64_t ios = s->lat.n;
    GString *pct = g_string_new(NULL);

    for (uint32_t i = 0; i < w->job->nr_percentiles; i++) {
        double q = w->job->percentiles[i];
        g_string_append_printf(pct, "%s\"%.6f\": %" PRIu64, i ? ", " : "", q,
                               ios ? lateness_quantile(&s->hist, q / 100) : 0);
    }
    g_autofree char *lat = g_strdup_printf(
        "{\"min\": %" PRIu64 ", \"max\": %" PRIu64 ", \"mean\": %.3f, \"stddev\": %.3f, "
        "\"N\": %" PRIu64 ", \"percentile\": {%s}}",
        s->lat.min, s->lat.max, sim_lat_mean(&s->lat), sim_lat_stddev(&s->lat), ios,
        pct->str);
    g_string_append_printf(o,
        "      \"%s\": {\"io_bytes\": %" PRIu64 ", \"io_kbytes\": %" PRIu64 ", "
        "\"bw_bytes\": %.0f, \"bw\": %.0f, \"iops\": %.15g, \"runtime\": %" PRIu64 ", "
        "\"total_ios\": %" PRIu64 ",\n        \"slat_ns\": {\"min\": 0, \"max\": 0, "
        "\"mean\": 0, \"stddev\": 0, \"N\": 0},\n        \"clat_ns\": %s,\n"
        "        \"lat_ns\": %s}",
        dir_names[dir], s->bytes, s->bytes / 1024, sim_per_second(s->bytes, runtime_ns),
        sim_per_second(s->bytes, runtime_ns) / 1024, sim_per_second(ios, runtime_ns),
        runtime_ns / 1000000, ios, lat, lat);
    g_string_free(pct, true);
}

static void json_series(GString *o, const Worker *w)
{
    uint32_t n = nr_series_stats(), len = w->series->len;

    g_string_append_printf(o, "      \"series\": {\"interval_ns\": %" PRIu64 ", \"t_ns\": [",
                           w->interval_ns);
    for (uint32_t i = 0; i < len; i++) {
        g_string_append_printf(o, "%s%" PRIu64, i ? ", " : "", (i + 1) * w->interval_ns);
    }
    g_string_append(o, "]");
    for (int dir = 0; dir < NR_DIRS; dir++) {
        const char *what[] = { "iops", "bw_bytes", "lat_mean_ns" };
        for (int k = 0; k < 3; k++) {
            g_string_append_printf(o, ",\n        \"%s_%s\": [", dir_names[dir], what[k]);
            for (uint32_t i = 0; i < len; i++) {
                const SeriesPoint *p = &g_array_index(w->series, SeriesPoint, i);
                double v = k == 0 ? sim_per_second(p->ios[dir], w->interval_ns) :
                           k == 1 ? sim_per_second(p->bytes[dir], w->interval_ns) :
                           sim_mean(p->lat_sum[dir], p->ios[dir]);
                g_string_append_printf(o, "%s%.15g", i ? ", " : "", v);
            }
            g_string_append(o, "]");
        }
    }
    for (uint32_t k = 0; k < n; k++) {
        g_string_append_printf(o, ",\n        \"%s\": [", opts.series_stats[k]);
        for (uint32_t i = 0; i < len; i++) {
            g_string_append_printf(o, "%s%" PRIu64, i ? ", " : "",
                                   g_array_index(w->stat_series, uint64_t, i * n + k));
        }
        g_string_append(o, "]");
    }
    g_string_append(o, "}");
}

static uint64_t worker_runtime(const Worker *w)
{
    return w->last_done_ns > w->counted_from_ns ? w->last_done_ns - w->counted_from_ns : 0;
}

static void json_job(GString *o, const Worker *w, bool last)
{
    uint64_t runtime = worker_runtime(w);
    g_autofree char *name = json_escape(w->job->name);

    g_string_append_printf(o,
        "    {\n      \"jobname\": \"%s\", \"groupid\": %u, \"job_index\": %u, "
        "\"nsid\": %u, \"error\": %u, \"error_text\": \"%s\",\n"
        "      \"job_start_ns\": %" PRIu64 ", \"job_runtime\": %" PRIu64 ", "
        "\"elapsed_ns\": %" PRIu64 ",\n",
        name, w->group, w->clone, w->job->nsid, w->error,
        w->error ? sim_status_name(w->error) : "", w->start_ns, runtime / 1000000, runtime);
    for (int dir = 0; dir < NR_DIRS; dir++) {
        json_dir(o, w, dir, runtime);
        g_string_append(o, ",\n");
    }
    json_series(o, w);
    g_string_append_printf(o, ",\n      \"stats\": {%s}\n    }",
                           w->end_stats ? w->end_stats->str : "");
    if (!last) {
        g_string_append(o, ",");
    }
    g_string_append(o, "\n");
}

static void text_job(GString *o, const Worker *w)
{
    uint64_t runtime = worker_runtime(w);

    g_string_append_printf(o, "%s: (groupid=%u, jobs=1): err=%3u: nsid=%u, virtual runtime "
                           "%.3f s\n", w->job->name, w->group, w->error, w->job->nsid,
                           runtime / 1e9);
    if (w->error) {
        g_string_append_printf(o, "  error: %s on a %s\n", sim_status_name(w->error),
                               w->error_op == SIM_OP_READ ? "read" :
                               w->error_op == SIM_OP_WRITE ? "write" : "command");
    }
    for (int dir = 0; dir < NR_DIRS; dir++) {
        const DirStats *s = &w->dir[dir];
        double bw = sim_per_second(s->bytes, runtime);

        if (!s->lat.n) {
            continue;
        }
        g_string_append_printf(o, "  %5s: IOPS=%.1f, BW=%.2f MiB/s (%.2f MB/s)(%.1f MiB)\n",
                               dir_names[dir], sim_per_second(s->lat.n, runtime),
                               bw / 1048576, bw / 1e6, s->bytes / 1048576.0);
        g_string_append_printf(o, "    lat (usec): min=%.2f, max=%.2f, avg=%.2f\n",
                               s->lat.min / 1e3, s->lat.max / 1e3,
                               sim_lat_mean(&s->lat) / 1e3);
        g_string_append(o, "    lat percentiles (usec):");
        for (uint32_t i = 0; i < w->job->nr_percentiles; i++) {
            g_string_append_printf(o, "%s %.2fth=%.1f", i % 6 ? "," : "\n     |",
                                   w->job->percentiles[i],
                                   lateness_quantile(&s->hist, w->job->percentiles[i] / 100)
                                   / 1e3);
        }
        g_string_append(o, "\n");
    }
}

static void text_stat(void *opaque, const char *name, uint64_t value)
{
    g_string_append_printf(opaque, "  %s=%" PRIu64 "\n", name, value);
}

/* ---- main ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: femu-sim --dev \"k=v,...\" [--dev-file FILE] [--output-format=normal|json]\n"
        "                [--output FILE] [--series-stats=a,b] JOBFILE...\n"
        "  --dev           the drive, with the properties of -device femu (repeatable)\n"
        "  --dev-file      the same from a file (k=v per line or comma-separated)\n"
        "  --output-format normal (default) or json (fio-like, with the model's statistics)\n"
        "  --output        write the results there instead of to standard output\n"
        "  --series-stats  device statistics to sample into each job's time series\n"
        "                  (default: waf_milli,host_pages_written,nand_pages_written,\n"
        "                  gc_pages_moved, where the model has them)\n"
        "  --backing FILE  keep the drive's state (FTL, zones, chunks, FDP) in FILE, a\n"
        "                  backing file the emulator boots from (memory-backend-file);\n"
        "                  a FILE with state is loaded and goes on aging\n"
        "  --no-look-ahead ask a job for each I/O only when it is issued (the results\n"
        "                  are the same; slower: the model's tables are not fetched ahead)\n"
        "  --help-dev      the properties and their defaults\n"
        "JOBFILE: a fio job file (supported options: docs/femu-sim.md).\n");
}

int main(int argc, char **argv)
{
    g_autofree char *err = NULL;
    g_autofree char *series = NULL;
    g_autoptr(GPtrArray) jobfiles = g_ptr_array_new_with_free_func(
        (GDestroyNotify)sim_jobfile_free);
    g_autoptr(GPtrArray) workers = g_ptr_array_new();
    SimParams *p = sim_params_new();
    SimDevice *d = NULL;
    GString *o = g_string_new(NULL);
    uint64_t now = 0;
    uint32_t group = 0, group_first = 0;
    uint64_t backing_bytes = 0;
    int rc = 0;

    opts.dev_text = g_string_new(NULL);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--help-dev")) {
            g_autofree char *all = sim_params_describe(p);
            fputs(all, stdout);
            sim_params_free(p);
            return 0;
        } else if ((!strcmp(a, "--dev") && v) || g_str_has_prefix(a, "--dev=")) {
            const char *text = a[5] == '=' ? a + 6 : v;
            if (!sim_params_parse(p, text, &err)) {
                goto fail;
            }
            g_string_append_printf(opts.dev_text, "%s%s", opts.dev_text->len ? "," : "",
                                   text);
            i += text == v;
        } else if (!strcmp(a, "--dev-file") && v) {
            if (!sim_params_load(p, v, &err)) {
                goto fail;
            }
            g_string_append_printf(opts.dev_text, "%s<the properties of %s>",
                                   opts.dev_text->len ? "," : "", v);
            i++;
        } else if (g_str_has_prefix(a, "--backing=")) {
            opts.backing = a + 10;
        } else if (!strcmp(a, "--backing") && v) {
            opts.backing = v;
            i++;
        } else if (g_str_has_prefix(a, "--output-format=")) {
            opts.format = a + 16;
        } else if (!strcmp(a, "--output-format") && v) {
            opts.format = v;
            i++;
        } else if (g_str_has_prefix(a, "--output=")) {
            opts.output = a + 9;
        } else if (!strcmp(a, "--output") && v) {
            opts.output = v;
            i++;
        } else if (g_str_has_prefix(a, "--series-stats=")) {
            series = g_strdup(a + 15);
        } else if (!strcmp(a, "--no-look-ahead")) {
            opts.no_look_ahead = true;
        } else if (a[0] == '-' && a[1]) {
            err = g_strdup_printf("unknown option '%s'", a);
            usage(stderr);
            goto fail;
        } else {
            SimJobFile *jf = sim_jobfile_load(a, &err);
            if (!jf) {
                goto fail;
            }
            g_ptr_array_add(jobfiles, jf);
        }
    }
    if (strcmp(opts.format, "normal") && strcmp(opts.format, "json")) {
        err = g_strdup_printf("--output-format=%s: allowed normal, json", opts.format);
        goto fail;
    }
    if (!jobfiles->len) {
        usage(stderr);
        err = g_strdup("no job file given");
        goto fail;
    }
    if (!sim_params_finish(p, &err) || !(d = sim_device_new(p, &err)) ||
        (opts.backing && !sim_device_attach_backing(d, opts.backing, &backing_bytes, &err))) {
        goto fail;
    }
    opts.series_stats = g_strsplit(series ? series : DEFAULT_SERIES_STATS, ",", -1);

    /* every job clone, in file order; a stonewall starts a new group */
    for (guint f = 0; f < jobfiles->len; f++) {
        const SimJobFile *jf = g_ptr_array_index(jobfiles, f);
        for (uint32_t j = 0; j < jf->nr_jobs; j++) {
            const SimJob *job = &jf->jobs[j];
            if (job->stonewall && workers->len > group_first) {
                if (!run_group(d, workers, group_first, workers->len, &now, &err)) {
                    goto fail;
                }
                group++;
                group_first = workers->len;
            }
            for (uint32_t c = 0; c < job->numjobs; c++) {
                Worker *w = g_new0(Worker, 1);
                *w = (Worker){ .job = job, .clone = c, .group = group };
                g_ptr_array_add(workers, w);
                if (!start_worker(d, w, now, &err)) {
                    goto fail;
                }
            }
        }
    }
    if (!run_group(d, workers, group_first, workers->len, &now, &err)) {
        goto fail;
    }

    if (!strcmp(opts.format, "json")) {
        JsonStats js = { o, true };
        g_autofree char *desc = sim_params_describe(sim_device_params(d));
        g_auto(GStrv) lines = g_strsplit(desc, "\n", -1);

        g_string_append_printf(o, "{\n  \"femu-sim version\": \"%s\",\n  \"device\": {",
                               SIM_VERSION);
        for (guint i = 0; lines[i] && *lines[i]; i++) {
            char *eq = strchr(lines[i], '=');
            *eq = 0;
            g_autofree char *value = json_escape(eq + 1);
            g_string_append_printf(o, "%s\"%s\": \"%s\"", i ? ", " : "", lines[i], value);
        }
        g_string_append_printf(o, "},\n  \"end_ns\": %" PRIu64 ",\n  \"jobs\": [\n", now);
        for (guint i = 0; i < workers->len; i++) {
            json_job(o, g_ptr_array_index(workers, i), i + 1 == workers->len);
        }
        g_string_append(o, "  ],\n  \"stats\": {");
        sim_device_stats(d, json_stat, &js);
        g_string_append(o, "}\n}\n");
    } else {
        for (guint i = 0; i < workers->len; i++) {
            text_job(o, g_ptr_array_index(workers, i));
        }
        g_string_append_printf(o, "\nDevice statistics at %.3f s of virtual time:\n", now / 1e9);
        sim_device_stats(d, text_stat, o);
    }
    for (guint i = 0; i < workers->len; i++) {
        rc |= ((Worker *)g_ptr_array_index(workers, i))->error != 0;
    }
    if (opts.output) {
        g_autoptr(GError) gerr = NULL;
        if (!g_file_set_contents(opts.output, o->str, o->len, &gerr)) {
            err = g_strdup_printf("--output %s: %s", opts.output, gerr->message);
            goto fail;
        }
    } else {
        fputs(o->str, stdout);
    }
    if (opts.backing) {
        fprintf(stderr, "femu-sim: the drive's state is in %s; boot it with\n"
                "  -object memory-backend-file,id=femu-mem,mem-path=%s,size=%" PRIu64 "M,"
                "share=on -device femu,%s,memdev=femu-mem\n", opts.backing, opts.backing,
                backing_bytes >> 20, opts.dev_text->str);
    }
    goto out;
fail:
    fprintf(stderr, "femu-sim: %s\n", err);
    rc = 2;
out:
    for (guint i = 0; i < workers->len; i++) {
        Worker *w = g_ptr_array_index(workers, i);
        sim_gen_free(w->gen);
        g_free(w->slots);
        g_free(w->free_slots);
        if (w->series) {
            g_array_free(w->series, true);
            g_array_free(w->stat_series, true);
        }
        if (w->end_stats) {
            g_string_free(w->end_stats, true);
        }
        g_free(w->fault);
        g_free(w);
    }
    g_strfreev(opts.series_stats);
    g_string_free(opts.dev_text, true);
    g_string_free(o, true);
    sim_device_free(d);
    sim_params_free(p);
    return rc;
}
