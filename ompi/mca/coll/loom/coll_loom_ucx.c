/*
 * coll/loom: the UCX transport (coll_loom_ucx.h).
 */
#include "ompi_config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/op/op.h"
#include "ompi/proc/proc.h"

#include <ucp/api/ucp.h>

#include "coll_loom.h"
#include "coll_loom_nbc.h"

/* One communicator on the UCX transport. */
struct mca_coll_loom_ucx_comm_t {
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
};

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

static bool direct_complete(void *req);

static bool ucx_test(void *req)
{
    if (MCA_COLL_LOOM_UCX_HANDLE_KIND(req) >= 2) {
        return direct_complete(req);
    }
    return mca_coll_loom_ucx_request_done(mca_coll_loom_ucx_request(req));
}


/* A UCP tag: the communicator's number, the sender's rank, loom's tag of the call. */
#define LOOM_UCX_CODE_BITS 22
#define LOOM_UCX_RANK_BITS 20
#define LOOM_UCX_ID_BITS 22
#define LOOM_UCX_MAX_ID ((UINT64_C(1) << LOOM_UCX_ID_BITS) - 1)

/* the settings check's first word: bits set by a rank that cannot, or that lacks a
 * member's worker address; below them the longest address */
#define LOOM_UCX_FAILED (UINT64_C(1) << 63)
#define LOOM_UCX_LACKS (UINT64_C(1) << 62)
#define LOOM_UCX_LEN_MASK UINT64_C(0xffffffff)
/* then the window's part per sender in units of 64 bytes (coll_loom_ucx_put_max) */
#define LOOM_UCX_SLOT_SHIFT 32
#define LOOM_UCX_SLOT_UNITS ((UINT64_C(1) << 30) - 1)

static struct {
    int state;                  /* 0: not tried, 1: up, -1: failed (why) */
    bool rma;                   /* puts and atomics requested (direct writes) */
    char why[160];
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    int world;                  /* MPI_COMM_WORLD's size: the vpids */
    char **addr;                /* per vpid: length (uint32_t) and the address, or NULL */
    ucp_ep_h *eps;              /* per vpid, created at first use */
    uint64_t next_id;           /* the next number this process proposes */
    uint64_t *ids;              /* numbers of this process's communicators on UCX */
    int nids, maxids;
} loom_ucx;

/* init, endpoints and the numbers; the transfers themselves take no lock (the worker
 * is thread-safe under MPI_THREAD_MULTIPLE) */
static pthread_mutex_t loom_ucx_lock = PTHREAD_MUTEX_INITIALIZER;

static int ucx_progress(void)
{
    return (int) ucp_worker_progress(loom_ucx.worker);
}

/* Progresses loom's worker until the request r (a status pointer: NULL or an error is
 * done at once) is done, and frees it. */
static void wait_and_free(ucs_status_ptr_t r)
{
    if (UCS_PTR_IS_PTR(r)) {
        while (!mca_coll_loom_ucx_request_done(r)) {
            (void) ucp_worker_progress(loom_ucx.worker);
        }
        ucp_request_free(r);
    }
}

