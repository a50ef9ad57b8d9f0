/*
 * coll/loom: the engine.  Runs one rank's schedule (opal/loom/loom_sched.h) as its
 * dependency graph with the PML, ompi_datatype and ompi_op: an op starts as soon as the
 * ops it depends on are done, transfers complete in whatever order the network
 * delivers them.  A blocking call is a task started and progressed to its end here; a
 * non-blocking one is the same task inside a request (coll_loom_nbc.c).  The schedule
 * is read-only here: the same schedule object serves every call of its shape.
 *
 * Slots: 0 = RESULT (rbuf), 1 = INPUT (sbuf; for MPI_IN_PLACE rbuf itself, or a copy of
 * rbuf taken first when the schedule reads INPUT after writing RESULT), 2.. = scratch
 * buffers, one allocation per call, each laid out like coll/base lays out a temporary
 * buffer of `count` elements (true extent + (count-1) * extent, shifted by -true_lb).
 */
#include "ompi_config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mpi.h"
#include "opal/datatype/opal_datatype.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/datatype/ompi_datatype_internal.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/op/base/functions.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

#include "coll_loom.h"
#include "coll_loom_exec.h"
#include "coll_loom_call.h"
#include "opal/loom/loom_copy.h"

/* Scratch slots are aligned so vectorised op kernels see aligned buffers. */
#define LOOM_SLOT_ALIGN 64

/* ------------------------------------------------------------------------------------ */
/* the executor                                                                          */

/* Scratch memory for one call: the module's kept buffer when it is large enough (or
 * can grow within MCA_COLL_LOOM_KEEP_SCRATCH), else a buffer from the pool that the
 * caller gives back (*owned). */
static char *get_scratch(mca_coll_loom_module_t *m, size_t bytes, bool *owned)
{
    *owned = false;
    if (NULL != m && bytes <= m->scratch_bytes) {
        return m->scratch;
    }
    if (NULL != m && bytes <= MCA_COLL_LOOM_KEEP_SCRATCH) {
        char *p = realloc(m->scratch, bytes);
        if (NULL != p) {
            m->scratch = p;
            m->scratch_bytes = bytes;
            return p;
        }
    }
    *owned = true;
    return mca_coll_loom_scratch_take(bytes);
}

/* ------------------------------------------------------------------------------------ */
/* the engine: one task runs one rank's schedule as its dependency graph (loom_sched.h)  */

static inline void task_push(mca_coll_loom_task_t *t, int32_t i)
{
    t->queue[t->qtail++] = i;
}

static inline void task_release(mca_coll_loom_task_t *t, int32_t j)
{
    if (0 == --t->remaining[j]) {
        task_push(t, j);
    }
}

/* Op i is done: its data successors may go. */
static inline void task_done(mca_coll_loom_task_t *t, int32_t i)
{
    const mca_coll_loom_sched_t *s = t->s;

    t->ndone++;
    for (int32_t k = s->succ_start[i]; k < s->succ_start[i + 1]; ++k) {
        task_release(t, s->succ[k]);
    }
}

/* Op i is posted (a transfer) or done (anything else): the next transfer of its
 * channel may be posted. */
static inline void task_posted(mca_coll_loom_task_t *t, int32_t i)
{
    if (t->s->chan_next[i] >= 0) {
        task_release(t, t->s->chan_next[i]);
    }
}

/* Posts transfer op i (n elements of dt at buf) to its peer.  In line: it is on every
 * call's path.
 * A poisoned task sends empty messages: its peers learn of the failure from the
 * missing data, and every message is still matched.  It receives where the data was
 * due (the call fails, so what the buffers hold is undefined), or into nothing when
 * it lacks the buffer: vader's single copy then reads into a NULL address, which
 * the kernel refuses (said on stderr), where a small buffer would be overrun. */
