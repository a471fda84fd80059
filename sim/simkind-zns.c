/*
 * femu-sim's zns kind (femu_mode=3): the zones of each namespace (zone.c) and its commands
 * as hw/femu/zns/zns.c handles them, through the same QEMU-free code: zns-params.c for the
 * configuration, zns-io.c for what a write, a read, a zone action and a zone's change of
 * state do to the zones and which media requests they make.
 *
 * With plp the model writes data out to a data area and keeps a store, as the backend
 * holds them in the QEMU device: the data area takes host memory as it is written.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "simkinds.h"
#include "plp/plp.h"
#include "zns/zns-io.h"
#include "zns/zns-params.h"

#define MIB (1024ULL * 1024)

/* A zoned namespace's state (SimNs.priv). */
typedef struct SimZns {
    ZnsIo io;
    SimDevice *d;
    SimNs *ns;
    uint8_t *plp_zones;         /* durable zones (a bitmap), with plp */
} SimZns;

static uint8_t lba_shift(const SimParams *p)
{
    return p->lba_index ? 12 : 9;
}

static bool zns_check(SimDevice *d, SimParams *p, char **err)
{
    return zns_params_check(&p->zns, p->mdts, p->vwc, sim_device_nr_ns(d),
                            sim_device_all_of_kind(d, &sim_zns), err);
}

static bool zns_size_ns(SimDevice *d, uint32_t nsid, uint64_t *bytes, bool derived,
                        uint64_t *meta_bytes, char **err)
{
    const SimParams *p = sim_device_params(d);
    uint64_t all = 0;

    for (uint32_t i = 1; i <= sim_device_nr_ns(d); i++) {
        all += sim_device_sizes(d)->bytes[i - 1];
    }
    return zns_params_size_ns(&p->zns, lba_shift(p), nsid, all, bytes, derived, meta_bytes,
                              err);
}

static uint32_t zns_flash_blocks(SimDevice *d, uint64_t bytes, char **err)
{
    const SimParams *p = sim_device_params(d);
    return zns_params_flash_blocks(&p->zns, &p->flash, bytes, err);
}

/* Read-ahead stops where a zone's written data ends (the zone state is the device's). */
static uint64_t zns_readable(void *opaque, uint32_t nsid, uint64_t offset, uint64_t max)
{
    SimNs *ns = sim_device_ns(opaque, nsid);

    if (!ns || ns->kind != &sim_zns) {
        return 0;
    }
    return zns_io_readable(&((SimZns *)ns->priv)->io, offset + ns->model.media_base, max);
}

static FemuMedia *zns_media_new(SimDevice *d, uint64_t bytes, NandModel *shared,
                                uint32_t first_block, char **err)
{
    const SimParams *p = sim_device_params(d);
    FemuReadAhead ra = { .readable = zns_readable, .opaque = d };
    bool plp_on = zns_params_plp_on(&p->zns);
    PlpConfig plp;

    if (plp_on) {
        uint32_t lba_bytes = 1u << lba_shift(p);
        uint64_t store = plp_store_size(lba_bytes, (uint64_t)p->zns.plp_buf_mb << 20,
                                        bytes / ((uint64_t)p->zns.zone_size_mb << 20));

        zns_params_plp_config(&p->zns, lba_bytes, &plp);
        /* plp= needs every namespace zoned: one model, at offset 0 of the data */
        plp.data = g_try_malloc0(bytes);
        plp.store = g_try_malloc0(store);
        sim_device_own(d, plp.data);
        sim_device_own(d, plp.store);
        if (!plp.data || !plp.store) {
            *err = g_strdup_printf("plp=%s: no host memory for the data area of %" G_GUINT64_FORMAT
                                   " MiB that the PLP buffer writes out to (devsz_mb)",
                                   p->zns.plp, bytes >> 20);
            return NULL;
        }
    }
    /* a fresh store: the device's power-on recovery (zns_power_on) has nothing to do */
    return zns_params_media_new(&p->zns, &p->flash, &p->sra, bytes, shared, first_block, &ra,
                                plp_on ? &plp : NULL, err);
}

static uint64_t zns_submit(void *opaque, FemuMediaReq *r)
{
    SimZns *z = opaque;
    return sim_ns_submit(z->d, z->ns, r);
}

