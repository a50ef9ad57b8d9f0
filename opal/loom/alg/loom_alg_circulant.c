/*
 * loom algorithm `circulant`: the round-optimal broadcast on a circulant graph of Träff
 * ("Optimal broadcast schedules in logarithmic time with applications to broadcast,
 * all-broadcast, reduction and all-reduction", arXiv:2407.18004; docs/references.md).
 *
 * The message is cut in n blocks and every rank takes part in every round: in round i,
 * with k = i mod q and q = ceil(log2 P), rank r sends one block to r + skip[k] and receives
 * one from r - skip[k] (mod P, ranks relative to the root), where skip[q] = P and skip[k] =
 * ceil(skip[k+1] / 2).  n - 1 + q rounds in all, the fewest any broadcast of n blocks needs
 * when a rank sends one block per round.
 *
 * Which block: in the q rounds of a phase each rank receives the q blocks {b} and {-1 ..
 * -q} minus {b - q}, b its baseblock, numbered relative to the phase; every
 * phase adds q to them.  A rank's receive schedule R[0..q-1] takes O(q^2) steps (the
 * paper's search, walked as MPICH's circ_graph.c does); its send schedule is its
 * targets' receive schedules, S[k] = R(r + skip[k])[k].  Negative blocks are no block
 * (that round sends or receives nothing); blocks past the last are the last one, which the
 * schedule then never delivers twice.  The first phase starts x = (q - (n-1) mod q) mod q
 * rounds in, so that the last round is the last of a phase.
 *
 * With a single block it is a binomial-like tree of q rounds for any P; the pipeline pays
 * from a few blocks per phase on.  For some P a rank forwards in a round the block it
 * receives in that round (a chain of two); that round then waits for its receive before
 * the send.
 */
#include <stdbool.h>
#include <stdint.h>

#include "opal/loom/loom_registry.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define CIRC_MAXQ 32 /* q = ceil(log2 P) <= 31 for an int P */

static int ceil_log2(int P)
{
    int q = 1;
    while (q < 31 && (1L << q) < (long) P) {
        ++q;
    }
    return q;
}

/* The baseblock of relative rank r: r = skip[e1] + skip[e2] + ... + skip[b] with e1 > e2 >
 * ... > b, taken greedily from the top; the root's is q. */
static int baseblock(int r, const int *skip, int q)
{
    int rt = r;

    if (0 == r) {
        return q;
    }
    for (int k = q - 1; k >= 0; --k) {
        if (rt >= skip[k]) {
            rt -= skip[k];
            if (0 == rt) {
                return k;
            }
        }
    }
    return -1; /* every 0 < r < P is a sum of distinct skips (skip[k+1] <= 2 skip[k]) */
}

/* Receive schedule of relative rank r: for k = 0 .. q-1, the largest
 * baseblock not yet taken among the ranks in (r - skip[k+1], r - skip[k]], found by a
 * depth-first walk over the sums of skips in decreasing order; the baseblocks still free
 * are kept in a list q, q-1, .., 0.  Ranks are shifted by P so that no modulo is needed. */
static void recv_schedule(int r, int P, int q, const int *skip, int *R)
{
    int next[CIRC_MAXQ + 1], prev[CIRC_MAXQ + 1], stack[CIRC_MAXQ + 2];
    const int b = baseblock(r, skip, q);
    int sp = 0, k = 0, e = q, rt;
    long low = (long) r + P - skip[1], high = (long) r + P - skip[0];

    for (int i = 0; i <= q; ++i) {
        next[i] = i - 1;
        prev[i] = i + 1;
    }
    prev[q] = -1;
#define CIRC_UNLINK(x)                                                                            \
    do {                                                                                          \
        if (-1 != prev[x]) next[prev[x]] = next[x];                                               \
        if (-1 != next[x]) prev[next[x]] = prev[x];                                               \
    } while (0)
    CIRC_UNLINK(b);
    rt = skip[e];
    stack[sp++] = e;
    while (k < q) {
        if (rt < low || (rt == low && next[e] > -1)) {
            e = next[e];
            rt += skip[e];
            stack[sp++] = e;
        } else if (rt > high) {
            rt -= skip[stack[--sp]];
        } else {
            e = stack[sp - 1];
            R[k++] = e;
            high = low;
            low = k < q ? (long) r + P - skip[k + 1] : 0;
            CIRC_UNLINK(e);
            rt -= skip[stack[--sp]];
        }
    }
#undef CIRC_UNLINK
    /* the walk names the root's part of the sum as q: that is this rank's baseblock;
     * the others are blocks of the previous phase */
    for (int i = 0; i < q; ++i) {
        R[i] = q == R[i] ? b : R[i] - q;
    }
}

