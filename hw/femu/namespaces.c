/*
 * Namespaces: their kinds and sizes from the properties, their place in the backend, their
 * timing models (one per device, or one per namespace on a shared flash when kinds mix),
 * and the lookups the command sets use.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "femu.h"

static bool parse_ns_types(FemuCtrl *n, Error **errp)
{
    g_auto(GStrv) parts = NULL;
    uint32_t count;

    if (!n->ns_types) {
        const FemuNsKind *k = femu_ns_kind_by_mode(n->femu_mode);
        if (!k) {
            g_autofree char *allowed = femu_ns_kind_list(true, false);
            error_setg(errp, "femu_mode=%u is not available in this build: allowed %s",
                       n->femu_mode, allowed);
            return false;
        }
        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            n->ns_kind[i] = k;
        }
        return true;
    }
    /* ':' because QEMU's option syntax reserves ',' (or write ',,') */
    parts = g_strsplit_set(n->ns_types, ",:", -1);
    count = g_strv_length(parts);
    if (count < 1 || count > FEMU_MAX_NAMESPACES ||
        (n->num_namespaces != 1 && n->num_namespaces != count)) {
        error_setg(errp, "ns_types='%s' must list one mode per namespace (namespaces=%u), "
                   "at most %d", n->ns_types, n->num_namespaces, FEMU_MAX_NAMESPACES);
        return false;
    }
    n->num_namespaces = count;
    for (uint32_t i = 0; i < count; i++) {
        const char *t = g_strstrip(parts[i]);
        n->ns_kind[i] = femu_ns_kind_by_name(t);
        if (!n->ns_kind[i]) {
            g_autofree char *allowed = femu_ns_kind_list(false, false);
            error_setg(errp, "ns_types='%s': '%s' is not a namespace mode: allowed %s",
                       n->ns_types, t, allowed);
            return false;
        }
    }
    return true;
}

/* Namespace nsid as its kind sizes it (FemuLayoutSizeNsFn). */
static bool kind_size_ns(void *opaque, uint32_t nsid, uint64_t *bytes, bool derived,
                         uint64_t *meta_bytes, char **err)
{
    FemuCtrl *n = opaque;
    const FemuNsKind *k = n->ns_kind[nsid - 1];
    Error *local_err = NULL;

    if (!k->size_ns || k->size_ns(n, nsid, bytes, derived, meta_bytes, &local_err)) {
        return true;
    }
    *err = g_strdup(local_err ? error_get_pretty(local_err) : "sizing failed");
    error_free(local_err);
    return false;
}

