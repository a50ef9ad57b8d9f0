/*
 * coll/loom: the module (one per communicator), the run-time parameters and the
 * per-communicator schedule cache.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/util/error.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"

#include "coll_loom.h"
#include "coll_loom_ssp.h"

static void loom_module_construct(mca_coll_loom_module_t *m)
{
#define LOOM_NO_PREVIOUS(name)      \
    m->previous_##name = NULL;      \
    m->previous_##name##_module = NULL;
    MCA_COLL_LOOM_FOR_EACH_BLOCKING(LOOM_NO_PREVIOUS)
    MCA_COLL_LOOM_FOR_EACH_OTHER(LOOM_NO_PREVIOUS)
#undef LOOM_NO_PREVIOUS
    m->have_topo = false;
    memset(&m->topo, 0, sizeof(m->topo));
    m->clock = 0;
    for (int i = 0; i < MCA_COLL_LOOM_SCHED_CACHE; ++i) {
        m->cache[i].used = false;
        mca_coll_loom_sched_init(&m->cache[i].sched);
    }
    memset(m->warned_refused, 0, sizeof(m->warned_refused));
    memset(m->warned_build, 0, sizeof(m->warned_build));
    memset(m->last, 0, sizeof(m->last));
    m->scratch = NULL;
    m->scratch_bytes = 0;
    m->flags_op = NULL;
    m->flags_dtype = NULL;
    m->flags_call = 0;
    m->settings_agreed = 0;
    m->ucx = NULL;
    m->transport_mode = MCA_COLL_LOOM_TRANSPORT_PML;
    m->transport_decided = false;
    m->in_job = false;
    m->failed = false;
    m->refusal_said = false;
    m->shm.state = 0;
    m->shm.eligible = 0;
    m->shm.seq = 0;
    m->shm.nb_busy = 0;
    m->shm.nb_head = 0;
    memset(&m->shm.seg, 0, sizeof(m->shm.seg));
    m->shm.outbox_state = 0;
    m->shm.outbox = NULL;
    m->shm.outbox_bytes = 0;
    m->torus.state = 0;
    m->torus.coords = NULL;
    m->shm.gen[0] = m->shm.gen[1] = 0;
    m->shm.members = NULL;
    m->shm.offer = NULL;
    m->ssp_slack = -1;
    m->ssp = NULL;
}

/* Also runs when enable failed half-way: every field is checked. */
static void loom_module_destruct(mca_coll_loom_module_t *m)
{
    mca_coll_loom_ssp_fini(m); /* before the communicator's transfers end */
    for (int i = 0; i < MCA_COLL_LOOM_SCHED_CACHE; ++i) {
        mca_coll_loom_sched_fini(&m->cache[i].sched);
        m->cache[i].used = false;
    }
    free(m->scratch);
    m->scratch = NULL;
    m->scratch_bytes = 0;
    mca_coll_loom_shm_fini(m);
    mca_coll_loom_ucx_release(m->ucx);
    m->ucx = NULL;
    mca_coll_loom_torus_free(m);
    if (m->have_topo) {
        mca_coll_loom_topo_fini(&m->topo);
        m->have_topo = false;
    }
#define LOOM_RELEASE_PREVIOUS(name)                 \
    if (NULL != m->previous_##name##_module) {      \
        OBJ_RELEASE(m->previous_##name##_module);   \
        m->previous_##name##_module = NULL;         \
    }
    MCA_COLL_LOOM_FOR_EACH_BLOCKING(LOOM_RELEASE_PREVIOUS)
    MCA_COLL_LOOM_FOR_EACH_OTHER(LOOM_RELEASE_PREVIOUS)
#undef LOOM_RELEASE_PREVIOUS
}

OBJ_CLASS_INSTANCE(mca_coll_loom_module_t, mca_coll_base_module_t, loom_module_construct,
                   loom_module_destruct);

/* ------------------------------------------------------------------------------------ */
/* run-time parameters                                                                   */

void mca_coll_loom_apply_verbosity(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    cm->output_verbosity = cm->verbose;
    opal_output_set_verbosity(cm->output, cm->verbose);
}

/* The algorithm forced for `coll`, -1 for auto.  The enumerator admits only the names
 * of algorithms serving the collective; the range check guards MPI_T writes of raw
 * integers all the same. */
int mca_coll_loom_forced_alg(mca_coll_loom_coll_t coll)
{
    const int v = mca_coll_loom_component.alg_param[coll].value;

    return v >= 0 && v < mca_coll_loom_component.nalgs && mca_coll_loom_alg_serves(v, coll) ? v : -1;
}

static int knob_effective(mca_coll_loom_knob_t *kn)
{
    int v = kn->value;

    if (OPAL_LIKELY(kn->checked && v == kn->last_value)) {
        return kn->effective;
    }
    kn->checked = true;
    kn->last_value = v;
    if (v >= kn->min && v <= kn->max) {
        kn->effective = v;
        return v;
    }
    kn->effective = kn->def;

    for (int i = 0; i < kn->nwarned; ++i) {
        if (kn->warned[i] == v) {
            return kn->def;
        }
    }
    if (kn->nwarned < MCA_COLL_LOOM_MAX_WARNED) {
        kn->warned[kn->nwarned++] = v;
    }
    mca_coll_loom_show_help("knob-out-of-range", true, kn->name, v, kn->min, kn->max,
                            kn->def);
    return kn->def;
}

void mca_coll_loom_current_knobs(int *knobs)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    int eff[MCA_COLL_LOOM_MAX_KNOBS];

    OPAL_THREAD_LOCK(&cm->lock);
    for (int k = 0; k < cm->nknobs; ++k) {
        eff[k] = knob_effective(&cm->knobs[k]);
    }
    OPAL_THREAD_UNLOCK(&cm->lock);

    for (int a = 0; a < mca_coll_loom_num_algs; ++a) {
        knobs[a] = (a < cm->nalgs && cm->alg_knob[a] >= 0) ? eff[cm->alg_knob[a]] : 0;
    }
}

