/*
 * The data the PLP tools write: each LBA's content is a function of (LBA, generation) only,
 * so a checker on the host can tell from a sector alone which write put it there.
 *
 * A sector is one 32-byte unit repeated: "FEMUPLP1", LBA, generation, mix(LBA, generation)
 * (three little-endian 64-bit words; mix is splitmix64(LBA ^ splitmix64(generation))).
 * The repetition makes a torn sector (half old, half new) or a shifted one visible.
 * tests/guest/plp_check.py implements the same function.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PLP_PATTERN_H
#define PLP_PATTERN_H

#include <stdint.h>

#define PLP_PATTERN_UNIT 32

enum plp_sector_kind {
    PLP_SECTOR_ZERO,      /* all zeroes (never written, or reset) */
    PLP_SECTOR_OK,        /* an intact sector of this LBA; *gen says which write */
    PLP_SECTOR_OTHER_LBA, /* intact, but written for another LBA (*gen, *lba_found) */
    PLP_SECTOR_GARBLED,   /* anything else */
};

uint64_t plp_pattern_mix(uint64_t lba, uint64_t gen);
/* Fill nlb sectors of lba_size bytes (a multiple of 32) for LBAs slba.. with gen. */
void plp_pattern_fill(void *buf, uint32_t lba_size, uint64_t slba, uint32_t nlb, uint64_t gen);
/* Classify one sector read from LBA lba. gen and lba_found may be NULL. */
enum plp_sector_kind plp_pattern_check(const void *sector, uint32_t lba_size, uint64_t lba,
                                       uint64_t *gen, uint64_t *lba_found);
const char *plp_sector_kind_name(enum plp_sector_kind k);

#endif
