/*
 * loom: correctness test of the non-blocking collectives (MPI_Iallreduce, MPI_Ibarrier,
 * MPI_Ibcast, MPI_Ireduce, MPI_Iallgather, MPI_Ireduce_scatter, MPI_Ireduce_scatter_block,
 * MPI_Iscan, MPI_Iexscan) and of their persistent forms (MPI_<Coll>_init, MPI_Start,
 * MPI_Startall; MPIX_<Coll>_init on Open MPI 4.1), proving through MPI_T that loom served them.
 *
 * Sections (run in this order; --sections LIST picks some, default all):
 *   matrix       every collective x every algorithm loom exposes through a
 *                coll_loom_i<coll>_<alg>_calls counter (forced through the cvar
 *                coll_loom_<coll>_algorithm, also with small knob values: ways, ports,
 *                segment / chunk sizes) and auto; counts 0, 1, 7, 1000 and one that the
 *                pipelined algorithms cut into blocks (200000 ints for allreduce, bcast,
 *                reduce, ~200000 in all for allgather and reduce_scatter(_block), 100000
 *                for scan/exscan; ring/twotree/hierarchical also with 16 KiB segments);
 *                MPI_INT, MPI_DOUBLE (values whose sums are exact) and a strided vector
 *                type (every data movement, and a non-commutative user op on it); MPI_SUM,
 *                MPI_MAX and a non-commutative user op (2x2 byte matrices, affine maps: rank
 *                order matters); MPI_IN_PLACE wherever MPI allows it; every root up to P =
 *                9, five roots beyond; WORLD, WORLD split with a permuted key (every rank,
 *                shuffled order) and a parity split with permuted keys.  Every result
 *                element is compared with a value the test folds itself, in rank order;
 *                bytes outside the data (vector gaps, guard bytes, a non-root's receive
 *                buffer, the send buffer) must not change.  Ibarrier is checked with a
 *                shared-memory witness: once it completes, every rank of the communicator
 *                on this node must have entered it.
 *   auto         auto over sizes from 4 B to 1.3 MiB (17 MiB bcasts on 3-5 processes):
 *                results checked, and where the blocking form cannot use the node segment
 *                (above coll_loom_shm_slot_size, or at every size when the job runs with
 *                --mca coll_loom_shm 0) the blocking and the non-blocking call must be
 *                decided alike (where the blocking form cannot use it, the non-blocking
 *                one cannot either).
 *   outstanding  16 different non-blocking collectives started on WORLD, a dup and a parity
 *                split (48 requests, the forced algorithm rotating from request to request
 *                and round to round), blocking MPI_Allreduce / MPI_Bcast (checked) between
 *                the starts and the completions, completed by MPI_Waitany, MPI_Testsome
 *                loops or reverse-order MPI_Wait depending on rank and round.
 *   persistent   each of the nine _init forms started 1000 times (200 when P > 16) with
 *                the input changed before every start and the result checked after every
 *                completion (MPI_Wait and MPI_Test loops), its counters moving at the _init
 *                only; every algorithm persistent, the cvar changed between the _init and
 *                the starts; pipelined counts persistent; freed after completion.
 *   startall     ten persistent requests (the nine collectives and one the previous
 *                component serves) on three communicators, MPI_Startall, MPI_Waitall /
 *                MPI_Testall, repeated with new inputs, freed.
 *   errors       MPI_Cancel and MPI_Request_free of an active non-blocking request (and of
 *                an active persistent one) must return an error (MPI_ERRORS_RETURN on the
 *                communicator and on MPI_COMM_WORLD: Open MPI 4.1 raises both calls' errors
 *                on MPI_COMM_WORLD); the request must then still complete with the right
 *                result.  Ranks post one after the other (a token passed over a
 *                communicator loom does not serve), so rank 0's request is certainly
 *                active when it is checked.
 *   crossed      the first non-blocking collectives on two fresh communicators, posted in
 *                opposite orders on even and odd ranks (legal: MPI orders collectives per
 *                communicator only); a post that blocks hangs, and a watchdog ends the job
 *                with a FAIL line after 30 s.
 *   segment      MPI_Iallreduces of up to 8 KiB among the ranks of a node in a shuffled order,
 *                through the node segment once blocking calls set it up
 *                (coll_loom_shm_node_phases must grow by one per call then; both protocols,
 *                up to 256 B and above): 40 outstanding (more than its 32 small slots),
 *                completed in rank- and round-dependent orders, an MPI_Ibarrier among every
 *                eight (checked with a shared-memory witness), blocking calls between the
 *                starts, every reduction case, in place or not; a persistent one started
 *                300 times, which runs point to point (the counter must not move).
 * Proof that loom served (unless --oracle-only): loom's counters are read around every post
 * and every _init: exactly one coll_loom_i<coll>_* counter moves by one (none for a call
 * with nothing to move or on a one-rank communicator, and never a blocking
 * coll_loom_<coll>_* one): the forced algorithm's, unless that algorithm may not serve the
 * call by loom's declared restrictions (then a loom algorithm that can, or the previous
 * component when loom has none, as test_colls checks).  At the end every forced
 * (collective, algorithm) counter must have grown, and for auto the sum over the
 * algorithms, wherever the blocking form without the node segment ran a loom algorithm
 * (otherwise a NOTE says that loom's rules gave every such call to the previous component).
 *
 * Usage: test_nonblocking [--oracle-only] [--sections LIST] [-v | -vv] [--max-report N]
 *        test_nonblocking --leak N [--leak-bound KIB] [--leak-inject BYTES]
 *   --oracle-only   check results only, never that loom ran (validates the expected values
 *                   against another component: --mca coll ^loom); no cvar is written
 *   --sections LIST comma-separated subset of matrix,auto,outstanding,persistent,startall,
 *                   errors,crossed,segment
 *   -v, -vv         timings per section; -vv also every call over 0.1 s
 *   --leak N        only the memory check: after a warm-up, N iterations of a small
 *                   MPI_Iallreduce on WORLD, an MPI_Ibcast of the vector type and a
 *                   user-op MPI_Iallreduce on the shuffled split, a persistent bcast every
 *                   16th, the algorithms changed every 500 iterations (results checked):
 *                   the resident set size (/proc/self/statm) may not grow by more than
 *                   --leak-bound KiB (default 512); --leak-inject B makes the test itself
 *                   keep B bytes per iteration (the check's own negative control)
 * Exit status: 0 when every rank passed, 1 on any failure, 2 when loom is absent (unless
 * --oracle-only).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "loom_test_oracle.h"
#include "loom_test_pcoll.h"
#include "loom_test_util.h"

/* ------------------------------------------------------------------------- */
/* datatypes, operations, values                                             */

/* The strided type (LO_T_VEC) undisplaced: ints 0, 1, 3, 4 of every 6; ints 2 and 5 are
 * gaps.  The values are this test's as they always were: its own numbering of types and
 * ops, with the salt (a call, a start), hashed into the key; double MAX values of 53 bits;
 * odd multipliers for non-commutative vector inputs. */
static const signed char tkey[LO_NT] = {
    [LO_T_INT] = 0,  [LO_T_INT64] = -1, [LO_T_FLOAT] = -1,      [LO_T_DOUBLE] = 1, [LO_T_DCOMPLEX] = -1,
    [LO_T_VEC] = 2,  [LO_T_2INT] = -1,  [LO_T_DOUBLE_INT] = -1, [LO_T_MAT] = -1,   [LO_T_PAIR] = -1};
static const signed char okey[LO_NO] = {
    [LO_O_NONE] = 0,    [LO_O_SUM] = 1,     [LO_O_PROD] = -1,   [LO_O_MAX] = 2,    [LO_O_MIN] = -1, [LO_O_BXOR] = -1,
    [LO_O_LAND] = -1,   [LO_O_MAXLOC] = -1, [LO_O_MINLOC] = -1, [LO_O_UCOMM] = -1, [LO_O_UNONCOMM] = 3};
static const lo_config_t oracle_cfg = {
    .vec_shift = 0, .hash = LO_HASH_MIXED, .salt_stride = 16, .tkey = tkey, .okey = okey, .nokey = 4,
    .prod_by_index = 0, .dmax53 = 1, .vec_odd = 1,
    /* only the non-commutative user op, on red_cases' types: anything else is a bug */
    .ucomm_types = 0, .unoncomm_types = LO_BIT(LO_T_INT) | LO_BIT(LO_T_VEC)};
#define GUARD 64 /* bytes after the data that must stay untouched */

typedef struct { lo_tkind_t t; lo_okind_t o; } case_t;
static const case_t move_cases[] = {{LO_T_INT, LO_O_NONE}, {LO_T_DOUBLE, LO_O_NONE}, {LO_T_VEC, LO_O_NONE}};
/* Open MPI 4.1 refuses predefined ops on derived types, so the vector type gets the user op */
static const case_t red_cases[] = {{LO_T_INT, LO_O_SUM},    {LO_T_INT, LO_O_MAX},    {LO_T_INT, LO_O_UNONCOMM},
                                   {LO_T_DOUBLE, LO_O_SUM}, {LO_T_DOUBLE, LO_O_MAX}, {LO_T_VEC, LO_O_UNONCOMM}};
#define NMOVE ((int) (sizeof(move_cases) / sizeof(move_cases[0])))
#define NRED ((int) (sizeof(red_cases) / sizeof(red_cases[0])))

/* ------------------------------------------------------------------------- */
/* state                                                                     */

static int wrank, wsize;
static long nchecks, ncalls;
static int verbose, oracle_only;
#define FAIL(...) lt_fail(wrank, __VA_ARGS__)

/* From 16 processes on (oversubscribed on CI machines) the matrix is trimmed. */
static int large_np(void) { return wsize >= 16; }

/* The collectives this test's matrix knows (calls, oracles, buffers): the ones before
 * alltoall in loom's list; alltoall(v), with their own buffer rules (send and receive
 * types, per-rank counts), have test_alltoall, which runs their non-blocking and
 * persistent forms too. */
#define NB_COLLS LT_ALLTOALL

static const char *icoll(lt_coll_t c) { return lt_coll_name(LT_NB(c)); }

/* ------------------------------------------------------------------------- */
/* loom's counters of the non-blocking forms: coll_loom_i<coll>_<alg>_calls  */
/* (found by lt_init, read as LT_NB(c): loom_test_util.h)                     */

static int nb_found(void)
{
    int n = 0;
    for (int c = 0; c < LT_NUM_COLLS; c++) n += lt_nalgs(LT_NB(c)) + lt_has_fallback(LT_NB(c));
    return n;
}

static void nb_read(lt_coll_t c, lt_counts_t *out)
{
    memset(out, 0, sizeof(*out));
    if (oracle_only) return;
    (void) lt_read(LT_NB(c), out);
}

/* per (collective, algorithm): calls forced to it on communicators loom serves, and how
 * many of them it ran; auto: calls, and how many an algorithm (not the fallback) ran */
static long forced_calls[LT_NUM_COLLS][LT_MAX_ALGS], forced_served[LT_NUM_COLLS][LT_MAX_ALGS];
static long auto_calls[LT_NUM_COLLS], auto_served[LT_NUM_COLLS], auto_fallback[LT_NUM_COLLS];

/* ------------------------------------------------------------------------- */
/* settings                                                                  */

typedef struct {
    char alg[LT_NAME_LEN]; /* "auto" or an algorithm */
    int knob;              /* the algorithm's knob, -1: its default */
} setting_t;

#define NKNOBS 6
static const char *knob_names[NKNOBS] = {"coll_loom_dissemination_ways", "coll_loom_bruck_ports",
                                         "coll_loom_ring_segment_size", "coll_loom_twotree_chunk_size",
                                         "coll_loom_hierarchical_segment_size", "coll_loom_knomial_radix"};
static int knob_default[NKNOBS] = {-1, -1, -1, -1, -1, -1};
static char default_alg[LT_NUM_COLLS][LT_NAME_LEN];

static int knob_of(const char *alg)
{
    if (0 == strcmp(alg, "dissemination")) return 0;
    if (0 == strcmp(alg, "bruck")) return 1;
    if (0 == strcmp(alg, "ring")) return 2;
    if (0 == strcmp(alg, "twotree")) return 3;
    if (0 == strcmp(alg, "hierarchical")) return 4;
    if (0 == strcmp(alg, "knomial")) return 5;
    return -1;
}

/* the value of alg's knob in force under setting s (for the rules of dissemination) */
static int knob_value(const setting_t *s, const char *alg)
{
    int k = knob_of(alg);
    if (k < 0) return -1;
    if (s && 0 == strcmp(s->alg, alg) && s->knob >= 0) return s->knob;
    return knob_default[k];
}

static int apply_setting(lt_coll_t c, const setting_t *s)
{
    char cvar[96];
    int rc;
    if (oracle_only) return MPI_SUCCESS;
    snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(c));
    rc = lt_cvar_write_str(cvar, s->alg);
    if (MPI_SUCCESS != rc) {
        FAIL("cannot set %s=%s through MPI_T: %s", cvar, s->alg, lt_errstr(rc));
        return rc;
    }
    int kk = knob_of(s->alg);
    for (int k = 0; k < NKNOBS; k++) {
        int v = (k == kk && s->knob >= 0) ? s->knob : knob_default[k];
        if (v < 0) continue;
        rc = lt_cvar_write_int(knob_names[k], v);
        if (MPI_SUCCESS != rc) {
            FAIL("cannot set %s=%d through MPI_T: %s", knob_names[k], v, lt_errstr(rc));
            return rc;
        }
    }
    return MPI_SUCCESS;
}

static void restore_defaults(lt_coll_t c)
{
    setting_t s = {"", -1};
    if (oracle_only) return;
    memcpy(s.alg, default_alg[c], sizeof(s.alg));
    s.alg[sizeof(s.alg) - 1] = '\0';
    apply_setting(c, &s);
}

static void describe_setting(const setting_t *s, char *buf, size_t len)
{
    if (s->knob >= 0) snprintf(buf, len, "%.*s(%s=%d)", LT_NAME_LEN - 1, s->alg, knob_names[knob_of(s->alg)] + 10, s->knob);
    else snprintf(buf, len, "%.*s", LT_NAME_LEN - 1, s->alg);
}

/* ------------------------------------------------------------------------- */
/* communicators, expected values                                            */