/* ------------------------------------------------------------------------------------ */
/* enable                                                                                */

static void agree_on_settings(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm);

int mca_coll_loom_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    int rc;

    mca_coll_loom_sync_verbosity();

    /* Every call loom does not serve goes to the component that was selected before
     * it.  Without one for each collective loom provides, loom must not take part. */
#define LOOM_HAS_PREVIOUS(name) \
    (NULL != comm->c_coll->coll_##name && NULL != comm->c_coll->coll_##name##_module)
#define LOOM_AND_HAS_PREVIOUS(name) && LOOM_HAS_PREVIOUS(name)
    if (!(true MCA_COLL_LOOM_FOR_EACH_BLOCKING(LOOM_AND_HAS_PREVIOUS))) {
        opal_output_verbose(1, cm->output,
                            "coll/loom: communicator %s (cid %s) lacks a previous component for "
                            "one of allreduce, barrier, bcast, reduce, allgather, reduce_scatter(_block), "
                            "scan, exscan; "
                            "loom disabled there", comm->c_name, mca_coll_loom_cid(comm).s);
        return OMPI_ERROR;
    }
#undef LOOM_AND_HAS_PREVIOUS

    rc = mca_coll_loom_comm_topo(comm, &m->topo);
    if (OMPI_SUCCESS != rc) {
        opal_output_verbose(1, cm->output,
                            "coll/loom: cannot compute the topology of communicator %s (cid %s): "
                            "error %d; loom disabled there", comm->c_name,
                            mca_coll_loom_cid(comm).s, rc);
        return rc;
    }
    m->have_topo = true;

#define LOOM_SAVE_PREVIOUS(name)                                            \
    m->previous_##name = comm->c_coll->coll_##name;                         \
    m->previous_##name##_module = comm->c_coll->coll_##name##_module;       \
    OBJ_RETAIN(m->previous_##name##_module);
    MCA_COLL_LOOM_FOR_EACH_BLOCKING(LOOM_SAVE_PREVIOUS)
    /* a form no earlier component provides is left alone: its slot stays as it is */
#define LOOM_SAVE_OR_LEAVE(name)                   \
    if (LOOM_HAS_PREVIOUS(name)) {                 \
        LOOM_SAVE_PREVIOUS(name)                   \
    } else {                                       \
        m->super.coll_##name = NULL;               \
    }
    MCA_COLL_LOOM_FOR_EACH_OTHER(LOOM_SAVE_OR_LEAVE)
#undef LOOM_SAVE_OR_LEAVE
#undef LOOM_HAS_PREVIOUS
#undef LOOM_SAVE_PREVIOUS

    m->in_job = mca_coll_loom_comm_in_job(comm);
    mca_coll_loom_thresholds_enable(m, comm);
    mca_coll_loom_torus_enable(m, comm);
    /* MPI_COMM_WORLD compares the settings of every process of the job now, inside
     * MPI_Init, where a blocking exchange is harmless: a non-blocking call must never
     * wait for one (mca_coll_loom_plan_nb) */
    if (comm == &ompi_mpi_comm_world.comm) {
        agree_on_settings(m, comm);
        cm->job_agreed = m->settings_agreed;
    }

    if (MCA_COLL_LOOM_VERBOSE(10)) {
        char desc[512];
        mca_coll_loom_topo_describe(&m->topo, desc, sizeof(desc));
        opal_output(cm->output, "coll/loom: communicator %s (cid %s) rank %d: %s", comm->c_name,
                    mca_coll_loom_cid(comm).s, ompi_comm_rank(comm), desc);
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------------------ */
/* per-call planning and the schedule cache                                              */

/* last[] of the blocking (0) or non-blocking (1) form of a collective */
#define LOOM_FORM(call) (0 != ((call) & MCA_COLL_LOOM_CALL_NB))

static void print_sched_line(const char *line, void *ctx)
{
    (void) ctx;
    opal_output(mca_coll_loom_component.output, "coll/loom:   %s", line);
}

static mca_coll_loom_sched_entry_t *cache_get(mca_coll_loom_module_t *m,
                                              const mca_coll_loom_params_t *params, int alg)
{
    mca_coll_loom_sched_entry_t *e, *victim = NULL;

    for (int i = 0; i < MCA_COLL_LOOM_SCHED_CACHE; ++i) {
        e = &m->cache[i];
        if (e->used && e->alg == alg && e->knob == params->knob && e->call == params->call &&
            e->coll == params->coll && e->root == params->root && e->segs == params->segs &&
            e->leaders_only == params->leaders_only) {
            e->stamp = ++m->clock;
            return e;
        }
        if (!e->used) {
            if (NULL == victim || victim->used) {
                victim = e;
            }
        } else if (NULL == victim || (victim->used && e->stamp < victim->stamp)) {
            victim = e;
        }
    }

    /* miss: build into a free entry, or replace the least recently used one */
    e = victim;
    e->used = true;
    e->alg = alg;
    e->knob = params->knob;
    e->call = params->call;
    e->coll = params->coll;
    e->root = params->root;
    e->segs = params->segs;
    e->leaders_only = params->leaders_only;
    e->stamp = ++m->clock;
    e->rc = mca_coll_loom_alg_build(alg, &e->sched, params);
    if (MCA_COLL_LOOM_OK == e->rc && MCA_COLL_LOOM_VERBOSE(30)) {
        opal_output(mca_coll_loom_component.output,
                    "coll/loom: rank %d: %s schedule of '%s' (knob %d, segs %d, root %d, P=%d): "
                    "%d ops, %d rounds, %d slots",
                    params->rank, mca_coll_loom_coll_name(params->coll), mca_coll_loom_algs[alg].name,
                    params->knob, params->segs, params->root, params->P, e->sched.nops,
                    e->sched.rounds, e->sched.nslots);
        mca_coll_loom_sched_print(&e->sched, print_sched_line, NULL);
    }
    return e;
}

void mca_coll_loom_mark_failed(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, int coll, int rc)
{
    if (OMPI_SUCCESS == rc || OMPI_ERR_NOT_AVAILABLE == rc || m->failed) {
        return;
    }
    m->failed = true;
    mca_coll_loom_show_help("collective-failed", true, coll >= 0 ? mca_coll_loom_coll_name((mca_coll_loom_coll_t) coll) : "a collective", comm->c_name,
                            mca_coll_loom_cid(comm).s, ompi_comm_rank(comm), rc, opal_strerror(rc));
}

void mca_coll_loom_refused(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, int coll, const char *why)
{
    if (MCA_COLL_LOOM_VERBOSE(1) && !m->refusal_said) {
        m->refusal_said = true;
        opal_output(mca_coll_loom_component.output,
                    "coll/loom: %s on communicator %s (cid %s): %s; the call goes to the previous "
                    "component on every rank (said once per communicator)",
                    mca_coll_loom_coll_name((mca_coll_loom_coll_t) coll), comm->c_name, mca_coll_loom_cid(comm).s,
                    why);
    }
}

void mca_coll_loom_call_failed(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, int coll, int rc,
                               bool aborted, int from_peer)
{
    if (OMPI_SUCCESS == rc) {
        return;
    }
    if (aborted) {
        mca_coll_loom_mark_failed(m, comm, coll, rc);
        return;
    }
    if (MCA_COLL_LOOM_VERBOSE(1)) {
        char why[64];
        if (from_peer >= 0) {
            snprintf(why, sizeof(why), "a failure that reached it from rank %d", from_peer);
        } else {
            snprintf(why, sizeof(why), "its own error %d (%s)", rc, opal_strerror(rc));
        }
        opal_output(mca_coll_loom_component.output,
                    "coll/loom: %s on communicator %s (cid %s) failed on rank %d: %s. Every rank "
                    "finished the call (its messages carried no data past the failure), the ranks "
                    "whose result depends on it return an error, and the communicator stays usable",
                    mca_coll_loom_coll_name((mca_coll_loom_coll_t) coll), comm->c_name,
                    mca_coll_loom_cid(comm).s, ompi_comm_rank(comm), why);
    }
}

static __opal_attribute_noinline__ void print_call(const mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll,
                       struct ompi_communicator_t *comm, size_t bytes, unsigned call,
                       const mca_coll_loom_choice_t *choice, const char *note)
{
    char knob[48] = "", why[96];
    /* call shape: Commutative, Exact, Idempotent, inVertible, Shared-memory node phases */
    const char flags[6] = {(call & MCA_COLL_LOOM_CALL_COMMUTATIVE) ? 'C' : '-',
                           (call & MCA_COLL_LOOM_CALL_EXACT) ? 'E' : '-',
                           (call & MCA_COLL_LOOM_CALL_IDEMPOTENT) ? 'I' : '-',
                           (call & MCA_COLL_LOOM_CALL_INVERTIBLE) ? 'V' : '-',
                           (call & MCA_COLL_LOOM_CALL_SHM) ? 'S' : '-', '\0'};
    const char *alg = "previous component";
    void *tl_state;
    const mca_coll_loom_tl_t *tl = mca_coll_loom_call_tl(m, choice->transport, &tl_state);

    if (choice->alg >= 0) {
        alg = mca_coll_loom_algs[choice->alg].name;
        if (NULL != mca_coll_loom_algs[choice->alg].knob) {
            snprintf(knob, sizeof(knob), " %s=%d", mca_coll_loom_algs[choice->alg].knob,
                     choice->knob);
        }
    }
    if (NULL != choice->rule && choice->rule->line > 0) {
        snprintf(why, sizeof(why), "%s: rules file line %d", NULL != choice->why ? choice->why : "rule",
                 choice->rule->line);
    } else if (NULL != choice->rule) {
        snprintf(why, sizeof(why), "%s: built-in rule #%d", NULL != choice->why ? choice->why : "rule",
                 (int) (choice->rule - mca_coll_loom_builtin_rules));
    } else {
        snprintf(why, sizeof(why), "%s", NULL != choice->why ? choice->why : "?");
    }
    opal_output(mca_coll_loom_component.output,
                "coll/loom: %s%s cid %s rank %d: bytes=%zu P=%d nodes=%d rpn=%d call=%s -> %s%s%s%s (%s%s%s%s)",
                (call & MCA_COLL_LOOM_CALL_NB) ? "i" : "", mca_coll_loom_coll_name(coll), mca_coll_loom_cid(comm).s, ompi_comm_rank(comm),
                bytes, ompi_comm_size(comm), m->have_topo ? m->topo.nnodes : 0,
                m->have_topo ? m->topo.max_per_node : 0, flags, alg, knob,
                choice->alg >= 0 && &mca_coll_loom_tl_pml != tl ? " over " : "",
                choice->alg >= 0 && &mca_coll_loom_tl_pml != tl ? tl->name : "", why,
                NULL != choice->refused ? "; forced algorithm refused: " : "",
                NULL != choice->refused ? choice->refused : "", NULL != note ? note : "");
}

/* The run-time settings a decision depends on, as the MCA variable system stores them
 * (MPI_T may change them between calls).  Read before deciding, so a change made while
 * deciding makes the next call decide again. */
typedef struct {
    int forced_value;           /* coll_loom_<coll>_algorithm as stored */
    int knob_value[MCA_COLL_LOOM_MAX_KNOBS];
} loom_settings_t;

static void read_settings(mca_coll_loom_coll_t coll, loom_settings_t *st)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    st->forced_value = cm->alg_param[coll].value;
    for (int k = 0; k < cm->nknobs; ++k) {
        st->knob_value[k] = cm->knobs[k].value;
    }
}

/* Same raw settings as when the last decision was made: the same forced algorithm and
 * knobs follow, so the decision stands (any warning was printed then). */
static inline bool settings_unchanged(const mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll, unsigned call)
{
    const mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    if (cm->alg_param[coll].value != m->last[LOOM_FORM(call)][coll].forced) {
        return false;
    }
    for (int k = 0; k < cm->nknobs; ++k) {
        if (cm->knobs[k].value != m->last[LOOM_FORM(call)][coll].knob_value[k]) {
            return false;
        }
    }
    return true;
}

static void remember(mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll, size_t bytes,
                     unsigned call, int root, const loom_settings_t *st,
                     const mca_coll_loom_choice_t *choice, mca_coll_loom_sched_entry_t *e)
{
    m->last[LOOM_FORM(call)][coll].valid = true;
    m->last[LOOM_FORM(call)][coll].forced = st->forced_value;
    m->last[LOOM_FORM(call)][coll].bytes = bytes;
    m->last[LOOM_FORM(call)][coll].call = call;
    m->last[LOOM_FORM(call)][coll].root = root;
    memcpy(m->last[LOOM_FORM(call)][coll].knob_value, st->knob_value,
           (size_t) mca_coll_loom_component.nknobs * sizeof(int));
    m->last[LOOM_FORM(call)][coll].choice = *choice;
    m->last[LOOM_FORM(call)][coll].entry = e;
}

/* Ranks that decide with different rules or parameters (a rules file missing on one
 * node, an MPMD launch with different --mca values, another loom build) would run
 * schedules that do not match: a hang, or a wrong result when the messages happen to
 * fit.  The first call on a communicator compares the fingerprints of all ranks with
 * one allreduce of the previous component (every rank gets here at the same call:
 * nothing has been decided yet).  When they differ, every call on the communicator
 * goes to the previous component, and the user is told why. */
/* Words of that allreduce.  The count must not change from one loom build to the next:
 * ranks of different builds then still agree on the message, see their fingerprints
 * differ (the fingerprint hashes the build's rules and segment protocol) and hand every
 * call to the previous component, where a different count would make the allreduce
 * itself erroneous.  Room for the pool's offers and for later use (zero). */
#define LOOM_SETTINGS_WORDS 16
/* where the node partition's fingerprint and its complement go */
#define LOOM_SETTINGS_TOPO 12
/* where the transport's words go (mca_coll_loom_ucx_offer) */
#define LOOM_SETTINGS_UCX 14

/* Whether a communicator sets loom's UCX worker up: with coll_loom_transport ucx always;
 * with auto where a transport rule may choose it, i.e. between nodes, unless the PML is
 * ucx itself (both paths then measured at parity).  The same on every rank: the transport
 * is in the settings' fingerprint, the PML is the job's, and the node partition is the
 * one every decision assumes the same (the settings check compares it). */
static bool ucx_wanted(const mca_coll_loom_module_t *m)
{
    const int tr = mca_coll_loom_component.transport;

    return MCA_COLL_LOOM_TRANSPORT_UCX == tr ||
           (MCA_COLL_LOOM_TRANSPORT_AUTO == tr && !mca_coll_loom_component.pml_is_ucx && m->have_topo &&
            m->topo.nnodes >= 2);
}

static void agree_on_settings(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    static bool told_rank0, told_differ;
    const int rank = ompi_comm_rank(comm);
    const uint64_t mine = mca_coll_loom_settings_fingerprint();
    /* max of mine, max of ~mine (= ~min), rank 0's; then the node segments' pool */
    uint64_t v[LOOM_SETTINGS_WORDS] = {mine, ~mine, 0 == rank ? mine : 0};
    /* the partition into nodes this rank derived (1: none), which every decision and
     * the node segment assume to be the same on every rank: a rank that could not
     * learn a peer's host name puts that peer on a node of its own */
    const uint64_t topo = m->have_topo ? mca_coll_loom_topo_fingerprint(&m->topo) : 1;
    char rules[300];
    bool same_topo;
    int rc;

    _Static_assert(LOOM_SETTINGS_TOPO + 2 <= LOOM_SETTINGS_UCX &&
                       LOOM_SETTINGS_UCX + MCA_COLL_LOOM_UCX_OFFER_WORDS <= LOOM_SETTINGS_WORDS &&
                       3 + MCA_COLL_LOOM_SHM_OFFER_WORDS <= LOOM_SETTINGS_TOPO,
                   "the settings check's words");
    v[LOOM_SETTINGS_TOPO] = topo;
    v[LOOM_SETTINGS_TOPO + 1] = ~topo;
    mca_coll_loom_shm_offer(m, comm, v + 3);
    mca_coll_loom_ucx_offer(comm, m->in_job, ucx_wanted(m), v + LOOM_SETTINGS_UCX);
    rc = m->previous_allreduce(MPI_IN_PLACE, v, LOOM_SETTINGS_WORDS, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                               comm, m->previous_allreduce_module);
    if (OMPI_SUCCESS != rc) {
        /* no loom call will follow on this communicator: the offered segment goes back
         * to the pool now, for the next communicator of this node's ranks */
        const uint64_t none[MCA_COLL_LOOM_SHM_OFFER_WORDS] = {0};
        mca_coll_loom_shm_adopt(m, none, false);
        m->settings_agreed = -1;
        mca_coll_loom_show_help("settings-compare-failed", true, comm->c_name,
                                mca_coll_loom_cid(comm).s, rc);
        return;
    }
    same_topo = v[LOOM_SETTINGS_TOPO] == ~v[LOOM_SETTINGS_TOPO + 1];
    mca_coll_loom_shm_adopt(m, v + 3, v[0] == ~v[1] && same_topo);
    if (v[0] == ~v[1] && same_topo) {
        m->settings_agreed = 1;
        /* every rank asked for the same transport (it is in the fingerprint) */
        m->ucx = mca_coll_loom_ucx_adopt(m, comm, v + LOOM_SETTINGS_UCX);
        m->transport_mode = cm->transport;
        m->transport_decided = true;
        /* every rank has the same torus source: coordinates from the environment are
         * exchanged now, on all of them */
        (void) mca_coll_loom_torus_agree(m, comm);
        return;
    }
    m->settings_agreed = -1;
    if (v[0] == ~v[1]) {
        static bool told_topo;
        if (!told_topo && (0 == rank || MCA_COLL_LOOM_VERBOSE(1))) {
            char shape[200];
            told_topo = true;
            if (m->have_topo) {
                mca_coll_loom_topo_describe(&m->topo, shape, sizeof(shape));
            } else {
                snprintf(shape, sizeof(shape), "none");
            }
            mca_coll_loom_show_help("nodes-differ", true, comm->c_name,
                                    mca_coll_loom_cid(comm).s, rank, opal_process_info.nodename, shape);
        }
        return;
    }
    if (NULL != cm->rules_file && '\0' != cm->rules_file[0]) {
        snprintf(rules, sizeof(rules), "rules file '%s' (%d rule%s in force)", cm->rules_file,
                 cm->rules.nrules, 1 == cm->rules.nrules ? "" : "s");
    } else {
        snprintf(rules, sizeof(rules), "no rules file");
    }

    /* once per process: a mismatch is usually the same on every communicator */
    if (0 == rank && !told_rank0) {
        told_rank0 = true;
        mca_coll_loom_show_help("settings-differ", true, comm->c_name,
                                mca_coll_loom_cid(comm).s, (unsigned long long) mine, rules);
    }
    /* a rank that differs from rank 0 says where it runs: on its node's lowest rank at
     * verbosity 0, on every rank at 1 */
    if (mine != v[2] && !told_differ &&
        (MCA_COLL_LOOM_VERBOSE(1) ||
         (m->have_topo && m->topo.leader[m->topo.node_of[rank]] == rank))) {
        told_differ = true;
        mca_coll_loom_show_help("settings-differ-rank", false, comm->c_name, rank,
                                opal_process_info.nodename, (unsigned long long) mine, rules,
                                (unsigned long long) v[2]);
    }
}

/* The transport of a communicator whose settings were taken from MPI_COMM_WORLD's check
 * (its first calls were non-blocking): decided at its first blocking call, which every
 * rank makes at the same point.  The PML needs no exchange. */
static void decide_transport(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm)
{
    uint64_t v[MCA_COLL_LOOM_UCX_OFFER_WORDS];

    m->transport_decided = true;
    m->transport_mode = mca_coll_loom_component.transport;
    mca_coll_loom_ucx_offer(comm, m->in_job, ucx_wanted(m), v);
    if (0 == v[0] && 0 == v[1]) {
        return; /* the same on every rank: the transport is in the settings' fingerprint */
    }
    if (OMPI_SUCCESS != m->previous_allreduce(MPI_IN_PLACE, v, MCA_COLL_LOOM_UCX_OFFER_WORDS, &ompi_mpi_uint64_t.dt,
                                              &ompi_mpi_op_max.op, comm, m->previous_allreduce_module)) {
        return;
    }
    m->ucx = mca_coll_loom_ucx_adopt(m, comm, v);
}

/* What a communicator's first blocking call settles, collectively: every rank makes it
 * at the same point of the communicator's sequence of calls. */
static inline void blocking_call_setup(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm)
{
    if (OPAL_UNLIKELY(0 == m->settings_agreed)) {
        agree_on_settings(m, comm);
    } else if (OPAL_UNLIKELY(!m->transport_decided) && m->settings_agreed > 0) {
        decide_transport(m, comm);
    }
}

/* Decides a call shape or settings not seen in the last call of this collective; kept
 * out of line so that the repeated call (plan_call) stays short. */
static __attribute__((noinline)) const mca_coll_loom_sched_t *
plan_decide(mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll, struct ompi_communicator_t *comm,
            size_t bytes, unsigned call, int root, mca_coll_loom_choice_t *choice)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    int knobs[mca_coll_loom_num_algs > 0 ? mca_coll_loom_num_algs : 1];
    mca_coll_loom_params_t params = {
        .P = ompi_comm_size(comm),
        .nodes = m->have_topo ? m->topo.nnodes : 0,
        .rpn = m->have_topo ? m->topo.max_per_node : 0,
        .rank = ompi_comm_rank(comm),
        .root = root,
        .knob = 0,
        .call = call,
        .coll = coll,
        .node_of = m->have_topo ? m->topo.node_of : NULL,
        .torus = 1 == m->torus.state ? &m->torus.shape : NULL,
        .torus_coords = 1 == m->torus.state ? m->torus.coords : NULL,
    };
    mca_coll_loom_sched_entry_t *e;
    loom_settings_t st;
    int forced;

    m->last[LOOM_FORM(call)][coll].valid = false;

    read_settings(coll, &st);
    if (OPAL_UNLIKELY(m->settings_agreed <= 0)) {
        if (0 == m->settings_agreed) {
            agree_on_settings(m, comm);
        }
        if (m->settings_agreed < 0) {
            *choice = (mca_coll_loom_choice_t){.alg = -1, .why = "settings or node maps differ between ranks"};
            remember(m, coll, bytes, call, root, &st, choice, NULL);
            if (MCA_COLL_LOOM_VERBOSE(20)) {
                print_call(m, coll, comm, bytes, call, choice, NULL);
            }
            return NULL;
        }
    }
    forced = mca_coll_loom_forced_alg(coll);
    mca_coll_loom_current_knobs(knobs);
    mca_coll_loom_decide(coll, bytes, &params, knobs, forced, cm->rules.rules, cm->rules.nrules, choice);

    if (NULL != choice->refused && forced >= 0 && m->warned_refused[coll] != forced + 1) {
        m->warned_refused[coll] = forced + 1;
        if (MCA_COLL_LOOM_VERBOSE(1)) {
            char what[160];
            snprintf(what, sizeof(what), "%zu bytes on %d ranks; served by %s%s%s instead", bytes,
                     params.P, choice->alg >= 0 ? "'" : "",
                     choice->alg >= 0 ? mca_coll_loom_algs[choice->alg].name : "the previous component",
                     choice->alg >= 0 ? "'" : "");
            mca_coll_loom_show_help("forced-refused", true, mca_coll_loom_coll_name(coll),
                                    mca_coll_loom_algs[forced].name, what, choice->refused);
        }
    }

    /* an index the component does not know (larger than its tables) is not run */
    if (choice->alg < 0 || choice->alg >= cm->nalgs) {
        choice->alg = -1;
        remember(m, coll, bytes, call, root, &st, choice, NULL);
        if (MCA_COLL_LOOM_VERBOSE(20)) {
            print_call(m, coll, comm, bytes, call, choice, NULL);
        }
        return NULL;
    }

    params.knob = choice->knob;
    params.call &= ~MCA_COLL_LOOM_CALL_NB; /* the same schedule serves every form */
    if (mca_coll_loom_algs[choice->alg].pipelined) {
        params.segs = mca_coll_loom_pipeline_segs(choice->alg, coll, params.P, bytes, choice->knob);
    }
    e = cache_get(m, &params, choice->alg);
    if (MCA_COLL_LOOM_OK != e->rc) {
        /* memory that ran out on this rank alone: the others run the schedule, and this
         * rank must not run the previous component's, whose messages carry the same tags;
         * the entry point returns the error (the other failures are the same on every
         * rank: test_sched builds every schedule of every rank) */
        if (MCA_COLL_LOOM_ERR_NOMEM == e->rc) {
            mca_coll_loom_mark_failed(m, comm, coll, OMPI_ERR_OUT_OF_RESOURCE);
            choice->alg = -1;
            return NULL;
        }
        if (!m->warned_build[coll]) {
            m->warned_build[coll] = true;
            opal_output_verbose(1, cm->output,
                                "coll/loom: cannot build the '%s' schedule for %s (P=%d, rank %d, "
                                "knob %d): core error %d; using the previous component",
                                mca_coll_loom_algs[choice->alg].name, mca_coll_loom_coll_name(coll),
                                params.P, params.rank, params.knob, e->rc);
        }
        if (MCA_COLL_LOOM_VERBOSE(20)) {
            print_call(m, coll, comm, bytes, call, choice,
                       "; schedule build failed, previous component");
        }
        choice->alg = -1;
        return NULL;
    }

    remember(m, coll, bytes, call, root, &st, choice, e);
    if (MCA_COLL_LOOM_VERBOSE(20)) {
        print_call(m, coll, comm, bytes, call, choice, NULL);
    }
    return &e->sched;
}

static inline __opal_attribute_always_inline__ const mca_coll_loom_sched_t *plan_call(mca_coll_loom_module_t *m,
                                                     mca_coll_loom_coll_t coll,
                                                     struct ompi_communicator_t *comm,
                                                     size_t bytes, unsigned call, int root,
                                                     mca_coll_loom_choice_t *choice)
{
    mca_coll_loom_sched_entry_t *e;

    mca_coll_loom_sync_verbosity();

    /* same shape and settings as the previous call of this collective: same answer
     * (the cached schedule entry is checked, another shape may have replaced it).  This
     * is every call of a loop; a call loom leaves to the previous component pays only
     * this test. */
    if (m->last[LOOM_FORM(call)][coll].valid && m->last[LOOM_FORM(call)][coll].bytes == bytes && m->last[LOOM_FORM(call)][coll].call == call &&
        m->last[LOOM_FORM(call)][coll].root == root && settings_unchanged(m, coll, call)) {
        e = m->last[LOOM_FORM(call)][coll].entry;
        *choice = m->last[LOOM_FORM(call)][coll].choice;
        if (NULL == e) {
            if (OPAL_UNLIKELY(MCA_COLL_LOOM_VERBOSE(20))) {
                print_call(m, coll, comm, bytes, call, choice, NULL);
            }
            return NULL;
        }
        if (e->used && e->alg == choice->alg && e->knob == choice->knob &&
            e->call == (call & ~MCA_COLL_LOOM_CALL_NB) &&
            e->coll == (int) coll && e->root == root && !e->leaders_only) {
            e->stamp = ++m->clock;
            if (OPAL_UNLIKELY(MCA_COLL_LOOM_VERBOSE(20))) {
                print_call(m, coll, comm, bytes, call, choice, NULL);
            }
            return &e->sched;
        }
    }
    return plan_decide(m, coll, comm, bytes, call, root, choice);
}

/* Non-blocking and persistent calls: the node segment serves the small allreduces of
 * one node once a blocking call has set it up (mca_coll_loom_shm_nb_usable); other
 * calls are decided as calls without it, and run point to point. */
const mca_coll_loom_sched_t *mca_coll_loom_plan_nb(mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll,
                                                   struct ompi_communicator_t *comm, size_t bytes,
                                                   unsigned call, int root, mca_coll_loom_plan_t *plan,
                                                   bool persistent)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    mca_coll_loom_choice_t *choice = &plan->choice;
    const mca_coll_loom_sched_t *s;

    plan->sched = NULL;
    plan->coll = coll;
    plan->shm = false;
    if (OPAL_UNLIKELY(m->failed)) {
        choice->alg = -1;
        choice->transport = 0;
        return NULL;
    }
    /* No settings check here: it is a blocking exchange, and MPI lets ranks start
     * their first non-blocking calls on different communicators in different orders
     * (the crossed starts of test_nonblocking, an NBX exchange's MPI_Ibarrier): a rank
     * waiting in it could wait forever.  The settings are the process's, so when every
     * process of the job agreed at MPI_Init (MPI_COMM_WORLD) and this communicator
     * holds processes of the job only, they agree here too.  Otherwise non-blocking
     * calls go to the previous component until a blocking call has compared them:
     * the same answer on every rank, as all see the same sequence of calls. */
    if (OPAL_UNLIKELY(0 == m->settings_agreed)) {
        if (1 == cm->job_agreed && m->in_job) {
            m->settings_agreed = 1;
        } else {
            *choice = (mca_coll_loom_choice_t){.alg = -1, .why = "settings not compared yet on this communicator"};
            if (MCA_COLL_LOOM_VERBOSE(20)) {
                print_call(m, coll, comm, bytes, call | MCA_COLL_LOOM_CALL_NB, choice, NULL);
            }
            mca_coll_loom_count(&cm->nb_fallback_calls[coll]);
            return NULL;
        }
    }
    if (!persistent && mca_coll_loom_shm_nb_usable(m, coll, bytes)) {
        call |= MCA_COLL_LOOM_CALL_SHM;
    }
    s = plan_call(m, coll, comm, bytes, call | MCA_COLL_LOOM_CALL_NB, root, choice);
    plan->sched = s;
    plan->shm = NULL != s && (call & MCA_COLL_LOOM_CALL_SHM) && choice->alg == cm->hier_alg;
    mca_coll_loom_count(NULL == s ? &cm->nb_fallback_calls[coll] : &cm->nb_alg_calls[coll][choice->alg]);
    return s;
}

