/*
 * The blackbox kind's properties (FEMU's gc_thres_pcent, gc_thres_pcent_high; op_pcent is
 * new): their list, expanded by the QEMU device and by femu-sim, and the FTL configuration
 * they give with the flash's. The fdp kind builds on the same FTL parameters.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_BBSSD_PARAMS_H
#define FEMU_BBSSD_PARAMS_H

#include "../media/media.h"
#include "../nand/flash-params.h"
#include "../sra/sra-params.h"
#include "ftl.h"
#include "../ftl/write-buffer.h"

typedef struct BbssdParams {
    uint32_t gc_thres_pcent;
    uint32_t gc_thres_pcent_high;
    int32_t op_pcent;           /* -1: 7 unless blks_per_pl is given */
    char *gc_policy;            /* ftl/victim.h: NAME[:PARAM=VALUE]...; NULL: greedy */
    char *gc_pacing;            /* ftl/pacing.h: the same; NULL: proportional */
    char *streams;              /* ftl/stream.h: the same; NULL: host-gc (FDP: none) */
    /* the DRAM write buffer (ftl/write-buffer.h); 0 MiB: none (-1: unset, so that 0 wins
     * over a preset's buffer) */
    int32_t wb_size_mb;
    uint32_t wb_high_pct, wb_low_pct;
    bool wb_plp;
    uint32_t wb_ctrl_mw, wb_chip_mw;
    uint32_t map_unit_kb;       /* the FTL's mapping unit; 0: the NAND page */
} BbssdParams;

/*
 * P(struct, type, name, field, default), as FEMU_FLASH_PROPS. FEMU's 75/95 keep 5% of lines
 * free in the foreground, most of a 7% OP: WAF ~22; hence 90/99.
 */
#define BBSSD_PROPS(P, S)                                       \
    P(S, U32, "gc_thres_pcent", gc_thres_pcent, 90)             \
    P(S, U32, "gc_thres_pcent_high", gc_thres_pcent_high, 99)   \
    P(S, I32, "op_pcent", op_pcent, -1)                         \
    P(S, STR, "gc_policy", gc_policy, NULL)                     \
    P(S, STR, "gc_pacing", gc_pacing, NULL)                     \
    P(S, STR, "streams", streams, NULL)                         \
    P(S, I32, "wb_size_mb", wb_size_mb, -1)                     \
    P(S, U32, "wb_high_pct", wb_high_pct, 60)                   \
    P(S, U32, "wb_low_pct", wb_low_pct, 40)                     \
    P(S, BOOL, "wb_plp", wb_plp, false)                         \
    P(S, U32, "wb_ctrl_mw", wb_ctrl_mw, 2000)                   \
    P(S, U32, "wb_chip_mw", wb_chip_mw, 150)                    \
    P(S, U32, "map_unit_kb", map_unit_kb, 0)

/*
 * map_unit_kb on a NAND geometry: *upp mapping units per NAND page. 0 is the page; else a
 * power-of-two fraction of it, whole sectors. False and *err (listing the allowed values).
 */
bool bbssd_params_units_per_page(uint32_t map_unit_kb, const NandGeometry *g, uint32_t *upp,
                                 char **err);
/*
 * The FTL for `bytes` of exposed capacity; blocks derived from op_pcent unless given.
 * own_spare: the caller's FTL adds the spare units it needs to the derived blocks and
 * checks its own limits (FDP); else the blackbox FTL's minimum spare and limits apply.
 * False and *err (g_free it) naming the property otherwise.
 */
bool bbssd_params_ftl_config(const FemuFlashParams *f, const BbssdParams *p, uint64_t bytes,
                             FtlConfig *c, bool own_spare, char **err);
/*
 * The write buffer's configuration for a mapping unit of unit_bytes: false and *err naming
 * the property when it is out of range; c->bytes is 0 when there is no buffer. Its
 * batch and NAND model are the media model's to fill in.
 */
bool bbssd_params_wb_config(const BbssdParams *p, uint64_t unit_bytes, bool vwc,
                            FtlWbConfig *c, char **err);
/* Whether a namespace's model keeps written data the backend does not (a volatile buffer). */
bool bbssd_params_wb_volatile(const BbssdParams *p);
/*
 * The blackbox media model of `bytes` (bbssd-media.c), with read-ahead when sra->on: on
 * `shared` flash from first_block, or its own (NULL); vwc: the drive reports a volatile
 * write cache; wb: the write buffer's data path (NULL: it keeps no data). NULL and *err
 * otherwise.
 */
FemuMedia *bbssd_params_media_new(const FemuFlashParams *f, const BbssdParams *p,
                                  const FemuSraParams *sra, uint64_t bytes, NandModel *shared,
                                  uint32_t first_block, bool vwc, const FemuWbData *wb,
                                  char **err);

#endif
