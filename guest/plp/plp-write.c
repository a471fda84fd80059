/*
 * plp-write: write to a zoned NVMe namespace with or without the power-loss protection
 * flag (CDW3 bit 0), flush, reset, report zones, and check what a pattern write left.
 * `plp-write help` lists the commands.
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
#include <sys/stat.h>
#include <unistd.h>

#include "plp-nvme.h"
#include "plp-pattern.h"

#define EXIT_FAIL 1  /* an NVMe error status, or `check` found other data */

static const char usage_text[] =
"Usage: plp-write COMMAND DEVICE [OPTIONS]\n"
"Zoned NVMe writes with or without the power-loss protection flag (CDW3 bit 0),\n"
"through the passthrough ioctls. DEVICE: /dev/nvmeXnY or /dev/ngXnY. Needs root.\n"
"LBAs are in the namespace's LBA size.\n"
"\n"
"Commands:\n"
"  write DEVICE (--lba LBA | --append ZSLBA) [--nlb N] [--gen G | --file F]\n"
"        [--durable] [--flush]\n"
"                Write (01h) at LBA, or Zone Append (7Dh) to the zone at ZSLBA, of N\n"
"                LBAs (default 1; with --file, the file's size rounded up, zero\n"
"                padded) of the pattern of generation G (default 1: each LBA holds\n"
"                \"FEMUPLP1\", its LBA, G and a hash of both, repeated) or of F.\n"
"                --durable sets the protected flag; --flush sends a Flush after.\n"
"                Prints LBA=<where it landed> NLB= DURABLE= (and FLUSHED=1).\n"
"                `plp-write DEVICE ...` is the same as `plp-write write DEVICE ...`.\n"
"  flush DEVICE  Flush (00h)\n"
"  reset DEVICE ZSLBA\n"
"                Zone Management Send, Reset Zone\n"
"  zones DEVICE [--first I] [--count N]\n"
"                zone report: a '# zones lba_size= zone_size=' line, then\n"
"                'Z <zslba> <cap> <wp> <state>' per zone (LBAs), zones I.. (all)\n"
"  check DEVICE --lba LBA [--nlb N] [--gen G]\n"
"                read N LBAs (default 1) and classify each: intact pattern (which\n"
"                generation), zero, another LBA's pattern, or garbled; prints runs\n"
"                'C <lba> <count> <kind> <gen>' and RESULT=intact|zero|other.\n"
"                Exit 0 when every LBA is intact (of generation G, if given).\n"
"  help          this text\n"
"\n"
"Exit status: 0 success, 1 the device returned an error (STATUS= and its name) or\n"
"check found other data, 2 usage error or device not usable.\n";

static int fd = -1;
static uint32_t nsid, lba_size;

static void open_dev(const char *path)
{
    fd = open(path, O_RDWR);
    if (fd < 0) {
        fprintf(stderr, "plp-write: %s: %s\n", path, strerror(errno));
        exit(EXIT_USAGE);
    }
    nsid = plp_nsid(fd);
    if (!nsid) {
        fprintf(stderr, "plp-write: %s: not an NVMe namespace\n", path);
        exit(EXIT_USAGE);
    }
    lba_size = plp_lba_size(fd, nsid);
    if (!lba_size || lba_size % PLP_PATTERN_UNIT) {
        fprintf(stderr, "plp-write: %s: cannot read the LBA size\n", path);
        exit(EXIT_USAGE);
    }
}

static int fail(const char *what, int st)
{
    printf("STATUS=0x%03x %s: %s\n", st > 0 ? st : 0, what, plp_status_name(st));
    return EXIT_FAIL;
}

static void *alloc_sectors(uint64_t nlb)
{
    void *p = NULL;
    size_t n = (size_t)nlb * lba_size;
    if (posix_memalign(&p, 4096, n ? n : 4096)) {
        fprintf(stderr, "plp-write: out of memory\n");
        exit(EXIT_FAIL);
    }
    memset(p, 0, n);
    return p;
}

/* --name VALUE options after the device; flags listed in flags[] take no value. */
struct opts {
    const char *v[16];
    const char *name[16];
    int n;
};

static void parse_opts(int argc, char **argv, int i, const char *const *known,
                       const char *const *flags, struct opts *o)
{
    o->n = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        int is_flag = 0, ok = 0;
        for (const char *const *f = flags; f && *f; f++)
            if (!strcmp(a, *f))
                is_flag = ok = 1;
        for (const char *const *k = known; !ok && k && *k; k++)
            ok = !strcmp(a, *k);
        if (!ok)
            cli_usage_error("unknown option '%s'", a);
        if (o->n == 16)
            cli_usage_error("too many options");
        o->name[o->n] = a;
        if (is_flag) {
            o->v[o->n++] = "1";
        } else {
            if (i + 1 >= argc)
                cli_usage_error("%s needs a value", a);
            o->v[o->n++] = argv[++i];
        }
    }
}