const mca_coll_loom_sched_t *mca_coll_loom_plan(mca_coll_loom_module_t *m,
                                                mca_coll_loom_coll_t coll,
                                                struct ompi_communicator_t *comm, size_t bytes,
                                                unsigned call, int root,
                                                mca_coll_loom_plan_t *plan)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    mca_coll_loom_choice_t *choice = &plan->choice;
    const mca_coll_loom_sched_t *s;

    plan->sched = NULL;
    plan->coll = coll;
    plan->shm = false;
    /* a communicator marked failed (mca_coll_loom_mark_failed): no schedule, and the entry
     * point returns the error instead of handing the call on */
    if (OPAL_UNLIKELY(m->failed)) {
        choice->alg = -1;
        choice->transport = 0;
        return NULL;
    }
    /* the communicator's first call: the settings check, before the segment's state is
     * read, so that a segment taken over from a freed communicator serves this call */
    blocking_call_setup(m, comm);
    /* on one node, hierarchical is fast through the shared segment and slow without
     * it (two point-to-point phases): the rules see which it would be (shm=yes/no) */
    if (MCA_COLL_LOOM_COLL_ALLTOALL == coll ? mca_coll_loom_shm_alltoall_usable(m, bytes)
                                            : mca_coll_loom_shm_usable(m, coll, bytes)) {
        call |= MCA_COLL_LOOM_CALL_SHM;
    }
    s = plan_call(m, coll, comm, bytes, call, root, choice);
    plan->sched = s;
    /* through the segment: hierarchical's node phases, and direct's transfers on one node */
    plan->shm = NULL != s && (call & MCA_COLL_LOOM_CALL_SHM) &&
                  (choice->alg == cm->hier_alg ||
                   (MCA_COLL_LOOM_COLL_ALLTOALL == coll && choice->alg == cm->direct_alg));

    /* the MPI_T counters (coll_loom_<coll>_<alg>_calls, _fallback_calls) say what
     * served the call: the tests' proof that loom ran it */
    mca_coll_loom_count(NULL == s ? &cm->fallback_calls[coll] : &cm->alg_calls[coll][choice->alg]);
    return s;
}

