/*
 * loom_pingpong: measures the LogGP parameters of opal/loom/loom_model.h between two
 * ranks and prints them as loom-model flags and as coll_loom_model_* MCA settings.
 *
 *   mpirun -np 2 test/bench/loom_pingpong [--max-bytes N] [--local-bytes N] [--iters N]
 *   mpirun -np P ...   all P ranks in pairs (0-1, 2-3, ...) measuring at once: the
 *                      parameters of a node where every rank communicates, as in a
 *                      collective at that process count
 *
 * What is measured, and what cannot be separated:
 *   - ping-pong over sizes 0 .. max-bytes: the half round trip is, in the model,
 *     T(n) = L + 2o + G n.  A least-squares line through the sizes >= 4 KiB (the
 *     bandwidth regime) gives G (slope); the 0-byte half round trip gives L + 2o.
 *     Ping-pong cannot split L from o: they only ever appear as L + 2o.
 *   - o alone: the time rank 0 spends in MPI_Isend + MPI_Irecv posting of a small
 *     message (the CPU cost of one message, as the model charges it), averaged over a
 *     burst; L is then (L + 2o) - 2o, and not below 0.
 *   - g: a burst of small messages one way, acknowledged at the end: time per
 *     message (the message rate's inverse).
 *   - gamma: MPI_Reduce_local(MPI_SUM) on doubles of a --local-bytes vector (default
 *     64 MiB: past a 32 MiB L3, like the working set of a large collective), per byte.
 *   - copy: memcpy of --local-bytes, per byte.
 * On one node (shared memory) G is a memory copy bandwidth, and L and o are
 * software costs: measure between nodes for a multi-node model.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double best_of(double a, double b)
{
    return a < b ? a : b;
}

/* Half round trip of n bytes, the best of `reps` averages of `iters` round trips. */
/* Ranks 2i and 2i+1 form a pair; with more than 2 ranks every pair measures at the
 * same time, so the values describe a loaded node (all ranks communicating at once,
 * as in a collective), which is what the model must predict at that process count.
 * A last rank without a partner only joins the barriers.  Rank 0's pair reports. */
static int peer_of(int rank, int size)
{
    int p = rank ^ 1;
    return p < size ? p : -1;
}

static double pingpong(int rank, char *buf, int n, int iters, int reps)
{
    int size, peer;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = peer_of(rank, size);
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        double t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < iters && peer >= 0; ++i) {
            if (0 == (rank & 1)) {
                MPI_Send(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            }
        }
        t = (MPI_Wtime() - t) / (2.0 * iters);
        best = best_of(best, t);
    }
    MPI_Bcast(&best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return best;
}

#define BURST 256

/* Per message: rank 0's CPU time to post a small isend (o), and the time per message
 * of a burst through the link (g). */
