/*
 * coll/loom: the component: MCA parameters, MPI_T performance variables,
 * open/close and comm_query.
 */
#include "ompi_config.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "opal/util/proc.h"
#include "ompi/runtime/mpiruntime.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/pml/base/base.h"

#include "coll_loom.h"
#include "coll_loom_shm.h"
#include "coll_loom_nbc.h"
#include "coll_loom_ssp.h"

static int loom_register(void);
static void add_help_dir(void);
static int loom_open(void);
static int loom_close(void);

mca_coll_loom_component_t mca_coll_loom_component = {
    .super = {
        .collm_version = {
            MCA_COLL_LOOM_COLL_VERSION,

            .mca_component_name = "loom",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),

            .mca_open_component = loom_open,
            .mca_close_component = loom_close,
            .mca_register_component_params = loom_register,
        },
        .collm_data = {
            /* the component is checkpoint ready */
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },

        .collm_init_query = mca_coll_loom_init_query,
        .collm_comm_query = mca_coll_loom_comm_query,
    },
    .priority = 40,
    .verbose = 0,
    .output = -1,
    .output_verbosity = 0,
};

/* Appends to a growing, NUL-terminated description; gives up silently when full
 * (the description is documentation, a truncated one is better than none). */
static void desc_append(char *buf, size_t len, const char *fmt, const char *a, const char *b)
{
    size_t used = strlen(buf);
    if (used + 1 < len) {
        snprintf(buf + used, len - used, fmt, a, b);
    }
}

/* The enumerators' items: "auto" and the algorithms serving each collective, ended by a
 * NULL string.  The MCA variable system keeps pointers into them for the process's life. */
static mca_base_var_enum_value_t alg_names[MCA_COLL_LOOM_NUM_COLLS][MCA_COLL_LOOM_MAX_ALGS + 2];

static void register_algorithm_param(mca_coll_loom_coll_t coll)
{
    mca_base_component_t *c = &mca_coll_loom_component.super.collm_version;
    mca_coll_loom_alg_param_t *p = &mca_coll_loom_component.alg_param[coll];
    mca_base_var_enum_value_t *items = alg_names[coll];
    mca_base_var_enum_t *names = NULL;
    const char *cname = mca_coll_loom_coll_name(coll);
    char name[64], desc[2048];
    int n = 0;

    snprintf(desc, sizeof(desc),
             "Algorithm loom uses for MPI_%c%s: \"auto\" (the rules of coll_loom_rules_file, "
             "then loom's built-in rules; they may also leave a call to the component selected "
             "before loom) or the name of one algorithm:",
             cname[0] - 'a' + 'A', cname + 1);
    items[n++] = (mca_base_var_enum_value_t) {-1, "auto"};
    for (int a = 0; a < mca_coll_loom_component.nalgs; ++a) {
        if (mca_coll_loom_alg_serves(a, coll)) {
            desc_append(desc, sizeof(desc), n > 1 ? "; \"%s\" (%s)" : " \"%s\" (%s)",
                        mca_coll_loom_algs[a]->name, mca_coll_loom_algs[a]->description);
            items[n++] = (mca_base_var_enum_value_t) {a, mca_coll_loom_algs[a]->name};
        }
    }
    items[n] = (mca_base_var_enum_value_t) {0, NULL};
    desc_append(desc, sizeof(desc), "%s%s",
                ". A forced algorithm that cannot serve a call (for example a non-commutative op) "
                "is replaced by the rules' choice, with a warning at coll_loom_verbose >= 1; "
                "Open MPI refuses any other name with a warning, and \"auto\" stays. May be "
                "changed at run time through MPI_T (MPI_T_cvar_write), with the same value on "
                "every process.", "");

    snprintf(name, sizeof(name), "coll_loom_%s_algorithm", cname);
    p->value = -1;
    if (OPAL_SUCCESS != mca_base_var_enum_create(name, items, &names)) {
        names = NULL; /* still registered, as a number */
    }
    (void) mca_base_component_var_register(c, name + strlen("coll_loom_"), desc, MCA_BASE_VAR_TYPE_INT,
                                           names, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_ALL_EQ, &p->value);
    if (NULL != names) {
        OBJ_RELEASE(names); /* the variable holds its own reference */
    }
}

