/*
 * loom: contention-free chains and trees on the torus (loom_torus.h): the snakes and
 * the search for a chain whose routes share no directed link, and the fewest-links
 * tree of a small node set; each also beside the links of a first one.
 */
#include "opal/loom/loom_torus.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* contention-free chains                                                                */

/* Expansions a chain search may make before it gives up: it runs when a schedule is
 * built (once per root), and each expansion scans the remaining nodes, so this bounds
 * the worst case (no chain exists) to a fraction of a second at 64 nodes. */
#define LOOM_CHAIN_BUDGET 200000L
/* Up to this many nodes the search runs even when the snake found a chain, and the
 * chain crossing fewer links is kept. */
#define LOOM_CHAIN_BOTH_MAX 64

typedef struct {
    const mca_coll_loom_torus_t *t;
    int n, dir;       /* dir: the edges' directions that must be link-disjoint */
    const int *c;
    unsigned char *used;  /* per directed link */
    bool *visited;
    long *route;          /* scratch, 2 routes */
    long budget;
    int *alt;               /* the search's chain when the snake found one too */
} loom_chain_t;

/* Marks the links of the routes of edge i -> j that must be disjoint (i to j for dir
 * >= 0, j to i for dir <= 0) if none is used yet (then true), else leaves everything
 * as it was. */
static bool claim(loom_chain_t *s, int i, int j)
{
    const int nd = s->t->ndims, mh = mca_coll_loom_torus_max_hops(s->t);
    long *r1 = s->route, *r2 = s->route + mh;
    const int h1 = s->dir >= 0 ? mca_coll_loom_torus_route(s->t, s->c + i * nd, s->c + j * nd, r1) : 0;
    const int h2 = s->dir <= 0 ? mca_coll_loom_torus_route(s->t, s->c + j * nd, s->c + i * nd, r2) : 0;
    int k;

    for (k = 0; k < h1 && !s->used[r1[k]]; ++k) {
        s->used[r1[k]] = 1;
    }
    if (k == h1) {
        int q;
        for (q = 0; q < h2 && !s->used[r2[q]]; ++q) {
            s->used[r2[q]] = 1;
        }
        if (q == h2) {
            return true;
        }
        while (q-- > 0) {
            s->used[r2[q]] = 0;
        }
    }
    while (k-- > 0) {
        s->used[r1[k]] = 0;
    }
    return false;
}

static void release(loom_chain_t *s, int i, int j)
{
    const int nd = s->t->ndims;
    long *r = s->route;
    int h = s->dir >= 0 ? mca_coll_loom_torus_route(s->t, s->c + i * nd, s->c + j * nd, r) : 0;

    for (int k = 0; k < h; ++k) {
        s->used[r[k]] = 0;
    }
    h = s->dir <= 0 ? mca_coll_loom_torus_route(s->t, s->c + j * nd, s->c + i * nd, r) : 0;
    for (int k = 0; k < h; ++k) {
        s->used[r[k]] = 0;
    }
}

/* The unvisited node after (hops, index) key `after` in order of hops from u, then
 * index; -1 when none. */
static int next_candidate(const loom_chain_t *s, int u, long after)
{
    const int nd = s->t->ndims;
    long best = LONG_MAX;
    int who = -1;

    for (int v = 0; v < s->n; ++v) {
        if (s->visited[v]) {
            continue;
        }
        const long key = (long) mca_coll_loom_torus_route(s->t, s->c + u * nd, s->c + v * nd, NULL) * s->n + v;
        if (key > after && key < best) {
            best = key;
            who = v;
        }
    }
    return who;
}

/* Depth-first search for the rest of a chain whose first k nodes are order[0..k-1]. */
static int extend(loom_chain_t *s, int *order, int k)
{
    const int u = order[k - 1], nd = s->t->ndims;
    long after = -1;

    if (k == s->n) {
        return 0;
    }
    for (;;) {
        const int v = next_candidate(s, u, after);
        if (v < 0 || --s->budget < 0) {
            return 1;
        }
        after = (long) mca_coll_loom_torus_route(s->t, s->c + u * nd, s->c + v * nd, NULL) * s->n + v;
        if (!claim(s, u, v)) {
            continue;
        }
        s->visited[v] = true;
        order[k] = v;
        if (0 == extend(s, order, k + 1)) {
            return 0;
        }
        s->visited[v] = false;
        release(s, u, v);
    }
}

