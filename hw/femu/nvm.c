/*
 * The NVM command set: the I/O commands of conventional namespaces, and the data path other
 * command sets build on. Data moves between guest RAM and the backend when the command is
 * fetched; the media model says when its completion may be posted.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "femu.h"
#include "trace.h"

static uint8_t *ns_data(FemuCtrl *n, FemuNamespace *ns, uint64_t slba)
{
    return n->data + ns->backend_offset + (slba << ns->lba_shift);
}

/* The shared rules (nvm-rules.h) answer with the specification's status codes. */
QEMU_BUILD_BUG_ON(FEMU_NVM_SC_LBA_RANGE != NVME_LBA_RANGE ||
                  FEMU_NVM_SC_INVALID_FIELD != NVME_INVALID_FIELD);
QEMU_BUILD_BUG_ON((int)FEMU_NVM_READ != NVME_CMD_READ ||
                  (int)FEMU_NVM_WRITE != NVME_CMD_WRITE ||
                  (int)FEMU_NVM_COMPARE != NVME_CMD_COMPARE ||
                  (int)FEMU_NVM_WRITE_ZEROES != NVME_CMD_WRITE_ZEROES ||
                  (int)FEMU_NVM_FLUSH != NVME_CMD_FLUSH ||
                  (int)FEMU_NVM_DEALLOCATE != NVME_CMD_DSM);

static uint16_t check_range(FemuNamespace *ns, uint64_t slba, uint64_t nlb)
{
    return femu_nvm_check_range(ns->nlbas, slba, nlb);
}

/* The media side of an NVM command on nlb LBAs from slba (nvm-rules.h). */
static uint64_t media_time(FemuNamespace *ns, FemuNvmOpcode opcode, uint64_t slba,
                           uint64_t nlb, uint64_t now)
{
    FemuMediaReq mreq = {
        .nsid = ns->nsid, .offset = ns->backend_offset + (slba << ns->lba_shift),
        .len = nlb << ns->lba_shift, .arrival_ns = now,
    };
    return femu_nvm_media(&ns->model, &ns->io, opcode, &mreq);
}

/*
 * When the model buffers written data, the newest bytes are the backend's with the
 * model's on top: a copy of the range that the model completes. Returns its time.
 */
static uint64_t buffered_read(FemuNamespace *ns, uint8_t *buf, const uint8_t *backend,
                              uint64_t slba, uint64_t nlb, uint64_t now)
{
    FemuMediaReq mreq = {
        .op = FEMU_MEDIA_READ, .nsid = ns->nsid,
        .offset = ns->backend_offset + (slba << ns->lba_shift),
        .len = nlb << ns->lba_shift, .arrival_ns = now, .read_buf = buf,
    };

    memcpy(buf, backend, mreq.len);
    return femu_ns_media_submit(ns, &mreq);
}

uint16_t femu_nvm_rw_check(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd)
{
    const NvmeRwCmd *rwc = (const NvmeRwCmd *)cmd;
    uint64_t slba = le64_to_cpu(rwc->slba), nlb = (uint64_t)le16_to_cpu(rwc->nlb) + 1;

    if (NVME_RW_PRINFO(le16_to_cpu(rwc->control))) {
        return NVME_INVALID_FIELD;      /* no protection information formats */
    }
    return femu_nvm_check_rw(ns->nlbas, ns->lba_shift, n->mdts, slba, nlb);
}

