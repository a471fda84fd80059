/*
 * The FTLs' policies: small plug-ins selected by name with a property, each one file
 * (victim-*.c: which unit GC collects, gc_policy=; pacing-*.c: how GC work is spread over
 * time, gc_pacing=; stream-*.c: which open unit a page goes to, streams=). A policy registers
 * itself when the program starts; this file finds it by name and parses its parameters:
 * gc_policy=d-choices:d=8:seed=3.
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_FTL_POLICY_H
#define FEMU_FTL_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define FTL_POLICY_MAX_PARAMS 4

typedef enum FtlPolicyKind {
    FTL_VICTIM,         /* gc_policy: victim-*.c, FtlVictimPolicy (victim.h) */
    FTL_PACING,         /* gc_pacing: pacing-*.c, FtlPacingPolicy (pacing.h) */
    FTL_STREAM,         /* streams: stream-*.c, FtlStreamPolicy (stream.h) */
    FTL_POLICY_KINDS
} FtlPolicyKind;

/* A policy's integer parameter: PROPERTY=NAME:name=value, value in min..max. */
typedef struct FtlPolicyParam {
    const char *name;
    uint32_t min, max, def;
    const char *about;
} FtlPolicyParam;

/* What every policy has; a kind's policy struct starts with it. */
typedef struct FtlPolicy {
    const char *name;       /* its word in the property */
    const char *about;      /* one line, for the docs and messages */
    FtlPolicyParam params[FTL_POLICY_MAX_PARAMS];   /* up to the first without a name */
} FtlPolicy;

void ftl_policy_register(FtlPolicyKind kind, const FtlPolicy *p);

/* Registers p (a static policy struct of that kind) when the program starts. */
#define FTL_POLICY_REGISTER(kind, p)                                                   \
    static void __attribute__((constructor)) ftl_policy_register_##p(void)             \
    {                                                                                  \
        ftl_policy_register(kind, &(p).base);                                          \
    }

/* A property's value, parsed: the policy and each of its parameters' values. */
typedef struct FtlPolicyChoice {
    const FtlPolicy *policy;        /* NULL: the kind's default */
    uint32_t param[FTL_POLICY_MAX_PARAMS];
} FtlPolicyChoice;

/*
 * "NAME[:PARAM=VALUE]..." (NULL or "": the kind's default) into *c; false and *err naming
 * the property, the policies or the parameter's range when it is not one.
 */
bool ftl_policy_parse(FtlPolicyKind kind, const char *spec, FtlPolicyChoice *c, char **err);
/* The kind's default policy, with its parameters' defaults. */
FtlPolicyChoice ftl_policy_default(FtlPolicyKind kind);
/* The registered policies' names, comma-separated, in name order (g_free it). */
char *ftl_policy_names(FtlPolicyKind kind);
const FtlPolicy *ftl_policy_find(FtlPolicyKind kind, const char *name);
/* The value of c's parameter `name` (def when its policy has none of that name). */
uint32_t ftl_policy_param(const FtlPolicyChoice *c, const char *name, uint32_t def);

#endif
