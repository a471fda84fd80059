/*
 * Admin command set. Every handler returns an NVMe status (without the DNR bit, which the
 * dispatcher adds); NVME_NO_COMPLETE means the command is held (an AER).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "hw/pci/msix.h"
#include "femu.h"
#include "trace.h"

#define FEMU_TEMPERATURE_K  310     /* what the composite sensor reads: 37 C */
#define FEMU_WCTEMP_K       343
#define FEMU_CCTEMP_K       358
#define NVME_FID_NOT_SAVEABLE 0x010d

static const char *model_name(FemuCtrl *n)
{
    const FemuNsKind *k = femu_ctrl_kind(n);
    return k && !n->ns_types ? k->model_name : "FEMU Multi-Mode SSD Controller";
}

static bool first_of_its_kind(FemuCtrl *n, uint32_t i)
{
    for (uint32_t j = 0; j < i; j++) {
        if (n->ns_kind[j] == n->ns_kind[i]) {
            return false;
        }
    }
    return true;
}

/* A controller-scoped log page or feature of a kind present (FEMU_KIND_PASS: none). */
static uint16_t kind_ctrl_cmd(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd, bool set,
                              uint8_t lid, uint64_t off, uint64_t len)
{
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        const FemuNsKind *k = n->ns_kind[i];
        uint16_t status = FEMU_KIND_PASS;

        if (!first_of_its_kind(n, i)) {
            continue;
        }
        if (cmd->opcode == NVME_ADM_CMD_GET_LOG_PAGE && k->ctrl_get_log) {
            status = k->ctrl_get_log(n, cmd, lid, off, len);
        } else if (cmd->opcode != NVME_ADM_CMD_GET_LOG_PAGE && k->ctrl_feature) {
            status = k->ctrl_feature(n, req, cmd, set);
        }
        if (status != FEMU_KIND_PASS) {
            return status;
        }
    }
    return FEMU_KIND_PASS;
}

void femu_init_id_ctrl(FemuCtrl *n)
{
    NvmeIdCtrl *id = &n->id_ctrl;
    g_autofree char *nqn = g_strdup_printf("nqn.2024-01.io.femu:%s", n->serial);

    memset(id, 0, sizeof(*id));
    /* the PCI vendor; the subsystem stays QEMU's, as in PCI config space */
    id->vid = cpu_to_le16(pci_get_word(n->parent_obj.config + PCI_VENDOR_ID));
    id->ssvid = cpu_to_le16(PCI_VENDOR_ID_REDHAT);
    strpadcpy((char *)id->sn, sizeof(id->sn), n->serial, ' ');
    strpadcpy((char *)id->mn, sizeof(id->mn), model_name(n), ' ');
    strpadcpy((char *)id->fr, sizeof(id->fr), "1.0", ' ');
    id->rab = 6;
    id->ieee[0] = 0x00;     /* QEMU's OUI 52:54:00, least significant byte first */
    id->ieee[1] = 0x54;
    id->ieee[2] = 0x52;
    id->cmic = 0;           /* one controller: Linux shows /dev/nvme0n1 directly */
    id->mdts = n->mdts;
    id->cntlid = cpu_to_le16(1);
    id->ver = cpu_to_le32(n->bar.vs);
    id->cntrltype = 1;      /* I/O controller */
    id->oacs = cpu_to_le16(NVME_OACS_DBCS);
    id->acl = 3;
    id->aerl = n->aerl;
    id->frmw = (1 << 1) | NVME_FRMW_SLOT1_RO;
    id->lpa = NVME_LPA_NS_SMART | NVME_LPA_CSE | NVME_LPA_EXTENDED;
    id->elpe = n->elpe;
    id->npss = 0;
    id->wctemp = cpu_to_le16(FEMU_WCTEMP_K);
    id->cctemp = cpu_to_le16(FEMU_CCTEMP_K);
    id->sqes = (6 << 4) | 6;
    id->cqes = (4 << 4) | 4;
    id->nn = cpu_to_le32(n->num_namespaces);
    id->oncs = cpu_to_le16(NVME_ONCS_COMPARE | NVME_ONCS_DSM | NVME_ONCS_WRITE_ZEROES |
                           NVME_ONCS_FEATURES);
    id->vwc = n->vwc ? (NVME_VWC_PRESENT | NVME_VWC_NSID_BROADCAST_SUPPORT) : 0;
    id->sgls = cpu_to_le32(NVME_CTRL_SGLS_SUPPORT_NO_ALIGN | NVME_CTRL_SGLS_EXCESS_LENGTH);
    pstrcpy((char *)id->subnqn, sizeof(id->subnqn), nqn);
    id->psd[0].mp = cpu_to_le16(2500);      /* 25 W, in 0.01 W */
    id->psd[0].enlat = cpu_to_le32(16);
    id->psd[0].exlat = cpu_to_le32(4);
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        if (n->ns_kind[i]->id_ctrl && first_of_its_kind(n, i)) {
            n->ns_kind[i]->id_ctrl(n, id);
        }
    }
}

