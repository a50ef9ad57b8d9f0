/*
 * loom: MPI_Allreduce correctness test that proves loom served the calls.
 *
 * For every algorithm setting (auto, and each algorithm loom exposes through its
 * coll_loom_allreduce_<alg>_calls counter, with several knob values), every
 * communicator (WORLD, a parity split with shuffled keys, a dup of WORLD, SELF),
 * every valid (datatype, op) pair of the matrix below, counts 0 / 1 / 255 and with
 * and without MPI_IN_PLACE, each rank:
 *   - fills its input with a deterministic function of (rank in that communicator,
 *     element index), chosen so that the exact result does not depend on the
 *     grouping of the reduction (small integers, powers of two, ...);
 *   - computes the expected result itself by folding every rank's input in rank
 *     order (so non-commutative operations are checked for rank order);
 *   - compares the result exactly (floating point by value: the sign of a zero may
 *     depend on the grouping), and checks that no byte outside the data was
 *     touched (gaps of the strided datatype, guard elements after the buffer);
 *   - reads loom's MPI_T counters before and after the call and checks which
 *     algorithm served it: exactly one counter moved by one; a forced algorithm
 *     that may serve the call (by the documented rules, recomputed here
 *     independently) must be the one; one that may not, must not be; 1-rank
 *     communicators and count 0 move nothing.
 * Plus: 1M-element sums, a bit-identity test of an inexact double sum (every rank
 * must get the same bits), bad control-variable values, and the communicator
 * preference info key.
 *
 * Modes:
 *   (none)            the full test, algorithms switched through MPI_T cvars
 *   --env-alg NAME    the algorithm was forced from outside (--mca / OMPI_MCA_*):
 *                     check the cvar holds NAME, then check calls without writing cvars
 *   --default-check   no cvar writes at all: loom must serve by default
 *   -v                more output;  --max-report N  failures printed per rank
 * Exit status: 0 when every rank passed, 1 on any failure, 2 when loom is absent.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "loom_test_oracle.h"
#include "loom_test_util.h"

/* ------------------------------------------------------------------------- */
/* datatypes and operations                                                  */

/* The strided type (LO_T_VEC) displaced by 17 ints: its true lower bound, 68 bytes, is
 * more than the alignment slack of a 64-byte aligned scratch slot, so an implementation
 * that does not shift its temporary buffers by it writes out of bounds.  Data ints of
 * element e: 6e + {17,18,20,21}; everything else in the buffer (6e + 19, 6e + 22, the
 * first 17 ints) must stay untouched.  The values are this test's as they always were:
 * its own numbering of types and ops in the hash key, products placed by rank + index,
 * non-commutative vector inputs as they come. */
static const signed char tkey[LO_NT] = {
    [LO_T_INT] = 0, [LO_T_INT64] = 1, [LO_T_FLOAT] = 2,      [LO_T_DOUBLE] = 3, [LO_T_DCOMPLEX] = 4,
    [LO_T_VEC] = 5, [LO_T_2INT] = 6,  [LO_T_DOUBLE_INT] = 7, [LO_T_MAT] = 8,    [LO_T_PAIR] = -1};
static const signed char okey[LO_NO] = {
    [LO_O_NONE] = -1,  [LO_O_SUM] = 0,    [LO_O_PROD] = 1,   [LO_O_MAX] = 2,   [LO_O_MIN] = 3,      [LO_O_BXOR] = 4,
    [LO_O_LAND] = 5,   [LO_O_MAXLOC] = 6, [LO_O_MINLOC] = 7, [LO_O_UCOMM] = 8, [LO_O_UNONCOMM] = 9};
static const lo_config_t oracle_cfg = {
    .vec_shift = 17, .hash = LO_HASH_SPREAD, .salt_stride = 128, .tkey = tkey, .okey = okey, .nokey = 10,
    .prod_by_index = 1, .dmax53 = 0, .vec_odd = 0,
    /* the matrix's user-op cases: anything else reaching the user ops is a bug */
    .ucomm_types = LO_BIT(LO_T_INT) | LO_BIT(LO_T_VEC), .unoncomm_types = LO_BIT(LO_T_VEC) | LO_BIT(LO_T_MAT)};

/* Every buffer gets this many bytes beyond count * extent (the strided type's data
 * reaches past it), plus guard bytes that must stay untouched. */
#define SLACK 128

/* The (type, op) matrix: the valid combinations that are tested. */
typedef struct { lo_tkind_t t; lo_okind_t o; } case_t;
static const case_t cases[] = {
    {LO_T_INT, LO_O_SUM}, {LO_T_INT, LO_O_PROD}, {LO_T_INT, LO_O_MAX}, {LO_T_INT, LO_O_MIN}, {LO_T_INT, LO_O_BXOR},
    {LO_T_INT, LO_O_LAND}, {LO_T_INT, LO_O_UCOMM},
    {LO_T_INT64, LO_O_SUM}, {LO_T_INT64, LO_O_PROD}, {LO_T_INT64, LO_O_MAX}, {LO_T_INT64, LO_O_MIN},
    {LO_T_INT64, LO_O_BXOR}, {LO_T_INT64, LO_O_LAND},
    {LO_T_FLOAT, LO_O_SUM}, {LO_T_FLOAT, LO_O_PROD}, {LO_T_FLOAT, LO_O_MAX}, {LO_T_FLOAT, LO_O_MIN},
    {LO_T_DOUBLE, LO_O_SUM}, {LO_T_DOUBLE, LO_O_PROD}, {LO_T_DOUBLE, LO_O_MAX}, {LO_T_DOUBLE, LO_O_MIN},
    {LO_T_DCOMPLEX, LO_O_SUM}, {LO_T_DCOMPLEX, LO_O_PROD},
    {LO_T_VEC, LO_O_UCOMM}, {LO_T_VEC, LO_O_UNONCOMM},
    {LO_T_2INT, LO_O_MAXLOC}, {LO_T_2INT, LO_O_MINLOC},
    {LO_T_DOUBLE_INT, LO_O_MAXLOC}, {LO_T_DOUBLE_INT, LO_O_MINLOC},
    {LO_T_MAT, LO_O_UNONCOMM},
};
#define NCASES ((int) (sizeof(cases) / sizeof(cases[0])))

