/*
 * Data pointers: PRP lists and SGLs turned into scatter lists of guest RAM.
 *
 * Every address a guest gives us is checked to lie in guest RAM before it is touched, so a
 * guest can never make the device read or write anything else (MMIO, ROM, holes), and the
 * device thread never needs the BQL for DMA.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/rcu.h"
#include "exec/memory.h"
#include "femu.h"
#include "trace.h"

static AddressSpace *femu_as(FemuCtrl *n)
{
    return pci_get_address_space(PCI_DEVICE(n));
}

bool femu_dma_in_ram(FemuCtrl *n, dma_addr_t addr, dma_addr_t len, bool to_guest)
{
    AddressSpace *as = femu_as(n);

    if (addr + len < addr) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, plen = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &plen, to_guest,
                                                   MEMTXATTRS_UNSPECIFIED);
        if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (to_guest && memory_region_is_rom(mr)) || plen == 0) {
            trace_femu_dma_outside_ram(addr, len);
            return false;
        }
        addr += plen;
        len -= plen;
    }
    return true;
}

uint16_t femu_dma_from_guest(FemuCtrl *n, dma_addr_t addr, void *buf, dma_addr_t len)
{
    if (!femu_dma_in_ram(n, addr, len, false) ||
        dma_memory_read(femu_as(n), addr, buf, len, MEMTXATTRS_UNSPECIFIED) != MEMTX_OK) {
        return NVME_DATA_TRAS_ERROR;
    }
    return NVME_SUCCESS;
}

uint16_t femu_dma_to_guest(FemuCtrl *n, dma_addr_t addr, const void *buf, dma_addr_t len)
{
    if (!femu_dma_in_ram(n, addr, len, true) ||
        dma_memory_write(femu_as(n), addr, buf, len, MEMTXATTRS_UNSPECIFIED) != MEMTX_OK) {
        return NVME_DATA_TRAS_ERROR;
    }
    return NVME_SUCCESS;
}

/* Appends a segment after checking it is guest RAM; merges it with a contiguous last one. */
static uint16_t sg_add(FemuCtrl *n, QEMUSGList *sg, dma_addr_t addr, dma_addr_t len,
                       bool to_guest)
{
    if (len == 0) {
        return NVME_SUCCESS;
    }
    if (!femu_dma_in_ram(n, addr, len, to_guest)) {
        return NVME_DATA_TRAS_ERROR;
    }
    if (sg->nsg && sg->sg[sg->nsg - 1].base + sg->sg[sg->nsg - 1].len == addr) {
        sg->sg[sg->nsg - 1].len += len;
        sg->size += len;
        return NVME_SUCCESS;
    }
    qemu_sglist_add(sg, addr, len);
    return NVME_SUCCESS;
}

static uint16_t map_prp(FemuCtrl *n, uint64_t prp1, uint64_t prp2, uint64_t len,
                        bool to_guest, QEMUSGList *sg)
{
    const uint64_t psz = n->page_size, mask = psz - 1;
    uint64_t chunk, list;
    uint16_t status;

    if (prp1 & 0x3) {
        return NVME_INVALID_PRP_OFFSET;
    }
    chunk = MIN(len, psz - (prp1 & mask));
    status = sg_add(n, sg, prp1, chunk, to_guest);
    if (status) {
        return status;
    }
    len -= chunk;
    if (len == 0) {
        return NVME_SUCCESS;
    }
    if (len <= psz) {
        /* PRP2 is the second (and last) page itself */
        if (prp2 & mask) {
            return NVME_INVALID_PRP_OFFSET;
        }
        return sg_add(n, sg, prp2, len, to_guest);
    }

    /* PRP2 points to a PRP list; the last entry of a full list page chains to the next */
    list = prp2;
    if (list & 0x7) {
        return NVME_INVALID_PRP_OFFSET;
    }
    while (len) {
        uint64_t slots = (psz - (list & mask)) / sizeof(uint64_t);
        uint64_t pages = DIV_ROUND_UP(len, psz);
        bool chained = pages > slots;
        uint64_t nread = chained ? slots : pages;
        g_autofree uint64_t *ents = g_new(uint64_t, nread);

        status = femu_dma_from_guest(n, list, ents, nread * sizeof(uint64_t));
        if (status) {
            return status;
        }
        for (uint64_t i = 0; i < nread; i++) {
            uint64_t ent = le64_to_cpu(ents[i]);
            if (chained && i == nread - 1) {
                if (ent & 0x7) {
                    return NVME_INVALID_PRP_OFFSET;
                }
                list = ent;
                break;
            }
            if (ent & mask) {
                return NVME_INVALID_PRP_OFFSET;
            }
            chunk = MIN(len, psz);
            status = sg_add(n, sg, ent, chunk, to_guest);
            if (status) {
                return status;
            }
            len -= chunk;
        }
    }
    return NVME_SUCCESS;
}

