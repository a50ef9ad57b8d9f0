/*
 * loom: correctness test of MPI_Alltoall and MPI_Alltoallv in their blocking,
 * non-blocking and persistent forms, that proves loom served them.
 *
 * For each form, collective and setting (auto, and every algorithm loom exposes through
 * a coll_loom_<coll>_<alg>_calls counter, with several coll_loom_direct_window and
 * coll_loom_bruck_ports values), on WORLD, a parity split with shuffled keys and a dup
 * of WORLD in reverse rank order, with send and receive types (int/int, double/double,
 * a strided vector of ints against plain ints and the reverse: equal signatures,
 * different layouts), counts 0, 1, 7 and 1000 elements per part (alltoallv: per-pair
 * counts with zeros, parts laid out in reverse order with gaps), with and without
 * MPI_IN_PLACE, each rank:
 *   - fills its send parts with a function of (source, destination, element);
 *   - checks every received element against that function, every byte of the receive
 *     buffer outside the received elements (gaps, guard) and the whole send buffer
 *     for being untouched;
 *   - reads loom's counters around the call: exactly one moved by one, the forced
 *     algorithm's (the form's own counters, coll_loom_i<coll>_..., for the
 *     non-blocking and persistent forms), none for an alltoall without data.
 * Then direct's path through the node's shared memory (one node only: its sizes, proven
 * by coll_loom_shm_node_phases), several non-blocking alltoalls outstanding at once on
 * different communicators, completed in reverse order, and a persistent request
 * started many times.
 *
 * Usage: test_alltoall [--oracle-only] [-v]
 *   --oracle-only  check results only, never that loom ran (--mca coll ^loom)
 * Exit status: 0 when every rank passed, 1 on any failure, 2 when loom is absent
 * (unless --oracle-only).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "loom_test_pcoll.h"
#include "loom_test_util.h"


#define GUARD 64
#define FILL  0xA5

static int wrank, wsize, verbose, oracle_only;
static long nchecks, ncalls;
#define FAIL(...) lt_fail(wrank, __VA_ARGS__)

/* ------------------------------------------------------------------------- */
/* types: a signature element k of a buffer of `count` elements of the type    */

typedef enum { T_INT, T_DOUBLE, T_VEC, NT } tkind_t;
static const char *tname[NT] = {"int", "double", "vector(2 ints, stride 2)"};
static MPI_Datatype mdt[NT];
static const int per[NT] = {1, 1, 2};        /* signature elements per type element */
static const size_t ext[NT] = {4, 8, 16};    /* extent */
static const size_t esz[NT] = {4, 8, 4};     /* bytes of one signature element */

static size_t sig_offset(tkind_t t, long k)
{
    return T_VEC == t ? (size_t) (k / 2) * 16 + (size_t) (k % 2) * 8 : (size_t) k * ext[t];
}

static void setup_types(void)
{
    MPI_Datatype v;
    mdt[T_INT] = MPI_INT;
    mdt[T_DOUBLE] = MPI_DOUBLE;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 16, &mdt[T_VEC]);
    MPI_Type_commit(&mdt[T_VEC]);
    MPI_Type_free(&v);
}

/* the value of element k of the part rank src sends to rank dst */
static int32_t val_i(int src, int dst, long k, int salt)
{
    return (int32_t) (((uint32_t) src * 7919u + (uint32_t) dst * 104729u + (uint32_t) k * 31u + (uint32_t) salt * 977u) &
                      0x7fffffffu);
}

static void put(tkind_t t, char *buf, long k, int src, int dst, int salt)
{
    if (T_DOUBLE == t) {
        double d = (double) val_i(src, dst, k, salt) / 4.0;
        memcpy(buf + sig_offset(t, k), &d, 8);
    } else {
        int32_t x = val_i(src, dst, k, salt);
        memcpy(buf + sig_offset(t, k), &x, 4);
    }
}

