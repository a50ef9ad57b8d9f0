/*
 * loom-model: predicts the time of loom's algorithms for one collective under the
 * LogGP model of opal/loom/loom_model.h, by simulating their real schedules.
 *
 *   loom-model --coll allreduce --P 8 --bytes 16M [--alg ring] [--segs N|auto]
 *              [--L us --o us --g us --G ns/B --gamma ns/B --copy ns/B]
 *              [--sweep-P 2..1048576] [--sweep-bytes 1K..64M] [--csv] [--per-rank]
 *              [--graph]
 *   loom-model --coll bcast --torus 4x4 --subset random:0.5:1 --link-rate 100mbit ...
 *
 * See docs/dev/model.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/loom/loom_decide.h"
#include "opal/loom/loom_model.h"
#include "opal/loom/loom_registry.h"
#include "opal/loom/loom_torus.h"

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
    bool autom;        /* --auto: the built-in rules' choice, its time, the LogGP bound */
    bool torus;        /* --torus: the communicator is a set of torus nodes */
    mca_coll_loom_torus_t t;
    int *coords;       /* [nodes * ndims] the communicator's nodes, in rank order */
    int *node_of;      /* [P] */
    int nodes, ppn;
    const char *net;   /* --net: hierarchical's phase among the nodes (NULL: the rules') */
    int groups;        /* --groups K: K communicators of consecutive ranks at once */
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
            "  --auto             per (P, bytes): the built-in rules' choice on a flat network\n"
            "                     of P nodes (one rank each), its predicted time and ratio to\n"
            "                     the LogGP lower bound, and loom's best algorithm by the model\n"
            "  --sweep-P A..B     every power of two from A to B (and B)\n"
            "  --sweep-bytes A..B every power of two from A to B (and B)\n"
            "  --method M         auto (default), full, symmetric, graph\n"
            "  --graph            cost each rank's dependency graph as the engine runs it\n"
            "                     (method graph), next to the round reading's time\n"
            "  --max-ops N        op budget of a full simulation (default 2^27)\n"
            "  --torus DIMS       the communicator's nodes sit on a torus (\"8x8x8\", \":mesh\" per\n"
            "                     dimension without wrap-around): messages between nodes follow\n"
            "                     dimension-ordered routes and share the links they cross; P is\n"
            "                     the nodes of --subset times --ppn (loom_model.h, the torus network)\n"
            "  --subset S         the nodes: all (default), random:FRACTION:SEED (ranks in random\n"
            "                     order), missing-node[:c0,c1,..] (all but one, the middle by\n"
            "                     default), missing-planes:Z1,Z2,.. (all but those planes of the\n"
            "                     last dimension), nodes:I,J,.. (row-major node indices, dimension\n"
            "                     0 slowest: loomnodeI of the emulated torus), file:PATH (lines\n"
            "                     \"[host] c0 c1 ..\", in rank order; '#' comments, a dims line ignored)\n"
            "  --ppn N            ranks per node, consecutive (default 1; without --torus: P / N\n"
            "                     nodes of a flat network, whose intra-node messages cost as\n"
            "                     much as the others)\n"
            "  --net NAME|own     hierarchical's bcast and reduce on nodes of several ranks: the\n"
            "                     algorithm among the nodes (default: the rules' choice for one\n"
            "                     rank per node, as the component; own: its chain or tree)\n"
            "  --groups K         K communicators of consecutive nodes run the collective at\n"
            "                     the same time on the torus (as loom_bw --groups)\n"
            "  --route-order O    routing order (\"zyx\"; default x first)\n"
            "  --torus-trees N    trees of a torus bcast or reduce: 2 (default, as\n"
            "                     coll_loom_torus_trees) or 1\n"
            "  --link-rate R      a directed link's rate: 100mbit, 1gbit, 5GB (bytes); default 1gbit\n"
            "  --hop-L us         latency per link crossed (default 0)\n"
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

