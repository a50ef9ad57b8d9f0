/*
 * loom: the LogGP model's choice of segments (chunks): choose_segs, a search by
 * simulation, and auto_segs, the cheap choice the component makes per call.
 */
#include <math.h>
#include <string.h>

#include "opal/loom/loom_model_impl.h"

#define CHOOSE_BUDGET_OPS    (1L << 22)
#define CHOOSE_MAX_SEGS      4096
#define AUTO_FIT_P           32         /* auto_segs fits its pipeline model at up to this P */
#define AUTO_SEG_BYTES       (1024 * 1024) /* auto_segs: segment bound of a schedule in parts */

/* ---------------------------------------------------------------------------
 * choose_segs
 * ------------------------------------------------------------------------- */

typedef struct {
    int alg, P;
    mca_coll_loom_build_fn_t build;
    mca_coll_loom_coll_t coll;
    mca_coll_loom_params_t shape;
    size_t bytes, esz;
    const mca_coll_loom_model_params_t *m;
    long budget;      /* simulated ops left */
    long ops_base, ops_per_seg; /* rank 0's op count ~ base + per_seg * segs */
    bool symmetric;
    int best;
    double tbest;
} choose_t;

/* Estimated cost of simulating segs = s, in ops. */
static long sim_cost(const choose_t *c, int s)
{
    long per_rank = c->ops_base + c->ops_per_seg * (long) s;
    return c->symmetric ? per_rank : per_rank * (long) c->P;
}

/* Simulates segs = s if the budget allows; returns the time or -1. */
static double try_segs(choose_t *c, int s)
{
    mca_coll_loom_model_result_t res;
    mca_coll_loom_params_t p = c->shape;
    long cost = sim_cost(c, s);

    if (cost > c->budget) {
        return -1.0;
    }
    c->budget -= cost;
    p.segs = s;
    if (MCA_COLL_LOOM_OK !=
        mca_coll_loom_model_predict_any(c->alg, c->build, c->coll, &p, c->bytes, c->esz, c->m, NULL, NULL, &res)) {
        return -1.0;
    }
    if (c->best < 1 || res.time < c->tbest) {
        c->best = s;
        c->tbest = res.time;
    }
    return res.time;
}

/* Op by op (not memcmp: the op struct has padding). */
static bool same_ops(const mca_coll_loom_sched_t *a, const mca_coll_loom_sched_t *b)
{
    for (int i = 0; i < a->nops; ++i) {
        const mca_coll_loom_op_t *x = &a->ops[i], *y = &b->ops[i];
        if (x->kind != y->kind || x->src != y->src || x->dst != y->dst || x->peer != y->peer ||
            x->blk != y->blk || x->nblk != y->nblk || x->dblk != y->dblk) {
            return false;
        }
    }
    return true;
}

static int rank0_ops(const choose_t *c, int segs, mca_coll_loom_sched_t *s)
{
    mca_coll_loom_params_t p = c->shape;
    p.segs = segs;
    p.rank = 0;
    if (MCA_COLL_LOOM_OK != mca_coll_loom_model_build_rank(c->alg, c->build, s, &p)) {
        return -1;
    }
    return s->nops;
}

/* Whether segs changes rank 0's schedule at all (segs 1 against 2), and what one
 * more segment costs in ops; *smax: the most segments worth trying. */
static bool choose_probe(choose_t *c, size_t count, int *smax)
{
    mca_coll_loom_sched_t s1, s2;
    int n1, n2, nparts;
    bool uses;

    mca_coll_loom_sched_init(&s1);
    mca_coll_loom_sched_init(&s2);
    s1.no_graph = s2.no_graph = true;
    n1 = rank0_ops(c, 1, &s1);
    n2 = rank0_ops(c, 2, &s2);
    uses = n1 >= 0 && n2 >= 0 &&
           (n1 != n2 || s1.nblocks != s2.nblocks || s1.nseg != s2.nseg ||
            !same_ops(&s1, &s2));
    nparts = (n2 >= 0 && s2.nblocks > 0) ? s2.nblocks / (s2.nseg > 0 ? s2.nseg : 1) : 1;
    c->ops_per_seg = n2 > n1 ? n2 - n1 : 0;
    c->ops_base = n1 - c->ops_per_seg > 1 ? n1 - c->ops_per_seg : 1;
    mca_coll_loom_sched_fini(&s1);
    mca_coll_loom_sched_fini(&s2);

    *smax = (int) (count / (size_t) (nparts > 0 ? nparts : 1));
    if (*smax > CHOOSE_MAX_SEGS) {
        *smax = CHOOSE_MAX_SEGS;
    }
    return uses;
}

