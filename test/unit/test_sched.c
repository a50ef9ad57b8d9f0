/*
 * Unit test (no MPI): every registered algorithm's schedule is executed symbolically
 * for every collective it serves, every P in 1..PMAX, segment counts 1..3, every knob
 * n in its first eight values, every root (four of them above P = 40), each kind of op,
 * with and without MPI_IN_PLACE where the collective has it, and must deliver what the
 * collective promises (loom_verify.h).  Refusals are checked against an independent
 * derivation of each restriction, and round counts against the paper.  Hand-written
 * builders for the newer collectives, correct and deliberately broken, show that the
 * checker accepts the one and rejects the others.  See "Coverage" below for what is
 * thinned out above P = 64 and P = 128 to keep the run short.  Every verification
 * also runs the schedules as dependency graphs under adversarial orders (graph mode,
 * loom_verify.h: two orders by default, one in the sweep above P = 64); a dedicated
 * section runs many orders at small sizes, and deliberately corrupted graphs show
 * that graph mode can fail where the rounds pass.
 *
 * Usage: test_sched [PMAX] [--shard K/N]   (default 300; shard: the sweep's K-th of N parts of
 *                                 the (algorithm, collective) pairs, the other sections in
 *                                 shard 0 and the node maps' in shard N-1, so that `make check`
 *                                 runs two at once on two cores)
 *        test_sched --adaptable   prints, for n = 1..8, the P <= 300 that the adapted
 *                                 dissemination allreduce cannot serve
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/loom/loom_decide.h"
#include "opal/loom/loom_registry.h"
#include "opal/loom/loom_topo.h"
#include "opal/loom/loom_verify.h"

#include "unit_check.h"

#define C  MCA_COLL_LOOM_CALL_COMMUTATIVE
#define E  MCA_COLL_LOOM_CALL_EXACT
#define I  MCA_COLL_LOOM_CALL_IDEMPOTENT
#define V  MCA_COLL_LOOM_CALL_INVERTIBLE

static const struct {
    const char *name;
    unsigned call;
} kinds[] = {
    {"int sum (invertible)", C | E | V},
    {"int prod (no inverse)", C | E},
    {"max (idempotent)", C | E | I},
    {"double sum (inexact)", C},
    {"non-commutative user op", 0},
};

/* Independent check of the adaption's existence: grow a chain of contributions
 * round by round and collect its prefix sizes (the data boundaries), then look for
 * s full senders' worth of data, a sender prefix L and a receiver take-out D with
 * s*m + L - D = P, the last round's peers distinct and different from the receiver. */
static int smallest_k(int n, int P)
{
    int k = 0;
    for (long c = 1; c < P; c *= n + 1) {
        k++;
    }
    return k;
}

static bool adaptable(int n, int P)
{
    int k = smallest_k(n, P), m = 1, nb = 0;
    static int bounds[4096];

    if (P <= 1) {
        return true;
    }
    for (int l = 1; l < k; ++l) {
        m *= n + 1;
    }
    bounds[nb++] = 1;
    for (int l = 1, size = 1, box = 1; l < k; ++l, box *= n + 1) {
        for (int j = 1; j <= n; ++j) {
            size += box;
            bounds[nb++] = size;
        }
    }
    for (int s = 1; s <= n; ++s) {
        for (int a = 0; a < nb; ++a) {
            for (int b = -1; b < nb; ++b) {
                int L = bounds[a], D = b < 0 ? 0 : bounds[b];
                bool ok = L <= m && D < m && (long) s * m + L - D == P;
                for (int j = 1; ok && j <= s; ++j) {
                    ok = 0 != ((long) j * m) % P;
                    for (int i = 1; ok && i < j; ++i) {
                        ok = ((long) i * m) % P != ((long) j * m) % P;
                    }
                }
                if (ok) {
                    return true;
                }
            }
        }
    }
    return false;
}

/* 1: the algorithm must refuse the call, 0: it must accept it, -1: only its own
 * can_serve() knows (an algorithm this test has no independent derivation for). */
static int expect_refusal(int alg, mca_coll_loom_coll_t coll, int P, int n, unsigned call)
{
    const mca_coll_loom_alg_t *a = mca_coll_loom_algs[alg];
    if ((a->needs & MCA_COLL_LOOM_NEEDS_COMMUTATIVE) && !(call & C)) {
        return 1;
    }
    if ((a->needs & MCA_COLL_LOOM_NEEDS_EXACT) && !(call & E)) {
        return 1;
    }
    if (!(call & C) && !mca_coll_loom_alg_keeps_order(alg, coll)) {
        return 1;
    }
    if (0 == strcmp(a->name, "dissemination") && MCA_COLL_LOOM_COLL_ALLREDUCE == coll && !(call & I)) {
        return !adaptable(n, P);
    }
    return NULL == a->can_serve || 0 == strcmp(a->name, "dissemination") ? 0 : -1;
}

/* Rounds the paper gives, or -1 where this test does not know them. */
static int expected_rounds(const char *name, mca_coll_loom_coll_t coll, int P, int n, int segs)
{
    if (0 == strcmp(name, "bruck") && (MCA_COLL_LOOM_COLL_ALLGATHER == coll || MCA_COLL_LOOM_COLL_ALLTOALL == coll)) {
        return P <= 1 ? 0 : smallest_k(n, P); /* the concatenation: ceil(log_{n+1} P) */
    }
    if ((MCA_COLL_LOOM_COLL_ALLTOALL == coll || MCA_COLL_LOOM_COLL_ALLTOALLV == coll) &&
        (0 == strcmp(name, "pairwise") || 0 == strcmp(name, "direct"))) {
        /* P-1 exchange steps, one per round (pairwise) or n per round (direct, 0: all) */
        const int w = 0 == strcmp(name, "pairwise") ? 1 : (0 == n || n > P - 1 ? P - 1 : n);
        return P <= 1 ? 0 : (P - 1 + w - 1) / w;
    }
    if (0 == strcmp(name, "recursive_doubling")) {
        int lg = 0;
        while ((1 << lg) < P) {
            lg++;
        }
        return lg; /* ceil(log2 P) */
    }
    if (0 == strcmp(name, "knomial")) {
        /* m steps of radix n and one of radix P / n^m (when above 1) per phase, one more
         * round before and after where the 2^k + q fold is needed */
        long pk = 1;
        int steps = 0;
        while (P > 1 && pk * n <= P) {
            pk *= n;
            steps++;
        }
        if (P / pk > 1) {
            steps++;
        }
        return P <= 1 ? 0
                      : (MCA_COLL_LOOM_COLL_ALLREDUCE == coll ? 2 : 1) * steps + (P != pk * (P / pk) ? 2 : 0);
    }
    if (MCA_COLL_LOOM_COLL_ALLREDUCE != coll && MCA_COLL_LOOM_COLL_BARRIER != coll) {
        return -1;
    }
    if (P <= 1) {
        return 0;
    }
    if (0 == strcmp(name, "pairwise")) {
        int p2 = 1, lg = 0;
        while (2 * p2 <= P) {
            p2 *= 2;
            lg++;
        }
        return lg + (p2 == P ? 0 : 2);
    }
    if (0 == strcmp(name, "ring")) {
        /* reduce-scatter and allgather, P-1 steps each (unsegmented) */
        return segs <= 1 ? 2 * (P - 1) : -1;
    }
    if (0 == strcmp(name, "dissemination") || 0 == strcmp(name, "bruck")) {
        return smallest_k(n, P); /* ceil(log_{n+1} P) rounds for every P */
    }
    return -1;
}

/* Builds every rank's schedule into scheds[] and returns a 64-bit hash of them all:
 * calls whose schedules are identical (the op, the knob or the segment count does
 * not change them) are verified once.  Also returns the most rounds of any rank. */
static uint64_t build_all(int alg, const mca_coll_loom_params_t *shape, mca_coll_loom_sched_t *scheds,
                          int *rounds, int *rc)
{
    uint64_t h = 14695981039346656037ull;

    *rounds = 0;
    *rc = MCA_COLL_LOOM_OK;
    for (int me = 0; me < shape->P && MCA_COLL_LOOM_OK == *rc; ++me) {
        mca_coll_loom_params_t p = *shape;
        mca_coll_loom_sched_t *s = &scheds[me];
        p.rank = me;
        *rc = mca_coll_loom_alg_build(alg, s, &p);
        h = (h ^ ((uint64_t) (uint32_t) s->nops | (uint64_t) (uint32_t) s->nblocks << 32)) * 1099511628211ull;
        h = (h ^ (uint64_t) (uint32_t) s->nseg) * 1099511628211ull;
        for (int i = 0; i < s->nops; ++i) {
            const mca_coll_loom_op_t *op = &s->ops[i];
            uint64_t w0 = (uint64_t) op->kind | (uint64_t) op->src << 8 | (uint64_t) op->dst << 16 |
                          (uint64_t) (uint32_t) op->peer << 24;
            uint64_t w1 = (uint64_t) (uint32_t) op->blk | (uint64_t) (uint32_t) op->nblk << 32;
            h = (h ^ w0) * 1099511628211ull;
            h = (h ^ w1) * 1099511628211ull;
            h = (h ^ (uint64_t) (uint32_t) op->dblk) * 1099511628211ull;
        }
        h = (h ^ (uint64_t) s->moves_blocks) * 1099511628211ull;
        h = (h ^ (uint64_t) s->lockstep) * 1099511628211ull;
        h = (h ^ (uint64_t) s->one_send) * 1099511628211ull;
        if (s->rounds > *rounds) {
            *rounds = s->rounds;
        }
    }
    return h;
}

static bool is_rooted(int coll)
{
    return MCA_COLL_LOOM_COLL_BCAST == coll || MCA_COLL_LOOM_COLL_REDUCE == coll;
}

/* Collectives that combine data run every kind of op; the others carry none. */
static bool combines(int coll)
{
    return MCA_COLL_LOOM_COLL_BARRIER != coll && MCA_COLL_LOOM_COLL_BCAST != coll &&
           MCA_COLL_LOOM_COLL_ALLGATHER != coll && MCA_COLL_LOOM_COLL_ALLTOALL != coll &&
           MCA_COLL_LOOM_COLL_ALLTOALLV != coll;
}

/* MPI_IN_PLACE aliases INPUT and RESULT at this level only for these. */
static bool has_in_place(int coll)
{
    return MCA_COLL_LOOM_COLL_ALLREDUCE == coll || MCA_COLL_LOOM_COLL_BARRIER == coll ||
           MCA_COLL_LOOM_COLL_REDUCE == coll || MCA_COLL_LOOM_COLL_SCAN == coll ||
           MCA_COLL_LOOM_COLL_EXSCAN == coll;
}

/*
 * Coverage.  Up to P = PFULL every combination of segs, knob, kind of op, root and
 * in place is built; calls whose schedules are identical to one already verified
 * are not simulated again (an exactly-once check that passed also covers the
 * at-least-once one of an idempotent op).  Above PFULL, where a ring schedule is
 * O(P) ops per rank and a build alone costs as much as a simulation:
 *  - each P runs one segment count, seg_list[P % NSEGS], so every count is still
 *    verified at a third of the sizes;
 *  - a kind of op whose schedules matched the first accepted kind's at every call up
 *    to PFULL is taken to keep matching (it is still checked for refusal);
 *  - rooted collectives run roots 0, 1, P/2, P-1 above ALL_ROOTS_P;
 *  - graph mode runs one order (depth first) instead of two: a graph run costs two to
 *    four times a round run there, and test_graph_orders tries many orders at small P.
 * Above PDENSE only a sample of P is run (p_sampled): both sides of every multiple of
 * 32, a few primes and PMAX.  A ring sweep costs about P^2.6, and P = 129..300 took
 * three quarters of the test's minute for no schedule shape that the sample lacks.
 */
#define NSEGS       3
#define PFULL       64
#define PDENSE      128

static bool p_sampled(int P, int pmax)
{
    return P <= PDENSE || P == pmax || P % 32 <= 1 || P % 32 == 31 || 131 == P || 251 == P || 293 == P;
}
#define ALL_ROOTS_P 40
#define NKINDS      ((int) (sizeof(kinds) / sizeof(kinds[0])))

static const int seg_list[NSEGS] = {1, 2, 3};

typedef struct {
    long verified, same, refused, assumed;
    bool kind_differs[8]; /* kind's schedules differed from the first accepted kind's at some
                             call up to PFULL */
} coverage_t;

