/*
 * loom: communicator life cycle.  Creates and frees communicators many times (dup,
 * split with shuffled keys), runs loom's allreduce and barrier on each, and bcast,
 * reduce, allgather and reduce_scatter_block forced onto twotree / ring (with a 2 MiB
 * reduce every tenth cycle, through the scratch pool), alltoall onto direct (on one
 * node through the communicator's outboxes, a shared file), so that loom builds its
 * per-communicator state (topology, schedules, scratch), and checks
 *   - every result (an integer sum whose value is known in closed form),
 *   - that loom served the calls (its MPI_T counters moved),
 *   - that neither the heap in use nor the resident set keeps growing: loom's module
 *     state must be released when a communicator is freed,
 *   - that no shared segment of the hierarchical node phases outlives its setup in
 *     coll_loom_shm_dir, and that the mappings of freed communicators' segments are
 *     gone (the count of loom segment mappings in /proc/self/maps does not grow).
 * Usage: test_lifecycle [cycles] [--shm] [--reuse] [--leak BYTES]   (default 1000 cycles)
 *   --shm: the small allreduces must have run their node phases through shared
 *          memory (coll_loom_shm_node_phases moved by at least `cycles`).
 *   --reuse: the pool of freed segments (needs coll_loom_shm_pool >= 2 and
 *          coll_loom_shm_setup_call 1, so that every cycle's dup uses a segment): first a fixed sequence whose counts of
 *          segments created and taken over are known exactly, among them a dup that must
 *          not take over (its node's ranks freed two candidates in opposite orders);
 *          then at least half the cycles' dups must take their segment over.
 *   --leak BYTES: keep BYTES more heap per cycle until the end, as a module that is
 *          never freed would (the negative control of the growth check: must FAIL).
 *   --abort-in-setup: rank 1 aborts at the 8th small allreduce on a new communicator,
 *          while the others set its node segment up (coll_loom_shm_setup_call 8): the
 *          job fails, and the runner then checks that coll_loom_shm_dir holds nothing.
 * Under valgrind (test/mpi/run-valgrind.sh) use a few cycles.
 */
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "loom_test_util.h"

static long rss_kib(void)
{
    long kib = -1;
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    if (NULL == f) {
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        if (0 == strncmp(line, "VmRSS:", 6)) {
            kib = atol(line + 6);
        }
    }
    fclose(f);
    return kib;
}

/* bytes the program holds from malloc: small blocks plus mmapped large ones */
static long heap_kib(void)
{
    struct mallinfo2 m = mallinfo2();
    return (long) ((m.uordblks + m.hblkhd) / 1024);
}

/* Memory samples after the warm-up tenth of the cycles: LT_WINDOWS windows. */
#define LT_WINDOWS 9

/* A leak of per-communicator state grows memory by the same amount every cycle, so in
 * every window.  Open MPI's point-to-point layer grows its free lists and queues in
 * steps when a loaded machine lets messages pile up, and keeps them: large growth in
 * a few windows.  Growth over limit_kib is a leak when at least two thirds of the
 * windows each carry a quarter of their even share of it, or when it exceeds 16
 * times the limit whatever its shape.  Returns 1 for a leak. */
static int sustained_growth(const long *s, long limit_kib)
{
    long total = s[LT_WINDOWS] - s[0];
    int spread = 0;
    if (total <= limit_kib) {
        return 0;
    }
    for (int w = 1; w <= LT_WINDOWS; ++w) {
        spread += s[w] - s[w - 1] > total / (4 * LT_WINDOWS);
    }
    return total > 16 * limit_kib || 3 * spread >= 2 * LT_WINDOWS;
}

/* Reports a leak of the `what` samples (see sustained_growth) with all of them;
 * returns 1 for a leak. */
static int growth_fails(const char *what, const long *s, long limit_kib, int rank, int cycles)
{
    if (!sustained_growth(s, limit_kib)) {
        return 0;
    }
    fprintf(stderr, "test_lifecycle: rank %d: FAIL: %s grew from %ld to %ld KiB over %d cycles; samples (KiB):",
            rank, what, s[0], s[LT_WINDOWS], cycles - 1 - cycles / 10);
    for (int w = 0; w <= LT_WINDOWS; ++w) {
        fprintf(stderr, " %ld", s[w]);
    }
    fprintf(stderr, "\n");
    return 1;
}

/* mappings of loom's node segments (their files are already removed) */
static int loom_maps(void)
{
    int n = 0;
    char line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    if (NULL == f) {
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        n += NULL != strstr(line, "/loom-");
    }
    fclose(f);
    return n;
}