typedef struct {
    uint64_t salt;
    long len;
    char *full, *incl, *excl; /* fold over ranks 0..P-1, 0..rank, 0..rank-1 */
} fcache_t;

#define NSLOTS 8
typedef struct {
    const char *name;
    MPI_Comm comm, oracle; /* oracle: same group, loom excluded (the test's own calls) */
    int rank, size, own, slot;
    int consecutive; /* every node's ranks form one range of this communicator's ranks */
    int *wr;         /* world rank of each rank */
    long bseq;       /* barriers started on it */
    fcache_t fc[LO_NT * LO_NO];
} comm_t;

/* Ibarrier witness: a node-shared array, slot [comm slot][world rank] = the sequence
 * number of the last barrier that rank entered on that communicator. */
static volatile long *wit;
static char *wit_local; /* wit_local[w]: world rank w shares this node's array */
static MPI_Win wit_win = MPI_WIN_NULL;
static MPI_Comm wit_node = MPI_COMM_NULL;

static void witness_setup(MPI_Comm oracle_world)
{
    MPI_Aint sz;
    int du, nrank, nsize, *nr, *wrk;
    void *base;
    MPI_Group gn, gw;
    wit_local = calloc((size_t) wsize, 1);
    MPI_Comm_split_type(oracle_world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &wit_node);
    MPI_Comm_rank(wit_node, &nrank);
    MPI_Comm_size(wit_node, &nsize);
    if (MPI_SUCCESS != MPI_Win_allocate_shared(0 == nrank ? (MPI_Aint) (NSLOTS * wsize * sizeof(long)) : 0,
                                               sizeof(long), MPI_INFO_NULL, wit_node, &base, &wit_win) ||
        MPI_SUCCESS != MPI_Win_shared_query(wit_win, 0, &sz, &du, &base)) {
        if (0 == wrank) fprintf(stderr, "test_nonblocking: no shared window: Ibarrier only checked for completion\n");
        wit = NULL;
        return;
    }
    wit = base;
    if (0 == nrank) memset(base, 0, NSLOTS * (size_t) wsize * sizeof(long));
    nr = malloc(sizeof(int) * (size_t) nsize);
    wrk = malloc(sizeof(int) * (size_t) nsize);
    MPI_Comm_group(wit_node, &gn);
    MPI_Comm_group(MPI_COMM_WORLD, &gw);
    for (int i = 0; i < nsize; i++) nr[i] = i;
    MPI_Group_translate_ranks(gn, nsize, nr, gw, wrk);
    for (int i = 0; i < nsize; i++) wit_local[wrk[i]] = 1;
    MPI_Group_free(&gn);
    MPI_Group_free(&gw);
    free(nr);
    free(wrk);
    MPI_Barrier(wit_node);
}

static void witness_free(void)
{
    if (MPI_WIN_NULL != wit_win) MPI_Win_free(&wit_win);
    if (MPI_COMM_NULL != wit_node) MPI_Comm_free(&wit_node);
    free(wit_local);
}

static int node_consecutive(MPI_Comm oracle, int P)
{
    char me[MPI_MAX_PROCESSOR_NAME] = {0}, *all = calloc((size_t) P, MPI_MAX_PROCESSOR_NAME);
    int len, ok = 1;
    MPI_Get_processor_name(me, &len);
    MPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, oracle);
    for (int r = 1; r < P && ok; r++) {
        const char *h = all + (size_t) r * MPI_MAX_PROCESSOR_NAME;
        if (0 == strcmp(h, all + (size_t) (r - 1) * MPI_MAX_PROCESSOR_NAME)) continue;
        for (int q = 0; q < r - 1 && ok; q++) ok = 0 != strcmp(h, all + (size_t) q * MPI_MAX_PROCESSOR_NAME);
    }
    free(all);
    return ok;
}

static int next_slot;
static void comm_init(comm_t *c, const char *name, MPI_Comm comm, int own)
{
    MPI_Group g, gw;
    int *r;
    memset(c, 0, sizeof(*c));
    c->name = name;
    c->comm = comm;
    c->own = own;
    c->slot = next_slot++ % NSLOTS;
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    lt_dup_with_pref(comm, "tuned,^loom", &c->oracle);
    c->consecutive = node_consecutive(c->oracle, c->size);
    c->wr = malloc(sizeof(int) * (size_t) c->size);
    r = malloc(sizeof(int) * (size_t) c->size);
    for (int i = 0; i < c->size; i++) r[i] = i;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &gw);
    MPI_Group_translate_ranks(g, c->size, r, gw, c->wr);
    MPI_Group_free(&g);
    MPI_Group_free(&gw);
    free(r);
}

static void comm_fini(comm_t *c)
{
    for (int i = 0; i < LO_NT * LO_NO; i++) {
        free(c->fc[i].full);
        free(c->fc[i].incl);
        free(c->fc[i].excl);
    }
    free(c->wr);
    MPI_Comm_free(&c->oracle);
    if (c->own) MPI_Comm_free(&c->comm);
}

/* The folds of elements 0..n-1 over ranks in rank order, for (t, o, salt). */
static const fcache_t *fold_cache(comm_t *c, lo_tkind_t t, lo_okind_t o, uint64_t salt, long n)
{
    fcache_t *f = &c->fc[t * LO_NO + o];
    if (f->full && f->salt == salt && f->len >= n) return f;
    long len = n < 64 ? 64 : n;
    size_t e = lo_ext[t], bytes = (size_t) len * e;
    char tmp[LO_ELEM_BYTES];
    free(f->full);
    free(f->incl);
    free(f->excl);
    f->full = calloc(1, bytes);
    f->incl = calloc(1, bytes);
    f->excl = calloc(1, bytes);
    f->salt = salt;
    f->len = len;
    for (long i = 0; i < len; i++) {
        char *acc = f->full + (size_t) i * e;
        lo_gen(t, o, 0, i, salt, acc);
        if (c->rank == 0) memcpy(f->incl + (size_t) i * e, acc, e);
        for (int r = 1; r < c->size; r++) {
            if (r == c->rank) memcpy(f->excl + (size_t) i * e, acc, e);
            lo_gen(t, o, r, i, salt, tmp);
            lo_apply(t, o, acc, tmp, acc);
            if (r == c->rank) memcpy(f->incl + (size_t) i * e, acc, e);
        }
    }
    return f;
}

/* ------------------------------------------------------------------------- */
/* one call: buffers, inputs, post, check                                    */

typedef struct {
    lt_coll_t coll;
    comm_t *c;
    const setting_t *s;
    lo_tkind_t t;
    lo_okind_t o;
    long count; /* allgather: per rank; reduce_scatter(_block): per block (see rs_counts) */
    int root, inplace, pattern;
    int big;       /* reductions: closed-form inputs, so expected sums cost O(count) */
    uint64_t salt; /* the inputs; changed before every start of a persistent request */
    const char *ctx; /* section, start number, ... for messages */
    /* filled by call_setup */
    int *rcounts;
    long total, first, nresult;
    char *send, *recv, *spristine, *rpristine;
    size_t sbytes, rbytes;
    long bseq;
    MPI_Request req;
    int posted;
    char label[512];
} call_t;

static int is_rooted(lt_coll_t c) { return c == LT_BCAST || c == LT_REDUCE; }
static int is_reduction(lt_coll_t c)
{
    return c == LT_ALLREDUCE || c == LT_REDUCE || c == LT_REDUCE_SCATTER || c == LT_REDUCE_SCATTER_BLOCK ||
           c == LT_SCAN || c == LT_EXSCAN;
}
static int may_inplace(lt_coll_t c) { return c != LT_BCAST && c != LT_BARRIER; }

static long rs_counts(const call_t *k, int *rc)
{
    int P = k->c->size;
    long tot = 0;
    for (int i = 0; i < P; i++) {
        if (k->coll == LT_REDUCE_SCATTER_BLOCK || k->pattern == 0) rc[i] = (int) k->count;
        else if (k->pattern == 1) rc[i] = (i % 3 == 1) ? 0 : (int) k->count + (i % 4);
        else rc[i] = (i == P - 1) ? (int) k->count * P : 0;
        tot += rc[i];
    }
    return tot;
}

static inline long big_a(long i, uint64_t salt)
{
    return (long) (((((uint64_t) i * 2654435761u) + salt * 97u) >> 7) % 1001) - 500;
}
static inline long big_b(int r) { return (long) ((r * r * 7) % 23); }
static inline long big_c(long i) { return (i % 5) - 2; }
static int closed_form(const call_t *k)
{
    return k->big && k->o == LO_O_SUM && (k->t == LO_T_INT || k->t == LO_T_DOUBLE);
}

static void input_elem(const call_t *k, int r, long i, void *e)
{
    if (closed_form(k)) {
        long x = big_a(i, k->salt) + big_b(r) + big_c(i) * r;
        if (k->t == LO_T_INT) *(int32_t *) e = (int32_t) x;
        else *(double *) e = (double) x + 0.5;
    } else {
        lo_gen(k->t, k->o, r, i, k->salt, e);
    }
}

/* element i of the fold over ranks 0..u */
static void fold_elem(const call_t *k, int u, long i, long n, void *e)
{
    if (closed_form(k)) {
        long P = u + 1, sb = 0;
        for (int r = 0; r < P; r++) sb += big_b(r);
        long x = P * big_a(i, k->salt) + sb + big_c(i) * P * (P - 1) / 2;
        if (k->t == LO_T_INT) *(int32_t *) e = (int32_t) (uint32_t) (uint64_t) x;
        else *(double *) e = (double) x + 0.5 * (double) P;
        return;
    }
    const fcache_t *f = fold_cache(k->c, k->t, k->o, k->salt, n);
    const char *src = u == k->c->size - 1 ? f->full : u == k->c->rank ? f->incl : f->excl;
    memcpy(e, src + (size_t) i * lo_ext[k->t], lo_ext[k->t]);
}

static void call_label(call_t *k)
{
    char sd[LT_NAME_LEN + 64] = "auto", extra[64] = "";
    if (k->s) describe_setting(k->s, sd, sizeof(sd));
    if (is_rooted(k->coll)) snprintf(extra, sizeof(extra), " root=%d", k->root);
    if (k->coll == LT_REDUCE_SCATTER)
        snprintf(extra, sizeof(extra), " recvcounts=%s",
                 k->pattern == 0 ? "uniform" : k->pattern == 1 ? "uneven+zeros" : "all-to-last");
    if (k->coll == LT_BARRIER)
        snprintf(k->label, sizeof(k->label), "%.40s comm=%s(P=%d,rank=%d) alg=%s [%s]", icoll(k->coll), k->c->name,
                 k->c->size, k->c->rank, sd, k->ctx ? k->ctx : "");
    else
        snprintf(k->label, sizeof(k->label), "%.40s comm=%s(P=%d,rank=%d) type=%s op=%s count=%ld%s %s alg=%s [%s]",
                 icoll(k->coll), k->c->name, k->c->size, k->c->rank, lo_tname[k->t], lo_oname[k->o], k->count, extra,
                 k->inplace ? "MPI_IN_PLACE" : "sendbuf", sd, k->ctx ? k->ctx : "");
}

static int call_setup(call_t *k)
{
    comm_t *c = k->c;
    int P = c->size, me = c->rank, need_send = 0, need_recv = 1;
    long nsend = 0, nrecv = 0;
    k->req = MPI_REQUEST_NULL;
    k->send = k->recv = k->spristine = k->rpristine = NULL;
    k->rcounts = NULL;
    k->first = 0;
    k->posted = 0;
    k->total = k->nresult = 0;
    if (!may_inplace(k->coll)) k->inplace = 0;
    call_label(k);
    switch (k->coll) {
    case LT_BARRIER: return 0;
    case LT_ALLREDUCE: case LT_SCAN: case LT_EXSCAN:
        k->total = nrecv = k->nresult = k->count;
        need_send = !k->inplace;
        nsend = k->count;
        break;
    case LT_BCAST: k->total = nrecv = k->nresult = k->count; break;
    case LT_REDUCE:
        k->total = nsend = k->count;
        need_send = !(k->inplace && me == k->root);
        need_recv = !(k->inplace && me != k->root); /* the IN_PLACE variant: non-roots pass NULL */
        nrecv = k->count;
        k->nresult = me == k->root ? k->count : 0;
        break;
    case LT_ALLGATHER:
        k->total = nrecv = k->nresult = k->count * P;
        need_send = !k->inplace;
        nsend = k->count;
        break;
    case LT_REDUCE_SCATTER: case LT_REDUCE_SCATTER_BLOCK:
        k->rcounts = malloc(sizeof(int) * (size_t) P);
        k->total = rs_counts(k, k->rcounts);
        for (int i = 0; i < me; i++) k->first += k->rcounts[i];
        k->nresult = k->rcounts[me];
        need_send = !k->inplace;
        nsend = k->total;
        nrecv = k->inplace ? k->total : k->nresult;
        break;
    default: break;
    }
    if (need_send) {
        k->sbytes = (size_t) nsend * lo_ext[k->t] + GUARD;
        k->send = malloc(k->sbytes);
        k->spristine = malloc(k->sbytes);
    }
    if (need_recv) {
        k->rbytes = (size_t) nrecv * lo_ext[k->t] + GUARD;
        k->recv = malloc(k->rbytes);
        k->rpristine = malloc(k->rbytes);
    }
    if ((need_send && (!k->send || !k->spristine)) || (need_recv && (!k->recv || !k->rpristine))) {
        FAIL("%s: out of memory in the test", k->label);
        return -1;
    }
    return 0;
}

static void call_free(call_t *k)
{
    free(k->send);
    free(k->recv);
    free(k->spristine);
    free(k->rpristine);
    free(k->rcounts);
    k->send = k->recv = k->spristine = k->rpristine = NULL;
    k->rcounts = NULL;
}

static void fill_elems(const call_t *k, char *buf, int r, long n)
{
    for (long i = 0; i < n; i++) input_elem(k, r, i, buf + (size_t) i * lo_ext[k->t]);
}

