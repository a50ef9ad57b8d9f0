/*
 * loom algorithm `bruck`: Bruck and Ho's n-port global combine, as presented in End
 * et al., section III.C (eq. 15-24).
 *
 * Write P-1 in base n+1 with digits a_{k-1} .. a_0.  Each rank keeps two partial
 * results: S0, the combination of everything received (its right-hand neighbours
 * p+1 .. p+c), and S1 = x_p o S0 (p .. p+c).  In the round of digit a, the rank
 * sends S1 to the a ranks p - j(c+1), j = 1..a, and S0 to the n - a ranks
 * p - a(c+1) - c - i*c, i = 0..n-a-1; symmetrically it receives S1 from p + j(c+1)
 * and S0 from p + a(c+1) + c + i*c.  The new pieces extend S0 to p+1 .. p+c' with
 * c' = (n+1)c + a, so after the last digit c = P-1 and S1 is the full result.  Every
 * rank needs exactly k = ceil(log_{n+1} P) rounds for every P, with no adaption.
 *
 * The result of rank p is x_p o x_{p+1} o ... (a rotation), so the registry restricts
 * the algorithm to commutative, exactly associative ops.
 *
 * Allgather: the same n-port scheme concatenates instead of combining (Bruck, Ho,
 * Kipnis, Upfal, Weathersby, IEEE TPDS 8(11), 1997, section 3).  Rank p gathers into
 * a scratch slot T whose block j holds the part of rank p+j: its own part first.  In
 * the round of distance d = (n+1)^i it sends T's first min(d, P - j d) blocks to rank
 * p - j d and receives the same count from p + j d into T from block j d on, for
 * j = 1..n while j d < P; so T holds parts p .. p+c-1 with c = min((n+1) d, P) after
 * the round, and ceil(log_{n+1} P) rounds gather all.  The blocks arrive at other
 * positions than they left (block moves) and are rotated into place at the end.
 *
 * Alltoall: the concatenation scheme of the same paper (section 4), n-port.  Rank r
 * first rotates its send blocks into T (block j = the one for rank r+j).  In the round
 * of distance d = (n+1)^i, the blocks j whose base-(n+1) digit i is v (v = 1..n) go to
 * rank r + v d, and the blocks from r - v d arrive at the same positions: a block's
 * moves add up to j, so at the end T block j of rank q holds rank q-j's block for q,
 * which the last step puts at RESULT block q-j.  A digit's blocks lie in runs of d;
 * with several runs they are packed into a send slot first and unpacked from a
 * receive slot after (one message per port and round, ceil(log_{n+1} P) rounds).
 */
#include "opal/loom/loom_registry.h"

/* Slots: RESULT holds S1, S0 has its own slot, then n receive buffers. */
#define S0           MCA_COLL_LOOM_SLOT_SCRATCH0
#define RECV_SLOT(j) (MCA_COLL_LOOM_SLOT_SCRATCH0 + (j))

/* The allgather: RESULT has P blocks (one part per rank, registry.h), T = scratch. */
static int build_allgather(mca_coll_loom_sched_t *s, int P, int rank, int n)
{
    const int T = MCA_COLL_LOOM_SLOT_SCRATCH0;

    mca_coll_loom_sched_set_blocks(s, P);
    mca_coll_loom_sched_moves_blocks(s);
    mca_coll_loom_sched_copy_move(s, MCA_COLL_LOOM_SLOT_RESULT, rank, T, 0, 1);
    for (long d = 1; d < P; d *= n + 1) {
        for (int j = 1; j <= n && j * d < P; ++j) {
            const int cnt = (int) (d < P - j * d ? d : P - j * d);
            mca_coll_loom_sched_send_blk(s, mca_coll_loom_rank_mod(rank - j * d, P), T, 0, cnt);
            mca_coll_loom_sched_recv_blk(s, mca_coll_loom_rank_mod(rank + j * d, P), T, (int) (j * d), cnt);
        }
        mca_coll_loom_sched_wait(s);
    }
    /* T block j is part rank+j: blocks 1..P-1-rank go to rank+1.., the rest to 0.. */
    if (rank < P - 1) {
        mca_coll_loom_sched_copy_move(s, T, 1, MCA_COLL_LOOM_SLOT_RESULT, rank + 1, P - 1 - rank);
    }
    if (rank > 0) {
        mca_coll_loom_sched_copy_move(s, T, P - rank, MCA_COLL_LOOM_SLOT_RESULT, 0, rank);
    }
    return MCA_COLL_LOOM_OK;
}

/* Alltoall slots: T, then one pack and one unpack slot per port. */
#define PACK(v)   (MCA_COLL_LOOM_SLOT_SCRATCH0 + (v))
#define UNPACK(v) (MCA_COLL_LOOM_SLOT_SCRATCH0 + n + (v))

/* Copies the runs of blocks with digit value v (runs of d every (n+1) d blocks, from
 * v d on) between `slot` and the packed slot, in either direction. */
static int digit_runs(mca_coll_loom_sched_t *s, int P, int n, long d, int v, int slot, int packed, bool pack)
{
    int at = 0;

    for (long first = v * d; first < P; first += (n + 1) * d) {
        const int len = (int) (first + d < P ? d : P - first);
        if (pack) {
            mca_coll_loom_sched_copy_move(s, slot, (int) first, packed, at, len);
        } else {
            mca_coll_loom_sched_copy_move(s, packed, at, slot, (int) first, len);
        }
        at += len;
    }
    return at;
}

