/*
 * Unit test of the per-node shared segment (opal/loom/loom_shm.h), without MPI: n
 * forked processes run a long random sequence of the call kinds the component builds
 * on it (gather-and-release like allreduce, pure bcast, also in runs from one root,
 * reduce to a varying coordinator through the slots and through the sym slots, also in
 * runs to one root where the contributors run ahead, barrier), bcasts through the small
 * areas (also in runs from one root, with readers that lag), and the symmetric
 * allreduce (every rank reads every rank's sym slot; no coordinator), with
 * coordinators that change from call to call, once with spinning waits and once with
 * every wait sleeping on its futex.  Every value read is checked against the value the
 * writer must have written for that call, and so is the status word beside every slot
 * and area read (which must be the one of the data's call); a lost wake or a protocol
 * hole shows up as a wrong value or as the alarm firing.  One run starts at call 2^31 + 1000 with every
 * sym flag last written 2^31 - 300 calls before and makes no call through the sym slots
 * in its first 400: without the refresh of stale flags (sym_refresh) they look reached
 * after 300 calls, and the calls read stale slots.
 *
 * Also: attach refuses a segment of another shape or a missing file, create fails
 * cleanly in a missing directory, and no file is left behind; and mca_coll_loom_copy
 * (loom_copy.h, the copy that avoids memcpy's slow case) copies every byte and nothing
 * else at every length and relative offset around the cases it treats differently.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "opal/loom/loom_copy.h"
#include "opal/loom/loom_shm.h"
#include "test/unit/unit_check.h"

#define SLOT 256 /* bytes per slot: 32 uint64 values */
#define NVAL (SLOT / 8)

#define NSYM (MCA_COLL_LOOM_SHM_SYM_BYTES / 8)
#define NSMALL (MCA_COLL_LOOM_SHM_SMALL_BYTES / 8)

enum { K_ALLREDUCE, K_BCAST, K_REDUCE, K_BARRIER, K_SYM, K_SREDUCE, K_SBCAST, K_NBSYM, K_NUM };

/* what rank r contributes to call seq, element j */
static uint64_t val(int r, uint32_t seq, int j)
{
    return (uint64_t) seq * 1000003u + (uint64_t) r * 7919u + (uint64_t) j;
}

/* the status rank r writes beside its data of call seq (the component writes an error
 * code, 0 when all went well): a value of that call alone, so that a status read from
 * another call than the data's shows */
static int32_t tag(int r, uint32_t seq)
{
    return (int32_t) (seq ^ ((uint32_t) r << 24));
}

static uint64_t rng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void yield_progress(void)
{
    (void) sched_yield();
}

/* now and then a reader stays away between seeing data and reading it, as a coordinator
 * in its network phase does (the rank's own draws: the call sequence stays common) */
static void lag(uint64_t *x, int me)
{
    uint64_t y = *x ^ ((uint64_t) (me + 1) * 0x9e3779b97f4a7c15ull);
    y = rng(&y);
    if (0 == y % 8) {
        (void) sched_yield();
    }
    if (0 == y % 61) {
        usleep(50);
    }
}

/* the component's sym_contribute: this rank's nvals values of call seq in its sym slot */
static void sym_contribute(mca_coll_loom_shm_t *s, uint32_t seq, int nvals, const mca_coll_loom_shm_wait_t *w)
{
    uint64_t *ms = (uint64_t *) mca_coll_loom_shm_sym_slot(s, s->me, seq);
    mca_coll_loom_shm_small_enter(s, seq, w);
    for (int j = 0; j < nvals; ++j) {
        ms[j] = val(s->me, seq, j);
    }
    mca_coll_loom_shm_set_status((char *) ms, tag(s->me, seq));
    mca_coll_loom_shm_sym_arrive(s, seq);
}

/* wrong values in the sym slots of call seq of every rank but `skip` */
static int sym_check(const mca_coll_loom_shm_t *s, uint32_t seq, int skip, int nvals)
{
    int bad = 0;
    for (int r = 0; r < s->n; ++r) {
        const uint64_t *v = (const uint64_t *) mca_coll_loom_shm_sym_slot(s, r, seq);
        for (int j = 0; r != skip && j < nvals; ++j) {
            bad += v[j] != val(r, seq, j);
        }
        bad += r != skip && mca_coll_loom_shm_status((const char *) v) != tag(r, seq);
    }
    return bad;
}

