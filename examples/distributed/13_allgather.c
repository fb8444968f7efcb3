/* Step 13: all-gather, by hand and builtin.
 *
 * An all-gather concatenates every rank's data on every rank: each rank
 * has x[r] of SIZE elements, and afterwards every rank holds the P of them
 * as the rows of a [P, SIZE] window: y[r][k] = x[k].
 *
 *   --mode hand     (the default) every rank pushes its x into row me of
 *                   every rank's target window (pld_put, its own included,
 *                   starting with its right neighbour so that the ranks do
 *                   not all write to rank 0 first); then a barrier (step
 *                   04's, by hand, example_barrier in example.h): once
 *                   through it, every row has landed everywhere.
 *   --mode builtin  pld_allgather(k, x, target, sig): the same pushes and
 *                   barrier, with the builtin's checks (every rank's call
 *                   the same, x the size of a row, x and the target apart:
 *                   an all-gather cannot stage in the window it gathers
 *                   into) and its self-clearing signal window.
 *
 *   host     the target window [P, SIZE] (P a dynamic dimension),
 *            hand_sig [1, P] and sig [PLD_SIGNAL_CELLS(P, 1)].
 *   AICPU    launches the kernel on one block.
 *   kernel   the all-gather; y = its target window.
 *
 * x needs no staging: a put reads any local tensor, and only the target
 * must be a window, since peers write into it.  SIZE is not a multiple of
 * a tile: transfers take any length.
 *
 *   13_allgather -p a2a3sim -d 0,1,2,3 --mode builtin      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { SIZE = 2503 };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(NS); /* PLD_SIGNAL_CELLS(NR, 1) */

PLD_KERNEL(allgather, k, PLD_IN(x, FP32, SIZE),
           PLD_WINDOW(target, FP32, NR, SIZE),
           PLD_WINDOW(hand_sig, INT32, 1, NR), PLD_WINDOW(sig, INT32, NS),
           PLD_OUT(y, FP32, NR, SIZE), PLD_SCALAR(builtin, BOOL)) {
  pld_comm comm = pld_window_comm(target);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  if (builtin) {
    pld_allgather(k, x, target, sig);
  } else {
    const pld_xfer row_me = {.dst_row = me}; /* all of x, to row me */
    for (int32_t i = 1; i <= n; i++)
      pld_put(k, target, (me + i) % n, x, &row_me);
    example_barrier(k, hand_sig, 0, 1); /* every row has landed */
  }
  pld_get(k, y, me, target, NULL); /* y = my target */
}

PLD_DEVICE(allgather_device, a, PLD_IN(x, FP32, SIZE),
           PLD_WINDOW(target, FP32, NR, SIZE),
           PLD_WINDOW(hand_sig, INT32, 1, NR), PLD_WINDOW(sig, INT32, NS),
           PLD_OUT(y, FP32, NR, SIZE), PLD_SCALAR(builtin, BOOL)) {
  pld_launch(a, allgather, 1, x, target, hand_sig, sig, y, builtin);
}

PLD_HOST(allgather_host, h, PLD_IN(x, FP32, NR, SIZE),
         PLD_OUT(y, FP32, NR, NR, SIZE), PLD_SCALAR(builtin, BOOL)) {
  int n = pld_world_size(h);
  int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf target =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, SIZE));
  pld_window_buf hand_sig =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, n));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, allgather_device, r, pld_slice(h, x, r),
                 pld_window_view(h, target, PLD_FP32, PLD_SHAPE(n, SIZE)),
                 pld_window_view(h, hand_sig, PLD_INT32, PLD_SHAPE(1, n)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(h, y, r), builtin);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, EXAMPLE_HAND_OR_BUILTIN("pld_allgather"));
  bool builtin = example_mode(&ex, "hand", "builtin");
  const int64_t n = ex.cfg.ndevices;
  pld_tensor x = example_tensor(&ex, 2, (const int64_t[]){n, SIZE}, 0);
  pld_tensor y = example_tensor(&ex, 3, (const int64_t[]){n, n, SIZE}, 0);
  pld_program *prog = example_compile(&ex, allgather_host, x, y, builtin);
  example_runs(&ex, prog, x, y, "allgather", example_reference_allgather, 0,
               true, x, y, builtin);
  pld_program_destroy(prog);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return example_done(&ex);
}
