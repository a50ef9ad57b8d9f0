/*
 * loom: the per-node shared segment of the hierarchical collectives' node phases
 * (Zhu et al., section 3: shared memory pays for short messages and for flags).
 *
 * One segment per node of a communicator, created by the node's leader and mapped
 * by the node's other ranks.  It holds counters and small data areas:
 *
 *   arrive[i] set to `seq` (calls are counted from 1) by rank i of the node when it
 *             enters call `seq`, after its contribution (if any) is in its slot; it
 *             also means that rank i is done with every earlier call;
 *   bell      rung by an arriving rank only when the coordinator sleeps on it;
 *   release   set to `seq` by the rank that coordinates call `seq` on this node once
 *             it has read every slot and, if the call delivers data, written it to
 *             area[seq % A]; one word per area, release[seq % A];
 *   slot[i]   rank i's contribution (slot_bytes each);
 *   area[A]   data every rank of the node reads, A = MCA_COLL_LOOM_SHM_AREAS areas
 *             taken by the calls in turn;
 *   sym[i][D] rank i's small slots (MCA_COLL_LOOM_SHM_SMALL_BYTES each), D =
 *             MCA_COLL_LOOM_SHM_SYM_DEPTH taken by the calls in turn, each with its own
 *             flag (below);
 *   small[D]  small data areas every rank of the node reads, taken by the calls in turn
 *             (small bcasts, below).
 *
 * A flag shares its cache line with the first bytes of its data: arrive[i] with
 * slot[i], release[p] with area[p].  A reader that sees the flag then has a short
 * message already in its cache, one line transfer between cores instead of two (on
 * a machine whose cores sit on different L3 slices a transfer costs about as much as
 * the rest of a small call).
 *
 * The protocol of one call `seq` on a node, for any coordinator (the leader, or the
 * root standing in for it):
 *
 *   everyone     wait release >= seq - 1   (the previous call read every slot; the
 *                small reduces' contributors and small bcasts' readers, below, skip it)
 *                write own slot (if any); arrive[me] = seq
 *   coordinator  wait every arrive[i] >= seq (gathering calls) or >= seq - A + 1
 *                (pure bcast: every rank is done reading area[(seq - A) % A]),
 *                combine / write area[seq % A]; release = seq
 *   everyone     wait release >= seq (calls that deliver data or synchronise)
 *
 * A bcast root thus runs up to A - 1 calls ahead of its slowest reader, as eager sends
 * let tuned's; with two areas back-to-back bcasts lost to tuned's (docs/dev/developing.md,
 * "Performance notes").
 *
 * Calls on a communicator of one node with at most MCA_COLL_LOOM_SHM_SYM_BYTES of
 * data (small allreduces, barriers) have no coordinator: every rank combines every
 * rank's contribution itself, in the same order, so all get the same bits.  Each rank
 * has D more slots, sym[i][seq % D], each with its own flag in its first line:
 *
 *   everyone     wait until every rank is done with call seq - D, the last one that
 *                may have read sym[.][seq % D] (small_enter; usually known already: a
 *                symmetric call learns that every rank entered it)
 *                write own sym slot, its flag = seq; arrive[me] = seq
 *                wait every sym flag of call seq, combine
 *   index 0      wait release >= seq - 1, then release = seq (for the calls that follow)
 *
 * One cache-line hand-over per rank pair instead of the coordinator's two.
 *
 * Reduces (any node count: the node phase) use the sym slots too, so that a rank that
 * only contributes leaves at once and runs up to D - 1 calls ahead of the coordinator,
 * as eager sends let tuned's (Zhu et al., section 3.2: the node phase of a reduce is a
 * gather).  One larger than MCA_COLL_LOOM_SHM_SMALL_BYTES is cut into chunks of whole
 * elements, each chunk a call of its own (at most D / 2 of them; else the large slots):
 *
 *   contributor  small_enter, write own sym slot, its flag = seq; arrive[me] = seq; leave
 *   coordinator  wait release >= seq - 1; arrive[me] = seq; wait the others' sym flags
 *                of call seq, combine; release = seq
 *
 * Bcasts of at most MCA_COLL_LOOM_SHM_SMALL_BYTES go through the small areas, so that
 * the root runs up to D - 1 calls ahead of its slowest reader instead of A - 1:
 *
 *   coordinator  wait release >= seq - 1; arrive[me] = seq; small_enter; write
 *                small[seq % D]; release = seq
 *   reader       arrive[me] = seq; wait release >= seq, read small[seq % D]
 *
 * A reader writes nothing, so it does not wait for the previous call first.  It waits
 * on the release words, which every call writes in call order: "release >= seq" holds
 * once call seq is released, however far the root has run ahead.
 *
 * "Done with call t" is known from arrive[i] > t (arrive means done with every earlier
 * call), cached as `done`: every rank is done with every call before it.  small_enter
 * waits until every rank is done with call seq - D, the last one that may have read the
 * small slots and the small area of call seq.
 *
 * Only calls that write a sym slot write its flag, so after 2^31 other calls a flag
 * compared modulo 2^32 would look reached.  At the start of every call (before it
 * arrives), a rank looks at its flag of slot seq % D and, if it was last written 2^30
 * calls ago or more, sets it to seq - 2 (sym_refresh).  Nobody reads it then: the call
 * that wrote it last is long over on every rank, and the next one to read it waits for
 * this rank's arrival at a later call first, which publishes the new value.  `done`,
 * which only this rank reads, is kept within 2^30 calls of seq the same way (an older
 * one is looked up again when needed).
 *
 * release only grows: the coordinator of call seq + 1 writes it after waiting for
 * release >= seq.  "release >= t" is release[t % A] >= t: the A words take the calls
 * in turn.  Counters are 32 bits and compared modulo 2^32, so they may wrap.
 *
 * A rank whose part of a call fails (a conversion of the data, a temporary buffer, the
 * leaders' phase) still takes every step above, so that nobody waits for it, and
 * writes its error code as the status of what it wrote (mca_coll_loom_shm_status):
 * whoever reads a slot or an area with a failed status returns that error instead of
 * using stale contents.  Only this node learns of it: a leader that failed before the
 * leaders' phase skips it, and the other nodes wait there.  Its messages of a later call
 * would complete their call with the wrong data, so the component then fails this
 * communicator's later collectives on the ranks that saw the error, without a message
 * (mca_coll_loom_mark_failed).  MPI leaves the state after an error undefined; the
 * other nodes hang, as behind a failed point-to-point algorithm, and no rank returns
 * wrong data as a success.
 *
 * Waiting spins first, calling a progress hook, then sleeps on a futex (Linux; a
 * yield loop elsewhere), so ranks that wait for another node do not take the core
 * from those that work.  Posting wakes sleepers only when there are any.
 *
 * MPI-agnostic: the component supplies the path, sizes and the progress hook.
 */
