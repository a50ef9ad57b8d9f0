/*
 * loom algorithm `hierarchical`: the two-level collectives of Zhu et al. (Zhu, Goodell,
 * Gropp, Thakur), built from point-to-point messages only, over the node map of the
 * communicator (p->node_of; nodes numbered in order of their lowest rank, whose rank
 * is the node's leader).
 *
 *   allreduce, barrier (section 3.3): binomial reduce inside each node to its leader,
 *       the pairwise exchange among the leaders (large commutative allreduces, p->segs
 *       > 1: the segmented ring, Iakymchuk et al. IV.A), binomial bcast inside each node; on
 *       several nodes of equal size, a large commutative allreduce runs one ring per
 *       local index instead (loom_alg_hierarchical_rings.c);
 *   bcast (section 3.1): a binomial tree among the nodes, rooted at the root's node,
 *       where the root itself stands in for its node's leader (no extra hop, so the
 *       cost does not depend on the root), then a binomial bcast inside each node;
 *   reduce (section 3.2): the mirror image of bcast.
 *   bcast with p->segs > 1 (section 3.1, pipelined): the message in segs segments
 *       flowing down one chain through the nodes, from the root (standing in for its
 *       node's leader) to the next node's leader and so on, and from each node's
 *       representative down a chain through its node.  Segment k leaves the root in
 *       round k, so the network and the nodes work on different segments at once.
 *   reduce with p->segs > 1 (section 3.2, pipelined): the same chains, the rounds run
 *       backwards, every segment combined on its way up.
 *
 * Only one message per node pair crosses the network in each inter-node round, and
 * the inter-node phase has ceil(log2 nodes) rounds instead of ceil(log2 P).
 *
 * Exactness.  Inside a node the binomial tree combines the ranks of the node in
 * increasing order (acc := acc o child, children's ranges following acc's), and the
 * pairwise exchange keeps the order of the leaders; when every node holds one
 * contiguous range of ranks (node-consecutive), that is rank order, so the allreduce
 * then serves non-commutative ops too.  Every rank receives the leaders' result as
 * a copy: bit-identical everywhere.  reduce with a root that is not its node's
 * leader combines out of order, so it needs a commutative op.
 *
 * With p->leaders_only the node phases are left out: the component runs them through
 * the node's shared segment (opal/loom/loom_shm.h, section 3's short-message case)
 * and this schedule is only the representatives' phase, on the node's part.
 */
#include <stdlib.h>

#include "opal/loom/loom_registry.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT
#define PART         MCA_COLL_LOOM_SLOT_SCRATCH0       /* the node's result at its top rank */
#define NODE_SCRATCH (MCA_COLL_LOOM_SLOT_SCRATCH0 + 1) /* scratch of the node phase (2 slots) */
#define SUB          (MCA_COLL_LOOM_SLOT_SCRATCH0 + 3) /* scratch of the leaders' phase */

/* node-consecutive: nodes are numbered by their lowest rank, so the node index never
 * decreases along the ranks exactly when every node is one range */
static bool node_consecutive(const mca_coll_loom_params_t *p)
{
    for (int r = 1; r < p->P; ++r) {
        if (mca_coll_loom_node_of(p, r) < mca_coll_loom_node_of(p, r - 1)) {
            return false;
        }
    }
    return true;
}

const char *mca_coll_loom_hierarchical_refusal(const mca_coll_loom_params_t *p)
{
    switch (p->coll) {
    case MCA_COLL_LOOM_COLL_SCAN:
    case MCA_COLL_LOOM_COLL_EXSCAN:
        return "the ranks of a node are not consecutive, so a node's prefix is not a range of ranks";
    case MCA_COLL_LOOM_COLL_REDUCE:
        return "the op is not commutative and the reduce combines node by node from the root's "
               "node, out of rank order";
    case MCA_COLL_LOOM_COLL_ALLTOALL:
        return "a node has too many ranks: its leader would need more than 64 buffers";
    default:
        return "the op is not commutative and the ranks of a node are not consecutive, so "
               "combining node by node would leave rank order";
    }
}

bool mca_coll_loom_hierarchical_can_serve(const mca_coll_loom_params_t *p)
{
    switch (p->coll) {
    case MCA_COLL_LOOM_COLL_ALLGATHER:
        return true; /* data movement addressed by rank: any node map */
    case MCA_COLL_LOOM_COLL_ALLTOALL:
        return mca_coll_loom_hierarchical_alltoall_fits(p); /* any node map, slots permitting */
    case MCA_COLL_LOOM_COLL_SCAN:
    case MCA_COLL_LOOM_COLL_EXSCAN:
        return node_consecutive(p); /* a node's prefix must be a range of ranks */
    case MCA_COLL_LOOM_COLL_REDUCE:
        return 0 != (p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE);
    default:
        return (p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE) || node_consecutive(p);
    }
}

