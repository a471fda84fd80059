/*
 * femu-sim's workloads (sim/jobfile.c, sim/gen.c): the fio job-file subset, its refusals,
 * and the I/O the generators hand out: sequential and random coverage, mixes, block-size
 * splits, zipf/pareto skew, zonemode=zbd write pointers and resets, FDP placement ids,
 * thinktime and fsync, blkparse and CSV trace replay, determinism.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "workload.h"
#include "workload-int.h"

#define KiB 1024ull
#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)

static char *tmpdir;

/* ---- helpers ---- */

static SimJobFile *parse_ok(const char *text)
{
    char *err = NULL;
    SimJobFile *f = sim_jobfile_parse(text, "t.fio", &err);

    if (!f) {
        g_test_message("unexpected error: %s", err);
    }
    g_assert_null(err);
    g_assert_nonnull(f);
    return f;
}

static void parse_fails(const char *text, const char *expect)
{
    char *err = NULL;
    SimJobFile *f = sim_jobfile_parse(text, "t.fio", &err);

    g_assert_null(f);
    g_assert_nonnull(err);
    if (!strstr(err, expect)) {
        g_test_message("error '%s' lacks '%s'", err, expect);
        g_assert_not_reached();
    }
    g_free(err);
}

static const SimJobOpts *opts(const SimJobFile *f, uint32_t i)
{
    return f->jobs[i].priv;
}

static SimTarget plain_target(uint64_t ns_bytes)
{
    return (SimTarget){ .ns_bytes = ns_bytes, .lba_bytes = 4096 };
}

static SimGen *gen_ok(const SimJobFile *f, uint32_t job, uint32_t clone, const SimTarget *t)
{
    char *err = (char *)"not reset";     /* sim_gen_new sets it, whatever it held */
    SimGen *g = sim_gen_new(&f->jobs[job], clone, t, &err);

    if (!g) {
        g_test_message("unexpected error: %s", err);
    }
    g_assert_null(err);
    g_assert_nonnull(g);
    return g;
}

static void gen_fails(const char *text, const SimTarget *t, const char *expect)
{
    SimJobFile *f = parse_ok(text);
    char *err = NULL;
    SimGen *g = sim_gen_new(&f->jobs[0], 0, t, &err);

    g_assert_null(g);
    g_assert_nonnull(err);
    if (!strstr(err, expect)) {
        g_test_message("error '%s' lacks '%s'", err, expect);
        g_assert_not_reached();
    }
    g_free(err);
    sim_jobfile_free(f);
}

static char *write_tmp(const char *name, const char *text)
{
    char *path = g_build_filename(tmpdir, name, NULL);

    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* ---- parsing ---- */

static void test_parse_sections(void)
{
    SimJobFile *f = parse_ok(
        "; a comment\n"
        "# another\n"
        "[global]\n"
        "  rw = randwrite   ; trailing comment\n"
        "bs=8k\n"
        "iodepth=16 # also a comment\n"
        "ioengine=io_uring\n"
        "direct=1\n"
        "group_reporting\n"
        "\n"
        "[first]\n"
        "numjobs=4\n"
        "time_based\n"
        "norandommap\n"
        "stonewall\n"
        "[second]\n"
        "rw=read\n"
        "iodepth=2\n"
        "[global]\n"
        "bs=16k\n"
        "[third]\n"
        "name=renamed\n"
        "description=whatever, it is not parsed\n");

    g_assert_cmpuint(f->nr_jobs, ==, 3);
    g_assert_cmpstr(f->jobs[0].name, ==, "first");
    g_assert_cmpuint(f->jobs[0].iodepth, ==, 16);
    g_assert_cmpuint(f->jobs[0].numjobs, ==, 4);
    g_assert_true(f->jobs[0].time_based);
    g_assert_true(f->jobs[0].stonewall);
    g_assert_true(opts(f, 0)->norandommap);
    g_assert_true(opts(f, 0)->random);
    g_assert_true(opts(f, 0)->ddir[SIM_DDIR_WRITE]);
    g_assert_false(opts(f, 0)->ddir[SIM_DDIR_READ]);
    g_assert_cmpuint(opts(f, 0)->bs[SIM_DDIR_WRITE], ==, 8 * KiB);
    g_assert_cmpuint(f->jobs[0].nsid, ==, 1);

    g_assert_cmpstr(f->jobs[1].name, ==, "second");
    g_assert_cmpuint(f->jobs[1].iodepth, ==, 2);
    g_assert_cmpuint(f->jobs[1].numjobs, ==, 1);
    g_assert_false(f->jobs[1].time_based);
    g_assert_false(f->jobs[1].stonewall);
    g_assert_false(opts(f, 1)->random);
    g_assert_true(opts(f, 1)->ddir[SIM_DDIR_READ]);
    g_assert_cmpuint(opts(f, 1)->bs[SIM_DDIR_READ], ==, 8 * KiB);

    /* the second [global] reaches only the jobs after it */
    g_assert_cmpstr(f->jobs[2].name, ==, "renamed");
    g_assert_cmpuint(opts(f, 2)->bs[SIM_DDIR_READ], ==, 16 * KiB);
    g_assert_true(opts(f, 2)->random);
    g_assert_cmpuint(f->jobs[2].iodepth, ==, 16);
    sim_jobfile_free(f);
}

static void test_parse_defaults(void)
{
    SimJobFile *f = parse_ok("[j]\n");
    const SimJob *j = &f->jobs[0];
    const SimJobOpts *o = opts(f, 0);
    static const double fio_default[] = {
        1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99,
    };

    g_assert_cmpuint(j->iodepth, ==, 1);
    g_assert_cmpuint(j->numjobs, ==, 1);
    g_assert_cmpuint(j->nsid, ==, 1);
    g_assert_cmpuint(j->runtime_ns, ==, 0);
    g_assert_null(j->read_iolog);
    g_assert_cmpuint(j->nr_percentiles, ==, G_N_ELEMENTS(fio_default));
    for (guint i = 0; i < G_N_ELEMENTS(fio_default); i++) {
        g_assert_cmpfloat(j->percentiles[i], ==, fio_default[i]);
    }
    g_assert_true(o->ddir[SIM_DDIR_READ] && !o->ddir[SIM_DDIR_WRITE] && !o->random);
    g_assert_cmpuint(o->rwmixread, ==, 50);
    g_assert_cmpuint(o->bs[0], ==, 4096);
    g_assert_cmpuint(o->bs[1], ==, 4096);
    g_assert_cmpuint(o->bs[2], ==, 4096);
    g_assert_false(o->size_set);
    g_assert_cmpuint(o->thinktime_blocks, ==, 1);
    g_assert_false(o->zbd || o->fdp);
    sim_jobfile_free(f);
}

static void test_parse_rw(void)
{
    static const struct {
        const char *v;
        bool r, w, t, random;
    } cases[] = {
        { "read", 1, 0, 0, 0 }, { "write", 0, 1, 0, 0 }, { "randread", 1, 0, 0, 1 },
        { "randwrite", 0, 1, 0, 1 }, { "rw", 1, 1, 0, 0 }, { "readwrite", 1, 1, 0, 0 },
        { "randrw", 1, 1, 0, 1 }, { "trim", 0, 0, 1, 0 }, { "randtrim", 0, 0, 1, 1 },
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        for (int alias = 0; alias < 2; alias++) {
            char *text = g_strdup_printf("[j]\n%s=%s\n", alias ? "readwrite" : "rw",
                                         cases[i].v);
            SimJobFile *f = parse_ok(text);
            const SimJobOpts *o = opts(f, 0);

            g_assert_cmpint(o->ddir[SIM_DDIR_READ], ==, cases[i].r);
            g_assert_cmpint(o->ddir[SIM_DDIR_WRITE], ==, cases[i].w);
            g_assert_cmpint(o->ddir[SIM_DDIR_TRIM], ==, cases[i].t);
            g_assert_cmpint(o->random, ==, cases[i].random);
            sim_jobfile_free(f);
            g_free(text);
        }
    }
    parse_fails("[j]\nrw=randread:8\n", "t.fio:2: option 'rw': the ':N' offset modifier");
    parse_fails("[j]\nrw=trimwrite\n", "t.fio:2: option 'rw': bad value 'trimwrite' "
                "(allowed: read, write, randread, randwrite, rw, readwrite, randrw, trim, "
                "randtrim)");
    parse_fails("[j]\nrw\n", "t.fio:2: option 'rw' needs a value");
}

static void test_parse_rwmix(void)
{
    SimJobFile *f = parse_ok("[a]\nrwmixread=70\n[b]\nrwmixwrite=10\n"
                             "[c]\nrwmixread=30\nrwmixwrite=20\n");

    g_assert_cmpuint(opts(f, 0)->rwmixread, ==, 70);
    g_assert_cmpuint(opts(f, 1)->rwmixread, ==, 90);
    g_assert_cmpuint(opts(f, 2)->rwmixread, ==, 80);      /* the latter wins, as in fio */
    sim_jobfile_free(f);
    parse_fails("[j]\nrwmixread=101\n", "option 'rwmixread': bad value '101' "
                "(allowed: an integer in 0..100)");
}

static void test_parse_bs(void)
{
    SimJobFile *f = parse_ok(
        "[a]\nbs=256k\n"
        "[b]\nblocksize=8k,32k\n"
        "[c]\nbs=8k,32k,\n"
        "[d]\nbs=,8k\n"
        "[e]\nbs=4k,8k,16k\n"
        "[f]\nbs=0x2000\n");
    static const uint64_t want[][3] = {
        { 256 * KiB, 256 * KiB, 256 * KiB },
        { 8 * KiB, 32 * KiB, 32 * KiB },
        { 8 * KiB, 32 * KiB, 4 * KiB },
        { 4 * KiB, 8 * KiB, 8 * KiB },
        { 4 * KiB, 8 * KiB, 16 * KiB },
        { 8 * KiB, 8 * KiB, 8 * KiB },
    };

    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        for (int d = 0; d < SIM_DDIRS; d++) {
            g_assert_cmpuint(opts(f, i)->bs[d], ==, want[i][d]);
        }
    }
    sim_jobfile_free(f);
    parse_fails("[j]\nbs=4q\n", "option 'bs': bad value '4q'");
    parse_fails("[j]\nbs=0\n", "option 'bs': bad value '0'");
    parse_fails("[j]\nbs=4k,4k,4k,4k\n", "at most three comma-separated parts");
}

static void test_parse_bssplit(void)
{
    SimJobFile *f = parse_ok(
        "[a]\nbssplit=4k/10:64k/50:32k/40\n"
        "[b]\nbssplit=4k/50:1k/:32k/\n"
        "[c]\nbssplit=2k/50:4k/50,4k/90:8k/10\n"
        "[d]\nbssplit=4k:8k:16k:32k\n");
    const SimJobOpts *o = opts(f, 0);

    for (int d = 0; d < SIM_DDIRS; d++) {
        g_assert_cmpuint(o->nr_split[d], ==, 3);
        g_assert_cmpuint(o->split[d][1].bs, ==, 64 * KiB);
        g_assert_cmpfloat(o->split[d][1].perc, ==, 50);
    }
    o = opts(f, 1);                     /* the blanks share the rest */
    g_assert_cmpuint(o->split[0][1].bs, ==, 1 * KiB);
    g_assert_cmpfloat(o->split[0][1].perc, ==, 25);
    g_assert_cmpfloat(o->split[0][2].perc, ==, 25);
    o = opts(f, 2);                     /* reads, then writes and trims */
    g_assert_cmpuint(o->nr_split[SIM_DDIR_READ], ==, 2);
    g_assert_cmpuint(o->split[SIM_DDIR_READ][0].bs, ==, 2 * KiB);
    g_assert_cmpuint(o->split[SIM_DDIR_WRITE][0].bs, ==, 4 * KiB);
    g_assert_cmpfloat(o->split[SIM_DDIR_WRITE][0].perc, ==, 90);
    g_assert_cmpfloat(o->split[SIM_DDIR_TRIM][1].perc, ==, 10);
    o = opts(f, 3);
    g_assert_cmpuint(o->nr_split[0], ==, 4);
    g_assert_cmpfloat(o->split[0][3].perc, ==, 25);
    sim_jobfile_free(f);
    parse_fails("[j]\nbssplit=4k/60:8k/50\n", "option 'bssplit': the percentages of "
                "'4k/60:8k/50' add up to 110, not 100");
    parse_fails("[j]\nbssplit=4k/60:8k/30\n", "add up to 90, not 100");
    parse_fails("[j]\nbssplit=4k/60:8k/x\n", "option 'bssplit': bad percentage 'x'");
    parse_fails("[j]\nbssplit=4z/60:8k/40\n", "option 'bssplit': bad block size '4z'");
}