#ifndef MCA_COLL_LOOM_SHM_H
#define MCA_COLL_LOOM_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the segment's creator stamps in its header; attach checks it.  The settings
 * check hashes it too, so a new value also keeps ranks of earlier builds (which name
 * or use the segment differently: "loomshm5" named it outside a per-process directory,
 * "loomshm6" had no status word, "loomshm7" reduced above 2 KiB through the large slots,
 * "loomshm8" ran alltoall point to point) off a shared segment. */
#define MCA_COLL_LOOM_SHM_MAGIC 0x6c6f6f6d73686d39ull /* "loomshm9" */

/* Areas (and release words), used by calls in turn: a bcast's root may run this many
 * calls minus one ahead of the slowest reader.  A power of two. */
#ifndef MCA_COLL_LOOM_SHM_AREAS
#define MCA_COLL_LOOM_SHM_AREAS 8
#endif
/* Small slots per rank (sym, below) and small areas, used by calls in turn: a rank that
 * contributes to a small reduce, or the root of a small bcast, may run this many calls
 * minus one ahead of the others.  A power of two. */
#ifndef MCA_COLL_LOOM_SHM_SYM_DEPTH
#define MCA_COLL_LOOM_SHM_SYM_DEPTH 32
#endif

typedef struct {
    char *base;          /* the mapping, NULL when not attached */
    size_t bytes;        /* its length */
    int n;               /* ranks sharing it */
    int me;              /* this rank's index among them */
    size_t slot_bytes;   /* bytes of one slot / area */
    size_t stride;       /* distance between slots and areas (head + slot_bytes, whole lines) */
    uint32_t *bell, *bell_waiters;
    uint32_t *release[MCA_COLL_LOOM_SHM_AREAS], *release_waiters;
    char *area[MCA_COLL_LOOM_SHM_AREAS]; /* area p's data; release[p] at its line's start */
    char *slot0;         /* slot i: slot0 + i * stride; its arrive word at its line's start */
    size_t sym_stride;   /* distance between small slots, and between small areas */
    char *sym0;          /* sym[i][p]: sym0 + (D i + p) * sym_stride; its flag at its line's start */
    char *small0;        /* small[p]: small0 + p * sym_stride */
    /* this rank's knowledge, not shared: */
    uint32_t sym_fresh[MCA_COLL_LOOM_SHM_SYM_DEPTH]; /* the last value it stored in its sym flag p */
    uint32_t done;       /* every rank of the node is done with every call before this one */
} mca_coll_loom_shm_t;

