/*
 * loom: the per-node shared segment (loom_shm.h).
 */
#include "opal/loom/loom_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#define LOOM_SHM_LINE MCA_COLL_LOOM_SHM_LINE

/* Header line, the bell line, the waiters line, the A areas (each: its release word,
 * padding to MCA_COLL_LOOM_SHM_HEAD, the data), then per rank its arrive word, padding
 * and slot, then per rank its D = MCA_COLL_LOOM_SHM_SYM_DEPTH small (sym) slots (flag,
 * padding, data), then the D small areas (padding, data); areas and slots start on a
 * line and take whole lines. */
typedef struct {
    uint64_t magic;
    uint64_t n;
    uint64_t slot_bytes;
} loom_shm_header_t;

#define LOOM_SHM_OFF_BELL    (1 * LOOM_SHM_LINE)
#define LOOM_SHM_OFF_WAITERS (2 * LOOM_SHM_LINE)
#define LOOM_SHM_OFF_DATA    (3 * LOOM_SHM_LINE)
#define LOOM_SHM_HEAD        MCA_COLL_LOOM_SHM_HEAD
#define LOOM_SHM_SYM_STRIDE                                                                       \
    ((LOOM_SHM_HEAD + MCA_COLL_LOOM_SHM_SMALL_BYTES + LOOM_SHM_LINE - 1) & ~((size_t) LOOM_SHM_LINE - 1))

static size_t round_line(size_t b)
{
    return (b + LOOM_SHM_LINE - 1) & ~((size_t) LOOM_SHM_LINE - 1);
}

size_t mca_coll_loom_shm_segment_bytes(int n, size_t slot_bytes)
{
    size_t stride;

    if (n < 1 || slot_bytes > SIZE_MAX / 4) {
        return 0;
    }
    stride = round_line(LOOM_SHM_HEAD + slot_bytes);
    if (stride > SIZE_MAX / 4 / ((size_t) n + MCA_COLL_LOOM_SHM_AREAS) ||
        (size_t) n > SIZE_MAX / 4 / MCA_COLL_LOOM_SHM_SYM_DEPTH / LOOM_SHM_SYM_STRIDE - 1) {
        return 0;
    }
    return LOOM_SHM_OFF_DATA + stride * ((size_t) n + MCA_COLL_LOOM_SHM_AREAS) +
           MCA_COLL_LOOM_SHM_SYM_DEPTH * LOOM_SHM_SYM_STRIDE * ((size_t) n + 1);
}

static void layout(mca_coll_loom_shm_t *s, int n, int me, size_t slot_bytes)
{
    s->n = n;
    s->me = me;
    s->slot_bytes = slot_bytes;
    s->stride = round_line(LOOM_SHM_HEAD + slot_bytes);
    s->bell = (uint32_t *) (s->base + LOOM_SHM_OFF_BELL);
    s->bell_waiters = s->bell + 1;
    /* apart from the release words: written only by ranks going to sleep, read by
     * every releaser, so it stays in every core's cache */
    s->release_waiters = (uint32_t *) (s->base + LOOM_SHM_OFF_WAITERS);
    for (int p = 0; p < MCA_COLL_LOOM_SHM_AREAS; ++p) {
        char *line = s->base + LOOM_SHM_OFF_DATA + (size_t) p * s->stride;
        s->release[p] = (uint32_t *) line;
        s->area[p] = line + LOOM_SHM_HEAD;
    }
    s->slot0 = s->base + LOOM_SHM_OFF_DATA + MCA_COLL_LOOM_SHM_AREAS * s->stride + LOOM_SHM_HEAD;
    s->sym_stride = LOOM_SHM_SYM_STRIDE;
    s->sym0 = s->base + LOOM_SHM_OFF_DATA + (MCA_COLL_LOOM_SHM_AREAS + (size_t) n) * s->stride + LOOM_SHM_HEAD;
    s->small0 = s->sym0 + (size_t) n * MCA_COLL_LOOM_SHM_SYM_DEPTH * s->sym_stride;
    s->done = 1; /* calls count from 1: nobody is in an earlier one */
}

static void clear(mca_coll_loom_shm_t *s)
{
    memset(s, 0, sizeof(*s));
}

int mca_coll_loom_shm_map_create(const char *path, size_t bytes, void **base, int *err, const char **what)
{
    void *p;
    int fd, rc;

    if (0 == bytes || bytes > (size_t) LONG_MAX) {
        *err = EINVAL;
        *what = "size";
        return -1;
    }
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && EEXIST == errno) {
        /* a leftover of a job that died at the same path: ours replaces it (the name
         * holds the job id, so no live job uses it) */
        (void) unlink(path);
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd < 0) {
        *err = errno;
        *what = "open";
        return -1;
    }
    /* allocate now: on a full tmpfs a plain ftruncate succeeds and the first touch
     * of a missing page kills the process with SIGBUS */
    rc = posix_fallocate(fd, 0, (off_t) bytes);
    if (0 != rc) {
        *err = rc;
        *what = "posix_fallocate";
        goto fail;
    }
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (MAP_FAILED == p) {
        *err = errno;
        *what = "mmap";
        goto fail;
    }
    close(fd);
    *base = p;
    return 0;