/* Verifies one (alg, coll, P, root): every segs, knob and kind. */
static void test_one_size(int alg, int coll, int P, int root, mca_coll_loom_sched_t *scheds, coverage_t *cov)
{
    const mca_coll_loom_alg_t *a = mca_coll_loom_algs[alg];
    const int nlo = NULL == a->knob ? 0 : a->knob_min;
    const int nhi = NULL == a->knob ? 0 : (a->knob_max < nlo + 7 ? a->knob_max : nlo + 7);
    const int nkinds = combines(coll) ? NKINDS : 1;
    const bool order = mca_coll_loom_alg_keeps_order(alg, coll);
    /* schedules verified at this (P, root): hash, and whether only at-least-once */
    uint64_t seen[NSEGS * 8 * NKINDS];
    bool seen_idem[NSEGS * 8 * NKINDS], seen_ord[NSEGS * 8 * NKINDS];
    int nseen = 0;
    char err[256];

    for (int si = 0; si < NSEGS; ++si) {
        const int segs = seg_list[si];
        if (P > PFULL && si != P % NSEGS) {
            continue;
        }
        for (int n = nlo; n <= nhi; ++n) {
            int ref = -1;         /* first accepted kind of this call */
            bool ref_idem = false, ref_ord = false;
            uint64_t ref_fp = 0;
            for (int kd = 0; kd < nkinds; ++kd) {
                const char *kname = combines(coll) ? kinds[kd].name : "no op";
                const unsigned call = combines(coll) ? kinds[kd].call : (C | E | I);
                const bool idem = 0 != (call & I);
                /* rank order is demanded of order-keeping algorithms on non-commutative
                 * calls (a commutative call may take any tree, e.g. binomial's) */
                const bool ord = order && !(call & C);
                mca_coll_loom_params_t p = {.P = P, .root = root, .knob = n, .call = call, .coll = coll,
                                            .segs = segs};
                const char *why = mca_coll_loom_alg_refusal(alg, &p);
                int refuse = expect_refusal(alg, coll, P, n, call), rounds, brc, want;
                bool dup = false;
                uint64_t fp;

                CHECK(refuse < 0 || (NULL != why) == refuse, "%s %s P=%d n=%d %s: refusal '%s', expected %s",
                      a->name, mca_coll_loom_coll_name(coll), P, n, kname, why ? why : "none",
                      refuse ? "a refusal" : "none");
                if (NULL != why) {
                    cov->refused++;
                    continue;
                }
                if (P > PFULL && ref >= 0 && !cov->kind_differs[kd] && !cov->kind_differs[ref] &&
                    (!ref_idem || idem) && (ref_ord || !ord)) {
                    cov->assumed++;
                    continue;
                }
                fp = build_all(alg, &p, scheds, &rounds, &brc);
                CHECK(MCA_COLL_LOOM_OK == brc, "%s %s P=%d root=%d n=%d segs=%d %s: build failed (%d)",
                      a->name, mca_coll_loom_coll_name(coll), P, root, n, segs, kname, brc);
                if (MCA_COLL_LOOM_OK != brc) {
                    continue;
                }
                if (ref < 0) {
                    ref = kd;
                    ref_idem = idem;
                    ref_ord = ord;
                    ref_fp = fp;
                } else if (fp != ref_fp) {
                    cov->kind_differs[kd] = true;
                }
                want = expected_rounds(a->name, coll, P, n, segs);
                CHECK(want < 0 || rounds == want, "%s %s P=%d n=%d: %d rounds, expected %d", a->name,
                      mca_coll_loom_coll_name(coll), P, n, rounds, want);
                /* identical schedules verified before, with a check at least as strict */
                for (int k = 0; k < nseen && !dup; ++k) {
                    dup = seen[k] == fp && (!seen_idem[k] || idem) && (seen_ord[k] || !ord);
                }
                if (dup) {
                    cov->same++;
                    continue;
                }
                seen[nseen] = fp;
                seen_ord[nseen] = ord;
                seen_idem[nseen++] = idem;
                for (int inplace = 0; inplace < (has_in_place(coll) ? 2 : 1); ++inplace) {
                    mca_coll_loom_verify_stats_t st;
                    int rc = mca_coll_loom_verify_schedules(scheds, ord, &p, inplace, &st, err,
                                                            sizeof(err));
                    cov->verified++;
                    CHECK(0 == rc, "%s %s P=%d root=%d n=%d segs=%d %s%s: %s", a->name,
                          mca_coll_loom_coll_name(coll), P, root, n, segs, kname, inplace ? " in place" : "",
                          err);
                    CHECK(0 != rc || st.rounds == rounds, "%s %s P=%d: the verifier counts %d rounds, the "
                          "schedules %d", a->name, mca_coll_loom_coll_name(coll), P, st.rounds, rounds);
                }
            }
        }
    }
}

/* --shard K/N: this run's part of the sweep */
static int shard_k = 0, shard_n = 1;

static void test_algorithms(int pmax)
{
    int pair = -1;

    mca_coll_loom_sched_t *scheds = calloc((size_t) pmax, sizeof(*scheds));
    const int orders = mca_coll_loom_verify_graph_orders(-1);

    for (int i = 0; i < pmax; ++i) {
        mca_coll_loom_sched_init(&scheds[i]);
    }
    for (int alg = 0; alg < mca_coll_loom_num_algs; ++alg) {
        for (int coll = 0; coll < MCA_COLL_LOOM_NUM_COLLS; ++coll) {
            coverage_t cov = {0};
            clock_t t0 = clock();
            if (!mca_coll_loom_alg_serves(alg, coll) || ++pair % shard_n != shard_k) {
                continue;
            }
            for (int P = 1; P <= pmax; ++P) {
                const int few[4] = {0, 1, P / 2, P - 1};
                if (!p_sampled(P, pmax)) {
                    continue;
                }
                mca_coll_loom_verify_graph_orders(P > PFULL && orders > 1 ? 1 : orders);
                if (P <= 8) {
                    /* the registry entry point too, every root in one call */
                    mca_coll_loom_params_t p = {.P = P, .call = combines(coll) ? kinds[0].call : (C | E | I)};
                    const bool refused = NULL != mca_coll_loom_alg_refusal(alg, &p);
                    char err[256];
                    p.root = MCA_COLL_LOOM_VERIFY_ALL_ROOTS;
                    CHECK(refused ||
                          0 == mca_coll_loom_verify(alg, coll, &p, false, NULL, err, sizeof(err)),
                          "%s %s P=%d every root: %s", mca_coll_loom_algs[alg]->name,
                          mca_coll_loom_coll_name(coll), P, err);
                }
                if (!is_rooted(coll)) {
                    test_one_size(alg, coll, P, 0, scheds, &cov);
                    continue;
                }
                for (int i = 0; i < (P <= ALL_ROOTS_P ? P : 4); ++i) {
                    const int root = P <= ALL_ROOTS_P ? i : few[i];
                    bool again = false;
                    for (int k = 0; k < i && P > ALL_ROOTS_P; ++k) {
                        again |= few[k] == root;
                    }
                    if (!again) {
                        test_one_size(alg, coll, P, root, scheds, &cov);
                    }
                }
            }
            printf("%-14s %-20s %6ld simulated, %6ld identical, %6ld assumed identical, %5ld refused "
                   "(P = 1..%d%s) %.1f s\n", mca_coll_loom_algs[alg]->name, mca_coll_loom_coll_name(coll),
                   cov.verified, cov.same, cov.assumed, cov.refused, pmax, pmax > PDENSE ? ", sampled above 128" : "",
                   (double) (clock() - t0) / CLOCKS_PER_SEC);
            mca_coll_loom_verify_graph_orders(orders);
        }
    }
    for (int i = 0; i < pmax; ++i) {
        mca_coll_loom_sched_fini(&scheds[i]);
    }
    free(scheds);
}

/* The checker itself must be able to fail: deliberately broken builders. */
static int build_twice(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    int rc = mca_coll_loom_build_pairwise(s, p);
    mca_coll_loom_sched_reduce(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT);
    return rc;
}

static int build_deadlock(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    /* everybody waits for its left neighbour before sending to the right one */
    mca_coll_loom_sched_copy(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT);
    mca_coll_loom_sched_recv(s, (p->rank + p->P - 1) % p->P, MCA_COLL_LOOM_SLOT_SCRATCH0);
    mca_coll_loom_sched_wait(s);
    mca_coll_loom_sched_send(s, (p->rank + 1) % p->P, MCA_COLL_LOOM_SLOT_RESULT);
    mca_coll_loom_sched_wait(s);
    return MCA_COLL_LOOM_OK;
}

static int build_bruck_claims_order(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    mca_coll_loom_params_t q = *p;
    q.knob = 2;
    return mca_coll_loom_build_bruck(s, &q);
}

static int build_touch_inflight(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    int peer = p->rank ^ 1;
    mca_coll_loom_sched_copy(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT);
    mca_coll_loom_sched_recv(s, peer, MCA_COLL_LOOM_SLOT_SCRATCH0);
    mca_coll_loom_sched_send(s, peer, MCA_COLL_LOOM_SLOT_RESULT);
    mca_coll_loom_sched_reduce(s, MCA_COLL_LOOM_SLOT_SCRATCH0, MCA_COLL_LOOM_SLOT_RESULT);
    mca_coll_loom_sched_wait(s);
    return MCA_COLL_LOOM_OK;
}

static int build_inplace_hazard(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    /* receives the partner's data straight into RESULT while sending INPUT: fine with
     * separate buffers, wrong in place, and finish() must force a copy for that */
    int peer = p->rank ^ 1;
    mca_coll_loom_sched_send(s, peer, MCA_COLL_LOOM_SLOT_INPUT);
    mca_coll_loom_sched_recv(s, peer, MCA_COLL_LOOM_SLOT_RESULT);
    mca_coll_loom_sched_wait(s);
    mca_coll_loom_sched_reduce(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT);
    return MCA_COLL_LOOM_OK;
}

/* The verifier must reject `build` on shape p, with a message containing `expect`. */
static void expect_rejected(mca_coll_loom_build_fn_t build, bool check_order, const mca_coll_loom_params_t *p,
                            const char *what, const char *expect)
{
    char err[256];

    CHECK(0 != mca_coll_loom_verify_builder(build, check_order, p, false, NULL, err, sizeof(err)), "%s not detected",
          what);
    CHECK(NULL != strstr(err, expect), "%s: unexpected message: %s", what, err);
}

/* Block moves: Bruck's allgather with one wrong move appended (its own part over the
 * next rank's), and one whose transfers land in other blocks without saying so. */
static int build_bruck_misplaced(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    int rc = mca_coll_loom_build_bruck(s, p);
    mca_coll_loom_sched_copy_move(s, MCA_COLL_LOOM_SLOT_RESULT, p->rank, MCA_COLL_LOOM_SLOT_RESULT,
                                  (p->rank + 1) % p->P, 1);
    return rc;
}

static int build_bruck_undeclared(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    int rc = mca_coll_loom_build_bruck(s, p);
    s->moves_blocks = false;
    return rc;
}

/* Alltoall: a direct exchange that receives each block into the sender's target
 * position (the transposition forgotten), and Bruck's alltoall offered as alltoallv
 * (whose parts differ by rank: several per message cannot be cut alike). */
static int build_alltoall_untransposed(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    mca_coll_loom_sched_set_blocks(s, p->P);
    mca_coll_loom_sched_moves_blocks(s);
    for (int i = 1; i < p->P; ++i) {
        const int to = (p->rank + i) % p->P, from = (p->rank + p->P - i) % p->P;
        mca_coll_loom_sched_recv_blk(s, from, MCA_COLL_LOOM_SLOT_RESULT, to, 1);
        mca_coll_loom_sched_send_blk(s, to, MCA_COLL_LOOM_SLOT_INPUT, to, 1);
    }
    mca_coll_loom_sched_copy_move(s, MCA_COLL_LOOM_SLOT_INPUT, p->rank, MCA_COLL_LOOM_SLOT_RESULT, p->rank, 1);
    mca_coll_loom_sched_wait(s);
    return MCA_COLL_LOOM_OK;
}

static int build_bruck_alltoall(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    mca_coll_loom_params_t q = *p;
    q.coll = MCA_COLL_LOOM_COLL_ALLTOALL;
    return mca_coll_loom_build_bruck(s, &q);
}

/* A bcast tree that claims to be an exchange: its leaves only receive. */
static int build_false_exchange(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    mca_coll_loom_params_t q = *p;
    int rc;

    q.coll = MCA_COLL_LOOM_COLL_BCAST;
    rc = mca_coll_loom_build_binomial(s, &q);
    mca_coll_loom_sched_exchange(s);
    return rc;
}

static void test_alltoall_checks(void)
{
    mca_coll_loom_params_t p = {.P = 5, .knob = 2, .call = C | E, .coll = MCA_COLL_LOOM_COLL_ALLTOALL};
    mca_coll_loom_sched_t s;
    int waits = 0, window_ok = 1;
    char err[256];

    CHECK(0 == mca_coll_loom_verify_builder(build_bruck_alltoall, false, &p, false, NULL, err, sizeof(err)),
          "bruck alltoall: %s", err);
    expect_rejected(build_alltoall_untransposed, false, &p, "alltoall blocks not transposed",
                    "contribution of rank");
    p.coll = MCA_COLL_LOOM_COLL_ALLTOALLV;
    expect_rejected(build_bruck_alltoall, false, &p, "several parts per message in alltoallv", "one at a time");

    /* a window of 2 of direct's 6 steps at P = 7: three rounds kept in the graph, so
     * no transfer of a round starts before the previous round's WAIT */
    mca_coll_loom_sched_init(&s);
    p = (mca_coll_loom_params_t) {.P = 7, .rank = 3, .knob = 2, .coll = MCA_COLL_LOOM_COLL_ALLTOALL};
    CHECK(MCA_COLL_LOOM_OK == mca_coll_loom_build_direct(&s, &p) && MCA_COLL_LOOM_OK == mca_coll_loom_sched_finish(&s),
          "direct window 2 build");
    CHECK(s.lockstep && 3 == s.rounds, "direct window 2: lockstep %d, %d rounds", s.lockstep, s.rounds);
    for (int i = 0; i < s.nops; ++i) {
        if (MCA_COLL_LOOM_OP_WAIT == s.ops[i].kind) {
            waits++;
        } else if (waits > 0) {
            window_ok &= s.npred[i] >= 1; /* at least the WAIT before it */
        } else if (MCA_COLL_LOOM_OP_SEND == s.ops[i].kind || MCA_COLL_LOOM_OP_RECV == s.ops[i].kind) {
            window_ok &= 0 == s.npred[i];
        }
    }
    CHECK(window_ok, "direct window 2: later rounds do not wait for the earlier ones");
    CHECK(s.exchange, "direct does not declare its exchange (the UCX transport's direct writes need it)");
    mca_coll_loom_sched_fini(&s);

    /* the exchange a transport relies on is checked on every rank */
    p = (mca_coll_loom_params_t) {.P = 6, .call = C | E, .coll = MCA_COLL_LOOM_COLL_ALLTOALL};
    CHECK(0 == mca_coll_loom_verify_builder(mca_coll_loom_build_pairwise, false, &p, false, NULL, err, sizeof(err)),
          "pairwise alltoall: %s", err);
    p.coll = MCA_COLL_LOOM_COLL_BCAST;
    expect_rejected(build_false_exchange, false, &p, "a bcast tree declared an exchange", "declares an exchange");
}

