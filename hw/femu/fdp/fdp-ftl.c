/*
 * The FDP FTL; see fdp-ftl.h for the behaviour. What the header leaves open is decided here:
 *
 * Layout. RU u = rg * R + b, R = the FTL's blocks per plane. Its page i lies on chip
 * rg * k + i % k (chip c = lun * nchs + ch, k chips per group), plane (i / k) % planes,
 * page i / (k * planes) of block first_block + b: a handle's consecutive pages use all the
 * group's chips, then planes, like the blackbox FTL's lines. ppn = u * pages per RU + i.
 *
 * Open RUs. Each (rg, handle) fills at most one host RU, taken from the group's free list
 * (FIFO, so erases rotate) at its first page. GC moves a PI handle's data to that handle's
 * GC RU of the group and every II handle's data to the group's one II GC RU. So an RU is a
 * host RU of h (only h's data), a PI GC RU of h (only h's data) or the II GC RU (II data
 * only): isolation holds by construction, and fdp_ftl_check_consistency checks it per page.
 * The time limit applies to host RUs (what handles reference); GC RUs are the controller's.
 * Events are posted from inside the operation that causes them: the callback must not call
 * back into the FTL.
 *
 * Free RUs. A victim has fewer valid pages than an RU holds, so they fit in what is left of
 * their GC RU plus at most one new RU, and the victim then comes back free: GC needs one free
 * RU to finish a victim, never more, and a host write never takes a group's last free RU
 * (FDP_GC_RESERVE). Forced GC runs before a host page while the group's free RUs are at or
 * below the forced threshold and a closed RU has anything to reclaim; the threshold is the
 * larger of FEMU's gc_thres_pcent_high share and the RUs the not yet open host and GC RUs
 * may take plus the reserve. A group has at least one RU of spare beyond its data, its open
 * RUs and the forced threshold (fdp_ftl_config_check, as the blackbox FTL's lines): when
 * forced GC starts, the closed RUs hold at least an RU of garbage. With none, a full group
 * would move a whole RU to free the few pages written since its open RUs turned over.
 * Background GC (fdp_ftl_idle) uses gc_thres_pcent the same way, collects one victim per
 * group per call, only when the group's chips are idle by then, and only victims with at
 * least an eighth of an RU to reclaim (as the blackbox FTL).
 *
 * An over-full group. The host picks the group (a host that uses no directive puts all in
 * group 0), so one group may get more valid data than it holds well. A group is over-full
 * when it holds more than its share of the exposed pages plus half of what it can hold
 * beyond that share in its closed RUs (full_valid, every slot open and forced GC due); a
 * page for an over-full group that would need forced GC goes to the same handle's RU in the
 * next group that is not over-full (pages_redirected), so a group's GC never works with
 * less than half its spare room. A page also goes to another group when its own can take
 * nothing (no free RU beyond the reserve, nothing to reclaim). fdp_ftl_config_check makes
 * sure some group always can: a group that cannot holds at least R - 1 - (open RUs) RUs of
 * valid data, so it asks for nrg * (R - 1 - nruh - GC RUs) RUs to hold more than the
 * exposed pages. A host that spreads its data evenly stays well below full_valid, so its
 * placement is kept.
 *
 * Store (fdp_ftl_attach_store), little-endian:
 *   header (512 B)        magic, version, the configuration fields that set the layout or
 *                         the meaning of what follows (geometry, exposed pages, nrg, nruh,
 *                         handle types, first_block), CRC32.
 *   global statistics     two slots {seq, host pages read, unmapped reads, pages trimmed,
 *                         host bytes read, CRC}: written into the slot the newest does not
 *                         use; the newest valid one wins (ftl-common's two-slot records).
 *   per-group statistics  two slots each {seq, GC runs, forced runs, RUs erased, pages
 *                         skipped, pages redirected, host bytes written, per handle: host
 *                         pages, pages moved, CRC}. Totals are sums of these, so the
 *                         identities hold after a load. (Version 1 had no host bytes.)
 *   RU records (40 B)     {state, kind, handle, erases, wp, opened_ns, order, CRC}; all zero
 *                         is a free RU never erased. order: when it was closed or freed (the
 *                         victim among equals, the free-list order).
 *   mapping               one 64-bit entry per lpn: ppn + 1 (bits 0-39, 0: unmapped), the
 *                         data's handle (40-47), a 16-bit check of lpn, ppn and handle.
 * Valid counts and the reverse map are not stored: a load rebuilds them from the mapping.
 *
 * Crash ordering. A page's RU record (its write pointer) is written before the mapping entry
 * that points at it; a victim's record says "free" only after every entry left it; statistics
 * are written at the end of each call (a kill inside one loses that call's counts, nothing
 * else), reads' own counters every FTL_READ_SAVES reads (a kill loses at most that many
 * reads' counts). A load drops entries failing their check (and, of two naming one page,
 * the later lpn's), and repairs an RU whose record fails its CRC (closed, wp = the whole
 * RU) or which entries point into while free or at or past its wp (closed, wp raised to
 * cover them).
 * Open RUs stay open across a load: the device closes them (fdp_ftl_close_open) and reports.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fdp-ftl.h"
#include "../ftl/ftl-common.h"
#include "../ftl/free-list.h"
#include "../media/record.h"

#include <glib.h>
#include <string.h>

#define FDP_NONE UINT32_MAX
#define FDP_NO_RUH 0xff                 /* an RU no single handle owns */
#define FDP_GC_RESERVE 1u               /* free RUs a host write leaves to GC */
#define FDP_PPN_BITS 40
#define FDP_PPN_MASK ((1ULL << FDP_PPN_BITS) - 1)

#define FDP_STORE_MAGIC 0x46504446u     /* "FDPF" */
#define FDP_STORE_VERSION 2u
#define FDP_HDR_BYTES 512u
#define FDP_HDR_CRC_AT 508u
#define FDP_GLOBAL_COUNTERS 4u
#define FDP_GLOBAL_REC (16u + 8u * FDP_GLOBAL_COUNTERS)
#define FDP_RU_REC 40u
#define FDP_RG_COUNTERS 6u              /* a group record's counters before the handles' */

/* CRC salts: a record copied to another place fails its check */
#define SALT_HEADER (1ULL << 60)
#define SALT_GLOBAL (2ULL << 60)
#define SALT_RG (3ULL << 60)
#define SALT_RU (4ULL << 60)

typedef enum FdpRuState {
    RU_FREE,        /* 0: an all-zero record is a free RU */
    RU_OPEN,
    RU_CLOSED,      /* in the group's victim heap */
    RU_VICTIM,      /* being collected (in memory only: saved as closed) */
} FdpRuState;

typedef enum FdpRuKind {
    RU_HOST,        /* a handle's host writes */
    RU_GC_PI,       /* GC's copies of one PI handle's data */
    RU_GC_II,       /* GC's copies of II handles' data */
} FdpRuKind;

typedef struct FdpRu {
    uint64_t wp;            /* pages written */
    uint64_t vpc;           /* valid pages */
    uint64_t opened_ns;
    uint64_t order;         /* when closed or freed: victim ties, free-list order */
    uint32_t erases;
    uint8_t state, kind, ruh;
} FdpRu;

/* One handle's data in one group. */
typedef struct FdpRuhCount {
    uint64_t host, moved, valid, rus;
} FdpRuhCount;

typedef struct FdpGroup {
    FtlFreeList free;           /* free RUs, FIFO (links in FdpFtl.free_next) */
    FtlVictims victims;         /* closed RUs: GC's candidates */
    uint32_t open_host, open_gc;
    uint32_t gc_ii;             /* the II GC RU, FDP_NONE when none is open */
    uint64_t valid;             /* valid pages in the group */
    uint64_t gc_runs, gc_forced_runs, rus_erased, pages_skipped, pages_redirected;
    uint64_t host_bytes_written;    /* of the writes that asked for this group */
    uint64_t seq;               /* of its newest statistics record */
    bool dirty;                 /* statistics not saved yet */
    /* GC's victim in progress (FDP_NONE: none; RU_VICTIM, saved as closed) */
    uint32_t victim;
    uint64_t victim_next;       /* its next page to look at */
    uint64_t victim_valid0;     /* its valid pages when taken: pacing's rate */
    uint64_t victim_moved, first_lpn;   /* pages moved so far, the first (its event) */
    uint32_t first_ruh;
    uint64_t *chip_read_ns;     /* per chip of the group: the victim's last read there */
    double credit;              /* pages paced GC owes the host's writes so far */
} FdpGroup;

typedef struct FdpLayout {
    uint64_t rg_rec, off_global, off_rg, off_ru, off_map, bytes;
} FdpLayout;

struct FdpFtl {
    FdpFtlConfig cfg;
    NandModel *nand;
    uint32_t k;                 /* chips per group */
    uint32_t nrus;              /* RUs per group */
    uint32_t ngc;               /* GC RUs a group may open */
    uint32_t forced_pcent, bg_pcent;    /* the thresholds' percentage parts, in RUs */
    uint64_t ru_pages, total_pages;
    uint64_t full_valid;        /* a group holding more valid pages is over-full */
    uint64_t share_valid;       /* the exposed pages' share of one group */
    FdpLayout lay;

    uint8_t *map;               /* exposed_pages entries, in the store or our own */
    bool own_map;
    uint64_t *p2l;              /* ppn -> lpn + 1; 0: free or garbage */
    FdpRu *ru;
    FdpGroup *grp;
    uint32_t *victim_pos;       /* per RU: its place among its group's victims while closed */
    uint32_t *free_next;        /* per RU: the groups' free-list links */
    uint32_t *host_ru;          /* [rg * nruh + ruh]: open host RU or FDP_NONE */
    uint32_t *pi_gc_ru;         /* [rg * nruh + ruh]: a PI handle's GC RU or FDP_NONE */
    FdpRuhCount *cnt;           /* [rg * nruh + ruh] */
    uint64_t order;             /* the latest RU closed or freed */
    uint64_t next_deadline;     /* no open host RU expires before this */
    uint64_t last_prog_ns;
    uint64_t pump_ns;           /* latest arrival: bookings go no earlier (nand_retire) */
    uint64_t *chip_read_ns;     /* per group, per chip: FdpGroup.chip_read_ns */
    FtlProgs progs;             /* on nand, counted in last_prog_ns and st */
    uint64_t *rec_scratch;      /* a group's statistics record's values */

    uint8_t *store;
    FtlStoreHook store_hook;    /* tests: after every write to the store */
    uint64_t global_seq;
    bool global_dirty;
    uint32_t reads_unsaved;     /* read calls since the global record was saved */
    FdpFtlStats st;
    FdpFtlEventFn *ev;
    void *ev_opaque;
};

/* ---- small helpers ---- */

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

