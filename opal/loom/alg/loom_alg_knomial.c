/*
 * loom algorithm `knomial`: recursive halving and doubling of radix k (the knob,
 * coll_loom_knomial_radix): reduce-scatter by k-ary recursive halving, allgather by
 * k-ary recursive doubling, allreduce as the one followed by the other.  Each step
 * joins groups of k ranks instead of pairs, so a phase takes ceil(log_k P) steps of k-1
 * messages each where radix 2 (`halving_doubling`) takes log2 P steps of one, and still
 * sends (P-1)/P of the vector per rank and phase.  It is the recursive-exchange scheme
 * of MPICH's recexch collectives and UCC's SRA-knomial allreduce; Thakur, Rabenseifner and
 * Gropp, sections 4.3-4.4, give the radix-2 form.
 *
 * The ranks that take part are the virtual ranks 0 .. pv-1 with pv = k^m * r, m as large
 * as P allows and r = P / k^m below k (a last step of radix r when r > 1): the steps have
 * radices k, k, ..., r.  The q = P - pv < pv others are folded out as in
 * `halving_doubling` (End et al., section III.A): ranks 2i < 2q hand their contribution
 * to 2i+1, and virtual rank v is rank 2v+1 (v < q) or v+q, so every virtual rank stands
 * for a contiguous range of ranks in rank order.
 *
 * Step i joins the k_i virtual ranks that differ in digit i of v (mixed radix, stride s_i
 * = k_0 ... k_{i-1}): the chunk range they share is cut into k_i equal pieces, member j
 * keeps piece j, sends every other piece to its member and combines the k_i - 1 pieces it
 * receives (into k_i - 1 scratch slots) into its own.
 * - allreduce: pv chunks, digits from the lowest (strides 1, k, k^2, ...): member j's
 *   partial covers the j-th of k_i aligned, consecutive ranges of virtual ranks, so the
 *   pieces are combined left to right around this rank's own and any op keeps rank order.
 *   The allgather replays the steps backwards.  Each chunk is combined on one rank and
 *   copied to the others: bit-identical everywhere.
 * - reduce_scatter(_block): chunk v is the parts of the ranks v stands for; digits from
 *   the highest, so that v ends with chunk v (the combining order then depends on v:
 *   commutative ops only).
 * - allgather: the same chunks, k-ary doubling from the lowest digit.
 * Scratch: k-1 vectors of the message for the reductions, none for the allgather.
 */
#include "opal/loom/loom_registry.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT
#define TMP MCA_COLL_LOOM_SLOT_SCRATCH0

#define KN_MAX_STEPS 32

typedef struct {
    int P, q, pv;
    int nsteps;
    int radix[KN_MAX_STEPS];
    int stride[KN_MAX_STEPS + 1]; /* stride[i] = radix[0] * ... * radix[i-1] */
    bool parts;                   /* chunk c = the parts of the ranks virtual rank c stands for */
} kn_t;

static void kn_init(kn_t *h, int P, int k, bool parts)
{
    int pk = 1;

    h->P = P;
    h->parts = parts;
    h->nsteps = 0;
    h->stride[0] = 1;
    while ((long) pk * k <= P) {
        pk *= k;
        h->radix[h->nsteps] = k;
        h->stride[h->nsteps + 1] = pk;
        h->nsteps++;
    }
    if (P / pk > 1) {
        h->radix[h->nsteps] = P / pk;
        h->stride[h->nsteps + 1] = pk * (P / pk);
        h->nsteps++;
    }
    h->pv = h->stride[h->nsteps];
    h->q = P - h->pv;
}

static int kn_rank(const kn_t *h, int v)
{
    return v < h->q ? 2 * v + 1 : v + h->q;
}

/* first block of chunk c (c may be pv: the end) */
static int kn_block(const kn_t *h, int c)
{
    return !h->parts ? c : (c < h->q ? 2 * c : c + h->q);
}

static int kn_digit(const kn_t *h, int v, int i)
{
    return (v / h->stride[i]) % h->radix[i];
}

