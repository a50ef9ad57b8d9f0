/*
 * coll/loom: non-blocking and persistent collectives.  A request holds its own copy of
 * the schedule (planned once: at the call, or at MPI_*_init for a persistent request)
 * and an engine task (coll_loom_exec.c) that Open MPI's progress loop moves on.  Every
 * call reserves a tag of the communicator's non-blocking range, as libnbc does, so
 * any number of outstanding collectives, loom's or another component's, never match
 * each other's messages.  A persistent request reserves its tag once, at its _init:
 * MPI-4 matches persistent collectives in the order of their _init calls, and ranks may
 * start them in different orders (MPICH's p_order).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/runtime/opal_progress.h"
#include "opal/sys/atomic.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/request/request.h"

#include "coll_loom.h"
#include "coll_loom_exec.h"
#include "coll_loom_shm.h"
#include "coll_loom_nbc.h"
#include "coll_loom_ssp.h"

typedef struct loom_request_t {
    ompi_coll_base_nbc_request_t super;
    mca_coll_loom_task_t task;
    mca_coll_loom_sched_t sched; /* the request's copy (arrays inside mem) */
    char *mem;
    bool empty;                  /* nothing to move: completes at every start */
    int tag;                     /* a persistent request's, reserved at its _init */
    mca_coll_loom_call_t c;
    mca_coll_loom_shm_nb_t shm;  /* c.shm: the call on the node segment */
    mca_coll_loom_ssp_call_t ssp; /* c.ssp: the call on the stale-synchronous exchange */
    bool task_ready;             /* this start's task was set up (not a marked communicator's) */
    mca_coll_loom_call_run_t run; /* what this start's steps before the schedule took */
    struct loom_request_t *done_next; /* loom_progress: done, to be finished after the walk */
    int done_rc;
} loom_request_t;

static int request_free(ompi_request_t **rptr);
static int request_cancel(ompi_request_t *req, int complete);
static int request_start(size_t count, ompi_request_t **requests);

static void request_construct(loom_request_t *r)
{
    r->super.super.req_type = OMPI_REQUEST_COLL;
    r->super.super.req_status._cancelled = 0;
    r->super.super.req_free = request_free;
    r->super.super.req_cancel = request_cancel;
    r->super.super.req_start = request_start;
    r->mem = NULL;
    r->run.packed = NULL;
    r->run.tmp = NULL;
    r->c.displ = NULL;
    r->c.parts_mem = NULL;
    r->task_ready = false;
}

static OBJ_CLASS_INSTANCE(loom_request_t, ompi_coll_base_nbc_request_t, request_construct, NULL);

/* ------------------------------------------------------------------------------------ */
/* progress                                                                              */

/* Finishes a started request: its epilogue, then MPI completion. */
static void request_finish(loom_request_t *r, int rc)
{
    mca_coll_loom_call_t *c = &r->c;

    if (r->task_ready) {
        /* (a start on a communicator marked failed has no task: nothing to say) */
        if (OMPI_SUCCESS != rc) {
            mca_coll_loom_call_failed(c->module, c->comm, c->coll, rc, mca_coll_loom_task_aborted(&r->task),
                                      r->task.poison_peer);
        }
        mca_coll_loom_task_fini(&r->task);
        rc = mca_coll_loom_call_end(c, &r->run, rc);
    }
    r->super.super.req_status.MPI_ERROR = rc;
    ompi_request_complete(&r->super.super, true);
}

/* Moves r on: true once it is complete, its outcome in *rc. */
static bool request_progress(loom_request_t *r, int *rc)
{
    mca_coll_loom_call_t *c = &r->c;
    bool done;

    if (c->shm) {
        done = mca_coll_loom_shm_nb_progress(c->module, &r->shm, c->sbuf, c->rbuf, c->count, c->dtype, c->op);
        *rc = r->shm.rc;
    } else if (c->ssp) {
        done = r->ssp.done; /* the exchange moves it on (mca_coll_loom_ssp_progress) */
        *rc = r->ssp.rc;
    } else {
        done = mca_coll_loom_task_progress(&r->task);
        *rc = r->task.rc;
    }
    return done;
}

/* work that is not a request, polled by loom_progress: loom's UCX worker, the SSP
 * exchanges (added when the first one is set up) */
#define LOOM_MAX_POLLS 4
static int (*polls[LOOM_MAX_POLLS])(void);
static volatile int npolls;

