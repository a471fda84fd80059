/*
 * fdp (femu_mode=4): NVMe Flexible Data Placement. Every fdp namespace of the device is in
 * endurance group 1 and shares one FTL (fdp-ftl.c) and its reclaim unit handles; each
 * namespace reaches them through its own placement handle list. This file is the NVMe
 * interface: the endurance group's log pages and features, the Data Placement directive on
 * writes, I/O Management Receive and Send, and the FDP events the FTL's work causes.
 *
 * Decisions where the specification leaves room (docs/fdp.md):
 * - The FDP configuration comes from properties and FDP is enabled at power-up (fdp=on);
 *   Set Features FDP is refused with Command Sequence Error, as the specification asks
 *   while the endurance group has namespaces (this device has no namespace management).
 * - A write with an invalid placement identifier is placed with handle 0 in group 0 and
 *   posts an Invalid Placement Identifier event. A write without the directive goes to
 *   handle 0 in the reclaim groups in turn.
 * - A controller reset (and the start after a power cut or a kill) closes every partly
 *   written reclaim unit (Controller Level Reset Modified RUHs); a normal shutdown closes
 *   them too (Implicitly Modified RUH). A power cut closes nothing until the power is
 *   back: the reset at power-on closes them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/cutils.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "../femu.h"
#include "../bbssd/bbssd.h"
#include "fdp-params.h"

#define FDP_ENDGID 1
#define FDP_MAX_EVENTS 63
#define FDP_EVENT_BYTES 64
#define FDP_NOT_SAVEABLE 0x010d     /* Feature Identifier Not Saveable */
#define FDP_DTYPE_PLACEMENT 2

enum {
    FDP_EV_RU_NOT_FULL = 0x00,
    FDP_EV_RU_TIME_LIMIT = 0x01,
    FDP_EV_CTRL_RESET = 0x02,
    FDP_EV_INVALID_PID = 0x03,
    FDP_EV_REALLOCATED = 0x80,
    FDP_EV_IMPLICIT = 0x81,
};
/* event flags */
#define FDP_EVF_PIV   0x01
#define FDP_EVF_NSIDV 0x02
#define FDP_EVF_LV    0x04

static const uint8_t fdp_event_types[] = {
    FDP_EV_RU_NOT_FULL, FDP_EV_RU_TIME_LIMIT, FDP_EV_CTRL_RESET, FDP_EV_INVALID_PID,
    FDP_EV_REALLOCATED, FDP_EV_IMPLICIT,
};
#define FDP_NR_EVENT_TYPES ARRAY_SIZE(fdp_event_types)

/* One list of events, oldest first; the oldest is dropped when a 64th comes. */
typedef struct FdpEventLog {
    uint8_t ev[FDP_MAX_EVENTS][FDP_EVENT_BYTES];
    uint32_t count;
} FdpEventLog;

/* Why the FTL is closing reclaim units, for the event it reports. */
typedef enum FdpCause {
    FDP_CAUSE_NONE,
    FDP_CAUSE_HOST,         /* I/O Management Send */
    FDP_CAUSE_RESET,
    FDP_CAUSE_SHUTDOWN,
} FdpCause;

typedef struct FdpNs {
    struct FdpEndgrp *eg;
    uint32_t nph;                   /* placement handles */
    uint16_t ph[FDP_MAX_RUH];       /* PHNDL i -> RUH id */
} FdpNs;

typedef struct FdpEndgrp {
    FemuCtrl *n;
    FdpFtlConfig cfg;
    bool enabled;
    uint8_t rgif;                   /* bits of the reclaim group in a placement identifier */
    uint64_t page_bytes;
    uint64_t runs;                  /* bytes per reclaim unit */
    uint8_t *store;                 /* the FTL's state in the backend */
    FdpFtl *ftl;
    uint8_t ev_mask[FDP_MAX_RUH];   /* bit i: fdp_event_types[i] enabled for the handle */
    bool ruh_used[FDP_MAX_RUH];
    FdpEventLog host, ctrl;
    FdpCause cause;
    FemuNamespace *cause_ns;        /* with FDP_CAUSE_HOST: the command's namespace and PID */
    uint16_t cause_pid;
    uint32_t next_rg;               /* writes without a directive take groups in turn */
    uint32_t refs;
} FdpEndgrp;

static const FemuNsKind fdp_kind;

static FdpParams *fdp_params(FemuCtrl *n)
{
    return femu_ns_kind_params(n, &fdp_kind);
}

