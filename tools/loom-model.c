/*
 * loom-model: predicts the time of loom's algorithms for one collective under the
 * LogGP model of opal/loom/loom_model.h, by simulating their real schedules.
 *
 *   loom-model --coll allreduce --P 8 --bytes 16M [--alg ring] [--segs N|auto]
 *              [--L us --o us --g us --G ns/B --gamma ns/B --copy ns/B]
 *              [--sweep-P 2..1048576] [--sweep-bytes 1K..64M] [--csv] [--per-rank]
 *              [--graph]
 *
 * See docs/dev/model.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/loom/loom_model.h"
#include "opal/loom/loom_registry.h"

typedef struct {
    int coll;
    const char *alg;   /* NULL: every algorithm serving coll */
    int segs;          /* 0: auto */
    int knob, root;
    unsigned call;
    size_t elem;
    long P0, P1;       /* P range (powers of two between, both ends included) */
    size_t b0, b1;     /* bytes range, likewise */
    bool csv, per_rank;
    bool graph;        /* cost the dependency graph; also show the round time */
    mca_coll_loom_model_params_t m;
    mca_coll_loom_model_opts_t opts;
} cli_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: loom-model [options]\n"
            "  --coll NAME        allreduce (default), barrier, bcast, reduce, allgather,\n"
            "                     reduce_scatter, reduce_scatter_block, scan, exscan,\n"
            "                     alltoall, alltoallv\n"
            "  --P N              ranks (default 8)\n"
            "  --bytes N          bytes per slot, suffixes K M G (binary; default 1M): the vector\n"
            "                     (allreduce, bcast, reduce), the whole result (allgather) or\n"
            "                     input (reduce_scatter), the whole send buffer (alltoall)\n"
            "  --elem N           element size in bytes (default 8)\n"
            "  --alg NAME         one algorithm (default: all that serve the collective)\n"
            "  --segs N|auto|search  pipelining depth (default auto: auto_segs, as the\n"
            "                     component; search: the exhaustive choose_segs)\n"
            "  --knob N --root N  algorithm knob (0: its default), root of rooted collectives\n"
            "  --noncommutative --inexact   properties of the op (default commutative, exact)\n"
            "  --L us --o us --g us --G ns/B --gamma ns/B --copy ns/B   model parameters\n"
            "                     (defaults: measured with loom_pingpong on the build machine)\n"
            "  --single-copy      shared memory with single-copy transfers (CMA, XPMEM): the\n"
            "                     receiver copies, the sender's link costs nothing per byte\n"
            "  --ranks-per-core R ranks time-sharing one core (shared memory, oversubscribed):\n"
            "                     o, g, G, gamma and copy are CPU work there and are scaled\n"
            "                     by R (default 1)\n"
            "  --sweep-P A..B     every power of two from A to B (and B)\n"
            "  --sweep-bytes A..B every power of two from A to B (and B)\n"
            "  --method M         auto (default), full, symmetric, graph\n"
            "  --graph            cost each rank's dependency graph as the engine runs it\n"
            "                     (method graph), next to the round reading's time\n"
            "  --max-ops N        op budget of a full simulation (default 2^27)\n"
            "  --csv              comma-separated output\n"
            "  --per-rank         also print each rank's finish time (single P)\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || v < 0) {
        return -1;
    }
    switch (*end) {
    case 'k': case 'K': v *= 1024.0; end++; break;
    case 'm': case 'M': v *= 1024.0 * 1024.0; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024.0 * 1024.0; end++; break;
    default: break;
    }
    if ('b' == *end || 'B' == *end) {
        end++;
    }
    if ('\0' != *end) {
        return -1;
    }
    *out = (size_t) v;
    return 0;
}

