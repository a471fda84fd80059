/*
 * Small helpers the QEMU-free models share.
 *
 * femu_fetch(p): brings p's cache line in ahead of its use (the timelines' searches and the
 * FTL's tables). An asm statement on x86: GCC 12 at -O2 drops some __builtin_prefetch calls
 * as dead code (background GC's look-ahead lost all of them).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FEMU_MEDIA_MODEL_UTIL_H
#define FEMU_MEDIA_MODEL_UTIL_H

#include <stdbool.h>
#include <stdint.h>

static inline void femu_fetch(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p);
#endif
}

static inline bool femu_is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

#endif