static inline __opal_attribute_always_inline__ int task_post(mca_coll_loom_task_t *t, int32_t i, bool send, char *buf, size_t n, ompi_datatype_t *dt)
{
    const int peer = t->s->ops[i].peer;
    int rc;

    if (OPAL_UNLIKELY(OMPI_SUCCESS != t->poison) && (send || NULL == buf)) {
        buf = NULL;
        n = 0;
        dt = &ompi_mpi_byte.dt;
    }
    rc = t->tl->post(t->tl_state, t->comm, send, t->direct, buf, n, dt, peer, t->tag, &t->req[i]);
    if (OMPI_SUCCESS != rc) {
        t->req[i] = NULL;
        return rc;
    }
    t->inflight[t->ninflight++] = i;
    task_posted(t, i);
    return OMPI_SUCCESS;
}

/* Whether in-flight transfer i completed. */
static inline bool task_transfer_complete(const mca_coll_loom_task_t *t, int32_t i)
{
    return t->tl->test(t->req[i]);
}

/* This rank failed at its own work (a copy, a buffer it lacks).  The task goes on
 * poisoned (task_post): the peers finish the call with an error where their result
 * depends on this rank, and nothing is left unmatched.  A transport that does not
 * report a short message cannot carry that: there the task stops and the communicator
 * is marked (mca_coll_loom_task_aborted). */
static inline bool task_can_poison(const mca_coll_loom_task_t *t)
{
    return t->tl->reports_length && !t->direct;
}

static inline void task_fail_local(mca_coll_loom_task_t *t, int rc)
{
    if (!task_can_poison(t)) {
        t->rc = rc;
    } else if (OMPI_SUCCESS == t->poison) {
        t->poison = rc;
    }
}

/* Where parts blk .. blk+nblk-1 of RESULT or INPUT lie under t->parts. */
static int parts_range(const mca_coll_loom_task_t *t, int slot, int blk, int nblk, char **ptr, size_t *n,
                       ompi_datatype_t **dtype)
{
    const mca_coll_loom_parts_t *pt = t->parts;
    size_t first;

    if (NULL == pt->displ[slot]) {
        first = (size_t) blk * pt->each[slot];
        *n = (size_t) nblk * pt->each[slot];
    } else if (1 == nblk) {
        first = (size_t) pt->displ[slot][blk];
        *n = (size_t) pt->counts[slot][blk];
    } else {
        return OMPI_ERR_NOT_SUPPORTED; /* parts of their own sizes do not join */
    }
    if (NULL != *ptr) {
        *ptr += (ptrdiff_t) first * t->parts_extent[slot];
    }
    *dtype = pt->dtype[slot];
    return OMPI_SUCCESS;
}

/* Where transfer op i's data lies on this rank: buffer (NULL when the slot has none),
 * elements and their datatype. */
static int transfer_span(const mca_coll_loom_task_t *t, int32_t i, char **buf, size_t *n, ompi_datatype_t **dt)
{
    const mca_coll_loom_op_t *o = &t->s->ops[i];
    const bool send = MCA_COLL_LOOM_OP_SEND == o->kind;
    const int slot = send ? o->src : o->dst;
    size_t first;

    *buf = t->slot[slot];
    *n = t->count;
    *dt = t->dtype;
    if (NULL != t->parts) {
        if (OPAL_UNLIKELY(o->nblk <= 0)) {
            return OMPI_ERR_BAD_PARAM;
        }
        if (slot <= MCA_COLL_LOOM_SLOT_INPUT) {
            return parts_range(t, slot, o->blk, o->nblk, buf, n, dt);
        }
    } else if (o->nblk <= 0) {
        return OMPI_SUCCESS; /* the whole slot */
    }
    first = mca_coll_loom_layout_start(&t->layout, o->blk);
    *n = mca_coll_loom_layout_start(&t->layout, o->blk + o->nblk) - first;
    if (NULL != *buf) {
        /* a receive may land in other blocks than it names (dblk) */
        const size_t at = send || o->dblk == o->blk || NULL != t->parts
                              ? first
                              : mca_coll_loom_layout_start(&t->layout, o->dblk);
        *buf += (ptrdiff_t) at * t->extent;
    }
    return OMPI_SUCCESS;
}

