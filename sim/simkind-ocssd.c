/*
 * femu-sim's whitebox kind (femu_mode=0, "ocssd" in ns_types): an Open-Channel 2.0
 * namespace's chunks (chunk.c) and its standard Read and Write as hw/femu/ocssd/ocssd.c
 * handles them (ocssd-params.c, ocssd-io.c). To a workload it is a zoned target whose zones
 * are the chunks: writes go in order at a chunk's write pointer, in multiples of ws_min
 * sectors, and a zone reset is the chunk reset of the vector reset command. There is no
 * zone finish in Open-Channel 2.0; the vector commands and injected failures are not
 * modelled.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "simkinds.h"
#include "ocssd/ocssd-io.h"
#include "ocssd/ocssd-params.h"

static uint32_t lba_bytes_of(const SimParams *p)
{
    return p->lba_index ? 4096 : 512;
}

static bool alone(SimDevice *d)
{
    return sim_device_all_of_kind(d, &sim_ocssd);
}

static bool oc_check(SimDevice *d, SimParams *p, char **err)
{
    uint32_t count = 0;

    for (uint32_t i = 1; i <= sim_device_nr_ns(d); i++) {
        count += sim_device_ns(d, i)->kind == &sim_ocssd;
    }
    return ocssd_params_check(&p->oc, count, p->ns_types, p->lba_index_given, &p->lba_index,
                              err);
}

static bool oc_size_ns(SimDevice *d, uint32_t nsid, uint64_t *bytes, bool derived,
                       uint64_t *meta_bytes, char **err)
{
    const SimParams *p = sim_device_params(d);
    return ocssd_params_size_ns(&p->oc, &p->flash, alone(d), lba_bytes_of(p), nsid, bytes,
                                derived, meta_bytes, err);
}

static uint32_t oc_flash_blocks(SimDevice *d, uint64_t bytes, char **err)
{
    const SimParams *p = sim_device_params(d);
    return ocssd_params_flash_blocks(&p->oc, &p->flash, alone(d), bytes, lba_bytes_of(p),
                                     err);
}

static FemuMedia *oc_media_new(SimDevice *d, uint64_t bytes, NandModel *shared,
                               uint32_t first_block, char **err)
{
    const SimParams *p = sim_device_params(d);
    return ocssd_params_media_new(&p->oc, &p->flash, alone(d), bytes, lba_bytes_of(p), shared,
                                  first_block, err);
}

static bool oc_ns_init(SimDevice *d, SimNs *ns, char **err)
{
    const SimParams *p = sim_device_params(d);
    g_autofree char *why = NULL;
    NandTiming timing;
    OcChunkSet *cs;
    OcGeometry g;

    if (!ocssd_params_geometry(&p->oc, &p->flash, alone(d), ns->bytes, ns->lba_bytes, &g,
                               err)) {
        return false;
    }
    cs = oc_chunk_set_new(&g, &why);
    if (!cs) {
        *err = g_strdup_printf("whitebox: %s", why);
        return false;
    }
    /* the device times Identify Geometry by the flash properties: checked at the same step */
    if (!flash_params_timing("", p->flash.flash_type, p->flash.pg_rd_lat, p->flash.pg_wr_lat,
                             p->flash.blk_er_lat, &p->flash, &timing, err)) {
        oc_chunk_set_free(cs);
        return false;
    }
    ns->priv = cs;
    return true;
}

static void oc_ns_free(SimNs *ns)
{
    oc_chunk_set_free(ns->priv);
    ns->priv = NULL;
}

/* A standard Write: every chunk part checked, the data placed, the write pointers moved. */
static uint16_t oc_write(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now,
                         uint64_t *done)
{
    OcChunkSet *cs = ns->priv;
    uint64_t slba, nlb;
    uint16_t status;

    if (!sim_io_lbas(ns, io, &slba, &nlb)) {
        return SIM_SC_LBA_RANGE;
    }
    status = oc_write_check_span(cs, slba, nlb);
    if (!status) {
        status = sim_nvm_io(d, ns, io, now, done);
    }
    if (!status) {
        oc_io_write_commit(cs, slba, nlb);
    }
    return status;
}

