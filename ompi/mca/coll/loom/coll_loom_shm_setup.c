/*
 * coll/loom: setting a node segment up and taking one over (coll_loom_shm.c runs the
 * calls on it).
 *
 * The segment is set up at the first call that uses it, collectively: each node's
 * leader creates the file, every rank learns through an allreduce of the previous
 * component whether all leaders succeeded, the others map it, a second allreduce
 * says whether all of them did, and the leader removes the file at once.  Nothing is
 * left in the file system even if the job is killed afterwards; the mappings go at
 * communicator free.  If anything fails, every rank of the communicator turns the
 * shared-memory path off and the node phases use point-to-point messages.
 *
 * A freed communicator's segment may also be pooled and taken over by the next
 * communicator of the same node's processes (below, "the pool of freed segments").
 */
#include "ompi_config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/op/op.h"

#include "coll_loom.h"
#include "coll_loom_shm.h"

/* ------------------------------------------------------------------------------------ */
/* setup                                                                                 */

/* This rank's index among its node's ranks (in rank order) and their number. */
void mca_coll_loom_shm_node_position(const mca_coll_loom_module_t *m, int rank, int *n, int *me)
{
    const int node = m->topo.node_of[rank];

    *n = m->topo.node_size[node];
    *me = 0;
    for (int r = 0; r < rank; ++r) {
        *me += m->topo.node_of[r] == node;
    }
}

/* The segments a process creates are named inside a directory of its own, which the
 * runtime is asked once to remove when the process ends (as it removes btl/vader's
 * segments): a segment's name exists from its creation until every rank of its node
 * has mapped it, and should the job die in between, nothing stays behind.  Asking per
 * segment cost as much as the rest of a setup (docs/dev/developing.md, "Performance
 * notes").  The directory itself is removed at component close. */
static char loom_shm_dir_made[PATH_MAX];

static int segment_dir(const char *dir)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    int rc = 0;

    OPAL_THREAD_LOCK(&cm->lock);
    if (0 != strcmp(loom_shm_dir_made, dir)) {
        if (0 != mkdir(dir, 0700) && EEXIST != errno) {
            rc = errno;
        } else {
            mca_coll_loom_register_cleanup((char *) dir);
            snprintf(loom_shm_dir_made, sizeof(loom_shm_dir_made), "%s", dir);
        }
    }
    OPAL_THREAD_UNLOCK(&cm->lock);
    return rc;
}

/* A segment that cannot be set up: the help message the first time in this process
 * (the cause, a full or missing directory, is usually the same for every communicator),
 * a line at coll_loom_verbose 1 after that. */
static void shm_failed(ompi_communicator_t *comm, int rank, const char *path, const char *step, int err)
{
    static bool told;

    if (mca_coll_loom_first_time(&told)) {
        mca_coll_loom_show_help("shm-failed", true, comm->c_name, mca_coll_loom_cid(comm).s,
                                rank, path, step, strerror(err));
    } else {
        opal_output_verbose(1, mca_coll_loom_component.output,
                            "coll/loom: communicator %s (cid %s) rank %d: shared segment %s: %s: %s; "
                            "the node phases use point-to-point messages", comm->c_name,
                            mca_coll_loom_cid(comm).s, rank, path, step, strerror(err));
    }
}

/* MIN of `ok` over the communicator, by the previous component. */
static int agree(mca_coll_loom_module_t *m, ompi_communicator_t *comm, int *ok)
{
    return m->previous_allreduce(MPI_IN_PLACE, ok, 1, &ompi_mpi_int.dt, &ompi_mpi_op_min.op, comm,
                                 m->previous_allreduce_module);
}

/* How one shared file comes into being on a node: its leader creates it, the others map
 * it (0, or *err and *what set).  The prefixes start the failure messages' step. */
typedef struct {
    int (*create)(void *ctx, const char *path, int n, int *err, const char **what);
    int (*attach)(void *ctx, const char *path, int n, int me, int *err, const char **what);
    void *ctx;
    const char *create_prefix, *attach_prefix;
} loom_file_ops_t;

