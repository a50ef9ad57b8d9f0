/*
 * loom: which algorithm served MPI_Allreduce (or MPI_Bcast) under a rules file
 * (coll_loom_rules_file) or the built-in rules.
 *
 *   mpirun ... --mca coll_loom_rules_file FILE test_rules [--bcast] [--warmup[=N]] EXPECT BYTES
 *
 * Runs a few MPI_Allreduce of BYTES/4 ints on MPI_COMM_WORLD (three MPI_SUM, one of
 * them MPI_IN_PLACE, and one MPI_MAX), checks every result, and reads loom's MPI_T
 * counters around each call: on every rank exactly one counter must move, by one,
 * and it must be coll_loom_allreduce_<EXPECT>_calls, or, for EXPECT "previous",
 * coll_loom_allreduce_fallback_calls (the call went to the component selected before
 * loom).  The rules file itself comes from the command line (see run-mpi-tests.sh);
 * the program only checks its effect.  --warmup[=N]: one (N) allreduces of BYTES
 * first, whose algorithm is not checked (what the first calls set up, e.g.
 * hierarchical's shared segment, or find out, e.g. that it cannot be set up, may
 * change later choices).  Needs at least 2 ranks (a 1-rank communicator is never
 * served by loom).  --bcast: the same with MPI_Bcast of BYTES/4 ints instead (four
 * calls, roots 0, 1, 2, 3 modulo the size; EXPECT names a bcast algorithm).
 *
 * Exit status: 0 when every rank passed, 1 on any failure, 2 on bad usage or when
 * loom is not loaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "loom_test_util.h"

static int wrank, wsize, nfail, bcast;

#define FAIL(...)                                                                                \
    do {                                                                                         \
        if (nfail++ < 10) {                                                                      \
            fprintf(stderr, "FAIL test_rules rank %d: ", wrank);                                 \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fputc('\n', stderr);                                                                 \
        }                                                                                        \
    } while (0)

/* A rank's contribution: small positive ints that depend on rank and index. */
static int input(int rank, int i)
{
    return (rank * 13 + i * 7) % 101 + 1;
}

/* expect_which of a call whose result is checked but not which algorithm served it */
#define ANY_COUNTER (-100)

/* The counters of collective c around one call: exactly one moved, by one, and it is
 * expect_which's (ANY_COUNTER: not checked). */
static void check_served(const char *label, lt_coll_t c, const lt_counts_t *before, const lt_counts_t *after,
                         int expect_which, const char *expect)
{
    lt_diff_t d;

    lt_diff(c, before, after, &d);
    if (ANY_COUNTER != expect_which && (1 != d.changed || expect_which != d.which || 1 != d.delta)) {
        FAIL("%s: counters moved: %s; expected %s+1 and nothing else", label, d.desc,
             LT_WHICH_FALLBACK == expect_which ? "fallback" : expect);
    }
}

/* One MPI_Bcast from `root`, its counters and its result. */
static void one_bcast(const char *label, int root, int count, int expect_which, const char *expect)
{
    int *buf = malloc((size_t) count * sizeof(int));
    lt_counts_t before, after;
    int rc;

    if (NULL == buf) {
        FAIL("%s: out of memory for %d ints", label, count);
        return;
    }
    for (int i = 0; i < count; ++i) {
        buf[i] = wrank == root ? input(root, i) : -1;
    }
    if (0 != lt_read(LT_BCAST, &before)) {
        FAIL("%s: cannot read the counters", label);
    }
    rc = MPI_Bcast(buf, count, MPI_INT, root, MPI_COMM_WORLD);
    if (0 != lt_read(LT_BCAST, &after)) {
        FAIL("%s: cannot read the counters", label);
    }
    if (MPI_SUCCESS != rc) {
        FAIL("%s: MPI_Bcast returned %d", label, rc);
    }
    check_served(label, LT_BCAST, &before, &after, expect_which, expect);
    for (int i = 0; i < count; ++i) {
        if (buf[i] != input(root, i)) {
            FAIL("%s: element %d is %d, expected %d", label, i, buf[i], input(root, i));
            break;
        }
    }
    free(buf);
}

