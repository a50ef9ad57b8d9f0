/*
 * loom: a failure inside the node segment's protocol is reported, never hidden.
 *
 * A rank whose conversion of data into or out of the node's shared segment fails (in
 * practice: memory ran out) still takes every step of the protocol, so nobody waits
 * for it, and publishes the failure as the status of the slot or area it wrote; whoever
 * reads that slot or area returns the error instead of using stale contents.  The test
 * makes conversions fail on purpose: coll_loom_test_fail_conversion = k on one rank
 * makes its k-th conversion from then on fail.
 *
 * On the communicator of each node (a failure stays on its node; the other nodes would
 * wait in the leaders' phase), in node order and reversed, with `hierarchical` forced
 * for allreduce, bcast and reduce, for every collective, size (64 B: the symmetric
 * allreduce and the small slots and areas; 1 KiB: the small slots and areas and the
 * coordinated allreduce; 6000 B: a bcast's large areas, a reduce in three chunks through
 * the small slots, the coordinated allreduce's large slots), datatype (MPI_INT, and
 * ints with a stride of two, which every conversion packs through the convertor, and
 * elements of three ints, 12 bytes, which do not divide the 2 KiB chunks of a reduce,
 * and elements of 600 ints, which a reduce cannot cut into chunks (the large slots);
 * all with a user-defined sum: Open MPI refuses MPI_SUM on a derived type),
 * failing rank (first, second, last), root (first, last) and k (1, 2):
 *   - one call with the fault armed; the data change from call to call, so stale
 *     contents are wrong data;
 *   - every rank that returns MPI_SUCCESS holds the exact result, and a strided
 *     receive buffer's gaps are untouched;
 *   - the failing rank returns an error when its fault fired; with k = 1 it must fire
 *     (every such call converts on every rank, except the root of a reduce of
 *     contiguous data: it combines the slots in place);
 *   - the next call, with no fault, is exact on every rank: the protocol stayed in step;
 *   - hierarchical served both calls (its counters) and both went through the node
 *     segment (coll_loom_shm_node_phases).
 * Run it with coll_loom_shm_setup_call 1.  Nodes with a single rank have no segment and
 * only take part in the final tally.  --several-nodes: one failure on WORLD spanning
 * several nodes (tf_several_nodes below); that run ends in MPI_Abort.
 *
 * Exit status: 0 pass, 1 failure, 2 loom not loaded.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "loom_test_util.h"

#define TF_MAX_INTS 1500 /* 6000 B */
#define TF_GAP      0x5a5a5a5a
#define TF_CVAR     "coll_loom_test_fail_conversion"

enum { TF_ALLREDUCE, TF_BCAST, TF_REDUCE, TF_KINDS };
static const lt_coll_t tf_coll[TF_KINDS] = {LT_ALLREDUCE, LT_BCAST, LT_REDUCE};
static const char *const tf_name[TF_KINDS] = {"allreduce", "bcast", "reduce"};

static int wrank;
static long tf_cases, tf_fired, tf_peer_errors;

/* rank r's element i in call c */
static int tf_val(long c, int r, int i)
{
    return (int) (lt_mix64(((uint64_t) c << 24) ^ ((uint64_t) r << 12) ^ (uint64_t) i) % 2001) - 1000;
}

/* element i of the result of call c on `size` ranks (root: the bcast's root) */
static int tf_want(int kind, long c, int size, int root, int i)
{
    int sum = 0;

    if (TF_BCAST == kind) {
        return tf_val(c, root, i);
    }
    for (int r = 0; r < size; ++r) {
        sum += tf_val(c, r, i);
    }
    return sum;
}

typedef struct {
    MPI_Comm comm, oracle; /* oracle: the same ranks, without loom (tuned) */
    const char *label;
    int rank, size;
} tf_comm_t;

/* the datatypes: MPI_INT; one int of extent two ints; three ints; 600 ints (2400 B: a
 * reduce of such elements cannot be cut into the small slots' 2 KiB chunks and takes the
 * large slots) */
enum { TF_INT, TF_STRIDED, TF_TRIPLE, TF_BIG, TF_TYPES };
static const char *const tf_tname[TF_TYPES] = {"ints", "strided ints", "3-int elements", "600-int elements"};
static MPI_Datatype tf_types[TF_TYPES];

static int tf_gap(int tk) /* distance between the ints a buffer uses */
{
    return TF_STRIDED == tk ? 2 : 1;
}

static int tf_per(int tk) /* ints per element */
{
    return TF_TRIPLE == tk ? 3 : TF_BIG == tk ? 600 : 1;
}

/* the sum of ints for every datatype */
static void tf_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int tk = TF_INT;
    for (int k = 1; k < TF_TYPES; ++k) {
        tk = *type == tf_types[k] ? k : tk;
    }
    for (int i = 0; i < *len * tf_per(tk); ++i) {
        ((int *) inout)[i * tf_gap(tk)] += ((const int *) in)[i * tf_gap(tk)];
    }
}