/* One parameter per distinct knob name in the registry. */
static void register_knobs(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    mca_base_component_t *c = &cm->super.collm_version;

    cm->nknobs = 0;
    for (int a = 0; a < cm->nalgs; ++a) {
        const mca_coll_loom_alg_t *alg = mca_coll_loom_algs[a];
        int k;

        cm->alg_knob[a] = -1;
        if (NULL == alg->knob) {
            continue;
        }
        for (k = 0; k < cm->nknobs; ++k) {
            if (0 == strcmp(cm->knobs[k].name, alg->knob)) {
                break;
            }
        }
        if (k == cm->nknobs) {
            if (cm->nknobs == MCA_COLL_LOOM_MAX_KNOBS) {
                opal_output(0, "coll/loom: too many knobs in the registry; coll_loom_%s ignored",
                            alg->knob);
                continue;
            }
            mca_coll_loom_knob_t *kn = &cm->knobs[cm->nknobs++];
            memset(kn, 0, sizeof(*kn));
            kn->name = alg->knob;
            kn->def = alg->knob_default;
            kn->min = alg->knob_min;
            kn->max = alg->knob_max;
            kn->value = kn->def;
        }
        cm->alg_knob[a] = k;
    }

    for (int k = 0; k < cm->nknobs; ++k) {
        mca_coll_loom_knob_t *kn = &cm->knobs[k];
        char desc[1024], range[96];

        snprintf(desc, sizeof(desc), "Knob of the loom algorithm(s)");
        for (int a = 0; a < cm->nalgs; ++a) {
            if (cm->alg_knob[a] == k) {
                desc_append(desc, sizeof(desc), " \"%s\" (%s)", mca_coll_loom_algs[a]->name,
                            mca_coll_loom_algs[a]->description);
            }
        }
        snprintf(range, sizeof(range), ". Valid range %d..%d, default %d; ", kn->min, kn->max,
                 kn->def);
        desc_append(desc, sizeof(desc), "%s%s", range,
                    "an out-of-range value gives a warning and the default. Used when the "
                    "algorithm is forced and by the built-in rules that do not fix it. May be "
                    "changed at run time through MPI_T, with the same value on every process.");
        (void) mca_base_component_var_register(c, kn->name, desc, MCA_BASE_VAR_TYPE_INT, NULL, 0,
                                               MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_5,
                                               MCA_BASE_VAR_SCOPE_ALL_EQ, &kn->value);
    }
}

/* coll_loom_model_*: the LogGP parameters (docs/dev/model.md); test/bench/loom_pingpong
 * measures them.  Every process must see the same values: they decide how many
 * segments a pipelined schedule has, and all ranks must build the same one. */
static void register_model_params(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    mca_base_component_t *c = &cm->super.collm_version;
    const struct {
        const char *name, *desc;
        double *store, def;
    } p[] = {
        {"model_latency", "Cost model: latency L of a message, microseconds", &cm->model_latency_us,
         MCA_COLL_LOOM_MODEL_DEFAULT_LATENCY_US},
        {"model_overhead", "Cost model: CPU overhead o per message, microseconds",
         &cm->model_overhead_us, MCA_COLL_LOOM_MODEL_DEFAULT_OVERHEAD_US},
        {"model_gap", "Cost model: gap g between two messages of one rank, microseconds",
         &cm->model_gap_us, MCA_COLL_LOOM_MODEL_DEFAULT_GAP_US},
        {"model_gap_per_byte", "Cost model: time G per byte on a link, nanoseconds (1/bandwidth)",
         &cm->model_gap_per_byte_ns, MCA_COLL_LOOM_MODEL_DEFAULT_GAP_PER_BYTE_NS},
        {"model_reduce_per_byte", "Cost model: time per byte of a reduction, nanoseconds",
         &cm->model_reduce_per_byte_ns, MCA_COLL_LOOM_MODEL_DEFAULT_REDUCE_PER_BYTE_NS},
        {"model_copy_per_byte", "Cost model: time per byte of a local copy, nanoseconds",
         &cm->model_copy_per_byte_ns, MCA_COLL_LOOM_MODEL_DEFAULT_COPY_PER_BYTE_NS},
    };

    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); ++i) {
        *p[i].store = p[i].def;
        (void) mca_base_component_var_register(c, p[i].name, p[i].desc, MCA_BASE_VAR_TYPE_DOUBLE, NULL,
                                               0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
                                               p[i].store);
    }
}

