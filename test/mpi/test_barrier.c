/*
 * loom: MPI_Barrier correctness test that proves loom served the calls.
 *
 * What a barrier must guarantee: no rank leaves it before every rank has entered
 * it.  This test checks that property with two independent witnesses, for every
 * barrier algorithm loom exposes (found through its coll_loom_barrier_<alg>_calls
 * counters; dissemination with n = 1..4), auto, and the communicators WORLD, a
 * parity split with shuffled keys, a dup of WORLD and SELF:
 *
 * 1. Clock witness.  Before each barrier every rank waits a rank- and
 *    iteration-dependent time (one "late" rank waits ~3 ms, the others 0..0.6 ms),
 *    then reads t_enter, calls MPI_Barrier, reads t_exit.  The pairs are exchanged
 *    afterwards (over a communicator loom does not serve) and every rank checks
 *        t_exit(me) >= max over all ranks of t_enter.
 *    Soundness: t_enter(j) is read before rank j enters, t_exit(i) after rank i
 *    leaves; a correct barrier orders j's entry before i's exit, so with ONE clock
 *    the inequality must hold.  We read CLOCK_MONOTONIC, which Linux keeps as a
 *    single system-wide clock (MPI_Wtime of Open MPI 4.1 has a per-process
 *    origin, so it is not used).  Ranks on different kernels would not share it:
 *    a ping-pong causality check at start-up (a timestamp received must not be
 *    later than the receiver's clock, in both directions, with every rank) decides
 *    whether the clocks are comparable; if not, this witness is skipped (reported).
 *    The check cannot give a false failure from scheduling noise: it compares
 *    causally ordered events, never durations.
 *
 * 2. RMA witness (clock-free).  One window on a loom-free dup of WORLD holds, on
 *    world rank 0, a counter per tested communicator (per half of the split, per
 *    rank for SELF).  Before each barrier every rank does MPI_Accumulate(+1) to
 *    it and MPI_Win_flush (the update is complete AT THE TARGET when flush
 *    returns), then enters the barrier.  After the barrier every rank reads the
 *    counter with MPI_Fetch_and_op(MPI_NO_OP) + flush and requires
 *        counter >= P * (barriers so far on this communicator).
 *    Soundness: all P increments of this round completed before their ranks
 *    entered the barrier, hence (barrier semantics) before any rank's read;
 *    accumulate operations on the same location are atomic.  Ranks already in the
 *    next round can only make the counter larger, hence ">=".
 *
 * Plus the counter proof: around every barrier exactly one loom barrier counter
 * moves by one; a forced algorithm must be the one that ran (barrier has no op, so
 * a forced barrier algorithm always applies); auto may also hand the call to the
 * previous component; 1-rank communicators move nothing.
 *
 * Options: --env-alg NAME (the algorithm was forced from outside; no cvar writes),
 *          --default-check (no cvar writes; loom must serve by default),
 *          --iters K (barriers per configuration, default 8), --no-rma, -v.
 * Exit status: 0 pass, 1 failure, 2 loom not loaded.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "loom_test_util.h"

static int wrank, wsize;
static long nchecks = 0, nbarriers = 0;
static int verbose = 0, iters = 8, use_rma = 1;

#define FAIL(...) lt_fail(wrank, __VA_ARGS__)

typedef struct {
    const char *name;
    MPI_Comm comm, oracle;
    int rank, size, own;
    int slot;         /* its counter in the RMA window */
    long rounds;      /* barriers done on this communicator (for the RMA witness) */
} comm_t;

typedef struct {
    char alg[LT_NAME_LEN];
    int n;
} setting_t;

/* The RMA witness: counters on world rank 0 (one window for all communicators: a
 * window per split half would give Open MPI 4.1's osc/sm two segments that can
 * collide, since disjoint communicators may share a context id). */
static MPI_Win g_win = MPI_WIN_NULL;
static long *g_winmem = NULL;

