/*
 * coll/loom: MPI_Reduce entry point.  INPUT is the contribution (the root's receive
 * buffer for MPI_IN_PLACE), RESULT the root's receive buffer.  The receive buffer is
 * not significant elsewhere, so non-roots pass none: loom's reduce schedules keep
 * their partial results in scratch slots there.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/op/op.h"

#include "coll_loom.h"
#include "coll_loom_exec.h"
#include "coll_loom_shm.h"
#include "coll_loom_nbc.h"

int mca_coll_loom_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const bool is_root = (ompi_comm_rank(comm) == root);
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    size_t tsize = 0;
    unsigned call;
    int rc;

    count = mca_coll_loom_threshold_apply(m, MCA_COLL_LOOM_THRESHOLD_REDUCE, count);
    rc = mca_coll_loom_reduce_engaged(m, sbuf, rbuf, count, dtype, op, root, comm, false, NULL);
    if (OMPI_ERR_NOT_AVAILABLE != rc) {
        return rc;
    }
    if (mca_coll_loom_empty((size_t) count, dtype, &tsize)) {
        return OMPI_SUCCESS;
    }
    call = mca_coll_loom_module_call_flags(m, op, dtype);
    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_REDUCE, comm, (size_t) count * tsize, call, root,
                           &plan);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        return m->previous_reduce(sbuf, rbuf, count, dtype, op, root, comm,
                                  m->previous_reduce_module);
    }
    if (plan.shm) {
        rc = mca_coll_loom_shm_reduce(m, &plan, sbuf, rbuf, (size_t) count, dtype, op, root, comm, call);
        if (OMPI_ERR_NOT_AVAILABLE != rc) {
            return mca_coll_loom_shm_outcome(m, comm, plan.coll, rc);
        }
    }
    {
        const int rc = mca_coll_loom_exec(m, &plan, is_root || MPI_IN_PLACE != sbuf ? sbuf : NULL,
                                          is_root ? rbuf : NULL, (size_t) count, dtype, op, comm,
                                          MCA_COLL_BASE_TAG_REDUCE, call, NULL);
        return OMPI_ERR_NOT_AVAILABLE != rc ? rc
                                            : m->previous_reduce(sbuf, rbuf, count, dtype, op, root, comm,
                                                                 m->previous_reduce_module);
    }
}

/* MPI_Ireduce and MPI_Reduce_init */
int mca_coll_loom_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc;

    count = mca_coll_loom_threshold_apply(m, MCA_COLL_LOOM_THRESHOLD_REDUCE, count);
    rc = mca_coll_loom_reduce_engaged(m, sbuf, rbuf, count, dtype, op, root, comm, false, request);
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = mca_coll_loom_nb_vector(m, MCA_COLL_LOOM_COLL_REDUCE, sbuf, rbuf, count, dtype, op, root, comm, false,
                                     request);
    }

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_ireduce(sbuf, rbuf, count, dtype, op, root, comm, request, m->previous_ireduce_module);
    }
    return rc;
}

int mca_coll_loom_reduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                              struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc;

    count = mca_coll_loom_threshold_apply(m, MCA_COLL_LOOM_THRESHOLD_REDUCE, count);
    rc = mca_coll_loom_reduce_engaged(m, sbuf, rbuf, count, dtype, op, root, comm, true, request);
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = mca_coll_loom_nb_vector(m, MCA_COLL_LOOM_COLL_REDUCE, sbuf, rbuf, count, dtype, op, root, comm, true,
                                     request);
    }

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_reduce_init(sbuf, rbuf, count, dtype, op, root, comm, info, request,
                                     m->previous_reduce_init_module);
    }
    return rc;
}