void femu_record_error(FemuCtrl *n, FemuRequest *req)
{
    uint32_t slots = n->elpe + 1;
    NvmeErrorLog *e;

    /* newest first */
    memmove(&n->error_log[1], &n->error_log[0], (slots - 1) * sizeof(*e));
    e = &n->error_log[0];
    memset(e, 0, sizeof(*e));
    e->error_count = cpu_to_le64(++n->error_count);
    e->sqid = cpu_to_le16(req->sq->sqid);
    e->cid = req->cqe.cid;
    e->status_field = cpu_to_le16(le16_to_cpu(req->cqe.status) << 1);
    e->param_error_location = cpu_to_le16(0xffff);
    e->lba = cpu_to_le64(req->slba);
    e->nsid = cpu_to_le32(req->nsid);
}

/* ---- queues ---- */

static uint16_t create_cq(FemuCtrl *n, const NvmeCmd *cmd)
{
    const NvmeCreateCq *c = (const NvmeCreateCq *)cmd;
    uint16_t cqid = le16_to_cpu(c->cqid), vector = le16_to_cpu(c->irq_vector);
    uint16_t flags = le16_to_cpu(c->cq_flags);
    uint32_t qsize = le16_to_cpu(c->qsize) + 1;
    uint64_t addr = le64_to_cpu(c->prp1);

    if (!cqid || cqid > n->nr_io_queues || n->cq[cqid]) {
        return NVME_INVALID_QID;
    }
    if (qsize < 2 || qsize > NVME_CAP_MQES(n->bar.cap) + 1) {
        return NVME_MAX_QSIZE_EXCEEDED;
    }
    if (!NVME_CQ_FLAGS_PC(flags) || (addr & (n->page_size - 1)) || !addr) {
        return NVME_INVALID_FIELD;
    }
    if (NVME_CQ_FLAGS_IEN(flags) && vector > n->nr_io_queues) {
        return NVME_INVALID_IRQ_VECTOR;
    }
    if (NVME_CC_IOCQES(n->bar.cc) != 4 ||
        !femu_dma_in_ram(n, addr, (uint64_t)qsize * sizeof(NvmeCqe), true)) {
        return NVME_INVALID_FIELD;
    }
    femu_cq_new(n, cqid, vector, NVME_CQ_FLAGS_IEN(flags), qsize, addr);
    return NVME_SUCCESS;
}

static uint16_t create_sq(FemuCtrl *n, const NvmeCmd *cmd)
{
    const NvmeCreateSq *c = (const NvmeCreateSq *)cmd;
    uint16_t sqid = le16_to_cpu(c->sqid), cqid = le16_to_cpu(c->cqid);
    uint16_t flags = le16_to_cpu(c->sq_flags);
    uint32_t qsize = le16_to_cpu(c->qsize) + 1;
    uint64_t addr = le64_to_cpu(c->prp1);

    if (!sqid || sqid > n->nr_io_queues || n->sq[sqid]) {
        return NVME_INVALID_QID;
    }
    if (!cqid || cqid > n->nr_io_queues || !n->cq[cqid]) {
        return NVME_INVALID_CQID;
    }
    if (qsize < 2 || qsize > NVME_CAP_MQES(n->bar.cap) + 1) {
        return NVME_MAX_QSIZE_EXCEEDED;
    }
    if (!NVME_SQ_FLAGS_PC(flags) || (addr & (n->page_size - 1)) || !addr) {
        return NVME_INVALID_FIELD;
    }
    if (NVME_CC_IOSQES(n->bar.cc) != 6 ||
        !femu_dma_in_ram(n, addr, (uint64_t)qsize * sizeof(NvmeCmd), false)) {
        return NVME_INVALID_FIELD;
    }
    femu_sq_new(n, sqid, cqid, qsize, addr);
    return NVME_SUCCESS;
}

static uint16_t delete_sq(FemuCtrl *n, const NvmeCmd *cmd)
{
    uint16_t qid = le16_to_cpu(((const NvmeDeleteQ *)cmd)->qid);

    if (!qid || qid > n->nr_io_queues || !n->sq[qid]) {
        return NVME_INVALID_QID;
    }
    femu_sq_free(n, qid, true);
    return NVME_SUCCESS;
}

static uint16_t delete_cq(FemuCtrl *n, const NvmeCmd *cmd)
{
    uint16_t qid = le16_to_cpu(((const NvmeDeleteQ *)cmd)->qid);

    if (!qid || qid > n->nr_io_queues || !n->cq[qid]) {
        return NVME_INVALID_QID;
    }
    if (!QTAILQ_EMPTY(&n->cq[qid]->sqs)) {
        return NVME_INVALID_QUEUE_DEL;
    }
    femu_cq_free(n, qid);
    return NVME_SUCCESS;
}

/* ---- identify ---- */