static void test_block_moves(void)
{
    mca_coll_loom_params_t p = {.P = 5, .knob = 1, .call = C | E, .coll = MCA_COLL_LOOM_COLL_ALLGATHER};
    mca_coll_loom_layout_t even = {.count = 12, .nparts = 4, .nseg = 1};
    mca_coll_loom_layout_t uneven = {.count = 13, .nparts = 4, .nseg = 1};
    mca_coll_loom_sched_t s;
    char err[256];

    CHECK(0 == mca_coll_loom_verify_builder(mca_coll_loom_build_bruck, false, &p, false, NULL, err, sizeof(err)),
          "bruck allgather: %s", err);
    expect_rejected(build_bruck_misplaced, false, &p, "a block moved to the wrong place", "contribution of rank");
    expect_rejected(build_bruck_undeclared, false, &p, "a transfer into other blocks, undeclared",
                    "which receives blocks");

    /* a move must not overlap itself within one slot; one between slots may */
    mca_coll_loom_sched_init(&s);
    mca_coll_loom_sched_set_blocks(&s, 4);
    mca_coll_loom_sched_copy_move(&s, MCA_COLL_LOOM_SLOT_SCRATCH0, 0, MCA_COLL_LOOM_SLOT_SCRATCH0, 1, 2);
    CHECK(MCA_COLL_LOOM_ERR_BADPARAM == s.error, "overlapping move accepted");
    mca_coll_loom_sched_fini(&s);
    mca_coll_loom_sched_init(&s);
    mca_coll_loom_sched_set_blocks(&s, 4);
    mca_coll_loom_sched_copy_move(&s, MCA_COLL_LOOM_SLOT_INPUT, 0, MCA_COLL_LOOM_SLOT_SCRATCH0, 2, 2);
    CHECK(MCA_COLL_LOOM_OK == s.error && s.moves_blocks && 2 == s.ops[0].dblk, "move between slots refused");
    mca_coll_loom_sched_reset(&s);
    CHECK(!s.moves_blocks, "reset keeps moves_blocks");
    mca_coll_loom_sched_fini(&s);

    /* the executor runs a schedule that moves blocks only on equal blocks */
    CHECK(mca_coll_loom_layout_uniform(&even), "12 elements in 4 parts: equal");
    CHECK(!mca_coll_loom_layout_uniform(&uneven), "13 elements in 4 parts: not equal");
    /* its shortcut for even parts against the blocks' sizes themselves */
    for (size_t count = 0; count <= 200; ++count) {
        for (int nparts = 1; nparts <= 17; ++nparts) {
            for (int nseg = 1; nseg <= 5; ++nseg) {
                const mca_coll_loom_layout_t l = {.count = count, .nparts = nparts, .nseg = nseg};
                bool equal = true;
                for (int b = 0; b < nparts * nseg; ++b) {
                    equal = equal && mca_coll_loom_layout_start(&l, b + 1) - mca_coll_loom_layout_start(&l, b) ==
                                         mca_coll_loom_layout_start(&l, 1);
                }
                CHECK(equal == mca_coll_loom_layout_uniform(&l), "uniform: %zu elements, %d parts, %d segments",
                      count, nparts, nseg);
            }
        }
    }
}

static void test_verifier_catches_errors(void)
{
    mca_coll_loom_params_t p = {.P = 6, .call = C | E | V};
    mca_coll_loom_sched_t s;
    char err[256];

    expect_rejected(build_twice, true, &p, "double counting", "counted");
    expect_rejected(build_deadlock, false, &p, "deadlock", "deadlock");
    p.call = 0;
    CHECK(0 != mca_coll_loom_verify_builder(build_bruck_claims_order, true, &p, false, NULL, err,
                                            sizeof(err)), "rank order violation not detected");
    p.call = C | E | V;
    p.P = 2;
    CHECK(0 != mca_coll_loom_verify_builder(build_touch_inflight, false, &p, false, NULL, err, sizeof(err)),
          "use of a slot in flight not detected");
    CHECK(0 == mca_coll_loom_verify_builder(build_inplace_hazard, false, &p, true, NULL, err, sizeof(err)),
          "in-place hazard should be handled by a copy: %s", err);
    mca_coll_loom_sched_init(&s);
    mca_coll_loom_sched_send(&s, 1, MCA_COLL_LOOM_SLOT_INPUT);
    mca_coll_loom_sched_recv(&s, 1, MCA_COLL_LOOM_SLOT_RESULT);
    mca_coll_loom_sched_wait(&s);
    CHECK(0 == mca_coll_loom_sched_finish(&s) && s.input_after_result, "in-place hazard not flagged");
    mca_coll_loom_sched_fini(&s);

    /* malformed schedules are rejected by finish() */
    mca_coll_loom_sched_init(&s);
    mca_coll_loom_sched_send(&s, 1, MCA_COLL_LOOM_SLOT_INPUT);
    CHECK(MCA_COLL_LOOM_OK != mca_coll_loom_sched_finish(&s), "unwaited send accepted");
    mca_coll_loom_sched_fini(&s);
    mca_coll_loom_sched_init(&s);
    mca_coll_loom_sched_copy(&s, MCA_COLL_LOOM_SLOT_RESULT, MCA_COLL_LOOM_SLOT_INPUT);
    CHECK(MCA_COLL_LOOM_OK != mca_coll_loom_sched_finish(&s), "write to input accepted");
    mca_coll_loom_sched_fini(&s);
}

/*
 * Hand-written builders for bcast, reduce, allgather and reduce_scatter, each with
 * deliberate breakages the verifier must reject (selected by `mutation`: a build
 * function has no context argument).  Relative rank v = rank - root mod P.
 */
typedef enum {
    MUT_NONE = 0,
    MUT_NO_RECV,       /* the last rank is never sent the data */
    MUT_EARLY_FORWARD, /* data passed on before it arrived */
    MUT_READ_INPUT,    /* bcast / allgather read INPUT, which they do not use */
    MUT_NONROOT_RESULT, /* reduce: partial results in RESULT, which non-roots do not have */
    MUT_DUP,           /* a contribution combined twice */
    MUT_WRONG_ORDER,   /* reduce combines a child's partial on the left */
    MUT_WRONG_PART,    /* reduce_scatter leaves the result in part rank+1 */
    MUT_SHORT,         /* allgather stops one step early */
    MUT_RELABEL,       /* allgather stores a part under another part's blocks */
    MUT_SWAP_LAYOUT    /* allgather declares nseg parts of P segments */
} mutation_t;

static mutation_t mutation;

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define INP MCA_COLL_LOOM_SLOT_INPUT
#define TMP MCA_COLL_LOOM_SLOT_SCRATCH0

static int nseg_of(const mca_coll_loom_params_t *p)
{
    return p->segs > 1 ? p->segs : 1;
}

/* Binomial bcast, pipelined by segment: receive segment g from the parent, then
 * pass it to the children v + 2^k (2^k below v's lowest set bit). */
static int build_test_bcast(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, root = p->root, v = mca_coll_loom_rank_mod(p->rank - root, P), nseg = nseg_of(p);
    const int low = 0 == v ? P : (v & -v);
    const bool cut = MUT_NO_RECV == mutation;

    mca_coll_loom_sched_set_segmented_blocks(s, 1, nseg);
    for (int g = 0; g < nseg; ++g) {
        if (v > 0 && !(cut && v == P - 1)) {
            mca_coll_loom_sched_recv_blk(s, mca_coll_loom_rank_mod(v - low + root, P), RES, g, 1);
            if (MUT_EARLY_FORWARD != mutation) {
                mca_coll_loom_sched_wait(s);
            }
            if (MUT_DUP == mutation && v == P - 1) {
                mca_coll_loom_sched_copy_blk(s, RES, TMP, g, 1);
                mca_coll_loom_sched_reduce_blk(s, TMP, RES, g, 1);
            }
        }
        for (int mask = 1; mask < low && v + mask < P; mask <<= 1) {
            if (!(cut && v + mask == P - 1)) {
                mca_coll_loom_sched_send_blk(s, mca_coll_loom_rank_mod(v + mask + root, P),
                                             MUT_READ_INPUT == mutation ? INP : RES, g, 1);
            }
        }
    }
    mca_coll_loom_sched_wait(s);
    return MCA_COLL_LOOM_OK;
}

/* Binomial reduce: receive the partials of the children v + 2^k (higher relative
 * ranks, so RESULT o child keeps relative rank order), then send to the parent. */
static int build_test_reduce(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, root = p->root, v = mca_coll_loom_rank_mod(p->rank - root, P);
    /* the root's partial in RESULT, the others' in a scratch slot */
    const int acc = 0 == v || MUT_NONROOT_RESULT == mutation ? RES : TMP + 1;

    mca_coll_loom_sched_set_segmented_blocks(s, 1, nseg_of(p));
    mca_coll_loom_sched_copy(s, INP, acc);
    for (int mask = 1; mask < P; mask <<= 1) {
        if (v & mask) {
            mca_coll_loom_sched_send(s, mca_coll_loom_rank_mod(v - mask + root, P), acc);
            mca_coll_loom_sched_wait(s);
            break;
        }
        if (v + mask < P) {
            mca_coll_loom_sched_recv(s, mca_coll_loom_rank_mod(v + mask + root, P), TMP);
            mca_coll_loom_sched_wait(s);
            if (MUT_WRONG_ORDER == mutation) {
                mca_coll_loom_sched_reduce(s, TMP, acc);
            } else {
                mca_coll_loom_sched_reduce_r(s, TMP, acc);
            }
        }
    }
    /* the duplicate: the last rank also sends its contribution straight to the root */
    if (MUT_DUP == mutation && P > 2 && v == P - 1) {
        mca_coll_loom_sched_send(s, root, INP);
        mca_coll_loom_sched_wait(s);
    }
    if (MUT_DUP == mutation && P > 2 && 0 == v) {
        mca_coll_loom_sched_recv(s, mca_coll_loom_rank_mod(P - 1 + root, P), TMP);
        mca_coll_loom_sched_wait(s);
        mca_coll_loom_sched_reduce_r(s, TMP, RES);
    }
    return MCA_COLL_LOOM_OK;
}

/* Ring reduce-scatter, nseg segments per part: step i sends part r-i-1 to the
 * right and adds part r-i-2 from the left, so part r is complete after P-1 steps. */
static int build_test_reduce_scatter(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank, nseg = nseg_of(p), shift = MUT_WRONG_PART == mutation ? 1 : 0;
    const int right = mca_coll_loom_rank_mod(r + 1, P), left = mca_coll_loom_rank_mod(r - 1, P);

    mca_coll_loom_sched_set_segmented_blocks(s, P, nseg);
    mca_coll_loom_sched_copy(s, INP, RES);
    for (int i = 0; i < P - 1; ++i) {
        const int out = mca_coll_loom_rank_mod(r - i - 1 + shift, P);
        const int in = mca_coll_loom_rank_mod(r - i - 2 + shift, P);
        for (int g = 0; g < nseg; ++g) {
            mca_coll_loom_sched_send_blk(s, right, RES, out * nseg + g, 1);
            mca_coll_loom_sched_recv_blk(s, left, TMP, in * nseg + g, 1);
        }
        mca_coll_loom_sched_wait(s);
        mca_coll_loom_sched_reduce_blk(s, TMP, RES, in * nseg, nseg);
        if (MUT_DUP == mutation && 0 == i) {
            mca_coll_loom_sched_reduce_blk(s, INP, RES, in * nseg, nseg);
        }
    }
    return MCA_COLL_LOOM_OK;
}

/* Ring allgather, nseg segments per part: step i passes part r-i on to the right
 * and receives part r-i-1 from the left. */
static int build_test_allgather(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank, nseg = nseg_of(p);
    const int right = mca_coll_loom_rank_mod(r + 1, P), left = mca_coll_loom_rank_mod(r - 1, P);
    const int steps = MUT_SHORT == mutation ? P - 2 : P - 1;

    if (MUT_SWAP_LAYOUT == mutation) {
        mca_coll_loom_sched_set_segmented_blocks(s, nseg, P);
    } else {
        mca_coll_loom_sched_set_segmented_blocks(s, P, nseg);
    }
    if (MUT_READ_INPUT == mutation) {
        mca_coll_loom_sched_copy_blk(s, INP, RES, r * nseg, nseg);
    }
    for (int i = 0; i < steps; ++i) {
        const int early = MUT_EARLY_FORWARD == mutation ? 1 : 0;
        const int out = mca_coll_loom_rank_mod(r - i - early, P), in = mca_coll_loom_rank_mod(r - i - 1, P);
        const int label = MUT_RELABEL == mutation && 1 == i ? mca_coll_loom_rank_mod(in - 1, P) : in;
        for (int g = 0; g < nseg; ++g) {
            mca_coll_loom_sched_send_blk(s, right, RES, out * nseg + g, 1);
            mca_coll_loom_sched_recv_blk(s, left, RES, label * nseg + g, 1);
        }
        mca_coll_loom_sched_wait(s);
    }
    return MCA_COLL_LOOM_OK;
}

static int verify_test_builder(mca_coll_loom_build_fn_t build, mutation_t mut, mca_coll_loom_coll_t coll,
                               int P, int root, int segs, unsigned call, bool order, bool in_place, char *err,
                               size_t errlen)
{
    mca_coll_loom_params_t p = {.P = P, .root = root, .call = call, .coll = coll, .segs = segs};
    int rc;
    mutation = mut;
    rc = mca_coll_loom_verify_builder(build, order, &p, in_place, NULL, err, errlen);
    mutation = MUT_NONE;
    return rc;
}

