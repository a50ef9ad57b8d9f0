/*
 * loom build compatibility: a stand-in for Open MPI's
 * ompi/mpi/fortran/base/fint_2_int.h.
 *
 * Why this file exists: Open MPI 4.1's installed development headers include
 * this header from ompi/op/op.h (and so from ompi/mca/coll/base/coll_base_util.h),
 * but Debian 12's libopenmpi-dev does not ship it, so any component that
 * includes op.h fails to compile.  The build puts compat/ on the include path
 * of the component only, with -idirafter, i.e. AFTER Open MPI's own include
 * directories: an installation that does ship the real header uses it.
 *
 * What it provides: the MPI_Fint <-> int conversion macros for the case where a
 * Fortran INTEGER has the size of a C int (true for Debian's build:
 * OMPI_SIZEOF_FORTRAN_INTEGER == SIZEOF_INT == 4).  In that case every
 * conversion is the identity and the temporary-array helpers are empty.  Any
 * other configuration is refused at compile time rather than silently wrong.
 * Only integer conversions are provided; the Fortran LOGICAL helpers are used
 * by the Fortran bindings alone, never by a coll component.
 */
#ifndef OMPI_FORTRAN_BASE_FINT_2_INT_H
#define OMPI_FORTRAN_BASE_FINT_2_INT_H

#include "ompi_config.h"

#if !defined(OMPI_SIZEOF_FORTRAN_INTEGER) || !defined(SIZEOF_INT)
#error "loom compat fint_2_int.h: OMPI_SIZEOF_FORTRAN_INTEGER / SIZEOF_INT not defined (ompi_config.h missing?)"
#elif OMPI_SIZEOF_FORTRAN_INTEGER != SIZEOF_INT
#error "loom compat fint_2_int.h: Fortran INTEGER is not a C int in this Open MPI; install Open MPI's real ompi/mpi/fortran/base/fint_2_int.h"
#endif

/* Single values. */
#define OMPI_INT_2_FINT(a) a
#define OMPI_FINT_2_INT(a) a
#define OMPI_PFINT_2_PINT(a) a

/* Temporary-copy helpers of the Fortran bindings: nothing to copy. */
#define OMPI_ARRAY_NAME_DECL(a)
#define OMPI_2_DIM_ARRAY_NAME_DECL(a, dim2)
#define OMPI_SINGLE_NAME_DECL(a)
#define OMPI_ARRAY_NAME_CONVERT(a) a
#define OMPI_SINGLE_NAME_CONVERT(a) a
#define OMPI_ARRAY_FINT_2_INT_ALLOC(in, n)
#define OMPI_ARRAY_FINT_2_INT(in, n)
#define OMPI_2_DIM_ARRAY_FINT_2_INT(in, n, dim2)
#define OMPI_ARRAY_FINT_2_INT_CLEANUP(in)
#define OMPI_SINGLE_FINT_2_INT(in)
#define OMPI_SINGLE_INT_2_FINT(in)
#define OMPI_ARRAY_INT_2_FINT(in, n)

#endif /* OMPI_FORTRAN_BASE_FINT_2_INT_H */
