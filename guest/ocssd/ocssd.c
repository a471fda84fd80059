/*
 * ocssd: talk OCSSD 2.0 to a whitebox (Open-Channel) NVMe namespace from Linux
 * userspace through the NVMe passthrough ioctls. `ocssd help` lists the commands.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include "../cli/cli.h"
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oc-nvme.h"

#define EXIT_NVME 1  /* the device answered with an error status */

static const char *dev_path = "/dev/nvme0n1";
static struct oc_dev dev;

static const char usage_text[] =
"Usage: ocssd [-d DEVICE] COMMAND [OPTIONS]\n"
"Speak OCSSD 2.0 to a whitebox NVMe namespace (default DEVICE /dev/nvme0n1; /dev/ngXnY\n"
"works too) through the NVMe passthrough ioctls. Needs root.\n"
"\n"
"Chunks are addressed by index (--chunk C, C = (grp * NUM_PU + pu) * NUM_CHK + chk)\n"
"or by --grp G --pu P --chk K; a chunk is the LBA range [C * CLBA, (C + 1) * CLBA).\n"
"\n"
"Commands:\n"
"  geometry              every Identify Geometry field, KEY=VALUE\n"
"  report [--state S] [--first C] [--count N] [--summary]\n"
"                        chunk information log (paged, 128 descriptors per command);\n"
"                        S: free, open, closed or offline (comma-separated list);\n"
"                        a summary line FREE= OPEN= CLOSED= OFFLINE= of the range last\n"
"  write CHUNK [--sector S] [--sectors N] [--file F | --pattern SEED]\n"
"  write --lba L --sectors N [--file F | --pattern SEED]\n"
"                        standard Write (01h) of N sectors (default: to the chunk's end)\n"
"                        from F (exactly N sectors long) or a pattern\n"
"  read CHUNK [--sector S] [--sectors N] [--file F]\n"
"  read --lba L --sectors N [--file F]\n"
"                        standard Read (02h) into F (default: stdout)\n"
"  reset CHUNK           Vector Reset (90h) of one chunk (one LBA: no list needed)\n"
"  vwrite --lbas LIST [--file F | --pattern SEED]\n"
"  vread --lbas LIST [--file F]\n"
"  vreset --chunks LIST  Vector Reset of several chunks (their SLBAs)\n"
"  vcopy --lbas LIST --to LIST\n"
"                        vector commands 91h/92h/90h/93h on up to 64 LBAs. LIST: comma-\n"
"                        separated LBAs or A+N (N consecutive LBAs from A); for vreset,\n"
"                        chunk indexes. Prints RESULT= the completion's failure bitmap:\n"
"                        Linux returns only its low 32 bits (LBAs 0..31 of the list).\n"
"                        A list of more than one LBA is passed by guest-physical\n"
"                        address: ocssd locks a page and reads /proc/self/pagemap, which\n"
"                        needs root and a guest without an IOMMU (like FEMU's).\n"
"  verify CHUNK [--chunks N] [--seed S]\n"
"                        write a pattern to N chunks from CHUNK (closed ones are reset\n"
"                        first), check state and write pointer, read back, compare;\n"
"                        prints MISMATCHES= (sectors that differ)\n"
"  bench [--chunks N] [--pus LIST] [--first-chk K]\n"
"                        per-PU bandwidth: N chunks (default 8) written then read,\n"
"                        spread over 1, 2, 4, ... PUs in parallel (one thread per PU),\n"
"                        MB/s and seconds per PU count; the chunks are reset after\n"
"  help                  this text\n"
"\n"
"Exit status: 0 success, 1 the device returned an error status (printed as\n"
"STATUS=0xSCT_SC and its name), 2 usage error or device not usable.\n";

static void open_dev(void)
{
    char err[256];
    if (oc_open(&dev, dev_path, 0, err, sizeof(err))) {
        fprintf(stderr, "ocssd: %s\n", err);
        exit(EXIT_USAGE);
    }
}

static void out_of_memory(uint64_t count, uint64_t size) __attribute__((noreturn));
static void out_of_memory(uint64_t count, uint64_t size)
{
    fprintf(stderr, "ocssd: out of memory (%" PRIu64 " x %" PRIu64 " bytes)\n", count, size);
    exit(EXIT_USAGE);
}

static void *xalloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 1))
        out_of_memory(1, n);
    memset(p, 0, n);
    return p;
}

/* count elements of size bytes, zeroed (the count may come from the device's geometry) */
static void *xcalloc(uint64_t count, size_t size)
{
    void *p = count > SIZE_MAX / size ? NULL : calloc(count ? count : 1, size);
    if (!p)
        out_of_memory(count, size);
    return p;
}

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        out_of_memory(1, strlen(s) + 1);
    return p;
}

