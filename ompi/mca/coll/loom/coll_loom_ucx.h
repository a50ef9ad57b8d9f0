/*
 * coll/loom: transfers over loom's own UCP worker (coll_loom_transport ucx).
 *
 * The engine posts a schedule's sends and receives through one of two transports: the
 * PML (Open MPI's point-to-point layer, the default) or UCX directly, as UCC's tl/ucp
 * does: one UCP context and worker per process, created at the first communicator that
 * asks for it; every process's worker address learned once, through the previous
 * component's allgather; endpoints created at first use and kept for every
 * communicator; ucp_worker_progress registered with opal_progress.  A message's UCP tag
 * names the communicator (a number all its ranks agree on), the sender's rank in it
 * and loom's tag of the call, so messages of different communicators, senders and
 * outstanding calls never match each other.
 */
#ifndef MCA_COLL_LOOM_UCX_H
#define MCA_COLL_LOOM_UCX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

struct ompi_communicator_t;
struct ompi_datatype_t;
struct mca_coll_loom_module_t;

/* coll_loom_transport */
enum {
    MCA_COLL_LOOM_TRANSPORT_AUTO = 0,
    MCA_COLL_LOOM_TRANSPORT_PML = 1,
    MCA_COLL_LOOM_TRANSPORT_UCX = 2,
};

/* the words of the settings check (coll_loom_module.c) that carry the transport */
#define MCA_COLL_LOOM_UCX_OFFER_WORDS 2

/* One communicator on the UCX transport. */
typedef struct mca_coll_loom_ucx_comm_t {
    uint64_t id;        /* the communicator's number, the same on every rank */
    uint64_t my_bits;   /* id and this rank, as they sit in the tag */
    int size;
    uint32_t *vpid;     /* rank -> MPI_COMM_WORLD rank */
} mca_coll_loom_ucx_comm_t;

/* The settings check's words for this communicator: whether this process can use UCX
 * on it, the length of its worker address, whether it lacks a member's address, and
 * its proposal for the communicator's number.  Zeros when the transport is the PML. */
void mca_coll_loom_ucx_offer(struct ompi_communicator_t *comm, bool in_job, uint64_t *words);

/* After the settings check (words: the maxima over the ranks), collectively: sets the
 * communicator up on UCX, or leaves it on the PML (NULL) and says why at verbosity 1.
 * The exchanges go through the previous component (m's). */
mca_coll_loom_ucx_comm_t *mca_coll_loom_ucx_adopt(struct mca_coll_loom_module_t *m,
                                                  struct ompi_communicator_t *comm, const uint64_t *words);

/* At communicator free. */
void mca_coll_loom_ucx_release(mca_coll_loom_ucx_comm_t *u);

/* At component close: endpoints, worker, context. */
void mca_coll_loom_ucx_finalize(void);

/* Posts a send or receive of (buf, n, dt) to/from `peer`; *req: a handle to test,
 * finish or cancel (NULL: done already). */
int mca_coll_loom_ucx_post(const mca_coll_loom_ucx_comm_t *u, bool send, char *buf, size_t n,
                           struct ompi_datatype_t *dt, int peer, int tag, void **req);

/* The UCP request of a handle (NULL: done at once).  A handle whose low bit is set holds
 * a packed copy (a datatype that is not one contiguous run): the request is its first
 * word. */
static inline void *mca_coll_loom_ucx_request(void *req)
{
    return (uintptr_t) req & 1 ? *(void **) ((uintptr_t) req & ~(uintptr_t) 1) : req;
}

static inline bool mca_coll_loom_ucx_complete(void *req)
{
    void *r = mca_coll_loom_ucx_request(req);
    return NULL == r || UCS_INPROGRESS != ucp_request_check_status(r);
}

/* Progresses loom's worker alone; the number of events. */
int mca_coll_loom_ucx_progress(void);

/* Releases a completed handle (unpacking a received packed copy); OMPI_SUCCESS or the
 * transfer's error. */
int mca_coll_loom_ucx_finish(void *req);

/* Error path: cancels the transfer if it can, waits for it and releases it. */
void mca_coll_loom_ucx_cancel(void *req);

#endif /* MCA_COLL_LOOM_UCX_H */