static void fill_id_ns(FemuCtrl *n, FemuNamespace *ns, NvmeIdNs *id)
{
    uint64_t bytes = ns->nlbas << ns->lba_shift;

    id->nsze = id->ncap = id->nuse = cpu_to_le64(ns->nlbas);
    id->nlbaf = 1;                          /* two formats, 0-based */
    id->flbas = n->lba_index;
    id->lbaf[0] = (NvmeLBAF){ .ds = 9, .rp = 1 };
    id->lbaf[1] = (NvmeLBAF){ .ds = 12, .rp = 0 };
    /* deallocated blocks read as zeroes; Write Zeroes may deallocate */
    id->dlfeat = NVME_ID_NS_DLFEAT_READ_BEHAVIOR_ZEROES | 0x08;
    if (ns->kind->dulbe) {
        id->nsfeat |= 1 << 2;     /* DAE: DULBE supported */
    }
    stq_le_p(id->nvmcap, bytes);
    id->endgid = cpu_to_le16(ns->endgid);
    memcpy(id->nguid, ns->nguid, sizeof(id->nguid));
    id->eui64 = ns->eui64;
}

static uint16_t identify(FemuCtrl *n, const NvmeCmd *cmd)
{
    const NvmeIdentify *c = (const NvmeIdentify *)cmd;
    uint32_t nsid = le32_to_cpu(c->nsid);
    g_autofree uint8_t *buf = g_malloc0(NVME_IDENTIFY_DATA_SIZE);
    FemuNamespace *ns = femu_ns(n, nsid);
    bool nsid_valid = nsid && nsid <= n->num_namespaces;

    trace_femu_identify(c->cns, nsid, c->csi);
    switch (c->cns) {
    case NVME_ID_CNS_CTRL:
        memcpy(buf, &n->id_ctrl, sizeof(n->id_ctrl));
        break;
    case NVME_ID_CNS_NS:
        if (!nsid_valid) {
            return NVME_INVALID_NSID;
        }
        if (ns) {       /* an inactive namespace reads as zeroes */
            fill_id_ns(n, ns, (NvmeIdNs *)buf);
        }
        break;
    case NVME_ID_CNS_CS_NS:
        if (!nsid_valid) {
            return NVME_INVALID_NSID;
        }
        if (c->csi != NVME_CSI_NVM && !femu_csi_kind(n, c->csi)) {
            return NVME_INVALID_FIELD;
        }
        if (ns && ns->csi != c->csi) {
            return NVME_INVALID_FIELD;  /* the namespace is not of that command set */
        }
        if (ns && ns->kind->identify_ns) {
            ns->kind->identify_ns(n, ns, buf);
        }
        break;      /* NVM: no protection information, all zero */
    case NVME_ID_CNS_CS_CTRL: {
        const FemuNsKind *k = femu_csi_kind(n, c->csi);
        if (k && k->identify_ctrl) {
            k->identify_ctrl(n, buf);
        } else if (c->csi != NVME_CSI_NVM) {
            return NVME_INVALID_FIELD;
        }
        break;      /* NVM: no Verify/Write Zeroes/DSM size limits beyond MDTS */
    }
    case NVME_ID_CNS_CS_NS_ACTIVE_LIST:
    case NVME_ID_CNS_NS_ACTIVE_LIST: {
        uint32_t *list = (uint32_t *)buf, k = 0;
        bool by_csi = c->cns == NVME_ID_CNS_CS_NS_ACTIVE_LIST;
        if (by_csi && c->csi != NVME_CSI_NVM && !femu_csi_kind(n, c->csi)) {
            return NVME_INVALID_FIELD;
        }
        if (nsid >= NVME_NSID_BROADCAST - 1) {
            return NVME_INVALID_NSID;
        }
        for (uint32_t i = nsid + 1; i <= n->num_namespaces && k < 1024; i++) {
            FemuNamespace *a = femu_ns(n, i);
            if (a && (!by_csi || a->csi == c->csi)) {
                list[k++] = cpu_to_le32(i);
            }
        }
        break;
    }
    case NVME_ID_CNS_NS_DESCR_LIST: {
        uint8_t *p = buf;
        if (!ns) {
            return NVME_INVALID_NSID;
        }
        *(NvmeIdNsDescr *)p = (NvmeIdNsDescr){ NVME_NIDT_EUI64, NVME_NIDL_EUI64 };
        memcpy(p + 4, &ns->eui64, NVME_NIDL_EUI64);
        p += 4 + NVME_NIDL_EUI64;
        *(NvmeIdNsDescr *)p = (NvmeIdNsDescr){ NVME_NIDT_NGUID, NVME_NIDL_NGUID };
        memcpy(p + 4, ns->nguid, NVME_NIDL_NGUID);
        p += 4 + NVME_NIDL_NGUID;
        *(NvmeIdNsDescr *)p = (NvmeIdNsDescr){ NVME_NIDT_UUID, NVME_NIDL_UUID };
        memcpy(p + 4, ns->uuid, NVME_NIDL_UUID);
        p += 4 + NVME_NIDL_UUID;
        *(NvmeIdNsDescr *)p = (NvmeIdNsDescr){ NVME_NIDT_CSI, NVME_NIDL_CSI };
        p[4] = ns->csi;
        break;
    }
    case NVME_ID_CNS_CS_IND_NS: {
        NvmeIdNsInd *ind = (NvmeIdNsInd *)buf;
        if (!ns) {
            return NVME_INVALID_NSID;
        }
        ind->nstat = NVME_ID_NS_IND_NSTAT_NRDY;     /* bit 0: namespace ready */
        break;
    }
    case NVME_ID_CNS_ENDURANCE_GROUP_LIST: {
        /*
         * The groups from CDW11.ENDGID up, in increasing order, after their count: those
         * Identify Controller announces (CTRATT.ENDGRPS, 1..ENDGIDMAX).
         */
        uint16_t *list = (uint16_t *)buf, k = 0;
        uint32_t from = MAX(le32_to_cpu(cmd->cdw11) & 0xffff, 1);

        if (!(le32_to_cpu(n->id_ctrl.ctratt) & NVME_CTRATT_ENDGRPS)) {
            return NVME_INVALID_FIELD;
        }
        for (uint32_t g = from; g <= le16_to_cpu(n->id_ctrl.endgidmax) && k < 2047; g++) {
            list[1 + k++] = cpu_to_le16(g);
        }
        list[0] = cpu_to_le16(k);
        break;
    }
    case NVME_ID_CNS_IO_COMMAND_SET: {
        /* one command set combination: NVM, plus those of the namespaces */
        uint64_t sets = 1ULL << NVME_CSI_NVM;
        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            sets |= 1ULL << n->ns[i].csi;
        }
        stq_le_p(buf, sets);
        break;
    }
    default:
        return NVME_INVALID_FIELD;
    }
    return femu_copy_dptr(n, cmd, NVME_IDENTIFY_DATA_SIZE, buf, NVME_IDENTIFY_DATA_SIZE, true,
                          true);
}