/* The collective part of mapping one shared file on every node (the protocol of this
 * file's head comment), named after the node leader's process name, the communicator's
 * context id (the same on every rank) and `suffix` (NULL: none): unique among live
 * files.  OMPI_SUCCESS when every rank has it; OMPI_ERR_NOT_AVAILABLE when a rank could
 * not (each rank then undoes its own part); or the error of an agreement. */
static int map_on_every_node(mca_coll_loom_module_t *m, ompi_communicator_t *comm, const char *suffix,
                             const loom_file_ops_t *ops)
{
    const mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    const int rank = ompi_comm_rank(comm);
    const int leader = m->topo.leader[m->topo.node_of[rank]];
    const opal_process_name_t lname = ompi_group_get_proc_name(comm->c_local_group, leader);
    char dir[PATH_MAX - 64], path[PATH_MAX], step[160];
    const char *what = "";
    int n, me, ok = 1, err = 0, rc;
    bool created = false;

    mca_coll_loom_shm_node_position(m, rank, &n, &me);
    snprintf(dir, sizeof(dir), "%s/loom-%x-%x", NULL != cm->shm_dir ? cm->shm_dir : "/dev/shm",
             (unsigned) lname.jobid, (unsigned) lname.vpid);
    if (NULL != suffix) {
        snprintf(path, sizeof(path), "%s/%s-%s", dir, mca_coll_loom_cid(comm).s, suffix);
    } else {
        snprintf(path, sizeof(path), "%s/%s", dir, mca_coll_loom_cid(comm).s);
    }
    if (n >= 2 && 0 == me) {
        if (0 != (err = segment_dir(dir))) {
            what = "mkdir";
        } else if (0 == ops->create(ops->ctx, path, n, &err, &what)) {
            created = true;
        }
        if (!created) {
            ok = 0;
            snprintf(step, sizeof(step), "%s%s", ops->create_prefix, what);
            shm_failed(comm, rank, path, step, err);
        }
    }
    rc = agree(m, comm, &ok);
    /* every rank makes the second agreement or none does: a rank whose attach fails
     * below must still take part in it (else its next call's messages would meet the
     * others' allreduce) */
    const bool created_everywhere = OMPI_SUCCESS == rc && ok;
    if (created_everywhere && n >= 2 && 0 != me && 0 != ops->attach(ops->ctx, path, n, me, &err, &what)) {
        ok = 0;
        snprintf(step, sizeof(step), "%s%s", ops->attach_prefix, what);
        shm_failed(comm, rank, path, step, err);
    }
    if (created_everywhere) {
        rc = agree(m, comm, &ok);
    }
    if (created) {
        /* everyone who will ever map it has: the name is no longer needed */
        (void) mca_coll_loom_shm_unlink(path);
    }
    return OMPI_SUCCESS != rc ? rc : ok ? OMPI_SUCCESS : OMPI_ERR_NOT_AVAILABLE;
}

static int segment_create(void *ctx, const char *path, int n, int *err, const char **what)
{
    return mca_coll_loom_shm_create(ctx, path, n, (size_t) mca_coll_loom_component.shm_slot_size, err, what);
}

static int segment_attach(void *ctx, const char *path, int n, int me, int *err, const char **what)
{
    return mca_coll_loom_shm_attach(ctx, path, n, me, (size_t) mca_coll_loom_component.shm_slot_size, err,
                                    what);
}

static int setup(mca_coll_loom_module_t *m, ompi_communicator_t *comm)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    const int rank = ompi_comm_rank(comm);
    const size_t slot = (size_t) cm->shm_slot_size;
    char prefix[64];
    int n, me, rc;

    mca_coll_loom_shm_node_position(m, rank, &n, &me);
    m->shm.seq = 0;
    if (m->topo.max_per_node < 2) {
        m->shm.state = 1; /* one rank per node: no segment anywhere, nothing to agree on */
        return OMPI_SUCCESS;
    }
    snprintf(prefix, sizeof(prefix), "create (%zu bytes): ", mca_coll_loom_shm_segment_bytes(n, slot));
    const loom_file_ops_t ops = {segment_create, segment_attach, &m->shm.seg, prefix, "map: "};
    rc = map_on_every_node(m, comm, NULL, &ops);
    if (OMPI_SUCCESS != rc) {
        mca_coll_loom_shm_detach(&m->shm.seg);
        m->shm.state = -1;
        if (0 == rank) {
            opal_output_verbose(1, cm->output,
                                "coll/loom: communicator %s (cid %s): shared-memory node phases "
                                "are off (%s)", comm->c_name, mca_coll_loom_cid(comm).s,
                                OMPI_ERR_NOT_AVAILABLE != rc ? "the setup allreduce failed"
                                                             : "a node could not set up its segment");
        }
        return rc;
    }
    m->shm.state = 1;
    if (NULL != m->shm.seg.base) {
        mca_coll_loom_count(&cm->shm_segments_created);
    }
    if (MCA_COLL_LOOM_VERBOSE(10) && NULL != m->shm.seg.base && 0 == me) {
        opal_output(cm->output,
                    "coll/loom: communicator %s (cid %s) rank %d: node segment of %zu bytes for "
                    "%d ranks, slots of %zu bytes", comm->c_name, mca_coll_loom_cid(comm).s,
                    rank, m->shm.seg.bytes, n, slot);
    }
    return OMPI_SUCCESS;
}