/* Under the lock. */
static bool ucx_init(void)
{
    ucp_config_t *config = NULL;
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucs_status_t st;

    if (0 != loom_ucx.state) {
        return 1 == loom_ucx.state;
    }
    loom_ucx.state = -1;
    loom_ucx.world = ompi_comm_size(&ompi_mpi_comm_world.comm);
    /* LOOM_UCX_<VAR> sets a UCX variable for loom's worker alone (UCX_<VAR> for both) */
    st = ucp_config_read("LOOM", NULL, &config);
    if (UCS_OK != st) {
        snprintf(loom_ucx.why, sizeof(loom_ucx.why), "ucp_config_read: %s", ucs_status_string(st));
        return false;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    params.estimated_num_eps = (size_t) loom_ucx.world;
    st = ucp_init(&params, config, &loom_ucx.context);
    loom_ucx.rma = UCS_OK == st;
    if (UCS_OK != st) {
        /* tag messages alone, without direct writes */
        params.features = UCP_FEATURE_TAG;
        st = ucp_init(&params, config, &loom_ucx.context);
    }
    ucp_config_release(config);
    if (UCS_OK != st) {
        snprintf(loom_ucx.why, sizeof(loom_ucx.why), "ucp_init: %s", ucs_status_string(st));
        return false;
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = opal_using_threads() ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(loom_ucx.context, &wparams, &loom_ucx.worker);
    if (UCS_OK != st) {
        snprintf(loom_ucx.why, sizeof(loom_ucx.why), "ucp_worker_create: %s", ucs_status_string(st));
        ucp_cleanup(loom_ucx.context);
        return false;
    }
    st = ucp_worker_get_address(loom_ucx.worker, &loom_ucx.address, &loom_ucx.address_len);
    loom_ucx.addr = calloc((size_t) loom_ucx.world, sizeof(char *));
    loom_ucx.eps = calloc((size_t) loom_ucx.world, sizeof(ucp_ep_h));
    if (UCS_OK != st || NULL == loom_ucx.addr || NULL == loom_ucx.eps || loom_ucx.address_len > INT32_MAX) {
        snprintf(loom_ucx.why, sizeof(loom_ucx.why), "ucp_worker_get_address: %s",
                 UCS_OK != st ? ucs_status_string(st) : "out of memory");
        if (UCS_OK == st) {
            ucp_worker_release_address(loom_ucx.worker, loom_ucx.address);
        }
        free(loom_ucx.addr);
        free(loom_ucx.eps);
        ucp_worker_destroy(loom_ucx.worker);
        ucp_cleanup(loom_ucx.context);
        return false;
    }
    mca_coll_loom_nb_poll_add(ucx_progress);
    loom_ucx.state = 1;
    opal_output_verbose(10, mca_coll_loom_component.output,
                        "coll/loom: UCX %s: worker up (address %zu bytes%s)", ucp_get_version_string(),
                        loom_ucx.address_len, loom_ucx.rma ? "" : ", no puts or atomics");
    return true;
}

void mca_coll_loom_ucx_finalize(void)
{
    if (1 == loom_ucx.state) {
        mca_coll_loom_nb_poll_remove(ucx_progress);
        for (int v = 0; v < loom_ucx.world; ++v) {
            ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                       .flags = UCP_EP_CLOSE_FLAG_FORCE};
            if (NULL == loom_ucx.eps[v]) {
                continue;
            }
            /* MPI_Finalize's fence is behind us: no message is still on its way */
            wait_and_free(ucp_ep_close_nbx(loom_ucx.eps[v], &prm));
        }
        for (int v = 0; v < loom_ucx.world; ++v) {
            free(loom_ucx.addr[v]);
        }
        free(loom_ucx.addr);
        free(loom_ucx.eps);
        ucp_worker_release_address(loom_ucx.worker, loom_ucx.address);
        ucp_worker_destroy(loom_ucx.worker);
        ucp_cleanup(loom_ucx.context);
    }
    free(loom_ucx.ids);
    memset(&loom_ucx, 0, sizeof(loom_ucx));
}

static ucp_ep_h endpoint(uint32_t v);

static uint32_t vpid_of(ompi_group_t *group, int r)
{
    ompi_proc_t *proc = ompi_group_get_proc_ptr_raw(group, r);
    return (ompi_proc_is_sentinel(proc) ? ompi_proc_sentinel_to_name((uintptr_t) proc) : proc->super.proc_name)
        .vpid;
}

/* Why this process cannot put a communicator of P ranks on UCX, before trying UCX
 * itself (NULL: it can).  Under the lock. */
static const char *local_obstacle(int P, bool in_job)
{
    if (!in_job) {
        return "processes of another job in the communicator";
    }
    if (P > (1 << LOOM_UCX_RANK_BITS)) {
        return "more ranks than a tag can name";
    }
    if (loom_ucx.next_id > LOOM_UCX_MAX_ID) {
        return "every communicator number taken";
    }
    return NULL;
}

void mca_coll_loom_ucx_offer(struct ompi_communicator_t *comm, bool in_job, bool want, uint64_t *words)
{
    const int P = ompi_comm_size(comm);

    words[0] = words[1] = 0;
    if (!want) {
        return;
    }
    pthread_mutex_lock(&loom_ucx_lock);
    /* a spawned or connected process has no place among the vpids */
    if (NULL != local_obstacle(P, in_job) || !ucx_init()) {
        words[0] = LOOM_UCX_FAILED;
        pthread_mutex_unlock(&loom_ucx_lock);
        return;
    }
    /* distinct proposals from one process even when threads set communicators up at once */
    words[1] = loom_ucx.next_id++;
    words[0] = loom_ucx.address_len;
    if (mca_coll_loom_component.ucx_put_max > 0) {
        const uint64_t units = ((uint64_t) mca_coll_loom_component.ucx_put_max + 63) / 64;
        words[0] |= (units < LOOM_UCX_SLOT_UNITS ? units : LOOM_UCX_SLOT_UNITS) << LOOM_UCX_SLOT_SHIFT;
    }
    for (int r = 0; r < P; ++r) {
        const uint32_t v = vpid_of(comm->c_local_group, r);
        if (v >= (uint32_t) loom_ucx.world || NULL == loom_ucx.addr[v]) {
            words[0] |= LOOM_UCX_LACKS;
            break;
        }
    }
    pthread_mutex_unlock(&loom_ucx_lock);
}

/* Takes `id` for a communicator of this process: false when one has it already (threads
 * setting up communicators with other processes at once can agree on a number this
 * process already gave another communicator). */
static bool take_id(uint64_t id)
{
    bool ok = id <= LOOM_UCX_MAX_ID;

    pthread_mutex_lock(&loom_ucx_lock);
    for (int i = 0; ok && i < loom_ucx.nids; ++i) {
        ok = loom_ucx.ids[i] != id;
    }
    if (ok && loom_ucx.nids == loom_ucx.maxids) {
        const int n = loom_ucx.maxids > 0 ? 2 * loom_ucx.maxids : 16;
        uint64_t *ids = realloc(loom_ucx.ids, (size_t) n * sizeof(*ids));
        if (NULL == ids) {
            ok = false;
        } else {
            loom_ucx.ids = ids;
            loom_ucx.maxids = n;
        }
    }
    if (ok) {
        loom_ucx.ids[loom_ucx.nids++] = id;
    }
    if (id < LOOM_UCX_MAX_ID && loom_ucx.next_id <= id) {
        loom_ucx.next_id = id + 1;
    }
    pthread_mutex_unlock(&loom_ucx_lock);
    return ok;
}

static void give_id(uint64_t id)
{
    pthread_mutex_lock(&loom_ucx_lock);
    for (int i = 0; i < loom_ucx.nids; ++i) {
        if (loom_ucx.ids[i] == id) {
            loom_ucx.ids[i] = loom_ucx.ids[--loom_ucx.nids];
            break;
        }
    }
    pthread_mutex_unlock(&loom_ucx_lock);
}

/* The members' worker addresses through the previous component's allgather, each rank's
 * record being (its address's length, whether its number collided, the address).
 * Returns whether any number collided, or -1 when the exchange failed. */
static int exchange_addresses(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, size_t maxlen,
                              bool collided)
{
    const int P = ompi_comm_size(comm);
    const size_t rec = 2 * sizeof(uint32_t) + maxlen;
    char *all = malloc(rec * (size_t) (P + 1));
    char *mine = all + rec * (size_t) P;
    int any = 0, rc;

    /* rec is the same on every rank; out of memory is this rank's alone and leaves the
     * others in the allgather (noted on the issue: such a rank should still take part) */
    if (NULL == all || rec > INT_MAX) {
        free(all);
        return -1;
    }
    memset(mine, 0, rec);
    ((uint32_t *) mine)[0] = (uint32_t) loom_ucx.address_len;
    ((uint32_t *) mine)[1] = collided;
    memcpy(mine + 2 * sizeof(uint32_t), loom_ucx.address, loom_ucx.address_len);
    rc = m->previous_allgather(mine, (int) rec, &ompi_mpi_byte.dt, all, (int) rec, &ompi_mpi_byte.dt, comm,
                               m->previous_allgather_module);
    if (OMPI_SUCCESS != rc) {
        free(all);
        return -1;
    }
    pthread_mutex_lock(&loom_ucx_lock);
    for (int r = 0; r < P; ++r) {
        const char *p = all + rec * (size_t) r;
        const uint32_t v = vpid_of(comm->c_local_group, r);
        uint32_t len;
        memcpy(&len, p, sizeof(len));
        any |= 0 != ((const uint32_t *) p)[1];
        if (v < (uint32_t) loom_ucx.world && NULL == loom_ucx.addr[v] && len <= maxlen) {
            char *a = malloc(sizeof(uint32_t) + len);
            if (NULL != a) {
                memcpy(a, p, sizeof(uint32_t));
                memcpy(a + sizeof(uint32_t), p + 2 * sizeof(uint32_t), len);
                loom_ucx.addr[v] = a;
            }
        }
    }
    pthread_mutex_unlock(&loom_ucx_lock);
    free(all);
    return any;
}

/* ------------------------------------------------------------------------------------ */
/* the window for direct writes                                                          */

static void window_free(mca_coll_loom_ucx_comm_t *u)
{
    if (NULL != u->rkey) {
        for (int r = 0; r < u->size; ++r) {
            if (NULL != u->rkey[r]) {
                ucp_rkey_destroy(u->rkey[r]);
            }
        }
    }
    if (NULL != u->win_mem) {
        (void) ucp_mem_unmap(loom_ucx.context, u->win_mem);
    }
    free(u->rkey);
    free(u->raddr);
    free(u->expect);
    free(u->soff);
    u->rkey = NULL;
    u->raddr = u->expect = NULL;
    u->soff = u->roff = NULL;
    u->win_mem = NULL;
    u->win = NULL;
    u->slot = 0;
}

/* Collectively: maps this rank's window (counters, then 2 x P parts of `slot` bytes),
 * exchanges addresses and keys through the previous component and unpacks the peers'.
 * Every step that can fail on one rank is followed by an agreement, so that every rank
 * keeps a window or none does. */
static bool window_setup(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, mca_coll_loom_ucx_comm_t *u,
                         size_t slot)
{
    const int P = u->size;
    const size_t head = ((size_t) P * sizeof(uint64_t) + 63) & ~(size_t) 63;
    void *rkbuf = NULL;
    size_t rklen = 0, rec = 0;
    char *all = NULL;
    uint64_t w[2];
    bool ok;

    /* step 1: this rank's window and key */
    ok = loom_ucx.rma && slot <= (SIZE_MAX - head) / 2 / (size_t) P;
    if (ok) {
        ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                                                 UCP_MEM_MAP_PARAM_FIELD_FLAGS,
                                   .address = NULL, .length = head + 2 * (size_t) P * slot,
                                   .flags = UCP_MEM_MAP_ALLOCATE};
        ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
        ok = UCS_OK == ucp_mem_map(loom_ucx.context, &mp, &u->win_mem);
        if (!ok) {
            u->win_mem = NULL;
        }
        ok = ok && UCS_OK == ucp_mem_query(u->win_mem, &attr) &&
             UCS_OK == ucp_rkey_pack(loom_ucx.context, u->win_mem, &rkbuf, &rklen);
        u->win = ok ? attr.address : NULL;
    }
    u->rkey = ok ? calloc((size_t) P, sizeof(ucp_rkey_h)) : NULL;
    u->raddr = ok ? malloc((size_t) P * sizeof(uint64_t)) : NULL;
    u->expect = ok ? calloc((size_t) P, sizeof(uint64_t)) : NULL;
    u->soff = ok ? calloc(2 * (size_t) P, sizeof(size_t)) : NULL;
    ok = ok && NULL != u->rkey && NULL != u->raddr && NULL != u->expect && NULL != u->soff;
    if (ok) {
        memset(u->win, 0, head);
    }
    /* step 2: everybody has one, and the longest record (address, key length, key) */
    w[0] = ok ? 2 * sizeof(uint64_t) + rklen : 0;
    w[1] = !ok;
    if (OMPI_SUCCESS != m->previous_allreduce(MPI_IN_PLACE, w, 2, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op, comm,
                                              m->previous_allreduce_module)) {
        w[1] = 1;
    }
    rec = (size_t) w[0];
    if (0 == w[1]) {
        all = rec <= INT_MAX ? malloc(rec * (size_t) (P + 1)) : NULL;
        w[1] = NULL == all;
        if (OMPI_SUCCESS != m->previous_allreduce(MPI_IN_PLACE, &w[1], 1, &ompi_mpi_uint64_t.dt,
                                                  &ompi_mpi_op_max.op, comm, m->previous_allreduce_module)) {
            w[1] = 1;
        }
    }
    /* step 3: addresses and keys, every key unpacked */
    if (0 == w[1]) {
        char *mine = all + rec * (size_t) P;
        memset(mine, 0, rec);
        ((uint64_t *) mine)[0] = (uint64_t) (uintptr_t) u->win;
        ((uint64_t *) mine)[1] = rklen;
        memcpy(mine + 2 * sizeof(uint64_t), rkbuf, rklen);
        ok = OMPI_SUCCESS == m->previous_allgather(mine, (int) rec, &ompi_mpi_byte.dt, all, (int) rec,
                                                   &ompi_mpi_byte.dt, comm, m->previous_allgather_module);
        for (int r = 0; ok && r < P; ++r) {
            const uint64_t *p = (const uint64_t *) (all + rec * (size_t) r);
            ucp_ep_h ep;
            u->raddr[r] = p[0];
            if (r == u->rank) {
                continue;
            }
            ep = endpoint(u->vpid[r]);
            ok = NULL != ep && p[1] <= rec - 2 * sizeof(uint64_t) &&
                 UCS_OK == ucp_ep_rkey_unpack(ep, p + 2, &u->rkey[r]);
            if (!ok) {
                u->rkey[r] = NULL;
            }
        }
        w[1] = !ok;
        if (OMPI_SUCCESS != m->previous_allreduce(MPI_IN_PLACE, &w[1], 1, &ompi_mpi_uint64_t.dt,
                                                  &ompi_mpi_op_max.op, comm, m->previous_allreduce_module)) {
            w[1] = 1;
        }
    }
    if (NULL != rkbuf) {
        ucp_rkey_buffer_release(rkbuf);
    }
    free(all);
    if (0 != w[1]) {
        window_free(u);
        return false;
    }
    u->slot = slot;
    u->head = head;
    u->roff = u->soff + P;
    u->part = 1;
    return true;
}

