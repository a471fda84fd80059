/*
 * FEMU NVMe controller: QOM type, properties, PCI function, BAR0 registers, lifecycle.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/bitmap.h"
#include "qemu/cutils.h"
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

/* Where x-crash-at may stop QEMU; each is between two saves of a crash-ordering rule. */
static const char *const crash_points[] = {
    "write-placed",     /* a write's data is placed, its write pointer not saved */
    "reset-saved",      /* a reset's Empty record is saved, its data not dropped */
    "plp-recovered",        /* protected data is back home, write pointers not rolled back */
    "lba-journaled",    /* an LBA of a write is in the journal and half in place */
};

static bool crash_at_parse(FemuCtrl *n, Error **errp)
{
    g_auto(GStrv) parts = NULL;
    g_autoptr(GString) all = g_string_new("");
    guint64 count = 1;

    if (!n->crash_at || !*n->crash_at) {
        return true;
    }
    parts = g_strsplit(n->crash_at, ":", 2);
    if (parts[1] && (!g_ascii_string_to_unsigned(parts[1], 10, 1, UINT32_MAX, &count, NULL))) {
        error_setg(errp, "x-crash-at='%s': the count after ':' must be 1..%u", n->crash_at,
                   UINT32_MAX);
        return false;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(crash_points); i++) {
        if (!strcmp(parts[0], crash_points[i])) {
            pstrcpy(n->crash_point, sizeof(n->crash_point), parts[0]);
            n->crash_countdown = count;
            return true;
        }
        g_string_append_printf(all, "%s%s", i ? ", " : "", crash_points[i]);
    }
    error_setg(errp, "x-crash-at='%s': '%s' is not a crash point: allowed %s (with an "
               "optional :N, the Nth pass)", n->crash_at, parts[0], all->str);
    return false;
}


static bool femu_check_props(FemuCtrl *n, Error **errp)
{
    NandTiming opts = { 0 };
    g_autofree char *why = NULL;

    /* first: the preset fills in what the checks below then look at */
    if (!femu_flash_apply_preset(OBJECT(n), n->flash.flash_preset, errp) ||
        !crash_at_parse(n, errp)) {
        return false;
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
    if (n->devsz_mb > FEMU_MAX_DEVSZ_MB) {
        error_setg(errp, "devsz_mb=%u is out of range: allowed 1..%u (64 TiB)", n->devsz_mb,
                   FEMU_MAX_DEVSZ_MB);
        return false;
    }
    if (n->fail_interval_ms > 86400000 || n->fail_prob > 100) {
        error_setg(errp, "plp_fail_interval_ms=%u, plp_fail_prob=%u: allowed 0..86400000 ms "
                   "and 0..100 %%", n->fail_interval_ms, n->fail_prob);
        return false;
    }
    if (!n->dataplane || !strcmp(n->dataplane, "thread")) {
        n->main_loop = false;
    } else if (!strcmp(n->dataplane, "main-loop")) {
        n->main_loop = true;
    } else {
        error_setg(errp, "dataplane='%s' is not known: allowed thread, main-loop",
                   n->dataplane);
        return false;
    }
    if (n->serial && strlen(n->serial) > 20) {
        error_setg(errp, "serial='%s' is too long: at most 20 characters", n->serial);
        return false;
    }
    /* checked here too, so that a drive without flash (nossd) refuses it alike */
    if (!femu_flash_options(&n->flash, &opts, errp)) {
        return false;
    }
    n->frontend_cfg.time_scale = n->flash.time_scale;
    if (!femu_frontend_check(&n->frontend_cfg, &why)) {
        error_setg(errp, "%s", why);
        return false;
    }
    return true;
}

/* Controller-level reset (CC.EN 1->0 or device reset); caller holds n->lock. */
static void femu_ctrl_reset_locked(FemuCtrl *n)
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
    /* also after a fatal status, when the controller is no longer enabled */
    femu_ns_ctrl_reset(n);
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
    /* the thresholds went back to their defaults, and no interrupt is owed any more */
    n->temperature_warning = 0;
    bitmap_zero(n->irq_pending, n->nr_io_queues + 1);
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
    qatomic_set(&n->bad_doorbell, 0);   /* doorbells rung while disabled are no event */
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
        /* volatile buffers go to the backend now; the shutdown completes at once */
        femu_ns_shutdown(n, femu_now_ns(n));
        bar->csts = (bar->csts & ~(CSTS_SHST_MASK << CSTS_SHST_SHIFT)) |
                    NVME_CSTS_SHST_COMPLETE;
        trace_femu_shutdown();
    } else if (!NVME_CC_SHN(val) && NVME_CC_SHN(old)) {
        bar->csts &= ~(CSTS_SHST_MASK << CSTS_SHST_SHIFT);
    }
}