/* The inputs for the current salt; receive buffers back to their pattern. */
static void call_fill(call_t *k)
{
    int me = k->c->rank;
    if (k->coll == LT_BARRIER) {
        k->bseq = ++k->c->bseq;
        if (wit) __atomic_store_n(&wit[(size_t) k->c->slot * (size_t) wsize + (size_t) wrank], k->bseq, __ATOMIC_SEQ_CST);
        return;
    }
    if (k->recv) memset(k->recv, 0xA5, k->rbytes);
    if (k->send) memset(k->send, 0x5A, k->sbytes);
    switch (k->coll) {
    case LT_BCAST:
        if (me == k->root) fill_elems(k, k->recv, me, k->count);
        break;
    case LT_REDUCE: fill_elems(k, (k->inplace && me == k->root) ? k->recv : k->send, me, k->count); break;
    case LT_ALLGATHER:
        fill_elems(k, k->inplace ? k->recv + (size_t) me * (size_t) k->count * lo_ext[k->t] : k->send, me, k->count);
        break;
    default: fill_elems(k, k->inplace ? k->recv : k->send, me, k->total); break;
    }
    if (k->send) memcpy(k->spristine, k->send, k->sbytes);
    if (k->recv) memcpy(k->rpristine, k->recv, k->rbytes);
}

/* persistent: 0 non-blocking, 1 the _init form, 2 the blocking form (auto sweep) */
static int call_post_blocking(call_t *k);
static int call_post(call_t *k, int persistent)
{
    if (2 == persistent) return call_post_blocking(k);
    void *sb = k->inplace ? MPI_IN_PLACE : k->send;
    MPI_Datatype dt = lo_dt[k->t];
    MPI_Op op = lo_op[k->o];
    MPI_Comm cm = k->c->comm;
    MPI_Info in = MPI_INFO_NULL;
    int cnt = (int) k->count, me = k->c->rank;
    MPI_Request *r = &k->req;
    k->posted = 1;
    switch (k->coll) {
    case LT_ALLREDUCE:
        return persistent ? MPI_Allreduce_init(sb, k->recv, cnt, dt, op, cm, in, r)
                          : MPI_Iallreduce(sb, k->recv, cnt, dt, op, cm, r);
    case LT_BARRIER: return persistent ? MPI_Barrier_init(cm, in, r) : MPI_Ibarrier(cm, r);
    case LT_BCAST:
        return persistent ? MPI_Bcast_init(k->recv, cnt, dt, k->root, cm, in, r)
                          : MPI_Ibcast(k->recv, cnt, dt, k->root, cm, r);
    case LT_REDUCE:
        sb = (k->inplace && me == k->root) ? MPI_IN_PLACE : k->send;
        return persistent ? MPI_Reduce_init(sb, k->recv, cnt, dt, op, k->root, cm, in, r)
                          : MPI_Ireduce(sb, k->recv, cnt, dt, op, k->root, cm, r);
    case LT_ALLGATHER:
        return persistent ? MPI_Allgather_init(sb, cnt, dt, k->recv, cnt, dt, cm, in, r)
                          : MPI_Iallgather(sb, cnt, dt, k->recv, cnt, dt, cm, r);
    case LT_REDUCE_SCATTER:
        return persistent ? MPI_Reduce_scatter_init(sb, k->recv, k->rcounts, dt, op, cm, in, r)
                          : MPI_Ireduce_scatter(sb, k->recv, k->rcounts, dt, op, cm, r);
    case LT_REDUCE_SCATTER_BLOCK:
        return persistent ? MPI_Reduce_scatter_block_init(sb, k->recv, cnt, dt, op, cm, in, r)
                          : MPI_Ireduce_scatter_block(sb, k->recv, cnt, dt, op, cm, r);
    case LT_SCAN:
        return persistent ? MPI_Scan_init(sb, k->recv, cnt, dt, op, cm, in, r)
                          : MPI_Iscan(sb, k->recv, cnt, dt, op, cm, r);
    case LT_EXSCAN:
        return persistent ? MPI_Exscan_init(sb, k->recv, cnt, dt, op, cm, in, r)
                          : MPI_Iexscan(sb, k->recv, cnt, dt, op, cm, r);
    default: return MPI_ERR_OTHER;
    }
}

static int call_post_blocking(call_t *k)
{
    void *sb = k->inplace ? MPI_IN_PLACE : k->send;
    MPI_Datatype dt = lo_dt[k->t];
    MPI_Op op = lo_op[k->o];
    MPI_Comm cm = k->c->comm;
    int cnt = (int) k->count, me = k->c->rank;
    k->posted = 1;
    k->req = MPI_REQUEST_NULL;
    switch (k->coll) {
    case LT_ALLREDUCE: return MPI_Allreduce(sb, k->recv, cnt, dt, op, cm);
    case LT_BARRIER: return MPI_Barrier(cm);
    case LT_BCAST: return MPI_Bcast(k->recv, cnt, dt, k->root, cm);
    case LT_REDUCE:
        return MPI_Reduce((k->inplace && me == k->root) ? MPI_IN_PLACE : k->send, k->recv, cnt, dt, op, k->root, cm);
    case LT_ALLGATHER: return MPI_Allgather(sb, cnt, dt, k->recv, cnt, dt, cm);
    case LT_REDUCE_SCATTER: return MPI_Reduce_scatter(sb, k->recv, k->rcounts, dt, op, cm);
    case LT_REDUCE_SCATTER_BLOCK: return MPI_Reduce_scatter_block(sb, k->recv, cnt, dt, op, cm);
    case LT_SCAN: return MPI_Scan(sb, k->recv, cnt, dt, op, cm);
    case LT_EXSCAN: return MPI_Exscan(sb, k->recv, cnt, dt, op, cm);
    default: return MPI_ERR_OTHER;
    }
}

static void report_rc(int rc, const char *label, const char *what)
{
    if (MPI_SUCCESS != rc) {
        char es[MPI_MAX_ERROR_STRING];
        int el = 0;
        es[0] = '\0';
        MPI_Error_string(rc, es, &el);
        FAIL("%s: %s returned %d (%s)", label, what, rc, es);
    }
}

/* ---- the rules loom declares (docs/user/algorithms.md), recomputed here ---- */

/* End et al., Theorem 1: can n-way dissemination serve a non-idempotent op on P ranks? */
static int dissemination_adaptable(int n, int P)
{
    long A[4096];
    int na = 0, k = 0;
    long pw = 1;
    if (P <= 1) return 1;
    while (pw < P) pw *= (n + 1), k++;
    long m = pw / (n + 1), base = 1;
    A[na++] = 0;
    A[na++] = 1;
    for (int l = 1; l <= k - 1; l++) {
        for (int j = 1; j <= n; j++) {
            long v = (long) (j + 1) * base;
            if (v >= 1 && v <= m && na < 4096) A[na++] = v;
        }
        base *= (n + 1);
    }
    for (int s = 1; s <= n; s++)
        for (int a = 0; a < na; a++)
            for (int d = 0; d < na; d++)
                if (A[d] < m && s * m + A[a] - A[d] == P) return 1;
    return 0;
}

/* 1: alg may not serve the call, 0: it must, -1: unknown algorithm, 2: it may or may not
 * (the call's layout decides) */
static int refuses(const call_t *k, const char *alg)
{
    const int comm = k->o != LO_O_UNONCOMM, exact = k->t == LO_T_INT && (k->o == LO_O_SUM || k->o == LO_O_MAX);
    const int idem = k->o == LO_O_MAX, P = k->c->size;
    if (0 == strcmp(alg, "torus")) /* needs a torus map; the chain is not rank order */
        return !lt_torus_configured() || (LT_BCAST != k->coll && !comm);
    switch (k->coll) {
    case LT_ALLREDUCE:
        if (0 == strcmp(alg, "pairwise") || 0 == strcmp(alg, "halving_doubling") || 0 == strcmp(alg, "knomial"))
            return 0;
        if (0 == strcmp(alg, "bruck")) return !(comm && exact);
        /* each block combined once, out of rank order */
        if (0 == strcmp(alg, "ring") || 0 == strcmp(alg, "twotree") || 0 == strcmp(alg, "circulant") ||
            0 == strcmp(alg, "swing"))
            return !comm;
        if (0 == strcmp(alg, "hierarchical")) return !comm && !k->c->consecutive;
        if (0 == strcmp(alg, "dissemination")) {
            int n = knob_value(k->s, "dissemination");
            return !(comm && exact && (idem || (n > 0 && dissemination_adaptable(n, P))));
        }
        return -1;
    case LT_ALLGATHER:
        /* swing's torus form cuts every part in 2 D pieces: a count they do not divide goes
         * to the previous component (2: either may run) */
        if (0 == strcmp(alg, "swing") && lt_torus_configured()) return 2;
        return lt_alg_index(LT_NB(k->coll), alg) >= 0 ? 0 : -1;
    case LT_BARRIER: case LT_BCAST: return lt_alg_index(LT_NB(k->coll), alg) >= 0 ? 0 : -1;
    case LT_REDUCE:
        if (0 == strcmp(alg, "binomial")) return 0;
        if (0 == strcmp(alg, "twotree") || 0 == strcmp(alg, "hierarchical") || 0 == strcmp(alg, "halving_doubling") ||
            0 == strcmp(alg, "circulant"))
            return !comm;
        return -1;
    case LT_REDUCE_SCATTER: case LT_REDUCE_SCATTER_BLOCK:
        if (0 == strcmp(alg, "ring") || 0 == strcmp(alg, "halving_doubling") || 0 == strcmp(alg, "knomial"))
            return !comm;
        return -1;
    case LT_SCAN: case LT_EXSCAN:
        if (0 == strcmp(alg, "recursive_doubling")) return 0;
        if (0 == strcmp(alg, "hierarchical")) return !k->c->consecutive;
        return -1;
    default: return -1;
    }
}

/* Around one post / _init: which of loom's counters moved. */
static void check_counters(const call_t *k, const lt_counts_t *b, const lt_counts_t *a, const lt_counts_t *bb,
                           const lt_counts_t *ba)
{
    lt_diff_t d, db;
    const lt_coll_t lc = k->coll;
    if (oracle_only) return;
    nchecks++;
    lt_diff(LT_NB(lc), b, a, &d);
    lt_diff(lc, bb, ba, &db);
    if (db.changed)
        FAIL("%s: a non-blocking call moved loom's blocking %s counters: %s", k->label, lt_coll_name(lc), db.desc);
    if ((0 == k->total && lc != LT_BARRIER) || 1 == k->c->size) {
        if (d.changed)
            FAIL("%s: loom counted a %s (%s); expected no counter to move", k->label,
                 1 == k->c->size ? "call on a one-rank communicator" : "call with nothing to move", d.desc);
        return;
    }
    if (d.changed != 1 || d.delta != 1) {
        FAIL("%s: expected exactly one coll_loom_%s_* counter +1, got: %s", k->label, icoll(lc), d.desc);
        return;
    }
    const char *forced = k->s ? k->s->alg : "auto";
    if (0 == strcmp(forced, "auto")) {
        auto_calls[lc]++;
        if (d.which >= 0) auto_served[lc]++;
        else auto_fallback[lc]++;
        return;
    }
    const int fi = lt_alg_index(LT_NB(lc), forced);
    const char *ran = d.which == LT_WHICH_FALLBACK ? "the previous component (libnbc)" : lt_alg_name(LT_NB(lc), d.which);
    if (fi < 0) {
        FAIL("%s: forced algorithm %s has no coll_loom_%s_%s_calls counter", k->label, forced, icoll(lc), forced);
        return;
    }
    int r = refuses(k, forced);
    if (2 == r) return;
    /* the final check counts the calls the algorithm may serve (hierarchical refuses
     * scans on ranks that are not node-consecutive: a round-robin placement has none) */
    if (r != 1) forced_calls[lc][fi]++;
    if (d.which == fi) forced_served[lc][fi]++;
    if (r == 1) {
        int other = 0;
        for (int i = 0; i < lt_nalgs(LT_NB(lc)); i++) other |= 0 == refuses(k, lt_alg_name(LT_NB(lc), i));
        if (d.which == fi)
            FAIL("%s: forced %s may NOT serve this call (its declared restrictions), but it ran", k->label, forced);
        else if (d.which == LT_WHICH_FALLBACK ? other : 1 == refuses(k, ran))
            FAIL("%s: forced %s cannot serve this call; it must be replaced by %s, but %s ran", k->label, forced,
                 other ? "a loom algorithm that can" : "the previous component", ran);
        return;
    }
    if (r == 0 && d.which != fi) FAIL("%s: forced %s must serve this call, but %s ran (%s)", k->label, forced, ran, d.desc);
}

/* Posts (or, persistent, initialises) with the counter check around it. */
static int call_post_checked(call_t *k, int persistent)
{
    lt_counts_t b, a, bb, ba;
    int rc;
    if (!oracle_only) {
        nb_read(k->coll, &b);
        lt_read(k->coll, &bb);
    }
    rc = call_post(k, persistent);
    if (!oracle_only) {
        nb_read(k->coll, &a);
        lt_read(k->coll, &ba);
    }
    ncalls++;
    report_rc(rc, k->label, persistent ? "the _init call" : "the non-blocking call");
    if (MPI_SUCCESS == rc) check_counters(k, &b, &a, &bb, &ba);
    else k->req = MPI_REQUEST_NULL;
    return rc;
}

static void compare_elem(call_t *k, long i, const char *got, const char *want, long *wrong, const char *what)
{
    if (!lo_same(k->t, k->o, want, got)) {
        if (*wrong < 3) {
            char sw[96], sg[96];
            lo_show(k->t, want, sw, sizeof(sw));
            lo_show(k->t, got, sg, sizeof(sg));
            FAIL("%s: %s element %ld is %s, expected %s", k->label, what, i, sg, sw);
        }
        ++*wrong;
    }
}

static void check_untouched(call_t *k, const char *buf, const char *pristine, size_t nbytes, long nwrite,
                            const char *what)
{
    char *mask;
    nchecks++;
    if (lo_gapless(k->t)) {
        /* no gaps: everything past the data must be as it was */
        size_t from = (size_t) nwrite * lo_ext[k->t];
        if (from < nbytes && 0 != memcmp(buf + from, pristine + from, nbytes - from)) {
            size_t b = from;
            while (buf[b] == pristine[b]) b++;
            FAIL("%s: byte %zu of the %s was overwritten (past the data)", k->label, b, what);
        }
        return;
    }
    mask = calloc(1, nbytes);
    for (long i = 0; i < nwrite; i++) lo_mark_data(k->t, mask + (size_t) i * lo_ext[k->t]);
    for (size_t b = 0; b < nbytes; b++) {
        if (!mask[b] && buf[b] != pristine[b]) {
            FAIL("%s: byte %zu of the %s was overwritten (%s)", k->label, b, what,
                 b >= (size_t) nwrite * lo_ext[k->t] ? "past the data" : "a gap of the datatype");
            break;
        }
    }
    free(mask);
}

