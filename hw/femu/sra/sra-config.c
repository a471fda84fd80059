/*
 * The sra_* properties; see sra-config.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "sra-config.h"

const Property femu_sra_props[] = { FEMU_SRA_PROPS(FEMU_QDEV_ITEM, FemuSraParams) };
const size_t femu_sra_nr_props = ARRAY_SIZE(femu_sra_props);

bool femu_sra_config(const FemuSraParams *p, uint64_t page_bytes, uint32_t time_scale,
                     SraConfig *c, Error **errp)
{
    g_autofree char *err = NULL;

    if (!sra_params_config(p, page_bytes, time_scale, c, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}
