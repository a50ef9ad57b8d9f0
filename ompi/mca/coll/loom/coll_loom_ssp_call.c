/*
 * coll/loom: the MPI side of the stale-synchronous allreduce (coll_loom_ssp.c has the
 * exchange and the algorithm's description): the info key loom_allreduce_slack that
 * turns it on, which calls it serves, the blocking call and the start of a request
 * (the request itself is one of loom's, coll_loom_nbc.c), the attributes that drain an
 * exchange at MPI_Comm_free and MPI_Finalize, and its MPI_T variables.
 */
#include "ompi_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/info_subscriber.h"
#include "ompi/attribute/attribute.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

#include "coll_loom.h"
#include "coll_loom_nbc.h"
#include "coll_loom_ssp.h"

static int comm_keyval = MPI_KEYVAL_INVALID, self_keyval = MPI_KEYVAL_INVALID;
static opal_mutex_t keyval_lock; /* threads may set up their first exchanges at once */

/* ---- draining: the attributes ------------------------------------------------------- */

/* MPI_Comm_free deletes the communicator's attributes first: the exchange is drained
 * there, while the communicator is whole (its posted receives keep it from being
 * destructed before). */
static int comm_freed(MPI_Comm comm, int keyval, void *attr_val, void *extra)
{
    (void) comm;
    (void) keyval;
    (void) extra;
    mca_coll_loom_ssp_fini((mca_coll_loom_module_t *) attr_val);
    return OMPI_SUCCESS;
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: every exchange still open
 * (communicators the program did not free) is drained there, all at once. */
static int self_freed(MPI_Comm comm, int keyval, void *attr_val, void *extra)
{
    (void) comm;
    (void) keyval;
    (void) attr_val;
    (void) extra;
    mca_coll_loom_ssp_drain_all();
    /* the keyvals go with the last attribute (the attribute system is finalized before
     * the components are closed); attribute callbacks run without its lock */
    (void) ompi_attr_free_keyval(COMM_ATTR, &comm_keyval, false);
    (void) ompi_attr_free_keyval(COMM_ATTR, &self_keyval, false);
    return OMPI_SUCCESS;
}

/* The keyvals, once per process (MPI_COMM_SELF's attribute with them). */
static int create_keyvals(void)
{
    ompi_attribute_fn_ptr_union_t copy_fn, del_fn;
    int rc;

    /* MPI_COMM_NULL_COPY_FN: a duplicate of the communicator sets up its own */
    copy_fn.attr_communicator_copy_fn = (mca_coll_loom_comm_copy_attr_fn_t *) (void (*)(void)) MPI_COMM_NULL_COPY_FN;
    del_fn.attr_communicator_delete_fn = comm_freed;
    rc = ompi_attr_create_keyval(COMM_ATTR, copy_fn, del_fn, &comm_keyval, NULL, 0, NULL);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    del_fn.attr_communicator_delete_fn = self_freed;
    rc = ompi_attr_create_keyval(COMM_ATTR, copy_fn, del_fn, &self_keyval, NULL, 0, NULL);
    if (OMPI_SUCCESS == rc) {
        rc = ompi_attr_set_c(COMM_ATTR, &ompi_mpi_comm_self.comm, &ompi_mpi_comm_self.comm.c_keyhash,
                             self_keyval, NULL, false);
    }
    if (OMPI_SUCCESS != rc) {
        /* all or nothing: the next exchange tries again */
        (void) ompi_attr_free_keyval(COMM_ATTR, &comm_keyval, false);
        if (MPI_KEYVAL_INVALID != self_keyval) {
            (void) ompi_attr_free_keyval(COMM_ATTR, &self_keyval, false);
        }
        comm_keyval = self_keyval = MPI_KEYVAL_INVALID;
    }
    return rc;
}

/* The attributes that make MPI_Comm_free and MPI_Finalize drain. */
static int attach_attributes(mca_coll_loom_module_t *m, ompi_communicator_t *comm)
{
    int rc = OMPI_SUCCESS;

    if (m->ssp_attached) {
        return OMPI_SUCCESS; /* every call after the first */
    }
    opal_mutex_lock(&keyval_lock); /* threads may set up their first exchanges at once */
    if (MPI_KEYVAL_INVALID == comm_keyval) {
        rc = create_keyvals();
    }
    opal_mutex_unlock(&keyval_lock);
    if (OMPI_SUCCESS == rc && !m->ssp_attached) {
        rc = ompi_attr_set_c(COMM_ATTR, comm, &comm->c_keyhash, comm_keyval, m, false);
        m->ssp_attached = OMPI_SUCCESS == rc;
    }
    return rc;
}

/* ---- calls --------------------------------------------------------------------------- */

/* Whether this call runs stale-synchronously; else (one rank, nothing to reduce, a
 * non-commutative op, settings that differ between ranks: each could choose another
 * algorithm) the caller runs the ordinary allreduce. */
static bool ssp_serves(mca_coll_loom_module_t *m, ompi_communicator_t *comm, int count, ompi_op_t *op,
                       ompi_datatype_t *dtype, bool blocking, unsigned *call)
{
    size_t tsize;

    if (ompi_comm_size(comm) < 2 || mca_coll_loom_empty((size_t) count, dtype, &tsize) ||
        !mca_coll_loom_settings_ok(m, comm, blocking)) {
        return false;
    }
    *call = mca_coll_loom_module_call_flags(m, op, dtype);
    if (*call & MCA_COLL_LOOM_CALL_COMMUTATIVE) {
        return true;
    }
    if (!m->warned_ssp) {
        m->warned_ssp = true;
        if (MCA_COLL_LOOM_VERBOSE(1) && 0 == ompi_comm_rank(comm)) {
            mca_coll_loom_show_help("option-ignored", true, comm->c_name,
                                    mca_coll_loom_cid(comm).s, MCA_COLL_LOOM_SSP_KEY,
                                    "the op is not commutative, so the allreduce waits for "
                                    "every current contribution");
        }
    }
    return false;
}

int mca_coll_loom_ssp_start(mca_coll_loom_module_t *m, ompi_communicator_t *comm, size_t count,
                            ompi_datatype_t *dtype, ompi_op_t *op, unsigned flags, bool blocking,
                            mca_coll_loom_ssp_call_t *call)
{
    int rc;

    if (OPAL_UNLIKELY(m->failed)) {
        return OMPI_ERROR;
    }
    rc = attach_attributes(m, comm);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    return mca_coll_loom_ssp_submit(m, comm, count, dtype, op, flags, blocking, call);
}

int mca_coll_loom_ssp_allreduce(mca_coll_loom_module_t *m, const void *sbuf, void *rbuf, int count,
                                ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm)
{
    mca_coll_loom_ssp_call_t call = {.sbuf = sbuf, .rbuf = rbuf};
    unsigned flags;
    int rc;

    if (!ssp_serves(m, comm, count, op, dtype, true, &flags)) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    rc = mca_coll_loom_ssp_start(m, comm, (size_t) count, dtype, op, flags, true, &call);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    mca_coll_loom_ssp_wait(m, &call);
    return call.rc;
}

/* MPI_Iallreduce and MPI_Allreduce_init: one of loom's requests, whose every start
 * queues a call (mca_coll_loom_ssp_start). */
int mca_coll_loom_ssp_iallreduce(mca_coll_loom_module_t *m, const void *sbuf, void *rbuf, int count,
                                 ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm, bool persistent,
                                 ompi_request_t **request)
{
    mca_coll_loom_call_t c;
    unsigned flags;

    if (!ssp_serves(m, comm, count, op, dtype, false, &flags)) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    mca_coll_loom_call_init(&c, m, comm, NULL, sbuf, rbuf, (size_t) count, dtype, op, flags);
    c.ssp = true;
    c.coll = MCA_COLL_LOOM_COLL_ALLREDUCE;
    return mca_coll_loom_nb_post(NULL, &c, persistent, request);
}

/* ---- the info key and MPI_T ----------------------------------------------------------- */

static mca_coll_loom_info_str_t *slack_changed(opal_infosubscriber_t *obj, mca_coll_loom_info_str_t *key,
                                               mca_coll_loom_info_str_t *value)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) obj;
    mca_coll_loom_module_t *m = mca_coll_loom_info_module(comm);
    char *end = NULL;
    long n = -1;

    if (NULL == m || 0 != strcmp(key, MCA_COLL_LOOM_SSP_KEY)) {
        return value;
    }
    if (NULL != value && 0 != strcmp(value, "off")) {
        n = strtol(value, &end, 10);
        if (end == value || '\0' != *end || n < 0 || n > INT32_MAX) {
            n = -1;
            if (0 == ompi_comm_rank(comm)) { /* every rank has the same value */
                char what[160];
                snprintf(what, sizeof(what), "%s = \"%.64s\"", MCA_COLL_LOOM_SSP_KEY, value);
                mca_coll_loom_show_help("option-ignored", true, comm->c_name, mca_coll_loom_cid(comm).s,
                                        what, "not an integer >= 0 or \"off\"; the allreduce stays "
                                        "synchronous");
            }
        }
    }
    m->ssp_slack = (int) n;
    return value;
}

