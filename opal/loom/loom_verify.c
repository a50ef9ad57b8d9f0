/*
 * loom: symbolic execution of the schedules of all ranks of a communicator.
 *
 * A slot's content is the multiset of contributions it combines (count per rank) and,
 * while it is an ordered combination without take-outs, the sequence of ranks in
 * combining order.  Transfers follow the execution model of loom_sched.h under a
 * rendezvous assumption: a send completes only once its receive is posted, so a
 * schedule found deadlock-free here is deadlock-free with eager messages too.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/loom/loom_verify.h"

typedef struct {
    int *count;  /* [P] */
    int *seq;    /* [seqcap] ranks in combining order */
    int seqlen;
    bool ordered;  /* seq is meaningful */
    bool defined;
} content_t;

typedef struct msg {
    int src, dst;
    content_t *data;      /* [n] captured at post time (sends) */
    int slot;             /* the slot sent or received */
    int b0, n;            /* its block range */
    int op_blk, op_nblk;  /* as written in the schedule: both sides must agree */
    bool is_send;
    bool matched;
    struct msg *peer;     /* the matching op */
    struct msg *next;     /* channel queue */
    struct msg *all;      /* every message, freed at the end */
} msg_t;

typedef struct {
    mca_coll_loom_sched_t sched;
    content_t *slots[MCA_COLL_LOOM_MAX_SLOTS]; /* [nb] blocks of each slot in use */
    int nb;               /* blocks per slot (1 for unblocked schedules) */
    msg_t **pending;      /* transfers started since the last WAIT */
    int npending;
    int pc;
    int rounds;
    bool alias;           /* INPUT and RESULT are the same buffer (MPI_IN_PLACE) */
} rank_t;

typedef struct pool {
    struct pool *next;
} pool_t;

typedef struct {
    int P, seqcap;        /* seqcap 0: rank order is not tracked */
    content_t tmp;
    pool_t *free_counts, *free_seqs;  /* recycled arrays: the simulation churns through many */
    rank_t *ranks;
    msg_t **sendq, **recvq; /* [P] per destination rank: unmatched sends / receives, in
                               posting order (matching scans for the source) */
    msg_t *all;
    char *err;
    size_t errlen;
    bool failed;
    mca_coll_loom_verify_stats_t *stats;
} sim_t;

static void fail(sim_t *sim, const char *fmt, ...)
{
    va_list ap;
    if (sim->failed) {
        return;
    }
    sim->failed = true;
    va_start(ap, fmt);
    vsnprintf(sim->err, sim->errlen, fmt, ap);
    va_end(ap);
}

static void *pool_get(pool_t **pool, size_t bytes)
{
    void *p = *pool;
    if (NULL != p) {
        *pool = (*pool)->next;
        return p;
    }
    return malloc(bytes < sizeof(pool_t) ? sizeof(pool_t) : bytes);
}

static void pool_put(pool_t **pool, void *p)
{
    if (NULL != p) {
        ((pool_t *) p)->next = *pool;
        *pool = p;
    }
}

static void pool_drain(pool_t **pool)
{
    while (*pool) {
        pool_t *p = *pool;
        *pool = p->next;
        free(p);
    }
}

static bool content_alloc(sim_t *sim, content_t *c)
{
    c->count = pool_get(&sim->free_counts, (size_t) sim->P * sizeof(int));
    c->seq = sim->seqcap ? pool_get(&sim->free_seqs, (size_t) sim->seqcap * sizeof(int)) : NULL;
    c->seqlen = 0;
    c->ordered = sim->seqcap > 0;
    c->defined = false;
    if (NULL != c->count) {
        memset(c->count, 0, (size_t) sim->P * sizeof(int));
    }
    return NULL != c->count && (0 == sim->seqcap || NULL != c->seq);
}

static void content_free(sim_t *sim, content_t *c)
{
    pool_put(&sim->free_counts, c->count);
    pool_put(&sim->free_seqs, c->seq);
    c->count = c->seq = NULL;
}

static void content_copy(sim_t *sim, content_t *dst, const content_t *src)
{
    memcpy(dst->count, src->count, (size_t) sim->P * sizeof(int));
    if (src->seqlen > 0) {
        memcpy(dst->seq, src->seq, (size_t) src->seqlen * sizeof(int));
    }
    dst->seqlen = src->seqlen;
    dst->ordered = src->ordered;
    dst->defined = src->defined;
}

