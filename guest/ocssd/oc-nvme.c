/*
 * OCSSD 2.0 passthrough commands (see oc-nvme.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include "oc-nvme.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static uint32_t le32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int status_of(int rc)
{
    if (rc < 0)
        return -errno;
    return rc & 0x7ff; /* drop DNR and More */
}

static int admin(struct oc_dev *d, struct nvme_passthru_cmd *c)
{
    return status_of(ioctl(d->ctrl_fd, NVME_IOCTL_ADMIN_CMD, c));
}

static int io(struct oc_dev *d, struct nvme_passthru_cmd *c)
{
    c->nsid = d->nsid;
    return status_of(ioctl(d->ns_fd, NVME_IOCTL_IO_CMD, c));
}

static void *page_alloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 4096))
        return NULL;
    memset(p, 0, n ? n : 4096);
    return p;
}

static int identify_lba_size(struct oc_dev *d, uint32_t *lba_size)
{
    uint8_t *buf = page_alloc(4096);
    struct nvme_passthru_cmd c = { .opcode = 0x06, .nsid = d->nsid,
                                   .addr = (uintptr_t)buf, .data_len = 4096, .cdw10 = 0 };
    int st;

    if (!buf)
        return -ENOMEM;
    st = admin(d, &c);
    if (st == 0) {
        unsigned idx = buf[26] & 0xf;
        unsigned lbads = buf[128 + 4 * idx + 2];
        *lba_size = lbads >= 9 && lbads < 31 ? 1u << lbads : 0;
        if (!*lba_size)
            st = -EINVAL;
    }
    free(buf);
    return st;
}

