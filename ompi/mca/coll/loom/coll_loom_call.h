/*
 * coll/loom: one call, for every form (coll_loom_call.c).  What a collective does
 * besides its schedule (allgather's own block, reduce_scatter's copy-out, an in-place
 * alltoall's copy of its input, the packed form of a call run on bytes) is described
 * once by its entry file and run by the same two steps in the blocking, non-blocking
 * and persistent forms.
 */
#ifndef MCA_COLL_LOOM_CALL_H
#define MCA_COLL_LOOM_CALL_H

#include <string.h>

#include "coll_loom.h"
#include "coll_loom_exec.h"

/* A call as every form runs it: its buffers and what its collective does before and
 * after the schedule (the prologue and epilogue below).  An entry point describes it
 * once; a blocking call runs it (mca_coll_loom_exec_call), a request keeps it for every
 * start (coll_loom_nbc.c). */
typedef struct {
    mca_coll_loom_module_t *module;
    struct ompi_communicator_t *comm;
    int P, rank;
    const void *sbuf;          /* INPUT (MPI_IN_PLACE as given) */
    void *rbuf;                /* RESULT */
    size_t count;
    ompi_datatype_t *dtype;
    ompi_op_t *op;             /* NULL: no op */
    unsigned call;
    int transport;             /* the rules' transport for it (choice.transport) */
    int coll;                  /* its collective (mca_coll_loom_coll_t), named when it fails */
    bool shm;                  /* through the node segment (plan.shm): no schedule runs */
    bool ssp;                  /* a stale-synchronous allreduce (coll_loom_ssp.h): no schedule here */
    /* reduce_scatter(_block): P+1 prefix sums of the parts (owned by a request; a
     * blocking call's caller frees them);
     * RESULT is then a full-size scratch buffer whose part `rank` goes to `out` */
    size_t *displ;
    void *out;
    /* allgather: this rank's block, from (own_src, own_scount, own_sdtype) into own_dst
     * (own_rcount elements of udtype) at every start */
    const void *own_src;
    int own_scount;
    ompi_datatype_t *own_sdtype;
    void *own_dst;
    int own_rcount;
    /* bytes: the schedule runs on the bytes of (ubuf, ucount, udtype), packed first when
     * they are not contiguous (MPI lets ranks describe the same data with datatypes
     * of equal signatures, and a schedule that cuts by element would cut them at
     * different bytes): pack_count elements from pack_src to byte pack_from, unpacked
     * into ubuf at the end when unpack */
    /* alltoall(v): RESULT and INPUT laid out by parts (counts and displacements of
     * alltoallv copied into parts_mem when a request owns them); in_place: INPUT is a copy
     * of the first in_place_count elements of rbuf, taken at every start */
    bool has_parts;
    mca_coll_loom_parts_t parts;
    int *parts_mem;
    bool in_place;
    size_t in_place_count;
    bool bytes;
    void *ubuf;
    size_t ucount, utsize;
    ompi_datatype_t *udtype;
    const void *pack_src;
    size_t pack_count, pack_from;
    bool unpack;
} mca_coll_loom_call_t;

/* Fills c for a call of (sbuf, rbuf, count, dtype, op) with no steps of its own; plan:
 * the call's (its transport and collective), NULL for a call the planner did not see.
 * In line: every non-blocking call makes one. */
static inline void mca_coll_loom_call_init(mca_coll_loom_call_t *c, mca_coll_loom_module_t *m,
                                           struct ompi_communicator_t *comm, const mca_coll_loom_plan_t *plan,
                                           const void *sbuf, void *rbuf, size_t count, ompi_datatype_t *dtype,
                                           ompi_op_t *op, unsigned call)
{
    memset(c, 0, sizeof(*c));
    c->module = m;
    c->comm = comm;
    c->P = ompi_comm_size(comm);
    c->rank = ompi_comm_rank(comm);
    c->sbuf = sbuf;
    c->rbuf = rbuf;
    c->count = count;
    c->dtype = dtype;
    c->op = op;
    c->call = call;
    c->transport = NULL != plan ? plan->choice.transport : 0;
    c->coll = NULL != plan ? (int) plan->coll : -1;
}

/* What the steps before the schedule leave for one run of it, and hold until after. */
typedef struct {
    const void *sbuf;      /* the schedule's INPUT, RESULT, count and datatype */
    void *rbuf;
    size_t count;
    ompi_datatype_t *dtype;
    char *packed;          /* the packed form of a call on bytes */
    size_t packed_bytes;
    char *tmp;             /* reduce_scatter's full RESULT, an in-place alltoall's INPUT */
    size_t tmp_span;
    ptrdiff_t tmp_gap;
} mca_coll_loom_call_run_t;

/* The steps before the schedule: this rank's own block, the packed form, scratch
 * buffers.  Returns this rank's local error (then the schedule runs poisoned, without
 * data: the peers run theirs).  Every field of *run is set, also on error.  In line up
 * to the test whether the call has such steps: most calls have none. */
int mca_coll_loom_call_begin_steps(const mca_coll_loom_call_t *c, mca_coll_loom_call_run_t *run);
static inline int mca_coll_loom_call_begin(const mca_coll_loom_call_t *c, mca_coll_loom_call_run_t *run)
{
    run->sbuf = c->sbuf;
    run->rbuf = c->rbuf;
    run->count = c->count;
    run->dtype = c->dtype;
    run->packed = NULL;
    run->tmp = NULL;
    if (NULL == c->own_src && !c->bytes && NULL == c->displ && !c->in_place) {
        return OMPI_SUCCESS;
    }
    return mca_coll_loom_call_begin_steps(c, run);
}
/* The steps after it, when the schedule returned rc: the copy-out and the unpack when it
 * succeeded, and the release of what begin took in any case.  Returns rc or their error. */
int mca_coll_loom_call_end_steps(const mca_coll_loom_call_t *c, mca_coll_loom_call_run_t *run, int rc);
static inline int mca_coll_loom_call_end(const mca_coll_loom_call_t *c, mca_coll_loom_call_run_t *run, int rc)
{
    return NULL == run->packed && NULL == run->tmp ? rc : mca_coll_loom_call_end_steps(c, run, rc);
}
/* A blocking call: begin, the schedule of plan p on the engine with `tag`, end.
 * OMPI_ERR_NOT_AVAILABLE (nothing sent): the previous component is to serve it. */
int mca_coll_loom_exec_call(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *p, const mca_coll_loom_call_t *c,
                            int tag);

#endif /* MCA_COLL_LOOM_CALL_H */
