/*
 * loom: unit test of the torus model (opal/loom/loom_torus.h): shapes, routing orders,
 * map files (every error with its line) and coordinates as users write them, routes and link loads against hand-computed cases, and
 * contention-free chains: every subset of a 4 x 4 torus, random subsets of larger ones,
 * each chain checked by the link-load model (both directions of every edge at once:
 * no directed link twice); trees crossing the fewest links (every subset of a 3 x 3
 * torus, against every tree on small sets); the model's torus network (loom_model.h) against
 * hand-computed cases, and the link loads it finds for torus and binomial schedules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opal/loom/loom_decide.h"
#include "opal/loom/loom_model.h"
#include "opal/loom/loom_registry.h"
#include "opal/loom/loom_sched.h"
#include "opal/loom/loom_torus.h"
#include "opal/loom/loom_verify.h"
#include "unit_check.h"

static mca_coll_loom_torus_t shape(const char *text)
{
    mca_coll_loom_torus_t t;
    char err[128];
    CHECK(0 == mca_coll_loom_torus_parse_dims(&t, text, err, sizeof(err)), "parse '%s': %s", text, err);
    return t;
}

static void test_parse(void)
{
    static const char *good[] = {"4x4x2", "4 4 2", "4,4,2", "8", "2x2x2x2x2x2", "4 4 2:mesh", "3:mesh x 5"};
    static const int nd[] = {3, 3, 3, 1, 6, 3, 2};
    static const char *bad[] = {"", "0x4", "4x-1", "4x4x4x4x4x4x4", "4:torus", "4x4y", "abc", NULL};
    mca_coll_loom_torus_t t;
    char err[128];

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); ++i) {
        CHECK(0 == mca_coll_loom_torus_parse_dims(&t, good[i], err, sizeof(err)) && t.ndims == nd[i],
              "'%s' should parse to %d dimensions (%s)", good[i], nd[i], err);
    }
    t = shape("4 4 2:mesh");
    CHECK(!t.mesh[0] && !t.mesh[1] && t.mesh[2], "mesh flags of '4 4 2:mesh'");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        err[0] = '\0';
        CHECK(0 != mca_coll_loom_torus_parse_dims(&t, bad[i], err, sizeof(err)) && '\0' != err[0],
              "'%s' should be refused with a reason", NULL != bad[i] ? bad[i] : "(null)");
    }
    t = shape("4x4x2");
    CHECK(0 == mca_coll_loom_torus_parse_order(&t, "zyx", err, sizeof(err)) && 2 == t.order[0] &&
              0 == t.order[2], "order zyx");
    CHECK(0 == mca_coll_loom_torus_parse_order(&t, "1,0,2", err, sizeof(err)) && 1 == t.order[0], "order 1,0,2");
    CHECK(0 != mca_coll_loom_torus_parse_order(&t, "xx", err, sizeof(err)), "order xx refused");
    CHECK(0 != mca_coll_loom_torus_parse_order(&t, "xyzu", err, sizeof(err)), "order xyzu refused on 3-D");
    CHECK(0 != mca_coll_loom_torus_parse_order(&t, "xy", err, sizeof(err)), "order xy refused on 3-D");
}

/* writes text to a temporary file; returns its path (static) */
static const char *tmpfile_with(const char *text)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/loom_test_torus_%d.map", (int) getpid());
    FILE *f = fopen(path, "w");
    if (NULL != f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

static void test_files(void)
{
    static const struct {
        const char *text, *why; /* why: a piece of the expected error, NULL: good */
        int line;
    } cases[] = {
        {"# a 2 x 2 x 2 torus\ndims 2 2 2\nnodeA 0 0 0\nnodeB 1 0 0   # comment\n\nnodeC 1 1 1\n", NULL, 0},
        {"dims 4 4:mesh\nh0 0 0\nh1 3 3\n", NULL, 0},
        {"h0 0 0\n", "expected \"dims", 1},
        {"dims 4 0\n", "dimension 0", 1},
        {"dims 4 4\nh0 0\n", "1 coordinates", 2},
        {"dims 4 4\nh0 0 1 2\n", "more than 2", 2},
        {"dims 4 4\nh0 0 4\n", "outside 0..3", 2},
        {"dims 4 4\nh0 0 -1\n", "outside 0..3", 2},
        {"dims 4 4\nh0 0 x\n", "not a coordinate", 2},
        {"dims 4 4\nh0 0 1\nh0 1 1\n", "named twice", 3},
        {"dims 4 4\nh0 0 1\n\nh1 0 1\n", "coordinates of host h0", 4},
        {"# nothing\n", "no \"dims", 0},
    };
    mca_coll_loom_torus_t t;
    mca_coll_loom_torus_host_t *h;
    int n;
    char err[256];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        const char *path = tmpfile_with(cases[i].text);
        err[0] = '\0';
        const int rc = mca_coll_loom_torus_read_file(path, &t, &h, &n, err, sizeof(err));
        if (NULL == cases[i].why) {
            CHECK(0 == rc, "map %zu should read: %s", i, err);
        } else {
            char where[80];
            snprintf(where, sizeof(where), "%s:%d:", path, cases[i].line);
            CHECK(0 != rc && NULL != strstr(err, cases[i].why) && (0 == cases[i].line || NULL != strstr(err, where)),
                  "map %zu: expected an error with '%s' at line %d, got '%s'", i, cases[i].why, cases[i].line, err);
        }
        if (0 == rc && 0 == i) {
            CHECK(3 == n && 3 == t.ndims && 0 == strcmp(h[2].host, "nodeC") && 1 == h[2].c[2], "map 0's contents");
        }
        if (0 == rc) mca_coll_loom_torus_free_hosts(h, n);
    }
    unlink(tmpfile_with(""));
    CHECK(0 != mca_coll_loom_torus_read_file("/nonexistent/loom.map", &t, &h, &n, err, sizeof(err)) &&
              NULL != strstr(err, "cannot open"), "a missing file: %s", err);

    int c[MCA_COLL_LOOM_TORUS_MAX_DIMS];
    CHECK(3 == mca_coll_loom_torus_parse_coords("1,2,3", c) && 3 == c[2], "coords 1,2,3");
    CHECK(3 == mca_coll_loom_torus_parse_coords("torus:4:0:7.nid00012", c) && 4 == c[0] && 7 == c[2],
          "Slurm's torus:4:0:7.nid00012");
    CHECK(2 == mca_coll_loom_torus_parse_coords("torus:1:1", c), "Slurm's form without a node");
    CHECK(-1 == mca_coll_loom_torus_parse_coords("s1.s3.node12", c), "Slurm's tree form is not a torus address");
    CHECK(-1 == mca_coll_loom_torus_parse_coords("1,,2", c), "1,,2");
    CHECK(-1 == mca_coll_loom_torus_parse_coords("1,2.x", c), "1,2.x");
    CHECK(-1 == mca_coll_loom_torus_parse_coords("", c), "empty coordinates");
}

#define LINK(t, c, d, minus) (mca_coll_loom_torus_index(&(t), (c)) * 2 * (t).ndims + 2 * (d) + (minus))

static void test_routes(void)
{
    mca_coll_loom_torus_t t = shape("4x4");
    long r[16];
    int a[2] = {0, 0}, b[2] = {0, 2}, c[2] = {0, 3}, m[2] = {0, 1}, e[2] = {3, 1};

    /* a tie goes the + way: (0,0) -> (0,2) crosses (0,0)+ and (0,1)+ of dimension 1 */
    CHECK(2 == mca_coll_loom_torus_route(&t, a, b, r) && r[0] == LINK(t, a, 1, 0) && r[1] == LINK(t, m, 1, 0),
          "tie route");
    /* the shorter way: (0,0) -> (0,3) is one hop the - way */
    CHECK(1 == mca_coll_loom_torus_route(&t, a, c, r) && r[0] == LINK(t, a, 1, 1), "wrap route");
    /* dimension order: (0,0) -> (3,1): dimension 0 first, one hop - (wrap), then 1 + */
    {
        int mid[2] = {3, 0};
        CHECK(2 == mca_coll_loom_torus_route(&t, a, e, r) && r[0] == LINK(t, a, 0, 1) && r[1] == LINK(t, mid, 1, 0),
              "dimension order 0 then 1");
        char err[64];
        mca_coll_loom_torus_parse_order(&t, "yx", err, sizeof(err));
        int mid2[2] = {0, 1};
        CHECK(2 == mca_coll_loom_torus_route(&t, a, e, r) && r[0] == LINK(t, a, 1, 0) && r[1] == LINK(t, mid2, 0, 1),
              "dimension order 1 then 0");
    }
    /* a mesh dimension has no wrap: (0,0) -> (0,3) is three hops the + way */
    t = shape("4x4:mesh");
    CHECK(3 == mca_coll_loom_torus_route(&t, a, c, r) && r[2] == LINK(t, b, 1, 0), "mesh route");
    CHECK(3 + 2 == mca_coll_loom_torus_max_hops(&t), "max hops of 4x4:mesh");
    /* loads: (0,0)->(0,2) and (0,1)->(0,3) share (0,1)+ ; (0,2)->(0,0) goes + too */
    t = shape("4x4");
    {
        int src[6] = {0, 0, 0, 1, 0, 2}, dst[6] = {0, 2, 0, 3, 0, 0};
        long hops = 0;
        CHECK(2 == mca_coll_loom_torus_max_load(&t, 2, src, dst, &hops) && 4 == hops, "two messages, one shared link");
        CHECK(2 == mca_coll_loom_torus_max_load(&t, 3, src, dst, &hops) && 6 == hops,
              "(0,2)->(0,0) goes the + way round: shares nothing with the others, 2 stays the max");
        int s2[4] = {0, 0, 0, 2}, d2[4] = {0, 2, 0, 0};
        CHECK(1 == mca_coll_loom_torus_max_load(&t, 2, s2, d2, NULL), "both halves of a ring of 4");
        CHECK(0 == mca_coll_loom_torus_max_load(&t, 1, s2, s2, NULL), "a message to itself crosses nothing");
    }
}

