/*
 * loom: the schedule container (see loom_sched.h for the execution model).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/loom/loom_sched.h"

void mca_coll_loom_sched_init(mca_coll_loom_sched_t *s)
{
    memset(s, 0, sizeof(*s));
    s->nseg = 1;
}

static void free_graph(mca_coll_loom_sched_t *s)
{
    free(s->npred);
    free(s->succ_start);
    free(s->succ);
    free(s->chan_next);
    s->npred = s->succ_start = s->succ = s->chan_next = NULL;
    s->ntransfers = 0;
}

void mca_coll_loom_sched_fini(mca_coll_loom_sched_t *s)
{
    free(s->ops);
    free_graph(s);
    mca_coll_loom_sched_init(s);
}

void mca_coll_loom_sched_reset(mca_coll_loom_sched_t *s)
{
    free_graph(s);
    s->nops = 0;
    s->nslots = 0;
    s->nblocks = 0;
    s->nseg = 1;
    s->max_inflight = 0;
    s->rounds = 0;
    s->input_after_result = false;
    s->moves_blocks = false;
    s->lockstep = false;
    s->one_send = false;
    s->exchange = false;
    s->error = MCA_COLL_LOOM_OK;
}

static void sched_append_move(mca_coll_loom_sched_t *s, int kind, int src, int dst, int peer, int blk,
                              int dblk, int nblk)
{
    if (MCA_COLL_LOOM_OK != s->error) {
        return;
    }
    if (src < 0 || src >= MCA_COLL_LOOM_MAX_SLOTS || dst < 0 || dst >= MCA_COLL_LOOM_MAX_SLOTS ||
        nblk < 0 || (nblk > 0 && (blk < 0 || blk + nblk > s->nblocks || dblk < 0 || dblk + nblk > s->nblocks)) ||
        (dblk != blk && src == dst && blk < dblk + nblk && dblk < blk + nblk)) {
        /* (a move within one slot must not overlap itself) */
        s->error = MCA_COLL_LOOM_ERR_BADPARAM;
        return;
    }
    if (s->nops == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        mca_coll_loom_op_t *ops = realloc(s->ops, (size_t) cap * sizeof(*ops));
        if (NULL == ops) {
            s->error = MCA_COLL_LOOM_ERR_NOMEM;
            return;
        }
        s->ops = ops;
        s->cap = cap;
    }
    s->ops[s->nops++] = (mca_coll_loom_op_t) {.kind = (uint8_t) kind, .src = (uint8_t) src,
                                               .dst = (uint8_t) dst, .peer = peer, .blk = blk,
                                               .nblk = nblk, .dblk = dblk};
    if (dblk != blk) {
        s->moves_blocks = true;
    }
}

static void sched_append_blk(mca_coll_loom_sched_t *s, int kind, int src, int dst, int peer, int blk,
                             int nblk)
{
    sched_append_move(s, kind, src, dst, peer, blk, blk, nblk);
}

static void sched_append(mca_coll_loom_sched_t *s, int kind, int src, int dst, int peer)
{
    sched_append_blk(s, kind, src, dst, peer, 0, 0);
}

void mca_coll_loom_sched_set_blocks(mca_coll_loom_sched_t *s, int nblocks)
{
    if (nblocks < 1) {
        s->error = MCA_COLL_LOOM_ERR_BADPARAM;
        return;
    }
    s->nblocks = nblocks;
    s->nseg = 1;
}

void mca_coll_loom_sched_set_segmented_blocks(mca_coll_loom_sched_t *s, int nparts, int nseg)
{
    if (nparts < 1 || nseg < 1 || nparts > INT32_MAX / nseg) {
        s->error = MCA_COLL_LOOM_ERR_BADPARAM;
        return;
    }
    s->nblocks = nparts * nseg;
    s->nseg = nseg;
}

void mca_coll_loom_sched_send_blk(mca_coll_loom_sched_t *s, int peer, int slot, int blk, int nblk)
{
    sched_append_blk(s, MCA_COLL_LOOM_OP_SEND, slot, slot, peer, blk, nblk > 0 ? nblk : -1);
}

