/*
 * The controller's front end: its firmware cores, which spend a time on every command, and
 * the PCIe link, which carries the data of reads to the host and of writes to the device at
 * the link's rate. Both are booked like the flash (timeline.h, first fit), so that a drive's
 * QD1 latency, its random-read ceiling and its sequential bandwidth cap come out of the
 * model. Unset (pcie_gen=0, fw_cores=0), a command costs neither.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_MEDIA_FRONTEND_H
#define FEMU_MEDIA_FRONTEND_H

#include <stdbool.h>
#include <stdint.h>

#define FEMU_PCIE_MAX_GEN 5
#define FEMU_PCIE_MAX_LANES 16
#define FEMU_FW_MAX_CORES 64

typedef struct FemuFrontendConfig {
    uint32_t pcie_gen;          /* 0: no link model; 1..5 */
    uint32_t pcie_lanes;        /* 1, 2, 4, 8 or 16 */
    uint32_t fw_cores;          /* 0: no controller model; 1..64 */
    uint64_t fw_cmd_ns;         /* firmware time per command, 0..10^9 ns */
    uint32_t time_scale;        /* as the flash's: every time is multiplied by it */
} FemuFrontendConfig;

/* P(struct, type, name, field, default), as FEMU_FLASH_PROPS (nand/flash-params.h) */
#define FEMU_FRONTEND_PROPS(P, S)                       \
    P(S, U32, "pcie_gen", pcie_gen, 0)                  \
    P(S, U32, "pcie_lanes", pcie_lanes, 4)              \
    P(S, U32, "fw_cores", fw_cores, 0)                  \
    P(S, U64, "fw_cmd_ns", fw_cmd_ns, 0)

typedef struct FemuFrontendStats {
    uint64_t commands;
    uint64_t bytes_to_host, bytes_to_device;
    uint64_t fw_busy_ns, link_busy_ns[2];       /* [0] to the device, [1] to the host */
} FemuFrontendStats;

typedef struct FemuFrontend FemuFrontend;

/* Payload MB/s of one lane of a PCIe generation (after line coding). */
uint32_t femu_pcie_lane_mbps(uint32_t gen);

/* Checks a configuration; false and *err (g_free it) naming the field and its range. */
bool femu_frontend_check(const FemuFrontendConfig *c, char **err);
/* NULL and no error when neither part is configured; NULL and *err when invalid. */
FemuFrontend *femu_frontend_new(const FemuFrontendConfig *c, char **err);
void femu_frontend_free(FemuFrontend *f);

/* A command arrives: when the firmware has handled it (the earliest free core). */
uint64_t femu_frontend_command(FemuFrontend *f, uint64_t arrival_ns);
/* bytes over the link, to the host or to the device, from at: when they are across. */
uint64_t femu_frontend_transfer(FemuFrontend *f, bool to_host, uint64_t bytes, uint64_t at);
/* The link's time for bytes (0 without a link model). */
uint64_t femu_frontend_xfer_ns(const FemuFrontend *f, uint64_t bytes);
const FemuFrontendStats *femu_frontend_stats(const FemuFrontend *f);
/* Its statistics (fw_*, pcie_*) by name, as the media models give theirs (media.h). */
void femu_frontend_emit(const FemuFrontend *f, void (*emit)(void *opaque, const char *name,
                                                           uint64_t value), void *opaque);
/*
 * A media request behind the link (f may be NULL): a write's data crosses to the device
 * before the model sees it, a read's to the host after. When the command completes.
 */
struct FemuMedia;
struct FemuMediaReq;
uint64_t femu_frontend_media_submit(FemuFrontend *f, struct FemuMedia *m,
                                    struct FemuMediaReq *r);
/* Forget bookings that ended before t (no later command arrives before it). */
void femu_frontend_retire(FemuFrontend *f, uint64_t t);

#endif