/* Checks a chain over n nodes: a permutation; returns the max link load of its edges
 * in direction dir (loom_torus.h: > 0 forward, < 0 backward, 0 both at once). */
/* The most messages on one directed link when the edges of the chains order[] and (not
 * NULL) order2[] carry their streams at once, in direction dir; 99 when either is not a
 * permutation of the n nodes. */
static int chains_load(const mca_coll_loom_torus_t *t, int n, const int *c, const int *order, const int *order2,
                       int dir)
{
    const int nd = t->ndims;
    int *src = malloc(sizeof(int) * (size_t) (4 * n * nd + 1)), *dst = malloc(sizeof(int) * (size_t) (4 * n * nd + 1));
    char *seen = malloc((size_t) n + 1);
    int m = 0, load, perm = 1;

    for (int j = 0; j < 2; ++j) {
        const int *o = 0 == j ? order : order2;
        if (NULL == o) continue;
        memset(seen, 0, (size_t) n);
        for (int k = 0; k < n; ++k) {
            perm = perm && o[k] >= 0 && o[k] < n && !seen[o[k]];
            if (o[k] >= 0 && o[k] < n) seen[o[k]] = 1;
        }
        CHECK(perm, "the chain is not a permutation of the %d nodes", n);
        for (int k = 0; perm && k + 1 < n; ++k) {
            if (dir >= 0) {
                memcpy(src + m * nd, c + o[k] * nd, sizeof(int) * (size_t) nd);
                memcpy(dst + m * nd, c + o[k + 1] * nd, sizeof(int) * (size_t) nd);
                ++m;
            }
            if (dir <= 0) {
                memcpy(src + m * nd, c + o[k + 1] * nd, sizeof(int) * (size_t) nd);
                memcpy(dst + m * nd, c + o[k] * nd, sizeof(int) * (size_t) nd);
                ++m;
            }
        }
    }
    load = perm ? mca_coll_loom_torus_max_load(t, m, src, dst, NULL) : 99;
    free(src);
    free(dst);
    free(seen);
    return load;
}

static int chain_load(const mca_coll_loom_torus_t *t, int n, const int *c, const int *order, int dir)
{
    return chains_load(t, n, c, order, NULL, dir);
}

/* The coordinates of the nodes of a side x side torus in the bits of mask (node i at
 * row i / side, column i % side) into c; returns how many. */
static int subset_coords(unsigned mask, int side, int *c)
{
    int n = 0;
    for (int i = 0; i < side * side; ++i) {
        if (mask & (1u << i)) {
            c[2 * n] = i / side;
            c[2 * n + 1] = i % side;
            ++n;
        }
    }
    return n;
}

/* every subset of at least 2 nodes of a 4 x 4 torus: a chain for both directions at
 * once where one exists (480 subsets have none), and from every root one for a bcast
 * and one for a reduce */
static void test_chains_4x4(void)
{
    mca_coll_loom_torus_t t = shape("4x4");
    int c[32], order[16], notfound = 0, subsets = 0, rooted = 0;

    for (unsigned mask = 1; mask < (1u << 16); ++mask) {
        const int n = subset_coords(mask, 4, c);
        if (n < 2) continue;
        ++subsets;
        const int rc = mca_coll_loom_torus_chain(&t, n, c, -1, 0, order);
        const int load = chain_load(&t, n, c, order, 0);
        CHECK(rc >= 0, "4x4 subset %#x: chain failed", mask);
        notfound += 0 != rc;
        CHECK(0 != rc || 1 == load, "4x4 subset %#x: chain found but max link load %d", mask, load);
        for (int root = 0; root < n; ++root) {
            for (int dir = -1; dir <= 1; dir += 2) {
                const int r = mca_coll_loom_torus_chain(&t, n, c, root, dir, order);
                CHECK(0 == r && order[0] == root && 1 == chain_load(&t, n, c, order, dir),
                      "4x4 subset %#x root %d dir %d: no contention-free chain (%d)", mask, root, dir, r);
                ++rooted;
            }
        }
    }
    printf("test_torus: 4x4: %d subsets, %d without a chain for both directions at once; %d rooted chains\n",
           subsets, notfound, rooted);
    CHECK(480 == notfound, "4x4: %d subsets without a chain for both directions, expected 480", notfound);
}

