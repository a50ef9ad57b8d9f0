/*
 * loom: the stale-synchronous allreduce (Iakymchuk et al. III.A), opt-in per communicator with
 * the info key loom_allreduce_slack = N.
 *
 * 1. Staleness and progress.  Every contribution encodes who made it and when: an
 *    element is a vector (count, clock of rank 0, ..., clock of rank P-1), rank r
 *    contributes (1, -1, ..., c, ..., -1) at its clock c, and a commutative user op adds
 *    the counts and takes the maximum of the clocks.  One rank sleeps in every
 *    iteration.  At every call each rank checks, in every element, that every rank's
 *    contribution is there exactly once (count == P, no clock missing) and from within
 *    the slack (clock >= c - N), its own current one where the algorithm promises it
 *    (the hypercube: always; the ring: within the slack), and the MPI_T variables
 *    coll_loom_allreduce_clock and coll_loom_allreduce_oldest_clock.  A fast rank must
 *    have run ahead of the slow one (seen its contribution at least one clock old) when
 *    N >= 2, and none when N = 0.  For both algorithms (hypercube, ring), blocking,
 *    several outstanding MPI_Iallreduce, and persistent requests.
 * 2. Exactness: with N = 0 the result is bit for bit that of the ordinary allreduce of
 *    the same algorithm (random doubles), and an integer sum equals the one computed
 *    here; in place too.
 * 3. The rest: a non-commutative op runs the ordinary allreduce (exact, clock not
 *    advanced), "off" and bad values keep the allreduce synchronous, MPI_Comm_set_info
 *    switches it on, another count drains and starts again, and communicators are freed
 *    with contributions still in flight (valgrind runs this test for leaks).
 *
 * Usage: test_ssp [-v].  Exit status 0 when every rank passed, 1 on any failure, 2 when
 * loom is absent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "loom_test_pcoll.h"
#include "loom_test_util.h"

static int wrank, wsize, verbose;
static long nchecks;
#define FAIL(...) lt_fail(wrank, __VA_ARGS__)

static MPI_T_pvar_session session;
enum { V_OLDEST, V_CLOCK, V_WAITS, NV };
static const char *vnames[NV] = {"coll_loom_allreduce_oldest_clock", "coll_loom_allreduce_clock",
                                 "coll_loom_allreduce_stale_waits"};
static int vindex[NV];

static long long read_bound(int v, MPI_Comm comm)
{
    unsigned long long val = 0;
    if (MPI_SUCCESS != lt_comm_pvar_read(session, vindex[v], comm, &val)) {
        FAIL("cannot read %s on a communicator", vnames[v]);
        return -99;
    }
    return (long long) val;
}

static void set_key(MPI_Comm comm, const char *value)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "loom_allreduce_slack", value);
    MPI_Comm_set_info(comm, info);
    MPI_Info_free(&info);
}

static MPI_Comm dup_slack(MPI_Comm base, int slack)
{
    MPI_Comm c;
    MPI_Info info;
    char v[16];
    snprintf(v, sizeof(v), "%d", slack);
    MPI_Info_create(&info);
    MPI_Info_set(info, "loom_allreduce_slack", v);
    MPI_Comm_dup_with_info(base, info, &c);
    MPI_Info_free(&info);
    return c;
}

static void force_alg(const char *alg)
{
    if (MPI_SUCCESS != lt_cvar_write_str("coll_loom_allreduce_algorithm", alg))
        FAIL("cannot set coll_loom_allreduce_algorithm to %s", alg);
}

/* ---- 1. staleness ---------------------------------------------------------------------- */

static int clock_P; /* the element's rank count (the op's datatype has clock_P + 1 int64) */

/* count: sum; clocks: maximum (-1 is "absent") */
static void clock_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int64_t *a = in, *b = inout;
    (void) dt;
    for (long e = 0; e < *len; e++, a += clock_P + 1, b += clock_P + 1) {
        b[0] += a[0];
        for (int r = 1; r <= clock_P; r++) b[r] = a[r] > b[r] ? a[r] : b[r];
    }
}