/* A reset of the chunk holding offset, as one entry of a vector reset. */
static uint16_t oc_reset_chunk(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now,
                               uint64_t *done)
{
    OcChunkSet *cs = ns->priv;
    uint64_t lba = io->offset / ns->lba_bytes, t;
    FemuMediaReq r;
    uint16_t status;

    if (io->offset % ns->lba_bytes) {
        return SIM_SC_INVALID_FIELD;
    }
    status = oc_reset(cs, lba);
    if (status) {
        return status;
    }
    r = oc_io_reset_req(cs, ns->nsid, ns->backend_offset, ns->lba_bytes == 4096 ? 12 : 9,
                        oc_chunk_of(&cs->geo, lba), now);
    t = sim_ns_submit(d, ns, &r);
    *done = MAX(now, t);
    return 0;
}

static uint16_t oc_io(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now, uint64_t *done)
{
    OcChunkSet *cs = ns->priv;
    uint64_t slba, nlb;
    uint16_t status;

    switch (io->op) {
    case SIM_OP_WRITE:
        return oc_write(d, ns, io, now, done);
    case SIM_OP_READ:
        if (!sim_io_lbas(ns, io, &slba, &nlb)) {
            return SIM_SC_LBA_RANGE;
        }
        status = oc_io_read_check(cs, slba, nlb, false);
        return status ? status : sim_nvm_io(d, ns, io, now, done);
    case SIM_OP_TRIM:
        return !sim_io_lbas(ns, io, &slba, &nlb) ? SIM_SC_LBA_RANGE
                                                  : oc_io_dsm_check(cs, slba, nlb);
    case SIM_OP_ZONE_RESET:
        return oc_reset_chunk(d, ns, io, now, done);
    case SIM_OP_ZONE_FINISH:
    case SIM_OP_WRITE_ZEROES:
    case SIM_OP_COMPARE:
        return SIM_SC_INVALID_OPCODE;
    default:
        return sim_nvm_io(d, ns, io, now, done);
    }
}

static uint64_t chunk_written(void *opaque, uint64_t chunk)
{
    SimNs *ns = opaque;
    const OcChunkSet *cs = ns->priv;

    return chunk < cs->geo.nr_chunks ? cs->chunks[chunk].wp * ns->lba_bytes : 0;
}

static void oc_target(SimNs *ns, SimTarget *t)
{
    const OcChunkSet *cs = ns->priv;

    t->zone_bytes = (uint64_t)cs->geo.clba * ns->lba_bytes;
    t->zone_cap_bytes = t->zone_bytes;
    t->max_open_zones = cs->geo.maxoc;
    t->zone_written = chunk_written;
    t->opaque = ns;
}

static void oc_stats(SimNs *ns, FemuMediaStatFn *emit, void *opaque)
{
    oc_io_stats(ns->priv, 0, 0, emit, opaque);
}

/* The chunk state where the device keeps it (ocssd.c oc_state_open's rules). */
static bool oc_attach_state(SimDevice *d, SimNs *ns, uint8_t *meta, bool data, char **err)
{
    OcChunkSet *cs = ns->priv;
    g_autofree char *why = NULL;

    (void)d;
    switch (oc_store_open(cs, meta, &why)) {
    case OC_STORE_ERROR:
        *err = g_strdup_printf("whitebox namespace %u in the backing file: %s", ns->nsid, why);
        return false;
    case OC_STORE_FRESH:
        if (data) {
            *err = g_strdup_printf("whitebox namespace %u: the backing file's data area "
                                   "holds data but there is no chunk state after it (a "
                                   "drive of another femu_mode or size?)", ns->nsid);
            return false;
        }
        oc_store_format(cs);
        return true;
    case OC_STORE_LOADED:
        return true;
    }
    return false;
}

const SimKind sim_ocssd = {
    .name = "ocssd", .femu_mode = 0,
    .check = oc_check, .size_ns = oc_size_ns, .flash_blocks = oc_flash_blocks,
    .media_new = oc_media_new, .ns_init = oc_ns_init, .ns_free = oc_ns_free,
    .io = oc_io, .target = oc_target, .stats = oc_stats,
    .attach_state = oc_attach_state,
};
