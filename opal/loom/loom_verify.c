/*
 * loom: symbolic execution of the schedules of all ranks of a communicator.
 *
 * A block's content is the multiset of contributions it combines, kept as a sorted
 * list of disjoint rank intervals ("spans"), each with a multiplicity.  Partial
 * results of ring, tree, dissemination and Bruck schedules cover cyclically
 * contiguous rank ranges, so a list is one or two spans long whatever P is; a count
 * per rank made every copy and check O(P), which capped the ring at P = 128.
 *
 * Rank order needs no sequence either: a combination can only end up as
 * x_0 o x_1 o ... o x_{P-1} if every partial combination on the way is strictly
 * increasing in rank, so one flag per content says "combined in strictly increasing
 * rank order"; a o b keeps it iff both have it and max(a) < min(b).  Take-outs
 * (UNREDUCE) drop it.
 *
 * Transfers follow the execution model of loom_sched.h under a rendezvous
 * assumption: a send completes only once its receive is posted, so a schedule found
 * deadlock-free here is deadlock-free with eager messages too.  A matched transfer
 * moves its data at once: the sender may not write the blocks and the receiver may
 * neither read nor write them before their WAITs, so that cannot be told apart from
 * delivery at the receiver's WAIT, and no send has to keep a copy.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/loom/loom_verify.h"

#define INLINE_SPANS 2
#define MSG_CHUNK    1024

/* Ranks lo..hi, each combined `mult` times (negative after a surplus take-out). */
typedef struct {
    int32_t lo, hi, mult;
} span_t;

typedef struct {
    int32_t n;      /* spans, sorted, disjoint, mult != 0, neighbours with equal mult merged */
    int32_t cap;    /* heap capacity; <= INLINE_SPANS while the spans are inline */
    bool defined;   /* written since the start (or since a receive was posted into it) */
    bool ordered;   /* combined in strictly increasing rank order, each rank once */
    union {
        span_t in[INLINE_SPANS];
        span_t *heap;
    } u;
} content_t;

typedef struct msg {
    int src, dst;
    int slot;             /* the slot sent or received */
    int b0, n;            /* its block range */
    int op_blk, op_nblk;  /* as written in the schedule: both sides must agree */
    bool is_send;
    bool matched;
    struct msg *next;     /* channel queue while unmatched; free list once waited for */
} msg_t;

typedef struct msg_chunk {
    struct msg_chunk *next;
    msg_t msgs[MSG_CHUNK];
} msg_chunk_t;

typedef struct {
    /* what advance() touches on every call first: one cache line */
    const mca_coll_loom_op_t *ops;
    int nops;
    int pc;
    int npending;
    int unmatched;        /* pending transfers not matched yet */
    msg_t **pending;      /* transfers started since the last WAIT */
    bool waiting;         /* stopped at a WAIT until `unmatched` drops to 0 */
    bool alias;           /* INPUT and RESULT are the same buffer (MPI_IN_PLACE) */
    int rounds;
    const mca_coll_loom_sched_t *sched;
    content_t *slots[MCA_COLL_LOOM_MAX_SLOTS]; /* [nb] blocks of each slot in use */
} rank_t;

typedef struct {
    int P;
    int nb, nseg;         /* the block layout every rank shares (1, 1 when unblocked) */
    mca_coll_loom_coll_t coll;
    int root;
    bool input_unused;    /* bcast, allgather: INPUT must not be read */
    span_t *tmp;          /* scratch for combining */
    int tmpcap;
    rank_t *ranks;
    int *ready;           /* ranks that can move (each at most once) */
    int nready;
    content_t *contents;  /* every block of every slot of every rank */
    size_t ncontents;
    msg_t **sendq, **recvq; /* [P] per destination rank: unmatched sends / receives, in
                               posting order (matching scans for the source) */
    msg_chunk_t *chunks;
    msg_t *free_msgs;
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
    if (NULL == sim->err || 0 == sim->errlen) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(sim->err, sim->errlen, fmt, ap);
    va_end(ap);
}

/* ---- contents ------------------------------------------------------------------ */

static inline span_t *spans(content_t *c)
{
    return c->cap > INLINE_SPANS ? c->u.heap : c->u.in;
}

static inline const span_t *cspans(const content_t *c)
{
    return c->cap > INLINE_SPANS ? c->u.heap : c->u.in;
}