static MPI_Op tf_user_sum;

/* One call; returns its MPI result and checks the data when it is MPI_SUCCESS. */
static int tf_call(const tf_comm_t *t, int kind, int n, int tk, int root, int in_place, long c, long *fails)
{
    static int sbuf[2 * TF_MAX_INTS], rbuf[2 * TF_MAX_INTS];
    const MPI_Datatype type = tf_types[tk];
    const MPI_Op op = TF_INT == tk ? MPI_SUM : tf_user_sum;
    const int me = t->rank, stride = tf_gap(tk), count = n / tf_per(tk);
    int rc;

    n = count * tf_per(tk); /* the ints the call moves */

    for (int i = 0; i < 2 * TF_MAX_INTS; ++i) {
        sbuf[i] = rbuf[i] = TF_GAP;
    }
    for (int i = 0; i < n; ++i) {
        sbuf[i * stride] = tf_val(c, me, i);
        if ((TF_BCAST == kind && me == root) || in_place) {
            rbuf[i * stride] = tf_val(c, me, i);
        }
    }
    switch (kind) {
    case TF_ALLREDUCE:
        rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : sbuf, rbuf, count, type, op, t->comm);
        break;
    case TF_BCAST:
        rc = MPI_Bcast(rbuf, count, type, root, t->comm);
        break;
    default:
        rc = MPI_Reduce(sbuf, rbuf, count, type, op, root, t->comm);
        break;
    }
    if (MPI_SUCCESS != rc || (TF_REDUCE == kind && me != root)) {
        return rc;
    }
    for (int i = 0; i < n * stride; ++i) {
        const int want = 0 == i % stride ? tf_want(kind, c, t->size, root, i / stride) : TF_GAP;
        if (rbuf[i] != want) {
            lt_fail(wrank, "%s: %s%s of %d %s (root %d), call %ld: rank %d returned MPI_SUCCESS with [%d] = "
                    "%d, expected %d", t->label, tf_name[kind], in_place ? " in place" : "", count, tf_tname[tk],
                    root, c, me, i, rbuf[i], want);
            ++*fails;
            break;
        }
    }
    return rc;
}

/* Counters of the forced collective and of the node segment. */
static void tf_counts(int kind, unsigned long long *hier, unsigned long long *shm)
{
    const int h = lt_alg_index(tf_coll[kind], "hierarchical");
    lt_counts_t now;

    lt_read(tf_coll[kind], &now);
    *hier = h >= 0 ? now.alg[h] : 0;
    lt_shm_node_phases(shm);
}

/* One case: rank f fails its k-th conversion in one call, then a clean call. */
static long tf_case(const tf_comm_t *t, int kind, int n, int tk, int f, int root, int in_place, int k,
                    long *c)
{
    const int me = t->rank;
    unsigned long long h0, h1, s0, s1;
    long fails = 0;
    int rc, left = 0, fired = 0;

    ++tf_cases;
    tf_counts(kind, &h0, &s0);
    if (me == f && MPI_SUCCESS != lt_cvar_write_int(TF_CVAR, k)) {
        lt_fail(wrank, "%s: cannot write %s (a loom without it?)", t->label, TF_CVAR);
        return 1;
    }
    rc = tf_call(t, kind, n, tk, root, in_place, ++*c, &fails);
    if (me == f) {
        /* a reduce's root combines contiguous data in place, without a conversion */
        const int must_fire = 1 == k && !(TF_REDUCE == kind && me == root && TF_STRIDED != tk);
        lt_cvar_read_int(TF_CVAR, &left);
        if (0 != left) { /* not reached in this call: it must not fire in the next */
            lt_cvar_write_int(TF_CVAR, 0);
        }
        fired = 0 == left;
        tf_fired += fired;
        if (0 == left && MPI_SUCCESS == rc) {
            lt_fail(wrank, "%s: %s of %d ints (%s, root %d), call %ld: rank %d's conversion failed, "
                    "the call returned MPI_SUCCESS", t->label, tf_name[kind], n, tf_tname[tk], root, *c, me);
            ++fails;
        }
        if (0 != left && must_fire) {
            lt_fail(wrank, "%s: %s of %d ints (%s, root %d), call %ld: rank %d's first conversion did "
                    "not fail (the test no longer reaches what it tests)", t->label, tf_name[kind], n,
                    tf_tname[tk], root, *c, me);
            ++fails;
        }
    } else {
        tf_peer_errors += MPI_SUCCESS != rc;
    }
    /* where a first conversion's failure must reach: everyone when it was rank f's
     * contribution to an allreduce or its coordination of one (the result), or a bcast
     * root's data; a reduce's root; a bcast reader's own copy concerns it alone */
    MPI_Bcast(&fired, 1, MPI_INT, f, t->oracle);
    if (fired && 1 == k && MPI_SUCCESS == rc &&
        (TF_ALLREDUCE == kind || (TF_BCAST == kind && f == root) || (TF_REDUCE == kind && me == root))) {
        lt_fail(wrank, "%s: %s%s of %d ints (%s, root %d), call %ld: rank %d's failure did not reach "
                "rank %d, which returned MPI_SUCCESS", t->label, tf_name[kind], in_place ? " in place" : "", n,
                tf_tname[tk], root, *c, f, me);
        ++fails;
    }

    rc = tf_call(t, kind, n, tk, root, in_place, ++*c, &fails);
    if (MPI_SUCCESS != rc) {
        lt_fail(wrank, "%s: %s of %d ints (%s, root %d), call %ld after rank %d's failure: rank %d "
                "returned error %d", t->label, tf_name[kind], n, tf_tname[tk], root, *c, f, me, rc);
        ++fails;
    }
    tf_counts(kind, &h1, &s1);
    if (h1 - h0 != 2 || s1 - s0 != 2) {
        lt_fail(wrank, "%s: %s of %d ints: hierarchical served %llu of 2 calls, the node segment %llu",
                t->label, tf_name[kind], n, h1 - h0, s1 - s0);
        ++fails;
    }
    return fails;
}