/* One phase among a subset of the ranks: `build` run for the sub-communicator
 * peers[0..n-1] (this rank is peers[me], the phase's root peers[root]), appended
 * with its peers and slots mapped.  Both levels reuse the registry's builders: the
 * binomial tree inside a node and between the nodes, pairwise among the leaders. */
static int sub_phase(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p,
                     mca_coll_loom_build_fn_t build, int coll, const int *peers, int n, int me, int root,
                     int res_slot, int in_slot, int scratch_base, int segs)
{
    mca_coll_loom_params_t q = *p;
    mca_coll_loom_sched_t sub;
    int rc;

    q.P = n;
    q.rank = me;
    q.root = root;
    q.coll = coll;
    q.nodes = 1;
    q.rpn = n;
    q.node_of = NULL;
    q.segs = segs;
    mca_coll_loom_sched_init(&sub);
    rc = build(&sub, &q);
    if (MCA_COLL_LOOM_OK == rc) {
        mca_coll_loom_sched_append_mapped(s, &sub, peers, res_slot, in_slot, scratch_base);
        rc = s->error;
    }
    mca_coll_loom_sched_fini(&sub);
    return rc;
}

/* The node phases: a binomial reduce of `in_slot` to mem[top], or a binomial bcast
 * of RESULT from mem[top].  With top = 0 the reduce combines the node's ranks in
 * increasing order (binomial keeps rank order on non-commutative calls with its tree
 * rooted at 0).  A node of one rank has nothing to do.  The reduce returns the slot
 * that holds the node's result at mem[top]. */
static int node_reduce(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const int *mem, int n,
                       int me, int top, int in_slot, int *rc)
{
    if (n < 2 || p->leaders_only) {
        return in_slot;
    }
    *rc = sub_phase(s, p, mca_coll_loom_build_binomial, MCA_COLL_LOOM_COLL_REDUCE, mem, n, me, top, PART,
                    in_slot, NODE_SCRATCH, 0);
    return PART;
}

static int node_bcast(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const int *mem, int n,
                      int me, int top)
{
    if (n < 2 || p->leaders_only) {
        return MCA_COLL_LOOM_OK;
    }
    return sub_phase(s, p, mca_coll_loom_build_binomial, MCA_COLL_LOOM_COLL_BCAST, mem, n, me, top, RES, IN,
                     NODE_SCRATCH, 0);
}

/* The rank at index i of mem (NULL: the identity). */
static int mem_rank(const int *mem, int i)
{
    return NULL != mem ? mem[i] : i;
}

/* Index of rank `rank` among mem[0..n-1] (NULL: the identity). */
static int node_index(const int *mem, int n, int rank)
{
    for (int i = 0; NULL != mem && i < n; ++i) {
        if (mem[i] == rank) {
            return i;
        }
    }
    return NULL != mem ? 0 : rank;
}

/* A node's chain: its representative mem[top] first, then the others in rank order.
 * chain_at: the rank at place k; chain_place: the place of mem[me]. */
static int chain_at(const int *mem, int top, int k)
{
    return 0 == k ? mem_rank(mem, top) : mem_rank(mem, k <= top ? k - 1 : k);
}

static int chain_place(int me, int top)
{
    return me == top ? 0 : (me < top ? me + 1 : me);
}

/* The tree of the pipelined bcast and reduce: a chain through the nodes from the
 * root's node (the root stands in for its node's representative), and from each
 * representative a chain through its node in rank order.  A representative's
 * children are the next node's representative (first: the network is the long path)
 * and the second rank of its node's chain.  Gives this rank's parent (-1 at the
 * root), children, depth, and the tree's largest depth. */
typedef struct {
    int parent, child[2], nchild, depth, maxdepth;
} chain_tree_t;

