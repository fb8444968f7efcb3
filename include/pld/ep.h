/* pld/ep.h: a packed all-to-all-v and expert-parallel (MoE) dispatch and
 * combine, collectives of kernels.
 *
 * Kernel forms, and host forms the host orchestrator calls (see "host
 * level" at the end of this file).  Everything pld/collective.h says of
 * collectives holds here too: every rank of the signal window's
 * domain (P ranks) calls the same function with the same arguments on the
 * same windows, from a kernel launched on the same number of blocks C on
 * every rank; the signal window is a collectives' signal of at least
 * PLD_SIGNAL_CELLS(P, C) cells and may be shared with any other
 * collective (self-clearing credits); ranks that reach a call with
 * different calls fail with PLD_ERR_MISMATCH naming each rank's call (the
 * function, the dtype, the block count, the signal view and the target
 * window: buffer, view and elements; and the target's rows for
 * pld_all_to_all_packed, E for pld_ep_dispatch, K and E for
 * pld_ep_combine, whose target is the stage); only the comm layer's
 * primitives move data, so every fabric carries them; deadlocks are
 * reported with the call and its round.  Each call makes two
 * synchronisations: the entry, in which every rank sends every rank its
 * counts (in the signal window's slots), and one round after the rows
 * have been written (with the ranks that read its rows in place
 * instead, after they have been read: see pld_ep_combine).  Every result is a
 * function of the inputs alone: bitwise the same on every run, whatever the
 * timing, fabric or block count.
 *
 * Several blocks.  pld_all_to_all_packed and pld_ep_dispatch split their
 * work by destination: block b sends to the ranks d with d % C == b, and
 * the block b = me % C of the receiving rank me writes recv_counts (and,
 * for dispatch, makes the local copies described below).  pld_ep_combine
 * splits the columns H into C contiguous parts, one per block, each block
 * sending its part (a write per row; on one block, a write per expert and
 * source rank) and reducing it.  With C > 1, what a call wrote on a rank
 * is complete when every block of the call has returned there (in a later
 * kernel, or after the kernel's blocks synchronised).
 *
 * Errors before any row moves.  Each call checks its arguments against the
 * rank's own tensors first (PLD_ERR_ARG: dtypes and shapes; PLD_ERR_BOUNDS:
 * counts and indices, naming the entry and its value), failing on that
 * rank.  After the entry every rank knows every rank's counts, and checks
 * every receiver's total against the capacity: if any rank would receive
 * more rows than its target holds, every rank fails with PLD_ERR_BOUNDS and
 * the same line naming the receiving rank, its total and the capacity;
 * nothing was written into any target.  Nothing is dropped silently.
 *
 * Scratch.  Besides their tiles (as pld/collective.h's collectives),
 * pld_ep_dispatch takes T (K + 1) INT32 and pld_ep_combine K INT64 of the
 * simulator's memory for the call, before its entry (PLD_ERR_NOMEM on the
 * rank that lacks it).
 *
 * Returns: PLD_OK, the statuses above, those of pld/collective.h's
 * collectives (PLD_ERR_MISMATCH, PLD_ERR_TILE_MEMORY, PLD_ERR_LEVEL, ...),
 * those of pld_wait (deadlock, time limit, abort), or an earlier failure
 * of the kernel. */
#ifndef PLD_EP_H
#define PLD_EP_H

#include "pld/collective.h"

/* The most experts pld_ep_dispatch takes: every rank's count per expert
 * travels in one slot of the signal window (PLD_COLL_EAGER_BYTES). */
#define PLD_EP_MAX_EXPERTS (PLD_COLL_EAGER_BYTES / 4)

/* Columns of pld_ep_dispatch's recv_meta: per received row, the source
 * rank, the source token, its top-k slot j, and the row of recv_x in which
 * the token's data arrived on this rank (see pld_ep_dispatch). */
#define PLD_EP_META_COLS 4

/* All-to-all-v with no per-peer blocks: rows are packed at both ends.
 *
 * input is any tensor of this rank, seen as a matrix [N, cols] (all
 * dimensions but the last are rows), whose rows are grouped by destination
 * in rank order: send_counts[0] rows for rank 0 first, then send_counts[1]
 * rows for rank 1, and so on; send_counts is an INT32[P] tensor of counts
 * >= 0 summing to at most N (rows after the sum are not sent).  target is a
 * window [CAP, cols] (as a matrix) of input's dtype: the rows rank s sends
 * this rank land, in their order, at target rows
 *   [sum_{s' < s} recv_counts[s'], sum_{s' <= s} recv_counts[s'])
 * and recv_counts (an INT32[P] tensor) gets how many came from each rank.
 * Target rows after the total are left as they were.  The counts may
 * differ at every call: the entry carries every rank's send_counts to
 * every rank (P x P counts), from which each sender takes its offset on
 * each receiver.  A count below zero, or counts summing to more than N,
 * fail with PLD_ERR_BOUNDS on the rank that has them; a rank whose total
 * exceeds CAP fails every rank with PLD_ERR_BOUNDS ("rank d would receive
 * R rows, more than the CAP rows of target ...").  input must not overlap
 * target.  Vector or cube cores. */
