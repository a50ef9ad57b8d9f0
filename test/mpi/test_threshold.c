/*
 * loom: the opt-in thresholds of Iakymchuk et al. III.B, set per communicator with info keys:
 * loom_bcast_threshold, loom_reduce_threshold (the first ceil(F count) elements only),
 * loom_reduce_engage (the ranks of the first binomial stages only).
 *
 * On WORLD dup'ed with info and on a shuffled split, every root, blocking,
 * non-blocking and persistent forms, each rank checks:
 *   - the delivered elements against the root's data (bcast) or the sum computed
 *     here (reduce), and that every element beyond them kept its old value;
 *   - the MPI_T variables bound to the communicator (coll_loom_bcast_delivered,
 *     coll_loom_reduce_delivered, coll_loom_reduce_engaged): only loom sets them;
 *   - that MPI_Comm_set_info changes the threshold, that "1", a value out of (0, 1] or
 *     no key at all give the ordinary collective, and that a non-commutative op under
 *     loom_reduce_engage gets every rank's contribution.
 *
 * Communicators of one process are skipped: loom takes no part in them, so their
 * collectives ignore the keys.
 *
 * Usage: test_threshold [-v].  Exit status 0 when every rank passed, 1 on any failure,
 * 2 when loom is absent.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "loom_test_pcoll.h"
#include "loom_test_util.h"

static int wrank, wsize, verbose;
static long nchecks;
#define FAIL(...) lt_fail(wrank, __VA_ARGS__)

static MPI_T_pvar_session session;
enum { V_BCAST, V_REDUCE, V_ENGAGED, NV };
static const char *vnames[NV] = {"coll_loom_bcast_delivered", "coll_loom_reduce_delivered",
                                 "coll_loom_reduce_engaged"};
static int vindex[NV];

/* the value of a variable bound to comm */
static unsigned long long read_bound(int v, MPI_Comm comm)
{
    unsigned long long val = 0;
    if (MPI_SUCCESS != lt_comm_pvar_read(session, vindex[v], comm, &val)) {
        FAIL("cannot read %s on a communicator", vnames[v]);
        return ~0ull;
    }
    return val;
}

static void set_key(MPI_Comm comm, const char *key, const char *value)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, key, value);
    MPI_Comm_set_info(comm, info);
    MPI_Info_free(&info);
}

static long expect_part(double f, long count)
{
    long n = (long) ceil(f * (double) count);
    return n < count ? n : count;
}

static int value(int r, long i) { return (int) ((r + 1) * 1000 + i % 997); }

static void sum_noncomm(void *a, void *b, int *len, MPI_Datatype *dt);

typedef enum { F_BLOCKING, F_NB, F_PERSISTENT } form_t;
static const char *fname[3] = {"blocking", "non-blocking", "persistent"};

static void wait_form(form_t f, MPI_Request *req)
{
    if (F_PERSISTENT == f) {
        MPI_Start(req);
        MPI_Wait(req, MPI_STATUS_IGNORE);
        MPI_Request_free(req);
    } else if (F_NB == f) {
        MPI_Wait(req, MPI_STATUS_IGNORE);
    }
}

static void bcast_case(MPI_Comm comm, const char *cname, double f, form_t form, int root, long count)
{
    int P, me;
    long want = expect_part(f, count), bad = 0;
    int *buf = malloc(sizeof(int) * (size_t) count);
    MPI_Request req;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    for (long i = 0; i < count; i++) buf[i] = me == root ? value(root, i) : -1 - (int) i;
    if (F_BLOCKING == form) MPI_Bcast(buf, (int) count, MPI_INT, root, comm);
    else if (F_NB == form) MPI_Ibcast(buf, (int) count, MPI_INT, root, comm, &req);
    else MPI_Bcast_init(buf, (int) count, MPI_INT, root, comm, MPI_INFO_NULL, &req);
    wait_form(form, &req);
    for (long i = 0; i < count; i++) {
        const int exp = me == root || i < want ? value(root, i) : -1 - (int) i;
        bad += buf[i] != exp;
    }
    nchecks++;
    if (bad) FAIL("%s bcast %s F=%g root %d count %ld: %ld elements wrong (expected %ld delivered)", fname[form],
                  cname, f, root, count, bad, want);
    nchecks++;
    if (read_bound(V_BCAST, comm) != (unsigned long long) want)
        FAIL("%s bcast %s F=%g: coll_loom_bcast_delivered = %llu, expected %ld", fname[form], cname, f,
             read_bound(V_BCAST, comm), want);
    free(buf);
}

