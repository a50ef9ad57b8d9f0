/*
 * coll/loom: MPI_Allreduce entry point.
 */
#include "ompi_config.h"

#include <stdbool.h>

#include "mpi.h"
#include "opal/datatype/opal_datatype.h"
#include "opal/datatype/opal_datatype_internal.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/op/op.h"

#include "coll_loom.h"

/* basic types whose arithmetic rounds */
#define LOOM_FLOAT_BITS                                                                   \
    ((1u << OPAL_DATATYPE_FLOAT2) | (1u << OPAL_DATATYPE_FLOAT4) | (1u << OPAL_DATATYPE_FLOAT8) | \
     (1u << OPAL_DATATYPE_FLOAT12) | (1u << OPAL_DATATYPE_FLOAT16) |                      \
     (1u << OPAL_DATATYPE_FLOAT_COMPLEX) | (1u << OPAL_DATATYPE_DOUBLE_COMPLEX) |          \
     (1u << OPAL_DATATYPE_LONG_DOUBLE_COMPLEX))
/* integer types whose MPI_SUM op/avx implements with saturation */
#define LOOM_SMALL_INT_BITS                                                               \
    ((1u << OPAL_DATATYPE_INT1) | (1u << OPAL_DATATYPE_INT2) | (1u << OPAL_DATATYPE_UINT1) | \
     (1u << OPAL_DATATYPE_UINT2))

/* A floating-point max or min is commutative for MPI but not in its bits: Open MPI's
 * kernel (a > b ? a : b) keeps the second operand when the two compare equal (+0 and
 * -0) or unordered (NaN), so a o b and b o a can differ. */
static bool float_max_min(ompi_op_t *op, ompi_datatype_t *dtype)
{
    return (op == &ompi_mpi_op_max.op || op == &ompi_mpi_op_min.op) &&
           0 != (dtype->super.bdt_used & LOOM_FLOAT_BITS);
}

bool mca_coll_loom_swappable(ompi_op_t *op, ompi_datatype_t *dtype)
{
    return NULL != op && ompi_op_is_intrinsic(op) && ompi_op_is_commute(op) && !float_max_min(op, dtype);
}

unsigned mca_coll_loom_call_flags(ompi_op_t *op, ompi_datatype_t *dtype)
{
    const uint32_t used = dtype->super.bdt_used;
    const bool integer_only = 0 == (used & LOOM_FLOAT_BITS);
    unsigned call = 0;

    if (ompi_op_is_commute(op)) {
        call |= MCA_COLL_LOOM_CALL_COMMUTATIVE;
    }
    /* user ops: nothing is known about their rounding */
    if (!ompi_op_is_intrinsic(op)) {
        return call;
    }

    if (float_max_min(op, dtype)) {
        /* not exact: an algorithm that combines in a rank-dependent order would give
         * ranks different signs of zero, or different NaNs */
        call |= MCA_COLL_LOOM_CALL_IDEMPOTENT;
    } else if (op == &ompi_mpi_op_max.op || op == &ompi_mpi_op_min.op || op == &ompi_mpi_op_maxloc.op ||
               op == &ompi_mpi_op_minloc.op || op == &ompi_mpi_op_band.op || op == &ompi_mpi_op_bor.op ||
               op == &ompi_mpi_op_land.op || op == &ompi_mpi_op_lor.op) {
        call |= MCA_COLL_LOOM_CALL_EXACT | MCA_COLL_LOOM_CALL_IDEMPOTENT;
    } else if (op == &ompi_mpi_op_bxor.op || op == &ompi_mpi_op_lxor.op) {
        call |= MCA_COLL_LOOM_CALL_EXACT;
    } else if (op == &ompi_mpi_op_prod.op) {
        if (integer_only) {
            call |= MCA_COLL_LOOM_CALL_EXACT;
        }
    } else if (op == &ompi_mpi_op_sum.op) {
        /* a saturating 8/16-bit sum (op/avx) is not associative: only a wrapping one is exact */
        if (integer_only &&
            (0 == (used & LOOM_SMALL_INT_BITS) || mca_coll_loom_sum_wraps(op, dtype))) {
            call |= MCA_COLL_LOOM_CALL_EXACT;
        }
    }

    if (mca_coll_loom_invertible(op, dtype)) {
        call |= MCA_COLL_LOOM_CALL_INVERTIBLE;
    }
    return call;
}