static void test_parse_sizes(void)
{
    SimJobFile *f = parse_ok(
        "[a]\nsize=1g\nio_size=10m\noffset=4k\noffset_increment=1M\n"
        "[b]\nsize=50%\noffset=25%\noffset_increment=10%\nio_limit=3GB\n"
        "[c]\nsize=4KiB\n"                  /* fio's kb_base=1024 reads KiB as 1000 */
        "[d]\nkb_base=1000\nsize=4k\nio_size=4KiB\n"
        "[e]\nsize=2t\noffset=0x1000\n"
        "[f]\nsize=1p\n");
    const SimJobOpts *o = opts(f, 0);

    g_assert_true(o->size_set && !o->size.is_pct);
    g_assert_cmpuint(o->size.bytes, ==, GiB);
    g_assert_true(o->io_size_set);
    g_assert_cmpuint(o->io_size, ==, 10 * MiB);
    g_assert_cmpuint(o->offset.bytes, ==, 4 * KiB);
    g_assert_cmpuint(o->offset_increment.bytes, ==, MiB);
    o = opts(f, 1);
    g_assert_true(o->size.is_pct && o->offset.is_pct && o->offset_increment.is_pct);
    g_assert_cmpuint(o->size.pct, ==, 50);
    g_assert_cmpuint(o->offset.pct, ==, 25);
    g_assert_cmpuint(o->offset_increment.pct, ==, 10);
    g_assert_cmpuint(o->io_size, ==, 3 * GiB);
    g_assert_cmpuint(opts(f, 2)->size.bytes, ==, 4000);
    g_assert_cmpuint(opts(f, 3)->size.bytes, ==, 4000);
    g_assert_cmpuint(opts(f, 3)->io_size, ==, 4096);
    g_assert_cmpuint(opts(f, 4)->size.bytes, ==, 2 * 1024 * GiB);
    g_assert_cmpuint(opts(f, 4)->offset.bytes, ==, 4096);
    g_assert_cmpuint(opts(f, 5)->size.bytes, ==, 1024ull * 1024 * GiB);
    sim_jobfile_free(f);

    /* kb_base in [global] reaches later jobs */
    f = parse_ok("[global]\nkb_base=1000\n[j]\nbs=4k\n");
    g_assert_cmpuint(opts(f, 0)->bs[0], ==, 4000);
    sim_jobfile_free(f);

    parse_fails("[j]\nsize=101%\n", "option 'size': bad value '101%' (allowed: bytes with "
                "an optional k/m/g/t/p unit, or a percentage 0%..100%)");
    parse_fails("[j]\nsize=0\n", "option 'size': bad value '0'");
    parse_fails("[j]\nsize=1.5g\n", "option 'size': bad value '1.5g'");
    parse_fails("[j]\nsize=99999999999999999999\n", "option 'size': bad value");
    parse_fails("[j]\nsize=16384p\n", "option 'size': bad value '16384p'");
    parse_fails("[j]\nio_size=10%\n", "option 'io_size': bad value '10%' (allowed: bytes");
    parse_fails("[j]\nkb_base=1001\n", "option 'kb_base': bad value '1001' (allowed: 1000, "
                "1024)");
}

static void test_parse_times(void)
{
    SimJobFile *f = parse_ok(
        "[a]\nruntime=10\nramp_time=2s\nstartdelay=500ms\nthinktime=100\n"
        "[b]\nruntime=2m\nramp_time=1h\nstartdelay=3\nthinktime=2ms\nthinktime_blocks=8\n"
        "[c]\nruntime=250us\nthinktime=1s\nruntime=1d\n"
        "[d]\nruntime=10usec\nthinktime=3msec\n");

    g_assert_cmpuint(f->jobs[0].runtime_ns, ==, 10 * 1000000000ull);
    g_assert_cmpuint(f->jobs[0].ramp_ns, ==, 2 * 1000000000ull);
    g_assert_cmpuint(f->jobs[0].startdelay_ns, ==, 500 * 1000000ull);
    g_assert_cmpuint(opts(f, 0)->thinktime_ns, ==, 100 * 1000ull);    /* microseconds */
    g_assert_cmpuint(opts(f, 0)->thinktime_blocks, ==, 1);
    g_assert_cmpuint(f->jobs[1].runtime_ns, ==, 120 * 1000000000ull);
    g_assert_cmpuint(f->jobs[1].ramp_ns, ==, 3600 * 1000000000ull);
    g_assert_cmpuint(f->jobs[1].startdelay_ns, ==, 3 * 1000000000ull);
    g_assert_cmpuint(opts(f, 1)->thinktime_ns, ==, 2 * 1000000ull);
    g_assert_cmpuint(opts(f, 1)->thinktime_blocks, ==, 8);
    g_assert_cmpuint(f->jobs[2].runtime_ns, ==, 86400 * 1000000000ull);
    g_assert_cmpuint(opts(f, 2)->thinktime_ns, ==, 1000000000ull);
    g_assert_cmpuint(f->jobs[3].runtime_ns, ==, 10 * 1000ull);
    g_assert_cmpuint(opts(f, 3)->thinktime_ns, ==, 3 * 1000000ull);
    sim_jobfile_free(f);
    parse_fails("[j]\nruntime=10x\n", "option 'runtime': bad value '10x' (allowed: an "
                "integer time in seconds, or with a us/ms/s/m/h/d suffix, up to 416d "
                "(femu-sim's virtual time ends at 2^55 ns))");
    /* femu-sim's virtual time ends at 2^55 ns: no time of a job file goes past it */
    f = parse_ok("[a]\nruntime=416d\nthinktime=416d\nstartdelay=416d\nramp_time=416d\n"
                 "log_avg_msec=36028797018\n");
    g_assert_cmpuint(f->jobs[0].runtime_ns, ==, 416 * 86400 * 1000000000ull);
    g_assert_cmpuint(opts(f, 0)->thinktime_ns, ==, 416 * 86400 * 1000000000ull);
    g_assert_cmpuint(f->jobs[0].log_avg_ns, ==, 36028797018000000ull);
    sim_jobfile_free(f);
    parse_fails("[j]\nruntime=417d\n", "option 'runtime': bad value '417d' (allowed: an "
                "integer time in seconds, or with a us/ms/s/m/h/d suffix, up to 416d");
    parse_fails("[j]\nthinktime=18446744073709551us\n", "option 'thinktime': bad value "
                "'18446744073709551us' (allowed: an integer time in microseconds");
    parse_fails("[j]\nstartdelay=36028798\n", "option 'startdelay': bad value");
    parse_fails("[j]\nramp_time=36028798s\n", "option 'ramp_time': bad value");
    parse_fails("[j]\nlog_avg_msec=36028797019\n", "option 'log_avg_msec': bad value "
                "'36028797019' (allowed: an integer in 0..36028797018)");
    parse_fails("[j]\nthinktime=1.5\n", "option 'thinktime': bad value '1.5' (allowed: an "
                "integer time in microseconds");
    parse_fails("[j]\nstartdelay=1-5\n", "option 'startdelay': a range ('1-5') is not "
                "supported");
    parse_fails("[j]\nthinktime_blocks=0\n", "option 'thinktime_blocks': bad value '0'");
}

static void test_parse_misc(void)
{
    SimJobFile *f = parse_ok(
        "[a]\niodepth=32\nnumjobs=8\nwait_for_previous\nrandseed=1234\n"
        "random_distribution=zipf:1.2\nzonemode=zbd\nmax_open_zones=14\nfsync=32\n"
        "end_fsync=1\nlog_avg_msec=500\npercentile_list=99.9:50:99\n"
        "filename=/dev/nvme0n3\nreplay_no_stall=1\n"
        "[b]\nrandom_distribution=pareto:0.3\nfdp=1\nfdp_pli=4,0-2\n"
        "fdp_pli_select=random\nfilename=/dev/ng1n2\nstonewall=0\ntime_based=0\n"
        "[c]\nrandom_distribution=zipf\ndataplacement=fdp\nplids=3\nplid_select=roundrobin\n"
        "zonemode=none\n"
        "[d]\nrandom_distribution=pareto\nfdp=0\n"
        "[e]\nrandom_distribution=random\nread_iolog=/tmp/trace.csv\n");
    const SimJob *j = &f->jobs[0];
    const SimJobOpts *o = opts(f, 0);

    g_assert_cmpuint(j->iodepth, ==, 32);
    g_assert_cmpuint(j->numjobs, ==, 8);
    g_assert_true(j->stonewall);
    g_assert_cmpuint(o->randseed, ==, 1234);
    g_assert_cmpint(o->dist, ==, SIM_DIST_ZIPF);
    g_assert_cmpfloat(o->dist_param, ==, 1.2);
    g_assert_true(o->zbd);
    g_assert_cmpuint(o->max_open_zones, ==, 14);
    g_assert_cmpuint(o->fsync_every, ==, 32);
    g_assert_true(o->end_fsync);
    g_assert_cmpuint(j->log_avg_ns, ==, 500 * 1000000ull);
    g_assert_cmpuint(j->nr_percentiles, ==, 3);
    g_assert_cmpfloat(j->percentiles[0], ==, 50);       /* sorted */
    g_assert_cmpfloat(j->percentiles[1], ==, 99);
    g_assert_cmpfloat(j->percentiles[2], ==, 99.9);
    g_assert_cmpuint(j->nsid, ==, 3);
    g_assert_null(j->read_iolog);
    g_assert_true(j->replay_no_stall);

    o = opts(f, 1);
    g_assert_cmpint(o->dist, ==, SIM_DIST_PARETO);
    g_assert_cmpfloat(o->dist_param, ==, 0.3);
    g_assert_true(o->fdp && o->plid_random);
    g_assert_cmpuint(o->nr_plids, ==, 4);               /* sorted, as fio does */
    g_assert_cmpuint(o->plids[0], ==, 0);
    g_assert_cmpuint(o->plids[1], ==, 1);
    g_assert_cmpuint(o->plids[2], ==, 2);
    g_assert_cmpuint(o->plids[3], ==, 4);
    g_assert_cmpuint(f->jobs[1].nsid, ==, 2);
    g_assert_false(f->jobs[1].stonewall);
    g_assert_false(f->jobs[1].time_based);

    o = opts(f, 2);
    g_assert_cmpint(o->dist, ==, SIM_DIST_ZIPF);
    g_assert_cmpfloat(o->dist_param, ==, 1.1);          /* fio's default theta */
    g_assert_true(o->fdp && !o->plid_random);
    g_assert_cmpuint(o->nr_plids, ==, 1);
    g_assert_cmpuint(o->plids[0], ==, 3);
    g_assert_false(o->zbd);
    g_assert_cmpint(opts(f, 3)->dist, ==, SIM_DIST_PARETO);
    g_assert_cmpfloat(opts(f, 3)->dist_param, ==, 0.2);
    g_assert_false(opts(f, 3)->fdp);
    g_assert_cmpint(opts(f, 4)->dist, ==, SIM_DIST_RANDOM);
    g_assert_cmpstr(f->jobs[4].read_iolog, ==, "/tmp/trace.csv");
    sim_jobfile_free(f);
}

