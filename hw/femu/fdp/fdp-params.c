/*
 * The fdp properties -> FdpFtlConfig and handle lists; placement identifiers. See
 * fdp-params.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <inttypes.h>

#include <glib.h>

#include "fdp-params.h"

#define NS_PER_S UINT64_C(1000000000)

bool fdp_params_ruh_types(const FdpParams *p, FdpFtlConfig *c, char **err)
{
    const char *s = p->ruh_types ? p->ruh_types : "ii:ii:ii:ii";
    g_auto(GStrv) parts = g_strsplit(s, ":", -1);
    uint32_t count = g_strv_length(parts);

    if (count < 1 || count > FDP_MAX_RUH) {
        *err = g_strdup_printf("fdp_ruh_types='%s' must list 1..%d reclaim unit handles ('ii' "
                               "or 'pi', separated by ':')", s, FDP_MAX_RUH);
        return false;
    }
    for (uint32_t i = 0; i < count; i++) {
        const char *t = g_strstrip(parts[i]);
        if (!g_ascii_strcasecmp(t, "ii")) {
            c->ruh_type[i] = FDP_RUH_INITIALLY_ISOLATED;
        } else if (!g_ascii_strcasecmp(t, "pi")) {
            c->ruh_type[i] = FDP_RUH_PERSISTENTLY_ISOLATED;
        } else {
            *err = g_strdup_printf("fdp_ruh_types='%s': '%s' is not a handle type: allowed "
                                   "'ii' (Initially Isolated) or 'pi' (Persistently "
                                   "Isolated)", s, t);
            return false;
        }
    }
    c->nruh = count;
    return true;
}

bool fdp_params_ftl_config(const FdpParams *p, const FemuFlashParams *f,
                           const BbssdParams *b, uint64_t bytes, FdpFtlConfig *c, char **err)
{
    FtlConfig bc;
    uint32_t chips, npi = 0;

    *c = (FdpFtlConfig){ .nrg = p->nrg };
    if (!fdp_params_ruh_types(p, c, err) ||
        !bbssd_params_ftl_config(f, b, bytes, &bc, true, err)) {
        return false;
    }
    if (bc.units_per_pg > 1) {
        *err = g_strdup_printf("map_unit_kb=%u applies to blackbox drives: the FDP FTL maps "
                               "whole NAND pages (give map_unit_kb=%" G_GUINT64_FORMAT
                               ", the page, over a preset's)", b->map_unit_kb,
                               nand_page_bytes(&bc.geo) >> 10);
        return false;
    }
    if (b->streams && *b->streams && ftl_stream_of(&bc.streams)->nstreams != 1) {
        /*
         * FDP's streams are its handles, and its GC keeps their data apart already; unset,
         * the blackbox's default (host-gc) does not apply
         */
        *err = g_strdup_printf("streams=%s applies to blackbox drives: an FDP drive places "
                               "pages by reclaim unit handle (fdp_ruh_types)",
                               bc.streams.policy->name);
        return false;
    }
    chips = bc.geo.nchs * bc.geo.luns_per_ch;
    if (p->nrg < 1 || p->nrg > FDP_MAX_RG || chips % p->nrg) {
        *err = g_strdup_printf("fdp_nrg=%u: reclaim groups must divide the %u chips (nchs x "
                               "luns_per_ch), 1..%d", p->nrg, chips, FDP_MAX_RG);
        return false;
    }
    if (p->erutl_s > 86400 * 365) {
        *err = g_strdup_printf("fdp_erutl_s=%u is out of range: allowed 0 (no limit)..%u",
                               p->erutl_s, 86400 * 365);
        return false;
    }
    for (uint32_t i = 0; i < c->nruh; i++) {
        npi += c->ruh_type[i] == FDP_RUH_PERSISTENTLY_ISOLATED;
    }
    c->geo = bc.geo;
    c->tm = bc.tm;
    c->exposed_pages = bc.exposed_pages;
    c->gc_thres_pcent = bc.gc_thres_pcent;
    c->gc_thres_pcent_high = bc.gc_thres_pcent_high;
    c->gc_policy = bc.gc_policy;
    /* unset: the FDP FTL's own default (burst), not the blackbox's */
    c->gc_pacing = b->gc_pacing && *b->gc_pacing ? bc.gc_pacing : (FtlPolicyChoice){ 0 };
    c->ru_time_limit_ns = (uint64_t)p->erutl_s * NS_PER_S;
    if (!f->blks_per_pl) {
        /* op_pcent is spare beyond the units the handles and GC keep open */
        c->geo.blks_per_pl += c->nruh + 1 + npi + FDP_GC_SPARE_RUS;
    }
    return fdp_ftl_config_check(c, err);
}