static int report_status(const char *what, int st)
{
    if (st < 0) {
        printf("STATUS=error\n");
        fprintf(stderr, "ocssd: %s: %s\n", what, oc_status_name(st));
        return EXIT_NVME;
    }
    printf("STATUS=0x%03x\n", st);
    if (st)
        fprintf(stderr, "ocssd: %s: %s\n", what, oc_status_name(st));
    return st ? EXIT_NVME : 0;
}

/* ---- patterns: every 8-byte word a function of seed, LBA and position ---- */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static void fill_pattern(void *buf, uint64_t lba, uint32_t n, uint64_t seed, uint32_t lbsz)
{
    uint64_t *w = buf;
    for (uint32_t s = 0; s < n; s++)
        for (uint32_t i = 0; i < lbsz / 8; i++)
            *w++ = mix(seed * 0x9e3779b97f4a7c15ull ^ (lba + s) << 12 ^ i);
}

/* ---- geometry ---- */

static int cmd_geometry(void)
{
    const struct oc_geometry *g = &dev.geo;
    printf("NSID=%u\nLBA_SIZE=%u\nMJR=%u\nMNR=%u\n", dev.nsid, dev.lba_size, g->major, g->minor);
    printf("GRP_LEN=%u\nPU_LEN=%u\nCHK_LEN=%u\nLBK_LEN=%u\n", g->grp_len, g->pu_len, g->chk_len,
           g->lbk_len);
    printf("MCCAP=0x%x\nWIT=%u\n", g->mccap, g->wit);
    printf("NUM_GRP=%u\nNUM_PU=%u\nNUM_CHK=%u\nCLBA=%u\n", g->num_grp, g->num_pu, g->num_chk,
           g->clba);
    printf("WS_MIN=%u\nWS_OPT=%u\nMW_CUNITS=%u\nMAXOC=%u\nMAXOCPU=%u\n", g->ws_min, g->ws_opt,
           g->mw_cunits, g->maxoc, g->maxocpu);
    printf("TRDT=%u\nTRDM=%u\nTWRT=%u\nTWRM=%u\nTCRST=%u\nTCRSM=%u\n", g->trdt, g->trdm, g->twrt,
           g->twrm, g->tcrst, g->tcrsm);
    printf("TOTAL_CHUNKS=%" PRIu64 "\nMAX_SECTORS_PER_CMD=%u\n", oc_total_chunks(g),
           dev.max_sectors);
    return 0;
}

/* ---- shared option parsing: chunk and sector range ---- */

struct target {
    int64_t chunk, grp, pu, chk, lba;
    int64_t sector, sectors;
    const char *file, *lbas, *to, *chunks_list, *states;
    int64_t pattern;
    int have_pattern, summary;
    uint64_t first, count, nchunks, seed, first_chk;
    const char *pus;
};

enum { O_CHUNK = 256, O_GRP, O_PU, O_CHK, O_LBA, O_SECTOR, O_SECTORS, O_FILE, O_PATTERN,
       O_LBAS, O_TO, O_CHUNKS, O_STATE, O_FIRST, O_COUNT, O_SUMMARY, O_SEED, O_PUS, O_FIRSTCHK };

static const struct option long_opts[] = {
    { "chunk", 1, 0, O_CHUNK }, { "grp", 1, 0, O_GRP }, { "pu", 1, 0, O_PU },
    { "chk", 1, 0, O_CHK }, { "lba", 1, 0, O_LBA }, { "sector", 1, 0, O_SECTOR },
    { "sectors", 1, 0, O_SECTORS }, { "file", 1, 0, O_FILE }, { "pattern", 1, 0, O_PATTERN },
    { "lbas", 1, 0, O_LBAS }, { "to", 1, 0, O_TO }, { "chunks", 1, 0, O_CHUNKS },
    { "state", 1, 0, O_STATE }, { "first", 1, 0, O_FIRST }, { "count", 1, 0, O_COUNT },
    { "summary", 0, 0, O_SUMMARY }, { "seed", 1, 0, O_SEED }, { "pus", 1, 0, O_PUS },
    { "first-chk", 1, 0, O_FIRSTCHK }, { 0, 0, 0, 0 },
};