static void burst(int rank, char *buf, int iters, double *o_post, double *gap)
{
    MPI_Request req[BURST];
    double post = 1e30, per = 1e30;
    int size, peer;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = peer_of(rank, size);
    for (int it = 0; it < iters; ++it) {
        double t0, t1;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (peer < 0) {
            continue;
        }
        if (0 == (rank & 1)) {
            for (int i = 0; i < BURST; ++i) {
                MPI_Isend(buf + i, 1, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req[i]);
            }
            t1 = MPI_Wtime();
            MPI_Waitall(BURST, req, MPI_STATUSES_IGNORE);
            MPI_Recv(NULL, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            post = best_of(post, (t1 - t0) / BURST);
            per = best_of(per, (MPI_Wtime() - t0) / BURST);
        } else {
            for (int i = 0; i < BURST; ++i) {
                MPI_Irecv(buf + i, 1, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req[i]);
            }
            MPI_Waitall(BURST, req, MPI_STATUSES_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
        }
    }
    MPI_Bcast(&post, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Bcast(&per, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    *o_post = post;
    *gap = per;
}

/* Seconds per byte of MPI_Reduce_local on doubles and of memcpy, best of reps. */
static void local_costs(size_t bytes, int reps, double *gamma, double *copy)
{
    const int n = (int) (bytes / sizeof(double));
    double *a = malloc(bytes), *b = malloc(bytes), g = 1e30, c = 1e30;
    for (int i = 0; i < n; ++i) {
        a[i] = 1.0 + i;
        b[i] = 2.0;
    }
    for (int r = 0; r < reps; ++r) {
        double t = MPI_Wtime();
        MPI_Reduce_local(a, b, n, MPI_DOUBLE, MPI_SUM);
        g = best_of(g, (MPI_Wtime() - t) / (double) bytes);
        t = MPI_Wtime();
        memcpy(b, a, bytes);
        c = best_of(c, (MPI_Wtime() - t) / (double) bytes);
        a[r % n] += b[(r * 7) % n]; /* keep the copies live */
    }
    free(a);
    free(b);
    MPI_Allreduce(MPI_IN_PLACE, &g, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &c, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    *gamma = g;
    *copy = c;
}

int main(int argc, char **argv)
{
    int rank, size, max_bytes = 4 << 20, iters = 200, local_bytes = 64 << 20;
    double lat0, o, gap, gamma, copy, G, L, sx = 0, sy = 0, sxx = 0, sxy = 0;
    int npts = 0;
    char *buf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (0 == strcmp(argv[i], "--max-bytes")) {
            max_bytes = atoi(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "--local-bytes")) {
            local_bytes = atoi(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "--iters")) {
            iters = atoi(argv[i + 1]);
        }
    }
    if (size < 2) {
        if (0 == rank) {
            fprintf(stderr, "loom_pingpong: run with at least 2 ranks\n");
        }
        MPI_Finalize();
        return 1;
    }
    buf = calloc((size_t) max_bytes + BURST, 1);

    pingpong(rank, buf, 0, iters, 2); /* warm up the path */
    lat0 = pingpong(rank, buf, 0, 4 * iters, 5);
    if (0 == rank) {
        printf("# half round trip (best of 5 runs)\n#%11s %14s %12s\n", "bytes", "time [us]", "MB/s");
        printf("%12d %14.3f %12s\n", 0, lat0 * 1e6, "-");
    }
    for (int n = 8; n <= max_bytes; n *= 2) {
        int it = n >= (256 << 10) ? (iters / 10 > 5 ? iters / 10 : 5) : iters;
        double t = pingpong(rank, buf, n, it, 5);
        if (0 == rank) {
            printf("%12d %14.3f %12.1f\n", n, t * 1e6, n / t / 1e6);
        }
        if (n >= 4096) {
            sx += n;
            sy += t;
            sxx += (double) n * n;
            sxy += (double) n * t;
            npts++;
        }
    }
    G = npts > 1 ? (npts * sxy - sx * sy) / (npts * sxx - sx * sx) : 0.0;
    if (G < 0) {
        G = 0;
    }
    burst(rank, buf, 20, &o, &gap);
    L = lat0 - 2.0 * o;
    if (L < 0) {
        L = 0;
    }
    local_costs((size_t) local_bytes, 5, &gamma, &copy);

    if (0 == rank) {
        printf("\n# LogGP parameters (loom_model.h)\n");
        printf("L + 2o  %8.3f us   half round trip of 0 bytes\n", lat0 * 1e6);
        printf("o       %8.3f us   posting one small message (burst of %d isends)\n", o * 1e6, BURST);
        printf("L       %8.3f us   (L + 2o) - 2o\n", L * 1e6);
        printf("g       %8.3f us   time per message of a burst\n", gap * 1e6);
        printf("G       %8.4f ns/B  slope of the half round trip, %d sizes >= 4 KiB (%.0f MB/s)\n", G * 1e9, npts,
               G > 0 ? 1e-6 / G : 0.0);
        printf("gamma   %8.4f ns/B  MPI_Reduce_local(MPI_SUM) on doubles, %d MiB\n", gamma * 1e9,
               local_bytes >> 20);
        printf("copy    %8.4f ns/B  memcpy, %d MiB\n", copy * 1e9, local_bytes >> 20);
        printf("\n# loom-model flags\n--L %.3f --o %.3f --g %.3f --G %.4f --gamma %.4f --copy %.4f\n", L * 1e6,
               o * 1e6, gap * 1e6, G * 1e9, gamma * 1e9, copy * 1e9);
        printf("\n# MCA parameters\n");
        printf("--mca coll_loom_model_latency %.3f --mca coll_loom_model_overhead %.3f "
               "--mca coll_loom_model_gap %.3f "
               "--mca coll_loom_model_gap_per_byte %.4f --mca coll_loom_model_reduce_per_byte %.4f "
               "--mca coll_loom_model_copy_per_byte %.4f\n",
               L * 1e6, o * 1e6, gap * 1e6, G * 1e9, gamma * 1e9, copy * 1e9);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