/* loom's one progress callback, registered once the first request starts or something
 * asks to be polled: the polls first (an SSP call completes there, its request below),
 * then the requests.  The walk is not re-entered; the requests it found done are finished
 * after it, without the lock: a request that fails waits for its transfers, and that
 * opal_progress may start requests of this process (Open MPI's communicator creation
 * posts its agreements from progress callbacks), which take the lock. */
static int loom_progress(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    static bool busy;
    opal_list_item_t *item, *next;
    loom_request_t *done = NULL, **tail = &done;
    int completed = 0;

    for (int i = 0; i < npolls; ++i) {
        completed += polls[i]();
    }

    if (opal_list_is_empty(&cm->active)) {
        return completed;
    }
    if (opal_using_threads()) {
        if (0 != opal_mutex_trylock(&cm->active_lock)) {
            return completed;
        }
    } else if (busy) {
        return completed;
    }
    busy = true;
    for (item = opal_list_get_first(&cm->active); item != opal_list_get_end(&cm->active); item = next) {
        loom_request_t *r = (loom_request_t *) item;
        int rc;
        next = opal_list_get_next(item);
        if (request_progress(r, &rc)) {
            opal_list_remove_item(&cm->active, item);
            r->done_rc = rc;
            r->done_next = NULL;
            *tail = r;
            tail = &r->done_next;
        }
    }
    busy = false;
    if (opal_using_threads()) {
        opal_mutex_unlock(&cm->active_lock);
    }
    while (NULL != done) {
        loom_request_t *r = done;
        done = r->done_next;
        request_finish(r, r->done_rc);
        completed++;
    }
    return completed;
}

void mca_coll_loom_nbc_init(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    OBJ_CONSTRUCT(&cm->active, opal_list_t);
    OBJ_CONSTRUCT(&cm->active_lock, opal_mutex_t);
    cm->progress_registered = false;
}

void mca_coll_loom_nbc_fini(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    if (cm->progress_registered) {
        (void) opal_progress_unregister(loom_progress);
        cm->progress_registered = false;
    }
    OBJ_DESTRUCT(&cm->active);
    OBJ_DESTRUCT(&cm->active_lock);
}

void mca_coll_loom_nb_progress_register(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    OPAL_THREAD_LOCK(&cm->active_lock);
    if (!cm->progress_registered) {
        cm->progress_registered = true;
        (void) opal_progress_register(loom_progress);
    }
    OPAL_THREAD_UNLOCK(&cm->active_lock);
}

void mca_coll_loom_nb_poll_add(int (*poll)(void))
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    OPAL_THREAD_LOCK(&cm->active_lock);
    if (npolls < LOOM_MAX_POLLS) {
        polls[npolls] = poll;
        opal_atomic_wmb(); /* loom_progress reads the table without the lock */
        ++npolls;
    }
    OPAL_THREAD_UNLOCK(&cm->active_lock);
    mca_coll_loom_nb_progress_register();
}

void mca_coll_loom_nb_poll_remove(int (*poll)(void))
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    OPAL_THREAD_LOCK(&cm->active_lock);
    for (int i = 0; i < npolls; ++i) {
        if (polls[i] == poll) {
            polls[i] = polls[npolls - 1];
            --npolls;
            break;
        }
    }
    OPAL_THREAD_UNLOCK(&cm->active_lock);
}

/* ------------------------------------------------------------------------------------ */
/* requests                                                                              */

/* A started request: complete at once, or left to loom_progress. */
static int request_run(loom_request_t *r)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    int rc;

    if (request_progress(r, &rc)) {
        request_finish(r, rc);
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(!cm->progress_registered)) {
        mca_coll_loom_nb_progress_register();
    }
    OPAL_THREAD_LOCK(&cm->active_lock);
    opal_list_append(&cm->active, (opal_list_item_t *) r);
    OPAL_THREAD_UNLOCK(&cm->active_lock);
    return OMPI_SUCCESS;
}

