/*
 * loom: LogGP simulation of the schedules of all ranks (see loom_model.h for the
 * model and docs/dev/model.md for its use and limits): the parameters, schedules in
 * timing form, the LogGP rules of one message and the entry points.  The simulations
 * are in loom_model_rounds.c and loom_model_graph.c, the choice of segments in
 * loom_model_auto.c (loom_model_impl.h).
 */
#include <stdlib.h>
#include <string.h>

#include "opal/loom/loom_model_impl.h"

#define DEFAULT_MAX_LIVE_OPS (1L << 27)

/* ---------------------------------------------------------------------------
 * Parameters
 * ------------------------------------------------------------------------- */

void mca_coll_loom_model_params_set(mca_coll_loom_model_params_t *m, double L_us, double o_us,
                                    double g_us, double G_ns, double gamma_ns, double copy_ns)
{
    m->L = L_us * 1e-6;
    m->o = o_us * 1e-6;
    m->g = g_us * 1e-6;
    m->G = G_ns * 1e-9;
    m->G_out = m->G;
    m->gamma = gamma_ns * 1e-9;
    m->copy = copy_ns * 1e-9;
}

void mca_coll_loom_model_params_default(mca_coll_loom_model_params_t *m)
{
    mca_coll_loom_model_params_set(m, MCA_COLL_LOOM_MODEL_DEFAULT_LATENCY_US,
                                   MCA_COLL_LOOM_MODEL_DEFAULT_OVERHEAD_US,
                                   MCA_COLL_LOOM_MODEL_DEFAULT_GAP_US,
                                   MCA_COLL_LOOM_MODEL_DEFAULT_GAP_PER_BYTE_NS,
                                   MCA_COLL_LOOM_MODEL_DEFAULT_REDUCE_PER_BYTE_NS,
                                   MCA_COLL_LOOM_MODEL_DEFAULT_COPY_PER_BYTE_NS);
}

void mca_coll_loom_model_opts_default(mca_coll_loom_model_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->sym_min_P = DEFAULT_SYM_MIN_P;
    o->max_live_ops = DEFAULT_MAX_LIVE_OPS;
}

const char *mca_coll_loom_model_method_name(int method)
{
    switch (method) {
    case MCA_COLL_LOOM_MODEL_FULL:
        return "full";
    case MCA_COLL_LOOM_MODEL_SYMMETRIC:
        return "symmetric";
    case MCA_COLL_LOOM_MODEL_ANALYTIC:
        return "analytic";
    case MCA_COLL_LOOM_MODEL_GRAPH:
        return "graph";
    default:
        return "none";
    }
}

double mca_coll_loom_model_lower_bound(mca_coll_loom_coll_t coll, int P, size_t bytes,
                                       const mca_coll_loom_model_params_t *m)
{
    double n = (double) bytes * m->G;
    if (P <= 1) {
        return 0.0;
    }
    switch (coll) {
    case MCA_COLL_LOOM_COLL_BCAST:
    case MCA_COLL_LOOM_COLL_REDUCE:
        return n;
    case MCA_COLL_LOOM_COLL_ALLREDUCE:
        return 2.0 * (P - 1) / P * n;
    case MCA_COLL_LOOM_COLL_ALLGATHER:
    case MCA_COLL_LOOM_COLL_REDUCE_SCATTER:
    case MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK:
    case MCA_COLL_LOOM_COLL_ALLTOALL:
    case MCA_COLL_LOOM_COLL_ALLTOALLV:
        return (double) (P - 1) / P * n;
    default:
        return 0.0;
    }
}

double mca_coll_loom_model_bound(mca_coll_loom_coll_t coll, int P, size_t bytes,
                                 const mca_coll_loom_model_params_t *m)
{
    double steps = 0.0, combine = 0.0;

    if (P <= 1) {
        return 0.0;
    }
    while ((1L << (long) steps) < (long) P) {
        steps += 1.0;
    }
    switch (coll) {
    case MCA_COLL_LOOM_COLL_ALLREDUCE:
    case MCA_COLL_LOOM_COLL_REDUCE:
    case MCA_COLL_LOOM_COLL_REDUCE_SCATTER:
    case MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK:
        /* (P-1) n of combining in all, spread at best evenly */
        combine = (double) (P - 1) / P * (double) bytes * m->gamma;
        break;
    default:
        break;
    }
    /* a pipeline combines one chunk while the link carries the next: the larger of the
     * two, not their sum (a pipelined reduce on 2 ranks takes less than the sum) */
    const double bw = mca_coll_loom_model_lower_bound(coll, P, bytes, m);
    return steps * (m->L + 2.0 * m->o) + (bw > combine ? bw : combine);
}