unsigned mca_coll_loom_module_call_flags(mca_coll_loom_module_t *m, ompi_op_t *op,
                                         ompi_datatype_t *dtype)
{
    unsigned call;

    /* Predefined ops and datatypes live at fixed addresses for the whole run, so the
     * last such pair's properties can be remembered.  A user op or derived datatype
     * could be freed and another created at the same address: never cached. */
    if (OPAL_LIKELY(op == m->flags_op && dtype == m->flags_dtype)) {
        return m->flags_call;
    }
    call = mca_coll_loom_call_flags(op, dtype);
    if (ompi_op_is_intrinsic(op) && ompi_datatype_is_predefined(dtype)) {
        m->flags_op = op;
        m->flags_dtype = dtype;
        m->flags_call = call;
    }
    return call;
}

int mca_coll_loom_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const mca_coll_loom_sched_t *s;
    mca_coll_loom_choice_t choice;
    size_t tsize = 0;
    unsigned call;

    if (OPAL_UNLIKELY(m->ssp_slack >= 0)) {
        int rc = mca_coll_loom_ssp_allreduce(m, sbuf, rbuf, count, dtype, op, comm);
        if (OMPI_ERR_NOT_AVAILABLE != rc) {
            return rc;
        }
    }
    if (mca_coll_loom_empty((size_t) count, dtype, &tsize)) {
        return OMPI_SUCCESS;
    }
    call = mca_coll_loom_module_call_flags(m, op, dtype);
    s = mca_coll_loom_plan(m, MCA_COLL_LOOM_COLL_ALLREDUCE, comm, (size_t) count * tsize, call, 0,
                           &choice);
    if (NULL == s) {
        if (OPAL_UNLIKELY(m->failed)) {
            return OMPI_ERROR; /* marked failed (mca_coll_loom_plan) */
        }
        return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                     m->previous_allreduce_module);
    }

    if (choice.shm) {
        int rc = mca_coll_loom_shm_allreduce(m, sbuf, rbuf, (size_t) count, dtype, op, comm, call);
        if (OMPI_ERR_NOT_AVAILABLE != rc) {
            return mca_coll_loom_shm_outcome(m, comm, rc);
        }
    }
    {
        const int rc = mca_coll_loom_exec(m, s, sbuf, rbuf, (size_t) count, dtype, op, comm,
                                          MCA_COLL_BASE_TAG_ALLREDUCE, call, NULL);
        return OMPI_ERR_NOT_AVAILABLE != rc
                   ? rc
                   : m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
    }
}

/* MPI_Iallreduce and MPI_Allreduce_init: the same schedules on the engine. */
int mca_coll_loom_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = OMPI_ERR_NOT_AVAILABLE;

    if (OPAL_UNLIKELY(m->ssp_slack >= 0)) {
        rc = mca_coll_loom_ssp_iallreduce(m, sbuf, rbuf, count, dtype, op, comm, false, request);
    }
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = mca_coll_loom_nb_vector(m, MCA_COLL_LOOM_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, 0, comm, false,
                                     request);
    }

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request, m->previous_iallreduce_module);
    }
    return rc;
}

int mca_coll_loom_allreduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                 ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    int rc = OMPI_ERR_NOT_AVAILABLE;

    if (OPAL_UNLIKELY(m->ssp_slack >= 0)) {
        rc = mca_coll_loom_ssp_iallreduce(m, sbuf, rbuf, count, dtype, op, comm, true, request);
    }
    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = mca_coll_loom_nb_vector(m, MCA_COLL_LOOM_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, 0, comm, true,
                                     request);
    }

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        rc = m->previous_allreduce_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                        m->previous_allreduce_init_module);
    }
    return rc;
}
