/*
 * coll/loom: component and module declarations.
 *
 * The component is MCA glue around the MPI-agnostic core in opal/loom: it turns an
 * MPI call into a call shape, asks the core which algorithm to run, fetches (or
 * builds) that algorithm's schedule for this rank and runs it with the PML.  Calls
 * loom does not serve go to the component that was selected before it.
 */
#ifndef MCA_COLL_LOOM_EXPORT_H
#define MCA_COLL_LOOM_EXPORT_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>

#include "mpi.h"
#include "opal/class/opal_list.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/op/op.h"

#include "coll_loom_compat.h" /* also opal_mutex_t, whose header moved in 5.0 */
#include "opal/loom/loom_copy.h"

#include "opal/loom/loom_decide.h"
#include "opal/loom/loom_model.h"
#include "opal/loom/loom_registry.h"
#include "opal/loom/loom_rules.h"
#include "opal/loom/loom_sched.h"
#include "opal/loom/loom_shm.h"
#include "opal/loom/loom_torus.h"
#include "opal/loom/loom_topo.h"
#include "coll_loom_tl.h"
#include "coll_loom_ucx.h"

BEGIN_C_DECLS

/* Upper bounds for the static tables below; the registry is checked against them at
 * registration time (extra entries are ignored with a warning). */
#define MCA_COLL_LOOM_MAX_ALGS        32
#define MCA_COLL_LOOM_MAX_KNOBS       16
/* Distinct bad values remembered per parameter, so each is warned about once. */
#define MCA_COLL_LOOM_MAX_WARNED      8
/* Executor scratch kept per communicator between calls (larger is freed per call). */
#define MCA_COLL_LOOM_KEEP_SCRATCH    (1 << 20)
/* Schedules kept per communicator: (alg, knob, call flags) combinations seen. */
#define MCA_COLL_LOOM_SCHED_CACHE     16

/* One integer knob parameter, coll_loom_<name>, shared by the algorithms that declare it. */
typedef struct {
    const char *name;   /* registry suffix, e.g. "dissemination_ways" */
    int value;          /* MCA storage, may change at run time (MPI_T) */
    int def, min, max;
    bool checked;       /* last_value / effective are valid */
    int last_value;     /* value seen by the last validation */
    int effective;      /* what last_value means: itself, or def when out of range */
    int nwarned;
    int warned[MCA_COLL_LOOM_MAX_WARNED];
} mca_coll_loom_knob_t;

/* State of one coll_loom_<coll>_algorithm parameter: an integer whose enumerator names
 * "auto" (-1) and the registry index of every algorithm serving the collective, so
 * ompi_info lists the valid names and Open MPI refuses any other value. */
typedef struct {
    int value;          /* MCA storage */
} mca_coll_loom_alg_param_t;

