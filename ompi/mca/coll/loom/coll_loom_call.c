/*
 * coll/loom: one call for every form (coll_loom_call.h): the steps before and after a
 * schedule that the blocking entry points and loom's requests share.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

#include "coll_loom.h"
#include "coll_loom_call.h"

int mca_coll_loom_call_begin_steps(const mca_coll_loom_call_t *c, mca_coll_loom_call_run_t *run)
{
    int rc = OMPI_SUCCESS;

    /* (the fields mca_coll_loom_call_begin set are the call's own) */
    if (NULL != c->own_src) {
        /* allgather: this rank's block of the result, from its send buffer */
        rc = ompi_datatype_sndrcv(c->own_src, c->own_scount, c->own_sdtype, c->own_dst, c->own_rcount,
                                  c->udtype);
    }
    if (c->bytes) {
        /* the schedule runs on the bytes: laid out so on every rank, also a failed one */
        const size_t bytes = c->ucount * c->utsize;
        run->sbuf = NULL;
        run->count = bytes;
        run->dtype = &ompi_mpi_byte.dt;
        if (c->ucount <= INT32_MAX && ompi_datatype_is_contiguous_memory_layout(c->udtype, (int32_t) c->ucount)) {
            ptrdiff_t lb, extent;
            ompi_datatype_get_true_extent(c->udtype, &lb, &extent);
            run->rbuf = (char *) c->ubuf + lb;
        } else if (OMPI_SUCCESS == rc) {
            run->packed_bytes = bytes > 0 ? bytes : 1;
            run->packed = mca_coll_loom_scratch_take(run->packed_bytes);
            if (NULL == run->packed) {
                rc = OMPI_ERR_OUT_OF_RESOURCE;
            } else if (NULL != c->pack_src && c->pack_count > 0) {
                rc = mca_coll_loom_pack(c->pack_src, c->pack_count, c->udtype, run->packed + c->pack_from,
                                        c->pack_count * c->utsize);
            }
            run->rbuf = run->packed;
        }
    }
    if (OMPI_SUCCESS == rc && NULL != c->displ) {
        /* reduce_scatter: RESULT is a full-size scratch buffer, part `rank` copied out */
        run->tmp_span = (size_t) opal_datatype_span(&run->dtype->super, c->displ[c->P], &run->tmp_gap);
        run->tmp = mca_coll_loom_scratch_take(run->tmp_span);
        if (NULL == run->tmp) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
        }
        run->sbuf = MPI_IN_PLACE == run->sbuf ? c->out : run->sbuf;
        run->rbuf = run->tmp - run->tmp_gap;
    }
    if (OMPI_SUCCESS == rc && c->in_place) {
        /* alltoall(v) in place: INPUT is what rbuf held at the start */
        run->tmp_span = (size_t) opal_datatype_span(&run->dtype->super, c->in_place_count, &run->tmp_gap);
        run->tmp = mca_coll_loom_scratch_take(run->tmp_span);
        if (NULL == run->tmp) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
        } else {
            run->sbuf = run->tmp - run->tmp_gap;
            rc = mca_coll_loom_copy_content(run->dtype, c->in_place_count, run->tmp - run->tmp_gap, run->rbuf);
        }
    }
    /* a failure so far is this rank's alone, and the peers run the schedule: it takes
     * its steps without data (poisoned, coll_loom_exec.c) */
    if (OMPI_SUCCESS != rc) {
        run->sbuf = NULL;
        run->rbuf = NULL;
    }
    return rc;
}

int mca_coll_loom_call_end_steps(const mca_coll_loom_call_t *c, mca_coll_loom_call_run_t *run, int rc)
{
    /* a copy-out or unpack that fails after the exchange concerns this rank alone */
    if (OMPI_SUCCESS == rc && NULL != c->displ && NULL != run->tmp && c->displ[c->rank + 1] > c->displ[c->rank]) {
        ptrdiff_t lb, extent;
        ompi_datatype_get_extent(c->dtype, &lb, &extent);
        rc = mca_coll_loom_copy_content(c->dtype, c->displ[c->rank + 1] - c->displ[c->rank], (char *) c->out,
                                        run->tmp - run->tmp_gap + (ptrdiff_t) c->displ[c->rank] * extent);
    }
    if (OMPI_SUCCESS == rc && NULL != run->packed && c->unpack) {
        rc = mca_coll_loom_unpack(run->packed, c->ucount * c->utsize, c->ubuf, c->ucount, c->udtype);
    }
    if (NULL != run->packed) {
        mca_coll_loom_scratch_give(run->packed, run->packed_bytes);
        run->packed = NULL;
    }
    if (NULL != run->tmp) {
        mca_coll_loom_scratch_give(run->tmp, run->tmp_span);
        run->tmp = NULL;
    }
    return rc;
}
