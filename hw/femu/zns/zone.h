/*
 * The NVMe Zoned Namespace (ZNS 1.1) zone state machine of one namespace: zone states,
 * write pointers, open/active resource accounting, implicit open and close, and every
 * Zone Management Send action, and the saved form of that state (one record per zone
 * change). It decides validity and state only; data placement and timing live
 * elsewhere. QEMU-free.
 *
 * Statuses are the ZNS command-specific status codes (status code type 1), without the
 * type: the device adds it (0x100 | code). ZONE_OK is success.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_ZNS_ZONE_H
#define FEMU_ZNS_ZONE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Zone states, as the Zone Descriptor's ZS field encodes them. */
typedef enum ZoneState {
    ZONE_EMPTY = 0x1,
    ZONE_IMPLICIT_OPEN = 0x2,
    ZONE_EXPLICIT_OPEN = 0x3,
    ZONE_CLOSED = 0x4,
    ZONE_READ_ONLY = 0xd,
    ZONE_FULL = 0xe,
    ZONE_OFFLINE = 0xf,
} ZoneState;

/* Results. Generic ones are mapped by the device (Invalid Field, LBA Out of Range). */
typedef enum ZoneStatus {
    ZONE_OK = 0,
    ZONE_INVALID_FIELD = 0x1002,        /* generic: Invalid Field in Command */
    ZONE_LBA_RANGE = 0x1080,            /* generic: LBA Out of Range */
    ZONE_BOUNDARY_ERROR = 0xb8,
    ZONE_IS_FULL = 0xb9,
    ZONE_IS_READ_ONLY = 0xba,
    ZONE_IS_OFFLINE = 0xbb,
    ZONE_INVALID_WRITE = 0xbc,
    ZONE_TOO_MANY_ACTIVE = 0xbd,
    ZONE_TOO_MANY_OPEN = 0xbe,
    ZONE_INVALID_TRANSITION = 0xbf,
} ZoneStatus;

/* Zone Management Send actions (ZSA). */
typedef enum ZoneAction {
    ZONE_ACTION_CLOSE = 0x1,
    ZONE_ACTION_FINISH = 0x2,
    ZONE_ACTION_OPEN = 0x3,
    ZONE_ACTION_RESET = 0x4,
    ZONE_ACTION_OFFLINE = 0x5,
    ZONE_ACTION_SET_ZDE = 0x10,
} ZoneAction;

/* Zone Management Receive: report filter (ZRASF). */
typedef enum ZoneReportFilter {
    ZONE_REPORT_ALL = 0x0,
    ZONE_REPORT_EMPTY = 0x1,
    ZONE_REPORT_IMPLICIT_OPEN = 0x2,
    ZONE_REPORT_EXPLICIT_OPEN = 0x3,
    ZONE_REPORT_CLOSED = 0x4,
    ZONE_REPORT_FULL = 0x5,
    ZONE_REPORT_READ_ONLY = 0x6,
    ZONE_REPORT_OFFLINE = 0x7,
} ZoneReportFilter;

#define ZONE_ATTR_ZDEV 0x80     /* zone descriptor extension valid */
#define ZONE_UNLIMITED 0        /* max_open / max_active: no limit */
#define ZONE_NONE UINT32_MAX    /* no zone, in the zone lists */
/* Host memory the zone state of one namespace may take (see zone_state_bytes). */
#define ZONE_STATE_MAX_BYTES (UINT64_C(4) << 30)

/*
 * Zones a power cycle changes, each in a list (oldest first) so that it takes O(them):
 * implicitly opened (also the implicit-close order), explicitly opened, and Closed with
 * nothing written and no extension (they come back Empty).
 */
enum { ZONE_LIST_NONE, ZONE_LIST_IMPLICIT, ZONE_LIST_EXPLICIT, ZONE_LIST_BLANK_CLOSED,
       ZONE_LISTS };

typedef struct Zone {
    uint64_t zslba;         /* first LBA */
    uint64_t wp;            /* write pointer (LBA) */
    uint64_t seq;           /* sequence number of its newest saved record */
    uint32_t prev, next;    /* its list, ZONE_NONE at the ends */
    uint8_t state;          /* a ZoneState */
    uint8_t attrs;
    uint8_t list;           /* ZONE_LIST_* */
} Zone;

typedef struct ZoneConfig {
    uint64_t nr_zones;
    uint64_t zone_size;     /* LBAs, a power of two */
    uint64_t zone_cap;      /* LBAs, 1..zone_size */
    uint32_t max_open;      /* 0: unlimited; else 1..nr_zones */
    uint32_t max_active;    /* 0: unlimited; else max_open..nr_zones */
    uint32_t zde_bytes;     /* zone descriptor extension size, a multiple of 64 (0: none) */
    bool cross_zone_read;   /* RAZB: reads may cross zone boundaries */
    uint32_t lba_bytes;     /* LBA size, kept in the saved state (0: not known) */
} ZoneConfig;

typedef void ZoneEventFn(void *opaque, uint64_t zone, ZoneState from, ZoneState to);

typedef struct ZoneSet {
    ZoneConfig cfg;
    Zone *zones;
    uint8_t *zde;           /* nr_zones * zde_bytes; in the saved state when there is one */
    uint32_t nr_open;       /* implicitly + explicitly opened */
    uint32_t nr_active;     /* opened + closed */
    uint32_t lists[ZONE_LISTS][2];  /* head, tail */
    /* told about every state change, e.g. to erase on reset or flush on finish; may be NULL */
    ZoneEventFn *on_change;
    void *opaque;
    /* the saved state (zone_store_open), NULL when not saved */
    uint8_t *store;
    void *hasher;           /* checksums the records (a GChecksum) */
    uint64_t records_written;   /* zone records saved so far */
    uint64_t records_recovered; /* zones with a damaged record at open (the other one used) */
} ZoneSet;

