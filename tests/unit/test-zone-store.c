/*
 * The saved zone state (zone_store_*): the byte format, a round trip through a power
 * cycle, every configuration mismatch refused with the saved and the new value, and
 * damage: a torn update falls back to the previous record, a flipped bit too, and a zone
 * that no record explains is refused.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>
#include "zns/zone.h"

#define HDR 64          /* header bytes */
#define REC 32          /* record slot bytes, two per zone */
#define ZDE 128

#include "zone-states.h"
#include "saved-format.h"

static ZoneConfig base(void)
{
    return (ZoneConfig){ .nr_zones = 12, .zone_size = 16, .zone_cap = 12, .max_open = 4,
                         .max_active = 8, .zde_bytes = ZDE, .lba_bytes = 512 };
}

static uint8_t *slot(uint8_t *store, uint64_t zone, unsigned s)
{
    return store + HDR + (zone * 2 + s) * REC;
}

/* The slot holding zone's newest record (the higher sequence number). */
static uint8_t *newest(uint8_t *store, uint64_t zone)
{
    return le(slot(store, zone, 0), 8) > le(slot(store, zone, 1), 8) ? slot(store, zone, 0)
                                                                      : slot(store, zone, 1);
}

static uint8_t *oldest(uint8_t *store, uint64_t zone)
{
    uint8_t *n = newest(store, zone);
    return n == slot(store, zone, 0) ? slot(store, zone, 1) : slot(store, zone, 0);
}

static ZoneSet *new_set(ZoneConfig c)
{
    char *err = NULL;
    ZoneSet *zs = zone_set_new(&c, &err);

    g_assert_null(err);
    return zs;
}

/* A set on a fresh store of its own. */
static ZoneSet *fresh(ZoneConfig c, uint8_t **store)
{
    ZoneSet *zs = new_set(c);

    *store = g_malloc0(zone_store_size(&c));
    g_assert_cmpint(zone_store_open(zs, *store, NULL), ==, ZONE_STORE_FRESH);
    zone_store_format(zs);
    return zs;
}

/* What the next QEMU would see: a new set opened on the store. */
static ZoneSet *reopen(ZoneConfig c, uint8_t *store)
{
    ZoneSet *zs = new_set(c);
    char *err = NULL;

    if (zone_store_open(zs, store, &err) != ZONE_STORE_LOADED) {
        g_error("reopen refused: %s", err);
    }
    return zs;
}

/* The store is refused; err names every word in `names`; zs stays as created. */
static void refused(ZoneConfig c, uint8_t *store, const char *const *names)
{
    ZoneSet *zs = new_set(c);
    char *err = NULL;

    g_assert_cmpint(zone_store_open(zs, store, &err), ==, ZONE_STORE_ERROR);
    g_assert_nonnull(err);
    for (const char *const *n = names; *n; n++) {
        if (!strstr(err, *n)) {
            g_error("'%s' does not name '%s'", err, *n);
        }
    }
    g_assert_null(zs->store);
    for (uint64_t i = 0; i < c.nr_zones; i++) {
        g_assert_cmpint(zs->zones[i].state, ==, E);
        g_assert_cmpuint(zs->zones[i].wp, ==, i * c.zone_size);
    }
    g_assert_cmpuint(zs->nr_active, ==, 0);
    /* and it can still start fresh somewhere else */
    {
        uint8_t *other = g_malloc0(zone_store_size(&c));
        g_assert_cmpint(zone_store_open(zs, other, NULL), ==, ZONE_STORE_FRESH);
        zone_set_free(zs);
        g_free(other);
    }
    g_free(err);
}

static void ok(ZoneStatus st)
{
    g_assert_cmpint(st, ==, ZONE_OK);
}

static uint64_t zs_lba(const ZoneSet *zs, uint64_t z)
{
    return z * zs->cfg.zone_size;
}

