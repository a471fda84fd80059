/*
 * The flash's properties (FEMU's names: nchs, luns_per_ch, pg_rd_lat, ...): their values,
 * their names and defaults (one list, which both the QEMU device and femu-sim expand), and
 * the NAND model's geometry and timing they give. Every media kind builds on these; a kind
 * may override some with its own properties (e.g. zns_num_ch).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_NAND_FLASH_PARAMS_H
#define FEMU_NAND_FLASH_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "nand.h"

/* -1 means "derive" or "the flash type's default" */
typedef struct FemuFlashParams {
    uint32_t secsz;
    uint32_t secs_per_pg;
    uint32_t pgs_per_blk;
    uint32_t blks_per_pl;       /* 0: derived from the capacity the kinds need */
    uint32_t pls_per_lun;
    uint32_t luns_per_ch;
    uint32_t nchs;
    uint8_t flash_type;         /* bits per cell: 1 SLC .. 4 QLC */
    int64_t pg_rd_lat;          /* ns, every page type */
    int64_t pg_wr_lat;
    int64_t blk_er_lat;
    int64_t ch_xfer_lat;        /* ns per page; -1: from ch_mts and ch_width */
    char *pg_rd_lats;           /* "lower:upper:extra:..." ns per page type */
    char *pg_wr_lats;
    uint32_t ch_mts;
    uint32_t ch_width;
    uint32_t time_scale;
    char *nand_sched;           /* NULL: backfill */
    /* the model's options (nand.h), off by default */
    uint64_t nand_cmd_ns;
    uint64_t nand_status_ns;
    bool nand_cache;
    bool nand_partial_xfer;
    char *nand_suspend;         /* NULL/off, program, erase, both */
    uint64_t nand_suspend_ns;
    uint64_t nand_resume_ns;
    uint32_t nand_suspend_max;
    uint32_t nand_retry_pe;
    uint32_t nand_retry_max;
    uint32_t nand_base_pe;
    uint32_t nand_xfer_split;
    char *flash_preset;         /* NULL: none */
} FemuFlashParams;

/*
 * The properties: P(struct, type, name, field, default) each, type one of U8 U32 I32 U64
 * I64 BOOL STR SIZE (params/props.h). S is the struct the fields are in.
 */
#define FEMU_FLASH_PROPS(P, S)                          \
    P(S, U32, "secsz", secsz, 512)                      \
    P(S, U32, "secs_per_pg", secs_per_pg, 8)            \
    P(S, U32, "pgs_per_blk", pgs_per_blk, 64)           \
    P(S, U32, "blks_per_pl", blks_per_pl, 0)            \
    P(S, U32, "pls_per_lun", pls_per_lun, 1)            \
    P(S, U32, "luns_per_ch", luns_per_ch, 8)            \
    P(S, U32, "nchs", nchs, 8)                          \
    P(S, I64, "pg_rd_lat", pg_rd_lat, -1)               \
    P(S, I64, "pg_wr_lat", pg_wr_lat, -1)               \
    P(S, I64, "blk_er_lat", blk_er_lat, -1)             \
    P(S, I64, "ch_xfer_lat", ch_xfer_lat, -1)           \
    P(S, U8, "flash_type", flash_type, 3)               \
    P(S, STR, "pg_rd_lats", pg_rd_lats, NULL)           \
    P(S, STR, "pg_wr_lats", pg_wr_lats, NULL)           \
    P(S, U32, "ch_mts", ch_mts, 800)                    \
    P(S, U32, "ch_width", ch_width, 1)                  \
    P(S, U32, "time_scale", time_scale, 1)              \
    P(S, STR, "nand_sched", nand_sched, NULL)           \
    P(S, U64, "nand_cmd_ns", nand_cmd_ns, 0)            \
    P(S, U64, "nand_status_ns", nand_status_ns, 0)      \
    P(S, BOOL, "nand_cache", nand_cache, false)         \
    P(S, BOOL, "nand_partial_xfer", nand_partial_xfer, false) \
    P(S, STR, "nand_suspend", nand_suspend, NULL)       \
    P(S, U64, "nand_suspend_ns", nand_suspend_ns, 20000) \
    P(S, U64, "nand_resume_ns", nand_resume_ns, 20000)  \
    P(S, U32, "nand_suspend_max", nand_suspend_max, 4)  \
    P(S, U32, "nand_retry_pe", nand_retry_pe, 0)        \
    P(S, U32, "nand_retry_max", nand_retry_max, 8)      \
    P(S, U32, "nand_base_pe", nand_base_pe, 0)          \
    P(S, U32, "nand_xfer_split", nand_xfer_split, 1)    \
    P(S, STR, "flash_preset", flash_preset, NULL)

/* {name, description} of the model's options, ending with {NULL, NULL} */
extern const char *const femu_flash_prop_help[][2];

/* The geometry the flash properties give, with blks_per_pl as asked. */
NandGeometry femu_flash_geometry(const FemuFlashParams *p, uint32_t blks_per_pl);
/*
 * The model's options of *p (nand_sched, nand_cmd_ns, nand_suspend, ...) into *t, each
 * checked against its range; false and *err (g_free it) naming the property otherwise.
 */
bool flash_params_options(const FemuFlashParams *p, NandTiming *t, char **err);
/*
 * Timing from a flash type and FEMU-style single latencies (-1: the type's default), plus
 * the bus, per-page-type and time-scale properties of *p. prefix names the properties the
 * single values came from in messages ("" or "zns_").
 */
bool flash_params_timing(const char *prefix, uint8_t flash_type, int64_t rd, int64_t wr,
                         int64_t er, const FemuFlashParams *p, NandTiming *t, char **err);

#endif