/* A local op of a task with parts: only copies (alltoall has no op), from one datatype
 * to another of the same signature. */
static int parts_local(mca_coll_loom_task_t *t, int32_t i)
{
    const mca_coll_loom_op_t *o = &t->s->ops[i];
    ompi_datatype_t *sdt = t->dtype, *ddt = t->dtype;
    char *src = t->slot[o->src], *dst = t->slot[o->dst];
    size_t sn = t->count, dn = t->count, tsize = 0;
    int rc;

    if (OPAL_UNLIKELY(MCA_COLL_LOOM_OP_COPY != o->kind || o->nblk <= 0)) {
        return OMPI_ERR_BAD_PARAM;
    }
    if (o->src <= MCA_COLL_LOOM_SLOT_INPUT) {
        rc = parts_range(t, o->src, o->blk, o->nblk, &src, &sn, &sdt);
    } else {
        const size_t first = mca_coll_loom_layout_start(&t->layout, o->blk);
        sn = mca_coll_loom_layout_start(&t->layout, o->blk + o->nblk) - first;
        src = NULL != src ? src + (ptrdiff_t) first * t->extent : NULL;
        rc = OMPI_SUCCESS;
    }
    if (OMPI_SUCCESS == rc && o->dst <= MCA_COLL_LOOM_SLOT_INPUT) {
        rc = parts_range(t, o->dst, o->dblk, o->nblk, &dst, &dn, &ddt);
    } else if (OMPI_SUCCESS == rc) {
        const size_t first = mca_coll_loom_layout_start(&t->layout, o->dblk);
        dn = mca_coll_loom_layout_start(&t->layout, o->dblk + o->nblk) - first;
        dst = NULL != dst ? dst + (ptrdiff_t) first * t->extent : NULL;
    }
    if (OMPI_SUCCESS == rc) {
        /* bytes, not elements: a part of a zero-size type holds nothing, whatever its count */
        ompi_datatype_type_size(sdt, &tsize);
        sn = 0 == tsize ? 0 : sn;
    }
    if (OMPI_SUCCESS == rc && sn > 0 && (NULL == src || NULL == dst)) {
        rc = OMPI_ERR_BAD_PARAM; /* data to copy, and no buffer for it */
    } else if (OMPI_SUCCESS == rc && sn > 0 && sdt == ddt && sn == dn) {
        rc = mca_coll_loom_copy_content(sdt, sn, dst, src);
    } else if (OMPI_SUCCESS == rc && sn > 0) {
        /* sndrcv counts are int: part by part (a part's count is one) when the range is
         * longer */
        const int k = sn <= INT32_MAX && dn <= INT32_MAX ? 1 : o->nblk;
        for (int b = 0; b < k && OMPI_SUCCESS == rc; ++b) {
            ptrdiff_t sl, se, dl, de;
            ompi_datatype_get_extent(sdt, &sl, &se);
            ompi_datatype_get_extent(ddt, &dl, &de);
            rc = ompi_datatype_sndrcv(src + (ptrdiff_t) (b * (sn / k)) * se, (int32_t) (sn / k), sdt,
                                      dst + (ptrdiff_t) (b * (dn / k)) * de, (int32_t) (dn / k), ddt);
        }
    }
    return rc;
}

/* Starts transfer op i.  A transfer of no byte is done at once, and the peer skips its
 * side alike: both sides know the part's size in bytes (equal type signatures), not
 * always in elements (k of a zero-size type here, 0 MPI_INT there).  Except a transfer
 * in a call of direct writes, whose window needs a message between every pair in every
 * call (coll_loom_ucx.h), and a transfer of the whole slot (nblk 0: a barrier's empty
 * messages are its synchronisation). */