/* nearest-neighbour chain from `first`, whatever the links (the fallback) */
static void greedy(loom_chain_t *s, int first, int *order)
{
    memset(s->visited, 0, sizeof(bool) * (size_t) s->n);
    order[0] = first;
    s->visited[first] = true;
    for (int k = 1; k < s->n; ++k) {
        order[k] = next_candidate(s, order[k - 1], -1);
        s->visited[order[k]] = true;
    }
}

/* The snake (Mittal et al.'s full box with a missing node, and its missing planes): the
 * torus traversed boustrophedon, the first routed dimension fastest, each line and
 * each plane in turn the other way (a reflected mixed-radix Gray code, so consecutive
 * positions are neighbours).  Where the slowest dimension has an even size the last
 * position neighbours the first over its wrap-around link: a cycle, so a chain can
 * start at any root.  Restricted to the communicator's nodes, an edge that skips
 * missing nodes or planes crosses them along the snake's own links (the pseudo-node
 * and Z bypasses of the seed); whether the routes stay disjoint is checked, not
 * assumed. */

/* The snake position of coordinates x, dimensions seq[0] (fastest) to seq[nd-1], the
 * fastest one rotated by rot (its lines start at rot; on a ring the rotated snake is
 * the same traversal moved along the ring's wrap-around link). */
static long snake_pos(const mca_coll_loom_torus_t *t, const int *seq, const int *x, int rot)
{
    long r = 0, M = 1;
    for (int j = 0; j < t->ndims; ++j) {
        const int d = seq[j], k = t->dims[d], xd = 0 == j ? (x[d] - rot + k) % k : x[d];
        r = (long) xd * M + ((xd & 1) ? M - 1 - r : r);
        M *= k;
    }
    return r;
}

typedef struct {
    long pos;
    int node;
} snake_item_t;

static int cmp_snake(const void *a, const void *b)
{
    const long p = ((const snake_item_t *) a)->pos, q = ((const snake_item_t *) b)->pos;
    return p < q ? -1 : p > q;
}

/* The route of chain edge e (order[e] to order[e + 1]; w = 1: the way back). */
static int edge_route(const mca_coll_loom_torus_t *t, const int *c, const int *order, int e, int w, long *route)
{
    const int nd = t->ndims;
    const int *a = c + (size_t) order[w ? e + 1 : e] * nd, *b = c + (size_t) order[w ? e : e + 1] * nd;
    return mca_coll_loom_torus_route(t, a, b, route);
}

/* Whether the chain's edges (in direction dir, as mca_coll_loom_torus_chain) use every
 * directed link at most once; used[] is all zero on entry and on return. */
static bool chain_disjoint(const mca_coll_loom_torus_t *t, int n, const int *c, int dir, const int *order,
                           unsigned char *used, long *route)
{
    const int w0 = dir < 0 ? 1 : 0, w1 = dir > 0 ? 0 : 1; /* 0: edge i -> i+1, 1: i+1 -> i */
    bool ok = true;
    int e, w, h;

    for (e = 0; e < n - 1 && ok; ++e) {
        for (w = w0; w <= w1 && ok; ++w) {
            h = edge_route(t, c, order, e, w, route);
            for (int k = 0; k < h; ++k) {
                ok = ok && !used[route[k]];
                used[route[k]] = 1;
            }
        }
    }
    /* clear the marks of the edges seen (all of the last one's, whatever it marked) */
    for (int f = 0; f < e; ++f) {
        for (w = w0; w <= w1; ++w) {
            h = edge_route(t, c, order, f, w, route);
            for (int k = 0; k < h; ++k) {
                used[route[k]] = 0;
            }
        }
    }
    return ok;
}

