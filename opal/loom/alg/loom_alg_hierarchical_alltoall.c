/*
 * loom algorithm `hierarchical`, alltoall: node-aware, for small parts on several ranks
 * per node (the two-level scheme of Zhu et al. applied to alltoall; Iakymchuk et al. IV.B counts
 * what it saves: messages, not bytes).
 *
 * Each node's leader (its lowest rank) gathers the whole send buffers of its node, one
 * message per member.  Then, node pair by node pair (in step i the leader sends to the
 * node i after its own and receives from the node i before it), it packs every part its
 * members send to the other node's members into one message (several when they are
 * more than P parts: a slot holds P), and unpacks what arrives into its members'
 * results; parts between members of its own node are copied directly.  Last, every
 * member gets its whole result in one message.  Between two nodes of n and m ranks one
 * message replaces n m, at the price of two more hops inside the nodes: a win where
 * the network's per-message cost dominates.
 *
 * With p->segs > 1 a message between leaders carries at most ceil(P / segs) parts (a
 * slot holds P): the component cuts them below what the network sends eagerly, as one
 * message above that waits for a rendezvous (btl/tcp: 64 KiB), and the pieces all go
 * at once.
 *
 * Slots, at the leader: G_k (k = 1..n-1) the send buffer of member k (its own is
 * INPUT), O_k the result of member k (its own is RESULT), then the pack and unpack
 * slots of one node pair, reused pair after pair (the dependency graph orders a reuse
 * after the message that used the slot before).
 */
#include <stdlib.h>

#include "opal/loom/loom_registry.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT

/* The ranks of node k in increasing order into out; returns how many. */
static int members(const mca_coll_loom_params_t *p, int k, int *out)
{
    int n = 0;
    for (int r = 0; r < p->P; ++r) {
        if (mca_coll_loom_node_of(p, r) == k) {
            out[n++] = r;
        }
    }
    return n;
}

/* Slots the leader of a node of n ranks needs when the other nodes have at most nmax
 * ranks (0: no other node). */
static int slots_needed(int P, int n, int nmax)
{
    const int per_pair = (n * nmax + P - 1) / P;
    return MCA_COLL_LOOM_SLOT_SCRATCH0 + 2 * (n - 1) + 2 * per_pair;
}

/* The largest node other than node k (0: none), from the per-node counts. */
static int largest_other(const int *count, int nn, int k)
{
    int m = 0;
    for (int j = 0; j < nn; ++j) {
        m = j != k && count[j] > m ? count[j] : m;
    }
    return m;
}

bool mca_coll_loom_hierarchical_alltoall_fits(const mca_coll_loom_params_t *p)
{
    int *count = calloc((size_t) p->P, sizeof(int)), nn = 0;
    bool fits = true;

    if (NULL == count) {
        return false;
    }
    for (int r = 0; r < p->P; ++r) {
        const int k = mca_coll_loom_node_of(p, r);
        if (k < 0 || k >= p->P) {
            free(count);
            return false;
        }
        count[k]++;
        nn = k + 1 > nn ? k + 1 : nn;
    }
    for (int k = 0; k < nn; ++k) {
        fits = fits && slots_needed(p->P, count[k], largest_other(count, nn, k)) <= MCA_COLL_LOOM_MAX_SLOTS;
    }
    free(count);
    return fits;
}

/* Packs, or unpacks, the parts that ranks src[0..ns-1] send to ranks dst[0..nd-1]: the
 * part from source k to destination j sits at position k * nd + j of the packed slots
 * base, base + 1, ... (P positions each).  Packing reads it from the send buffer of
 * source k, a member of this node (INPUT for k = 0, else slot member_slot + k - 1), at
 * block dst[j]; unpacking writes it to the result of destination j, a member of this
 * node (RESULT for j = 0, else slot member_slot + j - 1), at block src[k]. */
static void pack_pair(mca_coll_loom_sched_t *s, int P, const int *src, int ns, const int *dst, int nd, int base,
                      int member_slot, bool pack)
{
    for (int k = 0; k < ns; ++k) {
        for (int j = 0; j < nd; ++j) {
            const int pos = k * nd + j;
            if (pack) {
                const int g = 0 == k ? IN : member_slot + k - 1;
                mca_coll_loom_sched_copy_move(s, g, dst[j], base + pos / P, pos % P, 1);
            } else {
                const int o = 0 == j ? RES : member_slot + j - 1;
                mca_coll_loom_sched_copy_move(s, base + pos / P, pos % P, o, src[k], 1);
            }
        }
    }
}

