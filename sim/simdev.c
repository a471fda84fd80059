/*
 * femu-sim's device; see simdev.h. The layout and the models follow the QEMU device's
 * (hw/femu/namespaces.c) step by step, from the same QEMU-free configuration code.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE         /* SEEK_DATA */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>

#include <glib.h>

#include "simdev.h"
#include "simkinds.h"
#include "media/frontend.h"
#include "media/nvm-rules.h"

#define MIB (1024ULL * 1024)

struct SimDevice {
    SimParams p;                /* a copy (strings borrowed): kinds settle defaults in it */
    uint32_t nr_ns;
    SimNs ns[FEMU_MAX_NAMESPACES];
    FemuLayoutSizes sizes;      /* each namespace's data and its kind's metadata after it */
    FemuMedia *medias[FEMU_MAX_NAMESPACES];
    uint32_t nr_medias;
    NandModel *shared_nand;
    FemuFrontend *frontend;
    uint64_t frontend_last_ns;
    /* background time, as the QEMU device's dataplane gives it */
    bool wants_idle;
    uint64_t outstanding;
    uint64_t quiet_since;
    uint64_t idle_at;
    uint64_t completions;
    uint64_t model_latency_ns;  /* sum of completion - arrival, as the device's statistic */
    GPtrArray *owned;           /* freed with the device (sim_device_own) */
    uint8_t *backing_meta;      /* the backing file's metadata, mapped (attach_backing) */
    size_t backing_len;
    uint8_t *read_buf;          /* a buffered read's copy (media_buffers), never looked at */
    uint64_t read_buf_len;
};

static const SimKind *kind_by_mode(uint32_t mode)
{
    for (uint32_t i = 0; sim_kinds[i]; i++) {
        if (sim_kinds[i]->femu_mode == mode) {
            return sim_kinds[i];
        }
    }
    return NULL;
}

static const SimKind *kind_by_name(const char *name)
{
    for (uint32_t i = 0; sim_kinds[i]; i++) {
        if (!strcmp(sim_kinds[i]->name, name)) {
            return sim_kinds[i];
        }
    }
    return NULL;
}

static char *kind_list(bool modes)
{
    GString *s = g_string_new(NULL);

    for (uint32_t i = 0; sim_kinds[i]; i++) {
        if (modes) {
            g_string_append_printf(s, "%s%u (%s)", i ? ", " : "", sim_kinds[i]->femu_mode,
                                   sim_kinds[i]->name);
        } else {
            g_string_append_printf(s, "%s%s", i ? ", " : "", sim_kinds[i]->name);
        }
    }
    return g_string_free(s, false);
}

static bool parse_ns_types(SimDevice *d, char **err)
{
    const SimParams *p = &d->p;
    g_auto(GStrv) parts = NULL;
    uint32_t count;

    if (p->num_namespaces < 1 || p->num_namespaces > FEMU_MAX_NAMESPACES) {
        *err = g_strdup_printf("namespaces=%u is out of range: allowed 1..%d",
                               p->num_namespaces, FEMU_MAX_NAMESPACES);
        return false;
    }
    if (!p->ns_types) {
        const SimKind *k = kind_by_mode(p->femu_mode);
        if (!k) {
            g_autofree char *allowed = kind_list(true);
            *err = g_strdup_printf("femu_mode=%u is not available in femu-sim: allowed %s",
                                   p->femu_mode, allowed);
            return false;
        }
        d->nr_ns = p->num_namespaces;
        for (uint32_t i = 0; i < d->nr_ns; i++) {
            d->ns[i].kind = k;
        }
        return true;
    }
    parts = g_strsplit_set(p->ns_types, ",:", -1);
    count = g_strv_length(parts);
    if (count < 1 || count > FEMU_MAX_NAMESPACES ||
        (p->num_namespaces != 1 && p->num_namespaces != count)) {
        *err = g_strdup_printf("ns_types='%s' must list one mode per namespace "
                               "(namespaces=%u), at most %d", p->ns_types,
                               p->num_namespaces, FEMU_MAX_NAMESPACES);
        return false;
    }
    d->nr_ns = count;
    for (uint32_t i = 0; i < count; i++) {
        const char *t = g_strstrip(parts[i]);
        d->ns[i].kind = kind_by_name(t);
        if (!d->ns[i].kind) {
            g_autofree char *allowed = kind_list(false);
            *err = g_strdup_printf("ns_types='%s': '%s' is not a namespace mode: allowed %s",
                                   p->ns_types, t, allowed);
            return false;
        }
    }
    return true;
}

