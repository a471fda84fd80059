/*
 * femu-sim's traces: blkparse text output (its Q events, or D when there is no Q) and
 * CSV (time,op,offset,length), told apart by their first line, streamed a line at a time.
 * sim_trace_open reads the whole file once to check it: every line parses, every I/O fits
 * the namespace (errors name FILE:LINE); then the records come from the start.
 *
 * CSV: an optional header names the columns; its first name gives the time unit:
 * time, time_s, s, seconds (seconds, the default without a header), time_ms, ms, time_us,
 * us, time_ns, ns. Times are decimals (exact to the ns), offsets and lengths bytes; ops
 * read, write, write_fua, zone_append, zone_append_fua, trim, flush, zone_reset,
 * zone_finish, power_cut, write_zeroes, compare or R, W, WF, ZA, ZAF, T, F, ZR, ZF, PC,
 * WZ, C (power_cut: offset and length empty; the engine cuts the power and brings it back
 * once the job's I/O before it has completed; compare: timed as the read it makes, since
 * femu-sim keeps no data to compare). `#` comments.
 *
 * _fua: the write has Force Unit Access (done once its data is on flash: a write-back
 * buffer writes it through). zone_append: offset is the zone's start, as in the NVMe
 * command; the record goes to the drive as a write at the zone's write pointer when it is
 * issued, where the drive would put the append (femu-sim has no command of its own for
 * it: the model's path is the same). The reader keeps the write pointers of the zones the
 * trace touches: from the namespace's state when a zone is first used
 * (SimTarget.zone_written), then moved by the trace's own writes, appends, resets and
 * finishes (read again after a power cut, which may move them back). An append to a zone
 * without room for it goes as a write the drive refuses (at the zone's start).
 *
 * blkparse: sectors of 512 bytes, times in seconds; RWBS R, W, D (discard: trim), a
 * leading F (preflush: a flush before the op, or alone a flush), an F after the op (FUA);
 * other requests and events are skipped, and so is blkparse's closing summary. Offsets are
 * aligned outwards to the namespace's LBA. blkparse's text has no zone append, reset or
 * finish: the kernel's blktrace (up to Linux 6.12 at least) reports a zone append as a
 * write at the zone's start and a zone reset or finish as a request of no length without
 * its sector, so a zoned file system's trace is best taken as CSV (bench/dbtrace.py
 * records the NVMe commands with the kernel's nvme tracepoints).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "workload-int.h"

#include <ctype.h>
#include <errno.h>
#include <glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NS_PER_S 1000000000ull
#define TRACE_LINE_MAX 4096

typedef enum TraceFmt {
    TRACE_BLKPARSE,
    TRACE_CSV,
} TraceFmt;

struct SimTrace {
    FILE *f;
    char *path;
    TraceFmt fmt;
    char action;                /* blkparse: the events used, 'Q' or else 'D' */
    uint64_t csv_unit_ns;       /* CSV: what the time column counts */
    uint64_t csv_lines;         /* CSV lines of this pass, not counting comments */
    char dev[32];               /* blkparse: the device of the events */
    bool summary;               /* blkparse: past the events, in the summary */
    uint64_t line;
    uint64_t t_first;           /* the first I/O's time */
    SimTarget t;
    /* zone appends' placement: each zone's write pointer (bytes), once known */
    uint64_t nr_zones;
    uint64_t *wp;
    uint8_t *wp_known;
    char buf[TRACE_LINE_MAX];
};

static bool is_digits(const char *s)
{
    if (!*s) {
        return false;
    }
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s)) {
            return false;
        }
    }
    return true;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;

    if (!is_digits(s)) {
        return false;
    }
    for (; *s; s++) {
        if (v > (UINT64_MAX - (*s - '0')) / 10) {
            return false;
        }
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return true;
}

