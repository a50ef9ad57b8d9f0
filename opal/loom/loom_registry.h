/*
 * loom: the algorithm registry.  Every algorithm is declared exactly once here, with
 * the collectives it serves, the restrictions it places on a call, its knob, and the
 * function that builds its schedule.  Selection (loom_decide.h), forcing by MCA
 * parameter, the symbolic tests and the executor all refer to algorithms through
 * this table, by index or by name.
 */
#ifndef MCA_COLL_LOOM_REGISTRY_H
#define MCA_COLL_LOOM_REGISTRY_H

#include "opal/loom/loom_sched.h"

/* The collectives loom serves, declared once: X(ID, name, arg) each, in the order of
 * their enum values.  The enum and the names below, the component's lists of module
 * slots (coll_loom.h: coll_<name>, coll_i<name>, coll_<name>_init), its MPI_T counters
 * (coll_loom_<name>_<alg>_calls, coll_loom_i<name>_...) and the tests' table
 * (test/mpi/loom_test_util.h) all come from this list.  `arg` is passed through for
 * lists that need a second macro (coll_loom.h). */
#define MCA_COLL_LOOM_COLLECTIVES(X, arg)                                                     \
    X(ALLREDUCE, allreduce, arg) X(BARRIER, barrier, arg) X(BCAST, bcast, arg)              \
    X(REDUCE, reduce, arg) X(ALLGATHER, allgather, arg) X(REDUCE_SCATTER, reduce_scatter, arg) \
    X(REDUCE_SCATTER_BLOCK, reduce_scatter_block, arg) X(SCAN, scan, arg) X(EXSCAN, exscan, arg) \
    X(ALLTOALL, alltoall, arg) X(ALLTOALLV, alltoallv, arg)

/* Collectives (bit positions, so an algorithm can serve several). */
#define MCA_COLL_LOOM_COLL_ENUM_(ID, name, arg) MCA_COLL_LOOM_COLL_##ID,
typedef enum {
    MCA_COLL_LOOM_COLLECTIVES(MCA_COLL_LOOM_COLL_ENUM_, ~)
    MCA_COLL_LOOM_NUM_COLLS
} mca_coll_loom_coll_t;
#undef MCA_COLL_LOOM_COLL_ENUM_

/* Properties of one call, as far as an algorithm's validity depends on them. */
#define MCA_COLL_LOOM_CALL_COMMUTATIVE 0x01u /* op is commutative */
#define MCA_COLL_LOOM_CALL_EXACT       0x02u /* op is exactly associative on this datatype:
                                                combining in any grouping gives identical
                                                bits (integer ops, max/min, logical, bitwise) */
#define MCA_COLL_LOOM_CALL_IDEMPOTENT  0x04u /* x o x = x (max, min, band, bor, land, lor,
                                                maxloc, minloc): duplicates are harmless */
#define MCA_COLL_LOOM_CALL_INVERTIBLE  0x08u /* an exact inverse exists (integer sum, bxor),
                                                so UNREDUCE may be used */
#define MCA_COLL_LOOM_CALL_SHM         0x10u /* hierarchical's node phases would run through
                                                the node's shared segment (set by the
                                                component; no algorithm needs it, rules
                                                test it) */

#define MCA_COLL_LOOM_CALL_NB          0x20u /* a non-blocking or persistent call (set by the
                                                component; no algorithm needs it, rules
                                                written for i<coll> test it) */
#define MCA_COLL_LOOM_CALL_ENGAGED     0x40u /* a reduce under the info key
                                                loom_reduce_engage (set by the component:
                                                binomial with params.engaged) */

/* Restrictions an algorithm declares. */
#define MCA_COLL_LOOM_NEEDS_COMMUTATIVE 0x01u /* combines contributions out of rank order */
#define MCA_COLL_LOOM_NEEDS_EXACT       0x02u /* combines in a rank-dependent grouping, so
                                                 inexact (floating) ops would differ by rank */

/* Everything a schedule builder needs.  Knob semantics are per algorithm.
 *
 * What the slots hold, per collective (the component maps the call's buffers):
 *   allreduce       INPUT: the contribution; RESULT: the combined vector.
 *   barrier         no data (zero-length slots).
 *   bcast           RESULT: the buffer; the root's holds the data (INPUT unused).
 *   reduce          INPUT: the contribution; RESULT: the combined vector at the root.
 *                   The other ranks have no RESULT (no receive buffer): their partial
 *                   results go to scratch slots (the verifier checks it).
 *   allgather       RESULT: the receive buffer, P parts; part `rank` already holds
 *                   the contribution (INPUT unused).
 *   reduce_scatter  INPUT: the contribution (P parts, the part sizes are the
 *   (_block)        recvcounts); RESULT: a full-shape buffer whose part `rank` must
 *                   hold the combined part at the end (the component copies it out).
 *   scan            INPUT: the contribution; RESULT: the contributions of ranks 0..rank
 *                   combined in rank order.
 *   exscan          the same for ranks 0..rank-1; rank 0's RESULT is left as it is.
 *   alltoall        INPUT: P parts, part j for rank j; RESULT: P parts, part j from
 *                   rank j.  The two may differ in datatype and layout (the component
 *                   maps each slot on its own), scratch slots are laid out like RESULT.
 *   alltoallv       the same with the call's counts and displacements per part, which
 *                   differ between ranks: its algorithms move single parts (nblk 1)
 *                   and use no scratch slot.
 */