/* ---- log pages ---- */

static void fill_smart(FemuCtrl *n, FemuNamespace *only, NvmeSmartLog *log)
{
    IoCounters io = { 0 };
    uint64_t hours = (femu_now_ns(n) - n->power_on_ns) / (3600ULL * NANOSECONDS_PER_SECOND);

    if (only) {
        io = only->io;
    } else {
        for (uint32_t i = 0; i < n->num_namespaces; i++) {
            io_counters_add(&io, &n->ns[i].io);
        }
    }
    log->critical_warning = n->temperature_warning;
    log->temperature = cpu_to_le16(FEMU_TEMPERATURE_K);
    log->available_spare = 100;
    log->available_spare_threshold = 10;
    log->percentage_used = 0;
    log->data_units_read[0] = cpu_to_le64(io_counters_data_units(io.bytes_read));
    log->data_units_written[0] = cpu_to_le64(io_counters_data_units(io.bytes_written));
    log->host_read_commands[0] = cpu_to_le64(io.read_cmds);
    log->host_write_commands[0] = cpu_to_le64(io.write_cmds);
    log->power_cycles[0] = cpu_to_le64(1);
    log->power_on_hours[0] = cpu_to_le64(hours);
    log->number_of_error_log_entries[0] = cpu_to_le64(n->error_count);
}

static void fill_effects(FemuCtrl *n, uint8_t csi, NvmeEffectsLog *log)
{
    static const uint8_t admin[] = {
        NVME_ADM_CMD_DELETE_SQ, NVME_ADM_CMD_CREATE_SQ, NVME_ADM_CMD_GET_LOG_PAGE,
        NVME_ADM_CMD_DELETE_CQ, NVME_ADM_CMD_CREATE_CQ, NVME_ADM_CMD_IDENTIFY,
        NVME_ADM_CMD_ABORT, NVME_ADM_CMD_SET_FEATURES, NVME_ADM_CMD_GET_FEATURES,
        NVME_ADM_CMD_ASYNC_EV_REQ, NVME_ADM_CMD_DBBUF_CONFIG,
    };
    for (size_t i = 0; i < ARRAY_SIZE(admin); i++) {
        log->acs[admin[i]] = cpu_to_le32(NVME_CMD_EFF_CSUPP);
    }
    /* every command set builds on the NVM commands; kinds add their own */
    femu_nvm_effects(log);
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        const FemuNsKind *k = n->ns[i].kind;
        bool seen = false;
        for (uint32_t j = 0; j < i; j++) {
            seen |= n->ns[j].kind == k;
        }
        if (!seen && n->ns[i].csi == csi && k->effects) {
            k->effects(n, log);
        }
    }
}

static void append_stat(void *opaque, const char *name, uint64_t value)
{
    g_string_append_printf(opaque, "%s %" PRIu64 "\n", name, value);
}