typedef struct mca_coll_loom_component_t {
    mca_coll_base_component_t super;

    int priority;
    int verbose;
    int output;             /* opal_output stream for coll_loom_verbose */
    int output_verbosity;   /* verbosity last applied to `output` */

    mca_coll_loom_alg_param_t alg_param[MCA_COLL_LOOM_NUM_COLLS];
    int nknobs;
    mca_coll_loom_knob_t knobs[MCA_COLL_LOOM_MAX_KNOBS];
    int alg_knob[MCA_COLL_LOOM_MAX_ALGS]; /* index into knobs[], -1 when knobless */
    int nalgs;                            /* min(mca_coll_loom_num_algs, MAX_ALGS) */

    /* coll_loom_rules_file / coll_loom_dump_rules; the rules are read once, at MPI_Init
     * (init_query), and tried before the built-in ones */
    char *rules_file;
    bool dump_rules;
    mca_coll_loom_ruleset_t rules;
    /* hash of the rules in force and of the registry, set with them at MPI_Init: part
     * of the fingerprint that every rank of a communicator must share */
    uint64_t rules_fingerprint;

    /* LogGP parameters of the cost model (coll_loom_model_*), in the units of the MCA
     * parameters; they choose segment / chunk sizes when those knobs are 0 */
    double model_latency_us, model_overhead_us, model_gap_us;
    double model_gap_per_byte_ns, model_reduce_per_byte_ns, model_copy_per_byte_ns;

    /* coll_loom_scratch_keep: largest scratch buffer kept for reuse between calls */
    int scratch_keep;

    /* the shared-memory node phases of `hierarchical` (coll_loom_shm*, coll_loom_shm.c) */
    bool shm;               /* use them at all */
    int shm_slot_size;      /* bytes per rank slot: calls up to this size use them */
    char *shm_dir;          /* directory of the segment files (a tmpfs) */
    int shm_outbox_size;    /* one-node alltoall: bytes of a rank's outbox (0: none) */
    int shm_spin;           /* checks before a waiting rank sleeps; -1: automatic */
    int shm_setup_call;     /* the segment is set up at this call that could use it */
    int shm_pool;           /* segments a process keeps after communicator free, for reuse */
    int test_fail_conversion; /* tests only: the N-th conversion from now fails (coll_loom_data.c) */
    int test_fail_local;      /* tests only: the N-th local op of a task fails (coll_loom_exec.c) */
    int hier_alg;           /* registry index of `hierarchical` (-1: none) */
    int direct_alg;         /* registry index of `direct` (-1: none) */
    int torus_alg;          /* registry index of `torus` (-1: none) */
    unsigned long long shm_node_phases; /* MPI_T: calls whose node phases used it */
    unsigned long long shm_segments_created; /* MPI_T: segments this process made or mapped */
    unsigned long long shm_segments_reused;  /* MPI_T: segments taken over from a freed communicator */

    /* coll_loom_transport (MCA_COLL_LOOM_TRANSPORT_*): how the engine's transfers travel */
    int transport;
    unsigned long long ucx_transfers;        /* MPI_T: transfers posted on loom's UCP worker */
    bool pml_is_ucx;        /* the job's PML is ucx (auto then leaves loom's worker unused) */
    int ucx_put_max;        /* bytes per sender and call written straight into a receiver's window */
    unsigned long long ucx_puts;             /* MPI_T: messages loom wrote into a peer's window */

    /* serialises re-parsing of the run-time parameters (a no-op without threads) */
    opal_mutex_t lock;

    /* MPI_T performance variables (coll_loom_<coll>_<alg>_calls, ..._fallback_calls) */
    unsigned long long alg_calls[MCA_COLL_LOOM_NUM_COLLS][MCA_COLL_LOOM_MAX_ALGS];
    unsigned long long fallback_calls[MCA_COLL_LOOM_NUM_COLLS];
    /* the same for the non-blocking and persistent forms (coll_loom_i<coll>_<alg>_calls) */
    unsigned long long nb_alg_calls[MCA_COLL_LOOM_NUM_COLLS][MCA_COLL_LOOM_MAX_ALGS];
    unsigned long long nb_fallback_calls[MCA_COLL_LOOM_NUM_COLLS];

    /* non-blocking and persistent requests in progress (coll_loom_nbc.c) */
    opal_list_t active;
    opal_mutex_t active_lock;
    bool progress_registered;
    /* MPI_COMM_WORLD's settings check, made at MPI_Init: 0 = not made, 1 = every process
     * of the job decides alike, -1 = not */
    int job_agreed;
} mca_coll_loom_component_t;

MCA_COLL_LOOM_DECLSPEC extern mca_coll_loom_component_t mca_coll_loom_component;

/* The module's function slots loom fills, one X(name) per coll_<name>, from the list of
 * collectives (loom_registry.h): the blocking collectives (loom needs the previous
 * component's function for each), and their non-blocking and persistent forms (a form
 * whose previous function is missing is left to the component that has it). */
#define MCA_COLL_LOOM_SLOT_BLOCKING_(ID, name, X) X(name)
#define MCA_COLL_LOOM_SLOT_OTHER_(ID, name, X)    X(i##name) X(name##_init)
#define MCA_COLL_LOOM_FOR_EACH_BLOCKING(X) MCA_COLL_LOOM_COLLECTIVES(MCA_COLL_LOOM_SLOT_BLOCKING_, X)
#define MCA_COLL_LOOM_FOR_EACH_OTHER(X)    MCA_COLL_LOOM_COLLECTIVES(MCA_COLL_LOOM_SLOT_OTHER_, X)

/* A schedule built for this communicator, keyed by what it depends on. */
typedef struct {
    bool used;
    int rc;             /* result of the build: a failed build is remembered too */
    int coll;
    int alg;
    int knob;
    unsigned call;
    int root;
    int segs;
    int leaders_only;   /* hierarchical's representatives' phase alone */
    int engaged;        /* binomial's reduce under loom_reduce_engage (params) */
    int net_alg, net_knob, net_segs; /* hierarchical's phase among the nodes (params) */
    uint64_t stamp;     /* last use, for replacement */
    mca_coll_loom_sched_t sched;
} mca_coll_loom_sched_entry_t;

