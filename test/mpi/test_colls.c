/*
 * loom: correctness test of MPI_Bcast, MPI_Reduce, MPI_Allgather,
 * MPI_Reduce_scatter, MPI_Reduce_scatter_block, MPI_Scan and MPI_Exscan that proves
 * loom served them.
 *
 * For each selected collective, every algorithm setting (auto, and every algorithm
 * loom exposes through a coll_loom_<coll>_<alg>_calls counter, with several
 * coll_loom_ring_segment_size / coll_loom_twotree_chunk_size values), the
 * communicators WORLD, a parity split with shuffled keys and a dup of WORLD, every
 * root (rooted collectives), the (datatype, op) matrix below, counts 0, 1, one below
 * P, and counts divisible neither by P nor by a segment count, with and without
 * MPI_IN_PLACE (each collective's own rules), each rank:
 *   - fills its input with a deterministic function of (rank in the communicator,
 *     element index), chosen so that exact results do not depend on the grouping;
 *   - computes the expected result itself from every rank's input (reductions:
 *     folded in rank order, so non-commutative operations are checked for order);
 *   - compares exactly (moved data bytewise, floating point reductions by value),
 *     and checks that no byte outside the data moved (datatype gaps, guard bytes,
 *     a non-root's receive buffer, the send buffer);
 *   - reads loom's counters before and after the call: exactly one moved by one,
 *     the forced algorithm's, or, where it must refuse the call (a commutative-only
 *     algorithm with a non-commutative op; hierarchical scan on a communicator whose
 *     nodes are not ranges of ranks, found by the test itself with
 *     MPI_Comm_split_type), another loom algorithm (or the previous component when
 *     loom has no other for that collective).
 * Plus 1M-element calls (closed-form sums) and inexact double sums (within a bound).
 * From 16 processes on the matrix is trimmed to keep CI's runtime down (see large_np).
 *
 * Usage: test_colls [--coll LIST] [--oracle-only | --env-alg NAME] [-v] [--max-report N]
 *   --coll LIST      comma-separated: bcast,reduce,allgather,reduce_scatter,
 *                    reduce_scatter_block,scan,exscan (default: all)
 *   --oracle-only    check results only, never that loom ran (validates the
 *                    oracles against other components: --mca coll ^loom)
 *   --env-alg NAME   the algorithm was forced from outside (--mca / OMPI_MCA_*) for
 *                    the single collective of --coll: check the cvar holds NAME, write
 *                    no cvar, and check that NAME served each call
 * Exit status: 0 when every rank passed, 1 on any failure, 2 when loom is absent
 * (unless --oracle-only).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "loom_test_oracle.h"
#include "loom_test_util.h"

/* ------------------------------------------------------------------------- */
/* collectives, datatypes, operations                                        */

typedef enum { C_BCAST, C_REDUCE, C_ALLGATHER, C_RS, C_RSB, C_SCAN, C_EXSCAN, NC } ckind_t;
static const lt_coll_t c_lt[NC] = {LT_BCAST, LT_REDUCE, LT_ALLGATHER, LT_REDUCE_SCATTER, LT_REDUCE_SCATTER_BLOCK,
                                   LT_SCAN, LT_EXSCAN};
/* algorithms each collective must expose (interface of the component) */
static const char *c_required[NC][3] = {
    {"binomial", "twotree", "hierarchical"}, {"binomial", "twotree", "hierarchical"}, {"ring", "hierarchical", NULL},
    {"ring", NULL, NULL}, {"ring", NULL, NULL}, {"recursive_doubling", "hierarchical", NULL},
    {"recursive_doubling", "hierarchical", NULL}};

/* The strided type (LO_T_VEC) displaced by 9 ints: data ints of element e are
 * 6e + 9 + {0,1,3,4}; the gaps, and the 9 ints before the first element, must stay
 * untouched, and its true lower bound (36 bytes) catches scratch buffers not shifted by
 * it.  The pair type (LO_T_PAIR) has a gap at bytes 4..7.  The values are this test's as
 * they always were: its own numbering of types and ops in the hash key, products placed
 * by the hash, odd multipliers for non-commutative vector inputs. */
static const signed char tkey[LO_NT] = {
    [LO_T_INT] = 0, [LO_T_INT64] = 1, [LO_T_FLOAT] = 2,       [LO_T_DOUBLE] = 3, [LO_T_DCOMPLEX] = -1,
    [LO_T_VEC] = 4, [LO_T_2INT] = -1, [LO_T_DOUBLE_INT] = -1, [LO_T_MAT] = -1,   [LO_T_PAIR] = 5};
static const signed char okey[LO_NO] = {
    [LO_O_NONE] = 0,    [LO_O_SUM] = 1,     [LO_O_PROD] = 2,    [LO_O_MAX] = 3,   [LO_O_MIN] = 4,     [LO_O_BXOR] = 5,
    [LO_O_LAND] = -1,   [LO_O_MAXLOC] = -1, [LO_O_MINLOC] = -1, [LO_O_UCOMM] = 6, [LO_O_UNONCOMM] = 7};
#define USER_TYPES (LO_BIT(LO_T_INT) | LO_BIT(LO_T_VEC) | LO_BIT(LO_T_PAIR))
static const lo_config_t oracle_cfg = {
    .vec_shift = 9, .hash = LO_HASH_SPREAD, .salt_stride = 128, .tkey = tkey, .okey = okey, .nokey = 8,
    .prod_by_index = 0, .dmax53 = 0, .vec_odd = 1,
    /* red_cases' user-op types: anything else reaching the user ops is a bug */
    .ucomm_types = USER_TYPES, .unoncomm_types = USER_TYPES};
/* Bytes after count * extent: the strided type's data overhang and guard bytes. */
#define SLACK 128

typedef struct { lo_tkind_t t; lo_okind_t o; } case_t;
/* Data movement (bcast, allgather): every type; floating point as raw bit patterns. */
static const case_t move_cases[] = {{LO_T_INT, LO_O_NONE},    {LO_T_INT64, LO_O_NONE}, {LO_T_FLOAT, LO_O_NONE},
                                    {LO_T_DOUBLE, LO_O_NONE}, {LO_T_VEC, LO_O_NONE},   {LO_T_PAIR, LO_O_NONE}};
/* Reductions: predefined ops on predefined types, user ops on the derived ones
 * (Open MPI 4.1 rejects predefined ops on derived types before the coll layer). */
static const case_t red_cases[] = {
    {LO_T_INT, LO_O_SUM},     {LO_T_INT, LO_O_PROD},     {LO_T_INT, LO_O_MAX},      {LO_T_INT, LO_O_MIN},
    {LO_T_INT, LO_O_BXOR},    {LO_T_INT, LO_O_UCOMM},    {LO_T_INT, LO_O_UNONCOMM}, {LO_T_INT64, LO_O_SUM},
    {LO_T_INT64, LO_O_PROD},  {LO_T_INT64, LO_O_MAX},    {LO_T_INT64, LO_O_MIN},    {LO_T_INT64, LO_O_BXOR},
    {LO_T_FLOAT, LO_O_SUM},   {LO_T_FLOAT, LO_O_PROD},   {LO_T_FLOAT, LO_O_MAX},    {LO_T_FLOAT, LO_O_MIN},
    {LO_T_DOUBLE, LO_O_SUM},  {LO_T_DOUBLE, LO_O_PROD},  {LO_T_DOUBLE, LO_O_MAX},   {LO_T_DOUBLE, LO_O_MIN},
    {LO_T_VEC, LO_O_UCOMM},   {LO_T_VEC, LO_O_UNONCOMM}, {LO_T_PAIR, LO_O_UCOMM},   {LO_T_PAIR, LO_O_UNONCOMM}};