/* One start of r: prologue (own block, packing, buffers), tag, task. */
static int request_start_one(loom_request_t *r)
{
    mca_coll_loom_call_t *c = &r->c;
    int rc, tag;

    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.super.req_complete = REQUEST_PENDING;
    r->super.super.req_status.MPI_ERROR = OMPI_SUCCESS;
    /* what request_finish releases, should this start fail before the task is set up */
    r->task.ninflight = 0;
    r->task.scratch = NULL;
    r->task.scratch_owned = false;
    r->task_ready = false;
    r->run.packed = NULL;
    r->run.tmp = NULL;
    if (r->empty) {
        request_finish(r, OMPI_SUCCESS);
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(c->module->failed)) {
        request_finish(r, OMPI_ERROR); /* marked failed: nothing is sent */
        return OMPI_SUCCESS;
    }
    if (c->ssp) {
        /* the exchange's channels have their own tags (coll_loom_ssp.c) */
        r->ssp.sbuf = c->sbuf;
        r->ssp.rbuf = c->rbuf;
        rc = mca_coll_loom_ssp_start(c->module, c->comm, c->count, c->dtype, c->op, c->call, false, &r->ssp);
        if (OMPI_SUCCESS != rc) {
            request_finish(r, rc);
            return OMPI_SUCCESS;
        }
        return request_run(r);
    }
    if (c->shm) {
        /* no message: no tag (every rank decides alike) */
        size_t tsize;
        ompi_datatype_type_size(c->dtype, &tsize);
        mca_coll_loom_shm_nb_start(c->module, &r->shm, c->count * tsize);
        return request_run(r);
    }
    tag = r->super.super.req_persistent ? r->tag : ompi_coll_base_nbc_reserve_tags(c->comm, 1);
    /* this rank's own block, the packed form, scratch buffers (coll_loom_call.c); a
     * failure is this rank's alone and its task takes its steps without data */
    rc = mca_coll_loom_call_begin(c, &r->run);
    mca_coll_loom_task_init(&r->task, NULL, &r->sched, r->run.sbuf, r->run.rbuf, r->run.count, r->run.dtype, c->op,
                            c->comm, tag, c->call, c->displ, rc, r->mem + mca_coll_loom_sched_copy_bytes(&r->sched));
    /* the communicator's transport as of this start: every rank sees the same sequence
     * of calls, and the transport is set up at a blocking one */
    r->task.tl = mca_coll_loom_call_tl(c->module, c->transport, &r->task.tl_state);
    if (c->has_parts) {
        mca_coll_loom_task_set_parts(&r->task, &c->parts);
    }
    r->task_ready = true;

    mca_coll_loom_task_start(&r->task);
    return request_run(r);
}

static int request_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        loom_request_t *r = (loom_request_t *) requests[i];
        if (OMPI_REQUEST_COLL != r->super.super.req_type || !r->super.super.req_persistent ||
            !REQUEST_COMPLETE(&r->super.super)) {
            return OMPI_ERR_REQUEST;
        }
        (void) request_start_one(r);
    }
    return OMPI_SUCCESS;
}

/* MPI: cancelling a collective request is erroneous; freeing an active one too. */
static int request_cancel(ompi_request_t *req, int complete)
{
    (void) req;
    (void) complete;
    return MPI_ERR_REQUEST;
}

