/*
 * loom_commcost: what a short-lived communicator costs with loom and with tuned, in
 * one job.
 *
 *   loom_commcost [-n cycles] [-r rounds] [-c calls]
 *
 * A cycle: MPI_Comm_dup_with_info of MPI_COMM_WORLD with ompi_comm_coll_preference
 * "loom" (loom preferred) or "tuned,^loom" (loom excluded), `calls` (default 1)
 * MPI_Allreduce of one int, checked, and MPI_Comm_free.  Every round times `cycles`
 * (default 200) cycles of each variant, the two in an order that alternates by
 * round; a sample is the time per cycle, maximum over ranks.  Prints the median and
 * minimum per variant over the rounds (default 15) and loom's median over tuned's.
 * loom's MPI_T counters prove that loom served the allreduces on the "loom"
 * communicators (an algorithm counter or its fallback counter moves by one per call)
 * and none on the others.  Exit status 1 on a wrong sum or a failed proof.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "../mpi/loom_test_util.h"

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* loom's allreduce calls so far, by every counter (algorithms and fallback) */
static unsigned long long loom_calls(void)
{
    lt_counts_t c;
    unsigned long long n = 0;

    if (0 != lt_read(LT_ALLREDUCE, &c)) {
        return 0;
    }
    for (int k = 0; k < lt_nalgs(LT_ALLREDUCE); ++k) {
        n += c.alg[k];
    }
    return n + c.fallback;
}

/* `cycles` cycles with preference `pref`; returns the seconds per cycle (this rank) */
static double run_cycles(const char *pref, int cycles, int calls, int wsize, long *wrong)
{
    const double t0 = MPI_Wtime();

    for (int i = 0; i < cycles; ++i) {
        MPI_Comm c;
        int x = 1, y = 0;

        if (MPI_SUCCESS != lt_dup_with_pref(MPI_COMM_WORLD, pref, &c)) {
            ++*wrong;
            return 0.0;
        }
        for (int k = 0; k < calls; ++k) {
            MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, c);
            *wrong += y != wsize;
        }
        MPI_Comm_free(&c);
    }
    return (MPI_Wtime() - t0) / cycles;
}

int main(int argc, char **argv)
{
    static const char *const prefs[2] = {"loom", "tuned,^loom"};
    int cycles = 200, rounds = 15, calls = 1, wrank, wsize, bad = 0, any;
    long wrong = 0;
    unsigned long long served[2] = {0, 0};
    double *samples[2];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; ++i) {
        if (i + 1 < argc && 0 == strcmp(argv[i], "-n")) {
            cycles = atoi(argv[++i]);
        } else if (i + 1 < argc && 0 == strcmp(argv[i], "-r")) {
            rounds = atoi(argv[++i]);
        } else if (i + 1 < argc && 0 == strcmp(argv[i], "-c")) {
            calls = atoi(argv[++i]);
        } else {
            bad = 1;
        }
    }
    if (bad || cycles < 1 || rounds < 1 || calls < 1) {
        if (0 == wrank) {
            fprintf(stderr, "usage: %s [-n cycles] [-r rounds] [-c calls]\n", argv[0]);
        }
        MPI_Finalize();
        return 2;
    }
    if (wsize < 2 || lt_init() <= 0) {
        if (0 == wrank) {
            fprintf(stderr, "loom_commcost: needs 2 ranks or more and loom loaded\n");
        }
        MPI_Finalize();
        return 2;
    }
    samples[0] = malloc((size_t) rounds * sizeof(double));
    samples[1] = malloc((size_t) rounds * sizeof(double));

    /* one untimed cycle of each: first-use costs of the process (the PMIx lookups of
     * loom's node map, the components' first communicator) are not the cycles' */
    (void) run_cycles(prefs[0], 1, calls, wsize, &wrong);
    (void) run_cycles(prefs[1], 1, calls, wsize, &wrong);
    for (int r = 0; r < rounds; ++r) {
        for (int vv = 0; vv < 2; ++vv) {
            const int v = (r + vv) % 2;
            unsigned long long before;
            double t, tmax;

            MPI_Barrier(MPI_COMM_WORLD);
            before = loom_calls();
            t = run_cycles(prefs[v], cycles, calls, wsize, &wrong);
            served[v] += loom_calls() - before;
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            samples[v][r] = tmax;
        }
    }

    if (served[0] != (unsigned long long) rounds * cycles * calls || 0 != served[1] || wrong) {
        fprintf(stderr, "loom_commcost: FAIL rank %d: loom served %llu of %lld calls on the "
                        "loom communicators and %llu on the others; %ld wrong sums\n",
                wrank, served[0], (long long) rounds * cycles * calls, served[1], wrong);
        bad = 1;
    }
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (0 == wrank) {
        double med[2];

        for (int v = 0; v < 2; ++v) {
            qsort(samples[v], (size_t) rounds, sizeof(double), cmp_double);
            med[v] = samples[v][rounds / 2];
            printf("%-12s median %8.2f us  min %8.2f us per dup + %d allreduce + free\n",
                   prefs[v], med[v] * 1e6, samples[v][0] * 1e6, calls);
        }
        printf("np %d, %d rounds of %d cycles: loom / tuned %.2f%s\n", wsize, rounds, cycles,
               med[0] / med[1], any ? "  (FAILED checks)" : "");
    }
    free(samples[0]);
    free(samples[1]);
    lt_fini();
    MPI_Finalize();
    return any ? 1 : 0;
}