/* A link rate in bytes/s: "100mbit", "1gbit", "10Gbit" (bits), or bytes with an
 * optional K/M/G ("5G", "125M"). */
static int parse_rate(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end), mult = 1.0;
    if (end == s || v <= 0) {
        return -1;
    }
    if ('k' == *end || 'K' == *end) {
        mult = 1e3;
    } else if ('m' == *end || 'M' == *end) {
        mult = 1e6;
    } else if ('g' == *end || 'G' == *end) {
        mult = 1e9;
    }
    end += 1.0 != mult;
    if (0 == strcmp(end, "bit") || 0 == strcmp(end, "bit/s")) {
        mult /= 8.0;
    } else if ('\0' != *end && 0 != strcmp(end, "B") && 0 != strcmp(end, "B/s")) {
        return -1;
    }
    *out = v * mult;
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

/* A seeded generator for --subset random (xorshift64*). */
static unsigned long long rng_next(unsigned long long *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ULL;
}

/* Appends node index i of the torus to the communicator's nodes. */
static void add_node(cli_t *c, long i)
{
    const int nd = c->t.ndims;
    for (int d = nd - 1; d >= 0; --d) {
        c->coords[(size_t) c->nodes * nd + d] = (int) (i % c->t.dims[d]);
        i /= c->t.dims[d];
    }
    c->nodes++;
}

