/*
 * The whitebox kind's properties (FEMU's l* names where they exist): their list, expanded
 * by the QEMU device and by femu-sim, and what they give: the LBA size (lsec_size), the
 * chunk geometry, the flash it sits on, the media model and the namespace sizes it allows.
 *
 * "alone": every namespace of the device is whitebox, so the flash is the l* geometry;
 * otherwise it is the shared flash of the flash properties.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_OCSSD_PARAMS_H
#define FEMU_OCSSD_PARAMS_H

#include "../media/media.h"
#include "../nand/flash-params.h"
#include "chunk.h"
#include "ocssd-flash.h"

typedef struct OcParams {
    uint32_t lver;
    uint32_t lsec_size;         /* 0: the LBA size */
    uint32_t lsecs_per_pg;
    uint32_t lpgs_per_blk;
    uint32_t lmax_sec_per_rq;
    uint32_t lnum_ch;
    uint32_t lnum_lun;
    uint32_t lnum_pln;
    uint32_t lmetasize;
    uint32_t maxoc;
    uint32_t maxocpu;
    uint32_t mccap;
} OcParams;

/* P(struct, type, name, field, default), as FEMU_FLASH_PROPS */
#define OCSSD_PROPS(P, S)                                       \
    P(S, U32, "lver", lver, 2)                                  \
    P(S, U32, "lsec_size", lsec_size, 0)                        \
    P(S, U32, "lsecs_per_pg", lsecs_per_pg, 4)                  \
    P(S, U32, "lpgs_per_blk", lpgs_per_blk, 512)                \
    P(S, U32, "lmax_sec_per_rq", lmax_sec_per_rq, 64)           \
    P(S, U32, "lnum_ch", lnum_ch, 2)                            \
    P(S, U32, "lnum_lun", lnum_lun, 8)                          \
    P(S, U32, "lnum_pln", lnum_pln, 2)                          \
    P(S, U32, "lmetasize", lmetasize, 16)                       \
    P(S, U32, "oc_maxoc", maxoc, 0)                             \
    P(S, U32, "oc_maxocpu", maxocpu, 0)                         \
    P(S, U32, "oc_mccap", mccap, OC_MCCAP_COPY | OC_MCCAP_MULTI_RESET)

#define OC_META_ALIGN (UINT64_C(1) << 20)   /* the chunk state and OOB, in the backend */

/*
 * Every function that can fail returns false (or NULL, or 0) and sets *err (g_free it),
 * naming the property.
 */

/* The flash the namespace sits on. */
NandGeometry ocssd_params_nand_geometry(const OcParams *p, const FemuFlashParams *f,
                                        bool alone, uint32_t lba_bytes);
/* The chunk geometry of `bytes` (chunks per PU rounded down to a power of two). */
bool ocssd_params_geometry(const OcParams *p, const FemuFlashParams *f, bool alone,
                           uint64_t bytes, uint32_t lba_bytes, OcGeometry *g, char **err);
/*
 * The checks of the device's check_props (count: whitebox namespaces; ns_types for the
 * message), and the sector size as the LBA size: lsec_size sets *lba_index when it was
 * not given, and must agree with it when it was.
 */
bool ocssd_params_check(const OcParams *p, uint32_t count, const char *ns_types,
                        bool lba_index_given, uint8_t *lba_index, char **err);
/* Whole chunks on every PU (*bytes rounded down when derived); the chunk state and OOB. */
bool ocssd_params_size_ns(const OcParams *p, const FemuFlashParams *f, bool alone,
                          uint32_t lba_bytes, uint32_t nsid, uint64_t *bytes, bool derived,
                          uint64_t *meta_bytes, char **err);
uint64_t ocssd_params_meta_bytes(const OcGeometry *g, uint32_t metasize);
bool ocssd_params_flash_config(const OcParams *p, const FemuFlashParams *f, bool alone,
                               uint64_t bytes, uint32_t lba_bytes, NandModel *shared,
                               uint32_t first_block, OcFlashConfig *c, char **err);
/* Blocks per plane of the shared flash (mixed devices): the chunks per PU; 0: error. */
uint32_t ocssd_params_flash_blocks(const OcParams *p, const FemuFlashParams *f, bool alone,
                                   uint64_t bytes, uint32_t lba_bytes, char **err);
/* The whitebox media model of `bytes`: on `shared` flash from first_block, or its own. */
FemuMedia *ocssd_params_media_new(const OcParams *p, const FemuFlashParams *f, bool alone,
                                  uint64_t bytes, uint32_t lba_bytes, NandModel *shared,
                                  uint32_t first_block, char **err);

#endif
