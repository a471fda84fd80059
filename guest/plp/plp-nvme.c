/*
 * Zoned NVMe commands with the PLP flag through the passthrough ioctls (see plp-nvme.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include "plp-nvme.h"

#include <errno.h>
#include <linux/nvme_ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#define OP_FLUSH 0x00
#define OP_WRITE 0x01
#define OP_READ 0x02
#define OP_ZONE_MGMT_SEND 0x79
#define OP_ZONE_MGMT_RECV 0x7a
#define OP_ZONE_APPEND 0x7d
#define ZSA_RESET 0x04
#define ZONE_DESC_BYTES 64
#define REPORT_HDR_BYTES 64

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int status_of(int rc)
{
    if (rc < 0)
        return -errno;
    return rc & 0x7ff; /* drop DNR and More */
}

/*
 * An I/O command; *result gets the completion's DW0 (and DW1 where the kernel has the
 * 64-bit ioctl, 5.13+: a Zone Append's LBA needs both).
 */
static int io_cmd(int fd, struct nvme_passthru_cmd64 *c, uint64_t *result)
{
#ifdef NVME_IOCTL_IO64_CMD
    static int no_io64;
    if (!no_io64) {
        int rc = ioctl(fd, NVME_IOCTL_IO64_CMD, c);
        if (rc >= 0 || errno != ENOTTY) {
            if (result)
                *result = c->result;
            return status_of(rc);
        }
        no_io64 = 1;
    }
#endif
    struct nvme_passthru_cmd c32 = {
        .opcode = c->opcode, .flags = c->flags, .nsid = c->nsid, .cdw2 = c->cdw2,
        .cdw3 = c->cdw3, .metadata = c->metadata, .addr = c->addr,
        .metadata_len = c->metadata_len, .data_len = c->data_len, .cdw10 = c->cdw10,
        .cdw11 = c->cdw11, .cdw12 = c->cdw12, .cdw13 = c->cdw13, .cdw14 = c->cdw14,
        .cdw15 = c->cdw15, .timeout_ms = c->timeout_ms,
    };
    int rc = ioctl(fd, NVME_IOCTL_IO_CMD, &c32);
    if (result)
        *result = c32.result;
    return status_of(rc);
}

int plp_write(int fd, uint32_t nsid, uint64_t slba, uint32_t nlb, const void *buf, uint32_t len,
              int durable, int append, uint64_t *result)
{
    struct nvme_passthru_cmd64 c = {
        .opcode = append ? OP_ZONE_APPEND : OP_WRITE,
        .nsid = nsid,
        .cdw3 = durable ? PLP_CDW3_PROTECTED : 0,
        .addr = (uintptr_t)buf,
        .data_len = len,
        .cdw10 = (uint32_t)slba,
        .cdw11 = (uint32_t)(slba >> 32),
        .cdw12 = nlb - 1, /* 0's based */
    };
    uint64_t res = 0;
    int st;

    if (nlb == 0 || nlb > 0x10000)
        return -EINVAL;
    st = io_cmd(fd, &c, &res);
    if (result)
        *result = append ? res : slba;
    return st;
}

int plp_flush(int fd, uint32_t nsid)
{
    struct nvme_passthru_cmd64 c = { .opcode = OP_FLUSH, .nsid = nsid };
    return io_cmd(fd, &c, NULL);
}

int plp_read(int fd, uint32_t nsid, uint64_t slba, uint32_t nlb, void *buf, uint32_t len)
{
    struct nvme_passthru_cmd64 c = {
        .opcode = OP_READ, .nsid = nsid, .addr = (uintptr_t)buf, .data_len = len,
        .cdw10 = (uint32_t)slba, .cdw11 = (uint32_t)(slba >> 32), .cdw12 = nlb - 1,
    };
    if (nlb == 0 || nlb > 0x10000)
        return -EINVAL;
    return io_cmd(fd, &c, NULL);
}

uint32_t plp_nsid(int fd)
{
    int id = ioctl(fd, NVME_IOCTL_ID);
    return id > 0 ? (uint32_t)id : 0;
}