/* The communicator's nodes from --subset (loom-model --help); 0, or -1 with a message. */
static int torus_subset(cli_t *c, const char *spec)
{
    const long N = mca_coll_loom_torus_nodes(&c->t);
    const int nd = c->t.ndims;
    int skip[MCA_COLL_LOOM_TORUS_MAX_DIMS];

    if (N <= 0 || N > (1L << 24)) {
        fprintf(stderr, "loom-model: the torus has too many nodes\n");
        return -1;
    }
    c->coords = malloc(sizeof(int) * (size_t) (N * nd));
    if (NULL == c->coords) {
        return -1;
    }
    c->nodes = 0;
    if (0 == strcmp(spec, "all")) {
        for (long i = 0; i < N; ++i) {
            add_node(c, i);
        }
    } else if (0 == strncmp(spec, "random:", 7)) {
        double f = 0.0;
        unsigned long long seed = 1, x;
        long want, *pick;
        if (sscanf(spec + 7, "%lf:%llu", &f, &seed) < 1 || f <= 0.0 || f > 1.0) {
            fprintf(stderr, "loom-model: bad --subset %s (random:FRACTION:SEED, 0 < FRACTION <= 1)\n", spec);
            return -1;
        }
        want = (long) (f * (double) N + 0.5);
        want = want < 2 ? 2 : want > N ? N : want;
        pick = malloc(sizeof(long) * (size_t) N);
        if (NULL == pick) {
            return -1;
        }
        for (long i = 0; i < N; ++i) {
            pick[i] = i;
        }
        x = seed * 0x9E3779B97F4A7C15ULL + 1;
        /* a partial Fisher-Yates shuffle: the first `want` are the subset, in rank order */
        for (long i = 0; i < want; ++i) {
            long j = i + (long) (rng_next(&x) % (unsigned long long) (N - i)), tmp = pick[i];
            pick[i] = pick[j];
            pick[j] = tmp;
            add_node(c, pick[i]);
        }
        free(pick);
    } else if (0 == strncmp(spec, "missing-node", 12)) {
        int m[MCA_COLL_LOOM_TORUS_MAX_DIMS];
        for (int d = 0; d < nd; ++d) {
            m[d] = c->t.dims[d] / 2;
        }
        if (':' == spec[12] && mca_coll_loom_torus_parse_coords(spec + 13, m) != nd) {
            fprintf(stderr, "loom-model: bad --subset %s (missing-node:c0,c1,..)\n", spec);
            return -1;
        }
        if (!mca_coll_loom_torus_valid(&c->t, m)) {
            fprintf(stderr, "loom-model: --subset %s: not a node of the torus\n", spec);
            return -1;
        }
        for (long i = 0; i < N; ++i) {
            if (i != mca_coll_loom_torus_index(&c->t, m)) {
                add_node(c, i);
            }
        }
    } else if (0 == strncmp(spec, "missing-planes:", 15)) {
        int n = mca_coll_loom_torus_parse_coords(spec + 15, skip);
        const int z = c->t.dims[nd - 1];
        if (n < 1) {
            fprintf(stderr, "loom-model: bad --subset %s (missing-planes:Z1,Z2,..)\n", spec);
            return -1;
        }
        for (long i = 0; i < N; ++i) {
            bool gone = false;
            for (int k = 0; k < n; ++k) {
                gone |= i % z == skip[k];
            }
            if (!gone) {
                add_node(c, i);
            }
        }
    } else if (0 == strncmp(spec, "nodes:", 6)) {
        const char *q = spec + 6;
        while (*q) {
            char *end;
            long i = strtol(q, &end, 10);
            if (end == q || i < 0 || i >= N || (*end && ',' != *end)) {
                fprintf(stderr, "loom-model: bad --subset %s (nodes:I,J,.. with 0 <= I < %ld)\n", spec, N);
                return -1;
            }
            add_node(c, i);
            q = *end ? end + 1 : end;
        }
    } else if (0 == strncmp(spec, "file:", 5)) {
        FILE *f = fopen(spec + 5, "r");
        char line[512];
        int ln = 0;
        if (NULL == f) {
            fprintf(stderr, "loom-model: cannot read %s\n", spec + 5);
            return -1;
        }
        while (NULL != fgets(line, sizeof(line), f)) {
            char *q = line, *h = strchr(line, '#');
            int v[MCA_COLL_LOOM_TORUS_MAX_DIMS + 1], k = 0;
            ++ln;
            if (NULL != h) {
                *h = '\0';
            }
            while (' ' == *q || '\t' == *q) {
                ++q;
            }
            if ('\0' == *q || '\n' == *q || 0 == strncmp(q, "dims", 4)) {
                continue;
            }
            if (!(*q >= '0' && *q <= '9')) {
                while (*q && ' ' != *q && '\t' != *q) {
                    ++q; /* a host name */
                }
            }
            for (char *end; k <= nd; q = end) {
                long x = strtol(q, &end, 10);
                if (end == q) {
                    break;
                }
                v[k++] = (int) x;
            }
            if (k != nd || !mca_coll_loom_torus_valid(&c->t, v) || c->nodes >= N) {
                fprintf(stderr, "loom-model: %s:%d: not %d coordinates of the torus\n", spec + 5, ln, nd);
                fclose(f);
                return -1;
            }
            add_node(c, mca_coll_loom_torus_index(&c->t, v));
        }
        fclose(f);
    } else {
        fprintf(stderr, "loom-model: unknown --subset %s\n", spec);
        return -1;
    }
    for (int i = 0; i < c->nodes; ++i) {
        for (int j = 0; j < i; ++j) {
            if (0 == memcmp(c->coords + (size_t) i * nd, c->coords + (size_t) j * nd, sizeof(int) * nd)) {
                fprintf(stderr, "loom-model: --subset %s names a node twice\n", spec);
                return -1;
            }
        }
        if (i > 4096) {
            break; /* a generated set has no duplicates; do not spend O(n^2) on it */
        }
    }
    if (c->nodes < 2) {
        fprintf(stderr, "loom-model: --subset %s has fewer than 2 nodes\n", spec);
        return -1;
    }
    c->node_of = malloc(sizeof(int) * (size_t) c->nodes * (size_t) c->ppn);
    if (NULL == c->node_of) {
        return -1;
    }
    for (long r = 0; r < (long) c->nodes * c->ppn; ++r) {
        c->node_of[r] = (int) (r / c->ppn);
    }
    c->P0 = c->P1 = (long) c->nodes * c->ppn;
    return 0;
}