static unsigned long long rng = 88172645463325252ull;
static unsigned long long xorshift(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The coordinates of node index v (row-major, dimension 0 slowest). */
static void coords_of(const mca_coll_loom_torus_t *t, long v, int *c)
{
    for (int d = t->ndims - 1; d >= 0; --d) {
        c[d] = (int) (v % t->dims[d]);
        v /= t->dims[d];
    }
}

/* n distinct random nodes of t into c (n ndims coordinates); taken: scratch of one
 * byte per node of t. */
static void random_nodes(const mca_coll_loom_torus_t *t, int n, int *c, char *taken)
{
    const long N = mca_coll_loom_torus_nodes(t);
    memset(taken, 0, (size_t) N);
    for (int i = 0; i < n; ++i) {
        long v;
        do {
            v = (long) (xorshift() % (unsigned long long) N);
        } while (taken[v]);
        taken[v] = 1;
        coords_of(t, v, c + (size_t) i * t->ndims);
    }
}

/* random subsets of n nodes of a torus */
static void test_chains_random(const char *dims, int tries, int nmin, int nmax)
{
    mca_coll_loom_torus_t t = shape(dims);
    const long N = mca_coll_loom_torus_nodes(&t);
    const int nd = t.ndims;
    int *c = malloc(sizeof(int) * (size_t) (nmax * nd)), *order = malloc(sizeof(int) * (size_t) nmax);
    char *taken = calloc((size_t) N, 1);
    int notfound = 0;

    for (int k = 0; k < tries; ++k) {
        const int n = nmin + (int) (xorshift() % (unsigned long long) (nmax - nmin + 1));
        random_nodes(&t, n, c, taken);
        /* a bcast from a random root, and both directions from anywhere */
        const int root = (int) (xorshift() % (unsigned long long) n);
        int rc = mca_coll_loom_torus_chain(&t, n, c, root, 1, order);
        CHECK(0 == rc && order[0] == root && 1 == chain_load(&t, n, c, order, 1),
              "%s: %d nodes, root %d: no contention-free bcast chain (%d)", dims, n, root, rc);
        rc = mca_coll_loom_torus_chain(&t, n, c, -1, 0, order);
        const int load = chain_load(&t, n, c, order, 0);
        CHECK(rc >= 0, "%s: chain failed", dims);
        notfound += 0 != rc;
        CHECK(0 != rc || 1 == load, "%s: %d nodes: chain found but max link load %d", dims, n, load);
    }
    printf("test_torus: %s: %d random subsets of %d-%d nodes: a bcast chain from a random root for each, "
           "%d without a chain for both directions at once\n", dims, tries, nmin, nmax, notfound);
    free(c);
    free(order);
    free(taken);
}

/* The `torus` schedules pass the symbolic verifier: random subsets of a 4 x 4 and a
 * 3 x 3 x 3 torus, several ranks on some nodes in shuffled rank order, every root,
 * pipelined in 1-5 segments, bcast, reduce and allreduce (in place too). */
static void test_schedules(void)
{
    static const char *shapes[] = {"4x4", "3x3x3"};
    static const mca_coll_loom_coll_t colls[] = {MCA_COLL_LOOM_COLL_BCAST, MCA_COLL_LOOM_COLL_REDUCE,
                                                 MCA_COLL_LOOM_COLL_ALLREDUCE};
    int verified = 0;

    for (int si = 0; si < 2; ++si) {
        mca_coll_loom_torus_t t = shape(shapes[si]);
        for (int k = 0; k < 40; ++k) {
            const int nn = 1 + (int) (xorshift() % 8), P = nn + (int) (xorshift() % 6);
            int coords[8 * MCA_COLL_LOOM_TORUS_MAX_DIMS], node_of[16];
            char taken[64];
            random_nodes(&t, nn, coords, taken);
            /* nodes numbered by their lowest rank (loom_topo.h): rank r < nn on node r
             * first, then the rest anywhere, shuffled */
            for (int r = 0; r < P; ++r) {
                node_of[r] = r < nn ? r : (int) (xorshift() % (unsigned long long) nn);
            }
            mca_coll_loom_params_t p = {.P = P, .nodes = nn, .rpn = P, .node_of = node_of, .torus = &t,
                                        .torus_coords = coords, .call = MCA_COLL_LOOM_CALL_COMMUTATIVE,
                                        .segs = 1 + (int) (xorshift() % 5)};
            for (int c = 0; c < 3; ++c) {
                const int alg = mca_coll_loom_alg_find(colls[c], "torus");
                char err[512] = "";
                CHECK(alg >= 0, "torus serves %s", mca_coll_loom_coll_name(colls[c]));
                if (alg < 0) continue;
                p.root = MCA_COLL_LOOM_COLL_ALLREDUCE == colls[c] ? 0 : MCA_COLL_LOOM_VERIFY_ALL_ROOTS;
                for (int ip = 0; ip < 2; ++ip) {
                    const int rc = mca_coll_loom_verify(alg, colls[c], &p, ip, NULL, err, sizeof(err));
                    CHECK(0 == rc, "%s on %s, %d nodes, P=%d, segs %d%s: %s", mca_coll_loom_coll_name(colls[c]),
                          shapes[si], nn, P, p.segs, ip ? ", in place" : "", err);
                    ++verified;
                }
            }
        }
    }
    /* a node and its four neighbours, two ranks on each, in shuffled order: the star
     * tree, whose root node feeds four nodes at once and combines four partials */
    {
        mca_coll_loom_torus_t t = shape("4x4");
        static const int star[] = {0, 0, 0, 1, 1, 0, 0, 3, 3, 0};
        int node_of[10] = {0, 1, 2, 3, 4, 2, 0, 4, 1, 3};
        mca_coll_loom_params_t p = {.P = 10, .nodes = 5, .rpn = 2, .node_of = node_of, .torus = &t,
                                    .torus_coords = star, .call = MCA_COLL_LOOM_CALL_COMMUTATIVE, .segs = 3};
        for (int c = 0; c < 3; ++c) {
            char err[512] = "";
            p.root = MCA_COLL_LOOM_COLL_ALLREDUCE == colls[c] ? 0 : MCA_COLL_LOOM_VERIFY_ALL_ROOTS;
            const int rc = mca_coll_loom_verify(mca_coll_loom_alg_find(colls[c], "torus"), colls[c], &p, 0, NULL,
                                                err, sizeof(err));
            CHECK(0 == rc, "%s on the star: %s", mca_coll_loom_coll_name(colls[c]), err);
            ++verified;
        }
    }
    /* the 4 x 4 torus but one node, some nodes with two ranks, shuffled: above
     * MCA_COLL_LOOM_TORUS_TREE_MAX nodes, two chains for bcast and reduce */
    {
        mca_coll_loom_torus_t t = shape("4x4");
        int coords[15 * 2], node_of[20];
        for (int v = 0, n = 0; v < 16; ++v) {
            if (5 != v) coords_of(&t, v, coords + 2 * n++);
        }
        for (int r = 0; r < 20; ++r) {
            node_of[r] = r < 15 ? r : (int) (xorshift() % 15);
        }
        mca_coll_loom_params_t p = {.P = 20, .nodes = 15, .rpn = 2, .node_of = node_of, .torus = &t,
                                    .torus_coords = coords, .call = MCA_COLL_LOOM_CALL_COMMUTATIVE};
        for (int c = 0; c < 3; ++c) {
            for (p.segs = 1; p.segs <= 4; p.segs += 3) {
                char err[512] = "";
                p.root = MCA_COLL_LOOM_COLL_ALLREDUCE == colls[c] ? 0 : MCA_COLL_LOOM_VERIFY_ALL_ROOTS;
                const int rc = mca_coll_loom_verify(mca_coll_loom_alg_find(colls[c], "torus"), colls[c], &p, 0, NULL,
                                                    err, sizeof(err));
                CHECK(0 == rc, "%s on 4x4 but a node, segs %d: %s", mca_coll_loom_coll_name(colls[c]), p.segs, err);
                ++verified;
            }
        }
    }
    /* no map: refused */
    mca_coll_loom_params_t q = {.P = 4, .call = MCA_COLL_LOOM_CALL_COMMUTATIVE};
    CHECK(NULL != mca_coll_loom_alg_refusal(mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_BCAST, "torus"), &q),
          "torus without a map is refused");
    printf("test_torus: %d torus schedule sets verified\n", verified);
}


/* Mittal et al.'s structured node sets of t into c (the whole torus's room): kind 0 all but
 * one random node, 1 all but two random planes of the last dimension half a ring apart,
 * 2 all but every other such plane; returns how many nodes. */
static int structured_set(const mca_coll_loom_torus_t *t, int kind, int *c)
{
    const long N = mca_coll_loom_torus_nodes(t);
    const int nd = t->ndims, Z = t->dims[nd - 1];
    const long gone = (long) (xorshift() % (unsigned long long) N);
    const int z1 = (int) (xorshift() % (unsigned long long) Z), z2 = (z1 + Z / 2) % Z;
    int n = 0;

    for (long v = 0; v < N; ++v) {
        const int z = (int) (v % Z);
        if ((0 == kind && v == gone) || (1 == kind && (z == z1 || z == z2)) || (2 == kind && (z & 1))) {
            continue;
        }
        coords_of(t, v, c + (size_t) n * nd);
        ++n;
    }
    return n;
}

/* Mittal et al.'s structured node sets at scale, where a search would be slow: the whole
 * torus but one node, and the whole torus but some planes of the last dimension.  A
 * chain in each direction from several roots, checked by the link-load model, and
 * found quickly (the snake, loom_torus_chains.c). */
static void test_chains_structured(const char *dims, int roots)
{
    mca_coll_loom_torus_t t = shape(dims);
    const long N = mca_coll_loom_torus_nodes(&t);
    const int nd = t.ndims;
    int *c = malloc(sizeof(int) * (size_t) (N * nd)), *order = malloc(sizeof(int) * (size_t) N);
    int found = 0, sets = 0;
    time_t t0 = time(NULL);

    for (int kind = 0; kind < 3 && NULL != c && NULL != order; ++kind) {
        const int n = structured_set(&t, kind, c);
        if (n < 2) {
            continue;
        }
        ++sets;
        for (int k = 0; k < roots; ++k) {
            const int root = (int) (xorshift() % (unsigned long long) n);
            for (int dir = -1; dir <= 1; ++dir) {
                int rc = mca_coll_loom_torus_chain(&t, n, c, 0 == dir ? -1 : root, dir, order);
                const int load = 0 == rc ? chain_load(&t, n, c, order, dir) : -1;
                CHECK(0 == rc && 1 == load && (0 == dir || order[0] == root),
                      "%s, %s, %d nodes, root %d, direction %d: rc %d, link load %d", dims,
                      0 == kind ? "one node missing" : 1 == kind ? "two planes missing" : "every other plane",
                      n, root, dir, rc, load);
                found += 0 == rc;
            }
        }
    }
    printf("test_torus: %s: %d structured node sets (one node or planes missing), %d contention-free chains "
           "(%ld s)\n", dims, sets, found, (long) (time(NULL) - t0));
    free(c);
    free(order);
}

/* Appends a tree's edges as messages (parent to child for dir >= 0, child to parent for
 * dir <= 0) to src[] / dst[] from message m on; the new count. */
static int append_edges(const mca_coll_loom_torus_t *t, int n, const int *c, const int *parent, int dir, int *src,
                        int *dst, int m)
{
    const int nd = t->ndims;
    for (int v = 0; v < n; ++v) {
        if (parent[v] < 0) continue;
        const int *a = c + parent[v] * nd, *b = c + v * nd;
        if (dir >= 0) {
            memcpy(src + m * nd, a, sizeof(int) * (size_t) nd);
            memcpy(dst + m * nd, b, sizeof(int) * (size_t) nd);
            ++m;
        }
        if (dir <= 0) {
            memcpy(src + m * nd, b, sizeof(int) * (size_t) nd);
            memcpy(dst + m * nd, a, sizeof(int) * (size_t) nd);
            ++m;
        }
    }
    return m;
}

/* Whether parent[] is a tree over the n nodes rooted at root. */
static bool is_tree(int n, int root, const int *parent)
{
    for (int v = 0; v < n; ++v) {
        int u = v, hops = 0;
        while (u >= 0 && u < n && u != root && hops <= n) { /* reaches the root */
            u = parent[u];
            ++hops;
        }
        if (u != root || (v == root) != (parent[v] < 0)) {
            return false;
        }
    }
    return true;
}

/* A tree's links (parent to child for dir >= 0, child to parent for dir <= 0): -1 when
 * parent[] is not a tree over the n nodes rooted at root, else its max link load; its
 * links crossed in *links. */
