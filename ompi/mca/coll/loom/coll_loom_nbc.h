/*
 * coll/loom: the request layer (coll_loom_nbc.c).  A non-blocking or persistent call is
 * one of loom's requests whatever runs it: a schedule on the engine, the node segment's
 * protocol, or a stale-synchronous exchange (coll_loom_ssp.h); loom's one progress
 * callback moves them all on.  The entry points describe the call (coll_loom_call.h)
 * and post it; every start runs the call's steps before its schedule, every completion
 * those after it, as a blocking call does.
 */
#ifndef MCA_COLL_LOOM_NBC_H
#define MCA_COLL_LOOM_NBC_H

#include "coll_loom.h"
#include "coll_loom_call.h"

/* Makes the request of a call planned to schedule s (NULL: a call without data, which
 * completes at once) and starts it unless it is persistent.  c->displ passes to the
 * request (freed with it, or here on failure). */
int mca_coll_loom_nb_post(const mca_coll_loom_sched_t *s, mca_coll_loom_call_t *c, bool persistent,
                          ompi_request_t **request);
/* The non-blocking or persistent form of allreduce, reduce (root), scan or exscan: one
 * vector in, one out, an op.  OMPI_ERR_NOT_AVAILABLE: the previous component's form
 * is to serve the call (nothing was posted). */
int mca_coll_loom_nb_vector(mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll, const void *sbuf, void *rbuf,
                            int count, ompi_datatype_t *dtype, ompi_op_t *op, int root,
                            struct ompi_communicator_t *comm, bool persistent, ompi_request_t **request);
/* Registers loom's progress callback, once (it moves requests and SSP exchanges on). */
void mca_coll_loom_nb_progress_register(void);
/* A transport that must be polled whenever Open MPI progresses (loom's UCX worker): added
 * to loom's progress callback, and removed, at its process-wide setup and end. */
void mca_coll_loom_nb_poll_add(int (*poll)(void));
void mca_coll_loom_nb_poll_remove(int (*poll)(void));
/* at component open / close */
void mca_coll_loom_nbc_init(void);
void mca_coll_loom_nbc_fini(void);

#endif /* MCA_COLL_LOOM_NBC_H */