/*
 * The registers' little-endian bytes addr..addr+size, built from the host-order fields so
 * that a big-endian host reads them right too. The rest reads as zero.
 */
static uint64_t femu_reg_read(FemuCtrl *n, hwaddr addr, unsigned size)
{
    const NvmeBar *bar = &n->bar;
    const struct {
        hwaddr off;
        unsigned len;
        uint64_t val;
    } regs[] = {
        { NVME_REG_CAP, 8, bar->cap }, { NVME_REG_VS, 4, bar->vs },
        { NVME_REG_INTMS, 4, bar->intms }, { NVME_REG_INTMC, 4, bar->intmc },
        { NVME_REG_CC, 4, bar->cc }, { NVME_REG_CSTS, 4, bar->csts },
        { NVME_REG_AQA, 4, bar->aqa }, { NVME_REG_ASQ, 8, bar->asq },
        { NVME_REG_ACQ, 8, bar->acq },
    };
    uint8_t bytes[8] = { 0 };

    for (size_t i = 0; i < ARRAY_SIZE(regs); i++) {
        for (unsigned b = 0; b < regs[i].len; b++) {
            hwaddr at = regs[i].off + b;
            if (at >= addr && at < addr + size) {
                bytes[at - addr] = regs[i].val >> (8 * b);
            }
        }
    }
    return ldn_le_p(bytes, size);
}

static uint64_t femu_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    FemuCtrl *n = opaque;
    uint64_t val = 0;

    if (qatomic_read(&n->power_lost)) {
        /* a device without power: reads return all ones, as from a removed one */
        return size == 8 ? UINT64_MAX : (1ULL << (8 * size)) - 1;
    }
    if (addr < FEMU_REG_SIZE && !(addr & (size - 1))) {
        femu_lock(n);
        val = femu_reg_read(n, addr, size);
        femu_unlock(n);
    }
    /* doorbells and reserved space read as zero */
    trace_femu_mmio_read(addr, size, val);
    return val;
}

/*
 * Read without the lock: a queue is created before its Create command completes, so
 * before the host may ring it, and deleted before the Delete command completes.
 */
static bool queue_exists(FemuCtrl *n, uint32_t qid, bool cq)
{
    return cq ? qatomic_read(&n->cq[qid]) != NULL : qatomic_read(&n->sq[qid]) != NULL;
}

