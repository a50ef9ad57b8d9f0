/*
 * loom tests: access to loom's MPI_T performance variables (per-algorithm call
 * counters) and control variables (algorithm selection, knobs), plus small MPI
 * helpers shared by the test programs and the benchmark.
 *
 * Counters are discovered by enumerating every pvar named
 *     coll_loom_<coll>_<alg>_calls      (one per algorithm serving <coll>)
 *     coll_loom_<coll>_fallback_calls   (calls handed to the previous component)
 * so algorithms added to loom later are picked up without changing the tests.
 *
 * Header-only (every function is static), so each program is built from its
 * own source file alone: include this header from one .c file per program.
 */
#ifndef LOOM_TEST_UTIL_H
#define LOOM_TEST_UTIL_H

#include <mpi.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/loom/loom_registry.h"

#define LT_MAX_ALGS 32
#define LT_NAME_LEN 64

/* loom's collectives, from its one list of them (loom_registry.h) */
#define LT_COLL_ENUM_(ID, name, arg) LT_##ID = MCA_COLL_LOOM_COLL_##ID,
typedef enum {
    MCA_COLL_LOOM_COLLECTIVES(LT_COLL_ENUM_, ~)
    LT_NUM_COLLS = MCA_COLL_LOOM_NUM_COLLS
} lt_coll_t;
#undef LT_COLL_ENUM_

/* A snapshot of one collective's counters on this process. */
typedef struct {
    unsigned long long alg[LT_MAX_ALGS];
    unsigned long long fallback;
} lt_counts_t;

/* Result of comparing two snapshots. */
typedef struct {
    int changed;        /* number of counters that changed */
    int which;          /* index of the algorithm that changed (when changed == 1),
                           LT_WHICH_FALLBACK, or LT_WHICH_NONE */
    long long delta;    /* its increment (when changed == 1) */
    char desc[256];     /* "bruck+1", "pairwise+1 fallback+1", "none" */
} lt_diff_t;

#define LT_WHICH_NONE     (-2)
#define LT_WHICH_FALLBACK (-1)

/* Call after MPI_Init.  Initialises MPI_T, opens a pvar session, finds loom's
 * counters.  Returns the number of pvars whose name starts with "coll_loom_"
 * (0: loom is not loaded), or -1 when MPI_T itself failed. */
static int lt_init(void);
static void lt_fini(void);

static int lt_num_loom_pvars(void);
static const char *lt_coll_name(lt_coll_t c);

/* The counters of collective c's non-blocking and persistent forms
 * (coll_loom_i<coll>_<alg>_calls): LT_NB(c) is accepted wherever a collective is, by
 * the functions below (lt_coll_name gives "i<coll>"). */
#define LT_NB(c) ((lt_coll_t) ((int) (c) + LT_NUM_COLLS))

/* Algorithms of a collective, in discovery order. */
static int lt_nalgs(lt_coll_t c);
static const char *lt_alg_name(lt_coll_t c, int i);
static int lt_alg_index(lt_coll_t c, const char *name); /* -1 if absent */
static int lt_has_fallback(lt_coll_t c);

/* Reads every counter of collective c.  Returns 0, or an MPI_T error code. */
static int lt_read(lt_coll_t c, lt_counts_t *out);
/* coll_loom_shm_node_phases: hierarchical calls whose node phases used shared memory.
 * Returns 0, or -1 when the counter does not exist. */
static int lt_shm_node_phases(unsigned long long *v);
/* the counters that belong to no collective: the node segment's (coll_loom_shm_<name>)
 * and the UCX transport's (coll_loom_ucx_transfers, coll_loom_ucx_puts) */
typedef enum {
    LT_SHM_NODE_PHASES,
    LT_SHM_SEGMENTS_CREATED,
    LT_SHM_SEGMENTS_REUSED,
    LT_UCX_TRANSFERS,
    LT_UCX_PUTS,
    LT_SHM_NCOUNTERS
} lt_shm_counter_t;
/* any of those counters; returns 0, or -1 when it does not exist.  With
 * LOOM_TEST_EXPECT_UCX=1 in the environment, lt_fini aborts the job when a process of a
 * job of several posted no transfer on loom's UCX worker (=0: when one did); with
 * LOOM_TEST_EXPECT_PUTS=1 (=0), when one wrote nothing (something) straight into a peer's
 * window. */
static int lt_shm_counter(lt_shm_counter_t k, unsigned long long *v);
static void lt_diff(lt_coll_t c, const lt_counts_t *before, const lt_counts_t *after, lt_diff_t *d);

/* Control variables.  Each returns MPI_SUCCESS or the MPI_T error code (e.g.
 * MPI_T_ERR_INVALID_NAME when loom did not register the variable).  String
 * variables backed by an enumerator are written through the enumerator. */
