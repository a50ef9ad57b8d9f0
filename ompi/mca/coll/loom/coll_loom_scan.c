/*
 * coll/loom: MPI_Scan and MPI_Exscan entry points.  INPUT is the contribution (the
 * receive buffer for MPI_IN_PLACE), RESULT the receive buffer; exscan leaves rank 0's
 * receive buffer as it is (MPI leaves it undefined).
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
#include "coll_loom_nbc.h"

/* One scan or exscan: loom's schedule, or the previous component's function (scan
 * and exscan have the same signature). */
static int prefix(mca_coll_loom_coll_t coll, const void *sbuf, void *rbuf, int count,
                  struct ompi_datatype_t *dtype, struct ompi_op_t *op, struct ompi_communicator_t *comm,
                  mca_coll_loom_module_t *m, int tag, mca_coll_base_module_scan_fn_t previous,
                  mca_coll_base_module_t *previous_module)
{
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    size_t tsize = 0;
    unsigned call;

    if (mca_coll_loom_empty((size_t) count, dtype, &tsize)) {
        return OMPI_SUCCESS;
    }
    call = mca_coll_loom_module_call_flags(m, op, dtype);
    s = mca_coll_loom_plan(m, coll, comm, (size_t) count * tsize, call, 0, &plan);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        return previous(sbuf, rbuf, count, dtype, op, comm, previous_module);
    }
    {
        const int rc = mca_coll_loom_exec(m, &plan, sbuf, rbuf, (size_t) count, dtype, op, comm, tag, call, NULL);
        return OMPI_ERR_NOT_AVAILABLE != rc ? rc : previous(sbuf, rbuf, count, dtype, op, comm, previous_module);
    }
}

int mca_coll_loom_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    return prefix(MCA_COLL_LOOM_COLL_SCAN, sbuf, rbuf, count, dtype, op, comm, m, MCA_COLL_BASE_TAG_SCAN,
                  m->previous_scan, m->previous_scan_module);
}

int mca_coll_loom_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    return prefix(MCA_COLL_LOOM_COLL_EXSCAN, sbuf, rbuf, count, dtype, op, comm, m, MCA_COLL_BASE_TAG_EXSCAN,
                  m->previous_exscan, m->previous_exscan_module);
}

/* MPI_Iscan, MPI_Iexscan and their _init forms */
int mca_coll_loom_iscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = mca_coll_loom_nb_vector(m, MCA_COLL_LOOM_COLL_SCAN, sbuf, rbuf, count, dtype, op, 0, comm, false,
                                     request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_iscan(sbuf, rbuf, count, dtype, op, comm, request, m->previous_iscan_module);
    }
    return rc;
}

int mca_coll_loom_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = mca_coll_loom_nb_vector(m, MCA_COLL_LOOM_COLL_EXSCAN, sbuf, rbuf, count, dtype, op, 0, comm, false,
                                     request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_iexscan(sbuf, rbuf, count, dtype, op, comm, request, m->previous_iexscan_module);
    }
    return rc;
}

int mca_coll_loom_scan_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = mca_coll_loom_nb_vector(m, MCA_COLL_LOOM_COLL_SCAN, sbuf, rbuf, count, dtype, op, 0, comm, true,
                                     request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_scan_init(sbuf, rbuf, count, dtype, op, comm, info, request, m->previous_scan_init_module);
    }
    return rc;
}

int mca_coll_loom_exscan_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = mca_coll_loom_nb_vector(m, MCA_COLL_LOOM_COLL_EXSCAN, sbuf, rbuf, count, dtype, op, 0, comm, true,
                                     request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_exscan_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                     m->previous_exscan_init_module);
    }
    return rc;
}
