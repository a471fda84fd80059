/*
 * What the page-level FTLs share; see ftl-common.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ftl-common.h"
#include "../media/record.h"

#include <glib.h>
#include <sys/mman.h>

/* ---- configuration ---- */

bool ftl_check_common(const NandGeometry *g, const NandTiming *tm, uint64_t exposed_pages,
                      uint32_t gc_thres_pcent, uint32_t gc_thres_pcent_high, char **err)
{
    if (!nand_geometry_check(g, err) || !nand_timing_check(tm, err)) {
        return false;
    }
    if (gc_thres_pcent < 1 || gc_thres_pcent > 99) {
        *err = g_strdup_printf("gc_thres_pcent=%u is out of range: allowed 1..99",
                               gc_thres_pcent);
        return false;
    }
    if (gc_thres_pcent_high < gc_thres_pcent || gc_thres_pcent_high > 99) {
        *err = g_strdup_printf("gc_thres_pcent_high=%u is out of range: allowed %u "
                               "(gc_thres_pcent)..99", gc_thres_pcent_high, gc_thres_pcent);
        return false;
    }
    if (!exposed_pages) {
        *err = g_strdup("devsz_mb: the exposed capacity must be at least one NAND page");
        return false;
    }
    return true;
}

uint32_t ftl_gc_thres(uint32_t n, uint32_t pcent)
{
    return (uint32_t)((uint64_t)n * (100 - pcent) / 100);
}

uint32_t ftl_pcent_high_min(uint32_t n, uint32_t pcent_high, uint32_t reserve,
                            uint64_t spare)
{
    uint32_t h = pcent_high;

    while (h <= 99 && MAX(ftl_gc_thres(n, h), reserve) >= spare) {
        h++;
    }
    return h;
}

void ftl_set_wear_planes(NandModel *m, NandAddr a, uint32_t erases)
{
    for (a.pl = 0; a.pl < m->geo.pls_per_lun; a.pl++) {
        nand_set_block_wear(m, &a, erases);
    }
}

NandModel *ftl_nand_get(const NandGeometry *g, const NandTiming *tm, NandModel *shared,
                        uint32_t first_block, const char *who, char **err)
{
    const NandGeometry *s;

    if (!shared) {
        return nand_model_new(g, tm, err);
    }
    s = &shared->geo;
    if (s->nchs != g->nchs || s->luns_per_ch != g->luns_per_ch ||
        s->pls_per_lun != g->pls_per_lun || s->pgs_per_blk != g->pgs_per_blk ||
        nand_page_bytes(s) != nand_page_bytes(g) ||
        s->blks_per_pl < first_block + g->blks_per_pl) {
        *err = g_strdup_printf("the %s's geometry does not fit the shared flash", who);
        return NULL;
    }
    return shared;
}

/* ---- host reads ---- */

NandAddr ftl_unmapped_addr(const NandGeometry *g, uint32_t first_block, uint64_t lpn)
{
    uint64_t chip = lpn % nand_luns(g);

    return (NandAddr){ .ch = chip % g->nchs, .lun = chip / g->nchs, .blk = first_block };
}

/* ---- programs ---- */

void ftl_progs_init(FtlProgs *p, NandModel *nand, uint64_t *last_ns, uint64_t *pages)
{
    *p = (FtlProgs){ .nand = nand, .last_ns = last_ns, .pages = pages, .units_per_pg = 1,
                     .nluns = nand_luns(&nand->geo) };
    p->pend = g_new0(FtlPending, p->nluns);
    p->gathered = g_new0(uint64_t, (p->nluns + 63) / 64);
}

void ftl_progs_destroy(FtlProgs *p)
{
    g_free(p->pend);
    g_free(p->gathered);
    p->pend = NULL;
    p->gathered = NULL;
}

