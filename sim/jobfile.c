/*
 * fio job files, the subset femu-sim runs: see workload.h. Values follow fio's parser
 * (HOWTO "Parameter types"): sizes with k/m/g/t/p suffixes (kb_base=1024 by default, where
 * fio reads "KiB" as 1000), times with us/ms/s/m/h/d suffixes, `;` and `#` comments.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "workload-int.h"

#include <ctype.h>
#include <errno.h>
#include <glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_US 1000ull
#define NS_PER_S 1000000000ull

static const double default_percentiles[] = {
    1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99,
};

typedef struct Parser {
    const char *file;
    uint32_t line;
    char *err;
    GArray *jobs;               /* SimJob */
    SimJob global;              /* what [global] sections set so far */
    SimJobOpts gopts;
    SimJob *cur;                /* the section being read: &global or the last job */
    SimJobOpts *opts;
    uint32_t cur_line;          /* its header's line */
} Parser;

static bool perr(Parser *p, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static bool perr(Parser *p, const char *fmt, ...)
{
    va_list ap;
    char *msg;

    if (p->err) {
        return false;
    }
    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    p->err = g_strdup_printf("%s:%u: %s", p->file, p->line, msg);
    g_free(msg);
    return false;
}

static bool bad_value(Parser *p, const char *key, const char *val, const char *allowed)
{
    return perr(p, "option '%s': bad value '%s' (allowed: %s)", key, val, allowed);
}

/* ---- values ---- */

/* Decimal or 0x hexadecimal digits at *s; advances *s past them. */
static bool parse_digits(const char **s, uint64_t *out)
{
    const char *q = *s;
    unsigned base = 10;
    uint64_t v = 0;
    bool any = false;

    if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) {
        base = 16;
        q += 2;
    }
    for (;; q++) {
        unsigned d;

        if (isdigit((unsigned char)*q)) {
            d = *q - '0';
        } else if (base == 16 && isxdigit((unsigned char)*q)) {
            d = tolower((unsigned char)*q) - 'a' + 10;
        } else {
            break;
        }
        if (v > (UINT64_MAX - d) / base) {
            return false;
        }
        v = v * base + d;
        any = true;
    }
    *s = q;
    *out = v;
    return any;
}

static bool parse_uint(const char *s, uint64_t *out)
{
    return parse_digits(&s, out) && *s == '\0';
}

/*
 * A byte count: digits and an optional unit, or (pct != NULL) N% with N in 0..100. With
 * kb_base=1024 (fio's default) k/kb and friends are powers of 1024 and kib/mib... powers
 * of 1000; kb_base=1000 swaps them.
 */
static bool parse_bytes(const char *s, uint32_t kb_base, uint64_t *out, bool *is_pct)
{
    static const char units[] = "kmgtp";
    uint64_t v, mult = 1;
    const char *u;
    char lower[8];
    size_t n;

    if (is_pct) {
        *is_pct = false;
    }
    if (!parse_digits(&s, &v)) {
        return false;
    }
    if (*s == '\0') {
        *out = v;
        return true;
    }
    if (is_pct && s[0] == '%' && s[1] == '\0') {
        if (v > 100) {
            return false;
        }
        *is_pct = true;
        *out = v;
        return true;
    }
    n = strlen(s);
    if (n > 3) {
        return false;
    }
    for (size_t i = 0; i <= n; i++) {
        lower[i] = tolower((unsigned char)s[i]);
    }
    u = strchr(units, lower[0]);
    if (!u || lower[0] == '\0') {
        return false;
    }
    if (n == 1 || (n == 2 && lower[1] == 'b')) {
        mult = kb_base;
    } else if (n == 3 && lower[1] == 'i' && lower[2] == 'b') {
        mult = kb_base == 1024 ? 1000 : 1024;
    } else {
        return false;
    }
    for (long pow = u - units + 1; pow > 0; pow--) {
        if (v > UINT64_MAX / mult) {
            return false;
        }
        v *= mult;
    }
    *out = v;
    return true;
}

