/*
 * The Open-Channel SSD 2.0 chunk model of one namespace: the geometry and its LBA format,
 * chunk states and write pointers, the rules every read, write and reset must follow, and
 * the saved form of that state. It decides validity and state only; where data sits on
 * flash and how long it takes is ocssd-flash's business. QEMU-free.
 *
 * The LBA space is dense: PUs per group, chunks per PU and sectors per chunk are powers of
 * two, so LBA = ((grp * num_pu + pu) * num_chk + chk) * clba + sector, which is also what
 * the geometry's bit-field LBA format says. Chunk index = LBA / clba.
 *
 * Statuses are whole NVMe status values (type << 8 | code), without DNR: the device adds it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_OCSSD_CHUNK_H
#define FEMU_OCSSD_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OC_MAX_VECTOR 64            /* LBAs in one vector command */
#define OC_DESCRIPTOR_BYTES 32      /* one Chunk Information log entry */
#define OC_MCCAP_COPY 0x1           /* Vector Chunk Copy supported */
#define OC_MCCAP_MULTI_RESET 0x2    /* a Free chunk may be reset again */

/* Chunk states, as the descriptor's CS bits encode them. */
typedef enum OcChunkState {
    OC_CHUNK_FREE = 0x1,
    OC_CHUNK_CLOSED = 0x2,
    OC_CHUNK_OPEN = 0x4,
    OC_CHUNK_OFFLINE = 0x8,
} OcChunkState;

typedef enum OcStatus {
    OC_OK = 0,
    OC_INVALID_FIELD = 0x002,       /* generic: Invalid Field in Command */
    OC_SEQUENCE_ERROR = 0x00c,      /* generic: Command Sequence Error (open chunk limit) */
    OC_LBA_RANGE = 0x080,           /* generic: LBA Out of Range */
    OC_UNWRITTEN = 0x287,           /* media: Deallocated or Unwritten Logical Block */
    OC_OFFLINE_CHUNK = 0x2c0,
    OC_INVALID_RESET = 0x2c1,
    OC_WRITE_NEXT_UNIT = 0x2f0,
    OC_CHUNK_EARLY_CLOSE = 0x2f1,
    OC_OUT_OF_ORDER_WRITE = 0x2f2,
} OcStatus;

typedef struct OcGeometry {
    uint32_t num_grp;       /* groups (channels) */
    uint32_t num_pu;        /* parallel units (chips) per group, a power of two */
    uint32_t num_chk;       /* chunks per PU, a power of two */
    uint32_t clba;          /* sectors per chunk, a power of two */
    uint32_t ws_min;        /* writes are multiples of this many sectors; divides clba */
    uint32_t ws_opt;        /* a multiple of ws_min */
    uint32_t mw_cunits;     /* sectors a PU's write cache holds, a multiple of ws_min */
    uint32_t maxoc;         /* open chunks in the namespace; 0: no limit */
    uint32_t maxocpu;       /* open chunks per PU; 0: no limit */
    uint32_t mccap;         /* OC_MCCAP_* */
    uint32_t sector_bytes;  /* kept in the saved state */
    /* derived by oc_geometry_check */
    uint8_t grp_bits, pu_bits, chk_bits, sec_bits;
    uint64_t nr_chunks;
    uint64_t nr_sectors;
} OcGeometry;

/* Where an LBA is. */
typedef struct OcAddr {
    uint32_t grp, pu, chk, sec;
} OcAddr;

typedef struct OcChunk {
    uint64_t wp;            /* sectors written (the write pointer, relative to the chunk) */
    uint64_t seq;           /* sequence number of its newest saved record */
    uint32_t erases;        /* resets so far (the wear) */
    uint8_t state;          /* an OcChunkState */
} OcChunk;

typedef struct OcChunkSet {
    OcGeometry geo;
    OcChunk *chunks;
    uint32_t nr_open;
    uint32_t *open_per_pu;  /* index grp * num_pu + pu */
    /* the saved state (oc_store_open), NULL when not saved */
    uint8_t *store;
    void *hasher;
    uint64_t records_written;
    uint64_t records_recovered;
} OcChunkSet;

/*
 * Checks g and fills its derived fields; *err names the property (l* / oc_* names) and
 * the allowed values (g_free it).
 */
