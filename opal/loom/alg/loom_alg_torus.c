/*
 * loom algorithm `torus`: bcast, reduce and allreduce on a communicator whose nodes have
 * torus coordinates (Mittal et al.: collectives over any subset of torus nodes without two
 * messages on one link), pipelined in p->segs segments so that a large message streams
 * at one link's bandwidth, or at two where a second tree fits beside the first.
 *
 * The tree of ranks: the communicator's nodes in a contention-free tree or chain (under
 * the routing model no directed link carries two of its edges), rooted at the root's
 * node: on up to MCA_COLL_LOOM_TORUS_TREE_MAX nodes the tree crossing the fewest links
 * (mca_coll_loom_torus_tree), which leaves more of the torus to other communicators
 * running at the same time, unless the chain crosses no more (a node with one child
 * sends every segment once); on more nodes the chain (mca_coll_loom_torus_chain: the
 * seed's snake for a box missing a node or planes, a search for random sets).  Inside
 * a node its ranks one after the other, the root first, so a hop inside a node crosses
 * no link.
 *
 *   bcast      segment k leaves the root in round k and moves one level down the tree
 *              per round (the routes from each node to its children are disjoint);
 *   reduce     the mirror: a rank of height h sends its partial of segment k up in
 *              round k + h, combined from its children's as they come (the routes
 *              from each node to its parent are disjoint);
 *   allreduce  reduce to rank 0, then bcast from it, on one tree whose routes are
 *              disjoint in both directions when there is one: the engine runs the
 *              schedule by its dependencies, so the bcast of a segment starts as soon as
 *              its reduce is done and the two streams overlap without sharing a link.
 *
 * Two trees (torus->max_trees 0 or 2): where a second contention-free tree from the
 * root's node crosses none of the first tree's links (on more than
 * MCA_COLL_LOOM_TORUS_TREE_MAX nodes a second chain, e.g. the snake run the other way
 * round its cycle, whose directed links are the first's reversed), the first carries
 * the first half of the segments and the second the rest, both pipelines running round
 * by round side by side.  No directed link carries two edges of the pair, so each node
 * takes its data in over two links at once (the TwoTreeC paper's two trees, which halve the time
 * a pipelined tree needs, built on the torus's links).  For an allreduce the pair must
 * be disjoint in both directions, which small sets rarely allow: it then keeps one
 * tree.
 *
 * Where no contention-free chain was found (loom_torus.h: a search with a budget) the
 * nearest-neighbour chain is used: still exact, only slower.  The tree's order is not
 * rank order: commutative ops only.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "opal/loom/loom_registry.h"
#include "opal/loom/loom_torus.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT
#define ACC MCA_COLL_LOOM_SLOT_SCRATCH0 /* a partial of the reduce */

bool mca_coll_loom_torus_can_serve(const mca_coll_loom_params_t *p)
{
    return NULL != p->torus && NULL != p->torus_coords;
}

const char *mca_coll_loom_torus_refusal(const mca_coll_loom_params_t *p)
{
    return mca_coll_loom_torus_can_serve(p) ? NULL
                                            : "the communicator has no torus map (coll_loom_torus_file, "
                                              "LOOM_TORUS_COORDS, SLURM_TOPOLOGY_ADDR)";
}

/* Segments of at most 32 KiB for bcast and reduce, half btl/tcp's eager limit as
 * loom's other pipelines over the network: a larger one waits for the receiver's reply
 * at every hop, and with two trees that wait, not the links, sets the pace; 64 KiB for
 * allreduce, whose one tree carries both streams and whose smaller segments slowed
 * communicators running side by side (256 KiB filled an 8-node chain too slowly:
 * docs/user/performance.md "Torus").  At least 8 per rank of the chain, so that filling
 * it costs at most 1/8 of the stream; none below 4 KiB, at most 4096.  A knob: segments
 * of that many bytes. */
static int torus_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob,
                      const mca_coll_loom_segs_model_t *model)
{
    const size_t seg = knob > 0 ? (size_t) knob : MCA_COLL_LOOM_COLL_ALLREDUCE == coll ? 65536 : 32768;
    size_t segs = (bytes + seg - 1) / seg, fill = 8 * (size_t) (P > 1 ? P - 1 : 1), most = bytes / 4096;

    (void) alg;
    (void) model;
    if (knob <= 0) {
        segs = segs > fill ? segs : fill;
        segs = segs < most ? segs : most;
    }
    return segs < 1 ? 1 : segs > 4096 ? 4096 : (int) segs;
}

