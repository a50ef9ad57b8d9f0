/*
 * loom: LogGP simulation of the schedules of all ranks (see loom_model.h for the
 * model and docs/dev/model.md for its use and limits).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opal/loom/loom_model.h"
#include "opal/loom/loom_torus.h"

/* A schedule op in timing form, 8 bytes: kind and peer in one word, then the bytes
 * of a transfer or the CPU time of a run of local ops (float: 24 bits of mantissa
 * are plenty for a time estimate, and P = 2^20 ranks times a few hundred ops must
 * fit in memory). */
typedef struct {
    uint32_t kp;
    float v;
} cop_t;

#define K_SEND  0u
#define K_RECV  1u
#define K_WAIT  2u
#define K_LOCAL 3u
#define KIND(c) ((c).kp >> 30)
#define PEER(c) ((int) ((c).kp & 0x3fffffffu))
#define MAX_P   0x3fffffff

#define DEFAULT_SYM_MIN_P    256
#define DEFAULT_MAX_LIVE_OPS (1L << 27)
#define CHOOSE_BUDGET_OPS    (1L << 22)
#define CHOOSE_MAX_SEGS      4096
#define AUTO_FIT_P           32         /* auto_segs fits its pipeline model at up to this P */
#define AUTO_SEG_BYTES       (1024 * 1024) /* auto_segs: segment bound of a schedule in parts */

/* A message on its way: times at the receiver. */
typedef struct {
    double t0;   /* first byte could enter the receiver's link */
    double t1;   /* last byte left the sender, plus L */
    float bytes;
    int src;
    int next;    /* queue link (index into the pool), -1 at the end */
    int taken;   /* scratch mark while matching a round */
} msg_t;

typedef struct {
    double cpu;       /* the rank's CPU clock */
    double out_next;  /* earliest start of its next message on the outgoing link */
    double in_free;   /* its incoming link is busy until then */
    double send_done; /* the current round's sends have left the link by then */
} clock_t_;

typedef struct {
    cop_t *ops;
    int nops;
    int pc;
    int rounds;
    uint8_t state;   /* ST_* */
    uint8_t queued;
    clock_t_ c;
} rank_t;

enum { ST_UNBUILT = 0, ST_RUN, ST_BLOCKED, ST_DONE };

typedef struct {
    double t0, t1, bytes;
} arrival_t;

typedef struct {
    const mca_coll_loom_model_params_t *m;
    int alg, P;
    mca_coll_loom_build_fn_t build; /* instead of alg when not NULL (tests) */
    mca_coll_loom_params_t shape;
    size_t count, esz;
    const size_t *displ;
    mca_coll_loom_sched_t sched;  /* reused by every build */
    arrival_t *arr;               /* scratch for one round's arrivals */
    int arrcap;
    long ops, messages;
    int rounds;
    double link_G, hop_L;         /* the torus network (GRAPH), link_G > 0: on */
} ctx_t;

/* ---------------------------------------------------------------------------
 * Parameters
 * ------------------------------------------------------------------------- */

void mca_coll_loom_model_params_set(mca_coll_loom_model_params_t *m, double L_us, double o_us,
                                    double g_us, double G_ns, double gamma_ns, double copy_ns)
{
    m->L = L_us * 1e-6;
    m->o = o_us * 1e-6;
    m->g = g_us * 1e-6;
    m->G = G_ns * 1e-9;
    m->G_out = m->G;
    m->gamma = gamma_ns * 1e-9;
    m->copy = copy_ns * 1e-9;
}

void mca_coll_loom_model_params_default(mca_coll_loom_model_params_t *m)
{
    mca_coll_loom_model_params_set(m, MCA_COLL_LOOM_MODEL_DEFAULT_LATENCY_US,
                                   MCA_COLL_LOOM_MODEL_DEFAULT_OVERHEAD_US,
                                   MCA_COLL_LOOM_MODEL_DEFAULT_GAP_US,
                                   MCA_COLL_LOOM_MODEL_DEFAULT_GAP_PER_BYTE_NS,
                                   MCA_COLL_LOOM_MODEL_DEFAULT_REDUCE_PER_BYTE_NS,
                                   MCA_COLL_LOOM_MODEL_DEFAULT_COPY_PER_BYTE_NS);
}

void mca_coll_loom_model_opts_default(mca_coll_loom_model_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->sym_min_P = DEFAULT_SYM_MIN_P;
    o->max_live_ops = DEFAULT_MAX_LIVE_OPS;
}

const char *mca_coll_loom_model_method_name(int method)
{
    switch (method) {
    case MCA_COLL_LOOM_MODEL_FULL:
        return "full";
    case MCA_COLL_LOOM_MODEL_SYMMETRIC:
        return "symmetric";
    case MCA_COLL_LOOM_MODEL_ANALYTIC:
        return "analytic";
    case MCA_COLL_LOOM_MODEL_GRAPH:
        return "graph";
    default:
        return "none";
    }
}

double mca_coll_loom_model_lower_bound(mca_coll_loom_coll_t coll, int P, size_t bytes,
                                       const mca_coll_loom_model_params_t *m)
{
    double n = (double) bytes * m->G;
    if (P <= 1) {
        return 0.0;
    }
    switch (coll) {
    case MCA_COLL_LOOM_COLL_BCAST:
    case MCA_COLL_LOOM_COLL_REDUCE:
        return n;
    case MCA_COLL_LOOM_COLL_ALLREDUCE:
        return 2.0 * (P - 1) / P * n;
    case MCA_COLL_LOOM_COLL_ALLGATHER:
    case MCA_COLL_LOOM_COLL_REDUCE_SCATTER:
    case MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK:
    case MCA_COLL_LOOM_COLL_ALLTOALL:
    case MCA_COLL_LOOM_COLL_ALLTOALLV:
        return (double) (P - 1) / P * n;
    default:
        return 0.0;
    }
}

/* ---------------------------------------------------------------------------
 * Schedules in timing form
 * ------------------------------------------------------------------------- */

/* Builds one rank's schedule: a registry algorithm, or a bare builder (tests). */
static int build_rank(int alg, mca_coll_loom_build_fn_t build, mca_coll_loom_sched_t *s,
                      const mca_coll_loom_params_t *p)
{
    int rc;
    if (NULL == build) {
        return mca_coll_loom_alg_build(alg, s, p);
    }
    mca_coll_loom_sched_reset(s);
    rc = build(s, p);
    return MCA_COLL_LOOM_OK == rc ? mca_coll_loom_sched_finish(s) : rc;
}