/* Links crossed by the chain's edges in direction dir. */
static long chain_hops(const mca_coll_loom_torus_t *t, int n, const int *c, int dir, const int *order, long *route)
{
    long h = 0;
    for (int e = 0; e + 1 < n; ++e) {
        for (int w = dir < 0 ? 1 : 0; w <= (dir > 0 ? 0 : 1); ++w) {
            h += edge_route(t, c, order, e, w, route);
        }
    }
    return h;
}

/* Marks (v 1) or clears (v 0) the links l[0..m-1] in used[]. */
static void mark(unsigned char *used, const long *l, int m, unsigned char v)
{
    for (int i = 0; i < m; ++i) {
        used[l[i]] = v;
    }
}

/* Marks (v 1) or clears (v 0) the links of a chain's edges in direction dir. */
static void mark_chain(const mca_coll_loom_torus_t *t, int n, const int *c, int dir, const int *order,
                       unsigned char *used, long *route, unsigned char v)
{
    for (int e = 0; e + 1 < n; ++e) {
        for (int w = dir < 0 ? 1 : 0; w <= (dir > 0 ? 0 : 1); ++w) {
            mark(used, route, edge_route(t, c, order, e, w, route), v);
        }
    }
}

/* Snake variant v: the ordering of the dimensions shifted by v / 2 % nd, its fastest
 * dimension rotated by half its size from v / 2 >= nd on, from the first node one way
 * round or the other (v % 2): from position at[v / 2] of the sorted it[v / 2 * n ..]. */
static void snake_variant(int n, const snake_item_t *it, const int *at, int v, int *order)
{
    const snake_item_t *s = it + (size_t) (v / 2) * n;
    const long way = 0 == v % 2 ? 1 : -1;
    for (int i = 0; i < n; ++i) {
        order[i] = s[(at[v / 2] + way * i + (long) n * 2) % n].node;
    }
}

/* The snake from `first` whose edges cross none of the navoid links avoid[] (as a chain,
 * in direction dir); 0 when there is one (in order), 1 when not, -1 without memory.
 * paired: of the snakes that qualify, one beside which another one is contention-free
 * too where there is such a pair (a second chain then finds it: the snake run the other
 * way round uses the first one's links reversed, except where the first bypasses a
 * missing node at a turn of the snake; a rotated snake puts that node inside a line);
 * asked for above LOOM_CHAIN_BOTH_MAX nodes, where a second chain is a snake or none.
 * used[] is all zero on entry and on return. */
static int snake(const mca_coll_loom_torus_t *t, int n, const int *c, int first, int dir, const long *avoid,
                 int navoid, bool paired, int *order, unsigned char *used, long *route)
{
    const int nd = t->ndims, nv = 4 * nd;
    snake_item_t *it = malloc(sizeof(*it) * (size_t) n * (size_t) (2 * nd));
    int *alt = paired ? malloc(sizeof(int) * (size_t) n) : NULL, rc = 1, chosen = -1;
    int at[2 * MCA_COLL_LOOM_TORUS_MAX_DIMS], seq[MCA_COLL_LOOM_TORUS_MAX_DIMS];
    bool sorted[2 * MCA_COLL_LOOM_TORUS_MAX_DIMS];

    if (NULL == it || (paired && NULL == alt)) {
        free(it);
        free(alt);
        return -1;
    }
    /* the first routed dimension fastest, then each of the others in turn; rotated
     * only where the fastest dimension is a ring of 3 or more */
    for (int sr = 0; sr < 2 * nd; ++sr) {
        snake_item_t *sh = it + (size_t) sr * n;
        for (int j = 0; j < nd; ++j) {
            seq[j] = t->order[(j + sr % nd) % nd];
        }
        const int k = t->dims[seq[0]], rot = sr >= nd ? k / 2 : 0;
        sorted[sr] = 0 == rot || (!t->mesh[seq[0]] && k >= 3);
        for (int i = 0; i < n && sorted[sr]; ++i) {
            sh[i] = (snake_item_t) {.pos = snake_pos(t, seq, c + (size_t) i * nd, rot), .node = i};
        }
        if (sorted[sr]) {
            qsort(sh, (size_t) n, sizeof(*sh), cmp_snake);
            for (at[sr] = 0; sh[at[sr]].node != first; ++at[sr]) {
            }
        }
    }
    for (int v = 0; v < nv; ++v) {
        if (!sorted[v / 2]) continue;
        snake_variant(n, it, at, v, order);
        mark(used, avoid, navoid, 1);
        const bool ok = chain_disjoint(t, n, c, dir, order, used, route);
        mark(used, avoid, navoid, 0);
        if (!ok) {
            continue;
        }
        chosen = chosen < 0 ? v : chosen;
        bool partner = false;
        for (int v2 = 0; v2 < nv && paired && !partner; ++v2) {
            if (v2 == v || !sorted[v2 / 2]) continue;
            snake_variant(n, it, at, v2, alt);
            mark_chain(t, n, c, dir, order, used, route, 1);
            partner = chain_disjoint(t, n, c, dir, alt, used, route);
            mark_chain(t, n, c, dir, order, used, route, 0);
        }
        if (!paired || partner) {
            chosen = v;
            break;
        }
    }
    if (chosen >= 0) {
        snake_variant(n, it, at, chosen, order);
        rc = 0;
    }
    free(it);
    free(alt);
    return rc;
}