int pld_all_to_all_packed(pld_core k, pld_tensor input, pld_tensor send_counts,
                          pld_window target, pld_tensor recv_counts,
                          pld_window sig);

/* Expert-parallel dispatch.  `experts` (E) experts in all, E % P == 0 and
 * E <= PLD_EP_MAX_EXPERTS, the same on every rank; expert e lives on rank
 * e / L and is that rank's local expert e % L, L = E / P.
 *
 * This rank's tokens are x, seen as a matrix [T, H] of any dtype; topk_idx
 * is INT32[T, K] (K >= 1): entry [t, j] is the expert of token t's top-k
 * slot j, or any negative value for none (DeepEP's -1); an entry >= E
 * fails with PLD_ERR_BOUNDS naming the token, the slot and the value.
 * topk_w is FP32[T, K], the weights.  T may differ between ranks; K may
 * not.
 *
 * Each token travels once to each rank that holds at least one of its
 * experts (however many of them that rank holds), and each rank receives,
 * packed by local expert, one row per (token, slot) that chose one of its
 * experts:
 *   recv_x, a window [CAP, H] of x's dtype: local expert 0's rows first,
 *     then expert 1's, ...; within an expert, ordered by source rank, then
 *     source token, then slot j (ascending);
 *   recv_counts, an INT32[L] tensor: the rows of each local expert (row
 *     base of expert e: the sum of the counts before e);
 *   recv_meta, an INT32 window [CAP, PLD_EP_META_COLS]: per row, (source
 *     rank, source token t, slot j, first row): the token's data lands in
 *     the first of its rows on this rank (its lowest local expert, lowest
 *     slot) and this rank copies it into its other rows; `first row` is
 *     that row's index (the row's own for the first);
 *   recv_w, an FP32 window of CAP elements: per row, topk_w[t, j] of the
 *     source.
 * Rows after the total are left as they were.  The layout depends on
 * topk_idx alone: the same bits on every run.  A rank that would receive
 * more than CAP rows (tokens times their slots that chose that rank's
 * experts) fails every rank with PLD_ERR_BOUNDS before any row moves.  x
 * must not overlap recv_x.  Vector or cube cores. */
int pld_ep_dispatch(pld_core k, pld_tensor x, pld_tensor topk_idx,
                    pld_tensor topk_w, int32_t experts, pld_window recv_x,
                    pld_window recv_meta, pld_window recv_w,
                    pld_tensor recv_counts, pld_window sig);

/* Expert-parallel combine: the inverse of pld_ep_dispatch, with the
 * weighted sum of each token's expert outputs.
 *
 * expert_out is a tensor (plain, or pld_local of a window) seen as a
 * matrix [R, H] of FP32, FP16 or BF16 in the layout of a dispatch:
 * recv_meta (this rank's, INT32 [R', PLD_EP_META_COLS], e.g.
 * pld_local(recv_meta)) and recv_counts (INT32[L]) are that dispatch's,
 * and rows 0 to sum(recv_counts) - 1 of expert_out are the experts'
 * outputs (R and R' at least the sum).  topk_idx (INT32[T, K]) and topk_w
 * (FP32[T, K]) are this rank's, those of the dispatch; E = L P.  The
 * entry carries every rank's count of routes per expert (as in the
 * dispatch), so each rank sends, per local expert and other source rank,
 * its rows of expert_out back in one write: into the source's stage, a
 * window [S, H] of expert_out's dtype with S >= T K on every rank (the
 * same view on every rank), where they land grouped by expert, each
 * expert's in the source's (token, slot) order; the rows of a rank's own
 * experts for its own tokens are read where they are, in expert_out (their
 * rows of the stage are left as they were).  Where two ranks both pass
 * pld_local of the same window view of the signal's domain as expert_out
 * (e.g. the dispatch's recv_x, the experts writing their outputs over
 * their inputs) and the fabric lets each read the other's copy in place
 * (the shared-memory fabric; under MPI, ranks on one node), each reads
 * its rows in the other's expert_out instead, and writes none into the
 * other's stage: each row moves once rather than twice (written, then
 * read), and such a rank returns only when those peers have read its
 * rows, so that it may write expert_out again at once.  (With E at most
 * PLD_EP_MAX_EXPERTS - 5, where the entry has room to say where
 * expert_out lies; with more experts rows are always written.)  The bits
 * are the same either way.  Then each rank computes, for its tokens
 * t = 0 .. T-1 in order:
 *   acc = 0 (FP32); for j = 0 .. K-1 with topk_idx[t, j] >= 0:
 *     acc = acc + topk_w[t, j] * y(t, j)   (FP32 product, then FP32 sum)
 *   out[t] = acc, rounded once to out's dtype (nearest even);
 * y(t, j) the expert output of token t's slot j, widened to FP32 exactly.
 * out is a tensor [T, H] of expert_out's dtype; a token with no expert gets
 * zeros.  An entry of topk_idx >= E fails with PLD_ERR_BOUNDS as in the
 * dispatch, before the entry.  After it, a rank whose recv_counts differ
 * from what the ranks' topk_idx route to its experts, or whose recv_meta
 * names another source rank than the layout has, fails with PLD_ERR_ARG
 * before it sends a row (a combine given another dispatch's arguments).
 * Vector cores only (PLD_ERR_LEVEL on a cube core). */