static void femu_write_doorbell(FemuCtrl *n, hwaddr addr, uint32_t val)
{
    uint32_t index = (addr - FEMU_REG_SIZE) / FEMU_DB_STRIDE;
    uint32_t qid = index / 2;

    if ((addr - FEMU_REG_SIZE) % FEMU_DB_STRIDE || qid > n->nr_io_queues ||
        !queue_exists(n, qid, index & 1)) {
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
    if (qatomic_read(&n->power_lost)) {
        return;
    }
    if (addr >= FEMU_REG_SIZE) {
        /* doorbells are 32-bit registers: an 8-byte write is two of them */
        femu_write_doorbell(n, addr, (uint32_t)data);
        if (size == 8) {
            femu_write_doorbell(n, addr + 4, data >> 32);
        }
        return;
    }
    if (addr & (size - 1)) {
        return;
    }

    femu_lock(n);
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
    femu_unlock(n);
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
    /* QMP keys use '-' where the vendor log uses '_' */
    NamedValue nv = { g_strdelimit(g_strdup(name), "_", '-'), value };
    g_array_append_val((GArray *)opaque, nv);
}

static void clear_named_value(gpointer p)
{
    g_free(((NamedValue *)p)->name);
}

/* qom-get of "stats": every counter of femu_stats_emit, read under the lock. */
static void femu_stats_get(Object *obj, Visitor *v, const char *name, void *opaque,
                           Error **errp)
{
    FemuCtrl *n = FEMU(obj);
    g_autoptr(GArray) stats = g_array_new(false, false, sizeof(NamedValue));

    g_array_set_clear_func(stats, clear_named_value);
    femu_lock(n);
    femu_stats_emit(n, collect_stat, stats);
    femu_unlock(n);

    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    for (guint i = 0; i < stats->len; i++) {
        NamedValue *nv = &g_array_index(stats, NamedValue, i);
        if (!visit_type_uint64(v, nv->name, &nv->value, errp)) {
            break;
        }
    }
    visit_end_struct(v, NULL);
}

/*
 * Power is cut: commands stop (outstanding ones never complete), the models save what
 * their capacitors would, and the controller is dead until the machine is reset.
 */
static void femu_power_cut(FemuCtrl *n, const char *why)
{
    femu_lock(n);
    if (!n->power_lost) {
        qatomic_set(&n->power_lost, true);
        n->power_cuts++;
        femu_ns_power_loss(n);
        femu_ctrl_reset_locked(n);
        n->bar.cc = n->bar.csts = 0;
        trace_femu_power_cut(why);
    }
    femu_unlock(n);
    n->intx_level = false;
    pci_irq_deassert(PCI_DEVICE(n));
}

static bool femu_power_cut_get(Object *obj, Error **errp)
{
    return qatomic_read(&FEMU(obj)->power_lost);
}

/* qom-set power-cut true: power off now; it comes back with a machine reset. */
static void femu_power_cut_set(Object *obj, bool value, Error **errp)
{
    FemuCtrl *n = FEMU(obj);

    if (value) {
        femu_power_cut(n, "QMP");
    } else if (qatomic_read(&n->power_lost)) {
        error_setg(errp, "power-cut: power comes back with a machine reset (system_reset) "
                   "or a restart of QEMU, not by clearing the property");
    }
}

static void femu_fail_arm(FemuCtrl *n)
{
    timer_mod(n->fail_timer, qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + n->fail_interval_ms);
}

/* Random power loss: every plp_fail_interval_ms, with probability plp_fail_prob %. */
static void femu_fail_tick(void *opaque)
{
    FemuCtrl *n = opaque;

    if (!qatomic_read(&n->power_lost) &&
        (uint32_t)g_rand_int_range(n->fail_rand, 0, 100) < n->fail_prob) {
        femu_power_cut(n, "random");
    }
    femu_fail_arm(n);
}

static void femu_free_state(FemuCtrl *n)
{
    g_free(n->sq);
    g_free(n->cq);
    g_free(n->db_sq_tail);
    g_free(n->db_cq_head);
    g_free(n->irq_pending);
    g_free(n->features.int_vector_config);
    g_free(n->error_log);
}

static void femu_realize(PCIDevice *pci_dev, Error **errp)
{
    FemuCtrl *n = FEMU(pci_dev);
    uint8_t *conf = pci_dev->config;
    const FemuNsKind *kind;
    uint32_t nvec;
    static unsigned instance;

    if (!femu_check_props(n, errp) || !femu_ns_layout(n, errp) ||
        !femu_backend_init(n, n->meta_bytes, errp)) {
        return;
    }
    if (!n->serial) {
        n->serial = g_strdup_printf("FEMU%04u", instance);
    }
    instance++;
    if (!femu_ns_create(n, errp)) {
        femu_backend_release(n);
        return;
    }

    nvec = n->nr_io_queues + 1;
    pci_config_set_prog_interface(conf, 0x2);
    pci_config_set_class(conf, PCI_CLASS_STORAGE_EXPRESS);
    kind = femu_ctrl_kind(n);
    if (kind && kind->pci_vendor_id) {
        /* e.g. the IDs old drivers of that kind of drive looked for */
        pci_config_set_vendor_id(conf, kind->pci_vendor_id);
        pci_config_set_device_id(conf, kind->pci_device_id);
    } else {
        pci_config_set_vendor_id(conf, PCI_VENDOR_ID_REDHAT);
        pci_config_set_device_id(conf, PCI_DEVICE_ID_REDHAT_NVME);
    }
    pci_set_word(conf + PCI_SUBSYSTEM_VENDOR_ID, PCI_VENDOR_ID_REDHAT);
    pci_set_word(conf + PCI_SUBSYSTEM_ID, 0x1100);
    conf[PCI_INTERRUPT_PIN] = 1;

    memory_region_init_io(&n->iomem, OBJECT(n), &femu_mmio_ops, n, "femu-regs",
                          femu_bar_size(n));
    pci_register_bar(pci_dev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &n->iomem);
    if (msix_init_exclusive_bar(pci_dev, nvec, 4, errp)) {
        femu_ns_destroy(n);
        femu_backend_release(n);
        return;
    }
    for (uint32_t v = 0; v < nvec; v++) {
        msix_vector_use(pci_dev, v);
    }

    femu_dma_setup(n);
    femu_init_registers(n);
    n->sq = g_new0(FemuSQ *, nvec);
    n->cq = g_new0(FemuCQ *, nvec);
    n->db_sq_tail = g_new0(uint32_t, nvec);
    n->db_cq_head = g_new0(uint32_t, nvec);
    n->irq_pending = bitmap_new(nvec);
    n->features.int_vector_config = g_new0(uint32_t, nvec);
    n->error_log = g_new0(NvmeErrorLog, n->elpe + 1);
    n->page_size = 4096;
    n->page_bits = 12;
    n->power_on_ns = femu_now_ns(n);
    QTAILQ_INIT(&n->aer_reqs);
    QTAILQ_INIT(&n->running);
    deadline_heap_init(&n->timed);
    qemu_mutex_init(&n->lock);
    femu_ctrl_reset_locked(n);
    femu_init_id_ctrl(n);
    femu_dataplane_start(n);
    if (n->fail_interval_ms && n->fail_prob) {
        n->fail_rand = g_rand_new_with_seed(n->fail_seed);
        n->fail_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL, femu_fail_tick, n);
        femu_fail_arm(n);
    }
    kind = femu_ctrl_kind(n);
    trace_femu_realized(kind ? kind->name : "mixed", n->data_bytes, n->num_namespaces,
                        n->nr_io_queues);
}