/* A time in ns; unit_ns is what a bare number counts (fio: seconds or microseconds). */
static bool parse_time(const char *s, uint64_t unit_ns, uint64_t *out)
{
    static const struct {
        const char *sfx;
        uint64_t ns;
    } units[] = {
        { "us", NS_PER_US }, { "usec", NS_PER_US }, { "ms", 1000 * NS_PER_US },
        { "msec", 1000 * NS_PER_US }, { "s", NS_PER_S }, { "m", 60 * NS_PER_S },
        { "h", 3600 * NS_PER_S }, { "d", 86400 * NS_PER_S },
    };
    uint64_t v;

    if (!parse_digits(&s, &v)) {
        return false;
    }
    if (*s != '\0') {
        unit_ns = 0;
        for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
            if (g_ascii_strcasecmp(s, units[i].sfx) == 0) {
                unit_ns = units[i].ns;
            }
        }
        if (!unit_ns) {
            return false;
        }
    }
    if (v > UINT64_MAX / unit_ns) {
        return false;
    }
    *out = v * unit_ns;
    return true;
}

static bool parse_double(const char *s, double *out)
{
    char *end;

    if (!*s || isspace((unsigned char)*s)) {
        return false;
    }
    errno = 0;
    *out = g_ascii_strtod(s, &end);
    return errno == 0 && *end == '\0' && *out == *out;
}

/* ---- options ---- */

typedef bool (*OptFn)(Parser *p, const char *key, const char *val);

static bool need_value(Parser *p, const char *key, const char *val)
{
    if (!val || !*val) {
        return perr(p, "option '%s' needs a value", key);
    }
    return true;
}

static bool get_bool(Parser *p, const char *key, const char *val, bool *out)
{
    if (!val) {
        *out = true;            /* a bare flag */
    } else if (strcmp(val, "1") == 0) {
        *out = true;
    } else if (strcmp(val, "0") == 0) {
        *out = false;
    } else {
        return bad_value(p, key, val, "0 or 1, or the bare option name for 1");
    }
    return true;
}

static bool get_uint(Parser *p, const char *key, const char *val, uint64_t lo, uint64_t hi,
                     uint64_t *out)
{
    char allowed[96];

    if (!need_value(p, key, val)) {
        return false;
    }
    if (!parse_uint(val, out) || *out < lo || *out > hi) {
        snprintf(allowed, sizeof(allowed), "an integer in %" G_GUINT64_FORMAT "..%"
                 G_GUINT64_FORMAT, lo, hi);
        return bad_value(p, key, val, allowed);
    }
    return true;
}

static bool get_u32(Parser *p, const char *key, const char *val, uint32_t lo, uint32_t hi,
                    uint32_t *out)
{
    uint64_t v;

    if (!get_uint(p, key, val, lo, hi, &v)) {
        return false;
    }
    *out = v;
    return true;
}

static bool get_time(Parser *p, const char *key, const char *val, uint64_t unit_ns,
                     uint64_t *out)
{
    if (!need_value(p, key, val)) {
        return false;
    }
    if (!parse_time(val, unit_ns, out) || *out > SIM_MAX_TIME_NS) {
        return bad_value(p, key, val, unit_ns == NS_PER_S
                         ? "an integer time in seconds, or with a us/ms/s/m/h/d suffix, up "
                           "to 416d (femu-sim's virtual time ends at 2^55 ns)"
                         : "an integer time in microseconds, or with a us/ms/s/m/h/d suffix, "
                           "up to 416d (femu-sim's virtual time ends at 2^55 ns)");
    }
    return true;
}

static bool get_amount(Parser *p, const char *key, const char *val, bool pct_ok,
                       SimAmount *out)
{
    uint64_t v;
    bool is_pct = false;

    if (!need_value(p, key, val)) {
        return false;
    }
    if (!parse_bytes(val, p->opts->kb_base, &v, pct_ok ? &is_pct : NULL)) {
        return bad_value(p, key, val, pct_ok
                         ? "bytes with an optional k/m/g/t/p unit, or a percentage 0%..100%"
                         : "bytes with an optional k/m/g/t/p unit");
    }
    out->is_pct = is_pct;
    out->pct = is_pct ? v : 0;
    out->bytes = is_pct ? 0 : v;
    return true;
}

static bool opt_ignored(Parser *p, const char *key, const char *val)
{
    (void)p, (void)key, (void)val;
    return true;
}

static bool opt_name(Parser *p, const char *key, const char *val)
{
    if (!need_value(p, key, val)) {
        return false;
    }
    g_free(p->cur->name);
    p->cur->name = g_strdup(val);
    return true;
}

