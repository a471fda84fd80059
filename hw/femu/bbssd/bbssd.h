/*
 * The blackbox kind's properties, for the kinds that build on the same FTL parameters
 * (fdp: op_pcent, gc_thres_pcent, gc_thres_pcent_high and the flash geometry mean the
 * same there).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_BBSSD_H
#define HW_FEMU_BBSSD_H

#include "../femu.h"
#include "bbssd-params.h"

/* The blackbox properties, which fdp's FTL builds on (fdp_params_ftl_config). */
BbssdParams *femu_blackbox_params(FemuCtrl *n);

#endif
