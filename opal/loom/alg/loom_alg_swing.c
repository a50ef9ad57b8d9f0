/*
 * loom algorithm `swing`: allreduce as a reduce-scatter and an allgather whose partners
 * are Swing's (De Sensi, Bonato, Saam and Hoefler, "Swing: Short-cutting Rings for
 * Higher Bandwidth Allreduce", NSDI 2024).  At step s rank r talks to
 * r + rho(s) if r is even and r - rho(s) if it is odd, rho(s) = 1 - 2 + 4 - ... +
 * (-2)^s = 1, -1, 3, -5, 11, ...: the partners of recursive halving, but near, so that on a
 * torus most steps cross one link.  log2 P steps per phase, (P-1)/P of the vector sent per
 * rank and phase (the bandwidth term of the bound), like halving_doubling.
 *
 * On a torus (a map, one rank per node, the communicator's nodes all those of the torus
 * or of a sub-torus: the nodes whose coordinates differ in some dimensions only, each of
 * a power-of-two size: a row, a plane, the whole), the steps go round the dimensions in
 * turn and the peer moves in one coordinate, and the vector is cut in 2 D parts (one per
 * direction of each of the D dimensions) that run the collective at the same time, each
 * starting in another dimension and the mirrored ones with -rho: at every step a node
 * sends on each of its 2 D links at once, so the vector leaves at 2 D links' rate (the
 * paper's multiported Swing).  Anywhere else the ranks in rank order are the ring (one
 * copy), with the 2^k + q fold of End et al., section III.A, for other sizes: ranks
 * 2i < 2q hand their contribution to 2i + 1 and get the result back.
 *
 * Which blocks go where: after steps s.. a rank's data reaches the ranks R(r, s) it can
 * walk to by taking or skipping each later step.  These sets nest (the R(., s + 1) of the
 * two partners of step s split their R(., s)), so the order in which they are
 * contiguous ranges exists: pos(x), the path to x in the tree of the sets walked from
 * rank 0 (a 1 bit where x is not in the set of the one who stays).  The vector's
 * blocks are laid out in that order; at step s a rank keeps the aligned half of its
 * range that holds pos(r) and sends the other.  Membership is cheap: modulo 2^(k+1) every
 * later step of a ring moves by +-rho(k), back and forth with the parity, so x is in
 * R(a, k) (k steps of that ring done) exactly when x = a or x = a's partner at step k,
 * modulo 2^(k+1) (x = a after the last step).
 *
 * Each block is combined on one rank (where the reduce-scatter ends it) and copied from
 * there: floating-point results are identical on every rank.  The order of the combines
 * is not rank order: commutative ops only.
 */
#include <stdlib.h>

#include "opal/loom/loom_registry.h"
#include "opal/loom/loom_torus.h"

#define RES MCA_COLL_LOOM_SLOT_RESULT
#define IN  MCA_COLL_LOOM_SLOT_INPUT
#define TMP MCA_COLL_LOOM_SLOT_SCRATCH0

#define SW_MAX_DIMS  MCA_COLL_LOOM_TORUS_MAX_DIMS
#define SW_MAX_STEPS 31
#define SW_MAX_COPIES (2 * SW_MAX_DIMS)

typedef struct {
    int p2, q;                /* the power of two that runs Swing; p2 + q ranks */
    int nd;                   /* rings: 1 (rank order) or the torus dimensions in use */
    int size[SW_MAX_DIMS];    /* their sizes (powers of two), product p2 */
    int steps;                /* log2 p2 */
    int ncopies;              /* 1, or 2 nd on a torus */
    int dim[SW_MAX_COPIES][SW_MAX_STEPS]; /* the ring of step s of copy c */
    int kth[SW_MAX_COPIES][SW_MAX_STEPS]; /* that ring's own step number */
    const int *rank_of;       /* torus: rank of virtual rank v (coordinates in mixed radix) */
} sw_t;

/* rho(k) = sum of (-2)^i, i = 0..k */
static long sw_rho(int k)
{
    long r = 0, t = 1;
    for (int i = 0; i <= k; ++i, t *= -2) {
        r += t;
    }
    return r;
}

