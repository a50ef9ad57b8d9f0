/*
 * loom: collectives whose message is larger than 2 GiB while the int count stays
 * below 2^31, so that any 32-bit byte offset or size inside loom overflows.
 *
 *   bcast      a contiguous type of 8 doubles (64 bytes), 2^25 + 3 elements
 *   allreduce  MPI_DOUBLE, 2^28 + 5 elements, MPI_SUM, MPI_IN_PLACE
 *   reduce     the 8-double type with a commutative user op (predefined ops are
 *              refused on derived types by Open MPI 4.1), IN_PLACE at the root
 * Each is a little over 2 GiB.  Every element is checked against a closed form,
 * and guard bytes after each buffer must stay untouched.  Each collective runs
 * once per segmented loom algorithm (ring, twotree) discovered through its
 * coll_loom_<coll>_<alg>_calls counter, forced through coll_loom_<coll>_algorithm;
 * the counter of the forced algorithm must move by one.
 *
 * A case runs only when /proc/meminfo's MemAvailable covers its estimated need
 * (buffers of every process, and as much again of scratch for loom).  A skipped
 * case prints "SKIPPED" with the numbers, and when every case was skipped the
 * exit status is 77, so the runner reports a skip instead of a pass.
 *
 * Usage: test_bigcount [--oracle-only] [--only bcast|allreduce|reduce] [--mem-cap-gib G]
 *   --oracle-only   check results only, not that loom served the calls
 *   --mem-cap-gib G take MemAvailable as at most G GiB (exercises the skip path)
 * Meant for 2 processes (any number works; the memory need grows with it).
 * Exit status: 0 pass, 1 failure, 2 loom absent, 77 every case skipped.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "loom_test_util.h"

#define DPE 8                                  /* doubles per element of the big type */
#define BCAST_COUNT ((1L << 25) + 3)           /* elements of DPE doubles */
#define ALLRED_COUNT ((1L << 28) + 5)          /* doubles */
#define REDUCE_COUNT ((1L << 25) + 3)          /* elements of DPE doubles */
#define GUARD 64
#define GIB (1024.0 * 1024.0 * 1024.0)

static int wrank, wsize, oracle_only = 0;
static double mem_cap = -1; /* --mem-cap-gib: pretend MemAvailable is at most this (tests the skip) */
static long nchecks = 0, ncalls = 0, nskipped = 0, nrun = 0;
static MPI_Comm oracle; /* loom excluded: for the test's own collectives */

#define FAIL(...) lt_fail(wrank, __VA_ARGS__)

/* Inputs: exact small integers, so every sum is exact in any order. */
static inline double val(int r, size_t j) { return (double) (j % 1021) + (double) ((r * 7) % 13); }

static void dsum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    const double *a = in;
    double *b = inout;
    for (size_t j = 0; j < (size_t) *len * DPE; j++) b[j] += a[j];
}

/* MemAvailable in bytes (rank 0's view, shared with everyone), or -1. */
static double mem_available(void)
{
    double avail = -1;
    if (0 == wrank) {
        FILE *f = fopen("/proc/meminfo", "r");
        char line[256];
        while (f && fgets(line, sizeof(line), f)) {
            long kb;
            if (1 == sscanf(line, "MemAvailable: %ld kB", &kb)) avail = (double) kb * 1024.0;
        }
        if (f) fclose(f);
    }
    if (mem_cap >= 0 && (avail < 0 || avail > mem_cap)) avail = mem_cap;
    MPI_Bcast(&avail, 1, MPI_DOUBLE, 0, oracle);
    return avail;
}

/* Can `need` bytes be had?  Says loudly when not. */
static int enough_memory(const char *what, double need)
{
    double avail = mem_available();
    if (avail >= 0 && avail >= need) return 1;
    if (0 == wrank) {
        printf("SKIPPED: %s needs about %.1f GiB, MemAvailable is %.1f GiB: this big-count case was NOT tested\n",
               what, need / GIB, avail / GIB);
        fflush(stdout);
    }
    nskipped++;
    return 0;
}

static char *alloc_guarded(size_t bytes)
{
    char *b = malloc(bytes + GUARD);
    if (b) memset(b + bytes, 0xC3, GUARD);
    return b;
}

static void check_guard(const char *b, size_t bytes, const char *label)
{
    nchecks++;
    for (size_t i = 0; i < GUARD; i++)
        if ((unsigned char) b[bytes + i] != 0xC3) {
            FAIL("%s: guard byte %zu after the buffer was overwritten", label, i);
            return;
        }
}

/* One counter of coll must move by one: the forced algorithm's. */
static void check_ran(lt_coll_t c, const char *alg, const lt_counts_t *b, const lt_counts_t *a, const char *label)
{
    lt_diff_t d;
    if (oracle_only) return;
    lt_diff(c, b, a, &d);
    nchecks++;
    if (d.changed != 1 || d.delta != 1 || d.which < 0 || 0 != strcmp(lt_alg_name(c, d.which), alg))
        FAIL("%s: expected forced %s to serve the call (its counter +1), got %s", label, alg, d.desc);
}