void mca_coll_loom_model_params(mca_coll_loom_model_params_t *m)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    mca_coll_loom_model_params_set(m, cm->model_latency_us, cm->model_overhead_us, cm->model_gap_us,
                                   cm->model_gap_per_byte_ns, cm->model_reduce_per_byte_ns,
                                   cm->model_copy_per_byte_ns);
}

/* One of loom's MPI_T counters: read-only, continuous, not bound to an object. */
static void register_counter(const char *name, const char *desc, unsigned long long *counter)
{
    (void) mca_base_component_pvar_register(&mca_coll_loom_component.super.collm_version, name, desc,
                                            OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
                                            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                                            MCA_BASE_VAR_BIND_NO_OBJECT,
                                            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                            NULL, NULL, NULL, counter);
}

/* coll_loom_<coll>_<alg>_calls and coll_loom_<coll>_fallback_calls: read by the tests
 * to prove which algorithm ran; the node segment's counters.  The MCA system prefixes
 * "coll_loom_". */
static void register_pvars(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    char name[128], desc[256];

    for (int coll = 0; coll < MCA_COLL_LOOM_NUM_COLLS; ++coll) {
        const char *cname = mca_coll_loom_coll_name(coll);

        for (int a = 0; a < cm->nalgs; ++a) {
            if (!mca_coll_loom_alg_serves(a, coll)) {
                continue;
            }
            snprintf(name, sizeof(name), "%s_%s_calls", cname, mca_coll_loom_algs[a]->name);
            snprintf(desc, sizeof(desc), "Number of %s calls on which loom ran the '%s' algorithm",
                     cname, mca_coll_loom_algs[a]->name);
            register_counter(name, desc, &cm->alg_calls[coll][a]);
        }
        snprintf(name, sizeof(name), "%s_fallback_calls", cname);
        snprintf(desc, sizeof(desc),
                 "Number of %s calls loom handed to the component selected before it", cname);
        register_counter(name, desc, &cm->fallback_calls[coll]);

        /* the non-blocking and persistent forms: i<coll> */
        for (int a = 0; a < cm->nalgs; ++a) {
            if (!mca_coll_loom_alg_serves(a, coll)) {
                continue;
            }
            snprintf(name, sizeof(name), "i%s_%s_calls", cname, mca_coll_loom_algs[a]->name);
            snprintf(desc, sizeof(desc),
                     "Number of non-blocking and persistent %s calls (starts of MPI_I%s and "
                     "plans of MPI_%s_init) on which loom ran the '%s' algorithm",
                     cname, cname, cname, mca_coll_loom_algs[a]->name);
            register_counter(name, desc, &cm->nb_alg_calls[coll][a]);
        }
        snprintf(name, sizeof(name), "i%s_fallback_calls", cname);
        snprintf(desc, sizeof(desc),
                 "Number of non-blocking and persistent %s calls loom handed to the component "
                 "selected before it", cname);
        register_counter(name, desc, &cm->nb_fallback_calls[coll]);
    }
    register_counter("shm_node_phases",
                     "Number of hierarchical calls whose node phases ran through the node's shared "
                     "segment",
                     &cm->shm_node_phases);
    register_counter("shm_segments_created",
                     "Number of node shared segments this process created or mapped for a "
                     "communicator",
                     &cm->shm_segments_created);
    register_counter("ucx_transfers",
                     "Number of sends and receives loom posted on its own UCX worker "
                     "(coll_loom_transport ucx)",
                     &cm->ucx_transfers);
    register_counter("ucx_puts",
                     "Number of messages loom wrote straight into the receiver's window over its own "
                     "UCX worker (coll_loom_ucx_put_max)",
                     &cm->ucx_puts);
    register_counter("shm_segments_reused",
                     "Number of node shared segments this process took over from a freed "
                     "communicator (coll_loom_shm_pool)",
                     &cm->shm_segments_reused);
}