#define NMOVE ((int) (sizeof(move_cases) / sizeof(move_cases[0])))
#define NRED ((int) (sizeof(red_cases) / sizeof(red_cases[0])))

static int is_prefix(ckind_t c) { return c == C_SCAN || c == C_EXSCAN; }
static int is_reduction(ckind_t c) { return c == C_REDUCE || c == C_RS || c == C_RSB || is_prefix(c); }
static int is_rooted(ckind_t c) { return c == C_BCAST || c == C_REDUCE; }
static int op_commutative(lo_okind_t o) { return o != LO_O_UNONCOMM; }
/* Algorithms that only serve commutative operations (interface of the component). */
static int alg_commutative_only(const char *alg)
{
    /* hierarchical serves non-commutative bcast (no op) but not reduce */
    return 0 == strcmp(alg, "ring") || 0 == strcmp(alg, "twotree") || 0 == strcmp(alg, "hierarchical") ||
           0 == strcmp(alg, "torus") || 0 == strcmp(alg, "circulant") || 0 == strcmp(alg, "swing") ||
           0 == strcmp(alg, "knomial"); /* its reduce_scatter: digits from the highest */
}
/* Knobs that change the schedule of collective c under algorithm alg. */
static const char *alg_knob(ckind_t c, const char *alg)
{
    if (c == C_ALLGATHER || is_prefix(c)) {
        if (0 == strcmp(alg, "hierarchical")) return NULL; /* unsegmented there */
    }
    if (0 == strcmp(alg, "ring")) return "coll_loom_ring_segment_size";
    if (0 == strcmp(alg, "twotree")) return "coll_loom_twotree_chunk_size";
    if (0 == strcmp(alg, "circulant")) return "coll_loom_circulant_block_size";
    if (0 == strcmp(alg, "hierarchical")) return "coll_loom_hierarchical_segment_size";
    if (0 == strcmp(alg, "knomial")) return "coll_loom_knomial_radix";
    return NULL;
}

/* ------------------------------------------------------------------------- */
/* state                                                                     */

static int wrank, wsize;
static long nchecks = 0, ncalls = 0;
static int verbose = 0, oracle_only = 0;
static int env_forced = 0; /* --env-alg: the settings come from outside, write no cvar */

#define FAIL(...) lt_fail(wrank, __VA_ARGS__)

typedef struct {
    const char *name;
    MPI_Comm comm;
    MPI_Comm oracle; /* same group, loom excluded: for the test's own collectives */
    int rank, size;
    int own;
    int consecutive; /* every node's ranks of this communicator form one range */
    void *exp[NRED]; /* expected reductions of SMALL_MAX elements, per red_cases entry */
} comm_t;

typedef struct {
    char alg[LT_NAME_LEN]; /* "auto" or an algorithm name */
    int knob;              /* the algorithm's knob value, -1: its default */
} setting_t;

/* From 16 processes on (oversubscribed in CI) the matrix is trimmed: no dup
 * communicator, two knob values per algorithm, fewer counts and full roots. */
static int large_np(void) { return wsize >= 16; }

static char default_alg[NC][LT_NAME_LEN];
static int default_seg = -1, default_chunk = -1, default_hseg = -1, default_block = -1, default_radix = -1;

#define SMALL_MAX 1021 /* prime: divisible by no P and no segment count */
/* ~1M elements; a quarter of that from 16 processes on, which oversubscribe CI's cores */
#define BIG_COUNT (wsize >= 16 ? (1L << 18) : (1L << 20))

static void describe_setting(const setting_t *s, char *buf, size_t len)
{
    if (s->knob >= 0) snprintf(buf, len, "%.*s(knob=%d)", LT_NAME_LEN - 1, s->alg, s->knob % 1000000);
    else snprintf(buf, len, "%.*s", LT_NAME_LEN - 1, s->alg);
}

/* Writes the algorithm cvar and both knobs (the setting's, or the defaults). */
static int apply_setting(ckind_t c, const setting_t *s)
{
    char cvar[128];
    int rc;
    if (env_forced) return MPI_SUCCESS;
    snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(c_lt[c]));
    rc = lt_cvar_write_str(cvar, s->alg);
    if (MPI_SUCCESS != rc) {
        if (!oracle_only) FAIL("cannot set %s=%s through MPI_T: %s", cvar, s->alg, lt_errstr(rc));
        return rc;
    }
    const char *knob = alg_knob(c, s->alg);
    const char *kn[5] = {"coll_loom_ring_segment_size", "coll_loom_twotree_chunk_size",
                         "coll_loom_hierarchical_segment_size", "coll_loom_circulant_block_size",
                         "coll_loom_knomial_radix"};
    const int kd[5] = {default_seg, default_chunk, default_hseg, default_block, default_radix};
    for (int k = 0; k < 5; k++) {
        int v = (knob && 0 == strcmp(knob, kn[k]) && s->knob >= 0) ? s->knob : kd[k];
        if (v < 0) continue; /* not readable at startup: reported there */
        rc = lt_cvar_write_int(kn[k], v);
        if (MPI_SUCCESS != rc) {
            if (!oracle_only) FAIL("cannot set %s=%d through MPI_T: %s", kn[k], v, lt_errstr(rc));
            return rc;
        }
    }
    return MPI_SUCCESS;
}

static void restore_defaults(ckind_t c)
{
    char cvar[128];
    if (env_forced) return;
    snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(c_lt[c]));
    lt_cvar_write_str(cvar, default_alg[c]);
    if (default_seg >= 0) lt_cvar_write_int("coll_loom_ring_segment_size", default_seg);
    if (default_chunk >= 0) lt_cvar_write_int("coll_loom_twotree_chunk_size", default_chunk);
    if (default_hseg >= 0) lt_cvar_write_int("coll_loom_hierarchical_segment_size", default_hseg);
    if (default_block >= 0) lt_cvar_write_int("coll_loom_circulant_block_size", default_block);
    if (default_radix >= 0) lt_cvar_write_int("coll_loom_knomial_radix", default_radix);
}

/* ------------------------------------------------------------------------- */
/* one call                                                                  */

typedef struct {
    ckind_t coll;
    const comm_t *c;
    const setting_t *s;
    lo_tkind_t t;
    lo_okind_t o;
    long count;    /* bcast/reduce: count; allgather: per rank; reduce_scatter(_block): per block */
    int pattern;   /* reduce_scatter: recvcounts pattern (see rs_counts) */
    int root;
    int inplace;
    int big;       /* closed-form values (1M-element calls) */
    int ci;        /* red_cases index of the expected values, or -1 */
} call_t;