static int request_free(ompi_request_t **rptr)
{
    loom_request_t *r = (loom_request_t *) *rptr;

    if (!REQUEST_COMPLETE(&r->super.super)) {
        return MPI_ERR_REQUEST;
    }
    free(r->mem);
    r->mem = NULL;
    free(r->c.displ);
    r->c.displ = NULL;
    free(r->c.parts_mem);
    r->c.parts_mem = NULL;
    for (int k = 0; k < 2; ++k) {
        if (NULL != MCA_COLL_LOOM_NBC_OBJS(&r->super)[k]) {
            OBJ_RELEASE(MCA_COLL_LOOM_NBC_OBJS(&r->super)[k]);
            MCA_COLL_LOOM_NBC_OBJS(&r->super)[k] = NULL;
        }
    }
    OBJ_RELEASE(r->c.comm);
    OMPI_REQUEST_FINI(&r->super.super);
    OBJ_RELEASE(r);
    *rptr = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static opal_object_t *datatype_obj(ompi_datatype_t *dt)
{
    return NULL != dt && !ompi_datatype_is_predefined(dt) ? &dt->super.super : NULL;
}

static void retain(loom_request_t *r, int k, opal_object_t *obj)
{
    if (NULL != obj) {
        OBJ_RETAIN(obj);
        MCA_COLL_LOOM_NBC_OBJS(&r->super)[k] = obj;
    }
}

int mca_coll_loom_nb_post(const mca_coll_loom_sched_t *s, mca_coll_loom_call_t *c, bool persistent,
                          ompi_request_t **request)
{
    loom_request_t *r;
    size_t copy_bytes;

    /* a layout the schedule cannot run: every rank knows it alike, nothing is posted */
    if (NULL != s && !c->shm && !c->ssp &&
        OMPI_SUCCESS != mca_coll_loom_task_fits(s, c->bytes ? c->ucount * c->utsize : c->count, c->displ,
                                                c->has_parts ? &c->parts : NULL, c->P)) {
        mca_coll_loom_refused(c->module, c->comm, c->coll, "the schedule cannot lay out this call's data");
        free(c->displ);
        free(c->parts_mem);
        return OMPI_ERR_NOT_AVAILABLE;
    }
    r = OBJ_NEW(loom_request_t);
    if (NULL == r) {
        free(c->displ);
        free(c->parts_mem);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OMPI_REQUEST_INIT(&r->super.super, persistent);
    r->super.super.req_mpi_object.comm = c->comm;
    /* the communicator (and with it this module) lives until the request is freed,
     * even when the program frees it with the call outstanding, as MPI allows */
    OBJ_RETAIN(c->comm);
    r->c = *c;
    r->empty = (NULL == s && !c->ssp);
    if (!r->empty && !c->shm && !c->ssp) {
        copy_bytes = mca_coll_loom_sched_copy_bytes(s);
        r->mem = malloc(copy_bytes + (size_t) s->nops * MCA_COLL_LOOM_TASK_STATE_PER_OP + 1);
        if (NULL == r->mem) {
            free(r->c.displ);
            r->c.displ = NULL;
            free(r->c.parts_mem);
            r->c.parts_mem = NULL;
            OBJ_RELEASE(c->comm);
            OBJ_RELEASE(r);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        mca_coll_loom_sched_copy_into(s, &r->sched, r->mem);
    }
    /* user ops and derived datatypes stay alive until the request is freed (held in the
     * base request's objs, released by request_free itself: the base's retain helpers
     * release after the component's free, when this request is gone already) */
    retain(r, 0, NULL != c->op && !ompi_op_is_intrinsic(c->op) ? &c->op->super : NULL);
    retain(r, 1, NULL != c->udtype ? datatype_obj(c->udtype) : datatype_obj(c->dtype));
    if (NULL != c->own_sdtype && NULL == MCA_COLL_LOOM_NBC_OBJS(&r->super)[0]) {
        retain(r, 0, datatype_obj(c->own_sdtype));
    }
    if (persistent && !r->empty && !c->shm && !c->ssp) {
        r->tag = ompi_coll_base_nbc_reserve_tags(c->comm, 1);
    }
    *request = &r->super.super;
    if (!persistent) {
        return request_start_one(r);
    }
    return OMPI_SUCCESS;
}

int mca_coll_loom_nb_vector(mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll, const void *sbuf, void *rbuf,
                            int count, ompi_datatype_t *dtype, ompi_op_t *op, int root,
                            struct ompi_communicator_t *comm, bool persistent, ompi_request_t **request)
{
    const mca_coll_loom_sched_t *s = NULL;
    mca_coll_loom_plan_t plan;
    mca_coll_loom_call_t c;
    size_t tsize = 0;
    unsigned call = 0;

    if (!mca_coll_loom_empty((size_t) count, dtype, &tsize)) {
        call = mca_coll_loom_module_call_flags(m, op, dtype);
        s = mca_coll_loom_plan_nb(m, coll, comm, (size_t) count * tsize, call, root, &plan, persistent);
        if (NULL == s) {
            return OPAL_UNLIKELY(m->failed) ? OMPI_ERROR : OMPI_ERR_NOT_AVAILABLE;
        }
    } else {
        plan = mca_coll_loom_plan_of(NULL, coll); /* nothing to move */
    }
    if (MCA_COLL_LOOM_COLL_REDUCE == coll && ompi_comm_rank(comm) != root) {
        /* the receive buffer is the root's alone (coll_loom_reduce.c) */
        rbuf = NULL;
        sbuf = MPI_IN_PLACE != sbuf ? sbuf : NULL;
    }
    mca_coll_loom_call_init(&c, m, comm, &plan, sbuf, rbuf, (size_t) count, dtype, op, call);
    c.shm = plan.shm;
    return mca_coll_loom_nb_post(s, &c, persistent, request);
}