typedef enum { F_BLOCKING, F_NB, F_PERSISTENT } form_t;
static const char *fname[3] = {"blocking", "non-blocking", "persistent"};

/* Checks one result of the call at clock c; returns the lag of `slow` seen (c - its clock). */
static long check_clocks(const int64_t *res, long n, int P, int me, long long c, int slack, int own_current,
                         int slow, const char *what)
{
    long bad = 0, lag = 0;
    for (long e = 0; e < n; e++) {
        const int64_t *v = res + e * (P + 1);
        if (v[0] != P) {
            if (bad++ < 3) FAIL("%s clock %lld element %ld: %lld contributions, expected %d", what, c, e, (long long) v[0], P);
            continue;
        }
        for (int r = 0; r < P; r++) {
            const int64_t cr = v[1 + r];
            if (cr < 1 || cr < c - slack) {
                if (bad++ < 3) FAIL("%s clock %lld element %ld: rank %d's contribution is from clock %lld (slack %d)", what, c, e, r, (long long) cr, slack);
            }
            if (r == me && own_current && cr != c) {
                if (bad++ < 3) FAIL("%s clock %lld element %ld: own contribution from clock %lld", what, c, e, (long long) cr);
            }
        }
        if (c - v[1 + slow] > lag) lag = (long) (c - v[1 + slow]);
    }
    nchecks++;
    return lag;
}

static void fill_clock(int64_t *buf, long n, int P, int me, long long c)
{
    for (long e = 0; e < n; e++) {
        int64_t *v = buf + e * (P + 1);
        v[0] = 1;
        for (int r = 0; r < P; r++) v[1 + r] = -1;
        v[1 + me] = c;
    }
}

#define ITERS 30

