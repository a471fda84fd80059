/*
 * zns (femu_mode=3): the NVMe Zoned Namespace command set on top of the zone state
 * machine (zone.c) and zones on flash (zns-flash.c, through zns-media.c). Zone state lives
 * in the backend right after the device's data, so a file backend keeps it across
 * restarts; state that does not match the properties is refused, never reset.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "../femu.h"
#include "zone.h"
#include "zns-flash.h"
#include "../plp/plp.h"
#include "../trace.h"

#define ZNS_META_ALIGN MiB
#define ZNS_REPORT_CHUNK (64 * KiB)    /* a zone report is built and copied this much at a time */

/* FEMU's names where they exist */
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

/* A zoned namespace's state (FemuNamespace.priv). */
typedef struct ZnsNs {
    ZoneSet *zones;
    uint8_t *meta;              /* where the zone state persists, in the backend */
    PlpMode plp_mode;
    uint8_t *plp_zones;         /* durable zones (a bitmap), with plp */
} ZnsNs;

static const FemuNsKind zns_kind;

static ZnsParams *zns_params(FemuCtrl *n)
{
    return femu_ns_kind_params(n, &zns_kind);
}

static ZoneSet *ns_zones(FemuNamespace *ns)
{
    return ((ZnsNs *)ns->priv)->zones;
}

static ZnsNs *ns_zns(FemuNamespace *ns)
{
    return ns->priv;
}

/* Power-loss protection is on: plp= names a mode. */
static bool plp_on(FemuCtrl *n)
{
    const char *s = zns_params(n)->plp;
    return s && *s;
}

/* Namespace nsid's mode, from plp=: one word for every namespace, or one per namespace. */
static bool plp_mode_of(FemuCtrl *n, uint32_t nsid, PlpMode *mode, Error **errp)
{
    static const char *const names[] = { "none", "selective", "full" };
    const char *spec = zns_params(n)->plp;
    g_auto(GStrv) words = g_strsplit_set(spec, ":,", -1);
    guint nw = g_strv_length(words);

    if (nw != 1 && nw != n->num_namespaces) {
        error_setg(errp, "plp='%s': give one of none, selective, full for every namespace, "
                   "or one per namespace separated by ':' (namespaces=%u)", spec,
                   n->num_namespaces);
        return false;
    }
    for (PlpMode m = PLP_MODE_NONE; m <= PLP_MODE_FULL; m++) {
        if (!strcmp(words[nw == 1 ? 0 : nsid - 1], names[m])) {
            *mode = m;
            return true;
        }
    }
    error_setg(errp, "plp='%s': '%s' is not a mode: allowed none, selective, full", spec,
               words[nw == 1 ? 0 : nsid - 1]);
    return false;
}

/* Bytes of the PLP store (after namespace 1's zone state) for data of `bytes`. */
static uint64_t plp_store_bytes(FemuCtrl *n, uint64_t bytes)
{
    ZnsParams *p = zns_params(n);
    uint64_t zone = (uint64_t)p->zone_size_mb * MiB;

    return ROUND_UP(plp_store_size(n->lba_index ? 4096 : 512, (uint64_t)p->plp_buf_mb * MiB,
                                   bytes / zone), ZNS_META_ALIGN);
}

/* ZoneStatus -> NVMe status (zone statuses are command specific, type 1). */
static uint16_t zone_to_nvme(ZoneStatus s)
{
    switch (s) {
    case ZONE_OK:
        return NVME_SUCCESS;
    case ZONE_INVALID_FIELD:
        return NVME_INVALID_FIELD;
    case ZONE_LBA_RANGE:
        return NVME_LBA_RANGE;
    default:
        return 0x100 | s;
    }
}