static int tree_load(const mca_coll_loom_torus_t *t, int n, const int *c, int root, const int *parent, int dir,
                     long *links)
{
    int src[2 * MCA_COLL_LOOM_TORUS_TREE_MAX * MCA_COLL_LOOM_TORUS_MAX_DIMS];
    int dst[2 * MCA_COLL_LOOM_TORUS_TREE_MAX * MCA_COLL_LOOM_TORUS_MAX_DIMS];

    if (!is_tree(n, root, parent)) {
        return -1;
    }
    const int m = append_edges(t, n, c, parent, dir, src, dst, 0);
    return mca_coll_loom_torus_max_load(t, m, src, dst, links);
}

/* The fewest links of a contention-free tree, by trying every parent array (n <= 5). */
static long brute_tree(const mca_coll_loom_torus_t *t, int n, const int *c, int root, int dir)
{
    int parent[5];
    long best = -1, total = 1;

    for (int i = 0; i < n; ++i) total *= n;
    for (long code = 0; code < total; ++code) {
        long x = code, links;
        for (int v = 0; v < n; ++v, x /= n) {
            parent[v] = v == root ? -1 : (int) (x % n);
        }
        const int load = tree_load(t, n, c, root, parent, dir, &links);
        if (load >= 0 && load <= 1 && (best < 0 || links < best)) {
            best = links;
        }
    }
    return best;
}

/* Contention-free trees crossing the fewest links (mca_coll_loom_torus_tree): a hand
 * case; every subset of a 3 x 3 torus from every root in each direction, the fewest
 * links checked by trying every tree up to 5 nodes, and never more links than the
 * chain; random subsets of larger tori, with the slowest search. */
static void test_trees(void)
{
    mca_coll_loom_torus_t t = shape("4x4");
    int parent[MCA_COLL_LOOM_TORUS_TREE_MAX], order[MCA_COLL_LOOM_TORUS_TREE_MAX];
    int c[MCA_COLL_LOOM_TORUS_TREE_MAX * MCA_COLL_LOOM_TORUS_MAX_DIMS];
    long links, chain_links;
    int trees = 0, shorter = 0, brute = 0;

    /* a node and its four neighbours: the star, 4 links (a chain needs 7) */
    static const int star[] = {0, 0, 0, 1, 1, 0, 0, 3, 3, 0};
    for (int dir = -1; dir <= 1; ++dir) {
        CHECK(0 == mca_coll_loom_torus_tree(&t, 5, star, 0, dir, parent), "star: a tree (dir %d)", dir);
        CHECK(1 == tree_load(&t, 5, star, 0, parent, 1, &links) && 4 == links &&
                  parent[1] == 0 && parent[2] == 0 && parent[3] == 0 && parent[4] == 0,
              "star, dir %d: the root's four children, 4 links (%ld)", dir, links);
    }
    CHECK(0 == mca_coll_loom_torus_chain(&t, 5, star, 0, 1, order), "star: a chain");
    chain_links = 0;
    for (int k = 0; k + 1 < 5; ++k) {
        chain_links += mca_coll_loom_torus_route(&t, star + 2 * order[k], star + 2 * order[k + 1], NULL);
    }
    CHECK(7 == chain_links, "star: the chain crosses 7 links (%ld)", chain_links);

    t = shape("3x3");
    for (unsigned mask = 1; mask < (1u << 9); ++mask) {
        const int n = subset_coords(mask, 3, c);
        for (int root = 0; root < n; ++root) {
            for (int dir = -1; dir <= 1; ++dir) {
                const int rc = mca_coll_loom_torus_tree(&t, n, c, root, dir, parent);
                const int load = 0 == rc ? tree_load(&t, n, c, root, parent, dir, &links) : -1;
                const long best = n <= 5 ? brute_tree(&t, n, c, root, dir) : -2;
                CHECK(rc >= 0 && (0 != rc || 1 == load || (1 == n && 0 == load)),
                      "3x3 subset %#x root %d dir %d: rc %d, load %d", mask, root, dir, rc, load);
                CHECK(n > 5 || (0 == rc ? best == links : best < 0),
                      "3x3 subset %#x root %d dir %d: %ld links, the fewest %ld", mask, root, dir,
                      0 == rc ? links : -1, best);
                brute += n <= 5;
                if (0 == rc && 0 == mca_coll_loom_torus_chain(&t, n, c, 0 == dir ? -1 : root, dir, order) &&
                    (0 != dir || order[0] == root)) {
                    long hops = 0;
                    for (int k = 0; k + 1 < n; ++k) {
                        hops += (dir >= 0) * mca_coll_loom_torus_route(&t, c + 2 * order[k], c + 2 * order[k + 1], NULL);
                        hops += (dir <= 0) * mca_coll_loom_torus_route(&t, c + 2 * order[k + 1], c + 2 * order[k], NULL);
                    }
                    CHECK(links <= hops, "3x3 subset %#x root %d dir %d: tree %ld links, chain %ld", mask, root,
                          dir, links, hops);
                    shorter += links < hops;
                }
                trees += 0 == rc;
            }
        }
    }
    /* random subsets of larger tori, up to the most nodes a tree is searched for */
    static const char *shapes[] = {"4x4x2", "8x8x8", "16x16x16"};
    double slowest = 0;
    for (int si = 0; si < 3; ++si) {
        mca_coll_loom_torus_t u = shape(shapes[si]);
        char *taken = calloc((size_t) mca_coll_loom_torus_nodes(&u), 1);
        for (int k = 0; k < 200 && NULL != taken; ++k) {
            const int n = 3 + (int) (xorshift() % (MCA_COLL_LOOM_TORUS_TREE_MAX - 2));
            const int root = (int) (xorshift() % (unsigned long long) n), dir = (int) (xorshift() % 3) - 1;
            random_nodes(&u, n, c, taken);
            const clock_t t0 = clock();
            const int rc = mca_coll_loom_torus_tree(&u, n, c, root, dir, parent);
            const double sec = (double) (clock() - t0) / CLOCKS_PER_SEC;
            slowest = sec > slowest ? sec : slowest;
            CHECK(rc >= 0 && (0 != rc || 1 == tree_load(&u, n, c, root, parent, dir, &links)),
                  "%s: %d nodes, root %d, dir %d: rc %d", shapes[si], n, root, dir, rc);
            CHECK(0 == rc || 0 == dir, "%s: %d nodes: no tree in direction %d", shapes[si], n, dir);
            trees += 0 == rc;
        }
        free(taken);
    }
    printf("test_torus: trees: %d contention-free (%d checked against every tree, %d shorter than the chain); "
           "slowest search of up to %d nodes %.3f s\n", trees, brute, shorter, MCA_COLL_LOOM_TORUS_TREE_MAX, slowest);
    CHECK(slowest < 0.5, "a tree search took %.3f s", slowest);
}

/* The links a tree's edges cross in direction dir (as the torus algorithm avoids them
 * for its second tree), into l[]; their number. */
static int links_of(const mca_coll_loom_torus_t *t, int n, const int *c, const int *parent, int dir, long *l)
{
    const int nd = t->ndims;
    int m = 0;
    for (int v = 0; v < n; ++v) {
        if (parent[v] < 0) continue;
        if (dir >= 0) m += mca_coll_loom_torus_route(t, c + parent[v] * nd, c + v * nd, l + m);
        if (dir <= 0) m += mca_coll_loom_torus_route(t, c + v * nd, c + parent[v] * nd, l + m);
    }
    return m;
}

/* The most messages on one directed link when the edges of two trees at `root` carry
 * their streams at once (the contention model over both trees' edges); -1 when either
 * is not a spanning tree at root. */
static int pair_load(const mca_coll_loom_torus_t *t, int n, const int *c, int root, const int *p1, const int *p2,
                     int dir)
{
    int src[4 * MCA_COLL_LOOM_TORUS_TREE_MAX * MCA_COLL_LOOM_TORUS_MAX_DIMS];
    int dst[4 * MCA_COLL_LOOM_TORUS_TREE_MAX * MCA_COLL_LOOM_TORUS_MAX_DIMS];

    if (!is_tree(n, root, p1) || !is_tree(n, root, p2)) {
        return -1;
    }
    const int m = append_edges(t, n, c, p2, dir, src, dst, append_edges(t, n, c, p1, dir, src, dst, 0));
    return mca_coll_loom_torus_max_load(t, m, src, dst, NULL);
}

/* Second trees (mca_coll_loom_torus_tree_avoiding, the torus schedules' two trees): the
 * star's first tree takes all four links of its root, so no second bcast tree can leave
 * it, nor any tree when every link is to be avoided; on every subset of a 3 x 3 torus
 * and random subsets of larger ones, the second tree avoiding the first's links is a
 * spanning tree at the same root, and the two together put at most one message on any
 * directed link. */
