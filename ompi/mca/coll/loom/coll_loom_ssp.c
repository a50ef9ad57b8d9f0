/*
 * coll/loom: the stale-synchronous allreduce (Iakymchuk et al., section III.A, Algorithm 1),
 * opt-in per communicator with the info key loom_allreduce_slack = N (an integer >= 0,
 * on MPI_Comm_dup_with_info or MPI_Comm_set_info; "off" or absent: ordinary allreduce).
 *
 * On such a communicator every MPI_Allreduce, MPI_Iallreduce and start of an
 * MPI_Allreduce_init request advances the rank's clock c (1, 2, ...) and its result
 * combines, for every rank, exactly one contribution made at a clock >= c - N: the
 * newest that has arrived, fresher ones only waited for when what is there is older.
 * The fast ranks of an iterative, convergent computation (SGD, matrix factorisation) run
 * up to N iterations ahead of the slowest instead of waiting for it every time.  Ranks
 * must give equal N and call with the same count, datatype and op (a call with another
 * signature first drains the exchange: an ordinary synchronisation); commutative ops
 * only (others run the ordinary allreduce).
 *
 * How: loom's allreduce schedule of `pairwise` (the hypercube with the 2^k + q fold that
 * Algorithm 1 is built on, small vectors) or `ring` (Iakymchuk et al. IV.A, which the paper's
 * conclusion proposes for large ones) is run by an interpreter with other transfer
 * semantics:
 *  - each transfer of the schedule is a channel: the k-th send to a peer meets the
 *    peer's k-th receive from this rank, on a tag of its own;
 *  - a receive channel keeps one receive posted at all times and a slot with the newest
 *    message that arrived, which a later one replaces (the paper's rcv_data_vec, which
 *    one-sided writes overwrite there); a RECV op reads the slot, and waits only when it
 *    is empty or its contributions are older than c - N (Algorithm 1, lines 7-11);
 *  - a send channel has one message in flight at most; a newer one waits in a pending
 *    buffer and replaces any it finds there: a fast rank never queues messages without
 *    bound towards a slow one;
 *  - each message carries the clock of its oldest contribution (the minimum of its
 *    parts', followed per block through COPY and REDUCE) and the sender's clock.
 * Every message of a channel holds the same set of ranks' contributions (the schedule
 * says which), so the verified schedule's "each contribution exactly once" holds whatever
 * mix of clocks arrives, and with N = 0 the result is bit for bit the ordinary run of the
 * same schedule.  Own contribution: the hypercube combines the caller's current one;
 * the two ranks of a fold pair exchange strictly (the sender's clock equal to the
 * receiver's), since the folded-out rank's contribution reaches its result only through
 * its partner.  The ring forwards finished parts: a rank's own contribution is current in
 * the part it owns and within the slack in the others (waiting for it would be a full
 * ring round, a synchronous allreduce).
 *
 * Freeing the communicator (or changing the call's signature) drains every channel:
 * pending messages are sent, a close message follows on each channel, and every receive
 * channel is read until its close, so nothing is left in the network and nothing leaks.
 *
 * This file is the exchange; the MPI calls, the info key and the attributes that drain
 * it are coll_loom_ssp_call.c.
 */
#include "ompi_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/op/op.h"

#include "coll_loom.h"
#include "coll_loom_nbc.h"
#include "coll_loom_ssp.h"
#include "coll_loom_tl.h"

#define SSP_HDR      64        /* header bytes before a payload (keeps it aligned) */
#define SSP_CLOSE    INT64_MIN /* min_clock of the message that closes a channel */
#define SSP_NONE     INT64_MAX /* clock of a block nothing has been written to */
#define SSP_RING_MIN (64 * 1024) /* bytes from which the ring serves (else the hypercube) */

typedef struct {
    int64_t min_clock;    /* oldest contribution in the payload */
    int64_t sender_clock; /* the sender's clock when it sent */
} ssp_hdr_t;