/* scan: the ranks 0..upto(k) are combined at this rank (exscan: 0..rank-1) */
static int upto(const call_t *k)
{
    if (k->coll == C_SCAN) return k->c->rank;
    if (k->coll == C_EXSCAN) return k->c->rank - 1;
    return k->c->size - 1;
}

/* recvcounts of reduce_scatter: 0 uniform, 1 uneven with zeros, 2 everything to
 * the last rank.  Returns the total. */
static long rs_counts(const call_t *k, int *rc)
{
    int P = k->c->size;
    long tot = 0;
    for (int i = 0; i < P; i++) {
        if (k->coll == C_RSB || k->pattern == 0) rc[i] = (int) k->count;
        else if (k->pattern == 1) rc[i] = (i % 3 == 1) ? 0 : (int) k->count + (i % 4);
        else rc[i] = (i == P - 1) ? (int) k->count * P : 0;
        tot += rc[i];
    }
    return tot;
}

/* Closed-form inputs, so a 1M-element expected sum costs O(count):
 * x(r, i) = a(i) + b(r) + c(i) r, sum over P ranks = P a(i) + sum_r b(r) + c(i) P(P-1)/2. */
static inline long big_a(long i) { return (long) ((((uint64_t) i * 2654435761u) >> 7) % 1001) - 500; }
static inline long big_b(int r) { return (long) ((r * r * 7) % 23); }
static inline long big_c(long i) { return (i % 5) - 2; }

/* Element i of rank r's input. */
static void input_elem(const call_t *k, int r, long i, void *e)
{
    if (k->big && k->o == LO_O_SUM) {
        long x = big_a(i) + big_b(r) + big_c(i) * r;
        if (k->t == LO_T_INT) *(int32_t *) e = (int32_t) x;
        else *(double *) e = (double) x + 0.5;
    } else {
        lo_gen(k->t, k->o, r, i, 0, e);
    }
}

/* Element i of the reduced vector (ranks 0..upto(k), in rank order). */
static void reduced_elem(const call_t *k, long i, void *e)
{
    if (k->big) {
        long P = upto(k) + 1, sb = 0;
        for (int r = 0; r < P; r++) sb += big_b(r);
        long x = P * big_a(i) + sb + big_c(i) * P * (P - 1) / 2;
        if (k->t == LO_T_INT) *(int32_t *) e = (int32_t) x;
        else *(double *) e = (double) x + 0.5 * (double) P;
    } else if (upto(k) < k->c->size - 1) {
        char tmp[SLACK];
        lo_gen(k->t, k->o, 0, i, 0, e);
        for (int r = 1; r <= upto(k); r++) {
            lo_gen(k->t, k->o, r, i, 0, tmp);
            lo_apply(k->t, k->o, e, tmp, e);
        }
    } else {
        /* the strided type's data reaches past its extent; SLACK covers it */
        memcpy(e, (const char *) k->c->exp[k->ci] + (size_t) i * lo_ext[k->t], SLACK / 2);
    }
}

static void call_label(const call_t *k, char *buf, size_t len)
{
    char sd[LT_NAME_LEN + 32], extra[64] = "";
    describe_setting(k->s, sd, sizeof(sd));
    if (is_rooted(k->coll)) snprintf(extra, sizeof(extra), " root=%d", k->root);
    if (k->coll == C_RS) snprintf(extra, sizeof(extra), " recvcounts=%s",
                                  k->pattern == 0 ? "uniform" : k->pattern == 1 ? "uneven+zeros" : "all-to-last");
    snprintf(buf, len, "%s comm=%s(P=%d,rank=%d) type=%s op=%s count=%ld%s %s alg=%s", lt_coll_name(c_lt[k->coll]),
             k->c->name, k->c->size, k->c->rank, lo_tname[k->t], lo_oname[k->o], k->count, extra,
             k->inplace ? "IN_PLACE" : "sendbuf", sd);
}

/* Must algorithm alg refuse this call (the component's declared restrictions)? */
static int refuses(const call_t *k, const char *alg)
{
    if (0 == strcmp(alg, "torus") && !lt_torus_configured()) return 1; /* no torus map */
    if (is_prefix(k->coll)) return 0 == strcmp(alg, "hierarchical") && !k->c->consecutive;
    /* its reduce and reduce_scatter halve by the highest bit first: not rank order */
    if (0 == strcmp(alg, "halving_doubling"))
        return (k->coll == C_RS || k->coll == C_RSB || k->coll == C_REDUCE) && !op_commutative(k->o);
    return is_reduction(k->coll) && !op_commutative(k->o) && alg_commutative_only(alg);
}

/* Checks which counter moved for one call. */
static void check_counters(const call_t *k, const lt_counts_t *before, const lt_counts_t *after, long total,
                           const char *label)
{
    lt_coll_t lc = c_lt[k->coll];
    lt_diff_t d;
    if (oracle_only) return;
    lt_diff(lc, before, after, &d);
    nchecks++;
    /* Nothing to move: loom may count the call or not (allreduce does not). */
    if ((0 == total || 1 == k->c->size) && 0 == d.changed) return;
    if (d.changed != 1 || d.delta != 1) {
        FAIL("%s: expected exactly one loom %s counter +1, got: %s", label, lt_coll_name(lc), d.desc);
        return;
    }
    if (0 == strcmp(k->s->alg, "auto")) return; /* any algorithm, or the previous component */
    /* swing's torus form cuts every part in 2 D pieces: a count they do not divide goes
     * to the previous component */
    if (k->coll == C_ALLGATHER && 0 == strcmp(k->s->alg, "swing") && lt_torus_configured()) return;
    const char *forced = k->s->alg;
    const char *ran = d.which == LT_WHICH_FALLBACK ? "the previous component" : lt_alg_name(lc, d.which);
    if (refuses(k, forced)) {
        /* refused: another loom algorithm that can serve the call, or the previous
         * component when loom has none for this collective */
        int other = 0;
        for (int a = 0; a < lt_nalgs(lc); a++) other |= !refuses(k, lt_alg_name(lc, a));
        if (d.which == LT_WHICH_FALLBACK ? other : refuses(k, ran))
            FAIL("%s: forced %s cannot serve this call (%s); it must be replaced by %s, but %s ran", label, forced,
                 is_prefix(k->coll) ? "nodes not ranges of ranks" : "non-commutative op",
                 other ? "a loom algorithm that can" : "the previous component", ran);
        return;
    }
    if (d.which == LT_WHICH_FALLBACK || 0 != strcmp(ran, forced))
        FAIL("%s: forced %s must serve this call, but %s ran (%s)", label, forced, ran, d.desc);
}

static void report_rc(int rc, const char *label)
{
    if (MPI_SUCCESS != rc) {
        char es[MPI_MAX_ERROR_STRING];
        int el;
        MPI_Error_string(rc, es, &el);
        FAIL("%s: the call returned %d (%s)", label, rc, es);
    }
}

/* Compares n elements of got with the expected ones (exp_at writes element i). */
typedef void (*exp_fn_t)(const call_t *k, long i, void *e, void *ctx);

