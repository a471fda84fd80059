/*
 * Named drives (flash_preset=NAME): each a set of -device properties (flash geometry and
 * latencies, host link, controller) chosen so that the model gives a class of real drive's
 * published figures, which the table keeps beside it with their source (docs/device.md: Presets).
 * A preset fills in only the properties left at their defaults, so any property given with
 * another value overrides it.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_NAND_PRESETS_H
#define FEMU_NAND_PRESETS_H

#include <stdint.h>

/* What the drive's maker or a paper says; 0: not published. */
typedef struct FemuPresetFigures {
    double qd1_read_us;         /* 4 KiB random read latency at QD1 */
    double rand_read_kiops;     /* 4 KiB random reads, high QD */
    double rand_write_kiops;    /* 4 KiB random writes, steady state */
    double seq_read_mbps;       /* 128 KiB sequential reads */
    double seq_write_mbps;
} FemuPresetFigures;

typedef struct FemuPreset {
    const char *name;
    const char *kind;           /* the femu_mode it is meant for: "blackbox", "zns" */
    const char *what;           /* the class of drive */
    const char *source;         /* where the published figures come from */
    const char *props;          /* "key=value,..." -device properties */
    FemuPresetFigures published;
} FemuPreset;

/* The presets, ending with a NULL name. */
extern const FemuPreset femu_presets[];

/* The preset called name, or NULL. */
const FemuPreset *femu_preset_find(const char *name);
/* "a, b, c": the names, for messages (static storage). */
const char *femu_preset_names(void);

#endif
