/*
 * coll/loom: the engine (coll_loom_exec.c).  A task runs one call of a schedule: its
 * dependency graph, each op as its predecessors complete, transfers through the plan's
 * transport (coll_loom_tl.h).  A blocking call runs a task on its stack
 * (mca_coll_loom_exec), a request holds one (coll_loom_nbc.c).
 */
#ifndef MCA_COLL_LOOM_EXEC_H
#define MCA_COLL_LOOM_EXEC_H

#include "coll_loom.h"

/* Ops whose per-op state a blocking call keeps inside its task (on the stack). */
#define MCA_COLL_LOOM_TASK_INLINE_OPS 48
/* Bytes of a task's state per op: request pointer, releases missing, queue and
 * in-flight entries (mca_coll_loom_task_init lays them out). */
#define MCA_COLL_LOOM_TASK_STATE_PER_OP (3 * sizeof(int32_t) + sizeof(void *))

/* Alltoall(v): RESULT (index 0) and INPUT (1) each with their own datatype and parts
 * (loom_registry.h); scratch slots are laid out like RESULT.  Part b of slot k is
 * elements displ[k][b] .. + counts[k][b] of dtype[k], or, with displ[k] NULL,
 * b * each[k] .. + each[k]. */
typedef struct {
    ompi_datatype_t *dtype[2];
    size_t each[2];
    const int *displ[2], *counts[2];
} mca_coll_loom_parts_t;

/* One call of a schedule in progress: the schedule's dependency graph, run as its
 * predecessors complete (loom_sched.h). */
typedef struct mca_coll_loom_task_t {
    const mca_coll_loom_sched_t *s;
    char *slot[MCA_COLL_LOOM_MAX_SLOTS];
    const mca_coll_loom_parts_t *parts; /* NULL: every slot is `count` of dtype in `layout` */
    ptrdiff_t parts_extent[2];
    mca_coll_loom_layout_t layout;
    size_t count;
    ptrdiff_t extent;
    ompi_datatype_t *dtype;
    ompi_op_t *op;
    ompi_communicator_t *comm;
    const mca_coll_loom_tl_t *tl; /* the transport of its transfers (mca_coll_loom_call_tl) */
    void *tl_state;        /* the transport's state for the communicator */
    bool direct;           /* transfers may be direct writes (tl->direct_begin) */
    int tag;
    bool swap_ok;          /* REDUCE_R may swap its operands */
    int rc;                /* first error that stops the task (a transfer failed) */
    /* first local failure, or a peer's that reached this rank: the task goes on without
     * data (empty messages tell the peers) so that every message is matched and the
     * communicator stays usable; the call returns it (coll_loom_exec.c, "poison") */
    int poison;
    int poison_peer;       /* the peer whose empty message brought it, -1: this rank's own */
    int ndone;             /* ops done */
    /* per op: its request while in flight, releases still missing; the queue of
     * ready ops (each enters once); the transfers in flight */
    void **req;
    int32_t *remaining;
    int32_t *queue;
    int qhead, qtail;
    int32_t *inflight;
    int ninflight;
    char *scratch;
    size_t scratch_bytes;
    bool scratch_owned;    /* taken from the pool (given back at fini) */
    uint64_t inline_state[(MCA_COLL_LOOM_TASK_INLINE_OPS * MCA_COLL_LOOM_TASK_STATE_PER_OP + 7) / 8];
} mca_coll_loom_task_t;

/* Whether s can run a call of this layout (count elements, reduce_scatter's part_displ,
 * alltoall(v)'s parts, P ranks): OMPI_SUCCESS, or OMPI_ERR_NOT_SUPPORTED.  Depends only
 * on what every rank of the call knows alike, so a call it refuses goes to the previous
 * component on every rank. */
int mca_coll_loom_task_fits(const mca_coll_loom_sched_t *s, size_t count, const size_t *part_displ,
                            const mca_coll_loom_parts_t *parts, int P);
/* Sets up a task for (s, buffers), a layout mca_coll_loom_task_fits accepted: slots,
 * scratch (the module's kept buffer when m is given, else the task's own), per-op state
 * in state_mem (NULL: inline, for schedules of up to MCA_COLL_LOOM_TASK_INLINE_OPS ops).
 * poison: this rank already failed (the task runs without data, no scratch); a scratch
 * buffer that cannot be had poisons it too.  Cannot fail. */
void mca_coll_loom_task_init(mca_coll_loom_task_t *t, mca_coll_loom_module_t *m, const mca_coll_loom_sched_t *s,
                             const void *sbuf, void *rbuf, size_t count, ompi_datatype_t *dtype, ompi_op_t *op,
                             ompi_communicator_t *comm, int tag, unsigned call, const size_t *part_displ,
                             int poison, char *state_mem);
/* Gives RESULT and INPUT their own datatypes and parts (alltoall(v)), after init and
 * before start; parts must outlive the task (mca_coll_loom_task_fits checked them). */
void mca_coll_loom_task_set_parts(mca_coll_loom_task_t *t, const mca_coll_loom_parts_t *parts);
/* Posts and runs whatever the graph allows at once. */
void mca_coll_loom_task_start(mca_coll_loom_task_t *t);
/* Moves the task on without blocking; true once it is finished (t->rc: how). */
bool mca_coll_loom_task_progress(mca_coll_loom_task_t *t);
/* A finished task's error left messages unmatched (a transfer failed, or a local
 * failure where the task cannot go on poisoned): the peers may still wait in the call. */
static inline bool mca_coll_loom_task_aborted(const mca_coll_loom_task_t *t)
{
    return OMPI_SUCCESS != t->rc && t->ndone < t->s->nops;
}
/* Releases what the task holds; after an error, first cancels and waits for every
 * transfer still in flight. */
void mca_coll_loom_task_fini(mca_coll_loom_task_t *t);

/* sbuf: INPUT (MPI_IN_PLACE: rbuf), rbuf: RESULT; either may be NULL when the schedule
 * never touches that slot.  part_displ: NULL, or P+1 prefix sums of uneven parts
 * (reduce_scatter's recvcounts), see mca_coll_loom_layout_t. */
int mca_coll_loom_exec(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *p, const void *sbuf,
                       void *rbuf, size_t count, ompi_datatype_t *dtype, ompi_op_t *op,
                       ompi_communicator_t *comm, int tag, unsigned call, const size_t *part_displ);

/* mca_coll_loom_exec and mca_coll_loom_exec_call (a call with steps before and after its
 * schedule, coll_loom_call.h) return OMPI_ERR_NOT_AVAILABLE, having sent nothing, when
 * the schedule cannot run the call's layout (mca_coll_loom_task_fits): the caller hands
 * the call to the previous component. */

#endif /* MCA_COLL_LOOM_EXEC_H */