static int matches(tkind_t t, const char *buf, long k, int src, int dst, int salt)
{
    char want[8];
    put(t, want - sig_offset(t, k), k, src, dst, salt);
    return 0 == memcmp(buf + sig_offset(t, k), want, esz[t]);
}

/* ------------------------------------------------------------------------- */
/* communicators and settings                                                */

typedef struct {
    MPI_Comm comm;
    const char *name;
    int size, rank;
    int *world; /* world rank of each rank (for the labels) */
} comm_t;

typedef struct {
    char alg[LT_NAME_LEN]; /* "auto" or an algorithm */
    int knob;              /* its knob, -1: default */
} setting_t;

static char default_alg[2][LT_NAME_LEN];
static int default_window = -1, default_ports = -1;

static const char *knob_cvar(const char *alg)
{
    return 0 == strcmp(alg, "direct") ? "coll_loom_direct_window" : 0 == strcmp(alg, "bruck") ? "coll_loom_bruck_ports"
                                                                                               : NULL;
}

static int apply(lt_coll_t c, const setting_t *s)
{
    char cvar[96];
    const char *kv = knob_cvar(s->alg);
    int rc;
    if (oracle_only) return MPI_SUCCESS;
    snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(c));
    rc = lt_cvar_write_str(cvar, s->alg);
    if (MPI_SUCCESS == rc && default_window >= 0)
        rc = lt_cvar_write_int("coll_loom_direct_window", kv && s->knob >= 0 && 'd' == s->alg[0] ? s->knob : default_window);
    if (MPI_SUCCESS == rc && default_ports > 0)
        rc = lt_cvar_write_int("coll_loom_bruck_ports", kv && s->knob >= 0 && 'b' == s->alg[0] ? s->knob : default_ports);
    if (MPI_SUCCESS != rc) FAIL("cannot apply %s=%s (knob %d): %s", cvar, s->alg, s->knob, lt_errstr(rc));
    return rc;
}

static void restore(void)
{
    if (oracle_only) return;
    lt_cvar_write_str("coll_loom_alltoall_algorithm", default_alg[0]);
    lt_cvar_write_str("coll_loom_alltoallv_algorithm", default_alg[1]);
    if (default_window >= 0) lt_cvar_write_int("coll_loom_direct_window", default_window);
    if (default_ports > 0) lt_cvar_write_int("coll_loom_bruck_ports", default_ports);
}

/* ------------------------------------------------------------------------- */
/* one call                                                                  */

typedef enum { F_BLOCKING, F_NONBLOCKING, F_PERSISTENT, NF } form_t;
static const char *fname[NF] = {"blocking", "non-blocking", "persistent"};

typedef struct {
    lt_coll_t coll;
    form_t form;
    const comm_t *c;
    const setting_t *s;
    tkind_t st, rt; /* send and receive types */
    long n;         /* signature elements per part (alltoallv: the unit of its counts) */
    int inplace;
    int salt;
    int want_shm;   /* blocking: through the node's shared memory (1) or not (0); -1: either */
    char label[512];
} call_t;

/* alltoallv: signature elements rank src sends to rank dst (zeros included) */
static long v_count(const call_t *k, int src, int dst)
{
    return (long) ((src * 7 + dst * 3 + k->salt) % 4) * k->n;
}

/* elements rank src sends to rank dst */
static long sig_count(const call_t *k, int src, int dst)
{
    return LT_ALLTOALLV == k->coll ? v_count(k, src, dst) : k->n;
}

/* One side's layout: per part the count (type elements) and displacement. */
typedef struct {
    int *counts, *displs;
    size_t bytes; /* buffer bytes, guard excluded */
} layout_t;

/* send side (recv false): parts in reverse order with one element gap; receive side:
 * in order with a two-element gap; alltoall: contiguous parts (MPI's rule) */
