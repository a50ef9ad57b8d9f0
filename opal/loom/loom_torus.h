/*
 * loom: the torus a communicator's nodes sit on (Mittal et al.), its routing model and the
 * link contention of a set of messages.  MPI-agnostic: the component supplies the
 * shape and each node's coordinates.
 *
 * Routing model: dimension-ordered, in the order `order` (order[0] first), the shorter
 * way around each ring, a tie (exactly half the ring) the + way; a dimension marked
 * mesh has no wrap-around link, so it is crossed the direct way.  Every statement
 * about contention in loom is under this model.
 *
 * A directed link is named by the node it leaves, its dimension and its direction:
 * link = node * 2 ndims + 2 dim + (0 for +, 1 for -), node the row-major index of the
 * coordinates (dimension 0 varies slowest).
 */
#ifndef MCA_COLL_LOOM_TORUS_H
#define MCA_COLL_LOOM_TORUS_H

#include <stdbool.h>
#include <stddef.h>

#define MCA_COLL_LOOM_TORUS_MAX_DIMS 6

typedef struct mca_coll_loom_torus_t {
    int ndims;
    int dims[MCA_COLL_LOOM_TORUS_MAX_DIMS];
    bool mesh[MCA_COLL_LOOM_TORUS_MAX_DIMS]; /* no wrap-around link in this dimension */
    int order[MCA_COLL_LOOM_TORUS_MAX_DIMS]; /* routing order: dimension order[0] first */
    int max_trees; /* trees a `torus` schedule may spread its segments over: 0 (automatic)
                      or 2, a second one on links the first leaves free where there is one;
                      1, one tree */
} mca_coll_loom_torus_t;

/* Parses a shape: 1 to 6 sizes of at least 1, separated by 'x', ',' or blanks, each
 * optionally followed by ":mesh" ("4x4x2", "4 4 2:mesh").  The routing order is the
 * dimensions in turn.  Returns 0, or -1 with a reason in err. */
int mca_coll_loom_torus_parse_dims(mca_coll_loom_torus_t *t, const char *text, char *err, size_t errlen);

/* Parses a routing order for t: a permutation of its dimensions by letter (x y z u v
 * w) or by number from 0 ("zyx", "2,1,0").  Returns 0, or -1 with a reason in err. */
int mca_coll_loom_torus_parse_order(mca_coll_loom_torus_t *t, const char *text, char *err, size_t errlen);

/* A torus map file (coll_loom_torus_file): a line "dims <shape>" (the syntax of
 * mca_coll_loom_torus_parse_dims), then one line "<hostname> <c0> <c1> ..." per node,
 * as many coordinates as dimensions; '#' starts a comment, blank lines are skipped.
 * Reads it into *t and (*hosts)[0..*nhosts-1].  Returns 0, or -1 with "path:line:
 * reason" in err (a missing or unreadable file, a line before "dims", a bad shape,
 * a wrong number of coordinates, a coordinate outside the shape, a host named twice,
 * two hosts on one coordinate). */
typedef struct {
    char *host;
    int c[MCA_COLL_LOOM_TORUS_MAX_DIMS];
} mca_coll_loom_torus_host_t;

int mca_coll_loom_torus_read_file(const char *path, mca_coll_loom_torus_t *t, mca_coll_loom_torus_host_t **hosts,
                                  int *nhosts, char *err, size_t errlen);
void mca_coll_loom_torus_free_hosts(mca_coll_loom_torus_host_t *hosts, int nhosts);

/* Parses "c0,c1,..." (LOOM_TORUS_COORDS) or Slurm's "torus:c0:c1:...[.<node>]"
 * (SLURM_TOPOLOGY_ADDR) into c; returns the number of coordinates, -1 when the text
 * has neither form. */
int mca_coll_loom_torus_parse_coords(const char *text, int *c);

/* Nodes of the torus (0 when it is too large to count in a long). */
long mca_coll_loom_torus_nodes(const mca_coll_loom_torus_t *t);

/* Whether c holds valid coordinates of t, and their node index. */
bool mca_coll_loom_torus_valid(const mca_coll_loom_torus_t *t, const int *c);
long mca_coll_loom_torus_index(const mca_coll_loom_torus_t *t, const int *c);

