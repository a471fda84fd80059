/*
 * Selective power-loss protection (PLP) from the guest: zoned NVMe commands through
 * Linux's passthrough ioctls, with the "protected" flag (bit 0 of CDW3) on writes.
 *
 * A Write (01h) or Zone Append (7Dh) with the flag is protected: once acknowledged, its
 * data survives a power cut. Without it a write survives only after a Flush issued after
 * it has completed (or its zone was finished or closed). See the top README, "Selective
 * power-loss protection".
 *
 * fd is an open /dev/nvmeXnY (block) or /dev/ngXnY (generic char) device; commands go
 * to namespace nsid (plp_nsid()). Data buffers should be 4 KiB aligned.
 *
 * Every command returns: < 0 -errno from the ioctl, 0 success, > 0 the NVMe status
 * (SCT << 8 | SC, without DNR and More).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PLP_NVME_H
#define PLP_NVME_H

#include <stdint.h>

#define PLP_CDW3_PROTECTED 0x1u /* CDW3 bit 0 of Write / Zone Append */

/* Zone states (Zone Descriptor ZS, bits 7:4) */
enum {
    PLP_ZS_EMPTY = 0x1,
    PLP_ZS_IMP_OPEN = 0x2,
    PLP_ZS_EXP_OPEN = 0x3,
    PLP_ZS_CLOSED = 0x4,
    PLP_ZS_READ_ONLY = 0xd,
    PLP_ZS_FULL = 0xe,
    PLP_ZS_OFFLINE = 0xf,
};

struct plp_zone {
    uint64_t zslba, cap, wp; /* LBAs */
    uint8_t state;           /* PLP_ZS_* */
};

/*
 * Write nlb LBAs from buf (len bytes = nlb * LBA size) at slba, or, with append, Zone
 * Append them to the zone starting at slba. durable sets the protected flag. *result
 * (may be NULL) gets the LBA written: slba, or where the append landed.
 */
int plp_write(int fd, uint32_t nsid, uint64_t slba, uint32_t nlb, const void *buf, uint32_t len,
              int durable, int append, uint64_t *result);
/* Flush (00h): every write completed before it is issued is durable once it completes. */
int plp_flush(int fd, uint32_t nsid);
int plp_read(int fd, uint32_t nsid, uint64_t slba, uint32_t nlb, void *buf, uint32_t len);

/* The namespace id of fd (NVME_IOCTL_ID); 0 if fd is not an NVMe namespace. */
uint32_t plp_nsid(int fd);
/* The formatted LBA size in bytes (Identify Namespace), 0 on error. */
uint32_t plp_lba_size(int fd, uint32_t nsid);
/* Zone Management Receive: up to max descriptors from the zone holding slba on; *nr gets
 * how many were filled. */
int plp_report_zones(int fd, uint32_t nsid, uint64_t slba, struct plp_zone *zones, int max,
                     int *nr);
/* Zone Management Send Reset of the zone starting at zslba. */
int plp_reset_zone(int fd, uint32_t nsid, uint64_t zslba);

const char *plp_zone_state_name(uint8_t state);
/* "ok", "-errno text" or a name for the usual zoned statuses; static or thread buffer. */
const char *plp_status_name(int status);

#endif