/* Checks a completed call's result. */
static void call_verify(call_t *k)
{
    const comm_t *c = k->c;
    const int me = c->rank, P = c->size;
    const size_t e = lo_ext[k->t];
    char want[LO_ELEM_BYTES];
    long wrong = 0;

    nchecks++;
    if (k->coll == LT_BARRIER) {
        if (!wit) return;
        for (int q = 0; q < P; q++) {
            int w = c->wr[q];
            if (!wit_local[w]) continue;
            long seen = __atomic_load_n(&wit[(size_t) c->slot * (size_t) wsize + (size_t) w], __ATOMIC_SEQ_CST);
            if (seen < k->bseq) {
                FAIL("%s: barrier #%ld completed here while rank %d (world %d) had entered only #%ld", k->label,
                     k->bseq, q, w, seen);
                break;
            }
        }
        return;
    }
    if (lo_userop_bad_calls) {
        FAIL("%s: the user op was called with a datatype other than the call's (%ld times)", k->label,
             lo_userop_bad_calls);
        lo_userop_bad_calls = 0;
    }
    switch (k->coll) {
    case LT_BCAST:
        for (long i = 0; i < k->count; i++) {
            memset(want, 0, sizeof(want));
            input_elem(k, k->root, i, want);
            compare_elem(k, i, k->recv + (size_t) i * e, want, &wrong, "buffer");
        }
        break;
    case LT_ALLGATHER:
        for (long i = 0; i < k->total; i++) {
            memset(want, 0, sizeof(want));
            input_elem(k, (int) (i / k->count), i % k->count, want);
            compare_elem(k, i, k->recv + (size_t) i * e, want, &wrong, "receive buffer");
        }
        break;
    case LT_REDUCE:
        if (me != k->root) break;
        /* fall through */
    case LT_ALLREDUCE:
        for (long i = 0; i < k->count; i++) {
            fold_elem(k, P - 1, i, k->count, want);
            compare_elem(k, i, k->recv + (size_t) i * e, want, &wrong, "result");
        }
        break;
    case LT_REDUCE_SCATTER: case LT_REDUCE_SCATTER_BLOCK:
        for (long i = 0; i < k->nresult; i++) {
            fold_elem(k, P - 1, k->first + i, k->total, want);
            compare_elem(k, i, k->recv + (size_t) i * e, want, &wrong, "result");
        }
        break;
    case LT_SCAN: case LT_EXSCAN: {
        int u = k->coll == LT_SCAN ? me : me - 1;
        if (u < 0) break; /* exscan: rank 0's receive buffer is undefined */
        for (long i = 0; i < k->count; i++) {
            fold_elem(k, u, i, k->count, want);
            compare_elem(k, i, k->recv + (size_t) i * e, want, &wrong, "result");
        }
        break;
    }
    default: break;
    }
    if (wrong > 3) FAIL("%s: %ld elements wrong in total", k->label, wrong);
    if (k->recv) {
        long nw = k->nresult;
        if (k->coll == LT_REDUCE && me != k->root) nw = 0;
        if ((k->coll == LT_REDUCE_SCATTER || k->coll == LT_REDUCE_SCATTER_BLOCK) && k->inplace) nw = k->total;
        check_untouched(k, k->recv, k->rpristine, k->rbytes, nw,
                        (k->coll == LT_REDUCE && me != k->root) ? "non-root receive buffer" : "receive buffer");
    }
    if (k->send) check_untouched(k, k->send, k->spristine, k->sbytes, 0, "send buffer");
}

/* One non-blocking call from start to check. */
static int verbose_slow; /* -vv: calls that took more than 0.1 s */
static void run_one(call_t *k)
{
    MPI_Status st;
    double t0 = MPI_Wtime();
    if (call_setup(k)) goto out;
    call_fill(k);
    if (MPI_SUCCESS != call_post_checked(k, 0)) goto out;
    report_rc(MPI_Wait(&k->req, &st), k->label, "MPI_Wait");
    call_verify(k);
    if (verbose_slow && 0 == wrank && MPI_Wtime() - t0 > 0.1) printf("  slow: %.3f s %s\n", MPI_Wtime() - t0, k->label);
out:
    call_free(k);
}

/* ------------------------------------------------------------------------- */
/* 1. the matrix                                                             */

static int build_settings(lt_coll_t c, setting_t *ss, int max)
{
    int n = 0;
    ss[n++] = (setting_t){"auto", -1};
    if (oracle_only) return n;
    for (int a = 0; a < lt_nalgs(LT_NB(c)) && n < max; a++) {
        const char *name = lt_alg_name(LT_NB(c), a);
        int knobs[2] = {-1, -1};
        ss[n] = (setting_t){"", -1};
        snprintf(ss[n++].alg, LT_NAME_LEN, "%s", name);
        if (0 == strcmp(name, "dissemination")) knobs[0] = 1, knobs[1] = 3;
        else if (0 == strcmp(name, "bruck") || 0 == strcmp(name, "knomial")) knobs[0] = 3;
        else if (0 == strcmp(name, "ring") || 0 == strcmp(name, "twotree")) knobs[0] = 256;
        else if (0 == strcmp(name, "hierarchical") && (c == LT_BCAST || c == LT_REDUCE)) knobs[0] = 256;
        for (int j = 0; j < 2 && n < max; j++) {
            if (knobs[j] < 0 || (large_np() && j > 0)) continue;
            ss[n] = (setting_t){"", knobs[j]};
            snprintf(ss[n++].alg, LT_NAME_LEN, "%s", name);
        }
    }
    return n;
}

static void run_matrix(lt_coll_t coll, comm_t *c, const setting_t *s, int sidx)
{
    const int P = c->size;
    /* from 17 processes on, the vector of allgather and reduce_scatter(_block) is about
     * 1000 elements in all (it is P x count) */
    const long c3 = large_np() && (coll == LT_ALLGATHER || coll == LT_REDUCE_SCATTER || coll == LT_REDUCE_SCATTER_BLOCK)
                        ? 1000 / P + 3
                        : 1000;
    const long counts[4] = {0, 1, 7, c3};
    int roots[16], nroots = 0;
    char ctx[64];
    snprintf(ctx, sizeof(ctx), "matrix");
    if (coll == LT_BARRIER) {
        for (int it = 0; it < 3; it++) {
            call_t k = {.coll = coll, .c = c, .s = s, .ctx = ctx};
            run_one(&k);
        }
        return;
    }
    if (!is_rooted(coll)) {
        roots[nroots++] = 0;
    } else if (P <= 9) {
        for (int r = 0; r < P; r++) roots[nroots++] = r;
    } else {
        int cand[5] = {0, 1, P / 2, P - 1, (7 * P) / 10};
        for (int i = 0; i < 5; i++) {
            int dup = 0;
            for (int j = 0; j < nroots; j++) dup |= roots[j] == cand[i];
            if (!dup) roots[nroots++] = cand[i];
        }
    }
    const int ncases = is_reduction(coll) ? NRED : NMOVE;
    for (int ri = 0; ri < nroots; ri++) {
        const int root = roots[ri];
        /* the whole matrix at the first, middle and last root, a subset at the others */
        const int full = !is_rooted(coll) || root == 0 || root == P - 1 || root == P / 2;
        for (int ci = 0; ci < ncases; ci++) {
            const case_t *cs = is_reduction(coll) ? &red_cases[ci] : &move_cases[ci];
            for (int j = 0; j < 4; j++) {
                if (!full && !((cs->t == LO_T_VEC && j == 3) || (cs->t == LO_T_INT && j == 2))) continue;
                if (s->knob >= 0 && counts[j] < 7) continue; /* one segment whatever the knob */
                /* from 17 processes on (oversubscribed): one count per case, in turn, and count 0
                 * with the first case only */
                if (large_np() && !(j == (ci + ri + sidx) % 3 + 1 || (j == 0 && ci == 0))) continue;
                call_t k = {.coll = coll, .c = c, .s = s, .t = cs->t, .o = cs->o, .count = counts[j], .root = root,
                            .ctx = ctx};
                k.inplace = may_inplace(coll) && ((ci + j + ri + sidx) & 1);
                k.pattern = coll == LT_REDUCE_SCATTER ? (ci + j + sidx) % 3 : 0;
                k.salt = 1;
                run_one(&k);
            }
        }
    }
}

/* pipelined counts on one communicator (default knobs) */
static void run_big(lt_coll_t coll, comm_t *c, const setting_t *s, int sidx)
{
    const int P = c->size;
    const long big = large_np() ? 100000 : 200000;
    char ctx[32] = "big";
    call_t k = {.coll = coll, .c = c, .s = s, .t = LO_T_INT, .o = LO_O_SUM, .big = 1, .salt = 7, .ctx = ctx};
    switch (coll) {
    case LT_ALLREDUCE:
        k.count = big;
        k.inplace = sidx & 1;
        run_one(&k);
        if (!large_np() && (sidx & 1)) {
            k.t = LO_T_DOUBLE;
            k.inplace = !k.inplace;
            run_one(&k);
        }
        break;
    case LT_BCAST:
        k.o = LO_O_NONE;
        k.count = big;
        k.root = (sidx * 5 + 1) % P;
        run_one(&k);
        k.t = LO_T_VEC; /* non-contiguous, cut into blocks: packed and unpacked */
        k.count = big / 4 + 1;
        k.root = P - 1;
        run_one(&k);
        break;
    case LT_REDUCE:
        k.count = big;
        k.root = P / 2;
        k.inplace = sidx & 1;
        run_one(&k);
        break;
    case LT_ALLGATHER:
        k.o = LO_O_NONE;
        k.count = big / P + 3;
        k.inplace = sidx & 1;
        run_one(&k);
        k.t = LO_T_VEC;
        k.count = big / (4 * P) + 1;
        k.inplace = !k.inplace;
        run_one(&k);
        break;
    case LT_REDUCE_SCATTER: case LT_REDUCE_SCATTER_BLOCK:
        k.count = big / P + 1;
        k.pattern = sidx % 2;
        k.inplace = sidx & 1;
        run_one(&k);
        break;
    case LT_SCAN: case LT_EXSCAN:
        k.count = big / 2;
        k.inplace = sidx & 1;
        run_one(&k);
        break;
    default: break;
    }
}

static void section_matrix(comm_t *cs, int ncs)
{
    for (int c = 0; c < NB_COLLS; c++) {
        setting_t ss[48];
        int nss = build_settings((lt_coll_t) c, ss, 48);
        double t0 = MPI_Wtime();
        for (int si = 0; si < nss; si++) {
            if (MPI_SUCCESS != apply_setting((lt_coll_t) c, &ss[si])) continue;
            /* from 17 processes on WORLD is left out (the shuffled split holds every rank) */
            for (int i = large_np() ? 1 : 0; i < ncs; i++) {
                /* knob sweeps on the first communicator only */
                if (i > (large_np() ? 1 : 0) && ss[si].knob >= 0) continue;
                run_matrix((lt_coll_t) c, &cs[i], &ss[si], si);
            }
            if (ss[si].knob < 0 && c != LT_BARRIER) {
                run_big((lt_coll_t) c, &cs[0], &ss[si], si);
                /* the ring's parts cut into segments too (the cost model leaves them whole at
                 * these sizes), and twotree's and hierarchical's chains with other chunks */
                const int kk = knob_of(ss[si].alg);
                if (!large_np() && (kk == 2 || kk == 3 || (kk == 4 && (c == LT_BCAST || c == LT_REDUCE)))) {
                    setting_t sk = ss[si];
                    sk.knob = 16384;
                    if (MPI_SUCCESS == apply_setting((lt_coll_t) c, &sk)) run_big((lt_coll_t) c, &cs[0], &sk, si + 1);
                }
            }
        }
        restore_defaults((lt_coll_t) c);
        if (verbose && 0 == wrank) printf("  matrix %s: %d settings, %.2f s\n", icoll(c), nss, MPI_Wtime() - t0);
    }
}

/* Auto over the sizes loom's rules distinguish, on one communicator: each size as a
 * non-blocking call and, where the blocking form cannot use the node segment (more than
 * coll_loom_shm_slot_size bytes, or every size when the job runs with coll_loom_shm 0:
 * Open MPI 4.1 refuses to change that variable after MPI_Init), as a blocking call too;
 * both must be decided alike (the non-blocking form uses the node segment only where the
 * blocking one could: small allreduces of one node), except that an i<coll> rule may send one form to the previous component
 * where the other runs a loom algorithm, and both results are checked.  Where the blocking form ran a loom algorithm,
 * auto's non-blocking calls must have too (checked at the end). */
static long blocking_noshm_served[LT_NUM_COLLS], blocking_noshm_calls[LT_NUM_COLLS];
static int shm_default = -1, shm_slot = -1;

