/*
 * coll/loom: `direct` alltoall on a communicator of one node, through shared memory
 * (Iakymchuk et al., section IV.B: every block goes straight to its destination, all at once,
 * and each receiver notices per source that its block is there).
 *
 * The schedule is `direct`'s (opal/loom/alg/loom_alg_direct.c); only how its transfers are
 * carried changes.  A call is one call without coordinator of the node segment's
 * protocol (opal/loom/loom_shm.h): each rank copies the other ranks' parts of its send
 * buffer to a place of its own in shared memory, raises the flag of its small (sym)
 * slot of the call, and leaves as soon as it has copied its part of every other rank's
 * out, as eager sends would let it:
 *
 *   small form   the whole send buffer fits the sym slot (P x part <= about 2 KiB);
 *   outbox form  it fits the rank's outbox (coll_loom_shm_outbox_size): a shared file
 *                of the communicator's own, mapped at its first such call, two outboxes
 *                per rank taken by the calls in turn; writing one waits only until every
 *                rank is done with the call before the previous one.
 *
 * Larger calls go point to point (the same schedule through the PML).  Two copies
 * without a system call beat one through the kernel: an alltoall by process_vm_readv
 * (btl/vader's cma) was no faster than tuned's at any size (docs/user/algorithms.md,
 * "direct and pairwise"; docs/user/performance.md, "Alltoall").
 *
 * A send type that is not contiguous is packed (MPI_IN_PLACE: the receive buffer, with
 * the receive type), a receive type that is not contiguous unpacked, so ranks may pass
 * different datatypes of equal signature, as MPI allows.  A rank whose packing fails
 * still raises its flag, with the error as the slot's status, which every reader
 * returns.
 */
#include "ompi_config.h"

#include <stdint.h>
#include <string.h>

#include "mpi.h"
#include "opal/loom/loom_copy.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

#include "coll_loom.h"
#include "coll_loom_shm.h"

/* The small form's send buffer follows a line of its own in the sym slot. */
#define LOOM_A2A_SMALL_OFF   64
#define LOOM_A2A_SMALL_BYTES (MCA_COLL_LOOM_SHM_SMALL_BYTES - LOOM_A2A_SMALL_OFF)
/* outboxes per rank, taken by the calls in turn */
#define LOOM_A2A_DEPTH 2u

typedef enum { LOOM_A2A_SMALL, LOOM_A2A_OUTBOX, LOOM_A2A_NONE } loom_a2a_form_t;

/* bytes: the whole send buffer */
static loom_a2a_form_t form_of(const mca_coll_loom_module_t *m, size_t bytes)
{
    const int box = mca_coll_loom_component.shm_outbox_size;

    if (bytes <= LOOM_A2A_SMALL_BYTES) {
        return LOOM_A2A_SMALL;
    }
    return box > 0 && bytes <= (size_t) box && m->shm.outbox_state >= 0 ? LOOM_A2A_OUTBOX : LOOM_A2A_NONE;
}

bool mca_coll_loom_shm_alltoall_usable(mca_coll_loom_module_t *m, size_t bytes)
{
    /* the same answer on every rank: the node map, the settings and the states of the
     * segment and the outboxes are agreed */
    if (!(m->have_topo && 1 == m->topo.nnodes && m->topo.P > 1 && LOOM_A2A_NONE != form_of(m, bytes))) {
        return false;
    }
    return mca_coll_loom_shm_usable(m, MCA_COLL_LOOM_COLL_ALLTOALL, bytes);
}

static bool contiguous(ompi_datatype_t *dtype)
{
    return ompi_datatype_is_contiguous_memory_layout(dtype, 2);
}

/* Where part j of a buffer of parts of `count` dtype elements starts (MPI address). */
static char *part(const void *buf, size_t j, size_t count, ompi_datatype_t *dtype)
{
    ptrdiff_t lb, extent;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    return (char *) buf + (ptrdiff_t) (j * count) * extent;
}

