/*
 * Unit test (no MPI): every registered algorithm's schedule is executed symbolically
 * for every P in 1..PMAX and every knob n in 1..8, for each kind of op, with and
 * without MPI_IN_PLACE, and must give every rank every contribution exactly once (in
 * rank order where the algorithm claims to keep it).  Refusals are checked against
 * an independent derivation of each restriction, and round counts against the paper.
 *
 * Usage: test_sched [PMAX]        (default 300)
 *        test_sched --adaptable   prints, for n = 1..8, the P <= 300 that the adapted
 *                                 dissemination allreduce cannot serve
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static bool expect_refusal(int alg, int P, int n, unsigned call)
{
    const mca_coll_loom_alg_t *a = &mca_coll_loom_algs[alg];
    if ((a->needs & MCA_COLL_LOOM_NEEDS_COMMUTATIVE) && !(call & C)) {
        return true;
    }
    if ((a->needs & MCA_COLL_LOOM_NEEDS_EXACT) && !(call & E)) {
        return true;
    }
    if (0 == strcmp(a->name, "dissemination") && !(call & I)) {
        return !adaptable(n, P);
    }
    return false;
}

static int expected_rounds(const char *name, int P, int n, unsigned call)
{
    int k;
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
        return 2 * (P - 1); /* reduce-scatter and allgather, P-1 steps each */
    }
    k = smallest_k(n, P);
    (void) call;
    return k; /* dissemination and bruck: ceil(log_{n+1} P) rounds for every P */
}

static void test_algorithms(int pmax)
{
    char err[256];

    for (int alg = 0; alg < mca_coll_loom_num_algs; ++alg) {
        const mca_coll_loom_alg_t *a = &mca_coll_loom_algs[alg];
        int nmax = NULL == a->knob ? 1 : 8;
        /* the ring splits every slot into P blocks: P^3 counters per check, so it is
         * verified up to 128 ranks (every step is the same for any P) */
        int palg = 0 == strcmp(a->name, "ring") && pmax > 128 ? 128 : pmax;
        long cases = 0;

        for (int coll = 0; coll < MCA_COLL_LOOM_NUM_COLLS; ++coll) {
            int nkinds = MCA_COLL_LOOM_COLL_BARRIER == coll ? 1 : (int) (sizeof(kinds) / sizeof(kinds[0]));
            if (!mca_coll_loom_alg_serves(alg, coll)) {
                continue;
            }
            for (int P = 1; P <= palg; ++P) {
                for (int n = 1; n <= nmax; ++n) {
                    for (int kd = 0; kd < nkinds; ++kd) {
                        unsigned call = MCA_COLL_LOOM_COLL_BARRIER == coll ? (C | E | I) : kinds[kd].call;
                        mca_coll_loom_params_t p = {.P = P, .rank = 0, .root = 0,
                                                    .knob = NULL == a->knob ? 0 : n, .call = call};
                        const char *why = mca_coll_loom_alg_refusal(alg, &p);
                        bool refuse = expect_refusal(alg, P, n, call);
                        CHECK((NULL != why) == refuse, "%s %s P=%d n=%d %s: refusal '%s', expected %s",
                              a->name, mca_coll_loom_coll_name(coll), P, n,
                              MCA_COLL_LOOM_COLL_BARRIER == coll ? "barrier" : kinds[kd].name,
                              why ? why : "none", refuse ? "a refusal" : "none");
                        if (NULL != why) {
                            continue;
                        }
                        for (int inplace = 0; inplace < 2; ++inplace) {
                            mca_coll_loom_verify_stats_t st;
                            int rc = mca_coll_loom_verify(alg, coll, &p, inplace, &st, err, sizeof(err));
                            cases++;
                            CHECK(0 == rc, "%s %s P=%d n=%d %s%s: %s", a->name,
                                  mca_coll_loom_coll_name(coll), P, n,
                                  MCA_COLL_LOOM_COLL_BARRIER == coll ? "barrier" : kinds[kd].name,
                                  inplace ? " in place" : "", err);
                            if (0 == rc) {
                                int want = expected_rounds(a->name, P, n, call);
                                CHECK(st.rounds == want, "%s P=%d n=%d: %d rounds, expected %d", a->name,
                                      P, n, st.rounds, want);
                            }
                        }
                    }
                }
            }
        }
        printf("%-14s %ld schedules verified (P = 1..%d, n = 1..%d)\n", a->name, cases, palg, nmax);
    }
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

static void test_verifier_catches_errors(void)
{
    mca_coll_loom_params_t p = {.P = 6, .call = C | E | V};
    mca_coll_loom_sched_t s;
    char err[256];

    CHECK(0 != mca_coll_loom_verify_builder(build_twice, true, &p, false, NULL, err, sizeof(err)),
          "double counting not detected");
    CHECK(NULL != strstr(err, "counted"), "unexpected message: %s", err);
    CHECK(0 != mca_coll_loom_verify_builder(build_deadlock, false, &p, false, NULL, err, sizeof(err)),
          "deadlock not detected");
    CHECK(NULL != strstr(err, "deadlock"), "unexpected message: %s", err);
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

static void test_decide(void)
{
    int knobs[64];
    static const size_t sizes[] = {0, 1, 4, 8, 255, 256, 2040, 4096, 65536, 1 << 20, (size_t) 1 << 33};
    static const unsigned calls[] = {C | E | V, C | E, C | E | I, C, 0};

    for (int a = 0; a < mca_coll_loom_num_algs; ++a) {
        knobs[a] = mca_coll_loom_algs[a].knob ? mca_coll_loom_algs[a].knob_default : 0;
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
                        if (MCA_COLL_LOOM_COLL_BARRIER == coll) {
                            p.call = C | E | I;
                        }
                        mca_coll_loom_decide(coll, sizes[si], &p, knobs, forced, NULL, 0, &ch);
                        if (ch.alg >= 0) {
                            mca_coll_loom_params_t q = p;
                            q.knob = ch.knob;
                            CHECK(mca_coll_loom_alg_serves(ch.alg, coll), "decide picked a non-%s alg",
                                  mca_coll_loom_coll_name(coll));
                            CHECK(NULL == mca_coll_loom_alg_refusal(ch.alg, &q),
                                  "decide picked %s, which refuses P=%d call=%x",
                                  mca_coll_loom_algs[ch.alg].name, P, p.call);
                        }
                        if (forced >= 0 && NULL == ch.refused) {
                            CHECK(ch.alg == forced, "forced %s not honoured", mca_coll_loom_algs[forced].name);
                        }
                        if (forced >= 0 && NULL != ch.refused) {
                            /* a refused forced algorithm is replaced by a loom algorithm */
                            CHECK(ch.alg >= 0, "forced %s refused but no loom replacement",
                                  mca_coll_loom_algs[forced].name);
                        }
                        if (MCA_COLL_LOOM_COLL_BARRIER == coll) {
                            CHECK(ch.alg >= 0, "barrier left to the previous component");
                        }
                    }
                }
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

int main(int argc, char **argv)
{
    int pmax = 300;

    if (argc > 1 && 0 == strcmp(argv[1], "--adaptable")) {
        print_nonadaptable();
        return 0;
    }
    if (argc > 1) {
        pmax = atoi(argv[1]);
    }
    test_verifier_catches_errors();
    test_topo();
    test_decide();
    test_algorithms(pmax);
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("all schedule checks passed\n");
    return 0;
}
