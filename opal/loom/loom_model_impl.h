/*
 * loom: what the files of the LogGP model share (private to loom_model*.c; the API is
 * loom_model.h):
 *   loom_model.c         parameters, schedules in timing form, the LogGP rules of one
 *                        message, the entry points
 *   loom_model_rounds.c  FULL and SYMMETRIC: the schedules read as rounds
 *   loom_model_graph.c   GRAPH: the dependency graphs, and the torus network
 *   loom_model_auto.c    the choice of segments (choose_segs, auto_segs)
 */
#ifndef MCA_COLL_LOOM_MODEL_IMPL_H
#define MCA_COLL_LOOM_MODEL_IMPL_H

#include <stdint.h>

#include "opal/loom/loom_model.h"

/* A schedule op in timing form, 8 bytes: kind and peer in one word, then the bytes
 * of a transfer or the CPU time of a run of local ops (float: 24 bits of mantissa
 * are plenty for a time estimate, and P = 2^20 ranks times a few hundred ops must
 * fit in memory). */
typedef struct {
    uint32_t kp;
    float v;
} cop_t;

#define K_SEND  0u
#define K_RECV  1u
#define K_WAIT  2u
#define K_LOCAL 3u
#define KIND(c) ((c).kp >> 30)
#define PEER(c) ((int) ((c).kp & 0x3fffffffu))
#define MAX_P   0x3fffffff

/* auto runs FULL up to this P (opts.sym_min_P's default), and choose_segs looks for
 * symmetry only above it */
#define DEFAULT_SYM_MIN_P    256

typedef struct {
    double cpu;       /* the rank's CPU clock */
    double out_next;  /* earliest start of its next message on the outgoing link */
    double in_free;   /* its incoming link is busy until then */
    double send_done; /* the current round's sends have left the link by then */
} clock_t_;

enum { ST_UNBUILT = 0, ST_RUN, ST_BLOCKED, ST_DONE };

typedef struct {
    double t0, t1, bytes;
} arrival_t;

typedef struct {
    const mca_coll_loom_model_params_t *m;
    int alg, P;
    mca_coll_loom_build_fn_t build; /* instead of alg when not NULL (tests) */
    mca_coll_loom_params_t shape;
    size_t count, esz;
    const size_t *displ;
    mca_coll_loom_sched_t sched;  /* reused by every build */
    arrival_t *arr;               /* scratch for one round's arrivals */
    int arrcap;
    long ops, messages;
    int rounds;
    double link_G, hop_L;         /* the torus network (GRAPH), link_G > 0: on */
} ctx_t;

/* Symmetries of the schedules: rank r's peers are rank 0's moved by +r mod P (rotation)
 * or ^r (xor). */
enum { SYM_NONE = 0, SYM_ROT, SYM_XOR };

/* Builds one rank's schedule: a registry algorithm, or a bare builder (tests). */
int mca_coll_loom_model_build_rank(int alg, mca_coll_loom_build_fn_t build, mca_coll_loom_sched_t *s,
                                   const mca_coll_loom_params_t *p);
/* Elements an op covers, as the executor splits them. */
size_t mca_coll_loom_model_op_elems(const ctx_t *x, const mca_coll_loom_sched_t *s,
                                    const mca_coll_loom_op_t *op);

/* The LogGP rules of one message: posting it (CPU o, then the outgoing link; its times
 * at the receiver in *t0, *t1), and the receiver's incoming link taking it (the time it
 * is fully in). */
void mca_coll_loom_model_post_send(const mca_coll_loom_model_params_t *m, clock_t_ *c, double bytes, double *t0,
                                   double *t1);
double mca_coll_loom_model_in_link(const mca_coll_loom_model_params_t *m, clock_t_ *c, double t0, double t1,
                                   double bytes);

void mca_coll_loom_model_ctx_init(ctx_t *x, int alg, mca_coll_loom_build_fn_t build,
                                  const mca_coll_loom_params_t *shape, mca_coll_loom_coll_t coll, size_t bytes,
                                  size_t elem_size, const mca_coll_loom_model_params_t *m, const size_t *displ);
void mca_coll_loom_model_ctx_fini(ctx_t *x);

/* mca_coll_loom_model_predict of a registry algorithm (build NULL) or a bare builder. */
int mca_coll_loom_model_predict_any(int alg, mca_coll_loom_build_fn_t build, mca_coll_loom_coll_t coll,
                                    const mca_coll_loom_params_t *shape, size_t bytes, size_t elem_size,
                                    const mca_coll_loom_model_params_t *m, const mca_coll_loom_model_opts_t *opts,
                                    double *finish, mca_coll_loom_model_result_t *res);

/* The three ways to run (loom_model.h); each fills res and, when not NULL, finish[P]. */
int mca_coll_loom_model_simulate_full(ctx_t *x, long max_live, double *finish, mca_coll_loom_model_result_t *res);
/* SYM_ROT, SYM_XOR or SYM_NONE, from a sample of ranks (a heuristic: not proved). */
int mca_coll_loom_model_detect_symmetry(ctx_t *x);
int mca_coll_loom_model_simulate_symmetric(ctx_t *x, int kind, double *finish, mca_coll_loom_model_result_t *res);
int mca_coll_loom_model_simulate_graph(ctx_t *x, long max_live, double *finish, mca_coll_loom_model_result_t *res);

#endif /* MCA_COLL_LOOM_MODEL_IMPL_H */