/* The search by simulation, up to smax segments: false when the budget did not even
 * allow segs = 1. */
static bool choose_search(choose_t *c, int smax)
{
    int lo, hi;

    /* Coarse: powers of two (and smax) while the budget lasts. */
    for (int s = 1;; s = 2 * s < smax ? 2 * s : smax) {
        if (try_segs(c, s) < 0 || s == smax) {
            break;
        }
    }
    if (c->best < 1) {
        return false;
    }
    /* Fine: ternary search on the integers around the best power of two (the
     * predicted time is close to convex in segs there). */
    lo = c->best / 2 > 1 ? c->best / 2 : 1;
    hi = 2 * c->best < smax ? 2 * c->best : smax;
    while (hi - lo > 2) {
        int m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
        double t1 = try_segs(c, m1), t2 = try_segs(c, m2);
        if (t1 < 0 || t2 < 0) {
            break;
        }
        if (t1 <= t2) {
            hi = m2;
        } else {
            lo = m1;
        }
    }
    for (int s = lo; s <= hi; ++s) {
        try_segs(c, s);
    }
    return true;
}

/* Too large to simulate: a pipeline of depth D in s pieces fills in D - 1 stages
 * of L + 2o + b n/s, then delivers a piece every max(2o, g) + b n/s:
 *   T(s) = (D - 1)(L + 2o + b n/s) + s max(2o, g) + b n,
 * least at s* = sqrt((D - 1) b n / max(2o, g)).  D = ceil(log2 P) (tree depth);
 * b = G, plus gamma for reductions. */
static int choose_analytic(mca_coll_loom_coll_t coll, int P, size_t bytes, const mca_coll_loom_model_params_t *m,
                           int smax, double *predicted, int *method)
{
    const bool red = MCA_COLL_LOOM_COLL_BCAST != coll && MCA_COLL_LOOM_COLL_ALLGATHER != coll;
    double D = ceil(log2((double) P)), a1 = m->L + 2.0 * m->o, a2 = 2.0 * m->o > m->g ? 2.0 * m->o : m->g;
    double b = m->G + (red ? m->gamma : 0.0), n = (double) bytes, s;
    int best;

    if (D < 1) {
        D = 1;
    }
    s = a2 > 0 ? sqrt((D - 1) * b * n / a2) : smax;
    s = s < 1 ? 1 : (s > smax ? smax : s);
    best = (int) (s + 0.5);
    *predicted = (D - 1) * (a1 + b * n / best) + best * a2 + b * n;
    *method = MCA_COLL_LOOM_MODEL_ANALYTIC;
    return best;
}

static int choose_any(int alg, mca_coll_loom_build_fn_t build, mca_coll_loom_coll_t coll, int P,
                      size_t bytes, size_t elem_size, const mca_coll_loom_model_params_t *m,
                      const mca_coll_loom_params_t *shape, double *predicted, int *method)
{
    choose_t c = {.alg = alg, .build = build, .P = P, .coll = coll, .bytes = bytes, .m = m,
                  .budget = CHOOSE_BUDGET_OPS};
    int smax;
    double dummy;
    int dmethod;

    if (NULL == predicted) {
        predicted = &dummy;
    }
    if (NULL == method) {
        method = &dmethod;
    }
    *predicted = -1.0;
    *method = MCA_COLL_LOOM_MODEL_NONE;
    if ((NULL == build && (alg < 0 || alg >= mca_coll_loom_num_algs)) || P < 1 || P > MAX_P || NULL == m) {
        return 1;
    }
    c.esz = elem_size > 0 ? elem_size : 1;
    if (NULL != shape) {
        c.shape = *shape;
    } else {
        memset(&c.shape, 0, sizeof(c.shape));
        c.shape.call = MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT;
    }
    c.shape.P = P;
    c.shape.coll = coll;

    if (!choose_probe(&c, bytes / c.esz, &smax) || smax <= 1) {
        mca_coll_loom_model_result_t res;
        c.shape.segs = 1;
        if (MCA_COLL_LOOM_OK ==
            mca_coll_loom_model_predict_any(alg, build, coll, &c.shape, bytes, c.esz, m, NULL, NULL, &res)) {
            *predicted = res.time;
            *method = res.method;
        }
        return 1;
    }

    if (P > DEFAULT_SYM_MIN_P) {
        ctx_t x;
        mca_coll_loom_model_ctx_init(&x, alg, build, &c.shape, coll, bytes, c.esz, m, NULL);
        x.shape.segs = 2;
        c.symmetric = SYM_NONE != mca_coll_loom_model_detect_symmetry(&x);
        mca_coll_loom_model_ctx_fini(&x);
    }
    if (P <= 64 && c.budget < 16 * sim_cost(&c, smax)) {
        c.budget = 16 * sim_cost(&c, smax); /* small P: always simulate */
    }
    if (choose_search(&c, smax)) {
        *predicted = c.tbest;
        *method = c.symmetric ? MCA_COLL_LOOM_MODEL_SYMMETRIC : MCA_COLL_LOOM_MODEL_FULL;
        return c.best;
    }
    return choose_analytic(coll, P, bytes, m, smax, predicted, method);
}

