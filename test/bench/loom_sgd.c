/*
 * loom_sgd: matrix factorisation trained with data-parallel SGD (Iakymchuk et al. section V.a),
 * the workload the stale-synchronous allreduce is for.
 *
 * Synthetic low-rank ratings are generated here (no download): a users x items matrix
 * U* V*^T of rank K plus noise, each rank holding its own sample of observed entries.
 * Every rank keeps the whole model (U, V) and the sum of all the updates it has made;
 * in each iteration it adds the step of a minibatch gradient to that sum, MPI_Allreduce
 * adds up the sums of all ranks, and the model is the start plus their average: with
 * fresh contributions exactly synchronous data-parallel SGD.  With --slack N the
 * allreduce runs on a communicator with the info key loom_allreduce_slack = N: a rank
 * goes on with the others' sums up to N iterations old instead of waiting for the
 * slowest, as with a stale-synchronous parameter server (Iakymchuk et al.'s reference [3]).
 * (Running sums, not increments: a stale contribution that the allreduce uses in several
 * iterations is then counted once, not applied again each time.)  --slow R:US makes rank R sleep US
 * microseconds per iteration (a straggler); with --rotate L the straggler moves on every
 * L iterations (rank (it / L + R) mod P), like pauses that hit one node after another.
 * A straggler that never moves bounds every rank's pace (the others run at most N
 * iterations ahead of it), so SSP gains only that head start; a moving one is where it
 * helps: a synchronous allreduce waits for whichever rank is slow in each iteration.
 *
 * Output: per rank and iteration, the wall-clock time since the start and the RMSE of
 * the rank's model on held-out ratings (the same on every rank), as CSV lines
 * "slack,rank,iter,seconds,rmse" on rank 0 (--csv FILE), and a summary: for each rank
 * the time of its last iteration and when it first reached --target.
 *
 * Usage: loom_sgd [--slack N|off] [--iters I] [--slow R:US] [--rotate L] [--target RMSE]
 *                 [--users M] [--items N] [--rank K] [--batch B] [--lr X] [--csv FILE]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

typedef struct {
    int i, j;
    double r;
} rating_t;

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static double urand(void) { return (double) (rnd() >> 11) / 9007199254740992.0; }
static double nrand(void)
{
    double u = urand() + 1e-300, v = urand();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

int main(int argc, char **argv)
{
    int M = 400, N = 400, K = 10, iters = 300, batch = 1000, slow = -1, slow_us = 0, rotate = 0, me, P;
    double lr = 0.5, lambda = 0.001, noise = 0.1, target = 0.2;
    const char *slack = "off", *csv = NULL;
    MPI_Comm comm;

    MPI_Init(&argc, &argv);
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--slack") && a + 1 < argc) slack = argv[++a];
        else if (!strcmp(argv[a], "--iters") && a + 1 < argc) iters = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--slow") && a + 1 < argc) sscanf(argv[++a], "%d:%d", &slow, &slow_us);
        else if (!strcmp(argv[a], "--target") && a + 1 < argc) target = atof(argv[++a]);
        else if (!strcmp(argv[a], "--rotate") && a + 1 < argc) rotate = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--users") && a + 1 < argc) M = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--items") && a + 1 < argc) N = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--rank") && a + 1 < argc) K = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--batch") && a + 1 < argc) batch = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--lr") && a + 1 < argc) lr = atof(argv[++a]);
        else if (!strcmp(argv[a], "--csv") && a + 1 < argc) csv = argv[++a];
        else {
            fprintf(stderr, "usage: loom_sgd [--slack N|off] [--iters I] [--slow R:US] [--rotate L] [--target RMSE] "
                            "[--users M] [--items N] [--rank K] [--batch B] [--lr X] [--csv FILE]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "loom_allreduce_slack", slack);
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
        MPI_Info_free(&info);
    }
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &P);

    /* the true factors (the same on every rank), the model's start, the data */
    const size_t msize = (size_t) (M + N) * (size_t) K;
    double *truth = malloc(sizeof(double) * msize), *model = malloc(sizeof(double) * msize);
    double *sum = malloc(sizeof(double) * msize), *grad = malloc(sizeof(double) * msize);
    double *acc = calloc(msize, sizeof(double)), *start = malloc(sizeof(double) * msize);
    const int nlocal = 20 * batch, ntest = 2000;
    rating_t *local = malloc(sizeof(rating_t) * (size_t) nlocal), *test = malloc(sizeof(rating_t) * ntest);
    double *elog = malloc(sizeof(double) * (size_t) iters), *tlog = malloc(sizeof(double) * (size_t) iters);

    rng_state = 12345;
    for (size_t x = 0; x < msize; x++) truth[x] = nrand() / sqrt(sqrt((double) K));
    for (size_t x = 0; x < msize; x++) start[x] = model[x] = 0.1 * nrand() / sqrt((double) K);