static void content_free(content_t *c)
{
    if (c->cap > INLINE_SPANS) {
        free(c->u.heap);
    }
    c->cap = 0;
    c->n = 0;
}

static bool content_set(sim_t *sim, content_t *c, const span_t *s, int n)
{
    if (n > INLINE_SPANS && n > c->cap) {
        int cap = 2 * n;
        span_t *h = c->cap > INLINE_SPANS ? realloc(c->u.heap, (size_t) cap * sizeof(*h))
                                          : malloc((size_t) cap * sizeof(*h));
        if (NULL == h) {
            fail(sim, "out of memory");
            return false;
        }
        c->u.heap = h;
        c->cap = cap;
    }
    memmove(spans(c), s, (size_t) n * sizeof(*s));
    c->n = n;
    return true;
}

static void content_copy(sim_t *sim, content_t *dst, const content_t *src)
{
    if (dst == src) {
        return;
    }
    if (content_set(sim, dst, cspans(src), src->n)) {
        dst->defined = src->defined;
        dst->ordered = src->ordered;
    }
}

static void content_single(sim_t *sim, content_t *c, int rank)
{
    span_t s = {rank, rank, 1};
    content_set(sim, c, &s, 1);
    c->defined = true;
    c->ordered = true;
}

/* Appends ranks lo..hi with multiplicity m to a normalized list. */
static inline void push_span(span_t *out, int *n, int lo, int hi, int m)
{
    if (0 == m) {
        return;
    }
    if (*n > 0 && out[*n - 1].hi + 1 == lo && out[*n - 1].mult == m) {
        out[*n - 1].hi = hi;
        return;
    }
    out[(*n)++] = (span_t) {lo, hi, m};
}

/* dst := a o b, sign = -1 for an inverse (take-out of b).  dst may be a or b. */
static void content_combine(sim_t *sim, content_t *dst, const content_t *a, const content_t *b, int sign)
{
    const span_t *x = cspans(a), *y = cspans(b);
    const int nx = a->n, ny = b->n;
    int i = 0, j = 0, n = 0, xlo = nx ? x[0].lo : 0, ylo = ny ? y[0].lo : 0;
    bool ordered;

    if (2 * (nx + ny) + 1 > sim->tmpcap) {
        int cap = 2 * (2 * (nx + ny) + 1);
        span_t *t = realloc(sim->tmp, (size_t) cap * sizeof(*t));
        if (NULL == t) {
            fail(sim, "out of memory");
            return;
        }
        sim->tmp = t;
        sim->tmpcap = cap;
    }
    /* sweep both lists; xlo / ylo: the first rank of the current span not yet emitted */
    while (i < nx || j < ny) {
        if (j >= ny || (i < nx && xlo < ylo)) {
            int hi = x[i].hi;
            if (j < ny && ylo <= hi) {
                hi = ylo - 1;
            }
            push_span(sim->tmp, &n, xlo, hi, x[i].mult);
            xlo = hi + 1;
            if (xlo > x[i].hi && ++i < nx) {
                xlo = x[i].lo;
            }
        } else if (i >= nx || ylo < xlo) {
            int hi = y[j].hi;
            if (i < nx && xlo <= hi) {
                hi = xlo - 1;
            }
            push_span(sim->tmp, &n, ylo, hi, sign * y[j].mult);
            ylo = hi + 1;
            if (ylo > y[j].hi && ++j < ny) {
                ylo = y[j].lo;
            }
        } else {
            int hi = x[i].hi < y[j].hi ? x[i].hi : y[j].hi;
            push_span(sim->tmp, &n, xlo, hi, x[i].mult + sign * y[j].mult);
            xlo = ylo = hi + 1;
            if (xlo > x[i].hi && ++i < nx) {
                xlo = x[i].lo;
            }
            if (ylo > y[j].hi && ++j < ny) {
                ylo = y[j].lo;
            }
        }
    }
    ordered = sign > 0 && a->ordered && b->ordered && (0 == nx || 0 == ny || x[nx - 1].hi < y[0].lo);
    if (content_set(sim, dst, sim->tmp, n)) {
        dst->defined = true;
        dst->ordered = ordered;
    }
}

/* Does c hold ranks lo..hi exactly once each (at least once when `idem`) and
 * nothing else?  If not, *bad is the lowest rank counted wrongly, *count its count. */