typedef struct {
    int peer, tag;
    size_t len;           /* elements of the op's range */
    bool send, strict;
    /* receive: [0] the posted receive's buffer, [1] the slot; send: [0] in flight, [1]
     * pending */
    char *buf[2];
    void *req;            /* the posted receive / the send in flight (the transport's) */
    bool full;            /* the slot / the pending buffer holds a message */
    bool closed;          /* drain: close sent / close received */
} ssp_chan_t;

typedef mca_coll_loom_ssp_call_t ssp_call_t;

struct mca_coll_loom_ssp_t {
    struct mca_coll_loom_ssp_t *next;   /* the list the progress callback walks */
    mca_coll_loom_module_t *m;
    ompi_communicator_t *comm;
    /* the signature the exchange was set up for */
    int alg;
    size_t count;
    ompi_datatype_t *dtype;
    ompi_op_t *op;
    bool swap_ok;
    mca_coll_loom_sched_t sched;
    mca_coll_loom_layout_t layout;
    ptrdiff_t extent;
    size_t tsize;
    int nb;               /* clocks per slot (the schedule's blocks, at least 1) */
    int64_t *clk;         /* [nslots * nb] */
    char *slot[MCA_COLL_LOOM_MAX_SLOTS];
    char *inbuf;          /* the input of an in-place call */
    char *slots_mem;      /* the scratch slots and inbuf, one allocation */
    char *mem;
    ssp_chan_t *chan;
    int nchan;
    int32_t *chan_of;     /* [nops]: the channel of a transfer, -1 (empty range, other ops) */
    ssp_call_t *head, *tail;
    bool busy;            /* calls queued or messages pending: the progress callback has
                             work here (else arrivals wait for the next call's look) */
};
typedef struct mca_coll_loom_ssp_t ssp_t;

/* every exchange, walked by the progress callback (pending sends go out and
 * non-blocking calls move on while the program is in any MPI call).  The lock is taken
 * whether or not threads are in use: a send may call opal_progress, whose callback must
 * not enter an exchange that is being moved on already (trylock fails then). */
static ssp_t *active;
static opal_mutex_t ssp_lock;
static bool polled; /* mca_coll_loom_ssp_progress is one of loom's progress polls */
/* Channels keep a receive posted from one call to the next, which only the PML's
 * matching serves (loom's UCX transport posts per call). */
static const mca_coll_loom_tl_t *const tl = &mca_coll_loom_tl_pml;
/* the registry indices of the two allreduce algorithms SSP runs (set at open) */
static int alg_pairwise = -1, alg_ring = -1;

static const ssp_hdr_t *hdr_of(const char *buf)
{
    return (const ssp_hdr_t *) buf;
}

/* ---- channels ------------------------------------------------------------------------ */

static size_t chan_bytes(const ssp_t *st, const ssp_chan_t *ch)
{
    return SSP_HDR + ch->len * st->tsize;
}

static int post_recv(ssp_t *st, ssp_chan_t *ch)
{
    return tl->post(NULL, st->comm, false, false, ch->buf[0], chan_bytes(st, ch), &ompi_mpi_byte.dt, ch->peer,
                    ch->tag, &ch->req);
}

static int post_send(ssp_t *st, ssp_chan_t *ch, size_t bytes)
{
    return tl->post(NULL, st->comm, true, false, ch->buf[0], bytes, &ompi_mpi_byte.dt, ch->peer, ch->tag,
                    &ch->req);
}

static void swap_bufs(ssp_chan_t *ch)
{
    char *t = ch->buf[0];
    ch->buf[0] = ch->buf[1];
    ch->buf[1] = t;
}

/* Completed transfers: a finished send makes room for the pending one; every arrived
 * message becomes the slot (replacing the older one) and the receive is posted again. */
static int pump(ssp_t *st)
{
    int rc = OMPI_SUCCESS;

    for (int i = 0; i < st->nchan && OMPI_SUCCESS == rc; ++i) {
        ssp_chan_t *ch = &st->chan[i];
        while (NULL != ch->req && tl->test(ch->req)) {
            rc = tl->finish(ch->req, NULL);
            ch->req = NULL;
            if (OMPI_SUCCESS != rc) {
                break;
            }
            if (ch->send) {
                if (ch->full) {
                    swap_bufs(ch);
                    ch->full = false;
                    rc = post_send(st, ch, chan_bytes(st, ch));
                }
            } else if (SSP_CLOSE == hdr_of(ch->buf[0])->min_clock) {
                ch->closed = true; /* drain: nothing follows on this channel */
            } else {
                swap_bufs(ch);
                ch->full = true;
                rc = post_recv(st, ch);
            }
        }
    }
    return rc;
}

