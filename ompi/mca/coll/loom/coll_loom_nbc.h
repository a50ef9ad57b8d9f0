/*
 * coll/loom: the request layer (coll_loom_nbc.c).  A non-blocking or persistent call is
 * one of loom's requests whatever runs it: a schedule on the engine, the node segment's
 * protocol, or a stale-synchronous exchange (coll_loom_ssp.h); loom's one progress
 * callback moves them all on.  The entry points describe the call (prologue and
 * epilogue data below) and post it.
 */
#ifndef MCA_COLL_LOOM_NBC_H
#define MCA_COLL_LOOM_NBC_H

#include "coll_loom.h"

/* Non-blocking and persistent calls (coll_loom_nbc.c): what one call needs besides its
 * schedule, kept by the request for every start. */
typedef struct {
    mca_coll_loom_module_t *module;
    struct ompi_communicator_t *comm;
    int P, rank;
    const void *sbuf;          /* INPUT (MPI_IN_PLACE as given) */
    void *rbuf;                /* RESULT */
    size_t count;
    ompi_datatype_t *dtype;
    ompi_op_t *op;             /* NULL: no op */
    unsigned call;
    int transport;             /* the rules' transport for it (choice.transport) */
    int coll;                  /* its collective (mca_coll_loom_coll_t), named when it fails */
    bool shm;                  /* through the node segment (plan.shm): no schedule runs */
    bool ssp;                  /* a stale-synchronous allreduce (coll_loom_ssp.h): no schedule here */
    /* reduce_scatter(_block): P+1 prefix sums of the parts (owned by the request);
     * RESULT is then a full-size scratch buffer whose part `rank` goes to `out` */
    size_t *displ;
    void *out;
    /* allgather: this rank's block, from (own_src, own_scount, own_sdtype) into own_dst
     * (own_rcount elements of udtype) at every start */
    const void *own_src;
    int own_scount;
    ompi_datatype_t *own_sdtype;
    void *own_dst;
    int own_rcount;
    /* bytes: the schedule runs on the bytes of (ubuf, ucount, udtype), packed first when
     * they are not contiguous (mca_coll_loom_exec_bytes): pack_count elements from
     * pack_src to byte pack_from, unpacked into ubuf at the end when unpack */
    /* alltoall(v): RESULT and INPUT laid out by parts (counts and displacements of
     * alltoallv copied into parts_mem, owned by the request); in_place: INPUT is a copy
     * of the first in_place_count elements of rbuf, taken at every start */
    bool has_parts;
    mca_coll_loom_parts_t parts;
    int *parts_mem;
    bool in_place;
    size_t in_place_count;
    bool bytes;
    void *ubuf;
    size_t ucount, utsize;
    ompi_datatype_t *udtype;
    const void *pack_src;
    size_t pack_count, pack_from;
    bool unpack;
} mca_coll_loom_nb_call_t;

/* Fills c for a call of (sbuf, rbuf, count, dtype, op) with no extras. */
void mca_coll_loom_nb_call_init(mca_coll_loom_nb_call_t *c, mca_coll_loom_module_t *m,
                                struct ompi_communicator_t *comm, const mca_coll_loom_plan_t *plan,
                                const void *sbuf, void *rbuf, size_t count, ompi_datatype_t *dtype, ompi_op_t *op,
                                unsigned call);
/* Makes the request of a call planned to schedule s (NULL: a call without data, which
 * completes at once) and starts it unless it is persistent.  c->displ passes to the
 * request (freed with it, or here on failure). */
int mca_coll_loom_nb_post(const mca_coll_loom_sched_t *s, mca_coll_loom_nb_call_t *c, bool persistent,
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