/* "S[.F]" counting units of unit_ns each, exactly to the ns. */
static bool parse_decimal_ns(const char *s, uint64_t unit_ns, uint64_t *out)
{
    uint64_t ip = 0, frac = 0, scale = 1;
    const char *dot = strchr(s, '.');
    char ibuf[24];
    size_t n = dot ? (size_t)(dot - s) : strlen(s);

    if (n == 0 || n >= sizeof(ibuf)) {
        return false;
    }
    memcpy(ibuf, s, n);
    ibuf[n] = '\0';
    if (!parse_u64(ibuf, &ip) || ip > UINT64_MAX / unit_ns / 2) {
        return false;
    }
    if (dot) {
        if (!is_digits(dot + 1)) {
            return false;
        }
        for (const char *q = dot + 1; *q; q++) {
            if (scale < unit_ns) {   /* digits beyond 1 ns are dropped */
                frac = frac * 10 + (*q - '0');
                scale *= 10;
            }
        }
    }
    *out = ip * unit_ns + (scale > 1 ? frac * (unit_ns / scale) : 0);
    return true;
}

typedef enum LineKind {
    LINE_ERROR = -1,
    LINE_SKIP,
    LINE_IO,
} LineKind;

static bool tfail(SimTrace *tr, char **err, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static bool tfail(SimTrace *tr, char **err, const char *fmt, ...)
{
    va_list ap;
    char *msg;

    if (err && !*err) {
        va_start(ap, fmt);
        msg = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        *err = g_strdup_printf("%s:%" G_GUINT64_FORMAT ": %s", tr->path, tr->line, msg);
        g_free(msg);
    }
    return false;
}

/* Splits s at blanks into at most max tokens; returns how many. */
static int tokenize(char *s, char **tok, int max)
{
    int n = 0;

    while (n < max) {
        while (*s && isspace((unsigned char)*s)) {
            s++;
        }
        if (!*s) {
            break;
        }
        tok[n++] = s;
        while (*s && !isspace((unsigned char)*s)) {
            s++;
        }
        if (*s) {
            *s++ = '\0';
        }
    }
    return n;
}

static bool is_blk_dev(const char *s)
{
    const char *c = strchr(s, ',');
    char maj[16];

    if (!c || (size_t)(c - s) >= sizeof(maj) || c == s) {
        return false;
    }
    memcpy(maj, s, c - s);
    maj[c - s] = '\0';
    return is_digits(maj) && is_digits(c + 1);
}

static bool is_blk_time(const char *s)
{
    const char *dot = strchr(s, '.');

    return dot && dot != s && strspn(s, "0123456789") == (size_t)(dot - s) &&
        is_digits(dot + 1);
}

/*
 * blkparse's default output: "dev cpu seq time pid action RWBS [sector + n] [proc]"; the
 * RWBS is an optional F (preflush), then D(iscard)/W/R/N, then F(UA)/A/S/M flags.
 * Sets *action; LINE_IO only for events of tr->action (0: both Q and D, when scanning).
 */
static LineKind blk_line(SimTrace *tr, char *line, SimTraceRec *rec, char *action, char **err)
{
    char *tok[10], *rwbs;
    int n;
    uint64_t sector, nsec;
    bool pre = false;

    n = tokenize(line, tok, 10);
    if (n == 0) {
        return LINE_SKIP;
    }
    if (n < 7 || !is_blk_dev(tok[0]) || !is_digits(tok[1]) || !is_digits(tok[2]) ||
        !is_blk_time(tok[3]) || !is_digits(tok[4])) {
        /* blkparse ends with per-CPU and total summaries */
        if (tr->summary || (n >= 2 && (g_str_has_prefix(tok[0], "CPU") ||
                                        strcmp(tok[0], "Total") == 0) && tok[1][0] == '(')) {
            tr->summary = true;
            return LINE_SKIP;
        }
        return tfail(tr, err, "not a blkparse event line (expected: dev cpu seq time pid "
                     "action RWBS sector + blocks [process])") ? LINE_SKIP : LINE_ERROR;
    }
    *action = tok[5][1] == '\0' ? tok[5][0] : '?';
    if (*action != 'Q' && *action != 'D') {
        return LINE_SKIP;
    }
    if (tr->action && *action != tr->action) {
        return LINE_SKIP;
    }
    if (!tr->dev[0]) {
        g_strlcpy(tr->dev, tok[0], sizeof(tr->dev));
    } else if (strcmp(tr->dev, tok[0]) != 0) {
        tfail(tr, err, "events of two devices (%s and %s): split the trace by device",
              tr->dev, tok[0]);
        return LINE_ERROR;
    }
    parse_decimal_ns(tok[3], NS_PER_S, &rec->t_ns);
    rwbs = tok[6];
    if (rwbs[0] == 'F') {
        pre = true;
        rwbs++;
    }
    switch (rwbs[0]) {
    case 'D':
        rec->op = SIM_OP_TRIM;
        break;
    case 'W':
        rec->op = SIM_OP_WRITE;
        break;
    case 'R':
        rec->op = SIM_OP_READ;
        break;
    default:
        if (!pre) {
            return LINE_SKIP;   /* no data, no flush: some other request */
        }
        rec->op = SIM_OP_FLUSH;
        break;
    }
    rec->preflush = rec->fua = rec->append = false;
    rec->offset = rec->len = 0;
    if (n >= 9 && strcmp(tok[8], "+") == 0) {
        if (!parse_u64(tok[7], &sector) || !parse_u64(tok[9], &nsec) ||
            sector > UINT64_MAX / 1024 || nsec > UINT32_MAX) {
            tfail(tr, err, "bad sector range '%s + %s'", tok[7], tok[9]);
            return LINE_ERROR;
        }
        rec->offset = sector * 512;
        rec->len = nsec * 512;
    } else if (n > 7 && tok[7][0] != '[') {
        tfail(tr, err, "expected 'sector + blocks' or '[process]' after the RWBS '%s'",
              tok[6]);
        return LINE_ERROR;
    }
    if (rec->op != SIM_OP_FLUSH && rec->len == 0) {
        if (!pre) {
            return LINE_SKIP;   /* a zero-length request moves no data */
        }
        rec->op = SIM_OP_FLUSH;
    }
    rec->preflush = pre && rec->op != SIM_OP_FLUSH;
    /* flags after the op: F(UA), A(head), S(ync), M(eta) */
    rec->fua = (rec->op == SIM_OP_WRITE || rec->op == SIM_OP_READ) && strchr(rwbs + 1, 'F');
    return LINE_IO;
}

static char *csv_field(char *s)
{
    return g_strstrip(s);
}

static bool csv_unit(const char *name, uint64_t *unit_ns)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } names[] = {
        { "time", NS_PER_S }, { "time_s", NS_PER_S }, { "s", NS_PER_S },
        { "seconds", NS_PER_S }, { "time_ms", 1000000 }, { "ms", 1000000 },
        { "time_us", 1000 }, { "us", 1000 }, { "time_ns", 1 }, { "ns", 1 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        if (g_ascii_strcasecmp(name, names[i].name) == 0) {
            *unit_ns = names[i].ns;
            return true;
        }
    }
    return false;
}

