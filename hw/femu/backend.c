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
#include "qemu/madvise.h"
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

/*
 * len bytes (from src, or zeroes when src is NULL) at offset through the journal: its
 * copy is complete before magic is set, and the place is written only while magic is set,
 * so a kill in between is finished by the next start (femu_backend_replay).
 */
static void journal_put(FemuCtrl *n, uint64_t offset, const uint8_t *src, uint32_t len)
{
    FemuWriteJournal *j = n->journal;

    if (src) {
        memcpy(j->data, src, len);
    } else {
        memset(j->data, 0, len);
    }
    j->offset = offset;
    j->len = len;
    j->crc = crc32c(0xffffffff, j->data, len);
    smp_wmb();
    qatomic_set(&j->magic, WRITE_JOURNAL_MAGIC);
    smp_wmb();
    if (n->crash_countdown) {
        /* half of it in place, as a kill in the middle of the copy leaves it */
        memcpy(n->data + offset, j->data, len / 2);
        femu_crash_point(n, "lba-journaled");
    }
    memcpy(n->data + offset, j->data, len);
    smp_wmb();
    qatomic_set(&j->magic, 0);
}

/* Blank again after use: the area reads as unused metadata (a kind reusing the file checks). */
static void journal_blank(FemuCtrl *n, uint64_t used)
{
    memset(n->journal, 0, offsetof(FemuWriteJournal, data) + used);
}

static bool journaled(FemuCtrl *n)
{
    return n->journal && n->backend_persists;
}

uint16_t femu_backend_write(FemuCtrl *n, QEMUSGList *sg, uint64_t offset, uint64_t len,
                            uint64_t unit)
{
    g_autofree uint8_t *buf = NULL;
    uint16_t status;

    if (!journaled(n) || unit > sizeof(n->journal->data) || len % unit) {
        return femu_sg_from_guest(n, sg, n->data + offset, len);
    }
    buf = g_malloc(len);
    status = femu_sg_from_guest(n, sg, buf, len);
    if (status) {
        return status;
    }
    for (uint64_t at = 0; at < len; at += unit) {
        journal_put(n, offset + at, buf + at, unit);
    }
    journal_blank(n, unit);
    return NVME_SUCCESS;
}

