/*
 * The ZNS 1.1 zone state machine; see zone.h. Section numbers below are those of the
 * NVMe Zoned Namespace Command Set Specification 1.1.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "zone.h"

#include <glib.h>
#include <stdarg.h>
#include <string.h>

#define ZONE_STATE_MAGIC 0x534e5a46u   /* the bytes "FZNS" */
#define ZONE_STATE_VERSION 1u
#define ZONE_STATE_HEADER 40u          /* magic, version, nr_zones, size, cap, zde, pad */
#define ZONE_STATE_ENTRY 16u           /* state, attrs, 6 reserved, wp */
#define ZONE_ZDE_MAX (255u * 64u)      /* ZDES is a byte counting 64-byte units */

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
    return true;
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
    }
    if (c->zde_bytes) {
        zs->zde = g_malloc0(c->nr_zones * c->zde_bytes);
    }
    zs->next_open_seq = 1;
    return zs;
}

void zone_set_free(ZoneSet *zs)
{
    if (zs) {
        g_free(zs->zones);
        g_free(zs->zde);
        g_free(zs);
    }
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

/*
 * Every state change goes through here, so the counters follow the resource rules a)-g)
 * of 2.1.1.4.1 by construction. The zone already shows its new state when told.
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
    if (to == ZONE_IMPLICIT_OPEN) {
        z->open_seq = zs->next_open_seq++;
    }
    if (zs->on_change) {
        zs->on_change(zs->opaque, idx, from, to);
    }
}

/* The implicitly opened zone opened longest ago, or UINT64_MAX. */
static uint64_t lru_implicit(const ZoneSet *zs)
{
    uint64_t best = UINT64_MAX;

    if (zs->nr_open == 0) {
        return best;
    }
    for (uint64_t i = 0; i < zs->cfg.nr_zones; i++) {
        const Zone *z = &zs->zones[i];
        if (z->state == ZONE_IMPLICIT_OPEN &&
            (best == UINT64_MAX || z->open_seq < zs->zones[best].open_seq)) {
            best = i;
        }
    }
    return best;
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
        set_state(zs, lru_implicit(zs), ZONE_CLOSED);
    }
}

/* Opens an Empty or Closed zone, after check_open() said yes. */
static void open_zone(ZoneSet *zs, uint64_t idx, ZoneState to)
{
    make_open_room(zs);
    set_state(zs, idx, to);
}

/* ---- I/O ---- */

ZoneStatus zone_write(ZoneSet *zs, uint64_t slba, uint64_t nlb, bool append, uint64_t *lba)
{
    uint64_t idx, start;
    ZoneStatus st;
    Zone *z;

    if (nlb == 0) {
        return ZONE_INVALID_FIELD;
    }
    if (slba >= nsze(zs) || nlb > nsze(zs) - slba) {
        return ZONE_LBA_RANGE;
    }
    idx = zone_index(zs, slba);
    z = &zs->zones[idx];
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
        st = check_open(zs, z->state);
        if (st != ZONE_OK) {
            return st;
        }
        open_zone(zs, idx, ZONE_IMPLICIT_OPEN);
    }
    z->wp += nlb;
    /* 2.1.1.3.2 b): reaching the capacity fills the zone, releasing its resources */
    if (z->wp == zone_end_cap(zs, z)) {
        set_state(zs, idx, ZONE_FULL);
    }
    if (lba) {
        *lba = start;
    }
    return ZONE_OK;
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

static void reset_zone(ZoneSet *zs, uint64_t idx)
{
    Zone *z = &zs->zones[idx];

    z->wp = z->zslba;
    z->attrs = 0;
    if (zs->zde) {
        memset(zs->zde + idx * zs->cfg.zde_bytes, 0, zs->cfg.zde_bytes);
    }
    set_state(zs, idx, ZONE_EMPTY);
}

static ZoneStatus manage_one(ZoneSet *zs, ZoneAction action, uint64_t idx, const uint8_t *zde)
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
    }
    g_free(closed);
    return ZONE_OK;
}

ZoneStatus zone_manage(ZoneSet *zs, ZoneAction action, uint64_t slba, bool select_all,
                       const uint8_t *zde)
{
    uint64_t idx;

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
    for (idx = 0; idx < zs->cfg.nr_zones; idx++) {
        ZoneState s = zs->zones[idx].state;
        bool applies;

        switch (action) {
        case ZONE_ACTION_CLOSE:
            applies = holds_open(s);
            break;
        case ZONE_ACTION_FINISH:
            applies = holds_active(s);
            break;
        case ZONE_ACTION_RESET:
            applies = holds_active(s) || s == ZONE_FULL;
            break;
        default:    /* ZONE_ACTION_OFFLINE */
            applies = s == ZONE_READ_ONLY;
            break;
        }
        if (applies) {
            manage_one(zs, action, idx, NULL);
        }
    }
    return ZONE_OK;
}