void mca_coll_loom_sched_recv_blk(mca_coll_loom_sched_t *s, int peer, int slot, int blk, int nblk)
{
    sched_append_blk(s, MCA_COLL_LOOM_OP_RECV, slot, slot, peer, blk, nblk > 0 ? nblk : -1);
}

void mca_coll_loom_sched_reduce_blk(mca_coll_loom_sched_t *s, int src, int dst, int blk, int nblk)
{
    mca_coll_loom_sched_reduce_move(s, src, blk, dst, blk, nblk);
}

void mca_coll_loom_sched_reduce_r_blk(mca_coll_loom_sched_t *s, int src, int dst, int blk, int nblk)
{
    sched_append_blk(s, MCA_COLL_LOOM_OP_REDUCE_R, src, dst, -1, blk, nblk > 0 ? nblk : -1);
}

void mca_coll_loom_sched_copy_blk(mca_coll_loom_sched_t *s, int src, int dst, int blk, int nblk)
{
    mca_coll_loom_sched_copy_move(s, src, blk, dst, blk, nblk);
}

void mca_coll_loom_sched_copy_move(mca_coll_loom_sched_t *s, int src, int blk, int dst, int dblk, int nblk)
{
    if (src != dst || blk != dblk) {
        sched_append_move(s, MCA_COLL_LOOM_OP_COPY, src, dst, -1, blk, dblk, nblk > 0 ? nblk : -1);
    }
}

void mca_coll_loom_sched_reduce_move(mca_coll_loom_sched_t *s, int src, int blk, int dst, int dblk, int nblk)
{
    sched_append_move(s, MCA_COLL_LOOM_OP_REDUCE, src, dst, -1, blk, dblk, nblk > 0 ? nblk : -1);
}

void mca_coll_loom_sched_moves_blocks(mca_coll_loom_sched_t *s)
{
    s->moves_blocks = true;
}

void mca_coll_loom_sched_lockstep(mca_coll_loom_sched_t *s)
{
    s->lockstep = true;
}

void mca_coll_loom_sched_one_send(mca_coll_loom_sched_t *s)
{
    s->one_send = true;
}

void mca_coll_loom_sched_exchange(mca_coll_loom_sched_t *s)
{
    s->exchange = true;
}

void mca_coll_loom_sched_append_mapped(mca_coll_loom_sched_t *dst, const mca_coll_loom_sched_t *src,
                                       const int *peer_map, int res_slot, int in_slot, int scratch_base)
{
    if (MCA_COLL_LOOM_OK != src->error) {
        dst->error = src->error;
        return;
    }
    /* a blocked phase brings its block layout; two different layouts cannot share one
     * schedule (the executor maps blocks to elements with one layout per call) */
    if (src->nblocks > 0) {
        if (0 == dst->nblocks) {
            dst->nblocks = src->nblocks;
            dst->nseg = src->nseg;
        } else if (dst->nblocks != src->nblocks || dst->nseg != src->nseg) {
            dst->error = MCA_COLL_LOOM_ERR_NOTSUP;
            return;
        }
    }
    for (int i = 0; i < src->nops; ++i) {
        const mca_coll_loom_op_t *o = &src->ops[i];
        int slot_src = 0 == o->src ? res_slot : 1 == o->src ? in_slot : scratch_base + o->src - 2;
        int slot_dst = 0 == o->dst ? res_slot : 1 == o->dst ? in_slot : scratch_base + o->dst - 2;
        int peer = o->peer < 0 ? -1 : NULL != peer_map ? peer_map[o->peer] : o->peer;

        if (MCA_COLL_LOOM_OP_COPY == o->kind && slot_src == slot_dst && o->blk == o->dblk) {
            continue; /* a copy the mapping made pointless */
        }
        sched_append_move(dst, o->kind, MCA_COLL_LOOM_OP_WAIT == o->kind ? 0 : slot_src,
                          MCA_COLL_LOOM_OP_WAIT == o->kind ? 0 : slot_dst, peer, o->blk, o->dblk, o->nblk);
    }
    dst->moves_blocks |= src->moves_blocks;
    dst->lockstep |= src->lockstep;
    dst->one_send |= src->one_send;
}

