/*
 * coll/loom: scratch memory of large calls, kept between calls in one per-process pool.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "coll_loom.h"

/* Large scratch buffers are kept in one per-process pool between calls, up to
 * coll_loom_scratch_keep bytes: a large collective then reuses memory whose pages are
 * already mapped instead of faulting in fresh ones on every call (at 16 MiB that was
 * a large part of a reduce's time).  One buffer is enough: blocking collectives of
 * one thread run one at a time; another thread finding the pool empty allocates. */
static struct {
    char *buf;
    size_t bytes;
} loom_pool;

/* Pool buffers are mapped directly, not malloc'ed: a large malloc/free pair moves
 * glibc's dynamic mmap threshold, after which the application's own large buffers
 * come from the heap, where a kept buffer pins fragments (test_lifecycle saw the
 * resident set creep by megabytes). */
static char *pool_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return MAP_FAILED == p ? NULL : p;
}

static void pool_unmap(char *p, size_t bytes)
{
    if (NULL != p) {
        (void) munmap(p, bytes);
    }
}

void *mca_coll_loom_scratch_take(size_t bytes)
{
    char *p = NULL;

    if (0 == bytes) {
        bytes = 1;
    }
    OPAL_THREAD_LOCK(&mca_coll_loom_component.lock);
    if (NULL != loom_pool.buf && loom_pool.bytes == bytes) {
        p = loom_pool.buf;
        loom_pool.buf = NULL;
    }
    OPAL_THREAD_UNLOCK(&mca_coll_loom_component.lock);
    return NULL != p ? p : pool_map(bytes);
}

void mca_coll_loom_scratch_give(void *p, size_t bytes)
{
    char *drop = p;
    size_t drop_bytes = bytes;

    if (NULL == p) {
        return;
    }
    if (0 == bytes) {
        bytes = drop_bytes = 1;
    }
    if (mca_coll_loom_component.scratch_keep > 0 &&
        bytes <= (size_t) mca_coll_loom_component.scratch_keep) {
        OPAL_THREAD_LOCK(&mca_coll_loom_component.lock);
        /* keep the latest buffer: the sizes of one application repeat */
        drop = loom_pool.buf;
        drop_bytes = loom_pool.bytes;
        loom_pool.buf = p;
        loom_pool.bytes = bytes;
        OPAL_THREAD_UNLOCK(&mca_coll_loom_component.lock);
    }
    pool_unmap(drop, drop_bytes);
}

void mca_coll_loom_scratch_release_all(void)
{
    pool_unmap(loom_pool.buf, loom_pool.bytes);
    loom_pool.buf = NULL;
    loom_pool.bytes = 0;
}