/* the member j of virtual rank v's group at step i */
static int kn_member(const kn_t *h, int v, int i, int j)
{
    return kn_rank(h, v + (j - kn_digit(h, v, i)) * h->stride[i]);
}

/* chunks [c0, c1) of slot to / from the rank */
static void kn_send(mca_coll_loom_sched_t *s, const kn_t *h, int peer, int slot, int c0, int c1)
{
    mca_coll_loom_sched_send_blk(s, peer, slot, kn_block(h, c0), kn_block(h, c1) - kn_block(h, c0));
}

static void kn_recv(mca_coll_loom_sched_t *s, const kn_t *h, int peer, int slot, int c0, int c1)
{
    mca_coll_loom_sched_recv_blk(s, peer, slot, kn_block(h, c0), kn_block(h, c1) - kn_block(h, c0));
}

/* The scratch slot of member j's piece when this rank is member d. */
static int kn_tmp(int j, int d)
{
    return TMP + (j < d ? j : j - 1);
}

/* One step of the reduce-scatter: the chunk range [*lo, *hi) of this rank (member d of
 * its group at step i) is cut into radix pieces; it keeps piece d.  `fresh`: this rank's
 * partial is still its INPUT. */
static void kn_reduce_step(mca_coll_loom_sched_t *s, const kn_t *h, int v, int i, bool fresh, int *lo, int *hi)
{
    const int r = h->radix[i], d = kn_digit(h, v, i), piece = (*hi - *lo) / r;
    const int c0 = *lo + d * piece, c1 = c0 + piece;
    const int b0 = kn_block(h, c0), nb = kn_block(h, c1) - b0;

    /* member d sends to d+1, d+2, ... first: at any moment the members send to distinct
     * peers */
    for (int t = 1; t < r; ++t) {
        const int j = (d + t) % r;
        kn_send(s, h, kn_member(h, v, i, j), fresh ? IN : RES, *lo + j * piece, *lo + (j + 1) * piece);
    }
    for (int t = 1; t < r; ++t) {
        const int j = (d + r - t) % r;
        kn_recv(s, h, kn_member(h, v, i, j), kn_tmp(j, d), c0, c1);
    }
    mca_coll_loom_sched_wait(s);
    if (fresh) {
        mca_coll_loom_sched_copy_blk(s, IN, RES, b0, nb);
    }
    /* the pieces of lower members on the left, of higher members on the right */
    for (int j = d - 1; j >= 0; --j) {
        mca_coll_loom_sched_reduce_blk(s, kn_tmp(j, d), RES, b0, nb);
    }
    for (int j = d + 1; j < r; ++j) {
        mca_coll_loom_sched_reduce_r_blk(s, kn_tmp(j, d), RES, b0, nb);
    }
    *lo = c0;
    *hi = c1;
}

/* One step of the allgather: this rank (member d at step i) holds the chunks [c0, c0 +
 * len) of RESULT, member j the j-th range of that length from base. */
static void kn_gather_step(mca_coll_loom_sched_t *s, const kn_t *h, int v, int i, int base, int len)
{
    const int r = h->radix[i], d = kn_digit(h, v, i);

    for (int t = 1; t < r; ++t) {
        const int j = (d + t) % r;
        kn_send(s, h, kn_member(h, v, i, j), RES, base + d * len, base + (d + 1) * len);
    }
    for (int t = 1; t < r; ++t) {
        const int j = (d + r - t) % r;
        kn_recv(s, h, kn_member(h, v, i, j), RES, base + j * len, base + (j + 1) * len);
    }
    mca_coll_loom_sched_wait(s);
}

