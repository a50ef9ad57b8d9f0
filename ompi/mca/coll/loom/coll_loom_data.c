/*
 * coll/loom: what loom knows of an MPI datatype and op, and how data moves between an
 * MPI buffer and loom's forms of it: the call flags of an (op, dtype) pair (which
 * algorithms keep the result exact), the inverse op of the engine's UNREDUCE, copies
 * of typed data, and the packed form (the type signature's bytes) that node segments
 * and byte-mode schedules carry.
 */
#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mpi.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/datatype/opal_datatype.h"
#include "opal/datatype/opal_datatype_internal.h"
#include "opal/loom/loom_copy.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/datatype/ompi_datatype_internal.h"
#include "ompi/mca/op/base/functions.h"
#include "ompi/op/op.h"

#include "coll_loom.h"

/* ------------------------------------------------------------------------------------ */
/* call flags                                                                            */

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

/* ------------------------------------------------------------------------------------ */
/* copies                                                                                */

int mca_coll_loom_copy_content(ompi_datatype_t *dtype, size_t n, char *dst, const char *src)
{
    size_t tsize = 0;
    ptrdiff_t lb, extent;

    if (n <= INT32_MAX && ompi_datatype_is_contiguous_memory_layout(dtype, (int32_t) n)) {
        ompi_datatype_type_size(dtype, &tsize);
        ompi_datatype_get_true_extent(dtype, &lb, &extent);
        if (mca_coll_loom_copy_aliases(dst + lb, src + lb, n * tsize)) {
            mca_coll_loom_copy(dst + lb, src + lb, n * tsize);
            return OMPI_SUCCESS;
        }
    }
    return ompi_datatype_copy_content_same_ddt(dtype, (size_t) n, dst, (char *) src);
}

/* ------------------------------------------------------------------------------------ */
/* the inverse op ("take out", UNREDUCE)                                                 */

/* Width in bytes of a predefined fixed-width integer type, 0 for anything else. */
static int int_width(const ompi_datatype_t *dtype)
{
    if (!ompi_datatype_is_predefined(dtype)) {
        return 0;
    }
    switch (dtype->id) {
    case OMPI_DATATYPE_MPI_INT8_T:
    case OMPI_DATATYPE_MPI_UINT8_T:
    case OMPI_DATATYPE_MPI_INT16_T:
    case OMPI_DATATYPE_MPI_UINT16_T:
    case OMPI_DATATYPE_MPI_INT32_T:
    case OMPI_DATATYPE_MPI_UINT32_T:
    case OMPI_DATATYPE_MPI_INT64_T:
    case OMPI_DATATYPE_MPI_UINT64_T:
    case OMPI_DATATYPE_MPI_LONG:
    case OMPI_DATATYPE_MPI_UNSIGNED_LONG:
    case OMPI_DATATYPE_MPI_AINT:
    case OMPI_DATATYPE_MPI_OFFSET:
    case OMPI_DATATYPE_MPI_COUNT:
        break;
    default:
        return 0;
    }
    switch (dtype->super.size) {
    case 1: case 2: case 4: case 8:
        return (int) dtype->super.size;
    default:
        return 0;
    }
}

/* True when MPI_SUM on the predefined integer type wraps modulo 2^width.  Open MPI's
 * base kernels do; op/avx's 8- and 16-bit kernels saturate (open-mpi/ompi#8045), which
 * is neither exactly associative nor invertible.  32/64-bit sums wrap everywhere. */
bool mca_coll_loom_sum_wraps(ompi_op_t *op, const ompi_datatype_t *dtype)
{
    int idx, width = int_width(dtype);

    if (0 == width) {
        return false;
    }
    if (width >= 4) {
        return true;
    }
    idx = ompi_op_ddt_map[dtype->id];
    if (idx < 0 || idx >= OMPI_OP_BASE_TYPE_MAX || op->o_f_to_c_index < 0 ||
        op->o_f_to_c_index >= OMPI_OP_BASE_FORTRAN_OP_MAX) {
        return false;
    }
    return op->o_func.intrinsic.fns[idx] == ompi_op_base_functions[op->o_f_to_c_index][idx];
}

bool mca_coll_loom_invertible(ompi_op_t *op, ompi_datatype_t *dtype)
{
    if (0 == int_width(dtype)) {
        return false;
    }
    if (op == &ompi_mpi_op_bxor.op) {
        return true;
    }
    return op == &ompi_mpi_op_sum.op && mca_coll_loom_sum_wraps(op, dtype);
}

/* dst := dst o src^-1 for the pairs mca_coll_loom_invertible() accepts: subtraction in
 * unsigned arithmetic of the type's width (wrapping, like the sum), or xor. */
int mca_coll_loom_unreduce(ompi_op_t *op, ompi_datatype_t *dtype, const void *src, void *dst, size_t count)
{
    const int width = int_width(dtype);

    if (!mca_coll_loom_invertible(op, dtype)) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    if (op == &ompi_mpi_op_bxor.op) {
        const unsigned char *s = src;
        unsigned char *d = dst;
        size_t n = count * (size_t) width;
        for (size_t i = 0; i < n; ++i) {
            d[i] ^= s[i];
        }
        return OMPI_SUCCESS;
    }

#define LOOM_UNSUM(T)                                                   \
    do {                                                                \
        const T *s = (const T *) src;                                   \
        T *d = (T *) dst;                                               \
        for (size_t i = 0; i < count; ++i) {                            \
            d[i] = (T) (d[i] - s[i]);                                   \
        }                                                               \
    } while (0)

    switch (width) {
    case 1: LOOM_UNSUM(uint8_t); break;
    case 2: LOOM_UNSUM(uint16_t); break;
    case 4: LOOM_UNSUM(uint32_t); break;
    case 8: LOOM_UNSUM(uint64_t); break;
    default: return OMPI_ERR_NOT_SUPPORTED;
    }
#undef LOOM_UNSUM
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------------------ */
/* the packed form of (buf, count, dtype)                                                */

/* Moves (buf, count, dtype) to or from its packed form at `packed` (bytes long): a copy
 * when the layout is one contiguous run, the convertor otherwise. */
int mca_coll_loom_convert(void *buf, size_t count, ompi_datatype_t *dtype, void *packed, size_t bytes, bool to_packed)
{
    opal_convertor_t conv;
    struct iovec iov = {.iov_base = packed, .iov_len = bytes};
    uint32_t iov_count = 1;
    size_t max = bytes;
    int rc;

    /* coll_loom_test_fail_conversion: the tests' way into the error paths below */
    if (OPAL_UNLIKELY(mca_coll_loom_component.test_fail_conversion > 0) &&
        0 == --mca_coll_loom_component.test_fail_conversion) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (mca_coll_loom_packed_is_layout(dtype, count)) {
        ptrdiff_t lb, extent;
        ompi_datatype_get_true_extent(dtype, &lb, &extent);
        mca_coll_loom_copy(to_packed ? packed : (char *) buf + lb, to_packed ? (char *) buf + lb : packed, bytes);
        return OMPI_SUCCESS;
    }
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    rc = to_packed ? opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dtype->super,
                                                              count, buf, 0, &conv)
                   : opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dtype->super,
                                                              count, buf, 0, &conv);
    if (OPAL_SUCCESS == rc) {
        int32_t done = to_packed ? opal_convertor_pack(&conv, &iov, &iov_count, &max)
                                 : opal_convertor_unpack(&conv, &iov, &iov_count, &max);
        rc = done >= 0 && max == bytes ? OMPI_SUCCESS : OMPI_ERROR;
    }
    OBJ_DESTRUCT(&conv);
    return rc;
}
