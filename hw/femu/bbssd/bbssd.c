/*
 * blackbox (femu_mode=1): a conventional SSD. Its properties -> the FTL's configuration ->
 * its media model (bbssd-media.c on ftl.c); I/O is the NVM command set. FEMU's property
 * names are accepted as they are; op_pcent is new.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "../femu.h"
#include "ftl.h"
#include "bbssd.h"

typedef struct BbssdParams {
    uint32_t gc_thres_pcent;
    uint32_t gc_thres_pcent_high;
    int32_t op_pcent;           /* -1: 7 unless blks_per_pl is given */
} BbssdParams;

static const FemuNsKind bbssd_kind;

static BbssdParams *bbssd_params(FemuCtrl *n)
{
    return femu_ns_kind_params(n, &bbssd_kind);
}

bool femu_blackbox_ftl_config(FemuCtrl *n, uint64_t bytes, FtlConfig *c, uint32_t min_spare,
                              Error **errp)
{
    FemuFlashParams *f = &n->flash;
    BbssdParams *p = bbssd_params(n);
    g_autofree char *err = NULL;

    *c = (FtlConfig){
        .geo = femu_flash_geometry(f, f->blks_per_pl),
        .gc_thres_pcent = p->gc_thres_pcent,
        .gc_thres_pcent_high = p->gc_thres_pcent_high,
    };
    if (!femu_fill_timing("", f->flash_type, f->pg_rd_lat, f->pg_wr_lat, f->blk_er_lat, f,
                          &c->tm, errp)) {
        return false;
    }
    if (p->op_pcent >= 0 && f->blks_per_pl) {
        error_setg(errp, "give op_pcent or blks_per_pl, not both: with op_pcent the number "
                   "of blocks follows from devsz_mb");
        return false;
    }
    if (p->op_pcent < -1 || p->op_pcent > 400) {
        error_setg(errp, "op_pcent=%d is out of range: allowed 0..400", p->op_pcent);
        return false;
    }
    if (!f->blks_per_pl) {
        /* blocks follow from the capacity and over-provisioning asked for */
        c->geo.blks_per_pl = 1;
        if (!nand_geometry_check(&c->geo, &err) ||
            !ftl_derive_blocks_spare(&c->geo, bytes, p->op_pcent < 0 ? 7 : p->op_pcent,
                                     min_spare ? min_spare : FTL_MIN_SPARE_LINES, &err)) {
            error_setg(errp, "%s", err);
            return false;
        }
    }
    c->exposed_pages = DIV_ROUND_UP(bytes, nand_page_bytes(&c->geo));
    if (!min_spare && !ftl_config_check(c, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

static uint32_t bbssd_flash_blocks(FemuCtrl *n, uint64_t bytes, Error **errp)
{
    FtlConfig c;
    return femu_blackbox_ftl_config(n, bytes, &c, 0, errp) ? c.geo.blks_per_pl : 0;
}

static FemuMedia *bbssd_media_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                                  uint32_t first_block, Error **errp)
{
    g_autofree char *err = NULL;
    FtlConfig c;
    SraConfig sra;
    FemuReadAhead ra = { .cfg = &sra };
    FemuMedia *m;

    if (!femu_blackbox_ftl_config(n, bytes, &c, 0, errp)) {
        return NULL;
    }
    if (n->sra.on && !femu_sra_config(&n->sra, nand_page_bytes(&c.geo), c.tm.time_scale,
                                      &sra, errp)) {
        return NULL;
    }
    c.shared_nand = shared;
    c.first_block = first_block;
    if (!(m = femu_media_bbssd_new(&c, n->sra.on ? &ra : NULL, &err))) {
        error_setg(errp, "%s", err);
        return NULL;
    }
    return m;
}

static const Property bbssd_props[] = {
    /* FEMU's 75/95 keep 5% of lines free in the foreground, most of a 7% OP: WAF ~22 */
    DEFINE_PROP_UINT32("gc_thres_pcent", BbssdParams, gc_thres_pcent, 90),
    DEFINE_PROP_UINT32("gc_thres_pcent_high", BbssdParams, gc_thres_pcent_high, 99),
    DEFINE_PROP_INT32("op_pcent", BbssdParams, op_pcent, -1),
};

static const FemuNsKind bbssd_kind = {
    .read_ahead = true,
    .name = "blackbox",
    .femu_mode = 1,
    .model_name = "FEMU BlackBox-SSD Controller",
    .csi = NVME_CSI_NVM,
    .props = bbssd_props,
    .nr_props = ARRAY_SIZE(bbssd_props),
    .params_size = sizeof(BbssdParams),
    .flash_blocks = bbssd_flash_blocks,
    .media_new = bbssd_media_new,
    .io = femu_nvm_io,
};

FEMU_NS_KIND_REGISTER(bbssd_kind)
