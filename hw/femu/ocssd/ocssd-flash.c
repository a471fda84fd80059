/*
 * Chunks on flash; see ocssd-flash.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ocssd-flash.h"

#include <glib.h>
#include <inttypes.h>

#define NO_CHUNK UINT64_MAX

/* A unit in a PU's write cache: which one, and when its program finishes. */
typedef struct CachedUnit {
    uint64_t chunk;
    uint64_t unit;
    uint64_t done_ns;
} CachedUnit;

struct OcFlash {
    NandModel *nand;
    bool own_nand;
    uint32_t first_block;
    uint32_t unit_sectors;
    uint32_t secs_per_page;     /* namespace sectors per flash page */
    uint32_t chk_bits;          /* chunk number within its PU: chunk & (chunks_per_pu - 1) */
    uint32_t cache_units;
    CachedUnit *cache;          /* cache_units per PU, a ring */
    uint32_t *cache_next;       /* per PU: the slot the next unit takes (the oldest) */
    OcFlashStats stats;
};

uint32_t oc_flash_unit_sectors(const NandGeometry *g, uint32_t sector_bytes)
{
    return (uint32_t)(nand_page_bytes(g) / sector_bytes) * g->pls_per_lun;
}

static const NandGeometry *config_geo(const OcFlashConfig *c)
{
    return c->shared_nand ? &c->shared_nand->geo : &c->geo;
}

bool oc_flash_config_check(const OcFlashConfig *c, char **err)
{
    const NandGeometry *g = config_geo(c);
    uint64_t page = nand_page_bytes(g);

    if (!c->shared_nand && (!nand_geometry_check(&c->geo, err) ||
                            !nand_timing_check(&c->tm, err))) {
        return false;
    }
    if (!c->sector_bytes || page < c->sector_bytes || page % c->sector_bytes) {
        *err = g_strdup_printf("a flash page of %" PRIu64 " bytes is not a whole number of "
                               "%u-byte sectors (lsec_size, lsecs_per_pg)", page,
                               c->sector_bytes);
        return false;
    }
    if (!c->chunks_per_pu || (c->chunks_per_pu & (c->chunks_per_pu - 1)) ||
        (uint64_t)c->first_block + c->chunks_per_pu > g->blks_per_pl) {
        *err = g_strdup_printf("%u chunks per PU from block %u do not fit the flash's %u "
                               "blocks per plane (or are not a power of two)",
                               c->chunks_per_pu, c->first_block, g->blks_per_pl);
        return false;
    }
    if (!c->cache_units) {
        *err = g_strdup("the write cache must hold at least one program unit");
        return false;
    }
    return true;
}

OcFlash *oc_flash_new(const OcFlashConfig *c, char **err)
{
    const NandGeometry *g = config_geo(c);
    OcFlash *f;
    uint64_t pus;

    if (!oc_flash_config_check(c, err)) {
        return NULL;
    }
    f = g_new0(OcFlash, 1);
    f->nand = c->shared_nand;
    if (!f->nand) {
        f->nand = nand_model_new(&c->geo, &c->tm, err);
        if (!f->nand) {
            g_free(f);
            return NULL;
        }
        f->own_nand = true;
    }
    pus = nand_luns(g);
    f->first_block = c->first_block;
    f->secs_per_page = nand_page_bytes(g) / c->sector_bytes;
    f->unit_sectors = f->secs_per_page * g->pls_per_lun;
    f->chk_bits = (uint32_t)__builtin_ctz(c->chunks_per_pu);
    f->cache_units = c->cache_units;
    f->cache = g_new(CachedUnit, pus * c->cache_units);
    for (uint64_t i = 0; i < pus * c->cache_units; i++) {
        f->cache[i] = (CachedUnit){ .chunk = NO_CHUNK };
    }
    f->cache_next = g_new0(uint32_t, pus);
    return f;
}

void oc_flash_free(OcFlash *f)
{
    if (f) {
        if (f->own_nand) {
            nand_model_free(f->nand);
        }
        g_free(f->cache);
        g_free(f->cache_next);
        g_free(f);
    }
}

/* The chip (its index is the PU's: grp * num_pu + pu) and block of a chunk. */
static void locate(const OcFlash *f, uint64_t chunk, NandAddr *a)
{
    uint64_t pu = chunk >> f->chk_bits;

    a->ch = (uint32_t)(pu / f->nand->geo.luns_per_ch);
    a->lun = (uint32_t)(pu % f->nand->geo.luns_per_ch);
    a->blk = f->first_block + (uint32_t)(chunk & ((1ULL << f->chk_bits) - 1));
    a->pl = 0;
    a->pg = 0;
}

static CachedUnit *pu_cache(OcFlash *f, uint64_t chunk)
{
    return &f->cache[(chunk >> f->chk_bits) * f->cache_units];
}

