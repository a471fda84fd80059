/*
 * whitebox (femu_mode=0): an Open-Channel SSD 2.0 namespace on the chunk model (chunk.c)
 * and chunks on flash (ocssd-flash.c, through ocssd-media.c). The host sees groups, PUs,
 * chunks and sectors and does its own mapping and garbage collection.
 *
 * Commands: Identify Geometry (admin E2h), the Chunk Information log (CAh, with the
 * namespace's NSID), vector reset/write/read/copy (90h-93h), and standard Read/Write on the
 * same LBA space under the same chunk rules. A FEMU vendor admin command (CFh) injects media
 * failures so hosts can test their error paths. Chunk state lives in the backend after the
 * device's data (with the per-sector OOB metadata), checksummed; a mismatch is refused.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "qemu/units.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "../femu.h"
#include "ocssd-params.h"
#include "ocssd-io.h"
#include "../trace.h"

#define OC_ADM_GEOMETRY 0xe2
#define OC_ADM_INJECT 0xcf          /* FEMU vendor specific: inject a media failure */
#define OC_LOG_CHUNK_INFO 0xca
#define OC_CMD_VECTOR_RESET 0x90
#define OC_CMD_VECTOR_WRITE 0x91
#define OC_CMD_VECTOR_READ 0x92
#define OC_CMD_VECTOR_COPY 0x93
#define OC_GEOMETRY_BYTES 4096
#define OC_LOG_PIECE (64 * KiB)     /* the chunk log is built and copied this much at a time */
#define OC_MAX_INJECT 16
#define OC_PCI_VENDOR 0x1d1d        /* the IDs LightNVM-era drivers knew FEMU's drive by */
#define OC_PCI_DEVICE 0x1f1f

/* What OC_ADM_INJECT arms (CDW12), for the chunk of the LBA in CDW10-11. */
enum {
    OC_INJECT_WRITE_NEXT_UNIT = 1,  /* the next write to the chunk fails, the chunk goes on */
    OC_INJECT_EARLY_CLOSE = 2,      /* the next write to the chunk fails and closes it */
    OC_INJECT_RESET_OFFLINE = 3,    /* the next reset of the chunk fails, it goes offline */
    OC_INJECT_OFFLINE_NOW = 4,      /* the chunk goes offline at once */
};

typedef struct OcInject {
    uint64_t chunk;
    uint32_t what;
} OcInject;

/* A whitebox namespace's state (FemuNamespace.priv). */
typedef struct OcNs {
    OcChunkSet *cs;
    uint8_t *oob;               /* lmetasize bytes per sector, in the backend; NULL: none */
    uint32_t metasize;
    uint32_t max_vector;
    OcInject inject[OC_MAX_INJECT];
    uint32_t nr_inject;
    NandTiming timing;          /* the flash's, for Identify Geometry */
    uint32_t planes;            /* per chip: a write unit and a chunk span them */
    uint64_t vector_cmds;
    uint64_t failed_lbas;       /* list entries that failed */
} OcNs;

static const FemuNsKind ocssd_kind;

static OcParams *oc_params(FemuCtrl *n)
{
    return femu_ns_kind_params(n, &ocssd_kind);
}

static OcNs *oc_ns(FemuNamespace *ns)
{
    return ns->priv;
}

static bool oc_alone(FemuCtrl *n)
{
    return femu_ctrl_kind(n) == &ocssd_kind;
}

/* ---- geometry ---- */

static uint32_t lba_bytes_of(FemuCtrl *n)
{
    return n->lba_index ? 4096 : 512;
}

/* The flash the namespace sits on: the l* properties alone, the shared flash when mixed. */
static NandGeometry oc_nand_geometry(FemuCtrl *n, uint32_t lba_bytes)
{
    return ocssd_params_nand_geometry(oc_params(n), &n->flash, oc_alone(n), lba_bytes);
}

