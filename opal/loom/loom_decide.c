/*
 * loom: the built-in selection rules and the decision procedure.
 *
 * The table is data, walked first-match.  Its thresholds come from test/bench on this
 * project's development machine (docs/user/performance.md); a later rules file replaces
 * or overrides it.  Sizes where loom has nothing better than the previous component
 * (tuned) go there: medium allreduces with many ranks, small bcast / reduce /
 * allgather / reduce_scatter.
 */
#include <stdint.h>

#include "opal/loom/loom_decide.h"

#define C  MCA_COLL_LOOM_CALL_COMMUTATIVE
#define CE (MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT)
/* the node's shared segment would carry hierarchical's node phases (shm=yes) */
#define SHM .call_mask = MCA_COLL_LOOM_CALL_SHM, .call_value = MCA_COLL_LOOM_CALL_SHM
/* the non-blocking and persistent forms (rules written i<coll>) */
#define NB .call_mask = MCA_COLL_LOOM_CALL_NB, .call_value = MCA_COLL_LOOM_CALL_NB
#define ALLREDUCE .coll = MCA_COLL_LOOM_COLL_ALLREDUCE
#define BARRIER   .coll = MCA_COLL_LOOM_COLL_BARRIER
#define BCAST     .coll = MCA_COLL_LOOM_COLL_BCAST
#define REDUCE    .coll = MCA_COLL_LOOM_COLL_REDUCE
#define ALLGATHER .coll = MCA_COLL_LOOM_COLL_ALLGATHER
#define RS        .coll = MCA_COLL_LOOM_COLL_REDUCE_SCATTER
#define RSB       .coll = MCA_COLL_LOOM_COLL_REDUCE_SCATTER_BLOCK
#define SCAN      .coll = MCA_COLL_LOOM_COLL_SCAN
#define EXSCAN    .coll = MCA_COLL_LOOM_COLL_EXSCAN
#define ALLTOALL  .coll = MCA_COLL_LOOM_COLL_ALLTOALL
#define ALLTOALLV .coll = MCA_COLL_LOOM_COLL_ALLTOALLV
#define KIB(x)    ((size_t) (x) * 1024)
#define MIB(x)    ((size_t) (x) * 1024 * 1024)

/* The ring takes 2(P-1) steps: it pays once each rank's part is large enough for the
 * step latency not to dominate.  BASE is the threshold measured at P <= 8 (loom_bw,
 * docs/user/performance.md); larger P keeps the same part size: 4x BASE up to 32 ranks,
 * 16x up to 128, 64x beyond. */
#define RING_ROWS(COLL, MASK, BASE)                                                              \
    {COLL, .min_bytes = (BASE), .max_bytes = SIZE_MAX, .max_P = 8, .call_mask = MASK,             \
     .call_value = MASK, .alg = "ring"},                                                         \
    {COLL, .min_bytes = 4 * (BASE), .max_bytes = SIZE_MAX, .min_P = 9, .max_P = 32,               \
     .call_mask = MASK, .call_value = MASK, .alg = "ring"},                                       \
    {COLL, .min_bytes = 16 * (BASE), .max_bytes = SIZE_MAX, .min_P = 33, .max_P = 128,            \
     .call_mask = MASK, .call_value = MASK, .alg = "ring"},                                       \
    {COLL, .min_bytes = 64 * (BASE), .max_bytes = SIZE_MAX, .min_P = 129, .call_mask = MASK,      \
     .call_value = MASK, .alg = "ring"}

/* Unset fields mean "any": min_bytes 0, min_* 0 and max_* 0 (no bound) for P, nodes
 * and ranks per node, call_mask 0.  max_bytes must be given. */
