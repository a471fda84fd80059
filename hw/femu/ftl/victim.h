/*
 * Garbage collection's victim choice: the set of units GC may collect (the blackbox FTL's
 * full lines, the FDP FTL's closed reclaim units) and the policy that picks one of them.
 *
 * A policy is one small file (victim-*.c): an FtlVictimPolicy with a name and a choose()
 * that looks at the candidates through the functions below, registered with
 * FTL_VICTIM_POLICY_REGISTER and listed in ftl/meson.build. The property gc_policy=
 * selects one by name, with its parameters (policy.h): gc_policy=d-choices:d=8:seed=3.
 * docs/ftl-policies.md walks through writing one.
 *
 * Whether GC runs stays the FTL's decision (its thresholds, and the most garbage any
 * candidate holds); which unit it collects is the policy's. Where GC loops until units
 * are free (forced and background GC), a choice with no garbage at all would free nothing
 * (a policy that made only such choices would never end), so the set gives the unit with
 * the most garbage instead; paced GC, bounded by the host's writes, takes the choice as it
 * is.
 *
 * Choices depend on the FTL's saved state alone (candidates in id order, randomness drawn
 * from a seed and the FTL's count of victims), so a drive reloaded after a kill chooses as
 * the drive that was not killed would have.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_FTL_VICTIM_H
#define FEMU_FTL_VICTIM_H

#include <stdbool.h>
#include <stdint.h>

#include "ftl-common.h"
#include "policy.h"

#define FTL_NO_UNIT UINT32_MAX

/* What a policy sees of a candidate. */
typedef struct FtlUnit {
    uint32_t id;
    uint64_t valid;         /* valid pages; the unit's other pages are garbage */
    uint64_t closed;        /* the FTL's clock when the unit became full */
    uint32_t erases;        /* times it was erased: its wear */
} FtlUnit;

/* The FTL's view of unit id. */
typedef void FtlUnitViewFn(const void *ftl, uint32_t id, FtlUnit *u);

typedef struct FtlVictims FtlVictims;

typedef struct FtlVictimPolicy {
    FtlPolicy base;         /* name, about, parameters */
    /* The victim among v's candidates (there is at least one): its id. */
    uint32_t (*choose)(FtlVictims *v);
} FtlVictimPolicy;

/* Registers p (a static FtlVictimPolicy) as a gc_policy when the program starts. */
#define FTL_VICTIM_POLICY_REGISTER(p) FTL_POLICY_REGISTER(FTL_VICTIM, p)

/* ---- what choose() may ask ---- */

uint32_t ftl_victims_count(const FtlVictims *v);
/* The i-th candidate in id order, i < ftl_victims_count. */
void ftl_victims_nth(FtlVictims *v, uint32_t i, FtlUnit *u);
/* The candidate with the fewest valid pages (ties: closed first, then the lower id). O(1). */
uint32_t ftl_victims_fewest_valid(const FtlVictims *v);
/* Is a a better victim than b by fewest valid pages (the same ties)? */
bool ftl_unit_fewer_valid(const FtlUnit *a, const FtlUnit *b);
/*
 * The candidate of least cost(v, u); ties as ftl_victims_fewest_valid's. One pass over the
 * candidates, for policies that rank units by a score.
 */
typedef double FtlUnitCostFn(const FtlVictims *v, const FtlUnit *u);
uint32_t ftl_victims_least_cost(FtlVictims *v, FtlUnitCostFn *cost);
/* The value of the policy's parameter i (its place in params). */
uint32_t ftl_victims_param(const FtlVictims *v, unsigned i);
/* A pseudo-random number below n (n >= 1), from the parameter "seed" and the FTL's state. */
uint64_t ftl_victims_random(FtlVictims *v, uint64_t n);
/* The FTL's clock now (an age is now - FtlUnit.closed), and pages per unit. */
uint64_t ftl_victims_now(const FtlVictims *v);
uint64_t ftl_victims_unit_pages(const FtlVictims *v);

/* ---- the FTL's side ---- */

/* The caller's order of ids: is a's victim better than b's? */
typedef bool FtlHeapLessFn(const void *ctx, uint32_t a, uint32_t b);

/*
 * A binary min-heap of ids, the best by `less` on top. pos[id] is id's index while it is in
 * the heap, so an id whose key fell moves up in O(log n); heaps of disjoint ids may share
 * one pos array.
 */
typedef struct FtlHeap {
    uint32_t *id;
    uint32_t len;
    uint32_t *pos;
    FtlHeapLessFn *less;
    const void *ctx;
} FtlHeap;

struct FtlVictims {
    FtlPolicyChoice choice;
    FtlHeap fewest;             /* every candidate, fewest valid pages on top */
    uint32_t first, n;          /* the ids this set may hold: first..first + n - 1 */
    FtlUnitViewFn *view;
    const void *ftl;
    uint64_t unit_pages;
    /* during a pick: the clock, the random draws' key and count, candidates by id */
    uint64_t now, draw_key, draws;
    uint32_t *by_id;
    bool by_id_ready;
};

/*
 * An empty set of ids first..first + n - 1 of units of unit_pages pages; fewer_valid
 * orders them for the heap as ftl_unit_fewer_valid does, view shows them to the policy.
 * pos: n entries from first of the caller's, as FtlHeap's (sets of disjoint ids may share
 * it).
 */
void ftl_victims_init(FtlVictims *v, const FtlPolicyChoice *c, uint32_t first, uint32_t n,
                      uint64_t unit_pages, uint32_t *pos, FtlHeapLessFn *fewer_valid,
                      FtlUnitViewFn *view, const void *ftl);
void ftl_victims_destroy(FtlVictims *v);
void ftl_victims_clear(FtlVictims *v);
/* id became full (a candidate); id, a candidate, lost valid pages. */
void ftl_victims_add(FtlVictims *v, uint32_t id);
void ftl_victims_fell(FtlVictims *v, uint32_t id);
bool ftl_victims_holds(const FtlVictims *v, uint32_t id);
/* The most garbage a candidate holds, in pages: what the best victim could free. */
uint64_t ftl_victims_most_garbage(const FtlVictims *v);
/*
 * The policy's victim, taken out of the set: now is the FTL's clock, draws a count the
 * FTL saves (its victims so far), so that random policies draw from saved state. With
 * must_free (forced and background GC, which loop while units are short), a choice
 * without garbage is replaced by the unit with the most. FTL_NO_UNIT when the set is empty.
 */
uint32_t ftl_victims_take(FtlVictims *v, uint64_t now, uint64_t draws, bool must_free);
/* For consistency checks: the first heap index out of order, 0 if none. */
uint32_t ftl_victims_disorder(const FtlVictims *v);

#endif