static bool zns_ns_init(SimDevice *d, SimNs *ns, char **err)
{
    const SimParams *p = sim_device_params(d);
    g_autofree char *why = NULL;
    ZoneConfig c;
    ZoneSet *zs;
    SimZns *z;

    if (!zns_params_zone_config(&p->zns, ns->bytes, lba_shift(p), &c, err) ||
        !(zs = zone_set_new(&c, err))) {
        return false;
    }
    z = g_new0(SimZns, 1);
    z->io = (ZnsIo){
        .zones = zs, .nsid = ns->nsid, .base = ns->backend_offset,
        .lba_shift = lba_shift(p), .submit = zns_submit, .opaque = z,
    };
    z->d = d;
    z->ns = ns;
    ns->priv = z;
    if (zns_params_plp_on(&p->zns)) {
        if (!zns_params_plp_mode(&p->zns, sim_device_nr_ns(d), ns->nsid, &z->io.plp_mode,
                                 err)) {
            return false;
        }
        z->plp_zones = plp_zones_parse(p->zns.plp_zones, c.nr_zones, &why);
        if (!z->plp_zones) {
            *err = g_strdup_printf("namespace %u: %s", ns->nsid, why);
            return false;
        }
        z->io.plp_zones = z->plp_zones;
        z->io.buffered = true;
        ns->media_buffers = true;
    }
    return true;
}

static void zns_ns_free(SimNs *ns)
{
    SimZns *z = ns->priv;

    zone_set_free(z->io.zones);
    g_free(z->plp_zones);
    g_free(z);
    ns->priv = NULL;
}

static uint16_t zns_write(SimDevice *d, SimNs *ns, const SimIo *io, ZnsCmd *c)
{
    const SimParams *p = sim_device_params(d);
    SimZns *z = ns->priv;
    uint64_t limit = p->mdts ? 4096ULL << p->mdts : 0, slba, nlb, lba;
    uint16_t status;

    if (!sim_io_lbas(ns, io, &slba, &nlb)) {
        return SIM_SC_LBA_RANGE;
    }
    if ((limit && io->len > limit) || nlb > SIM_MAX_NLB) {
        return SIM_SC_INVALID_FIELD;
    }
    status = zns_io_write_check(&z->io, slba, nlb, false, &lba);
    if (status) {
        return status;
    }
    /* no data, never flagged; FUA, or with the write cache off every write, written through */
    zns_io_write(c, lba, nlb, false, NULL, false, io->fua || !p->vwc);
    ns->io.bytes_written += io->len;
    ns->io.write_cmds++;
    return 0;
}

static uint16_t zns_io(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now, uint64_t *done)
{
    SimZns *z = ns->priv;
    uint64_t slba, nlb;
    uint16_t status;
    ZnsCmd c;

    zns_cmd_begin(&c, &z->io, now, false);
    switch (io->op) {
    case SIM_OP_WRITE:
        status = zns_write(d, ns, io, &c);
        break;
    case SIM_OP_READ:
        status = !sim_io_lbas(ns, io, &slba, &nlb) ? SIM_SC_LBA_RANGE
                                                    : zns_io_read_check(&z->io, slba, nlb);
        if (!status) {
            status = sim_nvm_io(d, ns, io, now, &c.deadline);
        }
        break;
    case SIM_OP_TRIM:
        status = !sim_io_lbas(ns, io, &slba, &nlb) ? SIM_SC_LBA_RANGE
                                                    : zns_io_dsm_check(&z->io, slba, nlb);
        break;
    case SIM_OP_ZONE_RESET:
    case SIM_OP_ZONE_FINISH:
        /* an offset that is no LBA is no zone start either */
        status = io->offset % ns->lba_bytes ? SIM_SC_INVALID_FIELD :
                 zns_io_status(zone_manage(z->io.zones, io->op == SIM_OP_ZONE_RESET ?
                                           ZONE_ACTION_RESET : ZONE_ACTION_FINISH,
                                           io->offset / ns->lba_bytes, false, NULL));
        break;
    case SIM_OP_WRITE_ZEROES:
    case SIM_OP_COMPARE:
        status = SIM_SC_INVALID_OPCODE;     /* not modelled for zones yet */
        break;
    default:
        status = sim_nvm_io(d, ns, io, now, &c.deadline);
        break;
    }
    *done = zns_cmd_end(&c);
    return status;
}

