/*
 * coll/loom: the module (one per communicator): its life, the run-time parameters, the
 * settings agreement and transport decision of a communicator, and what a failure
 * does to it.  Planning a call is coll_loom_plan.c.
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
#include "coll_loom_shm.h"
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
        mca_coll_loom_agree_on_settings(m, comm);
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

void mca_coll_loom_agree_on_settings(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm)
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
void mca_coll_loom_decide_transport(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm)
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

bool mca_coll_loom_settings_ok(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, bool blocking)
{
    if (blocking) {
        mca_coll_loom_blocking_call_setup(m, comm);
    } else if (OPAL_UNLIKELY(0 == m->settings_agreed) && 1 == mca_coll_loom_component.job_agreed && m->in_job) {
        m->settings_agreed = 1; /* as mca_coll_loom_plan_nb */
    }
    return m->settings_agreed > 0;
}