static void test_parse_ignored(void)
{
    SimJobFile *f = parse_ok(
        "[j]\nioengine=libaio\ndirect=1\nbuffered=0\ngroup_reporting\nthread\ninvalidate=1\n"
        "gtod_reduce=1\nclat_percentiles=1\nlat_percentiles=1\nslat_percentiles=1\n"
        "write_bw_log=x\nwrite_lat_log=x\nwrite_iops_log=x\nwrite_hist_log=x\nlog_offset=1\n"
        "exitall\niodepth_batch=4\niodepth_batch_submit=4\niodepth_batch_complete=1\n"
        "iodepth_low=2\nunified_rw_reporting=1\ndisable_lat=1\ndisable_clat=1\n"
        "disable_slat=1\nrandrepeat=0\nallrandrepeat=1\nrefill_buffers\nscramble_buffers=1\n"
        "buffer_compress_percentage=50\nzero_buffers\nverify=crc32c\nverify_fatal=1\n"
        "verify_backlog=16\ndo_verify=0\nnuma_cpu_nodes=0\nnuma_mem_policy=local\n"
        "cpus_allowed=0-3\ncpumask=1\nfadvise_hint=0\nioscheduler=none\nhipri\n"
        "registerfiles\nfixedbufs\nsqthread_poll=1\n");

    g_assert_cmpuint(f->nr_jobs, ==, 1);
    sim_jobfile_free(f);
}

static void test_parse_errors(void)
{
    static const struct {
        const char *text, *err;
    } cases[] = {
        { "[j]\nrw=read\nbogus=1\n", "t.fio:3: option 'bogus' is not supported by femu-sim" },
        { "[j]\nblockalign=4k\n", "t.fio:2: option 'blockalign' is not supported by femu-sim" },
        { "[j]\nnrfiles=2\n", "option 'nrfiles' is not supported by femu-sim" },
        { "[j]\nzonesize=1m\n", "option 'zonesize' is not supported by femu-sim" },
        /* what would repeat a job or pace it otherwise: a job ends by size, io_size, its
         * trace or its runtime only */
        { "[j]\nloops=1000000000\n", "option 'loops' is not supported by femu-sim" },
        { "[j]\nrate=1m\n", "option 'rate' is not supported by femu-sim" },
        { "[j]\nrate_iops=10\n", "option 'rate_iops' is not supported by femu-sim" },
        { "[j]\nnumber_ios=10\n", "option 'number_ios' is not supported by femu-sim" },
        { "[j]\nsize=0\n", "option 'size': bad value '0' (allowed: a size > 0" },
        { "[j]\nio_size=0\n", "option 'io_size': bad value '0' (allowed: a size > 0)" },
        { "[j]\nbs=0\n", "option 'bs': bad value '0' (allowed: a block size > 0" },
        { "[j]\noutput-format=json\n", "option 'output-format' is not supported" },
        { "rw=read\n[j]\n", "t.fio:1: option 'rw' before any [section]" },
        { "[j]\ninclude other.fio\n", "t.fio:2: 'include' is not supported by femu-sim" },
        { "[j]\nsize=${SIZE}\n", "t.fio:2: option 'size': '$' expansion ('${SIZE}') is "
          "not supported by femu-sim" },
        { "[j]\nbs=$pagesize\n", "'$' expansion" },
        { "[j\nrw=read\n", "t.fio:1: section header '[j' does not end with ']'" },
        { "[ ]\n", "t.fio:1: empty section name" },
        { "[global]\nrw=read\n", "t.fio: no job section" },
        { "", "no job section" },
        { "[j]\n=5\n", "t.fio:2: an option without a name" },
        { "[j]\nrw=\n", "option 'rw' needs a value" },
        { "[j]\ntime_based=2\n", "option 'time_based': bad value '2' (allowed: 0 or 1" },
        { "[j]\nend_fsync=yes\n", "option 'end_fsync': bad value 'yes'" },
        { "[j]\niodepth=0\n", "option 'iodepth': bad value '0' (allowed: an integer in "
          "1..65536)" },
        { "[j]\nnumjobs=-1\n", "option 'numjobs': bad value '-1'" },
        { "[j]\nrandom_distribution=zipf:1\n", "option 'random_distribution': bad value "
          "'zipf:1' (allowed: zipf:THETA, THETA a number > 0 other than 1)" },
        { "[j]\nrandom_distribution=zipf:abc\n", "bad value 'zipf:abc'" },
        { "[j]\nrandom_distribution=pareto:1.5\n", "bad value 'pareto:1.5' (allowed: "
          "pareto:H, H a number in (0,1))" },
        { "[j]\nrandom_distribution=zipf:1.2:0.25\n", "the ':center' part of "
          "'zipf:1.2:0.25' is not supported" },
        { "[j]\nrandom_distribution=normal:10\n", "bad value 'normal:10' (allowed: random, "
          "zipf:THETA, pareto:H)" },
        { "[j]\nrandom_distribution=zipf:1.2,random\n", "per-direction distributions" },
        { "[j]\nzonemode=strided\n", "option 'zonemode': bad value 'strided' (allowed: "
          "none, zbd)" },
        { "[j]\ndataplacement=streams\n", "option 'dataplacement': bad value 'streams' "
          "(allowed: none, fdp)" },
        { "[j]\nfdp_pli=0-16\n", "option 'fdp_pli': bad value '0-16'" },
        { "[j]\nfdp_pli=3-1\n", "option 'fdp_pli': bad value '3-1'" },
        { "[j]\nfdp_pli=a\n", "option 'fdp_pli': bad value 'a'" },
        { "[j]\nfdp_pli_select=scheme\n", "option 'fdp_pli_select': bad value 'scheme' "
          "(allowed: roundrobin, random)" },
        { "[j]\nfilename=/tmp/file\n", "option 'filename': bad value '/tmp/file' (allowed: "
          "/dev/nvmeXnY or /dev/ngXnY" },
        { "[j]\nfilename=/dev/nvme0n1p1\n", "bad value '/dev/nvme0n1p1'" },
        { "[j]\nfilename=/dev/nvme0n0\n", "bad value '/dev/nvme0n0'" },
        { "[j]\nfilename=/dev/nvme0n1:/dev/nvme0n2\n", "bad value" },
        { "[j]\npercentile_list=50:101\n", "option 'percentile_list': bad value '50:101' "
          "(allowed: numbers in (0,100] separated by ':')" },
        { "[j]\npercentile_list=0\n", "bad value '0'" },
        { "[j]\npercentile_list=1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20:21:22:"
          "23:24:25:26:27:28:29:30:31:32:33\n", "at most 32 percentiles" },
        { "[j]\nread_iolog=a:b\n", "option 'read_iolog': bad value 'a:b'" },
        { "[j]\nlog_avg_msec=x\n", "option 'log_avg_msec': bad value 'x'" },
        { "[j]\nfsync=-2\n", "option 'fsync': bad value '-2'" },
        { "[j]\nmax_open_zones=lots\n", "option 'max_open_zones': bad value 'lots'" },
        { "[j]\nrw=trim\nzonemode=zbd\n", "t.fio:1: job 'j': trims with zonemode=zbd are "
          "not supported by femu-sim" },
        { "[j]\nzonemode=zbd\nread_iolog=/x\n[k]\n", "t.fio:1: job 'j': read_iolog replays "
          "the trace as it is; zonemode=zbd is not supported" },
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        parse_fails(cases[i].text, cases[i].err);
    }
}

static void test_load(void)
{
    char *path = write_tmp("job.fio", "[global]\nrw=write\n[one]\nsize=1m\n");
    char *err = NULL, *missing;
    SimJobFile *f = sim_jobfile_load(path, &err);

    g_assert_nonnull(f);
    g_assert_cmpuint(f->nr_jobs, ==, 1);
    g_assert_cmpuint(opts(f, 0)->size.bytes, ==, MiB);
    sim_jobfile_free(f);
    g_free(path);

    path = write_tmp("bad.fio", "[one]\n\n\nfoo=1\n");
    g_assert_null(sim_jobfile_load(path, &err));
    g_assert_true(g_str_has_suffix(err, "bad.fio:4: option 'foo' is not supported by "
                                   "femu-sim"));
    g_free(err);
    g_free(path);

    err = NULL;
    missing = g_build_filename(tmpdir, "missing.fio", NULL);
    g_assert_null(sim_jobfile_load(missing, &err));
    g_assert_nonnull(strstr(err, "missing.fio"));
    g_free(err);
    g_free(missing);
}

/* ---- generators ---- */