/* The representatives' phase of `hierarchical` alone (its node phases run through the
 * node's shared segment), from the same cache; NULL when it cannot be built. */
const mca_coll_loom_sched_t *mca_coll_loom_plan_leaders(mca_coll_loom_module_t *m,
                                                        mca_coll_loom_coll_t coll,
                                                        struct ompi_communicator_t *comm,
                                                        unsigned call, int root)
{
    mca_coll_loom_params_t params = {
        .P = ompi_comm_size(comm),
        .nodes = m->topo.nnodes,
        .rpn = m->topo.max_per_node,
        .rank = ompi_comm_rank(comm),
        .root = root,
        .call = call,
        .coll = coll,
        .node_of = m->topo.node_of,
        .leaders_only = 1,
    };
    mca_coll_loom_sched_entry_t *e = cache_get(m, &params, mca_coll_loom_component.hier_alg);

    return MCA_COLL_LOOM_OK == e->rc ? &e->sched : NULL;
}

/* ------------------------------------------------------------------------------------ */
/* pipelining depth                                                                      */

/* Segments (ring) or chunks (twotree) when the knob is 0: the cost model's choice
 * (mca_coll_loom_model_auto_segs, docs/dev/model.md).  It is deterministic in its inputs,
 * which every rank shares, so all ranks build the same schedule.  It costs up to a
 * millisecond, so answers are remembered per process. */