static void parse_opts(int argc, char **argv, struct target *t, const char *allowed)
{
    const struct oc_geometry *g = &dev.geo;
    uint64_t total = oc_total_chunks(g);
    int c;

    memset(t, 0, sizeof(*t));
    t->chunk = t->grp = t->pu = t->chk = t->lba = t->sector = t->sectors = -1;
    t->count = UINT64_MAX;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        const char *name = NULL;
        for (const struct option *o = long_opts; o->name; o++)
            if (o->val == c)
                name = o->name;
        if (c == '?' || !name)
            cli_usage_error("%s: unknown option", argv[0]);
        char key[32];
        snprintf(key, sizeof(key), " %s ", name);
        if (!strstr(allowed, key))
            cli_usage_error("%s does not take --%s", argv[0], name);
        snprintf(key, sizeof(key), "--%s", name);
        switch (c) {
        case O_CHUNK: t->chunk = cli_parse_u64(key, optarg, 0, total - 1); break;
        case O_GRP: t->grp = cli_parse_u64(key, optarg, 0, g->num_grp - 1); break;
        case O_PU: t->pu = cli_parse_u64(key, optarg, 0, g->num_pu - 1); break;
        case O_CHK: t->chk = cli_parse_u64(key, optarg, 0, g->num_chk - 1); break;
        case O_LBA: t->lba = cli_parse_u64(key, optarg, 0, total * g->clba - 1); break;
        case O_SECTOR: t->sector = cli_parse_u64(key, optarg, 0, g->clba - 1); break;
        case O_SECTORS: t->sectors = cli_parse_u64(key, optarg, 1, total * g->clba); break;
        case O_FILE: t->file = optarg; break;
        case O_PATTERN: t->pattern = cli_parse_u64(key, optarg, 0, UINT32_MAX); t->have_pattern = 1; break;
        case O_LBAS: t->lbas = optarg; break;
        case O_TO: t->to = optarg; break;
        case O_CHUNKS:
            if (strstr(allowed, " chunks-list "))
                t->chunks_list = optarg;
            else
                t->nchunks = cli_parse_u64(key, optarg, 1, total);
            break;
        case O_STATE: t->states = optarg; break;
        case O_FIRST: t->first = cli_parse_u64(key, optarg, 0, total - 1); break;
        case O_COUNT: t->count = cli_parse_u64(key, optarg, 1, total); break;
        case O_SUMMARY: t->summary = 1; break;
        case O_SEED: t->seed = cli_parse_u64(key, optarg, 0, UINT32_MAX); break;
        case O_PUS: t->pus = optarg; break;
        case O_FIRSTCHK: t->first_chk = cli_parse_u64(key, optarg, 0, g->num_chk - 1); break;
        }
    }
    if (optind < argc)
        cli_usage_error("%s: unexpected argument '%s'", argv[0], argv[optind]);
}

/* The chunk named by --chunk or --grp/--pu/--chk; -1 if none given. */
static int64_t chunk_of(const struct target *t)
{
    int addr = (t->grp >= 0) + (t->pu >= 0) + (t->chk >= 0);
    if (t->chunk >= 0 && addr)
        cli_usage_error("give either --chunk or --grp/--pu/--chk, not both");
    if (addr && addr != 3)
        cli_usage_error("--grp, --pu and --chk go together");
    if (addr)
        return oc_chunk_index(&dev.geo, t->grp, t->pu, t->chk);
    return t->chunk;
}

/* Sector range of read/write: [*slba, +*n). */
static void range_of(const struct target *t, const char *cmd, uint64_t *slba, uint64_t *n)
{
    const struct oc_geometry *g = &dev.geo;
    int64_t c = chunk_of(t);
    uint64_t end = oc_total_chunks(g) * g->clba;

    if (c >= 0 && t->lba >= 0)
        cli_usage_error("%s: give a chunk or --lba, not both", cmd);
    if (c < 0 && t->lba < 0)
        cli_usage_error("%s needs a chunk (--chunk or --grp/--pu/--chk) or --lba", cmd);
    if (c >= 0) {
        uint64_t off = t->sector >= 0 ? (uint64_t)t->sector : 0;
        *slba = c * g->clba + off;
        *n = t->sectors >= 0 ? (uint64_t)t->sectors : g->clba - off;
    } else {
        if (t->sector >= 0)
            cli_usage_error("%s: --sector is an offset in a chunk; with --lba give the LBA itself", cmd);
        if (t->sectors < 0)
            cli_usage_error("%s --lba needs --sectors", cmd);
        *slba = t->lba;
        *n = t->sectors;
    }
    if (*slba + *n > end)
        cli_usage_error("%s: LBAs %" PRIu64 "..%" PRIu64 " go past the namespace's end (%" PRIu64
                    " LBAs)", cmd, *slba, *slba + *n - 1, end);
}

