/*
 * The blackbox properties -> FtlConfig; see bbssd-params.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "bbssd-params.h"
#include "../media/model-util.h"

bool bbssd_params_units_per_page(uint32_t map_unit_kb, const NandGeometry *g, uint32_t *upp,
                                 char **err)
{
    uint64_t page = nand_page_bytes(g), unit = (uint64_t)map_unit_kb << 10;
    g_autoptr(GString) allowed = g_string_new("0 (the page)");

    *upp = 1;
    if (!map_unit_kb) {
        return true;
    }
    if (unit <= page && page % unit == 0 && femu_is_pow2(page / unit) && unit % g->secsz == 0) {
        *upp = page / unit;
        return true;
    }
    for (uint64_t n = 1; page % n == 0 && page / n >= 1024; n *= 2) {
        if ((page / n) % 1024 == 0 && (page / n) % g->secsz == 0) {
            g_string_append_printf(allowed, ", %" G_GUINT64_FORMAT, page / n >> 10);
        }
    }
    *err = g_strdup_printf("map_unit_kb=%u is out of range for NAND pages of %" G_GUINT64_FORMAT
                           " bytes (secs_per_pg x secsz): the mapping unit is the page or a "
                           "power-of-two fraction of it, whole sectors: allowed %s",
                           map_unit_kb, page, allowed->str);
    return false;
}

bool bbssd_params_ftl_config(const FemuFlashParams *f, const BbssdParams *p, uint64_t bytes,
                             FtlConfig *c, bool own_spare, char **err)
{
    *c = (FtlConfig){
        .geo = femu_flash_geometry(f, f->blks_per_pl),
        .gc_thres_pcent = p->gc_thres_pcent,
        .gc_thres_pcent_high = p->gc_thres_pcent_high,
    };
    if (!ftl_policy_parse(FTL_VICTIM, p->gc_policy, &c->gc_policy, err) ||
        !ftl_policy_parse(FTL_PACING, p->gc_pacing, &c->gc_pacing, err) ||
        !ftl_policy_parse(FTL_STREAM, p->streams, &c->streams, err)) {
        return false;
    }
    if (!flash_params_timing("", f->flash_type, f->pg_rd_lat, f->pg_wr_lat, f->blk_er_lat, f,
                             &c->tm, err)) {
        return false;
    }
    if (p->op_pcent >= 0 && f->blks_per_pl) {
        *err = g_strdup("give op_pcent or blks_per_pl, not both: with op_pcent the number "
                        "of blocks follows from devsz_mb");
        return false;
    }
    if (p->op_pcent < -1 || p->op_pcent > 400) {
        *err = g_strdup_printf("op_pcent=%d is out of range: allowed 0..400", p->op_pcent);
        return false;
    }
    if (!f->blks_per_pl) {
        /*
         * blocks follow from the capacity and over-provisioning asked for; the default 7 %
         * rises on a small drive of long lines to the spare lines GC needs. An FTL with
         * spare units of its own adds and checks them itself: nothing to rise to here.
         */
        c->geo.blks_per_pl = 1;
        if (!nand_geometry_check(&c->geo, err) ||
            !ftl_derive_blocks_spare(&c->geo, bytes, p->op_pcent < 0 ? 7 : p->op_pcent,
                                     own_spare ? 0 : ftl_min_spare_lines(c),
                                     p->op_pcent < 0 && !own_spare, err)) {
            return false;
        }
    }
    if (!bbssd_params_units_per_page(p->map_unit_kb, &c->geo, &c->units_per_pg, err)) {
        return false;
    }
    c->exposed_pages = (bytes + ftl_unit_bytes(c) - 1) / ftl_unit_bytes(c);
    return own_spare || ftl_config_check(c, err);
}

bool bbssd_params_wb_config(const BbssdParams *p, uint64_t unit_bytes, bool vwc,
                            FtlWbConfig *c, char **err)
{
    *c = (FtlWbConfig){
        .unit_bytes = unit_bytes, .bytes = (uint64_t)MAX(p->wb_size_mb, 0) << 20,
        .high_pct = p->wb_high_pct, .low_pct = p->wb_low_pct, .plp = p->wb_plp,
        .ctrl_mw = p->wb_ctrl_mw, .chip_mw = p->wb_chip_mw,
    };
    if (p->wb_size_mb < -1 || p->wb_size_mb > 16384) {
        *err = g_strdup_printf("wb_size_mb=%d is out of range: allowed 0..16384 (MiB of host "
                               "memory)", p->wb_size_mb);
        return false;
    }
    if (p->wb_ctrl_mw > 100000 || p->wb_chip_mw > 100000) {
        *err = g_strdup_printf("wb_ctrl_mw=%u, wb_chip_mw=%u: allowed 0..100000 each",
                               p->wb_ctrl_mw, p->wb_chip_mw);
        return false;
    }
    if (p->wb_size_mb <= 0) {
        return true;        /* no buffer: wb_plp has nothing to protect */
    }
    if (!p->wb_plp && !vwc) {
        *err = g_strdup_printf("wb_size_mb=%d with wb_plp=off needs vwc=1: the buffer is a "
                               "volatile write cache, and the host must know to flush it",
                               p->wb_size_mb);
        return false;
    }
    return ftl_wb_check(c, err);
}

bool bbssd_params_wb_volatile(const BbssdParams *p)
{
    return p->wb_size_mb > 0 && !p->wb_plp;
}

FemuMedia *bbssd_params_media_new(const FemuFlashParams *f, const BbssdParams *p,
                                  const FemuSraParams *sra, uint64_t bytes, NandModel *shared,
                                  uint32_t first_block, bool vwc, const FemuWbData *wb,
                                  char **err)
{
    FtlConfig c;
    FtlWbConfig wb_cfg;
    SraConfig ra_cfg;
    FemuReadAhead ra = { .cfg = &ra_cfg };

    if (!bbssd_params_ftl_config(f, p, bytes, &c, false, err) ||
        !bbssd_params_wb_config(p, ftl_unit_bytes(&c), vwc, &wb_cfg, err) ||
        (sra->on && !sra_params_config(sra, ftl_unit_bytes(&c), c.tm.time_scale,
                                       &ra_cfg, err))) {
        return NULL;
    }
    c.shared_nand = shared;
    c.first_block = first_block;
    return femu_media_bbssd_new(&c, sra->on ? &ra : NULL, wb_cfg.bytes ? &wb_cfg : NULL, wb,
                                err);
}
