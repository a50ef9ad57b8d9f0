/*
 * loom under MPI_THREAD_MULTIPLE: several threads of every process create, use and free
 * communicators at the same time, each thread on its own parent (MPI allows collectives
 * on different communicators concurrently).  What the threads share inside loom: the
 * node map cache, the scratch buffer, the settings check, and the pool of freed node
 * segments (coll_loom_shm_pool), which two threads may offer from at once.  Each cycle of a thread: MPI_Comm_dup of its parent, allreduces of 1 and 100
 * ints, a barrier, a bcast of 128 ints from a varying root, all checked against closed
 * forms, then free.  loom's counters must show that it served the allreduces; rank 0
 * prints how many node segments were set up and taken over (run with
 * coll_loom_shm_setup_call 1, every communicator with a segment sets one up).
 *
 * Usage: test_threads [threads] [cycles] [segment]   (default 3 threads, 200 cycles; with
 * "segment", every process must have set up or taken over node segments)
 *        test_threads lower   (MPI_T_init_thread(MPI_THREAD_SINGLE) lowers Open MPI's thread
 *        level, then a communicator is created: loom must warn about it)
 * Exit status: 0 when every rank passed, 1 on any failure, 2 when the MPI library does
 * not provide MPI_THREAD_MULTIPLE or loom is not loaded.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "loom_test_util.h"

#define TT_MAX_THREADS 8

typedef struct {
    MPI_Comm parent;
    int cycles;
    int fails;
} tt_thread_t;

static int tt_check(MPI_Comm comm, int t, int c)
{
    int size, rank, fails = 0;
    int small = 0, big[100], b[128];
    const int root = (c + t) % 7;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    small = rank + t;
    MPI_Allreduce(MPI_IN_PLACE, &small, 1, MPI_INT, MPI_SUM, comm);
    fails += small != size * (size - 1) / 2 + size * t;
    for (int i = 0; i < 100; ++i) {
        big[i] = rank * i + c;
    }
    MPI_Allreduce(MPI_IN_PLACE, big, 100, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < 100; ++i) {
        fails += big[i] != i * size * (size - 1) / 2 + size * c;
    }
    MPI_Barrier(comm);
    for (int i = 0; i < 128; ++i) {
        b[i] = rank == root % size ? i * 3 + c : -1;
    }
    MPI_Bcast(b, 128, MPI_INT, root % size, comm);
    for (int i = 0; i < 128; ++i) {
        fails += b[i] != i * 3 + c;
    }
    return fails;
}

static void *tt_run(void *arg)
{
    tt_thread_t *th = arg;

    for (int c = 0; c < th->cycles; ++c) {
        MPI_Comm d;
        MPI_Comm_dup(th->parent, &d);
        th->fails += tt_check(d, c % 5, c);
        MPI_Comm_free(&d);
    }
    return NULL;
}

/* A program that lowers the thread level through MPI_T (Open MPI takes MPI_T_init_thread's
 * level as the library's); the next communicator's creation must make loom warn. */
static int tt_lower(void)
{
    int level, rank, sum = 0;
    MPI_Comm d;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &level);
    MPI_Query_thread(&level);
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_rank(d, &rank);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, d);
    MPI_Comm_free(&d);
    MPI_T_finalize();
    if (0 == rank) {
        printf("test_threads lower: thread level %d after MPI_T_init_thread, allreduce %d\n", level, sum);
    }
    MPI_Finalize();
    return 0;
}

int main(int argc, char **argv)
{
    int provided, rank, size, nthreads = 3, cycles = 200, fails = 0, total = 0, want_segment = 0;
    tt_thread_t th[TT_MAX_THREADS];
    pthread_t tid[TT_MAX_THREADS];
    lt_counts_t before, after;
    unsigned long long served = 0, created = 0, reused = 0;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && 0 == strcmp(argv[1], "lower")) {
        return tt_lower();
    }
    if (argc > 1) {
        nthreads = atoi(argv[1]);
    }
    if (argc > 2) {
        cycles = atoi(argv[2]);
    }
    if (argc > 3) {
        want_segment = 0 == strcmp(argv[3], "segment");
    }
    if (nthreads < 1 || nthreads > TT_MAX_THREADS || cycles < 1) {
        if (0 == rank) {
            fprintf(stderr, "usage: test_threads [threads 1..%d] [cycles]\n", TT_MAX_THREADS);
        }
        MPI_Finalize();
        return 2;
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) {
            fprintf(stderr, "test_threads: FAIL: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        }
        MPI_Finalize();
        return 2;
    }
    if (lt_init() <= 0) {
        if (0 == rank) {
            fprintf(stderr, "test_threads: FAIL: loom's MPI_T counters are missing (not loaded?)\n");
        }
        MPI_Finalize();
        return 2;
    }
    /* the MPI_T session must leave the thread level as it was (lt_mpit_init): Open MPI
     * 4.1 takes MPI_T_init_thread's level as the library's, and its point-to-point layer
     * is not thread-safe below MPI_THREAD_MULTIPLE */
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) {
            fprintf(stderr, "test_threads: FAIL: thread level %d after MPI_T_init_thread\n", provided);
        }
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    lt_read(LT_ALLREDUCE, &before);
    /* the parents are created here, in the same order on every rank */
    for (int t = 0; t < nthreads; ++t) {
        MPI_Comm_dup(MPI_COMM_WORLD, &th[t].parent);
        th[t].cycles = cycles;
        th[t].fails = 0;
    }
    for (int t = 0; t < nthreads; ++t) {
        pthread_create(&tid[t], NULL, tt_run, &th[t]);
    }
    for (int t = 0; t < nthreads; ++t) {
        pthread_join(tid[t], NULL);
        if (th[t].fails > 0) {
            fprintf(stderr, "test_threads: rank %d: FAIL: thread %d: %d wrong values\n", rank, t, th[t].fails);
        }
        fails += th[t].fails;
        MPI_Comm_free(&th[t].parent);
    }
    lt_read(LT_ALLREDUCE, &after);
    for (int a = 0; a < lt_nalgs(LT_ALLREDUCE); ++a) {
        served += after.alg[a] - before.alg[a];
    }
    /* two allreduces per cycle and thread, all loom's */
    if (served < 2ull * (unsigned long long) nthreads * (unsigned long long) cycles) {
        fprintf(stderr, "test_threads: rank %d: FAIL: loom served %llu allreduces, expected at least %llu\n",
                rank, served, 2ull * (unsigned long long) nthreads * (unsigned long long) cycles);
        fails++;
    }
    lt_shm_counter(LT_SHM_SEGMENTS_CREATED, &created);
    lt_shm_counter(LT_SHM_SEGMENTS_REUSED, &reused);
    if (want_segment && 0 == created + reused) {
        fprintf(stderr, "test_threads: rank %d: FAIL: no node segment was set up or taken over\n", rank);
        fails++;
    }
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_threads: np=%d threads=%d cycles=%d, on rank 0: loom served %llu allreduces, node "
               "segments %llu set up and %llu taken over: %s\n", size, nthreads, cycles, served, created,
               reused, total ? "FAIL" : "ok");
    }
    lt_fini();
    MPI_Finalize();
    return total ? 1 : 0;
}