static long tf_run(tf_comm_t *t)
{
    const int sizes[] = {16, 256, TF_MAX_INTS};
    long fails = 0, c = 0;

    MPI_Comm_rank(t->comm, &t->rank);
    MPI_Comm_size(t->comm, &t->size);
    const int who[] = {0, 1, t->size - 1};
    MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN);
    for (int kind = 0; kind < TF_KINDS; ++kind) {
        for (int s = 0; s < 3; ++s) {
            for (int tk = 0; tk < TF_TYPES; ++tk) {
                if (sizes[s] < tf_per(tk)) {
                    continue; /* not one element */
                }
                for (int w = 0; w < 3; ++w) {
                    const int f = who[w];
                    if (w > 0 && f == who[w - 1]) {
                        continue; /* two ranks: "second" and "last" are the same */
                    }
                    for (int root = 0; root < t->size; root += t->size - 1) {
                        for (int ip = 0; ip <= (TF_ALLREDUCE == kind); ++ip) {
                            for (int k = 1; k <= 2; ++k) {
                                fails += tf_case(t, kind, sizes[s], tk, f, root, ip, k, &c);
                            }
                        }
                        if (TF_ALLREDUCE == kind) {
                            break;
                        }
                    }
                }
            }
        }
    }
    return fails;
}

/* --several-nodes: WORLD spans several nodes, hierarchical allreduces of 1 KiB.  The
 * second rank of world rank 0's node (node A) fails its contribution.  Node A's ranks
 * must return an error, and so must every later collective of theirs on WORLD (their
 * leader left the leaders' phase out; its next messages would otherwise complete the
 * other nodes' pending call with the wrong data).  The other nodes wait in the failed
 * call; whatever returns there must be an error or exact.  Node A then says so and
 * aborts the job, which therefore exits non-zero: the runner checks the message. */
