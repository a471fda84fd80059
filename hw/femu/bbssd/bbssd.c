/*
 * femu_mode=1 (blackbox): properties -> FTL configuration -> media model. FEMU's property
 * names are accepted as they are; op_pcent, flash_type, per-page-type latencies, the bus
 * rate and time_scale are new.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "femu.h"
#include "bbssd/ftl.h"

#define US 1000ULL

/* Per-page-type defaults (ns) by bits per cell: what a drive of that kind does. */
static const struct {
    const char *name;
    uint64_t rd[NAND_MAX_PAGE_TYPES], wr[NAND_MAX_PAGE_TYPES], er;
} flash_defaults[NAND_MAX_PAGE_TYPES + 1] = {
    [1] = { "SLC", { 25 * US }, { 200 * US }, 1500 * US },
    [2] = { "MLC", { 40 * US, 60 * US }, { 300 * US, 900 * US }, 3000 * US },
    [3] = { "TLC", { 50 * US, 65 * US, 80 * US }, { 400 * US, 700 * US, 1000 * US },
            3500 * US },
    [4] = { "QLC", { 70 * US, 90 * US, 110 * US, 130 * US },
            { 800 * US, 1400 * US, 2000 * US, 2600 * US }, 5000 * US },
};

/* "a,b,c" -> one latency per page type; exactly cell_bits values. */
static bool parse_lats(const char *prop, const char *text, uint32_t cell_bits, uint64_t *out,
                       Error **errp)
{
    g_auto(GStrv) parts = g_strsplit_set(text, ",:", -1);
    uint32_t n = g_strv_length(parts);

    if (n != cell_bits) {
        error_setg(errp, "%s='%s' needs %u latencies in ns separated by ':' (one per page "
                   "type of flash_type=%u)", prop, text, cell_bits, cell_bits);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        guint64 v;
        if (!g_ascii_string_to_unsigned(g_strstrip(parts[i]), 10, 0, 1000000000, &v, NULL)) {
            error_setg(errp, "%s='%s': '%s' is not a latency in ns (0..1000000000)", prop,
                       text, parts[i]);
            return false;
        }
        out[i] = v;
    }
    return true;
}

/*
 * NAND timing from a flash type, FEMU-style single latencies (-1: the type's default) and
 * the shared bus / per-page-type / time-scale properties in *p.
 */
bool femu_fill_timing(uint8_t flash_type, int64_t rd, int64_t wr, int64_t er,
                      const FemuBbParams *p, NandTiming *t, Error **errp)
{
    if (flash_type < 1 || flash_type > NAND_MAX_PAGE_TYPES) {
        error_setg(errp, "flash_type=%u is out of range: allowed 1 (SLC), 2 (MLC), 3 (TLC), "
                   "4 (QLC)", flash_type);
        return false;
    }
    *t = (NandTiming){ .cell_bits = flash_type, .time_scale = p->time_scale,
                       .ch_mts = p->ch_mts, .ch_width_bytes = p->ch_width,
                       .blk_er_lat = flash_defaults[flash_type].er };
    memcpy(t->pg_rd_lat, flash_defaults[flash_type].rd, sizeof(t->pg_rd_lat));
    memcpy(t->pg_wr_lat, flash_defaults[flash_type].wr, sizeof(t->pg_wr_lat));

    /* FEMU's single latencies apply to every page type */
    for (uint32_t i = 0; i < t->cell_bits; i++) {
        if (rd >= 0) {
            t->pg_rd_lat[i] = rd;
        }
        if (wr >= 0) {
            t->pg_wr_lat[i] = wr;
        }
    }
    if ((p->pg_rd_lats && !parse_lats("pg_rd_lats", p->pg_rd_lats, t->cell_bits,
                                      t->pg_rd_lat, errp)) ||
        (p->pg_wr_lats && !parse_lats("pg_wr_lats", p->pg_wr_lats, t->cell_bits,
                                      t->pg_wr_lat, errp))) {
        return false;
    }
    if (er >= 0) {
        t->blk_er_lat = er;
    }
    if (p->ch_xfer_lat >= 0) {
        /* FEMU's ch_xfer_lat: a fixed time per page (0: the channel costs nothing) */
        t->ch_xfer_lat = p->ch_xfer_lat;
        if (!p->ch_xfer_lat) {
            t->ch_mts = 0;
        }
    }
    return true;
}

/* The shared flash's geometry: the blackbox properties (a mixed device uses them too). */
NandGeometry femu_flash_geometry(FemuCtrl *n, uint32_t blks_per_pl)
{
    FemuBbParams *p = &n->bb;
    return (NandGeometry){ .nchs = p->nchs, .luns_per_ch = p->luns_per_ch,
                           .pls_per_lun = p->pls_per_lun, .blks_per_pl = blks_per_pl,
                           .pgs_per_blk = p->pgs_per_blk, .secs_per_pg = p->secs_per_pg,
                           .secsz = p->secsz };
}

/* The FTL for `bytes` of exposed capacity; blocks derived from op_pcent unless given. */
static bool blackbox_config(FemuCtrl *n, uint64_t bytes, FtlConfig *c, Error **errp)
{
    FemuBbParams *p = &n->bb;
    g_autofree char *err = NULL;

    *c = (FtlConfig){
        .geo = femu_flash_geometry(n, p->blks_per_pl),
        .gc_thres_pcent = p->gc_thres_pcent,
        .gc_thres_pcent_high = p->gc_thres_pcent_high,
    };
    if (!femu_fill_timing(p->flash_type, p->pg_rd_lat, p->pg_wr_lat, p->blk_er_lat, p, &c->tm,
                          errp)) {
        return false;
    }
    if (p->op_pcent >= 0 && p->blks_per_pl) {
        error_setg(errp, "give op_pcent or blks_per_pl, not both: with op_pcent the number "
                   "of blocks follows from devsz_mb");
        return false;
    }
    if (p->op_pcent < -1 || p->op_pcent > 400) {
        error_setg(errp, "op_pcent=%d is out of range: allowed 0..400", p->op_pcent);
        return false;
    }
    if (!p->blks_per_pl) {
        /* blocks follow from the capacity and over-provisioning asked for */
        c->geo.blks_per_pl = 1;
        if (!nand_geometry_check(&c->geo, &err) ||
            !ftl_derive_blocks(&c->geo, bytes, p->op_pcent < 0 ? 7 : p->op_pcent, &err)) {
            error_setg(errp, "%s", err);
            return false;
        }
    }
    c->exposed_pages = DIV_ROUND_UP(bytes, nand_page_bytes(&c->geo));
    if (!ftl_config_check(c, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

uint32_t femu_blackbox_blocks(FemuCtrl *n, uint64_t bytes, Error **errp)
{
    FtlConfig c;
    return blackbox_config(n, bytes, &c, errp) ? c.geo.blks_per_pl : 0;
}

FemuMedia *femu_blackbox_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                             uint32_t first_block, Error **errp)
{
    g_autofree char *err = NULL;
    FtlConfig c;
    FemuMedia *m;

    if (!blackbox_config(n, bytes, &c, errp)) {
        return NULL;
    }
    c.shared_nand = shared;
    c.first_block = first_block;
    if (!(m = femu_media_bbssd_new(&c, &err))) {
        error_setg(errp, "%s", err);
        return NULL;
    }
    return m;
}