/* "time,op,offset,length"; a first line of names is a header (its time name: the unit). */
static LineKind csv_line(SimTrace *tr, char *line, SimTraceRec *rec, char **err)
{
    static const struct {
        const char *name;
        SimOp op;
        bool fua, append;
    } ops[] = {
        { "read", SIM_OP_READ }, { "r", SIM_OP_READ }, { "write", SIM_OP_WRITE },
        { "w", SIM_OP_WRITE }, { "write_fua", SIM_OP_WRITE, true },
        { "wf", SIM_OP_WRITE, true }, { "zone_append", SIM_OP_WRITE, false, true },
        { "za", SIM_OP_WRITE, false, true }, { "zone_append_fua", SIM_OP_WRITE, true, true },
        { "zaf", SIM_OP_WRITE, true, true }, { "trim", SIM_OP_TRIM }, { "t", SIM_OP_TRIM },
        { "flush", SIM_OP_FLUSH }, { "f", SIM_OP_FLUSH },
        { "zone_reset", SIM_OP_ZONE_RESET }, { "zr", SIM_OP_ZONE_RESET },
        { "zone_finish", SIM_OP_ZONE_FINISH }, { "zf", SIM_OP_ZONE_FINISH },
        { "power_cut", SIM_OP_POWER_CUT }, { "pc", SIM_OP_POWER_CUT },
        { "write_zeroes", SIM_OP_WRITE_ZEROES }, { "wz", SIM_OP_WRITE_ZEROES },
        { "compare", SIM_OP_COMPARE }, { "c", SIM_OP_COMPARE },
    };
    char *f[4], *s = line, *c;
    int n = 0;
    bool found = false, first;

    line = g_strstrip(line);
    if (!*line || line[0] == '#') {
        return LINE_SKIP;
    }
    first = tr->csv_lines++ == 0;
    s = line;
    while (n < 4) {
        c = strchr(s, ',');
        f[n++] = s;
        if (!c) {
            break;
        }
        *c = '\0';
        s = c + 1;
        if (n == 4) {
            tfail(tr, err, "more than 4 fields (expected time,op,offset,length)");
            return LINE_ERROR;
        }
    }
    if (n != 4) {
        tfail(tr, err, "%d field%s (expected time,op,offset,length)", n, n == 1 ? "" : "s");
        return LINE_ERROR;
    }
    for (int i = 0; i < 4; i++) {
        f[i] = csv_field(f[i]);
    }
    if (first && !isdigit((unsigned char)f[0][0])) {
        if (!csv_unit(f[0], &tr->csv_unit_ns) || g_ascii_strcasecmp(f[1], "op") != 0 ||
            g_ascii_strcasecmp(f[2], "offset") != 0 ||
            (g_ascii_strcasecmp(f[3], "length") != 0 && g_ascii_strcasecmp(f[3], "len") != 0)) {
            tfail(tr, err, "bad header '%s,%s,%s,%s' (expected time|time_s|time_ms|time_us|"
                  "time_ns,op,offset,length)", f[0], f[1], f[2], f[3]);
            return LINE_ERROR;
        }
        return LINE_SKIP;
    }
    if (!parse_decimal_ns(f[0], tr->csv_unit_ns, &rec->t_ns)) {
        tfail(tr, err, "bad time '%s' (expected a number >= 0, in %s)", f[0],
              tr->csv_unit_ns == NS_PER_S ? "seconds" : tr->csv_unit_ns == 1000000 ? "ms" :
              tr->csv_unit_ns == 1000 ? "us" : "ns");
        return LINE_ERROR;
    }
    rec->preflush = false;
    for (size_t i = 0; i < G_N_ELEMENTS(ops) && !found; i++) {
        if (g_ascii_strcasecmp(f[1], ops[i].name) == 0) {
            rec->op = ops[i].op;
            rec->fua = ops[i].fua;
            rec->append = ops[i].append;
            found = true;
        }
    }
    if (!found) {
        tfail(tr, err, "bad op '%s' (allowed: read, write, write_fua, zone_append, "
              "zone_append_fua, trim, flush, zone_reset, zone_finish, power_cut, "
              "write_zeroes, compare, or R, W, WF, ZA, ZAF, T, F, ZR, ZF, PC, WZ, C)", f[1]);
        return LINE_ERROR;
    }
    rec->offset = rec->len = 0;
    if ((rec->op == SIM_OP_FLUSH || rec->op == SIM_OP_POWER_CUT) && !*f[2] && !*f[3]) {
        return LINE_IO;
    }
    if (!parse_u64(f[2], &rec->offset)) {
        tfail(tr, err, "bad offset '%s' (expected bytes)", f[2]);
        return LINE_ERROR;
    }
    if (!parse_u64(f[3], &rec->len)) {
        tfail(tr, err, "bad length '%s' (expected bytes)", f[3]);
        return LINE_ERROR;
    }
    if ((rec->op == SIM_OP_READ || rec->op == SIM_OP_WRITE || rec->op == SIM_OP_TRIM ||
         rec->op == SIM_OP_WRITE_ZEROES || rec->op == SIM_OP_COMPARE) && rec->len == 0) {
        tfail(tr, err, "length 0 for a %s", f[1]);
        return LINE_ERROR;
    }
    return LINE_IO;
}