/* Rules of the interface, recomputed independently of loom. */
static int op_commutative(lo_okind_t o) { return o != LO_O_UNONCOMM; }
static int op_idempotent(lo_okind_t o)
{
    return o == LO_O_MAX || o == LO_O_MIN || o == LO_O_MAXLOC || o == LO_O_MINLOC || o == LO_O_LAND;
}
static int op_exact(lo_tkind_t t, lo_okind_t o)
{
    if (o == LO_O_UCOMM || o == LO_O_UNONCOMM) return 0; /* user ops are never exact */
    switch (t) {
    case LO_T_INT: case LO_T_INT64: return 1;
    /* max and min of floats keep the second operand on +0 / -0 and NaN: not exact */
    case LO_T_FLOAT: case LO_T_DOUBLE: return 0;
    case LO_T_DCOMPLEX: return 0;
    case LO_T_2INT: case LO_T_DOUBLE_INT: return 1;
    default: return 0;
    }
}

/* End et al., Theorem 1: can n-way dissemination serve a non-idempotent op on P ranks?
 * k = smallest with (n+1)^k >= P, m = (n+1)^(k-1),
 * A = {1} u {(j+1)(n+1)^(l-1) : l = 1..k-1, j = 1..n}, restricted to [1, m];
 * adaptable iff s*m + L - D == P for some s in 1..n, L in {0} u A, D in {0} u A, D < m. */
