/*
 * loom: a LogGP cost model (Alexandrov et al., SPAA '95) and a simulator that runs
 * the real schedules of all P ranks (built through the registry) under it, to
 * predict the time of a collective and to choose the pipelining depth (segs /
 * chunks) as the TwoTreeC paper, section 5 does ("simulation, then refined by measurement").
 *
 * Model, per rank (times in seconds):
 *   - a rank has one CPU clock.  Ops run in schedule order; posting a SEND costs the
 *     CPU o, posting a RECV costs nothing;
 *   - the bytes of a send leave on the rank's outgoing link, which serialises them:
 *     a message starts at max(post time, link free) and occupies the link G*bytes,
 *     and two message starts are at least g apart;
 *   - its first byte reaches the receiver L after it started, its last byte L after
 *     it left; the receiver's incoming link serialises the bytes of the messages of
 *     one round (in order of first arrival) at G per byte as well;
 *   - messages are eager: they flow whether or not the receive is posted yet;
 *   - WAIT completes the round: the CPU handles each received message when it has
 *     fully arrived (o each, in arrival order), and waits until its own sends have
 *     left the outgoing link;
 *   - COPY costs copy*bytes, REDUCE / REDUCE_R / UNREDUCE gamma*bytes of CPU time.
 * A single message of n bytes thus takes o + G*n + L + o, the LogGP end-to-end time.
 * Byte counts come from the block layout of loom_sched.h (count = bytes / elem_size
 * elements, split into the schedule's parts and segments like the executor does);
 * a block-range op with no element is skipped on both sides, as in the executor.
 *
 * Rounds or graph.  The rules above read a schedule as rounds (WAIT completes a
 * round), the order the builders write.  The engine runs the dependency graph of
 * loom_sched.h instead; GRAPH costs that, under the same LogGP rules per rank:
 *   - an op is ready once its releases have arrived (a data predecessor releases when
 *     it is done, a transfer its channel's next transfer when it is posted);
 *   - the CPU works like the engine's progress loop: a sweep completes the receives
 *     whose message is in (o each, in order of arrival; then they are done), then
 *     the ready ops run in FIFO order of becoming ready (initially list order), ops
 *     released meanwhile included, each at max(ready, CPU free), before the next
 *     sweep;
 *   - SEND: o of CPU and the link rules above; it is done when its bytes have left
 *     (eager); the channel's next transfer may be posted after the o;
 *   - RECV: posting is free; the incoming link takes every message in order of first
 *     arrival (not per round);
 *   - local ops cost as above; WAITs are no-ops (rounds still count them).
 * A rank finishes when its last op is done.
 *
 * Three ways to run (see docs/dev/model.md):
 *   FULL       every rank's schedule is built (lazily, when the rank first runs) in
 *              a compact timing form and freed when the rank is done; exact under
 *              the model.  Limited by a budget of live ops.
 *   SYMMETRIC  for schedules where rank r's ops are rank 0's with peers moved by
 *              +r mod P (rotation: ring, bruck, dissemination) or ^r (xor, P a
 *              power of two: pairwise), all ranks run the same timeline, so only
 *              rank 0 is simulated, and its receive from q takes the time of its own
 *              matching send to the mirror of q.  Exact up to the +-1 element by
 *              which blocks of an uneven split differ (rank 0's sizes are used).
 *              Symmetry is checked on a sample of ranks, not proved.
 *   GRAPH      every rank's dependency graph, an event queue over all ranks; built
 *              at the start and freed when the rank is done, held in about 24 bytes
 *              per op and 4 per edge, counted against the same budget (in 8-byte
 *              units, with the event queue).  Round mode stays what choose_segs and
 *              auto_segs use.
 *
 * The torus network (Mittal et al.; GRAPH only, forced when opts->link_G > 0 and the shape
 * has torus coordinates, shape->torus and ->torus_coords, with ->node_of).  A message
 * between ranks of two nodes follows its route under the routing model of
 * loom_torus.h and crosses its directed links in turn, each for max(link_G, G) per
 * byte: it enters a link when it has entered the one before (or left the sender,
 * post_send) and the link is free, every link a FIFO in the order messages were sent,
 * so messages that share a link go one after another, which for a stream is the time
 * of a fair share; its first byte arrives L + hops hop_L after it entered the last
 * link.  A link's load is the number of
 * flows that wanted it at once: a message of flow f (sender, receiver) wants its
 * links from the time it could start until it has crossed them; the result keeps the
 * largest load (1: no two flows ever met on a link).  Messages inside a node cross
 * no link.
 */
#ifndef MCA_COLL_LOOM_MODEL_H
#define MCA_COLL_LOOM_MODEL_H