static void test_second_trees(void)
{
    mca_coll_loom_torus_t t = shape("4x4");
    int p1[MCA_COLL_LOOM_TORUS_TREE_MAX], p2[MCA_COLL_LOOM_TORUS_TREE_MAX];
    int c[MCA_COLL_LOOM_TORUS_TREE_MAX * MCA_COLL_LOOM_TORUS_MAX_DIMS];
    long avoid[16 * 16 * 16 * 6];
    int tried = 0, found[3] = {0, 0, 0};

    static const int star[] = {0, 0, 0, 1, 1, 0, 0, 3, 3, 0};
    CHECK(0 == mca_coll_loom_torus_tree(&t, 5, star, 0, 1, p1), "star: a first tree");
    int m = links_of(&t, 5, star, p1, 1, avoid);
    CHECK(1 == mca_coll_loom_torus_tree_avoiding(&t, 5, star, 0, 1, avoid, m, p2),
          "star: no second bcast tree once the root's four links are taken");
    /* the diagonal of the 4 x 4 torus (test/cluster's map): a second tree in each direction */
    static const int diag[] = {0, 0, 1, 1, 2, 2, 3, 3};
    for (int dir = -1; dir <= 1; dir += 2) {
        CHECK(0 == mca_coll_loom_torus_tree(&t, 4, diag, 0, dir, p1), "diagonal: a first tree (dir %d)", dir);
        m = links_of(&t, 4, diag, p1, dir, avoid);
        CHECK(0 == mca_coll_loom_torus_tree_avoiding(&t, 4, diag, 0, dir, avoid, m, p2) &&
                  1 == pair_load(&t, 4, diag, 0, p1, p2, dir),
              "diagonal: a second tree beside the first (dir %d)", dir);
    }
    for (long l = 0; l < mca_coll_loom_torus_nodes(&t) * 4; ++l) {
        avoid[l] = l;
    }
    CHECK(1 == mca_coll_loom_torus_tree_avoiding(&t, 2, diag, 0, 1, avoid, 64, p2),
          "no tree when every link is to be avoided");
    CHECK(-1 == mca_coll_loom_torus_tree_avoiding(&t, 2, diag, 0, 1, NULL, 3, p2), "avoid NULL with a count");

    t = shape("3x3");
    for (unsigned mask = 1; mask < (1u << 9); ++mask) {
        const int n = subset_coords(mask, 3, c);
        for (int root = 0; root < n && n >= 3; ++root) {
            for (int dir = -1; dir <= 1; ++dir) {
                if (0 != mca_coll_loom_torus_tree(&t, n, c, root, dir, p1)) continue;
                m = links_of(&t, n, c, p1, dir, avoid);
                const int rc = mca_coll_loom_torus_tree_avoiding(&t, n, c, root, dir, avoid, m, p2);
                const int load = 0 == rc ? pair_load(&t, n, c, root, p1, p2, dir) : -1;
                CHECK(rc >= 0 && (0 != rc || 1 == load), "3x3 subset %#x root %d dir %d: second tree rc %d, load %d",
                      mask, root, dir, rc, load);
                found[dir + 1] += 0 == rc;
                ++tried;
            }
        }
    }
    static const char *shapes[] = {"4x4", "4x4x2", "8x8x8", "16x16x16"};
    for (int si = 0; si < 4; ++si) {
        mca_coll_loom_torus_t u = shape(shapes[si]);
        char *taken = calloc((size_t) mca_coll_loom_torus_nodes(&u), 1);
        for (int k = 0; k < 200 && NULL != taken; ++k) {
            const int n = 3 + (int) (xorshift() % (MCA_COLL_LOOM_TORUS_TREE_MAX - 2));
            const int root = (int) (xorshift() % (unsigned long long) n), dir = (int) (xorshift() % 3) - 1;
            random_nodes(&u, n, c, taken);
            if (0 != mca_coll_loom_torus_tree(&u, n, c, root, dir, p1)) continue;
            m = links_of(&u, n, c, p1, dir, avoid);
            const int rc = mca_coll_loom_torus_tree_avoiding(&u, n, c, root, dir, avoid, m, p2);
            const int load = 0 == rc ? pair_load(&u, n, c, root, p1, p2, dir) : -1;
            CHECK(rc >= 0 && (0 != rc || 1 == load), "%s: %d nodes, root %d, dir %d: second tree rc %d, load %d",
                  shapes[si], n, root, dir, rc, load);
            found[dir + 1] += 0 == rc;
            ++tried;
        }
        free(taken);
    }
    CHECK(found[0] > 0 && found[2] > 0, "second trees found for reduce %d and bcast %d times", found[0], found[2]);
    printf("test_torus: second trees: %d of %d first trees have one (reduce %d, allreduce %d, bcast %d)\n",
           found[0] + found[1] + found[2], tried, found[0], found[1], found[2]);
}

/* The links a chain's edges cross in direction dir into l[]; their number. */
static int chain_links(const mca_coll_loom_torus_t *t, int n, const int *c, const int *order, int dir, long *l)
{
    const int nd = t->ndims;
    int m = 0;
    for (int k = 0; k + 1 < n; ++k) {
        if (dir >= 0) m += mca_coll_loom_torus_route(t, c + order[k] * nd, c + order[k + 1] * nd, l + m);
        if (dir <= 0) m += mca_coll_loom_torus_route(t, c + order[k + 1] * nd, c + order[k] * nd, l + m);
    }
    return m;
}

/* A second chain for one node set from root in direction dir: -1 when the set has no
 * first chain, else whether a second one was found; either way checked: the second
 * starts at the root and the pair puts at most one message on any directed link. */
static int second_chain(const mca_coll_loom_torus_t *t, int n, const int *c, int root, int dir, const char *what)
{
    int *o1 = malloc(sizeof(int) * (size_t) n), *o2 = malloc(sizeof(int) * (size_t) n), rc = -1;
    long *l = malloc(sizeof(long) * (size_t) (2 * n * mca_coll_loom_torus_max_hops(t) + 1));

    if (NULL != o1 && NULL != o2 && NULL != l && 0 == mca_coll_loom_torus_chain(t, n, c, root, dir, o1)) {
        const int m = chain_links(t, n, c, o1, dir, l);
        rc = mca_coll_loom_torus_chain_avoiding(t, n, c, root, dir, l, m, o2);
        const int load = 0 == rc ? chains_load(t, n, c, o1, o2, dir) : -1;
        CHECK(rc >= 0 && (0 != rc || (o2[0] == root && 1 == load)),
              "%s, %d nodes, root %d, dir %d: second chain rc %d, starts at %d, pair load %d", what, n, root, dir, rc,
              0 == rc ? o2[0] : -1, load);
        rc = 0 == rc;
    }
    free(o1);
    free(o2);
    free(l);
    return rc;
}

/* Second chains (mca_coll_loom_torus_chain_avoiding: the two-tree torus schedules above
 * MCA_COLL_LOOM_TORUS_TREE_MAX nodes): the whole 4 x 4 torus, and every structured set
 * of every shape (one node, two planes or every other plane missing) from random roots,
 * has one for a bcast and for a reduce (the snake the other way round its cycle), and so
 * has a box of more than 64 nodes missing any one node; random subsets of 11-64 nodes,
 * where the search finds one, a valid one; none when every link is to be avoided, and
 * bad input refused. */
