/*
 * loom algorithm `recursive_doubling` for scan and exscan: the parallel prefix by
 * recursive doubling (Hillis and Steele), the flat scan Zhu et al. section 4.2 compares
 * its hierarchical scan against (MPICH's), in ceil(log2 P) rounds.
 *
 * In the round of distance d, rank r sends its running prefix (ranks r-2d+1..r, or
 * from 0) to r+d and receives that of r-d, which covers the ranks just below its own
 * range; it puts the received range on the left: acc := recv o acc.  Every
 * combination therefore joins two adjacent ranges in rank order, so any op is served,
 * non-commutative ones included.  The exclusive prefix collects the received ranges
 * the same way (each new one lies just below the previous ones).
 *
 * Floating point: rank r's result is combined in a grouping that depends on r, as in
 * every scan; there is no "same result on every rank" for a scan to keep.
 */
#include "opal/loom/loom_registry.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT
#define ACC (MCA_COLL_LOOM_SLOT_SCRATCH0)     /* exscan: the running inclusive prefix */
#define TMP (MCA_COLL_LOOM_SLOT_SCRATCH0 + 1) /* the received range */

static int peer(const int *peers, int i)
{
    return NULL != peers ? peers[i] : i;
}

void mca_coll_loom_prefix_doubling(mca_coll_loom_sched_t *s, const int *peers, int n, int me, int in_slot,
                                   int incl_slot, bool keep_incl, int excl_slot, int tmp_slot)
{
    bool have_excl = false;

    if (in_slot != incl_slot) {
        mca_coll_loom_sched_copy(s, in_slot, incl_slot);
    }
    for (long d = 1; d < n; d <<= 1) {
        const bool to = me + d < n, from = me - d >= 0;
        if (to) {
            mca_coll_loom_sched_send(s, peer(peers, (int) (me + d)), incl_slot);
        }
        if (from) {
            mca_coll_loom_sched_recv(s, peer(peers, (int) (me - d)), tmp_slot);
        }
        mca_coll_loom_sched_wait(s);
        if (!from) {
            continue;
        }
        if (excl_slot >= 0) {
            if (have_excl) {
                mca_coll_loom_sched_reduce(s, tmp_slot, excl_slot);
            } else {
                mca_coll_loom_sched_copy(s, tmp_slot, excl_slot);
                have_excl = true;
            }
        }
        /* the running prefix is needed by later sends (me + 2d < n) or as a result */
        if (keep_incl || me + 2 * d < n) {
            mca_coll_loom_sched_reduce(s, tmp_slot, incl_slot);
        }
    }
}

int mca_coll_loom_build_recursive_doubling(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    if (p->P < 1 || p->rank < 0 || p->rank >= p->P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    switch (p->coll) {
    case MCA_COLL_LOOM_COLL_SCAN:
        mca_coll_loom_prefix_doubling(s, NULL, p->P, p->rank, IN, RES, true, -1, TMP);
        break;
    case MCA_COLL_LOOM_COLL_EXSCAN:
        if (p->P > 1) {
            mca_coll_loom_prefix_doubling(s, NULL, p->P, p->rank, IN, ACC, false, RES, TMP);
        }
        break;
    default:
        return MCA_COLL_LOOM_ERR_NOTSUP;
    }
    return s->error;
}

MCA_COLL_LOOM_ALGORITHM(recursive_doubling) = {
    .name = "recursive_doubling",
    .colls = MCA_COLL_LOOM_SERVES(SCAN) | MCA_COLL_LOOM_SERVES(EXSCAN),
    .needs = 0,
    .description = "parallel prefix by recursive doubling, ceil(log2 P) rounds; adjacent "
                   "ranges joined in rank order, so any op",
    .reference = "Zhu et al., section 4.2 (the flat scan it compares against)",
    .build = mca_coll_loom_build_recursive_doubling,
};