static int build_knomial(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank;
    const bool allreduce = MCA_COLL_LOOM_COLL_ALLREDUCE == p->coll;
    const bool allgather = MCA_COLL_LOOM_COLL_ALLGATHER == p->coll;
    int lo[KN_MAX_STEPS + 1], hi[KN_MAX_STEPS + 1];
    bool fresh = true;
    kn_t h;
    int v, nb;

    if (P < 1 || r < 0 || r >= P || p->knob < 2) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (1 == P) {
        if (!allgather) {
            mca_coll_loom_sched_copy(s, IN, RES);
        }
        return MCA_COLL_LOOM_OK;
    }
    kn_init(&h, P, p->knob, !allreduce);
    nb = allreduce ? h.pv : P;
    mca_coll_loom_sched_set_blocks(s, nb);
    /* the steps in order: a step's k-1 sends share the rank's link, and the graph would
     * start the next step's before they are all out, delaying the peers that wait for
     * them (the model: the graph slower than the rounds) */
    mca_coll_loom_sched_lockstep(s);

    if (r < 2 * h.q && 0 == r % 2) {
        mca_coll_loom_fold_hand_over(s, p->coll, r, nb);
        return MCA_COLL_LOOM_OK;
    }
    v = r < 2 * h.q ? r / 2 : r - h.q;

    if (allgather) {
        if (r < 2 * h.q) {
            mca_coll_loom_sched_recv_blk(s, r - 1, RES, r - 1, 1);
            mca_coll_loom_sched_wait(s);
        }
        for (int i = 0; i < h.nsteps; ++i) {
            kn_gather_step(s, &h, v, i, v - v % h.stride[i + 1], h.stride[i]);
        }
    } else {
        if (r < 2 * h.q) {
            /* x[r-1] o x[r] */
            mca_coll_loom_sched_recv_blk(s, r - 1, TMP, 0, nb);
            mca_coll_loom_sched_wait(s);
            mca_coll_loom_sched_copy_blk(s, IN, RES, 0, nb);
            mca_coll_loom_sched_reduce_blk(s, TMP, RES, 0, nb);
            fresh = false;
        }
        lo[0] = 0;
        hi[0] = h.pv;
        for (int t = 0; t < h.nsteps; ++t) {
            lo[t + 1] = lo[t];
            hi[t + 1] = hi[t];
            kn_reduce_step(s, &h, v, allreduce ? t : h.nsteps - 1 - t, fresh, &lo[t + 1], &hi[t + 1]);
            fresh = false;
        }
        if (allreduce) {
            for (int t = h.nsteps - 1; t >= 0; --t) {
                kn_gather_step(s, &h, v, t, lo[t], (hi[t] - lo[t]) / h.radix[t]);
            }
        }
    }

    if (r < 2 * h.q) {
        mca_coll_loom_fold_give_back(s, p->coll, r, nb);
    }
    return MCA_COLL_LOOM_OK;
}

MCA_COLL_LOOM_ALGORITHM(knomial) = {
    .name = "knomial",
    .colls = MCA_COLL_LOOM_SERVES(ALLREDUCE) | MCA_COLL_LOOM_SERVES(ALLGATHER) |
             MCA_COLL_LOOM_SERVES(REDUCE_SCATTER) | MCA_COLL_LOOM_SERVES(REDUCE_SCATTER_BLOCK),
    .needs = 0,
    .commutative_only = MCA_COLL_LOOM_SERVES(REDUCE_SCATTER) | MCA_COLL_LOOM_SERVES(REDUCE_SCATTER_BLOCK),
    .commutative_why = "reduce_scatter by k-ary recursive halving combines out of rank order: commutative ops only",
    .knob = "knomial_radix",
    .knob_default = 4,
    .knob_min = 2,
    .knob_max = 16,
    .description = "recursive halving and doubling of radix k (the knob): ceil(log_k P) steps "
                   "of k-1 messages per phase, (P-1)/P of the vector per phase, k-1 scratch "
                   "vectors; allreduce = reduce-scatter + allgather in rank order (any op, "
                   "bit-identical), reduce_scatter needs a commutative op",
    .reference = "Thakur, Rabenseifner and Gropp, sections 4.3-4.4 (radix 2); MPICH recexch",
    .build = build_knomial,
};
