/*
 * The PLP tools' data pattern (see plp-pattern.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "plp-pattern.h"

#include <string.h>

static const char magic[8] = { 'F', 'E', 'M', 'U', 'P', 'L', 'P', '1' };

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

uint64_t plp_pattern_mix(uint64_t lba, uint64_t gen)
{
    return splitmix64(lba ^ splitmix64(gen));
}

static void make_unit(uint8_t *u, uint64_t lba, uint64_t gen)
{
    memcpy(u, magic, 8);
    put_le64(u + 8, lba);
    put_le64(u + 16, gen);
    put_le64(u + 24, plp_pattern_mix(lba, gen));
}

void plp_pattern_fill(void *buf, uint32_t lba_size, uint64_t slba, uint32_t nlb, uint64_t gen)
{
    uint8_t *p = buf;

    for (uint32_t i = 0; i < nlb; i++, p += lba_size) {
        make_unit(p, slba + i, gen);
        for (uint32_t o = PLP_PATTERN_UNIT; o < lba_size; o += PLP_PATTERN_UNIT)
            memcpy(p + o, p, PLP_PATTERN_UNIT);
    }
}

enum plp_sector_kind plp_pattern_check(const void *sector, uint32_t lba_size, uint64_t lba,
                                       uint64_t *gen, uint64_t *lba_found)
{
    const uint8_t *p = sector;
    uint64_t l, g;
    uint8_t unit[PLP_PATTERN_UNIT];
    int zero = 1;

    for (uint32_t i = 0; i < lba_size && zero; i++)
        zero = p[i] == 0;
    if (zero)
        return PLP_SECTOR_ZERO;
    if (memcmp(p, magic, 8))
        return PLP_SECTOR_GARBLED;
    l = get_le64(p + 8);
    g = get_le64(p + 16);
    make_unit(unit, l, g);
    for (uint32_t o = 0; o < lba_size; o += PLP_PATTERN_UNIT)
        if (memcmp(p + o, unit, PLP_PATTERN_UNIT))
            return PLP_SECTOR_GARBLED;
    if (gen)
        *gen = g;
    if (lba_found)
        *lba_found = l;
    return l == lba ? PLP_SECTOR_OK : PLP_SECTOR_OTHER_LBA;
}

const char *plp_sector_kind_name(enum plp_sector_kind k)
{
    switch (k) {
    case PLP_SECTOR_ZERO: return "zero";
    case PLP_SECTOR_OK: return "intact";
    case PLP_SECTOR_OTHER_LBA: return "other-lba";
    default: return "garbled";
    }
}
