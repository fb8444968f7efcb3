/* pld/mix.h: mixed kernels, whose blocks each run on one cluster of the
 * device: its cube core (AIC) and the platform's ratio of vector cores
 * (AIV: 2 on a2a3 and a5), together, handing tiles to each other through
 * the hardware's path between them rather than through global memory.
 *
 *   PLD_MIX_KERNEL(mm_relu, k, PLD_IN(a, FP32, 64, 64),
 *                  PLD_IN(b, FP32, 64, 64), PLD_OUT(c, FP32, 64, 64)) {
 *     if (pld_core_type_of(k) == PLD_CORE_CUBE) {
 *       ... pld_matmul into p, then for each vector part v:
 *       pld_push_tile(k, v, rows of p for v);
 *     } else {
 *       int32_t v = pld_subblock_idx(k);
 *       pld_tile *h = pld_pop_tile(k, PLD_MIX_CUBE, PLD_FP32, 32, 64);
 *       pld_relu(k, h, h);
 *       pld_store(k, h, c, 32 * v, 0);
 *     }
 *   }
 *
 * The body runs once per core of the block's cluster, at once (the parts
 * may wait for each other), each with its own tile memory: the cube part
 * on the AIC with L1 and the matmul buffers, vector part v (v in [0,
 * pld_subblock_num)) on an AIV with its Unified Buffer.  Each part calls
 * what its core may (pld/tile.h: matmul on the cube, the vector
 * operations on the vector cores; the other is refused with
 * PLD_ERR_LEVEL at run time, as in plain kernels), and everything a
 * kernel may besides: loads and stores, signals (a vector part's
 * pld_notify works as any kernel's), remote operations.  The block's
 * identity (pld_block_idx, pld_block_num) is the same in its parts; a
 * failure names the part's core ("AIC core 0" or "AIV core 1") and the
 * block.
 *
 * pld_launch of a mixed kernel runs `blocks` blocks; each holds a whole
 * cluster (a free cube core and pld_subblock_num free vector cores) from
 * its start until all its parts have returned, so at most the device's
 * cube core count run at once.  Ordering between launches is by tensor
 * regions, as for other kernels. */
#ifndef PLD_MIX_H
#define PLD_MIX_H

#include "pld/levels.h"
#include "pld/tile.h"

/* The core type of a mixed kernel's descriptor (pld_signature.core_type):
 * neither vector nor cube, both. */
#define PLD_CORE_MIX ((pld_core_type)2)

/* Declares a mixed kernel, as PLD_KERNEL declares a vector one (same
 * parameters, same checks of the list); pld_launch takes it. */
#define PLD_MIX_KERNEL(name, ...)                                              \
  PLD__DEFINE(PLD_MIX_KERNEL, PLD_LEVEL_KERNEL, PLD_CORE_MIX, pld_core,        \
              pld_kernel_fn, name, __VA_ARGS__)

/* The cube part, as the other end of pld_push_tile / pld_pop_tile of a
 * vector part. */
#define PLD_MIX_CUBE (-1)

/* The tiles each direction of the path between the cube part and one
 * vector part holds at once (the hardware's ping-pong buffers): a push
 * beyond them waits for a pop. */
#define PLD_MIX_SLOTS 2

/* The type of the core the calling kernel (or part of a mixed kernel)
 * runs on: PLD_CORE_CUBE or PLD_CORE_VECTOR.  Kernels only. */
pld_core_type pld_core_type_of(pld_core k);

/* In a mixed kernel, the vector parts per cube part (the platform's ratio:
 * 2 on a2a3 and a5) and the calling vector part's index in [0, that);
 * the cube part's index is 0.  Outside a mixed kernel: 1 and 0.  Kernels
 * only. */
int32_t pld_subblock_num(pld_core k);
int32_t pld_subblock_idx(pld_core k);

/* Hands a copy of tile t to another part of the block: from the cube part
 * to vector part `to` (in [0, pld_subblock_num)), or from a vector part
 * to the cube part (`to` PLD_MIX_CUBE).  t stays the caller's.  Blocks
 * while PLD_MIX_SLOTS tiles of that direction wait to be popped.  Mixed
 * kernels only.  The tile must fit where it goes: from the cube, it
 * leaves through L0C (at most the platform's L0C bytes) into the vector
 * core's Unified Buffer; from a vector part, into the cube's L1.
 * Returns PLD_OK; PLD_ERR_LEVEL (not a mixed kernel); PLD_ERR_ARG (a NULL
 * or dead tile, `to` no other part the caller has a path to);
 * PLD_ERR_TILE_MEMORY (the tile does not fit the path); PLD_ERR_ABORTED,
 * PLD_ERR_DEADLOCK, PLD_ERR_TIMEOUT (stopped waiting: another part of the
 * block failed, or the run was stopped); or the block's earlier failure.
 * A push nobody pops, and a pop nothing is pushed for, leave the part
 * waiting: the run's deadlock watch reports it, naming the part and the
 * one it waits for. */
int pld_push_tile(pld_core k, int32_t to, const pld_tile *t);

/* Takes the oldest tile the part `from` pushed to the caller (the cube
 * part: PLD_MIX_CUBE; from the cube: vector part index), into a new tile
 * of the caller's tile memory (pld_tile_free frees it), waiting until one
 * is there.  dtype, rows and cols are what the caller expects: a tile of
 * another dtype or shape fails the call (PLD_ERR_ARG, naming both).
 * Returns the tile, or NULL on failure with the statuses of pld_push_tile
 * (PLD_ERR_TILE_MEMORY also when the caller's tile memory has no room for
 * it). */
pld_tile *pld_pop_tile(pld_core k, int32_t from, pld_dtype dtype, int32_t rows,
                       int32_t cols);

#endif /* PLD_MIX_H */