/* the opt-in thresholds of a communicator (coll_loom_threshold.c) */
enum {
    MCA_COLL_LOOM_THRESHOLD_BCAST = 0, /* info key loom_bcast_threshold */
    MCA_COLL_LOOM_THRESHOLD_REDUCE,    /* loom_reduce_threshold */
    MCA_COLL_LOOM_THRESHOLD_ENGAGE,    /* loom_reduce_engage */
    MCA_COLL_LOOM_NUM_THRESHOLDS
};

typedef struct mca_coll_loom_module_t {
    mca_coll_base_module_t super;

    /* the functions loom replaced, used for every call it does not serve */
#define LOOM_PREVIOUS_FIELDS(name)                      \
    mca_coll_base_module_##name##_fn_t previous_##name; \
    mca_coll_base_module_t *previous_##name##_module;
    MCA_COLL_LOOM_FOR_EACH_BLOCKING(LOOM_PREVIOUS_FIELDS)
    MCA_COLL_LOOM_FOR_EACH_OTHER(LOOM_PREVIOUS_FIELDS)
#undef LOOM_PREVIOUS_FIELDS

    bool have_topo;
    mca_coll_loom_topo_t topo;

    uint64_t clock;
    mca_coll_loom_sched_entry_t cache[MCA_COLL_LOOM_SCHED_CACHE];

    /* the last decision per collective: applications repeat the same call shape, so
     * the rules are walked again only when the shape or a run-time parameter changes */
    struct {
        bool valid;
        size_t bytes;
        unsigned call;
        int root;
        /* the settings it was made with, as stored by the MCA variable system: equal
         * raw values mean an equal decision, without parsing or validating again */
        int forced;
        int knob_value[MCA_COLL_LOOM_MAX_KNOBS];
        mca_coll_loom_choice_t choice;
        mca_coll_loom_sched_entry_t *entry; /* NULL: previous component */
    } last[2][MCA_COLL_LOOM_NUM_COLLS]; /* [0]: blocking calls, [1]: the other forms */

    /* call flags of the last predefined (op, datatype) pair an allreduce used (NULL:
     * none yet; user ops and derived datatypes are never remembered) */
    struct ompi_op_t *flags_op;
    struct ompi_datatype_t *flags_dtype;
    unsigned flags_call;

    /* scratch buffers of the executor, kept between calls up to
     * MCA_COLL_LOOM_KEEP_SCRATCH bytes (one communicator runs one collective at a time) */
    char *scratch;
    size_t scratch_bytes;

    /* the node's shared segment: state 0 = not set up yet (done at the first call that
     * would use it, collectively), 1 = in use (seg.base is NULL on a node of one
     * rank), -1 = off (node phases by point-to-point) */
    struct {
        int state;
        int eligible;       /* calls that could have used it before it was set up */
        uint32_t seq;       /* calls made on the segment, the protocol's call number */
        mca_coll_loom_shm_t seg;
        /* for the pool of freed segments (coll_loom_shm_setup.c): the generation of this
         * communicator's segments (the same on every rank), this rank's node's
         * processes in node order (as many as seg.n once the segment is set up;
         * NULL on a node of one rank), the pool entry offered at the settings check */
        uint64_t gen[2];
        opal_process_name_t *members;
        void *offer;
        /* the outboxes of alltoall on one node, a shared file of their own set up at the
         * first call that needs them: state 0 = not yet, 1 = mapped, -1 = failed */
        int outbox_state;
        char *outbox;
        size_t outbox_bytes;
        /* non-blocking calls on the segment (coll_loom_shm.c): how many are outstanding,
         * and the call number of the oldest, the one that may go next */
        int nb_busy;
        uint32_t nb_head;
    } shm;

    /* where the communicator's nodes sit on a torus (coll_loom_torus.c): state 0 = no
     * source, or not known yet; 1 = coords holds every node's (topo's node order,
     * shape.ndims each); -1 = unusable, said why */
    struct {
        int state;
        mca_coll_loom_torus_t shape;
        int *coords;
    } torus;

    /* whether every rank decides with the same settings, found out by the first call
     * (mca_coll_loom_settings_fingerprint): 0 = not yet, 1 = yes, -1 = no, and every
     * call goes to the previous component */
    int settings_agreed;
    /* the transport of the engine's transfers, decided at the communicator's first blocking
     * call (with the settings check, or after it when non-blocking calls came first and
     * took MPI_COMM_WORLD's): NULL = the PML */
    struct mca_coll_loom_ucx_comm_t *ucx;
    bool transport_decided;
    bool refusal_said;     /* mca_coll_loom_refused spoke for this communicator */
    /* coll_loom_transport as it was when the transport was decided (an MPI_T change
     * applies to communicators that have not decided yet) */
    int transport_mode;
    /* every process of the communicator belongs to this job (no spawned or connected
     * ones): then MPI_COMM_WORLD's settings check at MPI_Init covers it */
    bool in_job;

    /* warn once per communicator and collective (refusals: per forced algorithm,
     * stored as index + 1) */
    int warned_refused[MCA_COLL_LOOM_NUM_COLLS];
    bool warned_build[MCA_COLL_LOOM_NUM_COLLS];

    /* a collective of loom's failed here in a way that may leave other ranks inside
     * it (mca_coll_loom_mark_failed): later calls on this communicator fail at once */
    bool failed;

    /* the communicator's info keys loom_bcast_threshold, loom_reduce_threshold,
     * loom_reduce_engage (1: off), and what the last such call delivered (elements,
     * elements, ranks), read through MPI_T */
    double threshold[MCA_COLL_LOOM_NUM_THRESHOLDS];
    size_t delivered[MCA_COLL_LOOM_NUM_THRESHOLDS];
    bool warned_engage;

    /* the stale-synchronous allreduce (coll_loom_ssp.c): the info key
     * loom_allreduce_slack (-1: off), this rank's clock, the oldest clock in the last
     * result and the waits for fresher data (MPI_T), the exchange (NULL: none yet) */
    int ssp_slack;
    int64_t ssp_clock;
    int64_t ssp_oldest;
    uint64_t ssp_waits;
    struct mca_coll_loom_ssp_t *ssp;
    bool warned_ssp;
    bool ssp_attached;    /* the attribute that drains at MPI_Comm_free is set */
} mca_coll_loom_module_t;

