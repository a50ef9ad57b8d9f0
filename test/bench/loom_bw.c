/*
 * loom_bw: large-message benchmark of loom against Open MPI's tuned component, with
 * tuned's own algorithms forced one by one, in one job.
 *
 *   loom_bw -c allreduce|bcast|reduce|allgather|reduce_scatter|reduce_scatter_block|scan|exscan|alltoall
 *           [-m minbytes] [-s maxbytes] [-r rounds] [--big-rounds N] [-t batch_ms]
 *           [--latency] [--tuned-seg bytes] [--bw GB/s] [--all-algs] [--seg-sizes a,b,...] [--csv FILE] [-q]
 *           [--info KEY=VALUE] [--groups K] [--transports]
 *
 * --transports times every loom variant three times: on the communicator "loom", whose
 * messages take the transport the job was started with (coll_loom_transport, auto by
 * default: per call, by the transport rules), and, labelled "[ucx]" and "[pml]", on ones
 * made with coll_loom_transport ucx and pml written through MPI_T (a communicator's
 * transport is decided at its first blocking call, made before the cvar goes back).
 * coll_loom_ucx_transfers, read around every batch, must move for "[ucx]" and must not
 * for "[pml]".
 * --put-max N adds a third, "[ucx put]": transport ucx and coll_loom_ucx_put_max N (direct
 * writes into the receiver's window for alltoall's direct and pairwise; rank 0's
 * coll_loom_ucx_puts must move for them).
 *
 * --groups K splits the world into K communicators of consecutive ranks (as equal as
 * they come) that run every batch at the same time (a world barrier before it; the
 * sample is the slowest rank of any group): several sub-communicators sharing a
 * network.  np and the bound are a group's.
 * --info sets an info key on loom's communicator only (e.g. loom_bcast_threshold=0.25:
 * loom's bcasts then deliver a quarter of the buffer, and are checked for that; likewise
 * loom_reduce_threshold, and loom_reduce_engage, checked for the engaged ranks' sum).
 *
 * Sizes are the powers of two from minbytes (64 KiB) to maxbytes (64 MiB): the vector
 * for allreduce/bcast/reduce, the whole gathered result for allgather, the whole send
 * buffer for alltoall (P parts), the whole input
 * vector for reduce_scatter(_block) (equal counts, bytes / (8 P) doubles per rank).
 *
 * Variants (each on its own communicator where tuned is concerned):
 *   - "tuned": the communicator "tuned,^loom" made before anything is forced: tuned's
 *     fixed decision, as an application gets it;
 *   - "tuned N:name": tuned with algorithm N forced.  This needs
 *     coll_tuned_use_dynamic_rules=1, which MPI_T cannot write in Open MPI 4.1 (scope
 *     read-only): run with --mca coll_tuned_use_dynamic_rules 1 (without a rules file
 *     and with no algorithm forced, tuned's dynamic decision is its fixed one, so
 *     "tuned" stays the default).  tuned reads coll_tuned_<coll>_algorithm(_segmentsize)
 *     when a communicator's module is enabled, so each of these variants writes them
 *     through MPI_T and then creates its own communicator;
 *   - "loom auto" and every loom algorithm of the collective that is made for large
 *     messages (ring, twotree, binomial, pairwise; --all-algs adds the others), those with
 *     a size knob (ring, twotree, torus) at auto (0), 64 KiB and 1 MiB (or --seg-sizes, which
 *     sweeps hierarchical's too), switched by MPI_T writes on one
 *     communicator "loom".  loom's counters, read around every batch, show which
 *     algorithm served (as in loom_bench).
 *
 * Timing as in loom_bench: rounds x variants batches, interleaved, each round in a new
 * shuffled order (the variant timed right after tuned's large calls runs slower,
 * whichever it is: a fixed or rotated order pins that on one variant; docs/user/tuning.md,
 * "Is auto choosing well?"); a batch is a barrier and `iterations` back-to-back calls
 * (calibrated on tuned to last about batch_ms, at least 1); the sample is the maximum
 * over ranks of the batch time / iterations; the median over rounds is reported.
 * --latency puts a barrier before every call and times each call alone (the sample:
 * the maximum over ranks of the mean call time).  Back-to-back calls measure a
 * pipeline's throughput: a chain scan's rank 0 returns at once and runs ahead, so
 * scan and exscan are compared with --latency, as an application that uses the
 * result waits for it.
 * Every batch starts with one untimed call (so the switch from the previous variant is
 * not timed); in round 0 the output of that call and of the timed batch are checked element by element against the
 * exact expected values (doubles holding small integers, so sums are exact), with the
 * output buffer poisoned before each, so a fast wrong algorithm cannot win.
 *
 * Bandwidth bound: B is measured at the start by a ping-pong between ranks 0 and 1 of
 * 1 MiB and 16 MiB messages, B = 15 MiB / (T(16 MiB) - T(1 MiB)) with T the best half
 * round trip (the slope removes the latency), or given with --bw.  Bound: n/B for
 * bcast and reduce, 2(P-1)/P n/B for allreduce, (P-1)/P n/B for allgather and
 * reduce_scatter; "frac" is bound / median time.
 *
 * Forcing tuned really takes effect: the forced variants differ from tuned's default
 * and from each other by up to several times at the same size (see docs/user/performance.md);
 * were the variables ignored, every forced variant would run tuned's fixed decision.
 *
 * Exit status 1 when a check failed (wrong result, loom serving a tuned communicator,
 * loom's counters not moving for a loom variant, a cvar that could not be written).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "../mpi/loom_test_util.h"

#define MAX_VARIANTS 32
#define MAX_SIZES 32

typedef struct {
    char label[LT_NAME_LEN + 32];
    int tuned;             /* 1: a tuned communicator */
    int tuned_alg;         /* forced tuned algorithm, 0 = tuned's fixed decision */
    int tuned_seg;         /* its segment size in bytes */
    char alg[LT_NAME_LEN]; /* loom: "auto" or an algorithm name */
    int knob;              /* loom: size knob in bytes (0 = auto) */
    MPI_Comm comm;
    int ucx;               /* loom: on a communicator whose transport is UCX (2: with direct writes;
                              3: whose transport is the PML) */
} variant_t;