static int dissemination_adaptable(int n, int P)
{
    long A[4096];
    int na = 0;
    if (P <= 1) return 1;
    long pw = 1;
    int k = 0;
    while (pw < P) {
        pw *= (n + 1);
        k++;
    }
    long m = pw / (n + 1);
    A[na++] = 0; /* the {0} of both L and D */
    A[na++] = 1;
    long base = 1; /* (n+1)^(l-1) */
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

/* 1: the algorithm may serve the call, 0: it may not, -1: unknown algorithm. */
static int alg_may_serve(const char *alg, int n, int P, lo_tkind_t t, lo_okind_t o)
{
    if (0 == strcmp(alg, "pairwise")) return 1;
    /* the halving keeps aligned rank ranges together: any op */
    if (0 == strcmp(alg, "halving_doubling")) return 1;
    if (0 == strcmp(alg, "bruck")) return op_commutative(o) && op_exact(t, o);
    /* each block is combined once, then copied: bit-identical, only the order rotates */
    if (0 == strcmp(alg, "ring")) return op_commutative(o);
    /* two trees over the same blocks: as ring, each block combined in one fixed order */
    if (0 == strcmp(alg, "twotree")) return op_commutative(o);
    /* reduce along the broadcast's trees, then broadcast: each block combined once */
    if (0 == strcmp(alg, "circulant")) return op_commutative(o);
    /* Swing's reduce-scatter + allgather: each block combined once, out of rank order */
    if (0 == strcmp(alg, "swing")) return op_commutative(o);
    /* k-ary halving keeps aligned rank ranges together, as radix 2 does: any op */
    if (0 == strcmp(alg, "knomial")) return 1;
    /* any op on node-consecutive ranks, commutative ones otherwise: this test does not
     * know the node map, so a non-commutative call may go either way (both exact) */
    if (0 == strcmp(alg, "hierarchical")) return op_commutative(o) ? 1 : -1;
    /* a chain through the nodes on a torus map; the root's copy everywhere */
    if (0 == strcmp(alg, "torus")) return lt_torus_configured() && op_commutative(o);
    if (0 == strcmp(alg, "dissemination"))
        return op_commutative(o) && op_exact(t, o) && (op_idempotent(o) || dissemination_adaptable(n, P));
    return -1;
}

/* ------------------------------------------------------------------------- */
/* failures                                                                  */

static int wrank, wsize;
static long nchecks = 0, ncalls = 0;
static int verbose = 0;

#define FAIL(...) lt_fail(wrank, __VA_ARGS__)

/* ------------------------------------------------------------------------- */
/* communicators and algorithm settings                                      */

typedef struct {
    const char *name;
    MPI_Comm comm;
    MPI_Comm oracle; /* same group, loom excluded: for the test's own collectives */
    int rank, size;
    int own;         /* free at the end */
} comm_t;

typedef struct {
    char alg[LT_NAME_LEN]; /* "auto" or an algorithm name */
    int n;                 /* knob value, 0: the default */
} setting_t;

static int default_ways = -1, default_ports = -1;
/* the knobs of the pipelined algorithms (segment, chunk, block size in bytes: loom's
 * choice, then sizes that make many, uneven pieces) and knomial's radix, the values the
 * matrix tries (0: the knob's value at startup), and that value (-1: not readable) */
#define NSIZE_KNOBS 4
static const char *const size_alg[NSIZE_KNOBS] = {"ring", "twotree", "circulant", "knomial"};
static const char *const size_knob[NSIZE_KNOBS] = {"coll_loom_ring_segment_size", "coll_loom_twotree_chunk_size",
                                                   "coll_loom_circulant_block_size", "coll_loom_knomial_radix"};
static const int size_values[NSIZE_KNOBS][3] = {{0, 1000, 64}, {0, 1000, 64}, {0, 1000, 64}, {0, 3, 2}};
static int size_default[NSIZE_KNOBS] = {-1, -1, -1, -1};
static int default_hseg = -1;
/* index of alg's knob in that table, -1: it has none there */
static int size_index(const char *alg)
{
    for (int k = 0; k < NSIZE_KNOBS; k++) {
        if (0 == strcmp(alg, size_alg[k])) return k;
    }
    return -1;
}
static char default_alg[LT_NAME_LEN] = "auto";
static int cvars_ok = 1;

static void describe_setting(const setting_t *s, char *buf, size_t len)
{
    if (s->n > 0) snprintf(buf, len, "%.*s(n=%d)", LT_NAME_LEN - 1, s->alg, s->n % 100000);
    else snprintf(buf, len, "%.*s", LT_NAME_LEN - 1, s->alg);
}

/* Writes the algorithm and knob cvars (same values on every rank). */
static int apply_setting(const setting_t *s)
{
    const char *failed;
    int value, rc = lt_apply_setting("coll_loom_allreduce_algorithm", s->alg, s->n, default_ways,
                                     default_ports, &failed, &value);
    if (MPI_SUCCESS != rc) {
        FAIL("cannot set %s through MPI_T (value %s / %d): %s", failed, s->alg, value, lt_errstr(rc));
        return rc;
    }
    /* the knob table's algorithms: n is their knob's value; the other knobs at their
     * defaults */
    const int mine = size_index(s->alg);
    for (int k = 0; k < NSIZE_KNOBS && MPI_SUCCESS == rc; k++) {
        int v = (k == mine && s->n > 0) ? s->n : size_default[k];
        if (v < 0) continue;
        rc = lt_cvar_write_int(size_knob[k], v);
        if (MPI_SUCCESS != rc) FAIL("cannot set %s=%d through MPI_T: %s", size_knob[k], v, lt_errstr(rc));
    }
    return rc;
}

static void restore_defaults(void)
{
    lt_restore_settings("coll_loom_allreduce_algorithm", default_alg, default_ways, default_ports);
    for (int k = 0; k < NSIZE_KNOBS; k++) {
        if (size_default[k] >= 0) lt_cvar_write_int(size_knob[k], size_default[k]);
    }
}

/* ------------------------------------------------------------------------- */
/* one call                                                                  */

#define GUARD_ELEMS 2
#define SMALL_MAX 255
#define BIG_COUNT (1L << 20)

/* Expected results for count <= SMALL_MAX, per (communicator, case), computed once. */
static void *expected_small(const comm_t *c, int ci)
{
    lo_tkind_t t = cases[ci].t;
    lo_okind_t o = cases[ci].o;
    char *exp = calloc(1, SMALL_MAX * lo_ext[t] + SLACK);
    char tmp[SLACK];
    for (long i = 0; i < SMALL_MAX; i++) {
        char *acc = exp + i * lo_ext[t];
        lo_gen(t, o, 0, i, 0, acc);
        for (int r = 1; r < c->size; r++) {
            lo_gen(t, o, r, i, 0, tmp);
            lo_apply(t, o, acc, tmp, acc);
        }
    }
    return exp;
}

/* Closed-form inputs for the 1M sums, so the expected result costs O(count):
 * x(r, i) = a(i) + b(r) + c(i) r, sum = P a(i) + sum_r b(r) + c(i) P(P-1)/2. */
static inline long big_a(long i) { return (long) ((((uint64_t) i * 2654435761u) >> 7) % 1001) - 500; }
static inline long big_b(int r) { return (long) ((r * r * 7) % 23); }
static inline long big_c(long i) { return (i % 5) - 2; }

typedef struct {
    const comm_t *c;
    const setting_t *s;
    lo_tkind_t t;
    lo_okind_t o;
    long count;
    int inplace;
    int big;
    int ci;
} call_t;

static void call_label(const call_t *k, char *buf, size_t len)
{
    char sd[LT_NAME_LEN + 32];
    describe_setting(k->s, sd, sizeof(sd));
    snprintf(buf, len, "comm=%s(P=%d,rank=%d) type=%s op=%s count=%ld %s alg=%s", k->c->name, k->c->size, k->c->rank,
             lo_tname[k->t], lo_oname[k->o], k->count, k->inplace ? "IN_PLACE" : "sendbuf", sd);
}

/* Checks which counter moved for one call. */
static void check_counters(const call_t *k, const lt_counts_t *before, const lt_counts_t *after, const char *label)
{
    lt_diff_t d;
    lt_diff(LT_ALLREDUCE, before, after, &d);
    nchecks++;
    if (k->count == 0 || k->c->size == 1) {
        if (d.changed) FAIL("%s: loom counters moved on a %s (%s); expected none", label,
                            k->count == 0 ? "count-0 call" : "1-rank communicator", d.desc);
        return;
    }
    if (d.changed != 1 || d.delta != 1) {
        FAIL("%s: expected exactly one loom allreduce counter +1, got: %s", label, d.desc);
        return;
    }
    if (0 == strcmp(k->s->alg, "auto")) return; /* any algorithm, or the previous component */
    if (d.which == LT_WHICH_FALLBACK) {
        FAIL("%s: forced algorithm %s handed the call to the previous component (%s)", label, k->s->alg, d.desc);
        return;
    }
    int n = k->s->n;
    if (n <= 0) n = 0 == strcmp(k->s->alg, "dissemination") ? default_ways : default_ports;
    int may = alg_may_serve(k->s->alg, n, k->c->size, k->t, k->o);
    const char *ran = lt_alg_name(LT_ALLREDUCE, d.which);
    if (may == 1 && 0 != strcmp(ran, k->s->alg))
        FAIL("%s: forced %s may serve this call but %s ran", label, k->s->alg, ran);
    if (may == 0 && 0 == strcmp(ran, k->s->alg))
        FAIL("%s: forced %s may NOT serve this call by the rules (commutative=%d exact=%d idempotent=%d "
             "adaptable(n=%d,P=%d)=%d) but it ran",
             label, k->s->alg, op_commutative(k->o), op_exact(k->t, k->o), op_idempotent(k->o), n, k->c->size,
             dissemination_adaptable(n, k->c->size));
}

static void run_call(const call_t *k, const void *exp_small)
{
    lo_tkind_t t = k->t;
    lo_okind_t o = k->o;
    size_t e = lo_ext[t];
    long count = k->count;
    size_t nbytes = (size_t) (count + GUARD_ELEMS) * e + SLACK;
    char *send = malloc(nbytes);
    char *recv = malloc(nbytes);
    char *pristine = malloc(nbytes); /* recv as it was before the call */
    char label[384];
    lt_counts_t before, after;
    int rc;

    call_label(k, label, sizeof(label));
    if (!send || !recv || !pristine) {
        FAIL("%s: out of memory in the test", label);
        free(send);
        free(recv);
        free(pristine);
        return;
    }
    /* gaps / padding of inputs: 0x5A; receive buffer: 0xA5 */
    memset(send, 0x5A, nbytes);
    memset(recv, 0xA5, nbytes);
    for (long i = 0; i < count; i++) {
        if (k->big) {
            long x = big_a(i) + big_b(k->c->rank) + big_c(i) * k->c->rank;
            if (t == LO_T_INT) ((int *) send)[i] = (int) x;
            else ((double *) send)[i] = (double) x + 0.5;
        } else {
            lo_gen(t, o, k->c->rank, i, 0, send + i * e);
        }
    }
    if (k->inplace) memcpy(recv, send, nbytes);
    memcpy(pristine, recv, nbytes);

    long bad_before = lo_userop_bad_calls;
    lt_read(LT_ALLREDUCE, &before);
    rc = MPI_Allreduce(k->inplace ? MPI_IN_PLACE : send, recv, (int) count, lo_dt[t], lo_op[o], k->c->comm);
    lt_read(LT_ALLREDUCE, &after);
    ncalls++;

    if (MPI_SUCCESS != rc) {
        char es[MPI_MAX_ERROR_STRING];
        int el;
        MPI_Error_string(rc, es, &el);
        FAIL("%s: MPI_Allreduce returned %d (%s)", label, rc, es);
    }
    if (lo_userop_bad_calls != bad_before)
        FAIL("%s: the user op was called with a datatype other than the call's", label);
    check_counters(k, &before, &after, label);

    /* the result */
    nchecks++;
    long wrong = 0;
    char tmp[SLACK];
    for (long i = 0; i < count; i++) {
        const char *got = recv + i * e;
        const char *want;
        if (k->big) {
            long P = k->c->size, sb = 0;
            for (int r = 0; r < P; r++) sb += big_b(r);
            long x = P * big_a(i) + sb + big_c(i) * P * (P - 1) / 2;
            if (t == LO_T_INT) *(int *) tmp = (int) x;
            else *(double *) tmp = (double) x + 0.5 * (double) P;
            want = tmp;
        } else {
            want = (const char *) exp_small + i * e;
        }
        if (!lo_same(t, o, want, got)) {
            if (wrong < 3) {
                char sw[96], sg[96];
                lo_show(t, want, sw, sizeof(sw));
                lo_show(t, got, sg, sizeof(sg));
                FAIL("%s: element %ld is %s, expected %s", label, i, sg, sw);
            }
            wrong++;
        }
    }
    if (wrong > 3) FAIL("%s: %ld elements wrong in total", label, wrong);
    /* nothing but the data may change: gaps of the strided type, the bytes before
     * its first element, guard bytes after the buffer */
    {
        char *mask = calloc(1, nbytes);
        for (long i = 0; i < count; i++) lo_mark_data(t, mask + (size_t) i * e);
        for (size_t b = 0; b < nbytes; b++) {
            if (!mask[b] && recv[b] != pristine[b]) {
                FAIL("%s: byte %zu of the receive buffer (%s) was overwritten", label, b,
                     b >= (size_t) count * e ? "past the data" : "not part of the datatype's data");
                break;
            }
        }
        free(mask);
    }
    if (!k->inplace && !k->big) {
        char *ref = malloc(nbytes);
        memset(ref, 0x5A, nbytes);
        for (long i = 0; i < count; i++) lo_gen(t, o, k->c->rank, i, 0, ref + i * e);
        if (0 != memcmp(ref, send, nbytes)) FAIL("%s: the send buffer was modified", label);
        free(ref);
    }
    free(send);
    free(recv);
    free(pristine);
}

/* ------------------------------------------------------------------------- */
/* bit identity of an inexact sum, and of max and min over +0, -0 and NaN    */

/* Rank r's element i.  Sum: values of many magnitudes.  Max and min: signed zeros,
 * NaNs with different payloads and a few numbers, so that the operand order of every
 * combine shows in the bits (Open MPI's kernel keeps the second operand when the two
 * compare equal or unordered). */
static double bit_input(MPI_Op op, int r, int i)
{
    uint64_t h = lo_hash_spread(r, i, 999);
    if (MPI_SUM == op)
        return ((double) (h % 1000003) / 7.0 + 1.0 / 3.0) * pow(10.0, (double) ((int) ((h >> 24) % 9) - 4)) *
               ((h >> 40) & 1 ? -1.0 : 1.0);
    switch (h % 5) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: {
        uint64_t bits = 0x7ff8000000000000ull | ((h >> 8) & 0xffff);
        double x;
        memcpy(&x, &bits, sizeof(x));
        return x;
    }
    default: return (double) ((int) ((h >> 16) % 7) - 3);
    }
}

