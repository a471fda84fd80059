/*
 * The saved-state format as the tests read it, written here independently of the model's
 * own helpers (hw/femu/media/record.h), so a change of format shows up as a failing test.
 */
#ifndef TESTS_UNIT_SAVED_FORMAT_H
#define TESTS_UNIT_SAVED_FORMAT_H

#include <glib.h>
#include <stdint.h>

static inline uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;

    for (int i = 0; i < n; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static inline void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

/* The check the format defines: the first 4 bytes of MD5(le64 salt, bytes). */
static inline uint32_t md5_check(uint64_t salt, const uint8_t *p, size_t len)
{
    GChecksum *ck = g_checksum_new(G_CHECKSUM_MD5);
    uint8_t s[8], d[16];
    gsize dlen = sizeof(d);

    put_le(s, salt, 8);
    g_checksum_update(ck, s, 8);
    g_checksum_update(ck, p, len);
    g_checksum_get_digest(ck, d, &dlen);
    g_checksum_free(ck);
    return (uint32_t)le(d, 4);
}

#endif
