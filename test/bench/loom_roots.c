/*
 * loom_roots: how a rooted collective's time depends on the root (Zhu et al., section 4
 * reports min / median / max over roots).  For each size and each root, times bcast or
 * reduce on three communicators of the same job:
 *
 *   "loom"   loom as selected by default (auto), or forced with --alg NAME;
 *   "tuned"  the communicator preference "tuned,^loom";
 *   "han"    the communicator preference "han,^loom" (Open MPI's hierarchical component).
 *
 * A sample is the maximum over ranks of (time of `iters` back-to-back calls) / iters
 * after a barrier; rounds are interleaved over communicators and roots, and the
 * median over rounds is kept per (communicator, root).  Reported per size and
 * communicator: min, median and max over the roots, max / min, and the median's ratio
 * to tuned's.  Every first call per (communicator, root) is checked (bcast: the
 * root's pattern everywhere; reduce: the exact sum at the root), and loom's counters
 * must move on "loom" only.
 *
 *   loom_roots -c bcast|reduce [-s SIZES] [-i ITERS] [-r ROUNDS] [--alg NAME] [--csv FILE]
 *   SIZES: comma-separated byte counts (default 8,1024,65536,1048576)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "../mpi/loom_test_util.h"

#define NCOMM 3
static const char *comm_name[NCOMM] = {"loom", "tuned", "han"};
static const char *comm_pref[NCOMM] = {"loom", "tuned,^loom", "han,^loom"};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t) n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    int rank, size, iters = 50, rounds = 5, is_bcast = 1, errors = 0;
    const char *sizes_arg = "8,1024,65536,1048576", *alg = NULL, *csv = NULL;
    long sizes[64];
    int nsizes = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; ++i) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (0 == strcmp(argv[i], "-c") && v) { is_bcast = 0 != strcmp(v, "reduce"); ++i; }
        else if (0 == strcmp(argv[i], "-s") && v) { sizes_arg = v; ++i; }
        else if (0 == strcmp(argv[i], "-i") && v) { iters = atoi(v); ++i; }
        else if (0 == strcmp(argv[i], "-r") && v) { rounds = atoi(v); ++i; }
        else if (0 == strcmp(argv[i], "--alg") && v) { alg = v; ++i; }
        else if (0 == strcmp(argv[i], "--csv") && v) { csv = v; ++i; }
        else {
            if (0 == rank) fprintf(stderr, "usage: loom_roots -c bcast|reduce [-s SIZES] [-i ITERS] [-r ROUNDS] [--alg NAME] [--csv FILE]\n");
            MPI_Finalize();
            return 2;
        }
    }
    for (const char *p = sizes_arg; *p && nsizes < 64;) {
        char *end;
        sizes[nsizes++] = strtol(p, &end, 10);
        p = ',' == *end ? end + 1 : end;
        if (end == p && ',' != *end) break;
    }
    if (iters < 1) iters = 1;
    if (rounds < 1) rounds = 1;
    if (lt_init() <= 0) {
        if (0 == rank) fprintf(stderr, "loom_roots: loom is not loaded\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const lt_coll_t coll = is_bcast ? LT_BCAST : LT_REDUCE;
    if (NULL != alg && MPI_SUCCESS != lt_cvar_write_str(is_bcast ? "coll_loom_bcast_algorithm"
                                                                  : "coll_loom_reduce_algorithm", alg)) {
        if (0 == rank) fprintf(stderr, "loom_roots: cannot force %s\n", alg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm comms[NCOMM];
    for (int c = 0; c < NCOMM; ++c) {
        lt_dup_with_pref(MPI_COMM_WORLD, comm_pref[c], &comms[c]);
    }

    long maxn = 0;
    for (int k = 0; k < nsizes; ++k) maxn = sizes[k] / 8 > maxn ? sizes[k] / 8 : maxn;
    if (maxn < 1) maxn = 1;
    double *sbuf = malloc((size_t) maxn * sizeof(double)), *rbuf = malloc((size_t) maxn * sizeof(double));
    double *samples = malloc((size_t) rounds * sizeof(double));
    double *per_root = malloc((size_t) NCOMM * size * sizeof(double));
    double *t = malloc((size_t) NCOMM * size * rounds * sizeof(double));
    FILE *cf = NULL;
    if (0 == rank && NULL != csv) {
        cf = fopen(csv, "w");
        if (cf) fprintf(cf, "collective,np,bytes,comm,root,median_us\n");
    }
    if (0 == rank) {
        printf("loom_roots: %s, np=%d, %d calls per sample, %d rounds; loom: %s\n", is_bcast ? "bcast" : "reduce",
               size, iters, rounds, NULL != alg ? alg : "auto");
        printf("%9s  %-6s %10s %10s %10s %8s %9s   %s\n", "bytes", "comm", "min us", "median us", "max us",
               "max/min", "vs tuned", "loom served");
    }

    for (int k = 0; k < nsizes; ++k) {
        int n = (int) (sizes[k] / 8 > 0 ? sizes[k] / 8 : 1);
        unsigned long long served[LT_MAX_ALGS] = {0};
        for (int r = 0; r < rounds; ++r) {
            for (int c = 0; c < NCOMM; ++c) {
                for (int root = 0; root < size; ++root) {
                    int cc = (c + r) % NCOMM;
                    MPI_Comm comm = comms[cc];
                    lt_counts_t b, a;
                    lt_read(coll, &b);
                    if (0 == r) { /* one checked call */
                        for (int i = 0; i < n; ++i) sbuf[i] = rank == root ? root + i % 13 : -1.0;
                        for (int i = 0; i < n; ++i) rbuf[i] = -2.0;
                        if (is_bcast) {
                            MPI_Bcast(sbuf, n, MPI_DOUBLE, root, comm);
                            for (int i = 0; i < n; ++i) {
                                if (sbuf[i] != root + i % 13) { errors++; break; }
                            }
                        } else {
                            for (int i = 0; i < n; ++i) sbuf[i] = rank + i % 13;
                            MPI_Reduce(sbuf, rbuf, n, MPI_DOUBLE, MPI_SUM, root, comm);
                            for (int i = 0; rank == root && i < n; ++i) {
                                if (rbuf[i] != (double) size * (size - 1) / 2 + (double) size * (i % 13)) { errors++; break; }
                            }
                        }
                    }
                    MPI_Barrier(comm);
                    double t0 = MPI_Wtime();
                    for (int it = 0; it < iters; ++it) {
                        if (is_bcast) MPI_Bcast(sbuf, n, MPI_DOUBLE, root, comm);
                        else MPI_Reduce(sbuf, rbuf, n, MPI_DOUBLE, MPI_SUM, root, comm);
                    }
                    double dt = (MPI_Wtime() - t0) / iters, mx;
                    MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, comm);
                    t[((size_t) cc * size + root) * rounds + r] = mx * 1e6;
                    lt_read(coll, &a);
                    unsigned long long moved = 0;
                    for (int q = 0; q < lt_nalgs(coll); ++q) {
                        moved += a.alg[q] - b.alg[q];
                        if (0 == cc) served[q] += a.alg[q] - b.alg[q];
                    }
                    /* loom's counters move on "loom" (unless it handed the call to tuned,
                     * which its fallback counter shows) and never on the others */
                    /* (han's own sub-communicators may be served by loom) */
                    if (1 == cc && moved > 0) errors++;
                }
            }
        }
        double tuned_med = 0;
        for (int c = 0; c < NCOMM; ++c) {
            for (int root = 0; root < size; ++root) {
                memcpy(samples, &t[((size_t) c * size + root) * rounds], (size_t) rounds * sizeof(double));
                per_root[c * size + root] = median(samples, rounds);
                if (cf) fprintf(cf, "%s,%d,%ld,%s,%d,%.3f\n", is_bcast ? "bcast" : "reduce", size, sizes[k],
                                comm_name[c], root, per_root[c * size + root]);
            }
        }
        for (int c = 0; c < NCOMM; ++c) {
            double v[4096];
            int m = size < 4096 ? size : 4096;
            memcpy(v, &per_root[c * size], (size_t) m * sizeof(double));
            double med = median(v, m);
            if (1 == c) tuned_med = med;
        }
        for (int c = 0; 0 == rank && c < NCOMM; ++c) {
            double v[4096];
            int m = size < 4096 ? size : 4096;
            char who[256] = "";
            memcpy(v, &per_root[c * size], (size_t) m * sizeof(double));
            double med = median(v, m);
            for (int q = 0; 0 == c && q < lt_nalgs(coll); ++q) {
                if (served[q]) {
                    size_t l = strlen(who);
                    snprintf(who + l, sizeof(who) - l, "%s%s", l ? "," : "", lt_alg_name(coll, q));
                }
            }
            if (0 == c && '\0' == who[0]) snprintf(who, sizeof(who), "previous component");
            printf("%9ld  %-6s %10.2f %10.2f %10.2f %8.2f %9.2f   %s\n", sizes[k], comm_name[c], v[0], med,
                   v[m - 1], v[0] > 0 ? v[m - 1] / v[0] : 0.0, tuned_med > 0 ? med / tuned_med : 0.0, who);
        }
        fflush(stdout);
    }
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("loom_roots: %s\n", all ? "CHECKS FAILED" : "all checks passed");
        if (cf) fclose(cf);
    }
    for (int c = 0; c < NCOMM; ++c) MPI_Comm_free(&comms[c]);
    free(sbuf); free(rbuf); free(samples); free(per_root); free(t);
    lt_fini();
    MPI_Finalize();
    return all ? 1 : 0;
}