static uint64_t zone_cap(const SimTarget *t)
{
    return t->zone_cap_bytes ? t->zone_cap_bytes : t->zone_bytes;
}

/* Fits the record to the namespace (LBA-aligned outwards, zone ops at zone starts). */
static bool trace_fit(SimTrace *tr, const SimTarget *t, SimTraceRec *rec, char **err)
{
    uint64_t end;

    if (rec->op == SIM_OP_FLUSH || rec->op == SIM_OP_POWER_CUT) {
        rec->offset = rec->len = 0;
        return true;
    }
    if (rec->op == SIM_OP_ZONE_RESET || rec->op == SIM_OP_ZONE_FINISH || rec->append) {
        const char *what = rec->append ? "zone append" : "zone operation";

        if (!t->zone_bytes) {
            return tfail(tr, err, "a %s on a namespace that is not zoned", what);
        }
        if (rec->offset % t->zone_bytes || rec->offset >= t->ns_bytes) {
            return tfail(tr, err, "%s at %" G_GUINT64_FORMAT ", not the start "
                         "of a zone (zones of %" G_GUINT64_FORMAT " bytes, namespace of %"
                         G_GUINT64_FORMAT ")", what, rec->offset, t->zone_bytes, t->ns_bytes);
        }
        if (!rec->append) {
            rec->len = t->zone_bytes;
            return true;
        }
        if (rec->len % t->lba_bytes || rec->len > zone_cap(t)) {
            return tfail(tr, err, "zone append of %" G_GUINT64_FORMAT " bytes: not whole "
                         "LBAs of %u bytes or beyond a zone's capacity (%" G_GUINT64_FORMAT
                         " bytes)", rec->len, t->lba_bytes, zone_cap(t));
        }
        return true;
    }
    if (rec->offset > t->ns_bytes || rec->len > t->ns_bytes - rec->offset) {
        return tfail(tr, err, "I/O at %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT " bytes "
                     "is beyond the namespace (%" G_GUINT64_FORMAT " bytes)", rec->offset,
                     rec->len, t->ns_bytes);
    }
    end = (rec->offset + rec->len + t->lba_bytes - 1) / t->lba_bytes * t->lba_bytes;
    rec->offset = rec->offset / t->lba_bytes * t->lba_bytes;
    rec->len = end - rec->offset;
    return true;
}