#include <stddef.h>

#include "opal/loom/loom_registry.h"

/* Defaults: the development machine's, from test/bench/loom_pingpong, out of cache
 * like a large collective's working set (docs/dev/model.md, "Parameters").  Units as
 * the MCA parameters: microseconds for L, o, g, nanoseconds per byte for G, gamma,
 * copy. */
#define MCA_COLL_LOOM_MODEL_DEFAULT_LATENCY_US         0.17
#define MCA_COLL_LOOM_MODEL_DEFAULT_OVERHEAD_US        0.072
#define MCA_COLL_LOOM_MODEL_DEFAULT_GAP_US             0.094
#define MCA_COLL_LOOM_MODEL_DEFAULT_GAP_PER_BYTE_NS    0.196
#define MCA_COLL_LOOM_MODEL_DEFAULT_REDUCE_PER_BYTE_NS 0.071
#define MCA_COLL_LOOM_MODEL_DEFAULT_COPY_PER_BYTE_NS   0.068

typedef struct {
    double L;      /* latency: first byte out to first byte in (s) */
    double o;      /* CPU overhead per message, on each side (s) */
    double g;      /* least time between two message starts on one link (s) */
    double G;      /* link time per byte, each direction (s/B) */
    double gamma;  /* reduction time per byte of the combined vector (s/B) */
    double copy;   /* local copy time per byte (s/B) */
    double G_out;  /* sender's link time per byte (s/B): G in LogGP; 0 for shared memory
                      with single-copy transfers, where the receiver does the copy */
} mca_coll_loom_model_params_t;

/* How a prediction was made. */
typedef enum {
    MCA_COLL_LOOM_MODEL_NONE = 0,    /* not made (see the return code) */
    MCA_COLL_LOOM_MODEL_FULL,        /* every rank simulated */
    MCA_COLL_LOOM_MODEL_SYMMETRIC,   /* rank 0 simulated, the others by symmetry */
    MCA_COLL_LOOM_MODEL_ANALYTIC,    /* closed form (choose_segs at large P only) */
    MCA_COLL_LOOM_MODEL_GRAPH        /* every rank simulated as its dependency graph */
} mca_coll_loom_model_method_t;

/* Options of a prediction (NULL: the defaults below). */
typedef struct {
    int method;          /* 0: auto (SYMMETRIC when detected and P > sym_min_P, else
                            FULL); or force MCA_COLL_LOOM_MODEL_FULL / _SYMMETRIC;
                            MCA_COLL_LOOM_MODEL_GRAPH: the dependency graph instead of
                            rounds (every rank, no symmetric shortcut) */
    int sym_min_P;       /* auto uses FULL up to this P (default 256) */
    long max_live_ops;   /* FULL gives up (ERR_NOTSUP) beyond this many ops held at
                            once (8 bytes each; default 2^27) */
    const size_t *part_displ; /* explicit part layout (reduce_scatter recvcounts as
                                 element prefix sums, nparts + 1 entries) or NULL */
    double link_G;       /* > 0: the torus network (below) with this time per byte of a
                            directed link (s/B); 0: none */
    double hop_L;        /* torus network: latency added per link crossed (s) */
} mca_coll_loom_model_opts_t;

typedef struct {
    double time;         /* predicted completion, the latest rank (s) */
    double mean;         /* mean finish time over ranks (s) */
    int last_rank;       /* a rank finishing last */
    int method;          /* mca_coll_loom_model_method_t used */
    int rounds;          /* most WAITs of any rank (GRAPH too: a property of the list) */
    long messages;       /* messages simulated (of rank 0 only when SYMMETRIC) */
    long ops;            /* ops simulated */
    long peak_live_ops;  /* FULL: most compact ops held at once; GRAPH: most 8-byte
                            units held (ops, edges, events) */
    const char *note;    /* why a prediction was refused, or NULL */
    int max_link_load;   /* torus network: most flows (sender-receiver pairs) that
                            wanted one directed link at the same time */
    long link_messages;  /* torus network: messages that crossed at least one link */
    long max_link_hops;  /* torus network: the longest route taken (links) */
} mca_coll_loom_model_result_t;

/* Parameters from the MCA units (us, us, us, ns/B, ns/B, ns/B). */
void mca_coll_loom_model_params_set(mca_coll_loom_model_params_t *m, double L_us, double o_us,
                                    double g_us, double G_ns, double gamma_ns, double copy_ns);

/* The defaults above. */
void mca_coll_loom_model_params_default(mca_coll_loom_model_params_t *m);

void mca_coll_loom_model_opts_default(mca_coll_loom_model_opts_t *o);