static int task_start_transfer(mca_coll_loom_task_t *t, int32_t i)
{
    const mca_coll_loom_op_t *o = &t->s->ops[i];
    ompi_datatype_t *dt;
    size_t n, tsize = 0;
    char *buf;
    int rc;

    if (OPAL_UNLIKELY(o->peer < 0 || o->peer >= ompi_comm_size(t->comm))) {
        return OMPI_ERR_BAD_PARAM;
    }
    rc = transfer_span(t, i, &buf, &n, &dt);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    ompi_datatype_type_size(dt, &tsize);
    if ((o->nblk > 0 || NULL != t->parts) && (0 == n || 0 == tsize) && !t->direct) {
        task_posted(t, i);
        task_done(t, i);
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(NULL == buf && n > 0 && tsize > 0)) {
        /* data to move and no buffer for it (a slot the caller did not provide, which a
         * correct schedule never touches) */
        task_fail_local(t, OMPI_ERR_BAD_PARAM);
        if (OMPI_SUCCESS != t->rc) {
            return t->rc;
        }
    }
    return task_post(t, i, MCA_COLL_LOOM_OP_SEND == o->kind, buf, n, dt);
}

/* Runs local op i (copy, reduce) on data of the task without parts. */
static int task_local_op(mca_coll_loom_task_t *t, int32_t i)
{
    const mca_coll_loom_op_t *o = &t->s->ops[i];
    char *src = t->slot[o->src], *dst = t->slot[o->dst];
    size_t n = t->count;
    int rc = OMPI_SUCCESS;

    if (o->nblk > 0) {
        const size_t first = mca_coll_loom_layout_start(&t->layout, o->blk);
        /* a local op may move blocks (dblk != blk): equal blocks (mca_coll_loom_task_fits) */
        const size_t dfirst = o->dblk == o->blk ? first : mca_coll_loom_layout_start(&t->layout, o->dblk);
        n = mca_coll_loom_layout_start(&t->layout, o->blk + o->nblk) - first;
        if (NULL != src) {
            src += (ptrdiff_t) first * t->extent;
        }
        if (NULL != dst) {
            dst += (ptrdiff_t) dfirst * t->extent;
        }
    }
    if (0 == n) {
        return OMPI_SUCCESS; /* a local op on no data */
    }
    if (OPAL_UNLIKELY(NULL == src || NULL == dst)) {
        return OMPI_ERR_BAD_PARAM; /* a slot the caller did not provide */
    }
    switch (o->kind) {
    case MCA_COLL_LOOM_OP_COPY:
        if (src != dst) {
            rc = mca_coll_loom_copy_content(t->dtype, n, dst, src);
        }
        break;

    case MCA_COLL_LOOM_OP_REDUCE:
        /* dst := src o dst */
        ompi_op_reduce(t->op, src, dst, n, t->dtype);
        break;

    case MCA_COLL_LOOM_OP_REDUCE_R:
        /* dst := dst o src.  ompi_op_reduce(op, a, b) computes b := a o b, so for an op
         * whose operand order matters the result is formed in src and copied to dst.
         * Contract with the builders (the graph counts REDUCE_R as writing src): src is
         * a scratch slot whose value is not needed afterwards. */
        if (t->swap_ok) {
            ompi_op_reduce(t->op, src, dst, n, t->dtype);
        } else {
            ompi_op_reduce(t->op, dst, src, n, t->dtype);
            rc = mca_coll_loom_copy_content(t->dtype, n, dst, src);
        }
        break;

    case MCA_COLL_LOOM_OP_UNREDUCE:
        /* dst := dst o src^-1, only for (op, dtype) pairs declared invertible */
        rc = mca_coll_loom_unreduce(t->op, t->dtype, src, dst, n);
        break;

    default:
        rc = OMPI_ERR_BAD_PARAM;
    }
    return rc;
}

/* Starts op i, whose predecessors are all done.  Local ops run to completion here; a
 * poisoned task skips them (its data is lost already). */