/* The next line into tr->buf; 0 at the end, -1 when a line does not fit. */
static int trace_getline(SimTrace *tr)
{
    size_t n;

    if (!fgets(tr->buf, sizeof(tr->buf), tr->f)) {
        return 0;
    }
    tr->line++;
    n = strlen(tr->buf);
    if (n == sizeof(tr->buf) - 1 && tr->buf[n - 1] != '\n' && !feof(tr->f)) {
        return -1;
    }
    return 1;
}

static void wp_forget(SimTrace *tr)
{
    if (tr->wp_known) {
        memset(tr->wp_known, 0, tr->nr_zones);
    }
}

/* Zone z's write pointer in bytes from its start: the namespace's, until the trace moved it. */
static uint64_t *zone_wp(SimTrace *tr, uint64_t z)
{
    if (!tr->wp_known[z]) {
        tr->wp[z] = tr->t.zone_written ? tr->t.zone_written(tr->t.opaque, z) : 0;
        tr->wp_known[z] = 1;
    }
    return &tr->wp[z];
}

/*
 * A replayed record: an append placed at its zone's write pointer, and the write pointers
 * moved as the drive will move them.
 */
static void trace_place(SimTrace *tr, SimTraceRec *rec)
{
    uint64_t zb = tr->t.zone_bytes, z, *wp;

    if (rec->op == SIM_OP_POWER_CUT) {
        wp_forget(tr);          /* power-on may roll write pointers back */
        return;
    }
    if (!zb || (rec->op != SIM_OP_WRITE && rec->op != SIM_OP_ZONE_RESET &&
                rec->op != SIM_OP_ZONE_FINISH)) {
        return;
    }
    z = rec->offset / zb;
    if (z >= tr->nr_zones) {
        return;                 /* the drive refuses it */
    }
    wp = zone_wp(tr, z);
    if (rec->op == SIM_OP_ZONE_RESET) {
        *wp = 0;
    } else if (rec->op == SIM_OP_ZONE_FINISH) {
        *wp = zone_cap(&tr->t);
    } else if (rec->append) {
        if (*wp + rec->len <= zone_cap(&tr->t)) {
            rec->offset += *wp;
            *wp += rec->len;
        }                       /* else at the zone's start: the drive refuses it */
        rec->append = false;
    } else if (rec->offset + rec->len <= (z + 1) * zb) {
        *wp = MAX(*wp, rec->offset + rec->len - z * zb);
    }
}

static bool trace_read(SimTrace *tr, const SimTarget *t, SimTraceRec *rec, char **err)
{
    int r;

    while ((r = trace_getline(tr)) > 0) {
        LineKind k;
        char action;

        if (tr->fmt == TRACE_BLKPARSE) {
            k = blk_line(tr, tr->buf, rec, &action, err);
        } else {
            k = csv_line(tr, tr->buf, rec, err);
        }
        if (k == LINE_ERROR) {
            return false;
        }
        if (k == LINE_IO) {
            if (!trace_fit(tr, t, rec, err)) {
                return false;
            }
            trace_place(tr, rec);
            return true;
        }
    }
    if (r < 0) {
        tfail(tr, err, "line longer than %d bytes", TRACE_LINE_MAX - 1);
    }
    return false;
}