/* ---- the interpreter ----------------------------------------------------------------- */

static void op_range(const ssp_t *st, int blk, int nblk, size_t *first, size_t *len, int *b0, int *nbk)
{
    if (nblk > 0) {
        *first = mca_coll_loom_layout_start(&st->layout, blk);
        *len = mca_coll_loom_layout_start(&st->layout, blk + nblk) - *first;
        *b0 = blk;
        *nbk = nblk;
    } else {
        *first = 0;
        *len = st->count;
        *b0 = 0;
        *nbk = st->nb;
    }
}

static int64_t range_clock(const ssp_t *st, int slot, int b0, int nbk)
{
    int64_t c = SSP_NONE;

    for (int b = b0; b < b0 + nbk; ++b) {
        const int64_t v = st->clk[slot * st->nb + b];
        c = v < c ? v : c;
    }
    return c;
}

static void set_clock(ssp_t *st, int slot, int b0, int nbk, int64_t c, bool combine)
{
    for (int b = b0; b < b0 + nbk; ++b) {
        int64_t *v = &st->clk[slot * st->nb + b];
        *v = combine && *v < c ? *v : c;
    }
}

static int run_send(ssp_t *st, ssp_chan_t *ch, const mca_coll_loom_op_t *o, const ssp_call_t *call)
{
    size_t first, len;
    int b0, nbk, rc;
    ssp_hdr_t *h;
    char *buf;

    op_range(st, o->blk, o->nblk, &first, &len, &b0, &nbk);
    /* latest wins: with a send in flight the message waits, replacing an older one */
    buf = NULL == ch->req ? ch->buf[0] : ch->buf[1];
    h = (ssp_hdr_t *) buf;
    h->min_clock = range_clock(st, o->src, b0, nbk);
    h->sender_clock = call->clock;
    rc = mca_coll_loom_pack(st->slot[o->src] + (ptrdiff_t) first * st->extent, len, st->dtype, buf + SSP_HDR,
                            len * st->tsize);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (NULL != ch->req) {
        ch->full = true;
        return OMPI_SUCCESS;
    }
    return post_send(st, ch, chan_bytes(st, ch));
}

/* 1: done, 0: waits for a fresher message, else an error */
static int run_recv(ssp_t *st, ssp_chan_t *ch, const mca_coll_loom_op_t *o, ssp_call_t *call)
{
    const int64_t slack = st->m->ssp_slack;
    const ssp_hdr_t *h = hdr_of(ch->buf[1]);
    size_t first, len;
    int b0, nbk, rc;

    if (!ch->full || (ch->strict ? h->sender_clock < call->clock : h->min_clock < call->clock - slack)) {
        call->waited = true;
        return 0;
    }
    op_range(st, o->blk, o->nblk, &first, &len, &b0, &nbk);
    rc = mca_coll_loom_unpack(ch->buf[1] + SSP_HDR, len * st->tsize,
                              st->slot[o->dst] + (ptrdiff_t) first * st->extent, len, st->dtype);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    set_clock(st, o->dst, b0, nbk, h->min_clock, false);
    if (call->waited) {
        st->m->ssp_waits++;
        call->waited = false;
    }
    return 1;
}

