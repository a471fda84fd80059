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
#include "zns-params.h"
#include "zns-io.h"
#include "../trace.h"

#define ZNS_REPORT_CHUNK (64 * KiB)    /* a zone report is built and copied this much at a time */

/* A zoned namespace's state (FemuNamespace.priv). */
typedef struct ZnsNs {
    ZnsIo io;                   /* the zones, and how its commands reach the model */
    FemuCtrl *n;
    FemuNamespace *ns;
    uint8_t *meta;              /* where the zone state persists, in the backend */
    uint8_t *plp_zones;         /* durable zones (a bitmap), with plp */
} ZnsNs;

static const FemuNsKind zns_kind;

static ZnsParams *zns_params(FemuCtrl *n)
{
    return femu_ns_kind_params(n, &zns_kind);
}

static ZoneSet *ns_zones(FemuNamespace *ns)
{
    return ((ZnsNs *)ns->priv)->io.zones;
}

static ZnsNs *ns_zns(FemuNamespace *ns)
{
    return ns->priv;
}

static bool plp_on(FemuCtrl *n)
{
    return zns_params_plp_on(zns_params(n));
}

static bool plp_mode_of(FemuCtrl *n, uint32_t nsid, PlpMode *mode, Error **errp)
{
    g_autofree char *err = NULL;

    if (!zns_params_plp_mode(zns_params(n), n->num_namespaces, nsid, mode, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

static bool zns_zone_config(FemuCtrl *n, uint64_t bytes, uint8_t lba_shift, ZoneConfig *c,
                            Error **errp)
{
    g_autofree char *err = NULL;

    if (!zns_params_zone_config(zns_params(n), bytes, lba_shift, c, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

/* The device's side of a command's zone changes (zns-io.c decides what they cost). */
static uint64_t zns_submit(void *opaque, FemuMediaReq *r)
{
    return femu_ns_media_submit(((ZnsNs *)opaque)->ns, r);
}

static void zns_changed(void *opaque, uint64_t zone, ZoneState from, ZoneState to)
{
    trace_femu_zone_change(((ZnsNs *)opaque)->ns->nsid, zone, from, to);
}

static void zns_placed(void *opaque)
{
    femu_crash_point(((ZnsNs *)opaque)->n, "write-placed");
}

/*
 * A reset zone's blocks read as zeroes once its Empty record is saved (DLFEAT; the host
 * pages are given back). A kill in between leaves data above a write pointer, which
 * start-up clears.
 */
static void zns_dropping(void *opaque, const FemuMediaReq *r)
{
    ZnsNs *z = opaque;

    femu_crash_point(z->n, "reset-saved");
    femu_backend_zero(z->n, r->offset, r->len);
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
    z->io = (ZnsIo){
        .zones = zs, .nsid = ns->nsid, .base = ns->backend_offset,
        .lba_shift = ns->lba_shift, .submit = zns_submit, .changed = zns_changed,
        .placed = zns_placed, .dropping = zns_dropping, .opaque = z,
    };
    z->n = n;
    z->ns = ns;
    z->meta = meta;
    ns->priv = z;
    ns->nlbas = c.nr_zones * c.zone_size;
    if (plp_on(n)) {
        if (!plp_mode_of(n, ns->nsid, &z->io.plp_mode, errp)) {
            return false;
        }
        z->plp_zones = plp_zones_parse(zns_params(n)->plp_zones, c.nr_zones, &err);
        if (!z->plp_zones) {
            error_setg(errp, "namespace %u: %s", ns->nsid, err);
            return false;
        }
        z->io.plp_zones = z->plp_zones;
        z->io.buffered = true;
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
    ZnsCmd c;

    if (n->power_lost) {
        return;     /* nothing is drained: what was not saved is lost (zns_power_on) */
    }
    zns_cmd_begin(&c, &ns_zns(ns)->io, femu_now_ns(n), true);
    zone_power_cycle(ns_zones(ns));
    zns_cmd_end(&c);
}

static void zns_ns_free(FemuNamespace *ns)
{
    ZnsNs *z = ns->priv;

    zone_set_free(z->io.zones);
    g_free(z->plp_zones);
    g_free(z);
    ns->priv = NULL;
}

/* Blocks per plane the zones of `bytes` need on the shared flash (mixed devices). */
static uint32_t zns_flash_blocks(FemuCtrl *n, uint64_t bytes, Error **errp)
{
    g_autofree char *err = NULL;
    uint32_t blocks = zns_params_flash_blocks(zns_params(n), &n->flash, bytes, &err);

    if (!blocks) {
        error_setg(errp, "%s", err);
    }
    return blocks;
}

/* Read-ahead stops where a zone's written data ends (the zone state is the device's). */
static uint64_t zns_readable(void *opaque, uint32_t nsid, uint64_t offset, uint64_t max)
{
    FemuNamespace *ns = femu_ns(opaque, nsid);

    if (!ns || ns->kind != &zns_kind) {
        return 0;
    }
    return zns_io_readable(&ns_zns(ns)->io, offset + ns->model.media_base, max);
}

/* The write buffer's Write Zeroes reach the backend as a clear (pages given back). */
static void zns_plp_zero(void *opaque, uint64_t off, uint64_t len)
{
    femu_backend_zero(opaque, off, len);
}

static FemuMedia *zns_media_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                                uint32_t first_block, Error **errp)
{
    g_autofree char *err = NULL;
    FemuReadAhead ra = { .readable = zns_readable, .opaque = n };
    PlpConfig plp;
    FemuMedia *m;

    if (plp_on(n)) {
        ZoneConfig zc;

        /* zns_check_plp refused mixed devices; namespace 1's zones were checked when sized */
        if (!zns_zone_config(n, n->sizes.bytes[0], n->lba_index ? 12 : 9, &zc, errp)) {
            return NULL;
        }
        zns_params_plp_config(zns_params(n), n->lba_index ? 4096 : 512, &plp);
        plp.data = n->data;
        plp.zero = zns_plp_zero;
        plp.zero_opaque = n;
        /* after namespace 1's zone state (zns_size_ns) */
        plp.store = n->data + n->data_bytes + ROUND_UP(zone_store_size(&zc), ZNS_META_ALIGN);
    }
    m = zns_params_media_new(zns_params(n), &n->flash, &n->sra, bytes, shared, first_block,
                             &ra, plp_on(n) ? &plp : NULL, &err);
    if (!m) {
        error_setg(errp, "%s", err);
    }
    return m;
}

static uint64_t zns_zasl_bytes(FemuCtrl *n)
{
    return zns_params_zasl_bytes(zns_params(n), n->mdts);
}

/*
 * With power-loss protection the data goes to the model's buffer, not to the backend: it
 * reaches the backend when it is programmed, or is in the PLP store when protected (bit 0
 * of CDW3, a durable zone or namespace).
 */
static uint16_t zns_write_buffered(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd,
                                   ZnsCmd *c, QEMUSGList *sg, uint64_t lba, uint64_t nlb)
{
    uint64_t len = nlb << ns->lba_shift;
    bool zeroes = cmd->opcode == NVME_CMD_WRITE_ZEROES;
    bool flagged = (le64_to_cpu(cmd->res1) >> 32) & 1;
    /* with the write cache off (Set Features WCE=0), every write is written through */
    bool fua = (le16_to_cpu(((const NvmeRwCmd *)cmd)->control) & NVME_RW_FUA) ||
               !n->features.vwc;
    g_autofree uint8_t *data = NULL;

    if (!zeroes) {
        uint16_t status;
        data = g_malloc(len);
        status = femu_sg_from_guest(n, sg, data, len);
        if (status) {
            return status;
        }
        ns->io.bytes_written += len;
        ns->io.write_cmds++;
    }
    zns_io_write(c, lba, nlb, zeroes, data, flagged, fua);
    return NVME_SUCCESS;
}

/*
 * Writes, Write Zeroes and Zone Append. The zone is checked, the data put in place, and
 * only then does the write pointer move (and its record get saved): a failed transfer
 * changes no zone, and the blocks it reached read as zeroes again.
 */
static uint16_t zns_write(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns,
                          const NvmeCmd *cmd, ZnsCmd *c)
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
    status = zns_io_write_check(&ns_zns(ns)->io, slba, nlb, append, &lba);
    if (status) {
        goto out;
    }
    offset = ns->backend_offset + (lba << ns->lba_shift);
    if (ns->media_buffers) {
        status = zns_write_buffered(n, ns, cmd, c, &sg, lba, nlb);
    } else if (zeroes) {
        femu_backend_zero(n, offset, len);
        zns_io_write(c, lba, nlb, true, NULL, false, false);
    } else {
        status = femu_sg_from_guest(n, &sg, n->data + offset, len);
        if (status) {
            /* above the write pointer, where blocks read as zeroes */
            femu_backend_zero(n, offset, len);
            goto out;
        }
        ns->io.bytes_written += len;
        ns->io.write_cmds++;
        zns_io_write(c, lba, nlb, false, NULL, false, false);
    }
    if (!status && append) {
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
                         const NvmeCmd *cmd, ZnsCmd *c)
{
    const NvmeRwCmd *rw = (const NvmeRwCmd *)cmd;
    uint64_t slba = le64_to_cpu(rw->slba), nlb = (uint64_t)le16_to_cpu(rw->nlb) + 1;
    uint16_t status = zns_io_read_check(&ns_zns(ns)->io, slba, nlb);

    req->slba = slba;
    if (status) {
        return status;
    }
    return femu_nvm_rw(n, req, ns, cmd, c->now, &c->deadline);
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
    return zns_io_status(zone_manage(ns_zones(ns), c->zsa, slba, all, zde));
}

/* A Select All action spread over passes: the namespace, the action, the next zone. */
typedef struct ZoneAllWork {
    FemuNamespace *ns;
    ZoneAction action;
    uint64_t next;
} ZoneAllWork;

/*
 * As many zones as the pass has room for: a zone looked at costs one page, one changed all
 * its pages (a reset erases them and gives its host pages back).
 */
static uint16_t zone_all_step(FemuCtrl *n, FemuRequest *req, uint64_t now, uint64_t *pages,
                              uint64_t *deadline)
{
    ZoneAllWork *w = req->step_state;
    ZoneSet *zs = ns_zones(w->ns);
    uint64_t zone_pages = DIV_ROUND_UP(zs->cfg.zone_size << w->ns->lba_shift, 4096);
    ZnsCmd c;

    zns_cmd_begin(&c, &ns_zns(w->ns)->io, now, false);
    zone_manage_some(zs, w->action, &w->next, pages, zone_pages);
    *deadline = MAX(*deadline, zns_cmd_end(&c));
    return w->next < zs->cfg.nr_zones ? NVME_NO_COMPLETE : NVME_SUCCESS;
}

/*
 * Select All Close, Finish, Reset and Offline change up to every zone of the namespace:
 * a long command (femu_req_run), so that a million zones are not one pass. Select All Open
 * changes at most the Closed zones, and Set ZDE refuses Select All: zone_mgmt_send's.
 */
static bool zone_send_is_long(const NvmeCmd *cmd)
{
    const NvmeZoneSendCmd *c = (const NvmeZoneSendCmd *)cmd;

    return cmd->opcode == NVME_CMD_ZONE_MGMT_SEND && (c->zsflags & NVME_ZSFLAG_SELECT_ALL) &&
           c->zsa >= NVME_ZONE_ACTION_CLOSE && c->zsa <= NVME_ZONE_ACTION_OFFLINE &&
           c->zsa != NVME_ZONE_ACTION_OPEN;
}

static uint16_t zone_send_all(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns,
                              const NvmeCmd *cmd, uint64_t now, uint64_t *deadline)
{
    const NvmeZoneSendCmd *c = (const NvmeZoneSendCmd *)cmd;
    ZoneAllWork *w = g_new0(ZoneAllWork, 1);

    trace_femu_zone_send(ns->nsid, c->zsa, le64_to_cpu(c->slba), true);
    w->ns = ns;
    w->action = c->zsa;
    return femu_req_run(n, req, zone_all_step, w, now, deadline);
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

/*
 * Deallocation does nothing on zones (a reset frees space), but offline zones refuse it.
 * The ranges are merged first: the zones they cross are looked at once each.
 */
static uint16_t zns_dsm(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd)
{
    g_autofree NvmeDsmRange *ranges = NULL;
    g_autofree FemuLbaRange *merged = NULL;
    uint32_t nr;
    uint16_t status = femu_dsm_ranges(n, cmd, &ranges, &nr);

    if (!status) {
        merged = g_new(FemuLbaRange, nr);
        nr = femu_lba_ranges_merge(ranges, nr, merged);
    }
    for (uint32_t i = 0; !status && i < nr; i++) {
        status = zns_io_dsm_check(&ns_zns(ns)->io, merged[i].slba,
                                  merged[i].end - merged[i].slba);
    }
    return status;
}

static uint16_t zns_io(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                       uint64_t now, uint64_t *deadline)
{
    ZnsCmd c;
    uint16_t status;

    if (zone_send_is_long(cmd)) {
        return zone_send_all(n, req, ns, cmd, now, deadline);      /* its steps' own */
    }
    zns_cmd_begin(&c, &ns_zns(ns)->io, now, false);
    switch (cmd->opcode) {
    case NVME_CMD_WRITE:
    case NVME_CMD_WRITE_ZEROES:
    case NVME_CMD_ZONE_APPEND:
        status = zns_write(n, req, ns, cmd, &c);
        break;
    case NVME_CMD_READ:
    case NVME_CMD_COMPARE:
        status = zns_read(n, req, ns, cmd, &c);
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
        status = femu_nvm_io(n, req, ns, cmd, now, &c.deadline);
        break;
    }
    *deadline = zns_cmd_end(&c);
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

static bool zns_check_props(FemuCtrl *n, Error **errp)
{
    g_autofree char *err = NULL;

    if (!zns_params_check(zns_params(n), n->mdts, n->vwc, n->num_namespaces,
                          femu_ctrl_kind(n) == &zns_kind, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

/* A zoned namespace holds whole zones; its zone state follows the device's data. */
static bool zns_size_ns(FemuCtrl *n, uint32_t nsid, uint64_t *bytes, bool derived,
                        uint64_t *meta_bytes, Error **errp)
{
    g_autofree char *err = NULL;
    uint64_t all = 0;

    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        all += n->sizes.bytes[i];      /* at least what the namespaces end up with */
    }
    if (!zns_params_size_ns(zns_params(n), n->lba_index ? 12 : 9, nsid, all, bytes, derived,
                            meta_bytes, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

static void zns_stats(FemuNamespace *ns, FemuMediaStatFn *emit, void *opaque)
{
    zns_io_stats(&ns_zns(ns)->io, emit, opaque);
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

        rolled += zns_io_plp_rollback(&ns_zns(ns)->io, p, ns->backend_offset / zone_bytes,
                                      adopt);
        zns_clear_above_wp(n, ns);
    }
    trace_femu_plp_power_on(rec.sectors, rec.pages, rec.ns, rolled);
}

static const Property zns_props[] = { ZNS_PROPS(FEMU_QDEV_ITEM, ZnsParams) };

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