fail:
    close(fd);
    (void) unlink(path);
    return -1;
}

int mca_coll_loom_shm_map_attach(const char *path, size_t bytes, void **base, int *err, const char **what)
{
    struct stat st;
    void *p;
    int fd;

    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        *what = "open";
        return -1;
    }
    if (0 != fstat(fd, &st) || (size_t) st.st_size != bytes) {
        *err = EINVAL;
        *what = "fstat (size)";
        close(fd);
        return -1;
    }
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (MAP_FAILED == p) {
        *err = errno;
        *what = "mmap";
        return -1;
    }
    *base = p;
    return 0;
}

int mca_coll_loom_shm_create(mca_coll_loom_shm_t *s, const char *path, int n, size_t slot_bytes,
                             int *err, const char **what)
{
    const size_t bytes = mca_coll_loom_shm_segment_bytes(n, slot_bytes);
    loom_shm_header_t *h;
    void *p;

    clear(s);
    if (0 != mca_coll_loom_shm_map_create(path, bytes, &p, err, what)) {
        return -1;
    }
    s->base = p;
    s->bytes = bytes;
    layout(s, n, 0, slot_bytes);
    h = (loom_shm_header_t *) s->base;
    h->n = (uint64_t) n;
    h->slot_bytes = (uint64_t) slot_bytes;
    /* the fresh file is zero: counters start at 0, calls at 1 */
    __atomic_store_n(&h->magic, MCA_COLL_LOOM_SHM_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

int mca_coll_loom_shm_attach(mca_coll_loom_shm_t *s, const char *path, int n, int me,
                             size_t slot_bytes, int *err, const char **what)
{
    const size_t bytes = mca_coll_loom_shm_segment_bytes(n, slot_bytes);
    const loom_shm_header_t *h;
    void *p;

    clear(s);
    if (0 == bytes || me < 0 || me >= n) {
        *err = EINVAL;
        *what = "size";
        return -1;
    }
    if (0 != mca_coll_loom_shm_map_attach(path, bytes, &p, err, what)) {
        return -1;
    }
    h = p;
    if (MCA_COLL_LOOM_SHM_MAGIC != __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) ||
        h->n != (uint64_t) n || h->slot_bytes != (uint64_t) slot_bytes) {
        munmap(p, bytes);
        *err = EINVAL;
        *what = "header";
        return -1;
    }
    s->base = p;
    s->bytes = bytes;
    layout(s, n, me, slot_bytes);
    return 0;
}

void mca_coll_loom_shm_detach(mca_coll_loom_shm_t *s)
{
    if (NULL != s->base) {
        (void) munmap(s->base, s->bytes);
    }
    clear(s);
}

int mca_coll_loom_shm_unlink(const char *path)
{
    return unlink(path);
}

/* ------------------------------------------------------------------------------------ */
/* waiting and posting                                                                   */

static void sleep_on(uint32_t *word, uint32_t seen, int sleep_us)
{
#ifdef __linux__
    struct timespec ts = {.tv_sec = sleep_us / 1000000, .tv_nsec = (long) (sleep_us % 1000000) * 1000};
    /* not FUTEX_PRIVATE_FLAG: the word is shared between processes.  Returns at once
     * when *word is no longer `seen`, so a post between our check and the sleep is
     * not lost. */
    (void) syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0);
#else
    (void) word;
    (void) seen;
    (void) sleep_us;
    (void) sched_yield();
#endif
}

static void wake_all(uint32_t *word)
{
#ifdef __linux__
    (void) syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
#else
    (void) word;
#endif
}

/* Waits until cond(ctx) holds: spinning first, then sleeping on `word`, which whoever
 * makes the condition true changes (and wakes `word`'s sleepers if *waiters > 0). */
