/*
 * The ZNS zone state machine against the NVMe ZNS 1.1 rules: every transition, every
 * refusal, resource accounting, append, reads, reports, persistence, and a randomized
 * comparison with a reference model.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>
#include "zns/zone.h"

#include "zone-states.h"

#define A_CLOSE ZONE_ACTION_CLOSE
#define A_FINISH ZONE_ACTION_FINISH
#define A_OPEN ZONE_ACTION_OPEN
#define A_RESET ZONE_ACTION_RESET
#define A_OFFLINE ZONE_ACTION_OFFLINE
#define A_ZDE ZONE_ACTION_SET_ZDE

static const ZoneState all_states[] = { E, IO, EO, C, F, RO, OFF };
static const ZoneAction all_actions[] = { A_CLOSE, A_FINISH, A_OPEN, A_RESET, A_OFFLINE, A_ZDE };

/* ---- fixture: a zone set that records every on_change call ---- */

typedef struct Ev {
    uint64_t zone;
    ZoneState from, to;
} Ev;

typedef struct T {
    ZoneSet *zs;
    GArray *ev;
} T;

static void record(void *opaque, uint64_t zone, ZoneState from, ZoneState to)
{
    Ev e = { zone, from, to };
    g_array_append_val((GArray *)opaque, e);
}

static ZoneConfig cfg(uint64_t nr, uint64_t size, uint64_t cap, uint32_t mo, uint32_t ma,
                      uint32_t zde, bool cross)
{
    return (ZoneConfig){ .nr_zones = nr, .zone_size = size, .zone_cap = cap,
                         .max_open = mo, .max_active = ma, .zde_bytes = zde,
                         .cross_zone_read = cross };
}

static T mk_cfg(ZoneConfig c)
{
    char *err = NULL;
    T t;

    t.zs = zone_set_new(&c, &err);
    g_assert_cmpstr(err, ==, NULL);
    g_assert_nonnull(t.zs);
    t.ev = g_array_new(FALSE, FALSE, sizeof(Ev));
    t.zs->on_change = record;
    t.zs->opaque = t.ev;
    return t;
}

static T mk(uint64_t nr, uint64_t size, uint64_t cap, uint32_t mo, uint32_t ma)
{
    return mk_cfg(cfg(nr, size, cap, mo, ma, 64, false));
}

static void rm(T *t)
{
    zone_set_free(t->zs);
    g_array_free(t->ev, TRUE);
}

static uint64_t zslba(const ZoneSet *zs, uint64_t z)
{
    return z * zs->cfg.zone_size;
}

static uint64_t zcap_end(const ZoneSet *zs, uint64_t z)
{
    return zslba(zs, z) + zs->cfg.zone_cap;
}

static bool is_open(ZoneState s)
{
    return s == IO || s == EO;
}

static bool is_active(ZoneState s)
{
    return is_open(s) || s == C;
}

/* The counters match a recount; write pointers sit where each state allows; limits hold. */
static void check_invariants(const ZoneSet *zs)
{
    uint32_t open = 0, active = 0;

    for (uint64_t i = 0; i < zs->cfg.nr_zones; i++) {
        const Zone *z = &zs->zones[i];
        open += is_open(z->state);
        active += is_active(z->state);
        g_assert_cmpuint(z->zslba, ==, zslba(zs, i));
        g_assert_cmpuint(z->wp, >=, z->zslba);
        g_assert_cmpuint(z->wp, <=, zcap_end(zs, i));
        switch (z->state) {
        case E:
            g_assert_cmpuint(z->wp, ==, z->zslba);
            g_assert_cmpuint(z->attrs, ==, 0);
            break;
        case IO:
        case EO:
        case C:
            g_assert_cmpuint(z->wp, <, zcap_end(zs, i));
            break;
        case F:
            g_assert_cmpuint(z->wp, ==, zcap_end(zs, i));
            break;
        default:
            break;
        }
    }
    g_assert_cmpuint(zs->nr_open, ==, open);
    g_assert_cmpuint(zs->nr_active, ==, active);
    if (zs->cfg.max_open) {
        g_assert_cmpuint(zs->nr_open, <=, zs->cfg.max_open);
    }
    if (zs->cfg.max_active) {
        g_assert_cmpuint(zs->nr_active, <=, zs->cfg.max_active);
    }
}

static void ev_clear(T *t)
{
    g_array_set_size(t->ev, 0);
}

static void ev_expect(T *t, guint i, uint64_t zone, ZoneState from, ZoneState to)
{
    Ev *e;

    g_assert_cmpuint(i, <, t->ev->len);
    e = &g_array_index(t->ev, Ev, i);
    g_assert_cmpuint(e->zone, ==, zone);
    g_assert_cmpint(e->from, ==, from);
    g_assert_cmpint(e->to, ==, to);
}

/* Takes an Empty zone to state s (Closed and Read Only with a partly written zone). */
static void put(T *t, uint64_t z, ZoneState s)
{
    ZoneSet *zs = t->zs;
    uint64_t slba = zslba(zs, z);

    g_assert_cmpint(zs->zones[z].state, ==, E);
    switch (s) {
    case E:
        break;
    case IO:
        g_assert_cmpint(zone_write(zs, slba, 1, false, NULL), ==, ZONE_OK);
        break;
    case EO:
        g_assert_cmpint(zone_manage(zs, A_OPEN, slba, false, NULL), ==, ZONE_OK);
        break;
    case C:
        g_assert_cmpint(zone_write(zs, slba, 2, false, NULL), ==, ZONE_OK);
        g_assert_cmpint(zone_manage(zs, A_CLOSE, slba, false, NULL), ==, ZONE_OK);
        break;
    case F:
        g_assert_cmpint(zone_manage(zs, A_FINISH, slba, false, NULL), ==, ZONE_OK);
        break;
    case RO:
        g_assert_cmpint(zone_write(zs, slba, 1, false, NULL), ==, ZONE_OK);
        zone_fail(zs, z, RO);
        break;
    case OFF:
        zone_fail(zs, z, OFF);
        break;
    }
    g_assert_cmpint(zs->zones[z].state, ==, s);
    check_invariants(zs);
}

typedef struct Snap {
    Zone *zones;
    uint8_t *zde;
    uint32_t nr_open, nr_active;
} Snap;

static Snap snap(const ZoneSet *zs)
{
    Snap s = { g_memdup2(zs->zones, zs->cfg.nr_zones * sizeof(Zone)), NULL,
               zs->nr_open, zs->nr_active };
    if (zs->zde) {
        s.zde = g_memdup2(zs->zde, zs->cfg.nr_zones * zs->cfg.zde_bytes);
    }
    return s;
}

static void zone_same(const Zone *a, const Zone *b)
{
    g_assert_cmpuint(a->zslba, ==, b->zslba);
    g_assert_cmpuint(a->wp, ==, b->wp);
    g_assert_cmpint(a->state, ==, b->state);
    g_assert_cmpuint(a->attrs, ==, b->attrs);
}

/* Nothing changed since s (except, when skip < nr_zones, zone skip). */
static void snap_same(const ZoneSet *zs, const Snap *s, uint64_t skip)
{
    for (uint64_t i = 0; i < zs->cfg.nr_zones; i++) {
        if (i != skip) {
            zone_same(&zs->zones[i], &s->zones[i]);
            if (zs->zde) {
                g_assert_cmpmem(zs->zde + i * zs->cfg.zde_bytes, zs->cfg.zde_bytes,
                                s->zde + i * zs->cfg.zde_bytes, zs->cfg.zde_bytes);
            }
        }
    }
    if (skip >= zs->cfg.nr_zones) {
        g_assert_cmpuint(zs->nr_open, ==, s->nr_open);
        g_assert_cmpuint(zs->nr_active, ==, s->nr_active);
    }
}

static void snap_free(Snap *s)
{
    g_free(s->zones);
    g_free(s->zde);
}

/* No change at all since before, and no on_change call. */
static void unchanged(T *t, const Snap *before)
{
    snap_same(t->zs, before, UINT64_MAX);
    g_assert_cmpuint(t->ev->len, ==, 0);
    check_invariants(t->zs);
}

/* A refused command: the status, and no change at all. */
static void refused(T *t, ZoneStatus want, ZoneStatus got, const Snap *before)
{
    g_assert_cmpint(got, ==, want);
    unchanged(t, before);
}

/* ---- every single-zone action from every state ---- */

typedef struct Tr {
    ZoneAction a;
    ZoneState from;
    ZoneStatus st;
    ZoneState to;
} Tr;

