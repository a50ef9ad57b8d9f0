/*
 * loom: the LogGP model's GRAPH mode (loom_model.h, "Rounds or graph"): every rank's
 * dependency graph run as the engine runs it, an event queue over all ranks, and the
 * torus network its messages may cross.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opal/loom/loom_model_impl.h"
#include "opal/loom/loom_torus.h"

/* ---------------------------------------------------------------------------
 * GRAPH: every rank's schedule run as its dependency graph, as the engine does
 * ------------------------------------------------------------------------- */

/* grank_t.rem[i]: releases op i still misses (0: queued to start), or one of these. */
#define G_POSTED  (-1) /* a receive posted (its completion queued once its message is in) */
#define G_STARTED (-2)
#define G_DONE    (-3)

/* A receiving channel of a rank (one peer): posted receives without their message
 * yet, and messages in without a posted receive; at most one of them is non-empty. */
typedef struct {
    int32_t peer;
    int32_t rhead, rtail;  /* ops, linked through qnext */
    int32_t mhead, mtail;  /* pool indices */
} gchan_t;

/* One rank in graph form: one timing op per schedule op (a WAIT is done at once, an
 * empty block op is a free local op that still passes its releases on), the graph
 * of loom_sched.h, and qnext[i], the link of the one list op i is in (ready queue,
 * a channel's posted receives, or completions).
 *
 * The CPU works as the engine's progress loop does: a sweep completes the receives
 * whose message is in (o each, in order of arrival), then the ready queue is drained
 * in FIFO order, ops released meanwhile included, before the next sweep.  (A single
 * FIFO of both would let a fast sender's arrivals starve an inner node's forwarding
 * sends, which the engine does not do.) */
typedef struct {
    cop_t *ops;            /* owns the one allocation of the arrays below */
    int32_t *rem, *chan, *succ_start, *succ, *qnext;
    int nops, ndone, rounds;
    int32_t qhead, qtail;  /* ready ops, in the order they became ready */
    int32_t chead, ctail;  /* receives whose message is in, in order of arrival */
    int ncomp, nsweep;     /* completions queued; left in the current sweep */
    gchan_t *chans;        /* [nchan], by increasing peer (in the ops' allocation) */
    int nchan;
    clock_t_ c;            /* c.cpu: the CPU is busy until then */
    double finish;         /* latest op done */
    long units;            /* 8-byte units held */
    uint8_t busy;          /* an EV_CPU is pending: the CPU is busy until c.cpu */
    uint8_t state;         /* ST_RUN, ST_DONE */
} grank_t;

typedef struct {
    double in;             /* fully in */
    int32_t next;
} gmsg_t;

/* EV_CPU: the CPU has finished item a (a send posted, a receive completed, a local
 * op done); EV_DONE: send a has left; EV_MSG: a message's first byte is in;
 * EV_AVAIL: receive a has its message and is posted. */
enum { EV_CPU = 0, EV_DONE, EV_MSG, EV_AVAIL };

typedef struct {
    double t;
    double t1;             /* EV_MSG: the last byte at the receiver (sender's pace) */
    uint64_t seq;          /* ties in time go in the order the events were made */
    int32_t rank, a;       /* a: an op of `rank`, or EV_MSG's sender */
    float bytes;
    uint8_t type;
} gev_t;

/* The torus network: per directed link, when it is free and the flows that want it
 * (each until its latest message has crossed the link). */
typedef struct {
    long flow;             /* sender * P + receiver */
    double until;
} gflow_t;

typedef struct {
    double free;
    gflow_t *f;
    int n, cap;
} glink_t;

typedef struct {
    const mca_coll_loom_torus_t *t;
    const int *coords, *node_of;
    glink_t *links;        /* [torus nodes * 2 ndims], by loom_torus.h's link index */
    long nlinks, *route;   /* route: scratch of max_hops links */
    int max_load;
    long messages, max_hops;
} gnet_t;

typedef struct {
    ctx_t *x;
    gnet_t *net;           /* NULL: ranks are joined by their LogGP links only */
    grank_t *ranks;
    gev_t *heap;           /* binary heap on (t, seq) */
    long nheap, capheap;
    gmsg_t *pool;
    int npool, poolcap, freelist;
    uint64_t seq;
    double now;
    long live, peak, max_live; /* 8-byte units of ranks, heap and pool */
    const char *note;
} gsim_t;