static void register_transport_param(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    static const mca_base_var_enum_value_t items[] = {{MCA_COLL_LOOM_TRANSPORT_AUTO, "auto"},
                                                      {MCA_COLL_LOOM_TRANSPORT_PML, "pml"},
                                                      {MCA_COLL_LOOM_TRANSPORT_UCX, "ucx"},
                                                      {0, NULL}};
    mca_base_var_enum_t *names = NULL;

    cm->transport = MCA_COLL_LOOM_TRANSPORT_AUTO;
    if (OPAL_SUCCESS != mca_base_var_enum_create("coll_loom_transport", items, &names)) {
        names = NULL;
    }
    (void) mca_base_component_var_register(&cm->super.collm_version, "transport",
                                           "How loom's point-to-point transfers travel: \"pml\" "
                                           "(Open MPI's point-to-point layer, ob1 or ucx), \"ucx\" "
                                           "(loom's own UCX worker: tag messages, its endpoints set "
                                           "up at a communicator's first blocking collective; where "
                                           "UCX cannot start, the PML, with a message at "
                                           "coll_loom_verbose 1), \"auto\" (per call, as the "
                                           "transport rules say: built in, allreduce and alltoall "
                                           "of up to 16 KiB between nodes over loom's worker unless "
                                           "the PML is ucx, everything else over the PML). "
                                           "LOOM_UCX_<VAR> "
                                           "in the environment sets a UCX variable for loom's worker "
                                           "alone. Must be the same on every process; a change "
                                           "through MPI_T applies to communicators that have not "
                                           "made a blocking collective yet",
                                           MCA_BASE_VAR_TYPE_INT, names, 0, MCA_BASE_VAR_FLAG_SETTABLE,
                                           OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_ALL_EQ, &cm->transport);
    if (NULL != names) {
        OBJ_RELEASE(names);
    }
    cm->ucx_put_max = 0;
    (void) mca_base_component_var_register(&cm->super.collm_version, "ucx_put_max",
                                           "For calls on loom's UCX worker: the bytes per sender and call that "
                                           "a message of a pairwise exchange (alltoall's direct and "
                                           "pairwise) may write straight into a window at the "
                                           "receiver, a one-sided put followed by a notification (the "
                                           "direct writes of Iakymchuk et al.); larger messages travel as tag "
                                           "messages. Each communicator on UCX then keeps a window of "
                                           "2 x size x this many bytes per process. 0: none. The "
                                           "largest value of the communicator's ranks applies; a "
                                           "change through MPI_T applies to communicators that have "
                                           "not made a blocking collective yet",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE,
                                           OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, &cm->ucx_put_max);
}