static void compare(const call_t *k, const char *got, long n, exp_fn_t fn, void *ctx, const char *what,
                    const char *label)
{
    char want[SLACK], sw[96], sg[96];
    long wrong = 0;
    size_t e = lo_ext[k->t];
    nchecks++;
    for (long i = 0; i < n; i++) {
        memset(want, 0, lo_span[k->t]);
        fn(k, i, want, ctx);
        if (!lo_same(k->t, k->o, want, got + (size_t) i * e)) {
            if (wrong < 3) {
                lo_show(k->t, want, sw, sizeof(sw));
                lo_show(k->t, got + (size_t) i * e, sg, sizeof(sg));
                FAIL("%s: %s element %ld is %s, expected %s", label, what, i, sg, sw);
            }
            wrong++;
        }
    }
    if (wrong > 3) FAIL("%s: %ld %s elements wrong in total", label, wrong, what);
}

/* Only the data bytes of the first nwrite elements may differ from pristine. */
static void check_untouched(const call_t *k, const char *buf, const char *pristine, size_t nbytes, long nwrite,
                            const char *what, const char *label)
{
    char *mask;
    nchecks++;
    if (lo_gapless(k->t)) {
        /* no gaps: everything past the data must be as it was */
        size_t from = (size_t) nwrite * lo_ext[k->t];
        if (from < nbytes && 0 != memcmp(buf + from, pristine + from, nbytes - from)) {
            size_t b = from;
            while (buf[b] == pristine[b]) b++;
            FAIL("%s: byte %zu of the %s was overwritten (past the data)", label, b, what);
        }
        return;
    }
    mask = calloc(1, nbytes);
    for (long i = 0; i < nwrite; i++) lo_mark_data(k->t, mask + (size_t) i * lo_ext[k->t]);
    for (size_t b = 0; b < nbytes; b++) {
        if (!mask[b] && buf[b] != pristine[b]) {
            FAIL("%s: byte %zu of the %s was overwritten (%s)", label, b, what,
                 b >= (size_t) nwrite * lo_ext[k->t] ? "past the data" : "a gap of the datatype");
            break;
        }
    }
    free(mask);
}

/* expected-value callbacks */
static void exp_root_data(const call_t *k, long i, void *e, void *ctx) { (void) ctx; input_elem(k, k->root, i, e); }
static void exp_reduced_at(const call_t *k, long i, void *e, void *ctx)
{
    reduced_elem(k, *(const long *) ctx + i, e);
}
static void exp_gathered(const call_t *k, long i, void *e, void *ctx)
{
    (void) ctx;
    input_elem(k, (int) (i / k->count), i % k->count, e);
}

/* Allocates n elements + SLACK, filled with byte `fill`. */
static char *buf_alloc(const call_t *k, long n, int fill, size_t *nbytes)
{
    *nbytes = (size_t) n * lo_ext[k->t] + SLACK;
    char *b = malloc(*nbytes);
    if (b) memset(b, fill, *nbytes);
    return b;
}

static void fill_input(const call_t *k, char *buf, int r, long first, long n)
{
    for (long i = 0; i < n; i++) input_elem(k, r, first + i, buf + (size_t) i * lo_ext[k->t]);
}

static void run_call(const call_t *k)
{
    const comm_t *c = k->c;
    lt_coll_t lc = c_lt[k->coll];
    MPI_Datatype dt = lo_dt[k->t];
    MPI_Op op = lo_op[k->o];
    int P = c->size, me = c->rank, rc = MPI_SUCCESS;
    int *rcounts = malloc(sizeof(int) * (size_t) P);
    char label[512];
    lt_counts_t before, after;
    long total = 0, nsend = 0, nrecv = 0, nresult = 0, first = 0; /* in elements */
    size_t sbytes = 0, rbytes = 0;
    char *send = NULL, *recv = NULL, *spristine = NULL, *rpristine = NULL;

    call_label(k, label, sizeof(label));
    /* the sizes of both buffers, in elements */
    switch (k->coll) {
    case C_BCAST: total = nrecv = nresult = k->count; break;
    case C_REDUCE:
        total = nsend = k->count;
        nrecv = (me == k->root || !k->inplace) ? k->count : 0; /* non-root, IN_PLACE variant: recvbuf NULL */
        nresult = me == k->root ? k->count : 0;
        if (k->inplace && me == k->root) nsend = 0;
        break;
    case C_ALLGATHER:
        total = k->count * P;
        nsend = k->inplace ? 0 : k->count;
        nrecv = nresult = total;
        break;
    case C_SCAN: case C_EXSCAN:
        total = nrecv = nresult = k->count;
        nsend = k->inplace ? 0 : k->count;
        break;
    case C_RS: case C_RSB:
        total = rs_counts(k, rcounts);
        for (int i = 0; i < me; i++) first += rcounts[i];
        nresult = rcounts[me];
        nsend = k->inplace ? 0 : total;
        nrecv = k->inplace ? total : nresult;
        break;
    default: break;
    }
    int need_send = k->coll != C_BCAST && !(k->inplace && (k->coll != C_REDUCE || me == k->root));
    int need_recv = !(k->coll == C_REDUCE && k->inplace && me != k->root);
    if (need_send) send = buf_alloc(k, nsend, 0x5A, &sbytes);
    if (need_recv) recv = buf_alloc(k, nrecv, 0xA5, &rbytes);
    if ((need_send && !send) || (need_recv && !recv)) {
        FAIL("%s: out of memory in the test", label);
        goto out;
    }
    /* inputs: where each collective takes them from */
    switch (k->coll) {
    case C_BCAST:
        if (me == k->root) fill_input(k, recv, me, 0, k->count);
        break;
    case C_REDUCE: fill_input(k, (k->inplace && me == k->root) ? recv : send, me, 0, k->count); break;
    case C_ALLGATHER:
        if (k->inplace) fill_input(k, recv + (size_t) me * (size_t) k->count * lo_ext[k->t], me, 0, k->count);
        else fill_input(k, send, me, 0, k->count);
        break;
    default: fill_input(k, k->inplace ? recv : send, me, 0, total); break;
    }
    if (send) {
        spristine = malloc(sbytes);
        memcpy(spristine, send, sbytes);
    }
    if (recv) {
        rpristine = malloc(rbytes);
        memcpy(rpristine, recv, rbytes);
    }

    long bad_before = lo_userop_bad_calls;
    void *sb = k->inplace ? MPI_IN_PLACE : send;
    int cnt = (int) k->count;
    if (!oracle_only) lt_read(lc, &before);
    switch (k->coll) {
    case C_BCAST: rc = MPI_Bcast(recv, cnt, dt, k->root, c->comm); break;
    case C_REDUCE: rc = MPI_Reduce(me == k->root ? sb : send, recv, cnt, dt, op, k->root, c->comm); break;
    case C_ALLGATHER: rc = MPI_Allgather(sb, cnt, dt, recv, cnt, dt, c->comm); break;
    case C_RS: rc = MPI_Reduce_scatter(sb, recv, rcounts, dt, op, c->comm); break;
    case C_RSB: rc = MPI_Reduce_scatter_block(sb, recv, cnt, dt, op, c->comm); break;
    case C_SCAN: rc = MPI_Scan(sb, recv, cnt, dt, op, c->comm); break;
    case C_EXSCAN: rc = MPI_Exscan(sb, recv, cnt, dt, op, c->comm); break;
    default: break;
    }
    if (!oracle_only) lt_read(lc, &after);
    ncalls++;
    report_rc(rc, label);
    if (lo_userop_bad_calls != bad_before)
        FAIL("%s: the user op was called with a datatype other than the call's", label);
    check_counters(k, &before, &after, total, label);

    /* the result */
    switch (k->coll) {
    case C_BCAST: compare(k, recv, k->count, exp_root_data, NULL, "buffer", label); break;
    case C_REDUCE:
        if (me == k->root) compare(k, recv, k->count, exp_reduced_at, &first, "result", label);
        break;
    case C_ALLGATHER: compare(k, recv, total, exp_gathered, NULL, "receive buffer", label); break;
    case C_EXSCAN:
        if (me > 0) compare(k, recv, nresult, exp_reduced_at, &first, "result", label);
        break; /* rank 0's receive buffer is undefined */
    default: compare(k, recv, nresult, exp_reduced_at, &first, "result", label); break;
    }
    /* nothing else may change: a non-root's receive buffer, datatype gaps, guard
     * bytes; with IN_PLACE reduce_scatter the whole input may serve as scratch */
    if (recv) {
        long nw = nresult;
        if (k->coll == C_REDUCE && me != k->root) nw = 0;
        if ((k->coll == C_RS || k->coll == C_RSB) && k->inplace) nw = total;
        check_untouched(k, recv, rpristine, rbytes, nw,
                        (k->coll == C_REDUCE && me != k->root) ? "non-root receive buffer" : "receive buffer", label);
    }
    if (send) check_untouched(k, send, spristine, sbytes, 0, "send buffer", label);
out:
    free(send);
    free(recv);
    free(spristine);
    free(rpristine);
    free(rcounts);
}

