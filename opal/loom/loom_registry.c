/*
 * loom: the algorithm registry, the one place where each algorithm is declared.
 */
#include <stdint.h>
#include <string.h>

#include "opal/loom/loom_registry.h"

#define COLL_BIT(c) (1u << (c))

const mca_coll_loom_alg_t mca_coll_loom_algs[] = {
    {
        .name = "pairwise",
        .colls = COLL_BIT(MCA_COLL_LOOM_COLL_ALLREDUCE) | COLL_BIT(MCA_COLL_LOOM_COLL_BARRIER) |
                 COLL_BIT(MCA_COLL_LOOM_COLL_ALLTOALL) | COLL_BIT(MCA_COLL_LOOM_COLL_ALLTOALLV),
        .needs = 0,
        .description = "pairwise exchange (butterfly) with the 2^k+q fold; keeps rank order, "
                       "bit-identical, any op; alltoall(v): P-1 steps, one partner at a time",
        .reference = "End et al., section III.A",
        .build = mca_coll_loom_build_pairwise,
    },
    {
        .name = "dissemination",
        .colls = COLL_BIT(MCA_COLL_LOOM_COLL_ALLREDUCE) | COLL_BIT(MCA_COLL_LOOM_COLL_BARRIER),
        .needs = MCA_COLL_LOOM_NEEDS_COMMUTATIVE | MCA_COLL_LOOM_NEEDS_EXACT,
        .knob = "dissemination_ways",
        .knob_default = 2,
        .knob_min = 1,
        .knob_max = 16,
        .description = "n-way dissemination, adapted for P != (n+1)^k so every rank counts "
                       "exactly once",
        .reference = "End et al., section III.B, Theorem 1",
        .build = mca_coll_loom_build_dissemination,
        .can_serve = mca_coll_loom_dissemination_can_serve,
    },
    {
        .name = "bruck",
        .colls = COLL_BIT(MCA_COLL_LOOM_COLL_ALLREDUCE) | COLL_BIT(MCA_COLL_LOOM_COLL_ALLGATHER) |
                 COLL_BIT(MCA_COLL_LOOM_COLL_ALLTOALL),
        .needs = MCA_COLL_LOOM_NEEDS_COMMUTATIVE | MCA_COLL_LOOM_NEEDS_EXACT,
        .knob = "bruck_ports",
        .knob_default = 2,
        .knob_min = 1,
        .knob_max = 16,
        .description = "Bruck's n-port global combine (digits of P-1 in base n+1); for allgather "
                       "and alltoall, the n-port concatenation in ceil(log_{n+1} P) rounds",
        .reference = "End et al., section III.C",
        .build = mca_coll_loom_build_bruck,
    },
    {
        .name = "ring",
        .colls = COLL_BIT(MCA_COLL_LOOM_COLL_ALLREDUCE) | COLL_BIT(MCA_COLL_LOOM_COLL_ALLGATHER) |
                 COLL_BIT(MCA_COLL_LOOM_COLL_REDUCE_SCATTER) |
                 COLL_BIT(MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK),
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
    },
    {
        .name = "twotree",
        .colls = COLL_BIT(MCA_COLL_LOOM_COLL_BCAST) | COLL_BIT(MCA_COLL_LOOM_COLL_REDUCE) |
                 COLL_BIT(MCA_COLL_LOOM_COLL_ALLREDUCE),
        .needs = MCA_COLL_LOOM_NEEDS_COMMUTATIVE,
        .knob = "twotree_chunk_size",
        .knob_default = 0,
        .knob_min = 0,
        .knob_max = INT32_MAX,
        .description = "pipelined two-tree (TwoTreeC): even chunks down one complete binary "
                       "tree, odd down its mirror; allreduce = reduce + reordered bcast; "
                       "commutative ops. Knob: bytes per chunk, 0 = chosen by the cost model",
        .reference = "the TwoTreeC paper, Algorithms 1-3",
        .build = mca_coll_loom_build_twotree,
        .pipelined = true,
    },
    {
        .name = "binomial",
        .colls = COLL_BIT(MCA_COLL_LOOM_COLL_BCAST) | COLL_BIT(MCA_COLL_LOOM_COLL_REDUCE),
        .needs = 0,
        .description = "binomial tree, unsegmented (baseline); reduce keeps rank order for "
                       "non-commutative ops (tree rooted at rank 0, one extra hop)",
        .reference = "the TwoTreeC paper, section 1 (baseline)",
        .build = mca_coll_loom_build_binomial,
    },
    {
        .name = "hierarchical",
        .colls = COLL_BIT(MCA_COLL_LOOM_COLL_ALLREDUCE) | COLL_BIT(MCA_COLL_LOOM_COLL_BARRIER) |
                 COLL_BIT(MCA_COLL_LOOM_COLL_BCAST) | COLL_BIT(MCA_COLL_LOOM_COLL_REDUCE) |
                 COLL_BIT(MCA_COLL_LOOM_COLL_ALLGATHER) | COLL_BIT(MCA_COLL_LOOM_COLL_SCAN) |
                 COLL_BIT(MCA_COLL_LOOM_COLL_EXSCAN) | COLL_BIT(MCA_COLL_LOOM_COLL_ALLTOALL),
        .needs = 0,
        .knob = "hierarchical_segment_size",
        .knob_default = 0,
        .knob_min = 0,
        .knob_max = INT32_MAX,
        .description = "two-level: shared memory (up to coll_loom_shm_slot_size) or binomial "
                       "inside each node, pairwise (allreduce; the segmented ring from 64 KiB "
                       "for commutative ops) or binomial (bcast, reduce) among the node leaders; "
                       "bcast and reduce above one segment are pipelined along a chain through "
                       "the nodes; "
                       "commutative allreduce from 64 KiB on several nodes of equal size: node "
                       "reduce-scatter, a ring among the nodes per local index, node allgather; "
                       "allgather: node gather, leaders' dissemination, node bcast; scan/exscan: "
                       "node prefix, prefix among the nodes, node bcast (node-consecutive ranks); "
                       "alltoall: node gather, one message per node pair among the leaders, node "
                       "scatter; "
                       "any op on node-consecutive ranks. Knob: bytes per segment, 0 = "
                       "automatic (bcast 256 KiB, reduce 512 KiB, the rings 32 KiB up to 1 MiB parts, else 1 MiB)",
        .reference = "Zhu et al., sections 3.1-3.5",
        .build = mca_coll_loom_build_hierarchical,
        .pipelined = true,
        .can_serve = mca_coll_loom_hierarchical_can_serve,
        .refusal_of = mca_coll_loom_hierarchical_refusal,
    },
    {
        .name = "torus",
        .colls = COLL_BIT(MCA_COLL_LOOM_COLL_BCAST) | COLL_BIT(MCA_COLL_LOOM_COLL_REDUCE) |
                 COLL_BIT(MCA_COLL_LOOM_COLL_ALLREDUCE),
        .needs = MCA_COLL_LOOM_NEEDS_COMMUTATIVE,
        .knob = "torus_segment_size",
        .knob_default = 0,
        .knob_min = 0,
        .knob_max = INT32_MAX,
        .description = "pipelined tree or chain through the nodes on a torus whose edges share "
                       "no directed link under dimension-ordered routing, and a second such tree "
                       "on the links the first leaves free where there is one, each carrying half "
                       "the segments (needs a torus map: coll_loom_torus_file, LOOM_TORUS_COORDS); "
                       "allreduce = reduce + bcast overlapping on the same trees; commutative ops. "
                       "Knob: bytes per segment, 0 = automatic (32 KiB, 64 KiB for allreduce, smaller "
                       "on long chains: 8 segments per rank)",
        .reference = "Mittal et al.",
        .build = mca_coll_loom_build_torus,
        .pipelined = true,
        .can_serve = mca_coll_loom_torus_can_serve,
        .refusal_of = mca_coll_loom_torus_refusal,
    },
    {
        .name = "direct",
        .colls = COLL_BIT(MCA_COLL_LOOM_COLL_ALLTOALL) | COLL_BIT(MCA_COLL_LOOM_COLL_ALLTOALLV),
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
    },
    {
        .name = "recursive_doubling",
        .colls = COLL_BIT(MCA_COLL_LOOM_COLL_SCAN) | COLL_BIT(MCA_COLL_LOOM_COLL_EXSCAN),
        .needs = 0,
        .description = "parallel prefix by recursive doubling, ceil(log2 P) rounds; adjacent "
                       "ranges joined in rank order, so any op",
        .reference = "Zhu et al., section 4.2 (the flat scan it compares against)",
        .build = mca_coll_loom_build_recursive_doubling,
    },
};

