/*
 * loom algorithm `direct`: alltoall(v) with every block sent straight to its
 * destination, all at once, completion noticed per source (Iakymchuk et al., section IV.B),
 * and the exchange it shares with `pairwise`.
 *
 * Step i = 1..P-1 of rank r sends its block r+i to rank r+i and receives block r-i
 * from rank r-i: in every step each rank sends to one partner and receives from
 * another, so no rank is the target of two messages of one step.  `direct` posts
 * `direct_window` steps per round (0: all P-1 at once, the paper's scheme; the engine
 * releases each received block on its own); `pairwise` posts one.  A bounded window
 * keeps its rounds in the dependency graph (lockstep), so at most that many partners
 * are in flight: the data dependencies alone would post every step at once.
 */
#include "opal/loom/loom_registry.h"

int mca_coll_loom_alltoall_exchange(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, int window)
{
    const int P = p->P, rank = p->rank;

    if (P < 1 || rank < 0 || rank >= P || window < 0) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (0 == window || window > P - 1) {
        window = P - 1 > 0 ? P - 1 : 1;
    }
    mca_coll_loom_sched_set_blocks(s, P);
    mca_coll_loom_sched_moves_blocks(s);
    mca_coll_loom_sched_exchange(s);
    if (window < P - 1) {
        mca_coll_loom_sched_lockstep(s);
    }
    for (int first = 1; first < P; first += window) {
        for (int i = first; i < first + window && i < P; ++i) {
            const int to = mca_coll_loom_rank_mod(rank + i, P), from = mca_coll_loom_rank_mod(rank - i, P);
            mca_coll_loom_sched_recv_blk(s, from, MCA_COLL_LOOM_SLOT_RESULT, from, 1);
            mca_coll_loom_sched_send_blk(s, to, MCA_COLL_LOOM_SLOT_INPUT, to, 1);
        }
        if (1 == first) {
            /* the own block, while the first messages travel */
            mca_coll_loom_sched_copy_move(s, MCA_COLL_LOOM_SLOT_INPUT, rank, MCA_COLL_LOOM_SLOT_RESULT, rank, 1);
        }
        mca_coll_loom_sched_wait(s);
    }
    if (1 == P) {
        mca_coll_loom_sched_copy_move(s, MCA_COLL_LOOM_SLOT_INPUT, 0, MCA_COLL_LOOM_SLOT_RESULT, 0, 1);
    }
    return MCA_COLL_LOOM_OK;
}

int mca_coll_loom_build_direct(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    return mca_coll_loom_alltoall_exchange(s, p, p->knob);
}

MCA_COLL_LOOM_ALGORITHM(direct) = {
    .name = "direct",
    .colls = MCA_COLL_LOOM_SERVES(ALLTOALL) | MCA_COLL_LOOM_SERVES(ALLTOALLV),
    .needs = 0,
    .knob = "direct_window",
    .knob_default = 0,
    .knob_min = 0,
    .knob_max = INT32_MAX,
    .description = "every block straight to its destination, all receives and sends posted "
                   "at once, each block released as it arrives. Knob: partners in flight "
                   "per round, 0 = all",
    .reference = "Iakymchuk et al., section IV.B",
    .build = mca_coll_loom_build_direct,
};
