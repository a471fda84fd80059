/*
 * blackbox (femu_mode=1): a conventional SSD. Its properties -> the FTL's configuration ->
 * its media model (bbssd-media.c on ftl.c); I/O is the NVM command set. FEMU's property
 * names are accepted as they are; op_pcent is new.
 *
 * The FTL's state (ftl_attach_store) is the metadata of the namespace whose model it is,
 * after the device's data in the backend: namespace 1's for a device of blackbox
 * namespaces only (one model for all of them), each blackbox namespace's own beside other
 * kinds (a model each). A file backend thus keeps the drive's FTL across restarts.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "../femu.h"
#include "ftl.h"
#include "bbssd.h"

/* A namespace whose model keeps its FTL's state in the namespace's metadata. */
typedef struct BbssdNs {
    uint8_t *store;
    uint64_t store_bytes;       /* what was set aside for it (size_ns) */
    bool taken;                 /* a model uses it */
} BbssdNs;

static const FemuNsKind bbssd_kind;

static BbssdParams *bbssd_params(FemuCtrl *n)
{
    return femu_ns_kind_params(n, &bbssd_kind);
}

BbssdParams *femu_blackbox_params(FemuCtrl *n)
{
    return bbssd_params(n);
}

static bool mixed_kinds(FemuCtrl *n)
{
    for (uint32_t i = 1; i < n->num_namespaces; i++) {
        if (n->ns_kind[i] != n->ns_kind[0]) {
            return true;
        }
    }
    return false;
}