/* The component's non-blocking allreduce (mca_coll_loom_shm_nb_allreduce): calls seq ..
 * seq + b - 1 all started, then moved on in turn without waiting (a yield where none
 * can move), each posting its contribution once the one before it completed here.  A
 * symmetric call posts once its small slot is free and completes once every rank's flag
 * is there (index 0: after release >= its number - 1, then releasing it); a coordinated
 * one posts after release >= its number - 1, index 0 combines once all arrived and
 * releases it, the others read the result then.  Returns the wrong values seen. */
static int nb_batch(mca_coll_loom_shm_t *s, uint32_t seq, int b, uint64_t *x)
{
    int bad = 0;

    for (int next = 0; next < b; ++next) {
        const uint32_t q = seq + (uint32_t) next;
        bool posted = false;
        if (0 != ((q * 2654435761u) & 0x10000u)) {
            /* a coordinated one (above 256 B: index 0 combines) */
            uint64_t *mine = (uint64_t *) mca_coll_loom_shm_slot(s, s->me);
            uint64_t *area = (uint64_t *) mca_coll_loom_shm_area(s, q);
            mca_coll_loom_shm_sym_refresh(s, q);
            while (!mca_coll_loom_shm_released(s, q - 1u)) {
                (void) sched_yield();
            }
            for (int j = 0; j < NVAL; ++j) {
                mine[j] = val(s->me, q, j);
            }
            mca_coll_loom_shm_set_status((char *) mine, tag(s->me, q));
            mca_coll_loom_shm_arrive(s, q);
            if (0 == s->me) {
                while (!mca_coll_loom_shm_all_arrived(s, q)) {
                    (void) sched_yield();
                }
                for (int j = 0; j < NVAL; ++j) {
                    uint64_t sum = 0;
                    for (int r = 0; r < s->n; ++r) {
                        uint64_t v = ((uint64_t *) mca_coll_loom_shm_slot(s, r))[j];
                        bad += v != val(r, q, j);
                        sum += v;
                    }
                    area[j] = sum;
                }
                mca_coll_loom_shm_set_status((char *) area, tag(0, q));
                mca_coll_loom_shm_release(s, q);
            } else {
                while (!mca_coll_loom_shm_released(s, q)) {
                    (void) sched_yield();
                }
                lag(x, s->me);
                for (int j = 0; j < NVAL; ++j) {
                    uint64_t want = 0;
                    for (int r = 0; r < s->n; ++r) {
                        want += val(r, q, j);
                    }
                    bad += area[j] != want;
                }
                bad += mca_coll_loom_shm_status((const char *) area) != tag(0, q);
            }
            continue;
        }
        while (!posted) {
            mca_coll_loom_shm_sym_refresh(s, q);
            if (mca_coll_loom_shm_small_free(s, q)) {
                uint64_t *ms = (uint64_t *) mca_coll_loom_shm_sym_slot(s, s->me, q);
                for (int j = 0; j < NSYM; ++j) {
                    ms[j] = val(s->me, q, j);
                }
                mca_coll_loom_shm_set_status((char *) ms, tag(s->me, q));
                mca_coll_loom_shm_sym_arrive(s, q);
                posted = true;
            } else {
                (void) sched_yield();
            }
        }
        while (!mca_coll_loom_shm_sym_all(s, q) || (0 == s->me && !mca_coll_loom_shm_released(s, q - 1u))) {
            (void) sched_yield();
        }
        lag(x, s->me);
        bad += sym_check(s, q, -1, NSYM);
        if (0 == s->me) {
            mca_coll_loom_shm_release(s, q);
        }
    }
    return bad;
}