static char default_alg[LT_NAME_LEN] = "auto";
static int default_ways = -1, default_ports = -1;
static int clocks_ok = 1;

static void sleep_us(long us)
{
    if (us <= 0) return;
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Are the ranks' CLOCK_MONOTONIC readings comparable?  Causality ping-pong between
 * world rank 0 and every other rank, in both directions (pt2pt only). */
static int check_clocks(void)
{
    int ok = 1;
    for (int j = 1; j < wsize; j++) {
        if (wrank == 0) {
            double t = lt_mono_time(), back;
            MPI_Send(&t, 1, MPI_DOUBLE, j, 77, MPI_COMM_WORLD);
            MPI_Recv(&back, 1, MPI_DOUBLE, j, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (lt_mono_time() < back) ok = 0;
        } else if (wrank == j) {
            double t;
            MPI_Recv(&t, 1, MPI_DOUBLE, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (lt_mono_time() < t) ok = 0;
            t = lt_mono_time();
            MPI_Send(&t, 1, MPI_DOUBLE, 0, 78, MPI_COMM_WORLD);
        }
    }
    int all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* Writes the algorithm and knob cvars (same values on every rank). */
static int apply_setting(const setting_t *s)
{
    const char *failed;
    int value, rc = lt_apply_setting("coll_loom_barrier_algorithm", s->alg, s->n, default_ways,
                                     default_ports, &failed, &value);
    if (MPI_SUCCESS != rc) {
        FAIL("cannot set %s through MPI_T (value %s / %d): %s", failed, s->alg, value, lt_errstr(rc));
    }
    return rc;
}

static void restore_defaults(void)
{
    lt_restore_settings("coll_loom_barrier_algorithm", default_alg, default_ways, default_ports);
}

/* `iters` barriers on one communicator under the current setting. */
static void run_config(comm_t *c, const setting_t *s, unsigned salt)
{
    char sd[LT_NAME_LEN + 32], label[256];
    double *mine = malloc(sizeof(double) * 2 * iters);
    double *all = malloc(sizeof(double) * 2 * iters * c->size);
    int P = c->size;

    if (s->n > 0) snprintf(sd, sizeof(sd), "%.*s(n=%d)", LT_NAME_LEN - 1, s->alg, s->n % 1000);
    else snprintf(sd, sizeof(sd), "%.*s", LT_NAME_LEN - 1, s->alg);

    for (int it = 0; it < iters; it++) {
        lt_counts_t before, after;
        lt_diff_t d;
        snprintf(label, sizeof(label), "barrier comm=%s(P=%d,rank=%d) alg=%s iteration=%d", c->name, P, c->rank, sd, it);
        /* who is late this time: rotates, pseudo-randomly */
        int late = (int) (mix64(salt * 1315423911u + (unsigned) it) % (uint64_t) P);
        long wait_us = c->rank == late ? 3000 : (long) (mix64((uint64_t) c->rank * 31u + (uint64_t) it) % 4) * 200;
        if (it == iters - 1) wait_us = 0; /* one round without delays: back-to-back barriers */

        if (g_win != MPI_WIN_NULL) {
            long one = 1;
            MPI_Accumulate(&one, 1, MPI_LONG, 0, c->slot, 1, MPI_LONG, MPI_SUM, g_win);
            MPI_Win_flush(0, g_win);
        }
        sleep_us(wait_us);
        lt_read(LT_BARRIER, &before);
        double t_enter = lt_mono_time();
        int rc = MPI_Barrier(c->comm);
        double t_exit = lt_mono_time();
        lt_read(LT_BARRIER, &after);
        nbarriers++;
        c->rounds++;
        mine[2 * it] = t_enter;
        mine[2 * it + 1] = t_exit;
        if (MPI_SUCCESS != rc) FAIL("%s: MPI_Barrier returned %d", label, rc);

        if (g_win != MPI_WIN_NULL) {
            long v = -1, dummy = 0;
            MPI_Fetch_and_op(&dummy, &v, MPI_LONG, 0, c->slot, MPI_NO_OP, g_win);
            MPI_Win_flush(0, g_win);
            nchecks++;
            if (v < (long) P * c->rounds)
                FAIL("%s: left the barrier when only %ld of %ld entries had happened (RMA witness): a rank was "
                     "released before every rank entered",
                     label, v - (long) P * (c->rounds - 1), (long) P);
        }

        lt_diff(LT_BARRIER, &before, &after, &d);
        nchecks++;
        if (P == 1) {
            if (d.changed) FAIL("%s: loom counters moved on a 1-rank communicator (%s)", label, d.desc);
        } else if (d.changed != 1 || d.delta != 1) {
            FAIL("%s: expected exactly one loom barrier counter +1, got: %s", label, d.desc);
        } else if (0 != strcmp(s->alg, "auto")) {
            if (d.which == LT_WHICH_FALLBACK)
                FAIL("%s: forced %s handed the barrier to the previous component", label, s->alg);
            else if (0 != strcmp(lt_alg_name(LT_BARRIER, d.which), s->alg))
                FAIL("%s: forced %s but %s ran", label, s->alg, lt_alg_name(LT_BARRIER, d.which));
        }
    }

    /* clock witness, checked after the fact */
    MPI_Allgather(mine, 2 * iters, MPI_DOUBLE, all, 2 * iters, MPI_DOUBLE, c->oracle);
    if (clocks_ok) {
        for (int it = 0; it < iters; it++) {
            double last_enter = -1;
            int last_rank = -1;
            for (int r = 0; r < P; r++)
                if (all[(size_t) r * 2 * iters + 2 * it] > last_enter) {
                    last_enter = all[(size_t) r * 2 * iters + 2 * it];
                    last_rank = r;
                }
            nchecks++;
            if (mine[2 * it + 1] < last_enter)
                FAIL("barrier comm=%s(P=%d,rank=%d) alg=%s iteration=%d: left the barrier %.1f us BEFORE rank %d "
                     "entered it (clock witness)",
                     c->name, P, c->rank, sd, it, 1e6 * (last_enter - mine[2 * it + 1]), last_rank);
        }
    }
    free(mine);
    free(all);
}

static void make_comms(comm_t *cs, int *ncs)
{
    int n = 0;
    MPI_Comm split, dup;
    int key = (int) (mix64((uint64_t) wrank * 7919u + 17u) % 1000003u);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, key, &split);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    cs[n++] = (comm_t){"world", MPI_COMM_WORLD, MPI_COMM_NULL, 0, 0, 0, 0, 0};
    cs[n++] = (comm_t){"split", split, MPI_COMM_NULL, 0, 0, 1, 1 + wrank % 2, 0};
    cs[n++] = (comm_t){"dup", dup, MPI_COMM_NULL, 0, 0, 1, 3, 0};
    cs[n++] = (comm_t){"self", MPI_COMM_SELF, MPI_COMM_NULL, 0, 0, 0, 4 + wrank, 0};
    for (int i = 0; i < n; i++) {
        MPI_Comm_rank(cs[i].comm, &cs[i].rank);
        MPI_Comm_size(cs[i].comm, &cs[i].size);
        MPI_Comm_set_errhandler(cs[i].comm, MPI_ERRORS_RETURN);
        lt_dup_with_pref(cs[i].comm, "tuned,^loom", &cs[i].oracle);
    }
    *ncs = n;
    if (use_rma) {
        MPI_Comm_set_errhandler(cs[0].oracle, MPI_ERRORS_RETURN);
        MPI_Aint bytes = wrank == 0 ? (MPI_Aint) sizeof(long) * (4 + wsize) : 0;
        int rc = MPI_Win_allocate(bytes, sizeof(long), MPI_INFO_NULL, cs[0].oracle, &g_winmem, &g_win);
        int ok = MPI_SUCCESS == rc, all;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, cs[0].oracle);
        if (!all) {
            if (ok) MPI_Win_free(&g_win);
            g_win = MPI_WIN_NULL;
            if (wrank == 0) printf("note: MPI_Win_allocate failed: RMA witness skipped\n");
            return;
        }
        MPI_Win_set_errhandler(g_win, MPI_ERRORS_RETURN);
        MPI_Win_lock_all(0, g_win);
        if (wrank == 0) {
            long *zeros = calloc((size_t) (4 + wsize), sizeof(long));
            MPI_Put(zeros, 4 + wsize, MPI_LONG, 0, 0, 4 + wsize, MPI_LONG, g_win);
            MPI_Win_flush(0, g_win);
            free(zeros);
        }
        MPI_Barrier(cs[0].oracle); /* zeroed before anyone accumulates */
    }
}

int main(int argc, char **argv)
{
    const char *env_alg = NULL;
    int default_check = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--env-alg") && i + 1 < argc) env_alg = argv[++i];
        else if (0 == strcmp(argv[i], "--default-check")) default_check = 1;
        else if (0 == strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (0 == strcmp(argv[i], "--no-rma")) use_rma = 0;
        else if (0 == strcmp(argv[i], "-v")) verbose = 1;
        else if (0 == strcmp(argv[i], "--max-report") && i + 1 < argc) lt_max_report = atoi(argv[++i]);
        else {
            if (wrank == 0)
                fprintf(stderr, "usage: %s [--env-alg NAME | --default-check] [--iters K] [--no-rma] [-v]\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    if (iters < 1) iters = 1;
    double t0 = MPI_Wtime();

    if (lt_init() <= 0) {
        if (wrank == 0)
            fprintf(stderr, "FAIL test_barrier: no coll_loom_* performance variable exists: loom is not loaded\n");
        MPI_Finalize();
        return 2;
    }
    if (lt_nalgs(LT_BARRIER) == 0) FAIL("loom exposes no coll_loom_barrier_<alg>_calls counter");
    if (lt_alg_index(LT_BARRIER, "dissemination") < 0) FAIL("no counter coll_loom_barrier_dissemination_calls");
    if (!lt_has_fallback(LT_BARRIER)) FAIL("no counter coll_loom_barrier_fallback_calls");
    {
        int rc = lt_cvar_read_str("coll_loom_barrier_algorithm", default_alg, sizeof(default_alg));
        if (MPI_SUCCESS != rc) {
            FAIL("cannot read cvar coll_loom_barrier_algorithm: %s", lt_errstr(rc));
            snprintf(default_alg, sizeof(default_alg), "auto");
        }
        if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_dissemination_ways", &default_ways)) default_ways = -1;
        if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_bruck_ports", &default_ports)) default_ports = -1;
    }
    clocks_ok = check_clocks();
    if (!clocks_ok && wrank == 0) printf("note: CLOCK_MONOTONIC differs between ranks: clock witness skipped\n");
    if (verbose && wrank == 0) {
        printf("barrier algorithms:");
        for (int i = 0; i < lt_nalgs(LT_BARRIER); i++) printf(" %s", lt_alg_name(LT_BARRIER, i));
        printf("\n");
    }

    comm_t cs[8];
    int ncs;
    make_comms(cs, &ncs);

    if (env_alg || default_check) {
        setting_t s = {"auto", 0};
        if (env_alg) {
            if (0 != strcmp(default_alg, env_alg))
                FAIL("coll_loom_barrier_algorithm is \"%s\", expected \"%s\" from the environment", default_alg, env_alg);
            snprintf(s.alg, sizeof(s.alg), "%s", env_alg);
        } else if (0 != strcmp(default_alg, "auto")) {
            FAIL("coll_loom_barrier_algorithm is \"%s\" by default, expected \"auto\"", default_alg);
        }
        for (int c = 0; c < ncs; c++) run_config(&cs[c], &s, 1000u + (unsigned) c);
        if (default_check && wsize > 1) {
            lt_counts_t b, a;
            lt_diff_t d;
            lt_read(LT_BARRIER, &b);
            MPI_Barrier(MPI_COMM_WORLD);
            lt_read(LT_BARRIER, &a);
            lt_diff(LT_BARRIER, &b, &a, &d);
            nchecks++;
            if (d.changed != 1 || d.which < 0)
                FAIL("default selection: MPI_Barrier(MPI_COMM_WORLD) was not served by a loom algorithm (%s)", d.desc);
        }
    } else {
        setting_t ss[64];
        int nss = 0;
        ss[nss++] = (setting_t){"auto", 0};
        for (int a = 0; a < lt_nalgs(LT_BARRIER) && nss < 60; a++) {
            const char *name = lt_alg_name(LT_BARRIER, a);
            const char *kv = lt_knob_cvar(name);
            if (kv && 0 == strcmp(name, "dissemination")) {
                for (int n = 1; n <= 4; n++) {
                    ss[nss] = (setting_t){"", n};
                    snprintf(ss[nss++].alg, LT_NAME_LEN, "%s", name);
                }
            } else if (kv && 0 == strcmp(kv, "coll_loom_bruck_ports")) {
                static const int ns[] = {1, 2, 3, 5};
                for (int j = 0; j < 4; j++) {
                    ss[nss] = (setting_t){"", ns[j]};
                    snprintf(ss[nss++].alg, LT_NAME_LEN, "%s", name);
                }
            } else {
                ss[nss] = (setting_t){"", 0};
                snprintf(ss[nss++].alg, LT_NAME_LEN, "%s", name);
            }
        }
        for (int si = 0; si < nss; si++) {
            if (MPI_SUCCESS != apply_setting(&ss[si])) continue;
            for (int c = 0; c < ncs; c++) run_config(&cs[c], &ss[si], (unsigned) (si * 16 + c));
        }
        /* bad values: unknown name, knob 0: loom warns and still runs a correct barrier */
        {
            int rc = lt_cvar_write_str("coll_loom_barrier_algorithm", "nonsense");
            if (verbose && wrank == 0) printf("bad-param: coll_loom_barrier_algorithm=nonsense: %s\n", lt_errstr(rc));
            setting_t as_auto = {"auto", 0};
            run_config(&cs[0], &as_auto, 4242u);
            lt_cvar_write_str("coll_loom_barrier_algorithm", "dissemination");
            rc = lt_cvar_write_int("coll_loom_dissemination_ways", 0);
            if (verbose && wrank == 0) printf("bad-param: coll_loom_dissemination_ways=0: %s\n", lt_errstr(rc));
            setting_t diss = {"dissemination", 0};
            run_config(&cs[0], &diss, 4243u);
            restore_defaults();
        }
        restore_defaults();
    }

    long tot[3] = {lt_nfail, nchecks, nbarriers}, sum[3];
    MPI_Allreduce(tot, sum, 3, MPI_LONG, MPI_SUM, cs[0].oracle);
    if (wrank == 0) {
        printf("test_barrier np=%d mode=%s: %ld barriers, %ld checks, %ld failures (clock witness %s, RMA witness %s) "
               "(%.1f s)\n",
               wsize, env_alg ? "env-alg" : default_check ? "default" : "full", sum[2], sum[1], sum[0],
               clocks_ok ? "on" : "off", g_win != MPI_WIN_NULL ? "on" : "off", MPI_Wtime() - t0);
        fflush(stdout);
    }
    for (int c = 0; c < ncs; c++) {
        MPI_Comm_free(&cs[c].oracle);
        if (cs[c].own) MPI_Comm_free(&cs[c].comm);
    }
    if (g_win != MPI_WIN_NULL) {
        MPI_Win_unlock_all(g_win);
        MPI_Win_free(&g_win);
    }
    lt_fini();
    MPI_Finalize();
    return sum[0] ? 1 : 0;
}
