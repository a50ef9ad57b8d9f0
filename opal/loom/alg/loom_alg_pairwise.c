/*
 * loom algorithm `pairwise`: pairwise exchange (butterfly), End et al. section III.A.
 *
 * For P = 2^k the ranks exchange their partial results with the partner at distance
 * 2^(l-1) in round l.  For P = 2^k + q the q extra ranks are folded in first and
 * receive the result last ("pairwise exchange algorithm", Fig. 1 of End et al.).  We
 * fold neighbours (2i into 2i+1 for i < q) rather than rank 2^k + i into rank i: the
 * survivors then hold contiguous rank ranges, so every combine is (lower ranks) o
 * (higher ranks) and the algorithm keeps rank order for non-commutative ops.  Every
 * rank combines the same operands in the same tree, so floating-point results are
 * bit-identical everywhere.  With count 0 the same schedule is a barrier.
 *
 * Alltoall(v): the pairwise exchange of Open MPI's and MPICH's large-message alltoall,
 * one partner at a time (P-1 steps; loom_alg_direct.c builds it with a window of one).
 */
#include "opal/loom/loom_registry.h"

/* Slots: RESULT, INPUT and one receive buffer. */
#define TMP MCA_COLL_LOOM_SLOT_SCRATCH0

int mca_coll_loom_build_pairwise(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, rank = p->rank;
    int p2 = 1, q, vrank;
    bool fresh = true; /* RESULT not written yet: this rank's value is INPUT */

    if (P < 1 || rank < 0 || rank >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (MCA_COLL_LOOM_COLL_ALLTOALL == p->coll || MCA_COLL_LOOM_COLL_ALLTOALLV == p->coll) {
        return mca_coll_loom_alltoall_exchange(s, p, 1);
    }
    while (2 * p2 <= P) {
        p2 *= 2;
    }
    q = P - p2;

    if (rank < 2 * q && 0 == rank % 2) {
        /* folded out: hand the contribution to the right neighbour, get the result back */
        mca_coll_loom_sched_send(s, rank + 1, MCA_COLL_LOOM_SLOT_INPUT);
        mca_coll_loom_sched_wait(s);
        mca_coll_loom_sched_recv(s, rank + 1, MCA_COLL_LOOM_SLOT_RESULT);
        mca_coll_loom_sched_wait(s);
        return MCA_COLL_LOOM_OK;
    }

    if (rank < 2 * q) {
        mca_coll_loom_sched_copy(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT);
        mca_coll_loom_sched_recv(s, rank - 1, TMP);
        mca_coll_loom_sched_wait(s);
        mca_coll_loom_sched_reduce(s, TMP, MCA_COLL_LOOM_SLOT_RESULT); /* x[r-1] o x[r] */
        vrank = rank / 2;
        fresh = false;
    } else {
        vrank = rank - q;
    }

    for (int mask = 1; mask < p2; mask <<= 1) {
        int vpeer = vrank ^ mask;
        int peer = vpeer < q ? 2 * vpeer + 1 : vpeer + q;
        /* The first exchange sends the input itself and fills RESULT only after it:
         * a large message is read by the peer straight from our buffer (single-copy),
         * and combining into a buffer the peer has just read costs a cross-core
         * ownership transfer per cache line (docs/user/algorithms.md, "pairwise"). */
        mca_coll_loom_sched_send(s, peer, fresh ? MCA_COLL_LOOM_SLOT_INPUT : MCA_COLL_LOOM_SLOT_RESULT);
        mca_coll_loom_sched_recv(s, peer, TMP);
        mca_coll_loom_sched_wait(s);
        if (fresh) {
            mca_coll_loom_sched_copy(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT);
            fresh = false;
        }
        if (vpeer < vrank) {
            mca_coll_loom_sched_reduce(s, TMP, MCA_COLL_LOOM_SLOT_RESULT);   /* peer o mine */
        } else {
            mca_coll_loom_sched_reduce_r(s, TMP, MCA_COLL_LOOM_SLOT_RESULT); /* mine o peer */
        }
    }

    if (fresh) {
        mca_coll_loom_sched_copy(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT); /* P = 1 */
    }
    if (rank < 2 * q) {
        mca_coll_loom_sched_send(s, rank - 1, MCA_COLL_LOOM_SLOT_RESULT);
        mca_coll_loom_sched_wait(s);
    }
    return MCA_COLL_LOOM_OK;
}

MCA_COLL_LOOM_ALGORITHM(pairwise) = {
    .name = "pairwise",
    .colls = MCA_COLL_LOOM_SERVES(ALLREDUCE) | MCA_COLL_LOOM_SERVES(BARRIER) |
             MCA_COLL_LOOM_SERVES(ALLTOALL) | MCA_COLL_LOOM_SERVES(ALLTOALLV),
    .needs = 0,
    .description = "pairwise exchange (butterfly) with the 2^k+q fold; keeps rank order, "
                   "bit-identical, any op; alltoall(v): P-1 steps, one partner at a time",
    .reference = "End et al., section III.A",
    .build = mca_coll_loom_build_pairwise,
};