static bool opt_rw(Parser *p, const char *key, const char *val)
{
    static const struct {
        const char *name;
        bool r, w, t, random;
    } modes[] = {
        { "read", 1, 0, 0, 0 }, { "write", 0, 1, 0, 0 }, { "randread", 1, 0, 0, 1 },
        { "randwrite", 0, 1, 0, 1 }, { "rw", 1, 1, 0, 0 }, { "readwrite", 1, 1, 0, 0 },
        { "randrw", 1, 1, 0, 1 }, { "trim", 0, 0, 1, 0 }, { "randtrim", 0, 0, 1, 1 },
    };
    SimJobOpts *o = p->opts;

    if (!need_value(p, key, val)) {
        return false;
    }
    if (strchr(val, ':')) {
        return perr(p, "option '%s': the ':N' offset modifier of '%s' is not supported by "
                    "femu-sim", key, val);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
        if (strcmp(val, modes[i].name) == 0) {
            o->ddir[SIM_DDIR_READ] = modes[i].r;
            o->ddir[SIM_DDIR_WRITE] = modes[i].w;
            o->ddir[SIM_DDIR_TRIM] = modes[i].t;
            o->random = modes[i].random;
            return true;
        }
    }
    return bad_value(p, key, val, "read, write, randread, randwrite, rw, readwrite, randrw, "
                     "trim, randtrim");
}

static bool opt_rwmix(Parser *p, const char *key, const char *val)
{
    uint32_t v;

    if (!get_u32(p, key, val, 0, 100, &v)) {
        return false;
    }
    p->opts->rwmixread = strcmp(key, "rwmixread") == 0 ? v : 100 - v;
    return true;
}

/*
 * fio's per-direction lists (bs, bssplit): "A" sets reads, writes and trims; "A,B" reads
 * and then writes and trims; "A,B,C" each; an empty part keeps what was there.
 */
static bool split_ddirs(Parser *p, const char *key, const char *val, char **parts,
                        bool set[SIM_DDIRS])
{
    char **v = g_strsplit(val, ",", -1);
    guint n = g_strv_length(v);

    if (n > SIM_DDIRS) {
        g_strfreev(v);
        return bad_value(p, key, val, "at most three comma-separated parts: read, write, trim");
    }
    for (int d = 0; d < SIM_DDIRS; d++) {
        const char *s = d < (int)n ? v[d] : (n == 1 ? v[0] : (n == 2 ? v[1] : ""));

        parts[d] = g_strdup(s);
        set[d] = *s != '\0';
    }
    g_strfreev(v);
    return true;
}

static bool opt_bs(Parser *p, const char *key, const char *val)
{
    char *parts[SIM_DDIRS];
    bool set[SIM_DDIRS];
    uint64_t bs[SIM_DDIRS];
    bool ok = true;

    if (!need_value(p, key, val) || !split_ddirs(p, key, val, parts, set)) {
        return false;
    }
    for (int d = 0; d < SIM_DDIRS && ok; d++) {
        if (set[d] && (!parse_bytes(parts[d], p->opts->kb_base, &bs[d], NULL) || !bs[d])) {
            ok = bad_value(p, key, val, "a block size > 0 with an optional k/m/g unit, or "
                           "READ,WRITE[,TRIM] sizes");
        }
    }
    for (int d = 0; d < SIM_DDIRS; d++) {
        if (ok && set[d]) {
            p->opts->bs[d] = bs[d];
        }
        g_free(parts[d]);
    }
    return ok;
}

static bool parse_split_list(Parser *p, const char *key, const char *list,
                             SimBsSplit *out, uint32_t *nr_out)
{
    char **ents = g_strsplit(list, ":", -1);
    guint n = g_strv_length(ents);
    uint32_t missing = 0;
    double sum = 0;
    bool ok = true;

    if (n > SIM_BSSPLIT_MAX) {
        g_strfreev(ents);
        return perr(p, "option '%s': more than %d block sizes in '%s'", key,
                    SIM_BSSPLIT_MAX, list);
    }
    for (guint i = 0; i < n && ok; i++) {
        char *slash = strchr(ents[i], '/');
        uint64_t perc;

        if (slash) {
            *slash++ = '\0';
        }
        if (!parse_bytes(ents[i], p->opts->kb_base, &out[i].bs, NULL) || !out[i].bs) {
            ok = perr(p, "option '%s': bad block size '%s' in '%s' (allowed: a size > 0 "
                      "with an optional k/m/g unit)", key, ents[i], list);
        } else if (!slash || !*slash) {
            out[i].perc = -1;
            missing++;
        } else if (!parse_uint(slash, &perc) || perc > 100) {
            ok = perr(p, "option '%s': bad percentage '%s' in '%s' (allowed: 0..100, or "
                      "empty to share the rest)", key, slash, list);
        } else {
            out[i].perc = perc;
            sum += perc;
        }
    }
    g_strfreev(ents);
    if (!ok) {
        return false;
    }
    if (sum > 100 || (!missing && sum != 100)) {
        return perr(p, "option '%s': the percentages of '%s' add up to %g, not 100", key,
                    list, sum);
    }
    for (guint i = 0; i < n; i++) {
        if (out[i].perc < 0) {
            out[i].perc = (100 - sum) / missing;
        }
    }
    *nr_out = n;
    return true;
}