static void auto_sweep(comm_t *c)
{
    static const setting_t autos = {"auto", -1};
    static const long bytes[] = {4, 2048, 8192, 32768, 262144, 1310720, 17 << 20};
    const int nb = (int) (sizeof(bytes) / sizeof(bytes[0]));
    const int P = c->size;
    char ctx[96];
    if (P < 2 || oracle_only) return;
    if (shm_default < 0 || shm_slot < 0) FAIL("cannot read coll_loom_shm / coll_loom_shm_slot_size");
    for (int coll = 0; coll < NB_COLLS; coll++) {
        if (MPI_SUCCESS != apply_setting((lt_coll_t) coll, &autos)) continue;
        for (int bi = 0; bi < nb; bi++) {
            /* 17 MiB only for bcast (the size from which loom's rules pick a loom algorithm
             * on one node), and only on 3 to 5 processes (memory and time) */
            if (bytes[bi] > (1 << 21) && (coll != LT_BCAST || P < 3 || wsize > 5)) continue;
            if (large_np() && (bi == 1 || bi == 3 || bi == 5)) continue; /* up to 16 processes only */
            if (coll == LT_BARRIER && bi > 0) break;
            for (int oi = bi & 1; oi < 2; oi += 2) { /* MPI_INT and MPI_DOUBLE in turn */
                call_t k[2];
                lt_counts_t b, a, bb, ba;
                lt_diff_t d[2];
                /* the blocking form, where it cannot use the node segment (barrier: 0 bytes) */
                const int compare = coll != LT_BARRIER && (0 == shm_default || bytes[bi] > shm_slot);
                d[0].changed = 0;
                for (int form = compare ? 0 : 1; form < 2; form++) {
                    const char *fname = form ? "non-blocking" : "blocking, without the node segment";
                    snprintf(ctx, sizeof(ctx), "auto sweep, %s", fname);
                    k[form] = (call_t){.coll = (lt_coll_t) coll, .c = c, .s = &autos, .t = oi ? LO_T_DOUBLE : LO_T_INT,
                                       .o = is_reduction((lt_coll_t) coll) ? LO_O_SUM : LO_O_NONE, .root = (bi * 3) % P,
                                       .salt = 11000 + (uint64_t) (coll * 64 + bi * 2 + oi), .ctx = ctx, .big = 1};
                    long elems = bytes[bi] / (long) lo_ext[k[form].t];
                    if (elems < 1) elems = 1;
                    if (coll == LT_ALLGATHER || coll == LT_REDUCE_SCATTER || coll == LT_REDUCE_SCATTER_BLOCK)
                        elems = elems / P > 0 ? elems / P : 1; /* bytes: the whole vector */
                    k[form].count = elems;
                    k[form].inplace = may_inplace((lt_coll_t) coll) && (bi & 1);
                    if (call_setup(&k[form])) goto next;
                    call_fill(&k[form]);
                    nb_read((lt_coll_t) coll, &b);
                    lt_read((lt_coll_t) coll, &bb);
                    int rc = call_post(&k[form], form ? 0 : 2);
                    nb_read((lt_coll_t) coll, &a);
                    lt_read((lt_coll_t) coll, &ba);
                    ncalls++;
                    report_rc(rc, k[form].label, form ? "the non-blocking call" : "the blocking call");
                    if (MPI_SUCCESS == rc && form) {
                        report_rc(MPI_Wait(&k[form].req, MPI_STATUS_IGNORE), k[form].label, "MPI_Wait");
                        check_counters(&k[form], &b, &a, &bb, &ba);
                    }
                    if (MPI_SUCCESS == rc) call_verify(&k[form]);
                    if (form) lt_diff(LT_NB((lt_coll_t) coll), &b, &a, &d[1]);
                    else lt_diff((lt_coll_t) coll, &bb, &ba, &d[0]);
                    call_free(&k[form]);
                }
                if (compare) {
                    const char *bran = d[0].which >= 0 ? lt_alg_name((lt_coll_t) coll, d[0].which)
                                                       : d[0].which == LT_WHICH_FALLBACK ? "previous" : "none";
                    const char *nran = d[1].which >= 0 ? lt_alg_name(LT_NB(coll), d[1].which)
                                                       : d[1].which == LT_WHICH_FALLBACK ? "previous" : "none";
                    nchecks++;
                    blocking_noshm_calls[coll]++;
                    if (d[0].which >= 0) blocking_noshm_served[coll]++;
                    /* the built-in i<coll> rules choose between loom and libnbc where the
                     * blocking rules chose between loom and tuned: one form may go to the
                     * previous component where the other runs a loom algorithm, the only
                     * difference allowed */
                    if (d[0].changed == 1 && d[1].changed == 1 &&
                        (d[0].which == LT_WHICH_FALLBACK) != (d[1].which == LT_WHICH_FALLBACK)) {
                        if (verbose && 0 == wrank)
                            printf("  auto %s %ld B %s P=%d: blocking %s, non-blocking %s (an i%s rule)\n",
                                   lt_coll_name((lt_coll_t) coll), bytes[bi], lo_tname[k[1].t], P, bran, nran,
                                   lt_coll_name((lt_coll_t) coll));
                    } else if (d[0].changed != 1 || 0 != strcmp(bran, nran))
                        FAIL("%s: auto decided differently: the blocking call without the node segment ran %s (%s), "
                             "the non-blocking call %s (%s)", k[1].label, bran, d[0].desc, nran, d[1].desc);
                    else if (verbose && 0 == wrank)
                        printf("  auto %s %ld B %s P=%d: %s (both forms)\n", lt_coll_name((lt_coll_t) coll),
                               bytes[bi], lo_tname[k[1].t], P, nran);
                } else if (verbose && 0 == wrank) {
                    printf("  auto %s %ld B %s P=%d: %s (non-blocking only)\n", lt_coll_name((lt_coll_t) coll),
                           bytes[bi], lo_tname[k[1].t], P,
                           d[1].which >= 0 ? lt_alg_name(LT_NB(coll), d[1].which) : d[1].which == LT_WHICH_FALLBACK ? "previous" : "none");
                }
            next:;
            }
        }
        restore_defaults((lt_coll_t) coll);
    }
}

/* ------------------------------------------------------------------------- */
/* 2. many outstanding                                                       */

typedef struct {
    lt_coll_t coll;
    lo_tkind_t t;
    lo_okind_t o;
    long count;
    int root_kind; /* 0: rank 0, 1: the last rank, 2: a rank that changes per round */
    int inplace, pattern, big;
} ospec_t;

static const ospec_t ospecs[] = {
    {LT_ALLREDUCE, LO_T_INT, LO_O_SUM, 1000, 0, 0, 0, 0},
    {LT_BCAST, LO_T_VEC, LO_O_NONE, 333, 2, 0, 0, 0},
    {LT_REDUCE, LO_T_DOUBLE, LO_O_SUM, 500, 1, 1, 0, 0},
    {LT_ALLGATHER, LO_T_INT, LO_O_NONE, 100, 0, 0, 0, 0},
    {LT_REDUCE_SCATTER, LO_T_INT, LO_O_SUM, 50, 0, 0, 1, 0},
    {LT_REDUCE_SCATTER_BLOCK, LO_T_DOUBLE, LO_O_MAX, 40, 0, 1, 0, 0},
    {LT_SCAN, LO_T_INT, LO_O_UNONCOMM, 64, 0, 0, 0, 0},
    {LT_EXSCAN, LO_T_INT, LO_O_SUM, 64, 0, 1, 0, 0},
    {LT_BARRIER, LO_T_INT, LO_O_NONE, 0, 0, 0, 0, 0},
    {LT_ALLREDUCE, LO_T_INT, LO_O_UNONCOMM, 7, 0, 1, 0, 0},
    {LT_BCAST, LO_T_INT, LO_O_NONE, 200000, 0, 0, 0, 1},
    {LT_ALLREDUCE, LO_T_INT, LO_O_SUM, 100000, 0, 0, 0, 1},
    {LT_ALLGATHER, LO_T_VEC, LO_O_NONE, 10, 0, 1, 0, 0},
    {LT_REDUCE, LO_T_VEC, LO_O_UNONCOMM, 33, 2, 0, 0, 0},
    {LT_ALLREDUCE, LO_T_DOUBLE, LO_O_MAX, 1, 0, 0, 0, 0},
    {LT_BARRIER, LO_T_INT, LO_O_NONE, 0, 0, 0, 0, 0},
};
#define NOS ((int) (sizeof(ospecs) / sizeof(ospecs[0])))

/* blocking calls between the starts and the completions, checked */
static void blocking_between(comm_t **cs, int ncs, int round)
{
    for (int i = 0; i < ncs; i++) {
        comm_t *c = cs[i];
        int in[100], out[100], b[50];
        const int root = (round + i) % c->size;
        for (int j = 0; j < 100; j++) in[j] = c->rank * 1000 + j + round;
        int rc = MPI_Allreduce(in, out, 100, MPI_INT, MPI_SUM, c->comm);
        report_rc(rc, c->name, "blocking MPI_Allreduce between non-blocking starts");
        for (int j = 0; j < 100 && MPI_SUCCESS == rc; j++) {
            long want = 1000L * c->size * (c->size - 1) / 2 + (long) c->size * (j + round);
            if (out[j] != (int) want) {
                FAIL("outstanding round %d: blocking MPI_Allreduce on %s between the starts: element %d is %d, "
                     "expected %ld", round, c->name, j, out[j], want);
                break;
            }
        }
        for (int j = 0; j < 50; j++) b[j] = c->rank == root ? j * 7 + round : -1;
        rc = MPI_Bcast(b, 50, MPI_INT, root, c->comm);
        report_rc(rc, c->name, "blocking MPI_Bcast between non-blocking starts");
        for (int j = 0; j < 50 && MPI_SUCCESS == rc; j++) {
            if (b[j] != j * 7 + round) {
                FAIL("outstanding round %d: blocking MPI_Bcast on %s from %d between the starts: element %d is %d, "
                     "expected %d", round, c->name, root, j, b[j], j * 7 + round);
                break;
            }
        }
        nchecks += 2;
    }
}

static void section_outstanding(comm_t **cs, int ncs, int rounds)
{
    const int n = NOS * ncs;
    call_t *k = calloc((size_t) n, sizeof(call_t));
    setting_t *set = calloc((size_t) n, sizeof(setting_t));
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t) n);
    MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t) n);
    int *idx = malloc(sizeof(int) * (size_t) n);
    char ctx[NOS * 3][96];

    for (int round = 0; round < rounds; round++) {
        const int mode = (wrank + round) % 3;
        const char *mname = mode == 0 ? "MPI_Waitany" : mode == 1 ? "MPI_Testsome loop" : "reverse MPI_Wait";
        for (int o = 0; o < NOS; o++) {
            const ospec_t *sp = &ospecs[o];
            for (int ci = 0; ci < ncs; ci++) {
                const int i = o * ncs + ci, P = cs[ci]->size, na = oracle_only ? 0 : lt_nalgs(LT_NB(sp->coll));
                const int a = (round + o + ci) % (na + 1);
                snprintf(set[i].alg, LT_NAME_LEN, "%s", a == na ? "auto" : lt_alg_name(LT_NB(sp->coll), a));
                set[i].knob = -1;
                snprintf(ctx[i], sizeof(ctx[i]), "outstanding round %d, request %d of %d, completed by %s", round, i,
                         n, mname);
                k[i] = (call_t){.coll = sp->coll, .c = cs[ci], .s = &set[i], .t = sp->t, .o = sp->o,
                                .count = sp->big && large_np() ? sp->count / 4 : sp->count, .inplace = sp->inplace,
                                .pattern = sp->pattern, .big = sp->big, .salt = 100 + (uint64_t) (round * NOS + o),
                                .ctx = ctx[i]};
                k[i].root = sp->root_kind == 0 ? 0 : sp->root_kind == 1 ? P - 1 : (round * 3 + 1 + ci) % P;
                reqs[i] = MPI_REQUEST_NULL;
                if (MPI_SUCCESS != apply_setting(sp->coll, &set[i]) || call_setup(&k[i])) continue;
                call_fill(&k[i]);
                if (MPI_SUCCESS == call_post_checked(&k[i], 0)) reqs[i] = k[i].req;
            }
            if (o == NOS / 2) blocking_between(cs, ncs, round);
        }
        for (int c = 0; c < NB_COLLS; c++) restore_defaults((lt_coll_t) c);
        blocking_between(cs, ncs, round + 1000);

        int rc, done = 0;
        if (mode == 0) {
            for (int j = 0; j < n; j++) {
                int which;
                MPI_Status st;
                rc = MPI_Waitany(n, reqs, &which, &st);
                if (MPI_SUCCESS != rc) {
                    report_rc(rc, which >= 0 && which < n ? k[which].label : ctx[0], "MPI_Waitany");
                    break;
                }
                if (MPI_UNDEFINED == which) break;
                done++;
            }
        } else if (mode == 1) {
            long spins = 0;
            while (1) {
                int outc = 0;
                rc = MPI_Testsome(n, reqs, &outc, idx, sts);
                if (MPI_SUCCESS != rc) {
                    report_rc(rc, ctx[0], "MPI_Testsome");
                    break;
                }
                if (MPI_UNDEFINED == outc) break;
                done += outc;
                spins++;
            }
            if (verbose && 0 == wrank) printf("  outstanding round %d: %ld MPI_Testsome calls\n", round, spins);
        } else {
            for (int j = n - 1; j >= 0; j--) {
                MPI_Status st;
                if (MPI_REQUEST_NULL == reqs[j]) continue;
                rc = MPI_Wait(&reqs[j], &st);
                report_rc(rc, k[j].label, "MPI_Wait");
                done++;
            }
        }
        for (int i = 0; i < n; i++) {
            if (MPI_REQUEST_NULL != reqs[i]) {
                FAIL("%s: request still active after %s", k[i].label, mname);
                MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
            }
            if (k[i].posted) call_verify(&k[i]);
            call_free(&k[i]);
        }
    }
    free(k);
    free(set);
    free(reqs);
    free(sts);
    free(idx);
}

/* ------------------------------------------------------------------------- */
/* 3. persistent                                                             */

typedef struct {
    lt_coll_t coll;
    lo_tkind_t t;
    lo_okind_t o;
    long count;
    int root_kind, inplace, pattern;
} pspec_t;

/* one small call per collective, in-place where MPI allows it for some */
static const pspec_t pspecs[LT_NUM_COLLS] = {
    {LT_ALLREDUCE, LO_T_INT, LO_O_SUM, 13, 0, 0, 0},       {LT_BARRIER, LO_T_INT, LO_O_NONE, 0, 0, 0, 0},
    {LT_BCAST, LO_T_VEC, LO_O_NONE, 5, 2, 0, 0},           {LT_REDUCE, LO_T_INT, LO_O_UNONCOMM, 9, 1, 1, 0},
    {LT_ALLGATHER, LO_T_DOUBLE, LO_O_NONE, 3, 0, 1, 0},    {LT_REDUCE_SCATTER, LO_T_INT, LO_O_SUM, 4, 0, 0, 1},
    {LT_REDUCE_SCATTER_BLOCK, LO_T_DOUBLE, LO_O_SUM, 3, 0, 1, 0}, {LT_SCAN, LO_T_INT, LO_O_UNONCOMM, 8, 0, 0, 0},
    {LT_EXSCAN, LO_T_INT, LO_O_SUM, 8, 0, 1, 0}};