static void staleness_case(MPI_Comm base, const char *alg, int slack, form_t form, long n)
{
    int P, me;
    MPI_Comm comm = dup_slack(base, slack);
    MPI_Datatype el;
    MPI_Op op;
    int slow; /* the last rank: the hypercube's 2^k + q fold never takes it out */
    long maxlag = 0, oldest_bad = 0;
    long long c0;
    char what[128];
    int64_t *in, *out;

    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    slow = P - 1;
    clock_P = P;
    MPI_Type_contiguous(P + 1, MPI_INT64_T, &el);
    MPI_Type_commit(&el);
    MPI_Op_create(clock_op, 1, &op);
    in = malloc(sizeof(int64_t) * (size_t) (n * (P + 1) * 3));
    out = malloc(sizeof(int64_t) * (size_t) (n * (P + 1) * 3));
    snprintf(what, sizeof(what), "%s %s slack %d n %ld np %d", alg, fname[form], slack, n, P);
    force_alg(alg);
    c0 = read_bound(V_CLOCK, comm);
    if (c0 != 0) FAIL("%s: clock %lld before the first call", what, c0);
    const lt_coll_t lc = F_BLOCKING == form ? LT_ALLREDUCE : LT_NB(LT_ALLREDUCE);
    lt_counts_t before, after;
    lt_diff_t d;
    lt_read(lc, &before);

    if (F_BLOCKING == form) {
        for (long long c = 1; c <= ITERS; c++) {
            if (me == slow) usleep(8000);
            fill_clock(in, n, P, me, c);
            MPI_Allreduce(in, out, (int) n, el, op, comm);
            long lag = check_clocks(out, n, P, me, c, slack, strcmp(alg, "ring") != 0, slow, what);
            if (lag > maxlag) maxlag = lag;
            nchecks++;
            if (read_bound(V_CLOCK, comm) != c) FAIL("%s: coll_loom_allreduce_clock %lld, expected %lld", what, read_bound(V_CLOCK, comm), c);
            long long o = read_bound(V_OLDEST, comm), mn = c;
            for (long e = 0; e < n; e++)
                for (int r = 0; r < P; r++) if (out[e * (P + 1) + 1 + r] < mn) mn = out[e * (P + 1) + 1 + r];
            if (o != mn) oldest_bad++;
        }
    } else if (F_NB == form) {
        /* three calls outstanding at once, in clock order */
        for (long long c = 1; c <= ITERS; c += 3) {
            MPI_Request req[3];
            if (me == slow) usleep(30000);
            for (int k = 0; k < 3; k++) {
                fill_clock(in + k * n * (P + 1), n, P, me, c + k);
                MPI_Iallreduce(in + k * n * (P + 1), out + k * n * (P + 1), (int) n, el, op, comm, &req[k]);
            }
            MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
            for (int k = 0; k < 3; k++) {
                long lag = check_clocks(out + k * n * (P + 1), n, P, me, c + k, slack, strcmp(alg, "ring") != 0, slow, what);
                if (lag > maxlag) maxlag = lag;
            }
        }
    } else {
        MPI_Request req;
        MPI_Allreduce_init(in, out, (int) n, el, op, comm, MPI_INFO_NULL, &req);
        for (long long c = 1; c <= ITERS; c++) {
            if (me == slow) usleep(8000);
            fill_clock(in, n, P, me, c);
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            long lag = check_clocks(out, n, P, me, c, slack, strcmp(alg, "ring") != 0, slow, what);
            if (lag > maxlag) maxlag = lag;
        }
        MPI_Request_free(&req);
    }
    /* every call served by loom, counted under the algorithm whose schedule ran */
    lt_read(lc, &after);
    lt_diff(lc, &before, &after, &d);
    nchecks++;
    if (d.changed != 1 || d.which != lt_alg_index(LT_ALLREDUCE, alg) || d.delta != ITERS)
        FAIL("%s: loom counters moved by %s, expected %s+%d", what, d.desc, alg, ITERS);
    nchecks++;
    if (oldest_bad) FAIL("%s: coll_loom_allreduce_oldest_clock differs from the result's oldest clock %ld times", what, oldest_bad);
    /* progress: the fast ranks ran ahead of the slow one, within the slack */
    nchecks++;
    if (maxlag > slack) FAIL("%s: saw rank %d's contribution %ld clocks old", what, slow, maxlag);
    if (0 == slack && maxlag != 0) FAIL("%s: slack 0 but a lag of %ld", what, maxlag);
    {
        /* the fast ranks (any of them: scheduling on shared cores decides which) ran ahead */
        long fast = me != slow ? maxlag : 0, best = 0;
        MPI_Allreduce(&fast, &best, 1, MPI_LONG, MPI_MAX, base);
        if (slack >= 2 && best < 1) FAIL("%s: no fast rank ever ran ahead of the slow rank %d", what, slow);
    }
    if (verbose) printf("[%d] %s: largest lag %ld, waits %lld\n", wrank, what, maxlag, read_bound(V_WAITS, comm));
    force_alg("auto");
    /* freed with the last contributions still on their way */
    MPI_Comm_free(&comm);
    MPI_Op_free(&op);
    MPI_Type_free(&el);
    free(in);
    free(out);
}

/* ---- 2. exactness ------------------------------------------------------------------------ */