/* one process: returns the number of wrong values seen */
static int run_rank(const char *path, int n, int me, int calls, int spin, uint32_t seq0, uint32_t stale)
{
    mca_coll_loom_shm_t s;
    mca_coll_loom_shm_wait_t w = {.spin = spin, .sleep_us = 30000000, .progress = yield_progress};
    uint64_t x = 0x9e3779b97f4a7c15ull; /* the same sequence of calls on every rank */
    const char *what = "";
    int err = 0, bad = 0;

    if (0 != mca_coll_loom_shm_attach(&s, path, n, me, SLOT, &err, &what)) {
        fprintf(stderr, "rank %d: attach: %s: %s\n", me, what, strerror(err));
        return 1000;
    }
    for (uint32_t p = 0; 0 != seq0 && p < MCA_COLL_LOOM_SHM_SYM_DEPTH; ++p) {
        s.sym_fresh[p] = stale;
    }
    if (0 != seq0) {
        /* as if every rank was last known done 2^32 - 420 calls ago: without its refresh
         * `done` looks 0-7 calls behind at calls 420-427, and small_enter does not wait */
        s.done = seq0 + 420u;
    }
    int burst = 0, burst_coord = 0, burst_kind = K_BCAST;

    for (uint32_t k = 1; k <= (uint32_t) calls; ++k) {
        const uint32_t seq = seq0 + k;
        mca_coll_loom_shm_sym_refresh(&s, seq); /* the component's next_call */
        int kind = (int) (rng(&x) % K_NUM);
        int coord = (K_ALLREDUCE == kind || K_BARRIER == kind) ? 0 : (int) (rng(&x) % (uint64_t) n);

        /* now and then a run of bcasts from one root, where the coordinator can run
         * ahead of its readers as far as the protocol lets it, or of small reduces to
         * one root, where the contributors can run ahead of it */
        if (0 == burst && 0 == rng(&x) % 16) {
            burst = 8 + (int) (rng(&x) % 56); /* past the small areas' depth too */
            burst_coord = coord;
            burst_kind = (int) (rng(&x) % 3);
            burst_kind = 0 == burst_kind ? K_BCAST : 1 == burst_kind ? K_SREDUCE : K_SBCAST;
        }
        if (burst > 0) {
            --burst;
            kind = burst_kind;
            coord = burst_coord;
        }
        if (0 != seq0 && k <= 400 && (K_SYM == kind || K_SREDUCE == kind || K_SBCAST == kind || K_NBSYM == kind)) {
            kind = K_ALLREDUCE; /* the stale flags stay unwritten past the wrap */
        }
        if (K_NBSYM == kind) {
            /* a batch of non-blocking calls, more than the sym slots now and then */
            int b = 1 + (int) (rng(&x) % 48);
            if (k + (uint32_t) b - 1 > (uint32_t) calls) {
                b = (int) ((uint32_t) calls - k + 1);
            }
            bad += nb_batch(&s, seq, b, &x);
            k += (uint32_t) b - 1;
            continue;
        }
        uint64_t *mine = (uint64_t *) mca_coll_loom_shm_slot(&s, me);
        uint64_t *area = (uint64_t *) mca_coll_loom_shm_area(&s, seq);

        if (K_SYM == kind) {
            /* the component's sym_gather / sym_release */
            sym_contribute(&s, seq, NSYM, &w);
            mca_coll_loom_shm_sym_wait(&s, seq, -1, &w);
            lag(&x, me); /* a reader that is slow to read: a slot reused too early shows */
            bad += sym_check(&s, seq, -1, NSYM);
            if (0 == me) {
                mca_coll_loom_shm_enter(&s, seq, &w);
                mca_coll_loom_shm_release(&s, seq);
            }
            continue;
        }
        if (K_SBCAST == kind) {
            /* the component's small bcast: readers do not wait for the previous call */
            uint64_t *sa = (uint64_t *) mca_coll_loom_shm_small_area(&s, seq);
            if (me == coord) {
                mca_coll_loom_shm_enter(&s, seq, &w);
                mca_coll_loom_shm_arrive(&s, seq);
                mca_coll_loom_shm_small_enter(&s, seq, &w);
                for (int j = 0; j < NSMALL; ++j) {
                    sa[j] = val(coord, seq, j);
                }
                mca_coll_loom_shm_set_status((char *) sa, tag(coord, seq));
                mca_coll_loom_shm_release(&s, seq);
            } else {
                mca_coll_loom_shm_arrive(&s, seq);
                mca_coll_loom_shm_wait_release(&s, seq, &w);
                lag(&x, me);
                for (int j = 0; j < NSMALL; ++j) {
                    bad += sa[j] != val(coord, seq, j);
                }
                bad += mca_coll_loom_shm_status((const char *) sa) != tag(coord, seq);
            }
            continue;
        }
        if (K_SREDUCE == kind) {
            /* the component's small reduce: contributors leave at once */
            if (me != coord) {
                sym_contribute(&s, seq, NSMALL, &w);
                continue;
            }
            mca_coll_loom_shm_enter(&s, seq, &w);
            mca_coll_loom_shm_arrive(&s, seq);
            mca_coll_loom_shm_sym_wait(&s, seq, me, &w);
            lag(&x, me);
            bad += sym_check(&s, seq, me, NSMALL);
            mca_coll_loom_shm_release(&s, seq);
            continue;
        }
        mca_coll_loom_shm_enter(&s, seq, &w);
        if (K_ALLREDUCE == kind || K_REDUCE == kind) {
            for (int j = 0; j < NVAL; ++j) {
                mine[j] = val(me, seq, j);
            }
            mca_coll_loom_shm_set_status((char *) mine, tag(me, seq));
        }
        mca_coll_loom_shm_arrive(&s, seq);

        if (me == coord) {
            uint64_t sum[NVAL];
            mca_coll_loom_shm_wait_arrived(&s, K_BCAST == kind ? seq - (MCA_COLL_LOOM_SHM_AREAS - 1u) : seq, &w);
            if (K_ALLREDUCE == kind || K_REDUCE == kind) {
                for (int j = 0; j < NVAL; ++j) {
                    sum[j] = 0;
                    for (int r = 0; r < n; ++r) {
                        uint64_t v = ((uint64_t *) mca_coll_loom_shm_slot(&s, r))[j];
                        bad += v != val(r, seq, j);
                        sum[j] += v;
                    }
                }
                for (int r = 0; r < n; ++r) {
                    bad += mca_coll_loom_shm_status(mca_coll_loom_shm_slot(&s, r)) != tag(r, seq);
                }
            }
            if (K_ALLREDUCE == kind) {
                memcpy(area, sum, sizeof(sum));
            } else if (K_BCAST == kind) {
                for (int j = 0; j < NVAL; ++j) {
                    area[j] = val(coord, seq, j);
                }
            }
            if (K_REDUCE != kind) { /* a barrier's status too: its readers return it */
                mca_coll_loom_shm_set_status((char *) area, tag(coord, seq));
            }
            mca_coll_loom_shm_release(&s, seq);
        } else if (K_REDUCE != kind) {
            mca_coll_loom_shm_wait_release(&s, seq, &w);
            lag(&x, me);
            bad += mca_coll_loom_shm_status((const char *) area) != tag(coord, seq);
            for (int j = 0; K_ALLREDUCE == kind && j < NVAL; ++j) {
                uint64_t want = 0;
                for (int r = 0; r < n; ++r) {
                    want += val(r, seq, j);
                }
                bad += area[j] != want;
            }
            for (int j = 0; K_BCAST == kind && j < NVAL; ++j) {
                bad += area[j] != val(coord, seq, j);
            }
        }
        /* the non-coordinators of a reduce leave at once, as MPI_Reduce's do */
    }
    mca_coll_loom_shm_detach(&s);
    return bad;
}