/* dst := a o b, sign = -1 for an inverse (take-out) */
static void content_combine(sim_t *sim, content_t *dst, const content_t *a, const content_t *b, int sign)
{
    content_t tmp = sim->tmp;
    for (int i = 0; i < sim->P; ++i) {
        tmp.count[i] = a->count[i] + sign * b->count[i];
    }
    tmp.ordered = a->ordered && b->ordered && sign > 0 && a->seqlen + b->seqlen <= sim->seqcap;
    if (tmp.ordered) {
        memcpy(tmp.seq, a->seq, (size_t) a->seqlen * sizeof(int));
        memcpy(tmp.seq + a->seqlen, b->seq, (size_t) b->seqlen * sizeof(int));
        tmp.seqlen = a->seqlen + b->seqlen;
    }
    else {
        tmp.seqlen = 0;
    }
    tmp.defined = true;
    content_copy(sim, dst, &tmp);
}

static content_t *slot_of(rank_t *r, int slot)
{
    if (r->alias && MCA_COLL_LOOM_SLOT_INPUT == slot) {
        slot = MCA_COLL_LOOM_SLOT_RESULT;
    }
    return r->slots[slot];
}

static int phys(const rank_t *r, int slot)
{
    return (r->alias && MCA_COLL_LOOM_SLOT_INPUT == slot) ? MCA_COLL_LOOM_SLOT_RESULT : slot;
}

/* The blocks an op covers. */
static void op_range(const rank_t *r, const mca_coll_loom_op_t *op, int *b0, int *n)
{
    *b0 = op->nblk > 0 ? op->blk : 0;
    *n = op->nblk > 0 ? op->nblk : r->nb;
}

/* A local op may not touch blocks with a transfer in flight (reads of blocks being
 * sent are fine). */
static bool busy(const rank_t *r, int slot, int b0, int n, bool write)
{
    for (int i = 0; i < r->npending; ++i) {
        const msg_t *m = r->pending[i];
        if (phys(r, m->slot) == phys(r, slot) && b0 < m->b0 + m->n && m->b0 < b0 + n &&
            (write || !m->is_send)) {
            return true;
        }
    }
    return false;
}

static void enqueue(msg_t **q, msg_t *m)
{
    while (*q) {
        q = &(*q)->next;
    }
    *q = m;
}

/* Unlinks and returns the oldest message from `src` in a destination's queue. */
static msg_t *take_first(msg_t **q, int src)
{
    for (; *q; q = &(*q)->next) {
        if ((*q)->src == src) {
            msg_t *m = *q;
            *q = m->next;
            m->next = NULL;
            return m;
        }
    }
    return NULL;
}

static bool has_from(const msg_t *q, int src)
{
    for (; q; q = q->next) {
        if (q->src == src) {
            return true;
        }
    }
    return false;
}

/* Match the oldest unmatched send and receive of the channel src -> dst (MPI
 * non-overtaking order). */
static void match_channel(sim_t *sim, int src, int dst)
{
    while (has_from(sim->sendq[dst], src) && has_from(sim->recvq[dst], src)) {
        msg_t *s = take_first(&sim->sendq[dst], src), *r = take_first(&sim->recvq[dst], src);
        if (s->op_blk != r->op_blk || s->op_nblk != r->op_nblk) {
            /* blocks of different index can differ by one element: a truncation */
            fail(sim, "rank %d sends blocks %d+%d to rank %d, which receives blocks %d+%d", src, s->op_blk,
                 s->op_nblk, dst, r->op_blk, r->op_nblk);
        }
        s->matched = r->matched = true;
        s->peer = r;
        r->peer = s;
    }
}