static bool opt_bssplit(Parser *p, const char *key, const char *val)
{
    char *parts[SIM_DDIRS];
    bool set[SIM_DDIRS];
    SimJobOpts *o = p->opts;
    bool ok = true;

    if (!need_value(p, key, val) || !split_ddirs(p, key, val, parts, set)) {
        return false;
    }
    for (int d = 0; d < SIM_DDIRS; d++) {
        if (ok && set[d]) {
            ok = parse_split_list(p, key, parts[d], o->split[d], &o->nr_split[d]);
        }
        g_free(parts[d]);
    }
    return ok;
}

static bool opt_size(Parser *p, const char *key, const char *val)
{
    if (!get_amount(p, key, val, true, &p->opts->size)) {
        return false;
    }
    if (p->opts->size.is_pct ? p->opts->size.pct == 0 : p->opts->size.bytes == 0) {
        return bad_value(p, key, val, "a size > 0 or a percentage 1%..100%");
    }
    p->opts->size_set = true;
    return true;
}

static bool opt_io_size(Parser *p, const char *key, const char *val)
{
    SimAmount a = { 0 };

    if (!get_amount(p, key, val, false, &a)) {
        return false;
    }
    if (!a.bytes) {
        return bad_value(p, key, val, "a size > 0");
    }
    p->opts->io_size = a.bytes;
    p->opts->io_size_set = true;
    return true;
}

static bool opt_offset(Parser *p, const char *key, const char *val)
{
    return get_amount(p, key, val, true, strcmp(key, "offset") == 0
                      ? &p->opts->offset : &p->opts->offset_increment);
}

static bool opt_iodepth(Parser *p, const char *key, const char *val)
{
    return get_u32(p, key, val, 1, 65536, &p->cur->iodepth);
}

static bool opt_numjobs(Parser *p, const char *key, const char *val)
{
    return get_u32(p, key, val, 1, 65536, &p->cur->numjobs);
}

static bool opt_stonewall(Parser *p, const char *key, const char *val)
{
    return get_bool(p, key, val, &p->cur->stonewall);
}

static bool opt_time_based(Parser *p, const char *key, const char *val)
{
    return get_bool(p, key, val, &p->cur->time_based);
}

static bool opt_norandommap(Parser *p, const char *key, const char *val)
{
    return get_bool(p, key, val, &p->opts->norandommap);
}

static bool opt_runtime(Parser *p, const char *key, const char *val)
{
    return get_time(p, key, val, NS_PER_S, &p->cur->runtime_ns);
}

static bool opt_ramp_time(Parser *p, const char *key, const char *val)
{
    return get_time(p, key, val, NS_PER_S, &p->cur->ramp_ns);
}

static bool opt_startdelay(Parser *p, const char *key, const char *val)
{
    if (val && strchr(val, '-')) {
        return perr(p, "option '%s': a range ('%s') is not supported by femu-sim", key, val);
    }
    return get_time(p, key, val, NS_PER_S, &p->cur->startdelay_ns);
}

static bool opt_randseed(Parser *p, const char *key, const char *val)
{
    return get_uint(p, key, val, 0, UINT64_MAX, &p->opts->randseed);
}

