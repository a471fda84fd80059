/*
 * Data pointers: PRP lists and SGLs turned into scatter lists of guest RAM, and the copies
 * between guest RAM and the device.
 *
 * Every copy maps the guest range with dma_memory_map and refuses anything that is not
 * plain RAM at that moment: the check and the access are one step, and the device's bus
 * master address space has no bounce buffer (see femu_dma_setup), so a guest address can
 * never lead the device thread into MMIO dispatch (which would need the BQL) or into host
 * memory outside guest RAM. femu_dma_in_ram is only an early check (e.g. when a queue is
 * created) so that a bad address gets its status before anything else happens.
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

void femu_dma_setup(FemuCtrl *n)
{
    /* without bounce buffers, a mapping of anything but RAM fails instead of dispatching */
    PCI_DEVICE(n)->bus_master_as.max_bounce_buffer_size = 0;
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
        if (!memory_access_is_direct(mr, to_guest, MEMTXATTRS_UNSPECIFIED) || plen == 0) {
            trace_femu_dma_outside_ram(addr, len);
            return false;
        }
        addr += plen;
        len -= plen;
    }
    return true;
}

/* Copies len bytes between buf and guest RAM at addr, piece by mapped piece. */
static uint16_t dma_copy(FemuCtrl *n, dma_addr_t addr, void *buf, dma_addr_t len,
                         bool to_guest)
{
    AddressSpace *as = femu_as(n);
    DMADirection dir = to_guest ? DMA_DIRECTION_FROM_DEVICE : DMA_DIRECTION_TO_DEVICE;
    uint8_t *p = buf;

    if (addr + len < addr) {
        return NVME_DATA_TRAS_ERROR;
    }
    while (len) {
        dma_addr_t plen = len;
        void *mem = dma_memory_map(as, addr, &plen, dir, MEMTXATTRS_UNSPECIFIED);

        if (!mem) {
            trace_femu_dma_outside_ram(addr, len);
            return NVME_DATA_TRAS_ERROR;
        }
        if (to_guest) {
            memcpy(mem, p, plen);
        } else {
            memcpy(p, mem, plen);
        }
        dma_memory_unmap(as, mem, plen, dir, to_guest ? plen : 0);
        addr += plen;
        p += plen;
        len -= plen;
    }
    return NVME_SUCCESS;
}

uint16_t femu_dma_from_guest(FemuCtrl *n, dma_addr_t addr, void *buf, dma_addr_t len)
{
    return dma_copy(n, addr, buf, len, false);
}

uint16_t femu_dma_to_guest(FemuCtrl *n, dma_addr_t addr, const void *buf, dma_addr_t len)
{
    return dma_copy(n, addr, (void *)buf, len, true);
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

/*
 * PRP1/PRP2 of a command whose buffer is buf_len bytes, mapped for its first len bytes.
 * Whether PRP2 is a data page or a list pointer follows from buf_len (the host built the
 * entries for its whole buffer), whatever part of it the device fills.
 */
static uint16_t map_prp(FemuCtrl *n, uint64_t prp1, uint64_t prp2, uint64_t buf_len,
                        uint64_t len, bool to_guest, QEMUSGList *sg)
{
    const uint64_t psz = n->page_size, mask = psz - 1;
    uint64_t first = psz - (prp1 & mask), chunk, list, list_pages;
    uint16_t status;

    if (prp1 & 0x3) {
        return NVME_INVALID_PRP_OFFSET;
    }
    chunk = MIN(len, first);
    status = sg_add(n, sg, prp1, chunk, to_guest);
    if (status) {
        return status;
    }
    len -= chunk;
    if (len == 0) {
        return NVME_SUCCESS;
    }
    if (buf_len - first <= psz) {
        /* PRP2 is the second (and last) page itself */
        if (prp2 & mask) {
            return NVME_INVALID_PRP_OFFSET;
        }
        return sg_add(n, sg, prp2, len, to_guest);
    }

    /* PRP2 points to a PRP list; the last entry of a full list page chains to the next */
    list = prp2;
    list_pages = DIV_ROUND_UP(buf_len - first, psz);   /* entries the host's lists hold */
    if (list & 0x7) {
        return NVME_INVALID_PRP_OFFSET;
    }
    while (len) {
        uint64_t slots = (psz - (list & mask)) / sizeof(uint64_t);
        bool chained = list_pages > slots;
        uint64_t here = chained ? slots - 1 : list_pages;   /* data entries in this page */
        uint64_t want = DIV_ROUND_UP(len, psz);
        uint64_t nread = MIN(want, here);
        bool follow = want > here;
        g_autofree uint64_t *ents = g_new(uint64_t, nread + follow);

        status = femu_dma_from_guest(n, list, ents, (nread + follow) * sizeof(uint64_t));
        if (status) {
            return status;
        }
        for (uint64_t i = 0; i < nread; i++) {
            uint64_t ent = le64_to_cpu(ents[i]);
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
        if (follow) {
            /*
             * A list pointer is a PRP entry: page aligned. So every list page after the
             * first gives psz / 8 - 1 data entries, and a list can never loop in place.
             */
            list = le64_to_cpu(ents[nread]);
            if (list & mask) {
                return NVME_INVALID_PRP_OFFSET;
            }
            list_pages -= here;
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

uint16_t femu_map_dptr(FemuCtrl *n, const NvmeCmd *cmd, uint64_t buf_len, uint64_t len,
                       bool admin, bool to_guest, QEMUSGList *sg)
{
    uint8_t psdt = NVME_CMD_FLAGS_PSDT(cmd->flags);
    uint16_t status;

    assert(len <= buf_len);
    qemu_sglist_init(sg, DEVICE(n), 4, femu_as(n));
    if (psdt == NVME_PSDT_PRP) {
        status = map_prp(n, le64_to_cpu(cmd->dptr.prp1), le64_to_cpu(cmd->dptr.prp2), buf_len,
                         len, to_guest, sg);
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

/* Copies len bytes between buf and the scatter list, starting offset bytes into it. */
static uint16_t sg_copy(FemuCtrl *n, QEMUSGList *sg, uint64_t offset, void *buf,
                        uint64_t len, bool to_guest)
{
    uint8_t *p = buf;

    for (int i = 0; i < sg->nsg && len; i++) {
        uint64_t seg = sg->sg[i].len, take;
        uint16_t status;

        if (offset >= seg) {
            offset -= seg;
            continue;
        }
        take = MIN(seg - offset, len);
        status = dma_copy(n, sg->sg[i].base + offset, p, take, to_guest);
        if (status) {
            return status;
        }
        offset = 0;
        p += take;
        len -= take;
    }
    return len ? NVME_DATA_TRAS_ERROR : NVME_SUCCESS;
}

uint16_t femu_sg_to_guest(FemuCtrl *n, QEMUSGList *sg, uint64_t offset, const void *buf,
                          uint64_t len)
{
    return sg_copy(n, sg, offset, (void *)buf, len, true);
}

uint16_t femu_sg_from_guest(FemuCtrl *n, QEMUSGList *sg, void *buf, uint64_t len)
{
    return sg_copy(n, sg, 0, buf, len, false);
}

uint16_t femu_copy_dptr(FemuCtrl *n, const NvmeCmd *cmd, uint64_t buf_len, void *buf,
                        uint64_t len, bool admin, bool to_guest)
{
    QEMUSGList sg;
    uint16_t status = femu_map_dptr(n, cmd, buf_len, len, admin, to_guest, &sg);

    if (status) {
        return status;
    }
    status = sg_copy(n, &sg, 0, buf, len, to_guest);
    qemu_sglist_destroy(&sg);
    return status;
}
