/*
 * The device's namespaces: the properties that say how many, of which kinds and how big
 * (their list, expanded by the QEMU device and by femu-sim), and the sizes they give.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_MEDIA_LAYOUT_H
#define FEMU_MEDIA_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#define FEMU_MAX_NAMESPACES 64
#define FEMU_MAX_DEVSZ_MB (64u * 1024 * 1024)   /* 64 TiB */
/*
 * The backend holds the namespaces' data, then each namespace's metadata (its kind's
 * saved state) in NSID order, then, when the backend has room, the write journal.
 */
#define FEMU_WRITE_JOURNAL_BYTES (64 + 4096)

/*
 * P(struct, type, name, field, default), as FEMU_FLASH_PROPS. lba_index is the device's
 * own (its default depends on the kind).
 */
#define FEMU_LAYOUT_PROPS(P, S)                                         \
    P(S, U32, "femu_mode", femu_mode, 2)    /* 2: nossd, as in FEMU */  \
    P(S, U32, "devsz_mb", devsz_mb, 0)                                  \
    P(S, U32, "namespaces", num_namespaces, 1)                          \
    P(S, STR, "ns_types", ns_types, NULL)                               \
    P(S, STR, "ns_sizes_mb", ns_sizes_mb, NULL)                         \
    P(S, U8, "mdts", mdts, 7)                                           \
    P(S, U8, "vwc", vwc, 1)

/*
 * The bytes of each of count namespaces: ns_sizes_mb (MiB each, ':' or ',' between them,
 * adding up to devsz_mb when that is given) or, when NULL, total split evenly in whole
 * MiB. False and *err (g_free it) naming the property otherwise.
 */
bool femu_layout_ns_sizes(const char *ns_sizes_mb, uint32_t count, uint32_t devsz_mb,
                          uint64_t total, uint64_t *bytes, char **err);

/*
 * A namespace's kind sizes it (FemuNsKind.size_ns): *bytes may be rounded down when
 * derived (not given by the user); *meta_bytes is what the kind keeps after the data.
 */
typedef bool FemuLayoutSizeNsFn(void *opaque, uint32_t nsid, uint64_t *bytes, bool derived,
                                uint64_t *meta_bytes, char **err);

/* What the namespaces take in the backend. */
typedef struct FemuLayoutSizes {
    uint64_t bytes[FEMU_MAX_NAMESPACES];    /* each namespace's data */
    uint64_t meta[FEMU_MAX_NAMESPACES];     /* each one's metadata, after all the data */
    uint64_t data_bytes, meta_bytes;        /* in all */
} FemuLayoutSizes;

/*
 * Every namespace's bytes (femu_layout_ns_sizes), then each sized by its kind, in NSID
 * order, once all are set (a kind may look at the others' in s->bytes).
 */
bool femu_layout_size_namespaces(const char *ns_sizes_mb, uint32_t count, uint32_t devsz_mb,
                                 uint64_t total, bool derived, FemuLayoutSizeNsFn *size_ns,
                                 void *opaque, FemuLayoutSizes *s, char **err);

/*
 * The models of a device whose kinds mix, one per namespace on a shared flash, except that
 * a kind whose namespaces share one model (one_media) has one for all of them, made with
 * its first namespace and sized for all, in which they follow one another in NSID order.
 */
typedef struct FemuMediaPlan {
    uint32_t owner[FEMU_MAX_NAMESPACES];        /* the namespace whose model times it */
    uint64_t model_bytes[FEMU_MAX_NAMESPACES];  /* an owner's: the bytes its model times */
    uint64_t media_base[FEMU_MAX_NAMESPACES];   /* the backend offset of its model's 0 */
} FemuMediaPlan;

/* kinds: any pointer that is the same for namespaces of one kind. */
void femu_layout_media_plan(uint32_t count, const void *const *kinds, const bool *one_media,
                            const uint64_t *bytes, FemuMediaPlan *plan);

#endif