static int task_start_op(mca_coll_loom_task_t *t, int32_t i)
{
    const mca_coll_loom_op_t *o = &t->s->ops[i];
    int rc;

    if (MCA_COLL_LOOM_OP_WAIT == o->kind) {
        task_done(t, i); /* the round reading's barrier: no edges in the graph */
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(o->src >= t->s->nslots || o->dst >= t->s->nslots)) {
        return OMPI_ERR_BAD_PARAM;
    }
    if (MCA_COLL_LOOM_OP_SEND == o->kind || MCA_COLL_LOOM_OP_RECV == o->kind) {
        return task_start_transfer(t, i);
    }
    if (OPAL_LIKELY(OMPI_SUCCESS == t->poison)) {
        rc = OPAL_UNLIKELY(NULL != t->parts) ? parts_local(t, i) : task_local_op(t, i);
        /* coll_loom_test_fail_local: the tests' way into the poisoned path */
        if (OPAL_UNLIKELY(mca_coll_loom_component.test_fail_local > 0) &&
            0 == --mca_coll_loom_component.test_fail_local) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
        }
        if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
            task_fail_local(t, rc);
            if (OMPI_SUCCESS != t->rc) {
                return t->rc;
            }
        }
    }
    task_done(t, i);
    return OMPI_SUCCESS;
}

/* Bytes this rank expects from receive op i (only asked after a message arrived empty). */
static size_t recv_bytes(const mca_coll_loom_task_t *t, int32_t i)
{
    ompi_datatype_t *dt;
    size_t n, tsize = 0;
    char *buf;

    if (OMPI_SUCCESS != transfer_span(t, i, &buf, &n, &dt)) {
        return 0;
    }
    ompi_datatype_type_size(dt, &tsize);
    return n * tsize;
}

/* Transfer i completed: its outcome into the task.  An empty message where data was
 * due is a peer's poison (task_post); a message cut short by this rank's empty receive
 * is what a poisoned task expects. */
static inline void task_transfer_finish(mca_coll_loom_task_t *t, int32_t i)
{
    const bool recv = MCA_COLL_LOOM_OP_RECV == t->s->ops[i].kind;
    size_t received = SIZE_MAX;
    const int err = t->tl->finish(t->req[i], recv ? &received : NULL);

    t->req[i] = NULL;
    if (OPAL_UNLIKELY(OMPI_SUCCESS != err)) {
        if (MPI_ERR_TRUNCATE != err || OMPI_SUCCESS == t->poison) {
            t->rc = err;
        }
    } else if (OPAL_UNLIKELY(0 == received) && OMPI_SUCCESS == t->poison && task_can_poison(t) &&
               recv_bytes(t, i) > 0) {
        t->poison = OMPI_ERROR;
        t->poison_peer = t->s->ops[i].peer;
    }
}

bool mca_coll_loom_task_progress(mca_coll_loom_task_t *t)
{
    bool moved = true;

    while (moved && OMPI_SUCCESS == t->rc && t->ndone < t->s->nops) {
        moved = false;
        /* transfers that completed release what waits for them */
        for (int k = 0; k < t->ninflight;) {
            const int32_t i = t->inflight[k];
            if (!task_transfer_complete(t, i)) {
                ++k;
                continue;
            }
            t->inflight[k] = t->inflight[--t->ninflight];
            task_transfer_finish(t, i);
            if (OPAL_UNLIKELY(OMPI_SUCCESS != t->rc)) {
                return true;
            }
            task_done(t, i);
            moved = true;
        }
        /* then everything that became ready, in list order where that is free */
        while (t->qhead < t->qtail) {
            const int rc = task_start_op(t, t->queue[t->qhead++]);
            if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
                t->rc = rc;
                return true;
            }
            moved = true;
        }
    }
    if (OPAL_UNLIKELY(OMPI_SUCCESS != t->poison) && t->ndone == t->s->nops && OMPI_SUCCESS == t->rc) {
        t->rc = t->poison; /* every op ran: the call fails, the communicator stays usable */
    }
    return OMPI_SUCCESS != t->rc || t->ndone == t->s->nops;
}