/* --groups: K communicators of consecutive ranks (whole nodes) run the algorithm at
 * the same time on one network.  The model sees one schedule set of all ranks: rank
 * r's is its group's schedule for its group rank, peers moved to world ranks.  (A
 * tool's global: the builder type carries no context.) */
static struct {
    const cli_t *c;
    int alg, P;          /* world ranks */
    int gnode_of[1 << 16];
} grp;

static int build_grouped(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const cli_t *c = grp.c;
    const int K = c->groups, g = (int) ((long) p->rank * K / grp.P);
    int first = (int) (((long) g * grp.P + K - 1) / K), end = (int) (((long) (g + 1) * grp.P + K - 1) / K), rc;
    mca_coll_loom_params_t q = *p;

    q.P = end - first;
    q.rank = p->rank - first;
    q.nodes = (end - 1) / c->ppn - first / c->ppn + 1;
    for (int r = 0; r < q.P; ++r) {
        grp.gnode_of[r] = (first + r) / c->ppn - first / c->ppn;
    }
    q.node_of = grp.gnode_of;
    q.torus_coords = c->coords + (size_t) (first / c->ppn) * c->t.ndims;
    q.root = c->root < q.P ? c->root : 0;
    rc = mca_coll_loom_algs[grp.alg]->build(s, &q);
    for (int i = 0; i < s->nops; ++i) {
        if (MCA_COLL_LOOM_OP_SEND == s->ops[i].kind || MCA_COLL_LOOM_OP_RECV == s->ops[i].kind) {
            s->ops[i].peer += first;
        }
    }
    return rc;
}

static int tool_auto_segs(void *ctx, int alg, mca_coll_loom_coll_t coll, int P, size_t bytes)
{
    const cli_t *c = ctx;
    return mca_coll_loom_model_auto_segs(alg, coll, P, bytes, c->elem, &c->m);
}

/* params.segs as the component computes it (mca_coll_loom_alg_segs) */
static int tool_segs(const cli_t *c, int alg, int P, size_t bytes, int knob)
{
    const mca_coll_loom_segs_model_t model = {.auto_segs = tool_auto_segs, .ctx = (void *) c};
    return mca_coll_loom_alg_segs(alg, c->coll, P, bytes, knob, &model);
}

/* Nodes of ppn consecutive ranks (the node map of --ppn without --torus). */
static int *ppn_node_of(int P, int ppn)
{
    static int *node_of = NULL, n = 0, k = 0;

    if (P > n || ppn != k) {
        free(node_of);
        node_of = malloc((size_t) P * sizeof(int));
        n = NULL != node_of ? P : 0;
        k = ppn;
        for (int r = 0; r < n; ++r) {
            node_of[r] = r / ppn;
        }
    }
    return node_of;
}