static int run_local(ssp_t *st, const mca_coll_loom_op_t *o)
{
    size_t first, len, dfirst, dlen;
    int b0, nbk, d0, dnbk;
    char *src, *dst;

    op_range(st, o->blk, o->nblk, &first, &len, &b0, &nbk);
    op_range(st, o->dblk, o->nblk, &dfirst, &dlen, &d0, &dnbk);
    if (0 == len) {
        return OMPI_SUCCESS;
    }
    src = st->slot[o->src] + (ptrdiff_t) first * st->extent;
    dst = st->slot[o->dst] + (ptrdiff_t) dfirst * st->extent;
    switch (o->kind) {
    case MCA_COLL_LOOM_OP_COPY:
        set_clock(st, o->dst, d0, dnbk, range_clock(st, o->src, b0, nbk), false);
        return src != dst ? mca_coll_loom_copy_content(st->dtype, len, dst, src) : OMPI_SUCCESS;
    case MCA_COLL_LOOM_OP_REDUCE:
        ompi_op_reduce(st->op, src, dst, len, st->dtype); /* dst := src o dst */
        break;
    case MCA_COLL_LOOM_OP_REDUCE_R:
        /* dst := dst o src; src is a scratch slot the schedule reads no more */
        if (st->swap_ok) {
            ompi_op_reduce(st->op, src, dst, len, st->dtype);
        } else {
            int rc;
            ompi_op_reduce(st->op, dst, src, len, st->dtype);
            if (OMPI_SUCCESS != (rc = mca_coll_loom_copy_content(st->dtype, len, dst, src))) {
                return rc;
            }
        }
        break;
    default:
        return OMPI_ERR_NOT_SUPPORTED; /* UNREDUCE: neither pairwise nor ring emits it */
    }
    set_clock(st, o->dst, d0, dnbk, range_clock(st, o->src, b0, nbk), true);
    return OMPI_SUCCESS;
}

/* Starts a call: its buffers in the slots, the input's clock. */
static int call_begin(ssp_t *st, ssp_call_t *call)
{
    const int nslots = st->sched.nslots;

    call->pc = 0;
    call->scan = 0;
    call->waited = false;
    st->slot[MCA_COLL_LOOM_SLOT_RESULT] = (char *) call->rbuf;
    if (MPI_IN_PLACE == call->sbuf) {
        int rc = mca_coll_loom_copy_content(st->dtype, st->count, st->inbuf, (char *) call->rbuf);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        st->slot[MCA_COLL_LOOM_SLOT_INPUT] = st->inbuf;
    } else {
        st->slot[MCA_COLL_LOOM_SLOT_INPUT] = (char *) (uintptr_t) call->sbuf;
    }
    for (int s = 0; s < nslots; ++s) {
        set_clock(st, s, 0, st->nb, MCA_COLL_LOOM_SLOT_INPUT == s ? call->clock : SSP_NONE, false);
    }
    return OMPI_SUCCESS;
}

/* Reads the round's receives (ops scan .. pc-1) at its WAIT, as the round reading of a
 * schedule completes them: every send of the round is out before any receive waits.
 * 1: all read, 0: one waits, else an error. */
static int read_round(ssp_t *st, ssp_call_t *call)
{
    for (; call->scan < call->pc; ++call->scan) {
        const mca_coll_loom_op_t *o = &st->sched.ops[call->scan];
        const int c = st->chan_of[call->scan];
        if (MCA_COLL_LOOM_OP_RECV == o->kind && c >= 0) {
            int rc = run_recv(st, &st->chan[c], o, call);
            if (1 != rc) {
                return rc;
            }
        }
    }
    return 1;
}