static uint16_t map_sgl(FemuCtrl *n, const NvmeSglDescriptor *first, uint64_t len,
                        bool to_guest, QEMUSGList *sg)
{
    g_autofree NvmeSglDescriptor *list = g_new(NvmeSglDescriptor, 1);
    uint32_t count = 1, segments = 0;
    bool in_last_segment = false;
    uint16_t status;

    list[0] = *first;
    while (len) {
        NvmeSglDescriptor next = { 0 };
        bool have_next = false;

        for (uint32_t i = 0; i < count && len; i++) {
            NvmeSglDescriptor d = list[i];
            uint8_t type = NVME_SGL_TYPE(d.type);
            uint64_t addr = le64_to_cpu(d.addr);
            uint32_t dlen = le32_to_cpu(d.len);

            if (NVME_SGL_SUBTYPE(d.type) != NVME_SGL_DESCR_SUBTYPE_ADDRESS) {
                return NVME_SGL_DESCR_TYPE_INVALID;
            }
            switch (type) {
            case NVME_SGL_DESCR_TYPE_DATA_BLOCK: {
                uint64_t take = MIN((uint64_t)dlen, len);
                status = sg_add(n, sg, addr, take, to_guest);
                if (status) {
                    return status;
                }
                len -= take;
                break;
            }
            case NVME_SGL_DESCR_TYPE_SEGMENT:
            case NVME_SGL_DESCR_TYPE_LAST_SEGMENT:
                /* a segment pointer ends its list, and a last segment has none */
                if (i != count - 1 || in_last_segment || dlen == 0 ||
                    dlen % sizeof(NvmeSglDescriptor)) {
                    return NVME_INVALID_SGL_SEG_DESCR;
                }
                next = d;
                have_next = true;
                break;
            default:
                return NVME_SGL_DESCR_TYPE_INVALID;
            }
        }
        if (!len) {
            break;
        }
        if (!have_next) {
            return NVME_DATA_SGL_LEN_INVALID;
        }
        if (++segments > FEMU_SGL_MAX_SEGMENTS) {
            return NVME_INVALID_NUM_SGL_DESCRS;
        }
        in_last_segment = NVME_SGL_TYPE(next.type) == NVME_SGL_DESCR_TYPE_LAST_SEGMENT;
        count = le32_to_cpu(next.len) / sizeof(NvmeSglDescriptor);
        if (count > 4096) {
            return NVME_INVALID_NUM_SGL_DESCRS;
        }
        list = g_renew(NvmeSglDescriptor, list, count);
        status = femu_dma_from_guest(n, le64_to_cpu(next.addr), list,
                                     count * sizeof(NvmeSglDescriptor));
        if (status) {
            return status;
        }
    }
    return NVME_SUCCESS;
}

uint16_t femu_map_dptr(FemuCtrl *n, const NvmeCmd *cmd, uint64_t len, bool admin,
                       bool to_guest, QEMUSGList *sg)
{
    uint8_t psdt = NVME_CMD_FLAGS_PSDT(cmd->flags);
    uint16_t status;

    qemu_sglist_init(sg, DEVICE(n), 4, femu_as(n));
    if (psdt == NVME_PSDT_PRP) {
        status = map_prp(n, le64_to_cpu(cmd->dptr.prp1), le64_to_cpu(cmd->dptr.prp2), len,
                         to_guest, sg);
    } else if (admin || psdt > NVME_PSDT_SGL_MPTR_SGL) {
        /* admin commands carry PRPs only (NVMe over PCIe) */
        status = NVME_INVALID_FIELD;
    } else {
        status = map_sgl(n, &cmd->dptr.sgl, len, to_guest, sg);
    }
    if (status) {
        trace_femu_dptr_error(cmd->opcode, psdt, status);
        qemu_sglist_destroy(sg);
    }
    return status;
}

uint16_t femu_sg_to_guest(FemuCtrl *n, QEMUSGList *sg, const void *buf, uint64_t len)
{
    dma_addr_t residual;
    /* dma_buf_read moves device memory (buf) into the guest's scatter list */
    if (dma_buf_read((void *)buf, len, &residual, sg, MEMTXATTRS_UNSPECIFIED) != MEMTX_OK) {
        return NVME_DATA_TRAS_ERROR;
    }
    return NVME_SUCCESS;
}

uint16_t femu_sg_from_guest(FemuCtrl *n, QEMUSGList *sg, void *buf, uint64_t len)
{
    dma_addr_t residual;
    if (dma_buf_write(buf, len, &residual, sg, MEMTXATTRS_UNSPECIFIED) != MEMTX_OK) {
        return NVME_DATA_TRAS_ERROR;
    }
    return NVME_SUCCESS;
}

/* Moves a whole buffer through the command's data pointer in one call. */
uint16_t femu_copy_dptr(FemuCtrl *n, const NvmeCmd *cmd, void *buf, uint64_t len, bool admin,
                        bool to_guest)
{
    QEMUSGList sg;
    uint16_t status = femu_map_dptr(n, cmd, len, admin, to_guest, &sg);
    if (status) {
        return status;
    }
    status = to_guest ? femu_sg_to_guest(n, &sg, buf, len) : femu_sg_from_guest(n, &sg, buf, len);
    qemu_sglist_destroy(&sg);
    return status;
}