const int mca_coll_loom_num_algs = (int) (sizeof(mca_coll_loom_algs) / sizeof(mca_coll_loom_algs[0]));

const char *mca_coll_loom_coll_name(mca_coll_loom_coll_t coll)
{
#define LOOM_COLL_NAME(ID, name, arg) #name,
    static const char *names[MCA_COLL_LOOM_NUM_COLLS] = {MCA_COLL_LOOM_COLLECTIVES(LOOM_COLL_NAME, ~)};
#undef LOOM_COLL_NAME
    return (unsigned) coll < MCA_COLL_LOOM_NUM_COLLS ? names[coll] : "?";
}

int mca_coll_loom_alg_find(mca_coll_loom_coll_t coll, const char *name)
{
    for (int i = 0; NULL != name && i < mca_coll_loom_num_algs; ++i) {
        if (mca_coll_loom_alg_serves(i, coll) && 0 == strcmp(mca_coll_loom_algs[i].name, name)) {
            return i;
        }
    }
    return -1;
}

static int knob_or_default(const mca_coll_loom_alg_t *a, int knob)
{
    if (NULL == a->knob) {
        return 0;
    }
    return (knob < a->knob_min || knob > a->knob_max) ? a->knob_default : knob;
}

const char *mca_coll_loom_alg_refusal(int alg, const mca_coll_loom_params_t *p)
{
    const mca_coll_loom_alg_t *a = &mca_coll_loom_algs[alg];
    mca_coll_loom_params_t q = *p;

    if ((a->needs & MCA_COLL_LOOM_NEEDS_COMMUTATIVE) && !(p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE)) {
        return "the op is not commutative and the algorithm combines out of rank order";
    }
    if ((a->needs & MCA_COLL_LOOM_NEEDS_EXACT) && !(p->call & MCA_COLL_LOOM_CALL_EXACT)) {
        return "the op is not exactly associative on this datatype (floating point or user op) "
               "and the algorithm combines in a rank-dependent order";
    }
    q.knob = knob_or_default(a, p->knob);
    if (NULL != a->can_serve && !a->can_serve(&q)) {
        return NULL != a->refusal_of ? a->refusal_of(&q)
                                     : "no adaption exists for this communicator size and number of ways";
    }
    return NULL;
}

int mca_coll_loom_alg_build(int alg, mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const mca_coll_loom_alg_t *a;
    mca_coll_loom_params_t q;
    int rc;

    if (alg < 0 || alg >= mca_coll_loom_num_algs) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    a = &mca_coll_loom_algs[alg];
    q = *p;
    q.knob = knob_or_default(a, p->knob);
    mca_coll_loom_sched_reset(s);
    rc = a->build(s, &q);
    if (MCA_COLL_LOOM_OK != rc) {
        return rc;
    }
    return mca_coll_loom_sched_finish(s);
}
