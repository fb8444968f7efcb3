/* Step 21: a tensor-parallel MLP with both fused GEMMs, ending in
 * GEMM-ReduceScatter.
 *
 * The MLP Y = relu(X W1) W2 over P ranks, as Megatron-style sequence and
 * tensor parallelism splits it: X [P MB, H] by rows (rank r holds its MB
 * tokens X_r), W1 [H, F] by columns (W1_r [H, FL], F = P FL) and W2
 * [F, H] by rows (W2_r [FL, H]).  Then
 *
 *   Z_r  = relu(allgather(X) @ W1_r)            [P MB, FL], on rank r
 *   Y_d  = rows d of sum_r Z_r @ W2_r           [MB, H],    on rank d
 *
 * the first product an AllGather-GEMM (step 20), the second a
 * GEMM-ReduceScatter: every rank's partial product Z_r @ W2_r [P MB, H]
 * is summed over the ranks and each rank keeps its own MB rows, the
 * layout X had: the next layer can start the same way.
 *
 *   host     the windows: gathered [P MB, H], stage [P MB, H] (FP32) and
 *            two signal windows of PLD_FUSED_SIGNAL_CELLS(P, 1) cells.
 *   AICPU    launches, in this order:
 *     up     (cube) pld_allgather_matmul: h = allgather(x) @ w1;
 *     act    (vector) z = relu(h): an activation is a vector core's work;
 *     down   (cube) pld_matmul_reduce_scatter: z @ w2, each finished tile
 *            of row block d stored into rank d's stage (slot r) with one
 *            signal per tile, while the next tile is computed;
 *     sum    (vector) pld_matmul_reduce_scatter_sum: y = slot 0 + ... +
 *            slot P-1 of this rank's rows, in rank order, each tile as
 *            soon as every rank's has arrived.
 *   The launches share tensors (h, z, the windows), so on each device they
 *   run one after the other; across ranks they overlap: a rank sums the
 *   tiles of the ranks ahead of it while slower ranks still multiply.
 *
 * The check is bit for bit against plain C following pld/fused.h's order:
 * each product element the fmaf chain over k in order, the partials
 * added in FP32 in rank order 0, 1, ..., P-1.  MB, H and FL are not
 * multiples of the 128-element tile.
 *
 *   21_gemm_reduce_scatter -p a2a3sim -d 0,1,2,3           prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { MB = 37, H = 96, FL = 72 };
PLD_DYNAMIC(NR);
PLD_DYNAMIC(PM); /* NR * MB: the tokens of every rank */
PLD_DYNAMIC(NS); /* PLD_FUSED_SIGNAL_CELLS(NR, 1) */

PLD_CUBE_KERNEL(up, k, PLD_IN(x, FP32, MB, H),
                PLD_WINDOW(gathered, FP32, PM, H), PLD_IN(w1, FP32, H, FL),
                PLD_OUT(h, FP32, PM, FL), PLD_WINDOW(sig, INT32, NS)) {
  pld_allgather_matmul(k, x, gathered, w1, h, sig);
}

/* z = relu(h), 64 rows at a time. */
PLD_KERNEL(act, k, PLD_IN(h, FP32, PM, FL), PLD_OUT(z, FP32, PM, FL)) {
  const int64_t rows = pld_tensor_dim(h, 0);
  for (int64_t r0 = 0; r0 < rows; r0 += 64) {
    int32_t mr = (int32_t)(rows - r0 < 64 ? rows - r0 : 64);
    pld_tile *t = pld_load(k, h, r0, 0, mr, FL);
    pld_relu(k, t, t);
    pld_store(k, t, z, r0, 0);
    pld_tile_free(k, t);
  }
}

PLD_CUBE_KERNEL(down, k, PLD_IN(z, FP32, PM, FL), PLD_IN(w2, FP32, FL, H),
                PLD_WINDOW(stage, FP32, PM, H), PLD_WINDOW(sig, INT32, NS)) {
  pld_matmul_reduce_scatter(k, z, w2, stage, sig);
}

PLD_KERNEL(sum, k, PLD_WINDOW(stage, FP32, PM, H), PLD_OUT(y, FP32, MB, H),
           PLD_WINDOW(sig, INT32, NS)) {
  pld_matmul_reduce_scatter_sum(k, stage, y, sig);
}

PLD_DEVICE(mlp_device, cpu, PLD_IN(x, FP32, MB, H),
           PLD_WINDOW(gathered, FP32, PM, H), PLD_IN(w1, FP32, H, FL),
           PLD_IN(w2, FP32, FL, H), PLD_WINDOW(stage, FP32, PM, H),
           PLD_WINDOW(sig_up, INT32, NS), PLD_WINDOW(sig_down, INT32, NS),
           PLD_OUT(y, FP32, MB, H)) {
  const int64_t pm = pld_tensor_dim(pld_local(gathered), 0);
  pld_tensor h = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(pm, FL));
  pld_tensor z = pld_device_alloc(cpu, PLD_FP32, PLD_SHAPE(pm, FL));
  pld_launch(cpu, up, 1, x, gathered, w1, h, sig_up);
  pld_launch(cpu, act, 1, h, z);
  pld_launch(cpu, down, 1, z, w2, stage, sig_down);
  pld_launch(cpu, sum, 1, stage, y, sig_down);
}