/* Vendor log FEMU_LOG_MEDIA_STATS: every statistic as "name value" lines. */
static uint8_t *media_stats_log(FemuCtrl *n, size_t *size)
{
    const FemuNsKind *k = femu_ctrl_kind(n);
    GString *text = g_string_new(NULL);
    size_t used;

    g_string_append_printf(text, "mode %s\n", k ? k->name : "mixed");
    femu_stats_emit(n, append_stat, text);
    used = text->len;
    *size = ROUND_UP(used + 1, 4096);
    g_string_set_size(text, *size);
    memset(text->str + used, 0, *size - used);     /* set_size leaves the tail undefined */
    return (uint8_t *)g_string_free(text, false);
}

static uint16_t get_log_page(FemuCtrl *n, const NvmeCmd *cmd)
{
    uint32_t dw10 = le32_to_cpu(cmd->cdw10), dw11 = le32_to_cpu(cmd->cdw11);
    uint8_t lid = dw10 & 0xff;
    bool rae = dw10 & (1u << 15);
    uint64_t numd = ((uint64_t)(dw11 & 0xffff) << 16 | (dw10 >> 16)) + 1;
    uint64_t len = numd * 4;
    uint64_t off = (uint64_t)le32_to_cpu(cmd->cdw13) << 32 | le32_to_cpu(cmd->cdw12);
    uint8_t csi = le32_to_cpu(cmd->cdw14) >> 24;
    uint32_t nsid = le32_to_cpu(cmd->nsid);
    g_autofree uint8_t *log = NULL;
    FemuNamespace *ns;
    size_t size;

    trace_femu_get_log(lid, len, off);
    if (off & 3) {
        return NVME_INVALID_FIELD;
    }
    ns = femu_ns(n, nsid);
    if (ns && ns->kind->get_log) {
        uint16_t status = ns->kind->get_log(n, ns, cmd, lid, off, len);
        if (status != NVME_INVALID_LOG_ID) {
            return status;
        }
    }
    {
        uint16_t status = kind_ctrl_cmd(n, NULL, cmd, false, lid, off, len);
        if (status != FEMU_KIND_PASS) {
            return status;
        }
    }
    switch (lid) {
    case NVME_LOG_ERROR_INFO:
        size = (n->elpe + 1) * sizeof(NvmeErrorLog);
        log = g_memdup2(n->error_log, size);
        if (!rae) {
            femu_aer_unmask(n, NVME_AER_TYPE_ERROR);
        }
        break;
    case NVME_LOG_SMART_INFO: {
        ns = NULL;
        if (nsid && nsid != NVME_NSID_BROADCAST && !(ns = femu_ns(n, nsid))) {
            return NVME_INVALID_NSID;
        }
        size = sizeof(NvmeSmartLog);
        log = g_malloc0(size);
        fill_smart(n, ns, (NvmeSmartLog *)log);
        if (!rae) {
            femu_aer_unmask(n, NVME_AER_TYPE_SMART);
        }
        break;
    }
    case NVME_LOG_FW_SLOT_INFO: {
        NvmeFwSlotInfoLog *fw;
        size = sizeof(*fw);
        log = g_malloc0(size);
        fw = (NvmeFwSlotInfoLog *)log;
        fw->afi = 1;
        memcpy(fw->frs1, n->id_ctrl.fr, sizeof(fw->frs1));
        break;
    }
    case NVME_LOG_CMD_EFFECTS:
        if (csi != NVME_CSI_NVM && !femu_csi_kind(n, csi)) {
            return NVME_INVALID_FIELD;
        }
        size = sizeof(NvmeEffectsLog);
        log = g_malloc0(size);
        fill_effects(n, csi, (NvmeEffectsLog *)log);
        break;
    case FEMU_LOG_MEDIA_STATS:
        log = media_stats_log(n, &size);
        break;
    default:
        return NVME_INVALID_LOG_ID;
    }
    if (off > size) {
        return NVME_INVALID_FIELD;
    }
    return femu_copy_dptr(n, cmd, len, log + off, MIN(len, size - off), true, true);
}

/* ---- features ---- */

static void check_temperature(FemuCtrl *n)
{
    FemuFeatures *f = &n->features;
    bool hot = FEMU_TEMPERATURE_K > f->temp_over ||
               (f->temp_under && FEMU_TEMPERATURE_K < f->temp_under);

    if (hot && !(n->temperature_warning & NVME_SMART_TEMPERATURE)) {
        n->temperature_warning |= NVME_SMART_TEMPERATURE;
        if (NVME_AEC_SMART(f->async_config) & NVME_SMART_TEMPERATURE) {
            femu_post_aer(n, NVME_AER_TYPE_SMART, NVME_AER_INFO_SMART_TEMP_THRESH,
                          NVME_LOG_SMART_INFO);
        }
    } else if (!hot) {
        n->temperature_warning &= ~NVME_SMART_TEMPERATURE;
    }
}

