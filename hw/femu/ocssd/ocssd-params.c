/*
 * The whitebox properties -> chunk geometry, flash and the media model; see
 * ocssd-params.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <inttypes.h>

#include <glib.h>

#include "ocssd-params.h"

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)

static uint64_t pow2_floor(uint64_t v)
{
    return v ? UINT64_C(1) << (63 - __builtin_clzll(v)) : 0;
}

NandGeometry ocssd_params_nand_geometry(const OcParams *p, const FemuFlashParams *f,
                                        bool alone, uint32_t lba_bytes)
{
    if (!alone) {
        return femu_flash_geometry(f, 0);
    }
    return (NandGeometry){ .nchs = p->lnum_ch, .luns_per_ch = p->lnum_lun,
                           .pls_per_lun = p->lnum_pln, .pgs_per_blk = p->lpgs_per_blk,
                           .secs_per_pg = p->lsecs_per_pg, .secsz = lba_bytes };
}

bool ocssd_params_geometry(const OcParams *p, const FemuFlashParams *f, bool alone,
                           uint64_t bytes, uint32_t lba_bytes, OcGeometry *g, char **err)
{
    NandGeometry ng = ocssd_params_nand_geometry(p, f, alone, lba_bytes);
    uint32_t cell_bits = f->flash_type >= 1 && f->flash_type <= 4 ? f->flash_type : 1;
    uint64_t page = nand_page_bytes(&ng), unit, chunk_bytes, per_pu;
    g_autofree char *why = NULL;

    if (!ng.nchs || !ng.luns_per_ch || !ng.pls_per_lun || !ng.pgs_per_blk || !page ||
        page % lba_bytes) {
        *err = g_strdup_printf("whitebox: a flash page (%s) of %" PRIu64 " bytes must hold "
                               "whole %u-byte sectors, and lnum_ch, lnum_lun, lnum_pln, "
                               "lpgs_per_blk, lsecs_per_pg must be at least 1",
                               alone ? "lsecs_per_pg * lsec_size" : "secs_per_pg * secsz",
                               page, lba_bytes);
        return false;
    }
    unit = oc_flash_unit_sectors(&ng, lba_bytes);
    chunk_bytes = unit * ng.pgs_per_blk * lba_bytes;
    per_pu = bytes / ((uint64_t)ng.nchs * ng.luns_per_ch * chunk_bytes);
    if (!per_pu) {
        *err = g_strdup_printf("whitebox: %" PRIu64 " MiB cannot give every PU (%u groups x "
                               "%u) a chunk of %" PRIu64 " KiB: make the namespace larger "
                               "(devsz_mb, ns_sizes_mb) or the chunks smaller "
                               "(lpgs_per_blk)", bytes / MIB, ng.nchs, ng.luns_per_ch,
                               chunk_bytes / KIB);
        return false;
    }
    *g = (OcGeometry){
        .num_grp = ng.nchs, .num_pu = ng.luns_per_ch,
        .num_chk = (uint32_t)MIN(pow2_floor(per_pu), 1u << 31),
        .clba = (uint32_t)MIN(unit * ng.pgs_per_blk, UINT32_MAX),
        .ws_min = (uint32_t)unit,
        /* a word line: one unit per bit of a cell, when blocks hold whole word lines */
        .ws_opt = (uint32_t)unit * (ng.pgs_per_blk % cell_bits ? 1 : cell_bits),
        .maxoc = p->maxoc, .maxocpu = p->maxocpu, .mccap = p->mccap,
        .sector_bytes = lba_bytes,
    };
    g->mw_cunits = g->ws_opt;
    if (!oc_geometry_check(g, &why)) {
        *err = g_strdup_printf("whitebox: %s", why);
        return false;
    }
    return true;
}

/* The sector size is the LBA size: lsec_size sets it when lba_index was not given. */
static bool check_lsec_size(uint32_t lsec_size, bool given, uint8_t *lba_index, char **err)
{
    uint32_t lba_bytes = *lba_index ? 4096 : 512;

    if (!lsec_size) {
        return true;
    }
    if (lsec_size != 512 && lsec_size != 4096) {
        *err = g_strdup_printf("lsec_size=%u is invalid: allowed 512 or 4096 (bytes: the LBA "
                               "size), or leave it out", lsec_size);
        return false;
    }
    if (!given) {
        *lba_index = lsec_size == 4096;
        return true;
    }
    if (lsec_size != lba_bytes) {
        *err = g_strdup_printf("lsec_size=%u and lba_index=%u disagree: lba_index=%u means "
                               "%u-byte sectors. Allowed: lsec_size=512 with lba_index=0, "
                               "lsec_size=4096 with lba_index=1, or only one of the two",
                               lsec_size, *lba_index, *lba_index, lba_bytes);
        return false;
    }
    return true;
}