/* Coordinate x's partner on a ring of n at its step k, mirrored when sign < 0. */
static int sw_ring_peer(int x, int k, int n, int sign)
{
    const long d = (0 == x % 2 ? sw_rho(k) : -sw_rho(k)) * sign;
    return mca_coll_loom_rank_mod(x + d, n);
}

static int sw_coord(const sw_t *w, int v, int d)
{
    for (int i = 0; i < d; ++i) {
        v /= w->size[i];
    }
    return v % w->size[d];
}

static int sw_with_coord(const sw_t *w, int v, int d, int x)
{
    int stride = 1;
    for (int i = 0; i < d; ++i) {
        stride *= w->size[i];
    }
    return v + (x - sw_coord(w, v, d)) * stride;
}

static int sw_sign(int c)
{
    return 0 == c % 2 ? 1 : -1;
}

/* Virtual rank v's partner at step s of copy c. */
static int sw_peer(const sw_t *w, int c, int v, int s)
{
    const int d = w->dim[c][s];
    return sw_with_coord(w, v, d, sw_ring_peer(sw_coord(w, v, d), w->kth[c][s], w->size[d], sw_sign(c)));
}

/* Whether x is in R(a, s) of copy c: every ring's coordinate reachable from a's with the
 * ring's steps from s on. */
static bool sw_reaches(const sw_t *w, int c, int a, int x, int s)
{
    for (int d = 0; d < w->nd; ++d) {
        const int ad = sw_coord(w, a, d), xd = sw_coord(w, x, d);
        int k = -1, m;
        for (int t = s; t < w->steps && k < 0; ++t) {
            k = w->dim[c][t] == d ? w->kth[c][t] : -1;
        }
        if (k < 0) {
            if (ad != xd) {
                return false;
            }
            continue;
        }
        m = 2 << k; /* 2^(k+1), at most the ring's size */
        if (xd % m != ad % m && xd % m != sw_ring_peer(ad, k, w->size[d], sw_sign(c)) % m) {
            return false;
        }
    }
    return true;
}

/* Position of virtual rank x in copy c's order of blocks. */
static int sw_pos(const sw_t *w, int c, int x)
{
    int a = 0, pos = 0;
    for (int s = 0; s < w->steps; ++s) {
        pos *= 2;
        if (!sw_reaches(w, c, a, x, s + 1)) {
            pos += 1;
            a = sw_peer(w, c, a, s);
        }
    }
    return pos;
}

static int sw_rank(const sw_t *w, int v)
{
    return NULL != w->rank_of ? w->rank_of[v] : v < w->q ? 2 * v + 1 : v + w->q;
}

/* The steps of each copy: round the rings in turn from ring c / 2, skipping rings whose
 * steps are all taken. */
static void sw_plan_steps(sw_t *w)
{
    for (int c = 0; c < w->ncopies; ++c) {
        int left[SW_MAX_DIMS], done[SW_MAX_DIMS] = {0}, d = c / 2;
        for (int i = 0; i < w->nd; ++i) {
            left[i] = 0;
            while ((1 << left[i]) < w->size[i]) {
                left[i]++;
            }
        }
        for (int s = 0; s < w->steps; ++s) {
            while (0 == left[d]) {
                d = (d + 1) % w->nd;
            }
            w->dim[c][s] = d;
            w->kth[c][s] = done[d]++;
            left[d]--;
            d = (d + 1) % w->nd;
        }
    }
}

/* The torus case: the communicator's ranks, one per node, are the nodes of a sub-torus
 * of power-of-two rings.  Fills w's rings, *rank_of (allocated; the caller frees it) and
 * *me, p->rank's virtual rank. */