OBJ_CLASS_DECLARATION(mca_coll_loom_module_t);

/* component / module life cycle */
int mca_coll_loom_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_loom_comm_query(struct ompi_communicator_t *comm, int *priority);
int mca_coll_loom_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);

/* run-time parameters: current forced algorithm (-1 auto) and knob values per algorithm */
int mca_coll_loom_forced_alg(mca_coll_loom_coll_t coll);

/* A message of help-coll-loom.txt for the user (the topic's arguments follow). */
void mca_coll_loom_show_help(const char *topic, bool want_error_header, ...);
void mca_coll_loom_current_knobs(int *knobs);
void mca_coll_loom_apply_verbosity(void);

/* A hash of everything a decision or a schedule depends on besides the call: the rules
 * in force, the registry, the effective forced algorithms and knobs, the cost model's
 * and the shared segment's parameters.  Ranks whose fingerprints differ could run
 * different schedules against each other (a hang or a wrong result), so loom compares
 * them at a communicator's first call. */
uint64_t mca_coll_loom_settings_fingerprint(void);

/* The settings agreement of a communicator (a blocking exchange through the previous
 * component) and, when it was taken from MPI_COMM_WORLD's, its transport decision
 * (coll_loom_module.c). */
void mca_coll_loom_agree_on_settings(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm);
void mca_coll_loom_decide_transport(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm);
/* What a communicator's first blocking call settles, collectively: every rank makes it
 * at the same point of the communicator's sequence of calls. */
static inline void mca_coll_loom_blocking_call_setup(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm)
{
    if (OPAL_UNLIKELY(0 == m->settings_agreed)) {
        mca_coll_loom_agree_on_settings(m, comm);
    } else if (OPAL_UNLIKELY(!m->transport_decided) && m->settings_agreed > 0) {
        mca_coll_loom_decide_transport(m, comm);
    }
}

/* Whether every rank of comm decides with the same settings: a blocking call compares
 * them when that is not known yet, a non-blocking one only takes the job's comparison
 * (see mca_coll_loom_plan_nb).  For paths that bypass the planner. */
bool mca_coll_loom_settings_ok(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, bool blocking);

/* What the planner decided for one call: what the engine runs it with.  The caller's
 * own copy, valid until the schedule cache changes (the next plan on this communicator):
 * nothing of a call is kept in the module. */