#define LOOM_AUTO_SEGS_CACHE 32
#define LOOM_MIN_AUTO_CHUNK  ((size_t) 1024 * 1024)

static struct {
    bool used;
    int alg, coll, P, segs;
    size_t bytes;
} auto_cache[LOOM_AUTO_SEGS_CACHE];
static unsigned auto_next;

static int auto_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes)
{
    mca_coll_loom_model_params_t mp;
    int segs = -1;

    OPAL_THREAD_LOCK(&mca_coll_loom_component.lock);
    for (int i = 0; i < LOOM_AUTO_SEGS_CACHE; ++i) {
        if (auto_cache[i].used && auto_cache[i].alg == alg && auto_cache[i].coll == (int) coll &&
            auto_cache[i].P == P && auto_cache[i].bytes == bytes) {
            segs = auto_cache[i].segs;
            break;
        }
    }
    OPAL_THREAD_UNLOCK(&mca_coll_loom_component.lock);
    if (segs > 0) {
        return segs;
    }
    mca_coll_loom_model_params(&mp);
    segs = mca_coll_loom_model_auto_segs(alg, coll, P, bytes, 1, &mp);
    if (segs < 1) {
        segs = 1;
    }
    OPAL_THREAD_LOCK(&mca_coll_loom_component.lock);
    unsigned i = auto_next++ % LOOM_AUTO_SEGS_CACHE;
    auto_cache[i].used = true;
    auto_cache[i].alg = alg;
    auto_cache[i].coll = (int) coll;
    auto_cache[i].P = P;
    auto_cache[i].bytes = bytes;
    auto_cache[i].segs = segs;
    OPAL_THREAD_UNLOCK(&mca_coll_loom_component.lock);
    return segs;
}

