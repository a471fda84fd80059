/*
 * The zoned command set's state and timing decisions; see zns-io.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "zns-io.h"

#define NVME_SUCCESS 0x0000
#define NVME_INVALID_FIELD 0x0002
#define NVME_LBA_RANGE 0x0080

uint16_t zns_io_status(ZoneStatus s)
{
    switch (s) {
    case ZONE_OK:
        return NVME_SUCCESS;
    case ZONE_INVALID_FIELD:
        return NVME_INVALID_FIELD;
    case ZONE_LBA_RANGE:
        return NVME_LBA_RANGE;
    default:
        return 0x100 | s;   /* command specific (type 1) */
    }
}

FemuMediaReq zns_io_zone_req(const ZnsIo *io, FemuMediaOp op, uint64_t zone, uint64_t now)
{
    uint64_t zone_lbas = io->zones->cfg.zone_size;

    return (FemuMediaReq){
        .op = op,
        .nsid = io->nsid,
        .offset = io->base + (zone * zone_lbas << io->lba_shift),
        .len = zone_lbas << io->lba_shift,
        .arrival_ns = now,
    };
}

static void submit(ZnsCmd *c, FemuMediaReq *r)
{
    uint64_t t = c->io->submit(c->io->opaque, r);     /* once: glib's MAX evaluates twice */

    c->deadline = MAX(c->deadline, t);
}

/* Timing of state changes: a reset erases (at the end), a finish or close writes out. */
static void zone_changed(void *opaque, uint64_t zone, ZoneState from, ZoneState to)
{
    ZnsCmd *c = opaque;
    ZnsIo *io = c->io;
    const Zone *z = &io->zones->zones[zone];
    FemuMediaReq r;

    if (io->changed) {
        io->changed(io->opaque, zone, from, to);
    }
    if (to == ZONE_EMPTY && from != ZONE_EMPTY) {
        if (!c->power_cycle) {
            /* the data goes only after the Empty record is saved: zns_cmd_end */
            if (c->nr_resets == c->cap_resets) {
                c->cap_resets = c->cap_resets ? 2 * c->cap_resets : 4;
                c->resets = g_renew(uint64_t, c->resets, c->cap_resets);
            }
            c->resets[c->nr_resets++] = zone;
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
    r = zns_io_zone_req(io, FEMU_MEDIA_ZONE_DRAIN, zone, c->now);
    r.len = (z->wp - z->zslba) << io->lba_shift;
    submit(c, &r);
}

void zns_cmd_begin(ZnsCmd *c, ZnsIo *io, uint64_t now, bool power_cycle)
{
    *c = (ZnsCmd){ .io = io, .now = now, .deadline = now, .power_cycle = power_cycle };
    io->zones->on_change = zone_changed;
    io->zones->opaque = c;
}

/*
 * The zones the command reset, once their Empty records are saved (the crash-ordering rule
 * of a shrink): the buffered and protected data of each is dropped, its flash erased.
 */
uint64_t zns_cmd_end(ZnsCmd *c)
{
    ZnsIo *io = c->io;

    io->zones->on_change = NULL;
    io->zones->opaque = NULL;
    for (uint32_t i = 0; i < c->nr_resets; i++) {
        FemuMediaReq r = zns_io_zone_req(io, FEMU_MEDIA_ZONE_RESET, c->resets[i], c->now);
        if (io->dropping) {
            io->dropping(io->opaque, &r);
        }
        submit(c, &r);
    }
    g_free(c->resets);
    c->resets = NULL;
    c->nr_resets = c->cap_resets = 0;
    return c->deadline;
}

uint16_t zns_io_write_check(const ZnsIo *io, uint64_t slba, uint64_t nlb, bool append,
                            uint64_t *lba)
{
    return zns_io_status(zone_write_check(io->zones, slba, nlb, append, lba));
}

/*
 * With power-loss protection the data goes to the model's buffer before the write pointer
 * moves, so a zone that fills up drains it too. Without, the zone moves first: a zone
 * filled by the write drains before the write's own program is booked.
 */
void zns_io_write(ZnsCmd *c, uint64_t lba, uint64_t nlb, bool zeroes, const void *data,
                  bool flagged, bool fua)
{
    ZnsIo *io = c->io;
    FemuMediaReq r = {
        .op = zeroes ? FEMU_MEDIA_WRITE_ZEROES : FEMU_MEDIA_WRITE, .nsid = io->nsid,
        .offset = io->base + (lba << io->lba_shift), .len = nlb << io->lba_shift,
        .arrival_ns = c->now,
    };

    if (io->buffered) {
        r.protect = plp_protects(io->plp_mode, flagged,
                                 plp_zone_in(io->plp_zones, zone_index(io->zones, lba)));
        r.fua = fua;
        r.data = zeroes ? NULL : data;
        submit(c, &r);
    }
    if (io->placed) {
        io->placed(io->opaque);
    }
    zone_write_commit(io->zones, lba, nlb);
    if (!io->buffered) {
        submit(c, &r);
    }
}

uint16_t zns_io_read_check(const ZnsIo *io, uint64_t slba, uint64_t nlb)
{
    return zns_io_status(zone_read_check(io->zones, slba, nlb));
}

uint16_t zns_io_dsm_check(const ZnsIo *io, uint64_t slba, uint64_t nlb)
{
    const ZoneSet *zs = io->zones;
    uint64_t nlbas = zs->cfg.nr_zones * zs->cfg.zone_size;

    if (!nlb) {
        return NVME_SUCCESS;
    }
    if (slba + nlb < slba || slba + nlb > nlbas) {
        return NVME_LBA_RANGE;
    }
    for (uint64_t z = zone_index(zs, slba); z <= zone_index(zs, slba + nlb - 1); z++) {
        if (zs->zones[z].state == ZONE_OFFLINE) {
            return zns_io_status(ZONE_IS_OFFLINE);
        }
    }
    return NVME_SUCCESS;
}

uint64_t zns_io_plp_rollback(ZnsIo *io, PlpBuffer *plp, uint64_t first_zone, bool adopt)
{
    uint64_t rolled = 0;

    for (uint64_t z = 0; z < io->zones->cfg.nr_zones; z++) {
        Zone *zone = &io->zones->zones[z];
        uint64_t wp_bytes = (zone->wp - zone->zslba) << io->lba_shift;

        if (adopt || plp_durable_end(plp, first_zone + z) > wp_bytes) {
            plp_set_durable_end(plp, first_zone + z, wp_bytes);
        }
        rolled += zone_rollback(io->zones, z, zone->zslba +
                                (plp_durable_end(plp, first_zone + z) >> io->lba_shift));
    }
    return rolled;
}

uint64_t zns_io_readable(const ZnsIo *io, uint64_t offset, uint64_t max)
{
    const ZoneSet *zs = io->zones;
    uint64_t bytes = zs->cfg.nr_zones * zs->cfg.zone_size << io->lba_shift, at;

    if (offset < io->base || offset - io->base >= bytes) {
        return 0;
    }
    at = (offset - io->base) >> io->lba_shift;
    return zone_readable(zs, at, max >> io->lba_shift) << io->lba_shift;
}

void zns_io_stats(const ZnsIo *io, FemuMediaStatFn *emit, void *opaque)
{
    emit(opaque, "zones_open", io->zones->nr_open);
    emit(opaque, "zones_active", io->zones->nr_active);
}