/* The node chain for direction dir from node `first`; for both directions (0), where
 * there is none, the reduce's: the bcast then shares its links. */
static int find_chain(const mca_coll_loom_torus_t *t, int nn, const int *c, int first, int dir, int *order)
{
    int found = mca_coll_loom_torus_chain(t, nn, c, first, dir, order);
    if (0 == dir && 0 != found) {
        found = mca_coll_loom_torus_chain(t, nn, c, first, -1, order);
    }
    return found;
}

/* The last chain found over CACHE_MIN nodes or more, and the last second chain: every
 * rank of a communicator (and the model, which builds all ranks' schedules) asks for the
 * same chains, and the search grows with the square of the nodes.  Held until replaced. */
#define CACHE_MIN 32
typedef struct {
    mca_coll_loom_torus_t t;
    int nn, first, dir, found, navoid;
    int *coords, *order;
    long *avoid;
} chain_entry_t;

static struct {
    atomic_flag lock;
    chain_entry_t e[2]; /* [0] first chains, [1] second chains (links to avoid) */
} chain_cache = {.lock = ATOMIC_FLAG_INIT};

static void cache_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&chain_cache.lock, memory_order_acquire)) {
    }
}

static void cache_unlock(void)
{
    atomic_flag_clear_explicit(&chain_cache.lock, memory_order_release);
}

/* The chain from node `first` in direction dir into order[]: a first one (navoid 0), or
 * a second one beside the links avoid[]; through the cache. */
static int search_chain(const mca_coll_loom_torus_t *t, int nn, const int *c, int first, int dir, const long *avoid,
                        int navoid, int *order)
{
    const size_t cb = sizeof(int) * (size_t) nn * (size_t) t->ndims, ob = sizeof(int) * (size_t) nn;
    const size_t ab = sizeof(long) * (size_t) navoid;
    chain_entry_t *e = &chain_cache.e[navoid > 0], fresh;
    int found = -2;

    if (nn < CACHE_MIN) {
        return navoid > 0 ? mca_coll_loom_torus_chain_avoiding(t, nn, c, first, dir, avoid, navoid, order)
                          : find_chain(t, nn, c, first, dir, order);
    }
    cache_lock();
    if (e->nn == nn && e->first == first && e->dir == dir && e->navoid == navoid &&
        0 == memcmp(&e->t, t, sizeof(*t)) && 0 == memcmp(e->coords, c, cb) &&
        (0 == navoid || 0 == memcmp(e->avoid, avoid, ab))) {
        memcpy(order, e->order, ob);
        found = e->found;
    }
    cache_unlock();
    if (found > -2) {
        return found;
    }
    found = navoid > 0 ? mca_coll_loom_torus_chain_avoiding(t, nn, c, first, dir, avoid, navoid, order)
                       : find_chain(t, nn, c, first, dir, order);
    fresh = (chain_entry_t) {.t = *t, .nn = nn, .first = first, .dir = dir, .found = found, .navoid = navoid,
                             .coords = malloc(cb), .order = malloc(ob), .avoid = malloc(ab + 1)};
    if (found < 0 || NULL == fresh.coords || NULL == fresh.order || NULL == fresh.avoid) {
        free(fresh.coords);
        free(fresh.order);
        free(fresh.avoid);
        return found;
    }
    memcpy(fresh.coords, c, cb);
    memcpy(fresh.order, order, ob);
    if (navoid > 0) {
        memcpy(fresh.avoid, avoid, ab);
    }
    cache_lock();
    free(e->coords);
    free(e->order);
    free(e->avoid);
    *e = fresh;
    cache_unlock();
    return found;
}

/* The links the edges of up[] cross (up[v] -> v for dir >= 0, v -> up[v] for dir <= 0);
 * their number.  links[] holds 2 nn max_hops. */