const mca_coll_loom_rule_t mca_coll_loom_builtin_rules[] = {
    /* the transport, for coll_loom_transport auto (transport rules are walked apart
     * from the algorithm rules): loom's own UCX worker for small calls between nodes.
     * On the emulated 4 x 2 cluster under pml ob1 it took 0.70-0.97x the PML's time for
     * allreduce up to 16 KiB, about the same for alltoall, and 2-5x in a band from
     * 32 KiB (UCX's rendezvous; docs/user/performance.md, "Transport").  Under pml ucx
     * the two are at parity, and auto does not set UCX up. */
    {ALLREDUCE, .max_bytes = KIB(16), .min_nodes = 2, .transport = MCA_COLL_LOOM_RULE_UCX},
    {ALLTOALL, .max_bytes = KIB(16), .min_nodes = 2, .transport = MCA_COLL_LOOM_RULE_UCX},

    /* a communicator with a torus map (docs/user/tuning.md, "Torus"): the contention-free
     * trees from 1 MiB, on an emulated 4 x 4 torus (100 Mbit/s links, one rank per node,
     * 6-15 nodes) a fraction of tuned's time for bcast, reduce and allreduce, where these
     * rules gave 0.42-0.84x (docs/user/performance.md, "Torus").  Without a map torus
     * refuses and the rules below decide. */
    {BCAST, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_nodes = 2, .alg = "torus"},
    {ALLREDUCE, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_nodes = 2, .alg = "torus"},
    {REDUCE, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_nodes = 2, .call_mask = C, .call_value = C,
     .alg = "torus"},

    /* several nodes: the two-level algorithm (one rank per node: it is pairwise among
     * the nodes).  On the emulated 4 x 2 cluster (docs/dev/cluster.md), with its node phases
     * in shared memory up to 8 KiB, allreduce took 0.55-0.69x tuned's time up to 4 KiB
     * and 0.36-0.52x at 8-32 KiB (1.11x at 64 KiB), the barrier 0.78-0.82x; dissemination
     * took 1.24-1.5x: every one of its rounds crosses the network several times */
    {BARRIER, .max_bytes = SIZE_MAX, .min_nodes = 2, .alg = "hierarchical"},
    {ALLREDUCE, .max_bytes = 32768, .min_nodes = 2, .alg = "hierarchical"},
    /* MPI_Ibarrier of two ranks: libnbc's one exchange of empty messages took 0.42-0.72 us,
     * through the segment 0.46-0.81 us (1.05-1.12x, three jobs; dissemination 1.12-1.54x).
     * From three ranks the segment took 0.33-0.69x libnbc's time at np 8. */
    {BARRIER, .max_bytes = SIZE_MAX, .max_nodes = 1, .max_P = 2, NB, .alg = NULL},
    /* one node, up to coll_loom_shm_slot_size: hierarchical's node phases run through
     * the node's shared segment (gather to rank 0, combine, release), no message at
     * all.  At np 8 on one node (8 ranks, 2 cores) allreduce took 0.21-0.46x tuned's
     * time from 8 B to 8 KiB and the barrier 0.48x; at np 4 0.34-0.86x; at np 2
     * 0.49-1.10x (docs/user/performance.md).  Without the segment (coll_loom_shm=0, a setup
     * that failed) the node phases are a binomial reduce and bcast: 1.4-1.9x tuned's
     * time for barriers and allreduces up to 256 B at np 2-8, where dissemination took
     * 0.82-1.2x; those calls go to the rows below. */
    {BARRIER, .max_bytes = SIZE_MAX, .max_nodes = 1, SHM, .alg = "hierarchical"},
    {ALLREDUCE, .max_bytes = KIB(256), .max_nodes = 1, .min_P = 3, SHM, .alg = "hierarchical"},
    /* point to point (binomial reduce to rank 0 and bcast: one combining order, so
     * floating point stays bit-identical): 0.52-0.79x tuned's time from 16 to 256 KiB
     * at np 8 (loom-tune --report, docs/user/performance.md "At a glance"); with
     * the segment off, 0.7-0.9x from 512 B at np 4 and 8 (dissemination, bruck and
     * pairwise 0.85-1.2x) */
    {ALLREDUCE, .min_bytes = 512, .max_bytes = KIB(256), .max_nodes = 1, .min_P = 3, .alg = "hierarchical"},
    /* two ranks, up to the slot: the segment too (0.8-0.9x pairwise's time at 16-256 B
     * for double sums at np 2, four runs; integer sums even) */
    {ALLREDUCE, .max_bytes = 8192, .max_nodes = 1, SHM, .alg = "hierarchical"},
    {BARRIER, .max_bytes = SIZE_MAX, .alg = "dissemination"},
    /* two ranks above the slot, up to 256 KiB (any op): one whole exchange, the input
     * sent as it is and combined into the result only after it (see pairwise.c), took
     * 0.44-0.57x tuned's time at 16-256 KiB where the ring took 0.55-0.81x (np 2, loom_bw
     * and loom_bench, two runs each); from 512 KiB the ring's halves win (commutative;
     * non-commutative calls fall through to tuned) */
    {ALLREDUCE, .min_bytes = 8192, .max_bytes = KIB(512) - 1, .min_P = 2, .max_P = 2, .alg = "pairwise"},
    {ALLREDUCE, .min_bytes = KIB(512), .max_bytes = MIB(1), .max_P = 2, .call_mask = C, .call_value = C,
     .alg = "ring"},
    /* latency-bound: fewest rounds (ceil(log_{n+1} P)); dissemination refuses the
     * (n, P) without an adaption, and Bruck serves every P */
    {ALLREDUCE, .max_bytes = 2048, .call_mask = CE, .call_value = CE, .alg = "dissemination"},
    {ALLREDUCE, .max_bytes = 2048, .call_mask = CE, .call_value = CE, .alg = "bruck"},
    /* rank order kept, bit-identical floating point, any op */
    {ALLREDUCE, .max_bytes = 8192, .alg = "pairwise"},
    /* bandwidth-bound, commutative (float sums included: each part is combined once
     * and copied, so every rank gets the same bits); 0.5-0.95x tuned from 1 MiB at np 8 */
    /* several nodes with several ranks each, from 512 KiB, commutative: hierarchical's
     * ring per local index (nodes of equal size; otherwise its leaders' ring).  On the
     * emulated 4 x 2 cluster it took 0.58-0.95x tuned's time at 512 KiB - 16 MiB with
     * 1 Gbit/s links (the ring 0.69-1.14x), 0.76-1.14x unshaped (the ring 0.84-1.67x);
     * the non-blocking form 0.58-0.94x libnbc's time (docs/user/performance.md,
     * "Emulated cluster 4 x 2: large messages") */
    {ALLREDUCE, .min_bytes = KIB(512), .max_bytes = SIZE_MAX, .min_nodes = 2, .min_rpn = 2, .call_mask = C,
     .call_value = C, .alg = "hierarchical"},
    /* other non-blocking calls on several nodes from 64 KiB: libnbc (on the emulated
     * 4 x 2 cluster loom's ring took 1.3-1.4x its time at 1-16 MiB, hierarchical
     * 0.97-1.09x at 256 KiB) */
    {ALLREDUCE, .min_bytes = KIB(64), .max_bytes = SIZE_MAX, .min_nodes = 2, NB, .alg = NULL},
    RING_ROWS(ALLREDUCE, C, MIB(1)),
    {ALLREDUCE, .max_bytes = SIZE_MAX, .alg = NULL},

    /* Non-blocking calls, where the rules that follow (measured against tuned's blocking
     * algorithms) would hand them to libnbc, whose trees are slower than loom's on one
     * node (loom_overlap at np 8, docs/user/performance.md "Non-blocking collectives"):
     * ibcast binomial up to 1 MiB, ireduce binomial below 1 MiB, iallgather hierarchical
     * (point to point) at 64-128 KiB (0.65-0.84x libnbc's time at 64 KiB, 0.95-1.19x at
     * 256 KiB, 1.16-1.46x at 512 KiB - 1 MiB).  The other forms follow the other rules: what they
     * leave to the previous component (iscan and iexscan above 256 B, the small
     * ireduce_scatters) libnbc does as fast or faster. */
    {BCAST, .max_bytes = MIB(1), .max_nodes = 1, NB, .alg = "binomial"},
    {REDUCE, .max_bytes = MIB(1) - 1, .max_nodes = 1, NB, .alg = "binomial"},
    {ALLGATHER, .min_bytes = KIB(64), .max_bytes = KIB(128), .max_nodes = 1, NB, .alg = "hierarchical"},
    /* iscan, iexscan: recursive doubling 0.23-0.31x libnbc's time at 64 B, 2x from 512 B */
    {SCAN, .min_bytes = 512, .max_bytes = SIZE_MAX, .max_nodes = 1, NB, .alg = NULL},
    {EXSCAN, .min_bytes = 512, .max_bytes = SIZE_MAX, .max_nodes = 1, NB, .alg = NULL},

    /* several nodes: the emulated 4 x 2 cluster (loom_bw, docs/user/performance.md).  bcast:
     * hierarchical took 0.39-0.67x tuned's time from 512 B to 4 MiB on unshaped links
     * (shared-memory node phases up to 8 KiB, pipelined along the nodes from 2 MiB), and
     * 0.21-0.43x from 1 to 16 MiB on 1 Gbit/s links (twotree 0.47x, binomial 0.51x at
     * 16 MiB); reduce, timed back to back, before the small slots: binomial 0.4-0.76x up
     * to 256 B, hierarchical 0.72-0.87x at 2-8 KiB, neither ahead in between or above.  On one node (np 8)
     * binomial was 0.8-1.8x tuned's time up to 256 B over nine runs: left to tuned */
    {BCAST, .min_bytes = 512, .max_bytes = SIZE_MAX, .min_nodes = 2, .alg = "hierarchical"},
    /* below 512 B hierarchical too, with point-to-point node phases (the component keeps
     * such bcasts off the segment): over all 8 roots on 4 x 2 its median was 31-42 us at
     * 8-256 B where the binomial tree's was 40-52 us and tuned's 50-73 us.  The binomial
     * tree rooted at an odd rank crosses the network more often: its time went from 27 to
     * 61 us with the root, hierarchical's cost is the same for every root (seed 003 s. 4) */
    {BCAST, .max_bytes = 511, .min_nodes = 2, .alg = "hierarchical"},
    /* up to 8 KiB, commutative: hierarchical, whose node phase pipelines back-to-back
     * calls up to 2 KiB (the segment's small slots; 512 B when measured here, and at
     * 1-2 KiB 15.8-24.5 us with 2 KiB slots against 34.9-56.1 us, tuned 34.9-53.9, three
     * runs per build).  4 x 2, three loom_bw runs: 512 B at
     * 0.33-0.78x tuned's time (binomial 0.69-1.24x), 1 KiB 0.79-1.09x (tuned's own
     * default), 2-8 KiB 0.70-1.02x; 8-256 B 0.47-1.01x, binomial 0.50-1.04x, and in three
     * loom-tune runs hierarchical was the fastest at 5 of the 6 sizes from 8 to 256 B (at
     * 256 B 1.15x faster than binomial in the median of five more jobs).  Non-commutative
     * ops: binomial up to 256 B */
    {REDUCE, .max_bytes = 8192, .min_nodes = 2, .call_mask = C, .call_value = C, .alg = "hierarchical"},
    {REDUCE, .max_bytes = 256, .min_nodes = 2, .alg = "binomial"},
    /* from 4 MiB, commutative: hierarchical's pipelined chain (section 3.2), 512 KiB
     * segments combined on their way to the root.  4 x 2, 1 Gbit/s links: 0.48-0.58x
     * tuned's time at 4-16 MiB (two-tree 1.2-1.7x, binomial 1.0x); unshaped links (8
     * ranks on 2 cores, CPU-bound) 0.88-1.07x at 4-8 MiB, 0.41-0.49x at 16 MiB.  At 1-2
     * MiB it took 0.67x on 1 Gbit/s links but 1.14-1.40x unshaped: left to tuned */
    {REDUCE, .min_bytes = MIB(4), .max_bytes = SIZE_MAX, .min_nodes = 2, .call_mask = C, .call_value = C,
     .alg = "hierarchical"},
    /* below that, and non-commutative ops.  4 x 2, 1-8 MiB: the two-tree took
     * 1.04-1.65x tuned's time, binomial 1.02-1.2x; at 16 MiB binomial 0.55x (two-tree
     * 0.67x).  Up to 8 ranks only: binomial's log2 P whole-vector hops are what a larger
     * job cannot afford */
    {REDUCE, .min_bytes = MIB(1), .max_bytes = MIB(16) - 1, .min_nodes = 2, .max_P = 8, .alg = NULL},
    {REDUCE, .min_bytes = MIB(16), .max_bytes = SIZE_MAX, .min_nodes = 2, .max_P = 8, .alg = "binomial"},
    /* one node, up to the shared-memory slot: the node phase runs through the node's
     * segment instead of messages.  Below about 512 B tuned's eager sends run ahead of
     * the root, so back-to-back calls pipeline; the segment's areas let a root run ahead
     * too (31 calls through the 32 small areas up to 2 KiB, seven through the eight large
     * ones, MCA_COLL_LOOM_SHM_AREAS).  More ranks favour the segment (one write, P reads)
     * over tuned's tree of eager sends: four ranks or more take it from 0 B, three from
     * 16 B (at 8 B it lost).  Two ranks are the exception below 128 B: a call of 0.15-0.3
     * us, where handing it to tuned costs loom's entry but the segment's hand-over of
     * cache lines costs more while the two cores pass lines slowly (a state that comes
     * and goes for minutes); from 128 B the segment wins in either state.  Numbers:
     * docs/user/performance.md, "Small bcast and reduce" and "At a glance". */
    {BCAST, .min_bytes = 128, .max_bytes = 511, .max_P = 2, .max_nodes = 1, SHM, .alg = "hierarchical"},
    {BCAST, .max_bytes = 8192, .min_P = 4, .max_nodes = 1, SHM, .alg = "hierarchical"},
    {BCAST, .min_bytes = 16, .max_bytes = 8192, .min_P = 3, .max_nodes = 1, SHM, .alg = "hierarchical"},
    {BCAST, .min_bytes = 512, .max_bytes = 8192, .max_nodes = 1, SHM, .alg = "hierarchical"},
    /* reduce: the segment's small slots (2 KiB) let contributors run up to 31 calls
     * ahead of the root, as eager sends let tuned's (whose time jumps from about 288 B).
     * Four ranks or more from 0 B; two or three from 128 B, as for bcast: below, a call
     * of 0.13-0.3 us, the segment loses in some jobs (at np 2 when the two cores pass
     * cache lines slowly, see the bcast rules above).  Numbers: docs/user/performance.md,
     * "Small bcast and reduce" and "At a glance". */
    {REDUCE, .max_bytes = 8192, .min_P = 4, .max_nodes = 1, .call_mask = C | MCA_COLL_LOOM_CALL_SHM,
     .call_value = C | MCA_COLL_LOOM_CALL_SHM, .alg = "hierarchical"},
    {REDUCE, .min_bytes = 128, .max_bytes = 8192, .max_nodes = 1, .call_mask = C | MCA_COLL_LOOM_CALL_SHM,
     .call_value = C | MCA_COLL_LOOM_CALL_SHM, .alg = "hierarchical"},
    /* large bcast / reduce: the pipelined two-tree.  Measured at np 8 on one node,
     * reduce is 0.3-0.9x tuned's default from 1 MiB; bcast only reaches parity at 16 MiB
     * and above (tuned's default bcast is its best there), below it stays with tuned */
    {BCAST, .min_bytes = MIB(16), .max_bytes = SIZE_MAX, .min_P = 3, .alg = "twotree"},
    {BCAST, .max_bytes = SIZE_MAX, .alg = NULL},
    {REDUCE, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_P = 3, .call_mask = C, .call_value = C,
     .alg = "twotree"},
    {REDUCE, .max_bytes = SIZE_MAX, .alg = NULL},

    /* allgather, several nodes (the emulated 4 x 2 cluster, sizes of the whole gathered
     * vector): hierarchical took 0.61-0.90x tuned's time from 2 KiB to 1 MiB in four
     * loom-tune runs (the ring 0.67-2.2x); from 2 MiB the ring 0.46-0.76x, hierarchical
     * 0.60-0.74x (the ring ahead in 3 of 4 runs at 2 MiB, even at 4 MiB, ahead in all at
     * 8 and 16 MiB; two runs before loom_bw's untimed call had it the other way) */
    {ALLGATHER, .max_bytes = MIB(2) - 1, .min_nodes = 2, .alg = "hierarchical"},
    {ALLGATHER, .min_bytes = MIB(2), .max_bytes = SIZE_MAX, .min_nodes = 2, .max_P = 8, .alg = "ring"},
    /* one node, 8-64 KiB: hierarchical (the node gather and bcast of the vector) took
     * 0.69-0.87x tuned's time at np 8 (three runs pooled); below and above, tuned is as
     * fast */
    {ALLGATHER, .min_bytes = KIB(8), .max_bytes = KIB(64), .max_nodes = 1, .min_P = 3, .alg = "hierarchical"},
    /* allgather / reduce_scatter: the ring, by the size of the whole vector */
    RING_ROWS(ALLGATHER, 0, MIB(4)),
    {ALLGATHER, .max_bytes = SIZE_MAX, .min_nodes = 2, .alg = "hierarchical"},
    {ALLGATHER, .max_bytes = SIZE_MAX, .alg = NULL},
    /* two ranks: the ring is one exchange of halves; 0.3-0.94x tuned's time from 4 KiB at
     * np 2 (two runs) */
    {RS, .min_bytes = KIB(4), .max_bytes = SIZE_MAX, .max_P = 2, .call_mask = C, .call_value = C,
     .alg = "ring"},
    {RSB, .min_bytes = KIB(4), .max_bytes = SIZE_MAX, .max_P = 2, .call_mask = C, .call_value = C,
     .alg = "ring"},
    /* np 8, one node: the ring took 0.74-0.84x tuned's time at 256-512 KiB for
     * reduce_scatter and 0.74-0.88x at 0.5-2 MiB for reduce_scatter_block */
    RING_ROWS(RS, C, KIB(256)),
    {RS, .max_bytes = SIZE_MAX, .alg = NULL},
    /* several nodes (4 x 2, loom_bw, docs/user/performance.md), reduce_scatter_block, ring /
     * tuned: at 256 KiB at or below 1 in all four sets of jobs (1.00 in one loom-tune
     * run; 0.65-0.80 in five jobs; medians 0.94 and 0.75 of eight; 0.77-0.86 in four
     * more with this rule); at 512 KiB above 1 in four of five sets (1.28 and 1.20
     * medians of eight and ten jobs, 1.19-1.46, against 0.70-1.08 in one), at 1 MiB
     * below in three of four (0.85-0.95).  Tuned's own algorithm changes with the size,
     * hence the gap in the middle */
    {RSB, .min_bytes = KIB(256), .max_bytes = KIB(512) - 1, .min_nodes = 2, .max_P = 8, .call_mask = C,
     .call_value = C, .alg = "ring"},
    {RSB, .min_bytes = KIB(512), .max_bytes = MIB(1) - 1, .min_nodes = 2, .max_P = 8, .alg = NULL},
    RING_ROWS(RSB, C, KIB(512)),
    {RSB, .max_bytes = SIZE_MAX, .alg = NULL},

    /* scan / exscan, each call timed alone after a barrier (loom_bw --latency): on the
     * 4 x 2 cluster hierarchical took 0.79-1.08x tuned's time for scan up to 8 KiB and
     * 0.64-0.92x for exscan up to 16 KiB (its rounds cross the network once per node
     * pair); on one node (np 8) recursive doubling took 0.59-0.74x (scan) and
     * 0.49-0.78x (exscan) up to 2 KiB; with two ranks both are one message, and
     * tuned's took 0.7-0.85x loom's time (np 2, two runs).  Larger calls on 4 x 2, six
     * loom-tune runs (with an untimed call before every batch; an earlier job without
     * it had hierarchical 1.17-1.47x), forced hierarchical over tuned in the same job,
     * median over the runs: scan 0.67-0.97x from 16 KiB to 1 MiB, exscan 0.77-0.86x at
     * 32-128 KiB; exscans of 256 KiB - 1 MiB 0.90-1.10x with single runs up to 1.55x
     * stay with tuned's linear chain, as everything above 1 MiB (not measured).  Nodes
     * whose ranks are not consecutive refuse hierarchical and fall through. */
    {SCAN, .max_bytes = MIB(1), .min_nodes = 2, .alg = "hierarchical"},
    {SCAN, .max_bytes = 2048, .min_P = 3, .alg = "recursive_doubling"},
    {SCAN, .max_bytes = SIZE_MAX, .alg = NULL},
    {EXSCAN, .max_bytes = KIB(128), .min_nodes = 2, .alg = "hierarchical"},
    {EXSCAN, .max_bytes = 2048, .min_P = 3, .alg = "recursive_doubling"},
    {EXSCAN, .max_bytes = SIZE_MAX, .alg = NULL},

    /* alltoall (bytes: the whole send buffer; docs/user/performance.md "Alltoall").  Several
     * nodes: hierarchical (one message per node pair) up to 8 KiB per part with 2 ranks
     * per node, 2 KiB with 4; Bruck's concatenation for 4 KiB parts with 4 per node */
    {ALLTOALL, .max_bytes = KIB(128), .min_nodes = 2, .max_P = 8, .alg = "hierarchical"},
    {ALLTOALL, .max_bytes = KIB(32), .min_nodes = 2, .min_P = 9, .max_P = 16, .alg = "hierarchical"},
    {ALLTOALL, .max_bytes = KIB(64), .min_nodes = 2, .min_P = 9, .max_P = 16, .alg = "bruck"},
    /* one node, through shared memory (shm=yes: the send buffer fits the sym slot or an
     * outbox, coll_loom_shm_outbox_size): direct took 0.14-0.84x tuned's time from 64 B
     * to 256 KiB at np 2-16; larger outboxes paid up to 512 KiB at np 8 (0.63x), not
     * from 1 MiB (1.16-1.38x).  Point to point, direct is what tuned runs (linear),
     * except from 16 ranks, where tuned sends parts under 512 B through its Bruck
     * (several hops, and wrong data when the send and receive types differ in layout)
     * and direct is faster.  The rows bound the total, so at P near a row's top only
     * the smaller parts of that region come here; the rest is left to tuned. */
    {ALLTOALL, .max_bytes = KIB(512), .max_nodes = 1, SHM, .alg = "direct"},
    {ALLTOALL, .max_bytes = KIB(8) - 1, .max_nodes = 1, .min_P = 16, .max_P = 31, .alg = "direct"},
    {ALLTOALL, .max_bytes = KIB(16) - 1, .max_nodes = 1, .min_P = 32, .alg = "direct"},
    /* the non-blocking forms: direct took 0.56-0.96x libnbc's time up to 32 KiB (np 8
     * and 4 x 2), about the same above; and libnbc's in-place ialltoallv returned wrong
     * data at np 5-7 in test_alltoall (Open MPI 4.1.4) */
    {ALLTOALL, .max_bytes = SIZE_MAX, NB, .alg = "direct"},
    {ALLTOALLV, .max_bytes = SIZE_MAX, NB, .alg = "direct"},
    {ALLTOALL, .max_bytes = SIZE_MAX, .alg = NULL},
    {ALLTOALLV, .max_bytes = SIZE_MAX, .alg = NULL},
};