static bool feature_supported(FemuCtrl *n, uint8_t fid)
{
    switch (fid) {
    case NVME_ARBITRATION:
    case NVME_POWER_MANAGEMENT:
    case NVME_TEMPERATURE_THRESHOLD:
    case NVME_ERROR_RECOVERY:
    case NVME_NUMBER_OF_QUEUES:
    case NVME_INTERRUPT_COALESCING:
    case NVME_INTERRUPT_VECTOR_CONF:
    case NVME_WRITE_ATOMICITY:
    case NVME_ASYNCHRONOUS_EVENT_CONF:
    case NVME_COMMAND_SET_PROFILE:
        return true;
    case NVME_VOLATILE_WRITE_CACHE:
        return n->vwc;
    default:
        return false;
    }
}

static uint16_t get_features(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd)
{
    uint32_t dw10 = le32_to_cpu(cmd->cdw10), dw11 = le32_to_cpu(cmd->cdw11);
    uint8_t fid = NVME_GETSETFEAT_FID(dw10), sel = NVME_GETFEAT_SELECT(dw10);
    FemuFeatures *f = &n->features;
    FemuFeatures def = { .temp_over = 343, .vwc = n->vwc, .arbitration = NVME_ARB_AB_NOLIMIT };
    uint32_t result = 0;

    trace_femu_get_feature(fid, sel);
    result = kind_ctrl_cmd(n, req, cmd, false, 0, 0, 0);
    if (result != FEMU_KIND_PASS) {
        return result;
    }
    result = 0;
    if (!feature_supported(n, fid) || sel > NVME_GETFEAT_SELECT_CAP) {
        return NVME_INVALID_FIELD;
    }
    if (sel == NVME_GETFEAT_SELECT_CAP) {
        /* everything is changeable, nothing saveable or namespace specific */
        req->cqe.result = cpu_to_le32(fid == NVME_NUMBER_OF_QUEUES ? 0 : NVME_FEAT_CAP_CHANGE);
        return NVME_SUCCESS;
    }
    if (sel != NVME_GETFEAT_SELECT_CURRENT) {
        f = &def;   /* not saveable: saved values are the defaults */
    }
    switch (fid) {
    case NVME_ARBITRATION:
        result = f->arbitration;
        break;
    case NVME_POWER_MANAGEMENT:
        result = f->power_mgmt;
        break;
    case NVME_TEMPERATURE_THRESHOLD:
        if (NVME_TEMP_TMPSEL(dw11) != NVME_TEMP_TMPSEL_COMPOSITE ||
            NVME_TEMP_THSEL(dw11) > NVME_TEMP_THSEL_UNDER) {
            return NVME_INVALID_FIELD;
        }
        result = NVME_TEMP_THSEL(dw11) == NVME_TEMP_THSEL_OVER ? f->temp_over : f->temp_under;
        break;
    case NVME_ERROR_RECOVERY: {
        FemuNamespace *ns = femu_ns(n, le32_to_cpu(cmd->nsid));
        result = f->err_rec | (ns && ns->dulbe && f != &def ? FEMU_ERR_REC_DULBE : 0);
        break;
    }
    case NVME_VOLATILE_WRITE_CACHE:
        result = f->vwc;
        break;
    case NVME_NUMBER_OF_QUEUES:
        result = (n->nr_io_queues - 1) << 16 | (n->nr_io_queues - 1);
        break;
    case NVME_INTERRUPT_COALESCING:
        result = f->int_coalescing;
        break;
    case NVME_INTERRUPT_VECTOR_CONF: {
        uint16_t iv = dw11 & 0xffff;
        if (iv > n->nr_io_queues) {
            return NVME_INVALID_FIELD;
        }
        result = sel == NVME_GETFEAT_SELECT_CURRENT ? n->features.int_vector_config[iv] : iv;
        break;
    }
    case NVME_WRITE_ATOMICITY:
        result = f->write_atomicity;
        break;
    case NVME_ASYNCHRONOUS_EVENT_CONF:
        result = f->async_config;
        break;
    case NVME_COMMAND_SET_PROFILE:
        result = f->iocs_profile;
        break;
    }
    req->cqe.result = cpu_to_le32(result);
    return NVME_SUCCESS;
}

/*
 * DULBE of namespace nsid (or of all, broadcast): only kinds whose unwritten blocks can
 * fail take it; elsewhere unwritten blocks read as zeroes.
 */
static uint16_t set_dulbe(FemuCtrl *n, uint32_t nsid, bool on)
{
    bool all = nsid == NVME_NSID_BROADCAST;
    FemuNamespace *ns = all ? NULL : femu_ns(n, nsid);

    if (!all && !ns) {
        return on ? NVME_INVALID_FIELD : NVME_SUCCESS;
    }
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        FemuNamespace *x = &n->ns[i];
        if ((all || x == ns) && on && !x->kind->dulbe) {
            return NVME_INVALID_FIELD;
        }
    }
    for (uint32_t i = 0; i < n->num_namespaces; i++) {
        if (all || &n->ns[i] == ns) {
            n->ns[i].dulbe = on;
        }
    }
    return NVME_SUCCESS;
}