typedef struct {
    double *samples;
    unsigned long long served[LT_MAX_ALGS];
    unsigned long long fallback;
    unsigned long long calls;
    unsigned long long shm; /* calls whose node phases used the shared segment (rank 0) */
    unsigned long long ucx; /* transfers posted on loom's UCX worker (rank 0) */
    unsigned long long puts; /* of those, direct writes */
    long wrong;
} cell_t;

/* tuned's algorithms worth forcing for large messages, per collective (numbers from
 * ompi_info --param coll tuned --level 9, Open MPI 4.1.4); seg: uses --tuned-seg. */
typedef struct {
    int num;
    const char *name;
    int seg;
} tuned_alg_t;

static const tuned_alg_t tuned_allreduce[] = {{3, "recursive_doubling", 0}, {4, "ring", 0},
                                              {5, "segmented_ring", 1}, {6, "rabenseifner", 0}, {0, NULL, 0}};
static const tuned_alg_t tuned_bcast[] = {{3, "pipeline", 1}, {4, "split_binary_tree", 1}, {5, "binary_tree", 1},
                                          {9, "scatter_allgather_ring", 0}, {0, NULL, 0}};
static const tuned_alg_t tuned_reduce[] = {{3, "pipeline", 1}, {4, "binary", 1}, {7, "rabenseifner", 0}, {0, NULL, 0}};
static const tuned_alg_t tuned_allgather[] = {{2, "bruck", 0}, {3, "recursive_doubling", 0}, {4, "ring", 0},
                                              {5, "neighbor_exchange", 0}, {0, NULL, 0}};
static const tuned_alg_t tuned_rs[] = {{2, "recursive_halving", 0}, {3, "ring", 0}, {4, "butterfly", 0}, {0, NULL, 0}};
static const tuned_alg_t tuned_alltoall[] = {{1, "linear", 0}, {2, "pairwise", 0}, {3, "modified_bruck", 0},
                                             {4, "linear_sync", 0}, {0, NULL, 0}};
static const tuned_alg_t tuned_rsb[] = {{2, "recursive_doubling", 0}, {3, "recursive_halving", 0}, {4, "butterfly", 0},
                                        {0, NULL, 0}};

/* wrank, wsize: this rank in its group's communicator, where the collectives run (the
 * world without --groups); me: its world rank, which prints */
static int wrank, wsize, me;
static int errors = 0;
static const char *info_kv = NULL; /* --info KEY=VALUE, set on loom's communicator */
static double bcast_part = 1.0;    /* its loom_bcast_threshold, for the check */
static double reduce_part = 1.0;   /* its loom_reduce_threshold */
static double engage_part = 1.0;   /* its loom_reduce_engage */
static double checked_part = 1.0;  /* the bcast's or reduce's part of the variant being checked */
static double checked_engage = 1.0;
static lt_coll_t coll = LT_ALLREDUCE;
static const int ROOT = 0;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static const tuned_alg_t *tuned_algs(lt_coll_t c)
{
    switch (c) {
    case LT_ALLREDUCE: return tuned_allreduce;
    case LT_BCAST: return tuned_bcast;
    case LT_REDUCE: return tuned_reduce;
    case LT_ALLGATHER: return tuned_allgather;
    case LT_REDUCE_SCATTER: return tuned_rs;
    case LT_REDUCE_SCATTER_BLOCK: return tuned_rsb;
    case LT_ALLTOALL: return tuned_alltoall;
    default: return NULL;
    }
}

/* Bytes moved per rank by a bandwidth-optimal algorithm, in units of n. */
static double bound_factor(lt_coll_t c, int p)
{
    switch (c) {
    case LT_ALLREDUCE: return 2.0 * (p - 1) / p;
    case LT_ALLGATHER:
    case LT_REDUCE_SCATTER:
    case LT_REDUCE_SCATTER_BLOCK:
    case LT_ALLTOALL: return (double) (p - 1) / p;
    default: return 1.0;
    }
}

/* Element counts: `count` is what the call is given (per rank for allgather and
 * reduce_scatter), `total` the elements of the vector the size refers to. */
static long call_count(long bytes)
{
    long n = bytes / (long) sizeof(double);
    if (coll == LT_ALLGATHER || coll == LT_REDUCE_SCATTER || coll == LT_REDUCE_SCATTER_BLOCK || coll == LT_ALLTOALL)
        return n / wsize;
    return n;
}

static int *rs_counts; /* reduce_scatter: equal counts */

static void run_coll(MPI_Comm comm, double *sbuf, double *rbuf, long count)
{
    int c = (int) count;
    switch (coll) {
    case LT_ALLREDUCE: MPI_Allreduce(sbuf, rbuf, c, MPI_DOUBLE, MPI_SUM, comm); break;
    case LT_BCAST: MPI_Bcast(rbuf, c, MPI_DOUBLE, ROOT, comm); break;
    case LT_REDUCE: MPI_Reduce(sbuf, rbuf, c, MPI_DOUBLE, MPI_SUM, ROOT, comm); break;
    case LT_ALLGATHER: MPI_Allgather(sbuf, c, MPI_DOUBLE, rbuf, c, MPI_DOUBLE, comm); break;
    case LT_REDUCE_SCATTER:
        for (int r = 0; r < wsize; r++) rs_counts[r] = c;
        MPI_Reduce_scatter(sbuf, rbuf, rs_counts, MPI_DOUBLE, MPI_SUM, comm);
        break;
    case LT_REDUCE_SCATTER_BLOCK: MPI_Reduce_scatter_block(sbuf, rbuf, c, MPI_DOUBLE, MPI_SUM, comm); break;
    case LT_SCAN: MPI_Scan(sbuf, rbuf, c, MPI_DOUBLE, MPI_SUM, comm); break;
    case LT_EXSCAN: MPI_Exscan(sbuf, rbuf, c, MPI_DOUBLE, MPI_SUM, comm); break;
    case LT_ALLTOALL: MPI_Alltoall(sbuf, c, MPI_DOUBLE, rbuf, c, MPI_DOUBLE, comm); break;
    default: break;
    }
}