bool oc_geometry_check(OcGeometry *g, char **err);

/* LBA <-> address; oc_lba_decode is false for an LBA outside the namespace. */
bool oc_lba_decode(const OcGeometry *g, uint64_t lba, OcAddr *a);
uint64_t oc_lba_encode(const OcGeometry *g, const OcAddr *a);
static inline uint64_t oc_chunk_of(const OcGeometry *g, uint64_t lba)
{
    return lba >> g->sec_bits;
}
static inline uint32_t oc_pu_of(const OcGeometry *g, uint64_t chunk)
{
    return (uint32_t)(chunk >> g->chk_bits);       /* grp * num_pu + pu */
}

OcChunkSet *oc_chunk_set_new(const OcGeometry *g, char **err);
void oc_chunk_set_free(OcChunkSet *cs);

/*
 * A run: nlb consecutive sectors from lba inside one chunk (a vector command's list is
 * split into runs by oc_vector_runs). Writes in two steps, so that nothing changes before
 * the data is in place: oc_write_check changes nothing, oc_write_commit moves the write
 * pointer (Free -> Open, Open -> Closed when the chunk is full).
 */
OcStatus oc_write_check(const OcChunkSet *cs, uint64_t lba, uint64_t nlb);
void oc_write_commit(OcChunkSet *cs, uint64_t lba, uint64_t nlb);
/*
 * The check of a standard Write of [lba, lba + nlb), which may cross chunks: each chunk
 * part as oc_write_check checks it, in order, with the open-chunk limits as the parts
 * before it leave them (a part that runs on into the next chunk closes its own). Its
 * commit is oc_write_commit of each part in the same order.
 */
OcStatus oc_write_check_span(const OcChunkSet *cs, uint64_t lba, uint64_t nlb);
/*
 * A read run: *readable is how many of its sectors are below the write pointer (the rest
 * read as zeroes, or fail with OC_UNWRITTEN when dulbe is set).
 */
OcStatus oc_read_check(const OcChunkSet *cs, uint64_t lba, uint64_t nlb, bool dulbe,
                       uint64_t *readable);
/*
 * Reset of the chunk holding lba (any sector of it): Open or Closed (or Free, with
 * MULTI_RESET) -> Free; an Open chunk's slot under MAXOC/MAXOCPU is released.
 */
OcStatus oc_reset(OcChunkSet *cs, uint64_t lba);

/*
 * Media failures, as a device would report them (injected by the host for tests):
 * a write run that fails and leaves its unit behind (the write pointer moves past it,
 * the chunk stays open), a write that closes the chunk early, a chunk that goes offline.
 */
void oc_fail_write_next_unit(OcChunkSet *cs, uint64_t lba, uint64_t nlb);
void oc_fail_early_close(OcChunkSet *cs, uint64_t chunk);
void oc_fail_offline(OcChunkSet *cs, uint64_t chunk);

/* The chunk's Chunk Information log descriptor (OC_DESCRIPTOR_BYTES, little endian). */
void oc_chunk_descriptor(const OcChunkSet *cs, uint64_t chunk, uint8_t *out);

/*
 * Splits a vector command's list of n LBAs into runs: run r covers list entries
 * [start[r], start[r] + len[r]), which are consecutive sectors of one chunk. Returns the
 * number of runs. Entries outside the namespace get a run of their own.
 */
uint32_t oc_vector_runs(const OcGeometry *g, const uint64_t *lbas, uint32_t n,
                        uint32_t *start, uint32_t *len);

/*
 * The saved state: a header and two checksummed records per chunk (state, write pointer,
 * erases, sequence number); a change writes the slot that does not hold the newest record,
 * so a torn update falls back to the previous one. An all-zero area is fresh.
 */
typedef enum OcStoreResult {
    OC_STORE_ERROR = -1,    /* *err says why, naming the setting (g_free it) */
    OC_STORE_FRESH,         /* all zeroes: every chunk Free; oc_store_format it */
    OC_STORE_LOADED,
} OcStoreResult;

uint64_t oc_store_size(const OcGeometry *g);
OcStoreResult oc_store_open(OcChunkSet *cs, uint8_t *store, char **err);
void oc_store_format(OcChunkSet *cs);

#endif
