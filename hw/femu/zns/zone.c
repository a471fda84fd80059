/*
 * The ZNS 1.1 zone state machine; see zone.h. Section numbers below are those of the
 * NVMe Zoned Namespace Command Set Specification 1.1.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "zone.h"
#include "../media/record.h"

#include <glib.h>
#include <stdarg.h>
#include <string.h>

#define ZONE_ZDE_MAX (255u * 64u)      /* ZDES is a byte counting 64-byte units */

/*
 * The saved state, little endian. Header (64 bytes): magic "FZNS", version, nr_zones,
 * zone size and capacity (LBAs), extension bytes, LBA bytes, reserved, checksum of the
 * rest. Then two 32-byte record slots per zone: sequence number, write pointer, state,
 * attributes, 2 reserved, checksum of the extension (when ZDEV), 4 reserved, checksum of
 * the zone index and the record's first 28 bytes. Then the extensions. A record of
 * sequence number s sits in slot s % 2; an all-zero slot holds no record.
 */
#define ZONE_STORE_MAGIC 0x534e5a46u
#define ZONE_STORE_VERSION 2u
#define ZONE_STORE_HEADER 64u
#define ZONE_RECORD 32u
#define ZONE_SLOTS 2u
#define ZONE_HEADER_SALT UINT64_MAX    /* checksummed as if it were this zone's record */

/* ---- configuration ---- */

