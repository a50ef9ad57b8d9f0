/*
 * loom: the built-in selection rules and the decision procedure.
 *
 * The table is data, walked first-match.  Its thresholds come from test/bench on this
 * project's development machine; the comments say why each rule is there, and
 * docs/user/tuning.md, "Why the built-in rules are what they are", gives the
 * measurements behind each one.  A rules file goes before it.  Sizes where loom has
 * nothing better than the previous component (tuned) go there: medium allreduces with
 * many ranks, small bcast / reduce / allgather / reduce_scatter.
 */
#include <stdint.h>
#include <string.h>

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
 * step latency not to dominate.  BASE is the threshold found at P <= 8; larger P keeps
 * the same part size (docs/dev/model.md): 4x BASE up to 32 ranks, 16x up to 128, 64x
 * beyond. */
#define RING_ROWS(COLL, MASK, BASE)                                                              \
    {COLL, .min_bytes = (BASE), .max_bytes = SIZE_MAX, .max_P = 8, .call_mask = MASK,             \
     .call_value = MASK, .alg = "ring"},                                                         \
    {COLL, .min_bytes = 4 * (BASE), .max_bytes = SIZE_MAX, .min_P = 9, .max_P = 32,               \
     .call_mask = MASK, .call_value = MASK, .alg = "ring"},                                       \
    {COLL, .min_bytes = 16 * (BASE), .max_bytes = SIZE_MAX, .min_P = 33, .max_P = 128,            \
     .call_mask = MASK, .call_value = MASK, .alg = "ring"},                                       \
    {COLL, .min_bytes = 64 * (BASE), .max_bytes = SIZE_MAX, .min_P = 129, .call_mask = MASK,      \
     .call_value = MASK, .alg = "ring"}

/* One rank per node, P in [MINP, MAXP] (0: no bound), bytes in [LO, HI): ALG */
#define SCALE_ROW(COLL, MASK, ALG, MINP, MAXP, LO, HI)                                           \
    {COLL, .min_bytes = (LO), .max_bytes = (HI) - 1, .min_nodes = 2, .max_rpn = 1, .min_P = (MINP), \
     .max_P = (MAXP), .call_mask = MASK, .call_value = MASK, .alg = ALG}
/* recursive halving and doubling on 256 ranks or more (the allreduce's rows say why),
 * up to parts of 8 KiB per rank (no bound from 524288), from 64 KiB: for allreduce at any P
 * (its blocks spread a vector of fewer elements than ranks evenly, SPREAD 1), for the
 * reduce_scatters, whose parts are the call's, from an element of 8 B per rank */
#define HD_LO(SPREAD, LO) ((SPREAD) ? KIB(64) : (LO))
#define HD_ROWS(COLL, MASK, SPREAD)                                                              \
    SCALE_ROW(COLL, MASK, "halving_doubling", 256, 511, KIB(64), MIB(2)),                          \
    SCALE_ROW(COLL, MASK, "halving_doubling", 512, 1023, KIB(64), MIB(4)),                         \
    SCALE_ROW(COLL, MASK, "halving_doubling", 1024, 2047, KIB(64), MIB(8)),                        \
    SCALE_ROW(COLL, MASK, "halving_doubling", 2048, 4095, KIB(64), MIB(16)),                       \
    SCALE_ROW(COLL, MASK, "halving_doubling", 4096, 8191, KIB(64), MIB(32)),                       \
    SCALE_ROW(COLL, MASK, "halving_doubling", 8192, 16383, KIB(64), MIB(64)),                      \
    SCALE_ROW(COLL, MASK, "halving_doubling", 16384, 32767, HD_LO(SPREAD, KIB(128)), MIB(128)),    \
    SCALE_ROW(COLL, MASK, "halving_doubling", 32768, 65535, HD_LO(SPREAD, KIB(256)), MIB(256)),    \
    SCALE_ROW(COLL, MASK, "halving_doubling", 65536, 131071, HD_LO(SPREAD, KIB(512)), MIB(512)),   \
    SCALE_ROW(COLL, MASK, "halving_doubling", 131072, 262143, HD_LO(SPREAD, MIB(1)), MIB(1024)),   \
    SCALE_ROW(COLL, MASK, "halving_doubling", 262144, 524287, HD_LO(SPREAD, MIB(2)), MIB(2048)),   \
    SCALE_ROW(COLL, MASK, "halving_doubling", 524288, 1048575, HD_LO(SPREAD, MIB(4)), SIZE_MAX),   \
    SCALE_ROW(COLL, MASK, "halving_doubling", 1048576, 0, HD_LO(SPREAD, MIB(8)), SIZE_MAX)

