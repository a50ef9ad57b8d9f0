/*
 * loom algorithm `hierarchical`: the two-level collectives of seed 003 (Zhu, Goodell,
 * Gropp, Thakur), built from point-to-point messages only, over the node map of the
 * communicator (p->node_of; nodes numbered in order of their lowest rank, whose rank
 * is the node's leader).
 *
 *   allreduce, barrier (section 3.3): binomial reduce inside each node to its leader,
 *       the pairwise exchange among the leaders (large commutative allreduces, p->segs
 *       > 1: the segmented ring, seed 002 IV.A), binomial bcast inside each node;
 *   bcast (section 3.1): a binomial tree among the nodes, rooted at the root's node,
 *       where the root itself stands in for its node's leader (no extra hop, so the
 *       cost does not depend on the root), then a binomial bcast inside each node;
 *   reduce (section 3.2): the mirror image of bcast.
 *   bcast with p->segs > 1 (section 3.1, pipelined): the message in segs segments
 *       flowing down one chain through the nodes, from the root (standing in for its
 *       node's leader) to the next node's leader and so on, and from each node's
 *       representative down a chain through its node.  Segment k leaves the root in
 *       round k, so the network and the nodes work on different segments at once.
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

static int node_of(const mca_coll_loom_params_t *p, int r)
{
    return NULL != p->node_of ? p->node_of[r] : 0;
}

bool mca_coll_loom_hierarchical_can_serve(const mca_coll_loom_params_t *p)
{
    if (p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE) {
        return true;
    }
    if (MCA_COLL_LOOM_COLL_REDUCE == p->coll) {
        return false;
    }
    /* node-consecutive: nodes are numbered by their lowest rank, so the node index
     * never decreases along the ranks exactly when every node is one range */
    for (int r = 1; r < p->P; ++r) {
        if (node_of(p, r) < node_of(p, r - 1)) {
            return false;
        }
    }
    return true;
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

/* The pipelined bcast: a representative forwards each segment to the next node's
 * representative first (the network is the long path), then into its node.  A rank
 * at depth d of this tree receives segment t - d + 1 and sends segment t - d in its
 * round t; every round's transfers are matched by the same round of its parent and
 * children, so the rounds complete in order without a global step. */
static int bcast_pipelined(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, const int *mem, int n,
                           int me, int mynode, int *rep, int nn)
{
    const int S = p->segs, rootnode = node_of(p, p->root);
    const int pos = (mynode - rootnode + nn) % nn; /* my node's place in the nodes' chain */
    int top, j, depth, maxdepth = 0, parent = -1, child[2], nchild = 0;
    int *size;

    rep[rootnode] = p->root;
    top = node_index(mem, n, rep[mynode]);
    /* the node's chain: its representative, then the others in rank order */
    j = me == top ? 0 : (me < top ? me + 1 : me);
#define CHAIN(k) (0 == (k) ? mem_rank(mem, top) : mem_rank(mem, (k) <= top ? (k) - 1 : (k)))
    depth = pos + j;
    if (j > 0) {
        parent = CHAIN(j - 1);
    } else if (pos > 0) {
        parent = rep[(mynode - 1 + nn) % nn];
    }
    if (0 == j && pos < nn - 1) {
        child[nchild++] = rep[(mynode + 1) % nn];
    }
    if (j + 1 < n) {
        child[nchild++] = CHAIN(j + 1);
    }
#undef CHAIN

    /* the deepest rank: node k sits at chain place (k - rootnode) mod nn */
    size = calloc((size_t) nn, sizeof(int));
    if (NULL == size) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    for (int r = 0; r < p->P; ++r) {
        size[node_of(p, r)]++;
    }
    for (int k = 0; k < nn; ++k) {
        const int d = (k - rootnode + nn) % nn + size[k] - 1;
        maxdepth = d > maxdepth ? d : maxdepth;
    }
    free(size);

    mca_coll_loom_sched_set_blocks(s, S);
    for (int t = 0; t < S + maxdepth; ++t) {
        const int kr = t - depth + 1, ks = t - depth;
        bool any = false;
        if (parent >= 0 && kr >= 0 && kr < S) {
            mca_coll_loom_sched_recv_blk(s, parent, RES, kr, 1);
            any = true;
        }
        for (int c = 0; c < nchild && ks >= 0 && ks < S; ++c) {
            mca_coll_loom_sched_send_blk(s, child[c], RES, ks, 1);
            any = true;
        }
        if (any) {
            mca_coll_loom_sched_wait(s);
        }
    }
    return s->error;
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
             * pairwise exchange's log2(nn) whole vectors */
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
        if (p->segs > 1 && !p->leaders_only) {
            rc = bcast_pipelined(s, p, mem, n, me, mynode, rep, nn);
            break;
        }
        rep[node_of(p, p->root)] = p->root;
        top = node_index(mem, n, rep[mynode]);
        if (me == top) {
            rc = sub_phase(s, p, mca_coll_loom_build_binomial, MCA_COLL_LOOM_COLL_BCAST, rep, nn, mynode,
                           node_of(p, p->root), RES, IN, SUB, 0);
        }
        if (MCA_COLL_LOOM_OK == rc) {
            rc = node_bcast(s, p, mem, n, me, top);
        }
        break;
    case MCA_COLL_LOOM_COLL_REDUCE: {
        int part;
        rep[node_of(p, p->root)] = p->root;
        top = node_index(mem, n, rep[mynode]);
        part = node_reduce(s, p, mem, n, me, top, IN, &rc);
        if (MCA_COLL_LOOM_OK == rc && me == top) {
            rc = sub_phase(s, p, mca_coll_loom_build_binomial, MCA_COLL_LOOM_COLL_REDUCE, rep, nn, mynode,
                           node_of(p, p->root), RES, part, SUB, 0);
        }
        break;
    }
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
    mynode = node_of(p, r);
    n = 0;
    for (int i = 0; i < P; ++i) {
        const int k = node_of(p, i);
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
