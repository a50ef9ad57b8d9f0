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
 *
 * Reduce runs the broadcast's rounds backwards (the paper's reduction): n blocks in n - 1 +
 * q rounds again, each block combined up the tree the broadcast sends it down.  Allreduce
 * is that reduce to rank 0 followed by the broadcast from it: 2 (n - 1 + q) rounds, each
 * rank sending 2n blocks (the bandwidth of reduce-scatter + allgather) with logarithmic
 * latency at any P; one rank combines each block, so every rank gets the same bits.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opal/loom/loom_registry.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT
#define ACC MCA_COLL_LOOM_SLOT_SCRATCH0       /* a partial (reduce, not at the root) */
#define TMP (MCA_COLL_LOOM_SLOT_SCRATCH0 + 1) /* a child's partial, to combine (and TMP + 1) */
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

typedef struct {
    int P, q, n, rel;
    int x;      /* the first phase starts x rounds in (the file's comment) */
    int pieces; /* IR blocks per block */
    int skip[CIRC_MAXQ + 1];
} circ_t;

/* One rank's broadcast rounds: in round i, receive block rb[i] from rel - skip[k] and send
 * block sb[i] to rel + skip[k] (k = (i + x) mod q; -1: nothing).  Returns the number of
 * rounds. */
static int circ_rounds(const circ_t *c, int *rb, int *sb)
{
    const int P = c->P, q = c->q, n = c->n, rel = c->rel;
    int R[CIRC_MAXQ], S[CIRC_MAXQ], T[CIRC_MAXQ];
    bool to_root[CIRC_MAXQ];
    int nr = 0;

    if (0 != rel) {
        recv_schedule(rel, P, q, c->skip, R);
    }
    for (int k = 0; k < q; ++k) {
        /* what round k's target receives is what this rank sends; the root sends block k */
        const int to = (int) (((long) rel + c->skip[k]) % P);
        to_root[k] = 0 == to; /* nothing goes to the root */
        if (0 == to) {
            S[k] = 0; /* unused */
        } else if (0 == rel) {
            S[k] = k;
        } else {
            recv_schedule(to, P, q, c->skip, T);
            S[k] = T[k];
        }
    }
    const int x = c->x;
    for (int i = x, off = -x; i < n - 1 + q + x; ++i, ++nr) {
        const int k = i % q;
        rb[nr] = 0 != rel && R[k] + off >= 0 ? (R[k] + off < n ? R[k] + off : n - 1) : -1;
        sb[nr] = !to_root[k] && S[k] + off >= 0 ? (S[k] + off < n ? S[k] + off : n - 1) : -1;
        if (q - 1 == k) {
            off += q;
        }
    }
    return nr;
}

static int circ_peer(const circ_t *c, int i, int sign, int root)
{
    const int k = (i + c->x) % c->q;
    return mca_coll_loom_rank_mod((long) c->rel + sign * c->skip[k] + root, c->P);
}

/* Block b is IR blocks b K .. b K + K - 1 (K pieces: the reduction's, below); the
 * broadcast moves it as one message. */
static void circ_bcast(mca_coll_loom_sched_t *s, const circ_t *c, const int *rb, const int *sb, int nr, int root)
{
    const int K = c->pieces;

    for (int i = 0; i < nr; ++i) {
        if (rb[i] >= 0) {
            mca_coll_loom_sched_recv_blk(s, circ_peer(c, i, -1, root), RES, rb[i] * K, K);
        }
        if (sb[i] >= 0) {
            if (sb[i] == rb[i]) {
                mca_coll_loom_sched_wait(s); /* forwarded in the round it arrives */
            }
            mca_coll_loom_sched_send_blk(s, circ_peer(c, i, 1, root), RES, sb[i] * K, K);
        }
        if (rb[i] >= 0 || sb[i] >= 0) {
            mca_coll_loom_sched_wait(s);
        }
    }
}

/* The reduction: the broadcast's rounds backwards (Träff, the reduction by the reversed
 * schedule), each send of a block a receive of the target's partial and each receive a
 * send of this rank's partial to the rank it came from.  A block's tree is the
 * broadcast's, so every contribution is combined once; the order is the tree's, so the
 * op must be commutative.  The partial of block b builds in acc: the first child's
 * arrives there and takes this rank's input (acc := in o acc), later ones arrive in tmp;
 * a block without children is sent straight from in.
 *
 * A rank sends a block's partial up in the round after its last child's arrived, so a
 * round would cost the block's transfer plus its combining.  Two things hide the
 * combining behind the link: each block moves in CIRC_PIECES messages (the first piece
 * is combined, and can leave, while the next one arrives), and a round's pieces are
 * combined in the next round, after its receives are posted (the round reading then
 * overlaps them as the engine does). */
#define CIRC_PIECES 2

typedef struct {
    int blk;    /* block received in the previous round, not combined yet (-1: none) */
    int slot;   /* where it arrived: acc (the block's first child; then in is combined
                   into it) or one of the two tmp slots */
} circ_pending_t;

static void circ_combine(mca_coll_loom_sched_t *s, const circ_t *c, const circ_pending_t *pd, int j, int acc)
{
    if (pd->blk >= 0) {
        mca_coll_loom_sched_reduce_blk(s, pd->slot == acc ? IN : pd->slot, acc, pd->blk * c->pieces + j, 1);
    }
}

