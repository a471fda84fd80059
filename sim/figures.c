/*
 * femu-sim's derived figures; see figures.h.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "figures.h"

#include <math.h>

#define NS_PER_S 1000000000u

/* a / b as a double: the integer part exact, then one rounding of each part */
static double quotient(SimSum a, uint64_t b)
{
    return b ? (double)(a / b) + (double)(a % b) / (double)b : 0;
}

double sim_per_second(uint64_t count, uint64_t ns)
{
    return quotient((SimSum)count * NS_PER_S, ns);
}

double sim_mean(SimSum sum, uint64_t n)
{
    return quotient(sum, n);
}

void sim_lat_record(SimLatStats *s, uint64_t ns)
{
    if (!s->n || ns < s->min) {
        s->min = ns;
    }
    if (ns > s->max) {
        s->max = ns;
    }
    s->n++;
    s->sum += ns;
    s->sum_sq += (SimSum)ns * ns;
}

double sim_lat_mean(const SimLatStats *s)
{
    return sim_mean(s->sum, s->n);
}

/*
 * With q and r the quotient and remainder of sum / n, sum((x - q)^2) = sum_sq - q (sum + r)
 * exactly in 128 bits (it is >= 0, so no step overflows), and the squares about the mean
 * are that minus r^2 / n. Only that last step and the division by n round (the deviation
 * is exact to 2^-52 of itself, or 1e-8 ns when it is near 0): E[x^2] - mean^2 in doubles
 * cancelled to noise when the deviation is small beside the mean.
 */
double sim_lat_stddev(const SimLatStats *s)
{
    SimSum q, r, sq_about_q;
    double m2;

    if (!s->n) {
        return 0;
    }
    q = s->sum / s->n;
    r = s->sum % s->n;
    sq_about_q = s->sum_sq - q * (s->sum + r);
    m2 = (double)sq_about_q - (double)r * ((double)r / (double)s->n);
    return m2 > 0 ? sqrt(m2 / (double)s->n) : 0;
}