void zone_fail(ZoneSet *zs, uint64_t zone, ZoneState state)
{
    g_return_if_fail(zone < zs->cfg.nr_zones);
    g_return_if_fail(state == ZONE_READ_ONLY || state == ZONE_OFFLINE);

    /* nothing leaves Offline (2.1.1.3.7) */
    if (zs->zones[zone].state != ZONE_OFFLINE) {
        set_state(zs, zone, state);
    }
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

uint64_t zone_report_nth(const ZoneSet *zs, uint64_t slba, ZoneReportFilter filter,
                         uint64_t k)
{
    for (uint64_t i = zone_index(zs, slba); i < zs->cfg.nr_zones; i++) {
        if (matches(zs->zones[i].state, filter) && k-- == 0) {
            return i;
        }
    }
    return UINT64_MAX;
}

/* ---- persistence ---- */

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;

    for (int i = 0; i < bytes; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

size_t zone_state_size(const ZoneSet *zs)
{
    return ZONE_STATE_HEADER + zs->cfg.nr_zones * (ZONE_STATE_ENTRY + zs->cfg.zde_bytes);
}

void zone_state_save(const ZoneSet *zs, uint8_t *buf)
{
    uint8_t *p = buf + ZONE_STATE_HEADER;

    memset(buf, 0, ZONE_STATE_HEADER);
    put_le(buf, ZONE_STATE_MAGIC, 4);
    put_le(buf + 4, ZONE_STATE_VERSION, 4);
    put_le(buf + 8, zs->cfg.nr_zones, 8);
    put_le(buf + 16, zs->cfg.zone_size, 8);
    put_le(buf + 24, zs->cfg.zone_cap, 8);
    put_le(buf + 32, zs->cfg.zde_bytes, 4);
    for (uint64_t i = 0; i < zs->cfg.nr_zones; i++, p += ZONE_STATE_ENTRY) {
        memset(p, 0, ZONE_STATE_ENTRY);
        p[0] = (uint8_t)zs->zones[i].state;
        p[1] = zs->zones[i].attrs;
        put_le(p + 8, zs->zones[i].wp, 8);
    }
    if (zs->cfg.zde_bytes) {
        memcpy(p, zs->zde, zs->cfg.nr_zones * zs->cfg.zde_bytes);
    }
}

/*
 * The state a saved zone comes back in, or 0 if the entry is inconsistent. A power cycle
 * closes what was open, and by 2.1.1.3 a zone whose write pointer is still at ZSLBA with
 * no descriptor extension starts Empty rather than Closed.
 */
static ZoneState loaded_state(const ZoneSet *zs, const Zone *z, ZoneState s, uint8_t attrs,
                              uint64_t wp)
{
    const ZoneState bad = (ZoneState)0;

    if (attrs & ~ZONE_ATTR_ZDEV) {
        return bad;
    }
    switch (s) {
    case ZONE_EMPTY:
        return wp == z->zslba && !attrs ? ZONE_EMPTY : bad;
    case ZONE_IMPLICIT_OPEN:
    case ZONE_EXPLICIT_OPEN:
    case ZONE_CLOSED:
        if (wp < z->zslba || wp >= zone_end_cap(zs, z)) {
            return bad;
        }
        return wp == z->zslba && !attrs ? ZONE_EMPTY : ZONE_CLOSED;
    case ZONE_FULL:
    case ZONE_READ_ONLY:
    case ZONE_OFFLINE:
        return wp < z->zslba || wp > zone_end_cap(zs, z) ? bad : s;
    }
    return bad;
}

bool zone_state_load(ZoneSet *zs, const uint8_t *buf, size_t len)
{
    uint64_t n = zs->cfg.nr_zones, nr_closed = 0;
    const uint8_t *p = buf + ZONE_STATE_HEADER;
    ZoneState *states;

    if (len != zone_state_size(zs) ||
        get_le(buf, 4) != ZONE_STATE_MAGIC ||
        get_le(buf + 4, 4) != ZONE_STATE_VERSION ||
        get_le(buf + 8, 8) != n ||
        get_le(buf + 16, 8) != zs->cfg.zone_size ||
        get_le(buf + 24, 8) != zs->cfg.zone_cap ||
        get_le(buf + 32, 4) != zs->cfg.zde_bytes) {
        return false;
    }

    /* validate everything before touching zs */
    states = g_new(ZoneState, n);
    for (uint64_t i = 0; i < n; i++, p += ZONE_STATE_ENTRY) {
        states[i] = loaded_state(zs, &zs->zones[i], p[0], p[1], get_le(p + 8, 8));
        if (!states[i]) {
            g_free(states);
            return false;
        }
        nr_closed += states[i] == ZONE_CLOSED;
    }
    /* a smaller zns_max_active than when saved cannot hold these zones */
    if (zs->cfg.max_active && nr_closed > zs->cfg.max_active) {
        g_free(states);
        return false;
    }

    p = buf + ZONE_STATE_HEADER;
    for (uint64_t i = 0; i < n; i++, p += ZONE_STATE_ENTRY) {
        Zone *z = &zs->zones[i];
        z->state = states[i];
        z->attrs = p[1];
        z->wp = get_le(p + 8, 8);
        z->open_seq = 0;
    }
    if (zs->cfg.zde_bytes) {
        memcpy(zs->zde, p, n * zs->cfg.zde_bytes);
    }
    zs->nr_open = 0;
    zs->nr_active = nr_closed;
    g_free(states);
    return true;
}