/* Data for a write: the file (exactly n sectors) or a pattern. */
static void *write_data(const struct target *t, const char *cmd, uint64_t slba, uint64_t n)
{
    size_t len = n * dev.lba_size;
    uint8_t *buf = xalloc(len);

    if (t->file && t->have_pattern)
        cli_usage_error("%s: --file or --pattern, not both", cmd);
    if (t->file) {
        int fd = strcmp(t->file, "-") ? open(t->file, O_RDONLY) : 0;
        size_t got = 0;
        if (fd < 0) {
            fprintf(stderr, "ocssd: %s: %s\n", t->file, strerror(errno));
            exit(EXIT_USAGE);
        }
        while (got < len) {
            ssize_t r = read(fd, buf + got, len - got);
            if (r <= 0)
                break;
            got += r;
        }
        if (got != len) {
            fprintf(stderr, "ocssd: %s: %zu bytes, the write needs exactly %zu (%" PRIu64
                    " sectors of %u)\n", t->file, got, len, n, dev.lba_size);
            exit(EXIT_USAGE);
        }
        if (fd)
            close(fd);
    } else if (t->have_pattern) {
        fill_pattern(buf, slba, n, t->pattern, dev.lba_size);
    } else {
        cli_usage_error("%s needs --file F or --pattern SEED", cmd);
    }
    return buf;
}

static void save_data(const char *file, const void *buf, size_t len)
{
    int fd = (!file || !strcmp(file, "-")) ? 1 : open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const uint8_t *p = buf;
    if (fd < 0) {
        fprintf(stderr, "ocssd: %s: %s\n", file, strerror(errno));
        exit(EXIT_USAGE);
    }
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w <= 0) {
            fprintf(stderr, "ocssd: writing %s: %s\n", file ? file : "stdout", strerror(errno));
            exit(EXIT_USAGE);
        }
        p += w;
        len -= w;
    }
    if (fd != 1)
        close(fd);
}

/* Largest transfer per command, a multiple of WS_MIN for writes. */
static uint32_t step_sectors(int write)
{
    uint32_t s = dev.max_sectors;
    if (write && dev.geo.ws_min && s >= dev.geo.ws_min)
        s -= s % dev.geo.ws_min;
    return s ? s : 1;
}

/* Read or write [slba, +n) in as many commands as the transfer limit needs;
 * stops at the first error status. */
static int do_rw(int write, uint64_t slba, uint64_t n, uint8_t *buf, uint64_t *done)
{
    uint32_t step = step_sectors(write);
    *done = 0;
    while (*done < n) {
        uint32_t k = n - *done < step ? n - *done : step;
        int st = oc_rw(&dev, write, slba + *done, k, buf + *done * dev.lba_size);
        if (st)
            return st;
        *done += k;
    }
    return 0;
}

static int cmd_rw(int argc, char **argv, int write)
{
    struct target t;
    uint64_t slba, n, done;
    uint8_t *buf;
    int st;

    parse_opts(argc, argv, &t, write ? " chunk grp pu chk lba sector sectors file pattern "
                                     : " chunk grp pu chk lba sector sectors file ");
    range_of(&t, argv[0], &slba, &n);
    buf = write ? write_data(&t, argv[0], slba, n) : xalloc(n * dev.lba_size);
    st = do_rw(write, slba, n, buf, &done);
    if (!write && st == 0)
        save_data(t.file, buf, n * dev.lba_size);
    /* with data on stdout, the KEY=VALUE lines go to stderr */
    FILE *o = (!write && (!t.file || !strcmp(t.file, "-"))) ? stderr : stdout;
    fprintf(o, "SLBA=%" PRIu64 "\nSECTORS=%" PRIu64 "\nDONE=%" PRIu64 "\n", slba, n, done);
    if (o == stderr) {
        fprintf(stderr, "STATUS=0x%03x\n", st < 0 ? 0xfff : st);
        if (st)
            fprintf(stderr, "ocssd: %s: %s\n", argv[0], oc_status_name(st));
        return st ? EXIT_NVME : 0;
    }
    return report_status(argv[0], st);
}

/* ---- report ---- */

static uint8_t parse_states(const char *s)
{
    uint8_t mask = 0;
    char *copy = xstrdup(s), *save = NULL;
    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (!strcmp(w, "free")) mask |= OC_CS_FREE;
        else if (!strcmp(w, "open")) mask |= OC_CS_OPEN;
        else if (!strcmp(w, "closed")) mask |= OC_CS_CLOSED;
        else if (!strcmp(w, "offline")) mask |= OC_CS_OFFLINE;
        else cli_usage_error("--state: '%s' is not one of free, open, closed, offline", w);
    }
    free(copy);
    return mask;
}

