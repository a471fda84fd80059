/*
 * plp-load: the write load of the power-cut tests. It writes sequentially to several
 * zones of a zoned NVMe namespace, round-robin, one command at a time (queue depth 1, so
 * at most one command is in flight when the power goes), with the protected flag on a
 * random share of the writes, a Flush every N writes, and a reset of each zone that
 * fills up. It prints one line per ACKNOWLEDGED event on stdout, flushed and drained to
 * the serial port before the next command: the
 * host reads them from the serial console and may cut the power at any moment, so a
 * line that reached the host is a completion the device gave.
 *
 * Output (LBAs in the namespace's LBA size; "*hh" ends every event line: the XOR of the
 * line's bytes before " *", in hex, so that a line cut short by the power cut is seen):
 *
 *   # plp-load device=... nsid= lba_size= zone_size= zones= seed= gen= ...   the setup
 *   Z <zslba> <cap> <wp> <state>      each zone used, as the load found it
 *   S *hh                             start: nothing of this run written before it
 *   W <seq> <slba> <nlb> <durable> <gen> *hh
 *                                     a Write / Zone Append of nlb LBAs at slba completed;
 *                                     durable: the protected flag (CDW3 bit 0) was set
 *   F <seq> *hh                       a Flush completed: every W before it is durable
 *   r <zslba> *hh                     a zone reset is being issued (it may or may not
 *                                     happen if the power goes now)
 *   R <seq> <zslba> *hh               that reset completed
 *   D <seq> *hh                       done (time or count reached)
 *   E <message>                       a command failed; exit status 1
 *
 * seq counts the events W, F and R from 1. Every LBA written holds the pattern of
 * plp-pattern.h for (LBA, gen), so a checker regenerates any write from its W line.
 * A zone's gen is (G << 16) + the resets of that zone in this run, G from --gen (default
 * the seed): use a new G for each run that shares a drive with earlier runs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include "../cli/cli.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "plp-nvme.h"
#include "plp-pattern.h"

#define EXIT_FAIL 1
#define MAX_ZONES 1024

static const char usage_text[] =
"Usage: plp-load DEVICE --zones LIST [OPTIONS]\n"
"Power-cut test load: sequential writes to the zones in LIST (zone indexes, 'a-b,c'),\n"
"round-robin, queue depth 1; one line per acknowledged event on stdout (the format is\n"
"at the top of guest/plp/plp-load.c). DEVICE: /dev/nvmeXnY or /dev/ngXnY. Needs root.\n"
"\n"
"  --time SEC          stop after SEC seconds (default 10; 0: no limit)\n"
"  --count N           stop after N writes (default 0: no limit)\n"
"  --seed S            random seed (default 1)\n"
"  --gen G             generation base of this run's data (default: the seed)\n"
"  --p-durable P       probability of the protected flag per write, 0..1 (default 0.5)\n"
"  --p-append P        probability of Zone Append instead of Write (default 0)\n"
"  --p-reset P         probability that a zone which filled up is reset and used again\n"
"                      (default 1; otherwise it is left full and no longer written)\n"
"  --flush-every N     a Flush after every N writes (default 0: never)\n"
"  --bs BYTES          bytes per write, a multiple of the LBA size (default 4096)\n"
"  --bs-max BYTES      random sizes from --bs to BYTES, in LBAs (default --bs)\n"
"  --delay SEC         wait SEC seconds after the zone lines, before the first command\n"
"                      (default 0)\n"
"  help                this text\n"
"\n"
"A zone found full is reset first; a read-only or offline zone is an error.\n"
"Exit status: 0 done, 1 a command failed (an E line), 2 usage error.\n";

static double parse_double(const char *opt, const char *s, double min, double max)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= min && v <= max))
        cli_usage_error("%s must be a number in %g..%g (got '%s')", opt, min, max, s);
    return v;
}

/* "a-b,c" -> sorted unique indexes; returns how many */
static int parse_zone_list(const char *s, uint32_t *out)
{
    int n = 0;
    char *copy = strdup(s), *save = NULL;

    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(tok, '-');
        uint64_t a, b;
        if (dash) {
            *dash = 0;
            a = cli_parse_u64("--zones", tok, 0, UINT32_MAX);
            b = cli_parse_u64("--zones", dash + 1, a, UINT32_MAX);
        } else {
            a = b = cli_parse_u64("--zones", tok, 0, UINT32_MAX);
        }
        for (uint64_t z = a; z <= b; z++) {
            int dup = 0;
            for (int i = 0; i < n; i++)
                dup |= out[i] == z;
            if (dup)
                continue;
            if (n == MAX_ZONES)
                cli_usage_error("--zones: at most %d zones", MAX_ZONES);
            out[n++] = (uint32_t)z;
        }
    }
    free(copy);
    if (!n)
        cli_usage_error("--zones is empty");
    return n;
}

