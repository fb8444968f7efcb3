/* pld/collective.h: collectives built on signals and one-sided movement.
 *
 * Kernels only.  Every rank of a window's domain calls the same collective
 * with the same arguments (dtype, shapes, op, mode, root) on the same
 * windows (the same window buffer and view, and the same signal view),
 * from a kernel launched on the same number of blocks C on every rank.  A
 * collective launched on C > 1 blocks splits its data into C contiguous
 * parts, one per block (all-to-all-v: block b serves the peers d with
 * d % C == b; the ring: each of its P chunks into C parts), each block its
 * own lane of the signal window; every block takes part, with or without
 * data, and the C blocks must run at once, as on the hardware: C may not
 * exceed the device's cores of the kernel's type (pld_platform_info:
 * vector_cores, cube_cores; PLD_ERR_ARG otherwise).  Only the comm layer's
 * primitives move data and order ranks, so every fabric carries the
 * collectives.
 *
 * Signal windows.  A collective's signal is a 1-D INT32 window of at least
 * PLD_SIGNAL_CELLS(nranks, blocks) cells, zero when first used and written
 * by nothing but collectives and pld_barrier.  Each call leaves its
 * synchronisation cells zero again (the self-clearing credit protocol:
 * every synchronisation adds 1 to the sender's cell on the receiver, and
 * each call takes back what it received), so one signal window serves
 * back-to-back calls, calls in loops, and different collectives in one
 * kernel.  Of each lane of PLD_SIGNAL_LANE_CELLS(P) cells, the first 2P
 * (credits, and all-to-all-v's row counts) and cells 2P+1 to 2P+3 are zero
 * again after each call; cell 2P holds the rank's number of collective
 * calls on the lane (barriers not counted); from cell 2P+4 on, slots of
 * PLD_COLL_DESC_CELLS + PLD_COLL_EAGER_BYTES / 4 cells, PLD_COLL_SLOTS per
 * rank s: slot PLD_COLL_SLOTS * s + j keeps what rank s sent this rank for
 * its last call i (counting from 1) with
 * (i - 1) % PLD_COLL_SLOTS_USED(P) == j:
 * PLD_COLL_DESC_CELLS cells describing the call (for comparing calls
 * across ranks; the last is the call's number), then the call's data for
 * this rank if the call was small.  After a run that failed, the next run
 * starts with every signal view a collective of the program used zeroed
 * on every rank (whatever calls the failure interrupted), also where the
 * program keeps its windows from run to run.
 *
 * Small calls.  A call whose data per block and rank pair is at most
 * PLD_COLL_EAGER_BYTES bytes (allreduce in mesh mode, broadcast,
 * allgather, reduce-scatter, all-to-all) sends it with the call's
 * description, in the slots above: one synchronisation instead of two.
 * The result is the same bits either way.
 *
 * Small broadcasts.  A broadcast whose part per block is at most
 * PLD_COLL_EAGER_BYTES does not make its ranks wait for each other, as
 * MPI's does not: the root returns once its part and its call's
 * description are sent; every other rank once it has sent its own
 * description and received the root's part, behind the root's
 * description of this same call (otherwise the call fails with
 * PLD_ERR_MISMATCH naming every rank's call).  The rest of each rank's
 * call - every rank's description compared, the credits taken back - is
 * settled later, the oldest call first: when its core starts a collective
 * other than such a broadcast, or a pld_barrier (on any signal window);
 * when it starts such a broadcast with PLD_COLL_SLOTS_USED(P) / 2 of them
 * left to settle (the oldest is settled); or when its block ends.  There the
 * rank waits for the ranks that have not reached that call yet (a deadlock
 * report names the broadcast's call), and a mismatch fails the call or
 * block that settles it with PLD_ERR_MISMATCH, the broadcast itself
 * having returned PLD_OK.  So a rank runs at most PLD_COLL_SLOTS_USED(P) / 2
 * small broadcasts ahead of the slowest, and what the promises below say of
 * "each call" holds for such a call once it is settled: its credits are
 * taken back by then (its signal window read within the block right
 * after the call may still hold them).  Unlike other calls, such a
 * broadcast orders only what the root did before it before what the
 * other ranks do after it: not what the other ranks did before it before
 * what any rank does after it.
 *
 * Exactness.  Every rank ends with the bitwise-same result, and the same
 * inputs give the same bits on every run, whatever the timing, the block
 * count, the platform, the fabric and the instruction level.  Each
 * element is reduced over the ranks in one order fixed by the mode and the
 * rank count: mesh and two-phase combine ranks 0, 1, ..., P-1 in that
 * order; the ring combines the ranks of chunk c (element e of N is in
 * chunk c when floor(c N / P) <= e < floor((c+1) N / P)) in ring order
 * starting at rank c+1 and ending with rank c.  FP16 and BF16 are reduced in
 * FP32 and rounded once (mesh, two-phase, reduce-scatter); the ring keeps
 * partial results in the data's dtype between its hops, so FP16 and BF16 are
 * rounded at each of its P-1 hops.  Integer sums and products wrap (two's
 * complement), which makes them independent of the order; with integer
 * values that every partial sum holds exactly, every mode gives the same
 * bits.  Max and Min propagate NaN.
 *
 * Mistakes.  Each call first checks its arguments against the rank's own
 * view (PLD_ERR_ARG, PLD_ERR_BOUNDS: dtype, shapes, op, root, a signal
 * window too small for the rank count or block count, stage and target
 * overlapping, more blocks than cores), then compares its call with every
 * other rank's at the same point of the signal window: ranks that reached
 * it with different calls (another collective, op, dtype, element count,
 * root, mode or block count, all-to-all-v's rows, or another data or
 * target window: window buffer or view offset; or another signal view)
 * all fail with PLD_ERR_MISMATCH (a small broadcast's root once its call
 * is settled, see above) and a message naming each rank's call,
 * window buffer and bytes.  The cells of a signal view that a collective
 * of the program used are the collectives' alone, on each rank, for the
 * program's life: a pld_notify, pld_wait or pld_wait_deferred on one of
 * them, a notify of pld_put_notify & co. on one, or a remote store
 * (pld_remote_store, pld_put & co.) into one fails with PLD_ERR_ARG naming
 * the collective; and a collective whose signal view holds a cell that
 * such a call of the rank used before fails with PLD_ERR_ARG naming the
 * call and the cell (the first PLD__COLL_SIGS = 64 signal views and 256
 * runs of other cells a device uses are known).  A deadlock report names,
 * for each blocked rank, the collective, its call number and its round.
 * Reducing collectives run on vector cores only (PLD_ERR_LEVEL on a cube
 * core).
 *
 * Tile memory.  Reductions stage data through tiles of the core: an
 * accumulator (FP32, or INT32 for integers) and a staging tile of the
 * data's dtype, each of the same number of elements, as many as the free
 * tile memory holds (up to 8192; the ranks of a call use the least of
 * theirs); the other collectives through one staging tile.  A call needs
 * at least PLD_COLL_MIN_TILE_BYTES of free tile memory (a reduction: two
 * 32-byte granules, in one gap or two; the others: one), whatever its
 * data's size, and fails with PLD_ERR_TILE_MEMORY with less.
 *
 * Returns: PLD_OK, or the statuses above, or those of pld_wait (deadlock,
 * time limit, abort), or an earlier failure of the kernel.
 */