PLD_HOST(mlp_host, hs, PLD_IN(x, FP32, NR, MB, H), PLD_IN(w1, FP32, NR, H, FL),
         PLD_IN(w2, FP32, NR, FL, H), PLD_OUT(y, FP32, NR, MB, H)) {
  int n = pld_world_size(hs);
  int64_t ns = PLD_FUSED_SIGNAL_CELLS(n, 1);
  pld_window_buf g = pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(n * MB, H));
  pld_window_buf st =
      pld_window_alloc_shape(hs, PLD_FP32, PLD_SHAPE(n * MB, H));
  pld_window_buf s_up = pld_window_alloc_shape(hs, PLD_INT32, PLD_SHAPE(ns));
  pld_window_buf s_down = pld_window_alloc_shape(hs, PLD_INT32, PLD_SHAPE(ns));
  for (int r = 0; r < n; r++)
    pld_dispatch(hs, mlp_device, r, pld_slice(hs, x, r),
                 pld_window_view(hs, g, PLD_FP32, PLD_SHAPE(n * MB, H)),
                 pld_slice(hs, w1, r), pld_slice(hs, w2, r),
                 pld_window_view(hs, st, PLD_FP32, PLD_SHAPE(n * MB, H)),
                 pld_window_view(hs, s_up, PLD_INT32, PLD_SHAPE(ns)),
                 pld_window_view(hs, s_down, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(hs, y, r));
}

/* The reference, in plain C: want[d] = Y_d (see the top of this file). */
static void reference(pld_tensor x, pld_tensor w1, pld_tensor w2, float *want) {
  const float *xs = pld_tensor_data(x), *w1s = pld_tensor_data(w1);
  const float *w2s = pld_tensor_data(w2);
  const int64_t p = pld_tensor_dim(x, 0), rows = p * MB;
  float *z = malloc(sizeof(float) * (size_t)(rows * FL));
  if (!z)
    example_check(PLD_ERR_NOMEM, "malloc");
  for (int64_t i = 0; i < rows * H; i++)
    want[i] = 0.0f;
  for (int64_t r = 0; r < p; r++) {
    const float *a = w1s + r * H * FL, *b = w2s + r * FL * H;
    for (int64_t i = 0; i < rows; i++) /* Z_r = relu(X @ W1_r) */
      for (int64_t j = 0; j < FL; j++) {
        float acc = 0.0f;
        for (int64_t k = 0; k < H; k++)
          acc = fmaf(xs[i * H + k], a[k * FL + j], acc);
        z[i * FL + j] = acc > 0.0f ? acc : 0.0f;
      }
    for (int64_t i = 0; i < rows; i++) /* + Z_r @ W2_r, in rank order */
      for (int64_t j = 0; j < H; j++) {
        float acc = 0.0f;
        for (int64_t k = 0; k < FL; k++)
          acc = fmaf(z[i * FL + k], b[k * H + j], acc);
        want[i * H + j] = r == 0 ? acc : want[i * H + j] + acc;
      }
  }
  free(z);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv, NULL);
  const int64_t n = ex.cfg.ndevices;
  pld_tensor x = example_tensor(&ex, 3, (const int64_t[]){n, MB, H}, 1);
  pld_tensor w1 = example_tensor(&ex, 3, (const int64_t[]){n, H, FL}, 1);
  pld_tensor w2 = example_tensor(&ex, 3, (const int64_t[]){n, FL, H}, 1);
  pld_tensor y = example_tensor(&ex, 3, (const int64_t[]){n, MB, H}, 0);
  pld_program *prog = example_compile(&ex, mlp_host, x, w1, w2, y);
  float *want = malloc(sizeof(float) * (size_t)(n * MB * H));
  if (!want)
    example_check(PLD_ERR_NOMEM, "malloc");
  /* Two runs with new tokens: the signal cells are zero again after each. */
  for (int run = 0; run < 2 && !ex.failed; run++) {
    for (int64_t i = 0; i < pld_tensor_numel(x); i++)
      ((float *)pld_tensor_data(x))[i] = example_random(&ex);
    example_run_program(prog, x, w1, w2, y);
    reference(x, w1, w2, want);
    const float *got = pld_tensor_data(y);
    for (int64_t i = 0; i < n * MB * H; i++)
      if (memcmp(&got[i], &want[i], sizeof(float))) {
        printf("FAILED: rank %lld, Y[%lld][%lld]: got %.9g, expected %.9g "
               "(bitwise; seed %llu)\n",
               (long long)(i / (MB * H)), (long long)(i % (MB * H) / H),
               (long long)(i % H), (double)got[i], (double)want[i], ex.seed);
        ex.failed++;
        break;
      }
  }
  free(want);
  pld_program_destroy(prog);
  pld_tensor_destroy(x);
  pld_tensor_destroy(w1);
  pld_tensor_destroy(w2);
  pld_tensor_destroy(y);
  return example_done(&ex);
}