static void femu_exit(PCIDevice *pci_dev)
{
    FemuCtrl *n = FEMU(pci_dev);

    if (n->fail_timer) {
        timer_free(n->fail_timer);
        g_rand_free(n->fail_rand);
    }
    femu_dataplane_stop(n);
    qemu_mutex_lock(&n->lock);
    femu_ctrl_reset_locked(n);
    qemu_mutex_unlock(&n->lock);
    deadline_heap_destroy(&n->timed);
    qemu_mutex_destroy(&n->lock);
    femu_ns_destroy(n);
    femu_backend_release(n);
    femu_free_state(n);
    msix_uninit_exclusive_bar(pci_dev);
}

static void femu_reset(DeviceState *dev)
{
    FemuCtrl *n = FEMU(dev);

    femu_lock(n);
    if (n->power_lost) {
        /* power back: recovery first, so that the reset's own work sees its result */
        femu_ns_power_on(n);
        qatomic_set(&n->power_lost, false);
        trace_femu_power_restored();
    }
    femu_ctrl_reset_locked(n);
    n->bar.cc = 0;
    n->bar.csts = 0;
    n->bar.aqa = 0;
    n->bar.asq = 0;
    n->bar.acq = 0;
    n->bar.intms = n->bar.intmc = 0;
    femu_unlock(n);
    femu_dataplane_reset(n);
    if (n->fail_timer) {
        /* intervals count from power-on: what follows a reset does not depend on before */
        femu_fail_arm(n);
    }
    n->intx_level = false;
    pci_irq_deassert(PCI_DEVICE(n));
}

/* Queues and in-flight commands live in the device thread: refuse migration and savevm. */
static const VMStateDescription femu_vmstate = {
    .name = "femu",
    .unmigratable = 1,
};

/* lba_index is a uint8 that remembers whether it was given (whitebox's lsec_size decides
 * the LBA size when it was not). */
static void lba_index_get(Object *obj, Visitor *v, const char *name, void *opaque,
                          Error **errp)
{
    visit_type_uint8(v, name, &FEMU(obj)->lba_index, errp);
}

static void lba_index_set(Object *obj, Visitor *v, const char *name, void *opaque,
                          Error **errp)
{
    FemuCtrl *n = FEMU(obj);

    if (visit_type_uint8(v, name, &n->lba_index, errp)) {
        n->lba_index_given = true;
    }
}

static const PropertyInfo femu_prop_lba_index = {
    .type = "uint8",
    .description = "LBA size: 0 = 512 bytes, 1 = 4096 bytes. Not given: 0, or whitebox "
                   "(femu_mode=0) takes it from lsec_size",
    .get = lba_index_get,
    .set = lba_index_set,
};

/* The controller's own properties; the flash's and each kind's are added to them. */
static const Property femu_ctrl_props[] = {
    DEFINE_PROP_STRING("serial", FemuCtrl, serial),
    FEMU_LAYOUT_PROPS(FEMU_QDEV_ITEM, FemuCtrl)
    DEFINE_PROP_UINT32("queues", FemuCtrl, nr_io_queues, 8),
    DEFINE_PROP_UINT32("entries", FemuCtrl, max_q_ents, 2048),
    DEFINE_PROP("lba_index", FemuCtrl, lba_index, femu_prop_lba_index, uint8_t),
    DEFINE_PROP_UINT8("aerl", FemuCtrl, aerl, 3),
    DEFINE_PROP_UINT8("elpe", FemuCtrl, elpe, 3),
    DEFINE_PROP_UINT32("poll_idle_us", FemuCtrl, poll_idle_us, 50),
    DEFINE_PROP_STRING("dataplane", FemuCtrl, dataplane),
    DEFINE_PROP_UINT32("plp_fail_interval_ms", FemuCtrl, fail_interval_ms, 0),
    DEFINE_PROP_UINT32("plp_fail_prob", FemuCtrl, fail_prob, 0),
    DEFINE_PROP_UINT32("plp_fail_seed", FemuCtrl, fail_seed, 1),
    DEFINE_PROP_STRING("x-crash-at", FemuCtrl, crash_at),
    DEFINE_PROP_LINK("memdev", FemuCtrl, memdev, TYPE_MEMORY_BACKEND, HostMemoryBackend *),
};