static int parse_range(const char *s, size_t *a, size_t *b)
{
    char buf[128], *dots;
    snprintf(buf, sizeof(buf), "%s", s);
    if (NULL == (dots = strstr(buf, ".."))) {
        return parse_size(buf, a) || parse_size(buf, b);
    }
    *dots = '\0';
    return parse_size(buf, a) || parse_size(dots + 2, b) || *a > *b;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static void fmt_bytes(size_t b, char *out, size_t len)
{
    if (b >= (1u << 30) && 0 == b % (1u << 30)) {
        snprintf(out, len, "%zuG", b >> 30);
    } else if (b >= (1u << 20) && 0 == b % (1u << 20)) {
        snprintf(out, len, "%zuM", b >> 20);
    } else if (b >= 1024 && 0 == b % 1024) {
        snprintf(out, len, "%zuK", b >> 10);
    } else {
        snprintf(out, len, "%zu", b);
    }
}

static size_t next_pow2_step(size_t v, size_t end)
{
    size_t p = 1;
    while (p <= v) {
        p *= 2;
    }
    return p < end ? p : (v < end ? end : end + 1);
}

static void run_one(const cli_t *c, int alg, int P, size_t bytes, double bound)
{
    mca_coll_loom_params_t shape = {.P = P, .root = c->root, .knob = c->knob, .call = c->call,
                                    .coll = c->coll};
    mca_coll_loom_model_result_t res;
    double t0 = now(), tchoose = 0.0, tround = -1.0, *finish = NULL;
    int segs = c->segs, rc, cm = 0;
    char bstr[32];
    const char *segs_how = "";

    fmt_bytes(bytes, bstr, sizeof(bstr));
    if (0 == segs) {
        /* what the component does: auto_segs (cheap); --segs search: choose_segs */
        segs = mca_coll_loom_model_auto_segs(alg, c->coll, P, bytes, c->elem, &c->m);
        tchoose = now() - t0;
        segs_how = "*";
        (void) cm;
    } else if (-1 == segs) {
        double pred;
        segs = mca_coll_loom_model_choose_segs(alg, c->coll, P, bytes, c->elem, &c->m, &shape, &pred, &cm);
        tchoose = now() - t0;
        segs_how = MCA_COLL_LOOM_MODEL_ANALYTIC == cm ? "a" : "s";
    }
    shape.segs = segs;
    if (c->per_rank) {
        finish = malloc((size_t) P * sizeof(double));
    }
    t0 = now();
    rc = mca_coll_loom_model_predict(alg, c->coll, &shape, bytes, c->elem, &c->m, &c->opts, finish, &res);
    t0 = now() - t0;
    if (c->graph) {
        /* the round reading of the same schedules, for comparison */
        mca_coll_loom_model_opts_t ro = c->opts;
        mca_coll_loom_model_result_t rres;
        ro.method = 0;
        tround = MCA_COLL_LOOM_OK == mca_coll_loom_model_predict(alg, c->coll, &shape, bytes, c->elem, &c->m, &ro,
                                                                 NULL, &rres)
                     ? rres.time
                     : -1.0;
    }

    if (c->csv) {
        if (MCA_COLL_LOOM_OK == rc) {
            printf("%s,%d,%zu,%s,%d,%.6g,%.6g,%.4f,%s,%d,%ld,%.4f,%.4f", mca_coll_loom_coll_name(c->coll),
                   P, bytes, mca_coll_loom_algs[alg].name, segs, res.time * 1e6, bound * 1e6,
                   bound > 0 ? res.time / bound : 0.0, mca_coll_loom_model_method_name(res.method),
                   res.rounds, res.ops, t0, tchoose);
            if (c->graph) {
                printf(",,%.6g", tround * 1e6);
            }
            printf("\n");
        } else {
            printf("%s,%d,%zu,%s,%d,,%.6g,,none,,,%.4f,%.4f,\"%s\"", mca_coll_loom_coll_name(c->coll), P, bytes,
                   mca_coll_loom_algs[alg].name, segs, bound * 1e6, t0, tchoose, res.note ? res.note : "error");
            if (c->graph) {
                printf(tround >= 0.0 ? ",%.6g" : ",", tround * 1e6);
            }
            printf("\n");
        }
    } else if (MCA_COLL_LOOM_OK == rc) {
        printf("%9d %8s  %-14s %5d%-1s %14.3f %8.2f  %-9s %7d %11ld %9.3f", P, bstr,
               mca_coll_loom_algs[alg].name, segs, segs_how, res.time * 1e6,
               bound > 0 ? res.time / bound : 0.0, mca_coll_loom_model_method_name(res.method),
               res.rounds, res.ops, t0 + tchoose);
        if (c->graph) {
            if (tround >= 0.0) {
                printf(" %14.3f %6.2f", tround * 1e6, res.time / tround);
            } else {
                printf(" %14s", "n/a");
            }
        }
        printf("\n");
    } else {
        printf("%9d %8s  %-14s %5d%-1s %14s %8s  %-9s  (%s)\n", P, bstr, mca_coll_loom_algs[alg].name, segs,
               segs_how, "n/a", "", "none", res.note ? res.note : "error");
    }
    if (NULL != finish && MCA_COLL_LOOM_OK == rc) {
        for (int r = 0; r < P; ++r) {
            printf(c->csv ? "rank,%d,%.6g\n" : "    rank %6d finishes at %12.3f us\n", r, finish[r] * 1e6);
        }
    }
    free(finish);
}

int main(int argc, char **argv)
{
    cli_t c = {.coll = MCA_COLL_LOOM_COLL_ALLREDUCE, .elem = 8, .P0 = 8, .P1 = 8,
               .b0 = 1 << 20, .b1 = 1 << 20,
               .call = MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT};
    double L, o, g, G, gamma, copy, share = 1.0;
    int single_copy = 0;

    L = MCA_COLL_LOOM_MODEL_DEFAULT_LATENCY_US;
    o = MCA_COLL_LOOM_MODEL_DEFAULT_OVERHEAD_US;
    g = MCA_COLL_LOOM_MODEL_DEFAULT_GAP_US;
    G = MCA_COLL_LOOM_MODEL_DEFAULT_GAP_PER_BYTE_NS;
    gamma = MCA_COLL_LOOM_MODEL_DEFAULT_REDUCE_PER_BYTE_NS;
    copy = MCA_COLL_LOOM_MODEL_DEFAULT_COPY_PER_BYTE_NS;
    mca_coll_loom_model_opts_default(&c.opts);

    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t x, y;
        bool takes = true;
#define NEED_ARG()                                                  \
    if (NULL == v) {                                                \
        fprintf(stderr, "loom-model: %s needs a value\n", a);       \
        return 2;                                                   \
    }
        if (0 == strcmp(a, "--help") || 0 == strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (0 == strcmp(a, "--csv")) {
            c.csv = true;
            takes = false;
        } else if (0 == strcmp(a, "--per-rank")) {
            c.per_rank = true;
            takes = false;
        } else if (0 == strcmp(a, "--noncommutative")) {
            c.call &= ~MCA_COLL_LOOM_CALL_COMMUTATIVE;
            takes = false;
        } else if (0 == strcmp(a, "--inexact")) {
            c.call &= ~MCA_COLL_LOOM_CALL_EXACT;
            takes = false;
        } else if (0 == strcmp(a, "--graph")) {
            c.opts.method = MCA_COLL_LOOM_MODEL_GRAPH;
            takes = false;
        } else if (0 == strcmp(a, "--single-copy")) {
            single_copy = 1;
            takes = false;
        } else {
            NEED_ARG();
            if (0 == strcmp(a, "--coll")) {
                c.coll = -1;
                for (int k = 0; k < MCA_COLL_LOOM_NUM_COLLS; ++k) {
                    if (0 == strcmp(v, mca_coll_loom_coll_name(k))) {
                        c.coll = k;
                    }
                }
                if (c.coll < 0) {
                    fprintf(stderr, "loom-model: unknown collective %s\n", v);
                    return 2;
                }
            } else if (0 == strcmp(a, "--alg")) {
                c.alg = v;
            } else if (0 == strcmp(a, "--P") || 0 == strcmp(a, "--sweep-P")) {
                if (parse_range(v, &x, &y) || x < 1 || y > 0x3fffffff) {
                    fprintf(stderr, "loom-model: bad %s %s\n", a, v);
                    return 2;
                }
                c.P0 = (long) x;
                c.P1 = (long) y;
            } else if (0 == strcmp(a, "--bytes") || 0 == strcmp(a, "--sweep-bytes")) {
                if (parse_range(v, &c.b0, &c.b1)) {
                    fprintf(stderr, "loom-model: bad %s %s\n", a, v);
                    return 2;
                }
            } else if (0 == strcmp(a, "--elem")) {
                c.elem = (size_t) atol(v);
            } else if (0 == strcmp(a, "--segs")) {
                c.segs = 0 == strcmp(v, "auto") ? 0 : (0 == strcmp(v, "search") ? -1 : atoi(v));
            } else if (0 == strcmp(a, "--knob")) {
                c.knob = atoi(v);
            } else if (0 == strcmp(a, "--root")) {
                c.root = atoi(v);
            } else if (0 == strcmp(a, "--L")) {
                L = atof(v);
            } else if (0 == strcmp(a, "--o")) {
                o = atof(v);
            } else if (0 == strcmp(a, "--g")) {
                g = atof(v);
            } else if (0 == strcmp(a, "--G")) {
                G = atof(v);
            } else if (0 == strcmp(a, "--gamma")) {
                gamma = atof(v);
            } else if (0 == strcmp(a, "--copy")) {
                copy = atof(v);
            } else if (0 == strcmp(a, "--ranks-per-core")) {
                share = atof(v);

            } else if (0 == strcmp(a, "--method")) {
                c.opts.method = 0 == strcmp(v, "full")        ? MCA_COLL_LOOM_MODEL_FULL
                              : 0 == strcmp(v, "symmetric") ? MCA_COLL_LOOM_MODEL_SYMMETRIC
                              : 0 == strcmp(v, "graph")     ? MCA_COLL_LOOM_MODEL_GRAPH
                                                            : 0;
            } else if (0 == strcmp(a, "--max-ops")) {
                c.opts.max_live_ops = atol(v);
            } else {
                fprintf(stderr, "loom-model: unknown option %s\n", a);
                usage(stderr);
                return 2;
            }
        }
        if (takes) {
            ++i;
        }
    }
    if (0 == c.elem) {
        c.elem = 1;
    }
    c.graph = MCA_COLL_LOOM_MODEL_GRAPH == c.opts.method;
    if (share > 1.0) {
        /* on one node every byte moved and combined is a CPU's work, and R ranks share
         * each CPU: each rank runs at 1/R of its speed (docs/dev/model.md) */
        o *= share;
        g *= share;
        G *= share;
        gamma *= share;
        copy *= share;
    }
    mca_coll_loom_model_params_set(&c.m, L, o, g, G, gamma, copy);
    if (single_copy) {
        c.m.G_out = 0.0;
    }
    if (NULL != c.alg && mca_coll_loom_alg_find(c.coll, c.alg) < 0) {
        fprintf(stderr, "loom-model: no algorithm %s serves %s\n", c.alg, mca_coll_loom_coll_name(c.coll));
        return 2;
    }

    if (c.csv) {
        printf("coll,P,bytes,alg,segs,time_us,bound_us,ratio,method,rounds,ops,sim_s,choose_s,note%s\n",
               c.graph ? ",round_us" : "");
    } else {
        printf("loom-model: %s, elements of %zu bytes; L %g us, o %g us, g %g us, G %g ns/B, "
               "gamma %g ns/B, copy %g ns/B\n",
               mca_coll_loom_coll_name(c.coll), c.elem, L, o, g, G, gamma, copy);
        printf("(segs: * auto_segs, s choose_segs by simulation, a by its closed form; ratio: time over the "
               "bandwidth bound)\n");
        if (c.graph) {
            printf("(time: the dependency graph as the engine runs it; round: the round reading, g/r their "
                   "ratio)\n");
        }
    }
    for (size_t P = (size_t) c.P0; P <= (size_t) c.P1; P = next_pow2_step(P, (size_t) c.P1)) {
        for (size_t b = c.b0; b <= c.b1; b = next_pow2_step(b, c.b1)) {
            double bound = mca_coll_loom_model_lower_bound(c.coll, (int) P, b, &c.m);
            char bstr[32];
            if (!c.csv) {
                fmt_bytes(b, bstr, sizeof(bstr));
                printf("\n%s P=%zu bytes=%s: bandwidth bound %.3f us\n", mca_coll_loom_coll_name(c.coll), P,
                       bstr, bound * 1e6);
                printf("%9s %8s  %-14s %6s %14s %8s  %-9s %7s %11s %9s", "P", "bytes", "algorithm", "segs",
                       "time [us]", "ratio", "method", "rounds", "ops", "sim [s]");
                printf(c.graph ? " %14s %6s\n" : "\n", "round [us]", "g/r");
            }
            int served = 0;
            for (int alg = 0; alg < mca_coll_loom_num_algs; ++alg) {
                served += mca_coll_loom_alg_serves(alg, c.coll);
            }
            if (0 == served && !c.csv) {
                printf("(no algorithm of this build serves %s)\n", mca_coll_loom_coll_name(c.coll));
            }
            for (int alg = 0; alg < mca_coll_loom_num_algs; ++alg) {
                if (!mca_coll_loom_alg_serves(alg, c.coll) ||
                    (NULL != c.alg && 0 != strcmp(c.alg, mca_coll_loom_algs[alg].name))) {
                    continue;
                }
                run_one(&c, alg, (int) P, b, bound);
                fflush(stdout);
            }
            if (0 == b) {
                break;
            }
        }
    }
    return 0;
}