static uint16_t set_features(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd)
{
    uint32_t dw10 = le32_to_cpu(cmd->cdw10), dw11 = le32_to_cpu(cmd->cdw11);
    uint8_t fid = NVME_GETSETFEAT_FID(dw10);
    FemuFeatures *f = &n->features;

    uint16_t kind_status;

    trace_femu_set_feature(fid, dw11);
    kind_status = kind_ctrl_cmd(n, req, cmd, true, 0, 0, 0);
    if (kind_status != FEMU_KIND_PASS) {
        return kind_status;
    }
    if (!feature_supported(n, fid)) {
        return NVME_INVALID_FIELD;
    }
    if (NVME_SETFEAT_SAVE(dw10)) {
        return NVME_FID_NOT_SAVEABLE;
    }
    switch (fid) {
    case NVME_ARBITRATION:
        f->arbitration = dw11;
        break;
    case NVME_POWER_MANAGEMENT:
        if ((dw11 & 0x1f) > n->id_ctrl.npss) {
            return NVME_INVALID_FIELD;
        }
        f->power_mgmt = dw11 & 0xff;
        break;
    case NVME_TEMPERATURE_THRESHOLD:
        if (NVME_TEMP_TMPSEL(dw11) != NVME_TEMP_TMPSEL_COMPOSITE ||
            NVME_TEMP_THSEL(dw11) > NVME_TEMP_THSEL_UNDER) {
            return NVME_INVALID_FIELD;
        }
        if (NVME_TEMP_THSEL(dw11) == NVME_TEMP_THSEL_OVER) {
            f->temp_over = NVME_TEMP_TMPTH(dw11);
        } else {
            f->temp_under = NVME_TEMP_TMPTH(dw11);
        }
        check_temperature(n);
        break;
    case NVME_ERROR_RECOVERY: {
        uint16_t status = set_dulbe(n, le32_to_cpu(cmd->nsid), NVME_ERR_REC_DULBE(dw11));
        if (status) {
            return status;
        }
        f->err_rec = dw11 & ~FEMU_ERR_REC_DULBE;
        break;
    }
    case NVME_VOLATILE_WRITE_CACHE:
        /* the cache turned off is written out; later writes are durable at completion */
        if (f->vwc && !(dw11 & 1)) {
            femu_ns_flush_all(n, femu_now_ns(n));
        }
        f->vwc = dw11 & 1;
        break;
    case NVME_NUMBER_OF_QUEUES:
        if ((dw11 & 0xffff) == 0xffff || (dw11 >> 16) == 0xffff) {
            return NVME_INVALID_FIELD;
        }
        req->cqe.result = cpu_to_le32((n->nr_io_queues - 1) << 16 | (n->nr_io_queues - 1));
        break;
    case NVME_INTERRUPT_COALESCING:
        f->int_coalescing = dw11 & 0xffff;
        break;
    case NVME_INTERRUPT_VECTOR_CONF: {
        uint16_t iv = dw11 & 0xffff;
        if (iv > n->nr_io_queues) {
            return NVME_INVALID_FIELD;
        }
        f->int_vector_config[iv] = dw11 & 0x1ffff;
        break;
    }
    case NVME_WRITE_ATOMICITY:
        f->write_atomicity = dw11 & 1;
        break;
    case NVME_ASYNCHRONOUS_EVENT_CONF:
        f->async_config = dw11;
        check_temperature(n);
        break;
    case NVME_COMMAND_SET_PROFILE:
        if ((dw11 & 0x1ff) != 0) {
            return NVME_INVALID_FIELD;      /* only combination 0 (NVM) exists */
        }
        f->iocs_profile = 0;
        break;
    }
    return NVME_SUCCESS;
}

/* ---- the rest ---- */

static uint16_t abort_cmd(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd)
{
    uint32_t dw10 = le32_to_cpu(cmd->cdw10);
    uint16_t sqid = dw10 & 0xffff, cid = dw10 >> 16;
    FemuSQ *sq = sqid <= n->nr_io_queues ? n->sq[sqid] : NULL;

    req->cqe.result = cpu_to_le32(1);   /* not aborted, unless found below */
    if (!sq) {
        return NVME_SUCCESS;
    }
    /*
     * Only a held AER has had no effect yet. A command waiting for its completion time
     * was executed when it was fetched: it completes as it is, not as aborted.
     */
    for (uint32_t i = 0; i < sq->nr_reqs; i++) {
        FemuRequest *r = &sq->reqs[i];
        if (r != req && le16_to_cpu(r->cqe.cid) == cid && r->state == FEMU_REQ_AER) {
            femu_req_detach(n, r);
            r->cqe.status = cpu_to_le16(NVME_CMD_ABORT_REQ);
            femu_complete(n, r, 0);
            req->cqe.result = 0;
            trace_femu_abort(sqid, cid);
            break;
        }
    }
    return NVME_SUCCESS;
}

