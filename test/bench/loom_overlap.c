/*
 * loom_overlap: split-phase (non-blocking) collectives, loom against libnbc (and adapt
 * when it is enabled), in one job (End et al., section V; overlap as the OSU
 * non-blocking benchmarks define it).
 *
 * One communicator per component, made with MPI_Comm_dup_with_info and the info key
 * ompi_comm_coll_preference: "loom", "libnbc,^loom" and, with --adapt, "adapt,^loom"
 * (run with --mca coll_adapt_priority 20 or so, else adapt does not load); with
 * --algs A,B,... also one loom variant per algorithm, forced through MPI_T.  loom's
 * MPI_T counters prove that loom serves its variants and not the others.
 *
 * Per size and variant, interleaved over rounds (every round runs every variant, in
 * a new shuffled order):
 *   pure     a batch of start + MPI_Wait, per call; the sample is the maximum over
 *            ranks;
 *   overall  start, compute for `pure` microseconds calling MPI_Test every -T
 *            microseconds (0: never), MPI_Wait; the compute alone is timed too;
 *   overlap  100 * (1 - (overall - compute) / pure), at least 0: the share of the
 *            collective hidden behind the computation;
 *   exposed  overall - compute: the time the program loses to the collective beyond its
 *            own computation.  The overlap share favours a slower call (its compute is
 *            longer, so it gets more MPI_Test calls, and its waits hide where a faster
 *            call's copies and reductions, work of the calling core, cannot): exposed
 *            compares what the program pays.
 * Reported: medians over rounds, and each variant's pure latency over libnbc's, its
 * overlap minus libnbc's and its exposed time over libnbc's; "loom(prev)": loom's auto handed the calls to the previous
 * component (libnbc); "(refused)": the forced algorithm refused the calls and loom's
 * rules chose another.  --pure skips the overlap part.  Overlap means something only when
 * every rank has a core of its own: with more ranks than cores the compute of one rank
 * waits for the others' (overlap over 100%).
 *
 *   loom_overlap [-c COLL] [-r rounds] [-T test_us] [-s maxbytes] [--sizes B,B,...]
 *                [--algs A,B,...] [--adapt] [--pure] [-q]
 *
 * COLL: iallreduce (default), ibcast, ireduce, iallgather, ireduce_scatter,
 * ireduce_scatter_block, iscan, iexscan, ibarrier, ialltoall.  Sizes (default 8 B, 2040 B =
 * 255 doubles, 64 KiB, 1 MiB, 16 MiB, up to maxbytes): the vector (allreduce, bcast, reduce,
 * scan, exscan), the whole result (allgather), the whole input (reduce_scatter) or the
 * whole send buffer (alltoall).
 * Exit status 1 when a check failed (a wrong allreduce or bcast result, loom not
 * serving a forced loom algorithm, or serving another component's variant).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "../mpi/loom_test_util.h" /* lt_mono_time, lt_shuffle, lt_fail, lt_dup_with_pref */

#define NVAR 16
#define NCOLL 10

static const char *coll_names[NCOLL] = {"iallreduce", "ibcast", "ireduce", "iallgather", "ireduce_scatter",
                                        "ireduce_scatter_block", "iscan", "iexscan", "ibarrier", "ialltoall"};
enum { C_ALLREDUCE, C_BCAST, C_REDUCE, C_ALLGATHER, C_RS, C_RSB, C_SCAN, C_EXSCAN, C_BARRIER, C_ALLTOALL };

typedef struct {
    char name[48];
    const char *pref;
    const char *alg; /* a loom algorithm forced, or NULL */
} variant_t;

/* loom's coll_loom_<coll>_<alg>_calls counters of one collective name (e.g.
 * "iallreduce"), fallback excluded; their sum is how many calls loom served here. */
#define MAX_PVARS 32
static MPI_T_pvar_session pv_session;
static MPI_T_pvar_handle pv_handle[MAX_PVARS];
static char pv_alg[MAX_PVARS][64]; /* the algorithm each counter counts */
static int npv;