/* Elements an op covers, as the executor splits them. */
static size_t op_elems(const ctx_t *x, const mca_coll_loom_sched_t *s, const mca_coll_loom_op_t *op)
{
    mca_coll_loom_layout_t l;
    if (op->nblk <= 0 || s->nblocks <= 0) {
        return x->count;
    }
    if (s->moves_blocks) {
        /* it runs on equal blocks only (the component's calls have them): a count
         * that does not split evenly is costed as if padded to equal blocks */
        return (x->count + (size_t) s->nblocks - 1) / (size_t) s->nblocks * (size_t) op->nblk;
    }
    l.count = x->count;
    l.nseg = s->nseg > 0 ? s->nseg : 1;
    l.nparts = s->nblocks / l.nseg;
    l.part_displ = x->displ;
    return mca_coll_loom_layout_start(&l, op->blk + op->nblk) - mca_coll_loom_layout_start(&l, op->blk);
}

/* Rank `rank`'s schedule built and turned into timing ops (local runs merged, empty
 * block ops dropped).  Returns NULL with *rc set on failure. */
static cop_t *compile(ctx_t *x, int rank, int *nops, int *rc)
{
    mca_coll_loom_sched_t *s = &x->sched;
    mca_coll_loom_params_t p = x->shape;
    cop_t *c;
    int n = 0;

    p.rank = rank;
    *rc = build_rank(x->alg, x->build, s, &p);
    if (MCA_COLL_LOOM_OK != *rc) {
        return NULL;
    }
    c = malloc((size_t) (s->nops > 0 ? s->nops : 1) * sizeof(*c));
    if (NULL == c) {
        *rc = MCA_COLL_LOOM_ERR_NOMEM;
        return NULL;
    }
    for (int i = 0; i < s->nops; ++i) {
        const mca_coll_loom_op_t *op = &s->ops[i];
        size_t el = op->kind == MCA_COLL_LOOM_OP_WAIT ? 0 : op_elems(x, s, op);
        double bytes = (double) el * (double) x->esz;
        if (op->nblk > 0 && 0 == el) {
            continue; /* the executor skips an empty block on both sides */
        }
        switch (op->kind) {
        case MCA_COLL_LOOM_OP_SEND:
        case MCA_COLL_LOOM_OP_RECV:
            if (op->peer < 0 || op->peer >= x->P) {
                free(c);
                *rc = MCA_COLL_LOOM_ERR_BADPARAM;
                return NULL;
            }
            c[n].kp = ((op->kind == MCA_COLL_LOOM_OP_SEND ? K_SEND : K_RECV) << 30) | (uint32_t) op->peer;
            c[n++].v = (float) bytes;
            break;
        case MCA_COLL_LOOM_OP_WAIT:
            c[n].kp = K_WAIT << 30;
            c[n++].v = 0.0f;
            break;
        default: {
            double t = bytes * (op->kind == MCA_COLL_LOOM_OP_COPY ? x->m->copy : x->m->gamma);
            if (n > 0 && K_LOCAL == KIND(c[n - 1])) {
                c[n - 1].v += (float) t;
            } else {
                c[n].kp = K_LOCAL << 30;
                c[n++].v = (float) t;
            }
            break;
        }
        }
    }
    *nops = n;
    return c;
}

/* ---------------------------------------------------------------------------
 * The LogGP rules (shared by both ways of running)
 * ------------------------------------------------------------------------- */

/* Posts a send: CPU o, then the bytes on the outgoing link.  Gives the message's
 * times at the receiver. */
static void post_send(const mca_coll_loom_model_params_t *m, clock_t_ *c, double bytes, double *t0,
                      double *t1)
{
    double start, wire = m->G_out * bytes;
    c->cpu += m->o;
    start = c->cpu > c->out_next ? c->cpu : c->out_next;
    c->out_next = start + (m->g > wire ? m->g : wire);
    if (start + wire > c->send_done) {
        c->send_done = start + wire;
    }
    *t0 = start + m->L;
    *t1 = start + wire + m->L;
}

/* The incoming link takes a message whose first byte is in at t0 and whose last byte
 * left the sender L before t1: it is fully in at the time returned. */
static double in_link(const mca_coll_loom_model_params_t *m, clock_t_ *c, double t0, double t1, double bytes)
{
    double in = (t0 > c->in_free ? t0 : c->in_free) + m->G * bytes;
    if (in < t1) {
        in = t1;
    }
    c->in_free = in;
    return in;
}

static int cmp_arrival(const void *a, const void *b)
{
    double d = ((const arrival_t *) a)->t0 - ((const arrival_t *) b)->t0;
    return d < 0 ? -1 : d > 0;
}

/* Completes a round (WAIT): the incoming link takes the messages in order of first
 * arrival, the CPU handles each (o) once it is in, and waits for its own sends. */
static void complete_round(const mca_coll_loom_model_params_t *m, clock_t_ *c, arrival_t *a, int n)
{
    if (n > 1) {
        qsort(a, (size_t) n, sizeof(*a), cmp_arrival);
    }
    for (int i = 0; i < n; ++i) {
        double in = in_link(m, c, a[i].t0, a[i].t1, a[i].bytes);
        c->cpu = (c->cpu > in ? c->cpu : in) + m->o;
    }
    if (c->send_done > c->cpu) {
        c->cpu = c->send_done;
    }
    c->send_done = 0.0;
}

static int arrivals_reserve(ctx_t *x, int n)
{
    if (n > x->arrcap) {
        int cap = n > 2 * x->arrcap ? n : 2 * x->arrcap;
        arrival_t *a = realloc(x->arr, (size_t) cap * sizeof(*a));
        if (NULL == a) {
            return MCA_COLL_LOOM_ERR_NOMEM;
        }
        x->arr = a;
        x->arrcap = cap;
    }
    return MCA_COLL_LOOM_OK;
}

/* ---------------------------------------------------------------------------
 * FULL: every rank, driven by a work list
 * ------------------------------------------------------------------------- */

typedef struct {
    ctx_t *x;
    rank_t *ranks;
    int *qhead, *qtail;   /* [P] unmatched messages per destination, in send order */
    msg_t *pool;
    int npool, poolcap, freelist;
    int *work;            /* stack of ranks to run */
    long nwork, workcap;
    long live, peak, max_live;
    const char *note;
} full_t;

static int push_work(full_t *f, int r)
{
    if (f->ranks[r].queued) {
        return MCA_COLL_LOOM_OK;
    }
    if (f->nwork == f->workcap) {
        long cap = f->workcap ? 2 * f->workcap : 1024;
        int *w = realloc(f->work, (size_t) cap * sizeof(*w));
        if (NULL == w) {
            return MCA_COLL_LOOM_ERR_NOMEM;
        }
        f->work = w;
        f->workcap = cap;
    }
    f->work[f->nwork++] = r;
    f->ranks[r].queued = 1;
    return MCA_COLL_LOOM_OK;
}