/* Namespace nsid as its kind sizes it (FemuLayoutSizeNsFn). */
static bool kind_size_ns(void *opaque, uint32_t nsid, uint64_t *bytes, bool derived,
                         uint64_t *meta_bytes, char **err)
{
    SimDevice *d = opaque;
    const SimKind *k = d->ns[nsid - 1].kind;

    return !k->size_ns || k->size_ns(d, nsid, bytes, derived, meta_bytes, err);
}

static bool size_namespaces(SimDevice *d, uint64_t total, bool derived, char **err)
{
    return femu_layout_size_namespaces(d->p.ns_sizes_mb, d->nr_ns, d->p.devsz_mb, total,
                                       derived, kind_size_ns, d, &d->sizes, err);
}

/* The device's own checks of what the model depends on (ctrl.c femu_check_props). */
static bool check_params(const SimParams *p, char **err)
{
    NandTiming opts = { 0 };
    FemuFrontendConfig fe = p->frontend_cfg;

    if (p->mdts > 15) {
        *err = g_strdup_printf("mdts=%u is out of range: allowed 0 (no limit) .. 15", p->mdts);
        return false;
    }
    if (p->lba_index > 1) {
        *err = g_strdup_printf("lba_index=%u is out of range: allowed 0 (512-byte LBAs) or "
                               "1 (4096-byte LBAs)", p->lba_index);
        return false;
    }
    if (p->vwc > 1) {
        *err = g_strdup_printf("vwc=%u is out of range: allowed 0 or 1", p->vwc);
        return false;
    }
    if (p->devsz_mb > FEMU_MAX_DEVSZ_MB) {
        *err = g_strdup_printf("devsz_mb=%u is out of range: allowed 1..%u (64 TiB)",
                               p->devsz_mb, FEMU_MAX_DEVSZ_MB);
        return false;
    }
    if (!flash_params_options(&p->flash, &opts, err)) {
        return false;
    }
    fe.time_scale = p->flash.time_scale;
    return femu_frontend_check(&fe, err);
}

static bool layout(SimDevice *d, char **err)
{
    const SimParams *p = &d->p;
    bool derived = !p->devsz_mb && !p->ns_sizes_mb, sra_kind = false;
    uint32_t lba_bytes;

    if (!check_params(p, err) || !parse_ns_types(d, err)) {
        return false;
    }
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        const SimKind *k = d->ns[i].kind;
        bool first = true;
        for (uint32_t j = 0; j < i; j++) {
            first &= d->ns[j].kind != k;
        }
        if (first && k->check && !k->check(d, &d->p, err)) {
            return false;
        }
        sra_kind |= k->read_ahead;
    }
    lba_bytes = p->lba_index ? 4096 : 512;
    if (p->sra.on && !sra_kind) {
        *err = g_strdup("sra=on: no namespace whose kind reads ahead: allowed femu_mode= "
                        "(or ns_types=) blackbox, zns");
        return false;
    }
    if (!size_namespaces(d, p->devsz_mb ? (uint64_t)p->devsz_mb * MIB : 1024 * MIB, derived,
                         err)) {
        return false;
    }
    if (d->sizes.data_bytes / d->nr_ns < lba_bytes) {
        *err = g_strdup_printf("devsz_mb=%u is too small for namespaces=%u", p->devsz_mb,
                               d->nr_ns);
        return false;
    }
    uint64_t off = 0;           /* 64 bits: a device passes 4 GiB */
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        d->ns[i].nsid = i + 1;
        d->ns[i].lba_bytes = lba_bytes;
        d->ns[i].backend_offset = off;
        d->ns[i].bytes = d->sizes.bytes[i];
        off += d->ns[i].bytes;
    }
    return true;
}