static void register_shm_params(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    mca_base_component_t *c = &cm->super.collm_version;

    cm->shm = true;
    (void) mca_base_component_var_register(c, "shm",
                                           "Run the node phases of the hierarchical algorithm "
                                           "through a shared segment per node for calls up to "
                                           "coll_loom_shm_slot_size bytes (0: always "
                                           "point-to-point). Must be the same on every process",
                                           MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_ALL_EQ, &cm->shm);
    cm->shm_slot_size = 8192;
    (void) mca_base_component_var_register(c, "shm_slot_size",
                                           "Bytes per rank in a node's shared segment; hierarchical "
                                           "calls up to this size use shared memory inside the "
                                           "node, larger ones point-to-point messages. A node of "
                                           "n ranks maps (n + 8) times this much, plus (n + 1) x "
                                           "66 KiB of small slots and areas, per communicator. "
                                           "Must be the same on every process",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_ALL_EQ, &cm->shm_slot_size);
    cm->shm_setup_call = 8;
    (void) mca_base_component_var_register(c, "shm_setup_call",
                                           "The node's shared segment of a communicator is set up "
                                           "at the N-th call that could use it (1: at the first); "
                                           "earlier calls run as with coll_loom_shm 0, so a "
                                           "communicator used for a few calls does not pay for a "
                                           "segment (about 120 us with 2 ranks, more with more). "
                                           "Must be the same on every process",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_ALL_EQ, &cm->shm_setup_call);
    cm->shm_pool = 4;
    (void) mca_base_component_var_register(c, "shm_pool",
                                           "Node shared segments a process keeps, mapped, after "
                                           "their communicators are freed (at most 64; 0: none). "
                                           "A new communicator whose every node holds the same "
                                           "processes in the same order as a freed one's takes its "
                                           "segments over at its first call instead of setting up "
                                           "new ones",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_ALL, &cm->shm_pool);
    cm->shm_dir = "/dev/shm";
    (void) mca_base_component_var_register(c, "shm_dir",
                                           "Directory (a tmpfs) where a node's leader creates the "
                                           "shared segment; the file is removed as soon as every "
                                           "rank of the node has mapped it. If it cannot be created "
                                           "or mapped, loom says so at coll_loom_verbose >= 1 and "
                                           "uses point-to-point messages",
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_ALL_EQ, &cm->shm_dir);
    cm->shm_outbox_size = 262144;
    (void) mca_base_component_var_register(c, "shm_outbox_size",
                                           "Bytes of a rank's outbox for the direct alltoall of a "
                                           "communicator of one node: a call whose send buffer fits "
                                           "is copied into it and read out by the receivers, so the "
                                           "sender leaves at once. A communicator maps 2 outboxes per "
                                           "rank, at its first such call (0: none; larger calls go "
                                           "point-to-point). Must be the same on every process",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_ALL_EQ, &cm->shm_outbox_size);
    cm->shm_spin = -1;
    (void) mca_base_component_var_register(c, "shm_spin",
                                           "Checks of a shared-memory flag (each followed by MPI "
                                           "progress) before a waiting rank sleeps until it is "
                                           "woken; -1: 64 when ranks share cores "
                                           "(mpi_yield_when_idle), 100000 otherwise",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE,
                                           OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL, &cm->shm_spin);
    cm->test_fail_conversion = 0;
    (void) mca_base_component_var_register(c, "test_fail_conversion",
                                           "For loom's tests only: the N-th conversion of data into "
                                           "or out of a node's shared segment that this process "
                                           "makes from now on fails as if memory ran out (the value "
                                           "then goes back to 0), so that test/mpi/test_faults can "
                                           "check how a failure is reported; 0: none",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE,
                                           OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
                                           &cm->test_fail_conversion);
    cm->test_fail_local = 0;
    (void) mca_base_component_var_register(c, "test_fail_local",
                                           "For loom's tests only: the N-th local step (a copy or "
                                           "a reduction) of a point-to-point schedule that this "
                                           "process runs from now on fails as if memory ran out "
                                           "(the value then goes back to 0), so that "
                                           "test/mpi/test_zeros can check that the call fails "
                                           "cleanly and the communicator stays usable; 0: none",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE,
                                           OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
                                           &cm->test_fail_local);
}

static int loom_register(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    mca_base_component_t *c = &cm->super.collm_version;

    add_help_dir();
    cm->nalgs = mca_coll_loom_num_algs;
    if (cm->nalgs > MCA_COLL_LOOM_MAX_ALGS) {
        opal_output(0, "coll/loom: the registry holds %d algorithms, only the first %d are used",
                    cm->nalgs, MCA_COLL_LOOM_MAX_ALGS);
        cm->nalgs = MCA_COLL_LOOM_MAX_ALGS;
    }

    cm->priority = 40;
    (void) mca_base_component_var_register(c, "priority",
                                           "Priority of the loom coll component (tuned is 30, "
                                           "han 0 in Open MPI 4.1: the highest priority that "
                                           "provides a collective on a communicator is used; a "
                                           "negative value disables loom)",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
                                           MCA_BASE_VAR_SCOPE_READONLY, &cm->priority);

    cm->verbose = 0;
    (void) mca_base_component_var_register(c, "verbose",
                                           "Verbosity of coll/loom: 0 = silent except for bad "
                                           "parameter values; 1 = warnings about refused "
                                           "forced algorithms and fallbacks to the previous "
                                           "component; 10 = the topology descriptor of each "
                                           "communicator; 20 = one line per call (collective, "
                                           "bytes, communicator shape, chosen algorithm and "
                                           "knob, and the rule or restriction that chose it); "
                                           "30 = also every schedule when it is built",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0,
                                           MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_9,
                                           MCA_BASE_VAR_SCOPE_LOCAL, &cm->verbose);

    cm->rules_file = NULL;
    (void) mca_base_component_var_register(c, "rules_file",
                                           "Path of a rules file (docs/user/tuning.md): lines such as "
                                           "'allreduce P=8- op=commutative bytes=-2K -> bruck "
                                           "bruck_ports=3', first match wins, tried before loom's "
                                           "built-in rules.  Read at MPI_Init; must be readable with "
                                           "the same content by every process.  A malformed file "
                                           "is reported with path, line, column and reason, and "
                                           "loom goes on with its built-in rules",
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4,
                                           MCA_BASE_VAR_SCOPE_ALL_EQ, &cm->rules_file);
    cm->dump_rules = false;
    (void) mca_base_component_var_register(c, "dump_rules",
                                           "Print the rules in force (those of coll_loom_rules_file, "
                                           "then the built-in ones, in the rules-file syntax) at "
                                           "MPI_Init, from the first process",
                                           MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4,
                                           MCA_BASE_VAR_SCOPE_READONLY, &cm->dump_rules);

    for (int coll = 0; coll < MCA_COLL_LOOM_NUM_COLLS; ++coll) {
        register_algorithm_param(coll);
    }
    register_knobs();
    register_model_params();
    cm->scratch_keep = 64 * 1024 * 1024;
    (void) mca_base_component_var_register(c, "scratch_keep",
                                           "Largest scratch buffer (bytes) loom keeps between calls "
                                           "for reuse, one per process; larger ones are freed after "
                                           "each call. Reuse spares large collectives the page "
                                           "faults of fresh memory",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_READONLY, &cm->scratch_keep);
    register_shm_params();
    register_transport_param();
    register_pvars();
    mca_coll_loom_thresholds_register();
    mca_coll_loom_ssp_register();
    mca_coll_loom_torus_register();
    return OMPI_SUCCESS;
}

