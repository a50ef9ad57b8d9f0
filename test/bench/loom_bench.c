/*
 * loom_bench: loom against Open MPI's tuned component, in one job.
 *
 * Two communicators are made with MPI_Comm_dup_with_info and the info key
 * ompi_comm_coll_preference: "loom" (loom preferred) and "tuned,^loom" (tuned, loom
 * excluded).  loom's MPI_T counters prove that loom serves the first and not the
 * second.  Variants: tuned (its default decision), loom auto, and every loom
 * algorithm of the collective (found through the coll_loom_<coll>_<alg>_calls
 * counters) with knob n = 1, 2, 3 for the algorithms that have one, switched by
 * MPI_T control-variable writes.
 *
 * For each message size, rounds x variants batches are run, interleaved (every round
 * times all variants, in a new shuffled order, so drifting machine load and whatever
 * a variant leaves behind for the next one hit every variant alike).  A batch: a barrier, `iterations`
 * back-to-back calls, the batch time divided by the iterations; the sample is the
 * maximum of that over ranks.  By default the iterations of a size are calibrated
 * (on tuned) so a batch lasts about 20 ms: on an oversubscribed machine a batch
 * much shorter than a scheduler time slice gives bimodal samples.  Reported per variant:
 * the median and the minimum of the samples, and the ratio of the medians to
 * tuned's.  After the run, the counters read around every batch tell which loom
 * algorithm really served each variant (a forced algorithm that cannot serve a call
 * is replaced by another one; auto may hand calls to tuned): shown in the "served
 * by" column, and a variant that loom did not serve is flagged.
 *
 *   loom_bench [-c allreduce|barrier] [-i iterations | -t batch_ms] [-r rounds]
 *              [-m minbytes] [-s maxbytes] [--op sum|max] [--type int|double] [--csv FILE] [-q]
 *
 * Sizes: 4 B (one int), 8 B, 2040 B (255 doubles), and the powers of two from 16 B
 * to maxbytes (default 1 MiB), without those below minbytes (default 0); sizes that are not a whole number of elements of the
 * type are skipped.  With -i, the iterations per batch shrink above 64 KiB in
 * proportion to the size (at least 3).  Exit status 1 when a check failed (loom not serving the
 * "loom" communicator, serving the "tuned,^loom" one, a wrong result, or a variant
 * whose counter did not move).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "../mpi/loom_test_util.h"

#define MAX_VARIANTS 48
#define MAX_SIZES 64

typedef struct {
    char label[LT_NAME_LEN + 32];
    int tuned;             /* 1: runs on the tuned communicator, 2: on the han one */
    char alg[LT_NAME_LEN]; /* "auto" or an algorithm name */
    int n;                 /* knob, 0 = default */
    int spin;              /* coll_loom_shm_spin for this variant; INT_MIN: the default */
} variant_t;

static int def_spin = INT_MIN; /* coll_loom_shm_spin as the job started */

typedef struct {
    double *samples;            /* [rounds] */
    unsigned long long served[LT_MAX_ALGS];
    unsigned long long fallback;
    unsigned long long calls;
    unsigned long long shm; /* calls whose node phases used the shared segment (rank 0) */
    int wrong;
} cell_t;

static int wrank, wsize;
static int errors = 0;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void usage(const char *prog)
{
    if (wrank == 0)
        fprintf(stderr,
                "usage: %s [-c allreduce|barrier] [-i iterations | -t batch_ms] [-r rounds]\n"
                "          [-m minbytes] [-s maxbytes] [--op sum|max] [--type int|double] [--csv FILE] [-q]\n"
                "          [--algs A,B,...] [--shm-spin N,M,...] [--han] [--buf-offset N]\n"
                "  --han       also time Open MPI's han (communicator preference \"han,^loom\")\n"
                "  --algs      time only these loom algorithms (besides tuned and loom auto)\n"
                "  --shm-spin  add 'hierarchical' variants with coll_loom_shm_spin set to each value\n"
                "  --buf-offset  send buffer page-aligned, receive buffer N bytes (mod 4096) after a page\n",
                prog);
}

