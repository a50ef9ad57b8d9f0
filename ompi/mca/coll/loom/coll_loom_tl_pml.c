/*
 * coll/loom: the PML transport (coll_loom_tl.h), Open MPI's point-to-point layer on
 * the communicator itself: loom's tags are negative (coll_tags.h), so its messages
 * never match the application's.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"

#include "coll_loom_tl.h"

static int pml_post(void *state, struct ompi_communicator_t *comm, bool send, bool direct, char *buf,
                    size_t n, struct ompi_datatype_t *dt, int peer, int tag, void **req)
{
    ompi_request_t **r = (ompi_request_t **) req;
    int rc;

    (void) state;
    (void) direct;
    if (send) {
        rc = MCA_PML_CALL(isend(buf, n, dt, peer, tag, MCA_PML_BASE_SEND_STANDARD, comm, r));
    } else {
        rc = MCA_PML_CALL(irecv(buf, n, dt, peer, tag, comm, r));
    }
    return rc;
}

static bool pml_test(void *req)
{
    return REQUEST_COMPLETE((ompi_request_t *) req);
}

static int pml_finish(void *req, size_t *received)
{
    ompi_request_t *r = req;
    const int err = r->req_status.MPI_ERROR;

    if (NULL != received) {
        *received = r->req_status._ucount;
    }
    (void) ompi_request_free(&r);
    return err;
}

static void pml_cancel(void *req)
{
    ompi_request_t *r = req;

    if (NULL == r || MPI_REQUEST_NULL == r) {
        return;
    }
    if (!REQUEST_COMPLETE(r)) {
        (void) ompi_request_cancel(r);
    }
    (void) ompi_request_wait(&r, MPI_STATUS_IGNORE);
    if (MPI_REQUEST_NULL != r) {
        (void) ompi_request_free(&r); /* completed in error: wait leaves it allocated */
    }
}

const mca_coll_loom_tl_t mca_coll_loom_tl_pml = {
    .name = "pml",
    .reports_length = true,
    .post = pml_post,
    .test = pml_test,
    .finish = pml_finish,
    .cancel = pml_cancel,
    .progress = NULL,
    .direct_begin = NULL,
};