static int chain_tree(const mca_coll_loom_params_t *p, const int *mem, int n, int me, int mynode, int *rep,
                      int nn, chain_tree_t *t)
{
    const int rootnode = mca_coll_loom_node_of(p, p->root);
    const int pos = (mynode - rootnode + nn) % nn; /* my node's place in the nodes' chain */
    int top, j, depth, maxdepth = 0, parent = -1, nchild = 0;
    int *size;

    rep[rootnode] = p->root;
    top = node_index(mem, n, rep[mynode]);
    /* the node's chain: its representative, then the others in rank order */
    j = chain_place(me, top);
    depth = pos + j;
    if (j > 0) {
        parent = chain_at(mem, top, j - 1);
    } else if (pos > 0) {
        parent = rep[(mynode - 1 + nn) % nn];
    }
    if (0 == j && pos < nn - 1) {
        t->child[nchild++] = rep[(mynode + 1) % nn];
    }
    if (j + 1 < n) {
        t->child[nchild++] = chain_at(mem, top, j + 1);
    }

    /* the deepest rank: node k sits at chain place (k - rootnode) mod nn */
    size = calloc((size_t) nn, sizeof(int));
    if (NULL == size) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    for (int r = 0; r < p->P; ++r) {
        size[mca_coll_loom_node_of(p, r)]++;
    }
    for (int k = 0; k < nn; ++k) {
        const int d = (k - rootnode + nn) % nn + size[k] - 1;
        maxdepth = d > maxdepth ? d : maxdepth;
    }
    free(size);
    t->parent = parent;
    t->nchild = nchild;
    t->depth = depth;
    t->maxdepth = maxdepth;
    return MCA_COLL_LOOM_OK;
}

/* The pipelined bcast (section 3.1) down the chain tree.  A rank at depth d receives
 * segment t - d + 1 and sends segment t - d in its round t; every round's transfers
 * are matched by the same round of its parent and children, so the rounds complete
 * in order without a global step. */
/* The rounds of a pipelined bcast of S blocks down tree tr (this rank's place in it). */
static int bcast_rounds(mca_coll_loom_sched_t *s, const chain_tree_t *tr, int S)
{
    for (int t = 0; t < S + tr->maxdepth; ++t) {
        const int kr = t - tr->depth + 1, ks = t - tr->depth;
        bool any = false;
        if (tr->parent >= 0 && kr >= 0 && kr < S) {
            mca_coll_loom_sched_recv_blk(s, tr->parent, RES, kr, 1);
            any = true;
        }
        for (int c = 0; c < tr->nchild && ks >= 0 && ks < S; ++c) {
            mca_coll_loom_sched_send_blk(s, tr->child[c], RES, ks, 1);
            any = true;
        }
        if (any) {
            mca_coll_loom_sched_wait(s);
        }
    }
    return s->error;
}

/* The pipelined reduce (section 3.2, the mirror of the bcast): the bcast's rounds run
 * backwards on the same tree.  With h = maxdepth - depth, a rank receives segment
 * t - h + 1 from its children and sends its partial of segment t - h to its parent in
 * round t, and combines the received segment after the round's WAIT, so it leaves in
 * the next round.  A partial lives in RED_ACC (the first child's segment received
 * there, then the rank's own input and the second child's combined in), at the root
 * in RESULT.  Needs a commutative op, as the unpipelined reduce. */
#define RED_ACC NODE_SCRATCH
#define RED_TMP (NODE_SCRATCH + 1)

/* The rounds of a pipelined reduce of S blocks up tree tr, the tree's root combining into
 * root_slot (its input copied there first). */
static int reduce_rounds(mca_coll_loom_sched_t *s, const chain_tree_t *tr, int S, int root_slot)
{
    const int h = tr->maxdepth - tr->depth;

    if (tr->parent < 0) {
        mca_coll_loom_sched_copy(s, IN, root_slot);
    }
    for (int t = 0; t < S + tr->maxdepth; ++t) {
        const int kr = t - h + 1, ks = t - h;
        const bool got = tr->nchild > 0 && kr >= 0 && kr < S;
        bool any = got;
        for (int c = 0; got && c < tr->nchild; ++c) {
            mca_coll_loom_sched_recv_blk(s, tr->child[c], tr->parent >= 0 && 0 == c ? RED_ACC : RED_TMP + c, kr,
                                         1);
        }
        if (tr->parent >= 0 && ks >= 0 && ks < S) {
            mca_coll_loom_sched_send_blk(s, tr->parent, tr->nchild > 0 ? RED_ACC : IN, ks, 1);
            any = true;
        }
        if (!any) {
            continue;
        }
        mca_coll_loom_sched_wait(s);
        if (got && tr->parent < 0) {
            for (int c = 0; c < tr->nchild; ++c) {
                mca_coll_loom_sched_reduce_blk(s, RED_TMP + c, root_slot, kr, 1);
            }
        } else if (got) {
            mca_coll_loom_sched_reduce_blk(s, IN, RED_ACC, kr, 1);
            if (tr->nchild > 1) {
                mca_coll_loom_sched_reduce_blk(s, RED_TMP + 1, RED_ACC, kr, 1);
            }
        }
    }
    return s->error;
}