#ifndef PLD_COLLECTIVE_H
#define PLD_COLLECTIVE_H

#include "pld/rma.h"
#include "pld/signal.h"

/* Values are the original ABI's. */
typedef enum pld_reduce_op {
  PLD_REDUCE_SUM = 0,
  PLD_REDUCE_MAX = 1,
  PLD_REDUCE_MIN = 2,
  PLD_REDUCE_PROD = 3
} pld_reduce_op;

/* How pld_allreduce moves data (P ranks, N elements each):
 *   MESH: every rank reads every rank's data and reduces; (P-1) N read per
 *     rank, one synchronisation per tile-memory's worth: best for small N.
 *   TWO_PHASE: rank c reduces chunk c of every rank, then writes it into
 *     every other rank's copy: 2 (P-1)/P N per rank, two synchronisations
 *     (the entry, and a credit behind each rank's writes).
 *   RING: P-1 reduce-scatter rounds then P-1 all-gather rounds between
 *     neighbours: 2 (P-1)/P N per rank, each round waiting on the left
 *     neighbour only.
 *   AUTO: chosen by size and rank count (see pld_allreduce_auto). */
typedef enum pld_allreduce_mode {
  PLD_ALLREDUCE_AUTO = 0,
  PLD_ALLREDUCE_MESH = 1,
  PLD_ALLREDUCE_TWO_PHASE = 2,
  PLD_ALLREDUCE_RING = 3
} pld_allreduce_mode;

/* The most bytes of a call's data per block and rank pair that travel in
 * the signal window (see "Small calls" above). */
#define PLD_COLL_EAGER_BYTES 1024

/* The cells of a slot that describe a call (see "Signal windows"). */
#define PLD_COLL_DESC_CELLS 12

