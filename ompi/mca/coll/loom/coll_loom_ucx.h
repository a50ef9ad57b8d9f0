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
 * Direct writes (coll_loom_ucx_put_max > 0, Iakymchuk et al. section IV.B): each rank of a
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

#include "coll_loom_tl.h"

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

/* One communicator on the UCX transport (coll_loom_ucx.c). */
typedef struct mca_coll_loom_ucx_comm_t mca_coll_loom_ucx_comm_t;

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

/* At communicator free. */
void mca_coll_loom_ucx_release(mca_coll_loom_ucx_comm_t *u);

/* At component close: endpoints, worker, context. */
void mca_coll_loom_ucx_finalize(void);

/* The transport's operations (coll_loom_tl.h); without UCX at configure, a table whose
 * every communicator stays on the PML (mca_coll_loom_ucx_adopt returns NULL). */
extern const mca_coll_loom_tl_t mca_coll_loom_tl_ucx;

#endif /* MCA_COLL_LOOM_UCX_H */