static void make_layout(const call_t *k, int recv, tkind_t t, layout_t *l)
{
    const int P = k->c->size, me = k->c->rank;
    long at = 0;
    l->counts = calloc((size_t) P, sizeof(int));
    l->displs = calloc((size_t) P, sizeof(int));
    for (int i = 0; i < P; i++) {
        const int j = recv ? i : P - 1 - i;
        const long sig = recv ? sig_count(k, j, me) : sig_count(k, me, j);
        l->counts[j] = (int) (sig / per[t]);
        if (LT_ALLTOALL == k->coll) {
            l->displs[j] = (int) ((long) j * l->counts[j]);
        } else {
            l->displs[j] = (int) at;
            at += l->counts[j] + (recv ? 2 : 1);
        }
    }
    if (LT_ALLTOALL == k->coll) at = (long) P * (k->n / per[t]);
    l->bytes = (size_t) at * ext[t];
}

static void free_layout(layout_t *l)
{
    free(l->counts);
    free(l->displs);
}

static void fill_send(const call_t *k, tkind_t t, const layout_t *l, char *buf, int salt)
{
    for (int j = 0; j < k->c->size; j++) {
        const long sig = (long) l->counts[j] * per[t];
        for (long e = 0; e < sig; e++) put(t, buf + (size_t) l->displs[j] * ext[t], e, k->c->rank, j, salt);
    }
}

static int post(const call_t *k, const void *sb, const layout_t *sl, void *rb, const layout_t *rl, MPI_Request *req)
{
    const MPI_Comm cm = k->c->comm;
    const MPI_Datatype sdt = mdt[k->st], rdt = mdt[k->rt];
    const int sc = sl->counts[0], rc = rl->counts[0];
    if (LT_ALLTOALL == k->coll) {
        switch (k->form) {
        case F_BLOCKING: return MPI_Alltoall(sb, sc, sdt, rb, rc, rdt, cm);
        case F_NONBLOCKING: return MPI_Ialltoall(sb, sc, sdt, rb, rc, rdt, cm, req);
        default: return MPI_Alltoall_init(sb, sc, sdt, rb, rc, rdt, cm, MPI_INFO_NULL, req);
        }
    }
    switch (k->form) {
    case F_BLOCKING: return MPI_Alltoallv(sb, sl->counts, sl->displs, sdt, rb, rl->counts, rl->displs, rdt, cm);
    case F_NONBLOCKING:
        return MPI_Ialltoallv(sb, sl->counts, sl->displs, sdt, rb, rl->counts, rl->displs, rdt, cm, req);
    default:
        return MPI_Alltoallv_init(sb, sl->counts, sl->displs, sdt, rb, rl->counts, rl->displs, rdt, cm,
                                  MPI_INFO_NULL, req);
    }
}

/* the receive buffer after a call whose parts were written with `salt` */
static void check_recv(const call_t *k, const layout_t *rl, const char *rb, int salt, const char *what)
{
    const int P = k->c->size, me = k->c->rank;
    char *mask = calloc(rl->bytes + GUARD, 1);
    long bad = 0;
    for (int j = 0; j < P; j++) {
        const long sig = sig_count(k, j, me);
        const char *part = rb + (size_t) rl->displs[j] * ext[k->rt];
        for (long e = 0; e < sig; e++) {
            nchecks++;
            memset(mask + (size_t) rl->displs[j] * ext[k->rt] + sig_offset(k->rt, e), 1, esz[k->rt]);
            if (!matches(k->rt, part, e, j, me, salt) && bad++ < 3)
                FAIL("%s: %s: part from rank %d, element %ld wrong", k->label, what, j, e);
        }
    }
    for (size_t b = 0; b < rl->bytes + GUARD; b++) {
        if (!mask[b] && (unsigned char) rb[b] != FILL && bad++ < 3)
            FAIL("%s: %s: receive buffer byte %zu outside the data changed", k->label, what, b);
    }
    nchecks++;
    free(mask);
}