static bool ucx_direct_begin(void *state)
{
    mca_coll_loom_ucx_comm_t *u = state;

    if (0 == u->slot) {
        return false;
    }
    u->part ^= 1;
    memset(u->soff, 0, 2 * (size_t) u->size * sizeof(size_t));
    return true;
}

mca_coll_loom_ucx_comm_t *mca_coll_loom_ucx_adopt(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm,
                                                  const uint64_t *words)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    const int P = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    const uint64_t id = words[1];
    mca_coll_loom_ucx_comm_t *u;
    size_t slot;
    bool mine;
    int any;

    if (0 == words[0] && 0 == words[1]) {
        return NULL; /* the PML by choice */
    }
    if (words[0] & LOOM_UCX_FAILED) {
        static bool told; /* the reason is usually the same for every communicator */
        const char *why;
        pthread_mutex_lock(&loom_ucx_lock);
        why = local_obstacle(P, m->in_job);
        if (NULL == why && 1 != loom_ucx.state) {
            why = loom_ucx.why;
        }
        pthread_mutex_unlock(&loom_ucx_lock);
        if (NULL != why || 0 == rank) {
            /* loud when asked for (coll_loom_transport ucx), not when auto tried it */
            opal_output_verbose(told || MCA_COLL_LOOM_TRANSPORT_UCX != cm->transport ? 10 : 1, cm->output,
                                "coll/loom: communicator %s (cid %s) rank %d: the UCX transport is not "
                                "available %s%s%s: its collectives use the PML",
                                comm->c_name, mca_coll_loom_cid(comm).s, rank, NULL != why ? "here (" : "on another rank",
                                NULL != why ? why : "", NULL != why ? ")" : "");
            told = true;
        }
        return NULL;
    }
    mine = take_id(id);
    if (words[0] & LOOM_UCX_LACKS) {
        any = exchange_addresses(m, comm, (size_t) (words[0] & LOOM_UCX_LEN_MASK), !mine);
    } else {
        uint64_t flag = !mine;
        any = OMPI_SUCCESS == m->previous_allreduce(MPI_IN_PLACE, &flag, 1, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                                                    comm, m->previous_allreduce_module)
                  ? 0 != flag : -1;
    }
    u = 0 == any ? calloc(1, sizeof(*u)) : NULL;
    if (NULL != u) {
        u->vpid = malloc((size_t) P * sizeof(uint32_t));
    }
    if (0 != any || NULL == u || NULL == u->vpid) {
        /* a collision (or a failed exchange) is seen by every rank alike; out of memory
         * here is this rank's alone and leaves it on the PML while the others are on UCX
         * (noted on the issue) */
        if (mine) {
            give_id(id);
        }
        if (NULL != u) {
            free(u->vpid);
            free(u);
        }
        opal_output_verbose(1, cm->output,
                            "coll/loom: communicator %s (cid %s) rank %d: could not set the UCX "
                            "transport up (%s): its collectives use the PML",
                            comm->c_name, mca_coll_loom_cid(comm).s, rank,
                            any > 0 ? "communicator number in use" : 0 == any ? "out of memory" : "exchange failed");
        return NULL;
    }
    u->id = id;
    u->size = P;
    u->rank = rank;
    u->my_bits = (id << (LOOM_UCX_RANK_BITS + LOOM_UCX_CODE_BITS)) | ((uint64_t) rank << LOOM_UCX_CODE_BITS);
    for (int r = 0; r < P; ++r) {
        u->vpid[r] = vpid_of(comm->c_local_group, r);
    }
    slot = ((words[0] >> LOOM_UCX_SLOT_SHIFT) & LOOM_UCX_SLOT_UNITS) * 64;
    if (slot > 0 && !window_setup(m, comm, u, slot)) {
        opal_output_verbose(1, cm->output,
                            "coll/loom: communicator %s (cid %s) rank %d: no window for direct writes over UCX "
                            "(%s on some rank): its messages travel as tag messages",
                            comm->c_name, mca_coll_loom_cid(comm).s, rank,
                            loom_ucx.rma ? "mapping or key exchange failed" : "no puts or atomics");
    }
    opal_output_verbose(10, cm->output,
                        "coll/loom: communicator %s (cid %s) rank %d: transport ucx (number %llu, direct writes "
                        "%zu bytes per sender)",
                        comm->c_name, mca_coll_loom_cid(comm).s, rank, (unsigned long long) id, u->slot);
    return u;
}