/* How to wait: `spin` checks before sleeping (each followed by progress(), if any);
 * a sleep lasts at most sleep_us before the condition and progress are checked
 * again. */
typedef struct {
    int spin;
    int sleep_us;
    void (*progress)(void);
} mca_coll_loom_shm_wait_t;

/* Bytes of a segment for n ranks with slots of slot_bytes. */
size_t mca_coll_loom_shm_segment_bytes(int n, size_t slot_bytes);

/* The creator (the node's leader, index 0): creates `path` exclusively (a stale file
 * of a dead job at the same path is replaced), allocates its pages so that a full
 * file system fails here and not later with SIGBUS, maps and initialises it.
 * Returns 0, or -1 with *err an errno value and *what the failing call. */
int mca_coll_loom_shm_create(mca_coll_loom_shm_t *s, const char *path, int n, size_t slot_bytes,
                             int *err, const char **what);

/* The other ranks: maps the segment `path` created for (n, slot_bytes) as rank `me`.
 * Returns 0, or -1 with *err / *what (EINVAL: not a loom segment of that shape). */
int mca_coll_loom_shm_attach(mca_coll_loom_shm_t *s, const char *path, int n, int me,
                             size_t slot_bytes, int *err, const char **what);

/* The same for a plain shared file of `bytes` (created exclusively, its pages allocated;
 * attach checks the size), mapped at *base; the caller unmaps it with munmap. */
int mca_coll_loom_shm_map_create(const char *path, size_t bytes, void **base, int *err, const char **what);
int mca_coll_loom_shm_map_attach(const char *path, size_t bytes, void **base, int *err, const char **what);

/* Unmaps (idempotent).  The file is removed separately, by its creator, as soon as
 * every rank has mapped it: a segment then never outlives its communicator, even
 * when the job is killed. */
void mca_coll_loom_shm_detach(mca_coll_loom_shm_t *s);
int mca_coll_loom_shm_unlink(const char *path);

#define MCA_COLL_LOOM_SHM_LINE 64
/* Bytes before the data of a slot or area, in its first line: its flag, its status
 * (below), padding that keeps the data 16-byte aligned (any MPI type's alignment). */
#define MCA_COLL_LOOM_SHM_HEAD 16
/* Largest call of the symmetric kind: every rank reads n slots of it, which pays while
 * a call is a few cache lines (see above). */
#define MCA_COLL_LOOM_SHM_SYM_BYTES 256
/* Bytes of a small slot and of a small area: the largest reduce and bcast through them.
 * Their depth, which lets back-to-back calls run ahead, pays more than the large slots'
 * lockstep costs, up to 2 KiB a call; the price is (n + 1) x 48 KiB more segment for n
 * ranks and a longer setup (docs/dev/developing.md, "Performance notes"). */
#define MCA_COLL_LOOM_SHM_SMALL_BYTES 2048

/* The status of the contents of a slot or area (any of them: `data` is where its data
 * starts) for the call that wrote them last: 0, or the writer's error code.  The writer
 * stores it before the flag that publishes the contents, a reader loads it after that
 * flag, so it lives exactly as long as the contents do.  It takes the second word of
 * the head, in the line the flag and the first bytes of data share: free to read. */
static inline void mca_coll_loom_shm_set_status(char *data, int32_t status)
{
    __atomic_store_n((int32_t *) (data - MCA_COLL_LOOM_SHM_HEAD) + 1, status, __ATOMIC_RELAXED);
}

static inline int32_t mca_coll_loom_shm_status(const char *data)
{
    return __atomic_load_n((const int32_t *) (data - MCA_COLL_LOOM_SHM_HEAD) + 1, __ATOMIC_RELAXED);
}