/* Whether each node keeps a link a second tree's edge in direction dir can use, beside
 * the links marked in taken[]: one into it and (dir <= 0) one out of it, the other way
 * round at the root.  A necessary condition, cheap beside a search that finds nothing. */
static bool room_left(const mca_coll_loom_torus_t *t, int n, const int *c, int root, int dir,
                      const unsigned char *taken)
{
    const int nd = t->ndims;

    for (int v = 0; v < n; ++v) {
        /* true once a free link is seen, or when none is needed */
        bool in = v == root ? dir > 0 : dir < 0, out = v == root ? dir < 0 : dir > 0;
        int x[MCA_COLL_LOOM_TORUS_MAX_DIMS];
        memcpy(x, c + (size_t) v * nd, sizeof(int) * (size_t) nd);
        const long self = mca_coll_loom_torus_index(t, x);
        for (int d = 0; d < nd && !(in && out); ++d) {
            const int k = t->dims[d], xd = x[d];
            for (int w = 0; w < 2 && k > 1; ++w) { /* w 0: the + links, 1: the - links */
                const bool edge = t->mesh[d] && (0 == w ? xd == k - 1 : 0 == xd);
                const bool edge_in = t->mesh[d] && (0 == w ? 0 == xd : xd == k - 1);
                out = out || (!edge && !taken[self * 2 * nd + 2 * d + w]);
                if (!edge_in) {
                    x[d] = ((xd + (0 == w ? -1 : 1)) % k + k) % k; /* the neighbour sending this way */
                    in = in || !taken[mca_coll_loom_torus_index(t, x) * 2 * nd + 2 * d + w];
                    x[d] = xd;
                }
            }
        }
        if (!in || !out) {
            return false;
        }
    }
    return true;
}

/* room_left beside the navoid links avoid[]: 1 when there is room, 0 when not, -1 on
 * a link number outside t or no memory. */
static int room_beside(const mca_coll_loom_torus_t *t, int n, const int *c, int root, int dir, const long *avoid,
                       int navoid)
{
    const long nlinks = mca_coll_loom_torus_nodes(t) * 2 * t->ndims;
    unsigned char *taken = nlinks > 0 ? calloc((size_t) nlinks, 1) : NULL;
    int rc;

    if (NULL == taken) {
        return -1;
    }
    for (int i = 0; i < navoid; ++i) {
        if (avoid[i] < 0 || avoid[i] >= nlinks) {
            free(taken);
            return -1;
        }
    }
    mark(taken, avoid, navoid, 1);
    rc = room_left(t, n, c, root, dir, taken) ? 1 : 0;
    free(taken);
    return rc;
}

