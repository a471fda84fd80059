/*
 * Selective power-loss protection for the zoned write buffer; see plp.h.
 *
 * Pool: sector headers 0 .. nr_plp-1 are the PLP region (their data is the store's slots,
 * so protecting a sector is writing it there), nr_plp .. nr_plp+nr_buf-1 the non-PLP
 * region (plain memory). A region's free sectors form a list; dirty ones a list per zone
 * (in write order, which is address order in a zone); in-flight ones a list per program
 * batch, all through Sector.next.
 *
 * Store layout: a header, durable[nr_zones] (bytes of each zone that are durable on flash),
 * nr_plp OOB records, nr_plp sector slots. An OOB record is written after its slot's data,
 * its magic last, so a record that is valid describes complete data.
 *
 * A reset zone's clean and in-flight sectors are not searched for: the zone's generation
 * goes up and sectors of an older generation no longer count as hits.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "plp.h"

#include <glib.h>
#include <string.h>

#define STORE_MAGIC "FEMUPLP1"
#define STORE_ALIGN 4096u
#define OOB_MAGIC 0x504c504fu       /* "OPLP" */
#define NO_SECTOR UINT32_MAX
#define UNPLACED UINT32_MAX         /* OOB: no power-loss flush placed it (QEMU stopped) */
#define AT_HOME (UINT32_MAX - 1)    /* OOB: the normal flush put it at its own location */

enum { REG_PLP, REG_BUF, REGIONS };
enum { S_FREE, S_DIRTY, S_INFLIGHT, S_CLEAN };

typedef struct StoreHeader {
    char magic[8];
    uint32_t version;
    uint32_t sector_bytes;
    uint64_t nr_slots;
    uint64_t nr_zones;
    uint64_t zone_bytes;
} StoreHeader;

typedef struct Oob {
    uint32_t magic;
    uint32_t sum;               /* of off, seq and the slot's data */
    uint64_t off;               /* original address (model offset) */
    uint64_t seq;
    uint32_t chip;              /* where the power-loss flush put it, AT_HOME, UNPLACED */
    uint32_t rpage;             /* page in the chip's reserved blocks */
} Oob;

typedef struct Sector {
    uint64_t off;
    uint32_t next;
    uint32_t gen;               /* its zone's generation when written */
    uint8_t state;
    uint8_t ref;                /* read since the CLOCK hand last passed */
    bool mapped;                /* the hit table points at it */
    bool zeroes;                /* from a Write Zeroes: goes home as a clear, not a copy */
} Sector;

typedef struct ZoneList {
    uint32_t head, tail;
    uint64_t count;
} ZoneList;

typedef struct Batch {
    uint64_t zone;
    uint64_t done;
    uint32_t head;
    uint64_t count;
} Batch;

typedef struct Region {
    uint32_t base, n;
    uint32_t free_head;
    uint64_t nfree, ndirty, ninflight, nclean;
    uint32_t hand;
    ZoneList *zl;               /* per zone: its dirty sectors */
    GQueue dirty_zones;         /* zones with dirty sectors, oldest first */
    GArray *batches;            /* Batch: programs in flight */
    uint64_t next_done;         /* the earliest batch's completion (UINT64_MAX: none) */
    uint8_t *data;              /* n sectors */
} Region;

struct PlpBuffer {
    PlpConfig cfg;
    const ZnsFlashConfig *zc;
    NandModel *nand;
    uint64_t page_bytes, secs_per_page, nr_zones;
    Sector *sec;
    Region reg[REGIONS];
    GHashTable *hits;           /* sector number + 1 -> pool index + 1 */
    uint32_t *zone_gen;
    uint64_t barrier;           /* writes wait for the last Flush */
    uint64_t seq;
    bool fresh;                 /* the store was formatted by plp_new */
    uint64_t *durable;          /* in the store */
    Oob *oob;                   /* in the store */
    uint8_t *slots;             /* in the store */
    PlpLoss worst;              /* plp_worst_case, at creation */
    PlpStats st;
};