/* Checks a configuration; *err names the field and allowed range (g_free it). */
bool zone_config_check(const ZoneConfig *c, char **err);
/* Host memory of the zone state: the zones, their saved records and extensions. */
uint64_t zone_state_bytes(const ZoneConfig *c);
ZoneSet *zone_set_new(const ZoneConfig *c, char **err);
void zone_set_free(ZoneSet *zs);

static inline uint64_t zone_index(const ZoneSet *zs, uint64_t lba)
{
    return lba / zs->cfg.zone_size;
}

/*
 * A write (or, with append, a Zone Append whose slba must be the zone's start) of nlb LBAs,
 * in two steps so that nothing changes before the data is in place: zone_write_check says
 * whether it may go and where (*lba), changing nothing; zone_write_commit then advances
 * the write pointer (implicit open, implicit close of the least recently implicitly opened
 * zone when the open limit is reached, transition to Full at zone capacity). Nothing else
 * may change the set in between. zone_write does both.
 */
ZoneStatus zone_write_check(const ZoneSet *zs, uint64_t slba, uint64_t nlb, bool append,
                            uint64_t *lba);
void zone_write_commit(ZoneSet *zs, uint64_t lba, uint64_t nlb);
ZoneStatus zone_write(ZoneSet *zs, uint64_t slba, uint64_t nlb, bool append, uint64_t *lba);
/* A read of nlb LBAs: offline zones fail; crossing a zone boundary fails unless allowed. */
ZoneStatus zone_read_check(const ZoneSet *zs, uint64_t slba, uint64_t nlb);
/*
 * How many LBAs from lba on hold written data, at most max: up to the zone's write
 * pointer, and on into the next zone only if the namespace reads across zone boundaries
 * and the data reaches the zone's end. 0 for an offline zone. For read-ahead.
 */
uint64_t zone_readable(const ZoneSet *zs, uint64_t lba, uint64_t max);
/*
 * One Zone Management Send action on the zone starting at slba, or on every zone the
 * action applies to when select_all is set (slba ignored). zde is the descriptor extension
 * for ZONE_ACTION_SET_ZDE (zde_bytes long).
 */
ZoneStatus zone_manage(ZoneSet *zs, ZoneAction action, uint64_t slba, bool select_all,
                       const uint8_t *zde);
/*
 * Part of a Select All action other than Open and Set ZDE, for a device that spreads it
 * over time: the zones from *next on, while *budget lasts (a zone looked at costs 1, one
 * the action applies to `cost`); *next is where to go on from (nr_zones: done).
 */
void zone_manage_some(ZoneSet *zs, ZoneAction action, uint64_t *next, uint64_t *budget,
                      uint64_t cost);
/* Makes a zone Read Only or Offline (a media failure); used by tests and fault injection. */
void zone_fail(ZoneSet *zs, uint64_t zone, ZoneState state);
/*
 * What a power cycle (or a controller reset) does (2.1.1.3): open zones become Closed, and
 * active zones with nothing written and no extension Empty. Through the transitions
 * (on_change sees them); O(zones it changes).
 */
void zone_power_cycle(ZoneSet *zs);
/*
 * Power-loss recovery: the zone's data is durable only below wp (an LBA under its write
 * pointer), so the write pointer goes back there and the zone becomes Empty (nothing
 * durable, no extension) or Closed. A Full zone stays Full when that would take an active
 * resource there is none of. Read Only, Offline and Empty zones are left alone. Saved; no
 * on_change. Returns whether the zone changed.
 */
bool zone_rollback(ZoneSet *zs, uint64_t zone, uint64_t wp);
/* The zone's descriptor extension, or NULL when it has none (it reads as zeroes). */
const uint8_t *zone_zde(const ZoneSet *zs, uint64_t zone);

/*
 * Zone Management Receive: how many zones from the zone holding slba onward match filter
 * (for the report header), and the first zone from index `from` onward that matches, or
 * UINT64_MAX. A report walks the zones once.
 */
uint64_t zone_report_count(const ZoneSet *zs, uint64_t slba, ZoneReportFilter filter);
uint64_t zone_report_next(const ZoneSet *zs, uint64_t from, ZoneReportFilter filter);

/*
 * The saved state: a header, two records per zone, the descriptor extensions. A record
 * (state, attributes, write pointer, a sequence number and a checksum) is written on every
 * change of its zone, into the slot that does not hold the newest one, so a torn update
 * leaves the previous record; the newest valid record wins. An all-zero area is fresh.
 */
typedef enum ZoneStoreResult {
    ZONE_STORE_ERROR = -1,  /* *err says why, naming the setting (g_free it) */
    ZONE_STORE_FRESH,       /* all zeroes: every zone Empty; zone_store_format it */
    ZONE_STORE_LOADED,      /* the zones are as saved, after a power cycle */
} ZoneStoreResult;

uint64_t zone_store_size(const ZoneConfig *c);
/*
 * Attaches zs (as created, every zone Empty) to its saved state in store
 * (zone_store_size bytes): loads it, and from then on saves every change there. zs is
 * unchanged and not attached on an error.
 */
ZoneStoreResult zone_store_open(ZoneSet *zs, uint8_t *store, char **err);
/* Writes the header of a fresh store. */
void zone_store_format(ZoneSet *zs);

#endif