static int cmd_report(int argc, char **argv)
{
    struct target t;
    uint64_t total = oc_total_chunks(&dev.geo), n, cnt[4] = { 0 };
    uint8_t mask = 0xff;
    const uint32_t page = 4096;
    struct oc_chunk *ck = xcalloc(page, sizeof(*ck));
    int st = 0;

    parse_opts(argc, argv, &t, " state first count summary ");
    if (t.states)
        mask = parse_states(t.states);
    n = t.count == UINT64_MAX ? total - t.first : t.count;
    if (t.first + n > total)
        cli_usage_error("report: chunks %" PRIu64 "..%" PRIu64 " go past the last chunk (%" PRIu64 ")",
                    t.first, t.first + n - 1, total - 1);
    for (uint64_t at = t.first; at < t.first + n && !st;) {
        uint32_t k = t.first + n - at < page ? t.first + n - at : page;
        st = oc_chunk_log(&dev, at, k, ck);
        if (st)
            break;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t grp, pu, chk;
            const struct oc_chunk *c = &ck[i];
            cnt[c->state & OC_CS_OFFLINE ? 3 : c->state & OC_CS_OPEN ? 1
                : c->state & OC_CS_CLOSED ? 2 : 0]++;
            if (t.summary || !(c->state & mask))
                continue;
            oc_chunk_addr(&dev.geo, at + i, &grp, &pu, &chk);
            printf("chunk=%" PRIu64 " grp=%u pu=%u chk=%u state=%s cs=0x%x ct=0x%x wli=%u "
                   "slba=%" PRIu64 " cnlb=%" PRIu64 " wp=%" PRIu64 "\n", at + i, grp, pu, chk,
                   oc_state_name(c->state), c->state, c->type, c->wli, c->slba, c->cnlb, c->wp);
        }
        at += k;
    }
    free(ck);
    if (st)
        return report_status("report (Get Log Page CAh)", st);
    printf("FREE=%" PRIu64 " OPEN=%" PRIu64 " CLOSED=%" PRIu64 " OFFLINE=%" PRIu64 "\n", cnt[0],
           cnt[1], cnt[2], cnt[3]);
    return 0;
}

/* ---- reset ---- */

static int cmd_reset(int argc, char **argv)
{
    struct target t;
    int64_t c;
    uint64_t lba;
    uint32_t result = 0;
    int st;

    parse_opts(argc, argv, &t, " chunk grp pu chk ");
    c = chunk_of(&t);
    if (c < 0)
        cli_usage_error("reset needs a chunk (--chunk or --grp/--pu/--chk)");
    lba = c * dev.geo.clba;
    st = oc_vector(&dev, OC_VECTOR_RESET, &lba, 1, NULL, NULL, &result);
    printf("CHUNK=%" PRId64 "\nRESULT=0x%08x\n", c, result);
    return report_status("reset", st);
}

/* ---- vector commands ---- */

static uint32_t parse_list(const char *s, uint64_t *out, uint64_t max, const char *opt)
{
    char *copy = xstrdup(s), *save = NULL;
    uint32_t n = 0;
    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        char *plus = strchr(w, '+');
        uint64_t a, k = 1;
        if (plus) {
            *plus = 0;
            k = cli_parse_u64(opt, plus + 1, 1, OC_MAX_VECTOR);
        }
        a = cli_parse_u64(opt, w, 0, max);
        for (uint64_t i = 0; i < k; i++) {
            if (n == OC_MAX_VECTOR)
                cli_usage_error("%s: more than %d entries", opt, OC_MAX_VECTOR);
            if (a + i > max)
                cli_usage_error("%s: %" PRIu64 " is past the last (%" PRIu64 ")", opt, a + i, max);
            out[n++] = a + i;
        }
    }
    free(copy);
    if (!n)
        cli_usage_error("%s: empty list", opt);
    return n;
}

static int vector_done(const char *what, int st, uint32_t result, uint32_t n)
{
    printf("ENTRIES=%u\nRESULT=0x%08x\n", n, result);
    if (n > 32)
        printf("RESULT_NOTE=only entries 0..31 are covered (Linux returns the low 32 bits)\n");
    return report_status(what, st);
}