static bool is_pi(const FdpFtlConfig *c, uint32_t ruh)
{
    return c->ruh_type[ruh] == FDP_RUH_PERSISTENTLY_ISOLATED;
}

/* GC RUs a group may have open: one per PI handle, one for all II handles. */
static uint32_t gc_rus(const FdpFtlConfig *c)
{
    uint32_t pi = 0;

    for (uint32_t h = 0; h < c->nruh; h++) {
        pi += is_pi(c, h);
    }
    return pi + (pi < c->nruh);
}

static uint64_t ru_pages_of(const FdpFtlConfig *c)
{
    return nand_luns(&c->geo) / c->nrg * c->geo.pls_per_lun * c->geo.pgs_per_blk;
}

/* ---- configuration ---- */

/* RUs a group's share of the exposed pages fills. */
static uint64_t data_rus(const FdpFtlConfig *c)
{
    return div_up(c->exposed_pages, (uint64_t)c->nrg * ru_pages_of(c));
}

/*
 * RUs per group that guarantee some group can always take a page, and GC an RU of garbage
 * when forced (see the top): data, one of garbage, the open ones, the reserve.
 */
static uint64_t min_rus(const FdpFtlConfig *c)
{
    return data_rus(c) + 1 + c->nruh + gc_rus(c) + FDP_GC_RESERVE;
}

bool fdp_ftl_config_check(const FdpFtlConfig *c, char **err)
{
    const NandGeometry *g = &c->geo;
    uint64_t chips, need, data, room;
    uint32_t nrus = g->blks_per_pl, h;

    if (!ftl_check_common(g, &c->tm, c->exposed_pages, c->gc_thres_pcent,
                          c->gc_thres_pcent_high, err)) {
        return false;
    }
    chips = nand_luns(g);
    if (c->nrg < 1 || c->nrg > FDP_MAX_RG || chips % c->nrg) {
        *err = g_strdup_printf("fdp_nrg=%u: the reclaim groups must split the %" G_GUINT64_FORMAT
                               " chips (nchs * luns_per_ch) evenly: allowed 1..%u dividing %"
                               G_GUINT64_FORMAT, c->nrg, chips, FDP_MAX_RG, chips);
        return false;
    }
    if (c->nruh < 1 || c->nruh > FDP_MAX_RUH) {
        *err = g_strdup_printf("fdp_ruh_types: %u reclaim unit handles, allowed 1..%u",
                               c->nruh, FDP_MAX_RUH);
        return false;
    }
    for (uint32_t t = 0; t < c->nruh; t++) {
        if (c->ruh_type[t] != FDP_RUH_INITIALLY_ISOLATED &&
            c->ruh_type[t] != FDP_RUH_PERSISTENTLY_ISOLATED) {
            *err = g_strdup_printf("fdp_ruh_types: handle %u has type %u, allowed 1 "
                                   "(ii, Initially Isolated) or 2 (pi, Persistently "
                                   "Isolated)", t, c->ruh_type[t]);
            return false;
        }
    }
    if (nand_total_pages(g) >= FDP_PPN_MASK) {
        *err = g_strdup_printf("the flash has %" G_GUINT64_FORMAT " pages, the FDP FTL maps "
                               "fewer than 2^%d: lower blks_per_pl or the chips",
                               nand_total_pages(g), FDP_PPN_BITS);
        return false;
    }
    need = min_rus(c);
    if (nrus < need) {
        /* derived blocks (op_pcent) always have them: only a blks_per_pl given falls short */
        *err = g_strdup_printf("blks_per_pl=%u gives %u reclaim units per group; with "
                               "fdp_nrg=%u and %u handles FDP needs at least %"
                               G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " for data and "
                               "garbage, %u open host "
                               "RUs, %u GC RUs, %u reserve): allowed blks_per_pl >= %"
                               G_GUINT64_FORMAT ", or fewer handles or groups", nrus, nrus,
                               c->nrg, c->nruh, need,
                               need - c->nruh - gc_rus(c) - FDP_GC_RESERVE, c->nruh,
                               gc_rus(c), FDP_GC_RESERVE, need);
        return false;
    }
    /* forced GC at or above the spare RUs would run on every write (as the blackbox's) */
    data = data_rus(c);
    room = nrus - MIN(nrus, data + c->nruh + gc_rus(c));
    h = ftl_pcent_high_min(nrus, c->gc_thres_pcent_high, 0, room);
    if (h != c->gc_thres_pcent_high) {
        if (h > 99) {
            *err = g_strdup_printf("gc_thres_pcent_high=%u: forced GC would keep at least as "
                                   "many free RUs as the %" G_GUINT64_FORMAT " spare ones per "
                                   "group at any value; raise op_pcent", c->gc_thres_pcent_high,
                                   room);
        } else {
            *err = g_strdup_printf("gc_thres_pcent_high=%u keeps %u free RUs per group for "
                                   "forced GC but only %" G_GUINT64_FORMAT " are spare: allowed "
                                   "gc_thres_pcent_high %u..99 (or raise op_pcent)",
                                   c->gc_thres_pcent_high,
                                   ftl_gc_thres(nrus, c->gc_thres_pcent_high), room, h);
        }
        return false;
    }
    return true;
}

/* ---- addresses ---- */

static void ppn_to_addr(const FdpFtl *f, uint64_t ppn, NandAddr *a)
{
    const NandGeometry *g = &f->cfg.geo;
    uint64_t u = ppn / f->ru_pages, i = ppn % f->ru_pages;
    uint64_t chip = (u / f->nrus) * f->k + i % f->k;

    a->ch = chip % g->nchs;
    a->lun = chip / g->nchs;
    a->pl = (i / f->k) % g->pls_per_lun;
    a->pg = i / ((uint64_t)f->k * g->pls_per_lun);
    a->blk = f->cfg.first_block + u % f->nrus;
}

/* Chip j of group rg, block of RU u. */
static void chip_addr(const FdpFtl *f, uint32_t rg, uint32_t j, uint32_t u, NandAddr *a)
{
    uint64_t chip = (uint64_t)rg * f->k + j;

    *a = (NandAddr){ .ch = chip % f->cfg.geo.nchs, .lun = chip / f->cfg.geo.nchs,
                     .blk = f->cfg.first_block + u % f->nrus };
}

static uint32_t ru_group(const FdpFtl *f, uint32_t u)
{
    return u / f->nrus;
}

static FdpRuhCount *count_of(FdpFtl *f, uint32_t rg, uint32_t ruh)
{
    return &f->cnt[(uint64_t)rg * f->cfg.nruh + ruh];
}

/* ---- the mapping: entries as stored ---- */

static uint64_t map_entry(uint64_t lpn, uint64_t ppn, uint32_t ruh)
{
    uint64_t low = (ppn + 1) | (uint64_t)ruh << FDP_PPN_BITS;

    return low | (uint64_t)ftl_map_check(lpn, low) << 48;
}

static uint64_t map_raw(const FdpFtl *f, uint64_t lpn)
{
    uint64_t v;

    memcpy(&v, f->map + lpn * 8, 8);
    return GUINT64_FROM_LE(v);
}

static void map_put(FdpFtl *f, uint64_t lpn, uint64_t e)
{
    e = GUINT64_TO_LE(e);
    memcpy(f->map + lpn * 8, &e, 8);
    if (f->store) {
        ftl_stored(&f->store_hook);
    }
}

static bool entry_ok(const FdpFtl *f, uint64_t lpn, uint64_t e)
{
    uint64_t low = e & ((1ULL << 48) - 1);

    return (e & FDP_PPN_MASK) && (e & FDP_PPN_MASK) <= f->total_pages &&
           ((e >> FDP_PPN_BITS) & 0xff) < f->cfg.nruh && ftl_map_check(lpn, low) == e >> 48;
}

/* An entry's page and handle (entries in memory are always valid ones). */
static uint64_t entry_ppn(uint64_t e)
{
    return (e & FDP_PPN_MASK) - 1;
}

static uint32_t entry_ruh(uint64_t e)
{
    return (e >> FDP_PPN_BITS) & 0xff;
}

/* ---- the store's records ---- */

/* Values in a group's statistics record: its counters, then two per handle. */
static uint32_t rg_values(uint32_t nruh)
{
    return FDP_RG_COUNTERS + 2 * nruh;
}

static FdpLayout layout_of(const FdpFtlConfig *c)
{
    FdpLayout l;

    l.rg_rec = 16 + 8ULL * rg_values(c->nruh);
    l.off_global = FDP_HDR_BYTES;
    l.off_rg = l.off_global + 2 * FDP_GLOBAL_REC;
    l.off_ru = l.off_rg + 2ULL * c->nrg * l.rg_rec;
    l.off_map = l.off_ru + (uint64_t)c->nrg * c->geo.blks_per_pl * FDP_RU_REC;
    l.bytes = l.off_map + c->exposed_pages * 8;
    return l;
}

uint64_t fdp_ftl_store_bytes(const FdpFtlConfig *c)
{
    return layout_of(c).bytes;
}

uint64_t fdp_ftl_store_ru_offset(const FdpFtlConfig *c, uint32_t rg, uint32_t ru)
{
    return layout_of(c).off_ru + ((uint64_t)rg * c->geo.blks_per_pl + ru) * FDP_RU_REC;
}

uint64_t fdp_ftl_store_map_offset(const FdpFtlConfig *c, uint64_t lpn)
{
    return layout_of(c).off_map + lpn * 8;
}

static void ru_save(FdpFtl *f, uint32_t u)
{
    uint8_t *p;
    const FdpRu *r = &f->ru[u];

    if (!f->store) {
        return;
    }
    p = f->store + f->lay.off_ru + (uint64_t)u * FDP_RU_REC;
    p[0] = r->state == RU_VICTIM ? RU_CLOSED : r->state;
    p[1] = r->kind;
    p[2] = r->ruh;
    p[3] = 0;
    record_put_le(p + 4, r->erases, 4);
    record_put_le(p + 8, r->wp, 8);
    record_put_le(p + 16, r->opened_ns, 8);
    record_put_le(p + 24, r->order, 8);
    record_put_le(p + 32, 0, 4);
    record_put_le(p + 36, ftl_crc32_salted(SALT_RU | u, p, 36), 4);
    ftl_stored(&f->store_hook);
}

