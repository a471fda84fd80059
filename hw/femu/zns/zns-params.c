/*
 * The zns properties -> zones, flash, PLP and the media model; see zns-params.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "zns-params.h"

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)

static uint64_t round_up(uint64_t v, uint64_t align)
{
    return (v + align - 1) / align * align;
}

bool zns_params_plp_on(const ZnsParams *p)
{
    return p->plp && *p->plp;
}

bool zns_params_plp_mode(const ZnsParams *p, uint32_t nr_ns, uint32_t nsid, PlpMode *mode,
                         char **err)
{
    static const char *const names[] = { "none", "selective", "full" };
    g_auto(GStrv) words = g_strsplit_set(p->plp, ":,", -1);
    guint nw = g_strv_length(words);

    if (nw != 1 && nw != nr_ns) {
        *err = g_strdup_printf("plp='%s': give one of none, selective, full for every "
                               "namespace, or one per namespace separated by ':' "
                               "(namespaces=%u)", p->plp, nr_ns);
        return false;
    }
    for (PlpMode m = PLP_MODE_NONE; m <= PLP_MODE_FULL; m++) {
        if (!strcmp(words[nw == 1 ? 0 : nsid - 1], names[m])) {
            *mode = m;
            return true;
        }
    }
    *err = g_strdup_printf("plp='%s': '%s' is not a mode: allowed none, selective, full",
                           p->plp, words[nw == 1 ? 0 : nsid - 1]);
    return false;
}

uint64_t zns_params_plp_store_bytes(const ZnsParams *p, uint32_t lba_bytes, uint64_t bytes)
{
    uint64_t zone = (uint64_t)p->zone_size_mb * MIB;

    return round_up(plp_store_size(lba_bytes, (uint64_t)p->plp_buf_mb * MIB, bytes / zone),
                    ZNS_META_ALIGN);
}

void zns_params_plp_config(const ZnsParams *p, uint32_t lba_bytes, PlpConfig *c)
{
    *c = (PlpConfig){
        .sector_bytes = lba_bytes,
        .plp_bytes = (uint64_t)p->plp_buf_mb * MIB,
        .buf_bytes = (uint64_t)p->buf_mb * MIB,
        .flush_pct = p->plp_flush_pct,
        .method = p->plp_flush && !strcmp(p->plp_flush, "normal") ? PLP_FLUSH_NORMAL
                                                                   : PLP_FLUSH_BALANCED,
        .ctrl_mw = p->plp_ctrl_mw,
        .chip_mw = p->plp_chip_mw,
    };
}

bool zns_params_zone_config(const ZnsParams *p, uint64_t bytes, uint8_t lba_shift,
                            ZoneConfig *c, char **err)
{
    uint64_t zone_bytes = (uint64_t)p->zone_size_mb * MIB;
    uint64_t cap_bytes = p->zone_cap ? p->zone_cap : zone_bytes;
    uint64_t lba = 1ULL << lba_shift;

    if (cap_bytes > zone_bytes || cap_bytes % lba) {
        *err = g_strdup_printf("zns_zone_cap=%" PRIu64 " is invalid: allowed a multiple of "
                               "the LBA size (%" PRIu64 " bytes) up to the zone size (%"
                               PRIu64 " bytes)", cap_bytes, lba, zone_bytes);
        return false;
    }
    *c = (ZoneConfig){
        .nr_zones = bytes / zone_bytes,
        .zone_size = zone_bytes / lba,
        .zone_cap = cap_bytes / lba,
        .max_open = p->max_open,
        .max_active = p->max_active,
        .zde_bytes = p->zd_ext_size,
        .cross_zone_read = p->cross_zone_read,
        .lba_bytes = lba,
    };
    return zone_config_check(c, err);
}

static bool check_plp(const ZnsParams *p, uint8_t vwc, uint32_t nr_ns, bool all_zoned,
                      char **err)
{
    PlpMode mode;

    if (!zns_params_plp_on(p)) {
        if (p->plp_zones && *p->plp_zones) {
            *err = g_strdup_printf("plp_zones='%s' needs plp=selective", p->plp_zones);
            return false;
        }
        return true;
    }
    for (uint32_t nsid = 1; nsid <= nr_ns; nsid++) {
        if (!zns_params_plp_mode(p, nr_ns, nsid, &mode, err)) {
            return false;
        }
    }
    if (!all_zoned) {
        *err = g_strdup("plp= needs every namespace zoned (femu_mode=3 without ns_types)");
        return false;
    }
    if (!vwc) {
        *err = g_strdup("plp= needs vwc=1: the non-PLP buffer is a volatile write cache "
                        "that the host flushes");
        return false;
    }
    if (p->plp_flush && *p->plp_flush && strcmp(p->plp_flush, "balanced") &&
        strcmp(p->plp_flush, "normal")) {
        *err = g_strdup_printf("plp_flush='%s': allowed balanced or normal", p->plp_flush);
        return false;
    }
    if (p->plp_flush_pct < 1 || p->plp_flush_pct > 100) {
        *err = g_strdup_printf("plp_flush_pct=%u is out of range: allowed 1..100",
                               p->plp_flush_pct);
        return false;
    }
    if (p->plp_buf_mb > 16384 || p->buf_mb > 16384) {
        *err = g_strdup_printf("plp_buf_mb=%u, buf_mb=%u: allowed 0..16384 each (MiB of host "
                               "memory)", p->plp_buf_mb, p->buf_mb);
        return false;
    }
    if (p->plp_ctrl_mw > 100000 || p->plp_chip_mw > 100000) {
        *err = g_strdup_printf("plp_ctrl_mw=%u, plp_chip_mw=%u: allowed 0..100000 each",
                               p->plp_ctrl_mw, p->plp_chip_mw);
        return false;
    }
    return true;
}

bool zns_params_check(const ZnsParams *p, uint8_t mdts, uint8_t vwc, uint32_t nr_ns,
                      bool all_zoned, char **err)
{
    uint32_t z = p->zone_size_mb;

    if (z < 1 || z > 65536 || (z & (z - 1))) {
        *err = g_strdup_printf("zns_zone_size_mb=%u is invalid: allowed a power of two from "
                               "1 to 65536 (Linux needs power-of-two zones)", z);
        return false;
    }
    if (p->zasl > 15 || (mdts && p->zasl > mdts)) {
        *err = g_strdup_printf("zns_zasl=%u is out of range: allowed 0 (= mdts) .. mdts=%u",
                               p->zasl, mdts);
        return false;
    }
    return check_plp(p, vwc, nr_ns, all_zoned, err);
}

bool zns_params_size_ns(const ZnsParams *p, uint8_t lba_shift, uint32_t nsid,
                        uint64_t all_bytes, uint64_t *bytes, bool derived,
                        uint64_t *meta_bytes, char **err)
{
    uint64_t zone = (uint64_t)p->zone_size_mb * MIB;
    ZoneConfig c;

    if (derived) {
        *bytes = *bytes / zone * zone;
    }
    if (*bytes < zone || *bytes % zone) {
        *err = g_strdup_printf("namespace %u of %" PRIu64 " MiB is not a whole number of "
                               "zones of zns_zone_size_mb=%u (devsz_mb / ns_sizes_mb)", nsid,
                               *bytes / MIB, p->zone_size_mb);
        return false;
    }
    /* a bad configuration stops here, before the backend is sized for its state */
    if (!zns_params_zone_config(p, *bytes, lba_shift, &c, err)) {
        return false;
    }
    *meta_bytes = round_up(zone_store_size(&c), ZNS_META_ALIGN);
    if (nsid == 1 && zns_params_plp_on(p)) {
        *meta_bytes += zns_params_plp_store_bytes(p, 1u << lba_shift, all_bytes);
    }
    return true;
}