static void bit_identity_op(const comm_t *c, const setting_t *s, MPI_Op op, const char *oname, int count)
{
    double *in = malloc(sizeof(double) * (size_t) count), *out = malloc(sizeof(double) * (size_t) count);
    double *ref = malloc(sizeof(double) * (size_t) count), *sumabs = malloc(sizeof(double) * (size_t) count);
    int *has_nan = malloc(sizeof(int) * (size_t) count);
    char label[512], sd[LT_NAME_LEN + 32];
    lt_counts_t before, after;
    lt_diff_t d;
    const lo_okind_t ok = MPI_SUM == op ? LO_O_SUM : MPI_MAX == op ? LO_O_MAX : LO_O_MIN;

    describe_setting(s, sd, sizeof(sd));
    snprintf(label, sizeof(label), "bit-identity comm=%s(P=%d,rank=%d) type=double op=%s count=%d alg=%s", c->name,
             c->size, c->rank, oname, count, sd);
    if (!in || !out || !ref || !sumabs || !has_nan) {
        FAIL("%s: out of memory in the test", label);
        free(in), free(out), free(ref), free(sumabs), free(has_nan);
        return;
    }
    for (int i = 0; i < count; i++) in[i] = bit_input(op, c->rank, i);
    for (int i = 0; i < count; i++) {
        ref[i] = MPI_SUM == op ? 0 : bit_input(op, 0, i);
        sumabs[i] = 0;
        has_nan[i] = 0;
        for (int r = 0; r < c->size; r++) {
            double x = bit_input(op, r, i);
            has_nan[i] |= isnan(x);
            if (MPI_SUM == op) ref[i] += x;
            else if (MPI_MAX == op) ref[i] = x > ref[i] ? x : ref[i];
            else ref[i] = x < ref[i] ? x : ref[i];
            sumabs[i] += fabs(x);
        }
    }
    lt_read(LT_ALLREDUCE, &before);
    MPI_Allreduce(in, out, count, MPI_DOUBLE, op, c->comm);
    lt_read(LT_ALLREDUCE, &after);
    ncalls++;
    lt_diff(LT_ALLREDUCE, &before, &after, &d);
    nchecks++;
    if (d.changed != 1 || d.delta != 1) FAIL("%s: expected exactly one loom counter +1, got %s", label, d.desc);
    else if (0 != strcmp(s->alg, "auto") && d.which == LT_WHICH_FALLBACK)
        FAIL("%s: forced algorithm fell back to the previous component", label);
    else if (d.which >= 0 && 0 != strcmp(lt_alg_name(LT_ALLREDUCE, d.which), "pairwise") &&
             alg_may_serve(lt_alg_name(LT_ALLREDUCE, d.which), 1, c->size, LO_T_DOUBLE, ok) == 0)
        FAIL("%s: %s ran on an inexact float op", label, lt_alg_name(LT_ALLREDUCE, d.which));

    double *all = malloc(sizeof(double) * count * c->size);
    MPI_Allgather(out, count * (int) sizeof(double), MPI_BYTE, all, count * (int) sizeof(double), MPI_BYTE, c->oracle);
    int diff_rank = -1, diff_i = -1;
    for (int r = 0; r < c->size && diff_rank < 0; r++)
        for (int i = 0; i < count; i++)
            if (0 != memcmp(&all[(size_t) r * count + i], &out[i], sizeof(double))) {
                diff_rank = r;
                diff_i = i;
                break;
            }
    nchecks++;
    if (diff_rank >= 0)
        FAIL("%s: result differs between ranks: element %d is %.17g (sign %d) here, %.17g (sign %d) on rank %d", label,
             diff_i, out[diff_i], signbit(out[diff_i]) ? 1 : 0, all[(size_t) diff_rank * count + diff_i],
             signbit(all[(size_t) diff_rank * count + diff_i]) ? 1 : 0, diff_rank);
    for (int i = 0; i < count; i++) {
        /* max / min: the value (a zero of either sign; whether a NaN comes out depends
         * on the order of the combines, so elements with one are checked for identity
         * only) */
        const int bad = MPI_SUM == op ? !(fabs(out[i] - ref[i]) <= 1e-12 * sumabs[i])
                                      : !has_nan[i] && !(out[i] == ref[i]);
        if (bad) {
            FAIL("%s: element %d = %.17g, expected %.17g", label, i, out[i], ref[i]);
            break;
        }
    }
    free(all);
    free(in), free(out), free(ref), free(sumabs), free(has_nan);
}

