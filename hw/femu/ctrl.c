/*
 * FEMU NVMe controller: QOM type, properties, PCI function, BAR0 registers, lifecycle.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/bitmap.h"
#include "qemu/atomic.h"
#include "qemu/main-loop.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "femu.h"
#include "trace.h"

static const char *const femu_mode_names[] = {
    [FEMU_MODE_WHITEBOX] = "whitebox",
    [FEMU_MODE_BLACKBOX] = "blackbox",
    [FEMU_MODE_NOSSD] = "nossd",
    [FEMU_MODE_ZNS] = "zns",
};

static uint64_t femu_bar_size(FemuCtrl *n)
{
    return pow2ceil(FEMU_REG_SIZE + 2 * FEMU_DB_STRIDE * (n->nr_io_queues + 1));
}

static void femu_init_registers(FemuCtrl *n)
{
    NvmeBar *bar = &n->bar;

    memset(bar, 0, sizeof(*bar));
    NVME_CAP_SET_MQES(bar->cap, n->max_q_ents - 1);
    NVME_CAP_SET_CQR(bar->cap, 1);
    NVME_CAP_SET_TO(bar->cap, 15);          /* 7.5 s to become ready */
    NVME_CAP_SET_DSTRD(bar->cap, 0);
    NVME_CAP_SET_CSS(bar->cap, NVME_CAP_CSS_NCSS | NVME_CAP_CSS_IOCSS);
    NVME_CAP_SET_MPSMIN(bar->cap, 0);       /* 4 KiB */
    NVME_CAP_SET_MPSMAX(bar->cap, 4);       /* 64 KiB */
    bar->vs = 0x00010400;                   /* NVMe 1.4 */
}

static void femu_init_namespaces(FemuCtrl *n)
{
    uint8_t lba_shift = n->lba_index ? 12 : 9;
    uint64_t offset = 0;
    const char *serial = n->serial;

    n->ns = g_new0(FemuNamespace, n->num_namespaces);
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        FemuNamespace *ns = &n->ns[i];
        g_autofree char *seed = g_strdup_printf("femu:%s:%u", serial, i + 1);
        g_autoptr(GChecksum) ck = g_checksum_new(G_CHECKSUM_SHA256);
        uint8_t digest[32];
        gsize dlen = sizeof(digest);

        ns->nsid = i + 1;
        ns->csi = NVME_CSI_NVM;
        ns->type = n->ns_type[i];
        ns->bytes = n->ns_bytes[i];
        ns->lba_shift = lba_shift;
        ns->nlbas = ns->bytes >> lba_shift;
        ns->backend_offset = offset;
        offset += ns->bytes;
        /* stable identifiers derived from the serial, unique per namespace */
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
}

static void femu_free_namespaces(FemuCtrl *n)
{
    for (uint32_t i = 0; n->ns && i < n->num_namespaces; i++) {
        femu_zns_free_ns(&n->ns[i]);
    }
    g_free(n->ns);
    n->ns = NULL;
}