typedef struct {
    int P;          /* communicator size */
    int nodes;      /* nodes the communicator spans (0: unknown, treated as 1) */
    int rpn;        /* most ranks of the communicator on one node (0: unknown, P) */
    int rank;       /* this rank */
    int root;       /* rooted collectives (unused by the allreduce family) */
    int knob;       /* ways n / ports n; 0 when the algorithm has no knob */
    unsigned call;  /* MCA_COLL_LOOM_CALL_* */
    int coll;       /* mca_coll_loom_coll_t being built (builders serving several) */
    int segs;       /* pipelining depth chosen for this call: segments per part (ring),
                       chunks (twotree); 0 or 1: none */
    const int *node_of; /* [P] node index of each rank, nodes numbered in order of their
                           lowest rank (loom_topo.h); NULL: all on one node */
    int leaders_only;   /* hierarchical: build only the phase among the nodes'
                           representatives, whose INPUT is already their node's part (the
                           node phases run through shared memory); other ranks get an
                           empty schedule */
    const struct mca_coll_loom_torus_t *torus; /* the nodes' torus (loom_torus.h), NULL: none */
    const int *torus_coords; /* its coordinates of node k at k * torus->ndims */
    int engaged;        /* binomial's reduce: only the ranks at distance < engaged from the
                           root (mod P) contribute, the others have nothing to do
                           (loom_reduce_engage, a commutative op); 0: every rank */
    int net_alg, net_knob, net_segs; /* hierarchical's bcast and reduce: 1 + the registry
                           index of the algorithm its phase among the nodes' representatives
                           runs, with its knob and depth (0: its own chain or binomial tree;
                           mca_coll_loom_decide_net) */
} mca_coll_loom_params_t;

typedef int (*mca_coll_loom_build_fn_t)(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);

/* The cost model's automatic pipelining depth of algorithm alg for (coll, P, bytes), as
 * its caller computes it: the component remembers mca_coll_loom_model_auto_segs' answers
 * with its own model parameters, loom-model asks it with the tool's. */
typedef struct {
    int (*auto_segs)(void *ctx, int alg, mca_coll_loom_coll_t coll, int P, size_t bytes);
    void *ctx;
} mca_coll_loom_segs_model_t;

/* A pipelined algorithm's depth for a call (params.segs): knob is the algorithm's knob
 * (bytes per segment or chunk, 0: automatic); model gives the cost model's choice. */
typedef int (*mca_coll_loom_segs_fn_t)(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob,
                                       const mca_coll_loom_segs_model_t *model);

/* Returns true when the algorithm can serve (P, knob, call) at all.  NULL: always. */
typedef bool (*mca_coll_loom_can_serve_fn_t)(const mca_coll_loom_params_t *p);

typedef struct {
    const char *name;          /* public name: coll_loom_<coll>_algorithm=<name> */
    unsigned colls;            /* bit (1u << mca_coll_loom_coll_t) per collective served */
    unsigned needs;            /* MCA_COLL_LOOM_NEEDS_* */
    unsigned commutative_only; /* .colls bits of the collectives it combines out of rank
                                  order (NEEDS_COMMUTATIVE: all of them) ... */
    const char *commutative_why; /* ... and the refusal that says so (explain lines) */
    const char *knob;          /* MCA parameter suffix (coll_loom_<knob>) or NULL */
    int knob_default, knob_min, knob_max;
    const char *description;   /* one line, shown by ompi_info */
    const char *reference;     /* paper and section */
    mca_coll_loom_build_fn_t build;
    mca_coll_loom_can_serve_fn_t can_serve;
    const char *(*refusal_of)(const mca_coll_loom_params_t *p); /* why can_serve() said no
                                  to this call (NULL: the adaption message) */
    bool pipelined;            /* the knob is a segment / chunk size in bytes, turned into
                                  params.segs per call by segs (0: automatic) */
    mca_coll_loom_segs_fn_t segs; /* pipelined algorithms: their segment policy */
} mca_coll_loom_alg_t;