static void run_one(const cli_t *c, int alg, int P, size_t bytes, double bound)
{
    mca_coll_loom_params_t shape = {.P = P, .root = c->root, .knob = c->knob, .call = c->call,
                                    .coll = c->coll};
    if (c->torus) {
        shape.nodes = c->nodes;
        shape.rpn = c->ppn;
        shape.node_of = c->node_of;
        shape.torus = &c->t;
        shape.torus_coords = c->coords;
    } else if (c->ppn > 1 && P % c->ppn == 0) {
        shape.nodes = P / c->ppn;
        shape.rpn = c->ppn;
        shape.node_of = ppn_node_of(P, c->ppn);
    }
    if (0 == strcmp(mca_coll_loom_algs[alg]->name, "hierarchical") && shape.nodes > 1) {
        /* the phase among the nodes, as the component plans it (mca_coll_loom_decide_net) */
        int knobs[mca_coll_loom_num_algs];
        for (int a = 0; a < mca_coll_loom_num_algs; ++a) {
            knobs[a] = mca_coll_loom_algs[a]->knob_default;
        }
        if (NULL == c->net) {
            mca_coll_loom_decide_net(c->coll, bytes, &shape, knobs, NULL, 0, &shape.net_alg, &shape.net_knob);
        } else if (0 != strcmp(c->net, "own")) {
            const int na = mca_coll_loom_alg_find(c->coll, c->net);
            shape.net_alg = na + 1;
            shape.net_knob = na >= 0 ? knobs[na] : 0;
        }
        if (shape.net_alg > 0 && mca_coll_loom_algs[shape.net_alg - 1]->pipelined) {
            shape.net_segs = tool_segs(c, shape.net_alg - 1, shape.nodes, bytes, shape.net_knob);
        }
    }
    mca_coll_loom_model_result_t res;
    double t0 = now(), tchoose = 0.0, tround = -1.0, *finish = NULL;
    int segs = c->segs, rc, cm = 0;
    char bstr[32];
    const char *segs_how = "";

    fmt_bytes(bytes, bstr, sizeof(bstr));
    const int gP = c->groups > 1 ? P / c->groups : P; /* a communicator's ranks */
    if (0 == segs) {
        /* what the component does: the algorithm's segment policy, with auto_segs (cheap)
         * where it asks the model; --segs search: choose_segs */
        segs = tool_segs(c, alg, gP, bytes, c->knob);
        tchoose = now() - t0;
        segs_how = "*";
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
    if (c->groups > 1) {
        mca_coll_loom_params_t q = shape;
        grp.c = c;
        grp.alg = alg;
        grp.P = P;
        q.P = gP;
        q.rank = 0;
        res.note = mca_coll_loom_alg_refusal(alg, &q);
        rc = NULL != res.note ? MCA_COLL_LOOM_ERR_NOTSUP
                              : mca_coll_loom_model_predict_builder(build_grouped, &shape, bytes, c->elem, &c->m,
                                                                    &c->opts, finish, &res);
    } else {
        rc = mca_coll_loom_model_predict(alg, c->coll, &shape, bytes, c->elem, &c->m, &c->opts, finish, &res);
    }
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
            printf("%s,%d,%zu,%s,%d,%.6g,%.6g,%.4f,%s,%d,%ld,%.4f,%.4f,", mca_coll_loom_coll_name(c->coll),
                   P, bytes, mca_coll_loom_algs[alg]->name, segs, res.time * 1e6, bound * 1e6,
                   bound > 0 ? res.time / bound : 0.0, mca_coll_loom_model_method_name(res.method),
                   res.rounds, res.ops, t0, tchoose);
            if (c->torus) {
                printf(",%d,%ld", res.max_link_load, res.max_link_hops);
            }
            if (c->graph) {
                printf(",%.6g", tround * 1e6);
            }
            printf("\n");
        } else {
            printf("%s,%d,%zu,%s,%d,,%.6g,,none,,,%.4f,%.4f,\"%s\"", mca_coll_loom_coll_name(c->coll), P, bytes,
                   mca_coll_loom_algs[alg]->name, segs, bound * 1e6, t0, tchoose, res.note ? res.note : "error");
            if (c->torus) {
                printf(",,");
            }
            if (c->graph) {
                printf(tround >= 0.0 ? ",%.6g" : ",", tround * 1e6);
            }
            printf("\n");
        }
    } else if (MCA_COLL_LOOM_OK == rc) {
        printf("%9d %8s  %-18s %5d%-1s %14.3f %8.2f  %-9s %7d %11ld %9.3f", P, bstr,
               mca_coll_loom_algs[alg]->name, segs, segs_how, res.time * 1e6,
               bound > 0 ? res.time / bound : 0.0, mca_coll_loom_model_method_name(res.method),
               res.rounds, res.ops, t0 + tchoose);
        if (c->torus) {
            printf(" %5d %5ld", res.max_link_load, res.max_link_hops);
        }
        if (c->graph && !c->torus) {
            if (tround >= 0.0) {
                printf(" %14.3f %6.2f", tround * 1e6, res.time / tround);
            } else {
                printf(" %14s", "n/a");
            }
        }
        printf("\n");
    } else {
        printf("%9d %8s  %-18s %5d%-1s %14s %8s  %-9s  (%s)\n", P, bstr, mca_coll_loom_algs[alg]->name, segs,
               segs_how, "n/a", "", "none", res.note ? res.note : "error");
    }
    if (NULL != finish && MCA_COLL_LOOM_OK == rc) {
        for (int r = 0; r < P; ++r) {
            printf(c->csv ? "rank,%d,%.6g\n" : "    rank %6d finishes at %12.3f us\n", r, finish[r] * 1e6);
        }
    }
    free(finish);
}

