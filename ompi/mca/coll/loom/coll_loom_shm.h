/*
 * coll/loom: the node's shared segment (coll_loom_shm.c: the calls on it,
 * coll_loom_shm_setup.c: its setup and the pool of freed segments,
 * coll_loom_shm_alltoall.c: direct's alltoall through it).  The segment's protocol
 * itself, which knows no MPI, is opal/loom/loom_shm.h.
 */
#ifndef MCA_COLL_LOOM_COMPONENT_SHM_H
#define MCA_COLL_LOOM_COMPONENT_SHM_H

#include "coll_loom.h"

/* The shared-memory node phases of `hierarchical` (coll_loom_shm.c), for the calls whose
 * plan says plan.shm (the same answer on every rank).  The collectives return
 * OMPI_ERR_NOT_AVAILABLE, before any data moved, when the segment could not be set up
 * on this communicator: the caller then runs the point-to-point schedule.
 * usable: whether hierarchical's node phases of a call of `coll` moving `bytes` would run
 * through the segment (the call property MCA_COLL_LOOM_CALL_SHM, which plan sets).  Not
 * before the coll_loom_shm_setup_call-th call that could (each call counts, on every
 * rank alike): a communicator used for a few calls never pays for a segment. */
bool mca_coll_loom_shm_usable(mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll, size_t bytes);
int mca_coll_loom_shm_allreduce(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan, const void *sbuf,
                                void *rbuf, size_t count,
                                ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm,
                                unsigned call);
int mca_coll_loom_shm_barrier(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan, ompi_communicator_t *comm);
int mca_coll_loom_shm_bcast(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan, void *buf, size_t count,
                            ompi_datatype_t *dtype,
                            int root, ompi_communicator_t *comm);
int mca_coll_loom_shm_reduce(mca_coll_loom_module_t *m, const mca_coll_loom_plan_t *plan, const void *sbuf,
                             void *rbuf, size_t count,
                             ompi_datatype_t *dtype, ompi_op_t *op, int root, ompi_communicator_t *comm,
                             unsigned call);
void mca_coll_loom_shm_fini(mca_coll_loom_module_t *m);
/* The protocol's steps that coll_loom_shm_alltoall.c shares: start a call (as above:
 * OMPI_ERR_NOT_AVAILABLE when the segment is off), take its call number and wait
 * policies (wl: waits that span the leaders' phase, may be NULL), and the last step of
 * a call without coordinator (opal/loom/loom_shm.h). */
int mca_coll_loom_shm_begin(mca_coll_loom_module_t *m, ompi_communicator_t *comm);
/* rank's index among its node's ranks (*me, in rank order) and their number (*n) */
void mca_coll_loom_shm_node_position(const mca_coll_loom_module_t *m, int rank, int *n, int *me);
uint32_t mca_coll_loom_shm_next_call(mca_coll_loom_module_t *m, mca_coll_loom_shm_wait_t *w,
                                     mca_coll_loom_shm_wait_t *wl);
void mca_coll_loom_shm_sym_release(mca_coll_loom_shm_t *seg, uint32_t seq, const mca_coll_loom_shm_wait_t *w);

/* Non-blocking allreduce (up to the slot size) and barrier through the segment, on a
 * communicator of one node: the protocol of the blocking call run in steps from Open
 * MPI's progress loop.  Only once a blocking call has set the segment up (that is a
 * blocking exchange), so every rank decides alike.  nb_start takes the call's number;
 * nb_progress runs what it can and returns true once the call is complete (its
 * outcome in c->rc; a barrier: count 0, no op).  A module's calls post their contributions and
 * complete in call order, each only after the one before it, so the segment's rule
 * "a rank that arrives at call t is done with every call before t" still holds and
 * blocking calls (which first complete the outstanding ones) mix freely with them. */
typedef struct {
    uint32_t seq;
    bool posted;
    size_t bytes;
    int rc;
} mca_coll_loom_shm_nb_t;
bool mca_coll_loom_shm_nb_usable(mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll, size_t bytes);
void mca_coll_loom_shm_nb_start(mca_coll_loom_module_t *m, mca_coll_loom_shm_nb_t *c, size_t bytes);
bool mca_coll_loom_shm_nb_progress(mca_coll_loom_module_t *m, mca_coll_loom_shm_nb_t *c, const void *sbuf,
                                   void *rbuf, size_t count, ompi_datatype_t *dtype, ompi_op_t *op);
/* A shared file of `bytes` for the communicator's node, beside its segment and named
 * after it with `suffix`, set up collectively like the segment (the node's leader
 * creates it, all agree, the others map it, all agree, the name goes).  0, or the
 * error (then on every rank, and nothing is mapped). */
int mca_coll_loom_shm_setup_file(mca_coll_loom_module_t *m, ompi_communicator_t *comm, const char *suffix,
                                 size_t bytes, void **base);
/* MPI_Alltoall with `direct` on a communicator of one node, through shared memory
 * (coll_loom_shm_alltoall.c); _usable: whether a call of `bytes` (the whole send
 * buffer) would run there. */
bool mca_coll_loom_shm_alltoall_usable(mca_coll_loom_module_t *m, size_t bytes);
int mca_coll_loom_shm_alltoall(mca_coll_loom_module_t *m, const void *sbuf, size_t scount, ompi_datatype_t *sdtype,
                               void *rbuf, size_t rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm);

/* The pool of freed segments, through the settings check of a communicator's first
 * call (one allreduce, MAX over uint64): _offer fills this rank's
 * MCA_COLL_LOOM_SHM_OFFER_WORDS words, _adopt reads the reduced ones (`agreed`: the
 * settings matched) and either takes the offered segments over on every rank or
 * leaves the communicator to set up its own. */
#define MCA_COLL_LOOM_SHM_OFFER_WORDS 9
void mca_coll_loom_shm_offer(mca_coll_loom_module_t *m, ompi_communicator_t *comm, uint64_t *v);
void mca_coll_loom_shm_adopt(mca_coll_loom_module_t *m, const uint64_t *v, bool agreed);
/* at component open / close: the pool starts empty / unmaps every pooled segment */
void mca_coll_loom_shm_pool_init(void);
void mca_coll_loom_shm_pool_fini(void);

#endif /* MCA_COLL_LOOM_COMPONENT_SHM_H */