/* hierarchical bcast: automatic segment size, and a bound on the segment count.
 * reduce: smaller segments, as every segment is combined on its way (the sizes'
 * measurements: docs/dev/developing.md, "Segment and chunk sizes") */
#define LOOM_HIER_AUTO_SEGMENT        ((size_t) 1024 * 1024)
#define LOOM_HIER_AUTO_SEGMENT_REDUCE ((size_t) 512 * 1024)
/* bcast: the chain's fill costs a segment per node, and with the graph engine a segment
 * costs little more than its bytes, so smaller ones pay */
#define LOOM_HIER_AUTO_SEGMENT_BCAST  ((size_t) 256 * 1024)
#define LOOM_HIER_MAX_SEGS     4096
/* hierarchical allreduce: the leaders' ring from this size (pairwise below) */
#define LOOM_HIER_RING_BYTES   ((size_t) 64 * 1024)
/* its rings' automatic segments while a part is at most LOOM_HIER_RING_SMALL_PART:
 * half btl/tcp's eager limit, as LOOM_HIER_A2A_PIECE below, since a segment that needs
 * a rendezvous waits for the receiver's reply at every ring step; larger parts pay for
 * the number of messages instead */
#define LOOM_HIER_RING_SEGMENT_SMALL ((size_t) 32 * 1024)
#define LOOM_HIER_RING_SMALL_PART    ((size_t) 1024 * 1024)
/* alltoall: the most a message between leaders carries, half btl/tcp's eager limit
 * (64 KiB with its header): a larger one waits for a rendezvous. */
