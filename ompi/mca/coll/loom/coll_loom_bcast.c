/*
 * coll/loom: MPI_Bcast entry point.  The buffer is the schedule's RESULT slot; the
 * root's holds the data.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"

#include "coll_loom.h"

int mca_coll_loom_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_choice_t choice;
    size_t tsize = 0;

    if (mca_coll_loom_empty((size_t) count, dtype, &tsize)) {
        return OMPI_SUCCESS;
    }
    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_BCAST, comm, (size_t) count * tsize,
                           MCA_COLL_LOOM_CALL_NO_OP, root, &choice);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        return m->previous_bcast(buf, count, dtype, root, comm, m->previous_bcast_module);
    }
    if (choice.shm) {
        int rc = mca_coll_loom_shm_bcast(m, buf, (size_t) count, dtype, root, comm);
        if (OMPI_ERR_NOT_AVAILABLE != rc) {
            return mca_coll_loom_shm_outcome(m, comm, rc);
        }
    }
    if (s->nblocks > 1) {
        /* a schedule that cuts the message (two-tree halves and chunks, pipelined
         * segments): by byte, so that ranks whose datatypes differ cut alike */
        const bool is_root = ompi_comm_rank(comm) == root;
        return mca_coll_loom_exec_bytes(m, s, buf, (size_t) count, dtype, is_root ? buf : NULL,
                                        is_root ? (size_t) count : 0, 0, !is_root, comm,
                                        MCA_COLL_BASE_TAG_BCAST);
    }
    return mca_coll_loom_exec(m, s, NULL, buf, (size_t) count, dtype, NULL, comm,
                              MCA_COLL_BASE_TAG_BCAST, MCA_COLL_LOOM_CALL_NO_OP, NULL);
}
