/*
 * coll/loom: where a communicator's nodes sit on a torus (Mittal et al.), for the
 * torus-aware algorithms.  The coordinates of a node come from, in this order:
 *
 *   coll_loom_torus_file   a map of every node (opal/loom/loom_torus.h has its syntax),
 *                          read by every process: a communicator's nodes are looked up
 *                          by host name, without communication;
 *   LOOM_TORUS_COORDS      "x,y,z" in each process's environment, with the shape in
 *                          coll_loom_torus_dims;
 *   SLURM_TOPOLOGY_ADDR    Slurm's torus address "torus:x:y:z.<node>", with the shape in
 *                          coll_loom_torus_dims or, without it, the largest coordinates
 *                          of the communicator's nodes.
 *
 * The last two are known to each process for its own node only, so the ranks of a
 * communicator exchange them once, at its settings check (a blocking allgather of the
 * previous component, right after the check found the same source on every rank).
 * A communicator gets a torus map when every node has coordinates, the ranks of each
 * node agree on them and no two nodes share them; else loom says why, once per
 * process, and the communicator has none.  A bad file or value never stops a job.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/op/op.h"
#include "ompi/proc/proc.h"

#include "coll_loom.h"

enum { LOOM_TORUS_NONE, LOOM_TORUS_FILE, LOOM_TORUS_ENV, LOOM_TORUS_SLURM };
static const char *const loom_torus_source_name[] = {"none", "coll_loom_torus_file", "LOOM_TORUS_COORDS",
                                                     "SLURM_TOPOLOGY_ADDR"};

/* This process's source, loaded at the first communicator (under the component lock). */
static struct {
    bool loaded;
    int kind;
    bool have_shape;               /* from the file or coll_loom_torus_dims */
    mca_coll_loom_torus_t shape;   /* with the routing order applied */
    mca_coll_loom_torus_host_t *hosts;
    int nhosts;
    int mine[MCA_COLL_LOOM_TORUS_MAX_DIMS]; /* LOOM_TORUS_COORDS, SLURM_TOPOLOGY_ADDR */
    int nmine;
    uint64_t hash; /* what the settings check compares */
    char err[600]; /* why the source failed, until said (outside the lock) */
    /* environment and Slurm coordinates: MPI_COMM_WORLD's exchange, kept so that the
     * job's other communicators take theirs from it at enable, without an exchange of
     * their own (which a communicator whose first call is non-blocking cannot make).
     * Written inside MPI_Init, read-only afterwards. */
    int *world;                    /* [world_P * shape.ndims], by world rank */
    int world_P;
    mca_coll_loom_torus_t world_shape;
} loom_torus;

static char *loom_torus_file, *loom_torus_dims, *loom_torus_order;
static int loom_torus_trees;

void mca_coll_loom_torus_register(void)
{
    mca_base_component_t *c = &mca_coll_loom_component.super.collm_version;

    loom_torus_file = NULL;
    (void) mca_base_component_var_register(c, "torus_file",
                                           "Torus map of the nodes: a line \"dims X Y Z\" (1 to 6 "
                                           "dimensions, \":mesh\" after one without wrap-around "
                                           "links), then \"<hostname> <x> <y> <z>\" per node; '#' "
                                           "starts a comment. Read by every process; errors are "
                                           "reported with file and line and turn the torus-aware "
                                           "algorithms off",
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_READONLY, &loom_torus_file);
    loom_torus_dims = NULL;
    (void) mca_base_component_var_register(c, "torus_dims",
                                           "Shape of the torus (e.g. 8x8x8, or 4x4x2:mesh) for "
                                           "coordinates from LOOM_TORUS_COORDS or Slurm's "
                                           "SLURM_TOPOLOGY_ADDR (torus:x:y:z.<node>) when there is no "
                                           "coll_loom_torus_file",
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_READONLY, &loom_torus_dims);
    loom_torus_order = NULL;
    (void) mca_base_component_var_register(c, "torus_route_order",
                                           "Order in which the network routes the dimensions, by "
                                           "letter (xyz, zyx) or number (0,1,2); default: x first. "
                                           "loom's contention-free trees assume dimension-ordered "
                                           "routing, the shorter way around each ring",
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_READONLY, &loom_torus_order);
    loom_torus_trees = 2;
    (void) mca_base_component_var_register(c, "torus_trees",
                                           "Trees a torus bcast or reduce spreads its segments over: "
                                           "2 (default) adds, where there is one, a second tree on "
                                           "links the first leaves free, so each node takes its data "
                                           "in over two links; 1 keeps one tree",
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_READONLY, &loom_torus_trees);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; ++i) {
        h = (h ^ b[i]) * 0x100000001b3ULL;
    }
    return h;
}

