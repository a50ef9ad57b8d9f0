/*
 * loom algorithm `dissemination`: the n-way dissemination allreduce and barrier with
 * the adaption of End et al., section III.B (eq. 1-8, Theorem 1).
 *
 * Round l (1..k, k = ceil(log_{n+1} P)): rank p sends its partial result to
 * p + i(n+1)^(l-1) and receives from p - i(n+1)^(l-1), i = 1..n.  After round l it holds
 * the contributions of its (n+1)^l left-hand neighbours, as a chain of "boxes": its
 * own x_p, then one box per partial result received, each extending the covered range
 * to the left.  The prefix sizes of that chain are the paper's data boundaries:
 * 1 (the base border g_B) and (j+1)(n+1)^(l-1) after box j of round l.
 *
 * Unless P = (n+1)^k, the last round would count some ranks twice.  That is harmless
 * for idempotent ops and for the barrier, which run the plain algorithm.  For any other
 * op the last round is adapted: with m = (n+1)^(k-1), senders 1..s-1 send their whole
 * chain, sender s sends only a prefix of L contributions of its chain, and the receiver
 * takes the first D contributions of its own chain out, where L and D are chain
 * boundaries and
 *                         s*m + L - D = P.
 * The covered range is then exactly P consecutive ranks.  This single condition is
 * what the five cases of Theorem 1 spell out: L = 1 is "the sender sends its own data"
 * (case 2), D = 1 is "the receiver takes out its initial data" (case 5), D = 0 needs no
 * take-out (cases 3 and 4), and the boundary-to-boundary match of eq. (7) is the
 * general case 1.  Where no (s, L, D) exists the algorithm declares it cannot serve
 * (n, P) and loom picks another algorithm.
 *
 * "Taking out" uses the inverse op only where it is exact (integer sum, xor:
 * MCA_COLL_LOOM_CALL_INVERTIBLE): the receiver keeps a copy of its D-prefix and applies
 * UNREDUCE at the end.  Otherwise it recomputes without the prefix, as the paper
 * allows, by accumulating the boxes after the prefix in a second buffer.
 *
 * Ranks combine in rank-dependent groupings, so the registry restricts the algorithm
 * to commutative, exactly associative ops (no floating-point sum).
 */
#include "opal/loom/loom_registry.h"

/* Slots: RESULT, INPUT, n receive buffers, then the sender's L-prefix copy and the
 * receiver's D-prefix copy (inverse) or second accumulator (recompute). */
#define RECV_SLOT(j) (MCA_COLL_LOOM_SLOT_SCRATCH0 + (j) - 1)

static int ipow_capped(int base, int e, int cap)
{
    long v = 1;
    for (int i = 0; i < e; ++i) {
        v *= base;
        if (v > cap) {
            return cap + 1;
        }
    }
    return (int) v;
}

/* Smallest k with (n+1)^k >= P. */
static int rounds_for(int n, int P)
{
    int k = 0;
    long cover = 1;
    while (cover < P) {
        cover *= n + 1;
        k++;
    }
    return k;
}

/* Is `len` a prefix size of a chain built in rounds 1..k-1 (a data boundary)? */
static bool is_boundary(int n, int k, int len)
{
    if (1 == len) {
        return true;
    }
    for (int l = 1; l < k; ++l) {
        int box = ipow_capped(n + 1, l - 1, len);
        if (box > len) {
            break;
        }
        if (0 == len % box && len / box >= 2 && len / box <= n + 1) {
            return true;
        }
    }
    return false;
}

/* The last round's peers p - j*m (j = 1..s) must be distinct and not p itself. */
static bool peers_distinct(int s, int m, int P)
{
    for (int j = 1; j <= s; ++j) {
        long off = ((long) j * m) % P;
        if (0 == off) {
            return false;
        }
        for (int i = 1; i < j; ++i) {
            if (((long) i * m) % P == off) {
                return false;
            }
        }
    }
    return true;
}

