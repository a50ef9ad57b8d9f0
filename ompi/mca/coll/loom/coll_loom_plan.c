/*
 * coll/loom: the planner.  For one call it reads the run-time settings, asks the rules
 * (loom_decide.c) which algorithm serves it, builds or finds the schedule in the
 * communicator's cache, and fills the caller's plan (mca_coll_loom_plan_t): the engine
 * runs what it is given and looks nothing up.  A call shaped like the previous one of
 * its collective pays one comparison (plan_call).  Also here: how many segments a
 * pipelined schedule is cut into (the cost model's choice when the knob is 0).
 */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"

#include "coll_loom.h"
#include "coll_loom_shm.h"

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
            e->leaders_only == params->leaders_only && e->engaged == params->engaged && e->net_alg == params->net_alg &&
            e->net_knob == params->net_knob && e->net_segs == params->net_segs) {
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
    e->engaged = params->engaged;
    e->net_alg = params->net_alg;
    e->net_knob = params->net_knob;
    e->net_segs = params->net_segs;
    e->stamp = ++m->clock;
    e->rc = mca_coll_loom_alg_build(alg, &e->sched, params);
    if (MCA_COLL_LOOM_OK == e->rc && MCA_COLL_LOOM_VERBOSE(30)) {
        opal_output(mca_coll_loom_component.output,
                    "coll/loom: rank %d: %s schedule of '%s' (knob %d, segs %d, root %d, P=%d): "
                    "%d ops, %d rounds, %d slots",
                    params->rank, mca_coll_loom_coll_name(params->coll), mca_coll_loom_algs[alg]->name,
                    params->knob, params->segs, params->root, params->P, e->sched.nops,
                    e->sched.rounds, e->sched.nslots);
        mca_coll_loom_sched_print(&e->sched, print_sched_line, NULL);
    }
    return e;
}