/* help-coll-loom.txt lies next to mca_coll_loom.so (make install puts it there, and the
 * build copies it next to the build tree's), where Open MPI, which searches only its own
 * data directory, is told to look. */
static void add_help_dir(void)
{
    static bool added;
    Dl_info info;
    char *dir, *slash;

    if (added || 0 == dladdr((void *) &mca_coll_loom_component, &info) || NULL == info.dli_fname) {
        return;
    }
    dir = strdup(info.dli_fname);
    slash = NULL != dir ? strrchr(dir, '/') : NULL;
    if (NULL != slash) {
        *slash = '\0';
        added = OPAL_SUCCESS == opal_show_help_add_dir(dir);
    }
    free(dir);
}

void mca_coll_loom_show_help(const char *topic, bool want_error_header, ...)
{
    va_list ap;

    va_start(ap, want_error_header);
#if MCA_COLL_LOOM_RUNTIME_RELAYS_HELP
    (void) opal_show_vhelp("help-coll-loom.txt", topic, want_error_header, ap);
#else
    char *text = opal_show_help_vstring("help-coll-loom.txt", topic, want_error_header, ap);
    if (NULL != text) {
        /* the component's stream: its lines name the host and process */
        opal_output(mca_coll_loom_component.output >= 0 ? mca_coll_loom_component.output : 0, "%s",
                    text);
        free(text);
    }
#endif
    va_end(ap);
}

static int loom_open(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    OBJ_CONSTRUCT(&cm->lock, opal_mutex_t);
    cm->output = opal_output_open(NULL);
    cm->output_verbosity = cm->verbose;
    opal_output_set_verbosity(cm->output, cm->verbose);

    for (int k = 0; k < cm->nknobs; ++k) {
        cm->knobs[k].checked = false;
        cm->knobs[k].nwarned = 0;
    }
    memset(cm->alg_calls, 0, sizeof(cm->alg_calls));
    memset(cm->fallback_calls, 0, sizeof(cm->fallback_calls));
    memset(cm->nb_alg_calls, 0, sizeof(cm->nb_alg_calls));
    memset(cm->nb_fallback_calls, 0, sizeof(cm->nb_fallback_calls));
    mca_coll_loom_nbc_init();
    mca_coll_loom_ssp_open();
    cm->job_agreed = 0;
    cm->shm_node_phases = 0;
    cm->shm_segments_created = 0;
    cm->shm_segments_reused = 0;
    mca_coll_loom_shm_pool_init();
    cm->hier_alg = -1;
    cm->direct_alg = -1;
    cm->torus_alg = -1;
    for (int a = 0; a < cm->nalgs; ++a) {
        if (0 == strcmp(mca_coll_loom_algs[a]->name, "hierarchical")) {
            cm->hier_alg = a;
        } else if (0 == strcmp(mca_coll_loom_algs[a]->name, "direct")) {
            cm->direct_alg = a;
        } else if (0 == strcmp(mca_coll_loom_algs[a]->name, "torus")) {
            cm->torus_alg = a;
        }
    }
    cm->rules.rules = NULL;
    cm->rules.nrules = 0;
    return OMPI_SUCCESS;
}