static void exact_case(MPI_Comm base, const char *alg, long n, int in_place)
{
    int P, me;
    MPI_Comm ssp = dup_slack(base, 0), plain;
    double *in = malloc(sizeof(double) * (size_t) n), *a = malloc(sizeof(double) * (size_t) n),
           *b = malloc(sizeof(double) * (size_t) n);
    long *li = malloc(sizeof(long) * (size_t) n), *lo = malloc(sizeof(long) * (size_t) n);
    long bad = 0;
    unsigned long long s = 88172645463325252ull;

    MPI_Comm_dup(base, &plain);
    MPI_Comm_size(ssp, &P);
    MPI_Comm_rank(ssp, &me);
    force_alg(alg);
    for (int it = 1; it <= 3; it++) {
        s ^= (unsigned long long) (me + 1) * 0x9E3779B97F4A7C15ull + (unsigned long long) it;
        for (long i = 0; i < n; i++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            in[i] = (double) (s % 2000003) / 7.0 - 1.0e5 + 1.0 / (double) (i + 3);
            li[i] = (long) (s % 1000) - 500 + me;
        }
        MPI_Allreduce(in, b, (int) n, MPI_DOUBLE, MPI_SUM, plain);
        if (in_place) {
            memcpy(a, in, sizeof(double) * (size_t) n);
            MPI_Allreduce(MPI_IN_PLACE, a, (int) n, MPI_DOUBLE, MPI_SUM, ssp);
        } else {
            MPI_Allreduce(in, a, (int) n, MPI_DOUBLE, MPI_SUM, ssp);
        }
        nchecks++;
        if (0 != memcmp(a, b, sizeof(double) * (size_t) n))
            FAIL("%s slack 0 n %ld%s: not bit for bit the ordinary allreduce", alg, n, in_place ? " in place" : "");
        /* integers: the sum computed here */
        MPI_Allreduce(li, lo, (int) n, MPI_LONG, MPI_SUM, ssp);
        {
            long *all = malloc(sizeof(long) * (size_t) n * (size_t) P);
            MPI_Allgather(li, (int) n, MPI_LONG, all, (int) n, MPI_LONG, plain);
            for (long i = 0; i < n; i++) {
                long want = 0;
                for (int r = 0; r < P; r++) want += all[(long) r * n + i];
                bad += lo[i] != want;
            }
            free(all);
        }
        nchecks++;
        if (bad) FAIL("%s slack 0 n %ld: %ld integer sums wrong", alg, n, bad);
    }
    nchecks++;
    /* 3 double calls + 3 long calls (a new signature each time: drained, set up again) */
    if (read_bound(V_CLOCK, ssp) != 6) FAIL("%s: clock %lld after 6 calls: loom did not serve them", alg, read_bound(V_CLOCK, ssp));
    force_alg("auto");
    MPI_Comm_free(&ssp);
    MPI_Comm_free(&plain);
    free(in); free(a); free(b); free(li); free(lo);
}

/* ---- 3. the rest ------------------------------------------------------------------------- */

/* (v1, p1) o (v2, p2) = (v1 p2 + v2, p1 p2) mod M: concatenation of base-31 digits,
 * associative and not commutative */
static void concat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *x = in, *y = inout;
    (void) dt;
    for (int i = 0; i < *len; i++, x += 2, y += 2) {
        y[0] = (int) (((long) x[0] * y[1] + y[0]) % 1000003);
        y[1] = (int) (((long) x[1] * y[1]) % 1000003);
    }
}