static void test_new_collectives(void)
{
    static const struct {
        const char *what;
        mca_coll_loom_build_fn_t build;
        mca_coll_loom_coll_t coll;
        mutation_t mut;
        unsigned call;
        bool order;
        const char *expect; /* in the verifier's message */
    } broken[] = {
        {"bcast: a rank never receives", build_test_bcast, MCA_COLL_LOOM_COLL_BCAST, MUT_NO_RECV, 0, false,
         "undefined at the end"},
        {"bcast: forwarded before it arrived", build_test_bcast, MCA_COLL_LOOM_COLL_BCAST, MUT_EARLY_FORWARD,
         0, false, "being received"},
        {"bcast: reads INPUT", build_test_bcast, MCA_COLL_LOOM_COLL_BCAST, MUT_READ_INPUT, 0, false,
         "reads INPUT"},
        {"bcast: the data twice", build_test_bcast, MCA_COLL_LOOM_COLL_BCAST, MUT_DUP, C | E | I, false,
         "counted 2 times"},
        {"reduce: a duplicate contribution", build_test_reduce, MCA_COLL_LOOM_COLL_REDUCE, MUT_DUP, C | E,
         false, "counted 2 times"},
        {"reduce: out of rank order", build_test_reduce, MCA_COLL_LOOM_COLL_REDUCE, MUT_WRONG_ORDER, 0, true,
         "rank order"},
        {"reduce: partials in a non-root's RESULT", build_test_reduce, MCA_COLL_LOOM_COLL_REDUCE,
         MUT_NONROOT_RESULT, C | E, false, "non-root ranks do not have"},
        {"reduce_scatter: result in the wrong part", build_test_reduce_scatter,
         MCA_COLL_LOOM_COLL_REDUCE_SCATTER, MUT_WRONG_PART, C | E, false, "counted 0 times"},
        {"reduce_scatter_block: a duplicate contribution", build_test_reduce_scatter,
         MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, MUT_DUP, C | E, false, "counted 2 times"},
        {"allgather: one step short", build_test_allgather, MCA_COLL_LOOM_COLL_ALLGATHER, MUT_SHORT, 0, false,
         "undefined at the end"},
        {"allgather: part stored under another part's blocks", build_test_allgather,
         MCA_COLL_LOOM_COLL_ALLGATHER, MUT_RELABEL, 0, false, "which receives blocks"},
        {"allgather: parts and segments swapped", build_test_allgather, MCA_COLL_LOOM_COLL_ALLGATHER,
         MUT_SWAP_LAYOUT, 0, false, "one part per rank"},
        {"allgather: forwards a part it does not have yet", build_test_allgather,
         MCA_COLL_LOOM_COLL_ALLGATHER, MUT_EARLY_FORWARD, 0, false, "being received"},
        {"allgather: reads INPUT", build_test_allgather, MCA_COLL_LOOM_COLL_ALLGATHER, MUT_READ_INPUT, 0,
         false, "reads INPUT"},
    };
    static const struct {
        mca_coll_loom_build_fn_t build;
        mca_coll_loom_coll_t coll;
    } good[] = {
        {build_test_bcast, MCA_COLL_LOOM_COLL_BCAST},
        {build_test_reduce, MCA_COLL_LOOM_COLL_REDUCE},
        {build_test_reduce_scatter, MCA_COLL_LOOM_COLL_REDUCE_SCATTER},
        {build_test_reduce_scatter, MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK},
        {build_test_allgather, MCA_COLL_LOOM_COLL_ALLGATHER},
    };
    char err[256];

    /* the correct builders pass for every P, root, segs, op and in place */
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); ++i) {
        const bool rooted = is_rooted(good[i].coll);
        long cases = 0;
        for (int P = 1; P <= 24; ++P) {
            for (int root = 0; root < (rooted ? P : 1); ++root) {
                for (int segs = 1; segs <= 3; ++segs) {
                    for (int kd = 0; kd < NKINDS; ++kd) {
                        for (int inplace = 0; inplace < 2; ++inplace) {
                            /* binomial reduce keeps rank order only for root 0 */
                            bool order = MCA_COLL_LOOM_COLL_REDUCE == good[i].coll && 0 == root;
                            int rc = verify_test_builder(good[i].build, MUT_NONE, good[i].coll, P, root, segs,
                                                         kinds[kd].call, order, inplace, err, sizeof(err));
                            cases++;
                            CHECK(0 == rc, "correct test %s P=%d root=%d segs=%d %s%s rejected: %s",
                                  mca_coll_loom_coll_name(good[i].coll), P, root, segs, kinds[kd].name,
                                  inplace ? " in place" : "", err);
                        }
                    }
                }
            }
        }
        printf("test builder   %-20s %6ld accepted (P = 1..24%s, segs 1..3)\n",
               mca_coll_loom_coll_name(good[i].coll), cases, rooted ? ", every root" : "");
    }
    /* the broken ones fail, with the expected complaint */
    for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); ++i) {
        for (int P = 6; P <= 7; ++P) {
            for (int root = 0; root < (is_rooted(broken[i].coll) ? P : 1); root += 3) {
                int rc = verify_test_builder(broken[i].build, broken[i].mut, broken[i].coll, P, root, 2,
                                             broken[i].call, broken[i].order, false, err, sizeof(err));
                CHECK(0 != rc, "%s (P=%d root=%d): not detected", broken[i].what, P, root);
                CHECK(0 == rc || NULL != strstr(err, broken[i].expect),
                      "%s (P=%d root=%d): unexpected message: %s", broken[i].what, P, root, err);
            }
        }
    }
    /* in place at the root only: the root's INPUT is its RESULT */
    CHECK(0 == verify_test_builder(build_test_reduce, MUT_NONE, MCA_COLL_LOOM_COLL_REDUCE, 5, 2, 1, C | E,
                                   false, true, err, sizeof(err)), "reduce in place: %s", err);
    /* the order a correct reduce keeps at root 0 is lost at root 1 (a rotation) */
    CHECK(0 != verify_test_builder(build_test_reduce, MUT_NONE, MCA_COLL_LOOM_COLL_REDUCE, 5, 1, 1, 0, true,
                                   false, err, sizeof(err)) && NULL != strstr(err, "rank order"),
          "rotated reduce claimed in order: %s", err);
}

/* ---- graph mode can fail where the rounds pass -------------------------------- */

/* Builds and finishes every rank's schedule. */
static int build_every_rank(mca_coll_loom_build_fn_t build, const mca_coll_loom_params_t *shape,
                            mca_coll_loom_sched_t *scheds)
{
    int rc = MCA_COLL_LOOM_OK;

    for (int me = 0; me < shape->P; ++me) {
        mca_coll_loom_params_t p = *shape;
        p.rank = me;
        mca_coll_loom_sched_init(&scheds[me]);
        if (MCA_COLL_LOOM_OK == rc) {
            rc = build(&scheds[me], &p);
        }
        if (MCA_COLL_LOOM_OK == rc) {
            rc = mca_coll_loom_sched_finish(&scheds[me]);
        }
    }
    return rc;
}

static void fini_every_rank(mca_coll_loom_sched_t *scheds, int P)
{
    for (int me = 0; me < P; ++me) {
        mca_coll_loom_sched_fini(&scheds[me]);
    }
}

/* Removes the data edge from -> to of a finished schedule, npred included. */
static bool drop_edge(mca_coll_loom_sched_t *s, int from, int to)
{
    for (int32_t k = s->succ_start[from]; k < s->succ_start[from + 1]; ++k) {
        if (s->succ[k] == to) {
            memmove(&s->succ[k], &s->succ[k + 1], (size_t) (s->succ_start[s->nops] - k - 1) * sizeof(int32_t));
            for (int i = from + 1; i <= s->nops; ++i) {
                s->succ_start[i]--;
            }
            s->npred[to]--;
            return true;
        }
    }
    return false;
}

/* The first transfer of `kind` that has a next transfer on its channel, or -1. */
static int first_chained(const mca_coll_loom_sched_t *s, int kind)
{
    for (int i = 0; i < s->nops; ++i) {
        if (kind == s->ops[i].kind && s->chan_next[i] >= 0) {
            return i;
        }
    }
    return -1;
}

/* Verifies corrupted schedules: the round reading (graph mode off) must pass, graph
 * mode must fail with a message containing `expect`. */
static void expect_graph_failure(const char *what, const mca_coll_loom_sched_t *scheds,
                                 const mca_coll_loom_params_t *p, const char *expect)
{
    const int old = mca_coll_loom_verify_graph_orders(0);
    char err[256];
    int rc = mca_coll_loom_verify_schedules(scheds, false, p, false, NULL, err, sizeof(err));

    CHECK(0 == rc, "%s: the round reading should pass: %s", what, err);
    mca_coll_loom_verify_graph_orders(old);
    rc = mca_coll_loom_verify_schedules(scheds, false, p, false, NULL, err, sizeof(err));
    CHECK(0 != rc, "%s: not detected in graph mode", what);
    CHECK(0 == rc || (NULL != strstr(err, "graph") && NULL != strstr(err, expect)), "%s: unexpected message: %s",
          what, err);
}

static void test_graph_mode_catches_errors(void)
{
    const int pairwise = mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_ALLREDUCE, "pairwise");
    mca_coll_loom_sched_t scheds[8];
    int rc, i, j;

    /* A REDUCE freed from the RECV that fills its operand (and from everything else):
     * the graph lets it run before the data is in. */
    {
        mca_coll_loom_params_t p = {.P = 4, .call = C | E | V, .coll = MCA_COLL_LOOM_COLL_ALLREDUCE};
        mca_coll_loom_sched_t *s = &scheds[0];
        for (int me = 0; me < p.P; ++me) {
            p.rank = me;
            mca_coll_loom_sched_init(&scheds[me]);
            rc = mca_coll_loom_alg_build(pairwise, &scheds[me], &p);
            CHECK(MCA_COLL_LOOM_OK == rc, "pairwise build failed (%d)", rc);
        }
        for (j = 0; j < s->nops && MCA_COLL_LOOM_OP_REDUCE != s->ops[j].kind &&
                    MCA_COLL_LOOM_OP_REDUCE_R != s->ops[j].kind; ++j) {
        }
        CHECK(j < s->nops, "pairwise: no reduction on rank 0");
        for (i = 0, rc = 0; i < j; ++i) {
            const bool fills = MCA_COLL_LOOM_OP_RECV == s->ops[i].kind && s->ops[i].dst == s->ops[j].src;
            while (drop_edge(s, i, j)) {
                rc |= fills;
            }
        }
        CHECK(j < s->nops && rc && 0 == s->npred[j], "pairwise: the reduction was not fed by a receive, or "
              "still has %d predecessors", j < s->nops ? s->npred[j] : -1);
        expect_graph_failure("a reduction freed from its receive", scheds, &p, "order");
        fini_every_rank(scheds, p.P);
    }

    /* A channel's order dropped (the posting link and the send-after-send edge): the
     * second send of a step may be posted first, and then matches the receive meant
     * for the first. */
    {
        mca_coll_loom_params_t p = {.P = 3, .call = C | E, .coll = MCA_COLL_LOOM_COLL_ALLGATHER, .segs = 2};
        rc = build_every_rank(build_test_allgather, &p, scheds);
        CHECK(MCA_COLL_LOOM_OK == rc, "allgather build failed (%d)", rc);
        i = first_chained(&scheds[0], MCA_COLL_LOOM_OP_SEND);
        CHECK(i >= 0, "allgather: no chained send on rank 0");
        if (i >= 0) {
            j = scheds[0].chan_next[i];
            scheds[0].chan_next[i] = -1;
            scheds[0].npred[j]--;
            (void) drop_edge(&scheds[0], i, j);
            expect_graph_failure("a channel posted out of order", scheds, &p, "which receives blocks");
        }
        fini_every_rank(scheds, p.P);
    }

    /* Two sends of a channel each waiting for the other to be posted: a cycle. */
    {
        mca_coll_loom_params_t p = {.P = 2, .call = C | E, .coll = MCA_COLL_LOOM_COLL_ALLGATHER, .segs = 2};
        rc = build_every_rank(build_test_allgather, &p, scheds);
        CHECK(MCA_COLL_LOOM_OK == rc, "allgather build failed (%d)", rc);
        i = first_chained(&scheds[0], MCA_COLL_LOOM_OP_SEND);
        CHECK(i >= 0 && scheds[0].chan_next[scheds[0].chan_next[i]] < 0, "allgather: no pair of sends on rank 0");
        if (i >= 0 && scheds[0].chan_next[scheds[0].chan_next[i]] < 0) {
            scheds[0].chan_next[scheds[0].chan_next[i]] = i;
            scheds[0].npred[i]++;
            expect_graph_failure("a cycle in a channel", scheds, &p, "deadlock (graph, order");
        }
        fini_every_rank(scheds, p.P);
    }

    /* A count that no edge backs: refused before anything runs. */
    {
        mca_coll_loom_params_t p = {.P = 2, .call = C | E, .coll = MCA_COLL_LOOM_COLL_ALLGATHER, .segs = 2};
        rc = build_every_rank(build_test_allgather, &p, scheds);
        CHECK(MCA_COLL_LOOM_OK == rc, "allgather build failed (%d)", rc);
        scheds[1].npred[scheds[1].nops - 1]++;
        expect_graph_failure("npred without an edge", scheds, &p, "npred");
        fini_every_rank(scheds, p.P);
    }
}

/* Graph mode under many orders (every other verification runs two): every algorithm
 * and collective at small sizes, where rings are short and trees shallow enough for
 * GRAPH_ORDERS interleavings of each to cost little. */
#define GRAPH_ORDERS 16

