/*
 * MPI 4's persistent collectives under their standard names in every test.
 * Open MPI 5.0 has them as MPI_<Coll>_init (while its MPI_VERSION still says 3);
 * Open MPI 4.1 has the same functions as MPIX_<Coll>_init in its pcollreq extension.
 */
#ifndef LOOM_TEST_PCOLL_H
#define LOOM_TEST_PCOLL_H

#include <mpi.h>

#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#include <mpi-ext.h>
#if !defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#error "the tests need persistent collectives: MPI 4, or Open MPI 4.1's pcollreq extension (mpi-ext.h)"
#endif
#define MPI_Allgather_init MPIX_Allgather_init
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Alltoall_init MPIX_Alltoall_init
#define MPI_Alltoallv_init MPIX_Alltoallv_init
#define MPI_Barrier_init MPIX_Barrier_init
#define MPI_Bcast_init MPIX_Bcast_init
#define MPI_Exscan_init MPIX_Exscan_init
#define MPI_Reduce_init MPIX_Reduce_init
#define MPI_Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define MPI_Reduce_scatter_init MPIX_Reduce_scatter_init
#define MPI_Scan_init MPIX_Scan_init
#endif

#endif /* LOOM_TEST_PCOLL_H */
