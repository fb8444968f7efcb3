/* pld/fused.h: matrix products fused with the collective around them, the
 * two tensor-parallel GEMMs that overlap communication with compute:
 *
 *   AllGather-GEMM       C = allgather(A) @ B
 *                        pld_allgather_matmul (cube kernel)
 *   GEMM-ReduceScatter   C = reduce_scatter(A @ B)
 *                        pld_matmul_reduce_scatter (cube kernel), then
 *                        pld_matmul_reduce_scatter_sum (vector kernel)
 *
 * Kernels only.  Matrices are tensors seen as matrices (pld/tile.h: a
 * tensor [d0, ..., dn-1] is [d0 * ... * dn-2, dn-1]).  P is the size of
 * the signal window's domain, `me` this rank's number in it.  Every rank
 * of the domain makes the same call with the same shapes, from a kernel
 * launched on the same number of blocks C on every rank (1 <= C <= the
 * device's cores of the kernel's type, pld_platform_info).  Block b of a
 * call is lane b: it works on its share [floor(b R / C), floor((b+1) R /
 * C)) of the R rows of each rank's row block (below) and talks only to
 * lane b of the other ranks.
 *
 * Tiles.  The products run on the cube core in C tiles of at most
 * PLD_FUSED_TILE (128) rows and 256 columns, and step over K by 128
 * elements when a B tile [128, C tile's columns] takes at most 64 KiB
 * (a2a3's L0B), else by 64: FP32 C tiles up to 128 columns and FP16 or
 * BF16 ones up to 256 step by 128.  Two C tiles of consecutive rows stay
 * in tile memory over the whole K loop and share each B tile, which is
 * loaded once for both (B, often the weights, is read once per 256 rows,
 * not once per row tile).  With FP32 operands an A tile takes at most 64
 * KiB (L0A), a B tile 64 KiB and a C tile [128, 256] 128 KiB (a2a3's
 * L0C).  M, N and K need not be multiples of the tiles: the last tile of
 * each is cut (ragged), and one row works.  Each element of a product is
 * the FP32 fused multiply-add chain over k = 0, 1, ..., K-1 in that
 * order, starting from +0 (pld_matmul's accumulator, whatever the
 * tiling), so a C loop doing c = fmaf(a[i][k], b[k][j], c) gives the same
 * bits.  FP16 and BF16 operands are converted to FP32 exactly first; C is
 * always FP32.  Tile memory needed on top of what the kernel already
 * holds: cube core, an A and a B tile and the C tiles of a group (one
 * when the rows of a row block, M for pld_allgather_matmul and M/P for
 * pld_matmul_reduce_scatter, are at most PLD_FUSED_TILE, else two): up to
 * 384 KiB with FP32 operands (pld_allgather_matmul's pld_put stages its
 * chunk, 64 KiB, while the product holds no tile); vector core (the
 * sum), two FP32 [PLD_FUSED_TILE, PLD_FUSED_TILE] tiles (128 KiB).  Less
 * free tile memory fails the call with PLD_ERR_TILE_MEMORY.
 *
 * Signals.  `sig` is a 1-D INT32 window of at least
 * PLD_FUSED_SIGNAL_CELLS(P, C) cells, zero when first used, used by
 * nothing but the fused calls (not by a collective: its cells are the
 * collective's, and a fused call's notify on them fails).  Lane b owns
 * the 5P cells from 5Pb on: cell 5Pb + s counts what rank s delivered to
 * this rank (a chunk of A, or product tiles), cell 5Pb + P + s rank s's
 * arrival at the call's end, and cells 5Pb + 2P + 3s .. + 2 what rank
 * s's pld_matmul_reduce_scatter announced to this rank before its tiles
 * (the row block's rows M/P, N, and its block count C, each as INT32,
 * larger values as INT32_MAX; pld_allgather_matmul leaves them alone).
 * pld_allgather_matmul and pld_matmul_reduce_scatter_sum end with a
 * rendezvous of their lane on every rank (the end cells) and take back
 * every count they waited for (pld_matmul_reduce_scatter only adds
 * counts and announcements, which the sum takes back), so the cells are
 * zero again when a call returns (but for counts a
 * faster rank already sent for its next call, which that call expects):
 * one signal window serves calls back to back, in loops and run after
 * run, with no reset by the user.  The rendezvous is also what makes the
 * next call's transfers safe: no rank writes a peer's `gathered` or
 * `stage` for call n+1 before every rank has done reading them for call
 * n (for GEMM-ReduceScatter, with the launch order below: the next
 * products on a device start after its sum, which ends with the
 * rendezvous).  A call that a failure interrupted leaves its counts
 * behind: windows are zeroed before each run, but with
 * pld_config.keep_windows the user zeroes the signal window after a
 * failed run.
 *
 * ---- AllGather-GEMM ------------------------------------------------------
 *
 * pld_allgather_matmul(k, a, gathered, b, c, sig), a PLD_CUBE_KERNEL's
 * call:
 *   a         this rank's row block A_me [M, K]: a plain tensor, or
 *             pld_local of a window (not `gathered`);
 *   gathered  a window [P * M, K] of a's dtype: afterwards row block s
 *             (rows [s M, (s+1) M)) holds rank s's A on every rank, as
 *             pld_allgather leaves it;
 *   b         [K, N] of a's dtype: the same on every rank, or this rank's
 *             column shard (C is then this rank's columns);
 *   c         [P * M, N] FP32, written: C = gathered @ b;
 *   dtypes    FP32, FP16 or BF16 for a, gathered and b (one dtype).
 * Order: step j = 0, 1, ..., P-1, rank me first pushes A_me to rank
 * (me - j - 1) mod P (the rank that will need it at its step j + 1; no
 * push at the last step) with one signal behind it, then computes row
 * block s = (me + j) mod P of C: its own block first, from `a`, with no
 * wait, then the blocks in ring order me+1, me+2, ..., each after the
 * wait for its chunk's signal, which its owner sent one step earlier.  So
 * a rank never waits for a chunk it could already compute, and the next
 * chunk travels while the current one is multiplied.
 *
 * ---- GEMM-ReduceScatter --------------------------------------------------
 *
 * Rank r holds A_r [M, K_r] and B_r [K_r, N] (K split over ranks; K_r
 * may differ between ranks); row block d (rows [d M/P, (d+1) M/P)) of
 * sum_r A_r @ B_r ends on rank d.  M must be a multiple of P.  The
 * product needs a cube core and the sum a vector core (pld/tile.h), so it
 * is a pair of calls, from two kernels on the same windows:
 *
 *   PLD_CUBE_KERNEL: pld_matmul_reduce_scatter(k, a, b, stage, sig)
 *     a [M, K_r], b [K_r, N] of one dtype (FP32, FP16, BF16), stage a
 *     window [M, N] FP32.  Computes the partial product tile by tile, row
 *     blocks in ring order me+1, me+2, ..., me (its own last), and
 *     stores each finished tile of row block d straight into rank d's
 *     stage at slot me (rows [me M/P, (me+1) M/P)), then signals rank d
 *     (one signal per tile), while it goes on with the next tile.  It
 *     never waits.
 *     Before its first tile, it announces to every rank's lane its
 *     block count and shape (see Signals).
 *   PLD_KERNEL: pld_matmul_reduce_scatter_sum(k, stage, c, sig)
 *     stage the same window, c [M/P, N] FP32, written.  First waits for
 *     every rank's announcement on its lane and checks it: products on
 *     another block count than the sum's, or with another row block
 *     (M/P) or N than c's, fail the sum with PLD_ERR_MISMATCH (below)
 *     before it reads any slot.  Then for each tile of
 *     this rank's row block, in the order the senders send them: waits
 *     for the tile from every rank, then c = slot 0 + slot 1 + ... + slot
 *     P-1 in FP32, added in that order (rank order: the same bits on every
 *     run whatever the timing, equal to a C loop float s = p0; s += p1;
 *     ...).  Then the end rendezvous (see Signals).
 *
 * How to launch them: in one device function, pld_launch the cube kernel
 * then the vector kernel, both taking `stage` and `sig`, on the same
 * number of blocks C (with the products on more blocks than the sum, the
 * sum's check fails on every rank; with the sum on more, its lanes that
 * have no products fail the same way or wait forever, a deadlock the
 * run reports):
 *
 *     pld_launch(a, gemm_part, C, x, w, stage, sig);
 *     pld_launch(a, sum_part, C, stage, y, sig);
 *
 * Windows are InOut, so the sum starts on each device once that device's
 * products are done; the ranks' calls overlap each other (a rank sums
 * the tiles of faster ranks as it receives them, while slower ranks still
 * compute).  Launching the sum first is a deadlock (its waits hold the
 * windows the products need), which the run reports as such.
 *
 * ---- Errors --------------------------------------------------------------
 *
 * Every call checks its arguments on this rank before it moves anything
 * and fails with one message naming the function, the kernel, rank,
 * core and block, the parameter, and what was expected and got:
 * PLD_ERR_LEVEL (pld_allgather_matmul or pld_matmul_reduce_scatter on a
 * vector core, pld_matmul_reduce_scatter_sum on a cube core); PLD_ERR_ARG
 * (a dtype that is not FP32, FP16 or BF16, or operands of different
 * dtypes, c or stage not FP32, sig not INT32, shapes that disagree, M not
 * a multiple of P, gathered, stage or sig too small, windows of
 * different domains, `a` overlapping `gathered`, a plain tensor given as
 * a window (a pld_window made from a pld_tensor by hand), more blocks
 * than cores); PLD_ERR_TILE_MEMORY (above); PLD_ERR_MISMATCH
 * (pld_matmul_reduce_scatter_sum: products of a rank announced another
 * block count, row block or N, see GEMM-ReduceScatter; the message names
 * the rank and both block counts, or both shapes).  Then the calls run on
 * pld_put_notify, pld_put, pld_remote_store, pld_notify, pld_wait and the
 * tile calls, whose failures (PLD_ERR_DEADLOCK when ranks disagree on the
 * call, e.g. its block count, or when a rank never makes it;
 * PLD_ERR_TIMEOUT; PLD_ERR_ABORTED when another rank failed; PLD_ERR_ARG
 * when sig's cells belong to a collective) carry those calls' names; or
 * an earlier failure of the kernel.  But for the sum's check of the
 * announcements, shapes cannot be compared across ranks before moving
 * data: a rank whose call differs (another M) makes the others fail or
 * wait; keep calls identical.
 */