bool mca_coll_loom_dissemination_adapt(int n, int P, mca_coll_loom_adaption_t *a)
{
    int k, m, nb = 0, drops[2 + 64 * 32];
    bool found = false;

    if (n < 1 || n > 64 || P < 2) {
        return false;
    }
    k = rounds_for(n, P); /* at most 31 for an int P */
    m = ipow_capped(n + 1, k - 1, P);
    /* candidate take-outs in increasing order: none, then every boundary below m */
    drops[nb++] = 0;
    drops[nb++] = 1;
    for (int l = 1, box = 1; l < k; ++l, box *= n + 1) {
        for (int j = 1; j <= n && (j + 1) * box < m; ++j) {
            drops[nb++] = (j + 1) * box;
        }
    }
    /* Fewest last-round messages first (s), then the smallest take-out (D). */
    for (int s = 1; s <= n && !found; ++s) {
        for (int i = 0; i < nb && !found; ++i) {
            int D = drops[i], L = P - s * m + D;
            if (D >= m || L < 1 || L > m || !is_boundary(n, k, L) || !peers_distinct(s, m, P)) {
                continue;
            }
            a->k = k;
            a->m = m;
            a->s = s;
            a->send_prefix = L;
            a->drop_prefix = D;
            found = true;
        }
    }
    return found;
}

bool mca_coll_loom_dissemination_can_serve(const mca_coll_loom_params_t *p)
{
    mca_coll_loom_adaption_t a;

    if (p->P <= 1 || (p->call & MCA_COLL_LOOM_CALL_IDEMPOTENT)) {
        return true;
    }
    return mca_coll_loom_dissemination_adapt(p->knob, p->P, &a);
}