static int completion(call_t *k, int it)
{
    MPI_Status st;
    int rc, flag = 0;
    if (it % 2 == 0) return MPI_Wait(&k->req, &st);
    do {
        rc = MPI_Test(&k->req, &flag, &st);
    } while (MPI_SUCCESS == rc && !flag);
    return rc;
}

/* init, `iters` starts with new inputs before each and a check after each, free.  When
 * `after` is given, the algorithm cvar is set to it between the _init and the starts. */
static void persistent_loop(call_t *k, int iters, const setting_t *after)
{
    lt_counts_t b0, b1;
    char ctx[160];
    const char *base = k->ctx;
    long before_fail = lt_nfail;
    if (call_setup(k)) goto out;
    call_fill(k);
    if (MPI_SUCCESS != call_post_checked(k, 1)) goto out;
    if (after) apply_setting(k->coll, after);
    nb_read(k->coll, &b0);
    for (int it = 0; it < iters; it++) {
        snprintf(ctx, sizeof(ctx), "%s, start %d of %d", base, it + 1, iters);
        k->ctx = ctx;
        k->salt = k->salt * 31 + (uint64_t) it + 1; /* new inputs before every start */
        call_label(k);
        call_fill(k);
        int rc = MPI_Start(&k->req);
        ncalls++;
        report_rc(rc, k->label, "MPI_Start");
        if (MPI_SUCCESS != rc) break;
        report_rc(completion(k, it), k->label, it % 2 ? "MPI_Test loop" : "MPI_Wait");
        if (MPI_REQUEST_NULL == k->req) {
            FAIL("%s: the persistent request became MPI_REQUEST_NULL at its completion", k->label);
            goto out;
        }
        call_verify(k);
        if (lt_nfail - before_fail > 10) {
            FAIL("%s: too many failures, the rest of this request's starts skipped", k->label);
            break;
        }
    }
    nb_read(k->coll, &b1);
    if (!oracle_only) {
        lt_diff_t d;
        lt_diff(LT_NB(k->coll), &b0, &b1, &d);
        nchecks++;
        if (d.changed) FAIL("%s: counters moved during the starts of a persistent request (%s); "
                            "they count once per _init", k->label, d.desc);
    }
    {
        int rc = MPI_Request_free(&k->req);
        report_rc(rc, k->label, "MPI_Request_free of the completed persistent request");
        if (MPI_SUCCESS == rc && MPI_REQUEST_NULL != k->req)
            FAIL("%s: MPI_Request_free left the handle non-null", k->label);
    }
out:
    if (after) restore_defaults(k->coll);
    if (MPI_REQUEST_NULL != k->req) MPI_Request_free(&k->req);
    k->ctx = base;
    call_free(k);
}

static void section_persistent(comm_t *cs, int ncs)
{
    const int iters = wsize > 16 ? 200 : 1000;
    static const setting_t autos = {"auto", -1};
    char ctx[128];
    /* (a) each _init form, many starts, auto, on WORLD */
    for (int c = 0; c < NB_COLLS; c++) {
        const pspec_t *p = &pspecs[c];
        comm_t *cm = &cs[0];
        double t0 = MPI_Wtime();
        snprintf(ctx, sizeof(ctx), "persistent");
        call_t k = {.coll = p->coll, .c = cm, .s = &autos, .t = p->t, .o = p->o, .count = p->count,
                    .inplace = p->inplace, .pattern = p->pattern, .salt = 5000 + (uint64_t) c, .ctx = ctx};
        k.root = p->root_kind == 0 ? 0 : p->root_kind == 1 ? cm->size - 1 : cm->size / 2;
        persistent_loop(&k, iters, NULL);
        if (verbose && 0 == wrank)
            printf("  persistent %s x %d: %.2f s\n", icoll(c), iters, MPI_Wtime() - t0);
    }
    double tb = MPI_Wtime();
    /* (b) every algorithm, the cvar set to auto between the _init and the starts; on the
     * shuffled communicator, then the parity split */
    for (int c = 0; c < NB_COLLS && !oracle_only; c++) {
        const pspec_t *p = &pspecs[c];
        for (int a = 0; a < lt_nalgs(LT_NB(c)); a++) {
            setting_t s = {"", -1};
            comm_t *cm = &cs[(a % (ncs - 1)) + 1];
            snprintf(s.alg, sizeof(s.alg), "%s", lt_alg_name(LT_NB(c), a));
            if (MPI_SUCCESS != apply_setting((lt_coll_t) c, &s)) continue;
            snprintf(ctx, sizeof(ctx), "persistent, forced at the _init only");
            call_t k = {.coll = p->coll, .c = cm, .s = &s, .t = p->t, .o = p->o, .count = p->count * 3 + 1,
                        .inplace = !p->inplace && may_inplace(p->coll), .pattern = 2 - p->pattern,
                        .salt = 6000 + (uint64_t) (c * 32 + a), .ctx = ctx};
            k.root = (a + 1) % cm->size;
            persistent_loop(&k, 4, &autos);
        }
    }
    if (verbose && 0 == wrank) printf("  persistent, every algorithm: %.2f s\n", MPI_Wtime() - tb);
    tb = MPI_Wtime();
    /* (c) pipelined counts, persistent: a few starts each, every algorithm of bcast,
     * allreduce and allgather */
    static const lt_coll_t bigc[3] = {LT_BCAST, LT_ALLREDUCE, LT_ALLGATHER};
    for (int b = 0; b < 3; b++) {
        lt_coll_t c = bigc[b];
        const int na = oracle_only ? 0 : lt_nalgs(LT_NB(c));
        for (int a = 0; a <= na; a++) {
            setting_t s = {"auto", -1};
            comm_t *cm = &cs[a % ncs];
            const long big = large_np() ? 25000 : 200000;
            if (a < na) snprintf(s.alg, sizeof(s.alg), "%s", lt_alg_name(LT_NB(c), a));
            if (MPI_SUCCESS != apply_setting(c, &s)) continue;
            snprintf(ctx, sizeof(ctx), "persistent, pipelined count");
            call_t k = {.coll = c, .c = cm, .s = &s, .t = LO_T_INT, .o = LO_O_SUM, .count = big, .big = 1,
                        .salt = 7000 + (uint64_t) (b * 32 + a), .ctx = ctx};
            if (c == LT_BCAST) {
                k.t = (a & 1) ? LO_T_VEC : LO_T_INT;
                k.o = LO_O_NONE;
                k.root = cm->size - 1;
                k.count = (a & 1) ? big / 4 : big;
            } else if (c == LT_ALLGATHER) {
                k.t = (a & 1) ? LO_T_INT : LO_T_VEC;
                k.o = LO_O_NONE;
                k.inplace = a & 1;
                k.count = (a & 1) ? big / cm->size + 1 : big / (4 * cm->size) + 1;
            }
            persistent_loop(&k, 2, NULL);
        }
        restore_defaults(c);
    }
    if (verbose && 0 == wrank) printf("  persistent, pipelined counts: %.2f s\n", MPI_Wtime() - tb);
}

/* ------------------------------------------------------------------------- */
/* 4. MPI_Startall                                                           */

static void section_startall(comm_t **cs, int ncs, int iters)
{
    const int n = NB_COLLS + 1;
    call_t k[LT_NUM_COLLS + 1];
    MPI_Request reqs[LT_NUM_COLLS + 1];
    static const setting_t autos = {"auto", -1};
    char ctx[96];
    int ok = 1;
    snprintf(ctx, sizeof(ctx), "MPI_Startall");
    for (int i = 0; i < n; i++) {
        comm_t *cm = cs[i % ncs];
        if (i < NB_COLLS) {
            const pspec_t *p = &pspecs[i];
            k[i] = (call_t){.coll = p->coll, .c = cm, .s = &autos, .t = p->t, .o = p->o, .count = p->count + 2,
                            .inplace = p->inplace, .pattern = p->pattern, .salt = 8000 + (uint64_t) i, .ctx = ctx};
            k[i].root = p->root_kind == 0 ? 0 : p->root_kind == 1 ? cm->size - 1 : cm->size / 2;
        } else {
            /* a non-commutative reduce_scatter: no algorithm of loom serves it, so the
             * previous component's persistent request joins the set */
            k[i] = (call_t){.coll = LT_REDUCE_SCATTER, .c = cm, .s = &autos, .t = LO_T_INT, .o = LO_O_UNONCOMM,
                            .count = 6, .pattern = 1, .salt = 8100, .ctx = ctx};
        }
        reqs[i] = MPI_REQUEST_NULL;
        if (call_setup(&k[i])) {
            ok = 0;
            continue;
        }
        call_fill(&k[i]);
        if (MPI_SUCCESS != call_post_checked(&k[i], 1)) ok = 0;
        reqs[i] = k[i].req;
    }
    for (int it = 0; it < iters && ok; it++) {
        char c2[96];
        snprintf(c2, sizeof(c2), "MPI_Startall, round %d of %d", it + 1, iters);
        for (int i = 0; i < n; i++) {
            k[i].ctx = c2;
            k[i].salt = k[i].salt * 131 + 1;
            call_label(&k[i]);
            call_fill(&k[i]);
        }
        int rc = MPI_Startall(n, reqs);
        ncalls += n;
        report_rc(rc, c2, "MPI_Startall");
        if (MPI_SUCCESS != rc) break;
        if (it % 2 == 0) {
            rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
            report_rc(rc, c2, "MPI_Waitall");
        } else {
            int flag = 0;
            do {
                rc = MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
            } while (MPI_SUCCESS == rc && !flag);
            report_rc(rc, c2, "MPI_Testall loop");
        }
        for (int i = 0; i < n; i++) call_verify(&k[i]);
    }
    for (int i = 0; i < n; i++) {
        if (MPI_REQUEST_NULL != reqs[i]) {
            int rc = MPI_Request_free(&reqs[i]);
            report_rc(rc, k[i].label, "MPI_Request_free after MPI_Startall");
            if (MPI_SUCCESS == rc && MPI_REQUEST_NULL != reqs[i])
                FAIL("%s: MPI_Request_free left the handle non-null", k[i].label);
        }
        call_free(&k[i]);
    }
}

/* ------------------------------------------------------------------------- */
/* 5. MPI_Cancel and MPI_Request_free of an active request                   */

static void section_errors(comm_t *c)
{
    const int P = c->size, me = c->rank;
    static const setting_t pw = {"pairwise", -1};
    long active_checked[2] = {0, 0}, sum[2];
    char ctx[64];
    if (P < 2 || oracle_only) return;
    /* Open MPI 4.1 raises MPI_Cancel's and MPI_Request_free's errors on MPI_COMM_WORLD */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    apply_setting(LT_ALLREDUCE, &pw);
    for (int persistent = 0; persistent < 2; persistent++) {
        int token = 0, flag = 0;
        MPI_Status st;
        snprintf(ctx, sizeof(ctx), "errors, %s request", persistent ? "persistent" : "non-blocking");
        call_t k = {.coll = LT_ALLREDUCE, .c = c, .s = &pw, .t = LO_T_INT, .o = LO_O_SUM, .count = 1000,
                    .salt = 9000 + (uint64_t) persistent, .ctx = ctx};
        if (call_setup(&k)) continue;
        call_fill(&k);
        /* one rank after the other: rank r posts once r-1 has posted and checked */
        if (me > 0) MPI_Recv(&token, 1, MPI_INT, me - 1, 77, c->oracle, MPI_STATUS_IGNORE);
        if (MPI_SUCCESS != call_post_checked(&k, persistent)) goto next;
        if (persistent) report_rc(MPI_Start(&k.req), k.label, "MPI_Start");
        MPI_Request_get_status(k.req, &flag, &st);
        if (flag && me == 0)
            FAIL("%s: rank 0's allreduce completed before any other rank had started it", k.label);
        if (!flag) {
            MPI_Request saved = k.req;
            int rc = MPI_Cancel(&k.req), cls = 0;
            active_checked[persistent]++;
            nchecks += 2;
            if (MPI_SUCCESS == rc) FAIL("%s: MPI_Cancel of an active collective request returned MPI_SUCCESS", k.label);
            else if (verbose && 0 == me) {
                MPI_Error_class(rc, &cls);
                printf("  %s: MPI_Cancel returned error class %d\n", ctx, cls);
            }
            if (k.req != saved) FAIL("%s: MPI_Cancel changed the request handle", k.label);
            rc = MPI_Request_free(&k.req);
            if (MPI_SUCCESS == rc) {
                /* freed while active: nothing left to wait for here (the peers still finish) */
                FAIL("%s: MPI_Request_free of an active collective request returned MPI_SUCCESS", k.label);
            } else if (k.req != saved) {
                FAIL("%s: MPI_Request_free failed but changed the request handle", k.label);
                k.req = saved;
            }
        }
        if (me < P - 1) MPI_Send(&token, 1, MPI_INT, me + 1, 77, c->oracle);
        if (MPI_REQUEST_NULL != k.req) {
            int cancelled = 0;
            report_rc(MPI_Wait(&k.req, &st), k.label, "MPI_Wait after the refused MPI_Cancel / MPI_Request_free");
            MPI_Test_cancelled(&st, &cancelled);
            if (cancelled) FAIL("%s: the status says cancelled", k.label);
            call_verify(&k);
            if (persistent) {
                int rc = MPI_Request_free(&k.req);
                report_rc(rc, k.label, "MPI_Request_free of the completed persistent request");
            }
        }
    next:
        if (MPI_REQUEST_NULL != k.req) MPI_Request_free(&k.req);
        call_free(&k);
    }
    restore_defaults(LT_ALLREDUCE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Allreduce(active_checked, sum, 2, MPI_LONG, MPI_SUM, c->oracle);
    if (0 == wrank && verbose)
        printf("  errors: %ld ranks checked an active non-blocking request, %ld an active persistent one\n", sum[0],
               sum[1]);
}

/* ------------------------------------------------------------------------- */
/* 6. posted in different orders on different communicators                  */

static void crossed_alarm(int sig)
{
    static const char msg[] = "FAIL [test_nonblocking] crossed: non-blocking collectives posted on fresh "
                               "communicators in different orders (even/odd ranks) did not complete in 30 s: "
                               "a non-blocking call blocked (hang)\n";
    (void) sig;
    (void) !write(2, msg, sizeof(msg) - 1);
    _exit(1);
}

static void section_crossed(void)
{
    MPI_Comm a, b;
    int va = wrank + 1, vb = 2 * wrank + 1, ra = 0, rb = 0, rc;
    MPI_Request r[2];
    if (wsize < 2) return;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(b, MPI_ERRORS_RETURN);
    signal(SIGALRM, crossed_alarm);
    alarm(30);
    /* the first collectives on both communicators, in opposite orders on even and odd ranks */
    if (wrank % 2 == 0) {
        rc = MPI_Iallreduce(&va, &ra, 1, MPI_INT, MPI_SUM, a, &r[0]);
        report_rc(rc, "crossed: MPI_Iallreduce on fresh dup A (even ranks first)", "post");
        rc = MPI_Iallreduce(&vb, &rb, 1, MPI_INT, MPI_SUM, b, &r[1]);
        report_rc(rc, "crossed: MPI_Iallreduce on fresh dup B (even ranks second)", "post");
    } else {
        rc = MPI_Iallreduce(&vb, &rb, 1, MPI_INT, MPI_SUM, b, &r[1]);
        report_rc(rc, "crossed: MPI_Iallreduce on fresh dup B (odd ranks first)", "post");
        rc = MPI_Iallreduce(&va, &ra, 1, MPI_INT, MPI_SUM, a, &r[0]);
        report_rc(rc, "crossed: MPI_Iallreduce on fresh dup A (odd ranks second)", "post");
    }
    report_rc(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), "crossed", "MPI_Waitall");
    /* and once more, communicators now known to loom */
    if (wrank % 2 == 0) {
        MPI_Ibarrier(a, &r[0]);
        MPI_Ibarrier(b, &r[1]);
    } else {
        MPI_Ibarrier(b, &r[1]);
        MPI_Ibarrier(a, &r[0]);
    }
    report_rc(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), "crossed: MPI_Ibarrier", "MPI_Waitall");
    alarm(0);
    signal(SIGALRM, SIG_DFL);
    nchecks += 2;
    ncalls += 4;
    if (ra != wsize * (wsize + 1) / 2)
        FAIL("crossed: MPI_Iallreduce on A gave %d, expected %d", ra, wsize * (wsize + 1) / 2);
    if (rb != wsize * wsize) FAIL("crossed: MPI_Iallreduce on B gave %d, expected %d", rb, wsize * wsize);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
}