void mca_coll_loom_sched_send(mca_coll_loom_sched_t *s, int peer, int slot)
{
    sched_append(s, MCA_COLL_LOOM_OP_SEND, slot, slot, peer);
}

void mca_coll_loom_sched_recv(mca_coll_loom_sched_t *s, int peer, int slot)
{
    sched_append(s, MCA_COLL_LOOM_OP_RECV, slot, slot, peer);
}

void mca_coll_loom_sched_wait(mca_coll_loom_sched_t *s)
{
    sched_append(s, MCA_COLL_LOOM_OP_WAIT, 0, 0, -1);
}

bool mca_coll_loom_sched_unwait_sends(mca_coll_loom_sched_t *s)
{
    int i = s->nops - 1;

    if (i < 1 || MCA_COLL_LOOM_OP_WAIT != s->ops[i].kind || MCA_COLL_LOOM_OP_SEND != s->ops[i - 1].kind) {
        return false;
    }
    for (int k = i - 1; k >= 0 && MCA_COLL_LOOM_OP_WAIT != s->ops[k].kind; --k) {
        if (MCA_COLL_LOOM_OP_SEND != s->ops[k].kind) {
            return false;
        }
    }
    s->nops--;
    return true;
}

void mca_coll_loom_sched_copy(mca_coll_loom_sched_t *s, int src, int dst)
{
    if (src != dst) {
        sched_append(s, MCA_COLL_LOOM_OP_COPY, src, dst, -1);
    }
}

void mca_coll_loom_sched_reduce(mca_coll_loom_sched_t *s, int src, int dst)
{
    sched_append(s, MCA_COLL_LOOM_OP_REDUCE, src, dst, -1);
}

void mca_coll_loom_sched_reduce_r(mca_coll_loom_sched_t *s, int src, int dst)
{
    sched_append(s, MCA_COLL_LOOM_OP_REDUCE_R, src, dst, -1);
}

void mca_coll_loom_sched_unreduce(mca_coll_loom_sched_t *s, int src, int dst)
{
    sched_append(s, MCA_COLL_LOOM_OP_UNREDUCE, src, dst, -1);
}

static bool op_reads(const mca_coll_loom_op_t *op, int slot)
{
    switch (op->kind) {
    case MCA_COLL_LOOM_OP_SEND:
    case MCA_COLL_LOOM_OP_COPY:
        return op->src == slot;
    case MCA_COLL_LOOM_OP_REDUCE:
    case MCA_COLL_LOOM_OP_REDUCE_R:
    case MCA_COLL_LOOM_OP_UNREDUCE:
        return op->src == slot || op->dst == slot;
    default:
        return false;
    }
}

static bool op_writes(const mca_coll_loom_op_t *op, int slot)
{
    switch (op->kind) {
    case MCA_COLL_LOOM_OP_RECV:
    case MCA_COLL_LOOM_OP_COPY:
    case MCA_COLL_LOOM_OP_REDUCE:
    case MCA_COLL_LOOM_OP_UNREDUCE:
        return op->dst == slot;
    case MCA_COLL_LOOM_OP_REDUCE_R:
        /* the executor may use src as the accumulator for ordered ops */
        return op->dst == slot || op->src == slot;
    default:
        return false;
    }
}

/* Within each run of transfers (ops between two local ops or WAITs), post the
 * receives before the sends, each kind in its original order.  Matching is per
 * (peer, kind), so this changes no message, and the engine, which starts ready ops
 * in list order, then has a step's receives posted before its sends go out (no
 * unexpected-message copy at the peer, as in the classic irecv + send exchange). */
