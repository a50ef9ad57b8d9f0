/*
 * loom: calls that move nothing, persistent collectives started in different orders,
 * and a collective that fails on one rank.  Each case here is a program that works
 * with stock Open MPI and once broke with loom.
 *
 * 1. The zero matrix: every collective loom serves, in its blocking, non-blocking and
 *    persistent forms, with auto and with every algorithm loom exposes for it forced
 *    (MPI_T), on MPI_COMM_WORLD and on a dup of it in reverse rank order:
 *      - count 0 with NULL buffers (MPI allows them; mpi4py passes them);
 *      - count 3 of a zero-size datatype (with a user op for the reductions);
 *      - equal signatures, different counts: even ranks 3 of a zero-size type, odd
 *        ranks 0 MPI_INT (bcast, allgather, alltoall, alltoallv, in place too: MPICH's
 *        alltoallw_zeros), so every rank moves 0 bytes but no two agree on counts.
 *    Every call returns MPI_SUCCESS and leaves its (non-NULL) buffers untouched; loom
 *    never hands it to the previous component unless auto chose to (the fallback
 *    counters of both forms), and alltoallv with a forced algorithm moves exactly that
 *    algorithm's counter (it has no size to return early on); a checked allreduce
 *    after every call proves the communicator is still in step.
 * 2. Persistent order (MPICH's p_order): a bcast, a barrier and an allreduce set up by
 *    their _init calls in one order, started in opposite orders on even and odd ranks,
 *    several times, with each algorithm of each collective forced in turn (and auto);
 *    results exact, the forced algorithms' counters moved.
 * 3. A failure (coll_loom_test_fail_local: one rank's k-th local step of a point-to-point
 *    schedule fails): for allreduce, bcast, reduce, allgather, reduce_scatter_block,
 *    scan and alltoall, every algorithm forced, failing rank first and last, blocking
 *    and non-blocking: the failing rank returns an error when its fault fired, every
 *    rank that returns MPI_SUCCESS holds the exact result, and the next call is exact
 *    everywhere; then MPI_Comm_dup works and the program reaches MPI_Finalize (the
 *    runner checks the exit status).  Run with coll_loom_shm 0 (no node segment).
 *
 * Usage: test_zeros [--oracle-only] [--no-faults] [-v]
 *   --oracle-only  results only, never that loom ran, with the stock components
 *                  (--mca coll ^loom; the negative control expects exit 2 without it);
 *                  leaves out the calls that Open MPI 4.1's tuned and libnbc fail (only
 *                  the blocking forms of the first two cases run)
 * Exit status: 0 pass, 1 failure, 2 loom not loaded (unless --oracle-only).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "loom_test_pcoll.h"
#include "loom_test_util.h"

#define FILL 0x5c
#define BUF  64 /* bytes of each non-NULL buffer of the zero matrix (nothing may land) */

static int wrank, wsize, verbose, oracle_only;
static long ncases;
#define FAIL(...) lt_fail(wrank, __VA_ARGS__)

typedef enum { F_BLOCKING, F_NB, F_PERSISTENT, NFORMS } form_t;
static const char *const form_name[NFORMS] = {"blocking", "non-blocking", "persistent"};

/* a zero-size type, and a user op (Open MPI refuses MPI_SUM on derived types) */
static MPI_Datatype zt;
static MPI_Op zop;
static void noop(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) in; (void) inout; (void) len; (void) dt;
}

static void check_rc(int rc, const char *what)
{
    if (MPI_SUCCESS != rc) {
        char s[MPI_MAX_ERROR_STRING];
        int n = 0;
        MPI_Error_string(rc, s, &n);
        FAIL("%s: returned %d (%s)", what, rc, s);
    }
}

/* Completes the call of a non-blocking or persistent form (the request is freed). */
static int finish(form_t f, int rc, MPI_Request *req)
{
    if (MPI_SUCCESS != rc || F_BLOCKING == f) {
        return rc;
    }
    if (F_PERSISTENT == f) {
        /* twice: a persistent request is restarted */
        for (int k = 0; k < 2 && MPI_SUCCESS == rc; ++k) {
            rc = MPI_Start(req);
            if (MPI_SUCCESS == rc) {
                rc = MPI_Wait(req, MPI_STATUS_IGNORE);
            }
        }
        MPI_Request_free(req);
        return rc;
    }
    return MPI_Wait(req, MPI_STATUS_IGNORE);
}