/* Each namespace's size from `total` bytes, as its kind wants it; the data bytes in all. */
static bool size_namespaces(FemuCtrl *n, uint64_t total, bool derived, uint64_t *data,
                            Error **errp)
{
    g_autofree char *err = NULL;

    if (!femu_layout_size_namespaces(n->ns_sizes_mb, n->num_namespaces, n->devsz_mb, total,
                                     derived, kind_size_ns, n, &n->sizes, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    *data = n->sizes.data_bytes;
    n->meta_bytes = n->sizes.meta_bytes;
    return true;
}

/*
 * Namespace kinds and sizes, and the metadata each kind keeps after all the data in the
 * backend (so a file backend brings it back). Sets devsz_mb to the data size (from a
 * memdev when it was not given).
 */
bool femu_ns_layout(FemuCtrl *n, Error **errp)
{
    bool derived = !n->devsz_mb && !n->ns_sizes_mb, sra_kind = false, in_place = false;
    uint64_t total, data, reserve;

    if (!parse_ns_types(n, errp)) {
        return false;
    }
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        const FemuNsKind *k = n->ns_kind[i];
        bool first = true;
        for (uint32_t j = 0; j < i; j++) {
            first &= n->ns_kind[j] != k;
        }
        if (first && k->check_props && !k->check_props(n, errp)) {
            return false;
        }
        sra_kind |= k->read_ahead;
    }
    if (n->sra.on && !sra_kind) {
        g_autofree char *kinds = femu_ns_kind_list(true, true);
        error_setg(errp, "sra=on: no namespace whose kind reads ahead: allowed femu_mode= "
                   "(or ns_types=) %s", kinds);
        return false;
    }
    total = n->devsz_mb ? (uint64_t)n->devsz_mb * MiB :
            n->memdev ? memory_region_size(host_memory_backend_get_memory(n->memdev)) :
            1024 * MiB;
    if (!size_namespaces(n, total, derived, &data, errp)) {
        return false;
    }
    /*
     * The write journal (backend.c) comes after every kind's metadata, in a memdev: only a
     * file keeps what a killed QEMU wrote. A kind that writes in place needs it: a derived
     * layout leaves room for it, whether the file is shared or not (the same file gives
     * the same layout both ways); the other kinds' layouts stay as they were.
     */
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        in_place |= n->ns_kind[i]->writes_in_place;
    }
    reserve = n->memdev && in_place ? FEMU_WRITE_JOURNAL_BYTES : 0;
    if (derived && n->memdev && data + n->meta_bytes + reserve > total) {
        /* the metadata comes out of the memdev too; less data needs no more metadata */
        if (!size_namespaces(n, total - MIN(total, n->meta_bytes + reserve), derived, &data,
                             errp)) {
            return false;
        }
    }
    n->journal_on = false;
    if (n->memdev) {
        uint64_t size = memory_region_size(host_memory_backend_get_memory(n->memdev));
        g_autofree char *name = host_memory_backend_get_name(n->memdev);

        n->journal_on = data + n->meta_bytes + FEMU_WRITE_JOURNAL_BYTES <= size;
        if (!n->journal_on && in_place && data + n->meta_bytes <= size &&
            femu_memdev_persists(n->memdev)) {
            /* without it a kill in the middle of a write could tear an LBA in the file */
            uint64_t room = size - n->meta_bytes;
            g_autofree char *prop = n->ns_sizes_mb ?
                g_strdup_printf("ns_sizes_mb=%s", n->ns_sizes_mb) :
                g_strdup_printf("devsz_mb=%u", n->devsz_mb);

            error_setg(errp, "%s plus its metadata leaves no room in memdev '%s' (a shared "
                       "file) for the %d-byte write journal that keeps a killed QEMU from "
                       "tearing an LBA: allowed at most %" PRIu64 " MiB of data in all (or "
                       "leave devsz_mb unset to fill the memdev)", prop, name,
                       FEMU_WRITE_JOURNAL_BYTES, (room - MIN(room, reserve)) / MiB);
            return false;
        }
    }
    n->meta_bytes += n->journal_on ? FEMU_WRITE_JOURNAL_BYTES : 0;
    n->devsz_mb = DIV_ROUND_UP(data, MiB);
    return true;
}

/* Stable identifiers derived from the serial, unique per namespace. */
static void ns_identifiers(FemuCtrl *n, FemuNamespace *ns)
{
    g_autofree char *seed = g_strdup_printf("femu:%s:%u", n->serial, ns->nsid);
    g_autoptr(GChecksum) ck = g_checksum_new(G_CHECKSUM_SHA256);
    uint8_t digest[32];
    gsize dlen = sizeof(digest);

    g_checksum_update(ck, (const guchar *)seed, strlen(seed));
    g_checksum_get_digest(ck, digest, &dlen);
    memcpy(ns->uuid, digest, 16);
    ns->uuid[6] = (ns->uuid[6] & 0x0f) | 0x40;     /* version 4 */
    ns->uuid[8] = (ns->uuid[8] & 0x3f) | 0x80;     /* RFC 4122 variant */
    memcpy(ns->nguid, digest + 16, 16);
    memcpy(&ns->eui64, digest + 8, 8);
    ns->eui64 = cpu_to_be64((be64_to_cpu(ns->eui64) & 0xffffffffffULL) |
                            (0x525400ULL << 40));   /* QEMU's OUI, as QEMU's nvme uses */
}