/* One model for a device of one kind, one per namespace on one shared flash when mixed. */
static bool build_media(SimDevice *d, char **err)
{
    const SimParams *p = &d->p;
    FemuFrontendConfig fe = p->frontend_cfg;
    bool mixed = false, flash = false;
    uint32_t first = 0, blocks[FEMU_MAX_NAMESPACES] = { 0 };
    const void *kinds[FEMU_MAX_NAMESPACES];
    bool one_media[FEMU_MAX_NAMESPACES];
    FemuMediaPlan plan;

    fe.time_scale = p->flash.time_scale;
    *err = NULL;
    d->frontend = femu_frontend_new(&fe, err);
    if (*err) {
        return false;
    }
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        mixed |= d->ns[i].kind != d->ns[0].kind;
    }
    if (!mixed) {
        FemuMedia *m = d->ns[0].kind->media_new(d, d->sizes.data_bytes, NULL, 0, err);
        if (!m) {
            return false;
        }
        d->medias[d->nr_medias++] = m;
        for (uint32_t i = 0; i < d->nr_ns; i++) {
            femu_ns_media_attach(&d->ns[i].model, m, d->frontend, 0, d->ns[i].backend_offset,
                                 d->ns[i].bytes);
        }
        return true;
    }
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        kinds[i] = d->ns[i].kind;
        one_media[i] = d->ns[i].kind->one_media;
    }
    femu_layout_media_plan(d->nr_ns, kinds, one_media, d->sizes.bytes, &plan);
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        const SimKind *k = d->ns[i].kind;
        if (k->flash_blocks && plan.owner[i] == i) {
            blocks[i] = k->flash_blocks(d, plan.model_bytes[i], err);
            if (!blocks[i]) {
                return false;
            }
            flash = true;
        }
    }
    if (flash) {
        NandGeometry g = femu_flash_geometry(&p->flash, 0);
        NandTiming t;

        for (uint32_t i = 0; i < d->nr_ns; i++) {
            g.blks_per_pl += blocks[i];
        }
        if (!flash_params_timing("", p->flash.flash_type, p->flash.pg_rd_lat,
                                 p->flash.pg_wr_lat, p->flash.blk_er_lat, &p->flash, &t,
                                 err) ||
            !(d->shared_nand = nand_model_new(&g, &t, err))) {
            return false;
        }
    }
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        SimNs *ns = &d->ns[i];
        FemuMedia *m;

        if (plan.owner[i] != i) {
            femu_ns_media_attach(&ns->model, d->ns[plan.owner[i]].model.media,
                                 d->frontend, plan.media_base[i], ns->backend_offset,
                                 ns->bytes);
            continue;
        }
        m = ns->kind->media_new(d, plan.model_bytes[i], d->shared_nand, first, err);
        if (!m) {
            return false;
        }
        first += blocks[i];
        d->medias[d->nr_medias++] = m;
        femu_ns_media_attach(&ns->model, m, d->frontend, plan.media_base[i],
                             ns->backend_offset, ns->bytes);
    }
    return true;
}

