/*
 * loom: schedules, the MPI-agnostic description of what one rank does in a collective.
 *
 * A schedule is a flat list of operations on numbered buffer slots.  Slot 0 is the
 * result (the receive buffer), slot 1 is the rank's own contribution (the send buffer,
 * or a copy of the receive buffer for MPI_IN_PLACE), slots 2.. are scratch buffers of
 * the same shape (count elements of the call's datatype).
 *
 * Execution model (the executor in ompi/mca/coll/loom and the symbolic checker in
 * loom_verify.c implement exactly this):
 *   SEND / RECV   start a non-blocking transfer of a whole slot to / from a peer;
 *   WAIT          completes every transfer started since the previous WAIT;
 *   COPY          dst := src
 *   REDUCE        dst := src o dst   (src is the left operand: it holds lower ranks)
 *   REDUCE_R      dst := dst o src   (dst is the left operand)
 *   UNREDUCE      dst := dst o src^-1, only emitted for ops with an exact inverse
 *                 (integer sum, bitwise xor): the "take out" of End et al., III.B.
 * Messages between a pair of ranks match in the order they are posted (MPI
 * non-overtaking with a single tag).  A slot with a transfer in flight is not touched
 * by a local operation before the WAIT that completes it.
 *
 * The dependency graph.  Builders write rounds (the list above, with WAITs);
 * mca_coll_loom_sched_finish() derives from it the graph the engine runs: an op
 * depends on the earlier ops whose blocks it conflicts with (it reads what they
 * write, or writes what they read or write; INPUT and RESULT count as one buffer, so
 * the graph holds for MPI_IN_PLACE too, unless input_after_result gives an in-place
 * call a copy of INPUT), and a transfer on the previous transfer of
 * its channel (same peer, same direction) having been *posted*, so that every
 * channel posts in list order and messages match as written; a send also waits for
 * the previous send of its channel to be *done* (a link shared by all the segments of
 * a pipeline at once would deliver none of them early).  WAITs drop out (unless the
 * schedule is lockstep, below): a
 * chunk received by an inner node of a pipeline is forwarded as soon as it is in,
 * not at the end of a round (the TwoTreeC paper, Algorithm 2).  The round reading stays valid
 * (it is one order the graph allows) and is what the model costs.
 *
 * Blocks: a schedule may split every slot into `nblocks` blocks.  Blocks come in
 * `nblocks / nseg` parts of `nseg` segments each (block b is segment b % nseg of
 * part b / nseg).  The parts split the call's count as evenly as possible (the
 * count % nparts parts one element longer, spread evenly), unless the call gives explicit
 * part sizes (reduce_scatter's recvcounts); each part is split the same way into
 * its segments.  An op with nblk > 0 then covers blocks blk .. blk+nblk-1 of its
 * slots only, a contiguous element range; nblk == 0 means the whole slot.  An op
 * whose range holds no element (count smaller than nblocks) is skipped on both
 * sides of a transfer alike.
 *
 * Block moves: a local op may take blocks blk.. of src to blocks dblk.. of dst (a
 * rotation, a transposition; dblk == blk otherwise), and a transfer may land in other
 * blocks of the receiver than it left at the sender (each side's blk is its own).  A
 * moved range must hold as many elements where it lands as where it came from, which
 * only a layout of equal blocks guarantees: a schedule that moves blocks says so
 * (moves_blocks, set by the _move appends and by mca_coll_loom_sched_moves_blocks),
 * and runs only on calls whose layout is uniform (mca_coll_loom_layout_uniform).
 */
#ifndef MCA_COLL_LOOM_SCHED_H
#define MCA_COLL_LOOM_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MCA_COLL_LOOM_SLOT_RESULT   0
#define MCA_COLL_LOOM_SLOT_INPUT    1
#define MCA_COLL_LOOM_SLOT_SCRATCH0 2
#define MCA_COLL_LOOM_MAX_SLOTS     64