static const Property femu_frontend_props[] = {
    FEMU_FRONTEND_PROPS(FEMU_QDEV_ITEM, FemuFrontendConfig)
};

static Property *femu_props;
static size_t femu_nr_props;

static void femu_instance_init(Object *obj)
{
    object_property_add(obj, "stats", "FemuStats", femu_stats_get, NULL, NULL, NULL);
    object_property_add_bool(obj, "power-cut", femu_power_cut_get, femu_power_cut_set);
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
    device_class_set_props_n(dc, femu_props, femu_nr_props);
    femu_ns_kind_describe_props(oc);
    object_class_property_set_description(oc, "dataplane",
        "thread (default): commands run on a device thread in host time; main-loop: in "
        "QEMU's main loop in virtual time (deterministic under qtest, for the fuzzer)");
    object_class_property_set_description(oc, "pcie_gen",
        "0 (default): no host link model; 1..5: PCIe generation, whose lanes carry read "
        "data to the host and write data to the device at its rate (x time_scale)");
    object_class_property_set_description(oc, "pcie_lanes", "1, 2, 4 (default), 8, 16");
    object_class_property_set_description(oc, "fw_cores",
        "0 (default): no controller model; 1..64 firmware cores, each I/O command taking "
        "one for fw_cmd_ns");
    object_class_property_set_description(oc, "fw_cmd_ns",
        "firmware time per I/O command, 0..1000000000 ns (x time_scale)");
    object_class_property_set_description(oc, "nand_sched",
        "backfill (default): each flash operation takes the first idle gap of its chip and "
        "channel that fits it; fifo: it waits for their latest booking (the first model)");
    for (size_t i = 0; femu_flash_prop_help[i][0]; i++) {
        object_class_property_set_description(oc, femu_flash_prop_help[i][0],
                                              femu_flash_prop_help[i][1]);
    }
    device_class_set_legacy_reset(dc, femu_reset);
}

static TypeInfo femu_info = {
    .name = TYPE_FEMU,
    .parent = TYPE_PCI_DEVICE,
    .instance_init = femu_instance_init,
    .class_init = femu_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { }
    },
};

/*
 * The kinds registered themselves before this runs: their parameters go after FemuCtrl in
 * the device object, and their properties join the controller's and the flash's.
 */
static void femu_register_types(void)
{
    size_t nr_kind_props, k = 0;
    g_autofree Property *kind_props = NULL;

    femu_info.instance_size = femu_ns_kind_layout(sizeof(FemuCtrl));
    kind_props = femu_ns_kind_props(&nr_kind_props);
    femu_nr_props = ARRAY_SIZE(femu_ctrl_props) + ARRAY_SIZE(femu_frontend_props) +
                    femu_flash_nr_props + femu_sra_nr_props + nr_kind_props;
    femu_props = g_new0(Property, femu_nr_props);
    for (size_t i = 0; i < ARRAY_SIZE(femu_ctrl_props); i++) {
        femu_props[k++] = femu_ctrl_props[i];
    }
    for (size_t i = 0; i < ARRAY_SIZE(femu_frontend_props); i++) {
        femu_props[k] = femu_frontend_props[i];
        femu_props[k++].offset += offsetof(FemuCtrl, frontend_cfg);
    }
    for (size_t i = 0; i < femu_flash_nr_props; i++) {
        femu_props[k] = femu_flash_props[i];
        femu_props[k++].offset += offsetof(FemuCtrl, flash);
    }
    for (size_t i = 0; i < femu_sra_nr_props; i++) {
        femu_props[k] = femu_sra_props[i];
        femu_props[k++].offset += offsetof(FemuCtrl, sra);
    }
    for (size_t i = 0; i < nr_kind_props; i++) {
        femu_props[k++] = kind_props[i];
    }
    type_register_static(&femu_info);
}

type_init(femu_register_types)