static int tf_several_nodes(void)
{
    const int n = 256;
    int size, nodes = 0, node_rank, f, on_a = 0, a_size = 0, bad = 0, rc = MPI_SUCCESS;
    int sbuf[256], rbuf[256];
    MPI_Comm node;

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, wrank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank);
    {
        int lead = 0 == node_rank, mine = 0 == wrank;
        MPI_Allreduce(&lead, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &on_a, 1, MPI_INT, MPI_MAX, node); /* 1 on node A */
        MPI_Allreduce(&on_a, &a_size, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    /* the failing rank: node A's second rank in world order */
    f = on_a && 1 == node_rank ? wrank : -1;
    {
        int g;
        MPI_Allreduce(&f, &g, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        f = g;
    }
    MPI_Comm_free(&node);
    if (nodes < 2 || f < 0) {
        if (0 == wrank) {
            fprintf(stderr, "test_faults --several-nodes: needs two nodes or more, two ranks on world rank "
                    "0's node (have %d nodes)\n", nodes);
        }
        return 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (long c = 1; c <= 11; ++c) { /* the segment, then the call that fails */
        for (int i = 0; i < n; ++i) {
            sbuf[i] = tf_val(c, wrank, i);
        }
        if (11 == c && wrank == f && MPI_SUCCESS != lt_cvar_write_int(TF_CVAR, 1)) {
            lt_fail(wrank, "cannot write %s", TF_CVAR);
            ++bad;
        }
        rc = MPI_Allreduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; MPI_SUCCESS == rc && i < n; ++i) {
            if (rbuf[i] != tf_want(TF_ALLREDUCE, c, size, 0, i)) {
                lt_fail(wrank, "several nodes, call %ld: MPI_SUCCESS with [%d] = %d, expected %d", c, i, rbuf[i],
                        tf_want(TF_ALLREDUCE, c, size, 0, i));
                ++bad;
                break;
            }
        }
        if (c < 11 && MPI_SUCCESS != rc) {
            lt_fail(wrank, "several nodes, call %ld before the fault: error %d", c, rc);
            ++bad;
        }
    }
    if (on_a) {
        if (MPI_SUCCESS == rc) {
            lt_fail(wrank, "several nodes: node A's rank returned MPI_SUCCESS from the failed call");
            ++bad;
        }
        /* later calls on WORLD fail at once, without a message to the waiting nodes (which
         * would take call 12's data for call 11's) */
        for (int i = 0; i < n; ++i) {
            sbuf[i] = tf_val(12, wrank, i);
        }
        if (MPI_SUCCESS == MPI_Allreduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD) ||
            MPI_SUCCESS == MPI_Barrier(MPI_COMM_WORLD) ||
            MPI_SUCCESS == MPI_Bcast(sbuf, 4, MPI_INT, 0, MPI_COMM_WORLD)) {
            lt_fail(wrank, "several nodes: a collective after the failure returned MPI_SUCCESS on node A");
            ++bad;
        }
        printf("test_faults --several-nodes: world rank %d on node A: %s\n", wrank, bad ? "FAIL" : "PASS");
        fflush(stdout);
        /* node A's other ranks tell world rank 0 they have printed (point to point: loom's
         * mark concerns collectives), then it ends the job */
        if (0 != wrank) {
            MPI_Send(&bad, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
        } else {
            struct timespec ts = {1, 0};
            for (int i = 1; i < a_size; ++i) {
                int other;
                MPI_Recv(&other, 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            nanosleep(&ts, NULL); /* their lines reach mpirun */
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    } else if (MPI_SUCCESS != rc) {
        printf("test_faults --several-nodes: world rank %d returned error %d\n", wrank, rc);
        fflush(stdout);
    }
    for (;;) { /* until the abort */
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    return bad;
}

int main(int argc, char **argv)
{
    long fails = 0, total = 0, counts[4], sums[4];
    int size, nsize, nrank = 0;
    MPI_Comm node;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    lt_require_loom("test_faults", wrank);
    fails += lt_force(tf_coll, TF_KINDS, "hierarchical", wrank);
    if (argc > 1 && 0 == strcmp(argv[1], "--several-nodes")) {
        fails += tf_several_nodes();
        MPI_Finalize();
        return 1;
    }
    tf_types[TF_INT] = MPI_INT;
    MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint) sizeof(int), &tf_types[TF_STRIDED]);
    MPI_Type_contiguous(3, MPI_INT, &tf_types[TF_TRIPLE]);
    MPI_Type_contiguous(600, MPI_INT, &tf_types[TF_BIG]);
    MPI_Type_commit(&tf_types[TF_STRIDED]);
    MPI_Type_commit(&tf_types[TF_TRIPLE]);
    MPI_Type_commit(&tf_types[TF_BIG]);
    MPI_Op_create(tf_sum, 1, &tf_user_sum);

    for (int reversed = 0; reversed <= 1; ++reversed) {
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, reversed ? size - wrank : wrank, MPI_INFO_NULL,
                            &node);
        MPI_Comm_size(node, &nsize);
        if (!reversed) {
            MPI_Comm_rank(node, &nrank);
        }
        if (nsize > 1) {
            tf_comm_t t = {node, MPI_COMM_NULL, reversed ? "node, reversed" : "node", 0, 0};
            lt_dup_with_pref(node, "tuned,^loom", &t.oracle);
            fails += tf_run(&t);
            MPI_Comm_free(&t.oracle);
        }
        MPI_Comm_free(&node);
    }

    counts[0] = fails;
    counts[1] = tf_fired;
    counts[2] = tf_peer_errors;
    counts[3] = 0 == nrank ? tf_cases : 0; /* each node's cases once */
    MPI_Allreduce(counts, sums, 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    total = sums[0];
    if (0 == wrank) {
        printf("test_faults: np=%d, %ld cases over the nodes: %ld conversions failed on purpose, %ld errors "
               "reported by other ranks: %s (%ld failures)\n",
               size, sums[3], sums[1], sums[2], 0 == total ? "PASS" : "FAIL", total);
    }
    MPI_Op_free(&tf_user_sum);
    MPI_Type_free(&tf_types[TF_STRIDED]);
    MPI_Type_free(&tf_types[TF_TRIPLE]);
    MPI_Type_free(&tf_types[TF_BIG]);
    lt_fini();
    MPI_Finalize();
    return 0 == total ? 0 : 1;
}