/* Zones in every state a power cycle treats differently; returns the extension used. */
static void populate(ZoneSet *zs, uint8_t *ext)
{
    for (int i = 0; i < ZDE; i++) {
        ext[i] = (uint8_t)(i * 7 + 1);
    }
    ok(zone_write(zs, zs_lba(zs, 0), 3, false, NULL));                 /* IO, written */
    ok(zone_manage(zs, ZONE_ACTION_OPEN, zs_lba(zs, 1), false, NULL));  /* EO, blank */
    ok(zone_write(zs, zs_lba(zs, 2), 2, false, NULL));
    ok(zone_manage(zs, ZONE_ACTION_CLOSE, zs_lba(zs, 2), false, NULL)); /* C, written */
    ok(zone_manage(zs, ZONE_ACTION_FINISH, zs_lba(zs, 3), false, NULL)); /* F */
    ok(zone_write(zs, zs_lba(zs, 4), 1, false, NULL));
    zone_fail(zs, 4, RO);                                                /* RO */
    zone_fail(zs, 5, OFF);                                               /* OFF */
    ok(zone_manage(zs, ZONE_ACTION_SET_ZDE, zs_lba(zs, 6), false, ext)); /* C, ZDEV */
    ok(zone_manage(zs, ZONE_ACTION_SET_ZDE, zs_lba(zs, 7), false, ext));
    ok(zone_manage(zs, ZONE_ACTION_OPEN, zs_lba(zs, 7), false, NULL));  /* EO, ZDEV */
    ok(zone_manage(zs, ZONE_ACTION_OPEN, zs_lba(zs, 8), false, NULL));
    ok(zone_manage(zs, ZONE_ACTION_CLOSE, zs_lba(zs, 8), false, NULL)); /* C, blank */
    ok(zone_write(zs, zs_lba(zs, 9), 5, false, NULL));
    ok(zone_manage(zs, ZONE_ACTION_RESET, zs_lba(zs, 9), false, NULL)); /* E again */
}

/* zone -> state and write pointer offset after a power cycle */
static const struct { ZoneState st; uint64_t wp; bool zdev; } after[12] = {
    { C, 3 }, { E, 0 }, { C, 2 }, { F, 12 }, { RO, 1 }, { OFF, 0 }, { C, 0, true },
    { C, 0, true }, { E, 0 }, { E, 0 }, { E, 0 }, { E, 0 },
};

/* The zones as populate() left them after a power cycle (but zone skip). */
static void check_after_except(const ZoneSet *zs, const uint8_t *ext, uint64_t skip)
{
    for (uint64_t i = 0; i < 12; i++) {
        const Zone *z = &zs->zones[i];
        if (i == skip) {
            continue;
        }
        g_assert_cmpint(z->state, ==, after[i].st);
        g_assert_cmpuint(z->wp, ==, zs_lba(zs, i) + after[i].wp);
        g_assert_cmpuint(!!(z->attrs & ZONE_ATTR_ZDEV), ==, after[i].zdev);
        if (after[i].zdev) {
            g_assert_cmpmem(zone_zde(zs, i), ZDE, ext, ZDE);
        } else {
            g_assert_null(zone_zde(zs, i));
        }
    }
    g_assert_cmpuint(zs->nr_open, ==, 0);
    g_assert_cmpuint(zs->nr_active, ==, 4);
}

static void check_after(const ZoneSet *zs, const uint8_t *ext)
{
    check_after_except(zs, ext, UINT64_MAX);
}

static void test_format(void)
{
    ZoneConfig c = base();
    uint8_t *store, ext[ZDE];
    ZoneSet *zs = fresh(c, &store);

    g_assert_cmpuint(zone_store_size(&c), ==, HDR + 12 * (2 * REC + ZDE));
    /* header: magic, version 2, geometry, LBA size, check */
    g_assert_cmpmem(store, 4, "FZNS", 4);
    g_assert_cmpuint(le(store + 4, 4), ==, 2);
    g_assert_cmpuint(le(store + 8, 8), ==, 12);
    g_assert_cmpuint(le(store + 16, 8), ==, 16);
    g_assert_cmpuint(le(store + 24, 8), ==, 12);
    g_assert_cmpuint(le(store + 32, 4), ==, ZDE);
    g_assert_cmpuint(le(store + 36, 4), ==, 512);
    g_assert_cmpuint(le(store + 60, 4), ==, md5_check(UINT64_MAX, store, 60));
    /* a fresh store holds no record */
    for (size_t i = HDR; i < zone_store_size(&c); i++) {
        g_assert_cmpuint(store[i], ==, 0);
    }

    populate(zs, ext);
    /* zone 2: written (seq 1, slot 1), then closed (seq 2, slot 0) */
    {
        const uint8_t *r = slot(store, 2, 0), *prev = slot(store, 2, 1);
        g_assert_cmpuint(le(r, 8), ==, 2);
        g_assert_cmpuint(le(r + 8, 8), ==, zs_lba(zs, 2) + 2);
        g_assert_cmpuint(r[16], ==, C);
        g_assert_cmpuint(r[17], ==, 0);
        g_assert_cmpuint(le(r + 28, 4), ==, md5_check(2, r, 28));
        g_assert_cmpuint(le(prev, 8), ==, 1);
        g_assert_cmpuint(prev[16], ==, IO);
    }
    /* zone 6: its extension, checksummed in the record */
    {
        const uint8_t *r = newest(store, 6);
        const uint8_t *x = store + HDR + 12 * 2 * REC + 6 * ZDE;
        g_assert_cmpmem(x, ZDE, ext, ZDE);
        g_assert_cmpuint(r[17], ==, ZONE_ATTR_ZDEV);
        g_assert_cmpuint(le(r + 20, 4), ==, md5_check(6, x, ZDE));
    }
    /* untouched zones have no record */
    for (size_t i = 0; i < 2 * REC; i++) {
        g_assert_cmpuint(slot(store, 11, 0)[i], ==, 0);
    }
    zone_set_free(zs);
    g_free(store);
}

