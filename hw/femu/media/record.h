/*
 * Little helpers for state saved in the backend (zone and chunk records): little-endian
 * fields, a checksum, and the "fresh area" test. QEMU-free.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_MEDIA_RECORD_H
#define FEMU_MEDIA_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <glib.h>

static inline void record_put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static inline uint64_t record_get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;

    for (int i = 0; i < bytes; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static inline bool record_all_zero(const uint8_t *p, size_t len)
{
    return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

/* The first four bytes of the MD5 of salt (e.g. a record's index) and p: a check, not security. */
static inline uint32_t record_checksum(GChecksum *ck, uint64_t salt, const uint8_t *p, size_t len)
{
    uint8_t s[8], digest[16];
    gsize dlen = sizeof(digest);

    g_checksum_reset(ck);
    record_put_le(s, salt, 8);
    g_checksum_update(ck, s, sizeof(s));
    g_checksum_update(ck, p, len);
    g_checksum_get_digest(ck, digest, &dlen);
    return (uint32_t)record_get_le(digest, 4);
}

#endif
