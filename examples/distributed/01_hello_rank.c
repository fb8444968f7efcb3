/* Step 01: hello, rank.
 *
 * Every device runs the same code on its own slice of the data; what tells
 * them apart is the rank, which only the host knows when it dispatches.
 * The host loops over the world (pld_world_size ranks, rank r on the r-th
 * device id of -d) and dispatches one call per rank, passing the rank down
 * as an ordinary scalar.  Each device adds its rank to its slice:
 * y[r] = x[r] + r.
 *
 * The example runs on P ranks, one per device id of -d.  The host's
 * tensors are [NR, ROWS, COLS]: NR is a dynamic dimension, bound when the
 * program is compiled to the leading dimension of the tensors main makes,
 * P (step 07 says more).  Only the host sees it: each device gets its own
 * slice, [ROWS, COLS].
 *
 * The three functions below are the three levels of every pld program -
 * kernel (AI cores), device orchestration (AICPU), host orchestrator (host
 * CPU) - which step 02 explains one by one.
 *
 *   01_hello_rank -p a2a3sim -d 0,1,2,3      prints OK
 *   (any P from 2 to 128; -d 0,1 by default)
 */
#include "example.h"

enum { ROWS = 16, COLS = 32 };
PLD_DYNAMIC(NR);

/* Kernel, on one AI core: y = x + rank. */
PLD_KERNEL(add_rank, k, PLD_IN(x, FP32, ROWS, COLS),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(rank, INT32)) {
  pld_tile *t = pld_load(k, x, 0, 0, ROWS, COLS);
  pld_adds(k, t, t, (float)rank);
  pld_store(k, t, y, 0, 0);
}

/* Device orchestration, on the AICPU of each device: launch the kernel. */
PLD_DEVICE(hello_device, a, PLD_IN(x, FP32, ROWS, COLS),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(rank, INT32)) {
  pld_launch(a, add_rank, 1, x, y, rank);
}

/* Host orchestrator: one dispatch per rank, each with its own slice and
 * its own rank. */
PLD_HOST(hello_host, h, PLD_IN(x, FP32, NR, ROWS, COLS),
         PLD_OUT(y, FP32, NR, ROWS, COLS)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, hello_device, r, pld_slice(h, x, r), pld_slice(h, y, r), r);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init(&ex, argc, argv, 2, EXAMPLE_MAX_DEVICES, NULL);
  const int64_t n = ex.cfg.ndevices; /* P, a rank per device id of -d */
  const int64_t shape[] = {n, ROWS, COLS};
  pld_tensor x = example_tensor(&ex, 3, shape, 1);
  pld_tensor y = example_tensor(&ex, 3, shape, 0);

  example_run(&ex, hello_host, x, y);

  /* Golden: y[r] == x[r] + r, for r in [0, P). */
  float *want = malloc(sizeof(float) * (size_t)(n * ROWS * COLS));
  if (!want)
    example_check(PLD_ERR_NOMEM, "malloc");
  const float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < n * ROWS * COLS; i++)
    want[i] = xs[i] + (float)(i / (ROWS * COLS));
  int bad = example_golden(&ex, y, want);
  free(want);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return bad;
}
