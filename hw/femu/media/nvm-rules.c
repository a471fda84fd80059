/*
 * The NVM command set's shared rules; see nvm-rules.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "nvm-rules.h"

uint16_t femu_nvm_check_range(uint64_t nlbas, uint64_t slba, uint64_t nlb)
{
    return slba + nlb < slba || slba + nlb > nlbas ? FEMU_NVM_SC_LBA_RANGE : 0;
}

uint16_t femu_nvm_check_rw(uint64_t nlbas, uint32_t lba_shift, uint32_t mdts,
                           uint64_t slba, uint64_t nlb)
{
    if (mdts && (nlb << lba_shift) > (4096ULL << mdts)) {
        return FEMU_NVM_SC_INVALID_FIELD;
    }
    return femu_nvm_check_range(nlbas, slba, nlb);
}

static FemuMediaOp media_op(FemuNvmOpcode opcode)
{
    switch (opcode) {
    case FEMU_NVM_WRITE:
        return FEMU_MEDIA_WRITE;
    case FEMU_NVM_READ:
    case FEMU_NVM_COMPARE:          /* the data is read to be compared */
        return FEMU_MEDIA_READ;
    case FEMU_NVM_WRITE_ZEROES:
        return FEMU_MEDIA_WRITE_ZEROES;
    case FEMU_NVM_DEALLOCATE:
        return FEMU_MEDIA_DEALLOCATE;
    case FEMU_NVM_FLUSH:
    default:
        return FEMU_MEDIA_FLUSH;
    }
}

uint64_t femu_nvm_media(FemuNsMedia *nm, IoCounters *io, FemuNvmOpcode opcode,
                        FemuMediaReq *r)
{
    r->op = media_op(opcode);
    if (r->op == FEMU_MEDIA_READ) {
        io->bytes_read += r->len;
        io->read_cmds++;
    } else if (r->op == FEMU_MEDIA_WRITE) {
        io->bytes_written += r->len;
        io->write_cmds++;
    }
    return femu_ns_media_submit_req(nm, io, r);
}
