/*
 * femu-sim's derived figures: rates (bandwidth, IOPS) and latency means and deviations,
 * from the engine's exact counters. Each product or sum is taken in 128 bits, where no
 * count of uint64 can overflow it (16 TiB over 10^6 s, or one byte in one ns, alike); a
 * figure becomes a double only at the end, so its relative error is below 2^-52 (about
 * 2e-16: the 17th significant digit), far below the digits femu-sim prints.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_SIM_FIGURES_H
#define FEMU_SIM_FIGURES_H

#include <stdint.h>

/* A sum of nanoseconds (latencies): 2^64 of them would not overflow it. */
typedef unsigned __int128 SimSum;

/* count per second over ns (bytes/s, IOPS): count x 10^9 / ns; 0 when ns is 0. */
double sim_per_second(uint64_t count, uint64_t ns);
/* sum / n; 0 when n is 0. */
double sim_mean(SimSum sum, uint64_t n);

/*
 * The latencies of one direction of a job: exact sums for the mean and the standard
 * deviation. sum_sq stays below 2^128 while iodepth x span^2 does (span: the job's virtual
 * time, each latency and the sum of a slot's latencies are within it): at the largest
 * iodepth (65536), for any job under 2^56 ns (2.2 years; femu-sim stops at
 * SIM_MAX_TIME_NS).
 */
typedef struct SimLatStats {
    uint64_t n, min, max;
    SimSum sum, sum_sq;
} SimLatStats;

void sim_lat_record(SimLatStats *s, uint64_t ns);
double sim_lat_mean(const SimLatStats *s);
/* The population standard deviation (over n, not n - 1); 0 when n is 0. */
double sim_lat_stddev(const SimLatStats *s);

#endif