/* The slots of each rank on a lane (see "Signal windows"), and how many of
 * them the calls of a domain of nranks ranks cycle through: call i (counting
 * from 1) uses slot (i - 1) % PLD_COLL_SLOTS_USED(nranks).  A rank runs up to
 * half as many small broadcasts ahead (see "Small broadcasts"). */
#define PLD_COLL_SLOTS 16
#define PLD_COLL_SLOTS_USED(nranks) ((nranks) <= 2 ? 4 : PLD_COLL_SLOTS)

/* The least free tile memory a reducing collective needs (bytes); the
 * others need half of it (see "Tile memory" above). */
#define PLD_COLL_MIN_TILE_BYTES 64

/* INT32 cells of one lane of a signal window for a domain of nranks
 * ranks, and of a signal window for collectives launched on `blocks`
 * blocks.  A barrier on one block needs nranks cells (its lane's first). */
#define PLD_SIGNAL_LANE_CELLS(nranks)                                          \
  (2 * (nranks) + 4 +                                                          \
   PLD_COLL_SLOTS * (nranks) *                                                 \
       (PLD_COLL_DESC_CELLS + PLD_COLL_EAGER_BYTES / 4))
#define PLD_SIGNAL_CELLS(nranks, blocks)                                       \
  ((blocks)*PLD_SIGNAL_LANE_CELLS(nranks))

/* All ranks of sig's domain rendezvous.  One block: sig needs nranks
 * cells; launched on C blocks, each block uses its own lane, and sig needs
 * the first nranks cells of the last lane: (C-1) lanes of
 * PLD_SIGNAL_LANE_CELLS(nranks) plus nranks (PLD_SIGNAL_CELLS(nranks, C)
 * is always enough).  Self-clearing (see the top of this file).  Returns
 * as pld_wait does. */
int pld_barrier(pld_core k, pld_window sig);

/* data = op over every rank's data, in place, on every rank. */
int pld_allreduce(pld_core k, pld_window data, pld_window sig, pld_reduce_op op,
                  pld_allreduce_mode mode);

/* The mode PLD_ALLREDUCE_AUTO takes for `bytes` bytes per rank over
 * nranks ranks (any level). */
pld_allreduce_mode pld_allreduce_auto(int32_t nranks, int64_t bytes);

/* data = root's data, on every rank; root is a rank of data's domain. */
int pld_broadcast(pld_core k, pld_window data, pld_window sig, int32_t root);

/* Out of place.  Each takes the same part in the call matching as its
 * in-place form (a rank may call one form while another calls the other,
 * on the same windows), gives the same bits, and leaves its source as it
 * was.  The other tensor (src or dst) is any tensor of this rank (plain, a
 * pld_local of a window, a device allocation) of the data's dtype, apart
 * from the data and the signal window.
 *  - pld_allreduce_to: dst = op over every rank's src (src: the elements
 *    of dst).  dst is a window, since peers read the partial results:
 *    this rank's src is copied into its dst first (a local copy of its
 *    part), then the call runs as pld_allreduce on dst, in any mode.
 *  - pld_broadcast_to: dst = root's src on every rank, the root's too;
 *    peers read the root's src, which stays as it was.
 *  - pld_reduce_scatter_to: dst (the elements of a row of src) = op over
 *    every rank's row r of src, on rank r; no src changes. */
int pld_allreduce_to(pld_core k, pld_tensor src, pld_window dst, pld_window sig,
                     pld_reduce_op op, pld_allreduce_mode mode);
int pld_broadcast_to(pld_core k, pld_window src, pld_tensor dst, pld_window sig,
                     int32_t root);
int pld_reduce_scatter_to(pld_core k, pld_window src, pld_tensor dst,
                          pld_window sig, pld_reduce_op op);

/* Row r of target = rank r's stage, on every rank.  stage is any tensor
 * of this rank (plain, or pld_local of a window) of N elements; target a
 * window [P, ...] of P * N elements of stage's dtype (its leading
 * dimension P).  stage must not overlap target. */
int pld_allgather(pld_core k, pld_tensor stage, pld_window target,
                  pld_window sig);

/* data is [P, ...]: afterwards row r of rank r (its leading-dimension
 * index r) holds op over every rank's row r; the other rows are left as
 * they were. */
int pld_reduce_scatter(pld_core k, pld_window data, pld_window sig,
                       pld_reduce_op op);

/* input is [P, ...] (any tensor of this rank), target a window of input's
 * dtype and shape: row d of input goes to row r of rank d's target, so
 * afterwards row s of target came from rank s.  input must not overlap
 * target. */