bool ocssd_params_check(const OcParams *p, uint32_t count, const char *ns_types,
                        bool lba_index_given, uint8_t *lba_index, char **err)
{
    if (p->lver != 2) {
        *err = g_strdup_printf("lver=%u is not supported: allowed 2 (OCSSD 2.0; 1.2 is not in "
                               "this build)", p->lver);
        return false;
    }
    if (!check_lsec_size(p->lsec_size, lba_index_given, lba_index, err)) {
        return false;
    }
    if (p->lmax_sec_per_rq < 1 || p->lmax_sec_per_rq > OC_MAX_VECTOR) {
        *err = g_strdup_printf("lmax_sec_per_rq=%u is out of range: allowed 1..%d",
                               p->lmax_sec_per_rq, OC_MAX_VECTOR);
        return false;
    }
    if (p->lmetasize > 256 || p->lmetasize % 8) {
        *err = g_strdup_printf("lmetasize=%u is invalid: allowed a multiple of 8 up to 256 "
                               "bytes of OOB metadata per sector", p->lmetasize);
        return false;
    }
    if (count > 1) {
        *err = g_strdup_printf("ns_types='%s': one whitebox (ocssd) namespace per device at "
                               "most (it owns every PU of the flash)",
                               ns_types ? ns_types : "");
        return false;
    }
    return true;
}

uint64_t ocssd_params_meta_bytes(const OcGeometry *g, uint32_t metasize)
{
    uint64_t bytes = oc_store_size(g) + g->nr_sectors * metasize;

    return (bytes + OC_META_ALIGN - 1) / OC_META_ALIGN * OC_META_ALIGN;
}

bool ocssd_params_size_ns(const OcParams *p, const FemuFlashParams *f, bool alone,
                          uint32_t lba_bytes, uint32_t nsid, uint64_t *bytes, bool derived,
                          uint64_t *meta_bytes, char **err)
{
    OcGeometry g;

    if (!ocssd_params_geometry(p, f, alone, *bytes, lba_bytes, &g, err)) {
        return false;
    }
    if (g.nr_sectors * lba_bytes != *bytes) {
        uint64_t fit = g.nr_sectors * lba_bytes;
        if (!derived) {
            *err = g_strdup_printf("whitebox namespace %u of %" PRIu64 " MiB is not %u groups "
                                   "x %u PUs x a power-of-two number of chunks of %" PRIu64
                                   " KiB: use %" PRIu64 " MiB (devsz_mb / ns_sizes_mb)", nsid,
                                   *bytes / MIB, g.num_grp, g.num_pu,
                                   (uint64_t)g.clba * lba_bytes / KIB, fit / MIB);
            return false;
        }
        *bytes = fit;
    }
    *meta_bytes = ocssd_params_meta_bytes(&g, p->lmetasize);
    return true;
}

bool ocssd_params_flash_config(const OcParams *p, const FemuFlashParams *f, bool alone,
                               uint64_t bytes, uint32_t lba_bytes, NandModel *shared,
                               uint32_t first_block, OcFlashConfig *c, char **err)
{
    OcGeometry g;

    if (!ocssd_params_geometry(p, f, alone, bytes, lba_bytes, &g, err)) {
        return false;
    }
    *c = (OcFlashConfig){
        .geo = ocssd_params_nand_geometry(p, f, alone, lba_bytes),
        .sector_bytes = lba_bytes,
        .chunks_per_pu = g.num_chk,
        .cache_units = g.mw_cunits / g.ws_min,
        .shared_nand = shared,
        .first_block = first_block,
    };
    c->geo.blks_per_pl = g.num_chk;
    if (shared) {
        c->geo = shared->geo;
        c->tm = shared->tm;
        return true;
    }
    return flash_params_timing("", f->flash_type, f->pg_rd_lat, f->pg_wr_lat, f->blk_er_lat,
                               f, &c->tm, err);
}

uint32_t ocssd_params_flash_blocks(const OcParams *p, const FemuFlashParams *f, bool alone,
                                   uint64_t bytes, uint32_t lba_bytes, char **err)
{
    OcGeometry g;

    return ocssd_params_geometry(p, f, alone, bytes, lba_bytes, &g, err) ? g.num_chk : 0;
}

FemuMedia *ocssd_params_media_new(const OcParams *p, const FemuFlashParams *f, bool alone,
                                  uint64_t bytes, uint32_t lba_bytes, NandModel *shared,
                                  uint32_t first_block, char **err)
{
    g_autofree char *why = NULL;
    OcFlashConfig c;
    OcGeometry g;
    FemuMedia *m;

    if (!ocssd_params_geometry(p, f, alone, bytes, lba_bytes, &g, err) ||
        !ocssd_params_flash_config(p, f, alone, bytes, lba_bytes, shared, first_block, &c,
                                   err)) {
        return NULL;
    }
    m = femu_media_ocssd_new(&c, g.clba, &why);
    if (!m) {
        *err = g_strdup_printf("whitebox: %s", why);
    }
    return m;
}