/* ------------------------------------------------------------------------- */
/* inexact sums: within a bound of sum |x| (no cross-rank identity is promised) */

static double inexact_val(int r, long i)
{
    uint64_t h = lo_hash_spread(r, i, 999);
    return ((double) (h % 1000003) / 7.0 + 1.0 / 3.0) * pow(10.0, (double) ((int) ((h >> 24) % 9) - 4)) *
           ((h >> 40) & 1 ? -1.0 : 1.0);
}

static void inexact_sum(ckind_t coll, const comm_t *c, const setting_t *s)
{
    const int n = 257;
    int P = c->size, root = P - 1, rc = MPI_SUCCESS;
    double *in = malloc(sizeof(double) * (size_t) n * (size_t) P), out[257];
    char label[256], sd[LT_NAME_LEN + 32];
    lt_counts_t b, a;
    lt_diff_t d;
    long first = coll == C_RSB ? (long) c->rank * n : 0;

    describe_setting(s, sd, sizeof(sd));
    snprintf(label, sizeof(label), "inexact %s comm=%s(P=%d,rank=%d) double SUM count=%d alg=%s",
             lt_coll_name(c_lt[coll]), c->name, P, c->rank, n, sd);
    for (long i = 0; i < (long) n * (coll == C_RSB ? P : 1); i++) in[i] = inexact_val(c->rank, i);
    if (!oracle_only) lt_read(c_lt[coll], &b);
    if (coll == C_REDUCE) rc = MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, root, c->comm);
    else rc = MPI_Reduce_scatter_block(in, out, n, MPI_DOUBLE, MPI_SUM, c->comm);
    if (!oracle_only) lt_read(c_lt[coll], &a);
    ncalls++;
    report_rc(rc, label);
    if (!oracle_only) {
        lt_diff(c_lt[coll], &b, &a, &d);
        nchecks++;
        /* forced torus without a torus map: another algorithm serves it */
        const int any = 0 == strcmp(s->alg, "auto") || (0 == strcmp(s->alg, "torus") && !lt_torus_configured());
        if (P > 1 && (d.changed != 1 || d.delta != 1 ||
                      (!any && (d.which < 0 || 0 != strcmp(lt_alg_name(c_lt[coll], d.which), s->alg)))))
            FAIL("%s: expected %s to serve (one counter +1), got %s", label, s->alg, d.desc);
    }
    if (coll == C_REDUCE && c->rank != root) goto out;
    nchecks++;
    for (int i = 0; i < n; i++) {
        double ref = 0, sa = 0;
        for (int r = 0; r < P; r++) {
            double x = inexact_val(r, first + i);
            ref += x;
            sa += fabs(x);
        }
        if (!(fabs(out[i] - ref) <= 1e-12 * sa)) {
            FAIL("%s: element %d = %.17g, expected %.17g (within 1e-12 of sum|x| = %g)", label, i, out[i], ref, sa);
            break;
        }
    }
out:
    free(in);
}

/* ------------------------------------------------------------------------- */
/* the matrix                                                                */

/* Are the ranks of each node (host name) one range of comm's ranks?  Asked over a
 * communicator loom does not serve, so the test's knowledge does not depend on it. */
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

/* Calls whose type signature is empty on every rank, though the counts differ: count
 * 0 of MPI_INT on even ranks, count 3 of a type of size 0 on odd ranks (legal: the
 * signatures match).  Every rank must treat them alike.  Between them, bcasts of 512 B
 * (through the node segment at any P and node count) from every root and small allreduces must stay
 * exact; before loom tested the size and not only the count, a rank of the second kind
 * took the empty bcast to the segment and the others did not: a hang.  (The MPI layer
 * refuses reductions on the empty type, so only bcast and allgather reach loom.) */
#define EMPTY_ROUNDS 40
static void empty_signatures(void)
{
    MPI_Datatype empty;
    const int odd = wrank & 1, cnt = odd ? 3 : 0;
    int dummy[4] = {0}, data[128], shm_on = 0;
    unsigned long long phases0 = 0, phases1 = 0;
    int have_phases = 0 == lt_shm_node_phases(&phases0);

    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_shm", &shm_on)) shm_on = 0;
    for (int it = 0; it < EMPTY_ROUNDS; it++) {
        const int root = it % wsize;
        int rc = MPI_Bcast(dummy, cnt, odd ? empty : MPI_INT, root, MPI_COMM_WORLD);
        if (MPI_SUCCESS != rc) FAIL("empty-signature bcast (round %d): error %d", it, rc);
        rc = MPI_Allgather(dummy, cnt, odd ? empty : MPI_INT, dummy, cnt, odd ? empty : MPI_INT,
                           MPI_COMM_WORLD);
        if (MPI_SUCCESS != rc) FAIL("empty-signature allgather (round %d): error %d", it, rc);
        for (int j = 0; j < 128; j++) data[j] = wrank == root ? it * 1000 + j : -1;
        MPI_Bcast(data, 128, MPI_INT, root, MPI_COMM_WORLD);
        for (int j = 0; j < 128; j++)
            if (data[j] != it * 1000 + j) {
                FAIL("after empty-signature calls: bcast from %d, element %d is %d, expected %d", root, j,
                     data[j], it * 1000 + j);
                break;
            }
        int v = wrank + 1, sum = 0;
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (sum != wsize * (wsize + 1) / 2)
            FAIL("after empty-signature calls: allreduce sum %d, expected %d", sum, wsize * (wsize + 1) / 2);
        nchecks += 2;
        ncalls += 4;
    }
    /* the proof that the bcasts in between ran through loom's segment, where a
     * difference between ranks would show */
    if (wsize > 1 && shm_on && have_phases && 0 == lt_shm_node_phases(&phases1) &&
        phases1 - phases0 < EMPTY_ROUNDS)
        FAIL("empty-signature test: %llu calls used the node segment, expected at least %d", phases1 - phases0,
             EMPTY_ROUNDS);
    MPI_Type_free(&empty);
}