void mca_coll_loom_ssp_enable(mca_coll_loom_module_t *m, ompi_communicator_t *comm)
{
    m->ssp_slack = -1;
    m->ssp_clock = 0;
    m->ssp_oldest = 0;
    m->ssp_waits = 0;
    m->ssp = NULL;
    m->warned_ssp = false;
    m->ssp_attached = false;
    (void) opal_infosubscribe_subscribe(&comm->super, MCA_COLL_LOOM_SSP_KEY, "off", slack_changed);
}

static int pvar_value(const mca_base_pvar_t *pvar, void *value, void *obj)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) obj;
    mca_coll_loom_module_t *m = NULL != comm ? mca_coll_loom_info_module(comm) : NULL;
    unsigned long long v = 0;

    if (NULL != m) {
        v = 0 == (intptr_t) pvar->ctx ? (unsigned long long) m->ssp_oldest
          : 1 == (intptr_t) pvar->ctx ? (unsigned long long) m->ssp_clock : (unsigned long long) m->ssp_waits;
    }
    *(unsigned long long *) value = v;
    return OMPI_SUCCESS;
}

void mca_coll_loom_ssp_register(void)
{
    static const char *const names[3] = {"allreduce_oldest_clock", "allreduce_clock", "allreduce_stale_waits"};
    static const char *const descs[3] = {
        "Under the info key loom_allreduce_slack: the clock of the oldest contribution in the "
        "last MPI_Allreduce result on this communicator (0: none yet)",
        "Under the info key loom_allreduce_slack: this rank's clock, the number of allreduce "
        "calls made on this communicator",
        "Under the info key loom_allreduce_slack: how many times an allreduce on this "
        "communicator waited for a fresher contribution than the one it had"};

    for (intptr_t k = 0; k < 3; ++k) {
        (void) mca_base_component_pvar_register(&mca_coll_loom_component.super.collm_version, names[k], descs[k],
                                                OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_LEVEL,
                                                MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_MPI_COMM,
                                                MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                                pvar_value, NULL, NULL, (void *) k);
    }
}

void mca_coll_loom_ssp_open(void)
{
    OBJ_CONSTRUCT(&keyval_lock, opal_mutex_t);
    mca_coll_loom_ssp_exchange_open();
}

void mca_coll_loom_ssp_close(void)
{
    comm_keyval = self_keyval = MPI_KEYVAL_INVALID; /* freed at MPI_Finalize (self_freed) */
    mca_coll_loom_ssp_exchange_close();
    OBJ_DESTRUCT(&keyval_lock);
}