static const char *const g_over_note = "over the op budget of a graph simulation (try a smaller P)";

/* Checks the budget after a change of what is held. */
static int g_account(gsim_t *g)
{
    long held = g->live + (long) (((size_t) g->capheap * sizeof(gev_t) + (size_t) g->poolcap * sizeof(gmsg_t)) / 8);
    if (held > g->peak) {
        g->peak = held;
    }
    if (held > g->max_live) {
        g->note = g_over_note;
        return MCA_COLL_LOOM_ERR_NOTSUP;
    }
    return MCA_COLL_LOOM_OK;
}

static bool ev_before(const gev_t *a, const gev_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int ev_push(gsim_t *g, gev_t e)
{
    long i;

    if (g->nheap == g->capheap) {
        long cap = g->capheap ? 2 * g->capheap : 1024;
        gev_t *h = realloc(g->heap, (size_t) cap * sizeof(*h));
        if (NULL == h) {
            return MCA_COLL_LOOM_ERR_NOMEM;
        }
        g->heap = h;
        g->capheap = cap;
        if (MCA_COLL_LOOM_OK != g_account(g)) {
            return MCA_COLL_LOOM_ERR_NOTSUP;
        }
    }
    e.seq = g->seq++;
    for (i = g->nheap++; i > 0 && ev_before(&e, &g->heap[(i - 1) / 2]); i = (i - 1) / 2) {
        g->heap[i] = g->heap[(i - 1) / 2];
    }
    g->heap[i] = e;
    return MCA_COLL_LOOM_OK;
}

static gev_t ev_pop(gsim_t *g)
{
    const gev_t top = g->heap[0], last = g->heap[--g->nheap];
    const long n = g->nheap;
    long i = 0;

    for (long c = 1; c < n; c = 2 * i + 1) {
        if (c + 1 < n && ev_before(&g->heap[c + 1], &g->heap[c])) {
            c++;
        }
        if (!ev_before(&g->heap[c], &last)) {
            break;
        }
        g->heap[i] = g->heap[c];
        i = c;
    }
    if (n > 0) {
        g->heap[i] = last;
    }
    return top;
}

static int ev_at(gsim_t *g, double t, int type, int rank, int32_t a)
{
    return ev_push(g, (gev_t) {.t = t, .type = (uint8_t) type, .rank = rank, .a = a});
}

/* Appends op i to the list head/tail linked through qnext. */
static void g_append(grank_t *k, int32_t *head, int32_t *tail, int32_t i)
{
    k->qnext[i] = -1;
    if (*tail >= 0) {
        k->qnext[*tail] = i;
    } else {
        *head = i;
    }
    *tail = i;
}

static int32_t g_pop(grank_t *k, int32_t *head, int32_t *tail)
{
    const int32_t i = *head;
    *head = k->qnext[i];
    if (*head < 0) {
        *tail = -1;
    }
    return i;
}

static void g_enqueue(grank_t *k, int32_t i)
{
    g_append(k, &k->qhead, &k->qtail, i);
}

static void g_release(grank_t *k, int32_t j)
{
    if (0 == --k->rem[j]) {
        g_enqueue(k, j);
    }
}

/* The channel of rank k that receives from q, or NULL. */
static gchan_t *g_chan(grank_t *k, int q)
{
    int lo = 0, hi = k->nchan - 1;
    while (lo <= hi) {
        const int mid = (lo + hi) / 2;
        if (k->chans[mid].peer == q) {
            return &k->chans[mid];
        }
        if (k->chans[mid].peer < q) {
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return NULL;
}

static int g_rank_done(gsim_t *g, int r)
{
    grank_t *k = &g->ranks[r];
    bool stray = false;

    for (int c = 0; c < k->nchan; ++c) {
        stray |= k->chans[c].mhead >= 0;
    }
    k->state = ST_DONE;
    g->x->ops += k->nops;
    g->live -= k->units;
    free(k->ops);
    k->ops = NULL;
    if (stray) {
        g->note = "a message that no receive matches";
        return MCA_COLL_LOOM_ERR_NOTSUP;
    }
    return MCA_COLL_LOOM_OK;
}

/* Op i of rank r is done now: it releases its data successors (an empty transfer,
 * posted and done at once, first its channel successor, as the engine does). */
static int g_done(gsim_t *g, int r, int32_t i)
{
    grank_t *k = &g->ranks[r];

    if (K_LOCAL == KIND(k->ops[i]) && k->chan[i] >= 0) {
        g_release(k, k->chan[i]);
    }
    k->rem[i] = G_DONE;
    for (int32_t e = k->succ_start[i]; e < k->succ_start[i + 1]; ++e) {
        g_release(k, k->succ[e]);
    }
    if (g->now > k->finish) {
        k->finish = g->now;
    }
    return ++k->ndone == k->nops ? g_rank_done(g, r) : MCA_COLL_LOOM_OK;
}

/* The CPU has finished item i: a send is posted (its channel's next transfer may
 * go), anything else done. */
static int g_item_end(gsim_t *g, int r, int32_t i)
{
    grank_t *k = &g->ranks[r];

    if (K_SEND == KIND(k->ops[i])) {
        if (k->chan[i] >= 0) {
            g_release(k, k->chan[i]);
        }
        return MCA_COLL_LOOM_OK;
    }
    return g_done(g, r, i);
}

/* A message from rank src to rank dst whose first byte would reach dst at *t0 and its
 * last at *t1 (post_send) crosses the torus links of its route in turn: it enters each
 * when that link is free and it has entered the one before, and holds it for
 * max(link_G, G) per byte (every link a FIFO, as a packet-switched router's queue is,
 * in the order messages were sent); each link adds hop_L.  Records the flows that want
 * each link at once. */
static int g_net(gsim_t *g, int src, int dst, double bytes, double *t0, double *t1)
{
    gnet_t *n = g->net;
    const mca_coll_loom_model_params_t *m = g->x->m;
    const int a = n->node_of[src], b = n->node_of[dst], nd = n->t->ndims;
    const long flow = (long) src * g->x->P + dst;
    double at = *t0 - m->L, dur = g->x->link_G * bytes, lat;
    int hops;

    if (a == b) {
        return MCA_COLL_LOOM_OK;
    }
    hops = mca_coll_loom_torus_route(n->t, n->coords + (size_t) a * nd, n->coords + (size_t) b * nd, n->route);
    if (*t1 - *t0 > dur) {
        dur = *t1 - *t0; /* the sender's own link is the slower */
    }
    for (int h = 0; h < hops; ++h) {
        glink_t *l = &n->links[n->route[h]];
        const double want = at;
        int j = 0, found = -1;
        at = l->free > at ? l->free : at;
        l->free = at + dur;
        for (int i = 0; i < l->n; ++i) {
            if (l->f[i].flow == flow) {
                found = j;
            } else if (l->f[i].until <= want) {
                continue; /* done before this message wanted the link */
            }
            l->f[j++] = l->f[i];
        }
        l->n = j;
        if (found >= 0) {
            l->f[found].until = at + dur;
        } else {
            if (l->n == l->cap) {
                int cap = l->cap ? 2 * l->cap : 2;
                gflow_t *f = realloc(l->f, (size_t) cap * sizeof(*f));
                if (NULL == f) {
                    return MCA_COLL_LOOM_ERR_NOMEM;
                }
                l->f = f;
                l->cap = cap;
            }
            l->f[l->n++] = (gflow_t) {.flow = flow, .until = at + dur};
        }
        if (l->n > n->max_load) {
            n->max_load = l->n;
        }
    }
    n->messages++;
    n->max_hops = hops > n->max_hops ? hops : n->max_hops;
    lat = m->L + hops * g->x->hop_L;
    *t0 = at + lat;
    *t1 = at + dur + lat;
    return MCA_COLL_LOOM_OK;
}

/* Posts send i: the CPU's o (the caller's), then its bytes on the outgoing link
 * (post_send); *left gets the time they have left, when the send is done. */
static int g_send(gsim_t *g, int r, int32_t i, double *left)
{
    grank_t *k = &g->ranks[r];
    const double bytes = k->ops[i].v;
    double t0, t1;

    k->rem[i] = G_STARTED;
    k->c.cpu = g->now;
    k->c.send_done = 0.0;
    mca_coll_loom_model_post_send(g->x->m, &k->c, bytes, &t0, &t1);
    g->x->messages++;
    *left = k->c.send_done;
    if (NULL != g->net) {
        int rc = g_net(g, r, PEER(k->ops[i]), bytes, &t0, &t1);
        if (MCA_COLL_LOOM_OK != rc) {
            return rc;
        }
    }
    return ev_push(g, (gev_t) {.t = t0, .t1 = t1, .type = EV_MSG, .rank = PEER(k->ops[i]), .a = r,
                               .bytes = (float) bytes});
}

/* Posts receive i (free): the channel's next transfer may be posted, and the
 * oldest message in from the peer, if any, is its. */
static int g_post_recv(gsim_t *g, int r, int32_t i)
{
    grank_t *k = &g->ranks[r];
    gchan_t *ch = g_chan(k, PEER(k->ops[i]));

    k->rem[i] = G_POSTED;
    if (k->chan[i] >= 0) {
        g_release(k, k->chan[i]);
    }
    if (ch->mhead >= 0) {
        const int32_t j = ch->mhead;
        const double in = g->pool[j].in;
        ch->mhead = g->pool[j].next;
        if (ch->mhead < 0) {
            ch->mtail = -1;
        }
        g->pool[j].next = g->freelist;
        g->freelist = j;
        return ev_at(g, in > g->now ? in : g->now, EV_AVAIL, r, i);
    }
    g_append(k, &ch->rhead, &ch->rtail, i);
    return MCA_COLL_LOOM_OK;
}

/* A pool slot for a message in; <0: an error code. */
static int g_msg_new(gsim_t *g)
{
    if (g->freelist >= 0) {
        int i = g->freelist;
        g->freelist = g->pool[i].next;
        return i;
    }
    if (g->npool == g->poolcap) {
        int cap = g->poolcap ? 2 * g->poolcap : 1024;
        gmsg_t *p = realloc(g->pool, (size_t) cap * sizeof(*p));
        if (NULL == p) {
            return MCA_COLL_LOOM_ERR_NOMEM;
        }
        g->pool = p;
        g->poolcap = cap;
        if (MCA_COLL_LOOM_OK != g_account(g)) {
            return MCA_COLL_LOOM_ERR_NOTSUP;
        }
    }
    return g->npool++;
}

/* A message's first byte reaches rank e->rank: its incoming link takes it, and the
 * oldest posted receive from the sender, if any, gets it when it is fully in. */
static int g_message(gsim_t *g, const gev_t *e)
{
    grank_t *k = &g->ranks[e->rank];
    gchan_t *ch = ST_DONE != k->state ? g_chan(k, e->a) : NULL;
    double in;
    int j;

    if (NULL == ch) {
        g->note = "a message that no receive matches";
        return MCA_COLL_LOOM_ERR_NOTSUP;
    }
    in = mca_coll_loom_model_in_link(g->x->m, &k->c, e->t, e->t1, e->bytes);
    if (ch->rhead >= 0) {
        return ev_at(g, in, EV_AVAIL, e->rank, g_pop(k, &ch->rhead, &ch->rtail));
    }
    if ((j = g_msg_new(g)) < 0) {
        return j;
    }
    g->pool[j] = (gmsg_t) {.in = in, .next = -1};
    if (ch->mtail >= 0) {
        g->pool[ch->mtail].next = j;
    } else {
        ch->mhead = j;
    }
    ch->mtail = j;
    return MCA_COLL_LOOM_OK;
}

/* Runs rank r's CPU from now through the work available (sweep, then drain: see
 * grank_t) until an item takes time (the CPU is busy until c.cpu; an EV_CPU resumes
 * it). */
static int g_kick(gsim_t *g, int r)
{
    grank_t *k = &g->ranks[r];
    const mca_coll_loom_model_params_t *m = g->x->m;
    int rc = MCA_COLL_LOOM_OK;

    while (MCA_COLL_LOOM_OK == rc && ST_DONE != k->state && !k->busy) {
        double busy_until = g->now, left = -1.0;
        int32_t i, end = -1;

        if (0 == k->nsweep && k->qhead < 0) {
            if (0 == k->ncomp) {
                break; /* idle */
            }
            k->nsweep = k->ncomp; /* the completions in by now */
        }
        if (k->nsweep > 0) {
            /* a receive whose message is in: the CPU completes it */
            i = g_pop(k, &k->chead, &k->ctail);
            k->nsweep--;
            k->ncomp--;
            k->rem[i] = G_STARTED;
            busy_until = g->now + m->o;
            end = i;
        } else {
            i = g_pop(k, &k->qhead, &k->qtail);
            switch (KIND(k->ops[i])) {
            case K_SEND:
                rc = g_send(g, r, i, &left);
                busy_until = g->now + m->o;
                end = i;
                break;
            case K_RECV:
                rc = g_post_recv(g, r, i); /* free, releases what it must itself */
                break;
            default:
                k->rem[i] = G_STARTED;
                busy_until = g->now + k->ops[i].v;
                end = i;
                break;
            }
        }
        if (MCA_COLL_LOOM_OK != rc || end < 0) {
            continue;
        }
        if (busy_until > g->now) {
            k->c.cpu = busy_until;
            k->busy = 1;
            rc = ev_at(g, busy_until, EV_CPU, r, end);
        } else {
            rc = g_item_end(g, r, end);
        }
        if (MCA_COLL_LOOM_OK == rc && left >= 0.0) {
            /* after the EV_CPU: a send is posted before it is done, also when it has
             * left at once (the engine releases in that order) */
            rc = ev_at(g, left, EV_DONE, r, i);
        }
    }
    return rc;
}

static int cmp_chan(const void *a, const void *b)
{
    const int32_t p = ((const gchan_t *) a)->peer, q = ((const gchan_t *) b)->peer;
    return (p > q) - (p < q);
}

/* Builds rank r's schedule in graph form and queues its initially ready ops in list
 * order. */
static int g_compile(gsim_t *g, int r)
{
    ctx_t *x = g->x;
    mca_coll_loom_sched_t *s = &x->sched;
    grank_t *k = &g->ranks[r];
    mca_coll_loom_params_t p = x->shape;
    size_t n, ne, nrecv, bytes;
    char *mem;
    int rc;

    p.rank = r;
    rc = mca_coll_loom_model_build_rank(x->alg, x->build, s, &p);
    if (MCA_COLL_LOOM_OK != rc) {
        return rc;
    }
    if (NULL == s->npred || NULL == s->succ_start) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    n = (size_t) s->nops;
    ne = (size_t) s->succ_start[n];
    nrecv = 0;
    for (size_t i = 0; i < n; ++i) {
        nrecv += MCA_COLL_LOOM_OP_RECV == s->ops[i].kind;
    }
    /* ops, then the channels (8-aligned after the ops), then the int32 arrays */
    bytes = n * sizeof(cop_t) + nrecv * sizeof(gchan_t) + (4 * n + 1 + ne) * sizeof(int32_t);
    if (NULL == (mem = malloc(bytes))) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    memset(k, 0, sizeof(*k));
    k->ops = (cop_t *) mem;
    k->chans = (gchan_t *) (mem + n * sizeof(cop_t));
    k->rem = (int32_t *) (mem + n * sizeof(cop_t) + nrecv * sizeof(gchan_t));
    k->chan = k->rem + n;
    k->qnext = k->chan + n;
    k->succ_start = k->qnext + n;
    k->succ = k->succ_start + n + 1;
    k->nops = (int) n;
    k->rounds = s->rounds;
    k->qhead = k->qtail = k->chead = k->ctail = -1;
    k->state = ST_RUN;
    k->units = (long) ((bytes + 7) / 8);
    g->live += k->units;
    memcpy(k->chan, s->chan_next, n * sizeof(int32_t));
    memcpy(k->succ_start, s->succ_start, (n + 1) * sizeof(int32_t));
    memcpy(k->succ, s->succ, ne * sizeof(int32_t));

    for (size_t i = 0; i < n; ++i) {
        const mca_coll_loom_op_t *op = &s->ops[i];
        const size_t el = MCA_COLL_LOOM_OP_WAIT == op->kind ? 0 : mca_coll_loom_model_op_elems(x, s, op);
        const double b = (double) el * (double) x->esz;

        if (MCA_COLL_LOOM_OP_WAIT == op->kind) {
            /* a lockstep schedule's WAIT waits for its round: a local op of no cost */
            k->ops[i] = (cop_t) {.kp = (s->lockstep ? K_LOCAL : K_WAIT) << 30, .v = 0.0f};
        } else if (op->nblk > 0 && 0 == el) {
            k->ops[i] = (cop_t) {.kp = K_LOCAL << 30, .v = 0.0f}; /* skipped on both sides */
        } else if (MCA_COLL_LOOM_OP_SEND == op->kind || MCA_COLL_LOOM_OP_RECV == op->kind) {
            if (op->peer < 0 || op->peer >= x->P) {
                return MCA_COLL_LOOM_ERR_BADPARAM;
            }
            k->ops[i].kp = ((MCA_COLL_LOOM_OP_SEND == op->kind ? K_SEND : K_RECV) << 30) | (uint32_t) op->peer;
            k->ops[i].v = (float) b;
            if (MCA_COLL_LOOM_OP_RECV == op->kind) {
                k->chans[k->nchan++].peer = op->peer;
            }
        } else {
            k->ops[i].kp = K_LOCAL << 30;
            k->ops[i].v = (float) (b * (MCA_COLL_LOOM_OP_COPY == op->kind ? x->m->copy : x->m->gamma));
        }
    }
    /* one channel per peer received from: sorted, unique */
    if (k->nchan > 1) {
        int u = 0;
        qsort(k->chans, (size_t) k->nchan, sizeof(gchan_t), cmp_chan);
        for (int c = 1; c < k->nchan; ++c) {
            if (k->chans[c].peer != k->chans[u].peer) {
                k->chans[++u].peer = k->chans[c].peer;
            }
        }
        k->nchan = u + 1;
    }
    for (int c = 0; c < k->nchan; ++c) {
        k->chans[c].rhead = k->chans[c].rtail = k->chans[c].mhead = k->chans[c].mtail = -1;
    }
    /* the engine pushes every op without predecessors at its start, in list order; a
     * WAIT has no edges (outside lockstep schedules) and is done there */
    for (size_t i = 0; i < n; ++i) {
        if (K_WAIT == KIND(k->ops[i])) {
            k->rem[i] = G_DONE;
            k->ndone++;
        } else if (0 == (k->rem[i] = s->npred[i])) {
            g_enqueue(k, (int32_t) i);
        }
    }
    if (MCA_COLL_LOOM_OK != (rc = g_account(g))) {
        return rc;
    }
    return k->ndone == k->nops ? g_rank_done(g, r) : MCA_COLL_LOOM_OK;
}

/* Every rank is built at time 0 (each posts its first ops then), so all are held at
 * once: refuses early what would surely exceed the budget, a few ranks standing for
 * the others (a root alone would underestimate the inner ranks of a tree). */
static int g_check_budget(gsim_t *g)
{
    ctx_t *x = g->x;
    const int P = x->P;
    const int sample[4] = {0, 1, P / 2, P - 1};
    double units = 0.0;
    int ns = 0, rc = MCA_COLL_LOOM_OK;

    for (int i = 0; i < 4 && MCA_COLL_LOOM_OK == rc; ++i) {
        mca_coll_loom_params_t p = x->shape;
        if (sample[i] >= P || (i > 0 && sample[i] <= sample[i - 1])) {
            continue;
        }
        p.rank = sample[i];
        rc = mca_coll_loom_model_build_rank(x->alg, x->build, &x->sched, &p);
        if (MCA_COLL_LOOM_OK == rc && NULL != x->sched.succ_start) {
            units += 3.0 * x->sched.nops + 0.5 * x->sched.succ_start[x->sched.nops];
            ns++;
        }
    }
    if (MCA_COLL_LOOM_OK == rc && ns > 0 && (double) P * units / ns > 1.25 * (double) g->max_live) {
        g->note = g_over_note;
        rc = MCA_COLL_LOOM_ERR_NOTSUP;
    }
    return rc;
}

/* The torus network of the ranks' nodes, its links all free; the caller frees
 * net->links and net->route, also on failure. */
static int g_net_init(gsim_t *g, gnet_t *net)
{
    const ctx_t *x = g->x;
    const mca_coll_loom_torus_t *t = x->shape.torus;
    const long nodes = mca_coll_loom_torus_nodes(t);

    net->t = t;
    net->coords = x->shape.torus_coords;
    net->node_of = x->shape.node_of;
    net->nlinks = nodes * mca_coll_loom_torus_links_per_node(t);
    if (nodes <= 0 || net->nlinks > (1L << 26)) {
        g->note = "the torus is too large for the network model";
        return MCA_COLL_LOOM_ERR_NOTSUP;
    }
    net->links = calloc((size_t) net->nlinks, sizeof(*net->links));
    net->route = malloc(sizeof(long) * (size_t) (mca_coll_loom_torus_max_hops(t) + 1));
    if (NULL == net->links || NULL == net->route) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    g->net = net;
    return MCA_COLL_LOOM_OK;
}

/* Builds and starts every rank at time 0, then runs the events in time order until
 * none is left. */
static int g_run(gsim_t *g)
{
    const int P = g->x->P;
    int rc = MCA_COLL_LOOM_OK;

    for (int r = 0; r < P && MCA_COLL_LOOM_OK == rc; ++r) {
        rc = g_compile(g, r);
    }
    for (int r = 0; r < P && MCA_COLL_LOOM_OK == rc; ++r) {
        rc = g_kick(g, r);
    }
    while (MCA_COLL_LOOM_OK == rc && g->nheap > 0) {
        const gev_t e = ev_pop(g);
        grank_t *k = &g->ranks[e.rank];

        g->now = e.t;
        switch (e.type) {
        case EV_CPU:
            k->busy = 0;
            rc = g_item_end(g, e.rank, e.a);
            break;
        case EV_DONE:
            rc = g_done(g, e.rank, e.a);
            break;
        case EV_MSG:
            rc = g_message(g, &e);
            break;
        default: /* EV_AVAIL: the next sweep completes it */
            g_append(k, &k->chead, &k->ctail, e.a);
            k->ncomp++;
            break;
        }
        if (MCA_COLL_LOOM_OK == rc) {
            rc = g_kick(g, e.rank);
        }
    }
    return rc;
}

/* The ranks' finishing times into res (and finish[] when not NULL); a rank that is
 * not done waits for something that never comes. */
static int g_result(gsim_t *g, const gnet_t *net, double *finish, mca_coll_loom_model_result_t *res)
{
    const int P = g->x->P;
    double sum = 0.0;

    for (int r = 0; r < P; ++r) {
        const grank_t *k = &g->ranks[r];
        if (ST_DONE != k->state) {
            g->note = "deadlock: an op waits for a release or a message that never comes";
            return MCA_COLL_LOOM_ERR_NOTSUP;
        }
        if (k->finish > res->time || 0 == r) {
            res->time = k->finish;
            res->last_rank = r;
        }
        if (k->rounds > res->rounds) {
            res->rounds = k->rounds;
        }
        sum += k->finish;
        if (NULL != finish) {
            finish[r] = k->finish;
        }
    }
    res->mean = sum / P;
    res->method = MCA_COLL_LOOM_MODEL_GRAPH;
    res->peak_live_ops = g->peak;
    res->max_link_load = net->max_load;
    res->link_messages = net->messages;
    res->max_link_hops = net->max_hops;
    return MCA_COLL_LOOM_OK;
}

int mca_coll_loom_model_simulate_graph(ctx_t *x, long max_live, double *finish, mca_coll_loom_model_result_t *res)
{
    const int P = x->P;
    gsim_t g = {.x = x, .freelist = -1, .max_live = max_live};
    gnet_t net = {0};
    int rc = MCA_COLL_LOOM_OK;

    g.ranks = calloc((size_t) P, sizeof(*g.ranks));
    if (NULL == g.ranks) {
        rc = MCA_COLL_LOOM_ERR_NOMEM;
    }
    if (MCA_COLL_LOOM_OK == rc) {
        rc = g_check_budget(&g);
    }
    if (MCA_COLL_LOOM_OK == rc && x->link_G > 0.0) {
        rc = g_net_init(&g, &net);
    }
    if (MCA_COLL_LOOM_OK == rc) {
        rc = g_run(&g);
    }
    if (MCA_COLL_LOOM_OK == rc) {
        rc = g_result(&g, &net, finish, res);
    }

    res->note = g.note;
    for (long l = 0; NULL != net.links && l < net.nlinks; ++l) {
        free(net.links[l].f);
    }
    free(net.links);
    free(net.route);
    for (int r = 0; NULL != g.ranks && r < P; ++r) {
        free(g.ranks[r].ops);
    }
    free(g.ranks);
    free(g.heap);
    free(g.pool);
    return rc;
}