static void test_second_chains(void)
{
    mca_coll_loom_torus_t t = shape("4x4");
    int c[16 * 16 * 16 * 3], order[16 * 16 * 16];
    long all[64];
    int structured = 0, sfound = 0, sboth = 0, random = 0, rfound[3] = {0, 0, 0};

    for (int v = 0; v < 16; ++v) {
        coords_of(&t, v, c + 2 * v);
    }
    for (int root = 0; root < 16; ++root) {
        for (int dir = -1; dir <= 1; dir += 2) {
            CHECK(1 == second_chain(&t, 16, c, root, dir, "the whole 4x4"), "the whole 4x4 torus, root %d, dir %d: "
                  "no second chain", root, dir);
        }
    }
    for (long l = 0; l < 64; ++l) {
        all[l] = l;
    }
    CHECK(1 == mca_coll_loom_torus_chain_avoiding(&t, 16, c, 0, 1, all, 64, order), "no chain on no links");
    CHECK(-1 == mca_coll_loom_torus_chain_avoiding(&t, 16, c, 0, 1, NULL, 3, order), "avoid NULL with a count");
    CHECK(-1 == mca_coll_loom_torus_chain_avoiding(&t, 16, c, -1, 1, all, 1, order), "a second chain needs a root");
    CHECK(-1 == mca_coll_loom_torus_chain_avoiding(&t, 16, c, 0, 1, (const long[]) {64}, 1, order),
          "a link outside the torus");

    static const char *shapes[] = {"4x4", "4x2x2", "6x5x3", "8x8x8", "16x16x16", "32x32x32"};
    for (int si = 0; si < 6; ++si) {
        mca_coll_loom_torus_t u = shape(shapes[si]);
        const long N = mca_coll_loom_torus_nodes(&u);
        const int nd = u.ndims;
        int *cc = malloc(sizeof(int) * (size_t) (N * nd));
        for (int kind = 0; kind < 3 && NULL != cc; ++kind) {
            const int n = structured_set(&u, kind, cc);
            for (int k = 0; k < (N > 1000 ? 1 : 3) && n > MCA_COLL_LOOM_TORUS_TREE_MAX; ++k) {
                const int root = (int) (xorshift() % (unsigned long long) n);
                for (int dir = -1; dir <= 1; ++dir) {
                    const int found = second_chain(&u, n, cc, root, dir, shapes[si]);
                    if (0 == dir) {
                        sboth += 1 == found;
                        continue;
                    }
                    sfound += 1 == found;
                    ++structured;
                }
            }
        }
        free(cc);
    }
    /* a box missing one node, every node in turn, above the search's 64 nodes: the
     * snakes alone (a pair where the missing node sits at a turn too) */
    static const char *mshapes[] = {"8x4x4", "4x4x4x4"};
    int missing = 0, mfound = 0;
    for (int si = 0; si < 2; ++si) {
        mca_coll_loom_torus_t u = shape(mshapes[si]);
        const int N = (int) mca_coll_loom_torus_nodes(&u), nd = u.ndims;
        for (int gone = 0; gone < N; ++gone) {
            for (int v = 0, n = 0; v < N; ++v) {
                if (v != gone) coords_of(&u, v, c + nd * n++);
            }
            const int root = (int) (xorshift() % (unsigned long long) (N - 1));
            for (int dir = -1; dir <= 1; dir += 2) {
                mfound += 1 == second_chain(&u, N - 1, c, root, dir, mshapes[si]);
                ++missing;
            }
        }
    }
    CHECK(mfound == missing, "boxes missing a node: second chains on %d of %d", mfound, missing);
    static const char *rshapes[] = {"4x4x4", "8x8x8"};
    for (int si = 0; si < 2; ++si) {
        mca_coll_loom_torus_t u = shape(rshapes[si]);
        char *taken = calloc((size_t) mca_coll_loom_torus_nodes(&u), 1);
        for (int k = 0; k < 100 && NULL != taken; ++k) {
            const int n = MCA_COLL_LOOM_TORUS_TREE_MAX + 1 + (int) (xorshift() % (64 - MCA_COLL_LOOM_TORUS_TREE_MAX));
            const int root = (int) (xorshift() % (unsigned long long) n), dir = (int) (xorshift() % 3) - 1;
            random_nodes(&u, n, c, taken);
            const int found = second_chain(&u, n, c, root, dir, rshapes[si]);
            rfound[dir + 1] += 1 == found;
            random += found >= 0;
        }
        free(taken);
    }
    CHECK(sfound == structured, "second chains on %d of %d structured sets", sfound, structured);
    CHECK(rfound[0] > 0 && rfound[2] > 0, "second chains on random sets: reduce %d, bcast %d", rfound[0], rfound[2]);
    printf("test_torus: second chains: %d of %d structured sets (bcast, reduce; %d for both directions), %d of %d "
           "boxes missing a node (8x4x4, 4x4x4x4), %d of %d random sets of 11-64 nodes (reduce %d, allreduce %d, "
           "bcast %d)\n", sfound, structured, sboth, mfound, missing, rfound[0] + rfound[1] + rfound[2], random,
           rfound[0], rfound[1], rfound[2]);
}


/* What auto picks with a torus map: torus for bcast, reduce and allreduce from 1 MiB on
 * several nodes (commutative ops; a non-commutative reduce goes elsewhere), not below. */
static void test_decide(void)
{
    mca_coll_loom_torus_t t = shape("4x4");
    static const int diag[] = {0, 0, 1, 1, 2, 2, 3, 3};
    int node_of[8] = {0, 0, 1, 1, 2, 2, 3, 3}, knobs[64];
    const unsigned C = MCA_COLL_LOOM_CALL_COMMUTATIVE, CE = C | MCA_COLL_LOOM_CALL_EXACT;
    const struct {
        mca_coll_loom_coll_t coll;
        size_t bytes;
        unsigned call;
        bool torus;
    } cases[] = {
        {MCA_COLL_LOOM_COLL_BCAST, 4 << 20, CE, true},
        {MCA_COLL_LOOM_COLL_BCAST, 512 << 10, CE, false},
        {MCA_COLL_LOOM_COLL_REDUCE, 1 << 20, C, true},
        {MCA_COLL_LOOM_COLL_REDUCE, 16 << 20, CE, true},
        {MCA_COLL_LOOM_COLL_REDUCE, 16 << 20, MCA_COLL_LOOM_CALL_EXACT, false},
        {MCA_COLL_LOOM_COLL_REDUCE, 512 << 10, C, false},
        {MCA_COLL_LOOM_COLL_ALLREDUCE, 4 << 20, C, true},
    };

    for (int a = 0; a < mca_coll_loom_num_algs; ++a) {
        knobs[a] = mca_coll_loom_algs[a]->knob ? mca_coll_loom_algs[a]->knob_default : 0;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        mca_coll_loom_params_t p = {.P = 8, .nodes = 4, .rpn = 2, .node_of = node_of, .torus = &t,
                                    .torus_coords = diag, .call = cases[i].call, .coll = cases[i].coll};
        mca_coll_loom_choice_t ch;
        mca_coll_loom_decide(cases[i].coll, cases[i].bytes, &p, knobs, -1, NULL, 0, &ch);
        const bool torus = ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, "torus");
        CHECK(torus == cases[i].torus, "decide %s %zu B call %x on a torus map: %s",
              mca_coll_loom_coll_name(cases[i].coll), cases[i].bytes, cases[i].call,
              ch.alg >= 0 ? mca_coll_loom_algs[ch.alg]->name : "previous");
        /* without the map: never torus */
        p.torus = NULL;
        p.torus_coords = NULL;
        mca_coll_loom_decide(cases[i].coll, cases[i].bytes, &p, knobs, -1, NULL, 0, &ch);
        CHECK(ch.alg < 0 || 0 != strcmp(mca_coll_loom_algs[ch.alg]->name, "torus"), "torus picked without a map");
    }
    /* the whole 4 x 4 torus, a row, one rank per node: swing from 1 MiB (allreduce:
     * commutative ops); a node missing, two ranks on a node or a non-commutative op: not
     * swing */
    {
        int coords[16 * 2], nodes[16];
        for (int v = 0; v < 16; ++v) {
            coords_of(&t, (v * 7) % 16, coords + 2 * v); /* rank order shuffled */
            nodes[v] = v;
        }
        const struct {
            int P, rpn;
            size_t bytes;
            unsigned call;
            bool swing;
            int coll;
        } sw[] = {{16, 1, 4 << 20, C, true, MCA_COLL_LOOM_COLL_ALLREDUCE},
                  {16, 1, 1 << 20, CE, true, MCA_COLL_LOOM_COLL_ALLREDUCE},
                  {16, 1, 512 << 10, C, false, MCA_COLL_LOOM_COLL_ALLREDUCE},
                  {15, 1, 4 << 20, C, false, MCA_COLL_LOOM_COLL_ALLREDUCE},
                  {16, 1, 4 << 20, 0, false, MCA_COLL_LOOM_COLL_ALLREDUCE},
                  {4, 1, 4 << 20, C, true, MCA_COLL_LOOM_COLL_ALLREDUCE},
                  {16, 1, 1 << 20, CE, true, MCA_COLL_LOOM_COLL_ALLGATHER},
                  {4, 1, 4 << 20, CE, true, MCA_COLL_LOOM_COLL_ALLGATHER},
                  {16, 1, 512 << 10, CE, false, MCA_COLL_LOOM_COLL_ALLGATHER},
                  {15, 1, 4 << 20, CE, false, MCA_COLL_LOOM_COLL_ALLGATHER}};
        for (size_t i = 0; i < sizeof(sw) / sizeof(sw[0]); ++i) {
            int row[4 * 2];
            for (int k = 0; k < 4; ++k) { /* the row x = 2 */
                row[2 * k] = 2;
                row[2 * k + 1] = (k * 3) % 4;
            }
            mca_coll_loom_params_t p = {.P = sw[i].P, .nodes = sw[i].P, .rpn = sw[i].rpn, .node_of = nodes,
                                        .torus = &t, .torus_coords = 4 == sw[i].P ? row : coords,
                                        .call = sw[i].call, .coll = sw[i].coll};
            mca_coll_loom_choice_t ch;
            mca_coll_loom_decide(sw[i].coll, sw[i].bytes, &p, knobs, -1, NULL, 0, &ch);
            const bool swing = ch.alg >= 0 && 0 == strcmp(mca_coll_loom_algs[ch.alg]->name, "swing");
            CHECK(swing == sw[i].swing, "decide %s %zu B, %d ranks of the 4 x 4 torus, call %x: %s",
                  mca_coll_loom_coll_name(sw[i].coll), sw[i].bytes, sw[i].P, sw[i].call,
                  ch.alg >= 0 ? mca_coll_loom_algs[ch.alg]->name : "previous");
        }
        /* two ranks on each node of a 2 x 2 sub-torus: not swing */
        int pairs[8] = {0, 0, 1, 1, 2, 2, 3, 3}, sq[4 * 2] = {0, 0, 0, 1, 1, 0, 1, 1};
        mca_coll_loom_params_t p = {.P = 8, .nodes = 4, .rpn = 2, .node_of = pairs, .torus = &t,
                                    .torus_coords = sq, .call = C, .coll = MCA_COLL_LOOM_COLL_ALLREDUCE};
        CHECK(!mca_coll_loom_swing_sub_torus(&p), "swing's torus form with two ranks on a node");
    }
}