bool zns_params_flash_config(const ZnsParams *p, const FemuFlashParams *f, uint64_t bytes,
                             NandModel *shared, uint32_t first_block, ZnsFlashConfig *c,
                             char **err)
{
    uint64_t zone = (uint64_t)p->zone_size_mb * MIB;

    *c = (ZnsFlashConfig){
        .geo = { .nchs = p->num_ch, .luns_per_ch = p->num_lun, .pls_per_lun = p->num_plane,
                 .blks_per_pl = p->num_blk, .pgs_per_blk = f->pgs_per_blk,
                 .secs_per_pg = f->secs_per_pg, .secsz = f->secsz },
        .nr_zones = bytes / zone,
        .zone_bytes = zone,
        .zone_cap_bytes = p->zone_cap ? p->zone_cap : zone,
        .wbuf_zones = p->wbuf_zones ? p->wbuf_zones : (p->max_open ? p->max_open : 8),
        .shared_nand = shared,
        .first_block = first_block,
    };
    if (shared) {
        c->geo = shared->geo;
        c->tm = shared->tm;
    } else if (!flash_params_timing("zns_", p->flash_type, p->pg_rd_lat, p->pg_wr_lat,
                                    p->blk_er_lat, f, &c->tm, err)) {
        return false;
    }
    c->stripe = p->stripe ? p->stripe : c->geo.nchs * c->geo.luns_per_ch;
    c->wbuf_bytes = p->wbuf_kb ? (uint64_t)p->wbuf_kb * KIB
                               : 2ULL * c->stripe * nand_page_bytes(&c->geo);
    if (shared || !c->geo.blks_per_pl) {
        if (!shared) {
            c->geo.blks_per_pl = 1;
        }
        return zns_flash_derive_blocks(c, err);
    }
    return true;
}

uint32_t zns_params_flash_blocks(const ZnsParams *p, const FemuFlashParams *f, uint64_t bytes,
                                 char **err)
{
    uint64_t zone = (uint64_t)p->zone_size_mb * MIB;
    ZnsFlashConfig c = {
        .geo = femu_flash_geometry(f, 1),
        .nr_zones = bytes / zone,
        .zone_bytes = zone,
        .zone_cap_bytes = p->zone_cap ? p->zone_cap : zone,
        .wbuf_zones = 1,
    };

    c.stripe = p->stripe ? p->stripe : c.geo.nchs * c.geo.luns_per_ch;
    c.wbuf_bytes = 2ULL * c.stripe * nand_page_bytes(&c.geo);
    return zns_flash_derive_blocks(&c, err) ? c.geo.blks_per_pl : 0;
}

FemuMedia *zns_params_media_new(const ZnsParams *p, const FemuFlashParams *f,
                                const FemuSraParams *sra, uint64_t bytes, NandModel *shared,
                                uint32_t first_block, const FemuReadAhead *ra,
                                const PlpConfig *plp, char **err)
{
    ZnsFlashConfig c;
    SraConfig ra_cfg;
    FemuReadAhead with_cfg = *ra;

    if (!zns_params_flash_config(p, f, bytes, shared, first_block, &c, err) ||
        (sra->on && !sra_params_config(sra, nand_page_bytes(&c.geo), c.tm.time_scale,
                                       &ra_cfg, err)) ||
        !zns_flash_config_check(&c, err)) {
        return NULL;
    }
    with_cfg.cfg = &ra_cfg;
    return femu_media_zns_new(&c, sra->on ? &with_cfg : NULL, plp, err);
}

uint64_t zns_params_zasl_bytes(const ZnsParams *p, uint8_t mdts)
{
    uint8_t zasl = p->zasl ? p->zasl : mdts;
    return zasl ? 4096ULL << zasl : 0;
}
