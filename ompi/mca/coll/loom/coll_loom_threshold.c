/*
 * coll/loom: threshold bcast and reduce (Iakymchuk et al., section III.B), opt-in per
 * communicator through info keys (MPI_Comm_dup_with_info, MPI_Comm_set_info):
 *
 *   loom_bcast_threshold  = F (0 < F <= 1): a bcast delivers only the first
 *                           ceil(F * count) elements; the rest of every non-root buffer
 *                           is left as it was;
 *   loom_reduce_threshold = F: the same for reduce (the root's buffer beyond them is
 *                           left as it was);
 *   loom_reduce_engage    = F: a reduce combines the whole vector, but only of the ranks
 *                           of the first stages of a binomial tree rooted at the root:
 *                           the ranks root, root+1, ... (mod P), as many as the smallest
 *                           power of two >= ceil(F * P), at most P.  The others return at
 *                           once; a commutative op is needed (otherwise the whole
 *                           reduce runs, said at coll_loom_verbose 1).
 *
 * What the last call delivered is readable through MPI_T performance variables bound
 * to the communicator: coll_loom_bcast_delivered, coll_loom_reduce_delivered (elements)
 * and coll_loom_reduce_engaged (ranks).  Every rank must give the same values (a bcast
 * of different lengths does not match); a persistent request takes them at its _init.
 */
#include "ompi_config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/info_subscriber.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/mca/coll/base/coll_tags.h"

#include "coll_loom.h"
#include "coll_loom_exec.h"
#include "coll_loom_nbc.h"
#include "coll_loom_ssp.h"

static const char *const keys[MCA_COLL_LOOM_NUM_THRESHOLDS] = {"loom_bcast_threshold", "loom_reduce_threshold",
                                                               "loom_reduce_engage"};

/* The module a callback is about: the one this thread is enabling (its communicator's
 * function slots are not set yet; threads may create communicators at once), else the
 * one serving the communicator's bcast. */
static _Thread_local mca_coll_loom_module_t *enabling;

mca_coll_loom_module_t *mca_coll_loom_info_module(ompi_communicator_t *comm)
{
    if (NULL != enabling) {
        return enabling;
    }
    if (NULL != comm->c_coll && mca_coll_loom_bcast == comm->c_coll->coll_bcast) {
        return (mca_coll_loom_module_t *) comm->c_coll->coll_bcast_module;
    }
    return NULL;
}

/* opal_infosubscribe callback: parses the new value of one key; returns what the
 * communicator's info keeps. */
static mca_coll_loom_info_str_t *threshold_changed(opal_infosubscriber_t *obj, mca_coll_loom_info_str_t *key,
                                                   mca_coll_loom_info_str_t *value)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) obj;
    mca_coll_loom_module_t *m = mca_coll_loom_info_module(comm);
    char *end = NULL;
    double f;
    int k;

    for (k = 0; k < MCA_COLL_LOOM_NUM_THRESHOLDS && 0 != strcmp(key, keys[k]); ++k) {
    }
    if (NULL == m || k == MCA_COLL_LOOM_NUM_THRESHOLDS) {
        return value;
    }
    f = NULL != value ? strtod(value, &end) : 1.0;
    if (NULL == value || end == value || '\0' != *end || !(f > 0.0 && f <= 1.0)) {
        if (NULL != value && 0 != strcmp(value, "1") && 0 == ompi_comm_rank(comm)) {
            char what[160];
            snprintf(what, sizeof(what), "%s = \"%.64s\"", key, value);
            mca_coll_loom_show_help("option-ignored", true, comm->c_name, mca_coll_loom_cid(comm).s,
                                    what, "not a number in (0, 1]; the whole data is used");
        }
        f = 1.0;
    }
    m->threshold[k] = f;
    /* a reduce of the same shape as the last one must be planned again (engaged ranks) */
    m->last[0][MCA_COLL_LOOM_COLL_REDUCE].valid = false;
    m->last[1][MCA_COLL_LOOM_COLL_REDUCE].valid = false;
    return value;
}

void mca_coll_loom_thresholds_enable(mca_coll_loom_module_t *m, ompi_communicator_t *comm)
{
    for (int k = 0; k < MCA_COLL_LOOM_NUM_THRESHOLDS; ++k) {
        m->threshold[k] = 1.0;
        m->delivered[k] = 0;
    }
    m->warned_engage = false;
    /* the callback runs at once with the communicator's current value (or "1") */
    enabling = m;
    for (int k = 0; k < MCA_COLL_LOOM_NUM_THRESHOLDS; ++k) {
        (void) opal_infosubscribe_subscribe(&comm->super, (char *) keys[k], "1", threshold_changed);
    }
    mca_coll_loom_ssp_enable(m, comm);
    enabling = NULL;
}

size_t mca_coll_loom_threshold_count(mca_coll_loom_module_t *m, int which, size_t count)
{
    const double f = m->threshold[which];

    if (f < 1.0) {
        const double part = ceil(f * (double) count);
        count = part < (double) count ? (size_t) part : count;
    }
    m->delivered[which] = count;
    return count;
}