/* A second chain, beside links another takes, is searched with this share of the
 * budget (it runs on every schedule build that has a first one). */
#define LOOM_CHAIN_SECOND_BUDGET (LOOM_CHAIN_BUDGET / 8)

/* mca_coll_loom_torus_chain, with the navoid links avoid[] taken from the start; with
 * links to avoid (a second chain), the search runs on up to LOOM_CHAIN_BOTH_MAX nodes
 * only and there is no fallback. */
static int chain_find(const mca_coll_loom_torus_t *t, int n, const int *c, int first, int dir, const long *avoid,
                      int navoid, int *order)
{
    const long nlinks = mca_coll_loom_torus_nodes(t) * 2 * t->ndims;
    const bool second = navoid > 0;
    loom_chain_t s = {.t = t, .n = n, .dir = dir, .c = c, .budget = LOOM_CHAIN_BUDGET};
    int rc = 1;

    if (n < 1 || nlinks <= 0 || first >= n || navoid < 0 || (second && (NULL == avoid || first < 0))) {
        return -1;
    }
    for (int i = 0; i < n; ++i) {
        if (!mca_coll_loom_torus_valid(t, c + i * t->ndims)) {
            return -1;
        }
    }
    if (second && 1 != (rc = room_beside(t, n, c, first, dir, avoid, navoid))) {
        return rc < 0 ? -1 : 1;
    }
    s.used = calloc((size_t) nlinks, 1);
    s.visited = calloc((size_t) n, sizeof(bool));
    s.route = malloc(sizeof(long) * (size_t) (2 * mca_coll_loom_torus_max_hops(t) + 2));
    if (NULL == s.used || NULL == s.visited || NULL == s.route) {
        rc = -1;
        goto out;
    }
    /* the snake first (a structured node set: O(n log n)), then the search; on small
     * sets both, keeping the chain that crosses fewer links (less in the way of other
     * communicators' traffic) */
    const bool paired = !second && 0 != dir && n > LOOM_CHAIN_BOTH_MAX;
    rc = snake(t, n, c, first >= 0 ? first : 0, dir, avoid, navoid, paired, order, s.used, s.route);
    if (rc < 0 || (second && n > LOOM_CHAIN_BOTH_MAX)) {
        goto out;
    }
    if (0 == rc && n <= LOOM_CHAIN_BOTH_MAX) {
        s.alt = malloc(sizeof(int) * (size_t) n);
        if (NULL == s.alt) {
            rc = -1;
            goto out;
        }
    }
    /* the given first node, or every node in turn, each with a share of the budget */
    int *dfs = NULL != s.alt ? s.alt : order, found = 1;
    for (int f = first >= 0 ? first : 0; f < (first >= 0 ? first + 1 : n) && 0 != found && (0 != rc || NULL != s.alt);
         ++f) {
        s.budget = second ? LOOM_CHAIN_SECOND_BUDGET : first >= 0 ? LOOM_CHAIN_BUDGET : LOOM_CHAIN_BUDGET / n + 1;
        memset(s.used, 0, (size_t) nlinks);
        mark(s.used, avoid, navoid, 1);
        memset(s.visited, 0, sizeof(bool) * (size_t) n);
        dfs[0] = f;
        s.visited[f] = true;
        found = extend(&s, dfs, 1);
    }
    memset(s.used, 0, (size_t) nlinks);
    if (NULL != s.alt) {
        if (0 == found && chain_hops(t, n, c, dir, s.alt, s.route) < chain_hops(t, n, c, dir, order, s.route)) {
            memcpy(order, s.alt, sizeof(int) * (size_t) n);
        }
    } else if (0 != rc) {
        rc = found;
        if (0 != rc && !second) {
            greedy(&s, first >= 0 ? first : 0, order);
        }
    }

out:
    free(s.used);
    free(s.visited);
    free(s.route);
    free(s.alt);
    return rc;
}