static void receives_first(mca_coll_loom_sched_t *s)
{
    int i = 0;
    while (i < s->nops) {
        int j = i, nrecv = 0;
        mca_coll_loom_op_t run[2 * MCA_COLL_LOOM_MAX_SLOTS];
        while (j < s->nops && (MCA_COLL_LOOM_OP_SEND == s->ops[j].kind ||
                               MCA_COLL_LOOM_OP_RECV == s->ops[j].kind)) {
            nrecv += MCA_COLL_LOOM_OP_RECV == s->ops[j].kind;
            j++;
        }
        if (j - i > 1 && j - i <= 2 * MCA_COLL_LOOM_MAX_SLOTS) {
            int r = 0, w = nrecv;
            for (int k = i; k < j; ++k) {
                run[MCA_COLL_LOOM_OP_RECV == s->ops[k].kind ? r++ : w++] = s->ops[k];
            }
            memcpy(&s->ops[i], run, (size_t) (j - i) * sizeof(run[0]));
        }
        i = j > i ? j : i + 1;
    }
}

/* ---- the dependency graph (loom_sched.h) ------------------------------------------ */

/* Accesses since the last write of one block of one buffer. */
typedef struct {
    int32_t writer;  /* last op that wrote it, -1 */
    int32_t readers; /* head of the list of ops that read it since, -1 */
} blk_state_t;

typedef struct {
    int32_t op, next;
} reader_t;

typedef struct {
    blk_state_t *blk;     /* [nbuf * nb] */
    int nb;
    reader_t *rd;         /* reader list nodes */
    size_t nrd, caprd;
    int32_t *edge_from, *edge_to;
    size_t nedges, capedges;
    int32_t *mark;        /* [nops]: last op that took j as a predecessor */
    bool alias;           /* INPUT and RESULT may be one buffer */
    bool nomem;
} graph_t;

/* INPUT and RESULT are one buffer under MPI_IN_PLACE: one hazard buffer for both,
 * unless the schedule reads INPUT after writing RESULT, when an in-place call runs on a
 * copy of INPUT (input_after_result) and the two never share memory; merging them
 * there would order a round's receive into RESULT before its send of INPUT on both
 * sides of an exchange, a cycle. */
static inline int hazard_buf(const graph_t *g, int slot)
{
    return g->alias && MCA_COLL_LOOM_SLOT_INPUT == slot ? MCA_COLL_LOOM_SLOT_RESULT : slot;
}

static void add_edge(graph_t *g, int32_t from, int32_t to)
{
    if (from < 0 || g->mark[from] == to) {
        return;
    }
    g->mark[from] = to;
    if (g->nedges == g->capedges) {
        size_t cap = g->capedges ? 2 * g->capedges : 64;
        int32_t *f = realloc(g->edge_from, cap * sizeof(*f)), *t;
        if (NULL == f) {
            g->nomem = true;
            return;
        }
        g->edge_from = f;
        t = realloc(g->edge_to, cap * sizeof(*t));
        if (NULL == t) {
            g->nomem = true;
            return;
        }
        g->edge_to = t;
        g->capedges = cap;
    }
    g->edge_from[g->nedges] = from;
    g->edge_to[g->nedges++] = to;
}

/* Op i reads (write false) or writes blocks b0 .. b0+n-1 of `slot`: edges from the
 * ops it conflicts with.  Records nothing yet (record_access does, after every
 * access of the op has taken its edges, so an op never depends on itself). */
static void access_edges(graph_t *g, int i, int slot, int b0, int n, bool write)
{
    blk_state_t *st = g->blk + (size_t) hazard_buf(g, slot) * (size_t) g->nb;

    for (int b = b0; b < b0 + n; ++b) {
        add_edge(g, st[b].writer, i);
        for (int32_t r = st[b].readers; write && r >= 0; r = g->rd[r].next) {
            add_edge(g, g->rd[r].op, i);
        }
    }
}

static void record_access(graph_t *g, int i, int slot, int b0, int n, bool write)
{
    blk_state_t *st = g->blk + (size_t) hazard_buf(g, slot) * (size_t) g->nb;

    for (int b = b0; b < b0 + n; ++b) {
        if (write) {
            st[b].writer = i;
            st[b].readers = -1;
            continue;
        }
        if (st[b].readers >= 0 && g->rd[st[b].readers].op == i) {
            continue; /* read twice by the same op */
        }
        if (g->nrd == g->caprd) {
            size_t cap = g->caprd ? 2 * g->caprd : 256;
            reader_t *rd = realloc(g->rd, cap * sizeof(*rd));
            if (NULL == rd) {
                g->nomem = true;
                return;
            }
            g->rd = rd;
            g->caprd = cap;
        }
        g->rd[g->nrd] = (reader_t) {.op = i, .next = st[b].readers};
        st[b].readers = (int32_t) g->nrd++;
    }
}