int mca_coll_loom_engaged_ranks(const mca_coll_loom_module_t *m, int P)
{
    const double fraction = m->threshold[MCA_COLL_LOOM_THRESHOLD_ENGAGE];
    int engaged = 1;

    while (engaged < P && engaged < ceil(fraction * P)) {
        engaged *= 2; /* the binomial tree's stages */
    }
    return engaged < P ? engaged : P;
}

int mca_coll_loom_reduce_engaged_run(mca_coll_loom_module_t *m, const void *sbuf, void *rbuf, int count,
                                     ompi_datatype_t *dtype, ompi_op_t *op, int root, ompi_communicator_t *comm,
                                     bool persistent, ompi_request_t **request)
{
    const bool is_root = ompi_comm_rank(comm) == root;
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_plan_t plan;
    size_t tsize = 0;
    unsigned call;
    int rc;

    if (ompi_comm_size(comm) < 2 || mca_coll_loom_empty((size_t) count, dtype, &tsize)) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    call = mca_coll_loom_module_call_flags(m, op, dtype);
    if (!(call & MCA_COLL_LOOM_CALL_COMMUTATIVE)) {
        if (!m->warned_engage) {
            m->warned_engage = true;
            if (MCA_COLL_LOOM_VERBOSE(1) && 0 == ompi_comm_rank(comm)) {
                mca_coll_loom_show_help("option-ignored", true, comm->c_name,
                                        mca_coll_loom_cid(comm).s, "loom_reduce_engage",
                                        "the op is not commutative, so every rank contributes");
            }
        }
        m->delivered[MCA_COLL_LOOM_THRESHOLD_ENGAGE] = (size_t) ompi_comm_size(comm);
        return OMPI_ERR_NOT_AVAILABLE;
    }
    if (OPAL_UNLIKELY(m->failed)) {
        return OMPI_ERROR;
    }
    m->delivered[MCA_COLL_LOOM_THRESHOLD_ENGAGE] = (size_t) mca_coll_loom_engaged_ranks(m, ompi_comm_size(comm));
    /* the receive buffer is the root's alone (coll_loom_reduce.c) */
    if (!is_root) {
        rbuf = NULL;
        sbuf = MPI_IN_PLACE != sbuf ? sbuf : NULL;
    }
    /* planned like every call (binomial with params.engaged, cached, on the plan's
     * transport), in the form the caller asked for */
    call |= MCA_COLL_LOOM_CALL_ENGAGED;
    if (NULL == request) {
        s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_REDUCE, comm, (size_t) count * tsize, call, root, &plan);
    } else {
        s = mca_coll_loom_plan_nb(m, MCA_COLL_LOOM_COLL_REDUCE, comm, (size_t) count * tsize, call, root, &plan,
                                  persistent);
    }
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        /* loom does not serve this communicator (settings not agreed yet): the previous
         * component's whole reduce */
        m->delivered[MCA_COLL_LOOM_THRESHOLD_ENGAGE] = (size_t) ompi_comm_size(comm);
        return OMPI_ERR_NOT_AVAILABLE;
    }
    if (NULL == request) {
        rc = mca_coll_loom_exec(m, &plan, sbuf, rbuf, (size_t) count, dtype, op, comm, MCA_COLL_BASE_TAG_REDUCE,
                                call, NULL);
    } else {
        mca_coll_loom_call_t c;
        mca_coll_loom_call_init(&c, m, comm, &plan, sbuf, rbuf, (size_t) count, dtype, op, call);
        rc = mca_coll_loom_nb_post(s, &c, persistent, request); /* the request keeps a copy */
    }
    return rc;
}

/* ---- MPI_T: what the last call on a communicator delivered -------------------------- */

static int delivered_value(const mca_base_pvar_t *pvar, void *value, void *obj)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) obj;
    mca_coll_loom_module_t *m = NULL != comm ? mca_coll_loom_info_module(comm) : NULL;

    *(unsigned long long *) value = NULL != m ? (unsigned long long) m->delivered[(intptr_t) pvar->ctx] : 0;
    return OMPI_SUCCESS;
}

void mca_coll_loom_thresholds_register(void)
{
    static const char *const names[MCA_COLL_LOOM_NUM_THRESHOLDS] = {"bcast_delivered", "reduce_delivered",
                                                                    "reduce_engaged"};
    static const char *const descs[MCA_COLL_LOOM_NUM_THRESHOLDS] = {
        "Elements the last MPI_Bcast on this communicator delivered (fewer than its count under "
        "the info key loom_bcast_threshold)",
        "Elements the last MPI_Reduce on this communicator combined (fewer than its count under "
        "the info key loom_reduce_threshold)",
        "Ranks whose contributions the last MPI_Reduce under the info key loom_reduce_engage "
        "combined"};

    for (intptr_t k = 0; k < MCA_COLL_LOOM_NUM_THRESHOLDS; ++k) {
        (void) mca_base_component_pvar_register(&mca_coll_loom_component.super.collm_version, names[k], descs[k],
                                                OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_LEVEL,
                                                MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                                                MCA_BASE_VAR_BIND_MPI_COMM,
                                                MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                                delivered_value, NULL, NULL, (void *) k);
    }
}