static void find_counters(const char *coll)
{
    char prefix[64], name[256], desc[256];
    int num = 0;

    snprintf(prefix, sizeof(prefix), "coll_loom_%s_", coll);
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num && npv < MAX_PVARS; ++i) {
        int nlen = sizeof(name), dlen = sizeof(desc), verb, vclass, bind, ro, cont, atomic, count;
        MPI_Datatype dt;
        MPI_T_enum en;
        size_t len;

        if (MPI_SUCCESS != MPI_T_pvar_get_info(i, name, &nlen, &verb, &vclass, &dt, &en, desc, &dlen, &bind, &ro,
                                               &cont, &atomic)) {
            continue;
        }
        len = strlen(name);
        if (0 != strncmp(name, prefix, strlen(prefix)) || len < 6 || 0 != strcmp(name + len - 6, "_calls") ||
            NULL != strstr(name, "fallback")) {
            continue;
        }
        if (MPI_SUCCESS == MPI_T_pvar_handle_alloc(pv_session, i, NULL, &pv_handle[npv], &count)) {
            snprintf(pv_alg[npv], sizeof(pv_alg[npv]), "%.*s", (int) (len - 6 - strlen(prefix)), name + strlen(prefix));
            if (!cont) {
                MPI_T_pvar_start(pv_session, pv_handle[npv]);
            }
            npv++;
        }
    }
}

/* Calls loom served with algorithm `alg` (NULL: with any). */
static unsigned long long loom_served(const char *alg)
{
    unsigned long long total = 0;

    for (int k = 0; k < npv; ++k) {
        unsigned long long v[8] = {0};
        if (NULL != alg && 0 != strcmp(alg, pv_alg[k])) {
            continue;
        }
        MPI_T_pvar_read(pv_session, pv_handle[k], v);
        total += v[0];
    }
    return total;
}

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

static double max_over_ranks(double t, MPI_Comm comm)
{
    double m;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
    return m;
}

/* Busy computation of `us` microseconds, testing req every test_us (0: never). */
static void compute(double us, double test_us, MPI_Request *req)
{
    const double t0 = lt_mono_time();
    double next = test_us > 0 ? test_us : 1e300;
    volatile double x = 1.0;

    for (;;) {
        double el = (lt_mono_time() - t0) * 1e6;
        if (el >= us) {
            break;
        }
        if (NULL != req && el >= next) {
            int flag;
            MPI_Test(req, &flag, MPI_STATUS_IGNORE);
            next += test_us;
        }
        for (int i = 0; i < 64; ++i) {
            x = x * 1.0000001 + 1e-9;
        }
    }
}

static int *rs_counts;

static void start(int coll, double *buf, double *res, int n, MPI_Comm comm, MPI_Request *req)
{
    int P;

    MPI_Comm_size(comm, &P);
    switch (coll) {
    case C_BCAST: MPI_Ibcast(buf, n, MPI_DOUBLE, 0, comm, req); break;
    case C_REDUCE: MPI_Ireduce(buf, res, n, MPI_DOUBLE, MPI_SUM, 0, comm, req); break;
    case C_ALLGATHER: MPI_Iallgather(buf, n / P, MPI_DOUBLE, res, n / P, MPI_DOUBLE, comm, req); break;
    case C_RS: MPI_Ireduce_scatter(buf, res, rs_counts, MPI_DOUBLE, MPI_SUM, comm, req); break;
    case C_RSB: MPI_Ireduce_scatter_block(buf, res, n / P, MPI_DOUBLE, MPI_SUM, comm, req); break;
    case C_SCAN: MPI_Iscan(buf, res, n, MPI_DOUBLE, MPI_SUM, comm, req); break;
    case C_EXSCAN: MPI_Iexscan(buf, res, n, MPI_DOUBLE, MPI_SUM, comm, req); break;
    case C_BARRIER: MPI_Ibarrier(comm, req); break;
    case C_ALLTOALL: MPI_Ialltoall(buf, n / P, MPI_DOUBLE, res, n / P, MPI_DOUBLE, comm, req); break;
    default: MPI_Iallreduce(buf, res, n, MPI_DOUBLE, MPI_SUM, comm, req); break;
    }
}

/* coll_loom_<blocking coll>_algorithm: one parameter forces both forms (an enumerator:
 * lt_cvar_write_str writes the item's value) */
static int force(int coll, const char *alg)
{
    char name[96];

    snprintf(name, sizeof(name), "coll_loom_%s_algorithm", coll_names[coll] + 1);
    return lt_cvar_write_str(name, NULL != alg ? alg : "auto");
}