/* The pipelined bcast or reduce (sections 3.1, 3.2) on the chain tree, in p->segs segments. */
static int chain_pipelined(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const int *mem, int n,
                           int me, int mynode, int *rep, int nn)
{
    chain_tree_t tr;
    int rc = chain_tree(p, mem, n, me, mynode, rep, nn, &tr);

    if (MCA_COLL_LOOM_OK != rc) {
        return rc;
    }
    mca_coll_loom_sched_set_blocks(s, p->segs);
    return MCA_COLL_LOOM_COLL_BCAST == p->coll ? bcast_rounds(s, &tr, p->segs)
                                              : reduce_rounds(s, &tr, p->segs, RES);
}

/* Sends (send = true) or receives, in RESULT, the parts of the ranks whose node is
 * marked in `in_set` (indexed by node), one message per run of consecutive such
 * ranks: both sides walk the ranks in the same order, so the messages match. */
static void move_nodes(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, int peer,
                       const char *in_set, bool send)
{
    for (int r = 0; r < p->P;) {
        int end = r;
        if (!in_set[mca_coll_loom_node_of(p, r)]) {
            ++r;
            continue;
        }
        while (end + 1 < p->P && in_set[mca_coll_loom_node_of(p, end + 1)]) {
            ++end;
        }
        if (send) {
            mca_coll_loom_sched_send_blk(s, peer, RES, r, end - r + 1);
        } else {
            mca_coll_loom_sched_recv_blk(s, peer, RES, r, end - r + 1);
        }
        r = end + 1;
    }
}

/* allgather (the two-level scheme of Zhu et al. section 3 applied to allgather): the
 * node's parts gathered at its leader in one round, the leaders' allgather of whole
 * nodes by dissemination (after the round of distance d a leader holds the d nodes
 * ending at its own, so ceil(log2 nodes) rounds and (nodes-1)/nodes of the vector
 * received, as in Bruck's allgather, without its rotation since parts are addressed
 * by rank), then a binomial bcast of the whole vector inside each node.  Block b of
 * RESULT is rank b's part, so any node map is served. */
static int allgather_levels(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const int *mem,
                            int n, int me, int mynode, const int *rep, int nn)
{
    char *set;

    mca_coll_loom_sched_set_blocks(s, p->P);
    if (me > 0) {
        mca_coll_loom_sched_send_blk(s, mem_rank(mem, 0), RES, mem_rank(mem, me), 1);
        mca_coll_loom_sched_wait(s);
    } else if (n > 1) {
        for (int i = 1; i < n; ++i) {
            mca_coll_loom_sched_recv_blk(s, mem_rank(mem, i), RES, mem_rank(mem, i), 1);
        }
        mca_coll_loom_sched_wait(s);
    }
    if (0 == me && nn > 1) {
        set = calloc((size_t) nn, 1);
        if (NULL == set) {
            return MCA_COLL_LOOM_ERR_NOMEM;
        }
        for (int d = 1; d < nn; d <<= 1) {
            const int cnt = d < nn - d ? d : nn - d; /* nodes moved this round */
            /* send nodes mynode-cnt+1..mynode to the leader d ahead */
            for (int k = 0; k < nn; ++k) {
                set[k] = (char) ((mynode - k + nn) % nn < cnt);
            }
            move_nodes(s, p, rep[(mynode + d) % nn], set, true);
            /* receive nodes from-cnt+1..from of the leader d behind */
            for (int k = 0; k < nn; ++k) {
                set[k] = (char) ((mynode - d - k + 2 * nn) % nn < cnt);
            }
            move_nodes(s, p, rep[(mynode - d + nn) % nn], set, false);
            mca_coll_loom_sched_wait(s);
        }
        free(set);
    }
    return s->error != MCA_COLL_LOOM_OK ? s->error : node_bcast(s, p, mem, n, me, 0);
}

/* scan and exscan (Zhu et al. section 3.5), on node-consecutive ranks: an inclusive
 * prefix inside each node; the nodes' last ranks, which then hold their node's total,
 * run an exclusive prefix over the totals (the seed lets the node's first rank do
 * this; the last one has the total without an extra hop); each one broadcasts the
 * prefix of the nodes before it inside its node, where every rank puts it on the
 * left of its own partial result.  Node 0 has no prefix and skips the last two
 * steps.  Prefixes are recursive doubling (`recursive_doubling`). */