/* Ranks 0 and 1 each send one message, to ranks 2 and 3: two flows at once. */
static int build_two_flows(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    if (p->rank < 2) {
        mca_coll_loom_sched_send(s, p->rank + 2, MCA_COLL_LOOM_SLOT_RESULT);
    } else {
        mca_coll_loom_sched_recv(s, p->rank - 2, MCA_COLL_LOOM_SLOT_RESULT);
    }
    mca_coll_loom_sched_wait(s);
    return MCA_COLL_LOOM_OK;
}

static bool near(double a, double b)
{
    return a > 0.999 * b && a < 1.001 * b;
}

/* The network model: two flows on a ring of 8 nodes, by hand; then the link loads of
 * the torus and binomial bcasts on random subsets of 4 x 4 and 8 x 8 x 8 tori. */
static void test_network(void)
{
    mca_coll_loom_torus_t ring = shape("8");
    mca_coll_loom_model_params_t m;
    mca_coll_loom_model_opts_t o;
    const double D = 1e-6; /* link time per byte: 1 MB/s */
    const size_t n = 1 << 16;
    int node_of[4] = {0, 1, 2, 3};

    mca_coll_loom_model_params_default(&m);
    mca_coll_loom_model_opts_default(&o);
    o.link_G = D;
    o.hop_L = 1e-6;
    {
        /* nodes 0 1 2 3: 0->2 and 1->3 both cross link 1+: the second waits for the first */
        int c[4] = {0, 1, 2, 3};
        mca_coll_loom_params_t p = {.P = 4, .nodes = 4, .rpn = 1, .node_of = node_of, .torus = &ring,
                                    .torus_coords = c, .call = MCA_COLL_LOOM_CALL_COMMUTATIVE,
                                    .coll = MCA_COLL_LOOM_COLL_BCAST};
        mca_coll_loom_model_result_t res;
        int rc = mca_coll_loom_model_predict_builder(build_two_flows, &p, n, 8, &m, &o, NULL, &res);
        const double want = 2 * m.o + 2 * D * n + m.L + 2 * o.hop_L;
        CHECK(MCA_COLL_LOOM_OK == rc && 2 == res.max_link_load && 2 == res.max_link_hops &&
                  2 == res.link_messages && near(res.time, want),
              "two flows on link 1+: load %d (want 2), hops %ld, time %g (want %g), rc %d", res.max_link_load,
              res.max_link_hops, res.time, want, rc);
        /* nodes 0 3 2 1: 0->2 goes +, 3->1 goes -: no shared link, one link time */
        int d[4] = {0, 3, 2, 1};
        p.torus_coords = d;
        rc = mca_coll_loom_model_predict_builder(build_two_flows, &p, n, 8, &m, &o, NULL, &res);
        const double want1 = 2 * m.o + D * n + m.L + 2 * o.hop_L;
        CHECK(MCA_COLL_LOOM_OK == rc && 1 == res.max_link_load && near(res.time, want1),
              "two flows on disjoint links: load %d (want 1), time %g (want %g), rc %d", res.max_link_load,
              res.time, want1, rc);
        /* two ranks of one node: the message crosses no link */
        int same[4] = {0, 0, 0, 1};
        p.node_of = same;
        p.nodes = 2;
        rc = mca_coll_loom_model_predict_builder(build_two_flows, &p, n, 8, &m, &o, NULL, &res);
        CHECK(MCA_COLL_LOOM_OK == rc && 1 == res.link_messages,
              "a message inside a node crosses no link: %ld messages on links (want 1), rc %d",
              res.link_messages, rc);
        /* without coordinates the network is refused, not ignored */
        p.torus_coords = NULL;
        rc = mca_coll_loom_model_predict_builder(build_two_flows, &p, n, 8, &m, &o, NULL, &res);
        CHECK(MCA_COLL_LOOM_ERR_BADPARAM == rc, "the network without coordinates: rc %d", rc);
    }

    /* a box but one node above the chain search's limit (127 nodes): the snake one way
     * and the other, two chains, nearly halve bcast and reduce */
    {
        mca_coll_loom_torus_t t = shape("8x4x4"), t1 = t;
        int c[127 * 3], no[127];
        for (int v = 1; v < 128; ++v) {
            coords_of(&t, v, c + 3 * (v - 1));
            no[v - 1] = v - 1;
        }
        t1.max_trees = 1;
        const size_t bytes = 4 << 20;
        for (int r = 0; r < 2; ++r) {
            const mca_coll_loom_coll_t coll = 0 == r ? MCA_COLL_LOOM_COLL_BCAST : MCA_COLL_LOOM_COLL_REDUCE;
            mca_coll_loom_params_t p = {.P = 127, .nodes = 127, .rpn = 1, .node_of = no, .torus = &t,
                                        .torus_coords = c, .call = MCA_COLL_LOOM_CALL_COMMUTATIVE, .root = 77,
                                        .segs = mca_coll_loom_alg_segs(mca_coll_loom_alg_find(coll, "torus"),
                                                                       coll, 127, bytes, 0, NULL)};
            mca_coll_loom_model_result_t r2, r1;
            const int alg = mca_coll_loom_alg_find(coll, "torus");
            int rc = mca_coll_loom_model_predict(alg, coll, &p, bytes, 8, &m, &o, NULL, &r2);
            p.torus = &t1;
            rc = MCA_COLL_LOOM_OK != rc ? rc : mca_coll_loom_model_predict(alg, coll, &p, bytes, 8, &m, &o, NULL, &r1);
            CHECK(MCA_COLL_LOOM_OK == rc && 1 == r2.max_link_load && 1 == r1.max_link_load &&
                      r1.time > 1.4 * r2.time && r2.time < 0.75 * D * bytes,
                  "8x4x4 but a node, %s: two chains %.3fx the bound (load %d), one %.3fx (load %d), rc %d",
                  mca_coll_loom_coll_name(coll), r2.time / (D * bytes), r2.max_link_load, r1.time / (D * bytes),
                  r1.max_link_load, rc);
            printf("test_torus: network model, 8x4x4 but a node, %s: two chains %.3fx the single-link bound, one "
                   "%.3fx\n", mca_coll_loom_coll_name(coll), r2.time / (D * bytes), r1.time / (D * bytes));
        }
    }

    /* torus vs binomial bcast on random subsets: torus never puts two flows on a link
     * and streams at about one link's rate; binomial (rank order, as tuned's tree)
     * does put two on a link in most subsets */
    static const char *shapes[] = {"4x4", "8x8x8"};
    static const int sizes[] = {8, 40};
    const int tor = mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_BCAST, "torus");
    const int bin = mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_BCAST, "binomial");
    for (int si = 0; si < 2; ++si) {
        mca_coll_loom_torus_t t = shape(shapes[si]);
        const long N = mca_coll_loom_torus_nodes(&t);
        const int nn = sizes[si], tries = 10;
        int *c = malloc(sizeof(int) * (size_t) nn * t.ndims), *no = malloc(sizeof(int) * (size_t) nn);
        char *taken = malloc((size_t) N);
        int worse = 0, two = 0;
        double worst = 0.0, worst2 = 0.0;
        for (int k = 0; k < tries && NULL != c && NULL != no && NULL != taken; ++k) {
            random_nodes(&t, nn, c, taken);
            for (int i = 0; i < nn; ++i) {
                no[i] = i;
            }
            const size_t bytes = 4 << 20;
            mca_coll_loom_params_t p = {.P = nn, .nodes = nn, .rpn = 1, .node_of = no, .torus = &t,
                                        .torus_coords = c, .call = MCA_COLL_LOOM_CALL_COMMUTATIVE,
                                        .root = (int) (xorshift() % (unsigned long long) nn),
                                        .segs = mca_coll_loom_alg_segs(tor, MCA_COLL_LOOM_COLL_BCAST, nn, bytes, 0,
                                                                       NULL)};
            mca_coll_loom_model_result_t rt, rb;
            int rc = mca_coll_loom_model_predict(tor, MCA_COLL_LOOM_COLL_BCAST, &p, bytes, 8, &m, &o, NULL, &rt);
            CHECK(MCA_COLL_LOOM_OK == rc && 1 == rt.max_link_load,
                  "%s, %d nodes: torus bcast has a link load of %d (rc %d)", shapes[si], nn, rt.max_link_load, rc);
            worst = rt.time / (D * bytes) > worst ? rt.time / (D * bytes) : worst;
            /* one tree (coll_loom_torus_trees 1): the data crosses one link per node */
            mca_coll_loom_torus_t t1 = t;
            mca_coll_loom_model_result_t r1;
            t1.max_trees = 1;
            p.torus = &t1;
            rc = mca_coll_loom_model_predict(tor, MCA_COLL_LOOM_COLL_BCAST, &p, bytes, 8, &m, &o, NULL, &r1);
            CHECK(MCA_COLL_LOOM_OK == rc && 1 == r1.max_link_load && r1.time >= D * bytes,
                  "%s, %d nodes: one torus tree: load %d, %.3fx the bound (rc %d)", shapes[si], nn, r1.max_link_load,
                  r1.time / (D * bytes), rc);
            if (r1.time > 1.4 * rt.time) {
                ++two;
                worst2 = rt.time / (D * bytes) > worst2 ? rt.time / (D * bytes) : worst2;
            }
            p.torus = &t;
            p.segs = 1;
            rc = mca_coll_loom_model_predict(bin, MCA_COLL_LOOM_COLL_BCAST, &p, bytes, 8, &m, &o, NULL, &rb);
            CHECK(MCA_COLL_LOOM_OK == rc && rb.time > rt.time, "%s: binomial (%g s) not slower than torus (%g s)",
                  shapes[si], rb.time, rt.time);
            worse += rb.max_link_load > 1;
        }
        /* a second tree (a second chain on more than MCA_COLL_LOOM_TORUS_TREE_MAX nodes)
         * where there is one nearly halves the time */
        CHECK(worst < 1.15 && worst2 < 0.75, "%s: torus bcast at %.2fx the single-link bound, %.2fx with two trees",
              shapes[si], worst, worst2);
        CHECK(two >= tries / 2, "%s: two trees 1.4x faster than one in %d of %d subsets", shapes[si], two, tries);
        CHECK(worse >= tries / 2, "%s: binomial has a link load above 1 in %d of %d subsets", shapes[si], worse,
              tries);
        printf("test_torus: network model, %s, %d random subsets of %d nodes: torus bcast load 1, at most "
               "%.3fx the single-link bound (two trees 1.4x faster than one in %d, at most %.3fx); binomial load > 1 "
               "in %d\n", shapes[si], tries, nn, worst, two, worst2, worse);
        free(c);
        free(no);
        free(taken);
    }
}