SimDevice *sim_device_new(const SimParams *p, char **err)
{
    SimDevice *d = g_new0(SimDevice, 1);

    d->p = *p;
    d->owned = g_ptr_array_new_with_free_func(g_free);
    d->idle_at = UINT64_MAX;
    if (!layout(d, err)) {
        sim_device_free(d);
        return NULL;
    }
    /* the namespaces' state, then the models, as the QEMU device makes them */
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        if (d->ns[i].kind->ns_init && !d->ns[i].kind->ns_init(d, &d->ns[i], err)) {
            sim_device_free(d);
            return NULL;
        }
    }
    if (!build_media(d, err)) {
        sim_device_free(d);
        return NULL;
    }
    for (uint32_t i = 0; i < d->nr_medias; i++) {
        d->wants_idle |= d->medias[i]->ops->idle != NULL;
    }
    return d;
}

void sim_device_free(SimDevice *d)
{
    if (!d) {
        return;
    }
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        if (d->ns[i].priv && d->ns[i].kind->ns_free) {
            d->ns[i].kind->ns_free(&d->ns[i]);
        }
    }
    for (uint32_t i = 0; i < d->nr_medias; i++) {
        femu_media_destroy(d->medias[i]);
    }
    if (d->shared_nand) {
        nand_model_free(d->shared_nand);
    }
    femu_frontend_free(d->frontend);
    if (d->backing_meta) {
        msync(d->backing_meta, d->backing_len, MS_SYNC);
        munmap(d->backing_meta, d->backing_len);
    }
    g_ptr_array_free(d->owned, true);
    g_free(d->read_buf);
    g_free(d);
}

/* Whether the file holds data (not a hole) in [off, off + len). */
static bool file_has_data(int fd, uint64_t off, uint64_t len)
{
    off_t at = lseek(fd, off, SEEK_DATA);

    return at >= 0 && (uint64_t)at < off + len;
}

bool sim_device_attach_backing(SimDevice *d, const char *path, uint64_t *bytes, char **err)
{
    uint64_t need = d->sizes.data_bytes + d->sizes.meta_bytes + FEMU_WRITE_JOURNAL_BYTES;
    uint64_t meta_at = d->sizes.data_bytes;
    struct stat st;
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    bool ok = true;

    if (fd < 0) {
        *err = g_strdup_printf("--backing %s: %s", path, g_strerror(errno));
        return false;
    }
    /* whole MiB, as a memory backend's size is given */
    need = (need + MIB - 1) / MIB * MIB;
    if (fstat(fd, &st) || ((uint64_t)st.st_size < need && ftruncate(fd, need))) {
        *err = g_strdup_printf("--backing %s: %s", path, g_strerror(errno));
        close(fd);
        return false;
    }
    *bytes = MAX((uint64_t)st.st_size, need);
    d->backing_len = d->sizes.meta_bytes + FEMU_WRITE_JOURNAL_BYTES;
    d->backing_meta = mmap(NULL, d->backing_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                           meta_at);
    if (d->backing_meta == MAP_FAILED) {
        d->backing_meta = NULL;
        *err = g_strdup_printf("--backing %s: %s", path, g_strerror(errno));
        close(fd);
        return false;
    }
    uint64_t off = 0;
    for (uint32_t i = 0; ok && i < d->nr_ns; off += d->sizes.meta[i], i++) {
        SimNs *ns = &d->ns[i];
        bool data = false;

        if (!d->sizes.meta[i] || !ns->kind->attach_state) {
            continue;
        }
        /* a kind whose namespaces share one model keeps one state for all of them */
        for (uint32_t j = 0; j < d->nr_ns; j++) {
            if (j == i || (ns->kind->one_media && d->ns[j].kind == ns->kind)) {
                data |= file_has_data(fd, d->ns[j].backend_offset, d->ns[j].bytes);
            }
        }
        ok = ns->kind->attach_state(d, ns, d->backing_meta + off, data, err);
    }
    close(fd);
    return ok;
}

uint32_t sim_device_nr_ns(const SimDevice *d)
{
    return d->nr_ns;
}

SimNs *sim_device_ns(SimDevice *d, uint32_t nsid)
{
    return nsid >= 1 && nsid <= d->nr_ns ? &d->ns[nsid - 1] : NULL;
}

