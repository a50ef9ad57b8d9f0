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
 * from a few blocks per phase on.  Should a round ever ask a rank to forward the block it
 * receives in that round (MPICH's iterative walk did, for P = 33, 65, ...; the recursive
 * walk here never does, checked for P up to 2100), the round waits for the receive first.
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

/* Receive schedule of relative rank r: for k = 0 .. q-1, the largest baseblock not yet
 * taken among the ranks in (r - skip[k+1], r - skip[k]], found by a depth-first walk over
 * the sums of skips in decreasing order (the recursive form of MPICH's first circulant
 * bcast; its later iterative rewrite of the walk gives schedules that do not match for P =
 * 33, 65, 66, ...).  The baseblocks still free are a list q, q-1, .., 0 (index -1 is the
 * sentinel, kept at [0] of the arrays).  Ranks are shifted by P so that no modulo is
 * needed. */
typedef struct {
    const int *skip;
    long skip_guard;           /* skip[q+1]: never reached, but read in a comparison */
    int q, next[CIRC_MAXQ + 2], prev[CIRC_MAXQ + 2], *R;
} circ_walk_t;

static long circ_skip(const circ_walk_t *w, int k)
{
    return k <= w->q ? (long) w->skip[k] : w->skip_guard;
}

static void circ_unlink(circ_walk_t *w, int e)
{
    w->next[w->prev[e + 1] + 1] = w->next[e + 1];
    w->prev[w->next[e + 1] + 1] = w->prev[e + 1];
}

static int all_blocks(circ_walk_t *w, long r, long r1, long s, int e, int k)
{
    while (-1 != e && k < w->q) {
        const long t = r1 + circ_skip(w, e);
        if (t <= r - circ_skip(w, k) && t < s) {
            if (t <= r - circ_skip(w, k + 1)) {
                k = all_blocks(w, r, t, s, e, k);
            }
            if (k >= w->q || r1 > r - circ_skip(w, k + 1)) {
                return k;
            }
            s = t;
            w->R[k++] = e;
            circ_unlink(w, e);
        }
        e = w->next[e + 1];
    }
    return k;
}

static void recv_schedule(int r, int P, int q, const int *skip, int *R)
{
    circ_walk_t w = {.skip = skip, .skip_guard = 2L * P, .q = q, .R = R};
    const int b = baseblock(r, skip, q);

    for (int i = 0; i <= q; ++i) {
        w.next[i + 1] = i - 1;
        w.prev[i + 1] = i + 1;
    }
    w.prev[q + 1] = -1;
    w.next[0] = q; /* the sentinel */
    w.prev[0] = 0;
    circ_unlink(&w, b);
    (void) all_blocks(&w, (long) P + r, 0, 2L * P, q, 0);
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