static int lt_cvar_write_str(const char *name, const char *value);
static int lt_cvar_write_int(const char *name, int value);
static int lt_cvar_read_str(const char *name, char *buf, size_t len);
static int lt_cvar_read_int(const char *name, int *value);
static const char *lt_errstr(int mpit_err);

/* MPI_Comm_dup_with_info with "ompi_comm_coll_preference" = pref. */
static int lt_dup_with_pref(MPI_Comm base, const char *pref, MPI_Comm *out);

/* The knob variable of an algorithm ("coll_loom_dissemination_ways" for
 * "dissemination", "coll_loom_bruck_ports" for "bruck"), or NULL. */
static const char *lt_knob_cvar(const char *alg);

/* Failure reporting shared by the test programs: counts every failure, prints the
 * first lt_max_report of them, one write per line so ranks do not interleave. */
static long lt_nfail;
static int lt_max_report = 25;
static void lt_fail(int wrank, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* One forced setting: coll_loom_<coll>_algorithm = alg, and, when n > 0, alg's knob
 * = n; the other knob parameters go back to their defaults (those > 0 only: a
 * default of -1 means it could not be read).  Returns MPI_SUCCESS, or the MPI_T error
 * and the name and value of the parameter that could not be written. */
static int lt_apply_setting(const char *alg_cvar, const char *alg, int n, int default_ways,
                            int default_ports, const char **failed, int *failed_value);
static void lt_restore_settings(const char *alg_cvar, const char *default_alg, int default_ways,
                                int default_ports);

/* Seconds from CLOCK_MONOTONIC: one clock for every process on a node (unlike
 * MPI_Wtime in Open MPI 4.1, whose origin is per process). */
static double lt_mono_time(void);

/* order[0..n-1]: a permutation of 0..n-1 that depends only on `seed` (the same on every
 * rank): the order in which a benchmark round times its variants. */
static void lt_shuffle(int *order, int n, unsigned long long seed);

/* true when `name` is an element of the comma-separated `list` (a benchmark's --algs) */
static int lt_in_list(const char *list, const char *name);

/* MPI_T performance variables bound to a communicator (those of the info-key features):
 * the index of `name` (-1: absent, or not bound to communicators), and its value on comm
 * (MPI_SUCCESS or the MPI_T error). */
static int lt_comm_pvar_index(const char *name);
static int lt_comm_pvar_read(MPI_T_pvar_session session, int index, MPI_Comm comm, unsigned long long *value);


/* ------------------------------------------------------------------------- */
/* Implementation (header-only, so every program just includes this file).   */

#if defined(__GNUC__)
#define LT_MAYBE_UNUSED __attribute__((unused))
#else
#define LT_MAYBE_UNUSED
#endif

typedef struct {
    int n;
    char name[LT_MAX_ALGS][LT_NAME_LEN];
    MPI_T_pvar_handle h[LT_MAX_ALGS];
    MPI_Datatype dt[LT_MAX_ALGS];
    int has_fb;
    MPI_T_pvar_handle fb;
    MPI_Datatype fb_dt;
} lt__coll_pvars_t;

LT_MAYBE_UNUSED static void lt__strlcpy(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);
    if (len == 0) return;
    if (n >= len) n = len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

#define LT_COLL_NAME_(ID, name, arg) #name,
LT_MAYBE_UNUSED static const char *lt__coll_names[LT_NUM_COLLS] = {MCA_COLL_LOOM_COLLECTIVES(LT_COLL_NAME_, ~)};
#undef LT_COLL_NAME_
LT_MAYBE_UNUSED static lt__coll_pvars_t lt__pv[2 * LT_NUM_COLLS]; /* blocking, then LT_NB(c) */
LT_MAYBE_UNUSED static MPI_T_pvar_session lt__session = MPI_T_PVAR_SESSION_NULL;
LT_MAYBE_UNUSED static int lt__num_loom_pvars = 0;
LT_MAYBE_UNUSED static int lt__initialised = 0;
LT_MAYBE_UNUSED static const char *const lt__shm_names[LT_SHM_NCOUNTERS] = {
    "coll_loom_shm_node_phases", "coll_loom_shm_segments_created", "coll_loom_shm_segments_reused",
    "coll_loom_ucx_transfers", "coll_loom_ucx_puts"};
LT_MAYBE_UNUSED static int lt__have_shm[LT_SHM_NCOUNTERS];
LT_MAYBE_UNUSED static MPI_T_pvar_handle lt__shm_h[LT_SHM_NCOUNTERS];
LT_MAYBE_UNUSED static MPI_Datatype lt__shm_dt[LT_SHM_NCOUNTERS];

LT_MAYBE_UNUSED static const char *lt_coll_name(lt_coll_t c)
{
    static char inames[LT_NUM_COLLS][LT_NAME_LEN];
    if (c < LT_NUM_COLLS) return lt__coll_names[c];
    if ('\0' == inames[c - LT_NUM_COLLS][0]) snprintf(inames[c - LT_NUM_COLLS], LT_NAME_LEN, "i%s", lt__coll_names[c - LT_NUM_COLLS]);
    return inames[c - LT_NUM_COLLS];
}
LT_MAYBE_UNUSED static int lt_num_loom_pvars(void) { return lt__num_loom_pvars; }
LT_MAYBE_UNUSED static int lt_nalgs(lt_coll_t c) { return lt__pv[c].n; }
LT_MAYBE_UNUSED static const char *lt_alg_name(lt_coll_t c, int i) { return (i >= 0 && i < lt__pv[c].n) ? lt__pv[c].name[i] : "?"; }
LT_MAYBE_UNUSED static int lt_has_fallback(lt_coll_t c) { return lt__pv[c].has_fb; }

LT_MAYBE_UNUSED static int lt_alg_index(lt_coll_t c, const char *name)
{
    for (int i = 0; i < lt__pv[c].n; i++) {
        if (0 == strcmp(lt__pv[c].name[i], name)) return i;
    }
    return -1;
}

/* Whether this process was given a torus map (coll_loom_torus_file, LOOM_TORUS_COORDS,
 * Slurm's torus address): without one loom's `torus` refuses every call. */
LT_MAYBE_UNUSED static int lt_torus_configured(void)
{
    char file[512] = "";
    const char *slurm = getenv("SLURM_TOPOLOGY_ADDR");
    if (MPI_SUCCESS == lt_cvar_read_str("coll_loom_torus_file", file, sizeof(file)) && '\0' != file[0]) return 1;
    return NULL != getenv("LOOM_TORUS_COORDS") || (NULL != slurm && 0 == strncmp(slurm, "torus:", 6));
}

LT_MAYBE_UNUSED static const char *lt_knob_cvar(const char *alg)
{
    if (0 == strcmp(alg, "dissemination")) return "coll_loom_dissemination_ways";
    if (0 == strcmp(alg, "bruck")) return "coll_loom_bruck_ports";
    if (0 == strcmp(alg, "ring")) return "coll_loom_ring_segment_size";
    if (0 == strcmp(alg, "twotree")) return "coll_loom_twotree_chunk_size";
    if (0 == strcmp(alg, "circulant")) return "coll_loom_circulant_block_size";
    if (0 == strcmp(alg, "hierarchical")) return "coll_loom_hierarchical_segment_size";
    if (0 == strcmp(alg, "direct")) return "coll_loom_direct_window";
    if (0 == strcmp(alg, "torus")) return "coll_loom_torus_segment_size";
    return NULL;
}

LT_MAYBE_UNUSED static void lt_shuffle(int *order, int n, unsigned long long seed)
{
    unsigned long long x = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (int i = 0; i < n; i++) {
        order[i] = i;
    }
    for (int i = n - 1; i > 0; i--) { /* Fisher-Yates, xorshift64 */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int j = (int) (x % (unsigned long long) (i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

LT_MAYBE_UNUSED static int lt_in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; NULL != p && '\0' != *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t) (comma - p) : strlen(p);
        if (n == len && 0 == strncmp(p, name, n)) {
            return 1;
        }
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

LT_MAYBE_UNUSED static double lt_mono_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* The machine shape of `comm` as loom's rules see it: the number of nodes it spans and
 * the most ranks it has on one node (shared-memory domains). Collective over comm. */
LT_MAYBE_UNUSED static void lt_shape(MPI_Comm comm, int *nodes, int *rpn)
{
    MPI_Comm node;
    int nrank, nsize, leader;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    leader = 0 == nrank;
    MPI_Allreduce(&leader, nodes, 1, MPI_INT, MPI_SUM, comm);
    MPI_Allreduce(&nsize, rpn, 1, MPI_INT, MPI_MAX, comm);
    MPI_Comm_free(&node);
}

LT_MAYBE_UNUSED static const char *lt_errstr(int e)
{
    switch (e) {
    case MPI_SUCCESS: return "success";
    case MPI_T_ERR_INVALID_NAME: return "MPI_T_ERR_INVALID_NAME (no such variable)";
    case MPI_T_ERR_INVALID_INDEX: return "MPI_T_ERR_INVALID_INDEX";
    case MPI_T_ERR_CVAR_SET_NEVER: return "MPI_T_ERR_CVAR_SET_NEVER (read-only)";
    case MPI_T_ERR_CVAR_SET_NOT_NOW: return "MPI_T_ERR_CVAR_SET_NOT_NOW";
    case MPI_T_ERR_NOT_INITIALIZED: return "MPI_T_ERR_NOT_INITIALIZED";
    case MPI_T_ERR_INVALID_HANDLE: return "MPI_T_ERR_INVALID_HANDLE";
    case MPI_T_ERR_OUT_OF_HANDLES: return "MPI_T_ERR_OUT_OF_HANDLES";
    case MPI_T_ERR_OUT_OF_SESSIONS: return "MPI_T_ERR_OUT_OF_SESSIONS";
    case MPI_T_ERR_INVALID_SESSION: return "MPI_T_ERR_INVALID_SESSION";
    case MPI_T_ERR_PVAR_NO_STARTSTOP: return "MPI_T_ERR_PVAR_NO_STARTSTOP";
    case MPI_T_ERR_PVAR_NO_WRITE: return "MPI_T_ERR_PVAR_NO_WRITE";
    default: return "MPI_T error";
    }
}

/* Parses "coll_loom_<coll>_<alg>_calls"; returns the collective or -1. */
LT_MAYBE_UNUSED static int lt__parse_pvar_name(const char *name, char *alg, size_t alglen)
{
    const char *pfx = "coll_loom_";
    const char *sfx = "_calls";
    size_t n = strlen(name), lp = strlen(pfx), ls = strlen(sfx);
    if (n <= lp + ls || 0 != strncmp(name, pfx, lp) || 0 != strcmp(name + n - ls, sfx)) return -1;
    /* The longest matching collective name wins: "reduce" is a prefix of
     * "reduce_scatter" and of "reduce_scatter_block". */
    int best = -1;
    size_t best_len = 0;
    for (int c = 0; c < LT_NUM_COLLS; c++) {
        size_t lc = strlen(lt__coll_names[c]);
        if (n > lp + lc + 1 + ls && 0 == strncmp(name + lp, lt__coll_names[c], lc) && '_' == name[lp + lc] &&
            lc > best_len) {
            best = c;
            best_len = lc;
        }
    }
    if (best < 0) return -1;
    size_t la = n - (lp + best_len + 1) - ls;
    if (la == 0 || la + 1 > alglen) return -1;
    memcpy(alg, name + lp + best_len + 1, la);
    alg[la] = '\0';
    return best;
}

/* MPI_T_init_thread at the thread level MPI was initialised with.  Open MPI 4.1's
 * MPI_T_init_thread sets the library's thread level to the one it is given
 * (ompi_mpi_thread_level): MPI_THREAD_SINGLE after MPI_Init_thread(MPI_THREAD_MULTIPLE)
 * turns the point-to-point layer's thread safety off (ob1's blocking send and receive
 * then share one cached request between threads, which hands one request to two
 * threads at once: test_threads crashed a few runs in a hundred). */
LT_MAYBE_UNUSED static int lt_mpit_init(int *provided)
{
    int level = MPI_THREAD_SINGLE, initialized = 0, finalized = 0;

    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) {
        MPI_Query_thread(&level);
    }
    return MPI_T_init_thread(level, provided);
}

LT_MAYBE_UNUSED static int lt_init(void)
{
    int provided, num, rc;
    if (lt__initialised) return lt__num_loom_pvars;
    rc = lt_mpit_init(&provided);
    if (MPI_SUCCESS != rc) {
        fprintf(stderr, "loom-test: MPI_T_init_thread failed: %d\n", rc);
        return -1;
    }
    lt__initialised = 1;
    memset(lt__pv, 0, sizeof(lt__pv));
    rc = MPI_T_pvar_session_create(&lt__session);
    if (MPI_SUCCESS != rc) {
        fprintf(stderr, "loom-test: MPI_T_pvar_session_create failed: %s\n", lt_errstr(rc));
        return -1;
    }
    rc = MPI_T_pvar_get_num(&num);
    if (MPI_SUCCESS != rc) return -1;
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024], alg[LT_NAME_LEN];
        int namelen = sizeof(name), desclen = sizeof(desc);
        int verbosity, var_class, bind, readonly, continuous, atomic, count = 0;
        MPI_Datatype dt;
        MPI_T_enum et;
        MPI_T_pvar_handle h;
        rc = MPI_T_pvar_get_info(i, name, &namelen, &verbosity, &var_class, &dt, &et, desc, &desclen,
                                 &bind, &readonly, &continuous, &atomic);
        if (MPI_SUCCESS != rc) continue; /* variables can be invalid (unloaded component) */
        if (0 != strncmp(name, "coll_loom_", 10)) continue;
        lt__num_loom_pvars++;
        int shm = -1;
        for (int k = 0; k < LT_SHM_NCOUNTERS; ++k) {
            shm = 0 == strcmp(name, lt__shm_names[k]) ? k : shm;
        }
        if (shm >= 0) {
            if (MPI_T_BIND_NO_OBJECT == bind &&
                MPI_SUCCESS == MPI_T_pvar_handle_alloc(lt__session, i, NULL, &lt__shm_h[shm], &count) &&
                1 == count) {
                lt__have_shm[shm] = 1;
                lt__shm_dt[shm] = dt;
            }
            continue;
        }
        int c = lt__parse_pvar_name(name, alg, sizeof(alg));
        if (c < 0 && 0 == strncmp(name, "coll_loom_i", 11)) {
            /* coll_loom_i<coll>_<alg>_calls: the non-blocking and persistent forms */
            char blocking[300];
            snprintf(blocking, sizeof(blocking), "coll_loom_%s", name + 11);
            c = lt__parse_pvar_name(blocking, alg, sizeof(alg));
            c = c < 0 ? -1 : (int) LT_NB(c);
        }
        if (c < 0) continue;
        if (MPI_T_BIND_NO_OBJECT != bind) {
            fprintf(stderr, "loom-test: pvar %s is bound to an object (%d); expected none\n", name, bind);
            continue;
        }
        rc = MPI_T_pvar_handle_alloc(lt__session, i, NULL, &h, &count);
        if (MPI_SUCCESS != rc || count != 1) {
            fprintf(stderr, "loom-test: cannot allocate a handle for pvar %s: %s (count %d)\n", name,
                    lt_errstr(rc), count);
            continue;
        }
        if (!continuous) {
            rc = MPI_T_pvar_start(lt__session, h);
            if (MPI_SUCCESS != rc && MPI_T_ERR_PVAR_NO_STARTSTOP != rc) {
                fprintf(stderr, "loom-test: cannot start pvar %s: %s\n", name, lt_errstr(rc));
            }
        }
        if (0 == strcmp(alg, "fallback")) {
            lt__pv[c].has_fb = 1;
            lt__pv[c].fb = h;
            lt__pv[c].fb_dt = dt;
        } else if (lt__pv[c].n < LT_MAX_ALGS) {
            int k = lt__pv[c].n++;
            snprintf(lt__pv[c].name[k], LT_NAME_LEN, "%s", alg);
            lt__pv[c].h[k] = h;
            lt__pv[c].dt[k] = dt;
        }
    }
    return lt__num_loom_pvars;
}

/* LOOM_TEST_EXPECT_<X>=1 (=0) in a job of several processes: abort the job when counter
 * k is 0 (is not 0) on this process; the proof that loom's transfers took the path the run
 * asked for. */
LT_MAYBE_UNUSED static void lt__expect_counter(const char *expect, lt_shm_counter_t k, int wsize, int wrank)
{
    unsigned long long n = 0;
    int want;

    if (NULL == expect || wsize < 2) return;
    want = 0 != atoi(expect);
    if (0 != lt_shm_counter(k, &n) || want != (n > 0)) {
        fprintf(stderr, "FAIL: rank %d: %s = %llu%s, expected %s\n", wrank, lt__shm_names[k], n,
                lt__have_shm[k] ? "" : " (no such counter)", want ? "> 0" : "0");
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (0 == wrank) printf("%s on rank 0: %llu\n", lt__shm_names[k], n);
}

LT_MAYBE_UNUSED static void lt_fini(void)
{
    int wsize = 1, wrank = 0;

    if (!lt__initialised) return;
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    lt__expect_counter(getenv("LOOM_TEST_EXPECT_UCX"), LT_UCX_TRANSFERS, wsize, wrank);
    lt__expect_counter(getenv("LOOM_TEST_EXPECT_PUTS"), LT_UCX_PUTS, wsize, wrank);
    if (MPI_T_PVAR_SESSION_NULL != lt__session) MPI_T_pvar_session_free(&lt__session);
    MPI_T_finalize();
    lt__initialised = 0;
}

LT_MAYBE_UNUSED static int lt__read_one(MPI_T_pvar_handle h, MPI_Datatype dt, unsigned long long *v)
{
    union {
        unsigned long long ull;
        unsigned long ul;
        unsigned u;
        int i;
        long long ll;
        double d;
        char pad[64];
    } buf;
    memset(&buf, 0, sizeof(buf));
    int rc = MPI_T_pvar_read(lt__session, h, &buf);
    if (MPI_SUCCESS != rc) return rc;
    if (dt == MPI_UNSIGNED_LONG_LONG) *v = buf.ull;
    else if (dt == MPI_UNSIGNED_LONG) *v = buf.ul;
    else if (dt == MPI_UNSIGNED) *v = buf.u;
    else if (dt == MPI_INT) *v = (unsigned long long) buf.i;
    else if (dt == MPI_LONG_LONG || dt == MPI_COUNT) *v = (unsigned long long) buf.ll;
    else if (dt == MPI_DOUBLE) *v = (unsigned long long) buf.d;
    else *v = buf.ull;
    return MPI_SUCCESS;
}

LT_MAYBE_UNUSED static int lt_shm_counter(lt_shm_counter_t k, unsigned long long *v)
{
    *v = 0;
    if (!lt__have_shm[k]) return -1;
    return 0 == lt__read_one(lt__shm_h[k], lt__shm_dt[k], v) ? 0 : -1;
}

LT_MAYBE_UNUSED static int lt_shm_node_phases(unsigned long long *v)
{
    return lt_shm_counter(LT_SHM_NODE_PHASES, v);
}

LT_MAYBE_UNUSED static int lt_read(lt_coll_t c, lt_counts_t *out)
{
    int rc, err = 0;
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < lt__pv[c].n; i++) {
        rc = lt__read_one(lt__pv[c].h[i], lt__pv[c].dt[i], &out->alg[i]);
        if (rc) err = rc;
    }
    if (lt__pv[c].has_fb) {
        rc = lt__read_one(lt__pv[c].fb, lt__pv[c].fb_dt, &out->fallback);
        if (rc) err = rc;
    }
    return err;
}

LT_MAYBE_UNUSED static void lt_diff(lt_coll_t c, const lt_counts_t *b, const lt_counts_t *a, lt_diff_t *d)
{
    size_t off = 0;
    d->changed = 0;
    d->which = LT_WHICH_NONE;
    d->delta = 0;
    d->desc[0] = '\0';
    for (int i = -1; i < lt__pv[c].n; i++) {
        unsigned long long x = i < 0 ? b->fallback : b->alg[i];
        unsigned long long y = i < 0 ? a->fallback : a->alg[i];
        if (x == y) continue;
        long long delta = (long long) (y - x);
        d->changed++;
        d->which = i < 0 ? LT_WHICH_FALLBACK : i;
        d->delta = delta;
        if (off < sizeof(d->desc)) {
            int w = snprintf(d->desc + off, sizeof(d->desc) - off, "%s%s%+lld", off ? " " : "",
                             i < 0 ? "fallback" : lt__pv[c].name[i], delta);
            if (w > 0) off += (size_t) w;
        }
    }
    if (0 == d->changed) snprintf(d->desc, sizeof(d->desc), "none");
}

/* ---- control variables ---- */

typedef struct {
    MPI_T_cvar_handle h;
    MPI_Datatype dt;
    MPI_T_enum et;
    int count;
} lt__cvar_t;

LT_MAYBE_UNUSED static int lt__cvar_open(const char *name, lt__cvar_t *cv)
{
    int idx, rc, namelen, desclen, verbosity, bind, scope;
    char nbuf[256], dbuf[1024];
    rc = MPI_T_cvar_get_index(name, &idx);
    if (MPI_SUCCESS != rc) return rc;
    namelen = sizeof(nbuf);
    desclen = sizeof(dbuf);
    rc = MPI_T_cvar_get_info(idx, nbuf, &namelen, &verbosity, &cv->dt, &cv->et, dbuf, &desclen, &bind, &scope);
    if (MPI_SUCCESS != rc) return rc;
    rc = MPI_T_cvar_handle_alloc(idx, NULL, &cv->h, &cv->count);
    return rc;
}

LT_MAYBE_UNUSED static void lt__cvar_close(lt__cvar_t *cv) { MPI_T_cvar_handle_free(&cv->h); }

/* Value of enumerator item called `value`, or -1. */
LT_MAYBE_UNUSED static int lt__enum_lookup(MPI_T_enum et, const char *value, int *out)
{
    int num, len;
    char name[256];
    len = sizeof(name);
    if (MPI_SUCCESS != MPI_T_enum_get_info(et, &num, name, &len)) return -1;
    for (int j = 0; j < num; j++) {
        int v;
        len = sizeof(name);
        if (MPI_SUCCESS != MPI_T_enum_get_item(et, j, &v, name, &len)) continue;
        if (0 == strcmp(name, value)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

LT_MAYBE_UNUSED static int lt_cvar_write_str(const char *name, const char *value)
{
    lt__cvar_t cv;
    int rc = lt__cvar_open(name, &cv);
    if (MPI_SUCCESS != rc) return rc;
    if (cv.dt == MPI_CHAR) {
        rc = MPI_T_cvar_write(cv.h, value);
    } else if (cv.dt == MPI_INT && MPI_T_ENUM_NULL != cv.et) {
        int v;
        if (0 == lt__enum_lookup(cv.et, value, &v)) {
            rc = MPI_T_cvar_write(cv.h, &v);
        } else {
            /* Not an item: an invalid value.  Write an out-of-range integer so the
             * component's handling of bad values is still exercised. */
            v = -12345;
            rc = MPI_T_cvar_write(cv.h, &v);
        }
    } else {
        rc = MPI_T_ERR_INVALID_NAME;
    }
    lt__cvar_close(&cv);
    return rc;
}

LT_MAYBE_UNUSED static int lt_cvar_write_int(const char *name, int value)
{
    lt__cvar_t cv;
    int rc = lt__cvar_open(name, &cv);
    if (MPI_SUCCESS != rc) return rc;
    if (cv.dt == MPI_INT || cv.dt == MPI_UNSIGNED) {
        rc = MPI_T_cvar_write(cv.h, &value);
    } else if (cv.dt == MPI_LONG || cv.dt == MPI_UNSIGNED_LONG) {
        long v = value;
        rc = MPI_T_cvar_write(cv.h, &v);
    } else if (cv.dt == MPI_LONG_LONG || cv.dt == MPI_UNSIGNED_LONG_LONG) {
        long long v = value;
        rc = MPI_T_cvar_write(cv.h, &v);
    } else if (cv.dt == MPI_C_BOOL) { /* e.g. coll_tuned_use_dynamic_rules */
        _Bool v = value != 0;
        rc = MPI_T_cvar_write(cv.h, &v);
    } else if (cv.dt == MPI_CHAR) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%d", value);
        rc = MPI_T_cvar_write(cv.h, buf);
    } else {
        rc = MPI_T_ERR_INVALID_NAME;
    }
    lt__cvar_close(&cv);
    return rc;
}

LT_MAYBE_UNUSED static int lt_cvar_read_str(const char *name, char *buf, size_t len)
{
    lt__cvar_t cv;
    int rc = lt__cvar_open(name, &cv);
    if (MPI_SUCCESS != rc) return rc;
    if (cv.dt == MPI_CHAR) {
        size_t need = cv.count > 4096 ? (size_t) cv.count + 1 : 4097;
        char *tmp = calloc(1, need);
        rc = tmp ? MPI_T_cvar_read(cv.h, tmp) : MPI_T_ERR_MEMORY;
        if (MPI_SUCCESS == rc) lt__strlcpy(buf, len, tmp);
        free(tmp);
    } else if (cv.dt == MPI_INT) {
        int v = 0;
        rc = MPI_T_cvar_read(cv.h, &v);
        if (MPI_SUCCESS == rc) {
            int num, nl;
            char ename[256];
            snprintf(buf, len, "%d", v);
            nl = sizeof(ename);
            if (MPI_T_ENUM_NULL != cv.et && MPI_SUCCESS == MPI_T_enum_get_info(cv.et, &num, ename, &nl)) {
                for (int j = 0; j < num; j++) {
                    int iv;
                    nl = sizeof(ename);
                    if (MPI_SUCCESS == MPI_T_enum_get_item(cv.et, j, &iv, ename, &nl) && iv == v) {
                        lt__strlcpy(buf, len, ename);
                        break;
                    }
                }
            }
        }
    } else {
        rc = MPI_T_ERR_INVALID_NAME;
    }
    lt__cvar_close(&cv);
    return rc;
}

LT_MAYBE_UNUSED static int lt_cvar_read_int(const char *name, int *value)
{
    lt__cvar_t cv;
    int rc = lt__cvar_open(name, &cv);
    if (MPI_SUCCESS != rc) return rc;
    if (cv.dt == MPI_INT || cv.dt == MPI_UNSIGNED) {
        rc = MPI_T_cvar_read(cv.h, value);
    } else if (cv.dt == MPI_C_BOOL) {
        _Bool v = 0;
        rc = MPI_T_cvar_read(cv.h, &v);
        *value = v;
    } else if (cv.dt == MPI_LONG || cv.dt == MPI_UNSIGNED_LONG) {
        long v = 0;
        rc = MPI_T_cvar_read(cv.h, &v);
        *value = (int) v;
    } else if (cv.dt == MPI_LONG_LONG || cv.dt == MPI_UNSIGNED_LONG_LONG) {
        long long v = 0;
        rc = MPI_T_cvar_read(cv.h, &v);
        *value = (int) v;
    } else {
        rc = MPI_T_ERR_INVALID_NAME;
    }
    lt__cvar_close(&cv);
    return rc;
}

LT_MAYBE_UNUSED static int lt_dup_with_pref(MPI_Comm base, const char *pref, MPI_Comm *out)
{
    MPI_Info info;
    int rc;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ompi_comm_coll_preference", pref);
    rc = MPI_Comm_dup_with_info(base, info, out);
    MPI_Info_free(&info);
    return rc;
}


LT_MAYBE_UNUSED static int lt_apply_setting(const char *alg_cvar, const char *alg, int n, int default_ways,
                                            int default_ports, const char **failed, int *failed_value)
{
    static const char *knobs[2] = {"coll_loom_dissemination_ways", "coll_loom_bruck_ports"};
    const int defaults[2] = {default_ways, default_ports};
    const char *kv = lt_knob_cvar(alg);
    int rc = lt_cvar_write_str(alg_cvar, alg);

    *failed = alg_cvar;
    *failed_value = 0;
    for (int k = 0; MPI_SUCCESS == rc && k < 2; ++k) {
        if (defaults[k] > 0) {
            int v = (kv && 0 == strcmp(kv, knobs[k]) && n > 0) ? n : defaults[k];
            rc = lt_cvar_write_int(knobs[k], v);
            *failed = knobs[k];
            *failed_value = v;
        }
    }
    /* segment / chunk sizes in bytes: 0 (automatic) unless this setting names one */
    static const char *sizes[2] = {"coll_loom_ring_segment_size", "coll_loom_twotree_chunk_size"};
    for (int k = 0; MPI_SUCCESS == rc && k < 2; ++k) {
        int v = (kv && 0 == strcmp(kv, sizes[k])) ? n : 0;
        rc = lt_cvar_write_int(sizes[k], v);
        *failed = sizes[k];
        *failed_value = v;
    }
    return rc;
}

LT_MAYBE_UNUSED static void lt_restore_settings(const char *alg_cvar, const char *default_alg,
                                                int default_ways, int default_ports)
{
    lt_cvar_write_str(alg_cvar, default_alg);
    if (default_ways > 0) lt_cvar_write_int("coll_loom_dissemination_ways", default_ways);
    if (default_ports > 0) lt_cvar_write_int("coll_loom_bruck_ports", default_ports);
    lt_cvar_write_int("coll_loom_ring_segment_size", 0);
    lt_cvar_write_int("coll_loom_twotree_chunk_size", 0);
}


LT_MAYBE_UNUSED static void lt_fail(int wrank, const char *fmt, ...)
{
    lt_nfail++;
    if (lt_nfail <= lt_max_report) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        fprintf(stderr, "FAIL [world rank %d] %s\n", wrank, msg);
        fflush(stderr);
    }
}

/* A 64-bit mixing function (the finalizer of MurmurHash3): test data that depends on
 * (call, rank, index) and differs from call to call. */
LT_MAYBE_UNUSED static unsigned long long lt_mix64(unsigned long long x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* lt_init for a test program after MPI_Init: when loom is not loaded, says so on world
 * rank 0 and ends the program with exit status 2.  Returns lt_init's count. */
LT_MAYBE_UNUSED static int lt_require_loom(const char *prog, int wrank)
{
    const int n = lt_init();
    if (n <= 0) {
        if (0 == wrank) {
            fprintf(stderr, "%s: loom is not loaded (no coll_loom_* performance variable)\n", prog);
        }
        MPI_Finalize();
        exit(2);
    }
    return n;
}

/* coll_loom_<coll>_algorithm = alg for each of the n collectives; returns how many could
 * not be written (each reported as a failure). */
LT_MAYBE_UNUSED static int lt_force(const lt_coll_t *colls, int n, const char *alg, int wrank)
{
    int bad = 0;
    for (int c = 0; c < n; ++c) {
        char cvar[96];
        snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(colls[c]));
        if (MPI_SUCCESS != lt_cvar_write_str(cvar, alg)) {
            lt_fail(wrank, "cannot write %s", cvar);
            ++bad;
        }
    }
    return bad;
}

LT_MAYBE_UNUSED static int lt_comm_pvar_index(const char *name)
{
    int num = 0;
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char n[256], desc[1024];
        int nl = sizeof(n), dl = sizeof(desc), verb, cls, bind, ro, cont, at;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (MPI_SUCCESS == MPI_T_pvar_get_info(i, n, &nl, &verb, &cls, &dt, &et, desc, &dl, &bind, &ro, &cont, &at) &&
            0 == strcmp(n, name))
            return MPI_T_BIND_MPI_COMM == bind ? i : -1;
    }
    return -1;
}

LT_MAYBE_UNUSED static int lt_comm_pvar_read(MPI_T_pvar_session session, int index, MPI_Comm comm,
                                             unsigned long long *value)
{
    MPI_T_pvar_handle h;
    int count = 0, rc;
    if (index < 0) return MPI_T_ERR_INVALID_INDEX;
    rc = MPI_T_pvar_handle_alloc(session, index, &comm, &h, &count);
    if (MPI_SUCCESS != rc) return rc;
    rc = MPI_T_pvar_read(session, h, value);
    MPI_T_pvar_handle_free(session, &h);
    return rc;
}

#endif /* LOOM_TEST_UTIL_H */