uint32_t plp_lba_size(int fd, uint32_t nsid)
{
    uint8_t *buf = NULL;
    uint32_t size = 0;

    if (posix_memalign((void **)&buf, 4096, 4096))
        return 0;
    memset(buf, 0, 4096);
    /* Identify Namespace (CNS 0); admin commands are allowed on a namespace's fd */
    struct nvme_passthru_cmd c = { .opcode = 0x06, .nsid = nsid, .addr = (uintptr_t)buf,
                                   .data_len = 4096 };
    if (ioctl(fd, NVME_IOCTL_ADMIN_CMD, &c) == 0) {
        unsigned idx = (buf[26] & 0xf) | (buf[26] >> 5 & 0x3) << 4; /* FLBAS */
        unsigned lbads = idx < 64 ? buf[128 + 4 * idx + 2] : 0;
        if (lbads >= 9 && lbads < 31)
            size = 1u << lbads;
    }
    free(buf);
    return size;
}

int plp_report_zones(int fd, uint32_t nsid, uint64_t slba, struct plp_zone *zones, int max,
                     int *nr)
{
    uint32_t len;
    uint8_t *buf = NULL;
    uint64_t n;
    int st;

    *nr = 0;
    if (max <= 0)
        return 0;
    if (max > 4096)
        max = 4096; /* 256 KiB per command: within any MDTS Linux accepts */
    len = REPORT_HDR_BYTES + (uint32_t)max * ZONE_DESC_BYTES;
    if (posix_memalign((void **)&buf, 4096, len))
        return -ENOMEM;
    memset(buf, 0, len);
    struct nvme_passthru_cmd64 c = {
        .opcode = OP_ZONE_MGMT_RECV, .nsid = nsid, .addr = (uintptr_t)buf, .data_len = len,
        .cdw10 = (uint32_t)slba, .cdw11 = (uint32_t)(slba >> 32),
        .cdw12 = len / 4 - 1,      /* NUMD, 0's based */
        .cdw13 = 1u << 16,         /* report zones, all states, partial: count what fits */
    };
    st = io_cmd(fd, &c, NULL);
    if (st) {
        free(buf);
        return st;
    }
    n = le64(buf);
    if (n > (uint64_t)max)
        n = max;
    *nr = (int)n;
    for (int i = 0; i < *nr; i++) {
        const uint8_t *d = buf + REPORT_HDR_BYTES + i * ZONE_DESC_BYTES;
        zones[i].state = d[1] >> 4;
        zones[i].cap = le64(d + 8);
        zones[i].zslba = le64(d + 16);
        zones[i].wp = le64(d + 24);
    }
    free(buf);
    return 0;
}

int plp_reset_zone(int fd, uint32_t nsid, uint64_t zslba)
{
    struct nvme_passthru_cmd64 c = {
        .opcode = OP_ZONE_MGMT_SEND, .nsid = nsid,
        .cdw10 = (uint32_t)zslba, .cdw11 = (uint32_t)(zslba >> 32), .cdw13 = ZSA_RESET,
    };
    return io_cmd(fd, &c, NULL);
}

const char *plp_zone_state_name(uint8_t state)
{
    switch (state) {
    case PLP_ZS_EMPTY: return "empty";
    case PLP_ZS_IMP_OPEN: return "imp-open";
    case PLP_ZS_EXP_OPEN: return "exp-open";
    case PLP_ZS_CLOSED: return "closed";
    case PLP_ZS_READ_ONLY: return "read-only";
    case PLP_ZS_FULL: return "full";
    case PLP_ZS_OFFLINE: return "offline";
    default: return "unknown";
    }
}

const char *plp_status_name(int status)
{
    static __thread char buf[64];

    if (status == 0)
        return "ok";
    if (status < 0) {
        snprintf(buf, sizeof(buf), "%s", strerror(-status));
        return buf;
    }
    switch (status) {
    case 0x002: return "Invalid Field in Command";
    case 0x004: return "Data Transfer Error";
    case 0x080: return "LBA Out of Range";
    case 0x1b8: return "Zone Boundary Error";
    case 0x1b9: return "Zone Is Full";
    case 0x1ba: return "Zone Is Read Only";
    case 0x1bb: return "Zone Is Offline";
    case 0x1bc: return "Zone Invalid Write";
    case 0x1bd: return "Too Many Active Zones";
    case 0x1be: return "Too Many Open Zones";
    case 0x1bf: return "Invalid Zone State Transition";
    }
    snprintf(buf, sizeof(buf), "status 0x%03x", status);
    return buf;
}
