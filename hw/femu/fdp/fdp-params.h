/*
 * The fdp kind's properties: their list, expanded by the QEMU device and by femu-sim, the
 * FTL configuration they give (on the blackbox FTL's parameters), each namespace's
 * placement handle list, and the placement identifiers of writes (NVMe's PID: the reclaim
 * group in its top RGIF bits, the placement handle below).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_FDP_PARAMS_H
#define FEMU_FDP_PARAMS_H

#include "../bbssd/bbssd-params.h"
#include "fdp-ftl.h"

typedef struct FdpParams {
    bool on;
    char *ruh_types;
    uint32_t nrg;
    char *ns_ruhs;
    uint32_t erutl_s;
    bool check_state;           /* tests: the FTL's loaded state checked at start */
} FdpParams;

/* P(struct, type, name, field, default), as FEMU_FLASH_PROPS */
#define FDP_PROPS(P, S)                                 \
    P(S, BOOL, "fdp", on, true)                         \
    P(S, STR, "fdp_ruh_types", ruh_types, NULL)         \
    P(S, U32, "fdp_nrg", nrg, 1)                        \
    P(S, STR, "fdp_ns_ruhs", ns_ruhs, NULL)             \
    P(S, U32, "fdp_erutl_s", erutl_s, 0)               \
    P(S, BOOL, "x-fdp-check-state", check_state, false)

/* A namespace's placement handles: PHNDL i is reclaim unit handle ph[i]. */
typedef struct FdpHandles {
    uint32_t nph;
    uint16_t ph[FDP_MAX_RUH];
} FdpHandles;

/*
 * Every function that can fail returns false and sets *err (g_free it), naming the
 * property.
 */

/* fdp_ruh_types (NULL: the default) into c->nruh and c->ruh_type. */
bool fdp_params_ruh_types(const FdpParams *p, FdpFtlConfig *c, char **err);
/* The FTL of `bytes` of fdp namespaces, from the blackbox and flash properties too. */
bool fdp_params_ftl_config(const FdpParams *p, const FemuFlashParams *f,
                           const BbssdParams *b, uint64_t bytes, FdpFtlConfig *c, char **err);
/* Each of `count` fdp namespaces' handle list (fdp_ns_ruhs), into lists[count]. */
bool fdp_params_ns_ruhs(const FdpParams *p, const FdpFtlConfig *c, FdpHandles *lists,
                        uint32_t count, char **err);
/* What can be checked before the sizes are known: the handle types and lists. */
bool fdp_params_check(const FdpParams *p, uint32_t count, char **err);
/*
 * Binds the FTL to its state after the data (fdp_ftl_attach_store); with
 * x-fdp-check-state, the state loaded must pass fdp_ftl_check_consistency too (a walk of
 * every page: for tests of what a kill leaves).
 */
bool fdp_params_attach_state(const FdpParams *p, FdpFtl *ftl, void *store, char **err);
/* Bytes the FTL's state takes after the data (the first fdp namespace's metadata). */
uint64_t fdp_params_meta_bytes(const FdpFtlConfig *c);

/* Bits of the reclaim group in a placement identifier. */
uint8_t fdp_rgif(uint32_t nrg);
uint16_t fdp_pid_of(uint8_t rgif, uint32_t rg, uint32_t ph);
/* A placement identifier's group and handle index: false when either is out of range. */
bool fdp_parse_pid(uint8_t rgif, uint32_t nrg, uint32_t nph, uint16_t pid, uint32_t *rg,
                   uint32_t *ph);
/*
 * Where a write goes: with the placement directive, where its pid says (an invalid one:
 * handle 0 in group 0, and false); without, handle 0 in the groups in turn (*next_rg, the
 * endurance group's).
 */
bool fdp_place_write(uint8_t rgif, uint32_t nrg, uint32_t nph, bool directive, uint16_t pid,
                     uint32_t *next_rg, uint32_t *rg, uint32_t *ph);

#endif
