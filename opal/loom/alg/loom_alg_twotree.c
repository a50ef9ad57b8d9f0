/*
 * loom algorithm `twotree`: the pipelined two-tree (TwoTreeC) bcast, reduce and
 * allreduce of the TwoTreeC paper.
 *
 * Topology (the TwoTreeC paper, section 3, Algorithm 1).  Ranks are relabelled relative to the
 * root (v = rank - root mod P), the root is v = 0 and v = 1..n (n = P-1) form two
 * complete binary trees hung under it:
 *   T1: heap order, node v has children 2v and 2v+1 (when <= n), root v = 1;
 *   T2: the mirror image, heap index h = n+1-v, root v = n.
 * The inner nodes of T1 are 1..n/2 and those of T2 n+1-n/2..n, so every rank is an
 * inner node of at most one tree (for odd n, the middle rank is a leaf of both):
 * each rank forwards each chunk it receives at most twice, and the two trees
 * together use the links of every rank in both directions.
 *
 * Bcast (Algorithm 2): the message is cut into p->segs chunks; even chunks go down
 * T1, odd chunks down T2.  Every chunk is sent and received in the same round:
 * chunk c leaves the root in round c, a rank at depth d of its tree receives it in
 * round c + d - 1 and forwards it to both children in round c + d: a pipeline of
 * depth log2(P) with no synchronisation beyond the neighbours' own transfers.
 * Reduce runs the same trees from the leaves up, in the same rounds backwards.
 *
 * Allreduce (section 4.3.1): TwoTreeC reduce to rank 0, then a broadcast on the
 * *reordered* TwoTreeC, both trees rotated by n/2 so that the ranks that finish the
 * reduce first (the leaves of T1) sit near the top of the broadcast.  The root
 * broadcasts once its reduce is complete: starting while its children still send
 * reduce chunks would need those children to post broadcast receives during their
 * reduce rounds (with rendezvous transfers they would otherwise deadlock).
 *
 * Every chunk is combined once, in one tree, so results are bit-identical on every
 * rank; the trees combine out of rank order, so the op must be commutative.
 */
#include "opal/loom/loom_registry.h"

#define RES  MCA_COLL_LOOM_SLOT_RESULT
#define IN   MCA_COLL_LOOM_SLOT_INPUT
#define ACC  MCA_COLL_LOOM_SLOT_SCRATCH0       /* partial of an inner node */
#define TMP  (MCA_COLL_LOOM_SLOT_SCRATCH0 + 1) /* second child's partial */

typedef struct {
    int parent;    /* vrank, -1 for v = 0 */
    int child[2];  /* vranks, -1 when absent */
} tt_node_t;

/* heap index <-> vrank of tree t (0: T1, 1: T2), rotated by `rot` (reordered). */
static int tt_label(int n, int t, int rot, int h)
{
    int v = 0 == t ? h : n + 1 - h;
    return (v - 1 + rot) % n + 1;
}

static int tt_heap(int n, int t, int rot, int v)
{
    int u = ((v - 1 - rot) % n + n) % n + 1;
    return 0 == t ? u : n + 1 - u;
}

/* Rank v's place in tree t of a TwoTreeC over n+1 ranks. */
static tt_node_t tt_node(int n, int t, int rot, int v)
{
    tt_node_t x = {.parent = -1, .child = {-1, -1}};

    if (0 == v) {
        x.child[0] = tt_label(n, t, rot, 1);
        return x;
    }
    int h = tt_heap(n, t, rot, v);
    x.parent = h > 1 ? tt_label(n, t, rot, h / 2) : 0;
    for (int c = 0; c < 2; ++c) {
        if (2 * h + c <= n) {
            x.child[c] = tt_label(n, t, rot, 2 * h + c);
        }
    }
    return x;
}

static int to_rank(int v, int root, int P)
{
    return mca_coll_loom_rank_mod((long) v + root, P);
}

/* Depth of heap index h (the top of a tree, h = 1, has depth 1: the root is 0). */
static int tt_depth(int h)
{
    int d = 0;
    for (; h > 0; h >>= 1) {
        ++d;
    }
    return d;
}

/* Broadcast in aligned rounds: chunk c (in tree c % 2) leaves the root in round c
 * and a rank at depth d of that tree receives it in round c + d - 1 and forwards it
 * in round c + d, so every message is sent and received in the same round.  (Posting
 * the receive a round before the parent's send made a rank's round c wait for its
 * parent's round c + 1, and the two trees' edges then close dependency cycles that
 * cost several chunk times per round whatever the chunk count: no pipelining.) */
static void tt_bcast(mca_coll_loom_sched_t *s, int v, int root, int P, int K, int rot,
                     const tt_node_t node[2])
{
    const int n = P - 1, H = tt_depth(n);
    int d[2];

    for (int t = 0; t < 2; ++t) {
        d[t] = 0 == v ? 0 : tt_depth(tt_heap(n, t, rot, v));
    }
    for (int r = 0; r < K + H; ++r) {
        bool any = false;
        for (int t = 0; t < 2 && 0 != v; ++t) {
            int c = r - d[t] + 1;
            if (c >= 0 && c < K && c % 2 == t) {
                mca_coll_loom_sched_recv_blk(s, to_rank(node[t].parent, root, P), RES, c, 1);
                any = true;
            }
        }
        for (int t = 0; t < 2; ++t) {
            int c = r - d[t];
            if (c < 0 || c >= K || c % 2 != t) {
                continue;
            }
            for (int k = 0; k < 2; ++k) {
                if (node[t].child[k] >= 0) {
                    mca_coll_loom_sched_send_blk(s, to_rank(node[t].child[k], root, P), RES, c, 1);
                    any = true;
                }
            }
        }
        if (any) {
            mca_coll_loom_sched_wait(s);
        }
    }
}