static int cmd_vector(int argc, char **argv, uint8_t opcode)
{
    const struct oc_geometry *g = &dev.geo;
    uint64_t maxlba = oc_total_chunks(g) * g->clba - 1;
    uint64_t lbas[OC_MAX_VECTOR], dst[OC_MAX_VECTOR];
    uint32_t n, result = 0;
    struct target t;
    uint8_t *buf = NULL;
    int st;

    switch (opcode) {
    case OC_VECTOR_WRITE: parse_opts(argc, argv, &t, " lbas file pattern "); break;
    case OC_VECTOR_READ: parse_opts(argc, argv, &t, " lbas file "); break;
    case OC_VECTOR_RESET: parse_opts(argc, argv, &t, " chunks chunks-list "); break;
    default: parse_opts(argc, argv, &t, " lbas to "); break;
    }
    if (opcode == OC_VECTOR_RESET) {
        if (!t.chunks_list)
            cli_usage_error("vreset needs --chunks LIST");
        n = parse_list(t.chunks_list, lbas, oc_total_chunks(g) - 1, "--chunks");
        for (uint32_t i = 0; i < n; i++)
            lbas[i] *= g->clba;
        st = oc_vector(&dev, opcode, lbas, n, NULL, NULL, &result);
        return vector_done("vreset", st, result, n);
    }
    if (!t.lbas)
        cli_usage_error("%s needs --lbas LIST", argv[0]);
    n = parse_list(t.lbas, lbas, maxlba, "--lbas");
    if (opcode == OC_VECTOR_COPY) {
        if (!t.to)
            cli_usage_error("vcopy needs --to LIST");
        if (parse_list(t.to, dst, maxlba, "--to") != n)
            cli_usage_error("vcopy: --lbas and --to must have as many entries");
        st = oc_vector(&dev, opcode, lbas, n, dst, NULL, &result);
        return vector_done("vcopy", st, result, n);
    }
    if (opcode == OC_VECTOR_WRITE) {
        buf = xalloc((size_t)n * dev.lba_size);
        if (t.have_pattern) {
            for (uint32_t i = 0; i < n; i++)
                fill_pattern(buf + (size_t)i * dev.lba_size, lbas[i], 1, t.pattern, dev.lba_size);
            if (t.file)
                cli_usage_error("vwrite: --file or --pattern, not both");
        } else {
            free(buf);
            t.sectors = n;
            buf = write_data(&t, "vwrite", lbas[0], n);
        }
    } else {
        buf = xalloc((size_t)n * dev.lba_size);
    }
    st = oc_vector(&dev, opcode, lbas, n, NULL, buf, &result);
    if (opcode == OC_VECTOR_READ && st == 0)
        save_data(t.file, buf, (size_t)n * dev.lba_size);
    if (opcode == OC_VECTOR_READ && (!t.file || !strcmp(t.file, "-"))) {
        fprintf(stderr, "ENTRIES=%u\nRESULT=0x%08x\nSTATUS=0x%03x\n", n, result, st < 0 ? 0xfff : st);
        return st ? EXIT_NVME : 0;
    }
    return vector_done(argv[0], st, result, n);
}

/* ---- verify ---- */

static int chunk_state(uint64_t c, struct oc_chunk *out)
{
    int st = oc_chunk_log(&dev, c, 1, out);
    if (st)
        report_status("chunk log", st);
    return st;
}

static int cmd_verify(int argc, char **argv)
{
    const struct oc_geometry *g = &dev.geo;
    struct target t;
    int64_t c0;
    uint64_t bad = 0, written = 0, done;
    size_t len = (size_t)g->clba * dev.lba_size;
    uint8_t *want = xalloc(len), *got = xalloc(len);
    int st = 0, fail = 0;

    parse_opts(argc, argv, &t, " chunk grp pu chk chunks seed ");
    c0 = chunk_of(&t);
    if (c0 < 0)
        cli_usage_error("verify needs a chunk (--chunk or --grp/--pu/--chk)");
    if (!t.nchunks)
        t.nchunks = 1;
    if (c0 + t.nchunks > oc_total_chunks(g))
        cli_usage_error("verify: --chunks %" PRIu64 " from chunk %" PRId64 " goes past the last chunk",
                    t.nchunks, c0);
    for (uint64_t c = c0; c < c0 + t.nchunks; c++) {
        struct oc_chunk ck;
        uint64_t slba = c * g->clba;
        uint64_t mism = 0;

        if (chunk_state(c, &ck))
            return EXIT_NVME;
        if (ck.state & (OC_CS_OPEN | OC_CS_OFFLINE)) {
            printf("chunk=%" PRIu64 " skipped: %s\n", c, oc_state_name(ck.state));
            fail = 1;
            continue;
        }
        if (ck.state & OC_CS_CLOSED) {
            st = oc_vector(&dev, OC_VECTOR_RESET, &slba, 1, NULL, NULL, NULL);
            if (st) {
                printf("chunk=%" PRIu64 " reset failed: %s\n", c, oc_status_name(st));
                fail = 1;
                continue;
            }
        }
        fill_pattern(want, slba, g->clba, t.seed, dev.lba_size);
        st = do_rw(1, slba, g->clba, want, &done);
        written += done;
        if (st) {
            printf("chunk=%" PRIu64 " write failed after %" PRIu64 " sectors: %s\n", c, done,
                   oc_status_name(st));
            fail = 1;
            continue;
        }
        if (chunk_state(c, &ck))
            return EXIT_NVME;
        if (!(ck.state & OC_CS_CLOSED) || ck.wp != slba + g->clba) {
            printf("chunk=%" PRIu64 " after a full write: state %s wp %" PRIu64 ", expected "
                   "closed wp %" PRIu64 "\n", c, oc_state_name(ck.state), ck.wp, slba + g->clba);
            fail = 1;
        }
        memset(got, 0xa5, len);
        st = do_rw(0, slba, g->clba, got, &done);
        if (st) {
            printf("chunk=%" PRIu64 " read failed after %" PRIu64 " sectors: %s\n", c, done,
                   oc_status_name(st));
            fail = 1;
            continue;
        }
        for (uint32_t s = 0; s < g->clba; s++) {
            size_t o = (size_t)s * dev.lba_size;
            if (memcmp(want + o, got + o, dev.lba_size)) {
                if (mism < 8)
                    printf("mismatch lba=%" PRIu64 " (chunk %" PRIu64 " sector %u)\n", slba + s, c, s);
                mism++;
            }
        }
        bad += mism;
        printf("chunk=%" PRIu64 " sectors=%u mismatches=%" PRIu64 "\n", c, g->clba, mism);
    }
    printf("VERIFY_CHUNKS=%" PRIu64 "\nVERIFY_SECTORS=%" PRIu64 "\nMISMATCHES=%" PRIu64 "\n",
           t.nchunks, written, bad);
    printf("VERIFY=%s\n", bad || fail ? "failed" : "ok");
    free(want);
    free(got);
    return bad || fail ? EXIT_NVME : 0;
}