int main(int argc, char **argv)
{
    int rounds = 7, coll = C_ALLREDUCE, quiet = 0, with_adapt = 0, pure_only = 0, rank, P, nvar = 0, bad = 0;
    double test_us = 20;
    size_t maxbytes = (size_t) 16 << 20, sizes[32] = {8, 2040, 64 << 10, 1 << 20, 16 << 20};
    int nsizes = 5;
    char *algs = NULL;
    variant_t var[NVAR];
    MPI_Comm comm[NVAR];
    unsigned long long before, after, any_before, any_after;

    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            ++i;
            for (int c = 0; c < NCOLL; ++c) {
                if (!strcmp(argv[i], coll_names[c]) || !strcmp(argv[i], coll_names[c] + 1)) {
                    coll = c;
                }
            }
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-T") && i + 1 < argc) {
            test_us = atof(argv[++i]);
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            maxbytes = (size_t) atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            char *list = argv[++i], *tok;
            nsizes = 0;
            for (tok = strtok(list, ","); NULL != tok && nsizes < 32; tok = strtok(NULL, ",")) {
                sizes[nsizes++] = (size_t) atoll(tok);
            }
        } else if (!strcmp(argv[i], "--algs") && i + 1 < argc) {
            algs = argv[++i];
        } else if (!strcmp(argv[i], "--adapt")) {
            with_adapt = 1;
        } else if (!strcmp(argv[i], "--pure")) {
            pure_only = 1;
        } else if (!strcmp(argv[i], "-q")) {
            quiet = 1;
        }
    }
    if (rounds < 1) {
        rounds = 1;
    }
    if (C_BARRIER == coll) {
        sizes[0] = 0;
        nsizes = 1;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    {
        int provided;
        lt_mpit_init(&provided); /* at MPI's thread level (loom_test_util.h) */
        MPI_T_pvar_session_create(&pv_session);
        find_counters(coll_names[coll]);
    }
    /* variants: loom auto, libnbc, [adapt], loom forced algorithms */
    var[nvar++] = (variant_t) {"loom", "loom", NULL};
    var[nvar++] = (variant_t) {"libnbc", "libnbc,^loom", NULL};
    if (with_adapt) {
        var[nvar++] = (variant_t) {"adapt", "adapt,^loom", NULL};
    }
    for (char *tok = NULL != algs ? strtok(algs, ",") : NULL; NULL != tok && nvar < NVAR; tok = strtok(NULL, ",")) {
        snprintf(var[nvar].name, sizeof(var[nvar].name), "loom:%s", tok);
        var[nvar].pref = "loom";
        var[nvar].alg = tok;
        nvar++;
    }
    for (int v = 0; v < nvar; ++v) {
        lt_dup_with_pref(MPI_COMM_WORLD, var[v].pref, &comm[v]);
    }
    rs_counts = malloc((size_t) P * sizeof(int));
    if (0 == rank) {
        printf("# loom_overlap %s, P=%d, %d rounds, MPI_Test every %.0f us during the compute\n",
               coll_names[coll], P, rounds, test_us);
        printf("%10s %-22s %12s %12s %12s %9s %12s %14s %11s %15s\n", "bytes", "variant", "pure_us", "overall_us",
               "compute_us", "overlap%", "pure/libnbc", "overlap-libnbc", "exposed_us", "exposed/libnbc");
    }

    for (int si = 0; si < nsizes && sizes[si] <= maxbytes; ++si) {
        int n = (int) (sizes[si] / sizeof(double));
        const int iters = sizes[si] <= 2040 ? 200 : sizes[si] <= (64 << 10) ? 40 : sizes[si] <= (1 << 20) ? 8 : 2;
        double *buf, *res, *pure[NVAR], *overall[NVAR], *comp[NVAR], mp[NVAR], mo[NVAR], mc[NVAR], ov[NVAR];
        int order[NVAR], handed_on[NVAR] = {0}, refused[NVAR] = {0};

        if (C_ALLGATHER == coll || C_RS == coll || C_RSB == coll || C_ALLTOALL == coll) {
            n = n / P * P; /* whole blocks per rank */
        }
        for (int q = 0; q < P; ++q) {
            rs_counts[q] = n / P;
        }
        buf = malloc((size_t) (n > 0 ? n : 1) * sizeof(double));
        res = malloc((size_t) (n > 0 ? n : 1) * sizeof(double));
        for (int v = 0; v < nvar; ++v) {
            pure[v] = calloc((size_t) rounds, sizeof(double));
            overall[v] = calloc((size_t) rounds, sizeof(double));
            comp[v] = calloc((size_t) rounds, sizeof(double));
        }
        for (int r = 0; r < rounds; ++r) {
            for (int v = 0; v < nvar; ++v) {
                order[v] = v;
            }
            lt_shuffle(order, nvar, (unsigned long long) (si * 1000 + r));
            for (int k = 0; k < nvar; ++k) {
                const int v = order[k];
                MPI_Request req;
                double t0, tp, to = 0, tc = 0;

                for (int i = 0; i < n; ++i) {
                    buf[i] = (double) (rank + i % 7);
                }
                if (MPI_SUCCESS != force(coll, var[v].alg)) {
                    lt_fail(rank, "%s: cannot force %s through MPI_T", var[v].name, var[v].alg ? var[v].alg : "auto");
                    bad = 1;
                }
                before = loom_served(var[v].alg);
                any_before = loom_served(NULL);
                /* pure latency (one warm-up call first) */
                start(coll, buf, res, n, comm[v], &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                MPI_Barrier(comm[v]);
                t0 = lt_mono_time();
                for (int it = 0; it < iters; ++it) {
                    start(coll, buf, res, n, comm[v], &req);
                    MPI_Wait(&req, MPI_STATUS_IGNORE);
                }
                tp = max_over_ranks((lt_mono_time() - t0) * 1e6 / iters, comm[v]);
                if (!pure_only) {
                    /* the compute alone, as long as the collective */
                    MPI_Barrier(comm[v]);
                    t0 = lt_mono_time();
                    for (int it = 0; it < iters; ++it) {
                        compute(tp, test_us, NULL);
                    }
                    tc = max_over_ranks((lt_mono_time() - t0) * 1e6 / iters, comm[v]);
                    /* the collective behind the compute */
                    MPI_Barrier(comm[v]);
                    t0 = lt_mono_time();
                    for (int it = 0; it < iters; ++it) {
                        start(coll, buf, res, n, comm[v], &req);
                        compute(tp, test_us, &req);
                        MPI_Wait(&req, MPI_STATUS_IGNORE);
                    }
                    to = max_over_ranks((lt_mono_time() - t0) * 1e6 / iters, comm[v]);
                }
                after = loom_served(var[v].alg);
                any_after = loom_served(NULL);
                force(coll, NULL);
                /* a variant of another component that loom served is an error; loom's
                 * auto may hand a call on, and a forced algorithm that refuses a call
                 * (count 0, an op it cannot combine) leaves it to the rules: marked */
                if (0 != strcmp(var[v].pref, "loom") && any_after > any_before) {
                    lt_fail(rank, "%s at %zu B: loom served %llu calls", var[v].name, sizes[si],
                            any_after - any_before);
                    bad = 1;
                }
                handed_on[v] |= 0 == strcmp(var[v].pref, "loom") && any_after == any_before;
                refused[v] |= NULL != var[v].alg && after == before && any_after > any_before;
                pure[v][r] = tp;
                overall[v][r] = to;
                comp[v][r] = tc;
                /* the last call's result: allreduce sums, bcast root's data */
                for (int i = 0; i < n && C_ALLREDUCE == coll; ++i) {
                    double e = (double) P * (double) (i % 7) + (double) P * (P - 1) / 2.0;
                    if (res[i] != e) {
                        lt_fail(rank, "%s %zu B: element %d is %g, expected %g", var[v].name, sizes[si], i,
                                res[i], e);
                        bad = 1;
                        break;
                    }
                }
                for (int i = 0; i < n && C_BCAST == coll; ++i) {
                    if (buf[i] != (double) (i % 7)) {
                        lt_fail(rank, "%s %zu B: element %d is %g", var[v].name, sizes[si], i, buf[i]);
                        bad = 1;
                        break;
                    }
                }
            }
        }
        for (int v = 0; v < nvar; ++v) {
            mp[v] = median(pure[v], rounds);
            mo[v] = median(overall[v], rounds);
            mc[v] = median(comp[v], rounds);
            ov[v] = pure_only ? 0 : 100.0 * (1.0 - (mo[v] - mc[v]) / mp[v]);
            ov[v] = ov[v] < 0 ? 0 : ov[v];
        }
        for (int v = 0; v < nvar && 0 == rank && !quiet; ++v) {
            char name[64];
            snprintf(name, sizeof(name), "%s%s", var[v].name,
                     handed_on[v] ? "(prev)" : refused[v] ? "(refused)" : "");
            const double ex = mo[v] - mc[v], ex1 = mo[1] - mc[1];
            printf("%10zu %-22s %12.2f %12.2f %12.2f %9.1f %12.2f %14.1f %11.2f %15.2f\n", sizes[si], name, mp[v],
                   mo[v], mc[v], ov[v], mp[v] / mp[1], ov[v] - ov[1], ex, ex1 > 0 ? ex / ex1 : 0.0);
        }
        fflush(stdout);
        for (int v = 0; v < nvar; ++v) {
            free(pure[v]);
            free(overall[v]);
            free(comp[v]);
        }
        free(buf);
        free(res);
    }
    for (int v = 0; v < nvar; ++v) {
        MPI_Comm_free(&comm[v]);
    }
    free(rs_counts);
    for (int k = 0; k < npv; ++k) {
        MPI_T_pvar_handle_free(pv_session, &pv_handle[k]);
    }
    MPI_T_pvar_session_free(&pv_session);
    MPI_T_finalize();
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return bad;
}