int mca_coll_loom_torus_chain(const mca_coll_loom_torus_t *t, int n, const int *c, int first, int dir,
                              int *order)
{
    return chain_find(t, n, c, first, dir, NULL, 0, order);
}

int mca_coll_loom_torus_chain_avoiding(const mca_coll_loom_torus_t *t, int n, const int *c, int first, int dir,
                                       const long *avoid, int navoid, int *order)
{
    return chain_find(t, n, c, first, dir, avoid, navoid, order);
}

/* ------------------------------------------------------------------------------------ */
/* the fewest-links contention-free tree (small node sets)                               */

/* Expansions of the tree search: at 10 nodes it usually finishes far below this, and
 * where it does not, the best tree so far is kept. */
#define LOOM_TREE_BUDGET 100000L

typedef struct {
    int n;
    const long *links;  /* [u n + v]: the links of edge u -> v (both directions as dir asks) */
    const int *nlinks;  /* [u n + v] */
    const int *cand;    /* [v n ..]: the parents to try for v, fewest links first */
    const int *seq;     /* the non-root nodes in the order their parents are chosen */
    const int *rest;    /* [k]: the fewest links the nodes seq[k..] can still cost */
    int maxl;           /* links of one edge at most */
    long *used;         /* the links taken, nused of them */
    int nused;
    int *par, *kids, *best;
    long cost, best_cost, budget;
    int best_fan;
} loom_tree_t;

static bool tree_free(const loom_tree_t *s, const long *l, int m)
{
    for (int i = 0; i < m; ++i) {
        for (int j = 0; j < s->nused; ++j) {
            if (s->used[j] == l[i]) {
                return false;
            }
        }
    }
    return true;
}

/* Whether u reaches v by parents already chosen (v -> u would close a cycle). */
static bool tree_reaches(const loom_tree_t *s, int u, int v)
{
    for (int hops = 0; u >= 0 && hops <= s->n; u = s->par[u], ++hops) {
        if (u == v) {
            return true;
        }
    }
    return false;
}

static void tree_search(loom_tree_t *s, int k, int fan)
{
    if (k == s->n - 1) {
        if (s->cost < s->best_cost || (s->cost == s->best_cost && fan < s->best_fan)) {
            s->best_cost = s->cost;
            s->best_fan = fan;
            memcpy(s->best, s->par, sizeof(int) * (size_t) s->n);
        }
        return;
    }
    const int v = s->seq[k];
    for (int i = 0; i < s->n - 1 && s->budget > 0; ++i) {
        const int u = s->cand[v * s->n + i], e = u * s->n + v, m = s->nlinks[e];
        const long lb = s->cost + m + s->rest[k + 1];
        const int f = s->kids[u] + 1 > fan ? s->kids[u] + 1 : fan;
        if (lb > s->best_cost) {
            break; /* the candidates only get longer */
        }
        --s->budget;
        if ((lb == s->best_cost && f >= s->best_fan) || tree_reaches(s, u, v) ||
            !tree_free(s, s->links + (size_t) e * s->maxl, m)) {
            continue;
        }
        memcpy(s->used + s->nused, s->links + (size_t) e * s->maxl, sizeof(long) * (size_t) m);
        s->nused += m;
        s->cost += m;
        s->par[v] = u;
        ++s->kids[u];
        tree_search(s, k + 1, f);
        --s->kids[u];
        s->par[v] = -2;
        s->cost -= m;
        s->nused -= m;
    }
}

/* Sorts a[0..m-1] by key[a[i]] (m small). */
static void sort_by(int *a, int m, const int *key)
{
    for (int i = 1; i < m; ++i) {
        const int x = a[i];
        int j = i;
        for (; j > 0 && key[a[j - 1]] > key[x]; --j) {
            a[j] = a[j - 1];
        }
        a[j] = x;
    }
}

int mca_coll_loom_torus_tree(const mca_coll_loom_torus_t *t, int n, const int *c, int root, int dir,
                             int *parent)
{
    return mca_coll_loom_torus_tree_avoiding(t, n, c, root, dir, NULL, 0, parent);
}

