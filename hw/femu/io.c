/*
 * I/O commands: the namespace's kind runs them; a Flush of every namespace drains every
 * model.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "femu.h"
#include "trace.h"

static bool is_nvm_opcode(uint8_t opcode)
{
    switch (opcode) {
    case NVME_CMD_FLUSH:
    case NVME_CMD_WRITE:
    case NVME_CMD_READ:
    case NVME_CMD_COMPARE:
    case NVME_CMD_WRITE_ZEROES:
    case NVME_CMD_DSM:
    case NVME_CMD_IO_MGMT_RECV:
    case NVME_CMD_IO_MGMT_SEND:
        return true;
    default:
        return false;
    }
}

uint16_t femu_io_cmd(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd, uint64_t now,
                     uint64_t *deadline)
{
    uint32_t nsid = le32_to_cpu(cmd->nsid);
    FemuNamespace *ns = femu_ns(n, nsid);

    if (NVME_CMD_FLAGS_FUSE(cmd->flags)) {
        return NVME_INVALID_FIELD;
    }
    if (n->frontend) {
        /* link bookings before the previous command's arrival are over for good */
        femu_frontend_retire(n->frontend, MIN(n->frontend_last_ns, now));
        n->frontend_last_ns = now;
        /* the firmware handles the command first, on the earliest free core */
        now = femu_frontend_command(n->frontend, now);
        *deadline = MAX(*deadline, now);
    }
    if (cmd->opcode == NVME_CMD_FLUSH && nsid == NVME_NSID_BROADCAST && n->vwc) {
        *deadline = femu_ns_flush_all(n, now);
        return NVME_SUCCESS;
    }
    if (!ns) {
        /* a namespace that exists but is not active, or a command that needs one */
        if ((nsid && nsid <= n->num_namespaces) || is_nvm_opcode(cmd->opcode)) {
            return NVME_INVALID_NSID;
        }
        trace_femu_invalid_opcode(req->sq->sqid, cmd->opcode);
        return NVME_INVALID_OPCODE;
    }
    return ns->kind->io(n, req, ns, cmd, now, deadline);
}