void mca_coll_loom_ucx_release(mca_coll_loom_ucx_comm_t *u)
{
    if (NULL == u) {
        return;
    }
    if (0 != u->slot) {
        /* this rank's writes into the peers' windows have completed before their keys go */
        ucp_request_param_t prm = {.op_attr_mask = 0};
        wait_and_free(ucp_worker_flush_nbx(loom_ucx.worker, &prm));
        window_free(u);
    }
    give_id(u->id);
    free(u->vpid);
    free(u);
}

/* ------------------------------------------------------------------------------------ */
/* transfers                                                                             */

/* loom's tags: the blocking collectives' fixed ones (-10 .. -26) as they are, the
 * non-blocking range (from MCA_COLL_BASE_TAG_NONBLOCKING_BASE down, reserved per call
 * in turn) folded above them: two calls get one code only 4 million calls apart */
static inline uint64_t tag_code(int tag)
{
    const uint64_t t = (uint64_t) -(int64_t) tag;
    const uint64_t base = (uint64_t) -(int64_t) MCA_COLL_BASE_TAG_NONBLOCKING_BASE;

    if (t < base) {
        return t & ((UINT64_C(1) << LOOM_UCX_CODE_BITS) - 1);
    }
    return base + (t - base) % ((UINT64_C(1) << LOOM_UCX_CODE_BITS) - base);
}

