/*
 * coll/loom: MPI_Reduce_scatter and MPI_Reduce_scatter_block entry points.  INPUT is
 * the whole contribution (the receive buffer for MPI_IN_PLACE), the schedule leaves
 * rank r's part combined in part r of a full-size RESULT buffer, and that part is
 * copied out to the receive buffer.  The parts are the recvcounts, so the executor
 * gets their prefix sums as the block layout.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "mpi.h"
#include "opal/datatype/opal_datatype.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/op/op.h"

#include "coll_loom.h"
#include "coll_loom_call.h"
#include "coll_loom_nbc.h"

/* Runs the planned schedule for displ[P] elements laid out by displ (P+1 prefix sums,
 * the caller's) into a full-size RESULT whose part `rank` goes to rbuf. */
static int run(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan, const void *sbuf, void *rbuf,
               size_t *displ, ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm, int tag,
               unsigned call)
{
    mca_coll_loom_call_t c;

    mca_coll_loom_call_init(&c, m, comm, plan, sbuf, NULL, displ[ompi_comm_size(comm)], dtype, op, call);
    c.displ = displ;
    c.out = rbuf;
    return mca_coll_loom_exec_call(m, plan, &c, tag);
}

int mca_coll_loom_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int P = ompi_comm_size(comm);
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    size_t tsize = 0, *displ;
    unsigned call;
    int rc;

    displ = malloc((size_t) (P + 1) * sizeof(*displ));
    if (NULL == displ) {
        /* the peers may run a schedule */
        mca_coll_loom_mark_failed(m, comm, MCA_COLL_LOOM_COLL_REDUCE_SCATTER, OMPI_ERR_OUT_OF_RESOURCE);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    displ[0] = 0;
    for (int i = 0; i < P; ++i) {
        displ[i + 1] = displ[i] + (size_t) rcounts[i];
    }
    if (mca_coll_loom_empty(displ[P], dtype, &tsize)) {
        free(displ);
        return OMPI_SUCCESS;
    }
    call = mca_coll_loom_module_call_flags(m, op, dtype);
    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_REDUCE_SCATTER, comm, displ[P] * tsize, call, 0,
                           &plan);
    if (NULL == s) {
        free(displ);
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        return m->previous_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                          m->previous_reduce_scatter_module);
    }
    rc = run(m, &plan, sbuf, rbuf, displ, dtype, op, comm, MCA_COLL_BASE_TAG_REDUCE_SCATTER, call);
    free(displ);
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, m->previous_reduce_scatter_module);
    }
    return rc;
}

int mca_coll_loom_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int P = ompi_comm_size(comm);
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    size_t tsize = 0, *displ;
    unsigned call;
    int rc;

    if (mca_coll_loom_empty((size_t) rcount, dtype, &tsize)) {
        return OMPI_SUCCESS;
    }
    call = mca_coll_loom_module_call_flags(m, op, dtype);
    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, comm,
                           (size_t) P * (size_t) rcount * tsize, call, 0, &plan);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        return m->previous_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                                m->previous_reduce_scatter_block_module);
    }
    displ = malloc((size_t) (P + 1) * sizeof(*displ));
    if (NULL == displ) {
        mca_coll_loom_mark_failed(m, comm, plan.coll, OMPI_ERR_OUT_OF_RESOURCE); /* the peers run the schedule */
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i <= P; ++i) {
        displ[i] = (size_t) i * (size_t) rcount;
    }
    rc = run(m, &plan, sbuf, rbuf, displ, dtype, op, comm, MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK, call);
    free(displ);
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                              m->previous_reduce_scatter_block_module);
    }
    return rc;
}

/* MPI_Ireduce_scatter(_block) and their _init forms.  displ (P+1 prefix sums) passes to
 * the request. */
static int rs_post(mca_coll_loom_coll_t coll, const void *sbuf, void *rbuf, size_t *displ,
                   ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm, mca_coll_loom_module_t *m,
                   bool persistent, ompi_request_t **request)
{
    mca_coll_loom_plan_t plan;
    const int P = ompi_comm_size(comm);
    const mca_coll_loom_sched_t *s = NULL;
    mca_coll_loom_call_t c;
    size_t tsize = 0;
    unsigned call = 0;

    if (NULL == displ) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (!mca_coll_loom_empty(displ[P], dtype, &tsize)) {
        call = mca_coll_loom_module_call_flags(m, op, dtype);
        s = mca_coll_loom_plan_nb(m, coll, comm, displ[P] * tsize, call, 0, &plan, persistent);
        if (NULL == s) {
            free(displ);
            return OPAL_UNLIKELY(m->failed) ? OMPI_ERROR : OMPI_ERR_NOT_AVAILABLE;
        }
    } else {
        plan = mca_coll_loom_plan_of(NULL, coll); /* nothing to move */
    }
    mca_coll_loom_call_init(&c, m, comm, &plan, sbuf, NULL, displ[P], dtype, op, call);
    if (NULL != s) {
        c.displ = displ;
        c.out = rbuf;
    } else {
        free(displ);
    }
    return mca_coll_loom_nb_post(s, &c, persistent, request);
}

static size_t *displ_of_counts(const int *rcounts, int P)
{
    size_t *displ = malloc((size_t) (P + 1) * sizeof(*displ));
    if (NULL != displ) {
        displ[0] = 0;
        for (int i = 0; i < P; ++i) {
            displ[i + 1] = displ[i] + (size_t) rcounts[i];
        }
    }
    return displ;
}

static size_t *displ_of_block(int rcount, int P)
{
    size_t *displ = malloc((size_t) (P + 1) * sizeof(*displ));
    for (int i = 0; NULL != displ && i <= P; ++i) {
        displ[i] = (size_t) i * (size_t) rcount;
    }
    return displ;
}

int mca_coll_loom_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = rs_post(MCA_COLL_LOOM_COLL_REDUCE_SCATTER, sbuf, rbuf, displ_of_counts(rcounts, ompi_comm_size(comm)),
                     dtype, op, comm, m, false, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request,
                                         m->previous_ireduce_scatter_module);
    }
    return rc;
}

int mca_coll_loom_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = rs_post(MCA_COLL_LOOM_COLL_REDUCE_SCATTER, sbuf, rbuf, displ_of_counts(rcounts, ompi_comm_size(comm)),
                     dtype, op, comm, m, true, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_reduce_scatter_init(sbuf, rbuf, rcounts, dtype, op, comm, info, request,
                                             m->previous_reduce_scatter_init_module);
    }
    return rc;
}

int mca_coll_loom_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = rs_post(MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, displ_of_block(rcount, ompi_comm_size(comm)),
                     dtype, op, comm, m, false, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                               m->previous_ireduce_scatter_block_module);
    }
    return rc;
}

int mca_coll_loom_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                            struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = rs_post(MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, displ_of_block(rcount, ompi_comm_size(comm)),
                     dtype, op, comm, m, true, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_reduce_scatter_block_init(sbuf, rbuf, rcount, dtype, op, comm, info, request,
                                                   m->previous_reduce_scatter_block_init_module);
    }
    return rc;
}
