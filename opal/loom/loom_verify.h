/*
 * loom: symbolic execution of schedules, without MPI.  Builds the schedule of every
 * rank of a P-rank communicator, runs them together under the execution model of
 * loom_sched.h (non-blocking transfers, WAIT, ordered matching per pair of ranks),
 * and checks that no rank deadlocks, no slot in flight is touched, no undefined
 * block is sent or combined, and the result is what the collective promises (the
 * slot contents per collective are described in loom_registry.h):
 *   allreduce, barrier   every rank's RESULT holds each contribution exactly once
 *                        (at least once for idempotent calls);
 *   reduce               the same, at the root only;
 *   bcast                every rank's RESULT holds the root's data, once;
 *   allgather            every rank's RESULT part b holds rank b's data, once;
 *   reduce_scatter(_block)  every rank's RESULT part `rank` holds each contribution
 *                        exactly once (at least once for idempotent calls);
 *   scan, exscan         every rank's RESULT holds the contributions of ranks 0..rank
 *                        (exscan: 0..rank-1, nothing checked at rank 0) exactly once;
 * combined in rank order on non-commutative calls where the algorithm claims to keep
 * it.  bcast and allgather must not read INPUT.  A contribution is a rank's data of
 * one block, so a block moved to the wrong place (loom_sched.h) counts as a wrong
 * contribution there.
 *
 * Every check runs twice: in the round reading (WAIT completes what came before it),
 * then in graph mode, as the engine runs a schedule: each rank's dependency graph
 * (npred, succ, chan_next of loom_sched.h), ops started as soon as their releases
 * are in and transfers completed in an adversarial order chosen among the enabled
 * events of all ranks (mca_coll_loom_verify_graph_orders).  A graph-mode failure
 * names its order: "graph, order K: ..." or "deadlock (graph, order K): ...".
 * Schedules finished with no_graph get the round reading only.
 */
#ifndef MCA_COLL_LOOM_VERIFY_H
#define MCA_COLL_LOOM_VERIFY_H

#include <stddef.h>

#include "opal/loom/loom_registry.h"

typedef struct {
    int rounds;        /* the largest number of rounds of any rank */
    long messages;     /* messages sent in total */
    long reductions;   /* REDUCE / REDUCE_R / UNREDUCE in total */
} mca_coll_loom_verify_stats_t;

/* shape->root for every root 0..P-1 of a rooted collective, one after the other. */
#define MCA_COLL_LOOM_VERIFY_ALL_ROOTS (-1)

/* Builds with shape->P, root, knob, call and segs, and shape->coll set to coll;
 * shape->rank is ignored (every rank is built).  in_place runs each rank with INPUT
 * and RESULT as one buffer where its schedule allows that (MPI_IN_PLACE): every rank
 * for allreduce, barrier, scan and exscan, the root for reduce, nobody for the other
 * collectives (the component copies).  Returns 0 on success; otherwise writes the first problem
 * found into err. */
int mca_coll_loom_verify(int alg, mca_coll_loom_coll_t coll, const mca_coll_loom_params_t *shape,
                         bool in_place, mca_coll_loom_verify_stats_t *stats, char *err, size_t errlen);

/* The same for any builder and one root (tests of the checker itself use
 * deliberately broken ones); the collective is shape->coll; check_order demands rank
 * order for non-idempotent calls. */
int mca_coll_loom_verify_builder(mca_coll_loom_build_fn_t build, bool check_order,
                                 const mca_coll_loom_params_t *shape, bool in_place,
                                 mca_coll_loom_verify_stats_t *stats, char *err, size_t errlen);

/* The same for schedules already built and finished, scheds[rank] for every rank
 * (callers verifying many variants build once). */
int mca_coll_loom_verify_schedules(const mca_coll_loom_sched_t *scheds, bool check_order,
                                   const mca_coll_loom_params_t *shape, bool in_place,
                                   mca_coll_loom_verify_stats_t *stats, char *err, size_t errlen);

/* How many orders graph mode runs per verification (default 2; 0: the round reading
 * only); returns the previous setting, n < 0 only reads it.  The orders: 1 (complete
 * the newest matched transfer first, start the newest ready op: depth first), from
 * n = 3 on 0 (start every ready op first, complete the oldest: the most in flight),
 * then pseudo-random orders K >= 2 (seeded by K, and K derived from the shape, so a
 * failure repeats with the same call).  A process-wide setting, for test drivers. */
int mca_coll_loom_verify_graph_orders(int n);

#endif /* MCA_COLL_LOOM_VERIFY_H */