#define SCAN_TMP    NODE_SCRATCH  /* received ranges */
#define SCAN_INCL   PART          /* exscan: the node's inclusive prefix */
#define SCAN_PREFIX SUB           /* the prefix of the nodes before this one */
#define SCAN_ACC    (SUB + 1)     /* the representatives' running prefix */

static int scan_levels(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const int *mem, int n,
                       int me, int mynode, const int *rep, int nn)
{
    const bool ex = MCA_COLL_LOOM_COLL_EXSCAN == p->coll;
    const int incl = ex ? SCAN_INCL : RES;
    int *last, rc = MCA_COLL_LOOM_OK;

    /* exscan: the node's total is needed by its last rank, as its representative */
    mca_coll_loom_prefix_doubling(s, mem, n, me, IN, incl, !ex || (me == n - 1 && nn > 1),
                                  ex ? RES : -1, SCAN_TMP);
    if (nn < 2) {
        return s->error;
    }
    if (me == n - 1) {
        last = malloc(sizeof(int) * (size_t) nn);
        if (NULL == last) {
            return MCA_COLL_LOOM_ERR_NOMEM;
        }
        for (int k = 0; k < nn; ++k) {
            last[k] = (k + 1 < nn ? rep[k + 1] : p->P) - 1; /* node-consecutive */
        }
        mca_coll_loom_prefix_doubling(s, last, nn, mynode, incl, SCAN_ACC, false, SCAN_PREFIX,
                                      SCAN_TMP);
        free(last);
    }
    if (0 == mynode) {
        return s->error;
    }
    if (n > 1 && MCA_COLL_LOOM_OK == s->error) {
        rc = sub_phase(s, p, mca_coll_loom_build_binomial, MCA_COLL_LOOM_COLL_BCAST, mem, n, me, n - 1,
                       SCAN_PREFIX, IN, NODE_SCRATCH, 0);
    }
    if (MCA_COLL_LOOM_OK == rc) {
        if (ex && 0 == me) {
            mca_coll_loom_sched_copy(s, SCAN_PREFIX, RES);
        } else {
            mca_coll_loom_sched_reduce(s, SCAN_PREFIX, RES);
        }
    }
    return MCA_COLL_LOOM_OK != rc ? rc : s->error;
}

/* bcast and reduce among the nodes' representatives rep[0..nn-1] (the root standing in
 * for its node's leader): a binomial tree, or the algorithm the rules choose for one rank
 * per node on nn nodes (p->net_alg, mca_coll_loom_decide_net), whose depth does not grow
 * with the nodes as the chain's fill does. */
static int net_phase(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const int *rep, int nn,
                     int mynode, int res_slot, int in_slot)
{
    const int rootnode = mca_coll_loom_node_of(p, p->root);
    mca_coll_loom_params_t q;

    if (p->net_alg <= 0 || p->net_alg > mca_coll_loom_num_algs) {
        return sub_phase(s, p, mca_coll_loom_build_binomial, p->coll, rep, nn, mynode, rootnode, res_slot,
                         in_slot, SUB, 0);
    }
    q = *p;
    q.knob = p->net_knob;
    q.net_alg = 0;
    return sub_phase(s, &q, mca_coll_loom_algs[p->net_alg - 1]->build, p->coll, rep, nn, mynode, rootnode,
                     res_slot, in_slot, SUB, p->net_segs);
}

/* The block layout of the phase among the nodes (every rank of it has the same): its
 * first rank's schedule, built to read it.  Sets *nblocks 0 when it has none. */
static int net_layout(const mca_coll_loom_params_t *p, int nn, int *nblocks, int *nseg)
{
    mca_coll_loom_params_t q = *p;
    mca_coll_loom_sched_t t;
    int rc;

    q.P = nn;
    q.rank = 0;
    q.root = 0;
    q.nodes = 1;
    q.rpn = nn;
    q.node_of = NULL;
    q.knob = p->net_knob;
    q.segs = p->net_segs;
    q.net_alg = 0;
    mca_coll_loom_sched_init(&t);
    t.no_graph = true;
    rc = mca_coll_loom_algs[p->net_alg - 1]->build(&t, &q);
    *nblocks = t.nblocks > 0 ? t.nblocks : 0;
    *nseg = t.nseg > 0 ? t.nseg : 1;
    mca_coll_loom_sched_fini(&t);
    return rc;
}