static void step_op(sim_t *sim, int me, const mca_coll_loom_op_t *op)
{
    rank_t *r = &sim->ranks[me];
    const int P = sim->P;

    switch (op->kind) {
    case MCA_COLL_LOOM_OP_SEND:
    case MCA_COLL_LOOM_OP_RECV: {
        bool send = MCA_COLL_LOOM_OP_SEND == op->kind;
        int slot = send ? op->src : op->dst, b0, n;
        content_t *c = slot_of(r, slot);
        msg_t *m;
        op_range(r, op, &b0, &n);
        if (op->peer < 0 || op->peer >= P || op->peer == me) {
            fail(sim, "rank %d: op %d: bad peer %d", me, r->pc, op->peer);
            return;
        }
        for (int b = b0; send && b < b0 + n; ++b) {
            if (!c[b].defined) {
                fail(sim, "rank %d: op %d sends undefined slot %d block %d", me, r->pc, slot, b);
                return;
            }
        }
        if (!send && busy(r, slot, b0, n, false)) {
            fail(sim, "rank %d: op %d receives into slot %d while it is in flight", me, r->pc, slot);
            return;
        }
        if (!send && busy(r, slot, b0, n, true)) {
            fail(sim, "rank %d: op %d receives into slot %d while it is being sent", me, r->pc, slot);
            return;
        }
        m = calloc(1, sizeof(*m));
        if (NULL != m && send) {
            m->data = calloc((size_t) n, sizeof(content_t));
        }
        if (NULL == m || (send && NULL == m->data)) {
            free(m);
            fail(sim, "out of memory");
            return;
        }
        m->all = sim->all;
        sim->all = m;
        m->is_send = send;
        m->src = send ? me : op->peer;
        m->dst = send ? op->peer : me;
        m->slot = slot;
        m->b0 = b0;
        m->n = n;
        m->op_blk = op->nblk > 0 ? op->blk : -1;
        m->op_nblk = op->nblk;
        if (send) {
            for (int b = 0; b < n; ++b) {
                if (!content_alloc(sim, &m->data[b])) {
                    fail(sim, "out of memory");
                    return;
                }
                content_copy(sim, &m->data[b], &c[b0 + b]);
            }
            enqueue(&sim->sendq[m->dst], m);
            sim->stats->messages++;
        } else {
            for (int b = b0; b < b0 + n; ++b) {
                c[b].defined = false; /* arrives at the matching WAIT */
            }
            enqueue(&sim->recvq[m->dst], m);
        }
        r->pending[r->npending++] = m;
        match_channel(sim, m->src, m->dst);
        break;
    }
    case MCA_COLL_LOOM_OP_COPY:
    case MCA_COLL_LOOM_OP_REDUCE:
    case MCA_COLL_LOOM_OP_REDUCE_R:
    case MCA_COLL_LOOM_OP_UNREDUCE: {
        content_t *srcs = slot_of(r, op->src), *dsts = slot_of(r, op->dst);
        bool reads_dst = MCA_COLL_LOOM_OP_COPY != op->kind;
        int b0, n;
        op_range(r, op, &b0, &n);
        if (busy(r, op->src, b0, n, MCA_COLL_LOOM_OP_REDUCE_R == op->kind) || busy(r, op->dst, b0, n, true)) {
            fail(sim, "rank %d: op %d touches a slot with a transfer in flight", me, r->pc);
            return;
        }
        if (MCA_COLL_LOOM_OP_COPY != op->kind && srcs == dsts) {
            fail(sim, "rank %d: op %d combines a slot with itself", me, r->pc);
            return;
        }
        for (int b = b0; b < b0 + n; ++b) {
            content_t *src = &srcs[b], *dst = &dsts[b];
            if (!src->defined || (reads_dst && !dst->defined)) {
                fail(sim, "rank %d: op %d reads an undefined slot (block %d)", me, r->pc, b);
                return;
            }
            if (MCA_COLL_LOOM_OP_COPY == op->kind) {
                if (src != dst) {
                    content_copy(sim, dst, src);
                }
                continue;
            }
            sim->stats->reductions++;
            if (MCA_COLL_LOOM_OP_REDUCE == op->kind) {
                content_combine(sim, dst, src, dst, 1);
            } else if (MCA_COLL_LOOM_OP_REDUCE_R == op->kind) {
                content_combine(sim, dst, dst, src, 1);
                src->defined = false; /* the executor may have used it as the accumulator */
            } else {
                content_combine(sim, dst, dst, src, -1);
            }
        }
        break;
    }
    default:
        fail(sim, "rank %d: op %d has unknown kind %d", me, r->pc, op->kind);
    }
}