/* reduce_scatter(_block) on 17 or more one-rank nodes, commutative, after the rows above */
#define RS_SCALE_ROWS(COLL)                                                                      \
    SCALE_ROW(COLL, C, "knomial", 17, 255, 0, KIB(16)),                                            \
    SCALE_ROW(COLL, C, "halving_doubling", 17, 255, KIB(16), SIZE_MAX),                            \
    SCALE_ROW(COLL, C, "knomial", 256, 0, 0, KIB(64)),                                             \
    SCALE_ROW(COLL, C, "halving_doubling", 256, 0, KIB(64), SIZE_MAX)

/* Unset fields mean "any": min_bytes 0, min_* 0 and max_* 0 (no bound) for P, nodes
 * and ranks per node, call_mask 0.  max_bytes must be given. */
const mca_coll_loom_rule_t mca_coll_loom_builtin_rules[] = {
    /* the transport, for coll_loom_transport auto (transport rules are walked apart
     * from the algorithm rules): loom's own UCX worker for small calls between nodes,
     * where under pml ob1 it is the shorter path; above 16 KiB UCX's rendezvous makes
     * it the slower one.  Under pml ucx the two are at parity, and auto does not set
     * UCX up. */
    {ALLREDUCE, .max_bytes = KIB(16), .min_nodes = 2, .transport = MCA_COLL_LOOM_RULE_UCX},
    {ALLTOALL, .max_bytes = KIB(16), .min_nodes = 2, .transport = MCA_COLL_LOOM_RULE_UCX},

    /* a whole torus or sub-torus of power-of-two rings, one rank per node: Swing, whose
     * 2 D parts keep every link of a node busy at once where the trees below use one
     * or two (De Sensi et al.; docs/user/tuning.md, "Torus") */
    {ALLREDUCE, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_nodes = 2, .max_rpn = 1, .call_mask = C,
     .call_value = C, .sub_torus = true, .alg = "swing"},
    {ALLGATHER, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_nodes = 2, .max_rpn = 1, .sub_torus = true,
     .alg = "swing"},
    /* a communicator with a torus map (docs/user/tuning.md, "Torus"): from 1 MiB the
     * contention-free trees of Mittal et al., whose large messages stream at a link's
     * rate where tuned's trees put several messages on one link.  Without a map torus
     * refuses and the rules below decide. */
    {BCAST, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_nodes = 2, .alg = "torus"},
    {ALLREDUCE, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_nodes = 2, .alg = "torus"},
    {REDUCE, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_nodes = 2, .call_mask = C, .call_value = C,
     .alg = "torus"},

    /* one rank per node, 16-64 KiB, any op: recursive halving and doubling on 9-255 nodes
     * (measured on the emulated 16 nodes, where the pairwise exchange of whole vectors
     * below took 1.5-2.8x its time), radix 4 from 256 nodes (knomial: log4 P steps of 3
     * messages, from the model, whose ranking there holds for per-message overheads of
     * 0.07-1 us).  Below 16 KiB the pairwise exchange's fewer messages won on the emulated
     * 16 nodes, whose 16 ranks share 2 cores (a context switch per message); from 17 nodes
     * radix 4 from 2 KiB, by the model with a network's latency (1.5-50 us: 0.4-0.8x the
     * exchange's time at 2-8 KiB on 16-256 nodes, for overheads of 0.5-20 us).
     * docs/user/tuning.md, "Why the built-in rules are what they are" */
    SCALE_ROW(ALLREDUCE, 0, "knomial", 17, 0, KIB(2), KIB(16)),
    SCALE_ROW(ALLREDUCE, 0, "halving_doubling", 9, 255, KIB(16), KIB(32) + 1),
    SCALE_ROW(ALLREDUCE, 0, "knomial", 256, 0, KIB(16), KIB(64)),
    /* several nodes: the two-level algorithm (one rank per node: it is pairwise among
     * the nodes), whose node phases stay inside the nodes, where every round of
     * dissemination crosses the network several times; allreduce up to 32 KiB, above
     * which tuned is as fast */
    {BARRIER, .max_bytes = SIZE_MAX, .min_nodes = 2, .alg = "hierarchical"},
    {ALLREDUCE, .max_bytes = 32768, .min_nodes = 2, .alg = "hierarchical"},
    /* MPI_Ibarrier of two ranks: libnbc's one exchange of empty messages is a little
     * faster than the segment's hand-over; from three ranks the segment wins. */
    {BARRIER, .max_bytes = SIZE_MAX, .max_nodes = 1, .max_P = 2, NB, .alg = NULL},
    /* one node, up to coll_loom_shm_slot_size: hierarchical's node phases run through
     * the node's shared segment (gather to rank 0, combine, release), no message at
     * all (Zhu et al., section 3).  Without the segment (coll_loom_shm=0, a setup that
     * failed) the node phases are a binomial reduce and bcast, slower than tuned and
     * dissemination for small calls: those calls go to the rows below. */
    {BARRIER, .max_bytes = SIZE_MAX, .max_nodes = 1, SHM, .alg = "hierarchical"},
    {ALLREDUCE, .max_bytes = KIB(256), .max_nodes = 1, .min_P = 3, SHM, .alg = "hierarchical"},
    /* point to point (binomial reduce to rank 0 and bcast: one combining order, so
     * floating point stays bit-identical): from 512 B on one node ahead of tuned and of
     * loom's other point-to-point algorithms */
    {ALLREDUCE, .min_bytes = 512, .max_bytes = KIB(256), .max_nodes = 1, .min_P = 3, .alg = "hierarchical"},
    /* two ranks, up to the slot: the segment too, at least as fast as pairwise's one
     * exchange */
    {ALLREDUCE, .max_bytes = 8192, .max_nodes = 1, SHM, .alg = "hierarchical"},
    {BARRIER, .max_bytes = SIZE_MAX, .alg = "dissemination"},
    /* two ranks above the slot, up to 256 KiB (any op): one whole exchange, the input
     * sent as it is and combined into the result only after it (see pairwise.c), beats
     * the ring's two half steps; from 512 KiB the ring's halves win (commutative;
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
    /* several nodes with several ranks each, from 512 KiB, commutative: hierarchical's
     * ring per local index (nodes of equal size; otherwise its leaders' ring): every
     * rank of a node shares the network phase, and no rank waits for a whole-vector
     * reduce to its leader (docs/user/algorithms.md, "hierarchical").  Ahead of the flat
     * ring and of tuned, blocking and non-blocking */
    {ALLREDUCE, .min_bytes = KIB(512), .max_bytes = SIZE_MAX, .min_nodes = 2, .min_rpn = 2, .call_mask = C,
     .call_value = C, .alg = "hierarchical"},
    /* other non-blocking calls on several nodes from 64 KiB: libnbc, which neither
     * loom's ring nor hierarchical beats there */
    {ALLREDUCE, .min_bytes = KIB(64), .max_bytes = SIZE_MAX, .min_nodes = 2, NB, .alg = NULL},
    /* one rank per node on 9 to 255 nodes, commutative, from 1 MiB: the ring in 64 KiB
     * segments.  Measured on the emulated 16 nodes (250 Mbit/s): 1.00-1.02x the link bound
     * at 1-16 MiB, 0.91x the time of tuned's best forced algorithm (its ring) at 16 MiB;
     * the rules before (hierarchical's leaders' ring in 1 MiB segments, the size measured
     * inside one node) were at 1.01-1.63x (docs/dev/model.md, "Heat maps") */
    {ALLREDUCE, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_nodes = 9, .max_nodes = 255, .max_rpn = 1,
     .call_mask = C, .call_value = C, .alg = "ring", .knob = 65536},
    /* one rank per node on 256 nodes or more: recursive halving and doubling, log2 P
     * steps where the ring takes 2 (P-1), from 64 KiB (knomial's rows above take the
     * smaller calls) up to parts of 8 KiB per rank, beyond which the ring's pipeline
     * comes closer to the bound.  From the model alone
     * (docs/dev/model.md, "The lower bound"): 1.15-1.3x the LogGP bound there, for any P
     * with commutative ops (2.2x for non-commutative ones on a P that is not a power of
     * two: the 2^k+q fold), where the ring is at 1.6-100x.  On the emulated 16 nodes it
     * equalled tuned's default (the same algorithm there) */
    /* ...but commutative ops from 8 MiB: Traff's circulant reduce + broadcast, 2n per rank
     * in 2 (n - 1 + log2 P) rounds of small blocks whose combining hides behind the
     * link (the model's dependency-graph reading, as the engine runs it: 1.05-1.09x the
     * bound from 4 MiB at P = 256 and 1024, where halving and doubling, which combines
     * whole halves between its steps, stays at 1.18x).  Not from 2 MiB, where the graph
     * says it wins too: the round reading (the heat maps') puts it at 1.25-1.39x there */
    SCALE_ROW(ALLREDUCE, C, "circulant", 256, 0, MIB(8), SIZE_MAX),
    HD_ROWS(ALLREDUCE, 0, 1),
    /* bandwidth-bound, commutative (float sums included: each part is combined once
     * and copied, so every rank gets the same bits): the ring */
    RING_ROWS(ALLREDUCE, C, MIB(1)),
    {ALLREDUCE, .max_bytes = SIZE_MAX, .alg = NULL},

    /* Non-blocking calls, where the rules that follow (written against tuned's blocking
     * algorithms) would hand them to libnbc, whose trees are slower than loom's on one
     * node: ibcast binomial up to 1 MiB, ireduce binomial below 1 MiB, iallgather
     * hierarchical (point to point) at 64-128 KiB only.  The other forms follow the
     * other rules: what they leave to the previous component (iscan and iexscan above
     * 256 B, the small ireduce_scatters) libnbc does as fast or faster. */
    {BCAST, .max_bytes = MIB(1), .max_nodes = 1, NB, .alg = "binomial"},
    {REDUCE, .max_bytes = MIB(1) - 1, .max_nodes = 1, NB, .alg = "binomial"},
    {ALLGATHER, .min_bytes = KIB(64), .max_bytes = KIB(128), .max_nodes = 1, NB, .alg = "hierarchical"},
    /* iscan, iexscan: recursive doubling wins small calls only; libnbc's from 512 B */
    {SCAN, .min_bytes = 512, .max_bytes = SIZE_MAX, .max_nodes = 1, NB, .alg = NULL},
    {EXSCAN, .min_bytes = 512, .max_bytes = SIZE_MAX, .max_nodes = 1, NB, .alg = NULL},

    /* several nodes, bcast from 512 B: hierarchical, whose node phases stay inside the
     * nodes (through the segment up to the slot) and whose large calls are pipelined
     * along a chain through the nodes (Zhu et al., section 3.1), on any link rate */
    /* ...but one rank per node on 256 nodes or more, from 4 KiB: scatter + allgather (van de
     * Geijn), 2x the LogGP bound, then from 512 KiB Traff's circulant broadcast, its blocks
     * in n - 1 + log2 P rounds (1.5-2.0x at 512 KiB, 1.05-1.08x from 16 MiB), where the chain through
     * the nodes fills in P segments (2.7-65x below P x 256 KiB) and the two-tree's chunks of
     * 1 MiB or more leave it at 12-23x.  From the model alone (docs/dev/model.md, "Heat
     * maps").  On 17 to 255 nodes the same, circulant from 256 KiB: the chain's fill grows
     * with the nodes it passes (measured up to 16 nodes; the model puts it at 4.5-125x
     * from 128 KiB on 32 to 255 nodes) */
    SCALE_ROW(BCAST, 0, "halving_doubling", 17, 255, KIB(4), KIB(256)),
    SCALE_ROW(BCAST, 0, "circulant", 17, 255, KIB(256), SIZE_MAX),
    SCALE_ROW(BCAST, 0, "halving_doubling", 256, 0, KIB(4), KIB(512)),
    SCALE_ROW(BCAST, 0, "circulant", 256, 0, KIB(512), SIZE_MAX),
    {BCAST, .min_bytes = 512, .max_bytes = SIZE_MAX, .min_nodes = 2, .alg = "hierarchical"},
    /* below 512 B hierarchical too, with point-to-point node phases (the component keeps
     * such bcasts off the segment): its cost is the same for every root (Zhu et al.
     * s. 4), where a binomial tree rooted at an odd rank crosses the network more often */
    {BCAST, .max_bytes = 511, .min_nodes = 2, .alg = "hierarchical"},
    /* one rank per node on 256 nodes or more, commutative, from 2 KiB: reduce-scatter +
     * gather (the rows further down say why), ahead of the small reduces' row; on 17-255
     * nodes the same up to 256 KiB and circulant above, where these calls went to
     * hierarchical's binomial tree (up to 8 KiB: 1.03-2.4x their time by the model) or to
     * tuned (from the model alone, as the bcast's rows from 17 nodes) */
    SCALE_ROW(REDUCE, C, "halving_doubling", 17, 255, KIB(2), KIB(256)),
    SCALE_ROW(REDUCE, C, "circulant", 17, 255, KIB(256), SIZE_MAX),
    SCALE_ROW(REDUCE, C, "halving_doubling", 256, 0, KIB(2), KIB(8) + 1),
    /* up to 8 KiB, commutative: hierarchical, whose node phase pipelines back-to-back
     * calls up to 2 KiB (the segment's small slots), at least as fast as binomial and
     * tuned.  Non-commutative ops: binomial up to 256 B (on one node it does not beat
     * tuned's: left to it) */
    {REDUCE, .max_bytes = 8192, .min_nodes = 2, .call_mask = C, .call_value = C, .alg = "hierarchical"},
    /* one rank per node on 256 nodes or more, commutative, from 2 KiB: reduce-scatter +
     * gather (at most 2.5x the bound where the chain was at 2.3-33x and the two-tree at
     * 13-23x), from 512 KiB Traff's circulant reduction, the broadcast's rounds backwards
     * (round reading 1.35-2.2x, dependency graph 1.02-1.3x, where reduce-scatter +
     * gather's root receives the vector twice: 2.35x).  From the model alone
     * (docs/dev/model.md, "Heat maps") */
    /* ...and on 9 to 255 nodes from 1 MiB: the circulant reduction, measured on the
     * emulated 16 nodes at 1.01-1.09x the link bound for 1-16 MiB, where tuned's best
     * forced algorithm (its pipeline) took 1.16-1.6x and hierarchical's chain 1.56-4.95x */
    SCALE_ROW(REDUCE, C, "circulant", 9, 255, MIB(1), SIZE_MAX),
    SCALE_ROW(REDUCE, C, "halving_doubling", 256, 0, KIB(2), KIB(512)),
    SCALE_ROW(REDUCE, C, "circulant", 256, 0, KIB(512), SIZE_MAX),
    {REDUCE, .max_bytes = 256, .min_nodes = 2, .alg = "binomial"},
    /* from 4 MiB, commutative: hierarchical's pipelined chain (Zhu et al., section 3.2),
     * 512 KiB segments combined on their way to the root.  At 1-2 MiB it wins on slow
     * links but loses where the CPU is the bottleneck: left to tuned */
    {REDUCE, .min_bytes = MIB(4), .max_bytes = SIZE_MAX, .min_nodes = 2, .call_mask = C, .call_value = C,
     .alg = "hierarchical"},
    /* below that, and non-commutative ops: tuned up to 16 MiB, where neither the
     * two-tree nor binomial beats it; binomial from 16 MiB.  Up to 8 ranks only:
     * binomial's log2 P whole-vector hops are what a larger job cannot afford */
    {REDUCE, .min_bytes = MIB(1), .max_bytes = MIB(16) - 1, .min_nodes = 2, .max_P = 8, .alg = NULL},
    {REDUCE, .min_bytes = MIB(16), .max_bytes = SIZE_MAX, .min_nodes = 2, .max_P = 8, .alg = "binomial"},
    /* one node, up to the shared-memory slot: the node phase runs through the node's
     * segment instead of messages.  Below about 512 B tuned's eager sends run ahead of
     * the root, so back-to-back calls pipeline; the segment's areas let a root run ahead
     * too (31 calls through the 32 small areas up to 2 KiB, seven through the eight large
     * ones, MCA_COLL_LOOM_SHM_AREAS).  More ranks favour the segment (one write, P reads)
     * over tuned's tree of eager sends: four ranks or more take it from 0 B, three from
     * 16 B.  Two ranks are the exception below 128 B: a call so short that handing it to
     * tuned costs only loom's entry, while the segment's hand-over of cache lines costs
     * more whenever the two cores pass lines slowly (a state that comes and goes); from
     * 128 B the segment wins in either state. */
    {BCAST, .min_bytes = 128, .max_bytes = 511, .max_P = 2, .max_nodes = 1, SHM, .alg = "hierarchical"},
    {BCAST, .max_bytes = 8192, .min_P = 4, .max_nodes = 1, SHM, .alg = "hierarchical"},
    {BCAST, .min_bytes = 16, .max_bytes = 8192, .min_P = 3, .max_nodes = 1, SHM, .alg = "hierarchical"},
    {BCAST, .min_bytes = 512, .max_bytes = 8192, .max_nodes = 1, SHM, .alg = "hierarchical"},
    /* reduce: the segment's small slots (2 KiB) let contributors run up to 31 calls
     * ahead of the root, as eager sends let tuned's.  Four ranks or more from 0 B; two or
     * three from 128 B, as for bcast: below, the segment loses in some jobs (at np 2 when
     * the two cores pass cache lines slowly, see the bcast rules above). */
    {REDUCE, .max_bytes = 8192, .min_P = 4, .max_nodes = 1, .call_mask = C | MCA_COLL_LOOM_CALL_SHM,
     .call_value = C | MCA_COLL_LOOM_CALL_SHM, .alg = "hierarchical"},
    {REDUCE, .min_bytes = 128, .max_bytes = 8192, .max_nodes = 1, .call_mask = C | MCA_COLL_LOOM_CALL_SHM,
     .call_value = C | MCA_COLL_LOOM_CALL_SHM, .alg = "hierarchical"},
    /* large bcast / reduce: the pipelined two-tree (the TwoTreeC paper).  reduce from
     * 1 MiB; bcast only from 16 MiB, where it reaches tuned's default (tuned's best bcast
     * there); below it stays with tuned */
    {BCAST, .min_bytes = MIB(16), .max_bytes = SIZE_MAX, .min_P = 3, .alg = "twotree"},
    {BCAST, .max_bytes = SIZE_MAX, .alg = NULL},
    {REDUCE, .min_bytes = MIB(1), .max_bytes = SIZE_MAX, .min_P = 3, .call_mask = C, .call_value = C,
     .alg = "twotree"},
    {REDUCE, .max_bytes = SIZE_MAX, .alg = NULL},

    /* allgather, several nodes (sizes of the whole gathered vector): hierarchical (one
     * gather per node, whole nodes among the leaders) below 2 MiB; from 2 MiB the ring,
     * the faster there on up to 8 ranks */
    {ALLGATHER, .max_bytes = MIB(2) - 1, .min_nodes = 2, .alg = "hierarchical"},
    {ALLGATHER, .min_bytes = MIB(2), .max_bytes = SIZE_MAX, .min_nodes = 2, .max_P = 8, .alg = "ring"},
    /* one node, 8-64 KiB: hierarchical (the node gather and bcast of the vector); below
     * and above, tuned is as fast */
    {ALLGATHER, .min_bytes = KIB(8), .max_bytes = KIB(64), .max_nodes = 1, .min_P = 3, .alg = "hierarchical"},
    /* allgather / reduce_scatter: the ring, by the size of the whole vector */
    RING_ROWS(ALLGATHER, 0, MIB(4)),
    {ALLGATHER, .max_bytes = SIZE_MAX, .min_nodes = 2, .alg = "hierarchical"},
    {ALLGATHER, .max_bytes = SIZE_MAX, .alg = NULL},
    /* two ranks: the ring is one exchange of halves, ahead of tuned from 4 KiB */
    {RS, .min_bytes = KIB(4), .max_bytes = SIZE_MAX, .max_P = 2, .call_mask = C, .call_value = C,
     .alg = "ring"},
    {RSB, .min_bytes = KIB(4), .max_bytes = SIZE_MAX, .max_P = 2, .call_mask = C, .call_value = C,
     .alg = "ring"},
    /* the ring: reduce_scatter from 256 KiB, reduce_scatter_block from 512 KiB (at
     * P <= 8) */
    /* one rank per node on 256 nodes or more: recursive halving, from the model alone
     * (1.05-1.25x the LogGP bound where these calls went to tuned) */
    HD_ROWS(RS, C, 0),
    RING_ROWS(RS, C, KIB(256)),
    /* ...and what those rows leave on 17 nodes or more of one rank each: k-ary halving
     * (knomial, radix 4) below 16 KiB (64 KiB from 256 nodes), recursive halving above.
     * From the model alone, as the bcast's rows from 17 nodes (0.6-1.9x the LogGP bound;
     * the rows for up to 16 nodes were measured on 4 x 2) */
    RS_SCALE_ROWS(RS),
    {RS, .max_bytes = SIZE_MAX, .alg = NULL},
    /* several nodes, reduce_scatter_block: the ring at 256 KiB, tuned at 512 KiB - 1 MiB,
     * the ring again from 1 MiB.  Tuned's own algorithm changes with the size, hence the
     * gap in the middle */
    {RSB, .min_bytes = KIB(256), .max_bytes = KIB(512) - 1, .min_nodes = 2, .max_P = 8, .call_mask = C,
     .call_value = C, .alg = "ring"},
    {RSB, .min_bytes = KIB(512), .max_bytes = MIB(1) - 1, .min_nodes = 2, .max_P = 8, .alg = NULL},
    HD_ROWS(RSB, C, 0),
    RING_ROWS(RSB, C, KIB(512)),
    RS_SCALE_ROWS(RSB),
    {RSB, .max_bytes = SIZE_MAX, .alg = NULL},

    /* scan / exscan, judged by each call's own latency (an application waits for the
     * result): several nodes, hierarchical, whose rounds cross the network once per node
     * pair (Zhu et al., section 3.5), scan up to 1 MiB and exscan up to 128 KiB; larger
     * exscans stay with tuned's linear chain, as everything above 1 MiB.  One node:
     * recursive doubling up to 2 KiB; with two ranks both are one message, and tuned's
     * is the faster.  Nodes whose ranks are not consecutive refuse hierarchical and fall
     * through. */
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
     * outbox, coll_loom_shm_outbox_size): direct, every part straight to its destination
     * (Iakymchuk et al., section IV.B), up to 512 KiB (larger outboxes pay up to there,
     * not beyond).  Point to point, direct is what tuned runs (linear),
     * except from 16 ranks, where tuned sends parts under 512 B through its Bruck
     * (several hops, and wrong data when the send and receive types differ in layout)
     * and direct is faster.  The rows bound the total, so at P near a row's top only
     * the smaller parts of that region come here; the rest is left to tuned. */
    {ALLTOALL, .max_bytes = KIB(512), .max_nodes = 1, SHM, .alg = "direct"},
    {ALLTOALL, .max_bytes = KIB(8) - 1, .max_nodes = 1, .min_P = 16, .max_P = 31, .alg = "direct"},
    {ALLTOALL, .max_bytes = KIB(16) - 1, .max_nodes = 1, .min_P = 32, .alg = "direct"},
    /* the non-blocking forms: direct, ahead of libnbc for small calls and as fast above;
     * and libnbc's in-place ialltoallv returned wrong data at np 5-7 in test_alltoall
     * (Open MPI 4.1.4) */
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
           && in_range(rpn, r->min_rpn, r->max_rpn) && (p->call & r->call_mask) == r->call_value
           && (!r->sub_torus || mca_coll_loom_swing_sub_torus(p));
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