static int edge_links(const mca_coll_loom_torus_t *t, int nn, const int *c, const int *up, int dir, long *links)
{
    const int nd = t->ndims;
    int m = 0;

    for (int v = 0; v < nn; ++v) {
        if (up[v] < 0) {
            continue;
        }
        if (dir >= 0) {
            m += mca_coll_loom_torus_route(t, c + up[v] * nd, c + v * nd, links + m);
        }
        if (dir <= 0) {
            m += mca_coll_loom_torus_route(t, c + v * nd, c + up[v] * nd, links + m);
        }
    }
    return m;
}

/* Room for the links of one tree's edges (edge_links), or NULL. */
static long *links_buffer(const mca_coll_loom_torus_t *t, int nn)
{
    return malloc(sizeof(long) * (size_t) (2 * nn * mca_coll_loom_torus_max_hops(t) + 1));
}

/* Whether the edges of up[] in direction dir use every directed link at most once; the
 * links they cross are left in l[] (links_buffer), *m of them. */
static bool tree_disjoint(const mca_coll_loom_torus_t *t, int nn, const int *c, const int *up, int dir, long *l,
                          int *m)
{
    const long nlinks = mca_coll_loom_torus_nodes(t) * 2 * t->ndims;
    unsigned char *seen;
    bool ok = true;

    *m = edge_links(t, nn, c, up, dir, l);
    if (*m <= 64) { /* a small tree: pairwise, without a map of the torus's links */
        for (int i = 0; i < *m && ok; ++i) {
            for (int k = i + 1; k < *m && ok; ++k) {
                ok = l[i] != l[k];
            }
        }
        return ok;
    }
    if (nlinks <= 0 || NULL == (seen = calloc((size_t) nlinks, 1))) {
        return false; /* no memory: not known to be disjoint */
    }
    for (int i = 0; i < *m && ok; ++i) {
        ok = !seen[l[i]];
        seen[l[i]] = 1;
    }
    free(seen);
    return ok;
}

/* The parents up[] of the chain order[0..nn-1]. */
static void chain_parents(int nn, const int *order, int *up)
{
    up[order[0]] = -1;
    for (int i = 1; i < nn; ++i) {
        up[order[i]] = order[i - 1];
    }
}

/* The node tree from the root's node: on up to MCA_COLL_LOOM_TORUS_TREE_MAX nodes the
 * contention-free tree crossing the fewest links (loom_torus.h), unless the chain is
 * contention-free in more directions or crosses no more links; the chain otherwise.
 * up[v]: node v's parent, -1 at the root's. */
static int node_tree(const mca_coll_loom_params_t *p, int nn, int rootnode, int dir, int *up)
{
    const mca_coll_loom_torus_t *t = p->torus;
    int *order = malloc(sizeof(int) * (size_t) nn), found;

    if (NULL == order) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    found = search_chain(t, nn, p->torus_coords, rootnode, dir, NULL, 0, order);
    if (found >= 0) {
        chain_parents(nn, order, up);
    }
    free(order);
    if (found < 0) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (nn < 3 || nn > MCA_COLL_LOOM_TORUS_TREE_MAX) {
        return MCA_COLL_LOOM_OK;
    }
    int *tree = malloc(sizeof(int) * (size_t) nn);
    if (NULL == tree) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    /* a direction without a tree (dir 0 on some sets) falls back like the chain */
    int rc = mca_coll_loom_torus_tree(t, nn, p->torus_coords, rootnode, dir, tree);
    if (1 == rc && 0 == dir) {
        rc = mca_coll_loom_torus_tree(t, nn, p->torus_coords, rootnode, -1, tree);
    }
    long *l = 0 == rc ? links_buffer(t, nn) : NULL;
    if (NULL != l) {
        /* each is judged in the direction asked for: contention-free first, then the
         * fewer links; a tie keeps the chain (one child per node) */
        int chain_links, tree_links;
        const bool chain_ok = tree_disjoint(t, nn, p->torus_coords, up, dir, l, &chain_links);
        const bool tree_ok = tree_disjoint(t, nn, p->torus_coords, tree, dir, l, &tree_links);
        if ((tree_ok && !chain_ok) || (tree_ok == chain_ok && tree_links < chain_links)) {
            memcpy(up, tree, sizeof(int) * (size_t) nn);
        }
    }
    free(l);
    free(tree);
    return MCA_COLL_LOOM_OK;
}