static void task_lay_out_state(mca_coll_loom_task_t *t, char *mem, int nops)
{
    t->req = (void **) mem;
    t->remaining = (int32_t *) (mem + (size_t) nops * sizeof(void *));
    t->queue = t->remaining + nops;
    t->inflight = t->queue + nops;
}

int mca_coll_loom_task_fits(const mca_coll_loom_sched_t *s, size_t count, const size_t *part_displ,
                            const mca_coll_loom_parts_t *parts, int P)
{
    const int nseg = s->nseg > 0 ? s->nseg : 1;
    const mca_coll_loom_layout_t layout = {
        .count = count, .nseg = nseg, .nparts = s->nblocks / nseg, .part_displ = part_displ};

    if (s->nslots < 2 || s->nslots > MCA_COLL_LOOM_MAX_SLOTS || MCA_COLL_LOOM_OK != s->error || NULL == s->npred ||
        (NULL != part_displ && (s->nblocks < 1 || s->nblocks % nseg != 0 || layout.nparts != P))) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    /* a block that moves must fit where it lands: builders move blocks only where the
     * collective's layout has equal blocks (allgather's parts) */
    if (s->moves_blocks && s->nblocks > 0 && !mca_coll_loom_layout_uniform(&layout)) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    /* parts of their own sizes have no scratch shape; segments would cut parts */
    if (NULL != parts && (((NULL != parts->displ[0] || NULL != parts->displ[1]) &&
                           s->nslots > MCA_COLL_LOOM_SLOT_SCRATCH0) ||
                          s->nseg > 1 || s->nblocks <= 0)) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    return OMPI_SUCCESS;
}

