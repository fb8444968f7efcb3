/* Step 14: reduce-scatter, by hand and builtin.
 *
 * Each rank has P rows of SIZE elements, x[k] = [P, SIZE] on rank k.  A
 * reduce-scatter sums row r over all ranks and leaves the sum on rank r
 * only: y[r] = sum_k x[k][r].  It is the first half of step 09's
 * allreduce, with the chunks made rows.
 *
 *   --mode hand     (the default) every rank stages its rows in its
 *                   window; a barrier (every rank has staged); rank me sums
 *                   row me of every rank, in rank order 0 .. P-1, a tile at
 *                   a time, and stores the sum into its own row me (nobody
 *                   else reads my row me, so no barrier before the store);
 *                   a second barrier: no rank overwrites its rows (the
 *                   next call's staging) while peers still read them.
 *                   The barriers are step 04's, by hand (example_barrier in
 *                   example.h).
 *   --mode builtin  pld_reduce_scatter(k, data, sig, PLD_REDUCE_SUM): the
 *                   same, in place on the window [P, SIZE] (row r of rank
 *                   r holds the sum afterwards, the other rows are left as
 *                   they were), with the builtin's checks and its
 *                   self-clearing signal window.
 *
 *   host     the window data [P, SIZE] (P a dynamic dimension), hand_sig
 *            [1, P] and sig [PLD_SIGNAL_CELLS(P, 1)].
 *   AICPU    launches the kernel on one block.
 *   kernel   stages x, the reduce-scatter, y = row me of its window.
 *
 *   14_reduce_scatter -p a2a3sim -d 0,1,2,3 --mode builtin      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { SIZE = 2503 };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(NS); /* PLD_SIGNAL_CELLS(NR, 1) */

PLD_KERNEL(reduce_scatter, k, PLD_IN(x, FP32, NR, SIZE),
           PLD_WINDOW(data, FP32, NR, SIZE), PLD_WINDOW(hand_sig, INT32, 1, NR),
           PLD_WINDOW(sig, INT32, NS), PLD_OUT(y, FP32, SIZE),
           PLD_SCALAR(builtin, BOOL)) {
  int32_t me = pld_rank(k, pld_window_comm(data));
  pld_put(k, data, me, x, NULL); /* stage my rows in my window */
  if (builtin) {
    pld_reduce_scatter(k, data, sig, PLD_REDUCE_SUM);
  } else {
    example_barrier(k, hand_sig, 0, 1); /* every rank has staged */
    for (int64_t at = 0; at < SIZE; at += EXAMPLE_TILE) {
      pld_tile *sum =
          example_reduce_tile(k, data, me, at, example_tile_len(at, SIZE));
      pld_store(k, sum, pld_local(data), me, at);
      pld_tile_free(k, sum);
    }
    example_barrier(k, hand_sig, 0, 2); /* nobody reads my rows any more */
  }
  const pld_xfer row_me = {.src_row = me, .rows = 1, .cols = SIZE};
  pld_get(k, y, me, data, &row_me); /* y = row me of my window */
}

PLD_DEVICE(reduce_scatter_device, a, PLD_IN(x, FP32, NR, SIZE),
           PLD_WINDOW(data, FP32, NR, SIZE), PLD_WINDOW(hand_sig, INT32, 1, NR),
           PLD_WINDOW(sig, INT32, NS), PLD_OUT(y, FP32, SIZE),
           PLD_SCALAR(builtin, BOOL)) {
  pld_launch(a, reduce_scatter, 1, x, data, hand_sig, sig, y, builtin);
}

PLD_HOST(reduce_scatter_host, h, PLD_IN(x, FP32, NR, NR, SIZE),
         PLD_OUT(y, FP32, NR, SIZE), PLD_SCALAR(builtin, BOOL)) {
  int n = pld_world_size(h);
  int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, SIZE));
  pld_window_buf hand_sig =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, n));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, reduce_scatter_device, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(n, SIZE)),
                 pld_window_view(h, hand_sig, PLD_INT32, PLD_SHAPE(1, n)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(h, y, r), builtin);
}

/* want[r] = sum over k of x[k][r], in double. */
static void reference(pld_tensor x, int32_t unused, double *want) {
  (void)unused;
  const float *xs = pld_tensor_data(x);
  int64_t n = pld_tensor_dim(x, 0);
  for (int64_t r = 0; r < n; r++)
    for (int64_t i = 0; i < SIZE; i++) {
      double sum = 0;
      for (int64_t k = 0; k < n; k++)
        sum += (double)xs[(k * n + r) * SIZE + i];
      want[r * SIZE + i] = sum;
    }
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv,
                     EXAMPLE_HAND_OR_BUILTIN("pld_reduce_scatter"));
  bool builtin = example_mode(&ex, "hand", "builtin");
  const int64_t n = ex.cfg.ndevices;
  pld_tensor x = example_tensor(&ex, 3, (const int64_t[]){n, n, SIZE}, 0);
  pld_tensor y = example_tensor(&ex, 2, (const int64_t[]){n, SIZE}, 0);
  pld_program *prog = example_compile(&ex, reduce_scatter_host, x, y, builtin);
  example_runs(&ex, prog, x, y, "reduce-scatter", reference, 0, false, x, y,
               builtin);
  pld_program_destroy(prog);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return example_done(&ex);
}