static bool sw_torus(const mca_coll_loom_params_t *p, sw_t *w, int **rank_of, int *me)
{
    const mca_coll_loom_torus_t *t = p->torus;
    int lo[SW_MAX_DIMS], hi[SW_MAX_DIMS], used[SW_MAX_DIMS], prod = 1;

    *rank_of = NULL;
    if (NULL == t || NULL == p->torus_coords || NULL == p->node_of || p->P < 2 || t->ndims > SW_MAX_DIMS) {
        return false;
    }
    for (int d = 0; d < t->ndims; ++d) {
        lo[d] = hi[d] = p->torus_coords[p->node_of[0] * t->ndims + d];
    }
    for (int r = 1; r < p->P; ++r) {
        for (int d = 0; d < t->ndims; ++d) {
            const int x = p->torus_coords[p->node_of[r] * t->ndims + d];
            lo[d] = x < lo[d] ? x : lo[d];
            hi[d] = x > hi[d] ? x : hi[d];
        }
    }
    w->nd = 0;
    for (int d = 0; d < t->ndims; ++d) {
        if (lo[d] == hi[d]) {
            continue;
        }
        if (0 != (t->dims[d] & (t->dims[d] - 1))) {
            return false;
        }
        used[w->nd] = d;
        w->size[w->nd++] = t->dims[d];
        prod *= t->dims[d];
    }
    if (prod != p->P) {
        return false;
    }
    *rank_of = malloc(sizeof(int) * (size_t) p->P);
    if (NULL == *rank_of) {
        return false;
    }
    for (int v = 0; v < p->P; ++v) {
        (*rank_of)[v] = -1;
    }
    for (int r = 0; r < p->P; ++r) {
        int v = 0;
        for (int i = w->nd - 1; i >= 0; --i) {
            v = v * w->size[i] + p->torus_coords[p->node_of[r] * t->ndims + used[i]];
        }
        if ((*rank_of)[v] >= 0) { /* two ranks on one node */
            free(*rank_of);
            *rank_of = NULL;
            return false;
        }
        (*rank_of)[v] = r;
        if (r == p->rank) {
            *me = v;
        }
    }
    return true;
}

bool mca_coll_loom_swing_sub_torus(const mca_coll_loom_params_t *p)
{
    sw_t w = {.nd = 1};
    int *rank_of = NULL, me = 0;
    const bool fits = sw_torus(p, &w, &rank_of, &me);

    free(rank_of);
    return fits;
}

/* First block of copy c's position x (x may be p2: the end): c p2 + x, or off[x] where
 * positions hold unequal numbers of blocks (the allgather's folded pairs). */
static int sw_off(const sw_t *w, const int *off, int c, int x)
{
    return NULL != off ? off[x] : c * w->p2 + x;
}

/* Copy c's positions [x0, x1) of slot. */
static void sw_send(mca_coll_loom_sched_t *s, const sw_t *w, const int *off, int c, int peer, int slot, int x0,
                    int x1)
{
    mca_coll_loom_sched_send_blk(s, peer, slot, sw_off(w, off, c, x0), sw_off(w, off, c, x1) - sw_off(w, off, c, x0));
}

static void sw_recv(mca_coll_loom_sched_t *s, const sw_t *w, const int *off, int c, int peer, int slot, int x0,
                    int x1)
{
    mca_coll_loom_sched_recv_blk(s, peer, slot, sw_off(w, off, c, x0), sw_off(w, off, c, x1) - sw_off(w, off, c, x0));
}

/* The allgather: the steps backwards, each doubling the range of positions a rank holds
 * in slot (pos[c]: this rank's position in copy c). */
static void sw_gather(mca_coll_loom_sched_t *s, const sw_t *w, const int *off, const int *pos, int v, int slot)
{
    for (int st = w->steps - 1; st >= 0; --st) {
        const int half = w->p2 >> (st + 1);
        for (int c = 0; c < w->ncopies; ++c) {
            const int peer = sw_rank(w, sw_peer(w, c, v, st));
            const int mine = pos[c] / half * half, other = mine ^ half;
            sw_send(s, w, off, c, peer, slot, mine, mine + half);
            sw_recv(s, w, off, c, peer, slot, other, other + half);
        }
        mca_coll_loom_sched_wait(s);
    }
}

/* Virtual rank v's reduce-scatter and allgather over the copies, step by step (every
 * copy's step s listed before any step s + 1: a peer can be another copy's peer at
 * another step, and a channel posts in list order).  `fresh`: this rank's partial is
 * its INPUT, RESULT is unwritten. */