static int msg_new(full_t *f)
{
    if (f->freelist >= 0) {
        int i = f->freelist;
        f->freelist = f->pool[i].next;
        return i;
    }
    if (f->npool == f->poolcap) {
        int cap = f->poolcap ? 2 * f->poolcap : 4096;
        msg_t *p = realloc(f->pool, (size_t) cap * sizeof(*p));
        if (NULL == p) {
            return -1;
        }
        f->pool = p;
        f->poolcap = cap;
    }
    return f->npool++;
}

static int full_send(full_t *f, int me, int dst, double bytes)
{
    int i = msg_new(f);
    msg_t *msg;
    if (i < 0) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    msg = &f->pool[i];
    post_send(f->x->m, &f->ranks[me].c, bytes, &msg->t0, &msg->t1);
    msg->bytes = (float) bytes;
    msg->src = me;
    msg->next = -1;
    msg->taken = 0;
    if (f->qtail[dst] >= 0) {
        f->pool[f->qtail[dst]].next = i;
    } else {
        f->qhead[dst] = i;
    }
    f->qtail[dst] = i;
    f->x->messages++;
    if (ST_BLOCKED == f->ranks[dst].state) {
        return push_work(f, dst);
    }
    return MCA_COLL_LOOM_OK;
}

/* Tries to complete the WAIT at r->pc: every receive of the round, from its first op
 * `first`, needs the oldest unmatched message of its channel.  Returns 1 when done,
 * 0 when a message is missing, <0 on error. */
static int full_wait(full_t *f, int me, int first)
{
    rank_t *r = &f->ranks[me];
    int n = 0, ok = 1, rc;

    for (int i = first; i < r->pc && ok; ++i) {
        int j;
        if (K_RECV != KIND(r->ops[i])) {
            continue;
        }
        for (j = f->qhead[me]; j >= 0; j = f->pool[j].next) {
            if (f->pool[j].src == PEER(r->ops[i]) && !f->pool[j].taken) {
                f->pool[j].taken = 1;
                n++;
                break;
            }
        }
        ok = j >= 0;
    }
    if (!ok) {
        for (int j = f->qhead[me]; j >= 0 && n > 0; j = f->pool[j].next) {
            n -= f->pool[j].taken;
            f->pool[j].taken = 0;
        }
        return 0;
    }
    if (MCA_COLL_LOOM_OK != (rc = arrivals_reserve(f->x, n))) {
        return rc;
    }
    /* unlink the taken messages, in queue order; ranks may run far ahead of their
     * neighbours in simulation order, so stop at the last one taken */
    const int ntaken = n;
    n = 0;
    for (int *link = &f->qhead[me], prev = -1; *link >= 0 && n < ntaken;) {
        int j = *link;
        if (f->pool[j].taken) {
            f->x->arr[n++] = (arrival_t) {f->pool[j].t0, f->pool[j].t1, f->pool[j].bytes};
            *link = f->pool[j].next;
            f->pool[j].next = f->freelist;
            f->freelist = j;
            if (f->qtail[me] == j) {
                f->qtail[me] = prev;
            }
        } else {
            prev = j;
            link = &f->pool[j].next;
        }
    }
    complete_round(f->x->m, &r->c, f->x->arr, n);
    return 1;
}

/* Runs rank `me` until it blocks or is done. */
static int full_run(full_t *f, int me, int *first_of_round)
{
    rank_t *r = &f->ranks[me];
    int rc;

    if (ST_UNBUILT == r->state) {
        r->ops = compile(f->x, me, &r->nops, &rc);
        if (NULL == r->ops) {
            return rc;
        }
        f->live += r->nops;
        if (f->live > f->peak) {
            f->peak = f->live;
        }
        if (f->live > f->max_live) {
            f->note = "over the op budget of a full simulation (try a smaller P)";
            return MCA_COLL_LOOM_ERR_NOTSUP;
        }
        r->state = ST_RUN;
        first_of_round[me] = 0;
    }
    r->state = ST_RUN;
    while (r->pc < r->nops) {
        const cop_t op = r->ops[r->pc];
        switch (KIND(op)) {
        case K_SEND:
            if (MCA_COLL_LOOM_OK != (rc = full_send(f, me, PEER(op), op.v))) {
                return rc;
            }
            break;
        case K_RECV:
            break;
        case K_LOCAL:
            r->c.cpu += op.v;
            break;
        default:
            rc = full_wait(f, me, first_of_round[me]);
            if (rc < 0) {
                return rc;
            }
            if (0 == rc) {
                r->state = ST_BLOCKED;
                return MCA_COLL_LOOM_OK;
            }
            r->rounds++;
            first_of_round[me] = r->pc + 1;
            break;
        }
        r->pc++;
    }
    r->state = ST_DONE;
    f->x->ops += r->nops;
    f->live -= r->nops;
    free(r->ops);
    r->ops = NULL;
    return MCA_COLL_LOOM_OK;
}

static int simulate_full(ctx_t *x, long max_live, double *finish, mca_coll_loom_model_result_t *res)
{
    const int P = x->P;
    full_t f = {.x = x, .freelist = -1, .max_live = max_live};
    int *first = NULL;
    int rc = MCA_COLL_LOOM_OK;
    double sum = 0.0;

    f.ranks = calloc((size_t) P, sizeof(*f.ranks));
    f.qhead = malloc((size_t) P * sizeof(int));
    f.qtail = malloc((size_t) P * sizeof(int));
    first = calloc((size_t) P, sizeof(int));
    if (!f.ranks || !f.qhead || !f.qtail || !first) {
        rc = MCA_COLL_LOOM_ERR_NOMEM;
        goto out;
    }
    memset(f.qhead, 0xff, (size_t) P * sizeof(int));
    memset(f.qtail, 0xff, (size_t) P * sizeof(int));
    /* Refuse early what would surely exceed the budget (most ranks of a collective
     * are live at once); rank 0 stands for the others, with a margin for roots. */
    {
        mca_coll_loom_params_t p = x->shape;
        p.rank = 0;
        rc = build_rank(x->alg, x->build, &x->sched, &p);
        if (MCA_COLL_LOOM_OK == rc && (double) P * x->sched.nops > 4.0 * (double) max_live) {
            f.note = "over the op budget of a full simulation (try a smaller P)";
            rc = MCA_COLL_LOOM_ERR_NOTSUP;
        }
        if (MCA_COLL_LOOM_OK != rc) {
            goto out;
        }
    }
    /* rank 0 on top: rooted collectives start there, and the ranks it wakes run
     * next, so schedules are built roughly in the order data reaches them */
    for (int r = P - 1; r >= 0 && MCA_COLL_LOOM_OK == rc; --r) {
        rc = push_work(&f, r);
    }
    while (MCA_COLL_LOOM_OK == rc && f.nwork > 0) {
        int r = f.work[--f.nwork];
        f.ranks[r].queued = 0;
        if (ST_DONE != f.ranks[r].state) {
            rc = full_run(&f, r, first);
        }
    }
    if (MCA_COLL_LOOM_OK != rc) {
        goto out;
    }
    res->time = 0.0;
    for (int r = 0; r < P; ++r) {
        const rank_t *k = &f.ranks[r];
        if (ST_DONE != k->state) {
            f.note = "deadlock: a rank waits for a message that is never sent";
            rc = MCA_COLL_LOOM_ERR_NOTSUP;
            goto out;
        }
        if (k->c.cpu > res->time || 0 == r) {
            res->time = k->c.cpu;
            res->last_rank = r;
        }
        if (k->rounds > res->rounds) {
            res->rounds = k->rounds;
        }
        sum += k->c.cpu;
        if (NULL != finish) {
            finish[r] = k->c.cpu;
        }
    }
    res->mean = sum / P;
    res->method = MCA_COLL_LOOM_MODEL_FULL;
    res->peak_live_ops = f.peak;

out:
    res->note = f.note;
    for (int r = 0; NULL != f.ranks && r < P; ++r) {
        free(f.ranks[r].ops);
    }
    free(f.ranks);
    free(f.qhead);
    free(f.qtail);
    free(f.pool);
    free(f.work);
    free(first);
    return rc;
}