/* The zones of a namespace of `bytes` with LBAs of 1 << lba_shift bytes. */
static bool zns_zone_config(FemuCtrl *n, uint64_t bytes, uint8_t lba_shift, ZoneConfig *c,
                            Error **errp)
{
    ZnsParams *p = zns_params(n);
    uint64_t zone_bytes = (uint64_t)p->zone_size_mb * MiB;
    uint64_t cap_bytes = p->zone_cap ? p->zone_cap : zone_bytes;
    uint64_t lba = 1ULL << lba_shift;
    g_autofree char *err = NULL;

    if (cap_bytes > zone_bytes || cap_bytes % lba) {
        error_setg(errp, "zns_zone_cap=%" PRIu64 " is invalid: allowed a multiple of the "
                   "LBA size (%" PRIu64 " bytes) up to the zone size (%" PRIu64 " bytes)",
                   cap_bytes, lba, zone_bytes);
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
    if (!zone_config_check(c, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

/* Timing of state changes: a reset erases, a finish or close writes the buffer out. */
typedef struct ZoneChangeCtx {
    FemuCtrl *n;
    FemuNamespace *ns;
    uint64_t now;
    uint64_t deadline;
    bool power_cycle;       /* a controller reset: zones going Empty were never written */
    GArray *resets;         /* zones reset by the command, dropped once their records are saved */
} ZoneChangeCtx;

static FemuMediaReq zone_media_req(FemuNamespace *ns, FemuMediaOp op, uint64_t zone,
                                   uint64_t now)
{
    uint64_t zone_lbas = ns_zones(ns)->cfg.zone_size;

    return (FemuMediaReq){
        .op = op,
        .nsid = ns->nsid,
        .offset = ns->backend_offset + (zone * zone_lbas << ns->lba_shift),
        .len = zone_lbas << ns->lba_shift,
        .arrival_ns = now,
    };
}

static void on_zone_change(void *opaque, uint64_t zone, ZoneState from, ZoneState to)
{
    ZoneChangeCtx *c = opaque;
    FemuNamespace *ns = c->ns;
    const Zone *z = &ns_zones(ns)->zones[zone];
    FemuMediaReq r;

    trace_femu_zone_change(ns->nsid, zone, from, to);
    if (to == ZONE_EMPTY && from != ZONE_EMPTY) {
        if (!c->power_cycle) {
            /* the data goes only after the Empty record is saved: zns_drop_reset_zones */
            if (!c->resets) {
                c->resets = g_array_new(FALSE, FALSE, sizeof(uint64_t));
            }
            g_array_append_val(c->resets, zone);
        }
        return;
    }
    /*
     * Every way to Full (a finish from Empty or Closed too) makes the zone's data durable
     * up to its new write pointer, as a close of an open zone does up to its own.
     */
    if (to != ZONE_FULL &&
        !(to == ZONE_CLOSED && (from == ZONE_IMPLICIT_OPEN || from == ZONE_EXPLICIT_OPEN))) {
        return;
    }
    r = zone_media_req(ns, FEMU_MEDIA_ZONE_DRAIN, zone, c->now);
    r.len = (z->wp - z->zslba) << ns->lba_shift;
    c->deadline = MAX(c->deadline, femu_ns_media_submit(ns, &r));
}

/*
 * The zones a command reset, once their Empty records are saved (the crash-ordering rule
 * of a shrink): the buffered and protected data of each is dropped, its flash erased, and
 * its blocks read as zeroes (DLFEAT; the host pages are given back). A kill in between
 * leaves data above a write pointer, which start-up clears.
 */
static void zns_drop_reset_zones(ZoneChangeCtx *c)
{
    for (guint i = 0; c->resets && i < c->resets->len; i++) {
        FemuMediaReq r = zone_media_req(c->ns, FEMU_MEDIA_ZONE_RESET,
                                        g_array_index(c->resets, uint64_t, i), c->now);
        femu_crash_point(c->n, "reset-saved");
        femu_backend_zero(c->n, r.offset, r.len);
        c->deadline = MAX(c->deadline, femu_ns_media_submit(c->ns, &r));
    }
}

/*
 * Data above a write pointer can only come from a write that had not completed when QEMU
 * stopped; unwritten blocks read as zeroes (DLFEAT), so it is cleared. One pass over the
 * data the backend holds: zones without any cost nothing. Returns the zones cleared.
 */
static uint64_t clear_above_wp(FemuCtrl *n, FemuNamespace *ns)
{
    ZoneSet *zs = ns_zones(ns);
    uint64_t zone_bytes = zs->cfg.zone_size << ns->lba_shift;
    uint64_t start = ns->backend_offset, end = start + ns->bytes, pos = start, cleared = 0;

    while ((pos = femu_backend_next_data(n, pos, end)) < end) {
        uint64_t idx = (pos - start) / zone_bytes;
        const Zone *z = &zs->zones[idx];
        uint64_t zend = start + (idx + 1) * zone_bytes;
        uint64_t lo = MAX(pos, start + (z->wp << ns->lba_shift));

        if (z->state != ZONE_OFFLINE && lo < zend && !femu_backend_is_zero(n, lo, zend - lo)) {
            femu_backend_zero(n, lo, zend - lo);
            cleared++;
        }
        pos = zend;
    }
    return cleared;
}

static char *backend_name(FemuCtrl *n)
{
    g_autofree char *name = n->memdev ? host_memory_backend_get_name(n->memdev) : NULL;
    return name ? g_strdup_printf("memdev '%s'", name) : g_strdup("the backend");
}

/* The last step of every start-up: nothing above a write pointer, said when there was. */
static void zns_clear_above_wp(FemuCtrl *n, FemuNamespace *ns)
{
    uint64_t cleared = clear_above_wp(n, ns);

    if (cleared) {
        g_autofree char *where = backend_name(n);
        warn_report("zoned namespace %u in %s: cleared data above the write pointer of "
                    "%" PRIu64 " zones (writes that had not completed)", ns->nsid, where,
                    cleared);
    }
}

/*
 * The saved zone state in the backend: loaded when it matches the configuration, started
 * when the area is fresh and the namespace holds no data (Empty zones read as zeroes),
 * refused otherwise, so that nothing saved is ever silently dropped.
 */
static bool zns_state_open(FemuCtrl *n, FemuNamespace *ns, uint8_t *meta, Error **errp)
{
    ZoneSet *zs = ns_zones(ns);
    g_autofree char *where = backend_name(n);
    g_autofree char *err = NULL;

    switch (zone_store_open(zs, meta, &err)) {
    case ZONE_STORE_ERROR:
        error_setg(errp, "zoned namespace %u in %s: %s. Start with the properties it was "
                   "saved with, or start over with a new or zeroed backing file (this "
                   "erases the drive)", ns->nsid, where, err);
        return false;
    case ZONE_STORE_FRESH:
        if (!femu_backend_is_zero(n, ns->backend_offset, ns->bytes)) {
            error_setg(errp, "zoned namespace %u in %s: the data area holds data but there "
                       "is no zone state after it (a drive of another femu_mode, or of "
                       "another size: devsz_mb, ns_sizes_mb?); its zones would start Empty, "
                       "which must read as zeroes. Start with the properties it was saved "
                       "with, or start over with a new or zeroed backing file (this erases "
                       "the drive)", ns->nsid, where);
            return false;
        }
        zone_store_format(zs);
        return true;
    case ZONE_STORE_LOADED:
        if (zs->records_recovered) {
            warn_report("zoned namespace %u in %s: %" PRIu64 " zones had a damaged state "
                        "record (an update interrupted when QEMU stopped); their previous "
                        "state is used", ns->nsid, where, zs->records_recovered);
        }
        if (!plp_on(n)) {
            zns_clear_above_wp(n, ns);  /* with plp, after recovery (zns_power_on) */
        }
        return true;
    }
    return false;
}

static bool zns_ns_init(FemuCtrl *n, FemuNamespace *ns, uint8_t *meta, Error **errp)
{
    g_autofree char *err = NULL;
    ZoneConfig c;
    ZoneSet *zs;
    ZnsNs *z;

    if (!zns_zone_config(n, ns->bytes, ns->lba_shift, &c, errp)) {
        return false;
    }
    zs = zone_set_new(&c, &err);
    if (!zs) {
        error_setg(errp, "%s", err);
        return false;
    }
    z = g_new0(ZnsNs, 1);
    z->zones = zs;
    z->meta = meta;
    ns->priv = z;
    ns->nlbas = c.nr_zones * c.zone_size;
    if (plp_on(n)) {
        if (!plp_mode_of(n, ns->nsid, &z->plp_mode, errp)) {
            return false;
        }
        z->plp_zones = plp_zones_parse(zns_params(n)->plp_zones, c.nr_zones, &err);
        if (!z->plp_zones) {
            error_setg(errp, "namespace %u: %s", ns->nsid, err);
            return false;
        }
        ns->media_buffers = true;
    }
    return !meta || zns_state_open(n, ns, meta, errp);
}

/*
 * A controller reset closes open zones as a power cycle does (unwritten ones go Empty),
 * and the flash model drains their write buffers as a close does.
 */
static void zns_ctrl_reset(FemuCtrl *n, FemuNamespace *ns)
{
    ZoneSet *zs = ns_zones(ns);
    ZoneChangeCtx ctx = { .n = n, .ns = ns, .now = femu_now_ns(n), .power_cycle = true };

    if (n->power_lost) {
        return;     /* nothing is drained: what was not saved is lost (zns_power_on) */
    }
    zs->on_change = on_zone_change;
    zs->opaque = &ctx;
    zone_power_cycle(zs);
    zs->on_change = NULL;
}

static void zns_ns_free(FemuNamespace *ns)
{
    ZnsNs *z = ns->priv;

    zone_set_free(z->zones);
    g_free(z->plp_zones);
    g_free(z);
    ns->priv = NULL;
}

/*
 * Zones of `bytes` on flash. Alone, the flash is the zns_* geometry; shared with other
 * namespaces, it is the shared model's and the zones start at first_block.
 */
static bool zns_flash_config(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                             uint32_t first_block, ZnsFlashConfig *c, Error **errp)
{
    ZnsParams *p = zns_params(n);
    FemuFlashParams *b = &n->flash;
    uint64_t zone = (uint64_t)p->zone_size_mb * MiB;
    g_autofree char *err = NULL;

    *c = (ZnsFlashConfig){
        .geo = { .nchs = p->num_ch, .luns_per_ch = p->num_lun, .pls_per_lun = p->num_plane,
                 .blks_per_pl = p->num_blk, .pgs_per_blk = b->pgs_per_blk,
                 .secs_per_pg = b->secs_per_pg, .secsz = b->secsz },
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
    } else if (!femu_fill_timing("zns_", p->flash_type, p->pg_rd_lat, p->pg_wr_lat,
                                 p->blk_er_lat, b, &c->tm, errp)) {
        return false;
    }
    c->stripe = p->stripe ? p->stripe : c->geo.nchs * c->geo.luns_per_ch;
    c->wbuf_bytes = p->wbuf_kb ? (uint64_t)p->wbuf_kb * KiB
                               : 2ULL * c->stripe * nand_page_bytes(&c->geo);
    if (shared || !c->geo.blks_per_pl) {
        if (!shared) {
            c->geo.blks_per_pl = 1;
        }
        if (!zns_flash_derive_blocks(c, &err)) {
            error_setg(errp, "%s", err);
            return false;
        }
    }
    return true;
}

/* Blocks per plane the zones of `bytes` need on the shared flash (mixed devices). */
static uint32_t zns_flash_blocks(FemuCtrl *n, uint64_t bytes, Error **errp)
{
    ZnsParams *p = zns_params(n);
    uint64_t zone = (uint64_t)p->zone_size_mb * MiB;
    ZnsFlashConfig c = {
        .geo = femu_flash_geometry(&n->flash, 1),
        .nr_zones = bytes / zone,
        .zone_bytes = zone,
        .zone_cap_bytes = p->zone_cap ? p->zone_cap : zone,
        .wbuf_zones = 1,
    };
    g_autofree char *err = NULL;

    c.stripe = p->stripe ? p->stripe : c.geo.nchs * c.geo.luns_per_ch;
    c.wbuf_bytes = 2ULL * c.stripe * nand_page_bytes(&c.geo);
    if (!zns_flash_derive_blocks(&c, &err)) {
        error_setg(errp, "%s", err);
        return 0;
    }
    return c.geo.blks_per_pl;
}

/* Read-ahead stops where a zone's written data ends (the zone state is the device's). */
static uint64_t zns_readable(void *opaque, uint32_t nsid, uint64_t offset, uint64_t max)
{
    FemuNamespace *ns = femu_ns(opaque, nsid);
    uint64_t at;

    if (!ns || ns->kind != &zns_kind) {
        return 0;
    }
    at = offset + ns->media_base;       /* a backend offset */
    if (at < ns->backend_offset || at - ns->backend_offset >= ns->bytes) {
        return 0;
    }
    at = (at - ns->backend_offset) >> ns->lba_shift;
    return zone_readable(ns_zones(ns), at, max >> ns->lba_shift) << ns->lba_shift;
}

static FemuMedia *zns_media_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                                uint32_t first_block, Error **errp)
{
    g_autofree char *err = NULL;
    ZnsFlashConfig c;
    SraConfig sra;
    FemuReadAhead ra = { .cfg = &sra, .readable = zns_readable, .opaque = n };
    PlpConfig plp;
    FemuMedia *m;

    if (!zns_flash_config(n, bytes, shared, first_block, &c, errp)) {
        return NULL;
    }
    if (n->sra.on && !femu_sra_config(&n->sra, nand_page_bytes(&c.geo), c.tm.time_scale,
                                      &sra, errp)) {
        return NULL;
    }
    if (plp_on(n)) {
        ZnsParams *p = zns_params(n);
        ZoneConfig zc;

        /* zns_check_plp refused mixed devices; namespace 1's zones were checked when sized */
        if (!zns_zone_config(n, n->ns_bytes[0], n->lba_index ? 12 : 9, &zc, errp)) {
            return NULL;
        }
        plp = (PlpConfig){
            .sector_bytes = n->lba_index ? 4096 : 512,
            .plp_bytes = (uint64_t)p->plp_buf_mb * MiB,
            .buf_bytes = (uint64_t)p->buf_mb * MiB,
            .flush_pct = p->plp_flush_pct,
            .method = p->plp_flush && !strcmp(p->plp_flush, "normal") ? PLP_FLUSH_NORMAL
                                                                       : PLP_FLUSH_BALANCED,
            .ctrl_mw = p->plp_ctrl_mw,
            .chip_mw = p->plp_chip_mw,
            .data = n->data,
            /* after namespace 1's zone state (zns_size_ns) */
            .store = n->data + n->data_bytes + ROUND_UP(zone_store_size(&zc), ZNS_META_ALIGN),
        };
    }
    if (!zns_flash_config_check(&c, &err) ||
        !(m = femu_media_zns_new(&c, n->sra.on ? &ra : NULL, plp_on(n) ? &plp : NULL,
                                 &err))) {
        error_setg(errp, "%s", err);
        return NULL;
    }
    return m;
}

static uint64_t zns_zasl_bytes(FemuCtrl *n)
{
    uint8_t zasl = zns_params(n)->zasl ? zns_params(n)->zasl : n->mdts;
    return zasl ? 4096ULL << zasl : 0;
}

/*
 * With power-loss protection the data goes to the model's buffer, not to the backend: it
 * reaches the backend when it is programmed, or is in the PLP store when protected (bit 0
 * of CDW3, a durable zone or namespace). The data is in the buffer before the write
 * pointer moves, so a zone that fills up drains it too.
 */
static uint16_t zns_write_buffered(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns,
                                   const NvmeCmd *cmd, ZoneChangeCtx *ctx, QEMUSGList *sg,
                                   uint64_t lba, uint64_t nlb)
{
    ZnsNs *z = ns_zns(ns);
    uint64_t len = nlb << ns->lba_shift;
    bool flagged = (le64_to_cpu(cmd->res1) >> 32) & 1;
    g_autofree uint8_t *data = NULL;
    FemuMediaReq r = {
        .op = FEMU_MEDIA_WRITE, .nsid = ns->nsid, .len = len, .arrival_ns = ctx->now,
        .offset = ns->backend_offset + (lba << ns->lba_shift),
        .protect = plp_protects(z->plp_mode, flagged,
                                plp_zone_in(z->plp_zones, zone_index(z->zones, lba))),
        /* with the write cache off (Set Features WCE=0), every write is written through */
        .fua = (le16_to_cpu(((const NvmeRwCmd *)cmd)->control) & NVME_RW_FUA) ||
               !n->features.vwc,
    };

    if (cmd->opcode == NVME_CMD_WRITE_ZEROES) {
        r.op = FEMU_MEDIA_WRITE_ZEROES;
    } else {
        uint16_t status;
        data = g_malloc(len);
        status = femu_sg_from_guest(n, sg, data, len);
        if (status) {
            return status;
        }
        r.data = data;
        ns->io.bytes_written += len;
        ns->io.write_cmds++;
    }
    ctx->deadline = MAX(ctx->deadline, femu_ns_media_submit(ns, &r));
    femu_crash_point(n, "write-placed");
    zone_write_commit(z->zones, lba, nlb);
    if (cmd->opcode == NVME_CMD_ZONE_APPEND) {
        req->cqe.result = cpu_to_le32(lba);
        req->cqe.dw1 = cpu_to_le32(lba >> 32);
    }
    return NVME_SUCCESS;
}

/*
 * Writes, Write Zeroes and Zone Append. The zone is checked, the data put in place, and
 * only then does the write pointer move (and its record get saved): a failed transfer
 * changes no zone, and the blocks it reached read as zeroes again.
 */
static uint16_t zns_write(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns,
                          const NvmeCmd *cmd, ZoneChangeCtx *ctx)
{
    const NvmeRwCmd *rw = (const NvmeRwCmd *)cmd;
    bool append = cmd->opcode == NVME_CMD_ZONE_APPEND;
    bool zeroes = cmd->opcode == NVME_CMD_WRITE_ZEROES;
    uint64_t slba = le64_to_cpu(rw->slba), nlb = (uint64_t)le16_to_cpu(rw->nlb) + 1;
    uint64_t len = nlb << ns->lba_shift, lba, offset;
    uint64_t limit = append ? zns_zasl_bytes(n) : (n->mdts ? 4096ULL << n->mdts : 0);
    QEMUSGList sg;
    uint16_t status;

    req->slba = slba;
    if (!zeroes && limit && len > limit) {
        return NVME_INVALID_FIELD;
    }
    if (!zeroes) {
        status = femu_map_dptr(n, cmd, len, len, false, false, &sg);
        if (status) {
            return status;
        }
    }
    status = zone_to_nvme(zone_write_check(ns_zones(ns), slba, nlb, append, &lba));
    if (status) {
        goto out;
    }
    offset = ns->backend_offset + (lba << ns->lba_shift);
    if (ns->media_buffers) {
        status = zns_write_buffered(n, req, ns, cmd, ctx, &sg, lba, nlb);
        goto out;
    }
    if (zeroes) {
        femu_backend_zero(n, offset, len);
    } else {
        status = femu_sg_from_guest(n, &sg, n->data + offset, len);
        if (status) {
            /* above the write pointer, where blocks read as zeroes */
            femu_backend_zero(n, offset, len);
            goto out;
        }
        ns->io.bytes_written += len;
        ns->io.write_cmds++;
    }
    femu_crash_point(n, "write-placed");
    zone_write_commit(ns_zones(ns), lba, nlb);
    ctx->deadline = MAX(ctx->deadline, femu_ns_media_submit(ns, &(FemuMediaReq){
        .op = zeroes ? FEMU_MEDIA_WRITE_ZEROES : FEMU_MEDIA_WRITE, .nsid = ns->nsid,
        .offset = offset, .len = len, .arrival_ns = ctx->now }));
    if (append) {
        req->cqe.result = cpu_to_le32(lba);
        req->cqe.dw1 = cpu_to_le32(lba >> 32);
    }
out:
    if (!zeroes) {
        qemu_sglist_destroy(&sg);
    }
    return status;
}

/* Reads and compares: the zone rules, then the NVM command set's path. */
static uint16_t zns_read(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns,
                         const NvmeCmd *cmd, ZoneChangeCtx *ctx)
{
    const NvmeRwCmd *rw = (const NvmeRwCmd *)cmd;
    uint64_t slba = le64_to_cpu(rw->slba), nlb = (uint64_t)le16_to_cpu(rw->nlb) + 1;
    uint16_t status = zone_to_nvme(zone_read_check(ns_zones(ns), slba, nlb));

    req->slba = slba;
    if (status) {
        return status;
    }
    return femu_nvm_rw(n, req, ns, cmd, ctx->now, &ctx->deadline);
}

static uint16_t zone_mgmt_send(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd)
{
    const NvmeZoneSendCmd *c = (const NvmeZoneSendCmd *)cmd;
    uint64_t slba = le64_to_cpu(c->slba);
    bool all = c->zsflags & NVME_ZSFLAG_SELECT_ALL;
    g_autofree uint8_t *zde = NULL;
    uint16_t status;

    if (c->zsa == NVME_ZONE_ACTION_SET_ZD_EXT) {
        if (!ns_zones(ns)->cfg.zde_bytes || all) {
            return NVME_INVALID_FIELD;
        }
        zde = g_malloc0(ns_zones(ns)->cfg.zde_bytes);
        status = femu_copy_dptr(n, cmd, ns_zones(ns)->cfg.zde_bytes, zde,
                                ns_zones(ns)->cfg.zde_bytes, false, false);
        if (status) {
            return status;
        }
    } else if (c->zsa < NVME_ZONE_ACTION_CLOSE || c->zsa > NVME_ZONE_ACTION_OFFLINE) {
        return NVME_INVALID_FIELD;
    }
    trace_femu_zone_send(ns->nsid, c->zsa, slba, all);
    return zone_to_nvme(zone_manage(ns_zones(ns), c->zsa, slba, all, zde));
}

/* A zone's descriptor (and extension, when zde) at d. */
static void zone_descriptor(const ZoneSet *zs, uint64_t idx, uint64_t zde, uint8_t *d)
{
    const Zone *zone = &zs->zones[idx];
    NvmeZoneDescr *desc = (NvmeZoneDescr *)d;
    const uint8_t *ext = zone_zde(zs, idx);

    memset(d, 0, sizeof(*desc) + zde);
    desc->zt = NVME_ZONE_TYPE_SEQ_WRITE;
    desc->zs = zone->state << 4;
    desc->za = zone->attrs;
    desc->zcap = cpu_to_le64(zs->cfg.zone_cap);
    desc->zslba = cpu_to_le64(zone->zslba);
    /* the write pointer means nothing in an Offline zone; elsewhere it is exact */
    desc->wp = cpu_to_le64(zone->state != ZONE_OFFLINE ? zone->wp : UINT64_MAX);
    if (zde && ext) {
        memcpy(d + sizeof(*desc), ext, zde);
    }
}

/*
 * Zone Management Receive. One walk over the zones from SLBA (all of them only for the
 * header's count), and the report goes out ZNS_REPORT_CHUNK bytes at a time, so neither
 * time nor memory follow the size of the host's buffer: the transfer is at most the
 * header and a descriptor per matching zone.
 */
static uint16_t zone_mgmt_recv(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd)
{
    uint64_t slba = (uint64_t)le32_to_cpu(cmd->cdw11) << 32 | le32_to_cpu(cmd->cdw10);
    uint64_t buf_len = ((uint64_t)le32_to_cpu(cmd->cdw12) + 1) * 4;
    uint32_t dw13 = le32_to_cpu(cmd->cdw13);
    uint8_t zra = dw13 & 0xff, filter = (dw13 >> 8) & 0xff;
    bool partial = dw13 & (1u << 16);
    ZoneSet *zs = ns_zones(ns);
    uint64_t zde = zra == NVME_ZONE_REPORT_EXTENDED ? zs->cfg.zde_bytes : 0;
    uint64_t desc = sizeof(NvmeZoneDescr) + zde, total, shown, len, chunk, used, sent = 0;
    uint64_t idx = zone_index(zs, slba);
    g_autofree uint8_t *buf = NULL;
    NvmeZoneReportHeader *hdr;
    QEMUSGList sg;
    uint16_t status;

    if (zra > NVME_ZONE_REPORT_EXTENDED || (zra == NVME_ZONE_REPORT_EXTENDED && !zde) ||
        filter > NVME_ZONE_REPORT_OFFLINE || buf_len < sizeof(*hdr)) {
        return NVME_INVALID_FIELD;
    }
    if (n->mdts && buf_len > (4096ULL << n->mdts)) {
        return NVME_INVALID_FIELD;
    }
    if (slba >= ns->nlbas) {
        return NVME_LBA_RANGE;
    }
    total = zone_report_count(zs, slba, filter);
    shown = MIN(total, (buf_len - sizeof(*hdr)) / desc);
    len = sizeof(*hdr) + shown * desc;
    status = femu_map_dptr(n, cmd, buf_len, len, false, true, &sg);
    if (status) {
        return status;
    }
    chunk = MIN(len, ZNS_REPORT_CHUNK);
    buf = g_malloc0(chunk);
    hdr = (NvmeZoneReportHeader *)buf;
    hdr->nr_zones = cpu_to_le64(partial ? shown : total);
    used = sizeof(*hdr);
    for (uint64_t k = 0; k < shown && !status; k++, idx++) {
        idx = zone_report_next(zs, idx, filter);
        if (used + desc > chunk) {
            status = femu_sg_to_guest(n, &sg, sent, buf, used);
            sent += used;
            used = 0;
        }
        zone_descriptor(zs, idx, zde, buf + used);
        used += desc;
    }
    if (!status) {
        status = femu_sg_to_guest(n, &sg, sent, buf, used);
    }
    qemu_sglist_destroy(&sg);
    return status;
}

/* Deallocation does nothing on zones (a reset frees space), but offline zones refuse it. */
static uint16_t zns_dsm(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd)
{
    uint32_t nr = (le32_to_cpu(cmd->cdw10) & 0xff) + 1;
    g_autofree NvmeDsmRange *ranges = g_new(NvmeDsmRange, nr);
    uint16_t status = femu_copy_dptr(n, cmd, nr * sizeof(*ranges), ranges,
                                     nr * sizeof(*ranges), false, false);

    for (uint32_t i = 0; !status && i < nr; i++) {
        uint64_t slba = le64_to_cpu(ranges[i].slba), nlb = le32_to_cpu(ranges[i].nlb);
        if (!nlb) {
            continue;
        }
        if (slba + nlb < slba || slba + nlb > ns->nlbas) {
            return NVME_LBA_RANGE;
        }
        for (uint64_t z = zone_index(ns_zones(ns), slba);
             z <= zone_index(ns_zones(ns), slba + nlb - 1); z++) {
            if (ns_zones(ns)->zones[z].state == ZONE_OFFLINE) {
                return zone_to_nvme(ZONE_IS_OFFLINE);
            }
        }
    }
    return status;
}

static uint16_t zns_io(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                       uint64_t now, uint64_t *deadline)
{
    ZoneChangeCtx ctx = { .n = n, .ns = ns, .now = now, .deadline = now };
    uint16_t status;

    ns_zones(ns)->on_change = on_zone_change;
    ns_zones(ns)->opaque = &ctx;
    switch (cmd->opcode) {
    case NVME_CMD_WRITE:
    case NVME_CMD_WRITE_ZEROES:
    case NVME_CMD_ZONE_APPEND:
        status = zns_write(n, req, ns, cmd, &ctx);
        break;
    case NVME_CMD_READ:
    case NVME_CMD_COMPARE:
        status = zns_read(n, req, ns, cmd, &ctx);
        break;
    case NVME_CMD_ZONE_MGMT_SEND:
        status = zone_mgmt_send(n, ns, cmd);
        break;
    case NVME_CMD_ZONE_MGMT_RECV:
        status = zone_mgmt_recv(n, ns, cmd);
        break;
    case NVME_CMD_DSM:
        status = zns_dsm(n, ns, cmd);
        break;
    default:
        status = femu_nvm_io(n, req, ns, cmd, now, &ctx.deadline);
        break;
    }
    ns_zones(ns)->on_change = NULL;
    zns_drop_reset_zones(&ctx);
    if (ctx.resets) {
        g_array_free(ctx.resets, TRUE);
    }
    *deadline = ctx.deadline;
    return status;
}

static void zns_identify_ns(FemuCtrl *n, FemuNamespace *ns, uint8_t *buf)
{
    NvmeIdNsZoned *id = (NvmeIdNsZoned *)buf;
    const ZoneConfig *c = &ns_zones(ns)->cfg;
    /* the open limit may not exceed the active one */
    uint32_t open = c->max_open ? c->max_open : c->max_active;

    id->zoc = 0;
    id->ozcs = cpu_to_le16(c->cross_zone_read ? 1 : 0);
    /* 0-based; all ones: no limit */
    id->mar = cpu_to_le32(c->max_active ? c->max_active - 1 : UINT32_MAX);
    id->mor = cpu_to_le32(open ? open - 1 : UINT32_MAX);
    /* the zone size in LBAs of each supported format (512 and 4096 bytes) */
    for (int f = 0; f < 2; f++) {
        uint8_t shift = f ? 12 : 9;
        id->lbafe[f].zsze = cpu_to_le64((c->zone_size << ns->lba_shift) >> shift);
        id->lbafe[f].zdes = c->zde_bytes / 64;
    }
}

static void zns_identify_ctrl(FemuCtrl *n, uint8_t *buf)
{
    uint64_t zasl = zns_zasl_bytes(n);
    ((NvmeIdCtrlZoned *)buf)->zasl = zasl ? ctz64(zasl) - 12 : 0;
}

static void zns_effects(FemuCtrl *n, NvmeEffectsLog *log)
{
    /* Linux makes a zoned namespace read-only unless Zone Append is supported */
    log->iocs[NVME_CMD_ZONE_APPEND] = cpu_to_le32(NVME_CMD_EFF_CSUPP | NVME_CMD_EFF_LBCC);
    log->iocs[NVME_CMD_ZONE_MGMT_SEND] = cpu_to_le32(NVME_CMD_EFF_CSUPP | NVME_CMD_EFF_LBCC);
    log->iocs[NVME_CMD_ZONE_MGMT_RECV] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
}

static bool zns_check_plp(FemuCtrl *n, Error **errp)
{
    ZnsParams *p = zns_params(n);
    PlpMode mode;

    if (!plp_on(n)) {
        if (p->plp_zones && *p->plp_zones) {
            error_setg(errp, "plp_zones='%s' needs plp=selective", p->plp_zones);
            return false;
        }
        return true;
    }
    for (uint32_t nsid = 1; nsid <= n->num_namespaces; nsid++) {
        if (!plp_mode_of(n, nsid, &mode, errp)) {
            return false;
        }
    }
    if (femu_ctrl_kind(n) != &zns_kind) {
        error_setg(errp, "plp= needs every namespace zoned (femu_mode=3 without ns_types)");
        return false;
    }
    if (!n->vwc) {
        error_setg(errp, "plp= needs vwc=1: the non-PLP buffer is a volatile write cache "
                   "that the host flushes");
        return false;
    }
    if (p->plp_flush && *p->plp_flush && strcmp(p->plp_flush, "balanced") &&
        strcmp(p->plp_flush, "normal")) {
        error_setg(errp, "plp_flush='%s': allowed balanced or normal", p->plp_flush);
        return false;
    }
    if (p->plp_flush_pct < 1 || p->plp_flush_pct > 100) {
        error_setg(errp, "plp_flush_pct=%u is out of range: allowed 1..100",
                   p->plp_flush_pct);
        return false;
    }
    if (p->plp_buf_mb > 16384 || p->buf_mb > 16384) {
        error_setg(errp, "plp_buf_mb=%u, buf_mb=%u: allowed 0..16384 each (MiB of host "
                   "memory)", p->plp_buf_mb, p->buf_mb);
        return false;
    }
    if (p->plp_ctrl_mw > 100000 || p->plp_chip_mw > 100000) {
        error_setg(errp, "plp_ctrl_mw=%u, plp_chip_mw=%u: allowed 0..100000 each",
                   p->plp_ctrl_mw, p->plp_chip_mw);
        return false;
    }
    return true;
}

static bool zns_check_props(FemuCtrl *n, Error **errp)
{
    ZnsParams *p = zns_params(n);
    uint32_t z = p->zone_size_mb;

    if (z < 1 || z > 65536 || (z & (z - 1))) {
        error_setg(errp, "zns_zone_size_mb=%u is invalid: allowed a power of two from 1 "
                   "to 65536 (Linux needs power-of-two zones)", z);
        return false;
    }
    if (p->zasl > 15 || (n->mdts && p->zasl > n->mdts)) {
        error_setg(errp, "zns_zasl=%u is out of range: allowed 0 (= mdts) .. mdts=%u",
                   p->zasl, n->mdts);
        return false;
    }
    return zns_check_plp(n, errp);
}

/* A zoned namespace holds whole zones; its zone state follows the device's data. */
static bool zns_size_ns(FemuCtrl *n, uint32_t nsid, uint64_t *bytes, bool derived,
                        uint64_t *meta_bytes, Error **errp)
{
    ZnsParams *p = zns_params(n);
    uint64_t zone = (uint64_t)p->zone_size_mb * MiB;
    ZoneConfig c;

    if (derived) {
        *bytes = *bytes / zone * zone;
    }
    if (*bytes < zone || *bytes % zone) {
        error_setg(errp, "namespace %u of %" PRIu64 " MiB is not a whole number of zones of "
                   "zns_zone_size_mb=%u (devsz_mb / ns_sizes_mb)", nsid, *bytes / MiB,
                   p->zone_size_mb);
        return false;
    }
    /* a bad configuration stops here, before the backend is sized for its state */
    if (!zns_zone_config(n, *bytes, n->lba_index ? 12 : 9, &c, errp)) {
        return false;
    }
    *meta_bytes = ROUND_UP(zone_store_size(&c), ZNS_META_ALIGN);
    if (nsid == 1 && plp_on(n)) {
        uint64_t all = 0;
        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            all += n->ns_bytes[i];      /* at least what the namespaces end up with */
        }
        *meta_bytes += plp_store_bytes(n, all);
    }
    return true;
}

static void zns_stats(FemuNamespace *ns, FemuMediaStatFn *emit, void *opaque)
{
    ZoneSet *zs = ns_zones(ns);

    emit(opaque, "zones_open", zs->nr_open);
    emit(opaque, "zones_active", zs->nr_active);
}

static PlpBuffer *zns_plp(FemuCtrl *n)
{
    return n->nr_medias == 1 ? femu_media_zns_plp(n->medias[0]) : NULL;
}

/* Power is cut: the media models have flushed what their capacitors hold (power_loss). */
static void zns_power_loss(FemuCtrl *n)
{
    PlpBuffer *p = zns_plp(n);

    if (p) {
        const PlpLoss *loss = &plp_stats(p)->last_loss;
        trace_femu_plp_power_loss(loss->pages, loss->lost_sectors, loss->normal_ns,
                                  loss->balanced_ns);
    }
}

/*
 * Power is back (at start and at the reset after a power loss): the protected data goes
 * back to its place, and each zone's write pointer back to where its durable data ends.
 * Nothing above a saved write pointer was acknowledged, so a durable end past it (a kill
 * between a write's data and its record) stops at it, and what lies above is cleared.
 */
static void zns_power_on(FemuCtrl *n)
{
    PlpBuffer *p = zns_plp(n);
    uint64_t zone_bytes = (uint64_t)zns_params(n)->zone_size_mb * MiB, rolled = 0;
    bool adopt;
    PlpRecovery rec;

    if (!p) {
        return;
    }
    adopt = plp_take_fresh(p);
    plp_recover(p, femu_now_ns(n), &rec);
    femu_crash_point(n, "plp-recovered");
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        FemuNamespace *ns = &n->ns[i];
        ZoneSet *zs = ns_zones(ns);
        uint64_t first = ns->backend_offset / zone_bytes;

        for (uint64_t z = 0; z < zs->cfg.nr_zones; z++) {
            Zone *zone = &zs->zones[z];
            uint64_t wp_bytes = (zone->wp - zone->zslba) << ns->lba_shift;

            /* a store made now: what the backend holds below the write pointer is durable */
            if (adopt || plp_durable_end(p, first + z) > wp_bytes) {
                plp_set_durable_end(p, first + z, wp_bytes);
            }
            rolled += zone_rollback(zs, z, zone->zslba +
                                    (plp_durable_end(p, first + z) >> ns->lba_shift));
        }
        zns_clear_above_wp(n, ns);
    }
    trace_femu_plp_power_on(rec.sectors, rec.pages, rec.ns, rolled);
}

static const Property zns_props[] = {
    DEFINE_PROP_UINT32("zns_num_ch", ZnsParams, num_ch, 8),
    DEFINE_PROP_UINT32("zns_num_lun", ZnsParams, num_lun, 4),
    DEFINE_PROP_UINT32("zns_num_plane", ZnsParams, num_plane, 1),
    DEFINE_PROP_UINT32("zns_num_blk", ZnsParams, num_blk, 0),
    DEFINE_PROP_UINT8("zns_flash_type", ZnsParams, flash_type, 3),
    DEFINE_PROP_INT64("zns_pg_rd_lat", ZnsParams, pg_rd_lat, -1),
    DEFINE_PROP_INT64("zns_pg_wr_lat", ZnsParams, pg_wr_lat, -1),
    DEFINE_PROP_INT64("zns_blk_er_lat", ZnsParams, blk_er_lat, -1),
    DEFINE_PROP_UINT32("zns_max_open", ZnsParams, max_open, 0),
    DEFINE_PROP_UINT32("zns_max_active", ZnsParams, max_active, 0),
    DEFINE_PROP_UINT32("zns_zd_ext_size", ZnsParams, zd_ext_size, 0),
    DEFINE_PROP_SIZE("zns_zone_cap", ZnsParams, zone_cap, 0),
    DEFINE_PROP_UINT32("zns_zone_size_mb", ZnsParams, zone_size_mb, 16),
    DEFINE_PROP_BOOL("zns_cross_zone_read", ZnsParams, cross_zone_read, false),
    DEFINE_PROP_UINT8("zns_zasl", ZnsParams, zasl, 0),
    DEFINE_PROP_UINT32("zns_stripe", ZnsParams, stripe, 0),
    DEFINE_PROP_UINT32("zns_wbuf_kb", ZnsParams, wbuf_kb, 0),
    DEFINE_PROP_UINT32("zns_wbuf_zones", ZnsParams, wbuf_zones, 0),
    DEFINE_PROP_STRING("plp", ZnsParams, plp),
    DEFINE_PROP_STRING("plp_zones", ZnsParams, plp_zones),
    DEFINE_PROP_STRING("plp_flush", ZnsParams, plp_flush),
    DEFINE_PROP_UINT32("plp_buf_mb", ZnsParams, plp_buf_mb, 32),
    DEFINE_PROP_UINT32("buf_mb", ZnsParams, buf_mb, 64),
    DEFINE_PROP_UINT32("plp_flush_pct", ZnsParams, plp_flush_pct, 70),
    DEFINE_PROP_UINT32("plp_ctrl_mw", ZnsParams, plp_ctrl_mw, 2000),
    DEFINE_PROP_UINT32("plp_chip_mw", ZnsParams, plp_chip_mw, 150),
};

static const FemuNsKind zns_kind = {
    .read_ahead = true,
    .name = "zns",
    .femu_mode = 3,
    .model_name = "FEMU ZNS-SSD Controller",
    .csi = NVME_CSI_ZONED,
    .props = zns_props,
    .nr_props = ARRAY_SIZE(zns_props),
    .params_size = sizeof(ZnsParams),
    .check_props = zns_check_props,
    .size_ns = zns_size_ns,
    .flash_blocks = zns_flash_blocks,
    .media_new = zns_media_new,
    .ns_init = zns_ns_init,
    .ns_free = zns_ns_free,
    .io = zns_io,
    .identify_ns = zns_identify_ns,
    .identify_ctrl = zns_identify_ctrl,
    .effects = zns_effects,
    .ctrl_reset = zns_ctrl_reset,
    .stats = zns_stats,
    .power_loss = zns_power_loss,
    .power_on = zns_power_on,
};

FEMU_NS_KIND_REGISTER(zns_kind)