/* reduce: sum over the contributing ranks of value(r, i); engaged: the ranks root,
 * root+1, ... (mod P) of the first binomial stages */
static void reduce_case(MPI_Comm comm, const char *cname, double f, double engage, form_t form, int root,
                        long count, int noncomm)
{
    int P, me, engaged = 1;
    long want = expect_part(f, count), bad = 0;
    int *in = malloc(sizeof(int) * (size_t) count), *out = malloc(sizeof(int) * (size_t) count);
    MPI_Request req;
    MPI_Op op = MPI_SUM;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    while (engaged < P && engaged < ceil(engage * P)) engaged *= 2;
    if (engaged > P || noncomm) engaged = P;
    for (long i = 0; i < count; i++) {
        in[i] = value(me, i);
        out[i] = -7 - (int) i;
    }
    if (noncomm) {
        /* a sum declared non-commutative: loom must not leave any rank out */
        MPI_Op_create(sum_noncomm, 0, &op);
    }
    if (F_BLOCKING == form) MPI_Reduce(in, out, (int) count, MPI_INT, op, root, comm);
    else if (F_NB == form) MPI_Ireduce(in, out, (int) count, MPI_INT, op, root, comm, &req);
    else MPI_Reduce_init(in, out, (int) count, MPI_INT, op, root, comm, MPI_INFO_NULL, &req);
    wait_form(form, &req);
    if (me == root) {
        for (long i = 0; i < count; i++) {
            int exp = 0;
            for (int v = 0; v < engaged; v++) exp += value((root + v) % P, i);
            if (i >= want) exp = -7 - (int) i;
            bad += out[i] != exp;
        }
    }
    nchecks++;
    if (bad) FAIL("%s reduce %s F=%g engage=%g%s root %d count %ld: %ld elements wrong (%ld delivered, %d ranks)",
                  fname[form], cname, f, engage, noncomm ? " non-commutative" : "", root, count, bad, want,
                  engaged);
    nchecks += 2;
    if (read_bound(V_REDUCE, comm) != (unsigned long long) want)
        FAIL("%s reduce %s F=%g: coll_loom_reduce_delivered = %llu, expected %ld", fname[form], cname, f,
             read_bound(V_REDUCE, comm), want);
    if (engage < 1.0 && read_bound(V_ENGAGED, comm) != (unsigned long long) engaged)
        FAIL("%s reduce %s engage=%g: coll_loom_reduce_engaged = %llu, expected %d", fname[form], cname, engage,
             read_bound(V_ENGAGED, comm), engaged);
    if (noncomm) MPI_Op_free(&op);
    free(in);
    free(out);
}

static void sum_noncomm(void *a, void *b, int *len, MPI_Datatype *dt)
{
    (void) dt;
    for (int i = 0; i < *len; i++) ((int *) b)[i] += ((int *) a)[i];
}

