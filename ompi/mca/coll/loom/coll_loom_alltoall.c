/*
 * coll/loom: MPI_Alltoall and MPI_Alltoallv entry points, blocking, non-blocking and
 * persistent.  The schedule's INPUT is the send buffer and RESULT the receive buffer,
 * each with its own datatype and parts (mca_coll_loom_parts_t): blocks go straight
 * from and to the user's buffers, with the user's datatypes, whatever their layout.
 * MPI_IN_PLACE runs on a copy of the receive buffer as INPUT.
 *
 * Alltoallv's counts differ between ranks, so no rank knows the call's total size:
 * its rules see 0 bytes (every rank must choose the same algorithm).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/datatype/opal_datatype.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"

#include "coll_loom.h"
#include "coll_loom_exec.h"
#include "coll_loom_shm.h"
#include "coll_loom_call.h"
#include "coll_loom_nbc.h"

/* Elements of rbuf an in-place alltoallv spans: up to the end of its last part. */
static size_t v_span(int P, const int *counts, const int *displs)
{
    size_t end = 0;

    for (int j = 0; j < P; ++j) {
        if (counts[j] > 0 && (size_t) displs[j] + (size_t) counts[j] > end) {
            end = (size_t) displs[j] + (size_t) counts[j];
        }
    }
    return end;
}

/* The call, for every form: INPUT and RESULT laid out by their parts (counts NULL:
 * scount / rcount per part; else alltoallv's arrays, copied into c->parts_mem when
 * `copy`: a request outlives the call that made it), and for MPI_IN_PLACE, INPUT a copy
 * of what rbuf holds at the start.  OMPI_ERR_OUT_OF_RESOURCE: no memory for the copy. */
static int describe(mca_coll_loom_call_t *c, mca_coll_loom_module_t *m, ompi_communicator_t *comm,
                    const mca_coll_loom_plan_t *plan, const void *sbuf, int scount, const int *scounts,
                    const int *sdispls, ompi_datatype_t *sdtype, void *rbuf, int rcount, const int *rcounts,
                    const int *rdispls, ompi_datatype_t *rdtype, bool copy)
{
    const int P = ompi_comm_size(comm);
    const bool in_place = MPI_IN_PLACE == sbuf, v = NULL != rcounts;
    const size_t count = NULL == plan->sched || v ? 0 : (size_t) P * (size_t) rcount;

    mca_coll_loom_call_init(c, m, comm, plan, in_place ? NULL : sbuf, rbuf, count, rdtype, NULL,
                            MCA_COLL_LOOM_CALL_NO_OP);
    c->own_sdtype = in_place ? NULL : sdtype; /* kept alive with a request */
    if (NULL == plan->sched) {
        return OMPI_SUCCESS;
    }
    c->has_parts = true;
    c->parts.dtype[0] = rdtype;
    c->parts.dtype[1] = in_place ? rdtype : sdtype;
    if (v && copy) {
        c->parts_mem = malloc(4 * (size_t) P * sizeof(int));
        if (NULL == c->parts_mem) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        memcpy(c->parts_mem, rcounts, (size_t) P * sizeof(int));
        memcpy(c->parts_mem + P, rdispls, (size_t) P * sizeof(int));
        memcpy(c->parts_mem + 2 * P, in_place ? rcounts : scounts, (size_t) P * sizeof(int));
        memcpy(c->parts_mem + 3 * P, in_place ? rdispls : sdispls, (size_t) P * sizeof(int));
        rcounts = c->parts_mem;
        rdispls = c->parts_mem + P;
        scounts = c->parts_mem + 2 * P;
        sdispls = c->parts_mem + 3 * P;
    } else if (v && in_place) {
        scounts = rcounts;
        sdispls = rdispls;
    }
    if (v) {
        c->parts.counts[0] = rcounts;
        c->parts.displ[0] = rdispls;
        c->parts.counts[1] = scounts;
        c->parts.displ[1] = sdispls;
    } else {
        c->parts.each[0] = (size_t) rcount;
        c->parts.each[1] = in_place ? (size_t) rcount : (size_t) scount;
    }
    if (in_place) {
        c->in_place = true;
        c->in_place_count = v ? v_span(P, rcounts, rdispls) : count;
    }
    return OMPI_SUCCESS;
}