uint64_t oc_flash_write(OcFlash *f, uint64_t chunk, uint64_t sec, uint64_t n, uint64_t now_ns)
{
    uint64_t pu = chunk >> f->chk_bits, done = now_ns;
    CachedUnit *cache = pu_cache(f, chunk);
    NandAddr a;

    locate(f, chunk, &a);
    for (uint64_t u = sec / f->unit_sectors; u < (sec + n + f->unit_sectors - 1) / f->unit_sectors;
         u++) {
        CachedUnit *slot = &cache[f->cache_next[pu]];
        uint64_t accept = now_ns, programmed = now_ns;

        if (slot->chunk != NO_CHUNK && slot->done_ns > now_ns) {
            accept = slot->done_ns;     /* the cache is full: wait for its oldest unit */
            f->stats.cache_waits++;
        }
        a.pg = (uint32_t)u;
        a.pl = 0;
        /* a unit is the page on every plane: one multi-plane program */
        programmed = nand_op_planes(f->nand, NAND_OP_PROGRAM, &a, UINT32_MAX, accept);
        *slot = (CachedUnit){ .chunk = chunk, .unit = u, .done_ns = programmed };
        f->cache_next[pu] = (f->cache_next[pu] + 1) % f->cache_units;
        f->stats.units_programmed++;
        done = MAX(done, accept);
    }
    return done;
}

static bool in_cache(OcFlash *f, uint64_t chunk, uint64_t unit, uint64_t now_ns)
{
    const CachedUnit *cache = pu_cache(f, chunk);

    for (uint32_t i = 0; i < f->cache_units; i++) {
        if (cache[i].chunk == chunk && cache[i].unit == unit && cache[i].done_ns > now_ns) {
            return true;
        }
    }
    return false;
}

/* The pages of one unit that a read needs from flash (a plane mask): one read of them all. */
static uint64_t read_planes(OcFlash *f, NandAddr *a, uint32_t planes, uint64_t now_ns)
{
    if (!planes) {
        return now_ns;
    }
    f->stats.pages_read += __builtin_popcount(planes);
    a->pl = __builtin_ctz(planes);
    return nand_op_planes(f->nand, NAND_OP_READ, a, planes, now_ns);
}

uint64_t oc_flash_read(OcFlash *f, uint64_t chunk, uint64_t sec, uint64_t n, uint64_t now_ns)
{
    uint64_t done = now_ns, cur_unit = UINT64_MAX, last_page = UINT64_MAX, t;
    uint32_t planes = 0;
    bool cached = false;
    NandAddr a;

    locate(f, chunk, &a);
    for (uint64_t s = sec; s < sec + n; s++) {
        uint64_t unit = s / f->unit_sectors;
        uint64_t page = s / f->secs_per_page;   /* page of the unit's plane sequence */

        if (page == last_page) {
            continue;
        }
        last_page = page;
        if (unit != cur_unit) {
            t = read_planes(f, &a, planes, now_ns);
            done = MAX(done, t);
            planes = 0;
            cur_unit = unit;
            a.pg = (uint32_t)unit;
            cached = in_cache(f, chunk, unit, now_ns);
        }
        if (cached) {
            f->stats.cache_read_hits++;
        } else {
            planes |= 1u << (page % f->nand->geo.pls_per_lun);
        }
    }
    t = read_planes(f, &a, planes, now_ns);
    return MAX(done, t);
}

uint64_t oc_flash_erase(OcFlash *f, uint64_t chunk, uint64_t now_ns)
{
    CachedUnit *cache = pu_cache(f, chunk);
    uint64_t done = now_ns;
    NandAddr a;

    for (uint32_t i = 0; i < f->cache_units; i++) {
        if (cache[i].chunk == chunk) {
            cache[i].chunk = NO_CHUNK;
            /* the erase queues behind the chunk's programs on the chip's timeline */
        }
    }
    locate(f, chunk, &a);
    /* the chunk's block on every plane, erased at once */
    uint64_t t = nand_op_planes(f->nand, NAND_OP_ERASE, &a, UINT32_MAX, now_ns);
    done = MAX(done, t);        /* glib's MAX: never a call in it */
    f->stats.blocks_erased += f->nand->geo.pls_per_lun;
    return done;
}

uint64_t oc_flash_flush(OcFlash *f, uint64_t now_ns)
{
    uint64_t done = now_ns, slots = nand_luns(&f->nand->geo) * f->cache_units;

    for (uint64_t i = 0; i < slots; i++) {
        if (f->cache[i].chunk != NO_CHUNK) {
            done = MAX(done, f->cache[i].done_ns);
        }
    }
    return done;
}

const OcFlashStats *oc_flash_stats(const OcFlash *f)
{
    return &f->stats;
}

NandModel *oc_flash_nand(OcFlash *f)
{
    return f->nand;
}