static void circ_reduce(mca_coll_loom_sched_t *s, const circ_t *c, const int *rb, const int *sb, int nr, int root,
                        int acc, uint8_t *got)
{
    const int K = c->pieces;
    circ_pending_t pd = {.blk = -1};
    int ntmp = 0;

    for (int i = nr - 1; i >= 0; --i) {
        const int b = sb[i], up = rb[i], child = circ_peer(c, i, 1, root), parent = circ_peer(c, i, -1, root);
        if (b < 0 && up < 0) {
            continue;
        }
        if (pd.blk >= 0 && b >= 0 && b == up) {
            /* the block leaves in the round it arrives: what came before is combined first */
            for (int j = 0; j < K; ++j) {
                circ_combine(s, c, &pd, j, acc);
            }
            pd.blk = -1;
        }
        /* a rank often takes one block from several children in a row: the two tmp
         * slots alternate, so the next child's pieces arrive while the last ones are
         * combined */
        const circ_pending_t in = {.blk = b, .slot = b < 0 ? -1 : !got[b] ? acc : TMP + (ntmp++ & 1)};
        if (b >= 0) {
            for (int j = 0; j < K; ++j) {
                mca_coll_loom_sched_recv_blk(s, child, in.slot, b * K + j, 1);
            }
        }
        /* the pieces sent up wait for the combining only when they are of the block
         * combined: else they leave first, and the combining runs beside them */
        const int from = up >= 0 && got[up] ? acc : IN;
        const bool after = up == pd.blk;
        for (int j = 0; j < K; ++j) {
            if (after) {
                circ_combine(s, c, &pd, j, acc);
            }
            if (up >= 0 && up != b) {
                mca_coll_loom_sched_send_blk(s, parent, from, up * K + j, 1);
            }
        }
        for (int j = 0; j < K && !after; ++j) {
            circ_combine(s, c, &pd, j, acc);
        }
        mca_coll_loom_sched_wait(s);
        if (b >= 0) {
            got[b] = 1;
        }
        pd = in;
        if (b >= 0 && b == up) {
            for (int j = 0; j < K; ++j) {
                circ_combine(s, c, &pd, j, acc);
                mca_coll_loom_sched_send_blk(s, parent, acc, up * K + j, 1);
            }
            mca_coll_loom_sched_wait(s);
            pd.blk = -1;
        }
    }
    for (int j = 0; j < K; ++j) {
        circ_combine(s, c, &pd, j, acc);
    }
}

static int build_circulant(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, n = p->segs > 1 ? p->segs : 1, q = ceil_log2(P);
    const bool all = MCA_COLL_LOOM_COLL_ALLREDUCE == p->coll;
    const int root = all ? 0 : p->root;
    circ_t c = {.P = P, .q = q, .n = n, .rel = mca_coll_loom_rank_mod((long) p->rank - root, P),
                .x = (q - (n - 1) % q) % q, .pieces = MCA_COLL_LOOM_COLL_BCAST == p->coll ? 1 : CIRC_PIECES};
    int *rb, *sb, nr;
    uint8_t *got;

    if (MCA_COLL_LOOM_COLL_BCAST != p->coll && MCA_COLL_LOOM_COLL_REDUCE != p->coll && !all) {
        return MCA_COLL_LOOM_ERR_NOTSUP;
    }
    if (P < 2) {
        if (MCA_COLL_LOOM_COLL_BCAST != p->coll) {
            mca_coll_loom_sched_copy(s, IN, RES);
        }
        return MCA_COLL_LOOM_OK;
    }
    c.skip[q] = P;
    for (int k = q - 1; k >= 0; --k) {
        c.skip[k] = c.skip[k + 1] / 2 + (c.skip[k + 1] & 1);
    }
    rb = malloc(2 * (size_t) (n + q) * sizeof(int) + (size_t) n);
    if (NULL == rb) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    sb = rb + n + q;
    got = (uint8_t *) (sb + n + q);
    memset(got, 0, (size_t) n);
    nr = circ_rounds(&c, rb, sb);
    mca_coll_loom_sched_set_blocks(s, n * c.pieces);
    if (MCA_COLL_LOOM_COLL_BCAST == p->coll) {
        circ_bcast(s, &c, rb, sb, nr, root);
    } else {
        /* the reduction's partials of blocks without children are ready from the start:
         * sent beside the current round's, they would share its link and delay it */
        mca_coll_loom_sched_one_send(s);
        /* reduce: the partial of a rank other than the root builds in scratch (it has no
         * receive buffer); allreduce: in RESULT, which the broadcast then overwrites */
        const bool own = all || 0 == c.rel;
        circ_reduce(s, &c, rb, sb, nr, root, own ? RES : ACC, got);
        if (all) {
            circ_bcast(s, &c, rb, sb, nr, root);
        }
    }
    free(rb);
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
    .colls = MCA_COLL_LOOM_SERVES(BCAST) | MCA_COLL_LOOM_SERVES(REDUCE) | MCA_COLL_LOOM_SERVES(ALLREDUCE),
    .needs = MCA_COLL_LOOM_NEEDS_COMMUTATIVE,
    .knob = "circulant_block_size",
    .knob_default = 0,
    .knob_min = 0,
    .knob_max = INT32_MAX,
    .description = "round-optimal broadcast on a circulant graph: n blocks in n-1+ceil(log2 P) "
                   "rounds, every rank sending and receiving one block per round, any P; reduce: "
                   "the same rounds backwards (commutative ops); allreduce: reduce + broadcast. "
                   "Knob: bytes per block, 0 = chosen by the cost model",
    .reference = "Traff, arXiv:2407.18004 (2024)",
    .build = build_circulant,
    .pipelined = true,
    .segs = circulant_segs,
};
