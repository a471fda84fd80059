/*
 * What one command costs the zone state, whatever the number of zones: each command saves
 * the records of the zones it changed and nothing else (counted, and checked byte by byte
 * in the saved state), and the zone an implicit open closes is the least recently
 * implicitly opened one, as a scan of every zone by open time would choose.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>
#include "zns/zone.h"

#define HDR 64
#define REC 32

#define E ZONE_EMPTY
#define IO ZONE_IMPLICIT_OPEN
#define C ZONE_CLOSED
#define F ZONE_FULL

typedef struct Drive {
    ZoneConfig c;
    ZoneSet *zs;
    uint8_t *store;
    size_t len;
    uint8_t *before;
    uint64_t written;
} Drive;

static Drive drive(uint64_t nr_zones, uint32_t max_open, uint32_t max_active)
{
    Drive d = { .c = { .nr_zones = nr_zones, .zone_size = 64, .zone_cap = 48,
                       .max_open = max_open, .max_active = max_active, .zde_bytes = 64,
                       .lba_bytes = 512 } };

    d.zs = zone_set_new(&d.c, NULL);
    g_assert_nonnull(d.zs);
    d.len = zone_store_size(&d.c);
    d.store = g_malloc0(d.len);
    d.before = g_malloc0(d.len);
    g_assert_cmpint(zone_store_open(d.zs, d.store, NULL), ==, ZONE_STORE_FRESH);
    zone_store_format(d.zs);
    return d;
}

static void drive_free(Drive *d)
{
    zone_set_free(d->zs);
    g_free(d->store);
    g_free(d->before);
}

static void mark(Drive *d)
{
    memcpy(d->before, d->store, d->len);
    d->written = d->zs->records_written;
}

static int cmp_u64(gconstpointer a, gconstpointer b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Since mark(): `records` records were saved, and the saved state differs only in the
 * record slots of the zones listed (UINT64_MAX ends the list), and in the extension of
 * zone zde_zone (UINT64_MAX: none).
 */
static void expect(Drive *d, uint64_t records, uint64_t zde_zone, const uint64_t *zones)
{
    uint64_t slots_end = HDR + d->c.nr_zones * 2 * REC;
    GArray *changed = g_array_new(FALSE, FALSE, sizeof(uint64_t));

    g_assert_cmpuint(d->zs->records_written - d->written, ==, records);
    g_assert_cmpmem(d->store, HDR, d->before, HDR);
    for (size_t off = HDR; off < d->len; off++) {
        if (d->store[off] == d->before[off]) {
            continue;
        }
        if (off < slots_end) {
            uint64_t z = (off - HDR) / (2 * REC);
            if (!changed->len || g_array_index(changed, uint64_t, changed->len - 1) != z) {
                g_array_append_val(changed, z);
            }
        } else {
            g_assert_cmpuint((off - slots_end) / d->c.zde_bytes, ==, zde_zone);
        }
    }
    {
        GArray *want = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        for (const uint64_t *z = zones; *z != UINT64_MAX; z++) {
            g_array_append_val(want, *z);
        }
        g_array_sort(want, cmp_u64);
        g_assert_cmpuint(changed->len, ==, want->len);
        for (guint i = 0; i < want->len; i++) {
            g_assert_cmpuint(g_array_index(changed, uint64_t, i), ==,
                             g_array_index(want, uint64_t, i));
        }
        g_array_free(want, TRUE);
    }
    g_array_free(changed, TRUE);
}

#define ZONES(...) ((const uint64_t[]){ __VA_ARGS__, UINT64_MAX })
#define NONE ((const uint64_t[]){ UINT64_MAX })

static uint64_t lba(const Drive *d, uint64_t z)
{
    return z * d->c.zone_size;
}

static void ok(ZoneStatus st)
{
    g_assert_cmpint(st, ==, ZONE_OK);
}