#define U(m, i) ((m) + (size_t) (i) * (size_t) K)
#define V(m, j) ((m) + ((size_t) M + (size_t) (j)) * (size_t) K)
    for (int t = 0; t < ntest; t++) {
        rating_t *q = &test[t];
        double d = 0;
        q->i = (int) (rnd() % (uint64_t) M);
        q->j = (int) (rnd() % (uint64_t) N);
        for (int k = 0; k < K; k++) d += U(truth, q->i)[k] * V(truth, q->j)[k];
        q->r = d + noise * nrand();
    }
    rng_state = 777 + 1000003ull * (uint64_t) (me + 1);
    for (int t = 0; t < nlocal; t++) {
        rating_t *q = &local[t];
        double d = 0;
        q->i = (int) (rnd() % (uint64_t) M);
        q->j = (int) (rnd() % (uint64_t) N);
        for (int k = 0; k < K; k++) d += U(truth, q->i)[k] * V(truth, q->j)[k];
        q->r = d + noise * nrand();
    }

    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        if (slow >= 0 && me == (rotate > 0 ? (it / rotate + slow) % P : slow)) usleep((useconds_t) slow_us);
        memset(grad, 0, sizeof(double) * msize);
        for (int b = 0; b < batch; b++) {
            const rating_t *q = &local[rnd() % (uint64_t) nlocal];
            double *u = U(model, q->i), *v = V(model, q->j), e = q->r;
            for (int k = 0; k < K; k++) e -= u[k] * v[k];
            for (int k = 0; k < K; k++) {
                U(grad, q->i)[k] += -e * v[k] + lambda * u[k];
                V(grad, q->j)[k] += -e * u[k] + lambda * v[k];
            }
        }
        /* each row is touched about batch / M times a minibatch */
        for (size_t x = 0; x < msize; x++) acc[x] -= lr * grad[x] * (double) M / (double) batch;
        MPI_Allreduce(acc, sum, (int) msize, MPI_DOUBLE, MPI_SUM, comm);
        for (size_t x = 0; x < msize; x++) model[x] = start[x] + sum[x] / (double) P;
        double se = 0;
        for (int t = 0; t < ntest; t++) {
            double d = test[t].r;
            for (int k = 0; k < K; k++) d -= U(model, test[t].i)[k] * V(model, test[t].j)[k];
            se += d * d;
        }
        elog[it] = sqrt(se / ntest);
        tlog[it] = MPI_Wtime() - t0;
    }

    /* the logs to rank 0 (on WORLD: the slack communicator is for the training only) */
    double *all_e = NULL, *all_t = NULL;
    if (0 == me) {
        all_e = malloc(sizeof(double) * (size_t) iters * (size_t) P);
        all_t = malloc(sizeof(double) * (size_t) iters * (size_t) P);
    }
    MPI_Gather(elog, iters, MPI_DOUBLE, all_e, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(tlog, iters, MPI_DOUBLE, all_t, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (0 == me) {
        FILE *f = NULL != csv ? fopen(csv, "a") : NULL;
        printf("loom_sgd: P=%d users=%d items=%d rank=%d model=%zu doubles batch=%d lr=%g slack=%s slow=%d:%dus rotate=%d\n",
               P, M, N, K, msize, batch, lr, slack, slow, slow_us, rotate);
        printf("%5s %10s %10s %12s %12s\n", "rank", "iters", "seconds", "final_rmse", "t_target_s");
        for (int r = 0; r < P; r++) {
            double tt = -1;
            for (int it = 0; it < iters; it++) {
                if (tt < 0 && all_e[(size_t) r * iters + it] <= target) tt = all_t[(size_t) r * iters + it];
                if (NULL != f)
                    fprintf(f, "%s,%d,%d,%.6f,%.6f\n", slack, r, it + 1, all_t[(size_t) r * iters + it],
                            all_e[(size_t) r * iters + it]);
            }
            printf("%5d %10d %10.3f %12.5f %12.3f\n", r, iters, all_t[(size_t) r * iters + iters - 1],
                   all_e[(size_t) r * iters + iters - 1], tt);
        }
        if (NULL != f) fclose(f);
    }
    MPI_Comm_free(&comm);
    free(truth); free(model); free(sum); free(grad); free(acc); free(start); free(local); free(test); free(elog); free(tlog);
    free(all_e); free(all_t);
    MPI_Finalize();
    return 0;
}