/* A source this process cannot use: the torus stays off, and load_and_tell says why. */
static void source_failed(const char *source, const char *why)
{
    snprintf(loom_torus.err, sizeof(loom_torus.err), "%s: %s", source, why);
    loom_torus.kind = LOOM_TORUS_NONE;
}

static void load(void)
{
    char err[512];
    const char *env;

    if (loom_torus.loaded) {
        return;
    }
    loom_torus.loaded = true;
    loom_torus.kind = LOOM_TORUS_NONE;
    if (NULL != loom_torus_file && '\0' != loom_torus_file[0]) {
        loom_torus.kind = LOOM_TORUS_FILE;
        if (0 != mca_coll_loom_torus_read_file(loom_torus_file, &loom_torus.shape, &loom_torus.hosts,
                                               &loom_torus.nhosts, err, sizeof(err))) {
            source_failed("coll_loom_torus_file", err);
            return;
        }
        loom_torus.have_shape = true;
    } else if (NULL != (env = getenv("LOOM_TORUS_COORDS")) ||
               (NULL != (env = getenv("SLURM_TOPOLOGY_ADDR")) && 0 == strncmp(env, "torus:", 6))) {
        const bool slurm = 0 == strncmp(env, "torus:", 6);
        loom_torus.kind = slurm ? LOOM_TORUS_SLURM : LOOM_TORUS_ENV;
        loom_torus.nmine = mca_coll_loom_torus_parse_coords(env, loom_torus.mine);
        if (loom_torus.nmine < 1) {
            snprintf(err, sizeof(err), "'%s' is not %s", env,
                     slurm ? "torus:<x>:<y>:...[.<node>]" : "<x>,<y>,... (numbers from 0)");
            source_failed(loom_torus_source_name[loom_torus.kind], err);
            return;
        }
        if (NULL != loom_torus_dims && '\0' != loom_torus_dims[0]) {
            if (0 != mca_coll_loom_torus_parse_dims(&loom_torus.shape, loom_torus_dims, err, sizeof(err))) {
                source_failed("coll_loom_torus_dims", err);
                return;
            }
            loom_torus.have_shape = true;
            if (loom_torus.shape.ndims != loom_torus.nmine || !mca_coll_loom_torus_valid(&loom_torus.shape,
                                                                                          loom_torus.mine)) {
                snprintf(err, sizeof(err), "'%s' does not fit the shape %s", env, loom_torus_dims);
                source_failed(loom_torus_source_name[loom_torus.kind], err);
                return;
            }
        } else if (!slurm) {
            source_failed("LOOM_TORUS_COORDS", "needs the shape in coll_loom_torus_dims");
            return;
        }
    } else {
        return;
    }
    if (loom_torus.have_shape && NULL != loom_torus_order && '\0' != loom_torus_order[0] &&
        0 != mca_coll_loom_torus_parse_order(&loom_torus.shape, loom_torus_order, err, sizeof(err))) {
        source_failed("coll_loom_torus_route_order", err);
        return;
    }
    loom_torus.shape.max_trees = 1 == loom_torus_trees ? 1 : 2;
    /* what every rank must have alike: the kind, the trees, the shape and the map (not a rank's
     * own coordinates, which differ by node) */
    uint64_t h = fnv(0xcbf29ce484222325ULL, &loom_torus.kind, sizeof(loom_torus.kind));
    h = fnv(h, &loom_torus.shape.max_trees, sizeof(loom_torus.shape.max_trees));
    if (loom_torus.have_shape) {
        h = fnv(h, &loom_torus.shape, sizeof(loom_torus.shape));
    }
    for (int i = 0; i < loom_torus.nhosts; ++i) {
        h = fnv(h, loom_torus.hosts[i].host, strlen(loom_torus.hosts[i].host) + 1);
        h = fnv(h, loom_torus.hosts[i].c, sizeof(loom_torus.hosts[i].c));
    }
    loom_torus.hash = h;
}

/* load() once per process, and the help message of a failed source, once */
static void load_and_tell(void)
{
    char err[sizeof(loom_torus.err)] = "";

    OPAL_THREAD_LOCK(&mca_coll_loom_component.lock);
    load();
    if ('\0' != loom_torus.err[0]) {
        memcpy(err, loom_torus.err, sizeof(err));
        loom_torus.err[0] = '\0';
    }
    OPAL_THREAD_UNLOCK(&mca_coll_loom_component.lock);
    if ('\0' != err[0]) {
        mca_coll_loom_show_help("torus-source", true, err);
    }
}