int mca_coll_loom_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int P = ompi_comm_size(comm);
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    mca_coll_loom_call_t c;
    size_t tsize = 0;
    int rc;

    /* the signatures are equal between every pair, so all ranks see one size */
    if (mca_coll_loom_empty((size_t) rcount, rdtype, &tsize)) {
        return OMPI_SUCCESS;
    }
    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_ALLTOALL, comm, (size_t) P * (size_t) rcount * tsize,
                           MCA_COLL_LOOM_CALL_NO_OP, 0, &plan);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR;
        }
        return m->previous_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                    m->previous_alltoall_module);
    }
    if (plan.shm) {
        rc = mca_coll_loom_shm_alltoall(m, sbuf, (size_t) scount, sdtype, rbuf, (size_t) rcount, rdtype, comm);
        if (OMPI_ERR_NOT_AVAILABLE != rc) {
            return rc;
        }
    }
    (void) describe(&c, m, comm, &plan, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, rdtype, false);
    rc = mca_coll_loom_exec_call(m, &plan, &c, MCA_COLL_BASE_TAG_ALLTOALL);
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->previous_alltoall_module);
    }
    return rc;
}

int mca_coll_loom_alltoallv(const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    mca_coll_loom_call_t c;
    int rc;

    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_ALLTOALLV, comm, 0, MCA_COLL_LOOM_CALL_NO_OP, 0, &plan);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR;
        }
        return m->previous_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                                     m->previous_alltoallv_module);
    }
    (void) describe(&c, m, comm, &plan, sbuf, 0, scounts, sdispls, sdtype, rbuf, 0, rcounts, rdispls, rdtype, false);
    rc = mca_coll_loom_exec_call(m, &plan, &c, MCA_COLL_BASE_TAG_ALLTOALLV);
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                                   m->previous_alltoallv_module);
    }
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* non-blocking and persistent forms                                                      */

/* Posts an alltoall (counts NULL: scount / rcount per part) or alltoallv.
 * OMPI_ERR_NOT_AVAILABLE: the previous component's form is to serve it. */
static int alltoall_post(mca_coll_loom_coll_t coll, const void *sbuf, int scount, const int *scounts,
                         const int *sdispls, ompi_datatype_t *sdtype, void *rbuf, int rcount, const int *rcounts,
                         const int *rdispls, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                         mca_coll_loom_module_t *m, bool persistent, ompi_request_t **request)
{
    const int P = ompi_comm_size(comm);
    const bool v = MCA_COLL_LOOM_COLL_ALLTOALLV == coll;
    const mca_coll_loom_sched_t *s = NULL;
    mca_coll_loom_plan_t plan;
    mca_coll_loom_call_t c;
    size_t tsize = 0;

    if (v || !mca_coll_loom_empty((size_t) rcount, rdtype, &tsize)) {
        s = mca_coll_loom_plan_nb(m, coll, comm, v ? 0 : (size_t) P * (size_t) rcount * tsize,
                                  MCA_COLL_LOOM_CALL_NO_OP, 0, &plan, persistent);
        if (NULL == s) {
            return OPAL_UNLIKELY(m->failed) ? OMPI_ERROR : OMPI_ERR_NOT_AVAILABLE;
        }
    } else {
        plan = mca_coll_loom_plan_of(NULL, coll); /* nothing to move */
    }
    if (OMPI_SUCCESS != describe(&c, m, comm, &plan, sbuf, scount, scounts, sdispls, sdtype, rbuf, rcount, rcounts,
                                 rdispls, rdtype, true)) {
        /* the other ranks run the schedule planned: this one must not fall back */
        mca_coll_loom_mark_failed(m, comm, plan.coll, OMPI_ERR_OUT_OF_RESOURCE);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    return mca_coll_loom_nb_post(s, &c, persistent, request);
}

int mca_coll_loom_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = alltoall_post(MCA_COLL_LOOM_COLL_ALLTOALL, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL,
                           rdtype, comm, m, false, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                   m->previous_ialltoall_module);
    }
    return rc;
}

int mca_coll_loom_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                             struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                             struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = alltoall_post(MCA_COLL_LOOM_COLL_ALLTOALLV, sbuf, 0, scounts, sdispls, sdtype, rbuf, 0, rcounts,
                           rdispls, rdtype, comm, m, false, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_ialltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, request,
                                    m->previous_ialltoallv_module);
    }
    return rc;
}

int mca_coll_loom_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = alltoall_post(MCA_COLL_LOOM_COLL_ALLTOALL, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL,
                           rdtype, comm, m, true, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_alltoall_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
                                       m->previous_alltoall_init_module);
    }
    return rc;
}

int mca_coll_loom_alltoallv_init(const void *sbuf, const int *scounts, const int *sdispls,
                                 struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                 const int *rdispls, struct ompi_datatype_t *rdtype,
                                 struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                 ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = alltoall_post(MCA_COLL_LOOM_COLL_ALLTOALLV, sbuf, 0, scounts, sdispls, sdtype, rbuf, 0, rcounts,
                           rdispls, rdtype, comm, m, true, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_alltoallv_init(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, info,
                                        request, m->previous_alltoallv_init_module);
    }
    return rc;
}
