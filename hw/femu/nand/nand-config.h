/*
 * The flash's -device properties (FEMU's names: nchs, luns_per_ch, pg_rd_lat, ...) turned
 * into the NAND model's geometry and timing. Every media kind builds on these; a kind may
 * override some with its own properties (e.g. zns_num_ch).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_NAND_CONFIG_H
#define HW_FEMU_NAND_CONFIG_H

#include "hw/qdev-properties.h"
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

/* Properties with offsets relative to FemuFlashParams. */
extern const Property femu_flash_props[];
extern const size_t femu_flash_nr_props;
/* {name, description} of the model's options, ending with {NULL, NULL} */
extern const char *const femu_flash_prop_help[][2];

/* The geometry the flash properties give, with blks_per_pl as asked. */
NandGeometry femu_flash_geometry(const FemuFlashParams *p, uint32_t blks_per_pl);
/* nand_sched as a NandSched; false and *errp when it names none. */
bool femu_flash_sched(const FemuFlashParams *p, uint32_t *sched, Error **errp);
/*
 * flash_preset=NAME (presets.h): sets the preset's properties on obj where they still have
 * their default values. False and *errp for an unknown name.
 */
bool femu_flash_apply_preset(Object *obj, const char *name, Error **errp);
/*
 * The model's options of *p (nand_sched, nand_cmd_ns, nand_suspend, ...) into *t, each
 * checked against its range; false and *errp naming the property otherwise.
 */
bool femu_flash_options(const FemuFlashParams *p, NandTiming *t, Error **errp);
/*
 * Timing from a flash type and FEMU-style single latencies (-1: the type's default), plus
 * the bus, per-page-type and time-scale properties of *p. prefix names the properties the
 * single values came from in messages ("" or "zns_").
 */
bool femu_fill_timing(const char *prefix, uint8_t flash_type, int64_t rd, int64_t wr,
                      int64_t er, const FemuFlashParams *p, NandTiming *t, Error **errp);

#endif
