/* The README's program: y[r] = x[r] * (r + 1) on 2 simulated devices,
 * checked against a plain C loop; prints OK. */
#include <stdio.h>

#include "pld.h"

enum { ROWS = 8, COLS = 8, N_RANKS = 2 };

/* Level 3, on an AI core of one device: this rank's slice only. */
PLD_KERNEL(scale_by_rank, k, PLD_IN(x, FP32, ROWS, COLS),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(rank, INT32)) {
  pld_tile *t = pld_load(k, x, 0, 0, ROWS, COLS);
  pld_muls(k, t, t, (float)(rank + 1));
  pld_store(k, t, y, 0, 0);
}

/* Level 2, on the AICPU of one device: launches the kernel on 1 block. */
PLD_DEVICE(device_orch, a, PLD_IN(x, FP32, ROWS, COLS),
           PLD_OUT(y, FP32, ROWS, COLS), PLD_SCALAR(rank, INT32)) {
  pld_launch(a, scale_by_rank, 1, x, y, rank);
}

/* Level 1, on the host CPU: one dispatch per rank, with its slices. */
PLD_HOST(host_orch, h, PLD_IN(x, FP32, N_RANKS, ROWS, COLS),
         PLD_OUT(y, FP32, N_RANKS, ROWS, COLS)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, device_orch, r, pld_slice(h, x, r), pld_slice(h, y, r), r);
}

/* A failed pld call: its status and message, then exit status 1. */
static int failed(int status, const char *what) {
  fprintf(stderr, "%s failed (%s): %s\n", what, pld_status_name(status),
          pld_last_error());
  return 1;
}

int main(void) {
  pld_config cfg = PLD_CONFIG_INIT; /* platform a2a3sim, the defaults */
  static const int devices[N_RANKS] = {0, 1};
  cfg.device_ids = devices; /* rank r runs on device devices[r] */
  cfg.ndevices = N_RANKS;

  const int64_t shape[] = {N_RANKS, ROWS, COLS};
  pld_tensor x, y;
  int st = pld_tensor_create(PLD_FP32, 3, shape, &x);
  if (st)
    return failed(st, "pld_tensor_create");
  if ((st = pld_tensor_create(PLD_FP32, 3, shape, &y)))
    return failed(st, "pld_tensor_create");
  float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++)
    xs[i] = (float)i / 64;

  /* Compile (traces the host and device functions, checks every call;
   * no device starts), run (starts a process per device, copies each
   * rank's slices in and the Out slices back), destroy (stops them).
   * pld_run(host_orch, &cfg, PLD_ARGS(x, y)) does all three. */
  pld_program *prog;
  if ((st = pld_compile(host_orch, &cfg, PLD_ARGS(x, y), &prog)))
    return failed(st, "pld_compile");
  st = pld_program_run(prog, PLD_ARGS(x, y));
  pld_program_destroy(prog);
  if (st)
    return failed(st, "pld_program_run");

  const float *ys = pld_tensor_data(y);
  int bad = 0;
  for (int64_t i = 0; i < pld_tensor_numel(y); i++)
    bad += ys[i] != xs[i] * (float)(i / (ROWS * COLS) + 1);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  if (bad) {
    printf("FAILED: %d elements differ\n", bad);
    return 1;
  }
  printf("OK\n");
  return 0;
}
