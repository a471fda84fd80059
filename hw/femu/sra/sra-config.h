/*
 * Sequential read-ahead's -device properties (sra=on, sra_*) turned into an SraConfig.
 * They are the controller's: every namespace whose kind reads ahead (zoned, blackbox)
 * gets its own detectors.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_SRA_CONFIG_H
#define HW_FEMU_SRA_CONFIG_H

#include "hw/qdev-properties.h"
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

/* Properties with offsets relative to FemuSraParams. */
extern const Property femu_sra_props[];
extern const size_t femu_sra_nr_props;

/*
 * The configuration for a model of page_bytes pages whose times are multiplied by
 * time_scale (the cache's hit cost is a media time; the idle timeout is the host's).
 * False with errp set when a property is out of range.
 */
bool femu_sra_config(const FemuSraParams *p, uint64_t page_bytes, uint32_t time_scale,
                     SraConfig *c, Error **errp);

#endif
