/* Step 08: allreduce by hand, one-shot over a mesh.
 *
 * An allreduce leaves on every rank the sum of every rank's data:
 * y[r] = sum_k x[k].  The simplest way is a mesh: every rank reads every
 * peer's window directly and adds.  It moves (P-1) N elements into each
 * rank, but needs only a barrier per tile: the choice for small data.
 *
 *   host     allocates two windows, `data` (N elements per rank) and a
 *            signal window [1, P]; dispatches one call per rank.  P is a
 *            dynamic dimension: the same program runs on any number of
 *            devices.
 *   AICPU    launches the kernel on one block.
 *   kernel   stages x in its window, then for each tile of the row:
 *              1. reads that tile from every rank, 0, 1, ..., P-1 in that
 *                 order (its own with a plain load), adding as it goes, and
 *                 keeps the sum in tile memory;
 *              2. a read-done barrier: every rank has read this tile of
 *                 every window;
 *              3. stores the sum back into its own window.
 *            A barrier before the first tile makes sure every rank has
 *            staged its input (nobody reads a window before its owner
 *            wrote it).  Storing before the read-done barrier would be a
 *            write-after-read race: a slower peer could still be reading
 *            the tile, and would add a sum instead of an input.
 *
 * Every rank adds in the same order, so every rank ends with the same
 * bits; a mesh that adds "mine first, then the others" would not (ranks
 * then differ by an ulp from P = 3 on).  The barriers are step 04's, by
 * hand (example_barrier in example.h), the g-th on the row waiting for g
 * credits from each peer; example_reduce_tile in example.h is step 1.
 * N is not a multiple of the tile: the last tile is ragged.
 *
 *   08_allreduce_mesh -p a2a3sim -d 0,1,2,3      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { N = 20011 };
PLD_DYNAMIC(NR);

PLD_KERNEL(allreduce_mesh, k, PLD_IN(x, FP32, N), PLD_WINDOW(data, FP32, N),
           PLD_WINDOW(sig, INT32, 1, NR), PLD_OUT(y, FP32, N)) {
  int32_t me = pld_rank(k, pld_window_comm(data));
  int32_t g = 0;                   /* barriers made on row 0 of sig */
  pld_put(k, data, me, x, NULL);   /* stage x in my window */
  example_barrier(k, sig, 0, ++g); /* every rank has staged its input */
  for (int64_t at = 0; at < N; at += EXAMPLE_TILE) {
    int32_t len = example_tile_len(at, N);
    pld_tile *sum = example_reduce_tile(k, data, 0, at, len);
    example_barrier(k, sig, 0, ++g); /* everyone has read this tile */
    pld_store(k, sum, pld_local(data), 0, at);
    pld_tile_free(k, sum);
  }
  pld_get(k, y, me, data, NULL); /* y = my window */
}

PLD_DEVICE(allreduce_device, a, PLD_IN(x, FP32, N), PLD_WINDOW(data, FP32, N),
           PLD_WINDOW(sig, INT32, 1, NR), PLD_OUT(y, FP32, N)) {
  pld_launch(a, allreduce_mesh, 1, x, data, sig, y);
}

PLD_HOST(allreduce_host, h, PLD_IN(x, FP32, NR, N), PLD_OUT(y, FP32, NR, N)) {
  int n = pld_world_size(h);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(N));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, allreduce_device, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(N)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(1, n)),
                 pld_slice(h, y, r));
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, NULL);
  return example_allreduce_main(&ex, allreduce_host, N, NULL);
}