/* ------------------------------------------------------------------------- */
/* 1. the zero matrix                                                          */

typedef enum { Z_NULL, Z_TYPE, Z_MIXED, Z_MIXED_IN_PLACE, NZ } zcase_t;
static const char *const zcase_name[NZ] = {"count 0, NULL buffers", "3 of a zero-size type",
                                           "3 zero-size / 0 MPI_INT by rank parity",
                                           "the same, MPI_IN_PLACE"};

/* Whether collective c takes case z (the mixed cases need a collective whose sides may
 * describe their data differently: no reductions, whose count and type are shared). */
static int takes(lt_coll_t c, zcase_t z)
{
    switch (z) {
    case Z_NULL:
        return 1;
    case Z_TYPE:
        return LT_BARRIER != c;
    case Z_MIXED:
        return LT_BCAST == c || LT_ALLGATHER == c || LT_ALLTOALL == c || LT_ALLTOALLV == c;
    case Z_MIXED_IN_PLACE:
        return LT_ALLGATHER == c || LT_ALLTOALL == c || LT_ALLTOALLV == c;
    default:
        return 0;
    }
}

/* One call of collective c in form f, case z, on comm.  sb, rb: BUF-byte buffers
 * (unused for Z_NULL). */
static int zero_call(lt_coll_t c, form_t f, zcase_t z, MPI_Comm comm, char *sb, char *rb)
{
    int P, r, rc = MPI_SUCCESS;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    const int odd = (r % 2) && Z_NULL != z && Z_TYPE != z;
    /* this rank's view: (n, t) elements; odd ranks of the mixed cases 0 MPI_INT */
    const int n = Z_NULL == z || odd ? 0 : 3;
    MPI_Datatype t = Z_NULL == z || odd ? MPI_INT : zt;
    MPI_Op op = Z_NULL == z ? MPI_SUM : zop;
    const void *s = Z_NULL == z ? NULL : sb;
    void *d = Z_NULL == z ? NULL : rb;
    const int root = P - 1;
    int *counts = calloc((size_t) P, sizeof(int)), *displs = calloc((size_t) P, sizeof(int));
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Request *q = &req;
    const int nb = F_NB == f, pe = F_PERSISTENT == f;

    for (int j = 0; j < P; ++j) {
        counts[j] = n;
    }
    if (Z_MIXED_IN_PLACE == z) {
        s = MPI_IN_PLACE;
    }
    if (Z_NULL == z && LT_REDUCE == c && r == root) {
        d = rb; /* Open MPI refuses sendbuf == recvbuf at the root, NULL == NULL included */
    }
    switch (c) {
    case LT_ALLREDUCE:
        rc = nb ? MPI_Iallreduce(s, d, n, t, op, comm, q)
             : pe ? MPI_Allreduce_init(s, d, n, t, op, comm, MPI_INFO_NULL, q)
                  : MPI_Allreduce(s, d, n, t, op, comm);
        break;
    case LT_BARRIER:
        rc = nb ? MPI_Ibarrier(comm, q) : pe ? MPI_Barrier_init(comm, MPI_INFO_NULL, q) : MPI_Barrier(comm);
        break;
    case LT_BCAST:
        rc = nb ? MPI_Ibcast(d, n, t, root, comm, q)
             : pe ? MPI_Bcast_init(d, n, t, root, comm, MPI_INFO_NULL, q)
                  : MPI_Bcast(d, n, t, root, comm);
        break;
    case LT_REDUCE:
        rc = nb ? MPI_Ireduce(s, d, n, t, op, root, comm, q)
             : pe ? MPI_Reduce_init(s, d, n, t, op, root, comm, MPI_INFO_NULL, q)
                  : MPI_Reduce(s, d, n, t, op, root, comm);
        break;
    case LT_ALLGATHER: {
        /* the mixed case: the send side is (n, t) of this rank, the receive side the
         * even ranks' view, 3 of the zero-size type (0 bytes from every rank either way) */
        const int rn = Z_NULL == z ? 0 : 3;
        MPI_Datatype rt = Z_NULL == z ? MPI_INT : zt;
        rc = nb ? MPI_Iallgather(s, n, t, d, rn, rt, comm, q)
             : pe ? MPI_Allgather_init(s, n, t, d, rn, rt, comm, MPI_INFO_NULL, q)
                  : MPI_Allgather(s, n, t, d, rn, rt, comm);
        break;
    }
    case LT_REDUCE_SCATTER:
        rc = nb ? MPI_Ireduce_scatter(s, d, counts, t, op, comm, q)
             : pe ? MPI_Reduce_scatter_init(s, d, counts, t, op, comm, MPI_INFO_NULL, q)
                  : MPI_Reduce_scatter(s, d, counts, t, op, comm);
        break;
    case LT_REDUCE_SCATTER_BLOCK:
        rc = nb ? MPI_Ireduce_scatter_block(s, d, n, t, op, comm, q)
             : pe ? MPI_Reduce_scatter_block_init(s, d, n, t, op, comm, MPI_INFO_NULL, q)
                  : MPI_Reduce_scatter_block(s, d, n, t, op, comm);
        break;
    case LT_SCAN:
        rc = nb ? MPI_Iscan(s, d, n, t, op, comm, q)
             : pe ? MPI_Scan_init(s, d, n, t, op, comm, MPI_INFO_NULL, q)
                  : MPI_Scan(s, d, n, t, op, comm);
        break;
    case LT_EXSCAN:
        rc = nb ? MPI_Iexscan(s, d, n, t, op, comm, q)
             : pe ? MPI_Exscan_init(s, d, n, t, op, comm, MPI_INFO_NULL, q)
                  : MPI_Exscan(s, d, n, t, op, comm);
        break;
    case LT_ALLTOALL: {
        /* receive side: the partner's view is unknown here, and every view moves 0
         * bytes; take the even ranks' (3 zero-size) on even ranks, 0 MPI_INT on odd */
        rc = nb ? MPI_Ialltoall(s, n, t, d, n, t, comm, q)
             : pe ? MPI_Alltoall_init(s, n, t, d, n, t, comm, MPI_INFO_NULL, q)
                  : MPI_Alltoall(s, n, t, d, n, t, comm);
        break;
    }
    case LT_ALLTOALLV:
        rc = nb ? MPI_Ialltoallv(s, counts, displs, t, d, counts, displs, t, comm, q)
             : pe ? MPI_Alltoallv_init(s, counts, displs, t, d, counts, displs, t, comm, MPI_INFO_NULL, q)
                  : MPI_Alltoallv(s, counts, displs, t, d, counts, displs, t, comm);
        break;
    default:
        break;
    }
    rc = finish(f, rc, q);
    free(counts);
    free(displs);
    return rc;
}