int pld_ep_combine(pld_core k, pld_tensor expert_out, pld_tensor recv_meta,
                   pld_tensor recv_counts, pld_tensor topk_idx,
                   pld_tensor topk_w, pld_window stage, pld_tensor out,
                   pld_window sig);

/* ---- host level --------------------------------------------------------- */

/* The same three calls made by the host orchestrator, as pld/collective.h's
 * host-level collectives are: each becomes one dispatch per rank of the
 * world, in program order with the host's other dispatches, of a builtin
 * device function named like the kernel form ("pld_ep_dispatch", ...),
 * which runs the kernel form on `blocks` blocks (in [1, the device's
 * vector cores]); the results are the kernel form's, bit for bit, for
 * every block count.  sig is a signal window view of at least
 * PLD_SIGNAL_CELLS(world size, blocks) cells, or PLD_NO_WINDOW for the
 * program's own (pld_coll_signal, made at the first call for its blocks
 * if not declared).
 *
 * What the kernel form takes as a window (recv_x, recv_meta, recv_w,
 * stage, target) is a window view here, the same view on every rank.
 * What it takes as a rank's tensor is either
 *  - a tensor of the host with the world size P as its leading dimension
 *    (a parameter of the host function, a slice of one, or a host
 *    intermediate: pld_host_tensor): rank r's dispatch passes its row r,
 *    as pld_slice(h, t, r) would; x is [P, T, H], topk_idx and topk_w
 *    [P, T, K], recv_counts [P, E/P] (dispatch, combine) or [P, P]
 *    (packed), send_counts [P, P], input [P, N, cols], expert_out
 *    [P, R, H], out [P, T, H]; a tensor the call writes (recv_counts of
 *    dispatch and packed, out) may not be an In parameter of the host
 *    function; or
 *  - pld_local of a window view, which every rank's dispatch passes (its
 *    own copy): e.g. the dispatch's recv_meta, and expert outputs that
 *    the experts wrote into a window, given to pld_host_ep_combine.
 * Every rank's part has the same shape, so T is the same on every rank.
 *
 * The arguments are checked when the host is traced, with the kernel
 * forms' checks on rank 0's parts (dtypes, shapes, the expert count, a
 * signal window too small, windows sharing bytes; the shapes in messages
 * are those of a rank's part): a mistake fails pld_compile with one line
 * naming the host form, "pld_host_ep_dispatch (in HOSTFN): ...".  What
 * only the data can tell (an expert index of E or more, counts below zero,
 * a receiver's rows beyond the capacity, a combine given another
 * dispatch's counts) fails the run as the kernel form does, the message
 * naming the builtin kernel ("pld_ep_dispatch: kernel pld_ep_dispatch
 * (rank 1, ...): rank 0 would receive ...").  Host only.  Returns PLD_OK,
 * PLD_ERR_ARG, PLD_ERR_BOUNDS, PLD_ERR_NOMEM, or an earlier failure of the
 * host function. */
int pld_host_all_to_all_packed(pld_host h, pld_tensor input,
                               pld_tensor send_counts, pld_window target,
                               pld_tensor recv_counts, pld_window sig,
                               int32_t blocks);
int pld_host_ep_dispatch(pld_host h, pld_tensor x, pld_tensor topk_idx,
                         pld_tensor topk_w, int32_t experts, pld_window recv_x,
                         pld_window recv_meta, pld_window recv_w,
                         pld_tensor recv_counts, pld_window sig,
                         int32_t blocks);
int pld_host_ep_combine(pld_host h, pld_tensor expert_out, pld_tensor recv_meta,
                        pld_tensor recv_counts, pld_tensor topk_idx,
                        pld_tensor topk_w, pld_window stage, pld_tensor out,
                        pld_window sig, int32_t blocks);

#endif /* PLD_EP_H */