static bool femu_check_props(FemuCtrl *n, Error **errp)
{
    if (n->femu_mode >= ARRAY_SIZE(femu_mode_names)) {
        error_setg(errp, "femu_mode=%u is invalid: allowed are 0 (whitebox), 1 (blackbox), "
                   "2 (nossd), 3 (zns)", n->femu_mode);
        return false;
    }
    if (n->femu_mode == FEMU_MODE_WHITEBOX) {
        error_setg(errp, "femu_mode=%u (%s) is not available yet: this build supports "
                   "femu_mode=1 (blackbox), 2 (nossd) and 3 (zns)", n->femu_mode,
                   femu_mode_names[n->femu_mode]);
        return false;
    }
    if (n->femu_mode == FEMU_MODE_ZNS || n->ns_types) {
        uint32_t z = n->zns.zone_size_mb;
        if (z < 1 || z > 65536 || (z & (z - 1))) {
            error_setg(errp, "zns_zone_size_mb=%u is invalid: allowed a power of two from 1 "
                       "to 65536 (Linux needs power-of-two zones)", z);
            return false;
        }
        if (n->zns.zasl > 15 || (n->mdts && n->zns.zasl > n->mdts)) {
            error_setg(errp, "zns_zasl=%u is out of range: allowed 0 (= mdts) .. mdts=%u",
                       n->zns.zasl, n->mdts);
            return false;
        }
    }
    if (n->num_namespaces < 1 || n->num_namespaces > FEMU_MAX_NAMESPACES) {
        error_setg(errp, "namespaces=%u is out of range: allowed 1..%d", n->num_namespaces,
                   FEMU_MAX_NAMESPACES);
        return false;
    }
    if (n->nr_io_queues < 1 || n->nr_io_queues > FEMU_MAX_IO_QUEUES) {
        error_setg(errp, "queues=%u is out of range: allowed 1..%d", n->nr_io_queues,
                   FEMU_MAX_IO_QUEUES);
        return false;
    }
    if (n->max_q_ents < 2 || n->max_q_ents > 65536) {
        error_setg(errp, "entries=%u is out of range: allowed 2..65536", n->max_q_ents);
        return false;
    }
    if (n->mdts > 15) {
        error_setg(errp, "mdts=%u is out of range: allowed 0 (no limit) .. 15", n->mdts);
        return false;
    }
    if (n->lba_index > 1) {
        error_setg(errp, "lba_index=%u is out of range: allowed 0 (512-byte LBAs) or "
                   "1 (4096-byte LBAs)", n->lba_index);
        return false;
    }
    if (n->vwc > 1) {
        error_setg(errp, "vwc=%u is out of range: allowed 0 or 1", n->vwc);
        return false;
    }
    if (n->aerl > 15) {
        error_setg(errp, "aerl=%u is out of range: allowed 0..15", n->aerl);
        return false;
    }
    if (n->elpe > 63) {
        error_setg(errp, "elpe=%u is out of range: allowed 0..63", n->elpe);
        return false;
    }
    if (n->poll_idle_us > 1000000) {
        error_setg(errp, "poll_idle_us=%u is out of range: allowed 0..1000000",
                   n->poll_idle_us);
        return false;
    }
    if (n->devsz_mb > 64 * 1024 * 1024) {
        error_setg(errp, "devsz_mb=%u is out of range: allowed 1..%u (64 TiB)", n->devsz_mb,
                   64 * 1024 * 1024);
        return false;
    }
    if (n->serial && strlen(n->serial) > 20) {
        error_setg(errp, "serial='%s' is too long: at most 20 characters", n->serial);
        return false;
    }
    return true;
}

static bool parse_ns_types(FemuCtrl *n, Error **errp)
{
    g_auto(GStrv) parts = NULL;
    uint32_t count;

    if (!n->ns_types) {
        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            n->ns_type[i] = n->femu_mode;
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
        if (!strcmp(t, "nossd")) {
            n->ns_type[i] = FEMU_MODE_NOSSD;
        } else if (!strcmp(t, "blackbox")) {
            n->ns_type[i] = FEMU_MODE_BLACKBOX;
        } else if (!strcmp(t, "zns")) {
            n->ns_type[i] = FEMU_MODE_ZNS;
        } else {
            error_setg(errp, "ns_types='%s': '%s' is not a namespace mode: allowed nossd, "
                       "blackbox, zns", n->ns_types, t);
            return false;
        }
    }
    return true;
}

static bool parse_ns_sizes(FemuCtrl *n, uint64_t total, Error **errp)
{
    g_auto(GStrv) parts = NULL;
    uint64_t sum = 0;

    if (!n->ns_sizes_mb) {
        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            n->ns_bytes[i] = total / n->num_namespaces;
        }
        return true;
    }
    parts = g_strsplit_set(n->ns_sizes_mb, ",:", -1);
    if (g_strv_length(parts) != n->num_namespaces) {
        error_setg(errp, "ns_sizes_mb='%s' must list one size in MiB per namespace (%u)",
                   n->ns_sizes_mb, n->num_namespaces);
        return false;
    }
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        guint64 mb;
        if (!g_ascii_string_to_unsigned(g_strstrip(parts[i]), 10, 1, 64 * 1024 * 1024, &mb,
                                        NULL)) {
            error_setg(errp, "ns_sizes_mb='%s': '%s' is not a size in MiB (1..67108864)",
                       n->ns_sizes_mb, parts[i]);
            return false;
        }
        n->ns_bytes[i] = mb * MiB;
        sum += mb;
    }
    if (n->devsz_mb && sum != n->devsz_mb) {
        error_setg(errp, "ns_sizes_mb='%s' adds up to %" PRIu64 " MiB, not devsz_mb=%u",
                   n->ns_sizes_mb, sum, n->devsz_mb);
        return false;
    }
    return true;
}

/*
 * Namespace modes and sizes. A zoned namespace holds whole zones, and its zone state is
 * kept after all the data in the backend (so a file backend brings it back). Sets
 * devsz_mb to the data size (from a memdev when it was not given).
 */