/* ---------------------------------------------------------------------------
 * Schedules in timing form
 * ------------------------------------------------------------------------- */

/* Builds one rank's schedule: a registry algorithm, or a bare builder (tests). */
int mca_coll_loom_model_build_rank(int alg, mca_coll_loom_build_fn_t build, mca_coll_loom_sched_t *s,
                                   const mca_coll_loom_params_t *p)
{
    int rc;
    if (NULL == build) {
        return mca_coll_loom_alg_build(alg, s, p);
    }
    mca_coll_loom_sched_reset(s);
    rc = build(s, p);
    return MCA_COLL_LOOM_OK == rc ? mca_coll_loom_sched_finish(s) : rc;
}

/* Elements an op covers, as the executor splits them. */
size_t mca_coll_loom_model_op_elems(const ctx_t *x, const mca_coll_loom_sched_t *s,
                                    const mca_coll_loom_op_t *op)
{
    mca_coll_loom_layout_t l;
    if (op->nblk <= 0 || s->nblocks <= 0) {
        return x->count;
    }
    if (s->moves_blocks) {
        /* it runs on equal blocks only (the component's calls have them): a count
         * that does not split evenly is costed as if padded to equal blocks */
        return (x->count + (size_t) s->nblocks - 1) / (size_t) s->nblocks * (size_t) op->nblk;
    }
    l.count = x->count;
    l.nseg = s->nseg > 0 ? s->nseg : 1;
    l.nparts = s->nblocks / l.nseg;
    l.part_displ = x->displ;
    return mca_coll_loom_layout_start(&l, op->blk + op->nblk) - mca_coll_loom_layout_start(&l, op->blk);
}

/* ---------------------------------------------------------------------------
 * The LogGP rules of one message (shared by every way of running)
 * ------------------------------------------------------------------------- */

/* Posts a send: CPU o, then the bytes on the outgoing link.  Gives the message's
 * times at the receiver. */
void mca_coll_loom_model_post_send(const mca_coll_loom_model_params_t *m, clock_t_ *c, double bytes, double *t0,
                                   double *t1)
{
    double start, wire = m->G_out * bytes;
    c->cpu += m->o;
    start = c->cpu > c->out_next ? c->cpu : c->out_next;
    c->out_next = start + (m->g > wire ? m->g : wire);
    if (start + wire > c->send_done) {
        c->send_done = start + wire;
    }
    *t0 = start + m->L;
    *t1 = start + wire + m->L;
}

/* The incoming link takes a message whose first byte is in at t0 and whose last byte
 * left the sender L before t1: it is fully in at the time returned. */
double mca_coll_loom_model_in_link(const mca_coll_loom_model_params_t *m, clock_t_ *c, double t0, double t1,
                                   double bytes)
{
    double in = (t0 > c->in_free ? t0 : c->in_free) + m->G * bytes;
    if (in < t1) {
        in = t1;
    }
    c->in_free = in;
    return in;
}

/* ---------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------- */

void mca_coll_loom_model_ctx_init(ctx_t *x, int alg, mca_coll_loom_build_fn_t build,
                                  const mca_coll_loom_params_t *shape, mca_coll_loom_coll_t coll, size_t bytes,
                                  size_t elem_size, const mca_coll_loom_model_params_t *m, const size_t *displ)
{
    memset(x, 0, sizeof(*x));
    x->m = m;
    x->alg = alg;
    x->build = build;
    x->P = shape->P;
    x->shape = *shape;
    x->shape.coll = coll;
    x->esz = elem_size > 0 ? elem_size : 1;
    x->count = bytes / x->esz;
    x->displ = displ;
    mca_coll_loom_sched_init(&x->sched);
}

void mca_coll_loom_model_ctx_fini(ctx_t *x)
{
    mca_coll_loom_sched_fini(&x->sched);
    free(x->arr);
}