/* Exactly one counter of the form moved by `want` (0: none), the forced algorithm's. */
static void check_counters(const call_t *k, const lt_counts_t *b, const lt_counts_t *a, int want)
{
    const lt_coll_t lc = F_BLOCKING == k->form ? k->coll : LT_NB(k->coll);
    lt_diff_t d;
    if (oracle_only) return;
    lt_diff(lc, b, a, &d);
    nchecks++;
    if (0 == want) {
        if (0 != d.changed) FAIL("%s: a call without data moved counters: %s", k->label, d.desc);
        return;
    }
    if (1 == k->c->size && 0 == d.changed) return; /* one process: loom may leave it to self */
    if (1 != d.changed || want != d.delta) {
        FAIL("%s: expected one %s counter to move by %d, got %s", k->label, lt_coll_name(lc), want, d.desc);
        return;
    }
    if (0 != strcmp(k->s->alg, "auto")) {
        const int fi = lt_alg_index(lc, k->s->alg);
        if (d.which != fi)
            FAIL("%s: forced to %s, but %s served it", k->label, k->s->alg,
                 d.which == LT_WHICH_FALLBACK ? "the previous component" : lt_alg_name(lc, d.which));
    }
}

static void run_call(call_t *k)
{
    const lt_coll_t lc = F_BLOCKING == k->form ? k->coll : LT_NB(k->coll);
    layout_t sl, rl;
    char *sb, *rb, *spristine;
    lt_counts_t before, after;
    MPI_Request req = MPI_REQUEST_NULL;
    int rc, starts = F_PERSISTENT == k->form ? 3 : 1, empty;

    snprintf(k->label, sizeof(k->label), "%s %s comm=%s(P=%d,rank=%d) send=%s recv=%s n=%ld%s alg=%s/%d",
             fname[k->form], lt_coll_name(k->coll), k->c->name, k->c->size, k->c->rank, tname[k->st],
             tname[k->rt], k->n, k->inplace ? " MPI_IN_PLACE" : "", k->s->alg, k->s->knob);
    make_layout(k, 0, k->inplace ? k->rt : k->st, &sl);
    make_layout(k, 1, k->rt, &rl);
    if (k->inplace) { /* one layout for both: MPI's in-place rule */
        free_layout(&sl);
        make_layout(k, 1, k->rt, &sl);
    }
    sb = malloc(sl.bytes + GUARD);
    rb = malloc(rl.bytes + GUARD);
    spristine = malloc(sl.bytes + GUARD);
    /* an alltoall without data is left alone by loom (the same on every rank) */
    empty = LT_ALLTOALL == k->coll && 0 == k->n;

    unsigned long long shm0 = 0, shm1 = 0;
    if (!oracle_only) lt_read(lc, &before);
    if (!oracle_only && k->want_shm >= 0 && 0 != lt_shm_node_phases(&shm0)) FAIL("%s: cannot read coll_loom_shm_node_phases", k->label);
    for (int it = 0; it < starts; it++) {
        const int salt = k->salt + it;
        memset(sb, FILL, sl.bytes + GUARD);
        memset(rb, FILL, rl.bytes + GUARD);
        if (k->inplace) {
            fill_send(k, k->rt, &rl, rb, salt);
        } else {
            fill_send(k, k->st, &sl, sb, salt);
        }
        memcpy(spristine, sb, sl.bytes + GUARD);
        if (0 == it) {
            rc = post(k, k->inplace ? MPI_IN_PLACE : sb, &sl, rb, &rl, &req);
            ncalls++;
            if (MPI_SUCCESS != rc) {
                FAIL("%s: the call returned %d", k->label, rc);
                break;
            }
        }
        if (F_PERSISTENT == k->form) {
            rc = MPI_Start(&req);
            if (MPI_SUCCESS != rc) FAIL("%s: MPI_Start returned %d", k->label, rc);
        }
        if (F_BLOCKING != k->form) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (MPI_SUCCESS != rc) FAIL("%s: MPI_Wait returned %d", k->label, rc);
        }
        check_recv(k, &rl, rb, salt, F_PERSISTENT == k->form ? (it ? "a later start" : "the first start") : "result");
        if (!k->inplace && 0 != memcmp(sb, spristine, sl.bytes + GUARD)) FAIL("%s: send buffer changed", k->label);
        nchecks++;
    }
    if (F_PERSISTENT == k->form && MPI_REQUEST_NULL != req) MPI_Request_free(&req);
    if (!oracle_only && k->want_shm >= 0 && 0 == lt_shm_node_phases(&shm1) &&
        shm1 - shm0 != (unsigned long long) k->want_shm)
        FAIL("%s: coll_loom_shm_node_phases moved by %llu, expected %d (%s)", k->label, shm1 - shm0, k->want_shm,
             k->want_shm ? "the node's shared memory" : "point to point");
    if (!oracle_only) {
        lt_read(lc, &after);
        check_counters(k, &before, &after, empty ? 0 : 1);
    }
    if (verbose && 0 == wrank) printf("ok %s\n", k->label);
    free(sb);
    free(rb);
    free(spristine);
    free_layout(&sl);
    free_layout(&rl);
}

