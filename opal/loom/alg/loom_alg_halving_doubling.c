/*
 * loom algorithm `halving_doubling`: reduce-scatter by recursive halving, allgather by
 * recursive doubling, and allreduce as the one followed by the other (Rabenseifner's
 * allreduce), after Thakur, Rabenseifner and Gropp, sections 4.1 (allgather), 4.3
 * (reduce-scatter) and 4.4 (allreduce).  ceil(log2 P) steps per phase and (P-1)/P of the
 * vector sent per rank and phase, the bandwidth term of the bound, where the ring pays
 * P-1 latencies.
 *
 * Any P: the 2^k + q fold of End et al., section III.A, as `pairwise` does it.  Ranks
 * 2i < 2q hand their contribution to 2i+1 and sit out; the p2 = 2^k others are the
 * virtual ranks v (2i+1 -> i, r >= 2q -> r - q), which hold contiguous rank ranges in
 * rank order.
 *
 * The vector is cut into chunks, and every step of the halving splits the range of
 * chunks both partners hold in two: each keeps one half, sends the other, and combines
 * what it receives into the half it keeps.
 * - allreduce: p2 chunks, partners at distance 1, 2, 4, ...: the ranks a partial covers
 *   are then an aligned range of virtual ranks, so every combine is (lower ranks) o
 *   (higher ranks) and any op keeps its order.  v ends with chunk bitreverse(v); the
 *   allgather replays the steps backwards.  Each chunk is combined on one rank and
 *   copied to the others: bit-identical everywhere.
 * - reduce_scatter(_block): chunk v is the parts of the ranks v stands for; partners at
 *   distance p2/2, p2/4, ... so that v ends with its own chunk (the order of the
 *   combines then depends on v: commutative ops only).
 * - allgather: the same chunks, doubling at distance 1, 2, 4, ...
 */
#include "opal/loom/loom_registry.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT
#define TMP MCA_COLL_LOOM_SLOT_SCRATCH0

typedef struct {
    int P, q, p2;
    bool parts; /* chunk c = the parts of the ranks virtual rank c stands for (else block c) */
} hd_t;

static int hd_rank(const hd_t *h, int v)
{
    return v < h->q ? 2 * v + 1 : v + h->q;
}

/* first block of chunk c (c may be p2: the end) */
static int hd_block(const hd_t *h, int c)
{
    return !h->parts ? c : (c < h->q ? 2 * c : c + h->q);
}

static void hd_send(mca_coll_loom_sched_t *s, const hd_t *h, int peer, int slot, int c0, int c1)
{
    mca_coll_loom_sched_send_blk(s, peer, slot, hd_block(h, c0), hd_block(h, c1) - hd_block(h, c0));
}

static void hd_recv(mca_coll_loom_sched_t *s, const hd_t *h, int peer, int slot, int c0, int c1)
{
    mca_coll_loom_sched_recv_blk(s, peer, slot, hd_block(h, c0), hd_block(h, c1) - hd_block(h, c0));
}

/* RESULT's blocks [b0, b1) := mine o theirs (`lower`) or theirs o mine, where mine is in
 * INPUT and theirs arrives from `peer`.  REDUCE_R may use its source as the
 * accumulator, so INPUT is never its source: with a commutative op the arrival lands in
 * RESULT and INPUT is combined into it (the order of a commutative op's operands does
 * not matter: each chunk is combined on one rank only), otherwise the arrival lands in
 * TMP and INPUT is copied to RESULT first. */
static void combine_input(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, int peer, bool lower,
                          int b0, int b1)
{
    const int n = b1 - b0;

    if (lower || 0 != (p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE)) {
        mca_coll_loom_sched_recv_blk(s, peer, RES, b0, n);
        mca_coll_loom_sched_wait(s);
        mca_coll_loom_sched_reduce_blk(s, IN, RES, b0, n);
    } else {
        mca_coll_loom_sched_recv_blk(s, peer, TMP, b0, n);
        mca_coll_loom_sched_wait(s);
        mca_coll_loom_sched_copy_blk(s, IN, RES, b0, n);
        mca_coll_loom_sched_reduce_blk(s, TMP, RES, b0, n);
    }
}

/* Recursive halving: on return [*lo, *hi) is the chunk range this rank holds combined.
 * `fresh`: RESULT is unwritten and this rank's partial is its INPUT. */
static void halving(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const hd_t *h, int v, bool up,
                    bool fresh, int *lo, int *hi)
{
    *lo = 0;
    *hi = h->p2;
    for (int i = 0; (1 << i) < h->p2; ++i) {
        const int m = up ? 1 << i : h->p2 >> (i + 1);
        const int peer = hd_rank(h, v ^ m), mid = (*lo + *hi) / 2;
        const bool lower = 0 == (v & m); /* keep the lower half; the partner is higher */
        const int k0 = lower ? *lo : mid, k1 = lower ? mid : *hi;
        const int b0 = hd_block(h, k0), b1 = hd_block(h, k1);

        hd_send(s, h, peer, fresh ? IN : RES, lower ? mid : *lo, lower ? *hi : mid);
        if (fresh) {
            combine_input(s, p, peer, lower, b0, b1);
            fresh = false;
        } else {
            mca_coll_loom_sched_recv_blk(s, peer, TMP, b0, b1 - b0);
            mca_coll_loom_sched_wait(s);
            if (lower) {
                mca_coll_loom_sched_reduce_r_blk(s, TMP, RES, b0, b1 - b0); /* mine o theirs */
            } else {
                mca_coll_loom_sched_reduce_blk(s, TMP, RES, b0, b1 - b0);   /* theirs o mine */
            }
        }
        *lo = k0;
        *hi = k1;
    }
}

