/* Step 11: the builtin allreduce.
 *
 * Steps 08 to 10 built an allreduce three ways by hand.  pld_allreduce
 * (pld/collective.h) is all three in one call, in place on a window:
 *
 *   pld_allreduce(k, data, sig, PLD_REDUCE_SUM, mode);
 *
 *   --mode mesh       step 08: every rank reads every rank (small data);
 *   --mode two-phase  step 09: reduce-scatter, then all-gather;
 *   --mode ring       step 10: 2 (P-1) rounds between neighbours;
 *   --mode auto       the default: pld_allreduce_auto picks one from the
 *                     size and the rank count (here, 80 KB per rank:
 *                     two-phase on up to 8 ranks, the ring beyond).
 *
 * What the builtin adds to the hand versions:
 *  - One signal window for everything: a 1-D INT32 window of
 *    PLD_SIGNAL_CELLS(P, blocks) cells, zero when first used, whose
 *    synchronisation cells are zero again after every call (each
 *    synchronisation adds a credit, each call takes back what it
 *    received), so calls can follow each other, run in loops, and
 *    different collectives can share it (step 16).
 *  - Small calls in one synchronisation: up to PLD_COLL_EAGER_BYTES per
 *    rank, the data travels with the call's description into the signal
 *    window of every rank, where mesh combines it (step 08's mesh needs
 *    two per tile: data staged, then data read).
 *  - Checked calls: every rank compares its call with every other's
 *    (collective, op, dtype, count, mode); ranks that disagree fail with
 *    PLD_ERR_MISMATCH naming each rank's call, instead of hanging.  A hang
 *    is reported with the collective, its call number and its round.
 *  - Any length (no chunk needs to divide by P); FP16 and BF16 added in
 *    FP32 (rounded once by mesh and two-phase, at each hop by the ring);
 *    launches on several blocks, each its own lane of sig.
 *  - The same bits on every rank: mesh and two-phase add the ranks in the
 *    order 0 .. P-1 (as steps 08 and 09), the ring in ring order (as step
 *    10).  With integer-valued inputs, every mode gives the mathematical
 *    result exactly, bit for bit the same as steps 08 to 10.
 *
 *   host     windows `data` (N per rank) and sig [PLD_SIGNAL_CELLS(P, 1)].
 *   AICPU    launches the kernel on one block.
 *   kernel   stages x, calls pld_allreduce, y = its window.
 *
 *   11_allreduce_reveal -p a2a3sim -d 0,1,2,3 --mode ring      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { N = 20011 };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(NS); /* PLD_SIGNAL_CELLS(NR, 1) */

PLD_KERNEL(allreduce_builtin, k, PLD_IN(x, FP32, N), PLD_WINDOW(data, FP32, N),
           PLD_WINDOW(sig, INT32, NS), PLD_OUT(y, FP32, N),
           PLD_SCALAR(mode, INT32)) {
  int32_t me = pld_rank(k, pld_window_comm(data));
  pld_put(k, data, me, x, NULL); /* stage x in my window */
  pld_allreduce(k, data, sig, PLD_REDUCE_SUM, (pld_allreduce_mode)mode);
  pld_get(k, y, me, data, NULL); /* y = my window */
}

PLD_DEVICE(allreduce_device, a, PLD_IN(x, FP32, N), PLD_WINDOW(data, FP32, N),
           PLD_WINDOW(sig, INT32, NS), PLD_OUT(y, FP32, N),
           PLD_SCALAR(mode, INT32)) {
  pld_launch(a, allreduce_builtin, 1, x, data, sig, y, mode);
}

PLD_HOST(allreduce_host, h, PLD_IN(x, FP32, NR, N), PLD_OUT(y, FP32, NR, N),
         PLD_SCALAR(mode, INT32)) {
  int n = pld_world_size(h);
  int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(N));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, allreduce_device, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(N)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(h, y, r), mode);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv,
                     "  --mode auto|mesh|two-phase|ring\n"
                     "                       the algorithm of pld_allreduce "
                     "(default auto: chosen\n"
                     "                       from the size and the rank "
                     "count)\n");
  /* In the order of pld_allreduce_mode's values. */
  int32_t mode = example_mode_of(&ex, "auto", "mesh", "two-phase", "ring");
  return example_allreduce_main(&ex, allreduce_host, N, &mode);
}