/* What an op reads and writes: a slot and the first of its blocks (blocks
 * b0 .. b0+nblk-1; all of them for a whole-slot op). */
typedef struct {
    int slot, b0;
} access_t;

static void op_access(const mca_coll_loom_op_t *op, access_t *reads, int *nr, access_t *writes, int *nw)
{
    const int b = op->nblk > 0 ? op->blk : 0, d = op->nblk > 0 ? op->dblk : 0;

    *nr = *nw = 0;
    switch (op->kind) {
    case MCA_COLL_LOOM_OP_SEND:
        reads[(*nr)++] = (access_t) {op->src, b};
        break;
    case MCA_COLL_LOOM_OP_RECV:
        writes[(*nw)++] = (access_t) {op->dst, b};
        break;
    case MCA_COLL_LOOM_OP_COPY:
    case MCA_COLL_LOOM_OP_REDUCE:
    case MCA_COLL_LOOM_OP_UNREDUCE:
        /* dst is read too by the reductions: the write's edges cover that read */
        reads[(*nr)++] = (access_t) {op->src, b};
        writes[(*nw)++] = (access_t) {op->dst, d};
        break;
    case MCA_COLL_LOOM_OP_REDUCE_R:
        /* the executor may use src as the accumulator for ordered ops */
        writes[(*nw)++] = (access_t) {op->src, b};
        writes[(*nw)++] = (access_t) {op->dst, d};
        break;
    default:
        break;
    }
}

/* The last transfer of one channel: key 2 * peer + (1 for sends). */
typedef struct {
    int64_t key;
    int32_t last;
} chan_t;

/* Sends to one peer go one at a time: a send starts once the previous send on its
 * channel is done.  The transport shares a link among the messages in flight on it, so
 * a pipeline that posted every segment at once would have them all arrive at the end
 * (and the next node forward nothing before); one at a time, segment k arrives first
 * and is forwarded while k+1 flows (Zhu et al., section 3.1; the TwoTreeC paper, Algorithm 2). */

static size_t next_pow2(size_t n)
{
    size_t p = 1;
    while (p < n) {
        p <<= 1;
    }
    return p;
}

/* The entry of `key` in the open-addressing table (n a power of two, never full),
 * made (with no transfer yet) when absent. */
static chan_t *chan_of(chan_t *t, size_t n, int64_t key)
{
    size_t h = ((uint64_t) key * 0x9E3779B97F4A7C15ull) >> 17 & (n - 1);

    while (t[h].key != key && t[h].key >= 0) {
        h = (h + 1) & (n - 1);
    }
    if (t[h].key < 0) {
        t[h].key = key;
        t[h].last = -1;
    }
    return &t[h];
}

/* The graph's arrays in s and the scratch of g and *chan, every block without an
 * access yet; the caller frees them, also on failure. */
static int graph_alloc(mca_coll_loom_sched_t *s, graph_t *g, chan_t **chan, size_t *nchan)
{
    const int nops = s->nops;

    s->npred = calloc((size_t) nops + 1, sizeof(int32_t));
    s->succ_start = calloc((size_t) nops + 1, sizeof(int32_t));
    s->chan_next = malloc(((size_t) nops + 1) * sizeof(int32_t));
    g->mark = malloc(((size_t) nops + 1) * sizeof(int32_t));
    g->blk = malloc((size_t) s->nslots * (size_t) g->nb * sizeof(blk_state_t));
    /* the channels: a hash of (peer, direction), at most half full; its size follows
     * the transfers, not P, so a model that builds every rank of a huge P stays linear */
    *nchan = 1;
    for (int i = 0; i < nops; ++i) {
        *nchan += MCA_COLL_LOOM_OP_SEND == s->ops[i].kind || MCA_COLL_LOOM_OP_RECV == s->ops[i].kind;
    }
    *nchan = next_pow2(2 * *nchan);
    *chan = malloc(*nchan * sizeof(**chan));
    if (!s->npred || !s->succ_start || !s->chan_next || !g->mark || !g->blk || !*chan) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    for (size_t k = 0; k < (size_t) s->nslots * (size_t) g->nb; ++k) {
        g->blk[k] = (blk_state_t) {.writer = -1, .readers = -1};
    }
    for (size_t k = 0; k < *nchan; ++k) {
        (*chan)[k].key = -1;
    }
    return MCA_COLL_LOOM_OK;
}