static void test_round_trip(void)
{
    ZoneConfig c = base();
    uint8_t *store, ext[ZDE];
    ZoneSet *zs = fresh(c, &store);
    uint64_t lba;

    populate(zs, ext);
    zone_set_free(zs);
    zs = reopen(c, store);
    g_assert_cmpuint(zs->records_recovered, ==, 0);
    check_after(zs, ext);

    /* it keeps working from there, and comes back again */
    ok(zone_write(zs, zs_lba(zs, 0) + 3, 2, false, NULL));
    ok(zone_write(zs, zs_lba(zs, 6), 4, true, &lba));
    g_assert_cmpuint(lba, ==, zs_lba(zs, 6));
    ok(zone_manage(zs, ZONE_ACTION_RESET, zs_lba(zs, 7), false, NULL));
    zone_set_free(zs);
    zs = reopen(c, store);
    g_assert_cmpint(zs->zones[0].state, ==, C);
    g_assert_cmpuint(zs->zones[0].wp, ==, zs_lba(zs, 0) + 5);
    g_assert_cmpint(zs->zones[6].state, ==, C);
    g_assert_cmpuint(zs->zones[6].wp, ==, zs_lba(zs, 6) + 4);
    g_assert_cmpmem(zone_zde(zs, 6), ZDE, ext, ZDE);
    g_assert_cmpint(zs->zones[7].state, ==, E);
    g_assert_null(zone_zde(zs, 7));

    /* a power cycle by the device (controller reset) gives the same states */
    {
        uint8_t *s2;
        ZoneSet *live = fresh(c, &s2);
        populate(live, ext);
        zone_power_cycle(live);
        check_after(live, ext);
        zone_set_free(live);
        live = reopen(c, s2);
        check_after(live, ext);
        zone_set_free(live);
        g_free(s2);
    }
    zone_set_free(zs);
    g_free(store);
}

/* A store saved with one configuration, opened with another. */
static void mismatch(ZoneConfig saved, ZoneConfig now, const char *const *names)
{
    uint8_t *store = g_malloc0(MAX(zone_store_size(&saved), zone_store_size(&now)));
    ZoneSet *zs = new_set(saved);
    uint8_t ext[ZDE] = { 1 };

    g_assert_cmpint(zone_store_open(zs, store, NULL), ==, ZONE_STORE_FRESH);
    zone_store_format(zs);
    ok(zone_write(zs, 0, 1, false, NULL));
    if (saved.zde_bytes) {
        ok(zone_manage(zs, ZONE_ACTION_SET_ZDE, zs_lba(zs, 1), false, ext));
    }
    zone_set_free(zs);
    refused(now, store, names);
    g_free(store);
}