uint64_t mca_coll_loom_torus_fingerprint(void)
{
    load_and_tell();
    return LOOM_TORUS_NONE == loom_torus.kind ? 0 : loom_torus.hash;
}

void mca_coll_loom_torus_close(void)
{
    mca_coll_loom_torus_free_hosts(loom_torus.hosts, loom_torus.nhosts);
    free(loom_torus.world);
    memset(&loom_torus, 0, sizeof(loom_torus));
}

/* ------------------------------------------------------------------------------------ */
/* per communicator                                                                      */

void mca_coll_loom_torus_free(mca_coll_loom_module_t *m)
{
    free(m->torus.coords);
    m->torus.coords = NULL;
    m->torus.state = 0;
}

/* A communicator whose nodes cannot have a map: said once per process, by its rank 0. */
static void unusable(mca_coll_loom_module_t *m, ompi_communicator_t *comm, const char *why)
{
    static bool told;

    mca_coll_loom_torus_free(m);
    m->torus.state = -1;
    if (0 == ompi_comm_rank(comm)) {
        if (mca_coll_loom_first_time(&told)) {
            mca_coll_loom_show_help("torus-unusable", true, comm->c_name, mca_coll_loom_cid(comm).s,
                                    loom_torus_source_name[loom_torus.kind], why);
        } else {
            opal_output_verbose(1, mca_coll_loom_component.output,
                                "coll/loom: communicator %s (cid %s): no torus map: %s", comm->c_name,
                                mca_coll_loom_cid(comm).s, why);
        }
    }
}

/* the file's entry for a host name: exact, else the same short name (up to the first
 * '.') on both sides */
static const mca_coll_loom_torus_host_t *file_host(const char *host)
{
    const size_t hs = strcspn(host, ".");

    for (int i = 0; i < loom_torus.nhosts; ++i) {
        if (0 == strcmp(loom_torus.hosts[i].host, host)) {
            return &loom_torus.hosts[i];
        }
    }
    for (int i = 0; i < loom_torus.nhosts; ++i) {
        const char *f = loom_torus.hosts[i].host;
        if (strcspn(f, ".") == hs && 0 == strncmp(f, host, hs)) {
            return &loom_torus.hosts[i];
        }
    }
    return NULL;
}

/* Checks the per-node coordinates in m->torus.coords (nnodes x ndims): no two nodes on
 * one coordinate.  *why on failure. */
static bool distinct(mca_coll_loom_module_t *m, char *why, size_t len)
{
    const int nd = m->torus.shape.ndims, nn = m->topo.nnodes;
    const long N = mca_coll_loom_torus_nodes(&m->torus.shape);
    int *at = malloc(sizeof(int) * (size_t) N);

    if (NULL == at) {
        snprintf(why, len, "out of memory");
        return false;
    }
    for (long i = 0; i < N; ++i) {
        at[i] = -1;
    }
    for (int k = 0; k < nn; ++k) {
        const long idx = mca_coll_loom_torus_index(&m->torus.shape, m->torus.coords + k * nd);
        if (at[idx] >= 0) {
            snprintf(why, len, "the nodes of ranks %d and %d have the same coordinates", m->topo.leader[at[idx]],
                     m->topo.leader[k]);
            free(at);
            return false;
        }
        at[idx] = k;
    }
    free(at);
    return true;
}