static __opal_attribute_noinline__ void print_call(const mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll,
                       struct ompi_communicator_t *comm, size_t bytes, unsigned call,
                       const mca_coll_loom_choice_t *choice, const char *note)
{
    char knob[160] = "", why[96];
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
        alg = mca_coll_loom_algs[choice->alg]->name;
        if (NULL != mca_coll_loom_algs[choice->alg]->knob) {
            snprintf(knob, sizeof(knob), " %s=%d", mca_coll_loom_algs[choice->alg]->knob,
                     choice->knob);
        }
    }
    if (choice->alg >= 0 && choice->net_alg > 0) {
        /* hierarchical's phase among the nodes */
        const mca_coll_loom_alg_t *a = mca_coll_loom_algs[choice->net_alg - 1];
        const size_t len = strlen(knob);
        if (NULL != a->knob) {
            snprintf(knob + len, sizeof(knob) - len, " net=%s %s=%d", a->name, a->knob, choice->net_knob);
        } else {
            snprintf(knob + len, sizeof(knob) - len, " net=%s", a->name);
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

/* coll_loom_verbose 20, rank 0, with each decision: what the cost model predicts for the
 * chosen algorithm on this communicator, against the LogGP lower bound (both with the
 * coll_loom_model_* parameters; docs/dev/model.md).  It simulates every rank's schedule:
 * for a debugging level only, and once per decision, not per call. */
static __opal_attribute_noinline__ void print_model(mca_coll_loom_coll_t coll, struct ompi_communicator_t *comm,
                                                    size_t bytes, const mca_coll_loom_params_t *params,
                                                    const mca_coll_loom_choice_t *choice)
{
    mca_coll_loom_model_params_t mp;
    mca_coll_loom_model_result_t res;
    double bound;

    mca_coll_loom_model_params(&mp);
    bound = mca_coll_loom_model_bound(coll, params->P, bytes, &mp);
    if (NULL != params->torus) {
        return; /* the torus's links need their own rate (loom-model --torus) */
    }
    if (MCA_COLL_LOOM_OK == mca_coll_loom_model_predict(choice->alg, coll, params, bytes, 1, &mp, NULL, NULL, &res)) {
        opal_output(mca_coll_loom_component.output,
                    "coll/loom: %s cid %s rank 0: model: %s %.3f us, LogGP bound %.3f us (%.2fx)",
                    mca_coll_loom_coll_name(coll), mca_coll_loom_cid(comm).s, mca_coll_loom_algs[choice->alg]->name,
                    res.time * 1e6, bound * 1e6, bound > 0.0 ? res.time / bound : 0.0);
    } else {
        opal_output(mca_coll_loom_component.output, "coll/loom: %s cid %s rank 0: model: no prediction (%s)",
                    mca_coll_loom_coll_name(coll), mca_coll_loom_cid(comm).s,
                    NULL != res.note ? res.note : "the simulation gave up");
    }
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

/* hierarchical's phase among the nodes, as the rules choose it for one rank per node
 * (mca_coll_loom_decide_net), with that algorithm's own segment policy */
static void net_params(mca_coll_loom_coll_t coll, size_t bytes, const mca_coll_loom_choice_t *choice,
                       mca_coll_loom_params_t *params)
{
    params->net_alg = choice->net_alg;
    params->net_knob = choice->net_knob;
    if (params->net_alg > 0 && mca_coll_loom_algs[params->net_alg - 1]->pipelined) {
        params->net_segs = mca_coll_loom_pipeline_segs(params->net_alg - 1, coll, params->nodes, bytes,
                                                       params->net_knob);
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
            mca_coll_loom_agree_on_settings(m, comm);
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
    if (OPAL_UNLIKELY(call & MCA_COLL_LOOM_CALL_ENGAGED)) {
        /* loom_reduce_engage: binomial's first stages (coll_loom_threshold.c) */
        forced = mca_coll_loom_alg_find(MCA_COLL_LOOM_COLL_REDUCE, "binomial");
        params.engaged = mca_coll_loom_engaged_ranks(m, params.P);
    }
    mca_coll_loom_current_knobs(knobs);
    mca_coll_loom_decide(coll, bytes, &params, knobs, forced, cm->rules.rules, cm->rules.nrules, choice);
    if (OPAL_UNLIKELY(call & MCA_COLL_LOOM_CALL_ENGAGED) && choice->alg == forced) {
        choice->why = "loom_reduce_engage";
    }

    if (NULL != choice->refused && forced >= 0 && m->warned_refused[coll] != forced + 1) {
        m->warned_refused[coll] = forced + 1;
        if (MCA_COLL_LOOM_VERBOSE(1)) {
            char what[160];
            snprintf(what, sizeof(what), "%zu bytes on %d ranks; served by %s%s%s instead", bytes,
                     params.P, choice->alg >= 0 ? "'" : "",
                     choice->alg >= 0 ? mca_coll_loom_algs[choice->alg]->name : "the previous component",
                     choice->alg >= 0 ? "'" : "");
            mca_coll_loom_show_help("forced-refused", true, mca_coll_loom_coll_name(coll),
                                    mca_coll_loom_algs[forced]->name, what, choice->refused);
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
    if (mca_coll_loom_algs[choice->alg]->pipelined) {
        params.segs = mca_coll_loom_pipeline_segs(choice->alg, coll, params.P, bytes, choice->knob);
    }
    net_params(coll, bytes, choice, &params);
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
                                mca_coll_loom_algs[choice->alg]->name, mca_coll_loom_coll_name(coll),
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
        if (0 == params.rank) {
            print_model(coll, comm, bytes, &params, choice);
        }
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
            e->call == (call & ~MCA_COLL_LOOM_CALL_NB) && e->net_alg == choice->net_alg &&
            e->net_knob == choice->net_knob && e->coll == (int) coll && e->root == root && !e->leaders_only) {
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

    plan->coll = coll;
    if (OPAL_UNLIKELY(m->failed)) {
        *plan = mca_coll_loom_plan_of(NULL, coll);
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
            *plan = mca_coll_loom_plan_of(NULL, coll);
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

    plan->coll = coll;
    /* a communicator marked failed (mca_coll_loom_mark_failed): no schedule, and the entry
     * point returns the error instead of handing the call on */
    if (OPAL_UNLIKELY(m->failed)) {
        *plan = mca_coll_loom_plan_of(NULL, coll);
        return NULL;
    }
    /* the communicator's first call: the settings check, before the segment's state is
     * read, so that a segment taken over from a freed communicator serves this call */
    mca_coll_loom_blocking_call_setup(m, comm);
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

static int cached_auto_segs(void *ctx, int alg, mca_coll_loom_coll_t coll, int P, size_t bytes)
{
    (void) ctx;
    return auto_segs(alg, coll, P, bytes);
}

/* the algorithm's segment policy (its registry entry), with the cost model's answers
 * remembered */
int mca_coll_loom_pipeline_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob)
{
    static const mca_coll_loom_segs_model_t model = {.auto_segs = cached_auto_segs, .ctx = NULL};

    return mca_coll_loom_alg_segs(alg, coll, P, bytes, knob, &model);
}