/* --auto: what the built-in rules choose for (P, bytes) on a flat network of P nodes
 * of one rank each, its predicted time (segments as the component chooses them), the LogGP bound
 * (mca_coll_loom_model_bound) and the best algorithm of loom by the model. */
static int *flat_node_of(int P)
{
    static int *node_of = NULL, n = 0;

    if (P > n) {
        free(node_of);
        node_of = malloc((size_t) P * sizeof(int));
        n = NULL != node_of ? P : 0;
        for (int r = 0; r < n; ++r) {
            node_of[r] = r;
        }
    }
    return node_of;
}

static double auto_predict(const cli_t *c, int alg, int P, size_t bytes)
{
    mca_coll_loom_params_t shape = {.P = P, .nodes = P, .rpn = 1, .root = c->root, .call = c->call,
                                    .coll = c->coll, .node_of = flat_node_of(P)};
    mca_coll_loom_model_result_t res;

    shape.knob = c->knob;
    shape.segs = 0 != c->segs && -1 != c->segs ? c->segs : tool_segs(c, alg, P, bytes, c->knob);
    if (MCA_COLL_LOOM_OK != mca_coll_loom_model_predict(alg, c->coll, &shape, bytes, c->elem, &c->m, &c->opts, NULL,
                                                        &res)) {
        return -1.0;
    }
    return res.time;
}

static void run_auto(const cli_t *c, int P, size_t bytes)
{
    mca_coll_loom_params_t p = {.P = P, .nodes = P, .rpn = 1, .call = c->call, .coll = c->coll};
    mca_coll_loom_choice_t choice;
    int knobs[64] = {0}, best = -1;
    double bound = mca_coll_loom_model_bound(c->coll, P, bytes, &c->m), t_auto = -1.0, t_best = -1.0;
    char bstr[32];

    mca_coll_loom_decide(c->coll, bytes, &p, knobs, -1, NULL, 0, &choice);
    if (choice.alg >= 0) {
        t_auto = auto_predict(c, choice.alg, P, bytes);
    }
    for (int alg = 0; alg < mca_coll_loom_num_algs; ++alg) {
        if (!mca_coll_loom_alg_serves(alg, c->coll)) {
            continue;
        }
        double t = alg == choice.alg ? t_auto : auto_predict(c, alg, P, bytes);
        if (t >= 0.0 && (best < 0 || t < t_best)) {
            best = alg;
            t_best = t;
        }
    }
    const char *an = choice.alg >= 0 ? mca_coll_loom_algs[choice.alg]->name : "previous";
    const char *bn = best >= 0 ? mca_coll_loom_algs[best]->name : "none";
    if (c->csv) {
        printf("%s,%d,%zu,%s,%.6g,%.6g,%.4f,%s,%.6g,%.4f\n", mca_coll_loom_coll_name(c->coll), P, bytes, an,
               t_auto * 1e6, bound * 1e6, t_auto >= 0 && bound > 0 ? t_auto / bound : 0.0, bn, t_best * 1e6,
               t_best >= 0 && bound > 0 ? t_best / bound : 0.0);
        return;
    }
    fmt_bytes(bytes, bstr, sizeof(bstr));
    printf("%9d %8s  %-18s", P, bstr, an);
    if (t_auto >= 0.0) {
        printf(" %14.3f %8.2f", t_auto * 1e6, t_auto / bound);
    } else {
        printf(" %14s %8s", "n/a", "");
    }
    printf(" %14.3f  %-18s", bound * 1e6, bn);
    if (t_best >= 0.0) {
        printf(" %14.3f %8.2f\n", t_best * 1e6, t_best / bound);
    } else {
        printf(" %14s\n", "n/a");
    }
}