static void describe(mca_coll_loom_module_t *m, ompi_communicator_t *comm)
{
    const int nd = m->torus.shape.ndims;
    char line[512];
    int lo[MCA_COLL_LOOM_TORUS_MAX_DIMS], hi[MCA_COLL_LOOM_TORUS_MAX_DIMS];
    size_t o = 0;

    for (int d = 0; d < nd; ++d) {
        lo[d] = m->torus.shape.dims[d];
        hi[d] = -1;
        for (int k = 0; k < m->topo.nnodes; ++k) {
            const int v = m->torus.coords[k * nd + d];
            lo[d] = v < lo[d] ? v : lo[d];
            hi[d] = v > hi[d] ? v : hi[d];
        }
    }
    for (int d = 0; d < nd && o < sizeof(line); ++d) {
        o += (size_t) snprintf(line + o, sizeof(line) - o, "%s%d%s", d ? "x" : "", m->torus.shape.dims[d],
                               m->torus.shape.mesh[d] ? ":mesh" : "");
    }
    o += (size_t) snprintf(line + o, o < sizeof(line) ? sizeof(line) - o : 0, " route ");
    for (int d = 0; d < nd && o < sizeof(line); ++d) {
        o += (size_t) snprintf(line + o, sizeof(line) - o, "%c", "xyzuvw"[m->torus.shape.order[d]]);
    }
    o += (size_t) snprintf(line + o, o < sizeof(line) ? sizeof(line) - o : 0, ", box ");
    for (int d = 0; d < nd && o < sizeof(line); ++d) {
        o += (size_t) snprintf(line + o, sizeof(line) - o, "%s[%d..%d]", d ? "x" : "", lo[d], hi[d]);
    }
    if (o < sizeof(line)) {
        snprintf(line + o, sizeof(line) - o, ", %d of %ld nodes present (%s)", m->topo.nnodes,
                 mca_coll_loom_torus_nodes(&m->torus.shape), loom_torus_source_name[loom_torus.kind]);
    }
    opal_output(mca_coll_loom_component.output, "coll/loom: communicator %s (cid %s) rank %d: torus %s",
                comm->c_name, mca_coll_loom_cid(comm).s, ompi_comm_rank(comm), line);
}

/* A communicator of the job's processes, coordinates from the environment: its nodes'
 * coordinates are those MPI_COMM_WORLD's exchange gave their leaders (the world's
 * check already found every node's ranks agreeing and the nodes distinct). */
static void from_world(mca_coll_loom_module_t *m, ompi_communicator_t *comm)
{
    const int nd = loom_torus.world_shape.ndims;

    m->torus.shape = loom_torus.world_shape;
    m->torus.coords = malloc(sizeof(int) * (size_t) (m->topo.nnodes * nd));
    if (NULL == m->torus.coords) {
        unusable(m, comm, "out of memory");
        return;
    }
    for (int k = 0; k < m->topo.nnodes; ++k) {
        ompi_proc_t *proc = ompi_group_get_proc_ptr_raw(comm->c_local_group, m->topo.leader[k]);
        const opal_process_name_t name = ompi_proc_is_sentinel(proc) ? ompi_proc_sentinel_to_name((uintptr_t) proc)
                                                                     : proc->super.proc_name;
        if (name.vpid >= (opal_vpid_t) loom_torus.world_P) {
            unusable(m, comm, "a process is not of MPI_COMM_WORLD");
            return;
        }
        memcpy(m->torus.coords + k * nd, loom_torus.world + (size_t) name.vpid * nd, sizeof(int) * (size_t) nd);
    }
    m->torus.state = 1;
    if (MCA_COLL_LOOM_VERBOSE(10)) {
        describe(m, comm);
    }
}

void mca_coll_loom_torus_enable(mca_coll_loom_module_t *m, ompi_communicator_t *comm)
{
    char why[256];
    int nd;

    m->torus.state = 0;
    m->torus.coords = NULL;
    load_and_tell();
    if (NULL != loom_torus.world && m->have_topo && m->in_job) {
        from_world(m, comm);
        return;
    }
    if (LOOM_TORUS_FILE != loom_torus.kind || !m->have_topo) {
        return; /* none, or known at the settings check (mca_coll_loom_torus_agree) */
    }
    m->torus.shape = loom_torus.shape;
    nd = m->torus.shape.ndims;
    m->torus.coords = malloc(sizeof(int) * (size_t) (m->topo.nnodes * nd));
    if (NULL == m->torus.coords) {
        unusable(m, comm, "out of memory");
        return;
    }
    for (int k = 0; k < m->topo.nnodes; ++k) {
        char *host = mca_coll_loom_comm_node_host(comm, m->topo.leader[k]);
        const mca_coll_loom_torus_host_t *e = NULL != host ? file_host(host) : NULL;
        if (NULL == e) {
            snprintf(why, sizeof(why), "the node of rank %d (%s) is not in %s", m->topo.leader[k],
                     NULL != host ? host : "host name unknown", loom_torus_file);
            free(host);
            unusable(m, comm, why);
            return;
        }
        free(host);
        memcpy(m->torus.coords + k * nd, e->c, sizeof(int) * (size_t) nd);
    }
    if (!distinct(m, why, sizeof(why))) {
        unusable(m, comm, why);
        return;
    }
    m->torus.state = 1;
    if (MCA_COLL_LOOM_VERBOSE(10)) {
        describe(m, comm);
    }
}