typedef enum {
    MCA_COLL_LOOM_OP_SEND = 0,
    MCA_COLL_LOOM_OP_RECV,
    MCA_COLL_LOOM_OP_WAIT,
    MCA_COLL_LOOM_OP_COPY,
    MCA_COLL_LOOM_OP_REDUCE,
    MCA_COLL_LOOM_OP_REDUCE_R,
    MCA_COLL_LOOM_OP_UNREDUCE
} mca_coll_loom_op_kind_t;

typedef struct {
    uint8_t kind;  /* mca_coll_loom_op_kind_t */
    uint8_t src;   /* slot read (SEND, COPY, REDUCE*, UNREDUCE) */
    uint8_t dst;   /* slot written (RECV, COPY, REDUCE*, UNREDUCE) */
    int32_t peer;  /* SEND / RECV only */
    int32_t blk;   /* first block (when nblk > 0); of src for a local op */
    int32_t nblk;  /* blocks covered; 0: the whole slot */
    int32_t dblk;  /* local ops: first block of dst (blk unless the op moves blocks) */
} mca_coll_loom_op_t;

typedef struct {
    mca_coll_loom_op_t *ops;
    int nops;
    int cap;
    int nslots;           /* highest slot used + 1 (at least 2) */
    int nblocks;          /* blocks per slot for ops with nblk > 0 (0: none used) */
    int nseg;             /* segments per part (nblocks is a multiple of it; 1 when unsegmented) */
    int max_inflight;     /* most transfers started between two WAITs */
    int rounds;           /* number of WAITs: communication rounds of this rank */
    bool input_after_result; /* INPUT is read after RESULT is first written, so an
                                MPI_IN_PLACE call needs INPUT saved in a scratch copy */
    bool moves_blocks;    /* some op puts data in other blocks than it took it from:
                             equal blocks needed */
    bool lockstep;        /* the graph keeps the rounds (mca_coll_loom_sched_lockstep) */
    bool one_send;        /* one send in flight at a time (mca_coll_loom_sched_one_send) */
    bool exchange;        /* every rank receives from each peer it sends to, and only
                             from those (mca_coll_loom_sched_exchange) */
    int error;            /* sticky: MCA_COLL_LOOM_ERR_* of the first failed append */
    /* the dependency graph (set by mca_coll_loom_sched_finish): op i may start once
     * npred[i] releases have arrived, one from each op it depends on through data (sent
     * when that op is done, to its successors succ[succ_start[i] .. succ_start[i+1]-1];
     * a send's data predecessors include the previous send on its channel) and, for a
     * transfer, one from the previous transfer on its channel (sent when that one is
     * posted: chan_next[j] == i).  WAITs have no edges. */
    int32_t *npred;       /* [nops] */
    int32_t *succ_start;  /* [nops + 1] */
    int32_t *succ;        /* [succ_start[nops]] */
    int32_t *chan_next;   /* [nops]: the next transfer on op i's channel, or -1 */
    int ntransfers;       /* SEND and RECV ops */
    bool no_graph;        /* set by the caller: finish leaves the graph out (the model's
                             round mode never reads it); kept across reset */
} mca_coll_loom_sched_t;

/* Return codes of the core (the component maps them to OMPI_ERR_*). */
#define MCA_COLL_LOOM_OK            0
#define MCA_COLL_LOOM_ERR_NOMEM    -1
#define MCA_COLL_LOOM_ERR_BADPARAM -2
#define MCA_COLL_LOOM_ERR_NOTSUP   -3  /* the algorithm cannot serve this (P, knob, op) */

void mca_coll_loom_sched_init(mca_coll_loom_sched_t *s);
void mca_coll_loom_sched_fini(mca_coll_loom_sched_t *s);
void mca_coll_loom_sched_reset(mca_coll_loom_sched_t *s);

void mca_coll_loom_sched_send(mca_coll_loom_sched_t *s, int peer, int slot);
void mca_coll_loom_sched_recv(mca_coll_loom_sched_t *s, int peer, int slot);
void mca_coll_loom_sched_wait(mca_coll_loom_sched_t *s);
/* If the schedule ends with a WAIT that closes a run of sends only, removes it, so that
 * the transfers appended next start without waiting for those sends (a send does not
 * write its buffer; the next WAIT completes both).  Returns true when it did. */