static bool femu_layout(FemuCtrl *n, Error **errp)
{
    uint64_t zone = (uint64_t)n->zns.zone_size_mb * MiB, total, data = 0;
    bool zoned = false;

    if (!parse_ns_types(n, errp)) {
        return false;
    }
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        if (n->ns_type[i] == FEMU_MODE_WHITEBOX) {
            error_setg(errp, "femu_mode=0 (whitebox) is not available yet: allowed "
                       "namespace modes are nossd, blackbox and zns");
            return false;
        }
        zoned |= n->ns_type[i] == FEMU_MODE_ZNS;
    }
    total = n->devsz_mb ? (uint64_t)n->devsz_mb * MiB :
            n->memdev ? memory_region_size(host_memory_backend_get_memory(n->memdev)) :
            1024 * MiB;
    if (!n->devsz_mb && n->memdev && zoned) {
        /* the zone state comes out of the memdev too */
        total -= MIN(total, femu_zns_meta_bytes(n, total / zone));
    }
    if (!parse_ns_sizes(n, total, errp)) {
        return false;
    }
    n->meta_bytes = 0;
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        uint64_t b = n->ns_bytes[i];
        n->ns_meta[i] = 0;
        if (n->ns_type[i] == FEMU_MODE_ZNS) {
            if (!n->devsz_mb && !n->ns_sizes_mb) {
                b = n->ns_bytes[i] = b / zone * zone;   /* derived: whole zones */
            }
            if (b < zone || b % zone) {
                error_setg(errp, "namespace %u of %" PRIu64 " MiB is not a whole number of "
                           "zones of zns_zone_size_mb=%u (devsz_mb / ns_sizes_mb)", i + 1,
                           b / MiB, n->zns.zone_size_mb);
                return false;
            }
            n->ns_meta[i] = femu_zns_meta_bytes(n, b / zone);
            n->meta_bytes += n->ns_meta[i];
        }
        data += b;
    }
    n->devsz_mb = DIV_ROUND_UP(data, MiB);
    return true;
}

/* The timing models: one for a device of one mode, one per namespace in a mixed device. */
static bool femu_build_media(FemuCtrl *n, Error **errp)
{
    bool mixed = false, flash = false;
    uint32_t first = 0, blocks[FEMU_MAX_NAMESPACES] = { 0 };

    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        mixed |= n->ns_type[i] != n->ns_type[0];
        flash |= n->ns_type[i] != FEMU_MODE_NOSSD;
    }
    if (!mixed) {
        FemuMedia *m;
        switch (n->ns_type[0]) {
        case FEMU_MODE_BLACKBOX:
            m = femu_blackbox_new(n, n->data_bytes, NULL, 0, errp);
            break;
        case FEMU_MODE_ZNS:
            m = femu_zns_media_new(n, n->data_bytes, NULL, 0, errp);
            break;
        default:
            m = femu_media_nossd_new();
            break;
        }
        if (!m) {
            return false;
        }
        n->medias[n->nr_medias++] = m;
        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            n->ns[i].media = m;
            n->ns[i].media_base = 0;
        }
        return true;
    }

    /* mixed: every model takes its own blocks of one flash, and shares its timelines */
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        if (n->ns_type[i] == FEMU_MODE_BLACKBOX) {
            blocks[i] = femu_blackbox_blocks(n, n->ns_bytes[i], errp);
        } else if (n->ns_type[i] == FEMU_MODE_ZNS) {
            blocks[i] = femu_zns_blocks(n, n->ns_bytes[i], errp);
        }
        if (n->ns_type[i] != FEMU_MODE_NOSSD && !blocks[i]) {
            return false;
        }
    }
    if (flash) {
        NandGeometry g = femu_flash_geometry(n, 0);
        NandTiming t;
        g_autofree char *err = NULL;

        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            g.blks_per_pl += blocks[i];
        }
        if (!femu_fill_timing(n->bb.flash_type, n->bb.pg_rd_lat, n->bb.pg_wr_lat,
                              n->bb.blk_er_lat, &n->bb, &t, errp)) {
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

        switch (ns->type) {
        case FEMU_MODE_BLACKBOX:
            m = femu_blackbox_new(n, ns->bytes, n->shared_nand, first, errp);
            break;
        case FEMU_MODE_ZNS:
            m = femu_zns_media_new(n, ns->bytes, n->shared_nand, first, errp);
            break;
        default:
            m = femu_media_nossd_new();
            break;
        }
        if (!m) {
            return false;
        }
        first += blocks[i];
        n->medias[n->nr_medias++] = m;
        ns->media = m;
        ns->media_base = ns->backend_offset;
    }
    return true;
}

static void femu_free_media(FemuCtrl *n)
{
    for (uint32_t i = 0; i < n->nr_medias; i++) {
        femu_media_destroy(n->medias[i]);
    }
    n->nr_medias = 0;
    nand_model_free(n->shared_nand);
    n->shared_nand = NULL;
}

/* r->offset is a backend offset; the namespace's model sees its own. */
uint64_t femu_ns_media_submit(FemuNamespace *ns, FemuMediaReq *r)
{
    r->offset -= MIN(r->offset, ns->media_base);
    return femu_media_submit(ns->media, r);
}

