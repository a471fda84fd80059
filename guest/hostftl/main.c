/*
 * hostftl: a small pblk-like host FTL for a whitebox (OCSSD 2.0) namespace,
 * exposing an ordinary block device through the kernel's NBD driver.
 *
 * Where things are (this folder):
 *   ftl.c       the core: mapping, lines, GC, checkpoint. Policy points:
 *                 pick_gc_victim()  GC victim choice (greedy)
 *                 pick_next_line()  which free line is written next
 *                 line_sector_ppa() placement of a line's sectors on its PUs
 *   dev-nvme.c  the device: pread/pwrite O_DIRECT, resets and chunk log by ioctl
 *   nbd.c       the NBD server (socketpair + NBD_SET_SOCK/NBD_DO_IT)
 *   main.c      this file: command line, daemon, statistics
 * The core only talks to the device through struct ftl_dev_ops, so the unit
 * test (tests/unit/test-hostftl.c) runs it on an in-memory fake.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include "../cli/cli.h"
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dev-mem.h"
#include "hostftl.h"

#define RUN_DIR "/run/hostftl"

static const char usage_text[] =
"Usage: hostftl COMMAND [OPTIONS]\n"
"A host FTL (page mapping, striping over PUs, greedy GC, checkpointed map) on a\n"
"whitebox OCSSD namespace, served as an ordinary block device through NBD.\n"
"\n"
"  format [--dev D] [--op PCT] [--line-pus N]\n"
"        erase the device and write an empty map\n"
"  start [--dev D] [--nbd B] [--format [--op PCT] [--line-pus N]] [--force] [--foreground]\n"
"        load the map and serve it on B; returns once B is ready (the server\n"
"        stays in the background unless --foreground)\n"
"  stop [--nbd B] [--force]\n"
"        sync and disconnect B; the server writes its checkpoint and exits;\n"
"        prints the final statistics. Refuses while B is mounted, unless --force\n"
"  stats [--nbd B]\n"
"        the running server's statistics (it writes them on SIGUSR1)\n"
"  help  this text\n"
"\n"
"Options:\n"
"  --dev D        whitebox namespace (default /dev/nvme0n1); mem:MiB: an OCSSD\n"
"                 in the server's memory, formatted at start, lost at stop\n"
"  --nbd B        NBD device (default /dev/nbd0; needs the nbd module)\n"
"  --op PCT       over-provisioning, (usable - exposed) / exposed in %, 0..400\n"
"                 (default 20; the minimum that leaves GC two lines of room is\n"
"                 reported if it is too small)\n"
"  --line-pus N   PUs per line, dividing the number of PUs (default: all, halved\n"
"                 until the device has at least 16 lines)\n"
"  --force        start even after an unclean stop (what was written after the\n"
"                 last checkpoint is lost); stop even while mounted\n"
"  --foreground   serve in the foreground (SIGTERM/SIGINT stop it cleanly)\n"
"\n"
"Statistics (KEY=VALUE): sectors written by the host, by the device (host + GC\n"
"+ padding), by GC, WAF = device / host, chunk erases, lines collected. They are\n"
"printed at exit, written to " RUN_DIR "/NAME.stats on SIGUSR1 and at exit;\n"
"the server's log is " RUN_DIR "/NAME.log.\n";

struct opts {
    const char *dev, *nbd;
    double op;
    long line_pus;
    int format, force, foreground;
};

static const char *nbd_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void run_file(char *out, size_t len, const char *nbd, const char *ext)
{
    snprintf(out, len, RUN_DIR "/%s.%s", nbd_name(nbd), ext);
}

/* ---- the running server ---- */

struct serving {
    struct ftl *ftl;
    uint32_t ss;
    const char *nbd;
};

static int be_read(void *o, uint64_t off, uint32_t len, void *buf)
{
    struct serving *s = o;
    if (off % s->ss || len % s->ss)
        return -EINVAL;
    return ftl_read(s->ftl, off / s->ss, len / s->ss, buf);
}

static int be_write(void *o, uint64_t off, uint32_t len, const void *buf)
{
    struct serving *s = o;
    if (off % s->ss || len % s->ss)
        return -EINVAL;
    return ftl_write(s->ftl, off / s->ss, len / s->ss, buf);
}

static int be_flush(void *o)
{
    return ftl_flush(((struct serving *)o)->ftl);
}