static void report(int rc, const char *label)
{
    if (MPI_SUCCESS != rc) {
        char es[MPI_MAX_ERROR_STRING];
        int el;
        MPI_Error_string(rc, es, &el);
        FAIL("%s: returned %d (%s)", label, rc, es);
    }
}

/* Compares n doubles with want(j); reports the first few mismatches. */
#define CHECK_DOUBLES(buf, n, want_expr, label)                                                      \
    do {                                                                                             \
        long wrong_ = 0;                                                                             \
        nchecks++;                                                                                   \
        for (size_t j = 0; j < (size_t) (n); j++) {                                                  \
            double w_ = (want_expr);                                                                 \
            if ((buf)[j] != w_) {                                                                    \
                if (wrong_ < 3) FAIL("%s: double %zu is %.17g, expected %.17g", label, j, (buf)[j], w_); \
                wrong_++;                                                                            \
            }                                                                                        \
        }                                                                                            \
        if (wrong_ > 3) FAIL("%s: %ld doubles wrong in total", label, wrong_);                       \
    } while (0)

static void big_bcast(MPI_Datatype t8, const char *alg)
{
    size_t n = (size_t) BCAST_COUNT * DPE, bytes = n * sizeof(double);
    int root = wsize - 1;
    char label[160];
    lt_counts_t b, a;
    snprintf(label, sizeof(label), "bcast %.2f GiB (%ld x 8 doubles) root=%d alg=%s", bytes / GIB, BCAST_COUNT, root, alg);
    if (!enough_memory(label, 2.0 * (double) wsize * (double) bytes)) return;
    double *buf = (double *) alloc_guarded(bytes);
    if (!buf) {
        FAIL("%s: out of memory", label);
        return;
    }
    for (size_t j = 0; j < n; j++) buf[j] = wrank == root ? val(root, j) : -1.0;
    double t0 = MPI_Wtime();
    if (!oracle_only) lt_read(LT_BCAST, &b);
    int rc = MPI_Bcast(buf, (int) BCAST_COUNT, t8, root, MPI_COMM_WORLD);
    if (!oracle_only) lt_read(LT_BCAST, &a);
    ncalls++;
    nrun++;
    report(rc, label);
    check_ran(LT_BCAST, alg, &b, &a, label);
    CHECK_DOUBLES(buf, n, val(root, j), label);
    check_guard((char *) buf, bytes, label);
    if (0 == wrank) printf("ran: %s (%.1f s)\n", label, MPI_Wtime() - t0);
    free(buf);
}

static void big_allreduce(const char *alg)
{
    size_t n = (size_t) ALLRED_COUNT, bytes = n * sizeof(double);
    char label[160];
    lt_counts_t b, a;
    int sr = 0;
    snprintf(label, sizeof(label), "allreduce %.2f GiB (%ld doubles) SUM IN_PLACE alg=%s", bytes / GIB, ALLRED_COUNT, alg);
    if (!enough_memory(label, 3.0 * (double) wsize * (double) bytes)) return;
    double *buf = (double *) alloc_guarded(bytes);
    if (!buf) {
        FAIL("%s: out of memory", label);
        return;
    }
    for (size_t j = 0; j < n; j++) buf[j] = val(wrank, j);
    for (int r = 0; r < wsize; r++) sr += (r * 7) % 13;
    double t0 = MPI_Wtime();
    if (!oracle_only) lt_read(LT_ALLREDUCE, &b);
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int) ALLRED_COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (!oracle_only) lt_read(LT_ALLREDUCE, &a);
    ncalls++;
    nrun++;
    report(rc, label);
    check_ran(LT_ALLREDUCE, alg, &b, &a, label);
    CHECK_DOUBLES(buf, n, (double) wsize * (double) (j % 1021) + (double) sr, label);
    check_guard((char *) buf, bytes, label);
    if (0 == wrank) printf("ran: %s (%.1f s)\n", label, MPI_Wtime() - t0);
    free(buf);
}

static void big_reduce(MPI_Datatype t8, MPI_Op op, const char *alg)
{
    size_t n = (size_t) REDUCE_COUNT * DPE, bytes = n * sizeof(double);
    int root = wsize > 1 ? 1 : 0, sr = 0;
    char label[160];
    lt_counts_t b, a;
    snprintf(label, sizeof(label), "reduce %.2f GiB (%ld x 8 doubles) user-sum root=%d alg=%s", bytes / GIB,
             REDUCE_COUNT, root, alg);
    if (!enough_memory(label, 3.0 * (double) wsize * (double) bytes)) return;
    double *buf = (double *) alloc_guarded(bytes);
    if (!buf) {
        FAIL("%s: out of memory", label);
        return;
    }
    for (size_t j = 0; j < n; j++) buf[j] = val(wrank, j);
    for (int r = 0; r < wsize; r++) sr += (r * 7) % 13;
    double t0 = MPI_Wtime();
    if (!oracle_only) lt_read(LT_REDUCE, &b);
    int rc = MPI_Reduce(wrank == root ? MPI_IN_PLACE : buf, wrank == root ? buf : NULL, (int) REDUCE_COUNT, t8, op,
                        root, MPI_COMM_WORLD);
    if (!oracle_only) lt_read(LT_REDUCE, &a);
    ncalls++;
    nrun++;
    report(rc, label);
    check_ran(LT_REDUCE, alg, &b, &a, label);
    if (wrank == root) CHECK_DOUBLES(buf, n, (double) wsize * (double) (j % 1021) + (double) sr, label);
    else CHECK_DOUBLES(buf, n, val(wrank, j), label); /* the send buffer is the input */
    check_guard((char *) buf, bytes, label);
    if (0 == wrank) printf("ran: %s (%.1f s)\n", label, MPI_Wtime() - t0);
    free(buf);
}