static void run_comm(MPI_Comm comm, const char *cname)
{
    static const double fs[] = {0.25, 0.5, 0.3, 1.0};
    static const char *fv[] = {"0.25", "0.5", "0.3", "1"};
    int P;
    MPI_Comm_size(comm, &P);
    if (P < 2) return; /* loom takes no part in a communicator of one process */
    for (int k = 0; k < 4; k++) {
        set_key(comm, "loom_bcast_threshold", fv[k]);
        set_key(comm, "loom_reduce_threshold", fv[(k + 1) % 4]);
        set_key(comm, "loom_reduce_engage", fv[(k + 2) % 4]);
        for (int form = 0; form < 3; form++) {
            for (int root = 0; root < P; root += (P > 8 ? 3 : 1)) {
                const long count = (form + 1) * 333 + root;
                bcast_case(comm, cname, fs[k], (form_t) form, root, count);
                reduce_case(comm, cname, fs[(k + 1) % 4], fs[(k + 2) % 4], (form_t) form, root, count, 0);
            }
        }
        /* a non-commutative op: every rank contributes, whatever the key says */
        reduce_case(comm, cname, fs[(k + 1) % 4], fs[(k + 2) % 4], F_BLOCKING, P - 1, 77, 1);
    }
    /* not numbers in (0, 1]: the whole data */
    set_key(comm, "loom_bcast_threshold", "0");
    bcast_case(comm, cname, 1.0, F_BLOCKING, 0, 100);
    set_key(comm, "loom_bcast_threshold", "half");
    bcast_case(comm, cname, 1.0, F_BLOCKING, 0, 100);
    set_key(comm, "loom_bcast_threshold", "1.5");
    bcast_case(comm, cname, 1.0, F_BLOCKING, 0, 100);
    set_key(comm, "loom_bcast_threshold", "1");
    set_key(comm, "loom_reduce_threshold", "1");
    set_key(comm, "loom_reduce_engage", "1");
}

int main(int argc, char **argv)
{
    MPI_Comm with_info, split, plain;
    MPI_Info info;
    int provided;
    long tot[2], mine[2];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    verbose = argc > 1 && 0 == strcmp(argv[1], "-v");
    if (lt_init() <= 0) {
        if (0 == wrank) fprintf(stderr, "test_threshold: loom is not loaded\n");
        MPI_Finalize();
        return 2;
    }
    lt_mpit_init(&provided);
    MPI_T_pvar_session_create(&session);
    for (int v = 0; v < NV; v++) {
        vindex[v] = lt_comm_pvar_index(vnames[v]);
        if (vindex[v] < 0) FAIL("no MPI_T variable %s bound to communicators", vnames[v]);
    }

    /* the keys given at creation */
    MPI_Info_create(&info);
    MPI_Info_set(info, "loom_bcast_threshold", "0.25");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &with_info);
    MPI_Info_free(&info);
    if (wsize > 1) {
        bcast_case(with_info, "dup_with_info", 0.25, F_BLOCKING, 0, 1000);
        reduce_case(with_info, "dup_with_info", 1.0, 1.0, F_BLOCKING, 0, 1000, 0);
    }
    run_comm(with_info, "world-dup");
    MPI_Comm_split(MPI_COMM_WORLD, wsize > 2 ? wrank % 2 : 0, (wrank * 7919) % 101, &split);
    run_comm(split, "shuffled");
    /* no key: the ordinary collectives */
    MPI_Comm_dup(MPI_COMM_WORLD, &plain);
    if (wsize > 1) {
        bcast_case(plain, "plain", 1.0, F_NB, wsize - 1, 500);
        reduce_case(plain, "plain", 1.0, 1.0, F_BLOCKING, 0, 500, 0);
    }

    mine[0] = nchecks;
    mine[1] = lt_nfail;
    MPI_Allreduce(mine, tot, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == wrank)
        printf("test_threshold np=%d: %ld checks, %ld failures: %s\n", wsize, tot[0], tot[1], tot[1] ? "FAIL" : "PASS");
    MPI_Comm_free(&plain);
    MPI_Comm_free(&split);
    MPI_Comm_free(&with_info);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    lt_fini();
    MPI_Finalize();
    return tot[1] ? 1 : 0;
}