/* An algorithm's registry entry, in its own file (opal/loom/alg/loom_alg_<name>.c):
 *     MCA_COLL_LOOM_ALGORITHM(<name>) = { .name = "<name>", .colls = ..., .build = ... };
 * at the start of a line; the build collects the entries of the files in LOOM_ALG_SOURCES
 * (Makefile.am) into mca_coll_loom_algs[], in that list's order. */
#define MCA_COLL_LOOM_ALGORITHM(name) const mca_coll_loom_alg_t mca_coll_loom_alg_##name
/* .colls bit of a collective: MCA_COLL_LOOM_SERVES(ALLREDUCE) */
#define MCA_COLL_LOOM_SERVES(coll) (1u << MCA_COLL_LOOM_COLL_##coll)

extern const mca_coll_loom_alg_t *const mca_coll_loom_algs[];
extern const int mca_coll_loom_num_algs;

const char *mca_coll_loom_coll_name(mca_coll_loom_coll_t coll);

/* Index of the algorithm called `name` that serves `coll`, or -1. */
int mca_coll_loom_alg_find(mca_coll_loom_coll_t coll, const char *name);

static inline bool mca_coll_loom_alg_serves(int alg, mca_coll_loom_coll_t coll)
{
    return 0 != (mca_coll_loom_algs[alg]->colls & (1u << coll));
}

/* Whether alg combines coll's contributions in rank order (what a non-commutative op
 * needs): neither NEEDS_COMMUTATIVE nor coll in its commutative_only. */
static inline bool mca_coll_loom_alg_keeps_order(int alg, mca_coll_loom_coll_t coll)
{
    const mca_coll_loom_alg_t *a = mca_coll_loom_algs[alg];

    return !(a->needs & MCA_COLL_LOOM_NEEDS_COMMUTATIVE) && 0 == (a->commutative_only & (1u << coll));
}

/* Why `alg` cannot run this call, or NULL when it can.  Checks the declared
 * restrictions against p->call, then the algorithm's own can_serve(). */
const char *mca_coll_loom_alg_refusal(int alg, const mca_coll_loom_params_t *p);
const char *mca_coll_loom_hierarchical_refusal(const mca_coll_loom_params_t *p);

/* params.segs of a call of `alg` (the component and loom-model alike): its segment
 * policy, 1 for an algorithm without one. */
int mca_coll_loom_alg_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob,
                           const mca_coll_loom_segs_model_t *model);
/* The policy of ring, twotree and circulant: the knob's segments of a unit (a part of bytes /
 * parts, parts 1: the whole message), else the cost model's count with segments of at least
 * min_auto bytes (MCA_COLL_LOOM_MIN_AUTO_CHUNK for ring and twotree). */
#define MCA_COLL_LOOM_MIN_AUTO_CHUNK ((size_t) 1024 * 1024)
int mca_coll_loom_segs_by_model(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob, int parts,
                                size_t min_auto, const mca_coll_loom_segs_model_t *model);

/* Builds rank p->rank's schedule into s (reset first) and finishes it. */
int mca_coll_loom_alg_build(int alg, mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);

/* The node index of rank r (p->node_of; all on node 0 when it is NULL). */
static inline int mca_coll_loom_node_of(const mca_coll_loom_params_t *p, int r)
{
    return NULL != p->node_of ? p->node_of[r] : 0;
}

/* a mod P in 0..P-1 for any sign of a: peers on the ring of ranks. */
static inline int mca_coll_loom_rank_mod(long a, int P)
{
    long r = a % P;
    return (int) (r < 0 ? r + P : r);
}

/* The 2^k + q fold of End et al., section III.A, as the block-based builders of allreduce,
 * allgather and reduce_scatter use it (nblocks: the schedule's blocks, allgather and
 * reduce_scatter parts one per rank).  Rank r < 2q, r even, hands its contribution to
 * r + 1 and gets back what it ends with (the whole RESULT, or its part of a
 * reduce_scatter); at the end r + 1 gives it back with mca_coll_loom_fold_give_back. */
static inline void mca_coll_loom_fold_hand_over(mca_coll_loom_sched_t *s, mca_coll_loom_coll_t coll, int r,
                                                int nblocks)
{
    if (MCA_COLL_LOOM_COLL_ALLGATHER == coll) {
        mca_coll_loom_sched_send_blk(s, r + 1, MCA_COLL_LOOM_SLOT_RESULT, r, 1);
    } else {
        mca_coll_loom_sched_send_blk(s, r + 1, MCA_COLL_LOOM_SLOT_INPUT, 0, nblocks);
    }
    mca_coll_loom_sched_wait(s);
    if (MCA_COLL_LOOM_COLL_ALLREDUCE == coll || MCA_COLL_LOOM_COLL_ALLGATHER == coll) {
        mca_coll_loom_sched_recv_blk(s, r + 1, MCA_COLL_LOOM_SLOT_RESULT, 0, nblocks);
    } else {
        mca_coll_loom_sched_recv_blk(s, r + 1, MCA_COLL_LOOM_SLOT_RESULT, r, 1);
    }
    mca_coll_loom_sched_wait(s);
}