int mca_coll_loom_torus_agree(mca_coll_loom_module_t *m, ompi_communicator_t *comm)
{
    const int P = ompi_comm_size(comm), W = 1 + MCA_COLL_LOOM_TORUS_MAX_DIMS;
    int mine[1 + MCA_COLL_LOOM_TORUS_MAX_DIMS] = {0}, *all, nd, rc;
    char why[256];

    if ((LOOM_TORUS_ENV != loom_torus.kind && LOOM_TORUS_SLURM != loom_torus.kind) || !m->have_topo ||
        0 != m->torus.state) {
        return OMPI_SUCCESS;
    }
    all = malloc(sizeof(int) * (size_t) (P * W));
    if (NULL == all) {
        /* the others wait in the allgather for this rank: as after any failed
         * allocation inside a collective, the job cannot go on well */
        unusable(m, comm, "out of memory");
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mine[0] = loom_torus.nmine;
    memcpy(mine + 1, loom_torus.mine, sizeof(int) * (size_t) loom_torus.nmine);
    rc = m->previous_allgather(mine, W, &ompi_mpi_int.dt, all, W, &ompi_mpi_int.dt, comm,
                               m->previous_allgather_module);
    if (OMPI_SUCCESS != rc) {
        free(all);
        unusable(m, comm, "the exchange of coordinates failed");
        return rc;
    }
    nd = all[0];
    if (loom_torus.have_shape) {
        m->torus.shape = loom_torus.shape;
    } else {
        /* Slurm without a shape: the largest coordinates seen */
        memset(&m->torus.shape, 0, sizeof(m->torus.shape));
        m->torus.shape.ndims = nd;
        m->torus.shape.max_trees = loom_torus.shape.max_trees;
        for (int d = 0; d < nd; ++d) {
            m->torus.shape.order[d] = d;
            for (int r = 0; r < P; ++r) {
                const int v = all[r * W + 1 + d] + 1;
                m->torus.shape.dims[d] = v > m->torus.shape.dims[d] ? v : m->torus.shape.dims[d];
            }
        }
        if (NULL != loom_torus_order && '\0' != loom_torus_order[0] &&
            0 != mca_coll_loom_torus_parse_order(&m->torus.shape, loom_torus_order, why, sizeof(why))) {
            free(all);
            unusable(m, comm, why);
            return OMPI_SUCCESS;
        }
    }
    m->torus.coords = malloc(sizeof(int) * (size_t) (m->topo.nnodes * (nd > 0 ? nd : 1)));
    if (NULL == m->torus.coords) {
        free(all);
        unusable(m, comm, "out of memory");
        return OMPI_SUCCESS;
    }
    for (int r = 0; r < P; ++r) {
        const int k = m->topo.node_of[r], *c = all + r * W + 1;
        if (all[r * W] != nd || nd != m->torus.shape.ndims || !mca_coll_loom_torus_valid(&m->torus.shape, c)) {
            snprintf(why, sizeof(why), "rank %d has %d coordinates, rank 0 %d, the shape %d dimensions", r,
                     all[r * W], nd, m->torus.shape.ndims);
            free(all);
            unusable(m, comm, why);
            return OMPI_SUCCESS;
        }
        if (r == m->topo.leader[k]) {
            memcpy(m->torus.coords + k * nd, c, sizeof(int) * (size_t) nd);
        } else if (0 != memcmp(m->torus.coords + k * nd, c, sizeof(int) * (size_t) nd)) {
            snprintf(why, sizeof(why), "ranks %d and %d share a node but not its coordinates", m->topo.leader[k],
                     r);
            free(all);
            unusable(m, comm, why);
            return OMPI_SUCCESS;
        }
    }
    if (!distinct(m, why, sizeof(why))) {
        free(all);
        unusable(m, comm, why);
        return OMPI_SUCCESS;
    }
    if (comm == &ompi_mpi_comm_world.comm && NULL == loom_torus.world &&
        NULL != (loom_torus.world = malloc(sizeof(int) * (size_t) (P * (nd > 0 ? nd : 1))))) {
        for (int r = 0; r < P; ++r) {
            memcpy(loom_torus.world + (size_t) r * nd, all + r * W + 1, sizeof(int) * (size_t) nd);
        }
        loom_torus.world_shape = m->torus.shape;
        loom_torus.world_P = P;
    }
    free(all);
    m->torus.state = 1;
    if (MCA_COLL_LOOM_VERBOSE(10)) {
        describe(m, comm);
    }
    return OMPI_SUCCESS;
}
