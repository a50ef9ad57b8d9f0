/*
 * loom algorithm `hierarchical`, large commutative allreduce on nodes of equal size:
 * one ring per local index (Zhu et al.'s two levels, each level the segmented ring of
 * Iakymchuk et al., section IV.A).
 *
 * With K ranks on each of N nodes, the vector is cut into K node parts, node part b
 * into N parts (one per node) and every part into segs segments.
 *   1. inside each node a ring reduce-scatter: the rank of local index b ends with
 *      node part b combined over its node;
 *   2. the ranks of local index b on the N nodes run the ring (reduce-scatter then
 *      allgather) on node part b: afterwards each holds node part b complete;
 *   3. inside each node a ring allgather of the node parts.
 * Every link between nodes then carries 2 (N - 1) / N of the vector in each direction,
 * as with the leaders' ring alone, but spread over K rings: every rank of a node works,
 * none waits for a whole-vector reduce to its leader and bcast from it, and a flat
 * ring's 2 (P - 1) / P is avoided.  The node phases move whole parts, in the order the
 * network phase uses (phase 1) or completes (phase 3) them, so the dependency graph
 * lets the three phases overlap.
 *
 * Each part is combined once, at one rank, and copied everywhere else: bit-identical
 * on every rank.  The order of combination is not rank order: commutative ops only.
 */
#include <stdlib.h>

#include "opal/loom/loom_registry.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT
#define ARR MCA_COLL_LOOM_SLOT_SCRATCH0 /* phase 2's arrivals */

/* Nodes (numbered by their lowest rank) and the ranks of each; k: the ranks of every
 * node, 0 when they differ. */
static int node_shape(const mca_coll_loom_params_t *p, int *nodes)
{
    int *size = calloc((size_t) p->P, sizeof(int));
    int nn = 0, k;

    if (NULL == size) {
        *nodes = 0;
        return 0;
    }
    for (int r = 0; r < p->P; ++r) {
        const int a = mca_coll_loom_node_of(p, r);
        if (a < 0 || a >= p->P) {
            free(size);
            *nodes = 0;
            return 0;
        }
        size[a]++;
        nn = a + 1 > nn ? a + 1 : nn;
    }
    k = size[0];
    for (int a = 1; a < nn; ++a) {
        k = size[a] == k ? k : 0;
    }
    free(size);
    *nodes = nn;
    return k;
}

bool mca_coll_loom_hierarchical_rings_fit(const mca_coll_loom_params_t *p)
{
    int nn;

    /* one node keeps its binomial reduce and bcast: the rules chose hierarchical there
     * for them (loom_decide.c) */
    return MCA_COLL_LOOM_COLL_ALLREDUCE == p->coll && p->segs > 1 && !p->leaders_only &&
           (p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE) && node_shape(p, &nn) > 0 && nn > 1;
}

int mca_coll_loom_hierarchical_rings(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank, S = p->segs;
    int N, K, node, j = -1, lr = -1, ll = -1, nr = -1, nl = -1;
    int *seen;

    K = node_shape(p, &N);
    if (K < 1 || N < 2 || r < 0 || r >= P || S < 2) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    /* my local index j, my node's neighbours of local index j +- 1 (lr, ll) and the
     * neighbouring nodes' ranks of local index j (nr, nl) */
    seen = calloc((size_t) N, sizeof(int));
    if (NULL == seen) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    node = mca_coll_loom_node_of(p, r);
    for (int q = 0; q <= r; ++q) {
        j = mca_coll_loom_node_of(p, q) == node ? seen[node]++ : j;
    }
    for (int a = 0; a < N; ++a) {
        seen[a] = 0;
    }
    for (int q = 0; q < P; ++q) {
        const int a = mca_coll_loom_node_of(p, q), i = seen[a]++;
        if (a == node && i == mca_coll_loom_rank_mod(j + 1, K)) {
            lr = q;
        }
        if (a == node && i == mca_coll_loom_rank_mod(j - 1, K)) {
            ll = q;
        }
        if (i == j && a == mca_coll_loom_rank_mod(node + 1, N)) {
            nr = q;
        }
        if (i == j && a == mca_coll_loom_rank_mod(node - 1, N)) {
            nl = q;
        }
    }
    free(seen);

    /* part i of node part b is part b * N + i: its blocks are PART(b, i) .. + S - 1 */
#define PART(b, i) ((mca_coll_loom_rank_mod((b), K) * N + mca_coll_loom_rank_mod((i), N)) * S)
    mca_coll_loom_sched_set_segmented_blocks(s, K * N, S);

    /* 1. the node's reduce-scatter: in step t node part j-1-t goes right and node part
     * j-2-t arrives, part by part in the order phase 2 sends them (its step m sends
     * part node-1-m); my contribution is added to each arrival */
    for (int t = 0; t < K - 1; ++t) {
        for (int m = 1; m <= N; ++m) {
            mca_coll_loom_sched_send_blk(s, lr, 0 == t ? IN : RES, PART(j - 1 - t, node - m), S);
            mca_coll_loom_sched_recv_blk(s, ll, RES, PART(j - 2 - t, node - m), S);
            mca_coll_loom_sched_wait(s);
            mca_coll_loom_sched_reduce_blk(s, IN, RES, PART(j - 2 - t, node - m), S);
        }
    }

    /* 2. the ring among local index j on node part j, segment by segment (ring.c).
     * With one rank per node RESULT receives and my input is added, as in the ring;
     * otherwise RESULT holds the node's partial, and arrivals land in ARR */
    for (int t = 0; t < N - 1; ++t) {
        for (int k = 0; k < S; ++k) {
            const int out = PART(j, node - 1 - t) + k, in = PART(j, node - 2 - t) + k;
            mca_coll_loom_sched_send_blk(s, nr, 1 == K && 0 == t ? IN : RES, out, 1);
            mca_coll_loom_sched_recv_blk(s, nl, 1 == K ? RES : ARR, in, 1);
            mca_coll_loom_sched_wait(s);
            mca_coll_loom_sched_reduce_blk(s, 1 == K ? IN : ARR, RES, in, 1);
        }
    }
    for (int t = 0; t < N - 1; ++t) {
        for (int k = 0; k < S; ++k) {
            mca_coll_loom_sched_send_blk(s, nr, RES, PART(j, node - t) + k, 1);
            mca_coll_loom_sched_recv_blk(s, nl, RES, PART(j, node - 1 - t) + k, 1);
            mca_coll_loom_sched_wait(s);
        }
    }

    /* 3. the node's allgather: in step t node part j-t goes right and node part j-1-t
     * arrives, part by part in the order phase 2 completes them (node, node-1, ...) */
    for (int t = 0; t < K - 1; ++t) {
        for (int m = 0; m < N; ++m) {
            mca_coll_loom_sched_send_blk(s, lr, RES, PART(j - t, node - m), S);
            mca_coll_loom_sched_recv_blk(s, ll, RES, PART(j - 1 - t, node - m), S);
            mca_coll_loom_sched_wait(s);
        }
    }
#undef PART
    return s->error;
}