int mca_coll_loom_model_choose_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes,
                                    size_t elem_size, const mca_coll_loom_model_params_t *m,
                                    const mca_coll_loom_params_t *shape, double *predicted,
                                    int *method)
{
    return choose_any(alg, NULL, coll, P, bytes, elem_size, m, shape, predicted, method);
}

int mca_coll_loom_model_choose_segs_builder(mca_coll_loom_build_fn_t build, mca_coll_loom_coll_t coll, int P,
                                            size_t bytes, size_t elem_size,
                                            const mca_coll_loom_model_params_t *m,
                                            const mca_coll_loom_params_t *shape, double *predicted,
                                            int *method)
{
    return NULL == build ? 1 : choose_any(-1, build, coll, P, bytes, elem_size, m, shape, predicted, method);
}

/* ---------------------------------------------------------------------------
 * auto_segs: the cheap choice for the component
 * ------------------------------------------------------------------------- */

/* Depth of a tree over P ranks, the fill of a pipeline (at least 1). */
static double tree_depth(int P)
{
    return P > 2 ? ceil(log2((double) P)) : 1.0;
}

/* Segments of a schedule in parts (nparts of them at P0 ranks). */
static int auto_parts_segs(mca_coll_loom_coll_t coll, int P, int P0, int nparts, size_t count, size_t esz)
{
    /* A schedule in parts (the ring: one part per rank) is bandwidth-optimal
     * unsegmented under LogGP, and segments only add messages; what they buy is
     * cache locality, which the model does not see.  So segments of at most
     * AUTO_SEG_BYTES, the size the component's measurements favoured (loom_bw,
     * docs/user/performance.md); an allgather has no reduction to keep in cache, and
     * runs unsegmented. */
    if (MCA_COLL_LOOM_COLL_ALLGATHER == coll) {
        return 1;
    }
    size_t parts = nparts == P0 ? (size_t) P : (size_t) nparts;
    size_t part = count / parts, seg_el = AUTO_SEG_BYTES / esz;
    size_t segs = seg_el > 0 ? (part + seg_el - 1) / seg_el : part;
    if (segs > part) {
        segs = part;
    }
    if (segs > CHOOSE_MAX_SEGS) {
        segs = CHOOSE_MAX_SEGS;
    }
    return segs > 1 ? (int) segs : 1;
}

/* A pipeline over the whole message (the two-tree): (K + F) rounds of about
 * b n / K + a each, i.e. T(K) = A + B K + C / K with B = a and C = F b n.  Fit
 * A, B, C to three cheap simulations at P0 ranks (shape) and small K, scale the fill
 * (C) by the tree depth from P0 to P, and take K* = sqrt(C / B). */