/* The chain through one node from mem[top] (chain_at's order) as a tree of this rank. */
static chain_tree_t node_chain(const int *mem, int n, int me, int top)
{
    const int j = chain_place(me, top);
    chain_tree_t t = {.parent = j > 0 ? chain_at(mem, top, j - 1) : -1, .nchild = 0, .depth = j,
                      .maxdepth = n - 1};

    if (j + 1 < n) {
        t.child[t.nchild++] = chain_at(mem, top, j + 1);
    }
    return t;
}

/* bcast inside the node after the phase among the nodes: the chain from the node's
 * representative mem[top], block by block of that phase's layout, so a rank forwards a
 * block while the next arrives and the node adds about a block per rank to the call, not
 * a whole vector per binomial level (Zhu et al. section 3.1's pipelining, inside the
 * node).  Without blocks: the binomial tree. */
static int node_chain_bcast(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const int *mem, int n,
                            int me, int top, int nn)
{
    int nb = 0, nseg = 1, rc;
    chain_tree_t tr;

    if (n < 2) {
        return MCA_COLL_LOOM_OK;
    }
    rc = net_layout(p, nn, &nb, &nseg);
    if (MCA_COLL_LOOM_OK != rc) {
        return rc;
    }
    if (nb < 2) {
        return node_bcast(s, p, mem, n, me, top);
    }
    mca_coll_loom_sched_set_segmented_blocks(s, nb / nseg, nseg);
    tr = node_chain(mem, n, me, top);
    return bcast_rounds(s, &tr, nb);
}

/* reduce inside the node before the phase among the nodes: the mirror of
 * node_chain_bcast, every block combined on its way up the chain to mem[top] (a
 * commutative op, as hierarchical's reduce needs), so the node's partial of a block can
 * leave while the next is combined.  Returns the slot of the node's result at mem[top]. */
static int node_chain_reduce(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const int *mem, int n,
                             int me, int top, int nn, int *rc)
{
    int nb = 0, nseg = 1;
    chain_tree_t tr;

    if (n < 2) {
        return IN;
    }
    *rc = net_layout(p, nn, &nb, &nseg);
    if (MCA_COLL_LOOM_OK != *rc) {
        return IN;
    }
    if (nb < 2) {
        return node_reduce(s, p, mem, n, me, top, IN, rc);
    }
    mca_coll_loom_sched_set_segmented_blocks(s, nb / nseg, nseg);
    tr = node_chain(mem, n, me, top);
    *rc = reduce_rounds(s, &tr, nb, PART);
    return PART;
}

/* Both levels for this rank: mem[0..n-1] are its node's ranks (NULL: the identity,
 * all ranks on one node), it is mem[me]; rep[0..nn-1] the nodes' leaders, its node
 * is mynode.  rep may be changed (the root's node). */
