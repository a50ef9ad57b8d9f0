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
 *
 * Once the round reading passes, the same schedules run again as the engine runs
 * them: as their dependency graphs (loom_sched.h), under several adversarial orders
 * ("graph mode").  An op starts once npred releases have arrived; a local op is done
 * when it runs, a transfer when it completes, and only then are its data successors
 * released; chan_next is released when a transfer is posted.  The next event (start
 * a ready op, complete a matched transfer) is picked among those of all ranks by an
 * order policy: 0 starts first and completes the oldest, 1 completes the newest
 * first and starts the newest (LIFO), 2.. pick at random, seeded by the order.  The
 * content checks are those of the round reading, against transfers in flight at that
 * moment; matching stays in posting order per channel under rendezvous.
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
    uint16_t nsend, nrecv; /* graph mode: transfers in flight on this block (in what
                              would be padding: the counts come with the block's line) */
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
    int32_t base;         /* graph mode: global index of op 0 */
    const mca_coll_loom_sched_t *sched;
    content_t *slots[MCA_COLL_LOOM_MAX_SLOTS]; /* [nb] blocks of each slot in use */
} rank_t;

typedef struct {
    int P;
    int nb, nseg;         /* the block layout every rank shares (1, 1 when unblocked) */
    mca_coll_loom_coll_t coll;
    int root;
    int engaged;          /* reduce: the ranks root .. root+engaged-1 (mod P) contribute
                             (params.engaged; P when every rank does) */
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
    struct graph *graph;  /* graph mode's state, NULL in the round reading */
    int order;            /* graph mode: the order policy being run */
} sim_t;

/* Graph mode (the engine's execution): what an event needs of an op, in one record
 * per op of every rank (global index rank_t.base + op), since the events of all ranks
 * interleave and separate arrays cost a cache miss each. */
enum { OP_IDLE = 0, OP_POSTED, OP_DONE };

typedef struct {
    int32_t left;         /* releases still to arrive before it may start */
    int32_t next;         /* the next unmatched transfer in its channel's queue, -1 */
    int32_t chan;         /* channel (src, dst) of a transfer, -1 */
    int32_t chan_next;    /* global index of the next transfer of its channel, -1 */
    int32_t succ;         /* its data successors: graph.succ[succ .. next record's succ) */
    int32_t owner;        /* rank */
    int32_t peer, blk, nblk, dblk;
    uint8_t kind, src, dst;
    uint8_t state;        /* OP_* */
} gop_t;

/* Enabled events of one kind, as global op indices in [head, tail). */
typedef struct {
    int32_t *ev;
    int32_t head, tail;
} pool_t;

typedef struct graph {
    int32_t nops;         /* ops of all ranks */
    gop_t *op;            /* [nops + 1], the last one only ends the successor lists */
    int32_t *succ;        /* global indices */
    int32_t nchan;
    int32_t *qhead, *qtail; /* [nchan] unmatched posted transfers, in posting order; one
                               kind at a time (a send and a receive would have matched) */
    pool_t ready;         /* ops whose releases have all arrived, not started */
    pool_t matched;       /* matched transfers, not completed */
    int32_t ndone;
    uint64_t rng;
} graph_t;

static void vfail(sim_t *sim, bool tag, const char *fmt, va_list ap)
{
    int n = 0;

    if (sim->failed) {
        return;
    }
    sim->failed = true;
    if (NULL == sim->err || 0 == sim->errlen) {
        return;
    }
    /* a graph-mode failure says under which order, so that it can be told apart */
    if (tag && NULL != sim->graph) {
        n = sim->order < 0 ? snprintf(sim->err, sim->errlen, "graph: ")
                           : snprintf(sim->err, sim->errlen, "graph, order %d: ", sim->order);
        n = n < 0 ? 0 : ((size_t) n >= sim->errlen ? (int) sim->errlen - 1 : n);
    }
    vsnprintf(sim->err + n, sim->errlen - (size_t) n, fmt, ap);
}

static void fail(sim_t *sim, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(sim, true, fmt, ap);
    va_end(ap);
}

