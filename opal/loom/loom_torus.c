/*
 * loom: the torus's geometry (loom_torus.h): node indices, the routing model and the
 * link loads of a set of messages.  Its text forms are in loom_torus_map.c, the
 * contention-free chains and trees in loom_torus_chains.c.
 */
#include "opal/loom/loom_torus.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

long mca_coll_loom_torus_nodes(const mca_coll_loom_torus_t *t)
{
    long n = 1;

    for (int d = 0; d < t->ndims; ++d) {
        if (n > LONG_MAX / 64 / t->dims[d]) {
            return 0;
        }
        n *= t->dims[d];
    }
    return n;
}

bool mca_coll_loom_torus_valid(const mca_coll_loom_torus_t *t, const int *c)
{
    for (int d = 0; d < t->ndims; ++d) {
        if (c[d] < 0 || c[d] >= t->dims[d]) {
            return false;
        }
    }
    return true;
}

long mca_coll_loom_torus_index(const mca_coll_loom_torus_t *t, const int *c)
{
    long i = 0;

    for (int d = 0; d < t->ndims; ++d) {
        i = i * t->dims[d] + c[d];
    }
    return i;
}

/* The step of a route in dimension d from a to b: direction (+1, -1, 0) and hops. */
static int step(const mca_coll_loom_torus_t *t, int d, int a, int b, int *hops)
{
    const int n = t->dims[d], fwd = ((b - a) % n + n) % n;

    if (0 == fwd) {
        *hops = 0;
        return 0;
    }
    if (t->mesh[d]) {
        *hops = b > a ? b - a : a - b;
        return b > a ? 1 : -1;
    }
    if (2 * fwd <= n) { /* shorter the + way, or a tie */
        *hops = fwd;
        return 1;
    }
    *hops = n - fwd;
    return -1;
}

int mca_coll_loom_torus_route(const mca_coll_loom_torus_t *t, const int *a, const int *b, long *links)
{
    int c[MCA_COLL_LOOM_TORUS_MAX_DIMS], total = 0;

    memcpy(c, a, sizeof(c[0]) * (size_t) t->ndims);
    for (int k = 0; k < t->ndims; ++k) {
        const int d = t->order[k];
        int hops;
        const int dir = step(t, d, a[d], b[d], &hops);
        for (int h = 0; h < hops; ++h) {
            if (NULL != links) {
                links[total] = mca_coll_loom_torus_index(t, c) * 2 * t->ndims + 2 * d + (dir < 0);
            }
            c[d] = ((c[d] + dir) % t->dims[d] + t->dims[d]) % t->dims[d];
            ++total;
        }
    }
    return total;
}

int mca_coll_loom_torus_max_hops(const mca_coll_loom_torus_t *t)
{
    int h = 0;

    for (int d = 0; d < t->ndims; ++d) {
        h += t->mesh[d] ? t->dims[d] - 1 : t->dims[d] / 2;
    }
    return h;
}

int mca_coll_loom_torus_max_load(const mca_coll_loom_torus_t *t, int n, const int *src, const int *dst,
                                 long *hops)
{
    const long nlinks = mca_coll_loom_torus_nodes(t) * 2 * t->ndims;
    int *load, max = 0;
    long *route, sum = 0;

    if (nlinks <= 0) {
        return -1;
    }
    load = calloc((size_t) nlinks, sizeof(int));
    route = malloc(sizeof(long) * (size_t) (mca_coll_loom_torus_max_hops(t) + 1));
    if (NULL == load || NULL == route) {
        free(load);
        free(route);
        return -1;
    }
    for (int i = 0; i < n; ++i) {
        const int h = mca_coll_loom_torus_route(t, src + i * t->ndims, dst + i * t->ndims, route);
        sum += h;
        for (int k = 0; k < h; ++k) {
            max = ++load[route[k]] > max ? load[route[k]] : max;
        }
    }
    if (NULL != hops) {
        *hops = sum;
    }
    free(load);
    free(route);
    return max;
}