/* Runs fn for every segmented algorithm of coll (ring, twotree), forced; in
 * oracle-only mode once, under whatever selection is in force. */
#define FOR_EACH_ALG(coll, call)                                                                      \
    do {                                                                                              \
        char cvar_[96];                                                                               \
        int n_ = 0;                                                                                   \
        snprintf(cvar_, sizeof(cvar_), "coll_loom_%s_algorithm", lt_coll_name(coll));                 \
        for (int a_ = 0; !oracle_only && a_ < lt_nalgs(coll); a_++) {                                 \
            const char *alg = lt_alg_name(coll, a_);                                                  \
            if (0 != strcmp(alg, "ring") && 0 != strcmp(alg, "twotree")) continue;                     \
            n_++;                                                                                     \
            int rc_ = lt_cvar_write_str(cvar_, alg);                                                  \
            if (MPI_SUCCESS != rc_) {                                                                 \
                FAIL("cannot set %s=%s: %s", cvar_, alg, lt_errstr(rc_));                             \
                continue;                                                                             \
            }                                                                                         \
            call;                                                                                     \
            lt_cvar_write_str(cvar_, "auto");                                                         \
        }                                                                                             \
        if (oracle_only) {                                                                            \
            const char *alg = "(not checked)";                                                        \
            call;                                                                                     \
        } else if (0 == n_) {                                                                         \
            FAIL("no ring or twotree counter for %s: loom's segmented algorithms are missing",        \
                 lt_coll_name(coll));                                                                 \
        }                                                                                             \
    } while (0)

int main(int argc, char **argv)
{
    const char *only = NULL;
    MPI_Datatype t8;
    MPI_Op dsum;
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--oracle-only")) oracle_only = 1;
        else if (0 == strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (0 == strcmp(argv[i], "--mem-cap-gib") && i + 1 < argc) mem_cap = atof(argv[++i]) * GIB;
        else {
            if (0 == wrank) fprintf(stderr, "usage: %s [--oracle-only] [--only bcast|allreduce|reduce] [--mem-cap-gib G]\n",
                        argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    t0 = MPI_Wtime();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    lt_dup_with_pref(MPI_COMM_WORLD, "tuned,^loom", &oracle);
    if (lt_init() <= 0 && !oracle_only) {
        if (0 == wrank) fprintf(stderr, "FAIL test_bigcount: no coll_loom_* performance variable: loom is not loaded\n");
        MPI_Finalize();
        return 2;
    }
    if (oracle_only && 0 == wrank)
        printf("test_bigcount: ORACLE-ONLY mode: results are checked, but NOT that loom served the calls\n");
    MPI_Type_contiguous(DPE, MPI_DOUBLE, &t8);
    MPI_Type_commit(&t8);
    MPI_Op_create(dsum_fn, 1, &dsum);

    if (!only || 0 == strcmp(only, "bcast")) FOR_EACH_ALG(LT_BCAST, big_bcast(t8, alg));
    if (!only || 0 == strcmp(only, "allreduce")) FOR_EACH_ALG(LT_ALLREDUCE, big_allreduce(alg));
    if (!only || 0 == strcmp(only, "reduce")) FOR_EACH_ALG(LT_REDUCE, big_reduce(t8, dsum, alg));

    long tot[2] = {lt_nfail, nchecks}, sum[2];
    MPI_Allreduce(tot, sum, 2, MPI_LONG, MPI_SUM, oracle);
    if (0 == wrank) {
        printf("test_bigcount np=%d mode=%s: %ld calls run, %ld SKIPPED, %ld checks, %ld failures (%.1f s)\n", wsize,
               oracle_only ? "ORACLE-ONLY (loom not checked)" : "full", nrun, nskipped, sum[1], sum[0],
               MPI_Wtime() - t0);
        if (0 == nrun && nskipped > 0) printf("test_bigcount: every case SKIPPED for lack of memory: NOT tested\n");
        fflush(stdout);
    }
    MPI_Type_free(&t8);
    MPI_Op_free(&dsum);
    MPI_Comm_free(&oracle);
    lt_fini();
    MPI_Finalize();
    if (sum[0]) return 1;
    return (0 == nrun && nskipped > 0) ? 77 : 0;
}