static bool content_is(const content_t *c, int lo, int hi, bool idem, int *bad, int *count)
{
    const span_t *s = cspans(c);
    int pos = lo; /* the lowest rank of lo..hi not yet seen */

    for (int i = 0; i < c->n; ++i) {
        if (s[i].lo < lo || (s[i].lo > hi && pos > hi)) {
            *bad = s[i].lo; /* outside lo..hi */
            *count = s[i].mult;
            return false;
        }
        if (s[i].lo > pos) {
            *bad = pos; /* a gap */
            *count = 0;
            return false;
        }
        if (s[i].mult < 1 || (!idem && s[i].mult != 1)) {
            *bad = s[i].lo;
            *count = s[i].mult;
            return false;
        }
        if (s[i].hi > hi) {
            *bad = hi + 1;
            *count = s[i].mult;
            return false;
        }
        pos = s[i].hi + 1;
    }
    if (pos <= hi) {
        *bad = pos;
        *count = 0;
        return false;
    }
    return true;
}

/* ---- one rank's view --------------------------------------------------------- */

static int phys(const rank_t *r, int slot)
{
    return (r->alias && MCA_COLL_LOOM_SLOT_INPUT == slot) ? MCA_COLL_LOOM_SLOT_RESULT : slot;
}

static content_t *slot_of(rank_t *r, int slot)
{
    return r->slots[phys(r, slot)];
}

/* The blocks an op covers. */
static void op_range(const sim_t *sim, const mca_coll_loom_op_t *op, int *b0, int *n)
{
    *b0 = op->nblk > 0 ? op->blk : 0;
    *n = op->nblk > 0 ? op->nblk : sim->nb;
}

/* The transfer in flight that an access to blocks b0..b0+n-1 of `slot` conflicts with,
 * or NULL: blocks being received may not be read or written, blocks being sent may
 * be read. */
static const msg_t *busy(const rank_t *r, int slot, int b0, int n, bool write)
{
    for (int i = 0; i < r->npending; ++i) {
        const msg_t *m = r->pending[i];
        if (phys(r, m->slot) == phys(r, slot) && b0 < m->b0 + m->n && m->b0 < b0 + n &&
            (write || !m->is_send)) {
            return m;
        }
    }
    return NULL;
}

static msg_t *msg_new(sim_t *sim)
{
    msg_t *m = sim->free_msgs;
    if (NULL == m) {
        msg_chunk_t *c = malloc(sizeof(*c));
        if (NULL == c) {
            return NULL;
        }
        c->next = sim->chunks;
        sim->chunks = c;
        for (int i = 0; i < MSG_CHUNK - 1; ++i) {
            c->msgs[i].next = &c->msgs[i + 1];
        }
        c->msgs[MSG_CHUNK - 1].next = NULL;
        m = &c->msgs[0];
    }
    sim->free_msgs = m->next;
    memset(m, 0, sizeof(*m));
    return m;
}