/* The other ranks' parts of the send buffer to `box`, part j at j x block. */
static int publish(char *box, int me, const void *sbuf, size_t scount, ompi_datatype_t *sdtype, size_t P,
                   size_t block)
{
    if (contiguous(sdtype)) {
        ptrdiff_t lb, extent, true_lb, true_extent;
        ompi_datatype_get_true_extent(sdtype, &true_lb, &true_extent);
        ompi_datatype_get_extent(sdtype, &lb, &extent);
        const char *src = (const char *) sbuf + true_lb;
        const size_t stride = scount * (size_t) extent;
        for (size_t j = 0; j < P; ++j) {
            if (j != (size_t) me) {
                mca_coll_loom_copy(box + j * block, src + j * stride, block);
            }
        }
        return OMPI_SUCCESS;
    }
    return mca_coll_loom_pack(sbuf, P * scount, sdtype, box, P * block);
}

/* This rank's part of another rank's `box` to part j of rbuf. */
static int take(const char *box, int me, void *rbuf, size_t rcount, ompi_datatype_t *rdtype, size_t j,
                size_t block)
{
    const char *src = box + (size_t) me * block;
    char *dst = part(rbuf, j, rcount, rdtype);

    if (contiguous(rdtype)) {
        ptrdiff_t lb, extent;
        ompi_datatype_get_true_extent(rdtype, &lb, &extent);
        mca_coll_loom_copy(dst + lb, src, block);
        return OMPI_SUCCESS;
    }
    return mca_coll_loom_unpack(src, block, dst, rcount, rdtype);
}

/* Part me of the send buffer to part me of the receive buffer.  Not by
 * ompi_datatype_sndrcv when both are contiguous: its memcpy takes the slow case of
 * opal/loom/loom_copy.h when the receive buffer starts 1-63 bytes after the send
 * buffer modulo 4 KiB (docs/dev/developing.md, "Performance notes"). */
static int own_part(const void *sbuf, size_t scount, ompi_datatype_t *sdtype, void *rbuf, size_t rcount,
                    ompi_datatype_t *rdtype, size_t me, size_t block)
{
    char *src = part(sbuf, me, scount, sdtype), *dst = part(rbuf, me, rcount, rdtype);

    if (contiguous(sdtype) && contiguous(rdtype)) {
        ptrdiff_t slb, rlb, extent;
        ompi_datatype_get_true_extent(sdtype, &slb, &extent);
        ompi_datatype_get_true_extent(rdtype, &rlb, &extent);
        mca_coll_loom_copy(dst + rlb, src + slb, block);
        return OMPI_SUCCESS;
    }
    return ompi_datatype_sndrcv(src, (int32_t) scount, sdtype, dst, (int32_t) rcount, rdtype);
}

/* The outboxes, at the first call that needs them (collective: every rank decides alike). */
static int outbox_setup(mca_coll_loom_module_t *m, ompi_communicator_t *comm)
{
    const size_t bytes = (size_t) m->shm.seg.n * LOOM_A2A_DEPTH * (size_t) mca_coll_loom_component.shm_outbox_size;
    void *base = NULL;
    int rc = mca_coll_loom_shm_setup_file(m, comm, "a2a", bytes, &base);

    if (OMPI_SUCCESS != rc) {
        m->shm.outbox_state = -1;
        return rc;
    }
    m->shm.outbox = base;
    m->shm.outbox_bytes = bytes;
    m->shm.outbox_state = 1;
    if (MCA_COLL_LOOM_VERBOSE(10) && 0 == ompi_comm_rank(comm)) {
        opal_output(mca_coll_loom_component.output,
                    "coll/loom: communicator %s (cid %s): alltoall outboxes, %zu bytes for %d ranks",
                    comm->c_name, mca_coll_loom_cid(comm).s, bytes, m->shm.seg.n);
    }
    return OMPI_SUCCESS;
}

