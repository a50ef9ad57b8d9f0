/*
 * loom: copying a contiguous block without the slow case of the C library's memcpy.
 *
 * glibc's memcpy moves blocks of a few KiB and more with `rep movsb`.  On some x86
 * CPUs that instruction runs many times slower when the destination starts
 * 1-31 bytes after the source modulo 4 KiB (docs/dev/developing.md, "Performance
 * notes"; from 2 MiB on, where glibc switches to non-temporal stores, the case is
 * gone).  Two buffers that an application mallocs one after the other are 16 bytes
 * apart modulo 4 KiB whenever their size is a multiple of 4 KiB (the allocator's
 * header), so an allreduce's copy of its input into its result hits the case exactly
 * for the common sizes; tuned's copies do too.  loom copies such blocks with 64-byte
 * moves the compiler inlines.
 */
#ifndef MCA_COLL_LOOM_COPY_H
#define MCA_COLL_LOOM_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Distances (dst - src, modulo 4 KiB) from 1 to below this take the block loop. */
#define MCA_COLL_LOOM_COPY_ALIAS_BYTES 64
/* Shorter copies do not use `rep movsb`; from here on glibc uses non-temporal stores. */
#define MCA_COLL_LOOM_COPY_MIN_BYTES 2048
#define MCA_COLL_LOOM_COPY_MAX_BYTES (1u << 20)

/* true when memcpy(dst, src, n) may take the slow case */
static inline int mca_coll_loom_copy_aliases(const void *dst, const void *src, size_t n)
{
    const uintptr_t k = ((uintptr_t) dst - (uintptr_t) src) & 4095;

    return n >= MCA_COLL_LOOM_COPY_MIN_BYTES && n <= MCA_COLL_LOOM_COPY_MAX_BYTES && k > 0 &&
           k < MCA_COLL_LOOM_COPY_ALIAS_BYTES;
}

/* memcpy(dst, src, n) for buffers that do not overlap */
static inline void mca_coll_loom_copy(void *dst, const void *src, size_t n)
{
    if (mca_coll_loom_copy_aliases(dst, src, n)) {
        char *d = (char *) dst;
        const char *s = (const char *) src;
        size_t i = 0;

        for (; i + 64 <= n; i += 64) {
            __builtin_memcpy(d + i, s + i, 64); /* a constant size: inlined vector moves */
        }
        memcpy(d + i, s + i, n - i);
        return;
    }
    memcpy(dst, src, n);
}

#endif /* MCA_COLL_LOOM_COPY_H */
