/*
 * The OCSSD 2.0 chunk model; see chunk.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "chunk.h"
#include "../media/model-util.h"
#include "../media/record.h"

#include <glib.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

/*
 * The saved state, little endian. Header (64 bytes): magic "FOC2", version, groups, PUs,
 * chunks, sectors per chunk, sector bytes, reserved, checksum of the rest. Then two 32-byte
 * record slots per chunk: sequence number, write pointer, erases, state, 7 reserved,
 * checksum of the chunk index and the first 28 bytes. Record s sits in slot s % 2; an
 * all-zero slot holds no record.
 */
#define OC_STORE_MAGIC 0x32434f46u
#define OC_STORE_VERSION 1u
#define OC_STORE_HEADER 64u
#define OC_RECORD 32u
#define OC_SLOTS 2u
#define OC_HEADER_SALT UINT64_MAX

static bool fail(char **err, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static bool fail(char **err, const char *fmt, ...)
{
    va_list ap;

    if (err) {
        va_start(ap, fmt);
        *err = g_strdup_vprintf(fmt, ap);
        va_end(ap);
    }
    return false;
}

static uint8_t bits_for(uint64_t count)
{
    uint8_t b = 0;

    while ((1ULL << b) < count) {
        b++;
    }
    return b;
}

bool oc_geometry_check(OcGeometry *g, char **err)
{
    if (!g->num_grp || g->num_grp > UINT16_MAX) {
        return fail(err, "lnum_ch=%u is out of range: allowed 1..65535 groups", g->num_grp);
    }
    if (!femu_is_pow2(g->num_pu) || g->num_pu > UINT16_MAX) {
        return fail(err, "lnum_lun=%u is invalid: allowed a power of two up to 32768 PUs "
                    "per group (the LBA space must be dense)", g->num_pu);
    }
    if (!femu_is_pow2(g->num_chk)) {
        return fail(err, "%u chunks per PU is invalid: the number of chunks per PU must be "
                    "a power of two (size the namespace with devsz_mb / ns_sizes_mb)",
                    g->num_chk);
    }
    if (!femu_is_pow2(g->clba) || g->clba > (1u << 24)) {
        return fail(err, "%u sectors per chunk is invalid: allowed a power of two up to "
                    "2^24 (lsecs_per_pg * lpgs_per_blk * lnum_pln)", g->clba);
    }
    if (!g->ws_min || g->clba % g->ws_min) {
        return fail(err, "the minimum write size of %u sectors must divide the chunk "
                    "(%u sectors)", g->ws_min, g->clba);
    }
    if (!g->ws_opt || g->ws_opt % g->ws_min || g->clba % g->ws_opt) {
        return fail(err, "the optimal write size of %u sectors must be a multiple of the "
                    "minimum (%u) dividing the chunk (%u)", g->ws_opt, g->ws_min, g->clba);
    }
    if (!g->mw_cunits || g->mw_cunits % g->ws_min) {
        return fail(err, "the cache unit of %u sectors must be a multiple of the minimum "
                    "write size (%u)", g->mw_cunits, g->ws_min);
    }
    if (g->mccap & ~(uint32_t)(OC_MCCAP_COPY | OC_MCCAP_MULTI_RESET)) {
        return fail(err, "oc_mccap=0x%x is invalid: allowed bits 0x1 (vector copy) and 0x2 "
                    "(reset of a free chunk)", g->mccap);
    }
    g->grp_bits = bits_for(g->num_grp);
    g->pu_bits = bits_for(g->num_pu);
    g->chk_bits = bits_for(g->num_chk);
    g->sec_bits = bits_for(g->clba);
    if (g->grp_bits + g->pu_bits + g->chk_bits + g->sec_bits > 62) {
        return fail(err, "the geometry needs %u LBA bits: allowed at most 62",
                    g->grp_bits + g->pu_bits + g->chk_bits + g->sec_bits);
    }
    g->nr_chunks = (uint64_t)g->num_grp * g->num_pu * g->num_chk;
    g->nr_sectors = g->nr_chunks * g->clba;
    if (g->maxoc > g->nr_chunks) {
        return fail(err, "oc_maxoc=%u is out of range: allowed 0 (no limit) .. %" PRIu64
                    " (the chunks)", g->maxoc, g->nr_chunks);
    }
    if (g->maxocpu > g->num_chk) {
        return fail(err, "oc_maxocpu=%u is out of range: allowed 0 (no limit) .. %u (the "
                    "chunks of a PU)", g->maxocpu, g->num_chk);
    }
    return true;
}

bool oc_lba_decode(const OcGeometry *g, uint64_t lba, OcAddr *a)
{
    uint64_t chunk = lba >> g->sec_bits, pu = chunk >> g->chk_bits;

    if (lba >= g->nr_sectors) {
        return false;
    }
    a->sec = lba & ((1ULL << g->sec_bits) - 1);
    a->chk = chunk & ((1ULL << g->chk_bits) - 1);
    a->pu = pu & ((1ULL << g->pu_bits) - 1);
    a->grp = pu >> g->pu_bits;
    return true;
}

uint64_t oc_lba_encode(const OcGeometry *g, const OcAddr *a)
{
    return ((((uint64_t)a->grp << g->pu_bits | a->pu) << g->chk_bits | a->chk)
            << g->sec_bits) | a->sec;
}

OcChunkSet *oc_chunk_set_new(const OcGeometry *g, char **err)
{
    OcGeometry geo = *g;
    OcChunkSet *cs;

    if (!oc_geometry_check(&geo, err)) {
        return NULL;
    }
    cs = g_new0(OcChunkSet, 1);
    cs->geo = geo;
    cs->chunks = g_new0(OcChunk, geo.nr_chunks);
    cs->open_per_pu = g_new0(uint32_t, (uint64_t)geo.num_grp * geo.num_pu);
    for (uint64_t i = 0; i < geo.nr_chunks; i++) {
        cs->chunks[i].state = OC_CHUNK_FREE;
    }
    cs->hasher = g_checksum_new(G_CHECKSUM_MD5);
    return cs;
}

void oc_chunk_set_free(OcChunkSet *cs)
{
    if (cs) {
        g_checksum_free(cs->hasher);
        g_free(cs->open_per_pu);
        g_free(cs->chunks);
        g_free(cs);
    }
}

/* ---- saving ---- */

static uint8_t *record_slot(const OcChunkSet *cs, uint64_t idx, uint64_t seq)
{
    return cs->store + OC_STORE_HEADER + (idx * OC_SLOTS + seq % OC_SLOTS) * OC_RECORD;
}

static void save(OcChunkSet *cs, uint64_t idx)
{
    OcChunk *c = &cs->chunks[idx];
    uint8_t r[OC_RECORD] = { 0 };

    if (!cs->store) {
        return;
    }
    c->seq++;
    record_put_le(r, c->seq, 8);
    record_put_le(r + 8, c->wp, 8);
    record_put_le(r + 16, c->erases, 4);
    r[20] = c->state;
    record_put_le(r + 28, record_checksum(cs->hasher, idx, r, 28), 4);
    memcpy(record_slot(cs, idx, c->seq), r, OC_RECORD);
    cs->records_written++;
}

/* ---- state changes ---- */

static void set_state(OcChunkSet *cs, uint64_t idx, OcChunkState to)
{
    OcChunk *c = &cs->chunks[idx];
    uint32_t pu = oc_pu_of(&cs->geo, idx);

    if (c->state == OC_CHUNK_OPEN) {
        cs->nr_open--;
        cs->open_per_pu[pu]--;
    }
    if (to == OC_CHUNK_OPEN) {
        cs->nr_open++;
        cs->open_per_pu[pu]++;
    }
    c->state = to;
}

/*
 * oc_write_check with `closed_ns` of the namespace's open chunks, `closed_pu` of them on
 * this run's PU, closed by the runs of the same command before this one.
 */
static OcStatus write_check(const OcChunkSet *cs, uint64_t lba, uint64_t nlb,
                            uint32_t closed_ns, uint32_t closed_pu)
{
    const OcGeometry *g = &cs->geo;
    uint64_t idx = oc_chunk_of(g, lba), sec = lba & (g->clba - 1);
    const OcChunk *c;

    if (lba >= g->nr_sectors || !nlb || nlb > g->clba - sec) {
        return OC_LBA_RANGE;
    }
    c = &cs->chunks[idx];
    if (c->state == OC_CHUNK_CLOSED || c->state == OC_CHUNK_OFFLINE || sec != c->wp) {
        return OC_OUT_OF_ORDER_WRITE;
    }
    if (nlb % g->ws_min) {
        return OC_INVALID_FIELD;
    }
    if (c->state == OC_CHUNK_FREE &&
        ((g->maxoc && cs->nr_open - closed_ns >= g->maxoc) ||
         (g->maxocpu && cs->open_per_pu[oc_pu_of(g, idx)] - closed_pu >= g->maxocpu))) {
        return OC_SEQUENCE_ERROR;
    }
    return OC_OK;
}

OcStatus oc_write_check(const OcChunkSet *cs, uint64_t lba, uint64_t nlb)
{
    return write_check(cs, lba, nlb, 0, 0);
}

OcStatus oc_write_check_span(const OcChunkSet *cs, uint64_t lba, uint64_t nlb)
{
    const OcGeometry *g = &cs->geo;
    uint32_t closed_ns = 0, closed_pu = 0, pu;

    if (lba >= g->nr_sectors || !nlb || nlb > g->nr_sectors - lba) {
        return OC_LBA_RANGE;
    }
    pu = oc_pu_of(g, oc_chunk_of(g, lba));
    while (nlb) {
        uint64_t idx = oc_chunk_of(g, lba), n = MIN(nlb, g->clba - (lba & (g->clba - 1)));
        OcStatus st;

        if (oc_pu_of(g, idx) != pu) {
            pu = oc_pu_of(g, idx);      /* a PU's chunks are consecutive: none closed here */
            closed_pu = 0;
        }
        st = write_check(cs, lba, n, closed_ns, closed_pu);
        if (st) {
            return st;
        }
        if (n < nlb && cs->chunks[idx].state == OC_CHUNK_OPEN) {
            closed_ns++;                /* the part runs to the chunk's end: it closes */
            closed_pu++;
        }
        lba += n;
        nlb -= n;
    }
    return OC_OK;
}

void oc_write_commit(OcChunkSet *cs, uint64_t lba, uint64_t nlb)
{
    uint64_t idx = oc_chunk_of(&cs->geo, lba);
    OcChunk *c = &cs->chunks[idx];

    c->wp += nlb;
    set_state(cs, idx, c->wp >= cs->geo.clba ? OC_CHUNK_CLOSED : OC_CHUNK_OPEN);
    save(cs, idx);
}

OcStatus oc_read_check(const OcChunkSet *cs, uint64_t lba, uint64_t nlb, bool dulbe,
                       uint64_t *readable)
{
    const OcGeometry *g = &cs->geo;
    uint64_t sec = lba & (g->clba - 1);
    const OcChunk *c;

    *readable = 0;
    if (lba >= g->nr_sectors || !nlb || nlb > g->clba - sec) {
        return OC_LBA_RANGE;
    }
    c = &cs->chunks[oc_chunk_of(g, lba)];
    if (c->state == OC_CHUNK_OFFLINE) {
        return OC_OFFLINE_CHUNK;
    }
    *readable = c->wp > sec ? MIN(nlb, c->wp - sec) : 0;
    return *readable < nlb && dulbe ? OC_UNWRITTEN : OC_OK;
}

OcStatus oc_reset(OcChunkSet *cs, uint64_t lba)
{
    uint64_t idx = oc_chunk_of(&cs->geo, lba);
    OcChunk *c;

    if (lba >= cs->geo.nr_sectors) {
        return OC_LBA_RANGE;
    }
    c = &cs->chunks[idx];
    /* open chunks too: host FTLs reset the chunks of a line they abandon */
    switch (c->state) {
    case OC_CHUNK_OFFLINE:
        return OC_OFFLINE_CHUNK;
    case OC_CHUNK_FREE:
        if (!(cs->geo.mccap & OC_MCCAP_MULTI_RESET)) {
            return OC_INVALID_RESET;
        }
        break;
    default:
        break;
    }
    c->wp = 0;
    c->erases++;
    set_state(cs, idx, OC_CHUNK_FREE);
    save(cs, idx);
    return OC_OK;
}

void oc_fail_write_next_unit(OcChunkSet *cs, uint64_t lba, uint64_t nlb)
{
    /* the unit is lost but the chunk goes on: the same as a write of nothing readable */
    oc_write_commit(cs, lba, nlb);
}

void oc_fail_early_close(OcChunkSet *cs, uint64_t chunk)
{
    /* offline is for good: an injected close must not bring the chunk back */
    if (cs->chunks[chunk].state == OC_CHUNK_OFFLINE) {
        return;
    }
    set_state(cs, chunk, OC_CHUNK_CLOSED);
    save(cs, chunk);
}

void oc_fail_offline(OcChunkSet *cs, uint64_t chunk)
{
    set_state(cs, chunk, OC_CHUNK_OFFLINE);
    save(cs, chunk);
}

void oc_chunk_descriptor(const OcChunkSet *cs, uint64_t chunk, uint8_t *out)
{
    const OcChunk *c = &cs->chunks[chunk];
    uint64_t slba = chunk << cs->geo.sec_bits;

    memset(out, 0, OC_DESCRIPTOR_BYTES);
    out[0] = c->state;
    out[1] = 0x1;                               /* sequential writes required */
    out[2] = (uint8_t)MIN(c->erases, 255u);     /* wear-level index: resets, saturating */
    record_put_le(out + 8, slba, 8);
    record_put_le(out + 16, cs->geo.clba, 8);
    record_put_le(out + 24, slba + c->wp, 8);
}

uint32_t oc_vector_runs(const OcGeometry *g, const uint64_t *lbas, uint32_t n,
                        uint32_t *start, uint32_t *len)
{
    uint32_t runs = 0;

    for (uint32_t i = 0; i < n; i++) {
        bool joins = runs && lbas[i] < g->nr_sectors && lbas[i - 1] < g->nr_sectors &&
                     lbas[i] == lbas[i - 1] + 1 &&
                     oc_chunk_of(g, lbas[i]) == oc_chunk_of(g, lbas[i - 1]);
        if (joins) {
            len[runs - 1]++;
        } else {
            start[runs] = i;
            len[runs] = 1;
            runs++;
        }
    }
    return runs;
}

/* ---- the saved state ---- */

uint64_t oc_store_size(const OcGeometry *g)
{
    return OC_STORE_HEADER + g->nr_chunks * OC_SLOTS * OC_RECORD;
}

static void header_fill(const OcChunkSet *cs, uint8_t *h)
{
    const OcGeometry *g = &cs->geo;

    memset(h, 0, OC_STORE_HEADER);
    record_put_le(h, OC_STORE_MAGIC, 4);
    record_put_le(h + 4, OC_STORE_VERSION, 4);
    record_put_le(h + 8, g->num_grp, 4);
    record_put_le(h + 12, g->num_pu, 4);
    record_put_le(h + 16, g->num_chk, 4);
    record_put_le(h + 20, g->clba, 4);
    record_put_le(h + 24, g->sector_bytes, 4);
    record_put_le(h + 60, record_checksum(cs->hasher, OC_HEADER_SALT, h, 60), 4);
}

static bool header_matches(const OcChunkSet *cs, const uint8_t *h, char **err)
{
    /* the sector size first: with another one, every count below differs too */
    static const struct { const char *what; int off; } fields[] = {
        { "sector size (lsec_size, lba_index)", 24 },
        { "groups (lnum_ch)", 8 }, { "PUs per group (lnum_lun)", 12 },
        { "chunks per PU (devsz_mb / ns_sizes_mb)", 16 },
        { "sectors per chunk (lsecs_per_pg * lpgs_per_blk * lnum_pln)", 20 },
    };
    uint8_t want[OC_STORE_HEADER];

    if (record_get_le(h, 4) != OC_STORE_MAGIC) {
        return fail(err, "the chunk state area holds something else (no chunk state header)");
    }
    if (record_get_le(h + 4, 4) != OC_STORE_VERSION) {
        return fail(err, "the chunk state was saved in format %u; this build reads format %u",
                    (unsigned)record_get_le(h + 4, 4), OC_STORE_VERSION);
    }
    if (record_get_le(h + 60, 4) != record_checksum(cs->hasher, OC_HEADER_SALT, h, 60)) {
        return fail(err, "the chunk state header is damaged (checksum mismatch)");
    }
    header_fill(cs, want);
    for (size_t i = 0; i < G_N_ELEMENTS(fields); i++) {
        uint64_t saved = record_get_le(h + fields[i].off, 4);
        uint64_t now = record_get_le(want + fields[i].off, 4);
        if (saved != now) {
            return fail(err, "it was saved with %" PRIu64 " %s, the device now has %" PRIu64,
                        saved, fields[i].what, now);
        }
    }
    return true;
}

/*
 * The newest valid record of chunk idx into *c (left as it is when there is none). False
 * when both slots hold records and neither is valid; one empty slot and one damaged is a
 * torn first record: the chunk as created.
 */
static bool chunk_load(OcChunkSet *cs, uint64_t idx, OcChunk *c, bool *recovered)
{
    bool found = false, damaged = false, empty = false;

    for (unsigned s = 0; s < OC_SLOTS; s++) {
        const uint8_t *r = cs->store + OC_STORE_HEADER + (idx * OC_SLOTS + s) * OC_RECORD;
        uint64_t seq = record_get_le(r, 8), wp = record_get_le(r + 8, 8);
        uint8_t state = r[20];

        if (record_all_zero(r, OC_RECORD)) {
            empty = true;
            continue;
        }
        if (record_get_le(r + 28, 4) != record_checksum(cs->hasher, idx, r, 28) ||
            seq % OC_SLOTS != s || wp > cs->geo.clba ||
            (state != OC_CHUNK_FREE && state != OC_CHUNK_OPEN && state != OC_CHUNK_CLOSED &&
             state != OC_CHUNK_OFFLINE)) {
            damaged = true;
            continue;
        }
        if (!found || seq > c->seq) {
            *c = (OcChunk){ .wp = wp, .seq = seq, .erases = (uint32_t)record_get_le(r + 16, 4),
                            .state = state };
            found = true;
        }
    }
    *recovered = damaged && (found || empty);
    return found || !damaged || empty;
}

OcStoreResult oc_store_open(OcChunkSet *cs, uint8_t *store, char **err)
{
    uint64_t recovered = 0;
    OcChunk *loaded;

    if (record_all_zero(store, OC_STORE_HEADER)) {
        if (!record_all_zero(store, oc_store_size(&cs->geo))) {
            fail(err, "the chunk state area has no header but holds records (damaged)");
            return OC_STORE_ERROR;
        }
        cs->store = store;
        return OC_STORE_FRESH;
    }
    cs->store = store;
    if (!header_matches(cs, store, err)) {
        cs->store = NULL;
        return OC_STORE_ERROR;
    }
    loaded = g_new0(OcChunk, cs->geo.nr_chunks);
    for (uint64_t i = 0; i < cs->geo.nr_chunks; i++) {
        bool rec = false;
        loaded[i] = (OcChunk){ .state = OC_CHUNK_FREE };
        if (!chunk_load(cs, i, &loaded[i], &rec)) {
            fail(err, "the state of chunk %" PRIu64 " is damaged in both record slots", i);
            g_free(loaded);
            cs->store = NULL;
            return OC_STORE_ERROR;
        }
        recovered += rec;
    }
    for (uint64_t i = 0; i < cs->geo.nr_chunks; i++) {
        cs->chunks[i].state = OC_CHUNK_FREE;
        set_state(cs, i, loaded[i].state);
        cs->chunks[i] = loaded[i];
    }
    g_free(loaded);
    cs->records_recovered = recovered;
    return OC_STORE_LOADED;
}

void oc_store_format(OcChunkSet *cs)
{
    if (cs->store) {
        header_fill(cs, cs->store);
    }
}
