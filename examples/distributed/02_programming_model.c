/* Step 02: the three-level programming model.
 *
 * A pld program is not one function but three, and the interesting part of
 * the model is who runs where:
 *
 *   level                     declared with  runs on
 *   host orchestrator         PLD_HOST       host CPU: allocates, loops over
 *                                            ranks, dispatches
 *   per-device orchestration  PLD_DEVICE     the AICPU of each device: one
 *                                            call per device, launches kernels
 *   device kernel             PLD_KERNEL     the device's AI cores: compute
 *
 * The kernel computes y[r] = x[r] * (r + 1): each level is labelled and the
 * rank flows down the chain as an ordinary scalar.  It runs on P ranks,
 * one per device id of -d; P is the leading dimension NR of the host's
 * tensors, a dynamic dimension (step 01).
 *
 *   02_programming_model -p a2a3sim -d 0,1,2,3      prints OK
 *   (any P from 2 to 128; -d 0,1 by default)
 */
#include "example.h"

enum { ROWS = 8, COLS = 8 };
PLD_DYNAMIC(NR); /* the rank count P */

/* The device kernel.  It runs on an AI core of one device and sees only
 * that device's slice of the problem: x here is [ROWS, COLS], the rank-r
 * slice.  rank is a scalar INT32; the tile op takes it as a float. */
PLD_KERNEL(scale_by_rank, k, PLD_IN(x, FP32, ROWS, COLS),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(rank, INT32)) {
  pld_tile *tile = pld_load(k, x, 0, 0, ROWS, COLS);
  pld_tile *scaled = pld_tile_new(k, PLD_FP32, ROWS, COLS);
  pld_muls(k, scaled, tile, (float)rank);
  pld_add(k, scaled, scaled, tile); /* x * rank + x == x * (rank + 1) */
  pld_store(k, scaled, y, 0, 0);
}

/* The per-device orchestration.  It runs on the AICPU, one call per device,
 * and exists so the host dispatches a device-level function rather than
 * poking the kernel directly (pld_dispatch does not accept a kernel: that
 * does not compile).  Here it launches the kernel on one block; in later
 * steps it is where staging and multi-kernel sequences live. */
PLD_DEVICE(device_orch, a, PLD_IN(x, FP32, ROWS, COLS),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(rank, INT32)) {
  pld_launch(a, scale_by_rank, 1, x, y, rank);
}

/* The host orchestrator.  It runs on the host CPU, holds the world-shaped
 * tensors [NR, ROWS, COLS] (NR = P), and is the only function that knows
 * about all devices: it loops over the world and dispatches device_orch
 * once per rank.  The rank is threaded down from this loop - the only
 * place that knows it. */
PLD_HOST(host_orch, h, PLD_IN(x, FP32, NR, ROWS, COLS),
         PLD_OUT(y, FP32, NR, ROWS, COLS)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, device_orch, r, pld_slice(h, x, r), pld_slice(h, y, r), r);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init(&ex, argc, argv, 2, EXAMPLE_MAX_DEVICES, NULL);
  const int64_t n = ex.cfg.ndevices; /* P, a rank per device id of -d */
  const int64_t shape[] = {n, ROWS, COLS};
  pld_tensor x = example_tensor(&ex, 3, shape, 1);
  pld_tensor y = example_tensor(&ex, 3, shape, 0);

  example_run(&ex, host_orch, x, y);

  /* Golden: y[r] == x[r] * (r + 1), each rank scaled its own slice. */
  float *want = malloc(sizeof(float) * (size_t)(n * ROWS * COLS));
  if (!want)
    example_check(PLD_ERR_NOMEM, "malloc");
  const float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < n * ROWS * COLS; i++)
    want[i] = xs[i] * (float)(i / (ROWS * COLS) + 1);
  int bad = example_golden(&ex, y, want);
  free(want);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return bad;
}
