/*
 * The whitebox namespace's standard Read and Write rules over chunks, its chunk reset's
 * media request and its statistics: shared by the QEMU device (ocssd.c) and femu-sim, so
 * that the two cannot drift. A standard command may span chunks; each chunk part follows
 * chunk.h's rules.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_OCSSD_IO_H
#define FEMU_OCSSD_IO_H

#include "../media/media.h"
#include "chunk.h"

/* A Read of [slba, slba + nlb): each chunk part as oc_read_check has it; the first failure. */
uint16_t oc_io_read_check(const OcChunkSet *cs, uint64_t slba, uint64_t nlb, bool dulbe);
/* A Write that oc_write_check_span allowed, its data in place: each part's write pointer. */
void oc_io_write_commit(OcChunkSet *cs, uint64_t slba, uint64_t nlb);
/* Dataset Management: chunks are freed by a reset; a range is checked, nothing changes. */
uint16_t oc_io_dsm_check(const OcChunkSet *cs, uint64_t slba, uint64_t nlb);
/* The erase of a chunk that oc_reset reset (base: where LBA 0 is in the device's storage). */
FemuMediaReq oc_io_reset_req(const OcChunkSet *cs, uint32_t nsid, uint64_t base,
                             uint8_t lba_shift, uint64_t chunk, uint64_t now);
/* The namespace's statistics: chunks by state, erases, and the vector commands' counts. */
void oc_io_stats(const OcChunkSet *cs, uint64_t vector_cmds, uint64_t failed_lbas,
                 FemuMediaStatFn *emit, void *opaque);

#endif