static bool femu_check_capacity(FemuCtrl *n, Error **errp)
{
    uint64_t per_ns = n->data_bytes / n->num_namespaces;
    uint64_t lba = n->lba_index ? 4096 : 512;

    if (per_ns < lba || per_ns / lba < 1) {
        error_setg(errp, "devsz_mb=%u is too small for namespaces=%u", n->devsz_mb,
                   n->num_namespaces);
        return false;
    }
    return true;
}

/* Controller-level reset (CC.EN 1->0 or device reset); caller holds n->lock. */
void femu_ctrl_reset_locked(FemuCtrl *n)
{
    for (int i = n->nr_io_queues; i >= 0; i--) {
        if (n->sq[i]) {
            femu_sq_free(n, i, false);
        }
    }
    for (int i = n->nr_io_queues; i >= 0; i--) {
        if (n->cq[i]) {
            femu_cq_free(n, i);
        }
    }
    for (uint32_t i = 0; n->ns && i < n->num_namespaces; i++) {
        if (n->enabled && n->ns[i].zones) {
            femu_zns_ctrl_reset(&n->ns[i]);
        }
    }
    n->dbbuf_dbs = n->dbbuf_eis = 0;
    n->aer_queued = 0;
    n->aer_masked = 0;
    n->outstanding_aers = 0;
    n->enabled = false;
    n->features = (FemuFeatures){
        .int_vector_config = n->features.int_vector_config,
        .temp_over = 343,     /* 70 C */
        .vwc = n->vwc,
        .arbitration = NVME_ARB_AB_NOLIMIT,
    };
    for (uint32_t v = 0; v <= n->nr_io_queues; v++) {
        n->features.int_vector_config[v] = v;
    }
    memset(n->db_sq_tail, 0, sizeof(uint32_t) * (n->nr_io_queues + 1));
    memset(n->db_cq_head, 0, sizeof(uint32_t) * (n->nr_io_queues + 1));
    qatomic_set(&n->bad_doorbell, 0);
}

static bool femu_start_ctrl(FemuCtrl *n)
{
    NvmeBar *bar = &n->bar;
    uint32_t cc = bar->cc;
    uint32_t mps = NVME_CC_MPS(cc);
    uint32_t asqs = (bar->aqa & AQA_ASQS_MASK) + 1;
    uint32_t acqs = ((bar->aqa >> AQA_ACQS_SHIFT) & AQA_ACQS_MASK) + 1;
    uint32_t css = NVME_CC_CSS(cc);
    const char *why = NULL;

    if (mps < NVME_CAP_MPSMIN(bar->cap) || mps > NVME_CAP_MPSMAX(bar->cap)) {
        why = "CC.MPS outside CAP.MPSMIN..MPSMAX";
    } else if (css != NVME_CC_CSS_NVM && css != NVME_CC_CSS_ALL) {
        why = "CC.CSS selects an unsupported command set";
    } else if (NVME_CC_AMS(cc) != 0) {
        why = "CC.AMS selects an unsupported arbitration";
    } else if (asqs < 2 || acqs < 2 || asqs > n->max_q_ents || acqs > n->max_q_ents) {
        why = "AQA queue sizes";
    } else if ((bar->asq & 0xfff) || (bar->acq & 0xfff) || !bar->asq || !bar->acq) {
        why = "ASQ/ACQ not page aligned";
    } else if ((NVME_CC_IOSQES(cc) && NVME_CC_IOSQES(cc) != 6) ||
               (NVME_CC_IOCQES(cc) && NVME_CC_IOCQES(cc) != 4)) {
        why = "CC.IOSQES/IOCQES";
    }
    n->page_bits = 12 + mps;
    n->page_size = 1u << n->page_bits;
    if (!why && (!femu_dma_in_ram(n, bar->asq, (uint64_t)asqs * 64, false) ||
                 !femu_dma_in_ram(n, bar->acq, (uint64_t)acqs * 16, true))) {
        why = "admin queues outside guest RAM";
    }
    if (why) {
        trace_femu_enable_failed(why);
        return false;
    }
    femu_cq_new(n, 0, 0, true, acqs, bar->acq);
    femu_sq_new(n, 0, 0, asqs, bar->asq);
    n->enabled = true;
    trace_femu_enabled(n->page_size, asqs, acqs);
    return true;
}

