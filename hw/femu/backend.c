/*
 * Storage: the drive's data lives in a QEMU host memory backend (memory-backend-ram or
 * memory-backend-file). Without memdev= a sparse RAM backend is created, so a drive larger
 * than host RAM works as long as only part of it is written.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qom/object_interfaces.h"
#include "exec/memory.h"
#include "exec/cpu-common.h"
#include "exec/ramblock.h"
#include "qemu/cutils.h"
#include "qemu/crc32c.h"
#include "femu.h"

/*
 * The write journal: one LBA at a time, because the device thread copies one write at a
 * time and an LBA is the unit a write must never tear (AWUPF 0). Its data is complete
 * before magic is set, and the LBA's place is written only while magic is set.
 */
#define WRITE_JOURNAL_MAGIC 0x4c4e524a57554d45ULL     /* "EMUWJRNL" */
typedef struct FemuWriteJournal {
    uint64_t magic;
    uint64_t offset;            /* in the backend's data */
    uint32_t len;
    uint32_t crc;               /* of data[0..len) */
    uint8_t rsvd[40];
    uint8_t data[FEMU_WRITE_JOURNAL_BYTES - 64];
} FemuWriteJournal;
QEMU_BUILD_BUG_ON(sizeof(FemuWriteJournal) != FEMU_WRITE_JOURNAL_BYTES);

/* A memfd or shared RAM has an fd too, but dies with QEMU: only a file outlives it. */
bool femu_memdev_persists(HostMemoryBackend *be)
{
    MemoryRegion *mr = host_memory_backend_get_memory(be);

    return object_dynamic_cast(OBJECT(be), TYPE_MEMORY_BACKEND_FILE) &&
           memory_region_get_fd(mr) >= 0 && qemu_ram_is_shared(mr->ram_block);
}

bool femu_backend_init(FemuCtrl *n, uint64_t extra, Error **errp)
{
    uint64_t want = (uint64_t)n->devsz_mb * MiB;
    MemoryRegion *mr;

    if (n->memdev) {
        g_autofree char *name = host_memory_backend_get_name(n->memdev);
        uint64_t size;

        if (host_memory_backend_is_mapped(n->memdev)) {
            error_setg(errp, "memdev '%s' is already in use by another device", name);
            return false;
        }
        mr = host_memory_backend_get_memory(n->memdev);
        size = memory_region_size(mr);
        if (mr->readonly || memory_region_is_rom(mr)) {
            error_setg(errp, "memdev '%s' is read-only (readonly=on or rom=on): a drive's "
                       "backend must be writable", name);
            return false;
        }
        if (!want) {
            want = size - MIN(size, extra);
        } else if (want + extra > size) {
            g_autofree char *meta = extra ? g_strdup_printf(" plus its metadata (%" PRIu64
                                                             " MiB)", DIV_ROUND_UP(extra, MiB))
                                          : g_strdup("");
            error_setg(errp, "devsz_mb=%u%s does not fit in memdev '%s' of %" PRIu64 " MiB",
                       n->devsz_mb, meta, name, size / MiB);
            return false;
        }
        host_memory_backend_set_mapped(n->memdev, true);
        n->backend = n->memdev;
    } else {
        Object *obj = object_new(TYPE_MEMORY_BACKEND_RAM);

        if (!want) {
            want = 1024 * MiB;
        }
        /* reserve=off: no swap reservation, pages are allocated when first written */
        if (!object_property_set_int(obj, "size", want + extra, errp) ||
            !object_property_set_bool(obj, "reserve", false, errp)) {
            object_unref(obj);
            return false;
        }
        object_property_add_child(OBJECT(n), "backend", obj);
        object_unref(obj);
        if (!user_creatable_complete(USER_CREATABLE(obj), errp)) {
            object_unparent(obj);
            return false;
        }
        n->backend = MEMORY_BACKEND(obj);
        host_memory_backend_set_mapped(n->backend, true);
        mr = host_memory_backend_get_memory(n->backend);
    }
    n->data = memory_region_get_ram_ptr(mr);
    n->data_bytes = want;
    n->backend_persists = femu_memdev_persists(n->backend);
    n->journal = n->journal_on && extra >= FEMU_WRITE_JOURNAL_BYTES ?
                 (FemuWriteJournal *)(n->data + want + extra - FEMU_WRITE_JOURNAL_BYTES) : NULL;
    return true;
}


/* Here, the lowest layer, so that every file may call it (x-crash-at is parsed in ctrl.c). */
void femu_crash_point(FemuCtrl *n, const char *point)
{
    if (n->crash_countdown && !strcmp(n->crash_point, point) && !--n->crash_countdown) {
        raise(SIGKILL);
    }
}