static int build_alltoall(mca_coll_loom_sched_t *s, int P, int rank, int n)
{
    const int T = MCA_COLL_LOOM_SLOT_SCRATCH0;

    mca_coll_loom_sched_set_blocks(s, P);
    mca_coll_loom_sched_moves_blocks(s);
    mca_coll_loom_sched_copy_move(s, MCA_COLL_LOOM_SLOT_INPUT, rank, T, 0, P - rank);
    if (rank > 0) {
        mca_coll_loom_sched_copy_move(s, MCA_COLL_LOOM_SLOT_INPUT, 0, T, P - rank, rank);
    }
    for (long d = 1; d < P; d *= n + 1) {
        int cnt[17] = {0};
        bool packed[17] = {false};
        /* every port's packing first, then its messages: the round's transfers go out
         * together (as its round reading has them) */
        for (int v = 1; v <= n && v * d < P; ++v) {
            /* one run (the digit's blocks contiguous): sent from T as they lie */
            packed[v] = v * d + (n + 1) * d < P;
            cnt[v] = packed[v] ? digit_runs(s, P, n, d, v, T, PACK(v), true) : (int) (v * d + d < P ? d : P - v * d);
        }
        for (int v = 1; v <= n && v * d < P; ++v) {
            mca_coll_loom_sched_send_blk(s, mca_coll_loom_rank_mod(rank + v * d, P), packed[v] ? PACK(v) : T,
                                         packed[v] ? 0 : (int) (v * d), cnt[v]);
            mca_coll_loom_sched_recv_blk(s, mca_coll_loom_rank_mod(rank - v * d, P), UNPACK(v), 0, cnt[v]);
        }
        mca_coll_loom_sched_wait(s);
        for (int v = 1; v <= n && v * d < P; ++v) {
            (void) digit_runs(s, P, n, d, v, T, UNPACK(v), false);
        }
    }
    /* T block j came from rank - j */
    for (int j = 0; j < P; ++j) {
        mca_coll_loom_sched_copy_move(s, T, j, MCA_COLL_LOOM_SLOT_RESULT, mca_coll_loom_rank_mod(rank - j, P), 1);
    }
    return MCA_COLL_LOOM_OK;
}

int mca_coll_loom_build_bruck(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, rank = p->rank, n = p->knob;
    int digits[32], k = 0;
    long c = 0;

    if (n < 1 || P < 1 || rank < 0 || rank >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (MCA_COLL_LOOM_COLL_ALLGATHER == p->coll) {
        return build_allgather(s, P, rank, n);
    }
    if (MCA_COLL_LOOM_COLL_ALLTOALL == p->coll) {
        return n > 16 ? MCA_COLL_LOOM_ERR_BADPARAM : build_alltoall(s, P, rank, n);
    }
    for (int v = P - 1; v > 0; v /= n + 1) {
        digits[k++] = v % (n + 1);
    }

    /* S1 = x_p, S0 empty (c = 0). */
    mca_coll_loom_sched_copy(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT);
    for (int d = k - 1; d >= 0; --d) {
        const int a = digits[d];
        int nrecv = 0;

        for (int j = 1; j <= a; ++j) {
            mca_coll_loom_sched_send(s, mca_coll_loom_rank_mod(rank - j * (c + 1), P),
                                     MCA_COLL_LOOM_SLOT_RESULT);
            mca_coll_loom_sched_recv(s, mca_coll_loom_rank_mod(rank + j * (c + 1), P),
                                     RECV_SLOT(++nrecv));
        }
        for (int i = 0; c > 0 && i < n - a; ++i) {
            mca_coll_loom_sched_send(s, mca_coll_loom_rank_mod(rank - a * (c + 1) - c - i * c, P),
                                     S0);
            mca_coll_loom_sched_recv(s, mca_coll_loom_rank_mod(rank + a * (c + 1) + c + i * c, P),
                                     RECV_SLOT(++nrecv));
        }
        mca_coll_loom_sched_wait(s);

        for (int j = 1; j <= nrecv; ++j) {
            if (0 == c && 1 == j) {
                mca_coll_loom_sched_copy(s, RECV_SLOT(j), S0);
            } else {
                mca_coll_loom_sched_reduce(s, RECV_SLOT(j), S0);
            }
        }
        c = (n + 1) * c + a;

        /* S1 = x_p o S0, needed when the next round sends it and at the end */
        if (0 == d || digits[d - 1] > 0) {
            mca_coll_loom_sched_copy(s, S0, MCA_COLL_LOOM_SLOT_RESULT);
            mca_coll_loom_sched_reduce(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT);
        }
    }
    return MCA_COLL_LOOM_OK;
}

MCA_COLL_LOOM_ALGORITHM(bruck) = {
    .name = "bruck",
    .colls = MCA_COLL_LOOM_SERVES(ALLREDUCE) | MCA_COLL_LOOM_SERVES(ALLGATHER) |
             MCA_COLL_LOOM_SERVES(ALLTOALL),
    .needs = MCA_COLL_LOOM_NEEDS_COMMUTATIVE | MCA_COLL_LOOM_NEEDS_EXACT,
    .knob = "bruck_ports",
    .knob_default = 2,
    .knob_min = 1,
    .knob_max = 16,
    .description = "Bruck's n-port global combine (digits of P-1 in base n+1); for allgather "
                   "and alltoall, the n-port concatenation in ceil(log_{n+1} P) rounds",
    .reference = "End et al., section III.C",
    .build = mca_coll_loom_build_bruck,
};