/* ------------------------------------------------------------------------- */
/* memory growth                                                             */

/* ------------------------------------------------------------------------- */
/* segment                                                                   */

#define SEG_CALLS 40 /* outstanding at once: more than the segment's 32 small slots per rank */
#define SEG_SMALL 256 /* up to here every rank combines (MCA_COLL_LOOM_SHM_SYM_BYTES) */
#define SEG_BYTES 8192 /* above, index 0 does, up to the slot (coll_loom_shm_slot_size's default) */

typedef struct {
    case_t cs;
    long n; /* 0: an MPI_Ibarrier */
    int inplace;
    uint64_t salt;
    char in[SEG_BYTES], out[SEG_BYTES + GUARD], want[SEG_BYTES];
} seg_call_t;

static void seg_fill(seg_call_t *k, int r, int P)
{
    const size_t e = lo_ext[k->cs.t];
    char acc[LO_ELEM_BYTES], x[LO_ELEM_BYTES];

    memset(k->in, 0x5a, sizeof(k->in));
    memset(k->out, 0x5a, sizeof(k->out));
    for (long i = 0; i < k->n; i++) {
        lo_gen(k->cs.t, k->cs.o, r, i, k->salt, k->in + (size_t) i * e);
        /* x0 o x1 o ... o x(P-1), formed from the right */
        memset(acc, 0x5a, sizeof(acc));
        lo_gen(k->cs.t, k->cs.o, P - 1, i, k->salt, acc);
        for (int u = P - 2; u >= 0; u--) {
            memset(x, 0x5a, sizeof(x));
            lo_gen(k->cs.t, k->cs.o, u, i, k->salt, x);
            lo_apply(k->cs.t, k->cs.o, x, acc, acc);
        }
        memcpy(k->want + (size_t) i * e, acc, e);
    }
    if (k->inplace) memcpy(k->out, k->in, (size_t) k->n * e);
}

static void seg_check(seg_call_t *k, const char *ctx)
{
    const size_t e = lo_ext[k->cs.t];
    if (0 == k->n) return;
    for (long i = 0; i < k->n; i++) {
        nchecks++;
        if (!lo_same(k->cs.t, k->cs.o, k->out + (size_t) i * e, k->want + (size_t) i * e)) {
            char g[96], w[96];
            lo_show(k->cs.t, k->out + (size_t) i * e, g, sizeof(g));
            lo_show(k->cs.t, k->want + (size_t) i * e, w, sizeof(w));
            FAIL("segment, %s: %s %s count %ld%s element %ld: got %s, want %s", ctx, lo_tname[k->cs.t],
                 lo_oname[k->cs.o], k->n, k->inplace ? " in place" : "", i, g, w);
            return;
        }
    }
    for (size_t b = (size_t) k->n * e; b < (size_t) k->n * e + GUARD; b++) {
        nchecks++;
        if (0x5a != (unsigned char) k->out[b]) {
            FAIL("segment, %s: byte %zu after the result changed", ctx, b);
            return;
        }
    }
}

/* Small non-blocking allreduces among the ranks of a node, in a shuffled order: once
 * blocking calls have set the node segment up, loom runs them through it
 * (coll_loom_shm_node_phases grows by one per call), up to 256 B with every rank
 * combining, above with index 0 combining.  SEG_CALLS outstanding, completed
 * by reverse MPI_Wait, MPI_Waitany or an MPI_Testsome loop (by rank and round), a
 * blocking allreduce and bcast through the segment between the starts, every
 * reduction case of the matrix (a non-commutative user op on a vector type too), in
 * place or not; then one persistent request started 300 times. */
static void section_segment(void)
{
    MPI_Comm node;
    int nr, P, r, one = 1, sum, warm = 0;
    unsigned long long s0 = 0, s1 = 0;
    seg_call_t *k = calloc(SEG_CALLS, sizeof(seg_call_t));
    MPI_Request reqs[SEG_CALLS];
    int idx[SEG_CALLS];

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &P);
    MPI_Comm_free(&node);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, (nr * 5 + 3) % P, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &r);
    /* the barriers' witness: every rank counts itself in before it starts barrier j, so
     * once barrier j completes anywhere the count is P */
    MPI_Win win;
    int *entered;
    {
        MPI_Aint wsz;
        int disp;
        MPI_Win_allocate_shared(0 == r ? (MPI_Aint) (6 * SEG_CALLS * sizeof(int)) : 0, sizeof(int), MPI_INFO_NULL,
                                node, &entered, &win);
        MPI_Win_shared_query(win, 0, &wsz, &disp, &entered);
        if (0 == r) memset(entered, 0, 6 * SEG_CALLS * sizeof(int));
        MPI_Barrier(node);
    }

    /* the segment is set up at a blocking call; whether it serves them decides whether the
     * non-blocking calls must go through it too */
    (void) lt_shm_node_phases(&s0);
    for (int i = 0; i < 16; i++) MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, node);
    (void) lt_shm_node_phases(&s1);
    warm = P > 1 && s1 > s0;

    for (int round = 0; round < 6; round++) {
        const int mode = (r + round) % 3;
        const char *mname = mode == 0 ? "reverse MPI_Wait" : mode == 1 ? "MPI_Waitany" : "MPI_Testsome loop";
        char ctx[96];
        int posted = 0, want = 0; /* want: the calls the segment must serve (auto gives the
                                   * barriers of two ranks to libnbc) */

        (void) lt_shm_node_phases(&s0);
        for (int i = 0; i < SEG_CALLS; i++) {
            seg_call_t *c = &k[i];
            c->cs = red_cases[(i + round) % NRED];
            c->n = 1 + (long) ((i * 7 + round) * 97 % ((i % 2 ? SEG_SMALL : SEG_BYTES) / (int) lo_ext[c->cs.t]));
            c->inplace = 0 == (i + round) % 3;
            c->salt = 5000 + (uint64_t) (round * SEG_CALLS + i);
            if (7 == i % 8) {
                /* a barrier among them, which the odd ranks enter late */
                c->n = 0;
                if (r % 2) usleep(200);
                __atomic_fetch_add(&entered[round * SEG_CALLS + i], 1, __ATOMIC_SEQ_CST);
                if (MPI_SUCCESS == MPI_Ibarrier(node, &reqs[i])) {
                    posted++;
                    want += P > 2;
                } else {
                    reqs[i] = MPI_REQUEST_NULL;
                    FAIL("segment: MPI_Ibarrier failed");
                }
                if (round >= 4 && MPI_REQUEST_NULL != reqs[i]) {
                    /* completed at once by MPI_Test, so that one completing too early
                     * finds the late ranks not in yet (the earlier calls complete first) */
                    int done = 0, in;
                    while (!done) MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE);
                    in = __atomic_load_n(&entered[round * SEG_CALLS + i], __ATOMIC_SEQ_CST);
                    nchecks++;
                    if (in != P) FAIL("segment, round %d: MPI_Ibarrier %d completed with %d of %d ranks in", round, i, in, P);
                }
                continue;
            }
            seg_fill(c, r, P);
            if (MPI_SUCCESS == MPI_Iallreduce(c->inplace ? MPI_IN_PLACE : c->in, c->out, (int) c->n, lo_dt[c->cs.t],
                                              lo_op[c->cs.o], node, &reqs[i])) {
                posted++;
                want++;
            } else {
                reqs[i] = MPI_REQUEST_NULL;
                FAIL("segment: MPI_Iallreduce failed");
            }
            if (i == SEG_CALLS / 2) {
                int b = r == 0 ? 77 + round : -1;
                MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, node);
                MPI_Bcast(&b, 1, MPI_INT, 0, node);
                nchecks += 2;
                if (sum != P || b != 77 + round) FAIL("segment: blocking calls between the starts: %d, %d", sum, b);
            }
        }
        /* a barrier that completes: every rank has counted itself in */
#define SEG_WITNESS(j)                                                                                         \
    do {                                                                                                       \
        if (0 == k[j].n) {                                                                                     \
            int in = __atomic_load_n(&entered[round * SEG_CALLS + (j)], __ATOMIC_SEQ_CST);                     \
            nchecks++;                                                                                         \
            if (in != P) FAIL("segment, round %d: MPI_Ibarrier %d completed with %d of %d ranks in", round, j, in, P); \
        }                                                                                                      \
    } while (0)
        if (mode == 0) {
            for (int i = SEG_CALLS - 1; i >= 0; i--) {
                MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
                SEG_WITNESS(i);
            }
        } else if (mode == 1) {
            for (int i = 0; i < SEG_CALLS; i++) {
                int j;
                MPI_Waitany(SEG_CALLS, reqs, &j, MPI_STATUS_IGNORE);
                if (MPI_UNDEFINED != j) SEG_WITNESS(j);
            }
        } else {
            int left = posted, got;
            while (left > 0) {
                MPI_Testsome(SEG_CALLS, reqs, &got, idx, MPI_STATUSES_IGNORE);
                if (MPI_UNDEFINED == got) break;
                for (int g = 0; g < got; g++) SEG_WITNESS(idx[g]);
                left -= got;
            }
        }
#undef SEG_WITNESS
        (void) lt_shm_node_phases(&s1);
        snprintf(ctx, sizeof(ctx), "round %d, %d outstanding, completed by %s", round, SEG_CALLS, mname);
        for (int i = 0; i < SEG_CALLS; i++) seg_check(&k[i], ctx);
        ncalls += posted;
        if (warm && !oracle_only) {
            nchecks++;
            if (s1 - s0 < (unsigned long long) want)
                FAIL("segment, %s: coll_loom_shm_node_phases grew by %llu for %d non-blocking calls through it", ctx,
                     s1 - s0, want);
        }
    }

    /* persistent: the input changes before every start; the request runs point to point
     * on the tag it took at its _init, never through the segment, whose calls follow
     * each other in start order (MPI-4 lets ranks start persistent requests in
     * different orders: test_zeros) */
    {
        seg_call_t *c = &k[0];
        MPI_Request q;
        c->cs = red_cases[2]; /* MPI_INT, the non-commutative user op */
        c->n = 9;
        c->inplace = 0;
        c->salt = 9000;
        seg_fill(c, r, P);
        (void) lt_shm_node_phases(&s0);
        MPI_Allreduce_init(c->in, c->out, (int) c->n, MPI_INT, lo_op[LO_O_UNONCOMM], node, MPI_INFO_NULL, &q);
        for (int it = 0; it < 300; it++) {
            c->salt = 9000 + (uint64_t) it;
            seg_fill(c, r, P);
            MPI_Start(&q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            seg_check(c, "persistent");
        }
        MPI_Request_free(&q);
        (void) lt_shm_node_phases(&s1);
        ncalls += 300;
        if (warm && !oracle_only) {
            nchecks++;
            if (s1 != s0) FAIL("segment, persistent: coll_loom_shm_node_phases grew by %llu for 300 starts", s1 - s0);
        }
    }
    if (!warm && 0 == wrank && verbose) printf("NOTE: segment: the node segment does not serve this node's calls\n");
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    free(k);
}

static long rss_kib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (2 != fscanf(f, "%ld %ld", &pages, &rss)) rss = -1;
    fclose(f);
    return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static long leak_inject; /* --leak-inject B: the test itself keeps B bytes per iteration (self-check) */