/* ---------------------------------------------------------------------------
 * SYMMETRIC: rank 0 stands for everybody
 * ------------------------------------------------------------------------- */

enum { SYM_NONE = 0, SYM_ROT, SYM_XOR };

static int map_peer(int kind, int peer0, int r, int P)
{
    return SYM_ROT == kind ? (int) (((long) peer0 + r) % P) : (peer0 ^ r);
}

/* Ops that cost the same: the reductions differ only in operand order. */
static int cost_class(int kind)
{
    return (MCA_COLL_LOOM_OP_REDUCE_R == kind || MCA_COLL_LOOM_OP_UNREDUCE == kind) ? MCA_COLL_LOOM_OP_REDUCE
                                                                                   : kind;
}

/* Is rank r's schedule rank 0's with its peers moved by `kind`, as far as time goes?
 * Same op classes and block counts; slots and block indices are not compared (they
 * move with the rank, and pairwise swaps REDUCE and REDUCE_R by rank). */
static bool same_up_to(const mca_coll_loom_sched_t *a, const mca_coll_loom_sched_t *b, int kind, int r,
                       int P)
{
    if (a->nops != b->nops || a->nblocks != b->nblocks || a->nseg != b->nseg) {
        return false;
    }
    for (int i = 0; i < a->nops; ++i) {
        const mca_coll_loom_op_t *x = &a->ops[i], *y = &b->ops[i];
        if (cost_class(x->kind) != cost_class(y->kind) || x->nblk != y->nblk) {
            return false;
        }
        if ((MCA_COLL_LOOM_OP_SEND == x->kind || MCA_COLL_LOOM_OP_RECV == x->kind) &&
            y->peer != map_peer(kind, x->peer, r, P)) {
            return false;
        }
    }
    return true;
}

/* Checks a sample of ranks against rank 0 (a heuristic: symmetry is not proved). */
static int detect_symmetry(ctx_t *x)
{
    const int P = x->P;
    int sample[12], ns = 0, kinds[2] = {SYM_ROT, SYM_XOR}, found = SYM_NONE;
    mca_coll_loom_sched_t s0, s1;
    mca_coll_loom_params_t p = x->shape;
    uint64_t h = 0x9e3779b97f4a7c15ull;

    if (P < 2) {
        return SYM_NONE;
    }
    sample[ns++] = 1;
    sample[ns++] = P - 1;
    sample[ns++] = P / 2;
    sample[ns++] = P / 3;
    sample[ns++] = P / 2 + 1;
    while (ns < 12 - (x->P > (1 << 16) ? 7 : 0)) { /* fewer samples of huge schedules */
        h ^= h << 13;
        h ^= h >> 7;
        h ^= h << 17;
        sample[ns++] = 1 + (int) (h % (uint64_t) (P - 1 > 0 ? P - 1 : 1));
    }
    mca_coll_loom_sched_init(&s0);
    mca_coll_loom_sched_init(&s1);
    s0.no_graph = s1.no_graph = true; /* only their ops are compared */
    p.rank = 0;
    if (MCA_COLL_LOOM_OK == build_rank(x->alg, x->build, &s0, &p)) {
        for (int k = 0; k < 2 && SYM_NONE == found; ++k) {
            bool ok = SYM_XOR != kinds[k] || 0 == (P & (P - 1));
            for (int i = 0; ok && i < ns; ++i) {
                if (sample[i] <= 0 || sample[i] >= P) {
                    continue;
                }
                p.rank = sample[i];
                ok = MCA_COLL_LOOM_OK == build_rank(x->alg, x->build, &s1, &p) &&
                     same_up_to(&s0, &s1, kinds[k], sample[i], P);
            }
            if (ok) {
                found = kinds[k];
            }
        }
    }
    mca_coll_loom_sched_fini(&s0);
    mca_coll_loom_sched_fini(&s1);
    return found;
}

/* Rank 0's k-th send to m(q) leaves when rank q's k-th send to 0 does, so a receive
 * from q takes the oldest unused send of rank 0 to m(q): -q under rotation, q under
 * xor. */
