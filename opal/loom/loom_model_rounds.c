/*
 * loom: the LogGP model's round mode (loom_model.h, "Rounds or graph"): FULL, every
 * rank's schedule read as rounds, and SYMMETRIC, rank 0 standing for every rank.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opal/loom/loom_model_impl.h"

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
    cop_t *ops;
    int nops;
    int pc;
    int rounds;
    uint8_t state;   /* ST_* */
    uint8_t queued;
    clock_t_ c;
} rank_t;

/* ---------------------------------------------------------------------------
 * Schedules in timing form
 * ------------------------------------------------------------------------- */

/* Rank `rank`'s schedule built and turned into timing ops (local runs merged, empty
 * block ops dropped).  Returns NULL with *rc set on failure. */
static cop_t *compile(ctx_t *x, int rank, int *nops, int *rc)
{
    mca_coll_loom_sched_t *s = &x->sched;
    mca_coll_loom_params_t p = x->shape;
    cop_t *c;
    int n = 0;

    p.rank = rank;
    *rc = mca_coll_loom_model_build_rank(x->alg, x->build, s, &p);
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
        size_t el = op->kind == MCA_COLL_LOOM_OP_WAIT ? 0 : mca_coll_loom_model_op_elems(x, s, op);
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
 * The round rules (shared by both ways of running)
 * ------------------------------------------------------------------------- */

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
        double in = mca_coll_loom_model_in_link(m, c, a[i].t0, a[i].t1, a[i].bytes);
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
    mca_coll_loom_model_post_send(f->x->m, &f->ranks[me].c, bytes, &msg->t0, &msg->t1);
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

int mca_coll_loom_model_simulate_full(ctx_t *x, long max_live, double *finish, mca_coll_loom_model_result_t *res)
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
        rc = mca_coll_loom_model_build_rank(x->alg, x->build, &x->sched, &p);
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
int mca_coll_loom_model_detect_symmetry(ctx_t *x)
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
    /* fewer elements than blocks: some blocks are empty, so ranks with the same ops
     * move different bytes, and rank 0 stands for nobody */
    if (MCA_COLL_LOOM_OK == mca_coll_loom_model_build_rank(x->alg, x->build, &s0, &p) &&
        (NULL != x->displ || s0.nblocks <= 0 || x->count >= (size_t) s0.nblocks)) {
        for (int k = 0; k < 2 && SYM_NONE == found; ++k) {
            bool ok = SYM_XOR != kinds[k] || 0 == (P & (P - 1));
            for (int i = 0; ok && i < ns; ++i) {
                if (sample[i] <= 0 || sample[i] >= P) {
                    continue;
                }
                p.rank = sample[i];
                ok = MCA_COLL_LOOM_OK == mca_coll_loom_model_build_rank(x->alg, x->build, &s1, &p) &&
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
int mca_coll_loom_model_simulate_symmetric(ctx_t *x, int kind, double *finish, mca_coll_loom_model_result_t *res)
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
            mca_coll_loom_model_post_send(x->m, &c, op.v, &msgs[nmsg].t0, &msgs[nmsg].t1);
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