static int build_levels(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const int *mem, int n,
                        int me, int mynode, int *rep, int nn)
{
    int top, rc = MCA_COLL_LOOM_OK;

    switch (p->coll) {
    case MCA_COLL_LOOM_COLL_ALLREDUCE:
    case MCA_COLL_LOOM_COLL_BARRIER: {
        int part = node_reduce(s, p, mem, n, me, 0, IN, &rc);
        if (MCA_COLL_LOOM_OK == rc && 0 == me) {
            /* large commutative calls (segs > 1): the leaders run the segmented ring,
             * which moves 2 (nn - 1) / nn of the vector per leader instead of the
             * pairwise exchange's log2(nn) whole vectors.  Small ones: pairwise.  One
             * round instead (dissemination with nn - 1 ways, every leader sending to all
             * others: 12 messages instead of 8 on 4 nodes) was slower where messages
             * cost CPU (docs/dev/developing.md, "Performance notes") */
            const bool ring = p->segs > 1 && MCA_COLL_LOOM_COLL_ALLREDUCE == p->coll &&
                              (p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE);
            rc = sub_phase(s, p, ring ? mca_coll_loom_build_ring : mca_coll_loom_build_pairwise,
                           MCA_COLL_LOOM_COLL_ALLREDUCE, rep, nn, mynode, 0, RES, part, SUB,
                           ring ? p->segs : 0);
        }
        if (MCA_COLL_LOOM_OK == rc) {
            rc = node_bcast(s, p, mem, n, me, 0);
        }
        break;
    }
    case MCA_COLL_LOOM_COLL_BCAST:
        if (p->segs > 1 && !p->leaders_only && 0 == p->net_alg) {
            rc = chain_pipelined(s, p, mem, n, me, mynode, rep, nn);
            break;
        }
        rep[mca_coll_loom_node_of(p, p->root)] = p->root;
        top = node_index(mem, n, rep[mynode]);
        if (me == top) {
            rc = net_phase(s, p, rep, nn, mynode, RES, IN);
            /* the representative only sends in its node's bcast: its first send into the
             * node need not wait for its last send to another node to complete */
            if (MCA_COLL_LOOM_OK == rc && n > 1 && !p->leaders_only) {
                (void) mca_coll_loom_sched_unwait_sends(s);
            }
        }
        if (MCA_COLL_LOOM_OK == rc) {
            rc = p->net_alg > 0 && !p->leaders_only ? node_chain_bcast(s, p, mem, n, me, top, nn)
                                                    : node_bcast(s, p, mem, n, me, top);
        }
        break;
    case MCA_COLL_LOOM_COLL_REDUCE: {
        int part;
        if (p->segs > 1 && !p->leaders_only && 0 == p->net_alg) {
            rc = chain_pipelined(s, p, mem, n, me, mynode, rep, nn);
            break;
        }
        rep[mca_coll_loom_node_of(p, p->root)] = p->root;
        top = node_index(mem, n, rep[mynode]);
        part = p->net_alg > 0 && !p->leaders_only ? node_chain_reduce(s, p, mem, n, me, top, nn, &rc)
                                                   : node_reduce(s, p, mem, n, me, top, IN, &rc);
        if (MCA_COLL_LOOM_OK == rc && me == top) {
            rc = net_phase(s, p, rep, nn, mynode, RES, part);
        }
        break;
    }
    case MCA_COLL_LOOM_COLL_ALLGATHER:
        rc = allgather_levels(s, p, mem, n, me, mynode, rep, nn);
        break;
    case MCA_COLL_LOOM_COLL_SCAN:
    case MCA_COLL_LOOM_COLL_EXSCAN:
        rc = scan_levels(s, p, mem, n, me, mynode, rep, nn);
        break;
    default:
        rc = MCA_COLL_LOOM_ERR_NOTSUP;
        break;
    }
    return rc;
}

