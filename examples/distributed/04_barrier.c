/* Step 04: a barrier.
 *
 * Ranks order themselves only through signals: notify adds to (or sets) an
 * INT32 cell in a peer's window, wait blocks until a cell of one's own
 * window reaches a value.  A barrier is every rank telling every other "I
 * am here" and waiting to hear the same from all of them.
 *
 * The example runs on P ranks, one per device id of -d, with a signal
 * window of P cells, one per rank.  P is NR, a dynamic dimension (step
 * 01): the host gives the window its shape from pld_world_size, and the
 * kernels take their rank and P from the window's comm context.
 *
 * By hand (the default): rank r adds 1 to cell [r] of every other rank,
 * then waits until each of its own cells [p], p != r, is >= 1.  Afterwards
 * rank r's cells tally who arrived: y[r][i] = (i != r), exactly.
 *
 * With --use-builtin: pld_barrier, whose self-clearing protocol leaves the
 * signal window at zero so it can be used again.  Each rank stages x in
 * its data window, meets the others at the barrier, then reads the next
 * rank's data: y[r] = x[(r + 1) % P].
 *
 *   04_barrier -p a2a3sim -d 0,1,2,3 [--use-builtin]      prints OK
 *   (any P from 2 to 128; -d 0,1 by default)
 */
#include "example.h"

enum { COLS = 64 };
PLD_DYNAMIC(NR); /* the rank count P */

PLD_KERNEL(tally_barrier, k, PLD_WINDOW(sig, INT32, NR), PLD_OUT(y, FP32, NR)) {
  pld_comm comm = pld_window_comm(sig);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  for (int32_t p = 0; p < n; p++)
    if (p != me)
      pld_notify(k, sig, p, PLD_AT(me), 1, PLD_NOTIFY_ADD);
  for (int32_t p = 0; p < n; p++)
    if (p != me)
      pld_wait(k, sig, PLD_AT(p), 1, PLD_WAIT_GE);
  for (int32_t i = 0; i < n; i++) /* the tally: who arrived */
    pld_write(k, y, PLD_AT(i), pld_read(k, pld_local(sig), PLD_AT(i)));
}

PLD_KERNEL(builtin_barrier, k, PLD_IN(x, FP32, 1, COLS),
           PLD_WINDOW(data, FP32, 1, COLS), PLD_WINDOW(sig, INT32, NR),
           PLD_OUT(y, FP32, 1, COLS)) {
  pld_comm comm = pld_window_comm(data);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  pld_tile *t = pld_load(k, x, 0, 0, 1, COLS);
  pld_store(k, t, pld_local(data), 0, 0);
  pld_barrier(k, sig); /* every rank has staged its data */
  pld_tile *next = pld_remote_load(k, data, (me + 1) % n, 0, 0, 1, COLS);
  pld_store(k, next, y, 0, 0);
  pld_barrier(k, sig); /* nobody leaves while a peer still reads its data */
}

PLD_DEVICE(tally_device, a, PLD_WINDOW(sig, INT32, NR), PLD_OUT(y, FP32, NR)) {
  pld_launch(a, tally_barrier, 1, sig, y);
}

PLD_DEVICE(builtin_device, a, PLD_IN(x, FP32, 1, COLS),
           PLD_WINDOW(data, FP32, 1, COLS), PLD_WINDOW(sig, INT32, NR),
           PLD_OUT(y, FP32, 1, COLS)) {
  pld_launch(a, builtin_barrier, 1, x, data, sig, y);
}

PLD_HOST(tally_host, h, PLD_OUT(y, FP32, NR, NR)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, tally_device, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, y, r));
}

PLD_HOST(builtin_host, h, PLD_IN(x, FP32, NR, 1, COLS),
         PLD_OUT(y, FP32, NR, 1, COLS)) {
  int n = pld_world_size(h);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(1, COLS));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, builtin_device, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(1, COLS)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, y, r));
}

int main(int argc, char **argv) {
  struct example ex;
  example_init(&ex, argc, argv, 2, EXAMPLE_MAX_DEVICES,
               "  --use-builtin        pld_barrier, then read the next rank's "
               "data (default: a\n"
               "                       barrier by hand, tallying who "
               "arrived)\n");
  const int64_t n = ex.cfg.ndevices; /* P, a rank per device id of -d */
  int bad;
  if (!ex.use_builtin) {
    pld_tensor y = example_tensor(&ex, 2, (const int64_t[]){n, n}, 0);
    example_run(&ex, tally_host, y);
    float *want = malloc(sizeof(float) * (size_t)(n * n));
    if (!want)
      example_check(PLD_ERR_NOMEM, "malloc");
    for (int64_t r = 0; r < n; r++)
      for (int64_t i = 0; i < n; i++)
        want[r * n + i] = i != r ? 1.0f : 0.0f;
    bad = example_golden(&ex, y, want);
    free(want);
    pld_tensor_destroy(y);
  } else {
    const int64_t shape[] = {n, 1, COLS};
    pld_tensor x = example_tensor(&ex, 3, shape, 1);
    pld_tensor y = example_tensor(&ex, 3, shape, 0);
    example_run(&ex, builtin_host, x, y);
    bad = example_golden_shift(&ex, x, y, 1); /* y[r] = x[(r + 1) % P] */
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
  }
  return bad;
}
