/*
 * coll/loom: MPI_Allreduce entry point.
 */
#include "ompi_config.h"

#include <stdbool.h>

#include "mpi.h"
#include "opal/datatype/opal_datatype.h"
#include "opal/datatype/opal_datatype_internal.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/op/op.h"

#include "coll_loom.h"
#include "coll_loom_exec.h"
#include "coll_loom_shm.h"
#include "coll_loom_nbc.h"
#include "coll_loom_ssp.h"

int mca_coll_loom_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    size_t tsize = 0;
    unsigned call;

    if (OPAL_UNLIKELY(m->ssp_slack >= 0)) {
        int rc = mca_coll_loom_ssp_allreduce(m, sbuf, rbuf, count, dtype, op, comm);
        if (OMPI_ERR_NOT_AVAILABLE != rc) {
            return rc;
        }
    }
    if (mca_coll_loom_empty((size_t) count, dtype, &tsize)) {
        return OMPI_SUCCESS;
    }
    call = mca_coll_loom_module_call_flags(m, op, dtype);
    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_ALLREDUCE, comm, (size_t) count * tsize, call, 0,
                           &plan);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                     m->previous_allreduce_module);
    }

    if (plan.shm) {
        int rc = mca_coll_loom_shm_allreduce(m, &plan, sbuf, rbuf, (size_t) count, dtype, op, comm, call);
        if (OMPI_ERR_NOT_AVAILABLE != rc) {
            return mca_coll_loom_shm_outcome(m, comm, plan.coll, rc);
        }
    }
    {
        const int rc = mca_coll_loom_exec(m, &plan, sbuf, rbuf, (size_t) count, dtype, op, comm,
                                          MCA_COLL_BASE_TAG_ALLREDUCE, call, NULL);
        return OMPI_ERR_NOT_AVAILABLE != rc
                   ? rc
                   : m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
    }
}

/* MPI_Iallreduce and MPI_Allreduce_init: the same schedules on the engine. */
int mca_coll_loom_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = OMPI_ERR_NOT_AVAILABLE;

    if (OPAL_UNLIKELY(m->ssp_slack >= 0)) {
        rc = mca_coll_loom_ssp_iallreduce(m, sbuf, rbuf, count, dtype, op, comm, false, request);
    }
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = mca_coll_loom_nb_vector(m, MCA_COLL_LOOM_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, 0, comm, false,
                                     request);
    }

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request, m->previous_iallreduce_module);
    }
    return rc;
}

int mca_coll_loom_allreduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                 ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = OMPI_ERR_NOT_AVAILABLE;

    if (OPAL_UNLIKELY(m->ssp_slack >= 0)) {
        rc = mca_coll_loom_ssp_iallreduce(m, sbuf, rbuf, count, dtype, op, comm, true, request);
    }
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = mca_coll_loom_nb_vector(m, MCA_COLL_LOOM_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, 0, comm, true,
                                     request);
    }

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_allreduce_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                        m->previous_allreduce_init_module);
    }
    return rc;
}
