/*
 * coll/loom: the shared-memory node phases of `hierarchical` (Zhu et al., section 3:
 * inside a node, short messages and flags through shared memory; Zhu et al.'s
 * conclusion is that this is where shared memory pays).  Calls up to
 * coll_loom_shm_slot_size bytes:
 *
 *   allreduce  every rank puts its contribution in its slot of the node's segment; the
 *              leader combines the slots in rank order, runs the leaders' phase over
 *              the network (the same schedule as the point-to-point variant), and
 *              writes the result to the segment, where the other ranks copy it from;
 *   barrier    the same without data;
 *   bcast      the root's node: the root writes the data to the segment; other nodes:
 *              the leader receives it in the leaders' phase and writes it there;
 *   reduce     the node's slots are combined by the root (on its node) or the leader,
 *              which then takes part in the leaders' reduce.
 *
 * The protocol (call numbers, arrive words, release) is opal/loom/loom_shm.h.  Slots
 * hold the packed form of the data (the type signature), so ranks may pass different
 * datatypes with the same signature, as MPI allows.  The segment's setup, and the pool
 * of freed segments, are coll_loom_shm_setup.c.
 */
#include "ompi_config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/loom/loom_copy.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/op/op.h"

#include "coll_loom.h"
#include "coll_loom_exec.h"
#include "coll_loom_shm.h"

/* Checks before sleeping when coll_loom_shm_spin is -1.  Ranks with a core each spin
 * on.  Ranks that share cores (mpi_yield_when_idle) spin briefly for what the node
 * does alone, as a futex wake costs more than a short wait, but sleep at once while
 * the leaders talk to other nodes: a waiting rank that polls then takes the core from
 * the leader that works.  Waking the sleepers early, when the leader enters the last
 * wait of its network phase, was slower (docs/dev/developing.md, "Performance
 * notes"). */
#define LOOM_SHM_SPIN_SHARED    64
#define LOOM_SHM_SPIN_DEDICATED 100000
/* Several nodes: bcasts below this many bytes keep hierarchical's point-to-point node
 * phases (see mca_coll_loom_shm_usable). */
#define LOOM_SHM_BCAST_MIN_NODES 257
/* A sleeping rank looks again (and runs MPI progress) at least this often. */
#define LOOM_SHM_SLEEP_US 1000

static void loom_progress(void)
{
    (void) opal_progress();
}

/* long: the wait spans the leaders' phase over the network */
static void wait_policy(mca_coll_loom_shm_wait_t *w, bool long_wait)
{
    int spin = mca_coll_loom_component.shm_spin;

    if (spin < 0) {
        spin = !opal_progress_yield_when_idle ? LOOM_SHM_SPIN_DEDICATED
               : long_wait                    ? 0
                                              : LOOM_SHM_SPIN_SHARED;
    }
    w->spin = spin;
    w->sleep_us = LOOM_SHM_SLEEP_US;
    w->progress = loom_progress;

}

bool mca_coll_loom_shm_usable(mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll, size_t bytes)
{
    const mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    if (MCA_COLL_LOOM_COLL_ALLREDUCE != coll && MCA_COLL_LOOM_COLL_BARRIER != coll &&
        MCA_COLL_LOOM_COLL_BCAST != coll && MCA_COLL_LOOM_COLL_REDUCE != coll &&
        MCA_COLL_LOOM_COLL_ALLTOALL != coll) {
        return false;
    }
    /* alltoall on one node (coll_loom_shm_alltoall.c): any size, the sym slots hold
     * descriptors or small send buffers, never a slot's worth of data */
    if (MCA_COLL_LOOM_COLL_ALLTOALL == coll) {
        bytes = 0;
    }
    /* several nodes, bcast up to 256 B: the point-to-point node phase.  A node's other
     * ranks then poll for the leader's eager message, and back-to-back calls overlap;
     * through the segment they sleep across the network phase (a futex wake per call).
     * Above, the leader's message to its node no longer fits Open MPI's small-message
     * path and the segment is the faster (docs/dev/developing.md, "Performance notes";
     * against tuned and han: docs/user/performance.md, "Every root"). */
    if (MCA_COLL_LOOM_COLL_BCAST == coll && bytes < LOOM_SHM_BCAST_MIN_NODES && m->have_topo &&
        m->topo.nnodes > 1) {
        return false;
    }
    /* a slot size of 0 or less turns the path off like coll_loom_shm=0; a setup that
     * failed (state < 0) turned it off on every rank of the communicator alike */
    if (!(cm->shm && cm->shm_slot_size > 0 && m->have_topo && m->shm.state >= 0 &&
          bytes <= (size_t) cm->shm_slot_size)) {
        return false;
    }
    /* Setting a segment up and tearing it down (open, posix_fallocate, mmap and page
     * faults, munmap; two agreeing allreduces) costs the time of a few dozen small calls
     * through point-to-point node phases (docs/user/algorithms.md, "Shared-memory node
     * phases"): a communicator created for a handful of calls never pays it.  Every
     * rank counts the same calls, so all agree when the segment comes into play. */
    if (OPAL_UNLIKELY(0 == m->shm.state) && m->shm.eligible < cm->shm_setup_call - 1) {
        ++m->shm.eligible;
        return false;
    }
    return true;
}