static ucp_ep_h endpoint(uint32_t v)
{
    ucp_ep_h ep = loom_ucx.eps[v];

    if (OPAL_LIKELY(NULL != ep)) {
        return ep;
    }
    pthread_mutex_lock(&loom_ucx_lock);
    if (NULL == loom_ucx.eps[v] && NULL != loom_ucx.addr[v]) {
        ucp_ep_params_t prm = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                               .address = (const ucp_address_t *) (loom_ucx.addr[v] + sizeof(uint32_t))};
        if (UCS_OK != ucp_ep_create(loom_ucx.worker, &prm, &ep)) {
            ep = NULL;
        }
        loom_ucx.eps[v] = ep;
    }
    ep = loom_ucx.eps[v];
    pthread_mutex_unlock(&loom_ucx_lock);
    return ep;
}

/* A transfer of a datatype that is not one contiguous run goes through a packed copy. */
typedef struct {
    void *req;          /* first: mca_coll_loom_ucx_request reads it */
    char *tmp;
    size_t bytes;
    char *buf;          /* a receive's destination (NULL: a send) */
    size_t n;
    ompi_datatype_t *dt;
} loom_ucx_packed_t;

/* A direct write in flight: the put and the endpoint's flush behind it, then the
 * notification, posted once the flush completed.  UCX 1.13's ucp_worker_fence orders
 * operations of one transport lane only, and a put and an atomic may take different
 * lanes (cma and posix on one node): a notification fenced behind its put was seen to
 * arrive first. */
