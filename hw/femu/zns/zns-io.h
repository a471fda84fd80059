/*
 * The zoned command set's part that decides state and timing, for the QEMU device (zns.c)
 * and femu-sim alike, so that the two cannot drift: the statuses, and which media requests
 * a write, a zone action or a zone's change of state makes, in which order. Moving data
 * (guest memory, the backend) stays with the caller, told through optional hooks.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_ZNS_IO_H
#define FEMU_ZNS_IO_H

#include "../media/media.h"
#include "../plp/plp.h"
#include "zone.h"

/* A zoned namespace as its commands see it. */
typedef struct ZnsIo {
    ZoneSet *zones;
    uint32_t nsid;
    uint64_t base;              /* where LBA 0 is in the device's storage (media offsets) */
    uint8_t lba_shift;
    bool buffered;              /* the model holds written data (plp): writes carry theirs */
    PlpMode plp_mode;
    const uint8_t *plp_zones;   /* durable zones (plp_zones_parse), or NULL */
    /* a media request, offsets in the device's storage -> its completion time */
    uint64_t (*submit)(void *opaque, FemuMediaReq *r);
    /* optional: every zone state change, as it happens */
    void (*changed)(void *opaque, uint64_t zone, ZoneState from, ZoneState to);
    /* optional: a write's data is in place and its zone is about to move */
    void (*placed)(void *opaque);
    /* optional: a reset zone's data is about to be dropped (r: its ZONE_RESET) */
    void (*dropping)(void *opaque, const FemuMediaReq *r);
    void *opaque;
} ZnsIo;

/* One command's zone changes: between zns_cmd_begin and zns_cmd_end. */
typedef struct ZnsCmd {
    ZnsIo *io;
    uint64_t now;
    uint64_t deadline;          /* the latest completion of its media requests, >= now */
    bool power_cycle;           /* a controller reset: zones going Empty were never written */
    uint64_t *resets;           /* zones it reset, dropped once their records are saved */
    uint32_t nr_resets, cap_resets;
} ZnsCmd;

/* A zone status as the NVMe status the device returns (ZONE_OK: 0). */
uint16_t zns_io_status(ZoneStatus s);

/*
 * From now on until zns_cmd_end, zone state changes make their media requests: to Full,
 * or Closed from open, drains the zone's buffer up to its write pointer; to Empty (a
 * reset) drops the zone's data when the command ends. power_cycle: nothing is dropped.
 */
void zns_cmd_begin(ZnsCmd *c, ZnsIo *io, uint64_t now, bool power_cycle);
/* Ends the command: its reset zones are dropped; when its media requests complete. */
uint64_t zns_cmd_end(ZnsCmd *c);

/* A request of op on a whole zone. */
FemuMediaReq zns_io_zone_req(const ZnsIo *io, FemuMediaOp op, uint64_t zone, uint64_t now);

/* May the write of nlb LBAs at slba (append: to the zone there) go? *lba: where. */
uint16_t zns_io_write_check(const ZnsIo *io, uint64_t slba, uint64_t nlb, bool append,
                            uint64_t *lba);
/*
 * The write zns_io_write_check allowed, its data in place (buffered: data is its bytes,
 * NULL for zeroes; flagged: the host asked for protection, fua: it must reach flash):
 * its media request and the zone's move, in the order the model needs them.
 */
void zns_io_write(ZnsCmd *c, uint64_t lba, uint64_t nlb, bool zeroes, const void *data,
                  bool flagged, bool fua);
/* May the read of nlb LBAs at slba go? */
uint16_t zns_io_read_check(const ZnsIo *io, uint64_t slba, uint64_t nlb);
/* Deallocation does nothing on zones (a reset frees space), but offline zones refuse it. */
uint16_t zns_io_dsm_check(const ZnsIo *io, uint64_t slba, uint64_t nlb);
/*
 * Read-ahead: how many bytes from `offset` (in the device's storage) may be read, at most
 * max: written data up to the write pointers (0 outside the namespace).
 */
uint64_t zns_io_readable(const ZnsIo *io, uint64_t offset, uint64_t max);
/*
 * Power is back: each zone's write pointer goes back to where its durable data ends in
 * plp, a durable end past the write pointer stopping at it (nothing above was
 * acknowledged). adopt: plp's store is new, what lies below each write pointer is
 * durable. first_zone: the namespace's first zone in plp. The zones that changed.
 */
uint64_t zns_io_plp_rollback(ZnsIo *io, PlpBuffer *plp, uint64_t first_zone, bool adopt);
/* The namespace's statistics (zones_open, zones_active). */
void zns_io_stats(const ZnsIo *io, FemuMediaStatFn *emit, void *opaque);

#endif