/* A checked allreduce: the communicator is still in step. */
static void in_step(MPI_Comm comm, long tag, const char *after)
{
    int P, r;
    long v[4], out[4];
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    for (int i = 0; i < 4; ++i) {
        v[i] = tag * 100 + r + i;
    }
    check_rc(MPI_Allreduce(v, out, 4, MPI_LONG, MPI_SUM, comm), after);
    for (int i = 0; i < 4; ++i) {
        const long want = (tag * 100 + i) * P + (long) P * (P - 1) / 2;
        if (out[i] != want) {
            FAIL("allreduce after %s: element %d is %ld, expected %ld", after, i, out[i], want);
            return;
        }
    }
}

static void zero_matrix(MPI_Comm comm, const char *cname)
{
    static const lt_coll_t colls[] = {LT_ALLREDUCE, LT_BARRIER, LT_BCAST, LT_REDUCE, LT_ALLGATHER,
                                      LT_REDUCE_SCATTER, LT_REDUCE_SCATTER_BLOCK, LT_SCAN, LT_EXSCAN,
                                      LT_ALLTOALL, LT_ALLTOALLV};
    char sb[BUF], rb[BUF], what[256];
    long tag = 0;

    for (size_t ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ++ci) {
        const lt_coll_t c = colls[ci];
        char cvar[96];
        snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(c));
        for (int a = -1; a < (oracle_only ? 0 : lt_nalgs(c)); ++a) {
            const char *alg = a < 0 ? "auto" : lt_alg_name(c, a);
            if (!oracle_only && MPI_SUCCESS != lt_cvar_write_str(cvar, alg)) {
                FAIL("%s: could not write %s", cvar, alg);
                continue;
            }
            for (int f = 0; f < NFORMS; ++f) {
                const lt_coll_t lc = F_BLOCKING == f ? c : LT_NB(c);
                for (int z = 0; z < NZ; ++z) {
                    lt_counts_t before, after;
                    lt_diff_t dd;
                    int rc;
                    if (!takes(c, (zcase_t) z)) {
                        continue;
                    }
                    /* Open MPI 4.1's tuned and libnbc fail these (the oracle check runs
                     * without loom): they hang on a persistent call without data started
                     * twice and on sides that count differently (blocking allgather,
                     * ialltoallv); ireduce_scatter_block of a zero-size type returns
                     * MPI_ERR_SIZE */
                    if (oracle_only && (F_BLOCKING != f || z >= Z_MIXED)) {
                        continue;
                    }
                    snprintf(what, sizeof(what), "%s %s (%s) on %s, %s", form_name[f], lt_coll_name(c), alg, cname,
                             zcase_name[z]);
                    memset(sb, FILL, sizeof(sb));
                    memset(rb, FILL, sizeof(rb));
                    if (verbose > 1) {
                        printf("  [%d] %s ...\n", wrank, what);
                        fflush(stdout);
                    }
                    if (!oracle_only) lt_read(lc, &before);
                    rc = zero_call(c, (form_t) f, (zcase_t) z, comm, sb, rb);
                    if (!oracle_only) lt_read(lc, &after);
                    ncases++;
                    check_rc(rc, what);
                    for (int i = 0; i < BUF; ++i) {
                        if ((unsigned char) sb[i] != FILL || (unsigned char) rb[i] != FILL) {
                            FAIL("%s: byte %d of a buffer changed", what, i);
                            break;
                        }
                    }
                    if (!oracle_only) {
                        lt_diff(lc, &before, &after, &dd);
                        if (a >= 0 && lt_has_fallback(lc) && after.fallback != before.fallback) {
                            FAIL("%s: handed to the previous component (%s)", what, dd.desc);
                        }
                        if (a >= 0 && LT_ALLTOALLV == c && F_PERSISTENT != f &&
                            (1 != dd.changed || dd.which != a)) {
                            FAIL("%s: counters %s, expected %s+1", what, dd.desc, alg);
                        }
                    }
                    if (verbose && 0 == wrank) {
                        printf("  %s: ok (%s)\n", what, oracle_only ? "-" : dd.desc);
                    }
                    in_step(comm, ++tag, what);
                }
            }
        }
        if (!oracle_only) lt_cvar_write_str(cvar, "auto");
    }
}