static void msg_free(sim_t *sim, msg_t *m)
{
    m->next = sim->free_msgs;
    sim->free_msgs = m;
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

/* One transfer of rank me was matched; wake it if that was all its WAIT needs. */
static void unblock(sim_t *sim, int me)
{
    rank_t *r = &sim->ranks[me];
    if (0 == --r->unmatched && r->waiting) {
        r->waiting = false;
        sim->ready[sim->nready++] = me;
    }
}

/* Match the oldest unmatched send and receive of the channel src -> dst (MPI
 * non-overtaking order) and move the data. */
static void match_channel(sim_t *sim, int src, int dst)
{
    while (!sim->failed && has_from(sim->sendq[dst], src) && has_from(sim->recvq[dst], src)) {
        msg_t *s = take_first(&sim->sendq[dst], src), *r = take_first(&sim->recvq[dst], src);
        content_t *from = slot_of(&sim->ranks[src], s->slot), *to = slot_of(&sim->ranks[dst], r->slot);
        if (s->op_blk != r->op_blk || s->op_nblk != r->op_nblk) {
            /* blocks of different index can differ by one element: a truncation */
            fail(sim, "rank %d sends blocks %d+%d to rank %d, which receives blocks %d+%d", src, s->op_blk,
                 s->op_nblk, dst, r->op_blk, r->op_nblk);
            return;
        }
        s->matched = r->matched = true;
        unblock(sim, src);
        unblock(sim, dst);
        for (int b = 0; b < s->n; ++b) {
            content_copy(sim, &to[r->b0 + b], &from[s->b0 + b]);
        }
    }
}

static const char *slot_name(int slot)
{
    return MCA_COLL_LOOM_SLOT_RESULT == slot ? "RESULT" : MCA_COLL_LOOM_SLOT_INPUT == slot ? "INPUT" : "scratch";
}

static bool reads_unused_input(sim_t *sim, int me, int slot)
{
    if (sim->input_unused && MCA_COLL_LOOM_SLOT_INPUT == slot) {
        fail(sim, "rank %d: op %d reads INPUT, which %s does not use", me, sim->ranks[me].pc,
             mca_coll_loom_coll_name(sim->coll));
        return true;
    }
    return false;
}

static void step_transfer(sim_t *sim, int me, const mca_coll_loom_op_t *op)
{
    rank_t *r = &sim->ranks[me];
    const bool send = MCA_COLL_LOOM_OP_SEND == op->kind;
    const int slot = send ? op->src : op->dst;
    content_t *c = slot_of(r, slot);
    const msg_t *conflict;
    msg_t *m;
    int b0, n;

    op_range(sim, op, &b0, &n);
    if (op->peer < 0 || op->peer >= sim->P || op->peer == me) {
        fail(sim, "rank %d: op %d: bad peer %d", me, r->pc, op->peer);
        return;
    }
    if (send && reads_unused_input(sim, me, slot)) {
        return;
    }
    conflict = busy(r, slot, b0, n, !send);
    if (NULL != conflict) {
        fail(sim, "rank %d: op %d %s slot %d (%s) blocks %d+%d while block %d+%d is being %s", me, r->pc,
             send ? "sends" : "receives into", slot, slot_name(slot), b0, n, conflict->b0, conflict->n,
             conflict->is_send ? "sent" : "received");
        return;
    }
    for (int b = b0; send && b < b0 + n; ++b) {
        if (!c[b].defined) {
            fail(sim, "rank %d: op %d sends undefined slot %d (%s) block %d", me, r->pc, slot, slot_name(slot),
                 b);
            return;
        }
    }
    m = msg_new(sim);
    if (NULL == m) {
        fail(sim, "out of memory");
        return;
    }
    m->is_send = send;
    m->src = send ? me : op->peer;
    m->dst = send ? op->peer : me;
    m->slot = slot;
    m->b0 = b0;
    m->n = n;
    m->op_blk = op->nblk > 0 ? op->blk : -1;
    m->op_nblk = op->nblk;
    if (send) {
        enqueue(&sim->sendq[m->dst], m);
        sim->stats->messages++;
    } else {
        for (int b = b0; b < b0 + n; ++b) {
            c[b].defined = false; /* arrives when the transfer is matched */
        }
        enqueue(&sim->recvq[m->dst], m);
    }
    r->pending[r->npending++] = m;
    r->unmatched++;
    match_channel(sim, m->src, m->dst);
}

static void step_local(sim_t *sim, int me, const mca_coll_loom_op_t *op)
{
    rank_t *r = &sim->ranks[me];
    content_t *srcs = slot_of(r, op->src), *dsts = slot_of(r, op->dst);
    const bool reads_dst = MCA_COLL_LOOM_OP_COPY != op->kind;
    int b0, n;

    op_range(sim, op, &b0, &n);
    if (reads_unused_input(sim, me, op->src) || (reads_dst && reads_unused_input(sim, me, op->dst))) {
        return;
    }
    if (busy(r, op->src, b0, n, MCA_COLL_LOOM_OP_REDUCE_R == op->kind) || busy(r, op->dst, b0, n, true)) {
        fail(sim, "rank %d: op %d touches a slot with a transfer in flight", me, r->pc);
        return;
    }
    if (MCA_COLL_LOOM_OP_COPY != op->kind && srcs == dsts) {
        fail(sim, "rank %d: op %d combines a slot with itself", me, r->pc);
        return;
    }
    for (int b = b0; b < b0 + n && !sim->failed; ++b) {
        content_t *src = &srcs[b], *dst = &dsts[b];
        if (!src->defined || (reads_dst && !dst->defined)) {
            fail(sim, "rank %d: op %d reads an undefined slot (%s block %d)", me, r->pc,
                 slot_name(src->defined ? op->dst : op->src), b);
            return;
        }
        switch (op->kind) {
        case MCA_COLL_LOOM_OP_COPY:
            content_copy(sim, dst, src);
            break;
        case MCA_COLL_LOOM_OP_REDUCE:
            sim->stats->reductions++;
            content_combine(sim, dst, src, dst, 1);
            break;
        case MCA_COLL_LOOM_OP_REDUCE_R:
            sim->stats->reductions++;
            content_combine(sim, dst, dst, src, 1);
            src->defined = false; /* the executor may have used it as the accumulator */
            break;
        default:
            sim->stats->reductions++;
            content_combine(sim, dst, dst, src, -1);
            break;
        }
    }
}

/* Runs rank `me` until it finishes or waits for a transfer not matched yet. */
static void advance(sim_t *sim, int me)
{
    rank_t *r = &sim->ranks[me];

    while (!sim->failed && r->pc < r->nops) {
        const mca_coll_loom_op_t *op = &r->ops[r->pc];
        switch (op->kind) {
        case MCA_COLL_LOOM_OP_WAIT:
            if (r->unmatched > 0) {
                r->waiting = true; /* the last match pushes it back on the ready stack */
                return;
            }
            for (int i = 0; i < r->npending; ++i) {
                msg_free(sim, r->pending[i]);
            }
            r->npending = 0;
            r->rounds++;
            break;
        case MCA_COLL_LOOM_OP_SEND:
        case MCA_COLL_LOOM_OP_RECV:
            step_transfer(sim, me, op);
            break;
        case MCA_COLL_LOOM_OP_COPY:
        case MCA_COLL_LOOM_OP_REDUCE:
        case MCA_COLL_LOOM_OP_REDUCE_R:
        case MCA_COLL_LOOM_OP_UNREDUCE:
            step_local(sim, me, op);
            break;
        default:
            fail(sim, "rank %d: op %d has unknown kind %d", me, r->pc, op->kind);
        }
        r->pc++;
    }
}

/* ---- per-collective semantics ------------------------------------------------- */

static bool is_rooted(mca_coll_loom_coll_t coll)
{
    return MCA_COLL_LOOM_COLL_BCAST == coll || MCA_COLL_LOOM_COLL_REDUCE == coll;
}

static bool is_scattered(mca_coll_loom_coll_t coll)
{
    return MCA_COLL_LOOM_COLL_ALLGATHER == coll || MCA_COLL_LOOM_COLL_REDUCE_SCATTER == coll ||
           MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK == coll;
}

/* May rank `me` run with INPUT and RESULT as one buffer (MPI_IN_PLACE)?  Only where
 * the collective has an in-place form at this level, and only where the schedule
 * does not read INPUT after writing RESULT (the component saves a copy then). */
static bool aliased(const sim_t *sim, const rank_t *r, int me, bool in_place)
{
    if (!in_place || r->sched->input_after_result) {
        return false;
    }
    switch (sim->coll) {
    case MCA_COLL_LOOM_COLL_ALLREDUCE:
    case MCA_COLL_LOOM_COLL_BARRIER:
    case MCA_COLL_LOOM_COLL_SCAN:
    case MCA_COLL_LOOM_COLL_EXSCAN:
        return true;
    case MCA_COLL_LOOM_COLL_REDUCE:
        return me == sim->root;
    default:
        return false;
    }
}

/* What a rank's slots hold before its schedule runs (registry.h, above
 * mca_coll_loom_params_t).  Blocks not set here are undefined: reading them is an
 * error. */
static void initial_contents(sim_t *sim, int me)
{
    rank_t *r = &sim->ranks[me];

    switch (sim->coll) {
    case MCA_COLL_LOOM_COLL_BCAST:
        for (int b = 0; me == sim->root && b < sim->nb; ++b) {
            content_single(sim, &slot_of(r, MCA_COLL_LOOM_SLOT_RESULT)[b], sim->root);
        }
        break;
    case MCA_COLL_LOOM_COLL_ALLGATHER:
        for (int b = me * sim->nseg; b < (me + 1) * sim->nseg; ++b) {
            content_single(sim, &slot_of(r, MCA_COLL_LOOM_SLOT_RESULT)[b], me);
        }
        break;
    default:
        for (int b = 0; b < sim->nb; ++b) {
            content_single(sim, &slot_of(r, MCA_COLL_LOOM_SLOT_INPUT)[b], me);
        }
        break;
    }
}

/* Checks RESULT block b of rank me against ranks lo..hi. */
static void check_block(sim_t *sim, int me, int b, int lo, int hi, bool idem, bool order)
{
    content_t *res = &slot_of(&sim->ranks[me], MCA_COLL_LOOM_SLOT_RESULT)[b];
    int bad, count;

    if (!res->defined) {
        fail(sim, "rank %d: result block %d undefined at the end", me, b);
    } else if (!content_is(res, lo, hi, idem, &bad, &count)) {
        fail(sim, "rank %d: block %d: contribution of rank %d counted %d times", me, b, bad, count);
    } else if (order && !idem && !res->ordered) {
        fail(sim, "rank %d: block %d: contributions not combined in rank order", me, b);
    }
}

static void final_checks(sim_t *sim, int me, bool idem, bool order)
{
    const int P = sim->P, nseg = sim->nseg;

    switch (sim->coll) {
    case MCA_COLL_LOOM_COLL_BCAST:
        for (int b = 0; b < sim->nb && !sim->failed; ++b) {
            check_block(sim, me, b, sim->root, sim->root, false, false);
        }
        break;
    case MCA_COLL_LOOM_COLL_REDUCE:
        for (int b = 0; me == sim->root && b < sim->nb && !sim->failed; ++b) {
            check_block(sim, me, b, 0, P - 1, idem, order);
        }
        break;
    case MCA_COLL_LOOM_COLL_ALLGATHER:
        for (int b = 0; b < sim->nb && !sim->failed; ++b) {
            check_block(sim, me, b, b / nseg, b / nseg, false, false);
        }
        break;
    case MCA_COLL_LOOM_COLL_REDUCE_SCATTER:
    case MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK:
        for (int b = me * nseg; b < (me + 1) * nseg && !sim->failed; ++b) {
            check_block(sim, me, b, 0, P - 1, idem, order);
        }
        break;
    case MCA_COLL_LOOM_COLL_SCAN:
        for (int b = 0; b < sim->nb && !sim->failed; ++b) {
            check_block(sim, me, b, 0, me, idem, order);
        }
        break;
    case MCA_COLL_LOOM_COLL_EXSCAN:
        for (int b = 0; me > 0 && b < sim->nb && !sim->failed; ++b) {
            check_block(sim, me, b, 0, me - 1, idem, order);
        }
        break;
    default:
        for (int b = 0; b < sim->nb && !sim->failed; ++b) {
            check_block(sim, me, b, 0, P - 1, idem, order);
        }
        break;
    }
}

/* Every rank must use one block layout (transfers map block i to block i), and the
 * scattered collectives need it to have one part per rank. */
static void agree_on_layout(sim_t *sim)
{
    bool have = false;

    sim->nb = 1;
    sim->nseg = 1;
    for (int me = 0; me < sim->P && !sim->failed; ++me) {
        const mca_coll_loom_sched_t *s = sim->ranks[me].sched;
        if (s->nblocks <= 0) {
            continue; /* whole-slot ops only: they cover every block of any layout */
        }
        if (!have) {
            have = true;
            sim->nb = s->nblocks;
            sim->nseg = s->nseg > 0 ? s->nseg : 1;
        } else if (s->nblocks != sim->nb || (s->nseg > 0 ? s->nseg : 1) != sim->nseg) {
            fail(sim, "rank %d uses %d blocks of %d segments, another rank %d of %d", me, s->nblocks, s->nseg,
                 sim->nb, sim->nseg);
        }
    }
    if (!sim->failed && sim->nb % sim->nseg != 0) {
        fail(sim, "%d blocks are not whole parts of %d segments", sim->nb, sim->nseg);
    }
    if (!sim->failed && is_scattered(sim->coll) && sim->nb / sim->nseg != sim->P) {
        fail(sim, "%s needs one part per rank, the schedules have %d parts for P = %d",
             mca_coll_loom_coll_name(sim->coll), sim->nb / sim->nseg, sim->P);
    }
}

/* ---- entry points ------------------------------------------------------------ */

int mca_coll_loom_verify(int alg, mca_coll_loom_coll_t coll, const mca_coll_loom_params_t *shape,
                         bool in_place, mca_coll_loom_verify_stats_t *stats, char *err, size_t errlen)
{
    const mca_coll_loom_alg_t *a;
    mca_coll_loom_verify_stats_t total = {0}, one;
    mca_coll_loom_params_t p = *shape;
    bool order;
    int rc = 0;

    if (alg < 0 || alg >= mca_coll_loom_num_algs) {
        snprintf(err, errlen, "no algorithm %d", alg);
        return -1;
    }
    a = &mca_coll_loom_algs[alg];
    /* rank order is owed on non-commutative calls by the algorithms that serve them;
     * a commutative call may be combined in any order (binomial reduce then uses a
     * tree rooted at the root) */
    order = !(a->needs & MCA_COLL_LOOM_NEEDS_COMMUTATIVE) && !(p.call & MCA_COLL_LOOM_CALL_COMMUTATIVE);
    if (!mca_coll_loom_alg_serves(alg, coll)) {
        snprintf(err, errlen, "algorithm %s does not serve %s", a->name, mca_coll_loom_coll_name(coll));
        return -1;
    }
    if (NULL != a->knob && (p.knob < a->knob_min || p.knob > a->knob_max)) {
        p.knob = a->knob_default;
    }
    p.coll = coll;
    if (!is_rooted(coll) && MCA_COLL_LOOM_VERIFY_ALL_ROOTS == p.root) {
        p.root = 0;
    }
    if (!is_rooted(coll) || MCA_COLL_LOOM_VERIFY_ALL_ROOTS != shape->root) {
        return mca_coll_loom_verify_builder(a->build, order, &p, in_place, stats, err, errlen);
    }
    for (int root = 0; root < p.P && 0 == rc; ++root) {
        p.root = root;
        rc = mca_coll_loom_verify_builder(a->build, order, &p, in_place, &one, err, errlen);
        if (0 != rc && NULL != err && errlen > 0) {
            char msg[256];
            snprintf(msg, sizeof(msg), "%s", err);
            snprintf(err, errlen, "root %d: %s", root, msg);
        }
        total.rounds = one.rounds > total.rounds ? one.rounds : total.rounds;
        total.messages += one.messages;
        total.reductions += one.reductions;
    }
    if (NULL != stats) {
        *stats = total;
    }
    return rc;
}

int mca_coll_loom_verify_builder(mca_coll_loom_build_fn_t build, bool check_order,
                                 const mca_coll_loom_params_t *shape, bool in_place,
                                 mca_coll_loom_verify_stats_t *stats, char *err, size_t errlen)
{
    const int P = shape->P;
    mca_coll_loom_sched_t *scheds;
    int rc = 0;

    if (P < 1) {
        snprintf(err, errlen, "P = %d", P);
        return -1;
    }
    scheds = calloc((size_t) P, sizeof(*scheds));
    if (NULL == scheds) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int me = 0; me < P; ++me) {
        mca_coll_loom_params_t p = *shape;
        p.rank = me;
        mca_coll_loom_sched_init(&scheds[me]);
        if (0 == rc) {
            rc = build(&scheds[me], &p);
            if (MCA_COLL_LOOM_OK == rc) {
                rc = mca_coll_loom_sched_finish(&scheds[me]);
            }
            if (MCA_COLL_LOOM_OK != rc) {
                snprintf(err, errlen, "rank %d: building the schedule failed (%d)", me, rc);
            }
        }
    }
    if (0 == rc) {
        rc = mca_coll_loom_verify_schedules(scheds, check_order, shape, in_place, stats, err, errlen);
    } else {
        rc = -1;
    }
    for (int me = 0; me < P; ++me) {
        mca_coll_loom_sched_fini(&scheds[me]);
    }
    free(scheds);
    return rc;
}