/* Every command on a drive of 20000 zones saves one or two records, not the drive. */
static void test_records_per_command(void)
{
    Drive d = drive(20000, 2, 3);
    uint8_t ext[64];
    uint64_t at;

    memset(ext, 0x3c, sizeof(ext));
    mark(&d);
    ok(zone_write(d.zs, lba(&d, 100), 4, false, NULL));         /* E -> IO */
    expect(&d, 1, UINT64_MAX, ZONES(100));
    mark(&d);
    ok(zone_write(d.zs, lba(&d, 100) + 4, 4, false, NULL));     /* in the middle */
    expect(&d, 1, UINT64_MAX, ZONES(100));
    mark(&d);
    ok(zone_write(d.zs, lba(&d, 19999), 1, true, &at));         /* an append opens */
    g_assert_cmpuint(at, ==, lba(&d, 19999));
    expect(&d, 1, UINT64_MAX, ZONES(19999));
    mark(&d);
    /* the open limit is reached: zone 100 (opened first) is closed for zone 7 */
    ok(zone_write(d.zs, lba(&d, 7), 1, false, NULL));
    expect(&d, 2, UINT64_MAX, ZONES(7, 100));
    g_assert_cmpint(d.zs->zones[100].state, ==, C);
    mark(&d);
    ok(zone_write(d.zs, lba(&d, 7) + 1, 47, false, NULL));      /* fills zone 7 */
    expect(&d, 1, UINT64_MAX, ZONES(7));
    g_assert_cmpint(d.zs->zones[7].state, ==, F);
    mark(&d);
    ok(zone_manage(d.zs, ZONE_ACTION_RESET, lba(&d, 7), false, NULL));
    expect(&d, 1, UINT64_MAX, ZONES(7));
    mark(&d);
    ok(zone_manage(d.zs, ZONE_ACTION_OPEN, lba(&d, 5000), false, NULL));
    expect(&d, 1, UINT64_MAX, ZONES(5000));
    mark(&d);
    ok(zone_manage(d.zs, ZONE_ACTION_CLOSE, lba(&d, 5000), false, NULL));
    expect(&d, 1, UINT64_MAX, ZONES(5000));
    mark(&d);
    ok(zone_manage(d.zs, ZONE_ACTION_FINISH, lba(&d, 5000), false, NULL));
    expect(&d, 1, UINT64_MAX, ZONES(5000));
    mark(&d);
    ok(zone_manage(d.zs, ZONE_ACTION_SET_ZDE, lba(&d, 12345), false, ext));
    expect(&d, 1, 12345, ZONES(12345));
    /* nothing changes, nothing is saved: a no-op and refusals */
    mark(&d);
    ok(zone_manage(d.zs, ZONE_ACTION_CLOSE, lba(&d, 100), false, NULL));
    g_assert_cmpint(zone_write(d.zs, lba(&d, 100), 1, false, NULL), ==,
                    ZONE_INVALID_WRITE);
    g_assert_cmpint(zone_write(d.zs, lba(&d, 300), 1, false, NULL), ==,
                    ZONE_TOO_MANY_ACTIVE);
    g_assert_cmpint(zone_manage(d.zs, ZONE_ACTION_OPEN, lba(&d, 5000), false, NULL), ==,
                    ZONE_INVALID_TRANSITION);
    expect(&d, 0, UINT64_MAX, NONE);
    /* a write that is only checked saves nothing; its commit saves it */
    mark(&d);
    ok(zone_write_check(d.zs, lba(&d, 100) + 8, 2, false, &at));
    expect(&d, 0, UINT64_MAX, NONE);
    g_assert_cmpint(d.zs->zones[100].state, ==, C);
    zone_write_commit(d.zs, at, 2);
    expect(&d, 1, UINT64_MAX, ZONES(100));          /* reopened beside 19999 */
    g_assert_cmpint(d.zs->zones[100].state, ==, IO);
    /* an explicit open needs room: 19999, implicitly opened before 100 was again */
    ok(zone_manage(d.zs, ZONE_ACTION_RESET, lba(&d, 12345), false, NULL));
    mark(&d);
    ok(zone_manage(d.zs, ZONE_ACTION_OPEN, lba(&d, 12345), false, NULL));
    expect(&d, 2, UINT64_MAX, ZONES(12345, 19999));
    g_assert_cmpint(d.zs->zones[19999].state, ==, C);
    /* a power cycle saves the zones it changes: the open ones */
    mark(&d);
    zone_power_cycle(d.zs);
    expect(&d, 2, UINT64_MAX, ZONES(100, 12345));
    g_assert_cmpint(d.zs->zones[100].state, ==, C);
    g_assert_cmpint(d.zs->zones[12345].state, ==, E);
    /* select all: the zones it applies to */
    mark(&d);
    ok(zone_manage(d.zs, ZONE_ACTION_RESET, 0, true, NULL));
    expect(&d, 3, UINT64_MAX, ZONES(100, 5000, 19999));
    drive_free(&d);
}