/* ------------------------------------------------------------------------- */
/* sections                                                                  */

static int build_settings(lt_coll_t c, setting_t *ss, int max)
{
    int n = 0;
    snprintf(ss[n].alg, LT_NAME_LEN, "auto");
    ss[n++].knob = -1;
    for (int a = 0; !oracle_only && a < lt_nalgs(c) && n < max; a++) {
        const char *name = lt_alg_name(c, a);
        static const int windows[3] = {0, 1, 3}, ports[3] = {1, 2, 3};
        const int *kn = 0 == strcmp(name, "direct") ? windows : 0 == strcmp(name, "bruck") ? ports : NULL;
        for (int i = 0; i < (kn ? 3 : 1) && n < max; i++) {
            snprintf(ss[n].alg, LT_NAME_LEN, "%s", name);
            ss[n++].knob = kn ? kn[i] : -1;
        }
    }
    return n;
}

static void section_matrix(comm_t *cs, int ncs)
{
    static const tkind_t pairs[4][2] = {{T_INT, T_INT}, {T_DOUBLE, T_DOUBLE}, {T_VEC, T_INT}, {T_INT, T_VEC}};
    static const long counts[4] = {0, 1, 7, 1000};
    const int large = wsize >= 16;
    int salt = 1;
    for (int ci = 0; ci < 2; ci++) {
        const lt_coll_t coll = ci ? LT_ALLTOALLV : LT_ALLTOALL;
        setting_t ss[16];
        const int nss = build_settings(coll, ss, 16);
        for (int si = 0; si < nss; si++) {
            if (MPI_SUCCESS != apply(coll, &ss[si])) continue;
            for (int f = 0; f < NF; f++) {
                for (int c = 0; c < ncs; c++) {
                    for (int p = 0; p < 4; p++) {
                        for (int ni = 0; ni < 4; ni++) {
                            /* trimmed from 16 processes on: one communicator per form and
                             * setting, the largest count on WORLD only */
                            if (large && (c != (f + si) % ncs || (ni == 3 && c != 0))) continue;
                            for (int ip = 0; ip < 2; ip++) {
                                if (ip && (p == 2 || (ni + f + si) % 2)) continue; /* in place (receive type only): half the cells */
                                call_t k = {.coll = coll, .form = (form_t) f, .c = &cs[c], .s = &ss[si],
                                            .st = pairs[p][0], .rt = pairs[p][1],
                                            .n = p >= 2 && counts[ni] % 2 ? counts[ni] + 1 : counts[ni],
                                            .inplace = ip, .salt = salt++, .want_shm = -1};
                                run_call(&k);
                            }
                        }
                    }
                }
            }
        }
        restore();
    }
}

/* Several non-blocking calls outstanding on different communicators, completed in
 * reverse order of posting. */