static void bit_identity(const comm_t *c, const setting_t *s)
{
    if (c->size == 1) return;
    bit_identity_op(c, s, MPI_SUM, "SUM", 255);
    bit_identity_op(c, s, MPI_MAX, "MAX", 255);
    bit_identity_op(c, s, MPI_MIN, "MIN", 255);
}

/* ------------------------------------------------------------------------- */
/* bad control-variable values                                               */

static void bad_params(const comm_t *c)
{
    static const setting_t autos = {"auto", 0};
    int rc;
    /* 1. unknown algorithm name: loom warns and behaves exactly as auto, so the same
     * counter (a loom algorithm, or the fallback to the previous component) moves */
    for (int ci = 0; ci < NCASES; ci++) {
        if (!((cases[ci].t == LO_T_INT && cases[ci].o == LO_O_SUM) || cases[ci].t == LO_T_MAT)) continue;
        void *exp = expected_small(c, ci);
        call_t k = {c, &autos, cases[ci].t, cases[ci].o, SMALL_MAX, 0, 0, ci};
        lt_counts_t b, a;
        lt_diff_t d_auto, d;
        lt_cvar_write_str("coll_loom_allreduce_algorithm", "auto");
        lt_read(LT_ALLREDUCE, &b);
        run_call(&k, exp);
        lt_read(LT_ALLREDUCE, &a);
        lt_diff(LT_ALLREDUCE, &b, &a, &d_auto);
        rc = lt_cvar_write_str("coll_loom_allreduce_algorithm", "nonsense");
        if (verbose && wrank == 0 && 0 == ci)
            printf("bad-param: write coll_loom_allreduce_algorithm=nonsense: %s\n", lt_errstr(rc));
        lt_read(LT_ALLREDUCE, &b);
        run_call(&k, exp);
        lt_read(LT_ALLREDUCE, &a);
        lt_diff(LT_ALLREDUCE, &b, &a, &d);
        if (c->size > 1 && (d.changed != 1 || d.which != d_auto.which))
            FAIL("bad-param coll_loom_allreduce_algorithm=nonsense comm=%s type=%s op=%s: expected what auto "
                 "ran (%s), got %s",
                 c->name, lo_tname[k.t], lo_oname[k.o], d_auto.desc, d.desc);
        free(exp);
    }
    /* 2. knobs 0 and 17 (out of 1..16): loom warns and uses the default */
    const char *algs[2] = {"dissemination", "bruck"};
    const int badn[2] = {0, 17};
    for (int a = 0; a < 2; a++) {
        if (lt_alg_index(LT_ALLREDUCE, algs[a]) < 0) continue;
        for (int b = 0; b < 2; b++) {
            rc = lt_cvar_write_str("coll_loom_allreduce_algorithm", algs[a]);
            int rk = lt_cvar_write_int(lt_knob_cvar(algs[a]), badn[b]);
            if (verbose && wrank == 0)
                printf("bad-param: %s=%d: %s\n", lt_knob_cvar(algs[a]), badn[b], lt_errstr(rk));
            for (int ci = 0; ci < NCASES; ci++) {
                if (!(cases[ci].t == LO_T_INT && (cases[ci].o == LO_O_MAX || cases[ci].o == LO_O_SUM))) continue;
                void *exp = expected_small(c, ci);
                /* MAX is idempotent, so both algorithms serve it at any P whatever the knob */
                setting_t forced = {"", 0};
                snprintf(forced.alg, sizeof(forced.alg), "%s", algs[a]);
                setting_t as_auto = {"auto", 0};
                call_t k = {c, cases[ci].o == LO_O_MAX ? &forced : &as_auto, LO_T_INT, cases[ci].o, SMALL_MAX,
                            1, 0, ci};
                lt_counts_t b0, a0;
                lt_diff_t d;
                lt_read(LT_ALLREDUCE, &b0);
                run_call(&k, exp);
                lt_read(LT_ALLREDUCE, &a0);
                lt_diff(LT_ALLREDUCE, &b0, &a0, &d);
                if (c->size > 1 && (d.changed != 1 || d.which < 0))
                    FAIL("bad-param %s=%d comm=%s op=%s: expected a loom algorithm to serve, got %s",
                         lt_knob_cvar(algs[a]), badn[b], c->name, lo_oname[k.o], d.desc);
                free(exp);
            }
            (void) rc;
        }
    }
    restore_defaults();
}