#ifndef PLD_FUSED_H
#define PLD_FUSED_H

#include "pld/rma.h"
#include "pld/signal.h"

/* The most rows of a product's C tile, and rows and columns of the
 * sum's tiles (Tiles, above). */
#define PLD_FUSED_TILE 128

/* INT32 cells of the signal window of a fused call over nranks ranks on
 * `blocks` blocks. */
#define PLD_FUSED_SIGNAL_CELLS(nranks, blocks) (5 * (nranks) * (blocks))

/* C = allgather(a) @ b; see the top of this file.  Cube kernels only.
 * Blocks until its chunks have arrived and every rank's lane reached the
 * end of the call. */
int pld_allgather_matmul(pld_core k, pld_tensor a, pld_window gathered,
                         pld_tensor b, pld_tensor c, pld_window sig);

/* The product part of GEMM-ReduceScatter: a @ b, tile by tile, to the
 * stage of the rank owning each row block.  Cube kernels only; never
 * waits. */
int pld_matmul_reduce_scatter(pld_core k, pld_tensor a, pld_tensor b,
                              pld_window stage, pld_window sig);

/* The sum part of GEMM-ReduceScatter: c = sum over ranks 0..P-1 of their
 * tiles of this rank's row block, in rank order.  Vector kernels only.
 * Blocks until every tile arrived and every rank's lane reached the end
 * of the call. */
int pld_matmul_reduce_scatter_sum(pld_core k, pld_window stage, pld_tensor c,
                                  pld_window sig);

#endif /* PLD_FUSED_H */