/* Predicts algorithm `alg` on collective `coll` for a call of `bytes` bytes per slot
 * (the vector of allreduce/bcast/reduce, the whole result of allgather, the whole
 * input of reduce_scatter) in elements of elem_size bytes.  shape gives P, root,
 * knob, call and segs (rank is ignored).  finish, if not NULL, receives P per-rank
 * finish times (all equal under SYMMETRIC).  Returns MCA_COLL_LOOM_OK, or
 * ERR_NOTSUP (refused by the algorithm, deadlock, or over the budget; res->note says
 * which), ERR_NOMEM, ERR_BADPARAM. */
int mca_coll_loom_model_predict(int alg, mca_coll_loom_coll_t coll, const mca_coll_loom_params_t *shape,
                                size_t bytes, size_t elem_size, const mca_coll_loom_model_params_t *m,
                                const mca_coll_loom_model_opts_t *opts, double *finish,
                                mca_coll_loom_model_result_t *res);

/* The segs (segments per part / chunks) that minimise the predicted time of `alg`
 * for (coll, P, bytes).  shape may be NULL (root 0, default knob, a commutative
 * exactly associative op); its segs is ignored.  Returns 1 when the algorithm does
 * not use segs.  How: when the simulations fit a budget of about 2^22 simulated ops
 * (always for P <= 64), powers of two up to the element count are simulated, then
 * integers around the best by ternary search; otherwise the pipeline closed form
 * T(s) = (D-1)(L + 2o + b n/s) + s max(2o, g) + b n, least at
 * s* = sqrt((D-1) b n / max(2o, g)), with depth D = ceil(log2 P), b = G (+gamma for
 * reductions), is used.  *predicted (if not NULL) gets the predicted time of
 * the choice (the closed form's estimate when analytic), *method how it was made. */
int mca_coll_loom_model_choose_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes,
                                    size_t elem_size, const mca_coll_loom_model_params_t *m,
                                    const mca_coll_loom_params_t *shape, double *predicted,
                                    int *method);

/* The segs (ring segments per part, two-tree chunks) the component uses when the
 * knob is 0: cheap (docs/dev/model.md, "auto_segs") and deterministic, so every rank gets
 * the same answer.  Returns 1 when the algorithm does not use segs.  A schedule in
 * parts (the ring) gets segments of at most 1 MiB (the model sees no benefit in
 * segmenting it: see docs/dev/model.md); a whole-message pipeline (twotree) gets
 * K* = sqrt(C / B) of T(K) = A + B K + C / K fitted to three full simulations at
 * min(P, 32) ranks and K = 4, 8, 16, the fill C scaled by ceil(log2 P) from there.
 * Assumes root 0 and a commutative, exact op. */
int mca_coll_loom_model_auto_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, size_t elem_size,
                                  const mca_coll_loom_model_params_t *m);

/* The same for a bare builder instead of a registry algorithm (shape->coll is the
 * collective; no refusal checks).  For tests and for trying a builder before it is
 * registered. */
int mca_coll_loom_model_predict_builder(mca_coll_loom_build_fn_t build, const mca_coll_loom_params_t *shape,
                                        size_t bytes, size_t elem_size,
                                        const mca_coll_loom_model_params_t *m,
                                        const mca_coll_loom_model_opts_t *opts, double *finish,
                                        mca_coll_loom_model_result_t *res);
int mca_coll_loom_model_choose_segs_builder(mca_coll_loom_build_fn_t build, mca_coll_loom_coll_t coll, int P,
                                            size_t bytes, size_t elem_size,
                                            const mca_coll_loom_model_params_t *m,
                                            const mca_coll_loom_params_t *shape, double *predicted,
                                            int *method);

/* Bandwidth lower bound of the collective for n bytes (only the G term; s):
 * n*G for bcast/reduce, 2(P-1)/P n*G for allreduce, (P-1)/P n*G for allgather and
 * reduce_scatter, 0 for barrier. */
double mca_coll_loom_model_lower_bound(mca_coll_loom_coll_t coll, int P, size_t bytes,
                                       const mca_coll_loom_model_params_t *m);

/* LogGP lower bound of the collective at (P, n) (s): ceil(log2 P) message times
 * (L + 2o each: in a message time the ranks that hold a contribution at most double),
 * plus the bandwidth bound above, plus the combining every rank cannot avoid
 * ((P-1)/P n gamma for the reductions).  Chan et al. (2007), section 2; derivation in
 * docs/dev/model.md, "The lower bound". */
double mca_coll_loom_model_bound(mca_coll_loom_coll_t coll, int P, size_t bytes,
                                 const mca_coll_loom_model_params_t *m);

const char *mca_coll_loom_model_method_name(int method);

#endif /* MCA_COLL_LOOM_MODEL_H */