typedef struct {
    size_t bytes;
    void **base;
} loom_plain_file_t;

static int plain_create(void *ctx, const char *path, int n, int *err, const char **what)
{
    const loom_plain_file_t *f = ctx;
    (void) n;
    return mca_coll_loom_shm_map_create(path, f->bytes, f->base, err, what);
}

static int plain_attach(void *ctx, const char *path, int n, int me, int *err, const char **what)
{
    const loom_plain_file_t *f = ctx;
    (void) n;
    (void) me;
    return mca_coll_loom_shm_map_attach(path, f->bytes, f->base, err, what);
}

int mca_coll_loom_shm_setup_file(mca_coll_loom_module_t *m, ompi_communicator_t *comm, const char *suffix,
                                 size_t bytes, void **base)
{
    loom_plain_file_t f = {bytes, base};
    const loom_file_ops_t ops = {plain_create, plain_attach, &f, "", ""};
    int rc;

    *base = NULL;
    rc = map_on_every_node(m, comm, suffix, &ops);
    if (OMPI_SUCCESS != rc && NULL != *base) {
        (void) munmap(*base, bytes);
        *base = NULL;
    }
    return rc;
}

/* Starts a call of the shared-memory variant: OMPI_SUCCESS (the call is counted),
 * OMPI_ERR_NOT_AVAILABLE (off: the caller runs the point-to-point schedule), or the
 * error of the setup. */
int mca_coll_loom_shm_begin(mca_coll_loom_module_t *m, ompi_communicator_t *comm)
{
    int rc = OMPI_SUCCESS;

    if (OPAL_UNLIKELY(m->shm.state <= 0)) {
        rc = m->shm.state < 0 ? OMPI_ERR_NOT_AVAILABLE : setup(m, comm);
    }
    if (OMPI_SUCCESS == rc) {
        mca_coll_loom_count(&mca_coll_loom_component.shm_node_phases);
    }
    return rc;
}


/* ------------------------------------------------------------------------------------ */
/* the pool of freed segments                                                            */

/* A communicator freed with a segment leaves it to the process's pool; a later
 * communicator whose node holds the same processes in the same order takes it over at
 * its settings check instead of setting one up (open, fallocate, mmap, page faults and
 * two allreduces: the cost of dozens of small calls).
 *
 * Taking over is safe only when every rank of the node hands over the same segment
 * and none of them still uses it.  A pooled segment carries the generation of the
 * communicator that created it: one pair of numbers chosen by that communicator's
 * rank 0 and shared by its segments on every node.  A process holds at most one
 * segment of a generation (its node's), so ranks of one node that offer the same
 * generation offer the same segment.  The communicator takes the segments over only
 * if every rank that shares a node with another offers one, all offer the same
 * generation and the same call number, and the settings agree; else no rank
 * takes any, and the segments stay in the pools.  A rank offers a segment only after
 * freeing its communicator, so after the check (an allreduce every rank entered) no
 * rank of the node will touch it through the old one.  The protocol's call numbers
 * continue where the old communicator left them, as if it had made the new one's
 * calls: nothing in the segment needs resetting, and no rank can run ahead of one
 * that has not yet seen a reset. */
#define LOOM_SHM_POOL_MAX 64