/* Partial sectors are left alone: a trim is only a hint. */
static int be_trim(void *o, uint64_t off, uint32_t len)
{
    struct serving *s = o;
    uint64_t first = (off + s->ss - 1) / s->ss, end = (off + len) / s->ss;
    return end > first ? ftl_trim(s->ftl, first, end - first) : 0;
}

static void write_stats_file(const char *nbd, const char *text)
{
    char path[128], tmp[140];
    FILE *f;
    run_file(path, sizeof(path), nbd, "stats");
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    rename(tmp, path);
}

static void be_stats(void *o)
{
    struct serving *s = o;
    struct ftl_stats st;
    char text[2048];
    ftl_get_stats(s->ftl, &st);
    ftl_format_stats(&st, text, sizeof(text));
    write_stats_file(s->nbd, text);
}

/* ---- commands ---- */

/* --dev mem:MiB: 8 PUs of 1 MiB chunks in RAM (lost at exit; always formatted) */
static struct mem_dev *mem_device(const char *spec, struct ftl_geo *g)
{
    char *end;
    long mb = strtol(spec + 4, &end, 10);
    struct mem_dev *m;
    if (*end || mb < 64 || mb > 4096)
        cli_usage_error("--dev mem:MiB needs a size in 64..4096 (got '%s')", spec);
    *g = (struct ftl_geo){ .num_grp = 2, .num_pu = 4, .num_chk = mb / 8, .clba = 256,
                           .ws_min = 4, .ws_opt = 8, .sector_size = 4096 };
    m = mem_dev_new(g);
    if (!m) {
        fprintf(stderr, "hostftl: no memory for a %ld MiB device\n", mb);
        exit(1);
    }
    return m;
}

static void open_device(const char *path, struct oc_dev *d, struct ftl_geo *g)
{
    char err[256];
    if (oc_open(d, path, O_DIRECT, err, sizeof(err))) {
        fprintf(stderr, "hostftl: %s\n", err);
        exit(1);
    }
    nvme_dev_geo(d, g);
}

static int do_format(const struct opts *o, const struct ftl_dev_ops *ops, void *d,
                     const struct ftl_geo *g)
{
    struct ftl_format_opts fo = { .op_pcent = o->op, .line_pus = o->line_pus };
    char err[256];
    if (ftl_format(g, ops, d, &fo, err, sizeof(err))) {
        fprintf(stderr, "hostftl: format of %s: %s\n", o->dev, err);
        return 1;
    }
    printf("hostftl: formatted %s (%u groups x %u PUs x %u chunks of %u sectors, op %g%%)\n",
           o->dev, g->num_grp, g->num_pu, g->num_chk, g->clba, o->op);
    return 0;
}

static pid_t running_pid(const char *nbd)
{
    char path[128];
    long pid = 0;
    FILE *f;
    run_file(path, sizeof(path), nbd, "pid");
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    if (pid > 0 && kill(pid, 0) == 0)
        return pid;
    return 0;
}