static const char *opt(const struct opts *o, const char *name)
{
    const char *v = NULL;
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->name[i], name))
            v = o->v[i];
    return v;
}

static int cmd_write(int argc, char **argv, int i)
{
    static const char *const known[] = { "--lba", "--append", "--nlb", "--gen", "--file", NULL };
    static const char *const flags[] = { "--durable", "--flush", NULL };
    struct opts o;
    const char *lba_s, *app_s, *nlb_s, *gen_s, *file;
    uint64_t slba, gen = 1, nlb = 1, where = 0;
    int append, durable, st;
    void *buf;

    parse_opts(argc, argv, i, known, flags, &o);
    lba_s = opt(&o, "--lba");
    app_s = opt(&o, "--append");
    nlb_s = opt(&o, "--nlb");
    gen_s = opt(&o, "--gen");
    file = opt(&o, "--file");
    durable = opt(&o, "--durable") != NULL;
    if (!lba_s == !app_s)
        cli_usage_error("write needs one of --lba and --append");
    if (gen_s && file)
        cli_usage_error("--gen and --file exclude each other");
    append = app_s != NULL;
    slba = cli_parse_u64(append ? "--append" : "--lba", append ? app_s : lba_s, 0, UINT64_MAX);
    if (gen_s)
        gen = cli_parse_u64("--gen", gen_s, 0, UINT64_MAX);
    if (nlb_s)
        nlb = cli_parse_u64("--nlb", nlb_s, 1, 65536);
    if (file) {
        int ffd = open(file, O_RDONLY);
        struct stat sb;
        if (ffd < 0 || fstat(ffd, &sb)) {
            fprintf(stderr, "plp-write: %s: %s\n", file, strerror(errno));
            return EXIT_USAGE;
        }
        if (!nlb_s)
            nlb = sb.st_size ? ((uint64_t)sb.st_size + lba_size - 1) / lba_size : 1;
        if (nlb > 65536)
            cli_usage_error("%s is larger than 65536 LBAs", file);
        buf = alloc_sectors(nlb);
        size_t want = (size_t)nlb * lba_size, got = 0;
        while (got < want) {
            ssize_t r = read(ffd, (char *)buf + got, want - got);
            if (r < 0) {
                fprintf(stderr, "plp-write: %s: %s\n", file, strerror(errno));
                return EXIT_USAGE;
            }
            if (r == 0)
                break; /* the rest stays zero */
            got += r;
        }
        close(ffd);
    } else {
        buf = alloc_sectors(nlb);
        /* an append lands at the write pointer: the pattern is made for that LBA */
        if (append) {
            struct plp_zone z;
            int n;
            st = plp_report_zones(fd, nsid, slba, &z, 1, &n);
            if (st || n != 1)
                return fail("zone report", st ? st : -ENOENT);
            plp_pattern_fill(buf, lba_size, z.wp, (uint32_t)nlb, gen);
        } else {
            plp_pattern_fill(buf, lba_size, slba, (uint32_t)nlb, gen);
        }
    }
    st = plp_write(fd, nsid, slba, (uint32_t)nlb, buf, (uint32_t)(nlb * lba_size), durable,
                   append, &where);
    if (st)
        return fail(append ? "zone append" : "write", st);
    printf("LBA=%" PRIu64 " NLB=%" PRIu64 " DURABLE=%d\n", where, nlb, durable);
    if (opt(&o, "--flush")) {
        st = plp_flush(fd, nsid);
        if (st)
            return fail("flush", st);
        printf("FLUSHED=1\n");
    }
    free(buf);
    return 0;
}

/* Zone size: the distance between the first two zones (one zone: its capacity). */
static uint64_t zone_size(void)
{
    struct plp_zone z[2];
    int n;
    if (plp_report_zones(fd, nsid, 0, z, 2, &n))
        return 0;
    if (n == 2)
        return z[1].zslba - z[0].zslba;
    return n == 1 ? z[0].cap : 0;
}

