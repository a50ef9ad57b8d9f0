/*
 * loom: the two-level topology descriptor of a communicator, computed once from the
 * node each rank runs on.  MPI-agnostic: the component supplies one node key per rank.
 */
#ifndef MCA_COLL_LOOM_TOPO_H
#define MCA_COLL_LOOM_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int P;                 /* ranks */
    int nnodes;            /* distinct nodes */
    int *node_of;          /* [P] node index of each rank; nodes are numbered in order of
                              their lowest rank, so node 0 holds rank 0 */
    int *node_size;        /* [nnodes] ranks on each node */
    int *leader;           /* [nnodes] lowest rank of each node */
    int min_per_node, max_per_node;
    bool balanced;         /* every node holds the same number of ranks */
    bool node_consecutive; /* the ranks of each node form one contiguous range */
} mca_coll_loom_topo_t;

/* keys[i] identifies rank i's node (equal keys: same node).  Returns 0 or -1 (no memory). */
int mca_coll_loom_topo_build(mca_coll_loom_topo_t *t, int P, const unsigned long *keys);
void mca_coll_loom_topo_fini(mca_coll_loom_topo_t *t);

/* A hash of the partition (node_of is canonical: nodes numbered by their lowest rank),
 * so that ranks can check they derived the same one; never 0. */
uint64_t mca_coll_loom_topo_fingerprint(const mca_coll_loom_topo_t *t);

/* One-line summary, e.g. "P=8 nodes=4 ranks/node=2 balanced consecutive leaders=0,2,4,6". */
void mca_coll_loom_topo_describe(const mca_coll_loom_topo_t *t, char *buf, size_t len);

#endif /* MCA_COLL_LOOM_TOPO_H */