/* The timing models: one for a device of one kind, one per namespace when kinds mix. */
static bool build_media(FemuCtrl *n, Error **errp)
{
    bool mixed = false, flash = false;
    uint32_t first = 0, blocks[FEMU_MAX_NAMESPACES] = { 0 };
    const void *kinds[FEMU_MAX_NAMESPACES];
    bool one_media[FEMU_MAX_NAMESPACES];
    FemuMediaPlan plan;
    g_autofree char *why = NULL;

    /* the controller's firmware and link, before the namespaces' models */
    n->frontend = femu_frontend_new(&n->frontend_cfg, &why);
    if (why) {
        error_setg(errp, "%s", why);
        return false;
    }
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        mixed |= n->ns_kind[i] != n->ns_kind[0];
    }
    if (!mixed) {
        FemuMedia *m = n->ns_kind[0]->media_new(n, n->data_bytes, NULL, 0, errp);
        if (!m) {
            return false;
        }
        n->medias[n->nr_medias++] = m;
        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            femu_ns_media_attach(&n->ns[i].model, m, n->frontend, 0, n->ns[i].backend_offset,
                                 n->ns[i].bytes);
        }
        return true;
    }

    /*
     * mixed: every model takes its own blocks of one flash, and shares its timelines; a
     * one_media kind's namespaces share one model, sized for all of them (the plan)
     */
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        kinds[i] = n->ns[i].kind;
        one_media[i] = n->ns[i].kind->one_media;
    }
    femu_layout_media_plan(n->num_namespaces, kinds, one_media, n->sizes.bytes, &plan);
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        const FemuNsKind *k = n->ns_kind[i];
        if (k->flash_blocks && plan.owner[i] == i) {
            blocks[i] = k->flash_blocks(n, plan.model_bytes[i], errp);
            if (!blocks[i]) {
                return false;
            }
            flash = true;
        }
    }
    if (flash) {
        NandGeometry g = femu_flash_geometry(&n->flash, 0);
        NandTiming t;
        g_autofree char *err = NULL;

        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            g.blks_per_pl += blocks[i];
        }
        if (!femu_fill_timing("", n->flash.flash_type, n->flash.pg_rd_lat,
                              n->flash.pg_wr_lat, n->flash.blk_er_lat, &n->flash, &t, errp)) {
            return false;
        }
        n->shared_nand = nand_model_new(&g, &t, &err);
        if (!n->shared_nand) {
            error_setg(errp, "%s", err);
            return false;
        }
    }
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        FemuNamespace *ns = &n->ns[i];
        FemuMedia *m;

        if (plan.owner[i] != i) {
            femu_ns_media_attach(&ns->model, n->ns[plan.owner[i]].model.media,
                                 n->frontend, plan.media_base[i], ns->backend_offset,
                                 ns->bytes);
            continue;
        }
        m = ns->kind->media_new(n, plan.model_bytes[i], n->shared_nand, first, errp);
        if (!m) {
            return false;
        }
        first += blocks[i];
        m->backend_base = plan.media_base[i];
        n->medias[n->nr_medias++] = m;
        femu_ns_media_attach(&ns->model, m, n->frontend, plan.media_base[i],
                             ns->backend_offset, ns->bytes);
    }
    return true;
}