static bool fail(char **err, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static bool fail(char **err, const char *fmt, ...)
{
    va_list ap;

    if (err) {
        va_start(ap, fmt);
        *err = g_strdup_vprintf(fmt, ap);
        va_end(ap);
    }
    return false;
}

bool zone_config_check(const ZoneConfig *c, char **err)
{
    if (c->zone_size == 0 || (c->zone_size & (c->zone_size - 1))) {
        return fail(err, "zone size (zns_zone_size_mb) = %" G_GUINT64_FORMAT
                    " LBAs must be a power of two", c->zone_size);
    }
    if (c->zone_cap < 1 || c->zone_cap > c->zone_size) {
        return fail(err, "zns_zone_cap=%" G_GUINT64_FORMAT " LBAs is out of range: allowed "
                    "1..%" G_GUINT64_FORMAT " (the zone size)", c->zone_cap, c->zone_size);
    }
    /* 2^32 zones keeps counts in uint32_t; 2^62 LBAs keeps slba + nlb from overflowing */
    if (c->nr_zones < 1 || c->nr_zones > UINT32_MAX) {
        return fail(err, "the number of zones (devsz_mb / zns_zone_size_mb) = %"
                    G_GUINT64_FORMAT " is out of range: allowed 1..%u", c->nr_zones,
                    UINT32_MAX);
    }
    if (c->nr_zones > (UINT64_C(1) << 62) / c->zone_size) {
        return fail(err, "the zoned namespace (%" G_GUINT64_FORMAT " zones of %"
                    G_GUINT64_FORMAT " LBAs) has more than 2^62 LBAs", c->nr_zones,
                    c->zone_size);
    }
    if (c->max_open > c->nr_zones) {
        return fail(err, "zns_max_open=%u is out of range: allowed 0 (no limit)..%"
                    G_GUINT64_FORMAT " (the number of zones)", c->max_open, c->nr_zones);
    }
    if (c->max_active > c->nr_zones) {
        return fail(err, "zns_max_active=%u is out of range: allowed 0 (no limit)..%"
                    G_GUINT64_FORMAT " (the number of zones)", c->max_active, c->nr_zones);
    }
    /* 2.1.1.4: Maximum Open Resources <= Maximum Active Resources */
    if (c->max_open && c->max_active && c->max_active < c->max_open) {
        return fail(err, "zns_max_active=%u must be at least zns_max_open=%u (or 0, no limit)",
                    c->max_active, c->max_open);
    }
    if (c->zde_bytes % 64 || c->zde_bytes > ZONE_ZDE_MAX) {
        return fail(err, "zns_zd_ext_size=%u bytes must be a multiple of 64 in 0..%u",
                    c->zde_bytes, ZONE_ZDE_MAX);
    }
    if (zone_state_bytes(c) > ZONE_STATE_MAX_BYTES) {
        return fail(err, "the zone state of %" G_GUINT64_FORMAT " zones (devsz_mb / "
                    "zns_zone_size_mb) with zns_zd_ext_size=%u needs %" G_GUINT64_FORMAT
                    " MiB of host memory, more than the limit of %" G_GUINT64_FORMAT
                    " MiB: use larger zones, a smaller drive or a smaller zns_zd_ext_size",
                    c->nr_zones, c->zde_bytes, zone_state_bytes(c) >> 20,
                    ZONE_STATE_MAX_BYTES >> 20);
    }
    return true;
}

uint64_t zone_state_bytes(const ZoneConfig *c)
{
    return c->nr_zones * (sizeof(Zone) + ZONE_SLOTS * ZONE_RECORD + c->zde_bytes);
}

ZoneSet *zone_set_new(const ZoneConfig *c, char **err)
{
    ZoneSet *zs;

    if (!zone_config_check(c, err)) {
        return NULL;
    }
    zs = g_new0(ZoneSet, 1);
    zs->cfg = *c;
    zs->zones = g_new0(Zone, c->nr_zones);
    for (uint64_t i = 0; i < c->nr_zones; i++) {
        zs->zones[i].zslba = i * c->zone_size;
        zs->zones[i].wp = zs->zones[i].zslba;
        zs->zones[i].state = ZONE_EMPTY;
        zs->zones[i].prev = zs->zones[i].next = ZONE_NONE;
    }
    if (c->zde_bytes) {
        zs->zde = g_malloc0(c->nr_zones * c->zde_bytes);
    }
    for (int l = 0; l < ZONE_LISTS; l++) {
        zs->lists[l][0] = zs->lists[l][1] = ZONE_NONE;
    }
    zs->hasher = g_checksum_new(G_CHECKSUM_MD5);
    return zs;
}

void zone_set_free(ZoneSet *zs)
{
    if (zs) {
        g_free(zs->zones);
        if (!zs->store) {
            g_free(zs->zde);
        }
        g_checksum_free(zs->hasher);
        g_free(zs);
    }
}

/* ---- the saved records ---- */

static uint32_t checksum(const ZoneSet *zs, uint64_t salt, const uint8_t *p, size_t len)
{
    return record_checksum(zs->hasher, salt, p, len);
}

static uint8_t *record_slot(const ZoneSet *zs, uint64_t idx, uint64_t seq)
{
    return zs->store + ZONE_STORE_HEADER + (idx * ZONE_SLOTS + seq % ZONE_SLOTS) * ZONE_RECORD;
}

static const uint8_t *store_zde(const ZoneSet *zs)
{
    return zs->store + ZONE_STORE_HEADER + zs->cfg.nr_zones * ZONE_SLOTS * ZONE_RECORD;
}

/*
 * Saves zone idx as it is now, in the slot that does not hold its newest record. A new
 * extension (Set Zone Descriptor Extension) is checksummed; otherwise its checksum is the
 * newest record's.
 */
static void save(ZoneSet *zs, uint64_t idx, bool new_zde)
{
    Zone *z = &zs->zones[idx];
    uint8_t r[ZONE_RECORD] = { 0 };
    uint32_t zde_sum = 0;

    if (!zs->store) {
        return;
    }
    if (z->attrs & ZONE_ATTR_ZDEV) {
        zde_sum = new_zde ? checksum(zs, idx, zs->zde + idx * zs->cfg.zde_bytes,
                                     zs->cfg.zde_bytes)
                          : (uint32_t)record_get_le(record_slot(zs, idx, z->seq) + 20, 4);
    }
    z->seq++;
    record_put_le(r, z->seq, 8);
    record_put_le(r + 8, z->wp, 8);
    r[16] = z->state;
    r[17] = z->attrs;
    record_put_le(r + 20, zde_sum, 4);
    record_put_le(r + 28, checksum(zs, idx, r, 28), 4);
    /* one copy: the other slot keeps the previous record until this one is whole */
    memcpy(record_slot(zs, idx, z->seq), r, ZONE_RECORD);
    zs->records_written++;
}

/* ---- transitions and resources (2.1.1.4) ---- */

static bool holds_open(ZoneState s)
{
    return s == ZONE_IMPLICIT_OPEN || s == ZONE_EXPLICIT_OPEN;
}

static bool holds_active(ZoneState s)
{
    return holds_open(s) || s == ZONE_CLOSED;
}

static uint64_t nsze(const ZoneSet *zs)
{
    return zs->cfg.nr_zones * zs->cfg.zone_size;
}

static uint64_t zone_end_cap(const ZoneSet *zs, const Zone *z)
{
    return z->zslba + zs->cfg.zone_cap;
}

/* The list a zone belongs to in its state. */
static uint8_t list_for(const Zone *z)
{
    switch (z->state) {
    case ZONE_IMPLICIT_OPEN:
        return ZONE_LIST_IMPLICIT;
    case ZONE_EXPLICIT_OPEN:
        return ZONE_LIST_EXPLICIT;
    case ZONE_CLOSED:
        return z->wp == z->zslba && !z->attrs ? ZONE_LIST_BLANK_CLOSED : ZONE_LIST_NONE;
    default:
        return ZONE_LIST_NONE;
    }
}

static void list_remove(ZoneSet *zs, uint64_t idx)
{
    Zone *z = &zs->zones[idx];
    uint32_t *list = zs->lists[z->list];

    if (z->prev != ZONE_NONE) {
        zs->zones[z->prev].next = z->next;
    } else {
        list[0] = z->next;
    }
    if (z->next != ZONE_NONE) {
        zs->zones[z->next].prev = z->prev;
    } else {
        list[1] = z->prev;
    }
    z->prev = z->next = ZONE_NONE;
    z->list = ZONE_LIST_NONE;
}

static void list_append(ZoneSet *zs, uint8_t l, uint64_t idx)
{
    Zone *z = &zs->zones[idx];
    uint32_t *list = zs->lists[l];

    z->list = l;
    z->prev = list[1];
    z->next = ZONE_NONE;
    if (list[1] != ZONE_NONE) {
        zs->zones[list[1]].next = (uint32_t)idx;
    } else {
        list[0] = (uint32_t)idx;
    }
    list[1] = (uint32_t)idx;
}

/*
 * Every state change goes through here, so the counters follow the resource rules a)-g)
 * of 2.1.1.4.1 and the open lists follow the states by construction. The zone already
 * shows its new state when told. The caller saves the zone once it is done with it.
 */
static void set_state(ZoneSet *zs, uint64_t idx, ZoneState to)
{
    Zone *z = &zs->zones[idx];
    ZoneState from = z->state;

    if (from == to) {
        return;
    }
    zs->nr_open += (int)holds_open(to) - (int)holds_open(from);
    zs->nr_active += (int)holds_active(to) - (int)holds_active(from);
    z->state = to;
    if (z->list != list_for(z)) {
        if (z->list != ZONE_LIST_NONE) {
            list_remove(zs, idx);
        }
        if (list_for(z) != ZONE_LIST_NONE) {
            list_append(zs, list_for(z), idx);
        }
    }
    if (zs->on_change) {
        zs->on_change(zs->opaque, idx, from, to);
    }
}

/* The implicitly opened zone opened longest ago, or UINT64_MAX. */
static uint64_t lru_implicit(const ZoneSet *zs)
{
    uint32_t head = zs->lists[ZONE_LIST_IMPLICIT][0];

    return head == ZONE_NONE ? UINT64_MAX : head;
}

static bool open_full(const ZoneSet *zs)
{
    return zs->cfg.max_open && zs->nr_open >= zs->cfg.max_open;
}

static bool active_full(const ZoneSet *zs)
{
    return zs->cfg.max_active && zs->nr_active >= zs->cfg.max_active;
}

/*
 * May a zone in state s become opened? Active first: closing an implicitly opened zone
 * frees only an open resource, so a missing active one cannot be made up for; and with
 * max_active == max_open 2.1.1.4.1 b) asks for Too Many Active.
 */
static ZoneStatus check_open(const ZoneSet *zs, ZoneState s)
{
    if (s == ZONE_EMPTY && active_full(zs)) {
        return ZONE_TOO_MANY_ACTIVE;
    }
    if (open_full(zs) && lru_implicit(zs) == UINT64_MAX) {
        return ZONE_TOO_MANY_OPEN;
    }
    return ZONE_OK;
}

/* Frees an open resource if none is left ("for resource management purposes", 2.1.1.4.1). */
static void make_open_room(ZoneSet *zs)
{
    if (open_full(zs)) {
        uint64_t victim = lru_implicit(zs);
        set_state(zs, victim, ZONE_CLOSED);
        save(zs, victim, false);
    }
}

/* Opens an Empty or Closed zone, after check_open() said yes. */
static void open_zone(ZoneSet *zs, uint64_t idx, ZoneState to)
{
    make_open_room(zs);
    set_state(zs, idx, to);
}

/* ---- I/O ---- */

ZoneStatus zone_write_check(const ZoneSet *zs, uint64_t slba, uint64_t nlb, bool append,
                            uint64_t *lba)
{
    uint64_t start;
    const Zone *z;

    if (nlb == 0) {
        return ZONE_INVALID_FIELD;
    }
    if (slba >= nsze(zs) || nlb > nsze(zs) - slba) {
        return ZONE_LBA_RANGE;
    }
    z = &zs->zones[zone_index(zs, slba)];
    if (append && slba != z->zslba) {
        return ZONE_INVALID_FIELD;
    }
    switch (z->state) {
    case ZONE_FULL:
        return ZONE_IS_FULL;
    case ZONE_READ_ONLY:
        return ZONE_IS_READ_ONLY;
    case ZONE_OFFLINE:
        return ZONE_IS_OFFLINE;
    default:
        break;
    }
    start = append ? z->wp : slba;
    if (start != z->wp) {
        return ZONE_INVALID_WRITE;
    }
    if (nlb > zone_end_cap(zs, z) - start) {
        return ZONE_BOUNDARY_ERROR;
    }
    if (z->state == ZONE_EMPTY || z->state == ZONE_CLOSED) {
        ZoneStatus st = check_open(zs, z->state);
        if (st != ZONE_OK) {
            return st;
        }
    }
    if (lba) {
        *lba = start;
    }
    return ZONE_OK;
}

void zone_write_commit(ZoneSet *zs, uint64_t lba, uint64_t nlb)
{
    uint64_t idx = zone_index(zs, lba);
    Zone *z = &zs->zones[idx];

    g_assert(lba == z->wp && nlb <= zone_end_cap(zs, z) - lba);
    if (z->state == ZONE_EMPTY || z->state == ZONE_CLOSED) {
        open_zone(zs, idx, ZONE_IMPLICIT_OPEN);
    }
    z->wp += nlb;
    /* 2.1.1.3.2 b): reaching the capacity fills the zone, releasing its resources */
    if (z->wp == zone_end_cap(zs, z)) {
        set_state(zs, idx, ZONE_FULL);
    }
    save(zs, idx, false);
}

ZoneStatus zone_write(ZoneSet *zs, uint64_t slba, uint64_t nlb, bool append, uint64_t *lba)
{
    uint64_t start;
    ZoneStatus st = zone_write_check(zs, slba, nlb, append, &start);

    if (st == ZONE_OK) {
        zone_write_commit(zs, start, nlb);
        if (lba) {
            *lba = start;
        }
    }
    return st;
}

uint64_t zone_readable(const ZoneSet *zs, uint64_t lba, uint64_t max)
{
    uint64_t n = 0;

    while (n < max && lba < nsze(zs) && n < nsze(zs) - lba) {
        const Zone *z = &zs->zones[zone_index(zs, lba + n)];
        uint64_t pos = lba + n;

        if (z->state == ZONE_OFFLINE || pos >= z->wp) {
            break;
        }
        n += MIN(z->wp - pos, max - n);
        if (!zs->cfg.cross_zone_read || z->wp != z->zslba + zs->cfg.zone_size) {
            break;
        }
    }
    return n;
}

ZoneStatus zone_read_check(const ZoneSet *zs, uint64_t slba, uint64_t nlb)
{
    uint64_t first, last;

    if (nlb == 0) {
        return ZONE_INVALID_FIELD;
    }
    if (slba >= nsze(zs) || nlb > nsze(zs) - slba) {
        return ZONE_LBA_RANGE;
    }
    first = zone_index(zs, slba);
    last = zone_index(zs, slba + nlb - 1);
    if (zs->zones[first].state == ZONE_OFFLINE) {
        return ZONE_IS_OFFLINE;
    }
    if (first != last && !zs->cfg.cross_zone_read) {
        return ZONE_BOUNDARY_ERROR;
    }
    for (uint64_t i = first + 1; i <= last; i++) {
        if (zs->zones[i].state == ZONE_OFFLINE) {
            return ZONE_IS_OFFLINE;
        }
    }
    return ZONE_OK;
}

/* ---- Zone Management Send (3.4.3.1) ---- */

static void finish_zone(ZoneSet *zs, uint64_t idx)
{
    /* the write pointer is invalid when Full; park it at the capacity for the invariant */
    zs->zones[idx].wp = zone_end_cap(zs, &zs->zones[idx]);
    set_state(zs, idx, ZONE_FULL);
}

/* The extension's bytes stay: without ZDEV they read as zeroes (zone_zde). */
static void reset_zone(ZoneSet *zs, uint64_t idx)
{
    Zone *z = &zs->zones[idx];

    z->wp = z->zslba;
    z->attrs = 0;
    set_state(zs, idx, ZONE_EMPTY);
}

static ZoneStatus manage_zone(ZoneSet *zs, ZoneAction action, uint64_t idx, const uint8_t *zde)
{
    Zone *z = &zs->zones[idx];
    ZoneState s = z->state;
    ZoneStatus st;

    /* ZSRO and ZSO refuse every action but Offline with Invalid Zone State Transition */
    switch (action) {
    case ZONE_ACTION_CLOSE:
        if (holds_open(s)) {
            set_state(zs, idx, ZONE_CLOSED);
        } else if (s != ZONE_CLOSED) {
            return ZONE_INVALID_TRANSITION;
        }
        return ZONE_OK;
    case ZONE_ACTION_FINISH:
        /* from Empty too, without any resource (2.1.1.4.1 g) */
        if (holds_active(s) || s == ZONE_EMPTY) {
            finish_zone(zs, idx);
        } else if (s != ZONE_FULL) {
            return ZONE_INVALID_TRANSITION;
        }
        return ZONE_OK;
    case ZONE_ACTION_OPEN:
        if (s == ZONE_EMPTY || s == ZONE_CLOSED) {
            st = check_open(zs, s);
            if (st != ZONE_OK) {
                return st;
            }
            open_zone(zs, idx, ZONE_EXPLICIT_OPEN);
        } else if (s == ZONE_IMPLICIT_OPEN) {
            set_state(zs, idx, ZONE_EXPLICIT_OPEN);
        } else if (s != ZONE_EXPLICIT_OPEN) {
            return ZONE_INVALID_TRANSITION;
        }
        return ZONE_OK;
    case ZONE_ACTION_RESET:
        if (holds_active(s) || s == ZONE_FULL) {
            reset_zone(zs, idx);
        } else if (s != ZONE_EMPTY) {
            return ZONE_INVALID_TRANSITION;
        }
        return ZONE_OK;
    case ZONE_ACTION_OFFLINE:
        if (s == ZONE_READ_ONLY) {
            set_state(zs, idx, ZONE_OFFLINE);
        } else if (s != ZONE_OFFLINE) {
            return ZONE_INVALID_TRANSITION;
        }
        return ZONE_OK;
    case ZONE_ACTION_SET_ZDE:
        if (s != ZONE_EMPTY) {
            return ZONE_INVALID_TRANSITION;
        }
        if (active_full(zs)) {
            return ZONE_TOO_MANY_ACTIVE;
        }
        memcpy(zs->zde + idx * zs->cfg.zde_bytes, zde, zs->cfg.zde_bytes);
        z->attrs |= ZONE_ATTR_ZDEV;
        set_state(zs, idx, ZONE_CLOSED);
        return ZONE_OK;
    }
    return ZONE_INVALID_FIELD;
}

/* One zone's action, and its record saved when the zone changed. */
static ZoneStatus manage_one(ZoneSet *zs, ZoneAction action, uint64_t idx, const uint8_t *zde)
{
    Zone *z = &zs->zones[idx];
    Zone before = *z;
    ZoneStatus st = manage_zone(zs, action, idx, zde);

    if (z->state != before.state || z->wp != before.wp || z->attrs != before.attrs) {
        save(zs, idx, action == ZONE_ACTION_SET_ZDE);
    }
    return st;
}

/*
 * Select All Open: every zone Closed when the command starts, or none (3.4.3.1.3). Room
 * comes from implicitly opened zones, which become Closed but are not opened in turn.
 */
static ZoneStatus open_all(ZoneSet *zs)
{
    uint64_t n = zs->cfg.nr_zones, nr_closed = 0, nr_explicit = 0, k = 0;
    uint64_t *closed;

    for (uint64_t i = 0; i < n; i++) {
        nr_closed += zs->zones[i].state == ZONE_CLOSED;
        nr_explicit += zs->zones[i].state == ZONE_EXPLICIT_OPEN;
    }
    /* Closed zones already hold active resources: only open ones can run out */
    if (zs->cfg.max_open && nr_explicit + nr_closed > zs->cfg.max_open) {
        return ZONE_TOO_MANY_OPEN;
    }
    closed = g_new(uint64_t, nr_closed ? nr_closed : 1);
    for (uint64_t i = 0; i < n; i++) {
        if (zs->zones[i].state == ZONE_CLOSED) {
            closed[k++] = i;
        }
    }
    for (k = 0; k < nr_closed; k++) {
        open_zone(zs, closed[k], ZONE_EXPLICIT_OPEN);
        save(zs, closed[k], false);
    }
    g_free(closed);
    return ZONE_OK;
}

ZoneStatus zone_manage(ZoneSet *zs, ZoneAction action, uint64_t slba, bool select_all,
                       const uint8_t *zde)
{
    uint64_t idx = 0, budget = UINT64_MAX;

    switch (action) {
    case ZONE_ACTION_CLOSE:
    case ZONE_ACTION_FINISH:
    case ZONE_ACTION_OPEN:
    case ZONE_ACTION_RESET:
    case ZONE_ACTION_OFFLINE:
        break;
    case ZONE_ACTION_SET_ZDE:
        if (select_all || !zs->cfg.zde_bytes || !zde) {
            return ZONE_INVALID_FIELD;
        }
        break;
    default:
        return ZONE_INVALID_FIELD;
    }

    if (!select_all) {
        /* an SLBA that is not a zone start of this namespace: Invalid Field (3.4.3) */
        if (slba >= nsze(zs) || slba % zs->cfg.zone_size) {
            return ZONE_INVALID_FIELD;
        }
        return manage_one(zs, action, zone_index(zs, slba), zde);
    }

    if (action == ZONE_ACTION_OPEN) {
        return open_all(zs);
    }
    zone_manage_some(zs, action, &idx, &budget, 1);
    return ZONE_OK;
}

/* Whether a Select All action other than Open applies to a zone in state s. */
static bool select_all_applies(ZoneAction action, ZoneState s)
{
    switch (action) {
    case ZONE_ACTION_CLOSE:
        return holds_open(s);
    case ZONE_ACTION_FINISH:
        return holds_active(s);
    case ZONE_ACTION_RESET:
        return holds_active(s) || s == ZONE_FULL;
    case ZONE_ACTION_OFFLINE:
        return s == ZONE_READ_ONLY;
    default:
        return false;
    }
}

void zone_manage_some(ZoneSet *zs, ZoneAction action, uint64_t *next, uint64_t *budget,
                      uint64_t cost)
{
    for (; *next < zs->cfg.nr_zones && *budget; ++*next) {
        uint64_t spent = 1;

        if (select_all_applies(action, zs->zones[*next].state)) {
            manage_one(zs, action, *next, NULL);
            spent = cost;
        }
        *budget -= MIN(*budget, spent);
    }
}

void zone_fail(ZoneSet *zs, uint64_t zone, ZoneState state)
{
    g_return_if_fail(zone < zs->cfg.nr_zones);
    g_return_if_fail(state == ZONE_READ_ONLY || state == ZONE_OFFLINE);

    /* nothing leaves Offline (2.1.1.3.7) */
    if (zs->zones[zone].state != ZONE_OFFLINE && zs->zones[zone].state != state) {
        set_state(zs, zone, state);
        save(zs, zone, false);
    }
}

/* By 2.1.1.3, an active zone at its start with no extension is Empty, others Closed. */
static ZoneState power_cycled(const Zone *z)
{
    if (!holds_active(z->state)) {
        return z->state;
    }
    return z->wp == z->zslba && !z->attrs ? ZONE_EMPTY : ZONE_CLOSED;
}

void zone_power_cycle(ZoneSet *zs)
{
    static const uint8_t lists[] = { ZONE_LIST_EXPLICIT, ZONE_LIST_IMPLICIT,
                                     ZONE_LIST_BLANK_CLOSED };

    for (size_t l = 0; l < G_N_ELEMENTS(lists); l++) {
        uint32_t idx;

        while ((idx = zs->lists[lists[l]][0]) != ZONE_NONE) {
            set_state(zs, idx, power_cycled(&zs->zones[idx]));
            save(zs, idx, false);
        }
    }
}

bool zone_rollback(ZoneSet *zs, uint64_t zone, uint64_t wp)
{
    Zone *z = &zs->zones[zone];
    ZoneState to;
    ZoneEventFn *fn = zs->on_change;

    if (wp >= z->wp || wp < z->zslba || z->state == ZONE_EMPTY ||
        z->state == ZONE_READ_ONLY || z->state == ZONE_OFFLINE) {
        return false;
    }
    to = wp == z->zslba && !z->attrs ? ZONE_EMPTY : ZONE_CLOSED;
    if (to == ZONE_CLOSED && !holds_active(z->state) && active_full(zs)) {
        return false;
    }
    z->wp = wp;
    zs->on_change = NULL;
    set_state(zs, zone, to);
    zs->on_change = fn;
    save(zs, zone, false);
    return true;
}

const uint8_t *zone_zde(const ZoneSet *zs, uint64_t zone)
{
    if (!zs->zde || !(zs->zones[zone].attrs & ZONE_ATTR_ZDEV)) {
        return NULL;
    }
    return zs->zde + zone * zs->cfg.zde_bytes;
}

/* ---- Zone Management Receive ---- */

static bool matches(ZoneState s, ZoneReportFilter f)
{
    switch (f) {
    case ZONE_REPORT_ALL:
        return true;
    case ZONE_REPORT_EMPTY:
        return s == ZONE_EMPTY;
    case ZONE_REPORT_IMPLICIT_OPEN:
        return s == ZONE_IMPLICIT_OPEN;
    case ZONE_REPORT_EXPLICIT_OPEN:
        return s == ZONE_EXPLICIT_OPEN;
    case ZONE_REPORT_CLOSED:
        return s == ZONE_CLOSED;
    case ZONE_REPORT_FULL:
        return s == ZONE_FULL;
    case ZONE_REPORT_READ_ONLY:
        return s == ZONE_READ_ONLY;
    case ZONE_REPORT_OFFLINE:
        return s == ZONE_OFFLINE;
    }
    return false;
}

uint64_t zone_report_count(const ZoneSet *zs, uint64_t slba, ZoneReportFilter filter)
{
    uint64_t n = 0;

    for (uint64_t i = zone_index(zs, slba); i < zs->cfg.nr_zones; i++) {
        n += matches(zs->zones[i].state, filter);
    }
    return n;
}

uint64_t zone_report_next(const ZoneSet *zs, uint64_t from, ZoneReportFilter filter)
{
    for (uint64_t i = from; i < zs->cfg.nr_zones; i++) {
        if (matches(zs->zones[i].state, filter)) {
            return i;
        }
    }
    return UINT64_MAX;
}

/* ---- the saved state ---- */

uint64_t zone_store_size(const ZoneConfig *c)
{
    return ZONE_STORE_HEADER + c->nr_zones * (ZONE_SLOTS * ZONE_RECORD + c->zde_bytes);
}

static void header_fill(const ZoneSet *zs, uint8_t *h)
{
    memset(h, 0, ZONE_STORE_HEADER);
    record_put_le(h, ZONE_STORE_MAGIC, 4);
    record_put_le(h + 4, ZONE_STORE_VERSION, 4);
    record_put_le(h + 8, zs->cfg.nr_zones, 8);
    record_put_le(h + 16, zs->cfg.zone_size, 8);
    record_put_le(h + 24, zs->cfg.zone_cap, 8);
    record_put_le(h + 32, zs->cfg.zde_bytes, 4);
    record_put_le(h + 36, zs->cfg.lba_bytes, 4);
    record_put_le(h + 60, checksum(zs, ZONE_HEADER_SALT, h, 60), 4);
}

/* "N MiB" of a count of LBAs when the LBA size is known, else "N LBAs". */
static char *lbas_str(uint64_t lbas, uint32_t lba_bytes)
{
    if (lba_bytes && (lbas * lba_bytes) % (1u << 20) == 0) {
        return g_strdup_printf("%" G_GUINT64_FORMAT " MiB", lbas * lba_bytes >> 20);
    }
    if (lba_bytes) {
        return g_strdup_printf("%" G_GUINT64_FORMAT " bytes", lbas * lba_bytes);
    }
    return g_strdup_printf("%" G_GUINT64_FORMAT " LBAs", lbas);
}

/* Does the header describe this configuration? Else *err names what differs. */
static bool header_matches(const ZoneSet *zs, const uint8_t *h, char **err)
{
    const ZoneConfig *c = &zs->cfg;
    uint64_t nr = record_get_le(h + 8, 8), size = record_get_le(h + 16, 8), cap = record_get_le(h + 24, 8);
    uint32_t zde = (uint32_t)record_get_le(h + 32, 4), lba = (uint32_t)record_get_le(h + 36, 4);
    uint32_t version = (uint32_t)record_get_le(h + 4, 4);

    if (record_get_le(h, 4) != ZONE_STORE_MAGIC) {
        return fail(err, "the area after the data holds something else than zone state "
                    "(its first bytes are %02x %02x %02x %02x, not \"FZNS\")",
                    h[0], h[1], h[2], h[3]);
    }
    if (version != ZONE_STORE_VERSION) {
        return fail(err, "the zone state is of format version %u, this FEMU reads version "
                    "%u only", version, ZONE_STORE_VERSION);
    }
    if (record_get_le(h + 60, 4) != checksum(zs, ZONE_HEADER_SALT, h, 60)) {
        return fail(err, "the zone state header is damaged (its checksum does not match)");
    }
    if (lba != c->lba_bytes) {
        return fail(err, "the zone state was saved with %u-byte LBAs, the namespace now "
                    "has %u-byte LBAs (lba_index)", lba, c->lba_bytes);
    }
    if (size != c->zone_size) {
        g_autofree char *was = lbas_str(size, lba), *now = lbas_str(c->zone_size, lba);
        return fail(err, "the zone state was saved with zones of %s, now %s "
                    "(zns_zone_size_mb)", was, now);
    }
    if (cap != c->zone_cap) {
        g_autofree char *was = lbas_str(cap, lba), *now = lbas_str(c->zone_cap, lba);
        return fail(err, "the zone state was saved with a zone capacity of %s, now %s "
                    "(zns_zone_cap)", was, now);
    }
    if (zde != c->zde_bytes) {
        return fail(err, "the zone state was saved with zns_zd_ext_size=%u, now %u", zde,
                    c->zde_bytes);
    }
    if (nr != c->nr_zones) {
        g_autofree char *was = lbas_str(nr * size, lba);
        g_autofree char *now = lbas_str(c->nr_zones * size, lba);
        return fail(err, "the zone state was saved for %" G_GUINT64_FORMAT " zones (%s), "
                    "the namespace now has %" G_GUINT64_FORMAT " zones (%s; devsz_mb, "
                    "ns_sizes_mb)", nr, was, c->nr_zones, now);
    }
    return true;
}

/*
 * The record in a slot, if it is whole and makes sense for zone idx: its checksum, its
 * slot, a state with a write pointer and attributes that fit, and its extension.
 */
static bool record_decode(const ZoneSet *zs, uint64_t idx, unsigned slot, const uint8_t *r,
                          const uint8_t *zde, Zone *out)
{
    uint64_t seq = record_get_le(r, 8), wp = record_get_le(r + 8, 8);
    uint8_t state = r[16], attrs = r[17];
    Zone *z = out;
    bool wp_ok;

    if (record_get_le(r + 28, 4) != checksum(zs, idx, r, 28) || seq == 0 || seq % ZONE_SLOTS != slot) {
        return false;
    }
    if (attrs & ~ZONE_ATTR_ZDEV || (attrs && !zs->cfg.zde_bytes)) {
        return false;
    }
    if (attrs && record_get_le(r + 20, 4) != checksum(zs, idx, zde, zs->cfg.zde_bytes)) {
        return false;
    }
    z->seq = seq;
    z->wp = wp;
    z->attrs = attrs;
    z->state = state;
    wp_ok = wp >= z->zslba && wp <= zone_end_cap(zs, z);
    switch (state) {
    case ZONE_EMPTY:
        return wp == z->zslba && !attrs;
    case ZONE_IMPLICIT_OPEN:
    case ZONE_EXPLICIT_OPEN:
    case ZONE_CLOSED:
        return wp_ok && wp < zone_end_cap(zs, z);
    case ZONE_FULL:
    case ZONE_READ_ONLY:
    case ZONE_OFFLINE:
        return wp_ok;
    }
    return false;
}

/*
 * Zone idx from its slots: the newest valid record; none at all (both slots zero) is the
 * zone as created. False when records exist and none is valid.
 */
static bool zone_load(ZoneSet *zs, uint64_t idx, Zone *z, bool *recovered)
{
    const uint8_t *zde = zs->cfg.zde_bytes ? store_zde(zs) + idx * zs->cfg.zde_bytes : NULL;
    Zone best = *z, cand;
    bool found = false, any = false;

    *recovered = false;
    for (unsigned s = 0; s < ZONE_SLOTS; s++) {
        const uint8_t *r = record_slot(zs, idx, s);

        if (record_all_zero(r, ZONE_RECORD)) {
            continue;
        }
        any = true;
        cand = *z;
        if (!record_decode(zs, idx, s, r, zde, &cand)) {
            *recovered = true;
            continue;
        }
        if (!found || cand.seq > best.seq) {
            best = cand;
            found = true;
        }
    }
    if (any && !found && !record_all_zero(record_slot(zs, idx, 0), ZONE_RECORD) &&
        !record_all_zero(record_slot(zs, idx, 1), ZONE_RECORD)) {
        return false;
    }
    /* a torn first record leaves the zone as created */
    *z = best;
    z->state = power_cycled(z);
    return true;
}

ZoneStoreResult zone_store_open(ZoneSet *zs, uint8_t *store, char **err)
{
    uint64_t n = zs->cfg.nr_zones, nr_closed = 0, recovered = 0;
    ZoneStoreResult result = ZONE_STORE_LOADED;
    Zone *zones = NULL;

    g_return_val_if_fail(zs->nr_active == 0 && !zs->store, ZONE_STORE_ERROR);
    zs->store = store;
    if (record_all_zero(store, ZONE_STORE_HEADER)) {
        /* fresh: every slot must be zero as well */
        if (!record_all_zero(store, zone_store_size(&zs->cfg) - n * zs->cfg.zde_bytes)) {
            fail(err, "the zone state header is missing but zone records are present "
                 "(the area after the data is damaged)");
            goto refuse;
        }
        result = ZONE_STORE_FRESH;
    } else if (!header_matches(zs, store, err)) {
        goto refuse;
    } else {
        /* everything is checked before zs changes */
        zones = g_memdup2(zs->zones, n * sizeof(Zone));
        for (uint64_t i = 0; i < n; i++) {
            bool rec;

            if (!zone_load(zs, i, &zones[i], &rec)) {
                fail(err, "zone %" G_GUINT64_FORMAT " (ZSLBA 0x%" G_GINT64_MODIFIER "x): "
                     "neither of its two saved records is valid (damaged)", i,
                     zones[i].zslba);
                goto refuse;
            }
            recovered += rec;
            nr_closed += zones[i].state == ZONE_CLOSED;
        }
        /* a smaller zns_max_active than when saved cannot hold these zones */
        if (zs->cfg.max_active && nr_closed > zs->cfg.max_active) {
            fail(err, "the zone state has %" G_GUINT64_FORMAT " Closed zones, more than "
                 "zns_max_active=%u allows (set it to 0 or at least %" G_GUINT64_FORMAT ")",
                 nr_closed, zs->cfg.max_active, nr_closed);
            goto refuse;
        }
        g_free(zs->zones);
        zs->zones = zones;
        zs->nr_active = (uint32_t)nr_closed;
        zs->records_recovered = recovered;
    }
    if (zs->cfg.zde_bytes) {
        g_free(zs->zde);
        zs->zde = store + zone_store_size(&zs->cfg) - n * zs->cfg.zde_bytes;
    }
    return result;

refuse:
    g_free(zones);
    zs->store = NULL;
    return ZONE_STORE_ERROR;
}

void zone_store_format(ZoneSet *zs)
{
    g_return_if_fail(zs->store);
    header_fill(zs, zs->store);
}