const SimParams *sim_device_params(const SimDevice *d)
{
    return &d->p;
}

const FemuLayoutSizes *sim_device_sizes(const SimDevice *d)
{
    return &d->sizes;
}

bool sim_device_all_of_kind(const SimDevice *d, const SimKind *k)
{
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        if (d->ns[i].kind != k) {
            return false;
        }
    }
    return true;
}

void sim_device_own(SimDevice *d, void *mem)
{
    g_ptr_array_add(d->owned, mem);
}

void sim_device_target(SimDevice *d, SimNs *ns, SimTarget *t)
{
    (void)d;
    *t = (SimTarget){ .ns_bytes = ns->bytes, .lba_bytes = ns->lba_bytes };
    if (ns->kind->target) {
        ns->kind->target(ns, t);
    }
}

uint64_t sim_ns_submit(SimDevice *d G_GNUC_UNUSED, SimNs *ns, FemuMediaReq *r)
{
    r->nsid = ns->nsid;
    return femu_ns_media_submit_req(&ns->model, &ns->io, r);
}

/* A request of ns on [offset, offset + len) of it; a read gets a buffer when it needs one. */
static FemuMediaReq ns_request(SimDevice *d, SimNs *ns, bool read, uint64_t offset,
                               uint64_t len, uint64_t now)
{
    FemuMediaReq r = {
        .nsid = ns->nsid, .offset = ns->backend_offset + offset, .len = len,
        .arrival_ns = now,
    };

    /* a model that buffers data completes reads over a copy of the backend's bytes */
    if (read && ns->media_buffers) {
        if (d->read_buf_len < len) {
            g_free(d->read_buf);
            d->read_buf = g_malloc(len);
            d->read_buf_len = len;
        }
        r.read_buf = d->read_buf;
    }
    return r;
}

uint64_t sim_ns_media(SimDevice *d, SimNs *ns, FemuMediaOp op, uint64_t offset, uint64_t len,
                      uint64_t now)
{
    FemuMediaReq r = ns_request(d, ns, op == FEMU_MEDIA_READ, offset, len, now);

    r.op = op;
    return sim_ns_submit(d, ns, &r);
}

uint64_t sim_device_max_transfer(const SimDevice *d, const SimNs *ns)
{
    uint64_t nlb_bytes = (uint64_t)SIM_MAX_NLB * ns->lba_bytes;

    return d->p.mdts ? MIN(4096ULL << d->p.mdts, nlb_bytes) : nlb_bytes;
}

bool sim_io_lbas(const SimNs *ns, const SimIo *io, uint64_t *slba, uint64_t *nlb)
{
    if (!io->len || io->offset % ns->lba_bytes || io->len % ns->lba_bytes) {
        return false;
    }
    *slba = io->offset / ns->lba_bytes;
    *nlb = io->len / ns->lba_bytes;
    return true;
}

/* The NVMe command of an I/O of the NVM command set, or -1. */
static int nvm_opcode(SimOp op)
{
    switch (op) {
    case SIM_OP_READ: return FEMU_NVM_READ;
    case SIM_OP_WRITE: return FEMU_NVM_WRITE;
    case SIM_OP_COMPARE: return FEMU_NVM_COMPARE;
    case SIM_OP_WRITE_ZEROES: return FEMU_NVM_WRITE_ZEROES;
    case SIM_OP_TRIM: return FEMU_NVM_DEALLOCATE;
    case SIM_OP_FLUSH: return FEMU_NVM_FLUSH;
    default: return -1;
    }
}