uint64_t ftl_program(FtlProgs *p, const NandAddr *a, uint32_t mask, uint64_t arrival_ns)
{
    uint64_t done = nand_op_planes(p->nand, NAND_OP_PROGRAM, a, mask, arrival_ns);

    *p->last_ns = MAX(*p->last_ns, done);
    *p->pages += (uint64_t)__builtin_popcount(mask) * p->units_per_pg;
    return done;
}

/* Books chip lun's gathered program, not before arrival_ns. */
static uint64_t pending_book(FtlProgs *p, uint32_t lun, uint64_t arrival_ns)
{
    FtlPending *c = &p->pend[lun];
    uint64_t done = ftl_program(p, &c->a, c->mask, MAX(arrival_ns, c->ready));

    c->mask = 0;
    p->gathered[lun / 64] &= ~(1ULL << (lun % 64));
    return done;
}

uint64_t ftl_program_gather(FtlProgs *p, const NandAddr *a, uint64_t arrival_ns)
{
    uint32_t lun = nand_lun_index(p->nand, a);
    FtlPending *c = &p->pend[lun];
    uint64_t done = arrival_ns;

    if (c->mask && (c->a.blk != a->blk || c->a.pg != a->pg || (c->mask >> a->pl) & 1)) {
        done = pending_book(p, lun, arrival_ns);
    }
    if (!c->mask) {
        c->a = *a;
        c->ready = arrival_ns;
        p->gathered[lun / 64] |= 1ULL << (lun % 64);
    }
    c->mask |= 1u << a->pl;
    c->ready = MAX(c->ready, arrival_ns);
    return done;
}

uint64_t ftl_program_hold(FtlProgs *p, const NandAddr *a, uint64_t ready)
{
    uint64_t done = ftl_program_gather(p, a, ready);

    if (a->pl + 1 >= p->nand->geo.pls_per_lun) {
        uint64_t t = pending_book(p, nand_lun_index(p->nand, a), ready);
        done = MAX(done, t);
    }
    return done;
}

bool ftl_program_held(const FtlProgs *p, const NandAddr *a, uint64_t *ready)
{
    const FtlPending *c = &p->pend[nand_lun_index(p->nand, a)];

    if ((c->mask >> a->pl) & 1 && c->a.blk == a->blk && c->a.pg == a->pg) {
        *ready = c->ready;
        return true;
    }
    return false;
}

uint64_t ftl_program_flush(FtlProgs *p, uint64_t arrival_ns)
{
    uint64_t done = arrival_ns;

    /* in chip order, as a scan of every chip would book them */
    for (uint64_t w = 0; w < (p->nluns + 63) / 64; w++) {
        while (p->gathered[w]) {
            uint64_t t = pending_book(p, w * 64 + __builtin_ctzll(p->gathered[w]),
                                      arrival_ns);
            done = MAX(done, t);    /* t, not the call, in MAX(): one booking */
        }
    }
    return done;
}

double ftl_waf_of(uint64_t nand_pages, uint64_t host_pages)
{
    if (!host_pages) {
        return 1.0;
    }
    return (double)nand_pages / (double)host_pages;
}

/* ---- the store ---- */

/* Slicing by 8: the same CRC as a byte at a time, a few times faster (saved per command). */
static uint32_t crc_table[8][256];

static gpointer crc_table_init(gpointer unused G_GNUC_UNUSED)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int j = 0; j < 8; j++) {
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        }
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int t = 1; t < 8; t++) {
            uint32_t c = crc_table[t - 1][i];
            crc_table[t][i] = crc_table[0][c & 0xff] ^ (c >> 8);
        }
    }
    return NULL;
}

static uint32_t crc_update(uint32_t c, const uint8_t *p, size_t len)
{
    for (; len >= 8; p += 8, len -= 8) {
        uint32_t lo = c ^ (uint32_t)record_get_le(p, 4), hi = (uint32_t)record_get_le(p + 4, 4);
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
            crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
            crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
            crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
    }
    while (len--) {
        c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    }
    return c;
}