static void test_mismatch(void)
{
    ZoneConfig c = base(), o;

    o = c, o.zone_size = 32, o.nr_zones = 6, o.max_active = 6;
    mismatch(c, o, (const char *const[]){ "zns_zone_size_mb", "8192 bytes", "16384 bytes",
                                          NULL });
    o = c, o.zone_cap = 11;
    mismatch(c, o, (const char *const[]){ "zns_zone_cap", "6144 bytes", "5632 bytes", NULL });
    o = c, o.zde_bytes = 64;
    mismatch(c, o, (const char *const[]){ "zns_zd_ext_size=128", "now 64", NULL });
    o = c, o.zde_bytes = 0;
    mismatch(c, o, (const char *const[]){ "zns_zd_ext_size=128", "now 0", NULL });
    o = c, o.lba_bytes = 4096, o.zone_size = 2, o.zone_cap = 2;
    mismatch(c, o, (const char *const[]){ "512-byte", "4096-byte", "lba_index", NULL });
    o = c, o.nr_zones = 10;
    mismatch(c, o, (const char *const[]){ "12 zones", "10 zones", "devsz_mb", NULL });
    /* zone sizes in MiB when they are whole MiB */
    {
        ZoneConfig a = base(), b = base();
        a.zone_size = b.zone_cap = a.zone_cap = 2048;       /* 1 MiB of 512 B */
        b.zone_size = 4096;
        b.nr_zones = 6;
        b.max_active = 6;
        mismatch(a, b, (const char *const[]){ "zones of 1 MiB", "now 2 MiB",
                                              "zns_zone_size_mb", NULL });
    }
}

/* More Closed zones than a smaller zns_max_active allows: refused, not reset. */
static void test_max_active(void)
{
    ZoneConfig c = base(), small = base();
    uint8_t *store, ext[ZDE];
    ZoneSet *zs = fresh(c, &store);

    populate(zs, ext);      /* four zones come back Closed */
    zone_set_free(zs);
    small.max_open = 2;
    small.max_active = 3;
    refused(small, store, (const char *const[]){ "4 Closed zones", "zns_max_active=3",
                                                 "at least 4", NULL });
    small.max_active = 4;
    zs = reopen(small, store);
    g_assert_cmpuint(zs->nr_active, ==, 4);
    zone_set_free(zs);
    g_free(store);
}

static void test_header_damage(void)
{
    ZoneConfig c = base();
    uint8_t *store, ext[ZDE];
    ZoneSet *zs = fresh(c, &store);
    uint8_t saved[HDR];

    populate(zs, ext);
    zone_set_free(zs);
    memcpy(saved, store, HDR);

    /* the first version of the format had no checksums */
    put_le(store + 4, 1, 4);
    refused(c, store, (const char *const[]){ "version 1", "version 2", NULL });
    memcpy(store, saved, HDR);
    store[0] = 'X';
    refused(c, store, (const char *const[]){ "FZNS", "58", NULL });
    memcpy(store, saved, HDR);
    store[44] ^= 0x10;      /* a reserved byte: only the check sees it */
    refused(c, store, (const char *const[]){ "header is damaged", NULL });
    memcpy(store, saved, HDR);
    store[60] ^= 0x01;
    refused(c, store, (const char *const[]){ "header is damaged", NULL });
    /* no header, but records: not a fresh area */
    memset(store, 0, HDR);
    refused(c, store, (const char *const[]){ "header is missing", NULL });
    memcpy(store, saved, HDR);
    zs = reopen(c, store);
    check_after(zs, ext);
    zone_set_free(zs);
    g_free(store);
}

/*
 * Zone 2 is written twice more and the last update is cut after its first k bytes (the
 * rest of the slot as it was): the update before it is used.
 */
static void torn_update(int k)
{
    ZoneConfig c = base();
    uint8_t *store, ext[ZDE], before[REC], whole[REC];
    ZoneSet *zs = fresh(c, &store);
    uint8_t *r;

    populate(zs, ext);
    ok(zone_write(zs, zs_lba(zs, 2) + 2, 1, false, NULL));      /* wp 3 */
    r = oldest(store, 2);
    memcpy(before, r, REC);
    ok(zone_write(zs, zs_lba(zs, 2) + 3, 4, false, NULL));      /* wp 7, into r */
    g_assert_true(newest(store, 2) == r);
    memcpy(whole, r, REC);
    zone_set_free(zs);
    memcpy(r + k, before + k, REC - k);
    if (!memcmp(r, whole, REC)) {
        g_free(store);      /* the rest was the same bytes: nothing was cut */
        return;
    }

    zs = reopen(c, store);
    /* with nothing of it written (k = 0) the slot just holds the record before */
    g_assert_cmpuint(zs->records_recovered, ==, k ? 1 : 0);
    g_assert_cmpint(zs->zones[2].state, ==, C);
    g_assert_cmpuint(zs->zones[2].wp, ==, zs_lba(zs, 2) + 3);
    /* everything else as saved */
    check_after_except(zs, ext, 2);
    /* the next update goes over the damaged slot, the good one stays */
    ok(zone_write(zs, zs_lba(zs, 2) + 3, 1, false, NULL));
    g_assert_true(newest(store, 2) == r);
    g_assert_cmpuint(le(r, 8), ==, le(oldest(store, 2), 8) + 1);
    zone_set_free(zs);
    zs = reopen(c, store);
    g_assert_cmpuint(zs->records_recovered, ==, 0);
    g_assert_cmpuint(zs->zones[2].wp, ==, zs_lba(zs, 2) + 4);
    zone_set_free(zs);
    g_free(store);
}