typedef struct {
    const mca_coll_loom_sched_t *sched; /* NULL: the previous component serves the call */
    mca_coll_loom_choice_t choice;      /* the rules' decision: algorithm, knob, transport */
    mca_coll_loom_coll_t coll;          /* named when the call fails */
    bool shm;                           /* hierarchical's node phases (or direct's alltoall
                                           on one node) through the node's segment */
} mca_coll_loom_plan_t;

/* Decides for one call and returns the schedule to run (NULL: hand the call to the
 * previous component), and counts the call in the MPI_T counter of what serves it.
 * plan is filled in either way (plan->sched is the returned schedule). */
const mca_coll_loom_sched_t *mca_coll_loom_plan(mca_coll_loom_module_t *m,
                                                mca_coll_loom_coll_t coll,
                                                struct ompi_communicator_t *comm, size_t bytes,
                                                unsigned call, int root,
                                                mca_coll_loom_plan_t *plan);
/* A plan of a schedule the planner did not give (a variant's own, the representatives'
 * phase of the node-segment path): the PML, no node segment. */
static inline mca_coll_loom_plan_t mca_coll_loom_plan_of(const mca_coll_loom_sched_t *s, mca_coll_loom_coll_t coll)
{
    mca_coll_loom_plan_t p = {.sched = s, .coll = coll, .shm = false};
    p.choice.alg = -1;
    p.choice.transport = 0;
    return p;
}

/* The same for a non-blocking or persistent call (counted in the coll_loom_i<coll>_*
 * counters).  A persistent request never goes through the node segment, whose calls
 * follow each other in start order: it runs point to point on the tag it reserved at
 * its _init (MPI-4 lets ranks start persistent collectives in different orders). */
const mca_coll_loom_sched_t *mca_coll_loom_plan_nb(mca_coll_loom_module_t *m, mca_coll_loom_coll_t coll,
                                                   struct ompi_communicator_t *comm, size_t bytes,
                                                   unsigned call, int root, mca_coll_loom_plan_t *plan,
                                                   bool persistent);

/* hierarchical's representatives' phase alone (leaders_only), cached like plan's */
const mca_coll_loom_sched_t *mca_coll_loom_plan_leaders(mca_coll_loom_module_t *m,
                                                        mca_coll_loom_coll_t coll,
                                                        struct ompi_communicator_t *comm,
                                                        unsigned call, int root);

/* Segments / chunks a pipelined algorithm uses for `bytes` (knob: bytes per
 * segment, 0 = automatic). */
int mca_coll_loom_pipeline_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob);

/* the cost model's parameters as set by coll_loom_model_* */
void mca_coll_loom_model_params(mca_coll_loom_model_params_t *m);

/* topology descriptor of a communicator (coll_loom_topo.c); the node of each process
 * is remembered per process, until mca_coll_loom_topo_cache_fini (component close) */
int mca_coll_loom_comm_topo(struct ompi_communicator_t *comm, mca_coll_loom_topo_t *topo);
/* true when every process of comm belongs to this process's job */
bool mca_coll_loom_comm_in_job(struct ompi_communicator_t *comm);
void mca_coll_loom_topo_cache_fini(void);
/* The torus map (coll_loom_torus.c): its MCA parameters; the hash of this process's
 * source for the settings check (0: none); a communicator's map at enable (from
 * coll_loom_torus_file) or right after its settings check agreed (coordinates from the
 * environment: a blocking allgather of the previous component, on every rank or none);
 * freeing it; the process's source at component close. */
void mca_coll_loom_torus_register(void);
uint64_t mca_coll_loom_torus_fingerprint(void);
void mca_coll_loom_torus_enable(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm);
int mca_coll_loom_torus_agree(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm);
void mca_coll_loom_torus_free(mca_coll_loom_module_t *m);
void mca_coll_loom_torus_close(void);

/* the host name of the node of `rank` as the topology knows it (the caller frees it),
 * NULL when unknown */
char *mca_coll_loom_comm_node_host(struct ompi_communicator_t *comm, int rank);

/* (buf, count, dtype) to or from its packed form at `packed` (bytes long,
 * coll_loom_data.c): a copy when the layout is one contiguous run, the convertor
 * otherwise.  The copy is inline: node-segment calls of a few bytes take it. */
