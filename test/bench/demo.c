/*
 * demo: an ordinary MPI program, with nothing specific to loom in it.
 *
 * Conjugate gradients on a distributed 1-D Poisson system (tridiagonal, shifted so
 * it is well conditioned), the kind of solver loop that is dominated by small
 * allreduces: every iteration does two 1-double MPI_Allreduce (dot products), one
 * 4-double MPI_Allreduce (monitoring sums) and a 1-double MPI_MAX (max-norm of the
 * residual), and every 10 iterations an MPI_Barrier.  The halo exchange uses MPI_Sendrecv.
 *
 *   demo [iterations] [local size]      (defaults 20000, 256; 30 iterations per solve)
 *
 * Rank 0 prints the total time and a checksum of the solution.  The checksum
 * depends on the order in which the reductions add up floating-point numbers, so
 * two MPI collective implementations agree on it to about 1e-12 relative, not
 * bit for bit; it is printed with 12 significant digits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

static int rank, size;

/* y = A x for A = tridiag(-1, 2 + shift, -1), with halo exchange. */
static void matvec(const double *x, double *y, int n, double shift)
{
    double left = 0.0, right = 0.0;
    int lo = rank > 0 ? rank - 1 : MPI_PROC_NULL, hi = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    MPI_Sendrecv(&x[n - 1], 1, MPI_DOUBLE, hi, 1, &left, 1, MPI_DOUBLE, lo, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&x[0], 1, MPI_DOUBLE, lo, 2, &right, 1, MPI_DOUBLE, hi, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++) {
        double l = i > 0 ? x[i - 1] : left, r = i < n - 1 ? x[i + 1] : right;
        y[i] = (2.0 + shift) * x[i] - l - r;
    }
}

static double dot(const double *a, const double *b, int n)
{
    double local = 0.0, global = 0.0;
    for (int i = 0; i < n; i++) local += a[i] * b[i];
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return global;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    int n = argc > 2 ? atoi(argv[2]) : 256;
    if (iters < 1) iters = 1;
    if (n < 2) n = 2;
    const double shift = 0.05;

    double *x = malloc(sizeof(double) * n), *b = malloc(sizeof(double) * n);
    double *r = malloc(sizeof(double) * n), *p = malloc(sizeof(double) * n), *q = malloc(sizeof(double) * n);
    const int per_solve = 30; /* fixed CG iterations per right-hand side: far from round-off level */
    int nsolves = (iters + per_solve - 1) / per_solve, done = 0, barriers = 0;
    double checksum = 0.0, monitor = 0.0;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int sv = 0; sv < nsolves; sv++) {
        for (int i = 0; i < n; i++) {
            long g = (long) rank * n + i;
            b[i] = sin(0.001 * (double) g + 0.1 * sv) + 0.5 * cos(0.0037 * (double) g - 0.2 * sv);
            x[i] = 0.0;
            r[i] = b[i];
            p[i] = b[i];
        }
        double rr = dot(r, r, n);
        for (int k = 0; k < per_solve && done < iters; k++, done++) {
            matvec(p, q, n, shift);
            double alpha = rr / dot(p, q, n);
            for (int i = 0; i < n; i++) {
                x[i] += alpha * p[i];
                r[i] -= alpha * q[i];
            }
            double rr_new = dot(r, r, n);
            /* monitoring, 4 doubles in one call: sum x, sum x^2, sum |r|, sum p */
            double local[4] = {0, 0, 0, 0}, global[4];
            for (int i = 0; i < n; i++) {
                local[0] += x[i];
                local[1] += x[i] * x[i];
                local[2] += fabs(r[i]);
                local[3] += p[i];
            }
            MPI_Allreduce(local, global, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            monitor += global[1];
            /* stopping test on the max-norm of the residual (logged, the solve count is fixed) */
            double rmax_local = 0.0, rmax;
            for (int i = 0; i < n; i++) {
                rmax_local = fmax(rmax_local, fabs(r[i]));
            }
            MPI_Allreduce(&rmax_local, &rmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            monitor += rmax;
            if (done % 10 == 9) {
                MPI_Barrier(MPI_COMM_WORLD);
                barriers++;
            }
            double beta = rr_new / rr;
            rr = rr_new;
            for (int i = 0; i < n; i++) p[i] = r[i] + beta * p[i];
        }
        checksum += dot(x, x, n);
    }
    double t = MPI_Wtime() - t0, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    checksum += 1e-3 * monitor;
    if (rank == 0) {
        printf("demo: %d ranks, %d CG iterations (%d solves) on %ld unknowns\n", size, iters, nsolves, (long) n * size);
        printf("demo: %d MPI_Allreduce (1 or 4 doubles) and %d MPI_Barrier per rank\n", 3 * iters + 2 * nsolves,
               barriers);
        printf("time: %.6f s\n", tmax);
        printf("checksum: %.12e\n", checksum);
    }
    free(x);
    free(b);
    free(r);
    free(p);
    free(q);
    MPI_Finalize();
    return 0;
}