int main(int argc, char **argv)
{
    cli_t c = {.coll = MCA_COLL_LOOM_COLL_ALLREDUCE, .elem = 8, .P0 = 8, .P1 = 8,
               .b0 = 1 << 20, .b1 = 1 << 20,
               .call = MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT};
    double L, o, g, G, gamma, copy, share = 1.0;
    int single_copy = 0;
    const char *subset = "all", *order = NULL;
    int trees = 0;
    double link_rate = 125e6; /* bytes/s: 1 Gbit/s */

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
        } else if (0 == strcmp(a, "--auto")) {
            c.autom = true;
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
        } else if (0 == strcmp(a, "--torus") || 0 == strcmp(a, "--subset") || 0 == strcmp(a, "--route-order") ||
                   0 == strcmp(a, "--link-rate") || 0 == strcmp(a, "--hop-L") || 0 == strcmp(a, "--ppn") || 0 == strcmp(a, "--net") ||
                   0 == strcmp(a, "--groups") || 0 == strcmp(a, "--torus-trees")) {
            NEED_ARG();
            if (0 == strcmp(a, "--torus")) {
                char err[256];
                if (0 != mca_coll_loom_torus_parse_dims(&c.t, v, err, sizeof(err))) {
                    fprintf(stderr, "loom-model: --torus %s: %s\n", v, err);
                    return 2;
                }
                c.torus = true;
            } else if (0 == strcmp(a, "--subset")) {
                subset = v;
            } else if (0 == strcmp(a, "--route-order")) {
                order = v;
            } else if (0 == strcmp(a, "--hop-L")) {
                c.opts.hop_L = atof(v) * 1e-6;
            } else if (0 == strcmp(a, "--ppn")) {
                c.ppn = atoi(v);
            } else if (0 == strcmp(a, "--net")) {
                c.net = v;
            } else if (0 == strcmp(a, "--groups")) {
                c.groups = atoi(v);
            } else if (0 == strcmp(a, "--torus-trees")) {
                trees = atoi(v);
            } else if (parse_rate(v, &link_rate)) {
                fprintf(stderr, "loom-model: bad --link-rate %s (100mbit, 1gbit, 5GB)\n", v);
                return 2;
            }
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
    if (c.torus) {
        char err[256];
        c.ppn = c.ppn < 1 ? 1 : c.ppn;
        c.t.max_trees = 1 == trees ? 1 : 2;
        if (NULL != order && 0 != mca_coll_loom_torus_parse_order(&c.t, order, err, sizeof(err))) {
            fprintf(stderr, "loom-model: --route-order %s: %s\n", order, err);
            return 2;
        }
        if (0 != torus_subset(&c, subset)) {
            return 2;
        }
        if (c.groups > 1 && (c.nodes % c.groups || (long) c.nodes * c.ppn / c.groups > (1 << 16))) {
            fprintf(stderr, "loom-model: --groups %d must divide the %d nodes (at most 65536 ranks a group)\n",
                    c.groups, c.nodes);
            return 2;
        }
        c.opts.link_G = 1.0 / link_rate;
        c.opts.method = MCA_COLL_LOOM_MODEL_GRAPH;
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

    if (c.torus && !c.csv) {
        printf("loom-model: %d nodes of a torus", c.nodes);
        for (int d = 0; d < c.t.ndims; ++d) {
            printf("%s%d%s", d ? "x" : " ", c.t.dims[d], c.t.mesh[d] ? ":mesh" : "");
        }
        printf(" (%s%s), %d rank%s per node, links of %.4g Gbit/s, %g us per hop (load: most flows on one "
               "directed link at once; hops: the longest route; ratio: time over the single-link bound)\n",
               subset, c.groups > 1 ? ", in groups at once" : "", c.ppn, c.ppn > 1 ? "s" : "", link_rate * 8e-9, c.opts.hop_L * 1e6);
    }
    if (c.autom) {
        /* below */
    } else if (c.csv) {
        printf("coll,P,bytes,alg,segs,time_us,bound_us,ratio,method,rounds,ops,sim_s,choose_s,note%s%s\n",
               c.graph && !c.torus ? ",round_us" : "", c.torus ? ",load,hops" : "");
    } else {
        printf("loom-model: %s, elements of %zu bytes; L %g us, o %g us, g %g us, G %g ns/B, "
               "gamma %g ns/B, copy %g ns/B\n",
               mca_coll_loom_coll_name(c.coll), c.elem, L, o, g, G, gamma, copy);
        printf("(segs: * auto_segs, s choose_segs by simulation, a by its closed form; ratio: time over the "
               "bandwidth bound)\n");
        if (c.graph && !c.torus) {
            printf("(time: the dependency graph as the engine runs it; round: the round reading, g/r their "
                   "ratio)\n");
        }
    }
    if (c.autom) {
        if (c.torus || c.groups > 1) {
            fprintf(stderr, "loom-model: --auto models a flat network (no --torus, --groups)\n");
            return 2;
        }
        if (c.csv) {
            printf("coll,P,bytes,auto,auto_us,bound_us,auto_ratio,best,best_us,best_ratio\n");
        } else {
            printf("loom-model: %s, elements of %zu bytes; L %g us, o %g us, g %g us, G %g ns/B, "
                   "gamma %g ns/B, copy %g ns/B\n",
                   mca_coll_loom_coll_name(c.coll), c.elem, L, o, g, G, gamma, copy);
            printf("(auto: the built-in rules' choice for P nodes of one rank each, \"previous\": the previous "
                   "component, not modelled; bound: LogGP lower bound; best: loom's fastest algorithm by the model)\n");
            printf("%9s %8s  %-18s %14s %8s %14s  %-18s %14s %8s\n", "P", "bytes", "auto", "time [us]", "ratio",
                   "bound [us]", "best", "time [us]", "ratio");
        }
        for (size_t P = (size_t) c.P0; P <= (size_t) c.P1; P = next_pow2_step(P, (size_t) c.P1)) {
            for (size_t b = c.b0; b <= c.b1; b = next_pow2_step(b, c.b1)) {
                run_auto(&c, (int) P, b);
                fflush(stdout);
                if (0 == b) {
                    break;
                }
            }
        }
        return 0;
    }
    for (size_t P = (size_t) c.P0; P <= (size_t) c.P1; P = next_pow2_step(P, (size_t) c.P1)) {
        for (size_t b = c.b0; b <= c.b1; b = next_pow2_step(b, c.b1)) {
            /* on a torus: the bytes over one link's rate (the single-link bound of Mittal et al.) */
            double bound = c.torus ? (double) b * c.opts.link_G : mca_coll_loom_model_lower_bound(c.coll, (int) P, b, &c.m);
            char bstr[32];
            if (!c.csv) {
                fmt_bytes(b, bstr, sizeof(bstr));
                printf("\n%s P=%zu bytes=%s: bandwidth bound %.3f us\n", mca_coll_loom_coll_name(c.coll), P,
                       bstr, bound * 1e6);
                printf("%9s %8s  %-18s %6s %14s %8s  %-9s %7s %11s %9s", "P", "bytes", "algorithm", "segs",
                       "time [us]", "ratio", "method", "rounds", "ops", "sim [s]");
                if (c.torus) {
                    printf(" %5s %5s\n", "load", "hops");
                } else {
                    printf(c.graph ? " %14s %6s\n" : "\n", "round [us]", "g/r");
                }
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
                    (NULL != c.alg && 0 != strcmp(c.alg, mca_coll_loom_algs[alg]->name))) {
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