static void test_torn_update(void)
{
    for (int k = 0; k < REC; k++) {
        torn_update(k);
    }
}

/* A flipped bit anywhere in the newest record: the previous one is used. */
static void test_flipped_bit(void)
{
    ZoneConfig c = base();
    uint8_t *store, ext[ZDE];
    ZoneSet *zs = fresh(c, &store);
    size_t len = zone_store_size(&c);
    g_autofree uint8_t *good = NULL;
    uint8_t *r;

    populate(zs, ext);
    ok(zone_write(zs, zs_lba(zs, 2) + 2, 1, false, NULL));      /* newest: wp 3 */
    zone_set_free(zs);
    good = g_memdup2(store, len);
    r = newest(store, 2);
    for (int bit = 0; bit < REC * 8; bit++) {
        memcpy(store, good, len);
        r[bit / 8] ^= 1u << (bit % 8);
        zs = reopen(c, store);
        g_assert_cmpuint(zs->records_recovered, ==, 1);
        /* the record before: written up to 2 and closed */
        g_assert_cmpint(zs->zones[2].state, ==, C);
        g_assert_cmpuint(zs->zones[2].wp, ==, zs_lba(zs, 2) + 2);
        zone_set_free(zs);
    }
    /* both records of a zone damaged: nothing explains it */
    memcpy(store, good, len);
    newest(store, 2)[9] ^= 0x01;
    oldest(store, 2)[9] ^= 0x01;
    refused(c, store, (const char *const[]){ "zone 2", "neither", NULL });
    /* a record of another zone copied over: the zone index is in the check */
    memcpy(store, good, len);
    memcpy(slot(store, 2, 0), slot(store, 8, 0), 2 * REC);     /* two records */
    refused(c, store, (const char *const[]){ "zone 2", NULL });
    /* a whole record with a state that cannot be: not valid either */
    memcpy(store, good, len);
    r = newest(store, 2);
    r[16] = 0x7;
    put_le(r + 28, md5_check(2, r, 28), 4);
    zs = reopen(c, store);
    g_assert_cmpuint(zs->records_recovered, ==, 1);
    g_assert_cmpuint(zs->zones[2].wp, ==, zs_lba(zs, 2) + 2);
    zone_set_free(zs);
    /* a record in the slot its sequence number does not select */
    memcpy(store, good, len);
    r = newest(store, 2);
    put_le(r, le(r, 8) + 1, 8);
    put_le(r + 28, md5_check(2, r, 28), 4);
    zs = reopen(c, store);
    g_assert_cmpuint(zs->records_recovered, ==, 1);
    zone_set_free(zs);
    /* a damaged extension: its record is not valid, the one before has no extension */
    memcpy(store, good, len);
    store[HDR + 12 * 2 * REC + 6 * ZDE + 5] ^= 0x40;
    zs = reopen(c, store);
    g_assert_cmpuint(zs->records_recovered, ==, 1);
    g_assert_cmpint(zs->zones[6].state, ==, E);
    g_assert_null(zone_zde(zs, 6));
    zone_set_free(zs);
    /* a torn first record of a zone: the zone as created */
    memcpy(store, good, len);
    memset(slot(store, 0, 0), 0, 2 * REC);
    memset(slot(store, 0, 1), 0xa5, 8);
    zs = reopen(c, store);
    g_assert_cmpint(zs->zones[0].state, ==, E);
    g_assert_cmpuint(zs->records_recovered, ==, 1);
    zone_set_free(zs);
    g_free(store);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/zone-store/format", test_format);
    g_test_add_func("/zone-store/round-trip", test_round_trip);
    g_test_add_func("/zone-store/mismatch", test_mismatch);
    g_test_add_func("/zone-store/max-active", test_max_active);
    g_test_add_func("/zone-store/header-damage", test_header_damage);
    g_test_add_func("/zone-store/torn-update", test_torn_update);
    g_test_add_func("/zone-store/flipped-bit", test_flipped_bit);
    return g_test_run();
}