/* Recursive doubling of RESULT from the chunk range [lo, hi): at each step the partner
 * holds the other half of the range twice as large. */
static void doubling(mca_coll_loom_sched_t *s, const hd_t *h, int v, bool up, int lo, int hi)
{
    for (int i = 0; (1 << i) < h->p2; ++i) {
        const int m = up ? 1 << i : h->p2 >> (i + 1);
        const int n = hi - lo, peer = hd_rank(h, v ^ m);
        const bool lower = 0 == lo % (2 * n); /* the ranges are aligned halves */
        const int o0 = lower ? hi : lo - n, o1 = lower ? hi + n : lo;

        hd_send(s, h, peer, RES, lo, hi);
        hd_recv(s, h, peer, RES, o0, o1);
        mca_coll_loom_sched_wait(s);
        lo = lo < o0 ? lo : o0;
        hi = hi > o1 ? hi : o1;
    }
}

static int build_halving_doubling(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank;
    const bool allreduce = MCA_COLL_LOOM_COLL_ALLREDUCE == p->coll;
    const bool allgather = MCA_COLL_LOOM_COLL_ALLGATHER == p->coll;
    hd_t h = {.P = P, .p2 = 1, .parts = !allreduce};
    int v, lo, hi, nb;

    if (P < 1 || r < 0 || r >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (1 == P) {
        if (!allgather) {
            mca_coll_loom_sched_copy(s, IN, RES);
        }
        return MCA_COLL_LOOM_OK;
    }
    while (2 * h.p2 <= P) {
        h.p2 *= 2;
    }
    h.q = P - h.p2;
    nb = allreduce ? h.p2 : P; /* whole-slot transfers as block ranges: both sides alike */
    mca_coll_loom_sched_set_blocks(s, nb);

    if (r < 2 * h.q && 0 == r % 2) {
        /* folded out: hand the contribution over, get back what this rank ends with */
        if (allgather) {
            mca_coll_loom_sched_send_blk(s, r + 1, RES, r, 1);
        } else {
            mca_coll_loom_sched_send_blk(s, r + 1, IN, 0, nb);
        }
        mca_coll_loom_sched_wait(s);
        if (allreduce || allgather) {
            mca_coll_loom_sched_recv_blk(s, r + 1, RES, 0, nb);
        } else {
            mca_coll_loom_sched_recv_blk(s, r + 1, RES, r, 1);
        }
        mca_coll_loom_sched_wait(s);
        return MCA_COLL_LOOM_OK;
    }
    v = r < 2 * h.q ? r / 2 : r - h.q;

    if (allgather) {
        if (r < 2 * h.q) {
            mca_coll_loom_sched_recv_blk(s, r - 1, RES, r - 1, 1);
            mca_coll_loom_sched_wait(s);
        }
        doubling(s, &h, v, true, v, v + 1);
    } else {
        if (r < 2 * h.q) {
            combine_input(s, p, r - 1, false, 0, nb); /* x[r-1] o x[r] */
        }
        halving(s, p, &h, v, allreduce, r >= 2 * h.q, &lo, &hi);
        if (allreduce) {
            doubling(s, &h, v, false, lo, hi);
        }
    }

    if (r < 2 * h.q) {
        if (allreduce || allgather) {
            mca_coll_loom_sched_send_blk(s, r - 1, RES, 0, nb);
        } else {
            mca_coll_loom_sched_send_blk(s, r - 1, RES, r - 1, 1);
        }
        mca_coll_loom_sched_wait(s);
    }
    return MCA_COLL_LOOM_OK;
}

static bool halving_doubling_can_serve(const mca_coll_loom_params_t *p)
{
    return (MCA_COLL_LOOM_COLL_REDUCE_SCATTER != p->coll && MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK != p->coll) ||
           0 != (p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE);
}

static const char *halving_doubling_refusal(const mca_coll_loom_params_t *p)
{
    (void) p;
    return "reduce_scatter by recursive halving combines out of rank order: commutative ops only";
}

MCA_COLL_LOOM_ALGORITHM(halving_doubling) = {
    .name = "halving_doubling",
    .colls = MCA_COLL_LOOM_SERVES(ALLREDUCE) | MCA_COLL_LOOM_SERVES(ALLGATHER) |
             MCA_COLL_LOOM_SERVES(REDUCE_SCATTER) | MCA_COLL_LOOM_SERVES(REDUCE_SCATTER_BLOCK),
    .needs = 0,
    .description = "recursive halving and doubling for any P (2^k+q fold): allreduce = "
                   "reduce-scatter + allgather (Rabenseifner), 2 log2 P steps and (P-1)/P of the "
                   "vector per phase; allreduce keeps rank order (any op, bit-identical), "
                   "reduce_scatter needs a commutative op",
    .reference = "Thakur, Rabenseifner and Gropp, sections 4.1, 4.3, 4.4",
    .build = build_halving_doubling,
    .can_serve = halving_doubling_can_serve,
    .refusal_of = halving_doubling_refusal,
};