/* The same without the graph-mode prefix (the message names the mode itself). */
static void fail_raw(sim_t *sim, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(sim, false, fmt, ap);
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

/* What a contribution is called in contents: rank r's data of block b is b * P + r,
 * so a block that lands elsewhere than the collective wants it (a wrong block move)
 * shows as a wrong contribution, and within one block the order is the ranks'. */
static inline int contribution(const sim_t *sim, int b, int rank)
{
    return b * sim->P + rank;
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

/* A transfer in flight that an access conflicts with: its blocks and direction. */
typedef struct {
    int b0, n;
    bool is_send;
} clash_t;

/* Does an access to blocks b0..b0+n-1 of `slot` of rank me conflict with one of its
 * transfers in flight (*what: which)?  Blocks being received may not be read or
 * written, blocks being sent may be read.  The round reading scans the transfers
 * since the last WAIT; graph mode, where a rank can have any number in flight, keeps
 * a count per block. */
static bool busy(const sim_t *sim, int me, int slot, int b0, int n, bool write, clash_t *what)
{
    rank_t *r = &sim->ranks[me];

    if (NULL != sim->graph) {
        const content_t *c = slot_of(r, slot);
        for (int b = b0; b < b0 + n; ++b) {
            if (c[b].nrecv > 0 || (write && c[b].nsend > 0)) {
                *what = (clash_t) {b, 1, 0 == c[b].nrecv};
                return true;
            }
        }
        return false;
    }
    for (int i = 0; i < r->npending; ++i) {
        const msg_t *m = r->pending[i];
        if (phys(r, m->slot) == phys(r, slot) && b0 < m->b0 + m->n && m->b0 < b0 + n &&
            (write || !m->is_send)) {
            *what = (clash_t) {m->b0, m->n, m->is_send};
            return true;
        }
    }
    return false;
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

/* May a message between ranks a and b land in other blocks than it left from? */
static bool moves(const sim_t *sim, int a, int b)
{
    return sim->ranks[a].sched->moves_blocks && sim->ranks[b].sched->moves_blocks;
}

/* Match the oldest unmatched send and receive of the channel src -> dst (MPI
 * non-overtaking order) and move the data. */
static void match_channel(sim_t *sim, int src, int dst)
{
    while (!sim->failed && has_from(sim->sendq[dst], src) && has_from(sim->recvq[dst], src)) {
        msg_t *s = take_first(&sim->sendq[dst], src), *r = take_first(&sim->recvq[dst], src);
        content_t *from = slot_of(&sim->ranks[src], s->slot), *to = slot_of(&sim->ranks[dst], r->slot);
        if ((s->op_blk != r->op_blk && !moves(sim, src, dst)) || s->op_nblk != r->op_nblk) {
            /* blocks of different index can differ by one element (a truncation),
             * unless both schedules move blocks, for equal blocks only */
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

/* Does op idx use a slot the component does not give rank me: INPUT (read) where the
 * collective has none, RESULT (at all) at a reduce's non-root ranks, which pass no
 * receive buffer (their partial results belong in scratch slots)? */
static bool slot_missing(sim_t *sim, int me, int idx, int slot, bool reads)
{
    if (reads && sim->input_unused && MCA_COLL_LOOM_SLOT_INPUT == slot) {
        fail(sim, "rank %d: op %d reads INPUT, which %s does not use", me, idx,
             mca_coll_loom_coll_name(sim->coll));
        return true;
    }
    if (MCA_COLL_LOOM_COLL_REDUCE == sim->coll && me != sim->root && MCA_COLL_LOOM_SLOT_RESULT == slot) {
        fail(sim, "rank %d: op %d uses RESULT, which a reduce's non-root ranks do not have", me, idx);
        return true;
    }
    return false;
}

/* The checks of posting transfer op idx of rank me, shared by both readings; gives
 * its slot and block range. */
static bool transfer_ok(sim_t *sim, int me, int idx, const mca_coll_loom_op_t *op, int *slot, int *b0, int *n)
{
    rank_t *r = &sim->ranks[me];
    const bool send = MCA_COLL_LOOM_OP_SEND == op->kind;
    const content_t *c;
    clash_t conflict;

    *slot = send ? op->src : op->dst;
    c = slot_of(r, *slot);
    op_range(sim, op, b0, n);
    if (op->peer < 0 || op->peer >= sim->P || op->peer == me) {
        fail(sim, "rank %d: op %d: bad peer %d", me, idx, op->peer);
        return false;
    }
    if (slot_missing(sim, me, idx, *slot, send)) {
        return false;
    }
    if (busy(sim, me, *slot, *b0, *n, !send, &conflict)) {
        fail(sim, "rank %d: op %d %s slot %d (%s) blocks %d+%d while block %d+%d is being %s", me, idx,
             send ? "sends" : "receives into", *slot, slot_name(*slot), *b0, *n, conflict.b0, conflict.n,
             conflict.is_send ? "sent" : "received");
        return false;
    }
    for (int b = *b0; send && b < *b0 + *n; ++b) {
        if (!c[b].defined) {
            fail(sim, "rank %d: op %d sends undefined slot %d (%s) block %d", me, idx, *slot, slot_name(*slot),
                 b);
            return false;
        }
    }
    return true;
}

static void step_transfer(sim_t *sim, int me, const mca_coll_loom_op_t *op)
{
    rank_t *r = &sim->ranks[me];
    const bool send = MCA_COLL_LOOM_OP_SEND == op->kind;
    content_t *c;
    msg_t *m;
    int slot, b0, n;

    if (!transfer_ok(sim, me, r->pc, op, &slot, &b0, &n)) {
        return;
    }
    c = slot_of(r, slot);
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

/* Runs local op idx of rank me (both readings). */
static void step_local(sim_t *sim, int me, int idx, const mca_coll_loom_op_t *op)
{
    rank_t *r = &sim->ranks[me];
    content_t *srcs = slot_of(r, op->src), *dsts = slot_of(r, op->dst);
    const bool reads_dst = MCA_COLL_LOOM_OP_COPY != op->kind;
    clash_t conflict;
    int b0, n, d0;

    op_range(sim, op, &b0, &n);
    d0 = op->nblk > 0 ? op->dblk : b0; /* where the blocks land: a move when d0 != b0 */
    if (slot_missing(sim, me, idx, op->src, true) || slot_missing(sim, me, idx, op->dst, reads_dst)) {
        return;
    }
    if (busy(sim, me, op->src, b0, n, MCA_COLL_LOOM_OP_REDUCE_R == op->kind, &conflict) ||
        busy(sim, me, op->dst, d0, n, true, &conflict)) {
        fail(sim, "rank %d: op %d touches a slot with a transfer in flight (block %d+%d being %s)", me, idx,
             conflict.b0, conflict.n, conflict.is_send ? "sent" : "received");
        return;
    }
    if (srcs == dsts && b0 < d0 + n && d0 < b0 + n && (MCA_COLL_LOOM_OP_COPY != op->kind || d0 != b0)) {
        fail(sim, "rank %d: op %d combines a slot with itself", me, idx);
        return;
    }
    for (int b = b0; b < b0 + n && !sim->failed; ++b) {
        content_t *src = &srcs[b], *dst = &dsts[b - b0 + d0];
        if (!src->defined || (reads_dst && !dst->defined)) {
            fail(sim, "rank %d: op %d reads an undefined slot (%s block %d)", me, idx,
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
            step_local(sim, me, r->pc, op);
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
           MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK == coll || MCA_COLL_LOOM_COLL_ALLTOALL == coll ||
           MCA_COLL_LOOM_COLL_ALLTOALLV == coll;
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
            content_single(sim, &slot_of(r, MCA_COLL_LOOM_SLOT_RESULT)[b], contribution(sim, b, sim->root));
        }
        break;
    case MCA_COLL_LOOM_COLL_ALLGATHER:
        for (int b = me * sim->nseg; b < (me + 1) * sim->nseg; ++b) {
            content_single(sim, &slot_of(r, MCA_COLL_LOOM_SLOT_RESULT)[b], contribution(sim, b, me));
        }
        break;
    default:
        for (int b = 0; b < sim->nb; ++b) {
            content_single(sim, &slot_of(r, MCA_COLL_LOOM_SLOT_INPUT)[b], contribution(sim, b, me));
        }
        break;
    }
}

/* Checks RESULT block b of rank me against the block-`from` data of ranks lo..hi. */
static void check_block_from(sim_t *sim, int me, int b, int from, int lo, int hi, bool idem, bool order)
{
    content_t *res = &slot_of(&sim->ranks[me], MCA_COLL_LOOM_SLOT_RESULT)[b];
    int bad, count;

    if (!res->defined) {
        fail(sim, "rank %d: result block %d undefined at the end", me, b);
    } else if (!content_is(res, contribution(sim, from, lo), contribution(sim, from, hi), idem, &bad, &count)) {
        /* bad names a contribution: rank bad % P's data of block bad / P */
        fail(sim, "rank %d: block %d: contribution of rank %d (its block %d) counted %d times", me, b,
             ((bad % sim->P) + sim->P) % sim->P, bad / sim->P, count);
    } else if (order && !idem && !res->ordered) {
        fail(sim, "rank %d: block %d: contributions not combined in rank order", me, b);
    }
}

/* The same for the block-b data (every collective but alltoall). */
static void check_block(sim_t *sim, int me, int b, int lo, int hi, bool idem, bool order)
{
    check_block_from(sim, me, b, b, lo, hi, idem, order);
}

/* A reduce of the engaged ranks only (params.engaged, commutative): the root's block b
 * holds ranks root .. root+engaged-1 (mod P) once each (at least once when `idem`), no
 * other, in two ranges where they wrap. */
static void check_engaged(sim_t *sim, int me, int b, bool idem)
{
    const content_t *res = &slot_of(&sim->ranks[me], MCA_COLL_LOOM_SLOT_RESULT)[b];
    const int P = sim->P, end = sim->root + sim->engaged - 1;
    const span_t *sp = cspans(res);
    int want = 0; /* ranks expected: [lo0, hi0] then [lo1, hi1] */
    const int lo0 = end >= P ? 0 : sim->root, hi0 = end >= P ? end - P : end;
    const int lo1 = end >= P ? sim->root : -1, hi1 = end >= P ? P - 1 : -2;

    if (!res->defined) {
        fail(sim, "rank %d: result block %d undefined at the end", me, b);
        return;
    }
    for (int r = 0; r < P; ++r) {
        const int c = contribution(sim, b, r);
        int mult = 0;
        for (int i = 0; i < res->n; ++i) {
            mult = sp[i].lo <= c && c <= sp[i].hi ? sp[i].mult : mult;
        }
        want = (r >= lo0 && r <= hi0) || (r >= lo1 && r <= hi1);
        if (want ? (mult < 1 || (!idem && 1 != mult)) : 0 != mult) {
            fail(sim, "rank %d: block %d: contribution of rank %d counted %d times (%d ranks engaged from root %d)",
                 me, b, r, mult, sim->engaged, sim->root);
            return;
        }
    }
    for (int i = 0; i < res->n; ++i) {
        if (sp[i].lo < contribution(sim, b, 0) || sp[i].hi > contribution(sim, b, P - 1)) {
            fail(sim, "rank %d: block %d: data of another block", me, b);
            return;
        }
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
            if (sim->engaged < P) {
                check_engaged(sim, me, b, idem);
            } else {
                check_block(sim, me, b, 0, P - 1, idem, order);
            }
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
    case MCA_COLL_LOOM_COLL_ALLTOALL:
    case MCA_COLL_LOOM_COLL_ALLTOALLV:
        /* part j (segment g of it) from rank j: that rank's part `me` (its segment g) */
        for (int b = 0; b < sim->nb && !sim->failed; ++b) {
            check_block_from(sim, me, b, me * nseg + b % nseg, b / nseg, b / nseg, false, false);
        }
        break;
    default:
        for (int b = 0; b < sim->nb && !sim->failed; ++b) {
            check_block(sim, me, b, 0, P - 1, idem, order);
        }
        break;
    }
}

/* Every rank must use one block layout (a transfer lands in blocks of the same index,
 * or of the same count where both schedules move blocks), and the scattered
 * collectives need it to have one part per rank. */
static void agree_on_layout(sim_t *sim)
{
    bool have = false;

    sim->nb = 1;
    sim->nseg = 1;
    for (int me = 0; me < sim->P && !sim->failed; ++me) {
        const mca_coll_loom_sched_t *s = sim->ranks[me].sched;
        if (MCA_COLL_LOOM_COLL_ALLTOALLV == sim->coll) {
            /* parts of different sizes at every rank (registry.h): one at a time, no scratch */
            for (int i = 0; i < s->nops && !sim->failed; ++i) {
                if (MCA_COLL_LOOM_OP_WAIT != s->ops[i].kind && 1 != s->ops[i].nblk) {
                    fail(sim, "rank %d: op %d covers %d parts; alltoallv moves one at a time", me, i,
                         s->ops[i].nblk);
                }
            }
            if (s->nslots > 2 && !sim->failed) {
                fail(sim, "rank %d: alltoallv has no scratch slot (its parts differ by rank)", me);
            }
        }
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

/* A schedule that declares an exchange (loom_sched.h) must be one on every rank: each
 * rank receives from exactly the peers it sends to. */
static void check_exchange(sim_t *sim)
{
    const bool ex = sim->ranks[0].sched->exchange;
    unsigned char *dir = NULL;

    for (int me = 1; me < sim->P; ++me) {
        if (sim->ranks[me].sched->exchange != ex) {
            fail(sim, "rank %d declares an exchange, rank 0 %s", ex ? 0 : me, ex ? "does" : "does not");
            return;
        }
    }
    if (!ex || NULL == (dir = calloc((size_t) sim->P, 1))) {
        if (ex) {
            fail(sim, "out of memory");
        }
        return;
    }
    for (int me = 0; me < sim->P && !sim->failed; ++me) {
        const mca_coll_loom_sched_t *s = sim->ranks[me].sched;
        memset(dir, 0, (size_t) sim->P);
        for (int i = 0; i < s->nops; ++i) {
            if ((MCA_COLL_LOOM_OP_SEND == s->ops[i].kind || MCA_COLL_LOOM_OP_RECV == s->ops[i].kind) &&
                s->ops[i].peer >= 0 && s->ops[i].peer < sim->P) { /* bad peers: failed later */
                dir[s->ops[i].peer] |= MCA_COLL_LOOM_OP_SEND == s->ops[i].kind ? 1 : 2;
            }
        }
        for (int q = 0; q < sim->P; ++q) {
            if (1 == dir[q] || 2 == dir[q]) {
                fail(sim, "rank %d declares an exchange but only %s rank %d", me,
                     1 == dir[q] ? "sends to" : "receives from", q);
                break;
            }
        }
    }
    free(dir);
}

/* ---- graph mode: the engine's execution, under adversarial orders ------------------ */

/* How many orders every verification runs in graph mode (mca_coll_loom_verify_graph_orders). */
static int graph_orders = 2;

int mca_coll_loom_verify_graph_orders(int n)
{
    const int old = graph_orders;
    if (n >= 0) {
        graph_orders = n;
    }
    return old;
}

static const char *kind_name(int kind)
{
    static const char *const names[] = {"send", "recv", "wait", "copy", "reduce", "reduce_r", "unreduce"};
    return kind >= 0 && kind <= MCA_COLL_LOOM_OP_UNREDUCE ? names[kind] : "unknown op";
}

/* xorshift64*: a deterministic stream per order, so a failure can be replayed. */
static uint32_t graph_rand(graph_t *g, uint32_t n)
{
    g->rng ^= g->rng >> 12;
    g->rng ^= g->rng << 25;
    g->rng ^= g->rng >> 27;
    return (uint32_t) (((g->rng * 2685821657736338717ull) >> 32) * (uint64_t) n >> 32);
}

/* The schedule op a record stands for (what the shared checks take). */
static inline mca_coll_loom_op_t gop_op(const gop_t *o)
{
    return (mca_coll_loom_op_t) {
        .kind = o->kind, .src = o->src, .dst = o->dst, .peer = o->peer, .blk = o->blk, .nblk = o->nblk,
        .dblk = o->dblk};
}

static inline void pool_push(pool_t *p, int32_t gi)
{
    p->ev[p->tail++] = gi;
}

/* Removes and returns the event at position k (the order of the rest does not matter). */
static inline int32_t pool_take(pool_t *p, int32_t k)
{
    const int32_t gi = p->ev[k];
    p->ev[k] = p->ev[--p->tail];
    return gi;
}

/* One release arrived for op gi; at the last one it becomes ready.  (A graph whose
 * counts disagree with its edges is refused before it runs.) */
static inline void graph_release(graph_t *g, int32_t gi)
{
    if (0 == --g->op[gi].left) {
        pool_push(&g->ready, gi);
    }
}

/* Op gi is done: its data successors may go. */
static void graph_done(graph_t *g, int32_t gi)
{
    const int32_t end = g->op[gi + 1].succ;

    g->op[gi].state = OP_DONE;
    g->ndone++;
    for (int32_t k = g->op[gi].succ; k < end; ++k) {
        graph_release(g, g->succ[k]);
    }
}

/* A transfer's slot (its block 0 on the owner) and block range. */
static inline content_t *graph_blocks(sim_t *sim, const gop_t *o, int *b0, int *n)
{
    const mca_coll_loom_op_t op = gop_op(o);
    op_range(sim, &op, b0, n);
    return slot_of(&sim->ranks[o->owner], MCA_COLL_LOOM_OP_SEND == o->kind ? o->src : o->dst);
}

/* The send gi_s and the receive gi_r meet: the data moves now (as in match_channel),
 * and both may complete from here on. */
static void graph_match(sim_t *sim, int32_t gi_s, int32_t gi_r)
{
    graph_t *g = sim->graph;
    const gop_t *so = &g->op[gi_s], *ro = &g->op[gi_r];
    content_t *from, *to;
    int sb0, rb0, n, rn;

    if (((so->nblk > 0 ? so->blk : -1) != (ro->nblk > 0 ? ro->blk : -1) && !moves(sim, so->owner, ro->owner)) ||
        so->nblk != ro->nblk) {
        fail(sim, "rank %d sends blocks %d+%d to rank %d, which receives blocks %d+%d", so->owner,
             so->nblk > 0 ? so->blk : -1, so->nblk, ro->owner, ro->nblk > 0 ? ro->blk : -1, ro->nblk);
        return;
    }
    from = graph_blocks(sim, so, &sb0, &n);
    to = graph_blocks(sim, ro, &rb0, &rn);
    for (int b = 0; b < n; ++b) {
        content_copy(sim, &to[rb0 + b], &from[sb0 + b]);
    }
    pool_push(&g->matched, gi_s);
    pool_push(&g->matched, gi_r);
}

/* Posts transfer gi (op idx of rank me): the checks of the round reading, then into
 * its channel, where it meets the oldest transfer of the other side if one waits. */
static void graph_post(sim_t *sim, int32_t gi, int me, int idx)
{
    graph_t *g = sim->graph;
    gop_t *o = &g->op[gi];
    const mca_coll_loom_op_t op = gop_op(o);
    const bool send = MCA_COLL_LOOM_OP_SEND == o->kind;
    content_t *c;
    int32_t head;
    int slot, b0, n;

    if (!transfer_ok(sim, me, idx, &op, &slot, &b0, &n)) {
        return;
    }
    c = slot_of(&sim->ranks[me], slot);
    for (int b = b0; b < b0 + n; ++b) {
        if (send) {
            if (UINT16_MAX == c[b].nsend++) {
                fail(sim, "rank %d: op %d: more than %d sends of block %d in flight", me, idx, UINT16_MAX, b);
                return;
            }
        } else {
            c[b].defined = false; /* arrives when the transfer is matched */
            c[b].nrecv++;         /* one at most: a second one is a conflict */
        }
    }
    o->state = OP_POSTED;
    head = g->qhead[o->chan];
    if (head >= 0 && g->op[head].kind != o->kind) {
        g->qhead[o->chan] = g->op[head].next;
        if (send) {
            graph_match(sim, gi, head);
        } else {
            graph_match(sim, head, gi);
        }
    } else {
        o->next = -1;
        if (head >= 0) {
            g->op[g->qtail[o->chan]].next = gi;
        } else {
            g->qhead[o->chan] = gi;
        }
        g->qtail[o->chan] = gi;
    }
    if (o->chan_next >= 0) {
        graph_release(g, o->chan_next);
    }
}

static void graph_start(sim_t *sim, int32_t gi)
{
    graph_t *g = sim->graph;
    const gop_t *o = &g->op[gi];
    const int me = o->owner, idx = gi - sim->ranks[me].base;
    mca_coll_loom_op_t op;

    switch (o->kind) {
    case MCA_COLL_LOOM_OP_WAIT:
        graph_done(g, gi); /* the round reading's barrier: nothing in the graph */
        break;
    case MCA_COLL_LOOM_OP_SEND:
    case MCA_COLL_LOOM_OP_RECV:
        graph_post(sim, gi, me, idx);
        break;
    case MCA_COLL_LOOM_OP_COPY:
    case MCA_COLL_LOOM_OP_REDUCE:
    case MCA_COLL_LOOM_OP_REDUCE_R:
    case MCA_COLL_LOOM_OP_UNREDUCE:
        op = gop_op(o);
        step_local(sim, me, idx, &op);
        if (!sim->failed) {
            graph_done(g, gi);
        }
        break;
    default:
        fail(sim, "rank %d: op %d has unknown kind %d", me, idx, o->kind);
    }
}

/* A matched transfer completes: its blocks are free again. */
static void graph_complete(sim_t *sim, int32_t gi)
{
    const gop_t *o = &sim->graph->op[gi];
    int b0, n;
    content_t *c = graph_blocks(sim, o, &b0, &n);

    for (int b = b0; b < b0 + n; ++b) {
        if (MCA_COLL_LOOM_OP_SEND == o->kind) {
            c[b].nsend--;
        } else {
            c[b].nrecv--;
        }
    }
    graph_done(sim->graph, gi);
}

/* Picks the next event under order policy `order`: *gi is the op, *start whether it
 * is a start (else a completion).  False when nothing is enabled. */
static bool graph_next(graph_t *g, int order, int32_t *gi, bool *start)
{
    pool_t *rd = &g->ready, *mt = &g->matched;
    const int32_t nr = rd->tail - rd->head, nm = mt->tail - mt->head;

    if (0 == nr + nm) {
        return false;
    }
    if (0 == order) {
        /* as much in flight as possible: every ready op first, oldest first */
        *start = nr > 0;
        *gi = *start ? rd->ev[rd->head++] : mt->ev[mt->head++];
    } else if (1 == order) {
        /* depth first: what just became possible goes first */
        *start = 0 == nm;
        *gi = *start ? rd->ev[--rd->tail] : mt->ev[--mt->tail];
    } else {
        const int32_t k = (int32_t) graph_rand(g, (uint32_t) (nr + nm));
        *start = k < nr;
        *gi = *start ? pool_take(rd, rd->head + k) : pool_take(mt, mt->head + k - nr);
    }
    return true;
}

/* A graph must say what its counts say (npred = the releases the op will get: one per
 * data predecessor, one from its channel predecessor), else a run could start an op
 * twice or never; checked once, with .left as the tally. */
static void graph_check_structure(sim_t *sim)
{
    graph_t *g = sim->graph;

    for (int me = 0; me < sim->P && !sim->failed; ++me) {
        const rank_t *r = &sim->ranks[me];
        const mca_coll_loom_sched_t *s = r->sched;
        gop_t *in = g->op + r->base;

        if (r->nops > 0 && (NULL == s->npred || NULL == s->succ_start || NULL == s->succ ||
                            NULL == s->chan_next)) {
            fail(sim, "rank %d: the schedule has no dependency graph (not finished)", me);
            return;
        }
        for (int i = 0; i < r->nops; ++i) {
            in[i].left = 0;
        }
        for (int i = 0; i < r->nops && !sim->failed; ++i) {
            const int32_t cn = s->chan_next[i];
            if (s->succ_start[i] > s->succ_start[i + 1] || (0 == i && 0 != s->succ_start[0]) || cn < -1 ||
                cn >= r->nops) {
                fail(sim, "rank %d: op %d: malformed dependency graph", me, i);
                break;
            }
            for (int32_t k = s->succ_start[i]; k < s->succ_start[i + 1]; ++k) {
                if (s->succ[k] < 0 || s->succ[k] >= r->nops) {
                    fail(sim, "rank %d: op %d: successor %d out of range in the dependency graph", me, i,
                         s->succ[k]);
                    break;
                }
                in[s->succ[k]].left++;
            }
            if (cn >= 0) {
                in[cn].left++;
            }
        }
        for (int i = 0; i < r->nops && !sim->failed; ++i) {
            if (in[i].left != s->npred[i]) {
                fail(sim, "rank %d: op %d: npred %d in the dependency graph, but %d ops release it", me, i,
                     s->npred[i], in[i].left);
            }
        }
    }
}

/* Channel of every transfer: (src, dst) pairs numbered through a hash table. */
static bool graph_channels(sim_t *sim, size_t ntr)
{
    graph_t *g = sim->graph;
    const int P = sim->P;
    size_t size = 16;
    int64_t *keys;
    int32_t *vals;

    if (ntr > (size_t) P * (size_t) P) {
        ntr = (size_t) P * (size_t) P; /* distinct channels */
    }
    while (size < 2 * ntr) {
        size *= 2;
    }
    keys = malloc(size * sizeof(*keys));
    vals = malloc(size * sizeof(*vals));
    if (NULL == keys || NULL == vals) {
        free(keys);
        free(vals);
        return false;
    }
    for (size_t k = 0; k < size; ++k) {
        keys[k] = -1;
    }
    g->nchan = 0;
    for (int32_t gi = 0; gi < g->nops; ++gi) {
        gop_t *o = &g->op[gi];
        int64_t key;
        size_t h;

        o->chan = -1;
        if ((MCA_COLL_LOOM_OP_SEND != o->kind && MCA_COLL_LOOM_OP_RECV != o->kind) || o->peer < 0 ||
            o->peer >= P || o->peer == o->owner) {
            continue; /* posting it fails first */
        }
        key = MCA_COLL_LOOM_OP_SEND == o->kind ? (int64_t) o->owner * P + o->peer
                                               : (int64_t) o->peer * P + o->owner;
        h = (size_t) ((uint64_t) key * 0x9e3779b97f4a7c15ull >> 20) & (size - 1);
        while (keys[h] >= 0 && keys[h] != key) {
            h = (h + 1) & (size - 1);
        }
        if (keys[h] < 0) {
            keys[h] = key;
            vals[h] = g->nchan++;
        }
        o->chan = vals[h];
    }
    free(keys);
    free(vals);
    return true;
}

static void graph_free(graph_t *g)
{
    free(g->op);
    free(g->succ);
    free(g->qhead);
    free(g->qtail);
    free(g->ready.ev);
    free(g->matched.ev);
}

/* Sets up what every order shares; false (after fail()) when it cannot run. */
static bool graph_setup(sim_t *sim, graph_t *g)
{
    int64_t nops = 0, nsucc = 0;
    size_t ntr = 0;

    memset(g, 0, sizeof(*g));
    sim->graph = g;
    sim->order = -1; /* not running an order yet */
    for (int me = 0; me < sim->P; ++me) {
        const mca_coll_loom_sched_t *s = sim->ranks[me].sched;
        sim->ranks[me].base = (int32_t) nops;
        nops += sim->ranks[me].nops;
        nsucc += s->nops > 0 && NULL != s->succ_start ? s->succ_start[s->nops] : 0;
    }
    if (nops >= INT32_MAX || nsucc >= INT32_MAX) {
        fail(sim, "%lld ops: too many for graph mode", (long long) nops);
        return false;
    }
    g->nops = (int32_t) nops;
    g->op = calloc((size_t) nops + 1, sizeof(gop_t));
    g->succ = malloc(((size_t) nsucc + 1) * sizeof(int32_t));
    g->ready.ev = malloc(((size_t) nops + 1) * sizeof(int32_t));
    g->matched.ev = malloc(((size_t) nops + 1) * sizeof(int32_t));
    if (!g->op || !g->succ || !g->ready.ev || !g->matched.ev) {
        fail(sim, "out of memory");
        return false;
    }
    graph_check_structure(sim);
    if (sim->failed) {
        return false;
    }
    nsucc = 0;
    for (int me = 0; me < sim->P; ++me) {
        const rank_t *r = &sim->ranks[me];
        const mca_coll_loom_sched_t *s = r->sched;
        for (int i = 0; i < r->nops; ++i) {
            const mca_coll_loom_op_t *op = &r->ops[i];
            g->op[r->base + i] = (gop_t) {
                .chan_next = s->chan_next[i] >= 0 ? r->base + s->chan_next[i] : -1,
                .succ = (int32_t) nsucc, .owner = me, .peer = op->peer, .blk = op->blk, .nblk = op->nblk,
                .dblk = op->dblk, .kind = op->kind, .src = op->src, .dst = op->dst};
            for (int32_t k = s->succ_start[i]; k < s->succ_start[i + 1]; ++k) {
                g->succ[nsucc++] = r->base + s->succ[k];
            }
            ntr += MCA_COLL_LOOM_OP_SEND == op->kind || MCA_COLL_LOOM_OP_RECV == op->kind;
        }
    }
    g->op[nops].succ = (int32_t) nsucc;
    if (!graph_channels(sim, ntr) || NULL == (g->qhead = malloc(((size_t) g->nchan + 1) * sizeof(int32_t))) ||
        NULL == (g->qtail = malloc(((size_t) g->nchan + 1) * sizeof(int32_t)))) {
        fail(sim, "out of memory");
        return false;
    }
    return true;
}

static void describe(const gop_t *o, char *buf, size_t len)
{
    if (MCA_COLL_LOOM_OP_SEND == o->kind || MCA_COLL_LOOM_OP_RECV == o->kind) {
        snprintf(buf, len, "%s %s %d", kind_name(o->kind), MCA_COLL_LOOM_OP_SEND == o->kind ? "to" : "from",
                 o->peer);
    } else {
        snprintf(buf, len, "%s", kind_name(o->kind));
    }
}

/* Nothing is enabled but some op is not done.  Names, on the first rank that has one,
 * the first op not started (what it waits for) and the first transfer posted but never
 * matched (what its peer does not post). */
static void graph_deadlock(sim_t *sim, int order)
{
    const graph_t *g = sim->graph;
    const gop_t *idle = NULL, *posted = NULL;
    char what[64], what2[64];
    int32_t gi = 0, end;
    int me;

    while (OP_DONE == g->op[gi].state) {
        gi++;
    }
    me = g->op[gi].owner;
    end = sim->ranks[me].base + sim->ranks[me].nops;
    for (; gi < end && (NULL == idle || NULL == posted); ++gi) {
        if (OP_IDLE == g->op[gi].state && NULL == idle) {
            idle = &g->op[gi];
        } else if (OP_POSTED == g->op[gi].state && NULL == posted) {
            posted = &g->op[gi];
        }
    }
    if (NULL != posted) {
        describe(posted, what2, sizeof(what2));
    }
    if (NULL == idle) {
        fail_raw(sim, "deadlock (graph, order %d): rank %d stuck at op %d (%s, posted, never matched)", order,
                 me, (int) (posted - g->op) - sim->ranks[me].base, what2);
        return;
    }
    describe(idle, what, sizeof(what));
    if (NULL == posted) {
        fail_raw(sim, "deadlock (graph, order %d): rank %d stuck at op %d (%s, waiting for %d releases)", order,
                 me, (int) (idle - g->op) - sim->ranks[me].base, what, idle->left);
    } else {
        fail_raw(sim, "deadlock (graph, order %d): rank %d stuck at op %d (%s, waiting for %d releases); its "
                 "op %d (%s) is posted, never matched", order, me, (int) (idle - g->op) - sim->ranks[me].base,
                 what, idle->left, (int) (posted - g->op) - sim->ranks[me].base, what2);
    }
}

/* Runs every rank's graph once under `order`, from the initial contents. */
static void graph_run(sim_t *sim, int order, bool idem, bool check_order)
{
    graph_t *g = sim->graph;
    int32_t gi;
    bool start;

    sim->order = order;
    /* splitmix64 of the order: nearby orders give unrelated streams */
    g->rng = (uint64_t) order * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    g->rng = (g->rng ^ (g->rng >> 30)) * 0xbf58476d1ce4e5b9ull;
    g->rng = (g->rng ^ (g->rng >> 27)) * 0x94d049bb133111ebull;
    g->rng ^= g->rng >> 31;
    g->rng |= 1;
    g->ndone = 0;
    g->ready.head = g->ready.tail = g->matched.head = g->matched.tail = 0;
    for (int32_t c = 0; c < g->nchan; ++c) {
        g->qhead[c] = g->qtail[c] = -1;
    }
    for (size_t k = 0; k < sim->ncontents; ++k) {
        content_t *c = &sim->contents[k];
        c->n = 0; /* a heap list keeps its memory for reuse */
        c->defined = c->ordered = false;
        c->nsend = c->nrecv = 0;
    }
    for (int me = 0; me < sim->P; ++me) {
        const rank_t *r = &sim->ranks[me];
        initial_contents(sim, me);
        for (int i = 0; i < r->nops; ++i) {
            gop_t *o = &g->op[r->base + i];
            o->left = r->sched->npred[i];
            o->next = -1;
            o->state = OP_IDLE;
            if (MCA_COLL_LOOM_OP_WAIT == o->kind && 0 == o->left && o[1].succ == o->succ) {
                /* starting it changes nothing and commutes with every event: done now,
                 * rather than thousands of scattered no-op events diluting the orders */
                o->state = OP_DONE;
                g->ndone++;
            } else if (0 == o->left) {
                pool_push(&g->ready, r->base + i);
            }
        }
    }

    while (!sim->failed && graph_next(g, order, &gi, &start)) {
        if (start) {
            graph_start(sim, gi);
        } else {
            graph_complete(sim, gi);
        }
    }
    if (sim->failed) {
        return;
    }
    if (g->ndone < g->nops) {
        graph_deadlock(sim, order);
        return;
    }
    for (int me = 0; me < sim->P && !sim->failed; ++me) {
        final_checks(sim, me, idem, check_order);
    }
    for (int32_t c = 0; c < g->nchan && !sim->failed; ++c) {
        if (g->qhead[c] >= 0) {
            const gop_t *o = &g->op[g->qhead[c]];
            const bool send = MCA_COLL_LOOM_OP_SEND == o->kind;
            fail(sim, "unmatched %s from rank %d to rank %d", send ? "send" : "receive",
                 send ? o->owner : o->peer, send ? o->peer : o->owner);
        }
    }
}

/* The orders a verification runs: LIFO, then (from 3 on) start-first, then random
 * ones whose seeds move with the shape, so that the many shapes a test suite runs
 * try many interleavings at two orders each. */
static int graph_order_of(int k, int n, uint32_t shape_hash)
{
    if (0 == k) {
        return 1;
    }
    if (1 == k && n > 2) {
        return 0;
    }
    return 2 + (int) ((shape_hash + (uint32_t) k) % 1000000u);
}

static uint32_t shape_hash(const sim_t *sim, const mca_coll_loom_params_t *shape, bool in_place,
                           bool check_order)
{
    const int64_t v[] = {shape->P, shape->root, shape->knob, shape->call, shape->coll, shape->segs,
                         in_place, check_order, sim->graph->nops, sim->graph->nchan, shape->engaged};
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); ++i) {
        h = (h ^ (uint64_t) v[i]) * 1099511628211ull;
    }
    return (uint32_t) (h ^ (h >> 32));
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
    a = mca_coll_loom_algs[alg];
    /* rank order is owed on non-commutative calls by the algorithms that serve them;
     * a commutative call may be combined in any order (binomial reduce then uses a
     * tree rooted at the root) */
    if (!mca_coll_loom_alg_serves(alg, coll)) {
        snprintf(err, errlen, "algorithm %s does not serve %s", a->name, mca_coll_loom_coll_name(coll));
        return -1;
    }
    if (NULL != a->knob && (p.knob < a->knob_min || p.knob > a->knob_max)) {
        p.knob = a->knob_default;
    }
    order = mca_coll_loom_alg_keeps_order(alg, coll) && !(p.call & MCA_COLL_LOOM_CALL_COMMUTATIVE);
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
    graph_t graph = {0};
    bool no_graph = false;
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
    sim.engaged = MCA_COLL_LOOM_COLL_REDUCE == shape->coll && shape->engaged > 0 && shape->engaged < P
                      ? shape->engaged : P;
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
    if (!sim.failed) {
        check_exchange(&sim);
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

    /* then as the engine runs them: the graphs, under adversarial orders (unless the
     * caller built them without, as the model does) */
    for (int me = 0; me < P && !sim.failed && graph_orders > 0; ++me) {
        no_graph |= scheds[me].no_graph;
    }
    if (!sim.failed && graph_orders > 0 && !no_graph) {
        mca_coll_loom_verify_stats_t unused;
        sim.stats = &unused; /* the round reading's counts stand */
        if (graph_setup(&sim, &graph)) {
            const uint32_t h = shape_hash(&sim, shape, in_place, check_order);
            for (int k = 0; k < graph_orders && !sim.failed; ++k) {
                graph_run(&sim, graph_order_of(k, graph_orders, h), idem, check_order);
            }
        }
        sim.stats = stats;
        graph_free(&graph);
        sim.graph = NULL;
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