/* The device's rules (nvm-rules.h), on LBAs the I/O gives in bytes. */
uint16_t sim_nvm_io(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now, uint64_t *done)
{
    int opcode = nvm_opcode(io->op);
    uint64_t slba, nlb, nlbas = ns->bytes / ns->lba_bytes;
    uint16_t status;
    FemuMediaReq r;

    if (opcode < 0) {
        return SIM_SC_INVALID_OPCODE;
    }
    if (opcode != FEMU_NVM_FLUSH) {
        if (!sim_io_lbas(ns, io, &slba, &nlb)) {
            return SIM_SC_LBA_RANGE;
        }
        /* NLB is 16 bits in these commands (a Deallocate's range has 32) */
        if (opcode != FEMU_NVM_DEALLOCATE && nlb > SIM_MAX_NLB) {
            return SIM_SC_INVALID_FIELD;
        }
        status = opcode == FEMU_NVM_READ || opcode == FEMU_NVM_WRITE ||
                 opcode == FEMU_NVM_COMPARE ?
                 femu_nvm_check_rw(nlbas, g_bit_nth_lsf(ns->lba_bytes, -1), d->p.mdts, slba,
                                   nlb) :
                 femu_nvm_check_range(nlbas, slba, nlb);
        if (status) {
            return status;
        }
    }
    r = opcode == FEMU_NVM_FLUSH ? ns_request(d, ns, false, 0, 0, now) :
        ns_request(d, ns, opcode == FEMU_NVM_READ || opcode == FEMU_NVM_COMPARE, io->offset,
                   io->len, now);
    r.fua = io->fua && opcode == FEMU_NVM_WRITE;
    *done = femu_nvm_media(&ns->model, &ns->io, opcode, &r);
    return 0;
}

uint16_t sim_device_submit(SimDevice *d, SimNs *ns, const SimIo *io, uint64_t now,
                           uint64_t *done)
{
    uint64_t arrival = now;
    uint16_t status;

    sim_device_advance(d, now);
    if (d->frontend) {
        femu_frontend_retire(d->frontend, MIN(d->frontend_last_ns, now));
        d->frontend_last_ns = now;
        now = femu_frontend_command(d->frontend, now);
    }
    *done = now;
    status = ns->kind->io ? ns->kind->io(d, ns, io, now, done) : sim_nvm_io(d, ns, io, now, done);
    *done = MAX(*done, now);
    d->model_latency_ns += *done - arrival;
    d->outstanding++;
    d->idle_at = UINT64_MAX;
    return status;
}

void sim_device_hint(SimDevice *d G_GNUC_UNUSED, SimNs *ns, const SimIo *io)
{
    uint64_t off = ns->backend_offset + io->offset;

    if ((io->op == SIM_OP_READ || io->op == SIM_OP_WRITE) && io->offset < ns->bytes) {
        femu_media_hint(ns->model.media, io->op == SIM_OP_READ ? FEMU_MEDIA_READ : FEMU_MEDIA_WRITE,
                        femu_ns_media_offset(&ns->model, off), io->len);
    }
}

void sim_device_complete(SimDevice *d, uint64_t t)
{
    d->completions++;
    if (d->outstanding && !--d->outstanding) {
        d->quiet_since = t;
        d->idle_at = d->wants_idle ? t + FEMU_IDLE_NS : UINT64_MAX;
    }
}

void sim_device_advance(SimDevice *d, uint64_t now)
{
    while (!d->outstanding && d->idle_at <= now) {
        for (uint32_t i = 0; i < d->nr_medias; i++) {
            femu_media_idle(d->medias[i], d->idle_at);
        }
        d->idle_at += FEMU_IDLE_REPEAT_NS;
    }
}

void sim_device_power_cut(SimDevice *d, uint64_t now)
{
    sim_device_advance(d, now);
    for (uint32_t i = 0; i < d->nr_medias; i++) {
        femu_media_power_loss(d->medias[i], now);
    }
    for (uint32_t k = 0; sim_kinds[k]; k++) {
        for (uint32_t i = 0; i < d->nr_ns; i++) {
            if (d->ns[i].kind == sim_kinds[k]) {
                if (sim_kinds[k]->power_on) {
                    sim_kinds[k]->power_on(d, now);
                }
                break;
            }
        }
    }
}