/* Input element j of rank r: small integers, so every sum below is exact. */
static double input(int r, long j) { return (double) (r + 1) + (double) (j % 7); }

/* Poisons the output before a checked call; for bcast the root keeps its data. */
static void poison(double *rbuf, long count)
{
    long n = coll == LT_ALLGATHER || coll == LT_ALLTOALL ? count * wsize : count;
    if (coll == LT_BCAST && wrank == ROOT) {
        for (long j = 0; j < n; j++) rbuf[j] = input(ROOT, j);
        return;
    }
    if ((coll == LT_REDUCE) && wrank != ROOT) return;
    for (long j = 0; j < n; j++) rbuf[j] = -1.0;
}

/* Number of wrong elements of this rank's output. */
static long check(const double *rbuf, long count)
{
    long bad = 0;
    const double psum = (double) wsize * (wsize + 1) / 2;
    switch (coll) {
    case LT_ALLREDUCE:
        for (long j = 0; j < count; j++) bad += rbuf[j] != psum + (double) wsize * (double) (j % 7);
        break;
    case LT_REDUCE: {
        /* under loom_reduce_threshold the first part only, the rest stays poisoned; under
         * loom_reduce_engage the ranks ROOT, ROOT+1, ... of the first binomial stages */
        const long part = checked_part < 1.0 ? (long) ceil(checked_part * (double) count) : count;
        long e = 1;
        double esum = 0;
        if (wrank != ROOT) return 0;
        while (e < wsize && e < ceil(checked_engage * wsize)) e *= 2;
        e = e < wsize ? e : wsize;
        for (long k = 0; k < e; k++) esum += (double) ((ROOT + k) % wsize + 1);
        for (long j = 0; j < count; j++)
            bad += rbuf[j] != (j < part ? esum + (double) e * (double) (j % 7) : -1.0);
        break;
    }
    case LT_BCAST: {
        /* under loom_bcast_threshold (--info, loom's communicator) the rest stays poisoned */
        const long part = checked_part < 1.0 ? (long) ceil(checked_part * (double) count) : count;
        for (long j = 0; j < count; j++) bad += rbuf[j] != (j < part || wrank == ROOT ? input(ROOT, j) : -1.0);
        break;
    }
    case LT_ALLGATHER:
        for (long j = 0; j < count * wsize; j++) bad += rbuf[j] != input((int) (j / count), j % count);
        break;
    case LT_ALLTOALL:
        /* part s: rank s's part for this rank (send buffer element wrank * count + i) */
        for (long j = 0; j < count * wsize; j++)
            bad += rbuf[j] != input((int) (j / count), (long) wrank * count + j % count);
        break;
    case LT_REDUCE_SCATTER:
    case LT_REDUCE_SCATTER_BLOCK:
        for (long i = 0; i < count; i++) {
            long j = (long) wrank * count + i;
            bad += rbuf[i] != psum + (double) wsize * (double) (j % 7);
        }
        break;
    case LT_SCAN:
    case LT_EXSCAN: {
        /* ranks 0..m-1: sum of (r + 1) is m (m + 1) / 2; rank 0's exscan is undefined */
        const double m = coll == LT_SCAN ? wrank + 1 : wrank;
        for (long j = 0; m > 0 && j < count; j++) bad += rbuf[j] != m * (m + 1) / 2 + m * (double) (j % 7);
        break;
    }
    default: break;
    }
    return bad;
}

static const char *alg_cvar(void)
{
    static char name[96];
    snprintf(name, sizeof(name), "coll_loom_%s_algorithm", lt_coll_name(coll));
    return name;
}

/* The size knobs loom_bw sweeps (--seg-sizes): segments or chunks in bytes, 0 = auto.
 * A knob not swept in a variant keeps the value it had at the start (an --mca). */
static const char *const size_knobs[] = {"coll_loom_ring_segment_size", "coll_loom_twotree_chunk_size",
                                         "coll_loom_torus_segment_size", "coll_loom_hierarchical_segment_size"};
#define NUM_SIZE_KNOBS ((int) (sizeof(size_knobs) / sizeof(size_knobs[0])))
static int size_knob_start[NUM_SIZE_KNOBS];

static void read_size_knobs(void)
{
    for (int k = 0; k < NUM_SIZE_KNOBS; k++)
        if (MPI_SUCCESS != lt_cvar_read_int(size_knobs[k], &size_knob_start[k])) size_knob_start[k] = 0;
}

static int is_size_knob(const char *kv)
{
    for (int k = 0; kv && k < NUM_SIZE_KNOBS; k++)
        if (0 == strcmp(kv, size_knobs[k])) return 1;
    return 0;
}

/* loom variants: algorithm and its knob (knob -1 and the other size knobs: as at the start). */
static int set_loom(const variant_t *v)
{
    int rc = lt_cvar_write_str(alg_cvar(), v->alg);
    const char *kv = lt_knob_cvar(v->alg);
    for (int k = 0; MPI_SUCCESS == rc && k < NUM_SIZE_KNOBS; k++)
        rc = lt_cvar_write_int(size_knobs[k], kv && 0 == strcmp(kv, size_knobs[k]) && v->knob >= 0 ? v->knob
                                                                                           : size_knob_start[k]);
    return rc;
}

