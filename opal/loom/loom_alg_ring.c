/*
 * loom algorithm `ring`: the ring allreduce of seed 002, section IV.A: a
 * reduce-scatter then an allgather around the ring, P-1 steps each, every rank
 * talking only to its two neighbours, so each rank sends and receives
 * 2(P-1)/P of the vector: the bandwidth term of the allreduce lower bound.
 *
 * The vector is cut into P blocks.  Reduce-scatter, step i (0..P-2): rank r sends
 * block (r-i) mod P to r+1 and adds the block (r-i-1) mod P it receives from r-1
 * into its own; after P-1 steps rank r holds block (r+1) mod P complete.
 * Allgather, step i: rank r passes block (r+1-i) mod P on to r+1 and receives block
 * (r-i) mod P from r-1 straight into its result.
 *
 * Each block is combined once, along the ring starting after its owner, and then
 * copied to everybody: results are bit-identical on every rank, but the order of
 * combination is rotated per block, so the op must be commutative.  Not yet
 * segmented or pipelined (the phases follow each other step by step; issue 3).
 */
#include "opal/loom/loom_registry.h"

#define TMP MCA_COLL_LOOM_SLOT_SCRATCH0

int mca_coll_loom_build_ring(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank;
    const int right = mca_coll_loom_rank_mod(r + 1, P), left = mca_coll_loom_rank_mod(r - 1, P);

    if (P < 1 || r < 0 || r >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    mca_coll_loom_sched_copy(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT);
    if (1 == P) {
        return MCA_COLL_LOOM_OK;
    }
    mca_coll_loom_sched_set_blocks(s, P);

    for (int i = 0; i < P - 1; ++i) {
        const int out = mca_coll_loom_rank_mod(r - i, P), in = mca_coll_loom_rank_mod(r - i - 1, P);
        mca_coll_loom_sched_send_blk(s, right, MCA_COLL_LOOM_SLOT_RESULT, out, 1);
        mca_coll_loom_sched_recv_blk(s, left, TMP, in, 1);
        mca_coll_loom_sched_wait(s);
        /* the incoming partial holds the ranks before me along this block's chain */
        mca_coll_loom_sched_reduce_blk(s, TMP, MCA_COLL_LOOM_SLOT_RESULT, in, 1);
    }
    for (int i = 0; i < P - 1; ++i) {
        mca_coll_loom_sched_send_blk(s, right, MCA_COLL_LOOM_SLOT_RESULT,
                                     mca_coll_loom_rank_mod(r + 1 - i, P), 1);
        mca_coll_loom_sched_recv_blk(s, left, MCA_COLL_LOOM_SLOT_RESULT,
                                     mca_coll_loom_rank_mod(r - i, P), 1);
        mca_coll_loom_sched_wait(s);
    }
    return MCA_COLL_LOOM_OK;
}
