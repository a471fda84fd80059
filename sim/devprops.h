/*
 * femu-sim's drive description: the -device femu properties, by the same names, defaults
 * and lists (FEMU_FLASH_PROPS, ...) as the QEMU device, parsed from "k=v,k=v" text or a
 * file of such lines. Properties of the host side only (queues, serial, memdev, ...) are
 * accepted and ignored; unknown ones are refused by name.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_SIM_DEVPROPS_H
#define FEMU_SIM_DEVPROPS_H

#include <stdbool.h>
#include <stdint.h>

#include "media/frontend.h"
#include "nand/flash-params.h"
#include "sra/sra-params.h"
#include "bbssd/bbssd-params.h"
#include "fdp/fdp-params.h"
#include "ocssd/ocssd-params.h"
#include "zns/zns-params.h"

typedef struct SimParams {
    /* the layout's (FEMU_LAYOUT_PROPS) */
    uint32_t femu_mode;
    uint32_t devsz_mb;
    uint32_t num_namespaces;
    char *ns_types;
    char *ns_sizes_mb;
    uint8_t mdts;
    uint8_t vwc;
    uint8_t lba_index;
    bool lba_index_given;
    FemuFrontendConfig frontend_cfg;
    FemuFlashParams flash;
    FemuSraParams sra;
    BbssdParams bbssd;          /* blackbox (and fdp's FTL) */
    ZnsParams zns;
    FdpParams fdp;
    OcParams oc;                /* whitebox */
} SimParams;

/* Every property at its default. */
SimParams *sim_params_new(void);
/* "k=v,..." items in order (a later value wins; ",," is a comma). False and *err. */
bool sim_params_parse(SimParams *p, const char *text, char **err);
/* A file: items separated by ',' or new lines; '#' starts a comment. */
bool sim_params_load(SimParams *p, const char *path, char **err);
/* flash_preset: its properties where none was given (as the device does). */
bool sim_params_finish(SimParams *p, char **err);
void sim_params_free(SimParams *p);
/* Every property as "name=value" lines, for the output's record of the drive. */
char *sim_params_describe(const SimParams *p);

#endif