int mca_coll_loom_hierarchical_alltoall(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank, mynode = mca_coll_loom_node_of(p, r);
    /* other: the ranks of the two nodes of one step, which may be one node twice */
    int *mine = malloc(sizeof(int) * (size_t) P), *other = malloc(2 * sizeof(int) * (size_t) P);
    int n, nn = 0, nmax = 0, rc = MCA_COLL_LOOM_OK; /* nmax: the largest other node */

    if (NULL == mine || NULL == other) {
        free(mine);
        free(other);
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    for (int q = 0; q < P; ++q) {
        nn = mca_coll_loom_node_of(p, q) + 1 > nn ? mca_coll_loom_node_of(p, q) + 1 : nn;
    }
    for (int k = 0; k < nn; ++k) {
        const int c = k != mynode ? members(p, k, other) : 0;
        nmax = c > nmax ? c : nmax;
    }
    n = members(p, mynode, mine);
    mca_coll_loom_sched_set_blocks(s, P);
    mca_coll_loom_sched_moves_blocks(s);

    if (r != mine[0]) {
        /* a member: its send buffer to the leader, its result back */
        mca_coll_loom_sched_send_blk(s, mine[0], IN, 0, P);
        mca_coll_loom_sched_wait(s);
        mca_coll_loom_sched_recv_blk(s, mine[0], RES, 0, P);
        mca_coll_loom_sched_wait(s);
    } else if (slots_needed(P, n, nmax) > MCA_COLL_LOOM_MAX_SLOTS) {
        rc = MCA_COLL_LOOM_ERR_NOTSUP;
    } else {
        /* slots: G + k - 1 member k's send buffer, O + k - 1 its result (k >= 1), from K
         * the pack and from U the unpack slots of one node pair */
        const int G = MCA_COLL_LOOM_SLOT_SCRATCH0, O = G + n - 1, K = O + n - 1;
        const int per_pair = (n * nmax + P - 1) / P, U = K + per_pair;
        const int piece = p->segs > 1 ? (P + p->segs - 1) / p->segs : P; /* parts per message */

        for (int k = 1; k < n; ++k) {
            mca_coll_loom_sched_recv_blk(s, mine[k], G + k - 1, 0, P);
        }
        mca_coll_loom_sched_wait(s);
        /* within the node */
        for (int k = 0; k < n; ++k) {
            for (int j = 0; j < n; ++j) {
                mca_coll_loom_sched_copy_move(s, 0 == k ? IN : G + k - 1, mine[j], 0 == j ? RES : O + j - 1,
                                              mine[k], 1);
            }
        }
        /* node pairs: step i sends to node mynode + i, receives from mynode - i */
        for (int i = 1; i < nn; ++i) {
            const int to = (mynode + i) % nn, from = (mynode + nn - i) % nn;
            int *dst = other, nd, ns, *src;
            nd = members(p, to, dst);
            src = other + nd;
            ns = members(p, from, src);
            pack_pair(s, P, mine, n, dst, nd, K, G, true);
            for (int m = 0; m * P < n * nd; ++m) {
                const int cnt = n * nd - m * P < P ? n * nd - m * P : P;
                for (int b = 0; b < cnt; b += piece) {
                    mca_coll_loom_sched_send_blk(s, dst[0], K + m, b, cnt - b < piece ? cnt - b : piece);
                }
            }
            for (int m = 0; m * P < ns * n; ++m) {
                const int cnt = ns * n - m * P < P ? ns * n - m * P : P;
                for (int b = 0; b < cnt; b += piece) {
                    mca_coll_loom_sched_recv_blk(s, src[0], U + m, b, cnt - b < piece ? cnt - b : piece);
                }
            }
            mca_coll_loom_sched_wait(s);
            pack_pair(s, P, src, ns, mine, n, U, O, false);
        }
        /* every member's result */
        for (int k = 1; k < n; ++k) {
            mca_coll_loom_sched_send_blk(s, mine[k], O + k - 1, 0, P);
        }
        mca_coll_loom_sched_wait(s);
    }
    free(mine);
    free(other);
    return rc;
}