/* ------------------------------------------------------------------------- */

static void make_comms(comm_t *cs, int *ncs)
{
    int n = 0;
    MPI_Comm split;
    /* two halves by parity; keys pseudo-random so the order differs from WORLD's */
    int key = (int) (lo_mix64((uint64_t) wrank * 7919u + 17u) % 1000003u);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, key, &split);

    cs[n++] = (comm_t){"world", MPI_COMM_WORLD, MPI_COMM_NULL, 0, 0, 0};
    cs[n++] = (comm_t){"split", split, MPI_COMM_NULL, 0, 0, 1};
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    cs[n++] = (comm_t){"dup", dup, MPI_COMM_NULL, 0, 0, 1};
    cs[n++] = (comm_t){"self", MPI_COMM_SELF, MPI_COMM_NULL, 0, 0, 0};
    for (int i = 0; i < n; i++) {
        MPI_Comm_rank(cs[i].comm, &cs[i].rank);
        MPI_Comm_size(cs[i].comm, &cs[i].size);
        MPI_Comm_set_errhandler(cs[i].comm, MPI_ERRORS_RETURN);
        lt_dup_with_pref(cs[i].comm, "tuned,^loom", &cs[i].oracle);
    }
    *ncs = n;
}

static int build_settings(setting_t *ss, int max)
{
    int n = 0;
    ss[n++] = (setting_t){"auto", 0};
    for (int a = 0; a < lt_nalgs(LT_ALLREDUCE) && n < max; a++) {
        const char *name = lt_alg_name(LT_ALLREDUCE, a);
        if (0 == strcmp(name, "dissemination")) {
            static const int ns[] = {1, 2, 3, 4};
            for (int j = 0; j < 4 && n < max; j++) {
                ss[n] = (setting_t){"", ns[j]};
                snprintf(ss[n++].alg, LT_NAME_LEN, "%s", name);
            }
        } else if (0 == strcmp(name, "bruck")) {
            static const int ns[] = {1, 2, 3, 5};
            for (int j = 0; j < 4 && n < max; j++) {
                ss[n] = (setting_t){"", ns[j]};
                snprintf(ss[n++].alg, LT_NAME_LEN, "%s", name);
            }
        } else if (size_index(name) >= 0) {
            /* the table's values (fewer from 16 processes on, which oversubscribe CI's
             * cores; only when loom has the knob: test_colls requires it, this test need not) */
            const int *ns = size_values[size_index(name)];
            int have = size_default[size_index(name)] >= 0;
            for (int j = 0; j < (!have ? 1 : wsize >= 16 ? 2 : 3) && n < max; j++) {
                ss[n] = (setting_t){"", ns[j]};
                snprintf(ss[n++].alg, LT_NAME_LEN, "%s", name);
            }
        } else {
            ss[n] = (setting_t){"", 0};
            snprintf(ss[n++].alg, LT_NAME_LEN, "%s", name);
        }
    }
    return n;
}

/* The small matrix on one communicator under the current cvar values. */
static void run_matrix(const comm_t *c, const setting_t *s, void **exps, int with_count0)
{
    static const long counts[] = {0, 1, SMALL_MAX};
    for (int ci = 0; ci < NCASES; ci++) {
        for (int j = with_count0 ? 0 : 1; j < 3; j++) {
            for (int ip = 0; ip < 2; ip++) {
                call_t k = {c, s, cases[ci].t, cases[ci].o, counts[j], ip, 0, ci};
                run_call(&k, exps[ci]);
            }
        }
    }
}

static void big_calls(const comm_t *c, const setting_t *settings, int nsettings, int hier_only)
{
    for (int si = 0; si < nsettings; si++) {
        const setting_t *s = &settings[si];
        if (hier_only && 0 != strcmp(s->alg, "hierarchical")) continue;
        /* hierarchical: the leaders' ring, or on nodes of equal size one ring per local
         * index (its own segments, and on the first communicator 8000-byte ones: uneven,
         * many) */
        const int hier = 0 == strcmp(s->alg, "hierarchical"), hseg = hier && default_hseg >= 0;
        int want_int = 0 == strcmp(s->alg, "auto") || 0 == strcmp(s->alg, "pairwise") || hier ||
                       (0 == strcmp(s->alg, "bruck") && s->n == 2) || (0 == strcmp(s->alg, "dissemination") && s->n == 1);
        int want_dbl = 0 == strcmp(s->alg, "auto") || 0 == strcmp(s->alg, "pairwise") || hier;
        if (!want_int && !want_dbl) continue;
        if (MPI_SUCCESS != apply_setting(s)) continue;
        for (int h = 0; h < (hseg && !hier_only ? 2 : 1); h++) {
            if (hseg && MPI_SUCCESS != lt_cvar_write_int("coll_loom_hierarchical_segment_size", h ? 8000 : default_hseg)) {
                FAIL("cannot set coll_loom_hierarchical_segment_size through MPI_T");
                break;
            }
            for (int d = 0; d < 2; d++) {
                if (!(d ? want_dbl : want_int)) continue;
                call_t k = {c, s, d ? LO_T_DOUBLE : LO_T_INT, LO_O_SUM, BIG_COUNT, d ? !(si & 1) : (si & 1), 1, -1};
                double t = MPI_Wtime();
                run_call(&k, NULL);
                if (verbose && wrank == 0)
                    printf("  1M %s SUM alg=%s n=%d: %.2f s\n", lo_tname[k.t], s->alg, s->n, MPI_Wtime() - t);
            }
            /* the same bits on every rank for an inexact sum of 512 KiB */
            if (hier && c->size > 1) bit_identity_op(c, s, MPI_SUM, "SUM", 1 << 16);
        }
        if (hseg) lt_cvar_write_int("coll_loom_hierarchical_segment_size", default_hseg);
    }
    restore_defaults();
}

