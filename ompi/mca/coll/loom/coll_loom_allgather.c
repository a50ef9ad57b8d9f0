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
#include "coll_loom_nbc.h"

int mca_coll_loom_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int P = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    size_t tsize = 0;
    ptrdiff_t lb, extent;
    char *mine;
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

    /* this rank's block of the result */
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    mine = (char *) rbuf + (ptrdiff_t) rank * rcount * extent;
    if (MPI_IN_PLACE != sbuf) {
        rc = ompi_datatype_sndrcv(sbuf, scount, sdtype, mine, rcount, rdtype);
        if (OMPI_SUCCESS != rc) {
            /* the peers run the schedule: this rank takes its steps without data */
            const bool bytes = s->nseg > 1; /* laid out as below */
            return mca_coll_loom_exec_poisoned(m, &plan, (size_t) P * (size_t) rcount * (bytes ? tsize : 1),
                                               bytes ? &ompi_mpi_byte.dt : rdtype, comm,
                                               MCA_COLL_BASE_TAG_ALLGATHER, MCA_COLL_LOOM_CALL_NO_OP, NULL, NULL, rc);
        }
    }
    if (s->nseg > 1) {
        /* segments inside each rank's block: cut by byte, so that ranks whose datatypes
         * differ cut alike (the blocks themselves, one per rank, hold rcount elements of
         * the same signature everywhere) */
        rc = mca_coll_loom_exec_bytes(m, &plan, rbuf, (size_t) P * (size_t) rcount, rdtype, mine, (size_t) rcount,
                                      (size_t) rank * (size_t) rcount * tsize, true, comm,
                                      MCA_COLL_BASE_TAG_ALLGATHER);
    } else {
        rc = mca_coll_loom_exec(m, &plan, NULL, rbuf, (size_t) P * (size_t) rcount, rdtype, NULL, comm,
                                MCA_COLL_BASE_TAG_ALLGATHER, MCA_COLL_LOOM_CALL_NO_OP, NULL);
    }
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
    mca_coll_loom_plan_t plan = mca_coll_loom_plan_of(NULL, MCA_COLL_LOOM_COLL_ALLGATHER);
    const int P = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    const mca_coll_loom_sched_t *s = NULL;
    mca_coll_loom_nb_call_t c;
    size_t tsize = 0;
    ptrdiff_t lb, extent;

    if (!mca_coll_loom_empty((size_t) rcount, rdtype, &tsize)) {
        s = mca_coll_loom_plan_nb(m, MCA_COLL_LOOM_COLL_ALLGATHER, comm, (size_t) P * rcount * tsize,
                                  MCA_COLL_LOOM_CALL_NO_OP, 0, &plan, persistent);
        if (NULL == s) {
            return OPAL_UNLIKELY(m->failed) ? OMPI_ERROR : OMPI_ERR_NOT_AVAILABLE;
        }
    }
    mca_coll_loom_nb_call_init(&c, m, comm, &plan, NULL, rbuf, (size_t) P * (size_t) rcount, rdtype, NULL,
                               MCA_COLL_LOOM_CALL_NO_OP);
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    c.udtype = rdtype;
    if (NULL != s && MPI_IN_PLACE != sbuf) {
        c.own_src = sbuf;
        c.own_scount = scount;
        c.own_sdtype = sdtype;
        c.own_dst = (char *) rbuf + (ptrdiff_t) rank * rcount * extent;
        c.own_rcount = rcount;
    }
    if (NULL != s && s->nseg > 1) {
        /* segments inside each rank's block: cut by byte, as the blocking allgather does */
        c.bytes = true;
        c.ubuf = rbuf;
        c.ucount = (size_t) P * (size_t) rcount;
        c.utsize = tsize;
        c.pack_src = (char *) rbuf + (ptrdiff_t) rank * rcount * extent;
        c.pack_count = (size_t) rcount;
        c.pack_from = (size_t) rank * (size_t) rcount * tsize;
        c.unpack = true;
    }
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