/* Ranks that describe the same data with different datatypes, as MPI allows when the
 * type signatures match: even ranks pass n ints, odd ranks n/K elements of a type of K
 * ints, contiguous (layout 1) or every other int of a strided buffer (layout 2).
 * Bcasts from several roots and allgathers, every algorithm forced with knobs that cut
 * the message into many blocks (K = 7: blocks end inside an element), every int
 * checked, and the forced algorithm's counter must move.  Before loom cut such
 * messages by byte, the cuts fell at different places on different ranks: wrong
 * data, MPI_ERR_TRUNCATE or a hang (Open MPI's tuned fails alike). */
#define MIX_K 7
static long mix_value(int it, int r, long i)
{
    return (long) (lo_mix64((uint64_t) it * 1000003u + (uint64_t) r * 7919u + (uint64_t) i) % 2000000000u);
}

static void mixed_types_one(const comm_t *c, ckind_t coll, const char *alg, int knob, int layout, long m, int it)
{
    const int rank = c->rank, P = c->size, odd = rank & 1;
    const long n = MIX_K * m, total = coll == C_BCAST ? n : n * P;
    /* odd ranks: strided buffers hold int i at [2 i] */
    const long stride = odd && 2 == layout ? 2 : 1;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int *buf = calloc((size_t) (total * stride + 1), sizeof(int));
    int *mine = malloc((size_t) n * sizeof(int));
    lt_counts_t before, after;
    const lt_coll_t lc = c_lt[coll];
    const int ai = lt_alg_index(lc, alg);
    setting_t st;
    long bad = 0;
    int rc;

    snprintf(st.alg, sizeof(st.alg), "%s", alg);
    st.knob = knob;
    if (NULL == buf || NULL == mine || MPI_SUCCESS != apply_setting(coll, &st)) {
        FAIL("mixed types: setup of %s %s failed", lt_coll_name(lc), alg);
        free(buf);
        free(mine);
        return;
    }
    if (odd) {
        if (1 == layout) {
            MPI_Type_contiguous(MIX_K, MPI_INT, &t);
        } else {
            MPI_Datatype v;
            MPI_Type_vector(MIX_K, 1, 2, MPI_INT, &v);
            MPI_Type_create_resized(v, 0, (MPI_Aint) (2 * MIX_K * sizeof(int)), &t);
            MPI_Type_free(&v);
        }
        MPI_Type_commit(&t);
    }
    lt_read(lc, &before);
    if (coll == C_BCAST) {
        const int root = (it * 3 + 1) % P;
        if (rank == root)
            for (long i = 0; i < n; i++) buf[i * stride] = (int) mix_value(it, root, i);
        rc = odd ? MPI_Bcast(buf, (int) m, t, root, c->comm) : MPI_Bcast(buf, (int) n, MPI_INT, root, c->comm);
        for (long i = 0; i < n && MPI_SUCCESS == rc; i++)
            bad += buf[i * stride] != (int) mix_value(it, root, i);
    } else {
        for (long i = 0; i < n; i++) mine[i] = (int) mix_value(it, rank, i);
        rc = odd ? MPI_Allgather(mine, (int) n, MPI_INT, buf, (int) m, t, c->comm)
                 : MPI_Allgather(mine, (int) n, MPI_INT, buf, (int) n, MPI_INT, c->comm);
        for (int r = 0; r < P && MPI_SUCCESS == rc; r++)
            for (long i = 0; i < n; i++) bad += buf[(r * n + i) * stride] != (int) mix_value(it, r, i);
    }
    lt_read(lc, &after);
    ncalls++;
    nchecks++;
    if (MPI_SUCCESS != rc)
        FAIL("mixed types on %s: %s %s (knob %d, layout %d, %ld ints): error %d", c->name, lt_coll_name(lc), alg, knob,
             layout, n, rc);
    else if (bad)
        FAIL("mixed types on %s: %s %s (knob %d, layout %d, %ld ints): %ld wrong ints", c->name, lt_coll_name(lc), alg,
             knob, layout, n, bad);
    if (ai >= 0 && 0 != strcmp(alg, "auto") && after.alg[ai] == before.alg[ai])
        FAIL("mixed types on %s: %s %s did not run (counter unchanged)", c->name, lt_coll_name(lc), alg);
    if (MPI_DATATYPE_NULL != t) MPI_Type_free(&t);
    free(buf);
    free(mine);
    restore_defaults(coll);
}

static void mixed_types(const comm_t *c)
{
    static const struct {
        ckind_t coll;
        const char *alg;
        int knob;
    } cases[] = {{C_BCAST, "twotree", 4096}, {C_BCAST, "twotree", 0},   {C_BCAST, "hierarchical", 4096},
                 {C_BCAST, "binomial", -1},  {C_BCAST, "auto", -1},     {C_ALLGATHER, "ring", 4096},
                 {C_ALLGATHER, "ring", 0},   {C_ALLGATHER, "hierarchical", -1}, {C_ALLGATHER, "auto", -1}};
    /* elements of K ints: one, a few blocks' worth, and (bcast, small jobs) 840 KB */
    const long ms[3] = {1, 1001, 30001};
    const int nm = large_np() ? 2 : 3;
    int it = 0;
    if (c->size < 2) return;
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
        for (int layout = 1; layout <= 2; layout++)
            for (int mi = 0; mi < (cases[ci].coll == C_BCAST ? nm : 2); mi++)
                mixed_types_one(c, cases[ci].coll, cases[ci].alg, cases[ci].knob, layout, ms[mi], it++);
}

