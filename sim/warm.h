/*
 * femu-sim's warm thread: on a second core, it reads the model's tables for I/Os the jobs
 * will issue soon (FemuMediaOps.warmer), so their page walks and cache misses are paid there.
 * It only reads: no result depends on it or on its timing.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef SIM_WARM_H
#define SIM_WARM_H

#include <stdint.h>

#include "media/media.h"

typedef struct SimWarm SimWarm;

SimWarm *sim_warm_new(void);
/* Queues a call of r for the thread; dropped when the queue is full (it is only a hint). */
void sim_warm_post(SimWarm *w, const FemuWarmer *r, FemuMediaOp op, uint64_t offset,
                   uint64_t len);
/* Stops the thread; call before the media whose readers it was given go. */
void sim_warm_free(SimWarm *w);

#endif