uint16_t femu_nvm_rw(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                     uint64_t now, uint64_t *deadline)
{
    const NvmeRwCmd *rwc = (const NvmeRwCmd *)cmd;
    uint64_t slba = le64_to_cpu(rwc->slba), nlb = (uint64_t)le16_to_cpu(rwc->nlb) + 1;
    uint64_t len = nlb << ns->lba_shift;
    bool to_guest = cmd->opcode == NVME_CMD_READ;
    QEMUSGList sg;
    uint16_t status;

    req->slba = slba;
    status = femu_nvm_rw_check(n, ns, cmd);
    if (status) {
        return status;
    }
    status = femu_map_dptr(n, cmd, len, len, false, to_guest, &sg);
    if (status) {
        return status;
    }
    if (ns->media_buffers && cmd->opcode == NVME_CMD_WRITE) {
        /* the model takes the data; the backend gets it when the model programs it */
        g_autofree uint8_t *host = g_malloc(len);
        FemuMediaReq mreq = {
            .nsid = ns->nsid, .offset = ns->backend_offset + (slba << ns->lba_shift),
            .len = len, .arrival_ns = now, .data = host,
            /* with the write cache off (Set Features WCE=0) every write goes through */
            .fua = (le16_to_cpu(rwc->control) & NVME_RW_FUA) || !n->features.vwc,
        };

        status = femu_sg_from_guest(n, &sg, host, len);
        qemu_sglist_destroy(&sg);
        if (!status) {
            *deadline = femu_nvm_media(&ns->model, &ns->io, FEMU_NVM_WRITE, &mreq);
        }
        return status;
    }
    if (ns->media_buffers) {
        g_autofree uint8_t *cur = g_malloc(len);
        uint64_t t = buffered_read(ns, cur, ns_data(n, ns, slba), slba, nlb, now);

        if (to_guest) {
            status = femu_sg_to_guest(n, &sg, 0, cur, len);
        } else {
            g_autofree uint8_t *host = g_malloc(len);
            status = femu_sg_from_guest(n, &sg, host, len);
            if (!status && memcmp(host, cur, len)) {
                status = NVME_CMP_FAILURE;
            }
        }
        qemu_sglist_destroy(&sg);
        if (!status) {
            ns->io.bytes_read += len;
            ns->io.read_cmds++;
            *deadline = t;
        }
        return status;
    }
    switch (cmd->opcode) {
    case NVME_CMD_READ:
        status = femu_sg_to_guest(n, &sg, 0, ns_data(n, ns, slba), len);
        break;
    case NVME_CMD_WRITE:
        status = femu_backend_write(n, &sg, ns->backend_offset + (slba << ns->lba_shift), len,
                                    1u << ns->lba_shift);
        break;
    case NVME_CMD_COMPARE: {
        g_autofree uint8_t *buf = g_malloc(len);
        status = femu_sg_from_guest(n, &sg, buf, len);
        if (!status && memcmp(buf, ns_data(n, ns, slba), len)) {
            status = NVME_CMP_FAILURE;
        }
        break;
    }
    }
    qemu_sglist_destroy(&sg);
    if (status) {
        return status;
    }
    *deadline = media_time(ns, cmd->opcode, slba, nlb, now);
    return NVME_SUCCESS;
}

static uint16_t write_zeroes(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns,
                             const NvmeCmd *cmd, uint64_t now, uint64_t *deadline)
{
    const NvmeRwCmd *rwc = (const NvmeRwCmd *)cmd;
    uint64_t slba = le64_to_cpu(rwc->slba), nlb = (uint64_t)le16_to_cpu(rwc->nlb) + 1;
    uint16_t status = check_range(ns, slba, nlb);

    req->slba = slba;
    if (status) {
        return status;
    }
    femu_backend_zero(n, ns->backend_offset + (slba << ns->lba_shift), nlb << ns->lba_shift);
    *deadline = media_time(ns, FEMU_NVM_WRITE_ZEROES, slba, nlb, now);
    return NVME_SUCCESS;
}

/* ---- Dataset Management ---- */

uint16_t femu_dsm_ranges(FemuCtrl *n, const NvmeCmd *cmd, NvmeDsmRange **ranges,
                         uint32_t *nr)
{
    *nr = (le32_to_cpu(cmd->cdw10) & 0xff) + 1;
    *ranges = g_new(NvmeDsmRange, *nr);
    return femu_copy_dptr(n, cmd, *nr * sizeof(**ranges), *ranges, *nr * sizeof(**ranges),
                          false, false);
}

static int lba_range_cmp(const void *a, const void *b)
{
    const FemuLbaRange *x = a, *y = b;

    return x->slba < y->slba ? -1 : x->slba > y->slba;
}

uint32_t femu_lba_ranges_merge(const NvmeDsmRange *in, uint32_t nr, FemuLbaRange *out)
{
    uint32_t k = 0;

    for (uint32_t i = 0; i < nr; i++) {
        uint64_t slba = le64_to_cpu(in[i].slba), end = slba + le32_to_cpu(in[i].nlb);
        if (end != slba) {
            out[k++] = (FemuLbaRange){ slba, end < slba ? UINT64_MAX : end };
        }
    }
    qsort(out, k, sizeof(*out), lba_range_cmp);
    nr = k;
    k = 0;
    for (uint32_t i = 0; i < nr; i++) {
        if (k && out[i].slba <= out[k - 1].end) {
            out[k - 1].end = MAX(out[k - 1].end, out[i].end);
        } else {
            out[k++] = out[i];
        }
    }
    return k;
}

/* What a slice costs, per so many bytes, where the model keeps no pages (nossd). */
#define DEALLOC_BYTES_PER_PAGE 4096

/* A Deallocate in flight: its merged ranges, and how far it got. */
typedef struct DeallocWork {
    FemuNamespace *ns;
    uint32_t nr, next;          /* ranges; the first one not done */
    uint64_t pos;               /* ranges[next] is done below this LBA */
    FemuLbaRange r[];
} DeallocWork;

/*
 * Where a slice from LBA pos to at most end ends, at most `pages` model pages on: on a
 * boundary of the model's pages, so that the slices drop between them exactly the whole
 * pages the range holds. pos when there is no room for one.
 */