int mca_coll_loom_verify_schedules(const mca_coll_loom_sched_t *scheds, bool check_order,
                                   const mca_coll_loom_params_t *shape, bool in_place,
                                   mca_coll_loom_verify_stats_t *stats, char *err, size_t errlen)
{
    const int P = shape->P;
    const bool idem = 0 != (shape->call & MCA_COLL_LOOM_CALL_IDEMPOTENT);
    mca_coll_loom_verify_stats_t dummy;
    sim_t sim = {0};
    int rc;

    if (NULL == stats) {
        stats = &dummy;
    }
    memset(stats, 0, sizeof(*stats));
    if (err && errlen) {
        err[0] = '\0';
    }
    sim.P = P;
    sim.coll = (mca_coll_loom_coll_t) shape->coll;
    sim.root = shape->root;
    sim.input_unused = MCA_COLL_LOOM_COLL_BCAST == sim.coll || MCA_COLL_LOOM_COLL_ALLGATHER == sim.coll;
    sim.err = err;
    sim.errlen = errlen;
    sim.stats = stats;
    if (P < 1) {
        fail(&sim, "P = %d", P);
        return -1;
    }
    if (shape->coll < 0 || shape->coll >= MCA_COLL_LOOM_NUM_COLLS) {
        fail(&sim, "unknown collective %d", shape->coll);
        return -1;
    }
    if (is_rooted(sim.coll) && (sim.root < 0 || sim.root >= P)) {
        fail(&sim, "%s with root %d of %d ranks", mca_coll_loom_coll_name(sim.coll), sim.root, P);
        return -1;
    }
    sim.ranks = calloc((size_t) P, sizeof(rank_t));
    sim.sendq = calloc((size_t) P, sizeof(msg_t *));
    sim.recvq = calloc((size_t) P, sizeof(msg_t *));
    sim.ready = malloc((size_t) P * sizeof(int));
    if (!sim.ranks || !sim.sendq || !sim.recvq || !sim.ready) {
        fail(&sim, "out of memory");
    }

    /* Take every rank's schedule. */
    for (int me = 0; me < P && !sim.failed; ++me) {
        rank_t *r = &sim.ranks[me];
        r->sched = &scheds[me];
        r->ops = scheds[me].ops;
        r->nops = scheds[me].nops;
        r->alias = aliased(&sim, r, me, in_place);
        r->pending = calloc((size_t) r->sched->max_inflight + 1, sizeof(msg_t *));
        if (NULL == r->pending) {
            fail(&sim, "out of memory");
        }
    }
    if (!sim.failed) {
        agree_on_layout(&sim);
    }
    /* one array for the blocks of every slot of every rank */
    for (int me = 0; me < P && !sim.failed; ++me) {
        sim.ncontents += (size_t) sim.ranks[me].sched->nslots * (size_t) sim.nb;
    }
    if (!sim.failed && NULL == (sim.contents = calloc(sim.ncontents, sizeof(content_t)))) {
        fail(&sim, "out of memory");
    }
    for (size_t next = 0, me = 0; me < (size_t) P && !sim.failed; ++me) {
        rank_t *r = &sim.ranks[me];
        for (int sl = 0; sl < r->sched->nslots; ++sl, next += (size_t) sim.nb) {
            r->slots[sl] = sim.contents + next;
        }
        initial_contents(&sim, (int) me);
    }

    /* Run ranks until everyone is done or nobody can move.  Matching is per channel
     * in posting order, so the order ranks run in changes no outcome; depth-first
     * keeps the data just moved in cache. */
    for (int me = P - 1; me >= 0 && !sim.failed; --me) {
        sim.ready[sim.nready++] = me;
    }
    while (sim.nready > 0 && !sim.failed) {
        advance(&sim, sim.ready[--sim.nready]);
    }

    for (int me = 0; me < P && !sim.failed; ++me) {
        rank_t *r = &sim.ranks[me];
        if (r->pc < r->sched->nops) {
            fail(&sim, "deadlock: rank %d stuck at op %d of %d", me, r->pc, r->sched->nops);
            break;
        }
        if (r->rounds > stats->rounds) {
            stats->rounds = r->rounds;
        }
        final_checks(&sim, me, idem, check_order);
    }
    for (int dst = 0; dst < P && !sim.failed; ++dst) {
        const msg_t *m = sim.sendq[dst] ? sim.sendq[dst] : sim.recvq[dst];
        if (m) {
            fail(&sim, "unmatched %s from rank %d to rank %d", m->is_send ? "send" : "receive", m->src, dst);
        }
    }

    rc = sim.failed ? -1 : 0;
    for (size_t i = 0; NULL != sim.contents && i < sim.ncontents; ++i) {
        content_free(&sim.contents[i]);
    }
    free(sim.contents);
    for (int me = 0; NULL != sim.ranks && me < P; ++me) {
        free(sim.ranks[me].pending);
    }
    while (sim.chunks) {
        msg_chunk_t *c = sim.chunks;
        sim.chunks = c->next;
        free(c);
    }
    free(sim.tmp);
    free(sim.ranks);
    free(sim.ready);
    free(sim.sendq);
    free(sim.recvq);
    return rc;
}