bool femu_ns_create(FemuCtrl *n, Error **errp)
{
    uint8_t lba_shift = n->lba_index ? 12 : 9;
    uint8_t *meta = n->data + n->data_bytes;
    uint64_t offset = 0;

    if (n->data_bytes / n->num_namespaces < (1u << lba_shift)) {
        error_setg(errp, "devsz_mb=%u is too small for namespaces=%u", n->devsz_mb,
                   n->num_namespaces);
        return false;
    }
    /* a write a kill cut short is finished before anything reads the data */
    femu_backend_replay(n);
    n->ns = g_new0(FemuNamespace, n->num_namespaces);
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        FemuNamespace *ns = &n->ns[i];

        ns->nsid = i + 1;
        ns->kind = n->ns_kind[i];
        ns->csi = ns->kind->csi;
        ns->bytes = n->sizes.bytes[i];
        ns->lba_shift = lba_shift;
        ns->nlbas = ns->bytes >> lba_shift;
        ns->backend_offset = offset;
        /* every namespace and its metadata inside the backend, whatever the properties said */
        assert(offset + ns->bytes <= n->data_bytes);
        offset += ns->bytes;
        ns_identifiers(n, ns);
    }
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        FemuNamespace *ns = &n->ns[i];
        if (ns->kind->ns_init && !ns->kind->ns_init(n, ns, n->sizes.meta[i] ? meta : NULL, errp)) {
            femu_ns_destroy(n);
            return false;
        }
        meta += n->sizes.meta[i];
    }
    if (!build_media(n, errp)) {
        femu_ns_destroy(n);
        return false;
    }
    femu_ns_power_on(n);
    return true;
}

void femu_ns_power_loss(FemuCtrl *n)
{
    const FemuNsKind *k = femu_ctrl_kind(n);
    uint64_t now = femu_now_ns(n);

    for (uint32_t i = 0; i < n->nr_medias; i++) {
        femu_media_power_loss(n->medias[i], now);
    }
    if (k && k->power_loss) {
        k->power_loss(n);
    }
}

void femu_ns_power_on(FemuCtrl *n)
{
    const FemuNsKind *k = femu_ctrl_kind(n);

    if (k && k->power_on) {
        k->power_on(n);
    }
}

/* One operation on every model; when the last of them completes. */
static uint64_t submit_all(FemuCtrl *n, FemuMediaOp op, uint64_t now_ns)
{
    FemuMediaReq r = { .op = op, .arrival_ns = now_ns };
    uint64_t done = now_ns;

    for (uint32_t i = 0; i < n->nr_medias; i++) {
        done = MAX(done, femu_media_submit(n->medias[i], &r));
    }
    return done;
}

uint64_t femu_ns_flush_all(FemuCtrl *n, uint64_t now_ns)
{
    return submit_all(n, FEMU_MEDIA_FLUSH, now_ns);
}

void femu_ns_shutdown(FemuCtrl *n, uint64_t now_ns)
{
    submit_all(n, FEMU_MEDIA_SHUTDOWN, now_ns);
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        if (n->ns[i].kind->shutdown) {
            n->ns[i].kind->shutdown(n, &n->ns[i]);
        }
    }
}

void femu_ns_destroy(FemuCtrl *n)
{
    for (uint32_t i = 0; i < n->nr_medias; i++) {
        femu_media_destroy(n->medias[i]);
    }
    n->nr_medias = 0;
    nand_model_free(n->shared_nand);
    n->shared_nand = NULL;
    femu_frontend_free(n->frontend);
    n->frontend = NULL;
    for (uint32_t i = 0; n->ns && i < n->num_namespaces; i++) {
        FemuNamespace *ns = &n->ns[i];
        if (ns->kind->ns_free && ns->priv) {
            ns->kind->ns_free(ns);
        }
    }
    g_free(n->ns);
    n->ns = NULL;
}

void femu_ns_ctrl_reset(FemuCtrl *n)
{
    for (uint32_t i = 0; n->ns && i < n->num_namespaces; i++) {
        FemuNamespace *ns = &n->ns[i];
        ns->dulbe = false;      /* features return to their defaults */
        if (ns->kind->ctrl_reset) {
            ns->kind->ctrl_reset(n, ns);
        }
    }
}