static void make_comms(comm_t *cs, int *ncs)
{
    int n = 0;
    MPI_Comm split, dup;
    /* two halves by parity; keys pseudo-random so the order differs from WORLD's */
    int key = (int) (lo_mix64((uint64_t) wrank * 7919u + 17u) % 1000003u);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, key, &split);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    memset(cs, 0, sizeof(comm_t) * 3);
    cs[n++] = (comm_t){.name = "world", .comm = MPI_COMM_WORLD};
    cs[n++] = (comm_t){.name = "split", .comm = split, .own = 1};
    if (!large_np()) cs[n++] = (comm_t){.name = "dup", .comm = dup, .own = 1};
    else MPI_Comm_free(&dup);
    for (int i = 0; i < n; i++) {
        MPI_Comm_rank(cs[i].comm, &cs[i].rank);
        MPI_Comm_size(cs[i].comm, &cs[i].size);
        MPI_Comm_set_errhandler(cs[i].comm, MPI_ERRORS_RETURN);
        lt_dup_with_pref(cs[i].comm, "tuned,^loom", &cs[i].oracle);
        cs[i].consecutive = node_consecutive(cs[i].oracle, cs[i].size);
        /* expected reductions, folded in rank order */
        for (int ci = 0; ci < NRED; ci++) {
            lo_tkind_t t = red_cases[ci].t;
            lo_okind_t o = red_cases[ci].o;
            char *exp = calloc(1, SMALL_MAX * lo_ext[t] + SLACK), tmp[SLACK];
            for (long j = 0; j < SMALL_MAX; j++) {
                char *acc = exp + (size_t) j * lo_ext[t];
                lo_gen(t, o, 0, j, 0, acc);
                for (int r = 1; r < cs[i].size; r++) {
                    lo_gen(t, o, r, j, 0, tmp);
                    lo_apply(t, o, acc, tmp, acc);
                }
            }
            cs[i].exp[ci] = exp;
        }
    }
    *ncs = n;
}


static int build_settings(ckind_t c, setting_t *ss, int max)
{
    int n = 0;
    ss[n++] = (setting_t){"auto", -1};
    for (int a = 0; a < lt_nalgs(c_lt[c]) && n < max; a++) {
        const char *name = lt_alg_name(c_lt[c], a);
        /* sizes in bytes; knomial's radix */
        static const int sizes[] = {-1, 64, 1000, 4096}, radices[] = {-1, 3, 2, 7};
        const char *knob = alg_knob(c, name);
        const int radix = NULL != knob && 0 == strcmp(knob, "coll_loom_knomial_radix");
        int nk = knob ? (large_np() ? 2 : 4) : 1;
        /* rooted collectives run every root: fewer knob values keep them affordable */
        if (is_rooted(c) && nk == 4) nk = 3;
        for (int j = 0; j < nk && n < max; j++) {
            ss[n] = (setting_t){"", radix ? radices[j] : j == 1 && large_np() ? 1000 : sizes[j]};
            snprintf(ss[n++].alg, LT_NAME_LEN, "%s", name);
        }
    }
    return n;
}

/* The small calls of one collective on one communicator under one setting. */
static void run_matrix(ckind_t coll, const comm_t *c, const setting_t *s)
{
    int P = c->size;
    long counts[4];
    int ncounts = 0;
    /* 0, 1, one below P (or 3), and the largest count that is prime / not a multiple */
    counts[ncounts++] = 0;
    counts[ncounts++] = 1;
    if (!large_np() || P < 16) counts[ncounts++] = P > 3 ? P - 1 : 3;
    if (coll == C_BCAST || coll == C_REDUCE || is_prefix(coll)) counts[ncounts++] = SMALL_MAX;
    else if (coll == C_ALLGATHER) counts[ncounts++] = 61;
    else counts[ncounts++] = SMALL_MAX / P - 4 > 1 ? SMALL_MAX / P - 4 : 2; /* total within SMALL_MAX */
    int ncases = is_reduction(coll) ? NRED : NMOVE;
    int nip = coll == C_BCAST ? 1 : 2;
    int npat = coll == C_RS ? 3 : 1;

    /* roots: every root with a subset, the full matrix at the first, middle and last */
    for (int root = is_rooted(coll) ? 0 : -1; root < (is_rooted(coll) ? P : 0); root++) {
        int full = !is_rooted(coll) || root == 0 || root == P - 1 || (!large_np() && root == P / 2);
        /* knob sweeps: segment layouts do not depend on the root, so two roots suffice */
        if (s->knob >= 0 && root != 0 && root != P - 1) continue;
        for (int ci = 0; ci < ncases; ci++) {
            const case_t *cs = is_reduction(coll) ? &red_cases[ci] : &move_cases[ci];
            /* subset for the other roots: the strided type (non-commutative user op) and int sum */
            if (!full && !(cs->t == LO_T_VEC && (cs->o == LO_O_UNONCOMM || cs->o == LO_O_NONE)) &&
                !(cs->t == LO_T_INT && (cs->o == LO_O_SUM || cs->o == LO_O_NONE)))
                continue;
            for (int j = 0; j < ncounts; j++) {
                if (!full && counts[j] != SMALL_MAX) continue;
                if (s->knob >= 0 && counts[j] < 2) continue; /* one segment whatever the knob */
                for (int ip = 0; ip < nip; ip++) {
                    for (int pat = 0; pat < npat; pat++) {
                        if (coll == C_RS && pat == 2 && counts[j] > SMALL_MAX / P) continue;
                        call_t k = {coll, c, s, cs->t, cs->o, counts[j], pat, root < 0 ? 0 : root, ip, 0,
                                    is_reduction(coll) ? ci : -1};
                        run_call(&k);
                    }
                }
            }
        }
    }
    if ((coll == C_REDUCE || coll == C_RSB) && P > 1) inexact_sum(coll, c, s);
}

/* 1M-element calls on WORLD, for each setting with its default knob. */
static void big_calls(ckind_t coll, const comm_t *c, const setting_t *ss, int nss)
{
    int P = c->size;
    for (int si = 0; si < nss; si++) {
        const setting_t *s = &ss[si];
        if (s->knob >= 0) continue;
        if (0 != strcmp(s->alg, "auto") && MPI_SUCCESS != apply_setting(coll, s)) continue;
        double t0 = MPI_Wtime();
        call_t k = {coll, c, s, LO_T_INT, LO_O_SUM, 0, 1, 0, si & 1, 1, -1};
        switch (coll) {
        case C_BCAST:
            k.t = LO_T_DOUBLE;
            k.o = LO_O_NONE;
            k.count = BIG_COUNT;
            k.root = P - 1;
            k.inplace = 0;
            run_call(&k);
            break;
        case C_REDUCE:
            k.count = BIG_COUNT;
            k.root = P / 2;
            run_call(&k);
            k.t = LO_T_DOUBLE;
            k.inplace = !k.inplace;
            run_call(&k);
            break;
        case C_ALLGATHER:
            k.o = LO_O_NONE;
            k.count = BIG_COUNT / P + 3;
            run_call(&k);
            break;
        case C_SCAN: case C_EXSCAN:
            k.count = BIG_COUNT;
            run_call(&k);
            k.t = LO_T_DOUBLE;
            k.inplace = !k.inplace;
            run_call(&k);
            break;
        case C_RS: case C_RSB:
            k.count = BIG_COUNT / P + 1;
            run_call(&k);
            k.t = LO_T_DOUBLE;
            k.inplace = !k.inplace;
            run_call(&k);
            break;
        default: break;
        }
        if (verbose && wrank == 0)
            printf("  1M %s alg=%s: %.2f s\n", lt_coll_name(c_lt[coll]), s->alg, MPI_Wtime() - t0);
    }
    restore_defaults(coll);
}