typedef struct {
    void *put, *flush, *add; /* UCP requests (NULL: done at once) */
    bool notified;      /* add posted */
    int rc;
    uint64_t one;       /* the notification's operand */
    ucp_ep_h ep;
    ucp_rkey_h rkey;
    uint64_t counter;   /* the notification's address at the receiver */
    char *tmp;          /* a packed copy of the data, or NULL */
} loom_ucx_write_t;

/* A receive of a direct write: done when the sender's counter reaches `expect`. */
typedef struct {
    const uint64_t *counter;
    uint64_t expect;
    const char *from;   /* the data in the window */
    size_t bytes;
    char *buf;
    size_t n;
    ompi_datatype_t *dt;
} loom_ucx_read_t;

static bool direct_complete(void *req)
{
    void *h = (void *) ((uintptr_t) req & ~(uintptr_t) 3);

    if (3 == MCA_COLL_LOOM_UCX_HANDLE_KIND(req)) {
        const loom_ucx_read_t *rd = h;
        /* the counter is written by the transport (an atomic, in memory or by loom's
         * own worker): acquire orders the data read after it */
        return __atomic_load_n(rd->counter, __ATOMIC_ACQUIRE) >= rd->expect;
    }
    loom_ucx_write_t *wr = h;
    if (!wr->notified) {
        ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = ucp_dt_make_contig(8)};
        ucs_status_ptr_t r;
        if (!mca_coll_loom_ucx_request_done(wr->put) || !mca_coll_loom_ucx_request_done(wr->flush)) {
            return false;
        }
        r = ucp_atomic_op_nbx(wr->ep, UCP_ATOMIC_OP_ADD, &wr->one, 1, wr->counter, wr->rkey, &prm);
        wr->notified = true;
        if (UCS_PTR_IS_ERR(r)) {
            wr->rc = OMPI_ERROR; /* finish reports it */
            return true;
        }
        wr->add = r;
    }
    return mca_coll_loom_ucx_request_done(wr->add);
}

/* The direct write of `bytes` at p to `peer`'s window: the put and a flush now, the
 * notification when the flush completed (mca_coll_loom_ucx_direct_complete). */