static uint64_t slice_end(FemuNamespace *ns, uint64_t pos, uint64_t end, uint64_t pages)
{
    uint64_t lba = 1ULL << ns->lba_shift, unit = ns->model.media->page_bytes;
    uint64_t base = ns->backend_offset - ns->model.media_base;     /* LBA 0 in the model */
    uint64_t from = base + (pos << ns->lba_shift);
    uint64_t at = from + pages * (unit ? unit : DEALLOC_BYTES_PER_PAGE);

    if (at >= base + (end << ns->lba_shift)) {
        return end;
    }
    if (unit) {
        /* pages and LBAs are whole sectors: a page boundary is an LBA's within 8 pages */
        at -= at % unit;
        while (at > from && (at - base) % lba) {
            at -= unit;
        }
    }
    return at > from ? (at - base) >> ns->lba_shift : pos;
}

static uint16_t dealloc_step(FemuCtrl *n, FemuRequest *req, uint64_t now, uint64_t *pages,
                             uint64_t *deadline)
{
    DeallocWork *w = req->step_state;
    FemuNamespace *ns = w->ns;
    uint64_t page = ns->model.media->page_bytes;
    uint64_t unit = page ? page : DEALLOC_BYTES_PER_PAGE;

    for (; w->next < w->nr; w->next++) {
        const FemuLbaRange *r = &w->r[w->next];
        uint64_t pos = MAX(w->pos, r->slba), end = slice_end(ns, pos, r->end, *pages);
        uint64_t cost = DIV_ROUND_UP((end - pos) << ns->lba_shift, unit);

        if (end == pos) {
            return NVME_NO_COMPLETE;
        }
        femu_backend_zero(n, ns->backend_offset + (pos << ns->lba_shift),
                          (end - pos) << ns->lba_shift);
        *deadline = MAX(*deadline, media_time(ns, FEMU_NVM_DEALLOCATE, pos, end - pos,
                                              now));
        *pages -= MIN(*pages, MAX(cost, 1));
        w->pos = end;
        if (end < r->end) {
            return NVME_NO_COMPLETE;
        }
    }
    return NVME_SUCCESS;
}

/*
 * Deallocate: the ranges sorted and merged (an LBA in several costs once), then dropped
 * a slice at a time, as much as the pass has room for (a long command, femu_req_run).
 */
static uint16_t dsm(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                    uint64_t now, uint64_t *deadline)
{
    const NvmeDsmCmd *d = (const NvmeDsmCmd *)cmd;
    g_autofree NvmeDsmRange *ranges = NULL;
    DeallocWork *w;
    uint32_t nr;
    uint16_t status;

    status = femu_dsm_ranges(n, cmd, &ranges, &nr);
    if (status || !(le32_to_cpu(d->attributes) & NVME_DSMGMT_AD)) {
        return status;      /* integral read/write hints need no action */
    }
    /* check every range before changing any */
    for (uint32_t i = 0; i < nr; i++) {
        status = check_range(ns, le64_to_cpu(ranges[i].slba), le32_to_cpu(ranges[i].nlb));
        if (status) {
            req->slba = le64_to_cpu(ranges[i].slba);
            return status;
        }
    }
    w = g_malloc0(sizeof(*w) + nr * sizeof(w->r[0]));
    w->ns = ns;
    w->nr = femu_lba_ranges_merge(ranges, nr, w->r);
    return femu_req_run(n, req, dealloc_step, w, now, deadline);
}

uint16_t femu_nvm_io(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                     uint64_t now, uint64_t *deadline)
{
    switch (cmd->opcode) {
    case NVME_CMD_FLUSH:
        /* the backend holds every completed write: a flush is media time only */
        *deadline = media_time(ns, FEMU_NVM_FLUSH, 0, 0, now);
        return NVME_SUCCESS;
    case NVME_CMD_READ:
    case NVME_CMD_WRITE:
    case NVME_CMD_COMPARE:
        return femu_nvm_rw(n, req, ns, cmd, now, deadline);
    case NVME_CMD_WRITE_ZEROES:
        return write_zeroes(n, req, ns, cmd, now, deadline);
    case NVME_CMD_DSM:
        return dsm(n, req, ns, cmd, now, deadline);
    default:
        trace_femu_invalid_opcode(req->sq->sqid, cmd->opcode);
        return NVME_INVALID_OPCODE;
    }
}

void femu_nvm_effects(NvmeEffectsLog *log)
{
    log->iocs[NVME_CMD_FLUSH] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
    log->iocs[NVME_CMD_READ] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
    log->iocs[NVME_CMD_COMPARE] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
    log->iocs[NVME_CMD_WRITE] = cpu_to_le32(NVME_CMD_EFF_CSUPP | NVME_CMD_EFF_LBCC);
    log->iocs[NVME_CMD_WRITE_ZEROES] = cpu_to_le32(NVME_CMD_EFF_CSUPP | NVME_CMD_EFF_LBCC);
    log->iocs[NVME_CMD_DSM] = cpu_to_le32(NVME_CMD_EFF_CSUPP | NVME_CMD_EFF_LBCC);
}