void mca_coll_loom_task_init(mca_coll_loom_task_t *t, mca_coll_loom_module_t *m, const mca_coll_loom_sched_t *s,
                             const void *sbuf, void *rbuf, size_t count, ompi_datatype_t *dtype, ompi_op_t *op,
                             ompi_communicator_t *comm, int tag, unsigned call, const size_t *part_displ,
                             int poison, char *state_mem)
{
    const bool in_place = (MPI_IN_PLACE == sbuf);
    const bool save_input = in_place && s->input_after_result;
    const int nseg = s->nseg > 0 ? s->nseg : 1;
    int nscratch;

    t->s = s;
    t->count = count;
    t->dtype = dtype;
    t->op = op;
    t->comm = comm;
    t->tl = &mca_coll_loom_tl_pml;
    t->tl_state = NULL;
    t->direct = false;
    t->tag = tag;
    /* intrinsic commutative ops give the same bits for a o b and b o a, except a
     * floating-point max or min */
    t->swap_ok = (call & MCA_COLL_LOOM_CALL_COMMUTATIVE) && mca_coll_loom_swappable(op, dtype);
    t->rc = OMPI_SUCCESS;
    t->poison = poison;
    t->poison_peer = -1;
    t->ndone = 0;
    t->ninflight = 0;
    t->qhead = t->qtail = 0;
    t->scratch = NULL;
    t->scratch_bytes = 0;
    t->scratch_owned = false;
    t->extent = 0;
    t->parts = NULL;
    t->layout = (mca_coll_loom_layout_t) {
        .count = count, .nseg = nseg, .nparts = s->nblocks / nseg, .part_displ = part_displ};

    /* the caller checked mca_coll_loom_task_fits (a layout s cannot run goes elsewhere) */
    task_lay_out_state(t, NULL != state_mem ? state_mem : (char *) t->inline_state, s->nops);

    t->slot[MCA_COLL_LOOM_SLOT_RESULT] = (char *) rbuf;
    t->slot[MCA_COLL_LOOM_SLOT_INPUT] = in_place ? (char *) rbuf : (char *) (uintptr_t) sbuf;
    for (int i = MCA_COLL_LOOM_SLOT_SCRATCH0; i < s->nslots; ++i) {
        t->slot[i] = NULL;
    }
    if (s->nblocks > 0) {
        ptrdiff_t lb;
        ompi_datatype_get_extent(dtype, &lb, &t->extent);
    }

    /* scratch slots (plus the saved input of an in-place call), one allocation: the
     * module's kept buffer for a blocking call (m != NULL), else the task's own; none
     * for a poisoned task, which touches no data */
    nscratch = s->nslots - MCA_COLL_LOOM_SLOT_SCRATCH0 + (save_input ? 1 : 0);
    if (count > 0 && nscratch > 0 && OMPI_SUCCESS == poison) {
        ptrdiff_t gap = 0;
        size_t span = (size_t) opal_datatype_span(&dtype->super, count, &gap);

        if (span > 0) {
            size_t stride = (span + LOOM_SLOT_ALIGN - 1) & ~((size_t) LOOM_SLOT_ALIGN - 1);
            if (stride < span || stride > SIZE_MAX / (size_t) nscratch) {
                t->poison = OMPI_ERR_OUT_OF_RESOURCE; /* the task runs without data */
                return;
            }
            t->scratch_bytes = stride * (size_t) nscratch;
            if (NULL != m) {
                t->scratch = get_scratch(m, t->scratch_bytes, &t->scratch_owned);
            } else {
                t->scratch = mca_coll_loom_scratch_take(t->scratch_bytes);
                t->scratch_owned = true;
            }
            if (NULL == t->scratch) {
                t->poison = OMPI_ERR_OUT_OF_RESOURCE; /* the task runs without data */
                return;
            }
            for (int i = 0; i < nscratch; ++i) {
                char *p = t->scratch + (size_t) i * stride - gap;
                if (save_input && i == nscratch - 1) {
                    t->slot[MCA_COLL_LOOM_SLOT_INPUT] = p;
                } else {
                    t->slot[MCA_COLL_LOOM_SLOT_SCRATCH0 + i] = p;
                }
            }
            if (save_input) {
                int rc = mca_coll_loom_copy_content(dtype, count, t->slot[MCA_COLL_LOOM_SLOT_INPUT],
                                                    (char *) rbuf);
                if (OMPI_SUCCESS != rc) {
                    t->poison = rc;
                }
            }
        }
    }
}

void mca_coll_loom_task_set_parts(mca_coll_loom_task_t *t, const mca_coll_loom_parts_t *parts)
{
    ptrdiff_t lb;

    /* mca_coll_loom_task_fits checked the parts against the schedule */
    for (int k = 0; k < 2; ++k) {
        ompi_datatype_get_extent(parts->dtype[k], &lb, &t->parts_extent[k]);
    }
    t->parts = parts;
}

void mca_coll_loom_task_start(mca_coll_loom_task_t *t)
{
    const mca_coll_loom_sched_t *s = t->s;

    t->rc = task_can_poison(t) ? OMPI_SUCCESS : t->poison; /* task_fail_local */
    t->ndone = 0;
    t->ninflight = 0;
    t->qhead = t->qtail = 0;
    for (int i = 0; i < s->nops; ++i) {
        t->req[i] = NULL;
        t->remaining[i] = s->npred[i];
        if (0 == s->npred[i]) {
            task_push(t, i);
        }
    }
    (void) mca_coll_loom_task_progress(t);
}

void mca_coll_loom_task_fini(mca_coll_loom_task_t *t)
{
    /* error path: nothing may still write into buffers about to be released, so cancel
     * what can be cancelled and wait for everything */
    for (int k = 0; k < t->ninflight; ++k) {
        void **req = &t->req[t->inflight[k]];
        t->tl->cancel(*req);
        *req = NULL;
    }
    t->ninflight = 0;
    if (t->scratch_owned) {
        mca_coll_loom_scratch_give(t->scratch, t->scratch_bytes);
    }
    t->scratch = NULL;
    t->scratch_owned = false;
}

