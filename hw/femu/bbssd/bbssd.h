/*
 * The blackbox kind's FTL configuration from the device's properties, for the kinds that
 * build on the same FTL parameters (fdp: op_pcent, gc_thres_pcent, gc_thres_pcent_high and
 * the flash geometry mean the same there).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_BBSSD_H
#define HW_FEMU_BBSSD_H

#include "../femu.h"
#include "bbssd-params.h"

/*
 * The FTL for `bytes` of exposed capacity; blocks derived from op_pcent unless given.
 * min_spare: the spare blocks per plane beyond the data that the FTL needs (0: the
 * blackbox FTL's, whose other limits are checked too; another FTL checks its own).
 */
bool femu_blackbox_ftl_config(FemuCtrl *n, uint64_t bytes, FtlConfig *c, uint32_t min_spare,
                              Error **errp);

#endif