/* The tree of ranks: each node's ranks one after the other (the root first on its
 * node, the others in rank order: a hop inside a node crosses no link), the first
 * rank of a node below the last rank of its parent node.  This rank's parent, its
 * children (kids[0..nkids-1], by increasing height; their heights follow them in
 * kids[nkids..]), its depth and its height (the longest way down to a leaf). */
typedef struct {
    int parent, nkids, depth, height, maxdepth;
    int *kids;
} rank_tree_t;

static int rank_tree(const mca_coll_loom_params_t *p, int root, int nn, const int *up, rank_tree_t *rt)
{
    const int P = p->P;
    int *mem, *first, *last, *par, *depth, *height, *order, *count, *kids;

    mem = malloc(sizeof(int) * (size_t) (2 * nn + 7 * P + 2));
    if (NULL == mem) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    first = mem;
    last = first + nn;
    par = last + nn;
    depth = par + P;
    height = depth + P;
    order = height + P;
    count = order + P;
    kids = count + P + 2;
    /* each node's ranks chained: the root first on its node */
    for (int v = 0; v < nn; ++v) {
        first[v] = last[v] = -1;
    }
    first[mca_coll_loom_node_of(p, root)] = last[mca_coll_loom_node_of(p, root)] = root;
    par[root] = -1;
    for (int r = 0; r < P; ++r) {
        const int v = mca_coll_loom_node_of(p, r);
        if (r == root) {
            continue;
        }
        if (first[v] < 0) {
            first[v] = r;
        } else {
            par[r] = last[v];
        }
        last[v] = r;
    }
    for (int v = 0; v < nn; ++v) {
        if (first[v] >= 0 && up[v] >= 0) {
            par[first[v]] = last[up[v]];
        }
    }
    /* depths (each walk stops at a rank already known), then heights from the deepest
     * ranks up: O(P) */
    for (int r = 0; r < P; ++r) {
        depth[r] = -1;
        height[r] = 0;
    }
    depth[root] = 0;
    for (int r = 0; r < P; ++r) {
        int q = r, n = 0;
        while (depth[q] < 0) { /* the path up, kept in order[] */
            order[n++] = q;
            q = par[q];
        }
        for (int d = depth[q]; n > 0;) {
            depth[order[--n]] = ++d;
        }
    }
    rt->maxdepth = 0;
    for (int r = 0; r < P; ++r) {
        rt->maxdepth = depth[r] > rt->maxdepth ? depth[r] : rt->maxdepth;
    }
    /* ranks by decreasing depth (a counting sort into order[]) */
    for (int d = 0; d <= rt->maxdepth + 1; ++d) {
        count[d] = 0;
    }
    for (int r = 0; r < P; ++r) {
        ++count[rt->maxdepth - depth[r] + 1];
    }
    for (int d = 1; d <= rt->maxdepth + 1; ++d) {
        count[d] += count[d - 1];
    }
    for (int r = 0; r < P; ++r) {
        order[count[rt->maxdepth - depth[r]]++] = r;
    }
    for (int i = 0; i < P; ++i) {
        const int r = order[i];
        if (par[r] >= 0 && height[r] + 1 > height[par[r]]) {
            height[par[r]] = height[r] + 1;
        }
    }
    rt->parent = par[p->rank];
    rt->depth = depth[p->rank];
    rt->height = height[p->rank];
    rt->nkids = 0;
    /* the children by increasing height (then rank): the lowest one's segment is in
     * first, so the reduce can combine into its slot */
    for (int r = 0; r < P; ++r) {
        if (par[r] == p->rank) {
            int k = rt->nkids++;
            for (; k > 0 && height[kids[k - 1]] > height[r]; --k) {
                kids[k] = kids[k - 1];
            }
            kids[k] = r;
        }
    }
    for (int k = 0; k < rt->nkids; ++k) {
        kids[rt->nkids + k] = height[kids[k]];
    }
    memmove(mem, kids, sizeof(int) * (size_t) (2 * rt->nkids));
    rt->kids = mem;
    return MCA_COLL_LOOM_OK;
}