static bool opt_random_distribution(Parser *p, const char *key, const char *val)
{
    SimJobOpts *o = p->opts;
    const char *colon;
    size_t n;

    if (!need_value(p, key, val)) {
        return false;
    }
    if (strchr(val, ',')) {
        return perr(p, "option '%s': per-direction distributions ('%s') are not supported "
                    "by femu-sim", key, val);
    }
    colon = strchr(val, ':');
    n = colon ? (size_t)(colon - val) : strlen(val);
    if (n == 6 && strncmp(val, "random", 6) == 0 && !colon) {
        o->dist = SIM_DIST_RANDOM;
        return true;
    }
    if ((n == 4 && strncmp(val, "zipf", 4) == 0) || (n == 6 && strncmp(val, "pareto", 6) == 0)) {
        bool zipf = val[0] == 'z';
        double x = zipf ? 1.1 : 0.2;      /* fio's defaults */

        if (colon && strchr(colon + 1, ':')) {
            return perr(p, "option '%s': the ':center' part of '%s' is not supported by "
                        "femu-sim", key, val);
        }
        if (colon && !parse_double(colon + 1, &x)) {
            return bad_value(p, key, val, zipf ? "zipf:THETA, THETA a number > 0 other than 1"
                             : "pareto:H, H a number in (0,1)");
        }
        if (zipf && (x <= 0 || x == 1.0)) {
            return bad_value(p, key, val, "zipf:THETA, THETA a number > 0 other than 1");
        }
        if (!zipf && (x <= 0 || x >= 1)) {
            return bad_value(p, key, val, "pareto:H, H a number in (0,1)");
        }
        o->dist = zipf ? SIM_DIST_ZIPF : SIM_DIST_PARETO;
        o->dist_param = x;
        return true;
    }
    return bad_value(p, key, val, "random, zipf:THETA, pareto:H");
}

static bool opt_thinktime(Parser *p, const char *key, const char *val)
{
    return get_time(p, key, val, NS_PER_US, &p->opts->thinktime_ns);
}

static bool opt_thinktime_blocks(Parser *p, const char *key, const char *val)
{
    return get_u32(p, key, val, 1, UINT32_MAX, &p->opts->thinktime_blocks);
}

static bool opt_zonemode(Parser *p, const char *key, const char *val)
{
    if (!need_value(p, key, val)) {
        return false;
    }
    if (strcmp(val, "none") != 0 && strcmp(val, "zbd") != 0) {
        return bad_value(p, key, val, "none, zbd");
    }
    p->opts->zbd = val[0] == 'z';
    return true;
}

static bool opt_max_open_zones(Parser *p, const char *key, const char *val)
{
    return get_u32(p, key, val, 0, UINT32_MAX, &p->opts->max_open_zones);
}

static bool opt_fdp(Parser *p, const char *key, const char *val)
{
    return get_bool(p, key, val, &p->opts->fdp);
}

static bool opt_dataplacement(Parser *p, const char *key, const char *val)
{
    if (!need_value(p, key, val)) {
        return false;
    }
    if (strcmp(val, "none") != 0 && strcmp(val, "fdp") != 0) {
        return bad_value(p, key, val, "none, fdp");
    }
    p->opts->fdp = val[0] == 'f';
    return true;
}