/* loom segment files in dir when this job made none yet: another job's (a killed job
 * can leave one behind), not counted against this one */
#define LT_MAX_FOREIGN 64
static char lt_foreign[LT_MAX_FOREIGN][2 * NAME_MAX + 2];
static int lt_nforeign;

static bool lt_is_foreign(const char *name)
{
    for (int i = 0; i < lt_nforeign; ++i) {
        if (0 == strcmp(lt_foreign[i], name)) {
            return true;
        }
    }
    return false;
}

static int lt_count_file(const char *name, bool note)
{
    if (note && lt_nforeign < LT_MAX_FOREIGN) {
        snprintf(lt_foreign[lt_nforeign++], sizeof(lt_foreign[0]), "%s", name);
    }
    return note || !lt_is_foreign(name);
}

/* loom segment files present in dir: the files in its loom-* directories (one per
 * process that created segments, kept until the process ends) and any loom-* file
 * directly in it (earlier builds).  `note`: remember them as foreign, else count only
 * those that are not */
static int loom_files(const char *dir, bool note)
{
    int n = 0;
    struct dirent *e;
    DIR *d = opendir(dir);
    if (NULL == d) {
        return 0;
    }
    while (NULL != (e = readdir(d))) {
        char sub[PATH_MAX], name[2 * NAME_MAX + 2];
        DIR *sd;
        struct dirent *f;
        if (0 != strncmp(e->d_name, "loom-", 5)) {
            continue;
        }
        snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
        if (NULL == (sd = opendir(sub))) {
            n += lt_count_file(e->d_name, note);
            continue;
        }
        while (NULL != (f = readdir(sd))) {
            if (0 != strcmp(f->d_name, ".") && 0 != strcmp(f->d_name, "..")) {
                snprintf(name, sizeof(name), "%s/%s", e->d_name, f->d_name);
                n += lt_count_file(name, note);
            }
        }
        closedir(sd);
    }
    closedir(d);
    return n;
}

/* An allreduce of count ints, checked; then a barrier unless `last` (the caller frees
 * the communicator right after: its last call then leaves ranks still reading). */
static int check_sum_last(MPI_Comm comm, int count, int *fails, int last)
{
    int size, rank;
    int *buf = malloc((size_t) count * sizeof(int));
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    for (int i = 0; i < count; ++i) {
        buf[i] = rank + i;
    }
    MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < count; ++i) {
        int want = size * (size - 1) / 2 + size * i;
        if (buf[i] != want) {
            if ((*fails)++ < 10) {
                fprintf(stderr, "test_lifecycle: rank %d: element %d is %d, expected %d\n", rank, i,
                        buf[i], want);
            }
            break;
        }
    }
    free(buf);
    if (!last) {
        MPI_Barrier(comm);
    }
    return 0;
}

static int check_sum(MPI_Comm comm, int count, int *fails)
{
    return check_sum_last(comm, count, fails, 0);
}

/* A reduce of count ints to `root` through hierarchical (forced for this call), as a
 * communicator's last call: the ranks other than the node's coordinator leave at once. */
static void check_reduce_last(MPI_Comm comm, int count, int root, int *fails)
{
    int size, rank;
    int *in = malloc((size_t) count * sizeof(int)), *out = malloc((size_t) count * sizeof(int));
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    for (int i = 0; i < count; ++i) {
        in[i] = rank * 3 + i;
        out[i] = -1;
    }
    lt_cvar_write_str("coll_loom_reduce_algorithm", "hierarchical");
    MPI_Reduce(in, out, count, MPI_INT, MPI_SUM, root, comm);
    lt_cvar_write_str("coll_loom_reduce_algorithm", "twotree");
    for (int i = 0; rank == root && i < count; ++i) {
        if (out[i] != 3 * size * (size - 1) / 2 + size * i) {
            if ((*fails)++ < 10) {
                fprintf(stderr, "test_lifecycle: rank %d: hierarchical reduce element %d is %d, expected %d\n",
                        rank, i, out[i], 3 * size * (size - 1) / 2 + size * i);
            }
            break;
        }
    }
    free(in);
    free(out);
}

/* Two dups of WORLD with an allreduce of na and nb ints each, freed in opposite orders
 * by the even and odd ranks of each node (local: the rank's index on its node): the
 * pool of each rank then offers a different one first, and the next dup's ranks must
 * set up a segment of their own. */