static int simulate_symmetric(ctx_t *x, int kind, double *finish, mca_coll_loom_model_result_t *res)
{
    const int P = x->P;
    int nops, rc = MCA_COLL_LOOM_OK, first = 0, nmsg = 0, msgcap = 0;
    int *head = NULL, *tail = NULL;
    msg_t *msgs = NULL;
    clock_t_ c = {0};
    cop_t *ops = compile(x, 0, &nops, &rc);

    if (NULL == ops) {
        return rc;
    }
    head = malloc((size_t) P * sizeof(int));
    tail = malloc((size_t) P * sizeof(int));
    if (!head || !tail) {
        rc = MCA_COLL_LOOM_ERR_NOMEM;
        goto out;
    }
    memset(head, 0xff, (size_t) P * sizeof(int));
    memset(tail, 0xff, (size_t) P * sizeof(int));
    res->rounds = 0;
    for (int pc = 0; pc < nops && MCA_COLL_LOOM_OK == rc; ++pc) {
        const cop_t op = ops[pc];
        switch (KIND(op)) {
        case K_SEND: {
            int p = PEER(op);
            if (nmsg == msgcap) {
                int cap = msgcap ? 2 * msgcap : 1024;
                msg_t *mm = realloc(msgs, (size_t) cap * sizeof(*mm));
                if (NULL == mm) {
                    rc = MCA_COLL_LOOM_ERR_NOMEM;
                    break;
                }
                msgs = mm;
                msgcap = cap;
            }
            post_send(x->m, &c, op.v, &msgs[nmsg].t0, &msgs[nmsg].t1);
            msgs[nmsg].bytes = op.v;
            msgs[nmsg].next = -1;
            if (tail[p] >= 0) {
                msgs[tail[p]].next = nmsg;
            } else {
                head[p] = nmsg;
            }
            tail[p] = nmsg++;
            x->messages++;
            break;
        }
        case K_RECV:
            break;
        case K_LOCAL:
            c.cpu += op.v;
            break;
        default: {
            int n = 0;
            for (int i = first; i < pc; ++i) {
                n += K_RECV == KIND(ops[i]);
            }
            if (MCA_COLL_LOOM_OK != (rc = arrivals_reserve(x, n))) {
                break;
            }
            n = 0;
            for (int i = first; i < pc; ++i) {
                int q, mq, j;
                if (K_RECV != KIND(ops[i])) {
                    continue;
                }
                q = PEER(ops[i]);
                mq = SYM_ROT == kind ? (P - q) % P : q;
                if ((j = head[mq]) < 0) {
                    res->note = "the schedule is not symmetric in time (a receive has no mirror send)";
                    rc = MCA_COLL_LOOM_ERR_NOTSUP;
                    break;
                }
                head[mq] = msgs[j].next;
                if (head[mq] < 0) {
                    tail[mq] = -1;
                }
                x->arr[n++] = (arrival_t) {msgs[j].t0, msgs[j].t1, msgs[j].bytes};
            }
            if (MCA_COLL_LOOM_OK == rc) {
                complete_round(x->m, &c, x->arr, n);
                res->rounds++;
                first = pc + 1;
            }
            break;
        }
        }
    }
    if (MCA_COLL_LOOM_OK == rc) {
        x->ops += nops;
        res->time = res->mean = c.cpu;
        res->last_rank = 0;
        res->method = MCA_COLL_LOOM_MODEL_SYMMETRIC;
        for (int r = 0; NULL != finish && r < P; ++r) {
            finish[r] = c.cpu;
        }
    }
out:
    free(ops);
    free(msgs);
    free(head);
    free(tail);
    return rc;
}

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
    post_send(g->x->m, &k->c, bytes, &t0, &t1);
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
    in = in_link(g->x->m, &k->c, e->t, e->t1, e->bytes);
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
    rc = build_rank(x->alg, x->build, s, &p);
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
        const size_t el = MCA_COLL_LOOM_OP_WAIT == op->kind ? 0 : op_elems(x, s, op);
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