static void wait_until(bool (*cond)(const void *ctx), const void *ctx, uint32_t *word, uint32_t *waiters,
                       const mca_coll_loom_shm_wait_t *w)
{
    for (int i = 0; i < w->spin; ++i) {
        if (cond(ctx)) {
            return;
        }
        if (NULL != w->progress) {
            w->progress();
        }
    }
    for (;;) {
        uint32_t v;
        bool done;

        /* announce the sleeper before the last look: a poster that changes the word
         * after this look sees waiters > 0 and wakes us, one that changed it before
         * is seen by the look or makes the futex return at once (both sides are
         * sequentially consistent) */
        __atomic_fetch_add(waiters, 1, __ATOMIC_SEQ_CST);
        v = __atomic_load_n(word, __ATOMIC_SEQ_CST);
        done = cond(ctx);
        if (!done) {
            sleep_on(word, v, w->sleep_us > 0 ? w->sleep_us : 1000);
        }
        __atomic_fetch_sub(waiters, 1, __ATOMIC_SEQ_CST);
        if (done || cond(ctx)) {
            return;
        }
        if (NULL != w->progress) {
            w->progress();
        }
    }
}

typedef struct {
    const uint32_t *word;
    uint32_t target;
} loom_word_target_t;

static bool word_reached(const void *ctx)
{
    const loom_word_target_t *t = ctx;
    return mca_coll_loom_shm_reached(__atomic_load_n(t->word, __ATOMIC_SEQ_CST), t->target);
}

void mca_coll_loom_shm_wait(uint32_t *word, uint32_t *waiters, uint32_t target,
                            const mca_coll_loom_shm_wait_t *w)
{
    const loom_word_target_t t = {word, target};
    wait_until(word_reached, &t, word, waiters, w);
}

static void posted(uint32_t *word, uint32_t *waiters)
{
    if (0 != __atomic_load_n(waiters, __ATOMIC_SEQ_CST)) {
        wake_all(word);
    }
}

void mca_coll_loom_shm_enter(mca_coll_loom_shm_t *s, uint32_t seq, const mca_coll_loom_shm_wait_t *w)
{
    mca_coll_loom_shm_wait_release(s, seq - 1u, w);
}

void mca_coll_loom_shm_arrive(mca_coll_loom_shm_t *s, uint32_t seq)
{
    /* the slot's contents are visible to whoever sees the arrive word (seq_cst
     * includes release ordering) */
    __atomic_store_n(mca_coll_loom_shm_arrive_word(s, s->me), seq, __ATOMIC_SEQ_CST);
    if (0 != __atomic_load_n(s->bell_waiters, __ATOMIC_SEQ_CST)) {
        __atomic_fetch_add(s->bell, 1u, __ATOMIC_SEQ_CST);
        wake_all(s->bell);
    }
}

typedef struct {
    const mca_coll_loom_shm_t *s;
    uint32_t seq;
} loom_arrivals_t;

static bool all_arrived(const void *ctx)
{
    const loom_arrivals_t *a = ctx;
    for (int i = 0; i < a->s->n; ++i) {
        if (!mca_coll_loom_shm_reached(
                __atomic_load_n(mca_coll_loom_shm_arrive_word(a->s, i), __ATOMIC_SEQ_CST), a->seq)) {
            return false;
        }
    }
    return true;
}

void mca_coll_loom_shm_wait_arrived(mca_coll_loom_shm_t *s, uint32_t seq,
                                    const mca_coll_loom_shm_wait_t *w)
{
    /* the condition is on n words, the sleep on the bell the arriving ranks ring */
    const loom_arrivals_t a = {s, seq};
    wait_until(all_arrived, &a, s->bell, s->bell_waiters, w);
}

void mca_coll_loom_shm_release(mca_coll_loom_shm_t *s, uint32_t seq)
{
    uint32_t *word = s->release[seq & (MCA_COLL_LOOM_SHM_AREAS - 1u)];

    __atomic_store_n(word, seq, __ATOMIC_SEQ_CST);
    posted(word, s->release_waiters);
}

static uint32_t *sym_flag(const mca_coll_loom_shm_t *s, int i, uint32_t seq)
{
    return (uint32_t *) (mca_coll_loom_shm_sym_slot(s, i, seq) - LOOM_SHM_HEAD);
}

/* The arrive words say who is done with what: arrive[i] = t means rank i is done with
 * every call before t.  The smallest, taken relative to seq (some ranks may be ahead). */
static uint32_t min_arrived(const mca_coll_loom_shm_t *s, uint32_t seq)
{
    int32_t low = 0;
    for (int i = 0; i < s->n; ++i) {
        const uint32_t a = __atomic_load_n(mca_coll_loom_shm_arrive_word(s, i), __ATOMIC_SEQ_CST);
        const int32_t d = (int32_t) (a - seq);
        low = d < low ? d : low;
    }
    return seq + (uint32_t) low;
}

bool mca_coll_loom_shm_small_free(mca_coll_loom_shm_t *s, uint32_t seq)
{
    /* sym[.][seq % D] was last read in call seq - D: free once every rank is done with
     * it, i.e. has arrived at seq - D + 1.  `done` is at most seq (min_arrived caps it
     * there), so seq - done is its distance behind. */
    if (seq - s->done < MCA_COLL_LOOM_SHM_SYM_DEPTH) {
        return true;
    }
    s->done = min_arrived(s, seq);
    return seq - s->done < MCA_COLL_LOOM_SHM_SYM_DEPTH;
}