static int cmd_start(const struct opts *o)
{
    struct oc_dev d;
    struct ftl_geo g;
    struct serving s = { .nbd = o->nbd };
    char err[256], path[128], text[2048];
    int pipefd[2] = { -1, -1 }, rc;
    struct ftl_stats st;
    const struct ftl_dev_ops *ops = &nvme_dev_ops;
    void *dev = &d;
    pid_t pid;

    d.ns_fd = d.ctrl_fd = -1;
    if (running_pid(o->nbd)) {
        fprintf(stderr, "hostftl: a server for %s is already running (hostftl stop first)\n",
                o->nbd);
        return 1;
    }
    if (access(o->nbd, F_OK)) {
        fprintf(stderr, "hostftl: %s does not exist: load the nbd module (modprobe nbd)\n",
                o->nbd);
        return 1;
    }
    mkdir(RUN_DIR, 0755);
    if (!strncmp(o->dev, "mem:", 4)) {
        ops = &mem_dev_ops;
        dev = mem_device(o->dev, &g);
        if (do_format(o, ops, dev, &g))
            return 1;
    } else {
        open_device(o->dev, &d, &g);
        if (o->format && do_format(o, ops, dev, &g))
            return 1;
    }
    s.ftl = ftl_open(&g, ops, dev, o->force, err, sizeof(err));
    if (!s.ftl) {
        fprintf(stderr, "hostftl: %s: %s\n", o->dev, err);
        return 1;
    }
    s.ss = ftl_sector_size(s.ftl);
    if (!o->foreground) {
        if (pipe(pipefd)) {
            perror("hostftl: pipe");
            return 1;
        }
        pid = fork();
        if (pid < 0) {
            perror("hostftl: fork");
            return 1;
        }
        if (pid > 0) {
            char c;
            close(pipefd[1]);
            if (read(pipefd[0], &c, 1) == 1) {
                printf("hostftl: %s ready: %" PRIu64 " sectors of %u bytes (%" PRIu64 " MiB) on "
                       "%s, server pid %d\n", o->nbd, ftl_logical_sectors(s.ftl), s.ss,
                       ftl_logical_sectors(s.ftl) * s.ss >> 20, o->dev, (int)pid);
                return 0;
            }
            run_file(path, sizeof(path), o->nbd, "log");
            fprintf(stderr, "hostftl: the server for %s failed to start; its log (%s):\n",
                    o->nbd, path);
            FILE *f = fopen(path, "r");
            if (f) {
                while (fgets(text, sizeof(text), f))
                    fputs(text, stderr);
                fclose(f);
            }
            return 1;
        }
        close(pipefd[0]);
        setsid();
        run_file(path, sizeof(path), o->nbd, "log");
        int log = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null = open("/dev/null", O_RDONLY);
        if (log >= 0) {
            dup2(log, 1);
            dup2(log, 2);
            close(log);
        }
        if (null >= 0) {
            dup2(null, 0);
            close(null);
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
    }
    run_file(path, sizeof(path), o->nbd, "pid");
    FILE *pf = fopen(path, "w");
    if (pf) {
        fprintf(pf, "%d\n", (int)getpid());
        fclose(pf);
    }
    run_file(path, sizeof(path), o->nbd, "stats");
    unlink(path);
    struct nbd_backend b = { be_read, be_write, be_flush, be_trim, be_stats, &s };
    if (o->foreground)
        printf("hostftl: serving %s from %s (%" PRIu64 " sectors of %u bytes)\n", o->nbd, o->dev,
               ftl_logical_sectors(s.ftl), s.ss);
    fflush(stdout);
    rc = nbd_serve(o->nbd, ftl_logical_sectors(s.ftl) * s.ss, s.ss, &b, pipefd[1], err,
                   sizeof(err));
    if (rc)
        fprintf(stderr, "hostftl: %s\n", err);
    ftl_get_stats(s.ftl, &st);
    if (ftl_close(s.ftl, err, sizeof(err))) {
        fprintf(stderr, "hostftl: stopping: %s\n", err);
        ftl_format_stats(&st, text, sizeof(text));
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "CLEAN_STOP=0\n");
        rc = -1;
    } else {
        st.ckpt_seq++; /* the one just written */
        ftl_format_stats(&st, text, sizeof(text));
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "CLEAN_STOP=1\n");
    }
    fputs(text, stdout);
    write_stats_file(o->nbd, text);
    run_file(path, sizeof(path), o->nbd, "pid");
    unlink(path);
    oc_close(&d);
    return rc ? 1 : 0;
}

static int mounted(const char *nbd)
{
    FILE *f = fopen("/proc/mounts", "r");
    char line[512];
    size_t n = strlen(nbd);
    int yes = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, nbd, n) && (line[n] == ' ' || line[n] == 'p'))
            yes = 1;
    fclose(f);
    return yes;
}

static int print_file(const char *path)
{
    char line[512];
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        fputs(line, stdout);
    fclose(f);
    return 0;
}

static int wait_for_file(const char *path, double secs)
{
    struct stat st;
    for (int i = 0; i < secs * 100; i++) {
        if (stat(path, &st) == 0)
            return 0;
        usleep(10000);
    }
    return -1;
}

static int cmd_stop(const struct opts *o)
{
    pid_t pid = running_pid(o->nbd);
    char err[256], path[128];

    if (!pid) {
        fprintf(stderr, "hostftl: no server is running for %s\n", o->nbd);
        return 1;
    }
    if (mounted(o->nbd) && !o->force) {
        fprintf(stderr, "hostftl: %s is mounted: unmount it first (or --force)\n", o->nbd);
        return 1;
    }
    if (nbd_disconnect(o->nbd, err, sizeof(err))) {
        fprintf(stderr, "hostftl: %s; sending SIGTERM to %d\n", err, (int)pid);
        kill(pid, SIGTERM);
    }
    for (int i = 0; kill(pid, 0) == 0; i++) {
        if (i == 30000) {
            fprintf(stderr, "hostftl: server %d did not exit within 300 s\n", (int)pid);
            return 1;
        }
        usleep(10000);
    }
    run_file(path, sizeof(path), o->nbd, "stats");
    if (print_file(path)) {
        fprintf(stderr, "hostftl: the server left no statistics (%s)\n", path);
        return 1;
    }
    FILE *f = fopen(path, "r");
    char line[256];
    int clean = 0;
    while (f && fgets(line, sizeof(line), f))
        clean |= !strcmp(line, "CLEAN_STOP=1\n");
    if (f)
        fclose(f);
    if (!clean) {
        run_file(path, sizeof(path), o->nbd, "log");
        fprintf(stderr, "hostftl: the server did not stop cleanly, see %s\n", path);
    }
    return clean ? 0 : 1;
}