static inline char *mca_coll_loom_shm_slot(const mca_coll_loom_shm_t *s, int i)
{
    return s->slot0 + (size_t) i * s->stride;
}

static inline uint32_t *mca_coll_loom_shm_arrive_word(const mca_coll_loom_shm_t *s, int i)
{
    return (uint32_t *) (mca_coll_loom_shm_slot(s, i) - MCA_COLL_LOOM_SHM_HEAD);
}

static inline char *mca_coll_loom_shm_sym_slot(const mca_coll_loom_shm_t *s, int i, uint32_t seq)
{
    const size_t p = seq & (MCA_COLL_LOOM_SHM_SYM_DEPTH - 1u);
    return s->sym0 + ((size_t) i * MCA_COLL_LOOM_SHM_SYM_DEPTH + p) * s->sym_stride;
}

static inline char *mca_coll_loom_shm_small_area(const mca_coll_loom_shm_t *s, uint32_t seq)
{
    return s->small0 + (size_t) (seq & (MCA_COLL_LOOM_SHM_SYM_DEPTH - 1u)) * s->sym_stride;
}

static inline char *mca_coll_loom_shm_area(const mca_coll_loom_shm_t *s, uint32_t seq)
{
    return s->area[seq & (MCA_COLL_LOOM_SHM_AREAS - 1u)];
}

/* true when counter `v` has reached `target` (modulo 2^32) */
static inline bool mca_coll_loom_shm_reached(uint32_t v, uint32_t target)
{
    return (int32_t) (v - target) >= 0;
}

/* Waits until *word has reached target. */
void mca_coll_loom_shm_wait(uint32_t *word, uint32_t *waiters, uint32_t target,
                            const mca_coll_loom_shm_wait_t *w);

/* The protocol's steps (see above). */
void mca_coll_loom_shm_enter(mca_coll_loom_shm_t *s, uint32_t seq, const mca_coll_loom_shm_wait_t *w);
void mca_coll_loom_shm_arrive(mca_coll_loom_shm_t *s, uint32_t seq);
/* waits until every rank of the node has arrived at call `seq` */
void mca_coll_loom_shm_wait_arrived(mca_coll_loom_shm_t *s, uint32_t seq,
                                    const mca_coll_loom_shm_wait_t *w);
void mca_coll_loom_shm_release(mca_coll_loom_shm_t *s, uint32_t seq);
/* The steps of the calls through the small slots and areas (see above): small_enter
 * before writing the own sym slot or the small area of call seq; sym_arrive after
 * writing the sym slot (also sets arrive[me]); sym_wait until the sym slot of call seq
 * of every rank but `skip` (-1: none) holds that call. */
void mca_coll_loom_shm_small_enter(mca_coll_loom_shm_t *s, uint32_t seq, const mca_coll_loom_shm_wait_t *w);
void mca_coll_loom_shm_sym_arrive(mca_coll_loom_shm_t *s, uint32_t seq);
void mca_coll_loom_shm_sym_wait(mca_coll_loom_shm_t *s, uint32_t seq, int skip, const mca_coll_loom_shm_wait_t *w);
/* Every call, coordinated or symmetric, before it arrives: keeps this rank's sym flags
 * and `done` within 2^30 of the call number (see above). */
void mca_coll_loom_shm_sym_refresh(mca_coll_loom_shm_t *s, uint32_t seq);
void mca_coll_loom_shm_wait_release(mca_coll_loom_shm_t *s, uint32_t seq,
                                    const mca_coll_loom_shm_wait_t *w);

/* The same steps without waiting, for calls that progress from Open MPI's progress
 * loop (non-blocking allreduce): small_free is small_enter's condition, sym_all
 * sym_wait's (no rank skipped), all_arrived wait_arrived's, released whether
 * release >= seq. */
bool mca_coll_loom_shm_small_free(mca_coll_loom_shm_t *s, uint32_t seq);
bool mca_coll_loom_shm_sym_all(mca_coll_loom_shm_t *s, uint32_t seq);
bool mca_coll_loom_shm_all_arrived(const mca_coll_loom_shm_t *s, uint32_t seq);
bool mca_coll_loom_shm_released(const mca_coll_loom_shm_t *s, uint32_t seq);

/* true once rank i's sym slot of call seq holds that call */
bool mca_coll_loom_shm_sym_ready(const mca_coll_loom_shm_t *s, int i, uint32_t seq);

#endif /* MCA_COLL_LOOM_SHM_H */