static void femu_write_cc(FemuCtrl *n, uint32_t val)
{
    NvmeBar *bar = &n->bar;
    uint32_t old = bar->cc;

    if (NVME_CC_EN(old) && !NVME_CC_EN(val)) {
        femu_ctrl_reset_locked(n);
        bar->csts = 0;
        bar->cc = val;
        trace_femu_disabled();
    } else if (!NVME_CC_EN(old) && NVME_CC_EN(val)) {
        bar->cc = val;
        if (femu_start_ctrl(n)) {
            bar->csts = NVME_CSTS_READY;
        } else {
            bar->csts = NVME_CSTS_FAILED;
        }
    } else {
        /* while enabled only the shutdown and queue entry size fields may change */
        uint32_t keep = NVME_CC_EN(old) ? ~((CC_SHN_MASK << CC_SHN_SHIFT) |
                                           (CC_IOSQES_MASK << CC_IOSQES_SHIFT) |
                                           (CC_IOCQES_MASK << CC_IOCQES_SHIFT)) : 0;
        bar->cc = (old & keep) | (val & ~keep);
    }

    if (NVME_CC_SHN(val) && !NVME_CC_SHN(old)) {
        /* data is in the backend already: a normal or abrupt shutdown completes at once */
        bar->csts = (bar->csts & ~(CSTS_SHST_MASK << CSTS_SHST_SHIFT)) |
                    NVME_CSTS_SHST_COMPLETE;
        trace_femu_shutdown();
    } else if (!NVME_CC_SHN(val) && NVME_CC_SHN(old)) {
        bar->csts &= ~(CSTS_SHST_MASK << CSTS_SHST_SHIFT);
    }
}

static uint64_t femu_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    FemuCtrl *n = opaque;
    uint64_t val = 0;

    if (addr < sizeof(n->bar) && addr + size <= sizeof(n->bar) && !(addr & (size - 1))) {
        QEMU_LOCK_GUARD(&n->lock);
        memcpy(&val, (uint8_t *)&n->bar + addr, size);
        val = le64_to_cpu(val);
    }
    /* doorbells and reserved space read as zero */
    trace_femu_mmio_read(addr, size, val);
    return val;
}

static void femu_write_doorbell(FemuCtrl *n, hwaddr addr, uint32_t val)
{
    uint32_t index = (addr - FEMU_REG_SIZE) / FEMU_DB_STRIDE;
    uint32_t qid = index / 2;

    if ((addr - FEMU_REG_SIZE) % FEMU_DB_STRIDE || qid > n->nr_io_queues) {
        qatomic_set(&n->bad_doorbell, 1 + NVME_AER_INFO_ERR_INVALID_DB_REGISTER);
    } else if (index & 1) {
        qatomic_set(&n->db_cq_head[qid], val);
    } else {
        qatomic_set(&n->db_sq_tail[qid], val);
    }
    trace_femu_doorbell(qid, index & 1, val);
    femu_dataplane_kick(n);
}

static void femu_mmio_write(void *opaque, hwaddr addr, uint64_t data, unsigned size)
{
    FemuCtrl *n = opaque;
    NvmeBar *bar = &n->bar;

    trace_femu_mmio_write(addr, size, data);
    if (addr >= FEMU_REG_SIZE) {
        femu_write_doorbell(n, addr, data);
        return;
    }
    if (addr & (size - 1)) {
        return;
    }

    QEMU_LOCK_GUARD(&n->lock);
    switch (addr) {
    case NVME_REG_INTMS:
        bar->intms |= data;
        bar->intmc = bar->intms;
        break;
    case NVME_REG_INTMC:
        bar->intms &= ~data;
        bar->intmc = bar->intms;
        break;
    case NVME_REG_CC:
        femu_write_cc(n, data);
        break;
    case NVME_REG_AQA:
        if (!NVME_CC_EN(bar->cc)) {
            bar->aqa = data & 0x0fff0fff;
        }
        break;
    case NVME_REG_ASQ:
    case NVME_REG_ASQ + 4:
    case NVME_REG_ACQ:
    case NVME_REG_ACQ + 4:
        if (!NVME_CC_EN(bar->cc)) {
            bool asq = addr < NVME_REG_ACQ;
            uint64_t reg = asq ? bar->asq : bar->acq;
            unsigned shift = (addr & 4) * 8;
            uint64_t mask = size == 8 ? ~0ULL : 0xffffffffULL << shift;
            reg = ((reg & ~mask) | ((data << shift) & mask)) & ~0xfffULL;
            if (asq) {
                bar->asq = reg;
            } else {
                bar->acq = reg;
            }
        }
        break;
    default:
        /* read-only and unsupported registers ignore writes */
        break;
    }
    femu_dataplane_kick(n);
}

static const MemoryRegionOps femu_mmio_ops = {
    .read = femu_mmio_read,
    .write = femu_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = { .min_access_size = 4, .max_access_size = 8 },
    .valid = { .min_access_size = 4, .max_access_size = 8 },
};

typedef struct NamedValue {
    char *name;
    uint64_t value;
} NamedValue;

static void collect_stat(void *opaque, const char *name, uint64_t value)
{
    NamedValue nv = { g_strdup(name), value };
    g_array_append_val((GArray *)opaque, nv);
}

