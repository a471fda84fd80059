/*
 * The flash's properties -> NandGeometry and NandTiming; see flash-params.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "flash-params.h"

#define US 1000ULL
#define MAX_LAT_NS 1000000000LL

/* Per-page-type defaults (ns) by bits per cell: what a drive of that kind does. */
static const struct {
    uint64_t rd[NAND_MAX_PAGE_TYPES], wr[NAND_MAX_PAGE_TYPES], er;
} flash_defaults[NAND_MAX_PAGE_TYPES + 1] = {
    [1] = { { 25 * US }, { 200 * US }, 1500 * US },
    [2] = { { 40 * US, 60 * US }, { 300 * US, 900 * US }, 3000 * US },
    [3] = { { 50 * US, 65 * US, 80 * US }, { 400 * US, 700 * US, 1000 * US },
            3500 * US },
    [4] = { { 70 * US, 90 * US, 110 * US, 130 * US },
            { 800 * US, 1400 * US, 2000 * US, 2600 * US }, 5000 * US },
};

/* What -device femu,help says of the options (the ranges are nand_timing_check's). */
const char *const femu_flash_prop_help[][2] = {
    { "nand_cmd_ns", "command and address cycles of one plane on the channel, "
      "0..1000000 ns" },
    { "nand_status_ns", "a status read on the channel after a program or erase and before "
      "each data-out, 0..1000000 ns" },
    { "nand_cache", "cache read and cache program: the page register frees the array" },
    { "nand_partial_xfer", "a read moves only the bytes asked, not the whole page "
      "(zoned reads)" },
    { "nand_suspend", "off (default), program, erase or both: a read may suspend them" },
    { "nand_suspend_ns", "suspend latency, 0..10000000 ns" },
    { "nand_resume_ns", "resume latency, 0..10000000 ns" },
    { "nand_suspend_max", "suspensions per program or erase, 1..255" },
    { "nand_retry_pe", "0: no read retry; else one more tR every N P/E cycles of "
      "the block, 1..10000000" },
    { "nand_retry_max", "most read retries, 0..64" },
    { "nand_base_pe", "P/E cycles every block starts with (an aged drive), 0..10000000" },
    { "nand_xfer_split", "1: whole transfers; 2..8: a transfer may go in that many parts in "
      "the channel's gaps" },
    { "flash_preset", "a named drive (docs/device.md: Presets): dc-tlc, dc-tlc-gen4, zns-tlc, "
      "ll-slc; it sets the properties left at their defaults" },
    { NULL, NULL },
};
NandGeometry femu_flash_geometry(const FemuFlashParams *p, uint32_t blks_per_pl)
{
    return (NandGeometry){ .nchs = p->nchs, .luns_per_ch = p->luns_per_ch,
                           .pls_per_lun = p->pls_per_lun, .blks_per_pl = blks_per_pl,
                           .pgs_per_blk = p->pgs_per_blk, .secs_per_pg = p->secs_per_pg,
                           .secsz = p->secsz };
}

/* "a:b:c" -> one latency per page type; exactly cell_bits values. */
static bool parse_lats(const char *prop, const char *text, uint32_t cell_bits, uint64_t *out,
                       char **err)
{
    g_auto(GStrv) parts = g_strsplit_set(text, ",:", -1);
    uint32_t n = g_strv_length(parts);

    if (n != cell_bits) {
        *err = g_strdup_printf("%s='%s' needs %u latencies in ns separated by ':' (one per page "
                   "type of flash_type=%u)", prop, text, cell_bits, cell_bits);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        guint64 v;
        if (!g_ascii_string_to_unsigned(g_strstrip(parts[i]), 10, 0, MAX_LAT_NS, &v, NULL)) {
            *err = g_strdup_printf("%s='%s': '%s' is not a latency in ns (0..%lld)", prop, text,
                       parts[i], MAX_LAT_NS);
            return false;
        }
        out[i] = v;
    }
    return true;
}

/* -1 is "the default"; anything else below 0 or absurdly large is refused. */
static bool check_lat(const char *prefix, const char *name, int64_t v, char **err)
{
    if (v < -1 || v > MAX_LAT_NS) {
        *err = g_strdup_printf("%s%s=%" PRId64 " is out of range: allowed -1 (the flash type's "
                   "default) or 0..%lld ns", prefix, name, v, MAX_LAT_NS);
        return false;
    }
    return true;
}