int mca_coll_loom_model_predict_any(int alg, mca_coll_loom_build_fn_t build, mca_coll_loom_coll_t coll,
                                    const mca_coll_loom_params_t *shape, size_t bytes, size_t elem_size,
                                    const mca_coll_loom_model_params_t *m, const mca_coll_loom_model_opts_t *opts,
                                    double *finish, mca_coll_loom_model_result_t *res)
{
    mca_coll_loom_model_opts_t dflt;
    mca_coll_loom_model_result_t dummy;
    mca_coll_loom_params_t p;
    ctx_t x;
    int rc = MCA_COLL_LOOM_ERR_NOTSUP, sym = SYM_NONE;
    long max_live;

    if (NULL == res) {
        res = &dummy;
    }
    memset(res, 0, sizeof(*res));
    if (NULL == opts) {
        mca_coll_loom_model_opts_default(&dflt);
        opts = &dflt;
    }
    if (NULL == shape || NULL == m || (NULL == build && (alg < 0 || alg >= mca_coll_loom_num_algs)) ||
        shape->P < 1 || shape->P > MAX_P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    p = *shape;
    p.coll = coll;
    p.rank = 0;
    if (NULL == build) {
        if (!mca_coll_loom_alg_serves(alg, coll)) {
            res->note = "the algorithm does not serve this collective";
            return MCA_COLL_LOOM_ERR_NOTSUP;
        }
        if (NULL != (res->note = mca_coll_loom_alg_refusal(alg, &p))) {
            return MCA_COLL_LOOM_ERR_NOTSUP;
        }
    }

    if (opts->link_G > 0.0 && (NULL == p.torus || NULL == p.torus_coords || NULL == p.node_of)) {
        res->note = "the torus network needs the ranks' nodes and the nodes' coordinates";
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    max_live = opts->max_live_ops > 0 ? opts->max_live_ops : DEFAULT_MAX_LIVE_OPS;
    mca_coll_loom_model_ctx_init(&x, alg, build, &p, coll, bytes, elem_size, m, opts->part_displ);
    x.link_G = opts->link_G > 0.0 ? opts->link_G : 0.0;
    x.hop_L = opts->hop_L;
    x.sched.no_graph = MCA_COLL_LOOM_MODEL_GRAPH != opts->method && 0.0 == x.link_G;
    if (MCA_COLL_LOOM_MODEL_GRAPH == opts->method || x.link_G > 0.0) {
        rc = mca_coll_loom_model_simulate_graph(&x, max_live, finish, res);
        res->ops = x.ops;
        res->messages = x.messages;
        mca_coll_loom_model_ctx_fini(&x);
        return rc;
    }
    if (MCA_COLL_LOOM_MODEL_SYMMETRIC == opts->method ||
        (0 == opts->method && shape->P > opts->sym_min_P)) {
        sym = mca_coll_loom_model_detect_symmetry(&x);
    }
    if (SYM_NONE != sym) {
        rc = mca_coll_loom_model_simulate_symmetric(&x, sym, finish, res);
    } else if (MCA_COLL_LOOM_MODEL_SYMMETRIC == opts->method) {
        res->note = "no rotation or xor symmetry found in the schedules";
        rc = MCA_COLL_LOOM_ERR_NOTSUP;
    }
    if (MCA_COLL_LOOM_MODEL_SYMMETRIC != opts->method &&
        (SYM_NONE == sym || MCA_COLL_LOOM_OK != rc)) {
        memset(res, 0, sizeof(*res));
        x.ops = x.messages = 0;
        rc = mca_coll_loom_model_simulate_full(&x, max_live, finish, res);
    }
    res->ops = x.ops;
    res->messages = x.messages;
    mca_coll_loom_model_ctx_fini(&x);
    return rc;
}

int mca_coll_loom_model_predict(int alg, mca_coll_loom_coll_t coll, const mca_coll_loom_params_t *shape,
                                size_t bytes, size_t elem_size, const mca_coll_loom_model_params_t *m,
                                const mca_coll_loom_model_opts_t *opts, double *finish,
                                mca_coll_loom_model_result_t *res)
{
    return mca_coll_loom_model_predict_any(alg, NULL, coll, shape, bytes, elem_size, m, opts, finish, res);
}

int mca_coll_loom_model_predict_builder(mca_coll_loom_build_fn_t build, const mca_coll_loom_params_t *shape,
                                        size_t bytes, size_t elem_size,
                                        const mca_coll_loom_model_params_t *m,
                                        const mca_coll_loom_model_opts_t *opts, double *finish,
                                        mca_coll_loom_model_result_t *res)
{
    if (NULL == build || NULL == shape) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    return mca_coll_loom_model_predict_any(-1, build, shape->coll, shape, bytes, elem_size, m, opts, finish, res);
}