int pld_all_to_all(pld_core k, pld_tensor input, pld_window target,
                   pld_window sig);

/* As pld_all_to_all with blocks of at most MAX rows per peer: input and
 * target are [P * MAX, cols] (MAX = leading dimension / P); rank r sends
 * rows [d * MAX, d * MAX + send_counts[d]) of input to rows [r * MAX, ...)
 * of rank d's target, and learns in recv_counts[s] how many rows came from
 * rank s (rows past the count are left as they were).  send_counts and
 * recv_counts are INT32[P] tensors; a count outside [0, MAX] fails with
 * PLD_ERR_BOUNDS before anything moves. */
int pld_all_to_all_v(pld_core k, pld_tensor input, pld_tensor send_counts,
                     pld_window target, pld_tensor recv_counts, pld_window sig);

/* ---- host level --------------------------------------------------------- */

/* The same collectives called by the host orchestrator on window views it
 * made: each becomes one dispatch per rank of the world (the rank joins
 * the windows' domains), in program order with the host's other
 * dispatches, of a builtin device function named like the collective,
 * which runs it on `blocks` blocks (in [1, the device's vector cores]; the
 * original's core_num), with the same bits for every count (the artifact
 * folder and reports show them like any dispatch).  sig is a signal
 * window view of at least PLD_SIGNAL_CELLS(world size, blocks) cells, or
 * PLD_NO_WINDOW: the program then uses one of its own for all its
 * host-level collectives, made at the first such call for its blocks (a
 * later call on more blocks is refused: declare it with pld_coll_signal
 * for the most blocks first).  stage (allgather)
 * and input (all-to-all) are windows here.  The arguments are checked when
 * the host is traced: a mistake (as for the kernel forms, but for what only
 * the data can tell) fails pld_compile.  Host only.  Returns PLD_OK,
 * PLD_ERR_ARG, PLD_ERR_BOUNDS, PLD_ERR_UNSUPPORTED, PLD_ERR_NOMEM, or an
 * earlier failure of the host function.  The kernel and host forms give
 * the same result. */
int pld_host_allreduce(pld_host h, pld_window data, pld_window sig,
                       pld_reduce_op op, pld_allreduce_mode mode,
                       int32_t blocks);
int pld_host_broadcast(pld_host h, pld_window data, pld_window sig,
                       int32_t root, int32_t blocks);
int pld_host_allgather(pld_host h, pld_window stage, pld_window target,
                       pld_window sig, int32_t blocks);
int pld_host_reduce_scatter(pld_host h, pld_window data, pld_window sig,
                            pld_reduce_op op, int32_t blocks);
int pld_host_all_to_all(pld_host h, pld_window input, pld_window target,
                        pld_window sig, int32_t blocks);
/* pld_all_to_all_v from the host: input, send_counts and recv_counts are
 * tensors of the host whose leading dimension is the world size (rank r
 * passes row r: a parameter, a slice of one, a pld_host_tensor) or
 * pld_local of a window view (every rank passes its own copy), as for
 * pld/ep.h's host forms; target is a window view.  Counts outside [0, MAX]
 * fail the run with PLD_ERR_BOUNDS, as the kernel form does. */
int pld_host_all_to_all_v(pld_host h, pld_tensor input, pld_tensor send_counts,
                          pld_window target, pld_tensor recv_counts,
                          pld_window sig, int32_t blocks);

/* The program's signal window for the collectives: declared once by the
 * host function, for calls on up to `blocks` blocks (in [1, the device's
 * vector cores]) over the world (PLD_SIGNAL_CELLS(world size, blocks)
 * INT32 cells on every rank).  A kernel reaches it through a PLD_COLL_SIG
 * parameter, for which its launch passes nothing, so that no device
 * function or kernel signature carries the window or a dimension for it;
 * the host-level collectives given no sig use it too.  Launches of kernels
 * that have it are ordered as launches passing one window are.  Declared
 * at most once, before any host-level collective given no sig.  Returns
 * its view (a window of the world's domain, usable as any signal window);
 * on failure (PLD_ERR_ARG) the failure is recorded in h and the view
 * returned is rejected by every later call.  Host only. */
pld_window pld_coll_signal(pld_host h, int32_t blocks);

/* Every rank of the world reaches the barrier (its dispatches before it
 * have finished) before any rank starts its next dispatch: one builtin
 * dispatch per rank, "pld_barrier", as for the collectives above (sig
 * and blocks likewise). */
int pld_host_barrier(pld_host h, pld_window sig, int32_t blocks);

#endif /* PLD_COLLECTIVE_H */
