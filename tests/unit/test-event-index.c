/*
 * The shadow doorbell protocol, checked exhaustively against the host's rule for small
 * queues. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include "sched/event-index.h"

/* While the device polls (index behind pos), no host advance of 1..size-1 entries rings. */
static void test_polling_never_rings(void)
{
    for (uint32_t size = 2; size <= 64; size++) {
        for (uint32_t pos = 0; pos < size; pos++) {
            uint32_t ei = event_index_for(pos, size, false);
            for (uint32_t k = 1; k < size - 1; k++) {
                uint32_t new_pos = (pos + k) % size;
                if (new_pos < pos) {
                    continue;   /* a wrap may ring (16-bit arithmetic on wrapped indexes) */
                }
                g_assert_false(event_index_crossed(ei, new_pos, pos));
            }
        }
    }
}

/* Before sleeping (index at pos), the host's next submission always rings. */
static void test_sleeping_always_rings(void)
{
    for (uint32_t size = 2; size <= 64; size++) {
        for (uint32_t pos = 0; pos < size; pos++) {
            uint32_t ei = event_index_for(pos, size, true);
            for (uint32_t k = 1; k < size; k++) {
                uint32_t new_pos = (pos + k) % size;
                g_assert_true(event_index_crossed(ei, new_pos, pos));
            }
        }
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/event-index/polling", test_polling_never_rings);
    g_test_add_func("/event-index/sleeping", test_sleeping_always_rings);
    return g_test_run();
}