uint16_t femu_backend_write(FemuCtrl *n, QEMUSGList *sg, uint64_t offset, uint64_t len,
                            uint64_t unit)
{
    FemuWriteJournal *j = n->journal;
    g_autofree uint8_t *buf = NULL;
    uint16_t status;

    if (!j || !n->backend_persists || unit > sizeof(j->data) || len % unit) {
        return femu_sg_from_guest(n, sg, n->data + offset, len);
    }
    buf = g_malloc(len);
    status = femu_sg_from_guest(n, sg, buf, len);
    if (status) {
        return status;
    }
    for (uint64_t at = 0; at < len; at += unit) {
        memcpy(j->data, buf + at, unit);
        j->offset = offset + at;
        j->len = unit;
        j->crc = crc32c(0xffffffff, j->data, unit);
        smp_wmb();
        qatomic_set(&j->magic, WRITE_JOURNAL_MAGIC);
        smp_wmb();
        if (n->crash_countdown) {
            /* half the LBA in place, as a kill in the middle of the copy leaves it */
            memcpy(n->data + offset + at, buf + at, unit / 2);
            femu_crash_point(n, "lba-journaled");
        }
        memcpy(n->data + offset + at, buf + at, unit);
        smp_wmb();
        qatomic_set(&j->magic, 0);
    }
    /* blank again: the area reads as unused metadata (a kind reusing the file checks) */
    memset(j, 0, 64 + unit);
    return NVME_SUCCESS;
}

void femu_backend_replay(FemuCtrl *n)
{
    FemuWriteJournal *j = n->journal;

    if (!j || qatomic_read(&j->magic) != WRITE_JOURNAL_MAGIC) {
        return;
    }
    /* a journal of another layout, or torn, is not replayed */
    if (j->len && j->len <= sizeof(j->data) && j->offset + j->len <= n->data_bytes &&
        j->offset + j->len > j->offset && j->crc == crc32c(0xffffffff, j->data, j->len)) {
        memcpy(n->data + j->offset, j->data, j->len);
    }
    smp_wmb();
    qatomic_set(&j->magic, 0);
    memset(j, 0, sizeof(*j));
}

void femu_backend_release(FemuCtrl *n)
{
    if (n->backend) {
        host_memory_backend_set_mapped(n->backend, false);
        if (n->backend != n->memdev) {
            object_unparent(OBJECT(n->backend));
        }
        n->backend = NULL;
        n->data = NULL;
    }
}

/*
 * Zero a byte range. Whole host pages are given back (a hole in a shared file, freed pages
 * in a RAM backend), so deallocated space costs no host memory; the edges are cleared.
 * A private file mapping (share=off) is only ever cleared in memory: giving its pages back
 * would punch holes in the user's file, which its writes never reach. After a failed
 * discard (the backend cannot), ranges are cleared in memory from then on: QEMU reports
 * every failure, and a guest must not be able to flood the host's log.
 */
void femu_backend_zero(FemuCtrl *n, uint64_t offset, uint64_t len)
{
    MemoryRegion *mr = host_memory_backend_get_memory(n->backend);
    RAMBlock *rb = mr->ram_block;
    uint64_t page = qemu_ram_pagesize(rb);
    uint64_t start = ROUND_UP(offset, page), end = ROUND_DOWN(offset + len, page);
    bool private_file = qemu_ram_get_fd(rb) >= 0 && !qemu_ram_is_shared(rb);

    if (end > start && !private_file && !n->discard_failed) {
        if (ram_block_discard_range(rb, start, end - start) == 0) {
            memset(n->data + offset, 0, start - offset);
            memset(n->data + end, 0, offset + len - end);
            return;
        }
        n->discard_failed = true;
    }
    memset(n->data + offset, 0, len);
}

/* The first offset in [offset, end) of a file backend that is (whence) data or a hole. */
static uint64_t backend_seek(FemuCtrl *n, uint64_t offset, uint64_t end, int whence)
{
    RAMBlock *rb = host_memory_backend_get_memory(n->backend)->ram_block;
    int fd = qemu_ram_get_fd(rb);
    off_t pos;

    if (fd < 0) {
        /* anonymous memory starts zeroed: all hole */
        return whence == SEEK_DATA ? end : offset;
    }
    pos = lseek(fd, rb->fd_offset + offset, whence);
    if (pos < 0 && whence == SEEK_DATA) {
        /* ENXIO: no data up to the end of the file; any other error: assume data */
        return errno == ENXIO ? end : offset;
    }
    if (pos < 0) {
        return end;
    }
    return MIN(MAX((uint64_t)pos - rb->fd_offset, offset), end);
}

uint64_t femu_backend_next_data(FemuCtrl *n, uint64_t offset, uint64_t end)
{
    return offset < end ? backend_seek(n, offset, end, SEEK_DATA) : end;
}

bool femu_backend_is_zero(FemuCtrl *n, uint64_t offset, uint64_t len)
{
    uint64_t end = offset + len;

    while ((offset = femu_backend_next_data(n, offset, end)) < end) {
        uint64_t hole = backend_seek(n, offset, end, SEEK_HOLE);

        if (hole <= offset) {
            hole = end;
        }
        if (!buffer_is_zero(n->data + offset, hole - offset)) {
            return false;
        }
        offset = hole;
    }
    return true;
}
