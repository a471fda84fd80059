/*
 * femu_mode=3 (zns): the NVMe Zoned Namespace command set on top of the zone state
 * machine (zns/zone.c) and zones on flash (zns/zns-flash.c, via the media interface).
 * Zone state lives in the backend right after the namespace's data, so a file backend
 * keeps it across restarts.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "femu.h"
#include "zns/zone.h"
#include "zns/zns-flash.h"
#include "trace.h"

#define ZNS_META_ALIGN MiB

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

uint64_t femu_zns_meta_bytes(FemuCtrl *n, uint64_t nr_zones)
{
    ZoneConfig c = {
        .nr_zones = nr_zones, .zone_size = 1, .zone_cap = 1,
        .zde_bytes = n->zns.zd_ext_size,
    };
    g_autofree char *err = NULL;
    ZoneSet *zs = zone_set_new(&c, &err);
    uint64_t bytes = zs ? zone_state_size(zs) : 0;

    zone_set_free(zs);
    return ROUND_UP(bytes, ZNS_META_ALIGN);
}

/* Timing of state changes: a reset erases, a finish or close writes the buffer out. */
typedef struct ZoneChangeCtx {
    FemuCtrl *n;
    FemuNamespace *ns;
    uint64_t now;
    uint64_t deadline;
} ZoneChangeCtx;

static void on_zone_change(void *opaque, uint64_t zone, ZoneState from, ZoneState to)
{
    ZoneChangeCtx *c = opaque;
    FemuNamespace *ns = c->ns;
    FemuMediaReq r = {
        .nsid = ns->nsid,
        .offset = ns->backend_offset + (zone * ns->zones->cfg.zone_size << ns->lba_shift),
        .len = ns->zones->cfg.zone_size << ns->lba_shift,
        .arrival_ns = c->now,
    };
    uint64_t t;

    if (to == ZONE_EMPTY && from != ZONE_EMPTY) {
        /* reads of a reset zone return zeroes (DLFEAT); the host pages are given back */
        femu_backend_zero(c->n, ns->backend_offset + (zone * ns->zones->cfg.zone_size <<
                                                      ns->lba_shift), r.len);
        r.op = FEMU_MEDIA_ZONE_RESET;
    } else if ((to == ZONE_FULL || to == ZONE_CLOSED) &&
               (from == ZONE_IMPLICIT_OPEN || from == ZONE_EXPLICIT_OPEN)) {
        r.op = FEMU_MEDIA_ZONE_DRAIN;
    } else {
        return;
    }
    t = femu_ns_media_submit(ns, &r);
    c->deadline = MAX(c->deadline, t);
    trace_femu_zone_change(ns->nsid, zone, from, to);
}

static void persist(FemuNamespace *ns)
{
    if (ns->zone_meta) {
        zone_state_save(ns->zones, ns->zone_meta);
    }
}

bool femu_zns_init_ns(FemuCtrl *n, FemuNamespace *ns, uint64_t data_bytes, uint8_t *meta,
                      Error **errp)
{
    FemuZnsParams *p = &n->zns;
    uint64_t zone_bytes = (uint64_t)p->zone_size_mb * MiB;
    uint64_t cap_bytes = p->zone_cap ? p->zone_cap : zone_bytes;
    uint64_t lba = 1ULL << ns->lba_shift;
    ZoneConfig c = {
        .nr_zones = data_bytes / zone_bytes,
        .zone_size = zone_bytes / lba,
        .zone_cap = cap_bytes / lba,
        .max_open = p->max_open,
        .max_active = p->max_active,
        .zde_bytes = p->zd_ext_size,
        .cross_zone_read = p->cross_zone_read,
    };
    g_autofree char *err = NULL;

    if (cap_bytes > zone_bytes || cap_bytes % lba) {
        error_setg(errp, "zns_zone_cap=%" PRIu64 " is invalid: allowed a multiple of the "
                   "LBA size (%" PRIu64 " bytes) up to the zone size (%" PRIu64 " bytes)",
                   cap_bytes, lba, zone_bytes);
        return false;
    }
    ns->zones = zone_set_new(&c, &err);
    if (!ns->zones) {
        error_setg(errp, "%s", err);
        return false;
    }
    ns->csi = NVME_CSI_ZONED;
    ns->nlbas = c.nr_zones * c.zone_size;
    ns->zone_meta = meta;
    /* a file backend brings back the zones as they were; anything else starts empty */
    if (!meta || !zone_state_load(ns->zones, meta, zone_state_size(ns->zones))) {
        persist(ns);
    }
    return true;
}

/* A controller reset closes open zones as a power cycle does (unwritten ones go Empty). */
void femu_zns_ctrl_reset(FemuNamespace *ns)
{
    size_t len = zone_state_size(ns->zones);
    g_autofree uint8_t *buf = g_malloc(len);

    zone_state_save(ns->zones, buf);
    zone_state_load(ns->zones, buf, len);
    persist(ns);
}

void femu_zns_free_ns(FemuNamespace *ns)
{
    if (ns->zones) {
        zone_set_free(ns->zones);
        ns->zones = NULL;
    }
}

