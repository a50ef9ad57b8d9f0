/*
 * loom: symbolic execution of schedules, without MPI.  Builds the schedule of every
 * rank of a P-rank communicator, runs them together under the execution model of
 * loom_sched.h (non-blocking transfers, WAIT, ordered matching per pair of ranks),
 * and checks that no rank deadlocks, no slot in flight is touched, and every rank's
 * result holds each contribution exactly once (at least once for idempotent calls),
 * in rank order where the algorithm claims to keep it.
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

/* shape->rank is ignored (every rank is built).  in_place runs each rank with INPUT
 * and RESULT as one buffer where its schedule allows that (MPI_IN_PLACE).  Returns 0
 * on success; otherwise writes the first problem found into err. */
int mca_coll_loom_verify(int alg, mca_coll_loom_coll_t coll, const mca_coll_loom_params_t *shape,
                         bool in_place, mca_coll_loom_verify_stats_t *stats, char *err, size_t errlen);

/* The same for any builder (tests of the checker itself use deliberately broken
 * ones); check_order demands rank order for non-idempotent calls. */
int mca_coll_loom_verify_builder(mca_coll_loom_build_fn_t build, bool check_order,
                                 const mca_coll_loom_params_t *shape, bool in_place,
                                 mca_coll_loom_verify_stats_t *stats, char *err, size_t errlen);

#endif /* MCA_COLL_LOOM_VERIFY_H */