/* swing on tori: whole tori and sub-tori (a row or a plane: one coordinate fixed) in
 * shuffled rank order, one rank per node, verified; on tori of 4-rings every step's
 * messages cross one link each and no directed link carries two (the 2 D copies keep
 * all of a node's links busy at once), 2 log2 P rounds of 2 D sends.  Sets that are no
 * sub-torus (a node missing, a non-power-of-two ring) run in rank order: verified too. */
static void test_swing(void)
{
    static const char *shapes[] = {"2", "4", "16", "2x2", "4x4", "8x4", "4x2x2", "8x8", "6x4", "4x4x4", "2x8x4",
                                   "16x16", "8x8x8"};
    const int alg = mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_ALLREDUCE, "swing");
    int verified = 0, load_checked = 0;

    CHECK(alg >= 0, "swing serves allreduce");
    if (alg < 0) {
        return;
    }
    for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); ++si) {
        mca_coll_loom_torus_t t = shape(shapes[si]);
        const int N = (int) mca_coll_loom_torus_nodes(&t), nd = t.ndims;
        int *coords = malloc(sizeof(int) * (size_t) N * nd), *node_of = malloc(sizeof(int) * (size_t) N);
        int *src = malloc(sizeof(int) * (size_t) N * 2 * nd * nd), *dst = malloc(sizeof(int) * (size_t) N * 2 * nd * nd);
        mca_coll_loom_sched_t *s = calloc((size_t) N, sizeof(*s));
        bool fours = true;
        for (int d = 0; d < nd; ++d) {
            fours &= 4 == t.dims[d];
        }
        for (int kind = 0; kind < 3; ++kind) {
            /* 0: the whole torus, 1: the nodes with coordinate 0 fixed (nd > 1), 2: all but one */
            const int fix = 1 == kind ? (int) (xorshift() % (unsigned) t.dims[0]) : -1;
            const int gone = 2 == kind ? (int) (xorshift() % (unsigned) N) : -1;
            int nn = 0;
            if ((1 == kind && nd < 2) || (2 == kind && N > 64)) {
                continue;
            }
            for (int v = 0; v < N; ++v) {
                int c[MCA_COLL_LOOM_TORUS_MAX_DIMS];
                coords_of(&t, v, c);
                if ((fix < 0 || c[0] == fix) && v != gone) {
                    memcpy(coords + (size_t) nn++ * nd, c, sizeof(int) * (size_t) nd);
                }
            }
            for (int i = nn - 1; i > 0; --i) { /* rank order shuffled */
                const int j = (int) (xorshift() % (unsigned) (i + 1));
                for (int d = 0; d < nd; ++d) {
                    int x = coords[i * nd + d];
                    coords[i * nd + d] = coords[j * nd + d];
                    coords[j * nd + d] = x;
                }
            }
            for (int r = 0; r < nn; ++r) {
                node_of[r] = r;
            }
            mca_coll_loom_params_t p = {.P = nn, .nodes = nn, .rpn = 1, .node_of = node_of, .torus = &t,
                                        .torus_coords = coords, .call = MCA_COLL_LOOM_CALL_COMMUTATIVE,
                                        .coll = MCA_COLL_LOOM_COLL_ALLREDUCE};
            for (int ci = 0; ci < 2; ++ci) {
                const int coll = ci ? MCA_COLL_LOOM_COLL_ALLGATHER : MCA_COLL_LOOM_COLL_ALLREDUCE;
                p.coll = coll;
                for (int ip = 0; ip < 2; ++ip) {
                    char err[512] = "";
                    const int rc = mca_coll_loom_verify(alg, coll, &p, ip, NULL, err, sizeof(err));
                    CHECK(0 == rc, "swing %s on %s (%s, %d ranks)%s: %s", mca_coll_loom_coll_name(coll), shapes[si],
                          0 == kind ? "whole" : 1 == kind ? "a sub-torus" : "a node missing", nn,
                          ip ? ", in place" : "", err);
                    ++verified;
                }
            }
            if (0 != kind || !fours) {
                continue;
            }
            for (int ci = 0; ci < 2; ++ci) {
                const int coll = ci ? MCA_COLL_LOOM_COLL_ALLGATHER : MCA_COLL_LOOM_COLL_ALLREDUCE;
                p.coll = coll;
                /* the link loads, round by round */
                int steps = 0, rounds = -1;
                while ((1 << steps) < nn) {
                    ++steps;
                }
                for (int r = 0; r < nn; ++r) {
                    p.rank = r;
                    mca_coll_loom_sched_init(&s[r]);
                    CHECK(MCA_COLL_LOOM_OK == mca_coll_loom_alg_build(alg, &s[r], &p), "swing on %s: rank %d built",
                          shapes[si], r);
                    CHECK((ci ? 1 : 2) * steps == s[r].rounds, "swing %s on %s: rank %d has %d rounds, not %d",
                          mca_coll_loom_coll_name(coll), shapes[si], r, s[r].rounds, (ci ? 1 : 2) * steps);
                    rounds = s[r].rounds;
                }
                for (int k = 0; k < rounds; ++k) {
                    int n = 0;
                    long hops = 0;
                    for (int r = 0; r < nn; ++r) {
                        int round = 0, sends = 0;
                        for (int i = 0; i < s[r].nops && round <= k; ++i) {
                            const mca_coll_loom_op_t *op = &s[r].ops[i];
                            if (MCA_COLL_LOOM_OP_WAIT == op->kind) {
                                ++round;
                            } else if (MCA_COLL_LOOM_OP_SEND == op->kind && round == k) {
                                memcpy(src + (size_t) n * nd, coords + (size_t) r * nd, sizeof(int) * (size_t) nd);
                                memcpy(dst + (size_t) n++ * nd, coords + (size_t) op->peer * nd,
                                       sizeof(int) * (size_t) nd);
                                ++sends;
                            }
                        }
                        CHECK(2 * nd == sends, "swing on %s: rank %d sends %d messages in round %d, not %d",
                              shapes[si], r, sends, k, 2 * nd);
                    }
                    const int load = mca_coll_loom_torus_max_load(&t, n, src, dst, &hops);
                    CHECK(1 == load && hops == n, "swing %s on %s, round %d: %d messages, load %d, %ld hops",
                          mca_coll_loom_coll_name(coll), shapes[si], k, n, load, hops);
                    ++load_checked;
                }
                for (int r = 0; r < nn; ++r) {
                    mca_coll_loom_sched_fini(&s[r]);
                }
            }
        }
        free(coords);
        free(node_of);
        free(src);
        free(dst);
        free(s);
    }
    printf("test_torus: swing: %d schedule sets verified, %d rounds of link loads checked\n", verified, load_checked);
}

int main(void)
{
    test_parse();
    test_files();
    test_routes();
    test_chains_4x4();
    test_chains_random("3x3x3", 3000, 2, 27);
    test_chains_random("4x4x2", 3000, 2, 32);
    test_chains_random("8x8x8", 300, 6, 40);
    test_chains_random("16x16x16", 50, 6, 64);
    test_chains_structured("4x4", 8);
    test_chains_structured("4x2x2", 8);
    test_chains_structured("8x8x8", 3);
    test_chains_structured("16x16x16", 2);
    test_chains_structured("32x32x32", 1);
    test_chains_structured("6x5x3", 4);
    test_chains_structured("7x7x7", 2);
    test_trees();
    test_second_trees();
    test_second_chains();
    test_schedules();
    test_swing();
    test_decide();
    test_network();
    printf("test_torus: %d checks, %d failures\n", checks, failures);
    return 0 != failures;
}
