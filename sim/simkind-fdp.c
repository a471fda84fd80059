/*
 * femu-sim's fdp kind (femu_mode=4): every fdp namespace in one endurance group on one FTL
 * (fdp-ftl.c), as hw/femu/fdp/fdp.c builds it, and a write placed as fdp.c places it
 * (fdp-params.c: the handle lists, placement identifiers, groups in turn). The FDP events
 * and log pages are the host's business and not modelled here.
 *
 * A write's SimIo.plid indexes the namespace's placement identifiers in the order I/O
 * Management Receive lists them (each reclaim group's handles in turn), as fio's fdp_pli
 * does; an index past them is an invalid placement identifier.
 *
 * As the device's controller resets do (fdp.c fdp_ctrl_reset), the FTL closes every
 * partly written host RU (fdp_ftl_close_open) when the drive starts from a backing file,
 * when the power comes back after a cut and when the device is freed (QEMU's exit resets
 * the controller too), after the run's statistics. femu-sim has no controller reset or
 * shutdown command of its own.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <string.h>

#include <glib.h>

#include "simkinds.h"
#include "fdp/fdp-params.h"

/* No placement identifier has these handle bits (more than FDP_MAX_RUH in any RGIF). */
#define SIM_FDP_BAD_PID 0xffff

/* The endurance group every fdp namespace is in. */
typedef struct SimFdpGroup {
    FdpFtlConfig cfg;
    bool enabled;
    uint8_t rgif;
    uint32_t next_rg;           /* writes without a directive take groups in turn */
    uint32_t refs;
} SimFdpGroup;

typedef struct SimFdpNs {
    SimFdpGroup *eg;
    FdpHandles h;
} SimFdpNs;

static uint32_t fdp_count(SimDevice *d, uint32_t before_nsid)
{
    uint32_t c = 0;

    for (uint32_t i = 1; i < before_nsid && i <= sim_device_nr_ns(d); i++) {
        c += sim_device_ns(d, i)->kind == &sim_fdp;
    }
    return c;
}

static uint64_t fdp_total_bytes(SimDevice *d)
{
    uint64_t sum = 0;

    for (uint32_t i = 1; i <= sim_device_nr_ns(d); i++) {
        sum += sim_device_ns(d, i)->kind == &sim_fdp ? sim_device_sizes(d)->bytes[i - 1] : 0;
    }
    return sum;
}

static bool ftl_config(SimDevice *d, uint64_t bytes, FdpFtlConfig *c, char **err)
{
    const SimParams *p = sim_device_params(d);
    return fdp_params_ftl_config(&p->fdp, &p->flash, &p->bbssd, bytes, c, err);
}

static bool fdp_check(SimDevice *d, SimParams *p, char **err)
{
    return fdp_params_check(&p->fdp, fdp_count(d, UINT32_MAX), err);
}

/* The FTL's state follows the data, in the first fdp namespace's metadata. */
static bool fdp_size_ns(SimDevice *d, uint32_t nsid, uint64_t *bytes, bool derived,
                        uint64_t *meta_bytes, char **err)
{
    FdpFtlConfig c;

    (void)bytes, (void)derived;
    if (fdp_count(d, nsid)) {
        return true;
    }
    if (!ftl_config(d, fdp_total_bytes(d), &c, err)) {
        return false;
    }
    *meta_bytes = fdp_params_meta_bytes(&c);
    return true;
}

static uint32_t fdp_flash_blocks(SimDevice *d, uint64_t bytes, char **err)
{
    FdpFtlConfig c;
    return ftl_config(d, bytes, &c, err) ? c.geo.blks_per_pl : 0;
}

static FemuMedia *fdp_media_new(SimDevice *d, uint64_t bytes, NandModel *shared,
                                uint32_t first_block, char **err)
{
    FdpFtlConfig c;
    FtlWbConfig wb;

    if (!ftl_config(d, bytes, &c, err) ||
        !bbssd_params_wb_config(&sim_device_params(d)->bbssd, nand_page_bytes(&c.geo),
                                sim_device_params(d)->vwc, &wb, err)) {
        return NULL;
    }
    c.shared_nand = shared;
    c.first_block = first_block;
    /* femu-sim keeps no data: the write buffer times, it holds no bytes */
    return femu_media_fdp_new(&c, wb.bytes ? &wb : NULL, NULL, err);
}