/* The chunk geometry of `bytes` (chunks per PU rounded down to a power of two). */
static bool oc_geometry(FemuCtrl *n, uint64_t bytes, uint32_t lba_bytes, OcGeometry *g,
                        Error **errp)
{
    g_autofree char *err = NULL;

    if (!ocssd_params_geometry(oc_params(n), &n->flash, oc_alone(n), bytes, lba_bytes, g,
                               &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

static bool oc_check_props(FemuCtrl *n, Error **errp)
{
    g_autofree char *err = NULL;
    uint32_t count = 0;

    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        count += n->ns_kind[i] == &ocssd_kind;
    }
    if (!ocssd_params_check(oc_params(n), count, n->ns_types, n->lba_index_given,
                            &n->lba_index, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

/* Whole chunks on every PU; the chunk state and OOB follow the device's data. */
static bool oc_size_ns(FemuCtrl *n, uint32_t nsid, uint64_t *bytes, bool derived,
                       uint64_t *meta_bytes, Error **errp)
{
    g_autofree char *err = NULL;

    if (!ocssd_params_size_ns(oc_params(n), &n->flash, oc_alone(n), lba_bytes_of(n), nsid,
                              bytes, derived, meta_bytes, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

static uint32_t oc_flash_blocks(FemuCtrl *n, uint64_t bytes, Error **errp)
{
    g_autofree char *err = NULL;
    uint32_t blocks = ocssd_params_flash_blocks(oc_params(n), &n->flash, oc_alone(n), bytes,
                                                lba_bytes_of(n), &err);

    if (!blocks) {
        error_setg(errp, "%s", err);
    }
    return blocks;
}

static FemuMedia *oc_media_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                               uint32_t first_block, Error **errp)
{
    g_autofree char *err = NULL;
    FemuMedia *m = ocssd_params_media_new(oc_params(n), &n->flash, oc_alone(n), bytes,
                                          lba_bytes_of(n), shared, first_block, &err);

    if (!m) {
        error_setg(errp, "%s", err);
    }
    return m;
}

/* ---- state ---- */

static uint64_t chunk_offset(FemuNamespace *ns, uint64_t chunk)
{
    return ns->backend_offset + ((chunk << oc_ns(ns)->cs->geo.sec_bits) << ns->lba_shift);
}

/*
 * Clears what an area of `sector_bytes` per sector of every chunk, from backend offset
 * `start`, holds above each chunk's write pointer; marks the chunks it cleared.
 */
static void clear_area_above_wp(FemuCtrl *n, OcChunkSet *cs, uint64_t start,
                                uint64_t sector_bytes, unsigned long *cleared)
{
    uint64_t chunk_bytes = cs->geo.clba * sector_bytes;
    uint64_t end = start + cs->geo.nr_chunks * chunk_bytes, pos = start;

    while ((pos = femu_backend_next_data(n, pos, end)) < end) {
        uint64_t idx = (pos - start) / chunk_bytes;
        const OcChunk *c = &cs->chunks[idx];
        uint64_t cend = start + (idx + 1) * chunk_bytes;
        uint64_t lo = MAX(pos, start + idx * chunk_bytes + c->wp * sector_bytes);

        if (c->state != OC_CHUNK_OFFLINE && lo < cend && !femu_backend_is_zero(n, lo, cend - lo)) {
            femu_backend_zero(n, lo, cend - lo);
            set_bit(idx, cleared);
        }
        pos = cend;
    }
}

/*
 * Data and OOB above a write pointer can only come from a write or a reset that had not
 * completed when QEMU stopped (both put data and OOB in place before the chunk's record,
 * or save the record first and clear after); unwritten sectors read as zeroes, with zero
 * OOB, so they are cleared. Returns the chunks cleared.
 */
static uint64_t oc_clear_above_wp(FemuCtrl *n, FemuNamespace *ns)
{
    OcNs *o = oc_ns(ns);
    g_autofree unsigned long *cleared = bitmap_new(o->cs->geo.nr_chunks);

    clear_area_above_wp(n, o->cs, ns->backend_offset, 1u << ns->lba_shift, cleared);
    if (o->oob) {
        clear_area_above_wp(n, o->cs, o->oob - n->data, o->metasize, cleared);
    }
    return bitmap_count_one(cleared, o->cs->geo.nr_chunks);
}

static bool oc_state_open(FemuCtrl *n, FemuNamespace *ns, uint8_t *meta, Error **errp)
{
    OcChunkSet *cs = oc_ns(ns)->cs;
    g_autofree char *name = n->memdev ? host_memory_backend_get_name(n->memdev) : NULL;
    g_autofree char *where = name ? g_strdup_printf("memdev '%s'", name)
                                  : g_strdup("the backend");
    g_autofree char *err = NULL;
    uint64_t cleared;

    switch (oc_store_open(cs, meta, &err)) {
    case OC_STORE_ERROR:
        error_setg(errp, "whitebox namespace %u in %s: %s. Start with the properties it was "
                   "saved with, or start over with a new or zeroed backing file (this erases "
                   "the drive)", ns->nsid, where, err);
        return false;
    case OC_STORE_FRESH:
        if (!femu_backend_is_zero(n, ns->backend_offset, ns->bytes)) {
            error_setg(errp, "whitebox namespace %u in %s: the data area holds data but there "
                       "is no chunk state after it (a drive of another femu_mode or size?); "
                       "its chunks would start Free, which must read as zeroes. Start with "
                       "the properties it was saved with, or start over with a new or zeroed "
                       "backing file (this erases the drive)", ns->nsid, where);
            return false;
        }
        oc_store_format(cs);
        return true;
    case OC_STORE_LOADED:
        if (cs->records_recovered) {
            warn_report("whitebox namespace %u in %s: %" PRIu64 " chunks had a damaged state "
                        "record (an update interrupted when QEMU stopped); their previous "
                        "state is used", ns->nsid, where, cs->records_recovered);
        }
        cleared = oc_clear_above_wp(n, ns);
        if (cleared) {
            warn_report("whitebox namespace %u in %s: cleared data or OOB above the write "
                        "pointer of %" PRIu64 " chunks (writes or resets that had not "
                        "completed)", ns->nsid, where, cleared);
        }
        return true;
    }
    return false;
}

static bool oc_ns_init(FemuCtrl *n, FemuNamespace *ns, uint8_t *meta, Error **errp)
{
    OcParams *p = oc_params(n);
    g_autofree char *err = NULL;
    OcGeometry g;
    OcNs *o;

    if (!oc_geometry(n, ns->bytes, 1u << ns->lba_shift, &g, errp)) {
        return false;
    }
    o = g_new0(OcNs, 1);
    o->cs = oc_chunk_set_new(&g, &err);
    if (!o->cs) {
        g_free(o);
        error_setg(errp, "whitebox: %s", err);
        return false;
    }
    o->metasize = p->lmetasize;
    o->max_vector = p->lmax_sec_per_rq;
    o->planes = oc_nand_geometry(n, 1u << ns->lba_shift).pls_per_lun;
    /* alone or shared, the flash runs the timing of the flash properties */
    if (!femu_fill_timing("", n->flash.flash_type, n->flash.pg_rd_lat, n->flash.pg_wr_lat,
                          n->flash.blk_er_lat, &n->flash, &o->timing, errp)) {
        oc_chunk_set_free(o->cs);
        g_free(o);
        return false;
    }
    if (meta && o->metasize) {
        o->oob = meta + oc_store_size(&g);
    }
    ns->priv = o;
    ns->nlbas = g.nr_sectors;
    return !meta || oc_state_open(n, ns, meta, errp);
}

static void oc_ns_free(FemuNamespace *ns)
{
    OcNs *o = ns->priv;

    oc_chunk_set_free(o->cs);
    g_free(o);
    ns->priv = NULL;
}

static void oc_ctrl_reset(FemuCtrl *n, FemuNamespace *ns)
{
    oc_ns(ns)->nr_inject = 0;       /* open chunks stay open: nothing else changes */
}

/* ---- injected failures ---- */

/* The failure armed for this chunk and operation (consumed), or 0. */
static uint32_t take_inject(OcNs *o, uint64_t chunk, bool reset)
{
    for (uint32_t i = 0; i < o->nr_inject; i++) {
        uint32_t what = o->inject[i].what;
        if (o->inject[i].chunk == chunk && (what == OC_INJECT_RESET_OFFLINE) == reset) {
            o->inject[i] = o->inject[--o->nr_inject];
            return what;
        }
    }
    return 0;
}

static uint16_t oc_inject(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd)
{
    OcNs *o = oc_ns(ns);
    uint64_t lba = (uint64_t)le32_to_cpu(cmd->cdw11) << 32 | le32_to_cpu(cmd->cdw10);
    uint32_t what = le32_to_cpu(cmd->cdw12);
    uint64_t chunk = oc_chunk_of(&o->cs->geo, lba);

    if (lba >= o->cs->geo.nr_sectors) {
        return NVME_LBA_RANGE;
    }
    if (what == OC_INJECT_OFFLINE_NOW) {
        oc_fail_offline(o->cs, chunk);
        return NVME_SUCCESS;
    }
    if (what < OC_INJECT_WRITE_NEXT_UNIT || what > OC_INJECT_RESET_OFFLINE) {
        return NVME_INVALID_FIELD;
    }
    if (o->nr_inject == OC_MAX_INJECT) {
        return NVME_CMD_SEQ_ERROR;
    }
    o->inject[o->nr_inject++] = (OcInject){ .chunk = chunk, .what = what };
    return NVME_SUCCESS;
}

/* ---- data paths shared by the standard and the vector commands ---- */

typedef struct OcIo {
    FemuCtrl *n;
    FemuNamespace *ns;
    uint64_t now;
    uint64_t deadline;
} OcIo;

static void media(OcIo *io, FemuMediaOp op, uint64_t lba, uint64_t nlb)
{
    FemuNamespace *ns = io->ns;
    uint64_t t = femu_ns_media_submit(ns, &(FemuMediaReq){
        .op = op, .nsid = ns->nsid, .offset = ns->backend_offset + (lba << ns->lba_shift),
        .len = nlb << ns->lba_shift, .arrival_ns = io->now });

    io->deadline = MAX(io->deadline, t);
}

/* An armed write failure of a checked run: its status, or 0 when none was armed. */
static uint16_t write_fault(OcIo *io, uint32_t what, uint64_t lba, uint64_t nlb)
{
    OcNs *o = oc_ns(io->ns);

    switch (what) {
    case OC_INJECT_WRITE_NEXT_UNIT:
        /* the units are programmed and lost; the host goes on after them */
        oc_fail_write_next_unit(o->cs, lba, nlb);
        media(io, FEMU_MEDIA_WRITE, lba, nlb);
        return OC_WRITE_NEXT_UNIT;
    case OC_INJECT_EARLY_CLOSE:
        oc_fail_early_close(o->cs, oc_chunk_of(&o->cs->geo, lba));
        return OC_CHUNK_EARLY_CLOSE;
    default:
        return 0;
    }
}

/*
 * One write run after oc_write_check passed: data (and OOB) from buf/oob into place, then
 * the write pointer moves. An armed failure takes the unit's place.
 */
static uint16_t write_run(OcIo *io, uint64_t lba, uint64_t nlb, const uint8_t *buf,
                          const uint8_t *oob)
{
    FemuNamespace *ns = io->ns;
    OcNs *o = oc_ns(ns);
    uint64_t chunk = oc_chunk_of(&o->cs->geo, lba);
    uint64_t offset = ns->backend_offset + (lba << ns->lba_shift), len = nlb << ns->lba_shift;

    uint16_t fault = write_fault(io, take_inject(o, chunk, false), lba, nlb);

    if (fault) {
        return fault;
    }
    if (buf) {
        memcpy(io->n->data + offset, buf, len);
    } else {
        femu_backend_zero(io->n, offset, len);
    }
    if (o->oob) {
        uint8_t *dst = o->oob + lba * o->metasize;
        if (oob) {
            memcpy(dst, oob, nlb * o->metasize);
        } else {
            memset(dst, 0, nlb * o->metasize);
        }
    }
    oc_write_commit(o->cs, lba, nlb);
    media(io, FEMU_MEDIA_WRITE, lba, nlb);
    ns->io.bytes_written += len;
    return NVME_SUCCESS;
}

/* One read run into buf/oob (zeroes above the write pointer). */
static uint16_t read_run(OcIo *io, uint64_t lba, uint64_t nlb, uint8_t *buf, uint8_t *oob)
{
    FemuNamespace *ns = io->ns;
    OcNs *o = oc_ns(ns);
    uint64_t readable;
    uint16_t status = oc_read_check(o->cs, lba, nlb, ns->dulbe, &readable);

    if (status) {
        return status;
    }
    /* unwritten sectors are zero in the backend (cleared at reset and at start) */
    memcpy(buf, io->n->data + ns->backend_offset + (lba << ns->lba_shift), nlb << ns->lba_shift);
    if (oob && o->oob) {
        memcpy(oob, o->oob + lba * o->metasize, nlb * o->metasize);
    }
    media(io, FEMU_MEDIA_READ, lba, nlb);
    ns->io.bytes_read += nlb << ns->lba_shift;
    return NVME_SUCCESS;
}

static uint16_t reset_chunk(OcIo *io, uint64_t lba)
{
    FemuNamespace *ns = io->ns;
    OcNs *o = oc_ns(ns);
    const OcGeometry *g = &o->cs->geo;
    uint64_t chunk = oc_chunk_of(g, lba), first = chunk << g->sec_bits, t;
    FemuMediaReq r;
    uint16_t status;

    if (lba < g->nr_sectors && o->cs->chunks[chunk].state != OC_CHUNK_OFFLINE &&
        take_inject(o, chunk, true)) {
        oc_fail_offline(o->cs, chunk);
        return OC_OFFLINE_CHUNK;
    }
    /*
     * The Free record is saved first, then data and OOB are cleared: killed in between, the
     * chunk is Free with both above its write pointer, which start-up clears. The other
     * order would bring back a Closed chunk reading zeroes.
     */
    status = oc_reset(o->cs, lba);
    if (status) {
        return status;
    }
    femu_backend_zero(io->n, chunk_offset(ns, chunk), (uint64_t)g->clba << ns->lba_shift);
    if (o->oob) {
        memset(o->oob + first * o->metasize, 0, (uint64_t)g->clba * o->metasize);
    }
    r = oc_io_reset_req(o->cs, ns->nsid, ns->backend_offset, ns->lba_shift, chunk, io->now);
    t = femu_ns_media_submit(ns, &r);
    io->deadline = MAX(io->deadline, t);
    return NVME_SUCCESS;
}

/* ---- standard Read/Write ---- */

/*
 * Sectors of [slba, slba + nlb) before the first chunk that has a write failure armed
 * (nlb when none has).
 */
static uint64_t sectors_before_fault(OcNs *o, uint64_t slba, uint64_t nlb)
{
    const OcGeometry *g = &o->cs->geo;
    uint64_t first = oc_chunk_of(g, slba), hit = oc_chunk_of(g, slba + nlb - 1) + 1;

    for (uint32_t i = 0; i < o->nr_inject; i++) {
        uint64_t c = o->inject[i].chunk;
        if (o->inject[i].what != OC_INJECT_RESET_OFFLINE && c >= first && c < hit) {
            hit = c;
        }
    }
    return hit == first ? 0 : MIN(nlb, (hit << g->sec_bits) - slba);
}

/*
 * The first nlb sectors of a checked Write or Write Zeroes: the data put in place by the
 * NVM command set's path, and only then do the write pointers move. A failed transfer
 * moves none, and what it reached reads as zeroes again.
 */
static uint16_t std_write_parts(OcIo *io, FemuRequest *req, const NvmeCmd *cmd,
                                uint64_t slba, uint64_t nlb)
{
    FemuNamespace *ns = io->ns;
    OcNs *o = oc_ns(ns);
    NvmeCmd first = *cmd;
    uint16_t status;

    ((NvmeRwCmd *)&first)->nlb = cpu_to_le16(nlb - 1);
    status = femu_nvm_io(io->n, req, ns, &first, io->now, &io->deadline);
    if (status) {
        femu_backend_zero(io->n, ns->backend_offset + (slba << ns->lba_shift),
                          nlb << ns->lba_shift);
        return status;
    }
    if (o->oob) {
        memset(o->oob + slba * o->metasize, 0, nlb * o->metasize);
    }
    oc_io_write_commit(o->cs, slba, nlb);
    return NVME_SUCCESS;
}

/*
 * Write and Write Zeroes: every chunk part checked (in order, as the parts before it leave
 * the open-chunk limits), then written. The parts go in order: at a chunk with an armed
 * write failure the command stops with that failure, the parts before it written.
 */
static uint16_t oc_std_write(OcIo *io, FemuRequest *req, const NvmeCmd *cmd)
{
    const NvmeRwCmd *rw = (const NvmeRwCmd *)cmd;
    OcNs *o = oc_ns(io->ns);
    const OcGeometry *g = &o->cs->geo;
    uint64_t slba = le64_to_cpu(rw->slba), nlb = (uint64_t)le16_to_cpu(rw->nlb) + 1;
    uint64_t before, lba;
    uint16_t status = oc_write_check_span(o->cs, slba, nlb);

    req->slba = slba;
    if (!status && cmd->opcode == NVME_CMD_WRITE) {
        status = femu_nvm_rw_check(io->n, io->ns, cmd);     /* the whole command's */
    }
    if (status) {
        return status;
    }
    before = sectors_before_fault(o, slba, nlb);
    if (before) {
        status = std_write_parts(io, req, cmd, slba, before);
        if (status || before == nlb) {
            return status;
        }
    }
    lba = slba + before;
    return write_fault(io, take_inject(o, oc_chunk_of(g, lba), false), lba,
                       MIN(nlb - before, g->clba - (lba & (g->clba - 1))));
}

/* Dataset Management: chunks are freed by a reset; ranges are checked, nothing changes. */
static uint16_t oc_dsm(OcIo *io, const NvmeCmd *cmd)
{
    uint32_t nr = (le32_to_cpu(cmd->cdw10) & 0xff) + 1;
    g_autofree NvmeDsmRange *ranges = g_new(NvmeDsmRange, nr);
    uint16_t status = femu_copy_dptr(io->n, cmd, nr * sizeof(*ranges), ranges,
                                     nr * sizeof(*ranges), false, false);

    for (uint32_t i = 0; !status && i < nr; i++) {
        status = oc_io_dsm_check(oc_ns(io->ns)->cs, le64_to_cpu(ranges[i].slba),
                                 le32_to_cpu(ranges[i].nlb));
    }
    return status;
}

/* ---- vector commands ---- */

/* The list of a vector command: the LBA itself for one, else a list in guest memory. */
static uint16_t vector_list(FemuCtrl *n, OcNs *o, const NvmeCmd *cmd, bool copy_dest,
                            uint64_t *lbas, uint32_t *count)
{
    uint32_t nlb = (le32_to_cpu(cmd->cdw12) & 0x3f) + 1;
    uint64_t v = copy_dest ? (uint64_t)le32_to_cpu(cmd->cdw15) << 32 | le32_to_cpu(cmd->cdw14)
                           : (uint64_t)le32_to_cpu(cmd->cdw11) << 32 | le32_to_cpu(cmd->cdw10);
    uint16_t status;

    if (nlb > o->max_vector) {
        return NVME_INVALID_FIELD;
    }
    *count = nlb;
    if (nlb == 1) {
        lbas[0] = v;
        return NVME_SUCCESS;
    }
    status = femu_dma_from_guest(n, v, lbas, nlb * sizeof(*lbas));
    for (uint32_t i = 0; i < nlb; i++) {
        lbas[i] = le64_to_cpu(lbas[i]);
    }
    return status;
}

typedef struct Vector {
    uint64_t lbas[OC_MAX_VECTOR];
    uint32_t count;
    uint32_t start[OC_MAX_VECTOR], len[OC_MAX_VECTOR];
    uint32_t runs;
    uint64_t failed;            /* bit i: entry i failed */
    uint16_t status;            /* the first failure's */
} Vector;

static void vector_fail(Vector *v, uint32_t r, uint16_t status)
{
    uint32_t s = v->start[r], l = v->len[r];

    v->failed |= (l == 64 ? UINT64_MAX : ((1ULL << l) - 1)) << s;
    if (!v->status) {
        v->status = status;
    }
}

static uint16_t vector_setup(FemuCtrl *n, OcNs *o, const NvmeCmd *cmd, bool copy_dest,
                             Vector *v)
{
    uint16_t status = vector_list(n, o, cmd, copy_dest, v->lbas, &v->count);

    if (!status) {
        v->runs = oc_vector_runs(&o->cs->geo, v->lbas, v->count, v->start, v->len);
    }
    return status;
}

static uint64_t mptr_of(const NvmeCmd *cmd)
{
    return le64_to_cpu(cmd->mptr);
}

static uint16_t vector_write(OcIo *io, const NvmeCmd *cmd, const uint8_t *data,
                             const uint8_t *oob, Vector *v)
{
    OcNs *o = oc_ns(io->ns);
    uint8_t shift = io->ns->lba_shift;

    for (uint32_t r = 0; r < v->runs; r++) {
        uint64_t lba = v->lbas[v->start[r]];
        uint16_t status = oc_write_check(o->cs, lba, v->len[r]);

        if (!status) {
            status = write_run(io, lba, v->len[r], data + ((uint64_t)v->start[r] << shift),
                               oob ? oob + (uint64_t)v->start[r] * o->metasize : NULL);
        }
        if (status) {
            vector_fail(v, r, status);
        }
    }
    return v->status;
}

static void vector_read(OcIo *io, uint8_t *data, uint8_t *oob, Vector *v)
{
    OcNs *o = oc_ns(io->ns);
    uint8_t shift = io->ns->lba_shift;

    for (uint32_t r = 0; r < v->runs; r++) {
        uint16_t status = read_run(io, v->lbas[v->start[r]], v->len[r],
                                   data + ((uint64_t)v->start[r] << shift),
                                   oob ? oob + (uint64_t)v->start[r] * o->metasize : NULL);
        if (status) {
            vector_fail(v, r, status);
        }
    }
}

static uint16_t oc_vector_rw(OcIo *io, FemuRequest *req, const NvmeCmd *cmd, bool write)
{
    FemuCtrl *n = io->n;
    OcNs *o = oc_ns(io->ns);
    g_autofree Vector *v = g_new0(Vector, 1);
    g_autofree uint8_t *data = NULL, *oob = NULL;
    uint64_t len, mptr = mptr_of(cmd), oob_len;
    uint16_t status = vector_setup(n, o, cmd, false, v);

    if (status) {
        return status;
    }
    len = (uint64_t)v->count << io->ns->lba_shift;
    oob_len = (uint64_t)v->count * o->metasize;
    if (n->mdts && len > (4096ULL << n->mdts)) {
        return NVME_INVALID_FIELD;
    }
    data = g_malloc0(len);
    if (mptr && oob_len) {
        oob = g_malloc0(oob_len);
    }
    if (write) {
        status = femu_copy_dptr(n, cmd, len, data, len, false, false);
        if (!status && oob) {
            status = femu_dma_from_guest(n, mptr, oob, oob_len);
        }
        if (status) {
            return status;
        }
        status = vector_write(io, cmd, data, oob, v);
        io->ns->io.write_cmds++;
    } else {
        vector_read(io, data, oob, v);
        status = femu_copy_dptr(n, cmd, len, data, len, false, true);
        if (!status && oob) {
            status = femu_dma_to_guest(n, mptr, oob, oob_len);
        }
        io->ns->io.read_cmds++;
        if (!status) {
            status = v->status;
        }
    }
    o->vector_cmds++;
    o->failed_lbas += ctpop64(v->failed);
    req->cqe.result = cpu_to_le32((uint32_t)v->failed);
    req->cqe.dw1 = cpu_to_le32(v->failed >> 32);
    return status;
}

/*
 * Vector Copy: the source entries are read, then written to the destination entries (the
 * same count), the programs once the data is read. A destination run fails if any of its
 * sources did.
 */
static uint16_t oc_vector_copy(OcIo *io, FemuRequest *req, const NvmeCmd *cmd)
{
    FemuCtrl *n = io->n;
    OcNs *o = oc_ns(io->ns);
    g_autofree Vector *src = g_new0(Vector, 1), *dst = g_new0(Vector, 1);
    g_autofree uint8_t *data = NULL, *oob = NULL;
    uint16_t status;

    if (!(o->cs->geo.mccap & OC_MCCAP_COPY)) {
        return NVME_INVALID_OPCODE;
    }
    status = vector_setup(n, o, cmd, false, src);
    if (!status) {
        status = vector_setup(n, o, cmd, true, dst);
    }
    if (status) {
        return status;
    }
    data = g_malloc0((uint64_t)src->count << io->ns->lba_shift);
    oob = o->metasize ? g_malloc0((uint64_t)src->count * o->metasize) : NULL;
    vector_read(io, data, oob, src);
    io->now = io->deadline;         /* the writes arrive when the last read is done */
    for (uint32_t r = 0; r < dst->runs; r++) {
        uint64_t mask = (dst->len[r] == 64 ? UINT64_MAX : ((1ULL << dst->len[r]) - 1))
                        << dst->start[r];
        if (src->failed & mask) {
            vector_fail(dst, r, src->status);
        }
    }
    /* runs already failed are skipped by clearing them from the list */
    {
        Vector todo = *dst;
        todo.runs = 0;
        for (uint32_t r = 0; r < dst->runs; r++) {
            uint64_t mask = (dst->len[r] == 64 ? UINT64_MAX : ((1ULL << dst->len[r]) - 1))
                            << dst->start[r];
            if (!(dst->failed & mask)) {
                todo.start[todo.runs] = dst->start[r];
                todo.len[todo.runs++] = dst->len[r];
            }
        }
        todo.failed = dst->failed;
        todo.status = dst->status;
        vector_write(io, cmd, data, oob, &todo);
        *dst = todo;
    }
    o->vector_cmds++;
    o->failed_lbas += ctpop64(dst->failed);
    req->cqe.result = cpu_to_le32((uint32_t)dst->failed);
    req->cqe.dw1 = cpu_to_le32(dst->failed >> 32);
    return dst->status;
}

static uint16_t oc_vector_reset(OcIo *io, FemuRequest *req, const NvmeCmd *cmd)
{
    FemuCtrl *n = io->n;
    OcNs *o = oc_ns(io->ns);
    g_autofree Vector *v = g_new0(Vector, 1);
    uint64_t mptr = mptr_of(cmd);
    uint16_t status = vector_list(n, o, cmd, false, v->lbas, &v->count);

    if (status) {
        return status;
    }
    for (uint32_t i = 0; i < v->count; i++) {
        uint16_t s = reset_chunk(io, v->lbas[i]);
        if (s) {
            v->failed |= 1ULL << i;
            v->status = v->status ? v->status : s;
        }
    }
    if (mptr) {
        /* the reset chunks' descriptors, as the host asked for them */
        g_autofree uint8_t *desc = g_malloc0((uint64_t)v->count * OC_DESCRIPTOR_BYTES);
        for (uint32_t i = 0; i < v->count; i++) {
            if (v->lbas[i] < o->cs->geo.nr_sectors) {
                oc_chunk_descriptor(o->cs, oc_chunk_of(&o->cs->geo, v->lbas[i]),
                                    desc + i * OC_DESCRIPTOR_BYTES);
            }
        }
        status = femu_dma_to_guest(n, mptr, desc, (uint64_t)v->count * OC_DESCRIPTOR_BYTES);
    }
    o->vector_cmds++;
    o->failed_lbas += ctpop64(v->failed);
    req->cqe.result = cpu_to_le32((uint32_t)v->failed);
    req->cqe.dw1 = cpu_to_le32(v->failed >> 32);
    return status ? status : v->status;
}

static uint16_t oc_io(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                      uint64_t now, uint64_t *deadline)
{
    OcIo io = { .n = n, .ns = ns, .now = now, .deadline = now };
    OcNs *o = oc_ns(ns);
    uint16_t status;

    switch (cmd->opcode) {
    case NVME_CMD_WRITE:
    case NVME_CMD_WRITE_ZEROES:
        status = oc_std_write(&io, req, cmd);
        break;
    case NVME_CMD_READ:
    case NVME_CMD_COMPARE: {
        const NvmeRwCmd *rw = (const NvmeRwCmd *)cmd;
        uint64_t slba = le64_to_cpu(rw->slba), nlb = (uint64_t)le16_to_cpu(rw->nlb) + 1;
        req->slba = slba;
        status = oc_io_read_check(o->cs, slba, nlb, ns->dulbe);
        if (!status) {
            status = femu_nvm_rw(n, req, ns, cmd, now, &io.deadline);
        }
        break;
    }
    case NVME_CMD_DSM:
        status = oc_dsm(&io, cmd);
        break;
    case OC_CMD_VECTOR_RESET:
        status = oc_vector_reset(&io, req, cmd);
        break;
    case OC_CMD_VECTOR_WRITE:
        status = oc_vector_rw(&io, req, cmd, true);
        break;
    case OC_CMD_VECTOR_READ:
        status = oc_vector_rw(&io, req, cmd, false);
        break;
    case OC_CMD_VECTOR_COPY:
        status = oc_vector_copy(&io, req, cmd);
        break;
    default:
        status = femu_nvm_io(n, req, ns, cmd, now, &io.deadline);
        break;
    }
    *deadline = io.deadline;
    return status;
}

/* ---- admin: geometry, the chunk log, failure injection ---- */

static uint32_t ns_u32(uint64_t v)
{
    return (uint32_t)MIN(v, UINT32_MAX);
}

static void fill_geometry(FemuNamespace *ns, uint8_t *b)
{
    const OcGeometry *g = &oc_ns(ns)->cs->geo;
    const NandTiming *t = &oc_ns(ns)->timing;
    uint64_t rd_sum = 0, rd_max = 0, wr_sum = 0, wr_max = 0, scale = MAX(t->time_scale, 1);

    b[0] = 2;                       /* MJR: OCSSD 2.0 */
    b[1] = 0;
    b[8] = g->grp_bits;
    b[9] = g->pu_bits;
    b[10] = g->chk_bits;
    b[11] = g->sec_bits;
    stl_le_p(b + 16, g->mccap);
    b[32] = 0;                      /* WIT: no wear-level notifications */
    stw_le_p(b + 64, g->num_grp);
    stw_le_p(b + 66, g->num_pu);
    stl_le_p(b + 68, g->num_chk);
    stl_le_p(b + 72, g->clba);
    stl_le_p(b + 128, g->ws_min);
    stl_le_p(b + 132, g->ws_opt);
    stl_le_p(b + 136, g->mw_cunits);
    stl_le_p(b + 140, g->maxoc);
    stl_le_p(b + 144, g->maxocpu);
    /*
     * The model's times, scaled as it runs them: a sector read is one page read; a write
     * unit and a chunk reset take every plane of the chip one after another (the model has
     * no multi-plane operations). Typical: the mean over page types.
     */
    for (uint32_t i = 0; i < t->cell_bits; i++) {
        rd_sum += t->pg_rd_lat[i];
        rd_max = MAX(rd_max, t->pg_rd_lat[i]);
        wr_sum += t->pg_wr_lat[i];
        wr_max = MAX(wr_max, t->pg_wr_lat[i]);
    }
    stl_le_p(b + 192, ns_u32(rd_sum / t->cell_bits * scale));
    stl_le_p(b + 196, ns_u32(rd_max * scale));
    stl_le_p(b + 200, ns_u32(wr_sum / t->cell_bits * scale * oc_ns(ns)->planes));
    stl_le_p(b + 204, ns_u32(wr_max * scale * oc_ns(ns)->planes));
    stl_le_p(b + 208, ns_u32(t->blk_er_lat * scale * oc_ns(ns)->planes));
    stl_le_p(b + 212, ns_u32(t->blk_er_lat * scale * oc_ns(ns)->planes));
}

static uint16_t oc_admin(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd)
{
    switch (cmd->opcode) {
    case OC_ADM_GEOMETRY: {
        g_autofree uint8_t *buf = g_malloc0(OC_GEOMETRY_BYTES);
        fill_geometry(ns, buf);
        return femu_copy_dptr(n, cmd, OC_GEOMETRY_BYTES, buf, OC_GEOMETRY_BYTES, true, true);
    }
    case OC_ADM_INJECT:
        return oc_inject(n, ns, cmd);
    default:
        return NVME_INVALID_OPCODE;
    }
}

/* The Chunk Information log: descriptors built and copied a piece at a time. */
static uint16_t oc_get_log(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd, uint8_t lid,
                           uint64_t off, uint64_t len)
{
    OcChunkSet *cs = oc_ns(ns)->cs;
    uint64_t size = cs->geo.nr_chunks * OC_DESCRIPTOR_BYTES, copy, done = 0;
    g_autofree uint8_t *piece = NULL;
    QEMUSGList sg;
    uint16_t status;

    if (lid != OC_LOG_CHUNK_INFO) {
        return NVME_INVALID_LOG_ID;
    }
    if (off > size) {
        return NVME_INVALID_FIELD;
    }
    copy = MIN(len, size - off);
    status = femu_map_dptr(n, cmd, len, copy, true, true, &sg);
    if (status) {
        return status;
    }
    piece = g_malloc(OC_LOG_PIECE + 2 * OC_DESCRIPTOR_BYTES);     /* + the partial ends */
    while (!status && done < copy) {
        uint64_t pos = off + done, first = pos / OC_DESCRIPTOR_BYTES;
        uint64_t skip = pos % OC_DESCRIPTOR_BYTES;
        uint64_t plen = MIN(copy - done, OC_LOG_PIECE);
        uint64_t last = (pos + plen - 1) / OC_DESCRIPTOR_BYTES;

        for (uint64_t c = first; c <= last; c++) {
            oc_chunk_descriptor(cs, c, piece + (c - first) * OC_DESCRIPTOR_BYTES);
        }
        status = femu_sg_to_guest(n, &sg, done, piece + skip, plen);
        done += plen;
    }
    qemu_sglist_destroy(&sg);
    return status;
}

static void oc_effects(FemuCtrl *n, NvmeEffectsLog *log)
{
    uint32_t writes = NVME_CMD_EFF_CSUPP | NVME_CMD_EFF_LBCC;

    log->acs[OC_ADM_GEOMETRY] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
    log->acs[OC_ADM_INJECT] = cpu_to_le32(NVME_CMD_EFF_CSUPP | NVME_CMD_EFF_LBCC);
    log->iocs[OC_CMD_VECTOR_RESET] = cpu_to_le32(writes);
    log->iocs[OC_CMD_VECTOR_WRITE] = cpu_to_le32(writes);
    log->iocs[OC_CMD_VECTOR_READ] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
    log->iocs[OC_CMD_VECTOR_COPY] = cpu_to_le32(writes);
}

static void oc_stats(FemuNamespace *ns, FemuMediaStatFn *emit, void *opaque)
{
    OcNs *o = oc_ns(ns);

    oc_io_stats(o->cs, o->vector_cmds, o->failed_lbas, emit, opaque);
}

static const Property oc_props[] = { OCSSD_PROPS(FEMU_QDEV_ITEM, OcParams) };

static const char *const oc_prop_help[][2] = {
    { "lsec_size", "whitebox sector size = the LBA size: 512 or 4096 bytes; without "
                   "lba_index it sets the LBA size, with it it must agree (0: the LBA size)" },
    { NULL },
};

static const FemuNsKind ocssd_kind = {
    .name = "ocssd",
    .femu_mode = 0,
    .model_name = "FEMU OpenChannel-SSD Controller",
    .csi = NVME_CSI_NVM,
    .props = oc_props,
    .nr_props = ARRAY_SIZE(oc_props),
    .prop_help = oc_prop_help,
    .params_size = sizeof(OcParams),
    .check_props = oc_check_props,
    .size_ns = oc_size_ns,
    .flash_blocks = oc_flash_blocks,
    .media_new = oc_media_new,
    .ns_init = oc_ns_init,
    .ns_free = oc_ns_free,
    .io = oc_io,
    .effects = oc_effects,
    .ctrl_reset = oc_ctrl_reset,
    .stats = oc_stats,
    .admin = oc_admin,
    .get_log = oc_get_log,
    .dulbe = true,
    .pci_vendor_id = OC_PCI_VENDOR,
    .pci_device_id = OC_PCI_DEVICE,
};

FEMU_NS_KIND_REGISTER(ocssd_kind)