/* Segment k (block b0 + k of S) moves from depth d - 1 to d in round k + d - 1;
 * whether this rank posts anything in round t. */
static bool bcast_round(mca_coll_loom_sched_t *s, int t, int b0, int S, const rank_tree_t *rt)
{
    const int kr = t - rt->depth + 1, ks = t - rt->depth;
    bool any = false;

    if (rt->parent >= 0 && kr >= 0 && kr < S) {
        mca_coll_loom_sched_recv_blk(s, rt->parent, RES, b0 + kr, 1);
        any = true;
    }
    for (int k = 0; k < rt->nkids && ks >= 0 && ks < S; ++k) {
        mca_coll_loom_sched_send_blk(s, rt->kids[k], RES, b0 + ks, 1);
        any = true;
    }
    return any;
}

/* The mirror: a rank of height h sends its partial of segment k up in round k + h; it
 * receives a child's (height h_c < h) in round k + h_c, into that child's slot. */
static bool reduce_post(mca_coll_loom_sched_t *s, int t, int b0, int S, const rank_tree_t *rt)
{
    const int *kh = rt->kids + rt->nkids, ks = t - rt->height;
    bool any = false;

    for (int k = 0; k < rt->nkids; ++k) {
        const int kr = t - kh[k];
        if (kr >= 0 && kr < S) {
            mca_coll_loom_sched_recv_blk(s, rt->kids[k], ACC + k, b0 + kr, 1);
            any = true;
        }
    }
    if (rt->parent >= 0 && ks >= 0 && ks < S) {
        mca_coll_loom_sched_send_blk(s, rt->parent, rt->nkids > 0 ? ACC : IN, b0 + ks, 1);
        any = true;
    }
    return any;
}

/* After round t's wait: what came in, combined in child order into the first child's
 * slot (the root: into RES), so segment kr of child k is in before any later child's
 * of the same segment is added. */
static void reduce_combine(mca_coll_loom_sched_t *s, int t, int b0, int S, const rank_tree_t *rt)
{
    const int *kh = rt->kids + rt->nkids;

    for (int k = 0; k < rt->nkids; ++k) {
        const int kr = t - kh[k];
        if (kr < 0 || kr >= S) {
            continue;
        }
        if (rt->parent < 0) {
            mca_coll_loom_sched_reduce_blk(s, ACC + k, RES, b0 + kr, 1);
        } else if (0 == k) {
            mca_coll_loom_sched_reduce_blk(s, IN, ACC, b0 + kr, 1);
        } else {
            mca_coll_loom_sched_reduce_blk(s, ACC + k, ACC, b0 + kr, 1);
        }
    }
}

/* The trees' pipelines side by side, round by round: tree j streams blocks b0[j] ..
 * b0[j] + S[j] - 1. */
static void bcast(mca_coll_loom_sched_t *s, int ntrees, const int *b0, const int *S, const rank_tree_t *rt)
{
    int rounds = 0;

    for (int j = 0; j < ntrees; ++j) {
        rounds = S[j] + rt[j].maxdepth - 1 > rounds ? S[j] + rt[j].maxdepth - 1 : rounds;
    }
    for (int t = 0; t < rounds; ++t) {
        bool any = false;
        for (int j = 0; j < ntrees; ++j) {
            any |= bcast_round(s, t, b0[j], S[j], rt + j);
        }
        if (any) {
            mca_coll_loom_sched_wait(s);
        }
    }
}

static void reduce(mca_coll_loom_sched_t *s, int ntrees, const int *b0, const int *S, const rank_tree_t *rt)
{
    int rounds = 0;

    if (rt[0].parent < 0) {
        mca_coll_loom_sched_copy(s, IN, RES);
    }
    for (int j = 0; j < ntrees; ++j) {
        rounds = S[j] + rt[j].height > rounds ? S[j] + rt[j].height : rounds;
    }
    for (int t = 0; t < rounds; ++t) {
        bool any = false;
        for (int j = 0; j < ntrees; ++j) {
            any |= reduce_post(s, t, b0[j], S[j], rt + j);
        }
        if (!any) {
            continue;
        }
        mca_coll_loom_sched_wait(s);
        for (int j = 0; j < ntrees; ++j) {
            reduce_combine(s, t, b0[j], S[j], rt + j);
        }
    }
}