int mca_coll_loom_convert(void *buf, size_t count, ompi_datatype_t *dtype, void *packed, size_t bytes,
                          bool to_packed);

static inline bool mca_coll_loom_packed_is_layout(ompi_datatype_t *dtype, size_t count)
{
    return count <= INT32_MAX && ompi_datatype_is_contiguous_memory_layout(dtype, (int32_t) count);
}

static inline int mca_coll_loom_pack(const void *buf, size_t count, ompi_datatype_t *dtype, void *dst,
                                     size_t bytes)
{
    if (OPAL_LIKELY(mca_coll_loom_component.test_fail_conversion <= 0) &&
        mca_coll_loom_packed_is_layout(dtype, count)) {
        ptrdiff_t lb, extent;
        ompi_datatype_get_true_extent(dtype, &lb, &extent);
        mca_coll_loom_copy(dst, (const char *) buf + lb, bytes);
        return OMPI_SUCCESS;
    }
    return mca_coll_loom_convert((void *) (uintptr_t) buf, count, dtype, dst, bytes, true);
}

static inline int mca_coll_loom_unpack(const void *src, size_t bytes, void *buf, size_t count,
                                       ompi_datatype_t *dtype)
{
    if (OPAL_LIKELY(mca_coll_loom_component.test_fail_conversion <= 0) &&
        mca_coll_loom_packed_is_layout(dtype, count)) {
        ptrdiff_t lb, extent;
        ompi_datatype_get_true_extent(dtype, &lb, &extent);
        mca_coll_loom_copy((char *) buf + lb, src, bytes);
        return OMPI_SUCCESS;
    }
    return mca_coll_loom_convert(buf, count, dtype, (void *) (uintptr_t) src, bytes, false);
}

/* The transport of a call whose rules chose `transport` (choice.transport), and its
 * state for the communicator (*state): loom's UCX worker when the communicator has it
 * and coll_loom_transport was ucx when it decided, or auto and a transport rule named
 * ucx; the PML otherwise.  Every rank decides alike: the rules see the call's agreed
 * size, as for the algorithm. */
static inline const mca_coll_loom_tl_t *mca_coll_loom_call_tl(const mca_coll_loom_module_t *m, int transport,
                                                              void **state)
{
    if (OPAL_LIKELY(NULL == m->ucx) ||
        (MCA_COLL_LOOM_TRANSPORT_UCX != m->transport_mode &&
         (MCA_COLL_LOOM_TRANSPORT_AUTO != m->transport_mode || MCA_COLL_LOOM_RULE_UCX != transport))) {
        *state = NULL;
        return &mca_coll_loom_tl_pml;
    }
    *state = m->ucx;
    return &mca_coll_loom_tl_ucx;
}

/* True when (count, dtype) holds no data: count 0, or a type of size 0.  MPI allows
 * the one on some ranks and the other elsewhere (both signatures are empty), so every
 * entry point tests both, never the count alone.  *tsize: the type's size. */
static inline bool mca_coll_loom_empty(size_t count, ompi_datatype_t *dtype, size_t *tsize)
{
    ompi_datatype_type_size(dtype, tsize);
    return 0 == count || 0 == *tsize;
}

/* n elements of dtype from src to dst (same layout, no overlap): a contiguous block
 * through mca_coll_loom_copy, which avoids memcpy's slow case for buffers a few bytes
 * apart modulo 4 KiB (opal/loom/loom_copy.h), anything else through the datatype
 * engine (coll_loom_data.c). */
int mca_coll_loom_copy_content(ompi_datatype_t *dtype, size_t n, char *dst, const char *src);

/* Scratch buffers of large calls: taken from / given back to a per-process pool
 * (coll_loom_scratch.c; freed at component close). */
void *mca_coll_loom_scratch_take(size_t bytes);
void mca_coll_loom_scratch_give(void *p, size_t bytes);
void mca_coll_loom_scratch_release_all(void);

/* True when (op, dtype) has an exact inverse the executor's UNREDUCE implements:
 * wrapping integer sum or bitwise xor on a predefined fixed-width integer type. */
bool mca_coll_loom_invertible(ompi_op_t *op, ompi_datatype_t *dtype);
/* dst := dst o src^-1 (count elements) for a pair mca_coll_loom_invertible() accepts */
int mca_coll_loom_unreduce(ompi_op_t *op, ompi_datatype_t *dtype, const void *src, void *dst, size_t count);