void mca_coll_loom_decide_net(mca_coll_loom_coll_t coll, size_t bytes, const mca_coll_loom_params_t *p,
                              const int *knobs, const mca_coll_loom_rule_t *file_rules, int nfile, int *net_alg,
                              int *net_knob)
{
    mca_coll_loom_params_t q = *p;
    mca_coll_loom_choice_t c;

    *net_alg = 0;
    *net_knob = 0;
    if ((MCA_COLL_LOOM_COLL_BCAST != coll && MCA_COLL_LOOM_COLL_REDUCE != coll) || p->nodes < 2 || p->rpn < 2) {
        return;
    }
    q.P = p->nodes;
    q.rpn = 1;
    q.rank = 0;
    q.root = 0;
    q.node_of = NULL;
    q.leaders_only = 0;
    q.torus = NULL;
    q.torus_coords = NULL;
    q.net_alg = q.net_knob = q.net_segs = 0;
    /* bytes: the same vector crosses the nodes */
    mca_coll_loom_decide(coll, bytes, &q, knobs, -1, file_rules, nfile, &c);
    if (c.alg >= 0 && 0 != strcmp(mca_coll_loom_algs[c.alg]->name, "hierarchical")) {
        *net_alg = c.alg + 1;
        *net_knob = c.knob;
    }
}

static void decide_alg(mca_coll_loom_coll_t coll, size_t bytes, const mca_coll_loom_params_t *p,
                       const int *knobs, int forced, const mca_coll_loom_rule_t *file_rules, int nfile,
                       mca_coll_loom_choice_t *choice)
{
    choice->alg = -1;
    choice->knob = 0;
    choice->rule = NULL;
    choice->why = "no rule";
    choice->refused = NULL;
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

void mca_coll_loom_decide(mca_coll_loom_coll_t coll, size_t bytes, const mca_coll_loom_params_t *p,
                          const int *knobs, int forced, const mca_coll_loom_rule_t *file_rules,
                          int nfile, mca_coll_loom_choice_t *choice)
{
    decide_alg(coll, bytes, p, knobs, forced, file_rules, nfile, choice);
    choice->net_alg = 0;
    choice->net_knob = 0;
    if (choice->alg >= 0 && 0 == strcmp(mca_coll_loom_algs[choice->alg]->name, "hierarchical")) {
        mca_coll_loom_decide_net(coll, bytes, p, knobs, file_rules, nfile, &choice->net_alg, &choice->net_knob);
    }
}