uint32_t ftl_crc32_salted(uint64_t salt, const uint8_t *p, size_t len)
{
    static GOnce once = G_ONCE_INIT;
    uint8_t s[8];

    g_once(&once, crc_table_init, NULL);
    record_put_le(s, salt, 8);
    return ~crc_update(crc_update(0xffffffffu, s, 8), p, len);
}

void ftl_slot_save(uint8_t *slots, uint64_t rec, uint64_t *seq, uint64_t salt,
                   const uint64_t *v, uint32_t n)
{
    uint64_t s = ++*seq;
    uint8_t *p = slots + (s % 2) * rec;

    record_put_le(p, s, 8);
    for (uint32_t i = 0; i < n; i++) {
        record_put_le(p + 8 + 8 * i, v[i], 8);
    }
    record_put_le(p + rec - 8, ftl_crc32_salted(salt, p, rec - 8), 4);
    record_put_le(p + rec - 4, 0, 4);
}

bool ftl_header_matches(const uint8_t *h, const uint8_t *want, const char *what,
                        uint64_t salt, unsigned crc_at, const FtlHeaderField *fields,
                        unsigned n, char **err)
{
    uint32_t version = record_get_le(h + 4, 4), want_version = record_get_le(want + 4, 4);

    if (memcmp(h, want, 4)) {
        *err = g_strdup_printf("the area after the data holds something else than %s state "
                               "(its first bytes are %02x %02x %02x %02x, not \"%.4s\")",
                               what, h[0], h[1], h[2], h[3], (const char *)want);
        return false;
    }
    if (version != want_version) {
        *err = g_strdup_printf("the %s state is of format version %u, this FEMU reads "
                               "version %u only", what, version, want_version);
        return false;
    }
    if (record_get_le(h + crc_at, 4) != ftl_crc32_salted(salt, h, crc_at)) {
        *err = g_strdup_printf("the %s state header is damaged (its checksum does not match)",
                               what);
        return false;
    }
    for (unsigned i = 0; i < n; i++) {
        uint64_t was = record_get_le(h + fields[i].at, fields[i].bytes);
        uint64_t now = record_get_le(want + fields[i].at, fields[i].bytes);
        if (was != now) {
            *err = g_strdup_printf("the %s state was saved with %s = %" G_GUINT64_FORMAT
                                   ", the device now has %" G_GUINT64_FORMAT, what,
                                   fields[i].name, was, now);
            return false;
        }
    }
    return true;
}

bool ftl_slot_load(const uint8_t *slots, uint64_t rec, uint64_t salt, uint64_t *v, uint32_t n,
                   uint64_t *seq)
{
    const uint8_t *best = NULL;
    uint64_t best_seq = 0;

    for (unsigned s = 0; s < 2; s++) {
        const uint8_t *p = slots + s * rec;
        uint64_t q = record_get_le(p, 8);
        if (q && q % 2 == s &&
            record_get_le(p + rec - 8, 4) == ftl_crc32_salted(salt, p, rec - 8) &&
            q > best_seq) {
            best = p;
            best_seq = q;
        }
    }
    *seq = best_seq;
    for (uint32_t i = 0; i < n; i++) {
        v[i] = best ? record_get_le(best + 8 + 8 * i, 8) : 0;
    }
    return best != NULL;
}

uint16_t ftl_map_check(uint64_t lpn, uint64_t low)
{
    uint64_t x = lpn * 0x9e3779b97f4a7c15ULL ^ low;

    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 29;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 32;
    return (uint16_t)(x >> 48);
}

void *ftl_table_new(uint64_t n, size_t size)
{
    void *t;

    if (!n || n > SIZE_MAX / size) {
        return NULL;
    }
    t = mmap(NULL, n * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED) {
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    madvise(t, n * size, MADV_HUGEPAGE);
#endif
    return t;
}

void ftl_table_free(void *table, uint64_t n, size_t size)
{
    if (table) {
        munmap(table, n * size);
    }
}