const int mca_coll_loom_num_builtin_rules =
    (int) (sizeof(mca_coll_loom_builtin_rules) / sizeof(mca_coll_loom_builtin_rules[0]));

static bool in_range(int v, int min, int max)
{
    return v >= min && (0 == max || v <= max);
}

bool mca_coll_loom_rule_matches(const mca_coll_loom_rule_t *r, mca_coll_loom_coll_t coll, size_t bytes,
                                const mca_coll_loom_params_t *p)
{
    const int nodes = p->nodes > 0 ? p->nodes : 1, rpn = p->rpn > 0 ? p->rpn : p->P;
    return r->coll == coll && bytes >= r->min_bytes && bytes <= r->max_bytes
           && in_range(p->P, r->min_P, r->max_P) && in_range(nodes, r->min_nodes, r->max_nodes)
           && in_range(rpn, r->min_rpn, r->max_rpn) && (p->call & r->call_mask) == r->call_value;
}

/* Can algorithm `alg` run this call with knob `knob`? */
static bool accepts(int alg, const mca_coll_loom_params_t *p, int knob)
{
    mca_coll_loom_params_t q = *p;
    q.knob = knob;
    return NULL == mca_coll_loom_alg_refusal(alg, &q);
}

/* Walks one rule table; returns true when it decided (a loom algorithm, or the
 * previous component when no forced algorithm was refused). */