/* circulant's hard part is many blocks (n > q = ceil(log2 P): the later phases, where
 * Traff's schedule forwards some blocks in the round they arrive), which the segment
 * counts 1..3 of test_algorithms reach only at small P, and where a wrong walk shows.
 * Bcast: every P to 300 (n from 1 to 2q + 3, four roots) and a sample to 2^16 (n = 2 and
 * 2q + 3, one or two roots): each rank ends with every block, none is read before it
 * arrives, and no rank needs more than n - 1 + q rounds plus one per block it forwards
 * on arrival.  Reduce (the rounds backwards) and allreduce (reduce + bcast, twice the
 * rounds) the same way, with fewer block counts and roots: every contribution reaches
 * the result once. */
static bool circ_early_send(const mca_coll_loom_sched_t *s, int i)
{
    /* a send of the block received just before the WAIT that precedes it (the local
     * ops of a reduce may sit between) */
    int j = i - 1;
    if (MCA_COLL_LOOM_OP_SEND != s->ops[i].kind) {
        return false;
    }
    while (j >= 0 && s->ops[j].kind >= MCA_COLL_LOOM_OP_COPY) {
        --j;
    }
    return j >= 1 && MCA_COLL_LOOM_OP_WAIT == s->ops[j].kind && MCA_COLL_LOOM_OP_RECV == s->ops[j - 1].kind &&
           s->ops[j - 1].blk == s->ops[i].blk;
}

static void test_circulant(int pmax)
{
    static const int big[] = {511, 513, 1024, 1031, 4099, 16411, 65521, 65536};
    static const mca_coll_loom_coll_t colls[3] = {MCA_COLL_LOOM_COLL_BCAST, MCA_COLL_LOOM_COLL_REDUCE,
                                                  MCA_COLL_LOOM_COLL_ALLREDUCE};
    const int plim = pmax < 300 ? pmax : 300;
    const int nbig = pmax >= 300 ? (int) (sizeof(big) / sizeof(big[0])) : 0;
    mca_coll_loom_sched_t *scheds = calloc(65536, sizeof(*scheds));
    const clock_t t0 = clock();
    long verified[3] = {0, 0, 0};
    char err[256];

    CHECK(NULL != scheds, "circulant: no memory");
    if (NULL == scheds) {
        return;
    }
    for (int i = 0; i < 65536; ++i) {
        mca_coll_loom_sched_init(&scheds[i]);
    }
    for (int ci = 0; ci < 3; ++ci) {
        const mca_coll_loom_coll_t coll = colls[ci];
        const int alg = mca_coll_loom_alg_find(coll, "circulant");
        const bool bc = MCA_COLL_LOOM_COLL_BCAST == coll, ar = MCA_COLL_LOOM_COLL_ALLREDUCE == coll;
        CHECK(alg >= 0, "circulant: not in the registry for %s", mca_coll_loom_coll_name(coll));
        if (alg < 0) {
            continue;
        }
        for (int pi = 0; pi < plim - 1 + nbig; ++pi) {
            const int P = pi < plim - 1 ? pi + 2 : big[pi - (plim - 1)];
            int q = 1;
            while ((1 << q) < P) {
                q++;
            }
            const int roots[4] = {0, 1, P / 2, P - 1}, ns[6] = {1, 2, q - 1, q, q + 1, 2 * q + 3};
            /* reductions to 16411 ranks: the verifier's contribution sets grow as P^2 (1 GB
             * at 16411) */
            if (!bc && P > 16411) {
                continue;
            }
            for (int ni = 0; ni < 6; ++ni) {
                /* above 300 ranks: two block counts on two roots; reductions: n = 1, q, 2q+3 */
                if ((P > 300 && ni != 1 && ni != 5) || (!bc && P <= 300 && ni != 0 && ni != 3 && ni != 5) ||
                    ns[ni] < 1 || (ni > 0 && ns[ni] == ns[ni - 1])) {
                    continue;
                }
                const int nroots = ar ? 1 : P > 4096 ? 1 : P > 300 || !bc ? 2 : 4;
                for (int ri = 0; ri < nroots; ++ri) {
                    mca_coll_loom_params_t p = {.P = P, .root = roots[ri * (bc ? 1 : 3)], .call = C | E | I,
                                                .coll = coll, .segs = ns[ni]};
                    const int want = (ar ? 2 : 1) * (ns[ni] - 1 + q);
                    mca_coll_loom_verify_stats_t st;
                    int rounds, brc, most = 0;
                    build_all(alg, &p, scheds, &rounds, &brc);
                    CHECK(MCA_COLL_LOOM_OK == brc, "circulant %s P=%d root=%d n=%d: build failed (%d)",
                          mca_coll_loom_coll_name(coll), P, p.root, ns[ni], brc);
                    if (MCA_COLL_LOOM_OK != brc) {
                        continue;
                    }
                    for (int r = 0; r < P; ++r) {
                        int sends = 0, waits = 0, early = 0;
                        for (int i = 0; i < scheds[r].nops; ++i) {
                            sends += MCA_COLL_LOOM_OP_SEND == scheds[r].ops[i].kind;
                            waits += MCA_COLL_LOOM_OP_WAIT == scheds[r].ops[i].kind;
                            early += circ_early_send(&scheds[r], i);
                        }
                        /* the reduction sends each block in CIRC_PIECES = 2 messages */
                        CHECK(waits - early <= want && sends <= (bc ? 1 : 2) * want,
                              "circulant %s P=%d root=%d n=%d: rank %d has %d rounds (%d forwarded on arrival) "
                              "and %d sends, more than %d", mca_coll_loom_coll_name(coll), P, p.root, ns[ni], r,
                              waits, early, sends, want);
                        most = waits - early > most ? waits - early : most;
                    }
                    /* allreduce: no rank but the root takes part in both the reduce's last
                     * round and the broadcast's first */
                    CHECK(most == want || (ar && most == want - 1),
                          "circulant %s P=%d root=%d n=%d: %d rounds, the paper's is %d",
                          mca_coll_loom_coll_name(coll), P, p.root, ns[ni], most, want);
                    int rc = mca_coll_loom_verify_schedules(scheds, false, &p, 0, &st, err, sizeof(err));
                    verified[ci]++;
                    CHECK(0 == rc, "circulant %s P=%d root=%d n=%d: %s", mca_coll_loom_coll_name(coll), P,
                          p.root, ns[ni], err);
                }
            }
        }
    }
    for (int i = 0; i < 65536; ++i) {
        mca_coll_loom_sched_fini(&scheds[i]);
    }
    free(scheds);
    printf("circulant      %ld bcast, %ld reduce, %ld allreduce schedules verified (P = 2..%d%s) %.1f s\n",
           verified[0], verified[1], verified[2], plim, nbig ? "; 8 sizes to 65536, reductions to 16411" : "",
           (double) (clock() - t0) / CLOCKS_PER_SEC);
}

/* swing and knomial (radix `knob`) at sizes test_algorithms does not reach: the flat
 * allreduce (rank order, with the 2^k + q fold) on a sample of P to 2^16, the paper's
 * rounds.  The verifier to 1031 ranks (its contribution sets grow as P^2); above, the
 * structure that makes the schedules right: every send of a round meets a receive of
 * the same blocks at its peer in the same round, and the reduce-scatter leaves each block
 * on exactly one rank (the first receive of a single block is a rank's last step). */
static bool rs_structure(const mca_coll_loom_sched_t *scheds, int P, char *err, size_t errlen)
{
    int *owner = calloc((size_t) scheds[P - 1].nblocks, sizeof(int));
    bool ok = NULL != owner;

    for (int r = 0; ok && r < P; ++r) {
        const mca_coll_loom_sched_t *s = &scheds[r];
        bool mine = false;
        for (int i = 0; ok && i < s->nops; ++i) {
            const mca_coll_loom_op_t *op = &s->ops[i];
            if (MCA_COLL_LOOM_OP_RECV == op->kind && 1 == op->nblk && !mine) {
                mine = true; /* the reduce-scatter's last step: this rank's block */
                if (owner[op->blk]++) {
                    snprintf(err, errlen, "block %d ends the reduce-scatter on two ranks", op->blk);
                    ok = false;
                }
            }
            if (MCA_COLL_LOOM_OP_SEND != op->kind) {
                continue;
            }
            /* the k-th send to a peer meets the peer's k-th receive from r: same blocks */
            const mca_coll_loom_sched_t *q = &scheds[op->peer];
            int k = 0, j = 0;
            for (int h = 0; h < i; ++h) {
                k += MCA_COLL_LOOM_OP_SEND == s->ops[h].kind && s->ops[h].peer == op->peer;
            }
            for (; j < q->nops; ++j) {
                if (MCA_COLL_LOOM_OP_RECV == q->ops[j].kind && q->ops[j].peer == r && 0 == k--) {
                    break;
                }
            }
            if (j == q->nops || q->ops[j].blk != op->blk || q->ops[j].nblk != op->nblk) {
                snprintf(err, errlen, "rank %d's send to %d (blocks %d+%d) meets no receive of them", r, op->peer,
                         op->blk, op->nblk);
                ok = false;
            }
        }
    }
    free(owner);
    return ok;
}

static void test_allreduce_large(int pmax, const char *name, int knob)
{
    static const int big[] = {301, 511, 512, 513, 729, 1024, 1031, 4096, 4099, 16384, 16411, 65535, 65536};
    const int alg = mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_ALLREDUCE, name);
    mca_coll_loom_sched_t *scheds = calloc(65536, sizeof(*scheds));
    const clock_t t0 = clock();
    int verified = 0, checked = 0;
    char err[256];

    CHECK(alg >= 0 && NULL != scheds, "%s: in the registry, memory", name);
    if (alg < 0 || NULL == scheds || pmax < 300) {
        free(scheds);
        return;
    }
    for (int i = 0; i < 65536; ++i) {
        mca_coll_loom_sched_init(&scheds[i]);
    }
    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); ++i) {
        const int P = big[i];
        /* non-commutative for the order-keeping knomial, commutative for swing */
        mca_coll_loom_params_t p = {.P = P, .knob = knob, .call = 0 == knob ? C | E | I : 0,
                                    .coll = MCA_COLL_LOOM_COLL_ALLREDUCE};
        mca_coll_loom_verify_stats_t st;
        int rounds, brc, steps = 0, want;
        while ((2 << steps) <= P) {
            ++steps;
        }
        want = 0 == knob ? 2 * steps + ((P & (P - 1)) ? 2 : 0)
                         : expected_rounds(name, MCA_COLL_LOOM_COLL_ALLREDUCE, P, knob, 1);
        for (int r = 0; r < P; ++r) {
            scheds[r].no_graph = P > 1031; /* its dependency graph costs O(blocks) per rank */
        }
        build_all(alg, &p, scheds, &rounds, &brc);
        CHECK(MCA_COLL_LOOM_OK == brc, "%s P=%d: build failed (%d)", name, P, brc);
        if (MCA_COLL_LOOM_OK != brc) {
            continue;
        }
        CHECK(rounds == want, "%s P=%d: %d rounds, expected %d", name, P, rounds, want);
        if (P <= 1031) {
            CHECK(0 == mca_coll_loom_verify_schedules(scheds, 0 != knob, &p, 0, &st, err, sizeof(err)),
                  "%s P=%d: %s", name, P, err);
            ++verified;
            /* and the allgather both serve */
            p.coll = MCA_COLL_LOOM_COLL_ALLGATHER;
            p.call = C | E | I;
            build_all(alg, &p, scheds, &rounds, &brc);
            CHECK(MCA_COLL_LOOM_OK == brc && 0 == mca_coll_loom_verify_schedules(scheds, false, &p, 0, &st, err,
                                                                                  sizeof(err)),
                  "%s allgather P=%d: %s", name, P, MCA_COLL_LOOM_OK == brc ? err : "build failed");
            ++verified;
        } else {
            CHECK(rs_structure(scheds, P, err, sizeof(err)), "%s P=%d: %s", name, P, err);
            ++checked;
        }
    }
    for (int i = 0; i < 65536; ++i) {
        mca_coll_loom_sched_fini(&scheds[i]);
    }
    free(scheds);
    printf("%-8s n=%-3d %d allreduce and allgather schedule sets verified (P = 301..1031), %d allreduces checked "
           "for their structure "
           "(P = 4096..65536) %.1f s\n", name, knob, verified, checked, (double) (clock() - t0) / CLOCKS_PER_SEC);
}

