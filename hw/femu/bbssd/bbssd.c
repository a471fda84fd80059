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

static const FemuNsKind bbssd_kind;

static BbssdParams *bbssd_params(FemuCtrl *n)
{
    return femu_ns_kind_params(n, &bbssd_kind);
}

BbssdParams *femu_blackbox_params(FemuCtrl *n)
{
    return bbssd_params(n);
}

static uint32_t bbssd_flash_blocks(FemuCtrl *n, uint64_t bytes, Error **errp)
{
    g_autofree char *err = NULL;
    FtlConfig c;

    if (!bbssd_params_ftl_config(&n->flash, bbssd_params(n), bytes, &c, 0, &err)) {
        error_setg(errp, "%s", err);
        return 0;
    }
    return c.geo.blks_per_pl;
}

static FemuMedia *bbssd_media_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                                  uint32_t first_block, Error **errp)
{
    g_autofree char *err = NULL;
    FemuMedia *m = bbssd_params_media_new(&n->flash, bbssd_params(n), &n->sra, bytes,
                                          shared, first_block, &err);

    if (!m) {
        error_setg(errp, "%s", err);
    }
    return m;
}

static const Property bbssd_props[] = { BBSSD_PROPS(FEMU_QDEV_ITEM, BbssdParams) };

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