static void section_outstanding(comm_t *cs, int ncs)
{
    enum { N = 6 };
    static const setting_t autos = {"auto", -1};
    call_t k[N];
    layout_t sl[N], rl[N];
    char *sb[N], *rb[N];
    MPI_Request req[N];
    for (int i = 0; i < N; i++) {
        k[i] = (call_t) {.coll = i % 2 ? LT_ALLTOALLV : LT_ALLTOALL, .form = F_NONBLOCKING, .c = &cs[i % ncs],
                         .s = &autos, .st = T_INT, .rt = T_INT, .n = 5 + i, .salt = 900 + i, .want_shm = -1};
        snprintf(k[i].label, sizeof(k[i].label), "outstanding #%d %s comm=%s", i, lt_coll_name(k[i].coll),
                 k[i].c->name);
        make_layout(&k[i], 0, T_INT, &sl[i]);
        make_layout(&k[i], 1, T_INT, &rl[i]);
        sb[i] = malloc(sl[i].bytes + GUARD);
        rb[i] = malloc(rl[i].bytes + GUARD);
        memset(sb[i], FILL, sl[i].bytes + GUARD);
        memset(rb[i], FILL, rl[i].bytes + GUARD);
        fill_send(&k[i], T_INT, &sl[i], sb[i], k[i].salt);
        if (MPI_SUCCESS != post(&k[i], sb[i], &sl[i], rb[i], &rl[i], &req[i])) FAIL("%s: post failed", k[i].label);
        ncalls++;
    }
    for (int i = N - 1; i >= 0; i--) {
        if (MPI_SUCCESS != MPI_Wait(&req[i], MPI_STATUS_IGNORE)) FAIL("%s: wait failed", k[i].label);
        check_recv(&k[i], &rl[i], rb[i], k[i].salt, "result");
        free(sb[i]);
        free(rb[i]);
        free_layout(&sl[i]);
        free_layout(&rl[i]);
    }
}

/* direct on a communicator of one node (coll_loom_shm_alltoall.c): past the segment's
 * setup, a blocking alltoall whose send buffer fits the sym slot or an outbox runs
 * through shared memory (coll_loom_shm_node_phases moves by one), a larger one point to
 * point; all exact, with any rank order, in place, types of different layouts. */
static void section_node(comm_t *cs, int ncs)
{
    static const setting_t direct = {"direct", -1};
    static const tkind_t pairs[3][2] = {{T_INT, T_INT}, {T_VEC, T_INT}, {T_INT, T_VEC}};
    int shm = 0, box = 0, setup = 0, nsize, one;
    MPI_Comm node;
    if (oracle_only) return;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    MPI_Comm_free(&node);
    MPI_Allreduce(&(int) {nsize == wsize}, &one, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_shm", &shm) ||
        MPI_SUCCESS != lt_cvar_read_int("coll_loom_shm_outbox_size", &box) ||
        MPI_SUCCESS != lt_cvar_read_int("coll_loom_shm_setup_call", &setup)) {
        FAIL("cannot read coll_loom_shm, coll_loom_shm_outbox_size or coll_loom_shm_setup_call");
        return;
    }
    if (!one || !shm || wsize < 2) {
        if (0 == wrank)
            printf("test_alltoall: node section not run (%s)\n",
                   !one ? "the ranks span several nodes" : !shm ? "coll_loom_shm is off" : "one rank");
        return;
    }
    if (MPI_SUCCESS != apply(LT_ALLTOALL, &direct)) return;
    for (int c = 0; c < ncs; c++) {
        const long P = cs[c].size;
        /* signature elements (4 bytes) per part: the sym slot, an outbox (16 KiB of send
         * buffer, or the whole outbox when it is smaller), just more than an outbox */
        const long ns[3] = {7, box > 0 ? (box < 16384 ? box : 16384) / 4 / P : 0, box > 0 ? box / 4 / P + 2 : 64 * 1024};
        int salt = 5000 + 1000 * c; /* the same on the ranks of this communicator only */
        if (P < 2) continue;
        for (int w = 0; w < setup; w++) { /* past the segment's setup call */
            call_t k = {.coll = LT_ALLTOALL, .form = F_BLOCKING, .c = &cs[c], .s = &direct, .st = T_INT,
                        .rt = T_INT, .n = 1, .salt = salt++, .want_shm = -1};
            run_call(&k);
        }
        for (int ni = 0; ni < 3; ni++) {
            for (int p = 0; p < 3; p++) {
                for (int ip = 0; ip < 2; ip++) {
                    const long n = ns[ni] + (ns[ni] % 2); /* whole vectors */
                    if (n <= 0 || (ip && T_VEC == pairs[p][0])) continue;
                    call_t k = {.coll = LT_ALLTOALL, .form = F_BLOCKING, .c = &cs[c], .s = &direct,
                                .st = pairs[p][0], .rt = pairs[p][1], .n = n, .inplace = ip, .salt = salt++,
                                .want_shm = P * n * 4 <= 1984 || P * n * 4 <= box};
                    run_call(&k);
                }
            }
        }
    }
    restore();
}