static void femu_stats_get(Object *obj, Visitor *v, const char *name, void *opaque,
                           Error **errp)
{
    FemuCtrl *n = FEMU(obj);
    IoCounters io = { 0 };
    LatenessHist late;
    g_autoptr(GArray) media = g_array_new(false, false, sizeof(NamedValue));

    qemu_mutex_lock(&n->lock);
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        io_counters_add(&io, &n->ns[i].io);
    }
    late = n->lateness;
    for (uint32_t i = 0; i < n->nr_medias; i++) {
        guint from = media->len;
        g_autofree char *prefix = n->nr_medias > 1 ? femu_media_prefix(n, i) : NULL;
        femu_media_stats(n->medias[i], collect_stat, media);
        for (guint k = from; prefix && k < media->len; k++) {
            NamedValue *nv = &g_array_index(media, NamedValue, k);
            char *named = g_strconcat(prefix, nv->name, NULL);
            g_free(nv->name);
            nv->name = named;
        }
    }
    qemu_mutex_unlock(&n->lock);

    uint64_t p50 = lateness_quantile(&late, 0.5), p99 = lateness_quantile(&late, 0.99);
    struct { const char *name; uint64_t *val; } fields[] = {
        { "host-read-commands", &io.read_cmds },
        { "host-write-commands", &io.write_cmds },
        { "host-bytes-read", &io.bytes_read },
        { "host-bytes-written", &io.bytes_written },
        { "completions", &late.count },
        { "lateness-p50-ns", &p50 },
        { "lateness-p99-ns", &p99 },
        { "lateness-max-ns", &late.max_ns },
    };
    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
        if (!visit_type_uint64(v, fields[i].name, fields[i].val, errp)) {
            break;
        }
    }
    for (guint i = 0; i < media->len; i++) {
        NamedValue *nv = &g_array_index(media, NamedValue, i);
        g_autofree char *key = g_strdelimit(g_strdup(nv->name), "_", '-');
        if (!*errp) {
            visit_type_uint64(v, key, &nv->value, errp);
        }
        g_free(nv->name);
    }
    visit_end_struct(v, NULL);
}

static void femu_realize(PCIDevice *pci_dev, Error **errp)
{
    FemuCtrl *n = FEMU(pci_dev);
    uint8_t *conf = pci_dev->config;
    uint32_t nvec;
    static unsigned instance;

    if (!femu_check_props(n, errp) || !femu_layout(n, errp) ||
        !femu_backend_init(n, n->meta_bytes, errp)) {
        return;
    }
    if (!femu_check_capacity(n, errp)) {
        femu_backend_release(n);
        return;
    }
    if (!n->serial) {
        n->serial = g_strdup_printf("FEMU%04u", instance);
    }
    instance++;

    nvec = n->nr_io_queues + 1;
    pci_config_set_prog_interface(conf, 0x2);
    pci_config_set_class(conf, PCI_CLASS_STORAGE_EXPRESS);
    pci_config_set_vendor_id(conf, PCI_VENDOR_ID_REDHAT);
    pci_config_set_device_id(conf, PCI_DEVICE_ID_REDHAT_NVME);
    pci_set_word(conf + PCI_SUBSYSTEM_VENDOR_ID, PCI_VENDOR_ID_REDHAT);
    pci_set_word(conf + PCI_SUBSYSTEM_ID, 0x1100);
    conf[PCI_INTERRUPT_PIN] = 1;

    memory_region_init_io(&n->iomem, OBJECT(n), &femu_mmio_ops, n, "femu-regs",
                          femu_bar_size(n));
    pci_register_bar(pci_dev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &n->iomem);
    if (msix_init_exclusive_bar(pci_dev, nvec, 4, errp)) {
        femu_backend_release(n);
        return;
    }
    for (uint32_t v = 0; v < nvec; v++) {
        msix_vector_use(pci_dev, v);
    }

    femu_init_registers(n);
    femu_init_namespaces(n);
    bool ok = true;
    uint8_t *meta = n->data + n->data_bytes;
    for (uint32_t i = 0; ok && i < n->num_namespaces; i++) {
        if (n->ns_type[i] == FEMU_MODE_ZNS) {
            ok = femu_zns_init_ns(n, &n->ns[i], n->ns_bytes[i], meta, errp);
            meta += n->ns_meta[i];
        }
    }
    if (!ok || !femu_build_media(n, errp)) {
        femu_free_media(n);
        femu_free_namespaces(n);
        msix_uninit_exclusive_bar(pci_dev);
        femu_backend_release(n);
        return;
    }
    n->sq = g_new0(FemuSQ *, nvec);
    n->cq = g_new0(FemuCQ *, nvec);
    n->db_sq_tail = g_new0(uint32_t, nvec);
    n->db_cq_head = g_new0(uint32_t, nvec);
    n->irq_pending = bitmap_new(nvec);
    n->features.int_vector_config = g_new0(uint32_t, nvec);
    n->error_log = g_new0(NvmeErrorLog, n->elpe + 1);
    n->page_size = 4096;
    n->page_bits = 12;
    n->power_on_ns = femu_now_ns();
    QTAILQ_INIT(&n->aer_reqs);
    deadline_heap_init(&n->timed);
    qemu_mutex_init(&n->lock);
    femu_ctrl_reset_locked(n);
    femu_init_id_ctrl(n);
    femu_dataplane_start(n);
    trace_femu_realized(femu_mode_names[n->femu_mode], n->data_bytes, n->num_namespaces,
                        n->nr_io_queues);
}