static void run_from(int n, int calls, int spin, uint32_t seq0, uint32_t stale);

static void run(int n, int calls, int spin)
{
    run_from(n, calls, spin, 0, 0);
}

/* n ranks, `calls` calls from call seq0 + 1; seq0 > 0: the counters as after seq0
 * calls, the sym flags as last written at call `stale` */
static void run_from(int n, int calls, int spin, uint32_t seq0, uint32_t stale)
{
    char path[128];
    mca_coll_loom_shm_t s;
    const char *what = "";
    int err = 0, bad = 0, rc;
    pid_t pids[64];

    snprintf(path, sizeof(path), "/tmp/loom-test-shm-%d-%d", (int) getpid(), n);
    rc = mca_coll_loom_shm_create(&s, path, n, SLOT, &err, &what);
    CHECK(0 == rc, "create %s: %s: %s", path, what, strerror(err));
    if (0 != rc) {
        return;
    }
    if (0 != seq0) {
        for (int r = 0; r < n; ++r) {
            *mca_coll_loom_shm_arrive_word(&s, r) = seq0;
            for (uint32_t p = 0; p < MCA_COLL_LOOM_SHM_SYM_DEPTH; ++p) {
                *(uint32_t *) (mca_coll_loom_shm_sym_slot(&s, r, p) - MCA_COLL_LOOM_SHM_HEAD) = stale;
            }
        }
        for (uint32_t p = 0; p < MCA_COLL_LOOM_SHM_AREAS; ++p) {
            *s.release[(seq0 - p) & (MCA_COLL_LOOM_SHM_AREAS - 1u)] = seq0 - p;
        }
    }
    for (int r = 1; r < n; ++r) {
        pids[r] = fork();
        if (0 == pids[r]) {
            alarm(120);
            _exit(run_rank(path, n, r, calls, spin, seq0, stale) > 0 ? 1 : 0);
        }
    }
    alarm(120);
    /* rank 0 is this process, on the creator's mapping */
    mca_coll_loom_shm_detach(&s);
    bad = run_rank(path, n, 0, calls, spin, seq0, stale);
    alarm(0);
    for (int r = 1; r < n; ++r) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        bad += !(WIFEXITED(st) && 0 == WEXITSTATUS(st));
    }
    CHECK(0 == bad, "n=%d spin=%d from call %u: %d wrong values or failed ranks", n, spin, (unsigned) seq0,
          bad);
    CHECK(0 == mca_coll_loom_shm_unlink(path), "unlink %s", path);
    CHECK(0 != access(path, F_OK), "%s left behind", path);
}

