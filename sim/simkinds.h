/*
 * femu-sim's kinds beyond nossd and blackbox, each in a file of its own (simkind-*.c),
 * gathered in sim_kinds[] by simdev.c.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_SIM_SIMKINDS_H
#define FEMU_SIM_SIMKINDS_H

#include "simdev.h"

extern const SimKind sim_zns;       /* femu_mode=3 */
extern const SimKind sim_fdp;       /* femu_mode=4 */
extern const SimKind sim_ocssd;     /* femu_mode=0, whitebox */

#endif