/*
 * Directive Send and Receive: the Identify directive, and what the namespace's kind has
 * (fdp: Data Placement, whose state follows the FDP feature, not Directive Send).
 */
static uint16_t directive(FemuCtrl *n, const NvmeCmd *cmd)
{
    uint32_t nsid = le32_to_cpu(cmd->nsid), dw11 = le32_to_cpu(cmd->cdw11);
    uint32_t dw12 = le32_to_cpu(cmd->cdw12), doper = dw11 & 0xff, dtype = (dw11 >> 8) & 0xff;
    FemuNamespace *ns;

    if (!(le16_to_cpu(n->id_ctrl.oacs) & NVME_OACS_DIRECTIVES)) {
        return NVME_INVALID_OPCODE;
    }
    if (nsid == NVME_NSID_BROADCAST) {
        return NVME_INVALID_FIELD;
    }
    if (!(ns = femu_ns(n, nsid))) {
        return NVME_INVALID_NSID;
    }
    if (dtype != 0 || doper != 1) {
        return NVME_INVALID_FIELD;      /* Identify's one operation each way */
    }
    if (cmd->opcode == NVME_ADM_CMD_DIRECTIVE_RECV) {
        uint64_t len = ((uint64_t)le32_to_cpu(cmd->cdw10) + 1) * 4;
        uint8_t buf[4096] = { 0 };

        buf[0] = 1 | ns->directives;                /* supported */
        buf[32] = 1 | ns->directives_enabled;       /* enabled */
        buf[64] = ns->directives;                   /* kept across a controller reset */
        return femu_copy_dptr(n, cmd, len, buf, MIN(len, sizeof(buf)), true, true);
    }
    /* Enable Directive: only the state each type already has */
    dtype = (dw12 >> 8) & 0xff;
    if (dtype && dtype < 8 && (ns->directives & (1u << dtype)) &&
        !!(ns->directives_enabled & (1u << dtype)) == (dw12 & 1)) {
        return NVME_SUCCESS;
    }
    return NVME_INVALID_FIELD;
}

static uint16_t dbbuf_config(FemuCtrl *n, const NvmeCmd *cmd)
{
    uint64_t dbs = le64_to_cpu(cmd->dptr.prp1), eis = le64_to_cpu(cmd->dptr.prp2);
    uint64_t span = 2ULL * FEMU_DB_STRIDE * (n->nr_io_queues + 1);

    if (!dbs || !eis || (dbs & (n->page_size - 1)) || (eis & (n->page_size - 1)) ||
        !femu_dma_in_ram(n, dbs, span, false) || !femu_dma_in_ram(n, eis, span, true)) {
        return NVME_INVALID_FIELD;
    }
    n->dbbuf_dbs = dbs;
    n->dbbuf_eis = eis;
    femu_dbbuf_seed(n);
    trace_femu_dbbuf_config(dbs, eis);
    return NVME_SUCCESS;
}

uint16_t femu_admin_cmd(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd)
{
    if (NVME_CMD_FLAGS_FUSE(cmd->flags)) {
        return NVME_INVALID_FIELD;
    }
    switch (cmd->opcode) {
    case NVME_ADM_CMD_DELETE_SQ:
        return delete_sq(n, cmd);
    case NVME_ADM_CMD_CREATE_SQ:
        return create_sq(n, cmd);
    case NVME_ADM_CMD_GET_LOG_PAGE:
        return get_log_page(n, cmd);
    case NVME_ADM_CMD_DELETE_CQ:
        return delete_cq(n, cmd);
    case NVME_ADM_CMD_CREATE_CQ:
        return create_cq(n, cmd);
    case NVME_ADM_CMD_IDENTIFY:
        return identify(n, cmd);
    case NVME_ADM_CMD_ABORT:
        return abort_cmd(n, req, cmd);
    case NVME_ADM_CMD_SET_FEATURES:
        return set_features(n, req, cmd);
    case NVME_ADM_CMD_GET_FEATURES:
        return get_features(n, req, cmd);
    case NVME_ADM_CMD_ASYNC_EV_REQ:
        if (n->outstanding_aers > n->aerl) {
            return NVME_AER_LIMIT_EXCEEDED;
        }
        femu_aer_hold(n, req);
        return NVME_NO_COMPLETE;
    case NVME_ADM_CMD_DBBUF_CONFIG:
        return dbbuf_config(n, cmd);
    case NVME_ADM_CMD_DIRECTIVE_SEND:
    case NVME_ADM_CMD_DIRECTIVE_RECV:
        return directive(n, cmd);
    default: {
        FemuNamespace *ns = femu_ns(n, le32_to_cpu(cmd->nsid));
        if (ns && ns->kind->admin) {
            return ns->kind->admin(n, req, ns, cmd);
        }
        trace_femu_invalid_opcode(0, cmd->opcode);
        return NVME_INVALID_OPCODE;
    }
    }
}