/* Runs rank `me` as far as it can; returns true when it made progress. */
static bool advance(sim_t *sim, int me)
{
    rank_t *r = &sim->ranks[me];
    bool progress = false;

    while (!sim->failed && r->pc < r->sched.nops) {
        const mca_coll_loom_op_t *op = &r->sched.ops[r->pc];
        if (MCA_COLL_LOOM_OP_WAIT == op->kind) {
            for (int i = 0; i < r->npending; ++i) {
                if (!r->pending[i]->matched) {
                    return progress;
                }
            }
            /* deliver received data; the send's captured copy is no longer needed */
            for (int i = 0; i < r->npending; ++i) {
                msg_t *m = r->pending[i];
                if (!m->is_send) {
                    content_t *c = slot_of(r, m->slot);
                    for (int b = 0; b < m->n; ++b) {
                        content_copy(sim, &c[m->b0 + b], &m->peer->data[b]);
                        content_free(sim, &m->peer->data[b]);
                    }
                }
            }
            r->npending = 0;
            r->rounds++;
        } else {
            step_op(sim, me, op);
        }
        r->pc++;
        progress = true;
    }
    return progress;
}

int mca_coll_loom_verify(int alg, mca_coll_loom_coll_t coll, const mca_coll_loom_params_t *shape,
                         bool in_place, mca_coll_loom_verify_stats_t *stats, char *err, size_t errlen)
{
    const mca_coll_loom_alg_t *a = &mca_coll_loom_algs[alg];
    mca_coll_loom_params_t p = *shape;

    if (!mca_coll_loom_alg_serves(alg, coll)) {
        snprintf(err, errlen, "algorithm %s does not serve %s", a->name, mca_coll_loom_coll_name(coll));
        return -1;
    }
    if (NULL != a->knob && (p.knob < a->knob_min || p.knob > a->knob_max)) {
        p.knob = a->knob_default;
    }
    return mca_coll_loom_verify_builder(a->build, !(a->needs & MCA_COLL_LOOM_NEEDS_COMMUTATIVE), &p,
                                        in_place, stats, err, errlen);
}

