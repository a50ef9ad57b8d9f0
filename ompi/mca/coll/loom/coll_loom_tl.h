/*
 * coll/loom: the transport interface.
 *
 * The engine (coll_loom_exec.c) moves a schedule's messages through one transport per
 * task and names none of them: it posts sends and receives, tests and finishes them,
 * cancels them on an error path, and polls the transport while it waits, all through
 * this table.  Transports: the PML (Open MPI's point-to-point layer, coll_loom_tl_pml.c,
 * always there) and loom's own UCX worker (coll_loom_ucx.c, when configure found UCX).
 * Which one a call takes is the plan's decision (mca_coll_loom_call_tl).
 */
#ifndef MCA_COLL_LOOM_TL_H
#define MCA_COLL_LOOM_TL_H

#include <stdbool.h>
#include <stddef.h>

struct ompi_communicator_t;
struct ompi_datatype_t;

typedef struct mca_coll_loom_tl_t {
    const char *name;
    /* whether finish tells an empty receive (a peer's failure, coll_loom_exec.c) from a
     * full one, in calls that did not begin with direct_begin: then a rank that fails at
     * its own work goes on without data; otherwise such a task stops and the
     * communicator is marked failed */
    bool reports_length;
    /* Posts a send or receive of (buf, n, dt) to/from `peer` of comm with loom's `tag`;
     * state: the transport's per-communicator state (NULL for the PML), direct: the call
     * began with direct_begin.  *req: a handle for test, finish and cancel. */
    int (*post)(void *state, struct ompi_communicator_t *comm, bool send, bool direct, char *buf,
                size_t n, struct ompi_datatype_t *dt, int peer, int tag, void **req);
    /* whether the transfer of a handle completed */
    bool (*test)(void *req);
    /* releases a completed handle: OMPI_SUCCESS or the transfer's error.  received:
     * NULL for a send; for a receive, set to 0 when the message was empty (any other
     * value: not empty, SIZE_MAX when the transport does not know) */
    int (*finish)(void *req, size_t *received);
    /* error path: cancels the transfer if it can, waits for it and releases it */
    void (*cancel)(void *req);
    /* polls this transport alone, the number of events (NULL: opal_progress does it) */
    int (*progress)(void);
    /* a blocking call whose schedule is an exchange begins: whether its messages may be
     * direct writes into the peers' memory (NULL: never) */
    bool (*direct_begin)(void *state);
} mca_coll_loom_tl_t;

extern const mca_coll_loom_tl_t mca_coll_loom_tl_pml;

#endif /* MCA_COLL_LOOM_TL_H */