static void leak_loop(comm_t *w, comm_t *sh, long n, long first)
{
    const int P = w->size;
    int vbuf[4 * LO_VEC_INTS];
    for (long it = first; it < first + n; it++) {
        MPI_Request r[3];
        if (!oracle_only && 0 == it % 500) {
            /* every 500 iterations other algorithms (auto picks the previous component for
             * these bcasts on one node, so bcast is always forced) */
            const long e = it / 500;
            const int na = lt_nalgs(LT_NB(LT_ALLREDUCE)), nbc = lt_nalgs(LT_NB(LT_BCAST));
            setting_t sa = {"auto", -1}, sb = {"", -1};
            if (e % (na + 1) < na) snprintf(sa.alg, sizeof(sa.alg), "%s", lt_alg_name(LT_NB(LT_ALLREDUCE), e % (na + 1)));
            if (nbc > 0) snprintf(sb.alg, sizeof(sb.alg), "%s", lt_alg_name(LT_NB(LT_BCAST), e % nbc));
            apply_setting(LT_ALLREDUCE, &sa);
            if (nbc > 0) apply_setting(LT_BCAST, &sb);
        }
        int v = w->rank + (int) (it & 1023), s = -1, m[2], mo[2];
        const int root = (int) (it % P);
        for (int j = 0; j < 4 * LO_VEC_INTS; j++) vbuf[j] = w->rank == root ? (int) it + j : -1;
        for (int j = 0; j < 2; j++) m[j] = (int) lo_gen_mat8(lo_hash_mixed(sh->rank, j, (uint64_t) it));
        int rc = MPI_Iallreduce(&v, &s, 1, MPI_INT, MPI_SUM, w->comm, &r[0]);
        rc |= MPI_Ibcast(vbuf, 4, lo_dt[LO_T_VEC], root, w->comm, &r[1]);
        rc |= MPI_Iallreduce(m, mo, 2, MPI_INT, lo_op[LO_O_UNONCOMM], sh->comm, &r[2]);
        rc |= MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
        if (it % 16 == 0) {
            MPI_Request pr;
            rc |= MPI_Bcast_init(vbuf, 4, lo_dt[LO_T_VEC], root, w->comm, MPI_INFO_NULL, &pr);
            rc |= MPI_Start(&pr);
            rc |= MPI_Wait(&pr, MPI_STATUS_IGNORE);
            rc |= MPI_Request_free(&pr);
        }
        ncalls += 3;
        if (leak_inject > 0) {
            char *x = malloc((size_t) leak_inject);
            if (x) memset(x, (int) it, (size_t) leak_inject); /* never freed, on purpose */
        }
        if (MPI_SUCCESS != rc) {
            FAIL("leak loop iteration %ld: an MPI call failed (%d)", it, rc);
            return;
        }
        long want = (long) P * (P - 1) / 2 + (long) P * (it & 1023);
        if (s != (int) want) {
            FAIL("leak loop iteration %ld: MPI_Iallreduce sum %d, expected %ld", it, s, want);
            return;
        }
        for (int j = 0; j < 4; j++) {
            for (int q = 0; q < 4; q++) {
                int x = vbuf[j * LO_VEC_INTS + lo_vec_data[q]], y = (int) it + j * LO_VEC_INTS + lo_vec_data[q];
                if (x != y) {
                    FAIL("leak loop iteration %ld: MPI_Ibcast from %d, element %d int %d is %d, expected %d", it,
                         root, j, lo_vec_data[q], x, y);
                    return;
                }
            }
        }
        for (int j = 0; j < 2; j++) {
            uint32_t acc = lo_gen_mat8(lo_hash_mixed(0, j, (uint64_t) it));
            for (int q = 1; q < sh->size; q++) acc = lo_mul_mat8(acc, lo_gen_mat8(lo_hash_mixed(q, j, (uint64_t) it)));
            if ((uint32_t) mo[j] != acc) {
                FAIL("leak loop iteration %ld: non-commutative MPI_Iallreduce on %s element %d is 0x%08x, expected "
                     "0x%08x", it, sh->name, j, (unsigned) mo[j], (unsigned) acc);
                return;
            }
        }
        nchecks += 3;
    }
}

static void section_leak(comm_t *w, comm_t *sh, long n, long bound_kib)
{
    lt_counts_t b[2], a[2];
    long warm = n / 5 > 500 ? n / 5 : 500;
    leak_loop(w, sh, warm, 0);
    MPI_Barrier(w->oracle);
    long r0 = rss_kib();
    nb_read(LT_ALLREDUCE, &b[0]);
    nb_read(LT_BCAST, &b[1]);
    double t0 = MPI_Wtime();
    leak_loop(w, sh, n, warm);
    double dt = MPI_Wtime() - t0;
    MPI_Barrier(w->oracle);
    long r1 = rss_kib();
    nb_read(LT_ALLREDUCE, &a[0]);
    nb_read(LT_BCAST, &a[1]);
    if (r0 < 0 || r1 < 0) {
        FAIL("leak: cannot read /proc/self/statm");
        return;
    }
    unsigned long long served[2] = {0, 0};
    for (int c = 0; c < 2; c++) {
        lt_coll_t lc = c ? LT_BCAST : LT_ALLREDUCE;
        for (int i = 0; i < lt_nalgs(LT_NB(lc)); i++) served[c] += a[c].alg[i] - b[c].alg[i];
    }
    printf("leak rank %d: %ld iterations (%ld non-blocking calls, %ld persistent) in %.2f s: RSS %ld KiB -> %ld KiB "
           "(%+ld KiB, bound %ld); loom served %llu iallreduce, %llu ibcast\n",
           wrank, n, 3 * n, n / 16, dt, r0, r1, r1 - r0, bound_kib, served[0], served[1]);
    fflush(stdout);
    nchecks++;
    if (r1 - r0 > bound_kib)
        FAIL("leak: resident set grew by %ld KiB over %ld iterations (%ld non-blocking calls) after a warm-up of %ld; "
             "bound %ld KiB", r1 - r0, n, 3 * n, warm, bound_kib);
    restore_defaults(LT_ALLREDUCE);
    restore_defaults(LT_BCAST);
    if (!oracle_only && w->size > 1 && (served[0] < (unsigned long long) (2 * n) || served[1] < (unsigned long long) n))
        FAIL("leak: loom's algorithms served only %llu of the %ld MPI_Iallreduce on WORLD and %s and %llu of the "
             "%ld MPI_Ibcast (+%ld persistent)", served[0], 2 * n, sh->name, served[1], n, n / 16);
}

/* ------------------------------------------------------------------------- */

static int want_section(const char *list, const char *name) { return NULL == list || lt_in_list(list, name); }

int main(int argc, char **argv)
{
    const char *sections = NULL;
    long leak = 0, leak_bound = 512;
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--oracle-only")) oracle_only = 1;
        else if (0 == strcmp(argv[i], "-v")) verbose = 1;
        else if (0 == strcmp(argv[i], "-vv")) verbose = verbose_slow = 1;
        else if (0 == strcmp(argv[i], "--sections") && i + 1 < argc) sections = argv[++i];
        else if (0 == strcmp(argv[i], "--max-report") && i + 1 < argc) lt_max_report = atoi(argv[++i]);
        else if (0 == strcmp(argv[i], "--leak") && i + 1 < argc) leak = atol(argv[++i]);
        else if (0 == strcmp(argv[i], "--leak-bound") && i + 1 < argc) leak_bound = atol(argv[++i]);
        else if (0 == strcmp(argv[i], "--leak-inject") && i + 1 < argc) leak_inject = atol(argv[++i]);
        else {
            if (0 == wrank)
                fprintf(stderr,
                        "usage: %s [--oracle-only] [--sections LIST] [-v] [--max-report N]\n"
                        "       %s --leak N [--leak-bound KIB] [--leak-inject BYTES]\n",
                        argv[0], argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    t0 = MPI_Wtime();
    lo_setup(&oracle_cfg);

    int npv = lt_init();
    if (npv <= 0 && !oracle_only) {
        if (0 == wrank)
            fprintf(stderr, "FAIL test_nonblocking: no coll_loom_* performance variable exists: loom is not loaded "
                            "(check mca_base_component_path / ompi_info | grep loom)\n");
        MPI_Finalize();
        return 2;
    }
    if (!oracle_only) {
        if (nb_found() <= 0) FAIL("no coll_loom_i<coll>_<alg>_calls performance variable: loom has no "
                                     "non-blocking collectives");
        for (int c = 0; c < NB_COLLS; c++) {
            char cvar[96];
            if (lt_nalgs(LT_NB(c)) == 0) FAIL("no coll_loom_%s_<alg>_calls counter", icoll(c));
            if (!lt_has_fallback(LT_NB(c))) FAIL("no coll_loom_%s_fallback_calls counter", icoll(c));
            snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name((lt_coll_t) c));
            if (MPI_SUCCESS != lt_cvar_read_str(cvar, default_alg[c], LT_NAME_LEN)) {
                FAIL("cannot read cvar %s", cvar);
                snprintf(default_alg[c], LT_NAME_LEN, "auto");
            }
            if (verbose && 0 == wrank) {
                printf("%s algorithms:", icoll(c));
                for (int i = 0; i < lt_nalgs(LT_NB(c)); i++) printf(" %s", lt_alg_name(LT_NB(c), i));
                printf("\n");
            }
        }
        if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_shm", &shm_default)) shm_default = -1;
        if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_shm_slot_size", &shm_slot)) shm_slot = -1;
        for (int k = 0; k < NKNOBS; k++)
            if (MPI_SUCCESS != lt_cvar_read_int(knob_names[k], &knob_default[k])) {
                FAIL("cannot read cvar %s", knob_names[k]);
                knob_default[k] = -1;
            }
    } else if (0 == wrank) {
        printf("test_nonblocking: ORACLE-ONLY mode: results are checked, but NOT that loom served the calls\n");
    }

    /* communicators: WORLD, WORLD split with a permuted key (every rank, shuffled order),
     * a parity split with permuted keys, a dup of WORLD */
    comm_t cs[4];
    MPI_Comm shuf, half, dup;
    {
        int *perm = malloc(sizeof(int) * (size_t) wsize);
        lt_shuffle(perm, wsize, 0xC0FFEEull);
        MPI_Comm_split(MPI_COMM_WORLD, 0, perm[wrank], &shuf);
        lt_shuffle(perm, wsize, 0xBEEFull);
        MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, perm[wrank], &half);
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        free(perm);
    }
    comm_init(&cs[0], "world", MPI_COMM_WORLD, 0);
    comm_init(&cs[1], "shuffled", shuf, 1);
    comm_init(&cs[2], "parity-split", half, 1);
    comm_init(&cs[3], "dup", dup, 1);
    witness_setup(cs[0].oracle);

    if (leak > 0) {
        section_leak(&cs[0], &cs[1], leak, leak_bound);
    } else {
        comm_t *ocs[3] = {&cs[0], &cs[3], &cs[2]};
        comm_t *scs[3] = {&cs[0], &cs[1], &cs[2]};
        double ts = MPI_Wtime();
#define TIMED(name, stmt)                                                                          \
    do {                                                                                           \
        if (want_section(sections, name)) {                                                        \
            ts = MPI_Wtime();                                                                      \
            stmt;                                                                                  \
            if (verbose && 0 == wrank) printf("%s: %.2f s\n", name, MPI_Wtime() - ts);             \
        }                                                                                          \
    } while (0)
        TIMED("matrix", section_matrix(cs, 3));
        TIMED("auto", auto_sweep(&cs[1]));
        /* (the forced algorithm rotates over request, communicator and round: every
         * algorithm of every request appears within three rounds) */
        TIMED("outstanding", section_outstanding(ocs, 3, large_np() ? 3 : 4));
        TIMED("persistent", section_persistent(cs, 3));
        TIMED("startall", section_startall(scs, 3, large_np() ? 6 : 20));
        TIMED("errors", section_errors(&cs[1]));
        TIMED("crossed", section_crossed());
        TIMED("segment", section_segment());
#undef TIMED

        /* 4. every forced (collective, algorithm) ran, and auto ran loom's algorithms */
        if (!oracle_only && wsize > 1) {
            for (int c = 0; c < NB_COLLS; c++) {
                for (int a = 0; a < lt_nalgs(LT_NB(c)); a++) {
                    nchecks++;
                    if (forced_calls[c][a] > 0 && 0 == forced_served[c][a])
                        FAIL("%s forced to %s in %ld calls on communicators loom serves: "
                             "coll_loom_%s_%s_calls never grew", icoll(c), lt_alg_name(LT_NB(c), a), forced_calls[c][a],
                             icoll(c), lt_alg_name(LT_NB(c), a));
                }
                /* auto: loom's algorithms must have served some call wherever the blocking form
                 * without the node segment (decided by the same rules) ran one */
                nchecks++;
                if (auto_calls[c] > 0 && 0 == auto_served[c] && blocking_noshm_served[c] > 0)
                    FAIL("%s with auto in %ld calls: the sum of coll_loom_%s_<alg>_calls never grew (%ld went to "
                         "the previous component), though %ld blocking calls without the node segment ran a loom "
                         "algorithm", icoll(c), auto_calls[c], icoll(c), auto_fallback[c], blocking_noshm_served[c]);
                else if (auto_calls[c] > 0 && 0 == auto_served[c] && 0 == wrank)
                    printf("NOTE: %s with auto: all %ld calls went to the previous component (libnbc); loom's "
                           "rules give none of these calls to a loom algorithm without the node segment "
                           "(%ld blocking calls that could not use the segment were compared)\n",
                           icoll(c), auto_calls[c], blocking_noshm_calls[c]);
            }
        }
    }

    /* one line per rank, printed by rank 0, then the total: over a communicator loom does not serve */
    long mine[4] = {lt_nfail, nchecks, ncalls, 0}, *all = NULL;
    if (0 == wrank) all = malloc(sizeof(long) * 4 * (size_t) wsize);
    MPI_Gather(mine, 4, MPI_LONG, all, 4, MPI_LONG, 0, cs[0].oracle);
    if (0 == wrank) {
        long tot[3] = {0, 0, 0};
        const char *mode = oracle_only ? "ORACLE-ONLY (loom not checked)" : leak ? "leak" : "full";
        for (int r = 0; r < wsize; r++) {
            printf("test_nonblocking np=%d rank %d: %ld calls, %ld checks, %ld failures\n", wsize, r, all[4 * r + 2],
                   all[4 * r + 1], all[4 * r]);
            for (int j = 0; j < 3; j++) tot[j] += all[4 * r + j];
        }
        printf("test_nonblocking np=%d mode=%s sections=%s: %ld calls, %ld checks, %ld failures (%.1f s): %s\n", wsize,
               mode, leak ? "leak" : sections ? sections : "all", tot[2], tot[1], tot[0], MPI_Wtime() - t0,
               tot[0] ? "FAIL" : "PASS");
        fflush(stdout);
        free(all);
    }
    long nf = lt_nfail, sum = 0;
    MPI_Allreduce(&nf, &sum, 1, MPI_LONG, MPI_SUM, cs[0].oracle);

    witness_free();
    for (int i = 3; i >= 0; i--) comm_fini(&cs[i]);
    lo_free();
    lt_fini();
    MPI_Finalize();
    return sum ? 1 : 0;
}