static void femu_exit(PCIDevice *pci_dev)
{
    FemuCtrl *n = FEMU(pci_dev);

    femu_dataplane_stop(n);
    qemu_mutex_lock(&n->lock);
    femu_ctrl_reset_locked(n);
    qemu_mutex_unlock(&n->lock);
    deadline_heap_destroy(&n->timed);
    qemu_mutex_destroy(&n->lock);
    femu_free_media(n);
    femu_free_namespaces(n);
    femu_backend_release(n);
    g_free(n->sq);
    g_free(n->cq);
    g_free(n->db_sq_tail);
    g_free(n->db_cq_head);
    g_free(n->irq_pending);
    g_free(n->features.int_vector_config);
    g_free(n->error_log);
    msix_uninit_exclusive_bar(pci_dev);
}

static void femu_reset(DeviceState *dev)
{
    FemuCtrl *n = FEMU(dev);

    qemu_mutex_lock(&n->lock);
    femu_ctrl_reset_locked(n);
    n->bar.cc = 0;
    n->bar.csts = 0;
    n->bar.aqa = 0;
    n->bar.asq = 0;
    n->bar.acq = 0;
    n->bar.intms = n->bar.intmc = 0;
    qemu_mutex_unlock(&n->lock);
    n->intx_level = false;
    pci_irq_deassert(PCI_DEVICE(n));
}

/* Queues and in-flight commands live in the device thread: refuse migration and savevm. */
static const VMStateDescription femu_vmstate = {
    .name = "femu",
    .unmigratable = 1,
};

