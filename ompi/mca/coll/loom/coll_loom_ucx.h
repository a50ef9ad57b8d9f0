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
 *
 * Direct writes (coll_loom_ucx_put_max > 0, seed 002 section IV.B): each rank of a
 * communicator exposes a window, a notification counter per sender and, for each of two
 * alternating calls, a part per sender of put_max bytes.  In a blocking call whose
 * schedule is an exchange (loom_sched.h), a message that fits what is left of the
 * sender's part is a put into it, a fence, and an atomic add to the sender's counter;
 * the receive completes when the counter reaches the messages expected from that sender,
 * and the data is copied out.  Sender and receiver take the same decision (both know the
 * message's size) and the same place (messages between two ranks keep their order).
 * Two parts suffice: a rank writes a part again two calls later, after the receiver's
 * message of the call in between, which the receiver sent once it had read the part.
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
    int size, rank;
    uint32_t *vpid;     /* rank -> MPI_COMM_WORLD rank */
    /* the window for direct writes (slot 0: none) */
    size_t slot;        /* bytes per sender and call */
    size_t head;        /* bytes of the counters before the parts */
    ucp_mem_h win_mem;
    char *win;
    ucp_rkey_h *rkey;   /* per rank: its window's key (NULL for this rank) */
    uint64_t *raddr;    /* per rank: its window's address */
    uint64_t *expect;   /* per sender: the notifications its direct writes so far reach */
    size_t *soff, *roff; /* per peer, this call: bytes written to its part, read from ours */
    unsigned part;      /* this call's part: 0 or 1 */
} mca_coll_loom_ucx_comm_t;

/* The settings check's words for this communicator: whether this process can use UCX
 * on it, the length of its worker address, whether it lacks a member's address, and
 * its proposal for the communicator's number.  Zeros unless `want` (the same on every
 * rank: mca_coll_loom_ucx_wanted). */
void mca_coll_loom_ucx_offer(struct ompi_communicator_t *comm, bool in_job, bool want, uint64_t *words);

/* After the settings check (words: the maxima over the ranks), collectively: sets the
 * communicator up on UCX, or leaves it on the PML (NULL) and says why at verbosity 1.
 * The exchanges go through the previous component (m's). */
mca_coll_loom_ucx_comm_t *mca_coll_loom_ucx_adopt(struct mca_coll_loom_module_t *m,
                                                  struct ompi_communicator_t *comm, const uint64_t *words);

/* A blocking call of a schedule that is an exchange begins: whether its messages may be
 * direct writes (the communicator has a window); then the call's part and offsets. */
bool mca_coll_loom_ucx_put_begin(mca_coll_loom_ucx_comm_t *u);

/* At communicator free. */
void mca_coll_loom_ucx_release(mca_coll_loom_ucx_comm_t *u);

/* At component close: endpoints, worker, context. */
void mca_coll_loom_ucx_finalize(void);

/* Posts a send or receive of (buf, n, dt) to/from `peer`, as a direct write when `put`
 * (a call that mca_coll_loom_ucx_put_begin allowed) and it fits; *req: a handle to
 * test, finish or cancel (NULL: done already). */
int mca_coll_loom_ucx_post(const mca_coll_loom_ucx_comm_t *u, bool send, bool put, char *buf, size_t n,
                           struct ompi_datatype_t *dt, int peer, int tag, void **req);

/* A handle's two low bits: 0 a UCP request (or NULL), 1 a packed copy (a datatype that is
 * not one contiguous run) whose first word is the request, 2 a direct write, 3 a
 * receive of one. */
#define MCA_COLL_LOOM_UCX_HANDLE_KIND(req) ((uintptr_t) (req) & 3)

/* The UCP request of a handle of kind 0 or 1 (NULL: done at once). */
static inline void *mca_coll_loom_ucx_request(void *req)
{
    return (uintptr_t) req & 1 ? *(void **) ((uintptr_t) req & ~(uintptr_t) 1) : req;
}

/* Whether a UCP request (NULL: done at once) is done. */
static inline bool mca_coll_loom_ucx_request_done(void *r)
{
    return NULL == r || UCS_INPROGRESS != ucp_request_check_status(r);
}

bool mca_coll_loom_ucx_direct_complete(void *req);

static inline bool mca_coll_loom_ucx_complete(void *req)
{
    if (MCA_COLL_LOOM_UCX_HANDLE_KIND(req) >= 2) {
        return mca_coll_loom_ucx_direct_complete(req);
    }
    return mca_coll_loom_ucx_request_done(mca_coll_loom_ucx_request(req));
}

/* Progresses loom's worker alone; the number of events. */
int mca_coll_loom_ucx_progress(void);

/* Releases a completed handle (unpacking a received packed copy); OMPI_SUCCESS or the
 * transfer's error. */
int mca_coll_loom_ucx_finish(void *req);

/* Error path: cancels the transfer if it can, waits for it and releases it. */
void mca_coll_loom_ucx_cancel(void *req);

#endif /* MCA_COLL_LOOM_UCX_H */