static void test_copy(void)
{
    const size_t lens[] = {0, 1, 63, 64, 65, 2047, 2048, 2049, 4096, 4097, 32768, 32831, 70001,
                           (1u << 20) - 1, 1u << 20, (1u << 20) + 1};
    const int offs[] = {0, 1, 15, 16, 17, 31, 32, 63, 64, 65, 2048, 4031, 4032, 4080, 4095};
    const size_t maxlen = (1u << 20) + 1;
    unsigned char *src = malloc(maxlen + 8192), *dst = malloc(maxlen + 2 * 8192);
    int bad = 0, aliased = 0;

    if (NULL == src || NULL == dst) {
        CHECK(0, "out of memory");
        free(src);
        free(dst);
        return;
    }
    for (size_t i = 0; i < maxlen + 8192; ++i) {
        src[i] = (unsigned char) (i * 131u + 7u);
    }
    /* src at a page offset of 0 or 100; dst `off` bytes after src modulo 4 KiB */
    for (int so = 0; so <= 100; so += 100) {
        const unsigned char *s = (const unsigned char *) (((uintptr_t) src + 4095) & ~(uintptr_t) 4095) + so;
        for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); ++o) {
            unsigned char *base = (unsigned char *) (((uintptr_t) dst + 4095) & ~(uintptr_t) 4095) + 4096;
            unsigned char *d = base + (((uintptr_t) s + (uintptr_t) offs[o]) & 4095);
            for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); ++l) {
                const size_t n = lens[l];
                memset(d - 64, 0xEE, n + 128);
                aliased += mca_coll_loom_copy_aliases(d, s, n);
                mca_coll_loom_copy(d, s, n);
                bad += 0 != memcmp(d, s, n);
                for (int g = 1; g <= 64; ++g) {
                    bad += 0xEE != d[-g] || 0xEE != d[n + (size_t) g - 1];
                }
            }
        }
    }
    CHECK(0 == bad, "mca_coll_loom_copy: %d wrong copies or guard bytes", bad);
    /* the block loop ran: 7 offsets of 1-63 bytes, 9 lengths of 2 KiB - 1 MiB, 2 source offsets */
    CHECK(aliased == 2 * 7 * 9, "mca_coll_loom_copy took the block loop %d times, expected %d", aliased,
          2 * 7 * 9);
    free(src);
    free(dst);
}

