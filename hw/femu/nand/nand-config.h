/*
 * The flash's -device properties (flash-params.h has their list and what they give), and
 * the presets, which set properties on the device object.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_NAND_CONFIG_H
#define HW_FEMU_NAND_CONFIG_H

#include "../qdev-params.h"
#include "flash-params.h"

/* Properties with offsets relative to FemuFlashParams. */
extern const Property femu_flash_props[];
extern const size_t femu_flash_nr_props;
/*
 * flash_preset=NAME (presets.h): sets the preset's properties on obj where they still have
 * their default values. False and *errp for an unknown name.
 */
bool femu_flash_apply_preset(Object *obj, const char *name, Error **errp);
/* flash_params_options and flash_params_timing (flash-params.h) with QEMU's errors. */
bool femu_flash_options(const FemuFlashParams *p, NandTiming *t, Error **errp);
bool femu_fill_timing(const char *prefix, uint8_t flash_type, int64_t rd, int64_t wr,
                      int64_t er, const FemuFlashParams *p, NandTiming *t, Error **errp);

#endif