static void misc_cases(MPI_Comm base)
{
    int P, me, v, want = 0, r, pv[2], pr[2];
    MPI_Comm comm = dup_slack(base, 3), plain;
    MPI_Datatype pair;
    MPI_Op op;

    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    /* non-commutative: the ordinary allreduce, rank order kept, clock not advanced */
    MPI_Op_create(concat_op, 0, &op);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    pv[0] = me + 1;
    pv[1] = 31;
    MPI_Allreduce(pv, pr, 1, pair, op, comm);
    for (int q = 0; q < P; q++) want = (int) (((long) want * 31 + q + 1) % 1000003);
    nchecks++;
    if (pr[0] != want) FAIL("non-commutative op on a slack communicator: %d, expected %d", pr[0], want);
    MPI_Type_free(&pair);
    v = me + 1;
    nchecks++;
    if (read_bound(V_CLOCK, comm) != 0) FAIL("non-commutative op advanced the clock");
    MPI_Op_free(&op);
    /* "off", then a bad value: synchronous; then on again */
    set_key(comm, "off");
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_SUM, comm);
    set_key(comm, "-4");
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_SUM, comm);
    nchecks++;
    if (read_bound(V_CLOCK, comm) != 0 || r != P * (P + 1) / 2) FAIL("\"off\" / bad slack: clock %lld, sum %d", read_bound(V_CLOCK, comm), r);
    set_key(comm, "1");
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_SUM, comm);
    nchecks++;
    if (read_bound(V_CLOCK, comm) != 1 || r != P * (P + 1) / 2) FAIL("set_info slack 1: clock %lld, sum %d", read_bound(V_CLOCK, comm), r);
    /* a communicator without the key: the pvar stays at 0 */
    MPI_Comm_dup(base, &plain);
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_SUM, plain);
    nchecks++;
    if (read_bound(V_CLOCK, plain) != 0) FAIL("a communicator without the key counts SSP calls");
    MPI_Comm_free(&plain);
    /* freed with a non-blocking call outstanding (MPI allows it): the call completes */
    {
        MPI_Request req;
        v = me + 1;
        MPI_Iallreduce(&v, &r, 1, MPI_INT, MPI_SUM, comm, &req);
        MPI_Comm_free(&comm);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        nchecks++;
        if (r != P * (P + 1) / 2) FAIL("Iallreduce outstanding at MPI_Comm_free: sum %d, expected %d", r, P * (P + 1) / 2);
    }
}

static void run_comm(MPI_Comm base, const char *bname)
{
    int P;
    MPI_Comm_size(base, &P);
    if (P < 2) return; /* loom takes no part in a communicator of one process */
    if (verbose && 0 == wrank) printf("-- %s (np %d)\n", bname, P);
    const char *algs[2] = {"pairwise", "ring"};
    for (int a = 0; a < 2; a++) {
        staleness_case(base, algs[a], 0, F_BLOCKING, 2 * P + 1);
        staleness_case(base, algs[a], 4, F_BLOCKING, 2 * P + 1);
        staleness_case(base, algs[a], 4, F_NB, 3);
        staleness_case(base, algs[a], 2, F_PERSISTENT, 2 * P + 1);
        exact_case(base, algs[a], 1, 0);
        exact_case(base, algs[a], 1001, 1);
        exact_case(base, algs[a], 20000, 0);
    }
    misc_cases(base);
}

int main(int argc, char **argv)
{
    MPI_Comm split;
    int provided;
    long tot[2], mine[2];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    verbose = argc > 1 && 0 == strcmp(argv[1], "-v");
    if (lt_init() <= 0) {
        if (0 == wrank) fprintf(stderr, "test_ssp: loom is not loaded\n");
        MPI_Finalize();
        return 2;
    }
    lt_mpit_init(&provided);
    MPI_T_pvar_session_create(&session);
    for (int v = 0; v < NV; v++) {
        vindex[v] = lt_comm_pvar_index(vnames[v]);
        if (vindex[v] < 0) FAIL("no MPI_T variable %s bound to communicators", vnames[v]);
    }

    run_comm(MPI_COMM_WORLD, "world");
    /* a sub-communicator in another rank order */
    MPI_Comm_split(MPI_COMM_WORLD, wsize > 4 ? wrank % 2 : 0, (wrank * 7919) % 101, &split);
    run_comm(split, "shuffled split");
    MPI_Comm_free(&split);

    mine[0] = nchecks;
    mine[1] = lt_nfail;
    MPI_Allreduce(mine, tot, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == wrank)
        printf("test_ssp np=%d: %ld checks, %ld failures: %s\n", wsize, tot[0], tot[1], tot[1] ? "FAIL" : "PASS");
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    lt_fini();
    MPI_Finalize();
    return tot[1] ? 1 : 0;
}