/* Lockstep: WAIT i depends on the round's transfers (from round_start), and on the
 * previous WAIT for a round without any. */
static void lockstep_edges(const mca_coll_loom_sched_t *s, graph_t *g, int32_t last_wait, int32_t round_start,
                           int i)
{
    add_edge(g, last_wait, i);
    for (int32_t j = round_start; j < i; ++j) {
        if (MCA_COLL_LOOM_OP_SEND == s->ops[j].kind || MCA_COLL_LOOM_OP_RECV == s->ops[j].kind) {
            add_edge(g, j, i);
        }
    }
}

/* Transfer i in its channel: after the channel's previous transfer is posted (and,
 * for a send, done); with one_send, a send also after the previous send to any peer
 * is done (*last_send). */
static void channel_edges(mca_coll_loom_sched_t *s, graph_t *g, chan_t *chan, size_t nchan, int i,
                          int32_t *last_send)
{
    const mca_coll_loom_op_t *op = &s->ops[i];

    if (s->one_send && MCA_COLL_LOOM_OP_SEND == op->kind) {
        add_edge(g, *last_send, i);
        *last_send = i;
    }

    if ((MCA_COLL_LOOM_OP_SEND == op->kind || MCA_COLL_LOOM_OP_RECV == op->kind) && op->peer >= 0) {
        chan_t *c = chan_of(chan, nchan, 2 * (int64_t) op->peer + (MCA_COLL_LOOM_OP_SEND == op->kind));
        s->ntransfers++;
        if (c->last >= 0) {
            s->chan_next[c->last] = i;
            s->npred[i]++;
            if (MCA_COLL_LOOM_OP_SEND == op->kind) {
                add_edge(g, c->last, i);
            }
        }
        c->last = i;
    } else if (MCA_COLL_LOOM_OP_SEND == op->kind || MCA_COLL_LOOM_OP_RECV == op->kind) {
        s->ntransfers++;
    }
}

/* Op i's data edges, then its accesses recorded. */
static void data_edges(graph_t *g, const mca_coll_loom_op_t *op, int i)
{
    access_t reads[2], writes[2];
    int nr, nw;
    const int n = op->nblk > 0 ? op->nblk : g->nb;

    op_access(op, reads, &nr, writes, &nw);
    for (int k = 0; k < nr; ++k) {
        access_edges(g, i, reads[k].slot, reads[k].b0, n, false);
    }
    for (int k = 0; k < nw; ++k) {
        access_edges(g, i, writes[k].slot, writes[k].b0, n, true);
    }
    for (int k = 0; k < nr; ++k) {
        /* blocks the op also writes are recorded as written */
        bool written = false;
        for (int w = 0; w < nw; ++w) {
            written |= hazard_buf(g, writes[w].slot) == hazard_buf(g, reads[k].slot) &&
                       writes[w].b0 == reads[k].b0;
        }
        if (!written) {
            record_access(g, i, reads[k].slot, reads[k].b0, n, false);
        }
    }
    for (int k = 0; k < nw; ++k) {
        record_access(g, i, writes[k].slot, writes[k].b0, n, true);
    }
}

/* The edges (from < to, grouped by `to` in increasing order) into successor lists;
 * also counts them into npred.  g->mark is scratch. */
