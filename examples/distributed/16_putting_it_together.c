/* Step 16: putting it together - three collectives in one kernel on one
 * signal window.
 *
 * One kernel broadcasts the root's x, sums x over the ranks and gathers
 * every rank's x, one collective after the other, all three on the same
 * signal window sig:
 *
 *   pld_broadcast(k, bcast, sig, root);              yb[r] = x[root]
 *   pld_allreduce(k, sum, sig, SUM, AUTO);           ya[r] = sum_k x[k]
 *   pld_allgather(k, x, gather, sig);                yg[r][k] = x[k]
 *
 * What makes sharing the window legal is the builtins' self-clearing
 * protocol: every synchronisation of a call adds one credit to the
 * sender's cell on the receiver, and before returning each call takes
 * back, from its own cells, the credits it received, so the window is zero
 * again after every call.  A rank that finishes a call early is a call
 * ahead at most (a few, for small broadcasts: pld/collective.h); its credits
 * for the next call wait in the cells, where the slower rank's next call
 * counts them.  Each call also writes what it is (collective, dtype,
 * size, root, mode) where the others compare it: had one rank called the
 * collectives in another order, every rank would fail with
 * PLD_ERR_MISMATCH naming each rank's call, rather than mix their credits
 * up.  Steps 08 to 15's hand-made signals only grow: each use needs its
 * own row or its own count, and a window serves again only because every
 * program run starts it at zero.
 *
 *   host     windows bcast and sum (N per rank), gather [P, N] and one
 *            signal window sig [PLD_SIGNAL_CELLS(P, 1)]; the root is the
 *            last rank.
 *   AICPU    launches the kernel on one block.
 *   kernel   stages x in bcast (the root) and sum; the three collectives;
 *            the three results.
 *
 *   16_putting_it_together -p a2a3sim -d 0,1,2,3      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { N = 20011 };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(NS); /* PLD_SIGNAL_CELLS(NR, 1) */

PLD_KERNEL(together, k, PLD_IN(x, FP32, N), PLD_WINDOW(bcast, FP32, N),
           PLD_WINDOW(sum, FP32, N), PLD_WINDOW(gather, FP32, NR, N),
           PLD_WINDOW(sig, INT32, NS), PLD_OUT(yb, FP32, N),
           PLD_OUT(ya, FP32, N), PLD_OUT(yg, FP32, NR, N),
           PLD_SCALAR(root, INT32)) {
  int32_t me = pld_rank(k, pld_window_comm(sig));
  if (me == root)
    pld_put(k, bcast, me, x, NULL);
  pld_put(k, sum, me, x, NULL);
  pld_broadcast(k, bcast, sig, root);
  pld_allreduce(k, sum, sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_AUTO);
  pld_allgather(k, x, gather, sig);
  pld_get(k, yb, me, bcast, NULL);
  pld_get(k, ya, me, sum, NULL);
  pld_get(k, yg, me, gather, NULL);
}

PLD_DEVICE(together_device, a, PLD_IN(x, FP32, N), PLD_WINDOW(bcast, FP32, N),
           PLD_WINDOW(sum, FP32, N), PLD_WINDOW(gather, FP32, NR, N),
           PLD_WINDOW(sig, INT32, NS), PLD_OUT(yb, FP32, N),
           PLD_OUT(ya, FP32, N), PLD_OUT(yg, FP32, NR, N),
           PLD_SCALAR(root, INT32)) {
  pld_launch(a, together, 1, x, bcast, sum, gather, sig, yb, ya, yg, root);
}

PLD_HOST(together_host, h, PLD_IN(x, FP32, NR, N), PLD_OUT(yb, FP32, NR, N),
         PLD_OUT(ya, FP32, NR, N), PLD_OUT(yg, FP32, NR, NR, N),
         PLD_SCALAR(root, INT32)) {
  int n = pld_world_size(h);
  int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf bcast = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(N));
  pld_window_buf sum = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(N));
  pld_window_buf gather = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, N));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, together_device, r, pld_slice(h, x, r),
                 pld_window_view(h, bcast, PLD_FP32, PLD_SHAPE(N)),
                 pld_window_view(h, sum, PLD_FP32, PLD_SHAPE(N)),
                 pld_window_view(h, gather, PLD_FP32, PLD_SHAPE(n, N)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(h, yb, r), pld_slice(h, ya, r), pld_slice(h, yg, r),
                 root);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, NULL);
  const int64_t n = ex.cfg.ndevices, shape[] = {n, N};
  const int32_t root = (int32_t)n - 1;
  pld_tensor x = example_tensor(&ex, 2, shape, 0);
  pld_tensor yb = example_tensor(&ex, 2, shape, 0);
  pld_tensor ya = example_tensor(&ex, 2, shape, 0);
  pld_tensor yg = example_tensor(&ex, 3, (const int64_t[]){n, n, N}, 0);
  double *want_b = example_reference(yb), *want_a = example_reference(ya);
  double *want_g = example_reference(yg);
  pld_program *prog = example_compile(&ex, together_host, x, yb, ya, yg, root);
  example_for_each_input(in) {
    example_fill(&ex, x, in);
    example_run_program(prog, x, yb, ya, yg, root);
    example_reference_broadcast(x, root, want_b);
    example_reference_allreduce(x, 0, want_a);
    example_reference_allgather(x, 0, want_g);
    example_expect(&ex, "broadcast", yb, want_b, in);
    example_expect(&ex, "allreduce", ya, want_a, in);
    example_expect_same(&ex, "allreduce", ya);
    example_expect(&ex, "allgather", yg, want_g, in);
  }
  pld_program_destroy(prog);
  free(want_b);
  free(want_a);
  free(want_g);
  pld_tensor_destroy(x);
  pld_tensor_destroy(yb);
  pld_tensor_destroy(ya);
  pld_tensor_destroy(yg);
  return example_done(&ex);
}