static void sw_allreduce(mca_coll_loom_sched_t *s, const sw_t *w, int v, bool fresh)
{
    int pos[SW_MAX_COPIES];

    for (int c = 0; c < w->ncopies; ++c) {
        pos[c] = sw_pos(w, c, v);
    }
    for (int st = 0; st < w->steps; ++st) {
        const int half = w->p2 >> (st + 1);
        for (int c = 0; c < w->ncopies; ++c) {
            const int peer = sw_rank(w, sw_peer(w, c, v, st));
            const int keep = pos[c] / half * half, other = keep ^ half;
            sw_send(s, w, NULL, c, peer, fresh ? IN : RES, other, other + half);
            sw_recv(s, w, NULL, c, peer, fresh ? RES : TMP, keep, keep + half);
        }
        mca_coll_loom_sched_wait(s);
        for (int c = 0; c < w->ncopies; ++c) {
            const int keep = pos[c] / half * half;
            mca_coll_loom_sched_reduce_blk(s, fresh ? IN : TMP, RES, c * w->p2 + keep, half);
        }
        fresh = false;
    }
    sw_gather(s, w, NULL, pos, v, RES);
}

/* MPI_Allgather: RESULT holds the parts in rank order (on a torus each cut in ncopies
 * segments, copy c's the c-th), Swing moves ranges of positions in its own order.  So the
 * rank's part goes to its positions in TMP, the allgather runs there, and every part is
 * moved to its place in RESULT at the end: block moves, which need equal blocks (the
 * parts are; a count that the copies do not divide goes to the next component).  Ranks
 * folded into a pair hold two parts at one position: off[] gives each position its
 * blocks. */
static int sw_allgather(mca_coll_loom_sched_t *s, const sw_t *w, int r, int v)
{
    const int nc = w->ncopies;
    int *pos_of = malloc(sizeof(int) * (size_t) w->p2 * (size_t) nc), *off = NULL, *at = NULL, pos[SW_MAX_COPIES] = {0};

    if (NULL == pos_of) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    for (int c = 0; c < nc; ++c) {
        for (int x = 0; x < w->p2; ++x) {
            pos_of[c * w->p2 + x] = sw_pos(w, c, x);
        }
        pos[c] = pos_of[c * w->p2 + v];
    }
    if (NULL == w->rank_of) {
        /* rank order: position x holds virtual rank at[x]'s parts, 2 below q */
        off = malloc(sizeof(int) * (size_t) (w->p2 + 1));
        at = malloc(sizeof(int) * (size_t) w->p2);
        if (NULL == off || NULL == at) {
            free(pos_of);
            free(off);
            free(at);
            return MCA_COLL_LOOM_ERR_NOMEM;
        }
        for (int x = 0; x < w->p2; ++x) {
            at[pos_of[x]] = x;
        }
        off[0] = 0;
        for (int x = 0; x < w->p2; ++x) {
            off[x + 1] = off[x] + (at[x] < w->q ? 2 : 1);
        }
        if (r < 2 * w->q) {
            mca_coll_loom_sched_recv_blk(s, r - 1, RES, r - 1, 1);
            mca_coll_loom_sched_wait(s);
        }
        mca_coll_loom_sched_copy_move(s, RES, r < 2 * w->q ? r - 1 : r, TMP, off[pos[0]], r < 2 * w->q ? 2 : 1);
    } else {
        for (int c = 0; c < nc; ++c) {
            mca_coll_loom_sched_copy_move(s, RES, r * nc + c, TMP, c * w->p2 + pos[c], 1);
        }
    }
    sw_gather(s, w, off, pos, v, TMP);
    for (int c = 0; c < nc; ++c) {
        for (int x = 0; x < w->p2; ++x) {
            const int px = pos_of[c * w->p2 + x];
            if (x == v) {
                continue; /* its parts are in place */
            }
            if (NULL != off) {
                mca_coll_loom_sched_copy_move(s, TMP, off[px], RES, x < w->q ? 2 * x : x + w->q, x < w->q ? 2 : 1);
            } else {
                mca_coll_loom_sched_copy_move(s, TMP, c * w->p2 + px, RES, w->rank_of[x] * nc + c, 1);
            }
        }
    }
    free(pos_of);
    free(off);
    free(at);
    return MCA_COLL_LOOM_OK;
}

