/*
 * loom: smoke test of the emulated cluster (test/cluster).
 *
 *   smoke [--nodes N] [--no-loom]
 *
 * Checks, on every rank, and exits non-zero (after MPI_Finalize) on any failure:
 *   1. MPI_Get_processor_name: the ranks see exactly N distinct node names (N from
 *      --nodes, else $LOOM_CLUSTER_NODES), and rank i runs on the node that
 *      $LOOM_CLUSTER_PLACEMENT names for it (set by mpirun.sh);
 *   2. MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) gives one communicator per node:
 *      its members are exactly the ranks with my processor name, and there are N
 *      such communicators;
 *   3. loom is loaded on every rank (its MPI_T pvars exist) and intercepts an
 *      MPI_Allreduce on MPI_COMM_WORLD (one of its counters moves), and the
 *      allreduce / bcast results are right (skipped with --no-loom: then only 1-2
 *      and the results are checked).
 * Rank 0 prints one summary line: "smoke: np=.. nodes=.. loom pvars min=.. OK".
 */
#include "../mpi/loom_test_util.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nfail = 0;
static int wrank = 0;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            char m_[512];                                                 \
            snprintf(m_, sizeof m_, __VA_ARGS__);                         \
            fprintf(stderr, "smoke: rank %d: FAIL: %s\n", wrank, m_);     \
            nfail++;                                                      \
        }                                                                 \
    } while (0)

int main(int argc, char **argv)
{
    int wsize, expect_nodes = -1, use_loom = 1;
    char name[MPI_MAX_PROCESSOR_NAME];
    int len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--nodes") && i + 1 < argc) expect_nodes = atoi(argv[++i]);
        else if (0 == strcmp(argv[i], "--no-loom")) use_loom = 0;
        else {
            if (wrank == 0) fprintf(stderr, "usage: %s [--nodes N] [--no-loom]\n", argv[0]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (expect_nodes < 0 && getenv("LOOM_CLUSTER_NODES")) expect_nodes = atoi(getenv("LOOM_CLUSTER_NODES"));

    /* ---- 1. processor names -------------------------------------------------- */
    memset(name, 0, sizeof name);
    MPI_Get_processor_name(name, &len);
    char *all = calloc((size_t)wsize, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  MPI_COMM_WORLD);
    int distinct = 0;
    for (int i = 0; i < wsize; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = 0 == strcmp(all + (size_t)i * MPI_MAX_PROCESSOR_NAME, all + (size_t)j * MPI_MAX_PROCESSOR_NAME);
        if (!seen) distinct++;
    }
    if (expect_nodes > 0)
        CHECK(distinct == expect_nodes, "%d distinct processor names, expected %d", distinct, expect_nodes);
    const char *pl = getenv("LOOM_CLUSTER_PLACEMENT");
    if (pl) {
        /* the wrank-th comma-separated field */
        const char *p = pl;
        for (int i = 0; i < wrank && p; i++) {
            p = strchr(p, ',');
            if (p) p++;
        }
        char want[MPI_MAX_PROCESSOR_NAME] = "";
        if (p) {
            size_t n = strcspn(p, ",");
            if (n >= sizeof want) n = sizeof want - 1;
            memcpy(want, p, n);
            want[n] = 0;
        }
        CHECK(0 == strcmp(want, name), "runs on \"%s\", the placement says \"%s\"", name, want);
    }

    /* ---- 2. one shared-memory communicator per node -------------------------- */
    MPI_Comm node;
    int nrank, nsize;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    int same = 0;
    for (int i = 0; i < wsize; i++) same += 0 == strcmp(all + (size_t)i * MPI_MAX_PROCESSOR_NAME, name);
    CHECK(nsize == same, "shared-memory communicator has %d ranks, %d ranks share my name \"%s\"", nsize, same,
          name);
    /* every member of my node communicator has my name */
    char *mine = calloc((size_t)nsize, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, node);
    for (int i = 0; i < nsize; i++)
        CHECK(0 == strcmp(mine + (size_t)i * MPI_MAX_PROCESSOR_NAME, name),
              "node-communicator rank %d runs on \"%s\", I run on \"%s\"", i,
              mine + (size_t)i * MPI_MAX_PROCESSOR_NAME, name);
    int leaders, is_leader = nrank == 0;
    MPI_Allreduce(&is_leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(leaders == distinct, "%d shared-memory communicators, %d nodes", leaders, distinct);

    /* ---- 3. loom is loaded and serves; results are right ----------------------- */
    int npvars = -1, minpvars = 0;
    lt_counts_t before, after;
    lt_diff_t d;
    if (use_loom) {
        npvars = lt_init();
        CHECK(npvars > 0, "loom is not loaded (%d coll_loom_* pvars)", npvars);
        if (npvars > 0) lt_read(LT_ALLREDUCE, &before);
    }
    long v = wrank + 1, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == (long)wsize * (wsize + 1) / 2, "allreduce gave %ld, expected %ld", sum,
          (long)wsize * (wsize + 1) / 2);
    if (use_loom && npvars > 0) {
        lt_read(LT_ALLREDUCE, &after);
        lt_diff(LT_ALLREDUCE, &before, &after, &d);
        CHECK(d.changed >= 1, "no loom allreduce counter moved (%s)", d.desc);
    }
    int b[64];
    for (int i = 0; i < 64; i++) b[i] = wrank == wsize - 1 ? i * 7 + 1 : -1;
    MPI_Bcast(b, 64, MPI_INT, wsize - 1, MPI_COMM_WORLD);
    for (int i = 0; i < 64; i++)
        if (b[i] != i * 7 + 1) {
            CHECK(0, "bcast element %d is %d, expected %d", i, b[i], i * 7 + 1);
            break;
        }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(&npvars, &minpvars, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

    int total;
    MPI_Allreduce(&nfail, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("smoke: np=%d nodes=%d loom pvars min=%d%s %s\n", wsize, distinct, minpvars,
               use_loom ? "" : " (not checked)", total ? "FAILED" : "OK");
    if (use_loom && npvars >= 0) lt_fini();
    MPI_Comm_free(&node);
    free(mine);
    free(all);
    MPI_Finalize();
    return total ? 1 : 0;
}
