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

void mca_coll_loom_sched_fini(mca_coll_loom_sched_t *s)
{
    free(s->ops);
    mca_coll_loom_sched_init(s);
}

void mca_coll_loom_sched_reset(mca_coll_loom_sched_t *s)
{
    s->nops = 0;
    s->nslots = 0;
    s->nblocks = 0;
    s->nseg = 1;
    s->max_inflight = 0;
    s->rounds = 0;
    s->input_after_result = false;
    s->error = MCA_COLL_LOOM_OK;
}

static void sched_append_blk(mca_coll_loom_sched_t *s, int kind, int src, int dst, int peer, int blk,
                             int nblk)
{
    if (MCA_COLL_LOOM_OK != s->error) {
        return;
    }
    if (src < 0 || src >= MCA_COLL_LOOM_MAX_SLOTS || dst < 0 || dst >= MCA_COLL_LOOM_MAX_SLOTS ||
        nblk < 0 || (nblk > 0 && (blk < 0 || blk + nblk > s->nblocks))) {
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
                                               .nblk = nblk};
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
    sched_append_blk(s, MCA_COLL_LOOM_OP_REDUCE, src, dst, -1, blk, nblk > 0 ? nblk : -1);
}

void mca_coll_loom_sched_reduce_r_blk(mca_coll_loom_sched_t *s, int src, int dst, int blk, int nblk)
{
    sched_append_blk(s, MCA_COLL_LOOM_OP_REDUCE_R, src, dst, -1, blk, nblk > 0 ? nblk : -1);
}

void mca_coll_loom_sched_copy_blk(mca_coll_loom_sched_t *s, int src, int dst, int blk, int nblk)
{
    if (src != dst) {
        sched_append_blk(s, MCA_COLL_LOOM_OP_COPY, src, dst, -1, blk, nblk > 0 ? nblk : -1);
    }
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

        if (MCA_COLL_LOOM_OP_COPY == o->kind && slot_src == slot_dst) {
            continue; /* a copy the mapping made pointless */
        }
        sched_append_blk(dst, o->kind, MCA_COLL_LOOM_OP_WAIT == o->kind ? 0 : slot_src,
                         MCA_COLL_LOOM_OP_WAIT == o->kind ? 0 : slot_dst, peer, o->blk, o->nblk);
    }
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
 * (peer, kind), so this changes no message, and it lets the executor turn the last
 * send before a WAIT into a blocking send: every receive of the step is posted by
 * then, as in the classic irecv + send + wait exchange. */
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
    return s->error;
}

void mca_coll_loom_sched_print(const mca_coll_loom_sched_t *s, void (*out)(const char *line, void *ctx),
                               void *ctx)
{
    static const char *names[] = {"send", "recv", "wait", "copy", "reduce", "reduce_r", "unreduce"};
    char line[96];

    for (int i = 0; i < s->nops; ++i) {
        const mca_coll_loom_op_t *op = &s->ops[i];
        char blocks[32] = "";
        if (op->nblk > 0) {
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
