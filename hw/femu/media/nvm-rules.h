/*
 * The NVM command set's rules that the QEMU device (nvm.c) and femu-sim share: which
 * LBAs and lengths a command may name, and what each command does to the media model and
 * to the host counters. The device moves the data around them; femu-sim keeps none.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_MEDIA_NVM_RULES_H
#define FEMU_MEDIA_NVM_RULES_H

#include <stdint.h>

#include "ns-media.h"

/* NVMe status codes (the specification's values, as QEMU's NVME_INVALID_FIELD, ...) */
#define FEMU_NVM_SC_INVALID_FIELD 0x0002
#define FEMU_NVM_SC_LBA_RANGE 0x0080

/* NVMe opcodes of the NVM commands whose media side is shared */
typedef enum FemuNvmOpcode {
    FEMU_NVM_FLUSH = 0x00,
    FEMU_NVM_WRITE = 0x01,
    FEMU_NVM_READ = 0x02,
    FEMU_NVM_COMPARE = 0x05,
    FEMU_NVM_WRITE_ZEROES = 0x08,
    FEMU_NVM_DEALLOCATE = 0x09,     /* Dataset Management with AD, one range */
} FemuNvmOpcode;

/* nlb LBAs from slba inside a namespace of nlbas: 0 or LBA Out of Range. */
uint16_t femu_nvm_check_range(uint64_t nlbas, uint64_t slba, uint64_t nlb);
/*
 * A Read, Write or Compare of nlb LBAs of 2^lba_shift bytes: at most MDTS (4 KiB << mdts,
 * 0: no limit), then inside the namespace. 0 or the status refusing it.
 */
uint16_t femu_nvm_check_rw(uint64_t nlbas, uint32_t lba_shift, uint32_t mdts,
                           uint64_t slba, uint64_t nlb);

/*
 * The media side of an accepted command on [r->offset, r->offset + r->len) (backend
 * offsets; r->arrival_ns, r->nsid and a buffered read's r->read_buf set by the caller):
 * Read and Compare read the media and count as host reads, Write writes and counts as a
 * host write, Write Zeroes and Deallocate drop or zero the range in the model and count
 * no host data, Flush flushes. When it completes.
 */
uint64_t femu_nvm_media(FemuNsMedia *nm, IoCounters *io, FemuNvmOpcode opcode,
                        FemuMediaReq *r);

#endif
