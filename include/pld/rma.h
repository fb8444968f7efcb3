/* pld/rma.h: one-sided data movement between ranks of a window's domain.
 * Kernels only.  None of these synchronises: pair them with notify / wait
 * (pld/signal.h).  Windows are seen as matrices like tensors (pld/tile.h).
 * Every access is checked against the peer's view; see pld/window.h.
 * Every dtype moves (INT64, FP64 and BOOL too, in tiles that only move
 * data); atomic add only on the dtypes the hardware adds. */
#ifndef PLD_RMA_H
#define PLD_RMA_H

#include "pld/signal.h"
#include "pld/tile.h"
#include "pld/types.h"
#include "pld/window.h"

/* pld_atomic (PLD_ATOMIC_NONE, PLD_ATOMIC_ADD) is declared in pld/types.h,
 * which pld/tile.h includes: pld_store_rows takes it too. */

/* A rows x cols tile read from peer's copy of src at (row, col), in this
 * core's tile memory.  NULL on failure (recorded in k). */
pld_tile *pld_remote_load(pld_core k, pld_window src, int32_t peer, int64_t row,
                          int64_t col, int32_t rows, int32_t cols);

/* pld_remote_load into a tile the kernel holds (its shape; dtypes must
 * match), as pld_load_into locally: a loop over peers reuses one tile. */
int pld_remote_load_into(pld_core k, pld_tile *dst, pld_window src,
                         int32_t peer, int64_t row, int64_t col);

/* Writes tile t into peer's copy of dst at (row, col); with
 * PLD_ATOMIC_ADD, adds it element by element, atomically (FP32, FP16,
 * BF16, INT32, INT16, INT8). */
int pld_remote_store(pld_core k, const pld_tile *t, pld_window dst,
                     int32_t peer, int64_t row, int64_t col, pld_atomic atomic);

/* Rows by index across ranks: pld_load_rows and pld_store_rows
 * (pld/tile.h) on peer's copy of a window, with their index rules (idx an
 * INT32 [n, 1] or [1, n] tile, n the tile's rows; a negative entry names
 * no row: zero-filled on a load, skipped on a store; duplicate plain
 * stores: the later entry lands; PLD_ATOMIC_ADD adds, atomically, on the
 * dtypes pld_remote_store adds).  pld_remote_load_rows: dst row i = row
 * idx[i] of peer's src at columns [col, col + dst's cols).
 * pld_remote_store_rows: t row i to row idx[i] of peer's dst.  Every entry
 * is checked against the peer's view before any byte moves: an entry >=
 * its rows or columns outside it fail with PLD_ERR_BOUNDS, the message
 * naming the peer, the window, its shape, and the index position and
 * value.  Other statuses as pld_remote_load_into and pld_remote_store
 * (PLD_ERR_ARG also for a bad idx tile).  Rows the race detector sees
 * one by one (runs of consecutive rows as one access); one trace event
 * per call. */
int pld_remote_load_rows(pld_core k, pld_tile *dst, pld_window src,
                         int32_t peer, const pld_tile *idx, int64_t col);
int pld_remote_store_rows(pld_core k, const pld_tile *t, pld_window dst,
                          int32_t peer, const pld_tile *idx, int64_t col,
                          pld_atomic atomic);

/* The region of a put or get: (rows, cols) at (src_row, src_col) in the
 * source and (dst_row, dst_col) in the destination; rows = 0 means all the
 * source's rows and cols = 0 all its columns (so a zeroed pld_xfer is the
 * whole source, at the origin; there is no empty region: to move nothing,
 * make no call).  Without a pld_xfer (opt NULL) the transfer is of the
 * whole tensor, and source and destination must have one shape (leading
 * dimensions of size 1 aside): PLD_ERR_ARG otherwise, and nothing moves.
 *
 * A transfer moves in chunks of one staging tile and holds that tile in
 * this core's tile memory while it runs (two with `pipelined`, which
 * alternates them), so it fails with PLD_ERR_TILE_MEMORY where the
 * hardware would.  A chunk is chunk_rows x chunk_cols elements of the
 * region (0: the default, whole rows of up to 64 KiB, or 64 KiB pieces of
 * a longer row); the last chunks of each row and column of chunks are cut
 * to the region.  The simulator moves each chunk's bytes once, directly:
 * a second copy through a tile of its own would change nothing any core
 * can observe (pld_put_tiles and pld_get_tiles copy through the kernel's
 * tiles, which the kernel sees). */
typedef struct pld_xfer {
  int64_t dst_row, dst_col, src_row, src_col;
  int32_t rows, cols;
  pld_atomic atomic; /* put only */
  int pipelined;
  int32_t chunk_rows, chunk_cols;
} pld_xfer;

/* Pushes src (a plain tensor or pld_local of a window) into peer's copy of
 * dst.  opt may be NULL (the whole tensor, of dst's shape).  Complete for
 * the caller when it returns. */
int pld_put(pld_core k, pld_window dst, int32_t peer, pld_tensor src,
            const pld_xfer *opt);

/* pld_put, then pld_notify(sig, peer, idx, value, op) behind the data, in
 * one call: the peer's wait on that cell returns after the data is
 * visible.  sig's domain must give peer the same world rank as dst's.
 * Everything is checked before any byte moves.  Returns as pld_put and
 * pld_notify do. */
int pld_put_notify(pld_core k, pld_window dst, int32_t peer, pld_tensor src,
                   const pld_xfer *opt, pld_window sig, int n,
                   const int64_t *idx, int32_t value, pld_notify_op op);

/* Pulls peer's copy of src into dst (a plain tensor or pld_local of a
 * window). */
int pld_get(pld_core k, pld_tensor dst, int32_t peer, pld_window src,
            const pld_xfer *opt);

/* pld_put and pld_get staged through tiles the kernel holds: chunks of
 * ping's shape (opt's chunk shape, if given, must be it), each copied
 * into the tile and from there to its destination, alternating ping and
 * pong (ping-pong; pong NULL: ping alone).  The tiles have the data's
 * dtype and one shape, and afterwards hold the last chunks they staged.
 * The transfer takes no tile memory of its own; opt->pipelined is
 * ignored. */
int pld_put_tiles(pld_core k, pld_window dst, int32_t peer, pld_tensor src,
                  const pld_xfer *opt, pld_tile *ping, pld_tile *pong);
int pld_get_tiles(pld_core k, pld_tensor dst, int32_t peer, pld_window src,
                  const pld_xfer *opt, pld_tile *ping, pld_tile *pong);

#endif /* PLD_RMA_H */
