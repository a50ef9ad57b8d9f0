/*
 * coll/loom: the UCX transport's stand-in for a build without UCX (configure
 * --without-ucx, or UCX not found).  Every communicator stays on the PML; a rank asked
 * for UCX (coll_loom_transport ucx, or auto where a rule names ucx) says in the settings
 * check that it cannot, so all ranks stay on the PML alike, and the first such
 * communicator says why at verbosity 1.
 */
#include "ompi_config.h"

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"

#include "coll_loom.h"

/* the settings check's "cannot" bit, as coll_loom_ucx.c sets it */
#define LOOM_UCX_FAILED (UINT64_C(1) << 63)

void mca_coll_loom_ucx_offer(struct ompi_communicator_t *comm, bool in_job, bool want, uint64_t *words)
{
    (void) comm;
    (void) in_job;
    words[0] = want ? LOOM_UCX_FAILED : 0;
    words[1] = 0;
}

mca_coll_loom_ucx_comm_t *mca_coll_loom_ucx_adopt(struct mca_coll_loom_module_t *m, struct ompi_communicator_t *comm,
                                                  const uint64_t *words)
{
    static bool told;
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    (void) m;
    if ((words[0] & LOOM_UCX_FAILED) && !told && 0 == ompi_comm_rank(comm)) {
        told = true;
        opal_output_verbose(MCA_COLL_LOOM_TRANSPORT_UCX == cm->transport ? 1 : 10, cm->output,
                            "coll/loom: communicator %s (cid %s): the UCX transport is not available (loom "
                            "was built without UCX): its collectives use the PML",
                            comm->c_name, mca_coll_loom_cid(comm).s);
    }
    return NULL;
}

void mca_coll_loom_ucx_release(mca_coll_loom_ucx_comm_t *u)
{
    (void) u;
}

void mca_coll_loom_ucx_finalize(void)
{
}

/* never a task's transport: mca_coll_loom_call_tl returns it only for a communicator
 * that mca_coll_loom_ucx_adopt set up */
const mca_coll_loom_tl_t mca_coll_loom_tl_ucx = {
    .name = "ucx",
    .reports_length = false,
    .post = NULL,
    .test = NULL,
    .finish = NULL,
    .cancel = NULL,
    .progress = NULL,
    .direct_begin = NULL,
};
