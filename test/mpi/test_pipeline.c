/*
 * loom: small collectives through the node segment that run ahead of each other.
 *
 * Every rank makes the same long random sequence of small calls on one communicator,
 * with nothing in between: runs of 8-63 bcasts from one root (the root may run up to
 * 31 calls ahead of its readers), runs of reduces to one root (the contributors may run
 * up to 31 calls ahead of the root), bcasts and reduces to random roots of both sizes
 * the segment treats differently (up to 2 KiB through the small slots and areas, above
 * through the large ones), small and larger allreduces (integer sum, double max) and
 * barriers.  Now and then a rank busy-waits for 5-40 us, so that each rank in turn
 * falls behind or runs ahead.  Each rank checks every result it gets against a closed
 * form at once (local work, no synchronisation).
 *
 * The communicators: WORLD, WORLD with its rank order reversed, and WORLD without rank
 * 0 (a node with one rank fewer).  The test forces `hierarchical` for bcast, reduce,
 * allreduce and barrier through loom's control variables and checks loom's counters:
 * each collective's hierarchical counter moved by the number of its calls, and on
 * ranks that share their node with another rank of the communicator, the shared-memory
 * node-phase counter moved by the number of calls (on several nodes, bcasts of up to
 * 256 B may not count: they keep point-to-point node phases); run it with
 * coll_loom_shm_setup_call 1, so that the first call sets the segment up.
 *
 * Usage: test_pipeline [calls]   (default 3000 per communicator)
 * Exit status: 0 when every rank passed, 1 on any failure, 2 when loom is not loaded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "loom_test_util.h"

#define TP_MAX_COUNT 1000 /* 4000 B of ints, 8000 B of doubles: above the small slots' 2 KiB, within the 8 KiB slot */

enum { TP_BCAST, TP_REDUCE, TP_ALLREDUCE_INT, TP_ALLREDUCE_MAX, TP_BARRIER, TP_KINDS };
static const lt_coll_t tp_coll[TP_KINDS] = {LT_BCAST, LT_REDUCE, LT_ALLREDUCE, LT_ALLREDUCE, LT_BARRIER};
static const lt_coll_t tp_forced[] = {LT_BCAST, LT_REDUCE, LT_ALLREDUCE, LT_BARRIER};
#define TP_NFORCED ((int) (sizeof(tp_forced) / sizeof(tp_forced[0])))

/* rank r's element i in call k */
static int tp_val(long k, int r, int i)
{
    return (int) (lt_mix64(((uint64_t) k << 24) ^ ((uint64_t) r << 12) ^ (uint64_t) i) % 2001) - 1000;
}

/* the sum over ranks 0..size-1 of element i in call k */
static int tp_sum(long k, int size, int i)
{
    int sum = 0;
    for (int r = 0; r < size; ++r) {
        sum += tp_val(k, r, i);
    }
    return sum;
}

/* the first i in [0, n) where got[i] is not want(k, arg, i), or -1 */
static int tp_first_bad(const int *got, int n, long k, int arg, int (*want)(long, int, int))
{
    for (int i = 0; i < n; ++i) {
        if (got[i] != want(k, arg, i)) {
            return i;
        }
    }
    return -1;
}

typedef struct {
    int kind, root, count;
} tp_call_t;

/* The sequence, the same on every rank: runs of 8-63 calls of one rooted kind to one
 * root, between them random calls. */
static void tp_plan(tp_call_t *c, long ncalls, int size, uint64_t seed)
{
    long k = 0;
    while (k < ncalls) {
        uint64_t h = lt_mix64(seed + (uint64_t) k * 7919u);
        if (0 == h % 4) {
            const int kind = 0 == (h >> 8) % 2 ? TP_BCAST : TP_REDUCE, root = (int) ((h >> 16) % (uint64_t) size);
            const long run = 8 + (long) ((h >> 24) % 56); /* past the segment's 32 small slots */
            /* up to 256 B, or up to the small slots' 2 KiB */
            const int most = 0 == (h >> 40) % 2 ? 64 : 512;
            for (long j = 0; j < run && k < ncalls; ++j, ++k) {
                uint64_t g = lt_mix64(h + (uint64_t) j);
                c[k] = (tp_call_t){kind, root, 1 + (int) (g % (uint64_t) most)};
            }
            continue;
        }
        c[k].kind = (int) ((h >> 8) % TP_KINDS);
        c[k].root = (int) ((h >> 16) % (uint64_t) size);
        c[k].count = 1 + (int) ((h >> 40) % (0 == (h >> 32) % 4 ? TP_MAX_COUNT : 64));
        ++k;
    }
}