/* Rank i's place for call seq: its sym slot or one of its outboxes. */
static char *box_of(const mca_coll_loom_module_t *m, loom_a2a_form_t form, int i, uint32_t seq)
{
    if (LOOM_A2A_SMALL == form) {
        return mca_coll_loom_shm_sym_slot(&m->shm.seg, i, seq) + LOOM_A2A_SMALL_OFF;
    }
    return m->shm.outbox +
           ((size_t) i * LOOM_A2A_DEPTH + seq % LOOM_A2A_DEPTH) * (size_t) mca_coll_loom_component.shm_outbox_size;
}

int mca_coll_loom_shm_alltoall(mca_coll_loom_module_t *m, const void *sbuf, size_t scount, ompi_datatype_t *sdtype,
                               void *rbuf, size_t rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm)
{
    mca_coll_loom_shm_t *seg = &m->shm.seg;
    const bool in_place = MPI_IN_PLACE == sbuf;
    mca_coll_loom_shm_wait_t w;
    size_t tsize = 0, block;
    int rc = mca_coll_loom_shm_begin(m, comm), n, me;
    loom_a2a_form_t form;
    uint32_t seq;
    bool all_there = false;

    ompi_datatype_type_size(rdtype, &tsize);
    block = rcount * tsize;
    form = form_of(m, (size_t) ompi_comm_size(comm) * block);
    if (OMPI_SUCCESS != rc || LOOM_A2A_NONE == form) {
        return OMPI_SUCCESS != rc ? rc : OMPI_ERR_NOT_AVAILABLE; /* the plan said usable: not reached */
    }
    n = seg->n;
    me = seg->me; /* one node: node order is rank order */
    if (LOOM_A2A_OUTBOX == form && 0 == m->shm.outbox_state && OMPI_SUCCESS != (rc = outbox_setup(m, comm))) {
        /* no outboxes on any rank (OMPI_ERR_NOT_AVAILABLE): this call goes point to
         * point, later ones are planned without them */
        return rc;
    }
    if (in_place) {
        sbuf = rbuf;
        scount = rcount;
        sdtype = rdtype;
    }
    seq = mca_coll_loom_shm_next_call(m, &w, NULL);

    mca_coll_loom_shm_small_enter(seg, seq, &w);
    if (LOOM_A2A_OUTBOX == form && !mca_coll_loom_shm_reached(seg->done, seq - (LOOM_A2A_DEPTH - 1u))) {
        /* this outbox was last read in call seq - DEPTH: every rank must be done with
         * it, i.e. have arrived at a later call */
        mca_coll_loom_shm_wait_arrived(seg, seq - (LOOM_A2A_DEPTH - 1u), &w);
    }
    char *mine = mca_coll_loom_shm_sym_slot(seg, me, seq);
    rc = publish(box_of(m, form, me, seq), me, sbuf, scount, sdtype, (size_t) n, block);
    mca_coll_loom_shm_set_status(mine, rc);
    mca_coll_loom_shm_sym_arrive(seg, seq);

    if (!in_place && OMPI_SUCCESS == rc) {
        rc = own_part(sbuf, scount, sdtype, rbuf, rcount, rdtype, (size_t) me, block);
    }
    /* the senders that are there already, in turn from the next rank on (each reads a
     * different sender at first), then the rest once all have arrived */
    for (int i = 1; i < n && OMPI_SUCCESS == rc; ++i) {
        const int j = (me + i) % n;

        if (!all_there && !mca_coll_loom_shm_sym_ready(seg, j, seq)) {
            mca_coll_loom_shm_sym_wait(seg, seq, me, &w);
            all_there = true;
        }
        rc = mca_coll_loom_shm_status(mca_coll_loom_shm_sym_slot(seg, j, seq));
        if (OMPI_SUCCESS == rc) {
            rc = take(box_of(m, form, j, seq), me, rbuf, rcount, rdtype, (size_t) j, block);
        }
    }
    mca_coll_loom_shm_sym_release(seg, seq, &w);
    return rc;
}
