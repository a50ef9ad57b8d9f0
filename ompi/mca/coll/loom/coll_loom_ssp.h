/*
 * coll/loom: the stale-synchronous allreduce, between its exchange (coll_loom_ssp.c: the
 * per-communicator channels and the interpreter that runs a schedule over them) and its
 * MPI calls (coll_loom_ssp_call.c: the blocking entry, the info key, the attributes that
 * drain the exchange, MPI_T).  A non-blocking or persistent call is one of loom's
 * requests (coll_loom_nbc.c) whose task is an SSP call: the request holds the call, the
 * exchange completes it, and loom's one progress callback moves both on.
 */
#ifndef MCA_COLL_LOOM_SSP_H
#define MCA_COLL_LOOM_SSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coll_loom.h"

#define MCA_COLL_LOOM_SSP_KEY "loom_allreduce_slack"

/* One call on an exchange: queued in order, run by the interpreter. */
typedef struct mca_coll_loom_ssp_call_t {
    struct mca_coll_loom_ssp_call_t *next;
    const void *sbuf;
    void *rbuf;
    int64_t clock;
    int pc;               /* next op of the schedule; -1: not started */
    int scan;             /* the first RECV of the round not read yet (from the round's
                             start: a round's receives are read at its WAIT) */
    bool waited;          /* the current RECV op had to wait */
    volatile bool done;   /* set by the exchange, read by the waiting caller or request */
    int rc;
} mca_coll_loom_ssp_call_t;

/* The stale-synchronous allreduce under the info key loom_allreduce_slack
 * (coll_loom_ssp_call.c).  The calls return OMPI_ERR_NOT_AVAILABLE when they leave the call to
 * the ordinary allreduce (an op that is not commutative, nothing to reduce). */
void mca_coll_loom_ssp_open(void);
void mca_coll_loom_ssp_close(void);
void mca_coll_loom_ssp_register(void);
void mca_coll_loom_ssp_enable(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm);
void mca_coll_loom_ssp_fini(mca_coll_loom_module_t *m);
int mca_coll_loom_ssp_allreduce(mca_coll_loom_module_t *m, const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm);
int mca_coll_loom_ssp_iallreduce(mca_coll_loom_module_t *m, const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, bool persistent, ompi_request_t **request);

/* A call's start on the exchange (attributes set, then mca_coll_loom_ssp_submit): the
 * blocking call and every start of a request. */
int mca_coll_loom_ssp_start(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, size_t count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, unsigned flags, bool blocking,
                            mca_coll_loom_ssp_call_t *call);
/* Queues call on the communicator's exchange (set up, or set up again for another
 * signature: the earlier calls drain first) and moves it on.  blocking: counted as a
 * blocking call.  OMPI_SUCCESS: the call is queued (it may be done already). */
int mca_coll_loom_ssp_submit(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, size_t count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, unsigned flags, bool blocking,
                             mca_coll_loom_ssp_call_t *call);
/* Waits for a queued call (a blocking MPI_Allreduce). */
void mca_coll_loom_ssp_wait(mca_coll_loom_module_t *m, mca_coll_loom_ssp_call_t *call);
/* Moves every exchange with work on (pending sends, queued calls): one of the polls of
 * loom's progress callback (coll_loom_nbc.c), from the first exchange on. */
int mca_coll_loom_ssp_progress(void);
/* Drains every exchange still open (MPI_Finalize). */
void mca_coll_loom_ssp_drain_all(void);
/* The exchanges' lock and registry lookups (component open), and their end (close). */
void mca_coll_loom_ssp_exchange_open(void);
void mca_coll_loom_ssp_exchange_close(void);

#endif /* MCA_COLL_LOOM_SSP_H */
