/*
 * loom algorithm `binomial`: the binomial-tree bcast and reduce, unsegmented, the
 * baseline the pipelined trees are measured against (the TwoTreeC paper, section 1; Zhu
 * et al. use it inside a node).
 *
 * Tree over vranks v = rank - root mod P: the parent of v > 0 is v with its lowest
 * set bit cleared, its children are v + 2^k for every 2^k below that bit (and
 * below P).  log2(P) rounds, the whole vector on every edge.
 *
 * Bcast: receive from the parent, then send to the children, largest subtree first,
 * all in one round.
 *
 * Reduce: a node's subtree covers the vranks [v, v + lowbit(v)).  With a
 * commutative op the tree is rooted at the root.  Otherwise it is rooted at rank 0
 * (v = rank), where every subtree is a contiguous range of ranks, so combining the
 * children in increasing order keeps rank order exactly; rank 0 then sends the
 * result to the root when that is another rank (one extra hop).
 *
 * Reduce with p->engaged = k < P (loom_reduce_engage, commutative): the tree over the
 * vranks 0..k-1 only, the first stages of the whole tree (Iakymchuk et al., section
 * III.B); the other ranks take no part.
 */
#include "opal/loom/loom_registry.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT
#define ACC MCA_COLL_LOOM_SLOT_SCRATCH0
#define TMP (MCA_COLL_LOOM_SLOT_SCRATCH0 + 1)

/* lowest set bit of v > 0; for v = 0 the first power of two >= P */
static int subtree(int v, int P)
{
    if (v > 0) {
        return v & -v;
    }
    int m = 1;
    while (m < P) {
        m <<= 1;
    }
    return m;
}

static void bcast(mca_coll_loom_sched_t *s, int P, int rank, int root)
{
    const int v = mca_coll_loom_rank_mod((long) rank - root, P), top = subtree(v, P);

    if (v > 0) {
        mca_coll_loom_sched_recv(s, mca_coll_loom_rank_mod((long) (v - top) + root, P), RES);
        mca_coll_loom_sched_wait(s);
    }
    for (int m = top >> 1; m > 0; m >>= 1) {
        if (v + m < P) {
            mca_coll_loom_sched_send(s, mca_coll_loom_rank_mod((long) (v + m) + root, P), RES);
        }
    }
    mca_coll_loom_sched_wait(s);
}

static void reduce(mca_coll_loom_sched_t *s, int P, int rank, int root, bool commutative, int engaged)
{
    const int base = commutative ? root : 0;  /* the tree's root */
    const int v = mca_coll_loom_rank_mod((long) rank - base, P);
    const int n = engaged > 0 && engaged < P ? engaged : P; /* the tree's vranks */
    const int top = subtree(v, n);
    const bool at_top = (0 == v);
    /* where this rank combines its subtree: RESULT when it ends there */
    const int acc = (at_top && rank == root) ? RES : ACC;
    bool leaf = true;

    if (v >= n) {
        return; /* not engaged */
    }
    if (1 == n) {
        mca_coll_loom_sched_copy(s, IN, RES); /* the root alone (v = 0: base = root) */
        return;
    }
    for (int m = 1; m < top && v + m < n; m <<= 1) {
        if (leaf) {
            mca_coll_loom_sched_copy(s, IN, acc);
            leaf = false;
        }
        mca_coll_loom_sched_recv(s, mca_coll_loom_rank_mod((long) (v + m) + base, P), TMP);
        mca_coll_loom_sched_wait(s);
        /* the child's range follows everything acc holds: acc := acc o child */
        mca_coll_loom_sched_reduce_r(s, TMP, acc);
    }
    if (!at_top) {
        mca_coll_loom_sched_send(s, mca_coll_loom_rank_mod((long) (v - top) + base, P),
                                 leaf ? IN : acc);
        mca_coll_loom_sched_wait(s);
    } else if (rank != root) {
        mca_coll_loom_sched_send(s, root, leaf ? IN : acc);
        mca_coll_loom_sched_wait(s);
    }
    if (rank == root && !at_top) {
        /* only with base = 0 != root: the combined result comes from rank 0 */
        mca_coll_loom_sched_recv(s, base, RES);
        mca_coll_loom_sched_wait(s);
    }
}

int mca_coll_loom_build_binomial(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P;

    if (P < 1 || p->rank < 0 || p->rank >= P || p->root < 0 || p->root >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    switch (p->coll) {
    case MCA_COLL_LOOM_COLL_BCAST:
        if (P > 1) {
            bcast(s, P, p->rank, p->root);
        }
        return MCA_COLL_LOOM_OK;
    case MCA_COLL_LOOM_COLL_REDUCE:
        if (p->engaged > 0 && p->engaged < P && !(p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE)) {
            return MCA_COLL_LOOM_ERR_NOTSUP; /* the first stages are not a range of ranks */
        }
        if (1 == P) {
            mca_coll_loom_sched_copy(s, IN, RES);
        } else {
            reduce(s, P, p->rank, p->root, 0 != (p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE), p->engaged);
        }
        return MCA_COLL_LOOM_OK;
    default:
        return MCA_COLL_LOOM_ERR_NOTSUP;
    }
}

MCA_COLL_LOOM_ALGORITHM(binomial) = {
    .name = "binomial",
    .colls = MCA_COLL_LOOM_SERVES(BCAST) | MCA_COLL_LOOM_SERVES(REDUCE),
    .needs = 0,
    .description = "binomial tree, unsegmented (baseline); reduce keeps rank order for "
                   "non-commutative ops (tree rooted at rank 0, one extra hop)",
    .reference = "the TwoTreeC paper, section 1 (baseline)",
    .build = mca_coll_loom_build_binomial,
};