static int simulate_graph(ctx_t *x, long max_live, double *finish, mca_coll_loom_model_result_t *res)
{
    const int P = x->P;
    gsim_t g = {.x = x, .freelist = -1, .max_live = max_live};
    gnet_t net = {0};
    int rc = MCA_COLL_LOOM_OK;
    double sum = 0.0;

    g.ranks = calloc((size_t) P, sizeof(*g.ranks));
    if (NULL == g.ranks) {
        rc = MCA_COLL_LOOM_ERR_NOMEM;
        goto out;
    }
    /* Every rank is built at time 0 (each posts its first ops then), so all are held
     * at once: refuse early what would surely exceed the budget, a few ranks standing
     * for the others (a root alone would underestimate the inner ranks of a tree). */
    {
        const int sample[4] = {0, 1, P / 2, P - 1};
        double units = 0.0;
        int ns = 0;
        for (int i = 0; i < 4 && MCA_COLL_LOOM_OK == rc; ++i) {
            mca_coll_loom_params_t p = x->shape;
            if (sample[i] >= P || (i > 0 && sample[i] <= sample[i - 1])) {
                continue;
            }
            p.rank = sample[i];
            rc = build_rank(x->alg, x->build, &x->sched, &p);
            if (MCA_COLL_LOOM_OK == rc && NULL != x->sched.succ_start) {
                units += 3.0 * x->sched.nops + 0.5 * x->sched.succ_start[x->sched.nops];
                ns++;
            }
        }
        if (MCA_COLL_LOOM_OK == rc && ns > 0 && (double) P * units / ns > 1.25 * (double) max_live) {
            g.note = g_over_note;
            rc = MCA_COLL_LOOM_ERR_NOTSUP;
        }
        if (MCA_COLL_LOOM_OK != rc) {
            goto out;
        }
    }
    if (x->link_G > 0.0) {
        const mca_coll_loom_torus_t *t = x->shape.torus;
        const long nodes = mca_coll_loom_torus_nodes(t);
        net.t = t;
        net.coords = x->shape.torus_coords;
        net.node_of = x->shape.node_of;
        net.nlinks = nodes * mca_coll_loom_torus_links_per_node(t);
        if (nodes <= 0 || net.nlinks > (1L << 26)) {
            g.note = "the torus is too large for the network model";
            rc = MCA_COLL_LOOM_ERR_NOTSUP;
            goto out;
        }
        net.links = calloc((size_t) net.nlinks, sizeof(*net.links));
        net.route = malloc(sizeof(long) * (size_t) (mca_coll_loom_torus_max_hops(t) + 1));
        if (NULL == net.links || NULL == net.route) {
            rc = MCA_COLL_LOOM_ERR_NOMEM;
            goto out;
        }
        g.net = &net;
    }
    for (int r = 0; r < P && MCA_COLL_LOOM_OK == rc; ++r) {
        rc = g_compile(&g, r);
    }
    for (int r = 0; r < P && MCA_COLL_LOOM_OK == rc; ++r) {
        rc = g_kick(&g, r);
    }
    while (MCA_COLL_LOOM_OK == rc && g.nheap > 0) {
        const gev_t e = ev_pop(&g);
        grank_t *k = &g.ranks[e.rank];

        g.now = e.t;
        switch (e.type) {
        case EV_CPU:
            k->busy = 0;
            rc = g_item_end(&g, e.rank, e.a);
            break;
        case EV_DONE:
            rc = g_done(&g, e.rank, e.a);
            break;
        case EV_MSG:
            rc = g_message(&g, &e);
            break;
        default: /* EV_AVAIL: the next sweep completes it */
            g_append(k, &k->chead, &k->ctail, e.a);
            k->ncomp++;
            break;
        }
        if (MCA_COLL_LOOM_OK == rc) {
            rc = g_kick(&g, e.rank);
        }
    }
    if (MCA_COLL_LOOM_OK != rc) {
        goto out;
    }
    for (int r = 0; r < P; ++r) {
        const grank_t *k = &g.ranks[r];
        if (ST_DONE != k->state) {
            g.note = "deadlock: an op waits for a release or a message that never comes";
            rc = MCA_COLL_LOOM_ERR_NOTSUP;
            goto out;
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
    res->peak_live_ops = g.peak;
    res->max_link_load = net.max_load;
    res->link_messages = net.messages;
    res->max_link_hops = net.max_hops;

out:
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

/* ---------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------- */

static void ctx_init(ctx_t *x, int alg, mca_coll_loom_build_fn_t build, const mca_coll_loom_params_t *shape, mca_coll_loom_coll_t coll,
                     size_t bytes, size_t elem_size, const mca_coll_loom_model_params_t *m,
                     const size_t *displ)
{
    memset(x, 0, sizeof(*x));
    x->m = m;
    x->alg = alg;
    x->build = build;
    x->P = shape->P;
    x->shape = *shape;
    x->shape.coll = coll;
    x->esz = elem_size > 0 ? elem_size : 1;
    x->count = bytes / x->esz;
    x->displ = displ;
    mca_coll_loom_sched_init(&x->sched);
}

static void ctx_fini(ctx_t *x)
{
    mca_coll_loom_sched_fini(&x->sched);
    free(x->arr);
}

static int predict_any(int alg, mca_coll_loom_build_fn_t build, mca_coll_loom_coll_t coll,
                       const mca_coll_loom_params_t *shape, size_t bytes, size_t elem_size,
                       const mca_coll_loom_model_params_t *m, const mca_coll_loom_model_opts_t *opts,
                       double *finish, mca_coll_loom_model_result_t *res)
{
    mca_coll_loom_model_opts_t dflt;
    mca_coll_loom_model_result_t dummy;
    mca_coll_loom_params_t p;
    ctx_t x;
    int rc = MCA_COLL_LOOM_ERR_NOTSUP, sym = SYM_NONE;

    if (NULL == res) {
        res = &dummy;
    }
    memset(res, 0, sizeof(*res));
    if (NULL == opts) {
        mca_coll_loom_model_opts_default(&dflt);
        opts = &dflt;
    }
    if (NULL == shape || NULL == m || (NULL == build && (alg < 0 || alg >= mca_coll_loom_num_algs)) ||
        shape->P < 1 || shape->P > MAX_P) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    p = *shape;
    p.coll = coll;
    p.rank = 0;
    if (NULL == build) {
        if (!mca_coll_loom_alg_serves(alg, coll)) {
            res->note = "the algorithm does not serve this collective";
            return MCA_COLL_LOOM_ERR_NOTSUP;
        }
        if (NULL != (res->note = mca_coll_loom_alg_refusal(alg, &p))) {
            return MCA_COLL_LOOM_ERR_NOTSUP;
        }
    }

    if (opts->link_G > 0.0 && (NULL == p.torus || NULL == p.torus_coords || NULL == p.node_of)) {
        res->note = "the torus network needs the ranks' nodes and the nodes' coordinates";
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    ctx_init(&x, alg, build, &p, coll, bytes, elem_size, m, opts->part_displ);
    x.link_G = opts->link_G > 0.0 ? opts->link_G : 0.0;
    x.hop_L = opts->hop_L;
    x.sched.no_graph = MCA_COLL_LOOM_MODEL_GRAPH != opts->method && 0.0 == x.link_G;
    if (MCA_COLL_LOOM_MODEL_GRAPH == opts->method || x.link_G > 0.0) {
        rc = simulate_graph(&x, opts->max_live_ops > 0 ? opts->max_live_ops : DEFAULT_MAX_LIVE_OPS, finish, res);
        res->ops = x.ops;
        res->messages = x.messages;
        ctx_fini(&x);
        return rc;
    }
    if (MCA_COLL_LOOM_MODEL_SYMMETRIC == opts->method ||
        (0 == opts->method && shape->P > opts->sym_min_P)) {
        sym = detect_symmetry(&x);
    }
    if (SYM_NONE != sym) {
        rc = simulate_symmetric(&x, sym, finish, res);
    } else if (MCA_COLL_LOOM_MODEL_SYMMETRIC == opts->method) {
        res->note = "no rotation or xor symmetry found in the schedules";
        rc = MCA_COLL_LOOM_ERR_NOTSUP;
    }
    if (MCA_COLL_LOOM_MODEL_SYMMETRIC != opts->method &&
        (SYM_NONE == sym || MCA_COLL_LOOM_OK != rc)) {
        memset(res, 0, sizeof(*res));
        x.ops = x.messages = 0;
        rc = simulate_full(&x, opts->max_live_ops > 0 ? opts->max_live_ops : DEFAULT_MAX_LIVE_OPS, finish,
                           res);
    }
    res->ops = x.ops;
    res->messages = x.messages;
    ctx_fini(&x);
    return rc;
}

int mca_coll_loom_model_predict(int alg, mca_coll_loom_coll_t coll, const mca_coll_loom_params_t *shape,
                                size_t bytes, size_t elem_size, const mca_coll_loom_model_params_t *m,
                                const mca_coll_loom_model_opts_t *opts, double *finish,
                                mca_coll_loom_model_result_t *res)
{
    return predict_any(alg, NULL, coll, shape, bytes, elem_size, m, opts, finish, res);
}

int mca_coll_loom_model_predict_builder(mca_coll_loom_build_fn_t build, const mca_coll_loom_params_t *shape,
                                        size_t bytes, size_t elem_size,
                                        const mca_coll_loom_model_params_t *m,
                                        const mca_coll_loom_model_opts_t *opts, double *finish,
                                        mca_coll_loom_model_result_t *res)
{
    if (NULL == build || NULL == shape) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    return predict_any(-1, build, shape->coll, shape, bytes, elem_size, m, opts, finish, res);
}

/* ---------------------------------------------------------------------------
 * choose_segs
 * ------------------------------------------------------------------------- */

typedef struct {
    int alg, P;
    mca_coll_loom_build_fn_t build;
    mca_coll_loom_coll_t coll;
    mca_coll_loom_params_t shape;
    size_t bytes, esz;
    const mca_coll_loom_model_params_t *m;
    long budget;      /* simulated ops left */
    long ops_base, ops_per_seg; /* rank 0's op count ~ base + per_seg * segs */
    bool symmetric;
    int best;
    double tbest;
} choose_t;

/* Estimated cost of simulating segs = s, in ops. */
static long sim_cost(const choose_t *c, int s)
{
    long per_rank = c->ops_base + c->ops_per_seg * (long) s;
    return c->symmetric ? per_rank : per_rank * (long) c->P;
}

/* Simulates segs = s if the budget allows; returns the time or -1. */
static double try_segs(choose_t *c, int s)
{
    mca_coll_loom_model_result_t res;
    mca_coll_loom_params_t p = c->shape;
    long cost = sim_cost(c, s);

    if (cost > c->budget) {
        return -1.0;
    }
    c->budget -= cost;
    p.segs = s;
    if (MCA_COLL_LOOM_OK != predict_any(c->alg, c->build, c->coll, &p, c->bytes, c->esz, c->m, NULL, NULL,
                                        &res)) {
        return -1.0;
    }
    if (c->best < 1 || res.time < c->tbest) {
        c->best = s;
        c->tbest = res.time;
    }
    return res.time;
}

/* Op by op (not memcmp: the op struct has padding). */
static bool same_ops(const mca_coll_loom_sched_t *a, const mca_coll_loom_sched_t *b)
{
    for (int i = 0; i < a->nops; ++i) {
        const mca_coll_loom_op_t *x = &a->ops[i], *y = &b->ops[i];
        if (x->kind != y->kind || x->src != y->src || x->dst != y->dst || x->peer != y->peer ||
            x->blk != y->blk || x->nblk != y->nblk || x->dblk != y->dblk) {
            return false;
        }
    }
    return true;
}

static int rank0_ops(const choose_t *c, int segs, mca_coll_loom_sched_t *s)
{
    mca_coll_loom_params_t p = c->shape;
    p.segs = segs;
    p.rank = 0;
    if (MCA_COLL_LOOM_OK != build_rank(c->alg, c->build, s, &p)) {
        return -1;
    }
    return s->nops;
}

static int choose_any(int alg, mca_coll_loom_build_fn_t build, mca_coll_loom_coll_t coll, int P,
                      size_t bytes, size_t elem_size, const mca_coll_loom_model_params_t *m,
                      const mca_coll_loom_params_t *shape, double *predicted, int *method)
{
    choose_t c = {.alg = alg, .build = build, .P = P, .coll = coll, .bytes = bytes, .m = m, .budget = CHOOSE_BUDGET_OPS};
    mca_coll_loom_sched_t s1, s2;
    int n1, n2, nparts, smax, lo, hi;
    size_t count;
    bool uses;
    double dummy;
    int dmethod;

    if (NULL == predicted) {
        predicted = &dummy;
    }
    if (NULL == method) {
        method = &dmethod;
    }
    *predicted = -1.0;
    *method = MCA_COLL_LOOM_MODEL_NONE;
    if ((NULL == build && (alg < 0 || alg >= mca_coll_loom_num_algs)) || P < 1 || P > MAX_P || NULL == m) {
        return 1;
    }
    c.esz = elem_size > 0 ? elem_size : 1;
    count = bytes / c.esz;
    if (NULL != shape) {
        c.shape = *shape;
    } else {
        memset(&c.shape, 0, sizeof(c.shape));
        c.shape.call = MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT;
    }
    c.shape.P = P;
    c.shape.coll = coll;

    /* Does segs change the schedule at all?  Compare segs 1 and 2. */
    mca_coll_loom_sched_init(&s1);
    mca_coll_loom_sched_init(&s2);
    s1.no_graph = s2.no_graph = true;
    n1 = rank0_ops(&c, 1, &s1);
    n2 = rank0_ops(&c, 2, &s2);
    uses = n1 >= 0 && n2 >= 0 &&
           (n1 != n2 || s1.nblocks != s2.nblocks || s1.nseg != s2.nseg ||
            !same_ops(&s1, &s2));
    nparts = (n2 >= 0 && s2.nblocks > 0) ? s2.nblocks / (s2.nseg > 0 ? s2.nseg : 1) : 1;
    c.ops_per_seg = n2 > n1 ? n2 - n1 : 0;
    c.ops_base = n1 - c.ops_per_seg > 1 ? n1 - c.ops_per_seg : 1;
    mca_coll_loom_sched_fini(&s1);
    mca_coll_loom_sched_fini(&s2);

    smax = (int) (count / (size_t) (nparts > 0 ? nparts : 1));
    if (smax > CHOOSE_MAX_SEGS) {
        smax = CHOOSE_MAX_SEGS;
    }
    if (!uses || smax <= 1) {
        mca_coll_loom_model_result_t res;
        c.shape.segs = 1;
        if (MCA_COLL_LOOM_OK == predict_any(alg, build, coll, &c.shape, bytes, c.esz, m, NULL, NULL, &res)) {
            *predicted = res.time;
            *method = res.method;
        }
        return 1;
    }

    if (P > DEFAULT_SYM_MIN_P) {
        ctx_t x;
        ctx_init(&x, alg, build, &c.shape, coll, bytes, c.esz, m, NULL);
        x.shape.segs = 2;
        c.symmetric = SYM_NONE != detect_symmetry(&x);
        ctx_fini(&x);
    }
    if (P <= 64 && c.budget < 16 * sim_cost(&c, smax)) {
        c.budget = 16 * sim_cost(&c, smax); /* small P: always simulate */
    }

    /* Coarse: powers of two (and smax) while the budget lasts. */
    for (int s = 1;; s = 2 * s < smax ? 2 * s : smax) {
        if (try_segs(&c, s) < 0 || s == smax) {
            break;
        }
    }
    if (c.best >= 1) {
        /* Fine: ternary search on the integers around the best power of two (the
         * predicted time is close to convex in segs there). */
        lo = c.best / 2 > 1 ? c.best / 2 : 1;
        hi = 2 * c.best < smax ? 2 * c.best : smax;
        while (hi - lo > 2) {
            int m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
            double t1 = try_segs(&c, m1), t2 = try_segs(&c, m2);
            if (t1 < 0 || t2 < 0) {
                break;
            }
            if (t1 <= t2) {
                hi = m2;
            } else {
                lo = m1;
            }
        }
        for (int s = lo; s <= hi; ++s) {
            try_segs(&c, s);
        }
        *predicted = c.tbest;
        *method = c.symmetric ? MCA_COLL_LOOM_MODEL_SYMMETRIC : MCA_COLL_LOOM_MODEL_FULL;
        return c.best;
    }

    /* Too large to simulate: a pipeline of depth D in s pieces fills in D - 1 stages
     * of L + 2o + b n/s, then delivers a piece every max(2o, g) + b n/s:
     *   T(s) = (D - 1)(L + 2o + b n/s) + s max(2o, g) + b n,
     * least at s* = sqrt((D - 1) b n / max(2o, g)).  D = ceil(log2 P) (tree depth);
     * b = G, plus gamma for reductions. */
    {
        const bool red = MCA_COLL_LOOM_COLL_BCAST != coll && MCA_COLL_LOOM_COLL_ALLGATHER != coll;
        double D = ceil(log2((double) P)), a1 = m->L + 2.0 * m->o, a2 = 2.0 * m->o > m->g ? 2.0 * m->o : m->g;
        double b = m->G + (red ? m->gamma : 0.0), n = (double) bytes, s;
        if (D < 1) {
            D = 1;
        }
        s = a2 > 0 ? sqrt((D - 1) * b * n / a2) : smax;
        s = s < 1 ? 1 : (s > smax ? smax : s);
        c.best = (int) (s + 0.5);
        *predicted = (D - 1) * (a1 + b * n / c.best) + c.best * a2 + b * n;
        *method = MCA_COLL_LOOM_MODEL_ANALYTIC;
        return c.best;
    }
}

int mca_coll_loom_model_choose_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes,
                                    size_t elem_size, const mca_coll_loom_model_params_t *m,
                                    const mca_coll_loom_params_t *shape, double *predicted,
                                    int *method)
{
    return choose_any(alg, NULL, coll, P, bytes, elem_size, m, shape, predicted, method);
}

int mca_coll_loom_model_choose_segs_builder(mca_coll_loom_build_fn_t build, mca_coll_loom_coll_t coll, int P,
                                            size_t bytes, size_t elem_size,
                                            const mca_coll_loom_model_params_t *m,
                                            const mca_coll_loom_params_t *shape, double *predicted,
                                            int *method)
{
    return NULL == build ? 1 : choose_any(-1, build, coll, P, bytes, elem_size, m, shape, predicted, method);
}

/* ---------------------------------------------------------------------------
 * auto_segs: the cheap choice for the component
 * ------------------------------------------------------------------------- */

/* Depth of a tree over P ranks, the fill of a pipeline (at least 1). */
static double tree_depth(int P)
{
    return P > 2 ? ceil(log2((double) P)) : 1.0;
}

int mca_coll_loom_model_auto_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, size_t elem_size,
                                  const mca_coll_loom_model_params_t *m)
{
    const size_t esz = elem_size > 0 ? elem_size : 1, count = bytes / esz;
    const int P0 = P < AUTO_FIT_P ? P : AUTO_FIT_P;
    mca_coll_loom_params_t shape;
    mca_coll_loom_sched_t s1, s2;
    int n1, n2, nparts = 1;
    bool uses;
    double smax;

    if (alg < 0 || alg >= mca_coll_loom_num_algs || P < 2 || P > MAX_P || NULL == m || count < 2) {
        return 1;
    }
    memset(&shape, 0, sizeof(shape));
    shape.call = MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT;
    shape.coll = coll;
    shape.P = P0;
    if (!mca_coll_loom_alg_serves(alg, coll) || NULL != mca_coll_loom_alg_refusal(alg, &shape)) {
        return 1;
    }

    /* Does segs change the schedule, and in how many parts?  Rank 0 at P0 ranks. */
    mca_coll_loom_sched_init(&s1);
    mca_coll_loom_sched_init(&s2);
    s1.no_graph = s2.no_graph = true;
    shape.segs = 1;
    n1 = MCA_COLL_LOOM_OK == mca_coll_loom_alg_build(alg, &s1, &shape) ? s1.nops : -1;
    shape.segs = 2;
    n2 = MCA_COLL_LOOM_OK == mca_coll_loom_alg_build(alg, &s2, &shape) ? s2.nops : -1;
    uses = n1 >= 0 && n2 >= 0 &&
           (n1 != n2 || s1.nblocks != s2.nblocks || s1.nseg != s2.nseg || !same_ops(&s1, &s2));
    if (uses && s2.nblocks > 0 && s2.nseg > 1) {
        nparts = s2.nblocks / s2.nseg; /* segments of parts; else blocks = chunks of the whole */
    }
    mca_coll_loom_sched_fini(&s1);
    mca_coll_loom_sched_fini(&s2);
    if (!uses) {
        return 1;
    }

    if (nparts > 1) {
        /* A schedule in parts (the ring: one part per rank) is bandwidth-optimal
         * unsegmented under LogGP, and segments only add messages; what they buy is
         * cache locality, which the model does not see.  So segments of at most
         * AUTO_SEG_BYTES, the size the component's measurements favoured (loom_bw,
         * docs/user/performance.md); an allgather has no reduction to keep in cache, and
         * runs unsegmented. */
        if (MCA_COLL_LOOM_COLL_ALLGATHER == coll) {
            return 1;
        }
        size_t parts = nparts == P0 ? (size_t) P : (size_t) nparts;
        size_t part = count / parts, seg_el = AUTO_SEG_BYTES / esz;
        size_t segs = seg_el > 0 ? (part + seg_el - 1) / seg_el : part;
        if (segs > part) {
            segs = part;
        }
        if (segs > CHOOSE_MAX_SEGS) {
            segs = CHOOSE_MAX_SEGS;
        }
        return segs > 1 ? (int) segs : 1;
    }

    /* A pipeline over the whole message (the two-tree): (K + F) rounds of about
     * b n / K + a each, i.e. T(K) = A + B K + C / K with B = a and C = F b n.  Fit
     * A, B, C to three cheap simulations at P0 ranks and small K, scale the fill
     * (C) by the tree depth from P0 to P, and take K* = sqrt(C / B). */
    {
        /* sample past the fill (about 2 depth rounds: reduce + bcast), where the
         * rounds are in steady state and the fit holds */
        const int f = 2 * (int) tree_depth(P0);
        int ks[3] = {f, 2 * f, 4 * f}, kbest = 1;
        double t[4], A = 0.0, B, C, k;
        smax = (double) (count < CHOOSE_MAX_SEGS ? count : CHOOSE_MAX_SEGS);
        if ((double) ks[2] > smax) {
            /* few elements: a tiny simulation each, try every K (at most 4f) */
            double tb = -1.0;
            for (int kk = 1; kk <= (int) smax; ++kk) {
                mca_coll_loom_model_result_t res;
                shape.segs = kk;
                if (MCA_COLL_LOOM_OK == predict_any(alg, NULL, coll, &shape, bytes, esz, m, NULL, NULL, &res) &&
                    (tb < 0 || res.time < tb)) {
                    tb = res.time;
                    kbest = kk;
                }
            }
            return kbest;
        }
        /* t[0], t[1]: the call at K = 2f, 4f; t[2], t[3]: one element per chunk at
         * K = f, 4f, where the bandwidth terms vanish and the slope is B */
        for (int i = 0; i < 4; ++i) {
            mca_coll_loom_model_result_t res;
            mca_coll_loom_model_opts_t o;
            const int kk = 0 == i ? ks[1] : (1 == i ? ks[2] : (2 == i ? ks[0] : ks[2]));
            const size_t nb = i < 2 ? bytes : (size_t) kk * esz;
            mca_coll_loom_model_opts_default(&o);
            o.method = MCA_COLL_LOOM_MODEL_FULL;
            shape.segs = kk;
            if (MCA_COLL_LOOM_OK != predict_any(alg, NULL, coll, &shape, nb, esz, m, &o, NULL, &res)) {
                return 1;
            }
            t[i] = res.time;
        }
        kbest = t[1] < t[0] ? 2 : 1;
        B = (t[3] - t[2]) / (double) (ks[2] - ks[0]);
        /* T(k) - T(2k) = C / 2k - B k */
        C = 2.0 * ks[1] * (t[0] - t[1] + B * ks[1]);
        (void) A;
        if (C <= 0.0 || B <= 0.0) {
            return ks[kbest]; /* not the expected shape: the better sample */
        }
        C *= tree_depth(P) / tree_depth(P0);
        k = sqrt(C / B);
        k = k < 1.0 ? 1.0 : (k > smax ? smax : k);
        return (int) (k + 0.5);
    }
}