/* Receive buffers 1-48 bytes after the send buffer modulo 4 KiB (what malloc gives two
 * equal buffers of a multiple of 4 KiB): the case loom's copies take another path for
 * (opal/loom/loom_copy.h).  Double sums of 4, 32 and 256 KiB with auto, pairwise and the
 * ring; every element and the guard bytes around the result are checked. */
static void aliased_buffers(const comm_t *c, const setting_t *settings, int nsettings)
{
    static const size_t sizes[] = {4096, 32768, 262144};
    static const int dists[] = {1, 16, 48};
    const size_t maxb = 262144, guard = 64;
    char *smem = NULL, *rmem = NULL;

    if (c->size < 2) {
        return; /* loom never serves a communicator of one rank */
    }
    if (0 != posix_memalign((void **) &smem, 4096, maxb) || 0 != posix_memalign((void **) &rmem, 4096, maxb + 4096)) {
        FAIL("aliased buffers: out of memory");
        free(smem);
        return;
    }
    for (int si = 0; si < nsettings; si++) {
        const setting_t *st = &settings[si];
        if ((0 != strcmp(st->alg, "auto") && 0 != strcmp(st->alg, "pairwise") && 0 != strcmp(st->alg, "ring")) ||
            MPI_SUCCESS != apply_setting(st)) {
            continue;
        }
        for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
            for (size_t k = 0; k < sizeof(dists) / sizeof(dists[0]); k++) {
                const long n = (long) (sizes[z] / sizeof(double));
                double *sb = (double *) smem, *rb = (double *) (rmem + dists[k]);
                lt_counts_t before, after;
                lt_diff_t d;
                long bad = 0;
                memset(rmem, 0x5A, maxb + 4096);
                for (long i = 0; i < n; i++) sb[i] = (double) (c->rank + 1) + (double) (i % 7);
                lt_read(LT_ALLREDUCE, &before);
                MPI_Allreduce(sb, rb, (int) n, MPI_DOUBLE, MPI_SUM, c->comm);
                lt_read(LT_ALLREDUCE, &after);
                lt_diff(LT_ALLREDUCE, &before, &after, &d);
                for (long i = 0; i < n; i++) {
                    double v; /* rb may be misaligned on purpose: read it bytewise */
                    memcpy(&v, (const char *) rb + (size_t) i * sizeof(v), sizeof(v));
                    bad += v != (double) c->size * (c->size + 1) / 2 + (double) c->size * (double) (i % 7);
                }
                for (size_t g = 0; g < guard && (size_t) dists[k] > g; g++) bad += 0x5A != (unsigned char) rmem[g];
                for (size_t g = 0; g < guard; g++) bad += 0x5A != (unsigned char) rmem[dists[k] + sizes[z] + g];
                nchecks++;
                ncalls++;
                if (bad) {
                    FAIL("aliased buffers, alg=%s, %zu bytes, receive buffer %d bytes past the send buffer mod 4 KiB: "
                         "%ld wrong elements or guard bytes", st->alg, sizes[z], dists[k], bad);
                }
                /* a forced algorithm must have served; auto may hand the call on (several
                 * nodes, 64 KiB - 1 MiB) */
                if (d.changed != 1 || d.delta != 1 ||
                    !(d.which >= 0 || (LT_WHICH_FALLBACK == d.which && 0 == strcmp(st->alg, "auto")))) {
                    FAIL("aliased buffers, alg=%s, %zu bytes: not served by one loom algorithm (%s)", st->alg,
                         sizes[z], d.desc);
                }
            }
        }
    }
    restore_defaults();
    free(smem);
    free(rmem);
}

/* Preference info key: "loom" must be served by loom, "tuned,^loom" must not. */
static void preference_check(void)
{
    MPI_Comm pl, pt;
    lt_counts_t b, a;
    lt_diff_t d;
    int x = wrank, y = 0;
    if (wsize == 1) return;
    lt_dup_with_pref(MPI_COMM_WORLD, "loom", &pl);
    lt_dup_with_pref(MPI_COMM_WORLD, "tuned,^loom", &pt);
    lt_read(LT_ALLREDUCE, &b);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, pl);
    lt_read(LT_ALLREDUCE, &a);
    lt_diff(LT_ALLREDUCE, &b, &a, &d);
    nchecks++;
    if (d.changed != 1 || d.which < 0)
        FAIL("preference: dup_with_info(ompi_comm_coll_preference=loom): expected a loom algorithm, got %s", d.desc);
    if (y != wsize * (wsize - 1) / 2) FAIL("preference: loom comm: sum %d, expected %d", y, wsize * (wsize - 1) / 2);
    lt_read(LT_ALLREDUCE, &b);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, pt);
    lt_read(LT_ALLREDUCE, &a);
    lt_diff(LT_ALLREDUCE, &b, &a, &d);
    nchecks++;
    if (d.changed != 0)
        FAIL("preference: dup_with_info(ompi_comm_coll_preference=tuned,^loom): loom must not serve, got %s", d.desc);
    if (y != wsize * (wsize - 1) / 2) FAIL("preference: tuned comm: sum %d, expected %d", y, wsize * (wsize - 1) / 2);
    MPI_Comm_free(&pl);
    MPI_Comm_free(&pt);
}