/* ------------------------------------------------------------------------- */
/* 2. persistent collectives started in different orders                       */

#define PO_N 1000

static void persistent_order(MPI_Comm comm, const char *cname)
{
    static const lt_coll_t colls[3] = {LT_BCAST, LT_BARRIER, LT_ALLREDUCE};
    int P, r, maxalgs = 1;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    int *bbuf = malloc(PO_N * sizeof(int));
    int in[8], out[8];

    for (int k = 0; k < 3 && !oracle_only; ++k) {
        maxalgs = lt_nalgs(colls[k]) + 1 > maxalgs ? lt_nalgs(colls[k]) + 1 : maxalgs;
    }
    for (int i = 0; i < maxalgs; ++i) {
        const int root = i % P;
        MPI_Request req[3];
        int forced[3];
        lt_counts_t before[3], after[3];
        char desc[256] = "";
        for (int k = 0; k < 3; ++k) {
            char cvar[96];
            /* algorithm i-1 of each collective (wrapping), auto first */
            forced[k] = oracle_only || 0 == i ? -1 : (i - 1) % lt_nalgs(colls[k]);
            snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(colls[k]));
            if (!oracle_only) {
                lt_cvar_write_str(cvar, forced[k] < 0 ? "auto" : lt_alg_name(colls[k], forced[k]));
                lt_read(LT_NB(colls[k]), &before[k]);
            }
            snprintf(desc + strlen(desc), sizeof(desc) - strlen(desc), "%s%s %s", k ? ", " : "",
                     lt_coll_name(colls[k]), forced[k] < 0 ? "auto" : lt_alg_name(colls[k], forced[k]));
        }
        check_rc(MPI_Bcast_init(bbuf, PO_N, MPI_INT, root, comm, MPI_INFO_NULL, &req[0]), "MPI_Bcast_init");
        check_rc(MPI_Barrier_init(comm, MPI_INFO_NULL, &req[1]), "MPI_Barrier_init");
        check_rc(MPI_Allreduce_init(in, out, 8, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req[2]),
                 "MPI_Allreduce_init");
        for (int rep = 0; rep < 3; ++rep) {
            char what[400];
            for (int j = 0; j < PO_N; ++j) {
                bbuf[j] = r == root ? j * 7 + rep * 100003 + i : -1;
            }
            for (int j = 0; j < 8; ++j) {
                in[j] = r * 3 + j + rep + i;
                out[j] = -1;
            }
            /* even ranks bcast, barrier, allreduce; odd ranks the reverse */
            for (int k = 0; k < 3; ++k) {
                check_rc(MPI_Start(&req[r % 2 ? 2 - k : k]), "MPI_Start");
            }
            snprintf(what, sizeof(what), "persistent order on %s (%s), start %d", cname, desc, rep);
            check_rc(MPI_Waitall(3, req, MPI_STATUSES_IGNORE), what);
            for (int j = 0; j < PO_N; ++j) {
                if (bbuf[j] != j * 7 + rep * 100003 + i) {
                    FAIL("%s: bcast element %d is %d, expected %d", what, j, bbuf[j], j * 7 + rep * 100003 + i);
                    break;
                }
            }
            for (int j = 0; j < 8; ++j) {
                const int want = 3 * P * (P - 1) / 2 + P * (j + rep + i);
                if (out[j] != want) {
                    FAIL("%s: allreduce element %d is %d, expected %d", what, j, out[j], want);
                    break;
                }
            }
            ncases++;
        }
        for (int k = 0; k < 3; ++k) {
            MPI_Request_free(&req[k]);
            if (!oracle_only) {
                lt_diff_t d;
                lt_read(LT_NB(colls[k]), &after[k]);
                lt_diff(LT_NB(colls[k]), &before[k], &after[k], &d);
                /* loom served each (a forced algorithm that is not exact for the call
                 * gives way to one that is, never to the previous component) */
                if (forced[k] >= 0 && (1 != d.changed || d.which < 0)) {
                    FAIL("persistent order on %s (%s): %s counters %s, expected one of loom's algorithms", cname,
                         desc, lt_coll_name(colls[k]), d.desc);
                }
            }
        }
    }
    for (int k = 0; k < 3 && !oracle_only; ++k) {
        char cvar[96];
        snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(colls[k]));
        lt_cvar_write_str(cvar, "auto");
    }
    free(bbuf);
}

