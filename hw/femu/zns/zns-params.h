/*
 * The zns kind's properties (FEMU's names where they exist): their list, expanded by the
 * QEMU device and by femu-sim, and what they give: the zones, the flash they sit on, the
 * power-loss protection, the media model, and the namespace sizes they allow.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_ZNS_PARAMS_H
#define FEMU_ZNS_PARAMS_H

#include "../media/media.h"
#include "../nand/flash-params.h"
#include "../plp/plp.h"
#include "../sra/sra-params.h"
#include "zone.h"
#include "zns-flash.h"

#define ZNS_META_ALIGN (UINT64_C(1) << 20)   /* the zone state and PLP store, in the backend */

typedef struct ZnsParams {
    uint32_t zone_size_mb;
    uint64_t zone_cap;          /* bytes; 0: the zone size */
    uint32_t max_open;          /* 0: no limit */
    uint32_t max_active;
    uint32_t zd_ext_size;       /* bytes, a multiple of 64 */
    bool cross_zone_read;
    uint8_t zasl;               /* zone append limit, 4 KiB << zasl; 0: mdts */
    uint32_t num_ch;
    uint32_t num_lun;
    uint32_t num_plane;
    uint32_t num_blk;           /* 0: just enough for the zones */
    uint8_t flash_type;
    int64_t pg_rd_lat;
    int64_t pg_wr_lat;
    int64_t blk_er_lat;
    uint32_t stripe;            /* chips per zone; 0: all */
    uint32_t wbuf_kb;           /* per-zone write buffer; 0: two program units */
    uint32_t wbuf_zones;        /* zones holding a buffer at once; 0: max_open or 8 */
    /* power-loss protection (plp/); plp unset: none, the timing-only per-zone buffers */
    char *plp;                  /* none|selective|full, one for all or one per namespace */
    char *plp_zones;            /* durable zones of each namespace in selective mode */
    char *plp_flush;            /* balanced|normal: the power-loss flush applied */
    uint32_t plp_buf_mb;        /* PLP (capacitor-backed) region */
    uint32_t buf_mb;            /* non-PLP region */
    uint32_t plp_flush_pct;
    uint32_t plp_ctrl_mw;
    uint32_t plp_chip_mw;
} ZnsParams;

/* P(struct, type, name, field, default), as FEMU_FLASH_PROPS */
#define ZNS_PROPS(P, S)                                         \
    P(S, U32, "zns_num_ch", num_ch, 8)                          \
    P(S, U32, "zns_num_lun", num_lun, 4)                        \
    P(S, U32, "zns_num_plane", num_plane, 1)                    \
    P(S, U32, "zns_num_blk", num_blk, 0)                        \
    P(S, U8, "zns_flash_type", flash_type, 3)                   \
    P(S, I64, "zns_pg_rd_lat", pg_rd_lat, -1)                   \
    P(S, I64, "zns_pg_wr_lat", pg_wr_lat, -1)                   \
    P(S, I64, "zns_blk_er_lat", blk_er_lat, -1)                 \
    P(S, U32, "zns_max_open", max_open, 0)                      \
    P(S, U32, "zns_max_active", max_active, 0)                  \
    P(S, U32, "zns_zd_ext_size", zd_ext_size, 0)                \
    P(S, SIZE, "zns_zone_cap", zone_cap, 0)                     \
    P(S, U32, "zns_zone_size_mb", zone_size_mb, 16)             \
    P(S, BOOL, "zns_cross_zone_read", cross_zone_read, false)   \
    P(S, U8, "zns_zasl", zasl, 0)                               \
    P(S, U32, "zns_stripe", stripe, 0)                          \
    P(S, U32, "zns_wbuf_kb", wbuf_kb, 0)                        \
    P(S, U32, "zns_wbuf_zones", wbuf_zones, 0)                  \
    P(S, STR, "plp", plp, NULL)                                 \
    P(S, STR, "plp_zones", plp_zones, NULL)                     \
    P(S, STR, "plp_flush", plp_flush, NULL)                     \
    P(S, U32, "plp_buf_mb", plp_buf_mb, 32)                     \
    P(S, U32, "buf_mb", buf_mb, 64)                             \
    P(S, U32, "plp_flush_pct", plp_flush_pct, 70)               \
    P(S, U32, "plp_ctrl_mw", plp_ctrl_mw, 2000)                 \
    P(S, U32, "plp_chip_mw", plp_chip_mw, 150)

/*
 * Every function that can fail returns false (or NULL, or 0) and sets *err (g_free it),
 * naming the property.
 */

/* Power-loss protection is on: plp= names a mode. */
bool zns_params_plp_on(const ZnsParams *p);
/* Namespace nsid's mode, from plp=: one word for every namespace, or one per namespace. */
bool zns_params_plp_mode(const ZnsParams *p, uint32_t nr_ns, uint32_t nsid, PlpMode *mode,
                         char **err);
/* Bytes of the PLP store for data of `bytes` with lba_bytes LBAs (ZNS_META_ALIGN'ed). */
uint64_t zns_params_plp_store_bytes(const ZnsParams *p, uint32_t lba_bytes, uint64_t bytes);
/*
 * The PLP buffer's configuration but for where it lives: flash, data and store are the
 * caller's to fill in.
 */
void zns_params_plp_config(const ZnsParams *p, uint32_t lba_bytes, PlpConfig *c);
/* The zones of a namespace of `bytes` with LBAs of 1 << lba_shift bytes. */
bool zns_params_zone_config(const ZnsParams *p, uint64_t bytes, uint8_t lba_shift,
                            ZoneConfig *c, char **err);
/*
 * The checks of the device's check_props that concern the model: zone size, zone append
 * limit, and the plp properties (all_zoned: every one of the nr_ns namespaces is zoned).
 */
bool zns_params_check(const ZnsParams *p, uint8_t mdts, uint8_t vwc, uint32_t nr_ns,
                      bool all_zoned, char **err);
/*
 * Namespace nsid holds whole zones (*bytes rounded down when derived); *meta_bytes is its
 * zone state after the data, and for namespace 1 with plp the PLP store for all_bytes of
 * namespaces too.
 */
bool zns_params_size_ns(const ZnsParams *p, uint8_t lba_shift, uint32_t nsid,
                        uint64_t all_bytes, uint64_t *bytes, bool derived,
                        uint64_t *meta_bytes, char **err);
/*
 * Zones of `bytes` on flash. Alone, the flash is the zns_* geometry; shared with other
 * namespaces, it is the shared model's and the zones start at first_block.
 */
bool zns_params_flash_config(const ZnsParams *p, const FemuFlashParams *f, uint64_t bytes,
                             NandModel *shared, uint32_t first_block, ZnsFlashConfig *c,
                             char **err);
/* Blocks per plane the zones of `bytes` need on the shared flash (mixed devices); 0: error. */
uint32_t zns_params_flash_blocks(const ZnsParams *p, const FemuFlashParams *f, uint64_t bytes,
                                 char **err);
/*
 * The zoned media model of `bytes`: with read-ahead when sra->on (ra gives readable and
 * its opaque; its cfg is filled in here), with power-loss protection when plp is not NULL
 * (zns_params_plp_config, with data and store).
 */
FemuMedia *zns_params_media_new(const ZnsParams *p, const FemuFlashParams *f,
                                const FemuSraParams *sra, uint64_t bytes, NandModel *shared,
                                uint32_t first_block, const FemuReadAhead *ra,
                                const PlpConfig *plp, char **err);
/* The Zone Append limit in bytes (0: none). */
uint64_t zns_params_zasl_bytes(const ZnsParams *p, uint8_t mdts);

#endif