static void dup_pair_free_crossed(int local, int na, int nb, int *fails)
{
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    check_sum(a, na, fails);
    check_sum(b, nb, fails);
    MPI_Comm_free(local % 2 ? &a : &b);
    MPI_Comm_free(local % 2 ? &b : &a);
}

/* The pool of freed segments, step by step; `local`: this rank's index on its node,
 * `nlocal`: the node's ranks in WORLD.  Returns the failures. */
static int check_reuse(int local, int nlocal)
{
    static const char *const step[] = {"first dup", "second dup", "dups a and b", "after a and b"};
    /* per step: segments created, taken over (by a rank whose node has others) */
    static const unsigned long long want[4][2] = {{1, 0}, {0, 1}, {1, 1}, {1, 0}};
    unsigned long long c0, c1, r0, r1;
    int fails = 0, rank;
    MPI_Comm d;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int s = 0; s < 4; ++s) {
        lt_shm_counter(LT_SHM_SEGMENTS_CREATED, &c0);
        lt_shm_counter(LT_SHM_SEGMENTS_REUSED, &r0);
        if (2 == s) {
            dup_pair_free_crossed(local, 3, 300, &fails);
        } else {
            MPI_Comm_dup(MPI_COMM_WORLD, &d);
            check_sum(d, 1 + s, &fails);
            check_sum(d, 200 + s, &fails);
            MPI_Comm_free(&d);
        }
        lt_shm_counter(LT_SHM_SEGMENTS_CREATED, &c1);
        lt_shm_counter(LT_SHM_SEGMENTS_REUSED, &r1);
        const unsigned long long wc = nlocal > 1 ? want[s][0] : 0, wr = nlocal > 1 ? want[s][1] : 0;
        if (c1 - c0 != wc || r1 - r0 != wr) {
            fprintf(stderr, "test_lifecycle: rank %d: FAIL: %s: %llu segments created, %llu taken "
                    "over; expected %llu and %llu (coll_loom_shm_pool)\n", rank, step[s], c1 - c0,
                    r1 - r0, wc, wr);
            fails++;
        }
    }
    return fails;
}

/* The other collectives loom serves, forced onto its pipelined algorithms (small
 * chunks, so the schedules have many blocks), checked; every tenth cycle one reduce
 * large enough to go through the scratch pool. */
#define LT_OTHERS_N   3000
#define LT_CHUNK      1000
#define LT_OTHERS_BIG (1 << 19)

/* a, b: LT_OTHERS_BIG * size ints each, allocated once (so the test's own large
 * allocations do not move the allocator's state between the RSS samples) */
static void check_others(MPI_Comm comm, int c, int *a, int *b, int *fails)
{
    int size, rank, n = LT_OTHERS_N, big = (0 == c % 10) ? LT_OTHERS_BIG : 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    int m = n > big ? n : big;
    for (int i = 0; i < m * size; ++i) {
        a[i] = rank + i;
    }
    MPI_Bcast(a, n, MPI_INT, c % size, comm);
    for (int i = 0; i < n; ++i) {
        if (a[i] != c % size + i) {
            if ((*fails)++ < 10) fprintf(stderr, "test_lifecycle: bcast element %d is %d\n", i, a[i]);
            break;
        }
    }
    for (int i = 0; i < m * size; ++i) {
        a[i] = rank + i;
    }
    int cnt = big ? big : n;
    /* the large reduce in 64 KiB chunks: in 1000-byte ones it is 2000 hops of the
     * pipeline, each waiting for a time slice when ranks share cores with other work
     * (the whole test ran 10x slower next to one busy process) */
    if (big) lt_cvar_write_int("coll_loom_twotree_chunk_size", 65536);
    MPI_Reduce(a, b, cnt, MPI_INT, MPI_SUM, 0, comm);
    if (big) lt_cvar_write_int("coll_loom_twotree_chunk_size", LT_CHUNK);
    for (int i = 0; 0 == rank && i < cnt; ++i) {
        if (b[i] != size * (size - 1) / 2 + size * i) {
            if ((*fails)++ < 10) fprintf(stderr, "test_lifecycle: reduce element %d is %d\n", i, b[i]);
            break;
        }
    }
    MPI_Allgather(a, n, MPI_INT, b, n, MPI_INT, comm);
    for (int r = 0; r < size; ++r) {
        if (b[r * n + n - 1] != r + n - 1) {
            if ((*fails)++ < 10) fprintf(stderr, "test_lifecycle: allgather part %d wrong\n", r);
            break;
        }
    }
    MPI_Reduce_scatter_block(a, b, n, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < n; ++i) {
        if (b[i] != size * (size - 1) / 2 + size * (rank * n + i)) {
            if ((*fails)++ < 10) fprintf(stderr, "test_lifecycle: reduce_scatter_block element %d is %d\n", i, b[i]);
            break;
        }
    }
    /* prefixes of a[i] = rank + i over ranks 0..k-1: k (k - 1) / 2 + k i */
    MPI_Scan(a, b, n, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < n; ++i) {
        if (b[i] != (rank + 1) * rank / 2 + (rank + 1) * i) {
            if ((*fails)++ < 10) fprintf(stderr, "test_lifecycle: scan element %d is %d\n", i, b[i]);
            break;
        }
    }
    MPI_Exscan(a, b, n, MPI_INT, MPI_SUM, comm);
    for (int i = 0; rank > 0 && i < n; ++i) {
        if (b[i] != rank * (rank - 1) / 2 + rank * i) {
            if ((*fails)++ < 10) fprintf(stderr, "test_lifecycle: exscan element %d is %d\n", i, b[i]);
            break;
        }
    }
    /* on one node through the outboxes of the communicator (a shared file of its own) */
    MPI_Alltoall(a, n, MPI_INT, b, n, MPI_INT, comm);
    for (int r = 0; r < size; ++r) {
        if (b[r * n] != r + rank * n || b[r * n + n - 1] != r + rank * n + n - 1) {
            if ((*fails)++ < 10) fprintf(stderr, "test_lifecycle: alltoall part %d wrong\n", r);
            break;
        }
    }
}