static int loom_close(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;

    mca_coll_loom_ssp_close();   /* these two leave loom's progress callback, */
    mca_coll_loom_ucx_finalize(); /* which goes next */
    mca_coll_loom_nbc_fini();

    mca_coll_loom_rules_free(&cm->rules);
    mca_coll_loom_scratch_release_all();
    mca_coll_loom_topo_cache_fini();
    mca_coll_loom_torus_close();
    mca_coll_loom_shm_pool_fini();
    if (cm->output >= 0) {
        opal_output_close(cm->output);
        cm->output = -1;
    }
    OBJ_DESTRUCT(&cm->lock);
    return OMPI_SUCCESS;
}

/* Reads coll_loom_rules_file.  A bad file is reported once per node (every process
 * reads it, and a file missing on one node only must not go unnoticed) and leaves
 * loom on its built-in rules. */
static void load_rules(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    mca_coll_loom_rules_error_t err;

    mca_coll_loom_rules_free(&cm->rules);
    if (NULL == cm->rules_file || '\0' == cm->rules_file[0]) {
        return;
    }
    if (0 == mca_coll_loom_rules_load(cm->rules_file, &cm->rules, &err)) {
        opal_output_verbose(10, cm->output, "coll/loom: %d rules read from %s", cm->rules.nrules,
                            cm->rules_file);
        return;
    }
    if (0 == opal_process_info.my_local_rank) {
        if (err.line > 0) {
            mca_coll_loom_show_help("rules-file-syntax", true, cm->rules_file, err.line,
                                    err.column, err.reason);
        } else {
            mca_coll_loom_show_help("rules-file-unreadable", true, cm->rules_file,
                                    err.reason);
        }
    }
}

static void dump_rules(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    char line[256];

    if (!cm->dump_rules || 0 != OPAL_PROC_MY_NAME.vpid) {
        return;
    }
    opal_output(0, "coll/loom: rules in force (first match wins; forced algorithms come first):");
    for (int i = 0; i < cm->rules.nrules; ++i) {
        mca_coll_loom_rule_format(&cm->rules.rules[i], line, sizeof(line));
        opal_output(0, "coll/loom:   %-72s # %s line %d", line, cm->rules_file, cm->rules.rules[i].line);
    }
    for (int i = 0; i < mca_coll_loom_num_builtin_rules; ++i) {
        mca_coll_loom_rule_format(&mca_coll_loom_builtin_rules[i], line, sizeof(line));
        opal_output(0, "coll/loom:   %-72s # built-in rule #%d", line, i);
    }
}

/* 64-bit FNV-1a: a fingerprint, not a defence against crafted input */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; ++i) {
        h = (h ^ p[i]) * 0x100000001b3ULL;
    }
    return h;
}

static uint64_t fnv1a_str(uint64_t h, const char *s)
{
    return fnv1a(h, s, strlen(s) + 1);
}

/* The rules in force in their canonical text (two files that differ only in comments
 * or spacing agree) and the registry's algorithms, so that a node running another
 * build of loom is noticed too. */
static uint64_t rules_fingerprint(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    uint64_t h = 0xcbf29ce484222325ULL;
    char line[256];

    for (int a = 0; a < cm->nalgs; ++a) {
        h = fnv1a_str(h, mca_coll_loom_algs[a]->name);
        h = fnv1a_str(h, NULL != mca_coll_loom_algs[a]->knob ? mca_coll_loom_algs[a]->knob : "");
    }
    for (int i = 0; i < cm->rules.nrules; ++i) {
        mca_coll_loom_rule_format(&cm->rules.rules[i], line, sizeof(line));
        h = fnv1a_str(h, line);
    }
    h = fnv1a_str(h, "built-in");
    for (int i = 0; i < mca_coll_loom_num_builtin_rules; ++i) {
        mca_coll_loom_rule_format(&mca_coll_loom_builtin_rules[i], line, sizeof(line));
        h = fnv1a_str(h, line);
    }
    return h;
}