int mca_coll_loom_verify_builder(mca_coll_loom_build_fn_t build, bool check_order,
                                 const mca_coll_loom_params_t *shape, bool in_place,
                                 mca_coll_loom_verify_stats_t *stats, char *err, size_t errlen)
{
    const int P = shape->P;
    const bool idem = 0 != (shape->call & MCA_COLL_LOOM_CALL_IDEMPOTENT);
    mca_coll_loom_verify_stats_t dummy;
    sim_t sim = {0};
    int rc = 0;

    if (NULL == stats) {
        stats = &dummy;
    }
    memset(stats, 0, sizeof(*stats));
    if (err && errlen) {
        err[0] = '\0';
    }
    sim.P = P;
    sim.seqcap = check_order ? 4 * P + 8 : 0;
    sim.err = err;
    sim.errlen = errlen;
    sim.stats = stats;
    if (P < 1) {
        fail(&sim, "P = %d", P);
        return -1;
    }
    if (!content_alloc(&sim, &sim.tmp)) {
        fail(&sim, "out of memory");
        return -1;
    }
    sim.ranks = calloc((size_t) P, sizeof(rank_t));
    sim.sendq = calloc((size_t) P, sizeof(msg_t *));
    sim.recvq = calloc((size_t) P, sizeof(msg_t *));
    if (!sim.ranks || !sim.sendq || !sim.recvq) {
        free(sim.ranks);
        free(sim.sendq);
        free(sim.recvq);
        content_free(&sim, &sim.tmp);
        fail(&sim, "out of memory");
        return -1;
    }

    /* Build every rank's schedule; run in place (aliased) when the schedule allows it. */
    for (int me = 0; me < P && !sim.failed; ++me) {
        rank_t *r = &sim.ranks[me];
        mca_coll_loom_params_t p = *shape;
        int brc;
        p.rank = me;
        mca_coll_loom_sched_init(&r->sched);
        brc = build(&r->sched, &p);
        if (MCA_COLL_LOOM_OK == brc) {
            brc = mca_coll_loom_sched_finish(&r->sched);
        }
        if (MCA_COLL_LOOM_OK != brc) {
            fail(&sim, "rank %d: building the schedule failed (%d)", me, brc);
            break;
        }
        r->alias = in_place && !r->sched.input_after_result;
        r->pending = calloc((size_t) r->sched.max_inflight + 1, sizeof(msg_t *));
        r->nb = r->sched.nblocks > 0 ? r->sched.nblocks : 1;
        for (int sl = 0; sl < r->sched.nslots && !sim.failed; ++sl) {
            r->slots[sl] = calloc((size_t) r->nb, sizeof(content_t));
            for (int b = 0; NULL != r->slots[sl] && b < r->nb; ++b) {
                if (!content_alloc(&sim, &r->slots[sl][b])) {
                    fail(&sim, "out of memory");
                    break;
                }
            }
            if (NULL == r->slots[sl]) {
                fail(&sim, "out of memory");
            }
        }
        if (!r->pending || sim.failed) {
            fail(&sim, "out of memory");
            break;
        }
        /* x_me: rank me's contribution in every block of INPUT (and RESULT in place) */
        for (int b = 0; b < r->nb; ++b) {
            content_t *x = &slot_of(r, MCA_COLL_LOOM_SLOT_INPUT)[b];
            x->count[me] = 1;
            if (sim.seqcap > 0) {
                x->seq[0] = me;
                x->seqlen = 1;
            }
            x->defined = true;
        }
    }

    /* Round-robin until everyone is done or nobody can move. */
    for (bool progress = true; progress && !sim.failed;) {
        progress = false;
        for (int me = 0; me < P && !sim.failed; ++me) {
            progress |= advance(&sim, me);
        }
    }

    for (int me = 0; me < P && !sim.failed; ++me) {
        rank_t *r = &sim.ranks[me];
        if (r->pc < r->sched.nops) {
            fail(&sim, "deadlock: rank %d stuck at op %d of %d", me, r->pc, r->sched.nops);
            break;
        }
        if (r->rounds > stats->rounds) {
            stats->rounds = r->rounds;
        }
        for (int b = 0; b < r->nb && !sim.failed; ++b) {
            content_t *res = &slot_of(r, MCA_COLL_LOOM_SLOT_RESULT)[b];
            if (!res->defined) {
                fail(&sim, "rank %d: result block %d undefined at the end", me, b);
                break;
            }
            for (int i = 0; i < P; ++i) {
                if (res->count[i] < 1 || (!idem && res->count[i] != 1)) {
                    fail(&sim, "rank %d: block %d: contribution of rank %d counted %d times", me, b, i,
                         res->count[i]);
                    break;
                }
            }
            if (!sim.failed && check_order && !idem) {
                bool in_order = res->ordered && res->seqlen == P;
                for (int i = 0; in_order && i < P; ++i) {
                    in_order = res->seq[i] == i;
                }
                if (!in_order) {
                    fail(&sim, "rank %d: block %d: contributions not combined in rank order", me, b);
                }
            }
        }
    }
    for (int dst = 0; dst < P && !sim.failed; ++dst) {
        const msg_t *m = sim.sendq[dst] ? sim.sendq[dst] : sim.recvq[dst];
        if (m) {
            fail(&sim, "unmatched %s from rank %d to rank %d", m->is_send ? "send" : "receive", m->src,
                 dst);
        }
    }

    rc = sim.failed ? -1 : 0;
    for (int me = 0; me < P; ++me) {
        rank_t *r = &sim.ranks[me];
        for (int sl = 0; sl < MCA_COLL_LOOM_MAX_SLOTS; ++sl) {
            for (int b = 0; NULL != r->slots[sl] && b < r->nb; ++b) {
                content_free(&sim, &r->slots[sl][b]);
            }
            free(r->slots[sl]);
        }
        free(r->pending);
        mca_coll_loom_sched_fini(&r->sched);
    }
    while (sim.all) {
        msg_t *m = sim.all;
        sim.all = m->all;
        for (int b = 0; NULL != m->data && b < m->n; ++b) {
            content_free(&sim, &m->data[b]);
        }
        free(m->data);
        free(m);
    }
    content_free(&sim, &sim.tmp);
    pool_drain(&sim.free_counts);
    pool_drain(&sim.free_seqs);
    free(sim.ranks);
    free(sim.sendq);
    free(sim.recvq);
    return rc;
}