static void make_comms(comm_t *cs, int *ncs)
{
    int key, color;
    cs[0] = (comm_t) {.comm = MPI_COMM_WORLD, .name = "world"};
    /* parity split, keys shuffled: any rank order */
    color = wsize > 2 ? wrank % 2 : 0;
    key = (wrank * 7919) % 101;
    MPI_Comm_split(MPI_COMM_WORLD, color, key, &cs[1].comm);
    cs[1].name = "shuffled";
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &cs[2].comm);
    cs[2].name = "reversed";
    *ncs = 3;
    for (int i = 0; i < *ncs; i++) {
        MPI_Comm_size(cs[i].comm, &cs[i].size);
        MPI_Comm_rank(cs[i].comm, &cs[i].rank);
    }
}

int main(int argc, char **argv)
{
    comm_t cs[3];
    int ncs, npv;
    long tot[3], mine[3];
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--oracle-only")) oracle_only = 1;
        else if (0 == strcmp(argv[i], "-v")) verbose = 1;
    }
    t0 = MPI_Wtime();
    setup_types();
    npv = lt_init();
    if (!oracle_only) {
        if (npv <= 0) {
            if (0 == wrank) fprintf(stderr, "test_alltoall: loom is not loaded (no coll_loom_* pvars)\n");
            MPI_Finalize();
            return 2;
        }
        for (int c = 0; c < 2; c++) {
            const lt_coll_t lc = c ? LT_ALLTOALLV : LT_ALLTOALL;
            char cvar[96];
            if (0 == lt_nalgs(lc) || 0 == lt_nalgs(LT_NB(lc)))
                FAIL("no coll_loom_%s_<alg>_calls or coll_loom_i%s_<alg>_calls counter", lt_coll_name(lc),
                     lt_coll_name(lc));
            snprintf(cvar, sizeof(cvar), "coll_loom_%s_algorithm", lt_coll_name(lc));
            if (MPI_SUCCESS != lt_cvar_read_str(cvar, default_alg[c], LT_NAME_LEN)) {
                FAIL("cannot read %s", cvar);
                snprintf(default_alg[c], LT_NAME_LEN, "auto");
            }
        }
        if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_direct_window", &default_window)) {
            FAIL("cannot read coll_loom_direct_window");
            default_window = -1;
        }
        if (MPI_SUCCESS != lt_cvar_read_int("coll_loom_bruck_ports", &default_ports)) default_ports = -1;
    }
    make_comms(cs, &ncs);
    section_matrix(cs, ncs);
    section_node(cs, ncs);
    section_outstanding(cs, ncs);
    restore();

    mine[0] = ncalls;
    mine[1] = nchecks;
    mine[2] = lt_nfail;
    MPI_Allreduce(mine, tot, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == wrank)
        printf("test_alltoall np=%d%s: %ld calls, %ld checks, %ld failures (%.1f s): %s\n", wsize,
               oracle_only ? " (oracle only)" : "", tot[0], tot[1], tot[2], MPI_Wtime() - t0,
               tot[2] ? "FAIL" : "PASS");
    for (int i = 1; i < ncs; i++) MPI_Comm_free(&cs[i].comm);
    MPI_Type_free(&mdt[T_VEC]);
    lt_fini();
    MPI_Finalize();
    return tot[2] ? 1 : 0;
}