static void stats_save(FdpFtl *f)
{
    if (!f->store) {
        f->global_dirty = false;
        for (uint32_t g = 0; g < f->cfg.nrg; g++) {
            f->grp[g].dirty = false;
        }
        return;
    }
    if (f->global_dirty) {
        uint64_t v[FDP_GLOBAL_COUNTERS] = { f->st.host_pages_read, f->st.unmapped_pages_read,
                                            f->st.pages_trimmed, f->st.host_bytes_read };
        ftl_slot_save(f->store + f->lay.off_global, FDP_GLOBAL_REC, &f->global_seq,
                      SALT_GLOBAL, v, FDP_GLOBAL_COUNTERS);
        ftl_stored(&f->store_hook);
        f->global_dirty = false;
        f->reads_unsaved = 0;
    }
    for (uint32_t g = 0; g < f->cfg.nrg; g++) {
        FdpGroup *gr = &f->grp[g];
        uint64_t *v = f->rec_scratch;
        if (!gr->dirty) {
            continue;
        }
        v[0] = gr->gc_runs;
        v[1] = gr->gc_forced_runs;
        v[2] = gr->rus_erased;
        v[3] = gr->pages_skipped;
        v[4] = gr->pages_redirected;
        v[5] = gr->host_bytes_written;
        for (uint32_t h = 0; h < f->cfg.nruh; h++) {
            v[FDP_RG_COUNTERS + 2 * h] = count_of(f, g, h)->host;
            v[FDP_RG_COUNTERS + 2 * h + 1] = count_of(f, g, h)->moved;
        }
        ftl_slot_save(f->store + f->lay.off_rg + 2ULL * g * f->lay.rg_rec, f->lay.rg_rec,
                      &gr->seq, SALT_RG | g, v, rg_values(f->cfg.nruh));
        ftl_stored(&f->store_hook);
        gr->dirty = false;
    }
}

/* ---- GC's candidates: a group's closed RUs ---- */

/* Fewest valid pages first; ties go to the RU closed first, then the lower number. */
static bool ru_less(const void *ctx, uint32_t u, uint32_t v)
{
    const FdpFtl *f = ctx;
    const FdpRu *a = &f->ru[u], *b = &f->ru[v];

    if (a->vpc != b->vpc) {
        return a->vpc < b->vpc;
    }
    if (a->order != b->order) {
        return a->order < b->order;
    }
    return u < v;
}

static void ru_view(const void *ctx, uint32_t u, FtlUnit *out)
{
    const FdpRu *r = &((const FdpFtl *)ctx)->ru[u];

    *out = (FtlUnit){ .id = u, .valid = r->vpc, .closed = r->order, .erases = r->erases };
}

/* ---- RU life: free -> open -> closed -> (victim) -> free ---- */

static void free_push(FdpFtl *f, uint32_t u)
{
    f->ru[u].state = RU_FREE;
    ftl_free_push(&f->grp[ru_group(f, u)].free, u);
    f->st.free_rus++;
}

/* Callers check that the group has a free RU. */
static uint32_t free_pop(FdpFtl *f, FdpGroup *gr)
{
    f->st.free_rus--;
    return ftl_free_pop(&gr->free);
}

