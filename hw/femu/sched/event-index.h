/*
 * Shadow doorbell event indexes (NVMe Doorbell Buffer Config). The host rings the MMIO
 * doorbell only when its update from old to new crosses the event index the device wrote,
 * computed in 16-bit arithmetic as Linux does. QEMU-free.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_EVENT_INDEX_H
#define FEMU_EVENT_INDEX_H

#include <stdbool.h>
#include <stdint.h>

/* The host's test: does moving from old to new pass event_idx? */
static inline bool event_index_crossed(uint16_t event_idx, uint16_t new_idx, uint16_t old)
{
    return (uint16_t)(new_idx - event_idx - 1) < (uint16_t)(new_idx - old);
}

/*
 * The event index the device publishes for a queue position pos (SQ tail or CQ head) of a
 * queue with size entries: at pos, the host's next update rings the doorbell (the device is
 * about to sleep); one behind pos, updates never ring (the device is polling).
 */
static inline uint32_t event_index_for(uint32_t pos, uint32_t size, bool want_doorbell)
{
    return want_doorbell ? pos : (pos + size - 1) % size;
}

#endif