int mca_coll_loom_build_hierarchical(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank;
    int nn = 0, mynode, n, me = -1, rc;
    int *mem, *rep;

    if (P < 1 || r < 0 || r >= P || p->root < 0 || p->root >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (MCA_COLL_LOOM_COLL_ALLTOALL == p->coll) {
        return mca_coll_loom_hierarchical_alltoall(s, p); /* loom_alg_hierarchical_alltoall.c */
    }
    if (mca_coll_loom_hierarchical_rings_fit(p)) {
        return mca_coll_loom_hierarchical_rings(s, p); /* loom_alg_hierarchical_rings.c */
    }
    if (NULL == p->node_of) {
        /* one node: its ranks are the communicator (identity peers), rank 0 leads */
        int leader = 0;
        mem = NULL;
        rep = &leader;
        return build_levels(s, p, mem, P, r, 0, rep, 1);
    }
    mem = malloc(sizeof(int) * (size_t) P);
    rep = malloc(sizeof(int) * (size_t) P);
    if (NULL == mem || NULL == rep) {
        free(mem);
        free(rep);
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    /* One pass over the node map: this node's ranks in increasing order, and the node
     * representatives, first the leaders (the root stands in for its own node's leader
     * in bcast and reduce, below).  Nodes numbered by their lowest rank appear in
     * order, each new one as the next index. */
    mynode = mca_coll_loom_node_of(p, r);
    n = 0;
    for (int i = 0; i < P; ++i) {
        const int k = mca_coll_loom_node_of(p, i);
        if (k == nn) {
            rep[nn++] = i;
        } else if (k < 0 || k > nn) {
            free(mem);
            free(rep);
            return MCA_COLL_LOOM_ERR_BADPARAM; /* nodes not numbered by their lowest rank */
        }
        if (k == mynode) {
            me = i == r ? n : me;
            mem[n++] = i;
        }
    }

    rc = build_levels(s, p, mem, n, me, mynode, rep, nn);
    free(mem);
    free(rep);
    return rc;
}

/* Automatic segment sizes (the knob's 0).  bcast and reduce: segments of the chain,
 * smaller for the reduce, as every segment is combined on its way, and smaller still for
 * the bcast, whose chain fill costs a segment per node while a segment costs the graph
 * engine little more than its bytes (measurements: docs/dev/developing.md, "Segment and
 * chunk sizes"); at most LOOM_HIER_MAX_SEGS. */
#define LOOM_HIER_AUTO_SEGMENT        ((size_t) 1024 * 1024)
#define LOOM_HIER_AUTO_SEGMENT_REDUCE ((size_t) 512 * 1024)
#define LOOM_HIER_AUTO_SEGMENT_BCAST  ((size_t) 256 * 1024)
#define LOOM_HIER_MAX_SEGS            4096
/* allreduce: the leaders' ring from this size (pairwise below) */
#define LOOM_HIER_RING_BYTES ((size_t) 64 * 1024)
/* the rings' automatic segments while a part is at most LOOM_HIER_RING_SMALL_PART:
 * half btl/tcp's eager limit, as LOOM_HIER_A2A_PIECE below, since a segment that needs a
 * rendezvous waits for the receiver's reply at every ring step; larger parts pay for the
 * number of messages instead */
#define LOOM_HIER_RING_SEGMENT_SMALL ((size_t) 32 * 1024)
#define LOOM_HIER_RING_SMALL_PART    ((size_t) 1024 * 1024)
/* alltoall: the most a message between leaders carries, half btl/tcp's eager limit (64
 * KiB with its header): a larger one waits for a rendezvous */
#define LOOM_HIER_A2A_PIECE ((size_t) 32 * 1024)

/* bcast, reduce: segments of the chain; allreduce from LOOM_HIER_RING_BYTES: segments per
 * part of the leaders' ring (at least 2, which is what selects the ring); alltoall: pieces
 * of a slot of P parts (loom_alg_hierarchical_alltoall.c); other calls, and those on the
 * node's shared segment, use none */
static int hierarchical_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob,
                             const mca_coll_loom_segs_model_t *model)
{
    const size_t np = (size_t) (P > 0 ? P : 1);
    size_t seg = knob > 0                            ? (size_t) knob
                 : MCA_COLL_LOOM_COLL_REDUCE == coll ? LOOM_HIER_AUTO_SEGMENT_REDUCE
                 : MCA_COLL_LOOM_COLL_BCAST == coll  ? LOOM_HIER_AUTO_SEGMENT_BCAST
                                                     : LOOM_HIER_AUTO_SEGMENT,
           n;

    (void) alg;
    (void) model;
    if (MCA_COLL_LOOM_COLL_ALLTOALL == coll) {
        const size_t part = bytes / np;
        const size_t per = part > 0 && part < LOOM_HIER_A2A_PIECE ? LOOM_HIER_A2A_PIECE / part : 1;
        return per >= np ? 1 : (int) ((np + per - 1) / per);
    }
    if (MCA_COLL_LOOM_COLL_ALLREDUCE == coll && bytes >= LOOM_HIER_RING_BYTES) {
        const size_t part = bytes / np, cap = (size_t) 65536 / np;
        if (knob <= 0 && part <= LOOM_HIER_RING_SMALL_PART) {
            seg = LOOM_HIER_RING_SEGMENT_SMALL;
        }
        n = (part + seg - 1) / seg;
        n = n < 2 ? 2 : n;
        return (int) (n > cap && cap >= 2 ? cap : n);
    }
    if ((MCA_COLL_LOOM_COLL_BCAST != coll && MCA_COLL_LOOM_COLL_REDUCE != coll) || bytes <= seg) {
        return 1;
    }
    n = (bytes + seg - 1) / seg;
    return (int) (n > LOOM_HIER_MAX_SEGS ? LOOM_HIER_MAX_SEGS : n);
}

MCA_COLL_LOOM_ALGORITHM(hierarchical) = {
    .name = "hierarchical",
    .colls = MCA_COLL_LOOM_SERVES(ALLREDUCE) | MCA_COLL_LOOM_SERVES(BARRIER) |
             MCA_COLL_LOOM_SERVES(BCAST) | MCA_COLL_LOOM_SERVES(REDUCE) |
             MCA_COLL_LOOM_SERVES(ALLGATHER) | MCA_COLL_LOOM_SERVES(SCAN) |
             MCA_COLL_LOOM_SERVES(EXSCAN) | MCA_COLL_LOOM_SERVES(ALLTOALL),
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
    .segs = hierarchical_segs,
    .can_serve = mca_coll_loom_hierarchical_can_serve,
    .refusal_of = mca_coll_loom_hierarchical_refusal,
};