static void tp_spin(double us)
{
    const double t0 = lt_mono_time();
    while ((lt_mono_time() - t0) * 1e6 < us) {
    }
}

static int wrank;

/* One communicator: the sequence, every result checked.  Returns failures. */
static long tp_run(MPI_Comm comm, const char *label, long ncalls, uint64_t seed)
{
    int rank, size, fails = 0, node_mates = 0, node_rank = 0, nnodes = 0, first;
    long calls[TP_KINDS] = {0}, small_bcasts = 0;
    int ibuf[TP_MAX_COUNT], ibuf2[TP_MAX_COUNT];
    double dbuf[TP_MAX_COUNT];
    lt_counts_t before[TP_NFORCED], after[TP_NFORCED];
    unsigned long long shm0 = 0, shm1 = 0;
    tp_call_t *plan = malloc((size_t) ncalls * sizeof(*plan));
    MPI_Comm node;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_mates);
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_free(&node);
    first = 0 == node_rank;
    MPI_Allreduce(&first, &nnodes, 1, MPI_INT, MPI_SUM, comm);
    if (NULL == plan) {
        lt_fail(wrank, "%s: out of memory", label);
        return 1;
    }
    tp_plan(plan, ncalls, size, seed);
    for (int c = 0; c < TP_NFORCED; ++c) {
        lt_read(tp_forced[c], &before[c]);
    }
    if (0 != lt_shm_node_phases(&shm0)) {
        lt_fail(wrank, "%s: no coll_loom_shm_node_phases counter", label);
        ++fails;
    }

    for (long k = 0; k < ncalls; ++k) {
        const tp_call_t *c = &plan[k];
        const uint64_t h = lt_mix64(seed ^ ((uint64_t) k << 20) ^ (uint64_t) rank);
        int bad;

        if (0 == h % 23) {
            tp_spin(5.0 + (double) ((h >> 8) % 36));
        }
        ++calls[c->kind];
        small_bcasts += TP_BCAST == c->kind && c->count * (int) sizeof(int) <= 256;
        switch (c->kind) {
        case TP_BCAST:
            for (int i = 0; i < c->count; ++i) {
                ibuf[i] = rank == c->root ? tp_val(k, c->root, i) : 0x5a5a5a5a;
            }
            MPI_Bcast(ibuf, c->count, MPI_INT, c->root, comm);
            if ((bad = tp_first_bad(ibuf, c->count, k, c->root, tp_val)) >= 0) {
                lt_fail(wrank, "%s call %ld: bcast of %d ints from %d: [%d] = %d, expected %d", label, k, c->count,
                        c->root, bad, ibuf[bad], tp_val(k, c->root, bad));
                ++fails;
            }
            break;
        case TP_REDUCE:
            for (int i = 0; i < c->count; ++i) {
                ibuf[i] = tp_val(k, rank, i);
                ibuf2[i] = 0x5a5a5a5a;
            }
            MPI_Reduce(ibuf, ibuf2, c->count, MPI_INT, MPI_SUM, c->root, comm);
            if (rank == c->root && (bad = tp_first_bad(ibuf2, c->count, k, size, tp_sum)) >= 0) {
                lt_fail(wrank, "%s call %ld: reduce of %d ints to %d: [%d] = %d, expected %d", label, k, c->count,
                        c->root, bad, ibuf2[bad], tp_sum(k, size, bad));
                ++fails;
            }
            for (int i = 0; rank != c->root && i < c->count; ++i) {
                if (0x5a5a5a5a != ibuf2[i]) {
                    lt_fail(wrank, "%s call %ld: a non-root's receive buffer changed", label, k);
                    ++fails;
                    break;
                }
            }
            break;
        case TP_ALLREDUCE_INT:
            for (int i = 0; i < c->count; ++i) {
                ibuf[i] = tp_val(k, rank, i);
            }
            MPI_Allreduce(MPI_IN_PLACE, ibuf, c->count, MPI_INT, MPI_SUM, comm);
            if ((bad = tp_first_bad(ibuf, c->count, k, size, tp_sum)) >= 0) {
                lt_fail(wrank, "%s call %ld: allreduce of %d ints: [%d] = %d, expected %d", label, k, c->count, bad,
                        ibuf[bad], tp_sum(k, size, bad));
                ++fails;
            }
            break;
        case TP_ALLREDUCE_MAX:
            for (int i = 0; i < c->count; ++i) {
                dbuf[i] = tp_val(k, rank, i) / 8.0;
            }
            MPI_Allreduce(MPI_IN_PLACE, dbuf, c->count, MPI_DOUBLE, MPI_MAX, comm);
            for (int i = 0; i < c->count; ++i) {
                double want = tp_val(k, 0, i) / 8.0;
                for (int r = 1; r < size; ++r) {
                    want = tp_val(k, r, i) / 8.0 > want ? tp_val(k, r, i) / 8.0 : want;
                }
                if (dbuf[i] != want) {
                    lt_fail(wrank, "%s call %ld: allreduce max of %d doubles: [%d] = %g, expected %g", label,
                            k, c->count, i, dbuf[i], want);
                    ++fails;
                    break;
                }
            }
            break;
        default:
            MPI_Barrier(comm);
            break;
        }
    }

    for (int c = 0; c < TP_NFORCED; ++c) {
        const int h = lt_alg_index(tp_forced[c], "hierarchical");
        long want = 0;
        for (int kd = 0; kd < TP_KINDS; ++kd) {
            want += tp_coll[kd] == tp_forced[c] ? calls[kd] : 0;
        }
        lt_read(tp_forced[c], &after[c]);
        if (h < 0 || (long long) (after[c].alg[h] - before[c].alg[h]) != want) {
            lt_fail(wrank, "%s: %s: hierarchical served %lld of %ld calls", label, lt_coll_name(tp_forced[c]),
                    h < 0 ? -1LL : (long long) (after[c].alg[h] - before[c].alg[h]), want);
            ++fails;
        }
    }
    /* every call through the segment, but on several nodes bcasts of up to 256 B, which
     * keep point-to-point node phases (coll_loom_shm.c) */
    lt_shm_node_phases(&shm1);
    if (node_mates > 1 && ((long long) (shm1 - shm0) < ncalls - (nnodes > 1 ? small_bcasts : 0) ||
                           (long long) (shm1 - shm0) > ncalls)) {
        lt_fail(wrank, "%s: %lld of %ld calls used the node segment (%d ranks on this node, %d nodes, %ld bcasts of "
                "up to 256 B)", label, (long long) (shm1 - shm0), ncalls, node_mates, nnodes, small_bcasts);
        ++fails;
    }
    free(plan);
    return fails;
}

int main(int argc, char **argv)
{
    long ncalls = argc > 1 ? atol(argv[1]) : 3000, fails = 0, total = 0;
    int size;
    MPI_Comm rev, sub;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    lt_require_loom("test_pipeline", wrank);
    fails += lt_force(tp_forced, TP_NFORCED, "hierarchical", wrank);
    fails += tp_run(MPI_COMM_WORLD, "WORLD", ncalls, 1);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - wrank, &rev);
    fails += tp_run(rev, "reversed", ncalls, 2);
    MPI_Comm_free(&rev);
    MPI_Comm_split(MPI_COMM_WORLD, 0 == wrank || size < 3 ? MPI_UNDEFINED : 0, wrank, &sub);
    if (MPI_COMM_NULL != sub) {
        fails += tp_run(sub, "without rank 0", ncalls, 3);
        MPI_Comm_free(&sub);
    }

    MPI_Allreduce(&fails, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == wrank) {
        printf("test_pipeline: np=%d, %ld calls per communicator: %s (%ld failures)\n", size, ncalls,
               0 == total ? "PASS" : "FAIL", total);
    }
    lt_fini();
    MPI_Finalize();
    return 0 == total ? 0 : 1;
}