int main(void)
{
    mca_coll_loom_shm_t s, t;
    const char *what = "";
    char path[128];
    int err = 0;

    /* failures are reported, not crashed on */
    CHECK(-1 == mca_coll_loom_shm_create(&s, "/nonexistent-loom-dir/seg", 4, SLOT, &err, &what) &&
              ENOENT == err,
          "create in a missing directory: err %d (%s)", err, what);
    CHECK(NULL == s.base, "failed create leaves a mapping");
    CHECK(-1 == mca_coll_loom_shm_attach(&s, "/tmp/loom-test-shm-missing", 4, 1, SLOT, &err, &what) &&
              ENOENT == err,
          "attach to a missing file: err %d (%s)", err, what);
    snprintf(path, sizeof(path), "/tmp/loom-test-shm-%d-shape", (int) getpid());
    CHECK(0 == mca_coll_loom_shm_create(&s, path, 4, SLOT, &err, &what), "create: %s", what);
    CHECK(-1 == mca_coll_loom_shm_attach(&t, path, 5, 1, SLOT, &err, &what) && EINVAL == err,
          "attach with another rank count");
    CHECK(-1 == mca_coll_loom_shm_attach(&t, path, 4, 1, SLOT * 2, &err, &what) && EINVAL == err,
          "attach with another slot size");
    CHECK(0 == mca_coll_loom_shm_attach(&t, path, 4, 3, SLOT, &err, &what), "attach: %s", what);
    CHECK(mca_coll_loom_shm_slot(&t, 3) + SLOT <= t.base + t.bytes, "last slot inside the mapping");
    /* a flag and the first bytes of its data share one cache line; data 16-byte aligned;
     * slots, areas and flag words of different ranks never share a line */
    for (int i = 0; i < 4; ++i) {
        uintptr_t flag = (uintptr_t) mca_coll_loom_shm_arrive_word(&t, i);
        uintptr_t data = (uintptr_t) mca_coll_loom_shm_slot(&t, i);
        CHECK(0 == flag % 64 && data / 64 == flag / 64 && 0 == data % 16, "slot %d: arrive word at %lu, data at %lu",
              i, (unsigned long) (flag - (uintptr_t) t.base), (unsigned long) (data - (uintptr_t) t.base));
        CHECK(i == 0 || (uintptr_t) mca_coll_loom_shm_slot(&t, i - 1) + SLOT <= flag, "slot %d overlaps slot %d",
              i - 1, i);
    }
    /* area p holds the data of calls p, p + AREAS, ...: release word and data share its
     * first line; areas do not overlap each other, the slots, or the waiters word's line */
    for (uint32_t p = 0; p < MCA_COLL_LOOM_SHM_AREAS; ++p) {
        uintptr_t flag = (uintptr_t) t.release[p], data = (uintptr_t) mca_coll_loom_shm_area(&t, p);
        CHECK(0 == flag % 64 && data / 64 == flag / 64 && 0 == data % 16, "area %u: release word and data",
              (unsigned) p);
        CHECK(data + SLOT <= (uintptr_t) mca_coll_loom_shm_arrive_word(&t, 0) &&
                  (p + 1 == MCA_COLL_LOOM_SHM_AREAS || data + SLOT <= (uintptr_t) t.release[p + 1]),
              "area %u overlaps the next", (unsigned) p);
        CHECK((uintptr_t) t.release_waiters / 64 != flag / 64, "the waiters word shares area %u's line",
              (unsigned) p);
        CHECK(mca_coll_loom_shm_area(&t, p + MCA_COLL_LOOM_SHM_AREAS) == (char *) data,
              "call %u does not reuse area %u", (unsigned) (p + MCA_COLL_LOOM_SHM_AREAS), (unsigned) p);
    }
    /* sym slot p of rank i holds calls p, p + SYM_DEPTH, ...: flag and data share its first
     * line, no two overlap, the last ends inside the mapping */
    for (int i = 0; i < 4; ++i) {
        for (uint32_t p = 0; p < MCA_COLL_LOOM_SHM_SYM_DEPTH; ++p) {
            uintptr_t data = (uintptr_t) mca_coll_loom_shm_sym_slot(&t, i, p);
            uintptr_t flag = data - MCA_COLL_LOOM_SHM_HEAD;
            const bool last = p + 1 == MCA_COLL_LOOM_SHM_SYM_DEPTH;
            uintptr_t next = i == 3 && last ? (uintptr_t) t.base + t.bytes + MCA_COLL_LOOM_SHM_HEAD
                                            : (uintptr_t) mca_coll_loom_shm_sym_slot(&t, last ? i + 1 : i,
                                                                                     (p + 1) % MCA_COLL_LOOM_SHM_SYM_DEPTH);
            CHECK(0 == flag % 64 && 0 == data % 16 && flag >= (uintptr_t) mca_coll_loom_shm_slot(&t, 3) + SLOT,
                  "sym slot %d/%u: flag at %lu", i, (unsigned) p, (unsigned long) (flag - (uintptr_t) t.base));
            CHECK(data + MCA_COLL_LOOM_SHM_SMALL_BYTES + MCA_COLL_LOOM_SHM_HEAD <= next,
                  "sym slot %d/%u overlaps the next or leaves the mapping", i, (unsigned) p);
            CHECK(mca_coll_loom_shm_sym_slot(&t, i, p + MCA_COLL_LOOM_SHM_SYM_DEPTH) == (char *) data &&
                      mca_coll_loom_shm_sym_slot(&t, i, p + 1) != (char *) data,
                  "sym slot %d/%u: not taken by the calls in turn", i, (unsigned) p);
        }
    }
    /* small area p holds calls p, p + SYM_DEPTH, ...; they follow the sym slots, do not
     * overlap, and the last ends inside the mapping */
    for (uint32_t p = 0; p < MCA_COLL_LOOM_SHM_SYM_DEPTH; ++p) {
        uintptr_t data = (uintptr_t) mca_coll_loom_shm_small_area(&t, p);
        uintptr_t next = p + 1 == MCA_COLL_LOOM_SHM_SYM_DEPTH ? (uintptr_t) t.base + t.bytes + MCA_COLL_LOOM_SHM_HEAD
                                                                : (uintptr_t) mca_coll_loom_shm_small_area(&t, p + 1);
        CHECK(0 == data % 16 && data > (uintptr_t) mca_coll_loom_shm_sym_slot(&t, 3, MCA_COLL_LOOM_SHM_SYM_DEPTH - 1) +
                                               MCA_COLL_LOOM_SHM_SMALL_BYTES - 1,
              "small area %u at %lu", (unsigned) p, (unsigned long) (data - (uintptr_t) t.base));
        CHECK(data + MCA_COLL_LOOM_SHM_SMALL_BYTES + MCA_COLL_LOOM_SHM_HEAD <= next,
              "small area %u overlaps the next or leaves the mapping", (unsigned) p);
        CHECK(mca_coll_loom_shm_small_area(&t, p + MCA_COLL_LOOM_SHM_SYM_DEPTH) == (char *) data,
              "small area %u: not taken by the calls in turn", (unsigned) p);
    }
    mca_coll_loom_shm_detach(&t);
    mca_coll_loom_shm_detach(&s);
    mca_coll_loom_shm_detach(&s); /* idempotent */
    /* a stale file at the path (a dead job) is replaced */
    CHECK(0 == mca_coll_loom_shm_create(&s, path, 2, SLOT, &err, &what), "create over a stale file: %s",
          what);
    mca_coll_loom_shm_detach(&s);
    CHECK(0 == mca_coll_loom_shm_unlink(path), "unlink");

    /* `done` last learnt 2^32 - 3 calls ago reads as 3 calls ahead, and 0-7 behind a few
     * calls later: the refresh at every call must keep small_enter looking at the arrive
     * words instead (deterministic; the runs below hit this only by chance) */
    CHECK(0 == mca_coll_loom_shm_create(&s, path, 1, SLOT, &err, &what), "create: %s", what);
    {
        int close = 0;
        s.done = 5000u + 3u;
        for (uint32_t seq = 5001u; seq < 5020u; ++seq) {
            mca_coll_loom_shm_sym_refresh(&s, seq);
            close += seq - s.done < MCA_COLL_LOOM_SHM_SYM_DEPTH;
        }
        CHECK(0 == close, "a 2^32-calls-old `done` looked recent in %d calls", close);
    }
    mca_coll_loom_shm_detach(&s);
    CHECK(0 == mca_coll_loom_shm_unlink(path), "unlink");

    /* counters compare modulo 2^32 */
    CHECK(mca_coll_loom_shm_reached(5, 5) && mca_coll_loom_shm_reached(6, 5) &&
              !mca_coll_loom_shm_reached(4, 5) && mca_coll_loom_shm_reached(2, 0xfffffffeu) &&
              !mca_coll_loom_shm_reached(0xfffffffeu, 2),
          "wrapping comparison");

    run(1, 2000, 100);
    run(2, 20000, 100);
    run(3, 20000, 4);
    run(5, 10000, 100);
    run(8, 5000, 4);
    run(4, 3000, 0); /* every wait sleeps */
    run(7, 2000, 0);
    /* sym flags 2^31 - 300 calls old: stale-looking-reached after 300 calls */
    run_from(4, 3000, 100, 0x80000000u + 1000u, 1300u);

    test_copy();
    printf("test_shm: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