typedef struct {
    bool used, reserved;
    uint64_t stamp;            /* when it was pooled: the newest of equals is offered */
    uint64_t gen[2];
    uint32_t seq;
    opal_process_name_t *members; /* seg.n of them, node order */
    mca_coll_loom_shm_t seg;      /* its shape: seg.n ranks, slots of seg.slot_bytes */
} loom_pool_entry_t;

static loom_pool_entry_t loom_pool[LOOM_SHM_POOL_MAX];
static uint64_t loom_pool_clock;
static uint64_t loom_pool_gens;
static bool loom_pool_closed; /* after component close: modules freed later unmap */

static bool same_members(const opal_process_name_t *a, const opal_process_name_t *b, int n)
{
    for (int i = 0; i < n; ++i) {
        if (a[i].jobid != b[i].jobid || a[i].vpid != b[i].vpid) {
            return false;
        }
    }
    return true;
}

static void entry_drop(loom_pool_entry_t *e)
{
    mca_coll_loom_shm_detach(&e->seg);
    free(e->members);
    memset(e, 0, sizeof(*e));
}

static int pool_limit(void)
{
    const int k = mca_coll_loom_component.shm_pool;
    return k < 0 ? 0 : k > LOOM_SHM_POOL_MAX ? LOOM_SHM_POOL_MAX : k;
}

void mca_coll_loom_shm_offer(mca_coll_loom_module_t *m, ompi_communicator_t *comm, uint64_t *v)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    const int rank = ompi_comm_rank(comm);
    loom_pool_entry_t *best = NULL;
    int node, n;

    memset(v, 0, MCA_COLL_LOOM_SHM_OFFER_WORDS * sizeof(*v));
    m->shm.offer = NULL;
    if (0 == rank) {
        /* this communicator's generation, should it set up segments of its own */
        const opal_process_name_t me = OPAL_PROC_MY_NAME;
        OPAL_THREAD_LOCK(&cm->lock);
        v[1] = ++loom_pool_gens;
        OPAL_THREAD_UNLOCK(&cm->lock);
        v[0] = ((uint64_t) me.jobid << 32) | me.vpid;
    }
    if (!m->have_topo) {
        return;
    }
    node = m->topo.node_of[rank];
    n = m->topo.node_size[node];
    if (n < 2) {
        return; /* no segment on this node: no say */
    }
    if (!cm->shm || cm->shm_slot_size <= 0 || 0 == pool_limit()) {
        v[2] = 1; /* no segment to offer, none to pool later: no member list either */
        return;
    }
    if (NULL == m->shm.members) {
        m->shm.members = malloc((size_t) n * sizeof(*m->shm.members));
        if (NULL == m->shm.members) {
            v[2] = 1;
            return;
        }
        for (int r = 0, i = 0; r < m->topo.P; ++r) {
            if (m->topo.node_of[r] == node) {
                m->shm.members[i++] = ompi_group_get_proc_name(comm->c_local_group, r);
            }
        }
    }

    OPAL_THREAD_LOCK(&cm->lock);
    for (int i = 0; i < LOOM_SHM_POOL_MAX; ++i) {
        loom_pool_entry_t *e = &loom_pool[i];
        if (e->used && !e->reserved && e->seg.n == n && e->seg.slot_bytes == (size_t) cm->shm_slot_size &&
            same_members(e->members, m->shm.members, n) && (NULL == best || e->stamp > best->stamp)) {
            best = e;
        }
    }
    if (NULL != best) {
        best->reserved = true;
    }
    OPAL_THREAD_UNLOCK(&cm->lock);

    if (NULL == best) {
        v[2] = 1; /* every node that needs a segment must bring one */
        return;
    }
    m->shm.offer = best;
    /* max of x and of ~x: both equal everywhere iff every offer carries the same x */
    const uint64_t seqs = best->seq;
    v[3] = best->gen[0];
    v[4] = ~best->gen[0];
    v[5] = best->gen[1];
    v[6] = ~best->gen[1];
    v[7] = seqs;
    v[8] = ~seqs;
}