int mca_coll_loom_build_dissemination(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, rank = p->rank, n = p->knob;
    const bool plain = 0 != (p->call & MCA_COLL_LOOM_CALL_IDEMPOTENT);
    const bool inverse = 0 != (p->call & MCA_COLL_LOOM_CALL_INVERTIBLE);
    const int snap_l = RECV_SLOT(n + 1), keep_d = RECV_SLOT(n + 2);
    mca_coll_loom_adaption_t a = {0};
    int k, m, cum = 1;
    bool acc2_started = false;

    if (n < 1 || P < 1 || rank < 0 || rank >= P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    mca_coll_loom_sched_copy(s, MCA_COLL_LOOM_SLOT_INPUT, MCA_COLL_LOOM_SLOT_RESULT);
    if (1 == P) {
        return MCA_COLL_LOOM_OK;
    }
    k = rounds_for(n, P);
    m = ipow_capped(n + 1, k - 1, P);
    if (!plain && !mca_coll_loom_dissemination_adapt(n, P, &a)) {
        return MCA_COLL_LOOM_ERR_NOTSUP;
    }

    /* Rounds 1..k-1: the plain algorithm, remembering the chain prefixes the last
     * round needs (L for the sender's part, D for the receiver's take-out). */
    for (int l = 1, dist = 1; l < k; ++l, dist *= n + 1) {
        for (int i = 1; i <= n; ++i) {
            mca_coll_loom_sched_send(s, mca_coll_loom_rank_mod(rank + (long) i * dist, P),
                                     MCA_COLL_LOOM_SLOT_RESULT);
            mca_coll_loom_sched_recv(s, mca_coll_loom_rank_mod(rank - (long) i * dist, P),
                                     RECV_SLOT(i));
        }
        mca_coll_loom_sched_wait(s);
        for (int j = 1; j <= n; ++j) {
            mca_coll_loom_sched_reduce(s, RECV_SLOT(j), MCA_COLL_LOOM_SLOT_RESULT);
            if (!plain && a.drop_prefix > 0 && !inverse && cum >= a.drop_prefix) {
                /* recompute path: this box lies beyond the prefix to take out */
                if (acc2_started) {
                    mca_coll_loom_sched_reduce(s, RECV_SLOT(j), keep_d);
                } else {
                    mca_coll_loom_sched_copy(s, RECV_SLOT(j), keep_d);
                    acc2_started = true;
                }
            }
            cum += dist;
            if (!plain && cum == a.send_prefix && a.send_prefix != m) {
                mca_coll_loom_sched_copy(s, MCA_COLL_LOOM_SLOT_RESULT, snap_l);
            }
            if (!plain && inverse && cum == a.drop_prefix) {
                mca_coll_loom_sched_copy(s, MCA_COLL_LOOM_SLOT_RESULT, keep_d);
            }
        }
    }

    /* Round k. */
    if (plain) {
        for (int i = 1; i <= n && (long) i * m < P; ++i) {
            mca_coll_loom_sched_send(s, mca_coll_loom_rank_mod(rank + (long) i * m, P),
                                     MCA_COLL_LOOM_SLOT_RESULT);
            mca_coll_loom_sched_recv(s, mca_coll_loom_rank_mod(rank - (long) i * m, P),
                                     RECV_SLOT(i));
        }
        mca_coll_loom_sched_wait(s);
        for (int j = 1; j <= n && (long) j * m < P; ++j) {
            mca_coll_loom_sched_reduce(s, RECV_SLOT(j), MCA_COLL_LOOM_SLOT_RESULT);
        }
        return MCA_COLL_LOOM_OK;
    }

    for (int j = 1; j <= a.s; ++j) {
        int part = MCA_COLL_LOOM_SLOT_RESULT;
        if (j == a.s && a.send_prefix != m) {
            part = 1 == a.send_prefix ? MCA_COLL_LOOM_SLOT_INPUT : snap_l;
        }
        mca_coll_loom_sched_send(s, mca_coll_loom_rank_mod(rank + (long) j * m, P), part);
        mca_coll_loom_sched_recv(s, mca_coll_loom_rank_mod(rank - (long) j * m, P), RECV_SLOT(j));
    }
    mca_coll_loom_sched_wait(s);

    if (0 == a.drop_prefix) {
        for (int j = 1; j <= a.s; ++j) {
            mca_coll_loom_sched_reduce(s, RECV_SLOT(j), MCA_COLL_LOOM_SLOT_RESULT);
        }
    } else if (inverse) {
        int prefix = 1 == a.drop_prefix ? MCA_COLL_LOOM_SLOT_INPUT : keep_d;
        for (int j = 1; j <= a.s; ++j) {
            mca_coll_loom_sched_reduce(s, RECV_SLOT(j), MCA_COLL_LOOM_SLOT_RESULT);
        }
        mca_coll_loom_sched_unreduce(s, prefix, MCA_COLL_LOOM_SLOT_RESULT);
    } else {
        /* D < m, so at least one box lies beyond the prefix and keep_d is started */
        for (int j = 1; j <= a.s; ++j) {
            mca_coll_loom_sched_reduce(s, RECV_SLOT(j), keep_d);
        }
        mca_coll_loom_sched_copy(s, keep_d, MCA_COLL_LOOM_SLOT_RESULT);
    }
    return MCA_COLL_LOOM_OK;
}

MCA_COLL_LOOM_ALGORITHM(dissemination) = {
    .name = "dissemination",
    .colls = MCA_COLL_LOOM_SERVES(ALLREDUCE) | MCA_COLL_LOOM_SERVES(BARRIER),
    .needs = MCA_COLL_LOOM_NEEDS_COMMUTATIVE | MCA_COLL_LOOM_NEEDS_EXACT,
    .knob = "dissemination_ways",
    .knob_default = 2,
    .knob_min = 1,
    .knob_max = 16,
    .description = "n-way dissemination, adapted for P != (n+1)^k so every rank counts "
                   "exactly once",
    .reference = "End et al., section III.B, Theorem 1",
    .build = mca_coll_loom_build_dissemination,
    .can_serve = mca_coll_loom_dissemination_can_serve,
};