#define BAD ZONE_INVALID_TRANSITION
static const Tr single_table[] = {
    /* 3.4.3.1.1 Close */
    { A_CLOSE, E, BAD }, { A_CLOSE, IO, ZONE_OK, C }, { A_CLOSE, EO, ZONE_OK, C },
    { A_CLOSE, C, ZONE_OK, C }, { A_CLOSE, F, BAD }, { A_CLOSE, RO, BAD },
    { A_CLOSE, OFF, BAD },
    /* 3.4.3.1.2 Finish */
    { A_FINISH, E, ZONE_OK, F }, { A_FINISH, IO, ZONE_OK, F }, { A_FINISH, EO, ZONE_OK, F },
    { A_FINISH, C, ZONE_OK, F }, { A_FINISH, F, ZONE_OK, F }, { A_FINISH, RO, BAD },
    { A_FINISH, OFF, BAD },
    /* 3.4.3.1.3 Open */
    { A_OPEN, E, ZONE_OK, EO }, { A_OPEN, IO, ZONE_OK, EO }, { A_OPEN, EO, ZONE_OK, EO },
    { A_OPEN, C, ZONE_OK, EO }, { A_OPEN, F, BAD }, { A_OPEN, RO, BAD },
    { A_OPEN, OFF, BAD },
    /* 3.4.3.1.4 Reset */
    { A_RESET, E, ZONE_OK, E }, { A_RESET, IO, ZONE_OK, E }, { A_RESET, EO, ZONE_OK, E },
    { A_RESET, C, ZONE_OK, E }, { A_RESET, F, ZONE_OK, E }, { A_RESET, RO, BAD },
    { A_RESET, OFF, BAD },
    /* 3.4.3.1.5 Offline */
    { A_OFFLINE, E, BAD }, { A_OFFLINE, IO, BAD }, { A_OFFLINE, EO, BAD },
    { A_OFFLINE, C, BAD }, { A_OFFLINE, F, BAD }, { A_OFFLINE, RO, ZONE_OK, OFF },
    { A_OFFLINE, OFF, ZONE_OK, OFF },
    /* 3.4.3.1.6 Set Zone Descriptor Extension */
    { A_ZDE, E, ZONE_OK, C }, { A_ZDE, IO, BAD }, { A_ZDE, EO, BAD }, { A_ZDE, C, BAD },
    { A_ZDE, F, BAD }, { A_ZDE, RO, BAD }, { A_ZDE, OFF, BAD },
};

static void test_single_zone_table(void)
{
    uint8_t ext[64];

    for (size_t k = 0; k < sizeof(ext); k++) {
        ext[k] = (uint8_t)(0xa0 + k);
    }
    /* the table covers each action from each state exactly once */
    g_assert_cmpuint(G_N_ELEMENTS(single_table), ==,
                     G_N_ELEMENTS(all_actions) * G_N_ELEMENTS(all_states));

    for (size_t i = 0; i < G_N_ELEMENTS(single_table); i++) {
        const Tr *tr = &single_table[i];
        T t = mk(4, 16, 12, 0, 0);
        ZoneSet *zs = t.zs;
        const uint64_t z = 1;
        ZoneStatus st;
        Snap before;

        put(&t, z, tr->from);
        before = snap(zs);
        ev_clear(&t);
        st = zone_manage(zs, tr->a, zslba(zs, z), false, ext);

        if (tr->st != ZONE_OK) {
            refused(&t, tr->st, st, &before);
        } else {
            const Zone *zn = &zs->zones[z];
            g_assert_cmpint(st, ==, ZONE_OK);
            g_assert_cmpint(zn->state, ==, tr->to);
            snap_same(zs, &before, z);
            /* exactly one call per transition, none when the state stays */
            if (tr->from == tr->to) {
                g_assert_cmpuint(t.ev->len, ==, 0);
                zone_same(zn, &before.zones[z]);
            } else {
                g_assert_cmpuint(t.ev->len, ==, 1);
                ev_expect(&t, 0, z, tr->from, tr->to);
            }
            if (tr->to == F) {
                g_assert_cmpuint(zn->wp, ==, zcap_end(zs, z));
            } else if (tr->to == E) {
                g_assert_cmpuint(zn->wp, ==, zslba(zs, z));
            } else {
                g_assert_cmpuint(zn->wp, ==, before.zones[z].wp);
            }
            if (tr->a == A_ZDE) {
                g_assert_cmpuint(zn->attrs, ==, ZONE_ATTR_ZDEV);
                g_assert_cmpmem(zs->zde + z * 64, 64, ext, 64);
            }
            g_assert_cmpuint(zs->nr_open, ==, is_open(tr->to));
            g_assert_cmpuint(zs->nr_active, ==, is_active(tr->to));
            check_invariants(zs);
        }
        snap_free(&before);
        rm(&t);
    }
}