static int cmd_stats(const struct opts *o)
{
    pid_t pid = running_pid(o->nbd);
    char path[128];
    if (!pid) {
        fprintf(stderr, "hostftl: no server is running for %s\n", o->nbd);
        return 1;
    }
    run_file(path, sizeof(path), o->nbd, "stats");
    unlink(path);
    kill(pid, SIGUSR1);
    if (wait_for_file(path, 10) || print_file(path)) {
        fprintf(stderr, "hostftl: no statistics from server %d\n", (int)pid);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    cli_prog = "hostftl";
    enum { O_DEV = 256, O_NBD, O_OP, O_LPUS, O_FORMAT, O_FORCE, O_FG };
    static const struct option lo[] = {
        { "dev", 1, 0, O_DEV }, { "nbd", 1, 0, O_NBD }, { "op", 1, 0, O_OP },
        { "line-pus", 1, 0, O_LPUS }, { "format", 0, 0, O_FORMAT }, { "force", 0, 0, O_FORCE },
        { "foreground", 0, 0, O_FG }, { 0, 0, 0, 0 },
    };
    struct opts o = { .dev = "/dev/nvme0n1", .nbd = "/dev/nbd0", .op = 20 };
    const char *cmd;
    int c, op_given = 0, lpus_given = 0;
    char *end;

    if (argc < 2) {
        fputs(usage_text, stderr);
        return 2;
    }
    cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(cmd, "format") && strcmp(cmd, "start") && strcmp(cmd, "stop") &&
        strcmp(cmd, "stats"))
        cli_usage_error("unknown command '%s'", cmd);
    optind = 2;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case O_DEV: o.dev = optarg; break;
        case O_NBD: o.nbd = optarg; break;
        case O_OP:
            errno = 0;
            o.op = strtod(optarg, &end);
            if (errno || end == optarg || *end || o.op < 0 || o.op > 400)
                cli_usage_error("--op must be a number in 0..400 (got '%s')", optarg);
            op_given = 1;
            break;
        case O_LPUS:
            errno = 0;
            o.line_pus = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || o.line_pus < 1 || o.line_pus > 65536)
                cli_usage_error("--line-pus must be an integer in 1..65536 (got '%s')", optarg);
            lpus_given = 1;
            break;
        case O_FORMAT: o.format = 1; break;
        case O_FORCE: o.force = 1; break;
        case O_FG: o.foreground = 1; break;
        default: cli_usage_error("%s: unknown option", cmd);
        }
    }
    if (optind < argc)
        cli_usage_error("%s: unexpected argument '%s'", cmd, argv[optind]);
    int is_start = !strcmp(cmd, "start"), is_format = !strcmp(cmd, "format");
    if ((op_given || lpus_given) && !is_format &&
        !(is_start && (o.format || !strncmp(o.dev, "mem:", 4))))
        cli_usage_error("--op and --line-pus are fixed when the device is formatted: give them to "
                    "`format` or to `start --format`");
    if (o.format && !is_start)
        cli_usage_error("--format goes with start (or use the format command)");
    if (o.foreground && !is_start)
        cli_usage_error("--foreground goes with start");
    if (is_format) {
        struct oc_dev d;
        struct ftl_geo g;
        if (running_pid(o.nbd))
            cli_usage_error("a server for %s is running: stop it before formatting", o.nbd);
        if (!strncmp(o.dev, "mem:", 4))
            cli_usage_error("a mem: device lives in the server only: use start --dev %s", o.dev);
        open_device(o.dev, &d, &g);
        return do_format(&o, &nvme_dev_ops, &d, &g);
    }
    if (is_start)
        return cmd_start(&o);
    if (!strcmp(cmd, "stop"))
        return cmd_stop(&o);
    return cmd_stats(&o);
}