static int build_circulant(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, n = p->segs > 1 ? p->segs : 1, q = ceil_log2(P);
    const int rel = mca_coll_loom_rank_mod((long) p->rank - p->root, P);
    int skip[CIRC_MAXQ + 1], R[CIRC_MAXQ], S[CIRC_MAXQ], T[CIRC_MAXQ];
    bool to_root[CIRC_MAXQ];

    if (MCA_COLL_LOOM_COLL_BCAST != p->coll) {
        return MCA_COLL_LOOM_ERR_NOTSUP;
    }
    if (P < 2) {
        return MCA_COLL_LOOM_OK;
    }
    skip[q] = P;
    for (int k = q - 1; k >= 0; --k) {
        skip[k] = skip[k + 1] / 2 + (skip[k + 1] & 1);
    }
    if (0 != rel) {
        recv_schedule(rel, P, q, skip, R);
    }
    for (int k = 0; k < q; ++k) {
        /* what round k's target receives is what this rank sends; the root sends block k */
        const int to = (int) (((long) rel + skip[k]) % P);
        to_root[k] = 0 == to; /* nothing goes to the root */
        if (0 == to) {
            S[k] = 0; /* unused */
        } else if (0 == rel) {
            S[k] = k;
        } else {
            recv_schedule(to, P, q, skip, T);
            S[k] = T[k];
        }
    }
    mca_coll_loom_sched_set_blocks(s, n);
    const int x = (q - (n - 1) % q) % q;
    for (int i = x, off = -x; i < n - 1 + q + x; ++i) {
        const int k = i % q;
        const int rb = 0 != rel && R[k] + off >= 0 ? (R[k] + off < n ? R[k] + off : n - 1) : -1;
        const int sb = !to_root[k] && S[k] + off >= 0 ? (S[k] + off < n ? S[k] + off : n - 1) : -1;
        if (rb >= 0) {
            mca_coll_loom_sched_recv_blk(s, mca_coll_loom_rank_mod((long) rel - skip[k] + p->root, P), RES, rb, 1);
        }
        if (sb >= 0) {
            if (sb == rb) {
                mca_coll_loom_sched_wait(s); /* forwarded in the round it arrives */
            }
            mca_coll_loom_sched_send_blk(s, mca_coll_loom_rank_mod((long) rel + skip[k] + p->root, P), RES, sb, 1);
        }
        if (rb >= 0 || sb >= 0) {
            mca_coll_loom_sched_wait(s);
        }
        if (q - 1 == k) {
            off += q;
        }
    }
    return MCA_COLL_LOOM_OK;
}

/* Blocks of the whole message: the knob's size, else the cost model's count with blocks
 * of at least 32 KiB, half btl/tcp's eager limit as loom's other pipelines over the
 * network (a block that needs a rendezvous waits for the receiver's reply every round).
 * Not ring's and twotree's 1 MiB (MCA_COLL_LOOM_MIN_AUTO_CHUNK, measured inside one
 * node): the rounds of a broadcast at scale are what many small blocks pay for. */
static int circulant_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob,
                          const mca_coll_loom_segs_model_t *model)
{
    return mca_coll_loom_segs_by_model(alg, coll, P, bytes, knob, 1, (size_t) 32 * 1024, model);
}

MCA_COLL_LOOM_ALGORITHM(circulant) = {
    .name = "circulant",
    .colls = MCA_COLL_LOOM_SERVES(BCAST),
    .needs = 0,
    .knob = "circulant_block_size",
    .knob_default = 0,
    .knob_min = 0,
    .knob_max = INT32_MAX,
    .description = "round-optimal broadcast on a circulant graph: n blocks in n-1+ceil(log2 P) "
                   "rounds, every rank sending and receiving one block per round, any P. Knob: "
                   "bytes per block, 0 = chosen by the cost model",
    .reference = "Traff, arXiv:2407.18004 (2024)",
    .build = build_circulant,
    .pipelined = true,
    .segs = circulant_segs,
};