static bool walk(const mca_coll_loom_rule_t *rules, int n, mca_coll_loom_coll_t coll, size_t bytes,
                 const mca_coll_loom_params_t *p, const int *knobs, mca_coll_loom_choice_t *choice)
{
    for (int i = 0; i < n; ++i) {
        const mca_coll_loom_rule_t *r = &rules[i];
        int alg, knob;
        if (0 != r->transport || !mca_coll_loom_rule_matches(r, coll, bytes, p)) {
            continue;
        }
        if (NULL == r->alg) {
            if (NULL != choice->refused) {
                continue; /* a refused forced algorithm is replaced by a loom algorithm */
            }
            choice->rule = r;
            choice->why = "rule: previous component";
            return true;
        }
        alg = mca_coll_loom_alg_find(coll, r->alg);
        if (alg < 0) {
            continue;
        }
        knob = r->knob > 0 ? r->knob : MCA_COLL_LOOM_KNOB_AUTO == r->knob ? 0 : knobs[alg];
        if (accepts(alg, p, knob)) {
            choice->alg = alg;
            choice->knob = knob;
            choice->rule = r;
            choice->why = NULL != choice->refused ? "forced algorithm refused; rule" : "rule";
            return true;
        }
    }
    return false;
}

void mca_coll_loom_decide(mca_coll_loom_coll_t coll, size_t bytes, const mca_coll_loom_params_t *p,
                          const int *knobs, int forced, const mca_coll_loom_rule_t *file_rules,
                          int nfile, mca_coll_loom_choice_t *choice)
{
    choice->alg = -1;
    choice->knob = 0;
    choice->rule = NULL;
    choice->why = "no rule";
    choice->refused = NULL;
    choice->shm = false;
    choice->transport = 0;
    choice->transport_rule = NULL;

    /* the transport: the first transport rule that matches, the file's first */
    for (int t = 0; t < 2 && NULL == choice->transport_rule; ++t) {
        const mca_coll_loom_rule_t *rules = 0 == t ? file_rules : mca_coll_loom_builtin_rules;
        const int n = 0 == t ? nfile : mca_coll_loom_num_builtin_rules;
        for (int i = 0; i < n; ++i) {
            if (0 != rules[i].transport && mca_coll_loom_rule_matches(&rules[i], coll, bytes, p)) {
                choice->transport = rules[i].transport;
                choice->transport_rule = &rules[i];
                break;
            }
        }
    }

    if (forced >= 0) {
        mca_coll_loom_params_t q = *p;
        q.knob = knobs[forced];
        choice->refused = mca_coll_loom_alg_refusal(forced, &q);
        if (NULL == choice->refused) {
            choice->alg = forced;
            choice->knob = knobs[forced];
            choice->why = "forced";
            return;
        }
    }

    if (walk(file_rules, nfile, coll, bytes, p, knobs, choice) ||
        walk(mca_coll_loom_builtin_rules, mca_coll_loom_num_builtin_rules, coll, bytes, p, knobs, choice)) {
        return;
    }

    if (NULL != choice->refused) {
        /* no rule named a loom algorithm for this call: take the first that accepts it */
        for (int alg = 0; alg < mca_coll_loom_num_algs; ++alg) {
            if (mca_coll_loom_alg_serves(alg, coll) && accepts(alg, p, knobs[alg])) {
                choice->alg = alg;
                choice->knob = knobs[alg];
                choice->why = "forced algorithm refused; first algorithm that accepts the call";
                return;
            }
        }
    }
}
