/*
 * coll/loom: MPI_Allgather entry point.  The schedule runs on the receive buffer
 * alone (RESULT, P parts of rcount elements of rdtype); the rank's own part is put
 * in place first unless the call is MPI_IN_PLACE, where it is already there.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"

#include "coll_loom.h"
#include "coll_loom_call.h"
#include "coll_loom_nbc.h"

/* The call, for every form: this rank's block of the result from its send buffer (not
 * in place); by byte when the schedule cuts segments inside each rank's block, so that
 * ranks whose datatypes differ cut alike (the blocks themselves, one per rank, hold
 * rcount elements of the same signature everywhere). */
static void describe(mca_coll_loom_call_t *c, mca_coll_loom_module_t *m, ompi_communicator_t *comm,
                     const mca_coll_loom_plan_t *plan, const void *sbuf, int scount, ompi_datatype_t *sdtype,
                     void *rbuf, int rcount, ompi_datatype_t *rdtype, size_t tsize)
{
    const mca_coll_loom_sched_t *s = plan->sched;
    ptrdiff_t lb, extent;
    char *mine;

    mca_coll_loom_call_init(c, m, comm, plan, NULL, rbuf, (size_t) ompi_comm_size(comm) * (size_t) rcount, rdtype,
                            NULL, MCA_COLL_LOOM_CALL_NO_OP);
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    mine = (char *) rbuf + (ptrdiff_t) c->rank * rcount * extent;
    c->udtype = rdtype;
    if (NULL != s && MPI_IN_PLACE != sbuf) {
        c->own_src = sbuf;
        c->own_scount = scount;
        c->own_sdtype = sdtype;
        c->own_dst = mine;
        c->own_rcount = rcount;
    }
    if (NULL != s && s->nseg > 1) {
        c->bytes = true;
        c->ubuf = rbuf;
        c->ucount = c->count;
        c->utsize = tsize;
        c->pack_src = mine;
        c->pack_count = (size_t) rcount;
        c->pack_from = (size_t) c->rank * (size_t) rcount * tsize;
        c->unpack = true;
    }
}

int mca_coll_loom_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int P = ompi_comm_size(comm);
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    mca_coll_loom_call_t c;
    size_t tsize = 0;
    int rc;

    if (mca_coll_loom_empty((size_t) rcount, rdtype, &tsize)) {
        return OMPI_SUCCESS;
    }
    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_ALLGATHER, comm, (size_t) P * rcount * tsize,
                           MCA_COLL_LOOM_CALL_NO_OP, 0, &plan);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        return m->previous_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                     m->previous_allgather_module);
    }

    describe(&c, m, comm, &plan, sbuf, scount, sdtype, rbuf, rcount, rdtype, tsize);
    rc = mca_coll_loom_exec_call(m, &plan, &c, MCA_COLL_BASE_TAG_ALLGATHER);
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->previous_allgather_module);
    }
    return rc;
}

/* MPI_Iallgather and MPI_Allgather_init */
static int allgather_post(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_loom_module_t *m,
                          bool persistent, ompi_request_t **request)
{
    mca_coll_loom_plan_t plan;
    const int P = ompi_comm_size(comm);
    const mca_coll_loom_sched_t *s = NULL;
    mca_coll_loom_call_t c;
    size_t tsize = 0;

    if (!mca_coll_loom_empty((size_t) rcount, rdtype, &tsize)) {
        s = mca_coll_loom_plan_nb(m, MCA_COLL_LOOM_COLL_ALLGATHER, comm, (size_t) P * rcount * tsize,
                                  MCA_COLL_LOOM_CALL_NO_OP, 0, &plan, persistent);
        if (NULL == s) {
            return OPAL_UNLIKELY(m->failed) ? OMPI_ERROR : OMPI_ERR_NOT_AVAILABLE;
        }
    } else {
        plan = mca_coll_loom_plan_of(NULL, MCA_COLL_LOOM_COLL_ALLGATHER); /* nothing to move */
    }
    describe(&c, m, comm, &plan, sbuf, scount, sdtype, rbuf, rcount, rdtype, tsize);
    return mca_coll_loom_nb_post(s, &c, persistent, request);
}

int mca_coll_loom_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = allgather_post(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m, false, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                    m->previous_iallgather_module);
    }
    return rc;
}

int mca_coll_loom_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                 int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                 struct ompi_info_t *info, ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = allgather_post(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m, true, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_allgather_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
                                        m->previous_allgather_init_module);
    }
    return rc;
}