static int build_swing(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const int P = p->P, r = p->rank;
    sw_t w = {.p2 = 1, .nd = 1, .ncopies = 1};
    int *rank_of = NULL, me = 0;

    const bool allgather = MCA_COLL_LOOM_COLL_ALLGATHER == p->coll;
    int rc = MCA_COLL_LOOM_OK;

    if (P < 1 || r < 0 || r >= P || (MCA_COLL_LOOM_COLL_ALLREDUCE != p->coll && !allgather)) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    if (1 == P) {
        if (!allgather) {
            mca_coll_loom_sched_copy(s, IN, RES);
        }
        return MCA_COLL_LOOM_OK;
    }
    if (sw_torus(p, &w, &rank_of, &me)) {
        w.p2 = P;
        w.rank_of = rank_of;
        w.ncopies = 2 * w.nd;
    } else {
        while (2 * w.p2 <= P) {
            w.p2 *= 2;
        }
        w.q = P - w.p2;
        w.nd = 1; /* sw_torus may have left its rings */
        w.size[0] = w.p2;
    }
    while ((1 << w.steps) < w.p2) {
        w.steps++;
    }
    sw_plan_steps(&w);

    if (allgather) {
        /* P parts of ncopies segments */
        mca_coll_loom_sched_set_segmented_blocks(s, P, w.ncopies);
        if (r < 2 * w.q && 0 == r % 2) {
            mca_coll_loom_fold_hand_over(s, p->coll, r, P);
            return MCA_COLL_LOOM_OK;
        }
        rc = sw_allgather(s, &w, r, NULL != rank_of ? me : r < 2 * w.q ? r / 2 : r - w.q);
        free(rank_of);
        if (MCA_COLL_LOOM_OK == rc && r < 2 * w.q) {
            mca_coll_loom_fold_give_back(s, p->coll, r, P);
        }
        return rc;
    }
    mca_coll_loom_sched_set_blocks(s, w.ncopies * w.p2);

    if (NULL != rank_of) {
        sw_allreduce(s, &w, me, true);
        free(rank_of);
        return MCA_COLL_LOOM_OK;
    }
    if (r < 2 * w.q && 0 == r % 2) {
        mca_coll_loom_fold_hand_over(s, p->coll, r, w.p2);
        return MCA_COLL_LOOM_OK;
    }
    if (r < 2 * w.q) {
        mca_coll_loom_sched_recv_blk(s, r - 1, RES, 0, w.p2);
        mca_coll_loom_sched_wait(s);
        mca_coll_loom_sched_reduce_blk(s, IN, RES, 0, w.p2);
    }
    sw_allreduce(s, &w, r < 2 * w.q ? r / 2 : r - w.q, r >= 2 * w.q);
    if (r < 2 * w.q) {
        mca_coll_loom_fold_give_back(s, p->coll, r, w.p2);
    }
    return MCA_COLL_LOOM_OK;
}

MCA_COLL_LOOM_ALGORITHM(swing) = {
    .name = "swing",
    .colls = MCA_COLL_LOOM_SERVES(ALLREDUCE) | MCA_COLL_LOOM_SERVES(ALLGATHER),
    .needs = MCA_COLL_LOOM_NEEDS_COMMUTATIVE,
    .description = "Swing: reduce-scatter + allgather with partners r +- 1, 3, 5, 11, ... "
                   "(2 log2 P steps, (P-1)/P of the vector per phase); on a torus whose "
                   "dimensions in use are powers of two (one rank per node, the whole torus or "
                   "a sub-torus) the steps take the dimensions in turn and the vector runs in "
                   "2 D parts at once, one per link of a node; elsewhere in rank order (2^k+q "
                   "fold); commutative ops, bit-identical results",
    .reference = "De Sensi et al., Swing (NSDI 2024)",
    .build = build_swing,
};