int main(int argc, char **argv)
{
    const char *env_alg = NULL;
    int default_check = 0;
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--env-alg") && i + 1 < argc) env_alg = argv[++i];
        else if (0 == strcmp(argv[i], "--default-check")) default_check = 1;
        else if (0 == strcmp(argv[i], "-v")) verbose = 1;
        else if (0 == strcmp(argv[i], "--max-report") && i + 1 < argc) lt_max_report = atoi(argv[++i]);
        else {
            if (wrank == 0) fprintf(stderr, "usage: %s [--env-alg NAME | --default-check] [-v] [--max-report N]\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    t0 = MPI_Wtime();
    lo_setup(&oracle_cfg);

    int npv = lt_init();
    if (npv <= 0) {
        if (wrank == 0)
            fprintf(stderr, "FAIL test_allreduce: no coll_loom_* performance variable exists: loom is not loaded "
                            "(check mca_base_component_path / ompi_info | grep loom)\n");
        MPI_Finalize();
        return 2;
    }
    if (lt_nalgs(LT_ALLREDUCE) == 0 || !lt_has_fallback(LT_ALLREDUCE))
        FAIL("loom exposes %d allreduce algorithm counters and %s fallback counter", lt_nalgs(LT_ALLREDUCE),
             lt_has_fallback(LT_ALLREDUCE) ? "a" : "no");
    static const char *required[] = {"pairwise", "dissemination", "bruck"};
    for (int i = 0; i < 3; i++)
        if (lt_alg_index(LT_ALLREDUCE, required[i]) < 0)
            FAIL("no counter coll_loom_allreduce_%s_calls: algorithm %s missing", required[i], required[i]);
    if (wrank == 0 && verbose) {
        printf("loom pvars: %d; allreduce algorithms:", npv);
        for (int i = 0; i < lt_nalgs(LT_ALLREDUCE); i++) printf(" %s", lt_alg_name(LT_ALLREDUCE, i));
        printf("\n");
    }
    {
        int rc = lt_cvar_read_str("coll_loom_allreduce_algorithm", default_alg, sizeof(default_alg));
        if (MPI_SUCCESS != rc) {
            FAIL("cannot read cvar coll_loom_allreduce_algorithm: %s", lt_errstr(rc));
            snprintf(default_alg, sizeof(default_alg), "auto");
            cvars_ok = 0;
        }
        if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_dissemination_ways", &default_ways)) default_ways = -1;
        if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_bruck_ports", &default_ports)) default_ports = -1;
        for (int k = 0; k < NSIZE_KNOBS; k++) {
            if (MPI_SUCCESS != lt_cvar_read_int(size_knob[k], &size_default[k])) size_default[k] = -1;
        }
        if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_hierarchical_segment_size", &default_hseg)) default_hseg = -1;
        if (default_ways <= 0) FAIL("cannot read cvar coll_loom_dissemination_ways");
        if (default_ports <= 0) FAIL("cannot read cvar coll_loom_bruck_ports");
    }

    comm_t cs[8];
    int ncs = 0;
    make_comms(cs, &ncs);
    void **exps[8];
    for (int c = 0; c < ncs; c++) {
        exps[c] = calloc(NCASES, sizeof(void *));
        for (int ci = 0; ci < NCASES; ci++) exps[c][ci] = expected_small(&cs[c], ci);
    }

    if (env_alg || default_check) {
        /* The setting comes from outside: do not write any cvar. */
        setting_t s = {"auto", 0};
        if (env_alg) {
            if (0 != strcmp(default_alg, env_alg))
                FAIL("coll_loom_allreduce_algorithm is \"%s\", expected \"%s\" from the environment / --mca", default_alg,
                     env_alg);
            snprintf(s.alg, sizeof(s.alg), "%s", env_alg);
            if (0 == strcmp(env_alg, "dissemination")) s.n = default_ways;
            if (0 == strcmp(env_alg, "bruck")) s.n = default_ports;
        } else if (0 != strcmp(default_alg, "auto")) {
            FAIL("coll_loom_allreduce_algorithm is \"%s\" by default, expected \"auto\"", default_alg);
        }
        for (int c = 0; c < ncs; c++) run_matrix(&cs[c], &s, exps[c], 0);
        if (default_check && wsize > 1) {
            /* loom must be chosen by default: a small int sum on WORLD is served by loom */
            lt_counts_t b, a;
            lt_diff_t d;
            int x = 1, y = 0;
            lt_read(LT_ALLREDUCE, &b);
            MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            lt_read(LT_ALLREDUCE, &a);
            lt_diff(LT_ALLREDUCE, &b, &a, &d);
            nchecks++;
            if (d.changed != 1 || d.which < 0)
                FAIL("default selection: a 1-int MPI_SUM on MPI_COMM_WORLD was not served by a loom algorithm (%s)",
                     d.desc);
            if (y != wsize) FAIL("default selection: sum %d, expected %d", y, wsize);
        }
    } else {
        setting_t ss[64];
        int nss = build_settings(ss, 64);
        for (int c = 0; c < ncs; c++) {
            double tc = MPI_Wtime();
            for (int si = 0; si < nss; si++) {
                if (MPI_SUCCESS != apply_setting(&ss[si])) continue;
                run_matrix(&cs[c], &ss[si], exps[c], 1);
                if (0 != strcmp(cs[c].name, "self")) bit_identity(&cs[c], &ss[si]);
            }
            restore_defaults();
            if (verbose && wrank == 0) printf("comm %s: %.2f s\n", cs[c].name, MPI_Wtime() - tc);
        }
        double tb = MPI_Wtime();
        big_calls(&cs[0], ss, nss, 0);
        /* a sub-communicator in another rank order: other node sizes, another ring order */
        if (ncs > 1 && cs[1].size > 1) big_calls(&cs[1], ss, nss, 1);
        aliased_buffers(&cs[0], ss, nss);
        if (verbose && wrank == 0) printf("1M calls: %.2f s\n", MPI_Wtime() - tb);
        bad_params(&cs[0]);
        if (ncs > 1) bad_params(&cs[1]);
        preference_check();
    }

    /* Every rank's verdict, over a communicator loom does not serve. */
    long tot[4] = {lt_nfail, nchecks, ncalls, lo_userop_bad_calls}, sum[4];
    MPI_Allreduce(tot, sum, 4, MPI_LONG, MPI_SUM, cs[0].oracle);
    if (wrank == 0) {
        printf("test_allreduce np=%d mode=%s: %ld allreduce calls, %ld checks, %ld failures (%.1f s)\n", wsize,
               env_alg ? "env-alg" : default_check ? "default" : "full", sum[2], sum[1], sum[0], MPI_Wtime() - t0);
        fflush(stdout);
    }
    for (int c = 0; c < ncs; c++) {
        for (int ci = 0; ci < NCASES; ci++) free(exps[c][ci]);
        free(exps[c]);
        MPI_Comm_free(&cs[c].oracle);
        if (cs[c].own) MPI_Comm_free(&cs[c].comm);
    }
    lo_free();
    lt_fini();
    MPI_Finalize();
    return sum[0] ? 1 : 0;
}