#define LOOM_HIER_A2A_PIECE    ((size_t) 32 * 1024)

/* ring and twotree: the cost model's segment / chunk count (or the knob's) */
static int model_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob)
{
    const bool ring = (0 == strcmp(mca_coll_loom_algs[alg].name, "ring"));
    /* ring pipelines each of its P parts, twotree the whole message */
    size_t unit = ring ? bytes / (size_t) (P > 0 ? P : 1) : bytes;
    /* bound the schedule's length: ring 2(P-1)*segs steps, twotree segs rounds */
    size_t cap = ring ? (size_t) (65536 / (P > 0 ? P : 1)) : 16384;
    size_t segs;

    if (cap < 1) {
        cap = 1;
    }
    if (knob > 0) {
        segs = (unit + (size_t) knob - 1) / (size_t) knob;
    } else {
        segs = (size_t) auto_segs(alg, coll, P, bytes);
        /* Every chunk of a pipeline is a rendezvous transfer whose handshake costs far
         * more than the model's small-message o, so chunks and segments stay at
         * LOOM_MIN_AUTO_CHUNK or more (docs/dev/developing.md, "Segment and chunk
         * sizes"). */
        if (segs > (unit + LOOM_MIN_AUTO_CHUNK - 1) / LOOM_MIN_AUTO_CHUNK) {
            segs = (unit + LOOM_MIN_AUTO_CHUNK - 1) / LOOM_MIN_AUTO_CHUNK;
        }
    }
    if (segs < 1) {
        segs = 1;
    }
    return (int) (segs > cap ? cap : segs);
}