static void test_seq(void)
{
    SimJobFile *f = parse_ok("[w]\nrw=write\nbs=16k\nsize=64k\noffset=1m\n"
                             "[loop]\nrw=read\nbs=16k\nsize=64k\nio_size=160k\n");
    SimTarget t = plain_target(16 * MiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    SimIo io;

    for (int i = 0; i < 4; i++) {
        g_assert_true(sim_gen_next(g, 0, &io));
        g_assert_cmpint(io.op, ==, SIM_OP_WRITE);
        g_assert_cmpuint(io.offset, ==, MiB + i * 16 * KiB);
        g_assert_cmpuint(io.len, ==, 16 * KiB);
        g_assert_cmpuint(io.plid, ==, SIM_NO_PLID);
        g_assert_cmpuint(io.not_before_ns, ==, 0);
    }
    g_assert_false(sim_gen_next(g, 0, &io));
    g_assert_false(sim_gen_next(g, 0, &io));
    sim_gen_free(g);

    /* io_size > size wraps around the region */
    g = gen_ok(f, 1, 0, &t);
    for (int i = 0; i < 10; i++) {
        g_assert_true(sim_gen_next(g, 0, &io));
        g_assert_cmpint(io.op, ==, SIM_OP_READ);
        g_assert_cmpuint(io.offset, ==, (i % 4) * 16 * KiB);
    }
    g_assert_false(sim_gen_next(g, 0, &io));
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_seq_default_size_and_tail(void)
{
    /* no size: the namespace from offset; a region not a multiple of bs is cut down */
    SimJobFile *f = parse_ok("[j]\nrw=write\nbs=8k\noffset=4k\n"
                             "[k]\nrw=rw\nbs=4k\nsize=16k\n");
    SimTarget t = plain_target(64 * KiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    SimIo io;
    int n = 0;
    uint64_t next_r = 0, next_w = 0, reads = 0, writes = 0;

    while (sim_gen_next(g, 0, &io)) {
        g_assert_cmpuint(io.offset, ==, 4 * KiB + n * 8 * KiB);
        n++;
    }
    g_assert_cmpint(n, ==, 7);          /* 60k of namespace left: 7 blocks of 8k */
    sim_gen_free(g);

    /* rw: reads and writes each walk the region on their own, as fio's last_pos[ddir] */
    g = gen_ok(f, 1, 0, &t);
    while (sim_gen_next(g, 0, &io)) {
        if (io.op == SIM_OP_READ) {
            g_assert_cmpuint(io.offset, ==, next_r);
            next_r = (next_r + 4 * KiB) % (16 * KiB);
            reads++;
        } else {
            g_assert_cmpint(io.op, ==, SIM_OP_WRITE);
            g_assert_cmpuint(io.offset, ==, next_w);
            next_w = (next_w + 4 * KiB) % (16 * KiB);
            writes++;
        }
    }
    g_assert_cmpuint(reads + writes, ==, 4);
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_numjobs_offset_increment(void)
{
    SimJobFile *f = parse_ok("[j]\nrw=write\nbs=4k\nsize=32k\nnumjobs=4\noffset=1m\n"
                             "offset_increment=256k\n"
                             "[p]\nrw=read\nsize=10%\noffset=10%\noffset_increment=20%\n"
                             "numjobs=4\n");
    SimTarget t = plain_target(4 * MiB);
    SimIo io;
    char *err = NULL;

    for (uint32_t c = 0; c < 4; c++) {
        SimGen *g = gen_ok(f, 0, c, &t);
        int n = 0;

        while (sim_gen_next(g, 0, &io)) {
            g_assert_cmpuint(io.offset, ==, MiB + c * 256 * KiB + n * 4 * KiB);
            n++;
        }
        g_assert_cmpint(n, ==, 8);
        sim_gen_free(g);
    }
    g_assert_null(sim_gen_new(&f->jobs[0], 4, &t, &err));
    g_assert_nonnull(strstr(err, "clone 4 of numjobs=4"));
    g_clear_pointer(&err, g_free);

    /* percentages of the namespace, aligned up to the block size */
    t = plain_target(1000 * 4096);
    for (uint32_t c = 0; c < 4; c++) {
        SimGen *g = gen_ok(f, 1, c, &t);
        uint64_t first = 0;
        int n = 0;

        while (sim_gen_next(g, 0, &io)) {
            if (n++ == 0) {
                first = io.offset;
            }
        }
        g_assert_cmpuint(first, ==, (100 + c * 200) * 4096);
        g_assert_cmpint(n, ==, 100);
        sim_gen_free(g);
    }
    sim_jobfile_free(f);
}

static void test_gen_refusals(void)
{
    SimTarget t = plain_target(MiB);
    SimTarget z = { .ns_bytes = 8 * MiB, .lba_bytes = 4096, .zone_bytes = MiB,
                    .zone_cap_bytes = MiB };

    gen_fails("[j]\nsize=2m\n", &t, "offset 0 + size 2097152 is beyond the namespace "
              "(1048576 bytes)");
    gen_fails("[j]\noffset=1m\n", &t, "offset 1048576 is beyond the namespace");
    gen_fails("[j]\nsize=512k\noffset=768k\n", &t, "is beyond the namespace");
    gen_fails("[j]\nbs=512\n", &t, "bs=512 is not a multiple of the namespace's 4096-byte "
              "LBA");
    gen_fails("[j]\nbssplit=4k/50:6k/50\n", &t, "bssplit size 6144 is not a multiple");
    gen_fails("[j]\noffset=2k\n", &t, "offset 2048 is not a multiple");
    gen_fails("[j]\nsize=4k\nbs=8k\n", &t, "size 4096 is smaller than the block size 8192");
    gen_fails("[j]\nzonemode=zbd\n", &t, "zonemode=zbd on a namespace that is not zoned");
    gen_fails("[j]\nzonemode=zbd\nbs=2m\n", &z, "block size 2097152 is larger than the "
              "zone capacity");
    gen_fails("[j]\nzonemode=zbd\nsize=1536k\noffset=256k\n", &z, "holds no whole zone");
    gen_fails("[j]\nzonemode=zbd\nrw=write\nnumjobs=2\nsize=4m\noffset_increment=2m\n", &z,
              "zonemode=zbd writes with numjobs=2 need a region per clone");
    gen_fails("[j]\nrw=write\nfdp=1\n", &t, "fdp=1 on a namespace without placement ids");
    t.nr_plids = 4;
    gen_fails("[j]\nrw=write\nfdp=1\nfdp_pli=1,4\n", &t, "fdp_pli index 4 is beyond the "
              "namespace's 4 placement ids (0..3)");
}

/* Every block of a random pass exactly once, for sizes that are and are not powers of 2. */
static void test_random_map(void)
{
    static const uint64_t sizes[] = { 1, 2, 3, 5, 7, 16, 17, 100, 1000, 4097, 65536, 100003 };

    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
        uint64_t n = sizes[i];
        char *text = g_strdup_printf("[j]\nrw=randread\nbs=4k\nsize=%" G_GUINT64_FORMAT
                                     "\nio_size=%" G_GUINT64_FORMAT "\n", n * 4096,
                                     3 * n * 4096);
        SimJobFile *f = parse_ok(text);
        SimTarget t = plain_target(n * 4096 + MiB);
        SimGen *g = gen_ok(f, 0, 0, &t);
        uint8_t *seen = g_new0(uint8_t, n);
        uint64_t *order = g_new(uint64_t, n);
        bool differs = n < 3;
        SimIo io;

        for (int pass = 0; pass < 3; pass++) {
            for (uint64_t k = 0; k < n; k++) {
                uint64_t b;

                g_assert_true(sim_gen_next(g, 0, &io));
                g_assert_cmpuint(io.offset % 4096, ==, 0);
                g_assert_cmpuint(io.len, ==, 4096);
                b = io.offset / 4096;
                g_assert_cmpuint(b, <, n);
                g_assert_cmpuint(seen[b], ==, pass);
                seen[b]++;
                if (pass == 0) {
                    order[k] = b;
                } else if (order[k] != b) {
                    differs = true;
                }
            }
        }
        g_assert_false(sim_gen_next(g, 0, &io));
        g_assert_true(differs);     /* each pass has its own order */
        g_free(seen);
        g_free(order);
        sim_gen_free(g);
        sim_jobfile_free(f);
        g_free(text);
    }
}

/* randrw: one map when reads and writes share a block size, as fio's one map per file */
static void test_random_map_shared(void)
{
    SimJobFile *f = parse_ok("[same]\nrw=randrw\nbs=8k\nsize=8000k\n"
                             "[diff]\nrw=randrw\nbs=4k,16k\nsize=1600k\ntime_based\n");
    SimTarget t = plain_target(16 * MiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    uint8_t seen[1000] = { 0 };
    uint32_t reads = 0, n = 0;
    SimIo io;

    while (sim_gen_next(g, 0, &io)) {
        g_assert_cmpuint(io.offset % (8 * KiB), ==, 0);
        g_assert_cmpuint(seen[io.offset / (8 * KiB)]++, ==, 0);
        reads += io.op == SIM_OP_READ;
        n++;
    }
    g_assert_cmpuint(n, ==, 1000);
    g_assert_cmpuint(reads, >, 400);
    g_assert_cmpuint(reads, <, 600);
    sim_gen_free(g);

    /* each direction on its own block size: writes 16k-aligned, 100 per pass */
    g = gen_ok(f, 1, 0, &t);
    {
        uint8_t wseen[100] = { 0 };
        uint32_t writes = 0;

        while (writes < 100) {
            g_assert_true(sim_gen_next(g, 0, &io));
            if (io.op == SIM_OP_WRITE) {
                g_assert_cmpuint(io.offset % (16 * KiB), ==, 0);
                g_assert_cmpuint(io.len, ==, 16 * KiB);
                g_assert_cmpuint(wseen[io.offset / (16 * KiB)]++, ==, 0);
                writes++;
            } else {
                g_assert_cmpuint(io.offset % (4 * KiB), ==, 0);
                g_assert_cmpuint(io.len, ==, 4 * KiB);
            }
        }
    }
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_norandommap(void)
{
    SimJobFile *f = parse_ok("[j]\nrw=randwrite\nnorandommap\nsize=4000k\n");
    SimTarget t = plain_target(8 * MiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    uint32_t *hits = g_new0(uint32_t, 1000);
    uint32_t dup = 0, untouched = 0, n = 0;
    SimIo io;

    while (sim_gen_next(g, 0, &io)) {
        g_assert_cmpuint(io.offset + io.len, <=, 4000 * KiB);
        hits[io.offset / 4096]++;
        n++;
    }
    g_assert_cmpuint(n, ==, 1000);
    for (int i = 0; i < 1000; i++) {
        dup += hits[i] > 1;
        untouched += hits[i] == 0;
    }
    /* independent picks: about 1/e of the blocks untouched */
    g_assert_cmpuint(untouched, >, 300);
    g_assert_cmpuint(untouched, <, 440);
    g_assert_cmpuint(dup, >, 0);
    g_free(hits);
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_rwmix(void)
{
    SimJobFile *f = parse_ok("[j]\nrw=randrw\nrwmixread=70\ntime_based\nbs=4k,16k\n"
                             "[k]\nrw=rw\nrwmixwrite=100\n");
    SimTarget t = plain_target(GiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    uint64_t reads = 0, n = 200000;
    SimIo io;

    for (uint64_t i = 0; i < n; i++) {
        g_assert_true(sim_gen_next(g, 0, &io));
        if (io.op == SIM_OP_READ) {
            reads++;
            g_assert_cmpuint(io.len, ==, 4 * KiB);
        } else {
            g_assert_cmpint(io.op, ==, SIM_OP_WRITE);
            g_assert_cmpuint(io.len, ==, 16 * KiB);
        }
    }
    g_assert_cmpfloat(fabs((double)reads / n - 0.7), <, 0.01);
    sim_gen_free(g);

    g = gen_ok(f, 1, 0, &t);
    for (int i = 0; i < 1000; i++) {
        g_assert_true(sim_gen_next(g, 0, &io));
        g_assert_cmpint(io.op, ==, SIM_OP_WRITE);
    }
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_bssplit_gen(void)
{
    SimJobFile *f = parse_ok("[j]\nrw=randrw\nbssplit=8k/10:64k/50:32k/40,16k/25:32k/\n"
                             "time_based\n");
    SimTarget t = plain_target(GiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    uint64_t r8 = 0, r64 = 0, r32 = 0, w16 = 0, w32 = 0, reads = 0, writes = 0;
    SimIo io;

    for (int i = 0; i < 200000; i++) {
        g_assert_true(sim_gen_next(g, 0, &io));
        /* the grid is the smallest size: 8k */
        g_assert_cmpuint(io.offset % (8 * KiB), ==, 0);
        g_assert_cmpuint(io.offset + io.len, <=, GiB);
        if (io.op == SIM_OP_READ) {
            reads++;
            r8 += io.len == 8 * KiB;
            r64 += io.len == 64 * KiB;
            r32 += io.len == 32 * KiB;
        } else {
            writes++;
            w16 += io.len == 16 * KiB;
            w32 += io.len == 32 * KiB;
        }
    }
    /* a 64k read starting at the region's last 8k block is cut short: rare at 1 GiB */
    g_assert_cmpfloat(fabs((double)r8 / reads - 0.10), <, 0.01);
    g_assert_cmpfloat(fabs((double)r64 / reads - 0.50), <, 0.01);
    g_assert_cmpfloat(fabs((double)r32 / reads - 0.40), <, 0.01);
    g_assert_cmpfloat(fabs((double)w16 / writes - 0.25), <, 0.01);
    g_assert_cmpfloat(fabs((double)w32 / writes - 0.75), <, 0.01);
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static int cmp_u32_desc(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? 1 : x > y ? -1 : 0;
}

/* The share of the I/Os that the hottest `top` of n blocks got. */
static double top_share(const char *text, uint64_t n, double top, uint64_t ios)
{
    SimJobFile *f = parse_ok(text);
    SimTarget t = plain_target(n * 4096);
    SimGen *g = gen_ok(f, 0, 0, &t);
    uint32_t *hits = g_new0(uint32_t, n);
    uint64_t sum = 0;
    SimIo io;

    for (uint64_t i = 0; i < ios; i++) {
        g_assert_true(sim_gen_next(g, 0, &io));
        g_assert_cmpuint(io.offset / 4096, <, n);
        hits[io.offset / 4096]++;
    }
    qsort(hits, n, sizeof(hits[0]), cmp_u32_desc);
    for (uint64_t i = 0; i < n * top; i++) {
        sum += hits[i];
    }
    g_free(hits);
    sim_gen_free(g);
    sim_jobfile_free(f);
    return (double)sum / ios;
}

static void test_zipf_pareto(void)
{
    uint64_t n = 10000;
    double h10 = 0, hn = 0, share;

    for (uint64_t i = 1; i <= n; i++) {
        hn += pow(i, -1.2);
        if (i <= n / 10) {
            h10 += pow(i, -1.2);
        }
    }
    /* zipf(1.2) over 10000 blocks: the top 10% get ~90% of the I/Os */
    share = top_share("[j]\nrw=randread\nrandom_distribution=zipf:1.2\ntime_based\n", n,
                      0.1, 500000);
    g_test_message("zipf:1.2 top 10%%: %.4f, expected %.4f", share, h10 / hn);
    g_assert_cmpfloat(fabs(share - h10 / hn), <, 0.03);

    /* pareto:0.2 is fio's 80/20: the top 20% get 80% */
    share = top_share("[j]\nrw=randread\nrandom_distribution=pareto:0.2\ntime_based\n", n,
                      0.2, 500000);
    g_test_message("pareto:0.2 top 20%%: %.4f", share);
    g_assert_cmpfloat(fabs(share - 0.8), <, 0.03);

    /* uniform, for contrast */
    share = top_share("[j]\nrw=randread\nnorandommap\ntime_based\n", n, 0.1, 500000);
    g_assert_cmpfloat(share, <, 0.15);

    /* the hot blocks are spread over the range, not the first ones */
    {
        SimJobFile *f = parse_ok("[j]\nrw=randread\nrandom_distribution=zipf:1.2\n"
                                 "time_based\n");
        SimTarget t = plain_target(n * 4096);
        SimGen *g = gen_ok(f, 0, 0, &t);
        uint64_t low = 0;
        SimIo io;

        for (int i = 0; i < 10000; i++) {
            g_assert_true(sim_gen_next(g, 0, &io));
            low += io.offset < n * 4096 / 10;
        }
        g_assert_cmpuint(low, <, 5000);
        sim_gen_free(g);
        sim_jobfile_free(f);
    }
}

static void test_determinism(void)
{
    SimJobFile *f = parse_ok("[j]\nrw=randrw\nbssplit=4k/50:16k/50\nnumjobs=2\n"
                             "time_based\n"
                             "[j]\nrw=randrw\nbssplit=4k/50:16k/50\nnumjobs=2\n"
                             "time_based\nrandseed=7\n"
                             "[z]\nrw=randread\nrandom_distribution=zipf:0.8\ntime_based\n");
    SimTarget t = plain_target(GiB);
    SimGen *a = gen_ok(f, 0, 0, &t), *b = gen_ok(f, 0, 0, &t);
    SimGen *c = gen_ok(f, 0, 1, &t), *d = gen_ok(f, 1, 0, &t);
    SimGen *z1 = gen_ok(f, 2, 0, &t), *z2 = gen_ok(f, 2, 0, &t);
    int same_c = 0, same_d = 0;

    for (int i = 0; i < 10000; i++) {
        SimIo x, y, u, v;

        g_assert_true(sim_gen_next(a, i, &x));
        g_assert_true(sim_gen_next(b, i, &y));
        g_assert_cmpmem(&x, sizeof(x), &y, sizeof(y));
        g_assert_true(sim_gen_next(c, i, &u));
        g_assert_true(sim_gen_next(d, i, &v));
        same_c += x.offset == u.offset;
        same_d += x.offset == v.offset;
        g_assert_true(sim_gen_next(z1, i, &x));
        g_assert_true(sim_gen_next(z2, i, &y));
        g_assert_cmpmem(&x, sizeof(x), &y, sizeof(y));
    }
    /* another clone, another seed: other sequences */
    g_assert_cmpint(same_c, <, 10);
    g_assert_cmpint(same_d, <, 10);
    sim_gen_free(a);
    sim_gen_free(b);
    sim_gen_free(c);
    sim_gen_free(d);
    sim_gen_free(z1);
    sim_gen_free(z2);
    sim_jobfile_free(f);
}

static void test_thinktime(void)
{
    SimJobFile *f = parse_ok("[j]\nrw=write\nthinktime=100\nthinktime_blocks=4\nsize=64k\n"
                             "[k]\nrw=read\nthinktime=1ms\nsize=16k\n");
    SimTarget t = plain_target(MiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    SimIo io;

    for (int i = 0; i < 16; i++) {
        uint64_t now = 1000000 + i * 7;

        g_assert_true(sim_gen_next(g, now, &io));
        if (i > 0 && i % 4 == 0) {
            g_assert_cmpuint(io.not_before_ns, ==, now + 100000);
        } else {
            g_assert_cmpuint(io.not_before_ns, ==, 0);
        }
    }
    sim_gen_free(g);
    g = gen_ok(f, 1, 0, &t);
    for (int i = 0; i < 4; i++) {
        g_assert_true(sim_gen_next(g, 50, &io));
        g_assert_cmpuint(io.not_before_ns, ==, i ? 50 + 1000000 : 0);
    }
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_fsync(void)
{
    SimJobFile *f = parse_ok("[j]\nrw=randrw\nfsync=3\nend_fsync=1\nsize=400k\n"
                             "[r]\nrw=read\nend_fsync=1\nfsync=1\nsize=8k\n");
    SimTarget t = plain_target(MiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    int writes = 0, flushes = 0, data = 0;
    SimOp last = SIM_OP_READ;
    SimIo io;

    while (sim_gen_next(g, 0, &io)) {
        if (io.op == SIM_OP_FLUSH) {
            g_assert_cmpuint(io.len, ==, 0);
            /* a flush right after every third write; then end_fsync's after the last I/O */
            if (data < 100) {
                g_assert_true(last == SIM_OP_WRITE);
                g_assert_cmpint(writes % 3, ==, 0);
            }
            flushes++;
        } else {
            if (writes > 0 && writes % 3 == 0 && last == SIM_OP_WRITE) {
                g_assert_not_reached();     /* the third write's flush went missing */
            }
            data++;
            writes += io.op == SIM_OP_WRITE;
        }
        last = io.op;
    }
    g_assert_cmpint(data, ==, 100);
    g_assert_cmpint(last, ==, SIM_OP_FLUSH);
    g_assert_cmpint(flushes, ==, writes / 3 + 1);
    g_assert_cmpint(writes, >, 30);
    sim_gen_free(g);

    /* no writes: neither fsync nor end_fsync flushes */
    g = gen_ok(f, 1, 0, &t);
    g_assert_true(sim_gen_next(g, 0, &io) && io.op == SIM_OP_READ);
    g_assert_true(sim_gen_next(g, 0, &io) && io.op == SIM_OP_READ);
    g_assert_false(sim_gen_next(g, 0, &io));
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_trim(void)
{
    SimJobFile *f = parse_ok("[t]\nrw=trim\nbs=4k,4k,64k\nsize=256k\n"
                             "[rt]\nrw=randtrim\nbs=,,128k\nsize=1m\n");
    SimTarget t = plain_target(MiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    uint8_t seen[8] = { 0 };
    SimIo io;
    int n = 0;

    while (sim_gen_next(g, 0, &io)) {
        g_assert_cmpint(io.op, ==, SIM_OP_TRIM);
        g_assert_cmpuint(io.offset, ==, n * 64 * KiB);
        g_assert_cmpuint(io.len, ==, 64 * KiB);
        n++;
    }
    g_assert_cmpint(n, ==, 4);
    sim_gen_free(g);
    g = gen_ok(f, 1, 0, &t);
    n = 0;
    while (sim_gen_next(g, 0, &io)) {
        g_assert_cmpint(io.op, ==, SIM_OP_TRIM);
        g_assert_cmpuint(io.offset % (128 * KiB), ==, 0);
        seen[io.offset / (128 * KiB)]++;
        n++;
    }
    g_assert_cmpint(n, ==, 8);
    for (int i = 0; i < 8; i++) {
        g_assert_cmpuint(seen[i], ==, 1);
    }
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_time_based(void)
{
    SimJobFile *f = parse_ok("[j]\nrw=write\nsize=16k\ntime_based\nruntime=1\n");
    SimTarget t = plain_target(MiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    SimIo io;

    g_assert_cmpuint(f->jobs[0].runtime_ns, ==, 1000000000ull);
    for (int i = 0; i < 1000; i++) {
        g_assert_true(sim_gen_next(g, i, &io));
        g_assert_cmpuint(io.offset, ==, (i % 4) * 4096);
    }
    sim_gen_free(g);
    sim_jobfile_free(f);
}

/* ---- zonemode=zbd ---- */

typedef struct ZModel {
    uint64_t zone, cap;
    uint32_t nr;
    uint64_t wp[64];
} ZModel;

static uint64_t zm_written(void *opaque, uint64_t zone)
{
    return ((ZModel *)opaque)->wp[zone];
}

static SimTarget zoned_target(ZModel *m, uint32_t nr, uint64_t zone, uint64_t cap,
                              uint32_t max_open)
{
    m->zone = zone;
    m->cap = cap;
    m->nr = nr;
    return (SimTarget){ .ns_bytes = nr * zone, .lba_bytes = 4096, .zone_bytes = zone,
                        .zone_cap_bytes = cap, .max_open_zones = max_open,
                        .zone_written = zm_written, .opaque = m };
}

/* Applies io to the model as a ZNS device would, asserting it is legal there. */
static void zm_apply(ZModel *m, const SimIo *io)
{
    uint64_t z = io->offset / m->zone, in = io->offset % m->zone;

    g_assert_cmpuint(z, <, m->nr);
    switch (io->op) {
    case SIM_OP_WRITE:
        g_assert_cmpuint(in, ==, m->wp[z]);             /* at the write pointer */
        g_assert_cmpuint(in + io->len, <=, m->cap);     /* within the zone's capacity */
        g_assert_cmpuint(io->len, >, 0);
        m->wp[z] += io->len;
        break;
    case SIM_OP_READ:
        g_assert_cmpuint(in + io->len, <=, m->wp[z]);   /* written data only */
        g_assert_cmpuint(io->len, >, 0);
        break;
    case SIM_OP_ZONE_RESET:
        g_assert_cmpuint(in, ==, 0);
        g_assert_cmpuint(io->len, ==, m->zone);
        m->wp[z] = 0;
        break;
    case SIM_OP_ZONE_FINISH:
        g_assert_cmpuint(in, ==, 0);
        g_assert_cmpuint(io->len, ==, m->zone);
        m->wp[z] = m->cap;
        break;
    default:
        g_assert_not_reached();
    }
}

static uint32_t zm_open_in(const ZModel *m, uint32_t from, uint32_t to)
{
    uint32_t n = 0;

    for (uint32_t z = from; z < to; z++) {
        n += m->wp[z] > 0 && m->wp[z] < m->cap;
    }
    return n;
}

static uint32_t zm_open(const ZModel *m)
{
    return zm_open_in(m, 0, m->nr);
}

static void test_zbd_seq_write(void)
{
    ZModel m = { 0 };
    SimTarget t = zoned_target(&m, 8, MiB, 768 * KiB, 0);
    SimJobFile *f = parse_ok("[j]\nrw=write\nzonemode=zbd\nbs=64k\nsize=4m\noffset=1m\n"
                             "io_size=6m\n");
    SimGen *g;
    SimIo io;
    int resets = 0, writes = 0;
    uint64_t zone_seq[64], nz = 0;

    m.wp[1] = 128 * KiB;        /* partly written */
    m.wp[2] = 768 * KiB;        /* full */
    g = gen_ok(f, 0, 0, &t);
    while (sim_gen_next(g, 0, &io)) {
        uint64_t z = io.offset / MiB;

        zm_apply(&m, &io);
        g_assert_cmpuint(z, >=, 1);
        g_assert_cmpuint(z, <, 5);
        if (io.op == SIM_OP_ZONE_RESET) {
            resets++;
        } else {
            g_assert_cmpint(io.op, ==, SIM_OP_WRITE);
            g_assert_cmpuint(io.len, ==, 64 * KiB);
            writes++;
            if (!nz || zone_seq[nz - 1] != z) {
                zone_seq[nz++] = z;
            }
        }
    }
    /*
     * 96 writes of 64k: zone 1 from its write pointer (10), full zone 2 reset (12), 3 and
     * 4 (12 each); then around again, each zone reset first: 1, 2, 3, 4 (12 each), 1 (2).
     */
    g_assert_cmpuint(writes, ==, 6 * MiB / (64 * KiB));
    g_assert_cmpuint(nz, ==, 9);
    for (int i = 0; i < 9; i++) {
        g_assert_cmpuint(zone_seq[i], ==, 1 + i % 4);
    }
    g_assert_cmpint(resets, ==, 6);
    g_assert_cmpuint(m.wp[1], ==, 128 * KiB);
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_zbd_remainder(void)
{
    ZModel m = { 0 };
    SimTarget t = zoned_target(&m, 4, MiB, 100 * KiB, 0);
    SimJobFile *f = parse_ok("[j]\nrw=write\nzonemode=zbd\nbs=64k\nio_size=256k\n"
                             "[s]\nrw=write\nzonemode=zbd\nbssplit=64k/50:16k/50\n"
                             "io_size=1m\n");
    SimGen *g = gen_ok(f, 0, 0, &t);
    SimIo io;
    int finishes = 0;

    /* 100k of capacity: one 64k write, then less than a block: the zone is finished */
    while (sim_gen_next(g, 0, &io)) {
        zm_apply(&m, &io);
        finishes += io.op == SIM_OP_ZONE_FINISH;
        if (io.op == SIM_OP_WRITE) {
            g_assert_cmpuint(io.offset % MiB, ==, 0);
        }
    }
    g_assert_cmpint(finishes, ==, 3);   /* the job ends after the fourth write */
    sim_gen_free(g);

    /* with 16k the smallest size, a 64k write is cut to what the zone has left */
    memset(m.wp, 0, sizeof(m.wp));
    g = gen_ok(f, 1, 0, &t);
    finishes = 0;
    while (sim_gen_next(g, 0, &io)) {
        zm_apply(&m, &io);
        finishes += io.op == SIM_OP_ZONE_FINISH;
        if (io.op == SIM_OP_WRITE) {
            g_assert_cmpuint(io.len % (16 * KiB), ==, 0);
        }
    }
    g_assert_cmpint(finishes, >, 0);
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_zbd_random_write(void)
{
    ZModel m = { 0 };
    SimTarget t = zoned_target(&m, 32, 256 * KiB, 192 * KiB, 5);
    SimJobFile *f = parse_ok("[j]\nrw=randwrite\nzonemode=zbd\nbs=16k\nmax_open_zones=3\n"
                             "io_size=20m\n"
                             "[t]\nrw=randwrite\nzonemode=zbd\nbs=16k\nio_size=4m\n");
    SimGen *g;
    SimIo io;
    int resets = 0, writes = 0;
    uint8_t touched[32] = { 0 };

    m.wp[7] = 64 * KiB;
    g = gen_ok(f, 0, 0, &t);
    while (sim_gen_next(g, 0, &io)) {
        zm_apply(&m, &io);
        /* the job's max_open_zones, below the namespace's */
        g_assert_cmpuint(zm_open(&m), <=, 3);
        if (io.op == SIM_OP_ZONE_RESET) {
            resets++;
        } else if (io.op == SIM_OP_WRITE) {
            writes++;
            touched[io.offset / t.zone_bytes] = 1;
        }
    }
    g_assert_cmpint(writes, ==, 20 * MiB / (16 * KiB));
    /* 20 MiB through 6 MiB of capacity: zones are reset and written again */
    g_assert_cmpint(resets, >, 0);
    /* the zone of a random offset opens when one is free: zones all over the region */
    {
        int n = 0;

        for (int z = 0; z < 32; z++) {
            n += touched[z];
        }
        g_assert_cmpint(n, >=, 24);
    }
    sim_gen_free(g);

    /* no job limit: the namespace's */
    memset(m.wp, 0, sizeof(m.wp));
    g = gen_ok(f, 1, 0, &t);
    while (sim_gen_next(g, 0, &io)) {
        zm_apply(&m, &io);
        g_assert_cmpuint(zm_open(&m), <=, 5);
    }
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_zbd_reads(void)
{
    ZModel m = { 0 };
    SimTarget t = zoned_target(&m, 16, 256 * KiB, 256 * KiB, 4);
    SimJobFile *f = parse_ok("[rr]\nrw=randread\nzonemode=zbd\nbs=16k\ntime_based\n"
                             "[sr]\nrw=read\nzonemode=zbd\nbs=16k\ntime_based\n"
                             "[mix]\nrw=randrw\nzonemode=zbd\nbs=16k\nio_size=16m\n"
                             "[empty]\nrw=read\nzonemode=zbd\n");
    SimGen *g;
    SimIo io;
    uint8_t hit[16] = { 0 };
    int reads = 0, writes = 0;

    m.wp[3] = 64 * KiB;
    m.wp[4] = 256 * KiB;
    m.wp[10] = 48 * KiB;
    g = gen_ok(f, 0, 0, &t);
    for (int i = 0; i < 5000; i++) {
        g_assert_true(sim_gen_next(g, 0, &io));
        g_assert_cmpint(io.op, ==, SIM_OP_READ);
        zm_apply(&m, &io);
        hit[io.offset / t.zone_bytes] = 1;
    }
    g_assert_true(hit[3] && hit[4] && hit[10]);
    sim_gen_free(g);

    /* sequential: the written part of each zone, in order, skipping empty zones */
    g = gen_ok(f, 1, 0, &t);
    {
        uint64_t want[] = { 3 * 256 * KiB, 3 * 256 * KiB + 16 * KiB, 3 * 256 * KiB + 32 * KiB,
                            3 * 256 * KiB + 48 * KiB, 4 * 256 * KiB };

        for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
            g_assert_true(sim_gen_next(g, 0, &io));
            g_assert_cmpuint(io.offset, ==, want[i]);
            zm_apply(&m, &io);
        }
        for (int i = 0; i < 15 + 3; i++) {
            g_assert_true(sim_gen_next(g, 0, &io));
            zm_apply(&m, &io);
        }
        g_assert_cmpuint(io.offset, ==, 10 * 256 * KiB + 32 * KiB);
        g_assert_true(sim_gen_next(g, 0, &io));
        g_assert_cmpuint(io.offset, ==, 3 * 256 * KiB);     /* around again */
    }
    sim_gen_free(g);

    /* mixed: reads only where the job or others wrote */
    g = gen_ok(f, 2, 0, &t);
    while (sim_gen_next(g, 0, &io)) {
        zm_apply(&m, &io);
        g_assert_cmpuint(zm_open(&m), <=, 4 + 2);   /* + zones 3 and 10, partly written */
        reads += io.op == SIM_OP_READ;
        writes += io.op == SIM_OP_WRITE;
    }
    g_assert_cmpint(reads, >, 400);
    g_assert_cmpint(writes, >, 400);
    sim_gen_free(g);

    /* nothing written at all: a read job has nothing to do */
    memset(m.wp, 0, sizeof(m.wp));
    g = gen_ok(f, 3, 0, &t);
    g_assert_false(sim_gen_next(g, 0, &io));
    sim_gen_free(g);
    sim_jobfile_free(f);
}

static void test_zbd_numjobs(void)
{
    ZModel m = { 0 };
    SimTarget t = zoned_target(&m, 32, 256 * KiB, 256 * KiB, 6);
    SimJobFile *f = parse_ok("[j]\nrw=randwrite\nzonemode=zbd\nnumjobs=2\nsize=4m\n"
                             "offset_increment=4m\nio_size=8m\nthinktime=5\n");

    for (uint32_t c = 0; c < 2; c++) {
        SimGen *g = gen_ok(f, 0, c, &t);
        SimIo io;
        int resets = 0;

        while (sim_gen_next(g, 1000, &io)) {
            zm_apply(&m, &io);
            /* each clone in its own 16 zones, with half the namespace's open zones */
            g_assert_cmpuint(io.offset / t.zone_bytes, >=, c * 16);
            g_assert_cmpuint(io.offset / t.zone_bytes, <, c * 16 + 16);
            g_assert_cmpuint(zm_open_in(&m, c * 16, c * 16 + 16), <=, 3);
            if (io.op == SIM_OP_ZONE_RESET) {
                resets++;
                /* the reset comes first in its turn: it carries the thinktime wait */
                g_assert_cmpuint(io.not_before_ns, ==, 1000 + 5000);
                g_assert_true(sim_gen_next(g, 1000, &io));
                g_assert_cmpint(io.op, ==, SIM_OP_WRITE);
                g_assert_cmpuint(io.not_before_ns, ==, 0);
                zm_apply(&m, &io);
            }
        }
        g_assert_cmpint(resets, >, 0);
        sim_gen_free(g);
    }
    sim_jobfile_free(f);
}

/* ---- FDP ---- */

static void test_fdp(void)
{
    SimJobFile *f = parse_ok("[rr]\nrw=randrw\nfdp=1\nfdp_pli=2,0\ntime_based\n"
                             "[rand]\nrw=write\nfdp=1\nfdp_pli=1-3\nfdp_pli_select=random\n"
                             "time_based\n"
                             "[all]\nrw=write\ndataplacement=fdp\ntime_based\n"
                             "[off]\nrw=write\nfdp_pli=1\ntime_based\n");
    SimTarget t = plain_target(GiB);
    uint32_t next = 0, counts[8] = { 0 };
    SimGen *g;
    SimIo io;

    t.nr_plids = 4;
    g = gen_ok(f, 0, 0, &t);
    for (int i = 0; i < 1000; i++) {
        g_assert_true(sim_gen_next(g, 0, &io));
        if (io.op == SIM_OP_READ) {
            g_assert_cmpuint(io.plid, ==, SIM_NO_PLID);
        } else {
            g_assert_cmpuint(io.plid, ==, next ? 2 : 0);    /* sorted: 0, 2, 0, 2 ... */
            next ^= 1;
        }
    }
    sim_gen_free(g);

    g = gen_ok(f, 1, 0, &t);
    for (int i = 0; i < 3000; i++) {
        g_assert_true(sim_gen_next(g, 0, &io));
        g_assert_cmpuint(io.plid, >=, 1);
        g_assert_cmpuint(io.plid, <=, 3);
        counts[io.plid]++;
    }
    for (int p = 1; p <= 3; p++) {
        g_assert_cmpuint(counts[p], >, 850);
    }
    sim_gen_free(g);

    g = gen_ok(f, 2, 0, &t);            /* every placement id of the namespace */
    for (uint32_t i = 0; i < 8; i++) {
        g_assert_true(sim_gen_next(g, 0, &io));
        g_assert_cmpuint(io.plid, ==, i % 4);
    }
    sim_gen_free(g);

    g = gen_ok(f, 3, 0, &t);            /* fdp_pli without fdp=1: no placement */
    g_assert_true(sim_gen_next(g, 0, &io));
    g_assert_cmpuint(io.plid, ==, SIM_NO_PLID);
    sim_gen_free(g);
    sim_jobfile_free(f);
}

/* ---- traces ---- */

static SimJobFile *trace_job(const char *path, const char *extra)
{
    char *text = g_strdup_printf("[replay]\nread_iolog=%s\n%s", path, extra);
    SimJobFile *f = parse_ok(text);

    g_free(text);
    return f;
}

static void trace_fails(const char *name, const char *content, const SimTarget *t,
                        const char *expect)
{
    char *path = write_tmp(name, content);
    SimJobFile *f = trace_job(path, "");
    char *err = NULL, *want = g_strdup_printf("%s%s", path, expect);

    g_assert_null(sim_gen_new(&f->jobs[0], 0, t, &err));
    g_assert_nonnull(err);
    if (!strstr(err, expect) || (expect[0] == ':' && !g_str_has_prefix(err, want))) {
        g_test_message("error '%s' lacks '%s'", err, want);
        g_assert_not_reached();
    }
    g_free(want);
    g_free(err);
    sim_jobfile_free(f);
    g_free(path);
}

static const char blk_trace[] =
    "  8,0    1        1     0.000000000  1234  A   W 2048 + 8 <- (8,1) 0\n"
    "  8,0    1        2     0.000000000  1234  Q   W 2048 + 8 [fio]\n"
    "  8,0    1        3     0.000001000  1234  G   W 2048 + 8 [fio]\n"
    "  8,0    1        4     0.000002000  1234  P   N [fio]\n"
    "  8,0    1        5     0.000010000  1234  Q  WS 4096 + 16 [fio]\n"
    "  8,0    1        6     0.000011000  1234  D   W 2048 + 8 [fio]\n"
    "  8,0    0        1     0.000500000  99  Q  RA 0 + 256 [kworker/u8:2]\n"
    "  8,0    0        2     0.001000000  99  Q FWS [kworker/0:1H]\n"
    "  8,0    0        3     0.002000000  99  Q   D 8192 + 2048 [fstrim]\n"
    "  8,0    0        4     0.002000000  99  C   D 8192 + 2048 [0]\n"
    "  8,0    1        7     1.500000000  1234  Q FWFS 16 + 8 [jbd2/sda1-8]\n"
    "  8,0    1        8     1.600000000  1234  Q   R 9 + 3 [fio]\n"
    "  8,0    1        0     1.600000001     0  m   N cfq1234 some message\n"
    "\n"
    "CPU0 (8,0):\n"
    " Reads Queued:           1,      128KiB\t Writes Queued:           0,        0KiB\n"
    "Total (8,0):\n"
    "Throughput (R/W): 0KiB/s / 0KiB/s\n"
    "Events (8,0): 13 entries\n";

static void test_trace_blkparse(void)
{
    char *path = write_tmp("trace.blk", blk_trace);
    SimJobFile *f = trace_job(path, "");
    SimTarget t = plain_target(GiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    static const SimIo want[] = {
        { SIM_OP_WRITE, 2048 * 512, 4096, SIM_NO_PLID, 5000 },
        { SIM_OP_WRITE, 4096 * 512, 8192, SIM_NO_PLID, 5000 + 10000 },
        { SIM_OP_READ, 0, 128 * 1024, SIM_NO_PLID, 5000 + 500000 },
        { SIM_OP_FLUSH, 0, 0, SIM_NO_PLID, 5000 + 1000000 },
        { SIM_OP_TRIM, 8192 * 512, 1024 * 1024, SIM_NO_PLID, 5000 + 2000000 },
        { SIM_OP_FLUSH, 0, 0, SIM_NO_PLID, 5000 + 1500000000 },     /* preflush ... */
        { SIM_OP_WRITE, 8192, 4096, SIM_NO_PLID, 5000 + 1500000000, true },  /* ... FUA */
        /* sectors 9..11: LBA-aligned outwards to 4k..8k */
        { SIM_OP_READ, 4096, 4096, SIM_NO_PLID, 5000 + 1600000000 },
    };
    SimIo io;

    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_assert_true(sim_gen_next(g, 5000 + i, &io));
        g_assert_cmpint(io.op, ==, want[i].op);
        g_assert_cmpuint(io.offset, ==, want[i].offset);
        g_assert_cmpuint(io.len, ==, want[i].len);
        g_assert_cmpuint(io.plid, ==, want[i].plid);
        g_assert_cmpuint(io.not_before_ns, ==, want[i].not_before_ns);
        g_assert_cmpint(io.fua, ==, want[i].fua);
    }
    g_assert_false(sim_gen_next(g, 0, &io));
    sim_gen_free(g);
    sim_jobfile_free(f);

    /* replay_no_stall: as fast as the queue allows; fdp=1: writes get placement ids */
    f = trace_job(path, "replay_no_stall=1\nfdp=1\n");
    t.nr_plids = 2;
    g = gen_ok(f, 0, 0, &t);
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_assert_true(sim_gen_next(g, 77, &io));
        g_assert_cmpint(io.op, ==, want[i].op);
        g_assert_cmpuint(io.not_before_ns, ==, 0);
        if (io.op == SIM_OP_WRITE) {
            g_assert_cmpuint(io.plid, <, 2);
        } else {
            g_assert_cmpuint(io.plid, ==, SIM_NO_PLID);
        }
    }
    g_assert_false(sim_gen_next(g, 0, &io));
    sim_gen_free(g);
    sim_jobfile_free(f);
    g_free(path);

    /* no Q events: the D (dispatch) events */
    path = write_tmp("dispatch.blk",
                     "259,0    3        1     10.250000000  77  D  WS 64 + 8 [fio]\n"
                     "259,0    3        2     10.250100000  77  C  WS 64 + 8 [0]\n"
                     "259,0    3        3     10.251000000  77  D   R 128 + 8\n");
    f = trace_job(path, "");
    g = gen_ok(f, 0, 0, &t);
    g_assert_true(sim_gen_next(g, 0, &io));
    g_assert_true(io.op == SIM_OP_WRITE && io.offset == 64 * 512 && io.not_before_ns == 0);
    g_assert_true(sim_gen_next(g, 0, &io));
    g_assert_true(io.op == SIM_OP_READ && io.offset == 128 * 512);
    g_assert_cmpuint(io.not_before_ns, ==, 1000000);
    g_assert_false(sim_gen_next(g, 0, &io));
    sim_gen_free(g);
    sim_jobfile_free(f);
    g_free(path);
}

static void test_trace_csv(void)
{
    char *path = write_tmp("trace.csv",
                           "# a comment\n"
                           "0.5,write,4096,8192\n"
                           "0.75, R ,0,4096\n"
                           "1.000000001,trim,1048576,1048576\n"
                           "1.25,flush,,\n"
                           "2,F,0,0\n"
                           "2.5,zone_reset,1048576,0\n"
                           "2.5,ZF,2097152,999\n"
                           "3,w,100,100\n"
                           "3.5,power_cut,,\n"
                           "4,PC,0,0\n");
    SimJobFile *f = trace_job(path, "");
    ZModel m = { 0 };
    SimTarget t = zoned_target(&m, 4, MiB, MiB, 0);
    SimGen *g = gen_ok(f, 0, 0, &t);
    static const SimIo want[] = {
        { SIM_OP_WRITE, 4096, 8192, SIM_NO_PLID, 10 },
        { SIM_OP_READ, 0, 4096, SIM_NO_PLID, 10 + 250000000 },
        { SIM_OP_TRIM, MiB, MiB, SIM_NO_PLID, 10 + 500000001 },
        { SIM_OP_FLUSH, 0, 0, SIM_NO_PLID, 10 + 750000000 },
        { SIM_OP_FLUSH, 0, 0, SIM_NO_PLID, 10 + 1500000000 },
        { SIM_OP_ZONE_RESET, MiB, MiB, SIM_NO_PLID, 10 + 2000000000 },
        { SIM_OP_ZONE_FINISH, 2 * MiB, MiB, SIM_NO_PLID, 10 + 2000000000 },
        { SIM_OP_WRITE, 0, 4096, SIM_NO_PLID, 10 + 2500000000ull },
        { SIM_OP_POWER_CUT, 0, 0, SIM_NO_PLID, 10 + 3000000000ull },
        { SIM_OP_POWER_CUT, 0, 0, SIM_NO_PLID, 10 + 3500000000ull },
    };
    SimIo io;

    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_assert_true(sim_gen_next(g, i ? 99999 : 10, &io));
        g_assert_cmpint(io.op, ==, want[i].op);
        g_assert_cmpuint(io.offset, ==, want[i].offset);
        g_assert_cmpuint(io.len, ==, want[i].len);
        g_assert_cmpuint(io.not_before_ns, ==, want[i].not_before_ns);
    }
    g_assert_false(sim_gen_next(g, 0, &io));
    sim_gen_free(g);
    sim_jobfile_free(f);
    g_free(path);

    /* a header names the time unit */
    path = write_tmp("trace-ns.csv", "# comments before the header\n\ntime_ns,op,offset,length\n"
                     "1000,read,0,4096\n1500,write,8192,4096\n");
    f = trace_job(path, "");
    t = plain_target(MiB);
    g = gen_ok(f, 0, 0, &t);
    g_assert_true(sim_gen_next(g, 7, &io));
    g_assert_cmpuint(io.not_before_ns, ==, 7);
    g_assert_true(sim_gen_next(g, 7, &io));
    g_assert_cmpuint(io.not_before_ns, ==, 7 + 500);
    g_assert_false(sim_gen_next(g, 7, &io));
    sim_gen_free(g);
    sim_jobfile_free(f);
    g_free(path);

    path = write_tmp("trace-us.csv", "Time_us, op, offset, len\n3,write,0,4096\n"
                     "4.5,write,4096,4096\n");
    f = trace_job(path, "");
    g = gen_ok(f, 0, 0, &t);
    g_assert_true(sim_gen_next(g, 0, &io));
    g_assert_true(sim_gen_next(g, 0, &io));
    g_assert_cmpuint(io.not_before_ns, ==, 1500);
    sim_gen_free(g);
    sim_jobfile_free(f);
    g_free(path);
}

static void test_trace_time_based(void)
{
    char *path = write_tmp("loop.csv", "1,write,0,4096\n1.5,write,4096,4096\n2,read,0,4096\n");
    SimJobFile *f = trace_job(path, "time_based\n");
    SimTarget t = plain_target(MiB);
    SimGen *g = gen_ok(f, 0, 0, &t);
    SimIo io;

    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < 3; i++) {
            g_assert_true(sim_gen_next(g, 0, &io));
            g_assert_cmpuint(io.not_before_ns, ==, pass * 1000000000ull + i * 500000000ull);
        }
    }
    sim_gen_free(g);
    sim_jobfile_free(f);
    g_free(path);
}

static void test_trace_errors(void)
{
    SimTarget t = plain_target(MiB);
    char *err = NULL, *missing = g_build_filename(tmpdir, "nope.csv", NULL);
    SimJobFile *f = trace_job(missing, "");

    g_assert_null(sim_gen_new(&f->jobs[0], 0, &t, &err));
    g_assert_nonnull(strstr(err, "nope.csv"));
    g_free(err);
    g_free(missing);
    sim_jobfile_free(f);

    trace_fails("a.csv", "0,write,0,4096\n0.1,write,0\n", &t, ":2: 3 fields (expected "
                "time,op,offset,length)");
    trace_fails("b.csv", "0,write,0,4096\n0.1,append,0,4096\n", &t, ":2: bad op 'append' "
                "(allowed: read, write, write_fua, zone_append, zone_append_fua, trim, flush, "
                "zone_reset, zone_finish, power_cut, write_zeroes, compare, or R, W, WF, ZA, ZAF, "
                "T, F, ZR, ZF, PC, WZ, C)");
    trace_fails("c.csv", "0,write,0,4096\n-1,write,0,4096\n", &t, ":2: bad time '-1'");
    trace_fails("d.csv", "0,write,0,4096\n1,write,0x10,4096\n", &t, ":2: bad offset '0x10'");
    trace_fails("e.csv", "0,write,0,4096\n1,write,0,0\n", &t, ":2: length 0 for a write");
    trace_fails("f.csv", "0,write,0,4096\n1,write,1044480,8192\n", &t, ":2: I/O at 1044480 "
                "+ 8192 bytes is beyond the namespace (1048576 bytes)");
    trace_fails("g.csv", "0,zone_reset,0,0\n", &t, ":1: a zone operation on a namespace "
                "that is not zoned");
    trace_fails("h.csv", "when,op,offset,length\n", &t, ":1: bad header 'when,op,offset,"
                "length'");
    trace_fails("i.csv", "time,op,offset,length\n", &t, "no I/O in the trace");
    trace_fails("j.csv", "0,write,0,4096,extra\n", &t, ":1: more than 4 fields");
    trace_fails("k.blk", "  8,0    1        1     0.000000000  1234  Q   W 16 + 8 [fio]\n"
                "garbage here\n", &t, ":2: not a blkparse event line");
    trace_fails("l.blk", "  8,0    1        1     0.000000000  1234  Q   W 2048 + x [fio]\n",
                &t, ":1: bad sector range '2048 + x'");
    trace_fails("m.blk", "  8,0    1        1     0.000000000  1234  Q   W 4096 + 8 [fio]\n",
                &t, ":1: I/O at 2097152 + 4096 bytes is beyond the namespace");
    trace_fails("n.blk", "  8,0    1        1     0.000000000  1234  Q   W 0 + 8 [fio]\n"
                "  8,16   1        2     0.000000000  1234  Q   W 0 + 8 [fio]\n", &t,
                ":2: events of two devices (8,0 and 8,16)");
    trace_fails("o.log", "fio version 2 iolog\n/dev/sda add\n", &t, ":1: fio's own iolog "
                "format is not supported");
    trace_fails("p.txt", "hello world\n", &t, ":1: neither a blkparse event line nor CSV");
    {
        ZModel m = { 0 };
        SimTarget z = zoned_target(&m, 4, 256 * KiB, 256 * KiB, 0);

        trace_fails("q.csv", "0,zone_finish,4096,0\n", &z, ":1: zone operation at 4096, "
                    "not the start of a zone");
        trace_fails("s.csv", "0,za,0,4096\n0,zone_append,4096,4096\n", &z, ":2: zone append "
                    "at 4096, not the start of a zone");
        trace_fails("t.csv", "0,ZAF,0,4096\n0,za,262144,266240\n", &z, ":2: zone append of "
                    "266240 bytes: not whole LBAs of 4096 bytes or beyond a zone's capacity "
                    "(262144 bytes)");
        trace_fails("u.csv", "0,za,0,100\n", &z, ":1: zone append of 100 bytes: not whole");
        trace_fails("v.csv", "0,zone_append,0,0\n", &z, ":1: length 0 for a zone_append");
    }
    trace_fails("w.csv", "0,zone_append,0,4096\n", &t, ":1: a zone append on a namespace "
                "that is not zoned");
    {
        GString *s = g_string_new("0,write,0,4096\n");

        g_string_append_printf(s, "1,write,0,4096%5000s\n", "");
        trace_fails("r.csv", s->str, &t, ":2: line longer than 4095 bytes");
        g_string_free(s, TRUE);
    }
}

/*
 * Zone appends go as writes at their zone's write pointer: the namespace's when the trace
 * first uses the zone, then as the trace's own writes, appends, resets and finishes move
 * it (the namespace's again after a power cut, and when a time_based trace starts over).
 * FUA reaches the I/O.
 */
static void test_trace_zone_append(void)
{
    char *path = write_tmp("append.csv",
                           "0,write,0,8192\n"          /* zone 0: written by the trace */
                           "0,zone_append,0,4096\n"
                           "0,ZA,262144,4096\n"        /* zone 1: 12 KiB written before */
                           "0,zone_append_fua,0,4096\n"
                           "0,write_fua,16384,4096\n"
                           "0,zone_reset,0,0\n"
                           "0,za,0,8192\n"
                           "0,zone_finish,524288,0\n"
                           "0,za,524288,4096\n"        /* no room: at the start, refused */
                           "0,ZAF,786432,262144\n"     /* a whole zone */
                           "0,power_cut,,\n"
                           "0,za,0,4096\n");          /* where the drive left zone 0 */
    SimJobFile *f = trace_job(path, "time_based\n");
    ZModel m = { 0 };
    SimTarget t = zoned_target(&m, 4, 256 * KiB, 256 * KiB, 0);
    SimGen *g;
    static const SimIo want[] = {
        { SIM_OP_WRITE, 0, 8192, SIM_NO_PLID, 0 },
        { SIM_OP_WRITE, 8192, 4096, SIM_NO_PLID, 0 },
        { SIM_OP_WRITE, 262144 + 12288, 4096, SIM_NO_PLID, 0 },
        { SIM_OP_WRITE, 12288, 4096, SIM_NO_PLID, 0, true },
        { SIM_OP_WRITE, 16384, 4096, SIM_NO_PLID, 0, true },
        { SIM_OP_ZONE_RESET, 0, 262144, SIM_NO_PLID, 0 },
        { SIM_OP_WRITE, 0, 8192, SIM_NO_PLID, 0 },
        { SIM_OP_ZONE_FINISH, 524288, 262144, SIM_NO_PLID, 0 },
        { SIM_OP_WRITE, 524288, 4096, SIM_NO_PLID, 0 },
        { SIM_OP_WRITE, 786432, 262144, SIM_NO_PLID, 0, true },
        { SIM_OP_POWER_CUT, 0, 0, SIM_NO_PLID, 0 },
        { SIM_OP_WRITE, 20480, 4096, SIM_NO_PLID, 0 },
    };
    SimIo io;

    m.wp[1] = 12288;
    g = gen_ok(f, 0, 0, &t);
    for (int pass = 0; pass < 2; pass++) {
        for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
            g_assert_true(sim_gen_next(g, 0, &io));
            if (io.op == SIM_OP_POWER_CUT) {
                m.wp[0] = 20480;        /* what the drive kept of zone 0 */
            }
            g_assert_cmpint(io.op, ==, want[i].op);
            /* the second pass: zone 1 from where the drive says (the first pass's append) */
            g_assert_cmpuint(io.offset, ==, want[i].offset + (pass && i == 2 ? 4096 : 0));
            g_assert_cmpuint(io.len, ==, want[i].len);
            g_assert_cmpint(io.fua, ==, want[i].fua);
            if (i == 2) {
                m.wp[1] += 4096;        /* the drive wrote it */
            }
        }
        m.wp[0] = 0;                    /* as if the drive reset zone 0 before the next pass */
    }
    sim_gen_free(g);
    sim_jobfile_free(f);
    g_free(path);
}

/* The trace is streamed: a long one replays in a bounded buffer (and quickly). */
static void test_trace_long(void)
{
    char *path = g_build_filename(tmpdir, "long.csv", NULL);
    FILE *fp = fopen(path, "w");
    SimJobFile *f;
    SimTarget t = plain_target(GiB);
    SimGen *g;
    SimIo io;
    uint64_t n = 0;

    g_assert_nonnull(fp);
    for (int i = 0; i < 200000; i++) {
        fprintf(fp, "%d.%06d,%s,%d,4096\n", i / 1000000, i % 1000000, i % 3 ? "w" : "r",
                (i % 1000) * 4096);
    }
    fclose(fp);
    f = trace_job(path, "");
    g = gen_ok(f, 0, 0, &t);
    while (sim_gen_next(g, 0, &io)) {
        g_assert_cmpuint(io.not_before_ns, ==, n * 1000);
        n++;
    }
    g_assert_cmpuint(n, ==, 200000);
    sim_gen_free(g);
    sim_jobfile_free(f);
    g_free(path);
}

int main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    tmpdir = g_dir_make_tmp("test-sim-jobfile-XXXXXX", NULL);
    g_assert_nonnull(tmpdir);

    g_test_add_func("/sim/jobfile/sections", test_parse_sections);
    g_test_add_func("/sim/jobfile/defaults", test_parse_defaults);
    g_test_add_func("/sim/jobfile/rw", test_parse_rw);
    g_test_add_func("/sim/jobfile/rwmix", test_parse_rwmix);
    g_test_add_func("/sim/jobfile/bs", test_parse_bs);
    g_test_add_func("/sim/jobfile/bssplit", test_parse_bssplit);
    g_test_add_func("/sim/jobfile/sizes", test_parse_sizes);
    g_test_add_func("/sim/jobfile/times", test_parse_times);
    g_test_add_func("/sim/jobfile/misc", test_parse_misc);
    g_test_add_func("/sim/jobfile/ignored", test_parse_ignored);
    g_test_add_func("/sim/jobfile/errors", test_parse_errors);
    g_test_add_func("/sim/jobfile/load", test_load);
    g_test_add_func("/sim/gen/seq", test_seq);
    g_test_add_func("/sim/gen/seq-tail", test_seq_default_size_and_tail);
    g_test_add_func("/sim/gen/numjobs", test_numjobs_offset_increment);
    g_test_add_func("/sim/gen/refusals", test_gen_refusals);
    g_test_add_func("/sim/gen/random-map", test_random_map);
    g_test_add_func("/sim/gen/random-map-shared", test_random_map_shared);
    g_test_add_func("/sim/gen/norandommap", test_norandommap);
    g_test_add_func("/sim/gen/rwmix", test_rwmix);
    g_test_add_func("/sim/gen/bssplit", test_bssplit_gen);
    g_test_add_func("/sim/gen/zipf-pareto", test_zipf_pareto);
    g_test_add_func("/sim/gen/determinism", test_determinism);
    g_test_add_func("/sim/gen/thinktime", test_thinktime);
    g_test_add_func("/sim/gen/fsync", test_fsync);
    g_test_add_func("/sim/gen/trim", test_trim);
    g_test_add_func("/sim/gen/time-based", test_time_based);
    g_test_add_func("/sim/zbd/seq-write", test_zbd_seq_write);
    g_test_add_func("/sim/zbd/remainder", test_zbd_remainder);
    g_test_add_func("/sim/zbd/random-write", test_zbd_random_write);
    g_test_add_func("/sim/zbd/reads", test_zbd_reads);
    g_test_add_func("/sim/zbd/numjobs", test_zbd_numjobs);
    g_test_add_func("/sim/fdp/plids", test_fdp);
    g_test_add_func("/sim/trace/blkparse", test_trace_blkparse);
    g_test_add_func("/sim/trace/csv", test_trace_csv);
    g_test_add_func("/sim/trace/time-based", test_trace_time_based);
    g_test_add_func("/sim/trace/errors", test_trace_errors);
    g_test_add_func("/sim/trace/zone-append", test_trace_zone_append);
    g_test_add_func("/sim/trace/long", test_trace_long);
    rc = g_test_run();

    {
        GDir *d = g_dir_open(tmpdir, 0, NULL);
        const char *name;

        while (d && (name = g_dir_read_name(d))) {
            char *p = g_build_filename(tmpdir, name, NULL);

            g_unlink(p);
            g_free(p);
        }
        if (d) {
            g_dir_close(d);
        }
        g_rmdir(tmpdir);
        g_free(tmpdir);
    }
    return rc;
}