void sim_device_stats(SimDevice *d, FemuMediaStatFn *emit, void *opaque)
{
    IoCounters io = { 0 };

    for (uint32_t i = 0; i < d->nr_ns; i++) {
        io_counters_add(&io, &d->ns[i].io);
    }
    femu_io_counters_emit(&io, emit, opaque);
    emit(opaque, "completions", d->completions);
    emit(opaque, "model_latency_ns", d->model_latency_ns);
    if (d->frontend) {
        femu_frontend_emit(d->frontend, emit, opaque);
    }
    for (uint32_t i = 0; i < d->nr_medias; i++) {
        g_autofree char *prefix = g_strdup("");
        for (uint32_t k = 0; d->nr_medias > 1 && k < d->nr_ns; k++) {
            if (d->ns[k].model.media == d->medias[i]) {
                g_free(prefix);
                prefix = g_strdup_printf("ns%u_", d->ns[k].nsid);
                break;
            }
        }
        FemuStatPrefix pe = { emit, opaque, prefix };
        femu_media_stats(d->medias[i], femu_stat_prefixed, &pe);
    }
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        SimNs *ns = &d->ns[i];
        g_autofree char *prefix = d->nr_ns > 1 ? g_strdup_printf("ns%u_", ns->nsid)
                                               : g_strdup("");
        FemuStatPrefix pe = { emit, opaque, prefix };
        if (d->nr_ns > 1) {
            femu_io_counters_emit(&ns->io, femu_stat_prefixed, &pe);
        }
        if (ns->kind->stats) {
            ns->kind->stats(ns, femu_stat_prefixed, &pe);
        }
    }
}

const char *sim_status_name(uint16_t status)
{
    switch (status) {
    case 0: return "success";
    case SIM_SC_INVALID_OPCODE: return "Invalid Command Opcode";
    case SIM_SC_INVALID_FIELD: return "Invalid Field in Command";
    case SIM_SC_CMD_SEQ_ERROR: return "Command Sequence Error";
    case SIM_SC_LBA_RANGE: return "LBA Out of Range";
    case SIM_SC_UNWRITTEN: return "Deallocated or Unwritten Logical Block";
    case SIM_SC_ZONE_BOUNDARY: return "Zone Boundary Error";
    case SIM_SC_ZONE_FULL: return "Zone Is Full";
    case SIM_SC_ZONE_READ_ONLY: return "Zone Is Read Only";
    case SIM_SC_ZONE_OFFLINE: return "Zone Is Offline";
    case SIM_SC_ZONE_INVALID_WRITE: return "Zone Invalid Write";
    case SIM_SC_ZONE_TOO_MANY_ACTIVE: return "Too Many Active Zones";
    case SIM_SC_ZONE_TOO_MANY_OPEN: return "Too Many Open Zones";
    case SIM_SC_ZONE_INVALID_TRANSITION: return "Invalid Zone State Transition";
    case SIM_SC_OC_OFFLINE_CHUNK: return "Offline Chunk";
    case SIM_SC_OC_INVALID_RESET: return "Invalid Reset";
    case SIM_SC_OC_WRITE_NEXT_UNIT: return "Write Fail - Write Next Unit";
    case SIM_SC_OC_CHUNK_EARLY_CLOSE: return "Write Fail - Chunk Early Close";
    case SIM_SC_OC_OUT_OF_ORDER_WRITE: return "Out of Order Write";
    default: return "error";
    }
}

/* nossd: no media model. */
static FemuMedia *nossd_media_new(SimDevice *d, uint64_t bytes, NandModel *shared,
                                  uint32_t first_block, char **err)
{
    (void)d, (void)bytes, (void)shared, (void)first_block, (void)err;
    return femu_media_nossd_new();
}

static const SimKind sim_nossd = {
    .name = "nossd", .femu_mode = 2, .media_new = nossd_media_new,
};

