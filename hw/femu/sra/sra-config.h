/*
 * Sequential read-ahead's -device properties (sra-params.h has their list and meaning).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_SRA_CONFIG_H
#define HW_FEMU_SRA_CONFIG_H

#include "../qdev-params.h"
#include "sra-params.h"

/* Properties with offsets relative to FemuSraParams. */
extern const Property femu_sra_props[];
extern const size_t femu_sra_nr_props;

/* sra_params_config with QEMU's errors */
bool femu_sra_config(const FemuSraParams *p, uint64_t page_bytes, uint32_t time_scale,
                     SraConfig *c, Error **errp);

#endif
