/*
 * nossd (femu_mode=2): a plain NVM namespace with no media model, the fastest path.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "../femu.h"

static FemuMedia *nossd_media_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                                  uint32_t first_block, Error **errp)
{
    return femu_media_nossd_new();
}

static const FemuNsKind nossd_kind = {
    .name = "nossd",
    .femu_mode = 2,
    .model_name = "FEMU NoSSD Controller",
    .csi = NVME_CSI_NVM,
    .media_new = nossd_media_new,
    .io = femu_nvm_io,
    .writes_in_place = true,
};

FEMU_NS_KIND_REGISTER(nossd_kind)