static inline void mca_coll_loom_fold_give_back(mca_coll_loom_sched_t *s, mca_coll_loom_coll_t coll, int r,
                                                int nblocks)
{
    if (MCA_COLL_LOOM_COLL_ALLREDUCE == coll || MCA_COLL_LOOM_COLL_ALLGATHER == coll) {
        mca_coll_loom_sched_send_blk(s, r - 1, MCA_COLL_LOOM_SLOT_RESULT, 0, nblocks);
    } else {
        mca_coll_loom_sched_send_blk(s, r - 1, MCA_COLL_LOOM_SLOT_RESULT, r - 1, 1);
    }
    mca_coll_loom_sched_wait(s);
}

/* Builders (one file each).  Declared here so the registry is their only user. */
int mca_coll_loom_build_pairwise(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
int mca_coll_loom_build_dissemination(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
bool mca_coll_loom_dissemination_can_serve(const mca_coll_loom_params_t *p);
int mca_coll_loom_build_bruck(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
int mca_coll_loom_build_ring(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
int mca_coll_loom_build_twotree(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
int mca_coll_loom_build_binomial(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
int mca_coll_loom_build_recursive_doubling(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
int mca_coll_loom_build_direct(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
int mca_coll_loom_build_hierarchical(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
int mca_coll_loom_build_torus(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
bool mca_coll_loom_torus_can_serve(const mca_coll_loom_params_t *p);
const char *mca_coll_loom_torus_refusal(const mca_coll_loom_params_t *p);
bool mca_coll_loom_hierarchical_can_serve(const mca_coll_loom_params_t *p);
/* hierarchical's alltoall (loom_alg_hierarchical_alltoall.c), and whether its leaders'
 * slots fit this node map */
int mca_coll_loom_hierarchical_alltoall(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
bool mca_coll_loom_hierarchical_alltoall_fits(const mca_coll_loom_params_t *p);
/* hierarchical's large commutative allreduce on several nodes of equal size: one ring
 * per local index (loom_alg_hierarchical_rings.c), and whether this call is one */
int mca_coll_loom_hierarchical_rings(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p);
bool mca_coll_loom_hierarchical_rings_fit(const mca_coll_loom_params_t *p);

/* Whether swing runs its torus form on this call: the communicator's ranks, one per
 * node, are the nodes of a whole torus or sub-torus whose rings in use are powers of two
 * (loom_alg_swing.c). */
bool mca_coll_loom_swing_sub_torus(const mca_coll_loom_params_t *p);

/* The pairwise alltoall exchange (steps 1..P-1, `window` of them per round, 0: all at
 * once) of `direct` and `pairwise` (loom_alg_direct.c). */
int mca_coll_loom_alltoall_exchange(mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p, int window);

/* The recursive-doubling prefix over the sub-communicator peers[0..n-1] (NULL: the
 * identity), this rank being peers[me]: from the contribution in in_slot, incl_slot
 * gets the combination of peers[0..me] and, when excl_slot >= 0 and me > 0,
 * excl_slot that of peers[0..me-1], both in rank order.  incl_slot is also what is
 * sent, so it is needed even when only excl_slot is wanted (keep_incl false: it may
 * stop being updated once nothing more is sent); tmp_slot is scratch.  Used by
 * `recursive_doubling` and by `hierarchical`'s scan. */
void mca_coll_loom_prefix_doubling(mca_coll_loom_sched_t *s, const int *peers, int n, int me, int in_slot,
                                   int incl_slot, bool keep_incl, int excl_slot, int tmp_slot);

/* The adaption of End et al., Theorem 1, for (n, P): the last round takes s-1 full
 * partial results, a prefix of `send_prefix` contributions from sender s, and the
 * receiver drops the first `drop_prefix` contributions of its own chain.  Returns
 * false when no such adaption exists for (n, P). */
typedef struct {
    int k;            /* rounds */
    int m;            /* (n+1)^(k-1): contributions each rank holds before the last round */
    int s;            /* senders used in the last round (the s-th may send a prefix) */
    int send_prefix;  /* contributions the s-th sender sends (1..m; m = full) */
    int drop_prefix;  /* contributions the receiver takes out of its own chain (0 = none) */
} mca_coll_loom_adaption_t;

bool mca_coll_loom_dissemination_adapt(int n, int P, mca_coll_loom_adaption_t *a);

#endif /* MCA_COLL_LOOM_REGISTRY_H */
