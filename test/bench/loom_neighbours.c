/*
 * loom_neighbours: what the network (or its emulation) delivers when every rank of a 2-D
 * torus exchanges a message with its neighbours at once, without loom: the traffic of one
 * step of swing's torus form.  The ranks are the nodes of an X x Y torus in row-major order
 * (rank = x * Y + y, as loomnodeI of the emulated torus), one per node.
 *
 *   loom_neighbours [-x X] [-y Y] [-m bytes] [-l 1|2|4] [-r rounds]
 *
 * -l 4: each rank sends `bytes` to each of its four neighbours and receives as much from
 * each; 2: its two neighbours in x; 1: one neighbour in x (x even with x + 1; X even).
 * Prints, per round, the slowest rank's time, then their median and the rate it means on
 * each link (bytes / time).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int X = 4, Y = 4, links = 4, rounds = 5, rank, size;
    size_t bytes = 524288;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (0 == strcmp(argv[i], "-x")) X = atoi(argv[i + 1]);
        else if (0 == strcmp(argv[i], "-y")) Y = atoi(argv[i + 1]);
        else if (0 == strcmp(argv[i], "-m")) bytes = (size_t) atol(argv[i + 1]);
        else if (0 == strcmp(argv[i], "-l")) links = atoi(argv[i + 1]);
        else if (0 == strcmp(argv[i], "-r")) rounds = atoi(argv[i + 1]);
    }
    if (X * Y != size || (1 != links && 2 != links && 4 != links) || (1 == links && X % 2) || rounds < 1 ||
        rounds > 1000) {
        if (0 == rank) {
            fprintf(stderr, "usage: loom_neighbours [-x X] [-y Y] [-m bytes] [-l 1|2|4] [-r rounds] "
                            "(X * Y ranks; -l 1 needs X even)\n");
        }
        MPI_Finalize();
        return 2;
    }
    const int x = rank / Y, y = rank % Y;
    /* +x, -x, +y, -y; a message to neighbour l is tagged l, so it is received under the
     * tag of the opposite direction (back[l]) */
    int nb[4] = {(x + 1) % X * Y + y, (x + X - 1) % X * Y + y, x * Y + (y + 1) % Y, x * Y + (y + Y - 1) % Y};
    int back[4] = {1, 0, 3, 2};
    if (1 == links) {
        nb[0] = (x ^ 1) * Y + y;
        back[0] = 0;
    }
    char *sb = calloc((size_t) links, bytes), *rb = calloc((size_t) links, bytes);
    double *t = calloc((size_t) rounds, sizeof(double));
    if (NULL == sb || NULL == rb || NULL == t) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int it = 0; it < rounds; ++it) {
        MPI_Request q[8];
        int k = 0;
        double mine, slowest;
        MPI_Barrier(MPI_COMM_WORLD);
        mine = MPI_Wtime();
        for (int l = 0; l < links; ++l) {
            MPI_Irecv(rb + (size_t) l * bytes, (int) bytes, MPI_BYTE, nb[l], back[l], MPI_COMM_WORLD, &q[k++]);
            MPI_Isend(sb + (size_t) l * bytes, (int) bytes, MPI_BYTE, nb[l], l, MPI_COMM_WORLD, &q[k++]);
        }
        MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
        mine = MPI_Wtime() - mine;
        MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        t[it] = slowest;
        if (0 == rank) {
            printf("round %d: %.1f ms\n", it, slowest * 1e3);
        }
    }
    if (0 == rank) {
        qsort(t, (size_t) rounds, sizeof(double), cmp_double);
        printf("loom_neighbours: %d ranks (%d x %d), %zu bytes on each of %d links: median %.1f ms, "
               "%.2f MB/s per link\n", size, X, Y, bytes, links, t[rounds / 2] * 1e3,
               (double) bytes / t[rounds / 2] / 1e6);
    }
    free(sb);
    free(rb);
    free(t);
    MPI_Finalize();
    return 0;
}