int mca_coll_loom_pipeline_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob)
{
    if (alg == mca_coll_loom_component.torus_alg) {
        /* segments of the chain: the message streams once the chain is full */
        const size_t n = knob > 0 ? (bytes + (size_t) knob - 1) / (size_t) knob
                                  : (size_t) mca_coll_loom_torus_auto_segs(coll, P, bytes);
        return n < 1 ? 1 : (int) (n > LOOM_HIER_MAX_SEGS ? LOOM_HIER_MAX_SEGS : n);
    }
    if (alg == mca_coll_loom_component.hier_alg) {
        /* bcast, reduce: segments of the chain; allreduce from LOOM_HIER_RING_BYTES:
         * segments per part of the leaders' ring (at least 2, which is what selects the
         * ring); other calls, and those on the node's shared segment, use none */
        size_t seg = knob > 0                              ? (size_t) knob
                     : MCA_COLL_LOOM_COLL_REDUCE == coll ? LOOM_HIER_AUTO_SEGMENT_REDUCE
                     : MCA_COLL_LOOM_COLL_BCAST == coll  ? LOOM_HIER_AUTO_SEGMENT_BCAST
                                                         : LOOM_HIER_AUTO_SEGMENT,
               n;
        if (MCA_COLL_LOOM_COLL_ALLTOALL == coll) {
            /* pieces of a slot of P parts (loom_alg_hierarchical_alltoall.c) */
            const size_t part = bytes / (size_t) (P > 0 ? P : 1);
            const size_t per = part > 0 && part < LOOM_HIER_A2A_PIECE ? LOOM_HIER_A2A_PIECE / part : 1;
            return per >= (size_t) P ? 1 : (int) (((size_t) P + per - 1) / per);
        }
        if (MCA_COLL_LOOM_COLL_ALLREDUCE == coll && bytes >= LOOM_HIER_RING_BYTES) {
            size_t part = bytes / (size_t) (P > 0 ? P : 1), cap = (size_t) 65536 / (size_t) (P > 0 ? P : 1);
            if (knob <= 0 && part <= LOOM_HIER_RING_SMALL_PART) {
                seg = LOOM_HIER_RING_SEGMENT_SMALL;
            }
            n = (part + seg - 1) / seg;
            n = n < 2 ? 2 : n;
            return (int) (n > cap && cap >= 2 ? cap : n);
        }
        if ((MCA_COLL_LOOM_COLL_BCAST != coll && MCA_COLL_LOOM_COLL_REDUCE != coll) || bytes <= seg) {
            return 1;
        }
        n = (bytes + seg - 1) / seg;
        return (int) (n > LOOM_HIER_MAX_SEGS ? LOOM_HIER_MAX_SEGS : n);
    }
    return model_segs(alg, coll, P, bytes, knob);
}

bool mca_coll_loom_settings_ok(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, bool blocking)
{
    if (blocking) {
        blocking_call_setup(m, comm);
    } else if (OPAL_UNLIKELY(0 == m->settings_agreed) && 1 == mca_coll_loom_component.job_agreed && m->in_job) {
        m->settings_agreed = 1; /* as mca_coll_loom_plan_nb */
    }
    return m->settings_agreed > 0;
}
