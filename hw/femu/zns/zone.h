/*
 * The NVMe Zoned Namespace (ZNS 1.1) zone state machine of one namespace: zone states,
 * write pointers, open/active resource accounting, implicit open and close, and every
 * Zone Management Send action. It decides validity and state only; data placement and
 * timing live elsewhere. QEMU-free.
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

typedef struct Zone {
    uint64_t zslba;         /* first LBA */
    uint64_t wp;            /* write pointer (LBA) */
    ZoneState state;
    uint8_t attrs;
    uint64_t open_seq;      /* when it was last implicitly opened (LRU for implicit close) */
} Zone;

typedef struct ZoneConfig {
    uint64_t nr_zones;
    uint64_t zone_size;     /* LBAs, a power of two */
    uint64_t zone_cap;      /* LBAs, 1..zone_size */
    uint32_t max_open;      /* 0: unlimited; else 1..nr_zones */
    uint32_t max_active;    /* 0: unlimited; else max_open..nr_zones */
    uint32_t zde_bytes;     /* zone descriptor extension size, a multiple of 64 (0: none) */
    bool cross_zone_read;   /* RAZB: reads may cross zone boundaries */
} ZoneConfig;

typedef void ZoneEventFn(void *opaque, uint64_t zone, ZoneState from, ZoneState to);

typedef struct ZoneSet {
    ZoneConfig cfg;
    Zone *zones;
    uint8_t *zde;           /* nr_zones * zde_bytes */
    uint32_t nr_open;       /* implicitly + explicitly opened */
    uint32_t nr_active;     /* opened + closed */
    uint64_t next_open_seq;
    /* told about every state change, e.g. to erase on reset or flush on finish; may be NULL */
    ZoneEventFn *on_change;
    void *opaque;
} ZoneSet;

/* Checks a configuration; *err names the field and allowed range (g_free it). */
bool zone_config_check(const ZoneConfig *c, char **err);
ZoneSet *zone_set_new(const ZoneConfig *c, char **err);
void zone_set_free(ZoneSet *zs);

static inline uint64_t zone_index(const ZoneSet *zs, uint64_t lba)
{
    return lba / zs->cfg.zone_size;
}

/*
 * A write (or, with append, a Zone Append whose slba must be the zone's start) of nlb LBAs.
 * On success the write pointer has advanced (implicit open, implicit close of the least
 * recently implicitly opened zone when the open limit is reached, transition to Full at
 * zone capacity) and *lba is where the data goes.
 */
ZoneStatus zone_write(ZoneSet *zs, uint64_t slba, uint64_t nlb, bool append, uint64_t *lba);
/* A read of nlb LBAs: offline zones fail; crossing a zone boundary fails unless allowed. */
ZoneStatus zone_read_check(const ZoneSet *zs, uint64_t slba, uint64_t nlb);
/*
 * One Zone Management Send action on the zone starting at slba, or on every zone the
 * action applies to when select_all is set (slba ignored). zde is the descriptor extension
 * for ZONE_ACTION_SET_ZDE (zde_bytes long).
 */
ZoneStatus zone_manage(ZoneSet *zs, ZoneAction action, uint64_t slba, bool select_all,
                       const uint8_t *zde);
/* Makes a zone Read Only or Offline (a media failure); used by tests and fault injection. */
void zone_fail(ZoneSet *zs, uint64_t zone, ZoneState state);

/*
 * Zone Management Receive: how many zones from the zone holding slba onward match filter
 * (for the report header), and the index of the k-th of them (k from 0), or UINT64_MAX.
 */
uint64_t zone_report_count(const ZoneSet *zs, uint64_t slba, ZoneReportFilter filter);
uint64_t zone_report_nth(const ZoneSet *zs, uint64_t slba, ZoneReportFilter filter,
                         uint64_t k);

/* Persistence: the zone states, write pointers and extensions as bytes, and back. */
size_t zone_state_size(const ZoneSet *zs);
void zone_state_save(const ZoneSet *zs, uint8_t *buf);
/* Restores from buf; false (and zs unchanged) if buf does not match this configuration. */
bool zone_state_load(ZoneSet *zs, const uint8_t *buf, size_t len);

#endif