static int direct_write(const mca_coll_loom_ucx_comm_t *u, ucp_ep_h ep, const char *p, size_t bytes, char *tmp,
                        int peer, void **req)
{
    loom_ucx_write_t *wr = malloc(sizeof(*wr));
    ucp_request_param_t prm = {.op_attr_mask = 0};
    const uint64_t base = u->raddr[peer];
    ucs_status_ptr_t r = NULL;

    if (NULL == wr) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *wr = (loom_ucx_write_t) {.one = 1, .ep = ep, .rkey = u->rkey[peer], .rc = OMPI_SUCCESS,
                              .counter = base + (uint64_t) u->rank * sizeof(uint64_t), .tmp = tmp};
    if (bytes > 0) {
        r = ucp_put_nbx(ep, p, bytes, base + u->head + ((size_t) u->part * u->size + u->rank) * u->slot + u->soff[peer],
                        u->rkey[peer], &prm);
        if (!UCS_PTR_IS_ERR(r)) {
            wr->put = r;
            r = ucp_ep_flush_nbx(ep, &prm);
        }
    }
    if (OPAL_UNLIKELY(UCS_PTR_IS_ERR(r))) {
        opal_output_verbose(1, mca_coll_loom_component.output, "coll/loom: UCX direct write to rank %d failed: %s",
                            peer, ucs_status_string(UCS_PTR_STATUS(r)));
        wait_and_free(wr->put);
        free(wr);
        return OMPI_ERROR;
    }
    wr->flush = r;
    u->soff[peer] += bytes;
    mca_coll_loom_count(&mca_coll_loom_component.ucx_puts);
    *req = (void *) ((uintptr_t) wr | 2);
    return OMPI_SUCCESS;
}

static int ucx_post(void *state, struct ompi_communicator_t *comm, bool send, bool put, char *buf, size_t n,
                    struct ompi_datatype_t *dt, int peer, int tag, void **req)
{
    const mca_coll_loom_ucx_comm_t *u = state;
    ucp_request_param_t prm = {.op_attr_mask = 0};
    loom_ucx_packed_t *pk = NULL;
    ucs_status_ptr_t r;
    size_t tsize = 0, bytes;
    char *p = buf;
    bool direct;