/* Where chunk c of a non-root vrank's partial lives once its children's are in. */
static int tt_partial_slot(const tt_node_t *nt)
{
    return nt->child[0] >= 0 ? ACC : IN;
}

/* Reduce: the broadcast's rounds run backwards.  A rank at depth d of tree c % 2
 * sends its partial of chunk c to its parent in round c + H - d (H: the trees'
 * depth) and so receives its children's in round c + H - d - 1, combining them
 * after that round's WAIT. */
static void tt_reduce(mca_coll_loom_sched_t *s, int v, int root, int P, int K, const tt_node_t node[2])
{
    const int n = P - 1, H = tt_depth(n);
    int d[2];

    for (int t = 0; t < 2; ++t) {
        d[t] = 0 == v ? 0 : tt_depth(tt_heap(n, t, 0, v));
    }
    if (0 == v) {
        mca_coll_loom_sched_copy(s, IN, RES);
    }
    for (int r = 0; r < K + H; ++r) {
        int got[2] = {-1, -1};
        bool any = false;
        for (int t = 0; t < 2; ++t) {
            int c = r - (H - d[t] - 1);
            if (c < 0 || c >= K || c % 2 != t || node[t].child[0] < 0) {
                continue;
            }
            for (int k = 0; k < 2; ++k) {
                if (node[t].child[k] >= 0) {
                    /* the root's single child per tree: RESULT holds its own input */
                    mca_coll_loom_sched_recv_blk(s, to_rank(node[t].child[k], root, P), 0 == k ? ACC : TMP,
                                                 c, 1);
                }
            }
            got[t] = c;
            any = true;
        }
        for (int t = 0; t < 2 && 0 != v; ++t) {
            int c = r - (H - d[t]);
            if (c >= 0 && c < K && c % 2 == t) {
                mca_coll_loom_sched_send_blk(s, to_rank(node[t].parent, root, P), tt_partial_slot(&node[t]),
                                             c, 1);
                any = true;
            }
        }
        if (!any) {
            continue;
        }
        mca_coll_loom_sched_wait(s);
        for (int t = 0; t < 2; ++t) {
            if (got[t] < 0) {
                continue;
            }
            if (0 == v) {
                mca_coll_loom_sched_reduce_blk(s, ACC, RES, got[t], 1);
            } else {
                /* commutative: any order gives the bits every rank will receive */
                mca_coll_loom_sched_reduce_blk(s, IN, ACC, got[t], 1);
                if (node[t].child[1] >= 0) {
                    mca_coll_loom_sched_reduce_blk(s, TMP, ACC, got[t], 1);
                }
            }
        }
    }
}

int mca_coll_loom_build_twotree(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, K = p->segs > 1 ? p->segs : 1;
    const bool all = MCA_COLL_LOOM_COLL_ALLREDUCE == p->coll;
    const int root = all ? 0 : p->root;
    int n, v;
    tt_node_t node[2], bnode[2];

    if (P < 1 || p->rank < 0 || p->rank >= P || root < 0 || root >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (MCA_COLL_LOOM_COLL_BCAST != p->coll && MCA_COLL_LOOM_COLL_REDUCE != p->coll && !all) {
        return MCA_COLL_LOOM_ERR_NOTSUP;
    }
    v = mca_coll_loom_rank_mod((long) p->rank - root, P);
    if (1 == P) {
        if (MCA_COLL_LOOM_COLL_BCAST != p->coll) {
            mca_coll_loom_sched_copy(s, IN, RES);
        }
        return MCA_COLL_LOOM_OK;
    }
    n = P - 1;
    mca_coll_loom_sched_set_blocks(s, K);
    for (int t = 0; t < 2; ++t) {
        node[t] = tt_node(n, t, 0, v);
        bnode[t] = tt_node(n, t, n / 2, v);
    }

    switch (p->coll) {
    case MCA_COLL_LOOM_COLL_BCAST:
        tt_bcast(s, v, root, P, K, 0, node);
        break;
    case MCA_COLL_LOOM_COLL_REDUCE:
        tt_reduce(s, v, root, P, K, node);
        break;
    default: /* allreduce */
        tt_reduce(s, v, root, P, K, node);
        tt_bcast(s, v, root, P, K, n / 2, bnode);
        break;
    }
    return MCA_COLL_LOOM_OK;
}

/* chunks of the whole message */
static int twotree_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob,
                        const mca_coll_loom_segs_model_t *model)
{
    return mca_coll_loom_segs_by_model(alg, coll, P, bytes, knob, 1, MCA_COLL_LOOM_MIN_AUTO_CHUNK, model);
}

MCA_COLL_LOOM_ALGORITHM(twotree) = {
    .name = "twotree",
    .colls = MCA_COLL_LOOM_SERVES(BCAST) | MCA_COLL_LOOM_SERVES(REDUCE) |
             MCA_COLL_LOOM_SERVES(ALLREDUCE),
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
    .segs = twotree_segs,
};