/* The wait policies of one call on the segment (wl: waits that span the network
 * phase; may be NULL) and its protocol number. */
uint32_t mca_coll_loom_shm_next_call(mca_coll_loom_module_t *m, mca_coll_loom_shm_wait_t *w,
                                     mca_coll_loom_shm_wait_t *wl)
{
    /* the outstanding non-blocking calls first: they need only that every rank starts
     * them, which every rank does before this call */
    while (OPAL_UNLIKELY(m->shm.nb_busy > 0)) {
        (void) opal_progress();
    }
    wait_policy(w, false);
    if (NULL != wl) {
        wait_policy(wl, m->topo.nnodes > 1);
    }
    ++m->shm.seq;
    mca_coll_loom_shm_sym_refresh(&m->shm.seg, m->shm.seq);
    return m->shm.seq;
}

/* A temporary buffer laid out like `count` elements of dtype (coll/base's way). */
typedef struct {
    char *mem;
    size_t bytes;
    char *buf; /* the MPI buffer address inside mem */
} loom_tmp_t;

static int tmp_get(loom_tmp_t *t, size_t count, ompi_datatype_t *dtype)
{
    ptrdiff_t gap = 0;
    size_t span = (size_t) opal_datatype_span(&dtype->super, count, &gap);

    t->bytes = span > 0 ? span : 1;
    t->mem = mca_coll_loom_scratch_take(t->bytes);
    t->buf = NULL != t->mem ? t->mem - gap : NULL;
    return NULL != t->mem ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
}

static void tmp_put(loom_tmp_t *t)
{
    mca_coll_loom_scratch_give(t->mem, t->bytes);
    t->mem = t->buf = NULL;
}