/* A function, not GLib's MAX: its arguments are calls that must run once. */
static inline uint64_t later(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* ---- store ---- */

static uint64_t round_up(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b * b;
}

static uint64_t durable_at(void)
{
    return STORE_ALIGN;
}

static uint64_t oob_at(uint64_t nr_zones)
{
    return durable_at() + round_up(nr_zones * sizeof(uint64_t), STORE_ALIGN);
}

static uint64_t slots_at(uint64_t nr_zones, uint64_t nr_slots)
{
    return oob_at(nr_zones) + round_up(nr_slots * sizeof(Oob), STORE_ALIGN);
}

uint64_t plp_store_size(uint32_t sector_bytes, uint64_t plp_bytes, uint64_t nr_zones)
{
    uint64_t slots = sector_bytes ? plp_bytes / sector_bytes : 0;
    return slots_at(nr_zones, slots) + slots * sector_bytes;
}

static uint32_t oob_sum(uint64_t off, uint64_t seq, const uint8_t *data, uint32_t len)
{
    uint32_t h = 2166136261u;       /* FNV-1a */
    uint8_t k[16];

    memcpy(k, &off, 8);
    memcpy(k + 8, &seq, 8);
    for (int i = 0; i < 16; i++) {
        h = (h ^ k[i]) * 16777619u;
    }
    for (uint32_t i = 0; i < len; i++) {
        h = (h ^ data[i]) * 16777619u;
    }
    return h;
}

static uint8_t *slot_data(PlpBuffer *p, uint32_t slot)
{
    return p->slots + (uint64_t)slot * p->cfg.sector_bytes;
}

static bool oob_valid(PlpBuffer *p, uint32_t slot)
{
    const Oob *o = &p->oob[slot];

    return __atomic_load_n(&o->magic, __ATOMIC_ACQUIRE) == OOB_MAGIC &&
           o->off % p->cfg.sector_bytes == 0 &&
           o->off / p->zc->zone_bytes < p->nr_zones &&
           o->off % p->zc->zone_bytes < p->zc->zone_cap_bytes &&
           o->sum == oob_sum(o->off, o->seq, slot_data(p, slot), p->cfg.sector_bytes);
}

static void oob_write(PlpBuffer *p, uint32_t slot, uint64_t off)
{
    Oob *o = &p->oob[slot];

    __atomic_store_n(&o->magic, 0, __ATOMIC_RELEASE);
    o->off = off;
    o->seq = ++p->seq;
    o->chip = o->rpage = UNPLACED;
    o->sum = oob_sum(off, o->seq, slot_data(p, slot), p->cfg.sector_bytes);
    __atomic_store_n(&o->magic, OOB_MAGIC, __ATOMIC_RELEASE);
}

static void oob_clear(PlpBuffer *p, uint32_t slot)
{
    __atomic_store_n(&p->oob[slot].magic, 0, __ATOMIC_RELEASE);
}

static void durable_set(PlpBuffer *p, uint64_t zone, uint64_t end)
{
    p->durable[zone] = end;
}

/* ---- configuration ---- */

bool plp_config_check(const PlpConfig *c, char **err)
{
    const ZnsFlashConfig *z;
    uint64_t sec = c->sector_bytes;

    if (!c->flash || !c->data || !c->store) {
        *err = g_strdup("plp: no flash, data area or store");
        return false;
    }
    z = zns_flash_get_config(c->flash);
    if (!sec || (sec & (sec - 1)) || z->zone_bytes % sec || z->zone_cap_bytes % sec) {
        *err = g_strdup_printf("plp: sector size %" G_GUINT64_FORMAT " must be a power of two "
                               "dividing the zone size and capacity", sec);
        return false;
    }
    if (c->plp_bytes % sec || c->plp_bytes / sec >= NO_SECTOR / 2) {
        *err = g_strdup_printf("plp_buf_mb: %" G_GUINT64_FORMAT " bytes is not a whole number "
                               "of %" G_GUINT64_FORMAT "-byte sectors below 2^31 of them",
                               c->plp_bytes, sec);
        return false;
    }
    if (c->buf_bytes % sec || c->buf_bytes / sec >= NO_SECTOR / 2) {
        *err = g_strdup_printf("buf_mb: %" G_GUINT64_FORMAT " bytes is not a whole number of %"
                               G_GUINT64_FORMAT "-byte sectors below 2^31 of them",
                               c->buf_bytes, sec);
        return false;
    }
    if (c->flush_pct < 1 || c->flush_pct > 100) {
        *err = g_strdup_printf("plp_flush_pct=%u is out of range: allowed 1..100", c->flush_pct);
        return false;
    }
    if (c->method != PLP_FLUSH_BALANCED && c->method != PLP_FLUSH_NORMAL) {
        *err = g_strdup("plp_flush: allowed balanced or normal");
        return false;
    }
    return true;
}

bool plp_protects(PlpMode mode, bool flagged, bool durable_zone)
{
    switch (mode) {
    case PLP_MODE_FULL:
        return true;
    case PLP_MODE_SELECTIVE:
        return flagged || durable_zone;
    default:
        return false;
    }
}

static bool parse_u64(const char *s, uint64_t *v)
{
    char *end;

    if (!g_ascii_isdigit(*s)) {
        return false;
    }
    *v = g_ascii_strtoull(s, &end, 10);
    return *end == '\0';
}

uint8_t *plp_zones_parse(const char *spec, uint64_t nr_zones, char **err)
{
    g_autofree uint8_t *map = g_malloc0(nr_zones / 8 + 1);
    g_auto(GStrv) parts = NULL;

    if (!spec || !*spec) {
        return g_steal_pointer(&map);
    }
    parts = g_strsplit_set(spec, ":,", -1);     /* ':' needs no escaping in -device */
    for (char **q = parts; *q; q++) {
        g_auto(GStrv) ends = g_strsplit(*q, "-", 3);
        uint64_t lo, hi;
        guint n = g_strv_length(ends);

        if (n < 1 || n > 2 || !parse_u64(ends[0], &lo) ||
            (n == 2 ? !parse_u64(ends[1], &hi) : (hi = lo, false)) ||
            lo > hi || hi >= nr_zones) {
            *err = g_strdup_printf("plp_zones='%s': '%s' is not a zone or range of zones a-b "
                                   "with a <= b in 0..%" G_GUINT64_FORMAT " (the namespace's "
                                   "zones); write e.g. plp_zones=0-1:5", spec, *q,
                                   nr_zones - 1);
            return NULL;
        }
        for (uint64_t z = lo; z <= hi; z++) {
            map[z / 8] |= 1u << (z % 8);
        }
    }
    return g_steal_pointer(&map);
}

/* ---- pool ---- */

static Region *region_of(PlpBuffer *p, uint32_t idx)
{
    return &p->reg[idx < p->reg[REG_PLP].n ? REG_PLP : REG_BUF];
}

static uint8_t *sector_data(PlpBuffer *p, uint32_t idx)
{
    Region *r = region_of(p, idx);
    return r->data + (uint64_t)(idx - r->base) * p->cfg.sector_bytes;
}

static uint64_t zone_of(PlpBuffer *p, uint64_t off)
{
    return off / p->zc->zone_bytes;
}

static gpointer hit_key(PlpBuffer *p, uint64_t off)
{
    return GSIZE_TO_POINTER(off / p->cfg.sector_bytes + 1);
}

static void unmap(PlpBuffer *p, uint32_t idx)
{
    Sector *s = &p->sec[idx];

    if (s->mapped) {
        g_hash_table_remove(p->hits, hit_key(p, s->off));
        s->mapped = false;
    }
}

static void free_sector(PlpBuffer *p, uint32_t idx)
{
    Region *r = region_of(p, idx);
    Sector *s = &p->sec[idx];

    unmap(p, idx);
    if (r == &p->reg[REG_PLP]) {
        oob_clear(p, idx);
    }
    s->state = S_FREE;
    s->next = r->free_head;
    r->free_head = idx;
    r->nfree++;
}

/* The buffered sector at off, if it holds the zone's current data. */
static Sector *lookup(PlpBuffer *p, uint64_t off, uint32_t *idx)
{
    gpointer v = g_hash_table_lookup(p->hits, hit_key(p, off));
    Sector *s;

    if (!v) {
        return NULL;
    }
    *idx = GPOINTER_TO_SIZE(v) - 1;
    s = &p->sec[*idx];
    if (s->gen != p->zone_gen[zone_of(p, off)]) {
        unmap(p, *idx);     /* its zone was reset */
        return NULL;
    }
    return s;
}

static uint64_t first_done(const Region *r)
{
    uint64_t t = UINT64_MAX;

    for (guint i = 0; i < r->batches->len; i++) {
        t = MIN(t, g_array_index(r->batches, Batch, i).done);
    }
    return t;
}

/* Batches done by t: their sectors become clean (cheap when none is: every sector asks). */
static void reap(PlpBuffer *p, Region *r, uint64_t t)
{
    if (t < r->next_done) {
        return;
    }
    for (guint i = r->batches->len; i-- > 0;) {
        Batch *b = &g_array_index(r->batches, Batch, i);
        if (b->done <= t) {
            for (uint32_t k = b->head; k != NO_SECTOR; k = p->sec[k].next) {
                p->sec[k].state = S_CLEAN;
            }
            r->ninflight -= b->count;
            r->nclean += b->count;
            g_array_remove_index_fast(r->batches, i);
        }
    }
    r->next_done = first_done(r);
}

/* When the region's programs (of every zone: zone UINT64_MAX) are done. */
static uint64_t last_done(const Region *r, uint64_t zone, uint64_t t)
{
    for (guint i = 0; i < r->batches->len; i++) {
        const Batch *b = &g_array_index(r->batches, Batch, i);
        if (zone == UINT64_MAX || b->zone == zone) {
            t = MAX(t, b->done);
        }
    }
    return t;
}

/* Pages [lo, hi) of a zone holding secs sectors of data (the rest is padding), at t. */
static uint64_t program_run(PlpBuffer *p, uint64_t zone, uint64_t lo, uint64_t hi,
                            uint64_t secs, uint64_t t)
{
    p->st.pad_sectors += (hi - lo) * p->secs_per_page - secs;
    return zns_flash_program(p->cfg.flash, NULL, zone, lo, hi, 0, t);
}

/* Zeroes into the data area: the device's way when it has one (PlpConfig.zero). */
static void data_zero(PlpBuffer *p, uint64_t off, uint64_t len)
{
    if (p->cfg.zero) {
        p->cfg.zero(p->cfg.zero_opaque, off, len);
    } else {
        memset(p->cfg.data + off, 0, len);
    }
}

/*
 * Programs the zone's dirty sectors of region r at t, page by page (a partial page padded),
 * and copies their data to the data area. Returns when the programs are done.
 */
static uint64_t write_zone(PlpBuffer *p, Region *r, uint64_t zone, uint64_t t)
{
    ZoneList *zl = &r->zl[zone];
    uint64_t zbase = zone * p->zc->zone_bytes, done = t, end = 0;
    uint64_t run_lo = UINT64_MAX, run_hi = 0, run_secs = 0;
    Batch b = { .zone = zone, .head = zl->head, .count = zl->count };

    if (!zl->count) {
        return t;
    }
    for (uint32_t k = zl->head; k != NO_SECTOR; k = p->sec[k].next) {
        Sector *s = &p->sec[k];
        uint64_t pg = (s->off - zbase) / p->page_bytes;

        /* a run of consecutive pages goes out together */
        if (run_secs && pg != run_hi - 1 && pg != run_hi) {
            done = later(done, program_run(p, zone, run_lo, run_hi, run_secs, t));
            run_secs = 0;
        }
        if (!run_secs) {
            run_lo = pg;
        }
        run_hi = pg + 1;
        run_secs++;
        if (s->zeroes) {
            data_zero(p, s->off, p->cfg.sector_bytes);
        } else {
            memcpy(p->cfg.data + s->off, sector_data(p, k), p->cfg.sector_bytes);
        }
        if (r == &p->reg[REG_PLP]) {
            oob_clear(p, k);        /* at home now */
        }
        s->state = S_INFLIGHT;
        end = MAX(end, s->off - zbase + p->cfg.sector_bytes);
    }
    if (run_secs) {
        done = later(done, program_run(p, zone, run_lo, run_hi, run_secs, t));
    }
    durable_set(p, zone, MAX(p->durable[zone], end));
    b.done = done;
    g_array_append_val(r->batches, b);
    r->next_done = MIN(r->next_done, done);
    r->ndirty -= zl->count;
    r->ninflight += zl->count;
    zl->head = zl->tail = NO_SECTOR;
    zl->count = 0;
    g_queue_remove(&r->dirty_zones, GSIZE_TO_POINTER(zone));
    return done;
}

/* Writes the region's dirty sectors of zones [zlo, zhi) out (oldest zone first). */
static uint64_t write_zones(PlpBuffer *p, Region *r, uint64_t zlo, uint64_t zhi, uint64_t t,
                            PlpFlushCause cause)
{
    uint64_t done = t, sectors = 0;
    GList *l = r->dirty_zones.head;

    while (l) {
        uint64_t zone = GPOINTER_TO_SIZE(l->data);
        l = l->next;        /* write_zone unlinks this zone */
        if (zone >= zlo && zone < zhi) {
            sectors += r->zl[zone].count;
            done = later(done, write_zone(p, r, zone, t));
        }
    }
    if (sectors) {
        p->st.flushes[cause]++;
        p->st.flushed_sectors[cause] += sectors;
    }
    return done;
}

static uint64_t write_region(PlpBuffer *p, Region *r, uint64_t t, PlpFlushCause cause)
{
    return write_zones(p, r, 0, p->nr_zones, t, cause);
}

/*
 * A buffer of region r for a write at *t: a free one, else a clean one (CLOCK over the
 * reference bits), else the region is written out and *t moves on until a program frees one.
 */
static uint32_t alloc_sector(PlpBuffer *p, Region *r, uint64_t *t, bool *waited)
{
    uint32_t idx;

    reap(p, r, *t);
    if (!r->nfree && !r->nclean) {
        write_region(p, r, *t, PLP_CAUSE_SPACE);
        while (!r->nfree && !r->nclean) {
            g_assert(r->batches->len);      /* the write-out above put every sector there */
            *t = first_done(r);
            *waited = true;
            reap(p, r, *t);
        }
    }
    if (r->nfree) {
        idx = r->free_head;
        r->free_head = p->sec[idx].next;
        r->nfree--;
        return idx;
    }
    for (;;) {
        Sector *s;
        idx = r->base + r->hand;
        r->hand = (r->hand + 1) % r->n;
        s = &p->sec[idx];
        if (s->state != S_CLEAN) {
            continue;
        }
        if (s->ref) {
            s->ref = 0;
            continue;
        }
        unmap(p, idx);
        r->nclean--;
        return idx;
    }
}

static void zone_list_append(PlpBuffer *p, Region *r, uint64_t zone, uint32_t idx)
{
    ZoneList *zl = &r->zl[zone];

    p->sec[idx].next = NO_SECTOR;
    if (zl->count) {
        p->sec[zl->tail].next = idx;
    } else {
        zl->head = idx;
        g_queue_push_tail(&r->dirty_zones, GSIZE_TO_POINTER(zone));
    }
    zl->tail = idx;
    zl->count++;
}

/* ---- life cycle ---- */

static void region_init(PlpBuffer *p, Region *r, uint32_t base, uint32_t n, uint8_t *data)
{
    r->base = base;
    r->n = n;
    r->data = data;
    r->zl = g_new(ZoneList, p->nr_zones);
    for (uint64_t z = 0; z < p->nr_zones; z++) {
        r->zl[z] = (ZoneList){ NO_SECTOR, NO_SECTOR, 0 };
    }
    g_queue_init(&r->dirty_zones);
    r->batches = g_array_new(FALSE, FALSE, sizeof(Batch));
    r->next_done = UINT64_MAX;
    r->free_head = NO_SECTOR;
    r->nfree = 0;
    for (uint32_t i = n; i-- > 0;) {
        p->sec[base + i] = (Sector){ .next = r->free_head, .state = S_FREE };
        r->free_head = base + i;
        r->nfree++;
    }
}

static bool store_open(PlpBuffer *p, char **err)
{
    StoreHeader want = {
        .magic = STORE_MAGIC, .version = 1, .sector_bytes = p->cfg.sector_bytes,
        .nr_slots = p->reg[REG_PLP].n, .nr_zones = p->nr_zones,
        .zone_bytes = p->zc->zone_bytes,
    };
    StoreHeader *h = (StoreHeader *)p->cfg.store;
    static const StoreHeader zero;

    if (!memcmp(h, &zero, sizeof(zero))) {
        *h = want;
        p->fresh = true;
        return true;
    }
    if (memcmp(h->magic, STORE_MAGIC, 8) || h->version != 1) {
        *err = g_strdup("plp: the reserved area holds something else than a PLP store");
        return false;
    }
    if (memcmp(h, &want, sizeof(want))) {
        *err = g_strdup_printf("plp: the saved PLP store was made for %" G_GUINT64_FORMAT
                               " slots of %u bytes and %" G_GUINT64_FORMAT " zones of %"
                               G_GUINT64_FORMAT " bytes, not %" G_GUINT64_FORMAT " of %u "
                               "and %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                               " (plp_buf_mb, lba_index, zns_zone_size_mb, devsz_mb)",
                               h->nr_slots, h->sector_bytes, h->nr_zones, h->zone_bytes,
                               want.nr_slots, want.sector_bytes, want.nr_zones,
                               want.zone_bytes);
        return false;
    }
    return true;
}

PlpBuffer *plp_new(const PlpConfig *c, char **err)
{
    PlpBuffer *p;
    uint32_t nplp, nbuf;
    const NandGeometry *g;

    if (!plp_config_check(c, err)) {
        return NULL;
    }
    p = g_new0(PlpBuffer, 1);
    p->cfg = *c;
    p->zc = zns_flash_get_config(c->flash);
    p->nand = zns_flash_nand(c->flash);
    g = &p->nand->geo;
    p->page_bytes = nand_page_bytes(g);
    p->secs_per_page = MAX(p->page_bytes / c->sector_bytes, 1);
    p->nr_zones = p->zc->nr_zones;
    nplp = c->plp_bytes / c->sector_bytes;
    nbuf = c->buf_bytes / c->sector_bytes;
    p->sec = g_new0(Sector, (uint64_t)nplp + nbuf + 1);
    p->durable = (uint64_t *)(c->store + durable_at());
    p->oob = (Oob *)(c->store + oob_at(p->nr_zones));
    p->slots = c->store + slots_at(p->nr_zones, nplp);
    region_init(p, &p->reg[REG_PLP], 0, nplp, p->slots);
    region_init(p, &p->reg[REG_BUF], nplp, nbuf, g_malloc(c->buf_bytes ? c->buf_bytes : 1));
    p->hits = g_hash_table_new(g_direct_hash, g_direct_equal);
    p->zone_gen = g_new0(uint32_t, p->nr_zones);
    if (!store_open(p, err)) {
        plp_free(p);
        return NULL;
    }
    for (uint32_t i = 0; i < nplp; i++) {
        if (oob_valid(p, i)) {
            p->seq = MAX(p->seq, p->oob[i].seq);
        }
    }
    plp_worst_case(p, &p->worst);
    return p;
}

void plp_free(PlpBuffer *p)
{
    if (!p) {
        return;
    }
    for (int i = 0; i < REGIONS; i++) {
        g_free(p->reg[i].zl);
        g_queue_clear(&p->reg[i].dirty_zones);
        g_array_free(p->reg[i].batches, TRUE);
    }
    g_free(p->reg[REG_BUF].data);
    g_hash_table_destroy(p->hits);
    g_free(p->zone_gen);
    g_free(p->sec);
    g_free(p);
}

/* ---- host commands ---- */

/* A region of no size cannot hold data: its writes go straight to flash. */
static uint64_t write_through(PlpBuffer *p, uint64_t offset, uint64_t len, const uint8_t *data,
                              uint64_t t)
{
    uint64_t zone = zone_of(p, offset), zoff = offset - zone * p->zc->zone_bytes;
    uint64_t pg_lo = zoff / p->page_bytes, pg_hi = (zoff + len + p->page_bytes - 1) /
                                                   p->page_bytes;

    for (uint64_t at = 0; at < len; at += p->cfg.sector_bytes) {
        uint32_t old;
        if (lookup(p, offset + at, &old)) {
            unmap(p, old);      /* no older copy may answer a read */
        }
    }
    if (data) {
        memcpy(p->cfg.data + offset, data, len);
    } else {
        data_zero(p, offset, len);
    }
    durable_set(p, zone, MAX(p->durable[zone], zoff + len));
    return zns_flash_program(p->cfg.flash, NULL, zone, pg_lo, pg_hi, 0, t);
}

uint64_t plp_write(PlpBuffer *p, uint64_t offset, uint64_t len, const uint8_t *data,
                   bool protect, uint64_t now)
{
    Region *r = &p->reg[protect ? REG_PLP : REG_BUF];
    uint64_t t = MAX(now, p->barrier), sec = p->cfg.sector_bytes, zone = zone_of(p, offset);
    bool waited = false;

    g_assert(offset % sec == 0 && len % sec == 0 && zone < p->nr_zones);
    if (protect) {
        p->st.plp_write_bytes += len;
    } else {
        p->st.buf_write_bytes += len;
    }
    if (!r->n) {
        return write_through(p, offset, len, data, t);
    }
    for (uint64_t done = 0; done < len; done += sec) {
        uint64_t off = offset + done;
        uint32_t idx, old;
        Sector *s;

        if (lookup(p, off, &old)) {
            unmap(p, old);          /* a clean copy of what this replaces */
        }
        idx = alloc_sector(p, r, &t, &waited);
        s = &p->sec[idx];
        if (data) {
            memcpy(sector_data(p, idx), data + done, sec);
        } else {
            memset(sector_data(p, idx), 0, sec);
        }
        *s = (Sector){ .off = off, .gen = p->zone_gen[zone], .state = S_DIRTY,
                       .mapped = true, .zeroes = !data };
        g_hash_table_insert(p->hits, hit_key(p, off), GSIZE_TO_POINTER(idx + 1));
        zone_list_append(p, r, zone, idx);
        r->ndirty++;
        if (protect) {
            oob_write(p, idx, off);
        }
    }
    if (r->ndirty * 100 > (uint64_t)p->cfg.flush_pct * r->n) {
        write_region(p, r, t, PLP_CAUSE_THRESHOLD);
    }
    p->st.buffer_waits += waited;
    return t;
}

uint64_t plp_read(PlpBuffer *p, uint64_t offset, uint64_t len, uint8_t *out, uint64_t now)
{
    uint64_t sec = p->cfg.sector_bytes, hit = 0;

    (void)now;      /* a hit costs no NAND time; the caller times the misses */
    for (uint64_t at = 0; at + sec <= len; at += sec) {
        uint32_t idx;
        Sector *s = lookup(p, offset + at, &idx);

        if (s) {
            memcpy(out + at, sector_data(p, idx), sec);
            s->ref = 1;
            hit += sec;
            p->st.read_hit_sectors++;
        } else {
            p->st.read_miss_sectors++;
        }
    }
    return hit;
}

uint64_t plp_flush_range(PlpBuffer *p, uint64_t offset, uint64_t len, uint64_t now)
{
    Region *r = &p->reg[REG_BUF];
    uint64_t t = MAX(now, p->barrier), zb = p->zc->zone_bytes, done;
    uint64_t zlo = MIN(offset / zb, p->nr_zones);
    uint64_t all = p->nr_zones * zb;
    uint64_t zhi = (len > all ? all : MIN(offset + len, all) + zb - 1) / zb;
    uint64_t before = p->st.flushes[PLP_CAUSE_HOST];

    done = write_zones(p, r, zlo, zhi, t, PLP_CAUSE_HOST);
    if (p->st.flushes[PLP_CAUSE_HOST] == before) {
        p->st.flushes[PLP_CAUSE_HOST]++;    /* every Flush counts, even with nothing to do */
    }
    /* earlier programs of the region count too: the data is on flash when they are done */
    done = last_done(r, UINT64_MAX, done);
    p->barrier = done;
    return done;
}

uint64_t plp_flush(PlpBuffer *p, uint64_t now)
{
    return plp_flush_range(p, 0, UINT64_MAX, now);
}

uint64_t plp_shutdown(PlpBuffer *p, uint64_t now)
{
    uint64_t t = MAX(now, p->barrier), done = t;

    for (int i = 0; i < REGIONS; i++) {
        done = later(done, write_region(p, &p->reg[i], t, PLP_CAUSE_DRAIN));
        done = last_done(&p->reg[i], UINT64_MAX, done);
    }
    p->barrier = done;
    return done;
}

uint64_t plp_drain_zone(PlpBuffer *p, uint64_t zone, uint64_t written_bytes, uint64_t now)
{
    uint64_t t = MAX(now, p->barrier), done = t, sectors = 0;

    if (zone >= p->nr_zones) {
        return now;
    }
    for (int i = 0; i < REGIONS; i++) {
        sectors += p->reg[i].zl[zone].count;
        done = later(done, write_zone(p, &p->reg[i], zone, t));
        done = last_done(&p->reg[i], zone, done);   /* earlier programs of the zone too */
    }
    if (sectors) {
        p->st.flushes[PLP_CAUSE_DRAIN]++;
        p->st.flushed_sectors[PLP_CAUSE_DRAIN] += sectors;
    }
    durable_set(p, zone, written_bytes);
    return done;
}

uint64_t plp_write_out_zone(PlpBuffer *p, uint64_t zone, uint64_t now)
{
    Region *r = &p->reg[REG_BUF];
    uint64_t t = MAX(now, p->barrier), done, sectors;

    if (zone >= p->nr_zones) {
        return now;
    }
    sectors = r->zl[zone].count;
    done = write_zone(p, r, zone, t);
    if (sectors) {
        p->st.flushes[PLP_CAUSE_FUA]++;
        p->st.flushed_sectors[PLP_CAUSE_FUA] += sectors;
    }
    return last_done(r, zone, done);
}

void plp_reset_zone(PlpBuffer *p, uint64_t zone, uint64_t now)
{
    (void)now;      /* dropping buffers takes no time; the erase is zns-flash's */
    if (zone >= p->nr_zones) {
        return;
    }
    for (int i = 0; i < REGIONS; i++) {
        Region *r = &p->reg[i];
        ZoneList *zl = &r->zl[zone];
        uint32_t k = zl->head;

        while (k != NO_SECTOR) {
            uint32_t next = p->sec[k].next;
            free_sector(p, k);
            k = next;
        }
        p->st.reset_discarded_sectors += zl->count;
        r->ndirty -= zl->count;
        if (zl->count) {
            g_queue_remove(&r->dirty_zones, GSIZE_TO_POINTER(zone));
        }
        *zl = (ZoneList){ NO_SECTOR, NO_SECTOR, 0 };
    }
    p->zone_gen[zone]++;
    durable_set(p, zone, 0);
}

/* ---- power loss and recovery ---- */

double plp_energy_uj(const PlpBuffer *p, uint64_t pages, uint64_t ns)
{
    return nand_hold_up_uj(p->nand, p->cfg.ctrl_mw, p->cfg.chip_mw, pages, ns);
}

double plp_capacitance_uf(double energy_uj)
{
    return 2 * energy_uj / (PLP_CAP_V_FULL * PLP_CAP_V_FULL - PLP_CAP_V_MIN * PLP_CAP_V_MIN);
}

/* The energy and capacitance of both methods of a flush whose pages and times are set. */
static void loss_energy(const PlpBuffer *p, PlpLoss *l)
{
    l->normal_uj = plp_energy_uj(p, l->pages, l->normal_ns);
    l->balanced_uj = plp_energy_uj(p, l->pages, l->balanced_ns);
    l->normal_uf = plp_capacitance_uf(l->normal_uj);
    l->balanced_uf = plp_capacitance_uf(l->balanced_uj);
}

/* A page of protected data: its zone location and its sectors (pool indexes or slots). */
typedef struct PlpPage {
    uint64_t zone, pg;
    uint32_t first;             /* index into the sector list */
    uint32_t count;
} PlpPage;

/* Groups slots (sorted by offset) into pages. */
static GArray *pages_of(PlpBuffer *p, const uint32_t *slots, uint32_t n)
{
    GArray *pages = g_array_new(FALSE, FALSE, sizeof(PlpPage));

    for (uint32_t i = 0; i < n; i++) {
        uint64_t off = p->oob[slots[i]].off, zone = zone_of(p, off);
        uint64_t pg = (off - zone * p->zc->zone_bytes) / p->page_bytes;
        PlpPage *last = pages->len ? &g_array_index(pages, PlpPage, pages->len - 1) : NULL;

        if (last && last->zone == zone && last->pg == pg) {
            last->count++;
        } else {
            PlpPage np = { .zone = zone, .pg = pg, .first = i, .count = 1 };
            g_array_append_val(pages, np);
        }
    }
    return pages;
}

/*
 * Normal flush: every page to its own location (recorded in the OOB records when
 * record). Returns when all are done.
 */
static uint64_t flush_normal(PlpBuffer *p, NandModel *nand, GArray *pages,
                             const uint32_t *slots, uint64_t now, bool record)
{
    uint64_t done = now;

    for (guint i = 0; i < pages->len; i++) {
        const PlpPage *pg = &g_array_index(pages, PlpPage, i);
        for (uint32_t k = 0; record && k < pg->count; k++) {
            p->oob[slots[pg->first + k]].chip = AT_HOME;
        }
        done = later(done, zns_flash_program(p->cfg.flash, nand, pg->zone, pg->pg, pg->pg + 1,
                                             0, now));
    }
    return done;
}

static void chip_addr(const NandModel *nand, uint32_t chip, uint32_t rpage, NandAddr *a)
{
    const NandGeometry *g = &nand->geo;

    *a = (NandAddr){
        .ch = chip / g->luns_per_ch, .lun = chip % g->luns_per_ch,
        .pl = 0, .blk = g->blks_per_pl - 1,     /* only the page type matters for time */
        .pg = rpage % g->pgs_per_blk,
    };
}

/*
 * Balanced flush: each page to the chip that would program it first, at the next page
 * of that chip's reserved blocks; record the placement in the OOB records when record.
 */
static uint64_t flush_balanced(PlpBuffer *p, NandModel *nand, GArray *pages,
                               const uint32_t *slots, uint64_t now, bool record)
{
    uint64_t luns = nand_luns(&nand->geo), done = now;
    g_autofree uint32_t *next = g_new0(uint32_t, luns);

    for (guint i = 0; i < pages->len; i++) {
        const PlpPage *pg = &g_array_index(pages, PlpPage, i);
        uint32_t chip = 0;
        NandAddr a;

        uint64_t best = UINT64_MAX;
        for (uint32_t c = 0; c < luns; c++) {
            /* the chip whose next page would be programmed first, its channel included */
            uint64_t t;
            chip_addr(nand, c, next[c], &a);
            t = nand->tm.sched == NAND_SCHED_FIFO ? nand_chip_busy_until(nand, c)
                                                  : nand_probe(nand, NAND_OP_PROGRAM, &a, now);
            if (t < best) {
                best = t;
                chip = c;
            }
        }
        chip_addr(nand, chip, next[chip], &a);
        done = later(done, nand_op(nand, NAND_OP_PROGRAM, &a, now));
        if (record) {
            for (uint32_t k = 0; k < pg->count; k++) {
                Oob *o = &p->oob[slots[pg->first + k]];
                o->chip = chip;
                o->rpage = next[chip];      /* not in the checksum: placement, not data */
            }
        }
        next[chip]++;
    }
    return done;
}

static gint slot_cmp(gconstpointer a, gconstpointer b, gpointer opaque)
{
    const Oob *x = &((PlpBuffer *)opaque)->oob[*(const uint32_t *)a];
    const Oob *y = &((PlpBuffer *)opaque)->oob[*(const uint32_t *)b];

    if (x->off != y->off) {
        return x->off < y->off ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Valid slots, sorted by offset, then age (the newest copy of an offset is copied last). */
static uint32_t *valid_slots(PlpBuffer *p, uint32_t *n)
{
    GArray *a = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t *v;

    for (uint32_t i = 0; i < p->reg[REG_PLP].n; i++) {
        if (oob_valid(p, i)) {
            g_array_append_val(a, i);
        }
    }
    v = (uint32_t *)a->data;
    *n = a->len;
    g_array_free(a, FALSE);
    g_qsort_with_data(v, *n, sizeof(uint32_t), slot_cmp, p);
    return v;
}

void plp_power_loss(PlpBuffer *p, uint64_t now, PlpLoss *out)
{
    Region *buf = &p->reg[REG_BUF];
    NandModel *other = nand_model_copy(p->nand);
    bool balanced = p->cfg.method == PLP_FLUSH_BALANCED;
    uint32_t n;
    g_autofree uint32_t *slots = valid_slots(p, &n);
    GArray *pages = pages_of(p, slots, n);
    uint64_t t_norm, t_bal;

    *out = (PlpLoss){ .pages = pages->len, .lost_sectors = buf->ndirty };
    t_norm = flush_normal(p, balanced ? other : p->nand, pages, slots, now, !balanced);
    t_bal = flush_balanced(p, balanced ? p->nand : other, pages, slots, now, balanced);
    nand_model_free(other);
    out->normal_ns = t_norm - now;
    out->balanced_ns = t_bal - now;
    loss_energy(p, out);
    g_array_free(pages, TRUE);

    /* DRAM goes dark: every buffer is free; the store keeps the protected sectors */
    g_hash_table_remove_all(p->hits);
    for (int i = 0; i < REGIONS; i++) {
        Region *r = &p->reg[i];
        r->free_head = NO_SECTOR;
        r->nfree = r->ndirty = r->ninflight = r->nclean = 0;
        for (uint32_t k = r->n; k-- > 0;) {
            p->sec[r->base + k] = (Sector){ .next = r->free_head, .state = S_FREE };
            r->free_head = r->base + k;
            r->nfree++;
        }
        for (uint64_t z = 0; z < p->nr_zones; z++) {
            r->zl[z] = (ZoneList){ NO_SECTOR, NO_SECTOR, 0 };
        }
        g_queue_clear(&r->dirty_zones);
        g_array_set_size(r->batches, 0);
        r->next_done = UINT64_MAX;
    }
    p->barrier = 0;
    p->st.power_losses++;
    p->st.lost_sectors += out->lost_sectors;
    p->st.last_loss = *out;
}

/*
 * After recovery, the reserved blocks a balanced flush used are erased for the next power
 * loss: each chip's, once its last page there was read (last_read[chip]).
 */
static uint64_t erase_reserved(PlpBuffer *p, const uint32_t *used_pages,
                               const uint64_t *last_read, uint64_t done)
{
    const NandGeometry *g = &p->nand->geo;

    for (uint32_t chip = 0; chip < nand_luns(g); chip++) {
        uint64_t blocks = (used_pages[chip] + g->pgs_per_blk - 1) / g->pgs_per_blk;
        for (uint64_t b = 0; b < blocks; b++) {
            NandAddr a;
            chip_addr(p->nand, chip, 0, &a);
            done = later(done, nand_op(p->nand, NAND_OP_ERASE, &a, last_read[chip]));
        }
    }
    return done;
}

void plp_recover(PlpBuffer *p, uint64_t now, PlpRecovery *out)
{
    uint32_t n;
    g_autofree uint32_t *slots = valid_slots(p, &n);
    GArray *pages = pages_of(p, slots, n);
    uint64_t luns = nand_luns(&p->nand->geo), done = now;
    g_autofree uint32_t *used_pages = g_new0(uint32_t, luns);
    g_autofree uint64_t *last_read = g_new0(uint64_t, luns);

    for (guint i = 0; i < pages->len; i++) {
        const PlpPage *pg = &g_array_index(pages, PlpPage, i);
        const Oob *o = &p->oob[slots[pg->first]];
        uint64_t t = now;

        /* a page at home costs nothing; one in a reserved block is read and moved home */
        if (o->chip < luns) {
            NandAddr a;
            chip_addr(p->nand, o->chip, o->rpage, &a);
            t = nand_op(p->nand, NAND_OP_READ, &a, now);
            used_pages[o->chip] = MAX(used_pages[o->chip], o->rpage + 1);
            last_read[o->chip] = MAX(last_read[o->chip], t);
        }
        if (o->chip != AT_HOME) {
            done = later(done, zns_flash_program(p->cfg.flash, NULL, pg->zone, pg->pg,
                                                 pg->pg + 1, 0, t));
        }
        for (uint32_t k = 0; k < pg->count; k++) {
            uint32_t slot = slots[pg->first + k];
            uint64_t off = p->oob[slot].off, zone = zone_of(p, off);
            memcpy(p->cfg.data + off, slot_data(p, slot), p->cfg.sector_bytes);
            durable_set(p, zone, MAX(p->durable[zone],
                                     off - zone * p->zc->zone_bytes + p->cfg.sector_bytes));
        }
    }
    done = erase_reserved(p, used_pages, last_read, done);
    for (uint32_t i = 0; i < n; i++) {
        oob_clear(p, slots[i]);
    }
    *out = (PlpRecovery){ .sectors = n, .pages = pages->len, .ns = done - now };
    p->st.spor_sectors = n;
    p->st.spor_pages = pages->len;
    p->st.spor_ns = done - now;
    g_array_free(pages, TRUE);
}

void plp_worst_case(const PlpBuffer *p, PlpLoss *out)
{
    PlpBuffer *q = (PlpBuffer *)p;      /* nothing of p changes: no OOB is recorded */
    uint64_t n = (p->cfg.plp_bytes + p->page_bytes - 1) / p->page_bytes;
    uint64_t cap = p->zc->zone_cap_bytes / p->page_bytes;
    GArray *pages = g_array_sized_new(FALSE, FALSE, sizeof(PlpPage), n);
    NandModel *a = nand_model_copy(p->nand), *b = nand_model_copy(p->nand);

    nand_model_clear(a);
    nand_model_clear(b);
    /* a full region of data written in order from zone 0, as a log would */
    for (uint64_t i = 0; i < n; i++) {
        PlpPage pg = { .zone = i / cap % p->nr_zones, .pg = i % cap, .count = 1 };
        g_array_append_val(pages, pg);
    }
    *out = (PlpLoss){ .pages = n };
    out->normal_ns = flush_normal(q, a, pages, NULL, 0, false);
    out->balanced_ns = flush_balanced(q, b, pages, NULL, 0, false);
    loss_energy(p, out);
    nand_model_free(a);
    nand_model_free(b);
    g_array_free(pages, TRUE);
}

uint64_t plp_durable_end(const PlpBuffer *p, uint64_t zone)
{
    return zone < p->nr_zones ? p->durable[zone] : 0;
}

const PlpStats *plp_stats(const PlpBuffer *p)
{
    PlpStats *st = (PlpStats *)&p->st;
    uint64_t sec = p->cfg.sector_bytes;

    st->plp_used_bytes = (p->reg[REG_PLP].ndirty + p->reg[REG_PLP].ninflight) * sec;
    st->buf_used_bytes = (p->reg[REG_BUF].ndirty + p->reg[REG_BUF].ninflight) * sec;
    return st;
}

bool plp_take_fresh(PlpBuffer *p)
{
    bool fresh = p->fresh;

    p->fresh = false;
    return fresh;
}

void plp_set_durable_end(PlpBuffer *p, uint64_t zone, uint64_t bytes)
{
    if (zone < p->nr_zones) {
        durable_set(p, zone, bytes);
    }
}

/* A power-loss flush as PREFIX_pages, PREFIX_{normal,balanced}_{flush_ns,...}. */
static void emit_loss(const char *prefix, const PlpLoss *l, FemuMediaStatFn *emit,
                      void *opaque)
{
    const struct {
        const char *name;
        double value;
    } v[] = {
        { "pages", l->pages },
        { "normal_flush_ns", l->normal_ns }, { "balanced_flush_ns", l->balanced_ns },
        { "normal_energy_uj", l->normal_uj }, { "balanced_energy_uj", l->balanced_uj },
        { "normal_capacitance_uf", l->normal_uf },
        { "balanced_capacitance_uf", l->balanced_uf },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(v); i++) {
        g_autofree char *name = g_strdup_printf("%s_%s", prefix, v[i].name);
        emit(opaque, name, (uint64_t)v[i].value);
    }
}

void plp_emit_stats(const PlpBuffer *p, FemuMediaStatFn *emit, void *opaque)
{
    static const char *const cause[PLP_CAUSES] = { "host", "threshold", "space", "drain",
                                                   "fua" };
    const PlpStats *s = plp_stats(p);

    emit(opaque, "plp_region_bytes", p->cfg.plp_bytes);
    emit(opaque, "plp_region_used_bytes", s->plp_used_bytes);
    emit(opaque, "buf_region_bytes", p->cfg.buf_bytes);
    emit(opaque, "buf_region_used_bytes", s->buf_used_bytes);
    emit(opaque, "plp_protected_bytes_written", s->plp_write_bytes);
    emit(opaque, "plp_unprotected_bytes_written", s->buf_write_bytes);
    emit(opaque, "plp_read_hit_sectors", s->read_hit_sectors);
    emit(opaque, "plp_read_miss_sectors", s->read_miss_sectors);
    for (int c = 0; c < PLP_CAUSES; c++) {
        g_autofree char *n = g_strdup_printf("plp_flushes_%s", cause[c]);
        g_autofree char *ns = g_strdup_printf("plp_flushed_sectors_%s", cause[c]);
        emit(opaque, n, s->flushes[c]);
        emit(opaque, ns, s->flushed_sectors[c]);
    }
    emit(opaque, "plp_pad_sectors", s->pad_sectors);
    emit(opaque, "plp_buffer_waits", s->buffer_waits);
    emit(opaque, "plp_reset_discarded_sectors", s->reset_discarded_sectors);
    emit(opaque, "plp_power_losses", s->power_losses);
    emit(opaque, "plp_lost_sectors", s->lost_sectors);
    emit_loss("plp_loss", &s->last_loss, emit, opaque);
    emit_loss("plp_worst", &p->worst, emit, opaque);
    emit(opaque, "plp_spor_sectors", s->spor_sectors);
    emit(opaque, "plp_spor_pages", s->spor_pages);
    emit(opaque, "plp_spor_ns", s->spor_ns);
}
