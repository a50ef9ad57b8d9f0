/*
 * loom: two-level topology descriptor (node of each rank, leaders, shape).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/loom/loom_topo.h"

int mca_coll_loom_topo_build(mca_coll_loom_topo_t *t, int P, const unsigned long *keys)
{
    unsigned long *seen;

    memset(t, 0, sizeof(*t));
    t->P = P;
    t->node_of = malloc((size_t) P * sizeof(int));
    t->node_size = calloc((size_t) P, sizeof(int));
    t->leader = malloc((size_t) P * sizeof(int));
    seen = malloc((size_t) P * sizeof(unsigned long));
    if (NULL == t->node_of || NULL == t->node_size || NULL == t->leader || NULL == seen) {
        free(seen);
        mca_coll_loom_topo_fini(t);
        return -1;
    }
    /* Nodes are numbered by first appearance in rank order, so each node's leader
     * (its lowest rank) is the rank that introduced it.  Quadratic in the number of
     * nodes, once per communicator. */
    for (int r = 0; r < P; ++r) {
        int node = 0;
        while (node < t->nnodes && seen[node] != keys[r]) {
            node++;
        }
        if (node == t->nnodes) {
            seen[t->nnodes] = keys[r];
            t->leader[t->nnodes++] = r;
        }
        t->node_of[r] = node;
        t->node_size[node]++;
    }
    free(seen);

    t->min_per_node = P;
    t->max_per_node = 0;
    for (int node = 0; node < t->nnodes; ++node) {
        if (t->node_size[node] < t->min_per_node) {
            t->min_per_node = t->node_size[node];
        }
        if (t->node_size[node] > t->max_per_node) {
            t->max_per_node = t->node_size[node];
        }
    }
    t->balanced = t->min_per_node == t->max_per_node;
    t->node_consecutive = true;
    for (int r = 1; r < P; ++r) {
        /* consecutive iff a node's ranks are never interrupted: node ids only grow */
        if (t->node_of[r] != t->node_of[r - 1] && t->node_of[r] != t->node_of[r - 1] + 1) {
            t->node_consecutive = false;
        }
    }
    return 0;
}

uint64_t mca_coll_loom_topo_fingerprint(const mca_coll_loom_topo_t *t)
{
    /* 64-bit FNV-1a over P and node_of */
    uint64_t h = 0xcbf29ce484222325ULL;
    const int n = t->P;

    for (int i = -1; i < n; ++i) {
        const uint32_t v = (uint32_t) (i < 0 ? n : t->node_of[i]);
        for (int b = 0; b < 4; ++b) {
            h = (h ^ ((v >> (8 * b)) & 0xffu)) * 0x100000001b3ULL;
        }
    }
    return 0 == h ? 1 : h;
}

void mca_coll_loom_topo_fini(mca_coll_loom_topo_t *t)
{
    free(t->node_of);
    free(t->node_size);
    free(t->leader);
    memset(t, 0, sizeof(*t));
}

void mca_coll_loom_topo_describe(const mca_coll_loom_topo_t *t, char *buf, size_t len)
{
    size_t used;
    int shown = t->nnodes < 8 ? t->nnodes : 8;

    used = (size_t) snprintf(buf, len, "P=%d nodes=%d ranks/node=%d..%d %s %s leaders=", t->P,
                             t->nnodes, t->min_per_node, t->max_per_node,
                             t->balanced ? "balanced" : "unbalanced",
                             t->node_consecutive ? "node-consecutive" : "not-node-consecutive");
    for (int i = 0; i < shown && used < len; ++i) {
        used += (size_t) snprintf(buf + used, len - used, "%s%d", i ? "," : "", t->leader[i]);
    }
    if (shown < t->nnodes && used < len) {
        snprintf(buf + used, len - used, ",...");
    }
}