static const Property femu_props[] = {
    DEFINE_PROP_STRING("serial", FemuCtrl, serial),
    DEFINE_PROP_UINT32("femu_mode", FemuCtrl, femu_mode, FEMU_MODE_NOSSD),
    DEFINE_PROP_UINT32("devsz_mb", FemuCtrl, devsz_mb, 0),
    DEFINE_PROP_UINT32("namespaces", FemuCtrl, num_namespaces, 1),
    DEFINE_PROP_STRING("ns_types", FemuCtrl, ns_types),
    DEFINE_PROP_STRING("ns_sizes_mb", FemuCtrl, ns_sizes_mb),
    DEFINE_PROP_UINT32("queues", FemuCtrl, nr_io_queues, 8),
    DEFINE_PROP_UINT32("entries", FemuCtrl, max_q_ents, 2048),
    DEFINE_PROP_UINT8("mdts", FemuCtrl, mdts, 7),
    DEFINE_PROP_UINT8("lba_index", FemuCtrl, lba_index, 0),
    DEFINE_PROP_UINT8("vwc", FemuCtrl, vwc, 1),
    DEFINE_PROP_UINT8("aerl", FemuCtrl, aerl, 3),
    DEFINE_PROP_UINT8("elpe", FemuCtrl, elpe, 3),
    DEFINE_PROP_UINT32("poll_idle_us", FemuCtrl, poll_idle_us, 50),
    DEFINE_PROP_LINK("memdev", FemuCtrl, memdev, TYPE_MEMORY_BACKEND, HostMemoryBackend *),
    /* blackbox (femu_mode=1): FEMU's names, then the new ones */
    DEFINE_PROP_UINT32("secsz", FemuCtrl, bb.secsz, 512),
    DEFINE_PROP_UINT32("secs_per_pg", FemuCtrl, bb.secs_per_pg, 8),
    DEFINE_PROP_UINT32("pgs_per_blk", FemuCtrl, bb.pgs_per_blk, 64),
    DEFINE_PROP_UINT32("blks_per_pl", FemuCtrl, bb.blks_per_pl, 0),
    DEFINE_PROP_UINT32("pls_per_lun", FemuCtrl, bb.pls_per_lun, 1),
    DEFINE_PROP_UINT32("luns_per_ch", FemuCtrl, bb.luns_per_ch, 8),
    DEFINE_PROP_UINT32("nchs", FemuCtrl, bb.nchs, 8),
    DEFINE_PROP_INT64("pg_rd_lat", FemuCtrl, bb.pg_rd_lat, -1),
    DEFINE_PROP_INT64("pg_wr_lat", FemuCtrl, bb.pg_wr_lat, -1),
    DEFINE_PROP_INT64("blk_er_lat", FemuCtrl, bb.blk_er_lat, -1),
    DEFINE_PROP_INT64("ch_xfer_lat", FemuCtrl, bb.ch_xfer_lat, -1),
    /* FEMU's 75/95 keep 5% of lines free in the foreground, most of a 7% OP: WAF ~22 */
    DEFINE_PROP_UINT32("gc_thres_pcent", FemuCtrl, bb.gc_thres_pcent, 90),
    DEFINE_PROP_UINT32("gc_thres_pcent_high", FemuCtrl, bb.gc_thres_pcent_high, 99),
    DEFINE_PROP_INT32("op_pcent", FemuCtrl, bb.op_pcent, -1),
    DEFINE_PROP_UINT8("flash_type", FemuCtrl, bb.flash_type, 3),
    DEFINE_PROP_STRING("pg_rd_lats", FemuCtrl, bb.pg_rd_lats),
    DEFINE_PROP_STRING("pg_wr_lats", FemuCtrl, bb.pg_wr_lats),
    DEFINE_PROP_UINT32("ch_mts", FemuCtrl, bb.ch_mts, 800),
    DEFINE_PROP_UINT32("ch_width", FemuCtrl, bb.ch_width, 1),
    DEFINE_PROP_UINT32("time_scale", FemuCtrl, bb.time_scale, 1),
    /* zns (femu_mode=3): FEMU's names, then the new ones */
    DEFINE_PROP_UINT32("zns_num_ch", FemuCtrl, zns.num_ch, 8),
    DEFINE_PROP_UINT32("zns_num_lun", FemuCtrl, zns.num_lun, 4),
    DEFINE_PROP_UINT32("zns_num_plane", FemuCtrl, zns.num_plane, 1),
    DEFINE_PROP_UINT32("zns_num_blk", FemuCtrl, zns.num_blk, 0),
    DEFINE_PROP_UINT8("zns_flash_type", FemuCtrl, zns.flash_type, 3),
    DEFINE_PROP_INT64("zns_pg_rd_lat", FemuCtrl, zns.pg_rd_lat, -1),
    DEFINE_PROP_INT64("zns_pg_wr_lat", FemuCtrl, zns.pg_wr_lat, -1),
    DEFINE_PROP_INT64("zns_blk_er_lat", FemuCtrl, zns.blk_er_lat, -1),
    DEFINE_PROP_UINT32("zns_max_open", FemuCtrl, zns.max_open, 0),
    DEFINE_PROP_UINT32("zns_max_active", FemuCtrl, zns.max_active, 0),
    DEFINE_PROP_UINT32("zns_zd_ext_size", FemuCtrl, zns.zd_ext_size, 0),
    DEFINE_PROP_SIZE("zns_zone_cap", FemuCtrl, zns.zone_cap, 0),
    DEFINE_PROP_UINT32("zns_zone_size_mb", FemuCtrl, zns.zone_size_mb, 16),
    DEFINE_PROP_BOOL("zns_cross_zone_read", FemuCtrl, zns.cross_zone_read, false),
    DEFINE_PROP_UINT8("zns_zasl", FemuCtrl, zns.zasl, 0),
    DEFINE_PROP_UINT32("zns_stripe", FemuCtrl, zns.stripe, 0),
    DEFINE_PROP_UINT32("zns_wbuf_kb", FemuCtrl, zns.wbuf_kb, 0),
    DEFINE_PROP_UINT32("zns_wbuf_zones", FemuCtrl, zns.wbuf_zones, 0),
};

static void femu_instance_init(Object *obj)
{
    object_property_add(obj, "stats", "FemuStats", femu_stats_get, NULL, NULL, NULL);
}

static void femu_class_init(ObjectClass *oc, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(oc);

    pc->realize = femu_realize;
    pc->exit = femu_exit;
    pc->class_id = PCI_CLASS_STORAGE_EXPRESS;
    pc->vendor_id = PCI_VENDOR_ID_REDHAT;
    pc->device_id = PCI_DEVICE_ID_REDHAT_NVME;
    pc->revision = 2;
    set_bit(DEVICE_CATEGORY_STORAGE, dc->categories);
    dc->desc = "FEMU NVMe SSD emulator";
    dc->vmsd = &femu_vmstate;
    device_class_set_props(dc, femu_props);
    device_class_set_legacy_reset(dc, femu_reset);
}

static const TypeInfo femu_info = {
    .name = TYPE_FEMU,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(FemuCtrl),
    .instance_init = femu_instance_init,
    .class_init = femu_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { }
    },
};

static void femu_register_types(void)
{
    type_register_static(&femu_info);
}

type_init(femu_register_types)
