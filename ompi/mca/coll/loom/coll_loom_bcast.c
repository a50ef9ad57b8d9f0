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
#include "coll_loom_exec.h"
#include "coll_loom_shm.h"
#include "coll_loom_call.h"
#include "coll_loom_nbc.h"

/* The call, for every form: a schedule that cuts the message (two-tree halves and
 * chunks, pipelined segments) runs on its bytes, so that ranks whose datatypes differ
 * cut alike. */
static void describe(mca_coll_loom_call_t *c, mca_coll_loom_module_t *m, ompi_communicator_t *comm,
                     const mca_coll_loom_plan_t *plan, void *buf, int count, ompi_datatype_t *dtype, int root,
                     size_t tsize)
{
    mca_coll_loom_call_init(c, m, comm, plan, NULL, buf, (size_t) count, dtype, NULL, MCA_COLL_LOOM_CALL_NO_OP);
    if (NULL != plan->sched && plan->sched->nblocks > 1) {
        const bool is_root = c->rank == root;
        c->bytes = true;
        c->ubuf = buf;
        c->ucount = (size_t) count;
        c->utsize = tsize;
        c->udtype = dtype;
        c->pack_src = is_root ? buf : NULL;
        c->pack_count = is_root ? (size_t) count : 0;
        c->unpack = !is_root;
    }
}

/* A blocking bcast whose schedule cuts the message: described, then run on its bytes. */
static __opal_attribute_noinline__ int run_on_bytes(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan,
                                                    void *buf, int count, ompi_datatype_t *dtype, int root,
                                                    ompi_communicator_t *comm, size_t tsize)
{
    mca_coll_loom_call_t c;

    describe(&c, m, comm, plan, buf, count, dtype, root, tsize);
    return mca_coll_loom_exec_call(m, plan, &c, MCA_COLL_BASE_TAG_BCAST);
}

int mca_coll_loom_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    size_t tsize = 0;
    int rc;

    count = mca_coll_loom_threshold_apply(m, MCA_COLL_LOOM_THRESHOLD_BCAST, count);
    if (mca_coll_loom_empty((size_t) count, dtype, &tsize)) {
        return OMPI_SUCCESS;
    }
    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_BCAST, comm, (size_t) count * tsize,
                           MCA_COLL_LOOM_CALL_NO_OP, root, &plan);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        return m->previous_bcast(buf, count, dtype, root, comm, m->previous_bcast_module);
    }
    if (plan.shm) {
        rc = mca_coll_loom_shm_bcast(m, &plan, buf, (size_t) count, dtype, root, comm);
        if (OMPI_ERR_NOT_AVAILABLE != rc) {
            return mca_coll_loom_shm_outcome(m, comm, plan.coll, rc);
        }
    }
    if (s->nblocks > 1) {
        rc = run_on_bytes(m, &plan, buf, count, dtype, root, comm, tsize);
    } else {
        /* nothing around the schedule: straight to the engine, for the small bcast's
         * per-call cost (docs/dev/developing.md, "Performance notes") */
        rc = mca_coll_loom_exec(m, &plan, NULL, buf, (size_t) count, dtype, NULL, comm, MCA_COLL_BASE_TAG_BCAST,
                                MCA_COLL_LOOM_CALL_NO_OP, NULL);
    }
    return OMPI_ERR_NOT_AVAILABLE != rc ? rc
                                        : m->previous_bcast(buf, count, dtype, root, comm, m->previous_bcast_module);
}

/* MPI_Ibcast and MPI_Bcast_init */
static int bcast_post(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                      mca_coll_loom_module_t *m, bool persistent, ompi_request_t **request)
{
    mca_coll_loom_plan_t plan;
    const mca_coll_loom_sched_t *s = NULL;
    mca_coll_loom_call_t c;
    size_t tsize = 0;

    if (!mca_coll_loom_empty((size_t) count, dtype, &tsize)) {
        s = mca_coll_loom_plan_nb(m, MCA_COLL_LOOM_COLL_BCAST, comm, (size_t) count * tsize,
                                  MCA_COLL_LOOM_CALL_NO_OP, root, &plan, persistent);
        if (NULL == s) {
            return OPAL_UNLIKELY(m->failed) ? OMPI_ERROR : OMPI_ERR_NOT_AVAILABLE;
        }
    } else {
        plan = mca_coll_loom_plan_of(NULL, MCA_COLL_LOOM_COLL_BCAST); /* nothing to move */
    }
    describe(&c, m, comm, &plan, buf, count, dtype, root, tsize);
    return mca_coll_loom_nb_post(s, &c, persistent, request);
}

int mca_coll_loom_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc;

    count = mca_coll_loom_threshold_apply(m, MCA_COLL_LOOM_THRESHOLD_BCAST, count);
    rc = bcast_post(buf, count, dtype, root, comm, m, false, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_ibcast(buf, count, dtype, root, comm, request, m->previous_ibcast_module);
    }
    return rc;
}

int mca_coll_loom_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                             struct ompi_communicator_t *comm, struct ompi_info_t *info,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc;

    count = mca_coll_loom_threshold_apply(m, MCA_COLL_LOOM_THRESHOLD_BCAST, count);
    rc = bcast_post(buf, count, dtype, root, comm, m, true, request);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_bcast_init(buf, count, dtype, root, comm, info, request, m->previous_bcast_init_module);
    }
    return rc;
}