static void test_graph_orders(void)
{
    static const int sizes[] = {2, 3, 5, 7, 8, 12, 16, 17, 31, 32};
    const int old = mca_coll_loom_verify_graph_orders(GRAPH_ORDERS);
    mca_coll_loom_sched_t scheds[32];
    const clock_t t0 = clock();
    long verified = 0, same = 0;
    char err[256];

    for (int i = 0; i < 32; ++i) {
        mca_coll_loom_sched_init(&scheds[i]);
    }
    for (int alg = 0; alg < mca_coll_loom_num_algs; ++alg) {
        const mca_coll_loom_alg_t *a = mca_coll_loom_algs[alg];
        const int nlo = NULL == a->knob ? 0 : a->knob_min;
        const int nhi = NULL == a->knob ? 0 : (a->knob_max < nlo + 3 ? a->knob_max : nlo + 3);
        for (int coll = 0; coll < MCA_COLL_LOOM_NUM_COLLS; ++coll) {
            const int nkinds = combines(coll) ? NKINDS : 1;
            if (!mca_coll_loom_alg_serves(alg, coll)) {
                continue;
            }
            for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
                const int P = sizes[si], roots[4] = {0, 1, P / 2, P - 1};
                for (int ri = 0; ri < (is_rooted(coll) ? 4 : 1); ++ri) {
                    uint64_t seen[3 * 4 * NKINDS];
                    bool seen_idem[3 * 4 * NKINDS], seen_ord[3 * 4 * NKINDS], again = false;
                    int nseen = 0;
                    for (int k = 0; k < ri; ++k) {
                        again |= roots[k] == roots[ri];
                    }
                    for (int segs = 1; segs <= 3 && !again; ++segs) {
                        for (int n = nlo; n <= nhi; ++n) {
                            for (int kd = 0; kd < nkinds; ++kd) {
                                const unsigned call = combines(coll) ? kinds[kd].call : (C | E | I);
                                const bool idem = 0 != (call & I);
                                const bool ord = mca_coll_loom_alg_keeps_order(alg, coll) && !(call & C);
                                mca_coll_loom_params_t p = {.P = P, .root = roots[ri], .knob = n, .call = call,
                                                            .coll = coll, .segs = segs};
                                bool dup = false;
                                int rounds, brc;
                                uint64_t fp;

                                if (NULL != mca_coll_loom_alg_refusal(alg, &p)) {
                                    continue;
                                }
                                fp = build_all(alg, &p, scheds, &rounds, &brc);
                                CHECK(MCA_COLL_LOOM_OK == brc, "graph orders: %s %s P=%d: build failed (%d)",
                                      a->name, mca_coll_loom_coll_name(coll), P, brc);
                                if (MCA_COLL_LOOM_OK != brc) {
                                    continue;
                                }
                                for (int k = 0; k < nseen && !dup; ++k) {
                                    dup = seen[k] == fp && (!seen_idem[k] || idem) && (seen_ord[k] || !ord);
                                }
                                if (dup) {
                                    same++;
                                    continue;
                                }
                                seen[nseen] = fp;
                                seen_ord[nseen] = ord;
                                seen_idem[nseen++] = idem;
                                for (int inplace = 0; inplace < (has_in_place(coll) ? 2 : 1); ++inplace) {
                                    int rc = mca_coll_loom_verify_schedules(scheds, ord, &p, inplace, NULL, err,
                                                                            sizeof(err));
                                    verified++;
                                    CHECK(0 == rc, "graph orders: %s %s P=%d root=%d n=%d segs=%d %s%s: %s",
                                          a->name, mca_coll_loom_coll_name(coll), P, p.root, n, segs,
                                          combines(coll) ? kinds[kd].name : "no op",
                                          inplace ? " in place" : "", err);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for (int i = 0; i < 32; ++i) {
        mca_coll_loom_sched_fini(&scheds[i]);
    }
    mca_coll_loom_verify_graph_orders(old);
    printf("graph orders   %6ld verifications under %d orders each, %ld identical (every algorithm and "
           "collective, P = 2..32: 10 sizes, 4 roots, 4 knobs, segs 1..3, every op) %.1f s\n", verified, GRAPH_ORDERS, same,
           (double) (clock() - t0) / CLOCKS_PER_SEC);
}

/* The call property the component adds when hierarchical's node phases would run
 * through the node's segment: the four collectives it serves, up to the default slot
 * size (coll_loom_shm_slot_size 8192) */
static unsigned with_shm(int coll, size_t bytes)
{
    const bool served = MCA_COLL_LOOM_COLL_ALLREDUCE == coll || MCA_COLL_LOOM_COLL_BARRIER == coll ||
                        MCA_COLL_LOOM_COLL_BCAST == coll || MCA_COLL_LOOM_COLL_REDUCE == coll;
    return served && bytes <= 8192 ? MCA_COLL_LOOM_CALL_SHM : 0;
}

/* the name of what a decision chose */
static const char *chosen(const mca_coll_loom_choice_t *ch)
{
    return ch->alg >= 0 ? mca_coll_loom_algs[ch->alg]->name : "previous";
}

static void test_decide(void)
{
    int knobs[64];
    static const size_t sizes[] = {0, 1, 4, 8, 255, 256, 2040, 4096, 65536, 1 << 20, (size_t) 1 << 33};
    static const unsigned calls[] = {C | E | V, C | E, C | E | I, C, 0};

    for (int a = 0; a < mca_coll_loom_num_algs; ++a) {
        knobs[a] = mca_coll_loom_algs[a]->knob ? mca_coll_loom_algs[a]->knob_default : 0;
    }
    /* every rule names a registered algorithm serving its collective */
    for (int i = 0; i < mca_coll_loom_num_builtin_rules; ++i) {
        const mca_coll_loom_rule_t *r = &mca_coll_loom_builtin_rules[i];
        CHECK(NULL == r->alg || mca_coll_loom_alg_find(r->coll, r->alg) >= 0, "rule %d names unknown '%s'",
              i, r->alg);
    }
    for (int coll = 0; coll < MCA_COLL_LOOM_NUM_COLLS; ++coll) {
        for (int P = 2; P <= 64; ++P) {
            for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si) {
                for (size_t ci = 0; ci < sizeof(calls) / sizeof(calls[0]); ++ci) {
                    for (int forced = -1; forced < mca_coll_loom_num_algs; ++forced) {
                        /* shapes: one node, P nodes of one rank, and nodes of 4 ranks */
                        const int shape = (int) ((si + ci) % 3);
                        mca_coll_loom_params_t p = {.P = P, .call = calls[ci],
                                                    .nodes = 0 == shape ? 1 : 1 == shape ? P : (P + 3) / 4,
                                                    .rpn = 0 == shape ? P : 1 == shape ? 1 : (P < 4 ? P : 4)};
                        mca_coll_loom_choice_t ch;
                        if (forced >= 0 && !mca_coll_loom_alg_serves(forced, coll)) {
                            continue;
                        }
                        if (MCA_COLL_LOOM_COLL_BARRIER == coll || MCA_COLL_LOOM_COLL_BCAST == coll ||
                            MCA_COLL_LOOM_COLL_ALLGATHER == coll) {
                            p.call = C | E | I; /* no op: the component passes these */
                        }
                        mca_coll_loom_decide(coll, sizes[si], &p, knobs, forced, NULL, 0, &ch);
                        if (ch.alg >= 0) {
                            mca_coll_loom_params_t q = p;
                            q.knob = ch.knob;
                            CHECK(mca_coll_loom_alg_serves(ch.alg, coll), "decide picked a non-%s alg",
                                  mca_coll_loom_coll_name(coll));
                            CHECK(NULL == mca_coll_loom_alg_refusal(ch.alg, &q),
                                  "decide picked %s, which refuses P=%d call=%x",
                                  mca_coll_loom_algs[ch.alg]->name, P, p.call);
                        }
                        if (forced >= 0 && NULL == ch.refused) {
                            CHECK(ch.alg == forced, "forced %s not honoured", mca_coll_loom_algs[forced]->name);
                        }
                        if (forced >= 0 && NULL != ch.refused) {
                            /* a refused forced algorithm is replaced by a loom algorithm
                             * when one accepts the call, else by the previous component */
                            bool any = false;
                            for (int a = 0; a < mca_coll_loom_num_algs; ++a) {
                                mca_coll_loom_params_t q = p;
                                q.knob = knobs[a];
                                any = any || (mca_coll_loom_alg_serves(a, coll) &&
                                              NULL == mca_coll_loom_alg_refusal(a, &q));
                            }
                            CHECK(ch.alg >= 0 || !any, "forced %s refused but no loom replacement",
                                  mca_coll_loom_algs[forced]->name);
                        }
                        if (MCA_COLL_LOOM_COLL_BARRIER == coll) {
                            CHECK(ch.alg >= 0, "barrier left to the previous component");
                        }
                    }
                }
            }
        }
    }
    /* several nodes: hierarchical for allgather and, on node-consecutive ranks, scan and
     * exscan; round-robin ranks make scan fall through to recursive doubling */
    {
        int cons[8], rr[8];
        for (int r = 0; r < 8; ++r) {
            cons[r] = r / 2;
            rr[r] = r % 4;
        }
        struct {
            int coll;
            size_t bytes;
            const int *map;
            const char *want; /* NULL: the previous component */
        } cases[] = {
            /* large commutative allreduce: tuned up to 256 KiB, then hierarchical's rings */
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 256 << 10, cons, NULL},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 512 << 10, cons, "hierarchical"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 2 << 20, cons, "hierarchical"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 16 << 20, rr, "hierarchical"},
            {MCA_COLL_LOOM_COLL_ALLGATHER, 64, rr, "hierarchical"},
            {MCA_COLL_LOOM_COLL_ALLGATHER, 512 * 1024, cons, "hierarchical"},
            {MCA_COLL_LOOM_COLL_ALLGATHER, 1 << 20, cons, "hierarchical"},
            {MCA_COLL_LOOM_COLL_ALLGATHER, 2 << 20, cons, "ring"},
            {MCA_COLL_LOOM_COLL_ALLGATHER, 16 << 20, cons, "ring"},
            {MCA_COLL_LOOM_COLL_BCAST, 64, cons, "hierarchical"}, /* point to point */
            {MCA_COLL_LOOM_COLL_BCAST, 8, rr, "hierarchical"},
            {MCA_COLL_LOOM_COLL_BCAST, 512, rr, "hierarchical"},
            {MCA_COLL_LOOM_COLL_REDUCE, 512 << 10, cons, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE, 2 << 20, cons, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE, 4 << 20, cons, "hierarchical"}, /* pipelined */
            {MCA_COLL_LOOM_COLL_REDUCE, 16 << 20, rr, "hierarchical"},
            {MCA_COLL_LOOM_COLL_SCAN, 8, cons, "hierarchical"},
            {MCA_COLL_LOOM_COLL_SCAN, 8, rr, "recursive_doubling"},
            {MCA_COLL_LOOM_COLL_SCAN, 65536, cons, "hierarchical"},
            {MCA_COLL_LOOM_COLL_SCAN, 1024 * 1024, cons, "hierarchical"},
            {MCA_COLL_LOOM_COLL_SCAN, 2048 * 1024, cons, NULL},
            {MCA_COLL_LOOM_COLL_EXSCAN, 128 * 1024, cons, "hierarchical"},
            {MCA_COLL_LOOM_COLL_EXSCAN, 256 * 1024, cons, NULL},
            {MCA_COLL_LOOM_COLL_EXSCAN, 16384, cons, "hierarchical"},
            {MCA_COLL_LOOM_COLL_EXSCAN, 16384, rr, NULL},
            {MCA_COLL_LOOM_COLL_EXSCAN, 1024, NULL, "recursive_doubling"},
            /* one node (loom-tune --report at np 8) */
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 256 * 1024, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 512 * 1024, NULL, NULL},
            {MCA_COLL_LOOM_COLL_BCAST, 8, NULL, "hierarchical"}, /* the small areas */
            {MCA_COLL_LOOM_COLL_BCAST, 127, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_BCAST, 128, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_BCAST, 256, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_BCAST, 512, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_BCAST, 8192, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_BCAST, 16384, NULL, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE, 4096, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER, 128 * 1024, NULL, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER, 256 * 1024, NULL, "ring"},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 256 * 1024, NULL, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 512 * 1024, NULL, "ring"},
            {MCA_COLL_LOOM_COLL_ALLGATHER, 4096, NULL, NULL},
            {MCA_COLL_LOOM_COLL_ALLGATHER, 16384, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_REDUCE, 8, NULL, "hierarchical"}, /* the small slots */
            {MCA_COLL_LOOM_COLL_REDUCE, 64, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_REDUCE, 512, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_REDUCE, 8192, NULL, "hierarchical"},
            {MCA_COLL_LOOM_COLL_REDUCE, 8192 + 4, NULL, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE, 8, cons, "hierarchical"},
            {MCA_COLL_LOOM_COLL_REDUCE, 256, rr, "hierarchical"},
            {MCA_COLL_LOOM_COLL_REDUCE, 512, rr, "hierarchical"},
            {MCA_COLL_LOOM_COLL_REDUCE, 8192, cons, "hierarchical"},
            /* reduce_scatter_block on several nodes: the ring at 256-511 KiB and from 1 MiB */
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 256 * 1024 - 8, cons, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 256 * 1024, cons, "ring"},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 256 * 1024, rr, "ring"},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 512 * 1024 - 8, cons, "ring"},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 512 * 1024, cons, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 1024 * 1024 - 8, rr, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 1024 * 1024, cons, "ring"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
            const bool multi = NULL != cases[i].map;
            mca_coll_loom_params_t p = {.P = 8, .call = C | E | with_shm(cases[i].coll, cases[i].bytes),
                                        .coll = cases[i].coll, .node_of = cases[i].map,
                                        .nodes = multi ? 4 : 1, .rpn = multi ? 2 : 8};
            mca_coll_loom_choice_t ch;
            mca_coll_loom_decide(cases[i].coll, cases[i].bytes, &p, knobs, -1, NULL, 0, &ch);
            CHECK(NULL == cases[i].want ? ch.alg < 0
                                        : ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, cases[i].want),
                  "decide %s %zu B %s: %s, expected %s", mca_coll_loom_coll_name(cases[i].coll), cases[i].bytes,
                  cases[i].map == rr ? "round-robin" : multi ? "4x2" : "one node",
                  chosen(&ch), cases[i].want ? cases[i].want : "previous");
        }
        /* non-blocking allreduce on 4 x 2: libnbc from 64 KiB, hierarchical from 512 KiB */
        for (int i = 0; i < 3; ++i) {
            const size_t bytes = (size_t[]){65536, 256 << 10, 512 << 10}[i];
            mca_coll_loom_params_t p = {.P = 8, .call = C | E | MCA_COLL_LOOM_CALL_NB,
                                        .coll = MCA_COLL_LOOM_COLL_ALLREDUCE, .node_of = cons, .nodes = 4, .rpn = 2};
            mca_coll_loom_choice_t ch;
            mca_coll_loom_decide(MCA_COLL_LOOM_COLL_ALLREDUCE, bytes, &p, knobs, -1, NULL, 0, &ch);
            CHECK(2 == i ? ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, "hierarchical") : ch.alg < 0,
                  "decide iallreduce %zu B 4x2: %s", bytes, chosen(&ch));
        }
    }
    /* non-blocking calls of one node with the segment (the component sets shm for
     * allreduces up to the slot and barriers): hierarchical, except the barrier of two
     * ranks (libnbc) */
    for (int P = 2; P <= 9; ++P) {
        for (int i = 0; i < 4; ++i) {
            const int coll = i < 3 ? MCA_COLL_LOOM_COLL_ALLREDUCE : MCA_COLL_LOOM_COLL_BARRIER;
            const size_t bytes = (size_t[]){8, 256, 8192, 0}[i];
            const bool want_prev = MCA_COLL_LOOM_COLL_BARRIER == coll && 2 == P;
            mca_coll_loom_params_t p = {.P = P, .call = C | MCA_COLL_LOOM_CALL_NB | MCA_COLL_LOOM_CALL_SHM,
                                        .coll = coll, .nodes = 1, .rpn = P};
            mca_coll_loom_choice_t ch;
            mca_coll_loom_decide(coll, bytes, &p, knobs, -1, NULL, 0, &ch);
            CHECK(want_prev ? ch.alg < 0 : ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, "hierarchical"),
                  "decide i%s %zu B P=%d one node, segment: %s", mca_coll_loom_coll_name(coll), bytes, P,
                  chosen(&ch));
        }
    }
    /* one rank per node: the measured rows of 9-255 nodes (reduce by circulant, allreduce
     * by the ring in 64 KiB segments, commutative ops from 1 MiB; allreduce 16-32 KiB by
     * halving and doubling) and the model's rows from 256 nodes (circulant reduce from
     * 512 KiB, allreduce from 8 MiB; knomial 16-64 KiB) */
    {
        struct {
            int coll, P;
            size_t bytes;
            unsigned call;
            const char *want;
            int knob;
        } cases[] = {
            {MCA_COLL_LOOM_COLL_REDUCE, 16, 1 << 20, C | E, "circulant", 0},
            {MCA_COLL_LOOM_COLL_REDUCE, 255, 16 << 20, C, "circulant", 0},
            {MCA_COLL_LOOM_COLL_REDUCE, 16, (1 << 20) - 8, C | E, NULL, 0},
            {MCA_COLL_LOOM_COLL_REDUCE, 8, 4 << 20, C | E, "hierarchical", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 16, 1 << 20, C | E, "ring", 65536},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 200, 16 << 20, C, "ring", 65536},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 16, 16 << 20, 0, NULL, 0}, /* non-commutative */
            {MCA_COLL_LOOM_COLL_REDUCE, 256, 256 << 10, C | E, "halving_doubling", 0},
            {MCA_COLL_LOOM_COLL_REDUCE, 4096, 512 << 10, C | E, "circulant", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 1024, 1 << 20, C | E, "halving_doubling", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 1024, 4 << 20, C | E, "halving_doubling", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 1024, 8 << 20, C | E, "circulant", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 1024, 4 << 20, E, "halving_doubling", 0},
            /* 16-32 KiB: halving and doubling (measured) to 255 nodes, radix 4 beyond;
             * smaller: the pairwise exchange; from 64 KiB halving and doubling at any P */
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 16, 16 << 10, 0, "halving_doubling", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 255, 32 << 10, C | E, "halving_doubling", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 16, (16 << 10) - 8, C | E, "hierarchical", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 16, 64 << 10, C | E, NULL, 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 8, 16 << 10, C | E, "hierarchical", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 256, 32 << 10, 0, "knomial", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 65536, (64 << 10) - 8, C | E, "knomial", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 65536, 64 << 10, C | E, "halving_doubling", 0},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 1048576, 256 << 10, 0, "halving_doubling", 0},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
            mca_coll_loom_params_t p = {.P = cases[i].P, .call = cases[i].call, .coll = cases[i].coll,
                                        .nodes = cases[i].P, .rpn = 1};
            mca_coll_loom_choice_t ch;
            mca_coll_loom_decide(cases[i].coll, cases[i].bytes, &p, knobs, -1, NULL, 0, &ch);
            CHECK(NULL == cases[i].want ? ch.alg < 0
                                        : ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, cases[i].want) &&
                                              (0 == cases[i].knob || ch.knob == cases[i].knob),
                  "decide %s %zu B on %d one-rank nodes, call %x: %s knob %d, expected %s",
                  mca_coll_loom_coll_name(cases[i].coll), cases[i].bytes, cases[i].P, cases[i].call, chosen(&ch),
                  ch.knob, cases[i].want ? cases[i].want : "previous");
        }
    }
    /* two ranks on one node (loom-tune --report at np 2) */
    {
        struct {
            int coll;
            size_t bytes;
            unsigned call;
            const char *want;
        } cases[] = {
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 8192 + 8, C | E, "pairwise"}, /* above the slot */
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 32768, C | E, "pairwise"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 512 * 1024 - 8, 0, "pairwise"}, /* any op */
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 512 * 1024, C, "ring"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 1024 * 1024, C | E, "ring"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 512 * 1024, 0, NULL}, /* non-commutative: tuned */
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER, 2048, C | E, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER, 4096, C | E, "ring"},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 4096, C, "ring"},
            {MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, 4096, 0, NULL},
            {MCA_COLL_LOOM_COLL_BCAST, 4096, C | E | I, "hierarchical"},
            {MCA_COLL_LOOM_COLL_BARRIER, 0, C | E | I, "hierarchical"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
            mca_coll_loom_params_t p = {.P = 2, .call = cases[i].call | with_shm(cases[i].coll, cases[i].bytes),
                                        .coll = cases[i].coll, .nodes = 1, .rpn = 2};
            mca_coll_loom_choice_t ch;
            mca_coll_loom_decide(cases[i].coll, cases[i].bytes, &p, knobs, -1, NULL, 0, &ch);
            CHECK(NULL == cases[i].want ? ch.alg < 0
                                        : ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, cases[i].want),
                  "decide np 2 %s %zu B call %x: %s, expected %s", mca_coll_loom_coll_name(cases[i].coll),
                  cases[i].bytes, cases[i].call, chosen(&ch),
                  cases[i].want ? cases[i].want : "previous");
        }
    }
    /* one node without the segment (coll_loom_shm 0, a failed setup): hierarchical's
     * point-to-point node phases only where they measured faster (allreduce from 512 B
     * at P >= 3); otherwise what the rules give any other communicator */
    {
        struct {
            int coll, P;
            size_t bytes;
            unsigned call;
            const char *want;
        } cases[] = {
            {MCA_COLL_LOOM_COLL_BARRIER, 8, 0, C | E | I, "dissemination"},
            {MCA_COLL_LOOM_COLL_BARRIER, 2, 0, C | E | I, "dissemination"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 8, 8, C | E | V, "dissemination"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 8, 256, C, "pairwise"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 8, 512, C, "hierarchical"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 4, 8192, C | E, "hierarchical"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 2, 8, C, "pairwise"},
            {MCA_COLL_LOOM_COLL_ALLREDUCE, 2, 4096, 0, "pairwise"},
            {MCA_COLL_LOOM_COLL_BCAST, 8, 4096, C | E | I, NULL},
            {MCA_COLL_LOOM_COLL_BCAST, 2, 512, C | E | I, NULL},
            {MCA_COLL_LOOM_COLL_REDUCE, 8, 4096, C | E, NULL},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
            mca_coll_loom_params_t p = {.P = cases[i].P, .call = cases[i].call, .coll = cases[i].coll, .nodes = 1,
                                        .rpn = cases[i].P};
            mca_coll_loom_choice_t ch;
            mca_coll_loom_decide(cases[i].coll, cases[i].bytes, &p, knobs, -1, NULL, 0, &ch);
            CHECK(NULL == cases[i].want ? ch.alg < 0
                                        : ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, cases[i].want),
                  "decide without shm P=%d %s %zu B call %x: %s, expected %s", cases[i].P,
                  mca_coll_loom_coll_name(cases[i].coll), cases[i].bytes, cases[i].call,
                  chosen(&ch), cases[i].want ? cases[i].want : "previous");
            /* and with it: hierarchical for all of these */
            p.call |= MCA_COLL_LOOM_CALL_SHM;
            mca_coll_loom_decide(cases[i].coll, cases[i].bytes, &p, knobs, -1, NULL, 0, &ch);
            CHECK((ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, "hierarchical")) ||
                      (MCA_COLL_LOOM_COLL_BCAST == cases[i].coll && cases[i].bytes < 256),
                  "decide with shm P=%d %s %zu B: %s, expected hierarchical", cases[i].P,
                  mca_coll_loom_coll_name(cases[i].coll), cases[i].bytes,
                  chosen(&ch));
        }
    }
    {
        /* small bcasts on one node with the segment: hierarchical (its 32 small areas
         * pipeline back-to-back calls) from 0 B with four ranks or more, from 16 B with
         * three, from 128 B with two; below, the previous component */
        int knobs[64] = {0};
        mca_coll_loom_choice_t ch;
        static const int Ps[] = {2, 3, 4, 5, 6, 8};
        for (size_t k = 0; k < sizeof(Ps) / sizeof(Ps[0]); ++k) {
            const int P = Ps[k];
            mca_coll_loom_params_t p = {.P = P, .call = C | E | I | MCA_COLL_LOOM_CALL_SHM,
                                        .coll = MCA_COLL_LOOM_COLL_BCAST, .nodes = 1, .rpn = P};
            for (size_t b = 1; b <= 1024; b *= 2) {
                const bool hier = P >= 4 || (3 == P && b >= 16) || (2 == P && b >= 128);
                mca_coll_loom_decide(MCA_COLL_LOOM_COLL_BCAST, b, &p, knobs, -1, NULL, 0, &ch);
                CHECK(hier ? ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, "hierarchical")
                           : ch.alg < 0,
                      "decide with shm P=%d bcast %zu B: %s, expected %s", P, b,
                      chosen(&ch), hier ? "hierarchical" : "previous");
            }
            /* without the segment: the previous component */
            p.call &= ~MCA_COLL_LOOM_CALL_SHM;
            mca_coll_loom_decide(MCA_COLL_LOOM_COLL_BCAST, 256, &p, knobs, -1, NULL, 0, &ch);
            CHECK(ch.alg < 0, "decide without shm P=%d bcast 256 B: %s, expected previous", P,
                  chosen(&ch));
        }
    }
    {
        /* small reduces on one node with the segment: hierarchical from 0 B with four
         * ranks or more, from 128 B with two or three; never for a non-commutative op or
         * without the segment */
        int knobs[64] = {0};
        mca_coll_loom_choice_t ch;
        for (int P = 2; P <= 9; ++P) {
            mca_coll_loom_params_t p = {.P = P, .call = C | E | MCA_COLL_LOOM_CALL_SHM,
                                        .coll = MCA_COLL_LOOM_COLL_REDUCE, .nodes = 1, .rpn = P};
            for (size_t b = 4; b <= 1024; b *= 2) {
                const bool hier = P >= 4 || b >= 128;
                p.call = C | E | MCA_COLL_LOOM_CALL_SHM;
                mca_coll_loom_decide(MCA_COLL_LOOM_COLL_REDUCE, b, &p, knobs, -1, NULL, 0, &ch);
                CHECK(hier ? ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, "hierarchical")
                           : ch.alg < 0,
                      "decide with shm P=%d reduce %zu B: %s, expected %s", P, b,
                      chosen(&ch), hier ? "hierarchical" : "previous");
                p.call = E | MCA_COLL_LOOM_CALL_SHM;
                mca_coll_loom_decide(MCA_COLL_LOOM_COLL_REDUCE, b, &p, knobs, -1, NULL, 0, &ch);
                CHECK(ch.alg < 0, "decide P=%d reduce %zu B, non-commutative: %s, expected previous", P, b,
                      chosen(&ch));
                p.call = C | E;
                mca_coll_loom_decide(MCA_COLL_LOOM_COLL_REDUCE, b, &p, knobs, -1, NULL, 0, &ch);
                CHECK(ch.alg < 0, "decide P=%d reduce %zu B without shm: %s, expected previous", P, b,
                      chosen(&ch));
            }
        }
    }
    CHECK(mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_ALLREDUCE, "nonsense") < 0, "unknown name found");
    CHECK(mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_BARRIER, "bruck") < 0, "bruck serves barrier?");
}