/*
 * Zones of `bytes` on flash. Alone, the flash is the zns_* geometry; shared with other
 * namespaces, it is the shared model's and the zones start at first_block.
 */
static bool zns_flash_config(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                             uint32_t first_block, ZnsFlashConfig *c, Error **errp)
{
    FemuZnsParams *p = &n->zns;
    FemuBbParams *b = &n->bb;
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
    } else if (!femu_fill_timing(p->flash_type, p->pg_rd_lat, p->pg_wr_lat, p->blk_er_lat, b,
                                 &c->tm, errp)) {
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
uint32_t femu_zns_blocks(FemuCtrl *n, uint64_t bytes, Error **errp)
{
    FemuZnsParams *p = &n->zns;
    uint64_t zone = (uint64_t)p->zone_size_mb * MiB;
    ZnsFlashConfig c = {
        .geo = femu_flash_geometry(n, 1),
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

FemuMedia *femu_zns_media_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                              uint32_t first_block, Error **errp)
{
    g_autofree char *err = NULL;
    ZnsFlashConfig c;
    FemuMedia *m;

    if (!zns_flash_config(n, bytes, shared, first_block, &c, errp)) {
        return NULL;
    }
    if (!zns_flash_config_check(&c, &err) || !(m = femu_media_zns_new(&c, &err))) {
        error_setg(errp, "%s", err);
        return NULL;
    }
    return m;
}

uint64_t femu_zns_zasl_bytes(FemuCtrl *n)
{
    uint8_t zasl = n->zns.zasl ? n->zns.zasl : n->mdts;
    return zasl ? 4096ULL << zasl : 0;
}

static uint16_t zns_write(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns,
                          const NvmeCmd *cmd, ZoneChangeCtx *ctx)
{
    const NvmeRwCmd *rw = (const NvmeRwCmd *)cmd;
    bool append = cmd->opcode == NVME_CMD_ZONE_APPEND;
    bool zeroes = cmd->opcode == NVME_CMD_WRITE_ZEROES;
    uint64_t slba = le64_to_cpu(rw->slba), nlb = (uint64_t)le16_to_cpu(rw->nlb) + 1;
    uint64_t len = nlb << ns->lba_shift, lba;
    uint64_t limit = append ? femu_zns_zasl_bytes(n) : (n->mdts ? 4096ULL << n->mdts : 0);
    QEMUSGList sg;
    uint16_t status;

    req->slba = slba;
    if (!zeroes && limit && len > limit) {
        return NVME_INVALID_FIELD;
    }
    if (!zeroes) {
        /* map first: a bad data pointer must not move the write pointer */
        status = femu_map_dptr(n, cmd, len, false, false, &sg);
        if (status) {
            return status;
        }
    }
    status = zone_to_nvme(zone_write(ns->zones, slba, nlb, append, &lba));
    if (status == NVME_SUCCESS) {
        uint8_t *data = n->data + ns->backend_offset + (lba << ns->lba_shift);
        FemuMediaReq r = { .op = zeroes ? FEMU_MEDIA_WRITE_ZEROES : FEMU_MEDIA_WRITE,
                           .nsid = ns->nsid,
                           .offset = ns->backend_offset + (lba << ns->lba_shift), .len = len,
                           .arrival_ns = ctx->now };
        if (zeroes) {
            femu_backend_zero(n, ns->backend_offset + (lba << ns->lba_shift), len);
        } else {
            status = femu_sg_from_guest(n, &sg, data, len);
        }
        ctx->deadline = MAX(ctx->deadline, femu_ns_media_submit(ns, &r));
        if (!zeroes) {
            ns->io.bytes_written += len;
            ns->io.write_cmds++;
        }
        if (append) {
            req->cqe.result = cpu_to_le32(lba);
            req->cqe.dw1 = cpu_to_le32(lba >> 32);
        }
        persist(ns);
    }
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
    uint16_t status = zone_to_nvme(zone_read_check(ns->zones, slba, nlb));

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
        if (!ns->zones->cfg.zde_bytes || all) {
            return NVME_INVALID_FIELD;
        }
        zde = g_malloc0(ns->zones->cfg.zde_bytes);
        status = femu_copy_dptr(n, cmd, zde, ns->zones->cfg.zde_bytes, false, false);
        if (status) {
            return status;
        }
    } else if (c->zsa < NVME_ZONE_ACTION_CLOSE || c->zsa > NVME_ZONE_ACTION_OFFLINE) {
        return NVME_INVALID_FIELD;
    }
    trace_femu_zone_send(ns->nsid, c->zsa, slba, all);
    status = zone_to_nvme(zone_manage(ns->zones, c->zsa, slba, all, zde));
    persist(ns);
    return status;
}

static uint16_t zone_mgmt_recv(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd)
{
    uint64_t slba = (uint64_t)le32_to_cpu(cmd->cdw11) << 32 | le32_to_cpu(cmd->cdw10);
    uint64_t len = ((uint64_t)le32_to_cpu(cmd->cdw12) + 1) * 4;
    uint32_t dw13 = le32_to_cpu(cmd->cdw13);
    uint8_t zra = dw13 & 0xff, filter = (dw13 >> 8) & 0xff;
    bool partial = dw13 & (1u << 16);
    ZoneSet *zs = ns->zones;
    uint64_t zde = zra == NVME_ZONE_REPORT_EXTENDED ? zs->cfg.zde_bytes : 0;
    uint64_t desc = sizeof(NvmeZoneDescr) + zde, total, fit, shown;
    g_autofree uint8_t *buf = NULL;
    NvmeZoneReportHeader *hdr;

    if (zra > NVME_ZONE_REPORT_EXTENDED || (zra == NVME_ZONE_REPORT_EXTENDED && !zde) ||
        filter > NVME_ZONE_REPORT_OFFLINE || len < sizeof(NvmeZoneReportHeader)) {
        return NVME_INVALID_FIELD;
    }
    if (n->mdts && len > (4096ULL << n->mdts)) {
        return NVME_INVALID_FIELD;
    }
    if (slba >= ns->nlbas) {
        return NVME_LBA_RANGE;
    }
    total = zone_report_count(zs, slba, filter);
    fit = (len - sizeof(*hdr)) / desc;
    shown = MIN(total, fit);
    len = MIN(len, sizeof(*hdr) + shown * desc);
    buf = g_malloc0(len);
    hdr = (NvmeZoneReportHeader *)buf;
    hdr->nr_zones = cpu_to_le64(partial ? shown : total);
    for (uint64_t k = 0; k < shown; k++) {
        uint64_t z = zone_report_nth(zs, slba, filter, k);
        const Zone *zone = &zs->zones[z];
        NvmeZoneDescr *d = (NvmeZoneDescr *)(buf + sizeof(*hdr) + k * desc);
        /* the write pointer means nothing in an Offline zone; elsewhere it is exact */
        bool has_wp = zone->state != ZONE_OFFLINE;

        d->zt = NVME_ZONE_TYPE_SEQ_WRITE;
        d->zs = zone->state << 4;
        d->za = zone->attrs;
        d->zcap = cpu_to_le64(zs->cfg.zone_cap);
        d->zslba = cpu_to_le64(zone->zslba);
        d->wp = cpu_to_le64(has_wp ? zone->wp : UINT64_MAX);
        if (zde) {
            memcpy((uint8_t *)d + sizeof(*d), zs->zde + z * zde, zde);
        }
    }
    return femu_copy_dptr(n, cmd, buf, len, false, true);
}

/* Deallocation does nothing on zones (a reset frees space), but offline zones refuse it. */
static uint16_t zns_dsm(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd)
{
    uint32_t nr = (le32_to_cpu(cmd->cdw10) & 0xff) + 1;
    g_autofree NvmeDsmRange *ranges = g_new(NvmeDsmRange, nr);
    uint16_t status = femu_copy_dptr(n, cmd, ranges, nr * sizeof(*ranges), false, false);

    for (uint32_t i = 0; !status && i < nr; i++) {
        uint64_t slba = le64_to_cpu(ranges[i].slba), nlb = le32_to_cpu(ranges[i].nlb);
        if (!nlb) {
            continue;
        }
        if (slba + nlb < slba || slba + nlb > ns->nlbas) {
            return NVME_LBA_RANGE;
        }
        for (uint64_t z = zone_index(ns->zones, slba);
             z <= zone_index(ns->zones, slba + nlb - 1); z++) {
            if (ns->zones->zones[z].state == ZONE_OFFLINE) {
                return zone_to_nvme(ZONE_IS_OFFLINE);
            }
        }
    }
    return status;
}

uint16_t femu_zns_io(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                     uint64_t now, uint64_t *deadline)
{
    ZoneChangeCtx ctx = { .n = n, .ns = ns, .now = now, .deadline = now };
    uint16_t status;

    ns->zones->on_change = on_zone_change;
    ns->zones->opaque = &ctx;
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
        status = NVME_INVALID_OPCODE;
        break;
    }
    ns->zones->on_change = NULL;
    *deadline = ctx.deadline;
    return status;
}

void femu_zns_fill_id_ns(FemuCtrl *n, FemuNamespace *ns, NvmeIdNsZoned *id)
{
    const ZoneConfig *c = &ns->zones->cfg;

    id->zoc = 0;
    id->ozcs = cpu_to_le16(c->cross_zone_read ? 1 : 0);
    /* 0-based; all ones: no limit */
    id->mar = cpu_to_le32(c->max_active ? c->max_active - 1 : UINT32_MAX);
    /* the open limit may not exceed the active one */
    uint32_t open = c->max_open ? c->max_open : c->max_active;
    id->mor = cpu_to_le32(open ? open - 1 : UINT32_MAX);
    /* the zone size in LBAs of each supported format (512 and 4096 bytes) */
    for (int f = 0; f < 2; f++) {
        uint8_t shift = f ? 12 : 9;
        id->lbafe[f].zsze = cpu_to_le64((c->zone_size << ns->lba_shift) >> shift);
        id->lbafe[f].zdes = c->zde_bytes / 64;
    }
}