/* A second node tree from the same node whose routes cross none of the first's links
 * (both contention-free in direction dir): each tree then carries half the segments
 * and no link carries both halves, so a node takes its data in over two links (the
 * TwoTreeC paper's two trees, on the torus's links).  0 when found; 1 when there is none (then
 * one tree); an error code. */
static int second_tree(const mca_coll_loom_params_t *p, int nn, int rootnode, int dir, const int *up, int *up2)
{
    const mca_coll_loom_torus_t *t = p->torus;
    long *links;
    int m, rc = 1, *order = NULL;

    if (nn < 3) {
        return 1;
    }
    if (NULL == (links = links_buffer(t, nn))) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    if (tree_disjoint(t, nn, p->torus_coords, up, dir, links, &m)) {
        if (nn <= MCA_COLL_LOOM_TORUS_TREE_MAX) {
            rc = mca_coll_loom_torus_tree_avoiding(t, nn, p->torus_coords, rootnode, dir, links, m, up2);
        } else if (NULL == (order = malloc(sizeof(int) * (size_t) nn))) {
            free(links);
            return MCA_COLL_LOOM_ERR_NOMEM;
        } else if (0 == (rc = search_chain(t, nn, p->torus_coords, rootnode, dir, links, m, order))) {
            chain_parents(nn, order, up2);
        }
    }
    free(order);
    free(links);
    return rc < 0 ? MCA_COLL_LOOM_ERR_BADPARAM : rc;
}

int mca_coll_loom_build_torus(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, S = p->segs > 1 ? p->segs : 1;
    const bool all = MCA_COLL_LOOM_COLL_ALLREDUCE == p->coll;
    const int root = all ? 0 : p->root, dir = all ? 0 : MCA_COLL_LOOM_COLL_BCAST == p->coll ? 1 : -1;
    rank_tree_t rt[2] = {{0}};
    int nn = 0, ntrees = 1, b0[2] = {0, 0}, nseg[2] = {S, 0}, rc, *up;

    if (!mca_coll_loom_torus_can_serve(p) || root < 0 || root >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    for (int r = 0; r < P; ++r) {
        nn = mca_coll_loom_node_of(p, r) + 1 > nn ? mca_coll_loom_node_of(p, r) + 1 : nn;
    }
    up = malloc(sizeof(int) * (size_t) (2 * nn));
    if (NULL == up) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    rc = node_tree(p, nn, mca_coll_loom_node_of(p, root), dir, up);
    if (MCA_COLL_LOOM_OK == rc && S >= 2 && 1 != p->torus->max_trees) {
        rc = second_tree(p, nn, mca_coll_loom_node_of(p, root), dir, up, up + nn);
        if (0 == rc) {
            ntrees = 2;
            nseg[0] = (S + 1) / 2;
            nseg[1] = S - nseg[0];
            b0[1] = nseg[0];
        }
        rc = rc > 0 ? MCA_COLL_LOOM_OK : rc;
    }
    for (int j = 0; j < ntrees && MCA_COLL_LOOM_OK == rc; ++j) {
        rc = rank_tree(p, root, nn, up + j * nn, rt + j);
    }
    free(up);
    if (MCA_COLL_LOOM_OK == rc) {
        mca_coll_loom_sched_set_blocks(s, S);
        if (MCA_COLL_LOOM_COLL_BCAST == p->coll) {
            bcast(s, ntrees, b0, nseg, rt);
        } else {
            reduce(s, ntrees, b0, nseg, rt);
            if (all) {
                bcast(s, ntrees, b0, nseg, rt);
            }
        }
    }
    free(rt[0].kids);
    free(rt[1].kids);
    return MCA_COLL_LOOM_OK == rc ? s->error : rc;
}

MCA_COLL_LOOM_ALGORITHM(torus) = {
    .name = "torus",
    .colls = MCA_COLL_LOOM_SERVES(BCAST) | MCA_COLL_LOOM_SERVES(REDUCE) |
             MCA_COLL_LOOM_SERVES(ALLREDUCE),
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
    .segs = torus_segs,
    .can_serve = mca_coll_loom_torus_can_serve,
    .refusal_of = mca_coll_loom_torus_refusal,
};