bool mca_coll_loom_sched_unwait_sends(mca_coll_loom_sched_t *s);
void mca_coll_loom_sched_copy(mca_coll_loom_sched_t *s, int src, int dst);
void mca_coll_loom_sched_reduce(mca_coll_loom_sched_t *s, int src, int dst);
void mca_coll_loom_sched_reduce_r(mca_coll_loom_sched_t *s, int src, int dst);
void mca_coll_loom_sched_unreduce(mca_coll_loom_sched_t *s, int src, int dst);

/* Block-range variants (blocks blk .. blk+nblk-1 of the slots, nblk >= 1); the
 * schedule's block count is set first with mca_coll_loom_sched_set_blocks(). */
void mca_coll_loom_sched_set_blocks(mca_coll_loom_sched_t *s, int nblocks);
/* nparts parts of nseg segments each: nblocks = nparts * nseg, block = part * nseg + seg. */
void mca_coll_loom_sched_set_segmented_blocks(mca_coll_loom_sched_t *s, int nparts, int nseg);
void mca_coll_loom_sched_send_blk(mca_coll_loom_sched_t *s, int peer, int slot, int blk, int nblk);
void mca_coll_loom_sched_recv_blk(mca_coll_loom_sched_t *s, int peer, int slot, int blk, int nblk);
void mca_coll_loom_sched_reduce_blk(mca_coll_loom_sched_t *s, int src, int dst, int blk, int nblk);
void mca_coll_loom_sched_reduce_r_blk(mca_coll_loom_sched_t *s, int src, int dst, int blk, int nblk);
void mca_coll_loom_sched_copy_blk(mca_coll_loom_sched_t *s, int src, int dst, int blk, int nblk);
/* Block moves: blocks blk .. blk+nblk-1 of src to blocks dblk .. dblk+nblk-1 of dst
 * (set moves_blocks). */
void mca_coll_loom_sched_copy_move(mca_coll_loom_sched_t *s, int src, int blk, int dst, int dblk, int nblk);
void mca_coll_loom_sched_reduce_move(mca_coll_loom_sched_t *s, int src, int blk, int dst, int dblk, int nblk);
/* Declares that this rank's transfers may land in other blocks at the peer than they
 * left from (or the reverse): a schedule that moves blocks through messages only. */
void mca_coll_loom_sched_moves_blocks(mca_coll_loom_sched_t *s);
/* Keeps the rounds in the dependency graph: each WAIT waits for the transfers since the
 * previous one, and every op after it waits for it.  For schedules whose point is to
 * bound what is in flight (a pairwise exchange of large blocks: one partner at a time),
 * which the data dependencies alone would post all at once. */
void mca_coll_loom_sched_lockstep(mca_coll_loom_sched_t *s);
/* Sends leave one at a time, in list order, whatever their peer: each waits for the
 * previous send to be done.  For schedules that send a different peer each round (the
 * circulant graph) and whose later rounds' data can be ready early: the link then
 * carries the current round's block alone instead of sharing it with a later one. */
void mca_coll_loom_sched_one_send(mca_coll_loom_sched_t *s);
/* Declares that in every call each pair of ranks exchanges messages both ways or not at
 * all (the verifier checks it on every rank).  A transport may then write a message
 * straight into a buffer at the receiver that it reuses every other call (Iakymchuk et al.'s
 * direct writes): the peer's message of call k+1 proves that the receiver has read what
 * arrived in call k.  Not carried by mca_coll_loom_sched_append_mapped. */
void mca_coll_loom_sched_exchange(mca_coll_loom_sched_t *s);

/* First element of block b when `count` elements are split into `nblocks` blocks
 * (b may equal nblocks: the end).  The count % nblocks blocks one element longer are
 * spread evenly (block b starts at floor(b count / nblocks)), not packed at the front:
 * with fewer elements than blocks, every half of the block range holds half of them,
 * so recursive halving halves the data at each step. */