/*
 * The implicit-close victim against the rule written out: the implicitly opened zone with
 * the oldest implicit open, found by looking at every zone. Random writes, appends, opens,
 * closes, finishes and resets over 3000 zones with 40 open at most.
 */
static void test_victim_is_least_recently_opened(void)
{
    const uint64_t n = 3000;
    Drive d = drive(n, 40, 0);
    uint64_t *opened_at = g_new0(uint64_t, n), clock = 1, victims = 0;
    GRand *g = g_rand_new_with_seed(7);

    for (int step = 0; step < 60000; step++) {
        uint64_t z = (uint64_t)g_rand_int_range(g, 0, (gint32)n), expect_victim = UINT64_MAX;
        int kind = g_rand_int_range(g, 0, 100);
        bool would_open;

        /* the rule: when opening needs room, the oldest implicit open goes */
        would_open = d.zs->zones[z].state == E || d.zs->zones[z].state == C;
        if (would_open && d.zs->nr_open == d.c.max_open) {
            for (uint64_t i = 0; i < n; i++) {
                if (d.zs->zones[i].state == IO &&
                    (expect_victim == UINT64_MAX || opened_at[i] < opened_at[expect_victim])) {
                    expect_victim = i;
                }
            }
        }

        if (kind < 60) {
            ZoneStatus st = zone_write(d.zs, lba(&d, z), 1, true, NULL);
            if (st == ZONE_OK && would_open) {
                opened_at[z] = clock++;
            }
            if (st != ZONE_OK) {
                expect_victim = UINT64_MAX;
            }
        } else if (kind < 70) {
            if (zone_manage(d.zs, ZONE_ACTION_OPEN, lba(&d, z), false, NULL) != ZONE_OK ||
                !would_open) {
                expect_victim = UINT64_MAX;
            }
        } else {
            static const ZoneAction others[] = { ZONE_ACTION_CLOSE, ZONE_ACTION_FINISH,
                                                 ZONE_ACTION_RESET };
            zone_manage(d.zs, others[g_rand_int_range(g, 0, 3)], lba(&d, z), false, NULL);
            expect_victim = UINT64_MAX;
        }
        /* that zone and no other was closed: the count is back at the limit */
        if (expect_victim != UINT64_MAX) {
            g_assert_cmpint(d.zs->zones[expect_victim].state, ==, C);
            g_assert_cmpuint(d.zs->nr_open, ==, d.c.max_open);
            victims++;
        }
    }
    /* the test saw many implicit closes */
    g_assert_cmpuint(victims, >, 1000);
    g_rand_free(g);
    g_free(opened_at);
    drive_free(&d);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/zone-cost/records-per-command", test_records_per_command);
    g_test_add_func("/zone-cost/victim-is-least-recently-opened",
                    test_victim_is_least_recently_opened);
    return g_test_run();
}