void femu_backend_put(void *opaque, uint64_t offset, const void *src, uint64_t len)
{
    FemuCtrl *n = opaque;
    uint64_t chunk = sizeof(n->journal->data);

    if (!journaled(n)) {
        memcpy(n->data + offset, src, len);
        return;
    }
    /* LBAs are at most a chunk and start chunks: none is torn */
    for (uint64_t at = 0; at < len; at += chunk) {
        journal_put(n, offset + at, (const uint8_t *)src + at, MIN(len - at, chunk));
    }
    journal_blank(n, MIN(len, chunk));
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

/*
 * Zeroing. A private file mapping (share=off) must read zeroes afterwards, must not grow
 * QEMU's memory by the range (a guest's whole-drive discard would allocate the drive), and
 * must leave the user's file alone. Where the file has a hole, dropping QEMU's copies of
 * the pages (DONTNEED) shows the hole's zeroes again; where it has data, fresh anonymous
 * pages replace the mapping, as QEMU's qemu_ram_remap does for anonymous RAM (the block
 * is neither guest RAM nor migrated, so nothing else holds on to its mapping). Each
 * replacement may split the mapping into up to two more; past FEMU_ZERO_MAPS_MAX of them
 * (the kernel's limit on mappings is shared with all of QEMU) pages are cleared in place.
 */
#define FEMU_ZERO_MAPS_MAX 8192

static bool map_zero_pages(FemuCtrl *n, RAMBlock *rb, uint64_t start, uint64_t len)
{
    Object *be = OBJECT(n->backend);
    int flags = MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS |
                (qemu_ram_is_noreserve(rb) ? MAP_NORESERVE : 0);
    /* a NUMA policy would not follow the new pages */
    bool bound = object_property_get_enum(be, "policy", "HostMemPolicy", NULL) !=
                 HOST_MEM_POLICY_DEFAULT;

    if (bound || n->zero_maps >= FEMU_ZERO_MAPS_MAX ||
        mmap(n->data + start, len, PROT_READ | PROT_WRITE, flags, -1, 0) != n->data + start) {
        return false;
    }
    n->zero_maps++;
    /* the backend's settings, as it gave them to the pages they replace */
    if (object_property_get_bool(be, "merge", NULL)) {
        qemu_madvise(n->data + start, len, QEMU_MADV_MERGEABLE);
    }
    if (!object_property_get_bool(be, "dump", NULL)) {
        qemu_madvise(n->data + start, len, QEMU_MADV_DONTDUMP);
    }
    return true;
}

static bool release_private_pages(FemuCtrl *n, RAMBlock *rb, uint64_t start, uint64_t end)
{
    uint64_t page = qemu_ram_pagesize(rb), next;

    for (uint64_t pos = start; pos < end; pos = next) {
        uint64_t data = ROUND_DOWN(backend_seek(n, pos, end, SEEK_DATA), page);

        if (data > pos) {
            next = data;
            if (!qemu_madvise(n->data + pos, next - pos, QEMU_MADV_DONTNEED)) {
                continue;
            }
        } else {
            next = MIN(MAX(ROUND_UP(backend_seek(n, pos, end, SEEK_HOLE), page), pos + page),
                       end);
            if (buffer_is_zero(n->data + pos, next - pos)) {
                continue;       /* replaced already (a range given twice): keep the budget */
            }
        }
        if (!map_zero_pages(n, rb, pos, next - pos)) {
            return false;
        }
    }
    return true;
}

/*
 * Whole host pages [start, end) given back to the host, reading zeroes after: a hole in a
 * shared file, freed pages of RAM, the above for a private file. False when the backend
 * cannot (then it keeps failing: QEMU reports every failure, and a guest must not be able
 * to flood the host's log) and the pages must be cleared in place.
 */
static bool release_pages(FemuCtrl *n, RAMBlock *rb, uint64_t start, uint64_t end)
{
    if (qemu_ram_get_fd(rb) >= 0 && !qemu_ram_is_shared(rb)) {
        return release_private_pages(n, rb, start, end);
    }
    if (!n->discard_failed && ram_block_discard_range(rb, start, end - start)) {
        n->discard_failed = true;
    }
    return !n->discard_failed;
}

/*
 * Cleared in place, a host page (or a journal's worth) at a time; one that already reads
 * zero is left alone, so it costs no memory and a kill cannot tear it. A persistent
 * backend clears through the journal, so no LBA is left half cleared.
 */
static void clear_in_place(FemuCtrl *n, uint64_t offset, uint64_t len, uint64_t page)
{
    uint64_t step = journaled(n) ? MIN(page, sizeof(n->journal->data)) : page, used = 0;

    for (uint64_t at = 0, chunk; at < len; at += chunk) {
        chunk = MIN(step, len - at);
        if (buffer_is_zero(n->data + offset + at, chunk)) {
            continue;
        }
        if (journaled(n)) {
            journal_put(n, offset + at, NULL, chunk);
            used = MAX(used, chunk);
        } else {
            memset(n->data + offset + at, 0, chunk);
        }
    }
    if (used) {
        journal_blank(n, used);
    }
}

/*
 * Zero a byte range (LBA-aligned, so that a journal's 4 KiB steps never split an LBA).
 * Whole host pages are given back, so deallocated space costs no host memory; the edges
 * are cleared in place.
 */
void femu_backend_zero(FemuCtrl *n, uint64_t offset, uint64_t len)
{
    RAMBlock *rb = host_memory_backend_get_memory(n->backend)->ram_block;
    uint64_t page = qemu_ram_pagesize(rb);
    uint64_t start = ROUND_UP(offset, page), end = ROUND_DOWN(offset + len, page);

    if (start >= end) {
        clear_in_place(n, offset, len, page);
        return;
    }
    clear_in_place(n, offset, start - offset, page);
    if (!release_pages(n, rb, start, end)) {
        clear_in_place(n, start, end - start, page);
    }
    clear_in_place(n, end, offset + len - end, page);
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