static int graph_successors(mca_coll_loom_sched_t *s, graph_t *g)
{
    const int nops = s->nops;

    s->succ = malloc((g->nedges + 1) * sizeof(int32_t));
    if (NULL == s->succ) {
        return MCA_COLL_LOOM_ERR_NOMEM;
    }
    for (size_t e = 0; e < g->nedges; ++e) {
        s->succ_start[g->edge_from[e] + 1]++;
        s->npred[g->edge_to[e]]++;
    }
    for (int i = 0; i < nops; ++i) {
        s->succ_start[i + 1] += s->succ_start[i];
    }
    for (int i = 0; i < nops; ++i) {
        g->mark[i] = s->succ_start[i];
    }
    for (size_t e = 0; e < g->nedges; ++e) {
        s->succ[g->mark[g->edge_from[e]]++] = g->edge_to[e];
    }
    return MCA_COLL_LOOM_OK;
}

static int build_graph(mca_coll_loom_sched_t *s)
{
    const int nops = s->nops;
    graph_t g = {.nb = s->nblocks > 0 ? s->nblocks : 1, .alias = !s->input_after_result};
    chan_t *chan = NULL;
    size_t nchan = 0;
    int32_t last_wait = -1, round_start = 0; /* lockstep: the current round */
    int32_t last_send = -1;                  /* one_send: the previous send */
    int rc;

    free_graph(s);
    rc = graph_alloc(s, &g, &chan, &nchan);
    for (int i = 0; i < nops && MCA_COLL_LOOM_OK == rc && !g.nomem; ++i) {
        const mca_coll_loom_op_t *op = &s->ops[i];

        s->chan_next[i] = -1;
        g.mark[i] = -1;
        if (s->lockstep && MCA_COLL_LOOM_OP_WAIT == op->kind) {
            lockstep_edges(s, &g, last_wait, round_start, i);
            last_wait = i;
            round_start = i + 1;
            continue;
        }
        if (s->lockstep) {
            add_edge(&g, last_wait, i);
        }
        channel_edges(s, &g, chan, nchan, i, &last_send);
        data_edges(&g, op, i);
    }
    if (MCA_COLL_LOOM_OK == rc && g.nomem) {
        rc = MCA_COLL_LOOM_ERR_NOMEM;
    }
    if (MCA_COLL_LOOM_OK == rc) {
        rc = graph_successors(s, &g);
    }

    free(g.blk);
    free(g.rd);
    free(g.edge_from);
    free(g.edge_to);
    free(g.mark);
    free(chan);
    if (MCA_COLL_LOOM_OK != rc) {
        free_graph(s);
    }
    return rc;
}

int mca_coll_loom_sched_finish(mca_coll_loom_sched_t *s)
{
    bool result_written = false, input_in_flight = false;
    int inflight = 0;

    receives_first(s);

    s->nslots = 2;
    s->max_inflight = 0;
    s->rounds = 0;
    s->input_after_result = false;
    for (int i = 0; i < s->nops; ++i) {
        const mca_coll_loom_op_t *op = &s->ops[i];
        int hi = op->src > op->dst ? op->src : op->dst;
        if (hi + 1 > s->nslots) {
            s->nslots = hi + 1;
        }
        if (MCA_COLL_LOOM_OP_SEND == op->kind || MCA_COLL_LOOM_OP_RECV == op->kind) {
            if (++inflight > s->max_inflight) {
                s->max_inflight = inflight;
            }
        } else if (MCA_COLL_LOOM_OP_WAIT == op->kind) {
            inflight = 0;
            input_in_flight = false;
            s->rounds++;
        }
        if (result_written && op_reads(op, MCA_COLL_LOOM_SLOT_INPUT)) {
            s->input_after_result = true;
        }
        if (MCA_COLL_LOOM_OP_SEND == op->kind && MCA_COLL_LOOM_SLOT_INPUT == op->src) {
            input_in_flight = true;
        }
        if (op_writes(op, MCA_COLL_LOOM_SLOT_RESULT)) {
            /* in place, RESULT written while INPUT is still being sent would corrupt it */
            if (input_in_flight) {
                s->input_after_result = true;
            }
            result_written = true;
        }
        if (op_writes(op, MCA_COLL_LOOM_SLOT_INPUT)) {
            /* the caller's send buffer is read-only */
            s->error = MCA_COLL_LOOM_ERR_BADPARAM;
        }
    }
    if (inflight > 0 && MCA_COLL_LOOM_OK == s->error) {
        s->error = MCA_COLL_LOOM_ERR_BADPARAM; /* transfers never completed */
    }
    if (MCA_COLL_LOOM_OK == s->error && !s->no_graph) {
        s->error = build_graph(s);
    }
    return s->error;
}