static inline bool any_complete(const mca_coll_loom_task_t *t)
{
    for (int k = 0; k < t->ninflight; ++k) {
        if (task_transfer_complete(t, t->inflight[k])) {
            return true;
        }
    }
    return 0 == t->ninflight;
}

/* A blocking call: start, then progress the task and Open MPI until it is done.  In
 * line in both callers, as when it had one.  poison: this rank failed before the call
 * (its data is not there); the task still takes every step, without data. */
static inline __opal_attribute_always_inline__ int
exec_schedule(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *p, const void *sbuf, void *rbuf, size_t count,
              ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm, int tag, unsigned call,
              const size_t *part_displ, const mca_coll_loom_parts_t *parts, int poison)
{
    const mca_coll_loom_sched_t *s = p->sched;
    const int coll = p->coll;
    mca_coll_loom_task_t t;
    char *mem = NULL;
    int rc;

    /* a layout the schedule cannot run: known alike on every rank, before any message */
    if (OPAL_UNLIKELY(OMPI_SUCCESS != mca_coll_loom_task_fits(s, count, part_displ, parts, ompi_comm_size(comm)))) {
        mca_coll_loom_refused(m, comm, coll, "the schedule cannot lay out this call's data");
        return OMPI_ERR_NOT_AVAILABLE;
    }
    if (s->nops > MCA_COLL_LOOM_TASK_INLINE_OPS) {
        mem = malloc((size_t) s->nops * MCA_COLL_LOOM_TASK_STATE_PER_OP);
        if (NULL == mem) {
            /* no state to run the task in: the peers will wait for this rank */
            mca_coll_loom_mark_failed(m, comm, coll, OMPI_ERR_OUT_OF_RESOURCE);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    mca_coll_loom_task_init(&t, m, s, sbuf, rbuf, count, dtype, op, comm, tag, call, part_displ, poison, mem);
    t.tl = mca_coll_loom_call_tl(m, p->choice.transport, &t.tl_state);
    /* direct writes: blocking calls only, whose order every rank shares (UCX's window
     * has two parts that alternate by call) */
    t.direct = s->exchange && NULL != t.tl->direct_begin && t.tl->direct_begin(t.tl_state);
    if (NULL != parts) {
        mca_coll_loom_task_set_parts(&t, parts);
    }
    mca_coll_loom_task_start(&t);
    while (!mca_coll_loom_task_progress(&t)) {
        /* nothing can start before a transfer completes: spin on the transport only
         * (the task's own transport first: opal_progress also polls the PML's) */
        do {
            if (NULL != t.tl->progress && t.tl->progress() > 0 && any_complete(&t)) {
                break;
            }
            opal_progress();
        } while (!any_complete(&t));
    }
    rc = t.rc;
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        mca_coll_loom_call_failed(m, comm, coll, rc, mca_coll_loom_task_aborted(&t), t.poison_peer);
    }
    mca_coll_loom_task_fini(&t);
    free(mem);
    return rc;
}

int mca_coll_loom_exec(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *p, const void *sbuf,
                       void *rbuf, size_t count, ompi_datatype_t *dtype, ompi_op_t *op,
                       ompi_communicator_t *comm, int tag, unsigned call, const size_t *part_displ)
{
    return exec_schedule(m, p, sbuf, rbuf, count, dtype, op, comm, tag, call, part_displ, NULL, OMPI_SUCCESS);
}

int mca_coll_loom_exec_call(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *p, const mca_coll_loom_call_t *c,
                            int tag)
{
    mca_coll_loom_call_run_t run;
    int rc = mca_coll_loom_call_begin(c, &run);

    rc = exec_schedule(m, p, run.sbuf, run.rbuf, run.count, run.dtype, c->op, c->comm, tag, c->call, c->displ,
                       c->has_parts ? &c->parts : NULL, rc);
    return mca_coll_loom_call_end(c, &run, rc);
}