static void test_topo(void)
{
    mca_coll_loom_topo_t t;
    char line[256];
    const unsigned long k1[] = {7, 7, 9, 9, 4, 4, 4};
    const unsigned long k2[] = {7, 9, 7, 9};
    const unsigned long k3[] = {5};

    CHECK(0 == mca_coll_loom_topo_build(&t, 7, k1), "topo build");
    CHECK(3 == t.nnodes && t.node_consecutive && !t.balanced, "topo k1 shape");
    CHECK(0 == t.leader[0] && 2 == t.leader[1] && 4 == t.leader[2], "topo k1 leaders");
    CHECK(2 == t.min_per_node && 3 == t.max_per_node, "topo k1 per node");
    mca_coll_loom_topo_describe(&t, line, sizeof(line));
    CHECK(NULL != strstr(line, "nodes=3"), "describe: %s", line);
    mca_coll_loom_topo_fini(&t);

    CHECK(0 == mca_coll_loom_topo_build(&t, 4, k2), "topo build");
    CHECK(2 == t.nnodes && !t.node_consecutive && t.balanced, "topo k2 shape");
    CHECK(0 == t.leader[0] && 1 == t.leader[1] && 1 == t.node_of[3], "topo k2 leaders");
    mca_coll_loom_topo_fini(&t);

    CHECK(0 == mca_coll_loom_topo_build(&t, 1, k3), "topo build");
    CHECK(1 == t.nnodes && t.node_consecutive && t.balanced, "topo k3 shape");
    mca_coll_loom_topo_fini(&t);

    /* the fingerprint the ranks compare: the same partition under other keys hashes
     * alike, any other partition (one rank moved, one more rank, a node split) not */
    {
        const unsigned long same[] = {1, 1, 3, 3, 8, 8, 8};      /* k1's partition */
        const unsigned long moved[] = {7, 7, 9, 4, 4, 4, 4};     /* rank 3 on another node */
        const unsigned long split[] = {7, 7, 9, 9, 4, 4, 5};     /* rank 6 alone */
        const unsigned long longer[] = {7, 7, 9, 9, 4, 4, 4, 4}; /* P = 8 */
        const unsigned long *parts[] = {k1, same, moved, split, longer};
        const int np[] = {7, 7, 7, 7, 8};
        uint64_t f[5];

        for (int i = 0; i < 5; ++i) {
            CHECK(0 == mca_coll_loom_topo_build(&t, np[i], parts[i]), "topo build");
            f[i] = mca_coll_loom_topo_fingerprint(&t);
            CHECK(0 != f[i], "topo fingerprint %d is 0", i);
            mca_coll_loom_topo_fini(&t);
        }
        CHECK(f[0] == f[1], "topo fingerprint: one partition, other keys: %016llx != %016llx",
              (unsigned long long) f[0], (unsigned long long) f[1]);
        for (int i = 2; i < 5; ++i) {
            for (int j = 0; j < i; ++j) {
                CHECK(f[i] != f[j], "topo fingerprint: partitions %d and %d hash alike", i, j);
            }
        }
    }
}