/* ---- bench ---- */

struct bench_job {
    uint64_t *chunks;
    uint32_t n;
    int write;
    int st;
    uint8_t *buf;
};

static void *bench_thread(void *arg)
{
    struct bench_job *j = arg;
    uint64_t done;
    for (uint32_t i = 0; i < j->n && !j->st; i++)
        j->st = do_rw(j->write, j->chunks[i] * dev.geo.clba, dev.geo.clba, j->buf, &done);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run_jobs(struct bench_job *jobs, uint32_t k, int write, double *secs)
{
    pthread_t th[1024];
    double t0 = now_s();
    uint32_t started = 0;
    int st = 0;
    for (; started < k; started++) {
        jobs[started].write = write;
        jobs[started].st = 0;
        int rc = pthread_create(&th[started], NULL, bench_thread, &jobs[started]);
        if (rc) {
            fprintf(stderr, "ocssd bench: cannot start thread %u of %u: %s\n", started + 1, k,
                    strerror(rc));
            st = -rc;
            break;
        }
    }
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        if (jobs[i].st && !st)
            st = jobs[i].st;
    }
    *secs = now_s() - t0;
    return st;
}

static int cmd_bench(int argc, char **argv)
{
    const struct oc_geometry *g = &dev.geo;
    uint32_t npu = g->num_grp * g->num_pu;
    uint64_t pus[32];
    uint32_t npus;
    struct target t;
    struct oc_chunk *log;
    int st = 0;

    parse_opts(argc, argv, &t, " chunks pus first-chk ");
    if (!t.nchunks)
        t.nchunks = 8;
    if (t.pus) {
        char *copy = xstrdup(t.pus), *save = NULL;
        npus = 0;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            if (npus == 32)
                cli_usage_error("--pus: at most 32 entries");
            pus[npus++] = cli_parse_u64("--pus", w, 1, npu > 1024 ? 1024 : npu);
        }
        free(copy);
    } else {
        npus = 0;
        for (uint64_t k = 1; k <= npu && k <= 1024 && npus < 32; k *= 2)
            pus[npus++] = k;
    }
    log = xcalloc(oc_total_chunks(g), sizeof(*log));
    for (uint64_t at = 0, k; at < oc_total_chunks(g) && !st; at += k) {
        k = oc_total_chunks(g) - at < 65536 ? oc_total_chunks(g) - at : 65536;
        st = oc_chunk_log(&dev, at, k, log + at);
    }
    if (st) {
        free(log);
        return report_status("chunk log", st);
    }
    printf("BENCH_CHUNKS=%" PRIu64 " CHUNK_BYTES=%" PRIu64 " TOTAL_PUS=%u\n", t.nchunks,
           (uint64_t)g->clba * dev.lba_size, npu);
    for (uint32_t p = 0; p < npus && !st; p++) {
        uint32_t k = pus[p];
        uint32_t per = (t.nchunks + k - 1) / k; /* chunks per PU */
        struct bench_job *jobs = xcalloc(k, sizeof(*jobs));
        double ws, rs;
        uint64_t bytes;
        int ok = 1;

        if (per + t.first_chk > g->num_chk) {
            printf("pus=%u skipped: needs %u chunks per PU from chunk %" PRIu64 ", a PU has %u\n",
                   k, per, t.first_chk, g->num_chk);
            free(jobs);
            continue;
        }
        /* a failed reset stops the run: the next PU's must not hide it */
        for (uint32_t i = 0; i < k && ok && !st; i++) {
            /* spread the k PUs evenly over the PU index space (and so over groups) */
            uint32_t pu = (uint64_t)i * npu / k;
            jobs[i].chunks = xcalloc(per, sizeof(uint64_t));
            jobs[i].buf = xalloc((size_t)g->clba * dev.lba_size);
            fill_pattern(jobs[i].buf, pu, g->clba, 7, dev.lba_size);
            for (uint32_t j = 0; j < per; j++) {
                uint64_t c = (uint64_t)pu * g->num_chk + t.first_chk + j;
                jobs[i].chunks[j] = c;
                if (log[c].state & (OC_CS_OPEN | OC_CS_OFFLINE)) {
                    printf("pus=%u skipped: chunk %" PRIu64 " is %s\n", k, c,
                           oc_state_name(log[c].state));
                    ok = 0;
                    break;
                }
                if (log[c].state & OC_CS_CLOSED) {
                    uint64_t lba = c * g->clba;
                    st = oc_vector(&dev, OC_VECTOR_RESET, &lba, 1, NULL, NULL, NULL);
                    if (st)
                        break;
                    log[c].state = OC_CS_FREE;
                }
            }
            jobs[i].n = per;
        }
        if (ok && !st) {
            bytes = (uint64_t)k * per * g->clba * dev.lba_size;
            st = run_jobs(jobs, k, 1, &ws);
            if (!st)
                st = run_jobs(jobs, k, 0, &rs);
            if (!st) {
                printf("BENCH pus=%u chunks=%u bytes=%" PRIu64 " write_s=%.3f write_MBps=%.1f "
                       "read_s=%.3f read_MBps=%.1f\n", k, k * per, bytes, ws, bytes / ws / 1e6,
                       rs, bytes / rs / 1e6);
                fflush(stdout);
            }
            /* leave the chunks free again */
            for (uint32_t i = 0; i < k && !st; i++)
                for (uint32_t j = 0; j < per && !st; j++) {
                    uint64_t lba = jobs[i].chunks[j] * g->clba;
                    st = oc_vector(&dev, OC_VECTOR_RESET, &lba, 1, NULL, NULL, NULL);
                }
        }
        for (uint32_t i = 0; i < k; i++) {
            free(jobs[i].chunks);
            free(jobs[i].buf);
        }
        free(jobs);
    }
    free(log);
    return st ? report_status("bench", st) : 0;
}

