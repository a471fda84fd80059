/*
 * The QEMU side of the property lists the QEMU-free headers keep (FEMU_FLASH_PROPS, ...):
 * each P(struct, type, name, field, default) becomes a qdev Property. femu-sim expands the
 * same lists into its own table, so a drive is described by the same names in both.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_QDEV_PARAMS_H
#define HW_FEMU_QDEV_PARAMS_H

#include "hw/qdev-properties.h"

#define FEMU_QDEV_PROP(S, T, name, field, def) FEMU_QDEV_##T(name, S, field, def)
#define FEMU_QDEV_U8(name, S, field, def) DEFINE_PROP_UINT8(name, S, field, def)
#define FEMU_QDEV_U32(name, S, field, def) DEFINE_PROP_UINT32(name, S, field, def)
#define FEMU_QDEV_I32(name, S, field, def) DEFINE_PROP_INT32(name, S, field, def)
#define FEMU_QDEV_U64(name, S, field, def) DEFINE_PROP_UINT64(name, S, field, def)
#define FEMU_QDEV_I64(name, S, field, def) DEFINE_PROP_INT64(name, S, field, def)
#define FEMU_QDEV_BOOL(name, S, field, def) DEFINE_PROP_BOOL(name, S, field, def)
#define FEMU_QDEV_SIZE(name, S, field, def) DEFINE_PROP_SIZE(name, S, field, def)
#define FEMU_QDEV_STR(name, S, field, def) DEFINE_PROP_STRING(name, S, field)
/* One array element per list entry */
#define FEMU_QDEV_ITEM(S, T, name, field, def) FEMU_QDEV_PROP(S, T, name, field, def),

#endif