static int auto_pipeline_segs(int alg, mca_coll_loom_coll_t coll, int P, mca_coll_loom_params_t *shape,
                              size_t bytes, size_t esz, size_t count, const mca_coll_loom_model_params_t *m)
{
    const int P0 = shape->P;
    /* sample past the fill (about 2 depth rounds: reduce + bcast), where the
     * rounds are in steady state and the fit holds */
    const int f = 2 * (int) tree_depth(P0);
    int ks[3] = {f, 2 * f, 4 * f}, kbest = 1;
    double t[4], A = 0.0, B, C, k;
    double smax = (double) (count < CHOOSE_MAX_SEGS ? count : CHOOSE_MAX_SEGS);

    if ((double) ks[2] > smax) {
        /* few elements: a tiny simulation each, try every K (at most 4f) */
        double tb = -1.0;
        for (int kk = 1; kk <= (int) smax; ++kk) {
            mca_coll_loom_model_result_t res;
            shape->segs = kk;
            if (MCA_COLL_LOOM_OK ==
                    mca_coll_loom_model_predict_any(alg, NULL, coll, shape, bytes, esz, m, NULL, NULL, &res) &&
                (tb < 0 || res.time < tb)) {
                tb = res.time;
                kbest = kk;
            }
        }
        return kbest;
    }
    /* t[0], t[1]: the call at K = 2f, 4f; t[2], t[3]: one element per chunk at
     * K = f, 4f, where the bandwidth terms vanish and the slope is B */
    for (int i = 0; i < 4; ++i) {
        mca_coll_loom_model_result_t res;
        mca_coll_loom_model_opts_t o;
        const int kk = 0 == i ? ks[1] : (1 == i ? ks[2] : (2 == i ? ks[0] : ks[2]));
        const size_t nb = i < 2 ? bytes : (size_t) kk * esz;
        mca_coll_loom_model_opts_default(&o);
        o.method = MCA_COLL_LOOM_MODEL_FULL;
        shape->segs = kk;
        if (MCA_COLL_LOOM_OK != mca_coll_loom_model_predict_any(alg, NULL, coll, shape, nb, esz, m, &o, NULL, &res)) {
            return 1;
        }
        t[i] = res.time;
    }
    kbest = t[1] < t[0] ? 2 : 1;
    B = (t[3] - t[2]) / (double) (ks[2] - ks[0]);
    /* T(k) - T(2k) = C / 2k - B k */
    C = 2.0 * ks[1] * (t[0] - t[1] + B * ks[1]);
    (void) A;
    if (C <= 0.0 || B <= 0.0) {
        return ks[kbest]; /* not the expected shape: the better sample */
    }
    C *= tree_depth(P) / tree_depth(P0);
    k = sqrt(C / B);
    k = k < 1.0 ? 1.0 : (k > smax ? smax : k);
    return (int) (k + 0.5);
}

int mca_coll_loom_model_auto_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, size_t elem_size,
                                  const mca_coll_loom_model_params_t *m)
{
    const size_t esz = elem_size > 0 ? elem_size : 1, count = bytes / esz;
    const int P0 = P < AUTO_FIT_P ? P : AUTO_FIT_P;
    mca_coll_loom_params_t shape;
    mca_coll_loom_sched_t s1, s2;
    int n1, n2, nparts = 1;
    bool uses;

    if (alg < 0 || alg >= mca_coll_loom_num_algs || P < 2 || P > MAX_P || NULL == m || count < 2) {
        return 1;
    }
    memset(&shape, 0, sizeof(shape));
    shape.call = MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT;
    shape.coll = coll;
    shape.P = P0;
    if (!mca_coll_loom_alg_serves(alg, coll) || NULL != mca_coll_loom_alg_refusal(alg, &shape)) {
        return 1;
    }

    /* Does segs change the schedule, and in how many parts?  Rank 0 at P0 ranks. */
    mca_coll_loom_sched_init(&s1);
    mca_coll_loom_sched_init(&s2);
    s1.no_graph = s2.no_graph = true;
    shape.segs = 1;
    n1 = MCA_COLL_LOOM_OK == mca_coll_loom_alg_build(alg, &s1, &shape) ? s1.nops : -1;
    shape.segs = 2;
    n2 = MCA_COLL_LOOM_OK == mca_coll_loom_alg_build(alg, &s2, &shape) ? s2.nops : -1;
    uses = n1 >= 0 && n2 >= 0 &&
           (n1 != n2 || s1.nblocks != s2.nblocks || s1.nseg != s2.nseg || !same_ops(&s1, &s2));
    if (uses && s2.nblocks > 0 && s2.nseg > 1) {
        nparts = s2.nblocks / s2.nseg; /* segments of parts; else blocks = chunks of the whole */
    }
    mca_coll_loom_sched_fini(&s1);
    mca_coll_loom_sched_fini(&s2);
    if (!uses) {
        return 1;
    }
    if (nparts > 1) {
        return auto_parts_segs(coll, P, P0, nparts, count, esz);
    }
    return auto_pipeline_segs(alg, coll, P, &shape, bytes, esz, count, m);
}