static bool fdp_ns_init(SimDevice *d, SimNs *ns, char **err)
{
    const SimParams *p = sim_device_params(d);
    uint32_t idx = fdp_count(d, ns->nsid), count = fdp_count(d, UINT32_MAX);
    g_autofree FdpHandles *lists = g_new0(FdpHandles, count);
    SimFdpGroup *eg = NULL;
    SimFdpNs *f;

    for (uint32_t i = 1; i < ns->nsid && !eg; i++) {
        SimNs *o = sim_device_ns(d, i);
        eg = o->kind == &sim_fdp && o->priv ? ((SimFdpNs *)o->priv)->eg : NULL;
    }
    if (!eg) {
        eg = g_new0(SimFdpGroup, 1);
        if (!ftl_config(d, fdp_total_bytes(d), &eg->cfg, err)) {
            g_free(eg);
            return false;
        }
        eg->enabled = p->fdp.on;
        eg->rgif = fdp_rgif(eg->cfg.nrg);
    }
    if (!fdp_params_ns_ruhs(&p->fdp, &eg->cfg, lists, count, err)) {
        if (!eg->refs) {
            g_free(eg);
        }
        return false;
    }
    f = g_new0(SimFdpNs, 1);
    f->eg = eg;
    f->h = lists[idx];
    eg->refs++;
    ns->priv = f;
    ns->model.place_rg = 0;
    ns->model.place_ruh = f->h.ph[0];
    return true;
}

static void fdp_ns_free(SimNs *ns)
{
    SimFdpNs *f = ns->priv;

    if (!--f->eg->refs) {
        /* the device's exit: QEMU's femu_exit resets the controller, which closes them */
        if (ns->model.media) {
            fdp_ftl_close_open(femu_media_fdp_ftl(ns->model.media));
        }
        g_free(f->eg);
    }
    g_free(f);
    ns->priv = NULL;
}

/* The placement identifier of plid (its index in the RUH Status list). */
static uint16_t pid_of_plid(const SimFdpNs *f, uint32_t plid)
{
    if (plid >= f->eg->cfg.nrg * f->h.nph) {
        return SIM_FDP_BAD_PID;
    }
    return fdp_pid_of(f->eg->rgif, plid / f->h.nph, plid % f->h.nph);
}

static uint16_t fdp_io(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now, uint64_t *done)
{
    SimFdpNs *f = ns->priv;
    SimFdpGroup *eg = f->eg;
    /* with FDP disabled the directive is ignored */
    bool directive = eg->enabled && io->plid != SIM_NO_PLID;
    uint32_t rg, ph;
    uint16_t status;

    if (io->op != SIM_OP_WRITE) {
        return sim_nvm_io(d, ns, io, now, done);
    }
    /* an invalid identifier is placed with handle 0 in group 0 (fdp.c posts an event) */
    fdp_place_write(eg->rgif, eg->cfg.nrg, f->h.nph, directive,
                    directive ? pid_of_plid(f, io->plid) : 0, &eg->next_rg, &rg, &ph);
    ns->model.place_rg = rg;
    ns->model.place_ruh = f->h.ph[ph];
    status = sim_nvm_io(d, ns, io, now, done);
    ns->model.place_rg = 0;
    ns->model.place_ruh = f->h.ph[0];
    return status;
}

static void fdp_target(SimNs *ns, SimTarget *t)
{
    SimFdpNs *f = ns->priv;

    t->nr_plids = f->eg->enabled ? f->eg->cfg.nrg * f->h.nph : 0;
}

/* The FTL's state in the first fdp namespace's metadata (fdp.c fdp_media_new's rules). */
static bool fdp_attach_state(SimDevice *d, SimNs *ns, uint8_t *meta, bool data, char **err)
{
    FdpFtl *ftl = femu_media_fdp_ftl(ns->model.media);
    static const uint8_t blank[64];

    if (data && !memcmp(meta, blank, sizeof(blank))) {
        *err = g_strdup_printf("fdp namespace %u: the backing file's data area holds data "
                               "but there is no FDP state after it (a drive of another "
                               "femu_mode or size?)", ns->nsid);
        return false;
    }
    if (!fdp_params_attach_state(&sim_device_params(d)->fdp, ftl, meta, err)) {
        return false;
    }
    /* the device's start: its controller reset closes what the last run left open */
    fdp_ftl_close_open(ftl);
    return true;
}

/* Power is back after a cut: the controller reset closes the open RUs (fdp.c). */
static void fdp_power_on(SimDevice *d, uint64_t now)
{
    (void)now;
    for (uint32_t i = 1; i <= sim_device_nr_ns(d); i++) {
        SimNs *ns = sim_device_ns(d, i);
        if (ns->kind == &sim_fdp) {
            fdp_ftl_close_open(femu_media_fdp_ftl(ns->model.media));     /* one FTL for all */
            return;
        }
    }
}

const SimKind sim_fdp = {
    .name = "fdp", .femu_mode = 4, .one_media = true,
    .check = fdp_check, .size_ns = fdp_size_ns, .flash_blocks = fdp_flash_blocks,
    .media_new = fdp_media_new, .ns_init = fdp_ns_init, .ns_free = fdp_ns_free,
    .io = fdp_io, .target = fdp_target, .attach_state = fdp_attach_state,
    .power_on = fdp_power_on,
};
