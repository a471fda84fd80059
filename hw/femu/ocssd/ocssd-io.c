/*
 * The whitebox namespace's standard command rules; see ocssd-io.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>

#include "ocssd-io.h"

uint16_t oc_io_read_check(const OcChunkSet *cs, uint64_t slba, uint64_t nlb, bool dulbe)
{
    const OcGeometry *g = &cs->geo;

    if (slba >= g->nr_sectors || nlb > g->nr_sectors - slba) {
        return OC_LBA_RANGE;
    }
    while (nlb) {
        uint64_t n = MIN(nlb, g->clba - (slba & (g->clba - 1))), readable;
        uint16_t status = oc_read_check(cs, slba, n, dulbe, &readable);
        if (status) {
            return status;
        }
        slba += n;
        nlb -= n;
    }
    return OC_OK;
}

void oc_io_write_commit(OcChunkSet *cs, uint64_t slba, uint64_t nlb)
{
    const OcGeometry *g = &cs->geo;

    while (nlb) {
        uint64_t n = MIN(nlb, g->clba - (slba & (g->clba - 1)));
        oc_write_commit(cs, slba, n);
        slba += n;
        nlb -= n;
    }
}

uint16_t oc_io_dsm_check(const OcChunkSet *cs, uint64_t slba, uint64_t nlb)
{
    uint64_t nlbas = cs->geo.nr_sectors;

    return nlb && (slba >= nlbas || nlb > nlbas - slba) ? OC_LBA_RANGE : OC_OK;
}

FemuMediaReq oc_io_reset_req(const OcChunkSet *cs, uint32_t nsid, uint64_t base,
                             uint8_t lba_shift, uint64_t chunk, uint64_t now)
{
    const OcGeometry *g = &cs->geo;

    return (FemuMediaReq){
        .op = FEMU_MEDIA_ZONE_RESET, .nsid = nsid,
        .offset = base + ((chunk << g->sec_bits) << lba_shift),
        .len = (uint64_t)g->clba << lba_shift, .arrival_ns = now,
    };
}

void oc_io_stats(const OcChunkSet *cs, uint64_t vector_cmds, uint64_t failed_lbas,
                 FemuMediaStatFn *emit, void *opaque)
{
    uint64_t by_state[16] = { 0 }, erases = 0, erases_max = 0;

    for (uint64_t i = 0; i < cs->geo.nr_chunks; i++) {
        by_state[cs->chunks[i].state & 0xf]++;
        erases += cs->chunks[i].erases;
        erases_max = MAX(erases_max, cs->chunks[i].erases);
    }
    emit(opaque, "chunks_free", by_state[OC_CHUNK_FREE]);
    emit(opaque, "chunks_open", by_state[OC_CHUNK_OPEN]);
    emit(opaque, "chunks_closed", by_state[OC_CHUNK_CLOSED]);
    emit(opaque, "chunks_offline", by_state[OC_CHUNK_OFFLINE]);
    emit(opaque, "chunk_erases", erases);
    emit(opaque, "chunk_erases_max", erases_max);
    emit(opaque, "vector_cmds", vector_cmds);
    emit(opaque, "vector_failed_lbas", failed_lbas);
}