void mca_coll_loom_shm_adopt(mca_coll_loom_module_t *m, const uint64_t *v, bool agreed)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    loom_pool_entry_t *e = m->shm.offer;
    /* v[3] == ~v[4] also fails when nobody offered (both 0) */
    const bool take = agreed && 0 == v[2] && v[3] == ~v[4] && v[5] == ~v[6] && v[7] == ~v[8];

    m->shm.offer = NULL;
    m->shm.gen[0] = v[0];
    m->shm.gen[1] = v[1];
    if (!take) {
        if (NULL != e) {
            OPAL_THREAD_LOCK(&cm->lock);
            e->reserved = false;
            OPAL_THREAD_UNLOCK(&cm->lock);
        }
        return;
    }
    /* every rank: the segments are in place (none on a node of one rank) */
    m->shm.state = 1;
    m->shm.gen[0] = v[3];
    m->shm.gen[1] = v[5];
    m->shm.seq = (uint32_t) v[7];
    if (NULL != e) {
        OPAL_THREAD_LOCK(&cm->lock);
        m->shm.seg = e->seg; /* the mapping moves; only the entry goes */
        free(e->members);
        memset(e, 0, sizeof(*e));
        OPAL_THREAD_UNLOCK(&cm->lock);
        mca_coll_loom_count(&cm->shm_segments_reused);
    }
}

void mca_coll_loom_shm_fini(mca_coll_loom_module_t *m)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    loom_pool_entry_t *slot = NULL;
    const int limit = pool_limit();

    if (NULL != m->shm.offer && !loom_pool_closed) { /* offered; the check did not complete */
        OPAL_THREAD_LOCK(&cm->lock);
        ((loom_pool_entry_t *) m->shm.offer)->reserved = false;
        OPAL_THREAD_UNLOCK(&cm->lock);
        m->shm.offer = NULL;
    }
    if (1 == m->shm.state && NULL != m->shm.seg.base && NULL != m->shm.members && limit > 0 &&
        !loom_pool_closed) {
        int held = 0;
        OPAL_THREAD_LOCK(&cm->lock);
        for (int i = 0; i < LOOM_SHM_POOL_MAX; ++i) {
            loom_pool_entry_t *e = &loom_pool[i];
            held += e->used;
            if (!e->used && NULL == slot) {
                slot = e;
            }
        }
        if (held >= limit) {
            /* full: the oldest one that no check holds goes */
            loom_pool_entry_t *old = NULL;
            for (int i = 0; i < LOOM_SHM_POOL_MAX; ++i) {
                loom_pool_entry_t *e = &loom_pool[i];
                if (e->used && !e->reserved && (NULL == old || e->stamp < old->stamp)) {
                    old = e;
                }
            }
            slot = NULL;
            if (NULL != old) {
                entry_drop(old);
                slot = held - 1 < limit ? old : NULL;
            }
        }
        if (NULL != slot) {
            *slot = (loom_pool_entry_t){.used = true,
                                        .stamp = ++loom_pool_clock,
                                        .gen = {m->shm.gen[0], m->shm.gen[1]},
                                        .seq = m->shm.seq,
                                        .members = m->shm.members,
                                        .seg = m->shm.seg};
            m->shm.members = NULL;
            memset(&m->shm.seg, 0, sizeof(m->shm.seg));
        }
        OPAL_THREAD_UNLOCK(&cm->lock);
    }
    mca_coll_loom_shm_detach(&m->shm.seg);
    free(m->shm.members);
    m->shm.members = NULL;
    m->shm.state = 0;
    if (NULL != m->shm.outbox) {
        (void) munmap(m->shm.outbox, m->shm.outbox_bytes);
        m->shm.outbox = NULL;
    }
    m->shm.outbox_state = 0;
}

void mca_coll_loom_shm_pool_init(void)
{
    loom_pool_closed = false;
}

void mca_coll_loom_shm_pool_fini(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    OPAL_THREAD_LOCK(&cm->lock);
    for (int i = 0; i < LOOM_SHM_POOL_MAX; ++i) {
        if (loom_pool[i].used) {
            entry_drop(&loom_pool[i]);
        }
    }
    loom_pool_closed = true;
    /* empty by now: every segment's name goes once its node has mapped it */
    if ('\0' != loom_shm_dir_made[0]) {
        (void) rmdir(loom_shm_dir_made);
        loom_shm_dir_made[0] = '\0';
    }
    OPAL_THREAD_UNLOCK(&cm->lock);
}