static uint64_t zone_written(void *opaque, uint64_t zone)
{
    SimZns *z = opaque;
    const ZoneSet *zs = z->io.zones;

    if (zone >= zs->cfg.nr_zones) {
        return 0;
    }
    return (zs->zones[zone].wp - zs->zones[zone].zslba) << z->io.lba_shift;
}

static void zns_target(SimNs *ns, SimTarget *t)
{
    SimZns *z = ns->priv;
    const ZoneConfig *c = &z->io.zones->cfg;

    t->zone_bytes = c->zone_size << z->io.lba_shift;
    t->zone_cap_bytes = c->zone_cap << z->io.lba_shift;
    /* what the host sees (Identify's MOR): the open limit, or the active one */
    t->max_open_zones = c->max_open ? c->max_open : c->max_active;
    t->zone_written = zone_written;
    t->opaque = z;
}

static void zns_stats(SimNs *ns, FemuMediaStatFn *emit, void *opaque)
{
    zns_io_stats(&((SimZns *)ns->priv)->io, emit, opaque);
}

/* The zone state where the device keeps it (zns.c zns_state_open's rules). */
static bool zns_attach_state(SimDevice *d, SimNs *ns, uint8_t *meta, bool data, char **err)
{
    ZoneSet *zs = ((SimZns *)ns->priv)->io.zones;
    g_autofree char *why = NULL;

    (void)d;
    switch (zone_store_open(zs, meta, &why)) {
    case ZONE_STORE_ERROR:
        *err = g_strdup_printf("zoned namespace %u in the backing file: %s", ns->nsid, why);
        return false;
    case ZONE_STORE_FRESH:
        if (data) {
            *err = g_strdup_printf("zoned namespace %u: the backing file's data area holds "
                                   "data but there is no zone state after it (a drive of "
                                   "another femu_mode or size?)", ns->nsid);
            return false;
        }
        zone_store_format(zs);
        return true;
    case ZONE_STORE_LOADED:
        return true;
    }
    return false;
}

/*
 * Power is back after a cut, as zns_power_on and then zns_ctrl_reset in hw/femu/zns/zns.c:
 * the PLP store's protected data back in place, each zone's write pointer back to where
 * its durable data ends, then the power cycle (open zones Closed). The data above a write
 * pointer is not cleared (femu-sim never reads it back).
 */
static void zns_power_on(SimDevice *d, uint64_t now)
{
    const SimParams *p = sim_device_params(d);
    PlpBuffer *plp = NULL;
    uint64_t zone_bytes = (uint64_t)p->zns.zone_size_mb * MIB;
    PlpRecovery rec;

    if (zns_params_plp_on(&p->zns)) {
        plp = femu_media_zns_plp(sim_device_ns(d, 1)->model.media);
        /* the device takes it at start, on empty zones: nothing to adopt */
        plp_take_fresh(plp);
        plp_recover(plp, now, &rec);
    }
    for (uint32_t i = 1; i <= sim_device_nr_ns(d); i++) {
        SimNs *ns = sim_device_ns(d, i);
        SimZns *z = ns->priv;
        ZnsCmd c;

        if (ns->kind != &sim_zns) {
            continue;
        }
        if (plp) {
            zns_io_plp_rollback(&z->io, plp, ns->backend_offset / zone_bytes, false);
        }
        zns_cmd_begin(&c, &z->io, now, true);
        zone_power_cycle(z->io.zones);
        zns_cmd_end(&c);
    }
}

const SimKind sim_zns = {
    .name = "zns", .femu_mode = 3, .read_ahead = true,
    .check = zns_check, .size_ns = zns_size_ns, .flash_blocks = zns_flash_blocks,
    .media_new = zns_media_new, .ns_init = zns_ns_init, .ns_free = zns_ns_free,
    .io = zns_io, .target = zns_target, .stats = zns_stats, .power_on = zns_power_on,
    .attach_state = zns_attach_state,
};
