/*
 * loom algorithm `torus`: bcast, reduce and allreduce on a communicator whose nodes have
 * torus coordinates (seed 004: collectives over any subset of torus nodes without two
 * messages on one link), pipelined in p->segs segments so that a large message streams
 * at one link's bandwidth.
 *
 * The chain of ranks: the communicator's nodes in the order of a contention-free chain
 * (mca_coll_loom_torus_chain, loom_torus.h: under the routing model no directed link
 * carries two of its edges), starting at the root's node; inside a node its ranks one
 * after the other, the root first, so a hop inside a node crosses no link.
 *
 *   bcast      segment k leaves the root in round k and moves one rank down the chain
 *              per round (the chain's routes from each node to the next are disjoint);
 *   reduce     the mirror: segment k's partial moves up, combined at every rank (the
 *              routes from each node to the one before are disjoint);
 *   allreduce  reduce to rank 0, then bcast from it, on one chain whose routes are
 *              disjoint in both directions when there is one: the engine runs the
 *              schedule by its dependencies, so the bcast of a segment starts as soon as
 *              its reduce is done and the two streams overlap without sharing a link.
 *
 * Where no contention-free chain was found (loom_torus.h: a search with a budget) the
 * nearest-neighbour chain is used: still exact, only slower.  The chain order is not
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

/* Segments of at most 64 KiB (256 KiB filled an 8-node chain too slowly: 1.36x the
 * link bound at 4 MiB, 64 KiB 1.03x, docs/user/performance.md "Torus"), and at least
 * 8 per rank of the chain, so that filling it costs at most 1/8 of the stream; none
 * below 4 KiB, at most 4096. */
