/* Step 12: broadcast, by hand and builtin.
 *
 * A broadcast gives every rank the root's data: y[r] = x[root].  Here the
 * root is the last rank, P-1.
 *
 *   --mode hand     (the default) the root stages x in its window; a
 *                   barrier says it has; every other rank pulls the root's
 *                   window into its own (pld_get); a second barrier keeps
 *                   the root, and its window, until every rank has read it.
 *                   The barriers are step 04's, by hand (example_barrier in
 *                   example.h), on a signal window [1, P].
 *   --mode builtin  pld_broadcast(k, data, sig, root): the same, in place
 *                   on the window, on a builtin signal window of
 *                   PLD_SIGNAL_CELLS(P, 1) cells that every collective call
 *                   leaves at zero; every rank checks that all called it
 *                   with the same root and size.
 *
 *   host     windows `data` (N per rank), hand_sig [1, P] and sig
 *            [PLD_SIGNAL_CELLS(P, 1)]; passes the root and the mode down.
 *   AICPU    launches the kernel on one block.
 *   kernel   the root stages x; the broadcast; y = its window.
 *
 * Pulling from the root is the simplest broadcast and fine for moderate
 * data; for large data the root's links are the limit, and a pipelined
 * chain, or a scatter followed by an all-gather, spreads the load.
 *
 *   12_broadcast -p a2a3sim -d 0,1,2,3 --mode builtin      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { N = 20011 };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(NS); /* PLD_SIGNAL_CELLS(NR, 1) */

PLD_KERNEL(broadcast, k, PLD_IN(x, FP32, N), PLD_WINDOW(data, FP32, N),
           PLD_WINDOW(hand_sig, INT32, 1, NR), PLD_WINDOW(sig, INT32, NS),
           PLD_OUT(y, FP32, N), PLD_SCALAR(root, INT32),
           PLD_SCALAR(builtin, BOOL)) {
  int32_t me = pld_rank(k, pld_window_comm(data));
  if (me == root)
    pld_put(k, data, me, x, NULL); /* the root stages x in its window */
  if (builtin) {
    pld_broadcast(k, data, sig, root);
  } else {
    example_barrier(k, hand_sig, 0, 1); /* the root has staged */
    if (me != root)
      pld_get(k, pld_local(data), root, data, NULL);
    example_barrier(k, hand_sig, 0, 2); /* everyone has the root's data */
  }
  pld_get(k, y, me, data, NULL); /* y = my window */
}

PLD_DEVICE(broadcast_device, a, PLD_IN(x, FP32, N), PLD_WINDOW(data, FP32, N),
           PLD_WINDOW(hand_sig, INT32, 1, NR), PLD_WINDOW(sig, INT32, NS),
           PLD_OUT(y, FP32, N), PLD_SCALAR(root, INT32),
           PLD_SCALAR(builtin, BOOL)) {
  pld_launch(a, broadcast, 1, x, data, hand_sig, sig, y, root, builtin);
}

PLD_HOST(broadcast_host, h, PLD_IN(x, FP32, NR, N), PLD_OUT(y, FP32, NR, N),
         PLD_SCALAR(root, INT32), PLD_SCALAR(builtin, BOOL)) {
  int n = pld_world_size(h);
  int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(N));
  pld_window_buf hand_sig =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1, n));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, broadcast_device, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(N)),
                 pld_window_view(h, hand_sig, PLD_INT32, PLD_SHAPE(1, n)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(h, y, r), root, builtin);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, EXAMPLE_HAND_OR_BUILTIN("pld_broadcast"));
  bool builtin = example_mode(&ex, "hand", "builtin");
  int32_t root = ex.cfg.ndevices - 1;
  const int64_t shape[] = {ex.cfg.ndevices, N};
  pld_tensor x = example_tensor(&ex, 2, shape, 0);
  pld_tensor y = example_tensor(&ex, 2, shape, 0);
  pld_program *prog = example_compile(&ex, broadcast_host, x, y, root, builtin);
  example_runs(&ex, prog, x, y, "broadcast", example_reference_broadcast, root,
               true, x, y, root, builtin);
  pld_program_destroy(prog);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return example_done(&ex);
}