/* ------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *env_alg = NULL, *coll_list = "all";
    int want[NC] = {0};
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--coll") && i + 1 < argc) coll_list = argv[++i];
        else if (0 == strcmp(argv[i], "--env-alg") && i + 1 < argc) env_alg = argv[++i], env_forced = 1;
        else if (0 == strcmp(argv[i], "--oracle-only")) oracle_only = 1;
        else if (0 == strcmp(argv[i], "-v")) verbose = 1;
        else if (0 == strcmp(argv[i], "--max-report") && i + 1 < argc) lt_max_report = atoi(argv[++i]);
        else {
            if (wrank == 0)
                fprintf(stderr, "usage: %s [--coll LIST] [--oracle-only | --env-alg NAME] [-v] [--max-report N]\n",
                        argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    {
        /* parse the list of collectives */
        char buf[256], *save = NULL;
        int n = 0;
        snprintf(buf, sizeof(buf), "%s", coll_list);
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int found = 0;
            for (int c = 0; c < NC; c++) {
                if (0 == strcmp(tok, "all") || 0 == strcmp(tok, lt_coll_name(c_lt[c]))) {
                    want[c] = 1;
                    found = 1;
                    n++;
                }
            }
            if (!found) {
                if (wrank == 0) fprintf(stderr, "test_colls: unknown collective '%s'\n", tok);
                MPI_Finalize();
                return 2;
            }
        }
        if (env_alg && (n != 1 || oracle_only)) {
            if (wrank == 0) fprintf(stderr, "test_colls: --env-alg needs exactly one collective in --coll, and no --oracle-only\n");
            MPI_Finalize();
            return 2;
        }
    }
    t0 = MPI_Wtime();
    lo_setup(&oracle_cfg);

    int npv = lt_init();
    if (npv <= 0 && !oracle_only) {
        if (wrank == 0)
            fprintf(stderr, "FAIL test_colls: no coll_loom_* performance variable exists: loom is not loaded "
                            "(check mca_base_component_path / ompi_info | grep loom)\n");
        MPI_Finalize();
        return 2;
    }
    if (oracle_only && wrank == 0)
        printf("test_colls: ORACLE-ONLY mode: results are checked, but NOT that loom served the calls\n");
    if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_ring_segment_size", &default_seg)) default_seg = -1;
    if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_twotree_chunk_size", &default_chunk)) default_chunk = -1;
    if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_hierarchical_segment_size", &default_hseg)) default_hseg = -1;
    if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_circulant_block_size", &default_block)) default_block = -1;
    if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_knomial_radix", &default_radix)) default_radix = -1;
    if (!oracle_only) {
        if (default_radix < 0) FAIL("cannot read cvar coll_loom_knomial_radix");
        if (default_block < 0) FAIL("cannot read cvar coll_loom_circulant_block_size");
        if (default_hseg < 0) FAIL("cannot read cvar coll_loom_hierarchical_segment_size");
        if (default_seg < 0) FAIL("cannot read cvar coll_loom_ring_segment_size");
        if (default_chunk < 0) FAIL("cannot read cvar coll_loom_twotree_chunk_size");
    }
    for (int c = 0; c < NC; c++) {
        char cvar[128];
        lt_coll_t lc = c_lt[c];
        snprintf(default_alg[c], LT_NAME_LEN, "auto");
        if (!want[c]) continue;
        snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(lc));
        int rc = lt_cvar_read_str(cvar, default_alg[c], LT_NAME_LEN);
        if (MPI_SUCCESS != rc) snprintf(default_alg[c], LT_NAME_LEN, "auto");
        if (oracle_only) continue;
        if (MPI_SUCCESS != rc) FAIL("cannot read cvar %s: %s", cvar, lt_errstr(rc));
        if (!lt_has_fallback(lc)) FAIL("no counter coll_loom_%s_fallback_calls", lt_coll_name(lc));
        for (int i = 0; i < 3 && c_required[c][i]; i++)
            if (lt_alg_index(lc, c_required[c][i]) < 0)
                FAIL("no counter coll_loom_%s_%s_calls: algorithm %s missing", lt_coll_name(lc), c_required[c][i],
                     c_required[c][i]);
        if (verbose && wrank == 0) {
            printf("%s algorithms:", lt_coll_name(lc));
            for (int i = 0; i < lt_nalgs(lc); i++) printf(" %s", lt_alg_name(lc, i));
            printf("\n");
        }
    }

    comm_t cs[3];
    int ncs = 0;
    make_comms(cs, &ncs);
    if (!env_alg && !oracle_only && 0 == strcmp(coll_list, "all")) {
        empty_signatures();
        for (int i = 0; i < ncs; i++) mixed_types(&cs[i]);
    }

    for (int c = 0; c < NC; c++) {
        if (!want[c]) continue;
        double tc = MPI_Wtime();
        if (env_alg) {
            /* forced from outside: no cvar write; the knobs keep their values */
            setting_t s = {"", -1};
            snprintf(s.alg, sizeof(s.alg), "%s", env_alg);
            if (0 != strcmp(default_alg[c], env_alg))
                FAIL("coll_loom_%s_algorithm is \"%s\", expected \"%s\" from the environment / --mca",
                     lt_coll_name(c_lt[c]), default_alg[c], env_alg);
            for (int i = 0; i < ncs; i++) run_matrix(c, &cs[i], &s);
            big_calls(c, &cs[0], &s, 1);
        } else {
            setting_t ss[64];
            int nss = build_settings(c, ss, 64);
            for (int i = 0; i < ncs; i++) {
                for (int si = 0; si < nss; si++) {
                    /* knob sweeps on WORLD only: the other communicators add no segment layout */
                    if (i > 0 && ss[si].knob >= 0) continue;
                    /* auto needs no write (and in oracle-only mode loom may lack the cvar) */
                    if (si > 0 && MPI_SUCCESS != apply_setting(c, &ss[si])) continue;
                    run_matrix(c, &cs[i], &ss[si]);
                }
                restore_defaults(c);
            }
            big_calls(c, &cs[0], ss, nss);
        }
        if (verbose && wrank == 0) printf("%s: %.2f s\n", lt_coll_name(c_lt[c]), MPI_Wtime() - tc);
    }

    /* Every rank's verdict, over a communicator loom does not serve. */
    long tot[4] = {lt_nfail, nchecks, ncalls, lo_userop_bad_calls}, sum[4];
    MPI_Allreduce(tot, sum, 4, MPI_LONG, MPI_SUM, cs[0].oracle);
    if (wrank == 0) {
        printf("test_colls np=%d colls=%s mode=%s: %ld calls, %ld checks, %ld failures (%.1f s)\n", wsize, coll_list,
               oracle_only ? "ORACLE-ONLY (loom not checked)" : env_alg ? "env-alg" : "full", sum[2], sum[1], sum[0],
               MPI_Wtime() - t0);
        fflush(stdout);
    }
    for (int i = 0; i < ncs; i++) {
        for (int ci = 0; ci < NRED; ci++) free(cs[i].exp[ci]);
        MPI_Comm_free(&cs[i].oracle);
        if (cs[i].own) MPI_Comm_free(&cs[i].comm);
    }
    lo_free();
    lt_fini();
    MPI_Finalize();
    return sum[0] ? 1 : 0;
}
