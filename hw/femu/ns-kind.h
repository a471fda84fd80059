/*
 * Namespace kinds. Each kind of namespace (nossd, blackbox, zns, ...) lives in a folder of
 * its own and plugs into the controller through one FemuNsKind, registered when QEMU starts.
 * The controller core reaches a kind only through this table: adding a kind is adding a
 * folder (and its name in hw/femu/meson.build), not editing the core.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_NS_KIND_H
#define HW_FEMU_NS_KIND_H

#include "hw/qdev-properties.h"
#include "block/nvme.h"
#include "media/media.h"
#include "nand/nand.h"

typedef struct FemuCtrl FemuCtrl;
typedef struct FemuNamespace FemuNamespace;
typedef struct FemuRequest FemuRequest;

typedef struct FemuNsKind {
    const char *name;           /* its word in ns_types= and the statistics */
    uint32_t femu_mode;         /* its femu_mode= number, as FEMU numbers them */
    const char *model_name;     /* Identify Controller MN when every namespace is of this kind */
    uint8_t csi;                /* the I/O command set of its namespaces */

    /* -device properties; offsets are relative to the kind's parameters (params_size bytes) */
    const Property *props;
    size_t nr_props;
    size_t params_size;
    /* Optional: { property, what -device femu,help says of it } pairs, up to { NULL } */
    const char *const (*prop_help)[2];

    /* Optional: checks its properties; called when a namespace of this kind exists. */
    bool (*check_props)(FemuCtrl *n, Error **errp);
    /*
     * Optional: sizes namespace nsid. *bytes may be rounded down when it was derived (not
     * given by the user); *meta_bytes is what the kind keeps after the device's data.
     */
    bool (*size_ns)(FemuCtrl *n, uint32_t nsid, uint64_t *bytes, bool derived,
                    uint64_t *meta_bytes, Error **errp);
    /* Optional: blocks per plane it needs of flash shared with other kinds (0 and errp: no). */
    uint32_t (*flash_blocks)(FemuCtrl *n, uint64_t bytes, Error **errp);
    /* The timing model of `bytes`: on `shared` flash from first_block, or its own (NULL). */
    FemuMedia *(*media_new)(FemuCtrl *n, uint64_t bytes, NandModel *shared,
                            uint32_t first_block, Error **errp);
    /* Optional: per-namespace state in ns->priv; meta is its metadata in the backend. */
    bool (*ns_init)(FemuCtrl *n, FemuNamespace *ns, uint8_t *meta, Error **errp);
    void (*ns_free)(FemuNamespace *ns);
    /* Every I/O command to one of its namespaces (a Flush of all namespaces excepted). */
    uint16_t (*io)(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd,
                   uint64_t now, uint64_t *deadline);
    /* Optional: Identify data of its command set, CNS 05h (a namespace) and 06h (controller). */
    void (*identify_ns)(FemuCtrl *n, FemuNamespace *ns, uint8_t *buf);
    void (*identify_ctrl)(FemuCtrl *n, uint8_t *buf);
    /* Optional: its own I/O commands in the Commands Supported and Effects log of its CSI. */
    void (*effects)(FemuCtrl *n, NvmeEffectsLog *log);
    /* Optional: a controller reset as it affects one of its namespaces. */
    void (*ctrl_reset)(FemuCtrl *n, FemuNamespace *ns);
    /* Optional: per-namespace statistics, beside the media model's. */
    void (*stats)(FemuNamespace *ns, FemuMediaStatFn *emit, void *opaque);
    /*
     * Optional: an admin command the core does not know (a vendor-specific opcode) whose
     * NSID is one of its namespaces; NVME_NO_COMPLETE is not allowed.
     */
    uint16_t (*admin)(FemuCtrl *n, FemuRequest *req, FemuNamespace *ns, const NvmeCmd *cmd);
    /*
     * Optional: a log page of its own, read with the NSID of one of its namespaces:
     * `len` bytes from `off`. NVME_INVALID_LOG_ID leaves the page to the core.
     */
    uint16_t (*get_log)(FemuCtrl *n, FemuNamespace *ns, const NvmeCmd *cmd, uint8_t lid,
                        uint64_t off, uint64_t len);
    /*
     * Optional, for a device whose namespaces are all of this kind: power is cut (the core
     * drops every command); what the drive's capacitors save is saved, the rest is lost.
     */
    void (*power_loss)(FemuCtrl *n);
    /* Optional: power is on (at start, and at the reset after a power loss): recovery. */
    void (*power_on)(FemuCtrl *n);
    /* Optional: a normal shutdown (CC.SHN) as it affects one of its namespaces. */
    void (*shutdown)(FemuCtrl *n, FemuNamespace *ns);
    /* Optional: its part of Identify Controller (attributes, endurance groups). */
    void (*id_ctrl)(FemuCtrl *n, NvmeIdCtrl *id);
    /*
     * Optional: log pages and features that belong to no namespace (an endurance group's):
     * asked before the core's own; FEMU_KIND_PASS when the page or feature is not its.
     */
    uint16_t (*ctrl_get_log)(FemuCtrl *n, const NvmeCmd *cmd, uint8_t lid, uint64_t off,
                             uint64_t len);
    uint16_t (*ctrl_feature)(FemuCtrl *n, FemuRequest *req, const NvmeCmd *cmd, bool set);
    /*
     * Its namespaces share one model (an endurance group's FTL), created once for the sum
     * of their sizes, in which they follow one another in NSID order.
     */
    bool one_media;
    /* Its reads of unwritten blocks fail when the host sets DULBE (Error Recovery). */
    bool dulbe;
    /* Its model takes sequential read-ahead (sra=on). */
    bool read_ahead;
    /*
     * Its writes overwrite data in place (no write pointer below which a start clears):
     * on a shared file its layout keeps the write journal (backend.c), so a kill in the
     * middle of a write tears no LBA.
     */
    bool writes_in_place;
    /* PCI IDs when every namespace is of this kind; 0: QEMU's NVMe IDs. */
    uint16_t pci_vendor_id;
    uint16_t pci_device_id;
} FemuNsKind;

/* What ctrl_get_log / ctrl_feature answer for what is not theirs. */
#define FEMU_KIND_PASS 0xffff

void femu_ns_kind_register(const FemuNsKind *kind);

/* Registers a kind before QEMU's own initialisation runs (and before the device type). */
#define FEMU_NS_KIND_REGISTER(kind)                                                 \
    static void __attribute__((constructor)) femu_ns_kind_register_##kind(void)    \
    {                                                                               \
        femu_ns_kind_register(&(kind));                                             \
    }

/* Registered kinds, by femu_mode number or by name; NULL if there is none. */
const FemuNsKind *femu_ns_kind_by_mode(uint32_t femu_mode);
const FemuNsKind *femu_ns_kind_by_name(const char *name);
/*
 * "1 (blackbox), 2 (nossd), 3 (zns)" or "blackbox, nossd, zns", for error messages;
 * read_ahead_only: only the kinds that take sra=on.
 */
char *femu_ns_kind_list(bool with_modes, bool read_ahead_only);

/*
 * Where each kind's parameters sit in the device object: after FemuCtrl, at offsets fixed
 * when the device type is registered (femu_ns_kind_layout).
 */
size_t femu_ns_kind_layout(size_t base);
void *femu_ns_kind_params(FemuCtrl *n, const FemuNsKind *kind);
/* The properties of every kind, offsets made relative to the device object; g_free it. */
Property *femu_ns_kind_props(size_t *count);
/* Sets the kinds' prop_help as the descriptions of their properties in oc. */
void femu_ns_kind_describe_props(ObjectClass *oc);

#endif