/* ------------------------------------------------------------------------- */
/* 3. a failure on one rank                                                     */

#define FL_N 600 /* ints per rank's part: every schedule has local steps on every rank */

/* rank q's element i in call k */
static int fval(int q, int i, long k)
{
    return (int) ((q * 131 + i * 7 + k * 1009) % 100003);
}

/* One call of c with data (blocking or non-blocking), checked: returns 0 when the
 * result is exact, 1 when it is not, -1 when the call returned an error. */
static int fault_call(lt_coll_t c, int nb, MPI_Comm comm, long k, int *sbuf, int *rbuf, const char *what)
{
    int P, r, rc, n = FL_N, bad = 0;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    const int root = (int) (k % P);
    MPI_Request req;
    const size_t total = (size_t) P * FL_N;

    for (size_t i = 0; i < total; ++i) {
        sbuf[i] = fval(r, (int) i, k);
        rbuf[i] = -7;
    }
    switch (c) {
    case LT_ALLREDUCE:
        rc = nb ? MPI_Iallreduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, comm, &req)
                : MPI_Allreduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, comm);
        break;
    case LT_BCAST:
        if (r == root) memcpy(rbuf, sbuf, (size_t) n * sizeof(int));
        rc = nb ? MPI_Ibcast(rbuf, n, MPI_INT, root, comm, &req) : MPI_Bcast(rbuf, n, MPI_INT, root, comm);
        break;
    case LT_REDUCE:
        rc = nb ? MPI_Ireduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, root, comm, &req)
                : MPI_Reduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, root, comm);
        break;
    case LT_ALLGATHER:
        rc = nb ? MPI_Iallgather(sbuf, n, MPI_INT, rbuf, n, MPI_INT, comm, &req)
                : MPI_Allgather(sbuf, n, MPI_INT, rbuf, n, MPI_INT, comm);
        break;
    case LT_REDUCE_SCATTER_BLOCK:
        rc = nb ? MPI_Ireduce_scatter_block(sbuf, rbuf, n, MPI_INT, MPI_SUM, comm, &req)
                : MPI_Reduce_scatter_block(sbuf, rbuf, n, MPI_INT, MPI_SUM, comm);
        break;
    case LT_SCAN:
        rc = nb ? MPI_Iscan(sbuf, rbuf, n, MPI_INT, MPI_SUM, comm, &req)
                : MPI_Scan(sbuf, rbuf, n, MPI_INT, MPI_SUM, comm);
        break;
    case LT_ALLTOALL:
        rc = nb ? MPI_Ialltoall(sbuf, n, MPI_INT, rbuf, n, MPI_INT, comm, &req)
                : MPI_Alltoall(sbuf, n, MPI_INT, rbuf, n, MPI_INT, comm);
        break;
    default:
        return 1;
    }
    if (MPI_SUCCESS == rc && nb) {
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    if (MPI_SUCCESS != rc) {
        return -1;
    }
    /* the oracle, element by element */
    for (int i = 0; i < (LT_ALLGATHER == c || LT_ALLTOALL == c ? (int) total : n) && !bad; ++i) {
        long want = 0;
        int check = 1;
        switch (c) {
        case LT_ALLREDUCE:
            for (int q = 0; q < P; ++q) want += fval(q, i, k);
            break;
        case LT_REDUCE:
            check = r == root;
            for (int q = 0; q < P; ++q) want += fval(q, i, k);
            break;
        case LT_BCAST:
            want = fval(root, i, k);
            break;
        case LT_ALLGATHER:
            want = fval(i / FL_N, i % FL_N, k);
            break;
        case LT_REDUCE_SCATTER_BLOCK:
            for (int q = 0; q < P; ++q) want += fval(q, r * FL_N + i, k);
            break;
        case LT_SCAN:
            for (int q = 0; q <= r; ++q) want += fval(q, i, k);
            break;
        case LT_ALLTOALL:
            want = fval(i / FL_N, r * FL_N + i % FL_N, k);
            break;
        default:
            break;
        }
        if (check && rbuf[i] != (int) want) {
            FAIL("%s: element %d is %d, expected %d", what, i, rbuf[i], (int) want);
            bad = 1;
        }
    }
    return bad;
}