bool fdp_params_ns_ruhs(const FdpParams *p, const FdpFtlConfig *c, FdpHandles *lists,
                        uint32_t count, char **err)
{
    const char *s = p->ns_ruhs;
    g_auto(GStrv) nss = NULL;

    if (!s) {
        for (uint32_t i = 0; i < count; i++) {
            lists[i].nph = c->nruh;
            for (uint32_t h = 0; h < c->nruh; h++) {
                lists[i].ph[h] = h;
            }
        }
        return true;
    }
    nss = g_strsplit(s, "/", -1);
    if (g_strv_length(nss) != count) {
        *err = g_strdup_printf("fdp_ns_ruhs='%s' must give one handle list per fdp namespace "
                               "(%u), separated by '/'", s, count);
        return false;
    }
    for (uint32_t i = 0; i < count; i++) {
        g_auto(GStrv) ids = g_strsplit(nss[i], ".", -1);
        uint32_t k = g_strv_length(ids);

        if (k < 1 || k > c->nruh) {
            *err = g_strdup_printf("fdp_ns_ruhs='%s': namespace list %u must name 1..%u "
                                   "handles (separated by '.')", s, i + 1, c->nruh);
            return false;
        }
        for (uint32_t j = 0; j < k; j++) {
            guint64 id;
            if (!g_ascii_string_to_unsigned(g_strstrip(ids[j]), 10, 0, c->nruh - 1, &id,
                                            NULL)) {
                *err = g_strdup_printf("fdp_ns_ruhs='%s': '%s' is not a handle: allowed "
                                       "0..%u (fdp_ruh_types lists %u)", s, ids[j],
                                       c->nruh - 1, c->nruh);
                return false;
            }
            for (uint32_t x = 0; x < j; x++) {
                if (lists[i].ph[x] == id) {
                    *err = g_strdup_printf("fdp_ns_ruhs='%s': handle %" PRIu64 " twice in "
                                           "namespace list %u", s, (uint64_t)id, i + 1);
                    return false;
                }
            }
            lists[i].ph[j] = id;
        }
        lists[i].nph = k;
    }
    return true;
}

bool fdp_params_check(const FdpParams *p, uint32_t count, char **err)
{
    g_autofree FdpHandles *lists = g_new0(FdpHandles, MAX(count, 1));
    FdpFtlConfig c = { 0 };

    /* the sizes are not known yet: the types and lists are checked here, the rest later */
    return fdp_params_ruh_types(p, &c, err) && fdp_params_ns_ruhs(p, &c, lists, count, err);
}

bool fdp_params_attach_state(const FdpParams *p, FdpFtl *ftl, void *store, char **err)
{
    g_autofree char *why = NULL;

    if (!fdp_ftl_attach_store(ftl, store, &why)) {
        *err = g_strdup_printf("fdp: the placement state in the backend: %s", why);
        return false;
    }
    if (p->check_state && !fdp_ftl_check_consistency(ftl, &why)) {
        *err = g_strdup_printf("x-fdp-check-state: the placement state loaded is not "
                               "consistent: %s", why);
        return false;
    }
    return true;
}

uint64_t fdp_params_meta_bytes(const FdpFtlConfig *c)
{
    return (fdp_ftl_store_bytes(c) + 4095) / 4096 * 4096;
}

uint8_t fdp_rgif(uint32_t nrg)
{
    return nrg > 1 ? 32 - __builtin_clz(nrg - 1) : 0;
}

uint16_t fdp_pid_of(uint8_t rgif, uint32_t rg, uint32_t ph)
{
    return rgif ? (rg << (16 - rgif)) | ph : ph;
}

bool fdp_parse_pid(uint8_t rgif, uint32_t nrg, uint32_t nph, uint16_t pid, uint32_t *rg,
                   uint32_t *ph)
{
    *rg = rgif ? pid >> (16 - rgif) : 0;
    *ph = rgif ? pid & ((1u << (16 - rgif)) - 1) : pid;
    return *rg < nrg && *ph < nph;
}

bool fdp_place_write(uint8_t rgif, uint32_t nrg, uint32_t nph, bool directive, uint16_t pid,
                     uint32_t *next_rg, uint32_t *rg, uint32_t *ph)
{
    if (!directive) {
        /* the controller chooses the group; in turn, so that no group fills first */
        *rg = (*next_rg)++ % nrg;
        *ph = 0;
        return true;
    }
    if (!fdp_parse_pid(rgif, nrg, nph, pid, rg, ph)) {
        *rg = *ph = 0;
        return false;
    }
    return true;
}