static FdpEndgrp *fdp_eg(FemuCtrl *n)
{
    for (uint32_t i = 0; n->ns && i < n->num_namespaces; i++) {
        if (n->ns[i].kind == &fdp_kind && n->ns[i].priv) {
            return ((FdpNs *)n->ns[i].priv)->eg;
        }
    }
    return NULL;
}

static bool is_first_fdp(FemuCtrl *n, uint32_t nsid)
{
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        if (n->ns_kind[i] == &fdp_kind) {
            return i + 1 == nsid;
        }
    }
    return false;
}

static uint32_t fdp_ns_count(FemuCtrl *n)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        c += n->ns_kind[i] == &fdp_kind;
    }
    return c;
}

static uint64_t fdp_total_bytes(FemuCtrl *n)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        sum += n->ns_kind[i] == &fdp_kind ? n->sizes.bytes[i] : 0;
    }
    return sum;
}

/* ---- configuration ---- */

/* The FTL of `bytes` of fdp namespaces, from the blackbox properties and the fdp ones. */
static bool fdp_config(FemuCtrl *n, uint64_t bytes, FdpFtlConfig *c, Error **errp)
{
    g_autofree char *err = NULL;

    if (!fdp_params_ftl_config(fdp_params(n), &n->flash, femu_blackbox_params(n), bytes, c,
                               &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

/* Each fdp namespace's placement handle list (fdp_ns_ruhs), into lists[count]. */
static bool parse_ns_ruhs(FemuCtrl *n, const FdpFtlConfig *c, FdpHandles *lists,
                          uint32_t count, Error **errp)
{
    g_autofree char *err = NULL;

    if (!fdp_params_ns_ruhs(fdp_params(n), c, lists, count, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

static bool fdp_check_props(FemuCtrl *n, Error **errp)
{
    g_autofree char *err = NULL;

    if (!fdp_params_check(fdp_params(n), fdp_ns_count(n), &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

/* The FTL's state follows the data, in the first fdp namespace's metadata. */
static bool fdp_size_ns(FemuCtrl *n, uint32_t nsid, uint64_t *bytes, bool derived,
                        uint64_t *meta_bytes, Error **errp)
{
    FdpFtlConfig c;

    if (!is_first_fdp(n, nsid)) {
        return true;
    }
    if (!fdp_config(n, fdp_total_bytes(n), &c, errp)) {
        return false;
    }
    *meta_bytes = fdp_params_meta_bytes(&c);
    return true;
}

static uint32_t fdp_flash_blocks(FemuCtrl *n, uint64_t bytes, Error **errp)
{
    FdpFtlConfig c;
    return fdp_config(n, bytes, &c, errp) ? c.geo.blks_per_pl : 0;
}

/* ---- events ---- */

static void ev_post(FdpEndgrp *eg, uint8_t type, uint8_t flags, uint16_t pid, uint32_t nsid,
                    uint32_t rg, uint32_t ruh, const uint8_t *specific)
{
    FdpEventLog *log = type & 0x80 ? &eg->ctrl : &eg->host;
    uint8_t *e;
    uint64_t ms = qemu_clock_get_ms(QEMU_CLOCK_HOST);
    uint32_t bit = 0;

    for (uint32_t i = 0; i < FDP_NR_EVENT_TYPES; i++) {
        bit = fdp_event_types[i] == type ? i : bit;
    }
    if (ruh < FDP_MAX_RUH && !(eg->ev_mask[ruh] & (1u << bit))) {
        return;
    }
    if (log->count == FDP_MAX_EVENTS) {
        memmove(log->ev[0], log->ev[1], (FDP_MAX_EVENTS - 1) * FDP_EVENT_BYTES);
        log->count--;
    }
    e = log->ev[log->count++];
    memset(e, 0, FDP_EVENT_BYTES);
    e[0] = type;
    e[1] = flags;
    stw_le_p(e + 2, pid);
    stq_le_p(e + 4, ms & 0xffffffffffffULL);     /* Timestamp: ms, 6 bytes */
    stl_le_p(e + 12, nsid);
    if (specific) {
        memcpy(e + 16, specific, 16);
    }
    stw_le_p(e + 32, rg);
    e[34] = ruh;
}

/* The namespace and LBA of an FTL logical page, or false. */
static bool lpn_to_lba(FdpEndgrp *eg, uint64_t lpn, uint32_t *nsid, uint64_t *lba)
{
    FemuCtrl *n = eg->n;
    uint64_t off = lpn * eg->page_bytes;

    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        FemuNamespace *ns = &n->ns[i];
        uint64_t base = ns->backend_offset - ns->model.media_base;
        if (ns->kind == &fdp_kind && off >= base && off < base + ns->bytes) {
            *nsid = ns->nsid;
            *lba = (off - base) >> ns->lba_shift;
            return true;
        }
    }
    return false;
}

static void fdp_ftl_event(void *opaque, const FdpFtlEvent *e)
{
    FdpEndgrp *eg = opaque;
    uint8_t spec[16] = { 0 };

    switch (e->kind) {
    case FDP_FTL_EV_RU_NOT_FULL:
        switch (eg->cause) {
        case FDP_CAUSE_HOST:
            ev_post(eg, FDP_EV_RU_NOT_FULL, FDP_EVF_PIV | FDP_EVF_NSIDV | FDP_EVF_LV,
                    eg->cause_pid, eg->cause_ns->nsid, e->rg, e->ruh, NULL);
            break;
        case FDP_CAUSE_RESET:
            ev_post(eg, FDP_EV_CTRL_RESET, FDP_EVF_LV, 0, 0, e->rg, e->ruh, NULL);
            break;
        case FDP_CAUSE_SHUTDOWN:
        case FDP_CAUSE_NONE:
            ev_post(eg, FDP_EV_IMPLICIT, FDP_EVF_LV, 0, 0, e->rg, e->ruh, NULL);
            break;
        }
        break;
    case FDP_FTL_EV_TIME_LIMIT:
        ev_post(eg, FDP_EV_RU_TIME_LIMIT, FDP_EVF_LV, 0, 0, e->rg, e->ruh, NULL);
        break;
    case FDP_FTL_EV_REALLOCATED: {
        uint32_t nsid;
        uint64_t lba;
        if (lpn_to_lba(eg, e->lpn, &nsid, &lba)) {
            FemuNamespace *ns = &eg->n->ns[nsid - 1];
            uint64_t nlbam = e->npages * (eg->page_bytes >> ns->lba_shift);
            spec[0] = 1;    /* LBAV */
            stw_le_p(spec + 2, MIN(nlbam, UINT16_MAX));
            stq_le_p(spec + 4, lba);
            ev_post(eg, FDP_EV_REALLOCATED, FDP_EVF_NSIDV | FDP_EVF_LV, 0, nsid, e->rg,
                    e->ruh, spec);
        } else {
            ev_post(eg, FDP_EV_REALLOCATED, FDP_EVF_LV, 0, 0, e->rg, e->ruh, spec);
        }
        break;
    }
    }
}

/* The FTL closes units for `cause`; its events say why. */
static void close_for(FdpEndgrp *eg, FdpCause cause)
{
    if (eg && eg->ftl) {
        eg->cause = cause;
        fdp_ftl_close_open(eg->ftl);
        eg->cause = FDP_CAUSE_NONE;
    }
}

/* ---- namespaces and model ---- */

static bool fdp_ns_init(FemuCtrl *n, FemuNamespace *ns, uint8_t *meta, Error **errp)
{
    FdpEndgrp *eg = fdp_eg(n);
    FdpNs *fns;
    uint32_t idx = 0, count = fdp_ns_count(n);
    g_autofree FdpHandles *lists = g_new0(FdpHandles, count);

    /* a volatile write buffer holds written data until it programs it */
    ns->media_buffers = bbssd_params_wb_volatile(femu_blackbox_params(n));
    for (uint32_t i = 0; i + 1 < ns->nsid; i++) {
        idx += n->ns[i].kind == &fdp_kind;
    }
    if (!eg) {
        eg = g_new0(FdpEndgrp, 1);
        eg->n = n;
        if (!fdp_config(n, fdp_total_bytes(n), &eg->cfg, errp)) {
            g_free(eg);
            return false;
        }
        eg->enabled = fdp_params(n)->on;
        eg->rgif = fdp_rgif(eg->cfg.nrg);
        eg->page_bytes = nand_page_bytes(&eg->cfg.geo);
        eg->runs = (uint64_t)eg->cfg.geo.pgs_per_blk * eg->cfg.geo.pls_per_lun *
                   (eg->cfg.geo.nchs * eg->cfg.geo.luns_per_ch / eg->cfg.nrg) *
                   eg->page_bytes;
        eg->store = meta;
        memset(eg->ev_mask, (1u << FDP_NR_EVENT_TYPES) - 1, sizeof(eg->ev_mask));
    }
    if (!parse_ns_ruhs(n, &eg->cfg, lists, count, errp)) {
        if (!eg->refs) {
            g_free(eg);
        }
        return false;
    }
    fns = g_new0(FdpNs, 1);
    fns->nph = lists[idx].nph;
    memcpy(fns->ph, lists[idx].ph, sizeof(fns->ph));
    fns->eg = eg;
    for (uint32_t i = 0; i < fns->nph; i++) {
        eg->ruh_used[fns->ph[i]] = true;
    }
    eg->refs++;
    ns->priv = fns;
    ns->endgid = FDP_ENDGID;
    ns->directives = 1u << FDP_DTYPE_PLACEMENT;
    ns->directives_enabled = eg->enabled ? 1u << FDP_DTYPE_PLACEMENT : 0;
    ns->model.place_rg = 0;
    ns->model.place_ruh = fns->ph[0];
    return true;
}

static void fdp_ns_free(FemuNamespace *ns)
{
    FdpNs *fns = ns->priv;

    if (fns && !--fns->eg->refs) {
        g_free(fns->eg);
    }
    g_free(fns);
    ns->priv = NULL;
}

static FemuMedia *fdp_media_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                                uint32_t first_block, Error **errp)
{
    FdpEndgrp *eg = fdp_eg(n);
    g_autofree char *err = NULL;
    const BbssdParams *b = femu_blackbox_params(n);
    FemuWbData data = { .put = femu_backend_put, .opaque = n };
    FtlWbConfig wb;
    FdpFtlConfig c;
    FemuMedia *m;

    if (!eg) {
        error_setg(errp, "fdp: no namespace of this kind");
        return NULL;
    }
    c = eg->cfg;
    c.shared_nand = shared;
    c.first_block = first_block;
    if (!bbssd_params_wb_config(b, nand_page_bytes(&c.geo), n->vwc, &wb, &err) ||
        !(m = femu_media_fdp_new(&c, wb.bytes ? &wb : NULL,
                                 bbssd_params_wb_volatile(b) ? &data : NULL, &err))) {
        error_setg(errp, "%s", err);
        return NULL;
    }
    eg->ftl = femu_media_fdp_ftl(m);
    fdp_ftl_set_event_fn(eg->ftl, fdp_ftl_event, eg);
    if (eg->store && buffer_is_zero(eg->store, 64)) {
        /* no state: a blank drive, unless its data says it was saved elsewhere */
        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            FemuNamespace *ns = &n->ns[i];
            if (ns->kind == &fdp_kind &&
                !femu_backend_is_zero(n, ns->backend_offset, ns->bytes)) {
                error_setg(errp, "fdp namespace %u: the data area holds data but there is "
                           "no FDP state after it (a drive of another femu_mode, or of "
                           "another size: devsz_mb, ns_sizes_mb?). Start with the "
                           "properties it was saved with, or start over with a new or "
                           "zeroed backing file (this erases the drive)", ns->nsid);
                femu_media_destroy(m);
                eg->ftl = NULL;
                return NULL;
            }
        }
    }
    if (eg->store && !fdp_params_attach_state(fdp_params(n), eg->ftl, eg->store, &err)) {
        error_setg(errp, "%s", err);
        femu_media_destroy(m);
        eg->ftl = NULL;
        return NULL;
    }
    return m;
}

/*
 * A controller reset closes the partly written host RUs (femu-sim's fdp kind does the same
 * at its start and power-on). Not while the power is off: the reset at power-on does it,
 * and posts its events then.
 */
static void fdp_ctrl_reset(FemuCtrl *n, FemuNamespace *ns)
{
    if (!n->power_lost && is_first_fdp(n, ns->nsid)) {
        close_for(fdp_eg(n), FDP_CAUSE_RESET);
    }
}

static void fdp_shutdown(FemuCtrl *n, FemuNamespace *ns)
{
    if (is_first_fdp(n, ns->nsid)) {
        close_for(fdp_eg(n), FDP_CAUSE_SHUTDOWN);
    }
}

/* ---- placement identifiers ---- */

static uint16_t pid_of(const FdpEndgrp *eg, uint32_t rg, uint32_t ph)
{
    return fdp_pid_of(eg->rgif, rg, ph);
}

static bool parse_pid(const FdpEndgrp *eg, const FdpNs *fns, uint16_t pid, uint32_t *rg,
                      uint32_t *ph)
{
    return fdp_parse_pid(eg->rgif, eg->cfg.nrg, fns->nph, pid, rg, ph);
}

/* ---- I/O commands ---- */

static uint16_t mgmt_recv(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd, uint64_t now)
{
    FdpNs *fns = ns->priv;
    FdpEndgrp *eg = fns->eg;
    uint32_t mo = le32_to_cpu(cmd->cdw10) & 0xff;
    uint64_t len = ((uint64_t)le32_to_cpu(cmd->cdw11) + 1) * 4;
    uint64_t size, limit = eg->cfg.ru_time_limit_ns;
    g_autofree uint8_t *buf = NULL;
    uint8_t *d;

    if (!eg->enabled) {
        return NVME_FDP_DISABLED;
    }
    if (mo == 0) {
        return NVME_SUCCESS;        /* no action */
    }
    if (mo != 1) {
        return NVME_INVALID_FIELD;
    }
    /* MDTS bounds the transfer (without one, twice the largest status structure) */
    if (len > (n->mdts ? 4096ULL << n->mdts : 2 * MiB)) {
        return NVME_INVALID_FIELD;
    }
    /* what the host asked for beyond the descriptors reads as zeroes */
    size = MAX(len, 16 + (uint64_t)eg->cfg.nrg * fns->nph * 32);
    buf = g_malloc0(size);
    stw_le_p(buf + 14, eg->cfg.nrg * fns->nph);
    d = buf + 16;
    for (uint32_t rg = 0; rg < eg->cfg.nrg; rg++) {
        for (uint32_t ph = 0; ph < fns->nph; ph++, d += 32) {
            uint32_t ruh = fns->ph[ph];
            uint64_t opened = fdp_ftl_ru_opened_ns(eg->ftl, rg, ruh);
            uint64_t left = limit;

            if (limit && opened != UINT64_MAX) {
                left = now - MIN(now, opened) >= limit ? 0 : limit - (now - MIN(now, opened));
            }
            stw_le_p(d, pid_of(eg, rg, ph));
            stw_le_p(d + 2, ruh);
            stl_le_p(d + 4, DIV_ROUND_UP(left, NANOSECONDS_PER_SECOND));
            stq_le_p(d + 8, fdp_ftl_ru_avail(eg->ftl, rg, ruh) * eg->page_bytes >>
                            ns->lba_shift);
        }
    }
    return femu_copy_dptr(n, cmd, len, buf, MIN(len, size), false, true);
}

static uint16_t mgmt_send(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd)
{
    FdpNs *fns = ns->priv;
    FdpEndgrp *eg = fns->eg;
    uint32_t dw10 = le32_to_cpu(cmd->cdw10), mo = dw10 & 0xff, npids = (dw10 >> 16) + 1;
    g_autofree uint16_t *pids = NULL;
    uint16_t status;

    if (!eg->enabled) {
        return NVME_FDP_DISABLED;
    }
    if (mo == 0) {
        return NVME_SUCCESS;
    }
    if (mo != 1 || npids > eg->cfg.nruh) {
        return NVME_INVALID_FIELD;      /* more than MAXPIDS + 1 identifiers */
    }
    pids = g_new(uint16_t, npids);
    status = femu_copy_dptr(n, cmd, npids * 2, pids, npids * 2, false, false);
    if (status) {
        return status;
    }
    /* every identifier is checked before any handle changes */
    for (uint32_t i = 0; i < npids; i++) {
        uint32_t rg, ph;
        if (!parse_pid(eg, fns, le16_to_cpu(pids[i]), &rg, &ph)) {
            return NVME_INVALID_FIELD;
        }
    }
    for (uint32_t i = 0; i < npids; i++) {
        uint32_t rg, ph;
        parse_pid(eg, fns, le16_to_cpu(pids[i]), &rg, &ph);
        eg->cause = FDP_CAUSE_HOST;
        eg->cause_ns = ns;
        eg->cause_pid = le16_to_cpu(pids[i]);
        fdp_ftl_ruh_update(eg->ftl, rg, fns->ph[ph]);
        eg->cause = FDP_CAUSE_NONE;
    }
    return NVME_SUCCESS;
}

static uint16_t fdp_write(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns,
                          const NvmeCmd *cmd, uint64_t now, uint64_t *deadline)
{
    FdpNs *fns = ns->priv;
    FdpEndgrp *eg = fns->eg;
    uint32_t dtype = (le32_to_cpu(cmd->cdw12) >> 20) & 0xf, rg, ph;
    uint16_t pid = le32_to_cpu(cmd->cdw13) >> 16, status;

    if (!eg->enabled) {
        dtype = 0;      /* no directive enabled: DTYPE and DSPEC are ignored */
    } else if (dtype && dtype != FDP_DTYPE_PLACEMENT) {
        return NVME_INVALID_FIELD;
    }
    if (!fdp_place_write(eg->rgif, eg->cfg.nrg, fns->nph, dtype != 0, pid, &eg->next_rg,
                         &rg, &ph)) {
        status = femu_nvm_rw_check(n, ns, cmd);
        if (status) {
            return status;
        }
        /* the location is where the controller put the data instead */
        ev_post(eg, FDP_EV_INVALID_PID, FDP_EVF_PIV | FDP_EVF_NSIDV | FDP_EVF_LV, pid,
                ns->nsid, 0, fns->ph[0], NULL);
    }
    ns->model.place_rg = rg;
    ns->model.place_ruh = fns->ph[ph];
    status = femu_nvm_io(n, req, ns, cmd, now, deadline);
    ns->model.place_rg = 0;
    ns->model.place_ruh = fns->ph[0];
    return status;
}

static uint16_t fdp_io(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                       uint64_t now, uint64_t *deadline)
{
    switch (cmd->opcode) {
    case NVME_CMD_WRITE:
        return fdp_write(n, req, ns, cmd, now, deadline);
    case NVME_CMD_IO_MGMT_RECV:
        return mgmt_recv(n, ns, cmd, now);
    case NVME_CMD_IO_MGMT_SEND:
        return mgmt_send(n, ns, cmd);
    default:
        return femu_nvm_io(n, req, ns, cmd, now, deadline);
    }
}

static void fdp_effects(FemuCtrl *n, NvmeEffectsLog *log)
{
    log->iocs[NVME_CMD_IO_MGMT_RECV] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
    log->iocs[NVME_CMD_IO_MGMT_SEND] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
    log->acs[NVME_ADM_CMD_DIRECTIVE_SEND] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
    log->acs[NVME_ADM_CMD_DIRECTIVE_RECV] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
}

/* ---- admin: identify, log pages, features ---- */

static void fdp_id_ctrl(FemuCtrl *n, NvmeIdCtrl *id)
{
    id->ctratt |= cpu_to_le32(NVME_CTRATT_ENDGRPS | NVME_CTRATT_FDPS);
    id->endgidmax = cpu_to_le16(FDP_ENDGID);
    id->oacs |= cpu_to_le16(NVME_OACS_DIRECTIVES);
}

static uint8_t *config_log(FdpEndgrp *eg, size_t *size)
{
    uint32_t dsze = 64 + 4 * eg->cfg.nruh;
    uint8_t *log = g_malloc0(16 + dsze), *d = log + 16;

    *size = 16 + dsze;
    stw_le_p(log, 0);               /* one configuration, 0-based */
    stl_le_p(log + 4, *size);
    stw_le_p(d, dsze);
    d[2] = eg->rgif | 0x80;         /* RGIF, valid */
    stl_le_p(d + 4, eg->cfg.nrg);
    stw_le_p(d + 8, eg->cfg.nruh);
    stw_le_p(d + 10, eg->cfg.nruh - 1);         /* MAXPIDS, 0-based */
    /* NNSS, a count (not 0-based, unlike MAXPIDS): the namespaces of the group, which no
       command can add to (no namespace management) */
    stl_le_p(d + 12, fdp_ns_count(eg->n));
    stq_le_p(d + 16, eg->runs);
    stl_le_p(d + 24, eg->cfg.ru_time_limit_ns / NANOSECONDS_PER_SECOND);
    for (uint32_t i = 0; i < eg->cfg.nruh; i++) {
        d[64 + 4 * i] = eg->cfg.ruh_type[i];
    }
    return log;
}

static void put128(uint8_t *p, uint64_t v)
{
    stq_le_p(p, v);
    stq_le_p(p + 8, 0);
}

/* Endurance Group Information: the group's lifetime bytes, as SMART counts them. */
static uint8_t *endgrp_log(FdpEndgrp *eg, size_t *size)
{
    const FdpFtlStats *s = fdp_ftl_stats(eg->ftl);
    uint8_t *log = g_malloc0(512);
    uint64_t rd_cmds = 0, wr_cmds = 0;

    for (uint32_t i = 0; i < eg->n->num_namespaces; i++) {
        if (eg->n->ns[i].kind == &fdp_kind) {
            rd_cmds += eg->n->ns[i].io.read_cmds;
            wr_cmds += eg->n->ns[i].io.write_cmds;
        }
    }
    *size = 512;
    log[3] = 100;       /* available spare, % */
    log[4] = 10;        /* its threshold */
    /* data units of the host's commands' bytes; media units of the pages programmed */
    put128(log + 48, io_counters_data_units(s->host_bytes_read));
    put128(log + 64, io_counters_data_units(s->host_bytes_written));
    put128(log + 80, io_counters_data_units(s->nand_pages_written * eg->page_bytes));
    put128(log + 96, rd_cmds);
    put128(log + 112, wr_cmds);
    return log;
}

static uint16_t fdp_ctrl_get_log(FemuCtrl *n, const NvmeCmd *cmd, uint8_t lid, uint64_t off,
                                 uint64_t len)
{
    FdpEndgrp *eg = fdp_eg(n);
    uint32_t dw10 = le32_to_cpu(cmd->cdw10);
    bool rae = dw10 & (1u << 15);
    uint16_t lsi = le32_to_cpu(cmd->cdw11) >> 16, status;
    g_autofree uint8_t *log = NULL;
    size_t size;

    if (!eg || (lid != NVME_LOG_ENDGRP &&
                (lid < NVME_LOG_FDP_CONFS || lid > NVME_LOG_FDP_EVENTS))) {
        return FEMU_KIND_PASS;
    }
    if (lsi != FDP_ENDGID) {
        return NVME_INVALID_FIELD;
    }
    if (lid > NVME_LOG_FDP_CONFS && !eg->enabled) {
        return NVME_FDP_DISABLED;
    }
    switch (lid) {
    case NVME_LOG_ENDGRP:
        log = endgrp_log(eg, &size);
        break;
    case NVME_LOG_FDP_CONFS:
        log = config_log(eg, &size);
        break;
    case NVME_LOG_FDP_RUH_USAGE:
        size = 8 + 8 * eg->cfg.nruh;
        log = g_malloc0(size);
        stw_le_p(log, eg->cfg.nruh);
        for (uint32_t i = 0; i < eg->cfg.nruh; i++) {
            log[8 + 8 * i] = eg->ruh_used[i] ? 1 : 0;     /* host specified */
        }
        break;
    case NVME_LOG_FDP_STATS: {
        const FdpFtlStats *s = fdp_ftl_stats(eg->ftl);
        size = 64;
        log = g_malloc0(size);
        /* HBMW: the bytes the host wrote; MBMW: the pages programmed, GC's too */
        put128(log, s->host_bytes_written);
        put128(log + 16, s->nand_pages_written * eg->page_bytes);
        put128(log + 32, s->rus_erased * eg->runs);
        break;
    }
    default: {
        /* LSP bit 0: host events (1) or controller events (0) */
        FdpEventLog *ev = (dw10 >> 8) & 1 ? &eg->host : &eg->ctrl;
        size = 64 + (size_t)ev->count * FDP_EVENT_BYTES;
        log = g_malloc0(size);
        stl_le_p(log, ev->count);
        memcpy(log + 64, ev->ev, (size_t)ev->count * FDP_EVENT_BYTES);
        if (off > size) {
            return NVME_INVALID_FIELD;
        }
        status = femu_copy_dptr(n, cmd, len, log + off, MIN(len, size - off), true, true);
        if (!status && !rae) {
            /* events read whole are cleared */
            uint32_t kept = 0;
            for (uint32_t i = 0; i < ev->count; i++) {
                uint64_t at = 64 + (uint64_t)i * FDP_EVENT_BYTES;
                if (at < off || at + FDP_EVENT_BYTES > off + len) {
                    memmove(ev->ev[kept++], ev->ev[i], FDP_EVENT_BYTES);
                }
            }
            ev->count = kept;
        }
        return status;
    }
    }
    if (off > size) {
        return NVME_INVALID_FIELD;
    }
    return femu_copy_dptr(n, cmd, len, log + off, MIN(len, size - off), true, true);
}

static uint16_t events_feature(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd, bool set)
{
    FemuNamespace *ns = femu_ns(n, le32_to_cpu(cmd->nsid));
    uint32_t dw10 = le32_to_cpu(cmd->cdw10), dw11 = le32_to_cpu(cmd->cdw11);
    uint32_t phndl = dw11 & 0xffff, noet = (dw11 >> 16) & 0xff;
    uint8_t sel = (dw10 >> 8) & 0x7;
    FdpNs *fns;
    FdpEndgrp *eg;
    uint32_t ruh;

    if (!ns || ns->kind != &fdp_kind) {
        return NVME_INVALID_FIELD;
    }
    fns = ns->priv;
    eg = fns->eg;
    if (!eg->enabled) {
        return NVME_FDP_DISABLED;
    }
    if (phndl >= fns->nph) {
        return NVME_INVALID_FIELD;
    }
    ruh = fns->ph[phndl];
    if (set) {
        g_autofree uint8_t *types = g_malloc0(MAX(noet, 1));
        uint8_t bits = 0;
        uint16_t status;

        if (dw10 & (1u << 31)) {
            return FDP_NOT_SAVEABLE;
        }
        status = noet ? femu_copy_dptr(n, cmd, noet, types, noet, true, false) : 0;
        if (status) {
            return status;
        }
        for (uint32_t i = 0; i < noet; i++) {
            uint32_t t = 0;
            while (t < FDP_NR_EVENT_TYPES && fdp_event_types[t] != types[i]) {
                t++;
            }
            if (t == FDP_NR_EVENT_TYPES) {
                return NVME_INVALID_FIELD;
            }
            bits |= 1u << t;
        }
        if (le32_to_cpu(cmd->cdw12) & 1) {
            eg->ev_mask[ruh] |= bits;
        } else {
            eg->ev_mask[ruh] &= ~bits;
        }
        return NVME_SUCCESS;
    }
    if (sel == NVME_GETFEAT_SELECT_CAP) {
        req->cqe.result = cpu_to_le32(NVME_FEAT_CAP_CHANGE);
        return NVME_SUCCESS;
    }
    {
        uint32_t count = FDP_NR_EVENT_TYPES;    /* NOET is the Set's; a Get gives all */
        uint8_t buf[2 * FDP_NR_EVENT_TYPES] = { 0 };
        uint8_t mask = sel == NVME_GETFEAT_SELECT_CURRENT ? eg->ev_mask[ruh] : 0x3f;

        for (uint32_t i = 0; i < count; i++) {
            buf[2 * i] = fdp_event_types[i];
            buf[2 * i + 1] = (mask >> i) & 1;
        }
        req->cqe.result = cpu_to_le32(count);
        return femu_copy_dptr(n, cmd, sizeof(buf), buf, sizeof(buf), true, true);
    }
}

static uint16_t fdp_ctrl_feature(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd, bool set)
{
    FdpEndgrp *eg = fdp_eg(n);
    uint32_t dw10 = le32_to_cpu(cmd->cdw10), dw11 = le32_to_cpu(cmd->cdw11);
    uint8_t fid = dw10 & 0xff, sel = (dw10 >> 8) & 0x7;

    if (!eg || (fid != NVME_FDP_MODE && fid != NVME_FDP_EVENTS)) {
        return FEMU_KIND_PASS;
    }
    if (fid == NVME_FDP_EVENTS) {
        return events_feature(n, req, cmd, set);
    }
    if ((dw11 & 0xffff) != FDP_ENDGID) {
        return NVME_INVALID_FIELD;
    }
    if (set) {
        if (((le32_to_cpu(cmd->cdw12) >> 8) & 0xff) != 0) {
            return NVME_INVALID_FIELD;      /* only configuration 0 exists */
        }
        /* the endurance group has namespaces, and they stay */
        return NVME_CMD_SEQ_ERROR;
    }
    if (sel == NVME_GETFEAT_SELECT_CAP) {
        req->cqe.result = 0;    /* not saveable, changeable only without namespaces */
        return NVME_SUCCESS;
    }
    req->cqe.result = cpu_to_le32(sel == NVME_GETFEAT_SELECT_CURRENT
                                  ? eg->enabled : fdp_params(n)->on);
    return NVME_SUCCESS;
}

static const Property fdp_props[] = { FDP_PROPS(FEMU_QDEV_ITEM, FdpParams) };

static const char *const fdp_prop_help[][2] = {
    { "fdp", "fdp: Flexible Data Placement enabled in endurance group 1 at power-up" },
    { "fdp_ruh_types", "fdp: reclaim unit handles, 'ii' or 'pi' each, ':'-separated "
      "(default ii:ii:ii:ii)" },
    { "fdp_nrg", "fdp: reclaim groups, dividing the chips" },
    { "fdp_ns_ruhs", "fdp: each fdp namespace's handles, e.g. 0.1/2.3 (default: all)" },
    { "fdp_erutl_s", "fdp: seconds an RU may stay open, 0 = no limit" },
    { NULL, NULL },
};

static const FemuNsKind fdp_kind = {
    .name = "fdp",
    .femu_mode = 4,
    .model_name = "FEMU FDP-SSD Controller",
    .csi = NVME_CSI_NVM,
    .props = fdp_props,
    .nr_props = ARRAY_SIZE(fdp_props),
    .params_size = sizeof(FdpParams),
    .prop_help = fdp_prop_help,
    .check_props = fdp_check_props,
    .size_ns = fdp_size_ns,
    .flash_blocks = fdp_flash_blocks,
    .media_new = fdp_media_new,
    .ns_init = fdp_ns_init,
    .ns_free = fdp_ns_free,
    .io = fdp_io,
    .effects = fdp_effects,
    .ctrl_reset = fdp_ctrl_reset,
    .shutdown = fdp_shutdown,
    .id_ctrl = fdp_id_ctrl,
    .ctrl_get_log = fdp_ctrl_get_log,
    .ctrl_feature = fdp_ctrl_feature,
    .one_media = true,
    .writes_in_place = true,
};

FEMU_NS_KIND_REGISTER(fdp_kind)