/* acc := src o acc (src: packed data in the segment) */
static int reduce_from(const char *src, void *acc, size_t count, ompi_datatype_t *dtype, ompi_op_t *op,
                       size_t bytes, loom_tmp_t *t)
{
    if (mca_coll_loom_packed_is_layout(dtype, count)) {
        ptrdiff_t lb, extent;
        ompi_datatype_get_true_extent(dtype, &lb, &extent);
        ompi_op_reduce(op, (void *) (uintptr_t) (src - lb), acc, count, dtype);
        return OMPI_SUCCESS;
    }
    if (NULL == t->mem) {
        int rc = tmp_get(t, count, dtype);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    int rc = mca_coll_loom_unpack(src, bytes, t->buf, count, dtype);
    if (OMPI_SUCCESS == rc) {
        ompi_op_reduce(op, t->buf, acc, count, dtype);
    }
    return rc;
}

/* Where rank i's contribution to the call is: its slot, or (sym) its sym slot of call seq. */
typedef struct {
    bool sym;
    uint32_t seq;
} loom_src_t;

static const char *src_slot(const mca_coll_loom_shm_t *seg, int i, loom_src_t src)
{
    return src.sym ? mca_coll_loom_shm_sym_slot(seg, i, src.seq) : mca_coll_loom_shm_slot(seg, i);
}

/* What a peer's failure (a status, loom_shm.h) makes this rank return: its code, but
 * never the one that sends the caller to the point-to-point schedule alone. */
static int peer_status(const char *data)
{
    const int32_t rc = mca_coll_loom_shm_status(data);
    return OMPI_ERR_NOT_AVAILABLE == rc ? OMPI_ERROR : rc;
}

/* The first failure among the contributions (src) of every rank but `self`. */
static int slots_status(const mca_coll_loom_shm_t *seg, loom_src_t src, int self)
{
    for (int i = 0; i < seg->n; ++i) {
        const int rc = i != self ? peer_status(src_slot(seg, i, src)) : OMPI_SUCCESS;
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

static int reduce_slot(const mca_coll_loom_shm_t *seg, int i, loom_src_t src, void *acc, size_t count,
                       ompi_datatype_t *dtype, ompi_op_t *op, size_t bytes, loom_tmp_t *t)
{
    return reduce_from(src_slot(seg, i, src), acc, count, dtype, op, bytes, t);
}

/* The node's combination, in acc (dtype's layout), of the contributions (src) of every
 * rank but `self` and of `own` (self's contribution, dtype's layout; may be acc itself).
 * Non-commutative ops: self is index 0 (the leader of a node-consecutive node) and the
 * result is x0 o x1 o ... o x(n-1), formed from the right. */
static int combine(const mca_coll_loom_shm_t *seg, loom_src_t src, int self, const void *own, void *acc,
                   size_t count, ompi_datatype_t *dtype, ompi_op_t *op, size_t bytes, bool commutative)
{
    loom_tmp_t t = {NULL, 0, NULL};
    int rc = OMPI_SUCCESS;

    if (commutative) {
        if (own != acc) {
            rc = mca_coll_loom_copy_content(dtype, count, acc, own);
        }
        for (int i = 0; OMPI_SUCCESS == rc && i < seg->n; ++i) {
            if (i != self) {
                rc = reduce_slot(seg, i, src, acc, count, dtype, op, bytes, &t);
            }
        }
    } else {
        /* self == 0 here; acc may alias own, so the right-hand side is built in a
         * temporary unless acc is free to use */
        loom_tmp_t right = {NULL, 0, NULL};
        char *r = acc;

        if (own == acc) {
            rc = tmp_get(&right, count, dtype);
            r = right.buf;
        }
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_loom_unpack(src_slot(seg, seg->n - 1, src), bytes, r, count, dtype);
        }
        for (int i = seg->n - 2; OMPI_SUCCESS == rc && i >= 1; --i) {
            rc = reduce_slot(seg, i, src, r, count, dtype, op, bytes, &t);
        }
        if (OMPI_SUCCESS == rc) {
            ompi_op_reduce(op, (void *) (uintptr_t) own, r, count, dtype);
            if (r != acc) {
                rc = mca_coll_loom_copy_content(dtype, count, acc, r);
            }
        }
        if (NULL != right.mem) {
            tmp_put(&right);
        }
    }
    if (NULL != t.mem) {
        tmp_put(&t);
    }
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* the collectives                                                                       */

/* Runs the representatives' schedule s on the plan's transport (out of line: the plan's
 * copy would make every segment call pay for a stack frame it rarely needs). */
static __opal_attribute_noinline__ int exec_leaders(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan,
                                                    const mca_coll_loom_sched_t *s, ompi_communicator_t *comm,
                                                    const void *sbuf, void *rbuf, size_t count,
                                                    ompi_datatype_t *dtype, ompi_op_t *op, unsigned call, int tag)
{
    mca_coll_loom_plan_t leaders = *plan;
    int rc;

    leaders.sched = s;
    /* never the code that sends the caller to its point-to-point schedule: this call
     * has run already */
    rc = mca_coll_loom_exec(m, &leaders, sbuf, rbuf, count, dtype, op, comm, tag, call, NULL);
    return OMPI_ERR_NOT_AVAILABLE == rc ? OMPI_ERROR : rc;
}

/* The representatives' phase of the call planned as `plan`. */
static int run_leaders(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan, ompi_communicator_t *comm,
                       const void *sbuf, void *rbuf, size_t count, ompi_datatype_t *dtype, ompi_op_t *op,
                       unsigned call, int root, int tag)
{
    const mca_coll_loom_sched_t *s = mca_coll_loom_plan_leaders(m, plan->coll, comm, call, root);

    if (NULL == s) {
        return OMPI_ERROR;
    }
    if (0 == s->nops) {
        return OMPI_SUCCESS;
    }
    return exec_leaders(m, plan, s, comm, sbuf, rbuf, count, dtype, op, call, tag);
}

/* A call without coordinator (loom_shm.h): a communicator of one node, at most
 * MCA_COLL_LOOM_SHM_SYM_BYTES of data. */
static bool symmetric(const mca_coll_loom_module_t *m, size_t bytes)
{
    return 1 == m->topo.nnodes && bytes <= MCA_COLL_LOOM_SHM_SYM_BYTES;
}

/* A contribution in the own sym slot of call seq (loom_shm.h): free once every rank is
 * done with call seq - MCA_COLL_LOOM_SHM_SYM_DEPTH; arrival even after an error (then
 * in the slot's status), so the node is never left waiting. */
static int sym_contribute(mca_coll_loom_shm_t *seg, uint32_t seq, const void *buf, size_t count,
                          ompi_datatype_t *dtype, size_t bytes, const mca_coll_loom_shm_wait_t *w)
{
    int rc = OMPI_SUCCESS;

    mca_coll_loom_shm_small_enter(seg, seq, w);
    if (bytes > 0) {
        char *slot = mca_coll_loom_shm_sym_slot(seg, seg->me, seq);
        rc = mca_coll_loom_pack(buf, count, dtype, slot, bytes);
        mca_coll_loom_shm_set_status(slot, rc);
    }
    mca_coll_loom_shm_sym_arrive(seg, seq);
    return rc;
}

/* Its first steps: own contribution, waiting for every other rank's. */
static int sym_gather(mca_coll_loom_module_t *m, uint32_t seq, const void *buf, size_t count,
                      ompi_datatype_t *dtype, size_t bytes, const mca_coll_loom_shm_wait_t *w)
{
    mca_coll_loom_shm_t *seg = &m->shm.seg;
    int rc = sym_contribute(seg, seq, buf, count, dtype, bytes, w);

    mca_coll_loom_shm_sym_wait(seg, seq, -1, w);
    return rc;
}

/* Its last step: index 0 releases the call for the coordinated calls that follow
 * (release grows in call order: after release >= seq - 1). */
void mca_coll_loom_shm_sym_release(mca_coll_loom_shm_t *seg, uint32_t seq, const mca_coll_loom_shm_wait_t *w)
{
    if (0 == seg->me) {
        mca_coll_loom_shm_enter(seg, seq, w);
        mca_coll_loom_shm_release(seg, seq);
    }
}

/* Every rank forms x0 o (x1 o (... o x(n-1))) from the sym slots of call seq, in that
 * one order whatever the op, so every rank has the same bits.  rc: this rank's own
 * contribution's outcome. */
static int sym_combine(const mca_coll_loom_shm_t *seg, uint32_t seq, int rc, void *rbuf, size_t count,
                       ompi_datatype_t *dtype, ompi_op_t *op, size_t bytes)
{
    loom_tmp_t t = {NULL, 0, NULL};

    if (OMPI_SUCCESS == rc) {
        rc = slots_status(seg, (loom_src_t){true, seq}, seg->me);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_loom_unpack(mca_coll_loom_shm_sym_slot(seg, seg->n - 1, seq), bytes, rbuf, count, dtype);
    }
    for (int i = seg->n - 2; OMPI_SUCCESS == rc && i >= 0; --i) {
        rc = reduce_from(mca_coll_loom_shm_sym_slot(seg, i, seq), rbuf, count, dtype, op, bytes, &t);
    }
    if (NULL != t.mem) {
        tmp_put(&t);
    }
    return rc;
}

static int sym_allreduce(mca_coll_loom_module_t *m, const void *sbuf, void *rbuf, size_t count,
                         ompi_datatype_t *dtype, ompi_op_t *op, size_t bytes)
{
    mca_coll_loom_shm_t *seg = &m->shm.seg;
    mca_coll_loom_shm_wait_t w, wl;
    uint32_t seq = mca_coll_loom_shm_next_call(m, &w, &wl);
    int rc = sym_gather(m, seq, MPI_IN_PLACE == sbuf ? rbuf : sbuf, count, dtype, bytes, &w);

    rc = sym_combine(seg, seq, rc, rbuf, count, dtype, op, bytes);
    mca_coll_loom_shm_sym_release(seg, seq, &w);
    return rc;
}

bool mca_coll_loom_shm_nb_usable(mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll, size_t bytes)
{
    const mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    return (MCA_COLL_LOOM_COLL_ALLREDUCE == coll || MCA_COLL_LOOM_COLL_BARRIER == coll) && cm->shm &&
           cm->shm_slot_size > 0 && m->have_topo && 1 == m->topo.nnodes && m->shm.state > 0 &&
           NULL != m->shm.seg.base && bytes <= (size_t) cm->shm_slot_size;
}

void mca_coll_loom_shm_nb_start(mca_coll_loom_module_t *m, mca_coll_loom_shm_nb_t *c, size_t bytes)
{
    if (0 == m->shm.nb_busy++) {
        m->shm.nb_head = m->shm.seq + 1u;
    }
    c->seq = ++m->shm.seq;
    c->posted = false;
    c->bytes = bytes;
    c->rc = OMPI_SUCCESS;
    mca_coll_loom_count(&mca_coll_loom_component.shm_node_phases);
}

/* The steps of mca_coll_loom_shm_allreduce on one node (a coordinated call: above
 * MCA_COLL_LOOM_SHM_SYM_BYTES), each taken once its condition holds. */
static bool nb_coordinated(mca_coll_loom_shm_t *seg, mca_coll_loom_shm_nb_t *c, const void *sbuf, void *rbuf,
                           size_t count, ompi_datatype_t *dtype, ompi_op_t *op)
{
    const bool in_place = MPI_IN_PLACE == sbuf;
    char *area = mca_coll_loom_shm_area(seg, c->seq);

    if (!c->posted) {
        if (!mca_coll_loom_shm_released(seg, c->seq - 1u)) {
            return false;
        }
        if (0 != seg->me) {
            char *slot = mca_coll_loom_shm_slot(seg, seg->me);
            c->rc = mca_coll_loom_pack(in_place ? rbuf : sbuf, count, dtype, slot, c->bytes);
            mca_coll_loom_shm_set_status(slot, c->rc);
        }
        mca_coll_loom_shm_arrive(seg, c->seq);
        c->posted = true;
    }
    if (0 != seg->me) {
        if (!mca_coll_loom_shm_released(seg, c->seq)) {
            return false;
        }
        if (OMPI_SUCCESS == c->rc) {
            c->rc = peer_status(area);
        }
        if (OMPI_SUCCESS == c->rc) {
            c->rc = mca_coll_loom_unpack(area, c->bytes, rbuf, count, dtype);
        }
        return true;
    }
    /* the coordinator: the release happens even after an error, which the area's status
     * then carries */
    if (!mca_coll_loom_shm_all_arrived(seg, c->seq)) {
        return false;
    }
    c->rc = slots_status(seg, (loom_src_t){false, c->seq}, 0);
    if (OMPI_SUCCESS == c->rc) {
        c->rc = combine(seg, (loom_src_t){false, c->seq}, 0, in_place ? rbuf : sbuf, rbuf, count, dtype, op,
                        c->bytes, ompi_op_is_commute(op));
    }
    if (OMPI_SUCCESS == c->rc) {
        c->rc = mca_coll_loom_pack(rbuf, count, dtype, area, c->bytes);
    }
    mca_coll_loom_shm_set_status(area, c->rc);
    mca_coll_loom_shm_release(seg, c->seq);
    return true;
}

/* The steps of sym_allreduce, each taken once its condition holds. */
static bool nb_symmetric(mca_coll_loom_shm_t *seg, mca_coll_loom_shm_nb_t *c, const void *sbuf, void *rbuf,
                         size_t count, ompi_datatype_t *dtype, ompi_op_t *op)
{
    if (!c->posted) {
        if (!mca_coll_loom_shm_small_free(seg, c->seq)) {
            return false;
        }
        if (c->bytes > 0) {
            char *slot = mca_coll_loom_shm_sym_slot(seg, seg->me, c->seq);
            c->rc = mca_coll_loom_pack(MPI_IN_PLACE == sbuf ? rbuf : sbuf, count, dtype, slot, c->bytes);
            mca_coll_loom_shm_set_status(slot, c->rc);
        }
        mca_coll_loom_shm_sym_arrive(seg, c->seq);
        c->posted = true;
    }
    if (!mca_coll_loom_shm_sym_all(seg, c->seq)) {
        return false;
    }
    /* index 0 releases the calls in order (sym_release) */
    if (0 == seg->me && !mca_coll_loom_shm_released(seg, c->seq - 1u)) {
        return false;
    }
    if (c->bytes > 0) {
        c->rc = sym_combine(seg, c->seq, c->rc, rbuf, count, dtype, op, c->bytes);
    }
    if (0 == seg->me) {
        mca_coll_loom_shm_release(seg, c->seq);
    }
    return true;
}

/* A call posts its contribution only after the call before it completed here, so its
 * flags and arrive word keep their meaning (done with every earlier call). */
bool mca_coll_loom_shm_nb_progress(mca_coll_loom_module_t *m, mca_coll_loom_shm_nb_t *c, const void *sbuf,
                                   void *rbuf, size_t count, ompi_datatype_t *dtype, ompi_op_t *op)
{
    mca_coll_loom_shm_t *seg = &m->shm.seg;

    if (c->seq != m->shm.nb_head) {
        return false;
    }
    if (!c->posted) {
        mca_coll_loom_shm_sym_refresh(seg, c->seq); /* as next_call */
    }
    if (!(symmetric(m, c->bytes) ? nb_symmetric(seg, c, sbuf, rbuf, count, dtype, op)
                                 : nb_coordinated(seg, c, sbuf, rbuf, count, dtype, op))) {
        return false;
    }
    ++m->shm.nb_head;
    --m->shm.nb_busy;
    return true;
}

int mca_coll_loom_shm_allreduce(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan, const void *sbuf,
                                void *rbuf, size_t count,
                                ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm,
                                unsigned call)
{
    mca_coll_loom_shm_t *seg = &m->shm.seg;
    const bool in_place = MPI_IN_PLACE == sbuf;
    mca_coll_loom_shm_wait_t w, wl;
    size_t tsize = 0, bytes;
    uint32_t seq;
    int rc = mca_coll_loom_shm_begin(m, comm);

    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (NULL == seg->base) {
        /* alone on the node: the leaders' phase is the whole call */
        return run_leaders(m, plan, comm, sbuf, rbuf, count, dtype, op, call, 0,
                           MCA_COLL_BASE_TAG_ALLREDUCE);
    }
    ompi_datatype_type_size(dtype, &tsize);
    bytes = count * tsize;
    if (symmetric(m, bytes)) {
        return sym_allreduce(m, sbuf, rbuf, count, dtype, op, bytes);
    }
    seq = mca_coll_loom_shm_next_call(m, &w, &wl);

    mca_coll_loom_shm_enter(seg, seq, &w);
    if (0 != seg->me) {
        char *slot = mca_coll_loom_shm_slot(seg, seg->me);
        rc = mca_coll_loom_pack(in_place ? rbuf : sbuf, count, dtype, slot, bytes);
        mca_coll_loom_shm_set_status(slot, rc);
        mca_coll_loom_shm_arrive(seg, seq);
        mca_coll_loom_shm_wait_release(seg, seq, &wl);
        if (OMPI_SUCCESS == rc) {
            rc = peer_status(mca_coll_loom_shm_area(seg, seq));
        }
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_loom_unpack(mca_coll_loom_shm_area(seg, seq), bytes, rbuf, count, dtype);
        }
        return rc;
    }

    /* the leader: its node's part, the leaders' phase, the result for the node.  The
     * release happens even after an error, which the area's status then carries, so
     * the node is never left waiting nor reading stale data. */
    mca_coll_loom_shm_arrive(seg, seq);
    mca_coll_loom_shm_wait_arrived(seg, seq, &w);
    rc = slots_status(seg, (loom_src_t){false, seq}, 0);
    if (OMPI_SUCCESS == rc) {
        rc = combine(seg, (loom_src_t){false, seq}, 0, in_place ? rbuf : sbuf, rbuf, count, dtype, op,
                     bytes, 0 != (call & MCA_COLL_LOOM_CALL_COMMUTATIVE));
    }
    if (OMPI_SUCCESS == rc) {
        rc = run_leaders(m, plan, comm, MPI_IN_PLACE, rbuf, count, dtype, op, call,
                         0, MCA_COLL_BASE_TAG_ALLREDUCE);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_loom_pack(rbuf, count, dtype, mca_coll_loom_shm_area(seg, seq), bytes);
    }
    mca_coll_loom_shm_set_status(mca_coll_loom_shm_area(seg, seq), rc);
    mca_coll_loom_shm_release(seg, seq);
    return rc;
}

int mca_coll_loom_shm_barrier(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan, ompi_communicator_t *comm)
{
    const unsigned call = MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT |
                          MCA_COLL_LOOM_CALL_IDEMPOTENT;
    mca_coll_loom_shm_t *seg = &m->shm.seg;
    mca_coll_loom_shm_wait_t w, wl;
    uint32_t seq;
    int rc = mca_coll_loom_shm_begin(m, comm);

    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (NULL == seg->base) {
        return run_leaders(m, plan, comm, NULL, NULL, 0, &ompi_mpi_byte.dt, NULL,
                           call, 0, MCA_COLL_BASE_TAG_BARRIER);
    }
    seq = mca_coll_loom_shm_next_call(m, &w, &wl);
    if (symmetric(m, 0)) {
        (void) sym_gather(m, seq, NULL, 0, &ompi_mpi_byte.dt, 0, &w);
        mca_coll_loom_shm_sym_release(seg, seq, &w);
        return OMPI_SUCCESS;
    }
    mca_coll_loom_shm_enter(seg, seq, &w);
    mca_coll_loom_shm_arrive(seg, seq);
    if (0 != seg->me) {
        mca_coll_loom_shm_wait_release(seg, seq, &wl);
        return peer_status(mca_coll_loom_shm_area(seg, seq));
    }
    mca_coll_loom_shm_wait_arrived(seg, seq, &w);
    rc = run_leaders(m, plan, comm, NULL, NULL, 0, &ompi_mpi_byte.dt, NULL, call, 0,
                     MCA_COLL_BASE_TAG_BARRIER);
    mca_coll_loom_shm_set_status(mca_coll_loom_shm_area(seg, seq), rc);
    mca_coll_loom_shm_release(seg, seq);
    return rc;
}

/* Index among its node's ranks of the rank that coordinates a rooted call on this
 * rank's node: the root on its own node, else the leader (index 0). */
static int coordinator(const mca_coll_loom_module_t *m, int rank, int root)
{
    int n, me;

    if (m->topo.node_of[root] != m->topo.node_of[rank]) {
        return 0;
    }
    mca_coll_loom_shm_node_position(m, root, &n, &me);
    return me;
}

int mca_coll_loom_shm_bcast(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan, void *buf, size_t count,
                            ompi_datatype_t *dtype,
                            int root, ompi_communicator_t *comm)
{
    mca_coll_loom_shm_t *seg = &m->shm.seg;
    const int rank = ompi_comm_rank(comm);
    mca_coll_loom_shm_wait_t w, wl;
    size_t tsize = 0, bytes;
    uint32_t seq;
    int rc = mca_coll_loom_shm_begin(m, comm), coord;
    char *area;
    bool small;

    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (NULL == seg->base) {
        return run_leaders(m, plan, comm, NULL, buf, count, dtype, NULL,
                           MCA_COLL_LOOM_CALL_NO_OP, root, MCA_COLL_BASE_TAG_BCAST);
    }
    ompi_datatype_type_size(dtype, &tsize);
    bytes = count * tsize;
    seq = mca_coll_loom_shm_next_call(m, &w, &wl);
    coord = coordinator(m, rank, root);
    /* small ones through the small areas: the root may run D - 1 calls ahead of its
     * readers instead of A - 1 (loom_shm.h) */
    small = bytes <= MCA_COLL_LOOM_SHM_SMALL_BYTES;
    area = small ? mca_coll_loom_shm_small_area(seg, seq) : mca_coll_loom_shm_area(seg, seq);

    if (coord != seg->me) {
        /* a reader writes nothing; a small bcast's does not wait for the previous call
         * (loom_shm.h), the large areas' readers keep the general entry step */
        if (!small) {
            mca_coll_loom_shm_enter(seg, seq, &w);
        }
        mca_coll_loom_shm_arrive(seg, seq);
        mca_coll_loom_shm_wait_release(seg, seq,
                                       m->topo.node_of[root] == m->topo.node_of[rank] ? &w : &wl);
        rc = peer_status(area);
        return OMPI_SUCCESS == rc ? mca_coll_loom_unpack(area, bytes, buf, count, dtype) : rc;
    }

    /* the coordinator: the root hands the data to its node first, a leader of another
     * node once it has it; area[seq % A] is free when everyone is done with seq - A,
     * small[seq % D] when everyone is done with seq - D (loom_shm.h) */
    mca_coll_loom_shm_enter(seg, seq, &w);
    mca_coll_loom_shm_arrive(seg, seq);
    if (rank != root) {
        rc = run_leaders(m, plan, comm, NULL, buf, count, dtype, NULL,
                         MCA_COLL_LOOM_CALL_NO_OP, root, MCA_COLL_BASE_TAG_BCAST);
    }
    if (small) {
        mca_coll_loom_shm_small_enter(seg, seq, &w);
    } else {
        mca_coll_loom_shm_wait_arrived(seg, seq - (MCA_COLL_LOOM_SHM_AREAS - 1u), &w);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_loom_pack(buf, count, dtype, area, bytes);
    }
    mca_coll_loom_shm_set_status(area, rc);
    mca_coll_loom_shm_release(seg, seq);
    if (rank == root && OMPI_SUCCESS == rc) {
        rc = run_leaders(m, plan, comm, NULL, buf, count, dtype, NULL,
                         MCA_COLL_LOOM_CALL_NO_OP, root, MCA_COLL_BASE_TAG_BCAST);
    }
    return rc;
}

/* Reduces go through the small slots in chunks of whole elements, each chunk one call
 * of the protocol (loom_shm.h): a contributor leaves as soon as its chunks are in, up to
 * MCA_COLL_LOOM_SHM_SYM_DEPTH - 1 chunks ahead of the coordinator.  Through its large
 * slot it would first wait for the coordinator's previous call, a lockstep that is
 * much slower (docs/dev/developing.md, "Performance notes").  Returns the elements per
 * chunk, or 0 (the large slots): an element larger than a small slot, or so many chunks
 * that one call would fill half the small slots and leave little room to run ahead. */
static size_t reduce_chunk(size_t count, size_t tsize)
{
    const size_t per = tsize > 0 ? MCA_COLL_LOOM_SHM_SMALL_BYTES / tsize : 0;

    return per > 0 && (count + per - 1) / per <= MCA_COLL_LOOM_SHM_SYM_DEPTH / 2 ? per : 0;
}

/* The node phase of a reduce: one protocol call per chunk of `per` elements through the
 * small slots (reduce_chunk), or, per = 0, one call through the large slots; the first
 * numbered seq.  A contributor writes its part of each call; the coordinator combines
 * each into part (dtype's layout) and releases it.  A failure still takes every step,
 * so the node stays in step, and travels in the slots' statuses. */
static int node_reduce(mca_coll_loom_module_t *m, uint32_t seq, mca_coll_loom_shm_wait_t *w, bool coord,
                       const void *own, void *part, size_t count, size_t per, size_t tsize,
                       ompi_datatype_t *dtype, ompi_op_t *op, int rc)
{
    mca_coll_loom_shm_t *seg = &m->shm.seg;
    const bool sym = 0 != per;
    const size_t step = sym ? per : count;
    ptrdiff_t lb, extent;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    for (size_t first = 0; first < count; first += step) {
        const size_t n = count - first < step ? count - first : step;
        const char *in = (const char *) own + (ptrdiff_t) first * extent;
        loom_src_t src;

        if (first > 0) {
            seq = mca_coll_loom_shm_next_call(m, w, NULL);
        }
        src = (loom_src_t){sym, seq};
        if (!coord) {
            int r;
            if (sym) {
                r = sym_contribute(seg, seq, in, n, dtype, n * tsize, w);
            } else {
                char *slot = mca_coll_loom_shm_slot(seg, seg->me);
                mca_coll_loom_shm_enter(seg, seq, w);
                r = mca_coll_loom_pack(in, n, dtype, slot, n * tsize);
                mca_coll_loom_shm_set_status(slot, r);
                mca_coll_loom_shm_arrive(seg, seq);
            }
            rc = OMPI_SUCCESS == rc ? r : rc;
            continue;
        }
        mca_coll_loom_shm_enter(seg, seq, w);
        mca_coll_loom_shm_arrive(seg, seq);
        if (sym) {
            mca_coll_loom_shm_sym_wait(seg, seq, seg->me, w);
        } else {
            mca_coll_loom_shm_wait_arrived(seg, seq, w);
        }
        if (OMPI_SUCCESS == rc) {
            rc = slots_status(seg, src, seg->me);
        }
        if (OMPI_SUCCESS == rc) {
            /* hierarchical serves reduce for commutative ops only */
            rc = combine(seg, src, seg->me, in, (char *) part + (ptrdiff_t) first * extent, n, dtype, op,
                         n * tsize, true);
        }
        mca_coll_loom_shm_release(seg, seq);
    }
    return rc;
}

int mca_coll_loom_shm_reduce(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan, const void *sbuf,
                             void *rbuf, size_t count,
                             ompi_datatype_t *dtype, ompi_op_t *op, int root, ompi_communicator_t *comm,
                             unsigned call)
{
    mca_coll_loom_shm_t *seg = &m->shm.seg;
    const int rank = ompi_comm_rank(comm);
    const bool is_root = rank == root, in_place = MPI_IN_PLACE == sbuf;
    mca_coll_loom_shm_wait_t w;
    loom_tmp_t acc = {NULL, 0, NULL};
    size_t tsize = 0, per;
    uint32_t seq;
    int rc = mca_coll_loom_shm_begin(m, comm);
    bool coord;
    char *part;

    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (NULL == seg->base) {
        return run_leaders(m, plan, comm, is_root || !in_place ? sbuf : NULL,
                           is_root ? rbuf : NULL, count, dtype, op, call, root, MCA_COLL_BASE_TAG_REDUCE);
    }
    ompi_datatype_type_size(dtype, &tsize);
    seq = mca_coll_loom_shm_next_call(m, &w, NULL);
    coord = coordinator(m, rank, root) == seg->me;
    /* MPI_Reduce's count and datatype are the same on every rank: so are the chunks */
    per = reduce_chunk(count, tsize);

    if (!coord) {
        /* a contribution, and nothing to wait for: MPI_Reduce's non-roots may leave */
        return node_reduce(m, seq, &w, false, sbuf, NULL, count, per, tsize, dtype, op, OMPI_SUCCESS);
    }

    /* the coordinator: the node's part in rbuf (the root) or a temporary, the slots
     * released as soon as they are read, then the leaders' reduce */
    if (is_root) {
        part = rbuf;
    } else {
        rc = tmp_get(&acc, count, dtype);
        part = acc.buf;
    }
    rc = node_reduce(m, seq, &w, true, is_root && in_place ? rbuf : sbuf, part, count, per, tsize, dtype, op,
                     rc);
    if (OMPI_SUCCESS == rc) {
        rc = run_leaders(m, plan, comm, is_root ? MPI_IN_PLACE : part,
                         is_root ? rbuf : NULL, count, dtype, op, call, root, MCA_COLL_BASE_TAG_REDUCE);
    }
    if (NULL != acc.mem) {
        tmp_put(&acc);
    }
    return rc;
}