const char *sim_device_free_commands(const SimDevice *d, const SimNs *ns, bool *every)
{
    const FemuFrontendConfig *fe = &d->p.frontend_cfg;

    *every = false;
    if (fe->fw_cores && fe->fw_cmd_ns) {
        return NULL;
    }
    if (ns->kind == &sim_nossd && !fe->pcie_gen) {
        *every = true;
        return "femu_mode=2 (nossd) has no media model, and neither the controller's "
               "(fw_cores, fw_cmd_ns) nor the link's model (pcie_gen) is on";
    }
    return "without the controller's model (fw_cores, fw_cmd_ns), a command that moves no "
           "data and books no flash (a trim, a flush with nothing to write, ...) takes no "
           "time";
}

/* blackbox: the FTL of bbssd/. */
static uint32_t bbssd_flash_blocks(SimDevice *d, uint64_t bytes, char **err)
{
    FtlConfig c;
    return bbssd_params_ftl_config(&d->p.flash, &d->p.bbssd, bytes, &c, false, err) ?
           c.geo.blks_per_pl : 0;
}

static FemuMedia *bbssd_media_new(SimDevice *d, uint64_t bytes, NandModel *shared,
                                  uint32_t first_block, char **err)
{
    /* femu-sim keeps no data: the write buffer times, it holds no bytes */
    return bbssd_params_media_new(&d->p.flash, &d->p.bbssd, &d->p.sra, bytes, shared,
                                  first_block, d->p.vwc, NULL, err);
}

/*
 * The FTL's state is the metadata of the namespace whose model it is, as the device keeps
 * it (bbssd.c): namespace 1's for a device of blackbox namespaces only (one model for all),
 * each blackbox namespace's own beside other kinds.
 */
static bool bbssd_size_ns(SimDevice *d, uint32_t nsid, uint64_t *bytes, bool derived,
                          uint64_t *meta_bytes, char **err)
{
    uint64_t all = 0;
    bool mixed = false;
    FtlConfig c;

    (void)bytes, (void)derived;
    for (uint32_t i = 0; i < d->nr_ns; i++) {
        mixed |= d->ns[i].kind != d->ns[0].kind;
        all += d->sizes.bytes[i];
    }
    if (mixed) {
        all = d->sizes.bytes[nsid - 1];
    } else if (nsid != 1) {
        return true;
    }
    if (!bbssd_params_ftl_config(&d->p.flash, &d->p.bbssd, all, &c, false, err)) {
        return false;
    }
    *meta_bytes = (ftl_store_bytes(&c) + 4095) / 4096 * 4096;
    return true;
}

static bool bbssd_attach_state(SimDevice *d, SimNs *ns, uint8_t *meta, bool data, char **err)
{
    static const uint8_t blank[64];
    g_autofree char *why = NULL;

    (void)d;
    if (data && !memcmp(meta, blank, sizeof(blank))) {
        *err = g_strdup_printf("blackbox namespace %u: the backing file's data area holds "
                               "data but there is no FTL state after it (a drive of another "
                               "femu_mode or size?)", ns->nsid);
        return false;
    }
    if (!ftl_attach_store(femu_media_bbssd_ftl(ns->model.media), meta, &why)) {
        *err = g_strdup_printf("blackbox namespace %u in the backing file: its FTL state: %s",
                               ns->nsid, why);
        return false;
    }
    return true;
}

static const SimKind sim_blackbox = {
    .name = "blackbox", .femu_mode = 1, .read_ahead = true, .size_ns = bbssd_size_ns,
    .flash_blocks = bbssd_flash_blocks, .media_new = bbssd_media_new,
    .attach_state = bbssd_attach_state,
};

/* In femu_mode order, as the QEMU device lists them in messages. */
const SimKind *const sim_kinds[] = {
    &sim_ocssd, &sim_blackbox, &sim_nossd, &sim_zns, &sim_fdp, NULL,
};