static int cmp_u16(const void *a, const void *b)
{
    return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* "0,2,5" or with ranges "0-3,6"; fio sorts the list. */
static bool opt_fdp_pli(Parser *p, const char *key, const char *val)
{
    static const char allowed[] = "a comma-separated list of placement id indices 0..65535 "
        "or ranges A-B, at most 16 ids";
    SimJobOpts *o = p->opts;
    char **ents;
    uint32_t n = 0;
    bool ok = true;

    if (!need_value(p, key, val)) {
        return false;
    }
    ents = g_strsplit(val, ",", -1);
    for (guint i = 0; ents[i] && ok; i++) {
        char *dash = strchr(ents[i], '-');
        uint64_t a, b;

        if (dash) {
            *dash++ = '\0';
        }
        if (!parse_uint(ents[i], &a) || (dash && !parse_uint(dash, &b))) {
            ok = bad_value(p, key, val, allowed);
            break;
        }
        if (!dash) {
            b = a;
        }
        if (a > b || b > 0xffff || b - a + 1 > SIM_PLIDS_MAX - n) {
            ok = bad_value(p, key, val, allowed);
            break;
        }
        for (uint64_t x = a; x <= b; x++) {
            o->plids[n++] = x;
        }
    }
    g_strfreev(ents);
    if (!ok) {
        return false;
    }
    qsort(o->plids, n, sizeof(o->plids[0]), cmp_u16);
    o->nr_plids = n;
    return true;
}

static bool opt_fdp_pli_select(Parser *p, const char *key, const char *val)
{
    if (!need_value(p, key, val)) {
        return false;
    }
    if (strcmp(val, "roundrobin") != 0 && strcmp(val, "random") != 0) {
        return bad_value(p, key, val, "roundrobin, random");
    }
    p->opts->plid_random = val[1] == 'a';
    return true;
}

/* /dev/nvmeXnY and /dev/ngXnY (the char device) name namespace Y. */
static bool opt_filename(Parser *p, const char *key, const char *val)
{
    const char *s;
    uint64_t ctrl, nsid;

    if (!need_value(p, key, val)) {
        return false;
    }
    if (g_str_has_prefix(val, "/dev/nvme")) {
        s = val + strlen("/dev/nvme");
    } else if (g_str_has_prefix(val, "/dev/ng")) {
        s = val + strlen("/dev/ng");
    } else {
        s = NULL;
    }
    if (!s || !isdigit((unsigned char)*s) || !parse_digits(&s, &ctrl) || *s++ != 'n' ||
        !isdigit((unsigned char)*s) || !parse_digits(&s, &nsid) || *s != '\0' ||
        nsid < 1 || nsid > UINT32_MAX) {
        return bad_value(p, key, val, "/dev/nvmeXnY or /dev/ngXnY, a namespace Y >= 1");
    }
    p->cur->nsid = nsid;
    return true;
}

static bool opt_fsync(Parser *p, const char *key, const char *val)
{
    return get_u32(p, key, val, 0, UINT32_MAX, &p->opts->fsync_every);
}

static bool opt_end_fsync(Parser *p, const char *key, const char *val)
{
    return get_bool(p, key, val, &p->opts->end_fsync);
}

static bool opt_log_avg_msec(Parser *p, const char *key, const char *val)
{
    uint64_t ms;

    if (!get_uint(p, key, val, 0, SIM_MAX_TIME_NS / 1000000, &ms)) {
        return false;
    }
    p->cur->log_avg_ns = ms * 1000000;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static bool opt_percentile_list(Parser *p, const char *key, const char *val)
{
    double v[SIM_MAX_PERCENTILES];
    char **ents;
    guint n;
    bool ok = true;

    if (!need_value(p, key, val)) {
        return false;
    }
    ents = g_strsplit(val, ":", -1);
    n = g_strv_length(ents);
    if (n > SIM_MAX_PERCENTILES) {
        ok = bad_value(p, key, val, "at most 32 percentiles separated by ':'");
    }
    for (guint i = 0; i < n && ok; i++) {
        if (!parse_double(ents[i], &v[i]) || v[i] <= 0 || v[i] > 100) {
            ok = bad_value(p, key, val, "numbers in (0,100] separated by ':'");
        }
    }
    g_strfreev(ents);
    if (!ok) {
        return false;
    }
    qsort(v, n, sizeof(v[0]), cmp_double);
    memcpy(p->cur->percentiles, v, n * sizeof(v[0]));
    p->cur->nr_percentiles = n;
    return true;
}

static bool opt_read_iolog(Parser *p, const char *key, const char *val)
{
    if (!need_value(p, key, val)) {
        return false;
    }
    if (strcmp(val, "-") == 0 || strchr(val, ':')) {
        return bad_value(p, key, val, "the path of one trace file (blkparse text or CSV)");
    }
    g_free(p->cur->read_iolog);
    p->cur->read_iolog = g_strdup(val);
    return true;
}

static bool opt_replay_no_stall(Parser *p, const char *key, const char *val)
{
    return get_bool(p, key, val, &p->cur->replay_no_stall);
}

static bool opt_kb_base(Parser *p, const char *key, const char *val)
{
    uint32_t v;

    if (!get_u32(p, key, val, 1000, 1024, &v)) {
        return false;
    }
    if (v != 1000 && v != 1024) {
        return bad_value(p, key, val, "1000, 1024");
    }
    p->opts->kb_base = v;
    return true;
}

static const struct {
    const char *name;
    OptFn fn;
} options[] = {
    { "name", opt_name },
    { "description", opt_ignored },
    { "rw", opt_rw },
    { "readwrite", opt_rw },
    { "rwmixread", opt_rwmix },
    { "rwmixwrite", opt_rwmix },
    { "bs", opt_bs },
    { "blocksize", opt_bs },
    { "bssplit", opt_bssplit },
    { "iodepth", opt_iodepth },
    { "numjobs", opt_numjobs },
    { "size", opt_size },
    { "io_size", opt_io_size },
    { "io_limit", opt_io_size },
    { "offset", opt_offset },
    { "offset_increment", opt_offset },
    { "stonewall", opt_stonewall },
    { "wait_for_previous", opt_stonewall },
    { "norandommap", opt_norandommap },
    { "runtime", opt_runtime },
    { "time_based", opt_time_based },
    { "ramp_time", opt_ramp_time },
    { "startdelay", opt_startdelay },
    { "randseed", opt_randseed },
    { "random_distribution", opt_random_distribution },
    { "thinktime", opt_thinktime },
    { "thinktime_blocks", opt_thinktime_blocks },
    { "zonemode", opt_zonemode },
    { "max_open_zones", opt_max_open_zones },
    { "fdp", opt_fdp },
    { "dataplacement", opt_dataplacement },
    { "fdp_pli", opt_fdp_pli },
    { "plids", opt_fdp_pli },
    { "fdp_pli_select", opt_fdp_pli_select },
    { "plid_select", opt_fdp_pli_select },
    { "filename", opt_filename },
    { "fsync", opt_fsync },
    { "end_fsync", opt_end_fsync },
    { "log_avg_msec", opt_log_avg_msec },
    { "percentile_list", opt_percentile_list },
    { "read_iolog", opt_read_iolog },
    { "replay_no_stall", opt_replay_no_stall },
    { "kb_base", opt_kb_base },
};

/* Host-side options with nothing to simulate: accepted, whatever their value. */
static const char *const ignored[] = {
    "ioengine", "direct", "buffered", "group_reporting", "thread", "invalidate",
    "gtod_reduce", "clat_percentiles", "lat_percentiles", "slat_percentiles",
    "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log", "log_offset",
    "exitall", "iodepth_batch", "iodepth_batch_submit", "iodepth_batch_complete",
    "iodepth_batch_complete_min", "iodepth_batch_complete_max", "iodepth_low",
    "unified_rw_reporting", "disable_lat", "disable_clat", "disable_slat", "randrepeat",
    "allrandrepeat", "refill_buffers", "scramble_buffers", "buffer_compress_percentage",
    "zero_buffers", "verify", "do_verify", "cpus_allowed", "cpumask", "fadvise_hint",
    "ioscheduler", "hipri", "registerfiles", "fixedbufs", "sqthread_poll",
};
static const char *const ignored_prefixes[] = { "verify_", "numa_" };

static OptFn find_option(const char *key)
{
    for (size_t i = 0; i < G_N_ELEMENTS(options); i++) {
        if (strcmp(key, options[i].name) == 0) {
            return options[i].fn;
        }
    }
    for (size_t i = 0; i < G_N_ELEMENTS(ignored); i++) {
        if (strcmp(key, ignored[i]) == 0) {
            return opt_ignored;
        }
    }
    for (size_t i = 0; i < G_N_ELEMENTS(ignored_prefixes); i++) {
        if (g_str_has_prefix(key, ignored_prefixes[i])) {
            return opt_ignored;
        }
    }
    return NULL;
}

/* ---- sections ---- */

static void job_clear(SimJob *j)
{
    g_free(j->name);
    g_free(j->read_iolog);
    g_free(j->priv);
}

static void defaults(SimJob *j, SimJobOpts *o)
{
    memset(j, 0, sizeof(*j));
    j->nsid = 1;
    j->iodepth = 1;
    j->numjobs = 1;
    j->nr_percentiles = G_N_ELEMENTS(default_percentiles);
    memcpy(j->percentiles, default_percentiles, sizeof(default_percentiles));
    memset(o, 0, sizeof(*o));
    o->ddir[SIM_DDIR_READ] = true;      /* fio's default rw=read */
    o->rwmixread = 50;
    for (int d = 0; d < SIM_DDIRS; d++) {
        o->bs[d] = 4096;
    }
    o->thinktime_blocks = 1;
    o->randseed = 0x89;
    o->kb_base = 1024;
}

/* What needs the whole section; checked when it ends. */
static bool finish_section(Parser *p)
{
    SimJobOpts *o = p->opts;
    uint32_t line = p->line;

    if (!p->cur || p->cur == &p->global) {
        return true;
    }
    p->line = p->cur_line;
    if (o->zbd && o->ddir[SIM_DDIR_TRIM]) {
        perr(p, "job '%s': trims with zonemode=zbd are not supported by femu-sim",
             p->cur->name);
    } else if (o->zbd && p->cur->read_iolog) {
        perr(p, "job '%s': read_iolog replays the trace as it is; zonemode=zbd is not "
             "supported with it", p->cur->name);
    }
    p->line = line;
    return !p->err;
}

static bool start_section(Parser *p, const char *name)
{
    SimJob j;

    if (!finish_section(p)) {
        return false;
    }
    p->cur_line = p->line;
    if (strcmp(name, "global") == 0) {
        p->cur = &p->global;
        p->opts = &p->gopts;
        return true;
    }
    j = p->global;
    j.name = g_strdup(name);
    j.read_iolog = g_strdup(p->global.read_iolog);
    j.priv = g_new(SimJobOpts, 1);
    memcpy(j.priv, &p->gopts, sizeof(SimJobOpts));
    g_array_append_val(p->jobs, j);
    p->cur = &g_array_index(p->jobs, SimJob, p->jobs->len - 1);
    p->opts = p->cur->priv;
    return true;
}

static char *strip(char *s)
{
    return g_strstrip(s);
}

static bool parse_line(Parser *p, char *line)
{
    char *c, *eq, *key, *val;
    OptFn fn;

    /* fio cuts a line at its first ';' or '#' */
    c = strpbrk(line, ";#");
    if (c) {
        *c = '\0';
    }
    line = strip(line);
    if (!*line) {
        return true;
    }
    if (line[0] == '[') {
        size_t n = strlen(line);

        if (line[n - 1] != ']') {
            return perr(p, "section header '%s' does not end with ']'", line);
        }
        line[n - 1] = '\0';
        line = strip(line + 1);
        if (!*line) {
            return perr(p, "empty section name");
        }
        return start_section(p, line);
    }
    if (g_str_has_prefix(line, "include") && (!line[7] || isspace((unsigned char)line[7]))) {
        return perr(p, "'include' is not supported by femu-sim");
    }
    eq = strchr(line, '=');
    if (eq) {
        *eq = '\0';
        val = strip(eq + 1);
    } else {
        val = NULL;
    }
    key = strip(line);
    if (!*key) {
        return perr(p, "an option without a name");
    }
    fn = find_option(key);
    if (!fn) {
        return perr(p, "option '%s' is not supported by femu-sim", key);
    }
    if (!p->cur) {
        return perr(p, "option '%s' before any [section]", key);
    }
    if (val && strchr(val, '$')) {
        return perr(p, "option '%s': '$' expansion ('%s') is not supported by femu-sim",
                    key, val);
    }
    return fn(p, key, val);
}

SimJobFile *sim_jobfile_parse(const char *text, const char *file_name, char **err)
{
    Parser p = { .file = file_name ? file_name : "<job file>" };
    char **lines;
    SimJobFile *f = NULL;

    if (err) {
        *err = NULL;
    }
    p.jobs = g_array_new(FALSE, FALSE, sizeof(SimJob));
    defaults(&p.global, &p.gopts);
    lines = g_strsplit(text ? text : "", "\n", -1);
    for (guint i = 0; lines[i] && !p.err; i++) {
        p.line = i + 1;
        parse_line(&p, lines[i]);
    }
    g_strfreev(lines);
    if (!p.err) {
        finish_section(&p);
    }
    if (!p.err && p.jobs->len == 0) {
        p.line = 0;
        p.err = g_strdup_printf("%s: no job section (only [global] or nothing)", p.file);
    }
    g_free(p.global.name);
    g_free(p.global.read_iolog);
    if (p.err) {
        for (guint i = 0; i < p.jobs->len; i++) {
            job_clear(&g_array_index(p.jobs, SimJob, i));
        }
        g_array_free(p.jobs, TRUE);
        if (err) {
            *err = p.err;
        } else {
            g_free(p.err);
        }
        return NULL;
    }
    f = g_new0(SimJobFile, 1);
    f->nr_jobs = p.jobs->len;
    f->jobs = (SimJob *)g_array_free(p.jobs, FALSE);
    return f;
}

SimJobFile *sim_jobfile_load(const char *path, char **err)
{
    GError *gerr = NULL;
    char *text;
    SimJobFile *f;

    if (!g_file_get_contents(path, &text, NULL, &gerr)) {
        if (err) {
            *err = g_strdup_printf("%s: %s", path, gerr->message);
        }
        g_error_free(gerr);
        return NULL;
    }
    f = sim_jobfile_parse(text, path, err);
    g_free(text);
    return f;
}

void sim_jobfile_free(SimJobFile *f)
{
    if (!f) {
        return;
    }
    for (uint32_t i = 0; i < f->nr_jobs; i++) {
        job_clear(&f->jobs[i]);
    }
    g_free(f->jobs);
    g_free(f);
}
