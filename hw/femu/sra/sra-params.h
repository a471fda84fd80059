/*
 * Sequential read-ahead's properties (sra=on, sra_*): their values, their list (expanded
 * by the QEMU device and by femu-sim) and the SraConfig they give. They are the
 * controller's: every namespace whose kind reads ahead (zoned, blackbox) gets its own
 * detectors.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_SRA_PARAMS_H
#define FEMU_SRA_PARAMS_H

#include "sra.h"

typedef struct FemuSraParams {
    bool on;
    uint32_t streams;
    uint32_t ramp;
    uint32_t max_read_kb;
    uint32_t max_qd;
    uint32_t idle_ms;
    uint32_t cache_kb;
    uint32_t window;
    uint32_t hit_ns;
} FemuSraParams;

/* P(struct, type, name, field, default), as FEMU_FLASH_PROPS */
#define FEMU_SRA_PROPS(P, S)                            \
    P(S, BOOL, "sra", on, false)                        \
    P(S, U32, "sra_streams", streams, 4)                \
    P(S, U32, "sra_ramp", ramp, 4)                      \
    P(S, U32, "sra_max_read_kb", max_read_kb, 64)       \
    P(S, U32, "sra_max_qd", max_qd, 8)                  \
    P(S, U32, "sra_idle_ms", idle_ms, 100)              \
    P(S, U32, "sra_cache_kb", cache_kb, 4096)           \
    P(S, U32, "sra_window", window, 32)                 \
    P(S, U32, "sra_hit_ns", hit_ns, 1000)

/*
 * The configuration for a model of page_bytes pages whose times are multiplied by
 * time_scale (the cache's hit cost is a media time; the idle timeout is the host's).
 * False and *err (g_free it) when a property is out of range.
 */
bool sra_params_config(const FemuSraParams *p, uint64_t page_bytes, uint32_t time_scale,
                       SraConfig *c, char **err);

#endif