/* Reset clears ZDEV and the extension; Finish and Close keep them. */
static void test_zde_lifecycle(void)
{
    T t = mk(2, 16, 16, 0, 0);
    ZoneSet *zs = t.zs;
    uint8_t ext[64], zero[64] = { 0 };

    memset(ext, 0x5a, sizeof(ext));
    g_assert_cmpint(zone_manage(zs, A_ZDE, 0, false, ext), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[0].state, ==, C);
    g_assert_cmpuint(zs->zones[0].wp, ==, 0);
    g_assert_cmpuint(zs->nr_active, ==, 1);
    /* written from the start like any Closed zone */
    g_assert_cmpint(zone_write(zs, 0, 4, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[0].state, ==, IO);
    g_assert_cmpint(zone_manage(zs, A_CLOSE, 0, false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->zones[0].attrs, ==, ZONE_ATTR_ZDEV);
    g_assert_cmpint(zone_manage(zs, A_FINISH, 0, false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->zones[0].attrs, ==, ZONE_ATTR_ZDEV);
    g_assert_cmpmem(zone_zde(zs, 0), 64, ext, 64);
    g_assert_null(zone_zde(zs, 1));
    g_assert_cmpint(zone_manage(zs, A_RESET, 0, false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->zones[0].attrs, ==, 0);
    /* a reset zone has no extension: it reads as zeroes */
    g_assert_null(zone_zde(zs, 0));
    memset(ext, 0x33, sizeof(ext));
    g_assert_cmpint(zone_manage(zs, A_ZDE, 0, false, ext), ==, ZONE_OK);
    g_assert_cmpmem(zone_zde(zs, 0), 64, ext, 64);
    g_assert_cmpmem(zs->zde + 64, 64, zero, 64);
    check_invariants(zs);
    rm(&t);
}

/* ---- Select All from every state ---- */

typedef struct TrAll {
    ZoneAction a;
    ZoneStatus st;
    ZoneState to[7];    /* indexed like all_states */
} TrAll;

static const TrAll all_table[] = {
    /*                    E   IO  EO  C   F   RO  OFF */
    { A_CLOSE, ZONE_OK, { E, C, C, C, F, RO, OFF } },
    { A_FINISH, ZONE_OK, { E, F, F, F, F, RO, OFF } },
    { A_OPEN, ZONE_OK, { E, IO, EO, EO, F, RO, OFF } },
    { A_RESET, ZONE_OK, { E, E, E, E, E, RO, OFF } },
    { A_OFFLINE, ZONE_OK, { E, IO, EO, C, F, OFF, OFF } },
    { A_ZDE, ZONE_INVALID_FIELD, { E, IO, EO, C, F, RO, OFF } },
};

static void test_select_all_table(void)
{
    uint8_t ext[64] = { 1 };

    for (size_t i = 0; i < G_N_ELEMENTS(all_table); i++) {
        const TrAll *tr = &all_table[i];
        T t = mk(8, 16, 12, 0, 0);
        ZoneSet *zs = t.zs;
        uint32_t open = 0, active = 0;
        guint n_ev = 0;
        ZoneStatus st;
        Snap before;

        for (uint64_t z = 0; z < 7; z++) {
            put(&t, z, all_states[z]);
        }
        before = snap(zs);
        ev_clear(&t);
        /* slba is ignored: not a zone start here */
        st = zone_manage(zs, tr->a, 5, true, ext);
        if (tr->st != ZONE_OK) {
            refused(&t, tr->st, st, &before);
            snap_free(&before);
            rm(&t);
            continue;
        }
        g_assert_cmpint(st, ==, ZONE_OK);
        for (uint64_t z = 0; z < 7; z++) {
            const Zone *zn = &zs->zones[z];
            g_assert_cmpint(zn->state, ==, tr->to[z]);
            if (tr->to[z] != all_states[z]) {
                /* the calls come in zone order, once per changed zone */
                ev_expect(&t, n_ev++, z, all_states[z], tr->to[z]);
                if (tr->to[z] == F) {
                    g_assert_cmpuint(zn->wp, ==, zcap_end(zs, z));
                } else if (tr->to[z] == E) {
                    g_assert_cmpuint(zn->wp, ==, zslba(zs, z));
                } else {
                    g_assert_cmpuint(zn->wp, ==, before.zones[z].wp);
                }
            } else {
                zone_same(zn, &before.zones[z]);
            }
            open += is_open(tr->to[z]);
            active += is_active(tr->to[z]);
        }
        g_assert_cmpint(zs->zones[7].state, ==, E);
        g_assert_cmpuint(t.ev->len, ==, n_ev);
        g_assert_cmpuint(zs->nr_open, ==, open);
        g_assert_cmpuint(zs->nr_active, ==, active);
        check_invariants(zs);

        /* a second time there is nothing left to do */
        ev_clear(&t);
        g_assert_cmpint(zone_manage(zs, tr->a, 0, true, ext), ==, ZONE_OK);
        g_assert_cmpuint(t.ev->len, ==, 0);
        snap_free(&before);
        rm(&t);
    }
}

/* Bad SLBAs, bad actions, and Set ZDE without extensions: Invalid Field, nothing changes. */
static void test_manage_invalid_field(void)
{
    T t = mk(4, 16, 12, 0, 0);
    T t0 = mk_cfg(cfg(4, 16, 12, 0, 0, 0, false));
    uint8_t ext[64] = { 0 };
    Snap before;

    put(&t, 1, IO);
    put(&t, 2, C);
    before = snap(t.zs);
    ev_clear(&t);
    for (size_t i = 0; i < G_N_ELEMENTS(all_actions); i++) {
        ZoneAction a = all_actions[i];
        refused(&t, ZONE_INVALID_FIELD, zone_manage(t.zs, a, 17, false, ext), &before);
        refused(&t, ZONE_INVALID_FIELD, zone_manage(t.zs, a, 15, false, ext), &before);
        refused(&t, ZONE_INVALID_FIELD, zone_manage(t.zs, a, 64, false, ext), &before);
        refused(&t, ZONE_INVALID_FIELD, zone_manage(t.zs, a, UINT64_MAX, false, ext),
                &before);
    }
    refused(&t, ZONE_INVALID_FIELD, zone_manage(t.zs, 0, 0, false, ext), &before);
    refused(&t, ZONE_INVALID_FIELD, zone_manage(t.zs, 6, 0, false, ext), &before);
    refused(&t, ZONE_INVALID_FIELD, zone_manage(t.zs, 0x11, 0, true, ext), &before);
    refused(&t, ZONE_INVALID_FIELD, zone_manage(t.zs, A_ZDE, 0, false, NULL), &before);
    refused(&t, ZONE_INVALID_FIELD, zone_manage(t.zs, A_ZDE, 0, true, ext), &before);
    snap_free(&before);

    /* no extension configured: refused even for an Empty zone (3.4.3) */
    before = snap(t0.zs);
    refused(&t0, ZONE_INVALID_FIELD, zone_manage(t0.zs, A_ZDE, 0, false, ext), &before);
    snap_free(&before);
    rm(&t);
    rm(&t0);
}

/* ---- resources (2.1.1.4) ---- */

/* max_open 2, max_active 3: implicit and explicit opens, implicit closes, both limits. */
static void test_resources_small_limits(void)
{
    T t = mk(8, 16, 16, 2, 3);
    ZoneSet *zs = t.zs;
    Snap before;

    g_assert_cmpint(zone_write(zs, zslba(zs, 0), 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zone_write(zs, zslba(zs, 1), 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->nr_open, ==, 2);
    g_assert_cmpuint(zs->nr_active, ==, 2);

    /* a third implicit open closes zone 0, the least recently implicitly opened */
    ev_clear(&t);
    g_assert_cmpint(zone_write(zs, zslba(zs, 2), 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(t.ev->len, ==, 2);
    ev_expect(&t, 0, 0, IO, C);
    ev_expect(&t, 1, 2, E, IO);
    g_assert_cmpuint(zs->nr_open, ==, 2);
    g_assert_cmpuint(zs->nr_active, ==, 3);
    check_invariants(zs);

    /* an Empty zone needs an active resource: none left */
    before = snap(zs);
    ev_clear(&t);
    refused(&t, ZONE_TOO_MANY_ACTIVE, zone_write(zs, zslba(zs, 3), 1, false, NULL), &before);
    refused(&t, ZONE_TOO_MANY_ACTIVE, zone_write(zs, zslba(zs, 3), 1, true, NULL), &before);
    refused(&t, ZONE_TOO_MANY_ACTIVE, zone_manage(zs, A_OPEN, zslba(zs, 3), false, NULL),
            &before);
    refused(&t, ZONE_TOO_MANY_ACTIVE, zone_manage(zs, A_ZDE, zslba(zs, 3), false,
                                                  (uint8_t[64]){ 0 }), &before);
    snap_free(&before);

    /* a Closed zone only needs an open one: zone 1 is now the oldest implicit open */
    g_assert_cmpint(zone_write(zs, zs->zones[0].wp, 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[1].state, ==, C);
    g_assert_cmpint(zs->zones[0].state, ==, IO);
    g_assert_cmpint(zs->zones[2].state, ==, IO);

    /* explicit opens: IO -> EO needs nothing; C -> EO closes an implicit zone (zone 0) */
    g_assert_cmpint(zone_manage(zs, A_OPEN, zslba(zs, 2), false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->nr_open, ==, 2);
    ev_clear(&t);
    g_assert_cmpint(zone_manage(zs, A_OPEN, zslba(zs, 1), false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(t.ev->len, ==, 2);
    ev_expect(&t, 0, 0, IO, C);
    ev_expect(&t, 1, 1, C, EO);
    check_invariants(zs);

    /* only explicitly opened zones hold the open resources: never closed implicitly */
    before = snap(zs);
    ev_clear(&t);
    refused(&t, ZONE_TOO_MANY_OPEN, zone_write(zs, zs->zones[0].wp, 1, false, NULL),
            &before);
    refused(&t, ZONE_TOO_MANY_OPEN, zone_write(zs, zslba(zs, 0), 1, true, NULL), &before);
    refused(&t, ZONE_TOO_MANY_OPEN, zone_manage(zs, A_OPEN, zslba(zs, 0), false, NULL),
            &before);
    refused(&t, ZONE_TOO_MANY_OPEN, zone_manage(zs, A_OPEN, 0, true, NULL), &before);
    /* Empty zone: the active resource is the one missing, and it is checked first */
    refused(&t, ZONE_TOO_MANY_ACTIVE, zone_write(zs, zslba(zs, 4), 1, false, NULL),
            &before);
    snap_free(&before);

    /* Finish of an Empty zone uses no resource (2.1.1.4.1 g), even at the limit */
    g_assert_cmpint(zone_manage(zs, A_FINISH, zslba(zs, 4), false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[4].state, ==, F);
    g_assert_cmpuint(zs->nr_active, ==, 3);

    /* finishing an open zone releases both; then an Empty zone can open */
    g_assert_cmpint(zone_manage(zs, A_FINISH, zslba(zs, 1), false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->nr_open, ==, 1);
    g_assert_cmpuint(zs->nr_active, ==, 2);
    g_assert_cmpint(zone_write(zs, zslba(zs, 3), 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->nr_open, ==, 2);
    g_assert_cmpuint(zs->nr_active, ==, 3);

    /* reset and close release theirs */
    g_assert_cmpint(zone_manage(zs, A_RESET, zslba(zs, 0), false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->nr_active, ==, 2);
    g_assert_cmpint(zone_manage(zs, A_CLOSE, zslba(zs, 2), false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->nr_open, ==, 1);
    g_assert_cmpuint(zs->nr_active, ==, 2);
    check_invariants(zs);
    rm(&t);
}

/* "Least recently implicitly opened" means by open time, not by last write. */
static void test_implicit_close_lru(void)
{
    T t = mk(6, 16, 16, 3, 0);
    ZoneSet *zs = t.zs;

    for (uint64_t z = 0; z < 3; z++) {
        g_assert_cmpint(zone_write(zs, zslba(zs, z), 1, false, NULL), ==, ZONE_OK);
    }
    /* writing zone 0 again does not make it younger */
    g_assert_cmpint(zone_write(zs, zslba(zs, 0) + 1, 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zone_write(zs, zslba(zs, 3), 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[0].state, ==, C);
    /* zone 0 reopens as the youngest: next victims are 1, 2, 3 in turn */
    g_assert_cmpint(zone_write(zs, zslba(zs, 0) + 2, 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[1].state, ==, C);
    g_assert_cmpint(zone_write(zs, zslba(zs, 4), 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[2].state, ==, C);
    /* an explicitly opened zone is skipped: zone 3 is explicit, so 0 goes */
    g_assert_cmpint(zone_manage(zs, A_OPEN, zslba(zs, 3), false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zone_write(zs, zslba(zs, 5), 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[0].state, ==, C);
    g_assert_cmpint(zs->zones[3].state, ==, EO);
    g_assert_cmpint(zs->zones[4].state, ==, IO);
    g_assert_cmpint(zs->zones[5].state, ==, IO);
    check_invariants(zs);
    rm(&t);
}

/* max_open == max_active: an Empty zone at the limit gets Too Many Active (2.1.1.4.1 b). */
static void test_equal_limits(void)
{
    T t = mk(4, 16, 16, 2, 2);
    ZoneSet *zs = t.zs;
    Snap before;

    put(&t, 0, IO);
    put(&t, 1, IO);
    before = snap(zs);
    ev_clear(&t);
    refused(&t, ZONE_TOO_MANY_ACTIVE, zone_write(zs, zslba(zs, 2), 1, false, NULL), &before);
    refused(&t, ZONE_TOO_MANY_ACTIVE, zone_manage(zs, A_OPEN, zslba(zs, 2), false, NULL),
            &before);
    snap_free(&before);
    /* Closed zones still reopen: their active resource is theirs */
    g_assert_cmpint(zone_manage(zs, A_CLOSE, zslba(zs, 0), false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zone_manage(zs, A_OPEN, 0, true, NULL), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[0].state, ==, EO);
    check_invariants(zs);
    rm(&t);
}

/* Select All Open: all Closed zones or none; implicitly opened zones make room. */
static void test_open_all_resources(void)
{
    T t = mk(6, 16, 16, 2, 4);
    ZoneSet *zs = t.zs;
    Snap before;

    put(&t, 0, C);
    put(&t, 1, C);
    put(&t, 2, IO);
    ev_clear(&t);
    g_assert_cmpint(zone_manage(zs, A_OPEN, 0, true, NULL), ==, ZONE_OK);
    /* zone 2 was closed to make room and stays Closed: it was not Closed at the start */
    g_assert_cmpint(zs->zones[0].state, ==, EO);
    g_assert_cmpint(zs->zones[1].state, ==, EO);
    g_assert_cmpint(zs->zones[2].state, ==, C);
    g_assert_cmpuint(t.ev->len, ==, 3);
    ev_expect(&t, 0, 0, C, EO);
    ev_expect(&t, 1, 2, IO, C);
    ev_expect(&t, 2, 1, C, EO);
    check_invariants(zs);

    /* two explicit + one closed > 2: nothing changes */
    before = snap(zs);
    ev_clear(&t);
    refused(&t, ZONE_TOO_MANY_OPEN, zone_manage(zs, A_OPEN, 0, true, NULL), &before);
    snap_free(&before);

    /* Close All, then 3 Closed zones for 2 open resources: nothing changes */
    g_assert_cmpint(zone_manage(zs, A_CLOSE, 0, true, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->nr_open, ==, 0);
    g_assert_cmpuint(zs->nr_active, ==, 3);
    before = snap(zs);
    ev_clear(&t);
    refused(&t, ZONE_TOO_MANY_OPEN, zone_manage(zs, A_OPEN, 0, true, NULL), &before);
    snap_free(&before);
    rm(&t);
}

/* Select All Finish and Reset release every resource. */
static void test_all_release(void)
{
    T t = mk(6, 16, 16, 3, 4);
    ZoneSet *zs = t.zs;

    put(&t, 0, IO);
    put(&t, 1, EO);
    put(&t, 2, C);
    put(&t, 3, F);
    g_assert_cmpint(zone_manage(zs, A_FINISH, 0, true, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zs->nr_open, ==, 0);
    g_assert_cmpuint(zs->nr_active, ==, 0);
    g_assert_cmpuint(zone_report_count(zs, 0, ZONE_REPORT_FULL), ==, 4);
    g_assert_cmpint(zone_manage(zs, A_RESET, 0, true, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zone_report_count(zs, 0, ZONE_REPORT_EMPTY), ==, 6);
    check_invariants(zs);
    rm(&t);
}

/*
 * Select All Reset in budgeted parts (the device spreads it over passes): a zone looked
 * at costs 1, one reset `cost`; the parts together do what one call does, in zone order.
 */
static void test_manage_some_budget(void)
{
    T t = mk(10, 16, 16, 0, 0);
    ZoneSet *zs = t.zs;
    uint64_t next = 0, budget;

    put(&t, 1, F);
    put(&t, 2, C);
    put(&t, 7, F);
    ev_clear(&t);
    budget = 5;         /* zone 0 (1), zone 1 reset (4): stops before zone 2 */
    zone_manage_some(zs, A_RESET, &next, &budget, 4);
    g_assert_cmpuint(next, ==, 2);
    g_assert_cmpuint(budget, ==, 0);
    g_assert_cmpuint(t.ev->len, ==, 1);
    g_assert_cmpint(zs->zones[2].state, ==, C);
    budget = 3;         /* zone 2 reset: more than is left, still done; then out */
    zone_manage_some(zs, A_RESET, &next, &budget, 4);
    g_assert_cmpuint(next, ==, 3);
    g_assert_cmpuint(budget, ==, 0);
    budget = 100;       /* zones 3..9: 6 looked at, one reset */
    zone_manage_some(zs, A_RESET, &next, &budget, 4);
    g_assert_cmpuint(next, ==, 10);
    g_assert_cmpuint(budget, ==, 100 - 6 - 4);
    g_assert_cmpuint(t.ev->len, ==, 3);
    ev_expect(&t, 0, 1, F, E);
    ev_expect(&t, 1, 2, C, E);
    ev_expect(&t, 2, 7, F, E);
    g_assert_cmpuint(zone_report_count(zs, 0, ZONE_REPORT_EMPTY), ==, 10);
    g_assert_cmpuint(zs->nr_active, ==, 0);
    check_invariants(zs);
    /* done: nothing more, whatever the budget */
    zone_manage_some(zs, A_RESET, &next, &budget, 4);
    g_assert_cmpuint(next, ==, 10);
    g_assert_cmpuint(t.ev->len, ==, 3);
    rm(&t);
}

/* ---- writes ---- */

static void test_write_rules(void)
{
    T t = mk(4, 16, 12, 0, 0);
    ZoneSet *zs = t.zs;
    uint64_t lba = 99;
    Snap before;

    put(&t, 2, RO);
    put(&t, 3, OFF);
    before = snap(zs);
    ev_clear(&t);
    /* not at the write pointer: before or after it */
    refused(&t, ZONE_INVALID_WRITE, zone_write(zs, 1, 1, false, &lba), &before);
    refused(&t, ZONE_INVALID_WRITE, zone_write(zs, 16 + 5, 1, false, &lba), &before);
    /* beyond the capacity, into the gap between capacity and size, or the next zone */
    refused(&t, ZONE_BOUNDARY_ERROR, zone_write(zs, 0, 13, false, &lba), &before);
    refused(&t, ZONE_BOUNDARY_ERROR, zone_write(zs, 16, 20, false, &lba), &before);
    /* out of the namespace: start or end */
    refused(&t, ZONE_LBA_RANGE, zone_write(zs, 64, 1, false, &lba), &before);
    refused(&t, ZONE_LBA_RANGE, zone_write(zs, 0, 65, false, &lba), &before);
    refused(&t, ZONE_LBA_RANGE, zone_write(zs, UINT64_MAX, 2, false, &lba), &before);
    refused(&t, ZONE_INVALID_FIELD, zone_write(zs, 0, 0, false, &lba), &before);
    /* the states that cannot be written */
    refused(&t, ZONE_IS_READ_ONLY, zone_write(zs, zs->zones[2].wp, 1, false, &lba), &before);
    refused(&t, ZONE_IS_OFFLINE, zone_write(zs, zs->zones[3].wp, 1, false, &lba), &before);
    refused(&t, ZONE_IS_READ_ONLY, zone_write(zs, 32, 1, true, &lba), &before);
    refused(&t, ZONE_IS_OFFLINE, zone_write(zs, 48, 1, true, &lba), &before);
    g_assert_cmpuint(lba, ==, 99);
    snap_free(&before);

    /* Empty -> IO -> ... -> Full at the capacity, one call per transition */
    g_assert_cmpint(zone_write(zs, 0, 5, false, &lba), ==, ZONE_OK);
    g_assert_cmpuint(lba, ==, 0);
    g_assert_cmpuint(t.ev->len, ==, 1);
    ev_expect(&t, 0, 0, E, IO);
    g_assert_cmpint(zone_write(zs, 5, 7, false, &lba), ==, ZONE_OK);
    g_assert_cmpuint(lba, ==, 5);
    g_assert_cmpuint(t.ev->len, ==, 2);
    ev_expect(&t, 1, 0, IO, F);
    g_assert_cmpint(zs->zones[0].state, ==, F);
    g_assert_cmpuint(zs->zones[0].wp, ==, 12);
    g_assert_cmpuint(zs->nr_open, ==, 0);
    g_assert_cmpuint(zs->nr_active, ==, 0);
    before = snap(zs);
    ev_clear(&t);
    refused(&t, ZONE_IS_FULL, zone_write(zs, 12, 1, false, &lba), &before);
    refused(&t, ZONE_IS_FULL, zone_write(zs, 0, 1, false, &lba), &before);
    refused(&t, ZONE_IS_FULL, zone_write(zs, 0, 1, true, &lba), &before);
    snap_free(&before);

    /* one write filling an Empty zone passes through IO; a Closed zone reopens as IO */
    ev_clear(&t);
    g_assert_cmpint(zone_write(zs, 16, 12, false, &lba), ==, ZONE_OK);
    g_assert_cmpuint(t.ev->len, ==, 2);
    ev_expect(&t, 0, 1, E, IO);
    ev_expect(&t, 1, 1, IO, F);
    g_assert_cmpint(zone_manage(zs, A_RESET, 16, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zone_write(zs, 16, 3, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zone_manage(zs, A_CLOSE, 16, false, NULL), ==, ZONE_OK);
    ev_clear(&t);
    g_assert_cmpint(zone_write(zs, 19, 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(t.ev->len, ==, 1);
    ev_expect(&t, 0, 1, C, IO);
    /* an explicitly opened zone stays explicit while written, then fills */
    g_assert_cmpint(zone_manage(zs, A_OPEN, 16, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zone_write(zs, 20, 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[1].state, ==, EO);
    ev_clear(&t);
    g_assert_cmpint(zone_write(zs, 21, 7, false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(t.ev->len, ==, 1);
    ev_expect(&t, 0, 1, EO, F);
    check_invariants(zs);
    rm(&t);
}

/* Zone Append with zone_cap < zone_size: sequential LBAs, Full at the capacity. */
static void test_append(void)
{
    T t = mk(4, 16, 10, 0, 0);
    ZoneSet *zs = t.zs;
    uint64_t lba = 0, want = 16;
    Snap before;

    for (int i = 0; i < 3; i++) {
        g_assert_cmpint(zone_write(zs, 16, 3, true, &lba), ==, ZONE_OK);
        g_assert_cmpuint(lba, ==, want);
        want += 3;
        g_assert_cmpint(zs->zones[1].state, ==, IO);
    }
    before = snap(zs);
    ev_clear(&t);
    /* 9 written, 1 left */
    refused(&t, ZONE_BOUNDARY_ERROR, zone_write(zs, 16, 2, true, &lba), &before);
    refused(&t, ZONE_INVALID_FIELD, zone_write(zs, 17, 1, true, &lba), &before);
    refused(&t, ZONE_INVALID_FIELD, zone_write(zs, 25, 1, true, &lba), &before);
    refused(&t, ZONE_LBA_RANGE, zone_write(zs, 64, 1, true, &lba), &before);
    snap_free(&before);
    g_assert_cmpint(zone_write(zs, 16, 1, true, &lba), ==, ZONE_OK);
    g_assert_cmpuint(lba, ==, 25);
    g_assert_cmpint(zs->zones[1].state, ==, F);
    g_assert_cmpuint(zs->zones[1].wp, ==, 26);
    g_assert_cmpint(zone_write(zs, 16, 1, true, &lba), ==, ZONE_IS_FULL);
    /* appends and writes mix: both go at the write pointer */
    g_assert_cmpint(zone_write(zs, 32, 4, false, NULL), ==, ZONE_OK);
    g_assert_cmpint(zone_write(zs, 32, 2, true, &lba), ==, ZONE_OK);
    g_assert_cmpuint(lba, ==, 36);
    g_assert_cmpint(zone_write(zs, 38, 4, true, &lba), ==, ZONE_INVALID_FIELD);
    g_assert_cmpint(zone_write(zs, 38, 4, false, &lba), ==, ZONE_OK);
    g_assert_cmpint(zs->zones[2].state, ==, F);
    check_invariants(zs);
    rm(&t);
}

/* ---- reads ---- */

static void test_reads(void)
{
    for (int cross = 0; cross <= 1; cross++) {
        T t = mk_cfg(cfg(4, 16, 12, 0, 0, 0, cross));
        ZoneSet *zs = t.zs;
        ZoneStatus crossing = cross ? ZONE_OK : ZONE_BOUNDARY_ERROR;

        put(&t, 1, F);
        put(&t, 2, RO);
        /* within a zone, above the write pointer, past the capacity: allowed */
        g_assert_cmpint(zone_read_check(zs, 0, 16), ==, ZONE_OK);
        g_assert_cmpint(zone_read_check(zs, 13, 3), ==, ZONE_OK);
        g_assert_cmpint(zone_read_check(zs, 16, 16), ==, ZONE_OK);
        g_assert_cmpint(zone_read_check(zs, 32, 16), ==, ZONE_OK);
        /* crossing one or more zone boundaries */
        g_assert_cmpint(zone_read_check(zs, 15, 2), ==, crossing);
        g_assert_cmpint(zone_read_check(zs, 0, 48), ==, crossing);
        /* the namespace's end */
        g_assert_cmpint(zone_read_check(zs, 48, 17), ==, ZONE_LBA_RANGE);
        g_assert_cmpint(zone_read_check(zs, 64, 1), ==, ZONE_LBA_RANGE);
        g_assert_cmpint(zone_read_check(zs, UINT64_MAX, 1), ==, ZONE_LBA_RANGE);
        g_assert_cmpint(zone_read_check(zs, 0, 0), ==, ZONE_INVALID_FIELD);
        /* Offline: the first zone, or one crossed into */
        zone_fail(zs, 3, OFF);
        g_assert_cmpint(zone_read_check(zs, 48, 1), ==, ZONE_IS_OFFLINE);
        g_assert_cmpint(zone_read_check(zs, 48, 40), ==, ZONE_LBA_RANGE);
        g_assert_cmpint(zone_read_check(zs, 47, 2), ==,
                        cross ? ZONE_IS_OFFLINE : ZONE_BOUNDARY_ERROR);
        g_assert_cmpint(zone_read_check(zs, 20, 20), ==, crossing);
        rm(&t);
    }
}

/* ---- written data, for read-ahead ---- */

static void test_readable(void)
{
    for (int cross = 0; cross <= 1; cross++) {
        /* 5 zones of 16 LBAs */
        T t = mk_cfg(cfg(5, 16, 16, 0, 0, 0, cross));
        ZoneSet *zs = t.zs;

        /* nothing written */
        g_assert_cmpuint(zone_readable(zs, 0, 100), ==, 0);
        /* zone 0 to its write pointer, LBA 10 */
        g_assert_cmpint(zone_write(zs, 0, 10, false, NULL), ==, ZONE_OK);
        g_assert_cmpuint(zone_readable(zs, 0, 100), ==, 10);
        g_assert_cmpuint(zone_readable(zs, 3, 100), ==, 7);
        g_assert_cmpuint(zone_readable(zs, 9, 100), ==, 1);
        g_assert_cmpuint(zone_readable(zs, 10, 100), ==, 0);
        g_assert_cmpuint(zone_readable(zs, 12, 100), ==, 0);
        /* max */
        g_assert_cmpuint(zone_readable(zs, 3, 4), ==, 4);
        g_assert_cmpuint(zone_readable(zs, 3, 0), ==, 0);
        /* zone 1 full by writes, zone 2 written to LBA 5: across only when allowed */
        g_assert_cmpint(zone_write(zs, 16, 16, false, NULL), ==, ZONE_OK);
        g_assert_cmpint(zs->zones[1].state, ==, F);
        g_assert_cmpint(zone_write(zs, 32, 5, false, NULL), ==, ZONE_OK);
        g_assert_cmpuint(zone_readable(zs, 16, 100), ==, cross ? 16 + 5 : 16);
        g_assert_cmpuint(zone_readable(zs, 20, 100), ==, cross ? 12 + 5 : 12);
        g_assert_cmpuint(zone_readable(zs, 20, 14), ==, cross ? 14 : 12);
        g_assert_cmpuint(zone_readable(zs, 20, 12), ==, 12);
        g_assert_cmpuint(zone_readable(zs, 32, 100), ==, 5);
        /* zone 0 does not reach its end: never into zone 1 */
        g_assert_cmpuint(zone_readable(zs, 5, 100), ==, 5);
        /* finished: readable to the zone's end (as a read of it would be) */
        g_assert_cmpint(zone_manage(zs, A_FINISH, 32, false, NULL), ==, ZONE_OK);
        g_assert_cmpuint(zone_readable(zs, 32, 100), ==, 16);
        g_assert_cmpuint(zone_readable(zs, 16, 100), ==, cross ? 32 : 16);
        /* read only keeps its data */
        g_assert_cmpint(zone_write(zs, 48, 7, false, NULL), ==, ZONE_OK);
        zone_fail(zs, 3, RO);
        g_assert_cmpuint(zone_readable(zs, 48, 100), ==, 7);
        g_assert_cmpuint(zone_readable(zs, 16, 100), ==, cross ? 32 + 7 : 16);
        /* offline: nothing, and a crossing stops before it */
        zone_fail(zs, 2, OFF);
        g_assert_cmpuint(zone_readable(zs, 32, 100), ==, 0);
        g_assert_cmpuint(zone_readable(zs, 40, 100), ==, 0);
        g_assert_cmpuint(zone_readable(zs, 16, 100), ==, 16);
        /* the namespace's end: the last zone full stops there, beyond it nothing */
        g_assert_cmpint(zone_write(zs, 64, 16, false, NULL), ==, ZONE_OK);
        g_assert_cmpuint(zone_readable(zs, 64, 100), ==, 16);
        g_assert_cmpuint(zone_readable(zs, 70, UINT64_MAX), ==, 10);
        g_assert_cmpuint(zone_readable(zs, 80, 100), ==, 0);
        g_assert_cmpuint(zone_readable(zs, UINT64_MAX, 100), ==, 0);
        rm(&t);
    }
    for (int cross = 0; cross <= 1; cross++) {
        /* capacity 12 of 16: the hole is no data, and a full zone ends at its capacity */
        T t = mk_cfg(cfg(3, 16, 12, 0, 0, 0, cross));
        ZoneSet *zs = t.zs;

        g_assert_cmpint(zone_write(zs, 0, 12, false, NULL), ==, ZONE_OK);
        g_assert_cmpint(zs->zones[0].state, ==, F);
        g_assert_cmpint(zone_write(zs, 16, 12, false, NULL), ==, ZONE_OK);
        g_assert_cmpuint(zone_readable(zs, 0, 100), ==, 12);
        g_assert_cmpuint(zone_readable(zs, 4, 100), ==, 8);
        g_assert_cmpuint(zone_readable(zs, 12, 4), ==, 0);
        g_assert_cmpuint(zone_readable(zs, 15, 100), ==, 0);
        g_assert_cmpuint(zone_readable(zs, 16, 100), ==, 12);
        rm(&t);
    }
    /* one zone of one LBA */
    T t = mk_cfg(cfg(1, 1, 1, 0, 0, 0, true));
    g_assert_cmpuint(zone_readable(t.zs, 0, 1), ==, 0);
    g_assert_cmpint(zone_write(t.zs, 0, 1, false, NULL), ==, ZONE_OK);
    g_assert_cmpuint(zone_readable(t.zs, 0, 5), ==, 1);
    g_assert_cmpuint(zone_readable(t.zs, 1, 5), ==, 0);
    rm(&t);
}

/* ---- reports ---- */

static void test_report(void)
{
    static const ZoneReportFilter filters[] = {
        ZONE_REPORT_EMPTY, ZONE_REPORT_IMPLICIT_OPEN, ZONE_REPORT_EXPLICIT_OPEN,
        ZONE_REPORT_CLOSED, ZONE_REPORT_FULL, ZONE_REPORT_READ_ONLY, ZONE_REPORT_OFFLINE,
    };
    /* zones 0..13: two of each state, in the pattern E IO EO C F RO OFF E IO ... */
    T t = mk(14, 16, 16, 0, 0);
    ZoneSet *zs = t.zs;

    for (uint64_t z = 0; z < 14; z++) {
        put(&t, z, all_states[z % 7]);
    }
    g_assert_cmpuint(zone_report_count(zs, 0, ZONE_REPORT_ALL), ==, 14);
    g_assert_cmpuint(zone_report_count(zs, 16 * 3 + 5, ZONE_REPORT_ALL), ==, 11);
    for (uint64_t k = 0; k < 14; k++) {
        g_assert_cmpuint(zone_report_next(zs, k, ZONE_REPORT_ALL), ==, k);
    }
    g_assert_cmpuint(zone_report_next(zs, 14, ZONE_REPORT_ALL), ==, UINT64_MAX);
    for (size_t f = 0; f < G_N_ELEMENTS(filters); f++) {
        /* filter f lists the zones in all_states[f], ascending */
        g_assert_cmpuint(zone_report_count(zs, 0, filters[f]), ==, 2);
        g_assert_cmpuint(zone_report_next(zs, 0, filters[f]), ==, f);
        g_assert_cmpuint(zone_report_next(zs, f, filters[f]), ==, f);
        g_assert_cmpuint(zone_report_next(zs, f + 1, filters[f]), ==, f + 7);
        g_assert_cmpuint(zone_report_next(zs, f + 8, filters[f]), ==, UINT64_MAX);
        g_assert_cmpint(zs->zones[zone_report_next(zs, 0, filters[f])].state, ==,
                        all_states[f]);
        /* from the zone holding slba onward (slba inside zone f) */
        g_assert_cmpuint(zone_report_count(zs, 16 * f + 3, filters[f]), ==, 2);
        g_assert_cmpuint(zone_report_count(zs, 16 * (f + 1), filters[f]), ==, 1);
        g_assert_cmpuint(zone_report_count(zs, 16 * (f + 8), filters[f]), ==, 0);
    }
    /* beyond the namespace and unknown filters report nothing */
    g_assert_cmpuint(zone_report_count(zs, 16 * 14, ZONE_REPORT_ALL), ==, 0);
    g_assert_cmpuint(zone_report_next(zs, 14, ZONE_REPORT_ALL), ==, UINT64_MAX);
    g_assert_cmpuint(zone_report_count(zs, 0, (ZoneReportFilter)8), ==, 0);
    g_assert_cmpuint(zone_report_next(zs, 0, (ZoneReportFilter)8), ==, UINT64_MAX);
    rm(&t);
}

/* ---- configuration ---- */

static void expect_config_error(ZoneConfig c, const char *field)
{
    char *err = NULL;

    g_assert_false(zone_config_check(&c, &err));
    g_assert_nonnull(err);
    if (!strstr(err, field)) {
        g_error("'%s' does not name %s", err, field);
    }
    g_free(err);
    g_assert_null(zone_set_new(&c, &err));
    g_assert_nonnull(err);
    g_free(err);
    /* err may be NULL */
    g_assert_false(zone_config_check(&c, NULL));
}

static void test_config(void)
{
    ZoneConfig ok = cfg(8, 16, 12, 2, 4, 64, false);
    char *err = NULL;

    g_assert_true(zone_config_check(&ok, &err));
    g_assert_null(err);
    g_assert_true(zone_config_check(&(ZoneConfig){ .nr_zones = 1, .zone_size = 1,
                                                   .zone_cap = 1 }, &err));
    /* unlimited open with limited active, and the limits at nr_zones */
    g_assert_true(zone_config_check(&(ZoneConfig){ .nr_zones = 8, .zone_size = 16,
                                                   .zone_cap = 16, .max_active = 3 }, &err));
    g_assert_true(zone_config_check(&(ZoneConfig){ .nr_zones = 8, .zone_size = 16,
                                                   .zone_cap = 16, .max_open = 8,
                                                   .max_active = 8,
                                                   .zde_bytes = 255 * 64 }, &err));

    expect_config_error(cfg(8, 0, 0, 0, 0, 0, false), "zns_zone_size_mb");
    expect_config_error(cfg(8, 24, 12, 0, 0, 0, false), "zns_zone_size_mb");
    expect_config_error(cfg(8, 16, 0, 0, 0, 0, false), "zns_zone_cap");
    expect_config_error(cfg(8, 16, 17, 0, 0, 0, false), "zns_zone_cap");
    expect_config_error(cfg(0, 16, 16, 0, 0, 0, false), "number of zones");
    expect_config_error(cfg((uint64_t)UINT32_MAX + 1, 16, 16, 0, 0, 0, false),
                        "number of zones");
    expect_config_error(cfg(UINT32_MAX, UINT64_C(1) << 40, 16, 0, 0, 0, false), "2^62");
    expect_config_error(cfg(8, 16, 16, 9, 0, 0, false), "zns_max_open");
    expect_config_error(cfg(8, 16, 16, 0, 9, 0, false), "zns_max_active");
    expect_config_error(cfg(8, 16, 16, 4, 3, 0, false), "zns_max_active");
    expect_config_error(cfg(8, 16, 16, 0, 0, 32, false), "zns_zd_ext_size");
    expect_config_error(cfg(8, 16, 16, 0, 0, 256 * 64, false), "zns_zd_ext_size");

    /* the zone state's host memory is bounded: 1M zones take extensions up to 3968 bytes */
    {
        ZoneConfig big = cfg(1 << 20, 2048, 2048, 0, 0, 3968, false);
        g_assert_true(zone_config_check(&big, NULL));
        g_assert_cmpuint(zone_state_bytes(&big), <=, ZONE_STATE_MAX_BYTES);
        big.zde_bytes += 64;
        g_assert_cmpuint(zone_state_bytes(&big), >, ZONE_STATE_MAX_BYTES);
        expect_config_error(big, "zns_zd_ext_size=4032");
        /* 64 TiB of 1 MiB zones with the largest extensions would be about 1 TiB */
        expect_config_error(cfg(64 << 20, 2048, 2048, 0, 0, 16320, false), "host memory");
        expect_config_error(cfg(64 << 20, 2048, 2048, 0, 0, 0, false), "4096 MiB");
    }
}

static void test_new_set(void)
{
    T t = mk_cfg(cfg(5, 32, 20, 0, 0, 0, true));

    for (uint64_t z = 0; z < 5; z++) {
        g_assert_cmpuint(t.zs->zones[z].zslba, ==, 32 * z);
        g_assert_cmpuint(t.zs->zones[z].wp, ==, 32 * z);
        g_assert_cmpint(t.zs->zones[z].state, ==, E);
        g_assert_cmpuint(t.zs->zones[z].attrs, ==, 0);
    }
    g_assert_null(t.zs->zde);
    g_assert_cmpuint(t.zs->nr_open, ==, 0);
    g_assert_cmpuint(t.zs->nr_active, ==, 0);
    g_assert_cmpuint(zone_index(t.zs, 95), ==, 2);
    zone_set_free(NULL);
    rm(&t);
}

/* Media failures release resources; nothing leaves Offline. */
static void test_zone_fail(void)
{
    T t = mk(4, 16, 16, 2, 3);
    ZoneSet *zs = t.zs;

    put(&t, 0, IO);
    put(&t, 1, C);
    ev_clear(&t);
    zone_fail(zs, 0, RO);
    zone_fail(zs, 1, OFF);
    g_assert_cmpuint(t.ev->len, ==, 2);
    ev_expect(&t, 0, 0, IO, RO);
    ev_expect(&t, 1, 1, C, OFF);
    g_assert_cmpuint(zs->nr_open, ==, 0);
    g_assert_cmpuint(zs->nr_active, ==, 0);
    zone_fail(zs, 0, OFF);
    zone_fail(zs, 1, RO);
    g_assert_cmpint(zs->zones[0].state, ==, OFF);
    g_assert_cmpint(zs->zones[1].state, ==, OFF);
    g_assert_cmpuint(t.ev->len, ==, 3);
    check_invariants(zs);
    rm(&t);
}

/* ---- randomized: the set against a reference model written from the spec text ---- */

#define RMAX 16

typedef struct Ref {
    ZoneConfig c;
    ZoneState st[RMAX];
    uint64_t wp[RMAX];      /* relative to the zone start */
    uint64_t born[RMAX];    /* when implicitly opened */
    bool zdev[RMAX];
    uint8_t zde[RMAX][64];
    uint64_t clock;
} Ref;

static uint32_t ref_count(const Ref *r, bool (*pred)(ZoneState))
{
    uint32_t n = 0;

    for (uint64_t i = 0; i < r->c.nr_zones; i++) {
        n += pred(r->st[i]);
    }
    return n;
}

static int ref_oldest_implicit(const Ref *r)
{
    int best = -1;

    for (int i = 0; i < (int)r->c.nr_zones; i++) {
        if (r->st[i] == IO && (best < 0 || r->born[i] < r->born[best])) {
            best = i;
        }
    }
    return best;
}

/* Can zone i go to an opened state; if so, make room. */
static ZoneStatus ref_take_open(Ref *r, int i)
{
    bool open_full = r->c.max_open && ref_count(r, is_open) == r->c.max_open;

    if (r->st[i] == E && r->c.max_active && ref_count(r, is_active) == r->c.max_active) {
        return ZONE_TOO_MANY_ACTIVE;
    }
    if (open_full) {
        int v = ref_oldest_implicit(r);
        if (v < 0) {
            return ZONE_TOO_MANY_OPEN;
        }
        r->st[v] = C;
    }
    return ZONE_OK;
}

static ZoneStatus ref_write(Ref *r, uint64_t slba, uint64_t nlb, bool append, uint64_t *lba)
{
    uint64_t size = r->c.zone_size, total = r->c.nr_zones * size;
    int i;
    uint64_t off;
    ZoneStatus st;

    if (slba >= total || slba + nlb > total) {
        return ZONE_LBA_RANGE;
    }
    i = (int)(slba / size);
    off = slba % size;
    if (append && off) {
        return ZONE_INVALID_FIELD;
    }
    if (r->st[i] == F) {
        return ZONE_IS_FULL;
    }
    if (r->st[i] == RO) {
        return ZONE_IS_READ_ONLY;
    }
    if (r->st[i] == OFF) {
        return ZONE_IS_OFFLINE;
    }
    if (append) {
        off = r->wp[i];
    }
    if (off != r->wp[i]) {
        return ZONE_INVALID_WRITE;
    }
    if (off + nlb > r->c.zone_cap) {
        return ZONE_BOUNDARY_ERROR;
    }
    if (r->st[i] == E || r->st[i] == C) {
        st = ref_take_open(r, i);
        if (st) {
            return st;
        }
        r->st[i] = IO;
        r->born[i] = r->clock++;
    }
    r->wp[i] += nlb;
    if (r->wp[i] == r->c.zone_cap) {
        r->st[i] = F;
    }
    *lba = i * size + off;
    return ZONE_OK;
}

static ZoneStatus ref_read(const Ref *r, uint64_t slba, uint64_t nlb)
{
    uint64_t size = r->c.zone_size, total = r->c.nr_zones * size;

    if (slba >= total || slba + nlb > total) {
        return ZONE_LBA_RANGE;
    }
    if (r->st[slba / size] == OFF) {
        return ZONE_IS_OFFLINE;
    }
    for (uint64_t l = slba; l < slba + nlb; l++) {
        if (l / size != slba / size) {
            if (!r->c.cross_zone_read) {
                return ZONE_BOUNDARY_ERROR;
            }
            if (r->st[l / size] == OFF) {
                return ZONE_IS_OFFLINE;
            }
        }
    }
    return ZONE_OK;
}

static void ref_to_empty(Ref *r, int i)
{
    r->st[i] = E;
    r->wp[i] = 0;
    r->zdev[i] = false;
    memset(r->zde[i], 0, sizeof(r->zde[i]));
}

static ZoneStatus ref_one(Ref *r, ZoneAction a, int i, const uint8_t *zde)
{
    ZoneState s = r->st[i];
    ZoneStatus st;

    switch (a) {
    case A_CLOSE:
        if (s == C) {
            return ZONE_OK;
        }
        if (!is_open(s)) {
            return BAD;
        }
        r->st[i] = C;
        return ZONE_OK;
    case A_FINISH:
        if (s == F) {
            return ZONE_OK;
        }
        if (s == RO || s == OFF) {
            return BAD;
        }
        r->st[i] = F;
        r->wp[i] = r->c.zone_cap;
        return ZONE_OK;
    case A_OPEN:
        if (s == EO) {
            return ZONE_OK;
        }
        if (s == F || s == RO || s == OFF) {
            return BAD;
        }
        if (s != IO) {
            st = ref_take_open(r, i);
            if (st) {
                return st;
            }
        }
        r->st[i] = EO;
        return ZONE_OK;
    case A_RESET:
        if (s == RO || s == OFF) {
            return BAD;
        }
        ref_to_empty(r, i);
        return ZONE_OK;
    case A_OFFLINE:
        if (s != RO && s != OFF) {
            return BAD;
        }
        r->st[i] = OFF;
        return ZONE_OK;
    case A_ZDE:
        if (s != E) {
            return BAD;
        }
        if (r->c.max_active && ref_count(r, is_active) == r->c.max_active) {
            return ZONE_TOO_MANY_ACTIVE;
        }
        r->st[i] = C;
        r->zdev[i] = true;
        memcpy(r->zde[i], zde, r->c.zde_bytes);
        return ZONE_OK;
    }
    return ZONE_INVALID_FIELD;
}

static ZoneStatus ref_manage(Ref *r, ZoneAction a, uint64_t slba, bool all, const uint8_t *zde)
{
    int n = (int)r->c.nr_zones;

    if (a == A_ZDE && (all || !r->c.zde_bytes)) {
        return ZONE_INVALID_FIELD;
    }
    if (a != A_CLOSE && a != A_FINISH && a != A_OPEN && a != A_RESET && a != A_OFFLINE &&
        a != A_ZDE) {
        return ZONE_INVALID_FIELD;
    }
    if (!all) {
        if (slba >= r->c.nr_zones * r->c.zone_size || slba % r->c.zone_size) {
            return ZONE_INVALID_FIELD;
        }
        return ref_one(r, a, (int)(slba / r->c.zone_size), zde);
    }
    if (a == A_OPEN) {
        bool was_closed[RMAX];
        uint32_t need = ref_count(r, is_active) - ref_count(r, is_open);
        for (int i = 0; i < n; i++) {
            was_closed[i] = r->st[i] == C;
            need += r->st[i] == EO;
        }
        if (r->c.max_open && need > r->c.max_open) {
            return ZONE_TOO_MANY_OPEN;
        }
        for (int i = 0; i < n; i++) {
            if (was_closed[i]) {
                g_assert_cmpint(ref_one(r, A_OPEN, i, zde), ==, ZONE_OK);
            }
        }
        return ZONE_OK;
    }
    for (int i = 0; i < n; i++) {
        ZoneState s = r->st[i];
        bool applies = (a == A_CLOSE && is_open(s)) || (a == A_FINISH && is_active(s)) ||
                       (a == A_RESET && (is_active(s) || s == F)) ||
                       (a == A_OFFLINE && s == RO);
        if (applies) {
            ref_one(r, a, i, zde);
        }
    }
    return ZONE_OK;
}

/* The initial state after a power cycle (2.1.1.3). */
static void ref_power_cycle(Ref *r)
{
    for (uint64_t i = 0; i < r->c.nr_zones; i++) {
        if (is_active(r->st[i])) {
            r->st[i] = r->wp[i] == 0 && !r->zdev[i] ? E : C;
        }
    }
}

static void ref_compare(const Ref *r, const ZoneSet *zs)
{
    for (uint64_t i = 0; i < r->c.nr_zones; i++) {
        const Zone *z = &zs->zones[i];
        g_assert_cmpint(z->state, ==, r->st[i]);
        g_assert_cmpuint(z->wp, ==, z->zslba + r->wp[i]);
        g_assert_cmpuint(!!(z->attrs & ZONE_ATTR_ZDEV), ==, r->zdev[i]);
        if (r->zdev[i]) {
            g_assert_cmpmem(zone_zde(zs, i), r->c.zde_bytes, r->zde[i], r->c.zde_bytes);
        } else {
            g_assert_null(zone_zde(zs, i));
        }
    }
    g_assert_cmpuint(zs->nr_open, ==, ref_count(r, is_open));
    g_assert_cmpuint(zs->nr_active, ==, ref_count(r, is_active));
    check_invariants(zs);
}

static uint64_t pick_nlb(GRand *g, uint64_t cap)
{
    switch (g_rand_int_range(g, 0, 4)) {
    case 0:
        return (uint64_t)g_rand_int_range(g, 1, (gint32)cap + 3);
    default:
        return (uint64_t)g_rand_int_range(g, 1, 4);
    }
}

static void random_run(guint32 seed, int steps)
{
    GRand *g = g_rand_new_with_seed(seed);
    uint64_t n = (uint64_t)g_rand_int_range(g, 1, RMAX + 1);
    uint64_t size = 16;
    uint64_t cap = (uint64_t)g_rand_int_range(g, 1, 17);
    uint32_t mo = g_rand_boolean(g) ? 0 : (uint32_t)g_rand_int_range(g, 1, (gint32)n + 1);
    uint32_t ma = g_rand_boolean(g) ? 0 : (uint32_t)g_rand_int_range(g, mo ? (gint32)mo : 1,
                                                                        (gint32)n + 1);
    ZoneConfig c = cfg(n, size, cap, mo, ma, g_rand_boolean(g) ? 64 : 0, g_rand_boolean(g));
    T t = mk_cfg(c);
    Ref r = { .c = c };
    uint8_t *store = g_malloc0(zone_store_size(&c));
    uint64_t total = n * size;
    uint64_t transitions = 0;

    for (uint64_t i = 0; i < n; i++) {
        r.st[i] = E;
    }
    g_assert_cmpint(zone_store_open(t.zs, store, NULL), ==, ZONE_STORE_FRESH);
    zone_store_format(t.zs);
    for (int step = 0; step < steps; step++) {
        int kind = g_rand_int_range(g, 0, 100);
        uint64_t z = (uint64_t)g_rand_int_range(g, 0, (gint32)n);
        uint64_t slba, nlb, lba1 = 0, lba2 = 0;
        ZoneStatus got, want;
        uint8_t ext[64];
        guint ev_before = t.ev->len;
        ZoneState before_states[RMAX];

        memcpy(before_states, r.st, sizeof(before_states));
        memset(ext, step & 0xff, sizeof(ext));

        if (kind < 45) {                                /* write or append */
            bool append = kind >= 35;
            int where = g_rand_int_range(g, 0, 10);
            slba = append ? z * size : z * size + r.wp[z];
            if (where == 0) {
                slba = (uint64_t)g_rand_int_range(g, 0, (gint32)total + 2);
            } else if (where == 1) {
                slba = z * size + (uint64_t)g_rand_int_range(g, 0, (gint32)size);
            }
            nlb = pick_nlb(g, cap);
            want = ref_write(&r, slba, nlb, append, &lba2);
            got = zone_write(t.zs, slba, nlb, append, &lba1);
            g_assert_cmpint(got, ==, want);
            if (got == ZONE_OK) {
                g_assert_cmpuint(lba1, ==, lba2);
            }
        } else if (kind < 60) {                         /* read */
            slba = (uint64_t)g_rand_int_range(g, 0, (gint32)total + 2);
            nlb = (uint64_t)g_rand_int_range(g, 1, (gint32)size * 2);
            g_assert_cmpint(zone_read_check(t.zs, slba, nlb), ==, ref_read(&r, slba, nlb));
        } else if (kind < 90) {                         /* one zone */
            ZoneAction a = all_actions[g_rand_int_range(g, 0, G_N_ELEMENTS(all_actions))];
            slba = g_rand_int_range(g, 0, 20) ? z * size
                                              : (uint64_t)g_rand_int_range(g, 0, (gint32)total + 2);
            want = ref_manage(&r, a, slba, false, ext);
            got = zone_manage(t.zs, a, slba, false, ext);
            g_assert_cmpint(got, ==, want);
        } else if (kind < 96) {                         /* select all */
            ZoneAction a = all_actions[g_rand_int_range(g, 0, G_N_ELEMENTS(all_actions))];
            want = ref_manage(&r, a, 0, true, ext);
            got = zone_manage(t.zs, a, 0, true, ext);
            g_assert_cmpint(got, ==, want);
        } else if (kind < 97) {                         /* media failure */
            ZoneState s = g_rand_boolean(g) ? RO : OFF;
            zone_fail(t.zs, z, s);
            if (r.st[z] != OFF) {
                r.st[z] = s;
            }
        } else if (kind < 99) {                         /* controller reset */
            zone_power_cycle(t.zs);
            ref_power_cycle(&r);
        } else {                                        /* power cycle */
            ZoneSet *again = zone_set_new(&c, NULL);

            g_assert_cmpint(zone_store_open(again, store, NULL), ==, ZONE_STORE_LOADED);
            g_assert_cmpuint(again->records_recovered, ==, 0);
            again->on_change = record;
            again->opaque = t.ev;
            zone_set_free(t.zs);
            t.zs = again;
            ref_power_cycle(&r);
            /* a restore is not a transition */
            g_assert_cmpuint(t.ev->len, ==, ev_before);
            memcpy(before_states, r.st, sizeof(before_states));
        }
        ref_compare(&r, t.zs);

        /*
         * on_change told every transition: replaying the calls from the states before the
         * step gives the states after it (a write may pass E/C -> IO -> F, two calls)
         */
        for (guint k = ev_before; k < t.ev->len; k++) {
            Ev *e = &g_array_index(t.ev, Ev, k);
            g_assert_cmpuint(e->zone, <, n);
            g_assert_cmpint(e->from, ==, before_states[e->zone]);
            g_assert_cmpint(e->from, !=, e->to);
            before_states[e->zone] = e->to;
        }
        for (uint64_t i = 0; i < n; i++) {
            if (before_states[i] != r.st[i]) {
                g_error("seed %u step %d: zone %" G_GUINT64_FORMAT " changed untold",
                        seed, step, i);
            }
        }
        transitions += t.ev->len - ev_before;
        ev_clear(&t);
    }
    g_assert_cmpuint(transitions, >, 0);
    rm(&t);
    g_free(store);
    g_rand_free(g);
}

static void test_random_against_model(void)
{
    for (guint32 seed = 1; seed <= 40; seed++) {
        random_run(seed, 3000);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/zone/config", test_config);
    g_test_add_func("/zone/new-set", test_new_set);
    g_test_add_func("/zone/single-zone-every-action-every-state", test_single_zone_table);
    g_test_add_func("/zone/select-all-every-action-every-state", test_select_all_table);
    g_test_add_func("/zone/manage-invalid-field", test_manage_invalid_field);
    g_test_add_func("/zone/zde-lifecycle", test_zde_lifecycle);
    g_test_add_func("/zone/resources-small-limits", test_resources_small_limits);
    g_test_add_func("/zone/implicit-close-lru", test_implicit_close_lru);
    g_test_add_func("/zone/equal-limits", test_equal_limits);
    g_test_add_func("/zone/open-all-resources", test_open_all_resources);
    g_test_add_func("/zone/all-release", test_all_release);
    g_test_add_func("/zone/manage-some-budget", test_manage_some_budget);
    g_test_add_func("/zone/write-rules", test_write_rules);
    g_test_add_func("/zone/append", test_append);
    g_test_add_func("/zone/reads", test_reads);
    g_test_add_func("/zone/readable", test_readable);
    g_test_add_func("/zone/report", test_report);
    g_test_add_func("/zone/fail", test_zone_fail);
    g_test_add_func("/zone/random-against-model", test_random_against_model);
    return g_test_run();
}