/* An active namespace; other command sets than NVM only when the host enabled them all. */
FemuNamespace *femu_ns(FemuCtrl *n, uint32_t nsid)
{
    FemuNamespace *ns = nsid && nsid <= n->num_namespaces ? &n->ns[nsid - 1] : NULL;

    if (ns && ns->csi != NVME_CSI_NVM && NVME_CC_CSS(n->bar.cc) != NVME_CC_CSS_ALL) {
        return NULL;
    }
    return ns;
}

/* The kind of the first namespace of command set csi, or NULL. */
const FemuNsKind *femu_csi_kind(FemuCtrl *n, uint8_t csi)
{
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        if (n->ns[i].csi == csi) {
            return n->ns[i].kind;
        }
    }
    return NULL;
}

/* The kind of every namespace, or NULL when kinds mix. */
const FemuNsKind *femu_ctrl_kind(FemuCtrl *n)
{
    for (uint32_t i = 1; i < n->num_namespaces; i++) {
        if (n->ns_kind[i] != n->ns_kind[0]) {
            return NULL;
        }
    }
    return n->ns_kind[0];
}

/* r->offset is a backend offset (ns-media.h). */
uint64_t femu_ns_media_submit(FemuNamespace *ns, FemuMediaReq *r)
{
    return femu_ns_media_submit_req(&ns->model, &ns->io, r);
}

bool femu_media_wants_idle(FemuCtrl *n)
{
    for (uint32_t i = 0; i < n->nr_medias; i++) {
        if (n->medias[i]->ops->idle) {
            return true;
        }
    }
    return false;
}

void femu_media_idle_all(FemuCtrl *n, uint64_t now_ns)
{
    for (uint32_t i = 0; i < n->nr_medias; i++) {
        femu_media_idle(n->medias[i], now_ns);
    }
}

/* "nsN_" for the namespace a model times, when several models report. */
static char *media_prefix(FemuCtrl *n, FemuMedia *m)
{
    for (uint32_t k = 0; n->nr_medias > 1 && k < n->num_namespaces; k++) {
        if (n->ns[k].model.media == m) {
            return g_strdup_printf("ns%u_", n->ns[k].nsid);
        }
    }
    return g_strdup("");
}

void femu_stats_emit(FemuCtrl *n, FemuMediaStatFn *emit, void *opaque)
{
    IoCounters io = { 0 };

    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        io_counters_add(&io, &n->ns[i].io);
    }
    femu_io_counters_emit(&io, emit, opaque);
    emit(opaque, "completions", n->lateness.count);
    emit(opaque, "lateness_p50_ns", lateness_quantile(&n->lateness, 0.5));
    emit(opaque, "lateness_p99_ns", lateness_quantile(&n->lateness, 0.99));
    emit(opaque, "lateness_max_ns", n->lateness.max_ns);
    emit(opaque, "max_pass_ns", n->max_pass_ns);
    emit(opaque, "long_cmd_steps", n->long_steps);
    emit(opaque, "model_latency_ns", n->model_latency_ns);
    emit(opaque, "dataplane_passes", n->dataplane_passes);
    emit(opaque, "dataplane_sleeps", n->dataplane_sleeps);
    emit(opaque, "power_cuts", n->power_cuts);
    if (n->frontend) {
        femu_frontend_emit(n->frontend, emit, opaque);
    }
    for (uint32_t i = 0; i < n->nr_medias; i++) {
        g_autofree char *prefix = media_prefix(n, n->medias[i]);
        FemuStatPrefix p = { emit, opaque, prefix };
        femu_media_stats(n->medias[i], femu_stat_prefixed, &p);
    }
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        FemuNamespace *ns = &n->ns[i];
        g_autofree char *prefix = n->num_namespaces > 1 ? g_strdup_printf("ns%u_", ns->nsid)
                                                        : g_strdup("");
        FemuStatPrefix p = { emit, opaque, prefix };
        if (n->num_namespaces > 1) {
            femu_io_counters_emit(&ns->io, femu_stat_prefixed, &p);
        }
        if (ns->kind->stats) {
            ns->kind->stats(ns, femu_stat_prefixed, &p);
        }
    }
}