/* True when MPI_SUM on this predefined integer type wraps (is a group operation) with
 * the op kernels selected in this process; false for anything else. */
bool mca_coll_loom_sum_wraps(ompi_op_t *op, const ompi_datatype_t *dtype);

/* True when a o b and b o a have the same bits for (op, dtype): an intrinsic
 * commutative op, but not a floating-point max or min (+0 / -0, NaN). */
bool mca_coll_loom_swappable(ompi_op_t *op, ompi_datatype_t *dtype);

/* call-shape flags (MCA_COLL_LOOM_CALL_*) of an allreduce with (op, dtype) */
unsigned mca_coll_loom_call_flags(ompi_op_t *op, ompi_datatype_t *dtype);

/* entry points */
int mca_coll_loom_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module);
int mca_coll_loom_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_loom_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_loom_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module);
int mca_coll_loom_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_loom_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_loom_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module);

int mca_coll_loom_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module);
int mca_coll_loom_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module);

/* The non-blocking (mca_coll_loom_i<coll>) and persistent (mca_coll_loom_<coll>_init)
 * forms, in the file of their blocking one. */
int mca_coll_loom_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module);
int mca_coll_loom_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module);
int mca_coll_loom_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module);
int mca_coll_loom_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                        ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_iscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module);
int mca_coll_loom_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module);
int mca_coll_loom_allreduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                 ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                             struct ompi_communicator_t *comm, struct ompi_info_t *info,
                             ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_reduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                              struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                 int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                 struct ompi_info_t *info, ompi_request_t **request,
                                 mca_coll_base_module_t *module);
int mca_coll_loom_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                      ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                            struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                            ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_scan_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_exscan_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module);