int mca_coll_loom_torus_tree_avoiding(const mca_coll_loom_torus_t *t, int n, const int *c, int root, int dir,
                                      const long *avoid, int navoid, int *parent)
{
    const int nd = t->ndims, maxh = mca_coll_loom_torus_max_hops(t), maxl = 2 * maxh;
    loom_tree_t s = {.n = n, .maxl = maxl, .budget = LOOM_TREE_BUDGET, .best_cost = LONG_MAX, .best_fan = n};
    long *links = NULL;
    int *nlinks = NULL, *cand = NULL, *seq = NULL, *rest = NULL, *ints = NULL, rc = -1;

    if (n < 1 || n > MCA_COLL_LOOM_TORUS_TREE_MAX || root < 0 || root >= n || navoid < 0 ||
        (navoid > 0 && NULL == avoid)) {
        return -1;
    }
    for (int i = 0; i < n; ++i) {
        if (!mca_coll_loom_torus_valid(t, c + i * nd)) {
            return -1;
        }
    }
    if (navoid > 0 && 1 != (rc = room_beside(t, n, c, root, dir, avoid, navoid))) {
        return rc < 0 ? -1 : 1;
    }
    rc = -1;
    links = malloc(sizeof(long) * ((size_t) n * n * maxl + (size_t) n * maxl + (size_t) navoid + 1));
    ints = malloc(sizeof(int) * (size_t) (n * n * 2 + n * 6 + 1));
    if (NULL == links || NULL == ints) {
        goto out;
    }
    nlinks = ints;
    cand = nlinks + n * n;
    seq = cand + n * n;
    rest = seq + n;
    s.par = rest + n + 1;
    s.kids = s.par + n;
    s.best = s.kids + n;
    s.used = links + (size_t) n * n * maxl;
    /* every edge's links: u -> v for dir >= 0, v -> u for dir <= 0 */
    for (int u = 0; u < n; ++u) {
        for (int v = 0; v < n; ++v) {
            long *l = links + (size_t) (u * n + v) * maxl;
            int m = 0;
            if (dir >= 0 && u != v) {
                m += mca_coll_loom_torus_route(t, c + u * nd, c + v * nd, l + m);
            }
            if (dir <= 0 && u != v) {
                m += mca_coll_loom_torus_route(t, c + v * nd, c + u * nd, l + m);
            }
            nlinks[u * n + v] = m;
        }
    }
    /* parents to try, nearest first; the nodes in order of their distance from the
     * root, so that the first trees found are short and prune the rest */
    int *key = s.kids; /* scratch until the search */
    for (int v = 0; v < n; ++v) {
        int m = 0;
        for (int u = 0; u < n; ++u) {
            key[u] = nlinks[u * n + v];
            if (u != v) {
                cand[v * n + m++] = u;
            }
        }
        sort_by(cand + v * n, m, key);
    }
    for (int v = 0, m = 0; v < n; ++v) {
        key[v] = nlinks[root * n + v];
        if (v != root) {
            seq[m++] = v;
        }
    }
    sort_by(seq, n - 1, key);
    rest[n - 1] = 0;
    for (int k = n - 2; k >= 0; --k) {
        rest[k] = rest[k + 1] + (n > 1 ? nlinks[cand[seq[k] * n] * n + seq[k]] : 0);
    }
    for (int v = 0; v < n; ++v) {
        s.par[v] = v == root ? -1 : -2;
        s.kids[v] = 0;
    }
    /* the links to avoid count as taken from the start */
    if (navoid > 0) {
        memcpy(s.used, avoid, sizeof(long) * (size_t) navoid);
    }
    s.nused = navoid;
    s.links = links;
    s.nlinks = nlinks;
    s.cand = cand;
    s.seq = seq;
    s.rest = rest;
    tree_search(&s, 0, 0);
    if (LONG_MAX == s.best_cost) {
        rc = 1;
    } else {
        memcpy(parent, s.best, sizeof(int) * (size_t) n);
        rc = 0;
    }

out:
    free(links);
    free(ints);
    return rc;
}
