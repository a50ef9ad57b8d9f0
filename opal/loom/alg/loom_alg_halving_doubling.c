/*
 * loom algorithm `halving_doubling`: reduce-scatter by recursive halving, allgather by
 * recursive doubling, and allreduce as the one followed by the other (Rabenseifner's
 * allreduce), after Thakur, Rabenseifner and Gropp, sections 4.1 (allgather), 4.3
 * (reduce-scatter) and 4.4 (allreduce): ceil(log2 P) steps per phase and (P-1)/P of the
 * vector sent per rank and phase, the bandwidth term of the bound, where the ring pays
 * P-1 latencies.  bcast and reduce: build_rooted.
 *
 * P not a power of two with a commutative op (or none): build_any_p, no rank idle.
 * Otherwise the 2^k + q fold of End et al., section III.A, as `pairwise` does it.  Ranks
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
#define ACC (MCA_COLL_LOOM_SLOT_SCRATCH0 + 1)

typedef struct {
    int P, q, p2;
    int root;   /* rooted collectives: ranks are taken relative to the root */
    int keep;   /* 1: ranks 2i+1 of the fold stay (rank order), 0: ranks 2i (the root) */
    bool parts; /* chunk c = the parts of the ranks virtual rank c stands for (else block c) */
    int acc;    /* the slot the partial results build up in: RESULT, but a scratch slot at a
                   reduce's non-root ranks, which have no RESULT */
} hd_t;