int mca_coll_loom_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);
int mca_coll_loom_alltoallv(const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_loom_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                             struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                             struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_alltoallv_init(const void *sbuf, const int *scounts, const int *sdispls,
                                 struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                 const int *rdispls, struct ompi_datatype_t *rdtype,
                                 struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                 ompi_request_t **request, mca_coll_base_module_t *module);

/* Threshold bcast and reduce (coll_loom_threshold.c): reads the communicator's info keys
 * and follows MPI_Comm_set_info; registers the MPI_T variables bound to communicators. */
void mca_coll_loom_thresholds_enable(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm);
void mca_coll_loom_thresholds_register(void);
/* The count a bcast (which: MCA_COLL_LOOM_THRESHOLD_BCAST) or reduce (_REDUCE) of `count`
 * elements delivers under the communicator's threshold; remembered for MPI_T. */
size_t mca_coll_loom_threshold_count(mca_coll_loom_module_t *m, int which, size_t count);
static inline int mca_coll_loom_threshold_apply(mca_coll_loom_module_t *m, int which, int count)
{
    if (OPAL_LIKELY(m->threshold[which] >= 1.0)) {
        m->delivered[which] = (size_t) (count > 0 ? count : 0);
        return count;
    }
    return (int) mca_coll_loom_threshold_count(m, which, (size_t) count);
}
/* MPI_Reduce, MPI_Ireduce, MPIX_Reduce_init under loom_reduce_engage (request NULL: the
 * blocking form).  OMPI_ERR_NOT_AVAILABLE: not engaged here (no key, or an op that is not
 * commutative), the caller goes on as usual.  The key is tested in line: every reduce
 * passes here. */
int mca_coll_loom_reduce_engaged_run(mca_coll_loom_module_t *m, const void *sbuf, void *rbuf, int count,
                                     struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                     struct ompi_communicator_t *comm, bool persistent, ompi_request_t **request);
static inline int mca_coll_loom_reduce_engaged(mca_coll_loom_module_t *m, const void *sbuf, void *rbuf, int count,
                                               struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                               struct ompi_communicator_t *comm, bool persistent,
                                               ompi_request_t **request)
{
    if (OPAL_LIKELY(m->threshold[MCA_COLL_LOOM_THRESHOLD_ENGAGE] >= 1.0)) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    return mca_coll_loom_reduce_engaged_run(m, sbuf, rbuf, count, dtype, op, root, comm, persistent, request);
}
/* How many ranks a reduce under loom_reduce_engage combines on P ranks: the first
 * stages of a binomial tree, the smallest power of two >= ceil(F * P), at most P. */
int mca_coll_loom_engaged_ranks(const mca_coll_loom_module_t *m, int P);

/* The module serving comm's collectives, also while it is being enabled (for info-key
 * callbacks and MPI_T variables bound to communicators; NULL: not loom's). */
mca_coll_loom_module_t *mca_coll_loom_info_module(struct ompi_communicator_t *comm);

/* call flags of a collective without an op (bcast, allgather): no restriction applies */
#define MCA_COLL_LOOM_CALL_NO_OP (MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT)

/* call flags of (op, dtype), cached in the module for predefined pairs */
static inline unsigned mca_coll_loom_module_call_flags(mca_coll_loom_module_t *m, ompi_op_t *op,
                                                       ompi_datatype_t *dtype)
{
    unsigned call;

    /* Predefined ops and datatypes live at fixed addresses for the whole run, so the
     * last such pair's properties can be remembered.  A user op or derived datatype
     * could be freed and another created at the same address: never cached. */
    if (OPAL_LIKELY(op == m->flags_op && dtype == m->flags_dtype)) {
        return m->flags_call;
    }
    call = mca_coll_loom_call_flags(op, dtype);
    if (ompi_op_is_intrinsic(op) && ompi_datatype_is_predefined(dtype)) {
        m->flags_op = op;
        m->flags_dtype = dtype;
        m->flags_call = call;
    }
    return call;
}

/* True when coll_loom_verbose asks for messages of this level (cheap test before
 * formatting anything on the per-call path). */
#define MCA_COLL_LOOM_VERBOSE(level) (mca_coll_loom_component.verbose >= (level))

/* coll_loom_verbose may be changed through MPI_T: the output follows it (one compare
 * per call, in line) */
static inline void mca_coll_loom_sync_verbosity(void)
{
    if (OPAL_UNLIKELY(mca_coll_loom_component.verbose != mca_coll_loom_component.output_verbosity)) {
        mca_coll_loom_apply_verbosity();
    }
}

/* After an error, ranks of other nodes (or peers of a point-to-point schedule) may still
 * wait inside the failed call for messages this rank will not send; the messages of a
 * later call carry the same tags and would complete theirs with the wrong data.  So a
 * failure that other ranks may not have seen marks the communicator: from then on its
 * collectives return MPI_ERR_OTHER on this rank without communicating (said once).
 * MPI leaves the state after an error undefined; this keeps it from turning into wrong
 * results elsewhere.  Failures inside one node's segment on a communicator of one node
 * reach every rank of it through the segment and leave it usable (coll_loom_shm.c). */
void mca_coll_loom_mark_failed(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, int coll, int rc);

/* A schedule of a call of `coll` finished with rc on this rank.  When
 * the task was aborted (mca_coll_loom_task_aborted) the communicator is marked as
 * above; otherwise every message of the call was matched (the task ran on poisoned,
 * coll_loom_exec.c): the peers whose results depend on this rank failed too, and the
 * communicator stays usable on every node.  Said at coll_loom_verbose 1, naming the
 * collective, the cause (this rank's own failure, or the rank it came from) and what
 * loom did. */
/* A call of coll that loom planned but hands to the previous component on every rank
 * alike, before any message (why: the condition): said once per communicator at
 * coll_loom_verbose 1, naming the collective. */
void mca_coll_loom_refused(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, int coll, const char *why);

void mca_coll_loom_call_failed(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm, int coll, int rc,
                               bool aborted, int from_peer);

/* What a call through the node segment returned.  On several nodes a failure marks the
 * communicator on every rank that sees it: the coordinator that left the leaders' phase
 * out (coll_loom_shm.c) and the ranks its status reached, which would otherwise wait
 * for it at their next call. */
static inline int mca_coll_loom_shm_outcome(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm,
                                            int coll, int rc)
{
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc) && m->topo.nnodes > 1) {
        mca_coll_loom_mark_failed(m, comm, coll, rc);
    }
    return rc;
}

/* true the first time this process asks about *flag, from any thread (a message said
 * once per process) */
static inline bool mca_coll_loom_first_time(bool *flag)
{
    return !__atomic_exchange_n(flag, true, __ATOMIC_RELAXED);
}

/* Counters are plain per-process totals; atomics only when threads are in use. */
static inline void mca_coll_loom_count(unsigned long long *ctr)
{
    if (opal_using_threads()) {
        (void) __atomic_fetch_add(ctr, 1ULL, __ATOMIC_RELAXED);
    } else {
        ++*ctr;
    }
}

END_C_DECLS

#endif /* MCA_COLL_LOOM_EXPORT_H */