/* tuned's forced-algorithm variables for this collective. */
static int set_tuned(int dynamic, int alg, int seg)
{
    char name[128];
    int cur = -1, rc;
    /* MPI_T scope "read-only" in Open MPI 4.1: only mpirun --mca can set it */
    lt_cvar_read_int("coll_tuned_use_dynamic_rules", &cur);
    if (cur != dynamic && MPI_SUCCESS != (rc = lt_cvar_write_int("coll_tuned_use_dynamic_rules", dynamic))) return rc;
    snprintf(name, sizeof(name), "coll_tuned_%s_algorithm", lt_coll_name(coll));
    rc = lt_cvar_write_int(name, alg);
    if (MPI_SUCCESS != rc) return rc;
    snprintf(name, sizeof(name), "coll_tuned_%s_algorithm_segmentsize", lt_coll_name(coll));
    return lt_cvar_write_int(name, seg);
}

/* Link bandwidth in bytes/s from a ping-pong between world ranks 0 and 1. */
static double measure_bw(void)
{
    const int small = 1 << 20, big = 16 << 20;
    char *buf = malloc((size_t) big);
    double best[2] = {1e30, 1e30};
    memset(buf, 1, (size_t) big);
    for (int rep = 0; rep < 7; rep++) {
        for (int k = 0; k < 2; k++) {
            int n = k ? big : small, iters = k ? 4 : 16;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters && wrank < 2; i++) {
                if (me == 0) {
                    MPI_Send(buf, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
                    MPI_Recv(buf, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
                }
            }
            double t = (MPI_Wtime() - t0) / (2.0 * iters);
            if (t < best[k]) best[k] = t;
        }
    }
    free(buf);
    double bw = (best[1] > best[0]) ? (double) (big - small) / (best[1] - best[0]) : 0;
    MPI_Bcast(&bw, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return bw;
}

static void usage(const char *prog)
{
    if (me == 0)
        fprintf(stderr,
                "usage: %s -c allreduce|bcast|reduce|allgather|reduce_scatter|reduce_scatter_block\n"
                "          [-m minbytes] [-s maxbytes] [-r rounds] [--big-rounds N] [-t batch_ms]\n"
                "          [--latency] [--tuned-seg bytes] [--bw GB/s] [--all-algs] [--algs A,B,...]\n"
                "          [--seg-sizes N,M,...] [--groups K] [--transports] [--csv FILE] [-q]\n"
                "  --algs   time only these loom algorithms (besides tuned and loom auto); implies --all-algs\n"
                "  --groups K  K disjoint communicators of consecutive ranks, timed at once\n"
                "  --transports  every loom variant also on communicators with coll_loom_transport ucx and pml\n"
                "  --put-max N   and on one with coll_loom_ucx_put_max N as well (direct writes)\n",
                prog);
}

int main(int argc, char **argv)
{
    int rounds = 5, big_rounds = 0, quiet = 0, all_algs = 0, latency = 0, tuned_seg = 128 * 1024, transports = 0,
        put_max = 0;
    int knobs[8] = {0, 64 << 10, 1 << 20}, nknobs = 3, seg_given = 0;
    double batch_ms = 50.0, bw_given = 0;
    long minbytes = 64L << 10, maxbytes = 64L << 20;
    const char *csv = NULL, *only_algs = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    me = wrank;
    int nodes, rpn; /* recorded in the CSV: loom-tune writes them into its rules */
    int groups = 1;
    MPI_Comm base = MPI_COMM_WORLD;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (0 == strcmp(a, "-c") && val) {
            int found = 0;
            for (int c = 0; c < LT_NUM_COLLS; c++)
                if (c != LT_BARRIER && c != LT_ALLTOALLV && 0 == strcmp(val, lt_coll_name((lt_coll_t) c))) coll = (lt_coll_t) c, found = 1;
            if (!found) { usage(argv[0]); MPI_Finalize(); return 2; }
            i++;
        } else if (0 == strcmp(a, "-m") && val) { minbytes = atol(val); i++; }
        else if (0 == strcmp(a, "-s") && val) { maxbytes = atol(val); i++; }
        else if (0 == strcmp(a, "-r") && val) { rounds = atoi(val); i++; }
        else if (0 == strcmp(a, "--big-rounds") && val) { big_rounds = atoi(val); i++; }
        else if (0 == strcmp(a, "-t") && val) { batch_ms = atof(val); i++; }
        else if (0 == strcmp(a, "--tuned-seg") && val) { tuned_seg = atoi(val); i++; }
        else if (0 == strcmp(a, "--bw") && val) { bw_given = atof(val) * 1e9; i++; }
        else if (0 == strcmp(a, "--csv") && val) { csv = val; i++; }
        else if (0 == strcmp(a, "--all-algs")) all_algs = 1;
        else if (0 == strcmp(a, "--algs") && val) { only_algs = val; all_algs = 1; i++; }
        else if (0 == strcmp(a, "--latency")) latency = 1;
        else if (0 == strcmp(a, "--transports")) transports = 1;
        else if (0 == strcmp(a, "--put-max") && val) { put_max = atoi(val); transports = 1; i++; }
        else if (0 == strcmp(a, "--info") && val && strchr(val, '=')) { info_kv = val; i++; }
        else if (0 == strcmp(a, "--seg-sizes") && val) {
            /* segment / chunk sizes of the loom variants, bytes, comma-separated (0: auto) */
            char *end = NULL;
            const char *q = val;
            nknobs = 0;
            seg_given = 1;
            while (*q && nknobs < 8) {
                knobs[nknobs++] = (int) strtol(q, &end, 10);
                if (end == q) break;
                q = (',' == *end) ? end + 1 : end;
            }
            i++;
        }
        else if (0 == strcmp(a, "--groups") && val) { groups = atoi(val); i++; }
        else if (0 == strcmp(a, "-q")) quiet = 1;
        else { usage(argv[0]); MPI_Finalize(); return 2; }
    }
    if (rounds < 1) rounds = 1;
    if (big_rounds < 1 || big_rounds > rounds) big_rounds = rounds;
    if (batch_ms <= 0) batch_ms = 50.0;
    if (minbytes < 8) minbytes = 8;

    if (wsize < 2) {
        if (me == 0) fprintf(stderr, "loom_bw: needs at least 2 processes\n");
        MPI_Finalize();
        return 2;
    }
    if (lt_init() <= 0) {
        if (me == 0) fprintf(stderr, "loom_bw: no coll_loom_* performance variable: loom is not loaded\n");
        MPI_Finalize();
        return 2;
    }
    read_size_knobs();

    /* ---- link bandwidth ---- */
    double bw_run = measure_bw(), bw = bw_given > 0 ? bw_given : bw_run;
    if (groups < 1 || groups > wsize / 2) {
        if (me == 0) fprintf(stderr, "loom_bw: --groups needs 1 to %d groups of at least 2 ranks\n", wsize / 2);
        MPI_Finalize();
        return 2;
    }
    if (groups > 1) {
        /* disjoint communicators of consecutive world ranks, all timed at once: each
         * batch starts after a world barrier and its sample is the slowest rank of any
         * group */
        MPI_Comm_split(MPI_COMM_WORLD, (int) ((long) me * groups / wsize), me, &base);
        MPI_Comm_rank(base, &wrank);
        MPI_Comm_size(base, &wsize);
    }
    lt_shape(base, &nodes, &rpn);
    rs_counts = malloc(sizeof(int) * (size_t) wsize);
    if (me == 0)
        printf("loom_bw: %s, double sum, np=%d%s; B = %.2f GB/s (%s); ping-pong in this job: %.2f GB/s (world ranks "
               "0-1, slope between 1 and 16 MiB, the other ranks waiting in a barrier)\n",
               lt_coll_name(coll), wsize, groups > 1 ? " per group, groups timed at once" : "", bw / 1e9, bw_given > 0 ? "given with --bw" : "the ping-pong in this job",
               bw_run / 1e9);

    /* ---- communicators: loom, tuned's fixed decision, then one per forced tuned algorithm ---- */
    variant_t vs[MAX_VARIANTS];
    int nv = 0;
    MPI_Comm cl, ct;
    lt_dup_with_pref(base, "loom", &cl);
    if (NULL != info_kv) {
        /* an info key on loom's communicator only (the threshold collectives) */
        char key[128];
        MPI_Info info;
        snprintf(key, sizeof(key), "%.*s", (int) (strchr(info_kv, '=') - info_kv), info_kv);
        MPI_Info_create(&info);
        MPI_Info_set(info, key, strchr(info_kv, '=') + 1);
        MPI_Comm_set_info(cl, info);
        MPI_Info_free(&info);
        if (0 == strcmp(key, "loom_bcast_threshold")) bcast_part = atof(strchr(info_kv, '=') + 1);
        if (0 == strcmp(key, "loom_reduce_threshold")) reduce_part = atof(strchr(info_kv, '=') + 1);
        if (0 == strcmp(key, "loom_reduce_engage")) engage_part = atof(strchr(info_kv, '=') + 1);
    }
    lt_dup_with_pref(base, "tuned,^loom", &ct);
    vs[nv++] = (variant_t){"tuned", 1, 0, 0, "", 0, ct, 0};
    {
        char name[128];
        int dyn0 = 0, alg0 = 0, seg0 = 0;
        lt_cvar_read_int("coll_tuned_use_dynamic_rules", &dyn0);
        snprintf(name, sizeof(name), "coll_tuned_%s_algorithm", lt_coll_name(coll));
        lt_cvar_read_int(name, &alg0);
        snprintf(name, sizeof(name), "coll_tuned_%s_algorithm_segmentsize", lt_coll_name(coll));
        lt_cvar_read_int(name, &seg0);
        for (const tuned_alg_t *t = tuned_algs(coll); t && t->name && nv < MAX_VARIANTS; t++) {
            if ((0 == strcmp(t->name, "recursive_doubling") || 0 == strcmp(t->name, "recursive_halving") ||
                 0 == strcmp(t->name, "butterfly")) && (wsize & (wsize - 1)) && coll == LT_ALLGATHER)
                continue; /* tuned's recursive doubling allgather needs a power of two */
            variant_t *v = &vs[nv];
            memset(v, 0, sizeof(*v));
            v->tuned = 1;
            v->tuned_alg = t->num;
            v->tuned_seg = t->seg ? tuned_seg : 0;
            if (v->tuned_seg) snprintf(v->label, sizeof(v->label), "tuned %d:%s seg=%dK", t->num, t->name, v->tuned_seg >> 10);
            else snprintf(v->label, sizeof(v->label), "tuned %d:%s", t->num, t->name);
            if (!dyn0) {
                if (me == 0 && t == tuned_algs(coll))
                    printf("loom_bw: tuned's algorithms not forced: coll_tuned_use_dynamic_rules is 0 and read-only "
                           "through MPI_T (run with --mca coll_tuned_use_dynamic_rules 1)\n");
                break;
            }
            int rc = set_tuned(1, v->tuned_alg, v->tuned_seg);
            if (MPI_SUCCESS != rc) {
                if (me == 0) fprintf(stderr, "loom_bw: cannot force tuned algorithm %d through MPI_T: %s\n", t->num, lt_errstr(rc));
                errors++;
                continue;
            }
            lt_dup_with_pref(base, "tuned,^loom", &v->comm);
            nv++;
        }
        set_tuned(dyn0, alg0, seg0); /* communicators made from now on get tuned's defaults */
    }
    const int ntuned = nv;

    char saved_alg[LT_NAME_LEN] = "auto";
    lt_cvar_read_str(alg_cvar(), saved_alg, sizeof(saved_alg));
    vs[nv++] = (variant_t){"loom auto", 0, 0, 0, "auto", 0, cl, 0};
    for (int a = 0; a < lt_nalgs(coll) && nv < MAX_VARIANTS - 3; a++) {
        const char *name = lt_alg_name(coll, a), *kv = lt_knob_cvar(name);
        /* hierarchical's segments only when --seg-sizes asks (its default variant
         * keeps an --mca coll_loom_hierarchical_segment_size) */
        int sized = is_size_knob(kv) && (seg_given || 0 != strcmp(kv, "coll_loom_hierarchical_segment_size"));
        if (kv && !sized && !all_algs) continue; /* dissemination, bruck: small-message algorithms */
        if (NULL != only_algs && !lt_in_list(only_algs, name)) continue;
        for (int k = 0; k < (sized ? nknobs : 1) && nv < MAX_VARIANTS; k++) {
            variant_t *v = &vs[nv++];
            memset(v, 0, sizeof(*v));
            snprintf(v->alg, LT_NAME_LEN, "%s", name);
            v->knob = sized ? knobs[k] : -1;
            v->comm = cl;
            if (!sized) snprintf(v->label, sizeof(v->label), "loom %.*s", LT_NAME_LEN - 1, name);
            else if (!v->knob) snprintf(v->label, sizeof(v->label), "loom %.*s seg=auto", LT_NAME_LEN - 1, name);
            else snprintf(v->label, sizeof(v->label), "loom %.*s seg=%dK", LT_NAME_LEN - 1, name, v->knob >> 10);
        }
    }
    MPI_Comm clu = MPI_COMM_NULL, clp = MPI_COMM_NULL, clm = MPI_COMM_NULL;
    const int nloom = nv;
    if (transports) {
        char saved_tr[LT_NAME_LEN] = "auto";
        int rc = lt_cvar_read_str("coll_loom_transport", saved_tr, sizeof(saved_tr));
        if (MPI_SUCCESS == rc) rc = lt_cvar_write_str("coll_loom_transport", "ucx");
        if (MPI_SUCCESS != rc) {
            if (me == 0) fprintf(stderr, "loom_bw: cannot write coll_loom_transport through MPI_T: %s\n", lt_errstr(rc));
            errors++;
        } else {
            int saved_put = 0;
            lt_dup_with_pref(base, "loom", &clu);
            MPI_Barrier(clu); /* decides its transport */
            if (put_max > 0) {
                lt_cvar_read_int("coll_loom_ucx_put_max", &saved_put);
                if (MPI_SUCCESS != lt_cvar_write_int("coll_loom_ucx_put_max", put_max)) {
                    if (me == 0) fprintf(stderr, "loom_bw: cannot write coll_loom_ucx_put_max through MPI_T\n");
                    errors++;
                } else {
                    lt_dup_with_pref(base, "loom", &clp);
                    MPI_Barrier(clp); /* its window */
                    lt_cvar_write_int("coll_loom_ucx_put_max", saved_put);
                }
            }
            lt_cvar_write_str("coll_loom_transport", "pml");
            lt_dup_with_pref(base, "loom", &clm);
            MPI_Barrier(clm);
            lt_cvar_write_str("coll_loom_transport", saved_tr);
            for (int kind = 1; kind <= 3; kind++) {
                if (2 == kind && MPI_COMM_NULL == clp) continue;
                for (int v = ntuned, n = nloom; v < n && nv < MAX_VARIANTS; v++) {
                    vs[nv] = vs[v];
                    vs[nv].ucx = kind;
                    vs[nv].comm = 1 == kind ? clu : 2 == kind ? clp : clm;
                    snprintf(vs[nv].label, sizeof(vs[nv].label), "%.*s [%s]", LT_NAME_LEN + 20, vs[v].label,
                             1 == kind ? "ucx" : 2 == kind ? "ucx put" : "pml");
                    nv++;
                }
            }
        }
    }
    for (int v = ntuned; v < nv; v++) {
        int rc = set_loom(&vs[v]);
        if (MPI_SUCCESS != rc) {
            if (me == 0) fprintf(stderr, "loom_bw: cannot select %s through MPI_T: %s\n", vs[v].label, lt_errstr(rc));
            errors++;
        }
    }

    /* ---- who serves: loom on "loom", never on a tuned communicator ---- */
    {
        double one = 1, out[64];
        int bad = 0, any = 0;
        for (int v = 0; v < ntuned + 1; v++) {
            lt_counts_t b, a;
            lt_diff_t d;
            if (v == ntuned) set_loom(&vs[v]);
            lt_read(coll, &b);
            if (coll == LT_ALLGATHER || coll == LT_REDUCE_SCATTER || coll == LT_REDUCE_SCATTER_BLOCK ||
                coll == LT_ALLTOALL) {
                double in[64];
                for (int i = 0; i < 64; i++) in[i] = one;
                run_coll(vs[v].comm, in, out, wsize <= 64 ? 1 : 0);
            } else {
                run_coll(vs[v].comm, &one, out, 1);
            }
            lt_read(coll, &a);
            lt_diff(coll, &b, &a, &d);
            if (v < ntuned ? d.changed != 0 : d.changed != 1) bad++;
            if (me == 0 && (v == 0 || v == ntuned))
                printf("communicator of \"%s\": loom counters %s\n", vs[v].label, d.desc);
        }
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
            if (me == 0) printf("loom_bw: loom serves a tuned communicator or not the loom one (check failed)\n");
            errors++;
        }
    }

    /* ---- sizes and buffers ---- */
    long sizes[MAX_SIZES];
    int ns = 0;
    for (long b = minbytes; b <= maxbytes && ns < MAX_SIZES; b *= 2)
        if (call_count(b) > 0) sizes[ns++] = b; /* per-rank parts of at least one element */
    if (0 == ns) {
        if (me == 0) fprintf(stderr, "loom_bw: no size in %ld..%ld gives every rank an element\n", minbytes, maxbytes);
        MPI_Finalize();
        return 2;
    }
    long maxn = maxbytes / (long) sizeof(double) + wsize;
    double *sbuf = malloc(sizeof(double) * (size_t) maxn), *rbuf = malloc(sizeof(double) * (size_t) maxn);
    for (long j = 0; j < maxn; j++) sbuf[j] = input(wrank, j);

    cell_t *cells = calloc((size_t) ns * nv, sizeof(cell_t));
    for (int c = 0; c < ns * nv; c++) cells[c].samples = calloc((size_t) rounds, sizeof(double));
    if (me == 0 && !quiet) {
        printf("loom_bw: %d sizes %ld..%ld bytes, %d variants, %d rounds (%d above 16 MiB), batches of ~%.0f ms\n", ns,
               sizes[0], sizes[ns - 1], nv, rounds, big_rounds, batch_ms);
        fflush(stdout);
    }

    double t_start = MPI_Wtime();
    for (int s = 0; s < ns; s++) {
        long count = call_count(sizes[s]);
        int nr = sizes[s] > (16L << 20) ? big_rounds : rounds;
        /* calibrate on tuned: iterations for a batch of ~batch_ms */
        int iters = 1;
        {
            double t = 0;
            MPI_Barrier(ct);
            double t0 = MPI_Wtime();
            run_coll(ct, sbuf, rbuf, count);
            double tl = MPI_Wtime() - t0;
            MPI_Allreduce(&tl, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); /* one count for every group */
            iters = (int) (1e-3 * batch_ms / (t > 0 ? t : 1e-6));
            if (iters < 1) iters = 1;
            if (iters > 1000) iters = 1000;
        }
        for (int r = 0; r < nr; r++) {
            int order[MAX_VARIANTS];
            /* a new order every round: the variant timed right after tuned's large calls
             * runs slower, whichever it is, and a rotation kept auto right after tuned
             * (docs/user/tuning.md, "Is auto choosing well?") */
            lt_shuffle(order, nv, (unsigned long long) s * 1000003ULL + (unsigned long long) r);
            for (int vv = 0; vv < nv; vv++) {
                int v = order[vv];
                cell_t *cell = &cells[s * nv + v];
                lt_counts_t b, a;
                if (!vs[v].tuned) set_loom(&vs[v]);
                /* tuned's communicators have no key */
                checked_part = vs[v].tuned ? 1.0 : coll == LT_REDUCE ? reduce_part : bcast_part;
                checked_engage = vs[v].tuned ? 1.0 : engage_part;
                if (r == 0) { /* untimed first call, checked */
                    poison(rbuf, count);
                    run_coll(vs[v].comm, sbuf, rbuf, count);
                    cell->wrong += check(rbuf, count);
                    poison(rbuf, count);
                } else {
                    /* untimed: what switching from the previous variant costs (the buffers it
                     * freed, the schedule lookup) is not this variant's time, which with few
                     * calls per batch it would swamp (docs/user/tuning.md, "Is auto choosing
                     * well?") */
                    run_coll(vs[v].comm, sbuf, rbuf, count);
                }
                MPI_Barrier(MPI_COMM_WORLD);
                lt_read(coll, &b);
                unsigned long long shm_b = 0, shm_a = 0, ucx_b = 0, ucx_a = 0, put_b = 0, put_a = 0;
                lt_shm_node_phases(&shm_b);
                lt_shm_counter(LT_UCX_TRANSFERS, &ucx_b);
                lt_shm_counter(LT_UCX_PUTS, &put_b);
                double t0 = MPI_Wtime(), t = 0;
                if (latency) {
                    /* each call on its own after a barrier: its time on this rank */
                    for (int it = 0; it < iters; it++) {
                        MPI_Barrier(ct);
                        double t1 = MPI_Wtime();
                        run_coll(vs[v].comm, sbuf, rbuf, count);
                        t += MPI_Wtime() - t1;
                    }
                    t /= iters;
                } else {
                    for (int it = 0; it < iters; it++) run_coll(vs[v].comm, sbuf, rbuf, count);
                    t = (MPI_Wtime() - t0) / iters;
                }
                lt_read(coll, &a);
                lt_shm_node_phases(&shm_a);
                lt_shm_counter(LT_UCX_TRANSFERS, &ucx_a);
                lt_shm_counter(LT_UCX_PUTS, &put_a);
                cell->shm += shm_a - shm_b;
                cell->ucx += ucx_a - ucx_b;
                cell->puts += put_a - put_b;
                if (r == 0) cell->wrong += check(rbuf, count); /* the last call of the first batch */
                for (int k = 0; k < lt_nalgs(coll); k++) cell->served[k] += a.alg[k] - b.alg[k];
                cell->fallback += a.fallback - b.fallback;
                cell->calls += (unsigned long long) iters;
                MPI_Allreduce(&t, &cell->samples[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            }
        }
        if (me == 0 && !quiet) {
            fprintf(stderr, "  %ld bytes done, %d iterations per batch, %d rounds (%.1f s)\n", sizes[s], iters, nr,
                    MPI_Wtime() - t_start);
        }
    }
    lt_cvar_write_str(alg_cvar(), saved_alg);
    for (int k = 0; k < NUM_SIZE_KNOBS; k++) lt_cvar_write_int(size_knobs[k], size_knob_start[k]);

    /* ---- report ---- */
    for (int c = 0; c < ns * nv; c++) {
        long w = 0;
        MPI_Allreduce(&cells[c].wrong, &w, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        cells[c].wrong = w;
        if (w) errors++;
    }
    if (me == 0) {
        FILE *cf = NULL;
        if (csv) {
            cf = fopen(csv, "w");
            if (!cf) fprintf(stderr, "loom_bw: cannot write %s\n", csv);
            else
                fprintf(cf, "collective,np,bytes,variant,median_us,min_us,ratio_vs_tuned,bound_us,frac_of_bound,"
                            "B_GBps,rounds,iterations,checked,served_by,nodes,rpn,shm_calls\n");
        }
        printf("\n%9s  %-36s %11s %10s %8s %6s   %s\n", "bytes", "variant", "median us", "min us", "/tuned", "frac",
               "served by");
        for (int s = 0; s < ns; s++) {
            int nr = sizes[s] > (16L << 20) ? big_rounds : rounds;
            double tuned_med = 0, bound = bound_factor(coll, wsize) * (double) sizes[s] / bw;
            for (int v = 0; v < nv; v++) {
                cell_t *cell = &cells[s * nv + v];
                qsort(cell->samples, (size_t) nr, sizeof(double), cmp_double);
                double med = nr % 2 ? cell->samples[nr / 2] : 0.5 * (cell->samples[nr / 2 - 1] + cell->samples[nr / 2]);
                if (v == 0) tuned_med = med;
                char served[256] = "";
                size_t off = 0;
                unsigned long long loom_total = cell->fallback;
                for (int k = 0; k < lt_nalgs(coll); k++) loom_total += cell->served[k];
                if (vs[v].tuned) {
                    snprintf(served, sizeof(served), "%s", loom_total ? "LOOM (check failed)" : "tuned");
                    if (loom_total) errors++;
                } else {
                    for (int k = 0; k < lt_nalgs(coll); k++) {
                        if (!cell->served[k]) continue;
                        int w = snprintf(served + off, sizeof(served) - off, "%s%s", off ? "+" : "", lt_alg_name(coll, k));
                        if (w > 0 && (size_t) w < sizeof(served) - off) off += (size_t) w;
                        if (cell->served[k] != cell->calls) {
                            w = snprintf(served + off, sizeof(served) - off, "(%llu/%llu)", cell->served[k], cell->calls);
                            if (w > 0 && (size_t) w < sizeof(served) - off) off += (size_t) w;
                        }
                    }
                    if (cell->fallback) {
                        int w = snprintf(served + off, sizeof(served) - off, "%sfallback to tuned(%llu/%llu)",
                                         off ? "+" : "", cell->fallback, cell->calls);
                        if (w > 0 && (size_t) w < sizeof(served) - off) off += (size_t) w;
                    }
                    if (loom_total != cell->calls) {
                        snprintf(served + off, sizeof(served) - off, " COUNTERS MOVED %llu FOR %llu CALLS (check failed)",
                                 loom_total, cell->calls);
                        errors++;
                    } else if (0 != strcmp(vs[v].alg, "auto") && (lt_alg_index(coll, vs[v].alg) < 0 ||
                                                                   cell->served[lt_alg_index(coll, vs[v].alg)] != cell->calls)) {
                        size_t l = strlen(served);
                        snprintf(served + l, sizeof(served) - l, "  [%s refused: replaced]", vs[v].alg);
                    }
                }
                if (transports && 3 == vs[v].ucx && cell->ucx > 0) {
                    size_t l = strlen(served);
                    snprintf(served + l, sizeof(served) - l, " UCX TRANSFERS %llu (check failed)", cell->ucx);
                    errors++;
                } else if (transports && 2 != vs[v].ucx && cell->puts > 0) {
                    size_t l = strlen(served);
                    snprintf(served + l, sizeof(served) - l, " UCX PUTS %llu (check failed)", cell->puts);
                    errors++;
                } else if (2 == vs[v].ucx && cell->puts > 0) {
                    size_t l = strlen(served);
                    snprintf(served + l, sizeof(served) - l, " (%llu direct writes on rank 0)", cell->puts);
                } else if (transports && (1 == vs[v].ucx || 2 == vs[v].ucx) && 0 == cell->ucx) {
                    /* rank 0's part may be all in the node's shared segment */
                    size_t l = strlen(served);
                    snprintf(served + l, sizeof(served) - l, " (no UCX transfer on rank 0)");
                }
                if (cell->wrong) {
                    size_t l = strlen(served);
                    snprintf(served + l, sizeof(served) - l, " WRONG RESULT (%ld elements)", cell->wrong);
                }
                double ratio = tuned_med > 0 ? med / tuned_med : 0, frac = med > 0 ? bound / med : 0;
                int iters_used = (int) (cell->calls / (unsigned long long) nr);
                printf("%9ld  %-36s %11.1f %10.1f %8.2f %6.3f   %s\n", sizes[s], vs[v].label, med * 1e6,
                       cell->samples[0] * 1e6, ratio, frac, served);
                if (cf)
                    fprintf(cf, "%s,%d,%ld,%s,%.3f,%.3f,%.4f,%.3f,%.4f,%.3f,%d,%d,%s,\"%s\",%d,%d,%llu\n", lt_coll_name(coll),
                            wsize, sizes[s], vs[v].label, med * 1e6, cell->samples[0] * 1e6, ratio, bound * 1e6, frac,
                            bw / 1e9, nr, iters_used, cell->wrong ? "WRONG" : "ok", served, nodes, rpn, cell->shm);
            }
            printf("\n");
        }
        if (cf) fclose(cf);
        printf("loom_bw: %s (%.1f s)\n", errors ? "CHECKS FAILED" : "all checks passed", MPI_Wtime() - t_start);
    }
    MPI_Bcast(&errors, 1, MPI_INT, 0, MPI_COMM_WORLD);

    for (int c = 0; c < ns * nv; c++) free(cells[c].samples);
    free(cells);
    free(sbuf);
    free(rbuf);
    free(rs_counts);
    for (int v = 1; v < ntuned; v++) MPI_Comm_free(&vs[v].comm);
    MPI_Comm_free(&cl);
    if (MPI_COMM_NULL != clu) MPI_Comm_free(&clu);
    if (MPI_COMM_NULL != clp) MPI_Comm_free(&clp);
    if (MPI_COMM_NULL != clm) MPI_Comm_free(&clm);
    MPI_Comm_free(&ct);
    if (MPI_COMM_WORLD != base) MPI_Comm_free(&base);
    lt_fini();
    MPI_Finalize();
    return errors ? 1 : 0;
}
