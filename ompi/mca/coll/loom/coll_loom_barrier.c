/*
 * coll/loom: MPI_Barrier entry point.  A barrier is an allreduce of nothing: the same
 * schedules run with zero-byte messages, so every rank leaves only after every rank
 * has entered.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"

#include "coll_loom.h"
#include "coll_loom_exec.h"
#include "coll_loom_shm.h"
#include "coll_loom_nbc.h"

int mca_coll_loom_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    /* no data: any grouping and any duplicate is harmless */
    const unsigned call = MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT |
                          MCA_COLL_LOOM_CALL_IDEMPOTENT;
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;

    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_BARRIER, comm, 0, call, 0, &plan);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        return m->previous_barrier(comm, m->previous_barrier_module);
    }

    if (plan.shm) {
        int rc = mca_coll_loom_shm_barrier(m, &plan, comm);
        if (OMPI_ERR_NOT_AVAILABLE != rc) {
            return mca_coll_loom_shm_outcome(m, comm, plan.coll, rc);
        }
    }
    /* count 0: no buffers are touched and no op is applied */
    {
        const int rc = mca_coll_loom_exec(m, &plan, NULL, NULL, 0, &ompi_mpi_byte.dt, NULL, comm,
                                          MCA_COLL_BASE_TAG_BARRIER, call, NULL);
        return OMPI_ERR_NOT_AVAILABLE != rc ? rc : m->previous_barrier(comm, m->previous_barrier_module);
    }
}

/* MPI_Ibarrier and MPI_Barrier_init */
static int barrier_post(ompi_communicator_t *comm, mca_coll_loom_module_t *m, bool persistent,
                        ompi_request_t **request)
{
    const unsigned call = MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT |
                          MCA_COLL_LOOM_CALL_IDEMPOTENT;
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    mca_coll_loom_call_t c;

    s = mca_coll_loom_plan_nb(m, MCA_COLL_LOOM_COLL_BARRIER, comm, 0, call, 0, &plan, persistent);
    if (NULL == s) {
        return OPAL_UNLIKELY(m->failed) ? OMPI_ERROR : OMPI_ERR_NOT_AVAILABLE;
    }
    mca_coll_loom_call_init(&c, m, comm, &plan, NULL, NULL, 0, &ompi_mpi_byte.dt, NULL, call);
    c.shm = plan.shm;
    return mca_coll_loom_nb_post(s, &c, persistent, request);
}

int mca_coll_loom_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = barrier_post(comm, m, false, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
    }
    return rc;
}

int mca_coll_loom_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = barrier_post(comm, m, true, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_barrier_init(comm, info, request, m->previous_barrier_init_module);
    }
    return rc;
}