static inline size_t mca_coll_loom_block_start(size_t count, int nblocks, int b)
{
    size_t q = count / (size_t) nblocks, r = count % (size_t) nblocks;
    return (size_t) b * q + (size_t) b * r / (size_t) nblocks;
}

/* Where the blocks of one call lie: `count` elements in `nparts` parts of `nseg`
 * segments; part_displ is NULL (even parts) or nparts+1 prefix sums of the parts'
 * element counts (the last one equal to count). */
typedef struct {
    size_t count;
    int nparts;
    int nseg;
    const size_t *part_displ;
} mca_coll_loom_layout_t;

/* First element of block b (b may equal nparts * nseg: the end). */
static inline size_t mca_coll_loom_layout_start(const mca_coll_loom_layout_t *l, int b)
{
    int part = b / l->nseg, seg = b % l->nseg;
    size_t first, len;

    if (part >= l->nparts) {
        return l->count;
    }
    if (NULL != l->part_displ) {
        first = l->part_displ[part];
        len = l->part_displ[part + 1] - first;
    } else {
        first = mca_coll_loom_block_start(l->count, l->nparts, part);
        len = mca_coll_loom_block_start(l->count, l->nparts, part + 1) - first;
    }
    return first + mca_coll_loom_block_start(len, l->nseg, seg);
}

/* Are all blocks of the layout the same number of elements (as a schedule that moves
 * blocks needs)? */
static inline bool mca_coll_loom_layout_uniform(const mca_coll_loom_layout_t *l)
{
    size_t first;

    if (NULL == l->part_displ && l->nparts > 0 && l->nseg > 0) {
        /* even parts (mca_coll_loom_block_start): equal when they divide the count; a
         * call's check is then O(1), not O(parts) */
        return 0 == l->count % (size_t) l->nparts && 0 == l->count / (size_t) l->nparts % (size_t) l->nseg;
    }
    first = mca_coll_loom_layout_start(l, 1);
    for (int b = 1; b < l->nparts * l->nseg; ++b) {
        if (mca_coll_loom_layout_start(l, b + 1) - mca_coll_loom_layout_start(l, b) != first) {
            return false;
        }
    }
    return true;
}

/* Appends src's ops to dst (both unfinished), for schedules composed of parts built
 * for a sub-communicator: a peer q of src becomes peer_map[q] (NULL: q); slot 0 becomes
 * res_slot, slot 1 in_slot, scratch slot k >= 2 becomes scratch_base + k - 2.
 * A src that uses blocks gives dst its block layout; dst must then have none yet or
 * the same one (else dst->error is MCA_COLL_LOOM_ERR_NOTSUP). */
void mca_coll_loom_sched_append_mapped(mca_coll_loom_sched_t *dst, const mca_coll_loom_sched_t *src,
                                       const int *peer_map, int res_slot, int in_slot, int scratch_base);

/* Orders each run of transfers receives-first, computes nslots, max_inflight,
 * rounds, input_after_result and the dependency graph; returns s->error. */
int mca_coll_loom_sched_finish(mca_coll_loom_sched_t *s);

/* A finished schedule copied into caller memory of mca_coll_loom_sched_copy_bytes(s)
 * bytes (a multiple of 8): out's arrays point into mem, so out must not be given to
 * mca_coll_loom_sched_fini.  A request keeps such a copy, so the schedule cache may
 * replace the original while the request runs. */
size_t mca_coll_loom_sched_copy_bytes(const mca_coll_loom_sched_t *s);
void mca_coll_loom_sched_copy_into(const mca_coll_loom_sched_t *s, mca_coll_loom_sched_t *out, void *mem);

/* Human-readable dump (one op per line) for debugging and verbose output. */
void mca_coll_loom_sched_print(const mca_coll_loom_sched_t *s, void (*out)(const char *line, void *ctx),
                               void *ctx);

#endif /* MCA_COLL_LOOM_SCHED_H */
