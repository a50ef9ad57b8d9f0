/*
 * loom algorithm `ring`: the segmented pipelined ring of Iakymchuk et al., section IV.A,
 * for allreduce (reduce-scatter then allgather), allgather and reduce_scatter.
 *
 * The vector is cut into P parts, part b being the one rank b ends up owning, and
 * every part into p->segs segments.  Each step of a phase moves one part per rank,
 * segment by segment, and every rank talks only to its two neighbours: a rank
 * sends and receives (P-1)/P of the vector per phase, the bandwidth term of the
 * lower bound.  The segments are the pipeline: the right neighbour can forward or
 * reduce segment k of a step while segment k+1 is still on its way, and the data a
 * reduction reads is still in cache.  There is no synchronisation between the
 * phases beyond the neighbour exchanges themselves.
 *
 * Reduce-scatter, step i (0..P-2): rank r sends its partial of part r-1-i (its own
 * contribution at step 0) to r+1 and receives part r-2-i from r-1 into RESULT, then
 * adds its own contribution to it.  The chain of part b starts at rank b+1 and ends
 * at rank b with every contribution once.  Received partials land in RESULT, which
 * is still unused there, so no scratch buffer is needed (an in-place call makes the
 * executor keep a copy of the input instead).
 *
 * Allgather, step i: rank r passes part r-i on to r+1 and receives part r-1-i.
 *
 * Each part is combined once, in an order rotated per part, and then copied to
 * everybody: bit-identical on every rank, commutative ops only.
 */
#include "opal/loom/loom_registry.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT

/* One step: part `out` of slot `src` goes right while part `in` arrives from the left,
 * segment by segment; with `add`, my contribution is combined into each arrival. */
static void ring_step(mca_coll_loom_sched_t *s, int S, int right, int left, int src, int out, int in,
                      bool add)
{
    for (int k = 0; k < S; ++k) {
        mca_coll_loom_sched_send_blk(s, right, src, out * S + k, 1);
        mca_coll_loom_sched_recv_blk(s, left, RES, in * S + k, 1);
        mca_coll_loom_sched_wait(s);
        if (add) {
            /* commutative: the order inside the chain does not change the bits every
             * rank receives, and REDUCE never writes the input */
            mca_coll_loom_sched_reduce_blk(s, IN, RES, in * S + k, 1);
        }
    }
}

int mca_coll_loom_build_ring(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank, S = p->segs > 1 ? p->segs : 1;
    const int right = mca_coll_loom_rank_mod(r + 1, P), left = mca_coll_loom_rank_mod(r - 1, P);
    const bool reduce = MCA_COLL_LOOM_COLL_ALLGATHER != p->coll;
    const bool gather = MCA_COLL_LOOM_COLL_REDUCE_SCATTER != p->coll &&
                        MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK != p->coll;

    if (P < 1 || r < 0 || r >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (1 == P) {
        if (reduce) {
            mca_coll_loom_sched_copy(s, IN, RES);
        }
        return MCA_COLL_LOOM_OK;
    }
    mca_coll_loom_sched_set_segmented_blocks(s, P, S);

    if (reduce) {
        for (int i = 0; i < P - 1; ++i) {
            ring_step(s, S, right, left, 0 == i ? IN : RES, mca_coll_loom_rank_mod(r - 1 - i, P),
                      mca_coll_loom_rank_mod(r - 2 - i, P), true);
        }
    }
    if (gather) {
        for (int i = 0; i < P - 1; ++i) {
            ring_step(s, S, right, left, RES, mca_coll_loom_rank_mod(r - i, P),
                      mca_coll_loom_rank_mod(r - 1 - i, P), false);
        }
    }
    return MCA_COLL_LOOM_OK;
}

/* segments per part: the ring pipelines each of its P parts */
static int ring_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob,
                     const mca_coll_loom_segs_model_t *model)
{
    return mca_coll_loom_segs_by_model(alg, coll, P, bytes, knob, P, MCA_COLL_LOOM_MIN_AUTO_CHUNK, model);
}

MCA_COLL_LOOM_ALGORITHM(ring) = {
    .name = "ring",
    .colls = MCA_COLL_LOOM_SERVES(ALLREDUCE) | MCA_COLL_LOOM_SERVES(ALLGATHER) |
             MCA_COLL_LOOM_SERVES(REDUCE_SCATTER) | MCA_COLL_LOOM_SERVES(REDUCE_SCATTER_BLOCK),
    .needs = MCA_COLL_LOOM_NEEDS_COMMUTATIVE,
    .knob = "ring_segment_size",
    .knob_default = 0,
    .knob_min = 0,
    .knob_max = INT32_MAX,
    .description = "segmented pipelined ring: reduce-scatter + allgather, (P-1)/P of the "
                   "vector per rank and phase; bit-identical, commutative ops. Knob: bytes "
                   "per segment, 0 = chosen by the cost model",
    .reference = "Iakymchuk et al., section IV.A",
    .build = mca_coll_loom_build_ring,
    .pipelined = true,
    .segs = ring_segs,
};
