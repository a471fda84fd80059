/*
 * OCSSD 2.0 through Linux's NVMe passthrough ioctls: Geometry, Chunk Information
 * log, standard Read/Write, vector Reset/Write/Read/Copy. Shared by the `ocssd`
 * tool and the host FTL (guest/hostftl/dev-nvme.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef OC_NVME_H
#define OC_NVME_H

#include <stdint.h>
#include <stddef.h>

#define OC_ADMIN_GEOMETRY 0xe2
#define OC_LOG_CHUNK_INFO 0xca
#define OC_VECTOR_RESET 0x90
#define OC_VECTOR_WRITE 0x91
#define OC_VECTOR_READ 0x92
#define OC_VECTOR_COPY 0x93
#define OC_MAX_VECTOR 64 /* NLB is 6 bits, 0's based */

/* chunk states (CS bits) */
#define OC_CS_FREE 0x1
#define OC_CS_CLOSED 0x2
#define OC_CS_OPEN 0x4
#define OC_CS_OFFLINE 0x8

struct oc_geometry {
    uint8_t major, minor;
    uint8_t grp_len, pu_len, chk_len, lbk_len;
    uint32_t mccap, wit;
    uint32_t num_grp, num_pu, num_chk, clba;
    uint32_t ws_min, ws_opt, mw_cunits, maxoc, maxocpu;
    uint32_t trdt, trdm, twrt, twrm, tcrst, tcrsm;
};

struct oc_chunk {
    uint8_t state, type, wli;
    uint64_t slba, cnlb, wp;
};

struct oc_dev {
    int ns_fd;    /* /dev/nvme0n1 (passthrough I/O, and O_DIRECT data when opened so) */
    int ctrl_fd;  /* /dev/nvme0 (admin) */
    uint32_t nsid;
    uint32_t lba_size;
    uint32_t max_sectors; /* per passthrough data command (the queue's max_hw_sectors) */
    struct oc_geometry geo;
    char ns_path[64];
};

/*
 * Open a whitebox namespace: ns_path is /dev/nvmeXnY (or /dev/ngXnY); the admin
 * device /dev/nvmeX is derived from it. data_flags: extra open(2) flags for
 * ns_fd (O_DIRECT for pread/pwrite data). Reads the geometry. 0 or -errno, with
 * a message in err.
 */
int oc_open(struct oc_dev *d, const char *ns_path, int data_flags, char *err, size_t errlen);
void oc_close(struct oc_dev *d);

/* Every command returns: <0 -errno from the ioctl, 0 success, >0 NVMe status
 * (SCT << 8 | SC, DNR/More bits removed). *result gets the completion's DW0. */
int oc_geometry(struct oc_dev *d, struct oc_geometry *g);
int oc_chunk_log(struct oc_dev *d, uint64_t first_chunk, uint32_t count, struct oc_chunk *out);
int oc_rw(struct oc_dev *d, int write, uint64_t slba, uint32_t nlb, void *buf);
/* Vector command on n (1..64) LBAs. For n > 1 the LBA list must be given to the
 * device by guest-physical address: it is copied into a locked page whose address
 * comes from /proc/self/pagemap, looked up for every command (root only; these
 * guests have no IOMMU).
 * data: n sectors (write/read) or NULL. dst: the destination list of a copy. */
int oc_vector(struct oc_dev *d, uint8_t opcode, const uint64_t *lbas, uint32_t n,
              const uint64_t *dst, void *data, uint32_t *result);

uint64_t oc_chunk_index(const struct oc_geometry *g, uint32_t grp, uint32_t pu, uint32_t chk);
void oc_chunk_addr(const struct oc_geometry *g, uint64_t chunk, uint32_t *grp, uint32_t *pu,
                   uint32_t *chk);
uint64_t oc_total_chunks(const struct oc_geometry *g);

const char *oc_status_name(int status);
const char *oc_state_name(uint8_t cs);

#endif