static bool flash_sched(const FemuFlashParams *p, uint32_t *sched, char **err)
{
    for (uint32_t i = 0; i < NAND_SCHED__MAX; i++) {
        if (!p->nand_sched || !strcmp(p->nand_sched, nand_sched_names[i])) {
            *sched = p->nand_sched ? i : NAND_SCHED_BACKFILL;
            return true;
        }
    }
    *err = g_strdup_printf("nand_sched='%s' is not known: allowed backfill (the default: each "
               "operation takes the first idle gap that fits) or fifo (each waits for the "
               "latest booking of its chip and channel)", p->nand_sched);
    return false;
}

static bool flash_suspend(const FemuFlashParams *p, uint32_t *mask, char **err)
{
    static const char *const names[] = { "off", "program", "erase", "both" };

    for (uint32_t i = 0; i < G_N_ELEMENTS(names); i++) {
        if (!p->nand_suspend || !strcmp(p->nand_suspend, names[i])) {
            *mask = p->nand_suspend ? i : 0;    /* the names follow NAND_SUSPEND_* bits */
            return true;
        }
    }
    *err = g_strdup_printf("nand_suspend='%s' is not known: allowed off (the default), program, "
               "erase, both", p->nand_suspend);
    return false;
}

bool flash_params_options(const FemuFlashParams *p, NandTiming *t, char **err)
{
    if (!flash_sched(p, &t->sched, err) || !flash_suspend(p, &t->suspend, err)) {
        return false;
    }
    t->cmd_ns = p->nand_cmd_ns;
    t->status_ns = p->nand_status_ns;
    t->cache_ops = p->nand_cache;
    t->partial_xfer = p->nand_partial_xfer;
    t->suspend_ns = p->nand_suspend_ns;
    t->resume_ns = p->nand_resume_ns;
    t->suspend_max = p->nand_suspend_max;
    t->retry_pe = p->nand_retry_pe;
    t->retry_max = p->nand_retry_max;
    t->base_pe = p->nand_base_pe;
    t->xfer_split = p->nand_xfer_split;
    if (!nand_options_check(t, err)) {
        return false;
    }
    return true;
}

bool flash_params_timing(const char *prefix, uint8_t flash_type, int64_t rd, int64_t wr,
                      int64_t er, const FemuFlashParams *p, NandTiming *t, char **err)
{
    if (flash_type < 1 || flash_type > NAND_MAX_PAGE_TYPES) {
        *err = g_strdup_printf("%sflash_type=%u is out of range: allowed 1 (SLC), 2 (MLC), 3 (TLC), "
                   "4 (QLC)", prefix, flash_type);
        return false;
    }
    if (!check_lat(prefix, "pg_rd_lat", rd, err) || !check_lat(prefix, "pg_wr_lat", wr, err) ||
        !check_lat(prefix, "blk_er_lat", er, err) ||
        !check_lat("", "ch_xfer_lat", p->ch_xfer_lat, err)) {
        return false;
    }
    *t = (NandTiming){ .cell_bits = flash_type, .time_scale = p->time_scale,
                       .sched = NAND_SCHED_BACKFILL,
                       .ch_mts = p->ch_mts, .ch_width_bytes = p->ch_width,
                       .blk_er_lat = flash_defaults[flash_type].er };
    memcpy(t->pg_rd_lat, flash_defaults[flash_type].rd, sizeof(t->pg_rd_lat));
    memcpy(t->pg_wr_lat, flash_defaults[flash_type].wr, sizeof(t->pg_wr_lat));

    /* FEMU's single latencies apply to every page type */
    for (uint32_t i = 0; i < t->cell_bits; i++) {
        if (rd >= 0) {
            t->pg_rd_lat[i] = rd;
        }
        if (wr >= 0) {
            t->pg_wr_lat[i] = wr;
        }
    }
    if ((p->pg_rd_lats && !parse_lats("pg_rd_lats", p->pg_rd_lats, t->cell_bits,
                                      t->pg_rd_lat, err)) ||
        (p->pg_wr_lats && !parse_lats("pg_wr_lats", p->pg_wr_lats, t->cell_bits,
                                      t->pg_wr_lat, err))) {
        return false;
    }
    if (er >= 0) {
        t->blk_er_lat = er;
    }
    if (!flash_params_options(p, t, err)) {
        return false;
    }
    if (p->ch_xfer_lat >= 0) {
        /* FEMU's ch_xfer_lat: a fixed time per page (0: the channel costs nothing) */
        t->ch_xfer_lat = p->ch_xfer_lat;
        if (!p->ch_xfer_lat) {
            t->ch_mts = 0;
        }
    }
    return true;
}