/* The handle that owns an RU for rus_in_use: a host RU's or a PI GC RU's. */
static uint32_t ru_owner(const FdpRu *r)
{
    return r->kind == RU_GC_II ? FDP_NO_RUH : r->ruh;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The slot (open RU index) that data of handle ruh goes to in rg: host or GC. */
static uint32_t *dest_slot(FdpFtl *f, uint32_t rg, uint32_t ruh, bool gc)
{
    uint64_t i = (uint64_t)rg * f->cfg.nruh + ruh;

    if (!gc) {
        return &f->host_ru[i];
    }
    return is_pi(&f->cfg, ruh) ? &f->pi_gc_ru[i] : &f->grp[rg].gc_ii;
}

static void ru_open(FdpFtl *f, uint32_t rg, uint32_t *slot, uint32_t ruh, bool gc,
                    uint64_t now_ns)
{
    FdpGroup *gr = &f->grp[rg];
    uint32_t u = free_pop(f, gr);
    FdpRu *r = &f->ru[u];

    r->state = RU_OPEN;
    r->kind = !gc ? RU_HOST : is_pi(&f->cfg, ruh) ? RU_GC_PI : RU_GC_II;
    r->ruh = r->kind == RU_GC_II ? FDP_NO_RUH : ruh;
    r->wp = 0;
    r->opened_ns = now_ns;
    if (ru_owner(r) != FDP_NO_RUH) {
        count_of(f, rg, r->ruh)->rus++;
    }
    if (gc) {
        gr->open_gc++;
    } else {
        gr->open_host++;
        if (f->cfg.ru_time_limit_ns) {
            f->next_deadline = MIN(f->next_deadline, add_sat(now_ns, f->cfg.ru_time_limit_ns));
        }
    }
    *slot = u;
    /* the record is saved with its first page (place_page) */
}

/* The open RU in *slot becomes a victim candidate; the slot is empty from now on. */
static void ru_close(FdpFtl *f, uint32_t *slot)
{
    uint32_t u = *slot;
    FdpRu *r = &f->ru[u];
    FdpGroup *gr = &f->grp[ru_group(f, u)];

    r->state = RU_CLOSED;
    r->order = ++f->order;
    ftl_victims_add(&gr->victims, u);
    if (r->kind == RU_HOST) {
        gr->open_host--;
    } else {
        gr->open_gc--;
    }
    *slot = FDP_NONE;
    ru_save(f, u);
}

/* Closes a handle's partly written host RU before it is full; its unwritten pages left. */
static uint64_t ru_close_early(FdpFtl *f, uint32_t rg, uint32_t ruh, FdpFtlEventKind why)
{
    uint32_t *slot = dest_slot(f, rg, ruh, false);
    uint64_t left;

    if (*slot == FDP_NONE || !f->ru[*slot].wp) {
        return 0;
    }
    left = f->ru_pages - f->ru[*slot].wp;
    ru_close(f, slot);
    f->st.pages_skipped += left;
    f->grp[rg].pages_skipped += left;
    f->grp[rg].dirty = true;
    if (f->ev) {
        FdpFtlEvent e = { .kind = why, .rg = rg, .ruh = ruh, .npages = left };
        f->ev(f->ev_opaque, &e);
    }
    return left;
}

static void invalidate(FdpFtl *f, uint64_t e)
{
    uint64_t ppn = entry_ppn(e);
    uint32_t u = ppn / f->ru_pages;
    FdpRu *r = &f->ru[u];

    f->p2l[ppn] = 0;
    r->vpc--;
    f->grp[ru_group(f, u)].valid--;
    count_of(f, ru_group(f, u), entry_ruh(e))->valid--;
    if (r->state == RU_CLOSED) {
        ftl_victims_fell(&f->grp[ru_group(f, u)].victims, u);
    }
}

/*
 * Maps lpn (data of handle ruh) to the next page of the RU in *slot, opening one when the
 * slot is empty (the caller made sure a free RU exists). No NAND operation. The RU record
 * goes to the store before the mapping entry (crash ordering, see the top).
 */
static uint64_t place_page(FdpFtl *f, uint32_t rg, uint32_t *slot, uint32_t ruh, bool gc,
                           uint64_t lpn, uint64_t now_ns)
{
    uint64_t ppn, old;
    uint32_t u;

    if (*slot == FDP_NONE) {
        ru_open(f, rg, slot, ruh, gc, now_ns);
    }
    u = *slot;
    ppn = (uint64_t)u * f->ru_pages + f->ru[u].wp++;
    f->ru[u].vpc++;
    if (f->ru[u].wp == f->ru_pages) {
        ru_close(f, slot);
    } else {
        ru_save(f, u);
    }
    old = map_raw(f, lpn);
    if (old) {
        invalidate(f, old);
    }
    map_put(f, lpn, map_entry(lpn, ppn, ruh));
    f->p2l[ppn] = lpn + 1;
    count_of(f, rg, ruh)->valid++;
    f->grp[rg].valid++;
    return ppn;
}

/* ---- garbage collection ---- */

/* The most a victim of the group could free, in pages (0: nothing, or no closed RU). */
static uint64_t victim_gain(const FdpGroup *gr)
{
    return ftl_victims_most_garbage(&gr->victims);
}

/* The forced threshold: the pcent share, or what unopened RUs and GC need if more. */
/* What unopened handles and GC need, with the reserve: pacing's floor. */
static uint32_t need_thres(const FdpFtl *f, const FdpGroup *gr)
{
    return (f->cfg.nruh - gr->open_host) + (f->ngc - gr->open_gc) + FDP_GC_RESERVE;
}

static uint32_t forced_thres(const FdpFtl *f, const FdpGroup *gr)
{
    return MAX(f->forced_pcent, need_thres(f, gr));
}

/* RU u of group rg becomes GC's victim at now_ns. */
static void victim_start(FdpFtl *f, uint32_t rg, uint32_t u, uint64_t now_ns)
{
    FdpGroup *gr = &f->grp[rg];

    f->ru[u].state = RU_VICTIM;
    gr->victim = u;
    gr->victim_next = 0;
    gr->victim_valid0 = f->ru[u].vpc;
    gr->victim_moved = 0;
    for (uint32_t j = 0; j < f->k; j++) {
        gr->chip_read_ns[j] = now_ns;
    }
}

/*
 * The victim's next valid page, from page victim_next on: its index, or its write pointer
 * when none is left.
 */
static uint64_t victim_next_page(const FdpFtl *f, const FdpGroup *gr)
{
    const FdpRu *r = &f->ru[gr->victim];
    uint64_t base = (uint64_t)gr->victim * f->ru_pages, i = gr->victim_next;

    while (i < r->wp && r->vpc && !f->p2l[base + i]) {
        i++;
    }
    return r->vpc ? i : r->wp;
}

/*
 * Moves the victim's next valid page, read at read_ns: 1. 0 when none is left; -1 when no
 * RU can take it (only after a repair mixed data): the victim is closed again.
 */
static int victim_move(FdpFtl *f, uint32_t rg, uint64_t read_ns)
{
    FdpGroup *gr = &f->grp[rg];
    uint32_t u = gr->victim, ruh, *slot;
    FdpRu *r = &f->ru[u];
    uint64_t i = victim_next_page(f, gr), lpn1, rd, ppn;
    NandAddr a;

    gr->victim_next = i;
    if (i >= r->wp) {
        return 0;
    }
    lpn1 = f->p2l[(uint64_t)u * f->ru_pages + i];
    ruh = entry_ruh(map_raw(f, lpn1 - 1));
    slot = dest_slot(f, rg, ruh, true);
    if (*slot == FDP_NONE && !gr->free.n) {
        r->state = RU_CLOSED;
        ftl_victims_add(&gr->victims, u);
        gr->victim = FDP_NONE;
        return -1;
    }
    ppn_to_addr(f, (uint64_t)u * f->ru_pages + i, &a);
    rd = nand_op(f->nand, NAND_OP_READ, &a, read_ns);
    gr->chip_read_ns[i % f->k] = MAX(gr->chip_read_ns[i % f->k], rd);
    ppn = place_page(f, rg, slot, ruh, true, lpn1 - 1, read_ns);
    ppn_to_addr(f, ppn, &a);
    ftl_program(&f->progs, &a, 1u << a.pl, rd);
    count_of(f, rg, ruh)->moved++;
    f->st.gc_pages_moved++;
    if (!gr->victim_moved++) {
        gr->first_lpn = lpn1 - 1;
        gr->first_ruh = ruh;
    }
    gr->victim_next = i + 1;
    return 1;
}

/* The victim's pages are all moved: each chip erases its blocks after its reads. */
static void victim_finish(FdpFtl *f, uint32_t rg, uint64_t now_ns, bool forced)
{
    FdpGroup *gr = &f->grp[rg];
    uint32_t u = gr->victim;
    FdpRu *r = &f->ru[u];
    NandAddr a;

    g_assert(r->vpc == 0);
    for (uint32_t j = 0; j < f->k; j++) {
        chip_addr(f, rg, j, u, &a);
        nand_op_planes(f->nand, NAND_OP_ERASE, &a, UINT32_MAX,
                       MAX(now_ns, gr->chip_read_ns[j]));
    }
    f->st.blocks_erased += (uint64_t)f->k * f->cfg.geo.pls_per_lun;
    f->st.rus_erased++;
    f->st.gc_runs++;
    f->st.gc_forced_runs += forced;
    gr->rus_erased++;
    gr->gc_runs++;
    gr->gc_forced_runs += forced;
    gr->dirty = true;
    gr->victim = FDP_NONE;
    if (ru_owner(r) != FDP_NO_RUH) {
        count_of(f, rg, r->ruh)->rus--;
    }
    r->erases++;
    r->wp = 0;
    r->kind = RU_HOST;
    r->ruh = FDP_NO_RUH;
    r->opened_ns = 0;
    r->order = ++f->order;
    free_push(f, u);
    ru_save(f, u);
    if (gr->victim_moved && f->ev) {
        FdpFtlEvent e = { .kind = FDP_FTL_EV_REALLOCATED, .rg = rg, .ruh = gr->first_ruh,
                          .lpn = gr->first_lpn, .npages = gr->victim_moved };
        f->ev(f->ev_opaque, &e);
    }
}

/*
 * Collects the group's victim at now_ns (the one in progress, else the policy's): reads
 * its valid pages, programs them into their GC RUs after each read, erases its blocks on
 * each chip after that chip's reads. False if it had to stop (victim_move's -1).
 */
static bool gc_collect(FdpFtl *f, uint32_t rg, uint64_t now_ns, bool forced)
{
    FdpGroup *gr = &f->grp[rg];
    int moved;

    if (gr->victim == FDP_NONE) {
        victim_start(f, rg,
                     ftl_victims_take(&gr->victims, f->order, gr->gc_runs, true), now_ns);
    }
    while ((moved = victim_move(f, rg, now_ns)) > 0) {
    }
    if (moved < 0) {
        return false;
    }
    victim_finish(f, rg, now_ns, forced);
    return true;
}

/* Before a host page: victims while free RUs are at or below the forced threshold. */
static void gc_forced(FdpFtl *f, uint32_t rg, uint64_t now_ns)
{
    FdpGroup *gr = &f->grp[rg];

    /* ends: each victim takes its garbage out of the closed RUs, and GC adds none */
    while (gr->free.n <= forced_thres(f, gr) &&
           (victim_gain(gr) || gr->victim != FDP_NONE)) {
        if (!gc_collect(f, rg, now_ns, true)) {
            break;
        }
    }
}

/* The group's chips are all idle by t. */
static bool group_idle(const FdpFtl *f, uint32_t rg, uint64_t t)
{
    for (uint32_t j = 0; j < f->k; j++) {
        NandAddr a;
        chip_addr(f, rg, j, rg * f->nrus, &a);
        if (nand_chip_busy_until(f->nand, nand_lun_index(f->nand, &a)) > t) {
            return false;
        }
    }
    return true;
}

static void gc_background(FdpFtl *f, uint64_t at)
{
    for (uint32_t rg = 0; rg < f->cfg.nrg; rg++) {
        FdpGroup *gr = &f->grp[rg];
        uint32_t thres = MAX(f->bg_pcent, forced_thres(f, gr));
        if (gr->free.n <= thres && victim_gain(gr) >= MAX(1, f->ru_pages / 8) &&
            group_idle(f, rg, at)) {
            gc_collect(f, rg, at, false);
        }
    }
}

/* ---- time limit ---- */

/* Closes every open host RU older than the limit (TIME_LIMIT events). */
static void expire_open(FdpFtl *f, uint64_t now_ns)
{
    uint64_t next = UINT64_MAX;

    if (!f->cfg.ru_time_limit_ns || now_ns <= f->next_deadline) {
        return;
    }
    for (uint32_t rg = 0; rg < f->cfg.nrg; rg++) {
        for (uint32_t h = 0; h < f->cfg.nruh; h++) {
            uint32_t u = *dest_slot(f, rg, h, false);
            uint64_t end;
            if (u == FDP_NONE) {
                continue;
            }
            end = add_sat(f->ru[u].opened_ns, f->cfg.ru_time_limit_ns);
            if (now_ns > end) {
                ru_close_early(f, rg, h, FDP_FTL_EV_TIME_LIMIT);
            } else {
                next = MIN(next, end);
            }
        }
    }
    f->next_deadline = next;
}

/* ---- host commands ---- */

static bool range_ok(const FdpFtl *f, uint64_t lpn, uint64_t npages)
{
    return lpn <= f->cfg.exposed_pages && npages <= f->cfg.exposed_pages - lpn;
}

/*
 * Where GC would program page i of RU u of group rg: its handle's GC RU's next page, or
 * the first page of the RU it would open. False when there is none to open.
 */
static bool gc_dest_addr(FdpFtl *f, uint32_t rg, uint32_t u, uint64_t i, NandAddr *a)
{
    uint64_t lpn1 = f->p2l[(uint64_t)u * f->ru_pages + i];
    uint32_t d = *dest_slot(f, rg, entry_ruh(map_raw(f, lpn1 - 1)), true);

    if (d == FDP_NONE && f->grp[rg].free.head == FTL_FREE_END) {
        return false;
    }
    ppn_to_addr(f, d != FDP_NONE ? (uint64_t)d * f->ru_pages + f->ru[d].wp :
                   (uint64_t)f->grp[rg].free.head * f->ru_pages, a);
    return true;
}

/*
 * Background GC with a pacing whose idle GC fits (idle_fits): the groups' victims move
 * and erase in the idle time before now_ns (the drive idle since pump_ns), only what ends
 * by then, so that no host command waits behind it.
 */
static void gc_idle_fits(FdpFtl *f, uint64_t now_ns)
{
    for (uint32_t rg = 0; rg < f->cfg.nrg; rg++) {
        FdpGroup *gr = &f->grp[rg];
        while (gr->free.n <= MAX(f->bg_pcent, forced_thres(f, gr))) {
            uint64_t i, at = f->pump_ns, rd;
            uint32_t u;
            NandAddr a, w;
            if (gr->victim == FDP_NONE) {
                if (victim_gain(gr) < MAX(1, f->ru_pages / 8)) {
                    break;
                }
                u = ftl_victims_take(&gr->victims, f->order, gr->gc_runs, false);
                if (f->ru[u].vpc == f->ru_pages) {
                    ftl_victims_add(&gr->victims, u);   /* no garbage: as the blackbox FTL */
                    break;
                }
                victim_start(f, rg, u, at);
            }
            i = victim_next_page(f, gr);
            if (i >= f->ru[gr->victim].wp) {
                bool fits = true;
                for (uint32_t j = 0; j < f->k && fits; j++) {
                    chip_addr(f, rg, j, gr->victim, &a);
                    fits = nand_probe(f->nand, NAND_OP_ERASE, &a,
                                      MAX(at, gr->chip_read_ns[j])) <= now_ns;
                }
                if (!fits) {
                    break;
                }
                victim_finish(f, rg, at, false);
                continue;
            }
            /* the move's read, then its program where the GC RU's next page is */
            ppn_to_addr(f, (uint64_t)gr->victim * f->ru_pages + i, &a);
            rd = nand_probe(f->nand, NAND_OP_READ, &a, at);
            if (rd > now_ns || !gc_dest_addr(f, rg, gr->victim, i, &w) ||
                nand_probe(f->nand, NAND_OP_PROGRAM, &w, rd) > now_ns) {
                break;
            }
            if (victim_move(f, rg, at) < 0) {
                break;
            }
        }
    }
}

static void host_begin(FdpFtl *f, uint64_t now_ns)
{
    if (ftl_pacing_of(&f->cfg.gc_pacing)->idle_fits && now_ns > f->pump_ns) {
        gc_idle_fits(f, now_ns);
    }
    f->pump_ns = MAX(f->pump_ns, now_ns);
    expire_open(f, now_ns);
}

/*
 * Before a host page in group g at now_ns: the GC work the pacing policy
 * asks for, after the host's pages gathered before (their completion, with done's, is
 * returned). Moves are done now, from the group's victim in progress.
 */
static uint64_t group_pace(FdpFtl *f, uint32_t g, uint64_t now_ns, uint64_t done)
{
    FdpGroup *gr = &f->grp[g];
    FtlPaceState s = {
        .free_units = gr->free.n,
        .free_pages = (uint64_t)gr->free.n * f->ru_pages,
        .open_units = gr->open_host + gr->open_gc,
        .forced_units = forced_thres(f, gr),
        .floor_units = need_thres(f, gr),
        .unit_pages = f->ru_pages,
        .victim_valid = gr->victim != FDP_NONE ? gr->victim_valid0 :
                        f->ru_pages - victim_gain(gr),
    };

    /*
     * Near the thresholds, free space counts what is left of the group's open RUs too
     * (host and GC RUs fill alongside, and each takes a free RU at once when full).
     */
    if (s.free_units <= s.forced_units + s.open_units + 1 +
                        ftl_policy_param(&f->cfg.gc_pacing, "margin", 0)) {
        for (uint32_t h = 0; h < f->cfg.nruh; h++) {
            uint32_t u = f->host_ru[g * f->cfg.nruh + h], v = f->pi_gc_ru[g * f->cfg.nruh + h];
            s.free_pages += (u != FDP_NONE ? f->ru_pages - f->ru[u].wp : 0) +
                            (v != FDP_NONE ? f->ru_pages - f->ru[v].wp : 0);
        }
        if (gr->gc_ii != FDP_NONE) {
            s.free_pages += f->ru_pages - f->ru[gr->gc_ii].wp;
        }
    } else {
        s.free_pages += (uint64_t)s.open_units * f->ru_pages;   /* far from any threshold */
    }
    double m = ftl_pace_moves(&f->cfg.gc_pacing, &s);

    if (m == 0 || (!isinf(m) && gr->credit + m < 1) ||
        (isinf(m) && !victim_gain(gr) && gr->victim == FDP_NONE)) {
        gr->credit += isinf(m) ? 0 : m;
        return done;
    }
    done = MAX(done, ftl_program_flush(&f->progs, now_ns));     /* the pages before go first */
    if (isinf(m)) {
        gc_forced(f, g, now_ns);
        gr->credit = 0;
        return done;
    }
    gr->credit += m;
    while (gr->credit >= 1) {
        int moved;
        if (gr->victim == FDP_NONE) {
            if (!victim_gain(gr)) {
                gr->credit = 0;
                break;
            }
            victim_start(f, g,
                         ftl_victims_take(&gr->victims, f->order, gr->gc_runs, false), now_ns);
        }
        moved = victim_move(f, g, now_ns);
        if (moved <= 0) {
            if (!moved) {
                victim_finish(f, g, now_ns, false);
            }
            gr->credit = 0;     /* the victim is done (or cannot go on): it is paid */
            break;
        }
        gr->credit -= 1;
    }
    return done;
}

/* Group g can take the handle's next page now (after whatever forced GC it needs). */
static bool group_takes(FdpFtl *f, uint32_t g, uint32_t ruh, uint64_t now_ns, uint64_t *done)
{
    FdpGroup *gr = &f->grp[g];

    *done = group_pace(f, g, now_ns, *done);
    return *dest_slot(f, g, ruh, false) != FDP_NONE || gr->free.n > FDP_GC_RESERVE;
}

/*
 * The group that takes the handle's next host page: rg, unless rg is over-full and would
 * need GC first, or cannot take it at all; then the next group that is not over-full, or
 * failing that, the next that can take it. FDP_NONE if none (fdp_ftl_config_check rules
 * that out).
 */
static uint32_t pick_group(FdpFtl *f, uint32_t rg, uint32_t ruh, uint64_t now_ns,
                           uint64_t *done)
{
    const FdpGroup *gr = &f->grp[rg];
    uint32_t nrg = f->cfg.nrg;

    /*
     * Burst GC lets an over-full group fill to its forced threshold first; paced GC keeps
     * groups away from it, so there a group hands pages on once it holds more than its
     * share of the exposed pages.
     */
    if (nrg > 1 && (ftl_pacing_of(&f->cfg.gc_pacing)->idle_fits
                    ? gr->valid > f->share_valid
                    : gr->valid > f->full_valid && gr->free.n <= forced_thres(f, gr))) {
        for (uint32_t n = 1; n < nrg; n++) {
            uint32_t g = (rg + n) % nrg;
            if (f->grp[g].valid <= f->full_valid && group_takes(f, g, ruh, now_ns, done)) {
                return g;
            }
        }
    }
    for (uint32_t n = 0; n < nrg; n++) {
        uint32_t g = (rg + n) % nrg;
        if (group_takes(f, g, ruh, now_ns, done)) {
            return g;
        }
    }
    return FDP_NONE;
}

/*
 * Pages of one request on one chip, block and page index on several planes are programmed
 * together (multi-plane, ftl_program_gather), as the blackbox FTL does; a chip's programs
 * keep page order.
 */
/* The pages list[0..n), or lpn..lpn + n when list is NULL. */
static uint64_t write_pages(FdpFtl *f, uint64_t lpn, const uint64_t *list, uint64_t npages,
                            uint32_t rg, uint32_t ruh, uint64_t now_ns)
{
    uint64_t done = now_ns, last;

    g_return_val_if_fail(rg < f->cfg.nrg && ruh < f->cfg.nruh, now_ns);
    host_begin(f, now_ns);
    for (uint64_t i = 0; i < npages; i++) {
        uint32_t g = pick_group(f, rg, ruh, now_ns, &done);
        uint64_t ppn, t;
        NandAddr a;
        if (g == FDP_NONE) {
            g_warning("fdp: no reclaim group can take a page; the configuration check "
                      "should have refused this one");
            break;
        }
        ppn = place_page(f, g, dest_slot(f, g, ruh, false), ruh, false,
                         list ? list[i] : lpn + i, now_ns);
        ppn_to_addr(f, ppn, &a);
        count_of(f, g, ruh)->host++;
        f->st.host_pages_written++;
        if (g != rg) {
            f->st.pages_redirected++;
            f->grp[g].pages_redirected++;
        }
        f->grp[g].dirty = true;
        t = ftl_program_gather(&f->progs, &a, now_ns);
        done = MAX(done, t);
    }
    last = ftl_program_flush(&f->progs, now_ns);
    stats_save(f);
    return MAX(done, last);
}

uint64_t fdp_ftl_write(FdpFtl *f, uint64_t lpn, uint64_t npages, uint32_t rg, uint32_t ruh,
                       uint64_t now_ns)
{
    g_return_val_if_fail(range_ok(f, lpn, npages), now_ns);
    return write_pages(f, lpn, NULL, npages, rg, ruh, now_ns);
}

uint64_t fdp_ftl_write_list(FdpFtl *f, const uint64_t *lpns, uint64_t n, uint32_t rg,
                            uint32_t ruh, uint64_t now_ns)
{
    for (uint64_t i = 0; i < n; i++) {
        g_return_val_if_fail(range_ok(f, lpns[i], 1), now_ns);
    }
    return write_pages(f, 0, lpns, n, rg, ruh, now_ns);
}

/*
 * Its counters are saved with the next other call or every FTL_READ_SAVES reads, unless an
 * RU past its time limit was closed first (that record's statistics go now).
 */
uint64_t fdp_ftl_read(FdpFtl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns)
{
    uint64_t done = now_ns, skipped = f->st.pages_skipped;
    NandAddr a;

    g_return_val_if_fail(range_ok(f, lpn, npages), now_ns);
    host_begin(f, now_ns);
    for (uint64_t i = 0; i < npages; i++) {
        uint64_t e = map_raw(f, lpn + i), t;
        if (e) {
            ppn_to_addr(f, entry_ppn(e), &a);
        } else {
            /* a mapping-table answer still costs a page read: the chip lpn stripes to */
            a = ftl_unmapped_addr(&f->cfg.geo, f->cfg.first_block, lpn + i);
            f->st.unmapped_pages_read++;
        }
        t = nand_op(f->nand, NAND_OP_READ, &a, now_ns);
        done = MAX(done, t);
        f->st.host_pages_read++;
    }
    f->global_dirty |= npages > 0;
    if (f->st.pages_skipped != skipped || ++f->reads_unsaved >= FTL_READ_SAVES) {
        stats_save(f);
    }
    return done;
}

void fdp_ftl_count_host_bytes_written(FdpFtl *f, uint32_t rg, uint64_t bytes)
{
    g_return_if_fail(rg < f->cfg.nrg);
    f->grp[rg].host_bytes_written += bytes;
    f->grp[rg].dirty = true;
    f->st.host_bytes_written += bytes;
}

void fdp_ftl_count_host_bytes_read(FdpFtl *f, uint64_t bytes)
{
    f->st.host_bytes_read += bytes;
    f->global_dirty = true;
}

uint64_t fdp_ftl_trim(FdpFtl *f, uint64_t lpn, uint64_t npages, uint64_t now_ns)
{
    g_return_val_if_fail(range_ok(f, lpn, npages), now_ns);
    host_begin(f, now_ns);
    /* a mapping-table update: no NAND operation, no RU state change */
    for (uint64_t i = lpn; i < lpn + npages; i++) {
        uint64_t e = map_raw(f, i);
        if (e) {
            invalidate(f, e);
            map_put(f, i, 0);
        }
    }
    f->st.pages_trimmed += npages;
    f->global_dirty |= npages > 0;
    stats_save(f);
    return now_ns;
}

uint64_t fdp_ftl_flush(FdpFtl *f, uint64_t now_ns)
{
    host_begin(f, now_ns);
    stats_save(f);
    return MAX(now_ns, f->last_prog_ns);
}

void fdp_ftl_idle(FdpFtl *f, uint64_t now_ns)
{
    uint64_t at = MAX(now_ns, f->pump_ns);

    expire_open(f, now_ns);
    /* a pacing whose idle GC fits does it at the next command, knowing when that is */
    if (at != UINT64_MAX && !ftl_pacing_of(&f->cfg.gc_pacing)->idle_fits) {
        gc_background(f, at);
    }
    f->pump_ns = at;
    stats_save(f);
}

uint64_t fdp_ftl_ruh_update(FdpFtl *f, uint32_t rg, uint32_t ruh)
{
    uint64_t left;

    g_return_val_if_fail(rg < f->cfg.nrg && ruh < f->cfg.nruh, 0);
    left = ru_close_early(f, rg, ruh, FDP_FTL_EV_RU_NOT_FULL);
    stats_save(f);
    return left;
}

uint32_t fdp_ftl_close_open(FdpFtl *f)
{
    uint32_t n = 0;

    for (uint32_t rg = 0; rg < f->cfg.nrg; rg++) {
        for (uint32_t h = 0; h < f->cfg.nruh; h++) {
            n += ru_close_early(f, rg, h, FDP_FTL_EV_RU_NOT_FULL) > 0;
        }
    }
    stats_save(f);
    return n;
}

uint64_t fdp_ftl_ru_avail(const FdpFtl *f, uint32_t rg, uint32_t ruh)
{
    uint32_t u;

    g_return_val_if_fail(rg < f->cfg.nrg && ruh < f->cfg.nruh, 0);
    u = f->host_ru[(uint64_t)rg * f->cfg.nruh + ruh];
    return u == FDP_NONE ? f->ru_pages : f->ru_pages - f->ru[u].wp;
}

uint64_t fdp_ftl_ru_opened_ns(const FdpFtl *f, uint32_t rg, uint32_t ruh)
{
    uint32_t u;

    g_return_val_if_fail(rg < f->cfg.nrg && ruh < f->cfg.nruh, UINT64_MAX);
    u = f->host_ru[(uint64_t)rg * f->cfg.nruh + ruh];
    return u == FDP_NONE ? UINT64_MAX : f->ru[u].opened_ns;
}

uint64_t fdp_ftl_ru_pages(const FdpFtl *f)
{
    return f->ru_pages;
}

uint32_t fdp_ftl_rus_per_rg(const FdpFtl *f)
{
    return f->nrus;
}

/* ---- lifecycle ---- */

/* Every RU free and erased never, nothing mapped, no statistics: a new drive. */
static void reset_state(FdpFtl *f)
{
    uint32_t nru = f->cfg.nrg * f->nrus;
    uint64_t nslots = (uint64_t)f->cfg.nrg * f->cfg.nruh;

    memset(f->ru, 0, sizeof(*f->ru) * nru);
    memset(f->cnt, 0, sizeof(*f->cnt) * nslots);
    for (uint64_t i = 0; i < nslots; i++) {
        f->host_ru[i] = f->pi_gc_ru[i] = FDP_NONE;
    }
    memset(&f->st, 0, sizeof(f->st));
    for (uint32_t g = 0; g < f->cfg.nrg; g++) {
        FdpGroup *gr = &f->grp[g];
        FtlVictims victims = gr->victims;
        memset(gr, 0, sizeof(*gr));
        gr->victims = victims;
        ftl_victims_clear(&gr->victims);
        ftl_free_list_init(&gr->free, f->free_next);
        gr->gc_ii = gr->victim = FDP_NONE;
        gr->chip_read_ns = f->chip_read_ns + (uint64_t)g * f->k;
    }
    for (uint32_t u = 0; u < nru; u++) {
        f->ru[u].ruh = FDP_NO_RUH;
        free_push(f, u);
    }
    f->st.total_rus = nru;
    f->order = 0;
    f->next_deadline = UINT64_MAX;
    f->global_seq = 0;
}

FdpFtl *fdp_ftl_new(const FdpFtlConfig *c, char **err)
{
    FdpFtl *f;
    NandModel *nand;
    uint64_t nslots = (uint64_t)c->nrg * c->nruh, share, cap;

    if (!fdp_ftl_config_check(c, err) ||
        !(nand = ftl_nand_get(&c->geo, &c->tm, c->shared_nand, c->first_block, "FDP FTL",
                              err))) {
        return NULL;
    }
    f = g_new0(FdpFtl, 1);
    f->cfg = *c;
    if (!f->cfg.gc_pacing.policy) {
        /*
         * burst, not the blackbox's proportional: an over-full group hands pages to the
         * next at its forced threshold, which paced GC keeps away from (host data all in
         * group 0, as without directives: WAF 2.7 burst, 13 paced in
         * /fdp-ftl/isolation/full-group)
         */
        char *perr = NULL;
        bool ok = ftl_policy_parse(FTL_PACING, "burst", &f->cfg.gc_pacing, &perr);

        g_assert(ok);
    }
    f->nand = nand;
    f->k = nand_luns(&c->geo) / c->nrg;
    f->nrus = c->geo.blks_per_pl;
    f->ngc = gc_rus(c);
    f->forced_pcent = ftl_gc_thres(f->nrus, c->gc_thres_pcent_high);
    f->bg_pcent = ftl_gc_thres(f->nrus, c->gc_thres_pcent);
    f->ru_pages = ru_pages_of(c);
    f->total_pages = (uint64_t)c->nrg * f->nrus * f->ru_pages;
    /*
     * a group's fair share of the data, plus half of what it can hold beyond that: its
     * closed RUs when every handle and GC has one open and forced GC is due
     */
    share = div_up(c->exposed_pages, c->nrg);
    cap = (uint64_t)(f->nrus - c->nruh - f->ngc - MAX(f->forced_pcent, FDP_GC_RESERVE)) *
          f->ru_pages;
    f->full_valid = share + (cap > share ? (cap - share) / 2 : 0);
    f->share_valid = share;
    f->lay = layout_of(c);
    /* zeroed and sparse: memory grows with the pages written, not the capacity */
    f->map = g_try_malloc0_n(c->exposed_pages, 8);
    f->own_map = true;
    f->p2l = g_try_malloc0_n(f->total_pages, sizeof(uint64_t));
    if (!f->map || !f->p2l) {
        *err = g_strdup_printf("cannot allocate the FDP FTL's mapping tables (%"
                               G_GUINT64_FORMAT " MiB): lower devsz_mb",
                               (c->exposed_pages + f->total_pages) * 8 >> 20);
        fdp_ftl_free(f);
        return NULL;
    }
    f->ru = g_new0(FdpRu, (uint64_t)c->nrg * f->nrus);
    f->grp = g_new0(FdpGroup, c->nrg);
    f->victim_pos = g_new0(uint32_t, (uint64_t)c->nrg * f->nrus);
    f->free_next = g_new0(uint32_t, (uint64_t)c->nrg * f->nrus);
    for (uint32_t g = 0; g < c->nrg; g++) {
        ftl_victims_init(&f->grp[g].victims, &c->gc_policy, g * f->nrus, f->nrus, f->ru_pages,
                         f->victim_pos, ru_less, ru_view, f);
    }
    f->host_ru = g_new(uint32_t, nslots);
    f->pi_gc_ru = g_new(uint32_t, nslots);
    f->cnt = g_new0(FdpRuhCount, nslots);
    f->chip_read_ns = g_new0(uint64_t, (uint64_t)c->nrg * f->k);
    ftl_progs_init(&f->progs, nand, &f->last_prog_ns, &f->st.nand_pages_written);
    f->rec_scratch = g_new0(uint64_t, rg_values(c->nruh));
    reset_state(f);
    return f;
}

void fdp_ftl_free(FdpFtl *f)
{
    if (!f) {
        return;
    }
    if (!f->cfg.shared_nand) {
        nand_model_free(f->nand);
    }
    if (f->own_map) {
        g_free(f->map);
    }
    g_free(f->p2l);
    g_free(f->ru);
    if (f->grp) {
        for (uint32_t g = 0; g < f->cfg.nrg; g++) {
            ftl_victims_destroy(&f->grp[g].victims);
        }
    }
    g_free(f->grp);
    g_free(f->victim_pos);
    g_free(f->free_next);
    g_free(f->host_ru);
    g_free(f->pi_gc_ru);
    g_free(f->cnt);
    g_free(f->chip_read_ns);
    ftl_progs_destroy(&f->progs);
    g_free(f->rec_scratch);
    g_free(f);
}

void fdp_ftl_set_event_fn(FdpFtl *f, FdpFtlEventFn *fn, void *opaque)
{
    f->ev = fn;
    f->ev_opaque = opaque;
}

void fdp_ftl_set_store_hook(FdpFtl *f, void (*fn)(void *opaque), void *opaque)
{
    f->store_hook = (FtlStoreHook){ fn, opaque };
}

/* ---- the store: format, header, load ---- */

static void header_fill(const FdpFtl *f, uint8_t *h)
{
    const NandGeometry *g = &f->cfg.geo;

    memset(h, 0, FDP_HDR_BYTES);
    record_put_le(h, FDP_STORE_MAGIC, 4);
    record_put_le(h + 4, FDP_STORE_VERSION, 4);
    record_put_le(h + 8, g->nchs, 4);
    record_put_le(h + 12, g->luns_per_ch, 4);
    record_put_le(h + 16, g->pls_per_lun, 4);
    record_put_le(h + 20, g->blks_per_pl, 4);
    record_put_le(h + 24, g->pgs_per_blk, 4);
    record_put_le(h + 28, nand_page_bytes(g), 4);
    record_put_le(h + 32, f->cfg.exposed_pages, 8);
    record_put_le(h + 40, f->cfg.nrg, 4);
    record_put_le(h + 44, f->cfg.nruh, 4);
    record_put_le(h + 48, f->cfg.first_block, 4);
    memcpy(h + 56, f->cfg.ruh_type, f->cfg.nruh);
    record_put_le(h + FDP_HDR_CRC_AT, ftl_crc32_salted(SALT_HEADER, h, FDP_HDR_CRC_AT), 4);
}

static char *types_str(const uint8_t *t, uint32_t n)
{
    GString *s = g_string_new(NULL);

    for (uint32_t i = 0; i < n; i++) {
        g_string_append_printf(s, "%s%s", i ? ":" : "", t[i] == FDP_RUH_PERSISTENTLY_ISOLATED
                               ? "pi" : t[i] == FDP_RUH_INITIALLY_ISOLATED ? "ii" : "?");
    }
    return g_string_free(s, false);
}

/* Does the saved header describe this configuration? Else *err names what differs. */
static bool header_matches(const FdpFtl *f, const uint8_t *h, char **err)
{
    /* the FDP fields first: the derived block count follows from them */
    static const FtlHeaderField fields[] = {
        { 40, 4, "fdp_nrg" }, { 44, 4, "handles (fdp_ruh_types)" },
        { 8, 4, "nchs" }, { 12, 4, "luns_per_ch" }, { 16, 4, "pls_per_lun" },
        { 20, 4, "blks_per_pl (the FDP share of the flash: devsz_mb, op_pcent)" },
        { 24, 4, "pgs_per_blk" }, { 28, 4, "page bytes (secsz * secs_per_pg)" },
        { 32, 8, "exposed pages (devsz_mb)" }, { 48, 4, "first block (the flash shared "
                                                "with other namespaces)" },
    };
    uint8_t want[FDP_HDR_BYTES];

    header_fill(f, want);
    if (!ftl_header_matches(h, want, "FDP", SALT_HEADER, FDP_HDR_CRC_AT, fields, 2, err)) {
        return false;
    }
    /* the handles' types right after their count: the block count follows from them too */
    if (memcmp(h + 56, want + 56, FDP_MAX_RUH)) {
        g_autofree char *was_t = types_str(h + 56, f->cfg.nruh);
        g_autofree char *now_t = types_str(want + 56, f->cfg.nruh);
        *err = g_strdup_printf("the FDP state was saved with fdp_ruh_types=%s, the device "
                               "now has %s", was_t, now_t);
        return false;
    }
    return ftl_header_matches(h, want, "FDP", SALT_HEADER, FDP_HDR_CRC_AT, fields + 2,
                              G_N_ELEMENTS(fields) - 2, err);
}

/* A record that is whole and makes sense: decodes it into *r. */
static bool ru_decode(const FdpFtl *f, uint32_t u, const uint8_t *p, FdpRu *r)
{
    uint8_t state = p[0], kind = p[1], ruh = p[2];
    uint64_t wp = record_get_le(p + 8, 8);

    if (record_all_zero(p, FDP_RU_REC)) {
        *r = (FdpRu){ .state = RU_FREE, .kind = RU_HOST, .ruh = FDP_NO_RUH };
        return true;
    }
    if (record_get_le(p + 36, 4) != ftl_crc32_salted(SALT_RU | u, p, 36) ||
        state > RU_CLOSED || kind > RU_GC_II || wp > f->ru_pages) {
        return false;
    }
    if ((state == RU_FREE && wp) || (state == RU_OPEN && wp == f->ru_pages)) {
        return false;
    }
    if ((kind == RU_HOST && ruh != FDP_NO_RUH && ruh >= f->cfg.nruh) ||
        (kind == RU_HOST && ruh == FDP_NO_RUH && state == RU_OPEN) ||
        (kind == RU_GC_PI && (ruh >= f->cfg.nruh || !is_pi(&f->cfg, ruh))) ||
        (kind == RU_GC_II && ruh != FDP_NO_RUH)) {
        return false;
    }
    *r = (FdpRu){ .state = state, .kind = kind, .ruh = ruh, .wp = wp,
                  .erases = record_get_le(p + 4, 4), .opened_ns = record_get_le(p + 16, 8),
                  .order = record_get_le(p + 24, 8) };
    return true;
}

static gint cmp_free_order(gconstpointer a, gconstpointer b, gpointer data)
{
    const FdpRu *ru = data;
    uint64_t x = ru[*(const uint32_t *)a].order, y = ru[*(const uint32_t *)b].order;

    return x < y ? -1 : x > y ? 1 : (*(const uint32_t *)a > *(const uint32_t *)b) -
                                    (*(const uint32_t *)a < *(const uint32_t *)b);
}

/*
 * A kind and owner for a repaired RU from the data it holds: one handle's host RU, the II
 * GC RU for II handles' data, else (only a damaged store mixes PI data) the II GC kind, so
 * that the consistency check reports the mix.
 */
static void repair_kind(FdpFtl *f, uint32_t u, const uint32_t *owner)
{
    FdpRu *r = &f->ru[u];

    if (owner[u] == FDP_NONE) {
        r->kind = RU_HOST;
        r->ruh = FDP_NO_RUH;
    } else if (owner[u] != FDP_NO_RUH) {
        r->kind = RU_HOST;
        r->ruh = owner[u];
    } else {
        r->kind = RU_GC_II;
        r->ruh = FDP_NO_RUH;
    }
}

static void load(FdpFtl *f)
{
    uint32_t nru = f->cfg.nrg * f->nrus;
    g_autofree bool *damaged = g_new0(bool, nru);
    g_autofree uint64_t *top = g_new0(uint64_t, nru);      /* highest mapped index + 1 */
    g_autofree uint32_t *owner = g_new(uint32_t, nru);     /* FDP_NONE none, NO_RUH many */
    g_autofree uint32_t *order = g_new(uint32_t, nru);
    uint32_t nfree = 0;

    reset_state(f);
    /* free list rebuilt below, in the order RUs were freed */
    for (uint32_t g = 0; g < f->cfg.nrg; g++) {
        ftl_free_list_init(&f->grp[g].free, f->free_next);
    }
    f->st.free_rus = 0;
    for (uint32_t u = 0; u < nru; u++) {
        const uint8_t *p = f->store + f->lay.off_ru + (uint64_t)u * FDP_RU_REC;
        FdpRu r;
        if (ru_decode(f, u, p, &r)) {
            f->ru[u] = r;
        } else {
            damaged[u] = true;
            f->ru[u] = (FdpRu){ .state = RU_CLOSED, .kind = RU_HOST, .ruh = FDP_NO_RUH,
                                .wp = f->ru_pages, .erases = record_get_le(p + 4, 4) };
        }
        f->order = MAX(f->order, f->ru[u].order);
        owner[u] = FDP_NONE;
    }
    /* the flash's wear as the RUs' erases say (the model counts it for read retry) */
    for (uint32_t u = 0; u < nru; u++) {
        for (uint32_t j = 0; j < f->k; j++) {
            NandAddr a;
            chip_addr(f, ru_group(f, u), j, u, &a);
            ftl_set_wear_planes(f->nand, a, f->ru[u].erases);
        }
    }
    /* the mapping: entries that fail their check, or name a page taken, are dropped */
    for (uint64_t lpn = 0; lpn < f->cfg.exposed_pages; lpn++) {
        uint64_t e = map_raw(f, lpn), ppn;
        uint32_t u, h;
        if (!e) {
            continue;
        }
        if (!entry_ok(f, lpn, e) || f->p2l[entry_ppn(e)]) {
            map_put(f, lpn, 0);
            continue;
        }
        ppn = entry_ppn(e);
        u = ppn / f->ru_pages;
        h = entry_ruh(e);
        f->p2l[ppn] = lpn + 1;
        f->ru[u].vpc++;
        f->grp[ru_group(f, u)].valid++;
        count_of(f, ru_group(f, u), h)->valid++;
        top[u] = MAX(top[u], ppn % f->ru_pages + 1);
        owner[u] = owner[u] == FDP_NONE || owner[u] == h ? h
                   : FDP_NO_RUH;
    }
    /* RUs whose record the mapping contradicts, or that failed their CRC */
    for (uint32_t u = 0; u < nru; u++) {
        FdpRu *r = &f->ru[u];
        if (damaged[u] || (top[u] && (r->state == RU_FREE || top[u] > r->wp))) {
            if (!damaged[u]) {
                r->wp = MAX(r->wp, top[u]);
            }
            if (damaged[u] || r->state == RU_FREE) {
                repair_kind(f, u, owner);
            }
            r->state = RU_CLOSED;
            ru_save(f, u);
        }
    }
    /* open RUs back in their slots; a second one for a slot is closed */
    for (uint32_t u = 0; u < nru; u++) {
        FdpRu *r = &f->ru[u];
        uint32_t g = ru_group(f, u), *slot;
        if (r->state != RU_OPEN) {
            continue;
        }
        slot = r->kind == RU_GC_II ? &f->grp[g].gc_ii
               : r->kind == RU_GC_PI ? &f->pi_gc_ru[(uint64_t)g * f->cfg.nruh + r->ruh]
               : &f->host_ru[(uint64_t)g * f->cfg.nruh + r->ruh];
        if (*slot != FDP_NONE) {
            r->state = RU_CLOSED;
            ru_save(f, u);
            continue;
        }
        *slot = u;
        if (r->kind == RU_HOST) {
            f->grp[g].open_host++;
            if (f->cfg.ru_time_limit_ns) {
                f->next_deadline = MIN(f->next_deadline,
                                       add_sat(r->opened_ns, f->cfg.ru_time_limit_ns));
            }
        } else {
            f->grp[g].open_gc++;
        }
    }
    for (uint32_t u = 0; u < nru; u++) {
        FdpRu *r = &f->ru[u];
        if (r->state == RU_CLOSED) {
            ftl_victims_add(&f->grp[ru_group(f, u)].victims, u);
        }
        if (r->state != RU_FREE && ru_owner(r) != FDP_NO_RUH) {
            count_of(f, ru_group(f, u), r->ruh)->rus++;
        }
        if (r->state == RU_FREE) {
            order[nfree++] = u;
        }
    }
    g_qsort_with_data(order, nfree, sizeof(*order), cmp_free_order, f->ru);
    for (uint32_t i = 0; i < nfree; i++) {
        free_push(f, order[i]);
    }
}

/* The statistics records into the counters; totals are their sums. */
static void load_stats(FdpFtl *f)
{
    uint64_t gv[FDP_GLOBAL_COUNTERS];
    uint32_t n = rg_values(f->cfg.nruh);
    g_autofree uint64_t *v = g_new(uint64_t, n);

    ftl_slot_load(f->store + f->lay.off_global, FDP_GLOBAL_REC, SALT_GLOBAL, gv,
                  FDP_GLOBAL_COUNTERS, &f->global_seq);
    f->st.host_pages_read = gv[0];
    f->st.unmapped_pages_read = gv[1];
    f->st.pages_trimmed = gv[2];
    f->st.host_bytes_read = gv[3];
    for (uint32_t g = 0; g < f->cfg.nrg; g++) {
        FdpGroup *gr = &f->grp[g];
        ftl_slot_load(f->store + f->lay.off_rg + 2ULL * g * f->lay.rg_rec, f->lay.rg_rec,
                      SALT_RG | g, v, n, &gr->seq);
        gr->gc_runs = v[0];
        gr->gc_forced_runs = v[1];
        gr->rus_erased = v[2];
        gr->pages_skipped = v[3];
        gr->pages_redirected = v[4];
        f->st.gc_runs += v[0];
        f->st.gc_forced_runs += v[1];
        f->st.rus_erased += v[2];
        f->st.pages_skipped += v[3];
        f->st.pages_redirected += v[4];
        gr->host_bytes_written = v[5];
        f->st.host_bytes_written += v[5];
        for (uint32_t h = 0; h < f->cfg.nruh; h++) {
            count_of(f, g, h)->host = v[FDP_RG_COUNTERS + 2 * h];
            count_of(f, g, h)->moved = v[FDP_RG_COUNTERS + 2 * h + 1];
            f->st.host_pages_written += count_of(f, g, h)->host;
            f->st.gc_pages_moved += count_of(f, g, h)->moved;
        }
    }
    f->st.nand_pages_written = f->st.host_pages_written + f->st.gc_pages_moved;
    f->st.blocks_erased = f->st.rus_erased * f->k * f->cfg.geo.pls_per_lun;
}

bool fdp_ftl_attach_store(FdpFtl *f, void *store, char **err)
{
    uint8_t *s = store;

    g_return_val_if_fail(!f->store && !f->st.host_pages_written && !f->st.pages_trimmed, false);
    if (record_all_zero(s, FDP_HDR_BYTES)) {
        if (!record_all_zero(s, f->lay.bytes)) {
            *err = g_strdup("the FDP state area has no header but is not blank: it holds "
                            "something else (clear the backend, or use a new one)");
            return false;
        }
        /* a new drive: only the header to write, the rest reads as free and unmapped */
        f->store = s;
        header_fill(f, s);
        ftl_stored(&f->store_hook);
    } else {
        if (!header_matches(f, s, err)) {
            return false;
        }
        f->store = s;
    }
    if (f->own_map) {
        g_free(f->map);
        f->own_map = false;
    }
    f->map = s + f->lay.off_map;
    load(f);        /* the reverse map is still all zero: no I/O before attach */
    load_stats(f);
    return true;
}

/* ---- statistics and introspection ---- */

const FdpFtlStats *fdp_ftl_stats(const FdpFtl *f)
{
    return &f->st;
}

void fdp_ftl_ruh_rg_stats(const FdpFtl *f, uint32_t rg, uint32_t ruh, FdpRuhStats *out)
{
    const FdpRuhCount *c;

    *out = (FdpRuhStats){ 0 };
    g_return_if_fail(rg < f->cfg.nrg && ruh < f->cfg.nruh);
    c = &f->cnt[(uint64_t)rg * f->cfg.nruh + ruh];
    *out = (FdpRuhStats){ .host_pages_written = c->host, .gc_pages_moved = c->moved,
                          .rus_in_use = c->rus, .valid_pages = c->valid };
}

void fdp_ftl_ruh_stats(const FdpFtl *f, uint32_t ruh, FdpRuhStats *out)
{
    *out = (FdpRuhStats){ 0 };
    g_return_if_fail(ruh < f->cfg.nruh);
    for (uint32_t rg = 0; rg < f->cfg.nrg; rg++) {
        FdpRuhStats s;
        fdp_ftl_ruh_rg_stats(f, rg, ruh, &s);
        out->host_pages_written += s.host_pages_written;
        out->gc_pages_moved += s.gc_pages_moved;
        out->rus_in_use += s.rus_in_use;
        out->valid_pages += s.valid_pages;
    }
}

void fdp_ftl_rg_stats(const FdpFtl *f, uint32_t rg, FdpRgStats *out)
{
    *out = (FdpRgStats){ 0 };
    g_return_if_fail(rg < f->cfg.nrg);
    *out = (FdpRgStats){ .free_rus = f->grp[rg].free.n, .gc_runs = f->grp[rg].gc_runs,
                         .rus_erased = f->grp[rg].rus_erased };
}

double fdp_ftl_waf(const FdpFtl *f)
{
    return ftl_waf_of(f->st.nand_pages_written, f->st.host_pages_written);
}

double fdp_ftl_ruh_waf(const FdpFtl *f, uint32_t ruh)
{
    FdpRuhStats s;

    fdp_ftl_ruh_stats(f, ruh, &s);
    return ftl_waf_of(s.host_pages_written + s.gc_pages_moved, s.host_pages_written);
}

NandModel *fdp_ftl_nand(FdpFtl *f)
{
    return f->nand;
}

const FdpFtlConfig *fdp_ftl_config(const FdpFtl *f)
{
    return &f->cfg;
}

bool fdp_ftl_lookup(const FdpFtl *f, uint64_t lpn, NandAddr *addr, uint32_t *rg,
                    uint32_t *ru, uint32_t *ruh)
{
    uint64_t e, u;

    if (lpn >= f->cfg.exposed_pages || !(e = map_raw(f, lpn))) {
        return false;
    }
    u = entry_ppn(e) / f->ru_pages;
    if (addr) {
        ppn_to_addr(f, entry_ppn(e), addr);
    }
    if (rg) {
        *rg = ru_group(f, u);
    }
    if (ru) {
        *ru = u % f->nrus;
    }
    if (ruh) {
        *ruh = entry_ruh(e);
    }
    return true;
}

#define FAIL(...) do { *err = g_strdup_printf(__VA_ARGS__); goto out; } while (0)

/* Does the page of handle ruh belong in RU r (isolation)? */
static bool data_fits_ru(const FdpFtl *f, const FdpRu *r, uint32_t ruh)
{
    switch (r->kind) {
    case RU_HOST:
    case RU_GC_PI:
        return r->ruh == ruh;
    default:
        return !is_pi(&f->cfg, ruh);
    }
}

bool fdp_ftl_check_consistency(const FdpFtl *f, char **err)
{
    uint32_t nru = f->cfg.nrg * f->nrus;
    uint64_t nslots = (uint64_t)f->cfg.nrg * f->cfg.nruh, mapped = 0, valid = 0, host = 0;
    uint64_t moved = 0;
    g_autofree uint64_t *vpc = g_new0(uint64_t, nru);
    g_autofree FdpRuhCount *cnt = g_new0(FdpRuhCount, nslots);
    bool ok = false;

    for (uint64_t lpn = 0; lpn < f->cfg.exposed_pages; lpn++) {
        uint64_t e = map_raw(f, lpn), ppn;
        const FdpRu *r;
        uint32_t u, h;
        if (!e) {
            continue;
        }
        if (!entry_ok(f, lpn, e)) {
            FAIL("lpn %" G_GUINT64_FORMAT ": its mapping entry fails its check", lpn);
        }
        ppn = entry_ppn(e);
        h = entry_ruh(e);
        u = ppn / f->ru_pages;
        r = &f->ru[u];
        if (f->p2l[ppn] != lpn + 1) {
            FAIL("lpn %" G_GUINT64_FORMAT " maps to ppn %" G_GUINT64_FORMAT
                 " whose reverse entry does not name it", lpn, ppn);
        }
        if (r->state == RU_FREE || ppn % f->ru_pages >= r->wp) {
            FAIL("lpn %" G_GUINT64_FORMAT ": ppn %" G_GUINT64_FORMAT " is in a free RU or "
                 "past its write pointer", lpn, ppn);
        }
        if (!data_fits_ru(f, r, h)) {
            FAIL("isolation: RU %u of group %u (kind %u, handle %u) holds lpn %"
                 G_GUINT64_FORMAT " of handle %u", u % f->nrus, ru_group(f, u), r->kind,
                 r->ruh, lpn, h);
        }
        vpc[u]++;
        cnt[(uint64_t)ru_group(f, u) * f->cfg.nruh + h].valid++;
        mapped++;
    }
    for (uint64_t ppn = 0; ppn < f->total_pages; ppn++) {
        uint64_t r = f->p2l[ppn];
        if (!r) {
            continue;
        }
        if (r - 1 >= f->cfg.exposed_pages || (map_raw(f, r - 1) & FDP_PPN_MASK) != ppn + 1) {
            FAIL("ppn %" G_GUINT64_FORMAT " claims lpn %" G_GUINT64_FORMAT
                 " which maps elsewhere", ppn, r - 1);
        }
        valid++;
    }
    if (valid != mapped) {
        FAIL("%" G_GUINT64_FORMAT " pages mapped but %" G_GUINT64_FORMAT " valid", mapped,
             valid);
    }
    for (uint32_t u = 0; u < nru; u++) {
        const FdpRu *r = &f->ru[u];
        if (r->vpc != vpc[u]) {
            FAIL("RU %u of group %u counts %" G_GUINT64_FORMAT " valid pages, has %"
                 G_GUINT64_FORMAT, u % f->nrus, ru_group(f, u), r->vpc, vpc[u]);
        }
        if (r->state != RU_FREE && ru_owner(r) != FDP_NO_RUH) {
            cnt[(uint64_t)ru_group(f, u) * f->cfg.nruh + r->ruh].rus++;
        }
        if (r->state == RU_VICTIM && f->grp[ru_group(f, u)].victim != u) {
            FAIL("RU %u of group %u is a GC victim its group does not collect", u % f->nrus,
                 ru_group(f, u));
        }
        if (r->state != RU_VICTIM && f->grp[ru_group(f, u)].victim == u) {
            FAIL("group %u's GC victim, RU %u, is not one", ru_group(f, u), u % f->nrus);
        }
        if (r->state == RU_CLOSED) {
            const FdpGroup *gr = &f->grp[ru_group(f, u)];
            if (!ftl_victims_holds(&gr->victims, u)) {
                FAIL("closed RU %u of group %u is not in the victim heap", u % f->nrus,
                     ru_group(f, u));
            }
        }
    }
    for (uint32_t g = 0; g < f->cfg.nrg; g++) {
        const FdpGroup *gr = &f->grp[g];
        uint32_t nfree = 0, last = FTL_FREE_END, nopen_host = 0, nopen_gc = 0, nclosed = 0;
        uint64_t gvalid = 0;
        for (uint32_t u = gr->free.head; u != FTL_FREE_END; u = ftl_free_after(&gr->free, u)) {
            if (f->ru[u].state != RU_FREE || ru_group(f, u) != g || ++nfree > f->nrus) {
                FAIL("group %u's free list holds RU %u, which is not its free one (or loops)",
                     g, u);
            }
            last = u;
        }
        for (uint32_t b = 0; b < f->nrus; b++) {
            const FdpRu *r = &f->ru[g * f->nrus + b];
            nclosed += r->state == RU_CLOSED;
            if (r->state == RU_FREE && (r->vpc || r->wp)) {
                FAIL("free RU %u of group %u has pages written", b, g);
            }
            if (r->state == RU_OPEN) {
                const uint32_t *slot = r->kind == RU_GC_II ? &gr->gc_ii
                    : r->kind == RU_GC_PI ? &f->pi_gc_ru[(uint64_t)g * f->cfg.nruh + r->ruh]
                    : &f->host_ru[(uint64_t)g * f->cfg.nruh + r->ruh];
                if (*slot != g * f->nrus + b) {
                    FAIL("RU %u of group %u is open but no handle or GC fills it", b, g);
                }
                if (r->kind == RU_HOST) {
                    nopen_host++;
                } else {
                    nopen_gc++;
                }
            }
        }
        for (uint32_t h = 0; h < f->cfg.nruh; h++) {
            gvalid += cnt[(uint64_t)g * f->cfg.nruh + h].valid;
        }
        if (gvalid != gr->valid) {
            FAIL("group %u counts %" G_GUINT64_FORMAT " valid pages, has %" G_GUINT64_FORMAT,
                 g, gr->valid, gvalid);
        }
        if (last != gr->free.tail || nfree != gr->free.n ||
            nclosed != ftl_victims_count(&gr->victims) ||
            nopen_host != gr->open_host || nopen_gc != gr->open_gc) {
            FAIL("group %u's counts disagree: %u free (counted %u), %u closed (heap %u), "
                 "%u/%u open host/GC RUs (counted %u/%u)", g, nfree, gr->free.n, nclosed,
                 ftl_victims_count(&gr->victims), nopen_host, nopen_gc, gr->open_host,
                 gr->open_gc);
        }
        if (ftl_victims_disorder(&gr->victims)) {
            FAIL("group %u's victim heap is out of order at %u", g,
                 ftl_victims_disorder(&gr->victims));
        }
        for (uint32_t h = 0; h < f->cfg.nruh; h++) {
            const FdpRuhCount *c = &f->cnt[(uint64_t)g * f->cfg.nruh + h];
            const FdpRuhCount *want = &cnt[(uint64_t)g * f->cfg.nruh + h];
            if (c->valid != want->valid || c->rus != want->rus) {
                FAIL("group %u handle %u counts %" G_GUINT64_FORMAT " valid pages and %"
                     G_GUINT64_FORMAT " RUs, has %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT,
                     g, h, c->valid, c->rus, want->valid, want->rus);
            }
            host += c->host;
            moved += c->moved;
        }
    }
    if (host != f->st.host_pages_written || moved != f->st.gc_pages_moved ||
        f->st.nand_pages_written != host + moved ||
        f->st.blocks_erased != f->st.rus_erased * f->k * f->cfg.geo.pls_per_lun) {
        FAIL("statistics disagree: host %" G_GUINT64_FORMAT " (handles %" G_GUINT64_FORMAT
             "), moved %" G_GUINT64_FORMAT " (handles %" G_GUINT64_FORMAT "), NAND %"
             G_GUINT64_FORMAT ", blocks erased %" G_GUINT64_FORMAT " for %" G_GUINT64_FORMAT
             " RUs", f->st.host_pages_written, host, f->st.gc_pages_moved, moved,
             f->st.nand_pages_written, f->st.blocks_erased, f->st.rus_erased);
    }
    ok = true;
out:
    return ok;
}