/* Runs the call's ops in order until a receive waits: 1 done, 0 waiting, else an error. */
static int call_run(ssp_t *st, ssp_call_t *call)
{
    const mca_coll_loom_sched_t *s = &st->sched;

    for (; call->pc < s->nops; ++call->pc) {
        const mca_coll_loom_op_t *o = &s->ops[call->pc];
        const int c = st->chan_of[call->pc];
        int rc = OMPI_SUCCESS;

        switch (o->kind) {
        case MCA_COLL_LOOM_OP_WAIT:
            rc = read_round(st, call);
            if (1 != rc) {
                return rc;
            }
            rc = OMPI_SUCCESS;
            call->scan = call->pc + 1;
            break;
        case MCA_COLL_LOOM_OP_SEND:
            rc = c >= 0 ? run_send(st, &st->chan[c], o, call) : OMPI_SUCCESS;
            break;
        case MCA_COLL_LOOM_OP_RECV:
            break; /* read at the round's WAIT */
        default:
            rc = run_local(st, o);
            break;
        }
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return read_round(st, call); /* a schedule that does not end with a WAIT */
}

static void call_complete(ssp_t *st, ssp_call_t *call, int rc)
{
    if (OMPI_SUCCESS == rc) {
        st->m->ssp_oldest = range_clock(st, MCA_COLL_LOOM_SLOT_RESULT, 0, st->nb);
    } else {
        mca_coll_loom_mark_failed(st->m, st->comm, MCA_COLL_LOOM_COLL_ALLREDUCE, rc);
    }
    st->head = call->next;
    if (NULL == st->head) {
        st->tail = NULL;
    }
    call->rc = rc;
    call->done = true; /* a request completes in loom's progress callback */
}

static bool pending_sends(const ssp_t *st)
{
    for (int i = 0; i < st->nchan; ++i) {
        if (st->chan[i].send && st->chan[i].full) {
            return true;
        }
    }
    return false;
}

/* Moves the exchange on: transfers, then the calls in order.  Caller holds ssp_lock. */
static void state_progress(ssp_t *st)
{
    int rc = pump(st);

    st->busy = true;
    while (NULL != st->head) {
        ssp_call_t *call = st->head;
        if (OMPI_SUCCESS == rc && call->pc < 0) {
            rc = call_begin(st, call);
        }
        if (OMPI_SUCCESS == rc) {
            rc = call_run(st, call);
            if (0 == rc) {
                return;
            }
            rc = 1 == rc ? OMPI_SUCCESS : rc;
        }
        call_complete(st, call, rc);
        if (OMPI_SUCCESS == rc) {
            rc = pump(st); /* the call's sends may go out at once */
        }
    }
    st->busy = pending_sends(st);
}

int mca_coll_loom_ssp_progress(void)
{
    if (NULL == active || 0 != opal_mutex_trylock(&ssp_lock)) {
        return 0;
    }
    /* an idle exchange costs the progress loop nothing but this walk */
    for (ssp_t *st = active; NULL != st; st = st->next) {
        if (st->busy) {
            state_progress(st);
        }
    }
    opal_mutex_unlock(&ssp_lock);
    return 0;
}

/* ---- set-up and drain ---------------------------------------------------------------- */

static int build_schedule(ssp_t *st, int P, int rank)
{
    mca_coll_loom_params_t p = {.P = P, .rank = rank, .coll = MCA_COLL_LOOM_COLL_ALLREDUCE, .segs = 1,
                                .call = MCA_COLL_LOOM_CALL_COMMUTATIVE};
    int rc;

    mca_coll_loom_sched_init(&st->sched);
    rc = mca_coll_loom_algs[st->alg]->build(&st->sched, &p);
    if (MCA_COLL_LOOM_OK == rc) {
        rc = mca_coll_loom_sched_finish(&st->sched);
    }
    return MCA_COLL_LOOM_OK == rc ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
}

/* The channels: per direction and peer, the k-th transfer gets tag base - k. */
static int make_channels(ssp_t *st, int P, int tag_base, int fold_partner)
{
    const mca_coll_loom_sched_t *s = &st->sched;
    int *seq = calloc((size_t) (2 * P), sizeof(int));
    size_t bytes = 0;
    char *p;

    st->chan_of = malloc(sizeof(int32_t) * (size_t) (s->nops > 0 ? s->nops : 1));
    st->chan = calloc((size_t) (s->ntransfers > 0 ? s->ntransfers : 1), sizeof(ssp_chan_t));
    if (NULL == seq || NULL == st->chan_of || NULL == st->chan) {
        free(seq);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < s->nops; ++i) {
        const mca_coll_loom_op_t *o = &s->ops[i];
        const bool send = MCA_COLL_LOOM_OP_SEND == o->kind;
        ssp_chan_t *ch;
        size_t first;
        int b0, nbk;

        st->chan_of[i] = -1;
        if (!send && MCA_COLL_LOOM_OP_RECV != o->kind) {
            continue;
        }
        ch = &st->chan[st->nchan];
        op_range(st, o->blk, o->nblk, &first, &ch->len, &b0, &nbk);
        if (0 == ch->len) {
            continue; /* both sides skip an empty range alike */
        }
        ch->peer = o->peer;
        ch->send = send;
        ch->tag = tag_base - seq[2 * o->peer + (send ? 0 : 1)]++;
        ch->strict = o->peer == fold_partner;
        bytes += 2 * ((chan_bytes(st, ch) + 63) & ~(size_t) 63);
        st->chan_of[i] = st->nchan++;
    }
    free(seq);

    st->mem = calloc(1, bytes > 0 ? bytes : 1); /* zeroed: no undefined bytes reach the wire */
    if (NULL == st->mem) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    p = st->mem;
    for (int i = 0; i < st->nchan; ++i) {
        ssp_chan_t *ch = &st->chan[i];
        for (int k = 0; k < 2; ++k) {
            ch->buf[k] = p;
            p += (chan_bytes(st, ch) + 63) & ~(size_t) 63;
        }
    }
    return OMPI_SUCCESS;
}

static int alloc_slots(ssp_t *st)
{
    const int nslots = st->sched.nslots;
    ptrdiff_t gap = 0;
    const size_t span = (size_t) opal_datatype_span(&st->dtype->super, st->count, &gap);
    const size_t stride = (span + 63) & ~(size_t) 63;
    const int nbuf = nslots - MCA_COLL_LOOM_SLOT_SCRATCH0 + 1; /* scratch slots and inbuf */
    char *p;

    st->clk = malloc(sizeof(int64_t) * (size_t) (nslots * st->nb));
    p = malloc(stride * (size_t) nbuf + 1);
    if (NULL == st->clk || NULL == p) {
        free(p);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    st->slots_mem = p;
    st->inbuf = p - gap;
    for (int s = MCA_COLL_LOOM_SLOT_SCRATCH0; s < nslots; ++s) {
        st->slot[s] = p + (size_t) (s - MCA_COLL_LOOM_SLOT_SCRATCH0 + 1) * stride - gap;
    }
    return OMPI_SUCCESS;
}

static void state_free(ssp_t *st)
{
    free(st->slots_mem);
    free(st->clk);
    free(st->mem);
    free(st->chan);
    free(st->chan_of);
    mca_coll_loom_sched_fini(&st->sched);
    if (NULL != st->dtype && !ompi_datatype_is_predefined(st->dtype)) {
        OBJ_RELEASE(st->dtype);
    }
    if (NULL != st->op && !ompi_op_is_intrinsic(st->op)) {
        OBJ_RELEASE(st->op);
    }
    free(st);
}

static void list_remove(ssp_t *st)
{
    for (ssp_t **pp = &active; NULL != *pp; pp = &(*pp)->next) {
        if (*pp == st) {
            *pp = st->next;
            break;
        }
    }
}

/* The fold partner of the hypercube (loom_alg_pairwise.c): ranks 2i and 2i+1 for
 * i < P - 2^k; -1 for the others and for the ring. */
static int fold_partner(const ssp_t *st, int P, int rank)
{
    int p2 = 1;

    if (st->alg != alg_pairwise) {
        return -1;
    }
    while (2 * p2 <= P) {
        p2 *= 2;
    }
    return rank < 2 * (P - p2) ? rank ^ 1 : -1;
}

static int state_create(mca_coll_loom_module_t *m, ompi_communicator_t *comm, int alg, size_t count,
                        ompi_datatype_t *dtype, ompi_op_t *op, unsigned call, ssp_t **out)
{
    const int P = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    /* every rank reserves alike (the communicator's non-blocking tags stay in step); a
     * rank has at most 2(P-1) transfers per direction and peer (the ring's) */
    const int tag_base = ompi_coll_base_nbc_reserve_tags(comm, 2 * P + 2);
    ssp_t *st = calloc(1, sizeof(*st));
    ptrdiff_t lb;
    int rc;

    if (NULL == st) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    st->m = m;
    st->comm = comm;
    st->alg = alg;
    st->count = count;
    st->dtype = dtype;
    st->op = op;
    if (!ompi_datatype_is_predefined(dtype)) {
        OBJ_RETAIN(dtype);
    }
    if (!ompi_op_is_intrinsic(op)) {
        OBJ_RETAIN(op);
    }
    st->swap_ok = (call & MCA_COLL_LOOM_CALL_COMMUTATIVE) && mca_coll_loom_swappable(op, dtype);
    ompi_datatype_get_extent(dtype, &lb, &st->extent);
    ompi_datatype_type_size(dtype, &st->tsize);

    rc = build_schedule(st, P, rank);
    if (OMPI_SUCCESS == rc) {
        const int nseg = st->sched.nseg > 0 ? st->sched.nseg : 1;
        st->nb = st->sched.nblocks > 0 ? st->sched.nblocks : 1;
        st->layout = (mca_coll_loom_layout_t) {
            .count = count, .nseg = nseg, .nparts = st->sched.nblocks / nseg, .part_displ = NULL};
        rc = make_channels(st, P, tag_base, fold_partner(st, P, rank));
    }
    if (OMPI_SUCCESS == rc) {
        rc = alloc_slots(st);
    }
    for (int i = 0; i < st->nchan && OMPI_SUCCESS == rc; ++i) {
        if (!st->chan[i].send) {
            rc = post_recv(st, &st->chan[i]);
        }
    }
    if (OMPI_SUCCESS != rc) {
        for (int i = 0; i < st->nchan; ++i) {
            if (NULL != st->chan[i].req) {
                tl->cancel(st->chan[i].req);
            }
        }
        state_free(st);
        return rc;
    }
    if (MCA_COLL_LOOM_VERBOSE(10)) {
        opal_output_verbose(10, mca_coll_loom_component.output,
                            "coll/loom: %s = %d on communicator %s: stale-synchronous %s over %zu elements, %d "
                            "channels", MCA_COLL_LOOM_SSP_KEY, m->ssp_slack, comm->c_name,
                            mca_coll_loom_algs[alg]->name, count, st->nchan);
    }
    *out = st;
    return OMPI_SUCCESS;
}

/* One step of the drain: pending messages out, then a close on every send channel;
 * true while something is still under way (a send, or a receive channel not closed). */
static bool drain_step(ssp_t *st)
{
    bool busy = false;

    (void) pump(st);
    for (int i = 0; i < st->nchan; ++i) {
        ssp_chan_t *ch = &st->chan[i];
        if (ch->send && !ch->closed && NULL == ch->req && !ch->full) {
            ssp_hdr_t *h = (ssp_hdr_t *) ch->buf[0];
            h->min_clock = SSP_CLOSE;
            h->sender_clock = SSP_CLOSE;
            ch->closed = true;
            if (OMPI_SUCCESS != post_send(st, ch, SSP_HDR)) {
                continue; /* the peer's receive stays posted: nothing better to do */
            }
        }
        /* a receive channel's slot may stay full: only its close matters */
        busy = busy || !ch->closed || (ch->send && (NULL != ch->req || ch->full));
    }
    return busy;
}

/* Drains the exchanges of n modules at once (they may be read in any order by the
 * peers) and frees them; no call may be queued.  Collective: the peers drain too (communicator free, the
 * same change of signature, MPI_Finalize). */
static void drain(ssp_t **sts, int n)
{
    bool busy = true;

    while (busy) {
        busy = false;
        for (int i = 0; i < n; ++i) {
            busy = drain_step(sts[i]) || busy;
        }
        if (busy) {
            opal_progress();
        }
    }
    for (int i = 0; i < n; ++i) {
        state_free(sts[i]);
    }
}

/* Runs the queued calls to completion (before a drain: MPI_Comm_free may come with
 * non-blocking calls still outstanding, which the peers complete too). */
static void finish_calls(ssp_t *st)
{
    while (NULL != st->head) {
        opal_mutex_lock(&ssp_lock);
        state_progress(st);
        opal_mutex_unlock(&ssp_lock);
        if (NULL != st->head) {
            opal_progress();
        }
    }
}

void mca_coll_loom_ssp_fini(mca_coll_loom_module_t *m)
{
    ssp_t *st = m->ssp;

    if (NULL == st) {
        return;
    }
    finish_calls(st);
    opal_mutex_lock(&ssp_lock);
    list_remove(st);
    opal_mutex_unlock(&ssp_lock);
    m->ssp = NULL;
    drain(&st, 1);
}

/* The algorithm of a call: the hypercube for small vectors, the ring for large ones. */
static int choose_alg(ompi_communicator_t *comm, size_t count, size_t bytes)
{
    const int forced = mca_coll_loom_forced_alg(MCA_COLL_LOOM_COLL_ALLREDUCE);

    if (forced >= 0 && (forced == alg_ring || forced == alg_pairwise)) {
        return forced;
    }
    return bytes >= SSP_RING_MIN && count >= (size_t) ompi_comm_size(comm) ? alg_ring : alg_pairwise;
}

int mca_coll_loom_ssp_submit(mca_coll_loom_module_t *m, ompi_communicator_t *comm, size_t count,
                             ompi_datatype_t *dtype, ompi_op_t *op, unsigned call_flags, bool blocking,
                             ssp_call_t *call)
{
    const int alg = choose_alg(comm, count, count * (size_t) (dtype->super.size));
    ssp_t *st = m->ssp;

    if (NULL != st && (st->count != count || st->dtype != dtype || st->op != op || st->alg != alg)) {
        mca_coll_loom_ssp_fini(m); /* the earlier calls first, in order */
        st = NULL;
    }
    if (NULL == st) {
        int rc = state_create(m, comm, alg, count, dtype, op, call_flags, &st);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        opal_mutex_lock(&ssp_lock);
        st->next = active;
        active = st;
        if (!polled) {
            polled = true;
            mca_coll_loom_nb_poll_add(mca_coll_loom_ssp_progress);
        }
        opal_mutex_unlock(&ssp_lock);
        m->ssp = st;
    }
    /* counted like the planner's calls: the algorithm whose schedule runs */
    mca_coll_loom_count(blocking ? &mca_coll_loom_component.alg_calls[MCA_COLL_LOOM_COLL_ALLREDUCE][alg]
                                 : &mca_coll_loom_component.nb_alg_calls[MCA_COLL_LOOM_COLL_ALLREDUCE][alg]);
    call->next = NULL;
    call->pc = -1;
    call->done = false;
    call->rc = OMPI_SUCCESS;
    call->clock = ++m->ssp_clock;
    opal_mutex_lock(&ssp_lock);
    if (NULL == st->tail) {
        st->head = st->tail = call;
    } else {
        st->tail->next = call;
        st->tail = call;
    }
    state_progress(st);
    opal_mutex_unlock(&ssp_lock);
    return OMPI_SUCCESS;
}

void mca_coll_loom_ssp_wait(mca_coll_loom_module_t *m, ssp_call_t *call)
{
    while (!call->done) {
        opal_progress(); /* moves the exchange on (mca_coll_loom_ssp_progress) */
        if (!call->done) {
            opal_mutex_lock(&ssp_lock);
            if (NULL != m->ssp) {
                state_progress(m->ssp);
            }
            opal_mutex_unlock(&ssp_lock);
        }
    }
}

void mca_coll_loom_ssp_drain_all(void)
{
    ssp_t *sts[64];
    int n;

    do {
        opal_mutex_lock(&ssp_lock);
        for (n = 0; n < 64 && NULL != active; ++n) {
            sts[n] = active;
            active = active->next;
            sts[n]->m->ssp = NULL;
        }
        opal_mutex_unlock(&ssp_lock);
        for (int i = 0; i < n; ++i) {
            finish_calls(sts[i]);
        }
        drain(sts, n);
    } while (64 == n);
}

void mca_coll_loom_ssp_exchange_open(void)
{
    OBJ_CONSTRUCT(&ssp_lock, opal_mutex_t);
    active = NULL;
    polled = false;
    alg_pairwise = mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_ALLREDUCE, "pairwise");
    alg_ring = mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_ALLREDUCE, "ring");
}

void mca_coll_loom_ssp_exchange_close(void)
{
    if (polled) {
        mca_coll_loom_nb_poll_remove(mca_coll_loom_ssp_progress);
        polled = false;
    }
    OBJ_DESTRUCT(&ssp_lock);
}