static void print_nonadaptable(void)
{
    for (int n = 1; n <= 8; ++n) {
        int count = 0;
        printf("n=%d:", n);
        for (int P = 2; P <= 300; ++P) {
            mca_coll_loom_adaption_t a;
            if (!mca_coll_loom_dissemination_adapt(n, P, &a)) {
                printf(" %d", P);
                count++;
            }
        }
        printf("  (%d of 299)\n", count);
    }
}

/* Node maps for `hierarchical`: node index of rank r under map kind `kind`, before
 * renumbering.  0: blocks of b ranks; 1: round-robin over b nodes; 2: pseudo-random
 * over b nodes; 3: uneven blocks (1, 3, 2, 1, 3, 2, ...). */
static int raw_node(int kind, int b, int r, int P)
{
    switch (kind) {
    case 0: return r / b;
    case 1: return r % b;
    case 2: return (int) ((unsigned) (r * 2654435761u + (unsigned) P * 40503u) >> 7) % b;
    default: {
        static const int sz[3] = {1, 3, 2};
        int node = 0, left = r;
        while (left >= sz[node % 3]) {
            left -= sz[node % 3];
            node++;
        }
        return node;
    }
    }
}

/* hierarchical: every collective on node maps that are consecutive, round-robin,
 * random and uneven, every root, every op kind (non-commutative ones only where the
 * ranks are node-consecutive, else the refusal is checked). */
/* hierarchical alltoall's leader of a node of n ranks holds 2 (n - 1) slots of its
 * members and, per node pair, ceil(n m / P) pack and as many unpack slots (m: the
 * largest other node): at most MCA_COLL_LOOM_MAX_SLOTS in all */
static bool a2a_fits(const int *node_of, int nn, int P)
{
    int count[64] = {0};
    bool fits = true;
    for (int r = 0; r < P; ++r) {
        count[node_of[r]]++;
    }
    for (int k = 0; k < nn; ++k) {
        int m = 0;
        for (int j = 0; j < nn; ++j) {
            m = j != k && count[j] > m ? count[j] : m;
        }
        fits = fits && 2 + 2 * (count[k] - 1) + 2 * ((count[k] * m + P - 1) / P) <= MCA_COLL_LOOM_MAX_SLOTS;
    }
    return fits;
}

/* binomial's reduce under loom_reduce_engage (params.engaged): every engaged count 1..P,
 * every root, the commutative kinds; the verifier expects the engaged ranks' data only
 * (wrapping past P - 1), and a non-commutative call must be refused by the builder. */
static void test_engaged(void)
{
    const int alg = mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_REDUCE, "binomial");
    long verified = 0;
    char err[256];

    CHECK(alg >= 0, "no binomial algorithm");
    for (int P = 1; alg >= 0 && P <= 40; ++P) {
        for (int k = 1; k <= P; ++k) {
            for (size_t kd = 0; kd < sizeof(kinds) / sizeof(kinds[0]); ++kd) {
                mca_coll_loom_params_t p = {.P = P, .call = kinds[kd].call, .coll = MCA_COLL_LOOM_COLL_REDUCE,
                                            .root = MCA_COLL_LOOM_VERIFY_ALL_ROOTS, .engaged = k};
                if (!(kinds[kd].call & C)) {
                    mca_coll_loom_sched_t t;
                    mca_coll_loom_sched_init(&t);
                    p.root = 0;
                    CHECK(k == P || MCA_COLL_LOOM_OK != mca_coll_loom_algs[alg]->build(&t, &p),
                          "binomial reduce P=%d engaged %d: built for a non-commutative op", P, k);
                    mca_coll_loom_sched_fini(&t);
                    continue;
                }
                for (int ip = 0; ip < 2; ++ip) {
                    const int rc = mca_coll_loom_verify(alg, MCA_COLL_LOOM_COLL_REDUCE, &p, ip, NULL, err, sizeof(err));
                    CHECK(0 == rc, "binomial reduce P=%d engaged %d %s%s: %s", P, k, kinds[kd].name,
                          ip ? " in place" : "", err);
                    verified++;
                }
            }
        }
    }
    printf("binomial       %ld verifications of reduces of the first stages (loom_reduce_engage, P = 1..40, "
           "every root)\n", verified);
}

static void test_hierarchical_maps(void)
{
    const int alg = mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_ALLREDUCE, "hierarchical");
    static const int colls[] = {MCA_COLL_LOOM_COLL_ALLREDUCE, MCA_COLL_LOOM_COLL_BARRIER,
                                MCA_COLL_LOOM_COLL_BCAST,     MCA_COLL_LOOM_COLL_REDUCE,
                                MCA_COLL_LOOM_COLL_ALLGATHER, MCA_COLL_LOOM_COLL_SCAN,
                                MCA_COLL_LOOM_COLL_EXSCAN,    MCA_COLL_LOOM_COLL_ALLTOALL};
    long verified = 0, refused = 0, nets = 0;
    int node_of[64], map[64];
    char err[256];

    CHECK(alg >= 0, "no hierarchical algorithm");
    if (alg < 0) {
        return;
    }
    for (int P = 1; P <= 40; ++P) {
        for (int kind = 0; kind < 4; ++kind) {
            for (int b = 1; b <= 5; ++b) {
                int nn = 0;
                bool consecutive = true;
                /* renumber the nodes in order of their lowest rank (loom_topo.h) */
                for (int i = 0; i < 64; ++i) {
                    map[i] = -1;
                }
                for (int r = 0; r < P; ++r) {
                    int raw = raw_node(kind, b, r, P);
                    if (map[raw] < 0) {
                        map[raw] = nn++;
                    }
                    node_of[r] = map[raw];
                    consecutive = consecutive && (0 == r || node_of[r] >= node_of[r - 1]);
                }
                for (size_t ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ++ci) {
                    for (size_t kd = 0; kd < sizeof(kinds) / sizeof(kinds[0]); ++kd) {
                        const int coll = colls[ci];
                        const bool rooted = MCA_COLL_LOOM_COLL_BCAST == coll || MCA_COLL_LOOM_COLL_REDUCE == coll;
                        const bool a2a = MCA_COLL_LOOM_COLL_ALLTOALL == coll;
                        const bool no_op = MCA_COLL_LOOM_COLL_BCAST == coll || MCA_COLL_LOOM_COLL_BARRIER == coll ||
                                           MCA_COLL_LOOM_COLL_ALLGATHER == coll || a2a;
                        const bool prefix = MCA_COLL_LOOM_COLL_SCAN == coll || MCA_COLL_LOOM_COLL_EXSCAN == coll;
                        const unsigned call = no_op ? (C | E | I) : kinds[kd].call;
                        mca_coll_loom_params_t p = {.P = P, .call = call, .coll = coll, .node_of = node_of,
                                                    .nodes = nn, .root = rooted ? MCA_COLL_LOOM_VERIFY_ALL_ROOTS : 0};
                        const bool may = a2a ? a2a_fits(node_of, nn, P) : MCA_COLL_LOOM_COLL_ALLGATHER == coll ||
                                         (prefix ? consecutive
                                                 : (call & C) || (MCA_COLL_LOOM_COLL_REDUCE != coll && consecutive));
                        mca_coll_loom_params_t q = p;
                        q.root = 0;
                        CHECK((NULL == mca_coll_loom_alg_refusal(alg, &q)) == may,
                              "hierarchical %s P=%d map %d/%d call %x: refusal %s", mca_coll_loom_coll_name(coll), P,
                              kind, b, call, may ? "unexpected" : "missing");
                        if (!may) {
                            /* the reason names what this collective needs */
                            const char *why = mca_coll_loom_alg_refusal(alg, &q);
                            CHECK(NULL != why && NULL != strstr(why, a2a      ? "too many ranks"
                                                                     : prefix ? "not consecutive"
                                                                              : "not commutative"),
                                  "hierarchical %s refusal: '%s'", mca_coll_loom_coll_name(coll), why);
                            refused++;
                            continue;
                        }
                        /* bcast: in place is meaningless, segments pipeline it (1: unpipelined);
                         * reduce: segments (>= 2) pipeline it; allreduce: they put the ring
                         * among the leaders */
                        const bool bc = MCA_COLL_LOOM_COLL_BCAST == coll, ar = MCA_COLL_LOOM_COLL_ALLREDUCE == coll;
                        const bool ag = MCA_COLL_LOOM_COLL_ALLGATHER == coll;
                        const bool seg2 = ar || MCA_COLL_LOOM_COLL_REDUCE == coll;
                        for (int ip = 0; ip < (bc ? 3 : seg2 ? 4 : ag || a2a ? 1 : 2); ++ip) {
                            p.segs = bc ? (int[]){1, 2, 5}[ip] : seg2 && ip >= 2 ? 2 + 3 * (ip % 2) : 0;
                            int rc = mca_coll_loom_verify(alg, coll, &p, bc ? 0 : ip % 2, NULL, err, sizeof(err));
                            CHECK(0 == rc, "hierarchical %s P=%d map %d/%d %s%s segs %d: %s",
                                  mca_coll_loom_coll_name(coll), P, kind, b, no_op ? "no op" : kinds[kd].name,
                                  !bc && ip % 2 ? " in place" : "", p.segs, err);
                            verified++;
                        }
                        /* bcast and reduce: the phase among the nodes by another algorithm
                         * (params.net_alg, as the rules choose it from 17 nodes), each that
                         * accepts the leaders' call, unpipelined and in blocks */
                        for (int na = 0; rooted && nn > 1 && P <= 24 && na < mca_coll_loom_num_algs; ++na) {
                            mca_coll_loom_params_t l = {.P = nn, .call = call, .coll = coll, .nodes = nn, .rpn = 1};
                            if (na == alg || !mca_coll_loom_alg_serves(na, coll) ||
                                NULL != mca_coll_loom_alg_refusal(na, &l) ||
                                0 == strcmp(mca_coll_loom_algs[na]->name, "torus")) {
                                continue;
                            }
                            for (int ns = 1; ns <= 3; ns += 2) {
                                mca_coll_loom_params_t pn = p;
                                pn.segs = 0;
                                pn.net_alg = na + 1;
                                pn.net_knob = mca_coll_loom_algs[na]->knob_default;
                                pn.net_segs = ns;
                                int rc = mca_coll_loom_verify(alg, coll, &pn, 0, NULL, err, sizeof(err));
                                CHECK(0 == rc, "hierarchical %s P=%d map %d/%d %s, %s among the nodes in %d: %s",
                                      mca_coll_loom_coll_name(coll), P, kind, b, no_op ? "no op" : kinds[kd].name,
                                      mca_coll_loom_algs[na]->name, ns, err);
                                verified++;
                                nets++;
                            }
                        }
                        if (no_op) {
                            break; /* no op: one kind is enough */
                        }
                    }
                }
            }
        }
    }
    printf("hierarchical   %ld verifications over node maps (P = 1..40, consecutive, round-robin, random, "
           "uneven; every root; %ld with another algorithm among the nodes), %ld refusals checked\n", verified,
           nets, refused);
}

int main(int argc, char **argv)
{
    int pmax = 300;

    if (argc > 1 && 0 == strcmp(argv[1], "--adaptable")) {
        print_nonadaptable();
        return 0;
    }
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--shard") && i + 1 < argc &&
            2 == sscanf(argv[i + 1], "%d/%d", &shard_k, &shard_n) && shard_n >= 1 && shard_k >= 0 &&
            shard_k < shard_n) {
            ++i;
        } else if (atoi(argv[i]) > 0) {
            pmax = atoi(argv[i]);
        } else {
            fprintf(stderr, "usage: test_sched [PMAX] [--shard K/N] | --adaptable\n");
            return 2;
        }
    }
    if (0 == shard_k) {
        test_verifier_catches_errors();
        test_block_moves();
        test_alltoall_checks();
        test_new_collectives();
        test_graph_mode_catches_errors();
        test_graph_orders();
        test_topo();
        test_decide();
        test_circulant(pmax); /* about 50 s: here the shards of make check come out even */
        test_engaged();
    }
    test_algorithms(pmax);
    if (shard_n - 1 == shard_k) {
        test_allreduce_large(pmax, "swing", 0);
        test_allreduce_large(pmax, "knomial", 4);
        test_allreduce_large(pmax, "knomial", 3);
        test_hierarchical_maps();
    }
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("all schedule checks passed\n");
    return 0;
}