static unsigned read_sysfs_uint(const char *path)
{
    FILE *f = fopen(path, "r");
    unsigned v = 0;
    if (f) {
        if (fscanf(f, "%u", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

/* /dev/nvme0n1 or /dev/ng0n1 -> controller number and namespace block name */
static int parse_ns_path(const char *path, char *ctrl, size_t cn, char *blk, size_t bn)
{
    const char *b = strrchr(path, '/');
    unsigned c, n;
    char tail;

    b = b ? b + 1 : path;
    if (sscanf(b, "nvme%un%u%c", &c, &n, &tail) != 2 &&
        sscanf(b, "ng%un%u%c", &c, &n, &tail) != 2)
        return -1;
    snprintf(ctrl, cn, "/dev/nvme%u", c);
    snprintf(blk, bn, "nvme%un%u", c, n);
    return 0;
}

int oc_open(struct oc_dev *d, const char *ns_path, int data_flags, char *err, size_t errlen)
{
    char ctrl[32], blk[32], sys[96];
    unsigned kb, segs;
    int st;

    memset(d, 0, sizeof(*d));
    d->ns_fd = d->ctrl_fd = -1;
    snprintf(d->ns_path, sizeof(d->ns_path), "%s", ns_path);
    if (parse_ns_path(ns_path, ctrl, sizeof(ctrl), blk, sizeof(blk))) {
        snprintf(err, errlen, "%s: not an NVMe namespace device (want /dev/nvmeXnY or /dev/ngXnY)",
                 ns_path);
        return -EINVAL;
    }
    d->ns_fd = open(ns_path, O_RDWR | data_flags);
    if (d->ns_fd < 0) {
        st = -errno;
        snprintf(err, errlen, "%s: %s", ns_path, strerror(errno));
        return st;
    }
    d->ctrl_fd = open(ctrl, O_RDWR);
    if (d->ctrl_fd < 0) {
        st = -errno;
        snprintf(err, errlen, "%s: %s", ctrl, strerror(errno));
        oc_close(d);
        return st;
    }
    st = ioctl(d->ns_fd, NVME_IOCTL_ID);
    if (st <= 0) {
        snprintf(err, errlen, "%s: cannot get the namespace id: %s", ns_path,
                 st < 0 ? strerror(errno) : "nsid 0");
        oc_close(d);
        return -EINVAL;
    }
    d->nsid = st;
    st = identify_lba_size(d, &d->lba_size);
    if (st) {
        snprintf(err, errlen, "%s: Identify Namespace failed (%s)", ns_path, oc_status_name(st));
        oc_close(d);
        return st < 0 ? st : -EIO;
    }
    st = oc_geometry(d, &d->geo);
    if (st) {
        snprintf(err, errlen, "%s: Geometry (admin E2h) failed: %s; is this a whitebox (OCSSD) "
                 "namespace?", ns_path, oc_status_name(st));
        oc_close(d);
        return st < 0 ? st : -EIO;
    }
    if (d->geo.major != 2) {
        snprintf(err, errlen, "%s: geometry major version %u, not OCSSD 2.x", ns_path, d->geo.major);
        oc_close(d);
        return -EINVAL;
    }
    snprintf(sys, sizeof(sys), "/sys/block/%s/queue/max_hw_sectors_kb", blk);
    kb = read_sysfs_uint(sys);
    d->max_sectors = kb ? kb * 1024 / d->lba_size : 0;
    /* a user buffer maps page by page: more pages than segments is refused (EINVAL) */
    snprintf(sys, sizeof(sys), "/sys/block/%s/queue/max_segments", blk);
    segs = read_sysfs_uint(sys);
    if (segs > 1 && (uint64_t)(segs - 1) * 4096 / d->lba_size < d->max_sectors)
        d->max_sectors = (uint64_t)(segs - 1) * 4096 / d->lba_size;
    if (d->max_sectors == 0)
        d->max_sectors = 32; /* a safe transfer size when sysfs does not say */
    return 0;
}

void oc_close(struct oc_dev *d)
{
    if (d->ns_fd >= 0)
        close(d->ns_fd);
    if (d->ctrl_fd >= 0)
        close(d->ctrl_fd);
    d->ns_fd = d->ctrl_fd = -1;
}

int oc_geometry(struct oc_dev *d, struct oc_geometry *g)
{
    uint8_t *b = page_alloc(4096);
    struct nvme_passthru_cmd c = { .opcode = OC_ADMIN_GEOMETRY, .nsid = d->nsid,
                                   .addr = (uintptr_t)b, .data_len = 4096 };
    int st;

    if (!b)
        return -ENOMEM;
    st = admin(d, &c);
    if (st == 0) {
        g->major = b[0];
        g->minor = b[1];
        g->grp_len = b[8];
        g->pu_len = b[9];
        g->chk_len = b[10];
        g->lbk_len = b[11];
        g->mccap = le32(b + 16);
        g->wit = b[32];
        g->num_grp = b[64] | b[65] << 8;
        g->num_pu = b[66] | b[67] << 8;
        g->num_chk = le32(b + 68);
        g->clba = le32(b + 72);
        g->ws_min = le32(b + 128);
        g->ws_opt = le32(b + 132);
        g->mw_cunits = le32(b + 136);
        g->maxoc = le32(b + 140);
        g->maxocpu = le32(b + 144);
        g->trdt = le32(b + 192);
        g->trdm = le32(b + 196);
        g->twrt = le32(b + 200);
        g->twrm = le32(b + 204);
        g->tcrst = le32(b + 208);
        g->tcrsm = le32(b + 212);
    }
    free(b);
    return st;
}

int oc_chunk_log(struct oc_dev *d, uint64_t first_chunk, uint32_t count, struct oc_chunk *out)
{
    const uint32_t per_cmd = 128; /* 4 KiB of descriptors per Get Log Page */
    uint8_t *b = page_alloc(per_cmd * 32);
    int st = 0;

    if (!b)
        return -ENOMEM;
    while (count) {
        uint32_t n = count < per_cmd ? count : per_cmd;
        uint64_t off = first_chunk * 32;
        uint32_t numd = n * 32 / 4 - 1;
        struct nvme_passthru_cmd c = {
            .opcode = 0x02, .nsid = d->nsid, .addr = (uintptr_t)b, .data_len = n * 32,
            .cdw10 = OC_LOG_CHUNK_INFO | (numd & 0xffff) << 16, .cdw11 = numd >> 16,
            .cdw12 = (uint32_t)off, .cdw13 = (uint32_t)(off >> 32),
        };
        st = admin(d, &c);
        if (st)
            break;
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *e = b + 32 * i;
            out->state = e[0];
            out->type = e[1];
            out->wli = e[2];
            out->slba = le64(e + 8);
            out->cnlb = le64(e + 16);
            out->wp = le64(e + 24);
            out++;
        }
        first_chunk += n;
        count -= n;
    }
    free(b);
    return st;
}

int oc_rw(struct oc_dev *d, int write, uint64_t slba, uint32_t nlb, void *buf)
{
    struct nvme_passthru_cmd c = {
        .opcode = write ? 0x01 : 0x02, .addr = (uintptr_t)buf,
        .data_len = nlb * d->lba_size, .cdw10 = (uint32_t)slba, .cdw11 = (uint32_t)(slba >> 32),
        .cdw12 = nlb - 1,
    };
    if (nlb == 0 || nlb > 65536)
        return -EINVAL;
    return io(d, &c);
}

/* The page that carries LBA lists: allocated and locked once. */
static void *list_page(void)
{
    static void *pg;

    if (!pg) {
        void *p = page_alloc(4096);
        if (p && mlock(p, 4096)) {
            int e = errno;
            free(p);
            errno = e;
            return NULL;
        }
        pg = p;
    }
    return pg;
}

/*
 * The guest-physical address of a locked page, looked up for every command: mlock keeps a
 * page in memory but does not stop the kernel from moving it (compaction migrates locked
 * pages unless vm.compact_unevictable_allowed=0), so an address kept from an earlier
 * command could name another page by now. What is left is the window between this lookup
 * and the device reading the list.
 */
static int page_phys(const void *pg, uint64_t *phys)
{
    static int pagemap = -1;
    uint64_t ent;

    if (pagemap < 0)
        pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (pagemap < 0 || pread(pagemap, &ent, 8, (uintptr_t)pg / 4096 * 8) != 8)
        ent = 0;
    /* bit 63: present; bits 0-54: frame number (zero without CAP_SYS_ADMIN) */
    if (!(ent >> 63) || (ent & ((1ull << 55) - 1)) == 0)
        return -EPERM;
    *phys = (ent & ((1ull << 55) - 1)) * 4096;
    return 0;
}

int oc_vector(struct oc_dev *d, uint8_t opcode, const uint64_t *lbas, uint32_t n,
              const uint64_t *dst, void *data, uint32_t *result)
{
    struct nvme_passthru_cmd c = { .opcode = opcode };
    uint64_t *list, pa = 0;
    int st;

    if (n == 0 || n > OC_MAX_VECTOR)
        return -EINVAL;
    c.cdw12 = n - 1;
    if (data) {
        c.addr = (uintptr_t)data;
        c.data_len = n * d->lba_size;
    }
    /* one LBA is given itself; a list by the address of the page it is copied to, the
     * source list at offset 0, the destination list (copy) at 2 KiB */
    c.cdw10 = (uint32_t)lbas[0];
    c.cdw11 = (uint32_t)(lbas[0] >> 32);
    if (dst) {
        c.cdw14 = (uint32_t)dst[0];
        c.cdw15 = (uint32_t)(dst[0] >> 32);
    }
    if (n > 1) {
        list = list_page();
        if (!list)
            return errno ? -errno : -ENOMEM;
        memcpy(list, lbas, n * sizeof(*lbas));
        if (dst)
            memcpy(list + 256, dst, n * sizeof(*dst));
        st = page_phys(list, &pa);
        if (st)
            return st;
        c.cdw10 = (uint32_t)pa;
        c.cdw11 = (uint32_t)(pa >> 32);
        if (dst) {
            c.cdw14 = (uint32_t)(pa + 2048);
            c.cdw15 = (uint32_t)((pa + 2048) >> 32);
        }
    }
    st = io(d, &c);
    if (result)
        *result = c.result;
    return st;
}

uint64_t oc_total_chunks(const struct oc_geometry *g)
{
    return (uint64_t)g->num_grp * g->num_pu * g->num_chk;
}

uint64_t oc_chunk_index(const struct oc_geometry *g, uint32_t grp, uint32_t pu, uint32_t chk)
{
    return ((uint64_t)grp * g->num_pu + pu) * g->num_chk + chk;
}

void oc_chunk_addr(const struct oc_geometry *g, uint64_t chunk, uint32_t *grp, uint32_t *pu,
                   uint32_t *chk)
{
    *chk = chunk % g->num_chk;
    *pu = chunk / g->num_chk % g->num_pu;
    *grp = chunk / g->num_chk / g->num_pu;
}

const char *oc_status_name(int st)
{
    static char buf[64];

    switch (st) {
    case 0: return "success";
    case 0x002: return "Invalid Field (0x002)";
    case 0x00c: return "Command Sequence Error (0x00c)";
    case 0x080: return "LBA Out of Range (0x080)";
    case 0x2c0: return "Offline Chunk (0x2c0)";
    case 0x2c1: return "Invalid Reset (0x2c1)";
    case 0x2f0: return "Write Next Unit (0x2f0)";
    case 0x2f1: return "Chunk Early Close (0x2f1)";
    case 0x2f2: return "Out of Order Write (0x2f2)";
    case 0x281: return "Unrecovered Read Error (0x281)";
    case 0x287: return "Deallocated or Unwritten Logical Block (0x287)";
    case 0x001: return "Invalid Command Opcode (0x001)";
    case 0x004: return "Data Transfer Error (0x004)";
    }
    if (st < 0)
        snprintf(buf, sizeof(buf), "ioctl error: %s", strerror(-st));
    else
        snprintf(buf, sizeof(buf), "NVMe status 0x%03x", st);
    return buf;
}

const char *oc_state_name(uint8_t cs)
{
    if (cs & OC_CS_OFFLINE)
        return "offline";
    if (cs & OC_CS_OPEN)
        return "open";
    if (cs & OC_CS_CLOSED)
        return "closed";
    if (cs & OC_CS_FREE)
        return "free";
    return "unknown";
}