void mca_coll_loom_shm_small_enter(mca_coll_loom_shm_t *s, uint32_t seq, const mca_coll_loom_shm_wait_t *w)
{
    if (mca_coll_loom_shm_small_free(s, seq)) {
        return;
    }
    mca_coll_loom_shm_wait_arrived(s, seq - (MCA_COLL_LOOM_SHM_SYM_DEPTH - 1u), w);
    s->done = min_arrived(s, seq);
}

void mca_coll_loom_shm_sym_arrive(mca_coll_loom_shm_t *s, uint32_t seq)
{
    /* the data is visible to whoever sees the flag; arrive[me] keeps its meaning
     * (done with every earlier call) for the coordinated calls that follow */
    __atomic_store_n(sym_flag(s, s->me, seq), seq, __ATOMIC_SEQ_CST);
    s->sym_fresh[seq & (MCA_COLL_LOOM_SHM_SYM_DEPTH - 1u)] = seq;
    mca_coll_loom_shm_arrive(s, seq); /* seq_cst: ordered before its look at the bell */
}

#define LOOM_SHM_SYM_REFRESH (1u << 30)

void mca_coll_loom_shm_sym_refresh(mca_coll_loom_shm_t *s, uint32_t seq)
{
    /* one flag per call, each in turn: a flag is looked at every D calls, long before
     * 2^31 */
    const uint32_t p = seq & (MCA_COLL_LOOM_SHM_SYM_DEPTH - 1u);

    if (__builtin_expect(seq - s->sym_fresh[p] >= LOOM_SHM_SYM_REFRESH, 0)) {
        /* published by this rank's next arrive (seq_cst) */
        __atomic_store_n(sym_flag(s, s->me, p), seq - 2u, __ATOMIC_RELAXED);
        s->sym_fresh[p] = seq - 2u;
    }
    if (__builtin_expect(seq - s->done >= LOOM_SHM_SYM_REFRESH, 0)) {
        /* claims nothing: still too far behind for small_enter, which looks again */
        s->done = seq - LOOM_SHM_SYM_REFRESH;
    }
}

typedef struct {
    const mca_coll_loom_shm_t *s;
    uint32_t seq;
    int skip;
} loom_sym_wait_t;

static bool all_sym(const void *ctx)
{
    const loom_sym_wait_t *a = ctx;
    for (int i = 0; i < a->s->n; ++i) {
        if (i != a->skip &&
            !mca_coll_loom_shm_reached(__atomic_load_n(sym_flag(a->s, i, a->seq), __ATOMIC_SEQ_CST), a->seq)) {
            return false;
        }
    }
    return true;
}

void mca_coll_loom_shm_sym_wait(mca_coll_loom_shm_t *s, uint32_t seq, int skip, const mca_coll_loom_shm_wait_t *w)
{
    const loom_sym_wait_t a = {s, seq, skip};
    wait_until(all_sym, &a, s->bell, s->bell_waiters, w);
    /* every other rank wrote its slot of call seq, and this one is in it: all are done
     * with the earlier calls */
    s->done = seq;
}

bool mca_coll_loom_shm_sym_all(mca_coll_loom_shm_t *s, uint32_t seq)
{
    const loom_sym_wait_t a = {s, seq, -1};
    if (!all_sym(&a)) {
        return false;
    }
    s->done = seq; /* as sym_wait */
    return true;
}

bool mca_coll_loom_shm_all_arrived(const mca_coll_loom_shm_t *s, uint32_t seq)
{
    const loom_arrivals_t a = {s, seq};
    return all_arrived(&a);
}

bool mca_coll_loom_shm_released(const mca_coll_loom_shm_t *s, uint32_t seq)
{
    return mca_coll_loom_shm_reached(
        __atomic_load_n(s->release[seq & (MCA_COLL_LOOM_SHM_AREAS - 1u)], __ATOMIC_SEQ_CST), seq);
}

bool mca_coll_loom_shm_sym_ready(const mca_coll_loom_shm_t *s, int i, uint32_t seq)
{
    return mca_coll_loom_shm_reached(__atomic_load_n(sym_flag(s, i, seq), __ATOMIC_SEQ_CST), seq);
}

void mca_coll_loom_shm_wait_release(mca_coll_loom_shm_t *s, uint32_t seq,
                                    const mca_coll_loom_shm_wait_t *w)
{
    mca_coll_loom_shm_wait(s->release[seq & (MCA_COLL_LOOM_SHM_AREAS - 1u)], s->release_waiters, seq, w);
}