/* Directed links per node, and in the whole torus. */
static inline int mca_coll_loom_torus_links_per_node(const mca_coll_loom_torus_t *t)
{
    return 2 * t->ndims;
}

/* The route from a to b under the model: its hops (at most the sum of dims / 2, or of
 * dims - 1 over mesh dimensions); when links is not NULL, the directed links in order. */
int mca_coll_loom_torus_route(const mca_coll_loom_torus_t *t, const int *a, const int *b, long *links);

/* The longest route in t (the size `links` of mca_coll_loom_torus_route must have). */
int mca_coll_loom_torus_max_hops(const mca_coll_loom_torus_t *t);

/* Link loads of n messages at once, message i from coordinates src + i ndims to dst
 * + i ndims: the largest number of messages on one directed link (0 when none
 * crosses a link), and, when hops is not NULL, the sum of their hops.  -1 when
 * memory ran out. */
int mca_coll_loom_torus_max_load(const mca_coll_loom_torus_t *t, int n, const int *src, const int *dst,
                                 long *hops);

/* A chain through n nodes (coordinates c + i ndims, distinct) whose edges' routes use
 * every directed link at most once: dir > 0 the routes from each node to the next (a
 * bcast pipelined from order[0]), dir < 0 from each node to the one before (a reduce
 * towards order[0]), dir 0 both at once (an allreduce whose reduce and bcast overlap,
 * from any node of the chain).  first >= 0: the chain starts there; -1: anywhere.
 * order[] receives the nodes' indices in chain order.  Returns 0; 1 when the search
 * found no such chain (a depth-first search, nearest nodes first, exhaustive below its
 * budget of expansions; order then holds the nearest-neighbour chain); -1 on bad input
 * or no memory.  Both directions at once is not always possible: 480 of the 65519
 * subsets of 2 or more nodes of a 4 x 4 torus (4 to 6 nodes each) have no such chain. */
int mca_coll_loom_torus_chain(const mca_coll_loom_torus_t *t, int n, const int *c, int first, int dir,
                              int *order);
/* The same from node `first` (>= 0), with none of its edges' routes on the navoid > 0
 * directed links avoid[]: the second chain of a two-tree torus schedule on sets too
 * large for a tree.  The snakes are tried, and on up to 64 nodes a search with a
 * smaller budget; 1 (no fallback chain) when neither finds one, or at once when some
 * node has no link left for its edge. */
int mca_coll_loom_torus_chain_avoiding(const mca_coll_loom_torus_t *t, int n, const int *c, int first, int dir,
                                       const long *avoid, int navoid, int *order);

/* A spanning tree over n <= MCA_COLL_LOOM_TORUS_TREE_MAX nodes (coordinates c + i ndims,
 * distinct), rooted at node `root`, whose edges' routes use every directed link at most
 * once (dir as for a chain: > 0 parent to child, a pipelined bcast; < 0 child to
 * parent, a reduce; 0 both), crossing the fewest links, and among those the one whose
 * busiest node has the fewest children: a branch and bound over the trees (a chain is
 * one of them), which keeps the best tree found when its budget runs out.  parent[]
 * receives each node's parent, -1 at the root.  Returns 0; 1 when no such tree was
 * found; -1 on bad input or no memory.  Fewer links crossed leave more of the torus to
 * other communicators' traffic: the two to four disjoint random communicators of a 4 x
 * 4 torus share fewer links than with chains (docs/dev/model.md). */
#define MCA_COLL_LOOM_TORUS_TREE_MAX 10
int mca_coll_loom_torus_tree(const mca_coll_loom_torus_t *t, int n, const int *c, int root, int dir,
                             int *parent);
/* The same, with none of its edges' routes on the navoid directed links avoid[] (link
 * numbers as mca_coll_loom_torus_route gives them): the second tree of a two-tree
 * torus schedule, on links the first leaves free. */
int mca_coll_loom_torus_tree_avoiding(const mca_coll_loom_torus_t *t, int n, const int *c, int root, int dir,
                                      const long *avoid, int navoid, int *parent);

#endif /* MCA_COLL_LOOM_TORUS_H */