/* One MPI_Allreduce, its counters and its result. */
static void one_call(const char *label, MPI_Op op, int in_place, int count, int expect_which,
                     const char *expect)
{
    int *in = malloc((size_t) count * sizeof(int));
    int *out = malloc((size_t) count * sizeof(int));
    lt_counts_t before, after;
    int rc, bad = 0;

    if (NULL == in || NULL == out) {
        FAIL("%s: out of memory for %d ints", label, count);
        free(in);
        free(out);
        return;
    }
    for (int i = 0; i < count; ++i) {
        in[i] = input(wrank, i);
        out[i] = in_place ? in[i] : -1;
    }
    if (0 != lt_read(LT_ALLREDUCE, &before)) {
        FAIL("%s: cannot read the counters", label);
    }
    rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, count, MPI_INT, op, MPI_COMM_WORLD);
    if (0 != lt_read(LT_ALLREDUCE, &after)) {
        FAIL("%s: cannot read the counters", label);
    }
    if (MPI_SUCCESS != rc) {
        FAIL("%s: MPI_Allreduce returned %d", label, rc);
    }
    check_served(label, LT_ALLREDUCE, &before, &after, expect_which, expect);

    for (int i = 0; i < count && bad < 3; ++i) {
        long want = 0;
        for (int r = 0; r < wsize; ++r) {
            long v = input(r, i);
            if (MPI_MAX == op) {
                want = (0 == r || v > want) ? v : want;
            } else {
                want += v;
            }
        }
        if (out[i] != want) {
            FAIL("%s: element %d is %d, expected %ld", label, i, out[i], want);
            ++bad;
        }
    }
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    const char *expect;
    char *end = NULL;
    long bytes;
    int count, which, any, warmup = 0;
    char label[128], file[1024] = "";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);

    if (argc > 1 && 0 == strcmp(argv[1], "--bcast")) {
        bcast = 1;
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    if (argc > 1 && 0 == strncmp(argv[1], "--warmup", 8) &&
        ('\0' == argv[1][8] || ('=' == argv[1][8] && (warmup = atoi(argv[1] + 9)) > 0))) {
        warmup = '\0' == argv[1][8] ? 1 : warmup;
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    if (3 != argc || (bytes = strtol(argv[2], &end, 10)) < 4 || '\0' != *end || 0 != bytes % 4
        || bytes > 64L * 1024 * 1024) {
        if (0 == wrank) {
            fprintf(stderr, "usage: %s [--bcast] [--warmup[=N]] EXPECT BYTES   (EXPECT: an allreduce (bcast) algorithm or "
                            "\"previous\"; BYTES: a multiple of 4, at least 4)\n",
                    argv[0]);
        }
        MPI_Finalize();
        return 2;
    }
    expect = argv[1];
    count = (int) (bytes / 4);
    if (wsize < 2) {
        if (0 == wrank) {
            fprintf(stderr, "test_rules: needs at least 2 ranks (loom never serves 1 rank)\n");
        }
        MPI_Finalize();
        return 2;
    }

    lt_require_loom("FAIL test_rules", wrank);
    const lt_coll_t coll = bcast ? LT_BCAST : LT_ALLREDUCE;
    const char *cname = bcast ? "bcast" : "allreduce";
    if (0 == strcmp(expect, "previous")) {
        which = LT_WHICH_FALLBACK;
        if (!lt_has_fallback(coll)) {
            FAIL("no counter coll_loom_%s_fallback_calls", cname);
        }
    } else {
        which = lt_alg_index(coll, expect);
        if (which < 0) {
            if (0 == wrank) {
                fprintf(stderr, "FAIL test_rules: no counter coll_loom_%s_%s_calls (unknown "
                                "algorithm \"%s\")\n", cname, expect, expect);
            }
            MPI_Finalize();
            return 2;
        }
    }
    if (0 == wrank && MPI_SUCCESS == lt_cvar_read_str("coll_loom_rules_file", file, sizeof(file))) {
        printf("test_rules: coll_loom_rules_file=\"%s\"\n", file);
    }

    for (int k = 0; k < warmup; ++k) {
        snprintf(label, sizeof(label), "warm-up %s #%d of %d ints", bcast ? "bcast" : "MPI_SUM", k + 1,
                 count);
        if (bcast) {
            one_bcast(label, k % wsize, count, ANY_COUNTER, expect);
        } else {
            one_call(label, MPI_SUM, 0, count, ANY_COUNTER, expect);
        }
    }
    for (int k = 0; bcast && k < 4; ++k) {
        snprintf(label, sizeof(label), "bcast #%d of %d ints from root %d", k + 1, count, k % wsize);
        one_bcast(label, k % wsize, count, which, expect);
    }
    for (int k = 0; !bcast && k < 3; ++k) {
        snprintf(label, sizeof(label), "MPI_SUM #%d of %d ints%s", k + 1, count,
                 1 == k ? " (MPI_IN_PLACE)" : "");
        one_call(label, MPI_SUM, 1 == k, count, which, expect);
    }
    if (!bcast) {
        snprintf(label, sizeof(label), "MPI_MAX of %d ints", count);
        one_call(label, MPI_MAX, 0, count, which, expect);
    }

    /* every rank must have passed (this last allreduce is not checked) */
    MPI_Allreduce(&nfail, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (0 == wrank) {
        printf("test_rules: %d ranks, 4 %ss of %ld bytes, expected %s%s: %s\n", wsize, cname, bytes,
               expect, which == LT_WHICH_FALLBACK ? " (fallback counter)" : "",
               0 == any ? "PASS" : "FAIL");
    }
    lt_fini();
    MPI_Finalize();
    return 0 == any ? 0 : 1;
}