    (void) comm;
    ompi_datatype_type_size(dt, &tsize);
    bytes = n * tsize;
    /* a direct write when it fits what is left of this call's part: both ranks decide
     * alike, knowing the message's size and what went before it in this call */
    direct = put && bytes <= u->slot - (send ? u->soff : u->roff)[peer];
    if (direct && !send) {
        loom_ucx_read_t *rd = malloc(sizeof(*rd));
        if (NULL == rd) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        *rd = (loom_ucx_read_t) {.counter = (const uint64_t *) u->win + peer, .expect = ++u->expect[peer],
                                 .from = u->win + u->head + ((size_t) u->part * u->size + peer) * u->slot +
                                         u->roff[peer],
                                 .bytes = bytes, .buf = buf, .n = n, .dt = dt};
        u->roff[peer] += bytes;
        mca_coll_loom_count(&mca_coll_loom_component.ucx_transfers);
        *req = (void *) ((uintptr_t) rd | 3);
        return OMPI_SUCCESS;
    }
    if (n <= INT32_MAX && ompi_datatype_is_contiguous_memory_layout(dt, (int32_t) n)) {
        ptrdiff_t lb, extent;
        ompi_datatype_get_true_extent(dt, &lb, &extent);
        p = buf + lb;
    } else {
        pk = malloc(sizeof(*pk));
        if (NULL == pk || NULL == (p = malloc(bytes > 0 ? bytes : 1))) {
            free(pk);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        *pk = (loom_ucx_packed_t) {.tmp = p, .bytes = bytes, .buf = send ? NULL : buf, .n = n, .dt = dt};
        if (send) {
            const int rc = mca_coll_loom_pack(buf, n, dt, p, bytes);
            if (OMPI_SUCCESS != rc) {
                free(p);
                free(pk);
                return rc;
            }
        }
    }
    if (direct) {
        ucp_ep_h ep = endpoint(u->vpid[peer]);
        const int rc = NULL == ep ? OMPI_ERROR : direct_write(u, ep, p, bytes, NULL != pk ? p : NULL, peer, req);
        free(pk); /* a packed copy now belongs to the write, or goes below */
        if (OMPI_SUCCESS != rc && NULL != pk) {
            free(p);
        }
        if (OMPI_SUCCESS == rc) {
            mca_coll_loom_count(&mca_coll_loom_component.ucx_transfers);
        }
        return rc;
    }
    if (send) {
        ucp_ep_h ep = endpoint(u->vpid[peer]);
        r = NULL == ep ? UCS_STATUS_PTR(UCS_ERR_UNREACHABLE)
                       : ucp_tag_send_nbx(ep, p, bytes, u->my_bits | tag_code(tag), &prm);
    } else {
        const uint64_t t = (u->id << (LOOM_UCX_RANK_BITS + LOOM_UCX_CODE_BITS)) |
                           ((uint64_t) peer << LOOM_UCX_CODE_BITS) | tag_code(tag);
        /* always a request, whose length finish reads (an empty message is a peer's
         * failure): UCX does not report the length of a receive that completes at once
         * in every case */
        prm.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        r = ucp_tag_recv_nbx(loom_ucx.worker, p, bytes, t, UINT64_MAX, &prm);
    }
    if (OPAL_UNLIKELY(UCS_PTR_IS_ERR(r))) {
        opal_output_verbose(1, mca_coll_loom_component.output, "coll/loom: UCX %s to/from rank %d failed: %s",
                            send ? "send" : "receive", peer, ucs_status_string(UCS_PTR_STATUS(r)));
        if (NULL != pk) {
            free(pk->tmp);
            free(pk);
        }
        return OMPI_ERROR;
    }
    mca_coll_loom_count(&mca_coll_loom_component.ucx_transfers);
    if (NULL != pk) {
        pk->req = r;
        *req = (void *) ((uintptr_t) pk | 1);
    } else {
        *req = r;
    }
    return OMPI_SUCCESS;
}

/* Releases a direct write or the receive of one (copying the data out when `copy`). */
static int finish_direct(void *h, bool copy)
{
    void *p = (void *) ((uintptr_t) h & ~(uintptr_t) 3);
    int rc = OMPI_SUCCESS;

    if (3 == MCA_COLL_LOOM_UCX_HANDLE_KIND(h)) {
        loom_ucx_read_t *rd = p;
        if (copy) {
            if (rd->n <= INT32_MAX && ompi_datatype_is_contiguous_memory_layout(rd->dt, (int32_t) rd->n)) {
                ptrdiff_t lb, extent;
                ompi_datatype_get_true_extent(rd->dt, &lb, &extent);
                memcpy(rd->buf + lb, rd->from, rd->bytes);
            } else {
                rc = mca_coll_loom_unpack(rd->from, rd->bytes, rd->buf, rd->n, rd->dt);
            }
        }
        free(rd);
        return rc;
    }
    loom_ucx_write_t *wr = p;
    void *reqs[3] = {wr->put, wr->flush, wr->add};
    rc = wr->rc;
    for (int i = 0; i < 3; ++i) {
        if (NULL != reqs[i]) {
            if (UCS_OK != ucp_request_check_status(reqs[i])) {
                rc = OMPI_ERROR;
            }
            ucp_request_free(reqs[i]);
        }
    }
    free(wr->tmp);
    free(wr);
    return rc;
}

/* Releases a completed handle, unpacking a received packed copy when `unpack`.
 * received: NULL for a send (and on the error path); else the receive's length. */
static int finish(void *h, bool unpack, size_t *received)
{
    loom_ucx_packed_t *pk = NULL;
    void *r = h;
    int rc = OMPI_SUCCESS;

    if (MCA_COLL_LOOM_UCX_HANDLE_KIND(h) >= 2) {
        return finish_direct(h, unpack); /* the length of a direct write is not known */
    }
    if ((uintptr_t) h & 1) {
        pk = (loom_ucx_packed_t *) ((uintptr_t) h & ~(uintptr_t) 1);
        r = pk->req;
    }
    if (NULL != r) {
        ucs_status_t st;
        if (NULL != received) {
            ucp_tag_recv_info_t info = {.length = SIZE_MAX};
            st = ucp_tag_recv_request_test(r, &info);
            *received = info.length;
        } else {
            st = ucp_request_check_status(r);
        }
        ucp_request_free(r);
        if (UCS_OK != st) {
            rc = UCS_ERR_MESSAGE_TRUNCATED == st ? MPI_ERR_TRUNCATE : OMPI_ERROR;
        }
    }
    if (NULL != pk) {
        /* an empty message where data was due carries nothing to unpack */
        if (OMPI_SUCCESS == rc && unpack && NULL != pk->buf && (NULL == received || 0 != *received)) {
            rc = mca_coll_loom_unpack(pk->tmp, pk->bytes, pk->buf, pk->n, pk->dt);
        }
        free(pk->tmp);
        free(pk);
    }
    return rc;
}

static int ucx_finish(void *req, size_t *received)
{
    return finish(req, true, received);
}

static void ucx_cancel(void *req)
{
    if (2 == MCA_COLL_LOOM_UCX_HANDLE_KIND(req)) {
        /* a put cannot be cancelled: its source must stay valid until it completes */
        while (!ucx_test(req)) {
            (void) ucp_worker_progress(loom_ucx.worker);
        }
    }
    if (MCA_COLL_LOOM_UCX_HANDLE_KIND(req) >= 2) {
        (void) finish_direct(req, false);
        return;
    }
    void *r = mca_coll_loom_ucx_request(req);

    if (NULL != r && !ucx_test(r)) {
        ucp_request_cancel(loom_ucx.worker, r);
        while (!ucx_test(r)) {
            (void) ucp_worker_progress(loom_ucx.worker);
        }
    }
    (void) finish(req, false, NULL);
}

const mca_coll_loom_tl_t mca_coll_loom_tl_ucx = {
    .name = "ucx",
    .reports_length = true,
    .post = ucx_post,
    .test = ucx_test,
    .finish = ucx_finish,
    .cancel = ucx_cancel,
    .progress = ucx_progress,
    .direct_begin = ucx_direct_begin,
};