int main(int argc, char **argv)
{
    cli_prog = "ocssd";
    const char *cmd;
    int i = 1;

    if (argc > 2 && (!strcmp(argv[1], "-d") || !strcmp(argv[1], "--device"))) {
        dev_path = argv[2];
        i = 3;
    }
    if (i >= argc || !strcmp(argv[i], "help") || !strcmp(argv[i], "--help") ||
        !strcmp(argv[i], "-h")) {
        fputs(usage_text, i >= argc ? stderr : stdout);
        return i >= argc ? EXIT_USAGE : 0;
    }
    cmd = argv[i];
    argc -= i;
    argv += i;
    static const char *const known[] = { "geometry", "report", "write", "read", "reset", "vwrite",
                                         "vread", "vreset", "vcopy", "verify", "bench", NULL };
    int found = 0;
    for (const char *const *k = known; *k; k++)
        found |= !strcmp(*k, cmd);
    if (!found)
        cli_usage_error("unknown command '%s'", cmd);
    open_dev();
    if (!strcmp(cmd, "geometry"))
        return cmd_geometry();
    if (!strcmp(cmd, "report"))
        return cmd_report(argc, argv);
    if (!strcmp(cmd, "write"))
        return cmd_rw(argc, argv, 1);
    if (!strcmp(cmd, "read"))
        return cmd_rw(argc, argv, 0);
    if (!strcmp(cmd, "reset"))
        return cmd_reset(argc, argv);
    if (!strcmp(cmd, "vwrite"))
        return cmd_vector(argc, argv, OC_VECTOR_WRITE);
    if (!strcmp(cmd, "vread"))
        return cmd_vector(argc, argv, OC_VECTOR_READ);
    if (!strcmp(cmd, "vreset"))
        return cmd_vector(argc, argv, OC_VECTOR_RESET);
    if (!strcmp(cmd, "vcopy"))
        return cmd_vector(argc, argv, OC_VECTOR_COPY);
    if (!strcmp(cmd, "verify"))
        return cmd_verify(argc, argv);
    return cmd_bench(argc, argv);
}