static int set_variant(const variant_t *v, lt_coll_t coll, int def_ways, int def_ports)
{
    int rc;
    if (v->tuned) return MPI_SUCCESS;
    if (def_spin != INT_MIN) {
        rc = lt_cvar_write_int("coll_loom_shm_spin", v->spin != INT_MIN ? v->spin : def_spin);
        if (MPI_SUCCESS != rc) return rc;
    }
    rc = lt_cvar_write_str(coll == LT_ALLREDUCE ? "coll_loom_allreduce_algorithm" : "coll_loom_barrier_algorithm",
                           v->alg);
    if (MPI_SUCCESS != rc) return rc;
    const char *kv = lt_knob_cvar(v->alg);
    if (def_ways > 0) {
        rc = lt_cvar_write_int("coll_loom_dissemination_ways",
                               kv && v->n > 0 && 0 == strcmp(kv, "coll_loom_dissemination_ways") ? v->n : def_ways);
        if (MPI_SUCCESS != rc) return rc;
    }
    if (def_ports > 0) {
        rc = lt_cvar_write_int("coll_loom_bruck_ports",
                               kv && v->n > 0 && 0 == strcmp(kv, "coll_loom_bruck_ports") ? v->n : def_ports);
        if (MPI_SUCCESS != rc) return rc;
    }
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    lt_coll_t coll = LT_ALLREDUCE;
    int iterations = 0, rounds = 7, quiet = 0; /* iterations 0: calibrate */
    double batch_ms = 20.0;
    long maxbytes = 1L << 20, minbytes = 0;
    int use_max = 0, use_double = 0;
    const char *csv = NULL;
    const char *only_algs = NULL, *spins = NULL;
    long buf_offset = -1; /* --buf-offset: -1, the buffers wherever malloc puts them */
    int with_han = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int nodes, rpn; /* recorded in the CSV: loom-tune writes them into its rules */
    lt_shape(MPI_COMM_WORLD, &nodes, &rpn);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (0 == strcmp(a, "-c") && val) {
            if (0 == strcmp(val, "allreduce")) coll = LT_ALLREDUCE;
            else if (0 == strcmp(val, "barrier")) coll = LT_BARRIER;
            else { usage(argv[0]); MPI_Finalize(); return 2; }
            i++;
        } else if (0 == strcmp(a, "-i") && val) { iterations = atoi(val); i++; }
        else if (0 == strcmp(a, "-t") && val) { batch_ms = atof(val); iterations = 0; i++; }
        else if (0 == strcmp(a, "-r") && val) { rounds = atoi(val); i++; }
        else if (0 == strcmp(a, "-s") && val) { maxbytes = atol(val); i++; }
        else if (0 == strcmp(a, "-m") && val) { minbytes = atol(val); i++; }
        else if (0 == strcmp(a, "--op") && val) {
            if (0 == strcmp(val, "sum")) use_max = 0;
            else if (0 == strcmp(val, "max")) use_max = 1;
            else { usage(argv[0]); MPI_Finalize(); return 2; }
            i++;
        } else if (0 == strcmp(a, "--type") && val) {
            if (0 == strcmp(val, "int")) use_double = 0;
            else if (0 == strcmp(val, "double")) use_double = 1;
            else { usage(argv[0]); MPI_Finalize(); return 2; }
            i++;
        } else if (0 == strcmp(a, "--csv") && val) { csv = val; i++; }
        else if (0 == strcmp(a, "-q")) quiet = 1;
        else if (0 == strcmp(a, "--buf-offset") && val) { buf_offset = atol(val) & 4095; i++; }
        else if (0 == strcmp(a, "--algs") && val) { only_algs = val; i++; }
        else if (0 == strcmp(a, "--shm-spin") && val) { spins = val; i++; }
        else if (0 == strcmp(a, "--han")) with_han = 1;
        else { usage(argv[0]); MPI_Finalize(); return 2; }
    }
    if (iterations < 0) iterations = 0;
    if (batch_ms <= 0) batch_ms = 20.0;
    if (rounds < 1) rounds = 1;

    if (lt_init() <= 0) {
        if (wrank == 0) fprintf(stderr, "loom_bench: no coll_loom_* performance variable: loom is not loaded\n");
        MPI_Finalize();
        return 2;
    }
    if (wsize < 2 && wrank == 0) printf("note: 1 process: loom declines 1-rank communicators, nothing to compare\n");

    /* ---- communicators, and proof of who serves them ---- */
    MPI_Comm cl, ct;
    lt_dup_with_pref(MPI_COMM_WORLD, "loom", &cl);
    lt_dup_with_pref(MPI_COMM_WORLD, "tuned,^loom", &ct);
    MPI_Comm chn = MPI_COMM_NULL;
    if (with_han) lt_dup_with_pref(MPI_COMM_WORLD, "han,^loom", &chn);
    {
        lt_counts_t b, a;
        lt_diff_t dl, dt;
        int x = 1, y = 0;
        lt_read(coll, &b);
        if (coll == LT_ALLREDUCE) MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, cl);
        else MPI_Barrier(cl);
        lt_read(coll, &a);
        lt_diff(coll, &b, &a, &dl);
        lt_read(coll, &b);
        if (coll == LT_ALLREDUCE) MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, ct);
        else MPI_Barrier(ct);
        lt_read(coll, &a);
        lt_diff(coll, &b, &a, &dt);
        int bad_l = wsize > 1 && dl.changed != 1, bad_t = dt.changed != 0, any[2], mine[2] = {bad_l, bad_t};
        MPI_Allreduce(mine, any, 2, MPI_INT, MPI_MAX, ct);
        if (wrank == 0) {
            printf("communicator \"loom\":        loom counters %s -> %s\n", dl.desc,
                   wsize == 1 ? "1 rank: loom declines it" : any[0] ? "NOT served by loom (check failed)" : "served by loom");
            printf("communicator \"tuned,^loom\": loom counters %s -> %s\n", dt.desc,
                   any[1] ? "served by loom (check failed)" : "not served by loom");
        }
        if (any[0] || any[1]) errors++;
    }

    /* ---- variants ---- */
    int def_ways = -1, def_ports = -1;
    lt_cvar_read_int("coll_loom_dissemination_ways", &def_ways);
    lt_cvar_read_int("coll_loom_bruck_ports", &def_ports);
    char saved_alg[LT_NAME_LEN] = "auto";
    const char *alg_cvar = coll == LT_ALLREDUCE ? "coll_loom_allreduce_algorithm" : "coll_loom_barrier_algorithm";
    lt_cvar_read_str(alg_cvar, saved_alg, sizeof(saved_alg));

    variant_t vs[MAX_VARIANTS];
    int nv = 0;
    lt_cvar_read_int("coll_loom_shm_spin", &def_spin);
    vs[nv++] = (variant_t){"tuned", 1, "", 0, INT_MIN};
    if (with_han) vs[nv++] = (variant_t){"han", 2, "", 0, INT_MIN};
    vs[nv++] = (variant_t){"loom auto", 0, "auto", 0, INT_MIN};
    for (int a = 0; a < lt_nalgs(coll) && nv < MAX_VARIANTS - 3; a++) {
        const char *name = lt_alg_name(coll, a);
        if (NULL != only_algs && !lt_in_list(only_algs, name)) continue;
        /* the knobs that are counts (ways, ports) are swept; a size knob (segment, chunk
         * bytes) stays at its default, 0 = automatic, which set_variant leaves alone */
        const char *kc = lt_knob_cvar(name);
        if (kc && (0 == strcmp(kc, "coll_loom_dissemination_ways") || 0 == strcmp(kc, "coll_loom_bruck_ports"))) {
            for (int n = 1; n <= 3; n++) {
                vs[nv] = (variant_t){"", 0, "", n, INT_MIN};
                snprintf(vs[nv].alg, LT_NAME_LEN, "%s", name);
                snprintf(vs[nv].label, sizeof(vs[nv].label), "loom %.*s n=%d", LT_NAME_LEN - 1, name, n);
                nv++;
            }
        } else {
            vs[nv] = (variant_t){"", 0, "", 0, INT_MIN};
            snprintf(vs[nv].alg, LT_NAME_LEN, "%s", name);
            snprintf(vs[nv].label, sizeof(vs[nv].label), "loom %.*s", LT_NAME_LEN - 1, name);
            nv++;
        }
    }
    for (const char *p = spins; NULL != p && '\0' != *p && nv < MAX_VARIANTS; ) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || def_spin == INT_MIN) {
            if (wrank == 0) fprintf(stderr, "loom_bench: --shm-spin needs integers and coll_loom_shm_spin\n");
            errors++;
            break;
        }
        vs[nv] = (variant_t){"", 0, "hierarchical", 0, (int) v};
        snprintf(vs[nv].label, sizeof(vs[nv].label), "loom hierarchical spin=%ld", v);
        nv++;
        p = ',' == *end ? end + 1 : end;
    }
    for (int v = 0; v < nv; v++) {
        int rc = set_variant(&vs[v], coll, def_ways, def_ports);
        if (MPI_SUCCESS != rc) {
            if (wrank == 0) fprintf(stderr, "loom_bench: cannot select %s through MPI_T: %s\n", vs[v].label, lt_errstr(rc));
            errors++;
        }
    }

    /* ---- sizes ---- */
    const int esize = use_double ? (int) sizeof(double) : (int) sizeof(int);
    MPI_Datatype dtype = use_double ? MPI_DOUBLE : MPI_INT;
    MPI_Op op = use_max ? MPI_MAX : MPI_SUM;
    long sizes[MAX_SIZES];
    int ns = 0;
    if (coll == LT_BARRIER) {
        sizes[ns++] = 0;
    } else {
        long cand[MAX_SIZES];
        int nc = 0;
        cand[nc++] = 4;
        cand[nc++] = 8;
        cand[nc++] = 2040;
        for (long b = 16; b <= maxbytes && nc < MAX_SIZES - 1; b *= 2) cand[nc++] = b;
        for (int i = 0; i < nc; i++) /* sort, keep whole numbers of elements within maxbytes */
            for (int j = i + 1; j < nc; j++)
                if (cand[j] < cand[i]) { long t = cand[i]; cand[i] = cand[j]; cand[j] = t; }
        for (int i = 0; i < nc; i++)
            if (cand[i] % esize == 0 && cand[i] >= minbytes && cand[i] <= maxbytes && (ns == 0 || sizes[ns - 1] != cand[i])) sizes[ns++] = cand[i];
    }

    long maxcount = 1;
    for (int s = 0; s < ns; s++)
        if (sizes[s] / esize > maxcount) maxcount = sizes[s] / esize;
    /* --buf-offset N: the send buffer starts a page, the receive buffer N bytes after a
     * page boundary.  Copies and reductions between two buffers whose addresses differ by
     * a multiple of 4 KiB (or nearly) can run several times slower (4K aliasing of loads
     * and stores), and malloc's placement decides that for every algorithm alike */
    char *sbuf = NULL, *rbuf = NULL, *rmem = NULL;
    if (buf_offset >= 0) {
        if (0 != posix_memalign((void **) &sbuf, 4096, (size_t) maxcount * esize) ||
            0 != posix_memalign((void **) &rmem, 4096, (size_t) maxcount * esize + 4096)) {
            sbuf = rmem = NULL;
        }
        rbuf = rmem ? rmem + buf_offset : NULL;
    } else {
        sbuf = malloc((size_t) maxcount * esize);
        rbuf = rmem = malloc((size_t) maxcount * esize);
    }
    if (NULL == sbuf || NULL == rbuf) {
        fprintf(stderr, "loom_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < maxcount; i++) {
        if (use_double) ((double *) sbuf)[i] = (double) (wrank + 1) + (double) (i % 7);
        else ((int *) sbuf)[i] = (wrank + 1) + (int) (i % 7);
    }

    cell_t *cells = calloc((size_t) ns * nv, sizeof(cell_t));
    for (int c = 0; c < ns * nv; c++) cells[c].samples = calloc((size_t) rounds, sizeof(double));

    if (wrank == 0 && !quiet) {
        char itdesc[64];
        if (iterations) snprintf(itdesc, sizeof(itdesc), "%d iterations per batch%s", iterations,
                                 coll == LT_ALLREDUCE ? " (fewer above 64 KiB)" : "");
        else snprintf(itdesc, sizeof(itdesc), "batches of ~%.0f ms", batch_ms);
        printf("loom_bench: %s, op=%s, type=%s, np=%d, %s, %d rounds, %d variants\n", lt_coll_name(coll),
               use_max ? "max" : "sum", use_double ? "double" : "int", wsize, itdesc, rounds, nv);
        fflush(stdout);
    }

    double t_start = MPI_Wtime();
    for (int s = 0; s < ns; s++) {
        long count = sizes[s] / esize;
        int iters = iterations;
        if (iterations && sizes[s] > 65536) {
            iters = (int) ((long) iterations * 65536 / sizes[s]);
            if (iters < 3) iters = 3;
        }
        if (!iterations) { /* calibrate on tuned: a batch of ~batch_ms */
            double t = 0;
            int n = 4;
            for (;;) {
                MPI_Barrier(ct);
                double t0 = MPI_Wtime();
                for (int it = 0; it < n; it++) {
                    if (coll == LT_ALLREDUCE) MPI_Allreduce(sbuf, rbuf, (int) count, dtype, op, ct);
                    else MPI_Barrier(ct);
                }
                double tl = MPI_Wtime() - t0;
                MPI_Allreduce(&tl, &t, 1, MPI_DOUBLE, MPI_MAX, ct);
                if (t >= 0.25e-3 * batch_ms || n >= 1 << 20) break;
                n *= 4;
            }
            double per = t / n;
            iters = (int) (1e-3 * batch_ms / (per > 0 ? per : 1e-6));
            if (iters < 3) iters = 3;
            if (iters > 1 << 20) iters = 1 << 20;
        }
        for (int r = 0; r < rounds; r++) {
            int order[MAX_VARIANTS];
            /* a new order every round: the variant timed right after tuned's large calls
             * runs slower, whichever it is, and a rotation kept auto right after tuned
             * (docs/user/tuning.md, "Is auto choosing well?") */
            lt_shuffle(order, nv, (unsigned long long) s * 1000003ULL + (unsigned long long) r);
            for (int vv = 0; vv < nv; vv++) {
                int v = order[vv];
                cell_t *cell = &cells[s * nv + v];
                MPI_Comm comm = 1 == vs[v].tuned ? ct : 2 == vs[v].tuned ? chn : cl;
                lt_counts_t b, a;
                set_variant(&vs[v], coll, def_ways, def_ports);
                /* one untimed call: warms up the schedule cache and checks the result */
                if (coll == LT_ALLREDUCE) {
                    memset(rbuf, 0, (size_t) count * esize);
                    MPI_Allreduce(sbuf, rbuf, (int) count, dtype, op, comm);
                    for (long i = 0; i < count; i += (count > 1 ? count - 1 : 1)) {
                        double want = use_max ? (double) wsize + (double) (i % 7)
                                              : (double) wsize * (wsize + 1) / 2 + (double) wsize * (double) (i % 7);
                        double got = use_double ? ((double *) rbuf)[i] : (double) ((int *) rbuf)[i];
                        if (got != want) cell->wrong++;
                    }
                } else {
                    MPI_Barrier(comm);
                }
                MPI_Barrier(ct);
                lt_read(coll, &b);
                unsigned long long shm_b = 0, shm_a = 0;
                lt_shm_node_phases(&shm_b);
                double t0 = MPI_Wtime();
                if (coll == LT_ALLREDUCE)
                    for (int it = 0; it < iters; it++) MPI_Allreduce(sbuf, rbuf, (int) count, dtype, op, comm);
                else
                    for (int it = 0; it < iters; it++) MPI_Barrier(comm);
                double t = (MPI_Wtime() - t0) / iters;
                lt_read(coll, &a);
                lt_shm_node_phases(&shm_a);
                cell->shm += shm_a - shm_b;
                for (int k = 0; k < lt_nalgs(coll); k++) cell->served[k] += a.alg[k] - b.alg[k];
                cell->fallback += a.fallback - b.fallback;
                cell->calls += (unsigned long long) iters;
                double tmax;
                MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, ct);
                cell->samples[r] = tmax;
            }
        }
        if (wrank == 0 && !quiet && ns > 1) {
            fprintf(stderr, "  %ld bytes done, %d iterations per batch (%.1f s)\n", sizes[s], iters,
                    MPI_Wtime() - t_start);
        }
    }

    /* restore the cvars */
    lt_cvar_write_str(alg_cvar, saved_alg);
    if (def_ways > 0) lt_cvar_write_int("coll_loom_dissemination_ways", def_ways);
    if (def_ports > 0) lt_cvar_write_int("coll_loom_bruck_ports", def_ports);
    if (def_spin != INT_MIN) lt_cvar_write_int("coll_loom_shm_spin", def_spin);

    /* ---- report (rank 0's counters; every rank runs the same calls) ---- */
    int wrong_any = 0, wrong_local = 0;
    for (int c = 0; c < ns * nv; c++) wrong_local += cells[c].wrong;
    MPI_Allreduce(&wrong_local, &wrong_any, 1, MPI_INT, MPI_SUM, ct);
    if (wrong_any) errors++;

    if (wrank == 0) {
        FILE *cf = NULL;
        if (csv) {
            cf = fopen(csv, "w");
            if (!cf) fprintf(stderr, "loom_bench: cannot write %s\n", csv);
            else fprintf(cf, "collective,op,type,np,bytes,variant,median_us,min_us,ratio_vs_tuned,served_by,nodes,rpn,shm_calls\n");
        }
        printf("\n%9s  %-22s %11s %10s %8s   %s\n", "bytes", "variant", "median us", "min us", "vs tuned", "served by");
        for (int s = 0; s < ns; s++) {
            double tuned_med = 0;
            for (int v = 0; v < nv; v++) {
                cell_t *cell = &cells[s * nv + v];
                qsort(cell->samples, (size_t) rounds, sizeof(double), cmp_double);
                double med = rounds % 2 ? cell->samples[rounds / 2]
                                        : 0.5 * (cell->samples[rounds / 2 - 1] + cell->samples[rounds / 2]);
                double mn = cell->samples[0];
                if (v == 0) tuned_med = med;
                char served[256] = "";
                size_t off = 0;
                unsigned long long loom_total = cell->fallback;
                for (int k = 0; k < lt_nalgs(coll); k++) loom_total += cell->served[k];
                if (2 == vs[v].tuned) {
                    /* han's own sub-communicators may be loom's */
                    snprintf(served, sizeof(served), "han");
                } else if (vs[v].tuned) {
                    snprintf(served, sizeof(served), "%s", loom_total ? "LOOM (check failed)" : "tuned");
                    if (loom_total) errors++;
                } else if (wsize > 1) {
                    for (int k = 0; k < lt_nalgs(coll); k++) {
                        if (!cell->served[k]) continue;
                        int w = snprintf(served + off, sizeof(served) - off, "%s%s", off ? "+" : "",
                                         lt_alg_name(coll, k));
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
                    } else if (0 != strcmp(vs[v].alg, "auto") &&
                               (lt_alg_index(coll, vs[v].alg) < 0 ||
                                cell->served[lt_alg_index(coll, vs[v].alg)] != cell->calls)) {
                        snprintf(served + off, sizeof(served) - off, "  [%s refused: replaced]", vs[v].alg);
                    }
                }
                if (cell->wrong) {
                    size_t l = strlen(served);
                    snprintf(served + l, sizeof(served) - l, " WRONG RESULT");
                }
                double ratio = tuned_med > 0 ? med / tuned_med : 0;
                printf("%9ld  %-22s %11.2f %10.2f %8.2f   %s\n", sizes[s], vs[v].label, med * 1e6, mn * 1e6, ratio,
                       served);
                if (cf)
                    fprintf(cf, "%s,%s,%s,%d,%ld,%s,%.3f,%.3f,%.4f,\"%s\",%d,%d,%llu\n", lt_coll_name(coll),
                            coll == LT_ALLREDUCE ? (use_max ? "max" : "sum") : "", coll == LT_ALLREDUCE ? (use_double ? "double" : "int") : "",
                            wsize, sizes[s], vs[v].label, med * 1e6, mn * 1e6, ratio, served, nodes, rpn, cell->shm);
            }
            if (nv > 1) printf("\n");
        }
        if (cf) fclose(cf);
        if (wrong_any) printf("loom_bench: %d WRONG RESULTS\n", wrong_any);
        printf("loom_bench: %s (%.1f s)\n", errors ? "CHECKS FAILED" : "all checks passed", MPI_Wtime() - t_start);
    }
    MPI_Bcast(&errors, 1, MPI_INT, 0, ct);

    for (int c = 0; c < ns * nv; c++) free(cells[c].samples);
    free(cells);
    free(sbuf);
    free(rmem);
    MPI_Comm_free(&cl);
    MPI_Comm_free(&ct);
    if (MPI_COMM_NULL != chn) MPI_Comm_free(&chn);
    lt_fini();
    MPI_Finalize();
    return errors ? 1 : 0;
}