/* The FTL of `bytes` from the properties. */
static bool ftl_config(FemuCtrl *n, uint64_t bytes, FtlConfig *c, Error **errp)
{
    g_autofree char *err = NULL;

    if (!bbssd_params_ftl_config(&n->flash, bbssd_params(n), bytes, c, false, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

/*
 * The bytes of the model whose state namespace nsid keeps: its own beside other kinds, all
 * namespaces' in a device of this kind alone (namespace 1 keeps it); 0: none.
 */
static uint64_t model_bytes(FemuCtrl *n, uint32_t nsid)
{
    uint64_t sum = 0;

    if (mixed_kinds(n)) {
        return n->sizes.bytes[nsid - 1];
    }
    if (nsid != 1) {
        return 0;
    }
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        sum += n->sizes.bytes[i];
    }
    return sum;
}

static bool bbssd_size_ns(FemuCtrl *n, uint32_t nsid, uint64_t *bytes, bool derived,
                          uint64_t *meta_bytes, Error **errp)
{
    uint64_t all = model_bytes(n, nsid);
    FtlConfig c;

    if (!all) {
        return true;
    }
    /* a bad configuration stops here, before the backend is sized for its state */
    if (!ftl_config(n, all, &c, errp)) {
        return false;
    }
    *meta_bytes = ROUND_UP(ftl_store_bytes(&c), 4096);
    return true;
}

static bool bbssd_ns_init(FemuCtrl *n, FemuNamespace *ns, uint8_t *meta, Error **errp)
{
    BbssdNs *b;

    /* a volatile write buffer holds written data until it programs it */
    ns->media_buffers = bbssd_params_wb_volatile(bbssd_params(n));
    if (!meta) {
        return true;
    }
    b = g_new0(BbssdNs, 1);
    b->store = meta;
    b->store_bytes = n->sizes.meta[ns->nsid - 1];
    ns->priv = b;
    return true;
}

static void bbssd_ns_free(FemuNamespace *ns)
{
    g_free(ns->priv);
    ns->priv = NULL;
}

static char *backend_name(FemuCtrl *n)
{
    g_autofree char *name = n->memdev ? host_memory_backend_get_name(n->memdev) : NULL;
    return name ? g_strdup_printf("memdev '%s'", name) : g_strdup("the backend");
}

/*
 * The model's FTL takes its state from the first namespace whose store no model has taken
 * (models are made in NSID order): a blank store is a new drive, unless a namespace whose
 * data it times holds data (saved without FTL state: refused, never started empty).
 * Without memdev the backend is new memory: nothing to load, nothing kept, so the FTL keeps
 * its state in its own memory as it always did (a huge sparse drive starts at once).
 */
static bool bbssd_attach(FemuCtrl *n, Ftl *ftl, const FtlConfig *c, Error **errp)
{
    g_autofree char *where = backend_name(n);
    g_autofree char *err = NULL;
    FemuNamespace *ns = NULL;
    BbssdNs *b = NULL;
    bool blank, ok;

    if (!n->memdev) {
        return true;
    }
    for (uint32_t i = 0; i < n->num_namespaces && !b; i++) {
        ns = &n->ns[i];
        if (ns->kind == &bbssd_kind && ns->priv && !((BbssdNs *)ns->priv)->taken) {
            b = ns->priv;
        }
    }
    if (!b) {
        return true;        /* no metadata (no backend to keep it) */
    }
    if (ftl_store_bytes(c) > b->store_bytes) {
        /* the sizes disagree with size_ns: never past the area */
        error_setg(errp, "blackbox namespace %u: its FTL state needs %" PRIu64 " bytes, %"
                   PRIu64 " were set aside", ns->nsid, ftl_store_bytes(c), b->store_bytes);
        return false;
    }
    b->taken = true;
    /* sparse-aware: a new file's state area is a hole, not read through */
    blank = femu_backend_is_zero(n, b->store - n->data, ftl_store_bytes(c));
    if (blank || buffer_is_zero(b->store, 64)) {
        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            FemuNamespace *d = &n->ns[i];
            if (d->kind == &bbssd_kind && (d == ns || !mixed_kinds(n)) &&
                !femu_backend_is_zero(n, d->backend_offset, d->bytes)) {
                error_setg(errp, "blackbox namespace %u in %s: the data area holds data but "
                           "there is no FTL state after it (a drive of another femu_mode, "
                           "of another size: devsz_mb, ns_sizes_mb?, or written by a FEMU "
                           "that kept no blackbox state). Start with the properties it was "
                           "saved with, or start over with a new or zeroed backing file "
                           "(this erases the drive)", d->nsid, where);
                return false;
            }
        }
    }
    ok = blank ? ftl_format_store(ftl, b->store, &err) : ftl_attach_store(ftl, b->store, &err);
    if (!ok) {
        error_setg(errp, "blackbox namespace %u in %s: its FTL state: %s. Start with the "
                   "properties it was saved with, or start over with a new or zeroed backing "
                   "file (this erases the drive)", ns->nsid, where, err);
        return false;
    }
    return true;
}

static uint32_t bbssd_flash_blocks(FemuCtrl *n, uint64_t bytes, Error **errp)
{
    FtlConfig c;

    return ftl_config(n, bytes, &c, errp) ? c.geo.blks_per_pl : 0;
}

static FemuMedia *bbssd_media_new(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                                  uint32_t first_block, Error **errp)
{
    g_autofree char *err = NULL;
    FemuWbData wb = { .put = femu_backend_put, .opaque = n };
    FemuMedia *m;
    FtlConfig c;

    if (!ftl_config(n, bytes, &c, errp)) {
        return NULL;
    }
    m = bbssd_params_media_new(&n->flash, bbssd_params(n), &n->sra, bytes, shared,
                               first_block, n->vwc,
                               bbssd_params_wb_volatile(bbssd_params(n)) ? &wb : NULL, &err);
    if (!m) {
        error_setg(errp, "%s", err);
        return NULL;
    }
    if (!bbssd_attach(n, femu_media_bbssd_ftl(m), &c, errp)) {
        femu_media_destroy(m);
        return NULL;
    }
    return m;
}

static const Property bbssd_props[] = { BBSSD_PROPS(FEMU_QDEV_ITEM, BbssdParams) };

static const FemuNsKind bbssd_kind = {
    .read_ahead = true,
    .writes_in_place = true,
    .name = "blackbox",
    .femu_mode = 1,
    .model_name = "FEMU BlackBox-SSD Controller",
    .csi = NVME_CSI_NVM,
    .props = bbssd_props,
    .nr_props = ARRAY_SIZE(bbssd_props),
    .params_size = sizeof(BbssdParams),
    .size_ns = bbssd_size_ns,
    .flash_blocks = bbssd_flash_blocks,
    .media_new = bbssd_media_new,
    .ns_init = bbssd_ns_init,
    .ns_free = bbssd_ns_free,
    .io = femu_nvm_io,
};

FEMU_NS_KIND_REGISTER(bbssd_kind)