static void faults(MPI_Comm comm, const char *cname)
{
    static const lt_coll_t colls[] = {LT_ALLREDUCE, LT_BCAST, LT_REDUCE, LT_ALLGATHER, LT_REDUCE_SCATTER_BLOCK,
                                      LT_SCAN, LT_ALLTOALL};
    int P, r;
    long k = 0, fired = 0, peer_errors = 0;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    int *sbuf = malloc((size_t) P * FL_N * sizeof(int)), *rbuf = malloc((size_t) P * FL_N * sizeof(int));

    for (size_t ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ++ci) {
        const lt_coll_t c = colls[ci];
        char cvar[96];
        snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(c));
        for (int a = -1; a < lt_nalgs(c); ++a) {
            const char *alg = a < 0 ? "auto" : lt_alg_name(c, a);
            lt_cvar_write_str(cvar, alg);
            for (int nb = 0; nb < 2; ++nb) {
                for (int fr = 0; fr < 2; ++fr) {
                    const int failing = fr ? P - 1 : 0;
                    char what[256];
                    int res, armed = 0;
                    snprintf(what, sizeof(what), "%s%s (%s) on %s, rank %d fails", nb ? "i" : "", lt_coll_name(c),
                             alg, cname, failing);
                    if (r == failing) {
                        lt_cvar_write_int("coll_loom_test_fail_local", 1);
                    }
                    res = fault_call(c, nb, comm, ++k, sbuf, rbuf, what);
                    if (r == failing) {
                        lt_cvar_read_int("coll_loom_test_fail_local", &armed);
                        lt_cvar_write_int("coll_loom_test_fail_local", 0);
                        if (0 == armed && res >= 0) {
                            FAIL("%s: the fault fired and the call returned MPI_SUCCESS", what);
                        }
                        fired += 0 == armed;
                    } else if (res < 0) {
                        peer_errors++;
                    }
                    /* the next call, with no fault: exact everywhere */
                    snprintf(what + strlen(what), sizeof(what) - strlen(what), ", the call after");
                    if (0 != fault_call(c, nb, comm, ++k, sbuf, rbuf, what)) {
                        FAIL("%s: not exact (or an error)", what);
                    }
                    ncases++;
                }
            }
        }
        lt_cvar_write_str(cvar, "auto");
    }
    {
        /* the communicator is whole: Open MPI's own collectives on it (a dup) work */
        MPI_Comm d;
        check_rc(MPI_Comm_dup(comm, &d), "MPI_Comm_dup after the failures");
        in_step(d, 99, "the failures (on a dup)");
        MPI_Comm_free(&d);
    }
    {
        long t[2] = {fired, peer_errors}, s[2];
        MPI_Allreduce(t, s, 2, MPI_LONG, MPI_SUM, comm);
        if (0 == r) {
            printf("faults on %s: %ld faults fired, %ld calls of other ranks returned the error\n", cname, s[0],
                   s[1]);
        }
        if (0 == s[0]) {
            FAIL("faults on %s: no fault fired", cname);
        }
    }
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    int no_faults = 0, npv;
    MPI_Comm rev;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--oracle-only")) oracle_only = 1;
        else if (0 == strcmp(argv[i], "--no-faults")) no_faults = 1;
        else if (0 == strcmp(argv[i], "-v")) verbose++;
    }
    npv = lt_init();
    if (npv <= 0 && !oracle_only) {
        if (0 == wrank) fprintf(stderr, "test_zeros: loom is not loaded\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Type_contiguous(0, MPI_INT, &zt);
    MPI_Type_commit(&zt);
    MPI_Op_create(noop, 1, &zop);
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &rev);
    MPI_Comm_set_errhandler(rev, MPI_ERRORS_RETURN);

    zero_matrix(MPI_COMM_WORLD, "WORLD");
    zero_matrix(rev, "WORLD reversed");
    persistent_order(MPI_COMM_WORLD, "WORLD");
    persistent_order(rev, "WORLD reversed");
    if (!no_faults && !oracle_only && wsize > 1) {
        faults(MPI_COMM_WORLD, "WORLD");
        faults(rev, "WORLD reversed");
    }

    MPI_Comm_free(&rev);
    MPI_Op_free(&zop);
    MPI_Type_free(&zt);
    {
        long f = lt_nfail, tf, nc;
        MPI_Allreduce(&f, &tf, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&ncases, &nc, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (0 == wrank) {
            printf("test_zeros np=%d: %ld cases, %s (%ld failures)\n", wsize, nc, tf ? "FAILED" : "passed", tf);
        }
        lt_fini();
        MPI_Finalize();
        return tf ? 1 : 0;
    }
}