int mca_coll_loom_torus_auto_segs(int P, size_t bytes)
{
    size_t segs = (bytes + 65535) / 65536, fill = 8 * (size_t) (P > 1 ? P - 1 : 1), most = bytes / 4096;

    segs = segs > fill ? segs : fill;
    segs = segs < most ? segs : most;
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

/* The last chain found over CACHE_MIN nodes or more: every rank of a communicator (and
 * the model, which builds all ranks' schedules) asks for the same chain, and the
 * search grows with the square of the nodes.  One entry, held until replaced. */
#define CACHE_MIN 32
static struct {
    atomic_flag lock;
    mca_coll_loom_torus_t t;
    int nn, first, dir, found;
    int *coords, *order;
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

static int search_chain(const mca_coll_loom_torus_t *t, int nn, const int *c, int first, int dir, int *order)
{
    const size_t cb = sizeof(int) * (size_t) nn * (size_t) t->ndims, ob = sizeof(int) * (size_t) nn;
    int found = -2, *cc, *co;

    if (nn < CACHE_MIN) {
        return find_chain(t, nn, c, first, dir, order);
    }
    cache_lock();
    if (chain_cache.nn == nn && chain_cache.first == first && chain_cache.dir == dir &&
        0 == memcmp(&chain_cache.t, t, sizeof(*t)) && 0 == memcmp(chain_cache.coords, c, cb)) {
        memcpy(order, chain_cache.order, ob);
        found = chain_cache.found;
    }
    cache_unlock();
    if (found > -2) {
        return found;
    }
    found = find_chain(t, nn, c, first, dir, order);
    cc = malloc(cb);
    co = malloc(ob);
    if (found < 0 || NULL == cc || NULL == co) {
        free(cc);
        free(co);
        return found;
    }
    memcpy(cc, c, cb);
    memcpy(co, order, ob);
    cache_lock();
    free(chain_cache.coords);
    free(chain_cache.order);
    chain_cache.t = *t;
    chain_cache.nn = nn;
    chain_cache.first = first;
    chain_cache.dir = dir;
    chain_cache.found = found;
    chain_cache.coords = cc;
    chain_cache.order = co;
    cache_unlock();
    return found;
}

/* The chain of ranks from `root` (chain[0]): nodes by the torus chain (routes
 * disjoint in direction dir), ranks of a node consecutive. */
static int rank_chain(const mca_coll_loom_params_t *p, int root, int dir, int *chain)
{
    int nn = 0, rc = MCA_COLL_LOOM_OK;
    int *order;

    for (int r = 0; r < p->P; ++r) {
        nn = mca_coll_loom_node_of(p, r) + 1 > nn ? mca_coll_loom_node_of(p, r) + 1 : nn;
    }
    order = malloc(sizeof(int) * (size_t) nn);
    if (NULL == order) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    const int rootnode = mca_coll_loom_node_of(p, root);
    const int found = search_chain(p->torus, nn, p->torus_coords, rootnode, dir, order);
    if (found < 0) {
        rc = MCA_COLL_LOOM_ERR_BADPARAM;
    } else {
        int k = 0;
        chain[k++] = root;
        for (int i = 0; i < nn; ++i) {
            for (int r = 0; r < p->P; ++r) {
                if (r != root && mca_coll_loom_node_of(p, r) == order[i]) {
                    chain[k++] = r;
                }
            }
        }
    }
    free(order);
    return rc;
}

/* Segment k moves from chain position d - 1 to d in round k + d - 1. */
static void bcast(mca_coll_loom_sched_t *s, int P, int S, int pos, int parent, int child)
{
    for (int t = 0; t < S + P - 2; ++t) {
        const int kr = t - pos + 1, ks = t - pos;
        bool any = false;
        if (parent >= 0 && kr >= 0 && kr < S) {
            mca_coll_loom_sched_recv_blk(s, parent, RES, kr, 1);
            any = true;
        }
        if (child >= 0 && ks >= 0 && ks < S) {
            mca_coll_loom_sched_send_blk(s, child, RES, ks, 1);
            any = true;
        }
        if (any) {
            mca_coll_loom_sched_wait(s);
        }
    }
}

/* The mirror: with h = P - 1 - pos the rank's height, it receives segment t - h + 1
 * from its child and sends its partial of segment t - h up in round t. */
static void reduce(mca_coll_loom_sched_t *s, int P, int S, int pos, int parent, int child)
{
    const int h = P - 1 - pos;

    if (parent < 0) {
        mca_coll_loom_sched_copy(s, IN, RES);
    }
    for (int t = 0; t < S + P - 2; ++t) {
        const int kr = t - h + 1, ks = t - h;
        const bool got = child >= 0 && kr >= 0 && kr < S;
        bool any = got;
        if (got) {
            mca_coll_loom_sched_recv_blk(s, child, ACC, kr, 1);
        }
        if (parent >= 0 && ks >= 0 && ks < S) {
            mca_coll_loom_sched_send_blk(s, parent, child >= 0 ? ACC : IN, ks, 1);
            any = true;
        }
        if (!any) {
            continue;
        }
        mca_coll_loom_sched_wait(s);
        if (got && parent < 0) {
            mca_coll_loom_sched_reduce_blk(s, ACC, RES, kr, 1);
        } else if (got) {
            mca_coll_loom_sched_reduce_blk(s, IN, ACC, kr, 1);
        }
    }
}

int mca_coll_loom_build_torus(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, S = p->segs > 1 ? p->segs : 1;
    const bool all = MCA_COLL_LOOM_COLL_ALLREDUCE == p->coll;
    const int root = all ? 0 : p->root;
    int *chain, rc, pos = 0;

    if (!mca_coll_loom_torus_can_serve(p) || root < 0 || root >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    chain = malloc(sizeof(int) * (size_t) P);
    if (NULL == chain) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    rc = rank_chain(p, root, all ? 0 : MCA_COLL_LOOM_COLL_BCAST == p->coll ? 1 : -1, chain);
    if (MCA_COLL_LOOM_OK != rc) {
        free(chain);
        return rc;
    }
    while (chain[pos] != p->rank) {
        ++pos;
    }
    const int parent = pos > 0 ? chain[pos - 1] : -1, child = pos + 1 < P ? chain[pos + 1] : -1;
    free(chain);

    mca_coll_loom_sched_set_blocks(s, S);
    if (MCA_COLL_LOOM_COLL_BCAST == p->coll) {
        bcast(s, P, S, pos, parent, child);
    } else {
        reduce(s, P, S, pos, parent, child);
        if (all) {
            bcast(s, P, S, pos, parent, child);
        }
    }
    return s->error;
}