static size_t round8(size_t n)
{
    return (n + 7) & ~(size_t) 7;
}

size_t mca_coll_loom_sched_copy_bytes(const mca_coll_loom_sched_t *s)
{
    const size_t nops = (size_t) s->nops;
    const size_t nsucc = NULL != s->succ_start ? (size_t) s->succ_start[nops] : 0;

    return round8(nops * sizeof(mca_coll_loom_op_t)) + round8((3 * nops + 1 + nsucc) * sizeof(int32_t));
}

void mca_coll_loom_sched_copy_into(const mca_coll_loom_sched_t *s, mca_coll_loom_sched_t *out, void *mem)
{
    const size_t nops = (size_t) s->nops;
    const size_t nsucc = NULL != s->succ_start ? (size_t) s->succ_start[nops] : 0;
    char *p = mem;

    *out = *s;
    out->cap = 0;
    out->ops = (mca_coll_loom_op_t *) p;
    memcpy(out->ops, s->ops, nops * sizeof(mca_coll_loom_op_t));
    p += round8(nops * sizeof(mca_coll_loom_op_t));
    out->npred = (int32_t *) p;
    out->chan_next = out->npred + nops;
    out->succ_start = out->chan_next + nops;
    out->succ = out->succ_start + nops + 1;
    if (NULL != s->npred) {
        memcpy(out->npred, s->npred, nops * sizeof(int32_t));
        memcpy(out->chan_next, s->chan_next, nops * sizeof(int32_t));
        memcpy(out->succ_start, s->succ_start, (nops + 1) * sizeof(int32_t));
        memcpy(out->succ, s->succ, nsucc * sizeof(int32_t));
    }
}

void mca_coll_loom_sched_print(const mca_coll_loom_sched_t *s, void (*out)(const char *line, void *ctx),
                               void *ctx)
{
    static const char *names[] = {"send", "recv", "wait", "copy", "reduce", "reduce_r", "unreduce"};
    char line[128];

    for (int i = 0; i < s->nops; ++i) {
        const mca_coll_loom_op_t *op = &s->ops[i];
        char blocks[48] = "";
        if (op->nblk > 0 && op->dblk != op->blk && MCA_COLL_LOOM_OP_SEND != op->kind &&
            MCA_COLL_LOOM_OP_RECV != op->kind) {
            snprintf(blocks, sizeof(blocks), " blocks %d..%d to %d..%d", op->blk, op->blk + op->nblk - 1, op->dblk,
                     op->dblk + op->nblk - 1);
        } else if (op->nblk > 0) {
            snprintf(blocks, sizeof(blocks), " blocks %d..%d", op->blk, op->blk + op->nblk - 1);
        }
        switch (op->kind) {
        case MCA_COLL_LOOM_OP_SEND:
            snprintf(line, sizeof(line), "%3d send slot%d%s -> rank %d", i, op->src, blocks, op->peer);
            break;
        case MCA_COLL_LOOM_OP_RECV:
            snprintf(line, sizeof(line), "%3d recv slot%d%s <- rank %d", i, op->dst, blocks, op->peer);
            break;
        case MCA_COLL_LOOM_OP_WAIT:
            snprintf(line, sizeof(line), "%3d wait", i);
            break;
        default:
            snprintf(line, sizeof(line), "%3d %s slot%d -> slot%d%s", i, names[op->kind], op->src, op->dst,
                     blocks);
            break;
        }
        out(line, ctx);
    }
}