static int cmd_zones(int argc, char **argv, int i)
{
    static const char *const known[] = { "--first", "--count", NULL };
    struct opts o;
    uint64_t first = 0, count = UINT64_MAX, zsze, done = 0, slba;
    struct plp_zone z[256];

    parse_opts(argc, argv, i, known, NULL, &o);
    if (opt(&o, "--first"))
        first = cli_parse_u64("--first", opt(&o, "--first"), 0, UINT64_MAX);
    if (opt(&o, "--count"))
        count = cli_parse_u64("--count", opt(&o, "--count"), 1, UINT64_MAX);
    zsze = zone_size();
    if (!zsze)
        return fail("zone report (not a zoned namespace?)", -EINVAL);
    printf("# zones lba_size=%u zone_size=%" PRIu64 "\n", lba_size, zsze);
    slba = first * zsze;
    while (done < count) {
        int n, st = plp_report_zones(fd, nsid, slba, z, 256, &n);
        if (st && done)
            break; /* past the last zone */
        if (st)
            return fail("zone report", st);
        if (n == 0)
            break;
        for (int k = 0; k < n && done < count; k++, done++)
            printf("Z %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", z[k].zslba, z[k].cap, z[k].wp,
                   plp_zone_state_name(z[k].state));
        slba = z[n - 1].zslba + zsze;
        if (n < 256)
            break;
    }
    return 0;
}

static int cmd_check(int argc, char **argv, int i)
{
    static const char *const known[] = { "--lba", "--nlb", "--gen", NULL };
    struct opts o;
    uint64_t slba, nlb = 1, want_gen = 0;
    int have_gen, st;
    uint8_t *buf;
    unsigned long intact = 0, zero = 0, other = 0;

    parse_opts(argc, argv, i, known, NULL, &o);
    if (!opt(&o, "--lba"))
        cli_usage_error("check needs --lba");
    slba = cli_parse_u64("--lba", opt(&o, "--lba"), 0, UINT64_MAX);
    if (opt(&o, "--nlb"))
        nlb = cli_parse_u64("--nlb", opt(&o, "--nlb"), 1, 65536);
    have_gen = opt(&o, "--gen") != NULL;
    if (have_gen)
        want_gen = cli_parse_u64("--gen", opt(&o, "--gen"), 0, UINT64_MAX);
    buf = alloc_sectors(nlb);
    st = plp_read(fd, nsid, slba, (uint32_t)nlb, buf, (uint32_t)(nlb * lba_size));
    if (st)
        return fail("read", st);
    /* runs of LBAs of one kind and generation */
    uint64_t run_start = slba, run_gen = 0, run_n = 0;
    enum plp_sector_kind run_kind = PLP_SECTOR_ZERO;
    for (uint64_t k = 0; k <= nlb; k++) {
        enum plp_sector_kind kind = PLP_SECTOR_ZERO;
        uint64_t g = 0;
        if (k < nlb) {
            kind = plp_pattern_check(buf + k * lba_size, lba_size, slba + k, &g, NULL);
            if (kind == PLP_SECTOR_OK && (!have_gen || g == want_gen))
                intact++;
            else if (kind == PLP_SECTOR_ZERO)
                zero++;
            else
                other++;
        }
        if (run_n && (k == nlb || kind != run_kind || g != run_gen)) {
            printf("C %" PRIu64 " %" PRIu64 " %s %" PRIu64 "\n", run_start, run_n,
                   plp_sector_kind_name(run_kind), run_gen);
            run_n = 0;
        }
        if (k < nlb) {
            if (!run_n) {
                run_start = slba + k;
                run_kind = kind;
                run_gen = g;
            }
            run_n++;
        }
    }
    printf("RESULT=%s\n", intact == nlb ? "intact" : zero == nlb ? "zero" : "other");
    free(buf);
    return intact == nlb ? 0 : EXIT_FAIL;
}

int main(int argc, char **argv)
{
    cli_prog = "plp-write";
    const char *cmd;
    int i = 2, st;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "-h")) {
        fputs(usage_text, stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    cmd = argv[1];
    if (cmd[0] == '/') { /* plp-write DEVICE ... */
        cmd = "write";
        i = 1;
    }
    if (strcmp(cmd, "write") && strcmp(cmd, "flush") && strcmp(cmd, "reset") &&
        strcmp(cmd, "zones") && strcmp(cmd, "check"))
        cli_usage_error("unknown command '%s'", cmd);
    if (i >= argc)
        cli_usage_error("%s needs a DEVICE", cmd);
    open_dev(argv[i++]);
    if (!strcmp(cmd, "write"))
        return cmd_write(argc, argv, i);
    if (!strcmp(cmd, "zones"))
        return cmd_zones(argc, argv, i);
    if (!strcmp(cmd, "check"))
        return cmd_check(argc, argv, i);
    if (!strcmp(cmd, "flush")) {
        if (i != argc)
            cli_usage_error("flush takes only DEVICE");
        st = plp_flush(fd, nsid);
        if (st)
            return fail("flush", st);
        printf("FLUSHED=1\n");
        return 0;
    }
    /* reset */
    if (i + 1 != argc)
        cli_usage_error("reset takes DEVICE ZSLBA");
    st = plp_reset_zone(fd, nsid, cli_parse_u64("ZSLBA", argv[i], 0, UINT64_MAX));
    if (st)
        return fail("reset", st);
    printf("RESET=%s\n", argv[i]);
    return 0;
}