#define LT_NOTHERS 7

int main(int argc, char **argv)
{
    int cycles = 1000, want_shm = 0, want_reuse = 0, maps_warm = 0, maps_end = 0, sample = 0;
    unsigned long long reused_before = 0, reused_after = 0;
    long leak = 0, rss[LT_WINDOWS + 1] = {0}, heap[LT_WINDOWS + 1] = {0};
    char **leaked = NULL;
    unsigned long long shm_before = 0, shm_after = 0;
    char shm_dir[256] = "/dev/shm";
    int rank, size, fails = 0, total_fails = 0;
    lt_counts_t before, after;
    unsigned long long served = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--shm")) {
            want_shm = 1;
        } else if (0 == strcmp(argv[i], "--reuse")) {
            want_reuse = 1;
        } else if (0 == strcmp(argv[i], "--abort-in-setup")) {
            MPI_Comm c;
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
            for (int k = 0; k < 20; ++k) {
                int x = 1;
                if (7 == k && 1 == rank) {
                    abort();
                }
                MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, c);
            }
            fprintf(stderr, "test_lifecycle: --abort-in-setup: rank %d was not aborted\n", rank);
            MPI_Finalize();
            return 1;
        } else if (0 == strcmp(argv[i], "--leak") && i + 1 < argc) {
            leak = atol(argv[++i]);
        } else {
            cycles = atoi(argv[i]);
        }
    }
    if (lt_init() <= 0) {
        if (0 == rank) {
            fprintf(stderr, "test_lifecycle: FAIL: loom's MPI_T counters are missing (not loaded?)\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    lt_read(LT_ALLREDUCE, &before);
    lt_cvar_read_str("coll_loom_shm_dir", shm_dir, sizeof(shm_dir));
    /* before this job's first collective, so before any segment of its own */
    if (loom_files(shm_dir, true) > 0 && 0 == rank) {
        printf("test_lifecycle: %d loom-* files of another job in %s, not counted\n", lt_nforeign, shm_dir);
    }
    if (want_shm && 0 != lt_shm_node_phases(&shm_before)) {
        fprintf(stderr, "test_lifecycle: rank %d: FAIL: no coll_loom_shm_node_phases counter\n", rank);
        fails++;
    }
    int nlocal = 1, local = 0;
    {
        MPI_Comm node;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &local);
        MPI_Comm_size(node, &nlocal);
        MPI_Comm_free(&node);
    }
    if (want_reuse) {
        int setup_call = 0, pool = 0, shm = 0;
        if (0 != lt_shm_counter(LT_SHM_SEGMENTS_REUSED, &reused_before) ||
            MPI_SUCCESS != lt_cvar_read_int("coll_loom_shm_setup_call", &setup_call) || setup_call > 1 ||
            MPI_SUCCESS != lt_cvar_read_int("coll_loom_shm_pool", &pool) ||
            MPI_SUCCESS != lt_cvar_read_int("coll_loom_shm", &shm) || !shm) {
            fprintf(stderr, "test_lifecycle: rank %d: FAIL: --reuse needs the counter "
                    "coll_loom_shm_segments_reused, coll_loom_shm 1 (it is %d) and --mca "
                    "coll_loom_shm_setup_call 1 (it is %d)\n", rank, shm, setup_call);
            fails++;
        } else if (pool < 2) {
            /* a deliberate setting (the negative control): the counts below must then fail */
            if (0 == rank) {
                printf("test_lifecycle: coll_loom_shm_pool is %d; --reuse expects at least 2\n", pool);
            }
            fails += check_reuse(local, nlocal);
        } else {
            fails += check_reuse(local, nlocal);
        }
        lt_shm_counter(LT_SHM_SEGMENTS_REUSED, &reused_before);
    }
    {
        /* MPI_Comm_split_type runs an allreduce on its parent, so WORLD's own segment
         * would be set up at its coll_loom_shm_setup_call-th call, in the middle of the
         * cycles, and look like a mapping that grew: it is set up now */
        int setup_call = 8;
        lt_cvar_read_int("coll_loom_shm_setup_call", &setup_call);
        for (int k = 0; k < setup_call; ++k) {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    lt_counts_t obefore[LT_NOTHERS], oafter[LT_NOTHERS];
    static const lt_coll_t others[LT_NOTHERS] = {LT_BCAST,     LT_REDUCE, LT_ALLGATHER, LT_REDUCE_SCATTER_BLOCK,
                                                 LT_SCAN, LT_EXSCAN, LT_ALLTOALL};
    static const char *forced[LT_NOTHERS][2] = {{"coll_loom_bcast_algorithm", "twotree"},
                                                 {"coll_loom_reduce_algorithm", "twotree"},
                                                 {"coll_loom_allgather_algorithm", "ring"},
                                                 {"coll_loom_reduce_scatter_block_algorithm", "ring"},
                                                 {"coll_loom_scan_algorithm", "hierarchical"},
                                                 {"coll_loom_exscan_algorithm", "recursive_doubling"},
                                                 {"coll_loom_alltoall_algorithm", "direct"}};
    for (int k = 0; k < LT_NOTHERS; ++k) {
        if (MPI_SUCCESS != lt_cvar_write_str(forced[k][0], forced[k][1])) {
            fprintf(stderr, "test_lifecycle: rank %d: FAIL: cannot set %s\n", rank, forced[k][0]);
            fails++;
        }
        lt_read(others[k], &obefore[k]);
    }
    int *oa = malloc((size_t) LT_OTHERS_BIG * size * sizeof(int));
    int *ob = malloc((size_t) LT_OTHERS_BIG * size * sizeof(int));
    lt_cvar_write_int("coll_loom_twotree_chunk_size", LT_CHUNK);
    lt_cvar_write_int("coll_loom_ring_segment_size", 4 * LT_CHUNK);
    if (leak > 0) {
        leaked = calloc((size_t) cycles, sizeof(char *));
    }

    for (int c = 0; c < cycles; ++c) {
        MPI_Comm dup, split;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        /* shuffled keys: rank order in the split differs from WORLD's */
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, (rank * 7 + c) % size, &split);
        check_sum(dup, 1 + c % 7, &fails);
        check_sum(split, 255, &fails);
        check_others(dup, c, oa, ob, &fails);
        /* the dup's last call, with no barrier after it before the free: an allreduce
         * of more than 256 B (on one node the coordinated protocol, not the symmetric
         * one), or a reduce whose non-coordinators leave at once */
        if (c % 3) {
            check_sum_last(dup, 100 + c % 41, &fails, 1);
        } else {
            check_reduce_last(dup, 60 + c % 7, c % size, &fails);
        }
        MPI_Comm_free(&split);
        MPI_Comm_free(&dup);
        if (0 == c % 5) {
            dup_pair_free_crossed(local, 2, 70, &fails);
        } else if (1 == c % 5) {
            /* one node's ranks, as a freed dup of WORLD held them: on several nodes it
             * takes a segment over from a communicator of coordinated calls only and
             * makes symmetric ones */
            MPI_Comm node;
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
            check_sum(node, 3, &fails);
            check_sum_last(node, 90, &fails, 1);
            MPI_Comm_free(&node);
        }
        if (NULL != leaked) {
            leaked[c] = malloc((size_t) leak);
            memset(leaked[c], c, (size_t) leak);
        }
        /* samples at the end of cycles w = 0..LT_WINDOWS of the last nine tenths */
        if (sample <= LT_WINDOWS && c == cycles / 10 + (long) sample * (cycles - 1 - cycles / 10) / LT_WINDOWS) {
            rss[sample] = rss_kib();
            heap[sample] = heap_kib();
            if (0 == sample) {
                maps_warm = loom_maps();
            }
            sample++;
        }
    }
    maps_end = loom_maps();
    if (maps_end > maps_warm) {
        fprintf(stderr, "test_lifecycle: rank %d: FAIL: loom segment mappings grew from %d to %d\n", rank,
                maps_warm, maps_end);
        fails++;
    }
    /* every node's files: the leaders remove them as soon as the node has mapped them */
    MPI_Barrier(MPI_COMM_WORLD);
    if (loom_files(shm_dir, false) > 0) {
        fprintf(stderr, "test_lifecycle: rank %d: FAIL: %d loom-* files left in %s\n", rank,
                loom_files(shm_dir, false), shm_dir);
        fails++;
    }
    if (want_shm) {
        lt_shm_node_phases(&shm_after);
        if (shm_after - shm_before < (unsigned long long) cycles) {
            fprintf(stderr, "test_lifecycle: rank %d: FAIL: %llu node phases through shared memory, "
                    "expected at least %d\n", rank, shm_after - shm_before, cycles);
            fails++;
        }
    }
    if (want_reuse) {
        lt_shm_counter(LT_SHM_SEGMENTS_REUSED, &reused_after);
        /* a rank alone on its node has no segment */
        if (nlocal > 1 && reused_after - reused_before < (unsigned long long) cycles / 2) {
            fprintf(stderr, "test_lifecycle: rank %d: FAIL: %llu segments taken over from freed "
                    "communicators in %d cycles, expected at least %d\n", rank,
                    reused_after - reused_before, cycles, cycles / 2);
            fails++;
        }
    }
    for (int c = 0; NULL != leaked && c < cycles; ++c) {
        free(leaked[c]);
    }
    free(leaked);
    free(oa);
    free(ob);
    lt_read(LT_ALLREDUCE, &after);
    for (int k = 0; k < LT_NOTHERS && size > 1; ++k) {
        unsigned long long got = 0;
        lt_read(others[k], &oafter[k]);
        for (int a = 0; a < lt_nalgs(others[k]); ++a) {
            got += oafter[k].alg[a] - obefore[k].alg[a];
        }
        if (got < (unsigned long long) cycles) {
            fprintf(stderr, "test_lifecycle: rank %d: FAIL: loom served %llu of %d %s calls\n", rank, got,
                    cycles, forced[k][0]);
            fails++;
        }
    }
    for (int a = 0; a < lt_nalgs(LT_ALLREDUCE); ++a) {
        served += after.alg[a] - before.alg[a];
    }
    /* two allreduces per cycle; the split halves have one rank when size < 4 */
    if (size > 1 && served < (unsigned long long) cycles) {
        fprintf(stderr, "test_lifecycle: rank %d: FAIL: loom served %llu allreduces, expected at least %d\n",
                rank, served, cycles);
        fails++;
    }
    /* loom's state per communicator is several KiB: a leak of it over the measured
     * cycles passes the 1 MiB (heap) and 2 MiB (resident set) limits, in every window */
    if (cycles >= 100 && sample == LT_WINDOWS + 1) {
        fails += growth_fails("heap in use", heap, 1024, rank, cycles);
        fails += rss[0] > 0 ? growth_fails("resident set", rss, 2048, rank, cycles) : 0;
    } else if (cycles >= 100) {
        fprintf(stderr, "test_lifecycle: rank %d: FAIL: %d of %d memory samples taken\n", rank, sample,
                LT_WINDOWS + 1);
        fails++;
    }
    MPI_Allreduce(&fails, &total_fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_lifecycle: np=%d cycles=%d heap %ld -> %ld KiB, rss %ld -> %ld KiB, loom segment "
               "mappings %d -> %d, shared-memory node phases %llu, segments taken over %llu: %s\n",
               size, cycles, heap[0], heap[LT_WINDOWS], rss[0], rss[LT_WINDOWS], maps_warm, maps_end,
               shm_after - shm_before, reused_after - reused_before, total_fails ? "FAIL" : "ok");
    }
    lt_fini();
    MPI_Finalize();
    return total_fails ? 1 : 0;
}