void sim_trace_free(SimTrace *tr)
{
    if (tr) {
        if (tr->f) {
            fclose(tr->f);
        }
        g_free(tr->path);
        g_free(tr->wp);
        g_free(tr->wp_known);
        g_free(tr);
    }
}

/*
 * Opens and checks the whole trace once, streaming: its format, that every line parses
 * and fits the namespace, which blkparse events to use, and the first I/O's time.
 */
SimTrace *sim_trace_open(const char *path, const SimTarget *t, char **err)
{
    SimTrace *tr = g_new0(SimTrace, 1);
    SimTraceRec rec;
    uint64_t nr[2] = { 0, 0 }, first_t[2] = { 0, 0 };
    bool decided = false;
    int r;

    tr->path = g_strdup(path);
    tr->t = *t;
    tr->csv_unit_ns = NS_PER_S;
    if (t->zone_bytes) {
        tr->nr_zones = t->ns_bytes / t->zone_bytes;
        tr->wp = g_new0(uint64_t, tr->nr_zones);
        tr->wp_known = g_new0(uint8_t, tr->nr_zones);
    }
    tr->f = fopen(path, "r");
    if (!tr->f) {
        if (err && !*err) {
            *err = g_strdup_printf("%s: %s", path, g_strerror(errno));
        }
        sim_trace_free(tr);
        return NULL;
    }
    while ((r = trace_getline(tr)) > 0) {
        char line[TRACE_LINE_MAX], *tok[8], *s;
        LineKind k;
        char action = 0;

        if (!decided) {
            memcpy(line, tr->buf, sizeof(line));
            s = g_strstrip(line);
            if (!*s || s[0] == '#') {
                continue;
            }
            if (g_str_has_prefix(s, "fio version")) {
                tfail(tr, err, "fio's own iolog format is not supported; use blkparse "
                      "text output or CSV (time,op,offset,length)");
                goto fail;
            }
            if (tokenize(s, tok, 8) >= 4 && is_blk_dev(tok[0]) && is_blk_time(tok[3])) {
                tr->fmt = TRACE_BLKPARSE;
            } else if (strchr(tr->buf, ',')) {
                tr->fmt = TRACE_CSV;
            } else {
                tfail(tr, err, "neither a blkparse event line nor CSV (time,op,offset,"
                      "length)");
                goto fail;
            }
            decided = true;
        }
        if (tr->fmt == TRACE_BLKPARSE) {
            k = blk_line(tr, tr->buf, &rec, &action, err);
        } else {
            k = csv_line(tr, tr->buf, &rec, err);
            action = 'Q';
        }
        if (k == LINE_ERROR) {
            goto fail;
        }
        if (k == LINE_IO) {
            int i = action == 'D';

            if (!trace_fit(tr, t, &rec, err)) {
                goto fail;
            }
            if (nr[i]++ == 0) {
                first_t[i] = rec.t_ns;
            }
        }
    }
    if (r < 0) {
        tfail(tr, err, "line longer than %d bytes", TRACE_LINE_MAX - 1);
        goto fail;
    }
    if (!nr[0] && !nr[1]) {
        if (err && !*err) {
            *err = g_strdup_printf("%s: no I/O in the trace", path);
        }
        goto fail;
    }
    tr->action = nr[0] ? 'Q' : 'D';
    tr->t_first = nr[0] ? first_t[0] : first_t[1];
    sim_trace_rewind(tr);
    return tr;
fail:
    sim_trace_free(tr);
    return NULL;
}

void sim_trace_rewind(SimTrace *tr)
{
    rewind(tr->f);
    tr->line = 0;
    tr->csv_lines = 0;
    tr->summary = false;
    wp_forget(tr);
}

bool sim_trace_next(SimTrace *tr, SimTraceRec *rec)
{
    return trace_read(tr, &tr->t, rec, NULL);
}

uint64_t sim_trace_first_ns(const SimTrace *tr)
{
    return tr->t_first;
}
