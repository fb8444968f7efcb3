/* consumer.c: a pld program written against the installed public API only,
 * as a project outside pld's tree writes it.  tools/consumer.sh builds it
 * against an installed pld, with CMake (CMakeLists.txt) and with make and
 * pkg-config (Makefile), and runs it.
 *
 * On 2 ranks, each rank r computes z[r] = x[r] * (r + 1) + 1 on its
 * device, then the ranks add their z together with pld_allreduce: every
 * y[r] = sum_k (x[k] * (k + 1) + 1).  The host checks y against a plain C
 * loop (the inputs are small integers, so the sums are exact) and prints
 * OK; any failure prints a message and exits with status 1.
 */
#include <pld.h>

#include <stdio.h>

enum { N_RANKS = 2, ROWS = 8, COLS = 32 };
enum { SIG_CELLS = PLD_SIGNAL_CELLS(N_RANKS, 1) };

/* Device kernel, on an AI core: the elementwise step into this rank's
 * window, then the allreduce over every rank's window. */
PLD_KERNEL(scale_and_sum, k, PLD_IN(x, FP32, ROWS, COLS),
           PLD_WINDOW(data, FP32, ROWS, COLS),
           PLD_WINDOW(sig, INT32, SIG_CELLS), PLD_OUT(y, FP32, ROWS, COLS),
           PLD_SCALAR(rank, INT32)) {
  pld_tile *t = pld_load(k, x, 0, 0, ROWS, COLS);
  pld_tile *z = pld_tile_new(k, PLD_FP32, ROWS, COLS);
  pld_muls(k, z, t, (double)(rank + 1));
  pld_adds(k, z, z, 1.0);
  pld_store(k, z, pld_local(data), 0, 0);
  pld_allreduce(k, data, sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_AUTO);
  pld_load_into(k, z, pld_local(data), 0, 0);
  pld_store(k, z, y, 0, 0);
}

/* Per-device orchestration, on the device's AICPU: one launch. */
PLD_DEVICE(device_orch, a, PLD_IN(x, FP32, ROWS, COLS),
           PLD_WINDOW(data, FP32, ROWS, COLS),
           PLD_WINDOW(sig, INT32, SIG_CELLS), PLD_OUT(y, FP32, ROWS, COLS),
           PLD_SCALAR(rank, INT32)) {
  pld_launch(a, scale_and_sum, 1, x, data, sig, y, rank);
}

/* Host orchestrator: the windows once, then one dispatch per rank. */
PLD_HOST(host_orch, h, PLD_IN(x, FP32, N_RANKS, ROWS, COLS),
         PLD_OUT(y, FP32, N_RANKS, ROWS, COLS)) {
  pld_window_buf data =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(ROWS, COLS));
  pld_window_buf sig =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SIG_CELLS));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, device_orch, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(ROWS, COLS)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(SIG_CELLS)),
                 pld_slice(h, y, r), r);
}

static int failed(const char *what, int status) {
  fprintf(stderr, "consumer: %s: %s: %s\n", what, pld_status_name(status),
          pld_last_error());
  return 1;
}

int main(void) {
  enum { N = ROWS * COLS };
  static const int ids[N_RANKS] = {0, 1};
  const int64_t shape[] = {N_RANKS, ROWS, COLS};
  pld_config cfg = PLD_CONFIG_INIT;
  cfg.device_ids = ids;
  cfg.ndevices = N_RANKS;

  pld_tensor x = {NULL}, y = {NULL};
  int st = pld_tensor_create(PLD_FP32, 3, shape, &x);
  if (st == PLD_OK)
    st = pld_tensor_create(PLD_FP32, 3, shape, &y);
  if (st != PLD_OK)
    return failed("pld_tensor_create", st);
  float *xs = pld_tensor_data(x);
  for (int i = 0; i < N_RANKS * N; i++)
    xs[i] = (float)(i % 11 - 5);

  pld_program *prog = NULL;
  st = pld_compile(host_orch, &cfg, PLD_ARGS(x, y), &prog);
  if (st != PLD_OK)
    return failed("pld_compile", st);
  st = pld_program_run(prog, PLD_ARGS(x, y));
  pld_program_destroy(prog);
  if (st != PLD_OK)
    return failed("pld_program_run", st);

  const float *ys = pld_tensor_data(y);
  for (int r = 0; r < N_RANKS; r++)
    for (int i = 0; i < N; i++) {
      float want = 0;
      for (int k = 0; k < N_RANKS; k++)
        want += xs[k * N + i] * (float)(k + 1) + 1;
      if (ys[r * N + i] != want) {
        fprintf(stderr, "consumer: y[%d][%d] = %g, expected %g\n", r, i,
                (double)ys[r * N + i], (double)want);
        return 1;
      }
    }
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  printf("OK\n");
  return 0;
}