uint64_t mca_coll_loom_settings_fingerprint(void)
{
    mca_coll_loom_component_t *cm = &mca_coll_loom_component;
    int knobs[mca_coll_loom_num_algs > 0 ? mca_coll_loom_num_algs : 1];
    const double model[] = {cm->model_latency_us,        cm->model_overhead_us,
                            cm->model_gap_us,            cm->model_gap_per_byte_ns,
                            cm->model_reduce_per_byte_ns, cm->model_copy_per_byte_ns};
    const int transport = cm->transport; /* auto follows the rules, which may differ from pml */
    /* values that behave alike hash alike: setup calls 1 and below all mean the first */
    const int shm[] = {cm->shm ? 1 : 0, cm->shm_slot_size, cm->shm_setup_call > 1 ? cm->shm_setup_call : 1,
                       cm->shm_outbox_size > 0 ? cm->shm_outbox_size : 0};
    /* the build's segment protocol: ranks of builds that lay the segment out differently
     * must not share one */
    const uint64_t protocol[] = {MCA_COLL_LOOM_SHM_MAGIC, MCA_COLL_LOOM_SHM_AREAS, MCA_COLL_LOOM_SHM_SYM_DEPTH,
                                 MCA_COLL_LOOM_SHM_SMALL_BYTES, MCA_COLL_LOOM_SHM_SYM_BYTES};
    uint64_t h = fnv1a(cm->rules_fingerprint, protocol, sizeof(protocol));

    /* effective values, as the decision sees them: "auto" and an unknown name agree */
    for (int coll = 0; coll < MCA_COLL_LOOM_NUM_COLLS; ++coll) {
        int forced = mca_coll_loom_forced_alg(coll);
        h = fnv1a(h, &forced, sizeof(forced));
    }
    const uint64_t torus = mca_coll_loom_torus_fingerprint();
    mca_coll_loom_current_knobs(knobs);
    h = fnv1a(h, knobs, sizeof(knobs));
    h = fnv1a(h, model, sizeof(model));
    h = fnv1a(h, &torus, sizeof(torus));
    h = fnv1a(h, &transport, sizeof(transport));
    return fnv1a(h, shm, sizeof(shm));
}

int mca_coll_loom_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    load_rules();
    dump_rules();
    mca_coll_loom_component.rules_fingerprint = rules_fingerprint();
    return OMPI_SUCCESS;
}

/* Open MPI's MPI_T_init_thread makes the level it is given the library's thread level: after
 * MPI_Init_thread(MPI_THREAD_MULTIPLE), MPI_T_init_thread(MPI_THREAD_SINGLE) turns the
 * point-to-point layer's thread safety off (ob1 then hands one cached request to two threads)
 * while the program's threads go on calling MPI.  Every collective, loom's or not, may then
 * fail at random; say so, since the crash will show up inside a collective. */
static void warn_lowered_thread_level(struct ompi_communicator_t *comm)
{
    static int warned;

    /* one line per job rather than per process: the communicator's first rank says it */
    if (opal_using_threads() && MPI_THREAD_SINGLE == ompi_mpi_thread_provided &&
        0 == ompi_comm_rank(comm) && 0 == __atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) {
        mca_coll_loom_show_help("thread-level-lowered", false);
    }
}

mca_coll_base_module_t *mca_coll_loom_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    mca_coll_loom_module_t *m;

    /* loom's schedules are for intracommunicators; a single rank has nothing to do */
    if (OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2 ||
        mca_coll_loom_component.priority < 0) {
        return NULL;
    }

    warn_lowered_thread_level(comm);
    m = OBJ_NEW(mca_coll_loom_module_t);
    if (NULL == m) {
        return NULL;
    }
    *priority = mca_coll_loom_component.priority;
    /* the job's PML, selected before any communicator exists (coll_loom_transport auto) */
    mca_coll_loom_component.pml_is_ucx =
        0 == strcmp(mca_pml_base_selected_component.pmlm_version.mca_component_name, "ucx");

    /* the base constructor zeroed every other function: the previous components keep them */
    m->super.coll_module_enable = mca_coll_loom_module_enable;
#define LOOM_SET_FN(name) m->super.coll_##name = mca_coll_loom_##name;
    MCA_COLL_LOOM_FOR_EACH_BLOCKING(LOOM_SET_FN)
    MCA_COLL_LOOM_FOR_EACH_OTHER(LOOM_SET_FN)
#undef LOOM_SET_FN
    return &m->super;
}