/* Event lines end with " *hh" (XOR of the bytes before it) and are flushed at once. */
static void event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void event(const char *fmt, ...)
{
    char line[160];
    unsigned x = 0;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    for (const char *p = line; *p; p++)
        x ^= (unsigned char)*p;
    printf("%s *%02x\n", line, x);
    fflush(stdout);
    /*
     * On a console, the line may still sit in the tty's buffer when the power is cut, and
     * its write is already on the drive: wait until the serial port has sent it, so that
     * no more than the one command in flight goes unlogged. (Not a tty: nothing to wait.)
     */
    tcdrain(STDOUT_FILENO);
}

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(void)
{
    return (rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct zone_use {
    uint64_t zslba, cap, wp, gen;
    int active;
};

static int fd;
static uint32_t nsid, lba_size;
static uint64_t seq;

static int reset_zone(struct zone_use *z)
{
    int st;

    event("r %" PRIu64, z->zslba);
    st = plp_reset_zone(fd, nsid, z->zslba);
    if (st) {
        printf("E reset of zone %" PRIu64 ": %s\n", z->zslba, plp_status_name(st));
        return -1;
    }
    z->wp = z->zslba;
    z->gen++;
    event("R %" PRIu64 " %" PRIu64, ++seq, z->zslba);
    return 0;
}

int main(int argc, char **argv)
{
    cli_prog = "plp-load";
    const char *dev = NULL, *zone_list = NULL;
    double time_limit = 10, p_durable = 0.5, p_append = 0, p_reset = 1, delay = 0;
    uint64_t count = 0, seed = 1, gen = 0, flush_every = 0, bs = 4096, bs_max = 0;
    int have_gen = 0, nz, active;
    static uint32_t idx[MAX_ZONES];
    static struct zone_use zones[MAX_ZONES];

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "-h")) {
        fputs(usage_text, stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (dev)
                cli_usage_error("unexpected argument '%s'", a);
            dev = a;
            continue;
        }
        if (!v)
            cli_usage_error("%s needs a value", a);
        i++;
        if (!strcmp(a, "--zones"))
            zone_list = v;
        else if (!strcmp(a, "--time"))
            time_limit = parse_double(a, v, 0, 1e7);
        else if (!strcmp(a, "--count"))
            count = cli_parse_u64(a, v, 0, UINT64_MAX);
        else if (!strcmp(a, "--seed"))
            seed = cli_parse_u64(a, v, 0, UINT64_MAX);
        else if (!strcmp(a, "--gen"))
            gen = cli_parse_u64(a, v, 0, (1ull << 47) - 1), have_gen = 1;
        else if (!strcmp(a, "--p-durable"))
            p_durable = parse_double(a, v, 0, 1);
        else if (!strcmp(a, "--p-append"))
            p_append = parse_double(a, v, 0, 1);
        else if (!strcmp(a, "--p-reset"))
            p_reset = parse_double(a, v, 0, 1);
        else if (!strcmp(a, "--flush-every"))
            flush_every = cli_parse_u64(a, v, 0, UINT32_MAX);
        else if (!strcmp(a, "--bs"))
            bs = cli_parse_u64(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--bs-max"))
            bs_max = cli_parse_u64(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--delay"))
            delay = parse_double(a, v, 0, 3600);
        else
            cli_usage_error("unknown option '%s'", a);
    }
    if (!dev)
        cli_usage_error("no DEVICE");
    if (!zone_list)
        cli_usage_error("--zones is required");
    if (!have_gen)
        gen = seed & ((1ull << 47) - 1);
    if (!bs_max)
        bs_max = bs;
    if (bs_max < bs)
        cli_usage_error("--bs-max must be at least --bs");
    nz = parse_zone_list(zone_list, idx);

    fd = open(dev, O_RDWR);
    if (fd < 0) {
        fprintf(stderr, "plp-load: %s: %s\n", dev, strerror(errno));
        return EXIT_USAGE;
    }
    nsid = plp_nsid(fd);
    lba_size = nsid ? plp_lba_size(fd, nsid) : 0;
    if (!lba_size || lba_size % PLP_PATTERN_UNIT) {
        fprintf(stderr, "plp-load: %s: not an NVMe namespace with a usable LBA size\n", dev);
        return EXIT_USAGE;
    }
    if (bs % lba_size || bs_max % lba_size)
        cli_usage_error("--bs and --bs-max must be multiples of the LBA size (%u)", lba_size);

    /* zone size from the first two zones, then each zone's descriptor */
    struct plp_zone zd[2];
    int n, st = plp_report_zones(fd, nsid, 0, zd, 2, &n);
    if (st || n < 1) {
        fprintf(stderr, "plp-load: %s: zone report failed (%s): not a zoned namespace?\n", dev,
                plp_status_name(st));
        return EXIT_USAGE;
    }
    uint64_t zsze = n == 2 ? zd[1].zslba - zd[0].zslba : zd[0].cap;
    printf("# plp-load device=%s nsid=%u lba_size=%u zone_size=%" PRIu64 " zones=%s seed=%"
           PRIu64 " gen=%" PRIu64 " p_durable=%g p_append=%g p_reset=%g flush_every=%" PRIu64
           " bs=%" PRIu64 " bs_max=%" PRIu64 " time=%g count=%" PRIu64 "\n",
           dev, nsid, lba_size, zsze, zone_list, seed, gen, p_durable, p_append, p_reset,
           flush_every, bs, bs_max, time_limit, count);
    for (int i = 0; i < nz; i++) {
        struct plp_zone z;
        st = plp_report_zones(fd, nsid, (uint64_t)idx[i] * zsze, &z, 1, &n);
        if (st || n != 1 || z.zslba != (uint64_t)idx[i] * zsze) {
            printf("E zone %u: no such zone (%s)\n", idx[i], plp_status_name(st));
            return EXIT_FAIL;
        }
        printf("Z %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", z.zslba, z.cap, z.wp,
               plp_zone_state_name(z.state));
        if (z.state == PLP_ZS_READ_ONLY || z.state == PLP_ZS_OFFLINE) {
            printf("E zone %u is %s\n", idx[i], plp_zone_state_name(z.state));
            return EXIT_FAIL;
        }
        zones[i] = (struct zone_use){ .zslba = z.zslba, .cap = z.cap, .wp = z.wp,
                                      .gen = gen << 16, .active = 1 };
        if (z.state == PLP_ZS_FULL)
            zones[i].wp = z.zslba + z.cap;
    }
    fflush(stdout);
    if (delay > 0) {
        struct timespec ts = { (time_t)delay, (long)((delay - (time_t)delay) * 1e9) };
        nanosleep(&ts, NULL);
    }

    void *buf = NULL;
    if (posix_memalign(&buf, 4096, bs_max)) {
        printf("E out of memory\n");
        return EXIT_FAIL;
    }
    rng_state = seed;
    event("S");
    for (int i = 0; i < nz; i++)
        if (zones[i].wp == zones[i].zslba + zones[i].cap && reset_zone(&zones[i]))
            return EXIT_FAIL;

    double t0 = now_s(), elapsed = 0;
    uint64_t writes = 0, bytes = 0, flushes = 0, resets = 0, since_flush = 0;
    uint32_t lbas_min = bs / lba_size, lbas_max = bs_max / lba_size;
    int cur = 0;
    active = nz;
    while (active && (!count || writes < count) && (time_limit <= 0 || elapsed < time_limit)) {
        struct zone_use *z;
        while (!zones[cur].active)
            cur = (cur + 1) % nz;
        z = &zones[cur];
        cur = (cur + 1) % nz;

        uint32_t nlb = lbas_min + (uint32_t)(rng_next() % (lbas_max - lbas_min + 1));
        uint64_t room = z->zslba + z->cap - z->wp;
        if (nlb > room)
            nlb = (uint32_t)room;
        int durable = rng_unit() < p_durable;
        int append = rng_unit() < p_append;
        uint64_t where = 0;
        /* an append lands at the write pointer at QD1: the data is made for it */
        plp_pattern_fill(buf, lba_size, z->wp, nlb, z->gen);
        st = plp_write(fd, nsid, append ? z->zslba : z->wp, nlb, buf, nlb * lba_size,
                       durable, append, &where);
        if (st) {
            printf("E %s of %u LBAs at %" PRIu64 ": %s\n", append ? "append" : "write", nlb,
                   z->wp, plp_status_name(st));
            return EXIT_FAIL;
        }
        if (where != z->wp) {
            printf("E append landed at %" PRIu64 ", the write pointer was %" PRIu64 "\n",
                   where, z->wp);
            return EXIT_FAIL;
        }
        event("W %" PRIu64 " %" PRIu64 " %u %d %" PRIu64, ++seq, where, nlb, durable, z->gen);
        z->wp += nlb;
        writes++;
        bytes += (uint64_t)nlb * lba_size;
        if (flush_every && ++since_flush >= flush_every) {
            st = plp_flush(fd, nsid);
            if (st) {
                printf("E flush: %s\n", plp_status_name(st));
                return EXIT_FAIL;
            }
            event("F %" PRIu64, ++seq);
            flushes++;
            since_flush = 0;
        }
        if (z->wp == z->zslba + z->cap) {
            if (rng_unit() < p_reset) {
                if (reset_zone(z))
                    return EXIT_FAIL;
                resets++;
            } else {
                z->active = 0;
                active--;
            }
        }
        elapsed = now_s() - t0;
    }
    event("D %" PRIu64, seq);
    printf("# writes=%" PRIu64 " bytes=%" PRIu64 " flushes=%" PRIu64 " resets=%" PRIu64
           " seconds=%.3f writes_per_s=%.0f\n", writes, bytes, flushes, resets, elapsed,
           elapsed > 0 ? writes / elapsed : 0.0);
    free(buf);
    return 0;
}