static int hd_rank(const hd_t *h, int v)
{
    return ((v < h->q ? 2 * v + h->keep : v + h->q) + h->root) % h->P;
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
static void combine_input(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, int acc, int peer,
                          bool lower, int b0, int b1)
{
    const int n = b1 - b0;

    if (lower || 0 != (p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE)) {
        mca_coll_loom_sched_recv_blk(s, peer, acc, b0, n);
        mca_coll_loom_sched_wait(s);
        mca_coll_loom_sched_reduce_blk(s, IN, acc, b0, n);
    } else {
        mca_coll_loom_sched_recv_blk(s, peer, TMP, b0, n);
        mca_coll_loom_sched_wait(s);
        mca_coll_loom_sched_copy_blk(s, IN, acc, b0, n);
        mca_coll_loom_sched_reduce_blk(s, TMP, acc, b0, n);
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

        hd_send(s, h, peer, fresh ? IN : h->acc, lower ? mid : *lo, lower ? *hi : mid);
        if (fresh) {
            combine_input(s, p, h->acc, peer, lower, b0, b1);
            fresh = false;
        } else {
            mca_coll_loom_sched_recv_blk(s, peer, TMP, b0, b1 - b0);
            mca_coll_loom_sched_wait(s);
            if (lower) {
                mca_coll_loom_sched_reduce_r_blk(s, TMP, h->acc, b0, b1 - b0); /* mine o theirs */
            } else {
                mca_coll_loom_sched_reduce_blk(s, TMP, h->acc, b0, b1 - b0);   /* theirs o mine */
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

/* bcast: scatter by recursive halving from the root, then the allgather (van de Geijn;
 * Thakur et al., section 4.2).  reduce: the reduce-scatter, then a binomial gather of the
 * parts to the root (Rabenseifner; Thakur et al., section 4.4).  The fold keeps the ranks
 * 2i relative to the root, so that the root stays virtual rank 0. */
static void build_rooted(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, hd_t *h, int rr)
{
    const bool bcast = MCA_COLL_LOOM_COLL_BCAST == p->coll;
    const int partner = (rr + (rr % 2 ? -1 : 1) + h->root) % h->P, v = rr < 2 * h->q ? rr / 2 : rr - h->q;
    int lo, hi;

    if (rr < 2 * h->q && 1 == rr % 2) {
        if (bcast) {
            mca_coll_loom_sched_recv_blk(s, partner, RES, 0, h->p2);
        } else {
            mca_coll_loom_sched_send_blk(s, partner, IN, 0, h->p2);
        }
        mca_coll_loom_sched_wait(s);
        return;
    }
    if (bcast) {
        for (int m = h->p2 / 2; m >= 1; m /= 2) {
            if (0 == v % (2 * m)) {
                hd_send(s, h, hd_rank(h, v + m), RES, v + m, v + 2 * m);
            } else if (m == v % (2 * m)) {
                hd_recv(s, h, hd_rank(h, v - m), RES, v, v + m);
            } else {
                continue;
            }
            mca_coll_loom_sched_wait(s);
        }
        doubling(s, h, v, true, v, v + 1);
        if (rr < 2 * h->q) {
            mca_coll_loom_sched_send_blk(s, partner, RES, 0, h->p2);
            mca_coll_loom_sched_wait(s);
        }
        return;
    }
    h->acc = 0 == rr ? RES : ACC;
    if (rr < 2 * h->q) {
        combine_input(s, p, h->acc, partner, false, 0, h->p2); /* commutative: the order is free */
    }
    halving(s, p, h, v, false, rr >= 2 * h->q, &lo, &hi);
    for (int m = 1; m < h->p2; m *= 2) {
        if (v & m) {
            hd_send(s, h, hd_rank(h, v - m), h->acc, v, v + m);
            mca_coll_loom_sched_wait(s);
            break;
        }
        hd_recv(s, h, hd_rank(h, v + m), h->acc, v + m, v + 2 * m);
        mca_coll_loom_sched_wait(s);
    }
}

/* fn (send_blk, recv_blk, reduce_blk, copy_blk) on blocks [first, first + n) taken
 * modulo P: one or two ranges (both sides of a transfer name the same blocks, so they
 * cut it alike). */
typedef void (*blk_fn_t)(mca_coll_loom_sched_t *s, int a, int b, int blk, int nblk);

static void mod_op(mca_coll_loom_sched_t *s, blk_fn_t fn, int P, int a, int b, int first, int n)
{
    const int b0 = first % P, n0 = b0 + n <= P ? n : P - b0;

    if (n <= 0) {
        return;
    }
    fn(s, a, b, b0, n0);
    if (n0 < n) {
        fn(s, a, b, 0, n - n0);
    }
}

/* P not a power of two, a commutative op (or none): no rank sits out.  The allgather is
 * Bruck's concatenation without its rotation (Bruck et al., section 3: at distance 2^k
 * each rank passes on the min(2^k, P - 2^k) blocks it holds next to its own), the
 * reduce-scatter its reversal in time (the distances from the largest down: each block's
 * partial sums flow back along the tree the allgather spreads it on, and every rank's
 * contribution to it is combined once, at its owner).  ceil(log2 P) steps per phase and
 * P-1 blocks sent per rank, the bandwidth term of the bound, for any P; each block is
 * combined on one rank only and copied from there, so floating-point results stay
 * identical everywhere.  bcast: a binomial scatter from the root, then the allgather (van
 * de Geijn for any P, without the fold's extra whole-vector hop); reduce: the
 * reduce-scatter, then a binomial gather to the root (Rabenseifner, likewise).  Block b is
 * the part of the rank at distance b from the root (0 unless rooted); a rank's blocks are
 * named by their distance from it, modulo P. */
static void build_any_p(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, int steps)
{
    const bool bcast = MCA_COLL_LOOM_COLL_BCAST == p->coll, reduce = MCA_COLL_LOOM_COLL_REDUCE == p->coll;
    const int P = p->P, root = bcast || reduce ? p->root : 0, r = (p->rank - root + P) % P;
    /* a reduce's partial builds in scratch on the ranks other than the root (no RESULT) */
    const int acc_slot = reduce && 0 != r ? ACC : RES;
#define ABS(v) (((v) + root) % P)

    /* the steps in order: the graph would start the copies of INPUT that a later step
     * sends before this step's receives are handled (test_model: graph 12-24 % slower
     * than the rounds at P = 17), and each step needs the one before anyway */
    mca_coll_loom_sched_lockstep(s);
    if (bcast) {
        /* binomial scatter: the sub-tree of distance r + m gets its blocks [r + m, r + 2m) */
        for (int m = 1 << (steps - 1); m >= 1; m /= 2) {
            if (0 == r % (2 * m) && r + m < P) {
                mca_coll_loom_sched_send_blk(s, ABS(r + m), RES, r + m, (r + 2 * m < P ? r + 2 * m : P) - r - m);
            } else if (m == r % (2 * m)) {
                mca_coll_loom_sched_recv_blk(s, ABS(r - m), RES, r, (r + m < P ? r + m : P) - r);
            } else {
                continue;
            }
            mca_coll_loom_sched_wait(s);
        }
    } else if (MCA_COLL_LOOM_COLL_ALLGATHER != p->coll) {
        /* blocks at distance [0, acc) hold partial sums in RESULT, the others are still
         * the contribution in INPUT: the first step sends from INPUT and receives into
         * RESULT, later ones copy what they need of INPUT first (one step at most sends
         * blocks of both kinds: a transfer must come from one slot) */
        int acc = 0;
        for (int k = steps - 1; k >= 0; --k) {
            const int d = 1 << k, m = d < P - d ? d : P - d, to = ABS((r + d) % P), from = ABS((r - d + P) % P);
            if (0 == acc) {
                mod_op(s, mca_coll_loom_sched_send_blk, P, to, IN, r + d, m);
                mod_op(s, mca_coll_loom_sched_recv_blk, P, from, acc_slot, r, m);
                mca_coll_loom_sched_wait(s);
                mod_op(s, mca_coll_loom_sched_reduce_blk, P, IN, acc_slot, r, m);
                acc = m;
                continue;
            }
            const int fresh = d > acc ? d : acc; /* the first block to send still in INPUT */
            mod_op(s, mca_coll_loom_sched_copy_blk, P, IN, acc_slot, r + fresh, d + m - fresh);
            mod_op(s, mca_coll_loom_sched_copy_blk, P, IN, acc_slot, r + acc, m - acc);
            mod_op(s, mca_coll_loom_sched_send_blk, P, to, acc_slot, r + d, m);
            mod_op(s, mca_coll_loom_sched_recv_blk, P, from, TMP, r, m);
            mca_coll_loom_sched_wait(s);
            mod_op(s, mca_coll_loom_sched_reduce_blk, P, TMP, acc_slot, r, m);
            acc = acc > m ? acc : m;
        }
    }
    if (reduce) {
        /* binomial gather of the owners' blocks to the root: the scatter backwards */
        for (int m = 1; m < P; m *= 2) {
            if (m == r % (2 * m)) {
                mca_coll_loom_sched_send_blk(s, ABS(r - m), acc_slot, r, (r + m < P ? r + m : P) - r);
                mca_coll_loom_sched_wait(s);
                break;
            }
            if (r + m < P) {
                mca_coll_loom_sched_recv_blk(s, ABS(r + m), acc_slot, r + m, (r + 2 * m < P ? r + 2 * m : P) - r - m);
                mca_coll_loom_sched_wait(s);
            }
        }
    } else if (MCA_COLL_LOOM_COLL_REDUCE_SCATTER != p->coll && MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK != p->coll) {
        for (int k = 0; k < steps; ++k) {
            const int d = 1 << k, m = d < P - d ? d : P - d;
            mod_op(s, mca_coll_loom_sched_send_blk, P, ABS((r - d + P) % P), RES, r, m);
            mod_op(s, mca_coll_loom_sched_recv_blk, P, ABS((r + d) % P), RES, r + d, m);
            mca_coll_loom_sched_wait(s);
        }
    }
#undef ABS
}

static int build_halving_doubling(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank;
    const bool allreduce = MCA_COLL_LOOM_COLL_ALLREDUCE == p->coll;
    const bool allgather = MCA_COLL_LOOM_COLL_ALLGATHER == p->coll;
    const bool rooted = MCA_COLL_LOOM_COLL_BCAST == p->coll || MCA_COLL_LOOM_COLL_REDUCE == p->coll;
    hd_t h = {.P = P, .p2 = 1, .keep = rooted ? 0 : 1, .parts = !allreduce && !rooted, .acc = RES};
    int v, lo, hi, nb;

    if (P < 1 || r < 0 || r >= P || (rooted && (p->root < 0 || p->root >= P))) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (1 == P) {
        if (!allgather && MCA_COLL_LOOM_COLL_BCAST != p->coll) {
            mca_coll_loom_sched_copy(s, IN, RES);
        }
        return MCA_COLL_LOOM_OK;
    }
    while (2 * h.p2 <= P) {
        h.p2 *= 2;
    }
    h.q = P - h.p2;
    /* a reduce is commutative here (commutative_only) */
    if (h.q > 0 && (MCA_COLL_LOOM_COLL_BCAST == p->coll || allgather || 0 != (p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE))) {
        int steps = 0;
        while ((1 << steps) < P) {
            ++steps;
        }
        mca_coll_loom_sched_set_blocks(s, P);
        build_any_p(s, p, steps);
        return MCA_COLL_LOOM_OK;
    }
    nb = allreduce || rooted ? h.p2 : P; /* whole-slot transfers as block ranges: both sides alike */
    mca_coll_loom_sched_set_blocks(s, nb);
    if (rooted) {
        h.root = p->root;
        build_rooted(s, p, &h, (r - p->root + P) % P);
        return MCA_COLL_LOOM_OK;
    }

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
        doubling(s, &h, v, true, v, v + 1);
    } else {
        if (r < 2 * h.q) {
            combine_input(s, p, RES, r - 1, false, 0, nb); /* x[r-1] o x[r] */
        }
        halving(s, p, &h, v, allreduce, r >= 2 * h.q, &lo, &hi);
        if (allreduce) {
            doubling(s, &h, v, false, lo, hi);
        }
    }

    if (r < 2 * h.q) {
        mca_coll_loom_fold_give_back(s, p->coll, r, nb);
    }
    return MCA_COLL_LOOM_OK;
}

MCA_COLL_LOOM_ALGORITHM(halving_doubling) = {
    .name = "halving_doubling",
    .colls = MCA_COLL_LOOM_SERVES(ALLREDUCE) | MCA_COLL_LOOM_SERVES(ALLGATHER) |
             MCA_COLL_LOOM_SERVES(REDUCE_SCATTER) | MCA_COLL_LOOM_SERVES(REDUCE_SCATTER_BLOCK) |
             MCA_COLL_LOOM_SERVES(BCAST) | MCA_COLL_LOOM_SERVES(REDUCE),
    .needs = 0,
    .commutative_only = MCA_COLL_LOOM_SERVES(REDUCE_SCATTER) | MCA_COLL_LOOM_SERVES(REDUCE_SCATTER_BLOCK) |
                        MCA_COLL_LOOM_SERVES(REDUCE),
    .commutative_why = "reduce and reduce_scatter by recursive halving combine out of rank order: commutative ops only",
    .description = "recursive halving and doubling for any P (2^k+q fold): allreduce = "
                   "reduce-scatter + allgather (Rabenseifner), 2 log2 P steps and (P-1)/P of the "
                   "vector per phase; bcast = scatter + allgather (van de Geijn), reduce = "
                   "reduce-scatter + gather; allreduce keeps rank order (any op, bit-identical), "
                   "reduce and reduce_scatter need a commutative op",
    .reference = "Thakur, Rabenseifner and Gropp, sections 4.1-4.4",
    .build = build_halving_doubling,
};
